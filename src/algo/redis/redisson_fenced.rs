//! Redisson's fenced lock (`RedissonFencedLock`, an `RFencedLock`): the RLock with a fencing
//! token, a counter that grows with every hold, so that a resource can refuse a holder that
//! has been overtaken.
//!
//! The machines are the RLock's ([`super::redisson`]) switched to the fenced acquire
//! ([`RedissonAcquire::fenced`]); the release, the wait and the watchdog are the RLock's. What
//! differs is one script of [`crate::store::redis_keyspace`]:
//!
//! - **G1 acquire.** Beside the hash `key` the lock keeps a counter, `redisson_lock_token:{key}`,
//!   with no expiry. When the lock is free or ours, the script counts it up (`INCR`) and then
//!   does what the RLock's acquire does; it answers `[-1, token]`. Otherwise `[PTTL, -1]`, the
//!   holder's remaining lease, which the waiter sleeps on as the RLock's does. Re-entry counts
//!   the token up too (the family API does not re-enter). `lockAndGetToken()` hands the token to
//!   the caller; the caller passes it with every write to the resource it guards, and the
//!   resource refuses a token below the highest it has seen.
//!
//! Ours: after an acquire whose reply was lost (the script may have run), the RLock's machine
//! reads its hold count instead of running the script again. The count would not give the
//! token, and running the script again would count a second hold and a second token (the one
//! release the caller makes would leave the lock held until its lease runs out). So the fenced
//! acquire gives up there: the call fails, and a hold it may have taken expires with its lease,
//! as when Redisson's own call times out and throws.
//!
//! What fencing does not cover:
//!
//! - **The counter lives on the same server as the lock.** A restart without persistence loses
//!   both, and tokens start again from 1: a resource that saw a higher token refuses the next
//!   holder's writes, though it holds the lock (C-token's other half: the only holder refused).
//!   A failover to a replica that had not yet received the last `INCR` hands out a token again.
//! - **It protects the resource, not the holder's belief.** A holder paused past its lease still
//!   believes it holds the lock (T1-belief); its write, once it resumes, is refused (T1-resource
//!   kept) only where the resource checks the token.

use super::redisson::{
    self, fence_text, RedissonAcquire, RedissonAcquired, RedissonConfig, RedissonLease, RedissonRelease,
    RedissonReleased, Renewed, Watchdog, WatchdogEnd,
};
use super::set_nx::Patience;
use crate::algo::family::{Acquisition, Extension, FamilyLock, LockConfigError, RedissonLock, Release, RenewalEnd};
use crate::algo::server_holder::{ServerHolder, ServerNow};
use crate::store::redis_keyspace::{
    fenced_token_key, redis_integer, RedisCommand, RedisKeyspace, RedisReply, RedisValue,
};

/// The fenced lock's acquire: `once` for `try_lock`.
pub fn acquire(key: &str, owner: &str, once: bool) -> RedissonAcquire {
    RedissonAcquire::fenced(key, owner, once)
}

/// Who the server says holds `key`, named by the token its counter last gave: while a holder
/// holds the hash, nobody else counts the token up, so the counter is the holder's token.
/// Nobody when the hash is not live or the counter cannot be read.
pub fn holder_on_server(keyspace: &RedisKeyspace, key: &str, server_now_ms: u64) -> ServerHolder {
    let holder = super::redisson::holder_on_server(keyspace, key, server_now_ms);
    if holder.token().is_none() {
        return ServerHolder::Nobody;
    }
    let counter = keyspace
        .live_entry(&fenced_token_key(key), server_now_ms)
        .and_then(|entry| match &entry.value {
            RedisValue::Text(text) => redis_integer(text),
            _ => None,
        });
    match counter {
        Some(token) => ServerHolder::token_until(&fence_text(token), holder.gone_at_us()),
        None => ServerHolder::Nobody,
    }
}

/// Redisson's fenced lock as the family driver runs it: the RLock whose acquire also
/// counts a token up; its token, not its owner field, is what the resource sees, so a resource
/// can fence with it. Everything but the acquire and the holder's naming is the RLock's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RedissonFencedLock;

