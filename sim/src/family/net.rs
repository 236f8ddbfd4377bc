//! The simulated servers of the other families and the clients' way to them.
//!
//! - **A server is a madsim node** with its own [`SimClock`] (offset, drift, jumps: the clock
//!   that decides expiry) and its data in an `Arc` captured by the node's `init`, so that it
//!   survives a restart of the node as a disk would; [`ServerData`] says which value type it
//!   holds: one Redis key space, a Redis primary+replica pair (`ReplicatedRedis`), or one
//!   Memcached server. A command is applied when it *arrives* (after an optional extra delay
//!   of a slow window, [`Slow`]), on the server's clock at that moment.
//! - **A replicated pair** is two nodes sharing one `ReplicatedRedis`: the primary applies and
//!   acknowledges at once; each batch of effects reaches the replica `lag_ms` later, in order.
//!   A failover ([`Replication::failover`]) kills the primary node, drops what was pending and
//!   points the clients at the promoted replica, which from then on applies commands on *its*
//!   clock. Clients find the current primary at once (a perfect Sentinel).
//! - **The client side**, [`SimServerStore`], sends each command over madsim RPC with a
//!   request timeout. The failure it reports says what the client can know: a server that is
//!   down or a link that refuses (a [`Cut`] in mode [`CutMode::Refused`]) fails at once with
//!   `Unavailable`, the command surely not applied; a lost request ([`CutMode::Dropped`]), a lost
//!   reply, a crash while the request was in flight or a slow server all end in `Timeout` after
//!   the request timeout: the command may or may not have applied.
//! - **ZooKeeper and etcd** ([`ServerData::ZooKeeper`], [`ServerData::Etcd`]): the server node
//!   judges sessions or leases on its clock at every request and on a pass of its own every
//!   [`EXPIRY_TICK_MS`]; a fired watch goes to the client that set it, as a message of the same
//!   kind as an unlock message (same latency, delay and loss). [`SimZkStore`] is a ZooKeeper
//!   client's side: its session, opened on demand and kept alive by a heartbeat task of the
//!   client's node, replaced after it expired.
//! - **Pub/sub** ([`PubSub`], Redisson's unlock message): a client subscribes to a channel
//!   while one of its calls waits in `lock()` (the registry is the logical server's, so a
//!   subscription survives a failover or a restart, as if the client resubscribed at once);
//!   when a command the server applies publishes on it,
//!   the server node sends the message to each subscriber over the simulated network (the
//!   network's latency, plus an optional delay), or loses it (per message and subscriber,
//!   drawn from the seed). The client's own [`Channels`] wakes its waiters; a message sent from
//!   a primary that dies before it leaves is lost with the node.
//! - **The fair lock's queue, seen by the server** ([`FairObserver`]): for Redisson's fair lock,
//!   the server node reports each acquire, release and give-up it applies with what it did to
//!   the queue: whether it granted the lock, and which waiters it dropped. The judges of queue
//!   order (F-order) and of waiters dropped without being told (F-drop) read these records, not
//!   the clients' guesses of when their requests arrived. The lock's decisions stay in the
//!   keyspace's scripts: the observer only compares the queue before and after.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use cassalock::driver::family::FamilyStore;
use cassalock::driver::notify::{Channels, Subscription};
use cassalock::store::etcd_client::{prefix_of_key, EtcdOp, EtcdOpReply, EtcdServerState};
use cassalock::store::memcached::{Memcached, MemcachedCommand, MemcachedReply};
use cassalock::store::redis_keyspace::{
    fair_queue_key, fair_timeouts_key, Published, RedisCommand, RedisKeyspace, RedisReply, RedisValue,
};
use cassalock::store::redis_replication::ReplicatedRedis;
use cassalock::store::znode_tree::{SessionId, ZkCommand, ZkError, ZkOp, ZkReply, ZnodeTree};
use cassalock::store::StoreFailure;
use cassalock::Clock;
use madsim::net::rpc::{Deserialize, Request, Serialize};
use madsim::net::Endpoint;
use tokio::time::Instant;

use crate::clock::SimClock;

mod fair;
pub use fair::*;

/// The port every family server listens on.
pub const PORT: u16 = 6379;

/// The address of server node `node` (a pair's replica is a node of its own).
pub fn server_addr(node: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1 + node as u8)), PORT)
}

