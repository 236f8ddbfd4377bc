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
//!
//! One concept, kept in one file over 1,000 lines: Redis's key space as one value type (keys
//! with expiry, the commands and scripts the recipes send) and its property tests.

use std::collections::BTreeMap;

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

/// What a key holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum RedisValue {
    /// A string (`SET`, `GET`): the `SET NX` lock's token.
    Text(String),
    /// A hash of integer counters (`HINCRBY`, `HGET`): Redisson's `owner -> hold count`.
    Hash(BTreeMap<String, i64>),
    /// A list (`RPUSH`, `LPOP`, `LINDEX`, `LREM`): the fair lock's queue of waiters, head first.
    List(Vec<String>),
    /// A sorted set of integer scores (`ZADD`, `ZSCORE`, `ZINCRBY`, `ZREM`): the fair lock's
    /// waiter -> deadline in client milliseconds.
    SortedSet(BTreeMap<String, i64>),
}

/// The key of a fair lock's queue of waiters (`redisson_lock_queue:{name}`).
pub fn fair_queue_key(key: &str) -> String {
    format!("redisson_lock_queue:{{{key}}}")
}

/// The key of a fair lock's waiters' deadlines (`redisson_lock_timeout:{name}`).
pub fn fair_timeouts_key(key: &str) -> String {
    format!("redisson_lock_timeout:{{{key}}}")
}

/// A stored key: its value and its expiry instant on the server's clock, if any.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct RedisEntry {
    pub value: RedisValue,
    pub expires_at_ms: Option<u64>,
}

impl RedisEntry {
    /// Is this key live when the server's clock reads `server_now_ms`? Redis expires a key only
    /// once its clock is past the instant, so the key is still live *at* the instant.
    pub fn is_live_at(&self, server_now_ms: u64) -> bool {
        self.expires_at_ms
            .is_none_or(|expires_at_ms| server_now_ms <= expires_at_ms)
    }
}

/// A command or atomic script, as a client sends it. Each touches one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum RedisCommand {
    /// `SET key value [NX] [PX ttl_ms]`: OK, or nil when `only_if_absent` and the key is live.
    /// Any previous TTL is discarded (no `KEEPTTL`). `ttl_ms` of 0 is an error, as in Redis.
    Set {
        key: String,
        value: String,
        only_if_absent: bool,
        ttl_ms: Option<u64>,
    },
    /// `GET key`: the string, nil when absent; `WRONGTYPE` on a hash.
    Get { key: String },
    /// `DEL key`: how many keys were deleted (0 or 1).
    Del { key: String },
    /// `PEXPIRE key ttl_ms`: 1 when set (or when `ttl_ms` is 0 and the key was deleted), 0 on a
    /// missing key.
    PExpire { key: String, ttl_ms: u64 },
    /// `PTTL key`: -2 missing, -1 no expiry, else the remaining milliseconds.
    PTtl { key: String },
    /// `HGET key field` of a counter: its value, nil when absent; `WRONGTYPE` on a string
    /// (Redisson's hold count).
    HGet { key: String, field: String },
    /// Script: delete `key` only if its value equals `token` (1), else 0. The `SET NX` release.
    DeleteIfEquals { key: String, token: String },
    /// Script: `PEXPIRE key ttl_ms` only if its value equals `token` (1), else 0. The `SET NX`
    /// lock's extension.
    PExpireIfEquals { key: String, token: String, ttl_ms: u64 },
    /// Script: Redisson RLock's acquire. Nil when acquired (or re-entered), else the `PTTL` of
    /// the holder's lease.
    RedissonAcquire { key: String, owner: String, lease_ms: u64 },
    /// Script: Redisson's watchdog renewal. 1 when our field is present (expiry reset), else 0.
    RedissonRenew { key: String, owner: String, lease_ms: u64 },
    /// Script: Redisson's release. Nil when not ours; 0 when still held (count decremented,
    /// expiry reset to `lease_ms`); 1 when released (key deleted, [`UNLOCK_MESSAGE`] published
    /// on `channel`).
    RedissonRelease {
        key: String,
        owner: String,
        lease_ms: u64,
        channel: String,
    },
    /// Script: Redisson's fair lock acquire. Nil when acquired (or re-entered), else how long to
    /// wait in milliseconds (may be 0 or below when the clients' clocks disagree).
    RedissonFairAcquire {
        key: String,
        owner: String,
        lease_ms: u64,
        /// `threadWaitTime`: how long a queued waiter may go without asking again before the
        /// others drop it (Redisson: 5000 ms).
        thread_wait_ms: u64,
        /// The caller's clock, which the deadlines are measured on.
        client_now_ms: u64,
    },
    /// Script: the fair lock's release. Nil when not ours; 0 when still held; 1 when the lock
    /// is free afterwards (freed now, or already gone), the first waiter told on
    /// `channel:waiter`.
    RedissonFairRelease {
        key: String,
        owner: String,
        lease_ms: u64,
        channel: String,
        client_now_ms: u64,
    },
    /// Script: a fair waiter gives up (its wait time ran out): leave the queue. 1 when it was
    /// queued, else 0.
    RedissonFairGiveUp {
        key: String,
        owner: String,
        thread_wait_ms: u64,
    },
}

