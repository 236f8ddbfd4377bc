//! `cassalock bench sim`: seeds per minute of the contention scenario, on madsim's network and
//! on the cluster's own queues (`--network queues`), against our goal and against
//! madsim's own message rate measured in the same run; with `--shard K/N --shard-out FILE`,
//! one machine's part of it, and `cassalock merge` of the parts.
//!
//! A sharded bench answers "how fast does a sweep go on my machines": shard K runs the seeds
//! `s % N == K - 1` of the same seed set, timed on its own machine. The merge adds up what is
//! exact (acquisitions, simulated time in nanoseconds, messages: the same figures one machine
//! prints for the whole set, whatever the split) and reports the wall clock as it was: each
//! shard's seeds per minute on its machine, and the sweep's, the seeds over the slowest shard's
//! time, which is what the whole takes when the shards run at once.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, bail};
use cassalock::Algorithm;
use cassalock_sim::cluster::Network;
use cassalock_sim::ranges::SeedRange;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::shard::{Shard, ShardOut};
use crate::usage_error;

/// Seeds per algorithm when `--seeds` is not given.
pub const DEFAULT_SEEDS: u64 = 600;
/// The most seeds per algorithm `--seeds` takes.
pub const MAX_SEEDS: u64 = 100_000;
/// Worker threads (the machine has two cores).
const JOBS: usize = 2;
/// Echo calls of the raw madsim measurement.
const RAW_CALLS: u64 = 200_000;
/// The goal: contention seeds per minute on the two jobs.
const GOAL_SEEDS_PER_MINUTE: f64 = 10_000.0;
/// What is measured: each algorithm on the cluster's queues (the default network), then on
/// madsim's network.
const RUNS: [(Algorithm, Network); 4] = [
    (Algorithm::Old, Network::Queues),
    (Algorithm::Queue, Network::Queues),
    (Algorithm::Old, Network::Madsim),
    (Algorithm::Queue, Network::Madsim),
];

/// A run's name in the table and in shard files: "old (queues)", "queue (madsim)".
fn run_name((algorithm, network): (Algorithm, Network)) -> String {
    format!("{} ({network})", algorithm.name())
}

/// One algorithm's figures over the seeds one machine ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Figures {
    seeds: u64,
    /// Wall clock, seconds (this machine's).
    seconds: f64,
    acquisitions: u64,
    /// Simulated time over the seeds, nanoseconds (exact: shards add up to one run's figure).
    simulated_ns: u128,
    messages: u64,
    /// Seeds in which a check failed.
    failed: u64,
    /// Per failed claim: the seeds it failed in, and the first of them.
    #[serde(default)]
    failures: std::collections::BTreeMap<String, (u64, u64)>,
}

/// Claims whose failure in a contention run makes `bench sim` exit 1: two holders at once, or
/// damage to the resource. The others (bounds on handovers, tokens, leftovers) are printed with
/// their seeds; the old lock's C-release has a documented limit (docs/contract.md) that a long
/// enough sweep meets.
const SAFETY_CLAIMS: [&str; 2] = ["T1-belief", "T1-resource"];

impl Figures {
    fn add_failures(&mut self, seed: u64, claims: &[String]) {
        for claim in claims {
            let entry = self.failures.entry(claim.clone()).or_insert((0, seed));
            entry.0 += 1;
            entry.1 = entry.1.min(seed);
        }
    }
}

impl Figures {
    fn seeds_per_minute(&self) -> f64 {
        self.seeds as f64 / self.seconds.max(1e-9) * 60.0
    }
}

