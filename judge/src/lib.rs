//! # cassalock-judge
//!
//! What happened in a lock run, and what it means: the event record every driver writes (a
//! model trace, the simulator, the real runner) and the judges and statistics that read it,
//! so each claim is judged one way whichever driver produced the history.
//!
//! - [`event`]: the record, its header and its events (`docs/events.md`);
//! - [`belief`]: a holder's belief, one definition for every record;
//! - [`rows`]: the row locks' judge, from a record; [`families`]: the other families' judge;
//!   [`observed`]: the judge of a run seen from outside (the real runner);
//! - [`claims`]: the claim IDs ([`ClaimId`]) and a claim's typed verdict;
//! - [`holding`]: holding intervals on a named clock and the one T1-belief judge;
//! - [`overlap_window`]: T1-belief as beliefs close, in bounded memory;
//! - [`k3`]: the one K3 definition (a released lock stays taken by nobody);
//! - [`server_state`]: T1-server, a holder's belief against the server's own state;
//! - [`told`]: C-lost for a run seen from outside (who was overtaken, how it was told);
//! - [`stats`]: the report statistics.

pub mod belief;
pub mod call_bound;
pub mod claims;
pub mod event;
pub mod families;
pub mod holding;
pub mod k3;
pub mod next_caller;
pub mod observed;
pub mod overlap_window;
pub mod rows;
pub mod server_state;
pub mod stats;
pub mod steps;
pub mod text;
pub mod told;

pub use claims::{AsClaim, Aspect, ClaimId, ClaimVerdict};

/// Every claim's verdict on one record, by the judge its header's rules name.
#[derive(Clone, Debug)]
pub enum Judgement {
    /// [`event::Rules::Rows`].
    Rows(Box<rows::Verdicts>),
    /// [`event::Rules::Families`].
    Families(families::FamilyVerdicts),
    /// [`event::Rules::Observed`].
    Observed(Box<observed::ObservedVerdicts>),
}

impl Judgement {
    /// Some claim was violated.
    pub fn any_violated(&self) -> bool {
        match self {
            Judgement::Rows(verdicts) => !verdicts.all_passed(),
            Judgement::Families(verdicts) => verdicts.any_violated(),
            Judgement::Observed(verdicts) => verdicts.any_violated(),
        }
    }

    /// Each claim's verdict, under the name the judgement prints it with, in its printed order
    /// (a families' record names T2-free apart from T2).
    pub fn claim_verdicts(&self) -> Vec<(&'static str, ClaimVerdict)> {
        match self {
            Judgement::Rows(verdicts) => verdicts
                .checks
                .iter()
                .map(|check| (check.claim.as_str(), check.verdict))
                .collect(),
            Judgement::Families(verdicts) => verdicts
                .claims
                .iter()
                .map(|(claim, verdict)| {
                    let verdict = match verdict {
                        families::Verdict::NoViolation => ClaimVerdict::Holds,
                        families::Verdict::Violated(_) => ClaimVerdict::Violated,
                        families::Verdict::Bounded(_) => ClaimVerdict::Bounded,
                        families::Verdict::NotChecked => ClaimVerdict::NotExercised,
                    };
                    (claim.name(), verdict)
                })
                .collect(),
            Judgement::Observed(verdicts) => verdicts
                .checks
                .iter()
                .map(|(claim, verdict, _)| (claim.as_str(), *verdict))
                .collect(),
        }
    }

    /// No claim was violated, and a bound left some claim undecided.
    pub fn any_bounded(&self) -> bool {
        match self {
            Judgement::Rows(verdicts) => verdicts.any_bounded(),
            Judgement::Families(verdicts) => verdicts.any_bounded(),
            Judgement::Observed(verdicts) => verdicts.any_bounded(),
        }
    }
}

impl std::fmt::Display for Judgement {
    /// The verdicts as the run that wrote the record printed them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Judgement::Rows(verdicts) => {
                writeln!(
                    f,
                    "verdicts ({} acquisitions, {:.3} s simulated):",
                    verdicts.acquisitions,
                    verdicts.sim_time.as_secs_f64()
                )?;
                write!(f, "{verdicts}")
            }
            Judgement::Families(verdicts) => {
                for (claim, verdict) in &verdicts.claims {
                    writeln!(f, "  {:<12} {verdict}", claim.name())?;
                }
                Ok(())
            }
            Judgement::Observed(verdicts) => {
                writeln!(f, "verdicts ({} acquisitions):", verdicts.acquisitions)?;
                write!(f, "{verdicts}")
            }
        }
    }
}

/// Judge a record by the rules its header names.
pub fn judge(record: &event::Record) -> Judgement {
    match &record.header.run.rules {
        event::Rules::Rows(_) => Judgement::Rows(Box::new(rows::judge_record(&record.header, &record.events))),
        event::Rules::Families(_) => Judgement::Families(families::judge_record(&record.header, &record.events)),
        event::Rules::Observed(_) => {
            Judgement::Observed(Box::new(observed::judge_record(&record.header, &record.events)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use families::{Claim, FamilyVerdicts, Verdict};

    /// A families' judgement lists each claim under its own name (T2-free apart from T2) with
    /// the verdict its words say.
    #[test]
    fn a_families_judgement_lists_each_claim_with_its_verdict() {
        let judgement = Judgement::Families(FamilyVerdicts {
            claims: vec![
                (Claim::T1Belief, Verdict::Violated("two holders".into())),
                (Claim::T2, Verdict::NoViolation),
                (Claim::T2Free, Verdict::NotChecked),
                (Claim::CWait, Verdict::Bounded("the run's time limit".into())),
            ],
        });
        assert_eq!(
            judgement.claim_verdicts(),
            vec![
                ("T1-belief", ClaimVerdict::Violated),
                ("T2", ClaimVerdict::Holds),
                ("T2-free", ClaimVerdict::NotExercised),
                ("C-wait", ClaimVerdict::Bounded),
            ]
        );
    }
}
