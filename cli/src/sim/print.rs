//! Printing one algorithm's tally over the whole range (a single machine's sweep and a merge
//! of shards both print through here), with the replay and record lines of each failing
//! claim; and how a sweep ended, for the exit status.

use std::process::ExitCode;

use cassalock::driver::Algorithm;
use cassalock_judge::text::count;
use cassalock_sim::run::run;
use cassalock_sim::scenario::{build, FaultKind, SimOptions};

use super::args::SimArgs;
use super::command_line::replay_command;
use super::tally::Tally;

/// Print one algorithm's tally over the whole range (a single run and a merge of shards both
/// print through here); returns whether some run failed or was bounded, or the exit status to
/// stop with.
pub(super) fn print_tally(
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
    if let Some((nanos, seed)) = tally.s1_longest_stall {
        println!(
            "  S1           GlobalTime stood still for at most {:.3} s (seed {seed}; the longest over {})",
            nanos as f64 / 1e9,
            count(tally.runs, "run")
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
                        eprintln!(
                            "error: cannot record in {}: {error} (run from the repository's root, whose regressions/ cargo test replays)",
                            path.display()
                        );
                        return Err(ExitCode::from(crate::output::OUTPUT_FAILED));
                    }
                }
            } else {
                println!(
                    "               record: rerun with --record in the repository's root (it appends this seed to {}, which cargo test replays)",
                    path.display()
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
pub(super) struct Ended {
    pub(super) failed: bool,
    pub(super) bounded: bool,
}

impl Ended {
    pub(super) fn and(self, other: Ended) -> Ended {
        Ended {
            failed: self.failed || other.failed,
            bounded: self.bounded || other.bounded,
        }
    }

    /// 1 for a violation, else 3 for a bound that left a check undecided, else 0.
    pub(super) fn exit_code(self) -> ExitCode {
        if self.failed {
            ExitCode::from(1)
        } else if self.bounded {
            ExitCode::from(3)
        } else {
            ExitCode::SUCCESS
        }
    }
}
