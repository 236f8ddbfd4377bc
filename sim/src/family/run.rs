//! One run of a family scenario on one seed: the nodes, the clients' workload, the faults, the
//! records; then the judges of [`super::verdict`].
//!
//! - **Servers**: one node per logical server ([`super::net::ServerNode`]); the SET NX and
//!   Redisson scenarios with a replica have two nodes for server 0 (node 0 the primary, node 1
//!   the replica). Redisson's server sends its unlock messages to the waiting clients
//!   ([`super::net::PubSub`]); each client receives them on an endpoint of its own and hands
//!   them to its `Channels`, which wakes its waiter.
//! - **Clients**: one node each, running `acquisitions` times: `lock(key)` (again after it gave
//!   up, up to `max_tries` calls), then, if `guard.is_valid()`, a write to the resource node
//!   carrying the holder's token (a planned [`super::scenario::Pause`] stops the client between
//!   the check and the write: its workload alone, or its whole node, watchdog included), a
//!   hold, the planned extensions (each followed by the same check, write and hold), and
//!   `release`. A holder with a watchdog whose check finds its lease run out records that it
//!   knows (C-lost).
//! - **The resource** records every write it receives with the acquisition it came from
//!   (acquisitions are numbered in the order their `Acquired` events happened).
//! - **Faults** fire at a global time, right after the run's first acquisition, or right after
//!   its first watchdog renewal was sent.
//!
//! Everything random comes from the seed: madsim's generator (latencies, think times) and the
//! lockers' own generators, seeded from the run's seed and the client's index.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cassalock::algo::family::Release;
use cassalock::algo::Source;
use cassalock::driver::any_lock::AnyLocker;
use cassalock::driver::family::{FamilyEvent, FamilyObserver};
use cassalock::driver::notify::Channels;
use cassalock::registry::Family;
use cassalock::store::etcd_client::EtcdServerState;
use cassalock::store::memcached::Memcached;
use cassalock::store::redis_keyspace::{RedisKeyspace, RedisValue};
use cassalock::store::redis_replication::ReplicatedRedis;
use cassalock::Clock;
use madsim::net::rpc::{Deserialize, Request, Serialize};
use madsim::net::Endpoint;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::time::Instant;

use super::net::{
    client_ip, lock, notify_addr, resource_addr, server_addr, FairObserver, FairScript, FairStep, FamilyNet, PubSub,
    Replication, ServerData, ServerNode, ServerSlot, SimServerStore, UnlockMessage,
};
use super::record::{FamilyRecord, FamilyWhat, LeftKey, RunFacts, KEY};
use super::scenario::{FamilyScenario, Pause, ServerAction, ServerFault, Trigger};
use super::sim_lock::{LockKind, LockerEnv, Wakeup};
use super::verdict::FamilyVerdicts;
use crate::clock::SimClock;

mod inject;
mod server_reading;
use inject::inject;

/// Collects the run's records; numbers acquisitions; wakes the faults waiting for the first.
pub struct Recorder {
    start: Instant,
    detailed: bool,
    records: Mutex<Vec<FamilyRecord>>,
    acquisitions: Mutex<BTreeMap<String, u64>>,
    /// Token by thread (acquisition name).
    tokens: Mutex<BTreeMap<String, String>>,
    first_acquired: Milestone,
    first_renewal: Milestone,
    /// The servers, to see what a release left behind at the instant it said `Released`.
    probe: Mutex<Option<(Arc<Servers>, Arc<FamilyNet>)>>,
    /// The lock, to read who its servers say holds it (T1-server).
    lock_kind: LockKind,
    /// The last reading of the servers recorded (T1-server).
    server_holder: Mutex<Option<server_reading::Reading>>,
}

impl Recorder {
    fn new(start: Instant, detailed: bool, lock_kind: LockKind) -> Self {
        Recorder {
            start,
            detailed,
            records: Mutex::new(Vec::new()),
            acquisitions: Mutex::new(BTreeMap::new()),
            tokens: Mutex::new(BTreeMap::new()),
            first_acquired: Milestone::default(),
            first_renewal: Milestone::default(),
            probe: Mutex::new(None),
            lock_kind,
            server_holder: Mutex::new(None),
        }
    }

