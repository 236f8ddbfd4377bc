//! Every recorded simulator seed (regressions/*.seeds) is replayed and must give its recorded
//! verdicts: a recorded violation must still be found, a recorded pass must still
//! hold. The lines are `cassalock replay` arguments; see cli/src/recorded.rs for the format.
#![cfg(madsim)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One replay's wall-clock limit. A recorded seed replays in well under a second of a release
/// build (a few in a debug one); a replay that hangs (as swarm seed 3 with reused thread ids
/// once did) is killed here and reported as a failure, and the replays after it still run.
const REPLAY_LIMIT: Duration = Duration::from_secs(120);

/// How a replay ended.
enum Replayed {
    Exited(Output),
    /// Killed at [`REPLAY_LIMIT`].
    Hung,
}

impl Replayed {
    /// The output of a replay that is not allowed to hang (`args` name it if it did).
    fn exited(self, args: &[&str]) -> Output {
        match self {
            Replayed::Exited(output) => output,
            Replayed::Hung => panic!("{}", hang_message(args)),
        }
    }
}

fn hang_message(args: &[&str]) -> String {
    format!(
        "cassalock replay {} ran over {} s and was killed: a hang",
        args.join(" "),
        REPLAY_LIMIT.as_secs()
    )
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn replay(args: &[&str]) -> Replayed {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .arg("replay")
        .args(args)
        .arg("--summary")
        .current_dir(workspace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the cassalock binary runs");
    // Drain both pipes while waiting, so that a chatty replay cannot block on a full pipe.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the replay") {
            break status;
        }
        if started.elapsed() > REPLAY_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Replayed::Hung;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Replayed::Exited(Output {
        status,
        stdout: stdout.join().expect("the stdout reader"),
        stderr: stderr.join().expect("the stderr reader"),
    })
}

/// Every recorded line: (file, line number, arguments).
fn recorded() -> Vec<(String, usize, Vec<String>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(workspace().join("regressions"))
        .expect("regressions/ exists")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "seeds"))
        .collect();
    files.sort();
    let mut lines = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a readable seeds file");
        let name = path.file_name().expect("a file name").to_string_lossy().into_owned();
        for (index, line) in text.lines().enumerate() {
            // Shell words: a quoted path (a scenario file with spaces) is one argument; `#`
            // starts a comment.
            let arguments: Vec<String> =
                shlex::split(line).unwrap_or_else(|| panic!("{name}:{}: unbalanced quotes: {line}", index + 1));
            if !arguments.is_empty() {
                lines.push((name.clone(), index + 1, arguments));
            }
        }
    }
    lines
}

/// The verdict lines a run printed: from its "verdicts (" line (without the trace hash, which
/// only the simulator's records give) to the blank line after them.
fn verdict_lines(stdout: &str) -> Vec<String> {
    let mut lines: Vec<String> = stdout
        .lines()
        .skip_while(|line| !line.starts_with("verdicts ("))
        .take_while(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(first) = lines.first_mut() {
        if let Some(at) = first.find(", trace hash") {
            first.replace_range(at..first.len() - 2, "");
        }
    }
    lines
}

/// `cassalock judge` on the event record `events` prints the verdicts `replay_stdout` shows.
fn judged_as_replayed(replay_stdout: &[u8], events: &Path) -> Result<(), String> {
    let judged = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .arg("judge")
        .arg(events)
        .output()
        .expect("the cassalock binary runs");
    let replayed = verdict_lines(&String::from_utf8_lossy(replay_stdout));
    let judged_lines = verdict_lines(&String::from_utf8_lossy(&judged.stdout));
    if replayed.is_empty() {
        return Err("the replay printed no verdicts".to_owned());
    }
    if replayed != judged_lines {
        return Err(format!(
            "cassalock judge {} differs from the replay:\n  replay:\n    {}\n  judge (exit {:?}, {}):\n    {}",
            events.display(),
            replayed.join("\n    "),
            judged.status.code(),
            String::from_utf8_lossy(&judged.stderr).trim(),
            judged_lines.join("\n    ")
        ));
    }
    Ok(())
}

/// Every recorded line replays with its recorded verdicts, and `cassalock judge` reading the
/// line's event record (`replay --events`) prints the same verdicts as the replay.
#[test]
fn every_recorded_seed_still_gives_its_recorded_verdicts() {
    let lines = recorded();
    assert!(
        lines.len() >= 20,
        "the matrix's violating seeds alone are 20; found {}",
        lines.len()
    );
    let mut failures = Vec::new();
    for (file, number, arguments) in &lines {
        assert!(
            arguments.iter().any(|a| a.starts_with("--expect-")),
            "regressions/{file}:{number}: a recorded seed must say what it expects (--expect-violated or --expect-passed)"
        );
        let events = std::env::temp_dir().join(format!(
            "cassalock-recorded-{}-{file}-{number}.jsonl",
            std::process::id()
        ));
        let events_arg = events.to_string_lossy().into_owned();
        let mut args: Vec<&str> = arguments.iter().map(String::as_str).collect();
        args.extend(["--events", &events_arg]);
        let out = match replay(&args) {
            Replayed::Exited(out) => out,
            Replayed::Hung => {
                failures.push(format!("regressions/{file}:{number}: {}", hang_message(&args)));
                continue;
            }
        };
        // The one judge, reading the run's event record, prints the replay's verdicts.
        if let Err(why) = judged_as_replayed(&out.stdout, &events) {
            failures.push(format!("regressions/{file}:{number}: {why}"));
        }
        let _ = std::fs::remove_file(&events);
        if out.status.code() != Some(0) {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let why: Vec<&str> = stdout
                .lines()
                .skip_while(|line| !line.starts_with("RECORDED VERDICTS NOT REPRODUCED"))
                .collect();
            failures.push(format!(
                "regressions/{file}:{number}: cassalock replay {} (exit {:?})\n{}{}",
                arguments.join(" "),
                out.status.code(),
                why.join("\n"),
                stderr
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} recorded seeds:\n{}",
        failures.len(),
        lines.len(),
        failures.join("\n")
    );
    eprintln!(
        "{} recorded seeds replayed, each with its recorded verdicts",
        lines.len()
    );
}

#[test]
fn a_recorded_seed_that_no_longer_reproduces_fails_with_a_clear_message() {
    // Renew-race seed 0 violates K3 only with the K3 mutant: recorded as violating without it,
    // the replay must say the violation is gone, and exit 1.
    let args = [
        "--scenario",
        "renew-race",
        "--seed",
        "0",
        "--algorithm",
        "queue",
        "--expect-violated",
        "K3",
    ];
    let out = replay(&args).exited(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("RECORDED VERDICTS NOT REPRODUCED"), "{stdout}");
    assert!(stdout.contains("K3: recorded VIOLATED, now holds"), "{stdout}");
    assert!(stdout.contains("the harness went blind"), "{stdout}");
    // And a recorded pass that now fails (the K3 mutant stands for a regressed fix).
    let args = [
        "--scenario",
        "renew-race",
        "--seed",
        "0",
        "--algorithm",
        "queue",
        "--k3",
        "--expect-passed",
        "K3",
    ];
    let out = replay(&args).exited(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("K3: recorded holds, now VIOLATED"), "{stdout}");
    // An unknown claim is bad usage, before anything runs.
    let args = ["--scenario", "renew-race", "--seed", "0", "--expect-violated", "K9"];
    let out = replay(&args).exited(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no claim has the ID \"K9\""));
}
