//! The named scenarios of the family simulator. Each states the premise of the lock that its
//! fault breaks (or that no fault breaks: the contention scenarios are the controls), and the
//! claim a sweep is expected to find violated ([`FamilyScenario::expect_violated`]; the tests
//! and docs/simulator.md pin the seeds).
//!
//! Every scenario is a function of the seed: what varies with it (the number of clients in the
//! contention scenarios, a client's think times, message latencies, Redlock's retry delays) is
//! drawn from the seed, by `rand_chacha` here and by madsim's generator during the run.
//!
//! A lock's scenarios are data: a TOML file per lock beside this one (`set_nx.toml`,
//! `redlock.toml`, ...; the language is `scenario_file.rs`'s), and a Rust file of the same
//! name that says its lock (`LOCK`) and builds it from a scenario's `settings` (`lock`). The
//! build script finds the files, so a lock's scenarios are its two files and nothing else
//! here; [`scenarios`] lists them all in the registry's order, and the faults any lock can be
//! run under, [`fault_scenarios`], are here.

use cassalock::algo::redis::RedisLockConfig;
use cassalock::registry::{Family, Lock, LOCKS};
use cassalock::store::redis_keyspace::Persistence;
use std::sync::OnceLock;

use super::net::{Cut, Slow};
pub use super::scenario_file::Named;
use super::scenario_file::{clients_from_seed, load, lock_of, LockBuilder, ScenarioFileError};
use super::sim_lock::LockKind;
use crate::clock::ClockSpec;

/// When a server fault fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// At this global time (ms since the run began).
    AtMs(u64),
    /// `delay_ms` after the run's first `Acquired` event.
    FirstAcquired { delay_ms: u64 },
    /// `delay_ms` after the run's first watchdog renewal was sent (Redisson).
    FirstRenewal { delay_ms: u64 },
}

