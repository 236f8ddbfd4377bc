//! The named scenarios of the family simulator. Each states the premise of the lock that its
//! fault breaks (or that no fault breaks: the contention scenarios are the controls), and the
//! claim a sweep is expected to find violated ([`FamilyScenario::expect_violated`]; the tests
//! and docs/simulator-families.md pin the seeds).
//!
//! Every scenario is a function of the seed: what varies with it (the number of clients in the
//! contention scenarios, a client's think times, message latencies, Redlock's retry delays) is
//! drawn from the seed, by `rand_chacha` here and by madsim's generator during the run.

use cassalock::algo::etcd::mutex::{EtcdMutants, EtcdMutexConfig};
use cassalock::algo::family::{EtcdLock, MemcachedLock, RedissonFairLock, RedissonLock, SetNxLock};
use cassalock::algo::memcached::MemcachedLockConfig;
use cassalock::algo::redis::redisson::{RedissonConfig, RedissonMutants};
use cassalock::algo::redis::redlock::{RedlockConfig, RedlockMutants};
use cassalock::algo::redis::RedisLockConfig;
use cassalock::algo::zookeeper::curator_mutex::{CuratorConfig, CuratorMutants};
use cassalock::registry::Family;
use cassalock::store::redis_keyspace::Persistence;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

use super::net::{Cut, CutMode, Slow};
use super::sim_lock::{LockKind, SimCurator, SimRedlock, Simulated, Wakeup};
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
        help: "the holder's first renewal is lost, the network recovers (control for Redisson issue 775)",
        build: redisson_failed_renewal,
    },
    Named {
        name: "redisson-failed-renewal-775",
        help: "the same with issue 775's watchdog, which is not rescheduled after the failure",
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
        help: "3 clients locking through one shared session, etcd issue 10756's misuse: the same key for all, each holds (control: etcd-contention)",
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

fn redlock(ttl_ms: u64, mutants: RedlockMutants) -> RedlockConfig {
    RedlockConfig {
        masters: 5,
        lock: redis(ttl_ms),
        attempts: 3,
        retry_delay_max_ms: 200,
        mutants,
    }
}

/// Redis's `SET NX PX` lock.
fn set_nx_lock(config: RedisLockConfig) -> LockKind {
    let ttl_ms = config.ttl_ms;
    Arc::new(Simulated::<SetNxLock>::new(config, ttl_ms))
}

/// Memcached's `add` lock.
fn memcached_lock(config: MemcachedLockConfig) -> LockKind {
    let ttl_ms = u64::from(config.ttl_s) * 1000;
    Arc::new(Simulated::<MemcachedLock>::new(config, ttl_ms))
}

/// Redisson's `RLock` (watchdog when no lease time is given; waiters woken by the unlock
/// message, which the simulated server publishes over the network), or with `fair` its fair
/// lock (the RLock's hash and watchdog with a queue of waiters; the release tells the first
/// waiter alone, on its own channel).
fn redisson_lock(config: RedissonConfig, fair: bool) -> LockKind {
    let renew_every_ms = config.watchdog().then(|| config.renew_every_ms());
    let lease_ms = config.lease_ms();
    if fair {
        Arc::new(Simulated::<RedissonFairLock> {
            renew_every_ms,
            wakeup: Wakeup::UnlockMessage,
            fair: true,
            ..Simulated::new(config, lease_ms)
        })
    } else {
        Arc::new(Simulated::<RedissonLock> {
            renew_every_ms,
            wakeup: Wakeup::UnlockMessage,
            ..Simulated::new(config, lease_ms)
        })
    }
}

fn memcached(ttl_s: u32) -> MemcachedLockConfig {
    MemcachedLockConfig {
        ttl_s,
        retry_every_ms: 20,
        ..MemcachedLockConfig::default()
    }
}

/// 5..=32 clients, from the seed.
fn contention_clients(seed: u64) -> usize {
    ChaCha8Rng::seed_from_u64(seed).gen_range(5..=32)
}

fn set_nx_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "set-nx-contention",
            "none broken: one server that keeps its keys and a clock that keeps pace",
            set_nx_lock(redis(2000)),
        )
    }
}

