//! `cassalock real --client`: client programs that speak the client protocol, run as black
//! boxes. A test client (`tests/clients/flock_lock.py`, a lock on this machine through `flock`,
//! no server needed) is run honest, barging, and breaking the protocol in every way it can: the
//! verdict must be the lock's when it behaved, and a named break, never a pass, when it did not.
//! A lock that keeps itself after a give-up or a release is caught by the next caller.

use std::path::PathBuf;
use std::process::{Command, Output};

fn cassalock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("cassalock runs")
}

/// A fresh lock file for one test.
fn lock_file(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cassalock-client-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(test);
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(file.with_extension("count"));
    let _ = std::fs::remove_file(file.with_extension("left"));
    file
}

/// Run `clients` copies of the test client with `flags` for `acquisitions` each, plus `extra`
/// arguments to cassalock.
fn run(test: &str, flags: &str, clients: &str, extra: &[&str]) -> (i32, String, String) {
    let command = format!(
        "python3 cli/tests/clients/flock_lock.py {} {flags}",
        lock_file(test).display()
    );
    let mut args = vec!["real", "--client", &command, "--threads", clients];
    for (flag, default) in [
        ("--acquisitions", "3"),
        ("--hold-ms", "5"),
        ("--max-wait-ms", "2000"),
        ("--start-timeout-s", "5"),
    ] {
        if !extra.contains(&flag) {
            args.extend([flag, default]);
        }
    }
    args.extend_from_slice(extra);
    let output = cassalock(&args);
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn an_honest_lock_holds_t1_under_a_paused_holder_and_its_record_judges_the_same() {
    let record = std::env::temp_dir().join(format!("cassalock-client-honest-{}.jsonl", std::process::id()));
    let record_arg = record.display().to_string();
    let (code, out, err) = run(
        "honest",
        "",
        "3",
        &["--pause-holder-ms", "300", "--pause-at", "2", "--events", &record_arg],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("flock 0 flock x 3 clients: 9 acquisitions"), "{out}");
    assert!(
        out.contains("the holder of acquisition 2 stopped (SIGSTOP) for 300 ms"),
        "{out}"
    );
    assert!(
        out.contains("T1-belief    ok       9 acquisitions, never two believers"),
        "{out}"
    );
    assert!(out.contains("told at release         9 released"), "{out}");
    let judged = cassalock(&["judge", &record_arg]);
    let judged_out = String::from_utf8_lossy(&judged.stdout);
    assert_eq!(judged.status.code(), Some(0), "{judged_out}");
    let verdicts = |text: &str| {
        text.lines()
            .filter(|line| line.starts_with("  T1"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(&out), verdicts(&judged_out));
    let _ = std::fs::remove_file(record);
}

#[test]
fn a_waiter_is_paused_while_another_holds_and_an_honest_lock_still_holds_t1() {
    let (code, out, err) = run(
        "waiter",
        "",
        "3",
        &["--hold-ms", "50", "--pause-waiter-ms", "200", "--pause-at", "1"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("a client waiting at acquisition 1 stopped (SIGSTOP) for 200 ms"),
        "{out}"
    );
    assert!(out.contains("T1-belief    ok       9 acquisitions"), "{out}");
}

#[test]
fn a_lock_that_hands_out_two_holders_is_caught() {
    let (code, out, err) = run("barge", "--barge", "3", &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("T1-belief    FAILED"), "{out}");
}

#[test]
fn a_client_that_prints_garbage_is_named_with_its_line() {
    let (code, out, err) = run("garbage", "--say-garbage-after 1", "2", &[]);
    assert_eq!(code, 5, "{out}{err}");
    assert!(
        err.contains("broke the protocol: line 3 of its output is not an answer"),
        "{err}"
    );
    assert!(err.contains("this is not JSON"), "{err}");
    assert!(out.contains("cut short by a client"), "{out}");
}

#[test]
fn a_client_that_answers_another_command_breaks_the_protocol() {
    let (code, _, err) = run("wrong-id", "--wrong-id", "1", &[]);
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("answers `acquired` (id 99) to `lock` (id 1), which it cannot"),
        "{err}"
    );
}

#[test]
fn a_client_that_hangs_gets_a_time_bound_not_a_hang() {
    let (code, _, err) = run("hang", "--hang-after 1", "1", &["--max-wait-ms", "1000"]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("did not answer `write` (id 2) within 1"), "{err}");
}

/// How long T2's line says `call` ("c0's lock") went unanswered. Measured on this machine's
/// clock: at least the bound, a little more on a busy machine.
fn waited_ms(t2: &str, call: &str) -> u64 {
    t2.split(&format!("{call} had no answer in "))
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no wait of {call} in {t2}"))
}

/// A `lock` call that never returns: from outside, the library's call did not return (or the
/// program around it hung): T2 within the run's bound is violated, exit 1, not a protocol break.
#[test]
fn t2_a_lock_call_that_never_returns_violates_t2_within_the_bound() {
    let (code, out, err) = run("hang-lock", "--hang-after 0", "1", &["--max-wait-ms", "1000"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("did not answer `lock` (id 1) within 1"), "{err}");
    let t2 = claim_line(&out, "T2");
    assert!(t2.contains("FAILED   violated: c0's lock had no answer in "), "{out}");
    assert!((1000..2000).contains(&waited_ms(t2, "c0's lock")), "{out}");
    assert!(t2.contains(" ms (the bound: 1000 ms)"), "{out}");
    // A line 600 ms into the silence (a `lost` notice) does not restart the count: the wait
    // said is the time since the `lock` was asked.
    let (code, out, err) = run(
        "hang-lock-after-a-line",
        "--hang-after 0 --lost-before-hang-ms 600",
        "1",
        &["--max-wait-ms", "1000"],
    );
    assert_eq!(code, 1, "{out}{err}");
    let t2 = claim_line(&out, "T2");
    assert!((1000..2000).contains(&waited_ms(t2, "c0's lock")), "{out}");
    let (code, out, err) = run("answers", "", "2", &["--max-wait-ms", "5000"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        claim_line(&out, "T2").contains("ok       kept: 6 lock calls answered within 5000 ms"),
        "{out}"
    );
}

#[test]
fn a_client_that_exits_early_is_said_with_its_status() {
    let (code, _, err) = run("exits", "--exit-after 0", "2", &[]);
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("exited (exit status: 3) while cassalock waited for `lock` (id 1)"),
        "{err}"
    );
}

/// A client that stops reading mid-run (it closed its input, or died between two commands):
/// cassalock's next command fails as a write and names it; a broken pipe must not kill it.
#[test]
fn a_client_that_stops_reading_is_said_not_a_broken_pipe() {
    // `exec`: no shell between, holding the pipe open for reading.
    let command = format!(
        "exec python3 cli/tests/clients/flock_lock.py {} --close-input-after 1",
        lock_file("close-input").display()
    );
    let (code, out, err) = cassalock_code(&["real", "--client", &command, "--threads", "1", "--max-wait-ms", "2000"]);
    assert_eq!(code, 5, "{out}{err}");
    assert!(err.contains("before it read `unlock`"), "{err}");
    assert!(out.contains("cut short by a client"), "{out}");
}

#[test]
fn a_client_that_never_says_hello_is_a_backend_problem() {
    let (code, out, err) = run("no-hello", "--no-hello", "2", &["--start-timeout-s", "1"]);
    assert_eq!(code, 4, "{out}{err}");
    assert!(err.contains("did not answer its hello within"), "{err}");
    assert!(out.contains("no verdict: no client said hello"), "{out}");
    let (code, _, err) = cassalock_code(&["real", "--client", "exit 7", "--threads", "1"]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("exited (exit status: 7) while cassalock waited for its hello"),
        "{err}"
    );
}

fn cassalock_code(args: &[&str]) -> (i32, String, String) {
    let output = cassalock(args);
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn bad_client_options_are_refused_before_anything_starts() {
    for (args, says) in [
        (vec!["--client", "true", "--threads", "0"], "--threads 0 with --client"),
        (
            vec!["--client", "true", "--threads", "65"],
            "--threads 65 with --client",
        ),
        (vec!["--client", "true", "--lease-ms", "0"], "--lease-ms 0"),
        (
            vec!["--client", "true", "--pause-holder-ms", "0"],
            "--pause-holder-ms 0",
        ),
        (
            vec!["--client", "true", "--pause-holder-ms", "10", "--pause-at", "9999"],
            "--pause-at 9999",
        ),
        (vec!["--client", "true", "--max-wait-ms", "0"], "--max-wait-ms 0"),
        (vec!["--client", "", "--threads", "1"], "--client needs a command"),
        (vec!["--lease-ms", "100"], "--client"),
        (vec!["--client", "true", "--pause-at", "2"], "--pause-at needs a pause"),
        // The row locks' and the servers' options say nothing to a client program.
        (vec!["--client", "true", "--algorithm", "queue"], "cannot be used with"),
        // --servers with --client names the servers cassalock reads, and only those.
        (
            vec!["--client", "true", "--servers", "127.0.0.1:1"],
            "give --read-server-as",
        ),
        (
            vec![
                "--client",
                "true",
                "--read-server-as",
                "memcached",
                "--servers",
                "127.0.0.1:1",
            ],
            "--read-server-as memcached",
        ),
        (
            vec![
                "--client",
                "true",
                "--read-server-as",
                "redisson",
                "--servers",
                "nonsense",
            ],
            "\"nonsense\" is not host:port",
        ),
        (vec!["--client", "true", "--read-server-as", "redisson"], "--servers"),
        // A client run's flag beside an own lockers' one is refused, not dropped.
        (
            vec![
                "--lock",
                "redis-set-nx",
                "--servers",
                "127.0.0.1:1",
                "--pause-holder-ms",
                "500",
            ],
            "cannot be used with",
        ),
        (vec!["--client", "true", "--ttl-s", "5"], "cannot be used with"),
        (vec!["--client", "true", "--processes", "2"], "cannot be used with"),
        (vec!["--client", "true", "--json"], "cannot be used with"),
        (
            vec!["--client", "true", "--server-fault", "true", "--server-fault-at", "999"],
            "--server-fault-at 999",
        ),
        (
            vec!["--client", "true", "--server-fault", " "],
            "--server-fault needs a command",
        ),
        (
            vec!["--client", "true", "--server-fault-ms", "5"],
            "--server-fault-undo",
        ),
        (
            vec!["--client", "true", "--pause-waiter-ms", "10", "--threads", "1"],
            "--pause-waiter-ms needs a waiter",
        ),
        (
            vec!["--client", "true", "--pause-holder-ms", "2000", "--max-wait-ms", "2000"],
            "--pause-holder-ms 2000 is not below --max-wait-ms 2000",
        ),
        (
            vec!["--client", "true", "--pause-waiter-ms", "10", "--pause-holder-ms", "10"],
            "cannot be used with",
        ),
    ] {
        let mut all = vec!["real"];
        all.extend(args.iter().copied());
        let (code, _, err) = cassalock_code(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The forwarders' options: a cut-off, and a moved address, refused before anything starts.
#[test]
fn bad_cut_off_and_moved_address_options_are_refused_before_anything_starts() {
    for (args, says) in [
        // A cut-off needs forwarders, and forwarders need loopback addresses the command names.
        (vec!["--client", "true", "--cut-off-holder-ms", "100"], "--proxy"),
        (
            vec!["--client", "x 10.0.0.1:5", "--proxy", "10.0.0.1:5"],
            "--proxy 10.0.0.1:5: not a loopback address",
        ),
        (
            vec!["--client", "x 127.0.0.1:55", "--proxy", "127.0.0.1:5"],
            "--proxy 127.0.0.1:5 does not appear in the --client command",
        ),
        (
            vec!["--client", "x redis:5", "--proxy", "redis:5"],
            "--proxy redis:5: not HOST:PORT",
        ),
        (
            vec![
                "--client",
                "x 127.0.0.1:5",
                "--proxy",
                "127.0.0.1:5",
                "--cut-off-holder-ms",
                "10",
                "--pause-holder-ms",
                "10",
            ],
            "cannot be used with",
        ),
        (
            vec![
                "--client",
                "x 127.0.0.1:5",
                "--proxy",
                "127.0.0.1:5",
                "--cut-off-holder-ms",
                "0",
            ],
            "--cut-off-holder-ms 0",
        ),
        (
            vec![
                "--client",
                "x 127.0.0.1:5",
                "--proxy",
                "127.0.0.1:5",
                "--cut-off-waiter-ms",
                "10",
                "--threads",
                "1",
            ],
            "--cut-off-waiter-ms needs a waiter",
        ),
        (
            vec![
                "--client",
                "x 127.0.0.1:5",
                "--proxy",
                "127.0.0.1:5",
                "--cut-off-waiter-ms",
                "10",
                "--cut-off-holder-ms",
                "10",
            ],
            "cannot be used with",
        ),
        (vec!["--client", "true", "--cut-off-waiter-ms", "100"], "--proxy"),
        // A moved address is a forwarded one, moved by a server fault, to loopback.
        (
            vec![
                "--client",
                "x 127.0.0.1:5",
                "--proxy",
                "127.0.0.1:5",
                "--move-address",
                "127.0.0.1:5=127.0.0.1:6",
            ],
            "--server-fault",
        ),
        (
            vec![
                "--client",
                "x 127.0.0.1:5",
                "--proxy",
                "127.0.0.1:5",
                "--server-fault",
                "true",
                "--move-address",
                "127.0.0.1:7=127.0.0.1:6",
            ],
            "--move-address 127.0.0.1:7=127.0.0.1:6: 127.0.0.1:7 is not one of the --proxy addresses",
        ),
        (
            vec![
                "--client",
                "x 127.0.0.1:5",
                "--proxy",
                "127.0.0.1:5",
                "--server-fault",
                "true",
                "--move-address",
                "127.0.0.1:5=example:6",
            ],
            "example:6 is not a loopback address",
        ),
    ] {
        let mut all = vec!["real"];
        all.extend(args.iter().copied());
        let (code, _, err) = cassalock_code(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A `lost` line an idle copy printed long before cassalock read it (the next caller, idle
/// for the 6 s the others hold) is timed by when it left the pipe, not when it was read: not a
/// clock off by the seconds it waited, and not a broken protocol.
#[test]
fn a_notice_printed_while_nobody_asked_is_timed_by_its_arrival_not_its_reading() {
    let (code, out, err) = run(
        "lost-at-start",
        "--lost-at-start",
        "1",
        &["--acquisitions", "3", "--hold-ms", "2000"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("told it lost the lock   2 times"), "{out}");
}

#[test]
fn a_client_whose_clock_is_in_milliseconds_is_told_so() {
    let (code, _, err) = run("clock-ms", "--clock-in-ms", "1", &[]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("clock_us is microseconds since the Unix epoch"), "{err}");
}

/// A program outside the repository, run from outside it: what a user does with their own lock.
#[test]
fn a_client_program_outside_the_repository_is_run_and_judged() {
    let outside = std::env::temp_dir().join(format!("cassalock-outside-{}", std::process::id()));
    std::fs::create_dir_all(&outside).expect("temp dir");
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    for (from, to) in [
        ("cli/tests/clients/flock_lock.py", "my_lock.py"),
        ("clients/python/cassalock_client.py", "cassalock_client.py"),
    ] {
        std::fs::copy(root.join(from), outside.join(to)).expect("copy");
    }
    let command = format!(
        "python3 {} {}",
        outside.join("my_lock.py").display(),
        outside.join("lock").display()
    );
    let output = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args([
            "real",
            "--client",
            &command,
            "--threads",
            "2",
            "--acquisitions",
            "5",
            "--hold-ms",
            "2",
        ])
        .current_dir(&outside)
        .output()
        .expect("cassalock runs");
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(out.contains("T1-belief    ok       10 acquisitions"), "{out}");
    let _ = std::fs::remove_dir_all(outside);
}

#[test]
fn a_server_fault_command_runs_while_held_and_one_that_fails_is_said_not_passed() {
    let (code, out, err) = run(
        "fault-ok",
        "",
        "2",
        &["--server-fault", "true", "--server-fault-at", "1"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("server fault            `true` at acquisition 1"), "{out}");
    let (code, out, err) = run(
        "fault-undo",
        "",
        "2",
        &[
            "--server-fault",
            "true",
            "--server-fault-undo",
            "true",
            "--server-fault-ms",
            "50",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    // A fault that did not happen leaves the run short of what was asked: exit 3, never 0.
    let (code, out, err) = run("fault-fails", "", "2", &["--server-fault", "exit 9"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("NOT FIRED: `exit 9` at acquisition 2"), "{out}");
    assert!(err.contains("the fault asked for did not fire"), "{err}");
}

#[test]
fn a_client_that_repeats_lost_without_end_is_stopped_at_the_bound() {
    let (code, _, err) = run("lost-spam", "--lost-spam", "1", &[]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("says `lost` more than 1000 times"), "{err}");
}

/// The verdict line of `claim` in a run's output.
fn claim_line<'a>(out: &'a str, claim: &str) -> &'a str {
    out.lines()
        .find(|line| line.trim_start().starts_with(&format!("{claim} ")))
        .unwrap_or_else(|| panic!("no {claim} line in:\n{out}"))
}

/// Two clients try for 20 ms while the other holds 300 ms: one gives up. The honest lock is
/// free at the end; the one whose give-up leaves a mark that keeps the lock is not.
#[test]
fn c_free_a_give_up_that_leaves_the_lock_taken_is_caught_by_the_next_caller() {
    let workload = [
        "--acquisitions",
        "1",
        "--call",
        "try-lock",
        "--try-wait-ms",
        "20",
        "--hold-ms",
        "300",
        "--next-caller-wait-ms",
        "300",
    ];
    let (code, out, err) = run("give-up-honest", "", "2", &workload);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        claim_line(&out, "C-free").contains("ok       kept: after 1 give-up and 0 failed releases, the next caller's try_lock acquired within its 300 ms wait"),
        "{out}"
    );
    assert!(
        claim_line(&out, "C-release").contains("ok       kept: after 1 release"),
        "{out}"
    );

    let (code, out, err) = run("give-up-keeps", "--keep-after-give-up", "2", &workload);
    assert_eq!(code, 1, "{out}{err}");
    let c_free = claim_line(&out, "C-free");
    assert!(c_free.contains("FAILED"), "{out}");
    assert!(
        c_free.contains("the next caller's try_lock did not get the lock in 300 ms"),
        "{out}"
    );
    assert!(claim_line(&out, "C-release").contains("bounded  not decided"), "{out}");
    assert!(claim_line(&out, "T1-belief").contains("ok"), "{out}");
}

/// One client, one acquisition, a release that says released and keeps the lock: C-release.
#[test]
fn c_release_a_release_that_keeps_the_lock_is_caught_by_the_next_caller() {
    let (code, out, err) = run(
        "release-keeps",
        "--keep-after-release",
        "1",
        &["--acquisitions", "1", "--next-caller-wait-ms", "200"],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        claim_line(&out, "C-release")
            .contains("FAILED   violated: the next caller's try_lock did not get the lock in 200 ms"),
        "{out}"
    );
    assert!(
        claim_line(&out, "C-release").contains("only 1 release could have left it"),
        "{out}"
    );
    assert!(claim_line(&out, "C-free").contains("-        no occasion"), "{out}");

    let (code, out, err) = run(
        "release-keeps-unasked",
        "--keep-after-release",
        "1",
        &["--acquisitions", "1", "--next-caller-wait-ms", "0"],
    );
    assert_eq!(code, 0, "without a next caller nothing is judged of it: {out}{err}");
    assert!(!out.contains("C-release"), "{out}");
}

/// The next caller's own try_lock never returns: that call violates T2 like any other
/// client's, and the next caller learnt nothing, so C-release is left undecided, not passed.
#[test]
fn t2_a_next_caller_whose_try_lock_hangs_decides_nothing_of_c_release() {
    let (code, out, err) = run(
        "next-hangs",
        "--hang-on-try-lock",
        "1",
        &["--acquisitions", "1", "--max-wait-ms", "1000"],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("did not answer `try_lock`"), "{err}");
    let t2 = claim_line(&out, "T2");
    assert!((1000..2000).contains(&waited_ms(t2, "next's try_lock")), "{out}");
    assert!(t2.contains(" ms (the bound: 1000 ms)"), "{out}");
    assert!(claim_line(&out, "C-release").contains("bounded  not decided"), "{out}");
    let c_release = claim_line(&out, "C-release");
    let unanswered_ms = c_release
        .split("the next caller's try_lock never returned (no answer within ")
        .nth(1)
        .and_then(|rest| rest.split(" ms)").next())
        .and_then(|ms| ms.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no unanswered wait in {c_release}"));
    assert!((1000..2000).contains(&unanswered_ms), "{out}");
}

#[test]
fn a_next_caller_wait_out_of_range_is_refused() {
    let (code, _, err) = run("next-range", "", "1", &["--next-caller-wait-ms", "60001"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--next-caller-wait-ms 60001: 1-60000, or 0 for no next caller"),
        "{err}"
    );
}
