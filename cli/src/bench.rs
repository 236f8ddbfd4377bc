//! `cassalock bench`: figures, not tests. Timings on a shared machine are noisy: compare the
//! ratios within one run.

use std::process::ExitCode;
use std::time::Instant;

use cassalock_models::check::{Limits, Verdict};
use cassalock_models::{build, Fault, ModelName, Mutant, Spec};
use clap::{Args, ValueEnum};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Suite {
    /// Model checking: exhaustive runs (states per second) and time to each counterexample.
    Models,
    /// Simulation: seeds per minute of the contention scenario (2 jobs, release build).
    #[cfg(madsim)]
    Sim,
    /// Real cluster: old, queue and LWT locks at 1, 4 and 16 lockers (the real build only);
    /// writes reports/real-cluster.md.
    Real,
}

/// Measure and print speed figures.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Which suite.
    #[arg(value_enum)]
    suite: Suite,
    /// real: Cassandra nodes, host:port, comma-separated.
    #[arg(long, default_value = "127.0.0.1:9042", value_delimiter = ',')]
    contact_points: Vec<String>,
    /// real: locker counts, comma-separated.
    #[arg(long, default_value = "1,4,16", value_delimiter = ',')]
    lockers: Vec<usize>,
    /// real: seconds per configuration.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// real: where the report goes.
    #[arg(long, default_value = "reports")]
    out: std::path::PathBuf,
}

pub fn run(args: BenchArgs) -> ExitCode {
    match args.suite {
        Suite::Models => models(),
        #[cfg(madsim)]
        Suite::Sim => sim(),
        #[cfg(not(madsim))]
        Suite::Real => super::real::bench(args.contact_points, args.lockers, args.seconds, args.out),
        #[cfg(madsim)]
        Suite::Real => super::real::not_the_real_build(),
    }
}

