//! The other lock families' scenarios in the simulator (Redis SET NX, Redlock, Memcached,
//! Redisson, ZooKeeper, etcd: docs/simulator.md), over seeds (`cassalock sim
//! --scenario NAME`) or one seed in full (`cassalock replay --scenario NAME --seed N`); `sim` and
//! `replay` hand a family scenario here. `cassalock sim-family` is the older spelling, kept for
//! scripts (and `--scenario all`).
//!
//! Exit status: 0 no violation in any seed; 1 a claim was violated (the first violating seed
//! and the command that replays it are printed); 2 bad usage; 3 no violation, but some run hit
//! its time bound (T2 bounded).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::bail;
use cassalock::registry::Lock;
use cassalock_sim::family::scenario::{locks_with_scenarios, names, scenarios, scenarios_of, FamilyScenario, Named};
use cassalock_sim::family::scenario_file::Setting;
use cassalock_sim::family::sim_lock::Wakeup;
use cassalock_sim::family::{run_family, Claim, Verdict};
use cassalock_sim::ranges::SeedRange;
use clap::Args;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::shard::{Shard, ShardOut};
use crate::usage_error;

mod clock_knobs;
mod shard_file;

pub use clock_knobs::ClockKnobs;

pub use shard_file::merge;
use shard_file::{sweep_of, ShardFile, SHARD_FORMAT, SHARD_VERSION};

/// The most seeds one call runs, per scenario.
pub const MAX_SEEDS: u64 = 1_000_000;
/// Seeds per batch: tallied in seed order, at most a batch of outcomes held at once.
const BATCH: u64 = 256;

/// Shown under `sim-family --help`.
pub const HELP: &str =
    "Scenarios: `cassalock sim --scenario list` lists every one with its line of help (docs/simulator.md
says what each tests); for example redlock-gc-pause, set-nx-restart-no-persistence,
redisson-fair-barging, zookeeper-session-expiry-pause, etcd-lease-expires-while-waiting-11456.

Exit status:
  0  no violation in any seed
  1  a claim was violated (the first seed and its replay command are printed)
  2  bad usage: nothing ran
  3  no violation, but a run hit its time bound (T2 bounded)
With --shard K/N --shard-out FILE: 0 once the file is written (the verdict is `cassalock merge`'s),
2 bad usage, 6 the file could not be written after the run.

Wall-clock figures (seconds, seeds/min) go to stderr; stdout is the same bytes on any machine.";

/// Shown under `merge --help`.
pub const MERGE_HELP: &str = "Prints exactly the stdout of one `sim` run over the whole
sweep (wall-clock figures, on stderr there, are not printed). The files may come in any order.
A `sim` merge resolves the scenario again (a --scenario-file must be readable here) and replays
each claim's first failing seed, as `sim` does, for the line that records it.

Report shards (`report fairness|matrix|all ... --shard K/N --shard-out FILE`): writes into
--out DIR (default reports) the same bytes as the report command on one machine, and prints
what it prints. The matrix's simulator trace files are made here, by running each one failing
seed again.

`bench sim` shards: the whole bench's exact figures (acquisitions, simulated seconds, messages),
each shard's seeds per minute on its own machine, and the sweep's over the slowest shard.

Exit status:
  0, 1, 3  as the sweep on one machine: no violation, a claim violated, a run bounded;
     for a report, 3 when a wall-time cap stopped some search on the machine
     that ran it
  2  bad input: a file unreadable, not a shard file, of another version or another sweep,
     a shard given twice or missing (the message names the file or the shard)";

#[derive(Args, Debug)]
pub struct SimFamilyArgs {
    /// Scenario name, several separated by commas, or `all`.
    #[arg(long)]
    scenario: String,
    /// Seeds as A..B (B excluded) or A..=B.
    #[arg(long, default_value = "0..100", allow_hyphen_values = true)]
    seeds: SeedRange,
    /// Run this one seed only (with --trace: print every event).
    #[arg(long, conflicts_with = "seeds")]
    seed: Option<u64>,
    /// With --seed: print the run's whole trace (every request, reply and sleep too).
    #[arg(long, requires = "seed")]
    trace: bool,
    /// With --seed and one scenario: also write the run's event record into this file (JSON
    /// lines, docs/events.md): `cassalock judge FILE` reads it back and prints the same
    /// verdicts.
    #[arg(long, value_name = "FILE", requires = "seed")]
    events: Option<PathBuf>,
    /// With --seed and one scenario: also draw the run's timeline as SVG into this file.
    #[arg(long, value_name = "FILE", requires = "seed")]
    svg: Option<PathBuf>,
    /// Parallel runs.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Stop each run at this many simulated milliseconds instead of the scenario's bound
    /// (clients not done by then make T2 bounded, exit status 3).
    #[arg(long, value_name = "MS")]
    bound_ms: Option<u64>,
    /// The replica's lag behind the primary, simulated ms, instead of the scenario's (only
    /// for scenarios with a replica: 0 makes the failover lose nothing).
    #[arg(long, value_name = "MS")]
    replication_lag_ms: Option<u64>,
    /// Clients instead of the scenario's (1..=64).
    #[arg(long, value_name = "N")]
    clients: Option<usize>,
    /// Acquisitions per client instead of the scenario's (1..=10000).
    #[arg(long, value_name = "N")]
    acquisitions: Option<u32>,
    /// Set any key of the scenario (repeatable): KEY=VALUE, as its file would
    /// (`hold_ms=50`, `settings.ttl_ms=3000`, `lost_reply_ppm=10000`; docs/simulator.md).
    #[arg(long, value_name = "KEY=VALUE")]
    set: Vec<String>,
    #[command(flatten)]
    clocks: ClockKnobs,
    /// Run only shard K of N of the seeds (those with seed % N == K-1) and write a result
    /// file for `cassalock merge` (docs/sweeps.md); needs --shard-out.
    #[arg(long, value_name = "K/N", conflicts_with = "seed", requires = "shard_out")]
    shard: Option<Shard>,
    /// With --shard: the result file to write (JSON); the verdict comes from `cassalock merge`.
    #[arg(long, value_name = "FILE", requires = "shard")]
    shard_out: Option<PathBuf>,
}

/// What the command line changes in a scenario (and a replay command must repeat). A shard's
/// file keeps them under the same names (a file without `clients` or `acquisitions` was
/// written before they existed: the scenario's own).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Knobs {
    pub bound_ms: Option<u64>,
    pub replication_lag_ms: Option<u64>,
    /// Clients instead of the scenario's (the same flag as the row locks' scenarios').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<usize>,
    /// Acquisitions per client instead of the scenario's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquisitions: Option<u32>,
    /// Keys of the scenario set from the command line (`--set hold_ms=50`), as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
    /// The clients' clocks: offsets drawn from the seed, reading errors.
    #[serde(default, skip_serializing_if = "ClockKnobs::is_empty")]
    pub clocks: ClockKnobs,
}

