//! The registry: every lock cassalock checks, listed once.
//!
//! A lock is one entry here: its name (on every command line, in every event record, in the
//! matrix's file names), how the reports title it, its family (the server it runs on), and what
//! can run it: a model of it (`cassalock check --model`), the real runner (`cassalock real`,
//! `bench real`), a row of the property matrix. The model checker, the simulator, the real
//! runner, the reports and the command line ask this list instead of keeping lists of their
//! own; a command offers exactly the locks it can run.
//!
//! The row locks of the thesis are one family among five: Cassandra's rows, beside Redis's keys,
//! Memcached's items, ZooKeeper's znodes and etcd's keys.

use std::fmt;

/// A lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Lock {
    /// The thesis's old lock: a main row and a shadow row, random backoff (Listings 3-4).
    Old,
    /// The thesis's fair queue GetLock (Listings 5-6).
    Queue,
    /// The queue GetLock whose waiter next in line polls every 5 ms (`Settings::next_poll_ms`).
    QueueNextInLine,
    /// The same, every waiter sleeping by its rank and the queue's pace (`Settings::paced_poll`).
    QueuePaced,
    /// The thesis's TryGetLock (Listing 7).
    QueueTry,
    /// The thesis's global time service (Listing 8), which the queue lock's columns can read.
    GlobalTime,
    /// A Cassandra lightweight-transaction lock (INSERT IF NOT EXISTS / DELETE IF owner).
    Lwt,
    /// Redis `SET key token NX PX ttl`, compare-and-delete release.
    RedisSetNx,
    /// Redis `SETNX` then `EXPIRE`, `DEL` release: the two-command recipe of seed 003.
    RedisSetNxExpire,
    /// Redlock over independent Redis masters.
    Redlock,
    /// Memcached `add` with an expiry.
    Memcached,
    /// Redisson's `RLock`: a reentrant hash lock, pub/sub waiters, a watchdog.
    Redisson,
    /// Redisson's fair lock: the `RLock`'s hash and watchdog with a queue of waiters.
    RedissonFair,
    /// Redisson's fenced lock (`RFencedLock`): the `RLock` with a token counter its acquire
    /// counts up.
    RedissonFenced,
    /// Apache Curator's `InterProcessMutex` on ZooKeeper.
    Zookeeper,
    /// etcd's `concurrency.Mutex` with its session lease.
    Etcd,
}

/// The server a lock runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Family {
    Cassandra,
    Redis,
    Memcached,
    ZooKeeper,
    Etcd,
}

impl Family {
    pub const ALL: [Family; 5] = [
        Family::Cassandra,
        Family::Redis,
        Family::Memcached,
        Family::ZooKeeper,
        Family::Etcd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::Cassandra => "Cassandra",
            Family::Redis => "Redis",
            Family::Memcached => "Memcached",
            Family::ZooKeeper => "ZooKeeper",
            Family::Etcd => "etcd",
        }
    }
}

/// What the registry knows of one lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub lock: Lock,
    /// Its name on every command line (`real --lock`, `bench real --locks`), in every event
    /// record's header, in the matrix's file names.
    pub name: &'static str,
    /// How the real runner's reports title it.
    pub title: &'static str,
    pub family: Family,
    /// The model `cassalock check --model NAME` runs for it, where one does.
    pub model: Option<&'static str>,
    /// Its row of the property matrix (its title there), where it has one.
    pub matrix_row: Option<&'static str>,
    /// The servers it runs on (in the real runner, the flag that names them).
    pub servers: Servers,
    /// The real runner runs it against local servers.
    pub real: bool,
    /// What names a holder, and whether a resource can fence with it.
    pub holder: Holder,
}

/// The servers a lock runs on, as the real runner and `bench real` name them: a kind of
/// server and how many of it, not the family alone (Redlock's independent masters are not one
/// Redis server and its replicas).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Servers {
    /// A Cassandra cluster (`--contact-points`).
    CassandraCluster,
    /// One Redis server, or a primary and its replicas (`--redis`).
    OneRedis,
    /// Independent Redis masters, each its own vote (`--redlock-masters`).
    RedisMasters,
    /// One Memcached server (`--memcached`).
    OneMemcached,
    /// A ZooKeeper ensemble (`--zookeeper`).
    ZooKeeperEnsemble,
    /// An etcd cluster (`--etcd`).
    EtcdCluster,
}

impl Servers {
    pub const ALL: [Servers; 6] = [
        Servers::CassandraCluster,
        Servers::OneRedis,
        Servers::RedisMasters,
        Servers::OneMemcached,
        Servers::ZooKeeperEnsemble,
        Servers::EtcdCluster,
    ];

    /// The servers in a phrase.
    pub fn phrase(self) -> &'static str {
        match self {
            Servers::CassandraCluster => "a Cassandra cluster's contact points",
            Servers::OneRedis => "a Redis server, or a primary and its replicas",
            Servers::RedisMasters => "the Redlock masters",
            Servers::OneMemcached => "one Memcached server",
            Servers::ZooKeeperEnsemble => "the ZooKeeper ensemble's servers",
            Servers::EtcdCluster => "the etcd cluster's endpoints",
        }
    }

    /// The locks of the registry that run on these servers.
    pub fn locks(self) -> impl Iterator<Item = Lock> {
        Lock::all().filter(move |lock| lock.entry().servers == self)
    }
}

