//! A simulated Cassandra cluster: replica nodes holding the library's `RowStore`, a coordinator
//! path per request, consistency levels, timeouts, read repair.
//!
//! What is modelled, and how:
//! - **Replication.** Every replica holds every row (RF = number of replicas, 3 by default).
//! - **Coordinator.** A client sends each request to a replica picked by madsim's seeded RNG.
//!   The coordinator fixes a write's TTL expiry from *its own* clock, sends the versions to
//!   every replica (applying its own copy at once) and answers after CL acknowledgements, or
//!   with a timeout after `write_timeout` (reads: `read_timeout`). The writes it sent keep travelling: a timed-out
//!   write may have reached no replica, some, or all.
//! - **Reads.** The coordinator asks every replica for the raw versions of the slice (tombstones
//!   and expired cells included), waits for CL answers, reconciles them with the library's rules,
//!   judges liveness with its own clock, and returns the first `count` live cells. Before
//!   answering it repairs the replicas that answered with stale data and waits for their
//!   acknowledgement (Cassandra's blocking read repair), so two QUORUM reads never go backwards.
//!   Reads carry every version from `start` on: perfect short-read protection.
//! - **Limits.** A replica refuses to send more than [`MAX_RAW_VERSIONS`] versions for one
//!   read, and a coordinator stops growing its per-replica limit there. Hitting either is a
//!   store error the client sees ("limit hit: ..."), never a silently shorter slice: a slice
//!   cut short could hide a queue head or a main cell and make a client believe it is first or
//!   alone.
//! - **Restarts.** A killed replica restarts with its data (the commit log reached the OS page
//!   cache: process crash). With `lose_unsynced`, it restarts with only what the last commit-log
//!   sync (every `sync_every`) had saved: a machine crash under `commitlog_sync: periodic`.
//! - **Compaction.** Each replica drops tombstones and expired cells older than `gc_grace` (by
//!   its clock, compared with write timestamps) every few seconds. A write arriving later with an
//!   older timestamp would come back to life, as in Cassandra; so would a cell on a replica that
//!   missed its delete, which is why `gc_grace` must exceed the lock TTL.
//! - **Store faults per call** (the `--fail-before-apply-percent` and `--fail-after-apply-percent`
//!   knobs): each request of a lock client may fail before it is applied (the coordinator
//!   answers Unavailable at once: nothing was applied) or be applied with its reply lost (the
//!   coordinator does all its work, the client hears nothing and times out after
//!   `client_timeout`). Drawn from madsim's seeded generator, per call; each injection is
//!   recorded (`What::StoreFault`). The time service's requests are spared.
//! - Not modelled: hinted handoff, anti-entropy repair, Unavailable answers (a coordinator with
//!   too few live replicas times out instead), speculative retries.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cassalock::store::{CellVersion, LiveCell, RowStore, Store, StoreFailure, StoreOp, StoreReply, StoreRequest};
use cassalock::Clock;
use madsim::net::rpc::{Deserialize, Serialize};
use madsim::net::Endpoint;

use crate::clock::SimClock;
use crate::trace::{Recorder, What};
use crate::transport::{Delivery, QueueTransport, Reply};
pub use crate::wire::{
    client_ip, replica_addr, resource_addr, time_replica_ip, Apply, Coordinate, RawSlice, ReadRaw, ReadRefused, PORT,
};

/// Versions one raw read may carry before it is refused (a row full of tombstones). Hitting it
/// fails the client's request with a store error that says so (see [`limit_hit`]).
pub const MAX_RAW_VERSIONS: usize = 10_000;

/// The failure a client gets when a read hits [`MAX_RAW_VERSIONS`]: an error, not an
/// incomplete answer, so the lock code never acts on a slice that may miss cells (it retries,
/// then gives up, and the verdicts count the failed acquisition).
pub fn limit_hit(row: &str, why: &str) -> String {
    format!("limit hit: {why} (MAX_RAW_VERSIONS = {MAX_RAW_VERSIONS}) reading {row}; refused rather than answered with a possibly incomplete slice")
}

/// Consistency level of every read and write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Consistency {
    One,
    Quorum,
    All,
}