impl Knobs {
    /// The flags that set these knobs, each with a leading space.
    fn flags(&self) -> String {
        let mut flags = String::new();
        if let Some(ms) = self.bound_ms {
            flags.push_str(&format!(" --bound-ms {ms}"));
        }
        if let Some(ms) = self.replication_lag_ms {
            flags.push_str(&format!(" --replication-lag-ms {ms}"));
        }
        if let Some(clients) = self.clients {
            flags.push_str(&format!(" --clients {clients}"));
        }
        if let Some(acquisitions) = self.acquisitions {
            flags.push_str(&format!(" --acquisitions {acquisitions}"));
        }
        flags.push_str(&self.clocks.flags());
        for setting in &self.set {
            flags.push_str(&format!(" --set {}", crate::sim::shell_word(setting)));
        }
        flags
    }

    /// The scenario `name` with the `--set` keys laid over it, resolved once per process and
    /// kept (a sweep builds it for every seed).
    fn resolved(&self, name: &str) -> anyhow::Result<Named> {
        type Cache = std::sync::Mutex<std::collections::BTreeMap<(String, Vec<String>), Named>>;
        static RESOLVED: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
        let key = (name.to_owned(), self.set.clone());
        let cache = RESOLVED.get_or_init(Cache::default);
        if let Some(named) = cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            return Ok(named.clone());
        }
        let Some(named) = scenarios().find(|named| named.name == name) else {
            bail!("no scenario named {name:?}");
        };
        let settings = self
            .set
            .iter()
            .map(|text| text.parse::<Setting>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| anyhow::anyhow!("--set {error}"))?;
        let resolved = named
            .with(&settings)
            .map_err(|error| anyhow::anyhow!("{name}: {error}"))?;
        cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, resolved.clone());
        Ok(resolved)
    }

    /// Knobs scenario `name` cannot take, said in a sentence.
    fn refused_by(&self, name: &str) -> Option<String> {
        let built = match self.resolved(name) {
            Ok(named) => named.build(0),
            Err(error) => return Some(format!("{error:#}")),
        };
        if let Some(refused) = self.clocks.refused() {
            return Some(refused);
        }
        if self.replication_lag_ms.is_some() && built.replication_lag_ms.is_none() {
            return Some(format!(
                "--replication-lag-ms applies to scenarios with a replica (set-nx-failover-after-acquire, redisson-failover-during-renewal), not {name}"
            ));
        }
        if self.clients.is_none() && self.acquisitions.is_none() {
            return None;
        }
        // The simulator's own check of the resized scenario: counts in range, a T2-free
        // scenario's one client, every fault on a client and an acquisition the run has.
        let resized = scenario(name, 0, self);
        resized.check().err().map(|error| {
            let flags = Knobs {
                bound_ms: None,
                replication_lag_ms: None,
                set: Vec::new(),
                ..self.clone()
            }
            .flags();
            format!("{}: {name}: {error}", flags.trim())
        })
    }
}

