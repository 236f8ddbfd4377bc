//! Progress of a long run, without a terminal (CI, `nohup`): `report` prints a line per tenth of
//! each stage's real total and one when the stage ends, so a 10-minute run shows it is alive,
//! never "0/0" and never a count past its total.
#![cfg(madsim)]

use std::process::Command;

#[test]
fn report_prints_progress_lines_with_real_totals_when_stderr_is_not_a_terminal() {
    let out = std::env::temp_dir().join(format!("cassalock-progress-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args([
            "report",
            "fairness",
            "--seeds",
            "1",
            "--threads",
            "1,2",
            "--duration-s",
            "1",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("cassalock runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // "report: fairness: 3/21 runs (14%), 0 s elapsed"
    let counts: Vec<(usize, usize)> = stderr
        .lines()
        .filter_map(|line| line.strip_prefix("report: fairness: "))
        .map(|rest| {
            let fraction = rest.split_whitespace().next().expect("a count");
            let (done, total) = fraction.split_once('/').expect("done/total");
            (done.parse().expect("done"), total.parse().expect("total"))
        })
        .collect();
    assert!(counts.len() >= 5, "a line per tenth of the work: {stderr}");
    assert!(counts.len() <= 10, "at most one line per tenth: {stderr}");
    let total = counts[0].1;
    assert!(total > 0, "a real total, never 0/0: {stderr}");
    assert!(counts.iter().all(|&(_, t)| t == total), "one total per stage: {stderr}");
    assert!(counts.windows(2).all(|w| w[0].0 < w[1].0), "counts only grow: {stderr}");
    assert!(
        counts.iter().all(|&(done, _)| done < total),
        "the last line is the stage's end: {stderr}"
    );
    assert!(
        stderr
            .lines()
            .last()
            .is_some_and(|line| line.starts_with("report: fairness done in ")),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// A check cut short says which limit stopped it and the flag that moves it, and exits 3 (no
/// violation found, not every verdict final).
#[test]
fn a_bounded_check_names_the_limit_that_stopped_it_and_the_flag_that_raises_it() {
    let run = |limit: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_cassalock"))
            .args(["check", "--model", "trygetlock", "--threads", "3", "--fault", "skew"])
            .args(limit)
            .output()
            .expect("cassalock runs");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let (code, stdout) = run(&["--max-states", "1000"]);
    assert_eq!(code, Some(3), "{stdout}");
    assert!(
        stdout.contains("the state limit (1000) stopped the search: --max-states raises it"),
        "{stdout}"
    );
    let (code, stdout) = run(&["--acquisitions", "2", "--max-seconds", "1"]);
    assert_eq!(code, Some(3), "{stdout}");
    assert!(
        stdout.contains("the time limit (1 s) stopped the search: --max-seconds raises it"),
        "{stdout}"
    );
    let (code, stdout) = run(&[]);
    assert_eq!(code, Some(0), "the whole world fits the default limits: {stdout}");
    assert!(!stdout.contains("stopped the search"), "{stdout}");
}