/// 5% of requests lost before they apply, 5% of replies lost after: the machines' handling of
/// a request that may have applied (retry, check the key's value) is what is tested.
const LOSS_PPM: u32 = 50_000;

fn set_nx_lost(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 8,
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        ..FamilyScenario::base(
            "set-nx-lost-messages",
            "none broken: a request whose reply was lost may have applied, and the lock code knows it",
            set_nx_lock(redis(2000)),
        )
    }
}

fn redlock_lost(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        ..redlock_contention(0)
    }
    .renamed(
        "redlock-lost-messages",
        "none of Redlock's premises is broken (5% of requests and replies lost), but a release whose DEL was lost on a majority of masters still reads as Released (the library maps 'deleted on at least one master' to Released) while that majority keeps every other client out until the TTL",
    )
    .expecting("C-release")
}

fn memcached_lost(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 8,
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        ..memcached_contention(0)
    }
    .renamed(
        "memcached-lost-messages",
        "none broken: an add whose reply was lost may have stored the item, and the lock code knows it",
    )
}

/// The holder keeps the lock its whole lease (a hold longer than the TTL, its validity checked
/// before the write only); the second client starts 100 ms later and waits.
fn set_nx_clock_drift(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        hold_ms: 2500,
        start_ms: vec![0, 100],
        server_clocks: vec![ClockSpec {
            drift_ppm: 50_000,
            ..ClockSpec::default()
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "set-nx-clock-drift",
            "the server's clock keeps pace with the client's within drift_ppm (1%): at 5% fast the key expires about 95 ms before the holder stops believing",
            set_nx_lock(redis(2000)),
        )
    }
}

fn set_nx_failover(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        replication_lag_ms: Some(100),
        faults: vec![ServerFault {
            trigger: Trigger::FirstAcquired { delay_ms: 0 },
            action: ServerAction::Failover,
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "set-nx-failover-after-acquire",
            "an acknowledged SET survives: asynchronous replication loses it when the primary fails over before the batch reached the replica",
            set_nx_lock(redis(2000)),
        )
    }
}

fn set_nx_restart(name: &'static str, persistence: Persistence, expect: Option<&'static str>) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        faults: vec![ServerFault {
            trigger: Trigger::FirstAcquired { delay_ms: 0 },
            action: ServerAction::Restart {
                server: 0,
                persistence,
                down_ms: 5,
            },
        }],
        expect_violated: expect,
        ..FamilyScenario::base(
            name,
            "the server keeps its keys across a restart: without persistence it comes back empty and the next client takes the lock",
            set_nx_lock(redis(2000)),
        )
    }
}

fn set_nx_restart_none(_seed: u64) -> FamilyScenario {
    set_nx_restart("set-nx-restart-no-persistence", Persistence::None, Some("T1-belief"))
}

fn set_nx_restart_fsync(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        premise:
            "none broken (the control): with appendfsync always the restarted server comes back with the holder's key",
        ..set_nx_restart("set-nx-restart-persistence", Persistence::EveryWrite, None)
    }
}

fn redlock_contention(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 3,
        hold_ms: 30,
        think_max_ms: 100,
        ..FamilyScenario::base(
            "redlock-contention",
            "none broken: masters that keep their keys and clocks that keep pace",
            Arc::new(SimRedlock(redlock(2000, RedlockMutants::default()))),
        )
    }
}

/// Client 0 cannot reach masters 3 and 4 (refused) for the whole run: its majority is exactly
/// masters 0, 1 and 2, as in Kleppmann's example; the other clients start 150 ms later.
fn holder_with_bare_majority(name: &'static str, premise: &'static str, ttl_ms: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        hold_ms: 1000,
        start_ms: vec![0, 150, 150],
        cuts: [3, 4]
            .into_iter()
            .map(|server| Cut {
                client: Some(0),
                server,
                from_ms: 0,
                to_ms: u64::MAX,
                mode: CutMode::Refused,
            })
            .collect(),
        ..FamilyScenario::base(
            name,
            premise,
            Arc::new(SimRedlock(redlock(ttl_ms, RedlockMutants::default()))),
        )
    }
}

