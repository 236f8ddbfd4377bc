//! `cassalock sim` and `cassalock replay`: run the simulation over seeds, or one seed in full.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::bail;
use cassalock::driver::Algorithm;
use cassalock_judge::text::count;
use cassalock_judge::ClaimVerdict;
use cassalock_sim::cluster::Consistency;
use cassalock_sim::cluster::Network;
use cassalock_sim::config::LockOrder;
use cassalock_sim::knobs::{whole, Knobs, MsRange};
use cassalock_sim::ranges::SeedRange;
use cassalock_sim::run::{run, RunOutcome};
use cassalock_sim::scenario::{build, BuildError, FaultKind, SimOptions};
use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};
use rayon::prelude::*;

use crate::shard::{Shard, ShardOut};

/// The most seeds one `sim` call will run.
pub const MAX_SEEDS: u64 = 1_000_000;

/// Seeds run per batch: each batch's outcomes are tallied in seed order, so the tally does
/// not depend on which thread finished first, and at most a batch of outcomes is held.
const BATCH: u64 = 1024;

/// `--algorithm` of `sim`: one of the library's algorithms, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithms {
    One(Algorithm),
    /// Both, one after the other.
    Both,
}

impl Algorithms {
    pub fn algorithms(self) -> Vec<Algorithm> {
        match self {
            Algorithms::One(algorithm) => vec![algorithm],
            Algorithms::Both => Algorithm::value_variants().to_vec(),
        }
    }
}

/// The library's algorithms (their names and help), then `both`.
impl ValueEnum for Algorithms {
    fn value_variants<'a>() -> &'a [Self] {
        static VARIANTS: OnceLock<Vec<Algorithms>> = OnceLock::new();
        VARIANTS.get_or_init(|| {
            Algorithm::value_variants()
                .iter()
                .map(|&algorithm| Algorithms::One(algorithm))
                .chain([Algorithms::Both])
                .collect()
        })
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            Algorithms::One(algorithm) => algorithm.to_possible_value(),
            Algorithms::Both => Some(PossibleValue::new("both").help("Both, one after the other")),
        }
    }
}

/// Knobs shared by `sim` and `replay`. A scenario file (`--scenario-file`, TOML) sets the same
/// fields under the same names in snake_case (`scenario`, `ttl_s`, `hold_ms`, ...); a flag given
/// too overrides the file.
#[derive(Args, Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScenarioArgs {
    /// contention, skew, pause, pause-at-rewrite, cl-one, partition, crash-holder, renew-race,
    /// timeservice-stall, swarm, loss
    /// (required unless the --scenario-file names one).
    #[arg(long)]
    pub scenario: Option<String>,
    /// Read the scenario and its knobs from a TOML file (examples in scenarios/): `scenario =
    /// "loss"` and any knob below in snake_case (`fail_after_apply_percent = 10`). Unknown keys
    /// are refused; flags given too override the file.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub scenario_file: Option<PathBuf>,
    /// skew: replica r0's clock offset in seconds (default: drawn from the seed in 0..=2 TTL).
    #[arg(long, allow_hyphen_values = true)]
    pub offset_s: Option<f64>,
    /// renew-race: release without waiting for renewal (mutant K3).
    #[arg(long)]
    pub k3: bool,
    /// Mutant M2, any scenario: renewal rewrites the holder's cells without first checking that
    /// its main cell is still there, so a holder whose lease ran out never learns it (C-lost).
    #[arg(long)]
    pub m2: bool,
    /// Mutant M3, any scenario: release stamps its deletes at the lease's start instead of
    /// afresh, so a renewed cell outlives its tombstone (C-release).
    #[arg(long)]
    pub m3: bool,
    /// Mutant M4, any scenario: renewal trusts a rewrite whose reply comes after the cells may
    /// have expired (the library before 2026-11-28), so a holder paused between renewal's check
    /// and its rewrite writes its dead cells back beside the next holder's and goes on renewing
    /// them: `is_lost()` says true at the resume, then false again (C-lost; scenario
    /// pause-at-rewrite).
    #[arg(long)]
    pub m4: bool,
    /// Let the resource accept stale tokens (to see the damage fencing prevents).
    #[arg(long)]
    pub no_fencing: bool,
    /// Restarted replicas lose the writes since their last commit-log sync.
    #[arg(long)]
    pub lose_unsynced: bool,
    /// Override the scenario's consistency level.
    #[arg(long, value_enum)]
    #[serde(deserialize_with = "consistency_named")]
    pub consistency: Option<Consistency>,
    /// Clients call TryGetLock (and try again after a "no") instead of GetLock.
    #[arg(long)]
    pub try_lock: bool,
    /// Run the thesis's listings as written, without our fixes (docs/contract.md): shows the
    /// contract violations the fixes remove.
    #[arg(long)]
    pub thesis_listings: bool,

    /// TTL of the lock cells, whole seconds (library rule: 2 or more, and at least twice the renewal interval).
    #[arg(long, value_name = "S", value_parser = whole::<u32>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub ttl_s: Option<u32>,
    /// How often a holder renews its cells (library rule: at most TTL/2).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub renew_every_ms: Option<u64>,
    /// How often a waiter reads the queue head / main cell.
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub poll_ms: Option<u64>,
    /// Queue lock: the waiter next in line (second in the queue) reads the head this often
    /// instead of --poll-ms, and every waiter reads two queue cells to know (the faster
    /// handoff; default: off, every waiter at --poll-ms).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub next_poll_ms: Option<u64>,
    /// With --next-poll-ms: every waiter reads up to 32 queue cells to learn its rank and
    /// sleeps until the queue's pace says it will be next in line (no longer than it has
    /// watched the queue, at most ten --poll-ms); the
    /// one next in line halves the holder's expected time left, down to --next-poll-ms
    /// (default false).
    #[arg(long, value_name = "BOOL", help_heading = KNOBS)]
    pub paced_poll: Option<bool>,
    /// Each client's acquisitions reuse thread ids: the lowest one none of its acquisitions
    /// in flight uses, so the main and shadow rows keep a cell per client and slot instead of
    /// a tombstone per acquisition (`Settings::reuse_thread_ids`; default true,
    /// false with --thesis-listings: a new id per acquisition, as the listings do).
    #[arg(long, value_name = "BOOL", help_heading = KNOBS)]
    pub reuse_thread_ids: Option<bool>,
    /// Queue lock: GetLock reads the queue from the column of the client's last hold of the
    /// lock instead of the row's start, and from the row's start again after meeting another
    /// contender in the main row (`Settings::queue_read_from_last_hold`; default
    /// true, false with --thesis-listings: from the row's start, as the listing does).
    #[arg(long, value_name = "BOOL", help_heading = KNOBS)]
    pub queue_read_from_last_hold: Option<bool>,
    /// Give up an acquisition after this long (default: wait for ever); a give-up is a client error, retried.
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub max_wait_ms: Option<u64>,
    /// Retries of a failed store request (library default 3; at most 20).
    #[arg(long, value_name = "N", value_parser = whole::<u8>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub retries: Option<u8>,
    /// Sleep before each retry (library default 100).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub retry_backoff_ms: Option<u64>,
    /// Client side: give up waiting for the coordinator's answer after this long (default 3000).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub request_timeout_ms: Option<u64>,
    /// Coordinator: give up waiting for replicas' read answers after this long (default 2000).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub read_timeout_ms: Option<u64>,
    /// Coordinator: give up waiting for replicas' write acknowledgements after this long (default 2000).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub write_timeout_ms: Option<u64>,
    /// Number of clients (1..=64); a scenario's client faults map onto them (client c -> c mod N).
    #[arg(long, value_name = "N", value_parser = whole::<usize>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub clients: Option<usize>,
    /// Acquisitions per client (1..=10000).
    #[arg(long, value_name = "N", value_parser = whole::<u32>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub acquisitions: Option<u32>,
    /// Critical-section length, uniform in LO..HI ms (both included).
    #[arg(long, value_name = "LO..HI", allow_hyphen_values = true, help_heading = KNOBS)]
    pub hold_ms: Option<MsRange>,
    /// Pause between a release and the next acquisition, uniform in LO..HI ms.
    #[arg(long, value_name = "LO..HI", allow_hyphen_values = true, help_heading = KNOBS)]
    pub think_ms: Option<MsRange>,
    /// Long operations: a hold is drawn from this range instead, with --long-hold-percent.
    #[arg(long, value_name = "LO..HI", allow_hyphen_values = true, help_heading = KNOBS)]
    pub long_hold_ms: Option<MsRange>,
    /// How often a hold is long (0..=100), with --long-hold-ms.
    #[arg(long, value_name = "P", value_parser = number, allow_hyphen_values = true, help_heading = KNOBS)]
    pub long_hold_percent: Option<f64>,
    /// Each store call of a lock client fails before it is applied (Unavailable at once) with this probability (0..100).
    #[arg(long, value_name = "P", value_parser = number, allow_hyphen_values = true, help_heading = KNOBS)]
    pub fail_before_apply_percent: Option<f64>,
    /// Each store call of a lock client is applied but its reply is lost (the client times out) with this probability (0..100).
    #[arg(long, value_name = "P", value_parser = number, allow_hyphen_values = true, help_heading = KNOBS)]
    pub fail_after_apply_percent: Option<f64>,
    /// Every clock reading of a client is off by an error uniform in ±D ms, drawn per reading.
    #[arg(long, value_name = "D", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub clock_error_ms: Option<u64>,
    /// One node's clock (a client or a replica, drawn from the seed) steps back S seconds at a time in 1..15 s drawn from the seed.
    #[arg(long, value_name = "S", value_parser = number, allow_hyphen_values = true, help_heading = KNOBS)]
    pub backward_jump_s: Option<f64>,
    /// Locks per acquisition (1..=16): each client takes shared-0 .. shared-{N-1}, holds them all,
    /// releases them last first; every claim is judged per lock (C-release is not judged then).
    #[arg(long, value_name = "N", value_parser = whole::<usize>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub locks: Option<usize>,
    /// The order a client takes its locks in: fixed (the same for all) or random (drawn per
    /// acquisition; GetLock clients can then deadlock until --max-wait-ms or the time limit).
    #[arg(long, value_name = "fixed|random", help_heading = KNOBS)]
    pub lock_order: Option<LockOrder>,
    /// One message's latency on the simulated network, uniform in LO..HI microseconds (default:
    /// madsim's 1000..10000). To compare with a real cluster, give what its round trips measure.
    #[arg(long, value_name = "LO..HI", allow_hyphen_values = true, help_heading = KNOBS)]
    pub message_latency_us: Option<MsRange>,
    /// Which network carries the cluster's messages: queues (the default: a delivery queue per
    /// node) or madsim (its endpoints and RPC: the same latencies and faults, about
    /// 2x slower; what seeds recorded before 2026-11-27 ran on). A seed gives a different run
    /// on each.
    #[arg(long, value_name = "madsim|queues", help_heading = KNOBS)]
    pub network: Option<Network>,
}

