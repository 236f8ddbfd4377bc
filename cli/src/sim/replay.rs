//! `cassalock replay`: one run in full (its plan, every event, the verdicts), its timeline and
//! event record written when asked, and recorded verdicts checked with --expect-*.

use std::process::ExitCode;

use cassalock::driver::Algorithm;
use cassalock_sim::run::{run, RunOutcome};
use cassalock_sim::scenario::build;

use super::args::{family_knobs, family_scenarios, row_scenarios, ReplayArgs};
use super::command_line::replay_command;
use super::print::Ended;
use super::scenario_args::Resolved;

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
    let family = match family_scenarios(&args.scenario) {
        Ok(family) => family,
        Err(error) => return crate::usage_error(&format!("{error:#}")),
    };
    if let Some(names) = family {
        let flags = args.scenario.row_only_flags();
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
                "{flag} applies to the row locks' scenarios ({rows}), not to {names}",
                rows = row_scenarios()
            ));
        }
        return crate::family_sim::replay_scenario(
            &names,
            args.seed,
            !args.summary,
            args.events.as_deref(),
            args.svg.as_deref(),
            family_knobs(&args.scenario, args.bound_ms, args.replication_lag_ms),
        );
    }
    if args.bound_ms.is_some() || args.replication_lag_ms.is_some() {
        return crate::usage_error(&format!(
            "--bound-ms and --replication-lag-ms apply to the families' scenarios, not to the row locks' ({rows})",
            rows = row_scenarios()
        ));
    }
    if let Some(list) = args.scenario.scenario.as_deref().filter(|text| text.contains(',')) {
        return crate::usage_error(&format!(
            "--scenario {list}: replay runs one row locks' scenario (or the other locks' named together); give one of {list}"
        ));
    }
    let Resolved { scenario, options } = match args.scenario.resolve() {
        Ok(resolved) => resolved,
        Err(error) => return crate::usage_error(&format!("{error:#}")),
    };
    // The scenario's one algorithm (a scenario file's lock's), else the queue lock's.
    let algorithm = args
        .algorithm
        .unwrap_or(match cassalock_sim::scenario::algorithms_for(&scenario) {
            [only] => *only,
            _ => Algorithm::Queue,
        });
    let expectation = match crate::recorded::Expectation::parse(&args.expect_violated, &args.expect_passed) {
        Ok(expectation) => expectation,
        Err(error) => return crate::usage_error(&format!("{error:#}")),
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
                eprintln!("error: --svg {}: {error}", path.display());
                return crate::output::failed_output(verdict_code(&outcome));
            }
        }
    }
    if let Some(path) = &args.events {
        let replay = replay_command(&scenario, args.seed, algorithm, &args.scenario.flags());
        match write_events(&outcome, replay, path) {
            Ok(lines) => println!("event record written to {} ({lines} events)", path.display()),
            Err(error) => {
                eprintln!("error: could not write the event record {}: {error}", path.display());
                return crate::output::failed_output(verdict_code(&outcome));
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
    verdict_code(&outcome)
}

/// The exit status the run's verdicts alone give: 1 on a violation, 3 when bounded, else 0.
fn verdict_code(outcome: &RunOutcome) -> ExitCode {
    Ended {
        failed: !outcome.verdicts.all_passed(),
        bounded: outcome.verdicts.any_bounded(),
    }
    .exit_code()
}
