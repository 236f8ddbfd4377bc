//! The report's layout: matrix.md's sections in order, each row's table (every line's verdicts
//! and the contract columns), the compact views, the broken variants and every violation found.
//! The fixed prose is `prose`; the summaries read off the cells are `summaries`.

use std::fmt::Write as _;

use cassalock_judge::{Aspect, ClaimId};

use super::broken_variants::{KillRow, Outcome};
use super::cells::Cells;
use super::claims::{contract_claims, CONTRACT};
use super::grid::{matrix_rows, Column, MatrixRow, Row};
use super::judgement::{Cell, Judgement};
use super::marks::{aspect_mark, contract_compact_mark, COMPACT_ASPECTS};
use super::options::MatrixOptions;
use super::prose;
use super::summaries::{thesis_section, which_lock_section};

/// The whole report, rendered from the typed cells.
/// `libraries`: the shipped libraries' section, placed under the answer table.
pub(super) fn markdown(cells: &Cells, mutants: &[KillRow], libraries: &str, options: &MatrixOptions) -> String {
    let mut md = String::new();
    let rows = options.rows();
    prose::introduction(&mut md, options, &rows);
    which_lock_section(&mut md, cells, &rows);
    md.push_str(libraries);
    for &row in &rows {
        row_table(&mut md, cells, row);
    }
    compact_aspects_view(&mut md, cells, &rows);
    compact_contract_view(&mut md, cells, &rows);
    thesis_section(&mut md, cells);
    broken_variants_section(&mut md, mutants);
    violations_section(&mut md, cells, &rows);
    md
}

