//! The outside lock's verdicts, as cassalock's model checker and simulator give them: each
//! assertion would fail if the harness did not run this crate's machines (a lock that never
//! acquires holds T1 trivially, and fails T2; one that ignores the register fails T1).

use std::sync::Arc;

use cassalock::algo::RetryPolicy;
use cassalock_models::check::{check, Limits, Verdict};
use cassalock_models::family::FamilyModel;
use cassalock_models::Fault;
use cassalock_sim::family::scenario::{fault_scenarios, FamilyScenario};
use cassalock_sim::family::sim_lock::{LockKind, Simulated};
use cassalock_sim::family::{run_family, Claim, Verdict as SimVerdict};
use own_lock::{CasLeaseConfig, CasLeaseLock};

fn model_verdict(fault: Fault, claim: &str) -> Verdict {
    let model = FamilyModel::<CasLeaseLock>::new(2, 1, false, fault);
    let report = check(
        &model,
        Limits {
            max_seconds: 120,
            ..Limits::default()
        },
    );
    assert!(
        report.stopped_by.is_none(),
        "the check ran to its end: {}",
        report.title
    );
    report.row(claim).verdict.clone()
}

fn scenario(name: &str, seed: u64) -> FamilyScenario {
    let config = CasLeaseConfig {
        lease_s: 2,
        retry_every_ms: 20,
        max_wait_ms: None,
        retry: RetryPolicy::default(),
    };
    let lock: LockKind = Arc::new(Simulated::<CasLeaseLock>::new(config, 2000));
    let scenario = fault_scenarios(lock, seed)
        .into_iter()
        .find(|scenario| scenario.name == name)
        .expect("a fault scenario of that name");
    scenario.check().expect("the scenario's settings are valid");
    scenario
}

#[test]
fn t1_belief_holds_in_the_model_without_faults_and_every_client_acquires_in_the_simulator() {
    assert!(matches!(
        model_verdict(Fault::None, "T1-belief"),
        Verdict::HoldsWithinClockBound(_)
    ));
    for seed in 0..5 {
        let outcome = run_family(&scenario("contention", seed), seed, false);
        assert_eq!(
            outcome.verdicts.get(Claim::T1Belief),
            &SimVerdict::NoViolation,
            "seed {seed}"
        );
        assert_eq!(outcome.verdicts.get(Claim::T2), &SimVerdict::NoViolation, "seed {seed}");
        let acquired = outcome
            .events
            .iter()
            .filter(|event| matches!(event.what, cassalock_judge::event::What::Acquired { .. }))
            .count();
        assert_eq!(
            acquired,
            outcome.scenario.clients * 3,
            "seed {seed}: every client acquired 3 times"
        );
    }
}

#[test]
fn a_holder_paused_past_its_lease_breaks_t1_resource_in_the_model_and_the_simulator() {
    assert_eq!(model_verdict(Fault::Pause, "T1-resource"), Verdict::Violated);
    let outcome = run_family(&scenario("pause", 0), 0, false);
    assert!(outcome.verdicts.get(Claim::T1Resource).is_violated());
}

#[test]
fn a_server_that_restarts_empty_breaks_t1_belief_in_the_model_and_the_simulator() {
    assert_eq!(model_verdict(Fault::Restart, "T1-belief"), Verdict::Violated);
    let outcome = run_family(&scenario("server-restart", 0), 0, false);
    assert!(outcome.verdicts.get(Claim::T1Belief).is_violated());
}

/// The scenarios of our own in `scenarios.toml`, read as `--scenario-file` reads them: a holder
/// cut off from its server keeps every claim (its release compares its own token), and a
/// server clock step past the lock's 1 s margin breaks T1-belief, the claim that scenario
/// exists to test.
#[test]
fn t1_belief_the_scenario_file_s_partition_is_survived_and_its_clock_step_past_the_margin_is_not() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios.toml");
    let text = std::fs::read_to_string(path).expect("scenarios.toml is beside the crate");
    let named = cassalock_sim::family::scenario_file::load(
        <CasLeaseLock as cassalock::algo::family::FamilyLock>::NAME,
        path,
        &text,
        own_lock::scenarios::lock_of_settings,
    )
    .expect("the file loads");
    let names: Vec<&str> = named.iter().map(|named| named.name).collect();
    assert_eq!(
        names,
        ["cas-lease-partition", "cas-lease-server-clock-jump-past-margin"]
    );
    for seed in 0..10 {
        let partition = run_family(&named[0].build(seed), seed, false);
        for (claim, verdict) in &partition.verdicts.claims {
            assert!(
                !matches!(verdict, SimVerdict::Violated(_)),
                "seed {seed}: {} {verdict:?}",
                claim.name()
            );
        }
        assert_eq!(
            partition.verdicts.get(Claim::T2),
            &SimVerdict::NoViolation,
            "seed {seed}"
        );
        let fast = run_family(&named[1].build(seed), seed, false);
        assert!(
            matches!(fast.verdicts.get(Claim::T1Belief), SimVerdict::Violated(_)),
            "seed {seed}: {:?}",
            fast.verdicts.claims
        );
    }
}
