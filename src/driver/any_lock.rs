//! Any family's lock behind one interface a harness can hold without naming the lock.
//!
//! [`FamilyLocker`] is generic over the lock, its store and its clock, so a harness that runs
//! "whichever lock the scenario names" would otherwise match on every lock to build the right
//! type, once per harness (the simulator, the real runner), and a lock defined outside the
//! library could not be run at all. [`AnyLocker`] and [`AnyGuard`] are the same calls with the
//! types erased: a harness builds one `Box<dyn AnyLocker>` where it knows the lock (its
//! registry entry, or a user's own lock), and drives every lock with the same code.
//!
//! Nothing here decides anything: each call is the generic one's, unchanged.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use super::family::{FamilyError, FamilyGuard, FamilyLocker, FamilyStore};
use super::Clock;
use crate::algo::family::{FamilyLock, Release};
use crate::algo::server_holder::ServerHolder;
use crate::store::StoreFailure;

/// A call's future, boxed so that the trait can be used as an object.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`FamilyLocker`]'s calls, whatever its lock, store and clock.
pub trait AnyLocker: Send + Sync {
    /// The lock's name ([`FamilyLock::NAME`]).
    fn lock_name(&self) -> &'static str;

    /// [`FamilyLocker::lock`]: wait for the lock (within the config's `max_wait_ms`).
    fn lock<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Box<dyn AnyGuard>, FamilyError>>;

    /// [`FamilyLocker::try_lock`]: one attempt; `None` when another holds it.
    fn try_lock<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Box<dyn AnyGuard>>, FamilyError>>;

    /// [`FamilyLocker::holder_on_server`]: who the server says holds `key` now, if it is read.
    fn holder_on_server<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<Result<ServerHolder, StoreFailure>>>;

    /// Requests sent so far ([`FamilyLocker::requests`]).
    fn requests(&self) -> u64;

    /// Requests that failed so far ([`FamilyLocker::failures`]).
    fn failures(&self) -> u64;
}

/// [`FamilyGuard`]'s calls, whatever its lock.
pub trait AnyGuard: Send + fmt::Debug {
    /// The token the holder's key carries.
    fn token(&self) -> &str;

    /// The holder's thread name in events.
    fn thread(&self) -> &str;

    /// The client time until which the holder may believe it holds.
    fn valid_until_us(&self) -> u64;

    /// The holder's clock is below its validity and it was not told it lost the lock.
    fn is_valid(&self) -> bool;

    /// [`FamilyGuard::extend`].
    fn extend(&mut self) -> BoxFuture<'_, Result<(), FamilyError>>;

    /// [`FamilyGuard::release`].
    fn release(self: Box<Self>) -> BoxFuture<'static, Result<Release, FamilyError>>;
}

impl<F, S, C> AnyLocker for FamilyLocker<F, S, C>
where
    F: FamilyLock,
    S: FamilyStore<F::Command, Reply = F::Reply>,
    C: Clock,
{
    fn lock_name(&self) -> &'static str {
        F::NAME
    }

    fn lock<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Box<dyn AnyGuard>, FamilyError>> {
        Box::pin(async move {
            let guard = FamilyLocker::lock(self, key).await?;
            Ok(Box::new(guard) as Box<dyn AnyGuard>)
        })
    }

    fn try_lock<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Box<dyn AnyGuard>>, FamilyError>> {
        Box::pin(async move {
            let guard = FamilyLocker::try_lock(self, key).await?;
            Ok(guard.map(|guard| Box::new(guard) as Box<dyn AnyGuard>))
        })
    }

    fn holder_on_server<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<Result<ServerHolder, StoreFailure>>> {
        Box::pin(FamilyLocker::holder_on_server(self, key))
    }

    fn requests(&self) -> u64 {
        FamilyLocker::requests(self)
    }

    fn failures(&self) -> u64 {
        FamilyLocker::failures(self)
    }
}

impl<F, S, C> AnyGuard for FamilyGuard<F, S, C>
where
    F: FamilyLock,
    S: FamilyStore<F::Command, Reply = F::Reply>,
    C: Clock,
{
    fn token(&self) -> &str {
        FamilyGuard::token(self)
    }

    fn thread(&self) -> &str {
        FamilyGuard::thread(self)
    }

    fn valid_until_us(&self) -> u64 {
        FamilyGuard::valid_until_us(self)
    }

    fn is_valid(&self) -> bool {
        FamilyGuard::is_valid(self)
    }

    fn extend(&mut self) -> BoxFuture<'_, Result<(), FamilyError>> {
        Box::pin(FamilyGuard::extend(self))
    }

    fn release(self: Box<Self>) -> BoxFuture<'static, Result<Release, FamilyError>> {
        Box::pin(FamilyGuard::release(*self))
    }
}
