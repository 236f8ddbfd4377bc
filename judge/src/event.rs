//! The event record: what happened in one lock run, as every driver writes it.
//!
//! A record is JSON lines. The first line is a [`Header`]: the schema's name and version, who
//! wrote it (a model trace, the simulator, the real runner), which lock, what the instants
//! count, and the facts of the run the events alone cannot say (how many clients, when the run
//! stopped, the bounds the contract items are judged against). Every other line is one
//! [`Event`]: when it happened on the record's clock ([`Event::at_ns`]), where (the node: a
//! client `c3`, a server, the resource), that node's own clock when it knew ([`Event::clock_us`]),
//! and what ([`What`]).
//!
//! The vocabulary is a lock's life seen from outside, the same for every family: a client
//! invokes a call; its lock code answers `acquired` (with its token and, where the lock has
//! one, the validity it believes), `not_acquired`, `extended`, `lease_lost` (the library told
//! the holder), `releasing` (said before the release call, so a handoff is not taken for an
//! overlap) and `released`; the resource accepts or refuses a write carrying a token; faults
//! begin and end. Oracles that look at the servers from outside (cells left behind, a released
//! cell alive again) and a run's detail (each store request, reply and sleep, for a timeline)
//! have kinds of their own; the judge of a claim reads only the kinds its definition names.
//!
//! `docs/events.md` defines every field. [`read`] refuses a record of another schema or a
//! newer version, and names the line of anything it cannot read.

use std::fmt;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

/// The schema's name, in every header.
pub const SCHEMA: &str = "cassalock-events";

/// The version this build writes and reads. A record of a later version is refused.
pub const VERSION: u32 = 1;

/// The longest line [`read`] accepts, bytes: a line past it is malformed, not a reason to
/// hold gigabytes in memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What wrote the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Driver {
    /// A model checker's trace (a counterexample or a witness).
    Model,
    /// The deterministic simulator (one seed).
    Simulator,
    /// The real runner, against local servers.
    Real,
}

/// What [`Event::at_ns`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// Simulated time since the run began (the simulation's god view, no node's clock).
    SimulatedSinceStart,
    /// The machine's wall clock since the Unix epoch (every process on it reads the same one).
    WallSinceEpoch,
    /// The model's clock ticks, one tick a second.
    ModelTicks,
    /// The steps of a model's path, one step a second: a drawing's axis
    /// ([`crate::steps::by_steps`]); no model writes it.
    ModelSteps,
}

/// The first line of a record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// [`VERSION`] of the build that wrote it.
    pub version: u32,
    pub driver: Driver,
    /// The lock, by its name on the command line (`queue`, `redisson-fair`).
    pub lock: String,
    pub clock: Clock,
    /// The command that reruns the run, where one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// What the judge needs that no event says.
    pub run: RunFacts,
}

impl Header {
    pub fn new(driver: Driver, lock: impl Into<String>, clock: Clock, run: RunFacts) -> Self {
        Header {
            schema: SCHEMA.to_owned(),
            version: VERSION,
            driver,
            lock: lock.into(),
            clock,
            replay: None,
            run,
        }
    }
}

/// The facts of a run beside its events: its shape, when it stopped, and the bounds of the
/// claims that have one, as the driver computed them from the lock's settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFacts {
    /// How many clients the workload started (`c0` .. `c{clients-1}`).
    pub clients: usize,
    /// When the run stopped, on the record's clock.
    pub end_ns: u64,
    /// The run's claims are judged under the rules of this harness. Each harness states what a
    /// holder's belief is and which claims apply; [`Rules`] says how they differ.
    pub rules: Rules,
    /// What the driver calls the run ("pause / queue algorithm / seed 0"), for titles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Every node of the run, in the order a timeline draws them (empty: the clients, then
    /// every node an event names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// The clocks that do not read the record's clock, as the driver set them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clocks: Vec<NodeClock>,
}

/// How a node's clock reads against the record's clock: `offset_us` ahead (negative: behind)
/// at the start, `drift_ppm` parts per million faster, stepping by `step_us` at each jump, and
/// every reading off by up to `error_us` either way.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeClock {
    pub node: String,
    #[serde(default)]
    pub offset_us: i64,
    #[serde(default)]
    pub drift_ppm: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jumps: Vec<ClockJump>,
    #[serde(default)]
    pub error_us: u64,
    /// With probability `error_tail_ppm` per million, a reading's error is uniform in
    /// ±`error_tail_us` instead.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub error_tail_us: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub error_tail_ppm: u32,
}

fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// A step of a node's clock, `at_ms` into the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockJump {
    pub at_ms: u64,
    pub step_us: i64,
}

/// The judging rules a run asks for: where the two simulators' definitions of a claim still
/// differ, the record says which applies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "harness", rename_all = "kebab-case")]
pub enum Rules {
    /// The row-lock simulator's: beliefs end at `releasing` or the holder's death, the resource
    /// decides staleness, the contract items have computed bounds.
    Rows(RowRules),
    /// The simulator of the other families: beliefs end at `releasing`, `lease_lost` or the
    /// holder's clock passing its validity; staleness from the order of acquisitions.
    Families(FamilyRules),
    /// A run seen from outside (the real runner): what the clients reported and the resource
    /// saw; T1-belief and T1-resource, and the figures of the cycle and of fairness.
    Observed(ObservedRules),
}

impl Default for Rules {
    fn default() -> Self {
        Rules::Rows(RowRules::default())
    }
}

/// [`Rules::Rows`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowRules {
    /// Locks each acquisition takes (C-release is not judged with more than one).
    pub locks_per_acquisition: usize,
    /// Locks the clients take, each acquisition one or all of them (C-release is not judged
    /// with more than one); 0 where the record does not say: as `locks_per_acquisition`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub locks: usize,
    /// The call the workload makes.
    pub call: Call,
    /// The resource refuses a token below the highest it accepted.
    pub fencing: bool,
    /// Acquisitions have a deadline (`max_wait_ms`): call failures include give-ups.
    pub deadline: bool,
    /// Clients killed and never restarted: not expected to finish (T2).
    pub killed_for_good: Vec<usize>,
    /// Planned faults that never fired because the run ended first.
    pub faults_planned_after_end: usize,
    /// A pause planned at a renewal's rewrite (it fires at a step, not a time).
    pub step_pause_planned: bool,
    /// The contract's bounds (`None` where the run's settings were invalid: no client ran).
    pub bounds: Option<ContractBounds>,
}

/// The contract's bounds in one run, computed from its configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractBounds {
    /// C-try: store requests in one `try_lock` call (`None`: no bound for this lock).
    pub try_requests: Option<u64>,
    /// C-free: how long a failed call's cells may stay live (with the oracle's period).
    pub leftover_ns: u64,
    /// C-release: from a release's return to the next acquisition.
    pub handover_ns: u64,
    /// C-lost: from another client's acquisition to the holder learning it (with one check
    /// period); `None`: leases never expire.
    pub lost_ns: Option<u64>,
    /// How long after a fault its effects may last: one request with its retries.
    pub fault_aftermath_ns: u64,
}

/// [`Rules::Families`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyRules {
    /// The lock's token is a fencing token (C-token; the resource refuses a lower one).
    pub fencing_tokens: bool,
    /// A fair queue: F-order and F-drop apply.
    pub fair_queue: bool,
    /// Servers that must still hold a released key for C-release to fail (a majority for
    /// Redlock, else 1).
    pub release_quorum: usize,
    /// One client on a free lock: it must never give up (T2-free).
    pub lone_client: bool,
    /// C-lost's bound (a watchdog's period, a request timeout and slack); `None`: no watchdog.
    pub lost_bound_ms: Option<u64>,
    /// The run's bound, for T2's text.
    pub bound_ms: u64,
    /// C-wait: how long past its deadline a `lock()` call may return (the lock's last sleep,
    /// the request under way and one clean-up request, and slack); `None`: the lock's calls
    /// have no deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_past_ms: Option<u64>,
}

/// [`Rules::Observed`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedRules {
    /// The resource refuses a token below the highest it accepted.
    pub fencing: bool,
    /// `lease_lost` ends the holder's belief: the library's notice reaches the code that uses
    /// the lock (a watchdog's, an extension's answer).
    #[serde(default)]
    pub lease_lost_ends_it: bool,
    /// T2 within a bound: every `lock` or `try_lock` call answers within this many
    /// milliseconds (the runner's longest wait for an answer); none: T2 is not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_bound_ms: Option<u64>,
}

/// The call a workload makes to acquire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// Wait until acquired (or a deadline).
    #[default]
    Lock,
    /// Answer at once, without waiting for another owner.
    TryLock,
}

