//! The coordination services' locks in the family model: Curator's
//! `InterProcessMutex` on ZooKeeper (`--model zookeeper`) and etcd's mutex with its session
//! (`--model etcd`). The model, its faults and claims are [`crate::family`]'s (its opening essay
//! has a section per lock); this module holds their servers as the model steps them (the
//! library's [`ZnodeTree`] and [`EtcdKeyspace`] with [`DeletionWatches`], the rules written once)
//! and their [`ModelFamily`] settings.

use cassalock::algo::etcd::mutex::{lease_id_of, prefix_of, EtcdLease, EtcdMutexConfig, KeepAlive};
use cassalock::algo::family::{CuratorLock, EtcdLock, FamilyLock, RenewalEnd};
use cassalock::algo::server_holder::{ServerNow, ServerState};
use cassalock::algo::zookeeper::curator_mutex::{directory_of, CuratorConfig, CuratorLease, LOCKS_ROOT};
use cassalock::algo::Machine;
use cassalock::store::etcd_client::{DeletionWatches, EtcdOp, EtcdOpReply, EtcdServerState};
use cassalock::store::etcd_keyspace::{EtcdCommand, EtcdKeyspace, DEFAULT_ELECTION_TIMEOUT_MS};
use cassalock::store::znode_tree::{SessionId, WatchEvent, ZkCommand, ZkError, ZkOp, ZkReply, ZnodeTree};

use crate::family::MILLIS_PER_TICK;
use crate::family::{
    model_retry, ms_of_tick, no_lane, FamilyMutants, MatrixLine, ModelFamily, ModelServer, NoLane, KEY,
};

/// Why the matrix's failover column does not apply to a ZooKeeper or etcd model.
const ONE_SERVER: &str = "one server in the model (a quorum ensemble does not fail over to a replica that lacks \
                          acknowledged writes)";
use crate::{Fault, Mutant, SpecError};
use cassalock::registry::Lock;

/// ZooKeeper's session timeout in ticks: a session not heard from for longer expires.
pub const ZK_SESSION_TICKS: u8 = 2;

/// etcd's session lease TTL in ticks (whole seconds; etcd's minimum is 2): three, so that the
/// keep-alive (every third of it) is a whole tick, as Redisson's watchdog.
pub const ETCD_SESSION_TICKS: u8 = 3;

/// The events the etcd key space keeps for watchers (a watch from before them is answered
/// "compacted" and the waiter reads again): few, to keep the state small.
const ETCD_HISTORY_EVENTS: usize = 2;

/// A model token (`t1:0`) from a Curator guid (`t1_0`: the family lock writes ':' as '_').
fn token_of_guid(guid: &str) -> Option<String> {
    let (client, acquisition) = guid.split_once('_')?;
    Some(format!("{client}:{acquisition}"))
}

/// The Curator guid of a child's name `_c_{guid}-lock-0000000003`.
fn guid_of_child(name: &str) -> Option<&str> {
    name.strip_prefix("_c_")?.split_once("-lock-").map(|(guid, _)| guid)
}

/// One ZooKeeper server: its tree and sessions (the library's [`ZnodeTree`]), each client's
/// session, and its clock (the clients' plus a jump), which judges the sessions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZooKeeperServer {
    pub tree: ZnodeTree,
    /// Each client's current session. A request answered SESSIONEXPIRED makes its client open
    /// a new one (as Curator's connection does) for the requests after it; a heartbeat that
    /// finds the session expired wakes the client and leaves it the dead handle, so that its
    /// next request is the one told.
    pub sessions: Vec<SessionId>,
    /// Each client's heartbeat has found its session expired and told it: the dead handle
    /// stops pinging (as a real client's does after its Expired event) until a request is
    /// answered SESSIONEXPIRED and a new session replaces it.
    pub told_expired: Vec<bool>,
    pub ahead_ticks: u8,
    /// The clients' clock at the last step that moved it (what a restart reads).
    pub now_tick: u8,
}

impl ZooKeeperServer {
    fn now_ms(&self, now_tick: u8) -> u64 {
        ms_of_tick(now_tick + self.ahead_ticks)
    }

