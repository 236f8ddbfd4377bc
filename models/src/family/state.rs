//! A world's state: each client's phase, its machine's pending action and its renewal lane,
//! the resource the lock protects, the world itself, and the actions ([`Act`]) that move it.

use std::fmt;

use cassalock::algo::family::RenewalEnd;
use cassalock::algo::{Input, StepTag};

use super::{Grant, ModelFamily};

/// A holder's view of its lock, between `lock()` and `unlock()`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Hold<L> {
    pub lease: L,
    pub grant: Grant,
    /// Writes to the resource so far.
    pub uses: u8,
    pub extended: bool,
    /// It learned the lease is lost: its check found the clock past `valid_until`, or the
    /// extension answered "not ours".
    pub lost: bool,
    /// It checked its lease and is about to write (the pause fault's gap).
    pub checked: bool,
}

/// What a client is doing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase<F: ModelFamily> {
    /// Between acquisitions.
    Idle,
    Acquiring(F::AcquireMachine),
    Holding(Hold<F::Lease>),
    Extending(F::ExtendMachine, Hold<F::Lease>),
    /// `unlock()` was called while the renewal lane has a request out: it waits for the lane
    /// to stop (the family driver's release waits for a renewal in flight).
    Unlocking(Hold<F::Lease>),
    Releasing(F::ReleaseMachine),
    /// Every acquisition done.
    Finished,
}

/// A running machine's pending action, as it travels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pending<C, R> {
    Nothing,
    /// A sleep that ends when the client's clock reaches `wake_tick` (or, `until_notified`,
    /// when an unlock message has arrived).
    Sleep {
        wake_tick: u8,
        until_notified: bool,
    },
    /// Sent, not yet applied by the server.
    Request {
        tag: StepTag,
        command: C,
    },
    /// The answer on its way back (a reply, or the failure the client will see).
    Answer {
        tag: StepTag,
        command: C,
        input: Input<R>,
    },
}

/// A holder's renewal lane (Redisson's watchdog), from the acquisition to the release.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Lane<F: ModelFamily> {
    Running {
        machine: F::Lane,
        pending: Pending<F::Command, F::Reply>,
        /// `unlock()` asked it to stop: it ends at its next sleep.
        stop: bool,
    },
    /// It ended: stopped by the release, or having told the holder (lost, expired), or
    /// quietly (redisson/redisson#775's mutant).
    Ended(RenewalEnd),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client<F: ModelFamily> {
    pub phase: Phase<F>,
    pub pending: Pending<F::Command, F::Reply>,
    /// The holder's renewal lane (`None`: not holding, or the lock has none).
    pub lane: Option<Lane<F>>,
    /// Unlock messages on their way to this waiter (it is subscribed while in `lock()`).
    pub messages_in_flight: u8,
    /// An unlock message arrived and no sleep until notified has taken it yet.
    pub message_arrived: bool,
    /// Acquisitions finished (the current one's index while one runs).
    pub completed: u8,
    pub paused_at_tick: Option<u8>,
    /// F-order (a lock that promises it): this `lock()` call has reached the server (its first
    /// request applied): it is in the queue, or took the lock.
    pub queued: bool,
    /// F-order: bit j set when client j's `lock()` call was queued before this one's and has
    /// not returned yet.
    pub ahead: u8,
    /// F-order: this `lock()` call was served (the key took its token), whether or not it has
    /// heard so yet.
    pub served: bool,
    /// C-release: bit k set when acquisition k's `unlock()` returned other than `Failed`.
    pub released: u8,
    /// C-free: bit k set when acquisition k's `lock()` ended without the lock and said it left
    /// nothing.
    pub gave_up_clean: u8,
    /// T2 (always): bit k set when acquisition k's `lock()` returned without the lock while the
    /// store answered (Redlock's attempts ran out under contention).
    pub gave_up_waiting: u8,
}

/// The resource the lock protects: it records the last writer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Resource {
    /// (client, grant) of the last write.
    pub last_write: Option<(u8, Grant)>,
    /// A write came from an acquisition older than one that had already written, and the
    /// resource accepted it.
    pub stale_write: bool,
    /// Fencing (a lock whose token grows): the highest token the resource has accepted; a write
    /// with a lower one is refused.
    pub fence: Option<String>,
}

