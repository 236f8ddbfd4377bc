//! `ZnodeTree` against a deliberately naive reference, over random sequences of every command
//! on a few paths and sessions, with random advances of the server's clock.
//!
//! The reference keeps flat lists (nodes, sessions, watches) and finds everything by scanning
//! them; a node's children are the nodes whose path minus its last part equals the parent's.
//! It shares nothing with `ZnodeTree` but the command, reply and event types. Half the cases run
//! with a close lag: an expired session is refused at once and its nodes go 7 ms later.

use cassalock::store::znode_tree::{
    SessionId, WatchEvent, WatchKind, ZkCommand, ZkError, ZkReply, ZkStat, ZnodeTree, MAX_SEQUENCE,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Node {
    path: String,
    data: String,
    czxid: u64,
    mzxid: u64,
    version: i64,
    cversion: i64,
    owner: Option<SessionId>,
}

#[derive(Clone, Debug)]
struct Session {
    id: SessionId,
    timeout_ms: u64,
    heard_ms: u64,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Data,
    Child,
}

struct Reference {
    nodes: Vec<Node>,
    sessions: Vec<Session>,
    watches: Vec<(Kind, String, SessionId)>,
    zxid: u64,
    sessions_made: u64,
    /// How long after its expiry a session's nodes go (ms).
    lag_ms: u64,
    /// Expired sessions whose nodes are still there, and when they go.
    closing: Vec<(SessionId, u64)>,
}

fn parent(path: &str) -> String {
    let cut = path.rfind('/').unwrap();
    if cut == 0 {
        "/".to_owned()
    } else {
        path[..cut].to_owned()
    }
}

impl Reference {
    fn new(lag_ms: u64) -> Self {
        Reference {
            lag_ms,
            closing: Vec::new(),
            nodes: vec![Node {
                path: "/".into(),
                data: String::new(),
                czxid: 0,
                mzxid: 0,
                version: 0,
                cversion: 0,
                owner: None,
            }],
            sessions: Vec::new(),
            watches: Vec::new(),
            zxid: 0,
            sessions_made: 0,
        }
    }

    fn find(&self, path: &str) -> Option<usize> {
        self.nodes.iter().position(|node| node.path == path)
    }

    fn stat(&self, i: usize) -> ZkStat {
        let node = &self.nodes[i];
        ZkStat {
            czxid: node.czxid,
            mzxid: node.mzxid,
            version: node.version,
            cversion: node.cversion,
            ephemeral_owner: node.owner,
        }
    }

    fn trigger(&mut self, kind: Kind, path: &str, what: WatchKind, fired: &mut Vec<WatchEvent>) {
        let mut kept = Vec::new();
        let mut hit = Vec::new();
        for watch in self.watches.drain(..) {
            if watch.0 == kind && watch.1 == path {
                hit.push(watch.2);
            } else {
                kept.push(watch);
            }
        }
        self.watches = kept;
        hit.sort();
        for session in hit {
            fired.push(WatchEvent {
                session,
                path: path.to_owned(),
                kind: what,
            });
        }
    }

    fn delete_node(&mut self, path: &str, fired: &mut Vec<WatchEvent>) {
        self.nodes.retain(|node| node.path != path);
        let p = parent(path);
        for node in self.nodes.iter_mut() {
            if node.path == p {
                node.cversion += 1;
            }
        }
        self.trigger(Kind::Data, path, WatchKind::NodeDeleted, fired);
        self.trigger(Kind::Child, path, WatchKind::NodeDeleted, fired);
        self.trigger(Kind::Child, &p, WatchKind::NodeChildrenChanged, fired);
    }

    fn end_session(&mut self, id: SessionId, fired: &mut Vec<WatchEvent>) {
        self.zxid += 1;
        self.sessions.retain(|s| s.id != id);
        self.watches.retain(|w| w.2 != id);
        let mut owned: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| n.owner == Some(id))
            .map(|n| n.path.clone())
            .collect();
        owned.sort();
        for path in owned {
            self.delete_node(&path, fired);
        }
    }

    fn valid(path: &str) -> bool {
        path == "/" || (path.starts_with('/') && !path.ends_with('/') && !path.contains("//"))
    }

    fn step(&mut self, command: &ZkCommand, now: u64) -> (ZkReply, Vec<WatchEvent>) {
        let mut fired = Vec::new();
        let mut expired: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|s| now > s.heard_ms + s.timeout_ms)
            .map(|s| s.id)
            .collect();
        expired.sort();
        for id in expired {
            if self.lag_ms == 0 {
                self.end_session(id, &mut fired);
            } else {
                self.sessions.retain(|s| s.id != id);
                self.watches.retain(|w| w.2 != id);
                self.closing.push((id, now + self.lag_ms));
            }
        }
        let mut ready: Vec<SessionId> = self.closing.iter().filter(|c| c.1 <= now).map(|c| c.0).collect();
        ready.sort();
        self.closing.retain(|c| c.1 > now);
        for id in ready {
            self.end_session(id, &mut fired);
        }
        let reply = self.answer(command, now, &mut fired);
        (reply, fired)
    }

    fn answer(&mut self, command: &ZkCommand, now: u64, fired: &mut Vec<WatchEvent>) -> ZkReply {
        let err = ZkReply::Error;
        if let ZkCommand::CreateSession { timeout_ms } = command {
            self.sessions_made += 1;
            self.zxid += 1;
            self.sessions.push(Session {
                id: self.sessions_made,
                timeout_ms: *timeout_ms,
                heard_ms: now,
            });
            return ZkReply::SessionCreated {
                session: self.sessions_made,
            };
        }
        let me = command.session().unwrap();
        let Some(s) = self.sessions.iter_mut().find(|s| s.id == me) else {
            return err(ZkError::SessionExpired);
        };
        if now > s.heard_ms {
            s.heard_ms = now;
        }
        match command {
            ZkCommand::CreateSession { .. } => unreachable!(),
            ZkCommand::Ping { .. } => ZkReply::Ok,
            ZkCommand::CloseSession { .. } => {
                self.end_session(me, fired);
                ZkReply::Ok
            }
            ZkCommand::Create {
                path,
                data,
                ephemeral,
                sequential,
                ..
            } => self.create(me, path, data, *ephemeral, *sequential, fired),
            ZkCommand::Delete { path, version, .. } => self.delete(path, *version, fired),
            ZkCommand::Exists { path, watch, .. } => {
                if !Self::valid(path) {
                    return err(ZkError::BadArguments);
                }
                if *watch && !self.watches.contains(&(Kind::Data, path.clone(), me)) {
                    self.watches.push((Kind::Data, path.clone(), me));
                }
                ZkReply::Exists(self.find(path).map(|i| self.stat(i)))
            }
            ZkCommand::GetData { path, watch, .. } => {
                if !Self::valid(path) {
                    return err(ZkError::BadArguments);
                }
                let Some(i) = self.find(path) else {
                    return err(ZkError::NoNode);
                };
                if *watch && !self.watches.contains(&(Kind::Data, path.clone(), me)) {
                    self.watches.push((Kind::Data, path.clone(), me));
                }
                ZkReply::Data {
                    data: self.nodes[i].data.clone(),
                    stat: self.stat(i),
                }
            }
            ZkCommand::SetData {
                path, data, version, ..
            } => self.set_data(path, data, *version, fired),
            ZkCommand::GetChildren { path, watch, .. } => {
                if !Self::valid(path) {
                    return err(ZkError::BadArguments);
                }
                if self.find(path).is_none() {
                    return err(ZkError::NoNode);
                }
                let mut names: Vec<String> = self
                    .nodes
                    .iter()
                    .filter(|n| n.path != "/" && parent(&n.path) == *path)
                    .map(|n| n.path.rsplit('/').next().unwrap().to_owned())
                    .collect();
                names.sort();
                if *watch && !self.watches.contains(&(Kind::Child, path.clone(), me)) {
                    self.watches.push((Kind::Child, path.clone(), me));
                }
                ZkReply::Children(names)
            }
        }
    }

    /// Create: a node under an existing, non-ephemeral parent, its name numbered if sequential.
    fn create(
        &mut self,
        me: SessionId,
        path: &str,
        data: &str,
        ephemeral: bool,
        sequential: bool,
        fired: &mut Vec<WatchEvent>,
    ) -> ZkReply {
        let err = ZkReply::Error;
        if !Self::valid(path) || path == "/" {
            return err(ZkError::BadArguments);
        }
        let p = parent(path);
        let Some(pi) = self.find(&p) else {
            return err(ZkError::NoNode);
        };
        if self.nodes[pi].owner.is_some() {
            return err(ZkError::NoChildrenForEphemerals);
        }
        let mut name = path.to_owned();
        if sequential {
            if self.nodes[pi].cversion > MAX_SEQUENCE {
                return err(ZkError::SequenceOverflow);
            }
            name.push_str(&format!("{:010}", self.nodes[pi].cversion));
        }
        if self.find(&name).is_some() {
            return err(ZkError::NodeExists);
        }
        self.zxid += 1;
        self.nodes[pi].cversion += 1;
        self.nodes.push(Node {
            path: name.clone(),
            data: data.to_owned(),
            czxid: self.zxid,
            mzxid: self.zxid,
            version: 0,
            cversion: 0,
            owner: if ephemeral { Some(me) } else { None },
        });
        let stat = self.stat(self.nodes.len() - 1);
        self.trigger(Kind::Data, &name, WatchKind::NodeCreated, fired);
        self.trigger(Kind::Child, &p, WatchKind::NodeChildrenChanged, fired);
        ZkReply::Created { path: name, stat }
    }

    /// Delete: a childless node, if the version given (if any) is its own.
    fn delete(&mut self, path: &str, version: Option<i64>, fired: &mut Vec<WatchEvent>) -> ZkReply {
        let err = ZkReply::Error;
        if !Self::valid(path) || path == "/" {
            return err(ZkError::BadArguments);
        }
        let Some(i) = self.find(path) else {
            return err(ZkError::NoNode);
        };
        if let Some(v) = version {
            if v != self.nodes[i].version {
                return err(ZkError::BadVersion);
            }
        }
        if self.nodes.iter().any(|n| n.path != "/" && parent(&n.path) == *path) {
            return err(ZkError::NotEmpty);
        }
        self.zxid += 1;
        self.delete_node(path, fired);
        ZkReply::Ok
    }

    /// SetData: a node's data, if the version given (if any) is its own.
    fn set_data(&mut self, path: &str, data: &str, version: Option<i64>, fired: &mut Vec<WatchEvent>) -> ZkReply {
        let err = ZkReply::Error;
        if !Self::valid(path) {
            return err(ZkError::BadArguments);
        }
        let Some(i) = self.find(path) else {
            return err(ZkError::NoNode);
        };
        if let Some(v) = version {
            if v != self.nodes[i].version {
                return err(ZkError::BadVersion);
            }
        }
        self.zxid += 1;
        self.nodes[i].data = data.to_owned();
        self.nodes[i].mzxid = self.zxid;
        self.nodes[i].version += 1;
        self.trigger(Kind::Data, path, WatchKind::NodeDataChanged, fired);
        ZkReply::Ok
    }

    fn observe(&self) -> Vec<(String, String, ZkStat)> {
        let mut seen: Vec<_> = (0..self.nodes.len())
            .map(|i| (self.nodes[i].path.clone(), self.nodes[i].data.clone(), self.stat(i)))
            .collect();
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        seen
    }
}

