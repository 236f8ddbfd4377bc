//! The simulator's knobs on the command line and in scenario files: every bad
//! value is refused before anything runs, with exit status 2 and a message that names the flag
//! (or the file's key) and the rule; good ones reach the run, and the printed replay command
//! reproduces it.
#![cfg(madsim)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn cassalock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(args)
        .current_dir(workspace())
        .output()
        .expect("the cassalock binary runs")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A scenario file in a fresh temporary directory.
/// A row lock's scenario file of one scenario, `mine`, on `base`'s plan with `knobs`.
fn one_scenario(lock: &str, base: &str, knobs: &str) -> String {
    format!("lock = \"{lock}\"\n[[scenario]]\nname = \"mine\"\nhelp = \"a test\"\nbase = \"{base}\"\n{knobs}")
}

fn scenario_file(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cassalock-knobs-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, body).expect("scenario file written");
    path
}

/// (flags after `sim --scenario contention --seeds 0..1`, what the error must say).
const BAD: &[(&[&str], &str)] = &[
    (&["--ttl-s", "1"], "--ttl-s 1: ttl_s is 1"),
    (&["--ttl-s", "0"], "use at least 2 s"),
    (&["--ttl-s", "-3"], "-3 is negative"),
    (&["--ttl-s", "99999999999"], "too large"),
    (&["--ttl-s", "ten"], "not a whole number"),
    (
        &["--renew-every-ms", "20000"],
        "--renew-every-ms 20000: TTL of 30000 ms is less than twice the renewal interval (20000 ms)",
    ),
    (&["--renew-every-ms", "20000"], "renew at most every TTL/2"),
    (&["--renew-every-ms", "0"], "--renew-every-ms 0: renew_every_ms is 0"),
    (&["--ttl-s", "10"], "--ttl-s 10: TTL of 10000 ms is less than twice"),
    (&["--ttl-s", "10"], "the TTL must be at least 30 s"),
    (
        &["--poll-ms", "0"],
        "--poll-ms 0: must be in 1..=900000 (0 would poll in a busy loop",
    ),
    (&["--poll-ms", "900001"], "the run stops after 900 s"),
    (&["--max-wait-ms", "0"], "--max-wait-ms 0: must be in 1..=900000"),
    (&["--retries", "21"], "--retries 21: at most 20 retries"),
    (&["--retries", "300"], "too large (it overflows a 8-bit number)"),
    (
        &["--retry-backoff-ms", "0"],
        "--retry-backoff-ms 0: must be in 1..=60000",
    ),
    (
        &["--request-timeout-ms", "0"],
        "--request-timeout-ms 0: must be in 1..=60000 (a timeout of 0",
    ),
    (
        &["--read-timeout-ms", "60001"],
        "--read-timeout-ms 60001: must be in 1..=60000",
    ),
    (
        &["--write-timeout-ms", "0"],
        "--write-timeout-ms 0: must be in 1..=60000",
    ),
    (&["--clients", "0"], "--clients 0: must be in 1..=64"),
    (&["--clients", "65"], "--clients 65: must be in 1..=64"),
    (&["--acquisitions", "0"], "--acquisitions 0: must be in 1..=10000"),
    (&["--hold-ms", "9..3"], "LO 9 is above HI 3"),
    (
        &["--hold-ms", "0..900001"],
        "--hold-ms 0..900001: HI is beyond the run's time limit (900000 ms)",
    ),
    (&["--think-ms", "x..2"], "LO: \"x\" is not a whole number"),
    (&["--think-ms", "0..-2"], "HI: -2 is negative"),
    (
        &["--long-hold-ms", "1000..2000"],
        "--long-hold-ms 1000..2000: needs long_hold_percent",
    ),
    (
        &["--long-hold-percent", "5"],
        "--long-hold-percent 5: needs long_hold_ms",
    ),
    (
        &["--long-hold-ms", "1..2", "--long-hold-percent", "101"],
        "--long-hold-percent 101: a percentage must be between 0 and 100",
    ),
    (&["--fail-before-apply-percent", "100"], "use less than 100"),
    (
        &["--fail-after-apply-percent", "-1"],
        "--fail-after-apply-percent -1: a percentage must be between 0 and 100",
    ),
    (&["--fail-after-apply-percent", "NaN"], "not a finite decimal number"),
    (
        &["--fail-before-apply-percent", "60", "--fail-after-apply-percent", "40"],
        "keep their sum below 100",
    ),
    (
        &["--clock-error-ms", "60001"],
        "--clock-error-ms 60001: must be in 0..=60000",
    ),
    (
        &["--backward-jump-s", "0"],
        "--backward-jump-s 0: the step back must be more than 0",
    ),
    (&["--backward-jump-s", "1e9"], "at most 86400 s"),
    (&["--locks", "0"], "--locks 0: must be in 1..=16"),
    (&["--locks", "17"], "--locks 17: must be in 1..=16"),
    (
        &["--lock-order", "random"],
        "--lock-order random: an order needs several locks",
    ),
    (
        &["--locks", "2", "--lock-order", "sideways"],
        "\"sideways\" is not a lock order; use fixed, random or one",
    ),
];

