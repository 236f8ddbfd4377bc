//! The Redisson `RLock` scenarios (watchdog, unlock messages): lost unlock messages, a failover
//! during renewal, a paused process and a failed renewal (redisson/redisson#775). The fair lock's
//! scenarios, in `redisson_fair`, build on the lock and config made here.

use cassalock::algo::family::{RedissonFairLock, RedissonLock};
use cassalock::algo::redis::redisson::{RedissonConfig, RedissonMutants};
use std::sync::Arc;

use super::{
    contention_clients, FamilyScenario, InMatrix, MatrixColumn, Named, Pause, ServerAction, ServerFault, Trigger,
};
use crate::family::net::{Cut, CutMode};
use crate::family::sim_lock::{LockKind, Simulated, Wakeup};

/// Redisson's `RLock` (watchdog when no lease time is given; waiters woken by the unlock
/// message, which the simulated server publishes over the network), or with `fair` its fair
/// lock (the RLock's hash and watchdog with a queue of waiters; the release tells the first
/// waiter alone, on its own channel).
pub(super) fn redisson_lock(config: RedissonConfig, fair: bool) -> LockKind {
    let renew_every_ms = config.watchdog().then(|| config.renew_every_ms());
    let lease_ms = config.lease_ms();
    if fair {
        Arc::new(Simulated::<RedissonFairLock> {
            renew_every_ms,
            wakeup: Wakeup::UnlockMessage,
            fair: true,
            ..Simulated::new(config, lease_ms)
        })
    } else {
        Arc::new(Simulated::<RedissonLock> {
            renew_every_ms,
            wakeup: Wakeup::UnlockMessage,
            ..Simulated::new(config, lease_ms)
        })
    }
}

/// Redisson's `lock()` without a lease time: a lease of `watchdog_timeout_ms`, renewed every
/// third of it.
pub(super) fn redisson(watchdog_timeout_ms: u64, mutants: RedissonMutants) -> RedissonConfig {
    RedissonConfig {
        watchdog_timeout_ms,
        mutants,
        ..RedissonConfig::default()
    }
}

pub(super) fn redisson_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "redisson-contention",
            "none broken: one server that keeps its keys, a clock that keeps pace, and unlock messages that arrive",
            redisson_lock(redisson(2000, RedissonMutants::default()), false),
        )
    }
}

pub(super) fn redisson_lost_messages(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 2,
        hold_ms: 20,
        think_max_ms: 50,
        lost_message_ppm: 1_000_000,
        ..FamilyScenario::base(
            "redisson-lost-unlock-messages",
            "none broken (safety), but every unlock message is lost: a waiter wakes only when the holder's TTL it was told runs out, so each handover can cost up to the lease",
            redisson_lock(redisson(1000, RedissonMutants::default()), false),
        )
    }
}

/// The holder acquires at about 0 and its watchdog's first renewal leaves at about 500 ms;
/// the primary dies then, with that renewal in flight and the acquire's batch still on its way
/// to the replica (lag 1 s). The other clients start after the failover and find the promoted
/// replica without the key.
pub(super) fn redisson_failover(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        hold_ms: 2000,
        start_ms: vec![0, 600, 700],
        replication_lag_ms: Some(1000),
        faults: vec![ServerFault {
            trigger: Trigger::FirstRenewal { delay_ms: 0 },
            action: ServerAction::Failover,
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "redisson-failover-during-renewal",
            "an acknowledged acquire survives: the primary fails over while the holder's first renewal is in flight and before the replica has the key, so a client that asks the promoted replica takes the lock while the holder's watchdog is still waiting to renew",
            redisson_lock(redisson(1500, RedissonMutants::default()), false),
        )
    }
}

pub(super) fn redisson_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 50],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 1500,
            whole_process: true,
        }],
        expect_violated: Some("T1-resource"),
        ..FamilyScenario::base(
            "redisson-pause",
            "the holder's process runs: it stops 1.5 s (its watchdog with it) between its validity check and its write, longer than the 1 s watchdog timeout, so the key runs out, the other client takes the lock and writes first",
            redisson_lock(redisson(1000, RedissonMutants::default()), false),
        )
    }
}