/// What names a lock's holder, and whether a resource can fence with it (the matrix's
/// "Fencing" line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// Nothing the matrix says (a service that is not a lock, a variant of a row lock).
    Unsaid,
    /// The thesis's row locks: the resource refuses a write with a token below one it has seen.
    FencedByTheResource,
    /// A value that names the holder and does not grow, in a phrase: it cannot fence.
    Named(&'static str),
    /// A token that only grows from one holder to the next: a resource can fence with it.
    Grows(&'static str),
}

/// Every lock, in the order the reports list them.
pub const LOCKS: [Entry; 16] = [
    Entry {
        lock: Lock::Old,
        name: "old",
        title: "old GetLock",
        family: Family::Cassandra,
        model: Some("old"),
        matrix_row: Some("old GetLock (L3-4)"),
        servers: Servers::CassandraCluster,
        real: true,
        holder: Holder::FencedByTheResource,
    },
    Entry {
        lock: Lock::Queue,
        name: "queue",
        title: "queue GetLock",
        family: Family::Cassandra,
        model: Some("getlock"),
        matrix_row: Some("queue GetLock (L6)"),
        servers: Servers::CassandraCluster,
        real: true,
        holder: Holder::FencedByTheResource,
    },
    Entry {
        lock: Lock::QueueNextInLine,
        name: "queue-next-in-line",
        title: "queue GetLock, next in line 5 ms",
        family: Family::Cassandra,
        model: None,
        matrix_row: None,
        servers: Servers::CassandraCluster,
        real: true,
        holder: Holder::Unsaid,
    },
    Entry {
        lock: Lock::QueuePaced,
        name: "queue-paced",
        title: "queue GetLock, paced",
        family: Family::Cassandra,
        model: None,
        matrix_row: None,
        servers: Servers::CassandraCluster,
        real: true,
        holder: Holder::Unsaid,
    },
    Entry {
        lock: Lock::QueueTry,
        name: "trygetlock",
        title: "TryGetLock",
        family: Family::Cassandra,
        model: Some("trygetlock"),
        matrix_row: Some("TryGetLock (L7)"),
        servers: Servers::CassandraCluster,
        real: false,
        holder: Holder::FencedByTheResource,
    },
    Entry {
        lock: Lock::GlobalTime,
        name: "globaltime",
        title: "global time",
        family: Family::Cassandra,
        model: Some("globaltime"),
        matrix_row: Some("global time (L8)"),
        servers: Servers::CassandraCluster,
        real: false,
        holder: Holder::Unsaid,
    },
    Entry {
        lock: Lock::Lwt,
        name: "lwt",
        title: "LWT lock",
        family: Family::Cassandra,
        model: None,
        matrix_row: None,
        servers: Servers::CassandraCluster,
        real: true,
        holder: Holder::Unsaid,
    },
    Entry {
        lock: Lock::RedisSetNx,
        name: "redis-set-nx",
        title: "Redis SET NX lock",
        family: Family::Redis,
        model: Some("redis-set-nx"),
        matrix_row: Some("Redis SET NX PX (redis-set-nx)"),
        servers: Servers::OneRedis,
        real: true,
        holder: Holder::Named("a random token names the holder"),
    },
    Entry {
        lock: Lock::RedisSetNxExpire,
        name: "redis-setnx-expire",
        title: "Redis SETNX + EXPIRE lock",
        family: Family::Redis,
        model: Some("redis-setnx-expire"),
        matrix_row: Some("Redis SETNX, then EXPIRE, DEL release (redis-setnx-expire)"),
        servers: Servers::OneRedis,
        real: false,
        holder: Holder::Named("a token nobody reads names the holder"),
    },
    Entry {
        lock: Lock::Redisson,
        name: "redisson",
        title: "Redisson RLock",
        family: Family::Redis,
        model: Some("redisson"),
        matrix_row: Some("Redisson RLock, watchdog (redisson)"),
        servers: Servers::OneRedis,
        real: true,
        holder: Holder::Named("the owner field names the holder"),
    },
    Entry {
        lock: Lock::RedissonFair,
        name: "redisson-fair",
        title: "Redisson fair lock",
        family: Family::Redis,
        model: Some("redisson-fair"),
        matrix_row: Some("Redisson fair lock, queue + watchdog (redisson-fair)"),
        servers: Servers::OneRedis,
        real: true,
        holder: Holder::Named("the owner field names the holder"),
    },
    Entry {
        lock: Lock::RedissonFenced,
        name: "redisson-fenced",
        title: "Redisson fenced lock",
        family: Family::Redis,
        model: Some("redisson-fenced"),
        matrix_row: Some("Redisson fenced lock, token counter + watchdog (redisson-fenced)"),
        servers: Servers::OneRedis,
        real: true,
        holder: Holder::Grows("the token counter"),
    },
    Entry {
        lock: Lock::Redlock,
        name: "redlock",
        title: "Redlock",
        family: Family::Redis,
        model: Some("redlock"),
        matrix_row: Some("Redlock, 3 masters (redlock)"),
        servers: Servers::RedisMasters,
        real: true,
        holder: Holder::Named("a random token on every master"),
    },
    Entry {
        lock: Lock::Memcached,
        name: "memcached",
        title: "Memcached add lock",
        family: Family::Memcached,
        model: Some("memcached"),
        matrix_row: Some("Memcached add (memcached)"),
        servers: Servers::OneMemcached,
        real: true,
        holder: Holder::Named("a random token names the holder"),
    },
    Entry {
        lock: Lock::Zookeeper,
        name: "zookeeper",
        title: "ZooKeeper Curator lock",
        family: Family::ZooKeeper,
        model: Some("zookeeper"),
        matrix_row: Some("Curator InterProcessMutex on ZooKeeper (zookeeper)"),
        servers: Servers::ZooKeeperEnsemble,
        real: true,
        holder: Holder::Grows("the node's czxid"),
    },
    Entry {
        lock: Lock::Etcd,
        name: "etcd",
        title: "etcd mutex",
        family: Family::Etcd,
        model: Some("etcd"),
        matrix_row: Some("etcd mutex, session lease + keep-alive (etcd)"),
        servers: Servers::EtcdCluster,
        real: true,
        holder: Holder::Grows("the key's create revision"),
    },
];

impl Lock {
    /// Every lock, in the registry's order.
    pub fn all() -> impl Iterator<Item = Lock> {
        LOCKS.iter().map(|entry| entry.lock)
    }

    /// Its entry.
    pub fn entry(self) -> &'static Entry {
        LOCKS
            .iter()
            .find(|entry| entry.lock == self)
            .expect("every lock has an entry (registry tests)")
    }

    /// The lock named `name` ([`Entry::name`]).
    pub fn named(name: &str) -> Option<Lock> {
        LOCKS.iter().find(|entry| entry.name == name).map(|entry| entry.lock)
    }

    /// The lock titled `title` ([`Entry::title`]: a real run's summary keeps the title only).
    pub fn titled(title: &str) -> Option<Lock> {
        LOCKS.iter().find(|entry| entry.title == title).map(|entry| entry.lock)
    }

    pub fn name(self) -> &'static str {
        self.entry().name
    }

    pub fn title(self) -> &'static str {
        self.entry().title
    }

    pub fn family(self) -> Family {
        self.entry().family
    }

    pub fn servers(self) -> Servers {
        self.entry().servers
    }

    /// One of the thesis's locks on Cassandra rows that the library's `RemoteLocker` runs (the
    /// old lock and the queue lock, with its polls).
    pub fn is_row_lock(self) -> bool {
        matches!(self, Lock::Old | Lock::Queue | Lock::QueueNextInLine | Lock::QueuePaced)
    }

    /// One of the other families' locks, run by the library's `FamilyLocker`.
    pub fn is_family(self) -> bool {
        self.family() != Family::Cassandra
    }
}