pub fn client_ip(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 1, 1, 1 + i as u8))
}

pub fn resource_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 1, 2, 1)), PORT)
}

/// The port on which a client receives the messages of its subscriptions.
pub const NOTIFY_PORT: u16 = 6380;

/// Where client `i` receives the messages of its subscriptions.
pub fn notify_addr(i: usize) -> SocketAddr {
    SocketAddr::new(client_ip(i), NOTIFY_PORT)
}

/// Server → subscriber: a message was published on `channel` (Redisson's unlock message; its
/// content, always the same, is not carried).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UnlockMessage {
    pub channel: String,
}
impl Request for UnlockMessage {
    type Response = ();
    const ID: u64 = 0xFA41_0003;
}

/// Told of every message the server sends to a subscriber: (subscriber, lost).
pub type MessageObserver = Box<dyn Fn(usize, bool) + Send + Sync>;

/// A Redis server's pub/sub: the subscribers of each channel, and how messages travel.
pub struct PubSub {
    /// Per channel, each subscribed client and where its messages are delivered.
    subscribers: Mutex<BTreeMap<String, BTreeMap<usize, Weak<Channels>>>>,
    /// Per message and subscriber, parts per million: lost.
    lost_ppm: u32,
    /// Added to the network's latency.
    delay: Duration,
    /// How long the server's send waits for the subscriber (a paused client's messages queue).
    timeout: Duration,
    observer: MessageObserver,
}

impl PubSub {
    pub fn new(lost_ppm: u32, delay: Duration, timeout: Duration, observer: MessageObserver) -> Self {
        PubSub {
            subscribers: Mutex::new(BTreeMap::new()),
            lost_ppm,
            delay,
            timeout,
            observer,
        }
    }

    /// Client `client` subscribes to `channel`, its messages delivered to `channels`.
    pub fn subscribe(&self, channel: &str, client: usize, channels: &Arc<Channels>) {
        lock(&self.subscribers)
            .entry(channel.to_owned())
            .or_default()
            .insert(client, Arc::downgrade(channels));
    }

    /// The clients subscribed to `channel` now. A client whose waiters all returned from
    /// `lock()` has dropped its subscriptions (Redisson unsubscribes when no thread of the
    /// process waits). A client counts only while it has a live subscription to this very
    /// channel (the fair lock has one channel per waiter).
    fn subscribers_of(&self, channel: &str) -> Vec<usize> {
        lock(&self.subscribers)
            .get(channel)
            .map(|clients| {
                clients
                    .iter()
                    .filter(|(_, channels)| {
                        channels
                            .upgrade()
                            .is_some_and(|channels| channels.is_subscribed(channel))
                    })
                    .map(|(client, _)| *client)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Send `channel`'s message from the server at `from` to client `client`, on a task of the
    /// calling node (it dies with the node), late by the network's latency and the delay, or
    /// lost.
    fn send(self: &Arc<Self>, from: IpAddr, client: usize, channel: String) {
        let lost = self.draw_lost();
        (self.observer)(client, lost);
        if lost {
            return;
        }
        let pubsub = Arc::clone(self);
        tokio::spawn(async move {
            if !pubsub.delay.is_zero() {
                tokio::time::sleep(pubsub.delay).await;
            }
            // A sending endpoint of its own: the node's serving endpoint is held by its
            // handlers, which must not hold it back.
            let Ok(endpoint) = Endpoint::bind(SocketAddr::new(from, 0)).await else {
                return;
            };
            let _ = endpoint
                .call_timeout(notify_addr(client), UnlockMessage { channel }, pubsub.timeout)
                .await;
        });
    }

    /// Is this message lost? Drawn from madsim's generator only when some are (a run without
    /// losses draws what it always drew).
    fn draw_lost(&self) -> bool {
        use rand::Rng;
        match self.lost_ppm {
            0 => false,
            ppm if ppm >= 1_000_000 => true,
            ppm => madsim::rand::thread_rng().gen_range(0..1_000_000u32) < ppm,
        }
    }
}

impl std::fmt::Debug for PubSub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PubSub")
            .field("subscribers", &*lock(&self.subscribers))
            .field("lost_ppm", &self.lost_ppm)
            .field("delay", &self.delay)
            .finish()
    }
}

/// Client → Redis server: one command.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RedisCall(pub RedisCommand);
impl Request for RedisCall {
    type Response = Result<RedisReply, StoreFailure>;
    const ID: u64 = 0xFA41_0001;
}

/// Client → Memcached server: one command.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MemcachedCall(pub MemcachedCommand);
impl Request for MemcachedCall {
    type Response = Result<MemcachedReply, StoreFailure>;
    const ID: u64 = 0xFA41_0002;
}

/// Client → ZooKeeper server: one command from client `client`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZkCall {
    pub client: usize,
    pub command: ZkCommand,
}
impl Request for ZkCall {
    type Response = Result<ZkReply, StoreFailure>;
    const ID: u64 = 0xFA41_0004;
}

