//! What every lease lock of the other families (Redis `SET NX`, Redlock, Memcached `add`) has
//! in common, so that one driver runs them all: an acquire machine, an extension machine and a
//! release machine over one store's commands, and how each machine's own outcome reads as one
//! of the few outcomes a user sees.
//!
//! The reading is a lock decision (is "the key held someone else's token" a lost lease or a
//! released one?), so it lives here beside the machines, not in the driver: the driver runs
//! [`FamilyLock::acquire`] and acts on the [`Acquisition`] it is told, and never looks inside a
//! reply.

use std::convert::Infallible;
use std::fmt;
use std::marker::PhantomData;

use super::etcd::mutex::{
    prefix_of, EtcdAcquire, EtcdAcquired, EtcdLease, EtcdMutexConfig, EtcdNotAcquired, EtcdRelease, EtcdReleased,
    KeepAlive, KeptAlive,
};
use super::memcached::{self as mc, MemcachedAcquire, MemcachedLease, MemcachedLockConfig};
use super::redis::redisson::{
    self, RedissonAcquire, RedissonAcquired, RedissonConfig, RedissonLease, RedissonRelease, RedissonReleased, Renewed,
    Watchdog, WatchdogEnd,
};
use super::redis::redisson_fair;
use super::redis::redlock::{
    RedlockAcquire, RedlockAcquireMachine, RedlockAllMasters, RedlockConfig, RedlockOutcome, ToMaster,
};
use super::redis::set_nx::{Extended, Patience, RedisAcquire, RedisReleased, SetNxAcquire, SetNxExtend, SetNxRelease};
use super::redis::{RedisLease, RedisLockConfig};
use super::server_holder::{ServerHolder, ServerNow, ServerState};
use super::zookeeper::curator_mutex::{
    directory_of, CuratorAcquire, CuratorAcquired, CuratorCheck, CuratorChecked, CuratorConfig, CuratorLease,
    CuratorRelease, CuratorReleased,
};
pub use super::LockConfigError;
use super::{Input, Leftover, Machine, RetryPolicy, Step};
use crate::store::etcd_client::{EtcdOp, EtcdOpReply};
use crate::store::memcached::{MemcachedCommand, MemcachedReply};
use crate::store::redis_keyspace::{RedisCommand, RedisReply};
use crate::store::znode_tree::{ZkOp, ZkReply};
use crate::store::StoreFailure;

/// How an acquisition ended, for every family.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Acquisition<L> {
    Acquired(L),
    /// `try_lock` found the lock taken (or Redlock's attempts found no majority).
    NotAcquired,
    /// `max_wait_ms` ran out.
    TimedOut,
    /// The store kept failing; `left`: what the attempt may have left behind.
    Failed {
        failure: StoreFailure,
        left: Leftover,
    },
}

/// How an extension ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Extension<L> {
    /// Ours for longer: the new lease.
    Extended(L),
    /// The key was not ours any more (or, for Redlock, no majority within the validity): the
    /// lease is lost (C-lost).
    Lost,
    /// The store did not answer: the old lease stands until its validity ends.
    Failed(StoreFailure),
}

/// How a release ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Release {
    /// Our key was deleted.
    Released,
    /// The key was not ours when the release ran: the lease had been lost before.
    WasNotOurs,
    /// Released or lost before: the store cannot tell (a retry after a lost reply found the
    /// key gone; or Memcached's plain `delete` found nothing).
    GoneEitherWay,
    /// The release acted on the key without knowing whose it was (Memcached's `delete` as
    /// usually written, after our lease ran out): it may have freed another holder's lock.
    ActedBlind,
    /// The store kept failing: the key stays until its TTL unless an attempt applied.
    Failed(StoreFailure),
}

/// How a holder's background renewal lane (Redisson's watchdog) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RenewalEnd {
    /// The release stopped it.
    Stopped,
    /// The server said the key is not ours: the holder is told its lease is lost.
    Lost,
    /// Renewals failed for a whole lease: the holder is told its lease has expired.
    Expired,
    /// It ended without telling the holder (redisson/redisson#775's mutant): the holder believes
    /// until its own clock passes the last renewal's validity.
    QuietlyEnded,
}

/// The renewal lane of a lock that has none: a machine that cannot be built.
pub struct NoRenewal<K, C, R>(Infallible, Types<K, C, R>);

/// Names the types a [`NoRenewal`] would run with (and nothing else: `fn` keeps it `Send`).
type Types<K, C, R> = PhantomData<fn() -> (K, C, R)>;