    /// Read who the servers say holds the lock, and record it (at `node`'s step) if it
    /// changed since the last reading recorded, or `always` (T1-server,
    /// [`server_reading`]). Nothing is read while the probe is empty or the lock does not say.
    fn read_server(&self, always: bool) {
        let probe = lock(&self.probe).clone();
        let Some((servers, net)) = probe else {
            return;
        };
        let now = self.start.elapsed();
        let Some(reading) = server_reading::read_holder(&servers, &net, &*self.lock_kind, now) else {
            return;
        };
        let mut last = lock(&self.server_holder);
        if always || last.as_ref() != Some(&reading) {
            *last = Some(reading.clone());
            drop(last);
            self.record(
                "oracle",
                FamilyWhat::ServerHolder {
                    token: reading.token,
                    gone_at: reading.gone_at,
                },
            );
        }
    }

    fn record(&self, node: &str, what: FamilyWhat) {
        let record = FamilyRecord {
            at: self.start.elapsed(),
            node: node.to_owned(),
            what,
        };
        lock(&self.records).push(record);
    }

    fn acquisition_of(&self, token: &str) -> Option<u64> {
        lock(&self.acquisitions).get(token).copied()
    }

    /// The logical servers whose live key holds `token` now.
    fn servers_holding(&self, token: &str) -> Vec<usize> {
        let probe = lock(&self.probe).clone();
        let Some((servers, net)) = probe else {
            return Vec::new();
        };
        left_keys(&servers, &net)
            .into_iter()
            .filter(|left| left.token == token)
            .map(|left| left.server)
            .collect()
    }
}

/// Something that happens once in a run, and the faults waiting for it.
#[derive(Default)]
struct Milestone {
    reached: AtomicBool,
    wake: Notify,
}

impl Milestone {
    fn reach(&self) {
        if !self.reached.swap(true, Ordering::SeqCst) {
            self.wake.notify_waiters();
        }
    }

    async fn wait(&self) {
        // Bounded: each pass either returns or waits for a notification, which comes once.
        for _ in 0..2 {
            let notified = self.wake.notified();
            if self.reached.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
        debug_assert!(self.reached.load(Ordering::SeqCst));
    }
}

/// A client's observer: its node name on every event.
struct ClientObserver {
    node: String,
    recorder: Arc<Recorder>,
}

impl FamilyObserver for ClientObserver {
    fn on_event(&self, event: FamilyEvent) {
        // A call's start matters to C-wait only when the call has a deadline.
        if matches!(event, FamilyEvent::Calling { wait_ms: None, .. }) {
            return;
        }
        // A watchdog's renewal (Redisson's step D3 is the only one of its steps that sends).
        if let FamilyEvent::Request { tag, thread, .. } = &event {
            if tag.source == Source::Redisson && tag.step == 3 {
                self.recorder.first_renewal.reach();
            }
            // The fair lock's machine decided the wait is over: the judge no longer counts the
            // call as waiting (recorded without the detail, as the judge needs it).
            if *tag == cassalock::algo::redis::redisson::F2_GIVE_UP {
                self.recorder
                    .record(&self.node, FamilyWhat::FairGivingUp { thread: thread.clone() });
            }
        }
        let chatty = matches!(
            event,
            FamilyEvent::Request { .. } | FamilyEvent::Reply { .. } | FamilyEvent::Sleep { .. }
        );
        if chatty && !self.recorder.detailed {
            return;
        }
        let numbered = match &event {
            FamilyEvent::Acquired { token, thread, .. } => {
                lock(&self.recorder.tokens).insert(thread.clone(), token.clone());
                let mut acquisitions = lock(&self.recorder.acquisitions);
                let acquisition = acquisitions.len() as u64;
                // A token is acquired once, unless the lock hands one out twice (etcd 10756's
                // shared session): then its writes count for the later acquisition, and C-token
                // reports the repeat.
                acquisitions.insert(token.clone(), acquisition);
                Some((token.clone(), acquisition))
            }
            _ => None,
        };
        // T1-server: the servers as they are before the step (a holder about to release is
        // still a believer), and again right after a belief begins or grows.
        let belief_grows = matches!(event, FamilyEvent::Acquired { .. } | FamilyEvent::Extended { .. });
        if !chatty {
            self.recorder.read_server(false);
        }
        let released = match &event {
            FamilyEvent::Released {
                thread,
                outcome: Release::Released,
                ..
            } => Some(thread.clone()),
            _ => None,
        };
        self.recorder.record(&self.node, FamilyWhat::Lock(event));
        if let Some(thread) = released {
            let token = lock(&self.recorder.tokens).get(&thread).cloned();
            if let Some(token) = token {
                let servers = self.recorder.servers_holding(&token);
                if !servers.is_empty() {
                    self.recorder
                        .record(&self.node, FamilyWhat::KeptAfterRelease { token, servers });
                }
            }
        }
        if let Some((token, acquisition)) = numbered {
            self.recorder
                .record(&self.node, FamilyWhat::Numbered { token, acquisition });
            self.recorder.first_acquired.reach();
        }
        if belief_grows {
            self.recorder.read_server(true);
        }
    }
}

/// Client → resource: a write by the holder of `token`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResourceWrite {
    pub token: String,
}
impl Request for ResourceWrite {
    type Response = ();
    const ID: u64 = 0xFA41_0010;
}

