//! The ZooKeeper scenarios: Curator's lock on one server that judges sessions on its own clock,
//! against expired sessions, missed watches (with and without our recheck) and CURATOR-604.

use cassalock::algo::zookeeper::curator_mutex::{CuratorConfig, CuratorMutants};
use std::sync::Arc;

use super::{contention_clients, restart_for_300_ms, FamilyScenario, InMatrix, MatrixColumn, Named, Pause, LOSS_PPM};
use crate::clock::ClockSpec;
use crate::family::net::{Cut, CutMode};
use crate::family::sim_lock::{LockKind, SimCurator};

/// ZooKeeper's session timeout in these scenarios (ms): a heartbeat every third of it.
const ZK_SESSION_TIMEOUT_MS: u64 = 2000;

fn zookeeper(recheck_every_ms: Option<u64>) -> LockKind {
    Arc::new(SimCurator {
        config: CuratorConfig {
            recheck_every_ms,
            ..CuratorConfig::default()
        },
        session_timeout_ms: ZK_SESSION_TIMEOUT_MS,
    })
}

pub(super) fn zookeeper_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "zookeeper-contention",
            "none broken: sessions kept alive, watches delivered, one server that keeps its tree",
            zookeeper(None),
        )
    }
}

pub(super) fn zookeeper_lost(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 8,
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        ..zookeeper_contention(0)
    }
    .renamed(
        "zookeeper-lost-messages",
        "none broken: a create whose reply was lost is found again by its guid (Curator's protected mode), and a session outlives a lost ping",
    )
}

/// Client 0 acquires at about 0 and its whole process stops 3 s (longer than the 2 s session
/// timeout) between its check and its write; client 1 starts at 300 ms and waits.
pub(super) fn zookeeper_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 300],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 3000,
            whole_process: true,
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "zookeeper-session-expiry-pause",
            "the holder's session outlives its pauses: stopped 3 s with a 2 s session timeout, its heartbeat stops, the server expires the session and deletes its node, the waiter's watch fires and it acquires while the paused holder, told nothing (Curator's lock has no lease), still believes; the czxid fences its late write",
            zookeeper(None),
        )
    }
}

/// Client 0 holds 3 s; at 1 s the server's clock steps forward by the session timeout:
/// every session expires at once; client 1, waiting, opens a new session and acquires.
pub(super) fn zookeeper_clock_jump(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        hold_ms: 3000,
        start_ms: vec![0, 100],
        server_clocks: vec![ClockSpec {
            jumps: vec![(1000, ZK_SESSION_TIMEOUT_MS as i64 * 1000)],
            ..ClockSpec::default()
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "zookeeper-clock-jump",
            "the server's clock keeps pace: a step forward by the session timeout expires the holder's session and node, and the waiter's new session acquires while the holder still believes",
            zookeeper(None),
        )
    }
}

fn missed_watch(name: &'static str, recheck_every_ms: Option<u64>, premise: &'static str) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        acquisitions: 2,
        hold_ms: 50,
        think_max_ms: 50,
        lost_message_ppm: 1_000_000,
        bound_ms: 20_000,
        ..FamilyScenario::base(name, premise, zookeeper(recheck_every_ms))
    }
}

pub(super) fn zookeeper_missed_watch(_seed: u64) -> FamilyScenario {
    missed_watch(
        "zookeeper-missed-watch",
        None,
        "a watch, once set, is delivered: Curator's waiter waits on the watch alone, so with every watch message lost a waiter sleeps on a lock that is free until the run's bound (T2 violated: stuck for over half the run with no fault in the way, a liveness loss no safety judge sees)",
    )
}

pub(super) fn zookeeper_missed_watch_recheck(_seed: u64) -> FamilyScenario {
    missed_watch(
        "zookeeper-missed-watch-recheck",
        Some(500),
        "none broken (the control): our recheck lists the directory every 500 ms, so a lost watch costs at most that",
    )
}

/// How long the scenarios' server takes to close a session it has refused (ms).
const ZK_CLOSE_LAG_MS: u64 = 3000;

/// Client 0 holds from about 0 to about 4 s; client 1 (started at 100 ms) waits behind it and
/// client 2 (200 ms) behind client 1. Client 1's link drops every request from 300 ms to 3 s:
/// its pings stop reaching the server, which refuses its session at about 2.2 s and deletes its
/// node 3 s later. Back at 3 s, client 1's next ping is answered SESSIONEXPIRED: its watchers
/// are woken and its next request is told the session is over.
fn lingering_session(name: &'static str, mutants: CuratorMutants, premise: &'static str) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        hold_ms: 4000,
        start_ms: vec![0, 100, 200],
        zk_close_lag_ms: ZK_CLOSE_LAG_MS,
        cuts: vec![Cut {
            client: Some(1),
            server: 0,
            from_ms: 300,
            to_ms: 3000,
            mode: CutMode::Dropped,
        }],
        ..FamilyScenario::base(
            name,
            premise,
            Arc::new(SimCurator {
                config: CuratorConfig {
                    mutants,
                    ..CuratorConfig::default()
                },
                session_timeout_ms: ZK_SESSION_TIMEOUT_MS,
            }),
        )
    }
}