/// The help heading of the knobs.
const KNOBS: &str = "Knobs (each overrides the scenario's value)";

/// A decimal number for a knob: finite.
fn number(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        _ => Err(format!("{text:?} is not a finite decimal number")),
    }
}

/// `consistency = "quorum"` in a scenario file: the flag's names.
fn consistency_named<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Consistency>, D::Error> {
    let name = <String as serde::Deserialize>::deserialize(deserializer)?;
    Consistency::from_str(&name, true)
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("unknown consistency {name:?}; use one, quorum or all")))
}

/// The knobs, listed once: the file's fallback, the library's [`Knobs`], the printed flags.
macro_rules! knob_fields {
    ($($name:ident),* $(,)?) => {
        impl ScenarioArgs {
            /// Each knob's snake_case name and value as given here (`None`: not given).
            fn knob_values(&self) -> Vec<(&'static str, Option<String>)> {
                vec![$((stringify!($name), self.$name.as_ref().map(ToString::to_string))),*]
            }

            fn knobs(&self) -> Knobs {
                Knobs { $($name: self.$name.clone()),* }
            }

            /// Take each knob not given here from `file`.
            fn fill_knobs_from(&mut self, file: &ScenarioArgs) {
                $(if self.$name.is_none() { self.$name = file.$name.clone(); })*
            }
        }
    };
}

knob_fields!(
    ttl_s,
    renew_every_ms,
    poll_ms,
    max_wait_ms,
    retries,
    retry_backoff_ms,
    request_timeout_ms,
    read_timeout_ms,
    write_timeout_ms,
    clients,
    acquisitions,
    hold_ms,
    think_ms,
    long_hold_ms,
    long_hold_percent,
    fail_before_apply_percent,
    fail_after_apply_percent,
    clock_error_ms,
    backward_jump_s,
    locks,
    lock_order,
    message_latency_us,
    network,
    next_poll_ms,
    paced_poll,
    reuse_thread_ids,
    queue_read_from_last_hold,
);

/// A scenario with its options, from the flags and the scenario file.
#[derive(Debug)]
pub struct Resolved {
    pub scenario: String,
    pub options: SimOptions,
}

impl ScenarioArgs {
    /// Read the scenario file, if any, and lay the flags over it.
    fn merged(&self) -> anyhow::Result<ScenarioArgs> {
        let Some(path) = &self.scenario_file else {
            return Ok(self.clone());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|error| anyhow::anyhow!("--scenario-file {}: cannot read it: {error}", path.display()))?;
        let file: ScenarioArgs = toml::from_str(&text)
            .map_err(|error| anyhow::anyhow!("--scenario-file {}: {}", path.display(), error.to_string().trim_end()))?;
        let mut merged = self.clone();
        merged.scenario = self.scenario.clone().or(file.scenario.clone());
        merged.offset_s = self.offset_s.or(file.offset_s);
        merged.consistency = self.consistency.or(file.consistency);
        merged.k3 |= file.k3;
        merged.m2 |= file.m2;
        merged.m3 |= file.m3;
        merged.m4 |= file.m4;
        merged.no_fencing |= file.no_fencing;
        merged.lose_unsynced |= file.lose_unsynced;
        merged.try_lock |= file.try_lock;
        merged.thesis_listings |= file.thesis_listings;
        merged.fill_knobs_from(&file);
        Ok(merged)
    }

    /// The scenario and its options: the file (if any) with the flags over it, checked as far as
    /// it can be without building the run ([`build`] checks the rest).
    pub fn resolve(&self) -> anyhow::Result<Resolved> {
        let merged = self.merged()?;
        let Some(scenario) = merged.scenario.clone() else {
            bail!("give --scenario NAME, or a --scenario-file that sets scenario = \"NAME\"");
        };
        if let Some(offset) = merged.offset_s {
            if !offset.is_finite() || offset.abs() > 86_400.0 {
                bail!("--offset-s {offset}: give an offset within one day (in seconds)");
            }
            if scenario != "skew" {
                bail!("--offset-s applies to the skew scenario only");
            }
        }
        if merged.k3 && scenario != "renew-race" {
            bail!("--k3 applies to the renew-race scenario only");
        }
        Ok(Resolved {
            scenario,
            options: SimOptions {
                offset_s: merged.offset_s,
                k3: merged.k3,
                m2: merged.m2,
                m3: merged.m3,
                m4: merged.m4,
                no_fencing: merged.no_fencing,
                lose_unsynced: merged.lose_unsynced,
                consistency: merged.consistency,
                try_lock: merged.try_lock,
                thesis_listings: merged.thesis_listings,
                knobs: Box::new(merged.knobs()),
            },
        })
    }

    /// A refused knob in the user's terms: the flag if it was given as one, else the file's key.
    pub fn explain(&self, error: &BuildError) -> String {
        let BuildError::Knob(knob) = error else {
            return error.to_string();
        };
        let given_as_flag = self
            .knob_values()
            .iter()
            .any(|(name, value)| *name == knob.knob && value.is_some());
        match &self.scenario_file {
            Some(path) if !given_as_flag => format!(
                "--scenario-file {}: {} = {}: {}",
                path.display(),
                knob.knob,
                knob.value,
                knob.rule
            ),
            _ => format!("--{} {}: {}", knob.knob.replace('_', "-"), knob.value, knob.rule),
        }
    }

