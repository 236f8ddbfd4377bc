//! `cassalock sim`: the command itself. A row locks' scenario is checked, swept over its seeds
//! per algorithm and printed (or written as a shard's file); a family's is handed to
//! `family_sim`; `--scenario list` lists them all.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use cassalock::driver::Algorithm;
use cassalock_judge::text::count;
use cassalock_sim::scenario::{build, SimOptions};

use super::args::{family_knobs, family_scenarios, row_scenarios, SimArgs};
use super::offsets::sweep_offsets;
use super::print::{print_tally, Ended};
use super::scenario_args::Resolved;
use super::seeds::{run_seeds, MAX_SEEDS};
use super::shard_file::{sweep_command, SimShardFile, SHARD_FORMAT, SHARD_VERSION};
use super::tally::Tally;
use crate::shard::{Shard, ShardOut};

/// `sim --scenario list`: every scenario, each with its line of help.
fn list_scenarios() -> ExitCode {
    println!("The row locks' scenarios (old, queue; --algorithm, the knobs):");
    for scenario in cassalock_sim::scenario::SCENARIOS {
        println!("  {:<40} {} ({})", scenario.name, scenario.setup, scenario.expected);
    }
    println!("\nThe other families' scenarios (--clients, --acquisitions, --clock-offset-ms, --clock-error-ms, --clock-error-tail-ms with --clock-error-tail-percent, --bound-ms, --replication-lag-ms):");
    for named in cassalock_sim::family::scenarios() {
        println!("  {:<40} {}", named.name, named.help);
    }
    ExitCode::SUCCESS
}

/// A row locks' sweep, checked and ready to run: its scenario and options, the runs per
/// algorithm, the worker threads.
struct Ready {
    scenario: String,
    options: SimOptions,
    shard: Shard,
    runs: u128,
    pool: rayon::ThreadPool,
}

pub fn sim(args: SimArgs) -> ExitCode {
    match args.scenario.scenario.as_deref() {
        Some("list") => return list_scenarios(),
        Some(ALL) if args.scenario.scenario_file.is_none() => return sweep_everything(args),
        _ => {}
    }
    match family_scenarios(&args.scenario) {
        Ok(Some(names)) => return family_sweep(&args, &names),
        Ok(None) => {}
        Err(error) => return crate::usage_error(&format!("{error:#}")),
    }
    match args.scenario.scenario.as_deref() {
        Some(list) if list.contains(',') && args.scenario.scenario_file.is_none() => {
            let list = list.to_owned();
            sweep_list(args, &list)
        }
        _ if args.scenario.scenario_file.is_some() => sweep_row_file(args),
        _ => row_sweep(&args),
    }
}

/// `sim --scenario-file FILE` of a row lock: each of its scenarios named by `--scenario` (one,
/// several comma-separated, or all of the file's without it) swept in turn; the exit status is
/// the worst.
fn sweep_row_file(mut args: SimArgs) -> ExitCode {
    let names = match args.scenario.scenario.clone() {
        Some(names) => names,
        None => match args.scenario.file_scenario_names() {
            Ok(names) => names,
            Err(error) => return crate::usage_error(&format!("{error:#}")),
        },
    };
    let mut worst = ExitCode::SUCCESS;
    for name in names.split(',').map(str::trim) {
        args.scenario.scenario = Some(name.to_owned());
        let code = row_sweep(&args);
        if code == ExitCode::from(2) {
            return code;
        }
        worst = worse(worst, code);
    }
    worst
}