/// What a server fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerAction {
    /// The pair's primary dies; the replica is promoted with what it had received.
    Failover,
    /// Logical server `server` crashes and comes back `down_ms` later with what `persistence`
    /// kept.
    Restart {
        server: usize,
        persistence: Persistence,
        down_ms: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerFault {
    pub trigger: Trigger,
    pub action: ServerAction,
}

/// Client `client` stops for `pause_ms` (a GC pause) in its acquisition number `acquisition`
/// (0-based), between the validity check and the write to the resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    pub client: usize,
    pub acquisition: u32,
    pub pause_ms: u64,
    /// The whole client node stops (madsim's pause: every task, the watchdog's too, while its
    /// incoming messages queue), not only the workload's task.
    pub whole_process: bool,
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct FamilyScenario {
    pub name: &'static str,
    /// The premise the scenario's fault breaks, in a sentence.
    pub premise: &'static str,
    pub lock: LockKind,
    pub clients: usize,
    /// Acquisitions each client makes (each one a `lock` call, retried after it gave up).
    pub acquisitions: u32,
    /// `lock` calls per acquisition before the client stops trying (a limit, not a fault).
    pub max_tries: u32,
    /// Hold time after the last write of an acquisition, ms.
    pub hold_ms: u64,
    /// Hold time after a write that an extension follows, ms (`None`: `hold_ms`).
    pub extend_after_ms: Option<u64>,
    /// Extensions per acquisition (each followed by a validity check, a write and a hold).
    pub extends: u32,
    /// A client sleeps `0..=think_max_ms` between acquisitions (drawn by madsim).
    pub think_max_ms: u64,
    /// When each client starts, global ms (missing: 0).
    pub start_ms: Vec<u64>,
    /// Each logical server's clock (missing: exact). A replicated SET NX server's replica
    /// is server 1 here.
    pub server_clocks: Vec<ClockSpec>,
    /// Each client's clock (missing: exact).
    pub client_clocks: Vec<ClockSpec>,
    /// Per request, parts per million, lost before it applies / applied with its reply lost.
    pub lost_request_ppm: u32,
    pub lost_reply_ppm: u32,
    /// Per unlock message and subscriber, parts per million: the message is lost (Redisson).
    pub lost_message_ppm: u32,
    /// An unlock message reaches a subscriber this much later than the network's latency (ms).
    pub message_delay_ms: u64,
    /// Replication lag of the SET NX or Redisson server's replica (`None`: a single server).
    pub replication_lag_ms: Option<u64>,
    /// How long after the ZooKeeper server refuses an expired session its close (the deleted
    /// ephemeral nodes, the fired watches) applies, ms (0: at once).
    pub zk_close_lag_ms: u64,
    pub slow: Vec<(usize, Slow)>,
    pub cuts: Vec<Cut>,
    pub faults: Vec<ServerFault>,
    pub pauses: Vec<Pause>,
    pub request_timeout_ms: u64,
    /// The run stops here (simulated ms); clients not done by then make T2 "bounded".
    pub bound_ms: u64,
    /// Judge T2-free (a `lock` call gave up on a lock nobody else held): only where one client
    /// runs, so that no other client can have kept the lock (or split Redlock's votes).
    pub check_free_progress: bool,
    /// The claim this scenario exists to violate (`None`: a control, no violation expected).
    pub expect_violated: Option<&'static str>,
}

impl FamilyScenario {
    /// A scenario with the defaults every named one starts from: 2 clients, one acquisition
    /// each, a 300 ms hold, no fault, a 200 ms request timeout, a 60 s bound.
    pub fn base(name: &'static str, premise: &'static str, lock: LockKind) -> Self {
        FamilyScenario {
            name,
            premise,
            lock,
            clients: 2,
            acquisitions: 1,
            max_tries: 200,
            hold_ms: 300,
            extend_after_ms: None,
            extends: 0,
            think_max_ms: 0,
            start_ms: Vec::new(),
            server_clocks: Vec::new(),
            client_clocks: Vec::new(),
            lost_request_ppm: 0,
            lost_reply_ppm: 0,
            lost_message_ppm: 0,
            message_delay_ms: 0,
            replication_lag_ms: None,
            zk_close_lag_ms: 0,
            slow: Vec::new(),
            cuts: Vec::new(),
            faults: Vec::new(),
            pauses: Vec::new(),
            request_timeout_ms: 200,
            bound_ms: 60_000,
            check_free_progress: false,
            expect_violated: None,
        }
    }

    /// Does the scenario inject a fault that a run records when it happens (a server fault, a
    /// pause, a lost unlock or watch message)? The rest (lost requests, cuts, clock offsets and
    /// jumps) are configured: in effect in every run.
    pub fn injects_faults(&self) -> bool {
        !self.faults.is_empty() || !self.pauses.is_empty() || self.lost_message_ppm > 0
    }

    pub fn start_ms(&self, client: usize) -> u64 {
        self.start_ms.get(client).copied().unwrap_or(0)
    }

    pub fn server_clock(&self, server: usize) -> ClockSpec {
        self.server_clocks.get(server).cloned().unwrap_or_default()
    }

    pub fn client_clock(&self, client: usize) -> ClockSpec {
        self.client_clocks.get(client).cloned().unwrap_or_default()
    }

    /// Settings the run cannot work with, or would run without saying so: a fault on a client
    /// or an acquisition the run does not have would never fire.
    pub fn check(&self) -> Result<(), ScenarioError> {
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return Err(ScenarioError::Clients(self.clients));
        }
        if self.acquisitions == 0 || self.acquisitions > MAX_ACQUISITIONS {
            return Err(ScenarioError::Acquisitions(self.acquisitions));
        }
        if self.check_free_progress && self.clients != 1 {
            return Err(ScenarioError::FreeProgressNeedsOneClient(self.clients));
        }
        let exact = ClockSpec::default();
        let named_clients = self
            .pauses
            .iter()
            .map(|pause| pause.client)
            .chain(self.cuts.iter().filter_map(|cut| cut.client))
            .chain(
                self.client_clocks
                    .iter()
                    .enumerate()
                    .filter(|(_, clock)| **clock != exact)
                    .map(|(client, _)| client),
            );
        if let Some(client) = named_clients.max().filter(|client| *client >= self.clients) {
            return Err(ScenarioError::FaultOnMissingClient {
                client,
                clients: self.clients,
            });
        }
        if let Some(pause) = self.pauses.iter().find(|pause| pause.acquisition >= self.acquisitions) {
            return Err(ScenarioError::PauseAfterLastAcquisition {
                acquisition: pause.acquisition,
                acquisitions: self.acquisitions,
            });
        }
        if self.lock.servers() > MAX_SERVERS {
            return Err(ScenarioError::Servers(self.lock.servers()));
        }
        self.check_limits()?;
        self.check_servers_named()?;
        self.lock.check().map_err(|error| ScenarioError::LockSettings {
            lock: self.lock.name(),
            why: error.to_string(),
        })?;
        Ok(())
    }
}

