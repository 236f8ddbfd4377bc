//! A real ZooKeeper ensemble as a [`FamilyStore`] of [`ZkOp`]s, over the `zookeeper-client`
//! crate (async, on tokio): what [`cassalock::algo::family::CuratorLock`] (our sans-IO machine
//! of Curator's `InterProcessMutex`) asks of a server. The crate's own lock recipe is not used:
//! the real run checks *our* machine's steps against real servers, the same machine the model
//! and the simulator check.
//!
//! One store is one client session (one locker), with the session timeout it is made with; the
//! crate keeps the session alive (its heartbeat) and moves it to another server of the list
//! when one goes. Every reply is translated to the [`ZkReply`] that
//! [`cassalock::store::znode_tree::ZnodeTree::execute`] gives for the same command (the
//! differential test in `cli/tests/real_servers.rs` holds the two to that, zxids and session
//! ids compared by order, not value).
//!
//! - **Errors** the tree answers are replies: `NoNode`, `NodeExists`, `BadVersion`,
//!   `NotEmpty`, `NoChildrenForEphemerals`, `SessionExpired`, `BadArguments` (a path the crate
//!   refuses before sending). Children come back sorted, as the tree answers them.
//! - **A session that expired** answers `SessionExpired` to the request that finds it out; the
//!   store then opens a new session for the next request (as Curator's client makes a new
//!   ZooKeeper handle after LOST). The old session's ephemeral nodes are gone with it, so a
//!   holder that was paused past its timeout learns it lost the lock (its release answers "no
//!   node"). The in-memory client never reconnects; the lock machines read both the same way.
//! - **Failures**: no answer within the command timeout, or the connection lost with the request
//!   in flight: [`StoreFailure::Timeout`] (a write may have applied); no server reachable for a
//!   new session: [`StoreFailure::Unavailable`]; anything else the crate reports:
//!   [`StoreFailure::Other`].
//! - **Watches**: `GetData`/`Exists`/`GetChildren` with `watch: true` leave the server's
//!   one-shot watch; a task waits for it and, when it fires (or the session ends), publishes on
//!   this store's channel for the *directory* of the node watched, which is what the in-memory
//!   server publishes and what the driver's waiter subscribed to ([`FamilyStore::subscribe`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zookeeper_client as zk;

use cassalock::algo::server_holder::{ReadState, ServerSnapshot};
use cassalock::algo::zookeeper::curator_mutex::directory_of as directory_of_key;
use cassalock::driver::family::FamilyStore;
use cassalock::driver::notify::{Channels, Subscription};
use cassalock::store::znode_tree::{ZkError, ZkOp, ZkReply, ZkStat, Znode, ZnodeTree};
use cassalock::store::StoreFailure;

/// Why a [`RealZooKeeper`] could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RealZooKeeperError {
    #[error("ZooKeeper servers: give host:port[,host:port...], not {0:?}")]
    Servers(String),
    #[error("the session timeout must be 1000 to 60000 ms (the script's servers' bounds), not {0}")]
    SessionTimeout(u64),
}

/// The most a request waits for its answer beyond the session timeout (a request outlives a
/// move to another server, which takes up to about a session timeout).
const COMMAND_SLACK_MS: u64 = 2000;

/// How long T1-server's reading of a lock's directory may take in all (its children, then
/// each one's stat); past it the server names nobody, and the holder goes on.
const READ_TIMEOUT_MS: u64 = 1000;

/// The most children of a lock's directory a reading takes in (one stat each).
const MAX_READ_CHILDREN: usize = 256;

/// How long making a new session may take.
const CONNECT_TIMEOUT_MS: u64 = 3000;

/// One session on a ZooKeeper ensemble.
pub struct RealZooKeeper {
    servers: String,
    session_timeout_ms: u64,
    client: tokio::sync::Mutex<Option<zk::Client>>,
    channels: Arc<Channels>,
    sessions: AtomicU64,
}

/// The directory a node sits in (what the in-memory server names its watch channel by).
fn directory_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("/", |(parent, _)| parent)
}

fn stat_of(stat: &zk::Stat) -> ZkStat {
    ZkStat {
        czxid: stat.czxid as u64,
        mzxid: stat.mzxid as u64,
        version: i64::from(stat.version),
        cversion: i64::from(stat.cversion),
        ephemeral_owner: (stat.ephemeral_owner != 0).then_some(stat.ephemeral_owner as u64),
    }
}