#[cfg(madsim)]
fn sim() -> ExitCode {
    use cassalock_sim::run::run;
    use cassalock_sim::scenario::{build, SimOptions};
    use rayon::prelude::*;
    const SEEDS: u64 = 600;
    const JOBS: usize = 2;
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(JOBS).build() {
        Ok(pool) => pool,
        Err(error) => {
            eprintln!("error: cannot start the worker threads: {error}");
            return ExitCode::from(1);
        }
    };
    println!("contention (5 clients x 20 acquisitions, QUORUM, 3 replicas): {SEEDS} seeds on {JOBS} threads");
    println!(
        "{:<10} {:>9} {:>15} {:>14} {:>18}",
        "algorithm", "seconds", "seeds/minute", "acquisitions", "simulated seconds"
    );
    let mut failed = false;
    for algorithm in [cassalock::Algorithm::Old, cassalock::Algorithm::Queue] {
        let started = Instant::now();
        // Per seed: acquisitions, simulated seconds, whether a check failed; in seed order.
        let per_seed: Vec<(usize, f64, usize)> = pool.install(|| {
            (0..SEEDS)
                .into_par_iter()
                .map(|seed| {
                    let config = build("contention", seed, algorithm, &SimOptions::default()).expect("known");
                    let outcome = run(&config, seed, false);
                    (
                        outcome.verdicts.acquisitions,
                        outcome.sim_time.as_secs_f64(),
                        usize::from(!outcome.verdicts.all_passed()),
                    )
                })
                .collect()
        });
        let totals = per_seed
            .iter()
            .fold((0, 0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
        let seconds = started.elapsed().as_secs_f64();
        failed |= totals.2 > 0;
        println!(
            "{:<10} {seconds:>9.2} {:>15.0} {:>14} {:>18.0}",
            algorithm.name(),
            SEEDS as f64 / seconds * 60.0,
            totals.0,
            totals.1
        );
    }
    if failed {
        eprintln!("error: a contention run failed a check");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn spec(model: ModelName, fault: Fault, mutant: Option<Mutant>, threads: Option<u8>, acquisitions: Option<u8>) -> Spec {
    let mut spec = Spec::new(model);
    spec.fault = fault;
    spec.mutant = mutant;
    spec.threads = threads;
    spec.acquisitions = acquisitions;
    spec
}

fn models() -> ExitCode {
    println!("exhaustive runs (stateright BFS on 2 threads + our graph; both explore every state)");
    println!(
        "{:<44} {:>12} {:>9} {:>14}",
        "model", "unique states", "seconds", "states/second"
    );
    let exhaustive = [
        (
            "getlock 3 threads x 2 acquisitions",
            spec(ModelName::GetLock, Fault::None, None, Some(3), Some(2)),
        ),
        (
            "getlock 4 threads x 2 acquisitions",
            spec(ModelName::GetLock, Fault::None, None, Some(4), Some(2)),
        ),
        (
            "trygetlock 3 threads",
            spec(ModelName::TryGetLock, Fault::None, None, None, None),
        ),
        (
            "getlock pause (ticks, TTL 2)",
            spec(ModelName::GetLock, Fault::Pause, None, None, None),
        ),
        (
            "globaltime 3 replicas (ranks)",
            spec(ModelName::GlobalTime, Fault::None, None, Some(3), None),
        ),
    ];
    let mut failed = false;
    for (label, spec) in exhaustive {
        let model = build(&spec).expect("valid");
        let started = Instant::now();
        let report = model.check(Limits::default());
        let seconds = started.elapsed().as_secs_f64();
        failed |= !report.internal_errors.is_empty();
        // Both explorations visit every state: count the work of both.
        let rate = 2.0 * report.graph_states as f64 / seconds;
        println!("{label:<44} {:>12} {seconds:>9.2} {rate:>14.0}", report.graph_states);
    }
    println!();
    println!("time to the shortest counterexample of each catalogued failure");
    println!("{:<44} {:>6} {:>12} {:>9}", "failure", "steps", "states", "seconds");
    let catalogue = [
        (
            "M1 + delayed enqueue: T1",
            spec(ModelName::GetLock, Fault::DelayedEnqueue, Some(Mutant::M1), None, None),
            "T1",
            true,
        ),
        (
            "S2 clocks a TTL apart: T1",
            spec(ModelName::GetLock, Fault::TtlSkew, None, None, None),
            "T1",
            true,
        ),
        (
            "K1 paused holder: T1 (belief)",
            spec(ModelName::GetLock, Fault::Pause, None, None, None),
            "T1",
            true,
        ),
        (
            "K1 paused holder: T1-resource (no fencing)",
            spec(ModelName::GetLock, Fault::Pause, None, None, None),
            "T1-resource",
            true,
        ),
        (
            "K3 release without waiting: K3",
            spec(ModelName::GetLock, Fault::None, Some(Mutant::K3), None, None),
            "K3",
            true,
        ),
        (
            "old algorithm: T2 lasso",
            spec(ModelName::Old, Fault::None, None, None, None),
            "T2",
            false,
        ),
        (
            "old algorithm: F-overtakes",
            spec(ModelName::Old, Fault::None, None, None, None),
            "F-overtakes",
            true,
        ),
    ];
    for (label, spec, claim, first) in catalogue {
        let model = build(&spec).expect("valid");
        let limits = Limits {
            stop_at_first_violation: first,
            only_claim: Some(claim.to_owned()),
            ..Limits::default()
        };
        let started = Instant::now();
        let report = model.check(limits);
        let seconds = started.elapsed().as_secs_f64();
        let row = report.row(claim);
        let steps = row.trace.as_ref().map_or(0, |t| t.steps);
        if row.verdict != Verdict::Violated {
            failed = true;
        }
        println!("{label:<44} {steps:>6} {:>12} {seconds:>9.3}", report.graph_states);
    }
    if failed {
        eprintln!("error: a catalogued counterexample was not found, or the explorations disagreed");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
