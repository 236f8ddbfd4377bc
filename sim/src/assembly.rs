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
    let handle = Handle::current();
    let start = Instant::now();
    let recorder = Recorder::new(start, detailed, config.reuse_thread_ids);
    let config = Arc::new(config);
    let transport = match config.cluster.network {
        Network::Madsim => None,
        Network::Queues => {
            let transport = QueueTransport::new(config.cluster.message_latency_us);
            // Every node of the cluster's network has its queue before any node runs.
            let ips = (0..config.cluster.replicas)
                .map(|i| replica_addr(i).ip())
                .chain((0..config.time_replicas).map(time_replica_ip))
                .chain((0..config.clients).map(client_ip));
            for ip in ips {
                transport.open(ip);
            }
            Some(transport)
        }
    };

    // Replicas.
    let mut replica_nodes = Vec::new();
    let mut replica_data = Vec::new();
    for i in 0..config.cluster.replicas {
        let replica = Replica {
            index: i,
            data: Arc::new(Mutex::new(ReplicaData::default())),
            clock: clock_of(&config.replica_clocks, i, start),
            config: config.cluster.clone(),
            transport: transport.clone(),
        };
        replica_data.push((Arc::clone(&replica.data), replica.clock.clone()));
        let node = handle
            .create_node()
            .name(format!("r{i}"))
            .ip(replica_addr(i).ip())
            .init(move || replica.clone().serve())
            .build();
        replica_nodes.push(node.id());
    }

    // The resource.
    let resource_recorder = Arc::clone(&recorder);
    let fencing = config.fencing;
    let resource_node = handle
        .create_node()
        .name("resource")
        .ip(resource_addr().ip())
        .init(move || serve_resource(fencing, Arc::clone(&resource_recorder)))
        .build()
        .id();

    // The time service.
    let mut time_nodes = Vec::new();
    for i in 0..config.time_replicas {
        let clock = clock_of(&config.time_replica_clocks, i, start);
        let cluster = config.cluster.clone();
        let recorder = Arc::clone(&recorder);
        let transport = transport.clone();
        let node = handle
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

    // Clients.
    let mut client_nodes = Vec::new();
    let mut client_states = Vec::new();
    for i in 0..config.clients {
        let state = Arc::new(ClientState {
            index: i,
            done: AtomicU32::new(0),
            incarnations: AtomicU32::new(0),
            finished: AtomicBool::new(false),
            transport: transport.clone(),
        });
        client_states.push(Arc::clone(&state));
        let clock = clock_of(&config.client_clocks, i, start);
        let config = Arc::clone(&config);
        let recorder = Arc::clone(&recorder);
        let node = handle
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
        handle: handle.clone(),
        start,
        recorder: Arc::clone(&recorder),
        clients: client_nodes,
        replicas: replica_nodes,
        time_replicas: time_nodes,
        killed: Arc::clone(&killed),
        transport: transport.clone(),
    };
    // The tasks the supervisor spawns (on madsim's main node, which cannot be killed): aborted
    // at the end, see `stop_every_task`.
    let mut supervisor_tasks = Vec::new();
    for fault in config.faults.clone() {
        let injector = injector.clone();
        supervisor_tasks.push(madsim::task::spawn(async move { injector.inject(fault).await }));
    }
    if let Some(for_) = config.pause_at_renewal_rewrite {
        let (to_injector, mut from_clients) = tokio::sync::mpsc::unbounded_channel();
        recorder.arm_step_pause(to_injector);
        let injector = injector.clone();
        supervisor_tasks.push(madsim::task::spawn(async move {
            while let Some((node, paused)) = from_clients.recv().await {
                injector.pause_at_step(&node, for_, paused).await;
            }
        }));
    }

    // Oracles.
    let oracle_recorder = Arc::clone(&recorder);
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
        let oracle_recorder = Arc::clone(&recorder);
        supervisor_tasks.push(madsim::task::spawn(async move {
            watch_global_time(oracle_recorder, replica_data).await
        }));
    }

    // Until every client still alive is done, or the time limit.
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let killed_now = killed.lock().expect("killed").clone();
        let finished = client_states
            .iter()
            .all(|c| killed_now.contains(&c.index) || c.finished.load(Ordering::Relaxed));
        if finished || start.elapsed() >= config.max_sim {
            break;
        }
    }
    let killed = killed.lock().expect("killed").clone();
    let carried = transport.as_ref().map_or(0, |transport| transport.carried());
    if let Some(dropped) = transport
        .as_ref()
        .map(|transport| transport.over_limit())
        .filter(|&n| n > 0)
    {
        recorder.record(
            "network",
            None,
            What::Note(format!(
                "{NETWORK_LIMIT_HIT}: {dropped} messages dropped because a node's queue held {MAX_WAITING_MESSAGES} (MAX_WAITING_MESSAGES)"
            )),
        );
    }
    let outcome = Simulated {
        records: recorder.records(),
        sim_time: start.elapsed(),
        killed,
        requests: recorder.requests(),
        queued_messages: carried,
    };
    stop_every_task(&handle, &every_node, &supervisor_tasks);
    outcome
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
