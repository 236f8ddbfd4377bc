//! Redis's `SET NX PX` lock (`models/src/family.rs`): the verdict on every
//! claim under each fault, with the unique-state counts pinned and every report pinned whole,
//! traces included, in `golden/redis_set_nx*.txt` beside this file. After an intended change:
//! `UPDATE_EXPECT=1 cargo test -p cassalock-models --test redis_set_nx`, then review `git diff`.
//!
//! The defaults (2 clients x 1 acquisition, clock up to 4 ticks) keep every run here well under
//! a second; larger worlds go through `cassalock check --model redis-set-nx --threads 3
//! --acquisitions 2 --extend`.

mod pinning;

use cassalock::algo::family::SetNxLock;
use cassalock::algo::Input;
use cassalock::registry::Lock;
use cassalock::store::redis_keyspace::{RedisCommand, RedisReply};
use cassalock_models::check::{check, Limits, Report};
use cassalock_models::family::{Pending, Phase, RedisSetNxModel};
use cassalock_models::liveness::Graph;
use cassalock_models::{build, Fault, ModelName, Spec};
use expect_test::expect_file;
use pinning::{full, golden_text, pin, pinned, spec};

const HOLDS: &str = "holds within bound (clock <= 4 ticks)";
const VIOLATED: &str = "VIOLATED";

fn redis(fault: Fault) -> Spec {
    spec(ModelName::Lock(Lock::RedisSetNx), fault)
}

fn trace(report: &Report, claim: &str) -> String {
    report
        .row(claim)
        .trace
        .as_ref()
        .unwrap_or_else(|| panic!("{claim} has a trace:\n{report}"))
        .to_string()
}

#[test]
fn without_faults_every_claim_holds_with_or_without_extension() {
    let report = full(&redis(Fault::None));
    pinned(
        &report,
        &[
            ("T1-belief", HOLDS),
            ("T1-resource", HOLDS),
            ("C-free", HOLDS),
            ("C-release", HOLDS),
            ("T2", HOLDS),
            ("T2", HOLDS),
        ],
        3903,
    );
    pin(expect_file!["golden/redis_set_nx.txt"], &golden_text(&report));
    // A holder that extends its key (compare-and-pexpire) and uses the resource again with the
    // new lease keeps them all too.
    let mut extend = redis(Fault::None);
    extend.extend = true;
    let report = full(&extend);
    pinned(
        &report,
        &[
            ("T1-belief", HOLDS),
            ("T1-resource", HOLDS),
            ("C-free", HOLDS),
            ("C-release", HOLDS),
            ("T2", HOLDS),
            ("T2", HOLDS),
        ],
        8047,
    );
    pin(expect_file!["golden/redis_set_nx_extend.txt"], &golden_text(&report));
    // Three clients.
    let mut three = redis(Fault::None);
    three.threads = Some(3);
    let report = full(&three);
    assert!(!report.any_violation(), "{report}");
    assert_eq!(report.graph_states, 109_708, "{report}");
}

#[test]
fn a_pause_between_check_and_write_breaks_t1_resource_not_t1_belief() {
    // Kleppmann's GC pause: the paused holder's own clock runs past its lease, so it no longer
    // believes (T1-belief holds), but it already checked, and writes after the next holder did.
    let report = full(&redis(Fault::Pause));
    pinned(
        &report,
        &[
            ("T1-belief", HOLDS),
            ("T1-resource", VIOLATED),
            ("C-free", HOLDS),
            ("C-release", HOLDS),
            ("T2", HOLDS),
            ("T2", HOLDS),
        ],
        5084,
    );
    let damage = trace(&report, "T1-resource");
    assert!(
        damage.contains("t0 is PAUSED between its check and its write"),
        "{damage}"
    );
    assert!(
        damage.contains("the resource ACCEPTS t0's write (grant 0) after t1's (grant 1)"),
        "{damage}"
    );
    pin(expect_file!["golden/redis_set_nx_pause.txt"], &golden_text(&report));
}

