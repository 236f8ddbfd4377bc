//! Verdicts and exit statuses that must not say more than was checked: a finding exits 1; a
//! claim the run gave no occasion to is never written "ok"; a claim a model leaves out at its
//! size is said to be left out, and asking for it alone is refused with the flag that checks it.
#![cfg(madsim)]

use std::process::{Command, Output, Stdio};

fn cassalock(args: &[&str], stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("the cassalock binary runs")
}

/// The skew sweep's finding is a violation: it exits 1, as the replay it prints does.
#[test]
fn a_finding_of_the_offset_sweep_exits_1_as_its_replay_does() {
    let out = cassalock(
        &[
            "sim",
            "--scenario",
            "skew",
            "--sweep-offsets",
            "--seeds",
            "0..2",
            "--algorithm",
            "queue",
        ],
        Stdio::piped(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FINDING (queue algorithm)"), "{stdout}");
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let replay = stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("replay: cassalock "))
        .expect("a replay command");
    let again = cassalock(&replay.split(' ').collect::<Vec<_>>(), Stdio::piped());
    assert_eq!(again.status.code(), Some(1), "{replay}");
}

/// `--per-seed-out` writes "no occasion" where the run gave a claim none (the contention
/// scenario calls lock(), never try_lock(): C-try), never "ok".
#[test]
fn a_per_seed_line_never_calls_a_claim_without_occasion_ok() {
    let dir = std::env::temp_dir().join(format!("cassalock-per-seed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("per-seed.jsonl");
    let out = cassalock(
        &[
            "sim",
            "--scenario",
            "contention",
            "--seeds",
            "0..3",
            "--algorithm",
            "queue",
            "--per-seed-out",
            path.to_str().expect("utf-8"),
        ],
        Stdio::null(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&path).expect("written");
    std::fs::remove_dir_all(&dir).expect("removed");
    assert_eq!(text.lines().count(), 3);
    for line in text.lines() {
        let line: serde_json::Value = serde_json::from_str(line).expect("JSON");
        assert_eq!(line["claims"]["C-try"], "no occasion", "{line}");
        assert_eq!(line["claims"]["T1-belief"], "ok", "{line}");
    }
}

/// The fair lock's model at its default size (2 clients x 1 acquisition) cannot exercise
/// F-order, the fair lock's point: the output says so, and `--property F-order` is refused
/// with the flags that check it, not with a list that leaves F-order out without a word.
#[test]
fn f_order_left_out_at_the_fair_lock_model_s_default_size_is_said() {
    let out = cassalock(&["check", "--model", "redisson-fair"], Stdio::piped());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("F-order NOT CHECKED: with 2 clients x 1 acquisition"),
        "{stdout}"
    );
    let only = cassalock(
        &["check", "--model", "redisson-fair", "--property", "F-order"],
        Stdio::piped(),
    );
    let stderr = String::from_utf8_lossy(&only.stderr);
    assert_eq!(only.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--threads 3 or --acquisitions 2 checks it"), "{stderr}");
    let unknown = cassalock(
        &["check", "--model", "redisson", "--property", "F-nope"],
        Stdio::piped(),
    );
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert_eq!(unknown.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.matches("T2").count(), 1, "each claim named once: {stderr}");
}

/// A search stopped by its time limit says that limit, not stateright's budget of generated
/// states (32 x --max-states) as if it were the state limit.
#[test]
fn a_search_stopped_by_time_names_the_time_limit() {
    let out = cassalock(
        &[
            "check",
            "--model",
            "getlock",
            "--leases",
            "--threads",
            "3",
            "--acquisitions",
            "2",
            "--max-seconds",
            "1",
        ],
        Stdio::piped(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("bounded (time limit of 1 s)"), "{stdout}");
    assert!(!stdout.contains("160000000"), "{stdout}");
}

/// The time-service scenario's sweep reports S1, as its replay does, and refuses the old lock,
/// which never reads the time service (it would pass without testing anything).
#[test]
fn the_time_service_sweep_reports_s1_and_refuses_the_old_lock() {
    let out = cassalock(
        &["sim", "--scenario", "timeservice-stall", "--seeds", "0..2"],
        Stdio::piped(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("timeservice-stall | queue algorithm"), "{stdout}");
    assert!(!stdout.contains("old algorithm"), "{stdout}");
    assert!(
        stdout.contains("S1           GlobalTime stood still for at most 20."),
        "{stdout}"
    );
    for command in ["sim", "replay"] {
        let (seeds, first) = if command == "sim" {
            ("--seeds", "0..1")
        } else {
            ("--seed", "0")
        };
        let old = cassalock(
            &[
                command,
                "--scenario",
                "timeservice-stall",
                seeds,
                first,
                "--algorithm",
                "old",
            ],
            Stdio::piped(),
        );
        let stderr = String::from_utf8_lossy(&old.stderr);
        assert_eq!(old.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("--algorithm old: the old lock never reads the time service"),
            "{command}: {stderr}"
        );
    }
}

/// A failing seed's record suggestion works wherever it is run: `--record`, not a shell line
/// with a path relative to the repository.
#[test]
fn a_failing_seed_suggests_record_not_a_shell_line() {
    let out = cassalock(
        &[
            "sim",
            "--scenario",
            "skew",
            "--offset-s",
            "20",
            "--algorithm",
            "old",
            "--seeds",
            "0..1",
        ],
        Stdio::piped(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("record: rerun with --record"), "{stdout}");
    assert!(!stdout.contains("echo "), "{stdout}");
}
