//! ZooKeeper (Curator's `InterProcessMutex`) and etcd's mutex in the family simulator: the
//! library's `FamilyLocker` against simulated ZooKeeper and etcd servers that judge
//! sessions and leases on their own clocks and send fired watches over the network. Pins what
//! the sweeps found (docs/simulator.md): the controls show no violation, each fault
//! scenario violates its claim on a pinned seed, etcd 11456's mutant is caught where the fixed
//! waiter passes, the tokens fence (C-token), and a handover costs a constant number of
//! requests whatever the number of waiters.
#![cfg(madsim)]

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use cassalock::driver::family::FamilyEvent;
use cassalock_sim::family::scenario::build;
use cassalock_sim::family::{check_family_determinism, run_family, Claim, FamilyWhat, Verdict};

/// Per claim, the seeds that violated it, and the seeds a run's bound stopped.
fn sweep(name: &str, seeds: Range<u64>) -> (BTreeMap<Claim, Vec<u64>>, Vec<u64>) {
    let mut violated: BTreeMap<Claim, Vec<u64>> = BTreeMap::new();
    let mut bounded = Vec::new();
    for seed in seeds {
        let outcome = run_family(&build(name, seed).unwrap(), seed, false);
        for (claim, verdict) in &outcome.verdicts.claims {
            match verdict {
                Verdict::Violated(_) => violated.entry(*claim).or_default().push(seed),
                Verdict::Bounded(_) => bounded.push(seed),
                Verdict::NoViolation | Verdict::NotChecked => {}
            }
        }
    }
    (violated, bounded)
}

fn assert_clean(name: &str, seeds: Range<u64>) {
    let (violated, bounded) = sweep(name, seeds.clone());
    assert!(violated.is_empty(), "{name} {seeds:?}: {violated:?}");
    assert!(bounded.is_empty(), "{name} {seeds:?}: bounded {bounded:?}");
}

/// `name` on `seed` violates exactly `claims` (and T1-server with T1-belief: a server names one
/// holder at most); nothing else is violated or bounded.
fn assert_violates(name: &str, seed: u64, claims: &[Claim]) {
    let scenario = build(name, seed).unwrap();
    assert_eq!(scenario.expect_violated, Some(claims[0].name()), "{name}");
    let outcome = run_family(&scenario, seed, false);
    let with_belief = claims.contains(&Claim::T1Belief);
    for (claim, verdict) in &outcome.verdicts.claims {
        if claims.contains(claim) || (with_belief && *claim == Claim::T1Server) {
            assert!(
                verdict.is_violated(),
                "{name} seed {seed}: {} is {verdict}",
                claim.name()
            );
        } else {
            assert!(
                !verdict.is_violated() && !matches!(verdict, Verdict::Bounded(_)),
                "{name} seed {seed}: {} is {verdict}",
                claim.name()
            );
        }
    }
}

#[test]
fn c_token_zookeeper_and_etcd_controls_show_no_violation_and_their_tokens_grow() {
    for name in [
        "zookeeper-contention",
        "zookeeper-lost-messages",
        "zookeeper-server-restart",
        "zookeeper-missed-watch-recheck",
        "etcd-contention",
        "etcd-lost-messages",
        "etcd-server-restart",
    ] {
        assert_clean(name, 0..40);
        // C-token is judged (not "not checked") for both: their tokens are czxid and revision.
        let outcome = run_family(&build(name, 1).unwrap(), 1, false);
        assert_eq!(outcome.verdicts.get(Claim::CToken), &Verdict::NoViolation, "{name}");
    }
}

#[test]
fn t1_belief_a_session_that_expires_under_a_paused_holder_gives_its_lock_to_the_waiter() {
    assert_violates("zookeeper-session-expiry-pause", 0, &[Claim::T1Belief]);
    let (violated, _) = sweep("zookeeper-session-expiry-pause", 0..50);
    assert_eq!(violated[&Claim::T1Belief].len(), 50);
    // The paused holder's late write reached the resource after the waiter's, and the czxid
    // fenced it: T1-resource is judged against a resource that refuses the smaller token.
    let outcome = run_family(&build("zookeeper-session-expiry-pause", 0).unwrap(), 0, false);
    let writes: Vec<u64> = outcome
        .records
        .iter()
        .filter_map(|record| match &record.what {
            FamilyWhat::Write { acquisition, .. } => *acquisition,
            _ => None,
        })
        .collect();
    assert_eq!(
        writes,
        [1, 0],
        "the waiter (#1) wrote first, the paused holder (#0) after"
    );
}

