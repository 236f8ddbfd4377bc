//! The locks whose key the server expires, as the model runs them ([`ModelFamily`]): Redis's
//! `SET NX` lock and the two-command `SETNX`-then-`EXPIRE` recipe before it, Redlock,
//! Memcached's `add` lock, Redisson's `RLock`, its fair lock and its fenced lock, with the
//! machines' config, the server and the title words the model gives each.

use cassalock::algo::family::{
    FamilyLock, MemcachedLock, RedissonFairLock, RedissonLock, RedlockLock, RenewalEnd, SetNxLock,
};
use cassalock::algo::memcached::MemcachedLockConfig;
use cassalock::algo::redis::redisson::{RedissonConfig, RedissonLease, Watchdog};
use cassalock::algo::redis::redisson_fenced::RedissonFencedLock;
use cassalock::algo::redis::redlock::RedlockConfig;
use cassalock::algo::redis::setnx_expire::SetNxExpireLock;
use cassalock::algo::redis::RedisLockConfig;
use cassalock::algo::{Machine, RetryPolicy};
use cassalock::store::memcached::Memcached;
use cassalock::store::redis_keyspace::{fair_queue_key, RedisKeyspace, RedisValue};

use super::{
    no_lane, FamilyMutants, MatrixLine, MemcachedServer, ModelFamily, NoLane, RedisServer, RedlockMasters,
    RegisteredModel, KEY, MILLIS_PER_TICK, REDLOCK_MASTERS, TTL_TICKS,
};
use crate::{Fault, Mutant, SpecError};
use cassalock::registry::Lock;

pub(crate) fn model_retry() -> RetryPolicy {
    // One retry: a single lost request or reply is retried, so the acquire machine's check of
    // a nil that may hide its own key is reached.
    RetryPolicy {
        max_retries: 1,
        backoff_ms: MILLIS_PER_TICK,
    }
}

fn model_redis_config(ttl_ticks: u8, ms_per_tick: u64, extend: bool) -> RedisLockConfig {
    let ttl_ms = u64::from(ttl_ticks) * ms_per_tick;
    RedisLockConfig {
        ttl_ms,
        retry_every_ms: ms_per_tick,
        max_wait_ms: None,
        // Documentation only: the model's holders extend once, at a point of the schedule's
        // choosing.
        extend_every_ms: extend.then_some(ttl_ms / 2),
        drift_ppm: RedisLockConfig::default().drift_ppm,
        retry: model_retry(),
    }
}

impl ModelFamily for SetNxLock {
    type Server = RedisServer;
    type Lane = NoLane<Self::Config, Self::Command, Self::Reply>;
    const MODEL: &'static str = "redis-set-nx";
    const LOCK: Option<Lock> = Some(Lock::RedisSetNx);
    const HELP: &'static str = "Redis's single-instance lock, SET NX PX with compare-and-delete (T1-belief, T1-resource, C-free, C-release, T2)";
    const EXTENDS: bool = true;

    fn supports(fault: Fault) -> bool {
        matches!(
            fault,
            Fault::None
                | Fault::Pause
                | Fault::StoreFailure
                | Fault::Restart
                | Fault::Failover
                | Fault::ServerClockJump
        )
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, extend: bool, _: &FamilyMutants) -> RedisLockConfig {
        model_redis_config(ttl_ticks, ms_per_tick, extend)
    }

    fn server(fault: Fault) -> RedisServer {
        RedisServer::new(fault)
    }

    fn describe_lock(config: &RedisLockConfig, extend: bool) -> String {
        let _ = config;
        format!(
            "redis-set-nx (SET NX PX, compare-and-delete{})",
            if extend {
                ", one compare-and-pexpire extension"
            } else {
                ""
            },
        )
    }

    fn describe_timing(config: &RedisLockConfig) -> String {
        format!(
            "TTL {TTL_TICKS} ticks, drift {} ppm, retry every tick",
            config.drift_ppm
        )
    }

