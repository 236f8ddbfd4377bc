//! "What the contract checks found", the last section of `reports/matrix.md`: for each contract
//! item (docs/contract.md), the figures the simulator measured on the scenarios that expose it,
//! with the thesis's listings as written (before) and with the library's default (after, the
//! fixes of `src/algo`). Every number is computed here from runs, so the "after" column follows
//! the library when its fixes change.

use cassalock_judge::text::count;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use cassalock::driver::Algorithm;
use cassalock_judge::{ClaimId, ClaimVerdict};
use cassalock_sim::contract::ContractBounds;
use cassalock_sim::run::run;
use cassalock_sim::scenario::{build, SimOptions};
use rayon::prelude::*;

/// The contract items, in docs/contract.md's order.
const ITEMS: [ClaimId; 5] = [
    ClaimId::CTry,
    ClaimId::CFree,
    ClaimId::CRelease,
    ClaimId::CLost,
    ClaimId::CToken,
];

/// A scenario with its options, as `cassalock sim` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Scenario {
    name: &'static str,
    try_lock: bool,
}

impl Scenario {
    fn flags(self) -> String {
        if self.try_lock {
            format!("{} --try-lock", self.name)
        } else {
            self.name.to_owned()
        }
    }
}

const LOSS: Scenario = Scenario {
    name: "loss",
    try_lock: false,
};
const SKEW_TRY: Scenario = Scenario {
    name: "skew",
    try_lock: true,
};
const SKEW: Scenario = Scenario {
    name: "skew",
    try_lock: false,
};
const CL_ONE: Scenario = Scenario {
    name: "cl-one",
    try_lock: false,
};

/// The scenarios that expose each item (docs/contract.md, "What the checks found").
fn exposing(item: ClaimId) -> &'static [Scenario] {
    match item {
        ClaimId::CTry => &[SKEW_TRY],
        ClaimId::CFree => &[LOSS],
        ClaimId::CRelease => &[CL_ONE, LOSS],
        ClaimId::CLost => &[SKEW],
        _ => &[SKEW, LOSS],
    }
}

const ALGORITHMS: [Algorithm; 2] = [Algorithm::Old, Algorithm::Queue];

/// One item's count over the seeds of a run set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct ItemCount {
    violated: u64,
    first_violation: Option<u64>,
    exercised: u64,
}

/// One seed's figures, kept small (the run's records are dropped in the worker).
#[derive(Clone, Debug, Default)]
struct SeedFigures {
    items: [(bool, bool); 5],
    try_calls: u64,
    most_try_requests: u64,
    longest_try: Option<Duration>,
    longest_hold: Duration,
    failed_calls: u64,
    leftover_judged_max: Option<Duration>,
    leftover_max: Option<Duration>,
    handovers: u64,
    handover_max: Option<Duration>,
    lost_judged: u64,
    lost_lag_max: Option<Duration>,
    token_drops: u64,
    legit_refused: u64,
    bounds: ContractBounds,
}

/// Aggregates over the seeds of one run set: running maxima and counts only (a matrix shard's
/// result for the run set).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Figures {
    tried: u64,
    stopped_by_time: bool,
    items: [ItemCount; 5],
    try_calls: u64,
    most_try_requests: u64,
    longest_try: Option<Duration>,
    longest_hold: Duration,
    failed_calls: u64,
    leftover_judged_max: Option<Duration>,
    leftover_max: Option<Duration>,
    handovers: u64,
    handover_max: Option<Duration>,
    lost_judged: u64,
    lost_lag_max: Option<Duration>,
    token_drops: u64,
    legit_refused: u64,
    /// The bounds of the first seed (they follow from the scenario's configuration).
    bounds: Option<ContractBounds>,
}

