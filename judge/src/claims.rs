//! The claim IDs (docs/claims.md, and the contract items of docs/contract.md): one typed name for every claim the model checker, the simulator,
//! the real runner and the reports judge, so that none of them compares claim strings.
//!
//! `Display` gives the ID as every output has always printed it ("T1-belief", "F-order");
//! [`ClaimId::definition`] says in one line what the claim means.

use std::fmt;
use std::str::FromStr;

/// What kind of promise a claim is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Aspect {
    /// Nothing bad happens: two holders, a stale token accepted, time going back.
    Safety,
    /// Something good happens, within a bound where the contract states one: a waiter
    /// acquires, a released lock becomes free, a holder learns it lost the lock.
    Liveness,
    /// Waiters are served in order.
    Fairness,
    /// What the lock costs the store (S3: polling).
    Cost,
    /// A state that can be reached: a sanity check of a model, neither good nor bad.
    Reachability,
}

impl Aspect {
    /// Every aspect, in the order reports list them.
    pub const ALL: [Aspect; 5] = [
        Aspect::Safety,
        Aspect::Liveness,
        Aspect::Fairness,
        Aspect::Cost,
        Aspect::Reachability,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Aspect::Safety => "safety",
            Aspect::Liveness => "liveness",
            Aspect::Fairness => "fairness",
            Aspect::Cost => "cost",
            Aspect::Reachability => "reachability",
        }
    }
}

/// A claim (docs/claims.md's IDs, with the sub-claims the checks judge separately).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClaimId {
    /// Lemma 1: two writers that then read, one sees both cells.
    L1,
    /// L1's sanity check: a thread can see only its own cell (the lemma is not vacuous).
    L1NotVacuous,
    /// Theorem 1: GetLock never lets two threads hold at once.
    T1,
    /// T1 as the simulator and the real runner judge it: beliefs of holding never overlap.
    T1Belief,
    /// T1 where it does damage: the resource never accepts a stale fencing token.
    T1Resource,
    /// T1 against the server: whoever believes it holds is the holder the server's state names.
    T1Server,
    /// Theorem 2: every GetLock caller acquires in finite time.
    T2,
    /// T2's case the family simulator judges alone: one client on a free lock never gives up.
    T2Free,
    /// Theorem 3: TryGetLock never lets two threads hold at once.
    T3,
    /// Theorem 4: on a free lock, some TryGetLock caller acquires.
    T4,
    /// Theorem 5: GlobalTime never decreases.
    T5,
    /// T5's sanity check: two replicas can both write GlobalTime.
    T5Race,
    /// Fairness: the new algorithm serves waiters in queue order.
    F,
    /// F, first half: whoever acquires is at the head of the queue.
    FOrder,
    /// F, second half: no waiter is overtaken more than a bound.
    FOvertakes,
    /// A queue lock's waiter still inside `lock()` is never dropped from the queue unless it is
    /// told (Redisson's fair lock drops a stale head silently).
    FDrop,
    /// S1: a crashed time-service replica that ran ahead freezes GlobalTime.
    S1,
    /// S2: clocks apart by more than the TTL break mutual exclusion.
    S2,
    /// S3: the algorithm polls the store constantly.
    S3,
    /// K1: a paused holder still believes it holds after another acquired.
    K1,
    /// K2: with CL ONE instead of QUORUM, L1 and T1 fail.
    K2,
    /// K3: a renewal stamped after the release's delete resurrects the cells.
    K3,
    /// M1: the mutant whose queue head skips the main-row check must break T1.
    M1,
    /// Contract (docs/contract.md): `try_lock` never waits for another owner; its request count
    /// is bounded independently of anyone's hold.
    CTry,
    /// Contract: a call that fails leaves nothing that keeps the lock from the next caller for
    /// longer than a stated bound.
    CFree,
    /// Contract: after `release()` returns Ok, a waiter acquires within a stated bound.
    CRelease,
    /// Contract: a holder whose lease ran out learns it within a stated bound after another
    /// client acquired.
    CLost,
    /// Contract: a later holder's fencing token is above an earlier holder's, and the resource
    /// never refuses a write from the only current holder.
    CToken,
    /// Contract: `lock()` with a deadline returns within a stated bound of it.
    CWait,
}

