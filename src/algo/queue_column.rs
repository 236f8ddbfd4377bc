//! Listing 5: the queue column name, and the names every listing writes under.
//!
//! A lock id maps to three rows, whose keys differ in a fixed-length prefix so that no lock
//! id, however it is spelled, can name another lock's row:
//!
//! | row | key | cells |
//! |---|---|---|
//! | queue (Listings 6–7) | `q:` + lock id | column = Listing 5 name |
//! | main (all listings) | `m:` + lock id | column = thread id |
//! | shadow (Listing 3) | `s:` + lock id | column = thread id |
//!
//! Listing 5: the queue column is the current time in microseconds, left-padded with zeros to
//! 20 digits, then the thread id. Byte order of column names is then time order, and equal
//! times are ordered by thread id. The 20 digits hold any `u64`, so the split between time
//! and thread id is positional and needs no separator.
//!
//! A thread id is `client id` + `:` + a number. The `:` is the separator that naming relies
//! on, so client ids may not contain it. Without `Settings::reuse_thread_ids` (the listings'
//! naming) the number is a per-locker sequence number, unique per acquisition. With it (the
//! default) the number is a slot instead ([`ThreadSlots`]): unique among the locker's
//! acquisitions in flight, and reused by a later acquisition once an earlier one has ended,
//! so that the main and shadow rows hold one cell per slot (overwritten in place) instead of
//! a tombstone per acquisition.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

/// Digits of the time prefix of a queue column (Listing 5, step 2).
pub const QUEUE_TIME_DIGITS: usize = 20;
/// Longest lock id, in bytes.
pub const MAX_LOCK_ID_BYTES: usize = 200;
/// Longest client id, in bytes.
pub const MAX_CLIENT_ID_BYTES: usize = 48;
/// The byte between a client id and the sequence number in a thread id.
pub const THREAD_ID_SEPARATOR: char = ':';

/// Why a name was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidName {
    #[error("lock id is empty: give every lock a non-empty name")]
    EmptyLockId,
    #[error("lock id is {len} bytes long; at most {MAX_LOCK_ID_BYTES} are allowed")]
    LockIdTooLong { len: usize },
    #[error("lock id {id:?} contains a control character; use printable text")]
    LockIdControlChar { id: String },
    #[error("client id is empty: give each process a name, unique among the lock's users")]
    EmptyClientId,
    #[error("client id is {len} bytes long; at most {MAX_CLIENT_ID_BYTES} are allowed")]
    ClientIdTooLong { len: usize },
    #[error("client id {id:?} may only contain ASCII letters, digits, '.', '_' and '-' (':' separates the client id from the sequence number in thread ids)")]
    ClientIdBadChar { id: String },
}

/// A validated lock id.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockId(Arc<str>);

/// The prefix of a lock's token row.
const TOKEN_ROW_PREFIX: &str = "t:";
/// Every main row's name begins with this (see [`LockId::main_row`]).
const MAIN_ROW_PREFIX: &str = "m:";

