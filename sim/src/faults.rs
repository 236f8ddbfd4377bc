//! The fault injector: each fault of the plan at its time, recorded as it begins and ends.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cassalock::driver::LockEvent;
use madsim::net::NetSim;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use tokio::time::Instant;

use cassalock::algo::LockId;
use cassalock::driver::Clock;

use crate::clock::SimClock;
use crate::cluster::{client_ip, replica_addr, ReplicaData};
use crate::config::{Fault, FaultKind, DELETE_LOCK_ROWS_TEXT};
use crate::trace::{Disruption, Recorder, What};
use crate::transport::QueueTransport;

/// How a note says a planned fault did not fire (the verdicts count such notes).
pub(crate) const DID_NOT_FIRE: &str = "the holder fault did not fire";

/// How the step-triggered pause (`pause-at-rewrite`) begins, in its fault record (the verdicts
/// look for it to tell whether it fired).
pub(crate) const STEP_PAUSE_TEXT: &str = "pause at renewal's rewrite: client";

#[derive(Clone)]
pub(crate) struct Injector {
    pub(crate) handle: Handle,
    pub(crate) start: Instant,
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) clients: Vec<NodeId>,
    pub(crate) replicas: Vec<NodeId>,
    pub(crate) time_replicas: Vec<NodeId>,
    /// Clients killed and not restarted.
    pub(crate) killed: Arc<Mutex<BTreeSet<usize>>>,
    /// The run's queues, when the cluster's network is `Network::Queues`: its clogs, isolation
    /// and loss are set there too (madsim's still carry the resource's messages).
    pub(crate) transport: Option<Arc<QueueTransport>>,
    /// Every replica's data and clock (an operator's delete writes there directly).
    pub(crate) replica_data: Vec<(Arc<Mutex<ReplicaData>>, SimClock)>,
    /// The locks the run's clients take (their rows are what an operator deletes).
    pub(crate) lock_names: Vec<String>,
}

impl Injector {
    fn note(&self, text: String) {
        self.recorder.record("faults", None, What::Note(text));
    }

    fn mark(&self, text: String, node: String, period: Disruption, begins: bool) {
        self.recorder.record(
            "faults",
            None,
            What::Fault {
                text,
                node: Some(node),
                period,
                begins,
            },
        );
    }

    /// The client holding the lock now (believing it holds), if any.
    fn holder(&self) -> Option<usize> {
        self.recorder.with_records(|records| {
            let mut holding: BTreeMap<String, usize> = BTreeMap::new();
            for record in records {
                if let What::Lock(event) = &record.what {
                    match event {
                        LockEvent::Acquired { thread, .. } => {
                            if let Some(index) = record.node.strip_prefix('c').and_then(|i| i.parse().ok()) {
                                holding.insert(thread.to_string(), index);
                            }
                        }
                        LockEvent::Releasing { thread, .. } => {
                            holding.remove(thread.as_str());
                        }
                        _ => {}
                    }
                }
            }
            let killed = self.killed.lock().expect("killed");
            holding.values().copied().find(|c| !killed.contains(c))
        })
    }

