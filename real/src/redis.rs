//! A real Redis server as a [`FamilyStore`] of [`RedisCommand`]s: the family driver's locks
//! (`SET NX`, Redlock through [`cassalock::store::family_memory::Masters`]) against a running
//! `redis-server`.
//!
//! Every command is translated to what a Redis client sends, and every answer back to the
//! [`RedisReply`] that [`cassalock::store::redis_keyspace::RedisKeyspace::apply`] gives for the
//! same command at the same moment (the differential test in `cli/tests/real_servers.rs` holds
//! the two to that). The scripts are Lua of our own, written from the rules in
//! `redis_keyspace.rs`, run with `EVALSHA` (the client falls back to `EVAL` when the server
//! does not know the script yet).
//!
//! Failures, as the lock machines read them:
//! - **no connection could be made** (refused, nothing listening, no master among the
//!   addresses, the connect timing out): [`StoreFailure::Unavailable`]; nothing was sent, so
//!   nothing applied;
//! - **the command was sent and no answer came** within the command timeout (1000 ms by
//!   default), or the connection broke meanwhile: [`StoreFailure::Timeout`]; the command may
//!   have applied. The connection is dropped and the next command connects again;
//! - **an error reply** the key space knows ([`RedisError`]: `WRONGTYPE`, an invalid expire
//!   time, an overflow) is the reply [`RedisReply::Error`]; any other (`READONLY` from a demoted
//!   primary, a script error of ours) is [`StoreFailure::Other`]. After `READONLY` the
//!   connection is dropped too, so that the next command looks for the master again.
//!
//! With several addresses (a primary and its replicas) the store connects to the first one
//! whose `ROLE` is `master`, and looks again after every broken connection: a failover's
//! promoted replica is found without the lockers knowing.
//!
//! Pub/sub (Redisson's unlock message, [`FamilyStore::subscribe`]): one more connection, to the
//! server the commands go to, carries every `SUBSCRIBE` of this store; a task forwards each
//! message it receives to the local subscribers ([`Channels`]). A channel stays subscribed on
//! the server while the store lives, up to [`MAX_SUBSCRIBED_CHANNELS`]; past that, channels
//! without a local subscriber are unsubscribed first. When that connection breaks (the server
//! died, a failover), every local waiter is woken (messages published meanwhile are lost, and
//! a woken waiter only asks again), and the next command first connects again, to the master,
//! and subscribes the channels that still have waiters, as Redisson's client re-subscribes
//! after a reconnect. When subscribing fails the waiter gets no subscription and sleeps out
//! its whole wait.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Script, Value};

use cassalock::algo::server_holder::{ReadState, ServerSnapshot};
use cassalock::driver::family::FamilyStore;
use cassalock::driver::notify::{Channels, Subscription};
use cassalock::store::redis_keyspace::{
    fair_queue_key, fair_timeouts_key, fenced_token_key, RedisCommand, RedisEffect, RedisError, RedisKeyspace,
    RedisReply, RedisValue,
};
use cassalock::store::StoreFailure;

use crate::Unreachable;

/// How long one command may take before it counts as [`StoreFailure::Timeout`], by default.
pub const DEFAULT_COMMAND_TIMEOUT_MS: u64 = 1000;

/// How long making one connection (to one address) may take, by default.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 1000;

/// The most addresses one store may be given (a primary and its replicas).
pub const MAX_ADDRESSES: usize = 16;

/// The most channels one store keeps subscribed on the server (one per Redisson lock key).
pub const MAX_SUBSCRIBED_CHANNELS: usize = 1024;

/// `DeleteIfEquals`: delete the key only when it holds the token. `GET` raises `WRONGTYPE` on
/// a hash, as the key space's rule does.
const DELETE_IF_EQUALS: &str = "\
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0";

/// `PExpireIfEquals`: reset the TTL only when the key holds the token.
const PEXPIRE_IF_EQUALS: &str = "\
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0";

/// Redisson's acquire: free or already ours: one more hold, lease armed, nil; else the
/// holder's remaining TTL. ARGV: lease ms, owner.
const REDISSON_ACQUIRE: &str = "\
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return nil
end
return redis.call('PTTL', KEYS[1])";

/// Redisson `RFencedLock`'s acquire: the RLock's, counting the token up first. KEYS: the lock,
/// its token counter. ARGV: lease ms, owner. `{-1, token}` or `{PTTL, -1}`.
const REDISSON_FENCED_ACQUIRE: &str = "\
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  local token = redis.call('INCR', KEYS[2])
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return {-1, token}
end
return {redis.call('PTTL', KEYS[1]), -1}";

