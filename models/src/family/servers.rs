//! The servers as the model steps them ([`ModelServer`]): Redis (one instance, or a primary
//! and its replica), Redlock's three masters, and one Memcached server, each the library's
//! value type with the faults of the model's runs.

use cassalock::algo::redis::redlock::ToMaster;
use cassalock::algo::server_holder::{ServerNow, ServerState};
use cassalock::store::memcached::{Memcached, MemcachedCommand};
use cassalock::store::redis_keyspace::{
    fenced_token_key, Persistence, RedisCommand, RedisKeyspace, RedisReply, RedisValue,
};
use cassalock::store::redis_replication::ReplicatedRedis;

use super::{ModelServer, KEY, MILLIS_PER_TICK};
use crate::Fault;

pub(crate) fn ms_of_tick(tick: u8) -> u64 {
    u64::from(tick) * MILLIS_PER_TICK
}

fn show_redis_key(keyspace: &RedisKeyspace, server_now_ms: u64) -> String {
    // The fenced lock's token counter, beside its hash (no other lock has the key).
    let counter = match keyspace
        .live_entry(&fenced_token_key(KEY), server_now_ms)
        .map(|entry| &entry.value)
    {
        Some(RedisValue::Text(count)) => format!(", token counter {count}"),
        _ => String::new(),
    };
    let key = match keyspace.live_entry(KEY, server_now_ms) {
        None => "-".to_owned(),
        Some(entry) => {
            let value = match &entry.value {
                RedisValue::Text(text) => text.clone(),
                RedisValue::Hash(hash) => format!("{hash:?}"),
                RedisValue::List(items) => format!("{items:?}"),
                RedisValue::SortedSet(scores) => format!("{scores:?}"),
            };
            match entry.expires_at_ms {
                Some(at) => format!("{value} through {}", at / MILLIS_PER_TICK),
                None => value,
            }
        }
    };
    key + &counter
}

/// The token the lock's key holds: a `SET NX` key's value, or the owner field of Redisson's
/// hash (one field, with a count above 0, in every state these scripts reach).
fn redis_live_token(keyspace: &RedisKeyspace, server_now_ms: u64) -> Option<(String, Option<u64>)> {
    let entry = keyspace.live_entry(KEY, server_now_ms)?;
    let left_ms = entry.expires_at_ms.map(|at| at.saturating_sub(server_now_ms));
    match &entry.value {
        RedisValue::Text(value) => Some((value.clone(), left_ms)),
        RedisValue::Hash(hash) => hash
            .iter()
            .find(|(_, count)| **count > 0)
            .map(|(owner, _)| (owner.clone(), left_ms)),
        RedisValue::List(_) | RedisValue::SortedSet(_) => None,
    }
}

/// The Redis server of `redis-set-nx`: one instance, or (`--fault failover`) a primary, its
/// replica and the batches between them; its clock reads the clients' plus a jump.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RedisServer {
    pub instance: RedisInstance,
    pub ahead_ticks: u8,
    /// After the run's one failover, keep the promoted primary alone (its fresh replica can
    /// no longer matter: no second failover comes), with expired keys dropped as a single
    /// server's are. Redisson's model does, to stay checkable (its watchdog's renewals fill
    /// the replication stream); `SET NX`'s keeps the pair, as its pinned counts were taken.
    pub single_after_failover: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RedisInstance {
    Single(RedisKeyspace),
    Replicated(ReplicatedRedis),
}

impl RedisServer {
    /// One instance, or (`--fault failover`) a primary and its replica.
    pub(super) fn new(fault: Fault) -> Self {
        RedisServer {
            instance: if fault == Fault::Failover {
                RedisInstance::Replicated(ReplicatedRedis::new())
            } else {
                RedisInstance::Single(RedisKeyspace::new())
            },
            ahead_ticks: 0,
            single_after_failover: false,
        }
    }

    /// The key space clients talk to.
    pub fn primary(&self) -> &RedisKeyspace {
        match &self.instance {
            RedisInstance::Single(keyspace) => keyspace,
            RedisInstance::Replicated(pair) => pair.primary(),
        }
    }

    fn now_ms(&self, now_tick: u8) -> u64 {
        ms_of_tick(now_tick + self.ahead_ticks)
    }
}

impl ModelServer for RedisServer {
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn apply(&mut self, command: &RedisCommand, now_tick: u8) -> (RedisReply, u64) {
        let (reply, now_ms, _) = self.apply_publishing(command, now_tick);
        (reply, now_ms)
    }