/// The longest bound `--bound-ms` accepts: one simulated hour.
pub const MAX_BOUND_MS: u64 = cassalock_sim::family::scenario::MAX_SCENARIO_MS;

/// The scenario `name` on `seed`, with the command line's knobs.
fn scenario(name: &str, seed: u64, knobs: &Knobs) -> FamilyScenario {
    let mut scenario = knobs.resolved(name).expect("checked by refused_by").build(seed);
    if let Some(bound_ms) = knobs.bound_ms {
        scenario.bound_ms = bound_ms;
    }
    if let Some(lag_ms) = knobs.replication_lag_ms {
        debug_assert!(scenario.replication_lag_ms.is_some(), "checked by run");
        scenario.replication_lag_ms = Some(lag_ms);
    }
    if let Some(clients) = knobs.clients {
        scenario.clients = clients;
    }
    if let Some(acquisitions) = knobs.acquisitions {
        scenario.acquisitions = acquisitions;
    }
    knobs.clocks.apply(&mut scenario, seed);
    scenario
}

/// The command that replays one seed of one scenario with its trace.
pub fn replay_command(scenario: &str, seed: u64, knobs: &Knobs) -> String {
    let file = cassalock_sim::family::scenario::file_of(scenario)
        .map(|path| format!(" --scenario-file {}", crate::sim::shell_word(path)))
        .unwrap_or_default();
    cassalock_sim::family::scenario::replay_command(scenario, seed, &format!("{file}{}", knobs.flags()))
}

fn scenarios_named(text: &str) -> anyhow::Result<Vec<&'static str>> {
    let mut chosen = Vec::new();
    for name in text.split(',').map(str::trim) {
        if name == "all" {
            for every in names() {
                if !chosen.contains(&every) {
                    chosen.push(every);
                }
            }
            continue;
        }
        if let Some(lock) = lock_with_scenarios(name) {
            for named in scenarios_of(lock) {
                if !chosen.contains(&named.name) {
                    chosen.push(named.name);
                }
            }
            continue;
        }
        match scenarios().find(|named| named.name == name) {
            Some(named) if !chosen.contains(&named.name) => chosen.push(named.name),
            Some(_) => {}
            None => {
                let list: Vec<String> = scenarios()
                    .map(|named| format!("  {:<40} {}", named.name, named.help))
                    .collect();
                bail!(
                    "no scenario named {name:?}; give one of these (or several, comma-separated), a lock's name for all of its ({}), or all:\n{}",
                    lock_names_with_scenarios(),
                    list.join("\n")
                );
            }
        }
    }
    Ok(chosen)
}

/// Whether `text` names only the families' scenarios (one, or several comma-separated, or a
/// lock whose scenarios they are): `sim` and `replay` hand such a run to this simulator.
pub fn names_family_scenarios(text: &str) -> bool {
    !text.is_empty()
        && text
            .split(',')
            .map(str::trim)
            .all(|name| lock_with_scenarios(name).is_some() || scenarios().any(|named| named.name == name))
}

/// The lock named `name` in the registry, if the simulator has scenarios for it.
fn lock_with_scenarios(name: &str) -> Option<Lock> {
    Lock::named(name).filter(|lock| scenarios_of(*lock).next().is_some())
}

/// The names of the locks with scenarios, comma-separated, in the registry's order.
pub fn lock_names_with_scenarios() -> String {
    locks_with_scenarios().map(Lock::name).collect::<Vec<_>>().join(", ")
}

/// `sim --scenario NAMES`: a sweep of the families' scenarios.
pub fn sweep_scenarios(
    scenario: &str,
    seeds: SeedRange,
    jobs: usize,
    knobs: Knobs,
    shard: Option<Shard>,
    shard_out: Option<PathBuf>,
) -> ExitCode {
    run(SimFamilyArgs {
        scenario: scenario.to_owned(),
        seeds,
        seed: None,
        trace: false,
        events: None,
        svg: None,
        jobs,
        bound_ms: knobs.bound_ms,
        replication_lag_ms: knobs.replication_lag_ms,
        clients: knobs.clients,
        acquisitions: knobs.acquisitions,
        set: knobs.set,
        clocks: knobs.clocks,
        shard,
        shard_out,
    })
}

