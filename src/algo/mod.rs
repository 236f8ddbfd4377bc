//! The thesis's algorithms, each written once as a sans-IO state machine.
//!
//! A machine owns no clock, no randomness and no I/O. Its driver calls
//! [`Machine::resume`] with an [`Input`] (the reply to what the machine last asked for) and the
//! client's clock reading; the machine answers with a [`Step`]: an [`Action`] for the driver to
//! carry out, tagged with the thesis step that asked for it. Three drivers run these machines
//! unchanged: the async [`crate::driver`] (in-memory store, simulated cluster, real cluster),
//! and the stateright models in `models/`.
//!
//! | file | thesis |
//! |---|---|
//! | [`old_shadow_lock`] | Listings 3–4: TryLock / GetLock over a main and a shadow row |
//! | [`queue_column`] | Listing 5: the queue column name; lock ids, thread ids and rows |
//! | [`queue_get_lock`] | Listing 6: the fair queue GetLock |
//! | [`queue_try_get_lock`] | Listing 7: TryGetLock |
//! | [`lease`] | Section 5.3: lease renewal and release |
//! | [`lifecycle`] | one acquisition's life: acquire, renew while held, release; what the holder knows about its lease |
//! | [`global_time`] | Listing 8 and section 5.4: TryUpdateGlobalTime and the time client |
//! | [`time_service`] | section 5.4: a time-service replica runs Listing 8 once per period |
//! | [`retry`] | ours: what every machine does when the store fails |
//! | [`held_columns`] | ours: every queue column a machine holds, for the model checker's renaming of times |
//! | [`server_holder`] | ours: who a lock's server says holds it, read from the server's state (T1-server) |
//! | [`clean_up`] | ours: a failed acquisition deletes what it wrote (C-free) |
//! | [`contract`] | ours: the bounds each public call promises (docs/contract.md) |
//! | [`family`] | ours: what the other families' lease locks share, so one driver runs them: acquire, extend, release, and how each machine's outcome reads |
//! | [`memcached`] | not the thesis's: the Memcached `add` lock, its release and extension as usually written and checked with `gets` + `cas` |
//! | [`redis`] | not the thesis's: the Redis family's locks over [`crate::store::redis_keyspace`] (`SET NX PX`; more to come) |
//!
//! Steps that are ours rather than the thesis's are tagged [`Source::Ours`] and say why.

pub mod clean_up;
pub mod contract;
pub mod etcd;
pub mod family;
pub mod fence;
pub mod global_time;
pub mod held_columns;
pub mod lease;
pub mod lifecycle;
pub mod memcached;
pub mod old_shadow_lock;
pub mod queue_column;
pub mod queue_get_lock;
pub mod queue_try_get_lock;
pub mod redis;
pub mod retry;
pub mod server_holder;
#[cfg(test)]
pub(crate) mod testkit;
pub mod time_service;
pub mod zookeeper;

use std::fmt;

use crate::store::{StoreCommand, StoreFailure, StoreReply};

pub use queue_column::{admit, Admission, FencingToken, LockId, ThreadId};

/// Where a step comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// Listing 3: Cassandra.TryLock (the old algorithm).
    L3,
    /// Listing 4: Cassandra.GetLock (the old algorithm).
    L4,
    /// Listing 5: the queue column name.
    L5,
    /// Listing 6: GetLock (the queue algorithm).
    L6,
    /// Listing 7: TryGetLock.
    L7,
    /// Listing 8: TryUpdateGlobalTime.
    L8,
    /// Section 5.3: lease renewal and release.
    Lease,
    /// Section 5.4: asking the time service for the time.
    TimeClient,
    /// The Redis documentation's single-instance lock (`SET NX PX`, compare-and-delete), as
    /// the seeds 001–003 describe it.
    Redis,
    /// The Memcached `add` lock as usually written (`add`, `delete`, `touch`).
    Memcached,
    /// Redisson's `RLock`: the hash lock's scripts, the pub/sub wait, the watchdog (seed 001).
    Redisson,
    /// Redlock over N Redis masters, as the Redis documentation gives it (seeds 002, 003).
    Redlock,
    /// Curator's `InterProcessMutex` recipe on ZooKeeper.
    Curator,
    /// etcd's `clientv3/concurrency` session and mutex.
    Etcd,
    /// Not in the thesis: our addition, explained in the step's note.
    Ours,
}

