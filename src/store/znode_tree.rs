//! ZooKeeper's data tree and sessions, written once: what Curator's lock recipe
//! (`InterProcessMutex`) relies on.
//!
//! Like [`crate::store::redis_keyspace`], a value type: no clock, no I/O, no randomness. Every
//! call takes `server_now_ms`, the reading of the (leader's) clock, which judges sessions. The
//! simulator and the model keep their ensembles' data in a [`ZnodeTree`]; a follower that lags
//! applies the leader's [`ZkTxn`]s in order ([`ZnodeTree::apply_txns`]).
//!
//! The rules, and why each matters for a lock:
//!
//! - **One write order.** Every write (a create, a delete, a data change, a session opened or
//!   closed) is a transaction with the next `zxid`; a node remembers the zxid that created it
//!   (`czxid`) and last changed it (`mzxid`). A lock holder's node's `czxid` is therefore a
//!   fencing token that only grows from one holder to the next. A failed write (an error reply)
//!   is no transaction and takes no zxid.
//! - **Sequential nodes.** A create with the sequential flag appends to the name the parent's
//!   child version (`cversion`, bumped by every child created or deleted under it), written as
//!   ten digits. Curator's lock names its node `..-lock-0000000007`; the lowest sequence holds
//!   the lock. ZooKeeper keeps the counter in a signed 32-bit int: past 2^31 - 1 it wraps to
//!   negative numbers and the order breaks; here a create that would wrap is refused
//!   ([`ZkError::SequenceOverflow`]), a limit the lock reports instead of a wrong order.
//! - **Ephemeral nodes belong to a session** and are deleted, in one transaction, when the
//!   session closes or expires. They cannot have children.
//! - **Sessions are judged by the server.** A session lives while the server has heard from its
//!   client within its timeout (`server_now_ms <= last_heard_ms + timeout_ms`); after that it
//!   expires, its ephemeral nodes go, and any later request on it answers
//!   [`ZkError::SessionExpired`]. The client learns this only when it next talks to the server:
//!   a holder paused longer than the timeout still believes it holds the lock while another
//!   client's node has become the lowest. Every command first expires what is due (as if the
//!   leader's session tracker ticked exactly then); [`ZnodeTree::expire_sessions`] does it
//!   alone.
//! - **The close may trail the expiry** ([`ZnodeTree::with_close_lag_ms`], 0 unless set). In
//!   ZooKeeper the session tracker first marks an expired session closing (its requests are
//!   refused from then on) and then submits the closeSession transaction, which deletes its
//!   ephemeral nodes only once committed and applied by the server that answers a read. Until
//!   then another session's reads still list the old session's nodes: a new local session
//!   reading from a follower that has not applied the close, or a closeSession whose commit
//!   waits on a slow quorum. CURATOR-604 lives in that window: Curator retries a lock's
//!   listing on its new session and finds its old node, about to be deleted, the lowest. With
//!   a lag the session is refused at once, and its close (the transaction, the deleted nodes,
//!   the watches fired) applies `close_lag_ms` later.
//! - **Watches fire once.** `exists` and `getData` leave a data watch (NodeCreated,
//!   NodeDeleted, NodeDataChanged on that path); `getChildren` a child watch
//!   (NodeChildrenChanged when a child is created or deleted, NodeDeleted when the node goes).
//!   A watch is removed when it fires, and with its session. `exists` on a missing node leaves a
//!   watch (that is how a waiter waits for its predecessor's node to vanish, or learns it is
//!   already gone); `getData` and `getChildren` on a missing node fail and leave none. Fired
//!   watches are returned in [`ZkExecuted::fired`]: whether the client receives them (a
//!   disconnect can lose one) is the simulator's business.
//! - **Children come back sorted** here (ZooKeeper returns them in no set order; Curator sorts
//!   them by sequence itself).
//!
//! Not modelled: ACLs, quotas, multi-ops, persistent watches, containers and TTL nodes.

use std::collections::{BTreeMap, BTreeSet};

/// The most nodes a tree holds: a create past it is refused ([`ZkError::TooManyNodes`]).
pub const MAX_NODES: usize = 100_000;