    fn open_session(&mut self, now_ms: u64) -> SessionId {
        let timeout_ms = u64::from(ZK_SESSION_TICKS) * MILLIS_PER_TICK;
        match self
            .tree
            .execute(&ZkCommand::CreateSession { timeout_ms }, now_ms)
            .reply
        {
            ZkReply::SessionCreated { session } => session,
            other => unreachable!("createSession answers a session, not {other}"),
        }
    }

    /// The clients whose watches fired, as channels `watch:t{j}` (a watch of a session no
    /// client uses any more went with that session).
    fn told(&self, fired: &[WatchEvent]) -> Vec<String> {
        fired
            .iter()
            .filter_map(|event| self.sessions.iter().position(|s| *s == event.session))
            .map(|j| format!("watch:t{j}"))
            .collect()
    }
}

impl ModelServer for ZooKeeperServer {
    type Command = ZkOp;
    type Reply = ZkReply;

    fn apply(&mut self, command: &ZkOp, now_tick: u8) -> (ZkReply, u64) {
        let (reply, now_ms, _) = self.apply_from(0, command, now_tick);
        (reply, now_ms)
    }

    fn apply_from(&mut self, client: usize, command: &ZkOp, now_tick: u8) -> (ZkReply, u64, Vec<String>) {
        let now_ms = self.now_ms(now_tick);
        let executed = self.tree.execute(&command.clone().on(self.sessions[client]), now_ms);
        let told = self.told(&executed.fired);
        if executed.reply == ZkReply::Error(ZkError::SessionExpired) {
            // The client's handle is dead: its connection opens a new session.
            self.sessions[client] = self.open_session(now_ms);
            self.told_expired[client] = false;
        }
        (executed.reply, now_ms, told)
    }

    fn connect(&mut self, clients: usize, now_tick: u8) {
        self.now_tick = now_tick;
        let now_ms = self.now_ms(now_tick);
        self.sessions = (0..clients).map(|_| self.open_session(now_ms)).collect();
        self.told_expired = vec![false; clients];
        // The lock's directory exists already (persistent, from earlier runs): the machines'
        // step that creates it is not explored.
        for path in [LOCKS_ROOT.to_owned(), directory_of(KEY)] {
            let create = ZkCommand::Create {
                session: self.sessions[0],
                path,
                data: String::new(),
                ephemeral: false,
                sequential: false,
            };
            self.tree.execute(&create, now_ms);
        }
    }

    fn pass_time(&mut self, now_tick: u8, beating: &[bool]) -> Vec<String> {
        self.now_tick = now_tick;
        let now_ms = self.now_ms(now_tick);
        let mut fired = Vec::new();
        let mut expired = Vec::new();
        for (j, beats) in beating.iter().enumerate() {
            // A dead handle that was told no longer pings.
            if *beats && !self.told_expired[j] {
                let ping = ZkCommand::Ping {
                    session: self.sessions[j],
                };
                let executed = self.tree.execute(&ping, now_ms);
                fired.extend(executed.fired);
                if executed.reply == ZkReply::Error(ZkError::SessionExpired) {
                    expired.push(j);
                }
            }
        }
        fired.extend(self.tree.expire_sessions(now_ms).fired);
        let mut told = self.told(&fired);
        // A heartbeat that finds its session expired: the client is told (every watcher of
        // the session gets the Expired event, so a waiter wakes). Its handle stays the dead
        // one, as the simulator's and the real client's do: its next request is answered
        // SESSIONEXPIRED ([`ZooKeeperServer::apply_from`] then opens a new session), so the
        // machine learns what the real one would.
        for j in expired {
            self.told_expired[j] = true;
            let channel = format!("watch:t{j}");
            if !told.contains(&channel) {
                told.push(channel);
            }
        }
        told
    }

    fn is_read(command: &ZkOp) -> bool {
        matches!(
            command,
            ZkOp::Exists { watch: false, .. } | ZkOp::GetChildren { watch: false, .. }
        )
    }

    fn can_restart(&self) -> bool {
        self.tree.nodes().any(|(_, node)| node.ephemeral_owner.is_some())
    }

