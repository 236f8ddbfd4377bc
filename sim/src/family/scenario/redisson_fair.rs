//! The scenarios of Redisson's fair lock (a queue of waiters, each told on its own channel),
//! judged for F-order and F-drop too: lost unlock messages, barging, long contention.

use cassalock::algo::redis::redisson::RedissonMutants;

use super::redisson::{redisson, redisson_lock};
use super::{
    contention_clients, FamilyScenario, InMatrix, MatrixColumn, Named, Pause, ServerAction, ServerFault, Trigger,
};
use crate::family::sim_lock::LockKind;

/// Redisson's fair lock with its watchdog (`lock()` without a lease time) and Redisson's
/// `threadWaitTime` of 5 s.
fn redisson_fair(watchdog_timeout_ms: u64, mutants: RedissonMutants) -> LockKind {
    redisson_lock(redisson(watchdog_timeout_ms, mutants), true)
}

pub(super) fn redisson_fair_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "redisson-fair-contention",
            "none broken: one server that keeps its keys and queue, clocks that keep pace, and unlock messages that reach the first waiter; the lock goes in the order the lock() calls first reached the server",
            redisson_fair(2000, RedissonMutants::default()),
        )
    }
}

pub(super) fn redisson_fair_lost_messages(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 2,
        hold_ms: 20,
        think_max_ms: 50,
        lost_message_ppm: 1_000_000,
        bound_ms: 600_000,
        expect_violated: Some("F-drop"),
        ..FamilyScenario::base(
            "redisson-fair-lost-unlock-messages",
            "unlock messages arrive: lost, a waiter wakes only when the wait it was told on joining runs out, the instant its slot began then; one handover in between has moved its deadline to that same instant, so its own next acquire arrives a request's latency late, drops it as stale and queues it again at the tail (safety and F-order unharmed)",
            redisson_fair(1000, RedissonMutants::default()),
        )
    }
}

pub(super) fn redisson_fair_pause(_seed: u64) -> FamilyScenario {
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
            "redisson-fair-pause",
            "the holder's process runs: it stops 1.5 s (its watchdog with it) between its validity check and its write, longer than the 1 s watchdog timeout, so the key runs out, the first waiter takes the lock and writes first",
            redisson_fair(1000, RedissonMutants::default()),
        )
    }
}

/// As `redisson-failover-during-renewal`, on the fair lock.
pub(super) fn redisson_fair_failover(_seed: u64) -> FamilyScenario {
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
            "redisson-fair-failover-during-renewal",
            "an acknowledged acquire survives: the primary fails over while the holder's first renewal is in flight and before the replica has the key, so the next lock() call finds the promoted replica free with an empty queue and takes the lock while the holder's watchdog is still waiting to renew",
            redisson_fair(1500, RedissonMutants::default()),
        )
    }
}

pub(super) fn redisson_fair_barging(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        expect_violated: Some("F-order"),
        ..FamilyScenario::base(
            "redisson-fair-barging",
            "the acquire keeps the queue: with the planted mutant it runs the RLock's script, so whoever asks when the lock is free takes it, ahead of waiters that asked first",
            redisson_fair(
                1000,
                RedissonMutants {
                    fair_acquire_ignores_the_queue: true,
                    ..RedissonMutants::default()
                },
            ),
        )
    }
}

/// Five clients that each hold 300 ms, ten times, with no think time: the lock is never free
/// for long and the queue never empties, for about 15 s.
pub(super) fn redisson_fair_long_contention(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 10,
        hold_ms: 300,
        bound_ms: 180_000,
        expect_violated: Some("F-drop"),
        ..FamilyScenario::base(
            "redisson-fair-long-contention",
            "a waiter keeps its place while it waits: the scripts move the waiters' deadlines only when the lock changes hands, so after about a lease plus a threadWaitTime (1 s + 5 s) of unbroken contention the head's deadline has passed, the next script drops it as stale, and nothing tells it",
            redisson_fair(1000, RedissonMutants::default()),
        )
    }
}

/// The lock these scenarios run.
pub(super) const LOCK: cassalock::registry::Lock = cassalock::registry::Lock::RedissonFair;

/// This lock's scenarios, in the order the CLI lists them, each with where the matrix files it.
pub(super) const SCENARIOS: &[Named] = &[
    Named {
        name: "redisson-fair-contention",
        help: "5..=32 clients, Redisson's fair lock (queue, watchdog, per-waiter unlock messages), no faults (control; F-order, F-drop judged)",
        build: redisson_fair_contention,
        matrix: InMatrix::Cell(MatrixColumn::None, "sim, 5-32 clients, queue, watchdog, per-waiter unlock messages"),
    },
    Named {
        name: "redisson-fair-lost-unlock-messages",
        help: "5 clients on the fair lock, every unlock message lost: waiters wake at their deadline and their own acquire drops them as stale (F-drop; the wait is reported)",
        build: redisson_fair_lost_messages,
        matrix: InMatrix::Cell(MatrixColumn::LostNotification, "sim, every unlock message lost (waiters wake at their deadline)"),
    },
    Named {
        name: "redisson-fair-pause",
        help: "the fair lock's holder's whole process stops longer than the watchdog timeout",
        build: redisson_fair_pause,
        matrix: InMatrix::Cell(MatrixColumn::Pause, "sim, the holder's whole process stops past the watchdog timeout"),
    },
    Named {
        name: "redisson-fair-failover-during-renewal",
        help: "the fair lock's primary dies with the holder's first renewal in flight, before the replica has the key",
        build: redisson_fair_failover,
        matrix: InMatrix::Cell(MatrixColumn::Failover, "sim, the primary dies with the first renewal in flight, before the replica has the key"),
    },
    Named {
        name: "redisson-fair-barging",
        help: "the fair lock with the planted fair_acquire_ignores_the_queue mutant (the RLock's acquire): caught by F-order",
        build: redisson_fair_barging,
        matrix: InMatrix::ClientBug("an acquire that ignores the queue (a planted unfair variant), Redisson fair lock"),
    },
    Named {
        name: "redisson-fair-long-contention",
        help: "5 clients holding 300 ms each, 10 times, on the fair lock: unbroken contention longer than a lease plus a threadWaitTime drops the head of the queue as stale (F-drop)",
        build: redisson_fair_long_contention,
        matrix: InMatrix::Cell(MatrixColumn::None, "sim, 5 clients holding 300 ms, unbroken contention past a lease"),
    },
];
