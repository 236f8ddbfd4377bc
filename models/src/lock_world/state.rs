//! The model's state: threads, their acquisitions' lifecycles, the store, the resource.

use std::fmt;

use cassalock::algo::lease::RenewalEnd;
use cassalock::algo::lifecycle::{Lifecycle, MainEnd};
use cassalock::algo::{Action, FencingToken, StepTag};
use cassalock::store::RowStore;

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
    /// Acquisitions that got the lock.
    pub acquired: u8,
    /// F: how often a thread that started waiting later acquired before this one.
    pub overtaken: u8,
    /// Paused at this tick.
    pub paused_at_tick: Option<u8>,
    pub crashed: bool,
    /// Its renewal reported the lease lost.
    pub lost: bool,
}

/// The resource the lock protects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Resource {
    /// The highest token accepted.
    pub highest: Option<FencingToken>,
    /// A write with a lower token than one already accepted got through: real damage.
    pub stale_accepted: bool,
    /// Writes refused by fencing.
    pub refused: u8,
}

/// The whole model state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World {
    /// Global ticks (ticks mode).
    pub now_tick: u8,
    /// Perfect clock: the next time-source reading.
    pub next_time_s: u8,
    pub store: RowStore,
    pub threads: Vec<Thread>,
    pub resource: Resource,
    /// Threads in the order they started waiting (for F).
    pub wait_order: Vec<u8>,
    /// F: someone acquired while not at the head of the queue.
    pub order_broken: bool,
    /// The one pause or crash of a run has happened.
    pub fault_used: bool,
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
    /// The fault injector pauses thread i.
    Pause(u8),
    /// Thread i resumes (its own action, so fairness makes every pause finite).
    Resume(u8),
    /// The fault injector crashes thread i.
    Crash(u8),
}

impl fmt::Display for Act {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Act::Main(i) => write!(f, "t{i}"),
            Act::Renew { thread, .. } => write!(f, "t{thread}/renewal"),
            Act::Tick => write!(f, "clock"),
            Act::Pause(i) => write!(f, "faults: pause t{i}"),
            Act::Resume(i) => write!(f, "t{i} resumes"),
            Act::Crash(i) => write!(f, "faults: crash t{i}"),
        }
    }
}