impl Resource {
    /// What the resource does with a write of acquisition `grant` carrying `token`: with a
    /// fencing token (`F::FENCING`), it refuses a token below the highest it accepted, and
    /// accepts, stale, one equal to it from another acquisition (two holders sharing a token);
    /// without, it accepts everything, stale when a later acquisition has already written.
    /// `accepted` and `stale` as the resource of the other drivers says them
    /// (`cassalock::algo::admit`).
    pub fn admit<F: ModelFamily>(&self, grant: Grant, token: &str) -> cassalock::algo::Admission {
        if F::FENCING {
            if self.fence.as_deref().is_some_and(|fence| fence > token) {
                return cassalock::algo::Admission {
                    stale: true,
                    accepted: false,
                };
            }
            let shared = self.fence.as_deref() == Some(token) && self.last_write.is_some_and(|(_, last)| last != grant);
            return cassalock::algo::Admission {
                stale: shared,
                accepted: true,
            };
        }
        let stale = self.last_write.is_some_and(|(_, last)| last > grant);
        cassalock::algo::Admission { stale, accepted: true }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World<F: ModelFamily> {
    pub now_tick: u8,
    pub server: F::Server,
    pub clients: Vec<Client<F>>,
    /// Acquisitions granted so far.
    pub grants: u8,
    pub resource: Resource,
    /// The run's one pause, restart, failover or clock jump has happened.
    pub fault_used: bool,
    pub store_failures_used: u8,
    /// F-order: a `lock()` call returned with the lock while one queued before it still waited.
    pub overtaken: bool,
    /// C-token (a lock whose token grows): the highest token granted so far.
    pub last_grant_token: Option<String>,
    /// C-token: an acquisition was granted a token not above an earlier holder's.
    pub token_went_down: bool,
}

/// Who acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Act {
    /// Client i takes its next step: start a call, receive an answer, wake, check, write.
    Client(u8),
    /// The server applies client i's request in flight.
    Apply(u8),
    /// Replication delivers the oldest pending batch to the replica.
    Replicate,
    /// Time passes one tick.
    Tick,
    /// Faults: client i's request is lost before the server sees it, or (`after_apply`) its
    /// reply is lost after the server applied it.
    Lose {
        client: u8,
        after_apply: bool,
    },
    Pause(u8),
    /// Client i resumes from its pause (its own step, so fairness ends every pause).
    Resume(u8),
    /// Faults: the server restarts without persistence.
    Restart,
    /// Faults: the replica is promoted, losing the batches in flight.
    Failover,
    /// Faults: the server's clock jumps forward by the TTL.
    ClockJump,
    /// Client i's renewal lane (Redisson's watchdog) takes its next step.
    Lane(u8),
    /// The server applies client i's renewal lane's request in flight.
    ApplyLane(u8),
    /// Faults: client i's renewal request is lost before the server sees it, or its reply after.
    LoseLane {
        client: u8,
        after_apply: bool,
    },
    /// An unlock message reaches waiter i.
    Notify(u8),
    /// Faults: an unlock message to waiter i is lost.
    LoseNotification(u8),
}

impl fmt::Display for Act {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Act::Client(i) => write!(f, "t{i}"),
            Act::Apply(i) => write!(f, "server applies t{i}'s request"),
            Act::Replicate => write!(f, "replication"),
            Act::Tick => write!(f, "clock"),
            Act::Lose { client, after_apply } => write!(
                f,
                "faults: t{client}'s {} is lost",
                if *after_apply { "reply" } else { "request" }
            ),
            Act::Pause(i) => write!(f, "faults: pause t{i}"),
            Act::Resume(i) => write!(f, "t{i} resumes"),
            Act::Restart => write!(f, "faults: server restart"),
            Act::Failover => write!(f, "faults: failover"),
            Act::ClockJump => write!(f, "faults: server clock jump"),
            Act::Lane(i) => write!(f, "t{i}'s watchdog"),
            Act::ApplyLane(i) => write!(f, "server applies t{i}'s watchdog request"),
            Act::LoseLane { client, after_apply } => write!(
                f,
                "faults: t{client}'s watchdog {} is lost",
                if *after_apply { "reply" } else { "request" }
            ),
            Act::Notify(i) => write!(f, "the unlock message reaches t{i}"),
            Act::LoseNotification(i) => write!(f, "faults: the unlock message to t{i} is lost"),
        }
    }
}
