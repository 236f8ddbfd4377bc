//! The Memcached scenarios: the `add` lock on one server, under contention, lost messages and
//! a holder paused past its item's TTL.

use cassalock::algo::family::MemcachedLock;
use cassalock::algo::memcached::MemcachedLockConfig;
use std::sync::Arc;

use super::{contention_clients, FamilyScenario, Pause, LOSS_PPM};
use crate::family::sim_lock::{LockKind, Simulated};

/// Memcached's `add` lock.
fn memcached_lock(config: MemcachedLockConfig) -> LockKind {
    let ttl_ms = u64::from(config.ttl_s) * 1000;
    Arc::new(Simulated::<MemcachedLock>::new(config, ttl_ms))
}

fn memcached(ttl_s: u32) -> MemcachedLockConfig {
    MemcachedLockConfig {
        ttl_s,
        retry_every_ms: 20,
        ..MemcachedLockConfig::default()
    }
}

pub(super) fn memcached_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "memcached-contention",
            "none broken: one server that keeps its items and a clock that keeps pace",
            memcached_lock(memcached(3)),
        )
    }
}

pub(super) fn memcached_lost(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 8,
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        ..memcached_contention(0)
    }
    .renamed(
        "memcached-lost-messages",
        "none broken: an add whose reply was lost may have stored the item, and the lock code knows it",
    )
}

pub(super) fn memcached_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 50],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 3500,
            whole_process: false,
        }],
        expect_violated: Some("T1-resource"),
        ..FamilyScenario::base(
            "memcached-pause",
            "a holder is not paused between checking its validity and using the lock: a 3.5 s pause with a 3 s item lets a second client acquire and write first",
            memcached_lock(memcached(3)),
        )
    }
}
