//! Redlock as its scenarios (`redlock.toml`: a holder whose majority loses its key to a clock
//! jump, a restart or a pause, with the go-redsync and node-redlock mutants and their
//! controls) build it: five masters, three attempts, up to 200 ms between them.

use cassalock::algo::redis::redlock::{RedlockConfig, RedlockMutants};
use cassalock::registry::Lock;
use serde::Deserialize;
use std::sync::Arc;

use super::redis;
use crate::family::sim_lock::{LockKind, SimRedlock};

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::Redlock;

/// A scenario's `settings`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// Each master's `PX`.
    ttl_ms: u64,
    /// Attempts before `lock` gives up (the documentation's retry count; default 3).
    #[serde(default = "three")]
    attempts: u32,
    /// A real client's bugs to plant (`validity_from_first_attempt`, `extend_ignores_validity`).
    #[serde(default)]
    mutants: RedlockMutants,
}

fn three() -> u32 {
    3
}

/// The lock of a scenario's `settings`.
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    let Settings {
        ttl_ms,
        attempts,
        mutants,
    } = toml::Value::Table(settings).try_into()?;
    Ok(Arc::new(SimRedlock(RedlockConfig {
        masters: 5,
        lock: redis(ttl_ms),
        attempts,
        retry_delay_max_ms: 200,
        mutants,
    })))
}
