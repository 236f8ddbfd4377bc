//! Shipped lock libraries, driven as black boxes by their client programs (`clients/`, the
//! client protocol of docs/client-protocol.md) against real local servers, a holder stopped
//! past its lease. What each library does there is known (measured by hand before these
//! programs existed) and pinned here: two holders by belief in every one; a stale write that
//! reaches the resource where the library's token orders nothing (redis-py), refused where it
//! fences (kazoo's czxid); what the library tells the paused holder at release.
//!
//! ```sh
//! clients/setup python                                   # target/clients/python
//! cluster/cassalock-servers start redis --instances 1    # 127.0.0.1:16380
//! cluster/cassalock-servers start zookeeper --nodes 1    # 127.0.0.1:22181 (or 3 nodes)
//! RUSTFLAGS="" CARGO_TARGET_DIR=target/real cargo test --release -p cassalock-cli --test real_clients -- --include-ignored
//! ```
//!
//! `#[ignore]`d like the other real-server tests: asked for, a test fails, saying what to start
//! or build, when its server or client is missing.
#![cfg(not(madsim))]

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
const PYTHON: &str = "target/clients/python/bin/python";

fn require(test: &str, address: &str, start: &str) {
    let socket: SocketAddr = address.parse().expect("address");
    assert!(
        TcpStream::connect_timeout(&socket, Duration::from_secs(2)).is_ok(),
        "{test}: nothing answers on {address}: start it with cluster/cassalock-servers {start}"
    );
    assert!(
        Path::new(ROOT).join(PYTHON).exists(),
        "{test}: no {PYTHON}: build the Python clients with clients/setup python"
    );
}

/// `cassalock real --client COMMAND ARGS...`: exit status, stdout, stderr.
fn run(command: &str, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .arg("real")
        .arg("--client")
        .arg(command)
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("cassalock runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
#[ignore = "needs Redis (cluster/cassalock-servers start redis) and clients/setup python; run with -- --include-ignored"]
fn redis_py_lock_paused_past_its_lease_gives_two_holders_and_a_stale_write() {
    require("redis-py", "127.0.0.1:16380", "start redis --instances 1");
    let (code, out, err) = run(
        &format!("{PYTHON} clients/python/redis_py_lock.py --server 127.0.0.1:16380"),
        &[
            "--threads",
            "3",
            "--acquisitions",
            "4",
            "--hold-ms",
            "20",
            "--lease-ms",
            "1000",
            "--pause-holder-ms",
            "3000",
            "--pause-at",
            "2",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("redis-py 8.1.0 Lock x 3 clients: 12 acquisitions"),
        "{out}"
    );
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    assert!(out.contains("T1-resource  FAILED   1 stale write accepted"), "{out}");
    // The paused holder learns only at release, from an exception.
    assert!(
        out.contains("1 not held (LockNotOwnedError: Cannot release a lock that's no longer owned)"),
        "{out}"
    );
}

#[test]
#[ignore = "needs Redis (cluster/cassalock-servers start redis) and clients/setup python; run with -- --include-ignored"]
fn redis_py_lock_without_faults_keeps_one_holder() {
    require("redis-py", "127.0.0.1:16380", "start redis --instances 1");
    let (code, out, err) = run(
        &format!("{PYTHON} clients/python/redis_py_lock.py --server 127.0.0.1:16380"),
        &[
            "--threads",
            "4",
            "--acquisitions",
            "10",
            "--hold-ms",
            "5",
            "--lease-ms",
            "5000",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("T1-belief    ok       40 acquisitions, never two believers"),
        "{out}"
    );
    assert!(out.contains("told at release         40 released"), "{out}");
}

#[test]
#[ignore = "needs ZooKeeper (cluster/cassalock-servers start zookeeper) and clients/setup python; run with -- --include-ignored"]
fn kazoo_lock_paused_past_its_session_gives_two_holders_and_its_czxid_fences() {
    require("kazoo", "127.0.0.1:22181", "start zookeeper --nodes 1");
    let (code, out, err) = run(
        &format!("{PYTHON} clients/python/kazoo_lock.py --servers 127.0.0.1:22181 --session-ms 2000"),
        &[
            "--threads",
            "3",
            "--acquisitions",
            "3",
            "--hold-ms",
            "20",
            "--pause-holder-ms",
            "6000",
            "--pause-at",
            "2",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("kazoo 2.11.0 Lock x 3 clients: 9 acquisitions"), "{out}");
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    assert!(
        out.contains("T1-resource  ok       0 stale writes accepted, 1 refused by fencing"),
        "{out}"
    );
    // kazoo says the session was lost (a listener), and its release returns True regardless.
    assert!(out.contains("told it lost the lock   1 time"), "{out}");
    assert!(out.contains("told at release         9 released"), "{out}");
}

#[test]
#[ignore = "needs clients/setup python; run with -- --include-ignored"]
fn a_client_whose_server_is_down_exits_4_saying_what_to_start() {
    require("server down", "127.0.0.1:16380", "start redis --instances 1");
    // Nothing listens on this port (the instances use 16380-16384).
    let (code, out, err) = run(
        &format!("{PYTHON} clients/python/redis_py_lock.py --server 127.0.0.1:16399"),
        &["--threads", "2", "--acquisitions", "1"],
    );
    assert_eq!(code, 4, "{out}{err}");
    assert!(
        err.contains("exited (exit status: 1) while cassalock waited for its hello"),
        "{err}"
    );
    assert!(err.contains("Connection refused"), "{err}");
    assert!(err.contains("is its server running"), "{err}");
}