/// Redisson's watchdog renewal. ARGV: lease ms, owner.
const REDISSON_RENEW: &str = "\
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
return 0";

/// Redisson's release. ARGV: lease ms, owner, channel, unlock message.
const REDISSON_RELEASE: &str = "\
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then
  return nil
end
if redis.call('HINCRBY', KEYS[1], ARGV[2], -1) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1";

/// T1-server's reading of a lock's key (KEYS[1]) and of the token counter that Redisson's fenced
/// lock keeps beside it (KEYS[2], [`fenced_token_key`]), in one step so that they are of one
/// instant: `{type, PTTL, value, counter}`. The value is a string (`GET`) or a hash's fields and
/// values (`HGETALL`), nil for a missing key or another type; the counter is the string the
/// fenced acquire counts up, nil when there is none. Which of them names the holder is the
/// lock's rule ([`holder_on_servers`](cassalock::algo::family::FamilyLock::holder_on_servers)), not
/// the reading's.
const READ_KEY: &str = "\
local kind = redis.call('TYPE', KEYS[1])['ok']
local pttl = redis.call('PTTL', KEYS[1])
local value = false
if kind == 'string' then
  value = redis.call('GET', KEYS[1])
elseif kind == 'hash' then
  value = redis.call('HGETALL', KEYS[1])
end
local counter = false
if redis.call('TYPE', KEYS[2])['ok'] == 'string' then
  counter = redis.call('GET', KEYS[2])
end
return {kind, pttl, value, counter}";

/// The most fields of a hash a reading takes in (Redisson's hash holds one owner, re-entered).
const MAX_READ_FIELDS: usize = 64;

/// The fair lock's scripts drop the stale waiters at the head of the queue first: a waiter
/// whose deadline is not after the caller's clock (or who has none). KEYS: lock, queue,
/// deadlines; `now` is the caller's clock in ms.
const FAIR_DROP_STALE: &str = "\
while true do
  local first = redis.call('LINDEX', KEYS[2], 0)
  if first == false then break end
  local deadline = tonumber(redis.call('ZSCORE', KEYS[3], first))
  if deadline ~= nil and deadline > now then break end
  redis.call('LPOP', KEYS[2])
  redis.call('ZREM', KEYS[3], first)
end
";

/// The fair acquire's rest. ARGV: lease ms, owner, slot ms, client now ms. Scores travel as
/// whole numbers (`%.0f`: exact below 2^53 ms).
const FAIR_ACQUIRE_BODY: &str = "\
if redis.call('EXISTS', KEYS[1]) == 0 then
  local first = redis.call('LINDEX', KEYS[2], 0)
  if first == false or first == ARGV[2] then
    redis.call('LPOP', KEYS[2])
    redis.call('ZREM', KEYS[3], ARGV[2])
    local others = redis.call('ZRANGE', KEYS[3], 0, -1)
    for i = 1, #others do
      redis.call('ZINCRBY', KEYS[3], string.format('%.0f', -slot), others[i])
    end
    redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
    return nil
  end
end
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return nil
end
local mine = redis.call('ZSCORE', KEYS[3], ARGV[2])
if mine ~= false then
  return tonumber(mine) - slot - now
end
local last = redis.call('LINDEX', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] then
  local deadline = redis.call('ZSCORE', KEYS[3], last)
  if deadline == false then ttl = 0 else ttl = tonumber(deadline) - now end
else
  ttl = redis.call('PTTL', KEYS[1])
end
redis.call('ZADD', KEYS[3], string.format('%.0f', ttl + slot + now), ARGV[2])
if redis.call('LPOS', KEYS[2], ARGV[2]) == false then
  redis.call('RPUSH', KEYS[2], ARGV[2])
end
return ttl";

/// The fair release's rest. ARGV: lease ms, owner, channel, unlock message, client now ms.
const FAIR_RELEASE_BODY: &str = "\
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then
    return nil
  end
  if redis.call('HINCRBY', KEYS[1], ARGV[2], -1) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
    return 0
  end
  redis.call('DEL', KEYS[1])
end
local first = redis.call('LINDEX', KEYS[2], 0)
if first ~= false then
  redis.call('PUBLISH', ARGV[3] .. ':' .. first, ARGV[4])
end
return 1";