    fn restart(&mut self) -> String {
        // The tree and its sessions are on disk (snapshot and log); the restarted server gives
        // every session a fresh timeout, and the clients re-register their watches.
        let sessions: Vec<SessionId> = self.tree.sessions().map(|(id, _)| id).collect();
        let now_ms = self.now_ms(self.now_tick);
        for session in sessions {
            self.tree.execute(&ZkCommand::Ping { session }, now_ms);
        }
        "the server RESTARTS: the tree and the sessions are on disk, every session gets a fresh timeout, the clients set their watches again".to_owned()
    }

    fn clock_jump(&mut self, ticks: u8, now_tick: u8) -> String {
        // Past the session timeout: a jump of exactly the timeout leaves a session heard from
        // this very tick alive.
        self.ahead_ticks = ticks + 1;
        format!(
            "the server's clock JUMPS forward past the session timeout: {} -> {}",
            now_tick,
            now_tick + self.ahead_ticks
        )
    }

    fn canonical(&mut self, _now_tick: u8) {}

    fn live_tokens(&self, _now_tick: u8) -> Vec<(String, Option<u64>)> {
        let directory = format!("{}/", directory_of(KEY));
        self.tree
            .nodes()
            .filter_map(|(path, _)| path.strip_prefix(&directory))
            .filter_map(|name| token_of_guid(guid_of_child(name)?))
            // A node has no TTL: it lives as long as its session.
            .map(|token| (token, None))
            .collect()
    }

    fn describe(&self, now_tick: u8) -> String {
        let now_ms = self.now_ms(now_tick);
        let directory = format!("{}/", directory_of(KEY));
        let nodes: Vec<String> = self
            .tree
            .nodes()
            .filter_map(|(path, node)| {
                let name = path.strip_prefix(&directory)?;
                let token = guid_of_child(name)
                    .and_then(token_of_guid)
                    .unwrap_or_else(|| name.to_owned());
                let seq = name.get(name.len().saturating_sub(2)..).unwrap_or("");
                Some(format!(
                    "{token}#{seq} (czxid {}, session {})",
                    node.czxid,
                    node.ephemeral_owner.unwrap_or(0)
                ))
            })
            .collect();
        let sessions: Vec<String> = self
            .sessions
            .iter()
            .enumerate()
            .map(|(j, id)| match self.tree.session(*id) {
                Some(session) => format!("t{j}: {id} heard {}", session.last_heard_ms / MILLIS_PER_TICK),
                None => format!("t{j}: {id} expired"),
            })
            .collect();
        format!(
            "(server {}) | nodes: {} | sessions {}",
            now_ms / MILLIS_PER_TICK,
            if nodes.is_empty() {
                "-".to_owned()
            } else {
                nodes.join(", ")
            },
            sessions.join(", ")
        )
    }

    fn states(&self, now_tick: u8) -> Vec<ServerNow<'_>> {
        vec![ServerNow {
            state: ServerState::ZooKeeper(&self.tree),
            now_ms: self.now_ms(now_tick),
        }]
    }
}

/// One etcd server (its leader): the library's [`EtcdKeyspace`] and its clients' deletion
/// watches ([`DeletionWatches`]); its clock (the clients' plus a jump) judges the leases.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EtcdServer {
    /// The key space and the deletion watches, stepped as every driver steps them.
    pub state: EtcdServerState,
    pub ahead_ticks: u8,
    /// The clients' clock at the last step that moved it (what a restart reads).
    pub now_tick: u8,
}

impl EtcdServer {
    fn new() -> Self {
        EtcdServer {
            state: EtcdServerState {
                keyspace: EtcdKeyspace::with_history_limit(ETCD_HISTORY_EVENTS),
                watches: DeletionWatches::new(),
            },
            ahead_ticks: 0,
            now_tick: 0,
        }
    }

    fn now_ms(&self, now_tick: u8) -> u64 {
        ms_of_tick(now_tick + self.ahead_ticks)
    }

    /// The model token of a lock key's lease (the machines draw the lease id from it).
    fn token_of_lease(lease: i64) -> Option<String> {
        (0..8usize)
            .flat_map(|c| (0..8u8).map(move |k| format!("t{c}:{k}")))
            .find(|token| lease_id_of(token) == lease)
    }
}

