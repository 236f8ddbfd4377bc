//! Bad usage of every command: zero, negative, huge, overflowing, unknown and
//! wrong-command values. Each is refused before anything runs, with exit status 2 and a message
//! that names the flag the user typed; never a panic, a hang or a silently ignored flag. The
//! simulator's knobs have their own table in `knobs.rs`.
#![cfg(madsim)]

use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn cassalock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(args)
        .output()
        .expect("the cassalock binary runs")
}

/// (the command line, what its error must say).
const BAD: &[(&[&str], &str)] = &[
    // A range the message states is the range taken: 0 is not offered and then refused.
    (
        &["check", "--model", "getlock", "--acquisitions", "1000000"],
        "1000000 is not in 1..=255",
    ),
    (&["check", "--model", "getlock", "--acquisitions", "0"], "0 is not in 1..=255"),
    (&["check", "--model", "globaltime", "--threads", "0"], "0 is not in 1..=255"),
    (
        &["check", "--model", "globaltime", "--threads", "1"],
        "--threads (replicas) 1 is outside 2..=3",
    ),
    (&["check", "--model", "getlock", "--clock-bound", "1000"], "1000 is not in 2..=250"),
    (
        &["check", "--model", "getlock", "--leases", "--clock-bound", "1"],
        "1 is not in 2..=250",
    ),
    (
        &["sim", "--scenario", "contention", "--ttl-s", "-5"],
        "-5 is negative; the knob takes a whole number (its lower bound is checked next)",
    ),
    // A flag of another suite is refused, not ignored.
    (
        &["bench", "models", "--lockers", "0"],
        "--lockers applies to `cassalock bench real` only",
    ),
    (
        &["bench", "models", "--seconds", "5"],
        "--seconds applies to `cassalock bench real` only",
    ),
    (
        &["bench", "models", "--repeats", "3"],
        "--repeats applies to `cassalock bench real` only",
    ),
    (
        &["bench", "sim", "--counts", "5"],
        "--counts applies to `cassalock bench sweep-memory` only",
    ),
    (
        &["bench", "models", "--scenario", "skew"],
        "--scenario applies to `cassalock bench sweep-memory` only",
    ),
    (&["bench", "nope"], "invalid value 'nope'"),
    (&["bench", "handoff", "--seeds", "0"], "--seeds 0: give 1 to 1000 seeds for bench handoff"),
    (&["check", "--model", "getlock", "--max-memory-mib", "0"], "--max-memory-mib 0: give 64 to"),
    (
        &["check", "--model", "getlock", "--max-memory-mib", "18446744073709551615"],
        "--max-memory-mib 18446744073709551615: give 64 to",
    ),
    (
        &["check", "--model", "getlock", "--max-memory-mib", "-1"],
        "invalid value '-1' for '--max-memory-mib",
    ),
    (&["bench", "handoff", "--seeds", "1001"], "--seeds 1001: give 1 to 1000"),
    // One notation for ranges on every command: two dots.
    (
        &["report", "fairness", "--hold-ms", "5-20"],
        "write the range as 5..20: ranges take two dots, as on every command",
    ),
    (&["report", "fairness", "--think-ms", "9..3"], "the end is below the start"),
    (&["bench", "handoff", "--seeds", "-1"], "invalid value '-1' for '--seeds"),
    (
        &["bench", "handoff", "--shard", "1/2", "--shard-out", "x.json"],
        "--shard applies to `cassalock bench sim` only",
    ),
    (
        &["bench", "models", "--seeds", "5"],
        "--seeds applies to `cassalock bench sim` or `cassalock bench handoff` only",
    ),
    // The long run: its own flags only, sizes within limits, the Cassandra row locks only.
    (
        &["bench", "real", "--block", "5"],
        "--block applies to `cassalock bench long-run` only",
    ),
    (
        &["bench", "long-run", "--seconds", "5"],
        "--seconds applies to `cassalock bench real` only",
    ),
    (&["bench", "long-run", "--acquisitions", "0"], "--acquisitions 0: give 1 to"),
    (
        &["bench", "long-run", "--acquisitions", "18446744073709551615"],
        "--acquisitions 18446744073709551615: give 1 to",
    ),
    (
        &["bench", "long-run", "--acquisitions", "-3"],
        "invalid value '-3' for '--acquisitions",
    ),
    (&["bench", "long-run", "--block", "0"], "--block 0: give 1 to"),
    (
        &["bench", "long-run", "--acquisitions", "1000000", "--block", "10"],
        "at most 1000 (give a larger block)",
    ),
    (
        &["bench", "long-run", "--locks", "redlock"],
        "the long run takes the Cassandra row locks old and queue only",
    ),
    (
        &["bench", "long-run", "--contact-points", "nowhere"],
        "is not host:port",
    ),
    (&["bench", "long-run", "--idle-s", "3601"], "--idle-s 3601: give 0 to 3600"),
    // The most acquisitions with the default block: checked, then refused only for the build
    // (this is the simulation build), not for making too many blocks.
    (
        &["bench", "long-run", "--acquisitions", "1000000"],
        "talks to a real Cassandra cluster: use the real build",
    ),
    (&["bench", "long-run", "--idle-s", "-1"], "invalid value '-1' for '--idle-s"),
    (
        &["bench", "real", "--idle-s", "5"],
        "--idle-s applies to `cassalock bench long-run` only",
    ),
    (
        &["bench", "long-run", "--from-data", "reports/real-long-run.json", "--block", "5"],
        "measures nothing: drop --block",
    ),
    (
        &["bench", "long-run", "--from-data", "no-such-file.json"],
        "--from-data: cannot read no-such-file.json",
    ),
    // Seeds: empty, inverted, negative, overflowing, not a number.
    (
        &["sim", "--scenario", "contention", "--seeds", "5..3"],
        "the range is empty or inverted",
    ),
    (
        &["sim", "--scenario", "contention", "--seeds", "-5..3"],
        "seeds are not negative",
    ),
    (
        &[
            "sim",
            "--scenario",
            "contention",
            "--seeds",
            "0..12345678901234567890123",
        ],
        "12345678901234567890123 overflows",
    ),
    (&["sim", "--scenario", "contention", "--seeds", ""], "--seeds"),
    (
        &["replay", "--scenario", "contention", "--seed", "x"],
        "invalid value 'x' for '--seed",
    ),
    (&["replay", "--scenario", "contention", "--seed", "-1"], "--seed"),
    (
        &["sim", "--scenario", "nope", "--seeds", "0..1"],
        "unknown scenario \"nope\"",
    ),
    // The model checker.
    (&["check", "--model", "nope"], "invalid value 'nope' for '--model"),
    (
        &["check", "--model", "getlock", "--threads", "0"],
        "0 is not in 1..=255",
    ),
    (&["check", "--model", "getlock", "--threads", "300"], "--threads"),
    (&["check", "--model", "getlock", "--threads", "9"], "--threads"),
    (
        &["check", "--model", "getlock", "--max-states", "0"],
        "--max-states and --max-seconds must be at least 1",
    ),
    (
        &["check", "--model", "getlock", "--max-seconds", "18446744073709551615"],
        "at most 2592000 (30 days)",
    ),
    (
        &["check", "--model", "getlock", "--explore", "8.8.8.8:3000"],
        "only listens on loopback",
    ),
    // A fault or flag of one family's models is refused by another's.
    (
        &["check", "--model", "getlock", "--fault", "failover"],
        "--fault failover is a fault of a Redis server",
    ),
    (
        &["check", "--model", "redis-set-nx", "--fault", "skew"],
        "the redis-set-nx model supports --fault none, pause, store-failure, restart, failover or server-clock-jump, not skew",
    ),
    (
        &["check", "--model", "redis-set-nx", "--fencing"],
        "not to redis-set-nx",
    ),
    (
        &["check", "--model", "globaltime", "--extend"],
        "--extend applies to the redis-set-nx, redis-setnx-expire, redlock and memcached models",
    ),
    (&["check", "--model", "redis-set-nx", "--threads", "4"], "--threads (clients) 4"),
    // Reports: every stage's argument checked before the first stage runs.
    (&["report", "all", "--seeds", "0"], "--seeds must be between 1 and 100"),
    (&["report", "all", "--matrix-max-seeds", "0"], "--matrix-max-seeds"),
    (
        &["report", "all", "--matrix-max-seeds", "100000000"],
        "--matrix-max-seeds",
    ),
    (&["report", "matrix", "--cell-time-s", "0"], "--cell-time-s"),
];

