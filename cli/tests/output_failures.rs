//! What the command says when its output cannot be written (a full disk: /dev/full): never a
//! panic (exit 101) or a success, never the code of a violation or of bad usage for a write that
//! failed, but exit 6 and a sentence naming what could not be written.
#![cfg(madsim)]

use std::fs::File;
use std::process::{Command, Output, Stdio};

fn cassalock(args: &[&str], stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("the cassalock binary runs")
}

fn full() -> Stdio {
    Stdio::from(File::options().write(true).open("/dev/full").expect("/dev/full exists"))
}

/// Standard output on a full device: exit 6 (or 1 where the run found a violation), with a
/// sentence on standard error, never a panic's backtrace.
#[test]
fn a_full_standard_output_is_said_and_exits_6_not_a_panic() {
    let cases: &[(&[&str], i32)] = &[
        (&["replay", "--scenario", "contention", "--seed", "0"], 6),
        (&["sim", "--scenario", "contention", "--seeds", "0..2"], 6),
        (&["sim-family", "--scenario", "set-nx-contention", "--seeds", "0..2"], 6),
        (&["sim", "--scenario", "set-nx-contention", "--seeds", "0..2"], 6),
        // The old lock's model violates F-overtakes and T2: the verdict's 1 stays.
        (&["check", "--model", "old"], 1),
        (&["--help"], 6),
        (&["replay", "--help"], 6),
        (&["--version"], 6),
    ];
    for (args, code) in cases {
        let out = cassalock(args, full());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {stderr}");
        assert!(
            stderr.contains("cannot write to standard output: No space left on device"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// A file named by a flag that cannot be written: the flag and the cause are named, exit 6.
#[test]
fn a_full_output_file_names_its_flag_and_exits_6() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "replay",
                "--scenario",
                "contention",
                "--seed",
                "0",
                "--svg",
                "/dev/full",
            ],
            "error: --svg /dev/full: the timeline was drawn but could not be written: No space left on device",
        ),
        (
            &[
                "replay",
                "--scenario",
                "contention",
                "--seed",
                "0",
                "--events",
                "/dev/full",
            ],
            "error: could not write the event record /dev/full",
        ),
        (
            &[
                "sim",
                "--scenario",
                "contention",
                "--seeds",
                "0..2",
                "--per-seed-out",
                "/dev/full",
            ],
            "error: cannot write --per-seed-out /dev/full: No space left on device",
        ),
        (
            &[
                "replay",
                "--scenario",
                "set-nx-contention",
                "--seed",
                "0",
                "--svg",
                "/dev/full",
            ],
            "error: --svg /dev/full: the timeline was drawn but could not be written",
        ),
    ];
    for (args, message) in cases {
        let out = cassalock(args, Stdio::null());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(6), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}