fn redlock_clock_jump(_seed: u64) -> FamilyScenario {
    let ttl_ms = 2000;
    let mut scenario = holder_with_bare_majority(
        "redlock-clock-jump",
        "clocks advance at about the same rate: master 2's clock steps forward by the TTL at 100 ms and expires the holder's key early",
        ttl_ms,
    );
    scenario.server_clocks = vec![
        ClockSpec::default(),
        ClockSpec::default(),
        ClockSpec {
            jumps: vec![(100, ttl_ms as i64 * 1000)],
            ..ClockSpec::default()
        },
    ];
    scenario.expect_violated = Some("T1-belief");
    scenario
}

fn redlock_restart(name: &'static str, down_ms: u64, expect: Option<&'static str>) -> FamilyScenario {
    let mut scenario = holder_with_bare_majority(
        name,
        "masters keep their keys across a restart: master 2 restarts without fsync right after the holder acquired, and a second client gathers masters 2, 3 and 4",
        2000,
    );
    scenario.faults = vec![ServerFault {
        trigger: Trigger::FirstAcquired { delay_ms: 0 },
        action: ServerAction::Restart {
            server: 2,
            persistence: Persistence::None,
            down_ms,
        },
    }];
    scenario.expect_violated = expect;
    scenario
}

fn redlock_restart_now(_seed: u64) -> FamilyScenario {
    redlock_restart("redlock-restart-no-fsync", 5, Some("T1-belief"))
}

fn redlock_restart_delayed(_seed: u64) -> FamilyScenario {
    // Down for the TTL plus the longest the holder's key can have been set after its attempt
    // began (a slow reply): every key the crashed master held has expired elsewhere too.
    FamilyScenario {
        premise: "none broken (Kleppmann's fix): master 2 restarts empty but stays down longer than the TTL, so every key it forgot has expired on the other masters too",
        ..redlock_restart("redlock-restart-delayed", 2000 + 200, None)
    }
}

fn redlock_gc_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 50],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 2500,
            whole_process: false,
        }],
        expect_violated: Some("T1-resource"),
        ..FamilyScenario::base(
            "redlock-gc-pause",
            "a holder is not paused between checking its validity and using the lock: a 2.5 s pause with a 2 s TTL lets a second client acquire and write first",
            Arc::new(SimRedlock(redlock(2000, RedlockMutants::default()))),
        )
    }
}

/// The holder extends once, about 100 ms into its lease, while every master takes 250 ms more per
/// command (200..1700 ms): the extension's round takes longer than the TTL, so the keys it
/// extended first expire again before it ends. A second client starts at 1750 ms.
fn slow_extend(name: &'static str, mutants: RedlockMutants, expect: Option<&'static str>) -> FamilyScenario {
    FamilyScenario {
        extends: 1,
        extend_after_ms: Some(100),
        hold_ms: 1200,
        start_ms: vec![0, 1750],
        request_timeout_ms: 500,
        slow: (0..5)
            .map(|server| {
                (
                    server,
                    Slow {
                        from_ms: 200,
                        to_ms: 1700,
                        extra_ms: 250,
                    },
                )
            })
            .collect(),
        expect_violated: expect,
        ..FamilyScenario::base(
            name,
            "an extension counts only if a majority said yes within the validity: a slow round ends after the first keys it extended expired again",
            Arc::new(SimRedlock(redlock(1000, mutants))),
        )
    }
}

fn redlock_slow_extend(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        premise: "none broken (the control for go-redsync): the unmutated extension finds the slow round past the validity and reports the lease lost",
        ..slow_extend("redlock-slow-extend", RedlockMutants::default(), None)
    }
}

fn redlock_slow_extend_mutant(_seed: u64) -> FamilyScenario {
    slow_extend(
        "redlock-slow-extend-go-redsync",
        RedlockMutants {
            extend_ignores_validity: true,
            ..RedlockMutants::default()
        },
        Some("T1-belief"),
    )
}

