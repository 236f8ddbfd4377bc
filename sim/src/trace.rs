//! What happened in a run: one record per event, in simulated time, with the node and its clock.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cassalock::driver::LockEvent;
use cassalock::{Clock, FencingToken, LockId, Observer};
use madsim::net::rpc::{Deserialize, Request, Serialize};
use madsim::net::Endpoint;
use tokio::time::Instant;

use crate::clock::SimClock;
use crate::server_reading::{RowReading, RowServers};
use crate::wire::resource_addr;

/// Inside or leaving the critical section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    Enter,
    Exit,
}

/// One event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum What {
    Lock(LockEvent),
    /// A client starts waiting for acquisition `n` (1-based).
    Waiting {
        client: String,
        n: u32,
    },
    /// A client finished all its acquisitions.
    ClientDone {
        client: String,
    },
    /// `lock()` failed (store failures); the client tries again.
    ClientError {
        client: String,
        error: String,
    },
    /// A `try_lock()` call returned, after sending `requests` store requests (retries included):
    /// the figure C-try bounds.
    TryReturned {
        client: String,
        acquired: bool,
        requests: u64,
    },
    /// The holder asked its guard and `is_lost()` said yes, where it last said no (C-lost);
    /// `abandons`: it leaves the critical section without writing.
    LeaseLostSeen {
        client: String,
        abandons: bool,
    },
    /// The holder asked again and `is_lost()` said no after it had said yes: the guard took a
    /// loss back (C-lost asks that the answer, once true, stays true).
    LeaseLostRetracted {
        client: String,
    },
    /// Oracle (C-free): cells written by a call that failed (an acquisition or a release) stayed
    /// live on some replica for `live_for` after the call returned (zero: none was left).
    Leftover {
        thread: String,
        live_for: Duration,
    },
    /// The resource saw a write. `stale`: its token is below the highest already accepted.
    Resource {
        client: String,
        lock: String,
        token: FencingToken,
        phase: Phase,
        accepted: bool,
        stale: bool,
    },
    /// A fault was injected or healed. `node`: the node it hits (none: the whole network);
    /// `period`: the disruption it starts (`begins`) or ends.
    Fault {
        text: String,
        node: Option<String>,
        period: Disruption,
        begins: bool,
    },
    /// Oracle: a released acquisition's main cell is live again on a replica (K3).
    Resurrected {
        thread: String,
        replica: usize,
    },
    /// Oracle: the GlobalTime cell's value on a quorum, read every 100 ms.
    GlobalTime {
        value_us: u64,
    },
    /// Oracle (T1-server): the threads `lock`'s main row names as its holders (every read at
    /// the consistency level finds their cells live; empty: nobody), and from when some read
    /// no longer finds the one it names unless a write renews it first.
    ServerHolder {
        lock: String,
        threads: Vec<String>,
        gone_at: Option<Duration>,
    },
    /// A store fault injected into one call of a lock client (the per-call store-fault knobs):
    /// `applied`: the request was applied and its reply lost; otherwise it failed before being
    /// applied.
    StoreFault {
        op: String,
        applied: bool,
    },
    Note(String),
}

/// What a fault does to its node, for the timeline and the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Disruption {
    Paused,
    Killed,
    CutOff,
    Isolated,
    Lossy,
    /// Data the lock relies on was removed at the store (an operator's delete): an instant,
    /// on no one node.
    DataLost,
}

/// A record: when (simulated, since the run began), where, that node's clock, what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub at: Duration,
    pub node: String,
    pub clock_us: Option<u64>,
    pub what: What,
}

/// Collects records from every node (shared memory: the simulation's god view).
pub struct Recorder {
    start: Instant,
    /// Keep store requests, replies and sleeps (replay); otherwise only lock-level events.
    pub detailed: bool,
    records: Mutex<Vec<Record>>,
    /// Store requests made by every locker and time-service replica, recorded or not.
    requests: std::sync::atomic::AtomicU64,
    /// With reused thread ids (`Some`): the K3 oracle's side channel, filled in every run,
    /// detailed or not, without a record: each renewal's rewrite of a main cell. The oracle
    /// drains it every pass ([`Recorder::take_renewal_writes`]), so it holds at most a pass's
    /// writes.
    renewal_writes: Option<Mutex<Vec<RenewalWrite>>>,
    /// The `pause-at-rewrite` scenario's trigger, once armed ([`Recorder::arm_step_pause`]).
    step_pause: std::sync::OnceLock<StepPause>,
    /// T1-server's view of the replicas, once they run ([`Recorder::watch_rows`]).
    rows: std::sync::OnceLock<RowServers>,
}