/// The thesis step that produced an action: "L6.2 read the queue head".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepTag {
    pub source: Source,
    /// The step number in the listing (0 where the source has no numbering).
    pub step: u8,
    pub note: &'static str,
}

impl StepTag {
    pub const fn new(source: Source, step: u8, note: &'static str) -> Self {
        StepTag { source, step, note }
    }
}

impl fmt::Display for StepTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match self.source {
            Source::L3 => "L3",
            Source::L4 => "L4",
            Source::L5 => "L5",
            Source::L6 => "L6",
            Source::L7 => "L7",
            Source::L8 => "L8",
            Source::Lease => "5.3",
            Source::TimeClient => "5.4",
            Source::Redis => "redis",
            Source::Memcached => "memcached",
            Source::Redisson => "redisson",
            Source::Redlock => "redlock",
            Source::Curator => "curator",
            Source::Etcd => "etcd",
            Source::Ours => "ours",
        };
        if self.step == 0 {
            write!(f, "{source} {}", self.note)
        } else {
            write!(f, "{source}.{} {}", self.step, self.note)
        }
    }
}

/// What the driver hands a machine: the answer to the machine's last action.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Input<R = StoreReply> {
    /// The first call.
    Start,
    /// The store answered the last [`Action::Store`] (a Cassandra family machine's reply is a
    /// [`StoreReply`]; another family's is its own store's reply type).
    Reply(R),
    /// The store failed the last [`Action::Store`] (after [`retry::Retrying`]'s retries).
    Failed(StoreFailure),
    /// The last [`Action::Sleep`] ended.
    Woke,
    /// A [`SleepKind::Renewal`] sleep was cut short: the lock is being released.
    StopRequested,
    /// A uniform draw from `0..=max_ms` for the last [`Action::Draw`].
    Drawn(u64),
    /// A reading of the time source, in microseconds, for the last [`Action::ReadTime`].
    Time(u64),
    /// The renewal task has stopped (or, in the K3 variant, was told to stop).
    RenewalStopped,
}

/// Why a machine sleeps. Drivers treat all kinds alike except [`SleepKind::Renewal`], which a
/// stop request may cut short, and [`SleepKind::UntilNotified`], which a message may cut short;
/// the model checker treats only renewal sleeps as timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SleepKind {
    /// Waiting for our turn in the queue.
    Poll,
    /// The old algorithm's random backoff (Listing 4).
    Backoff,
    /// Before retrying a failed store request.
    Retry,
    /// The renewal task's wait between rewrites (interruptible by release).
    Renewal,
    /// Redisson's waiter: sleep until the holder's key expires, unless the lock's unlock
    /// message arrives first (the driver then ends the sleep early with [`Input::Woke`]; a lost
    /// message costs the rest of the sleep).
    UntilNotified,
}

/// What a machine asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action<T, C = StoreCommand> {
    /// Execute a store command; answer with [`Input::Reply`] or [`Input::Failed`].
    Store(C),
    /// Sleep on the client's clock; answer with [`Input::Woke`] (or [`Input::StopRequested`]).
    Sleep { ms: u64, kind: SleepKind },
    /// Draw a uniform integer in `0..=max_ms`; answer with [`Input::Drawn`].
    Draw { max_ms: u64 },
    /// Read the time source (local clock or the global time service); answer [`Input::Time`].
    ReadTime,
    /// Stop the renewal task; with `wait`, only answer [`Input::RenewalStopped`] once it has
    /// finished its current iteration and exited.
    StopRenewal { wait: bool },
    /// The machine has finished.
    Done(T),
}