#[test]
fn bad_knob_values_are_refused_before_anything_runs() {
    for (flags, expected) in BAD {
        let mut args = vec![
            "sim",
            "--scenario",
            "contention",
            "--seeds",
            "0..1",
            "--algorithm",
            "queue",
        ];
        args.extend_from_slice(flags);
        let out = cassalock(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: exit {:?}\n{stderr}", out.status);
        assert!(
            stderr.contains(expected),
            "{flags:?}: expected {expected:?} in:\n{stderr}"
        );
        assert!(out.stdout.is_empty(), "{flags:?} ran something:\n{}", text(&out.stdout));
    }
}

#[test]
fn knobs_are_checked_with_the_scenario_s_own_values() {
    // renew-race runs TTL 4 s: a renewal every 3 s breaks TTL/2 there, not in the default TTL.
    let out = cassalock(&[
        "sim",
        "--scenario",
        "renew-race",
        "--seeds",
        "0..1",
        "--renew-every-ms",
        "3000",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--renew-every-ms 3000: TTL of 4000 ms is less than twice"),
        "{stderr}"
    );
    let replay = cassalock(&["replay", "--scenario", "contention", "--seed", "0", "--poll-ms", "0"]);
    assert_eq!(replay.status.code(), Some(2));
    assert!(
        text(&replay.stderr).contains("--poll-ms 0:"),
        "{}",
        text(&replay.stderr)
    );
}

#[test]
fn a_scenario_file_refuses_unknown_keys_and_bad_values_naming_file_and_key() {
    let unknown = scenario_file("unknown", &one_scenario("queue", "contention", "ttl_seconds = 10\n"));
    let out = cassalock(&["sim", "--scenario-file", unknown.to_str().unwrap(), "--seeds", "0..1"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(unknown.to_str().unwrap()), "{stderr}");
    assert!(stderr.contains("unknown field `ttl_seconds`"), "{stderr}");

    let bad = scenario_file("bad", &one_scenario("queue", "contention", "renew_every_ms = 20000\n"));
    let out = cassalock(&["sim", "--scenario-file", bad.to_str().unwrap(), "--seeds", "0..1"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--scenario-file {}: renew_every_ms = 20000: TTL of 30000 ms",
            bad.display()
        )),
        "{stderr}"
    );

    let typed = scenario_file("typed", &one_scenario("queue", "contention", "clients = \"many\"\n"));
    let out = cassalock(&["sim", "--scenario-file", typed.to_str().unwrap(), "--seeds", "0..1"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("clients"), "{stderr}");

    let nameless = scenario_file("nameless", "ttl_s = 10\nrenew_every_ms = 5000\n");
    let out = cassalock(&["sim", "--scenario-file", nameless.to_str().unwrap(), "--seeds", "0..1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no lock = \"NAME\" line"),
        "{}",
        text(&out.stderr)
    );
    // The knobs file of before (`scenario = ...` at the top) is told how to write it now.
    let old = scenario_file("old", "scenario = \"contention\"\nttl_s = 10\n");
    let out = cassalock(&["sim", "--scenario-file", old.to_str().unwrap(), "--seeds", "0..1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("base = \"contention\""),
        "{}",
        text(&out.stderr)
    );

    let missing = cassalock(&["sim", "--scenario-file", "/nonexistent/knobs.toml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("cannot read it"),
        "{}",
        text(&missing.stderr)
    );
}

#[test]
fn flags_override_the_file_and_the_printed_replay_reproduces_the_run() {
    // The file's renewal breaks TTL/2; the flag overrides it, so the run goes ahead.
    let file = scenario_file(
        "override",
        &one_scenario(
            "queue",
            "contention",
            "renew_every_ms = 20000\nclients = 2\nacquisitions = 3\nfail_after_apply_percent = 20\n",
        ),
    );
    let out = cassalock(&[
        "replay",
        "--scenario-file",
        file.to_str().unwrap(),
        "--seed",
        "3",
        "--summary",
        "--renew-every-ms",
        "5000",
    ]);
    let stdout = text(&out.stdout);
    assert_ne!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        stdout.contains("2 clients x 3 acquisitions") && stdout.contains("renew every 5000 ms"),
        "{stdout}"
    );
    assert!(
        stdout.contains("20% of store calls applied with the reply lost"),
        "{stdout}"
    );
    let replay_line = stdout
        .lines()
        .find_map(|line| line.strip_prefix("replay: "))
        .expect("a replay line");
    assert!(
        replay_line.contains(&format!("--scenario-file {}", file.display()))
            && replay_line.contains("--renew-every-ms 5000"),
        "{replay_line}"
    );
    // Run the printed command: the same verdicts and trace hash.
    let words: Vec<&str> = replay_line.split_whitespace().skip(1).collect();
    let mut again_args = words.clone();
    again_args.push("--summary");
    let again = cassalock(&again_args);
    let verdicts = |out: &str| {
        out.lines()
            .skip_while(|line| !line.starts_with("verdicts"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(verdicts(&text(&again.stdout)), verdicts(&stdout));
}

#[test]
fn the_example_scenario_files_parse_and_run() {
    for (file, fired) in [
        ("scenarios/flaky-store.toml", "store faults injected: "),
        ("scenarios/noisy-clocks.toml", "noisy"),
    ] {
        let out = cassalock(&[
            "sim",
            "--scenario-file",
            file,
            "--seeds",
            "0..3",
            "--algorithm",
            "queue",
        ]);
        let stdout = text(&out.stdout);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{file}: exit {:?}\n{}",
            out.status,
            text(&out.stderr)
        );
        assert!(
            stdout.contains(" | queue algorithm | seeds 0..3 | 3 runs"),
            "{file}:\n{stdout}"
        );
        if fired == "noisy" {
            let plan = |scenario: &str| {
                let args = [
                    "replay",
                    "--scenario-file",
                    file,
                    "--scenario",
                    scenario,
                    "--seed",
                    "0",
                    "--summary",
                ];
                text(&cassalock(&args).stdout)
            };
            let noisy = plan("queue-noisy-clocks");
            assert!(noisy.contains("each reading off by up to ±50 ms"), "{noisy}");
            assert!(noisy.contains("jumps -5.000 s at"), "{noisy}");
            let skewed = plan("queue-skewed-clients");
            assert!(
                skewed.contains("1% of readings off by up to ±500 ms instead"),
                "{skewed}"
            );
            assert!(
                stdout.contains("queue-skewed-clients | queue algorithm | seeds 0..3 | 3 runs"),
                "both scenarios of the file ran:\n{stdout}"
            );
        } else {
            let injected = stdout
                .split(fired)
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|count| count.parse::<u64>().ok())
                .expect("a count of injected failures");
            assert!(injected > 0, "{stdout}");
        }
    }
}

/// A scenario file under a path with spaces and a quote: the printed replay command and the
/// record line quote it, so both paste back into a shell (and into regressions/*.seeds).
#[test]
fn printed_commands_quote_a_path_with_spaces() {
    let dir = std::env::temp_dir().join(format!("cassalock knobs {} it's here", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let path = dir.join("pause run.toml");
    std::fs::write(&path, one_scenario("queue", "pause", "")).expect("scenario file written");
    let path_text = path.display().to_string();
    let out = cassalock(&["sim", "--scenario-file", &path_text, "--seeds", "0..1"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the pause scenario violates T1-belief at seed 0: {stdout}"
    );
    let replay = stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("replay: "))
        .unwrap_or_else(|| panic!("no replay line: {stdout}"));
    let words = shlex::split(replay).unwrap_or_else(|| panic!("unbalanced quotes: {replay}"));
    assert!(words.contains(&path_text), "the path is one word: {words:?}");
    // The failing seed is recorded with --record (no shell line to quote).
    assert!(stdout.contains("record: rerun with --record"), "{stdout}");
    // The replay command runs as printed.
    let replayed = cassalock(
        &[
            &words[1..].iter().map(String::as_str).collect::<Vec<_>>()[..],
            &["--summary"],
        ]
        .concat(),
    );
    assert_eq!(replayed.status.code(), Some(1), "{}", text(&replayed.stderr));
    assert!(text(&replayed.stdout).contains("T1-belief    FAILED"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A boolean knob is written the same way on every command: `--paced-poll` alone means
/// `--paced-poll true`, and `true`/`false` are taken too (sim, check and real alike).
#[test]
fn a_boolean_knob_alone_means_true_on_every_command() {
    let run = |paced: &[&str]| {
        let mut args = vec![
            "replay",
            "--scenario",
            "contention",
            "--seed",
            "1",
            "--algorithm",
            "queue",
            "--clients",
            "3",
            "--acquisitions",
            "2",
            "--next-poll-ms",
            "5",
            "--summary",
        ];
        args.extend_from_slice(paced);
        let out = cassalock(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let bare = run(&["--paced-poll"]);
    assert_eq!(bare, run(&["--paced-poll", "true"]));
    assert_ne!(bare, run(&["--paced-poll", "false"]), "the knob reached the run");
    // check and real: both forms parse (the run then stops at the next flag's bad value, or
    // at the simulation build), a value that is not a boolean is refused naming the flag.
    for command in [&["check", "--model", "getlock"][..], &["real"][..]] {
        for paced in [
            &["--paced-poll"][..],
            &["--paced-poll", "true"][..],
            &["--paced-poll", "false"][..],
        ] {
            let mut args = command.to_vec();
            args.extend_from_slice(paced);
            args.extend(["--threads", "0"]);
            let err = text(&cassalock(&args).stderr);
            assert!(!err.contains("for '--paced-poll"), "{args:?}: {err}");
        }
        let mut args = command.to_vec();
        args.extend(["--paced-poll", "maybe"]);
        let out = cassalock(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains("invalid value 'maybe' for '--paced-poll"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// A row lock's scenario file sweeps each of its scenarios under its lock's algorithm, with the
/// lock's own settings (TryGetLock here), and each printed replay command reads the file again.
#[test]
fn a_row_lock_s_file_sweeps_each_scenario_under_its_lock_and_its_replays_reproduce() {
    let file = scenario_file(
        "row-lock",
        "lock = \"trygetlock\"\n\
         [[scenario]]\nname = \"try-calm\"\nhelp = \"h\"\nbase = \"contention\"\nclients = 2\nacquisitions = 2\n\
         [[scenario]]\nname = \"try-paused\"\nhelp = \"h\"\nbase = \"pause\"\nclients = 2\n",
    );
    let path = file.to_str().unwrap();
    let out = cassalock(&["sim", "--scenario-file", path, "--seeds", "0..2"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the pause breaks T1-belief: {stdout}{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("try-calm | queue algorithm | seeds 0..2 | 2 runs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("try-paused | queue algorithm | seeds 0..2 | 2 runs"),
        "{stdout}"
    );
    let replay_line = stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("replay: "))
        .expect("a replay line");
    assert!(replay_line.contains("--scenario try-paused"), "{replay_line}");
    let words = shlex::split(replay_line).expect("balanced quotes");
    let again = cassalock(
        &[
            &words[1..].iter().map(String::as_str).collect::<Vec<_>>()[..],
            &["--summary"],
        ]
        .concat(),
    );
    let plan = text(&again.stdout);
    assert_eq!(again.status.code(), Some(1), "{plan}");
    assert!(plan.contains("try_lock calls") && plan.contains("2 clients"), "{plan}");
    // The lock fixes the algorithm: the other one is refused, naming it.
    let other = cassalock(&[
        "replay",
        "--scenario-file",
        path,
        "--scenario",
        "try-calm",
        "--seed",
        "0",
        "--algorithm",
        "old",
    ]);
    assert_eq!(other.status.code(), Some(2));
    assert!(
        text(&other.stderr).contains("run --algorithm queue"),
        "{}",
        text(&other.stderr)
    );
}

/// `--set KEY=VALUE` sets a row locks' knob as its flag does, and the printed command keeps it.
#[test]
fn set_changes_a_row_locks_knob_and_the_printed_command_keeps_it() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "replay",
            "--scenario",
            "contention",
            "--seed",
            "1",
            "--algorithm",
            "queue",
            "--summary",
        ];
        args.extend_from_slice(extra);
        let out = cassalock(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let set = run(&["--set", "clients=2", "--set", "acquisitions=3"]);
    assert!(set.contains("2 clients x 3 acquisitions"), "{set}");
    let replay_line = set
        .lines()
        .find(|line| line.starts_with("replay: "))
        .expect("a replay line");
    assert_eq!(
        shlex::split(replay_line).expect("balanced quotes")[9..],
        ["--set", "clients=2", "--set", "acquisitions=3"],
        "{replay_line}"
    );
    let flagged = run(&["--clients", "2", "--acquisitions", "3"]);
    let verdicts = |out: &str| {
        out.lines()
            .skip_while(|line| !line.starts_with("verdicts"))
            .take(3)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(verdicts(&set), verdicts(&flagged));
    // A flag wins over a --set of the same knob.
    assert!(run(&["--set", "clients=4", "--clients", "2"]).contains("2 clients x"));
}

/// The offsets `replay --summary` prints for clients c0.. (seconds).
fn client_offsets_s(plan: &str) -> Vec<f64> {
    plan.lines()
        .filter(|line| line.trim_start().starts_with("clock c"))
        .filter_map(|line| line.split("offset ").nth(1)?.split(' ').next()?.parse().ok())
        .collect()
}

#[test]
fn clock_offsets_are_drawn_per_client_from_the_seed_and_a_heavy_tailed_error_is_printed() {
    let plan = |seed: &str| {
        let out = cassalock(&[
            "replay",
            "--scenario",
            "contention",
            "--algorithm",
            "queue",
            "--seed",
            seed,
            "--clock-offset-ms",
            "400",
            "--clock-error-ms",
            "2",
            "--clock-error-tail-ms",
            "300",
            "--clock-error-tail-percent",
            "0.5",
            "--summary",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let first = plan("3");
    let offsets = client_offsets_s(&first);
    assert_eq!(offsets.len(), 5, "{first}");
    assert!(offsets.iter().all(|offset| offset.abs() <= 0.4), "{offsets:?}");
    let distinct: std::collections::BTreeSet<String> = offsets.iter().map(|o| format!("{o:.3}")).collect();
    assert!(distinct.len() >= 4, "one offset per client: {offsets:?}");
    assert!(
        first.contains("each reading off by up to ±2 ms (uniform), 0.5% of readings off by up to ±300 ms instead"),
        "{first}"
    );
    assert_eq!(client_offsets_s(&plan("3")), offsets, "the same seed, the same offsets");
    assert_ne!(client_offsets_s(&plan("4")), offsets, "another seed, other offsets");
    // A tail needs both its knobs, each in range.
    for (args, said) in [
        (&["--clock-error-tail-ms", "300"][..], "needs clock_error_tail_percent"),
        (
            &["--clock-error-tail-ms", "300", "--clock-error-tail-percent", "101"][..],
            "between 0 and 100",
        ),
        (&["--clock-offset-ms", "60001"][..], "0..=60000"),
    ] {
        let mut full = vec!["sim", "--scenario", "contention", "--seeds", "0..2"];
        full.extend_from_slice(args);
        let out = cassalock(&full);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains(said), "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn independent_locks_take_one_lock_an_acquisition_drawn_at_random_and_leave_c_release_unjudged() {
    let dir = std::env::temp_dir().join(format!("cassalock-one-lock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("one.jsonl").to_string_lossy().into_owned();
    let out = cassalock(&[
        "replay",
        "--scenario",
        "contention",
        "--algorithm",
        "queue",
        "--seed",
        "1",
        "--locks",
        "4",
        "--lock-order",
        "one",
        "--events",
        &events,
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("knobs: 4 independent locks, one per acquisition drawn at random"),
        "{stdout}"
    );
    assert!(
        stdout.contains("verdicts (100 acquisitions"),
        "5 clients x 20, one lock each: {stdout}"
    );
    assert!(stdout.contains("not judged with 4 independent locks"), "{stdout}");
    // Every lock was taken, and the acquisitions add up to one a call.
    let record = std::fs::read_to_string(&events).expect("the record");
    let acquired: Vec<&str> = record
        .lines()
        .filter(|line| line.contains(r#""kind":"acquired""#))
        .collect();
    assert_eq!(acquired.len(), 100);
    for lock in ["shared-0", "shared-1", "shared-2", "shared-3"] {
        let taken = acquired
            .iter()
            .filter(|line| line.contains(&format!(r#""lock":"{lock}""#)))
            .count();
        assert!((10..=45).contains(&taken), "{lock} taken {taken} times of 100");
    }
    // `one` needs several locks, as the other orders do.
    let alone = cassalock(&[
        "sim",
        "--scenario",
        "contention",
        "--lock-order",
        "one",
        "--seeds",
        "0..2",
    ]);
    assert_eq!(alone.status.code(), Some(2));
    assert!(text(&alone.stderr).contains("--locks N"), "{}", text(&alone.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}