/// `replay --scenario NAME --seed N`: one seed of a family scenario in full (`trace`: every
/// request, reply and sleep too).
pub fn replay_scenario(
    scenario: &str,
    seed: u64,
    trace: bool,
    events: Option<&Path>,
    svg: Option<&Path>,
    knobs: Knobs,
) -> ExitCode {
    run(SimFamilyArgs {
        scenario: scenario.to_owned(),
        seeds: SeedRange::new(seed..=seed).expect("one seed is a range"),
        seed: Some(seed),
        trace,
        events: events.map(Path::to_path_buf),
        svg: svg.map(Path::to_path_buf),
        jobs: 1,
        bound_ms: knobs.bound_ms,
        replication_lag_ms: knobs.replication_lag_ms,
        clients: knobs.clients,
        acquisitions: knobs.acquisitions,
        set: knobs.set,
        clocks: knobs.clocks,
        shard: None,
        shard_out: None,
    })
}

pub fn run(args: SimFamilyArgs) -> ExitCode {
    let chosen = match scenarios_named(&args.scenario) {
        Ok(chosen) => chosen,
        Err(error) => return usage_error(&format!("{error:#}")),
    };
    if args.jobs == 0 || args.jobs > 256 {
        return usage_error(&format!("--jobs {}: give 1 to 256", args.jobs));
    }
    if args.trace && args.seed.is_none() {
        return usage_error("--trace prints one run's trace: give --seed N (a sweep prints verdicts only)");
    }
    if args.bound_ms.is_some_and(|ms| ms == 0 || ms > MAX_BOUND_MS) {
        return usage_error(&format!(
            "--bound-ms {}: give 1 to {MAX_BOUND_MS} (simulated milliseconds)",
            args.bound_ms.unwrap_or_default()
        ));
    }
    if let Some(lag_ms) = args.replication_lag_ms {
        if lag_ms > MAX_BOUND_MS {
            return usage_error(&format!("--replication-lag-ms {lag_ms}: give 0 to {MAX_BOUND_MS}"));
        }
    }
    let knobs = Knobs {
        bound_ms: args.bound_ms,
        replication_lag_ms: args.replication_lag_ms,
        clients: args.clients,
        acquisitions: args.acquisitions,
        set: args.set.clone(),
        clocks: args.clocks.clone(),
    };
    if let Some(refused) = chosen.iter().find_map(|name| knobs.refused_by(name)) {
        return usage_error(&refused);
    }
    if let Some(seed) = args.seed {
        if (args.events.is_some() || args.svg.is_some()) && chosen.len() != 1 {
            return usage_error(&format!(
                "--events and --svg write one run's record or timeline: name one scenario, not {}",
                chosen.len()
            ));
        }
        let files = RunFiles {
            events: args.events.as_deref(),
            svg: args.svg.as_deref(),
        };
        return one_seed(&chosen, seed, args.trace, files, &knobs);
    }
    let shard = args.shard.unwrap_or(Shard::new(1, 1).expect("1/1 is a shard"));
    let runs = shard.count(&args.seeds);
    if runs > u128::from(MAX_SEEDS) {
        return usage_error(&format!(
            "--seeds {}{} asks for {runs} runs per scenario; at most {MAX_SEEDS} per call (split a larger sweep with --shard K/N)",
            args.seeds,
            args.shard.map(|shard| format!(" --shard {shard}")).unwrap_or_default(),
        ));
    }
    // Open the result file before running, so a bad path costs nothing.
    let out = match args.shard_out.as_deref().map(ShardOut::create).transpose() {
        Ok(out) => out,
        Err(error) => return usage_error(&format!("{error:#}")),
    };
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(args.jobs).build() {
        Ok(pool) => pool,
        Err(error) => return usage_error(&format!("--jobs {}: {error}", args.jobs)),
    };
    let mut results = Vec::new();
    for name in &chosen {
        results.push(sweep(name, &args.seeds, shard, &pool, &knobs));
    }
    let Some(out) = out else {
        let (mut violated, mut bounded) = (false, false);
        for result in &results {
            let (v, b) = print_summary(&args.seeds, &knobs, result);
            violated |= v;
            bounded |= b;
        }
        return exit_status(violated, bounded);
    };
    let file = ShardFile {
        format: SHARD_FORMAT.to_owned(),
        version: SHARD_VERSION,
        scenarios: chosen.iter().map(|name| (*name).to_owned()).collect(),
        seeds: args.seeds.to_string(),
        knobs,
        k: shard.k(),
        n: shard.n(),
        max_listed_seeds: MAX_LISTED_SEEDS,
        results,
    };
    let path = out.path().to_owned();
    if let Err(code) = out.write(&file) {
        return code;
    }
    println!(
        "shard {shard} of {}: {runs} seeds per scenario run, written to {}; combine every shard with `cassalock merge FILE...`",
        sweep_of(&file),
        path.display()
    );
    ExitCode::SUCCESS
}