/// An action and the thesis step that asked for it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Step<T, C = StoreCommand> {
    pub tag: StepTag,
    pub action: Action<T, C>,
}

impl<T, C> Step<T, C> {
    pub fn new(tag: StepTag, action: Action<T, C>) -> Self {
        Step { tag, action }
    }

    pub fn store(tag: StepTag, command: C) -> Self {
        Step::new(tag, Action::Store(command))
    }

    pub fn done(tag: StepTag, output: T) -> Self {
        Step::new(tag, Action::Done(output))
    }
}

/// Settings a lock cannot work with, in a sentence that names the setting and what to give.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LockConfigError(pub String);

impl From<&str> for LockConfigError {
    fn from(why: &str) -> Self {
        LockConfigError(why.to_owned())
    }
}

/// A sans-IO algorithm.
pub trait Machine {
    /// The configuration every step reads (kept outside the machine so states stay small).
    type Config;
    /// What the machine returns when done.
    type Output;
    /// The store commands it asks for, and the store's replies: its store family's
    /// ([`StoreCommand`] and [`StoreReply`] for the Cassandra locks, [`redis`]'s for Redis).
    type Command;
    type Reply;

    /// Advance with the answer to the last action. `now_us` is the client's clock.
    fn resume(
        &mut self,
        config: &Self::Config,
        input: Input<Self::Reply>,
        now_us: u64,
    ) -> Step<Self::Output, Self::Command>;

    /// True while the machine has a timed duty that is due at `now_us` (a renewal in progress,
    /// a waiting queue cell to refresh). The model checker does not let time pass while any
    /// running thread has one; the async drivers ignore it.
    fn urgent(&self, _config: &Self::Config, _now_us: u64) -> bool {
        false
    }

    /// True while the machine is in a contest it finishes in a bounded number of its own
    /// requests: its main cell is written (or about to be) and it will read the main row and
    /// delete the cell unless it is alone. A model checker that assumes a poll interval
    /// outlasts such a contest (partial synchrony) does not end another thread's poll while one
    /// is open; the async drivers ignore it.
    fn contending(&self) -> bool {
        false
    }
}

/// Run a machine's transition function `advance`, checking (in debug builds) the contract every
/// machine keeps: it is never resumed after it finished, and it is finished exactly when it
/// returns [`Action::Done`].
pub(crate) fn resume_checked<M, C, R: fmt::Debug, T, K>(
    name: &str,
    machine: &mut M,
    finished: fn(&M) -> bool,
    advance: fn(&mut M, &C, Input<R>, u64) -> Step<T, K>,
    (config, input, now_us): (&C, Input<R>, u64),
) -> Step<T, K> {
    debug_assert!(!finished(machine), "{name}: resumed with {input:?} after it finished");
    let step = advance(machine, config, input, now_us);
    debug_assert_eq!(
        matches!(step.action, Action::Done(_)),
        finished(machine),
        "{name}: finished exactly when it returns Done (step {})",
        step.tag
    );
    step
}

/// How a failed store request is retried before the machine is told it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RetryPolicy {
    /// Retries of one request after its first failure.
    pub max_retries: u8,
    /// Sleep before each retry.
    pub backoff_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            backoff_ms: 100,
        }
    }
}

/// The old algorithm's random backoff (Listing 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OldBackoff {
    /// After AnotherThreadIsOwner: sleep uniform `0..=owner_max_ms` (thesis: 1000).
    pub owner_max_ms: u64,
    /// After ConcurrentAttempt: sleep uniform `0..=concurrent_step_ms * attempt` (thesis: 50).
    pub concurrent_step_ms: u64,
    /// Ours: `attempt` stops growing here, so the ConcurrentAttempt sleep is bounded
    /// (20 × 50 ms = the 1000 ms of the other branch). The thesis lets it grow without bound.
    pub max_attempt: u32,
}

