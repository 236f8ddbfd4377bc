//! Redisson's `RLock` in the family model (`models/src/family.rs`): the library's
//! acquire, watchdog and release machines against the Redis key space, the watchdog a lane of
//! its own beside the holder, the unlock message a message of its own. The verdict on every
//! claim under each fault, the unique-state counts pinned, and the counterexample to
//! redisson/redisson#775 (a watchdog that stops after one failed renewal) pinned whole in
//! `golden/redisson_775.txt`. After an intended change:
//! `UPDATE_EXPECT=1 cargo test -p cassalock-models --test redisson`, then review `git diff`.
//!
//! 2 clients x 1 acquisition, a lease of 3 ticks renewed every tick, clocks up to 5 ticks. The
//! failover's world is the largest (802,610 states, about 20 s in the test build); the others
//! take a few seconds or less.

mod pinning;

use cassalock::registry::Lock;
use cassalock_models::check::Report;
use cassalock_models::{build, Fault, ModelName, Mutant, Spec};
use expect_test::expect_file;
use pinning::{first_violation, full, golden_text, pin, pinned, spec, trace};

const HOLDS: &str = "holds within bound (clock <= 5 ticks)";
const VIOLATED: &str = "VIOLATED";
const BOUNDED: &str = "bounded (the only counterexamples reach the model's last clock tick, where time stops)";

fn redisson(fault: Fault) -> Spec {
    spec(ModelName::Lock(Lock::Redisson), fault)
}

fn mutant_775(fault: Fault) -> Spec {
    let mut spec = redisson(fault);
    spec.mutant = Some(Mutant::Redisson775);
    spec
}

/// The claims in the order the model checks them: T1-belief, T1-resource, C-free, C-release,
/// T2 (always), C-lost (always: told, or the watchdog still asks), T2 (liveness).
fn verdicts(
    t1: &'static str,
    resource: &'static str,
    release: &'static str,
    lost: &'static str,
    t2_liveness: &'static str,
) -> Vec<(&'static str, &'static str)> {
    vec![
        ("T1-belief", t1),
        ("T1-resource", resource),
        ("C-free", HOLDS),
        ("C-release", release),
        ("T2", HOLDS),
        ("C-lost", lost),
        ("T2", t2_liveness),
    ]
}

/// The figure on how long a waiter sleeps on a free lock with no unlock message coming.
fn asleep_on_a_free_lock(report: &Report) -> &str {
    &report
        .figures
        .iter()
        .find(|(figure, _)| figure.starts_with("C-release a waiter sleeps on"))
        .expect("the unlock-message figure")
        .0
}

#[test]
fn without_faults_every_claim_holds_and_a_waiter_is_always_told() {
    let report = full(&redisson(Fault::None));
    pinned(&report, &verdicts(HOLDS, HOLDS, HOLDS, HOLDS, HOLDS), 41_607);
    // Every release's unlock message reaches the waiters (within a tick): no waiter ever
    // sleeps out a holder's TTL on a free lock.
    assert!(asleep_on_a_free_lock(&report).ends_with(": never applies"), "{report}");
}

#[test]
fn a_lost_unlock_message_costs_a_waiter_the_holders_ttl_not_its_lock() {
    let report = full(&redisson(Fault::LostNotification));
    pinned(&report, &verdicts(HOLDS, HOLDS, HOLDS, HOLDS, HOLDS), 48_708);
    assert_eq!(
        asleep_on_a_free_lock(&report),
        "C-release a waiter sleeps on while the lock is free and no unlock message is on its way, for: at most 3 more ticks (reached in 11 steps)"
    );
    let (_, lost) = report
        .figures
        .iter()
        .find(|(figure, _)| figure.starts_with("C-release a waiter sleeps on"))
        .unwrap();
    let lost = lost.as_ref().expect("a trace").to_string();
    assert!(lost.contains("FAULT: the unlock message to t1 is LOST"), "{lost}");
}

#[test]
fn a_pause_longer_than_the_lease_breaks_t1_resource_not_t1_belief() {
    // The whole process stops, its watchdog too: the key runs out, the other client takes it,
    // and the paused holder, whose clock ran past its lease, writes anyway when it resumes.
    let report = full(&redisson(Fault::Pause));
    pinned(&report, &verdicts(HOLDS, VIOLATED, HOLDS, HOLDS, HOLDS), 57_410);
    let damage = trace(&report, "T1-resource");
    assert!(
        damage.contains("t0 is PAUSED between its check and its write"),
        "{damage}"
    );
    assert!(
        damage.contains("the resource ACCEPTS t0's write (grant 0) after t1's (grant 1)"),
        "{damage}"
    );
}

