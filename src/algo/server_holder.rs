//! Who a lock's server says holds it, read from the server's own state (claim T1-server).
//!
//! A holder believes it holds from its lock's answers; the server's state says who holds by
//! itself: the value of a Redis key, a Redisson hash's owner, the lowest sequential node under
//! Curator's directory, the key with the lowest create revision under etcd's prefix. Each lock
//! says how its server names its holder ([`super::family::FamilyLock::holder_on_server`]),
//! next to its machines; a driver that can see the server (the simulator, the model, the real
//! runner reading the server) asks the lock, and the judge compares the answer with who
//! believes (`cassalock_judge::server_state`). The reading is the lock's own rule, so no
//! driver decides who holds. The row locks of the thesis name their holders by thread, in
//! their main row ([`row_holders`]).

use crate::store::etcd_keyspace::EtcdKeyspace;
use crate::store::memcached::Memcached;
use crate::store::redis_keyspace::RedisKeyspace;
use crate::store::znode_tree::ZnodeTree;
use crate::store::LiveCell;

/// One server's state, as a lock reads its holder from it.
#[derive(Clone, Copy, Debug)]
pub enum ServerState<'a> {
    Redis(&'a RedisKeyspace),
    Memcached(&'a Memcached),
    ZooKeeper(&'a ZnodeTree),
    Etcd(&'a EtcdKeyspace),
    /// The server is down: no client reads or writes it now, so it names nobody and grants
    /// nobody. A lock on one server is not read while it is down; Redlock counts a master that
    /// is down for no other client.
    Down,
}

/// Who the server's state names as a lock's holder.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerHolder {
    Nobody,
    /// The holder whose key carries `token` ([`super::family::FamilyLock::token`]). `gone_at_us`:
    /// the server's clock reading from which that key has expired, if no command renews or
    /// deletes it first; `None` where the clock alone does not end it (a ZooKeeper node lives
    /// as long as its session, which the server ends on a pass of its own; Redlock's majority
    /// spans several clocks).
    Token {
        token: String,
        gone_at_us: Option<u64>,
    },
}

impl ServerHolder {
    /// `token` holds, its key gone from `gone_at_us` on the server's clock, if it expires.
    pub fn token_until(token: &str, gone_at_us: Option<u64>) -> ServerHolder {
        ServerHolder::Token {
            token: token.to_owned(),
            gone_at_us,
        }
    }

    /// The holder's token, if anyone holds.
    pub fn token(&self) -> Option<&str> {
        match self {
            ServerHolder::Nobody => None,
            ServerHolder::Token { token, .. } => Some(token),
        }
    }

    /// When the holder's key expires on the server's clock, if it does.
    pub fn gone_at_us(&self) -> Option<u64> {
        match self {
            ServerHolder::Nobody => None,
            ServerHolder::Token { gone_at_us, .. } => *gone_at_us,
        }
    }
}

/// One server's state and its clock now (the clock that decides its expiries), ms.
#[derive(Clone, Copy, Debug)]
pub struct ServerNow<'a> {
    pub state: ServerState<'a>,
    pub now_ms: u64,
}

impl<'a> ServerNow<'a> {
    /// The one server of a lock on one server: `None` for none or several.
    pub fn only(servers: &[ServerNow<'a>]) -> Option<ServerNow<'a>> {
        match servers {
            [one] => Some(*one),
            _ => None,
        }
    }

    /// The one Redis key space of `servers` and its clock, ms.
    pub fn redis(servers: &[ServerNow<'a>]) -> Option<(&'a RedisKeyspace, u64)> {
        match Self::only(servers)? {
            ServerNow {
                state: ServerState::Redis(keyspace),
                now_ms,
            } => Some((keyspace, now_ms)),
            _ => None,
        }
    }

    /// The one Memcached server of `servers` and its clock, ms.
    pub fn memcached(servers: &[ServerNow<'a>]) -> Option<(&'a Memcached, u64)> {
        match Self::only(servers)? {
            ServerNow {
                state: ServerState::Memcached(server),
                now_ms,
            } => Some((server, now_ms)),
            _ => None,
        }
    }

    /// The one ZooKeeper tree of `servers`.
    pub fn zookeeper(servers: &[ServerNow<'a>]) -> Option<&'a ZnodeTree> {
        match Self::only(servers)?.state {
            ServerState::ZooKeeper(tree) => Some(tree),
            _ => None,
        }
    }

    /// The one etcd key space of `servers` and its clock, ms.
    pub fn etcd(servers: &[ServerNow<'a>]) -> Option<(&'a EtcdKeyspace, u64)> {
        match Self::only(servers)? {
            ServerNow {
                state: ServerState::Etcd(keyspace),
                now_ms,
            } => Some((keyspace, now_ms)),
            _ => None,
        }
    }
}

/// One server's state as a driver read it from the server (owned), and its clock then: what
/// the real runner builds from a server's replies, so that the lock's own rule
/// ([`super::family::FamilyLock::holder_on_servers`]) names the holder, as it does over the
/// simulator's servers. A snapshot holds only what the lock's holder depends on (its key, its
/// directory, its prefix), each expiry placed on `now_ms`'s clock.
#[derive(Clone, Debug)]
pub struct ServerSnapshot {
    pub state: ReadState,
    /// The clock the snapshot's expiries are on, at the reading, ms.
    pub now_ms: u64,
}

/// What a [`ServerSnapshot`] holds: one server's value type, or nothing (down, unreachable).
#[derive(Clone, Debug)]
pub enum ReadState {
    Redis(RedisKeyspace),
    Memcached(Memcached),
    ZooKeeper(ZnodeTree),
    Etcd(EtcdKeyspace),
    /// The server did not answer the reading: it names nobody (as [`ServerState::Down`]).
    Down,
}

impl ServerSnapshot {
    /// The snapshot as the lock reads its server ([`ServerNow`]).
    pub fn as_now(&self) -> ServerNow<'_> {
        ServerNow {
            state: match &self.state {
                ReadState::Redis(keyspace) => ServerState::Redis(keyspace),
                ReadState::Memcached(server) => ServerState::Memcached(server),
                ReadState::ZooKeeper(tree) => ServerState::ZooKeeper(tree),
                ReadState::Etcd(keyspace) => ServerState::Etcd(keyspace),
                ReadState::Down => ServerState::Down,
            },
            now_ms: self.now_ms,
        }
    }
}

/// Who a row lock's main row names as its holders (the thesis's locks: the old shadow-row lock,
/// GetLock and TryGetLock): the threads whose cells *every* read of the row at the lock's
/// consistency level finds live. A holder's cell sits in its lock's main row under its
/// thread's name, and a contender that reads the row and finds any cell but its own backs off
/// (it holds only when its cell is alone there), so each such cell turns every contender
/// away. A contender's own passing cell may stand beside the holder's until the contender
/// reads the row and deletes it; that names the contender too, and takes nothing from the
/// holder (a contender that went on to believe it holds is T1-belief's to judge). A cell that
/// only some reads find names nobody: a contender whose read misses it could take the lock.
/// `reads`: what each read a client could make of the main row returns. No read, nobody.
pub fn row_holders<'r>(reads: impl IntoIterator<Item = &'r [LiveCell]>) -> Vec<String> {
    let mut reads = reads.into_iter();
    let Some(first) = reads.next() else {
        return Vec::new();
    };
    let mut named: Vec<String> = first.iter().map(|cell| cell.column.clone()).collect();
    for read in reads {
        named.retain(|thread| read.iter().any(|cell| cell.column == *thread));
    }
    named.sort();
    named.dedup();
    named
}

/// The most cells of a main row one reading of a real cluster takes in ([`main_row_reading`]).
/// A row holding that many names no one for sure (the holder's cell may sort past them): the
/// reading is then not counted.
pub const MAX_MAIN_ROW_CELLS: u32 = 1024;

/// A real runner's reading of `lock`'s main row: one slice read of its cells, at the client's
/// consistency level, through whichever coordinator the driver picks. It is one of the reads
/// [`row_holders`] takes (the simulator makes every one), so what it names is what a contender
/// reading there would find: a cell a read elsewhere would miss goes unseen.
pub fn main_row_reading(lock: &crate::LockId) -> crate::store::StoreCommand {
    super::read_first(lock.main_row(), MAX_MAIN_ROW_CELLS)
}

/// Who a reading made by [`main_row_reading`] names: the threads with a live cell in it, or
/// `None` when the row filled the reading (some cell may lie past it).
pub fn holders_read(cells: &[LiveCell]) -> Option<Vec<String>> {
    (cells.len() < MAX_MAIN_ROW_CELLS as usize).then(|| row_holders([cells]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(threads: &[&str]) -> Vec<LiveCell> {
        threads
            .iter()
            .map(|thread| LiveCell {
                column: (*thread).to_owned(),
                value: (*thread).to_owned(),
                timestamp_us: 1,
            })
            .collect()
    }

    #[test]
    fn t1_server_a_main_row_names_the_threads_every_read_finds() {
        let (alone, beside, missed) = (cells(&["a"]), cells(&["a", "b"]), cells(&[]));
        assert_eq!(row_holders([alone.as_slice(), beside.as_slice()]), ["a"]);
        assert_eq!(row_holders([beside.as_slice(), beside.as_slice()]), ["a", "b"]);
        // One read misses the cell: a contender coordinated there could take the lock.
        assert!(row_holders([alone.as_slice(), missed.as_slice()]).is_empty());
        assert!(row_holders(std::iter::empty::<&[LiveCell]>()).is_empty());
    }

    #[test]
    fn t1_server_a_real_reading_names_its_cells_unless_the_row_filled_it() {
        assert_eq!(
            holders_read(&cells(&["b", "a"])),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(holders_read(&[]), Some(Vec::new()));
        let names: Vec<String> = (0..MAX_MAIN_ROW_CELLS).map(|i| format!("t{i:05}")).collect();
        let full = cells(&names.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(holders_read(&full), None, "a full reading names no one for sure");
    }
}
