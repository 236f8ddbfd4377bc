//! The store the algorithms run on: commands, replies, failures and the `Store` trait.
//!
//! A machine in [`crate::algo`] emits a [`StoreCommand`], whose write timestamp is either the
//! client's ([`Stamp::Client`]) or set by the algorithm itself ([`Stamp::At`], Listing 8). The
//! driver turns it into a [`StoreRequest`] with a concrete timestamp from its
//! [`MonotonicTimestamps`] and hands it to a [`Store`]: the in-memory store, the simulated
//! Cassandra cluster (`sim/`), or a real cluster (`cassandra`, outside the simulation build).

#[cfg(not(madsim))]
pub mod cassandra;

/// The real lock table's `gc_grace_seconds` when this build creates it (the default of
/// `cassandra::CassandraConfig::gc_grace_s`); here, outside the real-only module, so that the
/// long-run report reads the same figure in either build. It must exceed the lock TTL
/// (docs/cassandra.md).
pub const DEFAULT_GC_GRACE_S: u32 = 60;
pub mod etcd_client;
pub mod etcd_keyspace;
pub mod family_memory;
pub mod memcached;
pub mod memory;
pub mod redis_keyspace;
pub mod redis_replication;
pub mod row_store;
pub mod znode_tree;

use std::fmt;
use std::future::Future;
use std::sync::Mutex;

pub use row_store::{
    live_slice, merge_slices, reconcile, whole_seconds, CellBody, CellVersion, LiveCell, RowStore, MICROS_PER_SECOND,
};

/// One cell of a write: column, value and optional TTL in whole seconds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct CellWrite {
    pub column: String,
    pub value: String,
    pub ttl_s: Option<u32>,
}

/// Who chooses a write's timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Stamp {
    /// The client's timestamp generator (a monotonic reading of the client's clock).
    Client,
    /// The algorithm sets it (Listing 8 writes GlobalTime with timestamp = its value).
    At(u64),
}

/// A store operation, generic over how its timestamp is given: machines emit
/// `StoreOp<Stamp>` ([`StoreCommand`]), stores execute `StoreOp<u64>` ([`StoreRequest`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum StoreOp<T> {
    /// Write one or more cells of one row, as one batch (atomic and isolated within the row).
    Write {
        row: String,
        cells: Vec<CellWrite>,
        timestamp: T,
    },
    /// Delete one cell (a tombstone).
    Delete { row: String, column: String, timestamp: T },
    /// Read at most `count` live cells of `row` from column `start` on, in column order.
    ReadSlice { row: String, start: String, count: u32 },
}

/// What a machine asks for.
pub type StoreCommand = StoreOp<Stamp>;
/// What a store executes: timestamps resolved to microseconds.
pub type StoreRequest = StoreOp<u64>;

impl StoreCommand {
    /// Resolve the timestamp: `client_us` is taken only when the command uses [`Stamp::Client`].
    pub fn stamp(self, client_us: impl FnOnce() -> u64) -> StoreRequest {
        fn resolve(stamp: Stamp, client_us: impl FnOnce() -> u64) -> u64 {
            match stamp {
                Stamp::At(us) => us,
                Stamp::Client => client_us(),
            }
        }
        match self {
            StoreOp::Write { row, cells, timestamp } => StoreOp::Write {
                row,
                cells,
                timestamp: resolve(timestamp, client_us),
            },
            StoreOp::Delete { row, column, timestamp } => StoreOp::Delete {
                row,
                column,
                timestamp: resolve(timestamp, client_us),
            },
            StoreOp::ReadSlice { row, start, count } => StoreOp::ReadSlice { row, start, count },
        }
    }
}

impl<T> StoreOp<T> {
    pub fn row(&self) -> &str {
        match self {
            StoreOp::Write { row, .. } | StoreOp::Delete { row, .. } | StoreOp::ReadSlice { row, .. } => row,
        }
    }

    pub fn is_read(&self) -> bool {
        matches!(self, StoreOp::ReadSlice { .. })
    }
}

impl StoreRequest {
    /// Apply this request to one copy of the data, as the replica or store that coordinates it
    /// at `coordinator_now_us` would (that clock fixes TTL expiry and judges liveness).
    pub fn apply_to(&self, store: &mut RowStore, coordinator_now_us: u64) -> StoreReply {
        match self {
            StoreOp::Write { row, cells, timestamp } => {
                for cell in cells {
                    store.write(
                        row,
                        &cell.column,
                        &cell.value,
                        *timestamp,
                        cell.ttl_s,
                        coordinator_now_us,
                    );
                }
                StoreReply::Done
            }
            StoreOp::Delete { row, column, timestamp } => {
                store.delete(row, column, *timestamp);
                StoreReply::Done
            }
            StoreOp::ReadSlice { row, start, count } => {
                let cells = store.read_slice(row, start, *count as usize, coordinator_now_us);
                debug_assert!(
                    cells.len() <= *count as usize && cells.iter().all(|cell| cell.column.as_str() >= start.as_str()),
                    "a slice read returns at most `count` cells, none before `start`"
                );
                StoreReply::Slice(cells)
            }
        }
    }
}

impl<T: fmt::Display> fmt::Display for StoreOp<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_columns(f, &|column| column.to_owned())
    }
}

