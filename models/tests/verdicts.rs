//! The verdicts the model checker must keep giving, with their unique-state counts pinned: a
//! change in behaviour (of a machine, of the store rules, of a model) shows up here as a diff.
//! Larger bounds go through `cassalock check`.

use cassalock_models::check::{Limits, Report, Verdict};
use cassalock_models::{build, Fault, ModelName, Mutant, Spec};

fn spec(model: ModelName, fault: Fault) -> Spec {
    let mut spec = Spec::new(model);
    spec.fault = fault;
    spec
}

fn run(spec: &Spec, limits: Limits) -> Report {
    let report = build(spec).expect("a valid spec").check(limits);
    assert!(report.internal_errors.is_empty(), "{:?}", report.internal_errors);
    report
}

fn full(spec: &Spec) -> Report {
    run(spec, Limits::default())
}

/// The shortest counterexample to one claim.
fn first_violation(spec: &Spec, claim: &str) -> Report {
    let limits = Limits {
        stop_at_first_violation: true,
        only_claim: Some(claim.to_owned()),
        ..Limits::default()
    };
    let report = run(spec, limits);
    assert_eq!(report.row(claim).verdict, Verdict::Violated, "{report}");
    report
}

fn verdicts(report: &Report) -> Vec<(String, String)> {
    report
        .rows
        .iter()
        .map(|row| {
            (
                row.property.split_whitespace().next().unwrap().to_owned(),
                row.verdict.to_string(),
            )
        })
        .collect()
}

fn pinned(report: &Report, expected: &[(&str, &str)], states: usize) {
    let expected: Vec<(String, String)> = expected.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(verdicts(report), expected, "{report}");
    assert!(report.complete, "the whole state space was explored");
    assert_eq!(report.stateright_states, states, "stateright's unique states");
    assert_eq!(report.graph_states, states, "our graph's unique states");
}

#[test]
fn l1_holds_for_two_and_three_writers() {
    pinned(
        &full(&Spec::new(ModelName::Lemma)),
        &[("L1", "holds"), ("L1-not-vacuous", "reachable")],
        17,
    );
    let mut three = Spec::new(ModelName::Lemma);
    three.threads = Some(3);
    pinned(&full(&three), &[("L1", "holds"), ("L1-not-vacuous", "reachable")], 187);
}

#[test]
fn t1_t2_f_hold_for_getlock_3_threads_x_2_acquisitions() {
    let report = full(&Spec::new(ModelName::GetLock));
    pinned(
        &report,
        &[
            ("T1", "holds"),
            ("F-order", "holds"),
            ("F-overtakes", "holds"),
            ("T2", "holds"),
        ],
        5181,
    );
}

#[test]
fn t3_t4_hold_for_trygetlock_3_threads() {
    // The thesis's T4 holds in this model: whenever several threads call TryGetLock on a free
    // lock, one gets it (no terminal state and no fair cycle without an acquisition).
    pinned(
        &full(&Spec::new(ModelName::TryGetLock)),
        &[("T3", "holds"), ("T4", "holds")],
        4937,
    );
}

#[test]
fn old_algorithm_keeps_t1_but_starves_with_a_lasso() {
    let report = full(&Spec::new(ModelName::Old));
    pinned(
        &report,
        &[("T1", "holds"), ("F-overtakes", "VIOLATED"), ("T2", "VIOLATED")],
        372,
    );
    let t2 = report.row("T2");
    let trace = t2.trace.as_ref().expect("a lasso").to_string();
    assert!(
        trace.contains("-- the cycle:") && trace.contains("repeat for ever"),
        "{trace}"
    );
    assert!(
        trace.contains("L3.14 not alone: delete own shadow cell"),
        "the two threads keep meeting in the shadow row:\n{trace}"
    );
    assert!(t2.detail.as_ref().unwrap().contains("fair cycle"));
}

#[test]
fn t5_holds_for_any_clock_order_and_s1_freezes_global_time() {
    pinned(
        &full(&Spec::new(ModelName::GlobalTime)),
        &[("T5", "holds"), ("T5-race", "reachable")],
        1691,
    );
    let report = full(&spec(ModelName::GlobalTime, Fault::Crash));
    pinned(
        &report,
        &[
            ("T5", "holds within bound (clock <= 5 ticks)"),
            ("T5-race", "reachable"),
            ("S1", "reachable"),
        ],
        2720,
    );
    let (staleness, trace) = &report.figures[0];
    assert!(
        staleness.starts_with("S1 frozen GlobalTime stands ahead of the fastest live clock by: at most 4 ticks"),
        "{staleness}"
    );
    assert!(trace.as_ref().unwrap().to_string().contains("r0 CRASHES"));
}