/// `--scenario A,B,...` naming row locks' scenarios (and maybe other locks' too): each row
/// scenario swept in turn with the flags given, then the others' in one family sweep; the exit
/// status is the worst. A part that names nothing is refused before anything runs.
fn sweep_list(mut args: SimArgs, list: &str) -> ExitCode {
    let rows: Vec<&str> = cassalock_sim::scenario::SCENARIOS
        .iter()
        .map(|scenario| scenario.name)
        .collect();
    let (mut row_parts, mut family_parts) = (Vec::new(), Vec::new());
    for part in list.split(',').map(str::trim) {
        if rows.contains(&part) {
            if !row_parts.contains(&part) {
                row_parts.push(part);
            }
        } else if part == ALL {
            return crate::usage_error(&format!(
                "--scenario {list}: all is every scenario of every lock already; give it alone"
            ));
        } else if crate::family_sim::names_family_scenarios(part) {
            family_parts.push(part);
        } else {
            return crate::usage_error(&format!(
                "--scenario {list}: {part:?} is not a scenario; the row locks' are {rows}, a lock's name stands for all of its ({locks}), `cassalock sim --scenario list` lists every one",
                rows = row_scenarios(),
                locks = crate::family_sim::lock_names_with_scenarios(),
            ));
        }
    }
    if args.shard.is_some() {
        return crate::usage_error(&format!(
            "--shard with --scenario {list}: a shard's file holds one scenario's sweep; shard each scenario on its own"
        ));
    }
    if !family_parts.is_empty() {
        // Each kind's knobs would be refused by the other's sweep: name what to split.
        if let Some(flag) = args.row_lock_flag() {
            return crate::usage_error(&format!(
                "{flag} with --scenario {list}: it applies to the row locks' scenarios, not to {}; sweep them in two calls",
                family_parts.join(",")
            ));
        }
        if !args.scenario.set.is_empty() && !row_parts.is_empty() {
            return crate::usage_error(&format!(
                "--set with --scenario {list}: the row locks' scenarios ({}) and the others' ({}) read different keys; sweep them in two calls",
                row_parts.join(","),
                family_parts.join(",")
            ));
        }
        let family_flag = [
            (args.bound_ms.is_some(), "--bound-ms"),
            (args.replication_lag_ms.is_some(), "--replication-lag-ms"),
        ]
        .into_iter()
        .find_map(|(on, flag)| on.then_some(flag));
        if let (Some(flag), false) = (family_flag, row_parts.is_empty()) {
            return crate::usage_error(&format!(
                "{flag} with --scenario {list}: it applies to the other locks' scenarios, not to {}; sweep them in two calls",
                row_parts.join(",")
            ));
        }
    }
    let mut worst = ExitCode::SUCCESS;
    for part in row_parts {
        args.scenario.scenario = Some(part.to_owned());
        let code = row_sweep(&args);
        if code == ExitCode::from(2) {
            return code;
        }
        worst = worse(worst, code);
    }
    if family_parts.is_empty() {
        return worst;
    }
    let names = family_parts.join(",");
    args.scenario.scenario = Some(names.clone());
    worse(worst, family_sweep(&args, &names))
}

/// `--scenario all`: every scenario of every lock.
const ALL: &str = "all";

/// `sim --scenario all`: every row locks' scenario under the algorithms it tests, then every
/// other lock's scenarios, each with its own defaults and the same seeds; the exit status is
/// the worst of theirs (2 stops at once, then 1 a violation, then 3 a bounded run).
fn sweep_everything(mut args: SimArgs) -> ExitCode {
    let given = [
        (args.row_lock_flag(), "a row locks' knob"),
        (args.bound_ms.map(|_| "--bound-ms".to_owned()), "a family knob"),
        (
            args.replication_lag_ms.map(|_| "--replication-lag-ms".to_owned()),
            "a family knob",
        ),
        (args.shard.map(|_| "--shard".to_owned()), "a shard's file"),
        (
            args.scenario.clients.map(|_| "--clients".to_owned()),
            "a workload's size",
        ),
        (
            args.scenario.acquisitions.map(|_| "--acquisitions".to_owned()),
            "a workload's size",
        ),
        (
            (!args.scenario.set.is_empty()).then(|| "--set".to_owned()),
            "a scenario's key",
        ),
    ];
    if let Some((flag, what)) = given.into_iter().find_map(|(flag, what)| flag.map(|flag| (flag, what))) {
        return crate::usage_error(&format!(
            "{flag}: --scenario all runs every scenario with its own defaults; {what} is for scenarios you name: name them ({rows}), or a lock for all of its ({locks}; `cassalock scenarios` lists them)",
            rows = row_scenarios(),
            locks = crate::family_sim::lock_names_with_scenarios(),
        ));
    }
    let mut worst = ExitCode::SUCCESS;
    let rows = cassalock_sim::scenario::SCENARIOS.iter().map(|scenario| scenario.name);
    for name in rows {
        args.scenario.scenario = Some(name.to_owned());
        let code = row_sweep(&args);
        if code == ExitCode::from(2) {
            return code;
        }
        worst = worse(worst, code);
    }
    args.scenario.scenario = Some(ALL.to_owned());
    let code = family_sweep(&args, ALL);
    worse(worst, code)
}