impl<K, C, R> NoRenewal<K, C, R> {
    /// Anything at all, since no such lane exists: a lock without a renewal lane answers
    /// [`FamilyLock::renewed_lease`] with it.
    pub fn unreachable<T>(&self) -> T {
        match self.0 {}
    }
}

impl<K, C, R> Machine for NoRenewal<K, C, R> {
    type Config = K;
    type Output = RenewalEnd;
    type Command = C;
    type Reply = R;

    fn resume(&mut self, _: &K, _: Input<R>, _: u64) -> Step<RenewalEnd, C> {
        match self.0 {}
    }
}

/// A lease lock of a family with its store's commands, as the family driver runs it.
pub trait FamilyLock: Send + Sync + 'static {
    /// The lock's name in traces and reports (`redis-set-nx`).
    const NAME: &'static str;
    type Config: AsRef<RetryPolicy> + fmt::Debug + Send + Sync + 'static;
    type Command: fmt::Display + fmt::Debug + Clone + Send + Sync + 'static;
    type Reply: fmt::Display + fmt::Debug + Clone + Send + Sync + 'static;
    /// What a holder owns.
    type Lease: fmt::Debug + Clone + Send + Sync + 'static;
    type AcquireMachine: Machine<Config = Self::Config, Command = Self::Command, Reply = Self::Reply, Output: Send>
        + Send;
    type ExtendMachine: Machine<Config = Self::Config, Command = Self::Command, Reply = Self::Reply, Output: Send>
        + Send;
    type ReleaseMachine: Machine<Config = Self::Config, Command = Self::Command, Reply = Self::Reply, Output: Send>
        + Send;
    /// A holder's background renewal lane ([`NoRenewal`] for the locks that have none).
    type RenewalMachine: Machine<Config = Self::Config, Command = Self::Command, Reply = Self::Reply, Output: Send>
        + Send
        + 'static;

    fn acquire(key: &str, token: &str, patience: Patience) -> Self::AcquireMachine;
    fn acquired(output: <Self::AcquireMachine as Machine>::Output) -> Acquisition<Self::Lease>;
    fn extend(lease: Self::Lease) -> Self::ExtendMachine;
    /// `old`: the lease the extension started from (Redlock's machine answers only the new validity).
    fn extended(old: &Self::Lease, output: <Self::ExtendMachine as Machine>::Output) -> Extension<Self::Lease>;
    fn release(lease: Self::Lease) -> Self::ReleaseMachine;
    fn released(output: <Self::ReleaseMachine as Machine>::Output) -> Release;
    /// The client time until which the holder may believe it holds (its clock below it).
    fn valid_until_us(lease: &Self::Lease, config: &Self::Config) -> u64;
    /// The token the holder's key carries (what the resource sees; it does not grow).
    fn token(lease: &Self::Lease) -> &str;
    /// Settings the lock cannot work with, said in a sentence.
    fn check(config: &Self::Config) -> Result<(), LockConfigError>;

    /// How long `lock()` waits for the lock before it gives up (`max_wait_ms`, `wait_ms`), if
    /// it has a deadline: contract item C-wait holds the call to it.
    fn wait_ms(_config: &Self::Config) -> Option<u64> {
        None
    }

    /// How far past its deadline `lock()` may sleep before it sees the deadline, besides the
    /// requests in flight: a lock that polls without cutting its last sleep at the deadline
    /// (SET NX's and Memcached's retry interval); 0 for one whose sleeps end at the deadline.
    fn wait_overshoot_ms(_config: &Self::Config) -> u64 {
        0
    }

    /// The channel on which a waiter of `key` holding `token` is told to try again (Redisson's
    /// unlock message), if the lock's waiters sleep until notified.
    fn notification_channel(_key: &str, _token: &str) -> Option<String> {
        None
    }

    /// Who the lock's servers say holds `key` now, read from their states (one for a lock on
    /// one server, each master for Redlock; T1-server, [`super::server_holder`]). `None`: the
    /// lock does not say, or the states are not of its kind of server.
    fn holder_on_servers(_servers: &[ServerNow<'_>], _key: &str) -> Option<ServerHolder> {
        None
    }

    /// The renewal lane a new holder runs in the background, if the lock has one.
    fn renewal(_lease: &Self::Lease, _config: &Self::Config) -> Option<Self::RenewalMachine> {
        None
    }

    /// How the renewal lane's end reads.
    fn renewal_ended(output: <Self::RenewalMachine as Machine>::Output) -> RenewalEnd;

    /// The lease as the renewal lane has left it so far.
    fn renewed_lease(machine: &Self::RenewalMachine) -> Self::Lease;
}

