//! The family simulator: the library's `FamilyLocker` against simulated Redis and
//! Memcached servers. Pins what the sweeps found (docs/simulator.md): the controls show
//! no violation over their seeds, every fault scenario violates its claim on a pinned seed, each
//! client bug's mutant is caught where the unmutated lock passes, and a seed replays exactly.
//! Redisson's scenarios also pin what its unlock messages do to a handover.
#![cfg(madsim)]

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use cassalock_sim::clock::{ClockSpec, SimClock, EPOCH_US};
use cassalock_sim::family::scenario::{build, scenarios};
use cassalock_sim::family::verdict::clock_passes;
use cassalock_sim::family::{check_family_determinism, run_family, Claim, Verdict};

/// Per claim, the seeds that violated it; and the seeds whose run hit the bound.
struct Sweep {
    violated: BTreeMap<Claim, Vec<u64>>,
    bounded: Vec<u64>,
}

fn sweep(name: &str, seeds: Range<u64>) -> Sweep {
    let mut violated: BTreeMap<Claim, Vec<u64>> = BTreeMap::new();
    let mut bounded = Vec::new();
    for seed in seeds {
        let scenario = build(name, seed).unwrap();
        let outcome = run_family(&scenario, seed, false);
        for (claim, verdict) in &outcome.verdicts.claims {
            match verdict {
                Verdict::Violated(_) => violated.entry(*claim).or_default().push(seed),
                Verdict::Bounded(_) => bounded.push(seed),
                Verdict::NoViolation | Verdict::NotChecked => {}
            }
        }
    }
    Sweep { violated, bounded }
}

fn assert_no_violation(name: &str, seeds: Range<u64>) {
    let found = sweep(name, seeds.clone());
    assert!(
        found.violated.is_empty(),
        "{name}: violations in seeds {seeds:?}: {:?}",
        found.violated
    );
    assert!(found.bounded.is_empty(), "{name}: bounded runs {:?}", found.bounded);
}

#[test]
fn no_fault_contention_shows_no_violation_for_each_lock() {
    for name in ["set-nx-contention", "redlock-contention", "memcached-contention"] {
        assert_no_violation(name, 0..100);
    }
}

#[test]
fn lost_requests_and_replies_show_no_violation() {
    for name in [
        "set-nx-lost-messages",
        "memcached-lost-messages",
        "redlock-lost-messages",
    ] {
        assert_no_violation(name, 0..50);
    }
    // Seed 209 once found Redlock's one-round release saying Released while a majority of the
    // masters, whose DEL was lost, still held the key (C-release). The release now asks the
    // masters that did not answer again, and says Failed if one never does.
    assert_no_violation("redlock-lost-messages", 209..210);
}

/// `scenario` on `seed` violates `claim` and no other claim, but T1-server where `claim` is
/// T1-belief: a server names one holder at most, so at the reading right after the second of
/// two overlapping beliefs began, one believer is not the one it names.
fn assert_violates_only(name: &str, seed: u64, claim: Claim) {
    let scenario = build(name, seed).unwrap();
    assert_eq!(scenario.expect_violated, Some(claim.name()), "{name}");
    let outcome = run_family(&scenario, seed, false);
    for (judged, verdict) in &outcome.verdicts.claims {
        if *judged == claim || (claim == Claim::T1Belief && *judged == Claim::T1Server) {
            assert!(
                verdict.is_violated(),
                "{name} seed {seed}: {} is {verdict}",
                claim.name()
            );
        } else {
            assert!(
                !verdict.is_violated() && !matches!(verdict, Verdict::Bounded(_)),
                "{name} seed {seed}: {} is {verdict}",
                judged.name()
            );
        }
    }
}

#[test]
fn every_fault_scenario_violates_its_claim_on_its_pinned_seed() {
    // Seed 0 violates in each (the sweeps of 0..1000: every seed but the ones noted in
    // docs/simulator.md).
    let pinned = [
        ("set-nx-clock-drift", 0, Claim::T1Belief),
        ("set-nx-failover-after-acquire", 0, Claim::T1Belief),
        ("set-nx-restart-no-persistence", 0, Claim::T1Belief),
        ("redlock-clock-jump", 0, Claim::T1Belief),
        ("redlock-gc-pause", 0, Claim::T1Resource),
        ("redlock-restart-no-fsync", 0, Claim::T1Belief),
        ("memcached-pause", 0, Claim::T1Resource),
        ("redisson-failover-during-renewal", 0, Claim::T1Belief),
        ("redisson-pause", 0, Claim::T1Resource),
    ];
    for (name, seed, claim) in pinned {
        assert_violates_only(name, seed, claim);
    }
}

