//! # cassalock-report
//!
//! The reports in `reports/`: fairness and performance, the property matrix, and the real-backends
//! comparison (every lock on real servers). The simulated ones are a function of the commit and
//! its options: the same command gives byte-identical files; the real-backends report is
//! wall-clock and says so.

pub mod charts;
pub mod client_pictures;
pub mod command_line;
#[cfg(madsim)]
pub mod contract_findings;
#[cfg(madsim)]
pub mod fairness;
#[cfg(madsim)]
pub mod handoff;
pub mod html;
#[cfg(madsim)]
pub mod matrix;
pub mod real_backends;
pub mod real_clients;
pub mod real_long_run;

use std::path::{Path, PathBuf};

use plotters::drawing::DrawingAreaErrorKind;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot create {}: {source}", path.display())]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    /// plotters' SVG backend failed (in practice, writing the file).
    #[error("cannot draw {}: {source}", path.display())]
    Chart {
        path: PathBuf,
        source: DrawingAreaErrorKind<std::io::Error>,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// A counterexample's timeline could not be drawn or written (the simulation build draws).
    #[cfg(madsim)]
    #[error("{}: {source}", path.display())]
    Timeline {
        path: PathBuf,
        source: cassalock_sim::timeline::TimelineError,
    },
    /// A data file that is not what the report was written from.
    #[error("{} is not a report's data file: {source}", path.display())]
    Data { path: PathBuf, source: serde_json::Error },
    #[error("cannot read the event record {}: {source}", path.display())]
    Record {
        path: PathBuf,
        source: cassalock_judge::event::ReadError,
    },
    #[error("{} is not the record of a client run (its header names another judge)", path.display())]
    NotAClientRun { path: PathBuf },
    #[error("{} holds {found} files, more than the {most} a report reads", path.display())]
    TooManyRecords { path: PathBuf, found: usize, most: usize },
    #[error("{} is {bytes} bytes, more than the {most} a report may be", path.display())]
    TooLarge { path: PathBuf, bytes: u64, most: u64 },
    /// A Markdown report without a part the site is built from.
    #[error("{} has no {missing}: is it a report `cassalock report` wrote?", path.display())]
    NotAReport { path: PathBuf, missing: &'static str },
    #[error("cannot start the worker threads: {0}")]
    Threads(#[from] rayon::ThreadPoolBuildError),
}

/// Create `dir` and its parents.
pub fn create_dir(dir: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })
}

/// Read a report's data file (JSON) back.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| ReportError::Data {
        path: path.to_path_buf(),
        source,
    })
}

/// Write `text` to `dir/name`, creating `dir`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> Result<(), ReportError> {
    create_dir(dir)?;
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|source| ReportError::Write { path, source })
}