fn describe(scenario: &FamilyScenario) {
    println!("{} ({}): {}", scenario.name, scenario.lock.name(), scenario.premise);
}

/// The files a one-seed run writes: its event record, its timeline.
struct RunFiles<'a> {
    events: Option<&'a std::path::Path>,
    svg: Option<&'a std::path::Path>,
}

fn one_seed(chosen: &[&'static str], seed: u64, trace: bool, files: RunFiles, knobs: &Knobs) -> ExitCode {
    let mut violated = false;
    let mut bounded = false;
    for name in chosen {
        let scenario = scenario(name, seed, knobs);
        describe(&scenario);
        println!("seed {seed}, {} client(s)", scenario.clients);
        let outcome = run_family(&scenario, seed, trace);
        if trace {
            print!("{}", outcome.trace_text());
        }
        for (claim, verdict) in &outcome.verdicts.claims {
            println!("  {:<12} {verdict}", claim.name());
        }
        if reports_handovers(&scenario) {
            match outcome.longest_handover {
                Some((gap, at)) => println!(
                    "  longest handover: {:.3} ms, from the release at {:.3} ms to the next acquisition",
                    gap.as_secs_f64() * 1000.0,
                    at.as_secs_f64() * 1000.0
                ),
                None => println!("  longest handover: none (no release was followed by an acquisition)"),
            }
        }
        println!(
            "  simulated {:.3} s, trace hash {:016x}",
            outcome.sim_time.as_secs_f64(),
            outcome.trace_hash
        );
        violated |= outcome.verdicts.any_violated();
        bounded |= outcome.verdicts.any_bounded();
        if let Some(path) = files.svg {
            let judgement = cassalock_judge::Judgement::Families(outcome.verdicts.clone());
            let picture = cassalock_sim::timeline::Picture::new(&outcome.header, &outcome.events, &judgement);
            match cassalock_sim::timeline::write_record_svg(&picture, path) {
                Ok(()) => println!("  timeline written to {}", path.display()),
                Err(error) => {
                    eprintln!("error: --svg {}: {error}", path.display());
                    return crate::output::failed_output(ExitCode::from(u8::from(violated)));
                }
            }
        }
        if let Some(path) = files.events {
            let mut header = outcome.header.clone();
            header.replay = Some(format!(
                "cassalock replay --scenario {name} --seed {seed}{}",
                knobs.flags()
            ));
            let written = std::fs::File::create(path).and_then(|file| {
                let mut out = std::io::BufWriter::new(file);
                cassalock_judge::event::write(&mut out, &header, &outcome.events)?;
                out.into_inner()
                    .map_err(std::io::IntoInnerError::into_error)?
                    .sync_all()
            });
            match written {
                Ok(()) => println!(
                    "  event record written to {} ({} events)",
                    path.display(),
                    outcome.events.len()
                ),
                Err(error) => {
                    eprintln!("error: could not write the event record {}: {error}", path.display());
                    return crate::output::failed_output(ExitCode::from(u8::from(violated)));
                }
            }
        }
    }
    if violated {
        ExitCode::from(1)
    } else if bounded {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

/// Whether a scenario's runs report their longest handover: where waiters sleep until
/// notified (Redisson), what a lost unlock message costs.
fn reports_handovers(scenario: &FamilyScenario) -> bool {
    scenario.lock.wakeup() == Wakeup::UnlockMessage
}

/// One seed's verdicts, simulated time and longest handover (`None`: the run panicked).
type SeedResult = Option<(Vec<(Claim, Verdict)>, Duration, Option<Duration>)>;

/// The most seeds a result keeps per list (violated, bounded, panicked, per claim); the rest
/// are only counted, and a shard file says how many were left out.
pub const MAX_LISTED_SEEDS: usize = 1_000;

/// Seeds of one kind: how many, and the smallest [`MAX_LISTED_SEEDS`] of them, sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct SeedList {
    count: u64,
    seeds: Vec<u64>,
    /// `count - seeds.len()`: seeds counted but not listed (the list's limit was hit).
    not_listed: u64,
}

impl SeedList {
    /// Count `seed`, larger than every seed counted before.
    fn push(&mut self, seed: u64) {
        self.count += 1;
        if self.seeds.len() < MAX_LISTED_SEEDS {
            self.seeds.push(seed);
        } else {
            self.not_listed += 1;
        }
    }

    /// Count another shard's seeds (none in common with these).
    fn absorb(&mut self, other: &SeedList) {
        self.count += other.count;
        self.seeds.extend_from_slice(&other.seeds);
        self.seeds.sort_unstable();
        self.seeds.truncate(MAX_LISTED_SEEDS);
        self.not_listed = self.count - self.seeds.len() as u64;
    }

    /// The smallest seed counted (every list keeps its smallest seeds).
    fn first(&self) -> Option<u64> {
        self.seeds.first().copied()
    }
}

/// One claim over the seeds run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ClaimResult {
    claim: String,
    /// Seeds with a verdict (no violation or violated).
    checked: u64,
    violated: SeedList,
    /// The smallest violating seed's message.
    first_violation: Option<String>,
    bounded: SeedList,
}

/// The longest handover: simulated nanoseconds, and the first seed with that longest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Handover {
    nanos: u64,
    seed: u64,
}

