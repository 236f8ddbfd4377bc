//! The "Broken variants" lines: each mutant's and planted client bug's result, read from its
//! unit, with the trace file of every model counterexample. Each must break its claim, or the
//! checks prove nothing.

use std::path::Path;

use cassalock_sim::family::scenario::replay_command;

use super::family_sim::{client_bugs, expected_claim};
use super::grid::{MatrixRow, Row};
use super::marks::{seeds, short};
use super::mutants::{MUTANT_MODELS, MUTANT_SIMS};
use super::options::{MatrixError, MatrixOptions};
use super::seed_search::SimResult;
use super::sources::algorithm;
use super::units::{Results, Unit};
use crate::write_file;

/// The "Broken variants" lines, from the mutants' units: each must break its claim, or the
/// checks prove nothing. Writes each model counterexample's trace file.
pub(super) fn mutant_lines(
    options: &MatrixOptions,
    results: &Results,
    out_dir: &Path,
    files: &mut Vec<String>,
    stopped_by_time: &mut Vec<String>,
) -> Result<Vec<(String, String)>, MatrixError> {
    let mut lines = Vec::new();
    for (index, mutant) in MUTANT_MODELS.iter().enumerate() {
        // `--thesis-only` leaves out the other families' rows, their client bugs with them.
        if options.thesis_only && mutant.mutant.is_family_client_bug() {
            continue;
        }
        let report = results.model(&Unit::MutantModel(index))?;
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
                format!(" [{steps} steps](matrix/{name})")
            }
            None => String::new(),
        };
        lines.push((
            format!("model: {}: {claim} {}", mutant.label, short(&row.verdict)),
            link,
        ));
    }
    for (index, mutant) in MUTANT_SIMS.iter().enumerate() {
        for row in [Row::Old, Row::Queue] {
            let result = results.search(&Unit::MutantSim(index, row))?;
            let (claim, scenario, flag) = (mutant.claim, mutant.scenario, mutant.flag);
            let text = match result.first_violation(claim) {
                Some(seed) => format!(
                    "sim: {claim}, {}, {scenario} {flag}: {}, violated at seed {seed} ({} tried): `cassalock \
                     replay --scenario {scenario} --seed {seed} --algorithm {} {flag}`",
                    row.row_title(),
                    mutant.breaks,
                    seeds(seed + 1),
                    algorithm(row).name()
                ),
                None if result.stopped_by_time => {
                    stopped_by_time.push(format!(
                        "mutant {claim}, {}, {scenario} {flag} (after {})",
                        row.row_title(),
                        seeds(result.tried)
                    ));
                    format!(
                        "sim: {claim}, {}, {scenario} {flag}: stopped by the time limit after {}: not a verdict",
                        row.row_title(),
                        seeds(result.tried)
                    )
                }
                None => format!(
                    "sim: {claim}, {}, {scenario} {flag}: not seen in {}: the check missed the mutant",
                    row.row_title(),
                    seeds(result.tried)
                ),
            };
            lines.push((text, String::new()));
        }
    }
    if !options.thesis_only {
        for index in 0..client_bugs().len() {
            let result = results.search(&Unit::ClientBug(index))?;
            lines.push(client_bug_line(index, result, stopped_by_time));
        }
    }
    Ok(lines)
}

/// The "Broken variants" line of [`client_bugs`]`()[index]`, from its search.
fn client_bug_line(index: usize, result: &SimResult, stopped_by_time: &mut Vec<String>) -> (String, String) {
    let (scenario, label) = client_bugs()[index];
    let (expected, claim) = expected_claim(scenario);
    let fired = if result.fired < result.tried {
        format!(", the fault fired in {} of them", result.fired)
    } else {
        String::new()
    };
    let text = match result.first_violation(claim) {
        Some(seed) if result.fired > 0 => format!(
            "sim: {label}: {expected} violated at seed {seed} ({} tried{fired}): `{}`",
            seeds(seed + 1),
            replay_command(scenario, seed, "")
        ),
        None if result.stopped_by_time => {
            stopped_by_time.push(format!("client bug {scenario} (after {})", seeds(result.tried)));
            format!(
                "sim: {label}: stopped by the time limit after {}: not a verdict",
                seeds(result.tried)
            )
        }
        _ => format!(
            "sim: {label}: **not caught**: no {expected} violation in {}{fired}",
            seeds(result.tried)
        ),
    };
    (text, String::new())
}
