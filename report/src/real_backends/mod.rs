//! `reports/real-backends.md`: every lock on its real servers (`cassalock bench real`): the
//! thesis's Cassandra locks (old, queue) and a Cassandra LWT lock on a local Cassandra cluster,
//! Redis `SET NX`, Redisson's RLock and Redlock on local Redis servers, Memcached `add` on a
//! local memcached; the same workload and judges for all, at several locker counts, and one run
//! of each lock under its backend's natural fault.
//!
//! Everything the report says is computed from the runs it is given: the text names no figure
//! of its own, so a rerun on another machine cannot leave a stale sentence behind.

mod charts;
mod configuration;
mod data;
mod fair_lock;
mod files;
mod findings;
mod markdown;
mod table;
#[cfg(test)]
mod tests;
mod text;

pub use data::{BackendSetup, FaultOutcome, FaultRun, Measured, RedissonWake, RowLockSettings, Setup};
pub use files::{read_data, write, write_again};
pub use markdown::render;

/// The report's markdown file.
pub const REPORT: &str = "real-backends.md";
/// The measurements behind the report, as JSON ([`Measured`]): `bench real --from-data` writes
/// the report again from them.
pub const DATA: &str = "real-backends.json";
/// Its charts, in the order the report shows them.
pub const CHARTS: [&str; 3] = [
    "real-backends-throughput.svg",
    "real-backends-wait-p50.svg",
    "real-backends-wait-p99.svg",
];