#[test]
fn t1_belief_a_server_clock_jump_expires_the_holder_s_session_or_lease() {
    assert_violates("zookeeper-clock-jump", 0, &[Claim::T1Belief]);
    assert_violates("etcd-clock-jump", 0, &[Claim::T1Belief]);
}

#[test]
fn t1_resource_etcd_s_revision_fences_the_write_of_a_holder_paused_past_its_lease() {
    assert_clean("etcd-pause", 0..40);
    let outcome = run_family(&build("etcd-pause", 0).unwrap(), 0, false);
    let writes: Vec<u64> = outcome
        .records
        .iter()
        .filter_map(|record| match &record.what {
            FamilyWhat::Write { acquisition, .. } => *acquisition,
            _ => None,
        })
        .collect();
    assert_eq!(writes, [1, 0], "the late write came, and a fenced resource refused it");
}

/// etcd-io/etcd#11456: a waiter whose lease expired while it waited is woken by its
/// predecessor's deletion. The fixed waiter reads its own key, finds it gone and does not
/// believe; the mutant believes beside the client that found the lock free, and its token
/// (its key's old revision) is below that client's: the tokens stop growing.
#[test]
fn etcd_11456_a_waiter_whose_lease_expired_is_caught_where_the_fixed_waiter_passes() {
    assert_clean("etcd-lease-expires-while-waiting", 0..100);
    assert_violates(
        "etcd-lease-expires-while-waiting-11456",
        0,
        &[Claim::T1Belief, Claim::CToken],
    );
    let (violated, _) = sweep("etcd-lease-expires-while-waiting-11456", 0..100);
    assert_eq!(violated[&Claim::T1Belief].len(), 100);
    assert_eq!(violated[&Claim::CToken].len(), 100);
}

/// etcd-io/etcd#10756: goroutines locking through one shared session write the same key, and
/// each reads it as its own place at the head: two holders with one token, in every seed,
/// where a session per acquisition (etcd-contention) shows none.
#[test]
fn etcd_10756_acquisitions_sharing_one_session_both_hold_where_a_session_each_does_not() {
    assert_clean("etcd-contention", 0..50);
    assert_violates("etcd-shared-session-10756", 0, &[Claim::T1Belief, Claim::CToken]);
    let (violated, _) = sweep("etcd-shared-session-10756", 0..100);
    assert_eq!(violated[&Claim::T1Belief].len(), 100);
    assert_eq!(violated[&Claim::CToken].len(), 100);
}

/// CURATOR-604: the server refuses an expired session at once and deletes its node 3 s later.
/// Our waiter, told SESSIONEXPIRED, ends its acquisition and queues again; the mutant lists
/// again on its new session, holds the old node once the holder releases, and the next waiter
/// holds too when the close deletes that node: two holders in every seed, where ours shows
/// none. Both acquisitions believe from about 5.2 s (the close) to about 8 s (the mutant's
/// release).
#[test]
fn curator_604_an_acquisition_kept_across_a_new_session_holds_a_node_about_to_vanish() {
    assert_clean("zookeeper-expired-session-lingers", 0..100);
    assert_violates("zookeeper-expired-session-lingers-604", 0, &[Claim::T1Belief]);
    let (violated, _) = sweep("zookeeper-expired-session-lingers-604", 0..100);
    assert_eq!(violated[&Claim::T1Belief].len(), 100);
    // The control's waiter was told: its first acquisition failed, on SESSIONEXPIRED.
    let outcome = run_family(&build("zookeeper-expired-session-lingers", 0).unwrap(), 0, true);
    let trace = outcome.trace_text();
    assert!(
        trace.contains("c1-0 not acquired: Failed { failure: Other(\"session expired\")"),
        "{trace}"
    );
}