    fn apply_publishing(&mut self, command: &RedisCommand, now_tick: u8) -> (RedisReply, u64, Vec<String>) {
        let now_ms = self.now_ms(now_tick);
        let executed = match &mut self.instance {
            RedisInstance::Single(keyspace) => keyspace.execute(command, now_ms),
            RedisInstance::Replicated(pair) => pair
                .apply(command, now_ms)
                .expect("a bounded run sends far fewer requests than the replication stream's cap"),
        };
        let channels = executed.published.into_iter().map(|message| message.channel).collect();
        (executed.reply, now_ms, channels)
    }

    fn is_read(command: &RedisCommand) -> bool {
        matches!(command, RedisCommand::Get { .. } | RedisCommand::HGet { .. })
    }

    fn pending_batches(&self) -> usize {
        match &self.instance {
            RedisInstance::Single(_) => 0,
            RedisInstance::Replicated(pair) => pair.pending_len(),
        }
    }

    fn replicate(&mut self) {
        if let RedisInstance::Replicated(pair) = &mut self.instance {
            pair.deliver(1);
        }
    }

    fn failover(&mut self) -> usize {
        match &mut self.instance {
            RedisInstance::Replicated(pair) => {
                let lost = pair.failover();
                if self.single_after_failover {
                    self.instance = RedisInstance::Single(pair.primary().clone());
                }
                lost
            }
            RedisInstance::Single(_) => 0,
        }
    }

    fn can_restart(&self) -> bool {
        matches!(&self.instance, RedisInstance::Single(keyspace) if !keyspace.is_empty())
    }

    fn restart(&mut self) -> String {
        if let RedisInstance::Single(keyspace) = &mut self.instance {
            keyspace.crash_restart(Persistence::None);
        }
        "the server RESTARTS without persistence: every key is gone".to_owned()
    }

    fn clock_jump(&mut self, ticks: u8, now_tick: u8) -> String {
        self.ahead_ticks = ticks;
        format!(
            "the server's clock JUMPS forward by the TTL: {} -> {}",
            now_tick,
            now_tick + ticks
        )
    }

    fn canonical(&mut self, now_tick: u8) {
        let now_ms = self.now_ms(now_tick);
        // The replicated pair keeps Redis's lazy expiry: its DELs travel to the replica.
        if let RedisInstance::Single(keyspace) = &mut self.instance {
            keyspace.purge_expired(now_ms);
        }
    }

    fn live_tokens(&self, now_tick: u8) -> Vec<(String, Option<u64>)> {
        redis_live_token(self.primary(), self.now_ms(now_tick))
            .into_iter()
            .collect()
    }

    fn describe(&self, now_tick: u8) -> String {
        let now_ms = self.now_ms(now_tick);
        let replica = match &self.instance {
            RedisInstance::Single(_) => String::new(),
            RedisInstance::Replicated(pair) => format!(
                " | replica key: {}, {} batch(es) pending",
                show_redis_key(pair.replica(), now_ms),
                pair.pending_len()
            ),
        };
        format!(
            "(server {}) | key: {}{replica}",
            now_ms / MILLIS_PER_TICK,
            show_redis_key(self.primary(), now_ms)
        )
    }

    fn states(&self, now_tick: u8) -> Vec<ServerNow<'_>> {
        vec![ServerNow {
            state: ServerState::Redis(self.primary()),
            now_ms: self.now_ms(now_tick),
        }]
    }
}

/// The number of Redlock masters in the model.
pub const REDLOCK_MASTERS: usize = 3;

/// Redlock's independent masters; the faults strike master 0 (a restart without persistence,
/// a clock jump).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RedlockMasters {
    pub masters: Vec<RedisKeyspace>,
    pub ahead_ticks: Vec<u8>,
}

impl RedlockMasters {
    fn now_ms(&self, master: usize, now_tick: u8) -> u64 {
        ms_of_tick(now_tick + self.ahead_ticks[master])
    }
}

impl ModelServer for RedlockMasters {
    type Command = ToMaster;
    type Reply = RedisReply;

    fn apply(&mut self, command: &ToMaster, now_tick: u8) -> (RedisReply, u64) {
        let now_ms = self.now_ms(command.master, now_tick);
        (self.masters[command.master].apply(&command.command, now_ms), now_ms)
    }

    fn is_read(command: &ToMaster) -> bool {
        RedisServer::is_read(&command.command)
    }

    fn can_restart(&self) -> bool {
        !self.masters[0].is_empty()
    }

