//! What one run of the Cassandra-family simulator is made of: the lock's name, the clients and
//! their modes, the cluster, the faults and when they fire, the clocks, the lock's settings.
//! [`crate::scenario`] builds one from a named scenario and a seed, [`crate::knobs`] changes it
//! from the command line, and the run reads it.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use cassalock::algo::{Fixes, RetryPolicy};
use cassalock::driver::{Algorithm, Settings, TimeSource};

use crate::clock::ClockSpec;
use crate::cluster::ClusterConfig;
pub use crate::wire::LOCK;

/// Faults the injector applies. "Holder" faults hit whichever client holds the lock when they
/// fire (waiting up to 10 s for one).
#[derive(Clone, Debug, PartialEq)]
pub enum FaultKind {
    PauseHolder {
        for_: Duration,
    },
    PauseClient {
        client: usize,
        for_: Duration,
    },
    KillHolder,
    KillClient {
        client: usize,
    },
    RestartClient {
        client: usize,
    },
    /// Clog every link between the holder and every replica, both ways.
    CutOffHolder {
        for_: Duration,
    },
    CutOffClient {
        client: usize,
        for_: Duration,
    },
    KillReplica {
        replica: usize,
    },
    RestartReplica {
        replica: usize,
    },
    PauseReplica {
        replica: usize,
        for_: Duration,
    },
    IsolateReplica {
        replica: usize,
        for_: Duration,
    },
    /// Every message is lost with this probability.
    Loss {
        rate_percent: u32,
        for_: Duration,
    },
    KillTimeReplica {
        replica: usize,
    },
    /// An operator deletes the lock's rows (main, queue and shadow; not the fencing counter's)
    /// on every replica at once, stamped by replica r0's clock: the holder's cells are gone
    /// with no clock skew and no expiry. Its renewal must notice and say the lease is lost.
    DeleteLockRows,
}

impl FaultKind {
    /// Every kind's name, in a fixed order (for tallies by kind).
    pub const NAMES: [&'static str; 14] = [
        "pause-holder",
        "pause-client",
        "kill-holder",
        "kill-client",
        "restart-client",
        "cut-off-holder",
        "cut-off-client",
        "kill-replica",
        "restart-replica",
        "pause-replica",
        "isolate-replica",
        "loss",
        "kill-time-replica",
        "delete-lock-rows",
    ];

    /// This kind's index in [`FaultKind::NAMES`].
    pub fn index(&self) -> usize {
        match self {
            FaultKind::PauseHolder { .. } => 0,
            FaultKind::PauseClient { .. } => 1,
            FaultKind::KillHolder => 2,
            FaultKind::KillClient { .. } => 3,
            FaultKind::RestartClient { .. } => 4,
            FaultKind::CutOffHolder { .. } => 5,
            FaultKind::CutOffClient { .. } => 6,
            FaultKind::KillReplica { .. } => 7,
            FaultKind::RestartReplica { .. } => 8,
            FaultKind::PauseReplica { .. } => 9,
            FaultKind::IsolateReplica { .. } => 10,
            FaultKind::Loss { .. } => 11,
            FaultKind::KillTimeReplica { .. } => 12,
            FaultKind::DeleteLockRows => 13,
        }
    }

    pub fn name(&self) -> &'static str {
        Self::NAMES[self.index()]
    }
}

/// How the plan and the fault's record say [`FaultKind::DeleteLockRows`].
pub(crate) const DELETE_LOCK_ROWS_TEXT: &str =
    "an operator deletes the lock's rows (main, queue, shadow) on every replica";

/// A fault at a simulated time.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub at: Duration,
    pub kind: FaultKind,
}

