//! Running the seeds of a sweep: in batches on a thread pool, tallied in seed order, with one
//! `--per-seed-out` line per seed.

use std::io::Write;

use cassalock::driver::Algorithm;
use cassalock_judge::ClaimVerdict;
use cassalock_sim::run::run;
use cassalock_sim::scenario::{build, SimOptions};
use rayon::prelude::*;

use super::tally::{tally_outcome, SeedSummary, Tally};

/// The most seeds one `sim` call will run.
pub const MAX_SEEDS: u64 = 1_000_000;

/// Seeds run per batch: each batch's outcomes are tallied in seed order, so the tally does
/// not depend on which thread finished first, and at most a batch of outcomes is held.
const BATCH: u64 = 1024;

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

/// A claim's verdict in a `--per-seed-out` line: a claim the run gave no occasion to is
/// "no occasion", never "ok" (as `replay` shows it "-", and the matrix "no occasion").
fn verdict_word(verdict: ClaimVerdict) -> &'static str {
    match verdict {
        ClaimVerdict::Violated => "FAILED",
        ClaimVerdict::Bounded => "bounded",
        ClaimVerdict::Holds => "ok",
        ClaimVerdict::NotExercised => "no occasion",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            claims: vec![
                ("T1-belief", ClaimVerdict::Violated),
                ("T2", ClaimVerdict::Holds),
                ("C-free", ClaimVerdict::NotExercised),
            ],
            store_faults: (0, 0),
            fault_kinds: 0,
            faults_unfired: 0,
            s1_stall_nanos: None,
        };
        assert_eq!(
            per_seed_line(Algorithm::Queue, 7, Some(&summary)).to_string(),
            r#"{"acquisitions":15,"algorithm":"queue","claims":{"C-free":"no occasion","T1-belief":"FAILED","T2":"ok"},"requests":120,"seed":7,"sim_seconds":56.5}"#
        );
        let faulty = SeedSummary {
            store_faults: (2, 3),
            ..summary
        };
        assert_eq!(
            per_seed_line(Algorithm::Queue, 7, Some(&faulty)).to_string(),
            r#"{"acquisitions":15,"algorithm":"queue","claims":{"C-free":"no occasion","T1-belief":"FAILED","T2":"ok"},"requests":120,"seed":7,"sim_seconds":56.5,"store_faults":{"after_apply":3,"before_apply":2}}"#
        );
        assert_eq!(
            per_seed_line(Algorithm::Old, 8, None).to_string(),
            r#"{"algorithm":"old","panicked":true,"seed":8}"#
        );
    }
}