/// A pause triggered by a step rather than a time: the first client whose renewal sends a
/// rewrite is paused before that request leaves. Its observer sees the request first
/// ([`Recorder::step_reached`], synchronously, on the client's own task), then its store takes
/// the pending pause ([`Recorder::take_step_pause`]) and waits until the injector has paused
/// the node; the request leaves when the node resumes.
struct StepPause {
    /// Still waiting for its step (it fires once a run).
    armed: std::sync::atomic::AtomicBool,
    /// The client node whose next request must wait for its pause.
    pending: Mutex<Option<String>>,
    /// To the injector: this node, and how to tell it the node is paused.
    injector: tokio::sync::mpsc::UnboundedSender<(String, tokio::sync::oneshot::Sender<()>)>,
}

/// What a client's store waits for before its request leaves: the injector has paused the node.
pub type StepPaused = tokio::sync::oneshot::Receiver<()>;

impl Recorder {
    /// `watch_renewal_writes`: keep the K3 oracle's side channel (runs with reused thread ids).
    pub fn new(start: Instant, detailed: bool, watch_renewal_writes: bool) -> Arc<Self> {
        Arc::new(Recorder {
            start,
            detailed,
            records: Mutex::new(Vec::new()),
            requests: std::sync::atomic::AtomicU64::new(0),
            renewal_writes: watch_renewal_writes.then(|| Mutex::new(Vec::new())),
            step_pause: std::sync::OnceLock::new(),
            rows: std::sync::OnceLock::new(),
        })
    }

    /// T1-server: from here on, read the locks' main rows on these replicas at the steps
    /// clients record (set once, when the replicas start).
    pub fn watch_rows(&self, rows: RowServers) {
        let set = self.rows.set(rows);
        debug_assert!(set.is_ok(), "the replicas are watched once a run");
    }

    /// Record what `lock`'s main row names now, if the replicas are watched (`always`: even if
    /// it found what the last reading of the lock did).
    pub fn read_rows(&self, lock: &LockId, always: bool) {
        let Some(rows) = self.rows.get() else {
            return;
        };
        if let Some(RowReading { threads, gone_at }) = rows.read(lock, self.elapsed(), always) {
            self.record(
                "oracle",
                None,
                What::ServerHolder {
                    lock: lock.as_str().to_owned(),
                    threads,
                    gone_at,
                },
            );
        }
    }

    /// Record what every lock's main row names now, where it changed (after a fault).
    fn read_every_row(&self) {
        if let Some(rows) = self.rows.get() {
            for lock in rows.locks() {
                self.read_rows(lock, false);
            }
        }
    }

    /// Arm the `pause-at-rewrite` trigger: the first renewal rewrite a client sends is held
    /// back while `injector` pauses that client. Armed at most once a run.
    pub fn arm_step_pause(
        &self,
        injector: tokio::sync::mpsc::UnboundedSender<(String, tokio::sync::oneshot::Sender<()>)>,
    ) {
        let armed = self.step_pause.set(StepPause {
            armed: std::sync::atomic::AtomicBool::new(true),
            pending: Mutex::new(None),
            injector,
        });
        debug_assert!(armed.is_ok(), "the step pause is armed once a run");
    }

