//! Redis's key space, written once: the commands and atomic scripts the Redis lock recipes use.
//!
//! Every lock of the Redis family (`SET NX PX` with a compare-and-delete release, Redisson's
//! reentrant RLock, Redlock's N independent masters) is a client talking to one or more key
//! spaces. The simulator's servers, the model checker's server actors and the tests keep their
//! data in a [`RedisKeyspace`], so the rules below exist in exactly one place. The type owns no
//! clock, does no I/O and draws no random numbers: every call where time matters takes
//! `server_now_ms`, the reading of the *server's* clock.
//!
//! The rules, and why each matters for a lock:
//!
//! - **Expiry is an absolute instant on the server's clock.** `SET ... PX ttl_ms` and `PEXPIRE`
//!   fix `expires_at_ms = server_now_ms + ttl_ms` when the server runs the command; the key is
//!   live while `server_now_ms <= expires_at_ms` (Redis judges a key expired only once its clock
//!   is *past* the instant) and then behaves as absent for every command. A lock's lease is
//!   therefore measured by the server's clock, not the holder's: a server clock that jumps forward
//!   frees the lock early (Kleppmann's first Redlock case).
//! - **Lazy expiry.** An expired key stays stored until a command touches it or
//!   [`RedisKeyspace::purge_expired`] runs; the command then deletes it and reports a
//!   [`RedisEffect::Del`], as the Redis primary synthesises a `DEL` for its replicas. Replicas never
//!   expire keys on their own (they wait for that `DEL`), which is what keeps a replica's stored
//!   data equal to the primary's whatever their clocks say (see
//!   [`crate::store::redis_replication`]).
//! - **Overwriting clears the TTL, altering keeps it.** `SET` without `KEEPTTL` discards any
//!   previous expiry; `HINCRBY` changes a hash in place and leaves its expiry alone. The Redisson
//!   scripts always follow `HINCRBY` with `PEXPIRE`, so for them the order does not matter; a
//!   recipe that increments without re-arming the TTL would keep the old lease.
//! - **`SET NX` on a live key does nothing and replies nil**; on an expired key it succeeds: an
//!   expired lease is a free lock.
//! - **`PEXPIRE` replies 0 on a missing key** (an extend of a lock that already expired is told
//!   so), and a non-positive timeout (`PEXPIRE key 0`) deletes the key instead of expiring it.
//! - **`PTTL`**: -2 for a missing key, -1 for a key without expiry, else the remaining
//!   milliseconds (0 at the expiry instant itself).
//! - **Scripts run atomically, without rollback.** A script sees one clock reading for its whole
//!   run; if one of its calls fails (`WRONGTYPE`, an overflow, an expiry past the server's range)
//!   the script stops with that error but the writes it already made stay, as in Redis.
//!
//! The scripts, each written here from the facts of its recipe (no Lua or Java is copied):
//!
//! - [`RedisCommand::DeleteIfEquals`]: the `SET NX` lock's release. Delete the key only when its
//!   string value equals the caller's token; 1 when deleted, else 0.
//! - [`RedisCommand::PExpireIfEquals`]: its extension. Reset the TTL only when the value equals
//!   the token; 1 when reset, else 0.
//! - [`RedisCommand::RedissonAcquire`]: the lock is a hash `field -> hold count` where the field
//!   names the owner (Redisson: client id and thread id). If the key is absent, or its hash holds
//!   our field, increment our count and set the expiry to the lease: reply nil (acquired).
//!   Otherwise reply the key's `PTTL` (how long the current holder's lease still runs), which
//!   Redisson uses as its wait.
//! - [`RedisCommand::RedissonFencedAcquire`]: Redisson's `RFencedLock` (checked against its
//!   source as of 2024): the same hash, and beside it a counter without expiry
//!   ([`fenced_token_key`]). When the lock is free or ours, `INCR` the counter first (on every
//!   acquisition and every re-entry), then as the RLock's acquire; reply `[-1, token]`.
//!   Otherwise `[PTTL, -1]`. A restart without persistence loses the counter with the lock, so
//!   tokens start again from 1: a resource that fences then refuses the next holder.
//! - [`RedisCommand::RedissonRenew`]: the watchdog's renewal. If our field is present, reset the
//!   expiry to the lease and reply 1, else 0 (the watchdog stops).
//! - [`RedisCommand::RedissonRelease`]: if our field is absent reply nil (not ours: Redisson
//!   raises `IllegalMonitorStateException`); else decrement our count; still above 0: reset the
//!   expiry and reply 0 (held again, reentrantly); at 0: delete the key, publish the unlock
//!   message on the lock's channel and reply 1. The publication is returned in
//!   [`Executed::published`] so a driver can deliver it, lose it or delay it. This is the
//!   release of recent Redisson 3.x (checked against 3.45.1); early versions instead published
//!   and replied 1 when the key was missing altogether, and 3.45.1 also records each release's
//!   outcome under a request id so a retried release is answered the same (not modelled).
//!
//! - Redisson's fair lock ([`RedisCommand::RedissonFairAcquire`], `RedissonFairRelease`,
//!   `RedissonFairGiveUp`) keeps the same hash and two more keys beside it: the waiters' queue, a
//!   list ([`fair_queue_key`]), and each waiter's deadline, a sorted set ([`fair_timeouts_key`]),
//!   scored in milliseconds of the *clients'* clocks (Redisson passes the caller's
//!   `currentTimeMillis`, not the server's time). Every fair script first drops the waiters at
//!   the head of the queue whose deadline has passed on the caller's clock. The acquire takes the
//!   lock when it is free and the queue is empty or starts with us (leaving the queue, and
//!   moving every other waiter's deadline `thread_wait_ms` earlier); re-enters when ours;
//!   otherwise answers how long to wait: a queued waiter's own deadline less `thread_wait_ms`,
//!   or, for a newcomer, the last waiter's deadline (or the lock's `PTTL` when nobody waits)
//!   after joining the queue with that plus `thread_wait_ms` as its deadline. The release
//!   counts down as the RLock's, and when the lock is free afterwards (or already was) tells
//!   the first waiter on its own channel (`channel:owner`); it answers 1 both when it freed the
//!   lock and when the lock key was already gone, so the caller cannot tell the two apart. The
//!   give-up (a `tryLock` whose wait time ran out) leaves the queue and moves the deadlines of
//!   the waiters behind it `thread_wait_ms` earlier.
//!
//! With only these commands a hash always holds one field, with a count above 0: the key of an
//! RLock is created by its first holder and deleted when that holder's count reaches 0; a queue
//! or a sorted set is never stored empty. Every command but the fair lock's touches exactly one
//! key (those touch the lock's three, [`RedisCommand::keys`]), and produces at most
//! [`MAX_EFFECTS_PER_COMMAND`] effects.

