//! The model's state: threads, their acquisitions' lifecycles, the store, the resource.

use std::fmt;
use std::ops::{Index, IndexMut};

use cassalock::algo::lease::RenewalEnd;
use cassalock::algo::lifecycle::{Lifecycle, MainEnd};
use cassalock::algo::{Action, FencingToken, StepTag};
use cassalock::store::RowStore;

use crate::shared::Shared;

/// A thread's main task: what its current lifecycle's main lane is doing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Main {
    /// Between acquisitions.
    Idle,
    /// The main lane is acquiring; `next` is its pending action and the step that asked for it.
    Acquiring { next: Option<Pending<MainEnd>> },
    /// Believes it holds the lock (the critical section).
    Holding { wrote_resource: bool },
    /// The main lane is releasing.
    Releasing { next: Option<Pending<MainEnd>> },
    /// All acquisitions done (or crashed).
    Finished,
}

/// An action a machine asked for, not yet carried out, and the step that asked.
pub type Pending<O> = (StepTag, Action<O>);

/// One acquisition of a thread: the library's lifecycle machine, and what the model has not yet
/// carried out for its renewal lane.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    pub lifecycle: Lifecycle,
    /// The renewal lane's pending action (`None`: not started).
    pub renewal_next: Option<Pending<RenewalEnd>>,
    /// A pending renewal sleep ends when the thread's clock reaches this.
    pub wake_at_us: u64,
}

/// A thread actor's state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Thread {
    pub main: Main,
    /// Its acquisitions whose lifecycle has not ended: the current one last (while the main
    /// task is acquiring, holding or releasing), before it released ones whose renewal lane
    /// outlived the release (mutant K3).
    pub slots: Vec<Slot>,
    /// Acquisitions (or TryGetLock attempts) finished.
    pub completed: u8,
    /// F: how often a thread that started waiting later acquired before this one.
    pub overtaken: u8,
    /// Paused at this tick.
    pub paused_at_tick: Option<u8>,
    pub crashed: bool,
    /// Its renewal reported the lease lost.
    pub lost: bool,
    /// C-try: store requests of the current TryGetLock call, counted up to the bound + 1.
    pub try_requests: u8,
    /// C-free: bit k is set when acquisition k ended without the lock (failed, timed out, or
    /// "not acquired") and said it left nothing (or the thesis's listing did not say).
    pub ended_without_lock: u8,
    /// C-free: bit k is set when acquisition k failed and said a clean-up delete failed too
    /// (`Leftover::CleanUpFailed`): its cells may stay until their TTL.
    pub clean_up_failed: u8,
    /// C-release: bit k is set when acquisition k's release returned Ok.
    pub released_ok: u8,
    /// C-lost: the tick at which the current hold began (ticks mode).
    pub held_since_tick: u8,
    /// C-lost: the tick of the last resume from a pause (time paused does not count).
    pub resumed_at_tick: u8,
    /// With `queue_read_from_last_hold`: the queue column of this thread's last hold, where
    /// its next GetLock reads the queue from (as the driver keeps it per lock).
    pub queue_start: Option<String>,
}

/// The resource the lock protects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Resource {
    /// The highest token accepted.
    pub highest: Option<FencingToken>,
    /// A write with a lower token than one already accepted got through: real damage.
    pub stale_accepted: bool,
    /// C-token: the highest token any acquisition was handed.
    pub highest_issued: Option<FencingToken>,
    /// C-token: an acquisition was handed a token below one handed out before.
    pub token_went_down: bool,
    /// C-token: the thread that acquired last (the current holder while it believes).
    pub last_acquirer: Option<u8>,
    /// C-token: fencing refused a write from the current holder (it acquired last, and no other
    /// thread believes it holds the lock).
    pub sole_holder_refused: bool,
}

/// The threads of a world, each [`Shared`]: copied on write, its hash worked out once.
///
/// A checker clones the world for every successor, and a step changes one thread (or none): a
/// clone shares the others instead of copying their lifecycle machines, and hashing the
/// successor hashes the unchanged threads' cached hashes instead of their machines. Reading
/// goes through `Index`; any mutable access (`IndexMut`, [`Threads::update_where`]) copies that
/// thread first if it is shared. Equality looks through to the threads, as for a `Vec<Thread>`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Threads(Vec<Shared<Thread>>);