/// One client; masters 0, 1 and 2 drop its requests for the first second (its first attempt
/// and the unlock after it wait out 200 ms timeouts each): the second attempt, after the drop,
/// finds every master free.
fn retry(name: &'static str, mutants: RedlockMutants, expect: Option<&'static str>) -> FamilyScenario {
    FamilyScenario {
        clients: 1,
        max_tries: 1,
        cuts: (0..3)
            .map(|server| Cut {
                client: None,
                server,
                from_ms: 0,
                to_ms: 1000,
                mode: CutMode::Dropped,
            })
            .collect(),
        check_free_progress: true,
        expect_violated: expect,
        ..FamilyScenario::base(
            name,
            "each attempt's validity counts from that attempt's start: counted from the first, a retry after a slow first attempt can never succeed",
            Arc::new(SimRedlock(redlock(1000, mutants))),
        )
    }
}

fn redlock_retry(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        premise: "none broken (the control for node-redlock): the second attempt counts its validity from its own start and acquires",
        ..retry("redlock-retry-after-drop", RedlockMutants::default(), None)
    }
}

fn redlock_retry_mutant(_seed: u64) -> FamilyScenario {
    retry(
        "redlock-retry-after-drop-node-redlock",
        RedlockMutants {
            validity_from_first_attempt: true,
            ..RedlockMutants::default()
        },
        Some("T2-free"),
    )
}

fn memcached_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "memcached-contention",
            "none broken: one server that keeps its items and a clock that keeps pace",
            memcached_lock(memcached(3)),
        )
    }
}

fn memcached_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 50],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 3500,
            whole_process: false,
        }],
        expect_violated: Some("T1-resource"),
        ..FamilyScenario::base(
            "memcached-pause",
            "a holder is not paused between checking its validity and using the lock: a 3.5 s pause with a 3 s item lets a second client acquire and write first",
            memcached_lock(memcached(3)),
        )
    }
}

/// Redisson's `lock()` without a lease time: a lease of `watchdog_timeout_ms`, renewed every
/// third of it.
fn redisson(watchdog_timeout_ms: u64, mutants: RedissonMutants) -> RedissonConfig {
    RedissonConfig {
        watchdog_timeout_ms,
        mutants,
        ..RedissonConfig::default()
    }
}

fn redisson_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "redisson-contention",
            "none broken: one server that keeps its keys, a clock that keeps pace, and unlock messages that arrive",
            redisson_lock(redisson(2000, RedissonMutants::default()), false),
        )
    }
}

fn redisson_lost_messages(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 2,
        hold_ms: 20,
        think_max_ms: 50,
        lost_message_ppm: 1_000_000,
        ..FamilyScenario::base(
            "redisson-lost-unlock-messages",
            "none broken (safety), but every unlock message is lost: a waiter wakes only when the holder's TTL it was told runs out, so each handover can cost up to the lease",
            redisson_lock(redisson(1000, RedissonMutants::default()), false),
        )
    }
}

/// The holder acquires at about 0 and its watchdog's first renewal leaves at about 500 ms;
/// the primary dies then, with that renewal in flight and the acquire's batch still on its way
/// to the replica (lag 1 s). The other clients start after the failover and find the promoted
/// replica without the key.
fn redisson_failover(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        hold_ms: 2000,
        start_ms: vec![0, 600, 700],
        replication_lag_ms: Some(1000),
        faults: vec![ServerFault {
            trigger: Trigger::FirstRenewal { delay_ms: 0 },
            action: ServerAction::Failover,
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "redisson-failover-during-renewal",
            "an acknowledged acquire survives: the primary fails over while the holder's first renewal is in flight and before the replica has the key, so a client that asks the promoted replica takes the lock while the holder's watchdog is still waiting to renew",
            redisson_lock(redisson(1500, RedissonMutants::default()), false),
        )
    }
}

fn redisson_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 50],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 1500,
            whole_process: true,
        }],
        expect_violated: Some("T1-resource"),
        ..FamilyScenario::base(
            "redisson-pause",
            "the holder's process runs: it stops 1.5 s (its watchdog with it) between its validity check and its write, longer than the 1 s watchdog timeout, so the key runs out, the other client takes the lock and writes first",
            redisson_lock(redisson(1000, RedissonMutants::default()), false),
        )
    }
}

