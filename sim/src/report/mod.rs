//! The reports in `reports/`: fairness and performance, and the property matrix. Both are
//! functions of the commit: the same command gives byte-identical files.

pub mod charts;
#[cfg(madsim)]
pub mod fairness;
#[cfg(madsim)]
pub mod matrix;
pub mod real_cluster;
pub mod stats;

use std::path::Path;

/// Write `text` to `dir/name`, creating `dir`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