    async fn target_holder(&self) -> Option<usize> {
        for _ in 0..1000 {
            if let Some(holder) = self.holder() {
                return Some(holder);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.note(format!("no client held the lock within 10 s: {DID_NOT_FIRE}"));
        None
    }

    fn cut(&self, client: usize, clog: bool) {
        if let Some(transport) = &self.transport {
            let client = client_ip(client);
            for replica in 0..self.replicas.len() {
                let replica = replica_addr(replica).ip();
                transport.clog_link(client, replica, clog);
                transport.clog_link(replica, client, clog);
            }
        }
        let net = NetSim::current();
        for &replica in &self.replicas {
            if clog {
                net.clog_link(self.clients[client], replica);
                net.clog_link(replica, self.clients[client]);
            } else {
                net.unclog_link(self.clients[client], replica);
                net.unclog_link(replica, self.clients[client]);
            }
        }
    }

    pub(crate) async fn inject(self, fault: Fault) {
        tokio::time::sleep_until(self.start + fault.at).await;
        match fault.kind {
            FaultKind::PauseHolder { for_ } => {
                if let Some(client) = self.target_holder().await {
                    self.pause_client(client, for_).await;
                }
            }
            FaultKind::PauseClient { client, for_ } => self.pause_client(client, for_).await,
            FaultKind::KillHolder => {
                if let Some(client) = self.target_holder().await {
                    self.kill_client(client);
                }
            }
            FaultKind::KillClient { client } => self.kill_client(client),
            FaultKind::RestartClient { client } => {
                self.mark(
                    format!("restart client c{client} (a new incarnation, a new client id)"),
                    format!("c{client}"),
                    Disruption::Killed,
                    false,
                );
                self.killed.lock().expect("killed").remove(&client);
                // madsim's restart does not free the old endpoint's address; a kill does.
                self.kill_node(self.clients[client]);
                self.handle.restart(self.clients[client]);
            }
            FaultKind::CutOffHolder { for_ } => {
                if let Some(client) = self.target_holder().await {
                    self.cut_off(client, for_).await;
                }
            }
            FaultKind::CutOffClient { client, for_ } => self.cut_off(client, for_).await,
            FaultKind::KillReplica { replica } => {
                self.mark(
                    format!("kill replica r{replica}"),
                    format!("r{replica}"),
                    Disruption::Killed,
                    true,
                );
                self.kill_node(self.replicas[replica]);
            }
            FaultKind::RestartReplica { replica } => {
                self.mark(
                    format!("restart replica r{replica}"),
                    format!("r{replica}"),
                    Disruption::Killed,
                    false,
                );
                self.kill_node(self.replicas[replica]);
                self.handle.restart(self.replicas[replica]);
            }
            FaultKind::PauseReplica { replica, for_ } => {
                self.mark(
                    format!("pause replica r{replica} for {:.1} s", for_.as_secs_f64()),
                    format!("r{replica}"),
                    Disruption::Paused,
                    true,
                );
                self.handle.pause(self.replicas[replica]);
                tokio::time::sleep(for_).await;
                self.mark(
                    format!("resume replica r{replica}"),
                    format!("r{replica}"),
                    Disruption::Paused,
                    false,
                );
                self.handle.resume(self.replicas[replica]);
            }
            FaultKind::IsolateReplica { replica, for_ } => {
                self.mark(
                    format!("isolate replica r{replica} for {:.1} s", for_.as_secs_f64()),
                    format!("r{replica}"),
                    Disruption::Isolated,
                    true,
                );
                NetSim::current().clog_node(self.replicas[replica]);
                if let Some(transport) = &self.transport {
                    transport.isolate(replica_addr(replica).ip(), true);
                }
                tokio::time::sleep(for_).await;
                self.mark(
                    format!("reconnect replica r{replica}"),
                    format!("r{replica}"),
                    Disruption::Isolated,
                    false,
                );
                NetSim::current().unclog_node(self.replicas[replica]);
                if let Some(transport) = &self.transport {
                    transport.isolate(replica_addr(replica).ip(), false);
                }
            }
            FaultKind::Loss { rate_percent, for_ } => {
                self.recorder.record(
                    "faults",
                    None,
                    What::Fault {
                        text: format!("lose {rate_percent}% of messages for {:.1} s", for_.as_secs_f64()),
                        node: None,
                        period: Disruption::Lossy,
                        begins: true,
                    },
                );
                NetSim::current().update_config(|c| c.packet_loss_rate = f64::from(rate_percent) / 100.0);
                if let Some(transport) = &self.transport {
                    transport.set_loss_rate(f64::from(rate_percent) / 100.0);
                }
                tokio::time::sleep(for_).await;
                self.recorder.record(
                    "faults",
                    None,
                    What::Fault {
                        text: "message loss ends".into(),
                        node: None,
                        period: Disruption::Lossy,
                        begins: false,
                    },
                );
                NetSim::current().update_config(|c| c.packet_loss_rate = 0.0);
                if let Some(transport) = &self.transport {
                    transport.set_loss_rate(0.0);
                }
            }
            FaultKind::KillTimeReplica { replica } => {
                self.mark(
                    format!("kill time-service replica ts{replica}"),
                    format!("ts{replica}"),
                    Disruption::Killed,
                    true,
                );
                self.kill_node(self.time_replicas[replica]);
            }
            FaultKind::DeleteLockRows => self.delete_lock_rows(),
        }
    }

    /// An operator's `DELETE` of every lock's rows, as if run through a coordinator whose
    /// clock is replica r0's, applied to every replica at once (and synced: the delete is
    /// durable). The fencing counter's row stays: deleting it would let tokens go down, a
    /// different fault.
    fn delete_lock_rows(&self) {
        let Some((_, operator_clock)) = self.replica_data.first() else {
            return;
        };
        let stamp_us = operator_clock.now_us();
        let mut rows = BTreeSet::new();
        for name in &self.lock_names {
            // The scenario's lock names were checked when it was built.
            debug_assert!(LockId::new(name.as_str()).is_ok(), "lock name {name:?}");
            if let Ok(lock) = LockId::new(name.as_str()) {
                rows.extend([lock.main_row(), lock.queue_row(), lock.shadow_row()]);
            }
        }
        // A row tombstone per row, as `DELETE FROM ... WHERE key = ?` writes: it also shadows
        // a write with an older timestamp still in flight when the delete lands.
        for (data, _) in &self.replica_data {
            let mut data = data.lock().expect("replica data");
            for row in &rows {
                data.live.delete_row(row, stamp_us);
                data.synced.delete_row(row, stamp_us);
            }
        }
        for begins in [true, false] {
            self.recorder.record(
                "faults",
                None,
                What::Fault {
                    text: if begins {
                        DELETE_LOCK_ROWS_TEXT.to_owned()
                    } else {
                        "the delete is applied on every replica".to_owned()
                    },
                    node: None,
                    period: Disruption::DataLost,
                    begins,
                },
            );
        }
    }

    /// `pause-at-rewrite`: pause client `node` (its renewal has just asked to rewrite its
    /// cells, and that request waits) for `for_`; tell the waiting request once the node is
    /// paused, so that it parks until the node resumes.
    pub(crate) async fn pause_at_step(&self, node: &str, for_: Duration, paused: tokio::sync::oneshot::Sender<()>) {
        let Some(client) = node.strip_prefix('c').and_then(|index| index.parse::<usize>().ok()) else {
            debug_assert!(false, "only clients are paused at a step: {node}");
            return;
        };
        let text = format!(
            "{STEP_PAUSE_TEXT} c{client} for {:.1} s, between renewal's check and its rewrite (the request leaves when it resumes)",
            for_.as_secs_f64()
        );
        self.pause_client_then(client, for_, text, Some(paused)).await;
    }

    async fn pause_client(&self, client: usize, for_: Duration) {
        let text = format!(
            "pause client c{client} for {:.1} s (its renewal stops too)",
            for_.as_secs_f64()
        );
        self.pause_client_then(client, for_, text, None).await;
    }

    /// Pause client `client` for `for_` (its fault record says `text`), telling `paused`, if
    /// any, once it is paused; then resume it.
    async fn pause_client_then(
        &self,
        client: usize,
        for_: Duration,
        text: String,
        paused: Option<tokio::sync::oneshot::Sender<()>>,
    ) {
        self.mark(text, format!("c{client}"), Disruption::Paused, true);
        self.handle.pause(self.clients[client]);
        if let Some(paused) = paused {
            let _ = paused.send(());
        }
        tokio::time::sleep(for_).await;
        self.mark(
            format!("resume client c{client}"),
            format!("c{client}"),
            Disruption::Paused,
            false,
        );
        self.handle.resume(self.clients[client]);
    }

    /// Kill a node's process, paused or not: none of its tasks runs again.
    ///
    /// madsim's kill drops a paused node's parked tasks on the spot, inside the caller's task
    /// (this injector, on madsim's main node), so whatever their drops spawn lands on the main
    /// node and runs: a client killed while paused released its lock from beyond the grave
    /// (`LockGuard`'s drop spawns the release), and that task, never killed, kept the whole
    /// runtime from being freed (see `assembly::stop_every_task`; seen in swarm seed 10, the
    /// only scenario that kills a paused node). Resuming first moves the parked tasks to the
    /// ready queue; the kill then marks the node killed before any of them can run, and the
    /// executor drops each in its own task, where anything spawned belongs to the dead node and
    /// never runs.
    fn kill_node(&self, node: NodeId) {
        self.handle.resume(node);
        self.handle.kill(node);
    }

    fn kill_client(&self, client: usize) {
        self.mark(
            format!("kill client c{client}"),
            format!("c{client}"),
            Disruption::Killed,
            true,
        );
        self.killed.lock().expect("killed").insert(client);
        self.kill_node(self.clients[client]);
    }

    async fn cut_off(&self, client: usize, for_: Duration) {
        self.mark(
            format!(
                "cut client c{client} off from every replica for {:.1} s",
                for_.as_secs_f64()
            ),
            format!("c{client}"),
            Disruption::CutOff,
            true,
        );
        self.cut(client, true);
        tokio::time::sleep(for_).await;
        self.mark(
            format!("heal: client c{client} reaches the replicas again"),
            format!("c{client}"),
            Disruption::CutOff,
            false,
        );
        self.cut(client, false);
    }
}