impl ClaimId {
    /// Every claim, in declaration order.
    pub const ALL: [ClaimId; 29] = [
        ClaimId::L1,
        ClaimId::L1NotVacuous,
        ClaimId::T1,
        ClaimId::T1Belief,
        ClaimId::T1Resource,
        ClaimId::T1Server,
        ClaimId::T2,
        ClaimId::T2Free,
        ClaimId::T3,
        ClaimId::T4,
        ClaimId::T5,
        ClaimId::T5Race,
        ClaimId::F,
        ClaimId::FOrder,
        ClaimId::FOvertakes,
        ClaimId::FDrop,
        ClaimId::S1,
        ClaimId::S2,
        ClaimId::S3,
        ClaimId::K1,
        ClaimId::K2,
        ClaimId::K3,
        ClaimId::M1,
        ClaimId::CTry,
        ClaimId::CFree,
        ClaimId::CRelease,
        ClaimId::CLost,
        ClaimId::CToken,
        ClaimId::CWait,
    ];

    /// The ID as printed everywhere ("T1-belief").
    pub const fn as_str(self) -> &'static str {
        match self {
            ClaimId::L1 => "L1",
            ClaimId::L1NotVacuous => "L1-not-vacuous",
            ClaimId::T1 => "T1",
            ClaimId::T1Belief => "T1-belief",
            ClaimId::T1Resource => "T1-resource",
            ClaimId::T1Server => "T1-server",
            ClaimId::T2 => "T2",
            ClaimId::T2Free => "T2-free",
            ClaimId::T3 => "T3",
            ClaimId::T4 => "T4",
            ClaimId::T5 => "T5",
            ClaimId::T5Race => "T5-race",
            ClaimId::F => "F",
            ClaimId::FOrder => "F-order",
            ClaimId::FOvertakes => "F-overtakes",
            ClaimId::FDrop => "F-drop",
            ClaimId::S1 => "S1",
            ClaimId::S2 => "S2",
            ClaimId::S3 => "S3",
            ClaimId::K1 => "K1",
            ClaimId::K2 => "K2",
            ClaimId::K3 => "K3",
            ClaimId::M1 => "M1",
            ClaimId::CTry => "C-try",
            ClaimId::CFree => "C-free",
            ClaimId::CRelease => "C-release",
            ClaimId::CLost => "C-lost",
            ClaimId::CToken => "C-token",
            ClaimId::CWait => "C-wait",
        }
    }

    /// What kind of promise the claim is, so that a report never shows an unfair lock as an
    /// unsafe one (docs/claims.md, "Safety, liveness, fairness").
    pub const fn aspect(self) -> Aspect {
        match self {
            ClaimId::L1
            | ClaimId::T1
            | ClaimId::T1Belief
            | ClaimId::T1Resource
            | ClaimId::T1Server
            | ClaimId::T3
            | ClaimId::T5
            | ClaimId::S2
            | ClaimId::K1
            | ClaimId::K2
            | ClaimId::M1
            | ClaimId::CToken => Aspect::Safety,
            ClaimId::T2
            | ClaimId::T2Free
            | ClaimId::T4
            | ClaimId::S1
            | ClaimId::K3
            | ClaimId::CTry
            | ClaimId::CFree
            | ClaimId::CRelease
            | ClaimId::CLost
            | ClaimId::CWait => Aspect::Liveness,
            ClaimId::F | ClaimId::FOrder | ClaimId::FOvertakes | ClaimId::FDrop => Aspect::Fairness,
            ClaimId::S3 => Aspect::Cost,
            ClaimId::L1NotVacuous | ClaimId::T5Race => Aspect::Reachability,
        }
    }

    /// What the claim says, in one line (docs/claims.md, shortened).
    pub const fn definition(self) -> &'static str {
        match self {
            ClaimId::L1 => {
                "if two threads each write one cell to the same row and then read it, at least one sees both cells (needs a linearizable store)"
            }
            ClaimId::L1NotVacuous => "a thread can see only its own cell, so L1 is not vacuous",
            ClaimId::T1 => "GetLock never lets two threads hold the same lock at once (mutual exclusion)",
            ClaimId::T1Belief => "no two threads believe they hold the lock at the same instant",
            ClaimId::T1Resource => "the resource never accepts a write whose fencing token is below one it already accepted",
            ClaimId::T1Server => "whoever believes it holds the lock is the holder the server's own state names (the key's value, the lowest node or revision, a cell every read of the main row finds)",
            ClaimId::T2 => "if every holder releases in finite time, every GetLock caller acquires in finite time",
            ClaimId::T2Free => "a lock() call never gives up when no other client could have held the lock (one client alone; filed under T2 in the matrix)",
            ClaimId::T3 => "TryGetLock never lets two threads hold the same lock at once",
            ClaimId::T4 => "when TryGetLock runs in several threads on a free lock, at least one acquires",
            ClaimId::T5 => "the GlobalTime value never decreases",
            ClaimId::T5Race => "two time-service replicas can both write GlobalTime (an older time written later must lose)",
            ClaimId::F => "the new algorithm serves waiters in queue order; the old one does not",
            ClaimId::FOrder => "whoever acquires is at the head of the queue",
            ClaimId::FOvertakes => "no waiter is overtaken more than a bound",
            ClaimId::FDrop => "a waiter still inside lock() is never dropped from the queue without being told",
            ClaimId::S1 => "a time-service replica whose clock ran ahead and then crashed freezes GlobalTime for about its lead",
            ClaimId::S2 => "if replica clocks differ by more than the TTL, a cell can expire at once and mutual exclusion breaks",
            ClaimId::S3 => "the algorithm polls the store constantly; a notifying store would need far fewer requests",
            ClaimId::K1 => "a holder paused longer than its lease still believes it holds after another acquired; only fencing prevents the damage",
            ClaimId::K2 => "with consistency ONE instead of QUORUM, L1 fails and so does T1",
            ClaimId::K3 => "a renewal stamped after the release's delete resurrects the cells: the lock stays taken by nobody until the TTL runs out",
            ClaimId::M1 => "the mutant whose queue head skips the main-row check breaks T1 under a delayed enqueue: the checks catch it",
            ClaimId::CTry => "try_lock never waits for another owner: it sends a bounded number of requests, however long anyone holds the lock",
            ClaimId::CFree => "after a call fails or gives up, nothing it wrote keeps the lock from the next caller for longer than a stated bound",
            ClaimId::CRelease => "after release() returns Ok, a waiting client acquires within a stated bound",
            ClaimId::CLost => "a holder whose lease ran out learns it (is_lost) within a stated bound after another client acquired",
            ClaimId::CToken => "a later holder's fencing token is above an earlier holder's, and the resource never refuses a write of the only current holder",
            ClaimId::CWait => "lock() with a deadline gives up and returns within a stated bound of it",
        }
    }

    /// The claim a property or figure is about: the first word of its name
    /// ("T1 at most one thread holds the lock" -> T1).
    pub fn of_name(name: &str) -> Option<ClaimId> {
        name.split_whitespace().next()?.parse().ok()
    }
}

