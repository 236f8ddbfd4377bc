//! Shipped lock libraries, driven as black boxes by their client programs (`clients/`, the
//! client protocol of docs/client-protocol.md) against real local servers, a holder stopped
//! past its lease. What each library does there is known (measured by hand before these
//! programs existed) and pinned here: two holders by belief in every one; a stale write that
//! reaches the resource where the library's token orders nothing (redis-py), refused where it
//! fences (kazoo's czxid); what the library tells the paused holder at release.
//!
//! ```sh
//! clients/setup all                                      # target/clients/{python,java}
//! cluster/cassalock-servers start redis --instances 1    # 127.0.0.1:16380
//! cluster/cassalock-servers start zookeeper --nodes 1    # 127.0.0.1:22181 (or 3 nodes)
//! RUSTFLAGS="" CARGO_TARGET_DIR=target/real cargo test --release -p cassalock-cli --test real_clients -- --include-ignored
//! ```
//!
//! `#[ignore]`d like the other real-server tests: asked for, a test fails, saying what to start
//! or build, when its server or client is missing. One test restarts redis1: run them one at a
//! time (`--test-threads 1`), as `.ci/run` does.
#![cfg(not(madsim))]

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
const PYTHON: &str = "target/clients/python/bin/python";
const REDISSON: &str = "target/clients/java/redisson-locks";
const CURATOR: &str = "target/clients/java/curator-mutex";
const REDSYNC: &str = "target/clients/go/redsync";
const ETCD_MUTEX: &str = "target/clients/go/etcdmutex";
const ETCD_34: &str = "target/clients/go/etcd34";

/// Fails the test, saying what to start or build, unless `address` answers and `program` is
/// built.
fn require(test: &str, address: &str, start: &str, program: &str) {
    let socket: SocketAddr = address.parse().expect("address");
    assert!(
        TcpStream::connect_timeout(&socket, Duration::from_secs(2)).is_ok(),
        "{test}: nothing answers on {address}: start it with cluster/cassalock-servers {start}"
    );
    assert!(
        Path::new(ROOT).join(program).exists(),
        "{test}: no {program}: build the client programs with clients/setup all"
    );
}

/// The longest wait the run printed ("wait p50 / p99 / max    a / b / c ms"), milliseconds.
fn max_wait_ms(out: &str) -> f64 {
    let line = out
        .lines()
        .find(|line| line.contains("wait p50 / p99 / max"))
        .expect("a wait line");
    let figures = line
        .rsplit("max")
        .next()
        .expect("figures")
        .trim()
        .trim_end_matches(" ms");
    figures
        .rsplit(" / ")
        .next()
        .expect("max")
        .trim()
        .parse()
        .expect("a number")
}

/// "N of M readings left out a believer" in a T1-server line: (N, M).
fn readings_left_out(line: &str) -> Option<(u64, u64)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let of = words.iter().position(|word| *word == "of")?;
    let left_out = words.get(of.checked_sub(1)?)?.parse().ok()?;
    let readings = words.get(of + 1)?.parse().ok()?;
    Some((left_out, readings))
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
    require("redis-py", "127.0.0.1:16380", "start redis --instances 1", PYTHON);
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
    require("redis-py", "127.0.0.1:16380", "start redis --instances 1", PYTHON);
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
            "--read-server-as",
            "redis-set-nx",
            "--servers",
            "127.0.0.1:16380",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("T1-belief    ok       40 acquisitions, never two believers"),
        "{out}"
    );
    assert!(out.contains("told at release         40 released"), "{out}");
    // cassalock's own readings of the key name each holder by redis-py's token.
    assert!(
        out.contains("servers read            80 times as redis-set-nx reads 127.0.0.1:16380"),
        "{out}"
    );
    assert!(
        out.contains("T1-server    ok       every believer named by the server, at 80 readings"),
        "{out}"
    );
}