    /// The flags that reproduce these options, for printed commands: the scenario file, then
    /// every flag given (the file's values come from the file).
    pub fn flags(&self) -> String {
        let mut flags = String::new();
        if let Some(path) = &self.scenario_file {
            flags.push_str(&format!(" --scenario-file {}", shell_word(&path.display().to_string())));
        }
        if let Some(offset) = self.offset_s {
            flags.push_str(&format!(" --offset-s {offset}"));
        }
        if let Some(value) = self.consistency.as_ref().and_then(ValueEnum::to_possible_value) {
            flags.push_str(&format!(" --consistency {}", value.get_name()));
        }
        for (on, flag) in [
            (self.k3, " --k3"),
            (self.m2, " --m2"),
            (self.m3, " --m3"),
            (self.m4, " --m4"),
            (self.no_fencing, " --no-fencing"),
            (self.lose_unsynced, " --lose-unsynced"),
            (self.try_lock, " --try-lock"),
            (self.thesis_listings, " --thesis-listings"),
        ] {
            if on {
                flags.push_str(flag);
            }
        }
        for (name, value) in self.knob_values() {
            if let Some(value) = value {
                flags.push_str(&format!(" --{} {value}", name.replace('_', "-")));
            }
        }
        flags
    }
}

/// Run a scenario over a range of seeds and summarise.
///
/// Exit status: 0 every run passed every check; 1 some check failed (the first failing seed
/// and the command that replays it are printed); 2 bad arguments. With --shard K/N --out FILE:
/// 0 once the file is written (the verdict is `cassalock merge`'s), 4 if writing it failed.
/// The wall-clock figures (seconds, seeds/minute) go to stderr.
#[derive(Args, Debug)]
pub struct SimArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Seeds as A..B (B excluded) or A..=B.
    #[arg(long, default_value = "0..100", allow_hyphen_values = true)]
    seeds: SeedRange,
    /// Parallel runs (each on its own thread).
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// The row locks' algorithm [default: both].
    #[arg(long, value_enum)]
    algorithm: Option<Algorithms>,
    /// The families' scenarios: stop each run at this many simulated milliseconds instead of
    /// the scenario's bound (clients not done by then make T2 bounded, exit status 3).
    #[arg(long, value_name = "MS")]
    bound_ms: Option<u64>,
    /// The families' scenarios with a replica: its lag behind the primary, simulated ms,
    /// instead of the scenario's.
    #[arg(long, value_name = "MS")]
    replication_lag_ms: Option<u64>,
    /// Write one JSON line per seed to FILE as the sweep goes (algorithm, seed, acquisitions,
    /// simulated seconds, each claim's verdict), in seed order; nothing per seed is kept in memory.
    #[arg(long, value_name = "FILE")]
    per_seed_out: Option<std::path::PathBuf>,
    /// Record each claim's first failing seed in regressions/<scenario>.seeds (created if
    /// missing; a seed already there is not added twice), for `cargo test` to replay.
    #[arg(long)]
    record: bool,
    /// skew only: sweep replica r0's offset over 0..=2 TTL (1 s steps, then 0.1 s below the first
    /// offset that breaks T1) and report the smallest offset that breaks it, with its seed.
    #[arg(long)]
    sweep_offsets: bool,
    /// Run only shard K of N of the seeds (those with seed % N == K-1) and write a result
    /// file for `cassalock merge` (README, "Sweeps across machines"); needs --out.
    #[arg(long, value_name = "K/N", requires = "out", conflicts_with_all = ["sweep_offsets", "record"])]
    shard: Option<Shard>,
    /// With --shard: the result file to write (JSON); the verdict comes from `cassalock merge`.
    #[arg(long, value_name = "FILE", requires = "shard")]
    out: Option<PathBuf>,
}

impl SimArgs {
    /// The algorithms to run: as given, or both.
    pub(crate) fn algorithms(&self) -> Algorithms {
        self.algorithm.unwrap_or(Algorithms::Both)
    }

    /// A flag given that only the row locks' scenarios take, for a refusal.
    fn row_lock_flag(&self) -> Option<String> {
        let flags = self.scenario.flags();
        let given = [
            (self.algorithm.is_some(), "--algorithm".to_owned()),
            (self.per_seed_out.is_some(), "--per-seed-out".to_owned()),
            (self.record, "--record".to_owned()),
            (self.sweep_offsets, "--sweep-offsets".to_owned()),
            (
                !flags.is_empty(),
                flags.trim().split(' ').next().unwrap_or_default().to_owned(),
            ),
        ];
        given.into_iter().find_map(|(on, flag)| on.then_some(flag))
    }
}

/// The families' scenarios named by `scenario` (one, or several comma-separated), when it
/// names no row-lock scenario and no scenario file is given.
fn family_scenarios(scenario: &ScenarioArgs) -> Option<String> {
    let name = scenario.scenario.as_deref()?;
    (scenario.scenario_file.is_none() && crate::family_sim::names_family_scenarios(name)).then(|| name.to_owned())
}

/// Replay one run in full: the plan, every event, the verdicts.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub(crate) scenario: ScenarioArgs,
    #[arg(long)]
    pub(crate) seed: u64,
    /// The row locks' algorithm [default: queue].
    #[arg(long, value_enum)]
    algorithm: Option<Algorithm>,
    /// The families' scenarios: stop the run at this many simulated milliseconds.
    #[arg(long, value_name = "MS")]
    pub(crate) bound_ms: Option<u64>,
    /// The families' scenarios with a replica: its lag behind the primary, simulated ms.
    #[arg(long, value_name = "MS")]
    pub(crate) replication_lag_ms: Option<u64>,
    /// Also draw the timeline as SVG into this file.
    #[arg(long, value_name = "FILE")]
    svg: Option<std::path::PathBuf>,
    /// Print the plan and verdicts only, not every event.
    #[arg(long)]
    pub(crate) summary: bool,
    /// Also write the run's event record into this file (JSON lines, docs/events.md; every
    /// request and reply too, unless --summary): `cassalock judge FILE` reads it back and
    /// prints the same verdicts.
    #[arg(long, value_name = "FILE")]
    events: Option<std::path::PathBuf>,
    /// Check the run against recorded verdicts (a line of regressions/*.seeds): these claims,
    /// comma-separated, must be violated. With --expect-violated or --expect-passed the exit
    /// status says whether the recording still holds (0) or not (1), not whether claims hold.
    #[arg(long, value_delimiter = ',', value_name = "CLAIMS")]
    expect_violated: Vec<String>,
    /// ... and these claims must hold (checked and not violated: a bug since fixed).
    #[arg(long, value_delimiter = ',', value_name = "CLAIMS")]
    expect_passed: Vec<String>,
}

/// `text` as one shell word: as it is when the shell would read it unchanged, else quoted, so
/// that every printed command (and every recorded line) can be pasted back (a scenario file
/// under a path with spaces, say).
pub fn shell_word(text: &str) -> String {
    shlex::try_quote(text).map_or_else(|_| text.to_owned(), |quoted| quoted.into_owned())
}

/// The row locks' scenarios, as refusals name them.
const ROW_SCENARIOS: &str = "contention, skew, pause, pause-at-rewrite, cl-one, partition, crash-holder, renew-race, timeservice-stall, swarm, loss";

pub fn replay_command(scenario: &str, seed: u64, algorithm: Algorithm, flags: &str) -> String {
    format!(
        "cassalock replay --scenario {scenario} --seed {seed} --algorithm {}{flags}",
        algorithm.name()
    )
}

/// Everything a sweep prints about one algorithm's runs, in a fixed size whatever the number of
/// seeds: tallied over a whole range, a shard of it, or shards merged ([`Tally::absorb`]).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Tally {
    /// The first seed whose run panicked (a harness bug).
    pub(crate) panics: Option<u64>,
    pub(crate) runs: u64,
    pub(crate) failed_runs: u64,
    /// Per claim: its name, failing runs, the first failing seed.
    per_claim: Vec<(String, u64, Option<u64>)>,
    /// Per claim, where it was first seen (seed, place in that seed's claims): a merge orders
    /// the claims by it, as one run over the whole range does.
    claim_seen: Vec<(u64, usize)>,
    /// Runs with a claim a bound left undecided (T2 when the run's time limit came first).
    bounded_runs: u64,
    /// Per claim a bound left undecided in some run: its name, those runs, the first such seed;
    /// kept sorted by name, so that shards merge in any order (printed in `per_claim`'s order).
    bounded: Vec<(String, u64, Option<u64>)>,
    acquisitions: u64,
    /// Simulated time over all runs, nanoseconds (exact, so shards add up to the same figure).
    sim_nanos: u128,
    hashes: u64,
    /// Store faults injected: (before apply, after apply).
    store_faults: (u64, u64),
    /// Per claim (the index in `per_claim`), the failing runs whose plan had each fault kind.
    failures_by_kind: Vec<[u64; FaultKind::NAMES.len()]>,
    /// Runs with a planned fault that never fired, and how many such faults in all.
    unfired: (u64, u64),
}

