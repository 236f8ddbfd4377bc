//! Memcached's `add` lock as its scenarios (`memcached.toml`: contention, lost messages, a
//! holder paused past its item's TTL) build it, on one server.

use cassalock::algo::family::MemcachedLock;
use cassalock::algo::memcached::MemcachedLockConfig;
use cassalock::registry::Lock;
use serde::Deserialize;
use std::sync::Arc;

use crate::family::sim_lock::{LockKind, Simulated};

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::Memcached;

/// A scenario's `settings`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// The item's exptime, whole seconds.
    ttl_s: u32,
    /// `lock` gives up after this long on the client's clock (absent: it waits for ever).
    #[serde(default)]
    max_wait_ms: Option<u64>,
}

/// The lock of a scenario's `settings`; a waiter asks again every 20 ms.
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    let Settings { ttl_s, max_wait_ms } = toml::Value::Table(settings).try_into()?;
    let config = MemcachedLockConfig {
        ttl_s,
        max_wait_ms,
        retry_every_ms: 20,
        ..MemcachedLockConfig::default()
    };
    Ok(Arc::new(Simulated::<MemcachedLock>::new(config, u64::from(ttl_s) * 1000)))
}