/// Curator waits on the watch alone: with every watch message lost a waiter sleeps on a free
/// lock until the run's bound, trying for more than half the run with no fault in the way: T2
/// violated (stuck), in every seed. Our recheck every 500 ms bounds what a lost watch costs.
#[test]
fn t2_a_missed_watch_leaves_curator_s_waiter_asleep_and_the_recheck_bounds_it() {
    let (violated, bounded) = sweep("zookeeper-missed-watch", 0..10);
    assert_eq!(
        violated.get(&Claim::T2),
        Some(&(0..10).collect::<Vec<_>>()),
        "{violated:?}"
    );
    assert_eq!(violated.len(), 1, "only T2: {violated:?}");
    assert!(bounded.is_empty(), "{bounded:?}");
    let mut longest = Duration::ZERO;
    for seed in 0..20 {
        let outcome = run_family(&build("zookeeper-missed-watch-recheck", seed).unwrap(), seed, false);
        assert!(!outcome.verdicts.any_violated() && !outcome.verdicts.any_bounded());
        longest = longest.max(outcome.longest_handover.expect("handovers").0);
    }
    assert!(
        (Duration::from_millis(200)..Duration::from_millis(700)).contains(&longest),
        "a lost watch costs up to one recheck period (500 ms): {longest:?}"
    );
}

/// A run's store requests per acquisition: all of them (acquire, release, the holder's
/// keep-alive lane), and those left when each keep-alive a *waiting* etcd acquisition sends is
/// taken out with the re-read of its predecessor and the new watch that follow it (3 requests
/// per third of a TTL spent waiting).
fn requests_per_acquisition(name: &str, seed: u64) -> (usize, f64, f64) {
    use cassalock::algo::Source;
    let scenario = build(name, seed).unwrap();
    let outcome = run_family(&scenario, seed, true);
    let (mut requests, mut waiting_keep_alives, mut acquisitions) = (0usize, 0usize, 0usize);
    for record in &outcome.records {
        match &record.what {
            FamilyWhat::Lock(FamilyEvent::Request { tag, command, .. }) => {
                requests += 1;
                if tag.source == Source::Etcd && tag.step == 3 && command.starts_with("lease keep-alive") {
                    waiting_keep_alives += 1;
                }
            }
            FamilyWhat::Lock(FamilyEvent::Acquired { .. }) => acquisitions += 1,
            _ => {}
        }
    }
    assert!(!outcome.verdicts.any_violated());
    let per = |n: usize| n as f64 / acquisitions as f64;
    (
        scenario.clients,
        per(requests),
        per(requests.saturating_sub(3 * waiting_keep_alives)),
    )
}

/// S3 quantified: a watched predecessor wakes exactly one waiter, so what a handover costs
/// does not grow with the number of waiters (5 to 32 clients from the seed). ZooKeeper's
/// whole cost is flat (about 5.5 requests an acquisition and release); etcd's grows with the
/// wait, by its waiting keep-alives (our machine re-reads its predecessor after each), and is
/// flat without them.
#[test]
fn s3_a_handover_costs_a_constant_number_of_requests_whatever_the_waiters() {
    for name in ["zookeeper-contention", "etcd-contention"] {
        let seen: Vec<(usize, f64, f64)> = (0..12).map(|seed| requests_per_acquisition(name, seed)).collect();
        eprintln!("{name}: (clients, requests per acquisition, without waiting keep-alives) {seen:?}");
        let max_of = |small: bool, pick: fn(&(usize, f64, f64)) -> f64| {
            seen.iter()
                .filter(|(clients, _, _)| if small { *clients <= 12 } else { *clients >= 20 })
                .map(pick)
                .fold(0.0, f64::max)
        };
        let (few, many) = (max_of(true, |s| s.2), max_of(false, |s| s.2));
        assert!(few > 0.0 && many > 0.0, "{name}: the seeds cover both sizes: {seen:?}");
        assert!(
            many <= 8.0 && many <= few * 1.2,
            "{name}: a handover grows with the waiters: {seen:?}"
        );
        if name == "zookeeper-contention" {
            assert!(max_of(false, |s| s.1) <= few * 1.2, "{name}: {seen:?}");
        } else {
            assert!(
                max_of(false, |s| s.1) > few * 1.3,
                "{name}: the waiting keep-alives no longer grow with the wait: update the docs: {seen:?}"
            );
        }
    }
}

#[test]
fn a_zookeeper_or_etcd_seed_replays_exactly_and_madsim_sees_the_same_draws() {
    for name in [
        "zookeeper-lost-messages",
        "etcd-lost-messages",
        "zookeeper-session-expiry-pause",
    ] {
        let scenario = build(name, 7).unwrap();
        let first = run_family(&scenario, 7, true);
        let second = run_family(&scenario, 7, true);
        assert_eq!(first.records, second.records, "{name}");
        assert_eq!(run_family(&scenario, 7, false).trace_hash, first.trace_hash, "{name}");
        check_family_determinism(&scenario, 7);
    }
}