/// The largest sequence number ZooKeeper's signed 32-bit counter reaches.
pub const MAX_SEQUENCE: i64 = i32::MAX as i64;

/// A session's id (ZooKeeper's 64-bit session id; here numbered from 1 in creation order).
pub type SessionId = u64;

/// A znode.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Znode {
    pub data: String,
    /// The zxid of the create.
    pub czxid: u64,
    /// The zxid of the last change of the data (the create's at first).
    pub mzxid: u64,
    /// Data changes since the create.
    pub version: i64,
    /// Children created or deleted under it since its create: the next sequence number.
    pub cversion: i64,
    /// The session that owns it, for an ephemeral node.
    pub ephemeral_owner: Option<SessionId>,
}

/// What a client sees of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ZkStat {
    pub czxid: u64,
    pub mzxid: u64,
    pub version: i64,
    pub cversion: i64,
    pub ephemeral_owner: Option<SessionId>,
}

/// A request as a client sends it. Every one but `CreateSession` names its session.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum ZkCommand {
    /// Open a session with this timeout.
    CreateSession { timeout_ms: u64 },
    /// Nothing but "I am alive" (the client library's heartbeat).
    Ping { session: SessionId },
    /// Close the session: its ephemeral nodes go at once.
    CloseSession { session: SessionId },
    /// Create `path` (with the sequence appended when `sequential`).
    Create {
        session: SessionId,
        path: String,
        data: String,
        ephemeral: bool,
        sequential: bool,
    },
    /// Delete `path` if its version is `version` (any version when `None`).
    Delete {
        session: SessionId,
        path: String,
        version: Option<i64>,
    },
    /// The node's stat, or absent; `watch` leaves a data watch either way.
    Exists {
        session: SessionId,
        path: String,
        watch: bool,
    },
    GetData {
        session: SessionId,
        path: String,
        watch: bool,
    },
    SetData {
        session: SessionId,
        path: String,
        data: String,
        version: Option<i64>,
    },
    /// The names of the node's children, sorted; `watch` leaves a child watch.
    GetChildren {
        session: SessionId,
        path: String,
        watch: bool,
    },
}

impl ZkCommand {
    pub fn session(&self) -> Option<SessionId> {
        match self {
            ZkCommand::CreateSession { .. } => None,
            ZkCommand::Ping { session }
            | ZkCommand::CloseSession { session }
            | ZkCommand::Create { session, .. }
            | ZkCommand::Delete { session, .. }
            | ZkCommand::Exists { session, .. }
            | ZkCommand::GetData { session, .. }
            | ZkCommand::SetData { session, .. }
            | ZkCommand::GetChildren { session, .. } => Some(*session),
        }
    }
}

/// A request as a lock machine asks for it: the connection it goes out on names the session
/// ([`ZkOp::on`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum ZkOp {
    Create {
        path: String,
        data: String,
        ephemeral: bool,
        sequential: bool,
    },
    Delete {
        path: String,
        version: Option<i64>,
    },
    Exists {
        path: String,
        watch: bool,
    },
    GetData {
        path: String,
        watch: bool,
    },
    GetChildren {
        path: String,
        watch: bool,
    },
}

impl ZkOp {
    /// The command this request is on `session`'s connection.
    pub fn on(self, session: SessionId) -> ZkCommand {
        match self {
            ZkOp::Create {
                path,
                data,
                ephemeral,
                sequential,
            } => ZkCommand::Create {
                session,
                path,
                data,
                ephemeral,
                sequential,
            },
            ZkOp::Delete { path, version } => ZkCommand::Delete { session, path, version },
            ZkOp::Exists { path, watch } => ZkCommand::Exists { session, path, watch },
            ZkOp::GetData { path, watch } => ZkCommand::GetData { session, path, watch },
            ZkOp::GetChildren { path, watch } => ZkCommand::GetChildren { session, path, watch },
        }
    }
}

impl std::fmt::Display for ZkOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // As the command prints, without the session.
        let shown = self.clone().on(0).to_string();
        write!(f, "{}", shown.trim_end_matches(" (session 0)"))
    }
}

