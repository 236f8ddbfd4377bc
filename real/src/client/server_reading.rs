//! T1-server for client programs: cassalock reads the lock's servers itself, beside the
//! library, and writes who they name as the holder into the run's record, so that a holder
//! believing while its server names another (its key expired under a paused process, lost in a
//! failover, deleted by an operator) is seen even when no second client acquires.
//!
//! The reading is the rule of one of our registry's locks over the same servers (its
//! `holder_on_server`): a shipped library and our machine of it keep the lock under the same
//! key, so our rule names the library's holder by the token the library gives its caller.
//! Only locks where that is so are offered ([`READABLE`]): the Redis ones, whose key is the
//! lock's name (redis-py's and go-redsync's string value, Redisson's hash field, the fenced
//! lock's counter); ZooKeeper's, whose shims (Curator's and kazoo's) lock `/locks/NAME`, the
//! directory of our machine, and name their holder by its node's czxid; and etcd's, whose
//! shims lock the prefix `/locks/NAME/` of our machine and name their holder by its key's
//! create revision.
//!
//! A client's thread reads right after its `acquired` (a belief is checked as it begins) and
//! just before it sends `unlock` (while it still believes): two readings per acquisition at
//! most, each one round trip, taken one at a time. A reading that fails is counted and said,
//! never taken for "nobody".

use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(madsim))]
use std::sync::Mutex;

#[cfg(not(madsim))]
use cassalock::driver::any_lock::AnyLocker;

use super::run::BadClientSpec;
#[cfg(not(madsim))]
use crate::family::{server_reader, FamilyRunError};
use crate::Lock;

/// The registry's locks whose rule names a shipped library's holder as the library names it
/// (the module's documentation says why these).
pub const READABLE: [Lock; 7] = [
    Lock::RedisSetNx,
    Lock::Redlock,
    Lock::Redisson,
    Lock::RedissonFair,
    Lock::RedissonFenced,
    Lock::Zookeeper,
    Lock::Etcd,
];

/// Which rule reads the servers, and which servers: `--read-server-as LOCK --servers H:P,..`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerReading {
    pub lock: Lock,
    pub servers: Vec<String>,
}

impl ServerReading {
    /// Refuse a rule that does not name a shipped library's holder, or no servers.
    pub fn check(&self) -> Result<(), BadClientSpec> {
        if !READABLE.contains(&self.lock) {
            let names: Vec<&str> = READABLE.iter().map(|lock| lock.name()).collect();
            return Err(BadClientSpec(format!(
                "--read-server-as {}: the shipped libraries' servers can be read as {} (the locks whose rule names a shipped library's holder by the token it gives)",
                self.lock.name(),
                names.join(", ")
            )));
        }
        if let Some(bad) = self.servers.iter().find(|server| !crate::is_host_port(server)) {
            return Err(BadClientSpec(format!("--servers: {bad:?} is not host:port")));
        }
        if self.servers.is_empty() {
            return Err(BadClientSpec(format!(
                "--read-server-as {} needs --servers: the addresses the client's library uses, host:port[,host:port...]",
                self.lock.name()
            )));
        }
        Ok(())
    }
}

/// The servers could not be read before the run (exit status 4 of `cassalock real --client`).
#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
    #[error("{0}")]
    Bad(BadClientSpec),
    #[error("cannot start the reader's runtime: {0}")]
    Runtime(std::io::Error),
    #[cfg(not(madsim))]
    #[error("reading the servers: {0}")]
    Servers(#[from] FamilyRunError),
    /// The simulation build has no connections to real servers.
    #[error("--read-server-as needs the real build (cargo build without --cfg madsim): this one talks to no server")]
    SimulationBuild,
}

/// How many times one reading asks before it says nothing is known.
#[cfg(not(madsim))]
const READ_ATTEMPTS: u32 = 2;

/// A connection that reads who the servers name as the run's lock's holder.
pub struct ServerReader {
    #[cfg(not(madsim))]
    runtime: tokio::runtime::Runtime,
    /// Only ever read ([`AnyLocker::holder_on_server`]); one reading at a time.
    #[cfg(not(madsim))]
    locker: Mutex<Box<dyn AnyLocker>>,
    key: String,
    readings: AtomicU64,
    failed: AtomicU64,
}

impl std::fmt::Debug for ServerReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerReader")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// What one reading found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reading {
    /// The servers name this token (canonical: see [`canonical_token`]), or nobody.
    Named(Option<String>),
    /// The reading failed (an error answer): nothing is known.
    Failed(String),
}