impl FamilyScenario {
    /// Every count, time and rate within its range: a run bounded by an hour of simulated time,
    /// rates in parts per million, clocks that stay within a day of true time.
    fn check_limits(&self) -> Result<(), ScenarioError> {
        let out = |key: &'static str, value: String, range: &'static str| {
            Err(ScenarioError::OutOfRange { key, value, range })
        };
        if !(1..=MAX_SCENARIO_MS).contains(&self.bound_ms) {
            return out(
                "bound_ms",
                self.bound_ms.to_string(),
                "1 to 3600000 (one simulated hour)",
            );
        }
        if !(1..=MAX_SCENARIO_MS).contains(&self.request_timeout_ms) {
            return out(
                "request_timeout_ms",
                self.request_timeout_ms.to_string(),
                "1 to 3600000",
            );
        }
        if !(1..=MAX_TRIES).contains(&self.max_tries) {
            return out("max_tries", self.max_tries.to_string(), "1 to 1000000");
        }
        if self.extends > MAX_ACQUISITIONS {
            return out("extends", self.extends.to_string(), "0 to 10000");
        }
        let times = [
            ("hold_ms", Some(self.hold_ms)),
            ("extend_after_ms", self.extend_after_ms),
            ("think_max_ms", Some(self.think_max_ms)),
            ("message_delay_ms", Some(self.message_delay_ms)),
            ("replication_lag_ms", self.replication_lag_ms),
            ("zk_close_lag_ms", Some(self.zk_close_lag_ms)),
        ]
        .into_iter()
        .filter_map(|(key, ms)| ms.map(|ms| (key, ms)))
        .chain(self.start_ms.iter().map(|ms| ("start_ms", *ms)))
        .chain(self.slow.iter().flat_map(|(_, slow)| {
            [
                ("slow.from_ms", slow.from_ms),
                ("slow.to_ms", slow.to_ms),
                ("slow.extra_ms", slow.extra_ms),
            ]
        }))
        .chain(self.cuts.iter().map(|cut| ("cuts.from_ms", cut.from_ms)))
        // A cut's end may be the run's end (absent in a file: u64::MAX).
        .chain(
            self.cuts
                .iter()
                .filter(|cut| cut.to_ms != u64::MAX)
                .map(|cut| ("cuts.to_ms", cut.to_ms)),
        )
        .chain(self.pauses.iter().map(|pause| ("pauses.pause_ms", pause.pause_ms)))
        .chain(self.faults.iter().flat_map(|fault| {
            let trigger = match fault.trigger {
                Trigger::AtMs(ms) => ("faults.at_ms", ms),
                Trigger::FirstAcquired { delay_ms } | Trigger::FirstRenewal { delay_ms } => {
                    ("faults.delay_ms", delay_ms)
                }
            };
            let down = match fault.action {
                ServerAction::Restart { down_ms, .. } => Some(("faults.down_ms", down_ms)),
                ServerAction::Failover => None,
            };
            std::iter::once(trigger).chain(down)
        }));
        for (key, ms) in times {
            if ms > MAX_SCENARIO_MS {
                return out(key, ms.to_string(), "0 to 3600000 (one simulated hour)");
            }
        }
        for (key, ppm) in [
            ("lost_request_ppm", self.lost_request_ppm),
            ("lost_reply_ppm", self.lost_reply_ppm),
            ("lost_message_ppm", self.lost_message_ppm),
        ] {
            if ppm > 1_000_000 {
                return out(key, ppm.to_string(), "0 to 1000000 (parts per million)");
            }
        }
        for clock in self.server_clocks.iter().chain(&self.client_clocks) {
            clock.check().map_err(ScenarioError::Clock)?;
        }
        Ok(())
    }