#[test]
fn a_restart_without_persistence_breaks_t1_belief() {
    let report = full(&redis(Fault::Restart));
    pinned(
        &report,
        &[
            ("T1-belief", VIOLATED),
            ("T1-resource", VIOLATED),
            ("C-free", HOLDS),
            ("C-release", HOLDS),
            ("T2", HOLDS),
            ("T2", HOLDS),
        ],
        13852,
    );
    let two = trace(&report, "T1-belief");
    assert!(two.contains("the server RESTARTS without persistence"), "{two}");
    assert!(two.contains("believe: t0 AND t1"), "{two}");
    pin(expect_file!["golden/redis_set_nx_restart.txt"], &golden_text(&report));
}

#[test]
fn a_failover_breaks_t1_belief_and_brings_back_a_released_key() {
    let report = full(&redis(Fault::Failover));
    let bounded = "bounded (the only counterexamples reach the model's last clock tick, where time stops)";
    pinned(
        &report,
        &[
            ("T1-belief", VIOLATED),
            ("T1-resource", VIOLATED),
            ("C-free", HOLDS),
            ("C-release", VIOLATED),
            ("T2", HOLDS),
            ("T2", bounded),
        ],
        46434,
    );
    let two = trace(&report, "T1-belief");
    assert!(
        two.contains("FAILOVER: the replica is promoted; 1 acknowledged batch(es)"),
        "{two}"
    );
    assert!(two.contains("believe: t0 AND t1"), "{two}");
    // The release's delete was acknowledged and lost with the failover, while the acquiring
    // SET had reached the replica: the released key is back, taken by nobody, until its TTL.
    let back = trace(&report, "C-release");
    assert!(back.contains("unlock() returns Released"), "{back}");
    assert!(back.contains("FAILOVER"), "{back}");
    assert_eq!(
        report.figures[1].0,
        "C-release a released acquisition's key stays live for: at most 2 more ticks (reached in 10 steps)"
    );
    pin(expect_file!["golden/redis_set_nx_failover.txt"], &golden_text(&report));
}

#[test]
fn a_server_clock_jump_breaks_t1_belief() {
    let report = full(&redis(Fault::ServerClockJump));
    pinned(
        &report,
        &[
            ("T1-belief", VIOLATED),
            ("T1-resource", VIOLATED),
            ("C-free", HOLDS),
            ("C-release", HOLDS),
            ("T2", HOLDS),
            ("T2", HOLDS),
        ],
        13948,
    );
    let two = trace(&report, "T1-belief");
    assert!(two.contains("the server's clock JUMPS forward by the TTL"), "{two}");
    assert!(two.contains("believe: t0 AND t1"), "{two}");
    pin(
        expect_file!["golden/redis_set_nx_server_clock_jump.txt"],
        &golden_text(&report),
    );
}

/// Does some reachable state satisfy `wanted`?
type World = cassalock_models::family::World<SetNxLock>;

fn reachable(model: &RedisSetNxModel, wanted: impl Fn(&World) -> bool) -> bool {
    let mut found = false;
    let graph = Graph::build_with(model, &[], 1_000_000, |_, world: &World| {
        found |= wanted(world);
        found
    });
    assert!(found || !graph.truncated, "the graph was cut short");
    found
}

/// A client acquiring has its `GET` of the key answered with its own token: the acquire
/// machine checking a nil that may hide its own earlier `SET`.
fn reads_its_own_key(world: &World) -> bool {
    world.clients.iter().enumerate().any(|(i, client)| {
        matches!(
            (&client.phase, &client.pending),
            (
                Phase::Acquiring(_),
                Pending::Answer {
                    command: RedisCommand::Get { .. },
                    input: Input::Reply(RedisReply::Bulk(value)),
                    ..
                },
            ) if value.starts_with(&format!("t{i}:"))
        )
    })
}

/// A client that is giving up deletes the key it may have set (C-free's clean-up).
fn cleans_up(world: &World) -> bool {
    world.clients.iter().any(|client| {
        matches!(
            (&client.phase, &client.pending),
            (
                Phase::Acquiring(_),
                Pending::Request {
                    command: RedisCommand::DeleteIfEquals { .. },
                    ..
                }
            )
        )
    })
}