/// One client alone, paused past its lease: nobody else acquires, so T1-belief has no second
/// believer to see, but the reading before its release finds the key gone while it believes.
#[test]
#[ignore = "needs Redis (cluster/cassalock-servers start redis) and clients/setup python; run with -- --include-ignored"]
fn t1_server_redis_py_paused_alone_past_its_lease_is_seen_only_by_reading_the_server() {
    require("redis-py", "127.0.0.1:16380", "start redis --instances 1", PYTHON);
    let command = format!("{PYTHON} clients/python/redis_py_lock.py --server 127.0.0.1:16380");
    let mut args = vec![
        "--threads",
        "1",
        "--acquisitions",
        "3",
        "--lease-ms",
        "1000",
        "--pause-holder-ms",
        "2000",
        "--pause-at",
        "2",
    ];
    let (code, out, err) = run(&command, &args);
    assert_eq!(code, 0, "without a reading nothing is seen: {out}{err}");
    assert!(out.contains("T1-belief    ok"), "{out}");
    assert!(!out.contains("T1-server"), "{out}");
    args.extend(["--read-server-as", "redis-set-nx", "--servers", "127.0.0.1:16380"]);
    let (code, out, err) = run(&command, &args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("T1-belief    ok"), "{out}");
    assert!(
        out.contains("T1-server    FAILED   1 of 6 readings left out a believer; first: c0-2 believed"),
        "{out}"
    );
    assert!(out.contains("while the server named nobody"), "{out}");
}

#[test]
#[ignore = "needs ZooKeeper (cluster/cassalock-servers start zookeeper) and clients/setup python; run with -- --include-ignored"]
fn kazoo_lock_paused_past_its_session_gives_two_holders_and_its_czxid_fences() {
    require("kazoo", "127.0.0.1:22181", "start zookeeper --nodes 1", PYTHON);
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
            "--read-server-as",
            "zookeeper",
            "--servers",
            "127.0.0.1:22181",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("kazoo 2.11.0 Lock x 3 clients: 9 acquisitions"), "{out}");
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    // cassalock's readings of /locks/NAME name the new holder while the paused one believes.
    assert!(out.contains("servers read            18 times as zookeeper"), "{out}");
    assert!(out.contains("T1-server    FAILED"), "{out}");
    assert!(out.contains("of 18 readings left out a believer"), "{out}");
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
    require("server down", "127.0.0.1:16380", "start redis --instances 1", PYTHON);
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

#[test]
#[ignore = "needs Redis (cluster/cassalock-servers start redis) and clients/setup java; run with -- --include-ignored"]
fn redisson_rlock_paused_past_its_lease_gives_two_holders_and_an_exception_at_unlock() {
    require(
        "Redisson RLock",
        "127.0.0.1:16380",
        "start redis --instances 1",
        REDISSON,
    );
    let (code, out, err) = run(
        &format!("{REDISSON} --server 127.0.0.1:16380 --kind rlock"),
        &[
            "--threads",
            "3",
            "--acquisitions",
            "3",
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
        out.contains("Redisson 4.3.1 RLock x 3 clients: 9 acquisitions"),
        "{out}"
    );
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    assert!(out.contains("T1-resource  FAILED   1 stale write accepted"), "{out}");
    assert!(
        out.contains("1 not held (IllegalMonitorStateException: attempt to unlock lock"),
        "{out}"
    );
}

/// Redisson 4.3.1's `RFencedLock.lockAndGetToken(leaseTime, unit)` drops its lease (it calls
/// the lease-less `lockAndGetTokenAsync()`): the lock is kept by the watchdog instead, so a
/// holder stopped past the lease it asked for keeps the others waiting the whole pause, while
/// `tryLockAndGetToken(wait, lease, unit)` honours the same lease. When a Redisson version
/// fixes it, the first half of this test fails: pin the new behaviour then.
#[test]
#[ignore = "needs Redis (cluster/cassalock-servers start redis) and clients/setup java; run with -- --include-ignored"]
fn redisson_fenced_lock_and_get_token_ignores_its_lease_where_try_lock_keeps_it() {
    require(
        "Redisson RFencedLock",
        "127.0.0.1:16380",
        "start redis --instances 1",
        REDISSON,
    );
    let fenced = format!("{REDISSON} --server 127.0.0.1:16380 --kind fenced");
    let paused = [
        "--threads",
        "3",
        "--acquisitions",
        "2",
        "--hold-ms",
        "20",
        "--lease-ms",
        "1000",
        "--pause-holder-ms",
        "3000",
        "--pause-at",
        "2",
    ];
    let mut read = paused.to_vec();
    read.extend(["--read-server-as", "redisson-fenced", "--servers", "127.0.0.1:16380"]);
    let (code, out, err) = run(&fenced, &read);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("T1-belief    ok"), "{out}");
    // The counter names each holder by the token the library gave it (`7`, not `000...7`).
    assert!(
        out.contains("T1-server    ok       every believer named by the server, at 12 readings"),
        "{out}"
    );
    assert!(
        max_wait_ms(&out) >= 2500.0,
        "the others waited out the pause, not the lease: {out}"
    );
    let mut try_lock = paused.to_vec();
    try_lock.extend(["--call", "try-lock", "--try-wait-ms", "20000"]);
    let (code, out, err) = run(&fenced, &try_lock);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    assert!(
        out.contains("T1-resource  ok       0 stale writes accepted, 1 refused by fencing"),
        "{out}"
    );
}

