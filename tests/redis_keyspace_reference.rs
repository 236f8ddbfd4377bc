//! `RedisKeyspace` against a deliberately naive reference, over random sequences of every
//! command and script on a few keys and owners, with random advances of the server's clock.
//!
//! The reference keeps every command ever applied, with the clock reading it ran at, in a list.
//! To answer anything it replays the whole list from nothing over a flat list of records,
//! judging each command with plain `if`s. It never deletes an expired record: a record whose
//! instant is past is simply not looked at, and a write replaces it. Nothing is shared with
//! `RedisKeyspace` but the command, reply and entry types.

use std::collections::BTreeMap;

use cassalock::store::redis_keyspace::{
    fair_queue_key, fair_timeouts_key, Published, RedisCommand, RedisEntry, RedisError, RedisKeyspace, RedisReply,
    RedisValue, MAX_EXPIRES_AT_MS, UNLOCK_MESSAGE,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Data {
    Text(String),
    Counters(Vec<(String, i64)>),
    /// A list, head first.
    Items(Vec<String>),
    /// A sorted set, in no order.
    Scores(Vec<(String, i64)>),
}

#[derive(Clone, Debug)]
struct Record {
    key: String,
    data: Data,
    expires_at_ms: Option<u64>,
}

/// The flat key space the reference replays into.
#[derive(Default)]
struct Flat {
    records: Vec<Record>,
}

impl Flat {
    /// The index of the record of `key` if it is live at `now`: not past its instant.
    fn live(&self, key: &str, now: u64) -> Option<usize> {
        for (i, record) in self.records.iter().enumerate() {
            if record.key == key {
                let live = match record.expires_at_ms {
                    None => true,
                    Some(at) => now <= at,
                };
                if live {
                    return Some(i);
                }
            }
        }
        None
    }

    fn remove(&mut self, key: &str) {
        self.records.retain(|record| record.key != key);
    }

    fn put(&mut self, key: &str, data: Data, expires_at_ms: Option<u64>) {
        self.remove(key);
        self.records.push(Record {
            key: key.to_owned(),
            data,
            expires_at_ms,
        });
    }

    /// `now + ttl` if Redis accepts it as an instant.
    fn instant(now: u64, ttl: u64) -> Option<u64> {
        let sum = now as u128 + ttl as u128;
        if sum > MAX_EXPIRES_AT_MS as u128 {
            None
        } else {
            Some(sum as u64)
        }
    }

    /// PEXPIRE on the live record at `i`: a TTL of 0 removes it. The caller has checked the
    /// instant fits.
    fn expire_record(&mut self, i: usize, now: u64, ttl: u64) {
        if ttl == 0 {
            let key = self.records[i].key.clone();
            self.remove(&key);
        } else {
            self.records[i].expires_at_ms = Some(now + ttl);
        }
    }

    fn pttl_of(&self, i: usize, now: u64) -> i64 {
        match self.records[i].expires_at_ms {
            None => -1,
            Some(at) => (at - now) as i64,
        }
    }

    fn step(&mut self, command: &RedisCommand, now: u64, published: &mut Vec<Published>) -> RedisReply {
        match command {
            RedisCommand::Set {
                key,
                value,
                only_if_absent,
                ttl_ms,
            } => self.set(key, value, *only_if_absent, *ttl_ms, now),
            RedisCommand::Get { key } => match self.live(key, now) {
                None => RedisReply::Nil,
                Some(i) => match &self.records[i].data {
                    Data::Text(value) => RedisReply::Bulk(value.clone()),
                    _ => RedisReply::Error(RedisError::WrongType),
                },
            },
            RedisCommand::Del { key } => {
                if self.live(key, now).is_some() {
                    self.remove(key);
                    RedisReply::Integer(1)
                } else {
                    RedisReply::Integer(0)
                }
            }
            RedisCommand::PExpire { key, ttl_ms } => {
                if Self::instant(now, *ttl_ms).is_none() {
                    return RedisReply::Error(RedisError::InvalidExpireTime);
                }
                match self.live(key, now) {
                    None => RedisReply::Integer(0),
                    Some(i) => {
                        self.expire_record(i, now, *ttl_ms);
                        RedisReply::Integer(1)
                    }
                }
            }
            RedisCommand::PTtl { key } => match self.live(key, now) {
                None => RedisReply::Integer(-2),
                Some(i) => RedisReply::Integer(self.pttl_of(i, now)),
            },
            RedisCommand::HGet { key, field } => match self.live(key, now) {
                None => RedisReply::Nil,
                Some(i) => match &self.records[i].data {
                    Data::Text(_) | Data::Items(_) | Data::Scores(_) => RedisReply::Error(RedisError::WrongType),
                    Data::Counters(counters) => {
                        for (name, count) in counters {
                            if name == field {
                                return RedisReply::Integer(*count);
                            }
                        }
                        RedisReply::Nil
                    }
                },
            },
            RedisCommand::DeleteIfEquals { key, token } => self.delete_if_equals(key, token, now),
            RedisCommand::PExpireIfEquals { key, token, ttl_ms } => self.pexpire_if_equals(key, token, *ttl_ms, now),
            RedisCommand::RedissonAcquire { key, owner, lease_ms } => self.redisson_acquire(key, owner, *lease_ms, now),
            RedisCommand::RedissonFencedAcquire {
                key,
                token_key,
                owner,
                lease_ms,
            } => self.redisson_fenced_acquire(key, token_key, owner, *lease_ms, now),
            RedisCommand::RedissonRenew { key, owner, lease_ms } => self.redisson_renew(key, owner, *lease_ms, now),
            RedisCommand::RedissonRelease {
                key,
                owner,
                lease_ms,
                channel,
            } => self.redisson_release(key, owner, *lease_ms, channel, now, published),
            RedisCommand::RedissonFairAcquire {
                key,
                owner,
                lease_ms,
                thread_wait_ms,
                client_now_ms,
            } => self.redisson_fair_acquire(key, owner, *lease_ms, *thread_wait_ms, *client_now_ms, now),
            RedisCommand::RedissonFairRelease {
                key,
                owner,
                lease_ms,
                channel,
                client_now_ms,
            } => self.redisson_fair_release(key, owner, *lease_ms, channel, *client_now_ms, now, published),
            RedisCommand::RedissonFairGiveUp {
                key,
                owner,
                thread_wait_ms,
            } => self.redisson_fair_give_up(key, owner, *thread_wait_ms),
        }
    }

    /// SET, with NX and PX: a TTL of 0 or past Redis's range is refused.
    fn set(&mut self, key: &str, value: &str, only_if_absent: bool, ttl_ms: Option<u64>, now: u64) -> RedisReply {
        let mut expires_at_ms = None;
        if let Some(ttl) = ttl_ms {
            if ttl == 0 {
                return RedisReply::Error(RedisError::InvalidExpireTime);
            }
            match Self::instant(now, ttl) {
                None => return RedisReply::Error(RedisError::InvalidExpireTime),
                Some(at) => expires_at_ms = Some(at),
            }
        }
        if only_if_absent && self.live(key, now).is_some() {
            return RedisReply::Nil;
        }
        self.put(key, Data::Text(value.to_owned()), expires_at_ms);
        RedisReply::Ok
    }

    // The `SET NX` lock's scripts.

    /// The `SET NX` lock's release script: DEL the key if it holds `token`.
    fn delete_if_equals(&mut self, key: &str, token: &str, now: u64) -> RedisReply {
        match self.live(key, now) {
            None => RedisReply::Integer(0),
            Some(i) => match &self.records[i].data {
                Data::Counters(_) | Data::Items(_) | Data::Scores(_) => RedisReply::Error(RedisError::WrongType),
                Data::Text(value) if value == token => {
                    self.remove(key);
                    RedisReply::Integer(1)
                }
                Data::Text(_) => RedisReply::Integer(0),
            },
        }
    }

    /// The `SET NX` lock's extension script: PEXPIRE the key if it holds `token`.
    fn pexpire_if_equals(&mut self, key: &str, token: &str, ttl_ms: u64, now: u64) -> RedisReply {
        match self.live(key, now) {
            None => RedisReply::Integer(0),
            Some(i) => match &self.records[i].data {
                Data::Counters(_) | Data::Items(_) | Data::Scores(_) => RedisReply::Error(RedisError::WrongType),
                Data::Text(value) if value == token => {
                    if Self::instant(now, ttl_ms).is_none() {
                        return RedisReply::Error(RedisError::InvalidExpireTime);
                    }
                    self.expire_record(i, now, ttl_ms);
                    RedisReply::Integer(1)
                }
                Data::Text(_) => RedisReply::Integer(0),
            },
        }
    }

    // Redisson's lock scripts.

    /// Redisson's acquire script: free or ours, count one more hold and arm the lease; else the
    /// holder's PTTL.
    fn redisson_acquire(&mut self, key: &str, owner: &str, lease_ms: u64, now: u64) -> RedisReply {
        let i = match self.live(key, now) {
            None => {
                self.put(key, Data::Counters(vec![(owner.to_owned(), 1)]), None);
                self.records.len() - 1
            }
            Some(i) => {
                let Data::Counters(counters) = &mut self.records[i].data else {
                    return RedisReply::Error(RedisError::WrongType);
                };
                let mut ours = false;
                for (name, count) in counters.iter_mut() {
                    if name == owner {
                        ours = true;
                        match count.checked_add(1) {
                            Some(more) => *count = more,
                            None => return RedisReply::Error(RedisError::Overflow),
                        }
                    }
                }
                if !ours {
                    return RedisReply::Integer(self.pttl_of(i, now));
                }
                i
            }
        };
        if Self::instant(now, lease_ms).is_none() {
            return RedisReply::Error(RedisError::InvalidExpireTime); // the count stays
        }
        self.expire_record(i, now, lease_ms);
        RedisReply::Nil
    }

    /// Redisson `RFencedLock`'s acquire script: when the lock is free or ours, INCR the token
    /// key, then the RLock's acquire; `[-1, token]`, else `[PTTL, -1]`.
    fn redisson_fenced_acquire(
        &mut self,
        key: &str,
        token_key: &str,
        owner: &str,
        lease_ms: u64,
        now: u64,
    ) -> RedisReply {
        let mut free_or_ours = true;
        let mut holder_pttl = -1;
        if let Some(i) = self.live(key, now) {
            match &self.records[i].data {
                Data::Counters(counters) => {
                    free_or_ours = counters.iter().any(|(name, _)| name == owner);
                    holder_pttl = self.pttl_of(i, now);
                }
                Data::Text(_) | Data::Items(_) | Data::Scores(_) => return RedisReply::Error(RedisError::WrongType),
            }
        }
        if !free_or_ours {
            return RedisReply::Pair(holder_pttl, -1);
        }
        let mut token: i64 = 0;
        let mut token_expiry = None;
        if let Some(i) = self.live(token_key, now) {
            match &self.records[i].data {
                Data::Text(text) => match integer(text) {
                    Some(value) => token = value,
                    None => return RedisReply::Error(RedisError::NotAnInteger),
                },
                Data::Counters(_) | Data::Items(_) | Data::Scores(_) => {
                    return RedisReply::Error(RedisError::WrongType)
                }
            }
            token_expiry = self.records[i].expires_at_ms;
        }
        let Some(token) = token.checked_add(1) else {
            return RedisReply::Error(RedisError::Overflow);
        };
        self.put(token_key, Data::Text(token.to_string()), token_expiry);
        match self.redisson_acquire(key, owner, lease_ms, now) {
            RedisReply::Nil => RedisReply::Pair(-1, token),
            other => other,
        }
    }

    /// Redisson's renew script: ours, arm the lease again.
    fn redisson_renew(&mut self, key: &str, owner: &str, lease_ms: u64, now: u64) -> RedisReply {
        match self.live(key, now) {
            None => RedisReply::Integer(0),
            Some(i) => match &self.records[i].data {
                Data::Text(_) | Data::Items(_) | Data::Scores(_) => RedisReply::Error(RedisError::WrongType),
                Data::Counters(counters) => {
                    if !counters.iter().any(|(name, _)| name == owner) {
                        return RedisReply::Integer(0);
                    }
                    if Self::instant(now, lease_ms).is_none() {
                        return RedisReply::Error(RedisError::InvalidExpireTime);
                    }
                    self.expire_record(i, now, lease_ms);
                    RedisReply::Integer(1)
                }
            },
        }
    }

    /// Redisson's release script: one hold fewer; the last one deletes the lock and publishes
    /// the unlock.
    fn redisson_release(
        &mut self,
        key: &str,
        owner: &str,
        lease_ms: u64,
        channel: &str,
        now: u64,
        published: &mut Vec<Published>,
    ) -> RedisReply {
        let Some(i) = self.live(key, now) else {
            return RedisReply::Nil;
        };
        let Data::Counters(counters) = &mut self.records[i].data else {
            return RedisReply::Error(RedisError::WrongType);
        };
        let mut remaining = None;
        for (name, count) in counters.iter_mut() {
            if name == owner {
                *count -= 1;
                remaining = Some(*count);
            }
        }
        match remaining {
            None => RedisReply::Nil,
            Some(count) if count > 0 => {
                if Self::instant(now, lease_ms).is_none() {
                    return RedisReply::Error(RedisError::InvalidExpireTime);
                    // decremented
                }
                self.expire_record(i, now, lease_ms);
                RedisReply::Integer(0)
            }
            Some(_) => {
                self.remove(key);
                published.push(Published {
                    channel: channel.to_owned(),
                    message: UNLOCK_MESSAGE.to_owned(),
                });
                RedisReply::Integer(1)
            }
        }
    }

    // Redisson's fair lock scripts.

    /// The fair lock's acquire script: take the lock if free and first in line (or ours again),
    /// else queue up and answer how long to wait.
    fn redisson_fair_acquire(
        &mut self,
        key: &str,
        owner: &str,
        lease_ms: u64,
        thread_wait_ms: u64,
        client_now_ms: u64,
        now: u64,
    ) -> RedisReply {
        let (mut queue, mut scores) = self.waiters(key);
        drop_stale(&mut queue, &mut scores, client_now_ms as i64);
        let wait = thread_wait_ms as i64;
        let client_now = client_now_ms as i64;
        let lock = self.live(key, now);
        if lock.is_none() && (queue.is_empty() || queue[0] == *owner) {
            if !queue.is_empty() {
                queue.remove(0);
            }
            scores.retain(|(name, _)| name != owner);
            for (_, score) in scores.iter_mut() {
                *score = score.saturating_sub(wait);
            }
            self.save_waiters(key, queue, scores);
            self.put(key, Data::Counters(vec![(owner.to_owned(), 1)]), None);
            let i = self.records.len() - 1;
            if Self::instant(now, lease_ms).is_none() {
                return RedisReply::Error(RedisError::InvalidExpireTime);
            }
            self.expire_record(i, now, lease_ms);
            return RedisReply::Nil;
        }
        if let Some(i) = lock {
            match &mut self.records[i].data {
                Data::Counters(counters) => {
                    if let Some((_, count)) = counters.iter_mut().find(|(name, _)| name == owner) {
                        *count += 1;
                        self.save_waiters(key, queue, scores);
                        if Self::instant(now, lease_ms).is_none() {
                            return RedisReply::Error(RedisError::InvalidExpireTime);
                        }
                        let i = self.live(key, now).expect("still there");
                        self.expire_record(i, now, lease_ms);
                        return RedisReply::Nil;
                    }
                }
                _ => {
                    self.save_waiters(key, queue, scores);
                    return RedisReply::Error(RedisError::WrongType);
                }
            }
        }
        if let Some((_, deadline)) = scores.iter().find(|(name, _)| name == owner) {
            let reply = RedisReply::Integer(deadline.saturating_sub(wait).saturating_sub(client_now));
            self.save_waiters(key, queue, scores);
            return reply;
        }
        let last = queue.last().filter(|last| *last != owner).cloned();
        let ttl = match last {
            Some(last) => {
                let deadline = scores
                    .iter()
                    .find(|(name, _)| *name == last)
                    .map_or(client_now, |(_, d)| *d);
                deadline.saturating_sub(client_now)
            }
            None => match self.live(key, now) {
                None => -2,
                Some(i) => self.pttl_of(i, now),
            },
        };
        scores.push((owner.to_owned(), ttl.saturating_add(wait).saturating_add(client_now)));
        if !queue.iter().any(|name| name == owner) {
            queue.push(owner.to_owned());
        }
        self.save_waiters(key, queue, scores);
        RedisReply::Integer(ttl)
    }

    /// The fair lock's release script: one hold fewer; the last one deletes the lock and tells
    /// the first waiter.
    #[allow(clippy::too_many_arguments)]
    fn redisson_fair_release(
        &mut self,
        key: &str,
        owner: &str,
        lease_ms: u64,
        channel: &str,
        client_now_ms: u64,
        now: u64,
        published: &mut Vec<Published>,
    ) -> RedisReply {
        let (mut queue, mut scores) = self.waiters(key);
        drop_stale(&mut queue, &mut scores, client_now_ms as i64);
        let first = queue.first().cloned();
        self.save_waiters(key, queue, scores);
        let tell_first = |published: &mut Vec<Published>| {
            if let Some(first) = &first {
                published.push(Published {
                    channel: format!("{channel}:{first}"),
                    message: UNLOCK_MESSAGE.to_owned(),
                });
            }
        };
        let Some(i) = self.live(key, now) else {
            tell_first(published);
            return RedisReply::Integer(1);
        };
        let Data::Counters(counters) = &mut self.records[i].data else {
            return RedisReply::Error(RedisError::WrongType);
        };
        let Some((_, count)) = counters.iter_mut().find(|(name, _)| name == owner) else {
            return RedisReply::Nil;
        };
        *count -= 1;
        if *count > 0 {
            if Self::instant(now, lease_ms).is_none() {
                return RedisReply::Error(RedisError::InvalidExpireTime);
            }
            self.expire_record(i, now, lease_ms);
            return RedisReply::Integer(0);
        }
        self.remove(key);
        tell_first(published);
        RedisReply::Integer(1)
    }

    /// The fair lock's give-up script: leave the queue, and move those behind up a slot.
    fn redisson_fair_give_up(&mut self, key: &str, owner: &str, thread_wait_ms: u64) -> RedisReply {
        let (mut queue, mut scores) = self.waiters(key);
        let Some(at) = queue.iter().position(|name| name == owner) else {
            return RedisReply::Integer(0);
        };
        for behind in &queue[at + 1..] {
            for (name, score) in scores.iter_mut() {
                if name == behind {
                    *score = score.saturating_sub(thread_wait_ms as i64);
                }
            }
        }
        queue.retain(|name| name != owner);
        scores.retain(|(name, _)| name != owner);
        self.save_waiters(key, queue, scores);
        RedisReply::Integer(1)
    }

    /// A fair lock's queue and deadlines (empty when absent; the keys never expire).
    fn waiters(&self, key: &str) -> (Vec<String>, Vec<(String, i64)>) {
        let mut queue = Vec::new();
        let mut scores = Vec::new();
        for record in &self.records {
            if record.key == fair_queue_key(key) {
                if let Data::Items(items) = &record.data {
                    queue = items.clone();
                }
            }
            if record.key == fair_timeouts_key(key) {
                if let Data::Scores(found) = &record.data {
                    scores = found.clone();
                }
            }
        }
        (queue, scores)
    }

    fn save_waiters(&mut self, key: &str, queue: Vec<String>, scores: Vec<(String, i64)>) {
        self.remove(&fair_queue_key(key));
        self.remove(&fair_timeouts_key(key));
        if !queue.is_empty() {
            self.put(&fair_queue_key(key), Data::Items(queue), None);
        }
        if !scores.is_empty() {
            self.put(&fair_timeouts_key(key), Data::Scores(scores), None);
        }
    }

    /// Every live record at `now`, as `RedisKeyspace::live_entries` shows it.
    fn observe(&self, now: u64) -> Vec<(String, RedisEntry)> {
        let mut seen = Vec::new();
        for record in &self.records {
            if self.live(&record.key, now).is_some() {
                let value = match &record.data {
                    Data::Text(value) => RedisValue::Text(value.clone()),
                    Data::Counters(counters) => RedisValue::Hash(counters.iter().cloned().collect::<BTreeMap<_, _>>()),
                    Data::Items(items) => RedisValue::List(items.clone()),
                    Data::Scores(scores) => RedisValue::SortedSet(scores.iter().cloned().collect::<BTreeMap<_, _>>()),
                };
                seen.push((
                    record.key.clone(),
                    RedisEntry {
                        value,
                        expires_at_ms: record.expires_at_ms,
                    },
                ));
            }
        }
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        seen
    }
}

/// Every command ever applied, with the clock reading it ran at.
/// Drop the waiters at the head of the queue whose deadline is not after `client_now` (or
/// who have none).
fn drop_stale(queue: &mut Vec<String>, scores: &mut Vec<(String, i64)>, client_now: i64) {
    while !queue.is_empty() {
        let head = queue[0].clone();
        let deadline = scores.iter().find(|(name, _)| *name == head).map(|(_, d)| *d);
        if deadline.is_some_and(|d| d > client_now) {
            return;
        }
        queue.remove(0);
        scores.retain(|(name, _)| *name != head);
    }
}

#[derive(Default)]
struct Reference {
    log: Vec<(RedisCommand, u64)>,
}

impl Reference {
    /// Replay the whole log from nothing: the records, and the last command's reply and
    /// publications.
    fn replay(&self) -> (Flat, RedisReply, Vec<Published>) {
        let mut flat = Flat::default();
        let mut reply = RedisReply::Nil;
        let mut published = Vec::new();
        for (command, now) in &self.log {
            published.clear();
            reply = flat.step(command, *now, &mut published);
        }
        (flat, reply, published)
    }
}

fn observe(keyspace: &RedisKeyspace, now: u64) -> Vec<(String, RedisEntry)> {
    keyspace
        .live_entries(now)
        .map(|(key, entry)| (key.to_owned(), entry.clone()))
        .collect()
}

#[derive(Clone, Debug)]
enum Op {
    Command(RedisCommand),
    Advance { by_ms: u64 },
    Purge,
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["k0", "k1", "k2"]).prop_map(String::from)
}