impl Consistency {
    pub fn required(self, replicas: usize) -> usize {
        match self {
            Consistency::One => 1,
            Consistency::Quorum => replicas / 2 + 1,
            Consistency::All => replicas,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Consistency::One => "ONE",
            Consistency::Quorum => "QUORUM",
            Consistency::All => "ALL",
        }
    }
}

/// Cluster-wide settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConfig {
    pub replicas: usize,
    pub consistency: Consistency,
    /// The coordinator gives up waiting for replicas' read answers (and read repair) after this long.
    pub read_timeout: Duration,
    /// The coordinator gives up waiting for replicas' write acknowledgements after this long.
    pub write_timeout: Duration,
    /// The client gives up waiting for the coordinator after this long.
    pub client_timeout: Duration,
    /// A restarted replica keeps only what the last commit-log sync saved.
    pub lose_unsynced: bool,
    pub sync_every: Duration,
    pub gc_grace: Duration,
    /// Per-call faults of the lock clients' requests.
    pub store_faults: StoreFaults,
    /// One message's latency on the simulated network, uniform in `lo..hi` microseconds
    /// (`None`: madsim's 1..10 ms).
    pub message_latency_us: Option<(u64, u64)>,
    /// Which network carries the cluster's messages.
    pub network: Network,
}

/// The network that carries the cluster's messages (the resource's always go over madsim's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Network {
    /// madsim's endpoints and RPC: what seeds recorded before 2026-11-27 ran on (their lines
    /// in `regressions/` say `--network madsim`).
    Madsim,
    /// A delivery queue per node ([`crate::transport`]): the same latencies and faults, fewer
    /// tasks and timers a message. The default.
    #[default]
    Queues,
}

impl Network {
    pub fn name(self) -> &'static str {
        match self {
            Network::Madsim => "madsim",
            Network::Queues => "queues",
        }
    }
}

impl std::fmt::Display for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A network name that is neither `madsim` nor `queues`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a network; use madsim or queues")]
pub struct UnknownNetwork(pub String);

impl std::str::FromStr for Network {
    type Err = UnknownNetwork;
    fn from_str(text: &str) -> Result<Self, UnknownNetwork> {
        match text {
            "madsim" => Ok(Network::Madsim),
            "queues" => Ok(Network::Queues),
            other => Err(UnknownNetwork(other.to_owned())),
        }
    }
}

/// In a scenario file: `"madsim"` or `"queues"`.
impl<'de> serde::Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How a node of the cluster sends: through its madsim endpoint, or the run's queues.
#[derive(Clone)]
pub enum Wire {
    Madsim(Endpoint),
    Queues { transport: Arc<QueueTransport>, me: IpAddr },
}

impl Wire {
    fn is_queues(&self) -> bool {
        matches!(self, Wire::Queues { .. })
    }
}

impl ClusterConfig {
    /// The madsim runtime's configuration for a run on this cluster.
    pub fn madsim_config(&self) -> madsim::Config {
        let mut config = madsim::Config::default();
        if let Some((lo, hi)) = self.message_latency_us {
            config.net.send_latency = Duration::from_micros(lo)..Duration::from_micros(hi);
        }
        config
    }
}

impl ClusterConfig {
    /// The tombstone grace a lock table with cells of `ttl_s` needs: just over the TTL. It must
    /// outlast the TTL: a replica that missed a delete keeps the cell live until its TTL, and
    /// once the other replicas drop the tombstone, reads see that cell again. With 10 s (the
    /// value here before) and TTL 30 s, the C-free oracle saw a failed call's cleaned-up shadow
    /// cell come back 10 s after its delete (`sim --scenario loss --seed 108 --algorithm old`).
    /// No longer than that: the queue row's deleted entries sort first and every read of its
    /// head walks them until compaction drops them (the real table's 60 s made the fairness
    /// report's 32-thread runs several times slower).
    pub fn gc_grace_for_ttl(ttl_s: u32) -> Duration {
        Duration::from_secs(u64::from(ttl_s) + 5)
    }
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            replicas: 3,
            consistency: Consistency::Quorum,
            read_timeout: Duration::from_secs(2),
            write_timeout: Duration::from_secs(2),
            client_timeout: Duration::from_secs(3),
            lose_unsynced: false,
            sync_every: Duration::from_secs(10),
            gc_grace: ClusterConfig::gc_grace_for_ttl(30),
            store_faults: StoreFaults::default(),
            message_latency_us: None,
            network: Network::Queues,
        }
    }
}