/// Client → etcd server: one request from client `client`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EtcdCall {
    pub client: usize,
    pub op: EtcdOp,
}
impl Request for EtcdCall {
    type Response = Result<EtcdOpReply, StoreFailure>;
    const ID: u64 = 0xFA41_0005;
}

/// What a server node holds.
#[derive(Clone, Debug)]
pub enum ServerData {
    Redis(RedisKeyspace),
    /// A primary and its replica (two nodes share it).
    Pair(ReplicatedRedis),
    Memcached(Memcached),
    /// A ZooKeeper server: its tree and sessions, and which client opened each session (where
    /// its fired watches are sent).
    ZooKeeper {
        tree: ZnodeTree,
        owners: BTreeMap<SessionId, usize>,
    },
    /// An etcd server (a one-member cluster): its key space and leases, and the deletion
    /// watches of its clients (each watch's channel is `{client}:{prefix}`).
    Etcd(EtcdServerState),
}

impl ServerData {
    /// A ZooKeeper server whose expired sessions close `close_lag_ms` after they are refused
    /// ([`ZnodeTree::with_close_lag_ms`]; 0: at once).
    pub fn zookeeper(close_lag_ms: u64) -> Self {
        ServerData::ZooKeeper {
            tree: ZnodeTree::with_close_lag_ms(close_lag_ms),
            owners: BTreeMap::new(),
        }
    }

    pub fn etcd() -> Self {
        ServerData::Etcd(EtcdServerState::new())
    }

    /// A ZooKeeper or etcd server judges sessions or leases on its clock between requests too.
    pub fn has_expiry_ticker(&self) -> bool {
        matches!(self, ServerData::ZooKeeper { .. } | ServerData::Etcd(_))
    }
}

/// How often a ZooKeeper or etcd server looks for sessions or leases that ran out (ZooKeeper
/// checks once per tick, 2 s by default; etcd's lessor every 500 ms): a holder's node or key
/// outlives its session or lease by up to this much.
pub const EXPIRY_TICK_MS: u64 = 100;

/// An etcd watch channel `{client}:{prefix}` split into its client and the prefix.
fn etcd_watch_target(channel: &str) -> Option<(usize, &str)> {
    let (client, prefix) = channel.split_once(':')?;
    Some((client.parse().ok()?, prefix))
}

/// A window of global time (ms since the run began) in which a server takes `extra_ms` longer
/// before applying each command that arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slow {
    pub from_ms: u64,
    pub to_ms: u64,
    pub extra_ms: u64,
}

/// How a cut link fails a request (in a scenario file: `refused`, `dropped`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CutMode {
    /// At once, `Unavailable` (no route, connection refused): surely not applied.
    Refused,
    /// The request is lost; the client waits out its timeout and hears `Timeout`.
    Dropped,
}

/// Client `client` (every client: `None`) cannot reach logical server `server` during
/// `from_ms..to_ms` of global time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    pub client: Option<usize>,
    pub server: usize,
    pub from_ms: u64,
    pub to_ms: u64,
    pub mode: CutMode,
}

/// Where a logical server is reachable now, and whether it is up.
#[derive(Debug)]
pub struct ServerSlot {
    /// The node serving it (changes on a failover).
    node: AtomicU64,
    up: AtomicBool,
}

impl ServerSlot {
    pub fn new(node: usize) -> Self {
        ServerSlot {
            node: AtomicU64::new(node as u64),
            up: AtomicBool::new(true),
        }
    }

    pub fn node(&self) -> usize {
        self.node.load(Ordering::SeqCst) as usize
    }