impl LockId {
    pub fn new(id: &str) -> Result<Self, InvalidName> {
        if id.is_empty() {
            return Err(InvalidName::EmptyLockId);
        }
        if id.len() > MAX_LOCK_ID_BYTES {
            return Err(InvalidName::LockIdTooLong { len: id.len() });
        }
        if id.chars().any(char::is_control) {
            return Err(InvalidName::LockIdControlChar {
                id: id.escape_debug().to_string(),
            });
        }
        Ok(LockId(id.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The queue row (Listings 6–7).
    pub fn queue_row(&self) -> String {
        format!("q:{}", self.0)
    }

    /// The main row: who holds the lock.
    pub fn main_row(&self) -> String {
        format!("{MAIN_ROW_PREFIX}{}", self.0)
    }

    /// Is `row` some lock's main row?
    pub fn is_main_row(row: &str) -> bool {
        row.starts_with(MAIN_ROW_PREFIX)
    }

    /// The shadow row of the old algorithm (Listing 3).
    pub fn shadow_row(&self) -> String {
        format!("s:{}", self.0)
    }

    /// The row of the fencing-token counter ([`crate::algo::fence`]).
    pub fn token_row(&self) -> String {
        format!("{TOKEN_ROW_PREFIX}{}", self.0)
    }

    /// Is `row` some lock's token row?
    pub fn is_token_row(row: &str) -> bool {
        row.starts_with(TOKEN_ROW_PREFIX)
    }
}

/// A validated client id: the part of a thread id before the separator.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(Arc<str>);

impl ClientId {
    pub fn new(id: &str) -> Result<Self, InvalidName> {
        if id.is_empty() {
            return Err(InvalidName::EmptyClientId);
        }
        if id.len() > MAX_CLIENT_ID_BYTES {
            return Err(InvalidName::ClientIdTooLong { len: id.len() });
        }
        if !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return Err(InvalidName::ClientIdBadChar {
                id: id.escape_debug().to_string(),
            });
        }
        Ok(ClientId(id.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The thread id of this client's `sequence`-th acquisition.
    pub fn thread(&self, sequence: u64) -> ThreadId {
        debug_assert!(
            !self.0.contains(THREAD_ID_SEPARATOR),
            "a client id never contains the thread id separator"
        );
        ThreadId(format!("{}{THREAD_ID_SEPARATOR}{sequence}", self.0).into())
    }
}

/// Ours (the long run): the sequence numbers a locker that reuses thread ids hands
/// out. An acquisition takes the lowest free slot and gives it back when it has ended (its
/// release, clean-up and renewal are over), so that no two acquisitions in flight share a
/// thread id, and a locker used one acquisition at a time writes under one thread id for
/// ever. Reuse is safe for the store because every write and delete of a locker carries a
/// timestamp from its own strictly increasing generator: a late request of an earlier
/// acquisition never overrides a later one's cell. Slots in use never exceed the acquisitions
/// in flight (plus guards leaked without a drop).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadSlots {
    free: BTreeSet<u64>,
    next: u64,
}

impl ThreadSlots {
    /// The lowest free slot, and whether an earlier acquisition used it.
    pub fn take(&mut self) -> (u64, bool) {
        match self.free.pop_first() {
            Some(slot) => (slot, true),
            None => {
                let slot = self.next;
                self.next += 1;
                (slot, false)
            }
        }
    }

    /// An acquisition that took `slot` has ended.
    pub fn give_back(&mut self, slot: u64) {
        debug_assert!(slot < self.next, "slot {slot} was never taken");
        let fresh = self.free.insert(slot);
        debug_assert!(fresh, "slot {slot} given back twice");
    }

    /// Slots taken and not given back.
    pub fn in_use(&self) -> u64 {
        self.next - self.free.len() as u64
    }
}

/// Ours (the long run): per lock, the queue column of a locker's last hold, where its
/// next GetLock of that lock starts reading the queue (`Settings::queue_read_from_last_hold`).
/// It keeps at most `capacity` locks; past that it forgets the lock held least recently, whose
/// next acquisition then reads from the row's start once (correct, only slower).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStarts {
    capacity: usize,
    /// Per lock: its queue column and when it was last held (a counter, not a clock).
    by_lock: BTreeMap<LockId, (String, u64)>,
    /// The same locks by when they were last held, oldest first.
    by_age: BTreeMap<u64, LockId>,
    next_hold: u64,
}

impl QueueStarts {
    /// At most `capacity` locks (at least one).
    pub fn new(capacity: usize) -> Self {
        QueueStarts {
            capacity: capacity.max(1),
            by_lock: BTreeMap::new(),
            by_age: BTreeMap::new(),
            next_hold: 0,
        }
    }

    /// Where the next GetLock of `lock` starts reading its queue (`None`: the row's start).
    pub fn start(&self, lock: &LockId) -> Option<&str> {
        self.by_lock.get(lock).map(|(column, _)| column.as_str())
    }

    /// `lock` was just held with queue column `column`.
    pub fn remember(&mut self, lock: &LockId, column: &str) {
        let hold = self.next_hold;
        self.next_hold += 1;
        if let Some((_, held)) = self.by_lock.remove(lock) {
            self.by_age.remove(&held);
        } else if self.by_lock.len() >= self.capacity {
            if let Some((_, oldest)) = self.by_age.pop_first() {
                self.by_lock.remove(&oldest);
            }
        }
        self.by_lock.insert(lock.clone(), (column.to_owned(), hold));
        self.by_age.insert(hold, lock.clone());
        debug_assert!(self.by_lock.len() <= self.capacity);
        debug_assert_eq!(self.by_lock.len(), self.by_age.len());
    }

    /// Locks remembered.
    pub fn len(&self) -> usize {
        self.by_lock.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_lock.is_empty()
    }
}

/// A thread id: `client id:sequence`, unique per acquisition.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId(Arc<str>);

impl ThreadId {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The client id part.
    pub fn client(&self) -> &str {
        self.0.split(THREAD_ID_SEPARATOR).next().unwrap_or("")
    }
}

/// Listing 5: the queue column for a thread that read `time_us` from the time source.
pub fn queue_column(time_us: u64, thread: &ThreadId) -> String {
    // L5.1–2: the time in microseconds, zero-padded to 20 digits; L5.3: then the thread id.
    let column = format!("{time_us:0width$}{}", thread.as_str(), width = QUEUE_TIME_DIGITS);
    debug_assert_eq!(
        parse_queue_column(&column),
        Some((time_us, thread.as_str())),
        "a queue column's time and thread id parse back"
    );
    column
}

/// Split a queue column into its time and thread id (the inverse of [`queue_column`]).
pub fn parse_queue_column(column: &str) -> Option<(u64, &str)> {
    let digits = column.get(..QUEUE_TIME_DIGITS)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, &column[QUEUE_TIME_DIGITS..]))
}

/// Ours, for the model checker's renaming of times ([`crate::algo::held_columns`]): give a
/// queue column another time, keeping its thread id. `column` must be a queue column.
pub fn set_queue_time(column: &mut String, time_us: u64) {
    debug_assert!(parse_queue_column(column).is_some(), "{column:?} is a queue column");
    column.replace_range(
        ..QUEUE_TIME_DIGITS,
        &format!("{time_us:0width$}", width = QUEUE_TIME_DIGITS),
    );
}

/// A fencing token: the holder's queue column (Listing 5 name). Tokens compare as bytes, so
/// a later queue time gives a greater token — as long as time sources agree and nobody is
/// delayed between reading the time and enqueueing, which is exactly what the simulator
/// checks. The old algorithm has no queue: its token is built the same way from a time-source
/// reading taken right after it acquires.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FencingToken(pub String);

impl FencingToken {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The time part of the token, in microseconds.
    pub fn time_us(&self) -> Option<u64> {
        parse_queue_column(&self.0).map(|(time, _)| time)
    }
}

/// What a fenced resource does with a write carrying `token`, given the highest token it has
/// accepted so far. The one rule the model's resource actor, the simulator's resource node and
/// the real-cluster monitor all apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    /// The token is below one already accepted.
    pub stale: bool,
    /// The write goes through: always when fresh; when stale, only without fencing (damage).
    pub accepted: bool,
}

