//! In-memory servers of the other families, for the family driver's tests and examples: one
//! value type ([`RedisKeyspace`], [`Memcached`]) behind a mutex, its clock the server's, and N
//! of them as Redlock's masters ([`Masters`]).
//!
//! Each answers at once and never fails, unless told to be down ([`InMemoryRedis::set_down`]):
//! then every command fails with [`StoreFailure::Unavailable`] (nothing applied). The
//! simulator's servers are the ones with latency, lost replies, failover and clock faults.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use super::etcd_client::{prefix_of_key, EtcdOp, EtcdOpReply, EtcdServerState};
use super::etcd_keyspace::{EtcdCommand, EtcdKeyspace, EtcdReply};
use super::memcached::{Memcached, MemcachedCommand, MemcachedReply};
use super::redis_keyspace::{RedisCommand, RedisKeyspace, RedisReply};
use super::znode_tree::{SessionId, ZkCommand, ZkOp, ZkReply, ZnodeTree};
use super::StoreFailure;
use crate::algo::redis::redlock::ToMaster;
use crate::algo::server_holder::{ReadState, ServerSnapshot};
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

    async fn read_state(&self, _key: &str) -> Option<Result<Vec<ServerSnapshot>, StoreFailure>> {
        Some(Ok(vec![if self.down.load(Ordering::Relaxed) {
            ServerSnapshot {
                state: ReadState::Down,
                now_ms: self.now_ms(),
            }
        } else {
            ServerSnapshot {
                state: ReadState::Redis(self.snapshot()),
                now_ms: self.now_ms(),
            }
        }]))
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

    /// Every master's state, in order; a master whose reading fails counts as down (it names
    /// nobody: the majority is counted over the others).
    async fn read_state(&self, key: &str) -> Option<Result<Vec<ServerSnapshot>, StoreFailure>> {
        let mut snapshots = Vec::with_capacity(self.masters.len());
        for master in &self.masters {
            match master.read_state(key).await? {
                Ok(one) => snapshots.extend(one),
                Err(_) => snapshots.push(ServerSnapshot {
                    state: ReadState::Down,
                    now_ms: 0,
                }),
            }
        }
        Some(Ok(snapshots))
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

    async fn read_state(&self, _key: &str) -> Option<Result<Vec<ServerSnapshot>, StoreFailure>> {
        let now_ms = self.clock.now_us() / 1000;
        let state = if self.down.load(Ordering::Relaxed) {
            ReadState::Down
        } else {
            ReadState::Memcached(self.snapshot())
        };
        Some(Ok(vec![ServerSnapshot { state, now_ms }]))
    }
}

/// One ZooKeeper server's tree and sessions, on `clock` (it judges the sessions), delivering
/// fired watches to its clients at once.
pub struct InMemoryZooKeeper<C> {
    tree: Mutex<ZnodeTree>,
    clock: C,
    /// Watch events, on the channel `{session}:{directory of the node watched}`.
    channels: Channels,
}

impl<C: Clock> InMemoryZooKeeper<C> {
    pub fn new(clock: C) -> Self {
        InMemoryZooKeeper {
            tree: Mutex::new(ZnodeTree::new()),
            clock,
            channels: Channels::new(),
        }
    }

    /// A copy of the tree (for checks).
    pub fn snapshot(&self) -> ZnodeTree {
        lock_ignoring_poison(&self.tree).clone()
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_us() / 1000
    }

    fn execute(&self, command: &ZkCommand) -> ZkReply {
        let executed = lock_ignoring_poison(&self.tree).execute(command, self.now_ms());
        for event in &executed.fired {
            self.channels
                .publish(&format!("{}:{}", event.session, event.directory()));
        }
        executed.reply
    }
}

/// A client's connection to an [`InMemoryZooKeeper`]: its session, kept alive by a heartbeat
/// task every third of the timeout until [`ZkClient::stop_heartbeat`] (a crashed or paused
/// client) or drop.
pub struct ZkClient<C: Clock + Send + Sync + 'static> {
    server: std::sync::Arc<InMemoryZooKeeper<C>>,
    session: SessionId,
    heartbeat: tokio::task::JoinHandle<()>,
}

impl<C: Clock + Send + Sync + 'static> ZkClient<C> {
    /// Open a session of `timeout_ms` (at least 3 ms: the heartbeat beats every third).
    pub fn connect(server: std::sync::Arc<InMemoryZooKeeper<C>>, timeout_ms: u64) -> Self {
        let timeout_ms = timeout_ms.max(3);
        let session = match server.execute(&ZkCommand::CreateSession { timeout_ms }) {
            ZkReply::SessionCreated { session } => session,
            other => unreachable!("createSession answers a session, not {other:?}"),
        };
        let beating = std::sync::Arc::clone(&server);
        let heartbeat = tokio::spawn(async move {
            loop {
                beating.clock.sleep_ms(timeout_ms / 3).await;
                if beating.execute(&ZkCommand::Ping { session }) != ZkReply::Ok {
                    return; // expired: the client learns it on its next request
                }
            }
        });
        ZkClient {
            server,
            session,
            heartbeat,
        }
    }

    pub fn session(&self) -> SessionId {
        self.session
    }

    /// Stop the heartbeat (the client's process stopped): the session expires after its timeout.
    pub fn stop_heartbeat(&self) {
        self.heartbeat.abort();
    }
}

