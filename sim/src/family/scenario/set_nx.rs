//! Redis's `SET NX PX` lock as its scenarios (`set_nx.toml`: a fast clock, a failover before
//! replication, a restart without persistence) build it: one server, or a primary and its
//! replica.

use cassalock::algo::family::SetNxLock;
use cassalock::registry::Lock;
use serde::Deserialize;
use std::sync::Arc;

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
}

/// The lock of a scenario's `settings`; a waiter asks again every 20 ms.
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    let Settings { ttl_ms } = toml::Value::Table(settings).try_into()?;
    Ok(Arc::new(Simulated::<SetNxLock>::new(redis(ttl_ms), ttl_ms)))
}