use std::collections::BTreeMap;

mod commands;
pub use commands::*;

/// What Redisson publishes on a lock's channel when a release frees the lock: its unlock
/// message is the number 0 (the channel, not the message, says which lock).
pub const UNLOCK_MESSAGE: &str = "0";

/// The most effects one command produces: a script acquiring over an expired key deletes it,
/// increments a field and sets the expiry; the fair lock's acquire also rewrites its queue and
/// its sorted set of deadlines. A replication stream reserves this much per command.
pub const MAX_EFFECTS_PER_COMMAND: usize = 5;

/// The greatest expiry instant Redis accepts: it keeps expiry instants as signed 64-bit
/// milliseconds and rejects a command whose instant would not fit.
pub const MAX_EXPIRES_AT_MS: u64 = i64::MAX as u64;

/// A Redis key space: keys to strings or counter hashes, with expiry instants on the server's
/// clock. See the module documentation for the rules.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedisKeyspace {
    entries: BTreeMap<String, RedisEntry>,
}

impl RedisKeyspace {
    pub fn new() -> Self {
        Self::default()
    }

    /// Run one command at `server_now_ms` and return only its reply.
    pub fn apply(&mut self, command: &RedisCommand, server_now_ms: u64) -> RedisReply {
        self.execute(command, server_now_ms).reply
    }

    /// Run one command at `server_now_ms`: its reply, the writes it made and what it published.
    pub fn execute(&mut self, command: &RedisCommand, server_now_ms: u64) -> Executed {
        let mut run = Run {
            entries: &mut self.entries,
            effects: Vec::new(),
            published: Vec::new(),
        };
        let reply = run.command(command, server_now_ms);
        let Run { effects, published, .. } = run;
        debug_assert!(
            effects.len() <= MAX_EFFECTS_PER_COMMAND,
            "{command:?} made {} effects, more than MAX_EFFECTS_PER_COMMAND ({MAX_EFFECTS_PER_COMMAND})",
            effects.len()
        );
        debug_assert!(
            {
                let keys = command.keys();
                effects.iter().all(|effect| keys.iter().any(|key| key == effect.key()))
            },
            "{command:?} wrote a key it does not name: {effects:?}"
        );
        // A command that ran (an argument error stops one before it looks its key up) leaves
        // its key live or absent.
        debug_assert!(
            matches!(reply, RedisReply::Error(_))
                || self
                    .entries
                    .get(command.key())
                    .is_none_or(|entry| entry.is_live_at(server_now_ms)),
            "{command:?} left its key stored but expired at {server_now_ms}"
        );
        self.debug_check_invariant();
        Executed {
            reply,
            effects,
            published,
        }
    }