impl Threads {
    pub fn new(threads: impl IntoIterator<Item = Thread>) -> Self {
        Threads(threads.into_iter().map(Shared::new).collect())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&Thread> {
        self.0.get(i).map(|thread| &**thread)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Thread> {
        self.0.iter().map(|thread| &**thread)
    }

    /// Change every thread for which `needs` says so with `change`, copying only those.
    pub fn update_where(&mut self, needs: impl Fn(&Thread) -> bool, mut change: impl FnMut(&mut Thread)) {
        for thread in &mut self.0 {
            if needs(thread) {
                change(thread.make_mut());
            }
        }
    }
}

impl FromIterator<Thread> for Threads {
    fn from_iter<I: IntoIterator<Item = Thread>>(threads: I) -> Self {
        Threads::new(threads)
    }
}

impl Index<usize> for Threads {
    type Output = Thread;
    fn index(&self, i: usize) -> &Thread {
        &self.0[i]
    }
}

impl IndexMut<usize> for Threads {
    fn index_mut(&mut self, i: usize) -> &mut Thread {
        self.0[i].make_mut()
    }
}

impl fmt::Debug for Threads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The whole model state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World {
    /// Global ticks (ticks mode).
    pub now_tick: u8,
    /// Perfect clock: the next time-source reading.
    pub next_time_s: u8,
    pub store: RowStore,
    pub threads: Threads,
    pub resource: Resource,
    /// Threads in the order they started waiting (for F).
    pub wait_order: Vec<u8>,
    /// F: someone acquired while not at the head of the queue (in the state that step made
    /// only: see `LockModel::forget_recorded_violations`).
    pub order_broken: bool,
    /// Some acquisition got the lock (T4's obligation: "nobody has acquired yet").
    pub anyone_acquired: bool,
    /// The one pause or crash of a run has happened.
    pub fault_used: bool,
    /// Store requests failed so far (at most `LockModelConfig::store_failures`).
    pub store_failures_used: u8,
}

/// Which of a thread's lanes a store failure hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lane {
    /// The main task (acquire, release).
    Main,
    /// The `task`-th running renewal lane.
    Renewal(u8),
}

/// Who acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Act {
    /// Thread i's main task steps.
    Main(u8),
    /// Thread i's `task`-th renewal task steps.
    Renew { thread: u8, task: u8 },
    /// Global time advances one tick.
    Tick,
    /// Reduction 5: time advances `ticks` ticks, then thread i's main task steps, reading the
    /// time source (only where time is seen by nothing else: there is no `Tick` then).
    TicksThenMain { ticks: u8, thread: u8 },
    /// The fault injector pauses thread i.
    Pause(u8),
    /// Thread i resumes (its own action, so fairness makes every pause finite).
    Resume(u8),
    /// The fault injector crashes thread i.
    Crash(u8),
    /// The fault injector fails the store request `lane` of thread i is about to send:
    /// `applied` after the store applied it (the reply is lost), else before.
    FailStore { thread: u8, lane: Lane, applied: bool },
}

impl fmt::Display for Act {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Act::Main(i) => write!(f, "t{i}"),
            Act::Renew { thread, .. } => write!(f, "t{thread}/renewal"),
            Act::Tick => write!(f, "clock"),
            Act::TicksThenMain { thread, .. } => write!(f, "t{thread}"),
            Act::Pause(i) => write!(f, "faults: pause t{i}"),
            Act::Resume(i) => write!(f, "t{i} resumes"),
            Act::Crash(i) => write!(f, "faults: crash t{i}"),
            Act::FailStore { thread, lane, applied } => {
                let lane = match lane {
                    Lane::Main => String::new(),
                    Lane::Renewal(_) => "/renewal".to_owned(),
                };
                let when = if *applied {
                    "after it applied"
                } else {
                    "before it applied"
                };
                write!(f, "faults: t{thread}{lane}'s store request fails {when}")
            }
        }
    }
}