/// One scenario's sweep: everything its printed summary needs, accumulated seed by seed in
/// a fixed size whatever the number of seeds (a whole range, a shard, or shards merged).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ScenarioResult {
    scenario: String,
    seeds_run: u64,
    claims: Vec<ClaimResult>,
    panicked: SeedList,
    /// Simulated time over every seed run, nanoseconds (exact, so shards add up).
    sim_nanos: u128,
    longest_handover: Option<Handover>,
}

impl ScenarioResult {
    fn new(name: &str) -> ScenarioResult {
        ScenarioResult {
            scenario: name.to_owned(),
            seeds_run: 0,
            claims: Claim::ALL
                .into_iter()
                .map(|claim| ClaimResult {
                    claim: claim.name().to_owned(),
                    checked: 0,
                    violated: SeedList::default(),
                    first_violation: None,
                    bounded: SeedList::default(),
                })
                .collect(),
            panicked: SeedList::default(),
            sim_nanos: 0,
            longest_handover: None,
        }
    }

    /// Count one seed's outcome; seeds come in increasing order.
    fn record(&mut self, seed: u64, outcome: SeedResult) {
        self.seeds_run += 1;
        let Some((claims, sim_time, handover)) = outcome else {
            self.panicked.push(seed);
            return;
        };
        self.sim_nanos += sim_time.as_nanos();
        if let Some(gap) = handover {
            let nanos = u64::try_from(gap.as_nanos()).unwrap_or(u64::MAX);
            self.absorb_handover(Some(Handover { nanos, seed }));
        }
        for ((claim, verdict), result) in claims.into_iter().zip(self.claims.iter_mut()) {
            debug_assert_eq!(claim.name(), result.claim);
            match verdict {
                Verdict::NoViolation => result.checked += 1,
                Verdict::Violated(why) => {
                    result.checked += 1;
                    if result.violated.count == 0 {
                        result.first_violation = Some(why);
                    }
                    result.violated.push(seed);
                }
                Verdict::Bounded(_) => result.bounded.push(seed),
                Verdict::NotChecked => {}
            }
        }
    }

    /// Keep the longer handover; of equal ones, the smaller seed's.
    fn absorb_handover(&mut self, other: Option<Handover>) {
        if let Some(other) = other {
            if self
                .longest_handover
                .is_none_or(|worst| (other.nanos, u64::MAX - other.seed) > (worst.nanos, u64::MAX - worst.seed))
            {
                self.longest_handover = Some(other);
            }
        }
    }

    /// Add another shard's result for the same scenario (no seed in common).
    fn absorb(&mut self, other: &ScenarioResult) {
        self.seeds_run += other.seeds_run;
        self.panicked.absorb(&other.panicked);
        self.sim_nanos += other.sim_nanos;
        self.absorb_handover(other.longest_handover);
        for (mine, theirs) in self.claims.iter_mut().zip(&other.claims) {
            mine.checked += theirs.checked;
            let theirs_first = theirs.violated.first();
            if theirs_first.is_some() && mine.violated.first().is_none_or(|seed| theirs_first < Some(seed)) {
                mine.first_violation.clone_from(&theirs.first_violation);
            }
            mine.violated.absorb(&theirs.violated);
            mine.bounded.absorb(&theirs.bounded);
        }
    }
}