    /// Apply one command's effects, as a replica does: no clock, no expiry of its own. The
    /// effects must come from a primary whose data equalled this key space before the command.
    pub fn apply_effects(&mut self, effects: &[RedisEffect]) {
        for effect in effects {
            match effect {
                RedisEffect::Set {
                    key,
                    value,
                    expires_at_ms,
                } => {
                    self.entries.insert(
                        key.clone(),
                        RedisEntry {
                            value: RedisValue::Text(value.clone()),
                            expires_at_ms: *expires_at_ms,
                        },
                    );
                }
                RedisEffect::HIncrBy { key, field, by } => {
                    let entry = self.entries.entry(key.clone()).or_insert_with(|| RedisEntry {
                        value: RedisValue::Hash(BTreeMap::new()),
                        expires_at_ms: None,
                    });
                    match &mut entry.value {
                        RedisValue::Hash(counters) => {
                            let counter = counters.entry(field.clone()).or_insert(0);
                            debug_assert!(
                                counter.checked_add(*by).is_some(),
                                "replicated HINCRBY {key} {field} {by} overflows {counter}: the primary would have refused it"
                            );
                            *counter = counter.saturating_add(*by);
                        }
                        other => debug_assert!(
                            false,
                            "replicated HINCRBY on {key} holding {other:?}: the stream does not match this key space"
                        ),
                    }
                }
                RedisEffect::Put { key, value } => {
                    self.entries.insert(
                        key.clone(),
                        RedisEntry {
                            value: value.clone(),
                            expires_at_ms: None,
                        },
                    );
                }
                RedisEffect::ExpireAt { key, expires_at_ms } => match self.entries.get_mut(key) {
                    Some(entry) => entry.expires_at_ms = Some(*expires_at_ms),
                    None => debug_assert!(
                        false,
                        "replicated PEXPIREAT on the missing key {key}: the stream does not match this key space"
                    ),
                },
                RedisEffect::Del { key } => {
                    let removed = self.entries.remove(key);
                    debug_assert!(
                        removed.is_some(),
                        "replicated DEL of the missing key {key}: the stream does not match this key space"
                    );
                }
            }
        }
        self.debug_check_invariant();
    }

    /// Delete every key expired at `server_now_ms` (Redis's active expiry cycle, done fully)
    /// and return the `DEL` effects, in key order.
    pub fn purge_expired(&mut self, server_now_ms: u64) -> Vec<RedisEffect> {
        let mut effects = Vec::new();
        self.entries.retain(|key, entry| {
            let live = entry.is_live_at(server_now_ms);
            if !live {
                effects.push(RedisEffect::Del { key: key.clone() });
            }
            live
        });
        debug_assert!(
            self.entries.values().all(|entry| entry.is_live_at(server_now_ms)),
            "purge_expired left an expired key behind"
        );
        effects
    }

    /// A crash and restart of this server: with [`Persistence::None`] every key is gone, with
    /// [`Persistence::EveryWrite`] nothing is. Expiry instants are absolute, so a key whose
    /// instant passed while the server was down is expired when it comes back.
    pub fn crash_restart(&mut self, persistence: Persistence) {
        match persistence {
            Persistence::None => self.entries.clear(),
            Persistence::EveryWrite => {}
        }
    }

    /// The stored entry of `key`, live or not.
    pub fn entry(&self, key: &str) -> Option<&RedisEntry> {
        self.entries.get(key)
    }

    /// The entry of `key` if it is live at `server_now_ms`: what every command sees.
    pub fn live_entry(&self, key: &str, server_now_ms: u64) -> Option<&RedisEntry> {
        self.entries.get(key).filter(|entry| entry.is_live_at(server_now_ms))
    }

    /// Every stored entry, live or not, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &RedisEntry)> {
        self.entries.iter().map(|(key, entry)| (key.as_str(), entry))
    }

    /// Every entry live at `server_now_ms`, in key order: the key space as a client observes it.
    pub fn live_entries(&self, server_now_ms: u64) -> impl Iterator<Item = (&str, &RedisEntry)> {
        self.entries().filter(move |(_, entry)| entry.is_live_at(server_now_ms))
    }

    /// Number of stored keys (live or not).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Debug builds: every hash holds at least one counter, every counter is above 0 (the
    /// scripts delete a lock's key when its count reaches 0), every expiry fits Redis's range.
    fn debug_check_invariant(&self) {
        if cfg!(debug_assertions) {
            for (key, entry) in &self.entries {
                match &entry.value {
                    RedisValue::Hash(counters) => {
                        assert!(!counters.is_empty(), "the hash {key} is stored empty");
                        assert!(
                            counters.values().all(|count| *count > 0),
                            "the hash {key} holds a count at or below 0: {counters:?}"
                        );
                    }
                    RedisValue::List(items) => assert!(!items.is_empty(), "the list {key} is stored empty"),
                    RedisValue::SortedSet(scores) => {
                        assert!(!scores.is_empty(), "the sorted set {key} is stored empty")
                    }
                    RedisValue::Text(_) => {}
                }
                assert!(
                    entry.expires_at_ms.is_none_or(|at| at <= MAX_EXPIRES_AT_MS),
                    "the key {key} expires past Redis's range: {entry:?}"
                );
            }
        }
    }
}

