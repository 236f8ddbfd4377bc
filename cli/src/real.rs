//! `cassalock real`: the library's lock code against a running Cassandra cluster or Redis and
//! Memcached servers, with a resource check; and `cassalock bench real`, the benchmark behind
//! `reports/real-backends.md`.
//!
//! Only the real build (no `--cfg madsim`) talks to servers; the simulation build checks the
//! options and prints how to get the real one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use cassalock::algo::family::MAX_MASTERS;
use cassalock_real::{Family, Lock, RealLock, Summary};
use cassalock_report::real_backends;

/// `--connect-timeout-s` by default: the store's own default (checked below in the real build,
/// which has the store; this command's flags exist in both builds).
const CONNECT_TIMEOUT_S: u64 = 15;
#[cfg(not(madsim))]
const _: () = assert!(CONNECT_TIMEOUT_S == cassalock::store::cassandra::DEFAULT_CONNECT_TIMEOUT_S);

/// Run lockers against a real cluster and judge mutual exclusion.
#[derive(Args, Debug, Clone)]
pub struct RealArgs {
    /// Cassandra nodes, host:port, comma-separated.
    #[arg(long, default_value = "127.0.0.1:9042", value_delimiter = ',')]
    pub contact_points: Vec<String>,
    /// Which lock: Cassandra's (old, queue, queue-next-in-line: the queue lock with
    /// --next-poll-ms 5 unless given, queue-paced: the same with --paced-poll, lwt;
    /// --contact-points) or another family's
    /// (redis-set-nx, redisson, redisson-fair, redlock, memcached, zookeeper, etcd; --servers).
    /// Also spelled --lock.
    #[arg(long, visible_alias = "lock", value_parser = crate::lock_names::real_lock(), default_value = "queue")]
    pub algorithm: Lock,
    /// Redis or Memcached servers, host:port, comma-separated: redis-set-nx, redisson and
    /// redisson-fair one server (or a primary and its replicas: the lockers use the master),
    /// redlock every master (1-15), memcached one server. Redisson's waiters wake on the unlock
    /// message (pub/sub), as Redisson's client does; the fair lock's, each on its own channel.
    #[arg(long, value_delimiter = ',')]
    pub servers: Vec<String>,
    /// Lockers contending for the one lock (1-256).
    #[arg(long, default_value_t = 8)]
    pub threads: usize,
    /// Acquisitions per locker (1-100000).
    #[arg(long, default_value_t = 20)]
    pub acquisitions: u32,
    /// Processes the lockers are spread over (1-threads); more than one checks mutual
    /// exclusion across processes, through a shared monitor file.
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// Critical-section length, milliseconds (0-60000).
    #[arg(long, default_value_t = 10)]
    pub hold_ms: u64,
    /// Lease TTL, whole seconds (2-3600).
    #[arg(long, default_value_t = 10)]
    pub ttl_s: u32,
    /// Lease renewal interval, milliseconds (default: half the TTL).
    #[arg(long)]
    pub renew_ms: Option<u64>,
    /// How often a waiter polls, milliseconds (1-60000).
    #[arg(long, default_value_t = 100)]
    pub poll_ms: u64,
    /// Queue lock: the waiter next in line polls this often instead of --poll-ms, milliseconds
    /// (1-60000; default: off, as the thesis's listing).
    #[arg(long)]
    pub next_poll_ms: Option<u64>,
    /// Queue lock, with --next-poll-ms (or --algorithm queue-next-in-line; queue-paced is
    /// this already): every waiter learns its rank (reads up to 32 queue cells) and sleeps
    /// until the queue's pace says it will be next in line; the one next in line halves the
    /// holder's expected time left, down to --next-poll-ms.
    #[arg(long)]
    pub paced_poll: bool,
    /// Each locker reuses its thread ids (the lowest none of its acquisitions in flight
    /// uses), so the main and shadow rows keep a cell per locker instead of a tombstone per
    /// acquisition (the library's default; false: a new id per
    /// acquisition, as the thesis's listings).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub reuse_thread_ids: bool,
    /// Queue lock: GetLock reads the queue from the column of the locker's last hold instead
    /// of the row's start (the library's default; false: from the row's
    /// start, as the listing).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub queue_read_from_last_hold: bool,
    /// Consistency of every lock request: one, quorum or all.
    #[arg(long, default_value = "quorum")]
    pub consistency: String,
    /// Keyspace (created with RF min(3, nodes) when missing).
    #[arg(long, default_value = "cassalock")]
    pub keyspace: String,
    /// Lock id (default: a fresh one per run, so earlier runs' cells do not matter).
    #[arg(long)]
    pub lock_id: Option<String>,
    /// Give up one acquisition after this many seconds (1-3600).
    #[arg(long, default_value_t = 120)]
    pub max_wait_s: u64,
    /// Stop starting acquisitions after this many seconds (0: run every acquisition).
    #[arg(long, default_value_t = 0)]
    pub run_limit_s: u64,
    /// Give up connecting to the cluster and setting up its table after this many seconds
    /// (1-600): a contact point that accepts connections but never answers (a paused node)
    /// fails with exit status 4 instead of hanging.
    #[arg(long, default_value_t = CONNECT_TIMEOUT_S)]
    pub connect_timeout_s: u64,
    /// Let the resource accept stale tokens (shows damage instead of refusals).
    #[arg(long)]
    pub no_fencing: bool,
    /// Print the summary as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print every locker's event as a JSON line as it happens (for tests that act mid-run).
    #[arg(long)]
    pub print_events: bool,
    /// Also write the run's event record into this file (JSON lines, docs/events.md): every
    /// acquisition, the end of every belief, every write the resource saw, every failure, on
    /// the machine's wall clock. `cassalock judge FILE` reads it back and prints its verdicts.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Write every step of every locker's machine to FILE, one JSON line each, as the library
    /// reported it: each request with its listing's step, its reply, each sleep with its
    /// length and kind, and the library's own acquired / releasing / released, stamped with the
    /// wall clock (at_us) and the locker. Where a run's time went: a waiter asleep when its
    /// turn came, a slow reply. The row locks only (old, queue, queue-next-in-line,
    /// queue-paced); at most 2,000,000 lines, the rest counted and said.
    #[arg(long, value_name = "FILE")]
    pub steps: Option<PathBuf>,
    /// Internal: run as worker process N of a multi-process run, with the job in this file.
    #[arg(long, hide = true, requires = "worker_index")]
    pub worker_job: Option<PathBuf>,
    #[arg(long, hide = true)]
    pub worker_index: Option<usize>,
}

/// `bench real`'s default servers: those `cluster/cassalock-cluster` and
/// `cluster/cassalock-servers` start (docs/servers.md, "Names, ports, roles").
pub const DEFAULT_CONTACT_POINT: &str = "127.0.0.1:9042";
pub const DEFAULT_REDIS: &str = "127.0.0.1:16380";
pub const DEFAULT_REDLOCK_MASTERS: [&str; 3] = ["127.0.0.1:16380", "127.0.0.1:16381", "127.0.0.1:16382"];
pub const DEFAULT_MEMCACHED: &str = "127.0.0.1:21211";
pub const DEFAULT_REDIS_REPLICATED: [&str; 2] = ["127.0.0.1:16390", "127.0.0.1:16391"];
pub const DEFAULT_ZOOKEEPER: [&str; 3] = ["127.0.0.1:22181", "127.0.0.1:22182", "127.0.0.1:22183"];
pub const DEFAULT_ETCD: [&str; 3] = ["127.0.0.1:23781", "127.0.0.1:23782", "127.0.0.1:23783"];
/// The most members of a ZooKeeper ensemble or etcd cluster a benchmark names.
const MAX_MEMBERS: usize = 7;

/// `bench real`'s hold when --hold-ms is not given, and the most it takes (a run's
/// acquisitions start within its seconds, so a longer hold would only lengthen the last ones).
const DEFAULT_BENCH_HOLD_MS: u64 = 10;
const MAX_BENCH_HOLD_MS: u64 = 60_000;
/// Seconds of unreported load on Cassandra before the first measured run, at least: the
/// warm-up goes on in stretches of [`WARM_UP_STRETCH_S`] until two in a row make rates within
/// [`WARM_UP_STEADY_WITHIN`] of each other, or [`MAX_WARM_UP_S`] have passed (a cluster just
/// started ran the old lock at 6.7 acquisitions/s for a minute or more, 2026-11-28).
pub const WARM_UP_S: u64 = 15;
#[cfg_attr(madsim, allow(dead_code))]
pub const WARM_UP_STRETCH_S: u64 = 5;
#[cfg_attr(madsim, allow(dead_code))]
pub const MAX_WARM_UP_S: u64 = 60;
const _: () = assert!(MAX_WARM_UP_S >= WARM_UP_S && WARM_UP_S % WARM_UP_STRETCH_S == 0);
/// How close two stretches' rates must be, as a share of the faster, for the warm-up to end.
#[cfg_attr(madsim, allow(dead_code))]
pub const WARM_UP_STEADY_WITHIN: f64 = 0.15;

/// Whether the warm-up's rates so far (acquisitions/s, one per stretch) have settled: the last
/// two within [`WARM_UP_STEADY_WITHIN`] of the faster (two stretches that took nothing have not).
#[cfg_attr(madsim, allow(dead_code))]
pub fn warm_up_settled(rates: &[f64]) -> bool {
    match rates {
        [.., a, b] => {
            let faster = a.max(*b);
            faster > 0.0 && (a - b).abs() <= WARM_UP_STEADY_WITHIN * faster
        }
        _ => false,
    }
}
/// The most locker counts one benchmark compares.
const MAX_LOCKER_COUNTS: usize = 8;
/// The most addresses of the replicated pair (a primary and its replicas).
const MAX_REPLICATED: usize = 16;
/// The longest benchmark `bench real` agrees to start, by its own estimate.
const MAX_BENCH_S: u64 = 24 * 3600;
/// What a run costs beyond its seconds in the estimate: the lockers' last acquisitions after
/// the time is up, the pause between runs.
const RUN_OVERHEAD_S: u64 = 3;
/// What a fault run costs beyond its seconds in the estimate: bringing the backend back (a
/// Cassandra node restarts in about a minute here).
const FAULT_OVERHEAD_S: u64 = 60;

/// The command that starts the servers `lock` runs on.
pub fn start_command(lock: Lock) -> &'static str {
    match lock.family() {
        Family::Cassandra => "cluster/cassalock-cluster start --nodes 3",
        Family::Redis => "cluster/cassalock-servers start redis --instances 3",
        Family::Memcached => "cluster/cassalock-servers start memcached --instances 1",
        Family::ZooKeeper => "cluster/cassalock-servers start zookeeper --nodes 3",
        Family::Etcd => "cluster/cassalock-servers start etcd --nodes 3",
    }
}