#[test]
#[ignore = "needs ZooKeeper (cluster/cassalock-servers start zookeeper) and clients/setup java; run with -- --include-ignored"]
fn curator_mutex_paused_past_its_session_is_fenced_by_czxid_and_releases_quietly() {
    require("Curator", "127.0.0.1:22181", "start zookeeper --nodes 1", CURATOR);
    let (code, out, err) = run(
        &format!("{CURATOR} --servers 127.0.0.1:22181 --session-ms 2000"),
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
    assert!(
        out.contains("Curator 5.9.0 InterProcessMutex x 3 clients: 9 acquisitions"),
        "{out}"
    );
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    assert!(
        out.contains("T1-resource  ok       0 stale writes accepted, 1 refused by fencing"),
        "{out}"
    );
    // Only a connection-state listener says LOST; release returns normally.
    assert!(out.contains("told it lost the lock   1 time"), "{out}");
    assert!(out.contains("told at release         9 released"), "{out}");
}

/// Cut off rather than stopped, the holder's process runs on: Curator's connection-state
/// listener says LOST while the cut lasts, before the holder's write (after the cut heals) is
/// refused by the czxid fence; stopped, the holder heard nothing until it was continued.
#[test]
#[ignore = "needs ZooKeeper (cluster/cassalock-servers start zookeeper) and clients/setup java; run with -- --include-ignored"]
fn curator_mutex_cut_off_past_its_session_hears_lost_before_its_write_is_refused() {
    require("Curator", "127.0.0.1:22181", "start zookeeper --nodes 1", CURATOR);
    let (code, out, err) = run(
        &format!("{CURATOR} --servers 127.0.0.1:22181 --session-ms 2000"),
        &[
            "--threads",
            "3",
            "--acquisitions",
            "3",
            "--hold-ms",
            "20",
            "--cut-off-holder-ms",
            "6000",
            "--pause-at",
            "2",
            "--proxy",
            "127.0.0.1:22181",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("the holder of acquisition 2 cut off from its servers for 6000 ms, then healed"),
        "{out}"
    );
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    assert!(
        out.contains("T1-resource  ok       0 stale writes accepted, 1 refused by fencing"),
        "{out}"
    );
    let lost_holder = out
        .lines()
        .find(|line| line.trim_start().starts_with("lost holder"))
        .unwrap_or_else(|| panic!("no lost holder line: {out}"));
    assert!(
        lost_holder.contains(": lost notice (the connection state is LOST)")
            && lost_holder.contains("then its write refused by fencing"),
        "{lost_holder}"
    );
}

#[test]
#[ignore = "needs Redis (cluster/cassalock-servers start redis) and clients/setup java; run with -- --include-ignored"]
fn redisson_fair_lock_paused_past_its_lease_gives_two_holders_and_tells_nothing() {
    require(
        "Redisson fair lock",
        "127.0.0.1:16380",
        "start redis --instances 1",
        REDISSON,
    );
    let (code, out, err) = run(
        &format!("{REDISSON} --server 127.0.0.1:16380 --kind fair"),
        &[
            "--threads",
            "3",
            "--acquisitions",
            "3",
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
        out.contains("Redisson 4.3.1 fair lock x 3 clients: 9 acquisitions"),
        "{out}"
    );
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    // The lock is free again when the paused holder releases: its unlock returns normally.
    assert!(out.contains("told at release         9 released"), "{out}");
    assert!(out.contains("told it lost the lock   0 times"), "{out}");
}

/// go-redsync says how long the lock is good for (`Until()`): the paused holder's belief ends
/// there, before the others acquire, so no two beliefs overlap; but its write, made after its
/// validity without looking at it, reaches the resource after the next holder's.
#[test]
#[ignore = "needs 3 Redis masters (cluster/cassalock-servers start redis --instances 3) and clients/setup go; run with -- --include-ignored"]
fn redsync_over_three_masters_keeps_beliefs_apart_by_its_validity_but_a_late_write_lands() {
    require("go-redsync", "127.0.0.1:16382", "start redis --instances 3", REDSYNC);
    let (code, out, err) = run(
        &format!("{REDSYNC} -servers 127.0.0.1:16380,127.0.0.1:16381,127.0.0.1:16382"),
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
        out.contains("go-redsync v4.18.1 Mutex (Redlock) x 3 clients: 12 acquisitions"),
        "{out}"
    );
    assert!(out.contains("T1-belief    ok"), "{out}");
    assert!(out.contains("T1-resource  FAILED   1 stale write accepted"), "{out}");
    assert!(
        out.contains("1 not held (*errors.joinError: redsync: failed to unlock, lock was already expired"),
        "{out}"
    );
}

#[test]
#[ignore = "needs etcd (cluster/cassalock-servers start etcd) and clients/setup go; run with -- --include-ignored"]
fn etcd_mutex_paused_past_its_session_is_fenced_by_its_revision() {
    require("etcd Mutex", "127.0.0.1:23781", "start etcd --nodes 3", ETCD_MUTEX);
    let (code, out, err) = run(
        &format!("{ETCD_MUTEX} -endpoints 127.0.0.1:23781 -ttl-s 2"),
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
            "--read-server-as",
            "etcd",
            "--servers",
            "127.0.0.1:23781",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("etcd client v3.7.3 concurrency.Mutex x 3 clients"),
        "{out}"
    );
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    // The shim's token is its key's create revision, so our rule names the holders before and
    // after the pause, and the paused one, still believing, disagrees with the server.
    let t1_server = out.lines().find(|line| line.contains("T1-server")).unwrap_or_default();
    assert!(t1_server.contains("FAILED"), "{out}");
    let (left_out, readings) = readings_left_out(t1_server).unwrap_or_else(|| panic!("{out}"));
    assert!(0 < left_out && left_out < readings, "some readings agree: {out}");
    assert!(
        out.contains("T1-resource  ok       0 stale writes accepted, 1 refused by fencing"),
        "{out}"
    );
    // The session's end is the notice; Unlock returns nil regardless.
    assert!(out.contains("told it lost the lock   1 time"), "{out}");
    assert!(!out.contains("not held"), "{out}");
}

/// Most runs a test gives a client whose bug is a race before it says the bug was not found.
const RUNS_FOR_A_RACE: usize = 4;

/// A known bug of a shipped version, found in it and not after: etcd's 3.4 Go client returns
/// from `Mutex.Lock` with the lock after a wait during which its own session expired and its
/// key was deleted, so it holds beside the client that took the lock fairly. The current
/// client checks its key after the wait and says `ErrSessionExpired`. A waiter is stopped past
/// its session while another holds; the same run, the two clients.
#[test]
#[ignore = "needs etcd (cluster/cassalock-servers start etcd) and clients/setup go; run with -- --include-ignored"]
fn etcd_3_4_client_grants_the_lock_to_a_waiter_whose_session_expired_and_the_current_one_does_not() {
    require("etcd 3.4 Mutex", "127.0.0.1:23781", "start etcd --nodes 3", ETCD_34);
    // Holds of 300 ms: the resumed waiter's Lock returns a few ms after the fair holder's, and
    // with 20 ms holds the two did not meet in 2 runs of 6 on a 3-member cluster.
    let paused_waiter = [
        "--threads",
        "3",
        "--acquisitions",
        "2",
        "--hold-ms",
        "300",
        "--pause-waiter-ms",
        "6000",
        "--pause-at",
        "1",
        "--read-server-as",
        "etcd",
        "--servers",
        "127.0.0.1:23781",
    ];
    // The bug is a race: the resumed waiter's Lock must return while the fair holder holds.
    // One run of the CI's missed it (the waiter said lost and gave up instead), so the buggy
    // client gets a few runs and must show two holders in one of them.
    let mut missed = Vec::new();
    let out = loop {
        let (code, out, err) = run(
            &format!("{ETCD_34} -endpoints 127.0.0.1:23781 -ttl-s 2"),
            &paused_waiter,
        );
        assert!(out.contains("etcd client 3.4.13"), "{out}{err}");
        assert!(
            out.contains("a client waiting at acquisition 1 stopped (SIGSTOP) for 6000 ms"),
            "{out}"
        );
        if code == 1 && out.contains("T1-belief    FAILED") {
            eprintln!(
                "etcd 3.4 client: two holders in run {} of at most {RUNS_FOR_A_RACE}",
                missed.len() + 1
            );
            break out;
        }
        assert!(
            out.lines()
                .all(|line| !line.contains("FAILED") || line.contains("T1-server")),
            "only T1-belief and T1-server may fail: {out}{err}"
        );
        missed.push(out);
        assert!(
            missed.len() < RUNS_FOR_A_RACE,
            "the 3.4 client's race did not show in {RUNS_FOR_A_RACE} runs:\n{}",
            missed.join("\n")
        );
    };
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    // Its key was gone when Lock returned: the holder believes, the server names another.
    assert!(out.contains("T1-server    FAILED"), "{out}");
    let (code, out, err) = run(
        &format!("{ETCD_MUTEX} -endpoints 127.0.0.1:23781 -ttl-s 2"),
        &paused_waiter,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("etcd client v3.7.3"), "{out}");
    assert!(
        out.contains("a client waiting at acquisition 1 stopped (SIGSTOP) for 6000 ms"),
        "{out}"
    );
    assert!(out.contains("T1-belief    ok"), "{out}");
    assert!(out.contains("T1-server    ok"), "{out}");
}

/// A server fault by command: the one Redis restarted without persistence while a client
/// holds, its key gone; a waiter comes in while the holder still holds (holds of 300 ms: redis-py
/// polls every 100 ms). Our model of `SET NX` finds the same (reports/matrix.md).
#[test]
#[ignore = "needs Redis (cluster/cassalock-servers start redis, no persistence) and clients/setup python; restarts redis1; run with -- --include-ignored --test-threads 1"]
fn redis_py_lock_with_its_server_restarted_without_persistence_gives_two_holders() {
    require(
        "redis-py, restart",
        "127.0.0.1:16380",
        "start redis --instances 1",
        PYTHON,
    );
    let (code, out, err) = run(
        &format!("{PYTHON} clients/python/redis_py_lock.py --server 127.0.0.1:16380"),
        &[
            "--threads",
            "3",
            "--acquisitions",
            "3",
            "--hold-ms",
            "300",
            "--lease-ms",
            "5000",
            "--server-fault",
            "cluster/cassalock-servers restart redis1",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("server fault            `cluster/cassalock-servers restart redis1` at acquisition 2"),
        "{out}"
    );
    assert!(out.contains("T1-belief    FAILED"), "{out}");
}

/// `cluster/cassalock-servers ARGS...` from the repository's root; its output on failure.
fn servers(args: &[&str]) {
    let output = Command::new("cluster/cassalock-servers")
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("cassalock-servers runs");
    assert!(
        output.status.success(),
        "cassalock-servers {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A Redisson RLock run on the replicated pair (primary repl1, 127.0.0.1:16390), its address
/// moved to the replica once `fault` (and `undo`, after 4 s) has run; then the pair put back as
/// it was (repl1 the primary, repl2 its replica).
fn redisson_across_a_failover(fault: &str, undo: Option<&str>) -> (i32, String, String) {
    require(
        "Redisson, failover",
        "127.0.0.1:16391",
        "start redis-replicated",
        REDISSON,
    );
    let mut args = vec![
        "--threads",
        "3",
        "--acquisitions",
        "3",
        "--hold-ms",
        "1000",
        "--proxy",
        "127.0.0.1:16390",
        "--server-fault",
        fault,
        "--move-address",
        "127.0.0.1:16390=127.0.0.1:16391",
    ];
    if let Some(undo) = undo {
        args.extend(["--server-fault-undo", undo, "--server-fault-ms", "4000"]);
    }
    let outcome = run(
        &format!("{REDISSON} --server 127.0.0.1:16390 --kind rlock --watchdog-ms 2000"),
        &args,
    );
    // Back as the other tests expect the pair: repl1 primary again.
    servers(&["restart", "repl1"]);
    servers(&["failover"]);
    servers(&["restart", "repl2"]);
    outcome
}

/// A failover to a replica that lagged behind the watchdog's renewals: on the promoted replica
/// the lock's key has expired, a waiter takes it while its holder holds on, and Redisson tells
/// the holder only at unlock. The same failover with the replica in step keeps one holder: the
/// loss is the lag's, not the failover's.
#[test]
#[ignore = "needs the replicated Redis pair (cluster/cassalock-servers start redis-replicated) and clients/setup java; fails over the pair and puts it back; run with -- --include-ignored --test-threads 1"]
fn redisson_rlock_across_a_failover_to_a_lagging_replica_gives_two_holders() {
    // Two holders need a waiter to ask inside the window the lost key leaves, which a run on
    // wall-clock time does not always give (8 of 14 runs here in one day missed it): the claim is that
    // this fault can give two holders, so the test asks for it in one of at most 3 runs.
    const MOST_RUNS: usize = 3;
    let mut missed = Vec::new();
    let (code, out, err) = loop {
        let (code, out, err) = redisson_across_a_failover(
            "cluster/cassalock-servers lag-replica",
            Some("cluster/cassalock-servers failover"),
        );
        if code == 1 || missed.len() + 1 == MOST_RUNS {
            break (code, out, err);
        }
        missed.push(out);
    };
    assert_eq!(
        code, 1,
        "no two holders in {MOST_RUNS} runs; the last: {out}{err}; the others: {missed:?}"
    );
    eprintln!("two holders in run {} of at most {MOST_RUNS}", missed.len() + 1);
    assert!(
        out.contains(
            "undone 4000 ms later by `cluster/cassalock-servers failover`; then moved 127.0.0.1:16390=127.0.0.1:16391"
        ),
        "{out}"
    );
    assert!(out.contains("T1-belief    FAILED"), "{out}");
    assert!(
        out.contains("IllegalMonitorStateException: attempt to unlock lock, not locked by current thread"),
        "{out}"
    );

    let (code, out, err) = redisson_across_a_failover("sleep 4 && cluster/cassalock-servers failover", None);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("then moved 127.0.0.1:16390=127.0.0.1:16391"), "{out}");
    assert!(out.contains("T1-belief    ok"), "{out}");
}