/// One line after the header.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// When, on the record's clock ([`Header::clock`]), nanoseconds.
    pub at_ns: u64,
    /// Where: a client (`c0`), a server, `resource`, `faults`, `oracle`.
    pub node: String,
    /// The node's own clock when it knew, microseconds (absent where the node has none or the
    /// driver did not read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_us: Option<u64>,
    #[serde(flatten)]
    pub what: What,
}

/// How an acquisition ended without the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotAcquired {
    /// The lock was taken and the call does not wait (a `try_lock`'s no).
    Taken,
    /// The call's deadline ran out.
    TimedOut,
    /// The servers kept failing; the call gave up.
    Failed,
}

/// What the next caller got at the end of a run ([`What::NextCaller`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NextCallerGot {
    /// It acquired within its wait: nothing of the run kept the lock.
    Acquired,
    /// Its wait ran out: something kept the lock though nobody held it.
    Taken,
    /// Its call failed (the server, the library): nothing is known.
    Failed,
    /// Its call did not return within the run's bound (an `unanswered` event says so too):
    /// nothing is known.
    NoAnswer,
}

/// What a failed call may have left on the servers (contract item C-free).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Left {
    /// Nothing: it wrote nothing, or deleted all it wrote.
    Nothing,
    /// It tried to delete what it wrote and a delete failed too.
    CleanUpFailed,
    /// It did not try.
    NotCleanedUp,
}

/// How a release ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseOutcome {
    /// The library said the lock was released.
    Released,
    /// It said the lock was no longer ours (expired or taken).
    NotHeld,
    /// It cannot tell released from already gone.
    GoneEitherWay,
    /// It acted on the key without knowing whose it was: it may have freed another holder's
    /// lock.
    ActedBlind,
    /// It failed (the servers did not answer).
    Failed,
}

/// A disruption a fault puts on its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disruption {
    Paused,
    Killed,
    CutOff,
    Isolated,
    Lossy,
    /// Data the lock relies on was removed at the store (an operator deleted the lock's rows
    /// or keys): an instant, with no target.
    DataLost,
}

/// A limit of a driver that, once hit, leaves some claim undecided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The K3 oracle dropped a renewal stamp it had no room for: K3 undecided for a release.
    K3Oracle,
    /// The simulated network's queues dropped messages no fault planned: the run is not the
    /// one its scenario describes, and none of its checks passes.
    NetworkQueues,
}

/// A write to the resource inside the critical section, before or after the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Enter,
    Exit,
}

/// A message a server sends to a client to wake it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wake {
    /// Redisson's unlock message on the lock's channel.
    Unlock,
    /// A ZooKeeper or etcd watch.
    Watch,
}

