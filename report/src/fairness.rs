//! `cassalock report fairness`: the old and the queue lock (and TryGetLock), measured in the
//! simulator over thread counts, clock skew and the time source.
//!
//! The sweep is a list of work items, each one simulated run: every cell of the grid (a lock
//! variant at a thread count, a skew and time source, an S1 lead) with every seed, in a fixed
//! order that depends on the options alone. A run is a function of its cell and seed, so item
//! `i` gives the same metrics on every machine, and the sweep can be cut into shards: shard
//! `K/N` runs the items whose index is `K - 1` modulo `N` ([`measure_shard`]), its results go
//! to a file, and [`assemble`] merges the files of all `N` shards into the very `Measured`
//! that one run on one machine gives, so the same report bytes. Only the per-run metrics travel
//! between machines (integers, durations and the S1 stall's seconds, all exact in JSON); the
//! aggregates, with their floating-point sums and percentiles, are computed once, after the
//! merge, in work-list order.
//! [`measure`] itself is shard 1 of 1 assembled, so the committed report checks that path.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cassalock::driver::Algorithm;
use cassalock_judge::text::count;
use rayon::prelude::*;

use crate::charts::{axis_label, colour, LineChart, Series, NEAR_ZERO, Y};
use crate::handoff::{
    judge, GoalFigures, GOAL_JAIN, GOAL_THROUGHPUT_RATIO, HANDOFF_LATENCIES, HANDOFF_VARIANTS, HOLD_MS, LOCKERS,
    NEXT_POLL_MS, RUN_SIMULATED, TTL_S,
};
use crate::{create_dir, write_file, ReportError};
use cassalock_judge::stats::percentile;
use cassalock_sim::metrics::FairnessMetrics;
use cassalock_sim::run::run;
use cassalock_sim::scenario::{build, fairness, ClientMode, FairnessParams, SimOptions};

mod page;
use page::markdown;

/// What to measure.
#[derive(Clone, Debug)]
pub struct FairnessOptions {
    pub out: PathBuf,
    pub seeds: u64,
    pub threads: Vec<usize>,
    pub hold_ms: (u64, u64),
    pub think_ms: (u64, u64),
    pub duration: Duration,
    pub jobs: usize,
}

impl Default for FairnessOptions {
    fn default() -> Self {
        FairnessOptions {
            out: PathBuf::from("reports"),
            seeds: 3,
            threads: vec![1, 2, 4, 8, 16, 32],
            hold_ms: (5, 20),
            think_ms: (0, 50),
            duration: Duration::from_secs(60),
            jobs: 2,
        }
    }
}

/// The lock variants compared.
const VARIANTS: [(Algorithm, ClientMode, &str); 4] = [
    (Algorithm::Old, ClientMode::GetLock, "old GetLock"),
    (Algorithm::Queue, ClientMode::GetLock, "queue GetLock"),
    (Algorithm::Old, ClientMode::TryGetLock, "old TryLock"),
    (Algorithm::Queue, ClientMode::TryGetLock, "queue TryGetLock"),
];

/// Skews (client clocks spread over 0..=skew) and time sources studied at 8 threads.
const SKEWS_MS: [u64; 3] = [0, 10, 1000];
const SKEW_THREADS: usize = 8;
/// S1: how far ahead the time-service replica that crashes ran, in seconds.
const S1_LEADS_S: [u64; 4] = [5, 10, 20, 40];

/// One cell of the grid, aggregated over seeds.
#[derive(Clone, Debug, Default)]
pub struct Aggregate {
    pub runs: u64,
    pub acquisitions: u64,
    /// Acquisitions by a different client than the previous holder.
    pub handoffs: u64,
    pub throughput: f64,
    pub wait_p50_ms: f64,
    pub wait_p99_ms: f64,
    pub wait_max_ms: f64,
    pub requests_per_acquisition: f64,
    pub requests_per_handoff: f64,
    /// Mean over the runs with at least one acquisition (NaN when none had any: the index of
    /// zero shares is 0/0).
    pub jain: f64,
    pub longest_run: u64,
    pub overtakes_per_acquisition: f64,
    pub refusals_per_acquisition: f64,
}