/// The command that starts the replicated pair of the Redis failover runs.
pub const START_REPLICATED: &str = "cluster/cassalock-servers start redis-replicated";

/// `cassalock bench real`'s options as given (`None`: not given, the default applies).
#[derive(Clone, Debug, Default)]
pub struct BenchRealFlags {
    pub locks: Option<Vec<Lock>>,
    pub lockers: Option<Vec<usize>>,
    pub seconds: Option<u64>,
    pub hold_ms: Option<u64>,
    pub repeats: Option<usize>,
    pub fault_seconds: Option<u64>,
    pub contact_points: Option<Vec<String>>,
    pub redis: Option<String>,
    pub redlock_masters: Option<Vec<String>>,
    pub memcached: Option<String>,
    pub redis_replicated: Option<Vec<String>>,
    pub zookeeper: Option<Vec<String>>,
    pub etcd: Option<Vec<String>>,
    pub out: Option<PathBuf>,
    pub add_to: Option<PathBuf>,
}

/// A checked `bench real`: which locks run, how long, against which servers.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchPlan {
    pub locks: Vec<Lock>,
    pub lockers: Vec<usize>,
    pub seconds: u64,
    /// Each locker's hold, in every run and fault run.
    pub hold_ms: u64,
    pub repeats: usize,
    /// Seconds of each lock's fault run; 0: none.
    pub fault_seconds: u64,
    pub contact_points: Vec<String>,
    /// The server of redis-set-nx, redisson and redisson-fair.
    pub redis: String,
    pub redlock_masters: Vec<String>,
    pub memcached: String,
    /// The pair redis-set-nx, redisson and redisson-fair fail over in their fault runs.
    pub redis_replicated: Vec<String>,
    /// The ZooKeeper ensemble of the zookeeper lock (its leader killed in the fault run).
    pub zookeeper: Vec<String>,
    /// The etcd cluster of the etcd lock (its leader killed in the fault run).
    pub etcd: Vec<String>,
    pub out: PathBuf,
    /// Measure only `locks` and put their runs into this earlier data file's report, in place
    /// of any runs of the same locks.
    pub add_to: Option<PathBuf>,
}

/// A `host:port` with a host and a port from 1 to 65535.
fn well_formed(address: &str) -> bool {
    address
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.trim().is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0))
}

/// Check a list of addresses given to `flag`: `fewest..=most` of them, each host:port, each once.
fn check_addresses(flag: &str, addresses: &[String], fewest: usize, most: usize, what: &str) -> Result<(), String> {
    if !(fewest..=most).contains(&addresses.len()) {
        return Err(format!(
            "{flag}: {} given; give {what} ({fewest} to {most} host:port, comma-separated)",
            addresses.len()
        ));
    }
    if let Some(bad) = addresses.iter().find(|a| !well_formed(a)) {
        return Err(format!("{flag}: {bad:?} is not host:port (e.g. 127.0.0.1:16380)"));
    }
    if let Some((_, twice)) = addresses.iter().enumerate().find(|(i, a)| addresses[..*i].contains(a)) {
        return Err(format!("{flag}: {twice} is given twice; give each server once"));
    }
    Ok(())
}

/// Check `--contact-points` as `bench real` does (1 to 16 host:port, none twice).
pub fn check_contact_points(contact_points: &[String]) -> Result<(), String> {
    check_addresses("--contact-points", contact_points, 1, 16, "Cassandra nodes")
}