fn owner() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["c1:1", "c1:2", "c2:1"]).prop_map(String::from)
}

/// Values a key is set to: tokens, and integers for the fenced lock's counter to count up
/// from (one at its limit, and spellings Redis does not read as integers).
fn token() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["t1", "t2", "41", "-3", "05", "+5", "9223372036854775807"]).prop_map(String::from)
}

/// Redis's reading of a string as an integer, spelled out: `0`, or an optional minus and
/// digits that do not start with 0, within 64 bits.
fn integer(text: &str) -> Option<i64> {
    if text == "0" {
        return Some(0);
    }
    let mut chars: Vec<char> = text.chars().collect();
    let negative = chars.first() == Some(&'-');
    if negative {
        chars.remove(0);
    }
    if chars.is_empty() || chars[0] == '0' {
        return None;
    }
    let mut value: i128 = 0;
    for c in chars {
        let digit = c.to_digit(10)?;
        value = value * 10 + i128::from(digit);
        if value > i128::from(i64::MAX) + 1 {
            return None;
        }
    }
    let value = if negative { -value } else { value };
    i64::try_from(value).ok()
}

/// TTLs and leases: mostly short ones against clock steps of the same size, 0 (invalid for
/// SET, a delete for PEXPIRE) and instants past Redis's range.
fn ttl_ms() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 1u64..6,
        2 => Just(10u64),
        1 => Just(0u64),
        1 => Just(u64::MAX),
        1 => Just(MAX_EXPIRES_AT_MS - 1_000),
    ]
}

