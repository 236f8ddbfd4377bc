//! `cassalock bench`: figures, not tests. Timings on a shared machine are noisy: compare the
//! ratios within one run.

use std::process::ExitCode;
use std::time::Instant;

use cassalock_models::check::{Limits, Verdict};
use cassalock_models::{build, Fault, ModelName, Mutant, Spec};
use cassalock_real::Lock;
use clap::{Args, ValueEnum};

use crate::real::{BenchPlan, BenchRealFlags};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Suite {
    /// Model checking: stateright's own Paxos example as the yardstick (built from the stateright
    /// sources cargo unpacked, about a minute the first time, and run now), exhaustive runs
    /// with their states per second and its ratio to the yardstick's, the GetLock 3 x 2
    /// worlds against their 60 s goal and 4 x 2 with skew against its 10 minutes, and the time to each catalogued counterexample. Exit 4
    /// when the yardstick cannot be built or run.
    Models,
    /// Simulation: seeds per minute of the contention scenario (2 jobs, release build), on the
    /// cluster's own queues (the default network) and on madsim's, against madsim's own message
    /// rate in the same run; --seeds per algorithm and network (default 600); every claim a run
    /// failed is named with its first seed, exit 1 if one is T1-belief or T1-resource; with
    /// --shard K/N --shard-out FILE, this machine's part, added up by `cassalock merge`.
    #[cfg(madsim)]
    Sim,
    /// Simulation: the fair lock's goal. The queue lock (as listed, its next in line polling
    /// every 5 ms, and paced) against the old lock at 16 lockers, hold 10 ms, no think time,
    /// each locker acquiring for a simulated minute; at the default latency (1..10 ms) and at 1..2 us a
    /// message: acquisitions per simulated second, Jain's index, requests per acquisition,
    /// each against the old lock's, and the goal judged (2x, Jain >= 0.99, no more
    /// requests); --seeds per line (default 100, at most 1000). Exit 1 if a run broke T1.
    #[cfg(madsim)]
    Handoff,
    /// Simulation: peak resident memory (VmHWM) after each of --counts seeds of one scenario,
    /// all in one sweep (the `sim` path), and its ratio to the first: it should stay flat.
    #[cfg(madsim)]
    SweepMemory,
    /// Real backends (the real build only): every lock on its real servers, Cassandra's old,
    /// queue (also with its next in line polling every 5 ms) and LWT locks, Redis SET NX,
    /// Redisson's RLock and fair lock, Redlock, Memcached add, Curator's lock on ZooKeeper
    /// and etcd's mutex, at 1, 4 and 16 lockers, interleaved
    /// repeats; then one run of each under its backend's fault (a Cassandra node killed, the
    /// Redis primary failed over, a Redlock master paused, memcached restarted, the ZooKeeper or
    /// etcd leader killed). Writes reports/real-backends.md and its charts. Start the servers
    /// first: cluster/cassalock-cluster start --nodes 3; cluster/cassalock-servers start redis
    /// --instances 3; ... start redis-replicated; ... start memcached; ... start zookeeper
    /// --nodes 3; ... start etcd --nodes 3 (see --locks to run fewer).
    /// Exit 1 when two holders overlapped in a run without a fault, 4 when a server does not
    /// answer.
    Real,
    /// The Cassandra locks over a long run (the real build only): one locker takes and
    /// releases one lock --acquisitions times (default 10,000), nobody contending, for each of
    /// --locks (default old,queue); prints acquire and release latency per --block (default
    /// 500) as it goes, the last block against the first, and each call against its own
    /// requests' round trips (a probe request timed before each block). Writes
    /// reports/real-long-run.md, its chart and its data. Start the cluster first:
    /// cluster/cassalock-cluster start --nodes 3. Exit 4 when the cluster does not answer.
    LongRun,
    /// The Cassandra cluster's own ceiling (the real build only): --clients counts (default
    /// 1,2,4,8,16,32,64) of clients on one connection, each asking one request after another
    /// (a slice read, then a one-cell write, on a row of its own, QUORUM) for --seconds
    /// (default 10) each; prints requests a second, latency p50 / p99 and how busy the
    /// machine's CPU was. A lock whose runs come near that rate is bound by the machine, not
    /// its handoff: it can go faster only by asking less. Start the cluster first:
    /// cluster/cassalock-cluster start --nodes 3. Exit 4 when the cluster does not answer.
    Capacity,
    /// The locks people ship, as black boxes (either build): every client program of clients/
    /// (redis-py, kazoo, Redisson's RLock, fair and fenced locks, Curator, go-redsync over one
    /// and three masters, etcd's current and 3.4 clients), 3 copies each, with no fault, with
    /// a holder (for etcd also a waiter) stopped past its lease or session, with a holder cut
    /// off from its servers past it, and with a lone Redis server restarted; writes
    /// reports/real-clients.md (each run beside our model's verdict from reports/matrix.md) and
    /// each run's event record. Build the programs first (clients/setup all) and start the
    /// servers (cluster/cassalock-servers start redis --instances 3; ... start zookeeper
    /// --nodes 3; ... start etcd --nodes 3). Exit 4 when one is missing, 3 when a run gave no
    /// verdict.
    Clients,
    /// The judge of runs seen from outside (the real runner's, a client library's): records of
    /// --counts events (default 10000,100000,1000000; 100..=10000000, increasing), written to a
    /// temporary folder and each judged by `cassalock judge FILE` in a child process: its time,
    /// events per second and peak resident memory, and the last count's memory against the
    /// first's (flat: memory that does not grow with the record). Exit 1 when the judge misses
    /// what the record planted (two holders at once, stale writes accepted).
    Judge,
}

