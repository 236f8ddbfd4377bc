//! Redlock (3 masters) and Memcached's `add` lock in the family model (`models/src/family.rs`):
//! the verdict on every claim under each fault, with the unique-state counts pinned,
//! and the counterexamples' telling steps. (`SET NX PX`, the same model's third lock, has its
//! whole reports pinned in `redis_set_nx.rs`.)
//!
//! Redlock's worlds are large (half a million to 1.4 million states at 2 clients x 1
//! acquisition); its store-failure run (3.2 million) is left to `cassalock report matrix`.

mod pinning;

use cassalock::registry::Lock;
use cassalock_models::{build, Fault, ModelName, Mutant, Spec};
use pinning::{full, pinned, spec, trace};

const HOLDS: &str = "holds within bound (clock <= 4 ticks)";
const VIOLATED: &str = "VIOLATED";

/// The claims in the order the family model checks them: T1-belief, T1-resource, C-free,
/// C-release, T2 (always: no lock() gives up while the store answers), T2 (liveness).
fn verdicts(
    t1: &'static str,
    resource: &'static str,
    free: &'static str,
    release: &'static str,
    t2_always: &'static str,
) -> Vec<(&'static str, &'static str)> {
    vec![
        ("T1-belief", t1),
        ("T1-resource", resource),
        ("C-free", free),
        ("C-release", release),
        ("T2", t2_always),
        ("T2", HOLDS),
    ]
}

#[test]
fn redlock_without_faults_keeps_t1_but_lock_can_return_empty_handed_under_contention() {
    let report = full(&spec(ModelName::Lock(Lock::Redlock), Fault::None));
    pinned(&report, &verdicts(HOLDS, HOLDS, HOLDS, HOLDS, VIOLATED), 516_193);
    // Both clients split the masters, both attempts fail: lock() returns NotAcquired.
    assert!(trace(&report, "T2").contains("did not get the lock: NotAcquired"));
}

#[test]
fn redlock_breaks_t1_when_master_0_forgets_or_its_clock_jumps() {
    // Kleppmann's cases: a holder with a bare majority, one of whose masters loses its key.
    for (fault, what, states) in [
        (
            Fault::Restart,
            "master 0 RESTARTS at once without persistence",
            1_411_715,
        ),
        (
            Fault::ServerClockJump,
            "master 0's clock JUMPS forward by the TTL",
            1_476_587,
        ),
    ] {
        let report = full(&spec(ModelName::Lock(Lock::Redlock), fault));
        pinned(&report, &verdicts(VIOLATED, VIOLATED, HOLDS, HOLDS, VIOLATED), states);
        let t1 = trace(&report, "T1-belief");
        assert!(t1.contains(what), "{t1}");
        assert!(t1.contains("believe: t0 AND t1"), "{t1}");
    }
}

#[test]
fn redlock_a_pause_breaks_t1_resource_not_t1_belief() {
    let report = full(&spec(ModelName::Lock(Lock::Redlock), Fault::Pause));
    pinned(&report, &verdicts(HOLDS, VIOLATED, HOLDS, HOLDS, VIOLATED), 605_511);
    assert!(trace(&report, "T1-resource").contains("no fencing stops it"));
}

#[test]
fn go_redsync_extend_mutant_breaks_t1_where_the_written_extension_keeps_it() {
    let mut extend = spec(ModelName::Lock(Lock::Redlock), Fault::None);
    extend.extend = true;
    let report = full(&extend);
    pinned(&report, &verdicts(HOLDS, HOLDS, HOLDS, HOLDS, VIOLATED), 1_036_727);
    extend.mutant = Some(Mutant::GoRedsyncExtend);
    let report = full(&extend);
    pinned(
        &report,
        &verdicts(VIOLATED, VIOLATED, HOLDS, HOLDS, VIOLATED),
        1_078_415,
    );
    assert!(
        report.title.contains("mutant: an extension ignores the validity"),
        "{}",
        report.title
    );
    // The extension's round ended at tick 3, after the keys it renewed at tick 1 had run out
    // (through tick 3); the mutant believes in a whole TTL from the round's end.
    assert!(trace(&report, "T1-belief").contains("t0's lease now is valid while its clock < 4.98"));
}

