//! Running the other families' locks (Redis, Memcached, ZooKeeper and etcd) against real
//! servers: each locker is the library's [`FamilyLocker`] over its own connection(s)
//! ([`RealRedis`], [`Masters`] of them for Redlock, [`RealMemcached`], [`RealZooKeeper`],
//! [`RealEtcd`]), and reports the same [`Event`]s as the Cassandra lockers, so the same judges
//! read them. [`family_runner`] is the one place that names a lock here: its machines, whose
//! [`RunsOnRealServers`] impl gives its settings from the job and its connection; what servers
//! it takes is its registry entry's [`Servers`].
//!
//! A holder:
//! 1. takes the lock with `lock` (Redlock's attempts are asked again while `max_wait_ms` lasts:
//!    "no majority" is contention, not an error);
//! 2. checks [`FamilyGuard::is_valid`] before writing to the resource (the [`Monitor`]), with a
//!    token that orders acquisitions (see the crate documentation); a lease already over is not
//!    written with, and the release reports it lost;
//! 3. holds for `hold_ms`, extending every `renew_ms` (the family driver has no background
//!    renewal), and stops believing (the release call) before it releases.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cassalock::algo::etcd::mutex::EtcdMutexConfig;
use cassalock::algo::family::{
    CuratorLock, EtcdLock, FamilyLock, MemcachedLock, RedissonFairLock, RedissonLock, RedlockLock, Release, SetNxLock,
    MAX_MASTERS,
};
use cassalock::algo::memcached::{Checks, MemcachedLockConfig};
use cassalock::algo::redis::redisson::RedissonConfig;
use cassalock::algo::redis::redisson_fenced::RedissonFencedLock;
use cassalock::algo::redis::redlock::RedlockConfig;
use cassalock::algo::redis::RedisLockConfig;
use cassalock::algo::zookeeper::curator_mutex::CuratorConfig;
use cassalock::algo::RetryPolicy;
use cassalock::driver::any_lock::AnyLocker;
use cassalock::driver::family::{FamilyError, FamilyLocker, FamilyStore, MAX_NAME_LEN};
use cassalock::registry::Servers;
use cassalock::store::family_memory::Masters;
use cassalock::SystemClock;

use crate::etcd::{RealEtcd, RealEtcdError};
use crate::memcached::{RealMemcached, RealMemcachedError};
use crate::redis::{RealRedis, RealRedisError, MAX_ADDRESSES};
use crate::zookeeper::{RealZooKeeper, RealZooKeeperError};
use crate::{now_us, Event, Job, Lock, Monitor, Refused, Unreachable};