impl Tally {
    /// Add another shard's tally of the same sweep and algorithm (no seed in common).
    pub(crate) fn absorb(&mut self, other: &Tally) {
        self.panics = match (self.panics, other.panics) {
            (Some(mine), Some(theirs)) => Some(mine.min(theirs)),
            (mine, theirs) => mine.or(theirs),
        };
        self.runs += other.runs;
        self.failed_runs += other.failed_runs;
        self.bounded_runs += other.bounded_runs;
        for (claim, runs, first) in &other.bounded {
            match self.bounded.iter_mut().find(|(known, _, _)| known == claim) {
                Some(entry) => {
                    entry.1 += runs;
                    entry.2 = match (entry.2, *first) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                None => self.bounded.push((claim.clone(), *runs, *first)),
            }
        }
        self.bounded.sort_by(|a, b| a.0.cmp(&b.0));
        self.acquisitions += other.acquisitions;
        self.sim_nanos += other.sim_nanos;
        self.hashes ^= other.hashes;
        self.store_faults.0 += other.store_faults.0;
        self.store_faults.1 += other.store_faults.1;
        self.unfired.0 += other.unfired.0;
        self.unfired.1 += other.unfired.1;
        self.failures_by_kind
            .resize(self.per_claim.len(), [0; FaultKind::NAMES.len()]);
        for (index, (claim, failures, first)) in other.per_claim.iter().enumerate() {
            let by_kind = other
                .failures_by_kind
                .get(index)
                .copied()
                .unwrap_or([0; FaultKind::NAMES.len()]);
            let seen = other.claim_seen.get(index).copied().unwrap_or((u64::MAX, usize::MAX));
            match self.per_claim.iter().position(|(known, _, _)| known == claim) {
                Some(mine) => {
                    let entry = &mut self.per_claim[mine];
                    entry.1 += failures;
                    entry.2 = match (entry.2, *first) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    self.claim_seen[mine] = self.claim_seen[mine].min(seen);
                    for (count, more) in self.failures_by_kind[mine].iter_mut().zip(by_kind) {
                        *count += more;
                    }
                }
                None => {
                    self.per_claim.push((claim.clone(), *failures, *first));
                    self.claim_seen.push(seen);
                    self.failures_by_kind.push(by_kind);
                }
            }
        }
        // The order one run gives: each claim where it first appeared.
        let mut order: Vec<usize> = (0..self.per_claim.len()).collect();
        order.sort_by_key(|&index| self.claim_seen[index]);
        self.per_claim = order.iter().map(|&index| self.per_claim[index].clone()).collect();
        self.claim_seen = order.iter().map(|&index| self.claim_seen[index]).collect();
        self.failures_by_kind = order.iter().map(|&index| self.failures_by_kind[index]).collect();
    }
}

/// Run every seed of `seeds` (in increasing order: a range, or a shard's seeds of it) on `pool` and tally, in seed order; with `per_seed`, also write one
/// JSON line per seed there, a batch at a time. What it holds at once is bounded by [`BATCH`],
/// whatever the number of seeds (`cassalock bench sweep-memory` measures it). Fails only on a
/// write to `per_seed`.
pub(crate) fn run_seeds(
    scenario: &str,
    options: &SimOptions,
    seeds: impl Iterator<Item = u64>,
    pool: &rayon::ThreadPool,
    algorithm: Algorithm,
    bar: Option<&indicatif::ProgressBar>,
    mut per_seed: Option<&mut dyn Write>,
) -> std::io::Result<Tally> {
    let mut tally = Tally::default();
    let mut shard_seeds = seeds.peekable();
    while shard_seeds.peek().is_some() {
        let batch: Vec<u64> = shard_seeds.by_ref().take(BATCH as usize).collect();
        // `None`: the run panicked. Each run is cut down to its summary on its worker, so a
        // batch holds 1024 small summaries, never 1024 runs' records.
        let outcomes: Vec<Option<SeedSummary>> = pool.install(|| {
            batch
                .par_iter()
                .map(|&seed| {
                    let config = build(scenario, seed, algorithm, options).expect("validated by the caller");
                    let outcome = std::panic::catch_unwind(|| SeedSummary::of(&run(&config, seed, false))).ok();
                    if let Some(bar) = bar {
                        bar.inc(1);
                    }
                    outcome
                })
                .collect()
        });
        for (seed, outcome) in batch.iter().copied().zip(&outcomes) {
            if let Some(out) = per_seed.as_mut() {
                writeln!(out, "{}", per_seed_line(algorithm, seed, outcome.as_ref()))?;
            }
            match outcome {
                Some(outcome) => tally_outcome(&mut tally, outcome),
                None => {
                    tally.runs += 1;
                    tally.failed_runs += 1;
                    tally.panics.get_or_insert(seed);
                }
            }
        }
        if let Some(out) = per_seed.as_mut() {
            out.flush()?;
        }
    }
    Ok(tally)
}

/// One `--per-seed-out` line: the seed's figures and each claim's verdict, or that it panicked.
fn per_seed_line(algorithm: Algorithm, seed: u64, outcome: Option<&SeedSummary>) -> serde_json::Value {
    match outcome {
        Some(outcome) => {
            let mut line = serde_json::json!({
                "algorithm": algorithm.name(),
                "seed": seed,
                "acquisitions": outcome.acquisitions,
                "requests": outcome.requests,
                "sim_seconds": outcome.sim_seconds,
                "claims": outcome
                    .claims
                    .iter()
                    .map(|&(claim, verdict)| (claim.to_owned(), serde_json::Value::from(verdict_word(verdict))))
                    .collect::<serde_json::Map<_, _>>(),
            });
            // Only when the store-fault knobs injected some: other sweeps' lines stay as they were.
            if outcome.store_faults != (0, 0) {
                line["store_faults"] = serde_json::json!({
                    "before_apply": outcome.store_faults.0,
                    "after_apply": outcome.store_faults.1,
                });
            }
            line
        }
        None => serde_json::json!({ "algorithm": algorithm.name(), "seed": seed, "panicked": true }),
    }
}

/// A claim's verdict in a `--per-seed-out` line (a claim the run gave no occasion to: "ok").
fn verdict_word(verdict: ClaimVerdict) -> &'static str {
    match verdict {
        ClaimVerdict::Violated => "FAILED",
        ClaimVerdict::Bounded => "bounded",
        ClaimVerdict::Holds | ClaimVerdict::NotExercised => "ok",
    }
}

/// The skew finding: the smallest offset of r0's clock that breaks T1.
fn sweep_offsets(args: &SimArgs, scenario: &str, options: &SimOptions, pool: &rayon::ThreadPool) -> ExitCode {
    if scenario != "skew" {
        return crate::usage_error("--sweep-offsets applies to the skew scenario only");
    }
    if options.offset_s.is_some() {
        return crate::usage_error("--sweep-offsets chooses the offsets itself: drop --offset-s");
    }
    let ttl_s = f64::from(options.knobs.ttl_s.unwrap_or(cassalock::Settings::new("sweep").ttl_s));
    let renew_s = options
        .knobs
        .renew_every_ms
        .map_or(ttl_s / 2.0, |ms| ms as f64 / 1000.0);
    let algorithms = args.algorithms().algorithms();
    let first_failure = |offset: f64, algorithm: Algorithm| -> Option<u64> {
        let options = SimOptions {
            offset_s: Some(offset),
            ..options.clone()
        };
        let tally = run_seeds("skew", &options, args.seeds.seeds(), pool, algorithm, None, None)
            .expect("no --per-seed-out, nothing written");
        tally
            .per_claim
            .iter()
            .find(|(claim, failures, _)| *claim == "T1-belief" && *failures > 0)
            .and_then(|(_, _, seed)| *seed)
    };
    println!(
        "skew sweep: replica r0's clock ahead by an offset; TTL {ttl_s} s, renewal every {renew_s} s; seeds {} per offset",
        args.seeds
    );
    for algorithm in algorithms {
        let mut coarse = None;
        let mut offset = 0.0;
        while offset <= 2.0 * ttl_s {
            let failing = first_failure(offset, algorithm);
            println!(
                "  {} algorithm, offset {offset:>5.1} s: {}",
                algorithm.name(),
                failing.map_or_else(
                    || format!("no T1-belief violation in {}", count(args.seeds.len(), "seed")),
                    |seed| format!("T1-belief violated (seed {seed})")
                )
            );
            if failing.is_some() {
                coarse = Some(offset);
                break;
            }
            offset += 1.0;
        }
        let Some(coarse) = coarse else {
            println!(
                "  {} algorithm: no offset up to 2 TTL broke T1 in these seeds (a seeded search, not a proof)",
                algorithm.name()
            );
            continue;
        };
        let mut smallest = (coarse, first_failure(coarse, algorithm).expect("failed above"));
        let mut fine = (coarse - 1.0).max(0.0) + 0.1;
        while fine < coarse - 1e-9 {
            if let Some(seed) = first_failure(fine, algorithm) {
                smallest = (fine, seed);
                break;
            }
            fine += 0.1;
        }
        let (offset, seed) = smallest;
        println!(
            "  FINDING ({} algorithm): the smallest offset that broke T1 is {offset:.1} s (TTL {ttl_s} s); seed {seed}",
            algorithm.name()
        );
        println!(
            "           replay: {}",
            replay_command(
                "skew",
                seed,
                algorithm,
                &format!("{} --offset-s {offset:.1}", args.scenario.flags())
            )
        );
    }
    ExitCode::SUCCESS
}