/// How clients take the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientMode {
    /// `lock()`: GetLock, wait until held.
    GetLock,
    /// `try_lock()`: TryGetLock; on "no", think and try again.
    TryGetLock,
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub scenario: &'static str,
    pub algorithm: Algorithm,
    pub mode: ClientMode,
    pub clients: usize,
    pub acquisitions: u32,
    /// Locks one acquisition takes (1: [`LOCK`]).
    pub locks: usize,
    pub lock_order: LockOrder,
    pub cluster: ClusterConfig,
    pub ttl_s: u32,
    pub renew_every_ms: u64,
    pub poll_ms: u64,
    /// The queue lock's next-in-line poll (`None`: every waiter at `poll_ms`).
    pub next_poll_ms: Option<u64>,
    /// With `next_poll_ms`: waiters sleep by rank and the queue's pace (`Settings::paced_poll`).
    pub paced_poll: bool,
    /// Each client's acquisitions reuse thread ids (`Settings::reuse_thread_ids`).
    pub reuse_thread_ids: bool,
    /// The queue lock reads the queue from its last hold's column
    /// (`Settings::queue_read_from_last_hold`).
    pub queue_read_from_last_hold: bool,
    /// Critical section length, uniform in this range.
    pub hold_ms: (u64, u64),
    /// A mix of long operations: some holds are drawn from another range (`None`: none).
    pub long_hold: Option<LongHold>,
    /// The library's acquisition deadline (`None`: wait for ever).
    pub max_wait_ms: Option<u64>,
    /// The library's retry policy for failed store requests.
    pub retry: RetryPolicy,
    /// Pause between a release and the next acquisition.
    pub think_ms: (u64, u64),
    pub time_source: TimeSource,
    /// Replicas of the time service (0: none).
    pub time_replicas: usize,
    pub k3: bool,
    /// Mutant M2: renewal rewrites without checking the holder's main cell is still there.
    pub m2: bool,
    /// Mutant M3: release stamps its deletes at the lease's start.
    pub m3: bool,
    /// Mutant M4: renewal trusts a rewrite whose reply comes after the cells may have expired.
    pub m4: bool,
    /// `pause-at-rewrite`: the first client whose renewal sends a rewrite is paused this long
    /// right then, after renewal's check and before the write leaves (a step, not a time,
    /// triggers it: `Recorder::arm_step_pause`).
    pub pause_at_renewal_rewrite: Option<Duration>,
    /// Our fixes to the listings (`Fixes::THESIS`: the listings as written).
    pub fixes: Fixes,
    pub fencing: bool,
    /// Holders look at `guard.is_lost()` during their critical section and abandon it. Off in
    /// `pause`: a pause can strike between that check and the write, so the worst case is a
    /// write right after the pause.
    pub lease_aware: bool,
    pub replica_clocks: Vec<ClockSpec>,
    pub client_clocks: Vec<ClockSpec>,
    pub time_replica_clocks: Vec<ClockSpec>,
    pub faults: Vec<Fault>,
    /// Stop the run after this much simulated time, finished or not.
    pub max_sim: Duration,
    /// Ignore `acquisitions`: every client keeps acquiring until `max_sim` (throughput runs).
    pub open_ended: bool,
}

/// The order an acquisition takes several locks in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockOrder {
    /// `shared-0`, `shared-1`, ...: every client in the same order (no deadlock possible).
    #[default]
    Fixed,
    /// A new order per acquisition, drawn from madsim's generator: two clients can each hold a
    /// lock the other waits for (with GetLock and no `max_wait_ms`, until the run's time limit).
    Random,
    /// Independent locks: each acquisition takes one of the locks, drawn from madsim's
    /// generator per acquisition, so clients meet on a lock only now and then.
    One,
}

/// A lock order that is neither `fixed` nor `random`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a lock order; use fixed, random or one")]
pub struct UnknownLockOrder(pub String);

impl FromStr for LockOrder {
    type Err = UnknownLockOrder;

    fn from_str(text: &str) -> Result<Self, UnknownLockOrder> {
        match text {
            "fixed" => Ok(LockOrder::Fixed),
            "random" => Ok(LockOrder::Random),
            "one" => Ok(LockOrder::One),
            other => Err(UnknownLockOrder(other.to_owned())),
        }
    }
}

/// Hold lengths with a mix of long operations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LongHold {
    /// A long hold's length, uniform in this range.
    pub hold_ms: (u64, u64),
    /// How often a hold is long.
    pub percent: f64,
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::PauseHolder { for_ } => write!(f, "pause the holder for {:.1} s", for_.as_secs_f64()),
            FaultKind::PauseClient { client, for_ } => {
                write!(f, "pause client c{client} for {:.1} s", for_.as_secs_f64())
            }
            FaultKind::KillHolder => write!(f, "kill the holder's process"),
            FaultKind::KillClient { client } => write!(f, "kill client c{client}"),
            FaultKind::RestartClient { client } => write!(f, "restart client c{client}"),
            FaultKind::CutOffHolder { for_ } => write!(
                f,
                "cut the holder off from every replica for {:.1} s",
                for_.as_secs_f64()
            ),
            FaultKind::CutOffClient { client, for_ } => write!(
                f,
                "cut client c{client} off from every replica for {:.1} s",
                for_.as_secs_f64()
            ),
            FaultKind::KillReplica { replica } => write!(f, "kill replica r{replica}"),
            FaultKind::RestartReplica { replica } => write!(f, "restart replica r{replica}"),
            FaultKind::PauseReplica { replica, for_ } => {
                write!(f, "pause replica r{replica} for {:.1} s", for_.as_secs_f64())
            }
            FaultKind::IsolateReplica { replica, for_ } => {
                write!(f, "isolate replica r{replica} for {:.1} s", for_.as_secs_f64())
            }
            FaultKind::Loss { rate_percent, for_ } => {
                write!(f, "lose {rate_percent}% of messages for {:.1} s", for_.as_secs_f64())
            }
            FaultKind::KillTimeReplica { replica } => write!(f, "kill time-service replica ts{replica}"),
            FaultKind::DeleteLockRows => f.write_str(DELETE_LOCK_ROWS_TEXT),
        }
    }
}