/// Run `seeds` of the contention scenario for `algorithm` on `network`, on `pool`.
fn measure(pool: &rayon::ThreadPool, (algorithm, network): (Algorithm, Network), seeds: &[u64]) -> Figures {
    use cassalock_sim::knobs::Knobs;
    use cassalock_sim::run::run;
    use cassalock_sim::scenario::{build, SimOptions};
    let options = SimOptions {
        knobs: Box::new(Knobs {
            network: Some(network),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    let started = Instant::now();
    let per_seed: Vec<(u64, usize, u128, u64, Vec<String>)> = pool.install(|| {
        seeds
            .par_iter()
            .map(|&seed| {
                let config = build("contention", seed, algorithm, &options).expect("known");
                let outcome = run(&config, seed, false);
                let failed: Vec<String> = outcome
                    .verdicts
                    .checks
                    .iter()
                    .filter(|check| !check.passed())
                    .map(|check| check.claim.to_string())
                    .collect();
                (
                    seed,
                    outcome.verdicts.acquisitions,
                    outcome.sim_time.as_nanos(),
                    outcome.messages,
                    failed,
                )
            })
            .collect()
    });
    let mut figures = Figures {
        seeds: seeds.len() as u64,
        seconds: started.elapsed().as_secs_f64(),
        ..Figures::default()
    };
    for (seed, acquisitions, simulated_ns, messages, failed) in per_seed {
        figures.acquisitions += acquisitions as u64;
        figures.simulated_ns += simulated_ns;
        figures.messages += messages;
        figures.failed += u64::from(!failed.is_empty());
        figures.add_failures(seed, &failed);
    }
    figures
}

/// madsim alone on this machine: echo calls, the messages they made, seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Raw {
    calls: u64,
    messages: u64,
    seconds: f64,
}

impl Raw {
    fn measure() -> Raw {
        let (messages, seconds) = cassalock_sim::run::raw_rpc_rate(RAW_CALLS);
        Raw {
            calls: RAW_CALLS,
            messages,
            seconds,
        }
    }

    fn rate(&self) -> f64 {
        self.messages as f64 / self.seconds.max(1e-9)
    }
}

/// The table's title and column names; `ran_on`: "2 threads", "3 shards x 2 threads".
fn header(seeds: u64, ran_on: &str) {
    println!("contention (5 clients x 20 acquisitions, QUORUM, 3 replicas): {seeds} seeds on {ran_on}");
    println!(
        "{:<16} {:>9} {:>13} {:>8} {:>13} {:>10} {:>12} {:>16}",
        "algorithm", "seconds", "seeds/minute", "x goal", "acquisitions", "sim. s", "messages", "messages/s/job"
    );
}

/// One algorithm's line; `jobs`: the worker threads that ran it, on every machine.
fn line(name: &str, figures: &Figures, jobs: usize) {
    let per_job = figures.messages as f64 / figures.seconds.max(1e-9) / jobs as f64;
    println!(
        "{name:<16} {:>9.2} {:>13.0} {:>8.2} {:>13} {:>10.0} {:>12} {per_job:>16.0}",
        figures.seconds,
        figures.seeds_per_minute(),
        figures.seeds_per_minute() / GOAL_SEEDS_PER_MINUTE,
        figures.acquisitions,
        figures.simulated_ns as f64 / 1e9,
        figures.messages,
    );
}

/// What madsim alone does on this machine, and what it leaves for each algorithm on its
/// network.
fn raw_lines(raw: &Raw, figures: &[((Algorithm, Network), Figures)]) {
    println!();
    println!(
        "madsim alone (one thread): {} echo calls, {} messages in {:.2} s: {:.0} messages/s",
        raw.calls,
        raw.messages,
        raw.seconds,
        raw.rate()
    );
    let default_call = cassalock_sim::run::echo_calls(1000, None).simulated / 1000;
    let floor_call = cassalock_sim::run::echo_calls(1000, Some((1, 2))).simulated / 1000;
    println!(
        "simulated time of one echo call (two messages): {:.2} ms at madsim's default latency (1..10 ms a message), {:.2} ms at 1..2 us: madsim adds 1 ms when a message is sent and 1 ms when it is received",
        default_call.as_secs_f64() * 1e3,
        floor_call.as_secs_f64() * 1e3
    );
    for ((algorithm, _), figures) in figures.iter().filter(|((_, network), _)| *network == Network::Madsim) {
        let per_job = figures.messages as f64 / figures.seconds.max(1e-9) / JOBS as f64;
        let per_seed = figures.messages as f64 / figures.seeds.max(1) as f64;
        // Were our code free, each seed would still cost its messages at madsim's rate.
        let ceiling = raw.rate() / per_seed * 60.0 * JOBS as f64;
        println!(
            "{:<10} simulator messages/s per job against madsim alone: {:.2}x; {per_seed:.0} messages a seed, so madsim alone would run at most {ceiling:.0} seeds/minute on {JOBS} jobs ({:.2}x the goal)",
            algorithm.name(),
            per_job / raw.rate(),
            ceiling / GOAL_SEEDS_PER_MINUTE
        );
    }
}

fn pool() -> Result<rayon::ThreadPool, ExitCode> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(JOBS)
        .build()
        .map_err(|error| {
            eprintln!("error: cannot start the worker threads: {error}");
            ExitCode::from(4)
        })
}

/// `--seeds` checked: 1 to [`MAX_SEEDS`]; the error is the message (the caller says where).
fn seed_range(seeds: u64) -> anyhow::Result<SeedRange> {
    if seeds == 0 || seeds > MAX_SEEDS {
        bail!("--seeds {seeds}: give 1 to {MAX_SEEDS} seeds per algorithm");
    }
    Ok(format!("0..{seeds}").parse().expect("a valid range"))
}

/// `bench sim` on this machine: every seed, then madsim alone. Exit 1 if a run failed a check.
pub fn run(seeds: u64) -> ExitCode {
    let range = match seed_range(seeds) {
        Ok(range) => range,
        Err(error) => return usage_error(&format!("{error:#}")),
    };
    let pool = match pool() {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    let all: Vec<u64> = range.seeds().collect();
    header(seeds, &format!("{JOBS} threads"));
    let mut figures = Vec::new();
    for run in RUNS {
        let measured = measure(&pool, run, &all);
        line(&run_name(run), &measured, JOBS);
        figures.push((run, measured));
    }
    network_lines(&figures);
    let raw = Raw::measure();
    raw_lines(&raw, &figures);
    bypass_lines(&raw, &figures);
    verdict(&figures)
}

/// Each algorithm on the queues against madsim's network, same seeds: the speed-up, and the
/// simulated time and messages (which should agree: same latencies, same work).
fn network_lines(figures: &[((Algorithm, Network), Figures)]) {
    println!();
    for (algorithm, network) in RUNS {
        if network != Network::Queues {
            continue;
        }
        let of = |network: Network| {
            figures
                .iter()
                .find(|(run, _)| *run == (algorithm, network))
                .map(|(_, figures)| figures)
        };
        let (Some(madsim), Some(queues)) = (of(Network::Madsim), of(Network::Queues)) else {
            continue;
        };
        println!(
            "{:<10} on the queues: {:.2}x the seeds per minute of madsim's network ({:.0} against {:.0}; {:.2}x the goal), simulated time {:.3}x, messages {:.3}x (same seeds, different runs)",
            algorithm.name(),
            queues.seeds_per_minute() / madsim.seeds_per_minute().max(1e-9),
            queues.seeds_per_minute(),
            madsim.seeds_per_minute(),
            queues.seeds_per_minute() / GOAL_SEEDS_PER_MINUTE,
            queues.simulated_ns as f64 / (madsim.simulated_ns as f64).max(1.0),
            queues.messages as f64 / (madsim.messages as f64).max(1.0),
        );
    }
}

/// madsim's timers and tasks alone against its network, in the same run, two
/// ways (`cassalock_sim::run::timer_echo_calls`: a task per message, a design not built;
/// `queue_echo_calls`: the cluster's own transport, `cassalock_sim::transport`), and the seeds
/// per minute the messages alone would allow at each rate: ceilings, set beside the
/// transport's measured rows above.
fn bypass_lines(raw: &Raw, figures: &[((Algorithm, Network), Figures)]) {
    let designs = [
        (
            "a task per message (spawned on the receiving node, sleeps the latency)",
            cassalock_sim::run::timer_echo_calls(RAW_CALLS),
        ),
        (
            "the cluster's transport (a delivery queue per node, the default network)",
            cassalock_sim::run::queue_echo_calls(RAW_CALLS),
        ),
    ];
    for (design, measured) in designs {
        let rate = measured.messages as f64 / measured.wall_s.max(1e-9);
        println!(
            "madsim's timers and tasks alone, {design}, no madsim network (one thread): {} messages in {:.2} s: {rate:.0} messages/s, {:.2}x madsim's network",
            measured.messages,
            measured.wall_s,
            rate / raw.rate()
        );
        for ((algorithm, _), figures) in figures.iter().filter(|((_, network), _)| *network == Network::Queues) {
            let per_seed = figures.messages as f64 / figures.seeds.max(1) as f64;
            let ceiling = rate / per_seed * 60.0 * JOBS as f64;
            println!(
                "{:<10} a transport at that rate would cap the messages alone at {ceiling:.0} seeds/minute on {JOBS} jobs ({:.2}x the goal; the queues' row above is the transport measured)",
                algorithm.name(),
                ceiling / GOAL_SEEDS_PER_MINUTE
            );
        }
    }
}

/// Name every claim a contention run failed, with its first seed; exit 1 if one of them is a
/// safety claim ([`SAFETY_CLAIMS`]).
fn verdict(figures: &[((Algorithm, Network), Figures)]) -> ExitCode {
    let mut unsafe_runs = false;
    for ((algorithm, network), figures) in figures {
        for (claim, (count, first)) in &figures.failures {
            println!(
                "{}: {claim} failed in {count} of {} seeds (first: seed {first}; cassalock replay --scenario contention --seed {first} --algorithm {} --network {network})",
                run_name((*algorithm, *network)),
                figures.seeds,
                algorithm.name()
            );
            unsafe_runs |= SAFETY_CLAIMS.contains(&claim.as_str());
        }
    }
    if unsafe_runs {
        eprintln!(
            "error: a contention run broke a safety claim ({})",
            SAFETY_CLAIMS.join(", ")
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// What a `bench sim` shard file says it is, and the version of its layout.
pub const SHARD_FORMAT: &str = "cassalock-bench-sim-shard";
pub const SHARD_VERSION: u64 = 2;

/// A shard's measurements (`bench sim --shard K/N --shard-out FILE`).
#[derive(Serialize, Deserialize)]
struct BenchShardFile {
    format: String,
    version: u64,
    /// Seeds per algorithm of the whole bench.
    seeds: u64,
    k: u64,
    n: u64,
    /// Per run ("old (queues)", "queue (queues)", "old (madsim)", "queue (madsim)"): this shard's figures.
    figures: Vec<(String, Figures)>,
    raw: Raw,
}

/// `bench sim --shard K/N --shard-out FILE`: measure this shard's seeds and write the figures;
/// 0 once written (a failed check is the merge's exit 1), 2 bad usage, 4 writing failed.
pub fn shard(seeds: u64, shard: &str, path: &Path) -> ExitCode {
    let range = match seed_range(seeds) {
        Ok(range) => range,
        Err(error) => return usage_error(&format!("{error:#}")),
    };
    let shard: Shard = match shard.parse() {
        Ok(shard) => shard,
        Err(hint) => return usage_error(&format!("--shard {shard}: {hint}")),
    };
    let out = match ShardOut::create(path) {
        Ok(out) => out,
        Err(error) => return usage_error(&format!("{error:#}")),
    };
    let pool = match pool() {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    let mine: Vec<u64> = shard.seeds(&range).collect();
    let figures: Vec<(String, Figures)> = RUNS
        .into_iter()
        .map(|run| (run_name(run), measure(&pool, run, &mine)))
        .collect();
    let file = BenchShardFile {
        format: SHARD_FORMAT.to_owned(),
        version: SHARD_VERSION,
        seeds,
        k: shard.k(),
        n: shard.n(),
        figures,
        raw: Raw::measure(),
    };
    let shown = out.path().display().to_string();
    if let Err(code) = out.write(&file) {
        return code;
    }
    println!(
        "shard {shard} of `cassalock bench sim --seeds {seeds}`: {} seeds per algorithm, written to {shown}; combine every shard with `cassalock merge FILE...`",
        mine.len()
    );
    ExitCode::SUCCESS
}

/// `cassalock merge` of `bench sim` shards: the whole bench's exact figures, each shard's
/// speed, and the sweep's (the seeds over the slowest shard's time).
pub fn merge(paths: &[PathBuf]) -> ExitCode {
    match merge_files(paths) {
        Ok(code) => code,
        Err(error) => usage_error(&format!("{error:#}")),
    }
}

fn merge_files(paths: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let mut files = Vec::new();
    for path in paths {
        let value = crate::shard::read_json(path, SHARD_FORMAT, SHARD_VERSION)?;
        let damaged = |why: String| anyhow!("{}: a damaged shard file: {why}", path.display());
        let file: BenchShardFile = serde_json::from_value(value).map_err(|error| damaged(error.to_string()))?;
        let shard = Shard::new(file.k, file.n).ok_or_else(|| damaged(format!("shard {}/{}", file.k, file.n)))?;
        let range = seed_range(file.seeds).map_err(|error| damaged(format!("{error:#}")))?;
        let names: Vec<String> = RUNS.into_iter().map(run_name).collect();
        if !file
            .figures
            .iter()
            .map(|(name, _)| name.as_str())
            .eq(names.iter().map(String::as_str))
            || file
                .figures
                .iter()
                .any(|(_, figures)| u128::from(figures.seeds) != shard.count(&range))
        {
            return Err(damaged(format!(
                "not {} seeds of each of {}",
                shard.count(&range),
                names.join(", ")
            )));
        }
        files.push((path, file, shard));
    }
    let cover: Vec<(&PathBuf, String, Shard)> = files
        .iter()
        .map(|(path, file, shard)| {
            (
                *path,
                format!("`cassalock bench sim --seeds {}` in {} shards", file.seeds, shard.n()),
                *shard,
            )
        })
        .collect();
    let seeds = files[0].1.seeds;
    crate::shard::check_cover(&cover, &format!("cassalock bench sim --seeds {seeds}"))?;
    files.sort_by_key(|(_, _, shard)| shard.k());
    let n = files.len();
    println!(
        "{n} shard(s), each timed on its own machine ({JOBS} threads each); the sweep's seconds are the slowest shard's, and messages/s/job counts every machine's threads"
    );
    header(seeds, &format!("{n} shards x {JOBS} threads"));
    let mut merged = Vec::new();
    for (index, run) in RUNS.into_iter().enumerate() {
        let mut whole = Figures::default();
        for (_, file, _) in &files {
            let figures = &file.figures[index].1;
            whole.seeds += figures.seeds;
            whole.seconds = whole.seconds.max(figures.seconds);
            whole.acquisitions += figures.acquisitions;
            whole.simulated_ns += figures.simulated_ns;
            whole.messages += figures.messages;
            whole.failed += figures.failed;
            for (claim, &(count, first)) in &figures.failures {
                let entry = whole.failures.entry(claim.clone()).or_insert((0, first));
                entry.0 += count;
                entry.1 = entry.1.min(first);
            }
        }
        line(&run_name(run), &whole, JOBS * n);
        merged.push((run, whole));
    }
    network_lines(&merged);
    println!();
    println!(
        "{:<16} {:>6} {:>7} {:>9} {:>13} {:>18}",
        "algorithm", "shard", "seeds", "seconds", "seeds/minute", "madsim messages/s"
    );
    for (index, run) in RUNS.into_iter().enumerate() {
        for (_, file, shard) in &files {
            let figures = &file.figures[index].1;
            println!(
                "{:<16} {:>6} {:>7} {:>9.2} {:>13.0} {:>18.0}",
                run_name(run),
                shard.to_string(),
                figures.seeds,
                figures.seconds,
                figures.seeds_per_minute(),
                file.raw.rate()
            );
        }
    }
    Ok(verdict(&merged))
}
