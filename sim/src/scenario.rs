//! Named scenarios and their fault plans.
//!
//! A run is determined by (scenario, seed, algorithm, options): the plan's parameters come from
//! a ChaCha generator seeded with the seed, and everything random inside the run (latencies,
//! coordinator choices, backoff draws, critical-section lengths) from madsim's generator with the
//! same seed. The plan is printed before a run, so a failing seed shows what was done to it.

use std::fmt;
use std::time::Duration;

use cassalock::algo::{Fixes, RetryPolicy};
use cassalock::driver::{Algorithm, Settings, TimeSource};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::clock::ClockSpec;
use crate::cluster::{ClusterConfig, Consistency};
use crate::knobs::{check_run, KnobError, Knobs, LockOrder, LongHold};

/// The lock every client contends for (with `--locks N`, N > 1: `shared-0` .. `shared-{N-1}`).
pub const LOCK: &str = "shared";

/// Faults the injector applies. "Holder" faults hit whichever client holds the lock when they
/// fire (waiting up to 10 s for one).
#[derive(Clone, Debug, PartialEq)]
pub enum FaultKind {
    PauseHolder {
        for_: Duration,
    },
    PauseClient {
        client: usize,
        for_: Duration,
    },
    KillHolder,
    KillClient {
        client: usize,
    },
    RestartClient {
        client: usize,
    },
    /// Clog every link between the holder and every replica, both ways.
    CutOffHolder {
        for_: Duration,
    },
    CutOffClient {
        client: usize,
        for_: Duration,
    },
    KillReplica {
        replica: usize,
    },
    RestartReplica {
        replica: usize,
    },
    PauseReplica {
        replica: usize,
        for_: Duration,
    },
    IsolateReplica {
        replica: usize,
        for_: Duration,
    },
    /// Every message is lost with this probability.
    Loss {
        rate_percent: u32,
        for_: Duration,
    },
    KillTimeReplica {
        replica: usize,
    },
}

impl FaultKind {
    /// Every kind's name, in a fixed order (for tallies by kind).
    pub const NAMES: [&'static str; 13] = [
        "pause-holder",
        "pause-client",
        "kill-holder",
        "kill-client",
        "restart-client",
        "cut-off-holder",
        "cut-off-client",
        "kill-replica",
        "restart-replica",
        "pause-replica",
        "isolate-replica",
        "loss",
        "kill-time-replica",
    ];

    /// This kind's index in [`FaultKind::NAMES`].
    pub fn index(&self) -> usize {
        match self {
            FaultKind::PauseHolder { .. } => 0,
            FaultKind::PauseClient { .. } => 1,
            FaultKind::KillHolder => 2,
            FaultKind::KillClient { .. } => 3,
            FaultKind::RestartClient { .. } => 4,
            FaultKind::CutOffHolder { .. } => 5,
            FaultKind::CutOffClient { .. } => 6,
            FaultKind::KillReplica { .. } => 7,
            FaultKind::RestartReplica { .. } => 8,
            FaultKind::PauseReplica { .. } => 9,
            FaultKind::IsolateReplica { .. } => 10,
            FaultKind::Loss { .. } => 11,
            FaultKind::KillTimeReplica { .. } => 12,
        }
    }

    pub fn name(&self) -> &'static str {
        Self::NAMES[self.index()]
    }
}

/// A fault at a simulated time.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub at: Duration,
    pub kind: FaultKind,
}

