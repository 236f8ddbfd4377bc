//! Memcached's item rules, written once: the commands a Memcached lock uses.
//!
//! The lock is `add key token exptime_s` (stored only when no live item holds the key) and a
//! delete on release. Like [`crate::store::redis_keyspace`], this is a value type with no clock,
//! no I/O and no randomness: every call takes `server_now_ms`, the *server's* clock reading,
//! which for Memcached must read Unix time (see the absolute rule below).
//!
//! The rules, and why each matters for a lock:
//!
//! - **Whole seconds.** The server keeps time in whole seconds (`server_now_s`, the reading
//!   floored), and an item is live while `server_now_s < expires_at_s`. A TTL of 1 s set at
//!   x.999 s is over a millisecond later: the protocol itself warns that a TTL of 1 may expire at
//!   once. A lock's lease is up to a second shorter than asked.
//! - **The 30-day rule.** An `exptime_s` of at most 2,592,000 (30 days) counts from now; anything
//!   larger is an absolute Unix time. A client that passes a lease of 31 days in seconds gets
//!   an instant in January 1970: the item is dead on arrival, the `add` still replies STORED, and
//!   the next `add` succeeds too: two holders. A classic bug, so it is implemented.
//! - **0 means never**: a lock with exptime 0 outlives a crashed holder forever. **A negative
//!   exptime expires the item at once** (still STORED).
//! - **`add` on a live key replies NOT_STORED and changes nothing; on an expired key it stores.**
//!   An expired lease is a free lock.
//! - **`touch` replaces the expiry** (TOUCHED, or NOT_FOUND when the key is absent or expired):
//!   the lock's extension, with no check of who holds it.
//! - **`delete` is unconditional** (DELETED / NOT_FOUND): a holder whose lease ran out deletes the
//!   *next* holder's lock. The safe release is `gets` (check the value is our token) followed by
//!   `cas` with the unique it returned and a negative exptime: the item is replaced by one that is
//!   already dead, only if nobody stored anything since (EXISTS otherwise).
//! - **CAS uniques** come from one server-wide counter, one per store, kept in memory only: after
//!   a restart the counter starts again from 1, so a unique remembered from before the restart
//!   can match a new item's.
//! - **No persistence**: a restart ([`Memcached::crash_restart`]) loses every item.
//!
//! Expired items are dropped lazily, when a command touches their key, or by
//! [`Memcached::purge_expired`]; an item dead on arrival (negative or past exptime) is not kept at
//! all, since no command could see it.

use std::collections::BTreeMap;

/// The largest `exptime_s` counted from now: 30 days. A larger one is an absolute Unix time.
pub const MAX_RELATIVE_EXPTIME_S: i64 = 60 * 60 * 24 * 30;

/// Milliseconds in one second: the server reads its clock in whole seconds.
pub const MILLIS_PER_SECOND: u64 = 1_000;

/// The server's whole-second clock reading (Unix seconds) for a millisecond reading.
pub fn server_now_s(server_now_ms: u64) -> u64 {
    server_now_ms / MILLIS_PER_SECOND
}

/// When an item stored with `exptime_s` at `server_now_s` expires: `None` for never (0), else
/// the first whole second at which it is no longer live. Negative: now (dead at once); up to
/// [`MAX_RELATIVE_EXPTIME_S`]: that many seconds from now; above: the absolute Unix time
/// `exptime_s` (dead at once if already past).
pub fn expires_at_s(exptime_s: i64, server_now_s: u64) -> Option<u64> {
    match exptime_s {
        0 => None,
        negative if negative < 0 => Some(server_now_s),
        relative if relative <= MAX_RELATIVE_EXPTIME_S => Some(server_now_s.saturating_add(relative.unsigned_abs())),
        absolute => Some(absolute.unsigned_abs()),
    }
}

/// A stored item.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct MemcachedItem {
    pub value: String,
    /// `None`: never expires. Live while the server's whole-second clock is below it.
    pub expires_at_s: Option<u64>,
    /// Changes with every store of the key; `gets` returns it and `cas` compares it.
    pub cas_unique: u64,
}

impl MemcachedItem {
    pub fn is_live_at(&self, server_now_ms: u64) -> bool {
        self.expires_at_s.is_none_or(|at| server_now_s(server_now_ms) < at)
    }
}