/// [`FamilyLock::renewal_ended`] and [`FamilyLock::renewed_lease`] of a lock without a
/// renewal lane.
macro_rules! no_renewal {
    () => {
        fn renewal_ended(output: RenewalEnd) -> RenewalEnd {
            output
        }

        fn renewed_lease(machine: &Self::RenewalMachine) -> Self::Lease {
            match machine.0 {}
        }
    };
}

/// Settings every Redis-family lock needs.
fn check_redis(config: &RedisLockConfig) -> Result<(), LockConfigError> {
    if config.ttl_ms == 0 {
        return Err("ttl_ms is 0: Redis refuses PX 0; give the key's time to live".into());
    }
    if config.retry_every_ms == 0 {
        return Err("retry_every_ms is 0: a waiter would ask the server in a busy loop; use 1 ms or more".into());
    }
    if config.drift_ppm >= 1_000_000 {
        return Err(LockConfigError(format!(
            "drift_ppm {} leaves no lease at all (the margin is the whole TTL); use less than 1000000",
            config.drift_ppm
        )));
    }
    if config
        .extend_every_ms
        .is_some_and(|every| every == 0 || every >= config.ttl_ms)
    {
        return Err("extend_every_ms must be above 0 and below ttl_ms, or the key expires between extensions".into());
    }
    Ok(())
}

/// `SET key token NX PX ttl`, compare-and-pexpire, compare-and-delete ([`super::redis::set_nx`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SetNxLock;

impl FamilyLock for SetNxLock {
    const NAME: &'static str = "redis-set-nx";

    fn wait_ms(config: &Self::Config) -> Option<u64> {
        config.max_wait_ms
    }

    fn wait_overshoot_ms(config: &Self::Config) -> u64 {
        config.retry_every_ms
    }
    type Config = RedisLockConfig;
    type Command = RedisCommand;
    type Reply = RedisReply;
    type Lease = RedisLease;
    type AcquireMachine = SetNxAcquire;
    type ExtendMachine = SetNxExtend;
    type ReleaseMachine = SetNxRelease;
    type RenewalMachine = NoRenewal<Self::Config, Self::Command, Self::Reply>;

    fn acquire(key: &str, token: &str, patience: Patience) -> SetNxAcquire {
        SetNxAcquire::new(key, token, patience)
    }

    fn acquired(output: RedisAcquire) -> Acquisition<RedisLease> {
        match output {
            RedisAcquire::Acquired { lease } => Acquisition::Acquired(lease),
            RedisAcquire::NotAcquired => Acquisition::NotAcquired,
            RedisAcquire::TimedOut => Acquisition::TimedOut,
            RedisAcquire::Failed { failure, left } => Acquisition::Failed { failure, left },
        }
    }

    fn extend(lease: RedisLease) -> SetNxExtend {
        SetNxExtend::new(lease)
    }

    fn extended(_old: &RedisLease, output: Extended) -> Extension<RedisLease> {
        match output {
            Extended::Extended { lease } => Extension::Extended(lease),
            Extended::Lost => Extension::Lost,
            Extended::Failed(failure) => Extension::Failed(failure),
        }
    }

    fn release(lease: RedisLease) -> SetNxRelease {
        SetNxRelease::new(lease)
    }

    fn released(output: RedisReleased) -> Release {
        match output {
            RedisReleased::Released => Release::Released,
            RedisReleased::WasNotOurs => Release::WasNotOurs,
            RedisReleased::GoneEitherWay => Release::GoneEitherWay,
            RedisReleased::Failed(failure) => Release::Failed(failure),
        }
    }

    fn valid_until_us(lease: &RedisLease, config: &RedisLockConfig) -> u64 {
        lease.valid_until_us(config)
    }

    fn token(lease: &RedisLease) -> &str {
        &lease.token
    }

    fn holder_on_servers(servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        let (keyspace, now_ms) = ServerNow::redis(servers)?;
        Some(super::redis::set_nx::holder_on_server(keyspace, key, now_ms))
    }

    fn check(config: &RedisLockConfig) -> Result<(), LockConfigError> {
        check_redis(config)
    }

    no_renewal!();
}

/// A Redlock holder: the key and token on every master, and the validity the acquisition (or
/// the last extension) computed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedlockHold {
    pub lease: RedisLease,
    pub valid_until_us: u64,
}

/// Redlock over N masters ([`super::redis::redlock`]); `try_lock` and `lock` both run its
/// attempts (the algorithm has no "wait for ever").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RedlockLock;