    pub fn set_node(&self, node: usize) {
        self.node.store(node as u64, Ordering::SeqCst);
    }

    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }

    pub fn set_up(&self, up: bool) {
        self.up.store(up, Ordering::SeqCst);
    }
}

/// The network as the clients see it: logical servers, cuts, the request timeout.
#[derive(Debug)]
pub struct FamilyNet {
    pub start: Instant,
    pub slots: Vec<ServerSlot>,
    pub cuts: Vec<Cut>,
    pub request_timeout: Duration,
    /// Per request, parts per million: the request is lost (not applied; the client times out).
    pub lost_request_ppm: u32,
    /// Per request, parts per million: the command applies, its reply is lost (the client
    /// times out).
    pub lost_reply_ppm: u32,
    /// The Redis server's pub/sub, where the lock's waiters are notified (Redisson).
    pub pubsub: Option<Arc<PubSub>>,
}

/// Which message of a request a loss fault drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loss {
    Request,
    Reply,
}

impl FamilyNet {
    /// This request's loss, drawn from madsim's generator only when losses are on (a run
    /// without them draws what it always drew).
    fn draw_loss(&self) -> Option<Loss> {
        use rand::Rng;
        if self.lost_request_ppm == 0 && self.lost_reply_ppm == 0 {
            return None;
        }
        let draw = madsim::rand::thread_rng().gen_range(0..1_000_000u32);
        if draw < self.lost_request_ppm {
            Some(Loss::Request)
        } else if draw < self.lost_request_ppm.saturating_add(self.lost_reply_ppm) {
            Some(Loss::Reply)
        } else {
            None
        }
    }

    fn cut(&self, client: usize, server: usize) -> Option<CutMode> {
        let now_ms = self.start.elapsed().as_millis() as u64;
        self.cuts
            .iter()
            .find(|cut| {
                cut.server == server
                    && cut.client.is_none_or(|c| c == client)
                    && (cut.from_ms..cut.to_ms).contains(&now_ms)
            })
            .map(|cut| cut.mode)
    }
}

/// The asynchronous replication of a pair: its lag, and the failover's generation (a batch
/// scheduled before a failover is not delivered after it).
#[derive(Debug)]
pub struct Replication {
    pub lag_ms: u64,
    generation: AtomicU64,
}

impl Replication {
    pub fn new(lag_ms: u64) -> Self {
        Replication {
            lag_ms,
            generation: AtomicU64::new(0),
        }
    }