/// The holder (client 0) holds 3 s on a 1.5 s lease; its first renewal, at about 500 ms, is
/// dropped (the link drops its requests from 400 to 700 ms) and times out; the other client
/// starts at 100 ms and waits.
fn failed_renewal(name: &'static str, mutants: RedissonMutants, expect: Option<&'static str>) -> FamilyScenario {
    FamilyScenario {
        hold_ms: 3000,
        start_ms: vec![0, 100],
        cuts: vec![Cut {
            client: Some(0),
            server: 0,
            from_ms: 400,
            to_ms: 700,
            mode: CutMode::Dropped,
        }],
        expect_violated: expect,
        ..FamilyScenario::base(
            name,
            "one failed renewal does not stop the watchdog (Redisson issue 775): with it stopped, the lease runs out under a holder that is never told, and the other client takes the lock",
            redisson_lock(redisson(1500, mutants), false),
        )
    }
}

fn redisson_failed_renewal(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        premise: "none broken (the control for Redisson issue 775): the fixed watchdog renews at its next period and the holder keeps its lock",
        ..failed_renewal("redisson-failed-renewal", RedissonMutants::default(), None)
    }
}

fn redisson_failed_renewal_775(_seed: u64) -> FamilyScenario {
    failed_renewal(
        "redisson-failed-renewal-775",
        RedissonMutants {
            watchdog_stops_after_a_failed_renewal: true,
            ..RedissonMutants::default()
        },
        Some("C-lost"),
    )
}

/// Redisson's fair lock with its watchdog (`lock()` without a lease time) and Redisson's
/// `threadWaitTime` of 5 s.
fn redisson_fair(watchdog_timeout_ms: u64, mutants: RedissonMutants) -> LockKind {
    redisson_lock(redisson(watchdog_timeout_ms, mutants), true)
}

fn redisson_fair_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "redisson-fair-contention",
            "none broken: one server that keeps its keys and queue, clocks that keep pace, and unlock messages that reach the first waiter; the lock goes in the order the lock() calls first reached the server",
            redisson_fair(2000, RedissonMutants::default()),
        )
    }
}

fn redisson_fair_lost_messages(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 2,
        hold_ms: 20,
        think_max_ms: 50,
        lost_message_ppm: 1_000_000,
        bound_ms: 600_000,
        expect_violated: Some("F-drop"),
        ..FamilyScenario::base(
            "redisson-fair-lost-unlock-messages",
            "unlock messages arrive: lost, a waiter wakes only when the wait it was told on joining runs out, the instant its slot began then; one handover in between has moved its deadline to that same instant, so its own next acquire arrives a request's latency late, drops it as stale and queues it again at the tail (safety and F-order unharmed)",
            redisson_fair(1000, RedissonMutants::default()),
        )
    }
}

fn redisson_fair_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 50],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 1500,
            whole_process: true,
        }],
        expect_violated: Some("T1-resource"),
        ..FamilyScenario::base(
            "redisson-fair-pause",
            "the holder's process runs: it stops 1.5 s (its watchdog with it) between its validity check and its write, longer than the 1 s watchdog timeout, so the key runs out, the first waiter takes the lock and writes first",
            redisson_fair(1000, RedissonMutants::default()),
        )
    }
}

/// As `redisson-failover-during-renewal`, on the fair lock.
fn redisson_fair_failover(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        hold_ms: 2000,
        start_ms: vec![0, 600, 700],
        replication_lag_ms: Some(1000),
        faults: vec![ServerFault {
            trigger: Trigger::FirstRenewal { delay_ms: 0 },
            action: ServerAction::Failover,
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "redisson-fair-failover-during-renewal",
            "an acknowledged acquire survives: the primary fails over while the holder's first renewal is in flight and before the replica has the key, so the next lock() call finds the promoted replica free with an empty queue and takes the lock while the holder's watchdog is still waiting to renew",
            redisson_fair(1500, RedissonMutants::default()),
        )
    }
}