/// A command, as a client sends it (flags and `noreply` left out: a lock uses neither).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum MemcachedCommand {
    /// Store only if no live item holds the key: STORED / NOT_STORED. The lock's acquire.
    Add { key: String, value: String, exptime_s: i64 },
    /// Store unconditionally: STORED.
    Set { key: String, value: String, exptime_s: i64 },
    /// The value, or a miss.
    Get { key: String },
    /// The value and its CAS unique, or a miss.
    Gets { key: String },
    /// DELETED / NOT_FOUND. The naive release.
    Delete { key: String },
    /// Replace the expiry: TOUCHED / NOT_FOUND. The lock's extension.
    Touch { key: String, exptime_s: i64 },
    /// Store only if the item's CAS unique is still `cas_unique`: STORED, EXISTS (someone
    /// stored since), NOT_FOUND. With a negative exptime: the safe release.
    Cas {
        key: String,
        value: String,
        exptime_s: i64,
        cas_unique: u64,
    },
}

impl MemcachedCommand {
    /// The one key the command touches.
    pub fn key(&self) -> &str {
        match self {
            MemcachedCommand::Add { key, .. }
            | MemcachedCommand::Set { key, .. }
            | MemcachedCommand::Get { key }
            | MemcachedCommand::Gets { key }
            | MemcachedCommand::Delete { key }
            | MemcachedCommand::Touch { key, .. }
            | MemcachedCommand::Cas { key, .. } => key,
        }
    }
}

/// What the server answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum MemcachedReply {
    Stored,
    NotStored,
    /// `cas`: the item was stored again since the client's `gets`.
    Exists,
    NotFound,
    Deleted,
    Touched,
    /// `get` found the key.
    Value {
        value: String,
    },
    /// `gets` found the key.
    ValueWithCas {
        value: String,
        cas_unique: u64,
    },
    /// `get`/`gets` found nothing (the bare `END`).
    Miss,
}

/// As traces print a command: Memcached's text protocol, without flags and byte counts.
impl std::fmt::Display for MemcachedCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemcachedCommand::Add { key, value, exptime_s } => write!(f, "add {key} {value} exptime {exptime_s}"),
            MemcachedCommand::Set { key, value, exptime_s } => write!(f, "set {key} {value} exptime {exptime_s}"),
            MemcachedCommand::Get { key } => write!(f, "get {key}"),
            MemcachedCommand::Gets { key } => write!(f, "gets {key}"),
            MemcachedCommand::Delete { key } => write!(f, "delete {key}"),
            MemcachedCommand::Touch { key, exptime_s } => write!(f, "touch {key} {exptime_s}"),
            MemcachedCommand::Cas {
                key,
                value,
                exptime_s,
                cas_unique,
            } => write!(f, "cas {key} {value} exptime {exptime_s} unique {cas_unique}"),
        }
    }
}

/// As traces print a reply: the protocol's words.
impl std::fmt::Display for MemcachedReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemcachedReply::Stored => write!(f, "STORED"),
            MemcachedReply::NotStored => write!(f, "NOT_STORED"),
            MemcachedReply::Exists => write!(f, "EXISTS"),
            MemcachedReply::NotFound => write!(f, "NOT_FOUND"),
            MemcachedReply::Deleted => write!(f, "DELETED"),
            MemcachedReply::Touched => write!(f, "TOUCHED"),
            MemcachedReply::Value { value } => write!(f, "VALUE \"{value}\""),
            MemcachedReply::ValueWithCas { value, cas_unique } => write!(f, "VALUE \"{value}\" unique {cas_unique}"),
            MemcachedReply::Miss => write!(f, "END (miss)"),
        }
    }
}

/// A Memcached server's items. See the module documentation for the rules.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Memcached {
    items: BTreeMap<String, MemcachedItem>,
    /// The last CAS unique handed out (0: none since the start).
    last_cas_unique: u64,
}

impl Memcached {
    pub fn new() -> Self {
        Self::default()
    }

