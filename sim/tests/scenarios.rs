//! Every named scenario with its expected outcome, on both algorithms, on fixed seeds.
//!
//! `MADSIM_TEST_SEED=S` runs only seed S (as printed by a failure). Each failure prints the seed,
//! the `cassalock replay` command and the `cargo test` command that reproduce it.
//!
//! The failures the tests look for (plan and verdicts, and for pause seed 0 the whole rendered
//! trace) are pinned in `golden/*.txt` beside this file: after an intended change, regenerate
//! them with `UPDATE_EXPECT=1 cargo test -p cassalock-sim --test scenarios` and review `git diff`.
//!
//! One concept, kept in one file over 1,000 lines: one table: every named scenario with its
//! expected outcome.
#![cfg(madsim)]

use std::ops::Range;
use std::time::Duration;

use cassalock::driver::Algorithm;
use cassalock_judge::ClaimVerdict;
use cassalock_sim::cluster::{Consistency, Network};
use cassalock_sim::config::LockOrder;
use cassalock_sim::knobs::{Knobs, MsRange};
use cassalock_sim::run::{check_determinism, run, RunOutcome};
use cassalock_sim::scenario::{build, SimOptions};
use expect_test::{expect_file, ExpectFile};

const BOTH: [Algorithm; 2] = [Algorithm::Old, Algorithm::Queue];

fn seeds(default: Range<u64>) -> Range<u64> {
    match std::env::var("MADSIM_TEST_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(seed) => seed..seed + 1,
        None => default,
    }
}

/// What a failure prints: seed, plan, verdicts and the replay command.
fn printed(outcome: &RunOutcome, flags: &str) -> String {
    format!(
        "seed {seed}, {algorithm} algorithm\nplan:\n{plan}\nverdicts:\n{verdicts}replay: cassalock replay --scenario {scenario} --seed {seed} --algorithm {algorithm}{flags}",
        seed = outcome.seed,
        algorithm = outcome.config.algorithm.name(),
        plan = outcome.config.plan(),
        verdicts = outcome.verdicts,
        scenario = outcome.config.scenario,
    )
}

fn reproduce(test: &str, outcome: &RunOutcome, flags: &str) -> String {
    format!(
        "\n{}\ntest:   MADSIM_TEST_SEED={seed} cargo test -p cassalock-sim --test scenarios {test}",
        printed(outcome, flags),
        seed = outcome.seed,
    )
}

/// Compare `actual` with a golden file. A difference fails with a line diff (`-` golden, `+`
/// now); with `UPDATE_EXPECT=1` the file is rewritten instead.
fn pin(golden: ExpectFile, actual: &str) {
    let expected = golden.data();
    if expected != actual && std::env::var_os("UPDATE_EXPECT").is_none() {
        let diff = similar::TextDiff::from_lines(expected.as_str(), actual)
            .unified_diff()
            .context_radius(3)
            .header("golden", "now")
            .to_string();
        panic!(
            "the output differs from sim/tests/{} (- golden, + now):\n{diff}\nIf the change is intended: UPDATE_EXPECT=1 cargo test -p cassalock-sim --test scenarios",
            golden.path.display()
        );
    }
    golden.assert_eq(actual);
}

/// Pin what a failure prints, in `golden/{name}.txt`; skipped when `MADSIM_TEST_SEED` picks
/// another seed than the one pinned.
fn pin_printed(name: &str, outcome: &RunOutcome, flags: &str) {
    if std::env::var_os("MADSIM_TEST_SEED").is_none() {
        pin(
            expect_file![format!("golden/{name}.txt")],
            &format!("{}\n", printed(outcome, flags)),
        );
    }
}

fn runs(scenario: &str, algorithm: Algorithm, options: &SimOptions, seeds: Range<u64>) -> Vec<RunOutcome> {
    seeds
        .map(|seed| {
            let config = build(scenario, seed, algorithm, options).expect("a known scenario");
            run(&config, seed, false)
        })
        .collect()
}

/// Every run passes `check`.
fn always(
    test: &str,
    scenario: &str,
    options: &SimOptions,
    flags: &str,
    range: Range<u64>,
    check: impl Fn(&RunOutcome) -> Result<(), String>,
) {
    for &algorithm in cassalock_sim::scenario::algorithms_for(scenario) {
        for outcome in runs(scenario, algorithm, options, seeds(range.clone())) {
            if let Err(why) = check(&outcome) {
                panic!("{test}: {why}{}", reproduce(test, &outcome, flags));
            }
        }
    }
}

/// At least one run on the default seeds shows `found` (with `MADSIM_TEST_SEED`, that seed must).
/// The first such run is pinned in `golden/{golden}-{algorithm}.txt`; `flags` are the replay
/// command's options for `options`.
#[allow(clippy::too_many_arguments)]
fn sometimes(
    test: &str,
    golden: &str,
    scenario: &str,
    algorithm: Algorithm,
    options: &SimOptions,
    flags: &str,
    range: Range<u64>,
    found: impl Fn(&RunOutcome) -> bool,
) -> RunOutcome {
    let outcomes = runs(scenario, algorithm, options, seeds(range.clone()));
    match outcomes.into_iter().find(|o| found(o)) {
        Some(outcome) => {
            eprintln!(
                "{test}: found on seed {} ({} algorithm)",
                outcome.seed,
                algorithm.name()
            );
            pin_printed(&format!("{golden}-{}", algorithm.name()), &outcome, flags);
            outcome
        }
        None => panic!(
            "{test}: not found on seeds {range:?} with the {} algorithm",
            algorithm.name()
        ),
    }
}

/// Every claim a fault-free contention run must keep.
const FAULT_FREE_CLAIMS: &[&str] = &[
    "T1-belief",
    "T1-resource",
    "T1-server",
    "C-token",
    "T2",
    "K3",
    "C-release",
    "C-free",
];

fn passes(outcome: &RunOutcome, claims: &[&str]) -> Result<(), String> {
    for claim in claims {
        if !outcome.verdicts.passed(claim) {
            return Err(format!("{claim} failed: {}", outcome.verdicts.check(claim).detail));
        }
    }
    Ok(())
}

#[test]
fn contention_never_fails() {
    always(
        "contention_never_fails",
        "contention",
        &SimOptions::default(),
        "",
        0..12,
        |o| {
            passes(o, FAULT_FREE_CLAIMS)?;
            (o.verdicts.acquisitions == 100)
                .then_some(())
                .ok_or(format!("{} acquisitions, not 100", o.verdicts.acquisitions))
        },
    );
}