impl RedisCommand {
    /// `SET key value NX PX ttl_ms`: the `SET NX` lock's acquire.
    pub fn set_nx_px(key: impl Into<String>, value: impl Into<String>, ttl_ms: u64) -> Self {
        RedisCommand::Set {
            key: key.into(),
            value: value.into(),
            only_if_absent: true,
            ttl_ms: Some(ttl_ms),
        }
    }

    /// The one key the command touches.
    pub fn key(&self) -> &str {
        match self {
            RedisCommand::Set { key, .. }
            | RedisCommand::Get { key }
            | RedisCommand::Del { key }
            | RedisCommand::PExpire { key, .. }
            | RedisCommand::PTtl { key }
            | RedisCommand::HGet { key, .. }
            | RedisCommand::DeleteIfEquals { key, .. }
            | RedisCommand::PExpireIfEquals { key, .. }
            | RedisCommand::RedissonAcquire { key, .. }
            | RedisCommand::RedissonRenew { key, .. }
            | RedisCommand::RedissonRelease { key, .. }
            | RedisCommand::RedissonFairAcquire { key, .. }
            | RedisCommand::RedissonFairRelease { key, .. }
            | RedisCommand::RedissonFairGiveUp { key, .. } => key,
        }
    }

    /// Every key the command may touch: [`Self::key`], and for the fair lock's scripts its
    /// queue and deadlines too.
    pub fn keys(&self) -> Vec<String> {
        match self {
            RedisCommand::RedissonFairAcquire { key, .. }
            | RedisCommand::RedissonFairRelease { key, .. }
            | RedisCommand::RedissonFairGiveUp { key, .. } => {
                vec![key.clone(), fair_queue_key(key), fair_timeouts_key(key)]
            }
            other => vec![other.key().to_owned()],
        }
    }
}

/// A command's error reply. Redis answers these to the client; nothing about the server broke.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, thiserror::Error, serde::Serialize, serde::Deserialize,
)]
pub enum RedisError {
    /// A string command on a hash or a hash command on a string.
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    /// `SET ... PX 0`, or an expiry instant past [`MAX_EXPIRES_AT_MS`].
    #[error(
        "ERR invalid expire time (a SET needs a TTL above 0; an expiry instant must fit in signed 64-bit milliseconds)"
    )]
    InvalidExpireTime,
    /// A counter increment past the range of a signed 64-bit integer.
    #[error("ERR increment or decrement would overflow")]
    Overflow,
}

/// What the server answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum RedisReply {
    /// `+OK`.
    Ok,
    /// The null reply: `SET NX` not performed, a missing key, Redisson's "acquired" and
    /// "not ours".
    Nil,
    Integer(i64),
    /// A string value.
    Bulk(String),
    Error(RedisError),
}

