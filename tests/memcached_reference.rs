//! `Memcached` against a deliberately naive reference, over random sequences of add, set, get,
//! gets, delete, touch and cas on a few keys, with random advances of the server's clock
//! (sub-second and whole seconds) and both readings of exptime (relative and absolute).
//!
//! The reference keeps every command ever applied, with the clock reading it ran at, in a list,
//! and replays it from nothing over a flat record list with plain `if`s. It keeps records that
//! are dead (expired, or dead on arrival) and simply ignores them. Nothing is shared with
//! `Memcached` but the command and reply types.

use cassalock::store::memcached::{Memcached, MemcachedCommand, MemcachedItem, MemcachedReply};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Record {
    key: String,
    value: String,
    /// The whole second from which the item is gone; `None`: never.
    gone_at_s: Option<u64>,
    cas_unique: u64,
}

#[derive(Default)]
struct Flat {
    records: Vec<Record>,
    stores: u64,
}

impl Flat {
    /// The protocol's rule, spelled out: 0 never; negative at once; more than 30 days of
    /// seconds is a Unix time; otherwise seconds from now.
    fn gone_at_s(exptime_s: i64, now_ms: u64) -> Option<u64> {
        let now_s = now_ms / 1000;
        if exptime_s == 0 {
            return None;
        }
        if exptime_s < 0 {
            return Some(0);
        }
        if exptime_s > 30 * 24 * 60 * 60 {
            return Some(exptime_s as u64);
        }
        Some(now_s + exptime_s as u64)
    }

    fn live(&self, key: &str, now_ms: u64) -> Option<usize> {
        for (i, record) in self.records.iter().enumerate() {
            if record.key == key {
                let alive = match record.gone_at_s {
                    None => true,
                    Some(gone) => now_ms / 1000 < gone,
                };
                if alive {
                    return Some(i);
                }
            }
        }
        None
    }

    fn store(&mut self, key: &str, value: &str, exptime_s: i64, now_ms: u64) {
        self.stores += 1;
        self.records.retain(|record| record.key != key);
        self.records.push(Record {
            key: key.to_owned(),
            value: value.to_owned(),
            gone_at_s: Self::gone_at_s(exptime_s, now_ms),
            cas_unique: self.stores,
        });
    }

    fn step(&mut self, command: &MemcachedCommand, now_ms: u64) -> MemcachedReply {
        match command {
            MemcachedCommand::Add { key, value, exptime_s } => {
                if self.live(key, now_ms).is_some() {
                    return MemcachedReply::NotStored;
                }
                self.store(key, value, *exptime_s, now_ms);
                MemcachedReply::Stored
            }
            MemcachedCommand::Set { key, value, exptime_s } => {
                self.store(key, value, *exptime_s, now_ms);
                MemcachedReply::Stored
            }
            MemcachedCommand::Get { key } => match self.live(key, now_ms) {
                Some(i) => MemcachedReply::Value {
                    value: self.records[i].value.clone(),
                },
                None => MemcachedReply::Miss,
            },
            MemcachedCommand::Gets { key } => match self.live(key, now_ms) {
                Some(i) => MemcachedReply::ValueWithCas {
                    value: self.records[i].value.clone(),
                    cas_unique: self.records[i].cas_unique,
                },
                None => MemcachedReply::Miss,
            },
            MemcachedCommand::Delete { key } => {
                if self.live(key, now_ms).is_some() {
                    self.records.retain(|record| record.key != *key);
                    MemcachedReply::Deleted
                } else {
                    MemcachedReply::NotFound
                }
            }
            MemcachedCommand::Touch { key, exptime_s } => match self.live(key, now_ms) {
                Some(i) => {
                    self.records[i].gone_at_s = Self::gone_at_s(*exptime_s, now_ms);
                    MemcachedReply::Touched
                }
                None => MemcachedReply::NotFound,
            },
            MemcachedCommand::Cas {
                key,
                value,
                exptime_s,
                cas_unique,
            } => match self.live(key, now_ms) {
                None => MemcachedReply::NotFound,
                Some(i) => {
                    if self.records[i].cas_unique != *cas_unique {
                        MemcachedReply::Exists
                    } else {
                        self.store(key, value, *exptime_s, now_ms);
                        MemcachedReply::Stored
                    }
                }
            },
        }
    }

    fn observe(&self, now_ms: u64) -> Vec<(String, String, u64)> {
        let mut seen: Vec<(String, String, u64)> = self
            .records
            .iter()
            .filter(|record| self.live(&record.key, now_ms).is_some())
            .map(|record| (record.key.clone(), record.value.clone(), record.cas_unique))
            .collect();
        seen.sort();
        seen
    }
}

#[derive(Default)]
struct Reference {
    log: Vec<(MemcachedCommand, u64)>,
}

impl Reference {
    fn replay(&self) -> (Flat, MemcachedReply) {
        let mut flat = Flat::default();
        let mut reply = MemcachedReply::Miss;
        for (command, now_ms) in &self.log {
            reply = flat.step(command, *now_ms);
        }
        (flat, reply)
    }
}

fn observe(memcached: &Memcached, now_ms: u64) -> Vec<(String, String, u64)> {
    memcached
        .live_items(now_ms)
        .map(|(key, MemcachedItem { value, cas_unique, .. })| (key.to_owned(), value.clone(), *cas_unique))
        .collect()
}