pub(super) fn zookeeper_lingering_session(_seed: u64) -> FamilyScenario {
    lingering_session(
        "zookeeper-expired-session-lingers",
        CuratorMutants::default(),
        "none broken (the control for CURATOR-604): the waiter's session expires while its link is down and the server deletes its node 3 s after refusing the session; told SESSIONEXPIRED, our acquisition ends, and the next one queues with a new node",
    )
}

pub(super) fn zookeeper_lingering_session_604(_seed: u64) -> FamilyScenario {
    lingering_session(
        "zookeeper-expired-session-lingers-604",
        CuratorMutants {
            keeps_its_node_across_a_new_session: true,
            ..CuratorMutants::default()
        },
        "an acquisition does not outlive the session its node belongs to (CURATOR-604): Curator's retry lists again on its new session, where the old session's node, refused but not yet deleted, becomes the lowest when the holder releases; it holds, and when the close deletes that node the next waiter holds too",
    )
    .expecting("T1-belief")
}

pub(super) fn zookeeper_restart(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 2,
        hold_ms: 100,
        faults: restart_for_300_ms(),
        ..FamilyScenario::base(
            "zookeeper-server-restart",
            "none broken (the control): the server keeps its tree and sessions on disk, and a 300 ms outage is shorter than a session timeout",
            zookeeper(None),
        )
    }
}

/// The lock these scenarios run.
pub(super) const LOCK: cassalock::registry::Lock = cassalock::registry::Lock::Zookeeper;

/// This lock's scenarios, in the order the CLI lists them, each with where the matrix files it.
pub(super) const SCENARIOS: &[Named] = &[
    Named {
        name: "zookeeper-contention",
        help: "5..=32 clients, Curator's lock on one ZooKeeper server, watches delivered, no faults (control)",
        build: zookeeper_contention,
        matrix: InMatrix::Cell(MatrixColumn::None, "sim, 5-32 clients, one server, watches"),
    },
    Named {
        name: "zookeeper-lost-messages",
        help: "8 clients, 5% of requests and 5% of replies lost (heartbeats too) (control)",
        build: zookeeper_lost,
        matrix: InMatrix::Cell(MatrixColumn::StoreFailure, "sim, 8 clients, 5% of requests and 5% of replies lost (heartbeats too)"),
    },
    Named {
        name: "zookeeper-session-expiry-pause",
        help: "the holder's whole process stops past its session timeout: its node goes with the session while it still believes",
        build: zookeeper_pause,
        matrix: InMatrix::Cell(MatrixColumn::Pause, "sim, the holder's whole process stops past its session timeout"),
    },
    Named {
        name: "zookeeper-clock-jump",
        help: "the server's clock jumps forward by the session timeout while a client holds",
        build: zookeeper_clock_jump,
        matrix: InMatrix::Cell(MatrixColumn::ServerClockJump, "sim, the server's clock jumps by the session timeout while a client holds"),
    },
    Named {
        name: "zookeeper-missed-watch",
        help: "every watch message lost, Curator's wait on the watch alone: waiters sleep until the run's bound (T2 bounded)",
        build: zookeeper_missed_watch,
        matrix: InMatrix::Cell(MatrixColumn::LostNotification, "sim, every watch event lost, Curator waits on the watch alone"),
    },
    Named {
        name: "zookeeper-missed-watch-recheck",
        help: "the same with our recheck every 500 ms (control)",
        build: zookeeper_missed_watch_recheck,
        matrix: InMatrix::Cell(MatrixColumn::LostNotification, "sim, the same with our recheck every 500 ms"),
    },
    Named {
        name: "zookeeper-expired-session-lingers",
        help: "a waiter cut off past its session timeout; the server deletes its node 3 s after refusing the session (control)",
        build: zookeeper_lingering_session,
        matrix: InMatrix::Cell(MatrixColumn::StoreFailure, "sim, a waiter's requests dropped 2.7 s, past its session timeout; its node deleted 3 s after the session is refused"),
    },
    Named {
        name: "zookeeper-expired-session-lingers-604",
        help: "the same with Curator's CURATOR-604: the acquisition lists again on its new session and holds the old node",
        build: zookeeper_lingering_session_604,
        matrix: InMatrix::ClientBug("CURATOR-604 (a listing retried on the new session keeps the expired session's node, not yet deleted), Curator's InterProcessMutex"),
    },
    Named {
        name: "zookeeper-server-restart",
        help: "the server restarts (its data on disk) for 300 ms right after a client acquired (control)",
        build: zookeeper_restart,
        matrix: InMatrix::Cell(MatrixColumn::Restart, "sim, the server restarts (data on disk) for 300 ms right after an acquire"),
    },
];
