//! Redis's `SET NX PX` lock as its scenarios (`set_nx.toml`: a fast clock, a failover before
//! replication, a restart without persistence) build it: one server, or a primary and its
//! replica.

use cassalock::algo::family::SetNxLock;
use cassalock::registry::Lock;

use crate::family::sim_lock::LockKind;

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::RedisSetNx;

/// The lock of a scenario's `settings` (`ttl_ms`, `max_wait_ms`).
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    super::one_redis_key_lock::<SetNxLock>(settings)
}
