//! Redisson's fenced lock as its scenarios (`redisson_fenced.toml`: a paused holder, a
//! restart without persistence, a failover) build it: the RLock's settings (in `redisson.rs`),
//! its acquire counting up a token that the resource fences with.

use cassalock::registry::Lock;

use crate::family::sim_lock::LockKind;

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::RedissonFenced;

/// The lock of a scenario's `settings` (the RLock's: `watchdog_timeout_ms`, `mutants`).
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    super::redisson::fenced_lock(settings)
}
