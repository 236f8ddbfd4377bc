//! How a cell is marked: the judgement types' text in the report (the "verdicts" column, the
//! contract columns, "Every violation found") and the compact views' one-word marks per aspect
//! and per contract item.

use cassalock_judge::{Aspect, ClaimId};
use cassalock_models::check::Verdict;

use super::claims::{contract_not_applicable, is_contract};
use super::grid::{Column, MatrixRow, Row};
use super::judgement::{Cell, ClaimSearch, Judgement, SimClaim};

/// "1 seed" or "N seeds".
pub(super) fn seeds(n: u64) -> String {
    if n == 1 {
        "1 seed".into()
    } else {
        format!("{n} seeds")
    }
}

/// A model verdict as a cell prints it.
pub(super) fn short(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Holds => "holds (exhaustive)".into(),
        // The checker's own wording: a clock-bounded run is never reported as plain "holds".
        Verdict::HoldsWithinClockBound(_) => verdict.to_string(),
        Verdict::Violated => "VIOLATED".into(),
        Verdict::Bounded(_) => "bounded".into(),
        Verdict::Reachable => "reachable".into(),
        Verdict::Unreachable => "unreachable".into(),
    }
}

impl Judgement {
    /// A sim claim's search result in words (no link).
    fn search_text(tried: u64, stopped_by_time: bool, search: &ClaimSearch) -> String {
        match search.first_violation {
            Some(seed) => format!("violated at seed {seed} ({} tried)", seeds(seed + 1)),
            None if stopped_by_time => {
                format!("stopped by the time limit after {}: not a verdict", seeds(tried))
            }
            None if search.exercised == 0 && search.bounded > 0 => {
                format!("bounded in {} of {}: no verdict", search.bounded, seeds(tried))
            }
            None if search.exercised == 0 => format!("no occasion in {}", seeds(tried)),
            None if search.bounded > 0 => format!(
                "no violation in {} ({} stopped at the run's bound: no verdict there)",
                seeds(tried),
                search.bounded
            ),
            None => format!("no violation in {}", seeds(tried)),
        }
    }

    /// A sim claim's search result, linked to the first failing seed's trace.
    fn search_markdown(tried: u64, stopped_by_time: bool, claim: &SimClaim) -> String {
        let text = Self::search_text(tried, stopped_by_time, &claim.search);
        match &claim.first_failure {
            Some(first) => format!("[{text}](matrix/{})", first.file),
            None => text,
        }
    }

    /// The "verdicts" column: the theorem-level claims.
    pub(super) fn markdown(&self) -> String {
        match self {
            Judgement::NotApplicable(why) => format!("n/a: {why}"),
            Judgement::Model {
                label,
                same_run_as: Some(column),
                ..
            } => format!("**{label}**: the same model run as the *{column}* row above (its verdicts count here too)"),
            Judgement::Model {
                label, states, claims, ..
            } => {
                let parts: Vec<String> = claims
                    .iter()
                    .map(|c| match &c.trace {
                        Some(trace) => format!("{} [{}](matrix/{})", c.name, short(&c.verdict), trace.name),
                        None => format!("{} {}", c.name, short(&c.verdict)),
                    })
                    .collect();
                format!("**{label}** ({states} states): {}", parts.join(", "))
            }
            Judgement::Sim {
                label,
                tried,
                stopped_by_time,
                fired,
                claims,
                stall_s,
                token_drops,
            } => {
                if *fired == 0 {
                    return format!("**{label}**: the fault never fired in {}: no verdict", seeds(*tried));
                }
                // Claims with the same result share it: "K3, T2: no violation in 200 seeds".
                let mut groups: Vec<(String, Vec<String>)> = Vec::new();
                for claim in claims.iter().filter(|c| !is_contract(c.search.claim)) {
                    let text = Self::search_markdown(*tried, *stopped_by_time, claim);
                    match groups.iter_mut().find(|(t, _)| *t == text) {
                        Some((_, ids)) => ids.push(claim.search.claim.to_string()),
                        None => groups.push((text, vec![claim.search.claim.to_string()])),
                    }
                }
                let parts: Vec<String> = groups
                    .iter()
                    .map(|(text, ids)| format!("{}: {text}", ids.join(", ")))
                    .collect();
                let fired = if fired < tried {
                    format!(", the fault fired in {fired} of them")
                } else {
                    String::new()
                };
                let mut line = format!("**{label}** ({} searched{fired}): {}", seeds(*tried), parts.join("; "));
                if let Some(stall) = stall_s {
                    line.push_str(&format!("; S1: GlobalTime stood still up to {stall:.1} s"));
                }
                if *token_drops > 0 {
                    line.push_str(&format!("; fencing tokens went down {token_drops} times"));
                }
                line
            }
        }
    }