/// One command's run: the data it works on and what it has done so far. The primitives below
/// are the Redis commands a script calls; a script is a sequence of them in plain Rust.
struct Run<'a> {
    entries: &'a mut BTreeMap<String, RedisEntry>,
    effects: Vec<RedisEffect>,
    published: Vec<Published>,
}

impl Run<'_> {
    fn command(&mut self, command: &RedisCommand, now_ms: u64) -> RedisReply {
        match self.try_command(command, now_ms) {
            Ok(reply) => reply,
            Err(error) => RedisReply::Error(error),
        }
    }

    fn try_command(&mut self, command: &RedisCommand, now_ms: u64) -> Result<RedisReply, RedisError> {
        match command {
            RedisCommand::Set {
                key,
                value,
                only_if_absent,
                ttl_ms,
            } => {
                // Redis checks the expire argument before it looks the key up.
                let expires_at_ms = match ttl_ms {
                    None => None,
                    Some(0) => return Err(RedisError::InvalidExpireTime),
                    Some(ttl_ms) => Some(expiry_instant_ms(now_ms, *ttl_ms)?),
                };
                self.expire_if_needed(key, now_ms);
                if *only_if_absent && self.entries.contains_key(key) {
                    return Ok(RedisReply::Nil);
                }
                self.set(key, value, expires_at_ms);
                Ok(RedisReply::Ok)
            }
            RedisCommand::Get { key } => {
                self.expire_if_needed(key, now_ms);
                Ok(self.get(key)?.map_or(RedisReply::Nil, RedisReply::Bulk))
            }
            RedisCommand::Del { key } => {
                self.expire_if_needed(key, now_ms);
                Ok(RedisReply::Integer(i64::from(self.del(key))))
            }
            RedisCommand::PExpire { key, ttl_ms } => {
                // The expire argument is checked before the key is looked up, as in Redis.
                let expires_at_ms = expiry_instant_ms(now_ms, *ttl_ms)?;
                self.expire_if_needed(key, now_ms);
                Ok(RedisReply::Integer(i64::from(self.pexpire_at(
                    key,
                    expires_at_ms,
                    now_ms,
                ))))
            }
            RedisCommand::PTtl { key } => {
                self.expire_if_needed(key, now_ms);
                Ok(RedisReply::Integer(self.pttl(key, now_ms)))
            }
            RedisCommand::HGet { key, field } => {
                self.expire_if_needed(key, now_ms);
                Ok(match self.hash(key)?.and_then(|counters| counters.get(field)) {
                    Some(count) => RedisReply::Integer(*count),
                    None => RedisReply::Nil,
                })
            }
            RedisCommand::DeleteIfEquals { key, token } => {
                self.expire_if_needed(key, now_ms);
                if self.get(key)?.as_deref() == Some(token.as_str()) {
                    Ok(RedisReply::Integer(i64::from(self.del(key))))
                } else {
                    Ok(RedisReply::Integer(0))
                }
            }
            RedisCommand::PExpireIfEquals { key, token, ttl_ms } => {
                self.expire_if_needed(key, now_ms);
                if self.get(key)?.as_deref() == Some(token.as_str()) {
                    let expires_at_ms = expiry_instant_ms(now_ms, *ttl_ms)?;
                    Ok(RedisReply::Integer(i64::from(self.pexpire_at(
                        key,
                        expires_at_ms,
                        now_ms,
                    ))))
                } else {
                    Ok(RedisReply::Integer(0))
                }
            }
            RedisCommand::RedissonAcquire { key, owner, lease_ms } => {
                self.redisson_acquire(key, owner, *lease_ms, now_ms)
            }
            RedisCommand::RedissonFencedAcquire {
                key,
                token_key,
                owner,
                lease_ms,
            } => self.redisson_fenced_acquire(key, token_key, owner, *lease_ms, now_ms),
            RedisCommand::RedissonRenew { key, owner, lease_ms } => self.redisson_renew(key, owner, *lease_ms, now_ms),
            RedisCommand::RedissonRelease {
                key,
                owner,
                lease_ms,
                channel,
            } => self.redisson_release(key, owner, *lease_ms, channel, now_ms),
            RedisCommand::RedissonFairAcquire {
                key,
                owner,
                lease_ms,
                thread_wait_ms,
                client_now_ms,
            } => self.redisson_fair_acquire(key, owner, *lease_ms, *thread_wait_ms, *client_now_ms, now_ms),
            RedisCommand::RedissonFairRelease {
                key,
                owner,
                lease_ms,
                channel,
                client_now_ms,
            } => self.redisson_fair_release(key, owner, *lease_ms, channel, *client_now_ms, now_ms),
            RedisCommand::RedissonFairGiveUp {
                key,
                owner,
                thread_wait_ms,
            } => self.redisson_fair_give_up(key, owner, *thread_wait_ms, now_ms),
        }
    }

    /// Redisson's acquire script: free or ours, count one more hold; else the holder's PTTL.
    fn redisson_acquire(
        &mut self,
        key: &str,
        owner: &str,
        lease_ms: u64,
        now_ms: u64,
    ) -> Result<RedisReply, RedisError> {
        self.expire_if_needed(key, now_ms);
        // Free, or already ours (reentrant): count one more hold and arm the lease.
        // `hexists` is asked only when the key exists, so a string key is WRONGTYPE.
        if !self.entries.contains_key(key) || self.hexists(key, owner)? {
            self.hincrby(key, owner, 1)?;
            let expires_at_ms = expiry_instant_ms(now_ms, lease_ms)?;
            self.pexpire_at(key, expires_at_ms, now_ms);
            return Ok(RedisReply::Nil);
        }
        // Held by someone else: how long their lease still runs.
        Ok(RedisReply::Integer(self.pttl(key, now_ms)))
    }

    /// Redisson `RFencedLock`'s acquire script: as the RLock's, with the token counted up first
    /// when the lock is free or ours; `(-1, token)`, else `(PTTL, -1)`. As in Redis, a script's
    /// writes before an error stay: a count that overflows leaves the token counted up.
    fn redisson_fenced_acquire(
        &mut self,
        key: &str,
        token_key: &str,
        owner: &str,
        lease_ms: u64,
        now_ms: u64,
    ) -> Result<RedisReply, RedisError> {
        self.expire_if_needed(key, now_ms);
        self.expire_if_needed(token_key, now_ms);
        if !self.entries.contains_key(key) || self.hexists(key, owner)? {
            let token = self.incr(token_key)?;
            self.hincrby(key, owner, 1)?;
            let expires_at_ms = expiry_instant_ms(now_ms, lease_ms)?;
            self.pexpire_at(key, expires_at_ms, now_ms);
            return Ok(RedisReply::Pair(-1, token));
        }
        Ok(RedisReply::Pair(self.pttl(key, now_ms), -1))
    }

    /// Redisson's renewal script: re-arm the lease if the field is ours.
    fn redisson_renew(&mut self, key: &str, owner: &str, lease_ms: u64, now_ms: u64) -> Result<RedisReply, RedisError> {
        self.expire_if_needed(key, now_ms);
        if self.hexists(key, owner)? {
            let expires_at_ms = expiry_instant_ms(now_ms, lease_ms)?;
            self.pexpire_at(key, expires_at_ms, now_ms);
            Ok(RedisReply::Integer(1))
        } else {
            Ok(RedisReply::Integer(0))
        }
    }

    /// Redisson's release script: one hold less; the last one deletes the key and publishes.
    fn redisson_release(
        &mut self,
        key: &str,
        owner: &str,
        lease_ms: u64,
        channel: &str,
        now_ms: u64,
    ) -> Result<RedisReply, RedisError> {
        self.expire_if_needed(key, now_ms);
        if !self.hexists(key, owner)? {
            return Ok(RedisReply::Nil); // not ours: nothing changes
        }
        let remaining = self.hincrby(key, owner, -1)?;
        if remaining > 0 {
            // A reentrant hold is left: the lock stays ours, with a fresh lease.
            let expires_at_ms = expiry_instant_ms(now_ms, lease_ms)?;
            self.pexpire_at(key, expires_at_ms, now_ms);
            Ok(RedisReply::Integer(0))
        } else {
            self.del(key);
            self.published.push(Published {
                channel: channel.to_owned(),
                message: UNLOCK_MESSAGE.to_owned(),
            });
            Ok(RedisReply::Integer(1))
        }
    }

    /// The fair lock's acquire script: stale waiters dropped first, kept dropped whatever follows.
    fn redisson_fair_acquire(
        &mut self,
        key: &str,
        owner: &str,
        lease_ms: u64,
        thread_wait_ms: u64,
        client_now_ms: u64,
        now_ms: u64,
    ) -> Result<RedisReply, RedisError> {
        let mut fair = self.fair(key, now_ms)?;
        fair.drop_stale_waiters(client_now_ms);
        // What was dropped stays dropped whatever the rest does (no rollback).
        let reply = self.fair_acquire(&mut fair, key, owner, lease_ms, thread_wait_ms, client_now_ms, now_ms);
        self.store_fair(fair);
        reply
    }

    /// The fair lock's release script: the first waiter left is told.
    fn redisson_fair_release(
        &mut self,
        key: &str,
        owner: &str,
        lease_ms: u64,
        channel: &str,
        client_now_ms: u64,
        now_ms: u64,
    ) -> Result<RedisReply, RedisError> {
        let mut fair = self.fair(key, now_ms)?;
        fair.drop_stale_waiters(client_now_ms);
        let reply = self.fair_release(key, owner, lease_ms, now_ms);
        if reply == Ok(RedisReply::Integer(1)) {
            if let Some(first) = fair.queue.first() {
                self.published.push(Published {
                    channel: format!("{channel}:{first}"),
                    message: UNLOCK_MESSAGE.to_owned(),
                });
            }
        }
        self.store_fair(fair);
        reply
    }

    /// The fair lock's give-up script: leave the queue; those behind move up a slot.
    fn redisson_fair_give_up(
        &mut self,
        key: &str,
        owner: &str,
        thread_wait_ms: u64,
        now_ms: u64,
    ) -> Result<RedisReply, RedisError> {
        let mut fair = self.fair(key, now_ms)?;
        let wait = i64::try_from(thread_wait_ms).unwrap_or(i64::MAX);
        let Some(at) = fair.queue.iter().position(|waiter| waiter == owner) else {
            return Ok(RedisReply::Integer(0));
        };
        // Those behind us move up a slot.
        for behind in &fair.queue[at + 1..] {
            if let Some(deadline) = fair.deadlines.get_mut(behind) {
                *deadline = deadline.saturating_sub(wait);
            }
        }
        fair.queue.retain(|waiter| waiter != owner);
        fair.deadlines.remove(owner);
        self.store_fair(fair);
        Ok(RedisReply::Integer(1))
    }

    /// The fair acquire once the stale waiters are gone, in the order of Redisson's script (an
    /// error stops it with the writes before it kept).
    #[allow(clippy::too_many_arguments)]
    fn fair_acquire(
        &mut self,
        fair: &mut FairQueue,
        key: &str,
        owner: &str,
        lease_ms: u64,
        thread_wait_ms: u64,
        client_now_ms: u64,
        now_ms: u64,
    ) -> Result<RedisReply, RedisError> {
        let wait = i64::try_from(thread_wait_ms).unwrap_or(i64::MAX);
        let now = i64::try_from(client_now_ms).unwrap_or(i64::MAX);
        let free = !self.entries.contains_key(key);
        if free && fair.queue.first().is_none_or(|first| first == owner) {
            // Our turn: leave the queue, and the others' deadlines move up a slot.
            if !fair.queue.is_empty() {
                fair.queue.remove(0);
            }
            fair.deadlines.remove(owner);
            for deadline in fair.deadlines.values_mut() {
                *deadline = deadline.saturating_sub(wait);
            }
            self.hincrby(key, owner, 1)?;
            let expires_at_ms = expiry_instant_ms(now_ms, lease_ms)?;
            self.pexpire_at(key, expires_at_ms, now_ms);
            return Ok(RedisReply::Nil);
        }
        if self.hexists(key, owner)? {
            self.hincrby(key, owner, 1)?;
            let expires_at_ms = expiry_instant_ms(now_ms, lease_ms)?;
            self.pexpire_at(key, expires_at_ms, now_ms);
            return Ok(RedisReply::Nil);
        }
        if let Some(deadline) = fair.deadlines.get(owner) {
            // Queued already: wait until our slot would begin.
            return Ok(RedisReply::Integer(deadline.saturating_sub(wait).saturating_sub(now)));
        }
        // A newcomer: after the last waiter (or the holder's lease), one slot long.
        let ttl = match fair.queue.last() {
            Some(last) if last != owner => fair.deadlines.get(last).copied().unwrap_or(now).saturating_sub(now),
            _ => self.pttl(key, now_ms),
        };
        fair.deadlines
            .insert(owner.to_owned(), ttl.saturating_add(wait).saturating_add(now));
        if !fair.queue.iter().any(|waiter| waiter == owner) {
            fair.queue.push(owner.to_owned());
        }
        Ok(RedisReply::Integer(ttl))
    }

    /// The fair release once the stale waiters are gone: 1 when the lock is free afterwards.
    fn fair_release(&mut self, key: &str, owner: &str, lease_ms: u64, now_ms: u64) -> Result<RedisReply, RedisError> {
        if !self.entries.contains_key(key) {
            return Ok(RedisReply::Integer(1));
        }
        if !self.hexists(key, owner)? {
            return Ok(RedisReply::Nil);
        }
        if self.hincrby(key, owner, -1)? > 0 {
            let expires_at_ms = expiry_instant_ms(now_ms, lease_ms)?;
            self.pexpire_at(key, expires_at_ms, now_ms);
            return Ok(RedisReply::Integer(0));
        }
        self.del(key);
        Ok(RedisReply::Integer(1))
    }

    /// A fair lock's queue and deadlines as they stand (the lock key expired first, if it
    /// has); `WRONGTYPE` when the queue or the deadlines key holds something else.
    fn fair(&mut self, key: &str, now_ms: u64) -> Result<FairQueue, RedisError> {
        self.expire_if_needed(key, now_ms);
        let queue_key = fair_queue_key(key);
        let deadlines_key = fair_timeouts_key(key);
        self.expire_if_needed(&queue_key, now_ms);
        self.expire_if_needed(&deadlines_key, now_ms);
        let queue = match self.entries.get(&queue_key).map(|entry| &entry.value) {
            None => Vec::new(),
            Some(RedisValue::List(items)) => items.clone(),
            Some(_) => return Err(RedisError::WrongType),
        };
        let deadlines = match self.entries.get(&deadlines_key).map(|entry| &entry.value) {
            None => BTreeMap::new(),
            Some(RedisValue::SortedSet(scores)) => scores.clone(),
            Some(_) => return Err(RedisError::WrongType),
        };
        Ok(FairQueue {
            queue_key,
            deadlines_key,
            original: (queue.clone(), deadlines.clone()),
            queue,
            deadlines,
        })
    }

    /// Write back what a fair script changed in its queue and deadlines (an emptied one is
    /// deleted, as Redis deletes an empty list or sorted set).
    fn store_fair(&mut self, fair: FairQueue) {
        let FairQueue {
            queue_key,
            deadlines_key,
            original,
            queue,
            deadlines,
        } = fair;
        if queue != original.0 {
            self.put_collection(&queue_key, RedisValue::List(queue));
        }
        if deadlines != original.1 {
            self.put_collection(&deadlines_key, RedisValue::SortedSet(deadlines));
        }
    }

    fn put_collection(&mut self, key: &str, value: RedisValue) {
        let empty = match &value {
            RedisValue::List(items) => items.is_empty(),
            RedisValue::SortedSet(scores) => scores.is_empty(),
            RedisValue::Text(_) | RedisValue::Hash(_) => false,
        };
        if empty {
            self.del(key);
        } else {
            self.entries.insert(
                key.to_owned(),
                RedisEntry {
                    value: value.clone(),
                    expires_at_ms: None,
                },
            );
            self.effects.push(RedisEffect::Put {
                key: key.to_owned(),
                value,
            });
        }
    }

    /// Lazy expiry: a key the command touches that has expired is deleted first, and the delete
    /// is an effect (the primary's synthesised `DEL`).
    fn expire_if_needed(&mut self, key: &str, now_ms: u64) {
        if self.entries.get(key).is_some_and(|entry| !entry.is_live_at(now_ms)) {
            self.entries.remove(key);
            self.effects.push(RedisEffect::Del { key: key.to_owned() });
        }
    }

    fn get(&self, key: &str) -> Result<Option<String>, RedisError> {
        match self.entries.get(key).map(|entry| &entry.value) {
            None => Ok(None),
            Some(RedisValue::Text(value)) => Ok(Some(value.clone())),
            Some(_) => Err(RedisError::WrongType),
        }
    }

    fn hash(&self, key: &str) -> Result<Option<&BTreeMap<String, i64>>, RedisError> {
        match self.entries.get(key).map(|entry| &entry.value) {
            None => Ok(None),
            Some(RedisValue::Hash(counters)) => Ok(Some(counters)),
            Some(_) => Err(RedisError::WrongType),
        }
    }

    fn hexists(&self, key: &str, field: &str) -> Result<bool, RedisError> {
        Ok(self.hash(key)?.is_some_and(|counters| counters.contains_key(field)))
    }

    /// `SET`: overwrites the value and the expiry.
    fn set(&mut self, key: &str, value: &str, expires_at_ms: Option<u64>) {
        self.entries.insert(
            key.to_owned(),
            RedisEntry {
                value: RedisValue::Text(value.to_owned()),
                expires_at_ms,
            },
        );
        self.effects.push(RedisEffect::Set {
            key: key.to_owned(),
            value: value.to_owned(),
            expires_at_ms,
        });
    }

    /// `INCR`: the string's integer one higher (from 0 when the key is absent), its expiry
    /// kept. Returns the new value.
    fn incr(&mut self, key: &str) -> Result<i64, RedisError> {
        let current = match self.get(key)? {
            None => 0,
            Some(text) => redis_integer(&text).ok_or(RedisError::NotAnInteger)?,
        };
        let updated = current.checked_add(1).ok_or(RedisError::Overflow)?;
        let expires_at_ms = self.entries.get(key).and_then(|entry| entry.expires_at_ms);
        self.set(key, &updated.to_string(), expires_at_ms);
        Ok(updated)
    }

    /// `HINCRBY`: alters the hash in place (creating it, without expiry, when the key is
    /// absent) and keeps the key's expiry. Returns the new count.
    fn hincrby(&mut self, key: &str, field: &str, by: i64) -> Result<i64, RedisError> {
        let current = self.hash(key)?.and_then(|counters| counters.get(field)).copied();
        let updated = current.unwrap_or(0).checked_add(by).ok_or(RedisError::Overflow)?;
        let entry = self.entries.entry(key.to_owned()).or_insert_with(|| RedisEntry {
            value: RedisValue::Hash(BTreeMap::new()),
            expires_at_ms: None,
        });
        if let RedisValue::Hash(counters) = &mut entry.value {
            counters.insert(field.to_owned(), updated);
        }
        self.effects.push(RedisEffect::HIncrBy {
            key: key.to_owned(),
            field: field.to_owned(),
            by,
        });
        Ok(updated)
    }

    /// `PEXPIRE`'s body once the instant is known: false on a missing key; an instant at or
    /// before now deletes the key (Redis deletes rather than expires it); else sets it.
    fn pexpire_at(&mut self, key: &str, expires_at_ms: u64, now_ms: u64) -> bool {
        let Some(entry) = self.entries.get_mut(key) else {
            return false;
        };
        if expires_at_ms <= now_ms {
            self.del(key);
        } else {
            entry.expires_at_ms = Some(expires_at_ms);
            self.effects.push(RedisEffect::ExpireAt {
                key: key.to_owned(),
                expires_at_ms,
            });
        }
        true
    }

    fn del(&mut self, key: &str) -> bool {
        let deleted = self.entries.remove(key).is_some();
        if deleted {
            self.effects.push(RedisEffect::Del { key: key.to_owned() });
        }
        deleted
    }

    fn pttl(&self, key: &str, now_ms: u64) -> i64 {
        match self.entries.get(key) {
            None => -2,
            Some(RedisEntry {
                expires_at_ms: None, ..
            }) => -1,
            Some(RedisEntry {
                expires_at_ms: Some(at),
                ..
            }) => {
                debug_assert!(
                    now_ms <= *at,
                    "pttl of the expired key {key}: expire_if_needed runs first"
                );
                // Fits: an instant is at most MAX_EXPIRES_AT_MS (i64::MAX).
                i64::try_from(at - now_ms).unwrap_or(i64::MAX)
            }
        }
    }
}

