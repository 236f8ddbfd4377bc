//! The Redlock scenarios: five masters, and a holder whose majority loses its key to a clock
//! jump, a restart or a pause, with the go-redsync and node-redlock mutants and their controls.

use cassalock::algo::redis::redlock::{RedlockConfig, RedlockMutants};
use cassalock::store::redis_keyspace::Persistence;
use std::sync::Arc;

use super::{
    redis, FamilyScenario, InMatrix, MatrixColumn, Named, Pause, ServerAction, ServerFault, Trigger, LOSS_PPM,
};
use crate::clock::ClockSpec;
use crate::family::net::{Cut, CutMode, Slow};
use crate::family::sim_lock::SimRedlock;

fn redlock(ttl_ms: u64, mutants: RedlockMutants) -> RedlockConfig {
    RedlockConfig {
        masters: 5,
        lock: redis(ttl_ms),
        attempts: 3,
        retry_delay_max_ms: 200,
        mutants,
    }
}

pub(super) fn redlock_contention(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 3,
        hold_ms: 30,
        think_max_ms: 100,
        ..FamilyScenario::base(
            "redlock-contention",
            "none broken: masters that keep their keys and clocks that keep pace",
            Arc::new(SimRedlock(redlock(2000, RedlockMutants::default()))),
        )
    }
}

pub(super) fn redlock_lost(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        ..redlock_contention(0)
    }
    .renamed(
        "redlock-lost-messages",
        "none of Redlock's premises is broken (5% of requests and replies lost), but a release whose DEL was lost on a majority of masters still reads as Released (the library maps 'deleted on at least one master' to Released) while that majority keeps every other client out until the TTL",
    )
    .expecting("C-release")
}

/// Client 0 cannot reach masters 3 and 4 (refused) for the whole run: its majority is exactly
/// masters 0, 1 and 2, as in Kleppmann's example; the other clients start 150 ms later.
fn holder_with_bare_majority(name: &'static str, premise: &'static str, ttl_ms: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        hold_ms: 1000,
        start_ms: vec![0, 150, 150],
        cuts: [3, 4]
            .into_iter()
            .map(|server| Cut {
                client: Some(0),
                server,
                from_ms: 0,
                to_ms: u64::MAX,
                mode: CutMode::Refused,
            })
            .collect(),
        ..FamilyScenario::base(
            name,
            premise,
            Arc::new(SimRedlock(redlock(ttl_ms, RedlockMutants::default()))),
        )
    }
}

pub(super) fn redlock_clock_jump(_seed: u64) -> FamilyScenario {
    let ttl_ms = 2000;
    let mut scenario = holder_with_bare_majority(
        "redlock-clock-jump",
        "clocks advance at about the same rate: master 2's clock steps forward by the TTL at 100 ms and expires the holder's key early",
        ttl_ms,
    );
    scenario.server_clocks = vec![
        ClockSpec::default(),
        ClockSpec::default(),
        ClockSpec {
            jumps: vec![(100, ttl_ms as i64 * 1000)],
            ..ClockSpec::default()
        },
    ];
    scenario.expect_violated = Some("T1-belief");
    scenario
}

fn redlock_restart(name: &'static str, down_ms: u64, expect: Option<&'static str>) -> FamilyScenario {
    let mut scenario = holder_with_bare_majority(
        name,
        "masters keep their keys across a restart: master 2 restarts without fsync right after the holder acquired, and a second client gathers masters 2, 3 and 4",
        2000,
    );
    scenario.faults = vec![ServerFault {
        trigger: Trigger::FirstAcquired { delay_ms: 0 },
        action: ServerAction::Restart {
            server: 2,
            persistence: Persistence::None,
            down_ms,
        },
    }];
    scenario.expect_violated = expect;
    scenario
}

pub(super) fn redlock_restart_now(_seed: u64) -> FamilyScenario {
    redlock_restart("redlock-restart-no-fsync", 5, Some("T1-belief"))
}

pub(super) fn redlock_restart_delayed(_seed: u64) -> FamilyScenario {
    // Down for the TTL plus the longest the holder's key can have been set after its attempt
    // began (a slow reply): every key the crashed master held has expired elsewhere too.
    FamilyScenario {
        premise: "none broken (Kleppmann's fix): master 2 restarts empty but stays down longer than the TTL, so every key it forgot has expired on the other masters too",
        ..redlock_restart("redlock-restart-delayed", 2000 + 200, None)
    }
}

pub(super) fn redlock_gc_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 50],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 2500,
            whole_process: false,
        }],
        expect_violated: Some("T1-resource"),
        ..FamilyScenario::base(
            "redlock-gc-pause",
            "a holder is not paused between checking its validity and using the lock: a 2.5 s pause with a 2 s TTL lets a second client acquire and write first",
            Arc::new(SimRedlock(redlock(2000, RedlockMutants::default()))),
        )
    }
}

/// The holder extends once, about 100 ms into its lease, while every master takes 250 ms more per
/// command (200..1700 ms): the extension's round takes longer than the TTL, so the keys it
/// extended first expire again before it ends. A second client starts at 1750 ms.
fn slow_extend(name: &'static str, mutants: RedlockMutants, expect: Option<&'static str>) -> FamilyScenario {
    FamilyScenario {
        extends: 1,
        extend_after_ms: Some(100),
        hold_ms: 1200,
        start_ms: vec![0, 1750],
        request_timeout_ms: 500,
        slow: (0..5)
            .map(|server| {
                (
                    server,
                    Slow {
                        from_ms: 200,
                        to_ms: 1700,
                        extra_ms: 250,
                    },
                )
            })
            .collect(),
        expect_violated: expect,
        ..FamilyScenario::base(
            name,
            "an extension counts only if a majority said yes within the validity: a slow round ends after the first keys it extended expired again",
            Arc::new(SimRedlock(redlock(1000, mutants))),
        )
    }
}

