//! This lock as cassalock's simulator runs it: its settings in the sweep, and in a scenario
//! file of your own (`settings = { lease_s = 2 }`, the simulator's language:
//! docs/own-scenario.md). `scenarios.toml` beside this crate is such a file.

use std::sync::Arc;

use cassalock::algo::RetryPolicy;
use cassalock_sim::family::sim_lock::{LockKind, Simulated};

use crate::{CasLeaseConfig, CasLeaseLock};

/// The settings the simulator runs the lock with: a 2 s lease, read every 20 ms.
pub fn sim_config() -> CasLeaseConfig {
    CasLeaseConfig {
        lease_s: 2,
        retry_every_ms: 20,
        max_wait_ms: None,
        retry: RetryPolicy::default(),
    }
}

/// A scenario file's `settings` for this lock.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// The lease, whole seconds.
    lease_s: u32,
    /// `lock()` gives up after this long (absent: it waits for ever).
    #[serde(default)]
    max_wait_ms: Option<u64>,
}

/// This lock from a scenario's `settings` (a waiter reads every 20 ms, as in the sweep).
pub fn lock_of_settings(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    let Settings { lease_s, max_wait_ms } = toml::Value::Table(settings).try_into()?;
    let config = CasLeaseConfig {
        lease_s,
        max_wait_ms,
        ..sim_config()
    };
    Ok(Arc::new(Simulated::<CasLeaseLock>::new(
        config,
        u64::from(lease_s) * 1000,
    )))
}