/// How clients take the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientMode {
    /// `lock()`: GetLock, wait until held.
    GetLock,
    /// `try_lock()`: TryGetLock; on "no", think and try again.
    TryGetLock,
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub scenario: &'static str,
    pub algorithm: Algorithm,
    pub mode: ClientMode,
    pub clients: usize,
    pub acquisitions: u32,
    /// Locks one acquisition takes (1: [`LOCK`]).
    pub locks: usize,
    pub lock_order: LockOrder,
    pub cluster: ClusterConfig,
    pub ttl_s: u32,
    pub renew_every_ms: u64,
    pub poll_ms: u64,
    /// The queue lock's next-in-line poll (`None`: every waiter at `poll_ms`).
    pub next_poll_ms: Option<u64>,
    /// With `next_poll_ms`: waiters sleep by rank and the queue's pace (`Settings::paced_poll`).
    pub paced_poll: bool,
    /// Each client's acquisitions reuse thread ids (`Settings::reuse_thread_ids`).
    pub reuse_thread_ids: bool,
    /// The queue lock reads the queue from its last hold's column
    /// (`Settings::queue_read_from_last_hold`).
    pub queue_read_from_last_hold: bool,
    /// Critical section length, uniform in this range.
    pub hold_ms: (u64, u64),
    /// A mix of long operations: some holds are drawn from another range (`None`: none).
    pub long_hold: Option<LongHold>,
    /// The library's acquisition deadline (`None`: wait for ever).
    pub max_wait_ms: Option<u64>,
    /// The library's retry policy for failed store requests.
    pub retry: RetryPolicy,
    /// Pause between a release and the next acquisition.
    pub think_ms: (u64, u64),
    pub time_source: TimeSource,
    /// Replicas of the time service (0: none).
    pub time_replicas: usize,
    pub k3: bool,
    /// Mutant M2: renewal rewrites without checking the holder's main cell is still there.
    pub m2: bool,
    /// Mutant M3: release stamps its deletes at the lease's start.
    pub m3: bool,
    /// Mutant M4: renewal trusts a rewrite whose reply comes after the cells may have expired.
    pub m4: bool,
    /// `pause-at-rewrite`: the first client whose renewal sends a rewrite is paused this long
    /// right then, after renewal's check and before the write leaves (a step, not a time,
    /// triggers it: `Recorder::arm_step_pause`).
    pub pause_at_renewal_rewrite: Option<Duration>,
    /// Our fixes to the listings (`Fixes::THESIS`: the listings as written).
    pub fixes: Fixes,
    pub fencing: bool,
    /// Holders look at `guard.is_lost()` during their critical section and abandon it. Off in
    /// `pause`: a pause can strike between that check and the write, so the worst case is a
    /// write right after the pause.
    pub lease_aware: bool,
    pub replica_clocks: Vec<ClockSpec>,
    pub client_clocks: Vec<ClockSpec>,
    pub time_replica_clocks: Vec<ClockSpec>,
    pub faults: Vec<Fault>,
    /// Stop the run after this much simulated time, finished or not.
    pub max_sim: Duration,
    /// Ignore `acquisitions`: every client keeps acquiring until `max_sim` (throughput runs).
    pub open_ended: bool,
}

/// Knobs a user may set on the command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimOptions {
    /// skew: the offset of replica r0's clock, in seconds (default: drawn from the seed in 0..=2·TTL).
    pub offset_s: Option<f64>,
    /// renew-race: release without waiting for renewal (mutant K3).
    pub k3: bool,
    /// The resource refuses stale tokens (default on).
    pub no_fencing: bool,
    /// Restarted replicas lose writes since the last commit-log sync.
    pub lose_unsynced: bool,
    /// Override the scenario's consistency level (cl-one at QUORUM is the control run).
    pub consistency: Option<Consistency>,
    /// Clients use TryGetLock (and try again after a "no") instead of GetLock.
    pub try_lock: bool,
    /// Run the thesis's listings as written, without our fixes.
    pub thesis_listings: bool,
    /// Mutant M2 (any scenario): renewal rewrites without checking it still holds.
    pub m2: bool,
    /// Mutant M3 (any scenario): release stamps its deletes at the lease's start.
    pub m3: bool,
    /// Mutant M4 (any scenario): renewal trusts a rewrite whose reply comes after the cells
    /// may have expired (the library before 2026-11-28).
    pub m4: bool,
    /// Timing, workload, store-fault and clock knobs that override the scenario's values
    /// (boxed: they are large, and options travel by value in the report's tables).
    pub knobs: Box<Knobs>,
}

/// A named scenario.
pub struct Scenario {
    pub name: &'static str,
    pub setup: &'static str,
    pub expected: &'static str,
}

