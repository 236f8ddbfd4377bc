//! Redisson's fair lock as its scenarios (`redisson_fair.toml`, judged for F-order and F-drop
//! too: lost unlock messages, barging, long contention) build it: the RLock's settings (in
//! `redisson.rs`), with a queue of waiters each told on its own channel.

use cassalock::registry::Lock;

use crate::family::sim_lock::LockKind;

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::RedissonFair;

/// The lock of a scenario's `settings` (the RLock's: `watchdog_timeout_ms`, `mutants`).
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    super::redisson::fair_lock(settings)
}