fn observe(tree: &ZnodeTree) -> Vec<(String, String, ZkStat)> {
    tree.nodes()
        .map(|(path, node)| {
            (
                path.to_owned(),
                node.data.clone(),
                ZkStat {
                    czxid: node.czxid,
                    mzxid: node.mzxid,
                    version: node.version,
                    cversion: node.cversion,
                    ephemeral_owner: node.ephemeral_owner,
                },
            )
        })
        .collect()
}

fn path() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "/",
        "/lock",
        "/lock/n-",
        "/lock/n-0000000000",
        "/lock/n-0000000001",
        "/a",
        "/a",
        "/a/b",
        "bad",
    ])
    .prop_map(String::from)
}

fn command() -> impl Strategy<Value = ZkCommand> {
    let session = || prop_oneof![4 => 1u64..3, 1 => 3u64..5];
    let version = || prop::option::weighted(0.3, 0i64..3);
    prop_oneof![
        1 => prop_oneof![Just(5u64), Just(20)].prop_map(|timeout_ms| ZkCommand::CreateSession { timeout_ms }),
        2 => session().prop_map(|session| ZkCommand::Ping { session }),
        1 => session().prop_map(|session| ZkCommand::CloseSession { session }),
        6 => (session(), path(), any::<bool>(), any::<bool>()).prop_map(|(session, path, ephemeral, sequential)| {
            ZkCommand::Create { session, path, data: "d".into(), ephemeral, sequential }
        }),
        3 => (session(), path(), version()).prop_map(|(session, path, version)| ZkCommand::Delete { session, path, version }),
        3 => (session(), path(), any::<bool>()).prop_map(|(session, path, watch)| ZkCommand::Exists { session, path, watch }),
        1 => (session(), path(), any::<bool>()).prop_map(|(session, path, watch)| ZkCommand::GetData { session, path, watch }),
        2 => (session(), path(), version()).prop_map(|(session, path, version)| ZkCommand::SetData {
            session, path, data: "e".into(), version
        }),
        2 => (session(), path(), any::<bool>()).prop_map(|(session, path, watch)| ZkCommand::GetChildren { session, path, watch }),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Command(ZkCommand),
    Advance(u64),
    Expire,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => command().prop_map(Op::Command),
        3 => prop_oneof![0u64..3, Just(6u64), Just(21)].prop_map(Op::Advance),
        1 => Just(Op::Expire),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Every reply and fired watch of `ZnodeTree`, and the tree after every step, equal the
    /// reference's; a follower fed the transactions holds the same tree.
    #[test]
    fn znode_tree_matches_the_naive_reference(
        ops in prop::collection::vec(op(), 1..80),
        lag_ms in prop_oneof![Just(0u64), Just(7)],
    ) {
        let mut tree = ZnodeTree::with_close_lag_ms(lag_ms);
        let mut follower = ZnodeTree::new();
        let mut reference = Reference::new(lag_ms);
        let mut now = 0u64;
        // Two sessions open first, so that most commands are not simply refused.
        let opening = [5u64, 20].map(|timeout_ms| Op::Command(ZkCommand::CreateSession { timeout_ms }));
        for op in opening.into_iter().chain(ops) {
            match op {
                Op::Command(command) => {
                    let executed = tree.execute(&command, now);
                    follower.apply_txns(&executed.txns);
                    let (reply, fired) = reference.step(&command, now);
                    prop_assert_eq!(&executed.reply, &reply, "reply to {:?} at {}", command, now);
                    prop_assert_eq!(&executed.fired, &fired, "watches fired by {:?}", command);
                    prop_assert_eq!(tree.last_zxid(), reference.zxid, "zxid after {:?}", command);
                }
                Op::Advance(by_ms) => now += by_ms,
                Op::Expire => {
                    let executed = tree.expire_sessions(now);
                    follower.apply_txns(&executed.txns);
                    let (_, fired) = reference.step(&ZkCommand::Ping { session: 0 }, now);
                    prop_assert_eq!(&executed.fired, &fired, "watches fired by expiry");
                }
            }
            prop_assert_eq!(observe(&tree), reference.observe());
            prop_assert_eq!(observe(&follower), reference.observe(), "the follower");
        }
    }
}