    /// A contract column: this judgement's result on `claim` (`None`: a model, which does not
    /// judge the contract).
    pub(super) fn contract_markdown(&self, row: Row, claim: ClaimId) -> Option<String> {
        match self {
            Judgement::NotApplicable(_) => Some("n/a".into()),
            Judgement::Model { .. } => None,
            Judgement::Sim {
                tried,
                stopped_by_time,
                fired,
                claims,
                ..
            } => Some(match claims.iter().find(|c| c.search.claim == claim) {
                None => contract_not_applicable(row, claim).into(),
                Some(_) if *fired == 0 => "no verdict: the fault never fired".into(),
                Some(c) => Self::search_markdown(*tried, *stopped_by_time, c),
            }),
        }
    }

    /// The violations this judgement found, one line each, for "Every violation found".
    pub(super) fn findings(&self, row: Row, column: Column) -> Vec<String> {
        match self {
            Judgement::NotApplicable(_) => Vec::new(),
            Judgement::Model {
                same_run_as: Some(_), ..
            } => Vec::new(),
            Judgement::Model { claims, .. } => claims
                .iter()
                .filter(|c| c.verdict == Verdict::Violated)
                .filter_map(|c| {
                    let trace = c.trace.as_ref()?;
                    Some(format!(
                        "{} / {}: model: {} violated ({} steps): [trace](matrix/{})",
                        row.row_title(),
                        column.name(),
                        c.name,
                        trace.steps,
                        trace.name
                    ))
                })
                .collect(),
            Judgement::Sim { label, claims, .. } => claims
                .iter()
                .filter_map(|c| {
                    let first = c.first_failure.as_ref()?;
                    Some(format!(
                        "{} / {}: {label}: {} violated at seed {} ({} tried): `{}`",
                        row.row_title(),
                        column.name(),
                        c.search.claim,
                        first.seed,
                        seeds(first.seed + 1),
                        first.command
                    ))
                })
                .collect(),
        }
    }
}

/// The aspects the compact view shows apart, so that an unfair lock never reads as unsafe.
pub(super) const COMPACT_ASPECTS: [Aspect; 3] = [Aspect::Safety, Aspect::Liveness, Aspect::Fairness];

/// What the compact view says of one aspect (safety, liveness, fairness) of a cell.
pub(super) fn aspect_mark(cell: &Cell, aspect: Aspect) -> String {
    if matches!(cell.first(), Some(Judgement::NotApplicable(_))) {
        return "n/a".into();
    }
    let judged: Vec<(ClaimId, bool, bool)> = cell.iter().flat_map(|j| j.aspect_claims(aspect)).collect();
    let mut violated: Vec<ClaimId> = judged.iter().filter(|c| c.1).map(|c| c.0).collect();
    violated.sort();
    violated.dedup();
    if !violated.is_empty() {
        let ids: Vec<&str> = violated.iter().map(|c| c.as_str()).collect();
        return format!("**violated: {}**", ids.join(", "));
    }
    if aspect == Aspect::Liveness
        && cell
            .iter()
            .any(|j| j.model_verdict(ClaimId::S1) == Some(&Verdict::Reachable))
    {
        return "**S1 stall**".into();
    }
    if judged.is_empty() {
        // Checked only by a fault that never fired, or not checked at all.
        return if cell.iter().any(|j| j.checks(aspect)) {
            "no verdict".into()
        } else {
            "-".into()
        };
    }
    // Claims no check could decide (a model's last tick, a run's bound): never a pass.
    let mut bounded: Vec<ClaimId> = cell.iter().flat_map(|j| j.bounded_claims(aspect)).collect();
    bounded.sort();
    bounded.dedup();
    let bounded_ids: Vec<&str> = bounded.iter().map(|c| c.as_str()).collect();
    if judged.iter().all(|c| !c.2) {
        return if bounded.is_empty() {
            "no occasion".into()
        } else {
            format!("bounded: {}", bounded_ids.join(", "))
        };
    }
    let bounded_note = if bounded.is_empty() {
        String::new()
    } else {
        format!("; bounded: {}", bounded_ids.join(", "))
    };
    if cell.iter().any(|j| j.never_fired() && j.checks(aspect)) {
        // Some line's fault never fired: what was judged found nothing, the rest is unknown.
        return format!("no violation (part: no verdict){bounded_note}");
    }
    format!("no violation{bounded_note}")
}