/// A row's section: per fault, every line's verdicts, then a column per contract item.
fn row_table(md: &mut String, cells: &Cells, row: Row) {
    let _ = writeln!(md, "## {}\n", row.row_title());
    let _ = write!(md, "| fault | verdicts |");
    for claim in CONTRACT {
        let _ = write!(md, " {claim} |");
    }
    let _ = writeln!(md);
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for &column in row.columns() {
        let cell = &cells[&(row, column)];
        let lines: Vec<String> = cell.iter().map(Judgement::markdown).collect();
        let _ = write!(md, "| {} | {} |", column.name(), lines.join("<br>"));
        for claim in CONTRACT {
            let _ = write!(md, " {} |", contract_column(cell, row, claim));
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md);
}

/// A cell's entry in the column of contract item `claim`: each line's result, a simulator
/// line named by its label where the cell has several.
fn contract_column(cell: &Cell, row: Row, claim: ClaimId) -> String {
    let sims = cell.iter().filter(|j| matches!(j, Judgement::Sim { .. })).count();
    let parts: Vec<String> = cell
        .iter()
        .filter_map(|j| {
            let text = j.contract_markdown(row, claim)?;
            Some(match j {
                Judgement::Sim { label, .. } if sims > 1 => format!("{}: {text}", sim_short_label(label)),
                _ => text,
            })
        })
        .collect();
    if parts.is_empty() {
        "not checked (model only)".to_string()
    } else {
        parts.join("<br>")
    }
}

/// "Compact view: safety, liveness and fairness apart": a line per row and aspect, the thesis's
/// rows first, then the other families' under their own columns.
fn compact_aspects_view(md: &mut String, cells: &Cells, rows: &[Row]) {
    let _ = writeln!(md, "## Compact view: safety, liveness and fairness apart\n");
    for family in [false, true] {
        let rows: Vec<Row> = rows.iter().copied().filter(|row| row.is_family() == family).collect();
        if rows.is_empty() {
            continue;
        }
        if family {
            let _ = writeln!(md, "\nThe locks people use instead, under their servers' faults:\n");
        }
        compact_header(md, rows[0].columns());
        for row in rows {
            for aspect in COMPACT_ASPECTS {
                let marks: Vec<String> = row
                    .columns()
                    .iter()
                    .map(|column| aspect_mark(&cells[&(row, *column)], aspect))
                    .collect();
                if marks.iter().all(|mark| mark == "-" || mark == "n/a") {
                    continue;
                }
                let _ = writeln!(md, "| {} {} | {} |", row.row_title(), aspect.name(), marks.join(" | "));
            }
        }
    }
    prose::compact_aspects_legend(
        md,
        &claims_of(cells, Aspect::Safety),
        &claims_of(cells, Aspect::Liveness),
        &claims_of(cells, Aspect::Fairness),
    );
}

/// The claims of `aspect` that some cell judges, in ID order.
fn claims_of(cells: &Cells, aspect: Aspect) -> String {
    let mut ids: Vec<ClaimId> = cells
        .values()
        .flatten()
        .flat_map(|judgement| match judgement {
            Judgement::NotApplicable(_) => Vec::new(),
            Judgement::Model { claims, .. } => claims.iter().map(|c| c.claim).collect(),
            Judgement::Sim { claims, .. } => claims.iter().map(|c| c.search.claim).collect(),
        })
        .filter(|claim| claim.aspect() == aspect)
        .collect();
    ids.sort();
    ids.dedup();
    ids.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
}

/// "Compact view: the contract": a line per row and contract item its simulator lines judge,
/// the thesis's rows first; the other families' (their sim lines) below.
fn compact_contract_view(md: &mut String, cells: &Cells, rows: &[Row]) {
    let _ = writeln!(md, "## Compact view: the contract\n");
    compact_header(md, &Column::THESIS);
    for row in matrix_rows().into_iter().filter(|row| !row.is_family()) {
        contract_compact_lines(md, cells, row, &Column::THESIS);
    }
    if rows.iter().any(|row| row.is_family()) {
        let _ = writeln!(md, "\nThe locks people use instead, their simulator lines:\n");
        compact_header(md, &Column::FAMILY);
        for row in rows.iter().copied().filter(|row| row.is_family()) {
            contract_compact_lines(md, cells, row, &Column::FAMILY);
        }
    }
    prose::compact_contract_legend(md);
}

/// A row's lines of the compact contract view, one per contract item it judges.
fn contract_compact_lines(md: &mut String, cells: &Cells, row: Row, columns: &[Column]) {
    for claim in contract_claims(row) {
        let _ = write!(md, "| {} {claim} |", row.row_title());
        for &column in columns {
            let mark = contract_compact_mark(&cells[&(row, column)], claim);
            let _ = write!(md, " {mark} |");
        }
        let _ = writeln!(md);
    }
}

/// "Broken variants (mutants)": the kill table, a row per switch that breaks a lock on purpose.
fn broken_variants_section(md: &mut String, mutants: &[KillRow]) {
    let _ = writeln!(md, "## Broken variants (mutants)\n");
    let _ = writeln!(
        md,
        "Every switch the command line offers to break a lock on purpose, each run in the cell that \
         must catch it ([docs/mutants.md](../docs/mutants.md)): the model checker's mutants, the \
         simulator's mutants and the thesis's listings as written (for the old and the queue \
         lock), and the scenarios that plant a real client's known bug. A variant its cell does \
         not catch is marked **not caught**: that check proves nothing. {}\n",
        kill_count(mutants),
    );
    let _ = writeln!(md, "| switch | the variant, where it is run | claim | found |");
    let _ = writeln!(md, "|---|---|---|---|");
    for row in mutants {
        let _ = writeln!(md, "| {} | {} | {} | {} |", row.switch, row.run, row.claim, row.found);
    }
    let _ = writeln!(md);
}

/// The kill table's tally, in a sentence.
fn kill_count(rows: &[KillRow]) -> String {
    let count = |outcome: Outcome| rows.iter().filter(|row| row.outcome == outcome).count();
    let run = rows.len() - count(Outcome::NotRun);
    let mut text = format!("Caught: {} of the {run} runs", count(Outcome::Caught));
    for (outcome, what) in [
        (Outcome::NotCaught, "not caught"),
        (Outcome::NoVerdict, "stopped by a budget or the time limit, no verdict"),
        (Outcome::NotRun, "not run by the matrix, each with the reason"),
    ] {
        if count(outcome) > 0 {
            text.push_str(&format!("; {what}: {}", count(outcome)));
        }
    }
    text.push('.');
    text
}

/// "Every violation found": every judgement's violations, row by row and fault by fault.
fn violations_section(md: &mut String, cells: &Cells, rows: &[Row]) {
    let _ = writeln!(md, "## Every violation found\n");
    for &row in rows {
        for &column in row.columns() {
            for judgement in &cells[&(row, column)] {
                for finding in judgement.findings(row, column) {
                    let _ = writeln!(md, "- {finding}");
                }
            }
        }
    }
    let _ = writeln!(md);
}

/// The header of a compact table: one column per fault.
fn compact_header(md: &mut String, columns: &[Column]) {
    let _ = write!(md, "| |");
    for column in columns {
        let _ = write!(md, " {} |", column.name());
    }
    let _ = writeln!(md);
    let _ = write!(md, "|---|");
    for _ in columns {
        let _ = write!(md, "---|");
    }
    let _ = writeln!(md);
}

/// A sim label without its "sim, " prefix, to tell a cell's sim lines apart in the contract
/// columns.
fn sim_short_label(label: &str) -> &str {
    label.strip_prefix("sim, ").unwrap_or(label)
}