/// What happened. Threads (`c3-0:7`) name one acquisition of one client; clients (`c3-0`) a
/// process incarnation; nodes (`c3`) the machine it runs on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum What {
    // A client's calls.
    /// A client starts trying to acquire its `acquisition`-th hold (1-based).
    Invoke {
        client: String,
        call: Call,
        acquisition: u32,
    },
    /// One `lock()` call of an acquisition begins (the thread it runs as); `wait_ms`: how long
    /// it waits before it gives up, if it has a deadline (C-wait). The event's clock is the
    /// caller's.
    Calling {
        thread: String,
        lock: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait_ms: Option<u64>,
    },
    /// The lock is held, with this token. Where the lock has a validity, the holder believes
    /// it until its own clock reads `valid_until_us`, which happens at `valid_until_at_ns` on
    /// the record's clock.
    Acquired {
        thread: String,
        lock: String,
        token: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        valid_until_us: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        valid_until_at_ns: Option<u64>,
    },
    /// An acquisition ended without the lock; `why` as the library said it.
    NotAcquired {
        thread: String,
        lock: String,
        outcome: NotAcquired,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        left: Option<Left>,
        why: String,
    },
    /// The holder's validity moved.
    Extended {
        thread: String,
        lock: String,
        valid_until_us: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        valid_until_at_ns: Option<u64>,
    },
    /// The library told the holder its lock is lost (a renewal found it gone).
    LeaseLost { thread: String, lock: String, why: String },
    /// Release begins: from here the holder no longer uses the lock.
    Releasing { thread: String, lock: String },
    Released {
        thread: String,
        lock: String,
        outcome: ReleaseOutcome,
        why: String,
    },
    /// An acquisition reuses a thread id an earlier, ended one used; its writes are stamped
    /// above `stamps_above_us`.
    Reused {
        thread: String,
        lock: String,
        stamps_above_us: u64,
    },
    /// A `try_lock` call returned after `requests` store requests.
    TryReturned {
        client: String,
        acquired: bool,
        requests: u64,
    },
    /// A call failed (the servers, or a deadline); the client tries again.
    CallFailed { client: String, error: String },
    /// The client finished its acquisitions.
    Done { client: String },
    /// The runner waited `waited_ms` for the answer to `client`'s `call` and got none, and
    /// stopped the client (T2 within the run's bound).
    Unanswered { client: String, call: Call, waited_ms: u64 },
    /// The holder asked whether it lost the lock and heard yes; `abandons`: it leaves the
    /// critical section without writing.
    LostSeen { client: String, abandons: bool },
    /// It asked again and heard no after a yes: the library took the loss back.
    LostRetracted { client: String },
    /// Its own validity check before a write found the lease run out: it does not write.
    SawInvalid { thread: String },
    /// The client's process stops for `ms` between its validity check and its write.
    ClientPaused { ms: u64 },

    // The resource.
    /// A write reached the resource with `token`. `accepted` and `stale` where the resource
    /// judged it; `acquisition`: the order number of the acquisition that holds that token.
    Write {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lock: Option<String>,
        token: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<Phase>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        accepted: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stale: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        acquisition: Option<u64>,
    },
    /// An acquisition's place in the order of acquisitions.
    Numbered { token: String, acquisition: u64 },

    // Faults.
    /// A fault began (`begins`) or ended. `target`: the node it hits (none: the network);
    /// `disruption`: what it does there; `at_step`: it was planned at a step of the lock code
    /// (a renewal's rewrite), not at a time.
    Fault {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        disruption: Option<Disruption>,
        begins: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        at_step: bool,
    },
    /// A planned fault never fired (a holder fault that found no holder).
    FaultUnfired { text: String },
    /// A limit of the driver was hit: what it stands for is undecided, never a pass.
    LimitHit { limit: Limit, text: String },
    /// One store call of a client failed before being applied, or was applied and its reply
    /// lost.
    StoreFault { op: String, applied: bool },
    /// A server sent a wake-up message to client `to`; `lost`: it never arrives.
    WakeMessage { wake: Wake, to: usize, lost: bool },

    // Oracles: the servers seen from outside.
    /// Cells of a failed call stayed live this long after it returned (zero: none was left).
    Leftover { thread: String, live_for_ns: u64 },
    /// A released acquisition's main cell is live again on a replica (K3).
    Resurrected { thread: String, replica: usize },
    /// The time service's value on a quorum.
    GlobalTime { value_us: u64 },
    /// The server's own state names `holder`'s token as the lock's holder now (absent: nobody),
    /// as the lock reads its server, and names nobody from `gone_at_ns` on the record's clock
    /// (its key expires then) unless a later reading says otherwise (T1-server,
    /// [`crate::server_state`]). A server that names holders by thread rather than by token
    /// (a row lock's main row, whose cells are named by their threads) names `threads`.
    ServerHolder {
        lock: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        holder: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        threads: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gone_at_ns: Option<u64>,
    },
    /// A release said released, yet these servers still held its token's key.
    KeptAfterRelease { token: String, servers: Vec<usize> },
    /// At the end of the run, server `server` still held `token`'s key.
    LeftAtEnd { token: String, server: usize },
    /// Once every call of the workload had returned and every acquisition's release had been
    /// answered, one more client (node `next`, started with the others and idle until then)
    /// asked for the lock with `try_lock` waiting `wait_ms`: what it got (`taken`: the lock
    /// was not free; `failed`: its call failed, so nothing is known), and what its library said.
    NextCaller {
        wait_ms: u64,
        got: NextCallerGot,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        why: String,
    },
    /// A fair queue's server: the first acquire of the call `owner` reached it.
    FairAsked { owner: String },
    /// It granted the lock to `owner`.
    FairGranted { owner: String },
    /// A fair queue's client: the lock() call `thread`'s wait ran out and it sends the request
    /// that leaves the queue; from here it no longer waits (F-order, F-drop).
    FairGivingUp { thread: String },
    /// Script `script` of `by` removed `owner` from the queue as stale (nobody tells it).
    FairDropped { owner: String, by: String, script: String },

    // Detail, for timelines: every request, reply and sleep of the lock code.
    /// A step of the lock code sent a request. `renewal`: a lease renewal's step.
    Request {
        thread: String,
        step: String,
        command: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        renewal: bool,
    },
    /// Its answer (`reply`) or failure (`failure`).
    Reply {
        thread: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<String>,
    },
    /// A step sleeps.
    Sleep {
        thread: String,
        step: String,
        ms: u64,
        sleep: String,
    },
    /// A sleep until notified ended early: a message arrived.
    Notified { thread: String, key: String },
    /// Free text a driver wants in the record (a limit hit, a fault that did not fire).
    Note { text: String },
}