#[test]
fn lost_requests_and_replies_keep_t1_and_leave_nothing_behind() {
    // One request lost before the server sees it, or its reply after it applied; one retry.
    let report = full(&redis(Fault::StoreFailure));
    pinned(
        &report,
        &[
            ("T1-belief", HOLDS),
            ("T1-resource", HOLDS),
            ("C-free", HOLDS),
            ("C-release", HOLDS),
            ("T2", HOLDS),
            ("T2", HOLDS),
        ],
        29588,
    );
    pin(
        expect_file!["golden/redis_set_nx_store_failure.txt"],
        &golden_text(&report),
    );
    // T2 holds because the acquire machine reads the key after a nil that may hide its own SET
    // (its reply lost), instead of waiting out its own key: the check is reached.
    let once = RedisSetNxModel::new(2, 1, false, Fault::StoreFailure);
    assert!(reachable(&once, reads_its_own_key));
    assert!(!reachable(&once, cleans_up), "one failure never exhausts the retry");
    // Two failures in a row exhaust the retry: lock() gives up, deletes the key it may have
    // set, and says it left nothing (C-free, now not vacuous). A release that fails twice says
    // so, and its key blocks the others until the TTL, which only the clock's bound stops (T2
    // bounded).
    let mut twice = RedisSetNxModel::new(2, 1, false, Fault::StoreFailure);
    twice.store_failures = 2;
    let report = check(&twice, Limits::default());
    assert!(report.internal_errors.is_empty(), "{report}");
    let bounded = "bounded (the only counterexamples reach the model's last clock tick, where time stops)";
    pinned(
        &report,
        &[
            ("T1-belief", HOLDS),
            ("T1-resource", HOLDS),
            ("C-free", HOLDS),
            ("C-release", HOLDS),
            ("T2", HOLDS),
            ("T2", bounded),
        ],
        100_356,
    );
    assert!(
        report.figures[0].0.starts_with(
            "C-free lock() calls that gave up (the store kept failing): at most 1 call(s) (reached in 7 steps)"
        ),
        "{}",
        report.figures[0].0
    );
    assert!(reachable(&twice, cleans_up));
    pin(
        expect_file!["golden/redis_set_nx_store_failure_twice.txt"],
        &golden_text(&report),
    );
}

#[test]
fn faults_and_flags_are_refused_where_they_do_not_apply() {
    let refused = |spec: &Spec| build(spec).err().expect("refused").0;
    // A Redis server's faults are not the Cassandra models'.
    for model in [
        ModelName::Lock(Lock::Queue),
        ModelName::Lock(Lock::QueueTry),
        ModelName::Lock(Lock::Old),
    ] {
        for fault in [Fault::Restart, Fault::Failover, Fault::ServerClockJump] {
            let message = refused(&spec(model, fault));
            assert!(message.contains("is a fault of a Redis server"), "{message}");
        }
    }
    assert!(refused(&spec(ModelName::Lock(Lock::GlobalTime), Fault::Failover))
        .contains("supports --fault none, skew or crash"));
    assert!(refused(&spec(ModelName::Lemma, Fault::Restart)).contains("no fault knobs"));
    // The Cassandra models' faults and flags are not redis-set-nx's.
    for fault in [Fault::Skew, Fault::TtlSkew, Fault::DelayedEnqueue, Fault::Crash] {
        let message = refused(&redis(fault));
        assert!(
            message.contains("redis-set-nx model supports --fault none, pause"),
            "{message}"
        );
    }
    let mut fencing = redis(Fault::None);
    fencing.fencing = true;
    assert!(refused(&fencing).contains("not to redis-set-nx"));
    let mut extend = spec(ModelName::Lock(Lock::Queue), Fault::None);
    extend.extend = true;
    assert!(refused(&extend)
        .contains("--extend applies to the redis-set-nx, redis-setnx-expire, redlock and memcached models"));
    let mut four = redis(Fault::None);
    four.threads = Some(4);
    assert!(refused(&four).contains("outside 1..=3"));
}