/// `sim --scenario list`: every scenario, each with its line of help.
fn list_scenarios() -> ExitCode {
    println!("The row locks' scenarios (old, queue; --algorithm, the knobs):");
    for scenario in cassalock_sim::scenario::SCENARIOS {
        println!("  {:<40} {} ({})", scenario.name, scenario.setup, scenario.expected);
    }
    println!("\nThe other families' scenarios (--bound-ms, --replication-lag-ms):");
    for named in cassalock_sim::family::SCENARIOS {
        println!("  {:<40} {}", named.name, named.help);
    }
    ExitCode::SUCCESS
}

pub fn sim(args: SimArgs) -> ExitCode {
    if args.scenario.scenario.as_deref() == Some("list") {
        return list_scenarios();
    }
    if let Some(names) = family_scenarios(&args.scenario) {
        if let Some(flag) = args.row_lock_flag() {
            return crate::usage_error(&format!(
                "{flag} applies to the row locks' scenarios ({ROW_SCENARIOS}), not to {names}"
            ));
        }
        return crate::family_sim::sweep_scenarios(
            &names,
            args.seeds,
            args.jobs,
            crate::family_sim::Knobs {
                bound_ms: args.bound_ms,
                replication_lag_ms: args.replication_lag_ms,
            },
            args.shard,
            args.out.clone(),
        );
    }
    if args.bound_ms.is_some() || args.replication_lag_ms.is_some() {
        return crate::usage_error(&format!(
            "--bound-ms and --replication-lag-ms apply to the families' scenarios, not to the row locks' ({ROW_SCENARIOS})"
        ));
    }
    let Resolved { scenario, options } = match args.scenario.resolve() {
        Ok(resolved) => resolved,
        Err(error) => return crate::usage_error(&format!("{error:#}")),
    };
    let seeds = args.seeds;
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let runs = shard.count(&seeds);
    if runs > u128::from(MAX_SEEDS) {
        return crate::usage_error(&format!(
            "--seeds {:?}{} asks for {runs} runs; at most {MAX_SEEDS} per call (split a larger sweep with --shard K/N)",
            seeds.to_string(),
            args.shard.map(|shard| format!(" --shard {shard}")).unwrap_or_default(),
        ));
    }
    if args.jobs == 0 || args.jobs > 64 {
        return crate::usage_error("--jobs must be between 1 and 64");
    }
    if let Err(error) = build(&scenario, seeds.first(), Algorithm::Queue, &options) {
        return crate::usage_error(&args.scenario.explain(&error));
    }
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(args.jobs).build() {
        Ok(pool) => pool,
        Err(error) => {
            eprintln!("error: cannot start the worker threads: {error}");
            return ExitCode::from(1);
        }
    };
    if args.sweep_offsets {
        if args.per_seed_out.is_some() {
            return crate::usage_error("--per-seed-out applies to a plain sweep, not --sweep-offsets");
        }
        return sweep_offsets(&args, &scenario, &options, &pool);
    }
    let mut per_seed = match &args.per_seed_out {
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => Some((path, std::io::BufWriter::new(file))),
            Err(error) => return crate::usage_error(&format!("--per-seed-out {}: {error}", path.display())),
        },
        None => None,
    };
    // Opened before running, so a bad path costs nothing.
    let out = match args.out.as_deref().map(ShardOut::create).transpose() {
        Ok(out) => out,
        Err(message) => return crate::usage_error(&message),
    };
    let mut ended = Ended::default();
    let mut tallies = Vec::new();
    for algorithm in args.algorithms().algorithms() {
        let started = Instant::now();
        let total = u64::try_from(runs).expect("at most MAX_SEEDS");
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} seeds, {per_sec}, eta {eta}")
                    .expect("template"),
            );
            bar.set_message(format!("{} {}", scenario, algorithm.name()));
            bar
        });
        let tally = match run_seeds(
            &scenario,
            &options,
            shard.seeds(&seeds),
            &pool,
            algorithm,
            bar.as_ref(),
            per_seed.as_mut().map(|(_, out)| out as &mut dyn Write),
        ) {
            Ok(tally) => tally,
            Err(error) => {
                let path = per_seed
                    .as_ref()
                    .map(|(path, _)| path.display().to_string())
                    .unwrap_or_default();
                eprintln!("error: cannot write --per-seed-out {path}: {error}");
                return ExitCode::from(1);
            }
        };
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        // Wall-clock figures go to stderr: stdout is the same bytes on any machine, and for
        // `cassalock merge` of shards (README, "Sweeps across machines").
        let seconds = started.elapsed().as_secs_f64();
        eprintln!(
            "{scenario} | {} algorithm | {} in {seconds:.1} s ({:.0} seeds/minute on {} jobs)",
            algorithm.name(),
            count(tally.runs, "run"),
            tally.runs as f64 / seconds.max(1e-9) * 60.0,
            args.jobs
        );
        if out.is_some() {
            tallies.push((algorithm.name().to_owned(), tally));
            continue;
        }
        match print_tally(&args, &scenario, &options, algorithm, &tally) {
            Ok(this) => ended = ended.and(this),
            Err(code) => return code,
        }
    }
    if let Some(out) = out {
        let file = SimShardFile {
            format: SHARD_FORMAT.to_owned(),
            version: SHARD_VERSION,
            command: sweep_command(&args, &scenario),
            k: shard.k(),
            n: shard.n(),
            tallies,
        };
        let path = out.path().to_owned();
        if let Err(code) = out.write(&file) {
            return code;
        }
        println!(
            "shard {shard} of `{}`: {runs} seeds per algorithm run, written to {}; combine every shard with `cassalock merge FILE...`",
            file.command,
            path.display()
        );
        return ExitCode::SUCCESS;
    }
    ended.exit_code()
}