impl Default for OldBackoff {
    fn default() -> Self {
        OldBackoff {
            owner_max_ms: 1000,
            concurrent_step_ms: 50,
            max_attempt: 20,
        }
    }
}

/// Deliberately broken variants, off by default, so the harness can show what they break.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mutants {
    /// M1: a thread first in the queue writes its main cell and takes the lock without reading
    /// the main row (Listings 6 and 7 skip their check).
    pub m1_skip_main_check: bool,
    /// K3: release deletes the cells without waiting for the renewal task to stop, so a
    /// renewal write stamped after the delete brings the cells back.
    pub k3_release_without_waiting: bool,
    /// M2: renewal rewrites our cells without first reading the main row to check that our
    /// cell is still there. A holder whose lease ran out (paused, cut off) then writes its cell
    /// back next to the new holder's and never learns it lost the lock (C-lost).
    pub m2_renew_without_checking: bool,
    /// M3: release stamps its deletes with the lease's start (the client time of the
    /// acquisition's main-cell write) instead of a fresh timestamp. Once renewal has rewritten
    /// the cells, the older tombstone loses to the newer write and the released lock stays
    /// taken until the TTL (C-release).
    pub m3_delete_stamped_at_acquisition: bool,
    /// M4: renewal trusts a rewrite whose reply comes a whole TTL after the main cell's last
    /// write (the library before 2026-11-28). A holder paused between the check and the
    /// rewrite then writes its expired cells back beside the next holder's and, as the check
    /// finds its own cell, never learns it lost the lock (C-lost).
    pub m4_trust_a_late_rewrite: bool,
}

/// Our fixes to the thesis's listings, each for a contract item (docs/contract.md) that the
/// listing as written breaks. On by default; [`Fixes::THESIS`] runs the listings as written, so
/// the harness can still show what they do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fixes {
    /// C-free: a failed acquisition deletes the cells it wrote before it returns
    /// ([`clean_up`]).
    pub clean_up_on_failure: bool,
    /// C-try: TryGetLock's step-10 loop ("go to 4") runs at most
    /// [`LockConfig::try_turns`] times, then the call gives up ([`queue_try_get_lock`]).
    pub try_bounded_loop: bool,
    /// C-token: the fencing token is a counter each holder bumps ([`fence`]), not the queue
    /// column.
    pub counter_token: bool,
}

impl Fixes {
    /// The listings as the thesis gives them.
    pub const THESIS: Fixes = Fixes {
        clean_up_on_failure: false,
        try_bounded_loop: false,
        counter_token: false,
    };
    /// Every fix (the library's default).
    pub const ALL: Fixes = Fixes {
        clean_up_on_failure: true,
        try_bounded_loop: true,
        counter_token: true,
    };
}

impl Default for Fixes {
    fn default() -> Self {
        Fixes::ALL
    }
}

/// Everything the lock machines read, validated by [`crate::driver::Settings`] (or set
/// directly by a model).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockConfig {
    /// TTL of every lock cell; `None` writes cells that never expire (untimed models only).
    pub ttl_s: Option<u32>,
    /// The renewal task rewrites the cells this often (the thesis: TTL / 2).
    pub renew_every_ms: u64,
    /// How long a waiter sleeps between two reads of the queue head.
    pub poll_ms: u64,
    /// Ours: a queue waiter that sees itself next in line (second in the queue)
    /// sleeps this long instead of `poll_ms`, and every waiter reads the first two cells to
    /// know. `None`: every waiter sleeps `poll_ms` (the listing's loop).
    pub next_poll_ms: Option<u64>,
    /// Ours, with `next_poll_ms` only: a waiter reads up to
    /// [`PACE_READ_CELLS`](crate::algo::queue_get_lock::PACE_READ_CELLS) cells of the queue,
    /// so it knows its rank, and sleeps by that rank and the pace the queue has moved at since
    /// it enqueued (see `queue_get_lock`'s `Pace`), instead of `poll_ms` whatever its rank.
    pub paced_poll: bool,
    pub old_backoff: OldBackoff,
    pub retry: RetryPolicy,
    /// Give up acquiring after this long on the client's clock (`None`: wait for ever).
    pub max_wait_ms: Option<u64>,
    /// C-try ([`Fixes::try_bounded_loop`]): how many times TryGetLock goes back to step 4
    /// after finding another cell beside its own in the main row.
    pub try_turns: u8,
    pub mutants: Mutants,
    pub fixes: Fixes,
}

