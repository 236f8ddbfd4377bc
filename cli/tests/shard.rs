//! `sim-family --shard K/N --out FILE` and `cassalock merge`: the merge of a sweep's shards
//! prints the same stdout bytes as the sweep on one machine (wall-clock figures go to
//! stderr) and exits with the same status; bad shard specs and bad merge inputs exit 2 with
//! a message naming the flag or the file.
#![cfg(madsim)]

use std::path::{Path, PathBuf};
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

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shard-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run shard k of n of a sweep, return its file.
fn shard(dir: &Path, scenario: &str, seeds: &str, k: u64, n: u64) -> String {
    let file = dir
        .join(format!("{scenario}-{}-{k}-of-{n}.json", seeds.replace('.', "_")))
        .display()
        .to_string();
    let spec = format!("{k}/{n}");
    let out = cassalock(&[
        "sim-family",
        "--scenario",
        scenario,
        "--seeds",
        seeds,
        "--shard",
        &spec,
        "--out",
        &file,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    file
}

#[test]
fn the_merge_of_three_shards_prints_the_single_runs_bytes_and_exit_status() {
    let dir = scratch("equal");
    // A control (exit 0), a violated claim (exit 1), several scenarios at once with a
    // handover line, and a run cut by its bound (exit 3).
    let sweeps: &[(&str, &str, &[&str], i32)] = &[
        ("set-nx-contention", "0..12", &[], 0),
        ("set-nx-clock-drift", "0..12", &[], 1),
        ("redisson-lost-unlock-messages,set-nx-contention", "3..=13", &[], 0),
        ("set-nx-contention", "0..4", &["--bound-ms", "50"], 3),
    ];
    for (scenario, seeds, knobs, status) in sweeps {
        let mut single_args = vec!["sim-family", "--scenario", scenario, "--seeds", seeds];
        single_args.extend_from_slice(knobs);
        let single = cassalock(&single_args);
        assert_eq!(single.status.code(), Some(*status), "{}", text(&single.stdout));
        assert!(text(&single.stderr).contains("seeds/min"), "{}", text(&single.stderr));
        assert!(!text(&single.stdout).contains("seeds/min"));
        let mut files = Vec::new();
        // Given in a shuffled order: the merge does not care.
        for k in [2, 3, 1] {
            let file = dir
                .join(format!("{}-{k}.json", scenario.replace(',', "+")))
                .display()
                .to_string();
            let spec = format!("{k}/3");
            let mut args = single_args.clone();
            args.extend_from_slice(&["--shard", &spec, "--out", &file]);
            let out = cassalock(&args);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            files.push(file);
        }
        let mut merge_args = vec!["merge"];
        merge_args.extend(files.iter().map(String::as_str));
        let merged = cassalock(&merge_args);
        assert_eq!(
            text(&merged.stdout),
            text(&single.stdout),
            "{scenario} {seeds}: the merge differs from the single run"
        );
        assert_eq!(merged.stdout, single.stdout);
        assert_eq!(merged.status.code(), Some(*status), "{}", text(&merged.stderr));
    }
}

#[test]
fn more_shards_than_seeds_still_merge_to_the_single_run() {
    let dir = scratch("sparse");
    let single = cassalock(&["sim-family", "--scenario", "set-nx-clock-drift", "--seeds", "5..7"]);
    let files: Vec<String> = (1..=4)
        .map(|k| shard(&dir, "set-nx-clock-drift", "5..7", k, 4))
        .collect();
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    let merged = cassalock(&args);
    assert_eq!(merged.stdout, single.stdout, "{}", text(&merged.stdout));
    assert_eq!(merged.status.code(), single.status.code());
}

#[test]
fn bad_shard_specs_exit_2_and_say_what_to_write() {
    let dir = scratch("specs");
    let out_file = dir.join("x.json").display().to_string();
    let base = ["sim-family", "--scenario", "set-nx-contention", "--seeds", "0..3"];
    let bad: &[(&[&str], &str)] = &[
        (&["--shard", "0/3", "--out", &out_file], "K/N"),
        (&["--shard", "4/3", "--out", &out_file], "K/N"),
        (&["--shard", "1/10001", "--out", &out_file], "10000"),
        (&["--shard", "x", "--out", &out_file], "--shard"),
        (&["--shard", "1/3"], "--out"),
        (&["--out", &out_file], "--shard"),
        (&["--shard", "1/3", "--out", "/nonexistent-dir/x.json"], "--out"),
        (&["--shard", "1/3", "--out", &out_file, "--seed", "3"], "--seed"),
    ];
    for (extra, expected) in bad {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let out = cassalock(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn bad_merge_inputs_exit_2_and_name_the_file() {
    let dir = scratch("inputs");
    let one = shard(&dir, "set-nx-contention", "0..6", 1, 3);
    let two = shard(&dir, "set-nx-contention", "0..6", 2, 3);
    let three = shard(&dir, "set-nx-contention", "0..6", 3, 3);
    let other_range = shard(&dir, "set-nx-contention", "0..7", 3, 3);
    let other_n = shard(&dir, "set-nx-contention", "0..6", 1, 2);
    let other_scenario = shard(&dir, "set-nx-clock-drift", "0..6", 3, 3);
    let not_json = dir.join("not.json").display().to_string();
    std::fs::write(&not_json, "hello").unwrap();
    let future = dir.join("future.json").display().to_string();
    let text3 = std::fs::read_to_string(&three).unwrap();
    std::fs::write(&future, text3.replacen("\"version\":1", "\"version\":99", 1)).unwrap();
    let damaged = dir.join("damaged.json").display().to_string();
    std::fs::write(&damaged, text3.replacen("\"seeds_run\":2", "\"seeds_run\":1", 1)).unwrap();
    let missing = dir.join("missing.json").display().to_string();
    let bad: Vec<(Vec<&str>, &str)> = vec![
        (vec![&one, &two], "1 of 3 shards missing (3/3)"),
        (vec![&one, &two, &two, &three], "both shard 2/3"),
        (vec![&one, &two, &other_range], "another sweep"),
        (vec![&one, &two, &other_n], "another sweep"),
        (vec![&one, &two, &other_scenario], "another sweep"),
        (vec![&one, &two, &not_json], "not.json: not a shard result file"),
        (vec![&one, &two, &future], "future.json: shard file version Some(99)"),
        (vec![&one, &two, &damaged], "damaged.json: a damaged shard file"),
        (vec![&one, &two, &missing], "missing.json: cannot read it"),
        (vec![], "FILE"),
    ];
    for (files, expected) in bad {
        let mut args = vec!["merge"];
        args.extend(files);
        let out = cassalock(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
    }
    // The three good files do merge.
    let out = cassalock(&["merge", &three, &one, &two]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn the_merge_of_sim_shards_prints_the_single_runs_bytes_and_exit_status() {
    let dir = scratch("sim");
    // A control (exit 0), a broken release found in both algorithms (exit 1), and a swarm whose
    // failures are tallied by the fault kinds of their plans.
    let sweeps: &[(&[&str], &str, i32)] = &[
        (&["--scenario", "contention"], "0..9", 0),
        (&["--scenario", "renew-race", "--k3"], "0..12", 1),
        (&["--scenario", "swarm", "--algorithm", "queue"], "4..=15", 1),
    ];
    for (index, (scenario, seeds, status)) in sweeps.iter().enumerate() {
        let mut single_args = vec!["sim"];
        single_args.extend_from_slice(scenario);
        single_args.extend_from_slice(&["--seeds", seeds]);
        let single = cassalock(&single_args);
        assert_eq!(single.status.code(), Some(*status), "{}", text(&single.stdout));
        assert!(!text(&single.stdout).contains("seeds/minute"));
        let mut files = Vec::new();
        for k in [3, 1, 2] {
            let file = dir.join(format!("{index}-{k}.json")).display().to_string();
            let spec = format!("{k}/3");
            let mut args = single_args.clone();
            args.extend_from_slice(&["--shard", &spec, "--out", &file]);
            let out = cassalock(&args);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            files.push(file);
        }
        let mut merge_args = vec!["merge"];
        merge_args.extend(files.iter().map(String::as_str));
        let merged = cassalock(&merge_args);
        assert_eq!(text(&merged.stdout), text(&single.stdout), "{scenario:?} {seeds}");
        assert_eq!(merged.status.code(), Some(*status), "{}", text(&merged.stderr));
    }
    // A sim shard and a sim-family shard do not merge; neither do two sim sweeps.
    let family = shard(&dir, "set-nx-contention", "0..9", 2, 3);
    let sim_one = dir.join("0-1.json").display().to_string();
    let sim_two = dir.join("0-2.json").display().to_string();
    let other = dir.join("1-3.json").display().to_string();
    for (files, expected) in [
        (
            vec![&sim_one, &family],
            "set-nx-contention-0__9-2-of-3.json: not a \"cassalock-sim-shard\" file",
        ),
        (
            vec![&family, &sim_one],
            "0-1.json: not a \"cassalock-sim-family-shard\" file",
        ),
        (vec![&sim_one, &sim_two, &other], "another sweep"),
        (vec![&sim_one, &sim_two], "1 of 3 shards missing (3/3)"),
    ] {
        let mut args = vec!["merge"];
        args.extend(files.iter().map(|file| file.as_str()));
        let out = cassalock(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in {stderr}");
    }
    let out = cassalock(&[
        "sim",
        "--scenario",
        "contention",
        "--shard",
        "1/2",
        "--out",
        &sim_one,
        "--record",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