/// Print one algorithm's tally over the whole range (a single run and a merge of shards both
/// print through here); returns whether some run failed or was bounded, or the exit status to
/// stop with.
fn print_tally(
    args: &SimArgs,
    scenario: &str,
    options: &SimOptions,
    algorithm: Algorithm,
    tally: &Tally,
) -> Result<Ended, ExitCode> {
    println!(
        "{} | {} algorithm | seeds {} | {} | {} | {:.0} s simulated",
        scenario,
        algorithm.name(),
        args.seeds,
        count(tally.runs, "run"),
        count(tally.acquisitions, "acquisition"),
        tally.sim_nanos as f64 / 1e9
    );
    if let Some(seed) = tally.panics {
        println!(
            "  HARNESS PANIC in a run; first seed {seed}: {}",
            replay_command(scenario, seed, algorithm, &args.scenario.flags())
        );
    }
    if options.knobs.fail_before_apply_percent.is_some() || options.knobs.fail_after_apply_percent.is_some() {
        println!(
            "  store faults injected: {} calls failed before being applied, {} applied with the reply lost (all runs)",
            tally.store_faults.0, tally.store_faults.1
        );
    }
    if tally.failed_runs == 0 {
        let claims: Vec<&str> = tally.per_claim.iter().map(|(claim, _, _)| claim.as_str()).collect();
        println!(
            "  no violation in {} of any check ({}; a check a run gave no occasion to is not counted as passed in its trace){}",
            count(tally.runs, "run"),
            claims.join(", "),
            if tally.bounded_runs > 0 {
                format!(", but a bound left a check undecided in {} (below)", count(tally.bounded_runs, "run"))
            } else {
                String::new()
            }
        );
    }
    for (claim, _, _) in &tally.per_claim {
        let Some((_, runs, Some(seed))) = tally.bounded.iter().find(|(known, _, _)| known == claim) else {
            continue;
        };
        println!(
            "  {claim:<12} BOUNDED in {runs} of {}: the run's time limit came before every client finished, with none stuck; no verdict there; first seed {seed}",
            count(tally.runs, "run")
        );
        println!(
            "               replay: {}",
            replay_command(scenario, *seed, algorithm, &args.scenario.flags())
        );
    }
    if tally.unfired.0 > 0 {
        println!(
            "  planned faults that never fired: {} in {} of {} (a holder fault that found no holder within 10 s, or a fault planned after the run ended): those runs did not test them",
            tally.unfired.1,
            tally.unfired.0,
            count(tally.runs, "run")
        );
    }
    let mut recorded_seeds: Vec<u64> = Vec::new();
    for (index, (claim, failures, first)) in tally.per_claim.iter().enumerate() {
        if *failures > 0 {
            let seed = first.expect("a failure has a seed");
            println!(
                "  {claim:<12} FAILED in {failures} of {}; first failing seed {seed}",
                count(tally.runs, "run")
            );
            println!(
                "               replay: {}",
                replay_command(scenario, seed, algorithm, &args.scenario.flags())
            );
            let by_kind: Vec<String> = tally
                .failures_by_kind
                .get(index)
                .into_iter()
                .flat_map(|counts| counts.iter().enumerate())
                .filter(|(_, count)| **count > 0)
                .map(|(kind, count)| format!("{} {count}", FaultKind::NAMES[kind]))
                .collect();
            if !by_kind.is_empty() {
                println!(
                    "               failing runs whose plan had each fault: {}",
                    by_kind.join(", ")
                );
            }
            let config = build(scenario, seed, algorithm, options).expect("validated above");
            let plan = config.plan();
            for line in plan.lines().skip(1) {
                println!("               seed {seed} plan: {}", line.trim_start());
            }
            if recorded_seeds.contains(&seed) {
                continue;
            }
            recorded_seeds.push(seed);
            let outcome = run(&config, seed, false);
            let replay_args = replay_command(scenario, seed, algorithm, &args.scenario.flags());
            let replay_args = replay_args.trim_start_matches("cassalock replay ");
            let found_by = format!(
                "found by: cassalock sim --scenario {scenario}{} --seeds {} --algorithm {}",
                args.scenario.flags(),
                args.seeds,
                algorithm.name()
            );
            let line = crate::recorded::line(replay_args, &outcome.verdicts, &found_by);
            let path = crate::recorded::file_for(std::path::Path::new(""), scenario);
            if args.record {
                match crate::recorded::append(&path, &line) {
                    Ok(true) => println!("               recorded in {}", path.display()),
                    Ok(false) => println!("               already recorded in {}", path.display()),
                    Err(error) => {
                        eprintln!("error: cannot record in {}: {error}", path.display());
                        return Err(ExitCode::from(2));
                    }
                }
            } else {
                println!(
                    "               record (or rerun with --record): echo {} >> {}",
                    shell_word(&line),
                    shell_word(&path.display().to_string())
                );
            }
        }
    }
    Ok(Ended {
        failed: tally.failed_runs > 0,
        bounded: tally.bounded_runs > 0,
    })
}

/// How a sweep (or one algorithm's part of it) ended, for the exit status.
#[derive(Clone, Copy, Debug, Default)]
struct Ended {
    failed: bool,
    bounded: bool,
}

impl Ended {
    fn and(self, other: Ended) -> Ended {
        Ended {
            failed: self.failed || other.failed,
            bounded: self.bounded || other.bounded,
        }
    }