/// What the compact contract view says of `claim` in a cell: the lowest first-violating seed
/// over the cell's simulator configurations, else the smallest search.
pub(super) fn contract_compact_mark(cell: &Cell, claim: ClaimId) -> String {
    let mut lowest: Option<u64> = None;
    let mut searched: Option<u64> = None;
    let (mut judged, mut exercised, mut stopped, mut unfired) = (false, false, false, false);
    for judgement in cell {
        let Judgement::Sim {
            tried,
            stopped_by_time,
            fired,
            claims,
            ..
        } = judgement
        else {
            continue;
        };
        let Some(c) = claims.iter().find(|c| c.search.claim == claim) else {
            continue;
        };
        judged = true;
        if *fired == 0 {
            unfired = true;
            continue;
        }
        if let Some(seed) = c.search.first_violation {
            lowest = Some(lowest.map_or(seed, |l| l.min(seed)));
        }
        searched = Some(searched.map_or(*tried, |s| s.min(*tried)));
        exercised |= c.search.exercised > 0;
        stopped |= *stopped_by_time;
    }
    match (lowest, searched) {
        _ if matches!(cell.first(), Some(Judgement::NotApplicable(_))) => "n/a".into(),
        (Some(seed), _) => format!("**seed {seed}**"),
        _ if !judged => "-".into(),
        _ if stopped => "time limit".into(),
        (None, Some(n)) if exercised => format!("none in {n}"),
        (None, Some(n)) => format!("no occasion in {n}"),
        (None, None) if unfired => "no verdict".into(),
        (None, None) => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::judgement::{FirstFailure, ModelClaim, TraceFile};

    fn model(claims: &[(ClaimId, Verdict, bool)]) -> Judgement {
        Judgement::Model {
            label: "model, m",
            states: 7,
            claims: claims
                .iter()
                .map(|(claim, verdict, traced)| ModelClaim {
                    claim: *claim,
                    name: claim.to_string(),
                    verdict: verdict.clone(),
                    trace: traced.then(|| TraceFile {
                        name: format!("x-{}.txt", claim.as_str().to_lowercase()),
                        steps: 4,
                    }),
                })
                .collect(),
            same_run_as: None,
        }
    }

    /// A sim judgement over 5 seeds: per claim, its first violating seed and the seeds that
    /// exercised it.
    fn sim_searched(fired: u64, stopped_by_time: bool, claims: &[(ClaimId, Option<u64>, u64)]) -> Judgement {
        Judgement::Sim {
            label: "sim, s",
            tried: 5,
            stopped_by_time,
            fired,
            claims: claims
                .iter()
                .map(|&(claim, first_violation, exercised)| SimClaim {
                    search: ClaimSearch {
                        bounded: 0,
                        claim,
                        first_violation,
                        exercised,
                    },
                    first_failure: first_violation.filter(|_| fired > 0).map(|seed| FirstFailure {
                        seed,
                        file: "y.txt".into(),
                        command: "cassalock replay".into(),
                    }),
                })
                .collect(),
            stall_s: None,
            token_drops: 0,
        }
    }

    fn sim(fired: u64, failures: &[(ClaimId, u64)]) -> Judgement {
        let claims: Vec<(ClaimId, Option<u64>, u64)> = failures
            .iter()
            .map(|&(claim, failures)| (claim, (failures > 0).then_some(2), 5))
            .collect();
        sim_searched(fired, false, &claims)
    }

    #[test]
    fn cells_render_as_the_matrix_always_wrote_them() {
        let m = model(&[
            (ClaimId::T1, Verdict::Holds, false),
            (ClaimId::T2, Verdict::Violated, true),
            (ClaimId::S1, Verdict::Reachable, true),
            (ClaimId::K3, Verdict::HoldsWithinClockBound(4), false),
        ]);
        assert_eq!(
            m.markdown(),
            "**model, m** (7 states): T1 holds (exhaustive), T2 [VIOLATED](matrix/x-t2.txt), S1 \
             [reachable](matrix/x-s1.txt), K3 holds within bound (clock <= 4 ticks)"
        );
        let s = sim(3, &[(ClaimId::K3, 0), (ClaimId::T1Belief, 2), (ClaimId::T2, 0)]);
        assert_eq!(
            s.markdown(),
            "**sim, s** (5 seeds searched, the fault fired in 3 of them): K3, T2: no violation in 5 seeds; \
             T1-belief: [violated at seed 2 (3 seeds tried)](matrix/y.txt)"
        );
        assert_eq!(
            sim(0, &[(ClaimId::K3, 1)]).markdown(),
            "**sim, s**: the fault never fired in 5 seeds: no verdict"
        );
        assert_eq!(
            s.findings(Row::Queue, Column::Pause),
            ["queue GetLock (L6) / pause: sim, s: T1-belief violated at seed 2 (3 seeds tried): `cassalock replay`"]
        );
        assert_eq!(
            m.findings(Row::Old, Column::None),
            ["old GetLock (L3-4) / none: model: T2 violated (4 steps): [trace](matrix/x-t2.txt)"]
        );
    }

    #[test]
    fn contract_columns_never_read_a_check_without_occasion_as_a_pass() {
        let s = sim_searched(
            5,
            false,
            &[
                (ClaimId::T1Belief, None, 5),
                (ClaimId::CFree, None, 0),
                (ClaimId::CRelease, Some(0), 4),
                (ClaimId::CToken, None, 5),
            ],
        );
        assert_eq!(
            s.contract_markdown(Row::Queue, ClaimId::CFree).as_deref(),
            Some("no occasion in 5 seeds")
        );
        assert_eq!(
            s.contract_markdown(Row::Queue, ClaimId::CRelease).as_deref(),
            Some("[violated at seed 0 (1 seed tried)](matrix/y.txt)")
        );
        assert_eq!(
            s.contract_markdown(Row::Queue, ClaimId::CToken).as_deref(),
            Some("no violation in 5 seeds")
        );
        assert_eq!(
            s.contract_markdown(Row::Queue, ClaimId::CTry).as_deref(),
            Some("n/a: clients call lock()")
        );
        // A model does not judge the contract: no entry, never "ok".
        assert_eq!(
            model(&[(ClaimId::T1, Verdict::Holds, false)]).contract_markdown(Row::Queue, ClaimId::CFree),
            None
        );
        // A liveness item of the contract (C-release) is not a safety finding.
        assert_eq!(aspect_mark(&vec![s.clone()], Aspect::Safety), "no violation");
        assert_eq!(
            aspect_mark(&vec![s.clone()], Aspect::Liveness),
            "**violated: C-release**"
        );
        assert_eq!(contract_compact_mark(&vec![s.clone()], ClaimId::CRelease), "**seed 0**");
        assert_eq!(
            contract_compact_mark(&vec![s.clone()], ClaimId::CFree),
            "no occasion in 5"
        );
        assert_eq!(contract_compact_mark(&vec![s], ClaimId::CToken), "none in 5");
        let stopped = sim_searched(5, true, &[(ClaimId::T2, None, 5), (ClaimId::CFree, Some(3), 4)]);
        assert_eq!(
            stopped.markdown(),
            "**sim, s** (5 seeds searched): T2: stopped by the time limit after 5 seeds: not a verdict"
        );
        // A violation found before the time limit is still a finding.
        assert_eq!(
            stopped.contract_markdown(Row::Queue, ClaimId::CFree).as_deref(),
            Some("[violated at seed 3 (4 seeds tried)](matrix/y.txt)")
        );
        assert_eq!(contract_compact_mark(&vec![stopped.clone()], ClaimId::T2), "time limit");
    }

    #[test]
    fn a_claim_no_check_could_decide_is_shown_bounded_never_as_a_plain_pass() {
        // A model's T2 that only the last tick breaks, beside a judged C-release: the liveness
        // mark names T2 as bounded.
        let model_bounded = vec![model(&[
            (ClaimId::T2, Verdict::Bounded("last tick".into()), false),
            (ClaimId::CRelease, Verdict::Holds, false),
        ])];
        assert_eq!(
            aspect_mark(&model_bounded, Aspect::Liveness),
            "no violation; bounded: T2"
        );
        // A seed search whose every run stopped at its bound with a client waiting.
        let mut search = sim(200, &[(ClaimId::T2, 0)]);
        if let Judgement::Sim { claims, .. } = &mut search {
            claims[0].search.exercised = 0;
            claims[0].search.bounded = 200;
        }
        assert_eq!(aspect_mark(&vec![search.clone()], Aspect::Liveness), "bounded: T2");
        if let Judgement::Sim { claims, .. } = &search {
            assert_eq!(
                Judgement::search_text(200, false, &claims[0].search),
                "bounded in 200 of 200 seeds: no verdict"
            );
        }
    }

    #[test]
    fn the_compact_view_keeps_safety_liveness_and_fairness_apart() {
        let na = vec![Judgement::NotApplicable("why")];
        assert_eq!(aspect_mark(&na, Aspect::Safety), "n/a");
        // The old lock with no faults: T1 holds, T2 and F-overtakes fail. Not "unsafe".
        let old_none = vec![
            model(&[
                (ClaimId::T1, Verdict::Holds, false),
                (ClaimId::FOvertakes, Verdict::Violated, true),
                (ClaimId::T2, Verdict::Violated, true),
            ]),
            sim(5, &[(ClaimId::T1Belief, 0), (ClaimId::K3, 0)]),
        ];
        assert_eq!(aspect_mark(&old_none, Aspect::Safety), "no violation");
        assert_eq!(aspect_mark(&old_none, Aspect::Liveness), "**violated: T2**");
        assert_eq!(aspect_mark(&old_none, Aspect::Fairness), "**violated: F-overtakes**");
        // Every violated claim of the aspect is named, once, whichever line found it.
        let broken = vec![
            model(&[(ClaimId::T1, Verdict::Violated, true)]),
            sim(5, &[(ClaimId::T1Belief, 2), (ClaimId::CToken, 1)]),
            sim(5, &[(ClaimId::T1Belief, 1)]),
        ];
        assert_eq!(
            aspect_mark(&broken, Aspect::Safety),
            "**violated: T1, T1-belief, C-token**"
        );
        assert_eq!(aspect_mark(&broken, Aspect::Fairness), "-");
        assert_eq!(
            aspect_mark(
                &vec![model(&[(ClaimId::S1, Verdict::Reachable, true)])],
                Aspect::Liveness
            ),
            "**S1 stall**"
        );
        // A fault that never fired hides its failures: no verdict, never a pass or a break.
        assert_eq!(
            aspect_mark(&vec![sim(0, &[(ClaimId::T1Belief, 3)])], Aspect::Safety),
            "no verdict"
        );
        assert_eq!(
            aspect_mark(
                &vec![
                    model(&[(ClaimId::T1, Verdict::Holds, false)]),
                    sim(0, &[(ClaimId::T1Belief, 3)])
                ],
                Aspect::Safety
            ),
            "no violation (part: no verdict)"
        );
        // A check that never had an occasion is not a pass.
        assert_eq!(
            aspect_mark(
                &vec![sim_searched(5, false, &[(ClaimId::CFree, None, 0)])],
                Aspect::Liveness
            ),
            "no occasion"
        );
        // A reachability check is neither safety nor liveness.
        assert_eq!(
            aspect_mark(
                &vec![model(&[(ClaimId::T5Race, Verdict::Reachable, true)])],
                Aspect::Safety
            ),
            "-"
        );
    }
}