    /// Every server a cut, a slow window or a server fault names exists, a failover has a
    /// replica to promote (one failover a run), and a fault waiting for the first renewal has a
    /// renewal to wait for: a fault that could never fire is refused, not run without it.
    fn check_servers_named(&self) -> Result<(), ScenarioError> {
        let servers = self.lock.servers();
        let named = self
            .cuts
            .iter()
            .map(|cut| cut.server)
            .chain(self.slow.iter().map(|(server, _)| *server))
            .chain(self.faults.iter().filter_map(|fault| match fault.action {
                ServerAction::Restart { server, .. } => Some(server),
                ServerAction::Failover => None,
            }));
        if let Some(server) = named.max().filter(|server| *server >= servers) {
            return Err(ScenarioError::FaultOnMissingServer { server, servers });
        }
        let failovers = self
            .faults
            .iter()
            .filter(|fault| fault.action == ServerAction::Failover)
            .count();
        if failovers > 0 && (self.replication_lag_ms.is_none() || servers != 1) {
            return Err(ScenarioError::FailoverWithoutReplica);
        }
        if failovers > 1 {
            return Err(ScenarioError::SecondFailover);
        }
        let waits_for_renewal = self
            .faults
            .iter()
            .any(|fault| matches!(fault.trigger, Trigger::FirstRenewal { .. }));
        if waits_for_renewal && self.lock.renew_every_ms().is_none() {
            return Err(ScenarioError::NoRenewalToWaitFor { lock: self.lock.name() });
        }
        Ok(())
    }
}

/// The longest simulated time anything of a scenario may take: a run's bound, a hold, a
/// pause, a fault's time (one simulated hour, as `--bound-ms`).
pub const MAX_SCENARIO_MS: u64 = 3_600_000;

/// Most `lock` calls per acquisition.
pub const MAX_TRIES: u32 = 1_000_000;

/// Most clients a run may have (client addresses are one byte).
pub const MAX_CLIENTS: usize = 64;

/// Most logical servers (a pair takes two nodes).
pub const MAX_SERVERS: usize = 15;

/// Most acquisitions per client (as the row locks' scenarios).
pub const MAX_ACQUISITIONS: u32 = 10_000;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    #[error("no scenario named {name:?}; the scenarios are: {}", names().join(", "))]
    Unknown { name: String },
    #[error("{0} clients: give 1 to {MAX_CLIENTS}")]
    Clients(usize),
    #[error("{0} acquisitions per client: give 1 to {MAX_ACQUISITIONS}")]
    Acquisitions(u32),
    #[error("{0} clients: the scenario judges T2-free (a lock() that gives up on a lock nobody else could hold), which needs its one client")]
    FreeProgressNeedsOneClient(usize),
    #[error("a fault of the scenario (a pause, a cut or a clock) is on client {client}, but the run has {clients} client(s): give at least {}", client + 1)]
    FaultOnMissingClient { client: usize, clients: usize },
    #[error("a pause is in acquisition {acquisition} (0-based), but each client makes {acquisitions}: give at least {}", acquisition + 1)]
    PauseAfterLastAcquisition { acquisition: u32, acquisitions: u32 },
    #[error("{0} servers: give 1 to {MAX_SERVERS}")]
    Servers(usize),
    #[error("lock {lock}: {why}")]
    LockSettings { lock: &'static str, why: String },
    #[error("{key} = {value}: give {range}")]
    OutOfRange {
        key: &'static str,
        value: String,
        range: &'static str,
    },
    #[error("a clock of the scenario: {0}")]
    Clock(crate::clock::ClockSpecError),
    #[error("a cut, a slow window or a restart names server {server}, but the lock runs on {servers}: give 0 to {}", servers - 1)]
    FaultOnMissingServer { server: usize, servers: usize },
    #[error("a failover promotes a replica: give replication_lag_ms (a replica of the one server) with it")]
    FailoverWithoutReplica,
    #[error("two failovers: a run has one replica to promote")]
    SecondFailover,
    #[error("a fault waits for the first renewal, but {lock} does not renew in the background: give at_ms or after = \"first-acquired\"")]
    NoRenewalToWaitFor { lock: &'static str },
}

/// Where the property matrix files a scenario's verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InMatrix {
    /// Nowhere: a control of a planted bug, or a run the matrix does not need.
    No,
    /// A line of its lock's row, in this fault's column, with the line's label.
    Cell(MatrixColumn, &'static str),
    /// It plants a client's bug: a line of "Broken variants", with its label.
    ClientBug(&'static str),
}

/// The fault columns of the families' rows of the property matrix (in a scenario file:
/// `none`, `pause`, `store-failure`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MatrixColumn {
    None,
    Pause,
    StoreFailure,
    Restart,
    Failover,
    ServerClockJump,
    LostNotification,
    /// The holder cut off from its servers while it holds.
    Partition,
}

// `mod` lines for the files beside this one and `FILES`, each lock's scenario file.
include!(concat!(env!("OUT_DIR"), "/lock_scenarios.rs"));

/// Each lock's scenarios, loaded from its file once per process.
fn by_file() -> &'static [(Lock, Vec<Named>)] {
    static LOADED: OnceLock<Vec<(Lock, Vec<Named>)>> = OnceLock::new();
    LOADED.get_or_init(|| {
        FILES
            .iter()
            .map(
                |&(lock, build_lock, file, text)| match load(lock.name(), file, text, build_lock) {
                    Ok(named) => (lock, named),
                    // The files are part of the build and a unit test loads each: a defect of
                    // this program, not of its input.
                    Err(error) => panic!("a scenario file built into the simulator is broken: {error}"),
                },
            )
            .collect()
    })
}

