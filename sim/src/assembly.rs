//! Node assembly: the replicas, the resource, the time service, the clients, the fault
//! injector and the oracles of one run, and the wait until the clients are done.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cassalock::driver::time_service::{TimeServiceReplica, THESIS_PERIOD_MS};
use madsim::runtime::Handle;
use madsim::task::NodeId;
use tokio::time::Instant;

use crate::clock::{ClockSpec, SimClock};
use crate::cluster::{
    client_ip, replica_addr, resource_addr, time_replica_ip, Network, Replica, ReplicaData, SimStore,
};
use crate::config::RunConfig;
use crate::faults::Injector;
use crate::oracles::{watch_global_time, watch_replicas};
use crate::trace::{serve_resource, NodeObserver, Record, Recorder, What};
use crate::transport::{QueueTransport, MAX_WAITING_MESSAGES, NETWORK_LIMIT_HIT};
use crate::workload::{client_main, ClientState};

fn clock_of(specs: &[ClockSpec], i: usize, start: Instant) -> SimClock {
    SimClock::new(specs.get(i).cloned().unwrap_or_default(), start)
}

/// Build every node of `config`, run until every client still alive is done (or the time
/// limit).
pub(crate) async fn simulate(config: RunConfig, detailed: bool) -> Simulated {
    let start = Instant::now();
    let recorder = Recorder::new(start, detailed, config.reuse_thread_ids);
    let config = Arc::new(config);
    let transport = open_transport(&config);
    let run = Assembly {
        handle: Handle::current(),
        start,
        config,
        recorder,
        transport,
    };
    let (replica_nodes, replica_data) = run.start_replicas();
    run.watch_rows(&replica_data);
    let resource_node = run.start_resource();
    let time_nodes = run.start_time_service();
    let (client_nodes, client_states) = run.start_clients();

    // Faults.
    let killed: Arc<Mutex<BTreeSet<usize>>> = Arc::default();
    let every_node: Vec<NodeId> = replica_nodes
        .iter()
        .chain([&resource_node])
        .chain(&time_nodes)
        .chain(&client_nodes)
        .copied()
        .collect();
    let injector = Injector {
        handle: run.handle.clone(),
        start,
        recorder: Arc::clone(&run.recorder),
        clients: client_nodes,
        replicas: replica_nodes,
        time_replicas: time_nodes,
        killed: Arc::clone(&killed),
        transport: run.transport.clone(),
        replica_data: replica_data.clone(),
        lock_names: run.config.lock_names(),
    };
    // The tasks the supervisor spawns (on madsim's main node, which cannot be killed): aborted
    // at the end, see `stop_every_task`.
    let mut supervisor_tasks = run.start_injector(&injector);
    run.start_oracles(replica_data, &mut supervisor_tasks);

    run.wait_for_clients(&killed, &client_states).await;
    let outcome = run.outcome(&killed);
    stop_every_task(&run.handle, &every_node, &supervisor_tasks);
    outcome
}

/// The cluster's own network of queues, unless the run is on madsim's: every node of the
/// cluster's network has its queue before any node runs.
fn open_transport(config: &RunConfig) -> Option<Arc<QueueTransport>> {
    match config.cluster.network {
        Network::Madsim => None,
        Network::Queues => {
            let transport = QueueTransport::new(config.cluster.message_latency_us);
            let ips = (0..config.cluster.replicas)
                .map(|i| replica_addr(i).ip())
                .chain((0..config.time_replicas).map(time_replica_ip))
                .chain((0..config.clients).map(client_ip));
            for ip in ips {
                transport.open(ip);
            }
            Some(transport)
        }
    }
}

/// What every step of a run's assembly shares.
struct Assembly {
    handle: Handle,
    start: Instant,
    config: Arc<RunConfig>,
    recorder: Arc<Recorder>,
    transport: Option<Arc<QueueTransport>>,
}

/// A replica's data and clock, as the oracles read them.
type ReplicaView = (Arc<Mutex<ReplicaData>>, SimClock);

impl Assembly {
    /// The replicas' nodes, and what the oracles read of each.
    fn start_replicas(&self) -> (Vec<NodeId>, Vec<ReplicaView>) {
        let config = &self.config;
        let mut replica_nodes = Vec::new();
        let mut replica_data = Vec::new();
        for i in 0..config.cluster.replicas {
            let replica = Replica {
                index: i,
                data: Arc::new(Mutex::new(ReplicaData::default())),
                clock: clock_of(&config.replica_clocks, i, self.start),
                config: config.cluster.clone(),
                transport: self.transport.clone(),
            };
            replica_data.push((Arc::clone(&replica.data), replica.clock.clone()));
            let node = self
                .handle
                .create_node()
                .name(format!("r{i}"))
                .ip(replica_addr(i).ip())
                .init(move || replica.clone().serve())
                .build();
            replica_nodes.push(node.id());
        }
        (replica_nodes, replica_data)
    }