/// An error of the crate: a reply the tree gives too, or a failure.
fn translate(error: zk::Error) -> Result<ZkReply, StoreFailure> {
    let reply = match error {
        zk::Error::NoNode => ZkError::NoNode,
        zk::Error::NodeExists => ZkError::NodeExists,
        zk::Error::BadVersion => ZkError::BadVersion,
        zk::Error::NotEmpty => ZkError::NotEmpty,
        zk::Error::NoChildrenForEphemerals => ZkError::NoChildrenForEphemerals,
        zk::Error::SessionExpired => ZkError::SessionExpired,
        zk::Error::BadArguments(_) => ZkError::BadArguments,
        // The connection broke with the request in flight (`Custom` carries the socket's error,
        // e.g. a reset when the server was killed): it may have applied.
        zk::Error::ConnectionLoss | zk::Error::Timeout | zk::Error::Custom(_) => return Err(StoreFailure::Timeout),
        zk::Error::NoHosts => return Err(StoreFailure::Unavailable),
        other => return Err(StoreFailure::Other(format!("zookeeper: {other}"))),
    };
    Ok(ZkReply::Error(reply))
}

impl RealZooKeeper {
    /// A store on the ensemble `servers` (`host:port` each); the session is made by the first
    /// request ([`RealZooKeeper::ping`] makes it at once).
    pub fn new(servers: &[String], session_timeout_ms: u64) -> Result<RealZooKeeper, RealZooKeeperError> {
        if servers.is_empty() || servers.iter().any(|s| s.trim().is_empty() || s.contains(',')) {
            return Err(RealZooKeeperError::Servers(servers.join(",")));
        }
        if !(1000..=60_000).contains(&session_timeout_ms) {
            return Err(RealZooKeeperError::SessionTimeout(session_timeout_ms));
        }
        Ok(RealZooKeeper {
            servers: servers.join(","),
            session_timeout_ms,
            client: tokio::sync::Mutex::new(None),
            channels: Arc::new(Channels::new()),
            sessions: AtomicU64::new(0),
        })
    }

    /// Sessions opened so far (1 unless one expired).
    pub fn sessions(&self) -> u64 {
        self.sessions.load(Ordering::Relaxed)
    }

    /// Open the session now: an error says why no server took it.
    pub async fn ping(&self) -> Result<(), crate::Unreachable> {
        self.client().await.map(|_| ()).map_err(|e| match e {
            StoreFailure::Unavailable => crate::Unreachable(format!("{}: no ZooKeeper server answered", self.servers)),
            other => crate::Unreachable(format!("{}: ZooKeeper: {other}", self.servers)),
        })
    }

    /// The current session's id (0 before the first request).
    pub async fn session_id(&self) -> u64 {
        self.client.lock().await.as_ref().map_or(0, |c| c.session_id().0 as u64)
    }

    async fn client(&self) -> Result<zk::Client, StoreFailure> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        let connecting = zk::Client::connector()
            .with_session_timeout(Duration::from_millis(self.session_timeout_ms))
            .with_connection_timeout(Duration::from_millis(1000))
            .with_fail_eagerly()
            .connect(&self.servers);
        let client = match tokio::time::timeout(Duration::from_millis(CONNECT_TIMEOUT_MS), connecting).await {
            Ok(Ok(client)) => client,
            Ok(Err(_)) | Err(_) => return Err(StoreFailure::Unavailable),
        };
        self.sessions.fetch_add(1, Ordering::Relaxed);
        *slot = Some(client.clone());
        Ok(client)
    }

    /// Forget an expired session (if it is still the current one): the next request opens one.
    async fn expired(&self, session: zk::SessionId) {
        let mut slot = self.client.lock().await;
        if slot.as_ref().is_some_and(|c| c.session_id() == session) {
            *slot = None;
        }
    }

    /// Publish on the watched node's directory when the watch fires.
    fn on_fire(&self, path: &str, watcher: zk::OneshotWatcher) {
        let channels = Arc::clone(&self.channels);
        let directory = directory_of(path).to_owned();
        tokio::spawn(async move {
            let _event = watcher.changed().await;
            channels.publish(&directory);
        });
    }

    async fn run(&self, client: &zk::Client, op: ZkOp) -> Result<ZkReply, zk::Error> {
        let acls = zk::Acls::anyone_all();
        Ok(match op {
            ZkOp::Create {
                path,
                data,
                ephemeral,
                sequential,
            } => {
                let mode = match (ephemeral, sequential) {
                    (true, true) => zk::CreateMode::EphemeralSequential,
                    (true, false) => zk::CreateMode::Ephemeral,
                    (false, true) => zk::CreateMode::PersistentSequential,
                    (false, false) => zk::CreateMode::Persistent,
                };
                let (stat, sequence) = client.create(&path, data.as_bytes(), &mode.with_acls(acls)).await?;
                let full = if sequential { format!("{path}{sequence}") } else { path };
                ZkReply::Created {
                    path: full,
                    stat: stat_of(&stat),
                }
            }
            ZkOp::Delete { path, version } => {
                let version = version.map(|v| i32::try_from(v).unwrap_or(i32::MAX));
                client.delete(&path, version).await?;
                ZkReply::Ok
            }
            ZkOp::Exists { path, watch: false } => {
                ZkReply::Exists(client.check_stat(&path).await?.as_ref().map(stat_of))
            }
            ZkOp::Exists { path, watch: true } => {
                let (stat, watcher) = client.check_and_watch_stat(&path).await?;
                self.on_fire(&path, watcher);
                ZkReply::Exists(stat.as_ref().map(stat_of))
            }
            ZkOp::GetData { path, watch } => {
                let (data, stat) = if watch {
                    let (data, stat, watcher) = client.get_and_watch_data(&path).await?;
                    self.on_fire(&path, watcher);
                    (data, stat)
                } else {
                    client.get_data(&path).await?
                };
                ZkReply::Data {
                    data: String::from_utf8_lossy(&data).into_owned(),
                    stat: stat_of(&stat),
                }
            }
            ZkOp::GetChildren { path, watch } => {
                let mut children = if watch {
                    let (children, watcher) = client.list_and_watch_children(&path).await?;
                    self.on_fire(&path, watcher);
                    children
                } else {
                    client.list_children(&path).await?
                };
                children.sort();
                ZkReply::Children(children)
            }
        })
    }
}

