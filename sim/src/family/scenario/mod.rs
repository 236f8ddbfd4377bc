//! The named scenarios of the family simulator. Each states the premise of the lock that its
//! fault breaks (or that no fault breaks: the contention scenarios are the controls), and the
//! claim a sweep is expected to find violated ([`FamilyScenario::expect_violated`]; the tests
//! and docs/simulator.md pin the seeds).
//!
//! Every scenario is a function of the seed: what varies with it (the number of clients in the
//! contention scenarios, a client's think times, message latencies, Redlock's retry delays) is
//! drawn from the seed, by `rand_chacha` here and by madsim's generator during the run.
//!
//! The builders live in one submodule per lock (`set_nx`, `redlock`, `memcached`, `redisson`,
//! `redisson_fair`, `zookeeper`, `etcd`); the table of them, [`SCENARIOS`], and the faults any
//! lock can be run under, [`fault_scenarios`], are here.

mod etcd;
mod memcached;
mod redisson;
mod redisson_fair;
mod redlock;
mod set_nx;
mod zookeeper;

use cassalock::algo::redis::RedisLockConfig;
use cassalock::registry::Family;
use cassalock::store::redis_keyspace::Persistence;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use self::etcd::{
    etcd_clock_jump, etcd_contention, etcd_lost, etcd_pause, etcd_restart, etcd_shared_session_10756,
    etcd_waiter_expiry, etcd_waiter_expiry_11456,
};
use self::memcached::{memcached_contention, memcached_lost, memcached_pause};
use self::redisson::{
    redisson_contention, redisson_failed_renewal, redisson_failed_renewal_775, redisson_failover,
    redisson_lost_messages, redisson_pause,
};
use self::redisson_fair::{
    redisson_fair_barging, redisson_fair_contention, redisson_fair_failover, redisson_fair_long_contention,
    redisson_fair_lost_messages, redisson_fair_pause,
};
use self::redlock::{
    redlock_clock_jump, redlock_contention, redlock_gc_pause, redlock_lost, redlock_restart_delayed,
    redlock_restart_now, redlock_retry, redlock_retry_mutant, redlock_slow_extend, redlock_slow_extend_mutant,
};
use self::set_nx::{
    set_nx_clock_drift, set_nx_contention, set_nx_failover, set_nx_lost, set_nx_restart_fsync, set_nx_restart_none,
};
use self::zookeeper::{
    zookeeper_clock_jump, zookeeper_contention, zookeeper_lingering_session, zookeeper_lingering_session_604,
    zookeeper_lost, zookeeper_missed_watch, zookeeper_missed_watch_recheck, zookeeper_pause, zookeeper_restart,
};
use super::net::{Cut, Slow};
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

    fn renamed(self, name: &'static str, premise: &'static str) -> Self {
        FamilyScenario { name, premise, ..self }
    }

    fn expecting(self, claim: &'static str) -> Self {
        FamilyScenario {
            expect_violated: Some(claim),
            ..self
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

    /// Settings the run cannot work with.
    pub fn check(&self) -> Result<(), ScenarioError> {
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return Err(ScenarioError::Clients(self.clients));
        }
        if self.lock.servers() > MAX_SERVERS {
            return Err(ScenarioError::Servers(self.lock.servers()));
        }
        self.lock.check().map_err(|error| ScenarioError::LockSettings {
            lock: self.lock.name(),
            why: error.to_string(),
        })?;
        Ok(())
    }
}

/// Most clients a run may have (client addresses are one byte).
pub const MAX_CLIENTS: usize = 64;

/// Most logical servers (a pair takes two nodes).
pub const MAX_SERVERS: usize = 15;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    #[error("no scenario named {name:?}; the scenarios are: {}", names().join(", "))]
    Unknown { name: String },
    #[error("{0} clients: give 1 to {MAX_CLIENTS}")]
    Clients(usize),
    #[error("{0} servers: give 1 to {MAX_SERVERS}")]
    Servers(usize),
    #[error("lock {lock}: {why}")]
    LockSettings { lock: &'static str, why: String },
}

/// A named scenario: its name, a line of help, its builder.
pub struct Named {
    pub name: &'static str,
    pub help: &'static str,
    pub build: fn(u64) -> FamilyScenario,
}

