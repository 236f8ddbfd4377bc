//! The two-command recipe (`SETNX`, then `EXPIRE`, `DEL` to release) as its scenarios
//! (`setnx_expire.toml`: contention, lost replies, a holder paused past its TTL) build it, on
//! one Redis server.

use cassalock::algo::redis::setnx_expire::SetNxExpireLock;
use cassalock::registry::Lock;
use serde::Deserialize;
use std::sync::Arc;

use cassalock::algo::redis::RedisLockConfig;

use super::redis;
use crate::family::sim_lock::{LockKind, Simulated};

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::RedisSetNxExpire;

/// A scenario's `settings`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// The `EXPIRE` after the `SETNX`.
    ttl_ms: u64,
    /// `lock` gives up after this long on the client's clock (absent: it waits for ever).
    #[serde(default)]
    max_wait_ms: Option<u64>,
}

/// The lock of a scenario's `settings`; a waiter asks again every 20 ms.
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    let Settings { ttl_ms, max_wait_ms } = toml::Value::Table(settings).try_into()?;
    let config = RedisLockConfig {
        max_wait_ms,
        ..redis(ttl_ms)
    };
    Ok(Arc::new(Simulated::<SetNxExpireLock>::new(config, ttl_ms)))
}