impl<T: fmt::Display> StoreOp<T> {
    /// As `Display`, with every column name shown through `column` (a trace may shorten the
    /// 20-digit queue columns).
    pub fn show_with<'a>(&'a self, column: &'a dyn Fn(&str) -> String) -> impl fmt::Display + 'a {
        ShowWith(move |f: &mut fmt::Formatter<'_>| self.fmt_columns(f, column))
    }

    fn fmt_columns(&self, f: &mut fmt::Formatter<'_>, column: &dyn Fn(&str) -> String) -> fmt::Result {
        match self {
            StoreOp::Write { row, cells, timestamp } => {
                write!(f, "write {row} [")?;
                for (i, cell) in cells.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    match cell.ttl_s {
                        Some(ttl) => write!(f, "{sep}{} ttl={ttl}s", column(&cell.column))?,
                        None => write!(f, "{sep}{}", column(&cell.column))?,
                    }
                }
                write!(f, "] @{timestamp}")
            }
            StoreOp::Delete {
                row,
                column: name,
                timestamp,
            } => write!(f, "delete {row} [{}] @{timestamp}", column(name)),
            StoreOp::ReadSlice { row, start, count } => {
                if start.is_empty() {
                    write!(f, "read {row} first {count}")
                } else {
                    write!(f, "read {row} from {:?} first {count}", column(start))
                }
            }
        }
    }
}

/// A `Display` made of a closure.
struct ShowWith<F>(F);

impl<F: Fn(&mut fmt::Formatter<'_>) -> fmt::Result> fmt::Display for ShowWith<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.0)(f)
    }
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stamp::Client => write!(f, "client-ts"),
            Stamp::At(us) => write!(f, "{us}"),
        }
    }
}

/// A store's answer to a successful request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum StoreReply {
    /// A write or delete was acknowledged.
    Done,
    /// The live cells of a slice read, in column order.
    Slice(Vec<LiveCell>),
}

impl fmt::Display for StoreReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_columns(f, &|column| column.to_owned())
    }
}

impl StoreReply {
    /// As `Display`, with every column name shown through `column`.
    pub fn show_with<'a>(&'a self, column: &'a dyn Fn(&str) -> String) -> impl fmt::Display + 'a {
        ShowWith(move |f: &mut fmt::Formatter<'_>| self.fmt_columns(f, column))
    }

    fn fmt_columns(&self, f: &mut fmt::Formatter<'_>, column: &dyn Fn(&str) -> String) -> fmt::Result {
        match self {
            StoreReply::Done => write!(f, "ok"),
            StoreReply::Slice(cells) => {
                write!(f, "[")?;
                for (i, cell) in cells.iter().enumerate() {
                    write!(f, "{}{}", if i == 0 { "" } else { ", " }, column(&cell.column))?;
                }
                write!(f, "]")
            }
        }
    }
}

/// Why a request failed. Machines treat every kind the same way (retry, then give up), but
/// the kinds say different things about the data: see each variant.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, thiserror::Error, serde::Serialize, serde::Deserialize,
)]
pub enum StoreFailure {
    /// No answer in time. A write that timed out **may or may not have been applied**.
    #[error("the store did not answer in time (a write may still have been applied)")]
    Timeout,
    /// The coordinator knew too few replicas were alive: nothing was applied.
    #[error("too few replicas are alive for the requested consistency (nothing applied)")]
    Unavailable,
    /// Anything else the store reported (a driver error, a bad statement).
    #[error("store error: {0}")]
    Other(String),
}

/// Where a driver sends requests. Implemented by the in-memory store, the simulated cluster
/// and the real Cassandra store.
pub trait Store: Send + Sync + 'static {
    fn execute(&self, request: StoreRequest) -> impl Future<Output = Result<StoreReply, StoreFailure>> + Send;
}

impl<S: Store> Store for std::sync::Arc<S> {
    fn execute(&self, request: StoreRequest) -> impl Future<Output = Result<StoreReply, StoreFailure>> + Send {
        S::execute(self, request)
    }
}

/// A client-side write-timestamp generator: the clock reading, but strictly greater than the
/// previous timestamp it gave. Cassandra drivers do the same, so that a delete issued after a
/// write by one client always shadows it, even when the clock stands still or steps back.
#[derive(Debug, Default)]
pub struct MonotonicTimestamps {
    last_us: Mutex<u64>,
}

impl MonotonicTimestamps {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn next(&self, clock_now_us: u64) -> u64 {
        let mut last = self.last_us.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let next = clock_now_us.max(last.saturating_add(1));
        debug_assert!(
            next > *last || *last == u64::MAX,
            "client timestamps strictly increase ({} then {next})",
            *last
        );
        *last = next;
        next
    }

    /// The last timestamp handed out (0 before the first): every later one is above it.
    pub fn last(&self) -> u64 {
        *self.last_us.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_timestamps_never_repeat_even_when_the_clock_steps_back() {
        let stamps = MonotonicTimestamps::new();
        assert_eq!(stamps.next(100), 100);
        assert_eq!(stamps.next(100), 101);
        assert_eq!(stamps.next(50), 102);
        assert_eq!(stamps.next(500), 500);
    }

    #[test]
    fn stamping_takes_a_client_timestamp_only_when_asked() {
        let write = StoreCommand::Write {
            row: "r".into(),
            cells: vec![],
            timestamp: Stamp::At(7),
        };
        assert!(matches!(
            write.stamp(|| panic!("not asked")),
            StoreOp::Write { timestamp: 7, .. }
        ));
        let delete = StoreCommand::Delete {
            row: "r".into(),
            column: "c".into(),
            timestamp: Stamp::Client,
        };
        assert!(matches!(delete.stamp(|| 9), StoreOp::Delete { timestamp: 9, .. }));
    }
}