/// Every scenario, in the order the CLI lists them.
pub const SCENARIOS: &[Named] = &[
    Named {
        name: "set-nx-contention",
        help: "5..=32 clients, one Redis, no faults (control)",
        build: set_nx_contention,
    },
    Named {
        name: "set-nx-lost-messages",
        help: "8 clients, one Redis, 5% of requests and 5% of replies lost (control)",
        build: set_nx_lost,
    },
    Named {
        name: "set-nx-clock-drift",
        help: "the Redis server's clock runs 5% fast, beyond the lock's 1% drift margin",
        build: set_nx_clock_drift,
    },
    Named {
        name: "set-nx-failover-after-acquire",
        help: "the primary fails over right after a client acquired, before replication",
        build: set_nx_failover,
    },
    Named {
        name: "set-nx-restart-no-persistence",
        help: "the Redis server restarts empty right after a client acquired",
        build: set_nx_restart_none,
    },
    Named {
        name: "set-nx-restart-persistence",
        help: "the same restart with appendfsync always (control)",
        build: set_nx_restart_fsync,
    },
    Named {
        name: "redlock-contention",
        help: "5 clients, 5 masters, no faults (control)",
        build: redlock_contention,
    },
    Named {
        name: "redlock-lost-messages",
        help: "5 clients, 5 masters, 5% of requests and 5% of replies lost (finds a release said Released while a majority kept the key)",
        build: redlock_lost,
    },
    Named {
        name: "redlock-clock-jump",
        help: "one master of the holder's majority jumps forward by the TTL",
        build: redlock_clock_jump,
    },
    Named {
        name: "redlock-gc-pause",
        help: "the holder pauses longer than the TTL between its check and its write",
        build: redlock_gc_pause,
    },
    Named {
        name: "redlock-restart-no-fsync",
        help: "a master of the holder's majority restarts empty at once",
        build: redlock_restart_now,
    },
    Named {
        name: "redlock-restart-delayed",
        help: "the same restart, delayed by the TTL (Kleppmann's fix; control)",
        build: redlock_restart_delayed,
    },
    Named {
        name: "redlock-slow-extend",
        help: "masters slow during the holder's extension (control for go-redsync)",
        build: redlock_slow_extend,
    },
    Named {
        name: "redlock-slow-extend-go-redsync",
        help: "the same with go-redsync's extend_ignores_validity",
        build: redlock_slow_extend_mutant,
    },
    Named {
        name: "redlock-retry-after-drop",
        help: "3 of 5 masters drop the first second's requests (control for node-redlock)",
        build: redlock_retry,
    },
    Named {
        name: "redlock-retry-after-drop-node-redlock",
        help: "the same with node-redlock's validity_from_first_attempt",
        build: redlock_retry_mutant,
    },
    Named {
        name: "memcached-contention",
        help: "5..=32 clients, one Memcached, no faults (control)",
        build: memcached_contention,
    },
    Named {
        name: "memcached-lost-messages",
        help: "8 clients, one Memcached, 5% of requests and 5% of replies lost (control)",
        build: memcached_lost,
    },
    Named {
        name: "memcached-pause",
        help: "the holder pauses longer than the TTL between its check and its write",
        build: memcached_pause,
    },
    Named {
        name: "redisson-contention",
        help: "5..=32 clients, Redisson's RLock with its watchdog and unlock messages, no faults (control)",
        build: redisson_contention,
    },
    Named {
        name: "redisson-lost-unlock-messages",
        help: "5 clients, every unlock message lost: waiters sleep out the holder's TTL (control; the wait is reported)",
        build: redisson_lost_messages,
    },
    Named {
        name: "redisson-failover-during-renewal",
        help: "the primary dies with the holder's first renewal in flight, before the replica has the key",
        build: redisson_failover,
    },
    Named {
        name: "redisson-pause",
        help: "the holder's whole process (its watchdog too) stops longer than the watchdog timeout",
        build: redisson_pause,
    },
    Named {
        name: "redisson-failed-renewal",
        help: "the holder's first renewal is lost, the network recovers (control for redisson/redisson#775)",
        build: redisson_failed_renewal,
    },
    Named {
        name: "redisson-failed-renewal-775",
        help: "the same with redisson/redisson#775's watchdog, which is not rescheduled after the failure",
        build: redisson_failed_renewal_775,
    },
    Named {
        name: "redisson-fair-contention",
        help: "5..=32 clients, Redisson's fair lock (queue, watchdog, per-waiter unlock messages), no faults (control; F-order, F-drop judged)",
        build: redisson_fair_contention,
    },
    Named {
        name: "redisson-fair-lost-unlock-messages",
        help: "5 clients on the fair lock, every unlock message lost: waiters wake at their deadline and their own acquire drops them as stale (F-drop; the wait is reported)",
        build: redisson_fair_lost_messages,
    },
    Named {
        name: "redisson-fair-pause",
        help: "the fair lock's holder's whole process stops longer than the watchdog timeout",
        build: redisson_fair_pause,
    },
    Named {
        name: "redisson-fair-failover-during-renewal",
        help: "the fair lock's primary dies with the holder's first renewal in flight, before the replica has the key",
        build: redisson_fair_failover,
    },
    Named {
        name: "redisson-fair-barging",
        help: "the fair lock with the planted fair_acquire_ignores_the_queue mutant (the RLock's acquire): caught by F-order",
        build: redisson_fair_barging,
    },
    Named {
        name: "redisson-fair-long-contention",
        help: "5 clients holding 300 ms each, 10 times, on the fair lock: unbroken contention longer than a lease plus a threadWaitTime drops the head of the queue as stale (F-drop)",
        build: redisson_fair_long_contention,
    },
    Named {
        name: "zookeeper-contention",
        help: "5..=32 clients, Curator's lock on one ZooKeeper server, watches delivered, no faults (control)",
        build: zookeeper_contention,
    },
    Named {
        name: "zookeeper-lost-messages",
        help: "8 clients, 5% of requests and 5% of replies lost (heartbeats too) (control)",
        build: zookeeper_lost,
    },
    Named {
        name: "zookeeper-session-expiry-pause",
        help: "the holder's whole process stops past its session timeout: its node goes with the session while it still believes",
        build: zookeeper_pause,
    },
    Named {
        name: "zookeeper-clock-jump",
        help: "the server's clock jumps forward by the session timeout while a client holds",
        build: zookeeper_clock_jump,
    },
    Named {
        name: "zookeeper-missed-watch",
        help: "every watch message lost, Curator's wait on the watch alone: waiters sleep until the run's bound (T2 bounded)",
        build: zookeeper_missed_watch,
    },
    Named {
        name: "zookeeper-missed-watch-recheck",
        help: "the same with our recheck every 500 ms (control)",
        build: zookeeper_missed_watch_recheck,
    },
    Named {
        name: "zookeeper-expired-session-lingers",
        help: "a waiter cut off past its session timeout; the server deletes its node 3 s after refusing the session (control)",
        build: zookeeper_lingering_session,
    },
    Named {
        name: "zookeeper-expired-session-lingers-604",
        help: "the same with Curator's CURATOR-604: the acquisition lists again on its new session and holds the old node",
        build: zookeeper_lingering_session_604,
    },
    Named {
        name: "zookeeper-server-restart",
        help: "the server restarts (its data on disk) for 300 ms right after a client acquired (control)",
        build: zookeeper_restart,
    },
    Named {
        name: "etcd-contention",
        help: "5..=32 clients, etcd's mutex on one etcd server, no faults (control)",
        build: etcd_contention,
    },
    Named {
        name: "etcd-lost-messages",
        help: "8 clients, 5% of requests and 5% of replies lost (keep-alives too) (control)",
        build: etcd_lost,
    },
    Named {
        name: "etcd-pause",
        help: "the holder's whole process stops past its lease between its check and its write (the revision fences the write)",
        build: etcd_pause,
    },
    Named {
        name: "etcd-clock-jump",
        help: "the server's clock jumps forward by the lease TTL while a client holds",
        build: etcd_clock_jump,
    },
    Named {
        name: "etcd-lease-expires-while-waiting",
        help: "a waiter's lease expires (server clock jump) before its late watch message arrives (control for etcd 11456)",
        build: etcd_waiter_expiry,
    },
    Named {
        name: "etcd-lease-expires-while-waiting-11456",
        help: "the same with etcd 11456's waiter, which does not check its own key after the wait",
        build: etcd_waiter_expiry_11456,
    },
    Named {
        name: "etcd-shared-session-10756",
        help: "3 clients locking through one shared session, etcd-io/etcd#10756's misuse: the same key for all, each holds (control: etcd-contention)",
        build: etcd_shared_session_10756,
    },
    Named {
        name: "etcd-server-restart",
        help: "the server restarts (its data on disk) for 300 ms right after a client acquired (control)",
        build: etcd_restart,
    },
];

