//! One simulated run: build the nodes, run the clients, inject the faults, watch with oracles.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cassalock::algo::global_time::{decode_time, GLOBAL_TIME_COLUMN, GLOBAL_TIME_ROW};
use cassalock::driver::time_service::{TimeServiceReplica, THESIS_PERIOD_MS};
use cassalock::driver::LockEvent;
use cassalock::{Clock, LockId, RemoteLocker, Settings};
use madsim::net::{Endpoint, NetSim};
use madsim::runtime::Handle;
use madsim::task::NodeId;
use rand::Rng;
use tokio::time::Instant;

use crate::clock::{ClockSpec, SimClock};
use crate::cluster::{client_ip, replica_addr, resource_addr, time_replica_ip, Replica, ReplicaData, SimStore};
use crate::scenario::{ClientMode, Fault, FaultKind, RunConfig, LOCK};
use crate::trace::{serve_resource, Disruption, NodeObserver, Phase, Record, Recorder, ResourceWrite, What};
use crate::verdict::{judge, Verdicts};

/// The outcome of one run.
pub struct RunOutcome {
    pub config: RunConfig,
    pub seed: u64,
    pub records: Vec<Record>,
    pub verdicts: Verdicts,
    /// Simulated time the run took.
    pub sim_time: Duration,
    /// A hash of every record: equal for two runs of the same (scenario, seed, options).
    pub trace_hash: u64,
    /// Store requests made by the lock clients (renewals and releases included).
    pub requests: u64,
}

