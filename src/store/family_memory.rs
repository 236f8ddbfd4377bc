//! In-memory servers of the other families, for the family driver's tests and examples: one
//! value type ([`RedisKeyspace`], [`Memcached`]) behind a mutex, its clock the server's, and N
//! of them as Redlock's masters ([`Masters`]).
//!
//! Each answers at once and never fails, unless told to be down ([`InMemoryRedis::set_down`]):
//! then every command fails with [`StoreFailure::Unavailable`] (nothing applied). The
//! simulator's servers are the ones with latency, lost replies, failover and clock faults.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use super::memcached::{Memcached, MemcachedCommand, MemcachedReply};
use super::redis_keyspace::{RedisCommand, RedisKeyspace, RedisReply};
use super::StoreFailure;
use crate::algo::redis::redlock::ToMaster;
use crate::driver::family::FamilyStore;
use crate::driver::notify::{Channels, Subscription};
use crate::driver::Clock;

fn lock_ignoring_poison<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One Redis server's key space, on `clock` (the server's clock decides expiry), delivering
/// what its scripts publish to its subscribers at once (unless [`InMemoryRedis::drop_messages`]).
pub struct InMemoryRedis<C> {
    keyspace: Mutex<RedisKeyspace>,
    channels: Channels,
    drop_messages: AtomicBool,
    clock: C,
    down: AtomicBool,
    commands: AtomicU64,
}

impl<C: Clock> InMemoryRedis<C> {
    pub fn new(clock: C) -> Self {
        InMemoryRedis {
            keyspace: Mutex::new(RedisKeyspace::new()),
            channels: Channels::new(),
            drop_messages: AtomicBool::new(false),
            clock,
            down: AtomicBool::new(false),
            commands: AtomicU64::new(0),
        }
    }

    /// Fail every command (nothing applied) until set up again.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::Relaxed);
    }

    /// Lose every published message from now on (or deliver them again).
    pub fn drop_messages(&self, dropped: bool) {
        self.drop_messages.store(dropped, Ordering::Relaxed);
    }

    /// Commands executed (not counting refused ones while down).
    pub fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }

    /// A copy of the key space (for checks).
    pub fn snapshot(&self) -> RedisKeyspace {
        lock_ignoring_poison(&self.keyspace).clone()
    }

    /// The server's clock, in milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_us() / 1000
    }
}

impl<C: Clock> FamilyStore<RedisCommand> for InMemoryRedis<C> {
    type Reply = RedisReply;

    async fn execute(&self, command: RedisCommand) -> Result<RedisReply, StoreFailure> {
        if self.down.load(Ordering::Relaxed) {
            return Err(StoreFailure::Unavailable);
        }
        self.commands.fetch_add(1, Ordering::Relaxed);
        let now_ms = self.now_ms();
        let executed = lock_ignoring_poison(&self.keyspace).execute(&command, now_ms);
        if !self.drop_messages.load(Ordering::Relaxed) {
            for message in &executed.published {
                self.channels.publish(&message.channel);
            }
        }
        Ok(executed.reply)
    }

    async fn subscribe(&self, channel: &str) -> Option<Subscription> {
        Some(self.channels.subscribe(channel))
    }
}

/// Redlock's N independent masters.
pub struct Masters<S> {
    masters: Vec<S>,
}

impl<S> Masters<S> {
    pub fn new(masters: Vec<S>) -> Self {
        Masters { masters }
    }

    pub fn get(&self, index: usize) -> Option<&S> {
        self.masters.get(index)
    }

    pub fn len(&self) -> usize {
        self.masters.len()
    }

    pub fn is_empty(&self) -> bool {
        self.masters.is_empty()
    }
}

impl<S: FamilyStore<RedisCommand, Reply = RedisReply>> FamilyStore<ToMaster> for Masters<S> {
    type Reply = RedisReply;

    async fn execute(&self, command: ToMaster) -> Result<RedisReply, StoreFailure> {
        match self.masters.get(command.master) {
            Some(master) => master.execute(command.command).await,
            None => Err(StoreFailure::Other(format!(
                "no master {} (there are {})",
                command.master,
                self.masters.len()
            ))),
        }
    }
}

/// One Memcached server, on `clock`.
pub struct InMemoryMemcached<C> {
    items: Mutex<Memcached>,
    clock: C,
    down: AtomicBool,
}

impl<C: Clock> InMemoryMemcached<C> {
    pub fn new(clock: C) -> Self {
        InMemoryMemcached {
            items: Mutex::new(Memcached::new()),
            clock,
            down: AtomicBool::new(false),
        }
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Memcached {
        lock_ignoring_poison(&self.items).clone()
    }
}

impl<C: Clock> FamilyStore<MemcachedCommand> for InMemoryMemcached<C> {
    type Reply = MemcachedReply;

    async fn execute(&self, command: MemcachedCommand) -> Result<MemcachedReply, StoreFailure> {
        if self.down.load(Ordering::Relaxed) {
            return Err(StoreFailure::Unavailable);
        }
        let now_ms = self.clock.now_us() / 1000;
        Ok(lock_ignoring_poison(&self.items).apply(&command, now_ms))
    }
}
