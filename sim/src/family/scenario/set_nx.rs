//! Redis's `SET NX PX` lock as its scenarios (`set_nx.toml`: a fast clock, a failover before
//! replication, a restart without persistence) build it: one server, or a primary and its
//! replica.

use cassalock::algo::family::SetNxLock;
use cassalock::registry::Lock;
use serde::Deserialize;
use std::sync::Arc;

use cassalock::algo::redis::RedisLockConfig;

use super::redis;
use crate::family::sim_lock::{LockKind, Simulated};

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::RedisSetNx;

/// A scenario's `settings`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// The key's `PX`.
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
    Ok(Arc::new(Simulated::<SetNxLock>::new(config, ttl_ms)))
}