fn command() -> impl Strategy<Value = RedisCommand> {
    prop_oneof![
        3 => (key(), token(), any::<bool>(), prop::option::weighted(0.8, ttl_ms())).prop_map(
            |(key, value, only_if_absent, ttl_ms)| RedisCommand::Set { key, value, only_if_absent, ttl_ms }
        ),
        2 => key().prop_map(|key| RedisCommand::Get { key }),
        1 => key().prop_map(|key| RedisCommand::Del { key }),
        2 => (key(), ttl_ms()).prop_map(|(key, ttl_ms)| RedisCommand::PExpire { key, ttl_ms }),
        2 => key().prop_map(|key| RedisCommand::PTtl { key }),
        1 => (key(), owner()).prop_map(|(key, field)| RedisCommand::HGet { key, field }),
        2 => (key(), token()).prop_map(|(key, token)| RedisCommand::DeleteIfEquals { key, token }),
        2 => (key(), token(), ttl_ms()).prop_map(|(key, token, ttl_ms)| RedisCommand::PExpireIfEquals { key, token, ttl_ms }),
        4 => (key(), owner(), ttl_ms()).prop_map(|(key, owner, lease_ms)| RedisCommand::RedissonAcquire { key, owner, lease_ms }),
        3 => (key(), key(), owner(), ttl_ms()).prop_map(|(key, token_key, owner, lease_ms)| RedisCommand::RedissonFencedAcquire {
            key, token_key, owner, lease_ms
        }),
        2 => (key(), owner(), ttl_ms()).prop_map(|(key, owner, lease_ms)| RedisCommand::RedissonRenew { key, owner, lease_ms }),
        3 => (key(), owner(), ttl_ms()).prop_map(|(key, owner, lease_ms)| RedisCommand::RedissonRelease {
            channel: format!("unlock:{key}"), key, owner, lease_ms
        }),
        4 => (key(), owner(), ttl_ms(), thread_wait_ms(), client_now_ms()).prop_map(
            |(key, owner, lease_ms, thread_wait_ms, client_now_ms)| RedisCommand::RedissonFairAcquire {
                key, owner, lease_ms, thread_wait_ms, client_now_ms
            }
        ),
        3 => (key(), owner(), ttl_ms(), client_now_ms()).prop_map(|(key, owner, lease_ms, client_now_ms)| {
            RedisCommand::RedissonFairRelease { channel: format!("unlock:{key}"), key, owner, lease_ms, client_now_ms }
        }),
        1 => (key(), owner(), thread_wait_ms()).prop_map(|(key, owner, thread_wait_ms)| RedisCommand::RedissonFairGiveUp {
            key, owner, thread_wait_ms
        }),
    ]
}

