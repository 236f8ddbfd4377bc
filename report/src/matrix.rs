//! `cassalock report matrix`: every algorithm against every fault model, each cell judged by the
//! model checker where it applies and by the simulator over N seeds.
//!
//! Each cell is judged into typed values (`Judgement`: claim, verdict, model states or sim
//! seeds, whether the fault fired, trace files); the markdown, the compact view and the thesis
//! section are rendered from those values at the end, never from each other's text.
//!
//! This file is the entry point: the public API, running the units of work and rendering the
//! report from their results. The rest is under `matrix/`, one concept a file, and imports
//! point one way: each file uses only files listed before it here (definition <- judgement <-
//! execution <- rendering <- this file).
//!
//! - definition: `grid` (rows and columns) <- `family_sim` (the families' scenario tables) <-
//!   `sources` (which sources feed each cell); `claims` (which claims apply where); `mutants`
//!   (the broken variants); `options` (a run's options, what it wrote, its errors);
//! - judgement: `judgement` (the judgement types) <- `marks` (how a cell is marked);
//! - execution: `seed_search` (a simulator line's seed search) <- `units` (the units of work,
//!   their shards, their results);
//! - rendering: `cells` (the cells judged from the results, with their trace files) <-
//!   `broken_variants` (the mutants' lines), `prose` (the fixed prose), `summaries` (the
//!   summaries read off the cells) <- `markdown` (the report's layout).

// Definition.
mod claims;
mod family_sim;
mod grid;
mod listing;
mod mutants;
mod options;
mod sources;
// Judgement.
mod judgement;
mod libraries;
mod marks;
// Execution.
mod seed_search;
mod units;
// Rendering.
mod broken_variants;
mod cells;
mod markdown;
mod prose;
mod summaries;

pub use grid::{matrix_rows, Column, MatrixRow, Row};
pub use judgement::ClaimSearch;
pub use listing::{lock_listings, LockListing};
pub use options::{MatrixError, MatrixOptions, MatrixRun};
pub use seed_search::SimResult;
pub use units::{MatrixShard, MatrixSweep, ModelOutcome, ModelRow, UnitResult};

use std::path::Path;

use crate::{write_file, ReportError};
use units::Unit;

/// Run the matrix and write matrix.md and its trace files: every unit of the plan on this
/// machine (shard 1 of 1), then the report rendered from their results.
pub fn run_matrix(
    options: &MatrixOptions,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<MatrixRun, MatrixError> {
    let shard = run_matrix_shard(options, 1, 1, progress)?;
    render_matrix(options, &[shard])
}

/// Run shard `k` of `n` of the matrix's units (`units`: the units `i % n == k - 1` of the
/// plan) and keep their results, writing nothing; `progress(unit, done, total)` before each.
pub fn run_matrix_shard(
    options: &MatrixOptions,
    k: u64,
    n: u64,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<MatrixShard, MatrixError> {
    debug_assert!(1 <= k && k <= n, "shard {k}/{n}");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .thread_name(|i| format!("matrix-{i}"))
        .build()
        .map_err(ReportError::from)?;
    let plan = units::plan(options);
    let mine: Vec<usize> = (0..plan.len()).filter(|&i| i as u64 % n == k - 1).collect();
    let mut results = Vec::with_capacity(mine.len());
    for (done, &index) in mine.iter().enumerate() {
        progress(&plan[index].label(), done, mine.len());
        results.push((index, units::execute(&plan[index], &pool, options)?));
    }
    Ok(MatrixShard {
        sweep: MatrixSweep::of(options),
        k,
        n,
        units: plan.len(),
        results,
    })
}

/// Write matrix.md and its trace files from the results of shards that together hold every
/// unit of the plan once (one machine's shard 1 of 1, or `cassalock merge` of N).
pub fn render_matrix(options: &MatrixOptions, shards: &[MatrixShard]) -> Result<MatrixRun, MatrixError> {
    if let Some(other) = shards.iter().find(|shard| shard.sweep != MatrixSweep::of(options)) {
        return Err(MatrixError::Shard(format!(
            "shard {}/{} is of another sweep ({:?}) than {:?}",
            other.k,
            other.n,
            other.sweep,
            MatrixSweep::of(options)
        )));
    }
    let results = units::Results::gathered(options, shards)?;
    let out_dir = options.out.join("matrix");
    crate::create_dir(&out_dir)?;
    let mut files = Vec::new();
    let mut stopped_by_time = Vec::new();
    let cells = cells::judge_cells(options, &results, &out_dir, &mut files, &mut stopped_by_time)?;
    let mutants = broken_variants::kill_rows(options, &results, &out_dir, &mut files, &mut stopped_by_time)?;
    let figures = (0..crate::contract_findings::keys().len())
        .map(|index| results.contract(&Unit::ContractSet(index)).cloned())
        .collect::<Result<Vec<_>, MatrixError>>()?;
    let findings = crate::contract_findings::assemble(options.contract_seeds, figures);
    stopped_by_time.extend(findings.stopped_by_time());
    let mut libraries = String::new();
    if !options.thesis_only {
        libraries::libraries_section(&mut libraries, Path::new(libraries::CLIENT_RECORDS))?;
    }
    let mut md = markdown::markdown(&cells, &mutants, &libraries, options);
    crate::contract_findings::render(&mut md, &findings);
    write_file(&options.out, "matrix.md", &md)?;
    files.push("matrix.md".into());
    Ok(MatrixRun { files, stopped_by_time })
}
