//! The reports are a function of their options: the same command on the same commit writes the
//! same bytes, whatever the number of parallel jobs. Checked on a small fairness grid (the full
//! grid runs in `cassalock report fairness`).

#![cfg(madsim)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cassalock_report::fairness::{measure, write, FairnessOptions};

fn small_grid(out: &Path, jobs: usize) -> FairnessOptions {
    FairnessOptions {
        out: out.to_path_buf(),
        seeds: 1,
        threads: vec![1, 3],
        hold_ms: (5, 20),
        think_ms: (0, 50),
        duration: Duration::from_secs(4),
        jobs,
    }
}

/// Every file the report wrote, by name, with its bytes.
fn written(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("report directory")
        .map(|entry| {
            let entry = entry.expect("entry");
            (
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).expect("read"),
            )
        })
        .collect()
}

#[test]
fn fairness_report_is_byte_identical_across_runs_and_job_counts() {
    let base = std::env::temp_dir().join(format!("cassalock-report-test-{}", std::process::id()));
    let (first, second) = (base.join("one-job"), base.join("two-jobs"));
    for (dir, jobs) in [(&first, 1), (&second, 2)] {
        std::fs::create_dir_all(dir).expect("temp dir");
        let options = small_grid(dir, jobs);
        let measured = measure(&options, &|_, _| {}).expect("measured");
        write(&measured).expect("report written");
    }
    let (a, b) = (written(&first), written(&second));
    assert!(
        a.contains_key("fairness.md"),
        "the report writes fairness.md, wrote {:?}",
        a.keys()
    );
    assert!(
        a.keys().filter(|name| name.ends_with(".svg")).count() >= 8,
        "every figure is an SVG: {:?}",
        a.keys()
    );
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "same files");
    for (name, bytes) in &a {
        assert!(
            bytes == &b[name],
            "{name} differs between a 1-job and a 2-job run of the same options"
        );
    }
    let markdown = String::from_utf8(a["fairness.md"].clone()).expect("utf-8");
    assert!(
        markdown.contains("## What the numbers say"),
        "the report interprets its numbers"
    );
    assert!(
        markdown.contains("| queue GetLock | 3 |"),
        "a data row per variant and thread count"
    );
    std::fs::remove_dir_all(&base).ok();
}