/// An error reply (ZooKeeper's `KeeperException` codes that matter here).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, thiserror::Error, serde::Serialize, serde::Deserialize,
)]
pub enum ZkError {
    #[error("NONODE: the node (or the parent of the node to create) does not exist")]
    NoNode,
    #[error("NODEEXISTS: the node already exists")]
    NodeExists,
    #[error("BADVERSION: the node's version is not the one given")]
    BadVersion,
    #[error("NOTEMPTY: the node has children")]
    NotEmpty,
    #[error("NOCHILDRENFOREPHEMERALS: an ephemeral node cannot have children")]
    NoChildrenForEphemerals,
    #[error("SESSIONEXPIRED: the session has expired or was closed")]
    SessionExpired,
    #[error("BADARGUMENTS: a path must start with / and not end with / (the root excepted)")]
    BadArguments,
    #[error("the parent's sequence counter would pass 2^31 - 1 (ZooKeeper wraps it negative)")]
    SequenceOverflow,
    #[error("the tree holds MAX_NODES nodes already")]
    TooManyNodes,
}

/// What the server answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum ZkReply {
    SessionCreated {
        session: SessionId,
    },
    Ok,
    /// The created node's full path (with its sequence) and stat.
    Created {
        path: String,
        stat: ZkStat,
    },
    /// `exists`: the stat, or `None` for a missing node.
    Exists(Option<ZkStat>),
    Data {
        data: String,
        stat: ZkStat,
    },
    Children(Vec<String>),
    Error(ZkError),
}

/// What a watch reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum WatchKind {
    NodeCreated,
    NodeDeleted,
    NodeDataChanged,
    NodeChildrenChanged,
}

/// A watch that fired: to be sent to `session`'s client.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct WatchEvent {
    pub session: SessionId,
    pub path: String,
    pub kind: WatchKind,
}

impl WatchEvent {
    /// The directory of the node watched (its parent's path): the lock recipes wait on one
    /// directory's nodes, and a client's watch channel names it.
    pub fn directory(&self) -> &str {
        self.path.rsplit_once('/').map_or("/", |(parent, _)| parent)
    }
}

/// One write transaction, as a follower applies it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum ZkTxn {
    OpenSession {
        zxid: u64,
        session: SessionId,
        timeout_ms: u64,
    },
    /// A session closed or expired, and the ephemeral nodes it owned deleted.
    CloseSession {
        zxid: u64,
        session: SessionId,
    },
    Create {
        zxid: u64,
        path: String,
        node: Znode,
    },
    Delete {
        zxid: u64,
        path: String,
    },
    SetData {
        zxid: u64,
        path: String,
        data: String,
    },
}

/// Everything one command (or one session expiry pass) did.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ZkExecuted {
    pub reply: ZkReply,
    /// The write transactions, in zxid order (expiries due first, then the command's own).
    pub txns: Vec<ZkTxn>,
    pub fired: Vec<WatchEvent>,
}

/// A session as the server tracks it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ZkSession {
    pub timeout_ms: u64,
    /// The server's clock when it last heard from the client.
    pub last_heard_ms: u64,
}

impl ZkSession {
    pub fn is_live_at(&self, server_now_ms: u64) -> bool {
        server_now_ms <= self.last_heard_ms.saturating_add(self.timeout_ms)
    }
}

/// The tree, its sessions and their watches.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ZnodeTree {
    nodes: BTreeMap<String, Znode>,
    sessions: BTreeMap<SessionId, ZkSession>,
    /// (path, session) pairs with a data watch.
    data_watches: BTreeSet<(String, SessionId)>,
    /// (path, session) pairs with a child watch.
    child_watches: BTreeSet<(String, SessionId)>,
    last_zxid: u64,
    last_session: SessionId,
    /// How long after its expiry a session's close applies (ms; 0: at once).
    close_lag_ms: u64,
    /// Sessions judged expired whose close has not applied yet: when it applies (server ms).
    closing: BTreeMap<SessionId, u64>,
}

impl Default for ZnodeTree {
    fn default() -> Self {
        Self::new()
    }
}

