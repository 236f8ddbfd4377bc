//! The SET NX scenarios: Redis's `SET NX PX` lock on one server (or a primary and its replica),
//! against a fast clock, a failover before replication and a restart without persistence.

use cassalock::algo::family::SetNxLock;
use cassalock::algo::redis::RedisLockConfig;
use cassalock::store::redis_keyspace::Persistence;
use std::sync::Arc;

use super::{
    contention_clients, redis, FamilyScenario, InMatrix, MatrixColumn, Named, ServerAction, ServerFault, Trigger,
    LOSS_PPM,
};
use crate::clock::ClockSpec;
use crate::family::sim_lock::{LockKind, Simulated};

/// Redis's `SET NX PX` lock.
fn set_nx_lock(config: RedisLockConfig) -> LockKind {
    let ttl_ms = config.ttl_ms;
    Arc::new(Simulated::<SetNxLock>::new(config, ttl_ms))
}

pub(super) fn set_nx_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "set-nx-contention",
            "none broken: one server that keeps its keys and a clock that keeps pace",
            set_nx_lock(redis(2000)),
        )
    }
}

pub(super) fn set_nx_lost(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 8,
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        ..FamilyScenario::base(
            "set-nx-lost-messages",
            "none broken: a request whose reply was lost may have applied, and the lock code knows it",
            set_nx_lock(redis(2000)),
        )
    }
}

/// The holder keeps the lock its whole lease (a hold longer than the TTL, its validity checked
/// before the write only); the second client starts 100 ms later and waits.
pub(super) fn set_nx_clock_drift(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        hold_ms: 2500,
        start_ms: vec![0, 100],
        server_clocks: vec![ClockSpec {
            drift_ppm: 50_000,
            ..ClockSpec::default()
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "set-nx-clock-drift",
            "the server's clock keeps pace with the client's within drift_ppm (1%): at 5% fast the key expires about 95 ms before the holder stops believing",
            set_nx_lock(redis(2000)),
        )
    }
}

pub(super) fn set_nx_failover(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        replication_lag_ms: Some(100),
        faults: vec![ServerFault {
            trigger: Trigger::FirstAcquired { delay_ms: 0 },
            action: ServerAction::Failover,
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "set-nx-failover-after-acquire",
            "an acknowledged SET survives: asynchronous replication loses it when the primary fails over before the batch reached the replica",
            set_nx_lock(redis(2000)),
        )
    }
}

fn set_nx_restart(name: &'static str, persistence: Persistence, expect: Option<&'static str>) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        faults: vec![ServerFault {
            trigger: Trigger::FirstAcquired { delay_ms: 0 },
            action: ServerAction::Restart {
                server: 0,
                persistence,
                down_ms: 5,
            },
        }],
        expect_violated: expect,
        ..FamilyScenario::base(
            name,
            "the server keeps its keys across a restart: without persistence it comes back empty and the next client takes the lock",
            set_nx_lock(redis(2000)),
        )
    }
}

pub(super) fn set_nx_restart_none(_seed: u64) -> FamilyScenario {
    set_nx_restart("set-nx-restart-no-persistence", Persistence::None, Some("T1-belief"))
}

pub(super) fn set_nx_restart_fsync(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        premise:
            "none broken (the control): with appendfsync always the restarted server comes back with the holder's key",
        ..set_nx_restart("set-nx-restart-persistence", Persistence::EveryWrite, None)
    }
}

/// The lock these scenarios run.
pub(super) const LOCK: cassalock::registry::Lock = cassalock::registry::Lock::RedisSetNx;

/// This lock's scenarios, in the order the CLI lists them, each with where the matrix files it.
pub(super) const SCENARIOS: &[Named] = &[
    Named {
        name: "set-nx-contention",
        help: "5..=32 clients, one Redis, no faults (control)",
        build: set_nx_contention,
        matrix: InMatrix::Cell(MatrixColumn::None, "sim, 5-32 clients, one Redis"),
    },
    Named {
        name: "set-nx-lost-messages",
        help: "8 clients, one Redis, 5% of requests and 5% of replies lost (control)",
        build: set_nx_lost,
        matrix: InMatrix::Cell(
            MatrixColumn::StoreFailure,
            "sim, 8 clients, 5% of requests and 5% of replies lost",
        ),
    },
    Named {
        name: "set-nx-clock-drift",
        help: "the Redis server's clock runs 5% fast, beyond the lock's 1% drift margin",
        build: set_nx_clock_drift,
        matrix: InMatrix::Cell(
            MatrixColumn::ServerClockJump,
            "sim, the server's clock runs 5% fast (a drift past the lock's 1% margin, not a jump)",
        ),
    },
    Named {
        name: "set-nx-failover-after-acquire",
        help: "the primary fails over right after a client acquired, before replication",
        build: set_nx_failover,
        matrix: InMatrix::Cell(
            MatrixColumn::Failover,
            "sim, the primary fails over right after an acquire, before replication",
        ),
    },
    Named {
        name: "set-nx-restart-no-persistence",
        help: "the Redis server restarts empty right after a client acquired",
        build: set_nx_restart_none,
        matrix: InMatrix::Cell(
            MatrixColumn::Restart,
            "sim, the server restarts empty right after an acquire",
        ),
    },
    Named {
        name: "set-nx-restart-persistence",
        help: "the same restart with appendfsync always (control)",
        build: set_nx_restart_fsync,
        matrix: InMatrix::Cell(
            MatrixColumn::Restart,
            "sim, the same restart with appendfsync always (control)",
        ),
    },
];