/// Run one scenario on the seeds of `range` in `shard`, in batches, seed order kept.
fn sweep(name: &str, range: &SeedRange, shard: Shard, pool: &rayon::ThreadPool, knobs: &Knobs) -> ScenarioResult {
    let total = shard.count(range);
    let started = Instant::now();
    let mut result = ScenarioResult::new(name);
    let mut seeds = shard.seeds(range).peekable();
    while seeds.peek().is_some() {
        let batch_seeds: Vec<u64> = seeds.by_ref().take(BATCH as usize).collect();
        let outcomes: Vec<SeedResult> = pool.install(|| {
            batch_seeds
                .par_iter()
                .map(|&seed| {
                    let scenario = scenario(name, seed, knobs);
                    std::panic::catch_unwind(|| {
                        let outcome = run_family(&scenario, seed, false);
                        (
                            outcome.verdicts.claims,
                            outcome.sim_time,
                            outcome.longest_handover.map(|(gap, _)| gap),
                        )
                    })
                    .ok()
                })
                .collect()
        });
        for (seed, outcome) in batch_seeds.iter().zip(outcomes) {
            result.record(*seed, outcome);
        }
        if total > u128::from(BATCH) {
            eprintln!(
                "  {name}: {}/{total} seeds, {:.1} s",
                result.seeds_run,
                started.elapsed().as_secs_f64()
            );
        }
    }
    // Wall-clock figures go to stderr: stdout is the same bytes on any machine, and for
    // `cassalock merge` of shards (docs/sweeps.md).
    let elapsed = started.elapsed().as_secs_f64();
    eprintln!(
        "  {name}: {total} seeds in {elapsed:.1} s ({:.0} seeds/min)",
        total as f64 / elapsed.max(1e-9) * 60.0
    );
    result
}

/// Print one scenario's summary over the whole `range`; returns (some claim violated, some
/// run bounded). A single run and a merge of shards both print through here.
fn print_summary(range: &SeedRange, knobs: &Knobs, result: &ScenarioResult) -> (bool, bool) {
    let name = result.scenario.as_str();
    let first_scenario = scenario(name, range.first(), knobs);
    describe(&first_scenario);
    let flags = knobs.flags();
    if !flags.is_empty() {
        // What the command line changed, so that a sweep without a violation (and no replay
        // command) still says what it ran.
        println!("  with{flags}");
    }
    let total = range.len();
    let mut violated = false;
    let mut bounded = false;
    for tally in &result.claims {
        let line = if let (Some(seed), Some(why)) = (tally.violated.first(), &tally.first_violation) {
            violated = true;
            format!(
                "VIOLATED in {} of {total} seeds; first seed {seed}: {why}\n  {:<12}   replay: {}",
                tally.violated.count,
                "",
                replay_command(name, seed, knobs)
            )
        } else if tally.checked == 0 && tally.bounded.count == 0 {
            "not checked in this scenario".to_owned()
        } else if let Some(seed) = tally.bounded.first() {
            bounded = true;
            format!(
                "no violation in {} seeds; bounded in {} (first seed {seed}: replay: {})",
                tally.checked,
                tally.bounded.count,
                replay_command(name, seed, knobs)
            )
        } else {
            format!("no violation in {} seeds", tally.checked)
        };
        println!("  {:<12} {line}", tally.claim);
    }
    if reports_handovers(&first_scenario) {
        match result.longest_handover {
            Some(Handover { nanos, seed }) => println!(
                "  longest handover (a release to the next acquisition): {:.3} ms, seed {seed}: replay: {}",
                Duration::from_nanos(nanos).as_secs_f64() * 1000.0,
                replay_command(name, seed, knobs)
            ),
            None => println!("  longest handover: none in any seed"),
        }
    }
    if let Some(seed) = result.panicked.first() {
        violated = true;
        println!(
            "  a run panicked (a harness bug), first seed {seed}: replay: {}",
            replay_command(name, seed, knobs)
        );
    }
    println!("  {total} seeds, {:.0} simulated s", result.sim_nanos as f64 / 1e9);
    (violated, bounded)
}