/// A fair lock's queue and deadlines while a script works on them, and what they were.
struct FairQueue {
    queue_key: String,
    deadlines_key: String,
    original: (Vec<String>, BTreeMap<String, i64>),
    queue: Vec<String>,
    deadlines: BTreeMap<String, i64>,
}

impl FairQueue {
    /// Drop the waiters at the head whose deadline has passed on the caller's clock (a waiter
    /// without a deadline is dropped too: the two keys disagree only after a partial write).
    fn drop_stale_waiters(&mut self, client_now_ms: u64) {
        let now = i64::try_from(client_now_ms).unwrap_or(i64::MAX);
        while let Some(first) = self.queue.first() {
            match self.deadlines.get(first) {
                Some(deadline) if *deadline > now => break,
                _ => {
                    let first = self.queue.remove(0);
                    self.deadlines.remove(&first);
                }
            }
        }
    }
}

/// `server_now_ms + ttl_ms`, or the error Redis replies when the instant would not fit.
fn expiry_instant_ms(server_now_ms: u64, ttl_ms: u64) -> Result<u64, RedisError> {
    server_now_ms
        .checked_add(ttl_ms)
        .filter(|at| *at <= MAX_EXPIRES_AT_MS)
        .ok_or(RedisError::InvalidExpireTime)
}

/// A string as Redis reads an integer from it (`INCR`): an optional `-`, then digits without a
/// leading zero (`0` alone excepted), within a signed 64-bit integer; `+5`, `05`, `-0` and
/// ` 5` are not integers to Redis, though Rust's `parse` takes some of them.
pub fn redis_integer(text: &str) -> Option<i64> {
    if text == "0" {
        return Some(0);
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if !digits.starts_with(|c: char| ('1'..='9').contains(&c)) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok()
}

#[cfg(test)]
mod tests;
