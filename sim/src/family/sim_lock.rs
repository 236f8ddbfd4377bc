//! A lock as the simulator sees it, whoever defined it: the library's locks and a user's own
//! are run the same way.
//!
//! The simulator needs little of a lock: its name, which server its commands go to (and how
//! many), its lease (the judge's bound on how long a lost holder may believe), whether its
//! tokens grow (fencing), whether its holders renew in the background, how a waiter is woken,
//! and how to build a locker for one client. [`Simulated`] gives all of that for any
//! [`FamilyLock`] that talks to one server whose commands the simulated servers answer (Redis,
//! Memcached, etcd); [`SimRedlock`] and [`SimCurator`] add what Redlock (several masters) and
//! Curator (a ZooKeeper session per client) need. The workload then drives every lock through
//! [`AnyLocker`], the same calls.
//!
//! A user's lock is a `Simulated::<TheirLock>::new(config, ttl_ms)` in a scenario; the
//! simulator's own are built by [`super::scenario`]'s named scenarios the same way.

use std::fmt;
use std::panic::RefUnwindSafe;
use std::sync::Arc;

use cassalock::algo::family::{CuratorLock, FamilyLock, RedlockLock};
use cassalock::algo::redis::redlock::RedlockConfig;
use cassalock::algo::server_holder::{ServerHolder, ServerNow};
use cassalock::algo::zookeeper::curator_mutex::CuratorConfig;
use cassalock::algo::RetryPolicy;
use cassalock::driver::any_lock::AnyLocker;
use cassalock::driver::family::{FamilyError, FamilyLocker, FamilyObserver, FamilyStore};
use cassalock::registry::Family;
use cassalock::store::etcd_client::EtcdOp;
use cassalock::store::family_memory::Masters;
use cassalock::store::memcached::MemcachedCommand;
use cassalock::store::redis_keyspace::RedisCommand;

use super::net::{SimServerStore, SimZkStore};
use crate::clock::SimClock;

/// A lock the simulator runs, as a scenario holds it.
pub type LockKind = Arc<dyn SimLock>;

/// What one client's locker is built from: its connection to the lock's server (server 0; a
/// lock over several servers connects to each with [`LockerEnv::store_of`]), its clock, its
/// name, its seed and the observer that records its events.
pub struct LockerEnv {
    pub store: SimServerStore,
    pub clock: SimClock,
    pub name: String,
    pub seed: u64,
    pub observer: Arc<dyn FamilyObserver>,
}

impl LockerEnv {
    /// This client's connection to logical server `server`.
    pub fn store_of(&self, server: usize) -> SimServerStore {
        SimServerStore {
            server,
            ..self.store.clone()
        }
    }

    /// A locker of lock `F` over `store`.
    pub fn locker<F, S>(self, store: S, config: F::Config) -> Result<Box<dyn AnyLocker>, FamilyError>
    where
        F: FamilyLock,
        S: FamilyStore<F::Command, Reply = F::Reply>,
    {
        let locker =
            FamilyLocker::<F, _, _>::new(store, self.clock, config, &self.name, self.seed, Some(self.observer))?;
        Ok(Box::new(locker))
    }
}

/// How the server tells a waiter to try again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wakeup {
    /// It does not: a waiter asks again on its own.
    None,
    /// Redis pub/sub: the release publishes an unlock message (Redisson).
    UnlockMessage,
    /// A watch on the waiter's predecessor fires (ZooKeeper, etcd).
    Watch,
}