/// The command that replays one seed of scenario `name` with its trace; `flags` are the
/// command line's knobs, each with a leading space.
pub fn replay_command(name: &str, seed: u64, flags: &str) -> String {
    format!("cassalock replay --scenario {name} --seed {seed}{flags}")
}

pub fn names() -> Vec<&'static str> {
    SCENARIOS.iter().map(|named| named.name).collect()
}

/// The scenario `name` on `seed`.
pub fn build(name: &str, seed: u64) -> Result<FamilyScenario, ScenarioError> {
    let named = SCENARIOS
        .iter()
        .find(|named| named.name == name)
        .ok_or_else(|| ScenarioError::Unknown { name: name.to_owned() })?;
    let scenario = (named.build)(seed);
    debug_assert_eq!(scenario.name, named.name);
    scenario.check()?;
    Ok(scenario)
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
    ChaCha8Rng::seed_from_u64(seed).gen_range(5..=32)
}

/// 5% of requests lost before they apply, 5% of replies lost after: the machines' handling of
/// a request that may have applied (retry, check the key's value) is what is tested.
const LOSS_PPM: u32 = 50_000;

fn restart_for_300_ms() -> Vec<ServerFault> {
    vec![ServerFault {
        trigger: Trigger::FirstAcquired { delay_ms: 0 },
        action: ServerAction::Restart {
            server: 0,
            persistence: Persistence::EveryWrite,
            down_ms: 300,
        },
    }]
}

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
