//! `bench real`'s plan: its options as given, checked (every refusal names the flag and what to
//! type) and filled in with the defaults; the runs it makes, how long it should take, and the
//! command line that runs it again.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail};
use cassalock::algo::family::MAX_MASTERS;
use cassalock::registry::Servers;
use cassalock_real::{Family, Lock, RealLock};
use cassalock_report::real_backends;

use super::servers::{
    DEFAULT_CONTACT_POINT, DEFAULT_ETCD, DEFAULT_MEMCACHED, DEFAULT_REDIS, DEFAULT_REDIS_REPLICATED,
    DEFAULT_REDLOCK_MASTERS, DEFAULT_ZOOKEEPER,
};
use super::warm_up::WARM_UP_S;

/// The most members of a ZooKeeper ensemble or etcd cluster a benchmark names.
const MAX_MEMBERS: usize = 7;

/// `bench real`'s hold when --hold-ms is not given, and the most it takes (a run's
/// acquisitions start within its seconds, so a longer hold would only lengthen the last ones).
const DEFAULT_BENCH_HOLD_MS: u64 = 10;
const MAX_BENCH_HOLD_MS: u64 = 60_000;
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
    /// The server of redis-set-nx and Redisson's three locks.
    pub redis: String,
    pub redlock_masters: Vec<String>,
    pub memcached: String,
    /// The pair redis-set-nx and Redisson's three locks fail over in their fault runs.
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
fn check_addresses(flag: &str, addresses: &[String], fewest: usize, most: usize, what: &str) -> anyhow::Result<()> {
    if !(fewest..=most).contains(&addresses.len()) {
        bail!(
            "{flag}: {} given; give {what} ({fewest} to {most} host:port, comma-separated)",
            addresses.len()
        );
    }
    if let Some(bad) = addresses.iter().find(|a| !well_formed(a)) {
        bail!("{flag}: {bad:?} is not host:port (e.g. 127.0.0.1:16380)");
    }
    if let Some((_, twice)) = addresses.iter().enumerate().find(|(i, a)| addresses[..*i].contains(a)) {
        bail!("{flag}: {twice} is given twice; give each server once");
    }
    Ok(())
}

/// Check `--contact-points` as `bench real` does (1 to 16 host:port, none twice).
pub fn check_contact_points(contact_points: &[String]) -> anyhow::Result<()> {
    check_addresses("--contact-points", contact_points, 1, 16, "Cassandra nodes")
}