/// A lock the simulator can run without knowing its type. (Unwind-safe: a sweep catches a
/// run's panic and reports its seed.)
pub trait SimLock: fmt::Debug + Send + Sync + RefUnwindSafe + 'static {
    /// Its name in traces, event records and reports.
    fn name(&self) -> &'static str;

    /// The server whose commands it sends.
    fn server(&self) -> Family;

    /// Logical servers it runs on (Redlock's masters; else one).
    fn servers(&self) -> usize {
        1
    }

    /// The lease a holder is given, ms: how long a holder that lost its key may go on believing.
    fn ttl_ms(&self) -> u64;

    /// Its token grows from one holder to the next, so the resource may fence with it.
    fn fences(&self) -> bool {
        false
    }

    /// A holder's background renewal period (Redisson's watchdog, etcd's keep-alive), ms.
    fn renew_every_ms(&self) -> Option<u64> {
        None
    }

    /// How a waiter is woken.
    fn wakeup(&self) -> Wakeup {
        Wakeup::None
    }

    /// `lock()`'s deadline, if it has one, and how far past it the lock's last sleep may run
    /// before the call sees it (C-wait).
    fn wait(&self) -> Option<LockWait> {
        None
    }

    /// It keeps a queue of waiters (the F-order and F-drop judges apply).
    fn is_fair(&self) -> bool {
        false
    }

    /// On how many servers a release must delete the key to free the lock (Redlock: a
    /// majority).
    fn release_quorum(&self) -> usize {
        1
    }

    /// Settings it cannot work with, said in a sentence (`FamilyError::Config`).
    fn check(&self) -> Result<(), FamilyError>;

    /// Who its servers' states say holds `key` (T1-server; [`FamilyLock::holder_on_servers`]);
    /// `None`: the lock does not say, and T1-server is not checked.
    fn holder_on_servers(&self, _servers: &[ServerNow<'_>], _key: &str) -> Option<ServerHolder> {
        None
    }

    /// One client's locker.
    fn locker(&self, env: LockerEnv) -> Result<Box<dyn AnyLocker>, FamilyError>;
}

/// A `lock()` deadline ([`FamilyLock::wait_ms`]), how far past it the lock's last sleep may
/// run ([`FamilyLock::wait_overshoot_ms`]), and how the lock retries a failed request (a
/// request under way at the deadline finishes its retries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockWait {
    pub wait_ms: u64,
    pub overshoot_ms: u64,
    pub retry: RetryPolicy,
}

impl LockWait {
    fn of<L: FamilyLock>(config: &L::Config) -> Option<LockWait> {
        L::wait_ms(config).map(|wait_ms| LockWait {
            wait_ms,
            overshoot_ms: L::wait_overshoot_ms(config),
            retry: *config.as_ref(),
        })
    }

    /// The longest one request takes with its retries, each try up to `request_timeout_ms`.
    pub fn request_ms(&self, request_timeout_ms: u64) -> u64 {
        let tries = u64::from(self.retry.max_retries) + 1;
        tries
            .saturating_mul(request_timeout_ms)
            .saturating_add(u64::from(self.retry.max_retries).saturating_mul(self.retry.backoff_ms))
    }
}

/// The server a lock's commands go to.
pub trait ServedBy {
    const SERVER: Family;
}

impl ServedBy for RedisCommand {
    const SERVER: Family = Family::Redis;
}

impl ServedBy for MemcachedCommand {
    const SERVER: Family = Family::Memcached;
}

impl ServedBy for EtcdOp {
    const SERVER: Family = Family::Etcd;
}

/// Any [`FamilyLock`] over one simulated server, with its settings.
pub struct Simulated<L: FamilyLock> {
    pub config: L::Config,
    pub ttl_ms: u64,
    pub fences: bool,
    pub renew_every_ms: Option<u64>,
    pub wakeup: Wakeup,
    pub fair: bool,
}

impl<L: FamilyLock> Simulated<L> {
    /// A lock whose tokens do not grow, with no background renewal, whose waiters ask again
    /// on their own: change the fields for one that differs.
    pub fn new(config: L::Config, ttl_ms: u64) -> Self {
        Simulated {
            config,
            ttl_ms,
            fences: false,
            renew_every_ms: None,
            wakeup: Wakeup::None,
            fair: false,
        }
    }
}