fn aggregate(metrics: &[FairnessMetrics]) -> Aggregate {
    let runs = metrics.len() as u64;
    let acquisitions: u64 = metrics.iter().map(|m| m.acquisitions).sum();
    let requests: u64 = metrics.iter().map(|m| m.requests).sum();
    let handoffs: u64 = metrics.iter().map(|m| m.handoffs).sum();
    let waits: Vec<f64> = metrics
        .iter()
        .flat_map(|m| m.waits.iter().map(|w| w.as_secs_f64() * 1000.0))
        .collect();
    let per = |x: u64| {
        if acquisitions == 0 {
            f64::NAN
        } else {
            x as f64 / acquisitions as f64
        }
    };
    let jains: Vec<f64> = metrics
        .iter()
        .filter(|m| m.acquisitions > 0)
        .map(FairnessMetrics::jain)
        .collect();
    Aggregate {
        runs,
        acquisitions,
        handoffs,
        throughput: metrics.iter().map(FairnessMetrics::throughput).sum::<f64>() / runs.max(1) as f64,
        wait_p50_ms: percentile(&waits, 50),
        wait_p99_ms: percentile(&waits, 99),
        wait_max_ms: waits.iter().copied().fold(f64::NAN, f64::max),
        requests_per_acquisition: per(requests),
        requests_per_handoff: if handoffs == 0 {
            f64::NAN
        } else {
            requests as f64 / handoffs as f64
        },
        jain: if jains.is_empty() {
            f64::NAN
        } else {
            jains.iter().sum::<f64>() / jains.len() as f64
        },
        longest_run: metrics.iter().map(|m| m.longest_run).max().unwrap_or(0),
        overtakes_per_acquisition: per(metrics.iter().map(|m| m.overtakes).sum()),
        refusals_per_acquisition: per(metrics.iter().map(|m| m.refusals).sum()),
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Job {
    /// (variant, threads)
    Threads(usize, usize),
    /// (variant, skew ms, global time)
    Skew(usize, u64, bool),
    /// the S1 lead in seconds
    Stall(u64),
    /// the faster handoff: (index in `HANDOFF_VARIANTS`, index in `HANDOFF_LATENCIES`)
    Handoff(usize, usize),
}

/// Everything measured. (`Debug` prints every figure in a form that reads back bit for bit,
/// NaN included, which derived equality would not compare: the shard tests compare that.)
#[derive(Debug)]
pub struct Measured {
    pub options: FairnessOptions,
    pub threads: BTreeMap<(usize, usize), Aggregate>,
    pub skew: BTreeMap<(usize, u64, bool), Aggregate>,
    /// lead -> the longest stall seen in any seed, seconds
    pub stalls: BTreeMap<u64, f64>,
    /// (index in `HANDOFF_VARIANTS`, index in `HANDOFF_LATENCIES`) -> the handoff runs
    pub handoff: BTreeMap<(usize, usize), Aggregate>,
}

fn params(
    options: &FairnessOptions,
    variant: usize,
    threads: usize,
    skew_ms: u64,
    global_time: bool,
) -> FairnessParams {
    let (algorithm, mode, _) = VARIANTS[variant];
    FairnessParams {
        algorithm,
        mode,
        threads,
        skew_ms,
        global_time,
        hold_ms: options.hold_ms,
        think_ms: options.think_ms,
        duration: options.duration,
    }
}

/// The time sources worth running a variant with: the old lock never reads the time source (its
/// cells are named by thread id), so only the queue lock is run with the global time service.
fn time_sources(variant: usize) -> &'static [bool] {
    if variant == 0 {
        &[false]
    } else {
        &[false, true]
    }
}

/// One run's metrics and, for the S1 runs, how long GlobalTime stood still (seconds).
type JobResult = (FairnessMetrics, Option<f64>);

/// The grid's cells in report order: every variant at every thread count, then the skew and
/// time-source cells, then the S1 leads, then the handoff runs. Depends on the thread
/// counts alone.
fn jobs(threads: &[usize]) -> Vec<Job> {
    let mut jobs = Vec::new();
    for variant in 0..VARIANTS.len() {
        for &threads in threads {
            jobs.push(Job::Threads(variant, threads));
        }
    }
    for variant in 0..2 {
        for skew in SKEWS_MS {
            for &global in time_sources(variant) {
                jobs.push(Job::Skew(variant, skew, global));
            }
        }
    }
    for lead in S1_LEADS_S {
        jobs.push(Job::Stall(lead));
    }
    for latency in 0..HANDOFF_LATENCIES.len() {
        for variant in 0..HANDOFF_VARIANTS.len() {
            jobs.push(Job::Handoff(variant, latency));
        }
    }
    jobs
}

/// The work list: every job with seeds `0..options.seeds`, jobs in [`jobs`] order and seeds
/// ascending within a job, so work item `i` is job `i / seeds` with seed `i % seeds`. A pure
/// function of the options: item `i` names the same run on every machine, which is what lets
/// shards run apart be merged.
fn work(options: &FairnessOptions) -> Vec<(Job, u64)> {
    jobs(&options.threads)
        .into_iter()
        .flat_map(|job| (0..options.seeds).map(move |seed| (job.clone(), seed)))
        .collect()
}

/// The options that decide the numbers of a fairness sweep. Shards belong to one sweep exactly
/// when their sweeps are equal. `out` (where the files go) and `jobs` (how many threads run the
/// work) are not part of it: they change neither a run nor its place in the work list.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FairnessSweep {
    pub seeds: u64,
    pub threads: Vec<usize>,
    pub hold_ms: (u64, u64),
    pub think_ms: (u64, u64),
    /// Simulated time per run; serialized as whole seconds and nanoseconds, so exactly.
    pub duration: Duration,
}

