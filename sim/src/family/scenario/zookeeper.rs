//! Curator's lock as its scenarios (`zookeeper.toml`: expired sessions, missed watches with
//! and without our recheck, CURATOR-604) build it, on one server that judges sessions on its
//! own clock: each client with its own session, kept alive by a heartbeat every third of its
//! timeout.

use cassalock::algo::zookeeper::curator_mutex::{CuratorConfig, CuratorMutants};
use cassalock::registry::Lock;
use serde::Deserialize;
use std::sync::Arc;

use crate::family::sim_lock::{LockKind, SimCurator};

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::Zookeeper;

/// A scenario's `settings`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// Each client's session timeout.
    session_timeout_ms: u64,
    /// Ours: list the directory again this often even if no watch fired (absent: Curator's
    /// wait on the watch alone).
    recheck_every_ms: Option<u64>,
    /// `lock` gives up after this long (absent: it waits for ever).
    #[serde(default)]
    wait_ms: Option<u64>,
    /// A real client's bugs to plant (`release_gives_up_after_one_failure`,
    /// `keeps_its_node_across_a_new_session`).
    #[serde(default)]
    mutants: CuratorMutants,
}

/// The lock of a scenario's `settings`.
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    let Settings {
        session_timeout_ms,
        recheck_every_ms,
        wait_ms,
        mutants,
    } = toml::Value::Table(settings).try_into()?;
    Ok(Arc::new(SimCurator {
        config: CuratorConfig {
            wait_ms,
            recheck_every_ms,
            mutants,
            ..CuratorConfig::default()
        },
        session_timeout_ms,
    }))
}