    fn restart(&mut self) -> String {
        self.masters[0].crash_restart(Persistence::None);
        "master 0 RESTARTS at once without persistence: its keys are gone".to_owned()
    }

    fn clock_jump(&mut self, ticks: u8, now_tick: u8) -> String {
        self.ahead_ticks[0] = ticks;
        format!(
            "master 0's clock JUMPS forward by the TTL: {} -> {}",
            now_tick,
            now_tick + ticks
        )
    }

    fn canonical(&mut self, now_tick: u8) {
        for master in 0..self.masters.len() {
            let now_ms = self.now_ms(master, now_tick);
            self.masters[master].purge_expired(now_ms);
        }
    }

    fn live_tokens(&self, now_tick: u8) -> Vec<(String, Option<u64>)> {
        (0..self.masters.len())
            .filter_map(|m| redis_live_token(&self.masters[m], self.now_ms(m, now_tick)))
            .collect()
    }

    fn describe(&self, now_tick: u8) -> String {
        let clocks: Vec<String> = (0..self.masters.len())
            .map(|m| (self.now_ms(m, now_tick) / MILLIS_PER_TICK).to_string())
            .collect();
        let keys: Vec<String> = (0..self.masters.len())
            .map(|m| show_redis_key(&self.masters[m], self.now_ms(m, now_tick)))
            .collect();
        format!("(masters {}) | keys: {}", clocks.join(" "), keys.join(", "))
    }

    fn states(&self, now_tick: u8) -> Vec<ServerNow<'_>> {
        (self.masters.iter().enumerate())
            .map(|(master, keyspace)| ServerNow {
                state: ServerState::Redis(keyspace),
                now_ms: self.now_ms(master, now_tick),
            })
            .collect()
    }
}

/// One Memcached server; its clock reads the clients' plus a jump.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemcachedServer {
    pub items: Memcached,
    pub ahead_ticks: u8,
}

impl MemcachedServer {
    fn now_ms(&self, now_tick: u8) -> u64 {
        ms_of_tick(now_tick + self.ahead_ticks)
    }
}

impl ModelServer for MemcachedServer {
    type Command = MemcachedCommand;
    type Reply = cassalock::store::memcached::MemcachedReply;

    fn apply(&mut self, command: &MemcachedCommand, now_tick: u8) -> (Self::Reply, u64) {
        let now_ms = self.now_ms(now_tick);
        (self.items.apply(command, now_ms), now_ms)
    }

    fn is_read(command: &MemcachedCommand) -> bool {
        matches!(command, MemcachedCommand::Get { .. } | MemcachedCommand::Gets { .. })
    }

    fn can_restart(&self) -> bool {
        !self.items.is_empty()
    }

    fn restart(&mut self) -> String {
        self.items.crash_restart();
        "the server RESTARTS (Memcached keeps nothing): every item is gone".to_owned()
    }

    fn clock_jump(&mut self, ticks: u8, now_tick: u8) -> String {
        self.ahead_ticks = ticks;
        format!(
            "the server's clock JUMPS forward by the TTL: {} -> {}",
            now_tick,
            now_tick + ticks
        )
    }

    fn canonical(&mut self, now_tick: u8) {
        let now_ms = self.now_ms(now_tick);
        self.items.purge_expired(now_ms);
    }

    fn live_tokens(&self, now_tick: u8) -> Vec<(String, Option<u64>)> {
        let now_ms = self.now_ms(now_tick);
        self.items
            .live_items(now_ms)
            .filter(|(key, _)| *key == KEY)
            .map(|(_, item)| {
                (
                    item.value.clone(),
                    item.expires_at_s.map(|at_s| (at_s * 1000).saturating_sub(now_ms)),
                )
            })
            .collect()
    }

    fn describe(&self, now_tick: u8) -> String {
        let now_ms = self.now_ms(now_tick);
        let item = match self.items.live_items(now_ms).find(|(key, _)| *key == KEY) {
            None => "-".to_owned(),
            Some((_, item)) => match item.expires_at_s {
                Some(at_s) => format!("{} through {}", item.value, at_s * 1000 / MILLIS_PER_TICK),
                None => item.value.clone(),
            },
        };
        format!("(server {}) | key: {item}", now_ms / MILLIS_PER_TICK)
    }

    fn states(&self, now_tick: u8) -> Vec<ServerNow<'_>> {
        vec![ServerNow {
            state: ServerState::Memcached(&self.items),
            now_ms: self.now_ms(now_tick),
        }]
    }
}