async fn serve_resource(recorder: Arc<Recorder>) {
    let endpoint = Endpoint::bind(resource_addr()).await.expect("resource address free");
    endpoint.add_rpc_handler(move |ResourceWrite { token }| {
        let recorder = Arc::clone(&recorder);
        async move {
            let acquisition = recorder.acquisition_of(&token);
            recorder.read_server(false);
            recorder.record("resource", FamilyWhat::Write { token, acquisition });
        }
    });
    std::future::pending::<()>().await;
    drop(endpoint);
}

/// Asks the supervisor to pause a client's whole node for `ms`, and answers once it resumed.
type PauseRequests = mpsc::UnboundedSender<(usize, u64, oneshot::Sender<()>)>;

/// What a client needs besides its locker.
struct ClientCtx {
    index: usize,
    node: String,
    scenario: Arc<FamilyScenario>,
    clock: SimClock,
    endpoint: Endpoint,
    recorder: Arc<Recorder>,
    /// Where the unlock messages this client receives are delivered (Redisson scenarios).
    channels: Option<Arc<Channels>>,
    pauses: PauseRequests,
}

impl ClientCtx {
    async fn sleep_ms(&self, ms: u64) {
        if ms > 0 {
            self.clock.sleep_ms(ms).await;
        }
    }

    async fn write(&self, token: &str) {
        let timeout = Duration::from_millis(self.scenario.request_timeout_ms);
        let write = ResourceWrite {
            token: token.to_owned(),
        };
        // A lost write is not a violation of anything: the resource judges what arrives.
        let _ = self.endpoint.call_timeout(resource_addr(), write, timeout).await;
    }

    fn pause(&self, acquisition: u32) -> Option<Pause> {
        self.scenario
            .pauses
            .iter()
            .find(|pause| pause.client == self.index && pause.acquisition == acquisition)
            .copied()
    }

    /// Stop for `pause.pause_ms`: this task alone (a plain sleep of global time), or the
    /// whole node, by the supervisor (madsim's pause: every task stops, the watchdog's too).
    async fn stop(&self, pause: Pause) {
        self.recorder
            .record(&self.node, FamilyWhat::Paused { ms: pause.pause_ms });
        if !pause.whole_process {
            tokio::time::sleep(Duration::from_millis(pause.pause_ms)).await;
            return;
        }
        let (resumed, on_resume) = oneshot::channel();
        if self.pauses.send((self.index, pause.pause_ms, resumed)).is_ok() {
            // The node is paused from the supervisor's next step; this task waits for it to
            // be resumed.
            let _ = on_resume.await;
        }
    }
}

async fn workload(locker: &dyn AnyLocker, ctx: &ClientCtx) {
    use rand::Rng;
    let scenario = &ctx.scenario;
    for acquisition in 0..scenario.acquisitions {
        if scenario.think_max_ms > 0 {
            let think_ms = madsim::rand::thread_rng().gen_range(0..=scenario.think_max_ms);
            ctx.sleep_ms(think_ms).await;
        }
        ctx.recorder.record(
            &ctx.node,
            FamilyWhat::Waiting {
                acquisition: acquisition + 1,
            },
        );
        let mut held = None;
        for _ in 0..scenario.max_tries {
            match locker.lock(KEY).await {
                Ok(guard) => {
                    held = Some(guard);
                    break;
                }
                Err(error) => {
                    ctx.recorder.record(
                        &ctx.node,
                        FamilyWhat::GaveUp {
                            error: error.to_string(),
                        },
                    );
                    ctx.sleep_ms(20).await;
                }
            }
        }
        let Some(mut guard) = held else { continue };
        for round in 0..=scenario.extends {
            if round > 0 && guard.extend().await.is_err() {
                break;
            }
            if guard.is_valid() {
                if round == 0 {
                    if let Some(pause) = ctx.pause(acquisition) {
                        ctx.stop(pause).await;
                    }
                }
                ctx.write(guard.token()).await;
            } else if scenario.lock.renew_every_ms().is_some() {
                // A holder with a watchdog learns here that its lease ran out (C-lost).
                ctx.recorder.record(
                    &ctx.node,
                    FamilyWhat::SawInvalid {
                        thread: guard.thread().to_owned(),
                    },
                );
            }
            let hold_ms = match scenario.extend_after_ms {
                Some(ms) if round < scenario.extends => ms,
                _ => scenario.hold_ms,
            };
            ctx.sleep_ms(hold_ms).await;
        }
        // The outcome is in the events (Released); an error here is a store failure.
        let _ = guard.release().await;
    }
}