    /// Promote the replica: pending batches lost. Returns how many. The caller kills the old
    /// primary's node and points the slot at the replica's.
    pub fn failover(&self, data: &Mutex<ServerData>) -> usize {
        self.generation.fetch_add(1, Ordering::SeqCst);
        match &mut *lock(data) {
            ServerData::Pair(pair) => pair.failover(),
            other => panic!("failover of a server without a replica: {other:?}"),
        }
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The clients to tell of fired ZooKeeper watches: each to the client that opened the
/// watching session, on its lock's directory.
fn zk_told(
    owners: &BTreeMap<SessionId, usize>,
    fired: &[cassalock::store::znode_tree::WatchEvent],
) -> Vec<(usize, String)> {
    fired
        .iter()
        .filter_map(|event| {
            let client = owners.get(&event.session)?;
            Some((*client, event.directory().to_owned()))
        })
        .collect()
}

/// Drop the owners of sessions the tree no longer has (bounded: one entry per live session).
fn forget_closed_sessions(tree: &ZnodeTree, owners: &mut BTreeMap<SessionId, usize>) {
    owners.retain(|session, _| tree.session(*session).is_some());
}

/// The clients to tell of fired etcd deletion watches, from their `{client}:{prefix}` channels.
fn etcd_told(channels: &[String]) -> Vec<(usize, String)> {
    channels
        .iter()
        .filter_map(|channel| {
            let (client, prefix) = etcd_watch_target(channel)?;
            Some((client, prefix.to_owned()))
        })
        .collect()
}

/// One server node (a pair has two, sharing `data`).
#[derive(Clone)]
pub struct ServerNode {
    pub node: usize,
    pub data: Arc<Mutex<ServerData>>,
    pub clock: SimClock,
    pub slow: Vec<Slow>,
    pub start: Instant,
    pub replication: Option<Arc<Replication>>,
    pub pubsub: Option<Arc<PubSub>>,
    /// Told what each fair-lock script did to the queue (Redisson's fair lock only).
    pub fair: Option<Arc<FairObserver>>,
}

impl ServerNode {
    fn extra_delay(&self) -> Duration {
        let now_ms = self.start.elapsed().as_millis() as u64;
        let extra_ms = self
            .slow
            .iter()
            .filter(|slow| (slow.from_ms..slow.to_ms).contains(&now_ms))
            .map(|slow| slow.extra_ms)
            .max()
            .unwrap_or(0);
        Duration::from_millis(extra_ms)
    }

    fn apply_redis(&self, command: &RedisCommand) -> Result<RedisReply, StoreFailure> {
        let now_ms = self.clock.now_us() / 1000;
        let fair = self.fair.as_ref().zip(fair_script(command));
        let mut fair_step_done = None;
        let executed = {
            let mut data = lock(&self.data);
            let snapshot = |data: &ServerData, key: &str| match data {
                ServerData::Redis(keyspace) => fair_snapshot(keyspace, key),
                ServerData::Pair(pair) => fair_snapshot(pair.primary(), key),
                _ => Default::default(),
            };
            let before = fair.map(|(_, (_, key, _))| snapshot(&data, key));
            let executed = match &mut *data {
                ServerData::Redis(keyspace) => keyspace.execute(command, now_ms),
                ServerData::Pair(pair) => {
                    let executed = pair
                        .apply(command, now_ms)
                        .map_err(|e| StoreFailure::Other(e.to_string()))?;
                    if !executed.effects.is_empty() {
                        self.schedule_delivery();
                    }
                    executed
                }
                _ => return Err(StoreFailure::Other("a Redis command sent to another store".into())),
            };
            if let (Some((observer, (script, key, owner))), Some(before)) = (fair, before) {
                let after = snapshot(&data, key);
                let step = fair_step(self.node, script, owner, &executed.reply, &before, &after);
                fair_step_done = Some((observer, step));
            }
            executed
        };
        // Told outside the data's lock (the observer may read the servers).
        if let Some((observer, step)) = fair_step_done {
            observer(step);
        }
        self.publish(&executed.published);
        Ok(executed.reply)
    }

    /// Send what a command published to the channel's subscribers, each message on a task of
    /// this node (it dies with the node), late by the network's latency and the pub/sub's
    /// delay, or lost.
    fn publish(&self, published: &[Published]) {
        let Some(pubsub) = &self.pubsub else {
            return;
        };
        for message in published {
            for client in pubsub.subscribers_of(&message.channel) {
                pubsub.send(server_addr(self.node).ip(), client, message.channel.clone());
            }
        }
    }

    /// The batch just pushed reaches the replica `lag_ms` from now (batches stay in order:
    /// every one waits the same lag).
    fn schedule_delivery(&self) {
        let Some(replication) = self.replication.clone() else {
            return;
        };
        let generation = replication.generation.load(Ordering::SeqCst);
        let data = Arc::clone(&self.data);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(replication.lag_ms)).await;
            if replication.generation.load(Ordering::SeqCst) != generation {
                return; // a failover came first: the batch is lost
            }
            if let ServerData::Pair(pair) = &mut *lock(&data) {
                pair.deliver(1);
            }
        });
    }

    fn apply_memcached(&self, command: &MemcachedCommand) -> Result<MemcachedReply, StoreFailure> {
        let now_ms = self.clock.now_us() / 1000;
        match &mut *lock(&self.data) {
            ServerData::Memcached(items) => Ok(items.apply(command, now_ms)),
            _ => Err(StoreFailure::Other("a Memcached command sent to another store".into())),
        }
    }

    /// A ZooKeeper command on the server's clock; the watches it fired go to the clients
    /// whose sessions set them.
    fn apply_zk(&self, client: usize, command: &ZkCommand) -> Result<ZkReply, StoreFailure> {
        let now_ms = self.clock.now_us() / 1000;
        let (reply, told) = match &mut *lock(&self.data) {
            ServerData::ZooKeeper { tree, owners } => {
                let executed = tree.execute(command, now_ms);
                if let ZkReply::SessionCreated { session } = &executed.reply {
                    owners.insert(*session, client);
                }
                let told = zk_told(owners, &executed.fired);
                forget_closed_sessions(tree, owners);
                (executed.reply, told)
            }
            _ => return Err(StoreFailure::Other("a ZooKeeper command sent to another store".into())),
        };
        self.notify(told);
        Ok(reply)
    }

    /// An etcd request on the server's clock, after expiring the leases that ran out; the
    /// deletion watches it (or the expiry) fired go to their clients.
    fn apply_etcd(&self, client: usize, op: &EtcdOp) -> Result<EtcdOpReply, StoreFailure> {
        let now_ms = self.clock.now_us() / 1000;
        let (reply, told) = match &mut *lock(&self.data) {
            ServerData::Etcd(server) => {
                let channel = match op {
                    EtcdOp::WatchDeletion { key, .. } => format!("{client}:{}", prefix_of_key(key)),
                    EtcdOp::Kv(_) => String::new(),
                };
                let (reply, told) = server.handle(op, &channel, now_ms);
                (reply, etcd_told(&told))
            }
            _ => return Err(StoreFailure::Other("an etcd request sent to another store".into())),
        };
        self.notify(told);
        Ok(reply)
    }

    /// The server's own pass over sessions or leases (between requests), every
    /// [`EXPIRY_TICK_MS`] of its clock.
    fn expire(&self) {
        let now_ms = self.clock.now_us() / 1000;
        let told = match &mut *lock(&self.data) {
            ServerData::ZooKeeper { tree, owners } => {
                let executed = tree.expire_sessions(now_ms);
                let told = zk_told(owners, &executed.fired);
                forget_closed_sessions(tree, owners);
                told
            }
            ServerData::Etcd(server) => etcd_told(&server.expire(now_ms)),
            _ => Vec::new(),
        };
        self.notify(told);
    }

    /// Send each (client, channel) a watch message, as [`PubSub`] sends unlock messages.
    fn notify(&self, told: Vec<(usize, String)>) {
        let Some(pubsub) = &self.pubsub else {
            return;
        };
        for (client, channel) in told {
            pubsub.send(server_addr(self.node).ip(), client, channel);
        }
    }

    /// The node's main task, run again on every restart.
    pub async fn serve(self) {
        let endpoint = Endpoint::bind(server_addr(self.node))
            .await
            .expect("server address free");
        // Each store's handlers only (a handler is a task: a Redis node keeps the tasks, and so
        // the schedule and the random draws, its runs always had).
        let coordination = lock(&self.data).has_expiry_ticker();
        if !coordination {
            let this = self.clone();
            endpoint.add_rpc_handler(move |RedisCall(command)| {
                let this = this.clone();
                async move {
                    let extra = this.extra_delay();
                    if !extra.is_zero() {
                        tokio::time::sleep(extra).await;
                    }
                    this.apply_redis(&command)
                }
            });
            let this = self.clone();
            endpoint.add_rpc_handler(move |MemcachedCall(command)| {
                let this = this.clone();
                async move {
                    let extra = this.extra_delay();
                    if !extra.is_zero() {
                        tokio::time::sleep(extra).await;
                    }
                    this.apply_memcached(&command)
                }
            });
        } else {
            let this = self.clone();
            endpoint.add_rpc_handler(move |ZkCall { client, command }| {
                let this = this.clone();
                async move {
                    let extra = this.extra_delay();
                    if !extra.is_zero() {
                        tokio::time::sleep(extra).await;
                    }
                    this.apply_zk(client, &command)
                }
            });
            let this = self.clone();
            endpoint.add_rpc_handler(move |EtcdCall { client, op }| {
                let this = this.clone();
                async move {
                    let extra = this.extra_delay();
                    if !extra.is_zero() {
                        tokio::time::sleep(extra).await;
                    }
                    this.apply_etcd(client, &op)
                }
            });
            // Sessions or leases run out between requests too; bounded by the node's life
            // (the run stops every node at its end).
            loop {
                self.clock.sleep_ms(EXPIRY_TICK_MS).await;
                self.expire();
            }
        }
        // Keep the endpoint (and its handlers) for the node's life.
        std::future::pending::<()>().await;
        drop(endpoint);
    }
}

