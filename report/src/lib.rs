//! # cassalock-report
//!
//! The reports in `reports/`: fairness and performance, the property matrix, and the real-cluster
//! comparison. Each is a function of the commit and its options: the same command gives
//! byte-identical files.

pub mod charts;
#[cfg(madsim)]
pub mod fairness;
#[cfg(madsim)]
pub mod matrix;
pub mod real_cluster;

use std::path::Path;

/// Write `text` to `dir/name`, creating `dir`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