impl RunConfig {
    /// The settings every client of this run uses (with its own client id).
    pub fn settings(&self, client_id: &str) -> Settings {
        let mut settings = Settings::new(client_id);
        settings.algorithm = self.algorithm;
        settings.ttl_s = self.ttl_s;
        settings.renew_every_ms = self.renew_every_ms;
        settings.poll_ms = self.poll_ms;
        settings.next_poll_ms = self.next_poll_ms;
        settings.paced_poll = self.paced_poll;
        settings.reuse_thread_ids = self.reuse_thread_ids;
        settings.queue_read_from_last_hold = self.queue_read_from_last_hold;
        settings.time_source = self.time_source;
        settings.max_wait_ms = self.max_wait_ms;
        settings.retry = self.retry;
        settings.mutants.k3_release_without_waiting = self.k3;
        settings.mutants.m2_renew_without_checking = self.m2;
        settings.mutants.m3_delete_stamped_at_acquisition = self.m3;
        settings.mutants.m4_trust_a_late_rewrite = self.m4;
        settings.fixes = self.fixes;
        settings
    }

    /// The machines' configuration, for the contract's bounds; `None` if the settings are
    /// invalid (every client then fails to start, which the run reports).
    pub fn lock_config(&self) -> Option<cassalock::algo::LockConfig> {
        self.settings("sim").validate().ok().map(|(_, config)| config)
    }

    /// The acquisition the clients run.
    pub fn acquire_kind(&self) -> cassalock::algo::lifecycle::AcquireKind {
        match self.mode {
            ClientMode::GetLock => self.algorithm.get_lock(),
            ClientMode::TryGetLock => self.algorithm.try_lock(),
        }
    }

    /// The plan, printed before a run.
    pub fn plan(&self) -> String {
        let mut lines = vec![format!(
            "scenario {} | {} algorithm | {} clients x {} acquisitions | CL {} x {} replicas | TTL {} s, renew every {} ms, poll {} ms | hold {}-{} ms, think {}-{} ms | time source {:?}{}{}{}{}{}{}",
            self.scenario,
            self.algorithm.name(),
            self.clients,
            self.acquisitions,
            self.cluster.consistency.name(),
            self.cluster.replicas,
            self.ttl_s,
            self.renew_every_ms,
            self.poll_ms,
            self.hold_ms.0,
            self.hold_ms.1,
            self.think_ms.0,
            self.think_ms.1,
            self.time_source,
            if self.k3 { " | MUTANT K3" } else { "" },
            if self.m2 { " | MUTANT M2" } else { "" },
            if self.m3 { " | MUTANT M3" } else { "" },
            if self.m4 { " | MUTANT M4" } else { "" },
            if self.fixes == Fixes::THESIS { " | thesis listings as written" } else { "" },
            if self.fencing { " | fencing on" } else { " | fencing OFF" },
        )];
        let clocks = |prefix: &str, specs: &[ClockSpec]| -> Vec<String> {
            specs
                .iter()
                .enumerate()
                .filter(|(_, c)| **c != ClockSpec::default())
                .map(|(i, c)| {
                    let jumps: Vec<String> = c
                        .jumps
                        .iter()
                        .map(|(at, step)| format!("{:+.3} s at {:.1} s", *step as f64 / 1e6, *at as f64 / 1e3))
                        .collect();
                    format!(
                        "  clock {prefix}{i}: offset {:+.3} s, drift {:+} ppm{}{}{}",
                        c.offset_us as f64 / 1e6,
                        c.drift_ppm,
                        if jumps.is_empty() {
                            String::new()
                        } else {
                            format!(", jumps {}", jumps.join(", "))
                        },
                        if c.error_us == 0 {
                            String::new()
                        } else {
                            format!(", each reading off by up to ±{} ms (uniform)", c.error_us as f64 / 1e3)
                        },
                        if c.error_tail_ppm == 0 {
                            String::new()
                        } else {
                            format!(
                                ", {}% of readings off by up to ±{} ms instead",
                                f64::from(c.error_tail_ppm) / 1e4,
                                c.error_tail_us as f64 / 1e3
                            )
                        }
                    )
                })
                .collect()
        };
        if let Some(knobs) = self.knobs_line() {
            lines.push(knobs);
        }
        lines.extend(clocks("r", &self.replica_clocks));
        lines.extend(clocks("c", &self.client_clocks));
        lines.extend(clocks("ts", &self.time_replica_clocks));
        if let Some(for_) = self.pause_at_renewal_rewrite {
            lines.push(format!(
                "  at the first renewal rewrite any client sends: pause that client for {:.1} s, before the write leaves",
                for_.as_secs_f64()
            ));
        } else if self.faults.is_empty() {
            lines.push("  faults: none".into());
        }
        for fault in &self.faults {
            lines.push(format!("  at {:>7.3} s: {}", fault.at.as_secs_f64(), fault.kind));
        }
        lines.join("\n")
    }
}

