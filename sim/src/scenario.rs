//! Named scenarios and their fault plans.
//!
//! A run is determined by (scenario, seed, algorithm, options): the plan's parameters come from
//! a ChaCha generator seeded with the seed, and everything random inside the run (latencies,
//! coordinator choices, backoff draws, critical-section lengths) from madsim's generator with the
//! same seed. The plan is printed before a run, so a failing seed shows what was done to it.

use std::time::Duration;

use cassalock::algo::Fixes;
use cassalock::driver::{Algorithm, Settings, TimeSource};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::clock::ClockSpec;
use crate::cluster::{ClusterConfig, Consistency};
use crate::config::LongRunSettings;
pub use crate::config::{ClientMode, Fault, FaultKind, LockOrder, LongHold, RunConfig, LOCK};
use crate::knobs::{check_run, KnobError, Knobs};

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
#[derive(Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub setup: &'static str,
    pub expected: &'static str,
}

pub const SCENARIOS: [Scenario; 12] = [
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
        name: "rows-deleted",
        setup: "2 clients x 2 acquisitions, holds of 35-45 s; 2-8 s in, an operator deletes the lock's rows on every replica (no clock skew, no expiry)",
        expected: "the holder's renewal finds its cell gone and it is told its lease is lost (C-lost); the waiter may take the lock before that, so T1-belief can break; with --m2 the renewal writes the cell back, and a holder that took the lock meanwhile is never told (C-lost)",
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

/// A scenario a row lock's scenario file adds (`lock = "queue"`, a `[[scenario]]` table with a
/// `base`): a built-in scenario's plan under the file's name, for the file's lock's algorithm
/// only. Its knobs are the file's; they reach [`build`] in the options, as flags do.
#[derive(Clone, Debug)]
pub struct FileScenario {
    pub name: &'static str,
    pub help: &'static str,
    /// The built-in scenario whose plan it runs.
    pub base: &'static Scenario,
    /// The algorithm of the file's lock.
    pub algorithm: Algorithm,
}

/// The row scenarios added from a scenario file at run time: the file's path and its scenarios.
static FROM_FILE: std::sync::OnceLock<(String, Vec<FileScenario>)> = std::sync::OnceLock::new();

/// Why a file's row scenarios could not be added.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddFileError {
    #[error("{file}: scenarios were read from {first} already; give one --scenario-file")]
    SecondFile { file: String, first: String },
    #[error("{file}: scenario {scenario:?} takes the name of a built-in scenario; name it otherwise")]
    BuiltInName { file: String, scenario: String },
    #[error("{file}: scenario {scenario:?}: base {base:?} does not run the {algorithm} algorithm ({why}); give another base")]
    BaseNotForAlgorithm {
        file: String,
        scenario: String,
        base: &'static str,
        algorithm: &'static str,
        why: &'static str,
    },
}

/// Add a row lock's scenario file's scenarios, so [`build`], [`algorithms_for`] and
/// [`file_scenario`] know them. Adding the same file again is a no-op; a second file is refused.
pub fn add_file_scenarios(file: &str, scenarios: Vec<FileScenario>) -> Result<(), AddFileError> {
    if let Some((first, _)) = FROM_FILE.get() {
        return match first == file {
            true => Ok(()),
            false => Err(AddFileError::SecondFile {
                file: file.to_owned(),
                first: first.clone(),
            }),
        };
    }
    for added in &scenarios {
        if scenario(added.name).is_some() {
            return Err(AddFileError::BuiltInName {
                file: file.to_owned(),
                scenario: added.name.to_owned(),
            });
        }
        if !algorithms_for(added.base.name).contains(&added.algorithm) {
            return Err(AddFileError::BaseNotForAlgorithm {
                file: file.to_owned(),
                scenario: added.name.to_owned(),
                base: added.base.name,
                algorithm: added.algorithm.name(),
                why: NOT_FOR_OLD,
            });
        }
    }
    FROM_FILE
        .set((file.to_owned(), scenarios))
        .map_err(|(file, _)| AddFileError::SecondFile {
            file,
            first: FROM_FILE.get().map(|(first, _)| first.clone()).unwrap_or_default(),
        })
}

/// The row scenario `name` a scenario file added, if one did.
pub fn file_scenario(name: &str) -> Option<&'static FileScenario> {
    FROM_FILE.get()?.1.iter().find(|added| added.name == name)
}