impl FairnessSweep {
    pub fn of(options: &FairnessOptions) -> Self {
        FairnessSweep {
            seeds: options.seeds,
            threads: options.threads.clone(),
            hold_ms: options.hold_ms,
            think_ms: options.think_ms,
            duration: options.duration,
        }
    }
}

impl fmt::Display for FairnessSweep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let threads: Vec<String> = self.threads.iter().map(usize::to_string).collect();
        write!(
            f,
            "seeds 0..{}, threads {}, hold {}..{} ms, think {}..{} ms, {:?} simulated per run",
            self.seeds,
            threads.join(","),
            self.hold_ms.0,
            self.hold_ms.1,
            self.think_ms.0,
            self.think_ms.1,
            self.duration
        )
    }
}

impl FairnessOptions {
    /// The sweep these options measure (see [`FairnessSweep`]).
    pub fn sweep(&self) -> FairnessSweep {
        FairnessSweep::of(self)
    }
}

/// One work item's result: its index in the work list, the run's metrics and, for an S1 run,
/// how long GlobalTime stood still (seconds; serde_json's `float_roundtrip` reads it back
/// exactly).
pub type ShardItem = (u64, FairnessMetrics, Option<f64>);

/// Shard `k` of `n` of a sweep: the results of the work items whose index is `k - 1` modulo
/// `n`. Striding rather than cutting the list in blocks spreads the slow cells (32 threads,
/// every variant) over all shards, so the shards take about as long as each other.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FairnessShard {
    pub sweep: FairnessSweep,
    /// This shard's number, 1 to `n`.
    pub k: u64,
    /// How many shards the sweep was split into.
    pub n: u64,
    /// Work items in the whole sweep, over all shards. A check, not a proof, that the shard was
    /// cut by a build with the same grid: one with more or fewer variants, skews or leads has
    /// another count and its shards are refused; one that only changes a value does not (the
    /// sweep names no commit).
    pub work_items: u64,
    /// This shard's items, in increasing index order.
    pub results: Vec<ShardItem>,
}