/// The scenarios of a file read at run time (`sim --scenario-file`), with its path as given.
static FROM_FILE: OnceLock<(String, Vec<Named>)> = OnceLock::new();

/// Reads a scenario file of one of the locks with scenarios (its path as the command line gave
/// it, and its text) and adds its scenarios to the ones every lookup here sees, after the
/// built-in ones; their names, in the file's order. One file per process.
pub fn add_scenario_file(path: &str, text: &str) -> Result<Vec<&'static str>, ScenarioFileError> {
    if let Some((first, _)) = FROM_FILE.get() {
        return Err(ScenarioFileError::SecondFile {
            file: path.to_owned(),
            first: first.clone(),
        });
    }
    let locks = locks_with_scenarios().map(Lock::name).collect::<Vec<_>>().join(", ");
    let lock = lock_of(path, text, &locks)?;
    let Some(&(_, build_lock, ..)) = FILES.iter().find(|(file_lock, ..)| *file_lock == lock) else {
        return Err(ScenarioFileError::UnknownLock {
            file: path.to_owned(),
            found: lock.name().to_owned(),
            locks,
        });
    };
    let named = load(lock.name(), path, text, build_lock)?;
    if let Some(clash) = named.iter().find(|new| scenarios().any(|old| old.name == new.name)) {
        return Err(ScenarioFileError::BuiltInName {
            file: path.to_owned(),
            scenario: clash.name.to_owned(),
        });
    }
    let names = named.iter().map(|named| named.name).collect();
    FROM_FILE
        .set((path.to_owned(), named))
        .map_err(|(_, _)| ScenarioFileError::SecondFile {
            file: path.to_owned(),
            first: FROM_FILE.get().map(|(first, _)| first.clone()).unwrap_or_default(),
        })?;
    Ok(names)
}

/// The path of the scenario file read at run time, if one was.
pub fn scenario_file_read() -> Option<&'static str> {
    FROM_FILE.get().map(|(path, _)| path.as_str())
}

/// The file scenario `name` was read from at run time, if it was (the replay command names it).
pub fn file_of(name: &str) -> Option<&'static str> {
    let (path, named) = FROM_FILE.get()?;
    named.iter().any(|named| named.name == name).then_some(path.as_str())
}

/// Every scenario, in the order the CLI lists them: by lock in the registry's order, then in
/// the order its file lists them; then those of a file read at run time.
pub fn scenarios() -> impl Iterator<Item = &'static Named> + Clone {
    LOCKS
        .iter()
        .flat_map(|entry| scenarios_of(entry.lock))
        .chain(FROM_FILE.get().into_iter().flat_map(|(_, named)| named.iter()))
}

/// The built-in scenarios of `lock`, in the order its file lists them (none for a lock without
/// a file).
pub fn scenarios_of(lock: Lock) -> impl Iterator<Item = &'static Named> + Clone {
    by_file()
        .iter()
        .filter(move |(file_lock, _)| *file_lock == lock)
        .flat_map(|(_, scenarios)| scenarios.iter())
}