impl What {
    /// A request, reply, sleep or notification: detail that no claim's judge reads.
    pub fn is_detail(&self) -> bool {
        matches!(
            self,
            What::Request { .. } | What::Reply { .. } | What::Sleep { .. } | What::Notified { .. }
        )
    }
}

/// Why a record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("the record is empty: its first line must be the header ({SCHEMA})")]
    Empty,
    #[error("line {line}: {source}")]
    Io {
        line: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("line {line} is {bytes} bytes or longer, over the limit of {MAX_LINE_BYTES}")]
    LineTooLong { line: usize, bytes: usize },
    #[error("line 1 is not a header of {SCHEMA}: {source}")]
    BadHeader {
        #[source]
        source: serde_json::Error,
    },
    #[error("line 1 names the schema {found:?}, not {SCHEMA}")]
    OtherSchema { found: String },
    #[error("the record is of version {found}; this build reads up to version {VERSION}: use a newer cassalock")]
    NewerVersion { found: u32 },
    #[error("line {line} is not an event: {source}")]
    BadEvent {
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("line {line}: the event at {at_ns} ns comes before the one on the line above ({previous_ns} ns); events are in time order")]
    OutOfOrder { line: usize, at_ns: u64, previous_ns: u64 },
}

/// A whole record.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub header: Header,
    pub events: Vec<Event>,
}

/// Read a record: the header, then every event, in time order.
pub fn read(input: impl BufRead) -> Result<Record, ReadError> {
    let mut reader = Reader::new(input)?;
    let events = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok(Record {
        header: reader.header,
        events,
    })
}

/// A record read one event at a time: its header first ([`Reader::new`]), then its events as
/// an iterator, each checked as [`read`] checks it. Holds one line at a time, so a judge that
/// keeps bounded state reads a record of any length in bounded memory.
pub struct Reader<R> {
    pub header: Header,
    lines: Lines<R>,
    previous_ns: u64,
    /// Events read so far.
    pub events_read: u64,
    failed: bool,
}

impl<R: BufRead> Reader<R> {
    /// Read and check the header.
    pub fn new(input: R) -> Result<Self, ReadError> {
        let mut lines = Lines::new(input);
        let first = lines.next_line()?.ok_or(ReadError::Empty)?;
        let header: Header = serde_json::from_str(&first).map_err(|source| ReadError::BadHeader { source })?;
        if header.schema != SCHEMA {
            return Err(ReadError::OtherSchema { found: header.schema });
        }
        if header.version > VERSION {
            return Err(ReadError::NewerVersion { found: header.version });
        }
        Ok(Reader {
            header,
            lines,
            previous_ns: 0,
            events_read: 0,
            failed: false,
        })
    }

    fn next_event(&mut self) -> Result<Option<Event>, ReadError> {
        while let Some(text) = self.lines.next_line()? {
            if text.trim().is_empty() {
                continue;
            }
            let line = self.lines.number;
            let event: Event = serde_json::from_str(&text).map_err(|source| ReadError::BadEvent { line, source })?;
            if event.at_ns < self.previous_ns {
                return Err(ReadError::OutOfOrder {
                    line,
                    at_ns: event.at_ns,
                    previous_ns: self.previous_ns,
                });
            }
            self.previous_ns = event.at_ns;
            self.events_read += 1;
            return Ok(Some(event));
        }
        Ok(None)
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Event, ReadError>;

    /// The next event; after an error, nothing more.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.next_event().transpose();
        self.failed = matches!(next, Some(Err(_)));
        next
    }
}

/// Lines of at most [`MAX_LINE_BYTES`], numbered from 1.
struct Lines<R> {
    input: R,
    number: usize,
}

impl<R: BufRead> Lines<R> {
    fn new(input: R) -> Self {
        Lines { input, number: 0 }
    }