/// Why shards cannot be assembled into one report. Each names the shard (`K/N`) to rerun or
/// drop.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum AssembleError {
    #[error("no shards to assemble")]
    NoShards,
    #[error("shard {k}/{n} is of another sweep ({found}), not of this one ({expected})")]
    OtherSweep {
        k: u64,
        n: u64,
        expected: Box<FairnessSweep>,
        found: Box<FairnessSweep>,
    },
    #[error(
        "shard {k}/{n} splits a work list of {found} items, this build's has {expected}: it was made by another version of cassalock"
    )]
    OtherWorkList { k: u64, n: u64, found: u64, expected: u64 },
    #[error("shard {k}/{n} is not a shard: K must be 1 to N")]
    NotAShard { k: u64, n: u64 },
    #[error("shard {k}/{n} and shard {first_k}/{first_n} split the work differently: all shards of one report must have the same N")]
    MixedSplits { k: u64, n: u64, first_k: u64, first_n: u64 },
    #[error("shard {k}/{n} gives work item {index}, but the sweep has only {work_items} (0 to {work_items} - 1)")]
    OutOfRange {
        index: u64,
        k: u64,
        n: u64,
        work_items: u64,
    },
    #[error("shard {k}/{n} gives work item {index}, which is shard {}/{n}'s", index % n + 1)]
    NotItsItem { index: u64, k: u64, n: u64 },
    #[error("work item {index} is given twice, by shard {k}/{n}: is that shard listed twice?")]
    Twice { index: u64, k: u64, n: u64 },
    #[error("work item {index} is missing: shard {k}/{n} should have had it ({missing} items missing in all)")]
    Missing { index: u64, k: u64, n: u64, missing: u64 },
}

