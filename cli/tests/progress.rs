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

/// `check --clock-bound` moves a timed world's clock bound (the verdicts say the new one, and
/// the closing hint names the flag), and refuses, with exit status 2 and the rule, a bound
/// outside 2..=250 and worlds that have none to move; mutant M4 is refused where no cell
/// expires (nothing is renewed there).
#[test]
fn check_clock_bound_moves_the_bound_and_is_refused_where_there_is_none() {
    let check = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cassalock"))
            .arg("check")
            .args(args)
            .output()
            .expect("cassalock runs")
    };
    let default = check(&["--model", "getlock", "--fault", "pause", "--property", "C-lost"]);
    let raised = check(&[
        "--model",
        "getlock",
        "--fault",
        "pause",
        "--property",
        "C-lost",
        "--clock-bound",
        "5",
    ]);
    let default_out = String::from_utf8_lossy(&default.stdout);
    let raised_out = String::from_utf8_lossy(&raised.stdout);
    assert!(
        default.status.success() && raised.status.success(),
        "{default_out}\n{raised_out}"
    );
    assert!(
        default_out.contains("holds within bound (clock <= 4 ticks)"),
        "{default_out}"
    );
    assert!(
        raised_out.contains("holds within bound (clock <= 5 ticks)"),
        "{raised_out}"
    );
    assert!(
        raised_out.contains("ticks up to 5"),
        "the title says the bound: {raised_out}"
    );
    assert!(
        default_out.contains("clocks up to tick 4 was checked, nothing later; --clock-bound raises"),
        "{default_out}"
    );
    let states = |out: &str| -> u64 {
        out.lines()
            .find(|line| line.starts_with("C-lost a holder learns"))
            .and_then(|line| line.split_whitespace().rev().nth(2))
            .and_then(|count| count.parse().ok())
            .unwrap_or_else(|| panic!("a state count: {out}"))
    };
    assert!(
        states(&raised_out) > 2 * states(&default_out),
        "{default_out}\n{raised_out}"
    );

    for (args, says) in [
        (
            &["--model", "getlock", "--fault", "pause", "--clock-bound", "1"][..],
            "1 is not in 2..=250",
        ),
        (
            &["--model", "getlock", "--fault", "pause", "--clock-bound", "0"],
            "0 is not in 2..=250",
        ),
        (
            &["--model", "getlock", "--fault", "pause", "--clock-bound", "300"],
            "300",
        ),
        (
            &["--model", "getlock", "--fault", "skew", "--clock-bound", "6"],
            "time has no bound",
        ),
        (
            &["--model", "getlock", "--clock-bound", "6"],
            "applies where clocks tick",
        ),
        (
            &["--model", "redisson", "--clock-bound", "6"],
            "--clock-bound apply to the Cassandra lock models",
        ),
        (
            &["--model", "lemma", "--clock-bound", "6"],
            "--clock-bound apply to the lock models",
        ),
        (
            &["--model", "getlock", "--mutant", "m4"],
            "renewal runs only where cells expire",
        ),
        (
            &["--model", "getlock", "--fault", "skew", "--mutant", "m4"],
            "no cell expires",
        ),
    ] {
        let output = check(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// A model check piped (no terminal) is not silent for long: a line every 10 s with the time
/// limit, the most it can take.
#[test]
fn check_prints_progress_lines_with_its_time_limit_when_stderr_is_not_a_terminal() {
    let output = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args([
            "check",
            "--model",
            "getlock",
            "--leases",
            "--threads",
            "3",
            "--acquisitions",
            "2",
            "--max-seconds",
            "12",
        ])
        .output()
        .expect("cassalock runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "bounded by its time limit: {stderr}");
    assert!(
        stderr.contains("checking getlock (Listing 6) ... 10 s of at most 12 s"),
        "{stderr}"
    );
}