/// The parent of a valid path other than the root.
fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(at) => &path[..at],
    }
}

/// The last part of a path (a child's name as `getChildren` lists it).
fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn valid_path(path: &str) -> bool {
    path == "/" || (path.starts_with('/') && !path.ends_with('/') && !path.contains("//"))
}

impl ZnodeTree {
    /// A tree with only the root `/`, created at zxid 0.
    pub fn new() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            "/".to_owned(),
            Znode {
                data: String::new(),
                czxid: 0,
                mzxid: 0,
                version: 0,
                cversion: 0,
                ephemeral_owner: None,
            },
        );
        ZnodeTree {
            nodes,
            sessions: BTreeMap::new(),
            data_watches: BTreeSet::new(),
            child_watches: BTreeSet::new(),
            last_zxid: 0,
            last_session: 0,
            close_lag_ms: 0,
            closing: BTreeMap::new(),
        }
    }

    /// The part of a tree a client read from a real server (T1-server's reading,
    /// `cassalock::algo::server_holder::ServerSnapshot`): the root and these nodes, as their
    /// stats showed them; no sessions, no watches, no parents the read did not take in. A
    /// snapshot to ask who holds, not a server to run commands on.
    pub fn as_read(nodes: impl IntoIterator<Item = (String, Znode)>) -> Self {
        let mut tree = ZnodeTree::new();
        for (path, node) in nodes {
            tree.last_zxid = tree.last_zxid.max(node.czxid).max(node.mzxid);
            tree.nodes.insert(path, node);
        }
        tree
    }

    /// A tree whose expired sessions are refused at once and closed `close_lag_ms` later (see
    /// the module documentation).
    pub fn with_close_lag_ms(close_lag_ms: u64) -> Self {
        ZnodeTree {
            close_lag_ms,
            ..ZnodeTree::new()
        }
    }

    pub fn close_lag_ms(&self) -> u64 {
        self.close_lag_ms
    }

    /// Sessions judged expired whose ephemeral nodes are still there, with the server time (ms)
    /// their close applies.
    pub fn closing_sessions(&self) -> impl Iterator<Item = (SessionId, u64)> + '_ {
        self.closing.iter().map(|(id, at)| (*id, *at))
    }

    pub fn last_zxid(&self) -> u64 {
        self.last_zxid
    }

    pub fn node(&self, path: &str) -> Option<&Znode> {
        self.nodes.get(path)
    }

    /// Every node, in path order.
    pub fn nodes(&self) -> impl Iterator<Item = (&str, &Znode)> {
        self.nodes.iter().map(|(path, node)| (path.as_str(), node))
    }

    pub fn session(&self, session: SessionId) -> Option<&ZkSession> {
        self.sessions.get(&session)
    }

    /// Open sessions (expired ones are gone once a command or an expiry pass has run).
    pub fn sessions(&self) -> impl Iterator<Item = (SessionId, &ZkSession)> {
        self.sessions.iter().map(|(id, session)| (*id, session))
    }

    /// Data watches set, as (path, session) pairs.
    pub fn data_watches(&self) -> impl Iterator<Item = (&str, SessionId)> {
        self.data_watches
            .iter()
            .map(|(path, session)| (path.as_str(), *session))
    }

    /// Child watches set, as (path, session) pairs.
    pub fn child_watches(&self) -> impl Iterator<Item = (&str, SessionId)> {
        self.child_watches
            .iter()
            .map(|(path, session)| (path.as_str(), *session))
    }

    /// Expire every session not heard from within its timeout at `server_now_ms`, in session
    /// order: each is one transaction deleting its ephemeral nodes.
    pub fn expire_sessions(&mut self, server_now_ms: u64) -> ZkExecuted {
        let mut run = ZkRun::default();
        self.expire_due(&mut run, server_now_ms);
        run.finish(self, ZkReply::Ok)
    }

    /// Run one command at `server_now_ms`, after expiring what is due.
    pub fn execute(&mut self, command: &ZkCommand, server_now_ms: u64) -> ZkExecuted {
        let mut run = ZkRun::default();
        self.expire_due(&mut run, server_now_ms);
        let reply = match self.command(&mut run, command, server_now_ms) {
            Ok(reply) => reply,
            Err(error) => ZkReply::Error(error),
        };
        run.finish(self, reply)
    }

    /// Apply a leader's transactions, as a follower: no clock of its own, no judging. They must
    /// follow this tree's last zxid in order.
    pub fn apply_txns(&mut self, txns: &[ZkTxn]) {
        let mut run = ZkRun::default();
        for txn in txns {
            match txn {
                ZkTxn::OpenSession {
                    zxid,
                    session,
                    timeout_ms,
                } => {
                    self.check_next(*zxid);
                    self.sessions.insert(
                        *session,
                        ZkSession {
                            timeout_ms: *timeout_ms,
                            last_heard_ms: 0,
                        },
                    );
                    self.last_session = self.last_session.max(*session);
                }
                ZkTxn::CloseSession { zxid, session } => {
                    self.check_next(*zxid);
                    self.close(&mut run, *session);
                }
                ZkTxn::Create { zxid, path, node } => {
                    self.check_next(*zxid);
                    self.nodes.insert(path.clone(), node.clone());
                    self.bump_parent(path);
                }
                ZkTxn::Delete { zxid, path } => {
                    self.check_next(*zxid);
                    self.nodes.remove(path);
                    self.bump_parent(path);
                }
                ZkTxn::SetData { zxid, path, data } => {
                    self.check_next(*zxid);
                    if let Some(node) = self.nodes.get_mut(path) {
                        node.data = data.clone();
                        node.mzxid = *zxid;
                        node.version += 1;
                    } else {
                        debug_assert!(false, "replicated setData of the missing {path}");
                    }
                }
            }
        }
        self.debug_check_invariant();
    }

    fn check_next(&mut self, zxid: u64) {
        debug_assert_eq!(zxid, self.last_zxid + 1, "transactions out of order");
        self.last_zxid = zxid;
    }

    fn bump_parent(&mut self, path: &str) {
        if let Some(parent) = self.nodes.get_mut(parent_of(path)) {
            parent.cversion += 1;
        }
    }

    /// Judge the sessions at `now_ms`: one that ran out closes at once, or (with a close lag)
    /// is refused from now on and closes once its lag is over; then the closes due, in session
    /// order, each one transaction.
    fn expire_due(&mut self, run: &mut ZkRun, now_ms: u64) {
        let due: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, session)| !session.is_live_at(now_ms))
            .map(|(id, _)| *id)
            .collect();
        for session in due {
            if self.close_lag_ms == 0 {
                let zxid = self.next_zxid();
                self.close(run, session);
                run.txns.push(ZkTxn::CloseSession { zxid, session });
            } else {
                // Marked closing: refused from now on; its watches go with its connection.
                self.sessions.remove(&session);
                self.data_watches.retain(|(_, owner)| *owner != session);
                self.child_watches.retain(|(_, owner)| *owner != session);
                self.closing.insert(session, now_ms.saturating_add(self.close_lag_ms));
            }
        }
        let ready: Vec<SessionId> = self
            .closing
            .iter()
            .filter(|(_, at)| **at <= now_ms)
            .map(|(id, _)| *id)
            .collect();
        for session in ready {
            self.closing.remove(&session);
            let zxid = self.next_zxid();
            self.close(run, session);
            run.txns.push(ZkTxn::CloseSession { zxid, session });
        }
    }

    fn next_zxid(&mut self) -> u64 {
        self.last_zxid += 1;
        self.last_zxid
    }

    /// Close `session`: its ephemeral nodes deleted (firing their watches), its watches gone.
    fn close(&mut self, run: &mut ZkRun, session: SessionId) {
        self.sessions.remove(&session);
        self.data_watches.retain(|(_, owner)| *owner != session);
        self.child_watches.retain(|(_, owner)| *owner != session);
        let owned: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, node)| node.ephemeral_owner == Some(session))
            .map(|(path, _)| path.clone())
            .collect();
        for path in owned {
            self.remove_node(run, &path);
        }
    }

    /// Delete a node that exists and has no children, firing the watches a delete fires.
    fn remove_node(&mut self, run: &mut ZkRun, path: &str) {
        self.nodes.remove(path);
        self.bump_parent(path);
        self.fire(run, Watches::Data, path, WatchKind::NodeDeleted);
        self.fire(run, Watches::Child, path, WatchKind::NodeDeleted);
        self.fire(run, Watches::Child, parent_of(path), WatchKind::NodeChildrenChanged);
    }

    fn fire(&mut self, run: &mut ZkRun, which: Watches, path: &str, kind: WatchKind) {
        let set = match which {
            Watches::Data => &mut self.data_watches,
            Watches::Child => &mut self.child_watches,
        };
        let sessions: Vec<SessionId> = set
            .range((path.to_owned(), 0)..=(path.to_owned(), SessionId::MAX))
            .map(|(_, session)| *session)
            .collect();
        for session in sessions {
            set.remove(&(path.to_owned(), session));
            run.fired.push(WatchEvent {
                session,
                path: path.to_owned(),
                kind,
            });
        }
    }

    fn stat(node: &Znode) -> ZkStat {
        ZkStat {
            czxid: node.czxid,
            mzxid: node.mzxid,
            version: node.version,
            cversion: node.cversion,
            ephemeral_owner: node.ephemeral_owner,
        }
    }

    fn has_children(&self, path: &str) -> bool {
        self.children(path).next().is_some()
    }

    fn children<'a>(&'a self, path: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(move |(child, _)| child.starts_with(&prefix))
            .filter(move |(child, _)| *child != "/" && parent_of(child) == path)
            .map(|(child, _)| name_of(child))
    }

    fn command(&mut self, run: &mut ZkRun, command: &ZkCommand, now_ms: u64) -> Result<ZkReply, ZkError> {
        if let ZkCommand::CreateSession { timeout_ms } = command {
            self.last_session += 1;
            let session = self.last_session;
            let zxid = self.next_zxid();
            self.sessions.insert(
                session,
                ZkSession {
                    timeout_ms: *timeout_ms,
                    last_heard_ms: now_ms,
                },
            );
            run.txns.push(ZkTxn::OpenSession {
                zxid,
                session,
                timeout_ms: *timeout_ms,
            });
            return Ok(ZkReply::SessionCreated { session });
        }
        let session = command.session().expect("only CreateSession has none");
        // Hearing from the client keeps its session alive.
        match self.sessions.get_mut(&session) {
            Some(tracked) => tracked.last_heard_ms = tracked.last_heard_ms.max(now_ms),
            None => return Err(ZkError::SessionExpired),
        }
        match command {
            ZkCommand::CreateSession { .. } => unreachable!("handled above"),
            ZkCommand::Ping { .. } => Ok(ZkReply::Ok),
            ZkCommand::CloseSession { session } => {
                let zxid = self.next_zxid();
                self.close(run, *session);
                run.txns.push(ZkTxn::CloseSession {
                    zxid,
                    session: *session,
                });
                Ok(ZkReply::Ok)
            }
            ZkCommand::Create {
                path,
                data,
                ephemeral,
                sequential,
                ..
            } => self.create(run, session, path, data, *ephemeral, *sequential),
            ZkCommand::Delete { path, version, .. } => {
                if !valid_path(path) || path == "/" {
                    return Err(ZkError::BadArguments);
                }
                let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
                if version.is_some_and(|v| v != node.version) {
                    return Err(ZkError::BadVersion);
                }
                if self.has_children(path) {
                    return Err(ZkError::NotEmpty);
                }
                let zxid = self.next_zxid();
                self.remove_node(run, path);
                run.txns.push(ZkTxn::Delete {
                    zxid,
                    path: path.clone(),
                });
                Ok(ZkReply::Ok)
            }
            ZkCommand::Exists { path, watch, .. } => {
                if !valid_path(path) {
                    return Err(ZkError::BadArguments);
                }
                if *watch {
                    self.data_watches.insert((path.clone(), session));
                }
                Ok(ZkReply::Exists(self.nodes.get(path).map(Self::stat)))
            }
            ZkCommand::GetData { path, watch, .. } => {
                if !valid_path(path) {
                    return Err(ZkError::BadArguments);
                }
                let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
                let reply = ZkReply::Data {
                    data: node.data.clone(),
                    stat: Self::stat(node),
                };
                if *watch {
                    self.data_watches.insert((path.clone(), session));
                }
                Ok(reply)
            }
            ZkCommand::SetData {
                path, data, version, ..
            } => {
                if !valid_path(path) {
                    return Err(ZkError::BadArguments);
                }
                let current = self.nodes.get(path).ok_or(ZkError::NoNode)?.version;
                if version.is_some_and(|v| v != current) {
                    return Err(ZkError::BadVersion);
                }
                let zxid = self.next_zxid();
                let node = self.nodes.get_mut(path).expect("checked above");
                node.data = data.clone();
                node.mzxid = zxid;
                node.version += 1;
                run.txns.push(ZkTxn::SetData {
                    zxid,
                    path: path.clone(),
                    data: data.clone(),
                });
                self.fire(run, Watches::Data, path, WatchKind::NodeDataChanged);
                Ok(ZkReply::Ok)
            }
            ZkCommand::GetChildren { path, watch, .. } => {
                if !valid_path(path) {
                    return Err(ZkError::BadArguments);
                }
                if !self.nodes.contains_key(path) {
                    return Err(ZkError::NoNode);
                }
                let names: Vec<String> = self.children(path).map(str::to_owned).collect();
                if *watch {
                    self.child_watches.insert((path.clone(), session));
                }
                Ok(ZkReply::Children(names))
            }
        }
    }

    /// Create `path` (with a sequence number appended when `sequential`) for `session`.
    fn create(
        &mut self,
        run: &mut ZkRun,
        session: SessionId,
        path: &str,
        data: &str,
        ephemeral: bool,
        sequential: bool,
    ) -> Result<ZkReply, ZkError> {
        if !valid_path(path) || path == "/" {
            return Err(ZkError::BadArguments);
        }
        let parent = parent_of(path).to_owned();
        let Some(parent_node) = self.nodes.get(&parent) else {
            return Err(ZkError::NoNode);
        };
        if parent_node.ephemeral_owner.is_some() {
            return Err(ZkError::NoChildrenForEphemerals);
        }
        let full = if sequential {
            if parent_node.cversion > MAX_SEQUENCE {
                return Err(ZkError::SequenceOverflow);
            }
            format!("{path}{:010}", parent_node.cversion)
        } else {
            path.to_owned()
        };
        if self.nodes.contains_key(&full) {
            return Err(ZkError::NodeExists);
        }
        if self.nodes.len() >= MAX_NODES {
            return Err(ZkError::TooManyNodes);
        }
        let zxid = self.next_zxid();
        let node = Znode {
            data: data.to_owned(),
            czxid: zxid,
            mzxid: zxid,
            version: 0,
            cversion: 0,
            ephemeral_owner: ephemeral.then_some(session),
        };
        let stat = Self::stat(&node);
        self.nodes.insert(full.clone(), node.clone());
        self.bump_parent(&full);
        run.txns.push(ZkTxn::Create {
            zxid,
            path: full.clone(),
            node,
        });
        self.fire(run, Watches::Data, &full, WatchKind::NodeCreated);
        self.fire(run, Watches::Child, &parent, WatchKind::NodeChildrenChanged);
        Ok(ZkReply::Created { path: full, stat })
    }

    /// Debug builds: the root exists; every other node's parent exists and is not ephemeral;
    /// every ephemeral node's session is open or closing; zxids never pass the last one; a
    /// session is not both.
    fn debug_check_invariant(&self) {
        if cfg!(debug_assertions) {
            assert!(self.nodes.contains_key("/"), "the root is gone");
            for (path, node) in &self.nodes {
                assert!(
                    node.czxid <= node.mzxid && node.mzxid <= self.last_zxid,
                    "{path}: zxids {node:?}"
                );
                if path != "/" {
                    let parent = self.nodes.get(parent_of(path));
                    assert!(parent.is_some(), "{path} has no parent");
                    assert!(
                        parent.is_some_and(|p| p.ephemeral_owner.is_none()),
                        "{path} is a child of an ephemeral node"
                    );
                }
                if let Some(owner) = node.ephemeral_owner {
                    assert!(
                        self.sessions.contains_key(&owner) || self.closing.contains_key(&owner),
                        "{path} outlived its session {owner}"
                    );
                }
            }
            assert!(self.nodes.len() <= MAX_NODES);
            assert!(
                self.closing.keys().all(|id| !self.sessions.contains_key(id)),
                "a session both open and closing"
            );
            assert!(self.close_lag_ms > 0 || self.closing.is_empty(), "closing with no lag");
        }
    }
}

