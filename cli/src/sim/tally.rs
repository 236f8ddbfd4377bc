//! What a sweep keeps of its runs: each run cut down to its summary ([`SeedSummary`]), and the
//! summaries of one algorithm's runs tallied ([`Tally`]) in a fixed size whatever the number of
//! seeds, over a range, a shard of it, or shards merged.

use cassalock_judge::ClaimVerdict;
use cassalock_sim::run::RunOutcome;
use cassalock_sim::scenario::FaultKind;

/// Everything a sweep prints about one algorithm's runs, in a fixed size whatever the number of
/// seeds: tallied over a whole range, a shard of it, or shards merged ([`Tally::absorb`]).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Tally {
    /// The first seed whose run panicked (a harness bug).
    pub(crate) panics: Option<u64>,
    pub(crate) runs: u64,
    pub(crate) failed_runs: u64,
    /// Per claim: its name, failing runs, the first failing seed.
    pub(super) per_claim: Vec<(String, u64, Option<u64>)>,
    /// Per claim, where it was first seen (seed, place in that seed's claims): a merge orders
    /// the claims by it, as one run over the whole range does.
    pub(super) claim_seen: Vec<(u64, usize)>,
    /// Runs with a claim a bound left undecided (T2 when the run's time limit came first).
    pub(super) bounded_runs: u64,
    /// Per claim a bound left undecided in some run: its name, those runs, the first such seed;
    /// kept sorted by name, so that shards merge in any order (printed in `per_claim`'s order).
    pub(super) bounded: Vec<(String, u64, Option<u64>)>,
    pub(super) acquisitions: u64,
    /// Simulated time over all runs, nanoseconds (exact, so shards add up to the same figure).
    pub(super) sim_nanos: u128,
    pub(super) hashes: u64,
    /// Store faults injected: (before apply, after apply).
    pub(super) store_faults: (u64, u64),
    /// Per claim (the index in `per_claim`), the failing runs whose plan had each fault kind.
    pub(super) failures_by_kind: Vec<[u64; FaultKind::NAMES.len()]>,
    /// Runs with a planned fault that never fired, and how many such faults in all.
    pub(super) unfired: (u64, u64),
    /// S1: the longest the GlobalTime value stood still in any run (nanoseconds), and the
    /// lowest seed that showed it; `None` where no run read the time service.
    #[serde(default)]
    pub(super) s1_longest_stall: Option<(u128, u64)>,
}

/// The longer of two S1 stalls; on a tie, the lower seed (so shards merge to one run's figure).
fn longer_stall(a: Option<(u128, u64)>, b: Option<(u128, u64)>) -> Option<(u128, u64)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) { b } else { a }),
        (a, b) => a.or(b),
    }
}