/// The fair lock's slot per waiter: short against the clock steps, and 0.
fn thread_wait_ms() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..8, 1 => Just(0u64), 1 => Just(20u64)]
}

/// The caller's clock for the fair lock's deadlines: about the server's start, skewed either way.
fn client_now_ms() -> impl Strategy<Value = u64> {
    990u64..1_060
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => command().prop_map(Op::Command),
        3 => prop_oneof![0u64..3, Just(5u64), Just(10), Just(11)].prop_map(|by_ms| Op::Advance { by_ms }),
        1 => Just(Op::Purge),
    ]
}

/// Where the server's clock starts: an ordinary reading, or one close to the end of Redis's
/// instant range (so that short TTLs overflow it).
fn start_ms() -> impl Strategy<Value = u64> {
    prop_oneof![Just(1_000u64), Just(MAX_EXPIRES_AT_MS - 40)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Every reply and publication of `RedisKeyspace`, and the key space it shows after every
    /// step, equal the reference's, whatever came before.
    #[test]
    fn keyspace_matches_the_naive_reference(start_ms in start_ms(), ops in prop::collection::vec(op(), 1..60)) {
        let mut keyspace = RedisKeyspace::new();
        let mut reference = Reference::default();
        let mut now = start_ms;
        for op in ops {
            match op {
                Op::Command(command) => {
                    let executed = keyspace.execute(&command, now);
                    reference.log.push((command.clone(), now));
                    let (flat, reply, published) = reference.replay();
                    prop_assert_eq!(&executed.reply, &reply, "reply to {:?} at {}", command, now);
                    prop_assert_eq!(&executed.published, &published, "publications of {:?}", command);
                    prop_assert_eq!(observe(&keyspace, now), flat.observe(now), "after {:?} at {}", command, now);
                }
                Op::Advance { by_ms } => now += by_ms,
                Op::Purge => {
                    let deleted = keyspace.purge_expired(now).len();
                    prop_assert!(keyspace.entries().all(|(_, entry)| entry.is_live_at(now)), "purge left an expired key");
                    prop_assert!(deleted <= 3);
                    prop_assert_eq!(observe(&keyspace, now), reference.replay().0.observe(now));
                }
            }
        }
        let (flat, _, _) = reference.replay();
        for later_ms in [0, 1, 5, 10, 100] {
            prop_assert_eq!(observe(&keyspace, now + later_ms), flat.observe(now + later_ms), "{} ms later", later_ms);
        }
    }
}