/// Names as a sentence lists them, the last after `and_or` ("a, b or c"; "a"; "" for none).
pub fn listed(names: &[&str], and_or: &str) -> String {
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} {and_or} {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl fmt::Display for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lock_has_one_entry_and_names_tell_them_apart() {
        for (i, entry) in LOCKS.iter().enumerate() {
            assert_eq!(entry.lock.entry(), entry, "{}", entry.name);
            assert_eq!(Lock::named(entry.name), Some(entry.lock));
            assert_eq!(Lock::titled(entry.title), Some(entry.lock));
            assert!(
                LOCKS[i + 1..]
                    .iter()
                    .all(|other| other.lock != entry.lock && other.name != entry.name && other.title != entry.title),
                "{} is listed once",
                entry.name
            );
        }
        assert_eq!(Lock::all().count(), LOCKS.len());
        assert_eq!(Lock::named("nope"), None);
    }

    #[test]
    fn names_are_listed_as_a_sentence_lists_them() {
        assert_eq!(listed(&[], "or"), "");
        assert_eq!(listed(&["a"], "or"), "a");
        assert_eq!(listed(&["a", "b"], "and"), "a and b");
        assert_eq!(listed(&["a", "b", "c"], "or"), "a, b or c");
    }

    #[test]
    fn a_lock_runs_on_servers_of_its_own_family() {
        let family_of = |servers| match servers {
            Servers::CassandraCluster => Family::Cassandra,
            Servers::OneRedis | Servers::RedisMasters => Family::Redis,
            Servers::OneMemcached => Family::Memcached,
            Servers::ZooKeeperEnsemble => Family::ZooKeeper,
            Servers::EtcdCluster => Family::Etcd,
        };
        for lock in Lock::all() {
            assert_eq!(family_of(lock.servers()), lock.family(), "{lock}");
        }
        for servers in Servers::ALL {
            assert!(servers.locks().next().is_some(), "{servers:?} runs some lock");
        }
    }
}