/// The worse of two sweeps' exit statuses: 2 (bad input), then 1 (a violation), then 3 (a
/// bounded run), then 0; anything else (4, a file not written) counts as 2.
fn worse(a: ExitCode, b: ExitCode) -> ExitCode {
    let rank = |code: ExitCode| match code {
        code if code == ExitCode::SUCCESS => 0,
        code if code == ExitCode::from(3) => 1,
        code if code == ExitCode::from(1) => 2,
        _ => 3,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// A sweep of one row locks' scenario (or a scenario file) under its algorithms.
fn row_sweep(args: &SimArgs) -> ExitCode {
    let ready = match ready(args) {
        Ok(ready) => ready,
        Err(code) => return code,
    };
    if args.sweep_offsets {
        if args.per_seed_out.is_some() {
            return crate::usage_error("--per-seed-out applies to a plain sweep, not --sweep-offsets");
        }
        return sweep_offsets(args, &ready.scenario, &ready.options, &ready.pool);
    }
    let mut per_seed = match &args.per_seed_out {
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => Some((path, std::io::BufWriter::new(file))),
            Err(error) => return crate::usage_error(&format!("--per-seed-out {}: {error}", path.display())),
        },
        None => None,
    };
    // Opened before running, so a bad path costs nothing.
    let out = match args.shard_out.as_deref().map(ShardOut::create).transpose() {
        Ok(out) => out,
        Err(error) => return crate::usage_error(&format!("{error:#}")),
    };
    let mut ended = Ended::default();
    let mut tallies = Vec::new();
    for algorithm in args.algorithms(&ready.scenario).algorithms() {
        let tally = match sweep_algorithm(args, &ready, algorithm, per_seed.as_mut()) {
            Ok(tally) => tally,
            Err(code) => return code,
        };
        if out.is_some() {
            tallies.push((algorithm.name().to_owned(), tally));
            continue;
        }
        match print_tally(args, &ready.scenario, &ready.options, algorithm, &tally) {
            Ok(this) => ended = ended.and(this),
            Err(code) => return code,
        }
    }
    match out {
        Some(out) => write_shard(args, &ready, out, tallies),
        None => ended.exit_code(),
    }
}

/// `sim --scenario NAMES` of the families' scenarios: refuse the row locks' flags, and hand the
/// sweep to `family_sim`.
fn family_sweep(args: &SimArgs, names: &str) -> ExitCode {
    if let Some(flag) = args.row_lock_flag() {
        return crate::usage_error(&format!(
            "{flag} applies to the row locks' scenarios ({rows}), not to {names}; theirs take --set KEY=VALUE for any key of their scenario (--set hold_ms=50, --set settings.ttl_ms=3000; docs/simulator.md)",
            rows = row_scenarios()
        ));
    }
    if let (Some(path), Some(_)) = (&args.scenario.scenario_file, args.shard) {
        return crate::usage_error(&format!(
            "--shard with --scenario-file {}: a merge of the families' shards finds scenarios by name and would not read the file; run the sweep without --shard (up to {} seeds a call)",
            path.display(),
            crate::family_sim::MAX_SEEDS
        ));
    }
    crate::family_sim::sweep_scenarios(
        names,
        args.seeds,
        args.jobs,
        family_knobs(&args.scenario, args.bound_ms, args.replication_lag_ms),
        args.shard,
        args.shard_out.clone(),
    )
}

/// Check a row locks' sweep (the families' flags, the scenario, the number of runs, --jobs, a
/// build of its first seed) and start its worker threads; the exit status to stop with, the
/// message printed, when something is wrong.
fn ready(args: &SimArgs) -> Result<Ready, ExitCode> {
    if args.bound_ms.is_some() || args.replication_lag_ms.is_some() {
        return Err(crate::usage_error(&format!(
            "--bound-ms and --replication-lag-ms apply to the families' scenarios, not to the row locks' ({rows})",
            rows = row_scenarios()
        )));
    }
    let Resolved { scenario, options } = match args.scenario.resolve() {
        Ok(resolved) => resolved,
        Err(error) => return Err(crate::usage_error(&format!("{error:#}"))),
    };
    let seeds = args.seeds;
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let runs = shard.count(&seeds);
    if runs > u128::from(MAX_SEEDS) {
        return Err(crate::usage_error(&format!(
            "--seeds {:?}{} asks for {runs} runs; at most {MAX_SEEDS} per call (split a larger sweep with --shard K/N)",
            seeds.to_string(),
            args.shard.map(|shard| format!(" --shard {shard}")).unwrap_or_default(),
        )));
    }
    if args.jobs == 0 || args.jobs > 64 {
        return Err(crate::usage_error("--jobs must be between 1 and 64"));
    }
    for algorithm in args.algorithms(&scenario).algorithms() {
        if let Err(error) = build(&scenario, seeds.first(), algorithm, &options) {
            return Err(crate::usage_error(&args.scenario.explain(&error)));
        }
    }
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(args.jobs).build() {
        Ok(pool) => pool,
        Err(error) => {
            eprintln!("error: cannot start the worker threads: {error}");
            return Err(ExitCode::from(1));
        }
    };
    Ok(Ready {
        scenario,
        options,
        shard,
        runs,
        pool,
    })
}

/// Run this shard's seeds (all of them without --shard) with `algorithm`, with a progress bar
/// on a terminal, and say on stderr how long it took; the tally, or exit 1 when writing the
/// --per-seed-out file failed.
fn sweep_algorithm(
    args: &SimArgs,
    ready: &Ready,
    algorithm: Algorithm,
    per_seed: Option<&mut (&PathBuf, BufWriter<File>)>,
) -> Result<Tally, ExitCode> {
    let scenario = &ready.scenario;
    let started = Instant::now();
    let total = u64::try_from(ready.runs).expect("at most MAX_SEEDS");
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} seeds, {per_sec}, eta {eta}")
                .expect("template"),
        );
        bar.set_message(format!("{} {}", scenario, algorithm.name()));
        bar
    });
    let (path, out): (Option<&PathBuf>, Option<&mut dyn Write>) = match per_seed {
        Some((path, out)) => (Some(*path), Some(out)),
        None => (None, None),
    };
    let tally = match run_seeds(
        scenario,
        &ready.options,
        ready.shard.seeds(&args.seeds),
        &ready.pool,
        algorithm,
        bar.as_ref(),
        out,
    ) {
        Ok(tally) => tally,
        Err(error) => {
            let path = path.map(|path| path.display().to_string()).unwrap_or_default();
            eprintln!("error: cannot write --per-seed-out {path}: {error}; the sweep stopped there");
            return Err(ExitCode::from(crate::output::OUTPUT_FAILED));
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    // Wall-clock figures go to stderr: stdout is the same bytes on any machine, and for
    // `cassalock merge` of shards (docs/sweeps.md).
    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "{scenario} | {} algorithm | {} in {seconds:.1} s ({:.0} seeds/minute on {} jobs)",
        algorithm.name(),
        count(tally.runs, "run"),
        tally.runs as f64 / seconds.max(1e-9) * 60.0,
        args.jobs
    );
    Ok(tally)
}

/// Write a shard's result file (`--shard K/N --shard-out FILE`) with every algorithm's tally, and say
/// where: 0 once written (the verdict is `cassalock merge`'s), 4 if writing it failed.
fn write_shard(args: &SimArgs, ready: &Ready, out: ShardOut, tallies: Vec<(String, Tally)>) -> ExitCode {
    let shard = ready.shard;
    let file = SimShardFile {
        format: SHARD_FORMAT.to_owned(),
        version: SHARD_VERSION,
        command: sweep_command(args, &ready.scenario),
        k: shard.k(),
        n: shard.n(),
        tallies,
    };
    let path = out.path().to_owned();
    if let Err(code) = out.write(&file) {
        return code;
    }
    println!(
        "shard {shard} of `{}`: {} seeds per algorithm run, written to {}; combine every shard with `cassalock merge FILE...`",
        file.command,
        ready.runs,
        path.display()
    );
    ExitCode::SUCCESS
}