impl FamilyLock for RedlockLock {
    const NAME: &'static str = "redlock";
    type Config = RedlockConfig;
    type Command = ToMaster;
    type Reply = RedisReply;
    type Lease = RedlockHold;
    type AcquireMachine = RedlockAcquireMachine;
    type ExtendMachine = RedlockAllMasters;
    type ReleaseMachine = RedlockAllMasters;
    type RenewalMachine = NoRenewal<Self::Config, Self::Command, Self::Reply>;

    fn acquire(key: &str, token: &str, _patience: Patience) -> RedlockAcquireMachine {
        RedlockAcquireMachine::new(key, token)
    }

    fn acquired(output: RedlockAcquire) -> Acquisition<RedlockHold> {
        match output {
            RedlockAcquire::Acquired { lease, valid_until_us } => {
                Acquisition::Acquired(RedlockHold { lease, valid_until_us })
            }
            RedlockAcquire::NotAcquired { unanswered: 0 } => Acquisition::NotAcquired,
            // Ours: the give-up's unlock never reached these masters, however often asked.
            RedlockAcquire::NotAcquired { unanswered } => Acquisition::Failed {
                failure: StoreFailure::Other(format!(
                    "no majority, and {unanswered} masters did not answer the unlock: our key may stay on them until its TTL"
                )),
                left: Leftover::CleanUpFailed,
            },
        }
    }

    fn extend(hold: RedlockHold) -> RedlockAllMasters {
        RedlockAllMasters::extend(hold.lease)
    }

    fn extended(old: &RedlockHold, output: RedlockOutcome) -> Extension<RedlockHold> {
        match output {
            RedlockOutcome::Extended { valid_until_us } => Extension::Extended(RedlockHold {
                lease: old.lease.clone(),
                valid_until_us,
            }),
            RedlockOutcome::ExtensionFailed { .. } => Extension::Lost,
            RedlockOutcome::Released { .. } | RedlockOutcome::ReleaseUnconfirmed { .. } => {
                unreachable!("an extension does not release")
            }
        }
    }

    fn release(hold: RedlockHold) -> RedlockAllMasters {
        RedlockAllMasters::release(hold.lease)
    }

    fn released(output: RedlockOutcome) -> Release {
        match output {
            // A majority may still hold our key: the lock stays taken until the TTL.
            RedlockOutcome::ReleaseUnconfirmed { unanswered } => Release::Failed(StoreFailure::Other(format!(
                "{unanswered} masters, a majority, did not answer the release: our key may keep the lock taken until its TTL"
            ))),
            RedlockOutcome::Released {
                deleted: 0,
                unanswered: 0,
            } => Release::WasNotOurs,
            // Nobody that answered had our key, and some never answered: released, or lost
            // before, the masters cannot tell.
            RedlockOutcome::Released { deleted: 0, .. } => Release::GoneEitherWay,
            RedlockOutcome::Released { .. } => Release::Released,
            RedlockOutcome::Extended { .. } | RedlockOutcome::ExtensionFailed { .. } => {
                unreachable!("a release does not extend")
            }
        }
    }

    fn valid_until_us(hold: &RedlockHold, _config: &RedlockConfig) -> u64 {
        hold.valid_until_us
    }

    fn token(hold: &RedlockHold) -> &str {
        &hold.lease.token
    }

