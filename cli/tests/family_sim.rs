//! `cassalock sim-family`: bad usage refused with exit 2 and the flag named, a violating sweep
//! exits 1 and prints a replay command that reproduces the violation with its trace, a control
//! exits 0, and a run cut by its bound exits 3 (T2 bounded, never "no violation").
#![cfg(madsim)]

use std::process::{Command, Output};

fn cassalock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(args)
        .output()
        .expect("the cassalock binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn bad_usage_exits_2_and_names_the_flag() {
    let bad: &[(&[&str], &str)] = &[
        (&["sim-family", "--scenario", "nope"], "redlock-gc-pause"),
        (
            &["sim-family", "--scenario", "memcached-pause", "--seeds", "5..5"],
            "empty",
        ),
        (
            &["sim-family", "--scenario", "memcached-pause", "--seeds", "0..2000000"],
            "at most 1000000",
        ),
        (
            &["sim-family", "--scenario", "memcached-pause", "--seeds", "abc"],
            "--seeds",
        ),
        (
            &["sim-family", "--scenario", "memcached-pause", "--seed", "x"],
            "--seed",
        ),
        (&["sim-family", "--scenario", "memcached-pause", "--trace"], "--seed"),
        (
            &["sim-family", "--scenario", "memcached-pause", "--jobs", "0"],
            "--jobs",
        ),
        (
            &["sim-family", "--scenario", "memcached-pause", "--bound-ms", "0"],
            "--bound-ms",
        ),
        // `sim` and `replay` run the families' scenarios, refusing the row locks' options, and
        // the row locks' refuse the families'.
        (
            &["sim", "--scenario", "redlock-gc-pause", "--algorithm", "old"],
            "--algorithm applies to the row locks' scenarios",
        ),
        (&["sim", "--scenario", "redlock-gc-pause", "--k3"], "--k3 applies"),
        (
            &[
                "replay",
                "--scenario",
                "redlock-gc-pause",
                "--seed",
                "0",
                "--expect-violated",
                "T1",
            ],
            "--expect-violated applies",
        ),
        (
            &["replay", "--scenario", "contention", "--seed", "0", "--bound-ms", "5"],
            "apply to the families' scenarios",
        ),
        // A list mixing the kinds is swept (a_list_of_scenarios_...); replay runs one.
        (
            &["replay", "--scenario", "redlock-gc-pause,contention", "--seed", "0"],
            "replay runs one",
        ),
        // "all" among other names is all of them; the unknown name is the one refused.
        (&["sim-family", "--scenario", "all,nope"], "no scenario named \"nope\""),
        // --trace prints one run's trace: with a sweep it is refused, not ignored.
        (
            &[
                "sim-family",
                "--scenario",
                "set-nx-contention",
                "--seeds",
                "0..3",
                "--trace",
            ],
            "--trace prints one run's trace: give --seed N",
        ),
    ];
    for (args, expected) in bad {
        let out = cassalock(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_violation_exits_1_and_its_replay_command_reproduces_it_with_the_trace() {
    let out = cassalock(&["sim-family", "--scenario", "redlock-gc-pause", "--seeds", "0..3"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("T1-resource  VIOLATED in 3 of 3 seeds; first seed 0"),
        "{stdout}"
    );
    let replay = stdout
        .lines()
        .find_map(|line| line.split("replay: ").nth(1))
        .expect("a replay command");
    let words: Vec<&str> = replay.split(' ').collect();
    assert_eq!(words[0], "cassalock");
    let again = cassalock(&words[1..]);
    let trace = text(&again.stdout);
    assert_eq!(again.status.code(), Some(1), "{trace}");
    assert!(trace.contains("PAUSE 2500 ms"), "{trace}");
    assert!(trace.contains("T1-resource  VIOLATED"), "{trace}");
}

#[test]
fn a_control_exits_0_and_a_run_cut_by_its_bound_exits_3() {
    let out = cassalock(&["sim-family", "--scenario", "redlock-restart-delayed", "--seeds", "0..3"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("T1-belief    no violation in 3 seeds"), "{stdout}");
    let out = cassalock(&[
        "sim-family",
        "--scenario",
        "set-nx-contention",
        "--seeds",
        "0..2",
        "--bound-ms",
        "50",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("bounded in 2"), "{stdout}");
    assert!(
        stdout.contains("replay --scenario set-nx-contention --seed 0 --bound-ms 50"),
        "{stdout}"
    );
}

#[test]
fn a_failover_loses_the_lock_only_when_the_replica_lags() {
    let lagging = cassalock(&[
        "sim-family",
        "--scenario",
        "set-nx-failover-after-acquire",
        "--seeds",
        "0..20",
    ]);
    assert_eq!(lagging.status.code(), Some(1), "{}", text(&lagging.stdout));
    let in_step = cassalock(&[
        "sim-family",
        "--scenario",
        "set-nx-failover-after-acquire",
        "--seeds",
        "0..20",
        "--replication-lag-ms",
        "0",
    ]);
    let stdout = text(&in_step.stdout);
    assert_eq!(in_step.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("T1-belief    no violation in 20 seeds"), "{stdout}");
}

#[test]
fn redisson_775_is_found_with_a_replay_command_and_lost_unlock_messages_report_the_wait() {
    let out = cassalock(&[
        "sim-family",
        "--scenario",
        "redisson-failed-renewal,redisson-failed-renewal-775",
        "--seeds",
        "0..3",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("C-lost       no violation in 3 seeds"), "{stdout}");
    assert!(
        stdout.contains("C-lost       VIOLATED in 3 of 3 seeds; first seed 0"),
        "{stdout}"
    );
    // The replay command printed under the violation (the handover lines carry one too).
    let replay = stdout
        .lines()
        .skip_while(|line| !line.contains("VIOLATED"))
        .find_map(|line| line.split("replay: ").nth(1))
        .expect("a replay command");
    assert_eq!(
        replay,
        "cassalock replay --scenario redisson-failed-renewal-775 --seed 0"
    );
    let words: Vec<&str> = replay.split(' ').collect();
    let again = cassalock(&words[1..]);
    let trace = text(&again.stdout);
    assert_eq!(again.status.code(), Some(1), "{trace}");
    // The first renewal is dropped and times out; no renewal follows it.
    assert!(
        trace.contains("c0-0 <- failed: the store did not answer in time"),
        "{trace}"
    );
    assert!(trace.contains("C-lost       VIOLATED: c0-0 was not told"), "{trace}");
    let out = cassalock(&[
        "sim-family",
        "--scenario",
        "redisson-lost-unlock-messages",
        "--seeds",
        "0..5",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("longest handover (a release to the next acquisition): "),
        "{stdout}"
    );
}

#[test]
fn redisson_fair_barging_is_found_by_f_order_with_a_replay_command_and_the_control_exits_0() {
    let out = cassalock(&["sim", "--scenario", "redisson-fair-barging", "--seeds", "0..3"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("F-order      VIOLATED in 3 of 3 seeds; first seed 0"),
        "{stdout}"
    );
    let replay = stdout
        .lines()
        .skip_while(|line| !line.contains("VIOLATED"))
        .find_map(|line| line.split("replay: ").nth(1))
        .expect("a replay command");
    assert_eq!(replay, "cassalock replay --scenario redisson-fair-barging --seed 0");
    let words: Vec<&str> = replay.split(' ').collect();
    let again = cassalock(&words[1..]);
    let trace = text(&again.stdout);
    assert_eq!(again.status.code(), Some(1), "{trace}");
    // The order is the server's: its records of each call's first acquire and each grant.
    assert!(trace.contains("s0       first acquire of c0:0:"), "{trace}");
    assert!(trace.contains("F-order      VIOLATED: c4-1 was granted"), "{trace}");
    let out = cassalock(&[
        "sim-family",
        "--scenario",
        "redisson-fair-contention",
        "--seeds",
        "0..3",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("F-order      no violation in 3 seeds"), "{stdout}");
    assert!(stdout.contains("F-drop       no violation in 3 seeds"), "{stdout}");
    assert!(
        stdout.contains("longest handover (a release to the next acquisition): "),
        "{stdout}"
    );
}

/// The claim lines a run printed (two spaces, a claim, its verdict).
fn claim_lines(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|line| {
            line.starts_with("  ")
                && cassalock_sim::family::Claim::ALL
                    .iter()
                    .any(|claim| line[2..].starts_with(&format!("{:<12} ", claim.name())))
        })
        .map(str::to_owned)
        .collect()
}

/// Every scenario's seed 0 and 1 writes an event record (`--events`) from which
/// `cassalock judge` prints the run's verdicts.
#[test]
fn cassalock_judge_reads_every_scenario_s_event_record_as_the_run_judged_it() {
    let dir = std::env::temp_dir().join(format!("cassalock-family-events-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut checked = 0;
    for scenario in cassalock_sim::family::scenarios().map(|named| named.name) {
        for seed in ["0", "1"] {
            let events = dir.join(format!("{scenario}-{seed}.jsonl"));
            let events_arg = events.to_string_lossy().into_owned();
            let ran = cassalock(&[
                "sim-family",
                "--scenario",
                scenario,
                "--seed",
                seed,
                "--events",
                &events_arg,
            ]);
            let judged = cassalock(&["judge", &events_arg]);
            let (ran_lines, judged_lines) = (claim_lines(&text(&ran.stdout)), claim_lines(&text(&judged.stdout)));
            assert_eq!(
                ran_lines.len(),
                cassalock_sim::family::Claim::ALL.len(),
                "{scenario} {seed}: {}",
                text(&ran.stdout)
            );
            assert_eq!(
                ran_lines,
                judged_lines,
                "{scenario} seed {seed}: {}",
                text(&judged.stderr)
            );
            assert_eq!(ran.status.code(), judged.status.code(), "{scenario} seed {seed}");
            checked += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(checked >= 90, "{checked} runs: every scenario twice");
}

#[test]
fn sim_takes_a_lock_s_name_for_its_scenarios_and_all_for_every_scenario() {
    // A lock's registry name stands for every scenario of its file.
    let out = cassalock(&["sim", "--scenario", "redis-setnx-expire", "--seeds", "0..2"]);
    let stdout = text(&out.stdout);
    for scenario in [
        "setnx-expire-contention",
        "setnx-expire-lost-messages",
        "setnx-expire-pause",
    ] {
        assert!(stdout.contains(&format!("{scenario} (redis-setnx-expire)")), "{stdout}");
    }
    assert_eq!(out.status.code(), Some(1), "the pause violates T1-belief: {stdout}");
    // `all`: every row locks' scenario under its algorithms, then every other lock's.
    let out = cassalock(&["sim", "--scenario", "all", "--seeds", "0..1"]);
    let stdout = text(&out.stdout);
    for row in [
        "contention | old algorithm",
        "swarm | queue algorithm",
        "timeservice-stall | queue algorithm",
    ] {
        assert!(stdout.contains(row), "{row} missing from:\n{stdout}");
    }
    for named in cassalock_sim::family::scenarios() {
        assert!(stdout.contains(&format!("{} (", named.name)), "{} missing", named.name);
    }
    assert_eq!(out.status.code(), Some(1), "some scenarios exist to violate a claim");
    // Knobs and shards are for some scenarios: refused with `all`, naming what to give.
    for flags in [
        &["--bound-ms", "50"][..],
        &["--algorithm", "old"],
        &["--ttl-s", "4"],
        &["--clients", "3"],
        &["--shard", "1/2", "--shard-out", "/dev/null"],
    ] {
        let mut args = vec!["sim", "--scenario", "all", "--seeds", "0..1"];
        args.extend_from_slice(flags);
        let out = cassalock(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(
            stderr.contains(flags[0]) && stderr.contains("redis-setnx-expire"),
            "{stderr}"
        );
    }
}

#[test]
fn clients_and_acquisitions_resize_any_lock_s_scenario_and_its_replay_repeats_them() {
    let out = cassalock(&[
        "sim",
        "--scenario",
        "memcached-pause",
        "--seeds",
        "0..2",
        "--clients",
        "3",
        "--acquisitions",
        "2",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let replay = "cassalock replay --scenario memcached-pause --seed 0 --clients 3 --acquisitions 2";
    assert!(stdout.contains(replay), "{stdout}");
    assert!(
        stdout.contains("\n  with --clients 3 --acquisitions 2\n"),
        "the summary says what it ran: {stdout}"
    );
    let words: Vec<&str> = replay.split(' ').skip(1).chain(["--summary"]).collect();
    let out = cassalock(&words);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("seed 0, 3 client(s)"), "{stdout}");
    assert!(stdout.contains("T1-resource  VIOLATED"), "{stdout}");
    // Out of range, or against a scenario that needs its one client: refused, exit 2.
    for (scenario, flags, says) in [
        ("memcached-pause", &["--clients", "0"][..], "give 1 to 64"),
        ("memcached-pause", &["--clients", "65"], "give 1 to 64"),
        ("memcached-pause", &["--acquisitions", "0"], "give 1 to 10000"),
        ("redlock-retry-after-drop", &["--clients", "2"], "needs its one client"),
        // Its cut is on client 1: with one client the fault would never fire and the sweep
        // would say "no violation" of a run without it.
        (
            "zookeeper-expired-session-lingers-604",
            &["--clients", "1"],
            "is on client 1",
        ),
    ] {
        let mut args = vec!["sim", "--scenario", scenario, "--seeds", "0..1"];
        args.extend_from_slice(flags);
        let out = cassalock(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
    }
}

/// The scenario file shipped as an example, from the workspace root.
fn example_scenario_file() -> String {
    format!(
        "{}/../scenarios/redisson-pause-boundary.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn a_scenario_file_of_a_family_runs_its_scenarios_and_its_replay_command_reads_it_again() {
    let file = example_scenario_file();
    let sweep = cassalock(&["sim", "--scenario-file", &file, "--seeds", "0..20"]);
    let out = text(&sweep.stdout);
    assert_eq!(sweep.status.code(), Some(1), "{out}{}", text(&sweep.stderr));
    let control = out
        .split("redisson-pause-1200-ms (redisson)")
        .next()
        .expect("the control's lines come first");
    assert!(control.contains("redisson-pause-600-ms (redisson)"), "{out}");
    assert!(!control.contains("VIOLATED"), "the 600 ms stop is survived: {out}");
    assert!(out.contains("T1-resource  VIOLATED in 20 of 20 seeds"), "{out}");
    let replay = out
        .lines()
        .find_map(|line| line.trim().strip_prefix("replay: cassalock "))
        .filter(|line| line.contains("redisson-pause-1200-ms"))
        .expect("a replay command for the violation");
    assert!(replay.contains("--scenario-file"), "{replay}");
    let replayed = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(shlex::split(replay).expect("the replay command is a shell line"))
        .output()
        .expect("the cassalock binary runs");
    let replayed_out = text(&replayed.stdout);
    assert_eq!(replayed.status.code(), Some(1), "{replayed_out}");
    assert!(replayed_out.contains("T1-resource  VIOLATED"), "{replayed_out}");
}

#[test]
fn a_scenario_file_that_cannot_run_is_refused_with_its_file_scenario_and_reason() {
    let dir = std::env::temp_dir().join(format!("cassalock-scenario-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let cases = [
        ("lock = \"lwt\"\n", "has no scenarios in the simulator"),
        ("lock = \"old\"\n", "lists no scenario"),
        ("lock = \"redis-set-nx\"\n", "lists no scenario"),
        (
            "lock = \"redis-set-nx\"\n[[scenario]]\nname = \"set-nx-contention\"\nhelp = \"h\"\npremise = \"p\"\nsettings = { ttl_ms = 100 }\n",
            "the simulator has a scenario of that name",
        ),
        (
            "lock = \"redis-set-nx\"\n[[scenario]]\nname = \"mine\"\nhelp = \"h\"\npremise = \"p\"\nsettings = { ttl_ms = 100 }\nclients = 100\n",
            "100 clients: give 1 to 64",
        ),
        (
            "lock = \"redis-set-nx\"\n[[scenario]]\nname = \"mine\"\nhelp = \"h\"\npremise = \"p\"\nsettings = { ttl_ms = 100, masters = 3 }\n",
            "unknown field `masters`",
        ),
        (
            "lock = \"redis-set-nx\"\n[[scenario]]\nname = \"mine\"\nhelp = \"h\"\npremise = \"p\"\nsettings = { ttl_ms = 100 }\nbogus = 1\n",
            "unknown field `bogus`",
        ),
    ];
    for (index, (body, expected)) in cases.iter().enumerate() {
        let path = dir.join(format!("case{index}.toml"));
        std::fs::write(&path, body).expect("writing a case");
        let path = path.display().to_string();
        let run = cassalock(&["sim", "--scenario-file", &path, "--seeds", "0..2"]);
        let err = text(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{body}: {err}");
        assert!(err.contains(expected) && err.contains(&path), "{body}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let sharded = cassalock(&[
        "sim",
        "--scenario-file",
        &example_scenario_file(),
        "--shard",
        "1/2",
        "--shard-out",
        &dir.join("shard.json").display().to_string(),
    ]);
    assert_eq!(sharded.status.code(), Some(2));
    assert!(text(&sharded.stderr).contains("without --shard"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn set_changes_a_key_of_any_lock_s_scenario_and_its_replay_command_sets_it_again() {
    // memcached-pause: a 3.5 s pause on a 3 s item breaks T1-resource; on a 5 s item it does not.
    let default = cassalock(&["sim", "--scenario", "memcached-pause", "--seeds", "0..5"]);
    assert_eq!(default.status.code(), Some(1), "{}", text(&default.stdout));
    let longer = cassalock(&[
        "sim",
        "--scenario",
        "memcached-pause",
        "--seeds",
        "0..5",
        "--set",
        "settings.ttl_s=5",
    ]);
    let out = text(&longer.stdout);
    assert_eq!(longer.status.code(), Some(0), "{out}");
    assert!(out.contains("with --set 'settings.ttl_s=5'"), "{out}");
    let shorter = cassalock(&[
        "sim",
        "--scenario",
        "redlock-gc-pause",
        "--seeds",
        "0..3",
        "--set",
        "settings.ttl_ms=1500",
    ]);
    let out = text(&shorter.stdout);
    assert_eq!(shorter.status.code(), Some(1), "{out}");
    let replay = out
        .lines()
        .find_map(|line| line.trim().strip_prefix("replay: cassalock "))
        .expect("a replay command");
    assert!(
        replay.contains("--set") && replay.contains("settings.ttl_ms=1500"),
        "{replay}"
    );
    let replayed = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(shlex::split(replay).expect("a shell line"))
        .output()
        .expect("runs");
    assert_eq!(replayed.status.code(), Some(1), "{}", text(&replayed.stdout));
    assert!(
        text(&replayed.stdout).contains("T1-resource  VIOLATED"),
        "{}",
        text(&replayed.stdout)
    );
    for (args, expected) in [
        (
            &["sim", "--scenario", "memcached-pause", "--set", "bogus=1"][..],
            "unknown field `bogus`",
        ),
        (
            &["sim", "--scenario", "memcached-pause", "--set", "name=x"][..],
            "names the scenario",
        ),
        (
            &["sim", "--scenario", "memcached-pause", "--set", "hold_ms"][..],
            "write KEY=VALUE",
        ),
        (
            &["sim", "--scenario", "memcached-pause", "--set", "settings.ttl_s=0"][..],
            "ttl_s is 0",
        ),
        (
            &["sim", "--scenario", "contention", "--set", "settings.ttl_ms=1"][..],
            "a row locks' scenario has no tables",
        ),
        (
            &[
                "replay",
                "--scenario",
                "contention",
                "--seed",
                "0",
                "--set",
                "hold_ms=many",
            ][..],
            "--set: ",
        ),
        (
            &["sim", "--scenario", "all", "--set", "hold_ms=1"][..],
            "--scenario all runs every scenario",
        ),
    ] {
        let run = cassalock(args);
        assert_eq!(run.status.code(), Some(2), "{args:?}");
        assert!(text(&run.stderr).contains(expected), "{args:?}: {}", text(&run.stderr));
    }
}

#[test]
fn a_list_of_scenarios_mixes_the_row_locks_and_the_others_and_names_an_unknown_part() {
    let mixed = cassalock(&["sim", "--scenario", "contention,redlock-gc-pause", "--seeds", "0..2"]);
    let out = text(&mixed.stdout);
    assert_eq!(mixed.status.code(), Some(1), "the worst of the two: {out}");
    assert!(
        out.contains("contention") && out.contains("redlock-gc-pause (redlock)"),
        "{out}"
    );
    let rows = cassalock(&["sim", "--scenario", "contention,pause", "--seeds", "0..2"]);
    assert_ne!(rows.status.code(), Some(2), "{}", text(&rows.stderr));
    for (args, expected) in [
        (&["sim", "--scenario", "redlock,nope"][..], "\"nope\" is not a scenario"),
        (&["sim", "--scenario", "all,contention"][..], "give it alone"),
        (
            &["sim", "--scenario", "contention,redlock", "--m2"][..],
            "sweep them in two calls",
        ),
        (
            &["sim", "--scenario", "contention,redlock", "--set", "hold_ms=1"][..],
            "sweep them in two calls",
        ),
    ] {
        let run = cassalock(args);
        assert_eq!(run.status.code(), Some(2), "{args:?}");
        assert!(text(&run.stderr).contains(expected), "{args:?}: {}", text(&run.stderr));
    }
}

/// Redisson's fair lock with `tryLock` waiting 100 ms: a waiter whose wait ran out and whose
/// leave is on its way is owed nothing (seed 43's grant ahead of such a waiter is no F-order
/// violation; of seed 0's 11 drops, the 9 that came after the waiter's leave are not F-drop's),
/// while the 2 drops of waiters still inside their wait are.
#[test]
fn f_order_and_f_drop_do_not_count_a_fair_waiter_already_leaving() {
    let run = |seeds: &str| {
        let out = cassalock(&[
            "sim",
            "--scenario",
            "redisson-fair-contention",
            "--set",
            "settings.wait_ms=100",
            "--seeds",
            seeds,
        ]);
        text(&out.stdout)
    };
    let seed_43 = run("43..44");
    assert!(seed_43.contains("F-order      no violation in 1 seeds"), "{seed_43}");
    let seed_0 = run("0..1");
    assert!(
        seed_0.contains("F-drop       VIOLATED in 1 of 1 seeds; first seed 0: 2 waiter(s) dropped"),
        "{seed_0}"
    );
}

/// C-wait: with a deadline set, every `lock()` call's start is in the record and the call is
/// judged against its wait, in the sweep, in the replay and by `cassalock judge`; without
/// one, C-wait is not checked.
#[test]
fn c_wait_is_judged_for_a_lock_given_a_deadline_and_only_then() {
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sim", "--scenario", "etcd-contention", "--seeds", "0..3"];
        args.extend_from_slice(extra);
        text(&cassalock(&args).stdout)
    };
    let with_wait = sweep(&["--set", "settings.wait_ms=300"]);
    assert!(
        with_wait.contains("C-wait       no violation in 3 seeds"),
        "{with_wait}"
    );
    let without = sweep(&[]);
    assert!(without.contains("C-wait       not checked"), "{without}");

    let dir = std::env::temp_dir().join(format!("cassalock-c-wait-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("etcd.jsonl").to_string_lossy().into_owned();
    let replay = cassalock(&[
        "replay",
        "--scenario",
        "etcd-contention",
        "--seed",
        "0",
        "--set",
        "settings.wait_ms=300",
        "--events",
        &events,
    ]);
    let replayed = text(&replay.stdout);
    assert!(replayed.contains("calls lock(L), waiting at most 300 ms"), "{replayed}");
    let record = std::fs::read_to_string(&events).expect("the event record");
    assert!(
        record.contains(r#""kind":"calling""#) && record.contains(r#""wait_past_ms":"#),
        "{record:.400}"
    );
    let judged = text(&cassalock(&["judge", &events]).stdout);
    let c_wait = |out: &str| out.lines().find(|line| line.contains("C-wait")).map(str::to_owned);
    assert_eq!(c_wait(&judged), c_wait(&replayed), "{judged}");
    assert!(
        c_wait(&judged).is_some_and(|line| line.contains("no violation")),
        "{judged}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each node's clock readings less the record's time, in µs, per client node of a family record.
fn clock_minus_time_us(record: &str) -> std::collections::BTreeMap<String, Vec<i64>> {
    let mut by_node: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    for line in record.lines().skip(1) {
        let event: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let (Some(node), Some(at_ns), Some(clock_us)) = (
            event["node"].as_str(),
            event["at_ns"].as_i64(),
            event["clock_us"].as_i64(),
        ) else {
            continue;
        };
        if node.starts_with('c') {
            by_node
                .entry(node.to_owned())
                .or_default()
                .push(clock_us - 1_700_000_000_000_000 - at_ns / 1000);
        }
    }
    by_node
}

#[test]
fn every_family_takes_the_row_locks_clock_knobs() {
    let dir = std::env::temp_dir().join(format!("cassalock-family-clocks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("etcd.jsonl").to_string_lossy().into_owned();
    let knobs = ["--clock-offset-ms", "500", "--clock-error-ms", "2"];
    let mut args = vec![
        "replay",
        "--scenario",
        "etcd-contention",
        "--seed",
        "0",
        "--clients",
        "4",
        "--events",
        &events,
    ];
    args.extend_from_slice(&knobs);
    let out = cassalock(&args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let record = std::fs::read_to_string(&events).expect("the record");
    assert!(
        record
            .lines()
            .next()
            .unwrap()
            .contains("--clock-offset-ms 500 --clock-error-ms 2"),
        "the replay command repeats the knobs: {:.400}",
        record
    );
    // Each client reads its own constant offset (within ±500 ms), give or take its 2 ms error.
    let readings = clock_minus_time_us(&record);
    assert_eq!(readings.len(), 4, "{:?}", readings.keys());
    let mut offsets = Vec::new();
    for (node, diffs) in &readings {
        let (lo, hi) = (diffs.iter().min().unwrap(), diffs.iter().max().unwrap());
        assert!(
            hi - lo <= 4_001,
            "{node}: readings spread {lo}..{hi} µs, more than ±2 ms"
        );
        assert!(lo.abs() <= 502_000 && hi.abs() <= 502_000, "{node}: {lo}..{hi} µs");
        offsets.push((lo + hi) / 2);
    }
    offsets.sort_unstable();
    offsets.dedup_by(|a, b| (*a - *b).abs() < 5_000);
    assert!(offsets.len() >= 3, "one offset per client: {offsets:?}");
    // A sweep takes them too; a tail without its share is refused naming the flag.
    let sweep = cassalock(&[
        "sim",
        "--scenario",
        "set-nx-contention",
        "--seeds",
        "0..5",
        "--clock-error-ms",
        "5",
        "--clock-error-tail-ms",
        "200",
        "--clock-error-tail-percent",
        "1",
    ]);
    assert_eq!(
        sweep.status.code(),
        Some(0),
        "{}{}",
        text(&sweep.stdout),
        text(&sweep.stderr)
    );
    let refused = cassalock(&[
        "sim",
        "--scenario",
        "etcd-contention",
        "--seeds",
        "0..2",
        "--clock-error-tail-ms",
        "300",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("--clock-error-tail-ms 300: needs clock_error_tail_percent"),
        "{}",
        text(&refused.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_heavy_tail_of_clock_reading_errors_breaks_set_nx_validity_when_holds_outlast_the_lease() {
    // Seed 10: c0-0's start reading falls in the tail, about 385 ms ahead, so it believes for
    // 2.345 s on a 2 s lease, while c13-0 takes the expired key.
    let run = |tail: bool| {
        let mut args = vec![
            "replay",
            "--scenario",
            "set-nx-contention",
            "--seed",
            "10",
            "--summary",
            "--set",
            "hold_ms=2500",
            "--clock-error-ms",
            "1",
        ];
        if tail {
            args.extend_from_slice(&["--clock-error-tail-ms", "1000", "--clock-error-tail-percent", "1"]);
        }
        cassalock(&args)
    };
    let with_tail = run(true);
    let stdout = text(&with_tail.stdout);
    assert_eq!(with_tail.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "T1-belief    VIOLATED: c0-0 and c13-0 both believed they held L from 6024.511 ms to 6369.611 ms"
        ),
        "{stdout}"
    );
    // Without the tail: no two believers (exit 3: holds past the lease keep clients running
    // past the run's bound, T2 bounded).
    let without = run(false);
    let stdout = text(&without.stdout);
    assert_eq!(without.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("T1-belief    no violation"), "{stdout}");
}