impl Default for LockConfig {
    fn default() -> Self {
        LockConfig {
            ttl_s: Some(30),
            renew_every_ms: 15_000,
            poll_ms: 100,
            next_poll_ms: None,
            paced_poll: false,
            old_backoff: OldBackoff::default(),
            retry: RetryPolicy::default(),
            max_wait_ms: None,
            try_turns: 2,
            mutants: Mutants::default(),
            fixes: Fixes::default(),
        }
    }
}

impl AsRef<RetryPolicy> for LockConfig {
    fn as_ref(&self) -> &RetryPolicy {
        &self.retry
    }
}

impl LockConfig {
    /// A config for models and tests: cells never expire, no renewal, no deadline.
    pub fn untimed() -> Self {
        LockConfig {
            ttl_s: None,
            ..LockConfig::default()
        }
    }

    pub(crate) fn ttl_ms(&self) -> Option<u64> {
        self.ttl_s.map(|ttl| u64::from(ttl) * 1000)
    }
}

/// The cells a holder owns, which renewal rewrites and release deletes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LeaseCells {
    pub lock: LockId,
    pub thread: ThreadId,
    /// The queue column (Listing 5), for the queue algorithm; `None` for the old algorithm.
    pub queue_column: Option<String>,
    /// The client time at which the main cell was last written. The lease is the main cell:
    /// while it is live nobody else can be alone in the main row, so the lease runs out `ttl`
    /// after this unless renewed. (The queue cell may be older, even expired, after a long
    /// wait; renewal rewrites it under the same name.)
    pub main_written_at_us: u64,
}

/// What a failed acquisition may have left in the store (contract item C-free).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Leftover {
    /// Nothing: it wrote nothing, or deleted all it wrote ([`clean_up`]).
    Nothing,
    /// It tried to delete what it wrote and a delete failed too: a cell may stay until its TTL.
    CleanUpFailed,
    /// It did not try (the thesis's listings, [`Fixes::THESIS`]): its cells stay until their TTL.
    NotCleanedUp,
}

/// How an acquisition ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Acquire {
    /// The lock is held: the cells to renew and release, and the fencing token.
    Acquired { lease: LeaseCells, token: FencingToken },
    /// TryGetLock (or the old algorithm's single TryLock) found the lock taken.
    NotAcquired,
    /// `max_wait_ms` ran out; our queue cell was deleted.
    TimedOut,
    /// The store kept failing; `left`: what this attempt may have left behind.
    Failed { failure: StoreFailure, left: Leftover },
}

impl Acquire {
    pub fn is_acquired(&self) -> bool {
        matches!(self, Acquire::Acquired { .. })
    }
}

/// A wait of `ms` cut to end at the deadline, if there is one (C-wait: `lock()` with
/// `max_wait_ms` returns within [`contract::gave_up_within_ms`]): a backoff or a poll never
/// sleeps past it, and the step after the wake-up gives up. At least 1 ms, so that a machine
/// already past its deadline still yields once before it gives up.
pub(crate) fn sleep_until_deadline_ms(ms: u64, deadline_us: Option<u64>, now_us: u64) -> u64 {
    let clipped = match deadline_us {
        Some(deadline) => ms.min(deadline.saturating_sub(now_us).div_ceil(1000).max(1)),
        None => ms,
    };
    debug_assert!(clipped <= ms.max(1), "a clipped sleep is never longer than asked");
    clipped
}