/// Run `config` on `seed`. `detailed` keeps every store request and reply in the records.
pub fn run(config: &RunConfig, seed: u64, detailed: bool) -> RunOutcome {
    // Every run gets a fresh OS thread. std seeds HashMap keys once per thread and advances them
    // with every map it makes, so a thread reused across runs carries the runs before into the
    // next one's hash orders (and madsim's scheduling): measured, the same seed gave different
    // traces after other runs on its thread.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(format!("sim-seed-{seed}"))
            .stack_size(16 << 20)
            .spawn_scoped(scope, || run_on_fresh_thread(config, seed, detailed))
            .expect("a thread for the run")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn run_on_fresh_thread(config: &RunConfig, seed: u64, detailed: bool) -> RunOutcome {
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    let for_run = config.clone();
    let (records, sim_time, killed, requests) = runtime.block_on(async move { simulate(for_run, detailed).await });
    let verdicts = judge(config, &records, sim_time, &killed);
    let trace_hash = hash_records(&records);
    RunOutcome {
        config: config.clone(),
        seed,
        records,
        verdicts,
        sim_time,
        trace_hash,
        requests,
    }
}

/// Run `config` twice on `seed` under madsim's own determinism check (it panics if the two runs
/// draw different random numbers at different times).
pub fn check_determinism(config: &RunConfig, seed: u64) {
    // madsim takes a plain `fn()`, so the config travels through a static; the lock keeps two
    // checks from sharing it.
    static SERIAL: Mutex<()> = Mutex::new(());
    static CONFIG: Mutex<Option<RunConfig>> = Mutex::new(None);
    let _serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    *CONFIG.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(config.clone());
    fn body() -> impl std::future::Future<Output = ()> {
        let config = CONFIG
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
            .expect("set above");
        async move {
            simulate(config, false).await;
        }
    }
    madsim::runtime::Runtime::check_determinism(seed, madsim::Config::default(), body);
}

fn hash_records(records: &[Record]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for record in records {
        record.at.hash(&mut hasher);
        record.node.hash(&mut hasher);
        record.clock_us.hash(&mut hasher);
        record.what.to_string().hash(&mut hasher);
    }
    hasher.finish()
}

fn clock_of(specs: &[ClockSpec], i: usize, start: Instant) -> SimClock {
    SimClock::new(specs.get(i).cloned().unwrap_or_default(), start)
}

/// How often a holder looks at `guard.is_lost()` during its critical section.
const LEASE_CHECK_MS: u64 = 100;

/// State a client keeps across restarts of its node.
struct ClientState {
    index: usize,
    done: AtomicU32,
    incarnations: AtomicU32,
    /// Set once the client recorded that it is done.
    finished: std::sync::atomic::AtomicBool,
}

async fn simulate(config: RunConfig, detailed: bool) -> (Vec<Record>, Duration, BTreeSet<usize>, u64) {
    let handle = Handle::current();
    let start = Instant::now();
    let recorder = Recorder::new(start, detailed);
    let config = Arc::new(config);

    // Replicas.
    let mut replica_nodes = Vec::new();
    let mut replica_data = Vec::new();
    for i in 0..config.cluster.replicas {
        let replica = Replica {
            index: i,
            data: Arc::new(Mutex::new(ReplicaData::default())),
            clock: clock_of(&config.replica_clocks, i, start),
            config: config.cluster.clone(),
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
    handle
        .create_node()
        .name("resource")
        .ip(resource_addr().ip())
        .init(move || serve_resource(fencing, Arc::clone(&resource_recorder)))
        .build();

    // The time service.
    let mut time_nodes = Vec::new();
    for i in 0..config.time_replicas {
        let clock = clock_of(&config.time_replica_clocks, i, start);
        let cluster = config.cluster.clone();
        let recorder = Arc::clone(&recorder);
        let node = handle
            .create_node()
            .name(format!("ts{i}"))
            .ip(time_replica_ip(i))
            .init(move || {
                let clock = clock.clone();
                let cluster = cluster.clone();
                let recorder = Arc::clone(&recorder);
                async move {
                    let store = SimStore::connect(time_replica_ip(i), cluster).await;
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
            finished: std::sync::atomic::AtomicBool::new(false),
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
    let injector = Injector {
        handle: handle.clone(),
        start,
        recorder: Arc::clone(&recorder),
        clients: client_nodes,
        replicas: replica_nodes,
        time_replicas: time_nodes,
        killed: Arc::clone(&killed),
    };
    for fault in config.faults.clone() {
        let injector = injector.clone();
        madsim::task::spawn(async move { injector.inject(fault).await });
    }

    // Oracles.
    let oracle_recorder = Arc::clone(&recorder);
    let oracle_data = replica_data.clone();
    let renew_ms = config.renew_every_ms;
    madsim::task::spawn(async move { watch_resurrections(oracle_recorder, oracle_data, renew_ms).await });
    if config.time_replicas > 0 {
        let oracle_recorder = Arc::clone(&recorder);
        madsim::task::spawn(async move { watch_global_time(oracle_recorder, replica_data).await });
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
    (recorder.records(), start.elapsed(), killed, recorder.requests())
}

async fn client_main(config: Arc<RunConfig>, state: Arc<ClientState>, clock: SimClock, recorder: Arc<Recorder>) {
    let incarnation = state.incarnations.fetch_add(1, Ordering::Relaxed);
    let node = format!("c{}", state.index);
    // A new incarnation gets a new client id: thread ids must never repeat.
    let client_id = format!("c{}-{incarnation}", state.index);
    let store = SimStore::connect(client_ip(state.index), config.cluster.clone()).await;
    let mut settings = Settings::new(client_id.clone());
    settings.algorithm = config.algorithm;
    settings.ttl_s = config.ttl_s;
    settings.renew_every_ms = config.renew_every_ms;
    settings.poll_ms = config.poll_ms;
    settings.time_source = config.time_source;
    settings.seed = Some(madsim::rand::random());
    settings.mutants.k3_release_without_waiting = config.k3;
    let observer = Arc::new(NodeObserver {
        node: node.clone(),
        clock: clock.clone(),
        recorder: Arc::clone(&recorder),
    });
    let locker = match RemoteLocker::with_observer(store, clock.clone(), settings, observer) {
        Ok(locker) => locker,
        Err(error) => {
            recorder.record(
                &node,
                None,
                What::ClientError {
                    client: client_id,
                    error: error.to_string(),
                },
            );
            return;
        }
    };
    let resource = Endpoint::bind(std::net::SocketAddr::new(client_ip(state.index), 0))
        .await
        .expect("client address free");
    let write = |token: String, phase: Phase| {
        let message = ResourceWrite {
            client: client_id.clone(),
            token,
            phase,
        };
        resource.call_timeout(resource_addr(), message, Duration::from_secs(3))
    };
    loop {
        let done = state.done.load(Ordering::Relaxed);
        if done >= config.acquisitions && !config.open_ended {
            break;
        }
        recorder.record(
            &node,
            Some(clock.now_us()),
            What::Waiting {
                client: client_id.clone(),
                n: done + 1,
            },
        );
        let attempt = match config.mode {
            ClientMode::GetLock => locker.lock(LOCK).await.map(Some),
            ClientMode::TryGetLock => locker.try_lock(LOCK).await,
        };
        let guard = match attempt {
            Ok(Some(guard)) => guard,
            Ok(None) => {
                recorder.record(
                    &node,
                    Some(clock.now_us()),
                    What::TryRefused {
                        client: client_id.clone(),
                    },
                );
                let think = madsim::rand::thread_rng().gen_range(config.think_ms.0..=config.think_ms.1);
                clock.sleep_ms(think.max(1)).await;
                continue;
            }
            Err(error) => {
                recorder.record(
                    &node,
                    Some(clock.now_us()),
                    What::ClientError {
                        client: client_id.clone(),
                        error: error.to_string(),
                    },
                );
                clock.sleep_ms(500).await;
                continue;
            }
        };
        let token = guard.fencing_token().to_string();
        let _ = write(token.clone(), Phase::Enter).await;
        // The critical section, watching the lease as a careful user would: a lost lease ends
        // it early (a paused process cannot look, which is K1).
        let mut hold = madsim::rand::thread_rng().gen_range(config.hold_ms.0..=config.hold_ms.1);
        let mut abandoned = false;
        while hold > 0 {
            let slice = hold.min(LEASE_CHECK_MS);
            clock.sleep_ms(slice).await;
            hold -= slice;
            if config.lease_aware && guard.is_lost() {
                recorder.record(
                    &node,
                    Some(clock.now_us()),
                    What::Note(format!(
                        "{client_id} sees its lease lost and abandons the critical section"
                    )),
                );
                abandoned = true;
                break;
            }
        }
        if !abandoned {
            let _ = write(token, Phase::Exit).await;
        }
        let _ = guard.release().await;
        if state.done.fetch_add(1, Ordering::Relaxed) + 1 >= config.acquisitions && !config.open_ended {
            break;
        }
        let think = madsim::rand::thread_rng().gen_range(config.think_ms.0..=config.think_ms.1);
        clock.sleep_ms(think).await;
    }
    recorder.record(&node, Some(clock.now_us()), What::ClientDone { client: client_id });
    state.finished.store(true, Ordering::Relaxed);
}

#[derive(Clone)]
struct Injector {
    handle: Handle,
    start: Instant,
    recorder: Arc<Recorder>,
    clients: Vec<NodeId>,
    replicas: Vec<NodeId>,
    time_replicas: Vec<NodeId>,
    killed: Arc<Mutex<BTreeSet<usize>>>,
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
        self.note("no client held the lock within 10 s: the holder fault did not fire".into());
        None
    }

    fn cut(&self, client: usize, clog: bool) {
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

    async fn inject(self, fault: Fault) {
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
                self.handle.kill(self.clients[client]);
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
                self.handle.kill(self.replicas[replica]);
            }
            FaultKind::RestartReplica { replica } => {
                self.mark(
                    format!("restart replica r{replica}"),
                    format!("r{replica}"),
                    Disruption::Killed,
                    false,
                );
                self.handle.kill(self.replicas[replica]);
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
                tokio::time::sleep(for_).await;
                self.mark(
                    format!("reconnect replica r{replica}"),
                    format!("r{replica}"),
                    Disruption::Isolated,
                    false,
                );
                NetSim::current().unclog_node(self.replicas[replica]);
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
            }
            FaultKind::KillTimeReplica { replica } => {
                self.mark(
                    format!("kill time-service replica ts{replica}"),
                    format!("ts{replica}"),
                    Disruption::Killed,
                    true,
                );
                self.handle.kill(self.time_replicas[replica]);
            }
        }
    }

    async fn pause_client(&self, client: usize, for_: Duration) {
        self.mark(
            format!(
                "pause client c{client} for {:.1} s (its renewal stops too)",
                for_.as_secs_f64()
            ),
            format!("c{client}"),
            Disruption::Paused,
            true,
        );
        self.handle.pause(self.clients[client]);
        tokio::time::sleep(for_).await;
        self.mark(
            format!("resume client c{client}"),
            format!("c{client}"),
            Disruption::Paused,
            false,
        );
        self.handle.resume(self.clients[client]);
    }

    fn kill_client(&self, client: usize) {
        self.mark(
            format!("kill client c{client}"),
            format!("c{client}"),
            Disruption::Killed,
            true,
        );
        self.killed.lock().expect("killed").insert(client);
        self.handle.kill(self.clients[client]);
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

/// K3 oracle: after a successful release, no replica may hold a live main cell of that
/// acquisition written *after* the release began. (The same locker stamps writes with
/// monotonic timestamps, so "after" is "timestamp above its clock when release began"; a replica
/// that merely missed the delete holds an older version and is not counted.)
async fn watch_resurrections(
    recorder: Arc<Recorder>,
    replicas: Vec<(Arc<Mutex<ReplicaData>>, SimClock)>,
    renew_ms: u64,
) {
    let main_row = LockId::new(LOCK).expect("valid").main_row();
    let mut releasing: BTreeMap<String, u64> = BTreeMap::new();
    let mut released: Vec<(String, Duration, u64)> = Vec::new();
    let mut seen = 0usize;
    let mut reported: BTreeSet<String> = BTreeSet::new();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        recorder.with_records(|records| {
            for record in &records[seen..] {
                match &record.what {
                    What::Lock(LockEvent::Releasing { thread, client_us, .. }) => {
                        releasing.insert(thread.to_string(), *client_us);
                    }
                    What::Lock(LockEvent::Released {
                        thread,
                        outcome: cassalock::algo::lease::Released::Released,
                        ..
                    }) => {
                        if let Some(began_us) = releasing.remove(thread.as_str()) {
                            released.push((thread.to_string(), record.at, began_us));
                        }
                    }
                    _ => {}
                }
            }
            seen = records.len();
        });
        let now = recorder.elapsed();
        // A renewal write in flight at release time lands within a few round trips; look
        // from 500 ms after the release for as long as a renewal could still write (two intervals).
        let window = Duration::from_millis(500)..Duration::from_millis(500 + 2 * renew_ms.max(1000));
        for (thread, at, began_us) in &released {
            let age = now.saturating_sub(*at);
            if !window.contains(&age) || reported.contains(thread) {
                continue;
            }
            for (index, (data, clock)) in replicas.iter().enumerate() {
                let live = data
                    .lock()
                    .expect("replica data")
                    .live
                    .version(&main_row, thread)
                    .is_some_and(|v| v.timestamp_us > *began_us && v.is_live_at(clock.now_us()));
                if live {
                    reported.insert(thread.clone());
                    recorder.record(
                        "oracle",
                        None,
                        What::Resurrected {
                            thread: thread.clone(),
                            replica: index,
                        },
                    );
                    break;
                }
            }
        }
        released.retain(|(_, at, _)| now.saturating_sub(*at) < window.end);
    }
}

/// S1 oracle: the newest GlobalTime value held by any replica, recorded when it changes.
async fn watch_global_time(recorder: Arc<Recorder>, replicas: Vec<(Arc<Mutex<ReplicaData>>, SimClock)>) {
    let mut last = None;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut newest: Option<cassalock::store::CellVersion> = None;
        for (data, _) in &replicas {
            if let Some(version) = data
                .lock()
                .expect("replica data")
                .live
                .version(GLOBAL_TIME_ROW, GLOBAL_TIME_COLUMN)
            {
                newest = Some(match newest {
                    Some(current) => cassalock::store::reconcile(current, version.clone()),
                    None => version.clone(),
                });
            }
        }
        let value = newest.and_then(|v| match v.body {
            cassalock::store::CellBody::Value { value, .. } => decode_time(&value),
            _ => None,
        });
        if value.is_some() && value != last {
            last = value;
            recorder.record(
                "oracle",
                None,
                What::GlobalTime {
                    value_us: value.unwrap_or(0),
                },
            );
        }
    }
}
