//! A matrix run's options (which rows it judges, its seed and time budgets), what it wrote, and
//! why it could not be made.

use std::path::PathBuf;
use std::time::Duration;

use super::grid::{matrix_rows, Row};
use crate::ReportError;

/// Options of a matrix run.
#[derive(Clone, Debug)]
pub struct MatrixOptions {
    pub out: PathBuf,
    /// The seed budget of each simulator search: seeds 0, 1, ... up to this many.
    pub max_seeds: u64,
    /// The wall-time cap of each simulator search (each sim line of a cell). A search it stops
    /// is no verdict, and the report says so: its output depends on the machine.
    pub cell_time: Duration,
    /// Seeds of each run behind "What the contract checks found".
    pub contract_seeds: u64,
    pub jobs: usize,
    /// Only the thesis's rows (`--thesis-only`): the other families' are left out.
    pub thesis_only: bool,
}

impl MatrixOptions {
    /// The rows this run judges.
    pub fn rows(&self) -> Vec<Row> {
        matrix_rows()
            .into_iter()
            .filter(|row| !(self.thesis_only && row.is_family()))
            .collect()
    }
}

/// What a matrix run wrote, and what made its output depend on the machine.
#[derive(Clone, Debug)]
pub struct MatrixRun {
    pub files: Vec<String>,
    /// The searches the wall-time cap stopped before their seed budget, and the model checks
    /// the machine's time or memory limit stopped (empty: the report is a function of the
    /// commit and the options).
    pub stopped_by_time: Vec<String>,
}

/// Why the matrix could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error("{label}: {source}")]
    Model {
        label: String,
        source: cassalock_models::SpecError,
    },
    /// The checker's own cross-checks disagreed: a bug in the checker, not a verdict.
    #[error("model checker disagreement in {label}: {errors:?}")]
    CheckerDisagreement { label: String, errors: Vec<String> },
    /// Shards' results that do not make one matrix (missing, repeated, of another sweep).
    #[error("{0}")]
    Shard(String),
}