/// The two-command recipe (`SETNX`, then `EXPIRE`, `DEL`) on the workloads under which
/// `SET NX PX` keeps every claim (the sweeps: docs/simulator.md).
#[test]
fn t2_t1_belief_the_setnx_expire_recipe_loses_what_set_nx_keeps() {
    assert_no_violation("setnx-expire-contention", 0..100);
    // Lost replies: a SETNX that applied and lost its reply leaves a key with no expiry that
    // nobody takes again (T2); seed 0 shows only that.
    let lost = sweep("setnx-expire-lost-messages", 0..10);
    assert_eq!(
        lost.violated.get(&Claim::T2).map(Vec::len),
        Some(8),
        "{:?}",
        lost.violated
    );
    assert_violates_only("setnx-expire-lost-messages", 0, Claim::T2);
    // The paused holder's late DEL deletes a later holder's key and a third client takes it
    // while the second still believes; its late write reaches the resource too.
    let pause = sweep("setnx-expire-pause", 0..10);
    assert_eq!(
        pause.violated.keys().copied().collect::<Vec<_>>(),
        vec![Claim::T1Belief, Claim::T1Resource, Claim::T1Server]
    );
    assert!(
        pause.violated.values().all(|seeds| seeds.len() == 10),
        "{:?}",
        pause.violated
    );
}

/// A holder cut off from its servers for its lease and a second more, while it holds: every
/// lock but the two-command recipe keeps every claim (its belief ends with its lease, its late
/// release checks whose key it deletes); the recipe's blind DEL after the partition deletes the
/// next holder's key and a third client takes the lock beside it.
#[test]
fn t1_belief_a_partitioned_holder_stops_believing_in_time_but_the_recipe_s_late_del_frees_another_s_key() {
    let partitions: Vec<&str> = scenarios()
        .map(|named| named.name)
        .filter(|name| name.ends_with("-partition"))
        .collect();
    let locks: std::collections::BTreeSet<&str> = scenarios()
        .map(|named| build(named.name, 0).unwrap().lock.name())
        .collect();
    assert_eq!(
        partitions.len(),
        locks.len(),
        "one per lock with scenarios: {partitions:?}"
    );
    assert!(locks.len() >= 9, "{locks:?}");
    for name in partitions {
        if name == "setnx-expire-partition" {
            assert_violates_only(name, 0, Claim::T1Belief);
        } else {
            assert_no_violation(name, 0..20);
        }
    }
}

#[test]
fn the_fixes_and_controls_of_the_fault_scenarios_show_no_violation() {
    // Restart with appendfsync always; Redlock's restart delayed by the TTL (Kleppmann).
    for name in ["set-nx-restart-persistence", "redlock-restart-delayed"] {
        assert_no_violation(name, 0..100);
    }
}

#[test]
fn go_redsync_extend_ignores_validity_is_caught_where_the_unmutated_lock_passes() {
    assert_no_violation("redlock-slow-extend", 0..100);
    assert_violates_only("redlock-slow-extend-go-redsync", 0, Claim::T1Belief);
    let found = sweep("redlock-slow-extend-go-redsync", 0..100);
    let seeds = &found.violated[&Claim::T1Belief];
    assert!(seeds.len() >= 80, "caught in only {} of 100 seeds", seeds.len());
}

#[test]
fn node_redlock_validity_from_first_attempt_is_caught_where_the_unmutated_lock_passes() {
    assert_no_violation("redlock-retry-after-drop", 0..100);
    assert_violates_only("redlock-retry-after-drop-node-redlock", 0, Claim::T2Free);
    let found = sweep("redlock-retry-after-drop-node-redlock", 0..100);
    assert_eq!(found.violated[&Claim::T2Free].len(), 100);
}

/// redisson/redisson#775: one renewal of the holder's watchdog is lost. The fixed watchdog renews
/// at its next period and keeps the lock; the mutant's ends quietly, the lease runs out under
/// a holder that is never told (C-lost), and the other client takes the lock.
#[test]
fn redisson_775_a_watchdog_that_stops_after_a_failed_renewal_is_caught_where_the_fixed_one_passes() {
    assert_no_violation("redisson-failed-renewal", 0..100);
    assert_violates_only("redisson-failed-renewal-775", 0, Claim::CLost);
    let found = sweep("redisson-failed-renewal-775", 0..100);
    assert_eq!(found.violated[&Claim::CLost].len(), 100);
    let outcome = run_family(&build("redisson-failed-renewal-775", 0).unwrap(), 0, false);
    let Verdict::Violated(why) = outcome.verdicts.get(Claim::CLost) else {
        unreachable!("checked above")
    };
    assert!(why.starts_with("c0-0 was not told for"), "{why}");
}