/// Why the family lockers could not run.
#[derive(Debug, thiserror::Error)]
pub enum FamilyRunError {
    #[error("--servers: {0}")]
    Servers(Refused),
    #[error(transparent)]
    Redis(#[from] RealRedisError),
    #[error(transparent)]
    Memcached(#[from] RealMemcachedError),
    #[error(transparent)]
    ZooKeeper(#[from] RealZooKeeperError),
    #[error(transparent)]
    Etcd(#[from] RealEtcdError),
    /// A server did not answer before the run (exit status 4 of `cassalock real`).
    #[error("server unreachable: {0}")]
    Unreachable(Unreachable),
    #[error("lock settings: {0}")]
    Settings(#[from] FamilyError),
    #[error("a locker task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Failed acquisitions (the store kept failing) before a locker moves on to the next one.
const MAX_LOCK_FAILURES: u32 = 5;

/// The most `lock` calls one acquisition makes (Redlock's "no majority" asks again): a bound
/// on the loop besides `max_wait_ms`.
const MAX_LOCK_CALLS: u32 = 100_000;

/// The most extensions in one hold (`hold_ms` / `renew_ms` is at most 60000).
const MAX_EXTENSIONS: u64 = 60_000;

/// The Redis lock settings a job asks for.
pub fn redis_config(job_ttl_s: u32, poll_ms: u64, max_wait_ms: u64) -> RedisLockConfig {
    RedisLockConfig {
        ttl_ms: u64::from(job_ttl_s) * 1000,
        retry_every_ms: poll_ms,
        max_wait_ms: Some(max_wait_ms),
        // The runner extends by hand (the driver has no background renewal).
        extend_every_ms: None,
        ..RedisLockConfig::default()
    }
}

pub fn redlock_config(masters: usize, job_ttl_s: u32, poll_ms: u64, max_wait_ms: u64) -> RedlockConfig {
    RedlockConfig {
        masters,
        lock: redis_config(job_ttl_s, poll_ms, max_wait_ms),
        retry_delay_max_ms: poll_ms,
        ..RedlockConfig::default()
    }
}

/// Redisson with its watchdog: the lease (`lockWatchdogTimeout`) is the TTL, renewed every
/// third of it by the guard's renewal lane; `lock()` waits up to `--max-wait-ms`.
pub fn redisson_config(job_ttl_s: u32, max_wait_ms: u64) -> RedissonConfig {
    RedissonConfig {
        watchdog_timeout_ms: u64::from(job_ttl_s) * 1000,
        lease_ms: None,
        wait_ms: Some(max_wait_ms),
        ..RedissonConfig::default()
    }
}

pub fn memcached_config(job_ttl_s: u32, poll_ms: u64, max_wait_ms: u64) -> MemcachedLockConfig {
    MemcachedLockConfig {
        ttl_s: job_ttl_s,
        retry_every_ms: poll_ms,
        max_wait_ms: Some(max_wait_ms),
        checks: Checks::CasChecked,
        ..MemcachedLockConfig::default()
    }
}

/// The most servers of a ZooKeeper ensemble or an etcd cluster.
pub const MAX_ENSEMBLE: usize = 7;

/// How the ZooKeeper and etcd machines retry a failed request in the real runs: every 500 ms
/// for 10 s, so that a request (a release above all) outlasts the election after a leader is
/// killed (ZooKeeper's took 3-5 s here, etcd's 1-2 s). The default (3 retries, 100 ms apart)
/// gave up during a ZooKeeper election: the release failed, the holder's node stayed while its
/// session lived, and every waiter behind it timed out.
pub fn election_retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 20,
        backoff_ms: 500,
    }
}

/// Curator's lock, waiting up to `--max-wait-ms` on its predecessor's watch alone (Curator's
/// way: no recheck).
pub fn curator_config(max_wait_ms: u64) -> CuratorConfig {
    CuratorConfig {
        wait_ms: Some(max_wait_ms),
        retry: election_retry(),
        ..CuratorConfig::default()
    }
}

/// The ZooKeeper session timeout of a locker: the job's TTL.
pub fn zookeeper_session_ms(job_ttl_s: u32) -> u64 {
    u64::from(job_ttl_s) * 1000
}

/// etcd's mutex with a session (lease) of the job's TTL, waiting up to `--max-wait-ms`.
pub fn etcd_config(job_ttl_s: u32, max_wait_ms: u64) -> EtcdMutexConfig {
    EtcdMutexConfig {
        session_ttl_s: i64::from(job_ttl_s),
        wait_ms: Some(max_wait_ms),
        retry: election_retry(),
        ..EtcdMutexConfig::default()
    }
}

/// The settings a job gives a family lock, read before any server is contacted.
#[derive(Clone, Copy, Debug)]
struct JobSettings {
    /// How many servers the job names.
    servers: usize,
    ttl_s: u32,
    poll_ms: u64,
    max_wait_ms: u64,
}

/// What the real runner needs of a family lock beside its machines: its settings from a job,
/// and the store it runs over.
trait RunsOnRealServers: FamilyLock {
    type Store: FamilyStore<Self::Command, Reply = Self::Reply>;
    /// The lock's settings for the job; a setting the servers cannot take is refused here.
    fn config(job: &JobSettings) -> Result<Self::Config, Refused>;
    /// A connection to `servers` (a ZooKeeper session lasts as [`zookeeper_session_ms`] of
    /// `ttl_s`).
    fn store(servers: &[String], ttl_s: u32) -> Result<Self::Store, FamilyRunError>;
}

impl RunsOnRealServers for SetNxLock {
    type Store = RealRedis;
    fn config(job: &JobSettings) -> Result<RedisLockConfig, Refused> {
        Ok(redis_config(job.ttl_s, job.poll_ms, job.max_wait_ms))
    }
    fn store(servers: &[String], _ttl_s: u32) -> Result<RealRedis, FamilyRunError> {
        Ok(RealRedis::new(servers)?)
    }
}

impl RunsOnRealServers for RedissonLock {
    type Store = RealRedis;
    fn config(job: &JobSettings) -> Result<RedissonConfig, Refused> {
        Ok(redisson_config(job.ttl_s, job.max_wait_ms))
    }
    fn store(servers: &[String], _ttl_s: u32) -> Result<RealRedis, FamilyRunError> {
        Ok(RealRedis::new(servers)?)
    }
}

impl RunsOnRealServers for RedissonFairLock {
    type Store = RealRedis;
    fn config(job: &JobSettings) -> Result<RedissonConfig, Refused> {
        Ok(redisson_config(job.ttl_s, job.max_wait_ms))
    }
    fn store(servers: &[String], _ttl_s: u32) -> Result<RealRedis, FamilyRunError> {
        Ok(RealRedis::new(servers)?)
    }
}

impl RunsOnRealServers for RedissonFencedLock {
    type Store = RealRedis;
    fn config(job: &JobSettings) -> Result<RedissonConfig, Refused> {
        Ok(redisson_config(job.ttl_s, job.max_wait_ms))
    }
    fn store(servers: &[String], _ttl_s: u32) -> Result<RealRedis, FamilyRunError> {
        Ok(RealRedis::new(servers)?)
    }
}

impl RunsOnRealServers for RedlockLock {
    type Store = Masters<RealRedis>;
    fn config(job: &JobSettings) -> Result<RedlockConfig, Refused> {
        Ok(redlock_config(job.servers, job.ttl_s, job.poll_ms, job.max_wait_ms))
    }
    fn store(servers: &[String], _ttl_s: u32) -> Result<Masters<RealRedis>, FamilyRunError> {
        let masters = servers
            .iter()
            .map(|server| RealRedis::new(std::slice::from_ref(server)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Masters::new(masters))
    }
}

impl RunsOnRealServers for MemcachedLock {
    type Store = RealMemcached;
    fn config(job: &JobSettings) -> Result<MemcachedLockConfig, Refused> {
        Ok(memcached_config(job.ttl_s, job.poll_ms, job.max_wait_ms))
    }
    fn store(servers: &[String], _ttl_s: u32) -> Result<RealMemcached, FamilyRunError> {
        Ok(RealMemcached::new(&servers[0])?)
    }
}

impl RunsOnRealServers for CuratorLock {
    type Store = RealZooKeeper;
    fn config(job: &JobSettings) -> Result<CuratorConfig, Refused> {
        let session_ms = zookeeper_session_ms(job.ttl_s);
        if !(2000..=60_000).contains(&session_ms) {
            return Err(Refused(format!(
                "--ttl-s {}: the ZooKeeper session timeout must be 2 to 60 s (the servers' bounds)",
                job.ttl_s
            )));
        }
        Ok(curator_config(job.max_wait_ms))
    }
    fn store(servers: &[String], ttl_s: u32) -> Result<RealZooKeeper, FamilyRunError> {
        Ok(RealZooKeeper::new(servers, zookeeper_session_ms(ttl_s))?)
    }
}

impl RunsOnRealServers for EtcdLock {
    type Store = RealEtcd;
    fn config(job: &JobSettings) -> Result<EtcdMutexConfig, Refused> {
        Ok(etcd_config(job.ttl_s, job.max_wait_ms))
    }
    fn store(servers: &[String], _ttl_s: u32) -> Result<RealEtcd, FamilyRunError> {
        Ok(RealEtcd::new(servers)?)
    }
}

/// A locker of the job's lock named `name`, or why it could not be made.
type LockerOrWhyNot = Result<Box<dyn AnyLocker>, FamilyRunError>;

/// How the real runner runs one family lock: its settings checked before anything starts, and
/// a locker of it over the job's servers.
#[derive(Clone, Copy)]
struct FamilyRunner {
    check: fn(&JobSettings) -> Result<(), Refused>,
    locker: fn(&Job, &str, u64) -> LockerOrWhyNot,
    /// A locker over `servers` that is only read ([`server_reader`]).
    reader: fn(&[String]) -> LockerOrWhyNot,
}

impl FamilyRunner {
    fn of<F: RunsOnRealServers>() -> FamilyRunner {
        FamilyRunner {
            check: |job| {
                F::check(&F::config(job)?)
                    .map_err(|why| Refused(format!("--ttl-s {} / --poll-ms {}: {why}", job.ttl_s, job.poll_ms)))
            },
            locker: |job, name, seed| {
                let config = F::config(&settings_of(job)).map_err(FamilyRunError::Servers)?;
                Ok(boxed::<F, _>(F::store(&job.servers, job.ttl_s)?, config, name, seed)?)
            },
            reader: |servers| {
                let config = F::config(&reader_settings(servers)).map_err(FamilyRunError::Servers)?;
                Ok(boxed::<F, _>(F::store(servers, READER_TTL_S)?, config, READER_NAME, 0)?)
            },
        }
    }
}

/// The one place the real runner names the family locks it runs, each with its machines.
fn family_runner(lock: Lock) -> Result<FamilyRunner, Refused> {
    Ok(match lock {
        Lock::RedisSetNx => FamilyRunner::of::<SetNxLock>(),
        Lock::Redisson => FamilyRunner::of::<RedissonLock>(),
        Lock::RedissonFair => FamilyRunner::of::<RedissonFairLock>(),
        Lock::RedissonFenced => FamilyRunner::of::<RedissonFencedLock>(),
        Lock::Redlock => FamilyRunner::of::<RedlockLock>(),
        Lock::Memcached => FamilyRunner::of::<MemcachedLock>(),
        Lock::Zookeeper => FamilyRunner::of::<CuratorLock>(),
        Lock::Etcd => FamilyRunner::of::<EtcdLock>(),
        other => return Err(not_a_family_lock_of_the_runner(other)),
    })
}

fn settings_of(job: &Job) -> JobSettings {
    JobSettings {
        servers: job.servers.len(),
        ttl_s: job.ttl_s,
        poll_ms: job.poll_ms,
        max_wait_ms: job.max_wait_ms,
    }
}

/// The most servers a run may name of a kind the family lockers run on.
fn most_servers(servers: Servers) -> usize {
    match servers {
        Servers::OneRedis => MAX_ADDRESSES,
        Servers::RedisMasters => MAX_MASTERS,
        Servers::OneMemcached => 1,
        Servers::ZooKeeperEnsemble | Servers::EtcdCluster => MAX_ENSEMBLE,
        // The Cassandra locks do not run here (`family_runner` refuses them first).
        Servers::CassandraCluster => 0,
    }
}

/// Check a family variant's servers and settings before anything starts (exit status 2).
pub fn check(variant: Lock, servers: &[String], ttl_s: u32, poll_ms: u64, max_wait_ms: u64) -> Result<(), Refused> {
    let runner = family_runner(variant)?;
    if servers.is_empty() {
        return Err(Refused(format!(
            "--servers: give host:port[,host:port...] for --algorithm {}",
            cli_name(variant)
        )));
    }
    if let Some(bad) = servers.iter().find(|s| !crate::is_host_port(s)) {
        return Err(Refused(format!("--servers: {bad:?} is not host:port")));
    }
    let (most, what) = (most_servers(variant.servers()), variant.servers().phrase());
    if servers.len() > most {
        return Err(Refused(format!(
            "--servers: {} given; give {what} (at most {most})",
            servers.len()
        )));
    }
    (runner.check)(&JobSettings {
        servers: servers.len(),
        ttl_s,
        poll_ms,
        max_wait_ms,
    })
}

/// Every server of the job answers (a wrong port is said at once, not as a run of failed
/// acquisitions). A SET NX or Redisson list is one server or a primary and its replicas: one
/// of them must be a master (the others may be down after a failover); Redlock needs every
/// master answering at the start; Memcached has one server.
async fn ping(lock: Lock, servers: &[String], ttl_s: u32) -> Result<(), FamilyRunError> {
    let unreachable = FamilyRunError::Unreachable;
    match lock.servers() {
        Servers::OneRedis => {
            RealRedis::new(servers)?.ping().await.map_err(unreachable)?;
        }
        Servers::RedisMasters => {
            for server in servers {
                RealRedis::new(std::slice::from_ref(server))?
                    .ping()
                    .await
                    .map_err(unreachable)?;
            }
        }
        Servers::OneMemcached => {
            RealMemcached::new(&servers[0])?.ping().await.map_err(unreachable)?;
        }
        Servers::ZooKeeperEnsemble => {
            RealZooKeeper::new(servers, zookeeper_session_ms(ttl_s))?
                .ping()
                .await
                .map_err(unreachable)?;
        }
        Servers::EtcdCluster => {
            RealEtcd::new(servers)?.ping().await.map_err(unreachable)?;
        }
        Servers::CassandraCluster => {
            return Err(FamilyRunError::Servers(not_a_family_lock_of_the_runner(lock)));
        }
    }
    Ok(())
}

/// A reader's settings: none of them is used, since a reader sends no lock command, but the
/// lock's config is made from them and must pass its checks.
const READER_TTL_S: u32 = 10;
/// The locker name a reader's store connections carry.
const READER_NAME: &str = "server-reader";

fn reader_settings(servers: &[String]) -> JobSettings {
    JobSettings {
        servers: servers.len(),
        ttl_s: READER_TTL_S,
        poll_ms: 100,
        max_wait_ms: 1000,
    }
}

/// T1-server for lockers that are not ours (client programs driving a shipped library): who
/// `lock`'s servers name as the holder of a key, by `lock`'s own rule
/// ([`AnyLocker::holder_on_server`]), read over `servers`, each of which must answer now. The
/// locker returned is only ever read: a reading sends no lock command and changes nothing.
pub async fn server_reader(lock: Lock, servers: &[String]) -> Result<Box<dyn AnyLocker>, FamilyRunError> {
    let settings = reader_settings(servers);
    check(lock, servers, settings.ttl_s, settings.poll_ms, settings.max_wait_ms).map_err(FamilyRunError::Servers)?;
    let runner = family_runner(lock).map_err(FamilyRunError::Servers)?;
    ping(lock, servers, READER_TTL_S).await?;
    (runner.reader)(servers)
}

/// A lock id the family locks can use as a key (Memcached's rules: no spaces, not too long).
pub fn check_key(lock_id: &str) -> Result<(), Refused> {
    let fine = !lock_id.is_empty()
        && lock_id.len() <= MAX_NAME_LEN
        && lock_id.chars().all(|c| !c.is_whitespace() && !c.is_control());
    if fine {
        Ok(())
    } else {
        Err(Refused(format!(
            "--lock-id {lock_id:?}: give 1 to {MAX_NAME_LEN} printable characters without spaces"
        )))
    }
}

/// The variant's name on the command line.
pub fn cli_name(variant: Lock) -> &'static str {
    variant.name()
}

/// Run this process's family lockers; every event goes to `emit`.
pub async fn run_job(job: &Job, process: usize, emit: Arc<dyn Fn(Event) + Send + Sync>) -> Result<(), FamilyRunError> {
    check(job.variant, &job.servers, job.ttl_s, job.poll_ms, job.max_wait_ms).map_err(FamilyRunError::Servers)?;
    let runner = family_runner(job.variant).map_err(FamilyRunError::Servers)?;
    ping(job.variant, &job.servers, job.ttl_s).await?;
    let monitor = Arc::new(Monitor::open(&job.monitor));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (index, name) in job.lockers.iter().enumerate() {
        let seed = now_us() ^ ((process as u64) << 32) ^ index as u64;
        let (job, name, emit, monitor) = (job.clone(), name.clone(), Arc::clone(&emit), Arc::clone(&monitor));
        let locker = (runner.locker)(&job, &name, seed)?;
        tasks.push(tokio::spawn(async move {
            run_locker(&job, &name, &*locker, &monitor, &*emit, started).await
        }));
    }
    let mut requests = 0;
    for task in tasks {
        requests += task.await?;
    }
    emit(Event::Done { process, requests });
    Ok(())
}

/// A lock this runner has no family store for: refused by name, never run as another lock.
fn not_a_family_lock_of_the_runner(lock: Lock) -> Refused {
    let runs: Vec<&str> = Lock::all()
        .filter(|lock| lock.is_family() && lock.entry().real)
        .map(Lock::name)
        .collect();
    Refused(format!(
        "the real runner's family lockers run {}, not {lock}",
        runs.join(", ")
    ))
}

/// A locker of lock `F` over `store`, on the system clock.
fn boxed<F, S>(store: S, config: F::Config, name: &str, seed: u64) -> Result<Box<dyn AnyLocker>, FamilyError>
where
    F: FamilyLock,
    S: FamilyStore<F::Command, Reply = F::Reply>,
{
    Ok(Box::new(FamilyLocker::<F, _, _>::new(
        store,
        SystemClock,
        config,
        name,
        seed,
        None,
    )?))
}

fn out_of_time(job: &Job, started: Instant) -> bool {
    job.run_limit_s > 0 && started.elapsed() >= Duration::from_secs(job.run_limit_s)
}

fn error(emit: &(dyn Fn(Event) + Send + Sync), locker: &str, during: &str, message: String) {
    emit(Event::Error {
        locker: locker.into(),
        at_us: now_us(),
        during: during.into(),
        message,
    });
}

/// T1-server's reading: who the lock's server names as its holder now, by the lock's own rule
/// over what the store read from the server ([`AnyLocker::holder_on_server`]), recorded as
/// [`Event::ServerHolder`]. A holder reads as its hold begins, after each extension and before
/// it stops believing, so the readings come at most once per renewal interval and twice more
/// per hold; the holder waits for each (one round trip; a server that does not answer within
/// its store's command timeout names nobody). Nothing when the run does not read its servers
/// or the lock's store is not read.
async fn read_server(job: &Job, name: &str, locker: &dyn AnyLocker, emit: &(dyn Fn(Event) + Send + Sync)) {
    if !job.server_readings {
        return;
    }
    match locker.holder_on_server(&job.lock_id).await {
        None => {}
        Some(Ok(holder)) => emit(Event::ServerHolder {
            locker: name.into(),
            at_us: now_us(),
            lock_token: holder.token().map(str::to_owned),
            threads: Vec::new(),
        }),
        Some(Err(failure)) => error(emit, name, "server reading", failure.to_string()),
    }
}

/// One locker's acquisitions; its store requests.
async fn run_locker(
    job: &Job,
    name: &str,
    locker: &dyn AnyLocker,
    monitor: &Monitor,
    emit: &(dyn Fn(Event) + Send + Sync),
    started: Instant,
) -> u64 {
    for _ in 0..job.acquisitions {
        if out_of_time(job, started) {
            break;
        }
        let asked = Instant::now();
        let give_up_at = asked + Duration::from_millis(job.max_wait_ms);
        let mut failures = 0;
        let mut guard = None;
        for _ in 0..MAX_LOCK_CALLS {
            match locker.lock(&job.lock_id).await {
                Ok(held) => {
                    guard = Some(held);
                    break;
                }
                // Redlock found no majority in its attempts: contention; ask again.
                Err(FamilyError::NoMajority { .. }) if Instant::now() < give_up_at => {}
                Err(e) => {
                    error(emit, name, "lock", e.to_string());
                    failures += 1;
                    if failures >= MAX_LOCK_FAILURES || Instant::now() >= give_up_at || out_of_time(job, started) {
                        break;
                    }
                    // The store kept failing (a server down, a failover): give it a moment.
                    tokio::time::sleep(Duration::from_millis(job.poll_ms)).await;
                }
            }
        }
        let Some(mut guard) = guard else { continue };
        let at_us = now_us();
        let token = format!("{at_us:020}-{name}");
        emit(Event::Acquired {
            locker: name.into(),
            at_us,
            wait_us: asked.elapsed().as_micros() as u64,
            token: token.clone(),
            lock_token: Some(guard.token().to_owned()),
            lock_thread: None,
        });
        read_server(job, name, locker, emit).await;
        let mut lost = false;
        if guard.is_valid() {
            // These locks have no fencing token: the monitor only counts stale writes.
            match monitor.write(&token, false) {
                Ok((accepted, stale)) => emit(Event::Resource {
                    locker: name.into(),
                    at_us: now_us(),
                    token: token.clone(),
                    accepted,
                    stale,
                }),
                Err(e) => error(emit, name, "resource", e.to_string()),
            }
        } else {
            lost = true;
            error(
                emit,
                name,
                "resource",
                "the lease was over before the write (not written)".into(),
            );
        }
        // Hold, extending every renew_ms.
        let hold_until = Instant::now() + Duration::from_millis(job.hold_ms);
        for _ in 0..MAX_EXTENSIONS {
            let left = hold_until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let nap = left.min(Duration::from_millis(job.renew_ms.max(1)));
            tokio::time::sleep(nap).await;
            if Instant::now() >= hold_until || lost {
                continue;
            }
            match guard.extend().await {
                Ok(()) => read_server(job, name, locker, emit).await,
                Err(FamilyError::LeaseLost { .. }) => {
                    lost = true;
                    error(emit, name, "extend", "the key was not ours any more".into());
                }
                Err(e) => error(emit, name, "extend", e.to_string()),
            }
        }
        // A holder told it lost the lock no longer believes: nothing to hold the server to.
        if !lost {
            read_server(job, name, locker, emit).await;
        }
        let still_valid = guard.is_valid();
        let lost = lost || !still_valid;
        emit(Event::Released {
            locker: name.into(),
            at_us: crate::belief_ended_at_us(at_us, now_us(), still_valid && !lost, Some(guard.valid_until_us())),
            lost,
        });
        match guard.release().await {
            Ok(Release::Released | Release::GoneEitherWay) => {}
            Ok(other) => error(
                emit,
                name,
                "release",
                format!("{other:?}: the key was not ours any more"),
            ),
            Err(e) => error(emit, name, "release", e.to_string()),
        }
    }
    locker.requests()
}