/// Measure and print speed figures.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Which suite.
    #[arg(value_enum)]
    suite: Suite,
    /// real, long-run: which locks, comma-separated [default: real: all thirteen: old, queue,
    /// queue-next-in-line (the queue lock whose waiter next in line polls every 5 ms, the
    /// faster handoff), queue-paced (the same, every waiter sleeping by its rank and the
    /// queue's pace), lwt, redis-set-nx, redisson, redisson-fair, redisson-fenced, redlock,
    /// memcached, zookeeper, etcd; long-run: old,queue, the only two it takes].
    #[arg(long, value_parser = crate::lock_names::real_lock(), value_delimiter = ',')]
    locks: Option<Vec<Lock>>,
    /// real, long-run: Cassandra nodes, host:port, comma-separated, for old, queue and lwt
    /// [default: 127.0.0.1:9042, `cluster/cassalock-cluster start --nodes 3`].
    #[arg(long, value_delimiter = ',')]
    contact_points: Option<Vec<String>>,
    /// real: the Redis server of redis-set-nx, redisson and redisson-fair, host:port [default: 127.0.0.1:16380,
    /// redis1 of `cluster/cassalock-servers start redis --instances 3`].
    #[arg(long)]
    redis: Option<String>,
    /// real: Redlock's masters, host:port, comma-separated (1-15) [default:
    /// 127.0.0.1:16380,127.0.0.1:16381,127.0.0.1:16382, `cluster/cassalock-servers start redis
    /// --instances 3`].
    #[arg(long, value_delimiter = ',')]
    redlock_masters: Option<Vec<String>>,
    /// real: the Memcached server, host:port [default: 127.0.0.1:21211, `cluster/cassalock-servers
    /// start memcached`].
    #[arg(long)]
    memcached: Option<String>,
    /// real: the replicated Redis pair (primary, replica) that redis-set-nx, redisson and redisson-fair run
    /// against in their failover runs [default: 127.0.0.1:16390,127.0.0.1:16391,
    /// `cluster/cassalock-servers start redis-replicated`].
    #[arg(long, value_delimiter = ',')]
    redis_replicated: Option<Vec<String>>,
    /// real: the ZooKeeper ensemble of zookeeper, host:port, comma-separated (its leader is
    /// killed in the fault run) [default: 127.0.0.1:22181,127.0.0.1:22182,127.0.0.1:22183,
    /// `cluster/cassalock-servers start zookeeper --nodes 3`].
    #[arg(long, value_delimiter = ',')]
    zookeeper: Option<Vec<String>>,
    /// real: the etcd cluster of etcd, host:port, comma-separated (its leader is killed in the
    /// fault run) [default: 127.0.0.1:23781,127.0.0.1:23782,127.0.0.1:23783,
    /// `cluster/cassalock-servers start etcd --nodes 3`].
    #[arg(long, value_delimiter = ',')]
    etcd: Option<Vec<String>>,
    /// long-run: acquisitions per lock, 1-1000000 [default: 10000].
    #[arg(long, allow_negative_numbers = true)]
    acquisitions: Option<u64>,
    /// long-run: acquisitions per block (a line of progress, a point of the chart); at most
    /// 1000 blocks [default: 500, or acquisitions / 1000 when that is more].
    #[arg(long, allow_negative_numbers = true)]
    block: Option<u64>,
    /// long-run: seconds the locks sit idle after the runs before their rows are read again,
    /// 0-3600; 0 skips the second read [default: the table's gc_grace_seconds + 5 = 65].
    #[arg(long, allow_negative_numbers = true)]
    idle_s: Option<u64>,
    /// long-run: the locker reuses its thread ids (`Settings::reuse_thread_ids`), so the
    /// main and shadow rows keep one cell instead of a tombstone per acquisition [default:
    /// true, the library's; false: a new id per acquisition, as the thesis's listings].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    reuse_thread_ids: Option<bool>,
    /// long-run: the queue lock reads its queue from the column of its last hold
    /// (`Settings::queue_read_from_last_hold`), not from the row's start [default: true, the
    /// library's; false: from the row's start, as the listing].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    queue_read_from_last_hold: Option<bool>,
    /// capacity: client counts, increasing, comma-separated, 1-256 each, at most 12 [default:
    /// 1,2,4,8,16,32,64].
    #[arg(long, value_delimiter = ',')]
    clients: Option<Vec<usize>>,
    /// real: locker counts, increasing, comma-separated, 1-256 each, at most 8 [default: 1,4,16].
    #[arg(long, value_delimiter = ',')]
    lockers: Option<Vec<usize>>,
    /// real: seconds per configuration [default: 20]; capacity: per client count [default: 10].
    #[arg(long)]
    seconds: Option<u64>,
    /// real: each locker's hold, milliseconds, 0-60000 [default: 10]; the report states it, and
    /// --add-to needs the earlier runs' hold.
    #[arg(long)]
    hold_ms: Option<u64>,
    /// real: runs of each configuration, interleaved (run 1 of every configuration, then
    /// run 2, ...), so that the report gives a spread, not one noisy figure [default: 3].
    #[arg(long)]
    repeats: Option<usize>,
    /// real: seconds of each lock's fault run (4 lockers, the fault injected a third of the way
    /// in); 0: no fault runs, and the report says the faults were not measured [default: 20].
    #[arg(long)]
    fault_seconds: Option<u64>,
    /// real, long-run: write the report again from the measurements of an earlier run
    /// (reports/real-backends.json, reports/real-long-run.json), measuring nothing (any build;
    /// only --out goes with it).
    #[arg(long)]
    from_data: Option<std::path::PathBuf>,
    /// real: measure only --locks and write the report of an earlier `bench real`'s data file
    /// (reports/real-backends.json) with these locks' runs put in place of any it had; the
    /// earlier --lockers, --seconds, --repeats and --fault-seconds must be given again.
    #[arg(long)]
    add_to: Option<std::path::PathBuf>,
    /// real, long-run, clients: where the report goes [default: reports].
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// sweep-memory: the scenario swept (the names `cassalock sim --help` lists) [default:
    /// contention].
    #[arg(long)]
    scenario: Option<String>,
    /// sweep-memory: seed counts after which peak memory is read, increasing, comma-separated;
    /// one sweep runs seeds 0.. up to the last count [default: 1000,10000,100000]; judge:
    /// events per record [default: 10000,100000,1000000].
    #[arg(long, value_delimiter = ',')]
    counts: Option<Vec<u64>>,
    /// sim: seeds per algorithm, 1-100000 [default: 600]; handoff: seeds per variant and
    /// latency, 1-1000 [default: 100].
    #[arg(long, allow_negative_numbers = true)]
    seeds: Option<u64>,
    /// sim: run only shard K of N of the seeds (seed % N == K-1), timed on this machine, and
    /// write its figures to --shard-out; `cassalock merge FILE...` adds the shards up.
    #[arg(long, value_name = "K/N", requires = "shard_out")]
    shard: Option<String>,
    /// sim: with --shard, the file to write (JSON).
    #[arg(long, value_name = "FILE", requires = "shard")]
    shard_out: Option<std::path::PathBuf>,
}

