//! What a family run records: each thing that happened, on which node, at which simulated
//! instant ([`FamilyRecord`]), and the facts the judges read besides (the end, who finished,
//! the clients' clocks, the keys left on the servers). [`super::run`] writes them;
//! [`super::events`] turns them into the event record the judge reads.

use std::fmt;
use std::time::Duration;

use cassalock::driver::family::FamilyEvent;

use crate::clock::SimClock;

/// The one lock key every client contends for.
pub const KEY: &str = "L";

/// Something that happened, at a simulated instant (global time since the run began).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyRecord {
    pub at: Duration,
    /// The node it happened on (`c3`, `resource`, `faults`).
    pub node: String,
    pub what: FamilyWhat,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FamilyWhat {
    /// The client's lock code reported this (client clock readings inside).
    Lock(FamilyEvent),
    /// The client starts trying to acquire its `acquisition`-th hold (1-based).
    Waiting {
        acquisition: u32,
    },
    /// An `Acquired` event's place in the order of acquisitions (recorded right after it).
    Numbered {
        token: String,
        acquisition: u64,
    },
    /// The resource received a write from the holder of `token`.
    Write {
        token: String,
        acquisition: Option<u64>,
    },
    /// A release said `Released`, and at that instant these logical servers still held the
    /// token's key.
    KeptAfterRelease {
        token: String,
        servers: Vec<usize>,
    },
    /// Who the servers' own state names as the lock's holder now (T1-server): the holder's
    /// token (`None`: nobody), and from when its key has expired unless a command renews or
    /// deletes it first.
    ServerHolder {
        token: Option<String>,
        gone_at: Option<Duration>,
    },
    /// `lock` returned an error; the client may try again.
    GaveUp {
        error: String,
    },
    /// The client stops (a GC pause) between its validity check and its write.
    Paused {
        ms: u64,
    },
    /// The holder's validity check before a write found its lease run out (`is_valid` false):
    /// it knows, and does not write.
    SawInvalid {
        thread: String,
    },
    /// The server sent an unlock message to client `to` (`lost`: the message is lost).
    UnlockMessage {
        to: usize,
        lost: bool,
    },
    /// A ZooKeeper or etcd watch fired and the server sent its event to client `to` (`lost`:
    /// the message is lost).
    Watch {
        to: usize,
        lost: bool,
    },
    Fault(String),
    /// The client finished its acquisitions.
    Done,
    /// Fair lock, recorded by the server node that applied it: the first acquire of the
    /// lock() call `owner` reached the server (its place in the queue order, F-order).
    FairAsked {
        owner: String,
    },
    /// Fair lock, by the server: an acquire by `owner` took the lock.
    FairGranted {
        owner: String,
    },
    /// Fair lock, by the client: the lock() call `thread`'s wait ran out and it sends the
    /// request that leaves the queue; from here it no longer waits (F-order, F-drop).
    FairGivingUp {
        thread: String,
    },
    /// Fair lock, by the server: the script `by` ran (an acquire or release of that owner)
    /// removed `owner` from the queue as stale; nothing tells the waiter (F-drop).
    FairDropped {
        owner: String,
        by: String,
        script: &'static str,
    },
}

impl FamilyRecord {
    /// A request, reply or sleep: kept only in detailed runs.
    pub fn is_detail(&self) -> bool {
        matches!(
            self.what,
            FamilyWhat::Lock(FamilyEvent::Request { .. } | FamilyEvent::Reply { .. } | FamilyEvent::Sleep { .. })
        )
    }
}

