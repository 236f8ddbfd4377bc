//! Redis's commands, replies and effects as the key space takes and gives them, and the values its
//! keys hold.

use super::*;

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

/// The key of a fenced lock's token counter (`redisson_lock_token:{name}`).
pub fn fenced_token_key(key: &str) -> String {
    format!("redisson_lock_token:{{{key}}}")
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
    /// Script: Redisson `RFencedLock`'s acquire: the RLock's, which also counts the lock's
    /// fencing token up (`INCR` of `token_key`, a counter without expiry beside the lock) on
    /// every acquisition and re-entry. [`RedisReply::Pair`] `(-1, token)` when acquired, else
    /// `(PTTL of the holder's lease, -1)`: the script's two-element answer.
    RedissonFencedAcquire {
        key: String,
        token_key: String,
        owner: String,
        lease_ms: u64,
    },
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
            | RedisCommand::RedissonFencedAcquire { key, .. }
            | RedisCommand::RedissonRenew { key, .. }
            | RedisCommand::RedissonRelease { key, .. }
            | RedisCommand::RedissonFairAcquire { key, .. }
            | RedisCommand::RedissonFairRelease { key, .. }
            | RedisCommand::RedissonFairGiveUp { key, .. } => key,
        }
    }

    /// Every key the command may touch: [`Self::key`], and for the fair lock's scripts its
    /// queue and deadlines too, for the fenced lock's acquire its token's counter.
    pub fn keys(&self) -> Vec<String> {
        match self {
            RedisCommand::RedissonFencedAcquire { key, token_key, .. } => vec![key.clone(), token_key.clone()],
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
    /// `INCR` of a string that is not a signed 64-bit integer.
    #[error("ERR value is not an integer or out of range")]
    NotAnInteger,
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
    /// A script's two integers (the fenced lock's acquire: `(-1, token)` or `(PTTL, -1)`).
    Pair(i64, i64),
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
            RedisCommand::RedissonFencedAcquire {
                key,
                token_key,
                owner,
                lease_ms,
            } => {
                write!(
                    f,
                    "acquire {key} for {owner}, lease {lease_ms} ms, INCR {token_key} (Redisson fenced script)"
                )
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
            RedisReply::Pair(first, second) => write!(f, "[{first}, {second}]"),
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
