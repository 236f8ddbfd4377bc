//! The etcd scenarios: etcd's mutex on one server that judges leases on its own clock, against
//! expired leases, a late watch (etcd 11456) and a shared session (etcd 10756).

use cassalock::algo::etcd::mutex::{EtcdMutants, EtcdMutexConfig};
use cassalock::algo::family::EtcdLock;
use std::sync::Arc;

use super::{contention_clients, restart_for_300_ms, FamilyScenario, InMatrix, MatrixColumn, Named, Pause, LOSS_PPM};
use crate::clock::ClockSpec;
use crate::family::sim_lock::{LockKind, Simulated, Wakeup};

/// etcd's session lease TTL in these scenarios, whole seconds (etcd's minimum).
const ETCD_TTL_S: i64 = 2;

fn etcd(mutants: EtcdMutants) -> LockKind {
    let config = EtcdMutexConfig {
        session_ttl_s: ETCD_TTL_S,
        mutants,
        ..EtcdMutexConfig::default()
    };
    Arc::new(Simulated::<EtcdLock> {
        fences: true,
        renew_every_ms: Some(config.keep_alive_every_ms()),
        wakeup: Wakeup::Watch,
        ..Simulated::new(config.clone(), config.ttl_us() / 1000)
    })
}

pub(super) fn etcd_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "etcd-contention",
            "none broken: leases kept alive, watches delivered, one server that keeps its keys",
            etcd(EtcdMutants::default()),
        )
    }
}

pub(super) fn etcd_lost(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 8,
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        ..etcd_contention(0)
    }
    .renamed(
        "etcd-lost-messages",
        "none broken: a put whose reply was lost is found again under its lease's key, and a holder whose keep-alives fail for a TTL stops believing",
    )
}

pub(super) fn etcd_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 50],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 3000,
            whole_process: true,
        }],
        expect_violated: None,
        ..FamilyScenario::base(
            "etcd-pause",
            "none broken that a fenced resource would see: the holder stops 3 s with a 2 s lease between its check and its write, the lease expires and the waiter acquires, and the late write carries a smaller revision, which a resource that checks it refuses",
            etcd(EtcdMutants::default()),
        )
    }
}

pub(super) fn etcd_clock_jump(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        hold_ms: 3000,
        start_ms: vec![0, 100],
        server_clocks: vec![ClockSpec {
            jumps: vec![(1000, ETCD_TTL_S * 1_000_000)],
            ..ClockSpec::default()
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "etcd-clock-jump",
            "the server's clock keeps pace with the client's: a step forward by the TTL expires the holder's lease, the waiter acquires, and the holder believes until its next keep-alive is refused",
            etcd(EtcdMutants::default()),
        )
    }
}

/// Client 0 holds from about 30 ms to about 950 ms; client 1 (granted at about 100 ms,
/// keep-alives at about 767 and 1434 ms) waits behind it, and the watch message telling it of
/// client 0's release is 300 ms late. At 1000 ms the server's clock steps forward by the TTL:
/// client 1's lease expires and its key goes (client 0 has released; client 2's lease is
/// granted after the jump). Client 2 starts at 1060 ms and finds the lock free. Then client
/// 1's late watch message arrives, between its keep-alives: its lease is still live on its
/// own clock, its key is gone.
fn waiter_expiry(name: &'static str, mutants: EtcdMutants, expect: Option<&'static str>) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        hold_ms: 900,
        start_ms: vec![0, 100, 1060],
        message_delay_ms: 300,
        server_clocks: vec![ClockSpec {
            jumps: vec![(1000, ETCD_TTL_S * 1_000_000)],
            ..ClockSpec::default()
        }],
        expect_violated: expect,
        ..FamilyScenario::base(
            name,
            "a waiter whose lease expired while it waited does not take the lock (etcd-io/etcd#11456): woken by its predecessor's deletion after its own key went with its lease, it must check its own key before it believes",
            etcd(mutants),
        )
    }
}

pub(super) fn etcd_waiter_expiry(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        premise: "none broken (the control for etcd 11456): the waiter reads its own key after the wait, finds it gone with its lease, and does not believe",
        ..waiter_expiry("etcd-lease-expires-while-waiting", EtcdMutants::default(), None)
    }
}

