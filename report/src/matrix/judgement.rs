//! The judgement types: what a cell's model run or seed search found, as typed values (claim,
//! verdict, model states or seeds, whether the fault fired, trace files), and the questions
//! the report asks of them (violated? checked? bounded?). How they read is `marks`.

use cassalock_judge::{Aspect, ClaimId};
use cassalock_models::check::Verdict;

use super::claims::is_contract;

/// A model's trace file, linked from its cell.
#[derive(Clone, Debug)]
pub(super) struct TraceFile {
    /// Under `matrix/`.
    pub(super) name: String,
    /// The trace's length.
    pub(super) steps: usize,
}

/// One claim as a model judged it.
#[derive(Clone, Debug)]
pub(super) struct ModelClaim {
    pub(super) claim: ClaimId,
    /// The claim as the cell prints it: its ID, tagged "(always)" or "(liveness)" when the
    /// model checks it both ways (C-lost: within its bound, and eventually).
    pub(super) name: String,
    pub(super) verdict: Verdict,
    /// The shortest counterexample or example, for a violated or reachable property.
    pub(super) trace: Option<TraceFile>,
}

/// The first failing seed of a sim claim.
#[derive(Clone, Debug)]
pub(super) struct FirstFailure {
    pub(super) seed: u64,
    /// Its trace file, under `matrix/`.
    pub(super) file: String,
    /// The replay command of that seed.
    pub(super) command: String,
}

/// One claim's seed search.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClaimSearch {
    #[serde(with = "claim_text")]
    pub(super) claim: ClaimId,
    /// The lowest seed in which it was violated.
    pub(super) first_violation: Option<u64>,
    /// Seeds (of those tried) whose run gave the check an occasion.
    pub(super) exercised: u64,
    /// Seeds whose run stopped at its bound before the check could decide (the family
    /// simulator's T2: a client not done by then): no verdict in those seeds.
    pub(super) bounded: u64,
}

/// One claim as the simulator's seed search judged it.
#[derive(Clone, Debug)]
pub(super) struct SimClaim {
    pub(super) search: ClaimSearch,
    pub(super) first_failure: Option<FirstFailure>,
}

/// One way a cell was judged, with its verdicts: what the markdown is rendered from.
#[derive(Clone, Debug)]
pub(super) enum Judgement {
    NotApplicable(&'static str),
    Model {
        label: &'static str,
        states: usize,
        claims: Vec<ModelClaim>,
        /// The same model run (same spec) was already shown in this row's cell of that fault:
        /// the cell points there instead of repeating it, and its violations are listed once.
        same_run_as: Option<&'static str>,
    },
    Sim {
        label: &'static str,
        /// Seeds tried (0..tried), and whether the wall-time cap ended the search.
        tried: u64,
        stopped_by_time: bool,
        /// Seeds in which the fault fired.
        fired: u64,
        /// Theorem-level claims, then contract items.
        claims: Vec<SimClaim>,
        /// The longest GlobalTime stall over the seeds (S1), in seconds.
        stall_s: Option<f64>,
        /// Times a fencing token went down, over the seeds.
        token_drops: u64,
    },
}

impl Judgement {
    /// Did this judgement find `claim` violated (`None`: any theorem-level claim, not the
    /// contract items)?
    pub(super) fn violated(&self, claim: Option<ClaimId>) -> bool {
        let wanted = |c: ClaimId| claim.map_or(!is_contract(c), |claim| claim == c);
        match self {
            Judgement::NotApplicable(_) => false,
            Judgement::Model { claims, .. } => claims.iter().any(|c| wanted(c.claim) && c.verdict == Verdict::Violated),
            // A fault that never fired hides its failures: no verdict.
            Judgement::Sim { claims, fired, .. } => {
                *fired > 0
                    && claims
                        .iter()
                        .any(|c| wanted(c.search.claim) && c.search.first_violation.is_some())
            }
        }
    }

    /// The model's verdict on `claim`, if this is a model judgement that checked it.
    pub(super) fn model_verdict(&self, claim: ClaimId) -> Option<&Verdict> {
        match self {
            Judgement::Model { claims, .. } => claims.iter().find(|c| c.claim == claim).map(|c| &c.verdict),
            _ => None,
        }
    }

    /// A sim judgement whose fault never fired: no verdict.
    pub(super) fn never_fired(&self) -> bool {
        matches!(self, Judgement::Sim { fired: 0, .. })
    }

    /// Fencing tokens went down in a sim judgement with a verdict.
    pub(super) fn tokens_went_down(&self) -> bool {
        matches!(self, Judgement::Sim { fired, token_drops, .. } if *fired > 0 && *token_drops > 0)
    }

    /// The claims of `aspect` this judgement gave a verdict on, and whether each was violated
    /// and had an occasion (a model always has one; a simulator check may not).
    pub(super) fn aspect_claims(&self, aspect: Aspect) -> Vec<(ClaimId, bool, bool)> {
        match self {
            Judgement::NotApplicable(_) => Vec::new(),
            Judgement::Model { claims, .. } => claims
                .iter()
                .filter(|c| c.claim.aspect() == aspect)
                .map(|c| (c.claim, c.verdict == Verdict::Violated, true))
                .collect(),
            // A fault that never fired gives no verdict: nothing judged here.
            Judgement::Sim { fired: 0, .. } => Vec::new(),
            Judgement::Sim { claims, .. } => claims
                .iter()
                .filter(|c| c.search.claim.aspect() == aspect)
                .map(|c| {
                    (
                        c.search.claim,
                        c.search.first_violation.is_some(),
                        c.search.exercised > 0,
                    )
                })
                .collect(),
        }
    }

    /// The claims of `aspect` this judgement found neither held nor violated: a model's
    /// "bounded" (its only counterexamples reach the last tick, or its budget stopped it), a
    /// seed search with seeds stopped at the run's bound and no violation.
    pub(super) fn bounded_claims(&self, aspect: Aspect) -> Vec<ClaimId> {
        match self {
            Judgement::NotApplicable(_) | Judgement::Sim { fired: 0, .. } => Vec::new(),
            Judgement::Model { claims, .. } => claims
                .iter()
                .filter(|c| c.claim.aspect() == aspect && matches!(c.verdict, Verdict::Bounded(_)))
                .map(|c| c.claim)
                .collect(),
            Judgement::Sim { claims, .. } => claims
                .iter()
                .filter(|c| c.search.claim.aspect() == aspect)
                .filter(|c| c.search.first_violation.is_none() && c.search.bounded > 0)
                .map(|c| c.search.claim)
                .collect(),
        }
    }

    /// Does this judgement check any claim of `aspect` (whether or not its fault fired)?
    pub(super) fn checks(&self, aspect: Aspect) -> bool {
        match self {
            Judgement::NotApplicable(_) => false,
            Judgement::Model { claims, .. } => claims.iter().any(|c| c.claim.aspect() == aspect),
            Judgement::Sim { claims, .. } => claims.iter().any(|c| c.search.claim.aspect() == aspect),
        }
    }
}

/// A cell: every judgement made of it, in source order.
pub(super) type Cell = Vec<Judgement>;

/// A [`ClaimId`] in a shard file: its ID as docs/claims.md writes it.
pub(super) mod claim_text {
    use std::str::FromStr;

    use cassalock_judge::ClaimId;
    use serde::Deserialize;

    pub fn serialize<S: serde::Serializer>(claim: &ClaimId, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(claim.as_str())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<ClaimId, D::Error> {
        let text = String::deserialize(deserializer)?;
        ClaimId::from_str(&text).map_err(|_| serde::de::Error::custom(format!("unknown claim {text:?}")))
    }
}