impl BenchArgs {
    /// A flag given for a suite that does not read it: the flag's name and the suite it is for.
    fn misplaced_flag(&self) -> Option<(&'static str, &'static str)> {
        let real = [
            ("--locks", self.locks.is_some()),
            ("--contact-points", self.contact_points.is_some()),
            ("--redis", self.redis.is_some()),
            ("--redlock-masters", self.redlock_masters.is_some()),
            ("--memcached", self.memcached.is_some()),
            ("--redis-replicated", self.redis_replicated.is_some()),
            ("--zookeeper", self.zookeeper.is_some()),
            ("--etcd", self.etcd.is_some()),
            ("--fault-seconds", self.fault_seconds.is_some()),
            ("--from-data", self.from_data.is_some()),
            ("--add-to", self.add_to.is_some()),
            ("--lockers", self.lockers.is_some()),
            ("--seconds", self.seconds.is_some()),
            ("--hold-ms", self.hold_ms.is_some()),
            ("--repeats", self.repeats.is_some()),
            ("--out", self.out.is_some()),
        ];
        let sweep_memory = [
            ("--scenario", self.scenario.is_some()),
            ("--counts", self.counts.is_some()),
        ];
        let seeds = [("--seeds", self.seeds.is_some())];
        let capacity = [("--clients", self.clients.is_some())];
        let capacity_ok = matches!(self.suite, Suite::Capacity);
        let sim = [
            ("--shard", self.shard.is_some()),
            ("--shard-out", self.shard_out.is_some()),
        ];
        let long_run = [
            ("--acquisitions", self.acquisitions.is_some()),
            ("--block", self.block.is_some()),
            ("--idle-s", self.idle_s.is_some()),
            ("--reuse-thread-ids", self.reuse_thread_ids.is_some()),
            ("--queue-read-from-last-hold", self.queue_read_from_last_hold.is_some()),
        ];
        let (real_ok, sweep_memory_ok, long_run_ok) = match self.suite {
            Suite::Real => (true, false, false),
            #[cfg(madsim)]
            Suite::SweepMemory => (false, true, false),
            Suite::LongRun => (false, false, true),
            _ => (false, false, false),
        };
        #[cfg(madsim)]
        let sim_ok = matches!(self.suite, Suite::Sim);
        #[cfg(not(madsim))]
        let sim_ok = false;
        #[cfg(madsim)]
        let seeds_ok = matches!(self.suite, Suite::Sim | Suite::Handoff);
        #[cfg(not(madsim))]
        let seeds_ok = false;
        // What the long run and the capacity suite read of the real suite's flags.
        let long_run_reads = ["--locks", "--contact-points", "--out", "--from-data"];
        let capacity_reads = ["--contact-points", "--seconds"];
        let clients_ok = matches!(self.suite, Suite::Clients);
        let judge_ok = matches!(self.suite, Suite::Judge);
        // A flag another suite owns but this one reads too is in its place.
        let read_here = |flag: &str| {
            (long_run_ok && long_run_reads.contains(&flag))
                || (capacity_ok && capacity_reads.contains(&flag))
                || (clients_ok && flag == "--out")
                || (judge_ok && flag == "--counts")
        };
        let misplaced = |flags: &[(&'static str, bool)], ok: bool, suite: &'static str| {
            flags
                .iter()
                .find(|(flag, given)| *given && !ok && !read_here(flag))
                .map(|(flag, _)| (*flag, suite))
        };
        misplaced(&capacity, capacity_ok, "bench capacity")
            .or_else(|| misplaced(&real, real_ok, "bench real"))
            .or_else(|| misplaced(&sweep_memory, sweep_memory_ok, "bench sweep-memory"))
            .or_else(|| misplaced(&long_run, long_run_ok, "bench long-run"))
            .or_else(|| misplaced(&seeds, seeds_ok, "bench sim` or `cassalock bench handoff"))
            .or_else(|| misplaced(&sim, sim_ok, "bench sim"))
    }
}

pub fn run(args: BenchArgs) -> ExitCode {
    if let Some((flag, suite)) = args.misplaced_flag() {
        eprintln!("error: {flag} applies to `cassalock {suite}` only; drop it or choose that suite");
        return ExitCode::from(2);
    }
    match args.suite {
        Suite::Models => models(),
        #[cfg(madsim)]
        Suite::Sim => {
            let seeds = args.seeds.unwrap_or(crate::bench_sim::DEFAULT_SEEDS);
            match (&args.shard, &args.shard_out) {
                (Some(shard), Some(path)) => crate::bench_sim::shard(seeds, shard, path),
                _ => crate::bench_sim::run(seeds),
            }
        }
        #[cfg(madsim)]
        Suite::Handoff => crate::bench_handoff::run_bench(args.seeds.unwrap_or(crate::bench_handoff::DEFAULT_SEEDS)),
        #[cfg(madsim)]
        Suite::SweepMemory => sweep_memory(
            args.scenario.as_deref().unwrap_or("contention"),
            args.counts.as_deref().unwrap_or(&[1000, 10_000, 100_000]),
        ),
        Suite::LongRun => crate::long_run::run(args.long_run_args()),
        Suite::Capacity => crate::capacity::run(cassalock_real::capacity::CapacityPlan {
            contact_points: args
                .contact_points
                .clone()
                .unwrap_or_else(|| vec!["127.0.0.1:9042".into()]),
            keyspace: "cassalock".into(),
            consistency: "quorum".into(),
            clients: args.clients.clone().unwrap_or_else(|| vec![1, 2, 4, 8, 16, 32, 64]),
            seconds: args.seconds.unwrap_or(10),
        }),
        Suite::Clients => crate::bench_clients::run(args.out.as_deref()),
        Suite::Judge => crate::bench_judge::run(args.counts.as_deref().unwrap_or(&crate::bench_judge::DEFAULT_EVENTS)),
        Suite::Real => match args.from_data.as_deref() {
            Some(data) => super::real::rerender(data, &args.real_flags()),
            None => match BenchPlan::new(args.real_flags()) {
                Err(error) => crate::usage_error(&format!("{error:#}")),
                #[cfg(not(madsim))]
                Ok(plan) => super::real::bench(plan),
                #[cfg(madsim)]
                Ok(plan) => super::real::bench_needs_the_real_build(&plan),
            },
        },
    }
}

/// `bench long-run`'s block when --block is not given (and 500 makes at most 1000 blocks).
const DEFAULT_LONG_RUN_BLOCK: u64 = 500;

impl BenchArgs {
    /// The options of `bench long-run`, defaults filled in.
    fn long_run_args(&self) -> crate::long_run::LongRunArgs {
        let acquisitions = self.acquisitions.unwrap_or(10_000);
        crate::long_run::LongRunArgs {
            locks: self.locks.clone().unwrap_or_else(|| vec![Lock::Old, Lock::Queue]),
            plan: cassalock_real::long_run::LongRunPlan {
                acquisitions,
                // 500, or larger when 500 would make more than the most blocks, or every
                // acquisition in one block when there are fewer.
                block: self.block.unwrap_or_else(|| {
                    DEFAULT_LONG_RUN_BLOCK
                        .max(acquisitions.div_ceil(cassalock_real::long_run::MAX_BLOCKS))
                        .min(acquisitions.max(1))
                }),
                contact_points: self
                    .contact_points
                    .clone()
                    .unwrap_or_else(|| vec!["127.0.0.1:9042".into()]),
                keyspace: "cassalock".into(),
                consistency: "quorum".into(),
                reuse_thread_ids: self
                    .reuse_thread_ids
                    .unwrap_or_else(|| cassalock::Settings::new("bench").reuse_thread_ids),
                queue_read_from_last_hold: self
                    .queue_read_from_last_hold
                    .unwrap_or_else(|| cassalock::Settings::new("bench").queue_read_from_last_hold),
            },
            out: self.out.clone().unwrap_or_else(|| "reports".into()),
            idle_s: self
                .idle_s
                .unwrap_or_else(|| cassalock_real::long_run::idle_before_reread().as_secs()),
            from_data: self.from_data.clone(),
            measuring_flags: [
                ("--locks", self.locks.is_some()),
                ("--acquisitions", self.acquisitions.is_some()),
                ("--block", self.block.is_some()),
                ("--idle-s", self.idle_s.is_some()),
                ("--contact-points", self.contact_points.is_some()),
                ("--reuse-thread-ids", self.reuse_thread_ids.is_some()),
                ("--queue-read-from-last-hold", self.queue_read_from_last_hold.is_some()),
            ]
            .into_iter()
            .filter_map(|(flag, given)| given.then_some(flag))
            .collect(),
        }
    }

    /// The options of `bench real`, as given.
    fn real_flags(&self) -> BenchRealFlags {
        BenchRealFlags {
            locks: self.locks.clone(),
            lockers: self.lockers.clone(),
            seconds: self.seconds,
            hold_ms: self.hold_ms,
            repeats: self.repeats,
            fault_seconds: self.fault_seconds,
            contact_points: self.contact_points.clone(),
            redis: self.redis.clone(),
            redlock_masters: self.redlock_masters.clone(),
            memcached: self.memcached.clone(),
            redis_replicated: self.redis_replicated.clone(),
            zookeeper: self.zookeeper.clone(),
            etcd: self.etcd.clone(),
            out: self.out.clone(),
            add_to: self.add_to.clone(),
        }
    }
}

/// The most checkpoints `bench sweep-memory` reads.
#[cfg(madsim)]
const MAX_COUNTS: usize = 8;

/// Check `bench sweep-memory --counts`: 1 to [`MAX_COUNTS`] counts, strictly increasing, each
/// from 1 to `sim`'s own limit on one call's seeds.
#[cfg(madsim)]
fn check_counts(counts: &[u64], max_seeds: u64) -> anyhow::Result<()> {
    if counts.is_empty() || counts.len() > MAX_COUNTS {
        anyhow::bail!("--counts: give 1 to {MAX_COUNTS} seed counts, comma-separated (e.g. 1000,10000,100000)");
    }
    if let Some(bad) = counts.iter().find(|&&count| count == 0 || count > max_seeds) {
        anyhow::bail!("--counts {bad}: each count must be from 1 to {max_seeds} seeds");
    }
    if counts.windows(2).any(|pair| pair[0] >= pair[1]) {
        anyhow::bail!(
            "--counts {}: give the counts in increasing order, each once (they are checkpoints of one sweep)",
            counts.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
        );
    }
    Ok(())
}

/// The `VmHWM` line of a `/proc/<pid>/status` text: the peak resident set size, in KiB.
#[cfg(madsim)]
fn parse_vm_hwm_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let mut words = line["VmHWM:".len()..].split_whitespace();
    let kib = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(kib)
}

/// This process's peak resident set size so far, in KiB (Linux: `/proc/self/status`).
#[cfg(madsim)]
fn peak_rss_kib() -> std::io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    parse_vm_hwm_kib(&status).ok_or_else(|| std::io::Error::other("/proc/self/status has no VmHWM line in kB"))
}