#[test]
fn skew_below_the_renewal_margin_is_safe_above_it_s2_breaks_t1() {
    let small = SimOptions {
        offset_s: Some(5.0),
        ..SimOptions::default()
    };
    always(
        "skew_below_the_renewal_margin_is_safe_above_it_s2_breaks_t1",
        "skew",
        &small,
        " --offset-s 5",
        0..8,
        |o| passes(o, &["T1-belief", "T1-resource", "T2"]),
    );
    // At the TTL (the thesis's bound) T1 breaks for both algorithms.
    let at_ttl = SimOptions {
        offset_s: Some(30.0),
        ..SimOptions::default()
    };
    for algorithm in BOTH {
        sometimes(
            "skew at the TTL",
            "skew-at-ttl-t1",
            "skew",
            algorithm,
            &at_ttl,
            " --offset-s 30",
            0..8,
            |o| !o.verdicts.passed("T1-belief"),
        );
    }
}

#[test]
fn skew_finding_the_smallest_breaking_offset_is_about_ttl_minus_the_renewal_interval() {
    // The finding (`cassalock sim --scenario skew --sweep-offsets --seeds 0..100`): with the
    // default TTL 30 s renewed every 15 s, a replica clock 14.1 s ahead already breaks T1
    // (seed 26 on the cluster's queues; 14.0 s on seed 71. On madsim's network: 14.1 s on
    // seed 80 with the long-run defaults, 14.0 s on seed 53 with a new id per acquisition,
    // and 14.1 s on seed 8 before acquisitions took the counter token), while 13.9 s holds
    // on seeds 0..100: the bound is TTL - renewal interval - up to 1 s of whole-second
    // expiry, not the thesis's TTL.
    let breaking = SimOptions {
        offset_s: Some(14.1),
        ..SimOptions::default()
    };
    let config = build("skew", 26, Algorithm::Queue, &breaking).unwrap();
    let outcome = run(&config, 26, false);
    assert!(
        !outcome.verdicts.passed("T1-belief"),
        "{}",
        reproduce("skew_finding", &outcome, " --offset-s 14.1")
    );
    pin_printed("skew-14.1s-seed-26-t1-queue", &outcome, " --offset-s 14.1");
    let holding = SimOptions {
        offset_s: Some(13.9),
        ..SimOptions::default()
    };
    for outcome in runs("skew", Algorithm::Queue, &holding, 0..20) {
        assert!(
            outcome.verdicts.passed("T1-belief"),
            "{}",
            reproduce("skew_finding", &outcome, " --offset-s 13.9")
        );
    }
}

#[test]
fn pause_k1_breaks_belief_but_fencing_prevents_damage() {
    always(
        "pause_k1_breaks_belief_but_fencing_prevents_damage",
        "pause",
        &SimOptions::default(),
        "",
        0..6,
        |o| {
            if o.verdicts.passed("T1-belief") {
                return Err("a holder paused past its TTL should overlap with the next holder".into());
            }
            passes(o, &["T1-resource", "T2"])?;
            (o.verdicts.stale_refused > 0)
                .then_some(())
                .ok_or("the paused holder's stale write was not refused".into())
        },
    );
    // Without fencing the same runs damage the resource.
    let unfenced = SimOptions {
        no_fencing: true,
        ..SimOptions::default()
    };
    for algorithm in BOTH {
        sometimes(
            "pause without fencing",
            "pause-unfenced-t1-resource",
            "pause",
            algorithm,
            &unfenced,
            " --no-fencing",
            0..6,
            |o| !o.verdicts.passed("T1-resource"),
        );
    }
}

#[test]
fn cl_one_k2_breaks_t1_and_the_same_plan_at_quorum_does_not() {
    sometimes(
        "cl-one",
        "cl-one-k2-t1",
        "cl-one",
        Algorithm::Old,
        &SimOptions::default(),
        "",
        0..40,
        |o| !o.verdicts.passed("T1-belief"),
    );
    let quorum = SimOptions {
        consistency: Some(Consistency::Quorum),
        ..SimOptions::default()
    };
    always(
        "cl_one_k2_breaks_t1_and_the_same_plan_at_quorum_does_not",
        "cl-one",
        &quorum,
        " --consistency quorum",
        0..10,
        |o| passes(o, &["T1-belief", "T1-resource", "T1-server", "T2"]),
    );
}

#[test]
fn partition_the_cut_off_holder_learns_it_lost_and_the_lock_stays_live() {
    always(
        "partition_the_cut_off_holder_learns_it_lost_and_the_lock_stays_live",
        "partition",
        &SimOptions::default(),
        "",
        0..5,
        |o| {
            passes(o, &["T1-belief", "T1-resource", "T2"])?;
            if o.verdicts.leases_lost.is_empty() {
                return Err("the cut-off holder never learned that it lost the lock".into());
            }
            // Someone else acquired while the holder was cut off (45 s from a fault at 2..8 s).
            let cut_at = o.config.faults[0].at;
            let others = o.records.iter().any(|r| {
                r.at > cut_at
                    && r.at < cut_at + Duration::from_secs(45)
                    && matches!(
                        &r.what,
                        cassalock_sim::trace::What::Lock(cassalock::LockEvent::Acquired { .. })
                    )
            });
            others
                .then_some(())
                .ok_or("no client acquired while the holder was cut off".into())
        },
    );
}

#[test]
fn crash_holder_frees_the_lock_after_the_ttl() {
    always(
        "crash_holder_frees_the_lock_after_the_ttl",
        "crash-holder",
        &SimOptions::default(),
        "",
        0..6,
        |o| {
            passes(o, &["T1-belief", "T2"])?;
            let free = o.verdicts.free_after_kill.ok_or("nobody acquired after the kill")?;
            // The last write was at most a renewal interval before the kill; expiry is whole seconds.
            let ttl = Duration::from_secs(u64::from(o.config.ttl_s));
            let earliest = ttl - Duration::from_millis(o.config.renew_every_ms) - Duration::from_secs(1);
            if free < earliest || free > ttl + Duration::from_secs(2) {
                return Err(format!(
                    "freed {free:?} after the kill; expected between {earliest:?} and the TTL + 2 s"
                ));
            }
            Ok(())
        },
    );
}