impl Admission {
    /// Whether the resource's highest token becomes `token` (a fresh, accepted write).
    pub fn raises_highest(self) -> bool {
        self.accepted && !self.stale
    }
}

/// Judge a write under `token`; see [`Admission`]. Tokens compare as bytes; an equal token is
/// the same holder writing again, not stale.
pub fn admit(highest: Option<&str>, token: &str, fencing: bool) -> Admission {
    let stale = highest.is_some_and(|highest| token < highest);
    Admission {
        stale,
        accepted: !(stale && fencing),
    }
}

macro_rules! show_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self.as_str(), f)
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
show_as_str!(LockId, ClientId, ThreadId, FencingToken);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_starts_forget_the_lock_held_least_recently_past_their_capacity() {
        let lock = |name: &str| LockId::new(name).unwrap();
        let mut starts = QueueStarts::new(2);
        starts.remember(&lock("b"), "q1");
        starts.remember(&lock("a"), "q2");
        assert_eq!(starts.start(&lock("b")), Some("q1"));
        // Holding b again makes a the least recent, whatever the names' order.
        starts.remember(&lock("b"), "q3");
        starts.remember(&lock("c"), "q4");
        assert_eq!(starts.len(), 2);
        assert_eq!(starts.start(&lock("a")), None, "a was held least recently");
        assert_eq!(starts.start(&lock("b")), Some("q3"), "the latest column");
        assert_eq!(starts.start(&lock("c")), Some("q4"));
        // A thousand more locks through a capacity of two: never more than two kept.
        for k in 0..1000 {
            starts.remember(&lock(&format!("l{k}")), "q");
            assert!(starts.len() <= 2);
        }
        assert_eq!(starts.start(&lock("l999")), Some("q"));
        assert_eq!(starts.start(&lock("c")), None);
        assert_eq!(QueueStarts::new(0).capacity, 1, "at least one lock");
    }

    fn thread(name: &str) -> ThreadId {
        ClientId::new(name).unwrap().thread(0)
    }

    #[test]
    fn a_fenced_resource_refuses_a_lower_token_and_an_unfenced_one_takes_it_without_raising_its_mark() {
        assert_eq!(
            admit(None, "5", true),
            Admission {
                stale: false,
                accepted: true
            }
        );
        assert_eq!(
            admit(Some("5"), "5", true),
            Admission {
                stale: false,
                accepted: true
            },
            "same holder again"
        );
        assert_eq!(
            admit(Some("5"), "4", true),
            Admission {
                stale: true,
                accepted: false
            }
        );
        let unfenced = admit(Some("5"), "4", false);
        assert_eq!(
            unfenced,
            Admission {
                stale: true,
                accepted: true
            }
        );
        assert!(
            !unfenced.raises_highest(),
            "a stale write never lowers or replaces the mark"
        );
        assert!(admit(Some("5"), "6", true).raises_highest());
    }

    #[test]
    fn l5_queue_columns_sort_by_time_then_thread_id() {
        let a = queue_column(999, &thread("b"));
        let b = queue_column(1000, &thread("a"));
        let c = queue_column(1000, &thread("b"));
        assert_eq!(a, "00000000000000000999b:0");
        assert!(a < b && b < c, "time first, then thread id");
        assert_eq!(parse_queue_column(&c), Some((1000, "b:0")));
        assert_eq!(queue_column(u64::MAX, &thread("x")).len(), QUEUE_TIME_DIGITS + 3);
        assert_eq!(parse_queue_column("12:0"), None);
    }

    #[test]
    fn bad_names_are_refused_with_a_reason() {
        assert_eq!(LockId::new(""), Err(InvalidName::EmptyLockId));
        assert!(matches!(
            LockId::new(&"x".repeat(201)),
            Err(InvalidName::LockIdTooLong { len: 201 })
        ));
        assert!(matches!(
            LockId::new("a\nb"),
            Err(InvalidName::LockIdControlChar { .. })
        ));
        assert!(LockId::new("orders/42 é").is_ok());
        assert_eq!(ClientId::new(""), Err(InvalidName::EmptyClientId));
        assert!(matches!(
            ClientId::new("web:1"),
            Err(InvalidName::ClientIdBadChar { .. })
        ));
        assert!(matches!(ClientId::new("w b"), Err(InvalidName::ClientIdBadChar { .. })));
        assert!(matches!(
            ClientId::new(&"c".repeat(49)),
            Err(InvalidName::ClientIdTooLong { len: 49 })
        ));
        assert_eq!(ClientId::new("web-1.eu_2").unwrap().thread(7).as_str(), "web-1.eu_2:7");
    }

    #[test]
    fn thread_slots_reuse_the_lowest_free_and_never_share_one_in_flight() {
        let mut slots = ThreadSlots::default();
        assert_eq!(
            (slots.take(), slots.take(), slots.take()),
            ((0, false), (1, false), (2, false))
        );
        slots.give_back(1);
        slots.give_back(0);
        assert_eq!(slots.in_use(), 1);
        assert_eq!(slots.take(), (0, true), "the lowest free slot first");
        assert_eq!(slots.take(), (1, true));
        assert_eq!(slots.take(), (3, false), "a new slot only when none is free");
        // One acquisition at a time: one slot for ever.
        let mut sequential = ThreadSlots::default();
        for round in 0..1000 {
            let (slot, reused) = sequential.take();
            assert_eq!((slot, reused), (0, round > 0));
            sequential.give_back(slot);
        }
        assert_eq!(sequential.in_use(), 0);
    }

    #[test]
    fn rows_of_different_locks_never_collide() {
        let a = LockId::new("x").unwrap();
        let b = LockId::new("q:x").unwrap();
        let rows = [
            a.queue_row(),
            a.main_row(),
            a.shadow_row(),
            b.queue_row(),
            b.main_row(),
            b.shadow_row(),
        ];
        let unique: std::collections::BTreeSet<_> = rows.iter().collect();
        assert_eq!(unique.len(), rows.len());
    }
}