/// A deadline `max_wait_ms` after `now_us`, if one is configured.
pub(crate) fn deadline_after(config: &LockConfig, now_us: u64) -> Option<u64> {
    config
        .max_wait_ms
        .map(|ms| now_us.saturating_add(ms.saturating_mul(1000)))
}

/// Ours: the step that refuses a success that came too late (see [`lease_outlived`]).
pub(crate) const SLOW_ACQUISITION: StepTag = StepTag::new(
    Source::Ours,
    0,
    "success came a whole TTL after our main cell was written, which may be gone: delete it and retry",
);

/// Did a whole TTL pass since the contest began (our main cell's write for the queue
/// algorithm, our shadow cell's for the old one)? Lemma 1 assumes both contestants' cells live
/// until the other reads them; a cell that expired mid-contest lets a second thread win too,
/// and a main cell that expired before renewal started protects nothing. A success seen now
/// must not be trusted. (Found by the model checker: contests slower than the TTL let two
/// threads hold the lock in `old --fault crash` and `trygetlock --fault crash`.)
///
/// "A whole TTL" is counted as the store counts it ([`cells_live_until_us`]), not from the
/// microsecond of the write.
pub(crate) fn lease_outlived(config: &LockConfig, main_written_at_us: u64, now_us: u64) -> bool {
    cells_live_until_us(config, main_written_at_us).is_some_and(|until_us| now_us >= until_us)
}

/// Until when (on this client's clock) cells written at `written_at_us` certainly live, if
/// cells expire at all. Cassandra fixes a cell's expiry in whole seconds of the write
/// coordinator's clock (`whole_seconds(coordinator_now) + ttl`; see `store::row_store`), so a
/// cell written at 10.9 s with TTL 10 dies at 20 s, not at 20.9 s. The write reaches its
/// coordinator no earlier than it was sent, so, with clocks that agree, the cell lives at least
/// until the start of the second it was sent in plus the TTL, and may die right then. (Clock
/// skew between client and coordinator eats into this: S2.) Before 2026-11-28 the renewal and
/// contest checks counted the TTL from the microsecond of the write, and trusted what happened
/// in the last fraction of a second of a dead cell's life.
pub(crate) fn cells_live_until_us(config: &LockConfig, written_at_us: u64) -> Option<u64> {
    config.ttl_s.map(|ttl_s| {
        let sent_second = crate::store::whole_seconds(written_at_us);
        let until_us = sent_second
            .saturating_add(u64::from(ttl_s))
            .saturating_mul(crate::store::MICROS_PER_SECOND);
        debug_assert!(until_us <= written_at_us.saturating_add(u64::from(ttl_s) * crate::store::MICROS_PER_SECOND));
        until_us
    })
}

/// Read the first `count` live cells of `row`.
pub(crate) fn read_first(row: String, count: u32) -> StoreCommand {
    read_from(row, String::new(), count)
}

/// Read the first `count` live cells of `row` from column `start` on (inclusive).
pub(crate) fn read_from(row: String, start: String, count: u32) -> StoreCommand {
    StoreCommand::ReadSlice { row, start, count }
}

/// Write one cell whose value is the thread id, with the lock TTL and a client timestamp.
pub(crate) fn write_own_cell(config: &LockConfig, row: String, column: String, thread: &ThreadId) -> StoreCommand {
    StoreCommand::Write {
        row,
        cells: vec![crate::store::CellWrite {
            column,
            value: thread.as_str().to_owned(),
            ttl_s: config.ttl_s,
        }],
        timestamp: crate::store::Stamp::Client,
    }
}

/// Delete one of our cells, with a client timestamp.
pub(crate) fn delete_own_cell(row: String, column: String) -> StoreCommand {
    StoreCommand::Delete {
        row,
        column,
        timestamp: crate::store::Stamp::Client,
    }
}

/// Is `reply` a slice holding exactly one cell, named `column`?
pub(crate) fn is_only(reply: &StoreReply, column: &str) -> bool {
    matches!(reply, StoreReply::Slice(cells) if cells.len() == 1 && cells[0].column == column)
}