fn max_opt(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

impl Figures {
    fn add(&mut self, seed: &SeedFigures) {
        let index = self.tried;
        self.tried += 1;
        for (count, &(violated, exercised)) in self.items.iter_mut().zip(&seed.items) {
            count.exercised += u64::from(exercised);
            if violated {
                count.violated += 1;
                count.first_violation.get_or_insert(index);
            }
        }
        self.try_calls += seed.try_calls;
        self.most_try_requests = self.most_try_requests.max(seed.most_try_requests);
        self.longest_try = max_opt(self.longest_try, seed.longest_try);
        self.longest_hold = self.longest_hold.max(seed.longest_hold);
        self.failed_calls += seed.failed_calls;
        self.leftover_judged_max = max_opt(self.leftover_judged_max, seed.leftover_judged_max);
        self.leftover_max = max_opt(self.leftover_max, seed.leftover_max);
        self.handovers += seed.handovers;
        self.handover_max = max_opt(self.handover_max, seed.handover_max);
        self.lost_judged += seed.lost_judged;
        self.lost_lag_max = max_opt(self.lost_lag_max, seed.lost_lag_max);
        self.token_drops += seed.token_drops;
        self.legit_refused += seed.legit_refused;
        self.bounds.get_or_insert(seed.bounds);
    }

    fn item(&self, item: ClaimId) -> ItemCount {
        ITEMS
            .iter()
            .position(|&i| i == item)
            .map_or_else(ItemCount::default, |i| self.items[i])
    }
}

/// A run set: a scenario, an algorithm, and the thesis's listings or the library's default.
pub type Key = (Scenario, Algorithm, bool);

/// Everything the section is rendered from.
#[derive(Clone, Debug)]
pub struct ContractFindings {
    seeds: u64,
    runs: BTreeMap<Key, Figures>,
}

impl ContractFindings {
    /// The run sets the wall-time cap stopped before their seeds were done.
    pub fn stopped_by_time(&self) -> Vec<String> {
        self.runs
            .iter()
            .filter(|(_, figures)| figures.stopped_by_time)
            .map(|((scenario, algorithm, thesis), figures)| {
                format!(
                    "contract findings: {} --algorithm {}{} (after {} seeds)",
                    scenario.flags(),
                    algorithm.name(),
                    if *thesis { " --thesis-listings" } else { "" },
                    figures.tried
                )
            })
            .collect()
    }
}

fn one_seed(scenario: Scenario, algorithm: Algorithm, thesis: bool, seed: u64) -> SeedFigures {
    let options = SimOptions {
        try_lock: scenario.try_lock,
        thesis_listings: thesis,
        ..SimOptions::default()
    };
    let config = build(scenario.name, seed, algorithm, &options).expect("a known scenario");
    let outcome = run(&config, seed, false);
    let v = &outcome.verdicts;
    let c = &v.contract;
    let mut items = [(false, false); 5];
    for (slot, item) in items.iter_mut().zip(ITEMS) {
        let check = v.check(item);
        *slot = (check.verdict.is_violated(), check.verdict != ClaimVerdict::NotExercised);
    }
    SeedFigures {
        items,
        try_calls: c.try_calls as u64,
        most_try_requests: c.most_try_requests,
        longest_try: c.longest_try.map(|(took, _)| took),
        longest_hold: c.longest_hold,
        failed_calls: c.failed_calls as u64,
        leftover_judged_max: c.leftover_judged_max.as_ref().map(|(d, _)| *d),
        leftover_max: c.leftover_max,
        handovers: c.handovers as u64,
        handover_max: c.handover_max.as_ref().map(|(d, _)| *d),
        lost_judged: c.lost_judged as u64,
        lost_lag_max: c.lost_lag_max.as_ref().map(|(d, _)| *d),
        token_drops: v.token_drops as u64,
        legit_refused: v.legit_refused as u64,
        bounds: c.bounds,
    }
}

/// Run seeds 0..seeds of one run set in parallel batches, folded in seed order, until done or
/// the wall-time cap (checked between batches).
fn run_set(pool: &rayon::ThreadPool, key: Key, seeds: u64, time: Duration, batch: u64) -> Figures {
    let (scenario, algorithm, thesis) = key;
    let started = Instant::now();
    let mut figures = Figures::default();
    let mut next = 0u64;
    while next < seeds {
        if started.elapsed() >= time {
            figures.stopped_by_time = true;
            break;
        }
        let end = next.saturating_add(batch.max(1)).min(seeds);
        let batch: Vec<SeedFigures> = pool.install(|| {
            (next..end)
                .into_par_iter()
                .map(|seed| one_seed(scenario, algorithm, thesis, seed))
                .collect()
        });
        for seed in &batch {
            figures.add(seed);
        }
        next = end;
    }
    figures
}

/// Every run set the section shows, in the order the matrix's units list them.
pub fn keys() -> Vec<Key> {
    let mut keys: Vec<Key> = Vec::new();
    for item in ITEMS {
        for &scenario in exposing(item) {
            for algorithm in ALGORITHMS {
                for thesis in [true, false] {
                    let key = (scenario, algorithm, thesis);
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
            }
        }
    }
    keys
}

/// Run the run set [`keys`]`()[index]`: seeds `0..seeds`, within the cell time cap `time`,
/// `jobs` runs at a time.
pub fn run_key(pool: &rayon::ThreadPool, index: usize, seeds: u64, time: Duration, jobs: usize) -> Figures {
    let batch = (jobs.max(1) as u64) * 4;
    run_set(pool, keys()[index], seeds, time, batch)
}

/// The section's findings from every run set's figures, in [`keys`] order.
pub fn assemble(seeds: u64, figures: Vec<Figures>) -> ContractFindings {
    let keys = keys();
    debug_assert_eq!(keys.len(), figures.len(), "one figure per run set");
    ContractFindings {
        seeds,
        runs: keys.into_iter().zip(figures).collect(),
    }
}

fn secs(duration: Duration) -> String {
    format!("{:.2} s", duration.as_secs_f64())
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "violated in k of N seeds (first: seed S)", "no violation in N seeds", "no occasion in N
/// seeds", or the time limit.
fn verdict(figures: &Figures, item: ClaimId) -> String {
    let count = figures.item(item);
    let tried = plural(figures.tried, "seed", "seeds");
    match count.first_violation {
        Some(first) => format!("**violated in {} of {tried}** (first: seed {first})", count.violated),
        None if figures.stopped_by_time => {
            format!("stopped by the time limit after {tried}: not a verdict")
        }
        None if count.exercised == 0 => format!("no occasion in {tried}"),
        None => format!("no violation in {tried}"),
    }
}

/// The measured figure of `item` in one run set, then its verdict.
fn figure(figures: &Figures, item: ClaimId) -> String {
    let bounds = figures.bounds.unwrap_or_default();
    let measured = match item {
        ClaimId::CTry => match (figures.try_calls, bounds.try_requests) {
            (0, _) => "no try_lock call".to_owned(),
            (calls, bound) => format!(
                "longest call {} requests (bound {}), {} long, against a longest hold of {}; {calls} calls",
                figures.most_try_requests,
                bound.map_or_else(|| "none".to_owned(), |b| b.to_string()),
                secs(figures.longest_try.unwrap_or_default()),
                secs(figures.longest_hold)
            ),
        },
        ClaimId::CFree => match (figures.failed_calls, figures.leftover_judged_max) {
            (0, _) => "no call failed".to_owned(),
            (calls, Some(judged)) => format!(
                "worst stuck interval after a failed call {} (bound {}; {} counting calls that said cells may remain or could not reach the store); {calls} failed calls",
                secs(judged),
                secs(bounds.leftover),
                secs(figures.leftover_max.unwrap_or_default())
            ),
            (calls, None) => format!(
                "{calls} failed calls, none judged (all said cells may remain, or could not reach the store); cells left at most {}",
                secs(figures.leftover_max.unwrap_or_default())
            ),
        },
        ClaimId::CRelease => match figures.handover_max {
            None => "no release judged".to_owned(),
            Some(max) => format!(
                "longest handover after a release {} (bound {}) over {} releases",
                secs(max),
                secs(bounds.handover),
                figures.handovers
            ),
        },
        ClaimId::CLost => match (figures.lost_lag_max, bounds.lost) {
            (None, _) => "no holder lost its lease to another".to_owned(),
            (Some(lag), bound) => format!(
                "longest a holder went on not knowing {} (bound {}) over {}",
                secs(lag),
                bound.map_or_else(|| "none".to_owned(), secs),
                count(figures.lost_judged, "overlap")
            ),
        },
        _ => format!(
            "tokens went down {}, the only holder's writes refused {}",
            plural(figures.token_drops, "time", "times"),
            plural(figures.legit_refused, "time", "times")
        ),
    };
    format!("{measured}; {}", verdict(figures, item))
}

/// Append the section to `md`.
pub fn render(md: &mut String, findings: &ContractFindings) {
    let seeds = findings.seeds;
    let _ = writeln!(md, "## What the contract checks found\n");
    let _ = writeln!(
        md,
        "Measured by the simulator on seeds 0..{seeds} of each run below (every seed, no early stop). **Before**: the thesis's listings as written (`--thesis-listings`); **after**: the library's default, with the fixes of `src/algo`. Replay a row with `cassalock sim --scenario <run> --seeds 0..{seeds} --algorithm <algorithm>`, adding `--thesis-listings` for the before column. The skew scenario draws replica r0's offset from the seed in 0..=2 TTL. Figures: C-try, the most store requests in one `try_lock` call and the longest call against the longest hold; C-free, the worst stuck interval (a failed call's cells still live after it returned); C-release, the longest wait from a release to the next acquisition; C-lost, the longest a holder whose lease was taken went on not knowing; C-token, token drops and refused writes of the only holder.\n"
    );
    let _ = writeln!(
        md,
        "| item | run | algorithm | before: thesis listings | after: library default |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    for item in ITEMS {
        for &scenario in exposing(item) {
            for algorithm in ALGORITHMS {
                let before = &findings.runs[&(scenario, algorithm, true)];
                let after = &findings.runs[&(scenario, algorithm, false)];
                let _ = writeln!(
                    md,
                    "| {item} | `{}` | {} | {} | {} |",
                    scenario.flags(),
                    algorithm.name(),
                    figure(before, item),
                    figure(after, item)
                );
            }
        }
    }
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "Where the thesis's listings break the contract, and what the library's default does:\n"
    );
    for item in ITEMS {
        let breaks = |thesis: bool| -> Vec<String> {
            exposing(item)
                .iter()
                .flat_map(|&scenario| ALGORITHMS.map(|algorithm| (scenario, algorithm)))
                .filter_map(|(scenario, algorithm)| {
                    let figures = &findings.runs[&(scenario, algorithm, thesis)];
                    let count = figures.item(item);
                    count.first_violation.map(|first| {
                        format!(
                            "`{}` {}: {} of {} (first: seed {first})",
                            scenario.flags(),
                            algorithm.name(),
                            count.violated,
                            plural(figures.tried, "seed", "seeds")
                        )
                    })
                })
                .collect()
        };
        let (before, after) = (breaks(true), breaks(false));
        let before_text = if before.is_empty() {
            format!("the thesis's listings did not violate it in these runs ({seeds} seeds each)")
        } else {
            format!("**the thesis's listings violate it**: {}", before.join("; "))
        };
        let after_text = if after.is_empty() {
            format!("the library's default: no violation in these runs ({seeds} seeds each)")
        } else if before.is_empty() {
            format!("**the library's default violates it too**: {}", after.join("; "))
        } else {
            format!("**the library's default still violates it**: {}", after.join("; "))
        };
        let stopped = exposing(item).iter().any(|&scenario| {
            ALGORITHMS.iter().any(|&algorithm| {
                [true, false]
                    .iter()
                    .any(|&thesis| findings.runs[&(scenario, algorithm, thesis)].stopped_by_time)
            })
        });
        let stopped_text = if stopped {
            " Some of these runs were stopped by the time limit before their seeds were done: where they found nothing, that is not a verdict."
        } else {
            ""
        };
        let _ = writeln!(md, "- **{item}**: {before_text}. After: {after_text}.{stopped_text}");
    }
    let _ = writeln!(md);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(violated_free: bool, exercised_free: bool, leftover: Option<u64>) -> SeedFigures {
        let mut figures = SeedFigures::default();
        figures.items[1] = (violated_free, exercised_free);
        figures.failed_calls = u64::from(exercised_free);
        figures.leftover_judged_max = leftover.map(Duration::from_millis);
        figures.leftover_max = leftover.map(Duration::from_millis);
        figures.bounds.leftover = Duration::from_millis(200);
        figures
    }

    #[test]
    fn aggregates_count_seeds_in_order_and_keep_maxima() {
        let mut figures = Figures::default();
        for s in [
            seed(false, false, None),
            seed(false, true, Some(100)),
            seed(true, true, Some(9800)),
            seed(true, true, Some(300)),
        ] {
            figures.add(&s);
        }
        let count = figures.item(ClaimId::CFree);
        assert_eq!(
            count,
            ItemCount {
                violated: 2,
                first_violation: Some(2),
                exercised: 3
            }
        );
        assert_eq!(
            figure(&figures, ClaimId::CFree),
            "worst stuck interval after a failed call 9.80 s (bound 0.20 s; 9.80 s counting calls that said cells may remain or could not reach the store); 3 failed calls; **violated in 2 of 4 seeds** (first: seed 2)"
        );
    }

    #[test]
    fn a_check_with_no_occasion_never_reads_as_a_pass() {
        let mut figures = Figures::default();
        figures.add(&seed(false, false, None));
        assert_eq!(
            figure(&figures, ClaimId::CFree),
            "no call failed; no occasion in 1 seed"
        );
        figures.stopped_by_time = true;
        assert_eq!(
            verdict(&figures, ClaimId::CFree),
            "stopped by the time limit after 1 seed: not a verdict"
        );
    }
}
