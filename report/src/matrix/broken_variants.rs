//! The kill table ("Broken variants"): every switch the command line offers to break a lock on
//! purpose (the model checker's `--mutant`, the simulator's mutant and listing flags, the
//! scenarios that plant a real client's bug), each with the cell the matrix runs it in, the
//! claim it must break and what the run found, read from its unit; with the trace file of every
//! model counterexample. A variant its cell does not catch is a check that proves nothing, and
//! the table says so; a switch the matrix does not run says why.

use std::path::Path;

use cassalock_models::check::Verdict;
use cassalock_sim::family::scenario::replay_command;

use super::family_sim::{client_bugs, expected_claim};
use super::grid::{MatrixRow, Row};
use super::marks::{seeds, short};
use super::mutants::{MODEL_MUTANTS_NOT_RUN, MUTANT_MODELS, MUTANT_SIMS};
use super::options::{MatrixError, MatrixOptions};
use super::seed_search::SimResult;
use super::sources::algorithm;
use super::units::{Results, Unit};
use crate::write_file;

/// A row of the kill table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct KillRow {
    /// The switch, as typed: `check --mutant m1`, `sim --m2`, `sim --scenario NAME`.
    pub(super) switch: String,
    /// The variant and the cell it is run in (or why it is not run).
    pub(super) run: String,
    /// The claim it must break (`-` where it is not run).
    pub(super) claim: String,
    /// What the run found: the verdict, with its trace link or replay command.
    pub(super) found: String,
    pub(super) outcome: Outcome,
}

/// Did the cell catch the variant?
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Caught,
    /// Its cell ran to the end and its claim held: the check missed it.
    NotCaught,
    /// A budget or the time limit stopped the search first.
    NoVerdict,
    /// The matrix does not run it (the row says why).
    NotRun,
}

/// The kill table's rows, from the mutants' units. Writes each model counterexample's trace
/// file.
pub(super) fn kill_rows(
    options: &MatrixOptions,
    results: &Results,
    out_dir: &Path,
    files: &mut Vec<String>,
    stopped_by_time: &mut Vec<String>,
) -> Result<Vec<KillRow>, MatrixError> {
    let mut rows = Vec::new();
    for (index, mutant) in MUTANT_MODELS.iter().enumerate() {
        // `--thesis-only` leaves out the other families' rows, their client bugs with them.
        if options.thesis_only && mutant.mutant.is_family_client_bug() {
            continue;
        }
        let report = results.model(&Unit::MutantModel(index))?;
        super::cells::note_machine_limit(
            stopped_by_time,
            &format!("{} mutant: {}", mutant.claim, mutant.label),
            report,
        );
        let claim = mutant.claim;
        let row = report.row(claim)?;
        let name = format!("mutant-{}.txt", mutant.key);
        let link = match &row.trace {
            Some((trace, steps)) => {
                write_file(
                    out_dir,
                    &name,
                    &format!("{}\n\n{} -- {}\n{}", report.title, row.property, row.verdict, trace),
                )?;
                files.push(format!("matrix/{name}"));
                if let Some(record) = &row.record {
                    if let Some(svg) = super::cells::write_model_timeline(&name, claim, record, out_dir)? {
                        files.push(format!("matrix/{svg}"));
                    }
                }
                format!(" [{steps} steps](matrix/{name})")
            }
            None => String::new(),
        };
        let verdict = short(&row.verdict);
        // The matrix's own run: only the claim, stopping at its first violation.
        let command = format!("`{} --property {claim} --stop-at-first`", mutant.spec().command_line());
        let outcome = if row.verdict.is_violation() {
            Outcome::Caught
        } else if matches!(row.verdict, Verdict::Bounded(_)) {
            Outcome::NoVerdict
        } else {
            Outcome::NotCaught
        };
        rows.push(KillRow {
            switch: format!("`check --mutant {}`", mutant.mutant.name()),
            run: format!("model: {}", mutant.label),
            claim: claim.to_string(),
            found: match outcome {
                Outcome::Caught => format!("{verdict}{link}: {command}"),
                Outcome::NoVerdict => format!("{verdict}: a budget stopped the search, not a verdict: {command}"),
                _ => format!("**not caught**: {verdict}: {command}"),
            },
            outcome,
        });
    }
    for (mutant, why) in MODEL_MUTANTS_NOT_RUN {
        if options.thesis_only && mutant.is_family_client_bug() {
            continue;
        }
        rows.push(KillRow {
            switch: format!("`check --mutant {}`", mutant.name()),
            run: why.to_owned(),
            claim: "-".to_owned(),
            found: "-".to_owned(),
            outcome: Outcome::NotRun,
        });
    }
    for (index, mutant) in MUTANT_SIMS.iter().enumerate() {
        for row in [Row::Old, Row::Queue] {
            let result = results.search(&Unit::MutantSim(index, row))?;
            let (claim, scenario, flag) = (mutant.claim, mutant.scenario, mutant.flag);
            let (found, outcome) = match result.first_violation(claim) {
                Some(seed) => (
                    format!(
                        "violated at seed {seed} ({} tried): `cassalock replay --scenario {scenario} --seed {seed} \
                     --algorithm {} {flag}`",
                        seeds(seed + 1),
                        algorithm(row).name()
                    ),
                    Outcome::Caught,
                ),
                None if result.stopped_by_time => {
                    stopped_by_time.push(format!(
                        "mutant {claim}, {}, {scenario} {flag} (after {})",
                        row.row_title(),
                        seeds(result.tried)
                    ));
                    (
                        format!("stopped by the time limit after {}: not a verdict", seeds(result.tried)),
                        Outcome::NoVerdict,
                    )
                }
                None => (
                    format!("**not caught**: not seen in {}", seeds(result.tried)),
                    Outcome::NotCaught,
                ),
            };
            rows.push(KillRow {
                switch: format!("`sim {flag}`"),
                run: format!("sim: {}, {scenario}: {}", row.row_title(), mutant.breaks),
                claim: claim.to_string(),
                found,
                outcome,
            });
        }
    }
    if !options.thesis_only {
        for index in 0..client_bugs().len() {
            let result = results.search(&Unit::ClientBug(index))?;
            rows.push(client_bug_row(index, result, stopped_by_time));
        }
    }
    Ok(rows)
}

/// The kill table's row of [`client_bugs`]`()[index]`, from its search.
fn client_bug_row(index: usize, result: &SimResult, stopped_by_time: &mut Vec<String>) -> KillRow {
    let (scenario, label) = client_bugs()[index];
    let (expected, claim) = expected_claim(scenario);
    let fired = if result.fired < result.tried {
        format!(", the fault fired in {} of them", result.fired)
    } else {
        String::new()
    };
    let (found, outcome) = match result.first_violation(claim) {
        Some(seed) if result.fired > 0 => (
            format!(
                "violated at seed {seed} ({} tried{fired}): `{}`",
                seeds(seed + 1),
                replay_command(scenario, seed, "")
            ),
            Outcome::Caught,
        ),
        None if result.stopped_by_time => {
            stopped_by_time.push(format!("client bug {scenario} (after {})", seeds(result.tried)));
            (
                format!("stopped by the time limit after {}: not a verdict", seeds(result.tried)),
                Outcome::NoVerdict,
            )
        }
        _ => (
            format!(
                "**not caught**: no {expected} violation in {}{fired}",
                seeds(result.tried)
            ),
            Outcome::NotCaught,
        ),
    };
    KillRow {
        switch: format!("`sim --scenario {scenario}`"),
        run: format!("sim: {label}"),
        claim: expected.to_owned(),
        found,
        outcome,
    }
}