/// Per-call store faults of the lock clients' requests, in parts per million.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreFaults {
    /// The request fails before it is applied: the client gets Unavailable at once.
    pub before_apply_ppm: u32,
    /// The request is applied but the reply is lost: the client times out.
    pub after_apply_ppm: u32,
}

impl StoreFaults {
    pub fn any(self) -> bool {
        self.before_apply_ppm > 0 || self.after_apply_ppm > 0
    }
}

// ---- replicas ----

/// A replica's data: what survives a restart lives here (captured by the node's init).
#[derive(Default)]
pub struct ReplicaData {
    pub live: RowStore,
    /// As of the last commit-log sync.
    pub synced: RowStore,
}

/// One replica node.
#[derive(Clone)]
pub struct Replica {
    pub index: usize,
    pub data: Arc<Mutex<ReplicaData>>,
    pub clock: SimClock,
    pub config: ClusterConfig,
    /// The run's queues when the cluster's network is [`Network::Queues`].
    pub transport: Option<Arc<QueueTransport>>,
}

impl Replica {
    fn raw(&self, row: &str, start: &str, live_limit: usize) -> Result<RawSlice, ReadRefused> {
        let now_us = self.clock.now_us();
        let data = self.data.lock().expect("replica data");
        let mut versions = Vec::new();
        let mut live = 0;
        for (column, version) in data.live.raw_slice(row, start) {
            if live >= live_limit {
                return Ok(RawSlice {
                    versions,
                    truncated: true,
                });
            }
            if versions.len() >= MAX_RAW_VERSIONS {
                return Err(ReadRefused(limit_hit(
                    row,
                    "a replica holds more versions than one read may carry",
                )));
            }
            live += usize::from(version.is_live_at(now_us));
            versions.push((column.to_owned(), version.clone()));
        }
        Ok(RawSlice {
            versions,
            truncated: false,
        })
    }

    fn apply(&self, row: &str, versions: &[(String, CellVersion)]) {
        let mut data = self.data.lock().expect("replica data");
        for (column, version) in versions {
            data.live.apply(row, column, version.clone());
        }
    }

    /// The node's main task: serve, sync, compact. Run again on every restart.
    pub async fn serve(self) {
        if self.config.lose_unsynced {
            let mut data = self.data.lock().expect("replica data");
            data.live = data.synced.clone();
        }
        // madsim's endpoint must live as long as the node serves.
        let _endpoint = match self.transport.clone() {
            None => Some(self.serve_madsim().await),
            Some(transport) => {
                self.serve_queues(transport);
                None
            }
        };
        // Commit-log sync and compaction, on the replica's clock.
        let mut since_sync = Duration::ZERO;
        loop {
            self.clock.sleep_ms(1000).await;
            since_sync += Duration::from_secs(1);
            let now_us = self.clock.now_us();
            let mut data = self.data.lock().expect("replica data");
            let horizon = now_us.saturating_sub(self.config.gc_grace.as_micros() as u64);
            data.live.purge(horizon, horizon);
            if since_sync >= self.config.sync_every {
                since_sync = Duration::ZERO;
                data.synced = data.live.clone();
            }
        }
    }

    /// Answer on madsim's network: a handler task per request. The endpoint is returned to be
    /// kept.
    async fn serve_madsim(&self) -> Endpoint {
        let endpoint = Endpoint::bind(replica_addr(self.index))
            .await
            .expect("replica address free");
        let this = self.clone();
        endpoint.add_rpc_handler(move |Apply { row, versions }| {
            let this = this.clone();
            async move { this.apply(&row, &versions) }
        });
        let this = self.clone();
        endpoint.add_rpc_handler(move |ReadRaw { row, start, live_limit }| {
            let this = this.clone();
            async move { this.raw(&row, &start, live_limit) }
        });
        let this = self.clone();
        let wire = Wire::Madsim(endpoint.clone());
        endpoint.add_rpc_handler(move |Coordinate(request)| {
            let this = this.clone();
            let wire = wire.clone();
            // Boxed: madsim moves a handler's future by value as it spawns it, and the
            // coordinator's state (a read's rounds, a write's fan-out) is kilobytes; a box
            // makes each move a pointer's. Polled the same way: no run changes.
            async move { Box::pin(this.coordinate(&wire, request)).await }
        });
        endpoint
    }