/// Run every job and seed on `options.jobs` threads. The results come back in job and seed
/// order whatever the order of completion, so the report is a function of the options alone.
/// `progress(done, total)` is called after each run.
///
/// This is shard 1 of 1 assembled: the committed report goes through the same path as a sweep
/// run in shards on several machines.
pub fn measure(options: &FairnessOptions, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Measured, ReportError> {
    let whole = measure_shard(options, 1, 1, progress)?;
    // Shard 1/1 of these very options holds every item once, of this sweep: nothing for
    // `assemble` to refuse.
    Ok(assemble(options, std::slice::from_ref(&whole)).expect("shard 1/1 of a sweep is the whole sweep"))
}

/// Run shard `k` of `n` (1 <= k <= n; the caller checks): the work items whose index is `k - 1`
/// modulo `n`, on `options.jobs` threads. `progress(done, total)` is called after each run,
/// `total` being this shard's item count.
pub fn measure_shard(
    options: &FairnessOptions,
    k: u64,
    n: u64,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<FairnessShard, ReportError> {
    debug_assert!(1 <= k && k <= n, "shard {k}/{n}: K must be 1 to N");
    let work = work(options);
    let mine: Vec<(u64, &(Job, u64))> = (0u64..).zip(&work).filter(|(index, _)| index % n == k - 1).collect();
    let done = AtomicUsize::new(0);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .build()?;
    // An indexed parallel iterator collects in its input's order: increasing index.
    let results: Vec<ShardItem> = pool.install(|| {
        mine.par_iter()
            .map(|&(index, (job, seed))| {
                let (metrics, stall) = run_job(options, job, *seed);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, mine.len());
                (index, metrics, stall)
            })
            .collect()
    });
    Ok(FairnessShard {
        sweep: options.sweep(),
        k,
        n,
        work_items: work.len() as u64,
        results,
    })
}

/// Merge shards of `options`' sweep, given in any order, into what [`measure`] gives: each
/// work item must come exactly once, from the shard whose stride it is on, and every shard
/// must be of this sweep and split it the same way. The aggregates are computed here, from
/// the items in work-list order, so they are the same bits however the work was split.
pub fn assemble(options: &FairnessOptions, shards: &[FairnessShard]) -> Result<Measured, AssembleError> {
    let sweep = options.sweep();
    let jobs = jobs(&options.threads);
    let work_items = work(options).len() as u64;
    let first = shards.first().ok_or(AssembleError::NoShards)?;
    let mut slots: Vec<Option<(&FairnessMetrics, Option<f64>)>> = vec![None; work_items as usize];
    for shard in shards {
        let (k, n) = (shard.k, shard.n);
        if shard.sweep != sweep {
            return Err(AssembleError::OtherSweep {
                k,
                n,
                expected: Box::new(sweep),
                found: Box::new(shard.sweep.clone()),
            });
        }
        if shard.work_items != work_items {
            return Err(AssembleError::OtherWorkList {
                k,
                n,
                found: shard.work_items,
                expected: work_items,
            });
        }
        if k == 0 || k > n {
            return Err(AssembleError::NotAShard { k, n });
        }
        if n != first.n {
            return Err(AssembleError::MixedSplits {
                k,
                n,
                first_k: first.k,
                first_n: first.n,
            });
        }
        for (index, metrics, stall) in &shard.results {
            let index = *index;
            if index >= work_items {
                return Err(AssembleError::OutOfRange {
                    index,
                    k,
                    n,
                    work_items,
                });
            }
            if index % n != k - 1 {
                return Err(AssembleError::NotItsItem { index, k, n });
            }
            let slot = &mut slots[index as usize];
            if slot.is_some() {
                return Err(AssembleError::Twice { index, k, n });
            }
            *slot = Some((metrics, *stall));
        }
    }
    let missing = slots.iter().filter(|slot| slot.is_none()).count() as u64;
    if let Some(index) = slots.iter().position(Option::is_none) {
        let (index, n) = (index as u64, first.n);
        return Err(AssembleError::Missing {
            index,
            k: index % n + 1,
            n,
            missing,
        });
    }
    let results: Vec<(&FairnessMetrics, Option<f64>)> = slots.into_iter().flatten().collect();
    let mut measured = Measured {
        options: options.clone(),
        threads: BTreeMap::new(),
        skew: BTreeMap::new(),
        stalls: BTreeMap::new(),
        handoff: BTreeMap::new(),
    };
    let seeds = options.seeds as usize;
    for (position, job) in jobs.into_iter().enumerate() {
        // Work item `position * seeds + seed` (see `work`).
        let runs = &results[position * seeds..(position + 1) * seeds];
        let metrics: Vec<FairnessMetrics> = runs.iter().map(|(m, _)| (*m).clone()).collect();
        match job {
            Job::Threads(variant, threads) => {
                measured.threads.insert((variant, threads), aggregate(&metrics));
            }
            Job::Skew(variant, skew, global) => {
                measured.skew.insert((variant, skew, global), aggregate(&metrics));
            }
            Job::Stall(lead) => {
                let worst = runs.iter().filter_map(|(_, stall)| *stall).fold(0.0, f64::max);
                measured.stalls.insert(lead, worst);
            }
            Job::Handoff(variant, latency) => {
                measured.handoff.insert((variant, latency), aggregate(&metrics));
            }
        }
    }
    Ok(measured)
}

/// One run of `job` with `seed`.
fn run_job(options: &FairnessOptions, job: &Job, seed: u64) -> JobResult {
    let config = match job {
        Job::Threads(variant, threads) => fairness(&params(options, *variant, *threads, 0, false), seed),
        Job::Skew(variant, skew, global) => fairness(&params(options, *variant, SKEW_THREADS, *skew, *global), seed),
        Job::Stall(lead) => {
            let mut config = build("timeservice-stall", seed, Algorithm::Queue, &SimOptions::default()).expect("known");
            config.time_replica_clocks[0].offset_us = *lead as i64 * 1_000_000;
            config.acquisitions = 30;
            config
        }
        Job::Handoff(variant, latency) => HANDOFF_VARIANTS[*variant].config(HANDOFF_LATENCIES[*latency].1, seed),
    };
    let outcome = run(&config, seed, false);
    let metrics = FairnessMetrics::from_run(&outcome);
    let stall = outcome.verdicts.global_time_stall.map(|d| d.as_secs_f64());
    (metrics, stall)
}

impl Aggregate {
    /// A figure of the acquisitions (a wait, a rate per acquisition, Jain's index, a run): none
    /// when there were no acquisitions.
    fn of_acquisitions(&self, value: f64) -> Y {
        if self.acquisitions == 0 {
            Y::Undefined("0 acquisitions".into())
        } else {
            Y::Value(value)
        }
    }

    /// A rate per handoff: none without handoffs.
    fn of_handoffs(&self, value: f64) -> Y {
        if self.handoffs == 0 {
            Y::Undefined("0 handoffs".into())
        } else {
            Y::Value(value)
        }
    }
}

fn f(value: f64, decimals: usize) -> String {
    if value.is_nan() {
        "-".into()
    } else {
        format!("{value:.decimals$}")
    }
}

/// Write fairness.md and its charts.
pub fn write(measured: &Measured) -> Result<Vec<String>, ReportError> {
    let options = &measured.options;
    let out = &options.out;
    create_dir(out)?;
    let seeds = format!("seeds 0..{}", options.seeds);
    let (workload, settings) = workload_and_settings(options, &seeds);
    let mut charts = ThreadCharts {
        measured,
        subtitle: &workload,
        files: Vec::new(),
    };
    throughput_chart(&mut charts)?;
    wait_charts(&mut charts)?;
    requests_chart(&mut charts)?;
    share_and_order_charts(&mut charts)?;
    let mut files = charts.files;
    s1_staleness_chart(measured, &seeds)?;
    files.push("fairness-s1-staleness.svg".into());
    write_file(
        out,
        "fairness.md",
        &markdown(measured, &format!("{workload}; {settings}")),
    )?;
    files.push("fairness.md".into());
    Ok(files)
}

/// The workload every run shares, as the charts' subtitles state it, and the library's long-run
/// settings, which the report's text adds to it.
fn workload_and_settings(options: &FairnessOptions, seeds: &str) -> (String, String) {
    // What every run shares, read from the runs' own configuration (the queue lock's, one
    // thread, no skew: the settings below are the same for every variant and count).
    let run = fairness(&params(options, 1, 1, 0, false), 0);
    let on_off = |on: bool| if on { "on" } else { "off" };
    let consistency = format!("{:?}", run.cluster.consistency).to_uppercase();
    let workload = format!(
        "{}; hold {}..{} ms, think {}..{} ms, {} s simulated per run; TTL {} s, poll {} ms, {}, {} replicas; no clock skew; local clocks",
        seeds,
        options.hold_ms.0,
        options.hold_ms.1,
        options.think_ms.0,
        options.think_ms.1,
        options.duration.as_secs(),
        run.ttl_s,
        run.poll_ms,
        consistency,
        run.cluster.replicas,
    );
    // The charts' subtitles end here (a longer line is cut off at their width); the report's
    // text adds the library's long-run settings.
    let settings = format!(
        "the library's long-run settings: thread ids reused {}, the queue read from the last hold {}",
        on_off(run.reuse_thread_ids),
        on_off(run.queue_read_from_last_hold)
    );
    (workload, settings)
}

/// The variants every chart against the thread count may draw, and the GetLock ones (whose
/// waits and order mean the same thing).
const ALL_VARIANTS: [usize; 4] = [0, 1, 2, 3];
const GETLOCK_VARIANTS: [usize; 2] = [0, 1];

/// The charts drawn against the thread count: the figures they plot, the workload line under
/// their titles, and the files written so far.
struct ThreadCharts<'a> {
    measured: &'a Measured,
    subtitle: &'a str,
    files: Vec<String>,
}