/// The fair give-up: leave the queue, and those behind move a slot earlier. KEYS: lock,
/// queue, deadlines. ARGV: owner, slot ms.
const FAIR_GIVE_UP: &str = "\
local queue = redis.call('LRANGE', KEYS[2], 0, -1)
local at = nil
for i = 1, #queue do
  if queue[i] == ARGV[1] then at = i; break end
end
if at == nil then return 0 end
for i = at + 1, #queue do
  if redis.call('ZSCORE', KEYS[3], queue[i]) ~= false then
    redis.call('ZINCRBY', KEYS[3], string.format('%.0f', -tonumber(ARGV[2])), queue[i])
  end
end
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1";

/// Why a [`RealRedis`] could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RealRedisError {
    #[error("no Redis address given")]
    NoAddress,
    #[error("{count} Redis addresses: give at most {MAX_ADDRESSES}")]
    TooManyAddresses { count: usize },
    #[error("Redis address {address:?}: {source}")]
    Address { address: String, source: redis::RedisError },
    #[error("the command timeout must be 1 to 60000 ms, not {0}")]
    Timeout(u64),
}

/// One live connection and the number that tells it from its successors.
struct Connected {
    generation: u64,
    address: usize,
    connection: MultiplexedConnection,
}

/// The pub/sub connection: its sink (the forwarding task owns the stream), the channels it is
/// subscribed to, and the number that tells it from its successors.
struct Listening {
    generation: u64,
    sink: redis::aio::PubSubSink,
    subscribed: BTreeSet<String>,
}

/// A Redis server (or a primary with replicas, of which the master is used) reached over TCP.
pub struct RealRedis {
    clients: Vec<(String, redis::Client)>,
    command_timeout: Duration,
    connect_timeout: Duration,
    slot: tokio::sync::Mutex<Option<Connected>>,
    generations: AtomicU64,
    scripts: Scripts,
    listening: Arc<tokio::sync::Mutex<Option<Listening>>>,
    channels: Arc<Channels>,
}

struct Scripts {
    delete_if_equals: Script,
    pexpire_if_equals: Script,
    redisson_acquire: Script,
    redisson_fenced_acquire: Script,
    redisson_renew: Script,
    redisson_release: Script,
    fair_acquire: Script,
    fair_release: Script,
    fair_give_up: Script,
    read_key: Script,
}

impl RealRedis {
    /// A store over `addresses` (`host:port`), with the default timeouts. Connects lazily: the
    /// first command makes the connection ([`RealRedis::ping`] to check one up front).
    pub fn new(addresses: &[String]) -> Result<RealRedis, RealRedisError> {
        RealRedis::with_timeouts(addresses, DEFAULT_COMMAND_TIMEOUT_MS, DEFAULT_CONNECT_TIMEOUT_MS)
    }

