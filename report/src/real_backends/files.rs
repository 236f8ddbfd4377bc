//! Writing the report, its charts and its data file, and reading the data file back to write
//! them again without measuring.

use std::path::Path;

use cassalock_real::Summary;

use super::charts::write_rendered;
use super::data::{FaultRun, Measured, Setup};
use super::DATA;
use crate::{write_file, ReportError};

/// Read the measurements a report was written from ([`DATA`]).
pub fn read_data(path: &Path) -> Result<Measured, ReportError> {
    crate::read_json(path)
}

/// Write the markdown, its charts and its data ([`DATA`]); returns the file names.
pub fn write(out: &Path, setup: &Setup, runs: &[Summary], faults: &[FaultRun]) -> Result<Vec<String>, ReportError> {
    let measured = Measured {
        setup: setup.clone(),
        runs: runs.to_vec(),
        faults: faults.to_vec(),
    };
    let data = serde_json::to_string_pretty(&measured).expect("plain data serializes") + "\n";
    write_file(out, DATA, &data)?;
    let mut files = write_rendered(out, setup, runs, faults)?;
    files.push(DATA.to_string());
    Ok(files)
}

/// Write the report and its charts into `out` again from the data file `data` of an earlier
/// benchmark, which is copied beside them byte for byte (a number read and written again may
/// change in its last digit); the file names, and the measurements.
pub fn write_again(data: &Path, out: &Path) -> Result<(Vec<String>, Measured), ReportError> {
    let measured = read_data(data)?;
    let mut files = write_rendered(out, &measured.setup, &measured.runs, &measured.faults)?;
    let target = out.join(DATA);
    let same = match (data.canonicalize(), target.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same {
        std::fs::copy(data, &target).map_err(|source| ReportError::Write { path: target, source })?;
    }
    files.push(DATA.to_string());
    Ok((files, measured))
}
