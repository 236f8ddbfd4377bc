//! One command for a lock cassalock does not define: its model check under every fault the
//! model has, a simulator sweep under faults, and its row in the shape of cassalock's matrix.
//!
//! `cargo run --release -- [--seeds N] [--max-seconds S] [--scenario-file FILE]`
//!
//! A scenario file (the simulator's language, docs/own-scenario.md, with `lock = "cas-lease"`
//! and this lock's `settings`: `lease_s`, `max_wait_ms`) adds scenarios of your own to the sweep;
//! `scenarios.toml` beside this crate is one.
//! Exit 0: every check ran (violations are findings, printed); 2: bad usage; 3: a model check
//! hit its time, state or memory limit, so some verdicts are bounded by it.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

use cassalock::algo::family::FamilyLock;
use cassalock_models::check::{check, Limits, Verdict as ModelVerdict};
use cassalock_models::family::FamilyModel;
use cassalock_models::Fault;
use cassalock_sim::family::scenario::{fault_scenarios, FamilyScenario};
use cassalock_sim::family::scenario_file::{load, Named, ScenarioFileError};
use cassalock_sim::family::sim_lock::{LockKind, Simulated};
use cassalock_sim::family::{run_family, Verdict as SimVerdict};
use own_lock::scenarios::{lock_of_settings, sim_config};
use own_lock::CasLeaseLock;

/// Most seeds a sweep may run (each run is a fraction of a second of this machine's time).
const MAX_SEEDS: u64 = 10_000;
/// Most seconds one model check may take.
const MAX_MODEL_SECONDS: u64 = 600;

const USAGE: &str = "usage: own-lock [--seeds N (1..=10000, default 20)] [--max-seconds S (1..=600, default 60)] [--scenario-file FILE]";

struct Options {
    seeds: u64,
    max_seconds: u64,
    /// Scenarios of your own for this lock (TOML, the simulator's language).
    scenario_file: Option<String>,
}

/// Why the command line was not run.
enum Usage {
    /// `--help`: print the usage, exit 0.
    Help,
    /// Bad usage, in a sentence: exit 2.
    Bad(String),
}

fn parse(args: &[String]) -> Result<Options, Usage> {
    let mut options = Options {
        seeds: 20,
        max_seconds: 60,
        scenario_file: None,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        if flag == "--scenario-file" {
            let path = args
                .next()
                .ok_or_else(|| Usage::Bad("--scenario-file needs a file".to_owned()))?;
            options.scenario_file = Some(path.clone());
            continue;
        }
        let (slot, most) = match flag.as_str() {
            "--seeds" => (&mut options.seeds, MAX_SEEDS),
            "--max-seconds" => (&mut options.max_seconds, MAX_MODEL_SECONDS),
            "--help" | "-h" => return Err(Usage::Help),
            other => return Err(Usage::Bad(format!("unknown argument {other:?}"))),
        };
        let value = args
            .next()
            .ok_or_else(|| Usage::Bad(format!("{flag} needs a number")))?;
        *slot = value
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=most).contains(n))
            .ok_or_else(|| Usage::Bad(format!("{flag} {value:?}: give a whole number from 1 to {most}")))?;
    }
    Ok(options)
}