    fn counted_from_us(lease: &cassalock::algo::redis::RedisLease) -> Option<u64> {
        Some(lease.set_sent_at_us)
    }

    no_lane!();
}

impl ModelFamily for SetNxExpireLock {
    type Server = RedisServer;
    type Lane = NoLane<Self::Config, Self::Command, Self::Reply>;
    const MODEL: &'static str = "redis-setnx-expire";
    const LOCK: Option<Lock> = Some(Lock::RedisSetNxExpire);
    const HELP: &'static str =
        "Redis SETNX then EXPIRE, DEL release: the two-command recipe of seed 003 (T1-belief, T1-resource, C-free, C-release, T2)";
    const EXTENDS: bool = true;

    fn supports(fault: Fault) -> bool {
        SetNxLock::supports(fault)
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, extend: bool, _: &FamilyMutants) -> RedisLockConfig {
        model_redis_config(ttl_ticks, ms_per_tick, extend)
    }

    fn server(fault: Fault) -> RedisServer {
        RedisServer::new(fault)
    }

    fn describe_lock(_: &RedisLockConfig, extend: bool) -> String {
        format!(
            "redis-setnx-expire (SETNX, then EXPIRE, DEL release{})",
            if extend { ", one EXPIRE extension" } else { "" },
        )
    }

    fn describe_timing(config: &RedisLockConfig) -> String {
        SetNxLock::describe_timing(config)
    }

    fn counted_from_us(lease: &cassalock::algo::redis::RedisLease) -> Option<u64> {
        Some(lease.set_sent_at_us)
    }

    no_lane!();
}

impl ModelFamily for RedlockLock {
    type Server = RedlockMasters;
    type Lane = NoLane<Self::Config, Self::Command, Self::Reply>;
    const MODEL: &'static str = "redlock";
    const LOCK: Option<Lock> = Some(Lock::Redlock);
    const HELP: &'static str =
        "Redlock over 3 masters: majority within the validity (T1-belief, T1-resource, C-free, C-release, T2)";
    const EXTENDS: bool = true;

