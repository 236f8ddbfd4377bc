//! The Memcached scenarios: the `add` lock on one server, under contention, lost messages and
//! a holder paused past its item's TTL.

use cassalock::algo::family::MemcachedLock;
use cassalock::algo::memcached::MemcachedLockConfig;
use std::sync::Arc;

use super::{contention_clients, FamilyScenario, InMatrix, MatrixColumn, Named, Pause, LOSS_PPM};
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

/// The lock these scenarios run.
pub(super) const LOCK: cassalock::registry::Lock = cassalock::registry::Lock::Memcached;

/// This lock's scenarios, in the order the CLI lists them, each with where the matrix files it.
pub(super) const SCENARIOS: &[Named] = &[
    Named {
        name: "memcached-contention",
        help: "5..=32 clients, one Memcached, no faults (control)",
        build: memcached_contention,
        matrix: InMatrix::Cell(MatrixColumn::None, "sim, 5-32 clients, one Memcached"),
    },
    Named {
        name: "memcached-lost-messages",
        help: "8 clients, one Memcached, 5% of requests and 5% of replies lost (control)",
        build: memcached_lost,
        matrix: InMatrix::Cell(
            MatrixColumn::StoreFailure,
            "sim, 8 clients, 5% of requests and 5% of replies lost",
        ),
    },
    Named {
        name: "memcached-pause",
        help: "the holder pauses longer than the TTL between its check and its write",
        build: memcached_pause,
        matrix: InMatrix::Cell(
            MatrixColumn::Pause,
            "sim, the holder pauses past the TTL between its check and its write",
        ),
    },
];