    /// `node`'s lock code is about to send a request tagged `tag`: if it is a renewal rewrite
    /// and the trigger is armed, the pause fires on this node (the request waits for it).
    fn step_reached(&self, node: &str, tag: cassalock::algo::StepTag) {
        let Some(pause) = self.step_pause.get() else {
            return;
        };
        if cassalock::algo::lease::is_renewal_rewrite(tag)
            && pause.armed.swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            *pause.pending.lock().expect("step pause") = Some(node.to_owned());
        }
    }

    /// Called by `node`'s store before a request leaves: `Some` if the step pause fired on
    /// this node and the request must wait until the injector has paused it.
    pub fn take_step_pause(&self, node: &str) -> Option<StepPaused> {
        let pause = self.step_pause.get()?;
        let mut pending = pause.pending.lock().expect("step pause");
        if pending.as_deref() != Some(node) {
            return None;
        }
        *pending = None;
        let (paused, told) = tokio::sync::oneshot::channel();
        // The injector lives as long as the run; if it is gone the run is ending anyway.
        pause.injector.send((node.to_owned(), paused)).ok()?;
        Some(told)
    }

    /// Does this run keep the side channel of renewal writes?
    pub fn watches_renewal_writes(&self) -> bool {
        self.renewal_writes.is_some()
    }

    /// A renewal task sent a rewrite of its holder's main cell (see `renewal_writes`).
    fn note_renewal_write(&self, thread: &str, stamp_us: u64) {
        if let Some(renewal_writes) = &self.renewal_writes {
            let position = self.records.lock().expect("recorder").len();
            renewal_writes.lock().expect("renewal writes").push(RenewalWrite {
                thread: thread.to_owned(),
                stamp_us,
                position,
            });
        }
    }

    /// The renewal writes noted since the last call, in the order they were sent.
    pub fn take_renewal_writes(&self) -> Vec<RenewalWrite> {
        self.renewal_writes
            .as_ref()
            .map(|writes| std::mem::take(&mut *writes.lock().expect("renewal writes")))
            .unwrap_or_default()
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    pub fn record(&self, node: &str, clock_us: Option<u64>, what: What) {
        let record = Record {
            at: self.start.elapsed(),
            node: node.to_owned(),
            clock_us,
            what,
        };
        let fault = matches!(record.what, What::Fault { .. });
        self.records.lock().expect("recorder").push(record);
        if fault {
            self.read_every_row();
        }
    }
    pub fn requests(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn records(&self) -> Vec<Record> {
        self.records.lock().expect("recorder").clone()
    }

    pub fn with_records<T>(&self, f: impl FnOnce(&[Record]) -> T) -> T {
        f(&self.records.lock().expect("recorder"))
    }
}

/// A renewal's rewrite of its holder's main cell, for the K3 oracle (runs with reused ids).
#[derive(Clone, Debug)]
pub struct RenewalWrite {
    pub thread: String,
    /// The write's timestamp (the locker's clock, microseconds).
    pub stamp_us: u64,
    /// How many records there were when it was sent: a record at a lower index came first.
    pub position: usize,
}

/// Store requests, replies and sleeps: recorded only in detailed runs (replay).
pub fn is_detail(event: &LockEvent) -> bool {
    matches!(
        event,
        LockEvent::Request { .. } | LockEvent::Reply { .. } | LockEvent::Sleep { .. }
    )
}

impl Record {
    /// Recorded only in detailed runs (see [`is_detail`]).
    pub fn is_detail(&self) -> bool {
        matches!(&self.what, What::Lock(event) if is_detail(event))
    }
}

/// Feeds a node's `LockEvent`s to the recorder with the node's clock reading.
pub struct NodeObserver {
    pub node: String,
    pub clock: SimClock,
    pub recorder: Arc<Recorder>,
}

impl Observer for NodeObserver {
    fn on_event(&self, event: LockEvent) {
        let detail = is_detail(&event);
        if matches!(event, LockEvent::Request { .. }) && self.node.starts_with('c') {
            self.recorder
                .requests
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if let LockEvent::Request { tag, .. } = &event {
            if self.node.starts_with('c') {
                self.recorder.step_reached(&self.node, *tag);
            }
        }
        if let LockEvent::Request {
            thread,
            tag,
            request: cassalock::store::StoreOp::Write { row, timestamp, .. },
            ..
        } = &event
        {
            if LockId::is_main_row(row) && cassalock::algo::lease::is_renewal_main_rewrite(*tag) {
                self.recorder.note_renewal_write(thread.as_str(), *timestamp);
                if let Some(rows) = self.recorder.rows.get() {
                    rows.renewal_sent(thread.as_str(), row);
                }
            }
        }
        // T1-server: the main row is read as a holder's belief ends (before the event), as it
        // begins (after), and once a renewal's rewrite is answered.
        let client = self.node.starts_with('c');
        match &event {
            LockEvent::Releasing { lock, .. } | LockEvent::LeaseLost { lock, .. } if client => {
                self.recorder.read_rows(lock, false)
            }
            _ => {}
        }
        let read_after = match &event {
            LockEvent::Acquired { lock, .. } if client => Some(lock.clone()),
            LockEvent::Reply { thread, .. } if client => self
                .recorder
                .rows
                .get()
                .and_then(|rows| rows.renewal_answered(thread.as_str())),
            _ => None,
        };
        if !detail || self.recorder.detailed {
            self.recorder
                .record(&self.node, Some(self.clock.now_us()), What::Lock(event));
        }
        if let Some(lock) = read_after {
            self.recorder.read_rows(&lock, true);
        }
    }
}

/// Holder → resource: a write inside the critical section, with the fencing token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResourceWrite {
    pub client: String,
    /// The lock whose token guards this write (the resource keeps a highest token per lock).
    pub lock: String,
    pub token: String,
    pub phase: Phase,
}
impl Request for ResourceWrite {
    /// Accepted?
    type Response = bool;
    const ID: u64 = 0xCA55_0010;
}

/// The protected resource: remembers the highest token it accepted; with fencing on, refuses
/// lower ones.
pub async fn serve_resource(fencing: bool, recorder: Arc<Recorder>) {
    let endpoint = Endpoint::bind(resource_addr()).await.expect("resource address free");
    // The highest token accepted, per lock (one part of the resource per lock).
    let highest: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    endpoint.add_rpc_handler(
        move |ResourceWrite {
                  client,
                  lock,
                  token,
                  phase,
              }| {
            let highest = Arc::clone(&highest);
            let recorder = Arc::clone(&recorder);
            async move {
                let mut highest = highest.lock().expect("resource");
                let admission = cassalock::algo::admit(highest.get(&lock).map(String::as_str), &token, fencing);
                if admission.raises_highest() {
                    highest.insert(lock.clone(), token.clone());
                }
                let (accepted, stale) = (admission.accepted, admission.stale);
                if let Ok(lock) = LockId::new(&lock) {
                    recorder.read_rows(&lock, false);
                }
                recorder.record(
                    "resource",
                    None,
                    What::Resource {
                        client,
                        lock,
                        token: FencingToken(token),
                        phase,
                        accepted,
                        stale,
                    },
                );
                accepted
            }
        },
    );
    std::future::pending::<()>().await;
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Lock(event) => match event {
                LockEvent::Request {
                    thread, tag, request, ..
                } => write!(f, "{thread} {tag}: {request}"),
                LockEvent::Reply { thread, result, .. } => match result {
                    Ok(reply) => write!(f, "{thread}   -> {reply}"),
                    Err(failure) => write!(f, "{thread}   -> FAILED: {failure}"),
                },
                LockEvent::Sleep { thread, tag, ms, .. } => write!(f, "{thread} {tag}: sleep {ms} ms"),
                LockEvent::Acquired { thread, token, .. } => {
                    write!(f, "{thread} ACQUIRED, token {}", short_token(token))
                }
                LockEvent::NotAcquired { thread, outcome, .. } => write!(f, "{thread} not acquired: {outcome:?}"),
                LockEvent::Releasing { thread, .. } => write!(f, "{thread} releasing"),
                LockEvent::Released { thread, outcome, .. } => write!(f, "{thread} released: {outcome:?}"),
                LockEvent::LeaseLost { thread, why, .. } => write!(f, "{thread} LEASE LOST ({why:?})"),
                LockEvent::Reused { thread, .. } => write!(f, "{thread} names a new acquisition (thread id reused)"),
            },
            What::Waiting { client, n } => write!(f, "{client} waits for the lock (acquisition {n})"),
            What::ClientDone { client } => write!(f, "{client} done"),
            What::ClientError { client, error } => write!(f, "{client} lock() failed: {error}"),
            What::TryReturned {
                client,
                acquired,
                requests,
            } => write!(
                f,
                "{client} try_lock() returned {} after {requests} store requests",
                if *acquired { "with the lock" } else { "without the lock" }
            ),
            What::LeaseLostSeen { client, abandons } => write!(
                f,
                "{client} sees is_lost() = true{}",
                if *abandons {
                    " and abandons the critical section"
                } else {
                    ""
                }
            ),
            What::LeaseLostRetracted { client } => write!(
                f,
                "{client} sees is_lost() = false again: the guard took back the loss it reported (C-lost)"
            ),
            What::Leftover { thread, live_for } => write!(
                f,
                "oracle: cells of {thread}'s failed call stayed live {:.3} s after it returned (C-free)",
                live_for.as_secs_f64()
            ),
            What::Resource {
                client,
                lock,
                token,
                phase,
                accepted,
                stale,
            } => {
                let verdict = match (accepted, stale) {
                    (true, false) => "accepted",
                    (true, true) => "ACCEPTED A STALE TOKEN (damage)",
                    (false, _) => "REFUSED (stale token)",
                };
                // The one-lock runs print as they always did.
                let part = if lock == crate::wire::LOCK {
                    String::new()
                } else {
                    format!(" {lock}")
                };
                write!(
                    f,
                    "resource: {client} {phase:?}{part} token {} {verdict}",
                    short_token(token)
                )
            }
            What::Fault { text, .. } => write!(f, "FAULT {text}"),
            What::Resurrected { thread, replica } => write!(
                f,
                "oracle: released {thread}'s main cell is live again on r{replica} (K3)"
            ),
            What::GlobalTime { value_us } => write!(f, "oracle: GlobalTime = {value_us}"),
            What::ServerHolder { lock, threads, gone_at } => {
                // The one-lock runs name no lock.
                let part = if lock == crate::wire::LOCK {
                    String::new()
                } else {
                    format!(" of {lock}")
                };
                match (threads.as_slice(), gone_at) {
                    ([], _) => write!(f, "oracle: the main row{part} names nobody as the holder"),
                    (_, Some(gone_at)) => write!(
                        f,
                        "oracle: the main row{part} names {} (its cell gone at {:.6}s unless renewed)",
                        threads.join(", "),
                        gone_at.as_secs_f64()
                    ),
                    (_, None) => write!(f, "oracle: the main row{part} names {}", threads.join(", ")),
                }
            }
            What::StoreFault { op, applied } => {
                if *applied {
                    write!(f, "STORE FAULT {op} applied, its reply lost (the client times out)")
                } else {
                    write!(f, "STORE FAULT {op} failed before being applied (Unavailable)")
                }
            }
            What::Note(text) => f.write_str(text),
        }
    }
}

/// A token as "#counter/thread" (the library's counter token), or as "seconds.micros|thread"
/// relative to the simulated epoch (the listings' queue column).
pub fn short_token(token: &FencingToken) -> String {
    if let Some((counter, thread)) = cassalock::algo::fence::parse_counter_token(token.as_str()) {
        return format!("#{counter}/{thread}");
    }
    match cassalock::algo::queue_column::parse_queue_column(token.as_str()) {
        Some((time_us, thread)) => {
            let since = time_us as i128 - crate::clock::EPOCH_US as i128;
            format!("{:.6}|{thread}", since as f64 / 1e6)
        }
        None => token.to_string(),
    }
}

/// Print records as numbered lines.
pub fn render(records: &[Record]) -> String {
    let mut out = String::new();
    for (i, record) in records.iter().enumerate() {
        let clock = match record.clock_us {
            Some(us) => format!("{:>12.6}", (us as i128 - crate::clock::EPOCH_US as i128) as f64 / 1e6),
            None => format!("{:>12}", "-"),
        };
        let _ = writeln!(
            out,
            "{:>6} {:>11.6}s {:<9} {clock}  {}",
            i + 1,
            record.at.as_secs_f64(),
            record.node,
            record.what
        );
    }
    out
}