pub const SCENARIOS: [Scenario; 11] = [
    Scenario {
        name: "contention",
        setup: "5 clients x 20 acquisitions, QUORUM, no faults",
        expected: "never fails",
    },
    Scenario {
        name: "skew",
        setup: "replica r0's clock ahead by an offset in 0..=2 TTL (drawn from the seed, or --offset-s)",
        expected: "small offsets: no failure; large offsets: T1 broken (S2)",
    },
    Scenario {
        name: "pause",
        setup: "the holder pauses for TTL + 10 s (K1); fencing on",
        expected: "T1-belief violations; no resource damage",
    },
    Scenario {
        name: "pause-at-rewrite",
        setup: "2 clients x 2 acquisitions, holds of 85-95 s; the first holder to renew pauses right after renewal's check, before its rewrite leaves, for TTL - renewal interval + 5 s, 20 s by default (it resumes after its cells expired, within a TTL of the check); fencing on",
        expected: "T1-belief violations (K1); the late rewrite lands after another client took the lock, and the holder is told its lease is lost and stays told (C-lost; with --m4 is_lost() turns true at the resume, then false again for the rest of the hold)",
    },
    Scenario {
        name: "cl-one",
        setup: "5 clients x 20 acquisitions at consistency ONE (K2), one replica briefly unreachable twice",
        expected: "T1 violations (none with --consistency quorum)",
    },
    Scenario {
        name: "partition",
        setup: "the holder is cut off from every replica for TTL + 15 s, then healed",
        expected: "its lease expires, another client acquires, it learns it lost the lock; live after the heal",
    },
    Scenario {
        name: "crash-holder",
        setup: "the holder's process is killed",
        expected: "the lock frees after the TTL",
    },
    Scenario {
        name: "renew-race",
        setup: "TTL 4 s, renewal every 2 s, holds that span renewals; --k3 releases without waiting",
        expected: "K3: lock stuck until the TTL, found; default: never",
    },
    Scenario {
        name: "timeservice-stall",
        setup: "3 time-service replicas, ts0 20 s ahead, killed at 10 s; clients read GlobalTime",
        expected: "GlobalTime stalls for about 20 s (S1)",
    },
    Scenario {
        name: "loss",
        setup: "20% of all messages lost for 40 s",
        expected: "timeouts and retries; T1 kept; everyone finishes after the loss ends",
    },
    Scenario {
        name: "swarm",
        setup: "clients, faults, clock offsets, drift and jumps all drawn from the seed",
        expected: "no resource damage while tokens increase; anomalies reported",
    },
];