pub(super) fn etcd_waiter_expiry_11456(_seed: u64) -> FamilyScenario {
    waiter_expiry(
        "etcd-lease-expires-while-waiting-11456",
        EtcdMutants {
            no_own_key_check_after_wait: true,
            ..EtcdMutants::default()
        },
        Some("T1-belief"),
    )
}

pub(super) fn etcd_shared_session_10756(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        acquisitions: 2,
        hold_ms: 100,
        ..FamilyScenario::base(
            "etcd-shared-session-10756",
            "one session per acquisition (etcd-io/etcd#10756 shares one between goroutines: the same lease, so the same key, which each takes for its own place at the head)",
            etcd(EtcdMutants {
                one_session_for_every_acquisition: true,
                ..EtcdMutants::default()
            }),
        )
    }
    .expecting("T1-belief")
}

pub(super) fn etcd_restart(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 2,
        hold_ms: 100,
        faults: restart_for_300_ms(),
        ..FamilyScenario::base(
            "etcd-server-restart",
            "none broken (the control): the server keeps its keys and leases on disk, and a restarted leader gives every lease its TTL again",
            etcd(EtcdMutants::default()),
        )
    }
}

/// The lock these scenarios run.
pub(super) const LOCK: cassalock::registry::Lock = cassalock::registry::Lock::Etcd;

/// This lock's scenarios, in the order the CLI lists them, each with where the matrix files it.
pub(super) const SCENARIOS: &[Named] = &[
    Named {
        name: "etcd-contention",
        help: "5..=32 clients, etcd's mutex on one etcd server, no faults (control)",
        build: etcd_contention,
        matrix: InMatrix::Cell(MatrixColumn::None, "sim, 5-32 clients, one server"),
    },
    Named {
        name: "etcd-lost-messages",
        help: "8 clients, 5% of requests and 5% of replies lost (keep-alives too) (control)",
        build: etcd_lost,
        matrix: InMatrix::Cell(MatrixColumn::StoreFailure, "sim, 8 clients, 5% of requests and 5% of replies lost (keep-alives too)"),
    },
    Named {
        name: "etcd-pause",
        help: "the holder's whole process stops past its lease between its check and its write (the revision fences the write)",
        build: etcd_pause,
        matrix: InMatrix::Cell(MatrixColumn::Pause, "sim, the holder's whole process stops past its lease between its check and its write"),
    },
    Named {
        name: "etcd-clock-jump",
        help: "the server's clock jumps forward by the lease TTL while a client holds",
        build: etcd_clock_jump,
        matrix: InMatrix::Cell(MatrixColumn::ServerClockJump, "sim, the server's clock jumps by the lease TTL while a client holds"),
    },
    Named {
        name: "etcd-lease-expires-while-waiting",
        help: "a waiter's lease expires (server clock jump) before its late watch message arrives (control for etcd 11456)",
        build: etcd_waiter_expiry,
        matrix: InMatrix::Cell(MatrixColumn::ServerClockJump, "sim, a waiter's lease expires (server clock jump) before its late watch event"),
    },
    Named {
        name: "etcd-lease-expires-while-waiting-11456",
        help: "the same with etcd 11456's waiter, which does not check its own key after the wait",
        build: etcd_waiter_expiry_11456,
        matrix: InMatrix::ClientBug("etcd-io/etcd#11456 (a waiter whose lease expired takes the lock without reading its own key), etcd mutex"),
    },
    Named {
        name: "etcd-shared-session-10756",
        help: "3 clients locking through one shared session, etcd-io/etcd#10756's misuse: the same key for all, each holds (control: etcd-contention)",
        build: etcd_shared_session_10756,
        matrix: InMatrix::ClientBug("etcd-io/etcd#10756 (acquisitions sharing one session, so one lease and one key), etcd mutex"),
    },
    Named {
        name: "etcd-server-restart",
        help: "the server restarts (its data on disk) for 300 ms right after a client acquired (control)",
        build: etcd_restart,
        matrix: InMatrix::Cell(MatrixColumn::Restart, "sim, the server restarts (data on disk) for 300 ms right after an acquire"),
    },
];