    /// Answer from the run's queues: writes and reads in the delivery task, a task per
    /// request to coordinate.
    fn serve_queues(&self, transport: Arc<QueueTransport>) {
        let me = replica_addr(self.index).ip();
        let this = self.clone();
        let wire = Wire::Queues {
            transport: Arc::clone(&transport),
            me,
        };
        transport.clone().serve(me, move |delivery| match delivery {
            Delivery::Apply { row, versions, ack } => {
                this.apply(&row, &versions);
                transport.answer(me, ack, ());
            }
            Delivery::ReadRaw {
                row,
                start,
                live_limit,
                answer,
            } => transport.answer(me, answer, this.raw(&row, &start, live_limit)),
            Delivery::Coordinate { request, answer } => {
                let (this, wire, transport) = (this.clone(), wire.clone(), Arc::clone(&transport));
                madsim::task::spawn(Box::pin(async move {
                    let result = this.coordinate(&wire, request).await;
                    transport.answer(me, answer, result);
                }));
            }
            Delivery::Answer(_) => {
                unreachable!("a node's delivery loop runs answers itself (transport.rs, `CloseOnDrop::deliver`)")
            }
        });
    }

    async fn coordinate(&self, wire: &Wire, request: StoreRequest) -> Result<StoreReply, StoreFailure> {
        let now_us = self.clock.now_us();
        match request {
            StoreOp::Write { row, cells, timestamp } => {
                let versions = cells
                    .into_iter()
                    .map(|c| (c.column, CellVersion::value(c.value, timestamp, c.ttl_s, now_us)))
                    .collect();
                self.replicate(wire, row, versions).await
            }
            StoreOp::Delete { row, column, timestamp } => {
                self.replicate(wire, row, vec![(column, CellVersion::tombstone(timestamp))])
                    .await
            }
            StoreOp::ReadSlice { row, start, count } => self.read(wire, row, start, count as usize).await,
        }
    }

    /// Send to every replica; answer after CL acknowledgements or time out.
    async fn replicate(
        &self,
        wire: &Wire,
        row: String,
        versions: Vec<(String, CellVersion)>,
    ) -> Result<StoreReply, StoreFailure> {
        let needed = self.config.consistency.required(self.config.replicas);
        let (acks, mut acked) = tokio::sync::mpsc::unbounded_channel::<()>();
        for replica in 0..self.config.replicas {
            if replica == self.index {
                self.apply(&row, &versions);
                let _ = acks.send(());
                continue;
            }
            let message = Apply {
                row: row.clone(),
                versions: versions.clone(),
            };
            match wire {
                Wire::Madsim(endpoint) => {
                    let endpoint = endpoint.clone();
                    let acks = acks.clone();
                    let timeout = self.config.write_timeout;
                    madsim::task::spawn(Box::pin(async move {
                        if endpoint
                            .call_timeout(replica_addr(replica), message, timeout)
                            .await
                            .is_ok()
                        {
                            let _ = acks.send(());
                        }
                    }));
                }
                Wire::Queues { transport, me } => {
                    let acks = acks.clone();
                    let Apply { row, versions } = message;
                    let ack = Reply::new(*me, move |()| {
                        let _ = acks.send(());
                    });
                    transport.send(*me, replica_addr(replica).ip(), Delivery::Apply { row, versions, ack });
                }
            }
        }
        // On madsim's network each call's task holds a sender until its own timeout; a lost
        // message on the queues drops its sender at once, so the coordinator holds one until
        // its deadline instead: either way it waits out `write_timeout`, never less.
        let _open_until_timeout = wire.is_queues().then(|| acks.clone());
        drop(acks);
        let wait = async {
            let mut got = 0;
            while got < needed {
                acked.recv().await?;
                got += 1;
            }
            Some(())
        };
        match tokio::time::timeout(self.config.write_timeout, wait).await {
            Ok(Some(())) => Ok(StoreReply::Done),
            _ => Err(StoreFailure::Timeout),
        }
    }

