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
        // go-redsync's bug is in the extension: its holders must extend.
        spec.extend = self.mutant == cassalock_models::Mutant::GoRedsyncExtend;
        spec
    }
}

/// The deliberately broken variants the model checker runs: each must break its claim, or the
/// checks prove nothing.
pub(super) const MUTANT_MODELS: [MutantModel; 8] = {
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
        MutantModel {
            label: "go-redsync's extend that ignores the validity time, each holder extending once, Redlock",
            model: ModelName::Lock(Lock::Redlock),
            fault: Fault::None,
            mutant: Mutant::GoRedsyncExtend,
            claim: ClaimId::T1Belief,
            key: "redlock-go-redsync-extend-t1-belief",
            clock_bound: None,
        },
        MutantModel {
            label: "CURATOR-678 (a release whose delete fails gives up and forgets the node) with one lost \
                    request, Curator's InterProcessMutex",
            model: ModelName::Lock(Lock::Zookeeper),
            fault: Fault::StoreFailure,
            mutant: Mutant::Curator678,
            claim: ClaimId::CRelease,
            key: "zookeeper-curator-678-store-failure-c-release",
            clock_bound: None,
        },
    ]
};

/// The model checker's mutants the matrix does not run, each with why (a row of the kill table
/// all the same: a switch the command line offers is never silently left out).
pub(super) const MODEL_MUTANTS_NOT_RUN: [(cassalock_models::Mutant, &str); 2] = [
    (
        cassalock_models::Mutant::NodeRedlockValidity,
        "not run by the matrix: the model's Redlock, 2 clients, breaks the claim it breaks \
         (no lock() gives up while the masters answer) without it, in 31 steps, so the model cannot \
         tell it apart; the simulator's redlock-retry-after-drop-node-redlock plants the same flag \
         with one client and catches it",
    ),
    (
        cassalock_models::Mutant::Etcd11456,
        "not run by the matrix: the model, 2 clients x 1 acquisition, gives the same verdicts with \
         and without it under the server clock jump that reaches its step; the simulator's \
         etcd-lease-expires-while-waiting-11456 plants the same flag and catches it",
    ),
];

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
pub(super) const MUTANT_SIMS: [MutantSim; 5] = [
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
    MutantSim {
        claim: ClaimId::CRelease,
        scenario: "renew-race",
        flag: "--m3",
        turn_on: |options| options.m3 = true,
        breaks: "a release stamped at the lease's start lost to a renewal's newer write, so the lock stayed taken",
        firing: Firing::Configured,
    },
    MutantSim {
        claim: ClaimId::CFree,
        scenario: "loss",
        flag: "--thesis-listings",
        turn_on: |options| options.thesis_listings = true,
        breaks: "a GetLock that failed as the listing has it left its cells to keep the lock from the next caller",
        firing: Firing::Injected,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use cassalock_models::Mutant;

    /// The kill table has a row for every switch that breaks a lock on purpose: a new mutant
    /// or listing switch must be given a cell (or a reason) before it compiles here.
    #[test]
    fn every_switch_that_breaks_a_lock_on_purpose_is_a_row_of_the_kill_table() {
        for mutant in Mutant::ALL {
            let run = MUTANT_MODELS.iter().filter(|m| m.mutant == mutant).count();
            let not_run = MODEL_MUTANTS_NOT_RUN.iter().filter(|(m, _)| *m == mutant).count();
            assert!(
                (run > 0) != (not_run > 0),
                "check --mutant {}: run {run} times and listed as not run {not_run} times",
                mutant.name()
            );
        }
        // Every field of the simulator's options, named: a new one must be classed here as a
        // switch that breaks the lock (and given its row) or as a setting.
        let SimOptions {
            offset_s: _,
            k3: _,
            no_fencing: _,
            lose_unsynced: _,
            consistency: _,
            try_lock: _,
            thesis_listings: _,
            m2: _,
            m3: _,
            m4: _,
            knobs: _,
        } = SimOptions::default();
        type IsOn = fn(&SimOptions) -> bool;
        let switches: [(&str, IsOn); 5] = [
            ("--k3", |o| o.k3),
            ("--m2", |o| o.m2),
            ("--m3", |o| o.m3),
            ("--m4", |o| o.m4),
            ("--thesis-listings", |o| o.thesis_listings),
        ];
        assert_eq!(switches.len(), MUTANT_SIMS.len());
        for (flag, is_on) in switches {
            assert!(!is_on(&SimOptions::default()), "{flag} is off by default");
            let rows: Vec<&MutantSim> = MUTANT_SIMS.iter().filter(|m| is_on(&m.options())).collect();
            assert_eq!(rows.len(), 1, "{flag}: one row turns it on");
            assert_eq!(rows[0].flag, flag);
            // The row turns on nothing else.
            let others = switches.iter().filter(|(_, on)| on(&rows[0].options())).count();
            assert_eq!(others, 1, "{flag} turns on only itself");
        }
    }
}