#[test]
fn a_lost_renewal_is_ridden_out_by_the_watchdog() {
    // One request or reply lost, a renewal's included: the watchdog renews at its next tick and
    // the holder keeps its lease; every claim holds (T2's only starvations need time to stop).
    let report = full(&redisson(Fault::StoreFailure));
    pinned(&report, &verdicts(HOLDS, HOLDS, HOLDS, HOLDS, BOUNDED), 198_739);
}

/// redisson/redisson#775: a renewal fails (here a lost request), the mutant's watchdog is not
/// rescheduled, the key runs out while its holder holds, another client takes the lock, and
/// nothing ever tells the holder. The fixed watchdog (above) rides the same loss out.
#[test]
fn mutant_775_a_watchdog_that_stops_after_a_failed_renewal_breaks_c_lost() {
    let report = full(&mutant_775(Fault::StoreFailure));
    pinned(&report, &verdicts(HOLDS, HOLDS, HOLDS, VIOLATED, BOUNDED), 201_177);
    assert!(
        report
            .title
            .contains("mutant: the watchdog stops after a failed renewal (redisson/redisson#775)"),
        "{}",
        report.title
    );
    let quiet = trace(&report, "C-lost");
    assert!(
        quiet.contains("MUTANT 775: a renewal failed, the watchdog is not rescheduled"),
        "{quiet}"
    );
    assert!(quiet.contains("t0's watchdog ENDS QUIETLY"), "{quiet}");
    assert!(quiet.contains("t1 HOLDS the lock (grant 1)"), "{quiet}");
    pin(
        expect_file!["golden/redisson_775.txt"],
        &golden_text(&first_violation(&mutant_775(Fault::StoreFailure), "C-lost")),
    );
    // Without a failed renewal the mutant is the lock itself.
    let none = full(&mutant_775(Fault::None));
    pinned(&none, &verdicts(HOLDS, HOLDS, HOLDS, HOLDS, HOLDS), 41_607);
}

#[test]
fn a_restart_or_a_clock_jump_breaks_t1_belief() {
    for (fault, what, states) in [
        (Fault::Restart, "the server RESTARTS without persistence", 382_786),
        (
            Fault::ServerClockJump,
            "the server's clock JUMPS forward by the TTL",
            286_372,
        ),
    ] {
        let report = full(&redisson(fault));
        pinned(&report, &verdicts(VIOLATED, VIOLATED, HOLDS, HOLDS, HOLDS), states);
        let two = trace(&report, "T1-belief");
        assert!(two.contains(what), "{two}");
        assert!(two.contains("believe: t0 AND t1"), "{two}");
    }
}

#[test]
fn a_failover_breaks_t1_belief_and_brings_back_a_released_key() {
    let report = full(&redisson(Fault::Failover));
    pinned(
        &report,
        &verdicts(VIOLATED, VIOLATED, VIOLATED, HOLDS, BOUNDED),
        802_610,
    );
    let two = trace(&report, "T1-belief");
    assert!(
        two.contains("FAILOVER: the replica is promoted; 1 acknowledged batch(es)"),
        "{two}"
    );
    assert!(two.contains("believe: t0 AND t1"), "{two}");
    let back = trace(&report, "C-release");
    assert!(back.contains("unlock() returns Released"), "{back}");
}

#[test]
fn the_redisson_model_refuses_what_does_not_apply_to_it() {
    let refused = |spec: &Spec| build(spec).err().expect("refused").0;
    let mut extend = redisson(Fault::None);
    extend.extend = true;
    assert!(refused(&extend).contains("(its watchdog renews the lease)"));
    let mut redlock_bug = redisson(Fault::None);
    redlock_bug.mutant = Some(Mutant::GoRedsyncExtend);
    assert!(refused(&redlock_bug).contains("does not apply to the redisson model"));
    assert!(
        refused(&mutant_775(Fault::None).with_model(ModelName::Lock(Lock::RedisSetNx)))
            .contains("redisson-775: redisson")
    );
    assert!(refused(&spec(ModelName::Lock(Lock::RedisSetNx), Fault::LostNotification))
        .contains("the redis-set-nx model supports --fault none, pause, store-failure, restart, failover or server-clock-jump, not lost-notification"));
    assert!(refused(&spec(ModelName::Lock(Lock::Queue), Fault::LostNotification))
        .contains("or redisson for lost-notification"));
    assert!(
        refused(&mutant_775(Fault::None).with_model(ModelName::Lock(Lock::Queue))).contains("use --model redisson")
    );
}

trait WithModel {
    fn with_model(self, model: ModelName) -> Self;
}

impl WithModel for Spec {
    fn with_model(mut self, model: ModelName) -> Self {
        self.model = model;
        self
    }
}