impl RealZooKeeper {
    /// The nodes of lock `key`'s directory (Curator's layout,
    /// [`cassalock::algo::zookeeper::curator_mutex::directory_of`]), each with its stat: what
    /// the lock's holder rule reads. A child deleted between the listing and its stat is left
    /// out, as it would be a moment later.
    async fn read_directory(&self, client: &zk::Client, key: &str) -> Result<Vec<(String, Znode)>, StoreFailure> {
        let directory = directory_of_key(key);
        let children = match client.list_children(&directory).await {
            Ok(children) => children,
            Err(zk::Error::NoNode) => return Ok(Vec::new()),
            Err(error) => return Err(read_failure(&directory, error)),
        };
        if children.len() > MAX_READ_CHILDREN {
            return Err(StoreFailure::Other(format!(
                "reading {directory}: {} children, over the {MAX_READ_CHILDREN} a reading takes in",
                children.len()
            )));
        }
        let mut nodes = Vec::with_capacity(children.len());
        for child in children {
            let path = format!("{directory}/{child}");
            match client.check_stat(&path).await {
                Ok(Some(stat)) => nodes.push((path, node_of(&stat_of(&stat)))),
                Ok(None) | Err(zk::Error::NoNode) => {}
                Err(error) => return Err(read_failure(&path, error)),
            }
        }
        Ok(nodes)
    }
}

/// A node as a reading shows it: its stat (the lock's rule reads no data).
fn node_of(stat: &ZkStat) -> Znode {
    Znode {
        data: String::new(),
        czxid: stat.czxid,
        mzxid: stat.mzxid,
        version: stat.version,
        cversion: stat.cversion,
        ephemeral_owner: stat.ephemeral_owner,
    }
}

fn read_failure(path: &str, error: zk::Error) -> StoreFailure {
    match translate(error) {
        Err(failure) => failure,
        Ok(reply) => StoreFailure::Other(format!("reading {path}: {reply:?}")),
    }
}

impl FamilyStore<ZkOp> for RealZooKeeper {
    type Reply = ZkReply;

    /// Lock `key`'s directory as the server holds it now; a server that cannot be reached, or
    /// does not answer within [`READ_TIMEOUT_MS`], names nobody ([`ReadState::Down`]).
    async fn read_state(&self, key: &str) -> Option<Result<Vec<ServerSnapshot>, StoreFailure>> {
        let down = || {
            Some(Ok(vec![ServerSnapshot {
                state: ReadState::Down,
                now_ms: crate::now_us() / 1000,
            }]))
        };
        let Ok(client) = self.client().await else {
            return down();
        };
        let read = tokio::time::timeout(
            Duration::from_millis(READ_TIMEOUT_MS),
            self.read_directory(&client, key),
        )
        .await;
        match read {
            Ok(Ok(nodes)) => Some(Ok(vec![ServerSnapshot {
                state: ReadState::ZooKeeper(ZnodeTree::as_read(nodes)),
                now_ms: crate::now_us() / 1000,
            }])),
            Ok(Err(StoreFailure::Other(why))) => Some(Err(StoreFailure::Other(why))),
            Ok(Err(_)) | Err(_) => down(),
        }
    }

    async fn execute(&self, op: ZkOp) -> Result<ZkReply, StoreFailure> {
        let client = self.client().await?;
        let limit = Duration::from_millis(self.session_timeout_ms + COMMAND_SLACK_MS);
        let answer = match tokio::time::timeout(limit, self.run(&client, op)).await {
            Err(_) => return Err(StoreFailure::Timeout),
            Ok(answer) => answer,
        };
        match answer {
            Ok(reply) => Ok(reply),
            Err(error) => {
                if matches!(error, zk::Error::SessionExpired) {
                    self.expired(client.session_id()).await;
                }
                translate(error)
            }
        }
    }

    /// Watches fired on nodes in `directory`, this session's.
    async fn subscribe(&self, directory: &str) -> Option<Subscription> {
        Some(self.channels.subscribe(directory))
    }
}