impl fmt::Display for FamilyWhat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FamilyWhat::Lock(event) => write_event(f, event),
            FamilyWhat::Waiting { acquisition } => write!(f, "waits for the lock (acquisition {acquisition})"),
            FamilyWhat::Numbered { token, acquisition } => write!(f, "acquisition #{acquisition} is {token}"),
            FamilyWhat::Write { token, acquisition } => match acquisition {
                Some(n) => write!(f, "write from {token} (acquisition #{n})"),
                None => write!(f, "write from {token} (no acquisition of that token)"),
            },
            FamilyWhat::KeptAfterRelease { token, servers } => {
                write!(f, "released, yet server(s) {servers:?} still hold {token}")
            }
            FamilyWhat::ServerHolder { token: None, .. } => write!(f, "the server's state names nobody as the holder"),
            FamilyWhat::ServerHolder {
                token: Some(token),
                gone_at: None,
            } => write!(f, "the server's state names {token} as the holder"),
            FamilyWhat::ServerHolder {
                token: Some(token),
                gone_at: Some(at),
            } => write!(
                f,
                "the server's state names {token} as the holder, its key expiring at {:.3} ms",
                at.as_secs_f64() * 1000.0
            ),
            FamilyWhat::GaveUp { error } => write!(f, "lock gave up: {error}"),
            FamilyWhat::Paused { ms } => write!(f, "PAUSE {ms} ms between the validity check and the write"),
            FamilyWhat::SawInvalid { thread } => {
                write!(f, "{thread} finds its lease run out (is_valid false): no write")
            }
            FamilyWhat::UnlockMessage { to, lost: false } => write!(f, "unlock message sent to c{to}"),
            FamilyWhat::UnlockMessage { to, lost: true } => write!(f, "unlock message to c{to} LOST"),
            FamilyWhat::Watch { to, lost: false } => write!(f, "watch event sent to c{to}"),
            FamilyWhat::Watch { to, lost: true } => write!(f, "watch event to c{to} LOST"),
            FamilyWhat::Fault(what) => write!(f, "FAULT {what}"),
            FamilyWhat::Done => write!(f, "done"),
            FamilyWhat::FairAsked { owner } => {
                write!(f, "first acquire of {owner} applied (its place in the queue order)")
            }
            FamilyWhat::FairGranted { owner } => write!(f, "lock granted to {owner}"),
            FamilyWhat::FairGivingUp { thread } => {
                write!(f, "{thread}'s wait is over: it leaves the queue, no longer waiting")
            }
            FamilyWhat::FairDropped { owner, by, script } if by == owner => {
                write!(
                    f,
                    "waiter {owner} DROPPED from the queue as stale by its own late {script}, queued again at the tail"
                )
            }
            FamilyWhat::FairDropped { owner, by, script } => {
                write!(
                    f,
                    "waiter {owner} DROPPED from the queue as stale by {by}'s {script} (not told)"
                )
            }
        }
    }
}

fn write_event(f: &mut fmt::Formatter<'_>, event: &FamilyEvent) -> fmt::Result {
    match event {
        FamilyEvent::Calling {
            thread,
            key,
            wait_ms: Some(wait_ms),
            client_us,
        } => write!(
            f,
            "{thread} calls lock({key}), waiting at most {wait_ms} ms (client {client_us} us)"
        ),
        FamilyEvent::Calling {
            thread,
            key,
            wait_ms: None,
            client_us,
        } => write!(f, "{thread} calls lock({key}) (client {client_us} us)"),
        FamilyEvent::Request {
            thread,
            command,
            client_us,
            ..
        } => write!(f, "{thread} -> {command} (client {client_us} us)"),
        FamilyEvent::Reply {
            thread,
            reply,
            client_us,
        } => match reply {
            Ok(reply) => write!(f, "{thread} <- {reply} (client {client_us} us)"),
            Err(failure) => write!(f, "{thread} <- failed: {failure} (client {client_us} us)"),
        },
        FamilyEvent::Sleep { thread, ms, kind, .. } => write!(f, "{thread} sleeps {ms} ms ({kind:?})"),
        FamilyEvent::Acquired {
            thread,
            token,
            valid_until_us,
            client_us,
            ..
        } => write!(
            f,
            "{thread} ACQUIRED token {token}, valid until client {valid_until_us} us (client {client_us} us)"
        ),
        FamilyEvent::NotAcquired { thread, why, .. } => write!(f, "{thread} not acquired: {why}"),
        FamilyEvent::Extended {
            thread,
            valid_until_us,
            client_us,
            ..
        } => write!(
            f,
            "{thread} EXTENDED, valid until client {valid_until_us} us (client {client_us} us)"
        ),
        FamilyEvent::LeaseLost { thread, .. } => write!(f, "{thread} LEASE LOST"),
        FamilyEvent::Releasing { thread, .. } => write!(f, "{thread} releasing"),
        FamilyEvent::Released { thread, outcome, .. } => write!(f, "{thread} released: {outcome:?}"),
        FamilyEvent::Notified { thread, .. } => write!(
            f,
            "{thread} woken by the server's notification (unlock message or watch)"
        ),
    }
}

impl fmt::Display for FamilyRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>10.3} ms  {:<8} {}",
            self.at.as_secs_f64() * 1000.0,
            self.node,
            self.what
        )
    }
}

/// A live lock key at the end of the run, on a logical server, by that server's clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeftKey {
    pub server: usize,
    pub key: String,
    pub token: String,
}

/// Everything the judges read besides the records.
pub struct RunFacts {
    pub end: Duration,
    pub clients_done: usize,
    /// Each client's clock (to find when a holder's clock passed its validity).
    pub client_clocks: Vec<SimClock>,
    pub left: Vec<LeftKey>,
}