impl ThreadCharts<'_> {
    /// A line for each of `variants`: `value` of its aggregate at every thread count.
    fn series(&self, variants: &[usize], value: &dyn Fn(&Aggregate) -> Y, dashed: bool, suffix: &str) -> Vec<Series> {
        let options = &self.measured.options;
        let measured = self.measured;
        variants
            .iter()
            .map(|&v| Series {
                name: format!("{}{suffix}", VARIANTS[v].2),
                colour: colour(v),
                dashed,
                points: options
                    .threads
                    .iter()
                    .map(|&t| (t as f64, value(&measured.threads[&(v, t)])))
                    .collect(),
            })
            .collect()
    }

    /// Write the chart `name`; `decimals`: those of the figure's column in the Data table.
    fn draw(
        &mut self,
        name: &str,
        title: &str,
        y_label: &str,
        log_y: bool,
        decimals: usize,
        series: Vec<Series>,
    ) -> Result<(), ReportError> {
        LineChart {
            title,
            subtitle: self.subtitle,
            x_label: "threads (clients contending for one lock)",
            y_label,
            x_unit: ("thread", "threads"),
            log2_x: true,
            log_y,
            y_decimals: decimals,
            series,
        }
        .write(&self.measured.options.out.join(name))?;
        self.files.push(name.to_owned());
        Ok(())
    }
}

/// Acquisitions per simulated second.
fn throughput_chart(charts: &mut ThreadCharts<'_>) -> Result<(), ReportError> {
    charts.draw(
        "fairness-throughput.svg",
        "Throughput: acquisitions per simulated second",
        "acquisitions / s",
        false,
        2,
        charts.series(&ALL_VARIANTS, &|a| Y::Value(a.throughput), false, ""),
    )?;
    Ok(())
}