#[test]
fn renew_race_k3_leaves_the_lock_stuck_and_the_waiting_release_never_does() {
    always(
        "renew_race_k3_leaves_the_lock_stuck_and_the_waiting_release_never_does",
        "renew-race",
        &SimOptions::default(),
        "",
        0..10,
        |o| passes(o, &["T1-belief", "K3", "T2"]),
    );
    let k3 = SimOptions {
        k3: true,
        ..SimOptions::default()
    };
    // With reused thread ids (the default) the old lock's next acquisition under the same id
    // writes its main cell at once, and the late renewal mostly lands on that cell: the lock
    // is seldom taken by nobody (seed 83 is the first of 0..100 on the queues, 58 on madsim's
    // network), the queue lock often.
    for algorithm in BOTH {
        let range = if algorithm == Algorithm::Old { 0..100 } else { 0..10 };
        sometimes(
            "renew-race --k3",
            "renew-race-k3",
            "renew-race",
            algorithm,
            &k3,
            " --k3",
            range,
            |o| !o.verdicts.passed("K3"),
        );
    }
    // A new thread id per acquisition, as the listings: the late renewal resurrects a cell
    // nobody else writes.
    let k3_new_ids = SimOptions {
        k3: true,
        knobs: Box::new(Knobs {
            reuse_thread_ids: Some(false),
            queue_read_from_last_hold: Some(false),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    for algorithm in BOTH {
        sometimes(
            "renew-race --k3, new ids",
            "renew-race-k3-new-ids",
            "renew-race",
            algorithm,
            &k3_new_ids,
            " --k3 --reuse-thread-ids false --queue-read-from-last-hold false",
            0..10,
            |o| !o.verdicts.passed("K3"),
        );
    }
}

/// The renew-race scenario does race renewal against release (the matrix's renew-race cells
/// count as fired only then): a detailed run shows a renewal request while a release runs.
#[test]
fn renew_race_races_renewals_against_releases() {
    let raced = (0..5).any(|seed| {
        let config = build("renew-race", seed, Algorithm::Queue, &SimOptions::default()).expect("a known scenario");
        run(&config, seed, true).verdicts.renewal_during_release
    });
    assert!(raced, "no renewal request during a release in seeds 0..5");
}

/// Mutant M3 (docs/mutants.md): release stamps its deletes at the lease's start. cargo-mutants
/// cannot reach this (it would have to invent a timestamp), so it is a switch; the simulator
/// must catch it: the renewed cells outlive their tombstones and the released lock stays taken.
#[test]
fn m3_deletes_stamped_at_the_lease_start_leave_a_renewed_lock_taken_c_release() {
    always(
        "m3_deletes_stamped_at_the_lease_start_leave_a_renewed_lock_taken_c_release",
        "renew-race",
        &SimOptions::default(),
        "",
        0..5,
        |o| passes(o, &["K3", "C-release"]),
    );
    let m3 = SimOptions {
        m3: true,
        ..SimOptions::default()
    };
    for algorithm in BOTH {
        let found = sometimes(
            "renew-race --m3",
            "renew-race-m3",
            "renew-race",
            algorithm,
            &m3,
            " --m3",
            0..5,
            |o| !o.verdicts.passed("C-release"),
        );
        assert!(
            printed(&found, " --m3").contains("MUTANT M3"),
            "the trace names the mutant's steps"
        );
    }
}

#[test]
fn c_lost_pause_at_rewrite_the_holder_is_told_and_stays_told_m4_takes_it_back() {
    // The pause strikes at a step (renewal decided to rewrite), so every run must fire it, and
    // every run has an overlap for C-lost to judge (a verdict of `-` would be no evidence).
    always(
        "c_lost_pause_at_rewrite_the_holder_is_told_and_stays_told_m4_takes_it_back",
        "pause-at-rewrite",
        &SimOptions::default(),
        "",
        0..5,
        |o| {
            if o.verdicts.faults_unfired > 0 || o.verdicts.faults_begun == 0 {
                return Err("the step-triggered pause did not fire".into());
            }
            let c_lost = o.verdicts.check("C-lost");
            if c_lost.verdict != ClaimVerdict::Holds {
                return Err(format!("C-lost was not judged to hold: {}", c_lost.detail));
            }
            if o.verdicts.contract.lost_retracted > 0 {
                return Err("is_lost() went back to false".into());
            }
            passes(o, &["T1-resource", "C-token"])
        },
    );
    let m4 = SimOptions {
        m4: true,
        ..SimOptions::default()
    };
    for algorithm in BOTH {
        let found = sometimes(
            "pause-at-rewrite --m4",
            "pause-at-rewrite-m4",
            "pause-at-rewrite",
            algorithm,
            &m4,
            " --m4",
            0..5,
            |o| !o.verdicts.passed("C-lost") && o.verdicts.contract.lost_retracted > 0,
        );
        assert!(
            printed(&found, " --m4").contains("MUTANT M4"),
            "the trace names the mutant"
        );
        // The timeline marks both answers on the holder's lane, and counts them in its legend.
        let path = std::env::temp_dir().join(format!("cassalock-m4-timeline-{}.svg", std::process::id()));
        cassalock_sim::timeline::write_svg(&found, &path).expect("written");
        let svg = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let retracted = found.verdicts.contract.lost_retracted;
        assert!(
            svg.contains(&format!("is_lost() false again (C-lost): {retracted}")),
            "the legend counts the answers taken back"
        );
    }
}

#[test]
fn c_lost_rows_deleted_the_holder_learns_m2_writes_its_cell_back_and_never_does() {
    // An operator deletes the lock's rows while a client holds: no skew, no expiry, so only
    // renewal's check can tell the holder. The waiter may take the lock before that check
    // (T1-belief is not asked to hold: the fault breaks the lock's premise), but the holder
    // must be told within C-lost's bound, and the fault must have fired with an overlap for
    // C-lost to judge.
    always(
        "c_lost_rows_deleted_the_holder_learns_m2_writes_its_cell_back_and_never_does",
        "rows-deleted",
        &SimOptions::default(),
        "",
        0..5,
        |o| {
            if o.verdicts.faults_begun == 0 {
                return Err("the delete did not fire".into());
            }
            let c_lost = o.verdicts.check("C-lost");
            if c_lost.verdict != ClaimVerdict::Holds {
                return Err(format!("C-lost was not judged to hold: {}", c_lost.detail));
            }
            passes(o, &["T1-resource", "C-token", "T2"])
        },
    );
    let m2 = SimOptions {
        m2: true,
        ..SimOptions::default()
    };
    for algorithm in BOTH {
        let found = sometimes(
            "rows-deleted --m2",
            "rows-deleted-m2",
            "rows-deleted",
            algorithm,
            &m2,
            " --m2",
            0..5,
            |o| !o.verdicts.passed("C-lost"),
        );
        assert!(
            printed(&found, " --m2").contains("MUTANT M2"),
            "the trace names the mutant"
        );
    }
}

#[test]
fn timeservice_stall_s1_freezes_global_time_for_the_lead_of_the_crashed_replica() {
    always(
        "timeservice_stall_s1_freezes_global_time_for_the_lead_of_the_crashed_replica",
        "timeservice-stall",
        &SimOptions::default(),
        "",
        0..3,
        |o| {
            passes(o, &["T1-belief", "T1-resource", "T2"])?;
            let stall = o.verdicts.global_time_stall.ok_or("no GlobalTime samples")?;
            // ts0 ran 20 s ahead.
            if stall < Duration::from_secs(18) || stall > Duration::from_secs(22) {
                return Err(format!("GlobalTime stood still for {stall:?}; expected about 20 s"));
            }
            Ok(())
        },
    );
}

#[test]
fn swarm_never_damages_the_resource() {
    always(
        "swarm_never_damages_the_resource",
        "swarm",
        &SimOptions::default(),
        "",
        0..30,
        |o| passes(o, &["T1-resource"]),
    );
}

/// The store-fault knobs: failures before and after apply are injected per
/// call and counted in the verdicts; with no retries some calls fail for good, and the library's
/// clean-up leaves no cells behind the C-free oracle could see (no violation of the safety
/// claims or C-free in seeds 0..4 of contention, either algorithm).
#[test]
fn store_faults_per_call_fire_and_every_check_still_passes() {
    let options = SimOptions {
        knobs: Box::new(Knobs {
            fail_before_apply_percent: Some(5.0),
            fail_after_apply_percent: Some(10.0),
            acquisitions: Some(10),
            // No retries: some calls fail for good, which C-free then judges.
            retries: Some(0),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    let flags = " --retries 0 --acquisitions 10 --fail-before-apply-percent 5 --fail-after-apply-percent 10";
    always(
        "store_faults_per_call_fire_and_every_check_still_passes",
        "contention",
        &options,
        flags,
        0..4,
        |o| {
            let v = &o.verdicts;
            if v.store_faults_before_apply == 0 || v.store_faults_after_apply == 0 {
                return Err(format!(
                    "store faults did not fire: {} before, {} after",
                    v.store_faults_before_apply, v.store_faults_after_apply
                ));
            }
            // Failed calls happened and C-free watched them.
            if v.contract.failed_calls == 0 {
                return Err("no failed call for C-free to judge".into());
            }
            // Safety, and C-free on the failed calls. (Not T2: without retries the old
            // algorithm can fail to finish in 900 s at these rates, seed 0.)
            passes(o, &["T1-belief", "T1-resource", "C-token", "K3", "C-free"])
        },
    );
    // Off, nothing is drawn: the same seed without the knobs is the plain contention run.
    let plain = build("contention", 0, Algorithm::Queue, &SimOptions::default()).unwrap();
    let zero = SimOptions {
        knobs: Box::new(Knobs {
            fail_before_apply_percent: Some(0.0),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    let zeroed = build("contention", 0, Algorithm::Queue, &zero).unwrap();
    assert_eq!(run(&plain, 0, false).trace_hash, run(&zeroed, 0, false).trace_hash);
}

/// The workload and clock knobs reach the run, and a run with them is still determined by its
/// seed (madsim's check: the same draws at the same times).
#[test]
fn workload_and_clock_knobs_reach_the_run_and_stay_deterministic() {
    let options = SimOptions {
        knobs: Box::new(Knobs {
            clients: Some(2),
            acquisitions: Some(4),
            hold_ms: Some(MsRange { lo: 10, hi: 10 }),
            long_hold_ms: Some(MsRange { lo: 3000, hi: 3000 }),
            long_hold_percent: Some(50.0),
            clock_error_ms: Some(50),
            backward_jump_s: Some(5.0),
            fail_after_apply_percent: Some(5.0),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    // Swarm's client faults were drawn for its own client count; they now hit clients 0 and 1.
    let swarm = build("swarm", 4, Algorithm::Queue, &options).unwrap();
    assert_eq!(swarm.clients, 2);
    let swarm_plan = swarm.plan();
    assert!(swarm_plan.contains("client c"), "{swarm_plan}");
    for client in ["c2", "c3", "c4"] {
        assert!(!swarm_plan.contains(&format!("client {client}")), "{swarm_plan}");
    }
    let config = build("contention", 4, Algorithm::Queue, &options).unwrap();
    let plan = config.plan();
    assert!(plan.contains("2 clients x 4 acquisitions"), "{plan}");
    assert!(plan.contains("50% of holds long, 3000-3000 ms"), "{plan}");
    assert!(plan.contains("each reading off by up to ±50 ms"), "{plan}");
    assert!(plan.contains("-5.000 s at"), "{plan}");
    let outcome = run(&config, 4, true);
    assert_eq!(outcome.verdicts.acquisitions, 8, "{}", outcome.verdicts);
    // Holds of 10 ms and of 3 s, both: the long-operation mix fired.
    let holds: Vec<Duration> = outcome
        .records
        .iter()
        .filter_map(|r| match &r.what {
            cassalock_sim::trace::What::Resource { phase, .. } => Some((r.at, *phase)),
            _ => None,
        })
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0].1 == cassalock_sim::trace::Phase::Enter && w[1].1 == cassalock_sim::trace::Phase::Exit)
        .map(|w| w[1].0 - w[0].0)
        .collect();
    assert!(holds.iter().any(|h| *h >= Duration::from_secs(3)), "{holds:?}");
    assert!(holds.iter().any(|h| *h < Duration::from_secs(1)), "{holds:?}");
    check_determinism(&config, 4);
}

/// Several locks per acquisition (`--locks N --lock-order fixed|random`), judged per lock: in a
/// fixed order every claim holds on these seeds (holders of different locks are no overlap);
/// in a random order GetLock clients deadlock (T2 fails at the time limit); K1 is still found
/// per lock.
#[test]
fn several_locks_are_judged_per_lock() {
    let locks = |order: LockOrder| SimOptions {
        knobs: Box::new(Knobs {
            locks: Some(3),
            lock_order: Some(order),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    always(
        "several_locks_are_judged_per_lock",
        "contention",
        &locks(LockOrder::Fixed),
        " --locks 3 --lock-order fixed",
        0..3,
        |o| {
            if o.verdicts.acquisitions != 5 * 20 * 3 {
                return Err(format!("{} lock acquisitions, not 300", o.verdicts.acquisitions));
            }
            if o.verdicts.check("C-release").verdict != ClaimVerdict::NotExercised {
                return Err("C-release judged with several locks".into());
            }
            passes(
                o,
                &["T1-belief", "T1-resource", "C-token", "T2", "K3", "C-free", "C-lost"],
            )
        },
    );
    let random = build("contention", 0, Algorithm::Queue, &locks(LockOrder::Random)).unwrap();
    assert!(
        random.plan().contains("3 locks per acquisition, random order"),
        "{}",
        random.plan()
    );
    let deadlocked = run(&random, 0, false);
    let t2 = deadlocked.verdicts.check("T2");
    assert!(
        t2.verdict == ClaimVerdict::Violated && t2.detail.contains("stuck"),
        "random order, no deadline: expected a deadlock, T2 violated with its stuck clients{}",
        reproduce(
            "several_locks_are_judged_per_lock",
            &deadlocked,
            " --locks 3 --lock-order random"
        )
    );
    let pause = SimOptions {
        knobs: Box::new(Knobs {
            locks: Some(2),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    let paused = run(&build("pause", 0, Algorithm::Queue, &pause).unwrap(), 0, false);
    assert!(!paused.verdicts.passed("T1-belief"), "{}", paused.verdicts);
}

/// T2 on a finite run: a workload too big for the run's time limit, with every client still
/// acquiring when it stops, leaves T2 *bounded* (neither a pass nor a violation; `sim` exits 3),
/// where it was once a violation; a holder paused past the whole run leaves its waiters stuck,
/// which stays a violation. (The deadlock above is the other stuck case.)
#[test]
fn t2_at_the_time_limit_is_bounded_while_clients_progress_and_violated_when_stuck() {
    let overloaded = SimOptions {
        knobs: Box::new(Knobs {
            clients: Some(16),
            acquisitions: Some(10_000),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    for algorithm in BOTH {
        let outcome = run(&build("contention", 0, algorithm, &overloaded).unwrap(), 0, false);
        let t2 = outcome.verdicts.check("T2");
        let why = reproduce(
            "t2_at_the_time_limit_is_bounded_while_clients_progress_and_violated_when_stuck",
            &outcome,
            " --clients 16 --acquisitions 10000",
        );
        assert_eq!(t2.verdict, ClaimVerdict::Bounded, "{why}");
        assert!(t2.detail.contains("time limit came first"), "{why}");
        // (The old lock's C-release may fail here: its documented limit, not T2's business.)
        assert!(
            outcome.verdicts.any_bounded() && outcome.verdicts.passed("T1-belief"),
            "{why}"
        );
        let (_, open) = outcome
            .verdicts
            .longest_open_attempt
            .clone()
            .expect("clients were trying");
        assert!(open < outcome.sim_time / 2, "{why}");
        assert!(outcome.verdicts.acquisitions > 1000, "{why}");
    }
    let paused_for_ever = SimOptions {
        knobs: Box::new(Knobs {
            ttl_s: Some(100_000),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    let outcome = run(
        &build("pause-at-rewrite", 0, Algorithm::Queue, &paused_for_ever).unwrap(),
        0,
        false,
    );
    let t2 = outcome.verdicts.check("T2");
    assert!(
        t2.verdict == ClaimVerdict::Violated && t2.detail.contains("stuck"),
        "{}",
        reproduce(
            "t2_at_the_time_limit_is_bounded_while_clients_progress_and_violated_when_stuck",
            &outcome,
            " --ttl-s 100000"
        )
    );
}

/// C-wait: `lock()` with `max_wait_ms` gives up within `contract::gave_up_within_ms` of
/// starting, at the contract's fault-free request time: its backoff and polls end at the
/// deadline. Before 2026-11-28 the old algorithm's backoff ran to its end, and a call told to
/// wait 300 ms returned after 1.3 s (the 1 s owner backoff), which this test catches (bound
/// 1.1 s).
#[test]
fn c_wait_lock_with_max_wait_gives_up_within_its_bound() {
    use cassalock_sim::trace::What;
    let deadline = SimOptions {
        knobs: Box::new(Knobs {
            clients: Some(16),
            max_wait_ms: Some(300),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    for algorithm in BOTH {
        for seed in seeds(0..3) {
            let config = build("contention", seed, algorithm, &deadline).unwrap();
            let bound_ms = cassalock::algo::contract::gave_up_within_ms(
                config.acquire_kind(),
                &config.lock_config().expect("valid settings"),
                cassalock_sim::contract::FAULT_FREE_REQUEST_MS,
            )
            .expect("a deadline");
            let outcome = run(&config, seed, false);
            let mut started = std::collections::BTreeMap::new();
            let (mut give_ups, mut longest) = (0, Duration::ZERO);
            for record in &outcome.records {
                match &record.what {
                    What::Waiting { .. } => {
                        started.insert(record.node.clone(), record.at);
                    }
                    What::Lock(cassalock::LockEvent::NotAcquired {
                        outcome: cassalock::algo::Acquire::TimedOut,
                        ..
                    }) => {
                        give_ups += 1;
                        longest = longest.max(record.at - started[&record.node]);
                    }
                    _ => {}
                }
            }
            let why = reproduce(
                "c_wait_lock_with_max_wait_gives_up_within_its_bound",
                &outcome,
                " --clients 16 --max-wait-ms 300",
            );
            assert!(give_ups > 100, "{give_ups} give-ups{why}");
            assert!(
                longest <= Duration::from_millis(bound_ms),
                "a call gave up {longest:?} after it began, bound {bound_ms} ms{why}"
            );
        }
    }
}

/// A sweep (summary run) and `replay` (detailed run) of one seed are one run with one set of
/// verdicts: the oracles may not lean on what only a detailed run records. The K3 mutant with
/// reused ids is here because its oracle once did (the renewal requests), and judged the next
/// acquisition's own cell in sweeps.
#[test]
fn a_detailed_run_and_a_summary_run_of_one_seed_have_one_trace_hash() {
    let k3 = SimOptions {
        k3: true,
        knobs: Box::new(Knobs {
            reuse_thread_ids: Some(true),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    for (scenario, seed, algorithm, options) in [
        ("contention", 3, Algorithm::Queue, SimOptions::default()),
        ("loss", 3, Algorithm::Queue, SimOptions::default()),
        ("renew-race", 0, Algorithm::Old, k3.clone()),
        ("renew-race", 0, Algorithm::Queue, k3.clone()),
        ("renew-race", 58, Algorithm::Old, k3),
    ] {
        let config = build(scenario, seed, algorithm, &options).expect("a known scenario");
        let summary = run(&config, seed, false);
        let detailed = run(&config, seed, true);
        assert!(
            detailed.records.len() > summary.records.len(),
            "{scenario}: replay records more"
        );
        assert_eq!(
            detailed.trace_hash, summary.trace_hash,
            "{scenario} seed {seed}: replay --summary and replay print one hash"
        );
        assert_eq!(
            detailed.verdicts.to_string(),
            summary.verdicts.to_string(),
            "{scenario} seed {seed}, {}: a sweep and replay give one set of verdicts",
            algorithm.name()
        );
        if scenario == "renew-race" && algorithm == Algorithm::Queue {
            assert!(
                !summary.verdicts.passed("K3"),
                "the queue lock's K3 mutant with reused ids breaks K3 on seed 0: {}",
                summary.verdicts
            );
        }
    }
}

/// Planned faults that never fired are counted (sim prints them; such runs did not test them):
/// a fault planned after the run's end counts, and a run without injected faults has none.
#[test]
fn planned_faults_that_never_fired_are_counted() {
    let plain = build("contention", 0, Algorithm::Queue, &SimOptions::default()).expect("a known scenario");
    assert_eq!(run(&plain, 0, false).verdicts.faults_unfired, 0);
    let mut unfired_runs = 0;
    for seed in 0..30 {
        let config = build("swarm", seed, Algorithm::Queue, &SimOptions::default()).expect("a known scenario");
        let outcome = run(&config, seed, false);
        let after_the_end = config.faults.iter().filter(|f| f.at >= outcome.sim_time).count();
        assert!(outcome.verdicts.faults_unfired >= after_the_end, "seed {seed}");
        assert!(outcome.verdicts.faults_unfired <= config.faults.len(), "seed {seed}");
        unfired_runs += usize::from(outcome.verdicts.faults_unfired > 0);
    }
    assert!(
        unfired_runs > 0,
        "no swarm run of seeds 0..30 left a planned fault unfired"
    );
}

#[test]
fn a_run_is_determined_by_its_seed() {
    for (scenario, seed) in [("contention", 7), ("swarm", 3), ("pause", 1)] {
        let config = build(scenario, seed, Algorithm::Queue, &SimOptions::default()).unwrap();
        let first = run(&config, seed, true);
        let second = run(&config, seed, true);
        assert_eq!(first.records, second.records, "{scenario} seed {seed}: two runs differ");
        assert_eq!(first.trace_hash, second.trace_hash);
        let other = run(&config, seed + 1, true);
        assert_ne!(
            first.trace_hash, other.trace_hash,
            "different seeds should give different runs"
        );
    }
    // madsim's own check: the same random draws at the same times, twice.
    let config = build("swarm", 5, Algorithm::Old, &SimOptions::default()).unwrap();
    check_determinism(&config, 5);
}

#[test]
fn bad_scenarios_are_refused() {
    let error = build("nope", 0, Algorithm::Queue, &SimOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("unknown scenario") && error.contains("contention"),
        "{error}"
    );
}

#[test]
fn the_timeline_renders_lanes_and_violations() {
    let config = build("pause", 0, Algorithm::Queue, &SimOptions::default()).unwrap();
    let outcome = run(&config, 0, false);
    // Pause (K1) seed 0: what a failure prints, then the whole rendered trace.
    pin(
        expect_file!["golden/pause-k1-seed-0-queue.txt"],
        &format!(
            "{}\n\ntrace:\n{}",
            printed(&outcome, ""),
            cassalock_sim::trace::render(&outcome.records)
        ),
    );
    let path = std::env::temp_dir().join(format!("cassalock-timeline-{}.svg", std::process::id()));
    cassalock_sim::timeline::write_svg(&outcome, &path).expect("written");
    let svg = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("T1-belief VIOLATED"), "the title carries the verdicts");
    for lane in ["c0", "c1", "c2", "r0", "r1", "r2"] {
        assert!(svg.contains(&format!(">\n{lane}\n</text>")), "lane {lane} is labelled");
    }
    // One translucent red band per overlap of beliefs, and the legend's key.
    let bands = svg.matches("opacity=\"0.25\" fill=\"#FF0000\"").count();
    assert_eq!(
        bands,
        outcome.verdicts.overlaps.len() + 1,
        "one red band per T1-belief overlap"
    );
    assert!(bands > 0);
}

/// A run is a function of (scenario, seed, options) alone, not of what ran before it in the
/// process. Two leaks were found and closed: std's HashMap keys are per-thread state (runs now
/// get a fresh thread each), and an unbiased `tokio::select!` drew its branch order from
/// tokio's own generator, which no seed controls (the renewal task's select is now biased).
/// This configuration (32 TryGetLock clients, seed 0) gave two different traces, alternating
/// from run to run, before the second fix.
#[test]
fn a_run_does_not_depend_on_the_runs_before_it_in_the_process() {
    use cassalock_sim::scenario::{fairness, ClientMode, FairnessParams};
    let params = FairnessParams {
        algorithm: Algorithm::Queue,
        mode: ClientMode::TryGetLock,
        threads: 32,
        skew_ms: 0,
        global_time: false,
        hold_ms: (5, 20),
        think_ms: (0, 50),
        duration: Duration::from_secs(20),
    };
    let target = fairness(&params, 0);
    let first = run(&target, 0, false).trace_hash;
    let other = build("swarm", 11, Algorithm::Old, &SimOptions::default()).expect("known");
    run(&other, 11, false);
    for attempt in 1..=2 {
        let again = run(&target, 0, false).trace_hash;
        assert_eq!(
            first, again,
            "run {attempt} of the same (config, seed) gave a different trace"
        );
    }
}

/// C-free (docs/contract.md). The listings as written leave a failed call's cells to the TTL:
/// with message loss, a waiter that gave up leaves its queue cell, and the next caller waits for
/// it to expire. The library deletes what a failed call wrote before the call returns: no
/// violation on the same seeds (0 of 1000 in `cassalock sim --scenario loss --seeds 0..1000`).
#[test]
fn c_free_the_listings_leave_a_failed_call_s_cells_the_library_cleans_them_up() {
    let thesis = SimOptions {
        thesis_listings: true,
        ..SimOptions::default()
    };
    for algorithm in BOTH {
        sometimes(
            "c_free_the_listings_leave_a_failed_call_s_cells",
            "loss-c-free-thesis",
            "loss",
            algorithm,
            &thesis,
            " --thesis-listings",
            0..10,
            |o| !o.verdicts.passed("C-free"),
        );
    }
    always(
        "c_free_the_library_cleans_up",
        "loss",
        &SimOptions::default(),
        "",
        0..10,
        |o| passes(o, &["C-free", "T1-belief", "T2"]),
    );
}

/// C-try (docs/contract.md): Listing 7's step-10 loop makes a TryGetLock whose queue cell sorts
/// first, but landed after another thread took the lock, wait for that holder. Found with a
/// replica clock 54 s ahead (seed 272 of 300, `--thesis-listings`, on madsim's network): a
/// call of 68 requests and 3.6 s against the bound of 60. The library's bounded loop
/// (`Fixes::try_bounded_loop`) gives up after its turns: the same seed's longest call is 15
/// requests. It is rare: 1 seed in 3,000 on madsim's network, none in 0..20000 on the
/// cluster's queues (regressions/skew.seeds), so this case stays on madsim's network.
#[test]
fn c_try_listing_7_can_wait_for_another_owner_the_library_gives_up() {
    let on_madsim = || {
        Box::new(Knobs {
            network: Some(Network::Madsim),
            ..Knobs::default()
        })
    };
    let thesis = SimOptions {
        try_lock: true,
        thesis_listings: true,
        knobs: on_madsim(),
        ..SimOptions::default()
    };
    let seed = seeds(272..273).start;
    let config = build("skew", seed, Algorithm::Queue, &thesis).expect("a known scenario");
    let outcome = run(&config, seed, false);
    let flags = " --try-lock --thesis-listings --network madsim";
    assert!(
        !outcome.verdicts.passed("C-try"),
        "{}",
        reproduce(
            "c_try_listing_7_can_wait_for_another_owner_the_library_gives_up",
            &outcome,
            flags
        )
    );
    pin_printed("skew-c-try-seed-272-thesis-queue", &outcome, flags);
    let library = SimOptions {
        try_lock: true,
        knobs: on_madsim(),
        ..SimOptions::default()
    };
    let config = build("skew", seed, Algorithm::Queue, &library).expect("a known scenario");
    let outcome = run(&config, seed, false);
    assert!(
        outcome.verdicts.passed("C-try"),
        "{}",
        reproduce(
            "c_try_listing_7_can_wait_for_another_owner_the_library_gives_up",
            &outcome,
            " --try-lock --network madsim"
        )
    );
}

/// C-token (docs/contract.md): the listings' token, the queue column, goes down under clock
/// skew, and the resource then refuses the current holder's writes. The library's counter token
/// (src/algo/fence.rs) does not, except where two clients held the lock at once (skew, 100
/// seeds on the cluster's queues: 56 of 100 violated with the queue column for the queue lock;
/// with the counter 1, seed 1, a replica 35 s ahead, T1 broken in the same run: the documented
/// limit of any counter read by two holders at once).
#[test]
fn c_token_the_queue_column_breaks_under_skew_the_counter_does_not() {
    let thesis = SimOptions {
        thesis_listings: true,
        ..SimOptions::default()
    };
    sometimes(
        "c_token_the_queue_column_breaks_under_skew_the_counter_does_not",
        "skew-c-token-thesis",
        "skew",
        Algorithm::Queue,
        &thesis,
        " --thesis-listings",
        0..5,
        |o| !o.verdicts.passed("C-token"),
    );
    let range = seeds(0..20);
    let column_breaks = runs("skew", Algorithm::Queue, &thesis, range.clone())
        .iter()
        .filter(|o| !o.verdicts.passed("C-token"))
        .count();
    let counter_breaks: Vec<RunOutcome> = runs("skew", Algorithm::Queue, &SimOptions::default(), range.clone())
        .into_iter()
        .filter(|o| !o.verdicts.passed("C-token"))
        .collect();
    if range.end - range.start == 20 {
        // 10 of 20 with the column, 1 (seed 1) with the counter.
        assert!(
            column_breaks >= 5,
            "the queue column broke C-token in only {column_breaks} of 20 seeds"
        );
        assert!(
            counter_breaks.len() <= 1,
            "the counter broke C-token in {} of 20 seeds",
            counter_breaks.len()
        );
    }
    for outcome in &counter_breaks {
        assert!(
            !outcome.verdicts.passed("T1-belief"),
            "the counter token dropped while mutual exclusion held{}",
            reproduce(
                "c_token_the_queue_column_breaks_under_skew_the_counter_does_not",
                outcome,
                ""
            )
        );
    }
}

/// The handoff workload: 16 clients x 10 acquisitions, holds of `hold_ms` back to
/// back, a message 1..2 us (the simulator's floor), the lease and poll settings given.
fn handoff_workload(
    hold_ms: u64,
    ttl_s: u32,
    poll_ms: Option<u64>,
    next_poll_ms: Option<u64>,
    paced_poll: Option<bool>,
) -> SimOptions {
    SimOptions {
        knobs: Box::new(Knobs {
            clients: Some(16),
            acquisitions: Some(10),
            hold_ms: Some(MsRange {
                lo: hold_ms,
                hi: hold_ms,
            }),
            think_ms: Some(MsRange { lo: 0, hi: 0 }),
            ttl_s: Some(ttl_s),
            renew_every_ms: Some(u64::from(ttl_s) * 500),
            poll_ms,
            message_latency_us: Some(MsRange { lo: 1, hi: 2 }),
            next_poll_ms,
            paced_poll,
            ..Knobs::default()
        }),
        ..SimOptions::default()
    }
}

/// (acquisitions per simulated second, store requests per acquisition) of
/// [`handoff_workload`] over seeds 0..3, every claim holding in every run.
fn handoff_figures(algorithm: Algorithm, options: &SimOptions) -> (f64, f64) {
    let (mut acquisitions, mut requests, mut seconds) = (0u64, 0u64, 0f64);
    for outcome in runs("contention", algorithm, options, 0..3) {
        if let Err(why) = passes(
            &outcome,
            &["T1-belief", "T1-resource", "C-token", "T2", "K3", "C-release", "C-free"],
        ) {
            panic!("{why}\n{}", printed(&outcome, ""));
        }
        assert_eq!(outcome.verdicts.acquisitions, 160, "{}", outcome.verdicts);
        acquisitions += 160;
        requests += outcome.requests;
        seconds += outcome.sim_time.as_secs_f64();
    }
    (acquisitions as f64 / seconds, requests as f64 / acquisitions as f64)
}

/// The handoff variants on the workload of docs/findings-handoff.md's table (holds of 10 ms, TTL
/// 10 s), in simulated time, so the figures are exact: the paced poll makes fewer store
/// requests an acquisition than the next-in-line poll, fewer than the old lock, and still
/// outruns the old lock; every claim holds in every run.
#[test]
fn the_paced_poll_reads_less_than_next_in_line_and_outruns_the_old_lock() {
    let knobs = |next_poll_ms, paced_poll| handoff_workload(10, 10, None, next_poll_ms, paced_poll);
    let old = handoff_figures(Algorithm::Old, &knobs(None, None));
    let next = handoff_figures(Algorithm::Queue, &knobs(Some(5), None));
    let paced = handoff_figures(Algorithm::Queue, &knobs(Some(5), Some(true)));
    let table = format!("old {old:.2?}, next in line {next:.2?}, paced {paced:.2?} (acq/s, requests/acq)");
    assert!(paced.1 < 0.9 * next.1, "{table}");
    assert!(paced.1 < old.1, "{table}");
    assert!(paced.0 > 1.3 * old.0, "{table}");
    assert!(paced.0 > 0.9 * next.0, "{table}");
}

/// Found on the real cluster (2026-11-28): where handoffs are much quicker than the
/// listing's poll, a paced waiter whose turn was overdue slept a whole poll and missed it, and
/// everyone behind it waited. docs/findings-handoff.md's calibrated workload (every timing x3: holds of
/// 30 ms, polls of 300 ms, next in line 15 ms, TTL 30 s), so that a handoff (about 86 ms) is
/// a third of a poll, as on the cluster: with the overdue waiter reading again after one
/// handoff, the paced poll outruns both the next-in-line poll and the old lock by more than
/// 1.3x (about 1.4x; with the listing's poll there, 6.48 acquisitions per simulated second
/// against 7.02 and 7.04 over these seeds: 0.92x). Exact figures in simulated time; every
/// claim holds in every run.
#[test]
fn an_overdue_paced_waiter_does_not_sleep_through_its_turn() {
    let knobs = |next_poll_ms, paced_poll| handoff_workload(30, 30, Some(300), next_poll_ms, paced_poll);
    let old = handoff_figures(Algorithm::Old, &knobs(None, None)).0;
    let next = handoff_figures(Algorithm::Queue, &knobs(Some(15), None)).0;
    let paced = handoff_figures(Algorithm::Queue, &knobs(Some(15), Some(true))).0;
    let table = format!("old {old:.2}, next in line {next:.2}, paced {paced:.2} acq/s");
    assert!(paced > 1.3 * next, "{table}");
    assert!(paced > 1.3 * old, "{table}");
}

/// The long run: with `reuse_thread_ids` each client's acquisitions run under one
/// thread id (5 clients x 20 acquisitions, one at a time each), and every check still holds
/// in every run: the judges and oracles attribute cells and events to the acquisition that
/// last took the id (the `Reused` event), not to the first. The same seeds without reuse
/// give every acquisition a new id, and both locks are tried.
#[test]
fn reused_thread_ids_hold_every_check_under_contention() {
    let options = |reuse: bool| SimOptions {
        knobs: Box::new(Knobs {
            reuse_thread_ids: Some(reuse),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    for algorithm in [Algorithm::Queue, Algorithm::Old] {
        for reuse in [false, true] {
            for outcome in runs("contention", algorithm, &options(reuse), 0..3) {
                if let Err(why) = passes(&outcome, FAULT_FREE_CLAIMS) {
                    panic!("reuse {reuse}: {why}\n{}", printed(&outcome, ""));
                }
                let mut ids = std::collections::BTreeSet::new();
                let mut reused = 0;
                for record in &outcome.records {
                    match &record.what {
                        cassalock_sim::trace::What::Lock(cassalock::LockEvent::Acquired { thread, .. }) => {
                            ids.insert(thread.to_string());
                        }
                        cassalock_sim::trace::What::Lock(cassalock::LockEvent::Reused { .. }) => reused += 1,
                        _ => {}
                    }
                }
                let acquisitions = outcome.verdicts.acquisitions;
                assert_eq!(acquisitions, 100, "{}", outcome.verdicts);
                if reuse {
                    assert_eq!(ids.len(), 5, "{algorithm:?}: one thread id a client");
                    assert_eq!(reused, 95, "{algorithm:?}: every acquisition but each client's first");
                } else {
                    assert_eq!(ids.len(), 100, "{algorithm:?}: a thread id an acquisition");
                    assert_eq!(reused, 0);
                }
            }
        }
    }
}

/// The long run: with `queue_read_from_last_hold` (and reused thread ids) the queue
/// lock's head reads start at the client's last hold instead of the row's start once it has
/// held, and every check holds in every run.
#[test]
fn reading_the_queue_from_the_last_hold_holds_every_check_under_contention() {
    let options = SimOptions {
        knobs: Box::new(Knobs {
            reuse_thread_ids: Some(true),
            queue_read_from_last_hold: Some(true),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    for seed in 0..3 {
        let config = build("contention", seed, Algorithm::Queue, &options).expect("a known scenario");
        let outcome = run(&config, seed, true);
        if let Err(why) = passes(
            &outcome,
            &["T1-belief", "T1-resource", "C-token", "T2", "K3", "C-release", "C-free"],
        ) {
            panic!("{why}\n{}", printed(&outcome, ""));
        }
        let (mut from_start, mut from_hold) = (0, 0);
        for record in &outcome.records {
            if let cassalock_sim::trace::What::Lock(cassalock::LockEvent::Request {
                request: cassalock::store::StoreOp::ReadSlice { row, start, .. },
                ..
            }) = &record.what
            {
                if row.starts_with("q:") {
                    if start.is_empty() {
                        from_start += 1;
                    } else {
                        from_hold += 1;
                    }
                }
            }
        }
        assert!(
            from_hold > from_start,
            "seed {seed}: {from_hold} queue reads from a last hold, {from_start} from the row's start"
        );
        assert!(
            from_start >= 5,
            "seed {seed}: each client's first acquisition reads from the start"
        );
    }
}

/// T2 at any renewal interval: a queue waiter's refresh of its own queue cell falling due
/// before each rewrite is answered (intervals of 1-50 ms against round trips of 20-60 ms) must
/// not keep it from reading the head. Each waiter once rewrote its cell for ever and no client
/// acquired. Swept for both locks and the queue lock's three polls, seeds 0..3.
#[test]
fn t2_a_renewal_interval_below_the_round_trip_does_not_starve_a_waiter() {
    let polls: [(Algorithm, Option<u64>, Option<bool>, &str); 4] = [
        (Algorithm::Old, None, None, ""),
        (Algorithm::Queue, None, None, ""),
        (Algorithm::Queue, Some(5), None, " --next-poll-ms 5"),
        (
            Algorithm::Queue,
            Some(5),
            Some(true),
            " --next-poll-ms 5 --paced-poll true",
        ),
    ];
    for renew_every_ms in [1, 2, 5, 10, 20, 50] {
        for (algorithm, next_poll_ms, paced_poll, poll_flags) in polls {
            let options = SimOptions {
                knobs: Box::new(Knobs {
                    clients: Some(5),
                    acquisitions: Some(3),
                    ttl_s: Some(2),
                    renew_every_ms: Some(renew_every_ms),
                    message_latency_us: Some(MsRange { lo: 10_000, hi: 30_000 }),
                    next_poll_ms,
                    paced_poll,
                    ..Knobs::default()
                }),
                ..SimOptions::default()
            };
            let flags = format!(
                " --clients 5 --acquisitions 3 --ttl-s 2 --renew-every-ms {renew_every_ms} --message-latency-us 10000..30000{poll_flags}"
            );
            for outcome in runs("contention", algorithm, &options, seeds(0..3)) {
                let judged = passes(&outcome, &["T1-belief", "T2"]).and_then(|()| {
                    (outcome.verdicts.acquisitions == 15)
                        .then_some(())
                        .ok_or(format!("{} acquisitions, not 15", outcome.verdicts.acquisitions))
                });
                if let Err(why) = judged {
                    panic!(
                        "renewing every {renew_every_ms} ms: {why}{}",
                        reproduce(
                            "t2_a_renewal_interval_below_the_round_trip_does_not_starve_a_waiter",
                            &outcome,
                            &flags
                        )
                    );
                }
            }
        }
    }
}