    pub fn with_timeouts(
        addresses: &[String],
        command_timeout_ms: u64,
        connect_timeout_ms: u64,
    ) -> Result<RealRedis, RealRedisError> {
        if addresses.is_empty() {
            return Err(RealRedisError::NoAddress);
        }
        if addresses.len() > MAX_ADDRESSES {
            return Err(RealRedisError::TooManyAddresses { count: addresses.len() });
        }
        for timeout_ms in [command_timeout_ms, connect_timeout_ms] {
            if !(1..=60_000).contains(&timeout_ms) {
                return Err(RealRedisError::Timeout(timeout_ms));
            }
        }
        let clients = addresses
            .iter()
            .map(|address| {
                redis::Client::open(format!("redis://{address}/"))
                    .map(|client| (address.clone(), client))
                    .map_err(|source| RealRedisError::Address {
                        address: address.clone(),
                        source,
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RealRedis {
            clients,
            command_timeout: Duration::from_millis(command_timeout_ms),
            connect_timeout: Duration::from_millis(connect_timeout_ms),
            slot: tokio::sync::Mutex::new(None),
            generations: AtomicU64::new(0),
            listening: Arc::new(tokio::sync::Mutex::new(None)),
            channels: Arc::new(Channels::new()),
            scripts: Scripts {
                delete_if_equals: Script::new(DELETE_IF_EQUALS),
                pexpire_if_equals: Script::new(PEXPIRE_IF_EQUALS),
                redisson_acquire: Script::new(REDISSON_ACQUIRE),
                redisson_fenced_acquire: Script::new(REDISSON_FENCED_ACQUIRE),
                redisson_renew: Script::new(REDISSON_RENEW),
                redisson_release: Script::new(REDISSON_RELEASE),
                fair_acquire: Script::new(&format!(
                    "local slot = tonumber(ARGV[3])\nlocal now = tonumber(ARGV[4])\n{FAIR_DROP_STALE}{FAIR_ACQUIRE_BODY}"
                )),
                fair_release: Script::new(&format!(
                    "local now = tonumber(ARGV[5])\n{FAIR_DROP_STALE}{FAIR_RELEASE_BODY}"
                )),
                fair_give_up: Script::new(FAIR_GIVE_UP),
                read_key: Script::new(READ_KEY),
            },
        })
    }

    /// [`FamilyStore::read_state`]: one reading of `key` by [`READ_KEY`]; no connection is a
    /// server that names nobody ([`ReadState::Down`]).
    async fn read_key(&self, key: &str) -> Result<Vec<ServerSnapshot>, StoreFailure> {
        let down = || {
            vec![ServerSnapshot {
                state: ReadState::Down,
                now_ms: crate::now_us() / 1000,
            }]
        };
        let Ok((generation, _, mut connection)) = self.connection().await else {
            return Ok(down());
        };
        let mut invocation = self.scripts.read_key.key(key);
        invocation.key(fenced_token_key(key));
        let answer =
            tokio::time::timeout(self.command_timeout, invocation.invoke_async::<Value>(&mut connection)).await;
        let now_ms = crate::now_us() / 1000;
        match answer {
            Ok(Ok(value)) => Ok(vec![ServerSnapshot {
                state: ReadState::Redis(keyspace_read(key, value, now_ms)?),
                now_ms,
            }]),
            Ok(Err(error)) if error.code().is_some() => Err(StoreFailure::Other(format!("reading {key}: {error}"))),
            Ok(Err(_)) | Err(_) => {
                self.forget(generation).await;
                Ok(down())
            }
        }
    }

    /// Check the server answers (connecting if need be): the address in use, or why not.
    pub async fn ping(&self) -> Result<String, Unreachable> {
        let (generation, address, mut connection) = self.connection().await?;
        let pinged = tokio::time::timeout(
            self.command_timeout,
            redis::cmd("PING").query_async::<Value>(&mut connection),
        )
        .await;
        match pinged {
            Ok(Ok(_)) => Ok(self.clients[address].0.clone()),
            Ok(Err(error)) => {
                self.forget(generation).await;
                Err(Unreachable(format!(
                    "{}: PING failed: {error}",
                    self.clients[address].0
                )))
            }
            Err(_) => {
                self.forget(generation).await;
                Err(Unreachable(format!(
                    "{}: PING got no answer within {} ms",
                    self.clients[address].0,
                    self.command_timeout.as_millis()
                )))
            }
        }
    }

    /// The live connection, or a new one to the first address that is a master; else why none.
    async fn connection(&self) -> Result<(u64, usize, MultiplexedConnection), Unreachable> {
        let mut slot = self.slot.lock().await;
        if let Some(connected) = &*slot {
            return Ok((connected.generation, connected.address, connected.connection.clone()));
        }
        let mut why = Vec::new();
        for (index, (address, client)) in self.clients.iter().enumerate() {
            match self.connect(client).await {
                Ok(connection) => {
                    let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
                    *slot = Some(Connected {
                        generation,
                        address: index,
                        connection: connection.clone(),
                    });
                    return Ok((generation, index, connection));
                }
                Err(reason) => why.push(format!("{address}: {reason}")),
            }
        }
        Err(Unreachable(why.join("; ")))
    }

    /// Connect to one server and, when there is a choice, check it is a master.
    async fn connect(&self, client: &redis::Client) -> Result<MultiplexedConnection, Unreachable> {
        let config = AsyncConnectionConfig::new().set_connection_timeout(self.connect_timeout);
        let mut connection = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|error| Unreachable(error.to_string()))?;
        if self.clients.len() > 1 {
            let role = tokio::time::timeout(
                self.connect_timeout,
                redis::cmd("ROLE").query_async::<Value>(&mut connection),
            )
            .await
            .map_err(|_| Unreachable::from("ROLE did not answer in time"))?
            .map_err(|error| Unreachable(error.to_string()))?;
            let is_master = match role {
                Value::Array(parts) => matches!(parts.first(),
                    Some(Value::BulkString(role)) if role == b"master"),
                _ => false,
            };
            if !is_master {
                return Err("not a master".into());
            }
        }
        Ok(connection)
    }

    /// Subscribe `channel` on the server (connecting the pub/sub connection if need be), then
    /// locally; why not, if the server could not be reached or did not confirm in time.
    async fn listen(&self, channel: &str) -> Result<Subscription, Unreachable> {
        let mut listening = self.listening.lock().await;
        self.open_listening(&mut listening).await?;
        // Subscribe locally first: a message that arrives right after the server confirms
        // then finds us.
        let subscription = self.channels.subscribe(channel);
        self.subscribe_on_server(&mut listening, channel).await?;
        Ok(subscription)
    }

    /// After the pub/sub connection broke (a failover, a server that died) and local waiters
    /// are still subscribed: connect again and subscribe their channels on the server, before
    /// the command that follows is sent. The break woke every waiter (messages published
    /// meanwhile are lost), so each asks again, and its answer comes after this.
    async fn listen_again_if_broken(&self) {
        let names = self.channels.subscribed_names();
        if names.is_empty() {
            return;
        }
        let mut listening = self.listening.lock().await;
        if listening.is_some() || self.open_listening(&mut listening).await.is_err() {
            return;
        }
        for name in names.iter().take(MAX_SUBSCRIBED_CHANNELS) {
            // A failure drops the connection again: the next command tries again, and the
            // waiters meanwhile sleep out the TTL they were told (slower, never unsafe).
            if self.subscribe_on_server(&mut listening, name).await.is_err() {
                return;
            }
        }
    }

    /// Open the pub/sub connection if there is none, with a task that forwards its messages
    /// to the local subscribers and, when it breaks, wakes every one of them.
    async fn open_listening(&self, listening: &mut Option<Listening>) -> Result<(), Unreachable> {
        if listening.is_none() {
            // The server the commands go to (a master, when there is a choice).
            let (_, address, _) = self.connection().await?;
            let client = &self.clients[address].1;
            let pubsub = tokio::time::timeout(self.connect_timeout, client.get_async_pubsub())
                .await
                .map_err(|_| Unreachable::from("the pub/sub connection did not open in time"))?
                .map_err(|error| Unreachable(error.to_string()))?;
            let (sink, mut stream) = pubsub.split();
            let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
            let (channels, slot) = (Arc::clone(&self.channels), Arc::clone(&self.listening));
            tokio::spawn(async move {
                while let Some(message) = stream.next().await {
                    channels.publish(message.get_channel_name());
                }
                // The connection broke: the next command or subscription makes a new one.
                let mut slot = slot.lock().await;
                if slot.as_ref().is_some_and(|l| l.generation == generation) {
                    *slot = None;
                    drop(slot);
                    // Messages published from now until then are lost: wake every waiter,
                    // which asks again (a message decides nothing).
                    for name in channels.subscribed_names() {
                        channels.publish(&name);
                    }
                }
            });
            *listening = Some(Listening {
                generation,
                sink,
                subscribed: BTreeSet::new(),
            });
        }
        Ok(())
    }

    /// Subscribe `channel` on the open pub/sub connection (unsubscribing idle channels first
    /// at the limit); a failure drops the connection.
    async fn subscribe_on_server(&self, listening: &mut Option<Listening>, channel: &str) -> Result<(), Unreachable> {
        let link = listening.as_mut().expect("opened by open_listening");
        if !link.subscribed.contains(channel) {
            if link.subscribed.len() >= MAX_SUBSCRIBED_CHANNELS {
                let idle: Vec<String> = link
                    .subscribed
                    .iter()
                    .filter(|name| !self.channels.is_subscribed(name))
                    .cloned()
                    .collect();
                for name in idle {
                    let unsubscribed = tokio::time::timeout(self.command_timeout, link.sink.unsubscribe(&name)).await;
                    if matches!(unsubscribed, Ok(Ok(()))) {
                        link.subscribed.remove(&name);
                    }
                }
                if link.subscribed.len() >= MAX_SUBSCRIBED_CHANNELS {
                    return Err(Unreachable(format!(
                        "{MAX_SUBSCRIBED_CHANNELS} channels are subscribed and in use (MAX_SUBSCRIBED_CHANNELS)"
                    )));
                }
            }
            match tokio::time::timeout(self.command_timeout, link.sink.subscribe(channel)).await {
                Ok(Ok(())) => {
                    link.subscribed.insert(channel.to_owned());
                }
                failed => {
                    *listening = None;
                    return Err(Unreachable(match failed {
                        Ok(Err(error)) => format!("SUBSCRIBE {channel}: {error}"),
                        _ => format!("SUBSCRIBE {channel}: no answer in time"),
                    }));
                }
            }
        }
        Ok(())
    }

    /// Drop the connection `generation` (if it is still the one in use).
    async fn forget(&self, generation: u64) {
        let mut slot = self.slot.lock().await;
        if slot
            .as_ref()
            .is_some_and(|connected| connected.generation == generation)
        {
            *slot = None;
        }
    }

    /// Send one command (or script) and wait for its raw answer.
    async fn send(&self, command: &RedisCommand, connection: &mut MultiplexedConnection) -> redis::RedisResult<Value> {
        match command {
            RedisCommand::Set {
                key,
                value,
                only_if_absent,
                ttl_ms,
            } => {
                let mut cmd = redis::cmd("SET");
                cmd.arg(key).arg(value);
                if *only_if_absent {
                    cmd.arg("NX");
                }
                if let Some(ttl_ms) = ttl_ms {
                    cmd.arg("PX").arg(*ttl_ms);
                }
                cmd.query_async(connection).await
            }
            RedisCommand::Get { key } => redis::cmd("GET").arg(key).query_async(connection).await,
            RedisCommand::Del { key } => redis::cmd("DEL").arg(key).query_async(connection).await,
            RedisCommand::PExpire { key, ttl_ms } => {
                redis::cmd("PEXPIRE")
                    .arg(key)
                    .arg(*ttl_ms)
                    .query_async(connection)
                    .await
            }
            RedisCommand::PTtl { key } => redis::cmd("PTTL").arg(key).query_async(connection).await,
            RedisCommand::HGet { key, field } => redis::cmd("HGET").arg(key).arg(field).query_async(connection).await,
            script => self.run_script(script, connection).await,
        }
    }

    /// Run one of the locks' scripts and wait for its raw answer.
    async fn run_script(
        &self,
        command: &RedisCommand,
        connection: &mut MultiplexedConnection,
    ) -> redis::RedisResult<Value> {
        let scripts = &self.scripts;
        match command {
            RedisCommand::Set { .. }
            | RedisCommand::Get { .. }
            | RedisCommand::Del { .. }
            | RedisCommand::PExpire { .. }
            | RedisCommand::PTtl { .. }
            | RedisCommand::HGet { .. } => unreachable!("{command} is a plain command, sent by `send`"),
            RedisCommand::DeleteIfEquals { key, token } => {
                scripts
                    .delete_if_equals
                    .key(key)
                    .arg(token)
                    .invoke_async(connection)
                    .await
            }
            RedisCommand::PExpireIfEquals { key, token, ttl_ms } => {
                scripts
                    .pexpire_if_equals
                    .key(key)
                    .arg(token)
                    .arg(*ttl_ms)
                    .invoke_async(connection)
                    .await
            }
            RedisCommand::RedissonAcquire { key, owner, lease_ms } => {
                scripts
                    .redisson_acquire
                    .key(key)
                    .arg(*lease_ms)
                    .arg(owner)
                    .invoke_async(connection)
                    .await
            }
            RedisCommand::RedissonFencedAcquire {
                key,
                token_key,
                owner,
                lease_ms,
            } => {
                scripts
                    .redisson_fenced_acquire
                    .key(key)
                    .key(token_key)
                    .arg(*lease_ms)
                    .arg(owner)
                    .invoke_async(connection)
                    .await
            }
            RedisCommand::RedissonRenew { key, owner, lease_ms } => {
                scripts
                    .redisson_renew
                    .key(key)
                    .arg(*lease_ms)
                    .arg(owner)
                    .invoke_async(connection)
                    .await
            }
            RedisCommand::RedissonRelease {
                key,
                owner,
                lease_ms,
                channel,
            } => {
                scripts
                    .redisson_release
                    .key(key)
                    .arg(*lease_ms)
                    .arg(owner)
                    .arg(channel)
                    .arg(cassalock::store::redis_keyspace::UNLOCK_MESSAGE)
                    .invoke_async(connection)
                    .await
            }
            RedisCommand::RedissonFairAcquire {
                key,
                owner,
                lease_ms,
                thread_wait_ms,
                client_now_ms,
            } => {
                scripts
                    .fair_acquire
                    .key(key)
                    .key(fair_queue_key(key))
                    .key(fair_timeouts_key(key))
                    .arg(*lease_ms)
                    .arg(owner)
                    .arg(*thread_wait_ms)
                    .arg(*client_now_ms)
                    .invoke_async(connection)
                    .await
            }
            RedisCommand::RedissonFairRelease {
                key,
                owner,
                lease_ms,
                channel,
                client_now_ms,
            } => {
                scripts
                    .fair_release
                    .key(key)
                    .key(fair_queue_key(key))
                    .key(fair_timeouts_key(key))
                    .arg(*lease_ms)
                    .arg(owner)
                    .arg(channel)
                    .arg(cassalock::store::redis_keyspace::UNLOCK_MESSAGE)
                    .arg(*client_now_ms)
                    .invoke_async(connection)
                    .await
            }
            RedisCommand::RedissonFairGiveUp {
                key,
                owner,
                thread_wait_ms,
            } => {
                scripts
                    .fair_give_up
                    .key(key)
                    .key(fair_queue_key(key))
                    .key(fair_timeouts_key(key))
                    .arg(owner)
                    .arg(*thread_wait_ms)
                    .invoke_async(connection)
                    .await
            }
        }
    }
}

/// Does this command carry an expiry argument (whose out-of-range value Redis refuses before
/// it parses it as an expiry)?
fn has_expiry_argument(command: &RedisCommand) -> bool {
    matches!(
        command,
        RedisCommand::Set { ttl_ms: Some(_), .. }
            | RedisCommand::PExpire { .. }
            | RedisCommand::PExpireIfEquals { .. }
            | RedisCommand::RedissonAcquire { .. }
            | RedisCommand::RedissonFencedAcquire { .. }
            | RedisCommand::RedissonRenew { .. }
            | RedisCommand::RedissonRelease { .. }
            | RedisCommand::RedissonFairAcquire { .. }
            | RedisCommand::RedissonFairRelease { .. }
    )
}

/// An error reply as the key space's [`RedisError`], when it is one of those.
fn known_error(command: &RedisCommand, code: &str, detail: &str) -> Option<RedisError> {
    match code {
        "WRONGTYPE" => Some(RedisError::WrongType),
        "ERR" if detail.contains("invalid expire time") => Some(RedisError::InvalidExpireTime),
        // An expiry beyond i64 is refused as a number before it is read as an expiry; the key
        // space calls both "invalid expire time".
        // The fenced acquire's INCR answers the same words for a counter that is not an
        // integer; it runs before the PEXPIRE, so only a lease beyond i64 is the expiry's (a
        // run with both wrong would be told the counter's, and read as the expiry's).
        "ERR"
            if detail.contains("not an integer or out of range")
                && matches!(command, RedisCommand::RedissonFencedAcquire { lease_ms, .. } if i64::try_from(*lease_ms).is_ok()) =>
        {
            Some(RedisError::NotAnInteger)
        }
        "ERR" if detail.contains("not an integer or out of range") && has_expiry_argument(command) => {
            Some(RedisError::InvalidExpireTime)
        }
        "ERR" if detail.contains("increment or decrement would overflow") => Some(RedisError::Overflow),
        _ => None,
    }
}

/// A raw answer as the key space's reply to `command`.
fn reply(command: &RedisCommand, value: Value) -> Result<RedisReply, StoreFailure> {
    let text = |bytes: Vec<u8>| {
        String::from_utf8(bytes).map_err(|_| StoreFailure::Other(format!("{command}: the value is not UTF-8")))
    };
    match value {
        Value::Okay => Ok(RedisReply::Ok),
        Value::SimpleString(status) if status == "OK" => Ok(RedisReply::Ok),
        Value::Nil => Ok(RedisReply::Nil),
        Value::Int(n) => Ok(RedisReply::Integer(n)),
        // HGET answers the counter as a string; the key space as the integer it holds.
        Value::BulkString(bytes) if matches!(command, RedisCommand::HGet { .. }) => {
            let counter = text(bytes)?;
            counter
                .parse::<i64>()
                .map(RedisReply::Integer)
                .map_err(|_| StoreFailure::Other(format!("{command}: the field holds {counter:?}, not a counter")))
        }
        Value::BulkString(bytes) => Ok(RedisReply::Bulk(text(bytes)?)),
        Value::Array(parts) => match parts.as_slice() {
            [Value::Int(first), Value::Int(second)] => Ok(RedisReply::Pair(*first, *second)),
            _ => Err(StoreFailure::Other(format!("{command}: unexpected reply {parts:?}"))),
        },
        other => Err(StoreFailure::Other(format!("{command}: unexpected reply {other:?}"))),
    }
}

/// The key space a reading ([`READ_KEY`]) shows: `key` and its fenced token counter, as they
/// were when the answer came (`now_ms` on this machine's clock, so the key's TTL ends at
/// `now_ms` + PTTL: never earlier than on the server, which counted it down while the answer
/// travelled; the counter has no expiry).
fn keyspace_read(key: &str, value: Value, now_ms: u64) -> Result<RedisKeyspace, StoreFailure> {
    let odd = |what: &str| StoreFailure::Other(format!("reading {key}: {what}"));
    let text = |value: &Value| match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).map_err(|_| odd("a value is not UTF-8")),
        Value::SimpleString(text) => Ok(text.clone()),
        other => Err(odd(&format!("unexpected {other:?}"))),
    };
    let Value::Array(parts) = value else {
        return Err(odd("the answer is not a list"));
    };
    let (kind, pttl) = match parts.as_slice() {
        [kind, Value::Int(pttl), ..] => (text(kind)?, *pttl),
        _ => return Err(odd("the answer is not {type, PTTL, ...}")),
    };
    let stored = match (kind.as_str(), parts.get(2)) {
        ("string", Some(value)) => Some(RedisValue::Text(text(value)?)),
        ("hash", Some(Value::Array(pairs))) => {
            if pairs.len() > 2 * MAX_READ_FIELDS {
                return Err(odd(&format!("the hash has more than {MAX_READ_FIELDS} fields")));
            }
            let mut fields = std::collections::BTreeMap::new();
            for pair in pairs.chunks(2) {
                let [field, count] = pair else {
                    return Err(odd("a hash field without its value"));
                };
                let count = text(count)?;
                let count = count
                    .parse::<i64>()
                    .map_err(|_| odd(&format!("the field holds {count:?}, not a counter")))?;
                fields.insert(text(field)?, count);
            }
            Some(RedisValue::Hash(fields))
        }
        // Missing, or a type no lock of ours keeps its holder in: the key names nobody.
        _ => None,
    };
    let mut keyspace = RedisKeyspace::new();
    if let Some(stored) = stored {
        let mut effects = vec![RedisEffect::Put {
            key: key.to_owned(),
            value: stored,
        }];
        // PTTL: -1 no expiry, -2 missing (it expired between TYPE and PTTL: none of that in
        // a script), else the remaining ms.
        if let Ok(left_ms) = u64::try_from(pttl) {
            effects.push(RedisEffect::ExpireAt {
                key: key.to_owned(),
                expires_at_ms: now_ms.saturating_add(left_ms),
            });
        }
        keyspace.apply_effects(&effects);
    }
    match parts.get(3) {
        None | Some(Value::Nil) => {}
        Some(counter) => keyspace.apply_effects(&[RedisEffect::Put {
            key: fenced_token_key(key),
            value: RedisValue::Text(text(counter)?),
        }]),
    }
    Ok(keyspace)
}