/// Peak memory of one long sweep, read after each count of seeds: the sweep must run in flat
/// memory, so the ratio of the last reading to the first should stay near 1.
/// The seeds run through `sim`'s own `run_seeds` (2 jobs, the queue algorithm), so this measures
/// what `cassalock sim --seeds 0..N` holds.
#[cfg(madsim)]
fn sweep_memory(scenario: &str, counts: &[u64]) -> ExitCode {
    use std::io::IsTerminal;

    use cassalock::Algorithm;
    use cassalock_sim::ranges::SeedRange;
    use cassalock_sim::scenario::{build, SimOptions};

    use crate::sim::{run_seeds, MAX_SEEDS};
    const JOBS: usize = 2;
    /// Seeds per step between progress lines when stderr is not a terminal (no progress bar).
    const STEP: u64 = 10_000;
    let algorithm = Algorithm::Queue;
    let options = SimOptions::default();
    if let Err(error) = check_counts(counts, MAX_SEEDS) {
        return crate::usage_error(&format!("{error:#}"));
    }
    let config = match build(scenario, 0, algorithm, &options) {
        Ok(config) => config,
        Err(error) => return crate::usage_error(&error.to_string()),
    };
    let before_kib = match peak_rss_kib() {
        Ok(kib) => kib,
        Err(error) => {
            eprintln!("error: cannot read the peak resident memory: {error}");
            return ExitCode::from(1);
        }
    };
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(JOBS).build() {
        Ok(pool) => pool,
        Err(error) => {
            eprintln!("error: cannot start the worker threads: {error}");
            return ExitCode::from(1);
        }
    };
    let total = *counts.last().expect("checked: not empty");
    let plan = config.plan();
    println!("peak resident memory (VmHWM) of one sweep over seeds 0..{total} on {JOBS} jobs, read after each count");
    println!("  {}", plan.lines().next().unwrap_or_default());
    println!("  peak before the first seed: {:.1} MB", before_kib as f64 / 1024.0);
    println!(
        "{:>9} {:>15} {:>14} {:>10} {:>13} {:>12}",
        "seeds", "peak RSS (MB)", "x first count", "seconds", "seeds/minute", "failed runs"
    );
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} seeds, {per_sec}, eta {eta}")
                .expect("template"),
        );
        bar.set_message(format!("sweep-memory {scenario} {}", algorithm.name()));
        bar
    });
    let started = Instant::now();
    let (mut done, mut failed_runs, mut first_kib) = (0u64, 0u64, None);
    let mut panicked = None;
    for &count in counts {
        while done < count {
            let step_end = count.min(done + STEP);
            let seeds = SeedRange::new(done..=step_end - 1).expect("done < step_end");
            let tally = run_seeds(scenario, &options, seeds.seeds(), &pool, algorithm, bar.as_ref(), None)
                .expect("no per-seed file, nothing written");
            failed_runs += tally.failed_runs;
            panicked = panicked.or(tally.panics);
            done = step_end;
            if bar.is_none() && done < count {
                let peak =
                    peak_rss_kib().map_or("unreadable".to_owned(), |kib| format!("{:.1} MB", kib as f64 / 1024.0));
                eprintln!(
                    "sweep-memory: {done}/{total} seeds, peak RSS {peak}, {:.0} s",
                    started.elapsed().as_secs_f64()
                );
            }
        }
        let kib = match peak_rss_kib() {
            Ok(kib) => kib,
            Err(error) => {
                eprintln!("error: cannot read the peak resident memory: {error}");
                return ExitCode::from(1);
            }
        };
        let first = *first_kib.get_or_insert(kib);
        let seconds = started.elapsed().as_secs_f64();
        let row = format!(
            "{count:>9} {:>15.1} {:>14.2} {seconds:>10.0} {:>13.0} {failed_runs:>12}",
            kib as f64 / 1024.0,
            kib as f64 / first as f64,
            count as f64 / seconds * 60.0
        );
        match &bar {
            Some(bar) => bar.suspend(|| println!("{row}")),
            None => println!("{row}"),
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if let Some(seed) = panicked {
        eprintln!(
            "error: a run panicked (a harness bug); first seed {seed}: {}",
            crate::sim::replay_command(scenario, seed, algorithm, "")
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// An exhaustive row's checks are repeated until stateright's seconds add up to this: a check of
/// a few thousand states takes hundredths of a second, too short to time against the yardstick.
const SHORTEST_TIMED_SECONDS: f64 = 1.0;
/// The most runs of one row (a check of a few states would otherwise repeat for long).
const MOST_TIMED_RUNS: u32 = 50;

/// The goal for GetLock 3 x 2 with skew, delayed enqueue or leases: exhaustive within this.
const WORLD_GOAL_SECONDS: u64 = 60;
/// The check's time limit covers stateright and our graph together; this caps the graph's
/// memory as well (the frontier's states are held in full).
const WORLD_STATE_LIMIT: usize = 2_000_000;
/// The goal for GetLock 4 x 2 with skew: exhaustive within this.
const LARGE_WORLD_GOAL_SECONDS: u64 = 600;
/// The state limit of that world: twice its 9,961,752 states (measured 2026-11-28; about 4 GB
/// resident at the end). The check's memory limit still stops it first on a smaller machine.
const LARGE_WORLD_STATE_LIMIT: usize = 20_000_000;

/// The seconds of stateright's exploration and of our graph's, from a report's rows (every
/// `always` row carries stateright's; a liveness row carries the graph's plus its own check;
/// `None` without liveness rows).
fn exploration_seconds(report: &cassalock_models::check::Report) -> (f64, Option<f64>) {
    let stateright = report
        .rows
        .iter()
        .find(|row| row.kind != "liveness")
        .map_or(0.0, |row| row.seconds);
    let graph = report
        .rows
        .iter()
        .filter(|row| row.kind == "liveness")
        .map(|row| row.seconds)
        .fold(f64::NAN, f64::min);
    (stateright, (!graph.is_nan()).then_some(graph))
}

fn spec(model: ModelName, fault: Fault, mutant: Option<Mutant>, threads: Option<u8>, acquisitions: Option<u8>) -> Spec {
    let mut spec = Spec::new(model);
    spec.fault = fault;
    spec.mutant = mutant;
    spec.threads = threads;
    spec.acquisitions = acquisitions;
    spec
}

/// `bench models`: the yardstick, then the exhaustive runs, the larger worlds and the
/// counterexamples, each against the yardstick's rate. Exit 4 when the yardstick cannot run, 1
/// when a counterexample was not found or an exploration went wrong.
fn models() -> ExitCode {
    let paxos_bfs = match yardstick() {
        Ok(rate) => rate,
        Err(code) => return code,
    };
    let mut failed = exhaustive_runs(paxos_bfs);
    failed |= larger_worlds(paxos_bfs);
    failed |= counterexamples();
    if failed {
        eprintln!("error: a catalogued counterexample was not found, or the explorations disagreed");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// Build and run stateright's own Paxos example now, print its runs, and return its
/// breadth-first states per second (exit 4 when it cannot run).
fn yardstick() -> Result<f64, ExitCode> {
    // The yardstick first: stateright's own Paxos example, run now on this machine.
    println!(
        "yardstick: stateright's Paxos example, unmodified ({} clients, 3 servers), run now",
        crate::paxos_baseline::CLIENTS
    );
    let baseline = match crate::paxos_baseline::build().and_then(|binary| {
        let bfs = crate::paxos_baseline::run(&binary, "check")?;
        let dfs = crate::paxos_baseline::run(&binary, "check-dfs")?;
        Ok((bfs, dfs))
    }) {
        Ok(runs) => runs,
        Err(why) => {
            eprintln!("error: the Paxos yardstick could not run: {why:#}");
            return Err(ExitCode::from(4));
        }
    };
    println!(
        "{:<44} {:>12} {:>9} {:>14}",
        "run", "unique states", "seconds", "states/second"
    );
    for run in [&baseline.0, &baseline.1] {
        println!(
            "{:<44} {:>12} {:>9.2} {:>14.0}",
            format!("paxos {} {}", run.mode, crate::paxos_baseline::CLIENTS),
            run.unique_states,
            run.seconds,
            run.states_per_second()
        );
    }
    Ok(baseline.0.states_per_second())
}

/// The models explored exhaustively in a few seconds, with their labels.
fn exhaustive_specs() -> [(&'static str, Spec); 7] {
    [
        (
            "getlock 3 threads x 2 acquisitions",
            spec(ModelName::Lock(Lock::Queue), Fault::None, None, Some(3), Some(2)),
        ),
        (
            "getlock 4 threads x 2 acquisitions",
            spec(ModelName::Lock(Lock::Queue), Fault::None, None, Some(4), Some(2)),
        ),
        (
            "trygetlock 3 threads",
            spec(ModelName::Lock(Lock::QueueTry), Fault::None, None, None, None),
        ),
        (
            "getlock pause (ticks, TTL 2)",
            spec(ModelName::Lock(Lock::Queue), Fault::Pause, None, None, None),
        ),
        (
            "globaltime 3 replicas (ranks)",
            spec(ModelName::Lock(Lock::GlobalTime), Fault::None, None, Some(3), None),
        ),
        (
            "getlock 2 x 2, a clock a tick behind",
            spec(ModelName::Lock(Lock::Queue), Fault::Skew, None, Some(2), Some(2)),
        ),
        (
            "getlock 3 x 1, delayed enqueue",
            spec(
                ModelName::Lock(Lock::Queue),
                Fault::DelayedEnqueue,
                None,
                Some(3),
                Some(1),
            ),
        ),
    ]
}

/// Time each exhaustive run (stateright's BFS, then our graph) and print its rates against the
/// yardstick's; whether one went wrong (an internal error, or not complete).
fn exhaustive_runs(paxos_bfs: f64) -> bool {
    println!();
    println!("exhaustive runs: stateright's BFS on 2 threads (compare with paxos check), then our graph on 1");
    println!(
        "(a check under {SHORTEST_TIMED_SECONDS} s runs again until its runs add up to that, at most {MOST_TIMED_RUNS} runs; seconds are a run's mean)"
    );
    println!(
        "{:<44} {:>12} {:>9} {:>14} {:>8} {:>9} {:>14} {:>5}",
        "model", "unique states", "seconds", "states/second", "x paxos", "graph s", "graph st/s", "runs"
    );
    let mut failed = false;
    for (label, spec) in exhaustive_specs() {
        failed |= exhaustive_run(label, &spec, paxos_bfs);
    }
    failed
}

/// One exhaustive row: the check, run again until its runs can be timed, and its line; whether
/// a run went wrong.
fn exhaustive_run(label: &str, spec: &Spec, paxos_bfs: f64) -> bool {
    let mut failed = false;
    let model = build(spec).expect("valid");
    // A check shorter than the yardstick's timer can tell apart is run again until the
    // runs add up to SHORTEST_TIMED_SECONDS (at most MOST_TIMED_RUNS runs): the rate is
    // the states of all runs over their seconds, and "seconds" is one run's mean.
    let (mut runs, mut stateright_seconds, mut graph_seconds) = (0u32, 0.0, None::<f64>);
    let report = loop {
        let report = model.check(Limits::default());
        failed |= !report.internal_errors.is_empty() || !report.complete;
        let (stateright, graph) = exploration_seconds(&report);
        runs += 1;
        stateright_seconds += stateright;
        graph_seconds = graph.map(|seconds| graph_seconds.unwrap_or(0.0) + seconds);
        if stateright_seconds >= SHORTEST_TIMED_SECONDS || runs >= MOST_TIMED_RUNS || !report.complete {
            break report;
        }
    };
    let rate = f64::from(runs) * report.stateright_states as f64 / stateright_seconds.max(1e-9);
    // A model without liveness obligations (globaltime) has no graph row to time.
    let (graph_seconds, graph_rate) = match graph_seconds {
        Some(seconds) => (
            format!("{:.2}", seconds / f64::from(runs)),
            format!(
                "{:.0}",
                f64::from(runs) * report.graph_states as f64 / seconds.max(1e-9)
            ),
        ),
        None => ("-".to_owned(), "-".to_owned()),
    };
    println!(
        "{label:<44} {:>12} {:>9.2} {rate:>14.0} {:>8.2} {graph_seconds:>9} {graph_rate:>14} {runs:>5}",
        report.stateright_states,
        stateright_seconds / f64::from(runs),
        rate / paxos_bfs
    );
    failed
}

/// The larger worlds, each with its goal in seconds and its state limit.
fn world_specs() -> [(&'static str, Spec, u64, usize); 4] {
    [
        (
            "getlock 3 x 2, a clock a tick behind",
            spec(ModelName::Lock(Lock::Queue), Fault::Skew, None, Some(3), Some(2)),
            WORLD_GOAL_SECONDS,
            WORLD_STATE_LIMIT,
        ),
        (
            "getlock 4 x 2, a clock a tick behind",
            spec(ModelName::Lock(Lock::Queue), Fault::Skew, None, Some(4), Some(2)),
            LARGE_WORLD_GOAL_SECONDS,
            LARGE_WORLD_STATE_LIMIT,
        ),
        (
            "getlock 3 x 2, delayed enqueue",
            spec(
                ModelName::Lock(Lock::Queue),
                Fault::DelayedEnqueue,
                None,
                Some(3),
                Some(2),
            ),
            WORLD_GOAL_SECONDS,
            WORLD_STATE_LIMIT,
        ),
        (
            "getlock 3 x 2, leases (TTL 2 ticks)",
            Spec {
                leases: true,
                ..spec(ModelName::Lock(Lock::Queue), Fault::None, None, Some(3), Some(2))
            },
            WORLD_GOAL_SECONDS,
            WORLD_STATE_LIMIT,
        ),
    ]
}

/// Check each larger world within its goal's time (else bounded) and print whether it met the
/// goal; whether a check hit an internal error.
fn larger_worlds(paxos_bfs: f64) -> bool {
    println!();
    println!(
        "the larger worlds: each exhaustive within its goal ({WORLD_GOAL_SECONDS} s; 4 x 2 {LARGE_WORLD_GOAL_SECONDS} s), the check's time limit (stateright, then our graph), else bounded"
    );
    println!(
        "{:<44} {:>12} {:>9} {:>14} {:>8}   goal",
        "model", "unique states", "seconds", "states/second", "x paxos"
    );
    let mut failed = false;
    for (label, spec, goal_seconds, state_limit) in world_specs() {
        let model = match build(&spec) {
            Ok(model) => model,
            Err(refused) => {
                println!("{label:<44} refused: {}", refused.0);
                continue;
            }
        };
        let limits = Limits {
            max_seconds: goal_seconds,
            max_states: state_limit,
            ..Limits::default()
        };
        let started = Instant::now();
        let report = model.check(limits);
        let seconds = started.elapsed().as_secs_f64();
        failed |= !report.internal_errors.is_empty();
        let (stateright_seconds, _) = exploration_seconds(&report);
        let rate = report.stateright_states as f64 / stateright_seconds.max(1e-9);
        // A bounded run says which limit stopped it (time, states or memory).
        let bounded_by = report.rows.iter().find_map(|row| match &row.verdict {
            Verdict::Bounded(reason) => Some(reason.clone()),
            _ => None,
        });
        let goal = if report.complete && seconds <= goal_seconds as f64 {
            "met".to_owned()
        } else if report.complete {
            "too slow".to_owned()
        } else {
            format!("bounded: {}", bounded_by.as_deref().unwrap_or("a limit"))
        };
        println!(
            "{label:<44} {:>12} {seconds:>9.2} {rate:>14.0} {:>8.2}   {goal}",
            report.stateright_states,
            rate / paxos_bfs
        );
    }
    failed
}

/// Each catalogued failure: its model, the claim it violates, and whether the check stops at
/// the first violation (`Limits::stop_at_first_violation`).
fn catalogue_specs() -> [(&'static str, Spec, &'static str, bool); 7] {
    [
        (
            "M1 + delayed enqueue: T1",
            spec(
                ModelName::Lock(Lock::Queue),
                Fault::DelayedEnqueue,
                Some(Mutant::M1),
                None,
                None,
            ),
            "T1",
            true,
        ),
        (
            "S2 clocks a TTL apart: T1",
            spec(ModelName::Lock(Lock::Queue), Fault::TtlSkew, None, None, None),
            "T1",
            true,
        ),
        (
            "K1 paused holder: T1 (belief)",
            spec(ModelName::Lock(Lock::Queue), Fault::Pause, None, None, None),
            "T1",
            true,
        ),
        (
            "K1 paused holder: T1-resource (no fencing)",
            spec(ModelName::Lock(Lock::Queue), Fault::Pause, None, None, None),
            "T1-resource",
            true,
        ),
        (
            "K3 release without waiting: K3",
            spec(ModelName::Lock(Lock::Queue), Fault::None, Some(Mutant::K3), None, None),
            "K3",
            true,
        ),
        (
            "old algorithm: T2 lasso",
            spec(ModelName::Lock(Lock::Old), Fault::None, None, None, None),
            "T2",
            false,
        ),
        (
            "old algorithm: F-overtakes",
            spec(ModelName::Lock(Lock::Old), Fault::None, None, None, None),
            "F-overtakes",
            true,
        ),
    ]
}

/// Time the check to each catalogued counterexample and print its steps and states; whether
/// one was not found.
fn counterexamples() -> bool {
    println!();
    println!("time to the shortest counterexample of each catalogued failure");
    println!("{:<44} {:>6} {:>12} {:>9}", "failure", "steps", "states", "seconds");
    let mut failed = false;
    for (label, spec, claim, first) in catalogue_specs() {
        let model = build(&spec).expect("valid");
        let limits = Limits {
            stop_at_first_violation: first,
            only_claim: Some(claim.to_owned()),
            ..Limits::default()
        };
        let started = Instant::now();
        let report = model.check(limits);
        let seconds = started.elapsed().as_secs_f64();
        let row = report.row(claim);
        let steps = row.trace.as_ref().map_or(0, |t| t.steps);
        if row.verdict != Verdict::Violated {
            failed = true;
        }
        println!("{label:<44} {steps:>6} {:>12} {seconds:>9.3}", report.graph_states);
    }
    failed
}

#[cfg(all(test, madsim))]
mod tests {
    use super::*;

    #[test]
    fn counts_are_increasing_bounded_checkpoints() {
        assert!(check_counts(&[1000, 10_000, 100_000], 1_000_000).is_ok());
        assert!(check_counts(&[1], 1).is_ok());
        for (counts, says) in [
            (&[][..], "give 1 to 8"),
            (&[0, 10][..], "--counts 0: each count must be from 1"),
            (
                &[10, 2_000_000][..],
                "--counts 2000000: each count must be from 1 to 1000000",
            ),
            (&[100, 100][..], "increasing order"),
            (&[1000, 10][..], "--counts 1000,10: give the counts in increasing order"),
            (&[1, 2, 3, 4, 5, 6, 7, 8, 9][..], "give 1 to 8"),
        ] {
            let message = check_counts(counts, 1_000_000).unwrap_err().to_string();
            assert!(message.contains(says), "{counts:?}: {message}");
        }
    }

    #[test]
    fn peak_rss_is_the_vm_hwm_line_in_kib() {
        let status = "Name:\tcassalock\nVmPeak:\t  123456 kB\nVmHWM:\t    9284 kB\nVmRSS:\t    9000 kB\n";
        assert_eq!(parse_vm_hwm_kib(status), Some(9284));
        assert_eq!(parse_vm_hwm_kib("VmRSS:\t 9000 kB\n"), None);
        assert_eq!(parse_vm_hwm_kib("VmHWM:\t 9000 MB\n"), None);
        assert!(peak_rss_kib().expect("Linux /proc") > 0);
    }
}