/// As traces print a command: Redis's own syntax for the plain commands, a sentence for the
/// scripts (what they check, then what they do).
impl std::fmt::Display for RedisCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedisCommand::Set {
                key,
                value,
                only_if_absent,
                ttl_ms,
            } => {
                write!(f, "SET {key} {value}")?;
                if *only_if_absent {
                    write!(f, " NX")?;
                }
                match ttl_ms {
                    Some(ms) => write!(f, " PX {ms}"),
                    None => Ok(()),
                }
            }
            RedisCommand::Get { key } => write!(f, "GET {key}"),
            RedisCommand::Del { key } => write!(f, "DEL {key}"),
            RedisCommand::PExpire { key, ttl_ms } => write!(f, "PEXPIRE {key} {ttl_ms}"),
            RedisCommand::PTtl { key } => write!(f, "PTTL {key}"),
            RedisCommand::HGet { key, field } => write!(f, "HGET {key} {field}"),
            RedisCommand::DeleteIfEquals { key, token } => write!(f, "DEL {key} if it holds {token}"),
            RedisCommand::PExpireIfEquals { key, token, ttl_ms } => {
                write!(f, "PEXPIRE {key} {ttl_ms} if it holds {token}")
            }
            RedisCommand::RedissonAcquire { key, owner, lease_ms } => {
                write!(f, "acquire {key} for {owner}, lease {lease_ms} ms (Redisson script)")
            }
            RedisCommand::RedissonRenew { key, owner, lease_ms } => {
                write!(f, "renew {key} for {owner}, lease {lease_ms} ms (Redisson script)")
            }
            RedisCommand::RedissonRelease {
                key, owner, channel, ..
            } => {
                write!(
                    f,
                    "release {key} for {owner}, publish on {channel} at 0 (Redisson script)"
                )
            }
            RedisCommand::RedissonFairAcquire {
                key,
                owner,
                lease_ms,
                thread_wait_ms,
                client_now_ms,
            } => write!(
                f,
                "fair acquire {key} for {owner}, lease {lease_ms} ms, queue slot {thread_wait_ms} ms, client time {client_now_ms} (Redisson script)"
            ),
            RedisCommand::RedissonFairRelease {
                key,
                owner,
                channel,
                client_now_ms,
                ..
            } => write!(
                f,
                "fair release {key} for {owner}, tell the first waiter on {channel}:<waiter>, client time {client_now_ms} (Redisson script)"
            ),
            RedisCommand::RedissonFairGiveUp { key, owner, .. } => {
                write!(f, "leave the queue of {key} for {owner} (Redisson script)")
            }
        }
    }
}

/// As traces print a reply: `OK`, `nil`, an integer, a quoted string, the error's text.
impl std::fmt::Display for RedisReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedisReply::Ok => write!(f, "OK"),
            RedisReply::Nil => write!(f, "nil"),
            RedisReply::Integer(n) => write!(f, "{n}"),
            RedisReply::Bulk(text) => write!(f, "\"{text}\""),
            RedisReply::Error(error) => write!(f, "{error}"),
        }
    }
}

/// One write a command made, as it is replicated. Expiries travel as absolute instants of the
/// primary's clock (Redis replicates TTLs as absolute `PEXPIREAT` instants), so a replica keeps
/// the primary's instant and later judges it by its own clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum RedisEffect {
    /// The key now holds this string, with this expiry; whatever it held before is gone.
    Set {
        key: String,
        value: String,
        expires_at_ms: Option<u64>,
    },
    /// `HINCRBY key field by`: creates the hash (without expiry) when the key is absent; keeps
    /// the key's expiry otherwise.
    HIncrBy { key: String, field: String, by: i64 },
    /// The key now holds this list or sorted set, without expiry (a fair script's list and
    /// sorted-set commands on one key, replicated as their result).
    Put { key: String, value: RedisValue },
    /// `PEXPIREAT key expires_at_ms`.
    ExpireAt { key: String, expires_at_ms: u64 },
    /// `DEL key`: an explicit delete, or the primary dropping a key it found expired.
    Del { key: String },
}

impl RedisEffect {
    pub fn key(&self) -> &str {
        match self {
            RedisEffect::Set { key, .. }
            | RedisEffect::HIncrBy { key, .. }
            | RedisEffect::Put { key, .. }
            | RedisEffect::ExpireAt { key, .. }
            | RedisEffect::Del { key } => key,
        }
    }
}