/// The longest handover of a run (a release to the next acquisition), over `seeds`.
fn longest_handover(name: &str, seeds: Range<u64>) -> Duration {
    seeds
        .filter_map(|seed| run_family(&build(name, seed).unwrap(), seed, false).longest_handover)
        .map(|(gap, _)| gap)
        .max()
        .expect("some release was followed by an acquisition")
}

#[test]
fn redisson_waiters_woken_by_the_unlock_message_take_the_lock_at_once_and_sleep_out_the_ttl_without_it() {
    assert_no_violation("redisson-contention", 0..30);
    assert_no_violation("redisson-lost-unlock-messages", 0..100);
    // Delivered, the message wakes a waiter within the network's latency; lost, the waiter
    // sleeps out the TTL the holder's key had when it asked (the lease is 1 s).
    let told = longest_handover("redisson-contention", 0..30);
    assert!(told < Duration::from_millis(100), "{told:?}");
    let lost = longest_handover("redisson-lost-unlock-messages", 0..100);
    assert!(
        (Duration::from_millis(500)..Duration::from_millis(1100)).contains(&lost),
        "{lost:?}"
    );
}

#[test]
fn a_seed_replays_exactly_and_another_seed_differs() {
    for name in [
        "set-nx-lost-messages",
        "redlock-contention",
        "set-nx-failover-after-acquire",
        "redisson-contention",
        "redisson-failover-during-renewal",
        "redisson-fair-contention",
        "redisson-fair-long-contention",
    ] {
        let scenario = build(name, 7).unwrap();
        let first = run_family(&scenario, 7, true);
        let second = run_family(&scenario, 7, true);
        assert_eq!(
            first.records, second.records,
            "{name}: the same seed gave another trace"
        );
        assert_eq!(first.trace_hash, second.trace_hash);
        assert_eq!(first.verdicts, second.verdicts);
        let summary = run_family(&scenario, 7, false);
        assert_eq!(
            summary.trace_hash, first.trace_hash,
            "{name}: the details changed the run"
        );
        let other = run_family(&build(name, 8).unwrap(), 8, true);
        assert_ne!(
            first.trace_hash, other.trace_hash,
            "{name}: seeds 7 and 8 gave one trace"
        );
    }
}

#[test]
fn madsim_finds_the_same_random_draws_in_two_runs_of_a_seed() {
    for name in [
        "set-nx-lost-messages",
        "redlock-restart-no-fsync",
        "memcached-pause",
        "redisson-pause",
        "redisson-lost-unlock-messages",
        "redisson-fair-lost-unlock-messages",
        "redisson-fair-barging",
    ] {
        check_family_determinism(&build(name, 3).unwrap(), 3);
    }
}

#[test]
fn every_scenario_builds_and_names_a_known_claim() {
    for named in scenarios() {
        let scenario = build(named.name, 0).unwrap();
        assert_eq!(scenario.name, named.name);
        if let Some(claim) = scenario.expect_violated {
            assert!(Claim::named(claim).is_some(), "{}: unknown claim {claim}", named.name);
        }
    }
    assert!(build("no-such-scenario", 0)
        .unwrap_err()
        .to_string()
        .contains("set-nx-contention"));
}

#[test]
fn a_holder_s_clock_passing_its_validity_is_found_under_drift_and_jumps() {
    madsim::runtime::Runtime::new().block_on(async {
        let start = tokio::time::Instant::now();
        let end = Duration::from_secs(100);
        let exact = SimClock::new(ClockSpec::default(), start);
        assert_eq!(
            clock_passes(&exact, Duration::ZERO, EPOCH_US + 2_000_000, end),
            Duration::from_secs(2)
        );
        // 10% slow: 2 s of its readings take 2.222 s of global time.
        let slow = SimClock::new(
            ClockSpec {
                drift_ppm: -100_000,
                ..ClockSpec::default()
            },
            start,
        );
        let passed = clock_passes(&slow, Duration::ZERO, EPOCH_US + 2_000_000, end);
        assert!(
            (Duration::from_millis(2222)..=Duration::from_millis(2223)).contains(&passed),
            "{passed:?}"
        );
        // A forward jump of 5 s at 1 s: passed at the jump.
        let jumping = SimClock::new(
            ClockSpec {
                jumps: vec![(1000, 5_000_000)],
                ..ClockSpec::default()
            },
            start,
        );
        assert_eq!(
            clock_passes(&jumping, Duration::ZERO, EPOCH_US + 2_000_000, end),
            Duration::from_secs(1)
        );
        // Never passed before the end: the end.
        assert_eq!(clock_passes(&exact, Duration::ZERO, EPOCH_US + 500_000_000, end), end);
    });
}

