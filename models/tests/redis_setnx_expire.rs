//! The two-command recipe (`SETNX`, then `EXPIRE`, `DEL` to release; seed 003) beside the
//! one-command `SET NX PX` lock: the verdict on every claim under each fault, with the
//! unique-state counts pinned. What the recipe loses that `SET NX PX` keeps: T1-belief under a
//! late extension (a blind `EXPIRE` renews the next holder's key) and under store failures and
//! failovers the key without an expiry that nobody takes again (T2, bounded in the model: the
//! key outlives the model's last tick).

mod pinning;

use cassalock::registry::Lock;
use cassalock_models::{Fault, ModelName, Spec};
use pinning::{first_violation, full, pinned, spec};

const HOLDS: &str = "holds within bound (clock <= 4 ticks)";
const VIOLATED: &str = "VIOLATED";
const BOUNDED: &str = "bounded (the only counterexamples reach the model's last clock tick, where time stops)";

fn recipe(fault: Fault) -> Spec {
    spec(ModelName::Lock(Lock::RedisSetNxExpire), fault)
}

fn extending(fault: Fault) -> Spec {
    let mut spec = recipe(fault);
    spec.extend = true;
    spec
}

#[test]
fn c_free_t2_without_faults_every_claim_holds() {
    pinned(
        &full(&recipe(Fault::None)),
        &[
            ("T1-belief", HOLDS),
            ("T1-resource", HOLDS),
            ("C-free", HOLDS),
            ("C-release", HOLDS),
            ("T2", HOLDS),
            ("T2", HOLDS),
        ],
        5860,
    );
}

#[test]
fn t1_belief_a_late_blind_expire_renews_the_next_holder_s_key() {
    // No fault at all: the holder's extension arrives after its key expired and another client
    // set its own; EXPIRE answers 1 for that key and the old holder believes again.
    let report = full(&extending(Fault::None));
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
        11020,
    );
    let trace = first_violation(&extending(Fault::None), "T1-belief").to_string();
    assert!(trace.contains("EXPIRE said 1: extended"), "{trace}");
    assert!(trace.contains("believe: t0 AND t1"), "{trace}");
}

#[test]
fn t2_a_lost_reply_leaves_a_key_without_expiry_and_the_lease_counts_from_the_first_expire() {
    // Bounded, not violated: a key with no expiry and a key that outlives the model's last
    // tick look the same to it (the simulator runs past that: T2 violated,
    // sim/tests/family.rs). T1-belief holds: a lease counts from the first EXPIRE that may
    // have applied, not from the one sent again (without that, 17 steps to two holders).
    pinned(
        &full(&recipe(Fault::StoreFailure)),
        &[
            ("T1-belief", HOLDS),
            ("T1-resource", HOLDS),
            ("C-free", HOLDS),
            ("C-release", HOLDS),
            ("T2", HOLDS),
            ("T2", BOUNDED),
        ],
        48634,
    );
}

#[test]
fn t1_belief_the_server_faults_break_the_recipe_as_they_break_set_nx() {
    for (fault, states) in [(Fault::Restart, 26663), (Fault::ServerClockJump, 19451)] {
        pinned(
            &full(&recipe(fault)),
            &[
                ("T1-belief", VIOLATED),
                ("T1-resource", VIOLATED),
                ("C-free", HOLDS),
                ("C-release", HOLDS),
                ("T2", HOLDS),
                ("T2", HOLDS),
            ],
            states,
        );
    }
    // A failover before the EXPIRE reached the replica promotes a key without an expiry.
    pinned(
        &full(&recipe(Fault::Failover)),
        &[
            ("T1-belief", VIOLATED),
            ("T1-resource", VIOLATED),
            ("C-free", HOLDS),
            ("C-release", VIOLATED),
            ("T2", HOLDS),
            ("T2", BOUNDED),
        ],
        292243,
    );
}