    fn holder_on_servers(servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        let masters = servers
            .iter()
            .map(|server| match server.state {
                ServerState::Redis(keyspace) => Some(Some(super::redis::set_nx::holder_on_server(
                    keyspace,
                    key,
                    server.now_ms,
                ))),
                ServerState::Down => Some(None),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(super::redis::redlock::holder_on_masters(
            &masters,
            super::redis::redlock::majority_of(masters.len()),
        ))
    }

    fn check(config: &RedlockConfig) -> Result<(), LockConfigError> {
        if !(1..=MAX_MASTERS).contains(&config.masters) {
            return Err(LockConfigError(format!(
                "masters {}: give 1 to {MAX_MASTERS}",
                config.masters
            )));
        }
        if config.attempts == 0 {
            return Err("attempts is 0: Redlock would never try".into());
        }
        check_redis(&config.lock)
    }

    no_renewal!();
}

/// The most Redlock masters a lock may use.
pub const MAX_MASTERS: usize = 15;

/// Memcached `add` with expiry; release and extension as configured ([`super::memcached`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemcachedLock;

impl FamilyLock for MemcachedLock {
    const NAME: &'static str = "memcached";

    fn wait_ms(config: &Self::Config) -> Option<u64> {
        config.max_wait_ms
    }

    fn wait_overshoot_ms(config: &Self::Config) -> u64 {
        config.retry_every_ms
    }
    type Config = MemcachedLockConfig;
    type Command = MemcachedCommand;
    type Reply = MemcachedReply;
    type Lease = MemcachedLease;
    type AcquireMachine = mc::AddAcquire;
    type ExtendMachine = mc::LeaseCall;
    type ReleaseMachine = mc::LeaseCall;
    type RenewalMachine = NoRenewal<Self::Config, Self::Command, Self::Reply>;

    fn acquire(key: &str, token: &str, patience: Patience) -> mc::AddAcquire {
        mc::AddAcquire::new(key, token, patience)
    }

    fn acquired(output: MemcachedAcquire) -> Acquisition<MemcachedLease> {
        match output {
            MemcachedAcquire::Acquired { lease } => Acquisition::Acquired(lease),
            MemcachedAcquire::NotAcquired => Acquisition::NotAcquired,
            MemcachedAcquire::TimedOut => Acquisition::TimedOut,
            MemcachedAcquire::Failed { failure, left } => Acquisition::Failed { failure, left },
        }
    }

    fn extend(lease: MemcachedLease) -> mc::LeaseCall {
        mc::touch(lease)
    }

    fn extended(_old: &MemcachedLease, output: mc::Outcome) -> Extension<MemcachedLease> {
        match output {
            mc::Outcome::Done { lease: Some(lease) } => Extension::Extended(lease),
            mc::Outcome::Done { lease: None } => unreachable!("an extension returns the new lease"),
            // `touch` as written extended whoever held it: not ours to believe in.
            mc::Outcome::NotOurs | mc::Outcome::Gone | mc::Outcome::ActedOnWhoeverHeldIt => Extension::Lost,
            mc::Outcome::Failed(failure) => Extension::Failed(failure),
        }
    }

    fn release(lease: MemcachedLease) -> mc::LeaseCall {
        mc::release(lease)
    }

    fn released(output: mc::Outcome) -> Release {
        match output {
            mc::Outcome::Done { .. } => Release::Released,
            mc::Outcome::NotOurs => Release::WasNotOurs,
            mc::Outcome::Gone => Release::GoneEitherWay,
            mc::Outcome::ActedOnWhoeverHeldIt => Release::ActedBlind,
            mc::Outcome::Failed(failure) => Release::Failed(failure),
        }
    }

    fn valid_until_us(lease: &MemcachedLease, config: &MemcachedLockConfig) -> u64 {
        lease.valid_until_us(config)
    }

    fn token(lease: &MemcachedLease) -> &str {
        &lease.token
    }

    fn holder_on_servers(servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        let (server, now_ms) = ServerNow::memcached(servers)?;
        Some(mc::holder_on_server(server, key, now_ms))
    }

    fn check(config: &MemcachedLockConfig) -> Result<(), LockConfigError> {
        config.check().map_err(|error| LockConfigError(error.to_string()))?;
        if config.retry_every_ms == 0 {
            return Err("retry_every_ms is 0: a waiter would ask the server in a busy loop; use 1 ms or more".into());
        }
        Ok(())
    }

    no_renewal!();
}

/// Redisson's `RLock` ([`super::redis::redisson`]): the hash lock's scripts, the wait for the
/// holder's TTL (the family driver has no pub/sub: a wait lasts the holder's TTL, as when the
/// unlock message is lost), and the watchdog as the holder's renewal lane when no lease time is
/// given. Each acquisition is its own owner (the family API is not reentrant).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RedissonLock;

impl FamilyLock for RedissonLock {
    const NAME: &'static str = "redisson";

    fn wait_ms(config: &Self::Config) -> Option<u64> {
        config.wait_ms
    }
    type Config = RedissonConfig;
    type Command = RedisCommand;
    type Reply = RedisReply;
    type Lease = RedissonLease;
    type AcquireMachine = RedissonAcquire;
    type ExtendMachine = redisson::RenewOnce;
    type ReleaseMachine = RedissonRelease;
    type RenewalMachine = Watchdog;

    fn acquire(key: &str, token: &str, patience: Patience) -> RedissonAcquire {
        match patience {
            Patience::Wait => RedissonAcquire::new(key, token),
            Patience::Once => RedissonAcquire::once(key, token),
        }
    }

    fn acquired(output: RedissonAcquired) -> Acquisition<RedissonLease> {
        match output {
            RedissonAcquired::Acquired { lease } => Acquisition::Acquired(lease),
            RedissonAcquired::NotAcquired => Acquisition::NotAcquired,
            RedissonAcquired::TimedOut => Acquisition::TimedOut,
            // The machine reads its own hold count before giving up after an uncertain
            // attempt only while it keeps trying; a hold it may have taken expires with the
            // lease (the release is not retried either: see `RedissonRelease`).
            RedissonAcquired::Failed(failure) => Acquisition::Failed {
                failure,
                left: Leftover::NotCleanedUp,
            },
        }
    }

    fn notification_channel(key: &str, _token: &str) -> Option<String> {
        Some(redisson::channel(key))
    }

    fn extend(lease: RedissonLease) -> redisson::RenewOnce {
        redisson::RenewOnce::new(lease)
    }

    fn extended(_old: &RedissonLease, output: Renewed) -> Extension<RedissonLease> {
        match output {
            Renewed::Renewed { lease } => Extension::Extended(lease),
            Renewed::Lost => Extension::Lost,
            Renewed::Failed(failure) => Extension::Failed(failure),
        }
    }

    fn release(lease: RedissonLease) -> RedissonRelease {
        RedissonRelease::new(lease)
    }

    fn released(output: RedissonReleased) -> Release {
        match output {
            // One owner per acquisition: a count above 0 cannot remain.
            RedissonReleased::Released | RedissonReleased::StillHeld => Release::Released,
            RedissonReleased::NotOurs => Release::WasNotOurs,
            RedissonReleased::FreeAfterwards => Release::GoneEitherWay,
            RedissonReleased::Failed(failure) => Release::Failed(failure),
        }
    }

    fn valid_until_us(lease: &RedissonLease, config: &RedissonConfig) -> u64 {
        lease.valid_until_us(config)
    }

    fn token(lease: &RedissonLease) -> &str {
        &lease.owner
    }

    fn holder_on_servers(servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        let (keyspace, now_ms) = ServerNow::redis(servers)?;
        Some(super::redis::redisson::holder_on_server(keyspace, key, now_ms))
    }

    fn check(config: &RedissonConfig) -> Result<(), LockConfigError> {
        if config.watchdog_timeout_ms < 3 {
            return Err("watchdog_timeout_ms below 3 ms leaves the watchdog no period".into());
        }
        if config.lease_ms == Some(0) {
            return Err("lease_ms 0: Redis refuses an expiry of 0; give a lease or none (watchdog)".into());
        }
        Ok(())
    }

    fn renewal(lease: &RedissonLease, config: &RedissonConfig) -> Option<Watchdog> {
        config.watchdog().then(|| Watchdog::new(lease.clone()))
    }

    fn renewal_ended(output: WatchdogEnd) -> RenewalEnd {
        match output {
            WatchdogEnd::Stopped => RenewalEnd::Stopped,
            WatchdogEnd::Lost => RenewalEnd::Lost,
            WatchdogEnd::Expired => RenewalEnd::Expired,
            WatchdogEnd::QuietlyEnded => RenewalEnd::QuietlyEnded,
        }
    }

    fn renewed_lease(watchdog: &Watchdog) -> RedissonLease {
        watchdog.lease().clone()
    }
}

/// Redisson's fair lock ([`super::redis::redisson_fair`]): the RLock with a queue of waiters;
/// everything but the acquire, the release and the waiter's channel is the RLock's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RedissonFairLock;

impl FamilyLock for RedissonFairLock {
    const NAME: &'static str = "redisson-fair";

    fn wait_ms(config: &Self::Config) -> Option<u64> {
        config.wait_ms
    }
    type Config = RedissonConfig;
    type Command = RedisCommand;
    type Reply = RedisReply;
    type Lease = RedissonLease;
    type AcquireMachine = RedissonAcquire;
    type ExtendMachine = redisson::RenewOnce;
    type ReleaseMachine = RedissonRelease;
    type RenewalMachine = Watchdog;

    fn acquire(key: &str, token: &str, patience: Patience) -> RedissonAcquire {
        redisson_fair::acquire(key, token, patience == Patience::Once)
    }

    fn acquired(output: RedissonAcquired) -> Acquisition<RedissonLease> {
        RedissonLock::acquired(output)
    }

    /// Each waiter has its own channel: the release tells the first in line only.
    fn notification_channel(key: &str, token: &str) -> Option<String> {
        Some(redisson_fair::waiter_channel(key, token))
    }

    fn extend(lease: RedissonLease) -> redisson::RenewOnce {
        RedissonLock::extend(lease)
    }

    fn extended(old: &RedissonLease, output: Renewed) -> Extension<RedissonLease> {
        RedissonLock::extended(old, output)
    }

    fn release(lease: RedissonLease) -> RedissonRelease {
        redisson_fair::release(lease)
    }

    fn released(output: RedissonReleased) -> Release {
        RedissonLock::released(output)
    }

    fn valid_until_us(lease: &RedissonLease, config: &RedissonConfig) -> u64 {
        RedissonLock::valid_until_us(lease, config)
    }

    fn token(lease: &RedissonLease) -> &str {
        &lease.owner
    }

    fn holder_on_servers(servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        let (keyspace, now_ms) = ServerNow::redis(servers)?;
        Some(super::redis::redisson::holder_on_server(keyspace, key, now_ms))
    }

    fn check(config: &RedissonConfig) -> Result<(), LockConfigError> {
        RedissonLock::check(config)?;
        if config.fair_thread_wait_ms == 0 {
            return Err("fair_thread_wait_ms 0: every waiter would be dropped from the queue at once; give a slot (Redisson: 5000 ms)".into());
        }
        Ok(())
    }

    fn renewal(lease: &RedissonLease, config: &RedissonConfig) -> Option<Watchdog> {
        RedissonLock::renewal(lease, config)
    }

    fn renewal_ended(output: WatchdogEnd) -> RenewalEnd {
        RedissonLock::renewal_ended(output)
    }

    fn renewed_lease(watchdog: &Watchdog) -> RedissonLease {
        RedissonLock::renewed_lease(watchdog)
    }
}

/// Curator's `InterProcessMutex` on ZooKeeper ([`super::zookeeper::curator_mutex`]): no lease
/// to extend (the session keeps the node); "extend" asks whether our node is still there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CuratorLock;

impl FamilyLock for CuratorLock {
    const NAME: &'static str = "zookeeper";

    fn wait_ms(config: &Self::Config) -> Option<u64> {
        config.wait_ms
    }
    type Config = CuratorConfig;
    type Command = ZkOp;
    type Reply = ZkReply;
    type Lease = CuratorLease;
    type AcquireMachine = CuratorAcquire;
    type ExtendMachine = CuratorCheck;
    type ReleaseMachine = CuratorRelease;
    type RenewalMachine = NoRenewal<Self::Config, Self::Command, Self::Reply>;

    fn acquire(key: &str, token: &str, patience: Patience) -> CuratorAcquire {
        CuratorAcquire::new(key, token.replace([':', '/'], "_"), patience == Patience::Once)
    }

    fn acquired(output: CuratorAcquired) -> Acquisition<CuratorLease> {
        match output {
            CuratorAcquired::Acquired(lease) => Acquisition::Acquired(lease),
            CuratorAcquired::NotAcquired => Acquisition::NotAcquired,
            CuratorAcquired::TimedOut => Acquisition::TimedOut,
            // A node of ours that vanished went with its session: nothing is left.
            CuratorAcquired::NodeVanished => Acquisition::Failed {
                failure: StoreFailure::Other("our node vanished: the session expired".into()),
                left: Leftover::Nothing,
            },
            // The machine deleted its node on giving up, or the node goes with the session.
            CuratorAcquired::Failed(failure) => Acquisition::Failed {
                failure,
                left: Leftover::NotCleanedUp,
            },
        }
    }

    fn notification_channel(key: &str, _token: &str) -> Option<String> {
        Some(directory_of(key))
    }

    fn extend(lease: CuratorLease) -> CuratorCheck {
        CuratorCheck::new(lease)
    }

    fn extended(old: &CuratorLease, output: CuratorChecked) -> Extension<CuratorLease> {
        match output {
            CuratorChecked::StillOurs => Extension::Extended(old.clone()),
            CuratorChecked::Gone => Extension::Lost,
            CuratorChecked::Failed(failure) => Extension::Failed(failure),
        }
    }

    fn release(lease: CuratorLease) -> CuratorRelease {
        CuratorRelease::new(lease)
    }

    fn released(output: CuratorReleased) -> Release {
        match output {
            CuratorReleased::Released => Release::Released,
            CuratorReleased::WasGone => Release::WasNotOurs,
            CuratorReleased::Failed(failure) => Release::Failed(failure),
        }
    }

    /// The recipe sets no bound: a holder believes until its client tells it the session is
    /// lost (the judges see what that costs under a pause past the session timeout).
    fn valid_until_us(_lease: &CuratorLease, _config: &CuratorConfig) -> u64 {
        u64::MAX
    }

    fn token(lease: &CuratorLease) -> &str {
        &lease.token
    }

    fn holder_on_servers(servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        let tree = ServerNow::zookeeper(servers)?;
        Some(super::zookeeper::curator_mutex::holder_on_server(tree, key))
    }

    fn check(config: &CuratorConfig) -> Result<(), LockConfigError> {
        if config.recheck_every_ms == Some(0) {
            return Err(
                "recheck_every_ms 0: a waiter would list the directory in a busy loop; use 1 ms or more".into(),
            );
        }
        Ok(())
    }

    no_renewal!();
}

/// etcd's mutex with its session ([`super::etcd::mutex`]): a session per acquisition, its
/// keep-alive the holder's renewal lane; "extend" is one keep-alive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EtcdLock;

impl FamilyLock for EtcdLock {
    const NAME: &'static str = "etcd";

    fn wait_ms(config: &Self::Config) -> Option<u64> {
        config.wait_ms
    }
    type Config = EtcdMutexConfig;
    type Command = EtcdOp;
    type Reply = EtcdOpReply;
    type Lease = EtcdLease;
    type AcquireMachine = EtcdAcquire;
    type ExtendMachine = KeepAlive;
    type ReleaseMachine = EtcdRelease;
    type RenewalMachine = KeepAlive;

    fn acquire(key: &str, token: &str, patience: Patience) -> EtcdAcquire {
        EtcdAcquire::new(key, token, patience == Patience::Once)
    }

    fn acquired(output: EtcdAcquired) -> Acquisition<EtcdLease> {
        let (why, key_may_remain) = match output {
            EtcdAcquired::Acquired(lease) => return Acquisition::Acquired(lease),
            EtcdAcquired::NotAcquired { why, key_may_remain } => (why, key_may_remain),
        };
        let left = if key_may_remain {
            Leftover::CleanUpFailed
        } else {
            Leftover::Nothing
        };
        match (why, left) {
            (EtcdNotAcquired::HeldByAnother, Leftover::Nothing) => Acquisition::NotAcquired,
            (EtcdNotAcquired::TimedOut, Leftover::Nothing) => Acquisition::TimedOut,
            (EtcdNotAcquired::SessionExpired, left) => Acquisition::Failed {
                failure: StoreFailure::Other(
                    "the session's lease expired while we waited: our key went with it".into(),
                ),
                left,
            },
            (EtcdNotAcquired::Failed(failure), left) => Acquisition::Failed { failure, left },
            (why, left) => Acquisition::Failed {
                failure: StoreFailure::Other(format!(
                    "{why:?}, and the session's revocation never got through: our key stays until its lease's TTL"
                )),
                left,
            },
        }
    }

    /// The waiter's watch messages come on the lock's prefix (a store sends each client only
    /// the deletions it watches).
    fn notification_channel(key: &str, _token: &str) -> Option<String> {
        Some(prefix_of(key))
    }

    fn extend(lease: EtcdLease) -> KeepAlive {
        KeepAlive::once(lease)
    }

    fn extended(_old: &EtcdLease, output: KeptAlive) -> Extension<EtcdLease> {
        match output {
            KeptAlive::Renewed(lease) => Extension::Extended(lease),
            KeptAlive::Lost | KeptAlive::Expired => Extension::Lost,
            KeptAlive::Failed(failure) => Extension::Failed(failure),
            KeptAlive::Stopped => unreachable!("a one-off keep-alive is not stopped"),
        }
    }

    fn release(lease: EtcdLease) -> EtcdRelease {
        EtcdRelease::new(lease)
    }

    fn released(output: EtcdReleased) -> Release {
        match output {
            EtcdReleased::Released => Release::Released,
            EtcdReleased::WasGone => Release::WasNotOurs,
            EtcdReleased::GoneEitherWay => Release::GoneEitherWay,
            EtcdReleased::Failed(failure) => Release::Failed(failure),
        }
    }

    fn valid_until_us(lease: &EtcdLease, config: &EtcdMutexConfig) -> u64 {
        lease.valid_until_us(config)
    }

    fn token(lease: &EtcdLease) -> &str {
        &lease.token
    }

    fn holder_on_servers(servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        let (keyspace, now_ms) = ServerNow::etcd(servers)?;
        Some(super::etcd::mutex::holder_on_server(keyspace, key, now_ms))
    }

    fn check(config: &EtcdMutexConfig) -> Result<(), LockConfigError> {
        config.check()
    }

    fn renewal(lease: &EtcdLease, _config: &EtcdMutexConfig) -> Option<KeepAlive> {
        Some(KeepAlive::lane(lease.clone()))
    }

    fn renewal_ended(output: KeptAlive) -> RenewalEnd {
        match output {
            KeptAlive::Stopped => RenewalEnd::Stopped,
            KeptAlive::Lost => RenewalEnd::Lost,
            KeptAlive::Expired => RenewalEnd::Expired,
            KeptAlive::Renewed(_) | KeptAlive::Failed(_) => unreachable!("the lane runs until it ends"),
        }
    }

    fn renewed_lease(lane: &KeepAlive) -> EtcdLease {
        lane.lease().clone()
    }
}
