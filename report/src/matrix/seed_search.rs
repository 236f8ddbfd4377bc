//! Execution: a simulator line's seed search. Seeds 0, 1, 2, ... run in parallel batches,
//! each seed's run (thesis simulator or the families') kept as a few flags per claim, and the
//! search's aggregates ([`SimResult`]) are what its unit keeps.

use std::time::{Duration, Instant};

use cassalock_judge::{ClaimId, ClaimVerdict};
use cassalock_sim::family::scenario::build as build_family;
use cassalock_sim::family::{run_family, Verdict as FamilyVerdict};
use cassalock_sim::run::{run, RunOutcome};
use cassalock_sim::scenario::{build, SimOptions};
use rayon::prelude::*;

use super::family_sim::{client_bugs, expected_claim};
use super::grid::Row;
use super::judgement::ClaimSearch;
use super::options::MatrixOptions;
use super::sources::{algorithm, Firing};

/// Did the fault of a sim source fire in this run?
fn fired(firing: Firing, outcome: &RunOutcome) -> bool {
    match firing {
        Firing::Configured => true,
        Firing::Injected => outcome.verdicts.faults_begun > 0,
        Firing::RenewalDuringRelease => outcome.verdicts.renewal_during_release,
    }
}

/// What one seed's run says of one claim.
#[derive(Clone, Copy, Debug, Default)]
struct Check {
    violated: bool,
    /// The run gave the check an occasion.
    exercised: bool,
    /// The run stopped at its bound before the check could decide.
    bounded: bool,
}

/// What one seed's run says, kept small: the run's records are dropped in the worker.
pub(super) struct SeedOutcome {
    fired: bool,
    /// Per searched claim.
    checks: Vec<Check>,
    /// S1 stall, seconds.
    stall_s: Option<f64>,
    token_drops: u64,
}

/// What a sim source's seed search found: aggregates only, whatever the number of seeds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimResult {
    /// Seeds tried: 0..tried.
    pub(super) tried: u64,
    /// The wall-time cap ended the search before the seed budget.
    pub(super) stopped_by_time: bool,
    pub(super) fired: u64,
    pub(super) claims: Vec<ClaimSearch>,
    /// Longest GlobalTime stall (S1 runs).
    pub(super) stall_s: Option<f64>,
    pub(super) token_drops: u64,
}

impl SimResult {
    fn new(claims: &[ClaimId]) -> Self {
        SimResult {
            tried: 0,
            stopped_by_time: false,
            fired: 0,
            claims: claims
                .iter()
                .map(|&claim| ClaimSearch {
                    claim,
                    first_violation: None,
                    exercised: 0,
                    bounded: 0,
                })
                .collect(),
            stall_s: None,
            token_drops: 0,
        }
    }

    /// Add the next seed's outcome (seeds come in order: `self.tried` is its seed).
    fn add(&mut self, outcome: &SeedOutcome) {
        let seed = self.tried;
        self.tried += 1;
        self.fired += u64::from(outcome.fired);
        self.token_drops += outcome.token_drops;
        if let Some(stall) = outcome.stall_s {
            self.stall_s = Some(self.stall_s.map_or(stall, |s: f64| s.max(stall)));
        }
        for (search, check) in self.claims.iter_mut().zip(&outcome.checks) {
            search.exercised += u64::from(check.exercised);
            search.bounded += u64::from(check.bounded);
            if check.violated {
                search.first_violation.get_or_insert(seed);
            }
        }
    }

    /// Every searched claim has its first violation: nothing left to search for.
    fn all_violated(&self) -> bool {
        self.claims.iter().all(|c| c.first_violation.is_some())
    }

    pub(super) fn first_violation(&self, claim: ClaimId) -> Option<u64> {
        self.claims
            .iter()
            .find(|c| c.claim == claim)
            .and_then(|c| c.first_violation)
    }
}

/// The budget of one seed search.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budget {
    max_seeds: u64,
    time: Duration,
    /// Seeds run in parallel at a time. The result does not depend on it: seeds past the
    /// point where the search stops are dropped unread.
    batch: u64,
}

impl Budget {
    pub(super) fn of(options: &MatrixOptions) -> Self {
        Budget {
            max_seeds: options.max_seeds,
            time: options.cell_time,
            batch: (options.jobs.max(1) as u64) * 4,
        }
    }
}

/// Run one seed of a sim source and keep only what the search needs.
pub(super) fn one_seed(
    row: Row,
    scenario: &str,
    sim_options: &SimOptions,
    firing: Firing,
    claims: &[ClaimId],
    seed: u64,
) -> SeedOutcome {
    let config = build(scenario, seed, algorithm(row), sim_options).expect("a known scenario");
    let outcome = run(&config, seed, firing == Firing::RenewalDuringRelease);
    SeedOutcome {
        fired: fired(firing, &outcome),
        checks: claims
            .iter()
            .map(|&claim| {
                let check = outcome.verdicts.check(claim);
                Check {
                    violated: check.verdict.is_violated(),
                    exercised: check.verdict != ClaimVerdict::NotExercised,
                    bounded: check.bounded(),
                }
            })
            .collect(),
        stall_s: outcome.verdicts.global_time_stall.map(|d| d.as_secs_f64()),
        token_drops: outcome.verdicts.token_drops as u64,
    }
}