impl FamilyStore<RedisCommand> for RealRedis {
    type Reply = RedisReply;

    /// The key as the server holds it now, by [`READ_KEY`] on the master the commands go to.
    async fn read_state(&self, key: &str) -> Option<Result<Vec<ServerSnapshot>, StoreFailure>> {
        Some(self.read_key(key).await)
    }

    /// A waiter without a subscription sleeps out its whole wait: slower, never unsafe.
    async fn subscribe(&self, channel: &str) -> Option<Subscription> {
        self.listen(channel).await.ok()
    }

    async fn execute(&self, command: RedisCommand) -> Result<RedisReply, StoreFailure> {
        self.listen_again_if_broken().await;
        // No connection: nothing was sent, so nothing applied.
        let (generation, _, mut connection) = self.connection().await.map_err(|_| StoreFailure::Unavailable)?;
        let answer = tokio::time::timeout(self.command_timeout, self.send(&command, &mut connection)).await;
        match answer {
            Err(_elapsed) => {
                self.forget(generation).await;
                Err(StoreFailure::Timeout)
            }
            Ok(Ok(value)) => reply(&command, value),
            Ok(Err(error)) => match error.code() {
                // The server answered with an error.
                Some(code) => {
                    let code = code.to_owned();
                    let detail = error.detail().unwrap_or("").to_owned();
                    match known_error(&command, &code, &detail) {
                        Some(known) => Ok(RedisReply::Error(known)),
                        None => {
                            if code == "READONLY" {
                                // A demoted primary: look for the master again.
                                self.forget(generation).await;
                            }
                            Err(StoreFailure::Other(format!("{command}: {code} {detail}")))
                        }
                    }
                }
                // No answer: the connection broke after the command may have been sent.
                None if error.is_io_error() || error.is_connection_dropped() || error.is_timeout() => {
                    self.forget(generation).await;
                    Err(StoreFailure::Timeout)
                }
                None => {
                    self.forget(generation).await;
                    Err(StoreFailure::Other(format!("{command}: {error}")))
                }
            },
        }
    }
}