    /// Run one command at `server_now_ms` (a Unix-time reading of the server's clock).
    pub fn apply(&mut self, command: &MemcachedCommand, server_now_ms: u64) -> MemcachedReply {
        let now_s = server_now_s(server_now_ms);
        let key = command.key();
        if self.items.get(key).is_some_and(|item| !item.is_live_at(server_now_ms)) {
            self.items.remove(key); // lazy expiry: an expired item is as good as absent
        }
        let reply = match command {
            MemcachedCommand::Add { key, value, exptime_s } => {
                if self.items.contains_key(key) {
                    MemcachedReply::NotStored
                } else {
                    self.store(key, value, expires_at_s(*exptime_s, now_s), now_s);
                    MemcachedReply::Stored
                }
            }
            MemcachedCommand::Set { key, value, exptime_s } => {
                self.store(key, value, expires_at_s(*exptime_s, now_s), now_s);
                MemcachedReply::Stored
            }
            MemcachedCommand::Get { key } => match self.items.get(key) {
                Some(item) => MemcachedReply::Value {
                    value: item.value.clone(),
                },
                None => MemcachedReply::Miss,
            },
            MemcachedCommand::Gets { key } => match self.items.get(key) {
                Some(item) => MemcachedReply::ValueWithCas {
                    value: item.value.clone(),
                    cas_unique: item.cas_unique,
                },
                None => MemcachedReply::Miss,
            },
            MemcachedCommand::Delete { key } => match self.items.remove(key) {
                Some(_) => MemcachedReply::Deleted,
                None => MemcachedReply::NotFound,
            },
            MemcachedCommand::Touch { key, exptime_s } => match self.items.get_mut(key) {
                Some(item) => {
                    item.expires_at_s = expires_at_s(*exptime_s, now_s);
                    if !item.is_live_at(server_now_ms) {
                        self.items.remove(key);
                    }
                    MemcachedReply::Touched
                }
                None => MemcachedReply::NotFound,
            },
            MemcachedCommand::Cas {
                key,
                value,
                exptime_s,
                cas_unique,
            } => match self.items.get(key) {
                None => MemcachedReply::NotFound,
                Some(item) if item.cas_unique != *cas_unique => MemcachedReply::Exists,
                Some(_) => {
                    self.store(key, value, expires_at_s(*exptime_s, now_s), now_s);
                    MemcachedReply::Stored
                }
            },
        };
        debug_assert!(
            self.items.get(key).is_none_or(|item| item.is_live_at(server_now_ms)),
            "{command:?} left its key stored but expired"
        );
        self.debug_check_invariant();
        reply
    }

    /// Drop every item expired at `server_now_ms`. Returns how many.
    pub fn purge_expired(&mut self, server_now_ms: u64) -> usize {
        let before = self.items.len();
        self.items.retain(|_, item| item.is_live_at(server_now_ms));
        debug_assert!(self.items.values().all(|item| item.is_live_at(server_now_ms)));
        before - self.items.len()
    }

    /// A crash and restart: Memcached keeps nothing on disk, so every item is gone, and the CAS
    /// counter starts over.
    pub fn crash_restart(&mut self) {
        *self = Self::new();
    }

    /// The stored item of `key`, live or not.
    pub fn item(&self, key: &str) -> Option<&MemcachedItem> {
        self.items.get(key)
    }

    /// Every item live at `server_now_ms`, in key order: what clients can observe.
    pub fn live_items(&self, server_now_ms: u64) -> impl Iterator<Item = (&str, &MemcachedItem)> {
        self.items
            .iter()
            .filter(move |(_, item)| item.is_live_at(server_now_ms))
            .map(|(key, item)| (key.as_str(), item))
    }

    /// Number of stored items (live or not).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Store an item with a fresh CAS unique; an item dead on arrival is not kept (the unique is
    /// still used up, as the server allocates it with the item).
    fn store(&mut self, key: &str, value: &str, expires_at_s: Option<u64>, now_s: u64) {
        debug_assert!(
            self.last_cas_unique < u64::MAX,
            "2^64 stores: the CAS counter is exhausted"
        );
        self.last_cas_unique = self.last_cas_unique.saturating_add(1);
        let item = MemcachedItem {
            value: value.to_owned(),
            expires_at_s,
            cas_unique: self.last_cas_unique,
        };
        if expires_at_s.is_none_or(|at| now_s < at) {
            self.items.insert(key.to_owned(), item);
        } else {
            self.items.remove(key);
        }
    }