impl FamilyLock for RedissonFencedLock {
    const NAME: &'static str = "redisson-fenced";

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
        acquire(key, token, patience == Patience::Once)
    }

    /// As the RLock's; a failed call may leave a hold until its lease ends (the fenced acquire
    /// gives up after an attempt that may have run: see the module).
    fn acquired(output: RedissonAcquired) -> Acquisition<RedissonLease> {
        RedissonLock::acquired(output)
    }

    fn notification_channel(key: &str, token: &str) -> Option<String> {
        RedissonLock::notification_channel(key, token)
    }

    fn extend(lease: RedissonLease) -> redisson::RenewOnce {
        RedissonLock::extend(lease)
    }

    fn extended(old: &RedissonLease, output: Renewed) -> Extension<RedissonLease> {
        RedissonLock::extended(old, output)
    }

    fn release(lease: RedissonLease) -> RedissonRelease {
        RedissonLock::release(lease)
    }

    fn released(output: RedissonReleased) -> Release {
        RedissonLock::released(output)
    }

    fn valid_until_us(lease: &RedissonLease, config: &RedissonConfig) -> u64 {
        RedissonLock::valid_until_us(lease, config)
    }

    /// The token the acquire script counted up (the owner field only if a lease came from
    /// another lock's acquire, which the machines never hand this lock).
    fn token(lease: &RedissonLease) -> &str {
        debug_assert!(lease.fence.is_some(), "a fenced lease carries its token");
        lease.fence.as_deref().unwrap_or(&lease.owner)
    }

    fn holder_on_servers(servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        let (keyspace, now_ms) = ServerNow::redis(servers)?;
        Some(holder_on_server(keyspace, key, now_ms))
    }

    fn check(config: &RedissonConfig) -> Result<(), LockConfigError> {
        RedissonLock::check(config)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redis_keyspace::{RedisCommand, RedisReply};

    #[test]
    fn the_server_names_the_holder_by_the_token_its_counter_last_gave() {
        let mut server = RedisKeyspace::new();
        let acquire = |owner: &str| RedisCommand::RedissonFencedAcquire {
            key: "L".into(),
            token_key: fenced_token_key("L"),
            owner: owner.into(),
            lease_ms: 100,
        };
        assert_eq!(holder_on_server(&server, "L", 0), ServerHolder::Nobody);
        assert_eq!(server.apply(&acquire("a"), 0), RedisReply::Pair(-1, 1));
        let holder = holder_on_server(&server, "L", 50);
        assert_eq!(holder.token(), Some(fence_text(1).as_str()));
        assert_eq!(
            holder.gone_at_us(),
            Some(100_001),
            "live through its expiry's millisecond"
        );
        // The lease runs out: nobody, though the counter stays; the next holder is token 2.
        assert_eq!(holder_on_server(&server, "L", 101), ServerHolder::Nobody);
        assert_eq!(server.apply(&acquire("b"), 101), RedisReply::Pair(-1, 2));
        assert_eq!(
            holder_on_server(&server, "L", 150).token(),
            Some(fence_text(2).as_str())
        );
    }

    /// A counter Redis would not count up (`+5`) names nobody, as the key space reads it.
    #[test]
    fn a_counter_redis_cannot_read_names_nobody() {
        let mut server = RedisKeyspace::new();
        server.apply(
            &RedisCommand::RedissonAcquire {
                key: "L".into(),
                owner: "a".into(),
                lease_ms: 100,
            },
            0,
        );
        server.apply(&RedisCommand::set_nx_px(fenced_token_key("L"), "+5", 1_000), 0);
        assert_eq!(holder_on_server(&server, "L", 10), ServerHolder::Nobody);
    }

    #[test]
    fn tokens_sort_as_they_grow() {
        assert!(fence_text(9) < fence_text(10));
        assert!(fence_text(99_999) < fence_text(100_000));
        assert_eq!(fence_text(7).len(), 20);
        assert!(fence_text(-1) < fence_text(0));
    }
}