fn locker_seed(seed: u64, client: usize) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (client as u64 + 1)
}

async fn client_main(ctx: ClientCtx, net: Arc<FamilyNet>, seed: u64, done: Arc<AtomicUsize>) {
    let start_ms = ctx.scenario.start_ms(ctx.index);
    tokio::time::sleep_until(net.start + Duration::from_millis(start_ms)).await;
    let store = |server: usize| SimServerStore {
        endpoint: ctx.endpoint.clone(),
        client: ctx.index,
        server,
        net: Arc::clone(&net),
        channels: ctx.channels.clone(),
    };
    let observer: Arc<dyn FamilyObserver> = Arc::new(ClientObserver {
        node: ctx.node.clone(),
        recorder: Arc::clone(&ctx.recorder),
    });
    let env = LockerEnv {
        store: store(0),
        clock: ctx.clock.clone(),
        name: ctx.node.clone(),
        seed: locker_seed(seed, ctx.index),
        observer,
    };
    let locker = ctx
        .scenario
        .lock
        .locker(env)
        .expect("the scenario's settings are valid (FamilyScenario::check)");
    workload(&*locker, &ctx).await;
    ctx.recorder.record(&ctx.node, FamilyWhat::Done);
    done.fetch_add(1, Ordering::SeqCst);
}

/// The outcome of one run.
pub struct FamilyOutcome {
    pub scenario: FamilyScenario,
    pub seed: u64,
    pub records: Vec<FamilyRecord>,
    pub left: Vec<LeftKey>,
    /// The run's event record (`super::events`): its verdicts were judged from it.
    pub header: cassalock_judge::event::Header,
    pub events: Vec<cassalock_judge::event::Event>,
    pub verdicts: FamilyVerdicts,
    /// The longest handover (from a release to the next acquisition), and when that release
    /// was: what lost unlock messages cost.
    pub longest_handover: Option<(Duration, Duration)>,
    pub sim_time: Duration,
    /// Equal for two runs of the same scenario and seed, detailed or not (the details are
    /// left out of it).
    pub trace_hash: u64,
}

impl FamilyOutcome {
    /// Did the scenario's fault happen in this run: a fault record (a failover, a restart, a
    /// clock jump), a pause, or a lost unlock or watch message? A control scenario's configured
    /// conditions (lost requests, a drifting clock) leave no such record.
    pub fn fault_fired(&self) -> bool {
        self.records.iter().any(|record| {
            matches!(
                record.what,
                FamilyWhat::Fault(_)
                    | FamilyWhat::Paused { .. }
                    | FamilyWhat::UnlockMessage { lost: true, .. }
                    | FamilyWhat::Watch { lost: true, .. }
            )
        })
    }

    /// The run's records and the keys left at its end, one line each, as `sim-family --trace`
    /// prints them.
    pub fn trace_text(&self) -> String {
        let mut text = String::new();
        for record in &self.records {
            text.push_str(&format!("  {record}\n"));
        }
        for left in &self.left {
            text.push_str(&format!(
                "  left at the end: server {} key {} = {}\n",
                left.server, left.key, left.token
            ));
        }
        text
    }
}