impl fmt::Display for ClaimId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A claim ID that no claim has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownClaim(pub String);

impl fmt::Display for UnknownClaim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no claim has the ID {:?}", self.0)
    }
}

impl std::error::Error for UnknownClaim {}

impl FromStr for ClaimId {
    type Err = UnknownClaim;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ClaimId::ALL
            .into_iter()
            .find(|claim| claim.as_str() == text)
            .ok_or_else(|| UnknownClaim(text.to_owned()))
    }
}

impl PartialEq<ClaimId> for &str {
    fn eq(&self, claim: &ClaimId) -> bool {
        *self == claim.as_str()
    }
}

impl PartialEq<&str> for ClaimId {
    fn eq(&self, text: &&str) -> bool {
        self.as_str() == *text
    }
}

/// Something that names a claim: a [`ClaimId`], or its text where callers still spell it
/// ("T1-belief"), parsed on the spot. Unknown text is a caller's bug and panics.
pub trait AsClaim {
    fn claim_id(&self) -> ClaimId;
}

impl AsClaim for ClaimId {
    fn claim_id(&self) -> ClaimId {
        *self
    }
}

impl AsClaim for str {
    fn claim_id(&self) -> ClaimId {
        self.parse().unwrap_or_else(|unknown: UnknownClaim| panic!("{unknown}"))
    }
}

