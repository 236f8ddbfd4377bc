//! T1-server on the row locks: the simulator reads each lock's main row on every replica and
//! the one judge compares whom the row names (the lock's own rule) with who believes it holds.
//! These tests pin what the claim adds to T1-belief: a holder whose cell some read would miss
//! is seen before, or without, a second holder.
#![cfg(madsim)]

use cassalock::driver::Algorithm;
use cassalock_judge::ClaimVerdict;
use cassalock_sim::run::{run, RunOutcome};
use cassalock_sim::scenario::{build, SimOptions};
use cassalock_sim::trace::What;

const BOTH: [Algorithm; 2] = [Algorithm::Old, Algorithm::Queue];

fn outcome(scenario: &str, algorithm: Algorithm, options: &SimOptions, seed: u64) -> RunOutcome {
    let config = build(scenario, seed, algorithm, options).expect("a known scenario");
    run(&config, seed, false)
}

fn t1_server(outcome: &RunOutcome) -> ClaimVerdict {
    outcome.verdicts.check("T1-server").verdict
}

fn replay(outcome: &RunOutcome) -> String {
    format!(
        "cassalock replay --scenario {} --seed {} --algorithm {}",
        outcome.config.scenario,
        outcome.seed,
        outcome.config.algorithm.name()
    )
}

#[test]
fn t1_server_holds_without_faults_for_lock_and_try_lock_callers() {
    for algorithm in BOTH {
        for try_lock in [false, true] {
            let options = SimOptions {
                try_lock,
                ..SimOptions::default()
            };
            for seed in 0..6 {
                let run = outcome("contention", algorithm, &options, seed);
                assert_eq!(
                    t1_server(&run),
                    ClaimVerdict::Holds,
                    "{}: {}",
                    replay(&run),
                    run.verdicts.check("T1-server").detail
                );
                // Read at least once per acquisition: the reading after each `acquired`.
                let readings = run
                    .records
                    .iter()
                    .filter(|record| matches!(record.what, What::ServerHolder { .. }))
                    .count();
                assert!(
                    readings >= run.verdicts.acquisitions && readings > 0,
                    "{}: {readings} readings for {} acquisitions",
                    replay(&run),
                    run.verdicts.acquisitions
                );
            }
        }
    }
}

#[test]
fn t1_server_sees_a_cell_one_replica_misses_at_consistency_one_without_a_second_holder() {
    // At consistency ONE a holder's cell may stand on one replica only: a read coordinated
    // elsewhere misses it. T1-belief needs a contender to take the lock meanwhile; T1-server
    // sees the exposure itself.
    let found = (0..40)
        .map(|seed| outcome("cl-one", Algorithm::Queue, &SimOptions::default(), seed))
        .find(|run| t1_server(run) == ClaimVerdict::Violated && run.verdicts.passed("T1-belief"));
    let run = found.expect("on seeds 0..40 of cl-one, a holder alone whose cell a read misses");
    let detail = &run.verdicts.check("T1-server").detail;
    assert!(detail.contains("named nobody"), "{}: {detail}", replay(&run));
}

#[test]
fn t1_server_names_nobody_from_the_instant_an_operator_deletes_the_rows() {
    for algorithm in BOTH {
        let run = outcome("rows-deleted", algorithm, &SimOptions::default(), 0);
        let deleted_at = run
            .records
            .iter()
            .find(|record| matches!(&record.what, What::Fault { begins: true, .. }))
            .map(|record| record.at)
            .expect("the delete fired");
        let first_nobody = run
            .records
            .iter()
            .find(|record| {
                matches!(&record.what, What::ServerHolder { threads, .. } if threads.is_empty())
                    && record.at >= deleted_at
            })
            .map(|record| record.at);
        assert_eq!(first_nobody, Some(deleted_at), "{}", replay(&run));
        let detail = &run.verdicts.check("T1-server").detail;
        let at_ms = format!("at {:.3} ms", deleted_at.as_secs_f64() * 1000.0);
        assert_eq!(t1_server(&run), ClaimVerdict::Violated, "{}: {detail}", replay(&run));
        assert!(
            detail.contains(&at_ms),
            "{}: {detail} (the delete at {at_ms})",
            replay(&run)
        );
    }
}

#[test]
fn t1_server_readings_change_no_other_verdict() {
    // The judge reads the readings for T1-server only: without them every other claim of a
    // run is judged the same.
    for (scenario, algorithm) in [
        ("swarm", Algorithm::Queue),
        ("swarm", Algorithm::Old),
        ("pause", Algorithm::Queue),
        ("cl-one", Algorithm::Old),
    ] {
        for seed in 0..4 {
            let run = outcome(scenario, algorithm, &SimOptions::default(), seed);
            let events = cassalock_sim::events::events(&run.config, &run.records);
            let without: Vec<_> = events
                .iter()
                .filter(|event| !matches!(event.what, cassalock_judge::event::What::ServerHolder { .. }))
                .cloned()
                .collect();
            assert!(without.len() < events.len(), "{}: no reading", replay(&run));
            let unread = cassalock_judge::rows::judge_record(&run.header, &without);
            for check in &run.verdicts.checks {
                let other = unread.check(check.claim);
                if check.claim == cassalock_judge::ClaimId::T1Server {
                    assert_eq!(other.verdict, ClaimVerdict::NotExercised, "{}", replay(&run));
                } else {
                    assert_eq!(
                        (check.verdict, &check.detail),
                        (other.verdict, &other.detail),
                        "{}: {}",
                        replay(&run),
                        check.claim
                    );
                }
            }
        }
    }
}