/// A client's connection to one logical server.
#[derive(Clone)]
pub struct SimServerStore {
    pub endpoint: Endpoint,
    pub client: usize,
    pub server: usize,
    pub net: Arc<FamilyNet>,
    /// Where this client's subscriptions deliver (`None`: the store has no pub/sub).
    pub channels: Option<Arc<Channels>>,
}

impl SimServerStore {
    pub async fn call<R>(&self, request: R) -> Result<<R::Response as Answer>::Ok, StoreFailure>
    where
        R: Request,
        R::Response: Answer,
    {
        let slot = &self.net.slots[self.server];
        match self.net.cut(self.client, self.server) {
            Some(CutMode::Refused) => {
                tokio::time::sleep(Duration::from_millis(1)).await;
                return Err(StoreFailure::Unavailable);
            }
            Some(CutMode::Dropped) => {
                tokio::time::sleep(self.net.request_timeout).await;
                return Err(StoreFailure::Timeout);
            }
            None => {}
        }
        if !slot.is_up() {
            // Connection refused: the server is down, nothing was applied.
            tokio::time::sleep(Duration::from_millis(1)).await;
            return Err(StoreFailure::Unavailable);
        }
        let lost = self.net.draw_loss();
        if lost == Some(Loss::Request) {
            tokio::time::sleep(self.net.request_timeout).await;
            return Err(StoreFailure::Timeout);
        }
        let sent = Instant::now();
        if lost == Some(Loss::Reply) {
            // The server applies the command; its answer never arrives.
            let _ = self
                .endpoint
                .call_timeout(server_addr(slot.node()), request, self.net.request_timeout)
                .await;
            tokio::time::sleep_until(sent + self.net.request_timeout).await;
            return Err(StoreFailure::Timeout);
        }
        match self
            .endpoint
            .call_timeout(server_addr(slot.node()), request, self.net.request_timeout)
            .await
        {
            Ok(answer) => answer.into_result(),
            Err(_) => Err(StoreFailure::Timeout),
        }
    }
}