/// An exptime as generated: a number as such, or an absolute Unix time this many seconds from
/// the server's clock when the command runs.
#[derive(Clone, Copy, Debug)]
enum Exptime {
    Given(i64),
    AbsoluteFromNow(i64),
}

impl Exptime {
    fn resolve(self, now_ms: u64) -> i64 {
        match self {
            Exptime::Given(exptime_s) => exptime_s,
            Exptime::AbsoluteFromNow(delta_s) => (now_ms / 1000) as i64 + delta_s,
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Add(String, String, Exptime),
    Set(String, String, Exptime),
    Get(String),
    Gets(String),
    Delete(String),
    Touch(String, Exptime),
    Cas(String, String, Exptime, u64),
    Advance { by_ms: u64 },
    Purge,
}

impl Op {
    fn command(&self, now_ms: u64) -> Option<MemcachedCommand> {
        let owned = |key: &String| key.clone();
        Some(match self {
            Op::Add(key, value, exptime) => MemcachedCommand::Add {
                key: owned(key),
                value: value.clone(),
                exptime_s: exptime.resolve(now_ms),
            },
            Op::Set(key, value, exptime) => MemcachedCommand::Set {
                key: owned(key),
                value: value.clone(),
                exptime_s: exptime.resolve(now_ms),
            },
            Op::Get(key) => MemcachedCommand::Get { key: owned(key) },
            Op::Gets(key) => MemcachedCommand::Gets { key: owned(key) },
            Op::Delete(key) => MemcachedCommand::Delete { key: owned(key) },
            Op::Touch(key, exptime) => MemcachedCommand::Touch {
                key: owned(key),
                exptime_s: exptime.resolve(now_ms),
            },
            Op::Cas(key, value, exptime, cas_unique) => MemcachedCommand::Cas {
                key: owned(key),
                value: value.clone(),
                exptime_s: exptime.resolve(now_ms),
                cas_unique: *cas_unique,
            },
            Op::Advance { .. } | Op::Purge => return None,
        })
    }
}

fn exptime() -> impl Strategy<Value = Exptime> {
    prop_oneof![
        4 => (1i64..4).prop_map(Exptime::Given),
        1 => Just(Exptime::Given(0)),
        1 => Just(Exptime::Given(-1)),
        1 => Just(Exptime::Given(2_592_000)),
        1 => Just(Exptime::Given(2_592_001)),
        2 => (-2i64..4).prop_map(Exptime::AbsoluteFromNow),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let key = || prop::sample::select(vec!["k0", "k1", "k2"]).prop_map(String::from);
    let value = || prop::sample::select(vec!["t1", "t2"]).prop_map(String::from);
    prop_oneof![
        4 => (key(), value(), exptime()).prop_map(|(k, v, e)| Op::Add(k, v, e)),
        1 => (key(), value(), exptime()).prop_map(|(k, v, e)| Op::Set(k, v, e)),
        2 => key().prop_map(Op::Get),
        2 => key().prop_map(Op::Gets),
        2 => key().prop_map(Op::Delete),
        2 => (key(), exptime()).prop_map(|(k, e)| Op::Touch(k, e)),
        2 => (key(), value(), exptime(), 0u64..8).prop_map(|(k, v, e, c)| Op::Cas(k, v, e, c)),
        3 => prop_oneof![0u64..3, Just(400u64), Just(999), Just(1_000), Just(1_001), Just(3_000)].prop_map(|by_ms| Op::Advance { by_ms }),
        1 => Just(Op::Purge),
    ]
}

/// Where the server's clock starts (Unix milliseconds): today, or early in January 1970, where
/// an exptime just above 30 days is an instant in the near future.
fn start_ms() -> impl Strategy<Value = u64> {
    (
        prop_oneof![Just(1_700_000_000_000u64), Just(2_591_998_000u64)],
        0u64..1_000,
    )
        .prop_map(|(base, phase)| base + phase)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Every reply of `Memcached`, and the items it shows after every step, equal the
    /// reference's, whatever came before.
    #[test]
    fn memcached_matches_the_naive_reference(start_ms in start_ms(), ops in prop::collection::vec(op(), 1..60)) {
        let mut memcached = Memcached::new();
        let mut reference = Reference::default();
        let mut now_ms = start_ms;
        for op in ops {
            match op.command(now_ms) {
                Some(command) => {
                    let reply = memcached.apply(&command, now_ms);
                    reference.log.push((command.clone(), now_ms));
                    let (flat, expected) = reference.replay();
                    prop_assert_eq!(&reply, &expected, "reply to {:?} at {}", command, now_ms);
                    prop_assert_eq!(observe(&memcached, now_ms), flat.observe(now_ms), "after {:?} at {}", command, now_ms);
                }
                None => match op {
                    Op::Advance { by_ms } => now_ms += by_ms,
                    _ => {
                        memcached.purge_expired(now_ms);
                        prop_assert!(memcached.live_items(now_ms).count() == memcached.len(), "purge left an expired item");
                        prop_assert_eq!(observe(&memcached, now_ms), reference.replay().0.observe(now_ms));
                    }
                },
            }
        }
        let (flat, _) = reference.replay();
        for later_ms in [0, 999, 1_000, 5_000, 3_000_000] {
            prop_assert_eq!(observe(&memcached, now_ms + later_ms), flat.observe(now_ms + later_ms), "{} ms later", later_ms);
        }
    }
}