fn joined<T: ToString>(items: &[T]) -> String {
    items.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

impl BenchPlan {
    /// Check the options and fill in the defaults: every refusal names the flag and what to type.
    pub fn new(flags: BenchRealFlags) -> Result<BenchPlan, String> {
        let locks = flags.locks.clone().unwrap_or_else(cassalock_real::real_locks);
        if locks.is_empty() {
            return Err("--locks: name at least one lock (e.g. --locks queue,redlock)".into());
        }
        if let Some((_, twice)) = locks.iter().enumerate().find(|(i, l)| locks[..*i].contains(l)) {
            return Err(format!("--locks: {} is named twice; name each lock once", twice.name()));
        }
        let lockers = flags.lockers.clone().unwrap_or_else(|| vec![1, 4, 16]);
        if lockers.is_empty() || lockers.len() > MAX_LOCKER_COUNTS {
            return Err(format!(
                "--lockers: give 1 to {MAX_LOCKER_COUNTS} counts between 1 and 256, comma-separated (e.g. 1,4,16)"
            ));
        }
        if let Some(bad) = lockers.iter().find(|&&n| !(1..=256).contains(&n)) {
            return Err(format!(
                "--lockers {bad}: give counts between 1 and 256 (e.g. --lockers 1,4,16)"
            ));
        }
        if lockers.windows(2).any(|pair| pair[0] >= pair[1]) {
            return Err(format!(
                "--lockers {}: give the counts in increasing order, each once (e.g. 1,4,16)",
                joined(&lockers)
            ));
        }
        let seconds = flags.seconds.unwrap_or(20);
        if !(1..=3600).contains(&seconds) {
            return Err(format!("--seconds must be between 1 and 3600, not {seconds}"));
        }
        let hold_ms = flags.hold_ms.unwrap_or(DEFAULT_BENCH_HOLD_MS);
        if hold_ms > MAX_BENCH_HOLD_MS {
            return Err(format!(
                "--hold-ms must be between 0 and {MAX_BENCH_HOLD_MS}, not {hold_ms}"
            ));
        }
        let repeats = flags.repeats.unwrap_or(3);
        if !(1..=20).contains(&repeats) {
            return Err(format!("--repeats must be between 1 and 20, not {repeats}"));
        }
        let fault_seconds = flags.fault_seconds.unwrap_or(20);
        if fault_seconds != 0 && !(3..=600).contains(&fault_seconds) {
            return Err(format!(
                "--fault-seconds must be 0 (no fault runs) or between 3 and 600, not {fault_seconds}"
            ));
        }
        let uses = |lock: Lock| locks.contains(&lock);
        let cassandra = locks.iter().any(|l| l.family() == Family::Cassandra);
        let redis_server = uses(Lock::RedisSetNx) || uses(Lock::Redisson) || uses(Lock::RedissonFair);
        // A server flag for a lock that does not run would be silently ignored: refuse it.
        for (flag, given, used, locks_named) in [
            (
                "--contact-points",
                flags.contact_points.is_some(),
                cassandra,
                "old, queue or lwt",
            ),
            (
                "--redis",
                flags.redis.is_some(),
                redis_server,
                "redis-set-nx, redisson or redisson-fair",
            ),
            (
                "--redlock-masters",
                flags.redlock_masters.is_some(),
                uses(Lock::Redlock),
                "redlock",
            ),
            (
                "--memcached",
                flags.memcached.is_some(),
                uses(Lock::Memcached),
                "memcached",
            ),
            (
                "--redis-replicated",
                flags.redis_replicated.is_some(),
                redis_server && fault_seconds > 0,
                "redis-set-nx, redisson or redisson-fair, with fault runs",
            ),
            (
                "--zookeeper",
                flags.zookeeper.is_some(),
                uses(Lock::Zookeeper),
                "zookeeper",
            ),
            ("--etcd", flags.etcd.is_some(), uses(Lock::Etcd), "etcd"),
        ] {
            if given && !used {
                return Err(format!(
                    "{flag} is for {locks_named}, which this benchmark does not run (--locks {}{}); drop {flag} or add such a lock",
                    joined(&locks.iter().map(|l| l.name()).collect::<Vec<_>>()),
                    if fault_seconds == 0 { ", --fault-seconds 0" } else { "" }
                ));
            }
        }
        let contact_points = flags
            .contact_points
            .clone()
            .unwrap_or_else(|| vec![DEFAULT_CONTACT_POINT.to_owned()]);
        check_addresses("--contact-points", &contact_points, 1, 16, "Cassandra nodes")?;
        let redis = flags.redis.clone().unwrap_or_else(|| DEFAULT_REDIS.to_owned());
        check_addresses("--redis", std::slice::from_ref(&redis), 1, 1, "one Redis server")?;
        let redlock_masters = flags
            .redlock_masters
            .clone()
            .unwrap_or_else(|| DEFAULT_REDLOCK_MASTERS.map(str::to_owned).to_vec());
        check_addresses(
            "--redlock-masters",
            &redlock_masters,
            1,
            MAX_MASTERS,
            "Redlock's masters",
        )?;
        let memcached = flags.memcached.clone().unwrap_or_else(|| DEFAULT_MEMCACHED.to_owned());
        check_addresses(
            "--memcached",
            std::slice::from_ref(&memcached),
            1,
            1,
            "one Memcached server",
        )?;
        let redis_replicated = flags
            .redis_replicated
            .clone()
            .unwrap_or_else(|| DEFAULT_REDIS_REPLICATED.map(str::to_owned).to_vec());
        check_addresses(
            "--redis-replicated",
            &redis_replicated,
            2,
            MAX_REPLICATED,
            "the pair's primary and replica",
        )?;
        let zookeeper = flags
            .zookeeper
            .clone()
            .unwrap_or_else(|| DEFAULT_ZOOKEEPER.map(str::to_owned).to_vec());
        check_addresses("--zookeeper", &zookeeper, 1, MAX_MEMBERS, "the ensemble's members")?;
        let etcd = flags
            .etcd
            .clone()
            .unwrap_or_else(|| DEFAULT_ETCD.map(str::to_owned).to_vec());
        check_addresses("--etcd", &etcd, 1, MAX_MEMBERS, "the cluster's members")?;
        let plan = BenchPlan {
            locks,
            lockers,
            seconds,
            hold_ms,
            repeats,
            fault_seconds,
            contact_points,
            redis,
            redlock_masters,
            memcached,
            redis_replicated,
            zookeeper,
            etcd,
            out: flags.out.unwrap_or_else(|| "reports".into()),
            add_to: flags.add_to,
        };
        if let Some(path) = &plan.add_to {
            plan.check_addable(path)?;
        }
        if plan.estimate_s() > MAX_BENCH_S {
            return Err(format!(
                "bench real would take about {} h ({} of {seconds} s, {} of {fault_seconds} s); the limit is {} h: lower --seconds, --repeats, --lockers or --locks",
                plan.estimate_s().div_ceil(3600),
                cassalock_judge::text::count(plan.runs(), "run"),
                cassalock_judge::text::count(plan.fault_runs(), "fault run"),
                MAX_BENCH_S / 3600
            ));
        }
        Ok(plan)
    }

    /// Measured runs: every lock at every locker count, `repeats` times.
    pub fn runs(&self) -> usize {
        self.locks.len() * self.lockers.len() * self.repeats
    }

    /// Fault runs: one per lock, when asked for.
    pub fn fault_runs(&self) -> usize {
        if self.fault_seconds > 0 {
            self.locks.len()
        } else {
            0
        }
    }

    pub fn uses(&self, backend: Family) -> bool {
        self.locks.iter().any(|l| l.family() == backend)
    }

    /// The servers a family lock runs on (its `--servers`); empty for Cassandra's locks.
    pub fn servers(&self, lock: Lock) -> Vec<String> {
        match lock {
            Lock::RedisSetNx | Lock::Redisson | Lock::RedissonFair => vec![self.redis.clone()],
            Lock::Redlock => self.redlock_masters.clone(),
            Lock::Memcached => vec![self.memcached.clone()],
            Lock::Zookeeper => self.zookeeper.clone(),
            Lock::Etcd => self.etcd.clone(),
            Lock::Old
            | Lock::Queue
            | Lock::QueueNextInLine
            | Lock::QueuePaced
            | Lock::QueueTry
            | Lock::GlobalTime
            | Lock::Lwt => Vec::new(),
        }
    }

    /// Seconds the whole benchmark should take, roughly (warm-up, runs, fault runs).
    pub fn estimate_s(&self) -> u64 {
        let warm_up = if self.uses(Family::Cassandra) { WARM_UP_S } else { 0 };
        warm_up
            + self.runs() as u64 * (self.seconds + RUN_OVERHEAD_S)
            + self.fault_runs() as u64 * (self.fault_seconds + FAULT_OVERHEAD_S)
    }

    /// The command line that runs this plan, every option spelled out ("Generated by").
    /// The earlier measurements at `path` were made with this plan's lockers, seconds, repeats
    /// and fault seconds, so that the added runs compare with them.
    fn check_addable(&self, path: &Path) -> Result<(), String> {
        let old = real_backends::read_data(path).map_err(|e| format!("--add-to: {e}"))?;
        let mut lockers: Vec<usize> = old.runs.iter().map(|r| r.lockers).collect();
        lockers.sort_unstable();
        lockers.dedup();
        let setup = &old.setup;
        for (what, earlier, now) in [
            ("--seconds", setup.seconds_per_run.to_string(), self.seconds.to_string()),
            ("--hold-ms", setup.hold_ms.to_string(), self.hold_ms.to_string()),
            ("--repeats", setup.repeats.to_string(), self.repeats.to_string()),
            (
                "--fault-seconds",
                setup.fault_seconds.to_string(),
                self.fault_seconds.to_string(),
            ),
            ("--lockers", joined(&lockers), joined(&self.lockers)),
        ] {
            if earlier != now {
                return Err(format!(
                    "--add-to {}: its runs were measured with {what} {earlier}, this one would use {now}; give {what} {earlier} so that the runs compare",
                    path.display()
                ));
            }
        }
        // The report states one set of long-run settings for the row locks: if this one
        // measures a row lock, every row lock it keeps must have run with the same settings.
        let measures_row_locks = self.locks.iter().any(|v| v.is_row_lock());
        let kept: Vec<&str> = cassalock_real::real_locks()
            .into_iter()
            .filter(|v| v.is_row_lock() && !self.locks.contains(v))
            .filter(|v| old.runs.iter().any(|r| r.variant == v.title()))
            .map(|v| v.name())
            .collect();
        if measures_row_locks && !kept.is_empty() && setup.row_lock_settings != Some(row_lock_settings()) {
            return Err(format!(
                "--add-to {}: its {} runs were measured {}, and this one runs the row locks with the library's defaults; measure every row lock again with it: --locks {}",
                path.display(),
                kept.join(", "),
                real_backends::RowLockSettings::describe(setup.row_lock_settings),
                joined(
                    &cassalock_real::real_locks()
                        .into_iter()
                        .filter(|v| v.is_row_lock() && (self.locks.contains(v) || kept.contains(&v.name())))
                        .chain(self.locks.iter().copied().filter(|v| !v.is_row_lock()))
                        .map(|v| v.name())
                        .collect::<Vec<_>>()
                )
            ));
        }
        Ok(())
    }

    pub fn command(&self) -> String {
        let mut command = format!(
            "cassalock bench real --locks {} --lockers {} --seconds {} --hold-ms {} --repeats {} --fault-seconds {}",
            joined(&self.locks.iter().map(|l| l.name()).collect::<Vec<_>>()),
            joined(&self.lockers),
            self.seconds,
            self.hold_ms,
            self.repeats,
            self.fault_seconds
        );
        if self.uses(Family::Cassandra) {
            command += &format!(" --contact-points {}", self.contact_points.join(","));
        }
        if self.locks.iter().any(|l| l.on_one_redis()) {
            command += &format!(" --redis {}", self.redis);
            if self.fault_seconds > 0 {
                command += &format!(" --redis-replicated {}", self.redis_replicated.join(","));
            }
        }
        if self.locks.contains(&Lock::Redlock) {
            command += &format!(" --redlock-masters {}", self.redlock_masters.join(","));
        }
        if self.locks.contains(&Lock::Memcached) {
            command += &format!(" --memcached {}", self.memcached);
        }
        if self.locks.contains(&Lock::Zookeeper) {
            command += &format!(" --zookeeper {}", self.zookeeper.join(","));
        }
        if self.locks.contains(&Lock::Etcd) {
            command += &format!(" --etcd {}", self.etcd.join(","));
        }
        if let Some(path) = &self.add_to {
            command += &format!(" --add-to {}", path.display());
        }
        command
    }
}

/// The long-run settings `bench real` runs the row locks with: the library's defaults.
fn row_lock_settings() -> real_backends::RowLockSettings {
    let defaults = cassalock::Settings::new("bench");
    real_backends::RowLockSettings {
        reuse_thread_ids: defaults.reuse_thread_ids,
        queue_read_from_last_hold: defaults.queue_read_from_last_hold,
    }
}

fn print_written(out: &Path, files: &[String]) {
    println!(
        "real-backends report: {}",
        files
            .iter()
            .map(|f| out.join(f).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Exit 1, saying where, when two holders overlapped in a run without a fault.
fn violations(runs: &[Summary]) -> ExitCode {
    let broken: Vec<String> = runs
        .iter()
        .filter(|r| !r.t1_belief_holds() || !r.t1_resource_holds())
        .map(|r| format!("{} at {}", r.variant, cassalock_judge::text::count(r.lockers, "locker")))
        .collect();
    if broken.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "error: mutual exclusion VIOLATED without any fault injected: {}",
            broken.join(", ")
        );
        ExitCode::from(1)
    }
}

/// `bench real --from-data FILE`: the report again from an earlier benchmark's measurements
/// (after a change to the report's text or charts), measuring nothing; any build.
pub fn rerender(data: &Path, flags: &BenchRealFlags) -> ExitCode {
    let measuring = [
        ("--locks", flags.locks.is_some()),
        ("--lockers", flags.lockers.is_some()),
        ("--seconds", flags.seconds.is_some()),
        ("--hold-ms", flags.hold_ms.is_some()),
        ("--repeats", flags.repeats.is_some()),
        ("--fault-seconds", flags.fault_seconds.is_some()),
        ("--contact-points", flags.contact_points.is_some()),
        ("--redis", flags.redis.is_some()),
        ("--redlock-masters", flags.redlock_masters.is_some()),
        ("--memcached", flags.memcached.is_some()),
        ("--redis-replicated", flags.redis_replicated.is_some()),
        ("--zookeeper", flags.zookeeper.is_some()),
        ("--etcd", flags.etcd.is_some()),
        ("--add-to", flags.add_to.is_some()),
    ];
    if let Some((flag, _)) = measuring.iter().find(|(_, given)| *given) {
        return crate::usage_error(&format!(
            "--from-data writes the report from the runs in {} and measures nothing: drop {flag}",
            data.display()
        ));
    }
    let out = flags.out.clone().unwrap_or_else(|| "reports".into());
    if let Err(e) = real_backends::read_data(data) {
        return crate::usage_error(&format!("--from-data: {e}"));
    }
    match real_backends::write_again(data, &out) {
        Ok((files, measured)) => {
            print_written(&out, &files);
            violations(&measured.runs)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(madsim)]
pub fn run(_args: RealArgs) -> ExitCode {
    not_the_real_build()
}

/// What the simulation build says when asked to talk to a real cluster.
#[cfg(madsim)]
pub fn not_the_real_build() -> ExitCode {
    eprintln!(
        "error: `cassalock real` talks to real servers (Cassandra, Redis, Memcached), and this is the simulation build (--cfg madsim).\n\
         Build and run the real one (own target directory):\n  \
         RUSTFLAGS=\"\" CARGO_TARGET_DIR=target/real cargo run --release -- real --contact-points 127.0.0.1:9042\n\
         (or `-- bench real` for the benchmark)\n\
         Start a local cluster first: cluster/cassalock-cluster start --nodes 3"
    );
    ExitCode::from(2)
}

/// What the simulation build says to `bench real` (whose options were valid): the same
/// benchmark in the real build, and the servers to start first.
#[cfg(madsim)]
pub fn bench_needs_the_real_build(plan: &BenchPlan) -> ExitCode {
    let mut start: Vec<&str> = plan.locks.iter().map(|&lock| start_command(lock)).collect();
    start.dedup();
    if plan.fault_runs() > 0 && plan.locks.iter().any(|l| l.on_one_redis()) {
        start.push(START_REPLICATED);
    }
    let servers: Vec<String> = plan
        .locks
        .iter()
        .map(|&lock| {
            let servers = plan.servers(lock);
            let servers = if servers.is_empty() {
                &plan.contact_points
            } else {
                &servers
            };
            format!("  {} on {}", lock.name(), servers.join(","))
        })
        .collect();
    eprintln!(
        "error: `cassalock bench real` runs the locks on real servers, and this is the simulation build (--cfg madsim).\n\
         Start the servers:\n  {}\n\
         then run it in the real build (own target directory):\n  \
         RUSTFLAGS=\"\" CARGO_TARGET_DIR=target/real cargo run --release -- {}\n\
         The locks and their servers:\n{}",
        start.join("\n  "),
        plan.command().trim_start_matches("cassalock "),
        servers.join("\n")
    );
    ExitCode::from(2)
}

#[cfg(not(madsim))]
pub use imp::{bench, run};

#[cfg(not(madsim))]
mod imp {
    use std::path::{Path, PathBuf};
    use std::process::ExitCode;
    use std::time::Duration;

    use cassalock_real::runner::{check, execute, execute_recorded, worker, RunSpec};
    use cassalock_real::{Family, Lock, RealLock, Summary};
    use cassalock_report::real_backends::{self, BackendSetup, FaultOutcome, FaultRun, Measured, RedissonWake, Setup};

    use super::{
        start_command, warm_up_settled, BenchPlan, RealArgs, MAX_WARM_UP_S, START_REPLICATED, WARM_UP_S,
        WARM_UP_STEADY_WITHIN, WARM_UP_STRETCH_S,
    };
    use crate::usage_error;

    /// How long the warm-up ran, and whether its rate had settled.
    struct WarmUp {
        seconds: u64,
        settled: bool,
    }

    /// Lockers of each fault run: enough to contend, few enough that one run says what happened.
    const FAULT_LOCKERS: usize = 4;

    fn spec(args: &RealArgs) -> RunSpec {
        RunSpec {
            contact_points: args.contact_points.clone(),
            servers: args.servers.clone(),
            variant: args.algorithm,
            threads: args.threads,
            acquisitions: args.acquisitions,
            processes: args.processes,
            hold_ms: args.hold_ms,
            ttl_s: args.ttl_s,
            renew_ms: args.renew_ms,
            poll_ms: args.poll_ms,
            next_poll_ms: args.next_poll_ms,
            paced_poll: args.paced_poll,
            reuse_thread_ids: args.reuse_thread_ids,
            queue_read_from_last_hold: args.queue_read_from_last_hold,
            consistency: args.consistency.clone(),
            keyspace: args.keyspace.clone(),
            lock_id: args.lock_id.clone(),
            max_wait_s: args.max_wait_s,
            run_limit_s: args.run_limit_s,
            fencing: !args.no_fencing,
            connect_timeout_s: args.connect_timeout_s,
            steps: args.steps.clone(),
        }
    }

    fn print(summary: &Summary) {
        println!(
            "{} x {} lockers in {} process(es): {} acquisitions in {:.1} s",
            summary.variant, summary.lockers, summary.processes, summary.acquisitions, summary.elapsed_s
        );
        println!("  acquisitions/s          {:.2}", summary.acquisitions_per_s);
        println!(
            "  wait p50 / p99 / max    {:.1} / {:.1} / {:.1} ms",
            summary.wait_p50_ms, summary.wait_p99_ms, summary.wait_max_ms
        );
        println!(
            "  store requests/acq      {:.1} ({} requests, {:.0} a second)",
            summary.requests_per_acquisition,
            summary.requests,
            summary.requests as f64 / summary.elapsed_s.max(1e-9)
        );
        if let Some(busy) = summary.cpu_busy_pct {
            // Not a sign of saturation by itself: Cassandra's threads keep the cores busy at
            // a fraction of the rate it can answer (`bench capacity`).
            println!("  machine CPU busy        {busy:.0}% of all cores over the run");
        }
        println!("  Jain, longest run       {:.3}, {}", summary.jain, summary.longest_run);
        if summary.handoffs > 0 {
            println!(
                "  hold / handoff p50      {:.1} / {:.1} ms ({} handoffs from one locker to another)",
                summary.hold_p50_ms, summary.handoff_p50_ms, summary.handoffs
            );
        }
        println!("  errors, lost leases     {}, {}", summary.errors, summary.lost_leases);
        if !summary.tokens.is_empty() {
            println!("  resource tokens         {}", summary.tokens);
        }
        println!(
            "  T1-belief               {}",
            if summary.t1_belief_holds() {
                "no two holders at once".to_string()
            } else {
                format!(
                    "VIOLATED: {}",
                    cassalock_judge::text::count(summary.belief_overlaps, "overlap")
                )
            }
        );
        println!(
            "  T1-resource             {}",
            if summary.t1_resource_holds() {
                if summary.tokens.is_empty() {
                    format!("no stale write accepted ({} refused by fencing)", summary.stale_tokens)
                } else {
                    "no stale write (fencing off)".to_string()
                }
            } else {
                format!(
                    "VIOLATED: {} accepted",
                    cassalock_judge::text::count(summary.stale_accepted, "stale write")
                )
            }
        );
        for example in &summary.examples {
            println!("  - {example}");
        }
    }

    /// Said of the slept-through figure when the steps file filled up: it covers the steps
    /// written, the run's start.
    fn partial(summary: &Summary) -> String {
        if summary.steps_dropped > 0 {
            format!(" (over the first {} steps only)", summary.steps_written)
        } else {
            String::new()
        }
    }

    pub fn run(args: RealArgs) -> ExitCode {
        if let Some(path) = &args.worker_job {
            return match worker(path, args.worker_index.unwrap_or(0)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: worker: {e}");
                    ExitCode::from(BACKEND_UNAVAILABLE)
                }
            };
        }
        let spec = spec(&args);
        if let Err(e) = check(&spec) {
            return usage_error(&e.to_string());
        }
        // The event record's file, made before the run: one that cannot be written is refused
        // before anything runs.
        let events_file = match &args.events {
            Some(path) => match std::fs::File::create(path) {
                Ok(file) => Some((path, file)),
                Err(e) => return usage_error(&format!("--events {}: cannot write it: {e}", path.display())),
            },
            None => None,
        };
        match execute_recorded(&spec, args.print_events) {
            Ok((summary, record)) => {
                if args.json {
                    println!("{}", serde_json::to_string(&summary).expect("summary serializes"));
                } else {
                    print(&summary);
                }
                match (&summary.slept_through, args.json) {
                    (Some(slept), false) if slept.slept_through > 0 => println!(
                        "  next holder asleep      {} of {} handoffs{}: its poll or backoff ended p50 {:.1} / p90 {:.1} / max {:.1} ms after the release began",
                        slept.slept_through,
                        slept.handoffs,
                        partial(&summary),
                        slept.woke_after_p50_ms,
                        slept.woke_after_p90_ms,
                        slept.woke_after_max_ms
                    ),
                    (Some(slept), false) => println!(
                        "  next holder asleep      in none of {} handoffs{}",
                        slept.handoffs,
                        partial(&summary)
                    ),
                    _ => {}
                }
                if let Some(path) = &args.steps {
                    eprintln!(
                        "steps: {} written to {}{}",
                        cassalock_judge::text::count(summary.steps_written as usize, "line"),
                        path.display(),
                        if summary.steps_failed.is_some() {
                            format!(
                                " before writing failed (some may not have reached the file); {} more left out",
                                summary.steps_dropped
                            )
                        } else if summary.steps_dropped > 0 {
                            format!(
                                "; {} more left out: the file holds at most {} (run fewer lockers, acquisitions or seconds)",
                                summary.steps_dropped,
                                cassalock_real::runner::MAX_STEP_LINES
                            )
                        } else {
                            String::new()
                        }
                    );
                }
                let events_failed = events_file.and_then(|(path, file)| {
                    let mut out = std::io::BufWriter::new(file);
                    let written =
                        cassalock_judge::event::write(&mut out, &record.header, &record.events).and_then(|()| {
                            out.into_inner()
                                .map_err(std::io::IntoInnerError::into_error)?
                                .sync_all()
                        });
                    match written {
                        Ok(()) => {
                            eprintln!(
                                "event record: {} written to {}",
                                cassalock_judge::text::count(record.events.len(), "event"),
                                path.display()
                            );
                            None
                        }
                        Err(e) => Some(format!(
                            "--events {}: writing the event record failed: {e}",
                            path.display()
                        )),
                    }
                });
                let failed_files: Vec<&String> = summary.steps_failed.iter().chain(events_failed.iter()).collect();
                if !(summary.t1_belief_holds() && summary.t1_resource_holds()) {
                    // A violation outranks a file that failed: say both, exit 1.
                    for why in failed_files {
                        eprintln!("error: {why}");
                    }
                    ExitCode::from(1)
                } else if let Some(why) = failed_files.first() {
                    // The verdicts above stand; the file is incomplete.
                    usage_error(&format!(
                        "{why} (the run's verdicts above stand; that file is incomplete)"
                    ))
                } else {
                    ExitCode::SUCCESS
                }
            }
            // The file named by --steps: the user's to fix, as any other option.
            Err(e @ cassalock_real::runner::RunError::Steps { .. }) => usage_error(&e.to_string()),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(BACKEND_UNAVAILABLE)
            }
        }
    }

    /// Exit status when the cluster cannot be reached or set up (or a worker process cannot
    /// run): not a verdict, so not 1.
    const BACKEND_UNAVAILABLE: u8 = 4;

    /// `cassalock bench real`: every lock of the plan at each locker count for a fixed time,
    /// in interleaved rounds; then one run of each lock under its backend's fault.
    pub fn bench(plan: BenchPlan) -> ExitCode {
        let total_runs = plan.runs();
        eprintln!(
            "bench real: {} at {} lockers: {} of {} s ({} of each configuration){}, about {} min",
            plan.locks.iter().map(|l| l.name()).collect::<Vec<_>>().join(", "),
            plan.lockers.iter().map(usize::to_string).collect::<Vec<_>>().join(", "),
            cassalock_judge::text::count(total_runs, "run"),
            plan.seconds,
            plan.repeats,
            if plan.fault_runs() > 0 {
                format!(
                    ", then {} of {} s",
                    cassalock_judge::text::count(plan.fault_runs(), "fault run"),
                    plan.fault_seconds
                )
            } else {
                String::new()
            },
            plan.estimate_s().div_ceil(60)
        );
        if let Err(e) = std::fs::create_dir_all(&plan.out) {
            return usage_error(&format!("--out: cannot create {}: {e}", plan.out.display()));
        }
        let template = RunSpec {
            contact_points: plan.contact_points.clone(),
            servers: Vec::new(),
            variant: Lock::Queue,
            threads: 1,
            acquisitions: 100_000,
            processes: 1,
            hold_ms: plan.hold_ms,
            ttl_s: 10,
            renew_ms: None,
            poll_ms: 100,
            next_poll_ms: None,
            paced_poll: false,
            // The library's defaults (its long-run settings are on).
            reuse_thread_ids: super::row_lock_settings().reuse_thread_ids,
            queue_read_from_last_hold: super::row_lock_settings().queue_read_from_last_hold,
            consistency: "quorum".into(),
            keyspace: "cassalock".into(),
            lock_id: None,
            max_wait_s: 120,
            run_limit_s: plan.seconds,
            fencing: true,
            connect_timeout_s: super::CONNECT_TIMEOUT_S,
            steps: None,
        };
        let spec_for = |lock: Lock, threads: usize, run_limit_s: u64| RunSpec {
            variant: lock,
            servers: plan.servers(lock),
            threads,
            run_limit_s,
            ..template.clone()
        };

        // Every server answers before anything is measured: a missing one is said at once, with
        // the command that starts it, not after half an hour of the others.
        let nodes = if plan.uses(Family::Cassandra) {
            eprintln!(
                "bench real: connecting to Cassandra at {}",
                plan.contact_points.join(",")
            );
            match cassandra_nodes(&plan.contact_points) {
                Ok(nodes) => nodes,
                Err(e) => {
                    let cassandra: Vec<Lock> = plan
                        .locks
                        .iter()
                        .copied()
                        .filter(|l| l.family() == Family::Cassandra)
                        .collect();
                    return unreachable(&cassandra, &plan.contact_points, start_command(Lock::Queue), &e);
                }
            }
        } else {
            0
        };
        for &lock in plan.locks.iter().filter(|l| l.is_family()) {
            let probe = RunSpec {
                acquisitions: 1,
                hold_ms: 0,
                run_limit_s: 0,
                ..spec_for(lock, 1, 0)
            };
            if let Err(e) = execute(&probe, false) {
                return unreachable(&[lock], &probe.servers, start_command(lock), &e.to_string());
            }
        }
        let failover_locks: Vec<Lock> = plan.locks.iter().copied().filter(|l| l.on_one_redis()).collect();
        if plan.fault_seconds > 0 && !failover_locks.is_empty() {
            let probe = RunSpec {
                servers: plan.redis_replicated.clone(),
                acquisitions: 1,
                hold_ms: 0,
                run_limit_s: 0,
                ..spec_for(Lock::RedisSetNx, 1, 0)
            };
            if let Err(e) = execute(&probe, false) {
                eprintln!("  (the failover runs need the pair; --fault-seconds 0 runs no fault)");
                return unreachable(
                    &failover_locks,
                    &plan.redis_replicated,
                    START_REPLICATED,
                    &e.to_string(),
                );
            }
        }
        // Which faults this machine can inject, said before the long part.
        let faults: Vec<(Lock, Result<Fault, String>)> = if plan.fault_seconds > 0 {
            let servers = servers_status();
            plan.locks
                .iter()
                .map(|&lock| (lock, Fault::for_lock(lock, &plan, nodes, &servers)))
                .collect()
        } else {
            Vec::new()
        };
        for (lock, fault) in &faults {
            if let Err(why) = fault {
                eprintln!("bench real: {}'s fault run will not run: {why}", lock.title());
            }
        }

        // Warm the cluster up first (JIT, connection pools, the tables): a freshly started
        // cluster ran the first configuration at a third of its later speed. Not reported.
        // At least WARM_UP_S, then until two stretches agree, at most MAX_WARM_UP_S.
        let mut warm_up = None;
        if let Some(&first) = plan.locks.iter().find(|l| l.family() == Family::Cassandra) {
            eprintln!(
                "bench real: warming Cassandra up (not reported): {WARM_UP_S}-{MAX_WARM_UP_S} s, until two {WARM_UP_STRETCH_S} s stretches make rates within {:.0}%",
                100.0 * WARM_UP_STEADY_WITHIN
            );
            let mut rates = Vec::new();
            let mut warmed_s = 0;
            while warmed_s < MAX_WARM_UP_S {
                match execute(&spec_for(first, 1, WARM_UP_STRETCH_S), false) {
                    Ok(summary) => rates.push(summary.acquisitions_per_s),
                    Err(e) => return unreachable(&[first], &plan.contact_points, start_command(first), &e.to_string()),
                }
                warmed_s += WARM_UP_STRETCH_S;
                eprintln!("  warm-up {warmed_s:>2} s: {:.2} acq/s", rates[rates.len() - 1]);
                if warmed_s >= WARM_UP_S && warm_up_settled(&rates) {
                    break;
                }
            }
            let settled = warm_up_settled(&rates);
            if !settled {
                eprintln!(
                    "warning: Cassandra's rate was still changing after {warmed_s} s of warm-up; the first rounds may run slower (the report says so)"
                );
            }
            warm_up = Some(WarmUp {
                seconds: warmed_s,
                settled,
            });
        }
        let mut runs = Vec::new();
        // Interleaved: one run of every configuration, then the next round, so that a slow
        // stretch of the machine spreads over all configurations instead of one.
        for round in 1..=plan.repeats {
            for &lock in &plan.locks {
                for &n in &plan.lockers {
                    let spec = spec_for(lock, n, plan.seconds);
                    eprintln!(
                        "bench real: run {}/{total_runs} (round {round}/{}): {} with {} for {} s",
                        runs.len() + 1,
                        plan.repeats,
                        lock.title(),
                        cassalock_judge::text::count(n, "locker"),
                        plan.seconds
                    );
                    match execute(&spec, false) {
                        Ok(summary) => {
                            eprintln!("  {}", progress(&summary));
                            runs.push(summary);
                        }
                        Err(e) => {
                            let servers = if lock.is_family() {
                                spec.servers.clone()
                            } else {
                                plan.contact_points.clone()
                            };
                            return unreachable(&[lock], &servers, start_command(lock), &e.to_string());
                        }
                    }
                    // Let the last run's lease cells and tombstones age out of the picture: every
                    // run uses a fresh lock id anyway.
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }

        let mut fault_runs = Vec::new();
        // A backend a fault run could not bring back: the later fault runs on it do not run.
        let mut not_restored: Vec<(Family, String)> = Vec::new();
        for (index, (lock, fault)) in faults.into_iter().enumerate() {
            let fault = match fault {
                Ok(fault) => fault,
                Err(why) => {
                    fault_runs.push(FaultRun {
                        lock: lock.title().into(),
                        fault: Fault::planned(lock).into(),
                        outcome: FaultOutcome::NotRun(why),
                    });
                    continue;
                }
            };
            let description = fault.describe(plan.fault_seconds);
            if let Some((_, why)) = not_restored.iter().find(|(b, _)| *b == lock.family()) {
                fault_runs.push(FaultRun {
                    lock: lock.title().into(),
                    fault: description,
                    outcome: FaultOutcome::NotRun(why.clone()),
                });
                continue;
            }
            let mut spec = spec_for(lock, FAULT_LOCKERS, plan.fault_seconds);
            if fault.on_replicated_pair() {
                spec.servers = plan.redis_replicated.clone();
            }
            eprintln!(
                "bench real: fault run {}/{}: {} with {} for {} s; {description}",
                index + 1,
                plan.fault_runs(),
                lock.title(),
                cassalock_judge::text::count(FAULT_LOCKERS, "locker"),
                plan.fault_seconds
            );
            let (outcome, restored) = run_through(&spec, &fault, plan.fault_seconds);
            match &outcome {
                FaultOutcome::Ran(summary) => eprintln!(
                    "  {}; {} overlapping, {} stale writes accepted",
                    progress(summary),
                    summary.belief_overlaps,
                    summary.stale_accepted
                ),
                FaultOutcome::NotRun(why) => eprintln!("  not measured: {why}"),
            }
            if let Err(why) = restored {
                eprintln!("  {why}");
                not_restored.push((lock.family(), why));
            }
            fault_runs.push(FaultRun {
                lock: lock.title().into(),
                fault: description,
                outcome,
            });
        }

        let setup = Setup {
            command: plan.command(),
            machine: format!(
                "{} cores",
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
            ),
            backends: backends(&plan, nodes),
            seconds_per_run: plan.seconds,
            hold_ms: template.hold_ms,
            ttl_s: template.ttl_s,
            poll_ms: template.poll_ms,
            repeats: plan.repeats,
            warm_up_s: warm_up.as_ref().map(|w| w.seconds),
            warm_up_settled: warm_up.map(|w| w.settled),
            redisson_wake: if cassalock_real::REDISSON_WAITERS_NOTIFIED {
                RedissonWake::Notified
            } else {
                RedissonWake::SleepsOutTheTtl
            },
            fault_lockers: FAULT_LOCKERS,
            fault_seconds: plan.fault_seconds,
            row_lock_settings: plan
                .locks
                .iter()
                .any(|l| l.is_row_lock())
                .then_some(super::row_lock_settings()),
        };
        match &plan.add_to {
            None => write_report(&plan.out, &setup, &runs, &fault_runs),
            Some(path) => match real_backends::read_data(path) {
                Ok(old) => {
                    let (setup, runs, fault_runs) = added(old, setup, runs, fault_runs);
                    write_report(&plan.out, &setup, &runs, &fault_runs)
                }
                Err(e) => {
                    eprintln!("error: --add-to: {e} (the runs just measured are not written)");
                    ExitCode::from(1)
                }
            },
        }
    }

    /// `old`'s measurements with the runs of the locks just measured put in place of theirs;
    /// the setup says both commands and every backend used.
    fn added(
        old: Measured,
        new: Setup,
        runs: Vec<Summary>,
        faults: Vec<FaultRun>,
    ) -> (Setup, Vec<Summary>, Vec<FaultRun>) {
        let measured: Vec<String> = runs
            .iter()
            .map(|r| r.variant.clone())
            .chain(faults.iter().map(|f| f.lock.clone()))
            .collect();
        let mut setup = old.setup;
        setup.command = format!("{}; then {}", setup.command, new.command);
        if new.row_lock_settings.is_some() {
            // `check_addable` made sure no row lock kept from `old` ran with other settings.
            setup.row_lock_settings = new.row_lock_settings;
        }
        for backend in new.backends {
            if !setup.backends.iter().any(|b| b.backend == backend.backend) {
                setup.backends.push(backend);
            }
        }
        let mut all_runs: Vec<Summary> = old
            .runs
            .into_iter()
            .filter(|r| !measured.contains(&r.variant))
            .collect();
        all_runs.extend(runs);
        let mut all_faults: Vec<FaultRun> = old.faults.into_iter().filter(|f| !measured.contains(&f.lock)).collect();
        all_faults.extend(faults);
        // Each lock where the reports list it (stable: a lock's runs keep their order).
        let place = |name: &str| {
            cassalock_real::real_locks()
                .iter()
                .position(|v| v.title() == name)
                .unwrap_or(usize::MAX)
        };
        all_runs.sort_by_key(|r| place(&r.variant));
        all_faults.sort_by_key(|f| place(&f.lock));
        (setup, all_runs, all_faults)
    }

    /// Write `reports/real-backends.md` (charts, data) into `out` and say where; exit 1 when two
    /// holders overlapped in a run without a fault (under a fault that is a finding, reported).
    fn write_report(out: &Path, setup: &Setup, runs: &[Summary], faults: &[FaultRun]) -> ExitCode {
        match cassalock_report::real_backends::write(out, setup, runs, faults) {
            Ok(files) => super::print_written(out, &files),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        }
        super::violations(runs)
    }

    /// One line of figures for the progress output.
    fn progress(summary: &Summary) -> String {
        format!(
            "{:.2} acq/s, wait p50 {:.1} ms p99 {:.1} ms, {:.1} requests/acq, {} errors",
            summary.acquisitions_per_s,
            summary.wait_p50_ms,
            summary.wait_p99_ms,
            summary.requests_per_acquisition,
            summary.errors
        )
    }

    /// A backend that does not answer: what, where, and the command that starts it; exit 4.
    fn unreachable(locks: &[Lock], servers: &[String], start: &str, error: &str) -> ExitCode {
        let fresh = if locks.iter().any(|l| l.is_family()) {
            "on a fresh machine `cluster/cassalock-servers install all` first; "
        } else {
            ""
        };
        eprintln!(
            "error: {} cannot run: {error}\n  nothing usable answers at {}; start it with:\n    {start}\n  ({fresh}--locks leaves locks out)",
            locks.iter().map(|l| l.name()).collect::<Vec<_>>().join(", "),
            servers.join(",")
        );
        ExitCode::from(BACKEND_UNAVAILABLE)
    }

    /// The Cassandra cluster's node count, or why it cannot be reached.
    fn cassandra_nodes(contact_points: &[String]) -> Result<usize, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        runtime.block_on(async {
            let config = cassalock::store::cassandra::CassandraConfig {
                contact_points: contact_points.to_vec(),
                ..Default::default()
            };
            cassalock::store::cassandra::CassandraStore::connect(&config)
                .await
                .map(|store| store.nodes())
                .map_err(|e| e.to_string())
        })
    }

    /// The backends of the plan, for the report's header.
    fn backends(plan: &BenchPlan, nodes: usize) -> Vec<BackendSetup> {
        let mut backends = Vec::new();
        if plan.uses(Family::Cassandra) {
            backends.push(BackendSetup {
                backend: Family::Cassandra,
                software: format!(
                    "Apache Cassandra {} from jars Maven resolves, one JVM per node on 127.0.0.x",
                    cassandra_version()
                ),
                servers: format!(
                    "{} (contact point {}), consistency QUORUM",
                    cassalock_judge::text::count(nodes, "node"),
                    plan.contact_points.join(",")
                ),
                start: format!("`{}`", start_command(Lock::Queue)),
            });
        }
        if plan.uses(Family::Redis) {
            let mut servers = Vec::new();
            let mut start = vec![format!("`{}`", start_command(Lock::Redlock))];
            let single = plan.locks.iter().any(|l| l.on_one_redis());
            if single {
                servers.push(format!("SET NX and Redisson's locks: {}", plan.redis));
            }
            if plan.locks.contains(&Lock::Redlock) {
                servers.push(format!(
                    "Redlock: {} masters, {}",
                    plan.redlock_masters.len(),
                    plan.redlock_masters.join(", ")
                ));
            }
            if single && plan.fault_seconds > 0 {
                servers.push(format!(
                    "fault runs of SET NX and Redisson's locks: the pair {}",
                    plan.redis_replicated.join(", ")
                ));
                start.push(format!("`{START_REPLICATED}`"));
            }
            let address = if single { &plan.redis } else { &plan.redlock_masters[0] };
            backends.push(BackendSetup {
                backend: Family::Redis,
                software: format!(
                    "redis-server {}, no persistence",
                    server_version(address, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n", "redis_version:")
                ),
                servers: servers.join("; "),
                start: start.join(", "),
            });
        }
        if plan.uses(Family::Memcached) {
            backends.push(BackendSetup {
                backend: Family::Memcached,
                software: format!(
                    "memcached {}",
                    server_version(&plan.memcached, "version\r\n", "VERSION ")
                ),
                servers: plan.memcached.clone(),
                start: format!("`{}`", start_command(Lock::Memcached)),
            });
        }
        if plan.uses(Family::ZooKeeper) {
            let version = server_version(&plan.zookeeper[0], "srvr", "Zookeeper version: ");
            backends.push(BackendSetup {
                backend: Family::ZooKeeper,
                software: format!(
                    "ZooKeeper {} (Debian's package), Curator's lock layout run by our machine over the zookeeper-client crate",
                    version.split(['-', ',']).next().unwrap_or(&version)
                ),
                servers: format!("{} members, {}", plan.zookeeper.len(), plan.zookeeper.join(", ")),
                start: format!("`{}`", start_command(Lock::Zookeeper)),
            });
        }
        if plan.uses(Family::Etcd) {
            let version = server_version(&plan.etcd[0], "GET /version HTTP/1.0\r\n\r\n", "\"etcdserver\":\"");
            backends.push(BackendSetup {
                backend: Family::Etcd,
                software: format!(
                    "etcd {} (Debian's etcd-server), the mutex run by our machine over the etcd-client crate",
                    version.split('"').next().unwrap_or(&version)
                ),
                servers: format!("{} members, {}", plan.etcd.len(), plan.etcd.join(", ")),
                start: format!("`{}`", start_command(Lock::Etcd)),
            });
        }
        backends
    }

    /// A server's version, asked over its own protocol: the rest of the line after `prefix` in
    /// its answer to `request` ("unknown" when it does not say).
    fn server_version(address: &str, request: &str, prefix: &str) -> String {
        use std::io::{Read, Write};
        let ask = || -> std::io::Result<String> {
            let address = std::net::ToSocketAddrs::to_socket_addrs(address)?
                .next()
                .ok_or_else(|| std::io::Error::other("no address"))?;
            let mut stream = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
            stream.set_read_timeout(Some(Duration::from_secs(2)))?;
            stream.write_all(request.as_bytes())?;
            let mut answer = vec![0; 8192];
            let read = stream.read(&mut answer)?;
            Ok(String::from_utf8_lossy(&answer[..read]).into_owned())
        };
        ask()
            .ok()
            .and_then(|answer| {
                let start = answer.find(prefix)? + prefix.len();
                let line = answer[start..].lines().next()?.trim().to_owned();
                (!line.is_empty()).then_some(line)
            })
            .unwrap_or_else(|| "(version unknown)".into())
    }

    /// One row of `cluster/cassalock-servers status --json`: an instance the script manages.
    #[derive(Clone, Debug, serde::Deserialize)]
    struct ServerInstance {
        name: String,
        kind: String,
        set: String,
        port: u16,
        /// leader or follower for an ensemble's member, primary or replica for Redis.
        #[serde(default)]
        role: String,
    }

    fn script(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../cluster").join(name)
    }

    /// Run one of the cluster scripts: its output, or what went wrong.
    fn run_script(name: &str, args: &[&str]) -> Result<String, String> {
        let output = std::process::Command::new(script(name))
            .args(args)
            .output()
            .map_err(|e| format!("cannot run cluster/{name}: {e}"))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if output.status.success() {
            Ok(text)
        } else {
            Err(format!(
                "`cluster/{name} {}` failed ({}): {}",
                args.join(" "),
                output.status,
                text.trim()
            ))
        }
    }

    /// The instances `cluster/cassalock-servers` manages (it exits 3 when one is down, still
    /// listing them all), or why they cannot be listed.
    fn servers_status() -> Result<Vec<ServerInstance>, String> {
        let output = std::process::Command::new(script("cassalock-servers"))
            .args(["status", "--json"])
            .output()
            .map_err(|e| format!("cannot run cluster/cassalock-servers: {e}"))?;
        serde_json::from_slice(&output.stdout)
            .map_err(|e| format!("`cluster/cassalock-servers status --json` printed no instance list ({e})"))
    }

    /// The managed instance listening on `address` (127.0.0.1 only: the script binds nothing
    /// else), of `kind` and in a set whose name starts with `set`.
    fn instance_at<'a>(
        servers: &'a [ServerInstance],
        address: &str,
        kind: &str,
        set: &str,
    ) -> Result<&'a ServerInstance, String> {
        let port = address
            .rsplit_once(':')
            .filter(|(host, _)| matches!(*host, "127.0.0.1" | "localhost"))
            .and_then(|(_, port)| port.parse::<u16>().ok());
        port.and_then(|port| {
            servers
                .iter()
                .find(|s| s.port == port && s.kind == kind && s.set == set)
        })
        .ok_or_else(|| {
            format!("{address} is not a {kind} instance of cluster/cassalock-servers (its `status --json` lists none in set {set} there), so nothing here can inject its fault")
        })
    }

    /// A backend's natural fault, as this benchmark injects it mid-run.
    #[derive(Clone, Debug)]
    enum Fault {
        /// SIGKILL a Cassandra node (`cassalock-cluster kill N`), restart it after the run.
        NodeKilled { node: usize, nodes: usize },
        /// `cassalock-servers failover`: the pair's primary killed, the replica promoted; the old
        /// primary restarted as its replica after the run.
        Failover,
        /// SIGSTOP one Redlock master for a third of the run, then SIGCONT.
        MasterPaused {
            name: String,
            master: usize,
            masters: usize,
        },
        /// SIGKILL memcached and start it again at once (empty: it keeps nothing).
        ServerRestarted { name: String },
        /// SIGKILL the ZooKeeper ensemble's or etcd cluster's leader (as `status` finds it just
        /// before); restarted after the run.
        LeaderKilled { name: String, members: usize },
    }

    impl Fault {
        /// The fault a lock gets, in a few words (for a fault that cannot run here).
        fn planned(lock: Lock) -> &'static str {
            match lock.family() {
                Family::Cassandra => "one of 3 nodes killed (SIGKILL)",
                Family::Redis if lock == Lock::Redlock => "one master paused (SIGSTOP)",
                Family::Redis => "primary killed, replica promoted (failover)",
                Family::Memcached => "server killed and restarted",
                Family::ZooKeeper | Family::Etcd => "the leader killed (SIGKILL)",
            }
        }

        /// The fault for `lock`, or why this machine cannot inject it.
        fn for_lock(
            lock: Lock,
            plan: &BenchPlan,
            nodes: usize,
            servers: &Result<Vec<ServerInstance>, String>,
        ) -> Result<Fault, String> {
            if lock.family() == Family::Cassandra {
                return if nodes >= 3 {
                    Ok(Fault::NodeKilled { node: nodes, nodes })
                } else {
                    Err(format!(
                        "a {nodes}-node cluster: QUORUM does not survive a node down (cluster/cassalock-cluster start --nodes 3)"
                    ))
                };
            }
            let servers = servers.as_ref().map_err(Clone::clone)?;
            match lock {
                Lock::Redlock => {
                    let master = plan.redlock_masters.len().min(2);
                    let name = instance_at(servers, &plan.redlock_masters[master - 1], "redis", "redis")?
                        .name
                        .clone();
                    Ok(Fault::MasterPaused {
                        name,
                        master,
                        masters: plan.redlock_masters.len(),
                    })
                }
                Lock::Memcached => Ok(Fault::ServerRestarted {
                    name: instance_at(servers, &plan.memcached, "memcached", "memcached")?
                        .name
                        .clone(),
                }),
                Lock::Zookeeper | Lock::Etcd => {
                    let (members, kind) = if lock == Lock::Zookeeper {
                        (&plan.zookeeper, "zookeeper")
                    } else {
                        (&plan.etcd, "etcd")
                    };
                    if members.len() < 3 {
                        return Err(format!(
                            "{} member(s): a majority does not survive its leader killed (cluster/cassalock-servers start {kind} --nodes 3)",
                            members.len()
                        ));
                    }
                    let mut leader = None;
                    for address in members {
                        let instance = instance_at(servers, address, kind, kind)?;
                        if instance.role == "leader" {
                            leader = Some(instance.name.clone());
                        }
                    }
                    let name = leader.ok_or_else(|| {
                        format!(
                            "no member of {} is the {kind} leader now (`cluster/cassalock-servers status`)",
                            members.join(",")
                        )
                    })?;
                    Ok(Fault::LeaderKilled {
                        name,
                        members: members.len(),
                    })
                }
                _ => {
                    for address in &plan.redis_replicated {
                        instance_at(servers, address, "redis", "redis-replicated")?;
                    }
                    Ok(Fault::Failover)
                }
            }
        }

        fn on_replicated_pair(&self) -> bool {
            matches!(self, Fault::Failover)
        }

        /// When, after the run starts, the fault is injected; a pause lasts as long again.
        fn at(run_s: u64) -> Duration {
            Duration::from_secs_f64(run_s as f64 / 3.0)
        }

        fn describe(&self, run_s: u64) -> String {
            let at = format!("{:.1} s", Fault::at(run_s).as_secs_f64());
            match self {
                Fault::NodeKilled { node, nodes } => {
                    format!("node {node} of {nodes} killed (SIGKILL) {at} in, restarted after the run")
                }
                Fault::Failover => format!("primary killed (SIGKILL) and replica promoted (`failover`) {at} in"),
                Fault::MasterPaused { name, master, masters } => {
                    format!("master {master} of {masters} ({name}) paused (SIGSTOP) {at} in, resumed {at} later")
                }
                Fault::ServerRestarted { name } => {
                    format!("{name} killed (SIGKILL) and restarted, empty, {at} in")
                }
                Fault::LeaderKilled { name, members } => {
                    format!(
                        "the leader ({name}, of {members} members) killed (SIGKILL) {at} in, restarted after the run"
                    )
                }
            }
        }

        /// Inject the fault (a pause: and end it).
        fn inject(&self, run_s: u64) -> Result<(), String> {
            match self {
                Fault::NodeKilled { node, .. } => {
                    run_script("cassalock-cluster", &["kill", &node.to_string()]).map(drop)
                }
                Fault::Failover => run_script("cassalock-servers", &["failover"]).map(drop),
                Fault::MasterPaused { name, .. } => {
                    run_script("cassalock-servers", &["pause", name])?;
                    std::thread::sleep(Fault::at(run_s));
                    run_script("cassalock-servers", &["resume", name]).map(drop)
                }
                Fault::ServerRestarted { name } => {
                    run_script("cassalock-servers", &["kill", name])?;
                    run_script("cassalock-servers", &["restart", name]).map(drop)
                }
                Fault::LeaderKilled { name, .. } => run_script("cassalock-servers", &["kill", name]).map(drop),
            }
        }

        /// Bring the backend back as it was before the run, for the runs after it.
        fn restore(&self) -> Result<(), String> {
            match self {
                Fault::NodeKilled { node, .. } => {
                    run_script("cassalock-cluster", &["restart", &node.to_string()]).map(drop)
                }
                // The old primary, recorded as the new one's replica, comes back as that.
                Fault::Failover => run_script("cassalock-servers", &["restart", "replica"]).map(drop),
                // Resumed already, unless `inject` failed between its pause and its resume: a
                // SIGCONT to a running process changes nothing.
                Fault::MasterPaused { name, .. } => run_script("cassalock-servers", &["resume", name]).map(drop),
                Fault::ServerRestarted { .. } => Ok(()),
                Fault::LeaderKilled { name, .. } => run_script("cassalock-servers", &["restart", name]).map(drop),
            }
        }
    }

    /// One run with `fault` injected a third of the way in; its outcome, and whether the
    /// backend was brought back afterwards.
    fn run_through(spec: &RunSpec, fault: &Fault, run_s: u64) -> (FaultOutcome, Result<(), String>) {
        let running = {
            let spec = spec.clone();
            std::thread::spawn(move || execute(&spec, false).map_err(|e| e.to_string()))
        };
        std::thread::sleep(Fault::at(run_s));
        let injected = fault.inject(run_s);
        let result = running
            .join()
            .unwrap_or_else(|_| Err("the run's thread panicked".into()));
        let restored = fault
            .restore()
            .map_err(|e| format!("the backend was not brought back after the fault: {e}"));
        let outcome = match (injected, result) {
            (Err(e), _) => FaultOutcome::NotRun(format!("the fault could not be injected: {e}")),
            (Ok(()), Err(e)) => FaultOutcome::NotRun(format!("the run failed: {e}")),
            (Ok(()), Ok(summary)) => FaultOutcome::Ran(Box::new(summary)),
        };
        (outcome, restored)
    }

    /// The Cassandra version the cluster script resolves (from its pom), for the report.
    fn cassandra_version() -> String {
        let pom = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cluster/pom.xml");
        std::fs::read_to_string(pom)
            .ok()
            .and_then(|text| {
                let start = text.find("<cassandra.version>")? + "<cassandra.version>".len();
                let end = text[start..].find('<')? + start;
                Some(text[start..end].to_string())
            })
            .unwrap_or_else(|| "5.0.x".into())
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    /// The warm-up ends when its last two stretches agree within 15% of the faster, never on
    /// one stretch, never on two that took nothing.
    #[test]
    fn the_warm_up_has_settled_when_two_stretches_in_a_row_agree() {
        assert!(!warm_up_settled(&[]));
        assert!(!warm_up_settled(&[50.0]));
        // A cluster just started: 6.7, then 30, then 48, then 50 (within 4%).
        assert!(!warm_up_settled(&[6.7, 30.0]));
        assert!(!warm_up_settled(&[6.7, 30.0, 48.0]), "30 against 48 is 37% apart");
        assert!(warm_up_settled(&[6.7, 30.0, 48.0, 50.0]));
        // 15% of the faster is the edge: 85 against 100 settles, 84 does not, either order.
        assert!(warm_up_settled(&[100.0, 85.0]));
        assert!(warm_up_settled(&[85.0, 100.0]));
        assert!(!warm_up_settled(&[84.0, 100.0]));
        assert!(!warm_up_settled(&[0.0, 0.0]));
    }

    fn plan(flags: BenchRealFlags) -> Result<BenchPlan, String> {
        BenchPlan::new(flags)
    }

    #[test]
    fn the_default_plan_runs_every_lock_against_the_scripts_ports() {
        let plan = plan(BenchRealFlags::default()).expect("defaults are valid");
        // Every lock.
        assert_eq!(plan.locks, cassalock_real::real_locks());
        assert_eq!(plan.locks.len(), 12);
        assert_eq!(plan.lockers, vec![1, 4, 16]);
        assert_eq!((plan.seconds, plan.repeats, plan.fault_seconds), (20, 3, 20));
        assert_eq!(plan.runs(), 108);
        assert_eq!(plan.fault_runs(), 12);
        assert_eq!(plan.servers(Lock::Zookeeper).len(), 3);
        assert_eq!(plan.servers(Lock::Etcd)[0], "127.0.0.1:23781");
        assert_eq!(plan.servers(Lock::Redisson), vec!["127.0.0.1:16380".to_string()]);
        assert_eq!(plan.servers(Lock::Redlock).len(), 3);
        assert_eq!(plan.servers(Lock::Memcached), vec!["127.0.0.1:21211".to_string()]);
        assert!(plan.servers(Lock::Queue).is_empty());
        assert_eq!(
            plan.command(),
            "cassalock bench real --locks old,queue,queue-next-in-line,queue-paced,lwt,redis-set-nx,redisson,redisson-fair,redlock,memcached,zookeeper,etcd --lockers 1,4,16 --seconds 20 --hold-ms 10 --repeats 3 --fault-seconds 20 --contact-points 127.0.0.1:9042 --redis 127.0.0.1:16380 --redis-replicated 127.0.0.1:16390,127.0.0.1:16391 --redlock-masters 127.0.0.1:16380,127.0.0.1:16381,127.0.0.1:16382 --memcached 127.0.0.1:21211 --zookeeper 127.0.0.1:22181,127.0.0.1:22182,127.0.0.1:22183 --etcd 127.0.0.1:23781,127.0.0.1:23782,127.0.0.1:23783"
        );
        // Warm-up, 108 runs of 20 + 3 s, 12 fault runs of 20 + 60 s.
        assert_eq!(plan.estimate_s(), 15 + 108 * 23 + 12 * 80);
    }

    #[test]
    fn add_to_needs_the_earlier_runs_settings_and_a_readable_data_file() {
        let data = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../reports/real-backends.json"));
        let flags = |lockers: Vec<usize>, path: PathBuf| BenchRealFlags {
            locks: Some(vec![Lock::RedissonFair]),
            lockers: Some(lockers),
            seconds: Some(15),
            repeats: Some(3),
            fault_seconds: Some(20),
            add_to: Some(path),
            ..BenchRealFlags::default()
        };
        // The committed data, with the row locks' long-run settings as given.
        let dir = std::env::temp_dir().join(format!("cassalock-add-to-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let with_settings = |settings: Option<real_backends::RowLockSettings>, name: &str| {
            let mut measured = real_backends::read_data(&data).expect("the committed data");
            measured.setup.row_lock_settings = settings;
            let path = dir.join(name);
            std::fs::write(&path, serde_json::to_string(&measured).expect("serializable")).expect("written");
            path
        };
        let current = with_settings(Some(row_lock_settings()), "current.json");
        let plan = BenchPlan::new(flags(vec![1, 4, 16], current.clone())).expect("the committed report's settings");
        assert!(plan.command().ends_with(&format!("--add-to {}", current.display())));
        let refused = BenchPlan::new(flags(vec![1, 4], current.clone())).unwrap_err();
        assert!(refused.contains("--lockers 1,4,16"), "{refused}");
        // Runs with another hold do not compare with the earlier ones (the report states one).
        let other_hold = BenchRealFlags {
            hold_ms: Some(0),
            ..flags(vec![1, 4, 16], current.clone())
        };
        let refused = BenchPlan::new(other_hold).unwrap_err();
        assert!(refused.contains("--hold-ms 10, this one would use 0"), "{refused}");
        let missing = BenchPlan::new(flags(vec![1, 4, 16], PathBuf::from("/nonexistent/data.json"))).unwrap_err();
        assert!(missing.starts_with("--add-to: "), "{missing}");
        // A row lock measured beside row locks kept from data measured with other settings:
        // the report could not state one set of settings, so they must all be measured again.
        // Other locks may still be added to such data (the settings do not touch them).
        let older = with_settings(None, "older.json");
        BenchPlan::new(flags(vec![1, 4, 16], older.clone())).expect("redisson-fair is no row lock");
        let one_row_lock = BenchRealFlags {
            locks: Some(vec![Lock::Queue, Lock::RedissonFair]),
            ..flags(vec![1, 4, 16], older.clone())
        };
        let refused = BenchPlan::new(one_row_lock).unwrap_err();
        assert!(refused.contains("measure every row lock again"), "{refused}");
        assert!(refused.contains("--locks old,queue"), "{refused}");
        assert!(refused.ends_with(",redisson-fair"), "{refused}");
        let all_row_locks = BenchRealFlags {
            locks: Some(vec![Lock::Old, Lock::Queue, Lock::QueueNextInLine, Lock::QueuePaced]),
            ..flags(vec![1, 4, 16], older)
        };
        BenchPlan::new(all_row_locks).expect("every row lock measured again");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_command_names_only_the_servers_of_the_locks_that_run() {
        let plan = plan(BenchRealFlags {
            locks: Some(vec![Lock::Redlock, Lock::Memcached]),
            fault_seconds: Some(0),
            ..BenchRealFlags::default()
        })
        .expect("valid");
        assert!(!plan.uses(Family::Cassandra));
        assert_eq!(
            plan.command(),
            "cassalock bench real --locks redlock,memcached --lockers 1,4,16 --seconds 20 --hold-ms 10 --repeats 3 --fault-seconds 0 --redlock-masters 127.0.0.1:16380,127.0.0.1:16381,127.0.0.1:16382 --memcached 127.0.0.1:21211"
        );
        assert_eq!(
            plan.estimate_s(),
            18 * 23,
            "no warm-up without Cassandra, no fault runs"
        );
    }

    #[test]
    fn bad_options_are_refused_naming_the_flag_and_what_to_type() {
        let flags = BenchRealFlags::default;
        for (bad, says) in [
            (
                BenchRealFlags {
                    locks: Some(vec![]),
                    ..flags()
                },
                "--locks: name at least one lock",
            ),
            (
                BenchRealFlags {
                    locks: Some(vec![Lock::Queue, Lock::Redlock, Lock::Queue]),
                    ..flags()
                },
                "--locks: queue is named twice",
            ),
            (
                BenchRealFlags {
                    lockers: Some(vec![0]),
                    ..flags()
                },
                "--lockers 0: give counts between 1 and 256",
            ),
            (
                BenchRealFlags {
                    lockers: Some(vec![1, 100_000]),
                    ..flags()
                },
                "--lockers 100000: give counts between 1 and 256",
            ),
            (
                BenchRealFlags {
                    lockers: Some(vec![]),
                    ..flags()
                },
                "--lockers: give 1 to 8 counts",
            ),
            (
                BenchRealFlags {
                    lockers: Some(vec![4, 4]),
                    ..flags()
                },
                "--lockers 4,4: give the counts in increasing order",
            ),
            (
                BenchRealFlags {
                    seconds: Some(0),
                    ..flags()
                },
                "--seconds must be between 1 and 3600, not 0",
            ),
            (
                BenchRealFlags {
                    seconds: Some(u64::MAX),
                    ..flags()
                },
                "--seconds must be between 1 and 3600",
            ),
            (
                BenchRealFlags {
                    hold_ms: Some(60_001),
                    ..flags()
                },
                "--hold-ms must be between 0 and 60000, not 60001",
            ),
            (
                BenchRealFlags {
                    hold_ms: Some(u64::MAX),
                    ..flags()
                },
                "--hold-ms must be between 0 and 60000",
            ),
            (
                BenchRealFlags {
                    repeats: Some(0),
                    ..flags()
                },
                "--repeats must be between 1 and 20, not 0",
            ),
            (
                BenchRealFlags {
                    fault_seconds: Some(2),
                    ..flags()
                },
                "--fault-seconds must be 0 (no fault runs) or between 3 and 600, not 2",
            ),
            (
                BenchRealFlags {
                    redis: Some("nohost".into()),
                    ..flags()
                },
                "--redis: \"nohost\" is not host:port",
            ),
            (
                BenchRealFlags {
                    memcached: Some("127.0.0.1:0".into()),
                    ..flags()
                },
                "--memcached: \"127.0.0.1:0\" is not host:port",
            ),
            (
                BenchRealFlags {
                    redlock_masters: Some(vec!["127.0.0.1:1".into(); 16]),
                    ..flags()
                },
                "--redlock-masters: 16 given; give Redlock's masters (1 to 15",
            ),
            (
                BenchRealFlags {
                    redlock_masters: Some(vec!["127.0.0.1:1".into(), "127.0.0.1:1".into()]),
                    ..flags()
                },
                "--redlock-masters: 127.0.0.1:1 is given twice",
            ),
            (
                BenchRealFlags {
                    redis_replicated: Some(vec!["127.0.0.1:16390".into()]),
                    ..flags()
                },
                "--redis-replicated: 1 given; give the pair's primary and replica (2 to 16",
            ),
            (
                BenchRealFlags {
                    contact_points: Some(vec![" ".into()]),
                    ..flags()
                },
                "--contact-points: \" \" is not host:port",
            ),
            // A server flag for a lock that does not run would be ignored: refused.
            (
                BenchRealFlags {
                    locks: Some(vec![Lock::Queue]),
                    memcached: Some("127.0.0.1:21211".into()),
                    ..flags()
                },
                "--memcached is for memcached, which this benchmark does not run (--locks queue)",
            ),
            (
                BenchRealFlags {
                    locks: Some(vec![Lock::Redlock]),
                    contact_points: Some(vec!["127.0.0.1:9042".into()]),
                    ..flags()
                },
                "--contact-points is for old, queue or lwt",
            ),
            (
                BenchRealFlags {
                    fault_seconds: Some(0),
                    redis_replicated: Some(vec!["127.0.0.1:1".into(), "127.0.0.1:2".into()]),
                    ..flags()
                },
                "--redis-replicated is for redis-set-nx, redisson or redisson-fair, with fault runs, which this benchmark does not run (--locks old,queue,queue-next-in-line,queue-paced,lwt,redis-set-nx,redisson,redisson-fair,redlock,memcached,zookeeper,etcd, --fault-seconds 0)",
            ),
            (
                BenchRealFlags {
                    locks: Some(vec![Lock::Queue]),
                    etcd: Some(vec!["127.0.0.1:23781".into()]),
                    ..flags()
                },
                "--etcd is for etcd, which this benchmark does not run (--locks queue)",
            ),
            (
                BenchRealFlags {
                    zookeeper: Some(vec!["127.0.0.1:1".into(); 8]),
                    ..flags()
                },
                "--zookeeper: 8 given; give the ensemble's members (1 to 7",
            ),
            // Each value allowed, but together about 17 days.
            (
                BenchRealFlags {
                    seconds: Some(3600),
                    repeats: Some(20),
                    ..flags()
                },
                "bench real would take about 721 h (720 runs of 3600 s, 12 fault runs of 20 s); the limit is 24 h",
            ),
        ] {
            let message = plan(bad.clone()).expect_err(says);
            assert!(message.contains(says), "{bad:?}: {message}");
        }
    }

    #[test]
    fn from_data_writes_the_same_report_again_and_refuses_measuring_flags() {
        use cassalock_report::real_backends::{RedissonWake, Setup, DATA, REPORT};
        let dir = std::env::temp_dir().join(format!("cassalock-from-data-{}", std::process::id()));
        let setup = Setup {
            command: "cassalock bench real --locks memcached".into(),
            machine: "2 cores".into(),
            backends: Vec::new(),
            seconds_per_run: 15,
            hold_ms: 10,
            ttl_s: 10,
            poll_ms: 100,
            repeats: 1,
            warm_up_s: None,
            warm_up_settled: None,
            redisson_wake: RedissonWake::Notified,
            fault_lockers: 4,
            fault_seconds: 0,
            row_lock_settings: None,
        };
        let run = Summary {
            variant: Lock::Memcached.title().into(),
            lockers: 4,
            acquisitions: 100,
            acquisitions_per_s: 5.0,
            ..Summary::default()
        };
        let first = dir.join("first");
        real_backends::write(&first, &setup, &[run], &[]).expect("written");
        let again = dir.join("again");
        let flags = BenchRealFlags {
            out: Some(again.clone()),
            ..BenchRealFlags::default()
        };
        assert_eq!(rerender(&first.join(DATA), &flags), ExitCode::SUCCESS);
        let read = |d: &Path| std::fs::read_to_string(d.join(REPORT)).expect("report");
        assert_eq!(read(&first), read(&again));
        // Measuring flags, a missing file: bad usage, nothing written.
        let measuring = BenchRealFlags {
            seconds: Some(5),
            out: Some(dir.join("never")),
            ..BenchRealFlags::default()
        };
        assert_eq!(rerender(&first.join(DATA), &measuring), ExitCode::from(2));
        let missing = BenchRealFlags {
            out: Some(dir.join("never")),
            ..BenchRealFlags::default()
        };
        assert_eq!(rerender(&dir.join("nope.json"), &missing), ExitCode::from(2));
        assert!(!dir.join("never").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn every_lock_the_real_runner_runs_has_a_start_command() {
        for lock in cassalock_real::real_locks() {
            assert!(start_command(lock).starts_with("cluster/cassalock-"), "{lock:?}");
        }
    }
}