impl<L: FamilyLock> fmt::Debug for Simulated<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Simulated")
            .field("lock", &L::NAME)
            .field("config", &self.config)
            .field("ttl_ms", &self.ttl_ms)
            .field("fences", &self.fences)
            .field("renew_every_ms", &self.renew_every_ms)
            .field("wakeup", &self.wakeup)
            .field("fair", &self.fair)
            .finish()
    }
}

impl<L> SimLock for Simulated<L>
where
    L: FamilyLock,
    L::Config: Clone + RefUnwindSafe,
    L::Command: ServedBy,
    SimServerStore: FamilyStore<L::Command, Reply = L::Reply>,
{
    fn name(&self) -> &'static str {
        L::NAME
    }

    fn server(&self) -> Family {
        L::Command::SERVER
    }

    fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    fn fences(&self) -> bool {
        self.fences
    }

    fn renew_every_ms(&self) -> Option<u64> {
        self.renew_every_ms
    }

    fn wakeup(&self) -> Wakeup {
        self.wakeup
    }

    fn is_fair(&self) -> bool {
        self.fair
    }

    fn wait(&self) -> Option<LockWait> {
        LockWait::of::<L>(&self.config)
    }

    fn check(&self) -> Result<(), FamilyError> {
        L::check(&self.config).map_err(FamilyError::Config)
    }

    fn holder_on_servers(&self, servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        L::holder_on_servers(servers, key)
    }

    fn locker(&self, env: LockerEnv) -> Result<Box<dyn AnyLocker>, FamilyError> {
        let store = env.store.clone();
        env.locker::<L, _>(store, self.config.clone())
    }
}

/// Redlock over `config.masters` simulated Redis masters.
#[derive(Debug)]
pub struct SimRedlock(pub RedlockConfig);

impl SimLock for SimRedlock {
    fn name(&self) -> &'static str {
        RedlockLock::NAME
    }

    fn server(&self) -> Family {
        Family::Redis
    }

    fn servers(&self) -> usize {
        self.0.masters
    }

    fn ttl_ms(&self) -> u64 {
        self.0.lock.ttl_ms
    }

    fn release_quorum(&self) -> usize {
        self.0.majority()
    }

    fn check(&self) -> Result<(), FamilyError> {
        RedlockLock::check(&self.0).map_err(FamilyError::Config)
    }

    fn holder_on_servers(&self, servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        RedlockLock::holder_on_servers(servers, key)
    }

    fn locker(&self, env: LockerEnv) -> Result<Box<dyn AnyLocker>, FamilyError> {
        let masters = Masters::new((0..self.0.masters).map(|server| env.store_of(server)).collect());
        env.locker::<RedlockLock, _>(masters, self.0.clone())
    }
}

/// Curator's `InterProcessMutex` on one simulated ZooKeeper server, each client with its own
/// session of this timeout, kept alive by its heartbeat.
#[derive(Debug)]
pub struct SimCurator {
    pub config: CuratorConfig,
    pub session_timeout_ms: u64,
}

impl SimLock for SimCurator {
    fn name(&self) -> &'static str {
        CuratorLock::NAME
    }

    fn server(&self) -> Family {
        Family::ZooKeeper
    }

    fn ttl_ms(&self) -> u64 {
        self.session_timeout_ms
    }

    fn fences(&self) -> bool {
        true
    }

    fn wakeup(&self) -> Wakeup {
        Wakeup::Watch
    }

    fn wait(&self) -> Option<LockWait> {
        LockWait::of::<CuratorLock>(&self.config)
    }

    fn check(&self) -> Result<(), FamilyError> {
        CuratorLock::check(&self.config).map_err(FamilyError::Config)
    }

    fn holder_on_servers(&self, servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        CuratorLock::holder_on_servers(servers, key)
    }

    fn locker(&self, env: LockerEnv) -> Result<Box<dyn AnyLocker>, FamilyError> {
        let store = SimZkStore::new(env.store.clone(), self.session_timeout_ms);
        env.locker::<CuratorLock, _>(store, self.config.clone())
    }
}