/// An RPC answer that is a store result.
pub trait Answer {
    type Ok;
    fn into_result(self) -> Result<Self::Ok, StoreFailure>;
}

impl<T> Answer for Result<T, StoreFailure> {
    type Ok = T;
    fn into_result(self) -> Result<T, StoreFailure> {
        self
    }
}

impl FamilyStore<RedisCommand> for SimServerStore {
    type Reply = RedisReply;
    async fn execute(&self, command: RedisCommand) -> Result<RedisReply, StoreFailure> {
        self.call(RedisCall(command)).await
    }

    /// `SUBSCRIBE channel`: the server's registry learns of this client, the client's own
    /// `Channels` hands out the subscription its messages wake.
    async fn subscribe(&self, channel: &str) -> Option<Subscription> {
        let (pubsub, channels) = (self.net.pubsub.as_ref()?, self.channels.as_ref()?);
        let subscription = channels.subscribe(channel);
        pubsub.subscribe(channel, self.client, channels);
        Some(subscription)
    }
}

impl FamilyStore<MemcachedCommand> for SimServerStore {
    type Reply = MemcachedReply;
    async fn execute(&self, command: MemcachedCommand) -> Result<MemcachedReply, StoreFailure> {
        self.call(MemcachedCall(command)).await
    }
}

impl FamilyStore<EtcdOp> for SimServerStore {
    type Reply = EtcdOpReply;
    async fn execute(&self, op: EtcdOp) -> Result<EtcdOpReply, StoreFailure> {
        self.call(EtcdCall {
            client: self.client,
            op,
        })
        .await
    }

    /// Deletions this client watches of keys under `prefix` (the server sends them to this
    /// client's notification endpoint).
    async fn subscribe(&self, prefix: &str) -> Option<Subscription> {
        Some(self.channels.as_ref()?.subscribe(prefix))
    }
}

/// A client's ZooKeeper connection: one session at a time, opened by the first request that
/// needs it and kept alive by a heartbeat task of the client's node (a ping every third of the
/// timeout, so a paused process stops it). A request answered `SESSIONEXPIRED` forgets the
/// session, and the next request opens a new one (Curator's client makes a new handle after
/// LOST). A ping answered `SESSIONEXPIRED` forgets it too, wakes every watcher of the client
/// (a ZooKeeper client delivers the Expired event to each), and the next request is answered
/// `SESSIONEXPIRED` by the connection itself, as the real client's dead handle answers: a
/// lock machine learns that the session its node belongs to is over, even when the server has
/// not deleted that node yet ([`ServerData::zookeeper`]'s close lag).
#[derive(Clone)]
pub struct SimZkStore {
    pub conn: SimServerStore,
    pub session_timeout_ms: u64,
    session: Arc<Mutex<Option<SessionId>>>,
    /// The heartbeat found the session expired and no request has been told yet.
    expiry_untold: Arc<AtomicBool>,
    /// Sessions opened so far (a bound on the heartbeats ever started).
    opened: Arc<AtomicU64>,
}