#[test]
fn memcached_add_keeps_t1_without_faults_and_loses_it_to_a_restart_or_a_clock_jump() {
    let none = full(&spec(ModelName::Lock(Lock::Memcached), Fault::None));
    pinned(&none, &verdicts(HOLDS, HOLDS, HOLDS, HOLDS, HOLDS), 14_259);
    let pause = full(&spec(ModelName::Lock(Lock::Memcached), Fault::Pause));
    pinned(&pause, &verdicts(HOLDS, VIOLATED, HOLDS, HOLDS, HOLDS), 17_638);
    for (fault, what, states) in [
        (Fault::Restart, "the server RESTARTS (Memcached keeps nothing)", 49_164),
        (
            Fault::ServerClockJump,
            "the server's clock JUMPS forward by the TTL",
            54_180,
        ),
    ] {
        let report = full(&spec(ModelName::Lock(Lock::Memcached), fault));
        pinned(&report, &verdicts(VIOLATED, VIOLATED, HOLDS, HOLDS, HOLDS), states);
        assert!(trace(&report, "T1-belief").contains(what));
    }
}

#[test]
fn memcached_lost_requests_keep_t1_and_leave_nothing_behind() {
    let report = full(&spec(ModelName::Lock(Lock::Memcached), Fault::StoreFailure));
    let bounded = "bounded (the only counterexamples reach the model's last clock tick, where time stops)";
    let expected = [
        ("T1-belief", HOLDS),
        ("T1-resource", HOLDS),
        ("C-free", HOLDS),
        ("C-release", HOLDS),
        ("T2", HOLDS),
        ("T2", bounded),
    ];
    pinned(&report, &expected, 70_674);
}

#[test]
fn the_family_models_refuse_what_does_not_apply_to_them() {
    let refused = |spec: &Spec| build(spec).err().expect("refused").0;
    assert!(
        refused(&spec(ModelName::Lock(Lock::Redlock), Fault::Failover)).contains(
            "the redlock model supports --fault none, pause, store-failure, restart or server-clock-jump, not failover"
        )
    );
    assert!(refused(&spec(ModelName::Lock(Lock::Memcached), Fault::Skew)).contains("the memcached model supports"));
    let mut wrong = spec(ModelName::Lock(Lock::Memcached), Fault::None);
    wrong.mutant = Some(Mutant::NodeRedlockValidity);
    assert!(refused(&wrong).contains("does not apply to the memcached model"));
    let mut no_extend = spec(ModelName::Lock(Lock::Redlock), Fault::None);
    no_extend.mutant = Some(Mutant::GoRedsyncExtend);
    assert!(refused(&no_extend).contains("add --extend"));
    let mut cassandra = spec(ModelName::Lock(Lock::Queue), Fault::None);
    cassandra.mutant = Some(Mutant::NodeRedlockValidity);
    assert!(refused(&cassandra).contains("use --model redlock"));
}

/// Each client bug is planted by exactly one family model, which the thesis's models name when
/// they refuse it, and which takes it (with `--extend` where the bug is the extension's).
#[test]
fn every_client_bug_is_planted_by_one_model_and_the_refusal_names_it() {
    let planters = |mutant: Mutant| {
        cassalock_models::family::registered_models()
            .iter()
            .filter(|model| model.plants(mutant))
            .map(|model| model.name)
            .collect::<Vec<_>>()
    };
    let mut client_bugs = 0;
    for mutant in Mutant::ALL {
        let planted_by = planters(mutant);
        if matches!(mutant, Mutant::M1 | Mutant::K3 | Mutant::M4) {
            assert!(
                planted_by.is_empty(),
                "{} is the thesis's: {planted_by:?}",
                mutant.name()
            );
            continue;
        }
        client_bugs += 1;
        let [model] = planted_by[..] else {
            panic!("{} is planted by {planted_by:?}", mutant.name())
        };
        let mut thesis = spec(ModelName::Lock(Lock::Queue), Fault::None);
        thesis.mutant = Some(mutant);
        let refusal = build(&thesis).err().expect("refused").0;
        assert!(refusal.contains(&format!("use --model {model}")), "{refusal}");
        let mut own = spec(ModelName::named(model).expect("a model"), Fault::None);
        own.mutant = Some(mutant);
        own.extend = mutant == Mutant::GoRedsyncExtend;
        if let Err(error) = build(&own) {
            panic!("--model {model} --mutant {}: {}", mutant.name(), error.0);
        }
    }
    assert_eq!(client_bugs, 6);
}