impl ModelServer for EtcdServer {
    type Command = EtcdOp;
    type Reply = EtcdOpReply;

    fn apply(&mut self, command: &EtcdOp, now_tick: u8) -> (EtcdOpReply, u64) {
        let (reply, now_ms, _) = self.apply_from(0, command, now_tick);
        (reply, now_ms)
    }

    fn apply_from(&mut self, client: usize, command: &EtcdOp, now_tick: u8) -> (EtcdOpReply, u64, Vec<String>) {
        let now_ms = self.now_ms(now_tick);
        // One watch per client: a new wait means the client's last one returned, and its watch
        // was cancelled.
        let channel = format!("watch:t{client}");
        if matches!(command, EtcdOp::WatchDeletion { .. }) {
            self.state.watches.cancel(&channel);
        }
        let (reply, told) = self.state.handle(command, &channel, now_ms);
        (reply, now_ms, told)
    }

    fn connect(&mut self, _clients: usize, now_tick: u8) {
        self.now_tick = now_tick;
    }

    fn pass_time(&mut self, now_tick: u8, _beating: &[bool]) -> Vec<String> {
        self.now_tick = now_tick;
        let now_ms = self.now_ms(now_tick);
        self.state.expire(now_ms)
    }

    fn is_read(command: &EtcdOp) -> bool {
        matches!(command, EtcdOp::Kv(EtcdCommand::Range(_)))
    }

    fn can_restart(&self) -> bool {
        self.state.keyspace.leases().next().is_some()
    }

    fn restart(&mut self) -> String {
        // The key space and its leases are on disk (the raft log); the restarted member leads
        // again and refreshes every lease by its election timeout; the clients' watch streams
        // resume from their revision.
        let now_ms = self.now_ms(self.now_tick);
        self.state.keyspace.promote(now_ms, DEFAULT_ELECTION_TIMEOUT_MS);
        format!(
            "the server RESTARTS: keys and leases are on disk, every lease's deadline becomes now + {} ms + its TTL",
            DEFAULT_ELECTION_TIMEOUT_MS
        )
    }

    fn clock_jump(&mut self, ticks: u8, now_tick: u8) -> String {
        self.ahead_ticks = ticks;
        format!(
            "the server's clock JUMPS forward by the session TTL: {} -> {}",
            now_tick,
            now_tick + ticks
        )
    }

    fn canonical(&mut self, _now_tick: u8) {}

    fn live_tokens(&self, now_tick: u8) -> Vec<(String, Option<u64>)> {
        let now_ms = self.now_ms(now_tick);
        let prefix = prefix_of(KEY);
        self.state
            .keyspace
            .key_values()
            .filter(|kv| kv.key.starts_with(&prefix))
            .filter_map(|kv| {
                let token = Self::token_of_lease(kv.lease)?;
                let left_ms = self
                    .state
                    .keyspace
                    .lease(kv.lease)
                    .map(|lease| lease.deadline_ms.saturating_sub(now_ms));
                Some((token, left_ms))
            })
            .collect()
    }

    fn describe(&self, now_tick: u8) -> String {
        let now_ms = self.now_ms(now_tick);
        let prefix = prefix_of(KEY);
        let keys: Vec<String> = self
            .state
            .keyspace
            .key_values()
            .filter(|kv| kv.key.starts_with(&prefix))
            .map(|kv| {
                let token = Self::token_of_lease(kv.lease).unwrap_or_else(|| kv.key.clone());
                let through = self.state.keyspace.lease(kv.lease).map_or("-".to_owned(), |lease| {
                    (lease.deadline_ms / MILLIS_PER_TICK).to_string()
                });
                format!("{token} (rev {}, lease until {through})", kv.create_revision)
            })
            .collect();
        format!(
            "(server {}, revision {}) | keys: {}{}",
            now_ms / MILLIS_PER_TICK,
            self.state.keyspace.revision(),
            if keys.is_empty() {
                "-".to_owned()
            } else {
                keys.join(", ")
            },
            if self.state.watches.is_empty() {
                String::new()
            } else {
                format!(" | {} watch(es)", self.state.watches.len())
            }
        )
    }