impl RunConfig {
    /// The locks every acquisition takes, in the fixed order.
    pub fn lock_names(&self) -> Vec<String> {
        if self.locks <= 1 {
            return vec![LOCK.to_owned()];
        }
        (0..self.locks).map(|i| format!("{LOCK}-{i}")).collect()
    }

    /// What the knobs changed that the plan's first line does not show (`None`: nothing).
    fn knobs_line(&self) -> Option<String> {
        let defaults = Settings::new("sim");
        let cluster = ClusterConfig::default();
        let mut parts = Vec::new();
        if self.locks > 1 && self.lock_order == LockOrder::One {
            parts.push(format!(
                "{} independent locks, one per acquisition drawn at random",
                self.locks
            ));
        } else if self.locks > 1 {
            parts.push(format!(
                "{} locks per acquisition, {} order",
                self.locks, self.lock_order
            ));
        }
        if let Some(long) = self.long_hold {
            parts.push(format!(
                "{}% of holds long, {}-{} ms",
                long.percent, long.hold_ms.0, long.hold_ms.1
            ));
        }
        if let Some(ms) = self.next_poll_ms {
            parts.push(format!("the next in line polls every {ms} ms"));
        }
        if self.paced_poll {
            parts.push("waiters sleep by rank and the queue's pace".to_owned());
        }
        // Say the long-run settings only where a run differs from where it starts.
        let start = LongRunSettings::start(self.fixes == Fixes::THESIS);
        if self.reuse_thread_ids != start.reuse_thread_ids {
            parts.push(if self.reuse_thread_ids {
                "thread ids reused".to_owned()
            } else {
                "a new thread id per acquisition".to_owned()
            });
        }
        if self.queue_read_from_last_hold != start.queue_read_from_last_hold {
            parts.push(if self.queue_read_from_last_hold {
                "the queue read from the last hold's column".to_owned()
            } else {
                "the queue read from the row's start".to_owned()
            });
        }
        if let Some((lo, hi)) = self.cluster.message_latency_us {
            parts.push(format!("each message {lo}..{hi} us on the network"));
        }
        if self.cluster.network != cluster.network {
            parts.push(format!("messages on the {} network", self.cluster.network));
        }
        if let Some(max_wait) = self.max_wait_ms {
            parts.push(format!("max wait {max_wait} ms"));
        }
        if self.retry != defaults.retry {
            parts.push(format!(
                "{} retries, {} ms apart",
                self.retry.max_retries, self.retry.backoff_ms
            ));
        }
        if self.cluster.client_timeout != cluster.client_timeout {
            parts.push(format!(
                "client request timeout {} ms",
                self.cluster.client_timeout.as_millis()
            ));
        }
        if self.cluster.read_timeout != cluster.read_timeout {
            parts.push(format!(
                "coordinator read timeout {} ms",
                self.cluster.read_timeout.as_millis()
            ));
        }
        if self.cluster.write_timeout != cluster.write_timeout {
            parts.push(format!(
                "coordinator write timeout {} ms",
                self.cluster.write_timeout.as_millis()
            ));
        }
        let faults = self.cluster.store_faults;
        if faults.before_apply_ppm > 0 {
            parts.push(format!(
                "{}% of store calls fail before being applied",
                f64::from(faults.before_apply_ppm) / 1e4
            ));
        }
        if faults.after_apply_ppm > 0 {
            parts.push(format!(
                "{}% of store calls applied with the reply lost",
                f64::from(faults.after_apply_ppm) / 1e4
            ));
        }
        (!parts.is_empty()).then(|| format!("  knobs: {}", parts.join(" | ")))
    }
}

/// The library's two long-run settings, where a run starts before its knobs are applied.
pub(crate) struct LongRunSettings {
    pub(crate) reuse_thread_ids: bool,
    pub(crate) queue_read_from_last_hold: bool,
}

impl LongRunSettings {
    /// The library's defaults; off where the listings run as written (`thesis_listings`),
    /// which give every acquisition a new id and read the queue from the row's start.
    pub(crate) fn start(thesis_listings: bool) -> Self {
        let defaults = Settings::new("sim");
        LongRunSettings {
            reuse_thread_ids: defaults.reuse_thread_ids && !thesis_listings,
            queue_read_from_last_hold: defaults.queue_read_from_last_hold && !thesis_listings,
        }
    }
}
