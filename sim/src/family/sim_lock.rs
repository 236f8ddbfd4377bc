//! A lock the simulator runs that the simulator does not define: a user's own lock, written as
//! the library's [`FamilyLock`] over the commands of a server the simulator has (Redis,
//! Memcached or etcd), and registered in a scenario as [`LockKind::Custom`].
//!
//! The simulator needs little of such a lock: its name, which server its commands go to, its
//! lease (the judge's bound on how long a lost holder may believe), whether its tokens grow
//! (fencing), and how to build a locker for one client. [`Simulated`] gives all of that for any
//! `FamilyLock` whose commands the simulated servers answer; the workload then drives the lock
//! through [`AnyLocker`], the same calls as every built-in lock.
//!
//! [`LockKind::Custom`]: super::scenario::LockKind::Custom

use std::fmt;
use std::panic::RefUnwindSafe;
use std::sync::Arc;

use cassalock::algo::family::FamilyLock;
use cassalock::driver::any_lock::AnyLocker;
use cassalock::driver::family::{FamilyError, FamilyLocker, FamilyObserver, FamilyStore};
use cassalock::registry::Family;

use super::net::SimServerStore;
use crate::clock::SimClock;

/// What one client's locker is built from: its connection to the lock's server, its clock, its
/// name, its seed and the observer that records its events.
pub struct LockerEnv {
    pub store: SimServerStore,
    pub clock: SimClock,
    pub name: String,
    pub seed: u64,
    pub observer: Arc<dyn FamilyObserver>,
}

/// A lock the simulator can run without knowing its type.
/// (Unwind-safe: a sweep catches a run's panic and reports its seed.)
pub trait SimLock: fmt::Debug + Send + Sync + RefUnwindSafe + 'static {
    /// Its name in traces, event records and reports.
    fn name(&self) -> &'static str;

    /// The server whose commands it sends (one server of that kind is simulated).
    fn server(&self) -> Family;

    /// The lease a holder is given, ms: how long a holder that lost its key may go on believing.
    fn ttl_ms(&self) -> u64;

    /// Its token grows from one holder to the next, so the resource may fence with it.
    fn fences(&self) -> bool;

    /// Settings it cannot work with, said in a sentence (`FamilyError::Config`).
    fn check(&self) -> Result<(), FamilyError>;

    /// One client's locker.
    fn locker(&self, env: LockerEnv) -> Result<Box<dyn AnyLocker>, FamilyError>;
}

/// Any [`FamilyLock`] whose commands the simulated servers answer, with its settings.
pub struct Simulated<L: FamilyLock> {
    pub config: L::Config,
    pub server: Family,
    pub ttl_ms: u64,
    pub fences: bool,
}

impl<L: FamilyLock> fmt::Debug for Simulated<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Simulated")
            .field("lock", &L::NAME)
            .field("config", &self.config)
            .field("server", &self.server)
            .field("ttl_ms", &self.ttl_ms)
            .field("fences", &self.fences)
            .finish()
    }
}

impl<L> SimLock for Simulated<L>
where
    L: FamilyLock,
    L::Config: Clone + RefUnwindSafe,
    SimServerStore: FamilyStore<L::Command, Reply = L::Reply>,
{
    fn name(&self) -> &'static str {
        L::NAME
    }

    fn server(&self) -> Family {
        self.server
    }

    fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    fn fences(&self) -> bool {
        self.fences
    }

    fn check(&self) -> Result<(), FamilyError> {
        L::check(&self.config).map_err(FamilyError::Config)
    }

    fn locker(&self, env: LockerEnv) -> Result<Box<dyn AnyLocker>, FamilyError> {
        let locker = FamilyLocker::<L, _, _>::new(
            env.store,
            env.clock,
            self.config.clone(),
            &env.name,
            env.seed,
            Some(env.observer),
        )?;
        Ok(Box::new(locker))
    }
}