    fn start_resource(&self) -> NodeId {
        let resource_recorder = Arc::clone(&self.recorder);
        let fencing = self.config.fencing;
        self.handle
            .create_node()
            .name("resource")
            .ip(resource_addr().ip())
            .init(move || serve_resource(fencing, Arc::clone(&resource_recorder)))
            .build()
            .id()
    }

    fn start_time_service(&self) -> Vec<NodeId> {
        let mut time_nodes = Vec::new();
        for i in 0..self.config.time_replicas {
            let clock = clock_of(&self.config.time_replica_clocks, i, self.start);
            let cluster = self.config.cluster.clone();
            let recorder = Arc::clone(&self.recorder);
            let transport = self.transport.clone();
            let node = self
                .handle
                .create_node()
                .name(format!("ts{i}"))
                .ip(time_replica_ip(i))
                .init(move || {
                    let clock = clock.clone();
                    let cluster = cluster.clone();
                    let recorder = Arc::clone(&recorder);
                    let transport = transport.clone();
                    async move {
                        let store = SimStore::connect(time_replica_ip(i), cluster, transport).await;
                        let observer = Arc::new(NodeObserver {
                            node: format!("ts{i}"),
                            clock: clock.clone(),
                            recorder,
                        });
                        let replica = TimeServiceReplica::new(store, clock, &format!("ts{i}"), THESIS_PERIOD_MS)
                            .expect("valid name")
                            .with_observer(observer);
                        replica.run(None).await;
                    }
                })
                .build();
            time_nodes.push(node.id());
        }
        time_nodes
    }

    fn start_clients(&self) -> (Vec<NodeId>, Vec<Arc<ClientState>>) {
        let mut client_nodes = Vec::new();
        let mut client_states = Vec::new();
        for i in 0..self.config.clients {
            let state = Arc::new(ClientState {
                index: i,
                done: AtomicU32::new(0),
                incarnations: AtomicU32::new(0),
                finished: AtomicBool::new(false),
                transport: self.transport.clone(),
            });
            client_states.push(Arc::clone(&state));
            let clock = clock_of(&self.config.client_clocks, i, self.start);
            let config = Arc::clone(&self.config);
            let recorder = Arc::clone(&self.recorder);
            let node = self
                .handle
                .create_node()
                .name(format!("c{i}"))
                .ip(client_ip(i))
                .init(move || {
                    client_main(
                        Arc::clone(&config),
                        Arc::clone(&state),
                        clock.clone(),
                        Arc::clone(&recorder),
                    )
                })
                .build();
            client_nodes.push(node.id());
        }
        (client_nodes, client_states)
    }

    /// The planned faults' tasks, then the task of the pause at a renewal's rewrite.
    fn start_injector(&self, injector: &Injector) -> Vec<madsim::task::JoinHandle<()>> {
        let mut supervisor_tasks = Vec::new();
        for fault in self.config.faults.clone() {
            let injector = injector.clone();
            supervisor_tasks.push(madsim::task::spawn(async move { injector.inject(fault).await }));
        }
        if let Some(for_) = self.config.pause_at_renewal_rewrite {
            let (to_injector, mut from_clients) = tokio::sync::mpsc::unbounded_channel();
            self.recorder.arm_step_pause(to_injector);
            let injector = injector.clone();
            supervisor_tasks.push(madsim::task::spawn(async move {
                while let Some((node, paused)) = from_clients.recv().await {
                    injector.pause_at_step(&node, for_, paused).await;
                }
            }));
        }
        supervisor_tasks
    }

    /// T1-server: the recorder reads the locks' main rows on the replicas at the clients'
    /// steps (not a task: a reading takes no simulated time).
    fn watch_rows(&self, replica_data: &[ReplicaView]) {
        let config = &self.config;
        let read_quorum = config.cluster.consistency.required(config.cluster.replicas);
        let locks = config
            .lock_names()
            .iter()
            .filter_map(|name| cassalock::LockId::new(name).ok())
            .collect();
        if let Some(rows) = crate::server_reading::RowServers::new(replica_data.to_vec(), read_quorum, locks) {
            self.recorder.watch_rows(rows);
        }
    }