/// Each claim's verdict over `seeds` seeds of the scenario `build` makes for a seed: "violated
/// at seed S" or "no violation in N seeds", and the runs the simulator's bound stopped before
/// the claim was decided (never counted as a pass, always shown).
fn sweep(build: impl Fn(u64) -> FamilyScenario, seeds: u64) -> Vec<(&'static str, String)> {
    let mut first_violation: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut judged: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut bounded: BTreeMap<&'static str, u64> = BTreeMap::new();
    for seed in 0..seeds {
        let outcome = run_family(&build(seed), seed, false);
        for (claim, verdict) in &outcome.verdicts.claims {
            match verdict {
                SimVerdict::Violated(_) => {
                    first_violation.entry(claim.name()).or_insert(seed);
                }
                SimVerdict::NoViolation => {}
                SimVerdict::Bounded(_) => {
                    *bounded.entry(claim.name()).or_default() += 1;
                    continue;
                }
                SimVerdict::NotChecked => continue,
            }
            *judged.entry(claim.name()).or_default() += 1;
        }
    }
    let claims: std::collections::BTreeSet<&'static str> = judged.keys().chain(bounded.keys()).copied().collect();
    claims
        .into_iter()
        .map(|claim| {
            let runs = judged.get(claim).copied().unwrap_or(0);
            let mut mark = match first_violation.get(claim) {
                Some(seed) => format!("sim: violated at seed {seed}"),
                None => format!("sim: no violation in {runs} seeds"),
            };
            if let Some(cut) = bounded.get(claim) {
                mark.push_str(&format!(", bounded in {cut}"));
            }
            (claim, mark)
        })
        .collect()
}

/// Why a scenario file was not read; each says the file's name first.
enum FileError {
    Read(String, std::io::Error),
    TooLarge(String),
    Refused(ScenarioFileError),
}

/// The largest scenario file read (a scenario is a few hundred bytes).
const MAX_SCENARIO_FILE_BYTES: u64 = 1 << 20;

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::Read(path, error) => write!(f, "{path}: cannot read it: {error}"),
            FileError::TooLarge(path) => write!(
                f,
                "{path}: larger than {MAX_SCENARIO_FILE_BYTES} bytes; a scenario file holds a few scenarios"
            ),
            FileError::Refused(error) => write!(f, "{error}"),
        }
    }
}