/// The locks that have a scenario file, in the registry's order.
pub fn locks_with_scenarios() -> impl Iterator<Item = Lock> {
    Lock::all().filter(|lock| FILES.iter().any(|(file_lock, ..)| file_lock == lock))
}

/// The command that replays one seed of scenario `name` with its trace; `flags` are the
/// command line's knobs, each with a leading space.
pub fn replay_command(name: &str, seed: u64, flags: &str) -> String {
    format!("cassalock replay --scenario {name} --seed {seed}{flags}")
}

pub fn names() -> Vec<&'static str> {
    scenarios().map(|named| named.name).collect()
}

/// The scenario `name` on `seed`.
pub fn build(name: &str, seed: u64) -> Result<FamilyScenario, ScenarioError> {
    let named = scenarios()
        .find(|named| named.name == name)
        .ok_or_else(|| ScenarioError::Unknown { name: name.to_owned() })?;
    let scenario = named.build(seed);
    debug_assert_eq!(scenario.name, named.name);
    scenario.check()?;
    Ok(scenario)
}

/// A scenario's `settings` for a lock on one Redis key with a time to live (SET NX, the
/// two-command recipe).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct OneKeySettings {
    /// The key's time to live.
    ttl_ms: u64,
    /// `lock` gives up after this long on the client's clock (absent: it waits for ever).
    #[serde(default)]
    max_wait_ms: Option<u64>,
}

/// Lock `L`, on one Redis key, from a scenario's `settings`; a waiter asks again every 20 ms.
fn one_redis_key_lock<L>(settings: toml::Table) -> Result<LockKind, toml::de::Error>
where
    L: cassalock::algo::family::FamilyLock<Config = RedisLockConfig>,
    super::sim_lock::Simulated<L>: super::sim_lock::SimLock,
{
    let OneKeySettings { ttl_ms, max_wait_ms } = toml::Value::Table(settings).try_into()?;
    let config = RedisLockConfig {
        max_wait_ms,
        ..redis(ttl_ms)
    };
    Ok(std::sync::Arc::new(super::sim_lock::Simulated::<L>::new(
        config, ttl_ms,
    )))
}

fn redis(ttl_ms: u64) -> RedisLockConfig {
    RedisLockConfig {
        ttl_ms,
        retry_every_ms: 20,
        max_wait_ms: None,
        extend_every_ms: None,
        ..RedisLockConfig::default()
    }
}

/// 5..=32 clients, from the seed.
fn contention_clients(seed: u64) -> usize {
    clients_from_seed(seed, 5..=32)
}

/// 5% of requests lost before they apply, 5% of replies lost after: the machines' handling of
/// a request that may have applied (retry, check the key's value) is what is tested.
const LOSS_PPM: u32 = 50_000;

