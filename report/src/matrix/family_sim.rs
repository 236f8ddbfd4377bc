//! The simulator's lines in the other families' cells: which named scenario of the families'
//! simulator (`cassalock sim --scenario NAME`, sim/src/family) judges which fault column of
//! each lock's row, and which scenario catches each planted client bug.
//!
//! Each scenario says where it goes (`Named::matrix`, beside it in its lock's file of
//! sim/src/family/scenario); this file only reads that. The lines are searched seed by seed like
//! the thesis's (`seed_search`), their judges filed under the claim IDs of docs/claims.md. A
//! scenario that plants a client's bug (go-redsync, node-redlock, Redisson 775, etcd 11456 and
//! 10756, CURATOR-604, the barging fair lock) is not a fault of the lock: those are the
//! "Broken variants" lines ([`client_bugs`]), and docs/mutants.md.

use cassalock_judge::ClaimId;
use cassalock_sim::family::scenario::{build as build_family, scenarios as all_scenarios, InMatrix, MatrixColumn};

use super::grid::{Column, MatrixRow, Row};

/// A simulator line of a cell: (scenario, label).
pub(super) type Line = (&'static str, &'static str);

/// The matrix's column of a scenario's fault.
fn column_of(column: MatrixColumn) -> Column {
    match column {
        MatrixColumn::None => Column::None,
        MatrixColumn::Pause => Column::Pause,
        MatrixColumn::StoreFailure => Column::StoreFailure,
        MatrixColumn::Restart => Column::Restart,
        MatrixColumn::Failover => Column::Failover,
        MatrixColumn::ServerClockJump => Column::ServerClockJump,
        MatrixColumn::LostNotification => Column::LostNotification,
        MatrixColumn::Partition => Column::Partition,
    }
}

/// A cell's simulator lines, in the order the simulator lists its scenarios. Empty: the cell
/// is judged by the model alone.
pub(super) fn scenarios(row: Row, column: Column) -> Vec<Line> {
    all_scenarios()
        .filter_map(|named| match named.matrix {
            InMatrix::Cell(at, label) if column_of(at) == column => Some((named.name, label)),
            _ => None,
        })
        .filter(|(scenario, _)| lock_of(scenario) == row.key())
        .collect()
}

/// The registry name of the lock scenario `scenario` runs.
fn lock_of(scenario: &str) -> &'static str {
    build_family(scenario, 0)
        .expect("a scenario of the simulator's list builds")
        .lock
        .name()
}

/// The real clients' bugs the family simulator plants (docs/mutants.md), each with the scenario
/// that catches it: a line each for "Broken variants".
pub(super) fn client_bugs() -> Vec<Line> {
    all_scenarios()
        .filter_map(|named| match named.matrix {
            InMatrix::ClientBug(label) => Some((named.name, label)),
            _ => None,
        })
        .collect()
}

/// The claim a client bug's scenario exists to violate: its name as the family judges write it,
/// and its ID.
pub(super) fn expected_claim(scenario: &str) -> (&'static str, ClaimId) {
    let built = build_family(scenario, 0).expect("a scenario of sim/src/family");
    let expected = built.expect_violated.expect("a client bug's scenario names its claim");
    let claim = cassalock_sim::family::Claim::named(expected)
        .expect("a claim of the family judges")
        .id();
    (expected, claim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::grid::matrix_rows;

    #[test]
    fn every_scenario_placed_in_a_cell_is_a_line_of_its_locks_row_in_that_column() {
        let rows = matrix_rows();
        let mut placed = 0;
        for named in all_scenarios() {
            let InMatrix::Cell(at, label) = named.matrix else {
                continue;
            };
            placed += 1;
            let row = rows
                .iter()
                .copied()
                .find(|row| row.key() == lock_of(named.name))
                .unwrap_or_else(|| panic!("{} runs a lock without a matrix row", named.name));
            let column = column_of(at);
            assert!(row.columns().contains(&column), "{}: {column:?}", named.name);
            assert!(
                scenarios(row, column).contains(&(named.name, label)),
                "{} is not a line of {row} / {column:?}",
                named.name
            );
            assert!(label.starts_with("sim, "), "{label}");
        }
        assert!(placed >= 30, "{placed} scenarios placed");
    }

    #[test]
    fn every_family_row_has_a_simulator_line_under_partition() {
        let family_rows: Vec<Row> = matrix_rows().into_iter().filter(|row| row.is_family()).collect();
        assert!(family_rows.len() >= 8, "{family_rows:?}");
        for row in family_rows {
            assert!(row.columns().contains(&Column::Partition), "{row}");
            assert!(
                !scenarios(row, Column::Partition).is_empty(),
                "{row}: no partition line"
            );
        }
    }

    #[test]
    fn every_planted_client_bug_names_the_claim_it_breaks() {
        let bugs = client_bugs();
        assert_eq!(bugs.len(), 7, "{bugs:?}");
        for (scenario, _) in bugs {
            let (expected, _) = expected_claim(scenario);
            assert!(!expected.is_empty(), "{scenario}");
        }
    }
}