#[derive(Clone, Copy)]
enum Watches {
    Data,
    Child,
}

/// One command's transactions and fired watches so far.
#[derive(Default)]
struct ZkRun {
    txns: Vec<ZkTxn>,
    fired: Vec<WatchEvent>,
}

impl ZkRun {
    fn finish(self, tree: &ZnodeTree, reply: ZkReply) -> ZkExecuted {
        tree.debug_check_invariant();
        debug_assert!(
            self.txns.windows(2).all(|pair| zxid_of(&pair[0]) < zxid_of(&pair[1])),
            "transactions out of zxid order: {:?}",
            self.txns
        );
        ZkExecuted {
            reply,
            txns: self.txns,
            fired: self.fired,
        }
    }
}

fn zxid_of(txn: &ZkTxn) -> u64 {
    match txn {
        ZkTxn::OpenSession { zxid, .. }
        | ZkTxn::CloseSession { zxid, .. }
        | ZkTxn::Create { zxid, .. }
        | ZkTxn::Delete { zxid, .. }
        | ZkTxn::SetData { zxid, .. } => *zxid,
    }
}

impl std::fmt::Display for ZkCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let watch = |w: &bool| if *w { " watch" } else { "" };
        match self {
            ZkCommand::CreateSession { timeout_ms } => write!(f, "createSession timeout {timeout_ms} ms"),
            ZkCommand::Ping { session } => write!(f, "ping (session {session})"),
            ZkCommand::CloseSession { session } => write!(f, "closeSession {session}"),
            ZkCommand::Create {
                session,
                path,
                ephemeral,
                sequential,
                ..
            } => {
                let mode = match (ephemeral, sequential) {
                    (true, true) => "EPHEMERAL_SEQUENTIAL",
                    (true, false) => "EPHEMERAL",
                    (false, true) => "PERSISTENT_SEQUENTIAL",
                    (false, false) => "PERSISTENT",
                };
                write!(f, "create {path} {mode} (session {session})")
            }
            ZkCommand::Delete { session, path, version } => match version {
                Some(v) => write!(f, "delete {path} version {v} (session {session})"),
                None => write!(f, "delete {path} (session {session})"),
            },
            ZkCommand::Exists {
                session,
                path,
                watch: w,
            } => write!(f, "exists {path}{} (session {session})", watch(w)),
            ZkCommand::GetData {
                session,
                path,
                watch: w,
            } => write!(f, "getData {path}{} (session {session})", watch(w)),
            ZkCommand::SetData { session, path, .. } => write!(f, "setData {path} (session {session})"),
            ZkCommand::GetChildren {
                session,
                path,
                watch: w,
            } => {
                write!(f, "getChildren {path}{} (session {session})", watch(w))
            }
        }
    }
}

impl std::fmt::Display for ZkReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZkReply::SessionCreated { session } => write!(f, "session {session}"),
            ZkReply::Ok => write!(f, "OK"),
            ZkReply::Created { path, stat } => write!(f, "created {path} czxid {}", stat.czxid),
            ZkReply::Exists(None) => write!(f, "no node"),
            ZkReply::Exists(Some(stat)) => write!(f, "exists czxid {}", stat.czxid),
            ZkReply::Data { data, stat } => write!(f, "\"{data}\" version {}", stat.version),
            ZkReply::Children(names) => write!(f, "[{}]", names.join(", ")),
            ZkReply::Error(error) => write!(f, "{error}"),
        }
    }
}

#[cfg(test)]
mod tests;