/// A message a command published (`PUBLISH channel message`). Pub/sub is fire and forget:
/// only the subscribers connected at that moment receive it, and nothing stores it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Published {
    pub channel: String,
    pub message: String,
}

/// Everything one command did: its reply, the writes to replicate (in order; a replica applies
/// them as one batch, as Redis wraps a script's effects in `MULTI`/`EXEC`), and what it
/// published.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Executed {
    pub reply: RedisReply,
    pub effects: Vec<RedisEffect>,
    pub published: Vec<Published>,
}

/// How a server keeps its data across a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Persistence {
    /// Neither AOF nor snapshots (or the worst case of `appendfsync no` / `everysec`: nothing
    /// flushed since the write): the key space is empty after a crash. A lock acquired before
    /// the crash is free after the restart.
    None,
    /// `appendonly yes` with `appendfsync always`: every acknowledged write was on disk before
    /// the reply, so a restart loses nothing.
    EveryWrite,
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn set_nx_px(key: &str, value: &str, ttl_ms: u64) -> RedisCommand {
        RedisCommand::set_nx_px(key, value, ttl_ms)
    }

    fn get(key: &str) -> RedisCommand {
        RedisCommand::Get { key: key.into() }
    }

    fn pttl(key: &str) -> RedisCommand {
        RedisCommand::PTtl { key: key.into() }
    }

    fn acquire(owner: &str, lease_ms: u64) -> RedisCommand {
        RedisCommand::RedissonAcquire {
            key: "lock".into(),
            owner: owner.into(),
            lease_ms,
        }
    }

    fn renew(owner: &str, lease_ms: u64) -> RedisCommand {
        RedisCommand::RedissonRenew {
            key: "lock".into(),
            owner: owner.into(),
            lease_ms,
        }
    }

    fn release(owner: &str, lease_ms: u64) -> RedisCommand {
        RedisCommand::RedissonRelease {
            key: "lock".into(),
            owner: owner.into(),
            lease_ms,
            channel: "unlock:lock".into(),
        }
    }

    #[test]
    fn set_nx_on_a_live_key_is_nil_and_keeps_value_and_ttl() {
        let mut redis = RedisKeyspace::new();
        assert_eq!(redis.apply(&set_nx_px("k", "a", 100), 1_000), RedisReply::Ok);
        let before = redis.clone();
        assert_eq!(redis.apply(&set_nx_px("k", "b", 500), 1_050), RedisReply::Nil);
        assert_eq!(redis, before);
        assert_eq!(redis.apply(&get("k"), 1_050), RedisReply::Bulk("a".into()));
        assert_eq!(redis.apply(&pttl("k"), 1_050), RedisReply::Integer(50));
    }

    #[test]
    fn a_key_is_live_at_its_expiry_instant_and_free_one_ms_later() {
        let mut redis = RedisKeyspace::new();
        redis.apply(&set_nx_px("k", "a", 100), 1_000);
        assert_eq!(redis.apply(&pttl("k"), 1_100), RedisReply::Integer(0));
        assert_eq!(redis.apply(&set_nx_px("k", "b", 100), 1_100), RedisReply::Nil);
        // One millisecond past the instant the lease is over: SET NX succeeds.
        let executed = redis.execute(&set_nx_px("k", "b", 100), 1_101);
        assert_eq!(executed.reply, RedisReply::Ok);
        assert_eq!(
            executed.effects,
            vec![
                RedisEffect::Del { key: "k".into() },
                RedisEffect::Set {
                    key: "k".into(),
                    value: "b".into(),
                    expires_at_ms: Some(1_201)
                },
            ],
            "the expired key's lazy delete comes first, then the write with its absolute instant"
        );
        assert_eq!(redis.apply(&get("k"), 1_101), RedisReply::Bulk("b".into()));
    }

    #[test]
    fn set_without_keepttl_clears_the_ttl() {
        let mut redis = RedisKeyspace::new();
        redis.apply(&set_nx_px("k", "a", 100), 0);
        let plain_set = RedisCommand::Set {
            key: "k".into(),
            value: "b".into(),
            only_if_absent: false,
            ttl_ms: None,
        };
        assert_eq!(redis.apply(&plain_set, 10), RedisReply::Ok);
        assert_eq!(redis.apply(&pttl("k"), 10), RedisReply::Integer(-1));
        assert_eq!(redis.apply(&get("k"), 1_000_000), RedisReply::Bulk("b".into()));
    }

    #[test]
    fn set_px_0_and_instants_past_the_range_are_errors_that_change_nothing() {
        let mut redis = RedisKeyspace::new();
        assert_eq!(
            redis.apply(&set_nx_px("k", "a", 0), 5),
            RedisReply::Error(RedisError::InvalidExpireTime)
        );
        assert_eq!(
            redis.apply(&set_nx_px("k", "a", MAX_EXPIRES_AT_MS), 5),
            RedisReply::Error(RedisError::InvalidExpireTime)
        );
        assert!(redis.is_empty());
        assert_eq!(
            redis.apply(&set_nx_px("k", "a", MAX_EXPIRES_AT_MS - 5), 5),
            RedisReply::Ok,
            "the last instant in range is accepted"
        );
    }

    #[test]
    fn pexpire_on_a_missing_key_is_0_and_pexpire_0_deletes() {
        let mut redis = RedisKeyspace::new();
        let pexpire = |ttl_ms| RedisCommand::PExpire {
            key: "k".into(),
            ttl_ms,
        };
        assert_eq!(redis.apply(&pexpire(100), 0), RedisReply::Integer(0));
        assert!(redis.is_empty(), "PEXPIRE creates nothing");
        redis.apply(&set_nx_px("k", "a", 100), 0);
        assert_eq!(redis.apply(&pexpire(500), 50), RedisReply::Integer(1));
        assert_eq!(redis.apply(&pttl("k"), 50), RedisReply::Integer(500));
        let executed = redis.execute(&pexpire(0), 60);
        assert_eq!(executed.reply, RedisReply::Integer(1));
        assert_eq!(executed.effects, vec![RedisEffect::Del { key: "k".into() }]);
        assert!(redis.is_empty());
        // A key that expired is missing too.
        redis.apply(&set_nx_px("k", "a", 10), 100);
        assert_eq!(redis.apply(&pexpire(500), 111), RedisReply::Integer(0));
    }

    #[test]
    fn pttl_is_minus_2_missing_minus_1_without_expiry_else_remaining_ms() {
        let mut redis = RedisKeyspace::new();
        assert_eq!(redis.apply(&pttl("k"), 0), RedisReply::Integer(-2));
        redis.apply(
            &RedisCommand::Set {
                key: "k".into(),
                value: "v".into(),
                only_if_absent: false,
                ttl_ms: None,
            },
            0,
        );
        assert_eq!(redis.apply(&pttl("k"), 0), RedisReply::Integer(-1));
        redis.apply(
            &RedisCommand::PExpire {
                key: "k".into(),
                ttl_ms: 300,
            },
            10,
        );
        assert_eq!(redis.apply(&pttl("k"), 110), RedisReply::Integer(200));
        assert_eq!(redis.apply(&pttl("k"), 311), RedisReply::Integer(-2));
    }

    #[test]
    fn get_on_a_hash_is_wrongtype_and_redisson_on_a_string_is_wrongtype() {
        let mut redis = RedisKeyspace::new();
        redis.apply(&acquire("c1:t1", 100), 0);
        assert_eq!(redis.apply(&get("lock"), 1), RedisReply::Error(RedisError::WrongType));
        let mut strings = RedisKeyspace::new();
        strings.apply(&set_nx_px("lock", "token", 100), 0);
        let before = strings.clone();
        for script in [acquire("c1:t1", 100), renew("c1:t1", 100), release("c1:t1", 100)] {
            assert_eq!(strings.apply(&script, 1), RedisReply::Error(RedisError::WrongType));
        }
        assert_eq!(strings, before);
    }

    #[test]
    fn compare_and_delete_deletes_only_the_callers_token() {
        let mut redis = RedisKeyspace::new();
        let release = |token: &str| RedisCommand::DeleteIfEquals {
            key: "k".into(),
            token: token.into(),
        };
        assert_eq!(redis.apply(&release("t1"), 0), RedisReply::Integer(0));
        redis.apply(&set_nx_px("k", "t1", 100), 0);
        let before = redis.clone();
        assert_eq!(redis.apply(&release("t2"), 10), RedisReply::Integer(0));
        assert_eq!(redis, before);
        assert_eq!(redis.apply(&release("t1"), 10), RedisReply::Integer(1));
        assert_eq!(redis.apply(&get("k"), 10), RedisReply::Nil);
        // After its lease ran out the old holder's release finds nothing, even with its token.
        redis.apply(&set_nx_px("k", "t1", 100), 20);
        assert_eq!(redis.apply(&release("t1"), 121), RedisReply::Integer(0));
    }

    #[test]
    fn compare_and_pexpire_extends_only_the_callers_token() {
        let mut redis = RedisKeyspace::new();
        let extend = |token: &str| RedisCommand::PExpireIfEquals {
            key: "k".into(),
            token: token.into(),
            ttl_ms: 1_000,
        };
        redis.apply(&set_nx_px("k", "t1", 100), 0);
        assert_eq!(redis.apply(&extend("t2"), 50), RedisReply::Integer(0));
        assert_eq!(redis.apply(&pttl("k"), 50), RedisReply::Integer(50));
        assert_eq!(redis.apply(&extend("t1"), 50), RedisReply::Integer(1));
        assert_eq!(redis.apply(&pttl("k"), 50), RedisReply::Integer(1_000));
        assert_eq!(
            redis.apply(&extend("t1"), 1_051),
            RedisReply::Integer(0),
            "too late: expired"
        );
    }

    #[test]
    fn redisson_acquire_takes_a_free_lock_and_a_held_one_replies_the_holders_pttl() {
        let mut redis = RedisKeyspace::new();
        assert_eq!(redis.apply(&acquire("c1:t1", 30_000), 0), RedisReply::Nil);
        assert_eq!(
            redis.apply(
                &RedisCommand::HGet {
                    key: "lock".into(),
                    field: "c1:t1".into()
                },
                0
            ),
            RedisReply::Integer(1)
        );
        let before = redis.clone();
        assert_eq!(
            redis.apply(&acquire("c2:t1", 30_000), 10_000),
            RedisReply::Integer(20_000)
        );
        assert_eq!(redis, before, "a refused acquire writes nothing");
        // The lease runs out without a renewal: the next acquire finds the lock free.
        assert_eq!(redis.apply(&acquire("c2:t1", 30_000), 30_001), RedisReply::Nil);
    }

    #[test]
    fn redisson_reentrant_acquire_twice_needs_two_releases() {
        let mut redis = RedisKeyspace::new();
        assert_eq!(redis.apply(&acquire("c1:t1", 30_000), 0), RedisReply::Nil);
        assert_eq!(redis.apply(&acquire("c1:t1", 30_000), 100), RedisReply::Nil);
        assert_eq!(redis.apply(&pttl("lock"), 100), RedisReply::Integer(30_000));
        let first = redis.execute(&release("c1:t1", 30_000), 5_000);
        assert_eq!(first.reply, RedisReply::Integer(0), "still held once");
        assert!(first.published.is_empty());
        assert_eq!(
            redis.apply(&pttl("lock"), 5_000),
            RedisReply::Integer(30_000),
            "fresh lease"
        );
        assert_eq!(
            redis.apply(&acquire("c2:t1", 30_000), 5_000),
            RedisReply::Integer(30_000)
        );
        let second = redis.execute(&release("c1:t1", 30_000), 6_000);
        assert_eq!(second.reply, RedisReply::Integer(1));
        assert_eq!(
            second.published,
            vec![Published {
                channel: "unlock:lock".into(),
                message: UNLOCK_MESSAGE.into()
            }]
        );
        assert!(redis.is_empty());
        assert_eq!(redis.apply(&acquire("c2:t1", 30_000), 6_000), RedisReply::Nil);
    }

    #[test]
    fn redisson_release_by_a_non_owner_replies_nil_and_changes_nothing() {
        let mut redis = RedisKeyspace::new();
        let on_free = redis.execute(&release("c2:t1", 30_000), 0);
        assert_eq!(on_free.reply, RedisReply::Nil);
        redis.apply(&acquire("c1:t1", 30_000), 0);
        let before = redis.clone();
        let executed = redis.execute(&release("c2:t1", 30_000), 10);
        assert_eq!(executed.reply, RedisReply::Nil);
        assert!(executed.effects.is_empty() && executed.published.is_empty());
        assert_eq!(redis, before);
    }

    #[test]
    fn redisson_renew_resets_the_owners_lease_and_refuses_anyone_else() {
        let mut redis = RedisKeyspace::new();
        redis.apply(&acquire("c1:t1", 30_000), 0);
        assert_eq!(redis.apply(&renew("c2:t1", 30_000), 10_000), RedisReply::Integer(0));
        assert_eq!(redis.apply(&pttl("lock"), 10_000), RedisReply::Integer(20_000));
        assert_eq!(redis.apply(&renew("c1:t1", 30_000), 10_000), RedisReply::Integer(1));
        assert_eq!(redis.apply(&pttl("lock"), 10_000), RedisReply::Integer(30_000));
        // A renewal after the lease ran out is refused: the watchdog learns the lock is lost.
        assert_eq!(redis.apply(&renew("c1:t1", 30_000), 40_001), RedisReply::Integer(0));
    }

    #[test]
    fn redisson_acquire_with_a_zero_lease_deletes_the_key_it_just_wrote() {
        // PEXPIRE with a non-positive timeout deletes; the script still replies "acquired".
        let mut redis = RedisKeyspace::new();
        let executed = redis.execute(&acquire("c1:t1", 0), 7);
        assert_eq!(executed.reply, RedisReply::Nil);
        assert!(redis.is_empty());
        assert_eq!(executed.effects.len(), 2, "{:?}", executed.effects);
    }

    #[test]
    fn a_script_error_keeps_the_writes_made_before_it() {
        // HINCRBY succeeds, then the lease's instant is past the range: no rollback, as in Redis.
        let mut redis = RedisKeyspace::new();
        assert_eq!(
            redis.apply(&acquire("c1:t1", MAX_EXPIRES_AT_MS), 1),
            RedisReply::Error(RedisError::InvalidExpireTime)
        );
        assert_eq!(redis.apply(&pttl("lock"), 1), RedisReply::Integer(-1));
    }

    #[test]
    fn effects_replayed_on_an_empty_key_space_rebuild_the_primary() {
        let mut primary = RedisKeyspace::new();
        let mut replica = RedisKeyspace::new();
        let commands = [
            (acquire("c1:t1", 100), 0),
            (acquire("c1:t1", 100), 10),
            (release("c1:t1", 100), 20),
            (set_nx_px("s", "t", 5), 20),
            (get("s"), 40),
            (acquire("c2:t1", 100), 500),
        ];
        for (command, now_ms) in &commands {
            let executed = primary.execute(command, *now_ms);
            replica.apply_effects(&executed.effects);
            assert_eq!(replica, primary, "after {command:?}");
        }
    }

    #[test]
    fn purge_expired_deletes_exactly_the_expired_keys() {
        let mut redis = RedisKeyspace::new();
        redis.apply(&set_nx_px("a", "1", 10), 0);
        redis.apply(&set_nx_px("b", "1", 100), 0);
        redis.apply(&acquire("c1:t1", 5), 0);
        assert_eq!(redis.purge_expired(10), vec![RedisEffect::Del { key: "lock".into() }]);
        assert_eq!(redis.len(), 2);
        assert_eq!(redis.live_entries(11).count(), 1);
    }

    #[test]
    fn a_restart_without_persistence_frees_every_lock_and_with_fsync_always_none() {
        let mut redis = RedisKeyspace::new();
        redis.apply(&set_nx_px("lock", "t1", 30_000), 0);
        let mut durable = redis.clone();
        durable.crash_restart(Persistence::EveryWrite);
        assert_eq!(durable.apply(&set_nx_px("lock", "t2", 30_000), 1_000), RedisReply::Nil);
        redis.crash_restart(Persistence::None);
        assert_eq!(redis.apply(&set_nx_px("lock", "t2", 30_000), 1_000), RedisReply::Ok);
    }
}