/// The holder (client 0) holds 3 s on a 1.5 s lease; its first renewal, at about 500 ms, is
/// dropped (the link drops its requests from 400 to 700 ms) and times out; the other client
/// starts at 100 ms and waits.
fn failed_renewal(name: &'static str, mutants: RedissonMutants, expect: Option<&'static str>) -> FamilyScenario {
    FamilyScenario {
        hold_ms: 3000,
        start_ms: vec![0, 100],
        cuts: vec![Cut {
            client: Some(0),
            server: 0,
            from_ms: 400,
            to_ms: 700,
            mode: CutMode::Dropped,
        }],
        expect_violated: expect,
        ..FamilyScenario::base(
            name,
            "one failed renewal does not stop the watchdog (redisson/redisson#775): with it stopped, the lease runs out under a holder that is never told, and the other client takes the lock",
            redisson_lock(redisson(1500, mutants), false),
        )
    }
}

pub(super) fn redisson_failed_renewal(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        premise: "none broken (the control for redisson/redisson#775): the fixed watchdog renews at its next period and the holder keeps its lock",
        ..failed_renewal("redisson-failed-renewal", RedissonMutants::default(), None)
    }
}

pub(super) fn redisson_failed_renewal_775(_seed: u64) -> FamilyScenario {
    failed_renewal(
        "redisson-failed-renewal-775",
        RedissonMutants {
            watchdog_stops_after_a_failed_renewal: true,
            ..RedissonMutants::default()
        },
        Some("C-lost"),
    )
}

/// The lock these scenarios run.
pub(super) const LOCK: cassalock::registry::Lock = cassalock::registry::Lock::Redisson;

/// This lock's scenarios, in the order the CLI lists them, each with where the matrix files it.
pub(super) const SCENARIOS: &[Named] = &[
    Named {
        name: "redisson-contention",
        help: "5..=32 clients, Redisson's RLock with its watchdog and unlock messages, no faults (control)",
        build: redisson_contention,
        matrix: InMatrix::Cell(MatrixColumn::None, "sim, 5-32 clients, watchdog, unlock messages"),
    },
    Named {
        name: "redisson-lost-unlock-messages",
        help:
            "5 clients, every unlock message lost: waiters sleep out the holder's TTL (control; the wait is reported)",
        build: redisson_lost_messages,
        matrix: InMatrix::Cell(
            MatrixColumn::LostNotification,
            "sim, every unlock message lost (waiters sleep out the holder's TTL)",
        ),
    },
    Named {
        name: "redisson-failover-during-renewal",
        help: "the primary dies with the holder's first renewal in flight, before the replica has the key",
        build: redisson_failover,
        matrix: InMatrix::Cell(
            MatrixColumn::Failover,
            "sim, the primary dies with the first renewal in flight, before the replica has the key",
        ),
    },
    Named {
        name: "redisson-pause",
        help: "the holder's whole process (its watchdog too) stops longer than the watchdog timeout",
        build: redisson_pause,
        matrix: InMatrix::Cell(
            MatrixColumn::Pause,
            "sim, the holder's whole process (its watchdog too) stops past the watchdog timeout",
        ),
    },
    Named {
        name: "redisson-failed-renewal",
        help: "the holder's first renewal is lost, the network recovers (control for redisson/redisson#775)",
        build: redisson_failed_renewal,
        matrix: InMatrix::Cell(
            MatrixColumn::StoreFailure,
            "sim, the holder's first renewal lost, then the network recovers",
        ),
    },
    Named {
        name: "redisson-failed-renewal-775",
        help: "the same with redisson/redisson#775's watchdog, which is not rescheduled after the failure",
        build: redisson_failed_renewal_775,
        matrix: InMatrix::ClientBug(
            "redisson/redisson#775 (the watchdog is not rescheduled after a failed renewal), Redisson RLock",
        ),
    },
];