/// The exit status of a sweep: 1 violated, 3 bounded, else 0.
fn exit_status(violated: bool, bounded: bool) -> ExitCode {
    if violated {
        ExitCode::from(1)
    } else if bounded {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_are_checked_listed_and_deduplicated() {
        assert_eq!(scenarios_named("all").unwrap().len(), scenarios().count());
        assert_eq!(
            scenarios_named("memcached-pause, redlock-gc-pause,memcached-pause").unwrap(),
            vec!["memcached-pause", "redlock-gc-pause"]
        );
        let error = scenarios_named("set-nx-contention,nope").unwrap_err().to_string();
        assert!(error.contains("\"nope\""), "{error}");
        for named in scenarios() {
            assert!(error.contains(named.name), "{error}");
        }
    }

    #[test]
    fn the_replay_command_parses_back_to_one_seed_with_its_trace() {
        use clap::Parser;
        let knobs = Knobs {
            bound_ms: Some(900),
            replication_lag_ms: Some(0),
            clients: Some(3),
            acquisitions: Some(2),
            set: vec!["hold_ms=50".to_owned(), "start_ms=[0, 100]".to_owned()],
            clocks: ClockKnobs {
                clock_offset_ms: Some(250),
                clock_error_ms: None,
                clock_error_tail_ms: Some(40),
                clock_error_tail_percent: Some(2.5),
            },
        };
        let line = replay_command("set-nx-failover-after-acquire", 17, &knobs);
        let words = shlex::split(&line).expect("a shell line");
        let crate::Command::Replay(parsed) = crate::Cli::try_parse_from(words).unwrap().command else {
            panic!("{line}: not a replay")
        };
        assert_eq!(
            parsed.scenario.scenario.as_deref(),
            Some("set-nx-failover-after-acquire")
        );
        assert_eq!(parsed.seed, 17);
        assert!(!parsed.summary, "the whole trace");
        assert_eq!(parsed.bound_ms, Some(900));
        assert_eq!(parsed.replication_lag_ms, Some(0));
        assert_eq!(parsed.scenario.clients, Some(3));
        assert_eq!(parsed.scenario.acquisitions, Some(2));
        assert_eq!(parsed.scenario.set, knobs.set);
        assert_eq!(parsed.scenario.clock_offset_ms, Some(250));
        assert_eq!(parsed.scenario.clock_error_ms, None);
        assert_eq!(parsed.scenario.clock_error_tail_ms, Some(40));
        assert_eq!(parsed.scenario.clock_error_tail_percent, Some(2.5));
    }

    #[test]
    fn seed_lists_keep_their_smallest_seeds_up_to_the_limit_and_count_the_rest() {
        let limit = MAX_LISTED_SEEDS as u64;
        let (mut evens, mut odds) = (SeedList::default(), SeedList::default());
        for seed in 0..(limit + 500) {
            evens.push(seed * 2);
            odds.push(seed * 2 + 1);
        }
        assert_eq!(
            (evens.count, evens.seeds.len(), evens.not_listed),
            (limit + 500, MAX_LISTED_SEEDS, 500)
        );
        evens.absorb(&odds);
        assert_eq!(evens.count, 2 * limit + 1000);
        assert_eq!(evens.seeds, (0..limit).collect::<Vec<_>>());
        assert_eq!(evens.not_listed, limit + 1000);
        assert_eq!(evens.first(), Some(0));
    }

    #[test]
    fn a_merge_keeps_the_smallest_violating_seeds_message_and_the_first_longest_handover() {
        let mut whole = ScenarioResult::new("set-nx-contention");
        let mut shards = [
            ScenarioResult::new("set-nx-contention"),
            ScenarioResult::new("set-nx-contention"),
        ];
        let claims = |violated: bool| {
            Claim::ALL
                .into_iter()
                .map(|claim| {
                    let verdict = if violated && claim == Claim::T1Belief {
                        Verdict::Violated(format!("why {claim:?}"))
                    } else {
                        Verdict::NoViolation
                    };
                    (claim, verdict)
                })
                .collect::<Vec<_>>()
        };
        for seed in 0..10u64 {
            let violated = seed % 3 == 1;
            let outcome = Some((
                claims(violated)
                    .into_iter()
                    .map(|(claim, verdict)| match verdict {
                        Verdict::Violated(_) => (claim, Verdict::Violated(format!("seed {seed}"))),
                        other => (claim, other),
                    })
                    .collect(),
                Duration::from_millis(seed * 7 + 1),
                Some(Duration::from_millis(seed % 4)),
            ));
            whole.record(seed, outcome.clone());
            shards[(seed % 2) as usize].record(seed, outcome);
        }
        // Merged in either order, the shards give the whole run's result.
        for order in [[0, 1], [1, 0]] {
            let mut merged = ScenarioResult::new("set-nx-contention");
            for index in order {
                merged.absorb(&shards[index]);
            }
            assert_eq!(merged, whole);
        }
        assert_eq!(whole.claims[0].first_violation.as_deref(), Some("seed 1"));
        assert_eq!(
            whole.longest_handover,
            Some(Handover {
                nanos: 3_000_000,
                seed: 3
            })
        );
    }

    #[test]
    fn a_result_file_keeps_simulated_time_past_u64_nanoseconds() {
        let mut result = ScenarioResult::new("set-nx-contention");
        result.sim_nanos = u128::from(u64::MAX) * 4 + 3;
        let text = serde_json::to_string(&result).unwrap();
        let back: ScenarioResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, result);
    }
}