/// Run `scenario` on `seed`; `detailed` keeps every request, reply and sleep in the records.
pub fn run_family(scenario: &FamilyScenario, seed: u64, detailed: bool) -> FamilyOutcome {
    // A fresh OS thread per run, as `crate::run::run` explains (hash seeds carry over).
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(format!("family-seed-{seed}"))
            .stack_size(16 << 20)
            .spawn_scoped(scope, || run_on_fresh_thread(scenario, seed, detailed))
            .expect("a thread for the run")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn run_on_fresh_thread(scenario: &FamilyScenario, seed: u64, detailed: bool) -> FamilyOutcome {
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    let for_run = scenario.clone();
    let (records, facts) = runtime.block_on(async move { simulate(for_run, seed, detailed).await });
    let header = super::events::header(scenario, seed, facts.end);
    let events = super::events::events(&records, &facts);
    let verdicts = cassalock_judge::families::judge_record(&header, &events);
    let longest_handover = super::verdict::longest_handover(&events);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for record in records.iter().filter(|record| !record.is_detail()) {
        record.to_string().hash(&mut hasher);
    }
    facts.left.hash(&mut hasher);
    FamilyOutcome {
        scenario: scenario.clone(),
        seed,
        records,
        left: facts.left.clone(),
        header,
        events,
        verdicts,
        longest_handover,
        sim_time: facts.end,
        trace_hash: hasher.finish(),
    }
}

/// Run `scenario` twice on `seed` under madsim's own determinism check (it panics if the two
/// runs draw different random numbers at different times).
pub fn check_family_determinism(scenario: &FamilyScenario, seed: u64) {
    // madsim takes a plain `fn()`, so the scenario travels through a static; the lock keeps
    // two checks from sharing it.
    static SERIAL: Mutex<()> = Mutex::new(());
    static SCENARIO: Mutex<Option<(FamilyScenario, u64)>> = Mutex::new(None);
    let _serial = lock(&SERIAL);
    *lock(&SCENARIO) = Some((scenario.clone(), seed));
    fn body() -> impl std::future::Future<Output = ()> {
        let (scenario, seed) = lock(&SCENARIO).clone().expect("set above");
        async move {
            simulate(scenario, seed, true).await;
        }
    }
    madsim::runtime::Runtime::check_determinism(seed, madsim::Config::default(), body);
}

/// The server side of a run: nodes and their data, per logical server.
struct Servers {
    node_ids: Vec<NodeId>,
    /// Per node: its data (shared by a pair's two nodes) and clock.
    nodes: Vec<ServerNode>,
    replication: Option<Arc<Replication>>,
}

async fn simulate(scenario: FamilyScenario, seed: u64, detailed: bool) -> (Vec<FamilyRecord>, RunFacts) {
    let start = Instant::now();
    let lock_kind = Arc::clone(&scenario.lock);
    let setup = Setup {
        handle: Handle::current(),
        start,
        scenario: Arc::new(scenario),
        recorder: Arc::new(Recorder::new(start, detailed, lock_kind)),
    };
    let (servers, pubsub) = setup.start_servers();
    let net = Arc::new(setup.family_net(pubsub));
    // The resource, then the clients.
    let mut other_nodes = vec![setup.start_resource()];
    let (pauses, pause_requests) = mpsc::unbounded_channel();
    let done = Arc::new(AtomicUsize::new(0));
    let client_clocks: Vec<SimClock> = (0..setup.scenario.clients)
        .map(|client| SimClock::new(setup.scenario.client_clock(client), start))
        .collect();
    other_nodes.extend(setup.start_clients(&net, &client_clocks, &pauses, &done, seed));
    drop(pauses);

    // Faults, each on its own task of the supervisor.
    let servers = Arc::new(servers);
    *lock(&setup.recorder.probe) = Some((Arc::clone(&servers), Arc::clone(&net)));
    setup.recorder.read_server(true);
    let fault_tasks = setup.start_faults(&net, &servers, pause_requests, other_nodes[1..].to_vec());

    setup.wait_for_clients(&done).await;
    let end = start.elapsed();
    let left = left_keys(&servers, &net);
    let records = std::mem::take(&mut *lock(&setup.recorder.records));
    let facts = RunFacts {
        end,
        clients_done: done.load(Ordering::SeqCst),
        client_clocks,
        left,
    };
    // Stop every node and fault task once the outcome is taken, or the run's runtime (nodes,
    // tasks, records) is never freed: a sweep grew by about 280 KB a seed (1.1 GB after 4,000
    // seeds of set-nx-contention). The recorder's probe holds the servers: let it go too.
    *lock(&setup.recorder.probe) = None;
    let every_node: Vec<NodeId> = servers.node_ids.iter().copied().chain(other_nodes).collect();
    crate::assembly::stop_every_task(&setup.handle, &every_node, &fault_tasks);
    (records, facts)
}

/// What every step of a run's setup shares.
struct Setup {
    handle: Handle,
    start: Instant,
    scenario: Arc<FamilyScenario>,
    recorder: Arc<Recorder>,
}

impl Setup {
    /// Servers: per logical server a node; a replicated SET NX server a second one. Also the
    /// Redis pub/sub, where the lock's waiters sleep until notified (the servers hold it).
    fn start_servers(&self) -> (Servers, Option<Arc<PubSub>>) {
        let (scenario, start) = (&self.scenario, self.start);
        let logical = scenario.lock.servers();
        let replication = scenario
            .replication_lag_ms
            .map(|lag_ms| Arc::new(Replication::new(lag_ms)));
        let pubsub = self.pubsub();
        // The fair lock's queue as the servers apply its scripts (held weakly, as the pub/sub).
        let fair = scenario.lock.is_fair().then(|| fair_observer(&self.recorder));
        let mut nodes = Vec::new();
        for server in 0..logical {
            let data = match (scenario.lock.server(), &replication) {
                (Family::Memcached, _) => ServerData::Memcached(Memcached::new()),
                (Family::ZooKeeper, _) => ServerData::zookeeper(scenario.zk_close_lag_ms),
                (Family::Etcd, _) => ServerData::etcd(),
                (Family::Redis, Some(_)) => ServerData::Pair(ReplicatedRedis::new()),
                (Family::Redis, None) => ServerData::Redis(RedisKeyspace::new()),
                (Family::Cassandra, _) => {
                    unreachable!("no lock of this simulator sends Cassandra's commands (ServedBy)")
                }
            };
            nodes.push(ServerNode {
                node: server,
                data: Arc::new(Mutex::new(data)),
                clock: SimClock::new(scenario.server_clock(server), start),
                slow: scenario
                    .slow
                    .iter()
                    .filter(|(s, _)| *s == server)
                    .map(|(_, slow)| *slow)
                    .collect(),
                start,
                replication: replication.clone(),
                pubsub: pubsub.clone(),
                fair: fair.clone(),
            });
        }
        if replication.is_some() {
            debug_assert_eq!(logical, 1, "only a single Redis server has a replica");
            let primary = nodes[0].clone();
            nodes.push(ServerNode {
                node: 1,
                // The replica's own clock: the scenario's clock of "server 1".
                clock: SimClock::new(scenario.server_clock(1), start),
                ..primary
            });
        }
        let mut node_ids = Vec::new();
        for server in &nodes {
            let server = server.clone();
            let id = self
                .handle
                .create_node()
                .name(format!("s{}", server.node))
                .ip(server_addr(server.node).ip())
                .init(move || server.clone().serve())
                .build()
                .id();
            node_ids.push(id);
        }
        let servers = Servers {
            node_ids,
            nodes,
            replication,
        };
        (servers, pubsub)
    }

    /// Redis pub/sub, where the lock's waiters sleep until notified (Redisson). The recorder is
    /// held weakly: the servers that hold the pub/sub are in the recorder's probe.
    fn pubsub(&self) -> Option<Arc<PubSub>> {
        let scenario = &self.scenario;
        (scenario.lock.wakeup() != Wakeup::None).then(|| {
            let weak = Arc::downgrade(&self.recorder);
            let watches = scenario.lock.wakeup() == Wakeup::Watch;
            Arc::new(PubSub::new(
                scenario.lost_message_ppm,
                Duration::from_millis(scenario.message_delay_ms),
                Duration::from_millis(scenario.request_timeout_ms),
                Box::new(move |to: usize, lost: bool| {
                    if let Some(recorder) = weak.upgrade() {
                        if watches {
                            recorder.record("watches", FamilyWhat::Watch { to, lost });
                        } else {
                            recorder.record("pubsub", FamilyWhat::UnlockMessage { to, lost });
                        }
                    }
                }),
            ))
        })
    }

    fn family_net(&self, pubsub: Option<Arc<PubSub>>) -> FamilyNet {
        let scenario = &self.scenario;
        FamilyNet {
            start: self.start,
            slots: (0..scenario.lock.servers()).map(ServerSlot::new).collect(),
            cuts: scenario.cuts.clone(),
            request_timeout: Duration::from_millis(scenario.request_timeout_ms),
            lost_request_ppm: scenario.lost_request_ppm,
            lost_reply_ppm: scenario.lost_reply_ppm,
            pubsub,
        }
    }

    fn start_resource(&self) -> NodeId {
        let resource_recorder = Arc::clone(&self.recorder);
        self.handle
            .create_node()
            .name("resource")
            .ip(resource_addr().ip())
            .init(move || serve_resource(Arc::clone(&resource_recorder)))
            .build()
            .id()
    }

    /// One node per client, each running [`client_node`]; their ids in client order.
    fn start_clients(
        &self,
        net: &Arc<FamilyNet>,
        client_clocks: &[SimClock],
        pauses: &PauseRequests,
        done: &Arc<AtomicUsize>,
        seed: u64,
    ) -> Vec<NodeId> {
        let mut ids = Vec::new();
        for (index, clock) in client_clocks.iter().enumerate() {
            let scenario = Arc::clone(&self.scenario);
            let recorder = Arc::clone(&self.recorder);
            let net = Arc::clone(net);
            let done = Arc::clone(done);
            let clock = clock.clone();
            let pauses = pauses.clone();
            let client = self
                .handle
                .create_node()
                .name(format!("c{index}"))
                .ip(client_ip(index))
                .init(move || {
                    let ctx = ClientNode {
                        index,
                        scenario: Arc::clone(&scenario),
                        recorder: Arc::clone(&recorder),
                        clock: clock.clone(),
                        pauses: pauses.clone(),
                    };
                    client_node(ctx, Arc::clone(&net), seed, Arc::clone(&done))
                })
                .build();
            ids.push(client.id());
        }
        ids
    }

    /// The fault tasks: the whole-process pauses' supervisor where a scenario has such a
    /// pause (so that the others run as they always ran), then one task per planned fault.
    fn start_faults(
        &self,
        net: &Arc<FamilyNet>,
        servers: &Arc<Servers>,
        mut pause_requests: mpsc::UnboundedReceiver<(usize, u64, oneshot::Sender<()>)>,
        client_nodes: Vec<NodeId>,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let mut fault_tasks = Vec::new();
        // Whole-process pauses: the supervisor pauses the client's node and resumes it.
        if self.scenario.pauses.iter().any(|pause| pause.whole_process) {
            let pauser = self.handle.clone();
            fault_tasks.push(tokio::spawn(async move {
                while let Some((client, ms, resumed)) = pause_requests.recv().await {
                    let node: NodeId = client_nodes[client];
                    pauser.pause(node);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    pauser.resume(node);
                    let _ = resumed.send(());
                }
            }));
        }
        for fault in self.scenario.faults.iter().copied() {
            let recorder = Arc::clone(&self.recorder);
            let net = Arc::clone(net);
            let servers = Arc::clone(servers);
            fault_tasks.push(tokio::spawn(
                async move { inject(fault, &recorder, &net, &servers).await },
            ));
        }
        fault_tasks
    }

    /// Wait for the clients, up to the bound.
    async fn wait_for_clients(&self, done: &AtomicUsize) {
        let poll = Duration::from_millis(10);
        let polls = self.scenario.bound_ms / 10 + 1;
        for _ in 0..polls {
            if done.load(Ordering::SeqCst) == self.scenario.clients {
                break;
            }
            tokio::time::sleep(poll).await;
        }
    }
}

/// What a client's node starts from (each start of the node gets its own copy).
struct ClientNode {
    index: usize,
    scenario: Arc<FamilyScenario>,
    recorder: Arc<Recorder>,
    clock: SimClock,
    pauses: PauseRequests,
}

/// A client's node: its endpoints (and, where the servers send unlock messages, the inbox
/// that hands them to its `Channels`), then [`client_main`].
async fn client_node(node: ClientNode, net: Arc<FamilyNet>, seed: u64, done: Arc<AtomicUsize>) {
    let ClientNode {
        index,
        scenario,
        recorder,
        clock,
        pauses,
    } = node;
    let endpoint = Endpoint::bind(SocketAddr::new(client_ip(index), 0))
        .await
        .expect("client address free");
    // Where the server's unlock messages arrive (kept for the client's life).
    let mut inbox = None;
    let channels = if net.pubsub.is_some() {
        let channels = Arc::new(Channels::new());
        let receiver = Endpoint::bind(notify_addr(index))
            .await
            .expect("client notification address free");
        let deliver = Arc::clone(&channels);
        receiver.add_rpc_handler(move |UnlockMessage { channel }| {
            deliver.publish(&channel);
            std::future::ready(())
        });
        inbox = Some(receiver);
        Some(channels)
    } else {
        None
    };
    let ctx = ClientCtx {
        index,
        node: format!("c{index}"),
        scenario,
        clock,
        endpoint,
        recorder,
        channels,
        pauses,
    };
    client_main(ctx, net, seed, done).await;
    drop(inbox);
}

/// The fair lock's server-side records: each lock() call's first acquire to reach a server,
/// each grant, each waiter the scripts dropped (recorded on the applying node, `s0` or `s1`).
fn fair_observer(recorder: &Arc<Recorder>) -> Arc<FairObserver> {
    let weak = Arc::downgrade(recorder);
    let asked: Mutex<std::collections::BTreeSet<String>> = Mutex::new(Default::default());
    let granted: Mutex<std::collections::BTreeSet<String>> = Mutex::new(Default::default());
    Arc::new(Box::new(move |step: FairStep| {
        let Some(recorder) = weak.upgrade() else {
            return;
        };
        let node = format!("s{}", step.node);
        for owner in &step.dropped {
            let script = match step.script {
                FairScript::Acquire => "acquire",
                FairScript::Release => "release",
                FairScript::GiveUp => "give-up",
            };
            recorder.record(
                &node,
                FamilyWhat::FairDropped {
                    owner: owner.clone(),
                    by: step.owner.clone(),
                    script,
                },
            );
        }
        if step.script == FairScript::Acquire && lock(&asked).insert(step.owner.clone()) {
            recorder.record(
                &node,
                FamilyWhat::FairAsked {
                    owner: step.owner.clone(),
                },
            );
        }
        if step.granted && lock(&granted).insert(step.owner.clone()) {
            recorder.record(&node, FamilyWhat::FairGranted { owner: step.owner });
        }
    }))
}

/// Every live key on every logical server now, by the serving node's clock.
fn left_keys(servers: &Servers, net: &FamilyNet) -> Vec<LeftKey> {
    let mut left = Vec::new();
    for (server, slot) in net.slots.iter().enumerate() {
        let node = &servers.nodes[slot.node()];
        let now_ms = node.clock.now_us() / 1000;
        let data = lock(&node.data);
        let keyspace = match &*data {
            ServerData::Redis(keyspace) => Some(keyspace),
            ServerData::Pair(pair) => Some(pair.primary()),
            ServerData::Memcached(items) => {
                for (key, item) in items.live_items(now_ms) {
                    left.push(LeftKey {
                        server,
                        key: key.to_owned(),
                        token: item.value.clone(),
                    });
                }
                None
            }
            // Curator's nodes under the lock's directory, each with its czxid (the token).
            ServerData::ZooKeeper { tree, .. } => {
                let directory = cassalock::algo::zookeeper::curator_mutex::directory_of(KEY);
                for (path, node) in tree.nodes() {
                    if path.rsplit_once('/').is_some_and(|(parent, _)| parent == directory) {
                        left.push(LeftKey {
                            server,
                            key: path.to_owned(),
                            token: format!("{:020}", node.czxid),
                        });
                    }
                }
                None
            }
            // etcd's keys under the lock's prefix whose lease is live, each with its create
            // revision (the token).
            ServerData::Etcd(EtcdServerState { keyspace, .. }) => {
                let prefix = cassalock::algo::etcd::mutex::prefix_of(KEY);
                for kv in keyspace.key_values().filter(|kv| kv.key.starts_with(&prefix)) {
                    let live = keyspace
                        .lease(kv.lease)
                        .is_some_and(|lease| !lease.is_expired_at(now_ms));
                    if live {
                        left.push(LeftKey {
                            server,
                            key: kv.key.clone(),
                            token: format!("{:020}", kv.create_revision),
                        });
                    }
                }
                None
            }
        };
        for (key, entry) in keyspace.into_iter().flat_map(|keyspace| keyspace.live_entries(now_ms)) {
            match &entry.value {
                RedisValue::Text(token) => left.push(LeftKey {
                    server,
                    key: key.to_owned(),
                    token: token.clone(),
                }),
                // Redisson's hash: its owners (one, with a count above 0, as the scripts
                // leave it).
                RedisValue::Hash(owners) => {
                    for (owner, _) in owners.iter().filter(|(_, count)| **count > 0) {
                        left.push(LeftKey {
                            server,
                            key: key.to_owned(),
                            token: owner.clone(),
                        });
                    }
                }
                // The fair lock's waiters and their deadlines: a queue left behind is
                // reported as a key of its own, its waiters as its tokens.
                RedisValue::List(waiters) => {
                    for waiter in waiters {
                        left.push(LeftKey {
                            server,
                            key: key.to_owned(),
                            token: waiter.clone(),
                        });
                    }
                }
                RedisValue::SortedSet(_) => {}
            }
        }
    }
    left
}
