//! The scenarios of the two-command recipe (`SETNX`, then `EXPIRE`, `DEL` to release) on one
//! Redis server: contention, lost replies (a `SETNX` that applied and lost its reply leaves a
//! key with no expiry) and a holder paused past its TTL (its `DEL` deletes the next holder's
//! key).

use cassalock::algo::redis::setnx_expire::SetNxExpireLock;
use cassalock::algo::redis::RedisLockConfig;
use cassalock::registry::Lock;
use std::sync::Arc;

use super::{contention_clients, redis, FamilyScenario, InMatrix, MatrixColumn, Named, Pause, LOSS_PPM};
use crate::family::sim_lock::{LockKind, Simulated};

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::RedisSetNxExpire;

fn setnx_expire_lock(config: RedisLockConfig) -> LockKind {
    let ttl_ms = config.ttl_ms;
    Arc::new(Simulated::<SetNxExpireLock>::new(config, ttl_ms))
}

fn contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "setnx-expire-contention",
            "none broken: one server that keeps its keys, a clock that keeps pace, every reply delivered",
            setnx_expire_lock(redis(2000)),
        )
    }
}

fn lost_messages(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 8,
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        expect_violated: Some("T2"),
        ..FamilyScenario::base(
            "setnx-expire-lost-messages",
            "every reply arrives: a SETNX that applied and lost its reply is sent again, answers 0, and its key never gets an EXPIRE",
            setnx_expire_lock(redis(2000)),
        )
    }
}

/// Client 0 pauses past its TTL between its check and its write; clients 1-3 start behind it
/// and hold most of a TTL each, so client 0's late `DEL` finds a later holder's key.
fn pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 4,
        hold_ms: 1500,
        start_ms: vec![0, 50, 100, 150],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 2500,
            whole_process: false,
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "setnx-expire-pause",
            "a holder is not paused past its TTL: here it is, writes after the next holder took the key, and its DEL deletes a later holder's key",
            setnx_expire_lock(redis(2000)),
        )
    }
}

/// This lock's scenarios, in the order the CLI lists them, each with where the matrix files it.
pub(super) const SCENARIOS: &[Named] = &[
    Named {
        name: "setnx-expire-contention",
        help: "5..=32 clients, one Redis, no faults (control)",
        build: contention,
        matrix: InMatrix::Cell(MatrixColumn::None, "sim, 5-32 clients, one Redis"),
    },
    Named {
        name: "setnx-expire-lost-messages",
        help: "8 clients, one Redis, 5% of requests and 5% of replies lost",
        build: lost_messages,
        matrix: InMatrix::Cell(
            MatrixColumn::StoreFailure,
            "sim, 8 clients, 5% of requests and 5% of replies lost",
        ),
    },
    Named {
        name: "setnx-expire-pause",
        help: "the holder pauses past its TTL between its check and its write; three clients behind it",
        build: pause,
        matrix: InMatrix::Cell(
            MatrixColumn::Pause,
            "sim, the holder pauses past the TTL between its check and its write, three clients behind it",
        ),
    },
];