    /// The oracles' tasks: the replicas' watch, and the time service's where there is one.
    fn start_oracles(&self, replica_data: Vec<ReplicaView>, supervisor_tasks: &mut Vec<madsim::task::JoinHandle<()>>) {
        let config = &self.config;
        let oracle_recorder = Arc::clone(&self.recorder);
        let oracle_data = replica_data.clone();
        let renew_ms = config.renew_every_ms;
        let ttl = Duration::from_secs(u64::from(config.ttl_s));
        // A write of a failed call still in flight lands within one client timeout.
        let settle = config.cluster.client_timeout + Duration::from_millis(500);
        let read_quorum = config.cluster.consistency.required(config.cluster.replicas);
        supervisor_tasks.push(madsim::task::spawn(async move {
            watch_replicas(oracle_recorder, oracle_data, renew_ms, ttl, settle, read_quorum).await
        }));
        if config.time_replicas > 0 {
            let oracle_recorder = Arc::clone(&self.recorder);
            supervisor_tasks.push(madsim::task::spawn(async move {
                watch_global_time(oracle_recorder, replica_data).await
            }));
        }
    }

    /// Until every client still alive is done, or the time limit.
    async fn wait_for_clients(&self, killed: &Mutex<BTreeSet<usize>>, client_states: &[Arc<ClientState>]) {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let killed_now = killed.lock().expect("killed").clone();
            let finished = client_states
                .iter()
                .all(|c| killed_now.contains(&c.index) || c.finished.load(Ordering::Relaxed));
            if finished || self.start.elapsed() >= self.config.max_sim {
                break;
            }
        }
    }

    /// The run's outcome, with a note where the network's queues dropped messages.
    fn outcome(&self, killed: &Mutex<BTreeSet<usize>>) -> Simulated {
        let killed = killed.lock().expect("killed").clone();
        let transport = &self.transport;
        let carried = transport.as_ref().map_or(0, |transport| transport.carried());
        if let Some(dropped) = transport
            .as_ref()
            .map(|transport| transport.over_limit())
            .filter(|&n| n > 0)
        {
            self.recorder.record(
                "network",
                None,
                What::Note(format!(
                    "{NETWORK_LIMIT_HIT}: {dropped} messages dropped because a node's queue held {MAX_WAITING_MESSAGES} (MAX_WAITING_MESSAGES)"
                )),
            );
        }
        Simulated {
            records: self.recorder.records(),
            sim_time: self.start.elapsed(),
            killed,
            requests: self.recorder.requests(),
            queued_messages: carried,
        }
    }
}

/// What one run left: its records, the simulated time it took, the clients killed for good,
/// the clients' store requests, and the messages the run's queues carried (0 on madsim's
/// network, whose own counter has them).
pub(crate) struct Simulated {
    pub(crate) records: Vec<Record>,
    pub(crate) sim_time: Duration,
    pub(crate) killed: BTreeSet<usize>,
    pub(crate) requests: u64,
    pub(crate) queued_messages: u64,
}

/// End every task of the run so that its memory is freed when the runtime is dropped.
///
/// The cause of a sweep's memory growing with its seed count (measured: peak RSS 323 MB after
/// 200 `contention` seeds, 641 MB after 400, 2.39 GB after 1,500; `--seeds 0..100000` was
/// OOM-killed): madsim 0.2.34 frees nothing of a task still pending when its runtime is dropped.
/// The task's future holds its `TaskInfo` (an `Arc`), the `TaskInfo` holds the task's own waker
/// and the waker holds the future: a cycle, and `Runtime` has no `Drop` to break it (runnables
/// left in the ready queue, whose senders they hold, are a second cycle). Our runs end with
/// tasks pending (replica servers, renewal lanes, timeouts, the injector and the oracles), and
/// through them the nodes, the network, the timers and the recorder with every record stayed
/// alive. heaptrack over 40 seeds on one job: 60 MB never freed (1.5 MB a seed; 38 MB of it
/// `TaskInfo`s from `NodeInfo::new_task`, kept by the leaked nodes' task lists); with this
/// call, 13 KB (one-time statics), and peak RSS 9 MB after both 200 and 400 seeds. Neither
/// glibc's arenas (`MALLOC_ARENA_MAX=1`: same growth) nor rayon were the cause.
///
/// Killing a node sets its killed flag and wakes each of its tasks; aborting a task sets its
/// cancelled flag and wakes it. The executor drops, instead of polling, every woken task of a
/// killed node and every cancelled task, in the drain of its ready queue that continues after
/// this (the supervisor's) future returns and ends before `block_on` returns. A paused node is
/// resumed first: killing it would otherwise drop its parked tasks right here, in the
/// supervisor's task, and anything their drops spawn (`LockGuard`'s release) would land on
/// madsim's main node, which cannot be killed, and leak again. Called after the run's outcome
/// is taken, so records, verdicts and trace hashes are unchanged.
pub(crate) fn stop_every_task(handle: &Handle, nodes: &[NodeId], supervisor_tasks: &[madsim::task::JoinHandle<()>]) {
    for &node in nodes {
        handle.resume(node);
        handle.kill(node);
    }
    for task in supervisor_tasks {
        task.abort();
    }
}