#[test]
fn bad_usage_is_refused_at_once_with_exit_2_and_the_flag_named() {
    for (args, expected) in BAD {
        let started = Instant::now();
        let out = cassalock(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: exit {:?}\n{stderr}", out.status);
        assert!(
            stderr.contains(expected),
            "{args:?}: expected {expected:?} in:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: panicked:\n{stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{args:?}: refused only after {:?}: the check must come before any work",
            started.elapsed()
        );
    }
}

#[test]
fn explore_on_a_busy_port_says_address_in_use_instead_of_panicking() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let address = busy.local_addr().expect("its address").to_string();
    let out = cassalock(&["check", "--model", "getlock", "--explore", &address]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("address in use"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `--explore 127.0.0.1:0` asks for any free port: the command says which one it took (not 0),
/// and the Explorer answers there.
#[test]
fn explore_on_port_zero_says_the_port_it_listens_on() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(["check", "--model", "lemma", "--explore", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cassalock starts");
    let stdout = child.stdout.take().expect("its stdout");
    let said = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|line| line.starts_with("stateright Explorer on"));
    let port: Option<u16> = said.as_deref().and_then(|line| {
        let rest = line.split("http://127.0.0.1:").nth(1)?;
        rest.split('/').next()?.parse().ok()
    });
    let answered = port.filter(|port| *port != 0).is_some_and(|port| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break true;
            }
            if Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(answered, "said {said:?}: port {port:?}");
}

/// One name per knob: the renewal interval is `--renew-every-ms` in `sim`, `replay` and `real`
/// (which still reads its old `--renew-ms`, unlisted).
#[test]
fn the_renewal_interval_has_one_name_on_every_command() {
    for command in ["sim", "replay", "real"] {
        let help = String::from_utf8_lossy(&cassalock(&[command, "--help"]).stdout).into_owned();
        assert!(help.contains("--renew-every-ms"), "{command} --help:\n{help}");
        assert!(!help.contains("--renew-ms"), "{command} --help:\n{help}");
    }
}
