//! `sim --scenario skew --sweep-offsets`: the smallest offset of replica r0's clock that
//! breaks T1, searched in 1 s steps, then 0.1 s steps below the first that broke it. A
//! finding is a violation: the sweep exits 1 when an offset broke T1, as the replay it prints
//! does.

use std::process::ExitCode;

use cassalock::driver::Algorithm;
use cassalock_judge::text::count;
use cassalock_sim::scenario::SimOptions;

use super::args::SimArgs;
use super::command_line::replay_command;
use super::seeds::run_seeds;

/// The skew finding: the smallest offset of r0's clock that breaks T1.
pub(super) fn sweep_offsets(
    args: &SimArgs,
    scenario: &str,
    options: &SimOptions,
    pool: &rayon::ThreadPool,
) -> ExitCode {
    let base = cassalock_sim::scenario::file_scenario(scenario).map_or(scenario, |added| added.base.name);
    if base != "skew" {
        return crate::usage_error("--sweep-offsets applies to the skew scenario (or one based on it) only");
    }
    if options.offset_s.is_some() {
        return crate::usage_error("--sweep-offsets chooses the offsets itself: drop --offset-s");
    }
    let ttl_s = f64::from(options.knobs.ttl_s.unwrap_or(cassalock::Settings::new("sweep").ttl_s));
    let renew_s = options
        .knobs
        .renew_every_ms
        .map_or(ttl_s / 2.0, |ms| ms as f64 / 1000.0);
    let algorithms = args.algorithms(scenario).algorithms();
    let mut found = false;
    let first_failure = |offset: f64, algorithm: Algorithm| -> Option<u64> {
        let options = SimOptions {
            offset_s: Some(offset),
            ..options.clone()
        };
        let tally = run_seeds(scenario, &options, args.seeds.seeds(), pool, algorithm, None, None)
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
        found = true;
        println!(
            "  FINDING ({} algorithm): the smallest offset that broke T1 is {offset:.1} s (TTL {ttl_s} s); seed {seed}",
            algorithm.name()
        );
        println!(
            "           replay: {}",
            replay_command(
                scenario,
                seed,
                algorithm,
                &format!("{} --offset-s {offset:.1}", args.scenario.flags())
            )
        );
    }
    ExitCode::from(u8::from(found))
}