    /// Gather CL raw answers, reconcile, repair the stale responders, answer. Replicas stop
    /// after `limit` live cells; the merged view is only complete up to the last column of any
    /// truncated answer, so if that leaves fewer than `count` cells the read is redone with a
    /// larger limit (short-read protection). If the limit cannot grow any more
    /// ([`MAX_RAW_VERSIONS`]) and the view is still incomplete, the read fails with
    /// [`limit_hit`].
    async fn read(&self, wire: &Wire, row: String, start: String, count: usize) -> Result<StoreReply, StoreFailure> {
        let mut limit = count.max(1);
        loop {
            let (cells, complete) = self.read_round(wire, &row, &start, count, limit).await?;
            if complete {
                return Ok(StoreReply::Slice(cells));
            }
            if limit >= MAX_RAW_VERSIONS {
                return Err(StoreFailure::Other(limit_hit(
                    &row,
                    &format!(
                        "short-read protection would need more than {MAX_RAW_VERSIONS} live cells per replica to find {count}"
                    ),
                )));
            }
            limit = (limit * 4).min(MAX_RAW_VERSIONS);
        }
    }

    async fn read_round(
        &self,
        wire: &Wire,
        row: &str,
        start: &str,
        count: usize,
        limit: usize,
    ) -> Result<(Vec<LiveCell>, bool), StoreFailure> {
        let needed = self.config.consistency.required(self.config.replicas);
        let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel::<(usize, Result<RawSlice, ReadRefused>)>();
        for replica in 0..self.config.replicas {
            if replica == self.index {
                let _ = answers.send((replica, self.raw(row, start, limit)));
                continue;
            }
            let message = ReadRaw {
                row: row.to_owned(),
                start: start.to_owned(),
                live_limit: limit,
            };
            let answers = answers.clone();
            match wire {
                Wire::Madsim(endpoint) => {
                    let endpoint = endpoint.clone();
                    let timeout = self.config.read_timeout;
                    madsim::task::spawn(Box::pin(async move {
                        if let Ok(answer) = endpoint.call_timeout(replica_addr(replica), message, timeout).await {
                            let _ = answers.send((replica, answer));
                        }
                    }));
                }
                Wire::Queues { transport, me } => {
                    let ReadRaw { row, start, live_limit } = message;
                    let answer = Reply::new(*me, move |answer| {
                        let _ = answers.send((replica, answer));
                    });
                    transport.send(
                        *me,
                        replica_addr(replica).ip(),
                        Delivery::ReadRaw {
                            row,
                            start,
                            live_limit,
                            answer,
                        },
                    );
                }
            }
        }
        // As in `replicate`: wait out `read_timeout` even when every message was lost.
        let _open_until_timeout = wire.is_queues().then(|| answers.clone());
        drop(answers);
        let gather = async {
            let mut got = Vec::new();
            while got.len() < needed {
                got.push(answered.recv().await?);
            }
            Some(got)
        };
        let responses = match tokio::time::timeout(self.config.read_timeout, gather).await {
            Ok(Some(responses)) => responses,
            _ => return Err(StoreFailure::Timeout),
        };
        let mut per_replica = Vec::with_capacity(responses.len());
        // Columns up to this one were sent in full by every responder.
        let mut complete_up_to: Option<String> = None;
        for (replica, answer) in responses {
            let slice = answer.map_err(|refused| StoreFailure::Other(refused.0))?;
            if slice.truncated {
                let last = slice.versions.last().map(|(c, _)| c.clone()).unwrap_or_default();
                if complete_up_to.as_ref().is_none_or(|bound| last < *bound) {
                    complete_up_to = Some(last);
                }
            }
            per_replica.push((replica, slice.versions));
        }
        let now_us = self.clock.now_us();
        // Every responder sent the same versions (the usual case): they agree, the merge is
        // any one of them and the repair has nothing to send. The same answer as the general
        // path below, without its map and copies (a sweep's hottest loop).
        if per_replica.windows(2).all(|pair| pair[0].1 == pair[1].1) {
            let (_, versions) = per_replica.swap_remove(0);
            let cells = cassalock::store::live_slice(versions.iter().map(|(c, v)| (c, v)), count, now_us);
            let complete = complete_up_to.is_none() || cells.len() >= count;
            return Ok((cells, complete));
        }
        let mut merged = cassalock::store::merge_slices(
            per_replica
                .iter()
                .map(|(_, versions)| versions.iter().map(|(column, version)| (column.as_str(), version))),
        );
        if let Some(bound) = &complete_up_to {
            merged.retain(|column, _| column <= bound);
        }
        self.repair(wire, row, &merged, per_replica).await?;
        let now_us = self.clock.now_us();
        let cells: Vec<LiveCell> = cassalock::store::live_slice(&merged, count, now_us);
        let complete = complete_up_to.is_none() || cells.len() >= count;
        Ok((cells, complete))
    }

