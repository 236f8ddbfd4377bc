//! `cassalock report fairness`: the old and the queue lock (and TryGetLock), measured in the
//! simulator over thread counts, clock skew and the time source.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cassalock::driver::Algorithm;
use rayon::prelude::*;

use crate::charts::{axis_label, colour, LineChart, Series, NEAR_ZERO, Y};
use crate::{create_dir, write_file, ReportError};
use cassalock_history::stats::percentile;
use cassalock_sim::metrics::FairnessMetrics;
use cassalock_sim::run::run;
use cassalock_sim::scenario::{build, fairness, ClientMode, FairnessParams, SimOptions};

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
}

/// Everything measured.
pub struct Measured {
    pub options: FairnessOptions,
    pub threads: BTreeMap<(usize, usize), Aggregate>,
    pub skew: BTreeMap<(usize, u64, bool), Aggregate>,
    /// lead -> the longest stall seen in any seed, seconds
    pub stalls: BTreeMap<u64, f64>,
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

/// Run every job and seed on `options.jobs` threads. The results come back in job and seed
/// order whatever the order of completion, so the report is a function of the options alone.
/// `progress(done, total)` is called after each run.
pub fn measure(options: &FairnessOptions, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Measured, ReportError> {
    let mut jobs = Vec::new();
    for variant in 0..VARIANTS.len() {
        for &threads in &options.threads {
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
    let work: Vec<(Job, u64)> = jobs
        .iter()
        .flat_map(|job| (0..options.seeds).map(move |seed| (job.clone(), seed)))
        .collect();
    let done = AtomicUsize::new(0);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .build()?;
    let outcomes: Vec<JobResult> = pool.install(|| {
        work.par_iter()
            .map(|(job, seed)| {
                let result = run_job(options, job, *seed);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, work.len());
                result
            })
            .collect()
    });
    let results: BTreeMap<(Job, u64), JobResult> = work.into_iter().zip(outcomes).collect();
    let mut measured = Measured {
        options: options.clone(),
        threads: BTreeMap::new(),
        skew: BTreeMap::new(),
        stalls: BTreeMap::new(),
    };
    for job in jobs {
        let seeds: Vec<&(FairnessMetrics, Option<f64>)> =
            (0..options.seeds).map(|seed| &results[&(job.clone(), seed)]).collect();
        let metrics: Vec<FairnessMetrics> = seeds.iter().map(|(m, _)| m.clone()).collect();
        match job {
            Job::Threads(variant, threads) => {
                measured.threads.insert((variant, threads), aggregate(&metrics));
            }
            Job::Skew(variant, skew, global) => {
                measured.skew.insert((variant, skew, global), aggregate(&metrics));
            }
            Job::Stall(lead) => {
                let worst = seeds.iter().filter_map(|(_, stall)| *stall).fold(0.0, f64::max);
                measured.stalls.insert(lead, worst);
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
    let workload = format!(
        "{}; hold {}-{} ms, think {}-{} ms, {} s simulated per run; TTL 30 s, poll 100 ms, QUORUM, 3 replicas; no clock skew; local clocks",
        seeds,
        options.hold_ms.0,
        options.hold_ms.1,
        options.think_ms.0,
        options.think_ms.1,
        options.duration.as_secs()
    );
    let series = |variants: &[usize], value: &dyn Fn(&Aggregate) -> Y, dashed: bool, suffix: &str| -> Vec<Series> {
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
    };
    let all = [0, 1, 2, 3];
    let getlock = [0, 1];
    let mut files = Vec::new();
    // `decimals`: those of the figure's column in the Data table.
    let mut chart = |name: &str,
                     title: &str,
                     y_label: &str,
                     log_y: bool,
                     decimals: usize,
                     series: Vec<Series>|
     -> Result<(), ReportError> {
        LineChart {
            title,
            subtitle: &workload,
            x_label: "threads (clients contending for one lock)",
            y_label,
            x_unit: ("thread", "threads"),
            log2_x: true,
            log_y,
            y_decimals: decimals,
            series,
        }
        .write(&out.join(name))?;
        files.push(name.to_owned());
        Ok(())
    };
    chart(
        "fairness-throughput.svg",
        "Throughput: acquisitions per simulated second",
        "acquisitions / s",
        false,
        2,
        series(&all, &|a| Y::Value(a.throughput), false, ""),
    )?;
    let mut waits = series(&getlock, &|a| a.of_acquisitions(a.wait_p50_ms), false, " p50");
    waits.extend(series(&getlock, &|a| a.of_acquisitions(a.wait_p99_ms), true, " p99"));
    chart(
        "fairness-wait.svg",
        "GetLock wait, from asking to holding: p50 (solid) and p99 (dashed)",
        "milliseconds (log)",
        true,
        1,
        waits,
    )?;
    chart(
        "fairness-wait-max.svg",
        "GetLock wait: the longest single wait",
        "milliseconds (log)",
        true,
        1,
        series(&getlock, &|a| a.of_acquisitions(a.wait_max_ms), false, " max"),
    )?;
    let mut requests = series(
        &all,
        &|a| a.of_acquisitions(a.requests_per_acquisition),
        false,
        " per acquisition",
    );
    requests.extend(series(
        &all,
        &|a| a.of_handoffs(a.requests_per_handoff),
        true,
        " per handoff",
    ));
    chart(
        "fairness-requests.svg",
        "Store requests per acquisition (solid) and per handoff (dashed)",
        "requests (log)",
        true,
        1,
        requests,
    )?;
    chart(
        "fairness-jain.svg",
        "Jain's fairness index of acquisitions per client (1 = even)",
        "index",
        false,
        3,
        series(&all, &|a| a.of_acquisitions(a.jain), false, ""),
    )?;
    chart(
        "fairness-longest-run.svg",
        "Longest run of consecutive acquisitions by one client",
        "acquisitions (log)",
        true,
        0,
        series(&all, &|a| a.of_acquisitions(a.longest_run as f64), false, ""),
    )?;
    chart(
        "fairness-overtakes.svg",
        "Overtakes: clients passed by someone who started waiting later, per acquisition",
        "overtakes per acquisition",
        false,
        3,
        series(&getlock, &|a| a.of_acquisitions(a.overtakes_per_acquisition), false, ""),
    )?;
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
    .write(&out.join("fairness-s1-staleness.svg"))?;
    files.push("fairness-s1-staleness.svg".into());
    write_file(out, "fairness.md", &markdown(measured, &workload))?;
    files.push("fairness.md".into());
    Ok(files)
}

fn markdown(measured: &Measured, workload: &str) -> String {
    let options = &measured.options;
    let t = &measured.threads;
    let (few, many) = (options.threads[0], *options.threads.last().expect("thread counts"));
    let two = options.threads.iter().copied().find(|&n| n >= 2).unwrap_or(few);
    let mut md = String::new();
    let _ = writeln!(md, "# Fairness and performance: the old lock against the queue lock\n");
    let _ = writeln!(
        md,
        "Generated by `{}` from the simulator (the library's own lock code against a simulated 3-replica Cassandra). Every number is a function of the seeds: the same command on the same commit writes the same bytes.\n",
        options.command_line()
    );
    let _ = writeln!(md, "Workload of every figure unless it says otherwise: {workload}. Each client loops: wait for the lock, hold it, release, think.\n");
    let _ = writeln!(md, "## What the thesis claimed\n");
    let _ = writeln!(md, "- The old shadow-row lock *slows down as more threads contend*: threads fight in the shadow row and back off for random times.");
    let _ = writeln!(md, "- It is *unfair*: a releasing thread re-acquires while the others sleep, so threads hold the lock in long batches.");
    let _ = writeln!(md, "- The queue lock fixes both. The thesis's own benchmark results are missing from the text (\"[benchmark results and legend here]\").\n");

    let _ = writeln!(md, "## What the numbers say\n");
    let old_t = |n: usize| t[&(0, n)].throughput;
    let queue_t = |n: usize| t[&(1, n)].throughput;
    let verdict_slow = if old_t(many) < 0.8 * old_t(two) {
        "falls as threads grow, as the thesis says"
    } else {
        "does not fall as threads grow, against the thesis"
    };
    let _ = writeln!(
        md,
        "- **Slows down with threads.** Old GetLock: {} acquisitions/s at {two} threads, {} at {many}: it {verdict_slow}. Queue GetLock: {} at {two}, {} at {many}.",
        f(old_t(two), 2),
        f(old_t(many), 2),
        f(queue_t(two), 2),
        f(queue_t(many), 2)
    );
    let _ = writeln!(
        md,
        "  The queue lock's throughput is bounded by its polling: a waiter reads the queue head every {} ms, so a handoff costs up to a poll interval. Requests per acquisition at {many} threads: old {}, queue {} (the thesis's S3: polling is the price of a store that cannot notify).",
        100,
        f(t[&(0, many)].requests_per_acquisition, 1),
        f(t[&(1, many)].requests_per_acquisition, 1)
    );
    let run = |variant: usize, n: usize| t[&(variant, n)].longest_run;
    let batches = if run(0, two) > 2 * run(1, two).max(1) {
        "shows when few threads contend, as the thesis says: the releasing client re-enters while the other sleeps out its 0-1000 ms backoff"
    } else {
        "does not show here"
    };
    let runs: Vec<String> = options
        .threads
        .iter()
        .filter(|&&n| n >= 2)
        .map(|&n| format!("{n} threads: old {}, queue {}", run(0, n), run(1, n)))
        .collect();
    let _ = writeln!(
        md,
        "- **Batches (unfairness).** Longest run of consecutive acquisitions by one client ({}). The batching {batches}. With many threads the batches break up and the unfairness turns into starvation instead: at {many} threads Jain's index is old {}, queue {}, and the longest wait is old {} s, queue {} s.",
        runs.join("; "),
        f(t[&(0, many)].jain, 3),
        f(t[&(1, many)].jain, 3),
        f(t[&(0, many)].wait_max_ms / 1000.0, 1),
        f(t[&(1, many)].wait_max_ms / 1000.0, 1)
    );
    let _ = writeln!(
        md,
        "- **Order.** Overtakes per acquisition at {many} threads (a client acquiring ahead of one that started waiting earlier): old {}, queue {}. With local clocks and no skew the queue serves clients in arrival order; overtakes come from clients that start waiting within the same microsecond, or from skew (below).",
        f(t[&(0, many)].overtakes_per_acquisition, 3),
        f(t[&(1, many)].overtakes_per_acquisition, 3)
    );
    let skew = &measured.skew;
    let _ = writeln!(
        md,
        "- **Clock skew.** At {SKEW_THREADS} threads with client clocks spread over 1 s, the queue lock's overtakes per acquisition are {} with local clocks and {} with the global time service; with no skew {} and {}. The time service removes skew from the queue order, but its coarse 500 ms steps give many waiters the same time, and equal times are ordered by thread id. The old lock never reads the time source, and skew below its backoff scale barely moves it (table below).",
        f(skew[&(1, 1000, false)].overtakes_per_acquisition, 3),
        f(skew[&(1, 1000, true)].overtakes_per_acquisition, 3),
        f(skew[&(1, 0, false)].overtakes_per_acquisition, 3),
        f(skew[&(1, 0, true)].overtakes_per_acquisition, 3)
    );
    let stall_20 = measured.stalls.get(&20).copied().unwrap_or(f64::NAN);
    let _ = writeln!(
        md,
        "- **S1.** A time-service replica 20 s ahead that crashes leaves GlobalTime standing still for {} s (the thesis: \"for as long as it was ahead\").\n",
        f(stall_20, 1)
    );

    let _ = writeln!(md, "## Figures\n");
    let figures = [
        ("fairness-throughput.svg", "Throughput against threads", "Acquisitions per simulated second, mean over seeds. The old lock's random backoff (0-1000 ms after finding an owner) leaves the lock idle between holders; the queue lock hands over within a poll interval."),
        ("fairness-wait.svg", "Wait time p50 and p99", "From the moment a client asks until it holds, pooled over all acquisitions of all seeds (GetLock only)."),
        ("fairness-wait-max.svg", "Longest wait", "The single longest wait of any client: starvation shows here first."),
        ("fairness-requests.svg", "Store requests per acquisition and per handoff", "Every read, write and delete a client sent (renewals and releases included), divided by acquisitions, or by handoffs (acquisitions by a different client than the previous holder)."),
        ("fairness-jain.svg", "Jain's fairness index", "(sum of per-client acquisitions)^2 / (clients x sum of squares), averaged over the seeds with at least one acquisition (with none there are no shares to compare: \"-\" in the table, not plotted): 1 when every client got the same share, 1/n when one got everything."),
        ("fairness-longest-run.svg", "Longest run by one client", "The longest stretch of consecutive acquisitions by the same client, over all seeds: the thesis's \"batches\"."),
        ("fairness-overtakes.svg", "Overtakes", "For each acquisition, the number of other clients that had started waiting earlier and were still waiting, divided by acquisitions."),
        ("fairness-s1-staleness.svg", "Time-service staleness under S1", "How long the GlobalTime value stood still after the replica that ran ahead was killed, against how far ahead it ran."),
    ];
    for (file, title, caption) in figures {
        let _ = writeln!(md, "### {title}\n\n![{title}]({file})\n\n{caption}\n");
    }

    let _ = writeln!(md, "## Data\n");
    let _ = writeln!(md, "By lock variant and thread count ({workload}).\n");
    let _ = writeln!(
        md,
        "| variant | threads | acquisitions | acq/s | wait p50 ms | wait p99 ms | wait max ms | req/acq | req/handoff | Jain | longest run | overtakes/acq | refusals/acq |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (variant, (_, _, name)) in VARIANTS.iter().enumerate() {
        for &threads in &options.threads {
            let a = &t[&(variant, threads)];
            let _ = writeln!(
                md,
                "| {name} | {threads} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                a.acquisitions,
                f(a.throughput, 2),
                f(a.wait_p50_ms, 1),
                f(a.wait_p99_ms, 1),
                f(a.wait_max_ms, 1),
                f(a.requests_per_acquisition, 1),
                f(a.requests_per_handoff, 1),
                f(a.jain, 3),
                a.longest_run,
                f(a.overtakes_per_acquisition, 3),
                f(a.refusals_per_acquisition, 2)
            );
        }
    }
    let _ = writeln!(md, "\nClock skew and the time source, at {SKEW_THREADS} threads (client clocks offset uniformly in 0..=skew; \"global\": queue times from the time service, 3 replicas).\n");
    let _ = writeln!(
        md,
        "| variant | skew | time source | acq/s | wait p99 ms | Jain | longest run | overtakes/acq |"
    );
    let _ = writeln!(md, "|---|---:|---|---:|---:|---:|---:|---:|");
    for (variant, (_, _, name)) in VARIANTS.iter().enumerate().take(2) {
        for skew in SKEWS_MS {
            for &global in time_sources(variant) {
                let a = &measured.skew[&(variant, skew, global)];
                let _ = writeln!(
                    md,
                    "| {name} | {} ms | {} | {} | {} | {} | {} | {} |",
                    skew,
                    if global { "global" } else { "local" },
                    f(a.throughput, 2),
                    f(a.wait_p99_ms, 1),
                    f(a.jain, 3),
                    a.longest_run,
                    f(a.overtakes_per_acquisition, 3)
                );
            }
        }
    }
    let _ = writeln!(
        md,
        "\nS1 (timeservice-stall scenario, queue GetLock, {}):\n",
        format_args!("seeds 0..{}", options.seeds)
    );
    let _ = writeln!(
        md,
        "| lead of the crashed replica | GlobalTime stood still for (longest over seeds) |"
    );
    let _ = writeln!(md, "|---:|---:|");
    for (lead, stall) in &measured.stalls {
        let _ = writeln!(md, "| {lead} s | {} s |", f(*stall, 1));
    }
    let _ = writeln!(md, "\n## Reading the figures\n");
    let _ = writeln!(md, "- Thread counts are on a log scale. A flat throughput line means handoffs cost the same however many clients wait.");
    let _ = writeln!(md, "- A figure that means nothing for a configuration (Jain's index or a wait with 0 acquisitions, requests per handoff with 0 handoffs, 0 on a log axis) is not plotted: its line breaks there and a note under the chart names it. A value too close to zero to read off a linear axis is printed beside its point, and a line lying wholly that close (under {}% of the axis) is drawn again under the chart on its own scale.", axis_label(NEAR_ZERO * 100.0));
    let _ = writeln!(md, "- \"old TryLock\" is the old algorithm's single TryLock (Listing 3) used as TryGetLock; \"queue TryGetLock\" is Listing 7. A refusal is a try that found the lock taken; their clients think and try again, so their acquisitions are not comparable with GetLock's one for one.");
    let _ = writeln!(md, "- Simulated time, not wall time: the simulator's network has 1-10 ms per message, so absolute rates are those of a LAN-like cluster; compare the algorithms, not the numbers with a real cluster (see `real-backends.md` for that).");
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(per_client: Vec<u64>) -> FairnessMetrics {
        FairnessMetrics {
            acquisitions: per_client.iter().sum(),
            per_client,
            duration: Duration::from_secs(60),
            ..FairnessMetrics::default()
        }
    }

    /// Jain's index of zero acquisitions is 0/0: a run without acquisitions does not pull the
    /// mean down, and with none at all the table prints "-" and the chart leaves the point off.
    #[test]
    fn jain_is_undefined_without_acquisitions() {
        let mixed = aggregate(&[run(vec![0, 0]), run(vec![3, 3])]);
        assert_eq!(mixed.jain, 1.0);
        let none = aggregate(&[run(vec![0, 0]), run(vec![0, 0])]);
        assert_eq!(f(none.jain, 3), "-");
        assert_eq!(none.of_acquisitions(none.jain), Y::Undefined("0 acquisitions".into()));
        assert_eq!(none.throughput, 0.0, "a rate of 0 acquisitions is 0, and is plotted");
    }
}