impl<C: Clock + Send + Sync + 'static> Drop for ZkClient<C> {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

impl<C: Clock + Send + Sync + 'static> FamilyStore<ZkOp> for ZkClient<C> {
    type Reply = ZkReply;

    async fn execute(&self, op: ZkOp) -> Result<ZkReply, StoreFailure> {
        Ok(self.server.execute(&op.on(self.session)))
    }

    /// Watches fired for this session on nodes in `directory`.
    async fn subscribe(&self, directory: &str) -> Option<Subscription> {
        Some(self.server.channels.subscribe(&format!("{}:{directory}", self.session)))
    }

    async fn read_state(&self, _key: &str) -> Option<Result<Vec<ServerSnapshot>, StoreFailure>> {
        Some(Ok(vec![ServerSnapshot {
            state: ReadState::ZooKeeper(self.server.snapshot()),
            now_ms: self.server.now_ms(),
        }]))
    }
}

/// One etcd server's key space, on `clock` (the leader's: it judges the leases), with the
/// deletion watches of its clients, told at once.
pub struct InMemoryEtcd<C> {
    state: Mutex<EtcdServerState>,
    clock: C,
    /// Watch messages, on the channel `{client}:{prefix of the key watched}`.
    channels: Channels,
    clients: AtomicU64,
    commands: AtomicU64,
}

impl<C: Clock> InMemoryEtcd<C> {
    pub fn new(clock: C) -> Self {
        InMemoryEtcd {
            state: Mutex::new(EtcdServerState::new()),
            clock,
            channels: Channels::new(),
            clients: AtomicU64::new(0),
            commands: AtomicU64::new(0),
        }
    }

    /// A copy of the key space (for checks).
    pub fn snapshot(&self) -> EtcdKeyspace {
        lock_ignoring_poison(&self.state).keyspace.clone()
    }

    /// Requests answered so far.
    pub fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }

    /// Run the leader's clock on the leases (a server does between requests too), telling the
    /// watchers of the keys it deletes.
    pub fn expire_leases(&self) {
        let now_ms = self.clock.now_us() / 1000;
        let told = lock_ignoring_poison(&self.state).expire(now_ms);
        self.tell(told);
    }

    fn tell(&self, channels: Vec<String>) {
        for channel in channels {
            self.channels.publish(&channel);
        }
    }

    fn execute(&self, op: &EtcdOp, client: u64) -> EtcdOpReply {
        self.commands.fetch_add(1, Ordering::Relaxed);
        let now_ms = self.clock.now_us() / 1000;
        let channel = match op {
            EtcdOp::WatchDeletion { key, .. } => format!("{client}:{}", prefix_of_key(key)),
            EtcdOp::Kv(_) => String::new(),
        };
        let (reply, told) = lock_ignoring_poison(&self.state).handle(op, &channel, now_ms);
        self.tell(told);
        reply
    }
}

/// A client's connection to an [`InMemoryEtcd`]: the watches it opens are told on its own
/// channels. Sessions (leases) belong to the lock machines, which keep them alive.
pub struct EtcdClient<C> {
    server: std::sync::Arc<InMemoryEtcd<C>>,
    id: u64,
}

impl<C: Clock> EtcdClient<C> {
    pub fn connect(server: std::sync::Arc<InMemoryEtcd<C>>) -> Self {
        let id = server.clients.fetch_add(1, Ordering::Relaxed);
        EtcdClient { server, id }
    }

    /// A request as this client (for tests that act beside the lock).
    pub fn request(&self, command: EtcdCommand) -> EtcdReply {
        match self.server.execute(&EtcdOp::Kv(command), self.id) {
            EtcdOpReply::Kv(reply) => reply,
            other => unreachable!("a key-value request answers a key-value reply, not {other}"),
        }
    }
}

impl<C: Clock + Send + Sync + 'static> FamilyStore<EtcdOp> for EtcdClient<C> {
    type Reply = EtcdOpReply;

    async fn execute(&self, op: EtcdOp) -> Result<EtcdOpReply, StoreFailure> {
        Ok(self.server.execute(&op, self.id))
    }

    /// Deletions this client watches of keys under `prefix`.
    async fn subscribe(&self, prefix: &str) -> Option<Subscription> {
        Some(self.server.channels.subscribe(&format!("{}:{prefix}", self.id)))
    }

    async fn read_state(&self, _key: &str) -> Option<Result<Vec<ServerSnapshot>, StoreFailure>> {
        Some(Ok(vec![ServerSnapshot {
            state: ReadState::Etcd(self.server.snapshot()),
            now_ms: self.server.clock.now_us() / 1000,
        }]))
    }
}
