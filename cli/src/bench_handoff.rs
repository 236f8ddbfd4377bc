//! `cassalock bench handoff`: the fair lock's goal, in the simulator. The fair lock's variants
//! against the old lock at 16 lockers, every figure the goal names measured in one run:
//! acquisitions per simulated second (exact: no machine noise), Jain's index of the lockers'
//! shares, store requests per acquisition, each against the old lock's.
//!
//! The workload, the variants and the goal are `cassalock_report::handoff`'s, which the
//! fairness report's section of the same name runs over its own (fewer) seeds.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use cassalock_judge::ClaimId;
use cassalock_report::handoff::{
    judge, GoalFigures, HandoffVariant, GOAL_JAIN, GOAL_THROUGHPUT_RATIO, HANDOFF_LATENCIES, HANDOFF_VARIANTS, HOLD_MS,
    LOCKERS, RUN_SIMULATED, TTL_S,
};
use cassalock_sim::metrics::FairnessMetrics;
use cassalock_sim::run::run;
use rayon::prelude::*;

use crate::usage_error;

/// Seeds per variant and latency when `--seeds` is not given.
pub const DEFAULT_SEEDS: u64 = 100;
/// The most seeds `--seeds` takes (each seed is 16 lockers for a simulated minute).
pub const MAX_SEEDS: u64 = 1000;
/// Worker threads (the machine has two cores).
const JOBS: usize = 2;
/// Claims whose failure makes the benchmark exit 1: two holders at once, or damage.
const SAFETY_CLAIMS: [&str; 2] = ["T1-belief", "T1-resource"];

/// One variant's figures at one latency, over the seeds.
#[derive(Debug, Default)]
struct Figures {
    acquisitions: u64,
    requests: u64,
    simulated: Duration,
    /// Jain's index of each seed with an acquisition.
    jains: Vec<f64>,
    longest_run: u64,
    waits_ms: Vec<f64>,
    /// Failed claims: the seeds they failed in, and the first.
    failures: BTreeMap<String, (u64, u64)>,
}

impl Figures {
    fn throughput(&self) -> f64 {
        self.acquisitions as f64 / self.simulated.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    fn requests_per_acquisition(&self) -> f64 {
        self.requests as f64 / self.acquisitions.max(1) as f64
    }

    fn jain_mean(&self) -> f64 {
        if self.jains.is_empty() {
            return f64::NAN;
        }
        self.jains.iter().sum::<f64>() / self.jains.len() as f64
    }

    fn jain_min(&self) -> f64 {
        self.jains.iter().copied().fold(f64::NAN, f64::min)
    }

    fn goal(&self) -> GoalFigures {
        GoalFigures {
            throughput: self.throughput(),
            jain: self.jain_mean(),
            requests_per_acquisition: self.requests_per_acquisition(),
        }
    }
}

fn measure(pool: &rayon::ThreadPool, variant: HandoffVariant, latency_us: Option<(u64, u64)>, seeds: u64) -> Figures {
    let per_seed: Vec<(u64, FairnessMetrics, Vec<String>)> = pool.install(|| {
        (0..seeds)
            .into_par_iter()
            .map(|seed| {
                let outcome = run(&variant.config(latency_us, seed), seed, false);
                let failed = outcome
                    .verdicts
                    .checks
                    .iter()
                    // T2 ("every client finished") cannot hold in an open-ended run: it stops
                    // with lockers still acquiring.
                    .filter(|check| !check.passed() && check.claim != ClaimId::T2)
                    .map(|check| check.claim.to_string())
                    .collect();
                (seed, FairnessMetrics::from_run(&outcome), failed)
            })
            .collect()
    });
    let mut figures = Figures::default();
    for (seed, metrics, failed) in per_seed {
        figures.acquisitions += metrics.acquisitions;
        figures.requests += metrics.requests;
        figures.simulated += metrics.duration;
        if metrics.acquisitions > 0 {
            figures.jains.push(metrics.jain());
        }
        figures.longest_run = figures.longest_run.max(metrics.longest_run);
        figures
            .waits_ms
            .extend(metrics.waits.iter().map(|wait| wait.as_secs_f64() * 1e3));
        for claim in failed {
            let entry = figures.failures.entry(claim).or_insert((0, seed));
            entry.0 += 1;
            entry.1 = entry.1.min(seed);
        }
    }
    figures
}

/// `bench handoff`: every variant at every latency, `seeds` seeds each.
pub fn run_bench(seeds: u64) -> ExitCode {
    if seeds == 0 || seeds > MAX_SEEDS {
        return usage_error(&format!(
            "--seeds {seeds}: give 1 to {MAX_SEEDS} seeds for bench handoff"
        ));
    }
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(JOBS).build() {
        Ok(pool) => pool,
        Err(error) => {
            eprintln!("error: cannot start the worker threads: {error}");
            return ExitCode::from(4);
        }
    };
    println!(
        "the fair lock's goal, in the simulator: {LOCKERS} lockers acquiring for {} simulated s, hold {HOLD_MS} ms, no think time, TTL {TTL_S} s, QUORUM x 3 replicas; seeds 0..{seeds} per line, {JOBS} jobs",
        RUN_SIMULATED.as_secs()
    );
    println!("acq/s: acquisitions over simulated seconds, all seeds; Jain: mean over the seeds (their lowest); goal: at least {GOAL_THROUGHPUT_RATIO}x the old lock's acq/s, Jain >= {GOAL_JAIN}, no more requests an acquisition than the old lock");
    println!("every check of every run is judged but T2 (an open-ended run stops with lockers still waiting); a failed one is named below its line");
    let started = Instant::now();
    let mut unsafe_runs = 0;
    for (label, latency_us) in HANDOFF_LATENCIES {
        println!();
        println!("{label}");
        println!(
            "{:<26} {:>9} {:>7} {:>15} {:>8} {:>7} {:>8} {:>11} {:>11}",
            "variant", "acq/s", "x old", "Jain (lowest)", "req/acq", "x old", "longest", "wait p99 ms", "acquisitions"
        );
        let mut measured: Vec<(HandoffVariant, Figures)> = Vec::new();
        for variant in HANDOFF_VARIANTS {
            let figures = measure(&pool, variant, latency_us, seeds);
            let old = measured.first().map_or(&figures, |(_, old)| old);
            println!(
                "{:<26} {:>9.2} {:>7.2} {:>7.3} ({:.3}) {:>8.1} {:>7.2} {:>8} {:>11.0} {:>11}",
                variant.name(),
                figures.throughput(),
                figures.throughput() / old.throughput().max(f64::MIN_POSITIVE),
                figures.jain_mean(),
                figures.jain_min(),
                figures.requests_per_acquisition(),
                figures.requests_per_acquisition() / old.requests_per_acquisition().max(f64::MIN_POSITIVE),
                figures.longest_run,
                cassalock_judge::stats::percentile(&figures.waits_ms, 99),
                figures.acquisitions,
            );
            for (claim, (count, first)) in &figures.failures {
                println!("    {claim} failed in {count} of {seeds} seeds (first: seed {first})");
                if SAFETY_CLAIMS.contains(&claim.as_str()) {
                    unsafe_runs += count;
                }
            }
            measured.push((variant, figures));
        }
        let old = &measured[0].1;
        for (variant, figures) in &measured[1..] {
            println!("  goal, {}: {}", variant.name(), judge(figures.goal(), old.goal()));
        }
    }
    println!();
    println!("{:.1} s wall clock", started.elapsed().as_secs_f64());
    if unsafe_runs > 0 {
        println!("{unsafe_runs} runs broke T1: see the claims above (replay a seed with `cassalock sim`)");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