    /// 1 for a violation, else 3 for a bound that left a check undecided, else 0.
    fn exit_code(self) -> ExitCode {
        if self.failed {
            ExitCode::from(1)
        } else if self.bounded {
            ExitCode::from(3)
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// What a `sim` shard file says it is, and the version of its layout.
pub const SHARD_FORMAT: &str = "cassalock-sim-shard";
/// Version 2 (2026-11-28): tallies count runs a bound left undecided (T2 at the time limit),
/// which version 1 counted as failures.
pub const SHARD_VERSION: u64 = 2;

/// A shard's result file (`sim --shard K/N --out FILE`), read by `cassalock merge`.
#[derive(serde::Serialize, serde::Deserialize)]
struct SimShardFile {
    format: String,
    version: u64,
    /// The sweep as a command (scenario, its flags, seeds, algorithms), which the merge parses back.
    command: String,
    k: u64,
    n: u64,
    /// Per algorithm run: its name and tally.
    tallies: Vec<(String, Tally)>,
}

/// The command that runs the whole sweep on one machine (without --jobs, --shard, --out).
fn sweep_command(args: &SimArgs, scenario: &str) -> String {
    let algorithms = args.algorithms().to_possible_value().expect("every value is named");
    format!(
        "cassalock sim --scenario {}{} --seeds {} --algorithm {}",
        shell_word(scenario),
        args.scenario.flags(),
        args.seeds,
        algorithms.get_name()
    )
}

/// `cassalock merge` of `sim` shards: print what `sim` over the whole range prints, and exit
/// as it would (0, 1; 2 for bad files).
pub fn merge(paths: &[PathBuf]) -> ExitCode {
    match merge_files(paths) {
        Ok(code) => code,
        Err(message) => crate::usage_error(&message),
    }
}

fn merge_files(paths: &[PathBuf]) -> Result<ExitCode, String> {
    #[derive(clap::Parser)]
    struct SimCommand {
        #[command(flatten)]
        args: SimArgs,
    }
    use clap::Parser;
    let mut files = Vec::new();
    for path in paths {
        let value = crate::shard::read_json(path, SHARD_FORMAT, SHARD_VERSION)?;
        let damaged = |why: String| format!("{}: a damaged shard file: {why}", path.display());
        let file: SimShardFile = serde_json::from_value(value).map_err(|error| damaged(error.to_string()))?;
        let shard = Shard::new(file.k, file.n).ok_or_else(|| damaged(format!("shard {}/{}", file.k, file.n)))?;
        let words = shlex::split(&file.command).unwrap_or_default();
        let args = SimCommand::try_parse_from(words.iter().skip(1))
            .map_err(|error| damaged(format!("command {:?}: {error}", file.command)))?
            .args;
        let names: Vec<&str> = args
            .algorithms()
            .algorithms()
            .iter()
            .map(|algorithm| algorithm.name())
            .collect();
        let runs = shard.count(&args.seeds);
        if !file
            .tallies
            .iter()
            .map(|(name, _)| name.as_str())
            .eq(names.iter().copied())
            || file.tallies.iter().any(|(_, tally)| {
                u128::from(tally.runs) != runs
                    || tally.claim_seen.len() != tally.per_claim.len()
                    || tally
                        .per_claim
                        .iter()
                        .any(|(_, failures, first)| (*failures > 0) != first.is_some())
            })
        {
            return Err(damaged(format!("not {runs} runs of each of {}", names.join(", "))));
        }
        files.push((path, file, shard, args));
    }
    let cover: Vec<(&PathBuf, String, Shard)> = files
        .iter()
        .map(|(path, file, shard, _)| (*path, format!("`{}` in {} shards", file.command, shard.n()), *shard))
        .collect();
    crate::shard::check_cover(&cover, &files[0].1.command)?;
    let (_, first, _, args) = &files[0];
    let Resolved { scenario, options } = args
        .scenario
        .resolve()
        .map_err(|error| format!("{}: {error:#}", first.command))?;
    build(&scenario, args.seeds.first(), Algorithm::Queue, &options)
        .map_err(|error| format!("{}: {}", first.command, args.scenario.explain(&error)))?;
    let mut ended = Ended::default();
    for (index, algorithm) in args.algorithms().algorithms().into_iter().enumerate() {
        let mut merged = Tally::default();
        for (_, file, _, _) in &files {
            merged.absorb(&file.tallies[index].1);
        }
        match print_tally(args, &scenario, &options, algorithm, &merged) {
            Ok(this) => ended = ended.and(this),
            Err(code) => return Ok(code),
        }
    }
    Ok(ended.exit_code())
}

/// What a sweep keeps of one run: its figures and each claim's pass or fail, not its records.
struct SeedSummary {
    seed: u64,
    acquisitions: u64,
    /// Store requests of the lock clients (renewals and releases included).
    requests: u64,
    sim_seconds: f64,
    sim_nanos: u128,
    trace_hash: u64,
    all_passed: bool,
    /// Each claim's verdict in this run (a claim a run gave no occasion to counts as passed).
    claims: Vec<(&'static str, ClaimVerdict)>,
    /// Store faults injected: (before apply, after apply).
    store_faults: (u64, u64),
    /// Which kinds of fault the plan has (bit i: `FaultKind::NAMES[i]`).
    fault_kinds: u32,
    /// Planned faults that never fired.
    faults_unfired: u64,
}

impl SeedSummary {
    fn of(outcome: &RunOutcome) -> Self {
        SeedSummary {
            seed: outcome.seed,
            acquisitions: outcome.verdicts.acquisitions as u64,
            requests: outcome.requests,
            sim_seconds: outcome.sim_time.as_secs_f64(),
            sim_nanos: outcome.sim_time.as_nanos(),
            trace_hash: outcome.trace_hash,
            all_passed: outcome.verdicts.all_passed(),
            store_faults: (
                outcome.verdicts.store_faults_before_apply as u64,
                outcome.verdicts.store_faults_after_apply as u64,
            ),
            claims: outcome
                .verdicts
                .checks
                .iter()
                .map(|check| (check.claim.as_str(), check.verdict))
                .collect(),
            fault_kinds: outcome
                .config
                .faults
                .iter()
                .fold(0, |kinds, fault| kinds | 1 << fault.kind.index()),
            faults_unfired: outcome.verdicts.faults_unfired as u64,
        }
    }
}

fn tally_outcome(tally: &mut Tally, outcome: &SeedSummary) {
    tally.runs += 1;
    tally.acquisitions += outcome.acquisitions;
    tally.sim_nanos += outcome.sim_nanos;
    tally.hashes ^= outcome.trace_hash;
    tally.store_faults.0 += outcome.store_faults.0;
    tally.store_faults.1 += outcome.store_faults.1;
    if !outcome.all_passed {
        tally.failed_runs += 1;
    }
    if outcome
        .claims
        .iter()
        .any(|(_, verdict)| *verdict == ClaimVerdict::Bounded)
    {
        tally.bounded_runs += 1;
    }
    for &(claim, verdict) in &outcome.claims {
        if verdict != ClaimVerdict::Bounded {
            continue;
        }
        match tally.bounded.iter_mut().find(|(known, _, _)| known == claim) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 = Some(entry.2.map_or(outcome.seed, |s| s.min(outcome.seed)));
            }
            None => {
                tally.bounded.push((claim.to_owned(), 1, Some(outcome.seed)));
                tally.bounded.sort_by(|a, b| a.0.cmp(&b.0));
            }
        }
    }
    for (place, &(claim, verdict)) in outcome.claims.iter().enumerate() {
        let passed = !verdict.is_violated();
        let entry = match tally.per_claim.iter_mut().position(|(known, _, _)| known == claim) {
            Some(i) => &mut tally.per_claim[i],
            None => {
                tally.per_claim.push((claim.to_owned(), 0, None));
                tally.claim_seen.push((outcome.seed, place));
                tally.per_claim.last_mut().expect("pushed")
            }
        };
        if !passed {
            entry.1 += 1;
            entry.2 = Some(entry.2.map_or(outcome.seed, |s| s.min(outcome.seed)));
        }
    }
    tally
        .failures_by_kind
        .resize(tally.per_claim.len(), [0; FaultKind::NAMES.len()]);
    for &(claim, verdict) in &outcome.claims {
        if !verdict.is_violated() {
            continue;
        }
        let index = tally
            .per_claim
            .iter()
            .position(|(known, _, _)| known == claim)
            .expect("tallied above");
        for (kind, count) in tally.failures_by_kind[index].iter_mut().enumerate() {
            *count += u64::from(outcome.fault_kinds >> kind & 1);
        }
    }
    if outcome.faults_unfired > 0 {
        tally.unfired.0 += 1;
        tally.unfired.1 += outcome.faults_unfired;
    }
}

/// Write `outcome`'s event record into `path`; the number of events written.
fn write_events(outcome: &RunOutcome, replay: String, path: &std::path::Path) -> std::io::Result<usize> {
    let mut header = outcome.header.clone();
    header.replay = Some(replay);
    let events = cassalock_sim::events::events(&outcome.config, &outcome.records);
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    cassalock_judge::event::write(&mut file, &header, &events)?;
    file.into_inner()
        .map_err(std::io::IntoInnerError::into_error)?
        .sync_all()?;
    Ok(events.len())
}

pub fn replay(args: ReplayArgs) -> ExitCode {
    if let Some(names) = family_scenarios(&args.scenario) {
        let flags = args.scenario.flags();
        let row_flag = [
            (args.algorithm.is_some(), "--algorithm".to_owned()),
            (!args.expect_violated.is_empty(), "--expect-violated".to_owned()),
            (!args.expect_passed.is_empty(), "--expect-passed".to_owned()),
            (
                !flags.is_empty(),
                flags.trim().split(' ').next().unwrap_or_default().to_owned(),
            ),
        ]
        .into_iter()
        .find_map(|(on, flag)| on.then_some(flag));
        if let Some(flag) = row_flag {
            return crate::usage_error(&format!(
                "{flag} applies to the row locks' scenarios ({ROW_SCENARIOS}), not to {names}"
            ));
        }
        return crate::family_sim::replay_scenario(
            &names,
            args.seed,
            !args.summary,
            args.events.as_deref(),
            args.svg.as_deref(),
            crate::family_sim::Knobs {
                bound_ms: args.bound_ms,
                replication_lag_ms: args.replication_lag_ms,
            },
        );
    }
    if args.bound_ms.is_some() || args.replication_lag_ms.is_some() {
        return crate::usage_error(&format!(
            "--bound-ms and --replication-lag-ms apply to the families' scenarios, not to the row locks' ({ROW_SCENARIOS})"
        ));
    }
    let Resolved { scenario, options } = match args.scenario.resolve() {
        Ok(resolved) => resolved,
        Err(error) => return crate::usage_error(&format!("{error:#}")),
    };
    let algorithm = args.algorithm.unwrap_or(Algorithm::Queue);
    let expectation = match crate::recorded::Expectation::parse(&args.expect_violated, &args.expect_passed) {
        Ok(expectation) => expectation,
        Err(error) => return crate::usage_error(&error),
    };
    let config = match build(&scenario, args.seed, algorithm, &options) {
        Ok(config) => config,
        Err(error) => return crate::usage_error(&args.scenario.explain(&error)),
    };
    println!("{}", config.plan());
    println!("seed {}", args.seed);
    let outcome = run(&config, args.seed, !args.summary);
    if !args.summary {
        println!();
        println!(
            "{:>6} {:>12} {:<9} {:>12}  event",
            "#", "sim time", "node", "node clock"
        );
        print!("{}", cassalock_sim::trace::render(&outcome.records));
    }
    println!();
    println!(
        "verdicts ({} acquisitions, {:.3} s simulated, trace hash {:016x}):",
        outcome.verdicts.acquisitions,
        outcome.sim_time.as_secs_f64(),
        outcome.trace_hash
    );
    print!("{}", outcome.verdicts);
    println!();
    println!(
        "replay: {}",
        replay_command(&scenario, args.seed, algorithm, &args.scenario.flags())
    );
    if let Some(path) = &args.svg {
        match cassalock_sim::timeline::write_svg(&outcome, path) {
            Ok(()) => println!("timeline written to {}", path.display()),
            Err(error) => {
                eprintln!("error: could not write {}: {error}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    if let Some(path) = &args.events {
        let replay = replay_command(&scenario, args.seed, algorithm, &args.scenario.flags());
        match write_events(&outcome, replay, path) {
            Ok(lines) => println!("event record written to {} ({lines} events)", path.display()),
            Err(error) => {
                eprintln!("error: could not write the event record {}: {error}", path.display());
                return ExitCode::from(if outcome.verdicts.all_passed() { 2 } else { 1 });
            }
        }
    }
    if !expectation.is_empty() {
        let unmet = expectation.unmet(&outcome.verdicts);
        if unmet.is_empty() {
            println!("recorded verdicts reproduced");
            return ExitCode::SUCCESS;
        }
        println!("RECORDED VERDICTS NOT REPRODUCED:");
        for sentence in &unmet {
            println!("  {sentence}");
        }
        println!(
            "  a recorded violation that is gone means the harness went blind or the scenario changed; a recorded pass that fails means a fix regressed. Run the command above without --expect-* for the trace."
        );
        return ExitCode::from(1);
    }
    Ended {
        failed: !outcome.verdicts.all_passed(),
        bounded: outcome.verdicts.any_bounded(),
    }
    .exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Sim {
        #[command(flatten)]
        args: SimArgs,
    }

    fn parse(line: &[&str]) -> Result<SimArgs, clap::Error> {
        Sim::try_parse_from(std::iter::once("sim").chain(line.iter().copied())).map(|sim| sim.args)
    }

    #[test]
    fn algorithms_are_the_library_s_and_both() {
        let choose = |name: &str| parse(&["--scenario", "contention", "--algorithm", name]).map(|a| a.algorithms());
        assert_eq!(choose("old").unwrap(), Algorithms::One(Algorithm::Old));
        assert_eq!(choose("queue").unwrap(), Algorithms::One(Algorithm::Queue));
        assert_eq!(
            choose("both").unwrap().algorithms(),
            vec![Algorithm::Old, Algorithm::Queue]
        );
        assert!(choose("lwt").is_err());
        let default = parse(&["--scenario", "contention"]).unwrap();
        assert_eq!(default.algorithms(), Algorithms::Both);
        assert_eq!(default.seeds.to_string(), "0..100");
    }

    #[test]
    fn seeds_parse_up_to_the_last_and_say_what_is_wrong() {
        let seeds = |text: &str| parse(&["--scenario", "contention", "--seeds", text]).map(|a| a.seeds);
        let last = seeds("18446744073709551613..18446744073709551615").unwrap();
        assert_eq!(last.len(), 2);
        let negative = seeds("-1..5").unwrap_err().to_string();
        assert!(negative.contains("not negative"), "{negative}");
        let overflow = seeds("0..18446744073709551616").unwrap_err().to_string();
        assert!(overflow.contains("overflows"), "{overflow}");
    }

    #[test]
    fn a_per_seed_line_holds_the_seed_s_figures_and_verdicts() {
        let summary = SeedSummary {
            seed: 7,
            acquisitions: 15,
            requests: 120,
            sim_seconds: 56.5,
            sim_nanos: 56_500_000_000,
            trace_hash: 0,
            all_passed: false,
            claims: vec![("T1-belief", ClaimVerdict::Violated), ("T2", ClaimVerdict::Holds)],
            store_faults: (0, 0),
            fault_kinds: 0,
            faults_unfired: 0,
        };
        assert_eq!(
            per_seed_line(Algorithm::Queue, 7, Some(&summary)).to_string(),
            r#"{"acquisitions":15,"algorithm":"queue","claims":{"T1-belief":"FAILED","T2":"ok"},"requests":120,"seed":7,"sim_seconds":56.5}"#
        );
        let faulty = SeedSummary {
            store_faults: (2, 3),
            ..summary
        };
        assert_eq!(
            per_seed_line(Algorithm::Queue, 7, Some(&faulty)).to_string(),
            r#"{"acquisitions":15,"algorithm":"queue","claims":{"T1-belief":"FAILED","T2":"ok"},"requests":120,"seed":7,"sim_seconds":56.5,"store_faults":{"after_apply":3,"before_apply":2}}"#
        );
        assert_eq!(
            per_seed_line(Algorithm::Old, 8, None).to_string(),
            r#"{"algorithm":"old","panicked":true,"seed":8}"#
        );
    }

    #[test]
    fn failures_are_tallied_by_the_fault_kinds_of_their_plans_and_unfired_faults_counted() {
        let run = |seed, passed, fault_kinds, faults_unfired| SeedSummary {
            seed,
            acquisitions: 1,
            requests: 8,
            sim_seconds: 1.0,
            sim_nanos: 1_000_000_000,
            trace_hash: 0,
            all_passed: passed,
            claims: vec![
                ("T1-belief", ClaimVerdict::from_holds(passed)),
                ("T2", ClaimVerdict::Holds),
            ],
            store_faults: (0, 0),
            fault_kinds,
            faults_unfired,
        };
        let mut tally = Tally::default();
        tally_outcome(&mut tally, &run(1, false, 0b101, 0)); // pause-holder, kill-holder
        tally_outcome(&mut tally, &run(2, false, 0b001, 2)); // pause-holder, 2 never fired
        tally_outcome(&mut tally, &run(3, true, 0b111, 1));
        let t1 = &tally.failures_by_kind[0];
        assert_eq!(FaultKind::NAMES[0], "pause-holder");
        assert_eq!((t1[0], t1[1], t1[2]), (2, 0, 1), "passing runs are not counted");
        assert_eq!(
            tally.failures_by_kind[1],
            [0; FaultKind::NAMES.len()],
            "T2 never failed"
        );
        assert_eq!(tally.unfired, (2, 3));
    }

    #[test]
    fn shards_tallies_absorbed_in_any_order_equal_the_whole_runs_tally() {
        // Each claim: held (true), violated (false); T2 is bounded in every fourth seed.
        let run = |seed: u64, claims: Vec<(&'static str, bool)>| SeedSummary {
            seed,
            acquisitions: seed,
            requests: seed,
            sim_seconds: 0.0,
            sim_nanos: u128::from(seed) * 1_000_003,
            trace_hash: seed,
            all_passed: claims.iter().all(|(_, passed)| *passed),
            claims: claims
                .into_iter()
                .map(|(claim, passed)| {
                    let verdict = match (claim, passed) {
                        ("T2", true) if seed % 4 == 1 => ClaimVerdict::Bounded,
                        ("K3", true) if seed % 6 == 4 => ClaimVerdict::Bounded,
                        (_, passed) => ClaimVerdict::from_holds(passed),
                    };
                    (claim, verdict)
                })
                .collect(),
            store_faults: (seed % 2, seed % 3),
            fault_kinds: 1 << (seed % 4),
            faults_unfired: seed % 2,
        };
        // Claims that first appear in later seeds, in different places: the order must be the
        // whole run's, wherever each shard first saw them.
        let runs: Vec<SeedSummary> = (0..12u64)
            .map(|seed| match seed {
                0..=2 => run(seed, vec![("T2", true)]),
                3 => run(seed, vec![("K3", seed % 2 == 0), ("T2", false)]),
                _ => run(
                    seed,
                    vec![("T1-belief", seed % 3 != 0), ("T2", true), ("K3", seed % 5 != 0)],
                ),
            })
            .collect();
        let mut whole = Tally::default();
        let mut shards = [Tally::default(), Tally::default(), Tally::default()];
        for summary in &runs {
            tally_outcome(&mut whole, summary);
            tally_outcome(&mut shards[(summary.seed % 3) as usize], summary);
        }
        whole.panics = Some(7);
        shards[1].panics = Some(7);
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
            let mut merged = Tally::default();
            for index in order {
                merged.absorb(&shards[index]);
            }
            assert_eq!(format!("{merged:?}"), format!("{whole:?}"), "{order:?}");
        }
        assert_eq!(
            whole.bounded_runs, 4,
            "T2 in seeds 1, 5, 9; K3 in seed 4 (10 violates it)"
        );
        assert_eq!(
            whole.bounded,
            vec![("K3".to_owned(), 1, Some(4)), ("T2".to_owned(), 3, Some(1))]
        );
    }

    #[test]
    fn printed_flags_name_the_consistency_as_typed() {
        let args = parse(&["--scenario", "cl-one", "--consistency", "quorum", "--try-lock"]).unwrap();
        assert_eq!(args.scenario.flags(), " --consistency quorum --try-lock");
    }
}