    /// Debug builds: CAS uniques are distinct and none is ahead of the counter.
    fn debug_check_invariant(&self) {
        if cfg!(debug_assertions) {
            let mut uniques: Vec<u64> = self.items.values().map(|item| item.cas_unique).collect();
            uniques.sort_unstable();
            assert!(
                uniques.windows(2).all(|pair| pair[0] < pair[1]),
                "two items share a CAS unique: {uniques:?}"
            );
            assert!(
                uniques.last().is_none_or(|max| *max <= self.last_cas_unique),
                "an item's CAS unique is ahead of the counter ({})",
                self.last_cas_unique
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2023-11-14T22:13:20Z: a server clock reading Unix time.
    const NOW_MS: u64 = 1_700_000_000_000;

    fn add(key: &str, value: &str, exptime_s: i64) -> MemcachedCommand {
        MemcachedCommand::Add {
            key: key.into(),
            value: value.into(),
            exptime_s,
        }
    }

    fn get(key: &str) -> MemcachedCommand {
        MemcachedCommand::Get { key: key.into() }
    }

    #[test]
    fn add_on_a_live_key_is_not_stored_and_on_an_expired_key_stores() {
        let mut memcached = Memcached::new();
        assert_eq!(memcached.apply(&add("lock", "t1", 10), NOW_MS), MemcachedReply::Stored);
        let before = memcached.clone();
        assert_eq!(
            memcached.apply(&add("lock", "t2", 10), NOW_MS + 9_999),
            MemcachedReply::NotStored
        );
        assert_eq!(memcached, before);
        assert_eq!(
            memcached.apply(&add("lock", "t2", 10), NOW_MS + 10_000),
            MemcachedReply::Stored
        );
        assert_eq!(
            memcached.apply(&get("lock"), NOW_MS + 10_000),
            MemcachedReply::Value { value: "t2".into() }
        );
    }

    #[test]
    fn exptime_2592000_counts_from_now_and_2592001_is_an_absolute_unix_time() {
        assert_eq!(
            expires_at_s(MAX_RELATIVE_EXPTIME_S, 1_700_000_000),
            Some(1_700_000_000 + 2_592_000)
        );
        assert_eq!(expires_at_s(MAX_RELATIVE_EXPTIME_S + 1, 1_700_000_000), Some(2_592_001));
        let mut memcached = Memcached::new();
        // A 31-day lease in seconds is an instant in January 1970: dead on arrival, yet STORED,
        // and the next add succeeds too.
        assert_eq!(
            memcached.apply(&add("lock", "t1", 2_592_001), NOW_MS),
            MemcachedReply::Stored
        );
        assert_eq!(memcached.apply(&get("lock"), NOW_MS), MemcachedReply::Miss);
        assert_eq!(
            memcached.apply(&add("lock", "t2", 2_592_001), NOW_MS),
            MemcachedReply::Stored
        );
        // On a server whose clock reads the first days of 1970 the same number is a lease.
        let early_ms = 2_592_000 * MILLIS_PER_SECOND;
        assert_eq!(
            memcached.apply(&add("early", "t", 2_592_001), early_ms),
            MemcachedReply::Stored
        );
        assert!(memcached
            .item("early")
            .is_some_and(|item| item.is_live_at(early_ms + 999)));
        assert!(!memcached
            .item("early")
            .is_some_and(|item| item.is_live_at(early_ms + 1_000)));
        // An absolute time in the future is a lease of the difference.
        let in_a_minute = i64::try_from(server_now_s(NOW_MS) + 60).unwrap();
        memcached.apply(&add("abs", "t", in_a_minute), NOW_MS);
        assert!(memcached
            .item("abs")
            .is_some_and(|item| item.is_live_at(NOW_MS + 59_999)));
        assert!(!memcached
            .item("abs")
            .is_some_and(|item| item.is_live_at(NOW_MS + 60_000)));
    }

    #[test]
    fn exptime_0_never_expires_and_a_negative_one_expires_at_once() {
        let mut memcached = Memcached::new();
        assert_eq!(memcached.apply(&add("forever", "t", 0), NOW_MS), MemcachedReply::Stored);
        assert_eq!(
            memcached.apply(&get("forever"), u64::MAX),
            MemcachedReply::Value { value: "t".into() }
        );
        assert_eq!(memcached.apply(&add("gone", "t", -1), NOW_MS), MemcachedReply::Stored);
        assert_eq!(memcached.apply(&get("gone"), NOW_MS), MemcachedReply::Miss);
        assert!(memcached.item("gone").is_none(), "dead on arrival: not kept");
    }

    #[test]
    fn a_one_second_ttl_can_end_one_millisecond_later() {
        let mut memcached = Memcached::new();
        let late_in_a_second_ms = NOW_MS + 999;
        memcached.apply(&add("lock", "t", 1), late_in_a_second_ms);
        assert_eq!(
            memcached.apply(&get("lock"), NOW_MS + 999),
            MemcachedReply::Value { value: "t".into() }
        );
        assert_eq!(memcached.apply(&get("lock"), NOW_MS + 1_000), MemcachedReply::Miss);
    }

    #[test]
    fn touch_replaces_the_expiry_of_a_live_item_only() {
        let mut memcached = Memcached::new();
        let touch = |exptime_s| MemcachedCommand::Touch {
            key: "lock".into(),
            exptime_s,
        };
        assert_eq!(memcached.apply(&touch(10), NOW_MS), MemcachedReply::NotFound);
        memcached.apply(&add("lock", "t", 10), NOW_MS);
        let cas_before = memcached.item("lock").map(|item| item.cas_unique);
        assert_eq!(memcached.apply(&touch(100), NOW_MS + 5_000), MemcachedReply::Touched);
        assert!(memcached
            .item("lock")
            .is_some_and(|item| item.is_live_at(NOW_MS + 104_999)));
        assert_eq!(
            memcached.item("lock").map(|item| item.cas_unique),
            cas_before,
            "touch is not a store"
        );
        assert_eq!(memcached.apply(&touch(10), NOW_MS + 105_000), MemcachedReply::NotFound);
    }

    #[test]
    fn delete_is_unconditional_and_cas_with_a_negative_exptime_is_a_safe_release() {
        let mut memcached = Memcached::new();
        memcached.apply(&add("lock", "t1", 10), NOW_MS);
        let MemcachedReply::ValueWithCas {
            cas_unique: t1_unique, ..
        } = memcached.apply(&MemcachedCommand::Gets { key: "lock".into() }, NOW_MS)
        else {
            panic!("gets found nothing")
        };
        // t1's lease runs out; t2 takes the lock.
        memcached.apply(&add("lock", "t2", 10), NOW_MS + 10_000);
        let release = |cas_unique| MemcachedCommand::Cas {
            key: "lock".into(),
            value: String::new(),
            exptime_s: -1,
            cas_unique,
        };
        assert_eq!(
            memcached.apply(&release(t1_unique), NOW_MS + 10_001),
            MemcachedReply::Exists
        );
        assert_eq!(
            memcached.apply(&get("lock"), NOW_MS + 10_001),
            MemcachedReply::Value { value: "t2".into() }
        );
        // The naive release deletes t2's lock.
        assert_eq!(
            memcached.apply(&MemcachedCommand::Delete { key: "lock".into() }, NOW_MS + 10_001),
            MemcachedReply::Deleted
        );
        assert_eq!(
            memcached.apply(&release(t1_unique), NOW_MS + 10_001),
            MemcachedReply::NotFound
        );
    }

    #[test]
    fn a_restart_loses_every_item_and_restarts_the_cas_counter() {
        let mut memcached = Memcached::new();
        memcached.apply(&add("lock", "t1", 0), NOW_MS);
        let unique_before = memcached.item("lock").map(|item| item.cas_unique);
        memcached.crash_restart();
        assert!(memcached.is_empty());
        assert_eq!(memcached.apply(&add("lock", "t2", 0), NOW_MS), MemcachedReply::Stored);
        assert_eq!(
            memcached.item("lock").map(|item| item.cas_unique),
            unique_before,
            "a unique from before the restart matches the new holder's item"
        );
    }

    #[test]
    fn purge_expired_drops_exactly_the_expired_items() {
        let mut memcached = Memcached::new();
        memcached.apply(&add("a", "t", 1), NOW_MS);
        memcached.apply(&add("b", "t", 5), NOW_MS);
        memcached.apply(&add("c", "t", 0), NOW_MS);
        assert_eq!(memcached.purge_expired(NOW_MS + 1_000), 1);
        assert_eq!(memcached.len(), 2);
        assert_eq!(memcached.live_items(NOW_MS + 5_000).count(), 1);
    }
}