/// Redisson's fair lock: no violation under plain contention over a handful of seeds (the
/// sweep of 1000 is in docs/simulator.md), the queue order kept, the handover within
/// the network's latency.
#[test]
fn redisson_fair_contention_keeps_the_queue_order_and_shows_no_violation() {
    assert_no_violation("redisson-fair-contention", 0..10);
    let told = longest_handover("redisson-fair-contention", 0..10);
    assert!(told < Duration::from_millis(100), "{told:?}");
}

#[test]
fn redisson_fair_fault_scenarios_violate_their_claim_on_their_pinned_seed() {
    for (name, seed, claim) in [
        ("redisson-fair-pause", 0, Claim::T1Resource),
        ("redisson-fair-failover-during-renewal", 0, Claim::T1Belief),
        ("redisson-fair-barging", 0, Claim::FOrder),
    ] {
        assert_violates_only(name, seed, claim);
    }
}

/// The planted barging mutant (the RLock's acquire on the fair lock's keys) is caught by
/// F-order, judged from the server's records; the unmutated lock keeps the order on the same
/// workload (redisson-fair-contention's seeds, and the same five clients in
/// redisson-fair-lost-unlock-messages).
#[test]
fn redisson_fair_barging_is_caught_by_f_order_where_the_fair_lock_passes() {
    let found = sweep("redisson-fair-barging", 0..20);
    assert_eq!(
        found.violated.get(&Claim::FOrder).map(Vec::len),
        Some(20),
        "{:?}",
        found.violated
    );
    assert_eq!(found.violated.len(), 1, "{:?}", found.violated);
    let outcome = run_family(&build("redisson-fair-barging", 0).unwrap(), 0, false);
    let Verdict::Violated(why) = outcome.verdicts.get(Claim::FOrder) else {
        unreachable!("checked above")
    };
    assert!(why.contains("whose first acquire reached the server earlier"), "{why}");
}

/// Finding: the fair scripts move the waiters' deadlines only when the lock changes hands, so
/// after about a lease plus a threadWaitTime of unbroken contention the head of the queue is
/// dropped as stale and not told (what a 16-locker run on a real Redis showed). F-order
/// excuses the dropped waiter (the queue's discipline over the waiters it keeps); F-drop
/// reports it.
#[test]
fn redisson_fair_long_contention_drops_the_head_of_the_queue_without_telling_it() {
    assert_violates_only("redisson-fair-long-contention", 0, Claim::FDrop);
    let outcome = run_family(&build("redisson-fair-long-contention", 0).unwrap(), 0, false);
    let Verdict::Violated(why) = outcome.verdicts.get(Claim::FDrop) else {
        unreachable!("checked above")
    };
    // Dropped after about the lease (1 s) plus threadWaitTime (5 s) of contention.
    assert!(why.contains("was dropped at 6216.585 ms by c1-3's release"), "{why}");
    assert_eq!(outcome.verdicts.get(Claim::FOrder), &Verdict::NoViolation);
}

/// Finding: with every unlock message lost, a waiter sleeps the wait it was told on joining,
/// up to the instant its slot began then; one handover in between has moved its deadline to
/// that instant, so its own acquire arrives a request's latency late and drops it as stale.
/// Safety and the queue order are unharmed; handovers take seconds.
#[test]
fn redisson_fair_lost_unlock_messages_drop_waiters_by_their_own_late_acquire() {
    assert_violates_only("redisson-fair-lost-unlock-messages", 0, Claim::FDrop);
    let outcome = run_family(&build("redisson-fair-lost-unlock-messages", 0).unwrap(), 0, false);
    let Verdict::Violated(why) = outcome.verdicts.get(Claim::FDrop) else {
        unreachable!("checked above")
    };
    assert!(why.contains("by its own late acquire"), "{why}");
    let (gap, _) = outcome.longest_handover.expect("handovers");
    assert!(gap > Duration::from_secs(5), "{gap:?}");
}