/// The faults every lock on one server can be run under, for a lock the simulator does not
/// name (a user's own, [`Simulated`]): the contention control, lost requests and
/// replies, a holder paused past its lease, the server restarting without its keys (Redis and
/// Memcached; etcd keeps its data on disk), and the server's clock stepping forward by the
/// lease. None is expected to fail: each run's verdicts say what the lock kept.
///
/// [`Simulated`]: super::sim_lock::Simulated
pub fn fault_scenarios(lock: LockKind, seed: u64) -> Vec<FamilyScenario> {
    let ttl_ms = lock.ttl_ms();
    let keeps_keys_on_disk = matches!(lock.server(), Family::Etcd | Family::ZooKeeper);
    let mut scenarios = vec![
        FamilyScenario {
            clients: contention_clients(seed),
            acquisitions: 3,
            hold_ms: 20,
            think_max_ms: 50,
            ..FamilyScenario::base(
                "contention",
                "none broken: one server that keeps its keys and a clock that keeps pace",
                lock.clone(),
            )
        },
        FamilyScenario {
            clients: 8,
            acquisitions: 3,
            hold_ms: 20,
            think_max_ms: 50,
            lost_request_ppm: LOSS_PPM,
            lost_reply_ppm: LOSS_PPM,
            ..FamilyScenario::base(
                "lost-messages",
                "none broken: a request whose reply was lost (5% of requests, 5% of replies) may have applied, and the lock code must know it",
                lock.clone(),
            )
        },
        FamilyScenario {
            start_ms: vec![0, 50],
            pauses: vec![Pause {
                client: 0,
                acquisition: 0,
                pause_ms: ttl_ms.saturating_add(500),
                whole_process: false,
            }],
            ..FamilyScenario::base(
                "pause",
                "a holder is not paused between checking its validity and using the lock: here it stops for its lease and half a second more",
                lock.clone(),
            )
        },
        FamilyScenario {
            hold_ms: ttl_ms / 2,
            start_ms: vec![0, 100],
            server_clocks: vec![ClockSpec {
                jumps: vec![(200, i64::try_from(ttl_ms.saturating_mul(1000)).unwrap_or(i64::MAX))],
                ..ClockSpec::default()
            }],
            ..FamilyScenario::base(
                "server-clock-jump",
                "the server's clock keeps pace: here it steps forward by the lease while a client holds",
                lock.clone(),
            )
        },
    ];
    if !keeps_keys_on_disk {
        scenarios.push(FamilyScenario {
            clients: 5,
            faults: vec![ServerFault {
                trigger: Trigger::FirstAcquired { delay_ms: 0 },
                action: ServerAction::Restart {
                    server: 0,
                    persistence: Persistence::None,
                    down_ms: 5,
                },
            }],
            ..FamilyScenario::base(
                "server-restart",
                "the server keeps its keys across a restart: here it comes back empty right after a client acquired",
                lock,
            )
        });
    }
    scenarios
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scenario_file_loads_is_one_lock_s_and_runs_that_lock() {
        for (index, (lock, file, text, build_lock)) in FILES
            .iter()
            .map(|&(lock, build_lock, file, text)| (lock, file, text, build_lock))
            .enumerate()
        {
            assert!(
                FILES[..index].iter().all(|(other, ..)| *other != lock),
                "two scenario files say they are {}'s",
                lock.name()
            );
            let scenarios = load(lock.name(), file, text, build_lock).unwrap_or_else(|error| panic!("{error}"));
            for named in &scenarios {
                let scenario = named.build(0);
                assert_eq!(
                    scenario.lock.name(),
                    lock.name(),
                    "{} is in {}'s file but runs another lock",
                    named.name,
                    lock.name()
                );
                scenario
                    .check()
                    .unwrap_or_else(|error| panic!("{}: {error}", named.name));
            }
        }
        let mut names = names();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "two scenarios share a name");
        assert!(locks_with_scenarios().all(|lock| lock.family() != Family::Cassandra));
    }

    #[test]
    fn each_lock_s_wait_setting_reaches_its_config() {
        use super::super::scenario_file::Setting;
        let cases = [
            ("set-nx-contention", "settings.max_wait_ms=50", "max_wait_ms: Some(50)"),
            (
                "setnx-expire-contention",
                "settings.max_wait_ms=50",
                "max_wait_ms: Some(50)",
            ),
            (
                "memcached-contention",
                "settings.max_wait_ms=50",
                "max_wait_ms: Some(50)",
            ),
            ("redlock-contention", "settings.attempts=1", "attempts: 1"),
            ("redisson-contention", "settings.wait_ms=100", "wait_ms: Some(100)"),
            (
                "redisson-fair-contention",
                "settings.lease_ms=700",
                "lease_ms: Some(700)",
            ),
            ("etcd-contention", "settings.wait_ms=100", "wait_ms: Some(100)"),
            ("zookeeper-contention", "settings.wait_ms=100", "wait_ms: Some(100)"),
        ];
        for (name, text, expected) in cases {
            let named = scenarios().find(|named| named.name == name).expect(name);
            let setting: Setting = text.parse().expect("parses");
            let lock = format!("{:?}", named.with(&[setting]).expect(text).build(0).lock);
            assert!(lock.contains(expected), "{name} {text}: {lock}");
            assert!(
                !format!("{:?}", named.build(0).lock).contains(expected),
                "{name}: the default differs"
            );
        }
        let redisson = scenarios()
            .find(|named| named.name == "redisson-contention")
            .expect("listed");
        let leased = redisson
            .with(&["settings.lease_ms=700".parse().expect("parses")])
            .expect("a lease")
            .build(0);
        assert_eq!(leased.lock.ttl_ms(), 700, "the lease is the key's time to live");
        assert_eq!(leased.lock.renew_every_ms(), None, "a lease turns the watchdog off");
    }
}