    fn next_line(&mut self) -> Result<Option<String>, ReadError> {
        self.number += 1;
        let line = self.number;
        let mut bytes = Vec::new();
        let limit = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX) + 1;
        let read = std::io::Read::take(&mut self.input, limit)
            .read_until(b'\n', &mut bytes)
            .map_err(|source| ReadError::Io { line, source })?;
        if read == 0 {
            return Ok(None);
        }
        if bytes.len() > MAX_LINE_BYTES {
            return Err(ReadError::LineTooLong {
                line,
                bytes: bytes.len(),
            });
        }
        let text = String::from_utf8(bytes).map_err(|_| ReadError::Io {
            line,
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"),
        })?;
        Ok(Some(text.trim_end_matches(['\n', '\r']).to_owned()))
    }
}

/// Write a record: the header, then one line per event.
pub fn write(out: &mut impl Write, header: &Header, events: &[Event]) -> std::io::Result<()> {
    write_line(out, header)?;
    for event in events {
        write_line(out, event)?;
    }
    out.flush()
}

fn write_line(out: &mut impl Write, value: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(std::io::Error::from)?;
    out.write_all(b"\n")
}

impl fmt::Display for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Driver::Model => "model",
            Driver::Simulator => "simulator",
            Driver::Real => "real",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header::new(
            Driver::Simulator,
            "queue",
            Clock::SimulatedSinceStart,
            RunFacts {
                clients: 2,
                end_ns: 5_000_000_000,
                rules: Rules::Rows(RowRules {
                    locks_per_acquisition: 1,
                    ..RowRules::default()
                }),
                name: Some("a run".into()),
                nodes: vec!["c0".into(), "c1".into(), "r0".into()],
                clocks: vec![NodeClock {
                    node: "r0".into(),
                    offset_us: 30_000_000,
                    jumps: vec![ClockJump {
                        at_ms: 100,
                        step_us: -1,
                    }],
                    ..NodeClock::default()
                }],
            },
        )
    }

    fn event(at_ns: u64, what: What) -> Event {
        Event {
            at_ns,
            node: "c0".into(),
            clock_us: Some(at_ns / 1000),
            what,
        }
    }

    fn events() -> Vec<Event> {
        vec![
            event(
                1,
                What::Invoke {
                    client: "c0-0".into(),
                    call: Call::Lock,
                    acquisition: 1,
                },
            ),
            event(
                2,
                What::Acquired {
                    thread: "c0-0:0".into(),
                    lock: "shared".into(),
                    token: "7".into(),
                    valid_until_us: None,
                    valid_until_at_ns: None,
                },
            ),
            event(
                3,
                What::Fault {
                    text: "pause c0".into(),
                    target: Some("c0".into()),
                    disruption: Some(Disruption::Paused),
                    begins: true,
                    at_step: false,
                },
            ),
        ]
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let mut bytes = Vec::new();
        write(&mut bytes, &header(), &events()).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.starts_with("{\"schema\":\"cassalock-events\",\"version\":1,"),
            "{text}"
        );
        assert!(text.lines().nth(2).unwrap().contains("\"kind\":\"acquired\""), "{text}");
        let record = read(&bytes[..]).unwrap();
        assert_eq!(record.header, header());
        assert_eq!(record.events, events());
    }

    #[test]
    fn a_broken_record_is_refused_naming_its_line() {
        let refuse = |text: &str| read(text.as_bytes()).unwrap_err().to_string();
        assert!(refuse("").contains("empty"));
        assert!(refuse("{}").starts_with("line 1 is not a header"));
        let mut head = serde_json::to_string(&header()).unwrap();
        head.push('\n');
        let other = head.replace("cassalock-events", "other");
        assert!(refuse(&other).contains("\"other\""));
        let newer = head.replace("\"version\":1", "\"version\":2");
        assert!(refuse(&newer).contains("version 2"));
        let garbage = format!("{head}{{\"at_ns\":1,\"node\":\"c0\",\"kind\":\"acquired\"}}\n");
        assert!(
            refuse(&garbage).starts_with("line 2 is not an event"),
            "{}",
            refuse(&garbage)
        );
        let backwards = format!(
            "{head}{}\n{}\n",
            serde_json::to_string(&events()[1]).unwrap(),
            serde_json::to_string(&events()[0]).unwrap()
        );
        assert!(
            refuse(&backwards).starts_with("line 3: the event at 1 ns"),
            "{}",
            refuse(&backwards)
        );
        let long = format!("{head}{}\n", "x".repeat(MAX_LINE_BYTES + 10));
        assert!(refuse(&long).starts_with("line 2 is"), "{}", refuse(&long));
    }
}