/// A fair-lock run cut by its bound leaves the holder's hash and the queue: the waiters are
/// listed under the queue's key, and C-release does not read them as holders.
#[test]
fn a_fair_lock_run_cut_short_reports_its_holder_and_its_waiters() {
    let mut scenario = build("redisson-fair-long-contention", 0).unwrap();
    scenario.bound_ms = 3000;
    let outcome = run_family(&scenario, 0, false);
    assert!(matches!(outcome.verdicts.get(Claim::T2), Verdict::Bounded(_)));
    assert_eq!(outcome.verdicts.get(Claim::CRelease), &Verdict::NoViolation);
    let holders: Vec<&str> = outcome
        .left
        .iter()
        .filter(|left| left.key == "L")
        .map(|left| left.token.as_str())
        .collect();
    assert_eq!(holders.len(), 1, "{:?}", outcome.left);
    let waiters: Vec<&str> = outcome
        .left
        .iter()
        .filter(|left| left.key == "redisson_lock_queue:{L}")
        .map(|left| left.token.as_str())
        .collect();
    assert_eq!(waiters.len(), 4, "{:?}", outcome.left);
    assert!(!waiters.contains(&holders[0]));
}

/// T1-server sees what T1-belief cannot: a holder alone, believing while its server names
/// nobody (the restart emptied it, or the failover promoted a replica without its key).
#[test]
fn t1_server_a_lone_holder_whose_key_is_gone_is_caught_where_t1_belief_sees_nothing() {
    for name in ["set-nx-restart-no-persistence", "set-nx-failover-after-acquire"] {
        for seed in 0..5 {
            let mut scenario = build(name, seed).unwrap();
            scenario.clients = 1;
            let outcome = run_family(&scenario, seed, false);
            assert!(
                !outcome.verdicts.get(Claim::T1Belief).is_violated(),
                "{name} seed {seed}: one client cannot overlap"
            );
            let Verdict::Violated(why) = outcome.verdicts.get(Claim::T1Server) else {
                panic!(
                    "{name} seed {seed}: T1-server is {}",
                    outcome.verdicts.get(Claim::T1Server)
                );
            };
            assert!(why.contains("while the server named nobody"), "{why}");
        }
    }
    // With the server's state kept, the lone holder agrees with it.
    let mut kept = build("set-nx-restart-persistence", 0).unwrap();
    kept.clients = 1;
    let outcome = run_family(&kept, 0, false);
    assert_eq!(outcome.verdicts.get(Claim::T1Server), &Verdict::NoViolation);
}

/// Redisson's fenced lock: the pause that breaks the RLock's T1-resource (`redisson-pause`)
/// leaves its resource whole here, the paused holder's late write refused for its lower token;
/// a restart without persistence and a failover to a replica without the last `INCR` hand the
/// holder's token out again (C-token), the emptied server naming nobody while the holder
/// believes (T1-server). The controls (contention, a restart with appendfsync always, a
/// partition past the lease) keep every claim.
#[test]
fn redisson_fenced_refuses_a_paused_holders_write_and_loses_its_counter_with_the_server() {
    for name in [
        "redisson-fenced-contention",
        "redisson-fenced-pause",
        "redisson-fenced-restart-persistence",
        "redisson-fenced-partition",
    ] {
        assert_no_violation(name, 0..10);
    }
    let paused = run_family(&build("redisson-fenced-pause", 0).unwrap(), 0, false);
    let cassalock_judge::event::Rules::Families(rules) = &paused.header.run.rules else {
        panic!(
            "a family run's record has the families' rules: {:?}",
            paused.header.run.rules
        )
    };
    assert!(rules.fencing_tokens, "the fenced lock's resource fences");
    let writes = cassalock_judge::families::judged_writes(rules, &paused.events);
    let refused: Vec<_> = writes.iter().filter(|write| write.refused).collect();
    assert_eq!(refused.len(), 1, "{writes:?}");
    assert_eq!(
        (refused[0].acquisition, refused[0].token.as_str()),
        (Some(0), "00000000000000000001")
    );
    for (name, violated) in [
        (
            "redisson-fenced-restart-no-persistence",
            vec![Claim::T1Server, Claim::CToken],
        ),
        (
            "redisson-fenced-failover-during-renewal",
            vec![Claim::T1Belief, Claim::T1Server, Claim::CToken],
        ),
    ] {
        let scenario = build(name, 0).unwrap();
        assert_eq!(scenario.expect_violated, Some(Claim::CToken.name()), "{name}");
        let outcome = run_family(&scenario, 0, false);
        let found: Vec<Claim> = outcome
            .verdicts
            .claims
            .iter()
            .filter(|(_, verdict)| verdict.is_violated())
            .map(|(claim, _)| *claim)
            .collect();
        assert_eq!(found, violated, "{name}");
        let Verdict::Violated(why) = outcome.verdicts.get(Claim::CToken) else {
            unreachable!("checked above")
        };
        assert!(
            why.contains("got token 00000000000000000001, not above acquisition #0's 00000000000000000001"),
            "{why}"
        );
    }
}