    /// Blocking read repair: bring every responder up to the merged view before answering.
    async fn repair(
        &self,
        wire: &Wire,
        row: &str,
        merged: &BTreeMap<String, CellVersion>,
        per_replica: Vec<(usize, Vec<(String, CellVersion)>)>,
    ) -> Result<(), StoreFailure> {
        let mut pending = Vec::new();
        for (replica, versions) in per_replica {
            // Both sides are sorted by column: walk them together.
            let mut missing = Vec::new();
            let mut have = versions.iter().peekable();
            for (column, version) in merged {
                while have.peek().is_some_and(|(c, _)| c < column) {
                    have.next();
                }
                match have.peek() {
                    Some((c, v)) if c == column && v == version => {}
                    _ => missing.push((column.clone(), version.clone())),
                }
            }
            if missing.is_empty() {
                continue;
            }
            if replica == self.index {
                self.apply(row, &missing);
                continue;
            }
            let message = Apply {
                row: row.to_owned(),
                versions: missing,
            };
            pending.push((replica, message));
        }
        match wire {
            // One repair after the other, each under its own timeout.
            Wire::Madsim(endpoint) => {
                for (replica, message) in pending {
                    endpoint
                        .call_timeout(replica_addr(replica), message, self.config.read_timeout)
                        .await
                        .map_err(|_| StoreFailure::Timeout)?;
                }
            }
            // Every repair at once, all under one timeout.
            Wire::Queues { transport, me } => {
                let (acks, mut acked) = tokio::sync::mpsc::unbounded_channel::<()>();
                let needed = pending.len();
                for (replica, Apply { row, versions }) in pending {
                    let acks = acks.clone();
                    let ack = Reply::new(*me, move |()| {
                        let _ = acks.send(());
                    });
                    transport.send(*me, replica_addr(replica).ip(), Delivery::Apply { row, versions, ack });
                }
                let wait = async {
                    for _ in 0..needed {
                        acked.recv().await;
                    }
                };
                let waited = tokio::time::timeout(self.config.read_timeout, wait).await;
                drop(acks);
                waited.map_err(|_| StoreFailure::Timeout)?;
            }
        }
        Ok(())
    }
}

/// A client's view of the cluster: the `Store` the lock code runs against.
pub struct SimStore {
    wire: Wire,
    config: ClusterConfig,
    /// Where injected store faults are recorded, and the node's name; `None`: no store faults
    /// for this store (the time service's).
    faults_to: Option<(Arc<Recorder>, String)>,
}

/// Which store fault a call gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallFault {
    BeforeApply,
    AfterApply,
}

impl SimStore {
    /// A client at `ip`: on madsim's network, or on `transport`'s queues (its delivery task is
    /// spawned on the current node, to receive answers).
    pub async fn connect(ip: IpAddr, config: ClusterConfig, transport: Option<Arc<QueueTransport>>) -> Self {
        let wire = match transport {
            None => Wire::Madsim(
                Endpoint::bind(SocketAddr::new(ip, 0))
                    .await
                    .expect("client address free"),
            ),
            Some(transport) => {
                // Nothing but answers is sent to a client.
                transport.serve(ip, |_request| {});
                Wire::Queues { transport, me: ip }
            }
        };
        SimStore {
            wire,
            config,
            faults_to: None,
        }
    }

    /// Subject this store's calls to the cluster's per-call store faults, recorded as `node`'s.
    pub fn with_store_faults(mut self, recorder: Arc<Recorder>, node: String) -> Self {
        self.faults_to = Some((recorder, node));
        self
    }

