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

/// The matrix end to end on a tiny budget: every sim line searched, the contract columns and
/// compact view, the contract findings with both columns, and nothing stopped by the time cap.
#[test]
#[ignore = "the thesis's matrix end to end, most of a minute: .ci/run runs it (cargo test -p cassalock-report --test reports -- --ignored)"]
fn matrix_report_searches_seeds_and_shows_the_contract() {
    use cassalock_report::matrix::{run_matrix, MatrixOptions};
    let out = std::env::temp_dir().join(format!("cassalock-matrix-test-{}", std::process::id()));
    std::fs::create_dir_all(&out).expect("temp dir");
    let options = MatrixOptions {
        out: out.clone(),
        max_seeds: 2,
        cell_time: Duration::from_secs(600),
        contract_seeds: 2,
        jobs: 2,
        // The other families' rows are model runs only (Redlock's take minutes in a test
        // build): their verdicts are pinned in models/tests/family.rs.
        thesis_only: true,
    };
    let written = run_matrix(&options, &|_, _, _| {}).expect("matrix written");
    assert!(written.stopped_by_time.is_empty(), "{:?}", written.stopped_by_time);
    let md = std::fs::read_to_string(out.join("matrix.md")).expect("matrix.md");
    assert!(md.contains("`cassalock report matrix --max-seeds 2 --cell-time-s 600 --contract-seeds 2 --thesis-only`"));
    assert!(
        !md.contains("Redlock"),
        "--thesis-only leaves out the other families' rows"
    );
    assert!(md.contains("| fault | verdicts | C-try | C-free | C-release | C-lost | C-token |"));
    // A pause past the TTL breaks T1-belief at seed 0: the search says so, with the trace.
    assert!(
        md.contains(
            "T1-belief, T1-server: [violated at seed 0 (1 seed tried)](matrix/queue-pause-pause-t1-belief-seed0.txt)"
        ),
        "the pause cell reports its first violating seed"
    );
    assert!(out.join("matrix/queue-pause-pause-t1-belief-seed0.txt").is_file());
    assert!(md.contains("K3, T1-belief, T1-resource, T1-server, T2: no violation in 2 seeds"));
    assert!(md.contains("## Compact view: the contract"));
    // Safety, liveness and fairness apart: the old lock with no faults is unfair and can
    // starve a waiter, but no check found two holders.
    assert!(md.contains("## Compact view: safety, liveness and fairness apart"));
    assert!(
        md.contains("| old GetLock (L3-4) safety | no violation |"),
        "old lock, no faults: safe"
    );
    assert!(md.contains("| old GetLock (L3-4) liveness | **violated: T2** |"));
    assert!(md.contains("| old GetLock (L3-4) fairness | **violated: F-overtakes** |"));
    assert!(!md.contains("**broken**"), "no mark lumps the aspects together");
    // One model checks C-lost twice (within its bound, and eventually): both are named.
    assert!(md.contains("C-lost (always) ") && md.contains("C-lost (liveness) "));
    // The time service's two skew columns are one model run: shown once, its traces written once.
    assert!(md.contains("the same model run as the *skew below the TTL* row above"));
    assert!(!out.join("matrix/globaltime-skew-at-ttl-model-t5-race.txt").exists());
    assert!(md.contains("| TryGetLock (L7) C-try |"));
    assert!(md.contains("## What the contract checks found"));
    assert!(md.contains("| C-free | `loss` | queue |"));
    assert!(
        !md.contains(" ok,") && !md.contains(" ok |"),
        "no check reads a bare \"ok\""
    );
    for file in &written.files {
        assert!(out.join(file).is_file(), "{file} listed but not written");
    }
    std::fs::remove_dir_all(&out).ok();
}
