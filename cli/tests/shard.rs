//! `sim-family --shard K/N --out FILE` and `cassalock merge`: the merge of a sweep's shards
//! prints the same stdout bytes as the sweep on one machine (wall-clock figures go to
//! stderr) and exits with the same status; bad shard specs and bad merge inputs exit 2 with
//! a message naming the flag or the file. `report ... --shard K/N --shard-out FILE` and
//! `merge --out DIR`: the merge of a report's shards writes the same files, byte for byte, as
//! the report on one machine; `bench sim`'s shards add up to its exact figures.
#![cfg(madsim)]

use std::collections::BTreeMap;
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
        "--shard-out",
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
        ("memcached-pause", "0..6", &["--clients", "3", "--acquisitions", "2"], 1),
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
            args.extend_from_slice(&["--shard", &spec, "--shard-out", &file]);
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
        (&["--shard", "0/3", "--shard-out", &out_file], "K/N"),
        (&["--shard", "4/3", "--shard-out", &out_file], "K/N"),
        (&["--shard", "1/10001", "--shard-out", &out_file], "10000"),
        (&["--shard", "x", "--shard-out", &out_file], "--shard"),
        (&["--shard", "1/3"], "--shard-out"),
        (&["--shard-out", &out_file], "--shard"),
        (
            &["--shard", "1/3", "--shard-out", "/nonexistent-dir/x.json"],
            "--shard-out",
        ),
        (&["--shard", "1/3", "--shard-out", &out_file, "--seed", "3"], "--seed"),
        // The shard file's old flag is no longer a spelling of it.
        (&["--shard", "1/3", "--out", &out_file], "--out"),
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
        (
            vec![&one, &two, &future],
            "future.json: shard file version 99; this cassalock reads version",
        ),
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
    // A control (exit 0), a broken release found in both algorithms (exit 1), a swarm whose
    // failures are tallied by the fault kinds of their plans, and a workload too big for the
    // run's time limit, which leaves T2 bounded (exit 3).
    let sweeps: &[(&[&str], &str, i32)] = &[
        (&["--scenario", "contention"], "0..9", 0),
        (&["--scenario", "renew-race", "--k3"], "0..12", 1),
        (&["--scenario", "swarm", "--algorithm", "queue"], "4..=15", 1),
        (
            &[
                "--scenario",
                "contention",
                "--algorithm",
                "queue",
                "--clients",
                "16",
                "--acquisitions",
                "10000",
            ],
            "0..3",
            3,
        ),
    ];
    for (index, (scenario, seeds, status)) in sweeps.iter().enumerate() {
        let mut single_args = vec!["sim"];
        single_args.extend_from_slice(scenario);
        single_args.extend_from_slice(&["--seeds", seeds]);
        let single = cassalock(&single_args);
        assert_eq!(single.status.code(), Some(*status), "{}", text(&single.stdout));
        assert!(!text(&single.stdout).contains("seeds/minute"));
        if *status == 3 {
            assert!(
                text(&single.stdout).contains("T2           BOUNDED in 3 of 3 runs"),
                "{}",
                text(&single.stdout)
            );
        }
        let mut files = Vec::new();
        for k in [3, 1, 2] {
            let file = dir.join(format!("{index}-{k}.json")).display().to_string();
            let spec = format!("{k}/3");
            let mut args = single_args.clone();
            args.extend_from_slice(&["--shard", &spec, "--shard-out", &file]);
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
        "--shard-out",
        &sim_one,
        "--record",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

// ---- report and bench shards ----

/// Every file under `dir` (relative name -> bytes).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, found: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, found);
            } else {
                let name = path.strip_prefix(root).unwrap().display().to_string();
                found.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut found = BTreeMap::new();
    walk(dir, dir, &mut found);
    found
}

/// `report <args> --shard k/n --shard-out FILE` for each k, then `merge --out` of the files
/// (given in reverse order); returns the merge's output and its directory.
fn shards_merged(dir: &Path, args: &[&str], n: u64) -> (Output, PathBuf) {
    let mut shard_files = Vec::new();
    for k in 1..=n {
        let file = dir.join(format!("shard-{k}.json")).display().to_string();
        let spec = format!("{k}/{n}");
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["--shard", &spec, "--shard-out", &file]);
        let out = cassalock(&full);
        assert_eq!(out.status.code(), Some(0), "{full:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains(&format!("shard {k}/{n} of `cassalock report")),
            "{}",
            text(&out.stdout)
        );
        shard_files.push(file);
    }
    shard_files.reverse();
    let merged = dir.join("merged");
    let merged_text = merged.display().to_string();
    let mut merge: Vec<&str> = vec!["merge", "--out", &merged_text];
    merge.extend(shard_files.iter().map(String::as_str));
    (cassalock(&merge), merged)
}

/// The report on one machine and the merge of its three shards: same exit status, same stdout
/// (the directory named apart), same files with the same bytes.
fn assert_merge_equals_whole(name: &str, args: &[&str]) {
    let dir = scratch(name);
    let whole = dir.join("whole");
    let whole_text = whole.display().to_string();
    let mut whole_args: Vec<&str> = args.to_vec();
    whole_args.extend(["--out", &whole_text]);
    // The single run in the background while the shards run one after another.
    let single = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(&whole_args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the cassalock binary runs");
    let (merged_out, merged) = shards_merged(&dir, args, 3);
    let single = single.wait_with_output().unwrap();
    assert_eq!(single.status.code(), Some(0), "{}", text(&single.stderr));
    assert_eq!(
        merged_out.status.code(),
        single.status.code(),
        "{}",
        text(&merged_out.stderr)
    );
    assert_eq!(
        text(&merged_out.stdout).replace(&merged.display().to_string(), "DIR"),
        text(&single.stdout).replace(&whole_text, "DIR"),
    );
    let (whole_files, merged_files) = (files(&whole), files(&merged));
    assert!(!whole_files.is_empty());
    assert_eq!(
        merged_files.keys().collect::<Vec<_>>(),
        whole_files.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (file, bytes) in &whole_files {
        assert!(
            merged_files[file] == *bytes,
            "{file} differs between the merge and the single run"
        );
    }
}

#[test]
fn the_merge_of_three_fairness_shards_writes_the_single_runs_bytes() {
    assert_merge_equals_whole(
        "fairness",
        &[
            "report",
            "fairness",
            "--seeds",
            "2",
            "--threads",
            "1,3",
            "--duration-s",
            "4",
        ],
    );
}

/// The thesis's rows with small budgets: every kind of unit (model runs, repeated specs, seed
/// searches with trace files written at the merge, mutants, contract run sets) is in it.
#[test]
#[ignore = "the thesis's matrix four times over, minutes: .ci/run runs it (cargo test -p cassalock-cli --test shard -- --ignored)"]
fn the_merge_of_three_matrix_shards_writes_the_single_runs_bytes() {
    assert_merge_equals_whole(
        "matrix",
        &[
            "report",
            "matrix",
            "--thesis-only",
            "--max-seeds",
            "2",
            "--contract-seeds",
            "2",
        ],
    );
}

#[test]
fn bad_report_shards_and_merges_exit_2_and_say_what_is_wrong() {
    let dir = scratch("bad");
    let file = dir.join("x.json").display().to_string();
    for (args, expected) in [
        (
            vec!["report", "fairness", "--shard", "0/3", "--shard-out", &file],
            "K/N",
        ),
        (vec!["report", "matrix", "--shard", "4/3", "--shard-out", &file], "K/N"),
        (vec!["report", "fairness", "--shard", "1/3"], "--shard-out"),
        (vec!["report", "all", "--shard-out", &file], "--shard"),
        (
            vec![
                "report",
                "fairness",
                "--seeds",
                "0",
                "--shard",
                "1/2",
                "--shard-out",
                &file,
            ],
            "--seeds must be between 1 and 100",
        ),
        (
            vec![
                "report",
                "fairness",
                "--shard",
                "1/2",
                "--shard-out",
                "/nonexistent/dir/x.json",
            ],
            "cannot write",
        ),
    ] {
        let out = cassalock(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(expected), "{args:?}: {}", text(&out.stderr));
    }

    // Two shards of a small fairness sweep, and one of another sweep.
    let tiny = [
        "report",
        "fairness",
        "--seeds",
        "1",
        "--threads",
        "1",
        "--duration-s",
        "1",
    ];
    let shard_file = |name: &str, spec: &str, seeds: &str| {
        let file = dir.join(name).display().to_string();
        let mut args: Vec<&str> = tiny.to_vec();
        args[3] = seeds;
        args.extend(["--shard", spec, "--shard-out", &file]);
        let out = cassalock(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        file
    };
    let first = shard_file("1.json", "1/2", "1");
    let second = shard_file("2.json", "2/2", "1");
    let other = shard_file("other.json", "2/2", "2");
    let out_dir = dir.join("out").display().to_string();
    for (files, expected) in [
        (vec![first.as_str()], "1 of 2 shards missing (2/2)"),
        (vec![first.as_str(), first.as_str()], "are both shard 1/2"),
        (vec![first.as_str(), other.as_str()], "another sweep"),
    ] {
        let mut args = vec!["merge", "--out", &out_dir];
        args.extend(files.iter().copied());
        let out = cassalock(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(expected), "{args:?}: {}", text(&out.stderr));
    }
    let mut good = vec!["merge", "--out", &out_dir, &second, &first];
    let out = cassalock(&good);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(Path::new(&out_dir).join("fairness.md").exists());
    // A damaged file: valid JSON of the right format, results cut out.
    let damaged = dir.join("damaged.json");
    let mut value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&first).unwrap()).unwrap();
    value["fairness"]["results"] = serde_json::json!([]);
    std::fs::write(&damaged, value.to_string()).unwrap();
    let damaged = damaged.display().to_string();
    good[3] = &damaged;
    let out = cassalock(&good);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("1/2"), "{}", text(&out.stderr));
    // A file whose report part is gone: refused before anything is written.
    let emptied = dir.join("emptied.json");
    value["fairness"] = serde_json::Value::Null;
    std::fs::write(&emptied, value.to_string()).unwrap();
    let (emptied, fresh) = (emptied.display().to_string(), dir.join("fresh").display().to_string());
    let out = cassalock(&["merge", "--out", &fresh, &second, &emptied]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no fairness results"),
        "{}",
        text(&out.stderr)
    );
    assert!(!Path::new(&fresh).exists(), "a refused merge created {fresh}");
    // --out is for report shards only: a sim-family merge prints.
    let family = dir.join("family.json").display().to_string();
    let out = cassalock(&[
        "sim-family",
        "--scenario",
        "set-nx-contention",
        "--seeds",
        "0..2",
        "--shard",
        "1/1",
        "--shard-out",
        &family,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = cassalock(&["merge", "--out", &out_dir, &family]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("only report shards write files"),
        "{}",
        text(&out.stderr)
    );
}

/// The figures of `bench sim`'s first table that do not depend on the machine: per algorithm,
/// acquisitions, simulated seconds and messages.
fn exact_bench_figures(stdout: &str) -> Vec<(String, String, String, String)> {
    stdout
        .lines()
        .skip_while(|line| !line.starts_with("algorithm "))
        .skip(1)
        .take_while(|line| !line.is_empty())
        .map(|line| {
            // A name ("old (queues)"), then seven figures.
            let words: Vec<&str> = line.split_whitespace().collect();
            let n = words.len();
            assert!(n >= 8, "{line}");
            (
                words[..n - 7].join(" "),
                words[n - 4].into(),
                words[n - 3].into(),
                words[n - 2].into(),
            )
        })
        .collect()
}

#[test]
fn the_merge_of_bench_sim_shards_adds_up_to_the_single_runs_exact_figures() {
    let dir = scratch("bench");
    let whole = cassalock(&["bench", "sim", "--seeds", "12"]);
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole.stderr));
    let mut files = Vec::new();
    for k in 1..=3 {
        let file = dir.join(format!("bench-{k}.json")).display().to_string();
        let spec = format!("{k}/3");
        let out = cassalock(&["bench", "sim", "--seeds", "12", "--shard", &spec, "--shard-out", &file]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        files.push(file);
    }
    let mut merge = vec!["merge"];
    merge.extend(files.iter().rev().map(String::as_str));
    let merged = cassalock(&merge);
    assert_eq!(merged.status.code(), Some(0), "{}", text(&merged.stderr));
    let (whole, merged) = (text(&whole.stdout), text(&merged.stdout));
    let figures = exact_bench_figures(&whole);
    // Each algorithm on madsim's network and on the queues.
    assert_eq!(figures.len(), 4, "{whole}");
    assert_eq!(exact_bench_figures(&merged), figures, "{merged}\n---\n{whole}");
    // Each shard's own speed is shown, per run.
    assert_eq!(
        merged.lines().filter(|line| line.contains(" 3/3 ")).count(),
        4,
        "{merged}"
    );
    // A shard left out, and flags of another suite.
    let out = cassalock(&["merge", &files[0], &files[1]]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("1 of 3 shards missing (3/3)"),
        "{}",
        text(&out.stderr)
    );
    for (args, expected) in [
        (vec!["bench", "sim", "--seeds", "0"], "--seeds 0"),
        (vec!["bench", "sim", "--seeds", "100001"], "--seeds 100001"),
        (vec!["bench", "sim", "--shard", "2/1", "--shard-out", &files[0]], "K/N"),
        (
            vec!["bench", "sweep-memory", "--seeds", "5"],
            "--seeds applies to `cassalock bench sim` or `cassalock bench handoff` only",
        ),
    ] {
        let out = cassalock(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(expected), "{args:?}: {}", text(&out.stderr));
    }
}