    /// Draw this call's fault, if store faults are on (no draw when they are off, so a run
    /// without them draws what it always drew).
    fn draw_fault(&self, request: &StoreRequest) -> Option<CallFault> {
        use rand::Rng;
        let faults = self.config.store_faults;
        let (recorder, node) = self.faults_to.as_ref()?;
        if !faults.any() {
            return None;
        }
        let draw = madsim::rand::thread_rng().gen_range(0..1_000_000u32);
        let fault = if draw < faults.before_apply_ppm {
            CallFault::BeforeApply
        } else if draw < faults.before_apply_ppm.saturating_add(faults.after_apply_ppm) {
            CallFault::AfterApply
        } else {
            return None;
        };
        let op = match request {
            StoreOp::Write { row, .. } => format!("write to {row}"),
            StoreOp::Delete { row, column, .. } => format!("delete of {row}/{column}"),
            StoreOp::ReadSlice { row, .. } => format!("read of {row}"),
        };
        recorder.record(
            node,
            None,
            What::StoreFault {
                op,
                applied: fault == CallFault::AfterApply,
            },
        );
        Some(fault)
    }
}

impl Store for SimStore {
    async fn execute(&self, request: StoreRequest) -> Result<StoreReply, StoreFailure> {
        use rand::Rng;
        // `pause-at-rewrite`: this request is the renewal rewrite the pause waits for. Once the
        // injector has paused the node, this task parks until the node resumes, and only
        // then does the request leave (stamped and recorded before the pause, as a real
        // client's would be).
        if let Some(paused) = self
            .faults_to
            .as_ref()
            .and_then(|(recorder, node)| recorder.take_step_pause(node))
        {
            let _ = paused.await;
        }
        let fault = self.draw_fault(&request);
        if fault == Some(CallFault::BeforeApply) {
            return Err(StoreFailure::Unavailable);
        }
        let coordinator = madsim::rand::thread_rng().gen_range(0..self.config.replicas);
        let endpoint = match &self.wire {
            Wire::Madsim(endpoint) => endpoint,
            Wire::Queues { transport, me } => {
                return self
                    .execute_on_queues(transport, *me, coordinator, request, fault)
                    .await
            }
        };
        if fault == Some(CallFault::AfterApply) {
            // The coordinator does all its work; its answer never arrives, so the client waits
            // out its timeout.
            let sent = tokio::time::Instant::now();
            let _ = endpoint
                .call_timeout(
                    replica_addr(coordinator),
                    Coordinate(request),
                    self.config.client_timeout,
                )
                .await;
            tokio::time::sleep_until(sent + self.config.client_timeout).await;
            return Err(StoreFailure::Timeout);
        }
        match endpoint
            .call_timeout(
                replica_addr(coordinator),
                Coordinate(request),
                self.config.client_timeout,
            )
            .await
        {
            Ok(answer) => answer,
            Err(_) => Err(StoreFailure::Timeout),
        }
    }
}

impl SimStore {
    /// [`Store::execute`] on the run's queues: the request goes to `coordinator`, and the
    /// client waits for the answer until `client_timeout`: a lost request or answer, or an
    /// answer this call's fault loses, is waited out, never reported early.
    async fn execute_on_queues(
        &self,
        transport: &QueueTransport,
        me: IpAddr,
        coordinator: usize,
        request: StoreRequest,
        fault: Option<CallFault>,
    ) -> Result<StoreReply, StoreFailure> {
        let deadline = transport.now() + self.config.client_timeout;
        let (answer, answered) = tokio::sync::oneshot::channel();
        let answer = Reply::new(me, move |result| {
            let _ = answer.send(result);
        });
        transport.send(
            me,
            replica_addr(coordinator).ip(),
            Delivery::Coordinate { request, answer },
        );
        if fault == Some(CallFault::AfterApply) {
            // The coordinator does all its work; its answer is lost.
            drop(answered);
            tokio::time::sleep_until(deadline).await;
            return Err(StoreFailure::Timeout);
        }
        match tokio::time::timeout(self.config.client_timeout, answered).await {
            Ok(Ok(result)) => result,
            // Lost on the way: the answer will never come.
            Ok(Err(_lost)) => {
                tokio::time::sleep_until(deadline).await;
                Err(StoreFailure::Timeout)
            }
            Err(_elapsed) => Err(StoreFailure::Timeout),
        }
    }
}