fn joined<T: ToString>(items: &[T]) -> String {
    items.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// `--locks`, or every lock the real runner runs: at least one, each once.
fn checked_locks(locks: Option<Vec<Lock>>) -> anyhow::Result<Vec<Lock>> {
    let locks = locks.unwrap_or_else(cassalock_real::real_locks);
    if locks.is_empty() {
        bail!("--locks: name at least one lock (e.g. --locks queue,redlock)");
    }
    if let Some((_, twice)) = locks.iter().enumerate().find(|(i, l)| locks[..*i].contains(l)) {
        bail!("--locks: {} is named twice; name each lock once", twice.name());
    }
    Ok(locks)
}

/// `--lockers`, or 1, 4 and 16: 1 to [`MAX_LOCKER_COUNTS`] counts from 1 to 256, increasing.
fn checked_lockers(lockers: Option<Vec<usize>>) -> anyhow::Result<Vec<usize>> {
    let lockers = lockers.unwrap_or_else(|| vec![1, 4, 16]);
    if lockers.is_empty() || lockers.len() > MAX_LOCKER_COUNTS {
        bail!("--lockers: give 1 to {MAX_LOCKER_COUNTS} counts between 1 and 256, comma-separated (e.g. 1,4,16)");
    }
    if let Some(bad) = lockers.iter().find(|&&n| !(1..=256).contains(&n)) {
        bail!("--lockers {bad}: give counts between 1 and 256 (e.g. --lockers 1,4,16)");
    }
    if lockers.windows(2).any(|pair| pair[0] >= pair[1]) {
        bail!(
            "--lockers {}: give the counts in increasing order, each once (e.g. 1,4,16)",
            joined(&lockers)
        );
    }
    Ok(lockers)
}

/// How long and how often `bench real` runs: each run's seconds and hold, the repeats, the
/// fault runs' seconds.
struct Timing {
    seconds: u64,
    hold_ms: u64,
    repeats: usize,
    fault_seconds: u64,
}

impl Timing {
    /// --seconds, --hold-ms, --repeats and --fault-seconds, or their defaults, each in its range.
    fn checked(flags: &BenchRealFlags) -> anyhow::Result<Timing> {
        let seconds = flags.seconds.unwrap_or(20);
        if !(1..=3600).contains(&seconds) {
            bail!("--seconds must be between 1 and 3600, not {seconds}");
        }
        let hold_ms = flags.hold_ms.unwrap_or(DEFAULT_BENCH_HOLD_MS);
        if hold_ms > MAX_BENCH_HOLD_MS {
            bail!("--hold-ms must be between 0 and {MAX_BENCH_HOLD_MS}, not {hold_ms}");
        }
        let repeats = flags.repeats.unwrap_or(3);
        if !(1..=20).contains(&repeats) {
            bail!("--repeats must be between 1 and 20, not {repeats}");
        }
        let fault_seconds = flags.fault_seconds.unwrap_or(20);
        if fault_seconds != 0 && !(3..=600).contains(&fault_seconds) {
            bail!("--fault-seconds must be 0 (no fault runs) or between 3 and 600, not {fault_seconds}");
        }
        Ok(Timing {
            seconds,
            hold_ms,
            repeats,
            fault_seconds,
        })
    }
}

/// The locks the real runner runs on `servers`, as a sentence lists them ("a, b or c").
fn locks_on(servers: Servers) -> String {
    let names: Vec<&str> = servers
        .locks()
        .filter(|lock| lock.entry().real)
        .map(Lock::name)
        .collect();
    cassalock::registry::listed(&names, "or")
}

/// Refuse a server flag given for locks that do not run (`locks`; the pair only with fault
/// runs): it would be silently ignored.
fn refuse_unused_servers(flags: &BenchRealFlags, locks: &[Lock], fault_seconds: u64) -> anyhow::Result<()> {
    let uses = |servers: Servers| locks.iter().any(|l| l.servers() == servers);
    let cassandra = uses(Servers::CassandraCluster);
    let redis_server = uses(Servers::OneRedis);
    for (flag, given, used, locks_named) in [
        (
            "--contact-points",
            flags.contact_points.is_some(),
            cassandra,
            locks_on(Servers::CassandraCluster),
        ),
        (
            "--redis",
            flags.redis.is_some(),
            redis_server,
            locks_on(Servers::OneRedis),
        ),
        (
            "--redlock-masters",
            flags.redlock_masters.is_some(),
            uses(Servers::RedisMasters),
            locks_on(Servers::RedisMasters),
        ),
        (
            "--memcached",
            flags.memcached.is_some(),
            uses(Servers::OneMemcached),
            locks_on(Servers::OneMemcached),
        ),
        (
            "--redis-replicated",
            flags.redis_replicated.is_some(),
            redis_server && fault_seconds > 0,
            format!("{}, with fault runs", locks_on(Servers::OneRedis)),
        ),
        (
            "--zookeeper",
            flags.zookeeper.is_some(),
            uses(Servers::ZooKeeperEnsemble),
            locks_on(Servers::ZooKeeperEnsemble),
        ),
        (
            "--etcd",
            flags.etcd.is_some(),
            uses(Servers::EtcdCluster),
            locks_on(Servers::EtcdCluster),
        ),
    ] {
        if given && !used {
            bail!(
                "{flag} is for {locks_named}, which this benchmark does not run (--locks {}{}); drop {flag} or add such a lock",
                joined(&locks.iter().map(|l| l.name()).collect::<Vec<_>>()),
                if fault_seconds == 0 { ", --fault-seconds 0" } else { "" }
            );
        }
    }
    Ok(())
}

/// The servers of every lock, as given or the scripts' defaults, each list checked.
struct GivenServers {
    contact_points: Vec<String>,
    redis: String,
    redlock_masters: Vec<String>,
    memcached: String,
    redis_replicated: Vec<String>,
    zookeeper: Vec<String>,
    etcd: Vec<String>,
}

impl GivenServers {
    /// Each server flag, or its default: the right number of host:port, none twice.
    fn checked(flags: &BenchRealFlags) -> anyhow::Result<GivenServers> {
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
        Ok(GivenServers {
            contact_points,
            redis,
            redlock_masters,
            memcached,
            redis_replicated,
            zookeeper,
            etcd,
        })
    }
}

impl BenchPlan {
    /// Check the options and fill in the defaults: every refusal names the flag and what to type
    /// (print it with `{:#}`).
    pub fn new(flags: BenchRealFlags) -> anyhow::Result<BenchPlan> {
        let locks = checked_locks(flags.locks.clone())?;
        let lockers = checked_lockers(flags.lockers.clone())?;
        let Timing {
            seconds,
            hold_ms,
            repeats,
            fault_seconds,
        } = Timing::checked(&flags)?;
        refuse_unused_servers(&flags, &locks, fault_seconds)?;
        let GivenServers {
            contact_points,
            redis,
            redlock_masters,
            memcached,
            redis_replicated,
            zookeeper,
            etcd,
        } = GivenServers::checked(&flags)?;
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
        plan.check_estimate()?;
        Ok(plan)
    }

    /// Refuse a plan its own estimate says would take longer than [`MAX_BENCH_S`].
    fn check_estimate(&self) -> anyhow::Result<()> {
        if self.estimate_s() > MAX_BENCH_S {
            bail!(
                "bench real would take about {} h ({} of {} s, {} of {} s); the limit is {} h: lower --seconds, --repeats, --lockers or --locks",
                self.estimate_s().div_ceil(3600),
                cassalock_judge::text::count(self.runs(), "run"),
                self.seconds,
                cassalock_judge::text::count(self.fault_runs(), "fault run"),
                self.fault_seconds,
                MAX_BENCH_S / 3600
            );
        }
        Ok(())
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
        match lock.servers() {
            Servers::OneRedis => vec![self.redis.clone()],
            Servers::RedisMasters => self.redlock_masters.clone(),
            Servers::OneMemcached => vec![self.memcached.clone()],
            Servers::ZooKeeperEnsemble => self.zookeeper.clone(),
            Servers::EtcdCluster => self.etcd.clone(),
            Servers::CassandraCluster => Vec::new(),
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
    fn check_addable(&self, path: &Path) -> anyhow::Result<()> {
        let old = real_backends::read_data(path).map_err(|e| anyhow!("--add-to: {e}"))?;
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
                bail!(
                    "--add-to {}: its runs were measured with {what} {earlier}, this one would use {now}; give {what} {earlier} so that the runs compare",
                    path.display()
                );
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
            bail!(
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
            );
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
        let runs_on = |servers| self.locks.iter().any(|l| l.servers() == servers);
        if runs_on(Servers::RedisMasters) {
            command += &format!(" --redlock-masters {}", self.redlock_masters.join(","));
        }
        if runs_on(Servers::OneMemcached) {
            command += &format!(" --memcached {}", self.memcached);
        }
        if runs_on(Servers::ZooKeeperEnsemble) {
            command += &format!(" --zookeeper {}", self.zookeeper.join(","));
        }
        if runs_on(Servers::EtcdCluster) {
            command += &format!(" --etcd {}", self.etcd.join(","));
        }
        if let Some(path) = &self.add_to {
            command += &format!(" --add-to {}", path.display());
        }
        command
    }
}

/// The long-run settings `bench real` runs the row locks with: the library's defaults.
pub(super) fn row_lock_settings() -> real_backends::RowLockSettings {
    let defaults = cassalock::Settings::new("bench");
    real_backends::RowLockSettings {
        reuse_thread_ids: defaults.reuse_thread_ids,
        queue_read_from_last_hold: defaults.queue_read_from_last_hold,
    }
}