pub(super) fn redlock_slow_extend(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        premise: "none broken (the control for go-redsync): the unmutated extension finds the slow round past the validity and reports the lease lost",
        ..slow_extend("redlock-slow-extend", RedlockMutants::default(), None)
    }
}

pub(super) fn redlock_slow_extend_mutant(_seed: u64) -> FamilyScenario {
    slow_extend(
        "redlock-slow-extend-go-redsync",
        RedlockMutants {
            extend_ignores_validity: true,
            ..RedlockMutants::default()
        },
        Some("T1-belief"),
    )
}

/// One client; masters 0, 1 and 2 drop its requests for the first second (its first attempt
/// and the unlock after it wait out 200 ms timeouts each): the second attempt, after the drop,
/// finds every master free.
fn retry(name: &'static str, mutants: RedlockMutants, expect: Option<&'static str>) -> FamilyScenario {
    FamilyScenario {
        clients: 1,
        max_tries: 1,
        cuts: (0..3)
            .map(|server| Cut {
                client: None,
                server,
                from_ms: 0,
                to_ms: 1000,
                mode: CutMode::Dropped,
            })
            .collect(),
        check_free_progress: true,
        expect_violated: expect,
        ..FamilyScenario::base(
            name,
            "each attempt's validity counts from that attempt's start: counted from the first, a retry after a slow first attempt can never succeed",
            Arc::new(SimRedlock(redlock(1000, mutants))),
        )
    }
}

pub(super) fn redlock_retry(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        premise: "none broken (the control for node-redlock): the second attempt counts its validity from its own start and acquires",
        ..retry("redlock-retry-after-drop", RedlockMutants::default(), None)
    }
}

pub(super) fn redlock_retry_mutant(_seed: u64) -> FamilyScenario {
    retry(
        "redlock-retry-after-drop-node-redlock",
        RedlockMutants {
            validity_from_first_attempt: true,
            ..RedlockMutants::default()
        },
        Some("T2-free"),
    )
}

/// The lock these scenarios run.
pub(super) const LOCK: cassalock::registry::Lock = cassalock::registry::Lock::Redlock;

/// This lock's scenarios, in the order the CLI lists them, each with where the matrix files it.
pub(super) const SCENARIOS: &[Named] = &[
    Named {
        name: "redlock-contention",
        help: "5 clients, 5 masters, no faults (control)",
        build: redlock_contention,
        matrix: InMatrix::Cell(MatrixColumn::None, "sim, 5 clients, 5 masters"),
    },
    Named {
        name: "redlock-lost-messages",
        help: "5 clients, 5 masters, 5% of requests and 5% of replies lost (finds a release said Released while a majority kept the key)",
        build: redlock_lost,
        matrix: InMatrix::Cell(MatrixColumn::StoreFailure, "sim, 5% of requests and 5% of replies lost"),
    },
    Named {
        name: "redlock-clock-jump",
        help: "one master of the holder's majority jumps forward by the TTL",
        build: redlock_clock_jump,
        matrix: InMatrix::Cell(MatrixColumn::ServerClockJump, "sim, a master of the holder's majority jumps forward by the TTL"),
    },
    Named {
        name: "redlock-gc-pause",
        help: "the holder pauses longer than the TTL between its check and its write",
        build: redlock_gc_pause,
        matrix: InMatrix::Cell(MatrixColumn::Pause, "sim, the holder pauses past the TTL between its check and its write"),
    },
    Named {
        name: "redlock-restart-no-fsync",
        help: "a master of the holder's majority restarts empty at once",
        build: redlock_restart_now,
        matrix: InMatrix::Cell(MatrixColumn::Restart, "sim, a master of the holder's majority restarts empty at once"),
    },
    Named {
        name: "redlock-restart-delayed",
        help: "the same restart, delayed by the TTL (Kleppmann's fix; control)",
        build: redlock_restart_delayed,
        matrix: InMatrix::Cell(MatrixColumn::Restart, "sim, the same restart delayed by the TTL (control)"),
    },
    Named {
        name: "redlock-slow-extend",
        help: "masters slow during the holder's extension (control for go-redsync)",
        build: redlock_slow_extend,
        matrix: InMatrix::No,
    },
    Named {
        name: "redlock-slow-extend-go-redsync",
        help: "the same with go-redsync's extend_ignores_validity",
        build: redlock_slow_extend_mutant,
        matrix: InMatrix::ClientBug("go-redsync's extend that ignores the validity time, masters slow during the extension, Redlock"),
    },
    Named {
        name: "redlock-retry-after-drop",
        help: "3 of 5 masters drop the first second's requests (control for node-redlock)",
        build: redlock_retry,
        matrix: InMatrix::Cell(MatrixColumn::StoreFailure, "sim, 3 of 5 masters drop the first second's requests"),
    },
    Named {
        name: "redlock-retry-after-drop-node-redlock",
        help: "the same with node-redlock's validity_from_first_attempt",
        build: redlock_retry_mutant,
        matrix: InMatrix::ClientBug("node-redlock's validity counted from the first attempt, 3 of 5 masters drop the first second's requests, Redlock"),
    },
];
