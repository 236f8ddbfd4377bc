//! Redisson's `RLock` as its scenarios (`redisson.toml`: lost unlock messages, a failover
//! during renewal, a paused process, a failed renewal, redisson/redisson#775) build it: its
//! watchdog on (`lock()` without a lease time), waiters woken by the unlock message, which the
//! simulated server publishes over the network. The fair and the fenced lock's files build on
//! it.

use cassalock::algo::family::{RedissonFairLock, RedissonLock};
use cassalock::algo::redis::redisson::{RedissonConfig, RedissonMutants};
use cassalock::algo::redis::redisson_fenced::RedissonFencedLock;
use cassalock::registry::Lock;
use serde::Deserialize;
use std::sync::Arc;

use crate::family::sim_lock::{LockKind, Simulated, Wakeup};

/// The lock these scenarios run.
pub(super) const LOCK: Lock = Lock::Redisson;

/// A scenario's `settings` (the fair lock's too).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Settings {
    /// `lockWatchdogTimeout`: the lease, renewed every third of it.
    watchdog_timeout_ms: u64,
    /// `tryLock(waitTime, ...)`: give up after this long (absent: `lock()`, wait for ever).
    #[serde(default)]
    wait_ms: Option<u64>,
    /// A lease time given to `lock(leaseTime)` / `tryLock(waitTime, leaseTime)`: no watchdog
    /// (absent: the watchdog keeps the lock).
    #[serde(default)]
    lease_ms: Option<u64>,
    /// A real client's bugs to plant (`watchdog_stops_after_a_failed_renewal`,
    /// `fair_acquire_ignores_the_queue`).
    #[serde(default)]
    mutants: RedissonMutants,
}

impl Settings {
    fn config(self) -> RedissonConfig {
        RedissonConfig {
            watchdog_timeout_ms: self.watchdog_timeout_ms,
            wait_ms: self.wait_ms,
            lease_ms: self.lease_ms,
            mutants: self.mutants,
            ..RedissonConfig::default()
        }
    }
}

/// Which of Redisson's locks a scenario file builds.
#[derive(Clone, Copy)]
enum Kind {
    RLock,
    /// The RLock's hash and watchdog with a queue of waiters; the release tells the first
    /// waiter alone, on its own channel; Redisson's `threadWaitTime` of 5 s.
    Fair,
    /// The RLock whose acquire also counts a token up, which the resource fences with.
    Fenced,
}

/// The lock of a scenario's `settings`.
pub(super) fn lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    redisson_lock(settings, Kind::RLock)
}

/// The fair lock of a scenario's `settings`.
pub(super) fn fair_lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    redisson_lock(settings, Kind::Fair)
}

/// The fenced lock of a scenario's `settings`.
pub(super) fn fenced_lock(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
    redisson_lock(settings, Kind::Fenced)
}

/// One of Redisson's locks, each with its watchdog on unless a lease time is given, its
/// waiters woken by the unlock message.
fn redisson_lock(settings: toml::Table, kind: Kind) -> Result<LockKind, toml::de::Error> {
    let settings: Settings = toml::Value::Table(settings).try_into()?;
    let config = settings.config();
    let renew_every_ms = config.watchdog().then(|| config.renew_every_ms());
    let lease_ms = config.lease_ms();
    Ok(match kind {
        Kind::RLock => Arc::new(Simulated::<RedissonLock> {
            renew_every_ms,
            wakeup: Wakeup::UnlockMessage,
            ..Simulated::new(config, lease_ms)
        }),
        Kind::Fair => Arc::new(Simulated::<RedissonFairLock> {
            renew_every_ms,
            wakeup: Wakeup::UnlockMessage,
            fair: true,
            ..Simulated::new(config, lease_ms)
        }),
        Kind::Fenced => Arc::new(Simulated::<RedissonFencedLock> {
            renew_every_ms,
            wakeup: Wakeup::UnlockMessage,
            fences: true,
            ..Simulated::new(config, lease_ms)
        }),
    })
}