/// Why the old lock cannot run the one scenario it does not test.
const NOT_FOR_OLD: &str = "the old lock never reads the time service, whose stall this scenario measures (S1)";

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

fn s(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

/// A scenario name that is not in [`SCENARIOS`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown scenario {name:?}; the row locks' scenarios are {}; `cassalock sim --scenario list` lists the other locks' too, a lock's name stands for all of its, and `all` for every one", known_names())]
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
    /// The scenario tests something this algorithm never does.
    #[error("--algorithm {algorithm}: {why}; run --algorithm {instead}")]
    NotForAlgorithm {
        algorithm: &'static str,
        why: &'static str,
        instead: &'static str,
    },
    /// A knob, alone or with the scenario's values, breaks a rule.
    #[error(transparent)]
    Knob(#[from] KnobError),
}

/// Build the run for `scenario` from `seed`, with the knobs of `options` applied and checked.
pub fn build(name: &str, seed: u64, algorithm: Algorithm, options: &SimOptions) -> Result<RunConfig, BuildError> {
    let (label, found) = match (scenario(name), file_scenario(name)) {
        (Some(found), _) => (found.name, found),
        (None, Some(added)) => (added.name, added.base),
        (None, None) => return Err(UnknownScenario { name: name.to_owned() }.into()),
    };
    if !algorithms_for(label).contains(&algorithm) {
        let instead = if algorithm == Algorithm::Old {
            Algorithm::Queue
        } else {
            Algorithm::Old
        };
        return Err(BuildError::NotForAlgorithm {
            algorithm: algorithm.name(),
            why: match file_scenario(label) {
                Some(_) => "the scenario file's lock runs the other algorithm",
                None => NOT_FOR_OLD,
            },
            instead: instead.name(),
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5EED_CA55);
    let mut config = base_config(label, algorithm, options);
    options.knobs.check(config.max_sim)?;
    options.knobs.apply_timing(&mut config);
    plan(found.name, &mut config, options, &mut rng);
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

/// Every scenario's starting point: the library's default settings, three clients taking one
/// lock five times, no faults; the options that are not knobs applied.
fn base_config(scenario: &'static str, algorithm: Algorithm, options: &SimOptions) -> RunConfig {
    let defaults = Settings::new("sim");
    RunConfig {
        scenario,
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
    }
}

/// The scenario's own workload and fault plan, on top of the base and the timing knobs.
fn plan(name: &str, config: &mut RunConfig, options: &SimOptions, rng: &mut ChaCha8Rng) {
    let ttl = s(u64::from(config.ttl_s));
    match name {
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
        "pause-at-rewrite" => pause_at_rewrite(config, ttl),
        "rows-deleted" => {
            // Holds longer than the TTL, so a holder not told goes on believing well past
            // C-lost's bound.
            config.clients = 2;
            config.acquisitions = 2;
            config.hold_ms = (35_000, 45_000);
            config.faults.push(Fault {
                at: s(rng.gen_range(2..8)),
                kind: FaultKind::DeleteLockRows,
            });
        }
        "cl-one" => cl_one(config, rng),
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
        "timeservice-stall" => timeservice_stall(config),
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
        "swarm" => swarm(config, rng),
        other => unreachable!("scenario {other} is listed but not built"),
    }
}

/// pause-at-rewrite: two clients, long holds, and a pause between renewal's check and its rewrite.
fn pause_at_rewrite(config: &mut RunConfig, ttl: Duration) {
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

/// cl-one: consistency ONE, and one replica briefly unreachable, twice.
fn cl_one(config: &mut RunConfig, rng: &mut ChaCha8Rng) {
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

/// The algorithms a scenario tests: both, but for timeservice-stall, whose time service only
/// the queue lock reads (its columns' times), and a scenario file's, which its lock's runs.
pub fn algorithms_for(name: &str) -> &'static [Algorithm] {
    if let Some(added) = file_scenario(name) {
        return std::slice::from_ref(&added.algorithm);
    }
    match name {
        "timeservice-stall" => &[Algorithm::Queue],
        _ => &[Algorithm::Old, Algorithm::Queue],
    }
}

/// timeservice-stall: clients read GlobalTime; a time-service replica 20 s ahead is killed.
fn timeservice_stall(config: &mut RunConfig) {
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
            ..ClockSpec::default()
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
            ..ClockSpec::default()
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