fn redisson_fair_barging(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        expect_violated: Some("F-order"),
        ..FamilyScenario::base(
            "redisson-fair-barging",
            "the acquire keeps the queue: with the planted mutant it runs the RLock's script, so whoever asks when the lock is free takes it, ahead of waiters that asked first",
            redisson_fair(
                1000,
                RedissonMutants {
                    fair_acquire_ignores_the_queue: true,
                    ..RedissonMutants::default()
                },
            ),
        )
    }
}

/// Five clients that each hold 300 ms, ten times, with no think time: the lock is never free
/// for long and the queue never empties, for about 15 s.
fn redisson_fair_long_contention(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 10,
        hold_ms: 300,
        bound_ms: 180_000,
        expect_violated: Some("F-drop"),
        ..FamilyScenario::base(
            "redisson-fair-long-contention",
            "a waiter keeps its place while it waits: the scripts move the waiters' deadlines only when the lock changes hands, so after about a lease plus a threadWaitTime (1 s + 5 s) of unbroken contention the head's deadline has passed, the next script drops it as stale, and nothing tells it",
            redisson_fair(1000, RedissonMutants::default()),
        )
    }
}

/// ZooKeeper's session timeout in these scenarios (ms): a heartbeat every third of it.
const ZK_SESSION_TIMEOUT_MS: u64 = 2000;

fn zookeeper(recheck_every_ms: Option<u64>) -> LockKind {
    Arc::new(SimCurator {
        config: CuratorConfig {
            recheck_every_ms,
            ..CuratorConfig::default()
        },
        session_timeout_ms: ZK_SESSION_TIMEOUT_MS,
    })
}

fn zookeeper_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "zookeeper-contention",
            "none broken: sessions kept alive, watches delivered, one server that keeps its tree",
            zookeeper(None),
        )
    }
}

fn zookeeper_lost(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 8,
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        ..zookeeper_contention(0)
    }
    .renamed(
        "zookeeper-lost-messages",
        "none broken: a create whose reply was lost is found again by its guid (Curator's protected mode), and a session outlives a lost ping",
    )
}

/// Client 0 acquires at about 0 and its whole process stops 3 s (longer than the 2 s session
/// timeout) between its check and its write; client 1 starts at 300 ms and waits.
fn zookeeper_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 300],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 3000,
            whole_process: true,
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "zookeeper-session-expiry-pause",
            "the holder's session outlives its pauses: stopped 3 s with a 2 s session timeout, its heartbeat stops, the server expires the session and deletes its node, the waiter's watch fires and it acquires while the paused holder, told nothing (Curator's lock has no lease), still believes; the czxid fences its late write",
            zookeeper(None),
        )
    }
}

/// Client 0 holds 3 s; at 1 s the server's clock steps forward by the session timeout:
/// every session expires at once; client 1, waiting, opens a new session and acquires.
fn zookeeper_clock_jump(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        hold_ms: 3000,
        start_ms: vec![0, 100],
        server_clocks: vec![ClockSpec {
            jumps: vec![(1000, ZK_SESSION_TIMEOUT_MS as i64 * 1000)],
            ..ClockSpec::default()
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "zookeeper-clock-jump",
            "the server's clock keeps pace: a step forward by the session timeout expires the holder's session and node, and the waiter's new session acquires while the holder still believes",
            zookeeper(None),
        )
    }
}

fn missed_watch(name: &'static str, recheck_every_ms: Option<u64>, premise: &'static str) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        acquisitions: 2,
        hold_ms: 50,
        think_max_ms: 50,
        lost_message_ppm: 1_000_000,
        bound_ms: 20_000,
        ..FamilyScenario::base(name, premise, zookeeper(recheck_every_ms))
    }
}

fn zookeeper_missed_watch(_seed: u64) -> FamilyScenario {
    missed_watch(
        "zookeeper-missed-watch",
        None,
        "a watch, once set, is delivered: Curator's waiter waits on the watch alone, so with every watch message lost a waiter sleeps on a lock that is free until the run's bound (T2 bounded: a liveness loss no safety judge sees)",
    )
}

fn zookeeper_missed_watch_recheck(_seed: u64) -> FamilyScenario {
    missed_watch(
        "zookeeper-missed-watch-recheck",
        Some(500),
        "none broken (the control): our recheck lists the directory every 500 ms, so a lost watch costs at most that",
    )
}