    fn states(&self, now_tick: u8) -> Vec<ServerNow<'_>> {
        vec![ServerNow {
            state: ServerState::Etcd(&self.state.keyspace),
            now_ms: self.now_ms(now_tick),
        }]
    }
}

/// The faults both coordination services' models have (no failover: one server).
fn coord_supports(fault: Fault) -> bool {
    matches!(
        fault,
        Fault::None
            | Fault::Pause
            | Fault::StoreFailure
            | Fault::Restart
            | Fault::ServerClockJump
            | Fault::LostNotification
    )
}

impl ModelFamily for CuratorLock {
    type Server = ZooKeeperServer;
    type Lane = NoLane<Self::Config, Self::Command, Self::Reply>;
    const MODEL: &'static str = "zookeeper";
    const LOCK: Option<Lock> = Some(Lock::Zookeeper);
    const HELP: &'static str = "Curator's InterProcessMutex on ZooKeeper: ephemeral sequential nodes, sessions, watches (T1-belief, T1-resource fenced by the czxid, C-token, C-free, C-release, T2)";
    const TTL_TICKS: u8 = ZK_SESSION_TICKS;
    const FENCING: bool = true;
    const KEYS_OUTLIVE_FAILURES: bool = true;

    fn plant(mutant: Mutant, mutants: &mut FamilyMutants, _extend: bool) -> Result<bool, SpecError> {
        let planted = mutant == Mutant::Curator678;
        mutants.curator.release_gives_up_after_one_failure |= planted;
        Ok(planted)
    }

    fn supports(fault: Fault) -> bool {
        coord_supports(fault)
    }

    fn config(_ttl_ticks: u8, _ms_per_tick: u64, _extend: bool, mutants: &FamilyMutants) -> CuratorConfig {
        CuratorConfig {
            // `acquire()`: wait for ever, on the watch alone (Curator's).
            wait_ms: None,
            recheck_every_ms: None,
            retry: model_retry(),
            mutants: mutants.curator,
        }
    }

    fn server(_: Fault) -> ZooKeeperServer {
        ZooKeeperServer {
            tree: ZnodeTree::new(),
            sessions: Vec::new(),
            told_expired: Vec::new(),
            ahead_ticks: 0,
            now_tick: 0,
        }
    }

    fn describe_lock(config: &CuratorConfig, _extend: bool) -> String {
        format!(
            "zookeeper (Curator InterProcessMutex: ephemeral sequential nodes, a watch on the predecessor, sessions kept by the heartbeat{})",
            if config.mutants.release_gives_up_after_one_failure {
                ", mutant: a release gives up after one failed delete (CURATOR-678)"
            } else {
                ""
            }
        )
    }

    fn describe_timing(_: &CuratorConfig) -> String {
        format!("session timeout {ZK_SESSION_TICKS} ticks, a heartbeat every tick while not paused; a holder believes until told (no bound of its own); a waiter sleeps until its watch fires")
    }

    fn counted_from_us(_: &CuratorLease) -> Option<u64> {
        None
    }

    fn describe_fault(fault: Fault) -> String {
        match fault {
            Fault::LostNotification => "one watch event may be lost on its way to a waiter".to_owned(),
            Fault::Restart => "the server may restart (the tree and the sessions persist)".to_owned(),
            Fault::ServerClockJump => "the server's clock may jump forward past the session timeout".to_owned(),
            other => other.name().to_owned(),
        }
    }

    fn matrix_line(fault: Fault) -> MatrixLine {
        match fault {
            Fault::Restart => MatrixLine {
                label: Some("model, the server restarts (tree and sessions persist)"),
                ..MatrixLine::default()
            },
            // The jump expires every session: the waiter's request in flight is answered
            // SESSIONEXPIRED and its acquisition fails, so a second holder needs a second
            // lock() (2 x 1 holds within its bound).
            Fault::ServerClockJump => MatrixLine {
                label: Some("model, the server's clock jumps past the session timeout, 2 clients x 2 acquisitions"),
                acquisitions: Some(2),
                ..MatrixLine::default()
            },
            Fault::LostNotification => MatrixLine {
                label: Some("model, one watch event to a waiter lost"),
                ..MatrixLine::default()
            },
            Fault::Failover => MatrixLine {
                not_applicable: Some(ONE_SERVER),
                ..MatrixLine::default()
            },
            _ => MatrixLine::default(),
        }
    }

