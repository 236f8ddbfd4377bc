//! The broken variants (mutants) the matrix runs: deliberately broken models the model checker
//! must catch, and mutants of the library the simulator must catch, each with the claim it
//! exists to break (docs/mutants.md). The families' planted client bugs are in `family_sim`.

use cassalock::registry::Lock;
use cassalock_judge::ClaimId;
use cassalock_models::{Fault, ModelName, Spec};
use cassalock_sim::scenario::SimOptions;

use super::sources::Firing;

/// A broken variant the model checker must catch: its model, fault, mutant and the claim it
/// exists to break.
pub(super) struct MutantModel {
    pub(super) label: &'static str,
    model: ModelName,
    fault: Fault,
    pub(super) mutant: cassalock_models::Mutant,
    pub(super) claim: ClaimId,
    /// Its trace file's name: `mutant-{key}.txt`.
    pub(super) key: &'static str,
    /// A clock bound other than the world's default (`--clock-bound`).
    clock_bound: Option<u8>,
}

impl MutantModel {
    /// The lock whose model it breaks.
    pub(super) fn lock(&self) -> Option<Lock> {
        match self.model {
            ModelName::Lock(lock) => Some(lock),
            _ => None,
        }
    }

    pub(super) fn spec(&self) -> Spec {
        let mut spec = Spec::new(self.model);
        spec.fault = self.fault;
        spec.mutant = Some(self.mutant);
        spec.clock_bound = self.clock_bound;
        if self.mutant == cassalock_models::Mutant::RedissonFairBarging {
            // F-order needs a client that comes back to a queue another waits in.
            spec.acquisitions = Some(2);
        }
        spec
    }
}

/// The deliberately broken variants the model checker runs: each must break its claim, or the
/// checks prove nothing.
pub(super) const MUTANT_MODELS: [MutantModel; 6] = {
    use cassalock_models::Mutant;
    [
        MutantModel {
            label: "M1 (first in the queue skips the main-row check) with delayed enqueue, queue GetLock",
            model: ModelName::Lock(Lock::Queue),
            fault: Fault::DelayedEnqueue,
            mutant: Mutant::M1,
            claim: ClaimId::T1,
            key: "queue-m1-delayed-t1",
            clock_bound: None,
        },
        MutantModel {
            label: "K3 (release does not wait for renewal), queue GetLock",
            model: ModelName::Lock(Lock::Queue),
            fault: Fault::None,
            mutant: Mutant::K3,
            claim: ClaimId::K3,
            key: "queue-k3-k3",
            clock_bound: None,
        },
        MutantModel {
            label: "K3, old GetLock",
            model: ModelName::Lock(Lock::Old),
            fault: Fault::None,
            mutant: Mutant::K3,
            claim: ClaimId::K3,
            key: "old-k3-k3",
            clock_bound: None,
        },
        MutantModel {
            label: "M4 (renewal trusts a rewrite that landed a TTL late, the library before 2026-11-28), \
                    holder paused, clock <= 5 ticks, queue GetLock",
            model: ModelName::Lock(Lock::Queue),
            fault: Fault::Pause,
            mutant: Mutant::M4,
            claim: ClaimId::CLost,
            key: "queue-m4-pause-c-lost",
            clock_bound: Some(5),
        },
        MutantModel {
            label: "redisson/redisson#775 (the watchdog is not rescheduled after a failed renewal) with one \
                    lost request, Redisson RLock",
            model: ModelName::Lock(Lock::Redisson),
            fault: Fault::StoreFailure,
            mutant: Mutant::Redisson775,
            claim: ClaimId::CLost,
            key: "redisson-775-store-failure-c-lost",
            clock_bound: None,
        },
        MutantModel {
            label: "an acquire that ignores the queue (the RLock's script; a planted unfair variant), 2 \
                    clients x 2 acquisitions, Redisson fair lock",
            model: ModelName::Lock(Lock::RedissonFair),
            fault: Fault::None,
            mutant: Mutant::RedissonFairBarging,
            claim: ClaimId::FOrder,
            key: "redisson-fair-barging-f-order",
            clock_bound: None,
        },
    ]
};

/// A broken variant the simulator must catch: the real library with one of its mutants, in
/// the scenario that reaches the step the mutant changes.
pub(super) struct MutantSim {
    pub(super) claim: ClaimId,
    pub(super) scenario: &'static str,
    /// The `sim`/`replay` flag that turns the mutant on, and the option it sets.
    pub(super) flag: &'static str,
    turn_on: fn(&mut SimOptions),
    /// What the violation is, in the line's words.
    pub(super) breaks: &'static str,
    pub(super) firing: Firing,
}

impl MutantSim {
    pub(super) fn options(&self) -> SimOptions {
        let mut options = SimOptions::default();
        (self.turn_on)(&mut options);
        options
    }
}

/// The simulator's broken variants, each searched for the old and the queue lock.
pub(super) const MUTANT_SIMS: [MutantSim; 3] = [
    MutantSim {
        claim: ClaimId::K3,
        scenario: "renew-race",
        flag: "--k3",
        turn_on: |options| options.k3 = true,
        breaks: "a released lock came back to life",
        firing: Firing::Configured,
    },
    MutantSim {
        claim: ClaimId::CLost,
        scenario: "pause-at-rewrite",
        flag: "--m4",
        turn_on: |options| options.m4 = true,
        breaks: "a holder paused at renewal's rewrite was told it lost the lease, then told it had not",
        firing: Firing::Injected,
    },
    MutantSim {
        claim: ClaimId::CLost,
        scenario: "rows-deleted",
        flag: "--m2",
        turn_on: |options| options.m2 = true,
        breaks: "a holder whose rows an operator deleted wrote its cell back and was never told another client took the lock",
        firing: Firing::Injected,
    },
];