pub fn scenario(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

fn s(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

/// A scenario name that is not in [`SCENARIOS`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown scenario {name:?}; the row locks' scenarios are {}, and `cassalock sim --scenario list` lists the other families' too", known_names())]
pub struct UnknownScenario {
    pub name: String,
}

fn known_names() -> String {
    SCENARIOS.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

/// Why a run could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    UnknownScenario(#[from] UnknownScenario),
    /// A knob, alone or with the scenario's values, breaks a rule.
    #[error(transparent)]
    Knob(#[from] KnobError),
}

/// The library's two long-run settings, where a run starts before its knobs are applied.
struct LongRunSettings {
    reuse_thread_ids: bool,
    queue_read_from_last_hold: bool,
}

impl LongRunSettings {
    /// The library's defaults; off where the listings run as written (`thesis_listings`),
    /// which give every acquisition a new id and read the queue from the row's start.
    fn start(thesis_listings: bool) -> Self {
        let defaults = Settings::new("sim");
        LongRunSettings {
            reuse_thread_ids: defaults.reuse_thread_ids && !thesis_listings,
            queue_read_from_last_hold: defaults.queue_read_from_last_hold && !thesis_listings,
        }
    }
}

/// Build the run for `scenario` from `seed`, with the knobs of `options` applied and checked.
pub fn build(name: &str, seed: u64, algorithm: Algorithm, options: &SimOptions) -> Result<RunConfig, BuildError> {
    let Some(found) = scenario(name) else {
        return Err(UnknownScenario { name: name.to_owned() }.into());
    };
    let defaults = Settings::new("sim");
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5EED_CA55);
    let mut config = RunConfig {
        scenario: found.name,
        algorithm,
        mode: ClientMode::GetLock,
        clients: 3,
        acquisitions: 5,
        locks: 1,
        lock_order: LockOrder::Fixed,
        cluster: ClusterConfig {
            lose_unsynced: options.lose_unsynced,
            ..ClusterConfig::default()
        },
        ttl_s: defaults.ttl_s,
        renew_every_ms: defaults.renew_every_ms,
        poll_ms: defaults.poll_ms,
        next_poll_ms: None,
        paced_poll: false,
        reuse_thread_ids: LongRunSettings::start(options.thesis_listings).reuse_thread_ids,
        queue_read_from_last_hold: LongRunSettings::start(options.thesis_listings).queue_read_from_last_hold,
        hold_ms: (100, 2000),
        long_hold: None,
        max_wait_ms: defaults.max_wait_ms,
        retry: defaults.retry,
        think_ms: (0, 500),
        time_source: TimeSource::Local,
        time_replicas: 0,
        k3: false,
        m2: options.m2,
        m3: options.m3,
        m4: options.m4,
        pause_at_renewal_rewrite: None,
        fixes: if options.thesis_listings {
            Fixes::THESIS
        } else {
            Fixes::ALL
        },
        fencing: !options.no_fencing,
        lease_aware: true,
        replica_clocks: Vec::new(),
        client_clocks: Vec::new(),
        time_replica_clocks: Vec::new(),
        faults: Vec::new(),
        max_sim: s(900),
        open_ended: false,
    };
    options.knobs.check(config.max_sim)?;
    options.knobs.apply_timing(&mut config);
    let ttl = s(u64::from(config.ttl_s));
    match found.name {
        "contention" => {
            config.clients = 5;
            config.acquisitions = 20;
            config.hold_ms = (0, 20);
            config.think_ms = (0, 20);
        }
        "skew" => {
            let offset_s = match options.offset_s {
                Some(offset) => offset,
                None => rng.gen_range(0..=2 * u64::from(config.ttl_s)) as f64,
            };
            config.replica_clocks = vec![ClockSpec {
                offset_us: (offset_s * 1e6) as i64,
                ..ClockSpec::default()
            }];
            config.acquisitions = 8;
            config.hold_ms = (500, 20_000);
        }
        "pause" => {
            config.hold_ms = (500, 3000);
            config.lease_aware = false;
            config.faults.push(Fault {
                at: s(rng.gen_range(2..8)),
                kind: FaultKind::PauseHolder { for_: ttl + s(10) },
            });
        }
        "pause-at-rewrite" => {
            // The first rewrite is decided a renewal interval into the first hold. Paused
            // for TTL - interval + 5 s (20 s at the defaults, TTL 30 s and every 15 s), the
            // holder resumes 5 s after its cells expired (another client has taken the lock
            // meanwhile) but, for intervals above 5 s, within a TTL of the rewrite's start:
            // the window where the renewal that trusted a late rewrite (M4) counted its lease
            // from that start and went on renewing the resurrected cells. A longer pause
            // would take it past that start's TTL too, where even M4 notices. Holds long
            // enough that a holder not told goes on believing well past C-lost's bound after
            // it resumes. (Derived from the interval, so a `--renew-every-ms` knob moves the
            // pause with it.)
            config.clients = 2;
            config.acquisitions = 2;
            config.hold_ms = (85_000, 95_000);
            config.lease_aware = false;
            let interval = Duration::from_millis(config.renew_every_ms);
            config.pause_at_renewal_rewrite = Some(ttl.saturating_sub(interval) + s(5));
        }
        "cl-one" => {
            // At ONE, replicas that merely lag by a network hop converge faster than a lock
            // step; what bites is a replica that *missed* writes, because nothing repairs it
            // (read repair touches only the one replica that answered). So one replica is
            // briefly unreachable, twice. At QUORUM the same plan is harmless.
            config.cluster.consistency = Consistency::One;
            config.clients = 5;
            config.acquisitions = 20;
            // Holds long enough that a holder which acquired while the replica was away still
            // holds when it returns, missing that holder's cells: a stale replica that only
            // shows ghosts of released holders makes threads back off, the safe direction.
            config.hold_ms = (0, 5000);
            config.think_ms = (0, 200);
            let replica = rng.gen_range(0..config.cluster.replicas);
            for window in 0..2u64 {
                config.faults.push(Fault {
                    at: s(2 + 15 * window + rng.gen_range(0..5)),
                    kind: FaultKind::IsolateReplica {
                        replica,
                        for_: s(rng.gen_range(3..=8)),
                    },
                });
            }
        }
        "partition" => {
            // Holds longer than the TTL, so the cut-off holder is still inside when its lease
            // runs out and must learn it.
            config.acquisitions = 3;
            config.hold_ms = (35_000, 45_000);
            config.faults.push(Fault {
                at: s(rng.gen_range(2..8)),
                kind: FaultKind::CutOffHolder { for_: ttl + s(15) },
            });
        }
        "crash-holder" => {
            config.faults.push(Fault {
                at: s(rng.gen_range(2..8)),
                kind: FaultKind::KillHolder,
            });
        }
        "renew-race" => {
            config.ttl_s = 4;
            config.renew_every_ms = 2000;
            config.acquisitions = 15;
            config.hold_ms = (1000, 6000);
            config.think_ms = (0, 200);
            config.k3 = options.k3;
        }
        "timeservice-stall" => {
            config.time_source = TimeSource::Global;
            config.time_replicas = 3;
            config.time_replica_clocks = vec![ClockSpec {
                offset_us: 20_000_000,
                ..ClockSpec::default()
            }];
            // Enough work to outlast the 20 s stall that follows the kill.
            config.acquisitions = 15;
            config.hold_ms = (500, 3000);
            config.faults.push(Fault {
                at: s(10),
                kind: FaultKind::KillTimeReplica { replica: 0 },
            });
        }
        "loss" => {
            config.acquisitions = 8;
            config.faults.push(Fault {
                at: s(rng.gen_range(2..8)),
                kind: FaultKind::Loss {
                    rate_percent: 20,
                    for_: s(40),
                },
            });
        }
        "swarm" => swarm(&mut config, &mut rng),
        other => unreachable!("scenario {other} is listed but not built"),
    }
    if let Some(consistency) = options.consistency {
        config.cluster.consistency = consistency;
    }
    if options.try_lock {
        config.mode = ClientMode::TryGetLock;
    }
    options.knobs.apply(&mut config, &mut rng);
    check_run(&config, &options.knobs)?;
    config.cluster.gc_grace = ClusterConfig::gc_grace_for_ttl(config.ttl_s);
    config.faults.sort_by_key(|f| f.at);
    Ok(config)
}

/// VOPR-style: the whole plan from the seed.
fn swarm(config: &mut RunConfig, rng: &mut ChaCha8Rng) {
    config.clients = rng.gen_range(2..=5);
    config.acquisitions = rng.gen_range(3..=10);
    config.hold_ms = (0, rng.gen_range(10..=5000));
    config.think_ms = (0, rng.gen_range(0..=1000));
    let ttl_s = u64::from(config.ttl_s);
    for _ in 0..config.cluster.replicas {
        let big = rng.gen_bool(0.15);
        let offset_s = if big {
            rng.gen_range(0..=2 * ttl_s) as i64
        } else {
            rng.gen_range(-2..=2)
        };
        let jumps = if rng.gen_bool(0.2) {
            vec![(rng.gen_range(1_000..60_000), rng.gen_range(-5_000_000..=5_000_000))]
        } else {
            Vec::new()
        };
        config.replica_clocks.push(ClockSpec {
            offset_us: offset_s * 1_000_000 * if rng.gen_bool(0.5) { 1 } else { -1 },
            drift_ppm: rng.gen_range(-200..=200),
            jumps,
            error_us: 0,
        });
    }
    for _ in 0..config.clients {
        config.client_clocks.push(ClockSpec {
            offset_us: rng.gen_range(-3_000_000..=3_000_000),
            drift_ppm: rng.gen_range(-500..=500),
            jumps: if rng.gen_bool(0.1) {
                vec![(rng.gen_range(1_000..60_000), rng.gen_range(-2_000_000..=2_000_000))]
            } else {
                Vec::new()
            },
            error_us: 0,
        });
    }
    let count = rng.gen_range(0..=6);
    for _ in 0..count {
        let at = ms(rng.gen_range(500..60_000));
        let for_ = ms(rng.gen_range(100..=(2 * ttl_s * 1000)));
        let replica = rng.gen_range(0..config.cluster.replicas);
        let client = rng.gen_range(0..config.clients);
        let kind = match rng.gen_range(0..8) {
            0 => FaultKind::PauseHolder { for_ },
            1 => FaultKind::PauseClient { client, for_ },
            2 => FaultKind::CutOffHolder { for_ },
            3 => FaultKind::IsolateReplica { replica, for_ },
            4 => FaultKind::PauseReplica { replica, for_ },
            5 => FaultKind::Loss {
                rate_percent: rng.gen_range(1..=30),
                for_,
            },
            6 => {
                config.faults.push(Fault {
                    at: at + for_,
                    kind: FaultKind::RestartReplica { replica },
                });
                FaultKind::KillReplica { replica }
            }
            _ => {
                config.faults.push(Fault {
                    at: at + for_,
                    kind: FaultKind::RestartClient { client },
                });
                FaultKind::KillClient { client }
            }
        };
        config.faults.push(Fault { at, kind });
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::PauseHolder { for_ } => write!(f, "pause the holder for {:.1} s", for_.as_secs_f64()),
            FaultKind::PauseClient { client, for_ } => {
                write!(f, "pause client c{client} for {:.1} s", for_.as_secs_f64())
            }
            FaultKind::KillHolder => write!(f, "kill the holder's process"),
            FaultKind::KillClient { client } => write!(f, "kill client c{client}"),
            FaultKind::RestartClient { client } => write!(f, "restart client c{client}"),
            FaultKind::CutOffHolder { for_ } => write!(
                f,
                "cut the holder off from every replica for {:.1} s",
                for_.as_secs_f64()
            ),
            FaultKind::CutOffClient { client, for_ } => write!(
                f,
                "cut client c{client} off from every replica for {:.1} s",
                for_.as_secs_f64()
            ),
            FaultKind::KillReplica { replica } => write!(f, "kill replica r{replica}"),
            FaultKind::RestartReplica { replica } => write!(f, "restart replica r{replica}"),
            FaultKind::PauseReplica { replica, for_ } => {
                write!(f, "pause replica r{replica} for {:.1} s", for_.as_secs_f64())
            }
            FaultKind::IsolateReplica { replica, for_ } => {
                write!(f, "isolate replica r{replica} for {:.1} s", for_.as_secs_f64())
            }
            FaultKind::Loss { rate_percent, for_ } => {
                write!(f, "lose {rate_percent}% of messages for {:.1} s", for_.as_secs_f64())
            }
            FaultKind::KillTimeReplica { replica } => write!(f, "kill time-service replica ts{replica}"),
        }
    }
}

impl RunConfig {
    /// The settings every client of this run uses (with its own client id).
    pub fn settings(&self, client_id: &str) -> Settings {
        let mut settings = Settings::new(client_id);
        settings.algorithm = self.algorithm;
        settings.ttl_s = self.ttl_s;
        settings.renew_every_ms = self.renew_every_ms;
        settings.poll_ms = self.poll_ms;
        settings.next_poll_ms = self.next_poll_ms;
        settings.paced_poll = self.paced_poll;
        settings.reuse_thread_ids = self.reuse_thread_ids;
        settings.queue_read_from_last_hold = self.queue_read_from_last_hold;
        settings.time_source = self.time_source;
        settings.max_wait_ms = self.max_wait_ms;
        settings.retry = self.retry;
        settings.mutants.k3_release_without_waiting = self.k3;
        settings.mutants.m2_renew_without_checking = self.m2;
        settings.mutants.m3_delete_stamped_at_acquisition = self.m3;
        settings.mutants.m4_trust_a_late_rewrite = self.m4;
        settings.fixes = self.fixes;
        settings
    }

    /// The machines' configuration, for the contract's bounds; `None` if the settings are
    /// invalid (every client then fails to start, which the run reports).
    pub fn lock_config(&self) -> Option<cassalock::algo::LockConfig> {
        self.settings("sim").validate().ok().map(|(_, config)| config)
    }

    /// The acquisition the clients run.
    pub fn acquire_kind(&self) -> cassalock::algo::lifecycle::AcquireKind {
        match self.mode {
            ClientMode::GetLock => self.algorithm.get_lock(),
            ClientMode::TryGetLock => self.algorithm.try_lock(),
        }
    }

    /// The plan, printed before a run.
    pub fn plan(&self) -> String {
        let mut lines = vec![format!(
            "scenario {} | {} algorithm | {} clients x {} acquisitions | CL {} x {} replicas | TTL {} s, renew every {} ms, poll {} ms | hold {}-{} ms, think {}-{} ms | time source {:?}{}{}{}{}{}{}",
            self.scenario,
            self.algorithm.name(),
            self.clients,
            self.acquisitions,
            self.cluster.consistency.name(),
            self.cluster.replicas,
            self.ttl_s,
            self.renew_every_ms,
            self.poll_ms,
            self.hold_ms.0,
            self.hold_ms.1,
            self.think_ms.0,
            self.think_ms.1,
            self.time_source,
            if self.k3 { " | MUTANT K3" } else { "" },
            if self.m2 { " | MUTANT M2" } else { "" },
            if self.m3 { " | MUTANT M3" } else { "" },
            if self.m4 { " | MUTANT M4" } else { "" },
            if self.fixes == Fixes::THESIS { " | thesis listings as written" } else { "" },
            if self.fencing { " | fencing on" } else { " | fencing OFF" },
        )];
        let clocks = |prefix: &str, specs: &[ClockSpec]| -> Vec<String> {
            specs
                .iter()
                .enumerate()
                .filter(|(_, c)| **c != ClockSpec::default())
                .map(|(i, c)| {
                    let jumps: Vec<String> = c
                        .jumps
                        .iter()
                        .map(|(at, step)| format!("{:+.3} s at {:.1} s", *step as f64 / 1e6, *at as f64 / 1e3))
                        .collect();
                    format!(
                        "  clock {prefix}{i}: offset {:+.3} s, drift {:+} ppm{}{}",
                        c.offset_us as f64 / 1e6,
                        c.drift_ppm,
                        if jumps.is_empty() {
                            String::new()
                        } else {
                            format!(", jumps {}", jumps.join(", "))
                        },
                        if c.error_us == 0 {
                            String::new()
                        } else {
                            format!(", each reading off by up to ±{} ms (uniform)", c.error_us as f64 / 1e3)
                        }
                    )
                })
                .collect()
        };
        if let Some(knobs) = self.knobs_line() {
            lines.push(knobs);
        }
        lines.extend(clocks("r", &self.replica_clocks));
        lines.extend(clocks("c", &self.client_clocks));
        lines.extend(clocks("ts", &self.time_replica_clocks));
        if let Some(for_) = self.pause_at_renewal_rewrite {
            lines.push(format!(
                "  at the first renewal rewrite any client sends: pause that client for {:.1} s, before the write leaves",
                for_.as_secs_f64()
            ));
        } else if self.faults.is_empty() {
            lines.push("  faults: none".into());
        }
        for fault in &self.faults {
            lines.push(format!("  at {:>7.3} s: {}", fault.at.as_secs_f64(), fault.kind));
        }
        lines.join("\n")
    }
}

impl RunConfig {
    /// The locks every acquisition takes, in the fixed order.
    pub fn lock_names(&self) -> Vec<String> {
        if self.locks <= 1 {
            return vec![LOCK.to_owned()];
        }
        (0..self.locks).map(|i| format!("{LOCK}-{i}")).collect()
    }

    /// What the knobs changed that the plan's first line does not show (`None`: nothing).
    fn knobs_line(&self) -> Option<String> {
        let defaults = Settings::new("sim");
        let cluster = ClusterConfig::default();
        let mut parts = Vec::new();
        if self.locks > 1 {
            parts.push(format!(
                "{} locks per acquisition, {} order",
                self.locks, self.lock_order
            ));
        }
        if let Some(long) = self.long_hold {
            parts.push(format!(
                "{}% of holds long, {}-{} ms",
                long.percent, long.hold_ms.0, long.hold_ms.1
            ));
        }
        if let Some(ms) = self.next_poll_ms {
            parts.push(format!("the next in line polls every {ms} ms"));
        }
        if self.paced_poll {
            parts.push("waiters sleep by rank and the queue's pace".to_owned());
        }
        // Say the long-run settings only where a run differs from where it starts.
        let start = LongRunSettings::start(self.fixes == Fixes::THESIS);
        if self.reuse_thread_ids != start.reuse_thread_ids {
            parts.push(if self.reuse_thread_ids {
                "thread ids reused".to_owned()
            } else {
                "a new thread id per acquisition".to_owned()
            });
        }
        if self.queue_read_from_last_hold != start.queue_read_from_last_hold {
            parts.push(if self.queue_read_from_last_hold {
                "the queue read from the last hold's column".to_owned()
            } else {
                "the queue read from the row's start".to_owned()
            });
        }
        if let Some((lo, hi)) = self.cluster.message_latency_us {
            parts.push(format!("each message {lo}..{hi} us on the network"));
        }
        if self.cluster.network != cluster.network {
            parts.push(format!("messages on the {} network", self.cluster.network));
        }
        if let Some(max_wait) = self.max_wait_ms {
            parts.push(format!("max wait {max_wait} ms"));
        }
        if self.retry != defaults.retry {
            parts.push(format!(
                "{} retries, {} ms apart",
                self.retry.max_retries, self.retry.backoff_ms
            ));
        }
        if self.cluster.client_timeout != cluster.client_timeout {
            parts.push(format!(
                "client request timeout {} ms",
                self.cluster.client_timeout.as_millis()
            ));
        }
        if self.cluster.read_timeout != cluster.read_timeout {
            parts.push(format!(
                "coordinator read timeout {} ms",
                self.cluster.read_timeout.as_millis()
            ));
        }
        if self.cluster.write_timeout != cluster.write_timeout {
            parts.push(format!(
                "coordinator write timeout {} ms",
                self.cluster.write_timeout.as_millis()
            ));
        }
        let faults = self.cluster.store_faults;
        if faults.before_apply_ppm > 0 {
            parts.push(format!(
                "{}% of store calls fail before being applied",
                f64::from(faults.before_apply_ppm) / 1e4
            ));
        }
        if faults.after_apply_ppm > 0 {
            parts.push(format!(
                "{}% of store calls applied with the reply lost",
                f64::from(faults.after_apply_ppm) / 1e4
            ));
        }
        (!parts.is_empty()).then(|| format!("  knobs: {}", parts.join(" | ")))
    }
}

/// The workload of the fairness and performance report.
#[derive(Clone, Debug, PartialEq)]
pub struct FairnessParams {
    pub algorithm: Algorithm,
    pub mode: ClientMode,
    pub threads: usize,
    /// Client clocks are offset uniformly in 0..=skew.
    pub skew_ms: u64,
    /// Queue times come from the global time service (3 replicas) instead of local clocks.
    pub global_time: bool,
    pub hold_ms: (u64, u64),
    pub think_ms: (u64, u64),
    /// Simulated time every client keeps acquiring for.
    pub duration: Duration,
}

/// An open-ended run: `threads` clients acquire (or try to) for `duration`, no faults.
pub fn fairness(params: &FairnessParams, seed: u64) -> RunConfig {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xFA1E);
    let defaults = Settings::new("sim");
    RunConfig {
        scenario: "fairness",
        algorithm: params.algorithm,
        mode: params.mode,
        clients: params.threads,
        acquisitions: u32::MAX,
        locks: 1,
        lock_order: LockOrder::Fixed,
        cluster: ClusterConfig::default(),
        ttl_s: defaults.ttl_s,
        renew_every_ms: defaults.renew_every_ms,
        poll_ms: defaults.poll_ms,
        next_poll_ms: None,
        paced_poll: false,
        reuse_thread_ids: defaults.reuse_thread_ids,
        queue_read_from_last_hold: defaults.queue_read_from_last_hold,
        hold_ms: params.hold_ms,
        long_hold: None,
        max_wait_ms: defaults.max_wait_ms,
        retry: defaults.retry,
        think_ms: params.think_ms,
        time_source: if params.global_time {
            TimeSource::Global
        } else {
            TimeSource::Local
        },
        time_replicas: if params.global_time { 3 } else { 0 },
        k3: false,
        m2: false,
        m3: false,
        m4: false,
        pause_at_renewal_rewrite: None,
        fixes: Fixes::ALL,
        fencing: true,
        lease_aware: true,
        replica_clocks: Vec::new(),
        client_clocks: (0..params.threads)
            .map(|_| ClockSpec {
                offset_us: rng.gen_range(0..=params.skew_ms * 1000) as i64,
                ..ClockSpec::default()
            })
            .collect(),
        time_replica_clocks: Vec::new(),
        faults: Vec::new(),
        max_sim: params.duration,
        open_ended: true,
    }
}
