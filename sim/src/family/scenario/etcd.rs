//! etcd's mutex as its scenarios (`etcd.toml`: expired leases, a late watch, etcd-io/etcd#11456,
//! a shared session, etcd-io/etcd#10756) build it, on one server that judges leases on its own
//! clock: the session's lease kept alive every third of its TTL, waiters woken by a watch on
//! their predecessor, the key's create revision a token that grows.

use cassalock::algo::etcd::mutex::{EtcdMutants, EtcdMutexConfig};
use cassalock::algo::family::EtcdLock;
use cassalock::registry::Lock;
use serde::Deserialize;
use std::sync::Arc;

use crate::family::sim_lock::{LockKind, Simulated, Wakeup};

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::Etcd;

/// A scenario's `settings`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// The session's lease TTL, whole seconds (the server's minimum is 2).
    session_ttl_s: i64,
    /// `lock` gives up after this long (absent: it waits for ever).
    #[serde(default)]
    wait_ms: Option<u64>,
    /// A real client's bugs to plant (`no_own_key_check_after_wait`,
    /// `one_session_for_every_acquisition`).
    #[serde(default)]
    mutants: EtcdMutants,
}

/// The lock of a scenario's `settings`.
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    let Settings {
        session_ttl_s,
        wait_ms,
        mutants,
    } = toml::Value::Table(settings).try_into()?;
    let config = EtcdMutexConfig {
        session_ttl_s,
        wait_ms,
        mutants,
        ..EtcdMutexConfig::default()
    };
    Ok(Arc::new(Simulated::<EtcdLock> {
        fences: true,
        renew_every_ms: Some(config.keep_alive_every_ms()),
        wakeup: Wakeup::Watch,
        ..Simulated::new(config.clone(), config.ttl_us() / 1000)
    }))
}
