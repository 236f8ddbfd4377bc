//! `cassalock judge FILE`: a model's counterexample written with `check --events` is judged as
//! the model judged it; a record that cannot be read is refused with exit 2 and the line named.

use std::path::PathBuf;
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

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("cassalock-judge-test-{}-{name}", std::process::id()))
}

#[test]
fn a_model_counterexample_written_by_check_is_judged_violated() {
    let file = temp("k1.jsonl");
    let path = file.to_string_lossy().into_owned();
    let checked = cassalock(&[
        "check",
        "--model",
        "getlock",
        "--fault",
        "pause",
        "--property",
        "T1",
        "--stop-at-first",
        "--events",
        &path,
    ]);
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked.stdout));
    assert!(
        text(&checked.stdout).contains("written to"),
        "{}",
        text(&checked.stdout)
    );
    let judged = cassalock(&["judge", &path]);
    let stdout = text(&judged.stdout);
    assert_eq!(judged.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("a model run of the queue lock"), "{stdout}");
    assert!(stdout.contains("T1-belief    FAILED   1 overlap"), "{stdout}");
    // Its timeline is drawn on the model's steps, the two believers' band in it.
    let svg = temp("k1.svg");
    let drawn = cassalock(&["judge", &path, "--svg", &svg.to_string_lossy()]);
    assert_eq!(drawn.status.code(), Some(1), "{}", text(&drawn.stderr));
    let picture = std::fs::read_to_string(&svg).expect("the timeline");
    assert!(
        picture.contains("the model&apos;s steps, one a unit") || picture.contains("the model's steps, one a unit"),
        "{picture}"
    );
    assert!(
        picture.contains("two clients believe they hold it (T1-belief): 1"),
        "{picture}"
    );
    let _ = std::fs::remove_file(&svg);
    let _ = std::fs::remove_file(&file);
}

#[test]
fn a_record_that_cannot_be_read_is_refused_with_exit_2_naming_the_line() {
    let missing = cassalock(&["judge", "/nonexistent/record.jsonl"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("cannot open the event record"),
        "{}",
        text(&missing.stderr)
    );
    let header = r#"{"schema":"cassalock-events","version":1,"driver":"simulator","lock":"queue","clock":"simulated-since-start","run":{"clients":1,"end_ns":10,"rules":{"harness":"observed","fencing":true}}}"#;
    for (name, body, expected) in [
        ("empty", String::new(), "empty"),
        ("garbage", "not json\n".to_owned(), "line 1 is not a header"),
        (
            "newer",
            format!("{}\n", header.replace("\"version\":1", "\"version\":9")),
            "version 9",
        ),
        (
            "bad-event",
            format!("{header}\n{{\"at_ns\":1,\"node\":\"c0\",\"kind\":\"teleported\"}}\n"),
            "line 2 is not an event",
        ),
    ] {
        let file = temp(name);
        std::fs::write(&file, body).unwrap();
        let judged = cassalock(&["judge", &file.to_string_lossy()]);
        let stderr = text(&judged.stderr);
        assert_eq!(judged.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(expected), "{name}: expected {expected:?} in {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        let _ = std::fs::remove_file(&file);
    }
    // A record with nothing but its header: judged, nothing violated.
    let file = temp("header-only");
    std::fs::write(&file, format!("{header}\n")).unwrap();
    let judged = cassalock(&["judge", &file.to_string_lossy()]);
    assert_eq!(judged.status.code(), Some(0), "{}", text(&judged.stdout));
    let _ = std::fs::remove_file(&file);
}

/// `cassalock judge FILE --svg` draws, from the record alone, the timeline the run itself
/// drew: for a row lock (`replay`) and for another family (`sim-family`).
#[cfg(madsim)]
#[test]
fn a_record_s_timeline_is_the_run_s_timeline_for_every_family() {
    let cases: [(&str, Vec<&str>); 2] = [
        (
            "pause",
            vec!["replay", "--scenario", "pause", "--seed", "0", "--summary"],
        ),
        (
            "gc-pause",
            vec!["sim-family", "--scenario", "redlock-gc-pause", "--seed", "0"],
        ),
    ];
    for (name, run) in cases {
        let (events, run_svg, judge_svg) = (
            temp(&format!("{name}.jsonl")),
            temp(&format!("{name}-run.svg")),
            temp(&format!("{name}-judge.svg")),
        );
        let (events_arg, run_svg_arg, judge_svg_arg) = (
            events.to_string_lossy().into_owned(),
            run_svg.to_string_lossy().into_owned(),
            judge_svg.to_string_lossy().into_owned(),
        );
        let mut args = run.clone();
        args.extend(["--events", &events_arg, "--svg", &run_svg_arg]);
        let ran = cassalock(&args);
        assert!(run_svg.exists(), "{name}: {}", text(&ran.stderr));
        let judged = cassalock(&["judge", &events_arg, "--svg", &judge_svg_arg]);
        assert_eq!(
            judged.status.code(),
            ran.status.code(),
            "{name}: {}",
            text(&judged.stderr)
        );
        let (drawn_by_run, drawn_by_judge) = (std::fs::read(&run_svg).unwrap(), std::fs::read(&judge_svg).unwrap());
        assert!(drawn_by_run == drawn_by_judge, "{name}: the two timelines differ");
        let svg = String::from_utf8(drawn_by_judge).unwrap();
        if name == "gc-pause" {
            // The paused holder's belief ends at its validity, before the other acquires; its
            // late write is the stale token the resource accepted.
            assert!(svg.contains("stale token accepted (T1-resource): 1"), "{name}");
            assert!(
                svg.contains("two clients believe they hold it (T1-belief): 0"),
                "{name}"
            );
            assert!(
                svg.contains("redlock-gc-pause / seed 0: T1-resource VIOLATED"),
                "{name}"
            );
        }
        for file in [events, run_svg, judge_svg] {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// `bench judge`: records of a run seen from outside, judged as they are read by `judge FILE`,
/// find every overlap and stale write planted in them; bad counts are refused.
#[test]
fn bench_judge_finds_what_it_planted_and_refuses_bad_counts() {
    let out = cassalock(&["bench", "judge", "--counts", "2000,5000"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("peak memory at 5000 events against 2000"), "{stdout}");
    assert!(stdout.contains("1 of 1"), "{stdout}");
    for bad in ["0", "99", "10000001", "5000,2000", "x"] {
        let refused = cassalock(&["bench", "judge", "--counts", bad]);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "--counts {bad}: {}",
            text(&refused.stderr)
        );
    }
    let misplaced = cassalock(&["bench", "judge", "--seeds", "3"]);
    assert_eq!(misplaced.status.code(), Some(2), "{}", text(&misplaced.stderr));
}