impl Tally {
    /// Add another shard's tally of the same sweep and algorithm (no seed in common).
    pub(crate) fn absorb(&mut self, other: &Tally) {
        self.panics = match (self.panics, other.panics) {
            (Some(mine), Some(theirs)) => Some(mine.min(theirs)),
            (mine, theirs) => mine.or(theirs),
        };
        self.runs += other.runs;
        self.failed_runs += other.failed_runs;
        self.bounded_runs += other.bounded_runs;
        for (claim, runs, first) in &other.bounded {
            match self.bounded.iter_mut().find(|(known, _, _)| known == claim) {
                Some(entry) => {
                    entry.1 += runs;
                    entry.2 = match (entry.2, *first) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                None => self.bounded.push((claim.clone(), *runs, *first)),
            }
        }
        self.bounded.sort_by(|a, b| a.0.cmp(&b.0));
        self.acquisitions += other.acquisitions;
        self.sim_nanos += other.sim_nanos;
        self.hashes ^= other.hashes;
        self.store_faults.0 += other.store_faults.0;
        self.store_faults.1 += other.store_faults.1;
        self.unfired.0 += other.unfired.0;
        self.unfired.1 += other.unfired.1;
        self.s1_longest_stall = longer_stall(self.s1_longest_stall, other.s1_longest_stall);
        self.failures_by_kind
            .resize(self.per_claim.len(), [0; FaultKind::NAMES.len()]);
        for (index, (claim, failures, first)) in other.per_claim.iter().enumerate() {
            let by_kind = other
                .failures_by_kind
                .get(index)
                .copied()
                .unwrap_or([0; FaultKind::NAMES.len()]);
            let seen = other.claim_seen.get(index).copied().unwrap_or((u64::MAX, usize::MAX));
            match self.per_claim.iter().position(|(known, _, _)| known == claim) {
                Some(mine) => {
                    let entry = &mut self.per_claim[mine];
                    entry.1 += failures;
                    entry.2 = match (entry.2, *first) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    self.claim_seen[mine] = self.claim_seen[mine].min(seen);
                    for (count, more) in self.failures_by_kind[mine].iter_mut().zip(by_kind) {
                        *count += more;
                    }
                }
                None => {
                    self.per_claim.push((claim.clone(), *failures, *first));
                    self.claim_seen.push(seen);
                    self.failures_by_kind.push(by_kind);
                }
            }
        }
        // The order one run gives: each claim where it first appeared.
        let mut order: Vec<usize> = (0..self.per_claim.len()).collect();
        order.sort_by_key(|&index| self.claim_seen[index]);
        self.per_claim = order.iter().map(|&index| self.per_claim[index].clone()).collect();
        self.claim_seen = order.iter().map(|&index| self.claim_seen[index]).collect();
        self.failures_by_kind = order.iter().map(|&index| self.failures_by_kind[index]).collect();
    }
}

/// What a sweep keeps of one run: its figures and each claim's pass or fail, not its records.
pub(super) struct SeedSummary {
    pub(super) seed: u64,
    pub(super) acquisitions: u64,
    /// Store requests of the lock clients (renewals and releases included).
    pub(super) requests: u64,
    pub(super) sim_seconds: f64,
    pub(super) sim_nanos: u128,
    pub(super) trace_hash: u64,
    pub(super) all_passed: bool,
    /// Each claim's verdict in this run (a claim a run gave no occasion to counts as passed).
    pub(super) claims: Vec<(&'static str, ClaimVerdict)>,
    /// Store faults injected: (before apply, after apply).
    pub(super) store_faults: (u64, u64),
    /// Which kinds of fault the plan has (bit i: `FaultKind::NAMES[i]`).
    pub(super) fault_kinds: u32,
    /// Planned faults that never fired.
    pub(super) faults_unfired: u64,
    /// S1: the longest the GlobalTime value stood still, nanoseconds (runs that read it).
    pub(super) s1_stall_nanos: Option<u128>,
}

impl SeedSummary {
    pub(super) fn of(outcome: &RunOutcome) -> Self {
        SeedSummary {
            seed: outcome.seed,
            acquisitions: outcome.verdicts.acquisitions as u64,
            requests: outcome.requests,
            sim_seconds: outcome.sim_time.as_secs_f64(),
            sim_nanos: outcome.sim_time.as_nanos(),
            trace_hash: outcome.trace_hash,
            all_passed: outcome.verdicts.all_passed(),
            store_faults: (
                outcome.verdicts.store_faults_before_apply as u64,
                outcome.verdicts.store_faults_after_apply as u64,
            ),
            claims: outcome
                .verdicts
                .checks
                .iter()
                .map(|check| (check.claim.as_str(), check.verdict))
                .collect(),
            fault_kinds: outcome
                .config
                .faults
                .iter()
                .fold(0, |kinds, fault| kinds | 1 << fault.kind.index()),
            faults_unfired: outcome.verdicts.faults_unfired as u64,
            s1_stall_nanos: outcome.verdicts.global_time_stall.map(|stall| stall.as_nanos()),
        }
    }
}

pub(super) fn tally_outcome(tally: &mut Tally, outcome: &SeedSummary) {
    tally.runs += 1;
    tally.acquisitions += outcome.acquisitions;
    tally.sim_nanos += outcome.sim_nanos;
    tally.hashes ^= outcome.trace_hash;
    tally.store_faults.0 += outcome.store_faults.0;
    tally.store_faults.1 += outcome.store_faults.1;
    tally.s1_longest_stall = longer_stall(
        tally.s1_longest_stall,
        outcome.s1_stall_nanos.map(|nanos| (nanos, outcome.seed)),
    );
    if !outcome.all_passed {
        tally.failed_runs += 1;
    }
    if outcome
        .claims
        .iter()
        .any(|(_, verdict)| *verdict == ClaimVerdict::Bounded)
    {
        tally.bounded_runs += 1;
    }
    for &(claim, verdict) in &outcome.claims {
        if verdict != ClaimVerdict::Bounded {
            continue;
        }
        match tally.bounded.iter_mut().find(|(known, _, _)| known == claim) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 = Some(entry.2.map_or(outcome.seed, |s| s.min(outcome.seed)));
            }
            None => {
                tally.bounded.push((claim.to_owned(), 1, Some(outcome.seed)));
                tally.bounded.sort_by(|a, b| a.0.cmp(&b.0));
            }
        }
    }
    for (place, &(claim, verdict)) in outcome.claims.iter().enumerate() {
        let passed = !verdict.is_violated();
        let entry = match tally.per_claim.iter_mut().position(|(known, _, _)| known == claim) {
            Some(i) => &mut tally.per_claim[i],
            None => {
                tally.per_claim.push((claim.to_owned(), 0, None));
                tally.claim_seen.push((outcome.seed, place));
                tally.per_claim.last_mut().expect("pushed")
            }
        };
        if !passed {
            entry.1 += 1;
            entry.2 = Some(entry.2.map_or(outcome.seed, |s| s.min(outcome.seed)));
        }
    }
    tally
        .failures_by_kind
        .resize(tally.per_claim.len(), [0; FaultKind::NAMES.len()]);
    for &(claim, verdict) in &outcome.claims {
        if !verdict.is_violated() {
            continue;
        }
        let index = tally
            .per_claim
            .iter()
            .position(|(known, _, _)| known == claim)
            .expect("tallied above");
        for (kind, count) in tally.failures_by_kind[index].iter_mut().enumerate() {
            *count += u64::from(outcome.fault_kinds >> kind & 1);
        }
    }
    if outcome.faults_unfired > 0 {
        tally.unfired.0 += 1;
        tally.unfired.1 += outcome.faults_unfired;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_tallied_by_the_fault_kinds_of_their_plans_and_unfired_faults_counted() {
        let run = |seed, passed, fault_kinds, faults_unfired| SeedSummary {
            seed,
            acquisitions: 1,
            requests: 8,
            sim_seconds: 1.0,
            sim_nanos: 1_000_000_000,
            trace_hash: 0,
            all_passed: passed,
            claims: vec![
                ("T1-belief", ClaimVerdict::from_holds(passed)),
                ("T2", ClaimVerdict::Holds),
            ],
            store_faults: (0, 0),
            fault_kinds,
            faults_unfired,
            s1_stall_nanos: None,
        };
        let mut tally = Tally::default();
        tally_outcome(&mut tally, &run(1, false, 0b101, 0)); // pause-holder, kill-holder
        tally_outcome(&mut tally, &run(2, false, 0b001, 2)); // pause-holder, 2 never fired
        tally_outcome(&mut tally, &run(3, true, 0b111, 1));
        let t1 = &tally.failures_by_kind[0];
        assert_eq!(FaultKind::NAMES[0], "pause-holder");
        assert_eq!((t1[0], t1[1], t1[2]), (2, 0, 1), "passing runs are not counted");
        assert_eq!(
            tally.failures_by_kind[1],
            [0; FaultKind::NAMES.len()],
            "T2 never failed"
        );
        assert_eq!(tally.unfired, (2, 3));
    }

    #[test]
    fn shards_tallies_absorbed_in_any_order_equal_the_whole_runs_tally() {
        // Each claim: held (true), violated (false); T2 is bounded in every fourth seed.
        let run = |seed: u64, claims: Vec<(&'static str, bool)>| SeedSummary {
            seed,
            acquisitions: seed,
            requests: seed,
            sim_seconds: 0.0,
            sim_nanos: u128::from(seed) * 1_000_003,
            trace_hash: seed,
            all_passed: claims.iter().all(|(_, passed)| *passed),
            claims: claims
                .into_iter()
                .map(|(claim, passed)| {
                    let verdict = match (claim, passed) {
                        ("T2", true) if seed % 4 == 1 => ClaimVerdict::Bounded,
                        ("K3", true) if seed % 6 == 4 => ClaimVerdict::Bounded,
                        (_, passed) => ClaimVerdict::from_holds(passed),
                    };
                    (claim, verdict)
                })
                .collect(),
            store_faults: (seed % 2, seed % 3),
            fault_kinds: 1 << (seed % 4),
            faults_unfired: seed % 2,
            s1_stall_nanos: None,
        };
        // Claims that first appear in later seeds, in different places: the order must be the
        // whole run's, wherever each shard first saw them.
        let runs: Vec<SeedSummary> = (0..12u64)
            .map(|seed| match seed {
                0..=2 => run(seed, vec![("T2", true)]),
                3 => run(seed, vec![("K3", seed % 2 == 0), ("T2", false)]),
                _ => run(
                    seed,
                    vec![("T1-belief", seed % 3 != 0), ("T2", true), ("K3", seed % 5 != 0)],
                ),
            })
            .collect();
        let mut whole = Tally::default();
        let mut shards = [Tally::default(), Tally::default(), Tally::default()];
        for summary in &runs {
            tally_outcome(&mut whole, summary);
            tally_outcome(&mut shards[(summary.seed % 3) as usize], summary);
        }
        whole.panics = Some(7);
        shards[1].panics = Some(7);
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
            let mut merged = Tally::default();
            for index in order {
                merged.absorb(&shards[index]);
            }
            assert_eq!(format!("{merged:?}"), format!("{whole:?}"), "{order:?}");
        }
        assert_eq!(
            whole.bounded_runs, 4,
            "T2 in seeds 1, 5, 9; K3 in seed 4 (10 violates it)"
        );
        assert_eq!(
            whole.bounded,
            vec![("K3".to_owned(), 1, Some(4)), ("T2".to_owned(), 3, Some(1))]
        );
    }
}