impl ServerReader {
    /// Connect to `reading`'s servers (each must answer now) to read `key`, the lock's name.
    #[cfg(madsim)]
    pub fn connect(reading: &ServerReading, _key: &str) -> Result<ServerReader, ReaderError> {
        reading.check().map_err(ReaderError::Bad)?;
        Err(ReaderError::SimulationBuild)
    }

    /// Connect to `reading`'s servers (each must answer now) to read `key`, the lock's name.
    #[cfg(not(madsim))]
    pub fn connect(reading: &ServerReading, key: &str) -> Result<ServerReader, ReaderError> {
        reading.check().map_err(ReaderError::Bad)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(ReaderError::Runtime)?;
        let locker = runtime
            .block_on(server_reader(reading.lock, &reading.servers))
            .map_err(|failed| match failed {
                // Too many servers for the lock, said before any is contacted: bad usage.
                FamilyRunError::Servers(refused) => ReaderError::Bad(BadClientSpec(refused.0)),
                other => ReaderError::Servers(other),
            })?;
        Ok(ServerReader {
            runtime,
            locker: Mutex::new(locker),
            key: key.to_owned(),
            readings: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        })
    }

    /// Read the servers now.
    #[cfg(madsim)]
    pub fn read(&self) -> Reading {
        self.failed.fetch_add(1, Ordering::Relaxed);
        Reading::Failed("the simulation build reads no server".to_owned())
    }

    /// Read the servers now.
    #[cfg(not(madsim))]
    pub fn read(&self) -> Reading {
        let locker = self.locker.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Every lock of READABLE reads its store, so no answer means its server did not
        // answer: a connection a restart broke fails once and is made again, so the reading
        // is asked once more (at most [`READ_ATTEMPTS`] in all).
        let mut read = None;
        for _ in 0..READ_ATTEMPTS {
            read = self.runtime.block_on(locker.holder_on_server(&self.key));
            if read.is_some() {
                break;
            }
        }
        self.readings.fetch_add(1, Ordering::Relaxed);
        match read {
            Some(Ok(holder)) => Reading::Named(holder.token().map(canonical_token)),
            Some(Err(failure)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                Reading::Failed(failure.to_string())
            }
            None => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                Reading::Failed(format!(
                    "no server answered, {READ_ATTEMPTS} times (down, restarting, or too slow)"
                ))
            }
        }
    }

    /// Readings made, and how many of them failed.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.readings.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

/// A token as the shims write it: our rules write a counter's token or a czxid with leading
/// zeros (so that text order is number order); a library says `7`. Digits lose their leading zeros; any
/// other token is kept as it is.
pub fn canonical_token(token: &str) -> String {
    if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
        let trimmed = token.trim_start_matches('0');
        if trimmed.is_empty() {
            "0".to_owned()
        } else {
            trimmed.to_owned()
        }
    } else {
        token.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_token_reads_as_the_library_writes_it() {
        assert_eq!(canonical_token("00000000000000000007"), "7");
        assert_eq!(canonical_token("0"), "0");
        assert_eq!(canonical_token("00"), "0");
        assert_eq!(canonical_token("120"), "120");
        // A random value with digits and letters, and Redisson's `id:thread`, are kept.
        assert_eq!(canonical_token("0af3"), "0af3");
        assert_eq!(canonical_token("8d1e-4:17"), "8d1e-4:17");
        assert_eq!(canonical_token(""), "");
    }

    #[test]
    fn only_the_rules_that_name_a_shipped_librarys_holder_are_offered() {
        let refused = ServerReading {
            lock: Lock::Memcached,
            servers: vec!["127.0.0.1:11211".into()],
        }
        .check()
        .unwrap_err();
        assert!(refused.0.contains("--read-server-as memcached"), "{refused}");
        assert!(refused.0.contains("redis-set-nx"), "{refused}");
        let no_servers = ServerReading {
            lock: Lock::Redisson,
            servers: Vec::new(),
        }
        .check()
        .unwrap_err();
        assert!(no_servers.0.contains("needs --servers"), "{no_servers}");
        for lock in READABLE {
            let reading = ServerReading {
                lock,
                servers: vec!["127.0.0.1:6379".into()],
            };
            assert_eq!(reading.check(), Ok(()), "{lock:?}");
        }
    }
}