/// Most sessions one client opens in a run (each expiry costs one): past it, every request
/// fails (`StoreFailure::Other`, saying so).
pub const MAX_SESSIONS_PER_CLIENT: u64 = 1000;

impl SimZkStore {
    pub fn new(conn: SimServerStore, session_timeout_ms: u64) -> Self {
        SimZkStore {
            conn,
            session_timeout_ms: session_timeout_ms.max(3),
            session: Arc::new(Mutex::new(None)),
            expiry_untold: Arc::new(AtomicBool::new(false)),
            opened: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The current session, opening one (and its heartbeat) if there is none.
    async fn session(&self) -> Result<SessionId, StoreFailure> {
        if let Some(session) = *lock(&self.session) {
            return Ok(session);
        }
        if self.opened.load(Ordering::SeqCst) >= MAX_SESSIONS_PER_CLIENT {
            return Err(StoreFailure::Other(format!(
                "{MAX_SESSIONS_PER_CLIENT} sessions opened by one client: the limit"
            )));
        }
        let reply = self
            .conn
            .call(ZkCall {
                client: self.conn.client,
                command: ZkCommand::CreateSession {
                    timeout_ms: self.session_timeout_ms,
                },
            })
            .await?;
        let ZkReply::SessionCreated { session } = reply else {
            return Err(StoreFailure::Other(format!("createSession answered {reply}")));
        };
        self.opened.fetch_add(1, Ordering::SeqCst);
        // Two tasks may both have opened one: the first stored wins, the other's expires.
        let current = *lock(&self.session).get_or_insert(session);
        if current == session {
            self.start_heartbeat(session);
        }
        Ok(current)
    }

    /// Forget `session` if it is the current one (true then).
    fn forget(&self, session: SessionId) -> bool {
        let mut current = lock(&self.session);
        let was_current = *current == Some(session);
        if was_current {
            *current = None;
        }
        was_current
    }

    /// Ping every third of the timeout while `session` is the current one.
    fn start_heartbeat(&self, session: SessionId) {
        let this = self.clone();
        tokio::spawn(async move {
            let every = Duration::from_millis(this.session_timeout_ms / 3);
            // Bounded by the session's life: it ends when the session is no longer current,
            // and the run stops the node at its end.
            while *lock(&this.session) == Some(session) {
                tokio::time::sleep(every).await;
                let ping = ZkCall {
                    client: this.conn.client,
                    command: ZkCommand::Ping { session },
                };
                if let Ok(ZkReply::Error(ZkError::SessionExpired)) = this.conn.call(ping).await {
                    if this.forget(session) {
                        this.expiry_untold.store(true, Ordering::SeqCst);
                        if let Some(channels) = &this.conn.channels {
                            for name in channels.subscribed_names() {
                                channels.publish(&name);
                            }
                        }
                    }
                }
            }
        });
    }
}

impl FamilyStore<ZkOp> for SimZkStore {
    type Reply = ZkReply;
    async fn execute(&self, op: ZkOp) -> Result<ZkReply, StoreFailure> {
        if self.expiry_untold.swap(false, Ordering::SeqCst) {
            return Ok(ZkReply::Error(ZkError::SessionExpired));
        }
        let session = self.session().await?;
        let reply = self
            .conn
            .call(ZkCall {
                client: self.conn.client,
                command: op.on(session),
            })
            .await?;
        if reply == ZkReply::Error(ZkError::SessionExpired) {
            self.forget(session);
            // Told now: the heartbeat's finding, if it came first, is not told again.
            self.expiry_untold.store(false, Ordering::SeqCst);
        }
        Ok(reply)
    }

    /// Watches fired for this client's sessions on nodes in `directory`.
    async fn subscribe(&self, directory: &str) -> Option<Subscription> {
        Some(self.conn.channels.as_ref()?.subscribe(directory))
    }
}

#[cfg(test)]
mod tests;