/// How long the scenarios' server takes to close a session it has refused (ms).
const ZK_CLOSE_LAG_MS: u64 = 3000;

/// Client 0 holds from about 0 to about 4 s; client 1 (started at 100 ms) waits behind it and
/// client 2 (200 ms) behind client 1. Client 1's link drops every request from 300 ms to 3 s:
/// its pings stop reaching the server, which refuses its session at about 2.2 s and deletes its
/// node 3 s later. Back at 3 s, client 1's next ping is answered SESSIONEXPIRED: its watchers
/// are woken and its next request is told the session is over.
fn lingering_session(name: &'static str, mutants: CuratorMutants, premise: &'static str) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        hold_ms: 4000,
        start_ms: vec![0, 100, 200],
        zk_close_lag_ms: ZK_CLOSE_LAG_MS,
        cuts: vec![Cut {
            client: Some(1),
            server: 0,
            from_ms: 300,
            to_ms: 3000,
            mode: CutMode::Dropped,
        }],
        ..FamilyScenario::base(
            name,
            premise,
            Arc::new(SimCurator {
                config: CuratorConfig {
                    mutants,
                    ..CuratorConfig::default()
                },
                session_timeout_ms: ZK_SESSION_TIMEOUT_MS,
            }),
        )
    }
}

fn zookeeper_lingering_session(_seed: u64) -> FamilyScenario {
    lingering_session(
        "zookeeper-expired-session-lingers",
        CuratorMutants::default(),
        "none broken (the control for CURATOR-604): the waiter's session expires while its link is down and the server deletes its node 3 s after refusing the session; told SESSIONEXPIRED, our acquisition ends, and the next one queues with a new node",
    )
}

fn zookeeper_lingering_session_604(_seed: u64) -> FamilyScenario {
    lingering_session(
        "zookeeper-expired-session-lingers-604",
        CuratorMutants {
            keeps_its_node_across_a_new_session: true,
            ..CuratorMutants::default()
        },
        "an acquisition does not outlive the session its node belongs to (CURATOR-604): Curator's retry lists again on its new session, where the old session's node, refused but not yet deleted, becomes the lowest when the holder releases; it holds, and when the close deletes that node the next waiter holds too",
    )
    .expecting("T1-belief")
}

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

fn zookeeper_restart(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 2,
        hold_ms: 100,
        faults: restart_for_300_ms(),
        ..FamilyScenario::base(
            "zookeeper-server-restart",
            "none broken (the control): the server keeps its tree and sessions on disk, and a 300 ms outage is shorter than a session timeout",
            zookeeper(None),
        )
    }
}

/// etcd's session lease TTL in these scenarios, whole seconds (etcd's minimum).
const ETCD_TTL_S: i64 = 2;

fn etcd(mutants: EtcdMutants) -> LockKind {
    let config = EtcdMutexConfig {
        session_ttl_s: ETCD_TTL_S,
        mutants,
        ..EtcdMutexConfig::default()
    };
    Arc::new(Simulated::<EtcdLock> {
        fences: true,
        renew_every_ms: Some(config.keep_alive_every_ms()),
        wakeup: Wakeup::Watch,
        ..Simulated::new(config.clone(), config.ttl_us() / 1000)
    })
}

fn etcd_contention(seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: contention_clients(seed),
        acquisitions: 3,
        hold_ms: 20,
        think_max_ms: 50,
        ..FamilyScenario::base(
            "etcd-contention",
            "none broken: leases kept alive, watches delivered, one server that keeps its keys",
            etcd(EtcdMutants::default()),
        )
    }
}

fn etcd_lost(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 8,
        lost_request_ppm: LOSS_PPM,
        lost_reply_ppm: LOSS_PPM,
        ..etcd_contention(0)
    }
    .renamed(
        "etcd-lost-messages",
        "none broken: a put whose reply was lost is found again under its lease's key, and a holder whose keep-alives fail for a TTL stops believing",
    )
}