/// The seed search of a sim source: seeds 0, 1, 2, ... in parallel batches of `budget.batch`,
/// read in seed order, until every claim in `claims` has its first violation, or the seed
/// budget, or the wall-time cap (checked between batches). Each claim's first violation is
/// its lowest violating seed whatever the batch size or thread count, and the aggregates cover
/// exactly the seeds up to where the search stopped, so the result is a function of the
/// options, unless the time cap stopped it (`stopped_by_time`).
pub(super) fn search(
    pool: &rayon::ThreadPool,
    one_seed: &(dyn Fn(u64) -> SeedOutcome + Sync),
    claims: &[ClaimId],
    budget: Budget,
) -> SimResult {
    let started = Instant::now();
    let mut result = SimResult::new(claims);
    let mut next = 0u64;
    'search: while next < budget.max_seeds {
        if started.elapsed() >= budget.time {
            result.stopped_by_time = true;
            break;
        }
        let end = next.saturating_add(budget.batch.max(1)).min(budget.max_seeds);
        let outcomes: Vec<SeedOutcome> = pool.install(|| (next..end).into_par_iter().map(one_seed).collect());
        for outcome in &outcomes {
            result.add(outcome);
            if result.all_violated() {
                break 'search;
            }
        }
        next = end;
    }
    result
}

/// One seed of a family scenario, kept small.
pub(super) fn family_one_seed(scenario: &str, claims: &[ClaimId], seed: u64) -> SeedOutcome {
    let built = build_family(scenario, seed).expect("a scenario of the family_sim table");
    let outcome = run_family(&built, seed, false);
    let checks = claims
        .iter()
        .map(|&claim| {
            let mut check = Check::default();
            // T2 gathers T2 and T2-free: either judge's violation, occasion or bound counts.
            for (judged, verdict) in &outcome.verdicts.claims {
                if judged.id() != claim {
                    continue;
                }
                match verdict {
                    FamilyVerdict::Violated(_) => {
                        check.violated = true;
                        check.exercised = true;
                    }
                    FamilyVerdict::NoViolation => check.exercised = true,
                    FamilyVerdict::Bounded(_) => check.bounded = true,
                    FamilyVerdict::NotChecked => {}
                }
            }
            check
        })
        .collect();
    SeedOutcome {
        fired: !built.injects_faults() || outcome.fault_fired(),
        checks,
        stall_s: None,
        token_drops: 0,
    }
}

/// A client bug's seed search for the claim its scenario exists to violate
/// (`FamilyScenario::expect_violated`): [`client_bugs`]`()[index]`.
pub(super) fn client_bug_search(pool: &rayon::ThreadPool, index: usize, budget: Budget) -> SimResult {
    let (scenario, _) = client_bugs()[index];
    let claim = expected_claim(scenario).1;
    search(
        pool,
        &|seed| family_one_seed(scenario, &[claim], seed),
        &[claim],
        budget,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("pool")
    }

    fn budget(max_seeds: u64, batch: u64) -> Budget {
        Budget {
            max_seeds,
            time: Duration::from_secs(600),
            batch,
        }
    }

    #[test]
    fn the_seed_search_reports_the_lowest_violating_seed_whatever_the_batch() {
        let pool = pool();
        let options = SimOptions::default();
        // A pause past the TTL breaks T1-belief (K1) in every seed: the search stops at seed 0.
        let k1 = search(
            &pool,
            &|seed| {
                one_seed(
                    Row::Queue,
                    "pause",
                    &options,
                    Firing::Injected,
                    &[ClaimId::T1Belief],
                    seed,
                )
            },
            &[ClaimId::T1Belief],
            budget(50, 4),
        );
        assert_eq!(k1.tried, 1, "stops at the first violation, not at the budget");
        assert_eq!(k1.first_violation(ClaimId::T1Belief), Some(0));
        // K3 never breaks here: the search runs the whole budget, and its result (aggregates
        // over exactly the seeds tried) is the same with any batch size.
        let claims = [ClaimId::T1Belief, ClaimId::K3];
        let one = search(
            &pool,
            &|seed| one_seed(Row::Queue, "pause", &options, Firing::Injected, &claims, seed),
            &claims,
            budget(5, 1),
        );
        let four = search(
            &pool,
            &|seed| one_seed(Row::Queue, "pause", &options, Firing::Injected, &claims, seed),
            &claims,
            budget(5, 4),
        );
        assert_eq!(one, four);
        assert_eq!(one.tried, 5);
        assert_eq!(one.first_violation(ClaimId::K3), None);
        assert!(!one.stopped_by_time);
    }

    #[test]
    fn a_search_stopped_by_the_time_cap_says_so() {
        let pool = pool();
        let stopped = search(
            &pool,
            &|seed| {
                one_seed(
                    Row::Queue,
                    "contention",
                    &SimOptions::default(),
                    Firing::Configured,
                    &[ClaimId::T1Belief],
                    seed,
                )
            },
            &[ClaimId::T1Belief],
            Budget {
                max_seeds: 10,
                time: Duration::ZERO,
                batch: 2,
            },
        );
        assert!(stopped.stopped_by_time);
        assert_eq!(stopped.tried, 0);
    }

    #[test]
    fn a_family_seed_files_t2_free_under_t2_and_its_c_token_under_c_token() {
        // etcd-contention fences (C-token judged) and has several clients (T2 judged).
        let claims = [ClaimId::T2, ClaimId::CToken, ClaimId::FOrder];
        let outcome = family_one_seed("etcd-contention", &claims, 0);
        assert!(outcome.fired, "a control's conditions are always in effect");
        let [t2, token, order] = [outcome.checks[0], outcome.checks[1], outcome.checks[2]];
        assert!(t2.exercised && !t2.violated, "{t2:?}");
        assert!(token.exercised && !token.violated, "{token:?}");
        assert!(!order.exercised, "F-order is judged for the fair lock only: {order:?}");
    }
}
