//! The two-command recipe (`SETNX`, then `EXPIRE`, `DEL` to release) as its scenarios
//! (`setnx_expire.toml`: contention, lost replies, a holder paused past its TTL) build it, on
//! one Redis server.

use cassalock::algo::redis::setnx_expire::SetNxExpireLock;
use cassalock::registry::Lock;

use crate::family::sim_lock::LockKind;

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::RedisSetNxExpire;

/// The lock of a scenario's `settings` (`ttl_ms`, `max_wait_ms`).
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    super::one_redis_key_lock::<SetNxExpireLock>(settings)
}