fn etcd_pause(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        start_ms: vec![0, 50],
        pauses: vec![Pause {
            client: 0,
            acquisition: 0,
            pause_ms: 3000,
            whole_process: true,
        }],
        expect_violated: None,
        ..FamilyScenario::base(
            "etcd-pause",
            "none broken that a fenced resource would see: the holder stops 3 s with a 2 s lease between its check and its write, the lease expires and the waiter acquires, and the late write carries a smaller revision, which a resource that checks it refuses",
            etcd(EtcdMutants::default()),
        )
    }
}

fn etcd_clock_jump(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        hold_ms: 3000,
        start_ms: vec![0, 100],
        server_clocks: vec![ClockSpec {
            jumps: vec![(1000, ETCD_TTL_S * 1_000_000)],
            ..ClockSpec::default()
        }],
        expect_violated: Some("T1-belief"),
        ..FamilyScenario::base(
            "etcd-clock-jump",
            "the server's clock keeps pace with the client's: a step forward by the TTL expires the holder's lease, the waiter acquires, and the holder believes until its next keep-alive is refused",
            etcd(EtcdMutants::default()),
        )
    }
}

/// Client 0 holds from about 30 ms to about 950 ms; client 1 (granted at about 100 ms,
/// keep-alives at about 767 and 1434 ms) waits behind it, and the watch message telling it of
/// client 0's release is 300 ms late. At 1000 ms the server's clock steps forward by the TTL:
/// client 1's lease expires and its key goes (client 0 has released; client 2's lease is
/// granted after the jump). Client 2 starts at 1060 ms and finds the lock free. Then client
/// 1's late watch message arrives, between its keep-alives: its lease is still live on its
/// own clock, its key is gone.
fn waiter_expiry(name: &'static str, mutants: EtcdMutants, expect: Option<&'static str>) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        hold_ms: 900,
        start_ms: vec![0, 100, 1060],
        message_delay_ms: 300,
        server_clocks: vec![ClockSpec {
            jumps: vec![(1000, ETCD_TTL_S * 1_000_000)],
            ..ClockSpec::default()
        }],
        expect_violated: expect,
        ..FamilyScenario::base(
            name,
            "a waiter whose lease expired while it waited does not take the lock (etcd issue 11456): woken by its predecessor's deletion after its own key went with its lease, it must check its own key before it believes",
            etcd(mutants),
        )
    }
}

fn etcd_waiter_expiry(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        premise: "none broken (the control for etcd 11456): the waiter reads its own key after the wait, finds it gone with its lease, and does not believe",
        ..waiter_expiry("etcd-lease-expires-while-waiting", EtcdMutants::default(), None)
    }
}

fn etcd_waiter_expiry_11456(_seed: u64) -> FamilyScenario {
    waiter_expiry(
        "etcd-lease-expires-while-waiting-11456",
        EtcdMutants {
            no_own_key_check_after_wait: true,
            ..EtcdMutants::default()
        },
        Some("T1-belief"),
    )
}

fn etcd_shared_session_10756(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 3,
        acquisitions: 2,
        hold_ms: 100,
        ..FamilyScenario::base(
            "etcd-shared-session-10756",
            "one session per acquisition (etcd issue 10756 shares one between goroutines: the same lease, so the same key, which each takes for its own place at the head)",
            etcd(EtcdMutants {
                one_session_for_every_acquisition: true,
                ..EtcdMutants::default()
            }),
        )
    }
    .expecting("T1-belief")
}

fn etcd_restart(_seed: u64) -> FamilyScenario {
    FamilyScenario {
        clients: 5,
        acquisitions: 2,
        hold_ms: 100,
        faults: restart_for_300_ms(),
        ..FamilyScenario::base(
            "etcd-server-restart",
            "none broken (the control): the server keeps its keys and leases on disk, and a restarted leader gives every lease its TTL again",
            etcd(EtcdMutants::default()),
        )
    }
}

/// The faults every lock on one server can be run under, for a lock the simulator does not
/// name (a user's own, [`Simulated`]): the contention control, lost requests and
/// replies, a holder paused past its lease, the server restarting without its keys (Redis and
/// Memcached; etcd keeps its data on disk), and the server's clock stepping forward by the
/// lease. None is expected to fail: each run's verdicts say what the lock kept.
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