    no_lane!();
}

impl ModelFamily for EtcdLock {
    type Server = EtcdServer;
    type Lane = KeepAlive;
    const MODEL: &'static str = "etcd";
    const LOCK: Option<Lock> = Some(Lock::Etcd);
    const HELP: &'static str = "etcd's mutex: session leases kept alive, keys ordered by create revision, watches (T1-belief, T1-resource fenced by the revision, C-token, C-free, C-release, C-lost, T2)";
    const TTL_TICKS: u8 = ETCD_SESSION_TICKS;
    const RENEWAL_LANE: bool = true;
    const FENCING: bool = true;

    fn plant(mutant: Mutant, mutants: &mut FamilyMutants, _extend: bool) -> Result<bool, SpecError> {
        let planted = mutant == Mutant::Etcd11456;
        mutants.etcd.no_own_key_check_after_wait |= planted;
        Ok(planted)
    }

    fn supports(fault: Fault) -> bool {
        coord_supports(fault)
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, _extend: bool, mutants: &FamilyMutants) -> EtcdMutexConfig {
        debug_assert_eq!(ms_per_tick, 1000, "etcd's lease TTL is whole seconds: a tick is one");
        EtcdMutexConfig {
            session_ttl_s: i64::from(ttl_ticks),
            wait_ms: None,
            retry: model_retry(),
            mutants: mutants.etcd,
        }
    }

    fn server(_: Fault) -> EtcdServer {
        EtcdServer::new()
    }

    fn describe_lock(config: &EtcdMutexConfig, _extend: bool) -> String {
        format!(
            "etcd (mutex: a session lease per acquisition kept alive, keys ordered by create revision, a watch on the predecessor's deletion{})",
            if config.mutants.no_own_key_check_after_wait {
                ", mutant: held after the wait without reading its own key (etcd-io/etcd#11456)"
            } else {
                ""
            }
        )
    }

    fn describe_timing(config: &EtcdMutexConfig) -> String {
        format!(
            "session TTL {ETCD_SESSION_TICKS} ticks, kept alive every {} ms; a holder believes for the TTL from its last keep-alive that got through",
            config.keep_alive_every_ms()
        )
    }

    fn counted_from_us(lease: &EtcdLease) -> Option<u64> {
        Some(lease.kept_alive_sent_at_us)
    }

    fn describe_fault(fault: Fault) -> String {
        match fault {
            Fault::LostNotification => "one watch message may be lost on its way to a waiter".to_owned(),
            Fault::Restart => "the server may restart (keys and leases persist; leases are refreshed)".to_owned(),
            Fault::ServerClockJump => "the server's clock may jump forward by the session TTL".to_owned(),
            other => other.name().to_owned(),
        }
    }

    fn matrix_line(fault: Fault) -> MatrixLine {
        MatrixLine {
            label: match fault {
                Fault::Restart => Some("model, the server restarts (keys and leases persist)"),
                Fault::ServerClockJump => Some("model, the server's clock jumps forward by the session TTL"),
                Fault::LostNotification => Some("model, one watch event to a waiter lost"),
                _ => None,
            },
            not_applicable: (fault == Fault::Failover).then_some(ONE_SERVER),
            ..MatrixLine::default()
        }
    }

    fn lane(lease: &EtcdLease, config: &EtcdMutexConfig) -> Option<KeepAlive> {
        <EtcdLock as FamilyLock>::renewal(lease, config)
    }

    fn lane_ended(output: <KeepAlive as Machine>::Output) -> RenewalEnd {
        <EtcdLock as FamilyLock>::renewal_ended(output)
    }

    fn lane_lease(lane: &KeepAlive) -> EtcdLease {
        <EtcdLock as FamilyLock>::renewed_lease(lane)
    }
}

/// The ZooKeeper (Curator) model.
pub type ZooKeeperModel = crate::family::FamilyModel<CuratorLock>;
/// The etcd mutex model.
pub type EtcdModel = crate::family::FamilyModel<EtcdLock>;