/// GetLock's waits: p50 and p99, and the longest.
fn wait_charts(charts: &mut ThreadCharts<'_>) -> Result<(), ReportError> {
    let mut waits = charts.series(&GETLOCK_VARIANTS, &|a| a.of_acquisitions(a.wait_p50_ms), false, " p50");
    waits.extend(charts.series(&GETLOCK_VARIANTS, &|a| a.of_acquisitions(a.wait_p99_ms), true, " p99"));
    charts.draw(
        "fairness-wait.svg",
        "GetLock wait, from asking to holding: p50 (solid) and p99 (dashed)",
        "milliseconds (log)",
        true,
        1,
        waits,
    )?;
    charts.draw(
        "fairness-wait-max.svg",
        "GetLock wait: the longest single wait",
        "milliseconds (log)",
        true,
        1,
        charts.series(&GETLOCK_VARIANTS, &|a| a.of_acquisitions(a.wait_max_ms), false, " max"),
    )?;
    Ok(())
}

/// Store requests per acquisition and per handoff.
fn requests_chart(charts: &mut ThreadCharts<'_>) -> Result<(), ReportError> {
    let mut requests = charts.series(
        &ALL_VARIANTS,
        &|a| a.of_acquisitions(a.requests_per_acquisition),
        false,
        " per acquisition",
    );
    requests.extend(charts.series(
        &ALL_VARIANTS,
        &|a| a.of_handoffs(a.requests_per_handoff),
        true,
        " per handoff",
    ));
    charts.draw(
        "fairness-requests.svg",
        "Store requests per acquisition (solid) and per handoff (dashed)",
        "requests (log)",
        true,
        1,
        requests,
    )?;
    Ok(())
}

/// How evenly the lock is shared and how far arrival order is kept: Jain's index, the longest
/// run by one client, overtakes.
fn share_and_order_charts(charts: &mut ThreadCharts<'_>) -> Result<(), ReportError> {
    charts.draw(
        "fairness-jain.svg",
        "Jain's fairness index of acquisitions per client (1 = even)",
        "index",
        false,
        3,
        charts.series(&ALL_VARIANTS, &|a| a.of_acquisitions(a.jain), false, ""),
    )?;
    charts.draw(
        "fairness-longest-run.svg",
        "Longest run of consecutive acquisitions by one client",
        "acquisitions (log)",
        true,
        0,
        charts.series(&ALL_VARIANTS, &|a| a.of_acquisitions(a.longest_run as f64), false, ""),
    )?;
    charts.draw(
        "fairness-overtakes.svg",
        "Overtakes: clients passed by someone who started waiting later, per acquisition",
        "overtakes per acquisition",
        false,
        3,
        charts.series(
            &GETLOCK_VARIANTS,
            &|a| a.of_acquisitions(a.overtakes_per_acquisition),
            false,
            "",
        ),
    )?;
    Ok(())
}

/// S1: how long GlobalTime stood still against how far ahead the crashed replica ran.
fn s1_staleness_chart(measured: &Measured, seeds: &str) -> Result<(), ReportError> {
    let stall_series = vec![
        Series {
            name: "GlobalTime stood still".into(),
            colour: colour(1),
            dashed: false,
            points: measured
                .stalls
                .iter()
                .map(|(&lead, &stall)| (lead as f64, Y::Value(stall)))
                .collect(),
        },
        Series {
            name: "the crashed replica's lead".into(),
            colour: colour(5),
            dashed: true,
            points: S1_LEADS_S
                .iter()
                .map(|&lead| (lead as f64, Y::Value(lead as f64)))
                .collect(),
        },
    ];
    LineChart {
        title: "S1: how long GlobalTime stands still after a replica that ran ahead crashes",
        subtitle: &format!("timeservice-stall scenario, 3 time-service replicas, ts0 ahead by the lead and killed at 10 s; longest stall over {seeds}"),
        x_label: "lead of the crashed replica (s)",
        y_label: "seconds GlobalTime stood still",
        x_unit: ("s lead", "s lead"),
        log2_x: false,
        log_y: false,
        y_decimals: 1,
        series: stall_series,
    }
    .write(&measured.options.out.join("fairness-s1-staleness.svg"))
}

#[cfg(test)]
mod tests;