impl AsClaim for String {
    fn claim_id(&self) -> ClaimId {
        self.as_str().claim_id()
    }
}

impl<T: AsClaim + ?Sized> AsClaim for &T {
    fn claim_id(&self) -> ClaimId {
        (**self).claim_id()
    }
}

/// How one claim fared in one check (a run, a set of seeds, a model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClaimVerdict {
    /// Checked, and no violation found.
    Holds,
    /// Checked, and violated.
    Violated,
    /// Not checked: what it is about never happened (a fault that never fired). Never a pass.
    NotExercised,
    /// Not decided: a bound of the check (a simulated run's time limit) came before the claim
    /// could be shown either way. Never a pass, never a violation.
    Bounded,
}

impl ClaimVerdict {
    /// Holds when `held`, else violated.
    pub fn from_holds(held: bool) -> Self {
        if held {
            ClaimVerdict::Holds
        } else {
            ClaimVerdict::Violated
        }
    }

    pub fn is_violated(self) -> bool {
        self == ClaimVerdict::Violated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_parses_back_from_its_text() {
        for claim in ClaimId::ALL {
            assert_eq!(claim.as_str().parse::<ClaimId>(), Ok(claim));
            assert_eq!(claim.to_string(), claim.as_str());
            assert!(!claim.definition().is_empty());
        }
        let texts: std::collections::BTreeSet<&str> = ClaimId::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(texts.len(), ClaimId::ALL.len(), "IDs are distinct");
    }

    #[test]
    fn every_claim_the_family_judge_prints_is_a_listed_claim() {
        for claim in crate::families::Claim::ALL {
            assert_eq!(
                claim.name().parse::<ClaimId>().map(|id| id.as_str()),
                Ok(claim.name()),
                "{} is printed by the family judge, so `cassalock claims` must list it",
                claim.name()
            );
        }
    }

    #[test]
    fn the_ids_read_as_they_always_did() {
        assert_eq!(ClaimId::T1Belief.to_string(), "T1-belief");
        assert_eq!(ClaimId::T1Resource.to_string(), "T1-resource");
        assert_eq!(ClaimId::FOvertakes.to_string(), "F-overtakes");
        assert_eq!(ClaimId::T5Race.to_string(), "T5-race");
        assert_eq!(ClaimId::CToken.to_string(), "C-token");
        assert!("T7".parse::<ClaimId>().is_err());
        assert!("t1".parse::<ClaimId>().is_err(), "IDs are case-sensitive");
    }

    #[test]
    fn a_property_name_names_its_claim_by_its_first_word() {
        assert_eq!(
            ClaimId::of_name("T1 at most one thread holds the lock"),
            Some(ClaimId::T1)
        );
        assert_eq!(
            ClaimId::of_name("F-overtakes no waiter is overtaken more than the bound"),
            Some(ClaimId::FOvertakes)
        );
        assert_eq!(
            ClaimId::of_name("L1-not-vacuous a thread can see only its own cell"),
            Some(ClaimId::L1NotVacuous)
        );
        assert_eq!(ClaimId::of_name("nothing known"), None);
        assert_eq!(ClaimId::of_name(""), None);
    }

    #[test]
    fn text_and_ids_compare_and_convert() {
        assert!("K3" == ClaimId::K3);
        assert!(ClaimId::K3 == "K3");
        assert!("K3" != ClaimId::T2);
        assert_eq!("T1-belief".claim_id(), ClaimId::T1Belief);
        assert_eq!((&"T2").claim_id(), ClaimId::T2);
        assert_eq!(ClaimId::S1.claim_id(), ClaimId::S1);
        assert_eq!(String::from("T4").claim_id(), ClaimId::T4);
    }

    #[test]
    #[should_panic(expected = "no claim has the ID")]
    fn unknown_text_is_a_bug() {
        let _ = "T9".claim_id();
    }
}