    fn plant(mutant: Mutant, mutants: &mut FamilyMutants, extend: bool) -> Result<bool, SpecError> {
        match mutant {
            Mutant::NodeRedlockValidity => mutants.redlock.validity_from_first_attempt = true,
            Mutant::GoRedsyncExtend if !extend => {
                return Err(SpecError(
                    "--mutant go-redsync-extend is a bug of the extension: add --extend".to_owned(),
                ))
            }
            Mutant::GoRedsyncExtend => mutants.redlock.extend_ignores_validity = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn supports(fault: Fault) -> bool {
        matches!(
            fault,
            Fault::None | Fault::Pause | Fault::StoreFailure | Fault::Restart | Fault::ServerClockJump
        )
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, extend: bool, mutants: &FamilyMutants) -> RedlockConfig {
        RedlockConfig {
            masters: REDLOCK_MASTERS,
            lock: model_redis_config(ttl_ticks, ms_per_tick, extend),
            // Two attempts: a failed first attempt (another client has a master) is retried once.
            attempts: 2,
            retry_delay_max_ms: ms_per_tick,
            mutants: mutants.redlock,
        }
    }

    fn server(_: Fault) -> RedlockMasters {
        RedlockMasters {
            masters: vec![RedisKeyspace::new(); REDLOCK_MASTERS],
            ahead_ticks: vec![0; REDLOCK_MASTERS],
        }
    }

    fn describe_lock(config: &RedlockConfig, extend: bool) -> String {
        let mut mutants = Vec::new();
        if config.mutants.validity_from_first_attempt {
            mutants.push("mutant: validity from the first attempt (node-redlock)");
        }
        if config.mutants.extend_ignores_validity {
            mutants.push("mutant: an extension ignores the validity (go-redsync)");
        }
        format!(
            "redlock ({} masters, majority {}, {} attempts{}{})",
            config.masters,
            config.majority(),
            config.attempts,
            if extend { ", one extension on every master" } else { "" },
            mutants.iter().map(|m| format!(", {m}")).collect::<String>(),
        )
    }

    fn describe_timing(_: &RedlockConfig) -> String {
        format!("TTL {TTL_TICKS} ticks, drift 1% + 2 ms, the retry's random delay drawn as 0 (a sleep of one tick)")
    }

    fn counted_from_us(_: &cassalock::algo::family::RedlockHold) -> Option<u64> {
        None
    }

    fn describe_fault(fault: Fault) -> String {
        match fault {
            Fault::Restart => "master 0 may restart at once without persistence".to_owned(),
            Fault::ServerClockJump => "master 0's clock may jump forward by the TTL".to_owned(),
            other => other.name().to_owned(),
        }
    }

    fn matrix_line(fault: Fault) -> MatrixLine {
        MatrixLine {
            label: match fault {
                Fault::Restart => Some("model, master 0 restarts at once without persistence"),
                Fault::ServerClockJump => Some("model, master 0's clock jumps forward by the TTL"),
                _ => None,
            },
            ..MatrixLine::default()
        }
    }

    no_lane!();
}

impl ModelFamily for MemcachedLock {
    type Server = MemcachedServer;
    type Lane = NoLane<Self::Config, Self::Command, Self::Reply>;
    const MODEL: &'static str = "memcached";
    const LOCK: Option<Lock> = Some(Lock::Memcached);
    const HELP: &'static str = "Memcached's add lock with expiry, released and extended with gets + cas";
    const EXTENDS: bool = true;

    fn supports(fault: Fault) -> bool {
        matches!(
            fault,
            Fault::None | Fault::Pause | Fault::StoreFailure | Fault::Restart | Fault::ServerClockJump
        )
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, _extend: bool, _: &FamilyMutants) -> MemcachedLockConfig {
        debug_assert_eq!(ms_per_tick, 1000, "Memcached counts whole seconds: a tick is one");
        MemcachedLockConfig {
            ttl_s: u32::from(ttl_ticks),
            retry_every_ms: ms_per_tick,
            max_wait_ms: None,
            checks: cassalock::algo::memcached::Checks::CasChecked,
            retry: model_retry(),
        }
    }

    fn server(_: Fault) -> MemcachedServer {
        MemcachedServer {
            items: Memcached::new(),
            ahead_ticks: 0,
        }
    }

    fn describe_lock(config: &MemcachedLockConfig, extend: bool) -> String {
        format!(
            "memcached (add with exptime, release and touch {}{})",
            match config.checks {
                cassalock::algo::memcached::Checks::CasChecked => "checked with gets + cas",
                cassalock::algo::memcached::Checks::AsWritten => "as usually written (delete, touch)",
            },
            if extend { ", one extension" } else { "" },
        )
    }

    fn describe_timing(_: &MemcachedLockConfig) -> String {
        format!("TTL {TTL_TICKS} s, believed for TTL - 1 s (the server counts whole seconds), retry every tick")
    }

    fn counted_from_us(lease: &cassalock::algo::memcached::MemcachedLease) -> Option<u64> {
        Some(lease.set_sent_at_us)
    }

    fn describe_fault(fault: Fault) -> String {
        match fault {
            Fault::Restart => "the server may restart (Memcached keeps nothing)".to_owned(),
            Fault::ServerClockJump => "the server's clock may jump forward by the TTL".to_owned(),
            other => other.name().to_owned(),
        }
    }

    fn matrix_line(fault: Fault) -> MatrixLine {
        MatrixLine {
            label: (fault == Fault::Restart).then_some("model, the server restarts (Memcached keeps nothing)"),
            ..MatrixLine::default()
        }
    }

    no_lane!();
}

/// Redisson's lease in ticks: three, so that the watchdog renews every tick (a third of it)
/// and one failed renewal leaves a tick to spare.
pub const REDISSON_LEASE_TICKS: u8 = 3;

impl ModelFamily for RedissonLock {
    type Server = RedisServer;
    type Lane = Watchdog;
    const MODEL: &'static str = "redisson";
    const LOCK: Option<Lock> = Some(Lock::Redisson);
    const HELP: &'static str = "Redisson's RLock: hash lock, watchdog renewal, waiters woken by the unlock message (T1-belief, T1-resource, C-free, C-release, C-lost, T2)";
    const TTL_TICKS: u8 = REDISSON_LEASE_TICKS;
    // `lock()` without a lease time: the watchdog runs.
    const RENEWAL_LANE: bool = true;

    fn plant(mutant: Mutant, mutants: &mut FamilyMutants, _extend: bool) -> Result<bool, SpecError> {
        let planted = mutant == Mutant::Redisson775;
        mutants.redisson.watchdog_stops_after_a_failed_renewal |= planted;
        Ok(planted)
    }

    fn supports(fault: Fault) -> bool {
        matches!(
            fault,
            Fault::None
                | Fault::Pause
                | Fault::StoreFailure
                | Fault::Restart
                | Fault::Failover
                | Fault::ServerClockJump
                | Fault::LostNotification
        )
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, _extend: bool, mutants: &FamilyMutants) -> RedissonConfig {
        RedissonConfig {
            // `lock()` without a lease time: the lease is the watchdog's timeout, renewed every
            // third of it.
            watchdog_timeout_ms: u64::from(ttl_ticks) * ms_per_tick,
            lease_ms: None,
            wait_ms: None,
            retry: model_retry(),
            mutants: mutants.redisson,
            ..RedissonConfig::default()
        }
    }

    fn server(fault: Fault) -> RedisServer {
        RedisServer {
            single_after_failover: true,
            ..RedisServer::new(fault)
        }
    }

    fn describe_lock(config: &RedissonConfig, _extend: bool) -> String {
        format!(
            "redisson (RLock: hash lock, watchdog, waiters woken by the unlock message{})",
            if config.mutants.watchdog_stops_after_a_failed_renewal {
                ", mutant: the watchdog stops after a failed renewal (redisson/redisson#775)"
            } else {
                ""
            }
        )
    }

    fn describe_timing(config: &RedissonConfig) -> String {
        format!(
            "lease (lockWatchdogTimeout) {REDISSON_LEASE_TICKS} ticks renewed every {} ms, drift {} ppm; a waiter sleeps the holder's TTL or until the unlock message",
            config.renew_every_ms(),
            cassalock::algo::redis::redisson::DRIFT_PPM
        )
    }

    fn counted_from_us(lease: &RedissonLease) -> Option<u64> {
        Some(lease.set_sent_at_us)
    }

    fn describe_fault(fault: Fault) -> String {
        match fault {
            Fault::LostNotification => "one unlock message may be lost on its way to a waiter".to_owned(),
            Fault::Restart => "the server may restart without persistence".to_owned(),
            Fault::Failover => "the replica may be promoted before it has the primary's writes".to_owned(),
            Fault::ServerClockJump => "the server's clock may jump forward by the TTL".to_owned(),
            other => other.name().to_owned(),
        }
    }

    fn lane(lease: &RedissonLease, config: &RedissonConfig) -> Option<Watchdog> {
        <RedissonLock as FamilyLock>::renewal(lease, config)
    }

    fn lane_ended(output: <Watchdog as Machine>::Output) -> RenewalEnd {
        <RedissonLock as FamilyLock>::renewal_ended(output)
    }

    fn lane_lease(lane: &Watchdog) -> RedissonLease {
        <RedissonLock as FamilyLock>::renewed_lease(lane)
    }
}

/// The fair lock's `threadWaitTime` in ticks: how long a queued waiter may go without asking
/// again before the others drop it. Redisson's default, 5 s (a tick is a second): longer than
/// any request can be in flight within the clock's bound, so that only a fault can drop a
/// waiter. With a shorter slot a request that is slow to reach the server joins the queue
/// already stale and loses its place (with 1 tick and F-order not excusing a dropped waiter,
/// 2 x 2 found it in 16 steps: a request 3 ticks in flight).
pub const REDISSON_FAIR_SLOT_TICKS: u8 = 5;

impl ModelFamily for RedissonFairLock {
    type Server = RedisServer;
    type Lane = Watchdog;
    const MODEL: &'static str = "redisson-fair";
    const LOCK: Option<Lock> = Some(Lock::RedissonFair);
    const HELP: &'static str =
        "Redisson's fair lock: the RLock with a queue of waiters (F-order besides the RLock's claims)";
    const TTL_TICKS: u8 = REDISSON_LEASE_TICKS;
    const RENEWAL_LANE: bool = true;
    const FIFO: bool = true;

    fn plant(mutant: Mutant, mutants: &mut FamilyMutants, _extend: bool) -> Result<bool, SpecError> {
        let planted = mutant == Mutant::RedissonFairBarging;
        mutants.redisson.fair_acquire_ignores_the_queue |= planted;
        Ok(planted)
    }

    fn supports(fault: Fault) -> bool {
        RedissonLock::supports(fault)
    }

    fn queue(server: &RedisServer) -> Vec<String> {
        match server.primary().entry(&fair_queue_key(KEY)).map(|entry| &entry.value) {
            Some(RedisValue::List(items)) => items.clone(),
            _ => Vec::new(),
        }
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, extend: bool, mutants: &FamilyMutants) -> RedissonConfig {
        RedissonConfig {
            fair_thread_wait_ms: u64::from(REDISSON_FAIR_SLOT_TICKS) * ms_per_tick,
            ..<RedissonLock as ModelFamily>::config(ttl_ticks, ms_per_tick, extend, mutants)
        }
    }

    fn server(fault: Fault) -> RedisServer {
        <RedissonLock as ModelFamily>::server(fault)
    }

    fn describe_lock(config: &RedissonConfig, _extend: bool) -> String {
        let mut mutants = Vec::new();
        if config.mutants.watchdog_stops_after_a_failed_renewal {
            mutants.push(", mutant: the watchdog stops after a failed renewal (redisson/redisson#775)");
        }
        if config.mutants.fair_acquire_ignores_the_queue {
            mutants.push(", mutant: the acquire runs the RLock's script, ignoring the queue");
        }
        format!(
            "redisson-fair (fair lock: hash lock, queue of waiters with deadlines on the clients' clocks, watchdog, the first waiter woken by the unlock message{})",
            mutants.concat()
        )
    }

    fn describe_timing(config: &RedissonConfig) -> String {
        format!(
            "lease (lockWatchdogTimeout) {REDISSON_LEASE_TICKS} ticks renewed every {} ms, threadWaitTime {} ms, drift {} ppm; a waiter sleeps until its turn is due or the unlock message",
            config.renew_every_ms(),
            config.fair_thread_wait_ms,
            cassalock::algo::redis::redisson::DRIFT_PPM
        )
    }

    fn counted_from_us(lease: &RedissonLease) -> Option<u64> {
        Some(lease.set_sent_at_us)
    }

    fn describe_fault(fault: Fault) -> String {
        <RedissonLock as ModelFamily>::describe_fault(fault)
    }

    fn matrix_line(fault: Fault) -> MatrixLine {
        MatrixLine {
            // F-order needs a client that comes back to a queue another waits in: 2 x 1 has none.
            also: (fault == Fault::None).then_some((2, "model, no fault, 2 clients x 2 acquisitions (F-order)")),
            ..MatrixLine::default()
        }
    }

    fn lane(lease: &RedissonLease, config: &RedissonConfig) -> Option<Watchdog> {
        <RedissonFairLock as FamilyLock>::renewal(lease, config)
    }

    fn lane_ended(output: <Watchdog as Machine>::Output) -> RenewalEnd {
        <RedissonFairLock as FamilyLock>::renewal_ended(output)
    }

    fn lane_lease(lane: &Watchdog) -> RedissonLease {
        <RedissonFairLock as FamilyLock>::renewed_lease(lane)
    }
}

/// Redisson's fenced lock: the RLock whose acquire also counts a token up, with the RLock's
/// lease, watchdog and faults. The model checks C-token besides the RLock's claims, and its
/// resource fences with the token.
impl ModelFamily for RedissonFencedLock {
    type Server = RedisServer;
    type Lane = Watchdog;
    const MODEL: &'static str = "redisson-fenced";
    const LOCK: Option<Lock> = Some(Lock::RedissonFenced);
    const HELP: &'static str =
        "Redisson's fenced lock: the RLock with a token counted up by every acquisition (C-token besides the RLock's claims)";
    const TTL_TICKS: u8 = REDISSON_LEASE_TICKS;
    const RENEWAL_LANE: bool = true;
    const FENCING: bool = true;

    fn supports(fault: Fault) -> bool {
        RedissonLock::supports(fault)
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, extend: bool, mutants: &FamilyMutants) -> RedissonConfig {
        <RedissonLock as ModelFamily>::config(ttl_ticks, ms_per_tick, extend, mutants)
    }

    fn server(fault: Fault) -> RedisServer {
        <RedissonLock as ModelFamily>::server(fault)
    }

    fn describe_lock(_config: &RedissonConfig, _extend: bool) -> String {
        "redisson-fenced (RFencedLock: the RLock's hash, watchdog and unlock message, and a token counter the acquire counts up; the resource refuses a token below the highest it has seen)".to_owned()
    }

    fn describe_timing(config: &RedissonConfig) -> String {
        <RedissonLock as ModelFamily>::describe_timing(config)
    }

    fn counted_from_us(lease: &RedissonLease) -> Option<u64> {
        Some(lease.set_sent_at_us)
    }

    fn describe_fault(fault: Fault) -> String {
        match fault {
            Fault::Restart => "the server may restart without persistence (the counter with it)".to_owned(),
            Fault::Failover => {
                "the replica may be promoted before it has the primary's writes (the counter's too)".to_owned()
            }
            other => <RedissonLock as ModelFamily>::describe_fault(other),
        }
    }

    fn lane(lease: &RedissonLease, config: &RedissonConfig) -> Option<Watchdog> {
        <RedissonFencedLock as FamilyLock>::renewal(lease, config)
    }

    fn lane_ended(output: <Watchdog as Machine>::Output) -> RenewalEnd {
        <RedissonFencedLock as FamilyLock>::renewal_ended(output)
    }

    fn lane_lease(lane: &Watchdog) -> RedissonLease {
        <RedissonFencedLock as FamilyLock>::renewed_lease(lane)
    }
}

/// Every lock of the registry that has a family model: the one list the command line and the
/// matrix read (a lock is added to the model checker by its [`ModelFamily`] impl and a line
/// here).
pub fn registered_models() -> [RegisteredModel; 9] {
    use cassalock::algo::family::{CuratorLock, EtcdLock};
    [
        RegisteredModel::of::<SetNxLock>(),
        RegisteredModel::of::<SetNxExpireLock>(),
        RegisteredModel::of::<RedlockLock>(),
        RegisteredModel::of::<MemcachedLock>(),
        RegisteredModel::of::<RedissonLock>(),
        RegisteredModel::of::<RedissonFairLock>(),
        RegisteredModel::of::<RedissonFencedLock>(),
        RegisteredModel::of::<CuratorLock>(),
        RegisteredModel::of::<EtcdLock>(),
    ]
}