#[test]
fn m1_with_delayed_enqueue_breaks_t1_but_the_real_check_keeps_it() {
    let mut m1 = spec(ModelName::GetLock, Fault::DelayedEnqueue);
    m1.mutant = Some(Mutant::M1);
    let report = first_violation(&m1, "T1");
    let trace = report.row("T1").trace.as_ref().unwrap().to_string();
    assert!(
        trace.contains("MUTANT M1") && trace.contains("holders: t0 AND t1"),
        "{trace}"
    );
    // Without the mutant, delayed enqueue only breaks the queue order.
    let report = full(&spec(ModelName::GetLock, Fault::DelayedEnqueue));
    pinned(
        &report,
        &[
            ("T1", "holds"),
            ("F-order", "VIOLATED"),
            ("F-overtakes", "VIOLATED"),
            ("T2", "holds"),
        ],
        8745,
    );
}

#[test]
fn s2_clocks_a_ttl_apart_break_t1() {
    let report = first_violation(&spec(ModelName::GetLock, Fault::TtlSkew), "T1");
    let trace = report.row("T1").trace.as_ref().unwrap().to_string();
    assert!(
        trace.contains("coordinator clock 3") && trace.contains("t0 AND t1"),
        "{trace}"
    );
}

#[test]
fn k1_a_paused_holder_still_believes_and_only_fencing_prevents_damage() {
    let pause = spec(ModelName::GetLock, Fault::Pause);
    let report = first_violation(&pause, "T1");
    assert!(report.row("T1").trace.as_ref().unwrap().to_string().contains("PAUSED"));
    // The damage: without fencing the resource takes the paused holder's stale write ...
    first_violation(&pause, "T1-resource");
    // ... with fencing it refuses it, in every reachable state.
    let mut fenced = pause.clone();
    fenced.fencing = true;
    let report = run(
        &fenced,
        Limits {
            only_claim: Some("T1-resource".into()),
            ..Limits::default()
        },
    );
    assert_eq!(
        report.row("T1-resource").verdict,
        Verdict::HoldsWithinClockBound(4),
        "{report}"
    );
}

#[test]
fn k3_release_without_waiting_leaves_the_lock_taken_until_the_ttl() {
    let mut k3 = Spec::new(ModelName::GetLock);
    k3.mutant = Some(Mutant::K3);
    let report = first_violation(&k3, "K3");
    let trace = report.row("K3").trace.as_ref().unwrap().to_string();
    assert!(
        trace.contains("did NOT wait") && trace.contains("renewal: rewrite own main cell"),
        "{trace}"
    );
    // The default release (waiting for renewal) never leaves a released lock taken.
    let report = run(&spec(ModelName::GetLock, Fault::Crash), Limits::default());
    assert_eq!(report.row("K3").verdict, Verdict::HoldsWithinClockBound(4), "{report}");
    assert_eq!(report.row("T1").verdict, Verdict::HoldsWithinClockBound(4), "{report}");
}

#[test]
fn a_crashed_holders_lease_frees_the_lock_for_old_and_trygetlock_too() {
    // A contest slower than the TTL used to let two threads in (a shadow or main cell expiring
    // mid-contest); the machines now refuse such late successes.
    for model in [ModelName::Old, ModelName::TryGetLock] {
        let report = run(&spec(model, Fault::Crash), Limits::default());
        let claim = if model == ModelName::Old { "T1" } else { "T3" };
        assert_eq!(report.row(claim).verdict, Verdict::HoldsWithinClockBound(4), "{report}");
    }
}

#[test]
fn a_state_budget_is_reported_as_bounded_never_as_holds() {
    let report = build(&Spec::new(ModelName::GetLock)).unwrap().check(Limits {
        max_states: 1000,
        ..Limits::default()
    });
    assert!(!report.complete);
    for row in &report.rows {
        assert!(
            matches!(row.verdict, Verdict::Bounded(_)),
            "{}: {}",
            row.property,
            row.verdict
        );
    }
}

#[test]
fn bad_specs_are_refused_with_a_reason() {
    let refused = |edit: fn(&mut Spec)| {
        let mut spec = Spec::new(ModelName::GetLock);
        edit(&mut spec);
        build(&spec).err().expect("refused").0
    };
    assert!(refused(|s| s.threads = Some(0)).contains("at least 1"));
    assert!(refused(|s| s.threads = Some(9)).contains("outside 1..=4"));
    assert!(refused(|s| {
        s.fault = Fault::DelayedEnqueue;
        s.threads = Some(3);
    })
    .contains("over 4"));
    let mut old_m1 = Spec::new(ModelName::Old);
    old_m1.mutant = Some(Mutant::M1);
    assert!(build(&old_m1).err().unwrap().0.contains("no queue"));
    let mut lemma = Spec::new(ModelName::Lemma);
    lemma.acquisitions = Some(1);
    assert!(build(&lemma).is_err());
}