/// The scenarios of the file at `path`, checked as the simulator checks its own.
fn read_own_scenarios(path: &str) -> Result<Vec<Named>, FileError> {
    use std::io::Read;
    let read = |error| FileError::Read(path.to_owned(), error);
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(read)?
        .take(MAX_SCENARIO_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(read)?;
    if text.len() as u64 > MAX_SCENARIO_FILE_BYTES {
        return Err(FileError::TooLarge(path.to_owned()));
    }
    load(CasLeaseLock::NAME, path, &text, lock_of_settings).map_err(FileError::Refused)
}

/// Each scenario of the file swept over `seeds` seeds, each claim's verdict, the claim the
/// scenario exists to test marked.
fn print_own_scenarios(path: &str, own: &[Named], seeds: u64) {
    println!("## Your scenarios ({path}, {seeds} seeds each)\n");
    for scenario in own {
        eprintln!("own-lock: simulator, {} ...", scenario.name);
        let built = scenario.build(0);
        println!("{}: {}", scenario.name, built.premise);
        for (claim, mark) in sweep(|seed| scenario.build(seed), seeds) {
            let expected = built.expect_violated == Some(claim);
            println!(
                "  {claim:<12} {mark}{}",
                if expected { " (the claim it exists to test)" } else { "" }
            );
        }
        println!();
    }
}

/// A cell of the row: the model's verdict and the sweep's.
#[derive(Default)]
struct Cell {
    /// How bad (violated 3, bounded 2, holds within the clock bound 1, holds 0) and the text.
    model: Option<(u8, String)>,
    sim: Option<String>,
}

/// The model's faults, and the simulator scenario that stands for each (by name).
const COLUMNS: [(Fault, &str); 5] = [
    (Fault::None, "contention"),
    (Fault::StoreFailure, "lost-messages"),
    (Fault::Pause, "pause"),
    (Fault::Restart, "server-restart"),
    (Fault::ServerClockJump, "server-clock-jump"),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(options) => options,
        Err(Usage::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(Usage::Bad(why)) => {
            eprintln!("own-lock: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Scenarios of your own, read and checked before anything runs.
    let own = match &options.scenario_file {
        None => Vec::new(),
        Some(path) => match read_own_scenarios(path) {
            Ok(named) => named,
            Err(why) => {
                eprintln!("own-lock: --scenario-file {why}");
                return ExitCode::from(2);
            }
        },
    };
    let mut row: BTreeMap<(String, usize), Cell> = BTreeMap::new();
    let mut limit_hit = false;

    println!("# cas-lease: a lease lock over one compare-and-set register (Memcached gets/cas)\n");
    println!("## Model check (2 clients, 1 acquisition each)\n");
    for (column, (fault, _)) in COLUMNS.iter().enumerate() {
        eprintln!("own-lock: model under {} ...", fault.name());
        let model = FamilyModel::<CasLeaseLock>::new(2, 1, false, *fault);
        let limits = Limits {
            max_seconds: options.max_seconds,
            ..Limits::default()
        };
        let report = check(&model, limits);
        println!(
            "{} ({} states{})",
            report.title,
            report.graph_states,
            if report.complete { "" } else { ", bounded" }
        );
        for result in &report.rows {
            println!("  {:<40} {}", result.property, result.verdict);
            let (rank, mark) = match &result.verdict {
                ModelVerdict::Violated => {
                    let steps = result.trace.as_ref().map_or(result.depth, |trace| trace.steps);
                    (3, format!("model: violated ({steps} steps)"))
                }
                ModelVerdict::Bounded(_) => (2, "model: bounded".to_owned()),
                ModelVerdict::HoldsWithinClockBound(ticks) => (1, format!("model: holds to tick {ticks}")),
                ModelVerdict::Holds => (0, "model: holds".to_owned()),
                ModelVerdict::Reachable | ModelVerdict::Unreachable => continue,
            };
            let cell = row.entry((result.claim.to_string(), column)).or_default();
            // A claim with several properties shows its worst verdict.
            if cell.model.as_ref().is_none_or(|(old_rank, _)| rank > *old_rank) {
                cell.model = Some((rank, mark));
            }
        }
        limit_hit |= report.stopped_by.is_some();
        println!();
    }

    println!("## Simulator sweep ({} seeds a scenario)\n", options.seeds);
    let lock: LockKind = Arc::new(Simulated::<CasLeaseLock>::new(sim_config(), 2000));
    for scenario in fault_scenarios(lock, 0) {
        if let Err(error) = scenario.check() {
            eprintln!("own-lock: {error}");
            return ExitCode::from(2);
        }
        let Some(column) = COLUMNS.iter().position(|(_, name)| *name == scenario.name) else {
            continue;
        };
        eprintln!("own-lock: simulator, {} ...", scenario.name);
        // The contention scenario draws its client count from the seed: rebuilt for each.
        let marks = sweep(
            |seed| {
                if scenario.name == "contention" {
                    fault_scenarios(scenario.lock.clone(), seed).swap_remove(0)
                } else {
                    scenario.clone()
                }
            },
            options.seeds,
        );
        println!("{}: {}", scenario.name, scenario.premise);
        for (claim, mark) in marks {
            println!("  {claim:<12} {mark}");
            row.entry((claim.to_string(), column)).or_default().sim = Some(mark);
        }
        println!();
    }

    if let Some(path) = &options.scenario_file {
        print_own_scenarios(path, &own, options.seeds);
    }

    println!("## Matrix row\n");
    print!("| claim |");
    for (fault, scenario) in COLUMNS {
        print!(" {} / {scenario} |", fault.name());
    }
    println!("\n|---|{}", "---|".repeat(COLUMNS.len()));
    let claims: Vec<String> = {
        let mut claims: Vec<String> = row.keys().map(|(claim, _)| claim.clone()).collect();
        claims.dedup();
        claims
    };
    for claim in claims {
        print!("| {claim} |");
        for column in 0..COLUMNS.len() {
            let text = match row.get(&(claim.clone(), column)) {
                None => "-".to_owned(),
                Some(cell) => [cell.model.as_ref().map(|(_, text)| text.as_str()), cell.sim.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            print!(" {text} |");
        }
        println!();
    }
    if limit_hit {
        eprintln!("own-lock: a model check hit a limit: its verdicts are bounded (raise --max-seconds)");
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}
