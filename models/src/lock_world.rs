//! The world the lock models run in: thread actors stepping the library's machines against one
//! linearizable copy of the store, a clock, a fault injector and a resource.
//!
//! # Actors
//!
//! - **Thread *i*, main task**: runs acquisitions one after another. Each acquisition is the
//!   library's own machine (`QueueGetLock`, `QueueTryGetLock` or `OldGetLock`, inside the same
//!   `Retrying` wrapper the driver uses), then a critical section (optionally a write to the
//!   resource, carrying the fencing token), then the library's `Release` machine.
//! - **Thread *i*, renewal task**: the library's `Renewal` machine, started when a lease with a
//!   TTL is acquired. A released lock's renewal may outlive its release (mutant K3).
//! - **The store**: one `RowStore`. A thread's step executes its pending store command
//!   atomically, so the store is linearizable: every command takes effect at the step that
//!   sends it. The reply is the thread's input for its next step.
//! - **The clock** (ticks mode only): advances global time by one tick.
//! - **The fault injector**: pauses or crashes a holder. It is not bound by fairness.
//! - **The resource**: records the highest fencing token it accepted; with fencing on it
//!   refuses lower ones.
//!
//! Every step is "carry out the pending action, hand the machine its answer, keep the next
//! action as pending". Sleeps are yields (any duration), except renewal sleeps in ticks mode,
//! which end when the thread's clock reaches their wake-up time. Random backoff draws always
//! answer 0: durations are abstracted, so the draw's value cannot matter.
//!
//! # Time
//!
//! - **Perfect clock** (no timing fault): every reading of the time source is strictly greater
//!   than the last one. Cells never expire and there is no renewal. Readings are counted, so
//!   the state space is finite and explored exhaustively.
//! - **Ticks** (TTL, skew, pause, crash): a global tick counter bounded by `max`; thread *i*'s
//!   clock reads `now + client_offset[i]`, and its requests are coordinated by a node whose
//!   clock reads `now + coordinator_offset[i]` (which fixes TTL expiry of what it writes and
//!   judges liveness of what it reads, as in Cassandra). A tick is not allowed while a running
//!   thread has a timed duty due (a renewal, a waiting queue cell to refresh): renewal is
//!   punctual unless the thread is paused. Results are bounded by `max`.
//!
//! # Two reductions, both exact
//!
//! - **Write timestamps are ranks.** The store is linearizable and each lock cell has a
//!   single writer whose client timestamps increase, so a later command always carries a later
//!   timestamp. After every step the model renames all stored timestamps to 1, 2, 3, ... in
//!   order: reconciliation only compares timestamps, so no read changes.
//! - **Dead versions are purged.** For the same reason a tombstone never has to shadow a
//!   future write, and a cell expired at the slowest coordinator's clock is expired for every
//!   reader from then on; dropping both changes no read.
//!
//! Without these, every retry loop (the old algorithm's shadow-row dance, renewals) would grow
//! timestamps for ever and no model would be finite. There is no symmetry reduction: thread ids
//! break ties in queue order, so threads are not interchangeable.

use std::fmt;

use cassalock::algo::lease::RenewalEnd;
use cassalock::algo::lifecycle::{completes_enqueue, AcquireKind, Lifecycle, MainEnd};
use cassalock::algo::queue_column::ClientId;
use cassalock::algo::{Acquire, Action, FencingToken, Input, LockConfig, LockId, SleepKind, StepTag};
use cassalock::store::{RowStore, StoreReply, StoreRequest, MICROS_PER_SECOND};

/// The lock id every model thread contends for.
pub const LOCK: &str = "L";

/// Which lock algorithm the threads run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockAlgorithm {
    /// Listing 6 (GetLock).
    GetLock,
    /// Listing 7 (TryGetLock).
    TryGetLock,
    /// Listings 3–4 (the old shadow-row GetLock).
    Old,
}

/// How clocks behave.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Clocks {
    /// Strictly increasing time-source readings; no TTL.
    Perfect,
    /// A bounded global tick counter with per-thread offsets.
    Ticks {
        max: u8,
        /// Thread i's clock reads `now + client_offset[i]` ticks.
        client_offset: Vec<u8>,
        /// Thread i's coordinator's clock reads `now + coordinator_offset[i]` ticks.
        coordinator_offset: Vec<u8>,
    },
}

/// Everything a lock model run is parametrized by.
#[derive(Clone, Debug)]
pub struct LockModelConfig {
    pub algorithm: LockAlgorithm,
    pub threads: u8,
    /// Acquisitions per thread (TryGetLock: attempts per thread).
    pub acquisitions: u8,
    /// The machines' config (TTL, mutants). One tick is one second of it.
    pub lock: LockConfig,
    pub clocks: Clocks,
    /// Reading the time and writing the queue cell are separate steps (else one step).
    pub delayed_enqueue: bool,
    /// This thread may be paused (once) while it holds the lock.
    pub pause: Option<u8>,
    /// This thread may crash (once) while it holds the lock.
    pub crash: Option<u8>,
    /// Holders write to the resource actor with their fencing token.
    pub resource: bool,
    /// The resource refuses tokens lower than the highest it has accepted.
    pub fencing: bool,
    /// Check F (queue order, overtakes). Off where clocks are coarse ticks for another purpose
    /// (TTL, pause, crash): same-tick ties are then ordered by thread id, which is not what
    /// those configurations test.
    pub fairness: bool,
    /// F: how often a waiter may be overtaken.
    pub overtake_bound: u8,
}

impl LockModelConfig {
    pub fn new(algorithm: LockAlgorithm, threads: u8, acquisitions: u8) -> Self {
        let mut lock = LockConfig::untimed();
        // Backoff durations are abstracted (draws answer 0), so the attempt counter that
        // scales them is irrelevant: keep it at 1 instead of letting it multiply states.
        lock.old_backoff.max_attempt = 1;
        LockModelConfig {
            algorithm,
            threads,
            acquisitions,
            lock,
            clocks: Clocks::Perfect,
            delayed_enqueue: false,
            pause: None,
            crash: None,
            resource: false,
            fencing: false,
            fairness: algorithm != LockAlgorithm::TryGetLock,
            overtake_bound: 0,
        }
    }

    /// Ticks mode with TTL `ttl_ticks`, renewals every `ttl_ticks / 2` (at least 1).
    pub fn with_ticks(mut self, max: u8, ttl_ticks: u32) -> Self {
        let n = usize::from(self.threads);
        self.clocks = Clocks::Ticks {
            max,
            client_offset: vec![0; n],
            coordinator_offset: vec![0; n],
        };
        self.lock.ttl_s = Some(ttl_ticks);
        self.lock.renew_every_ms = u64::from((ttl_ticks / 2).max(1)) * 1000;
        self
    }

    /// Ticks mode without TTL (for skew of the queue's time source only).
    pub fn with_untimed_ticks(mut self, max: u8) -> Self {
        self = self.with_ticks(max, 1);
        self.lock.ttl_s = None;
        self
    }

    pub fn max_ticks(&self) -> Option<u8> {
        match &self.clocks {
            Clocks::Perfect => None,
            Clocks::Ticks { max, .. } => Some(*max),
        }
    }

    fn thread_id(&self, thread: usize, acquisition: u8) -> cassalock::ThreadId {
        ClientId::new(&format!("t{thread}"))
            .expect("model thread names are valid")
            .thread(u64::from(acquisition))
    }
}

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
    pub paused_at: Option<u8>,
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
    pub now: u8,
    /// Perfect clock: the next time-source reading.
    pub next_time: u8,
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

/// What a step did, for traces (computed only when a trace is printed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A store request made for a machine step, and its reply.
    Store {
        tag: StepTag,
        request: StoreRequest,
        reply: StoreReply,
        coordinator_now_us: u64,
    },
    /// Another action carried out for a machine step.
    Did {
        tag: StepTag,
        what: String,
    },
    /// A machine finished.
    Done {
        tag: StepTag,
        what: String,
    },
    Note(String),
}

pub(crate) type Events = Option<Vec<Event>>;

fn note(events: &mut Events, text: impl FnOnce() -> String) {
    if let Some(events) = events {
        events.push(Event::Note(text()));
    }
}

/// The lock world as a stateright model.
#[derive(Clone, Debug)]
pub struct LockModel {
    pub cfg: LockModelConfig,
}

impl LockModel {
    pub fn new(cfg: LockModelConfig) -> Self {
        LockModel { cfg }
    }

    pub fn initial(&self) -> World {
        let start = match &self.cfg.clocks {
            Clocks::Perfect => 0,
            Clocks::Ticks { .. } => 1,
        };
        World {
            now: start,
            next_time: 1,
            store: RowStore::new(),
            threads: (0..self.cfg.threads)
                .map(|_| Thread {
                    main: Main::Idle,
                    slots: Vec::new(),
                    completed: 0,
                    acquired: 0,
                    overtaken: 0,
                    paused_at: None,
                    crashed: false,
                    lost: false,
                })
                .collect(),
            resource: Resource::default(),
            wait_order: Vec::new(),
            order_broken: false,
            fault_used: false,
        }
    }

    /// Thread i's clock, in microseconds (ticks are seconds).
    pub fn client_now_us(&self, world: &World, thread: usize) -> u64 {
        match &self.cfg.clocks {
            Clocks::Perfect => 0,
            Clocks::Ticks { client_offset, .. } => u64::from(world.now + client_offset[thread]) * MICROS_PER_SECOND,
        }
    }

    /// The clock of the node coordinating thread i's requests, in microseconds.
    pub fn coordinator_now_us(&self, world: &World, thread: usize) -> u64 {
        match &self.cfg.clocks {
            Clocks::Perfect => 0,
            Clocks::Ticks { coordinator_offset, .. } => {
                u64::from(world.now + coordinator_offset[thread]) * MICROS_PER_SECOND
            }
        }
    }

    /// The slowest coordinator clock: a cell dead there is dead for every reader.
    fn slowest_coordinator_us(&self, world: &World) -> u64 {
        (0..world.threads.len())
            .map(|i| self.coordinator_now_us(world, i))
            .min()
            .unwrap_or(0)
    }

    fn read_time_us(&self, world: &mut World, thread: usize) -> u64 {
        match &self.cfg.clocks {
            Clocks::Perfect => {
                let time = u64::from(world.next_time) * MICROS_PER_SECOND;
                world.next_time += 1;
                time
            }
            Clocks::Ticks { .. } => self.client_now_us(world, thread),
        }
    }

    /// Is thread i holding the lock in its own belief?
    pub fn holders(world: &World) -> impl Iterator<Item = usize> + '_ {
        world
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| matches!(t.main, Main::Holding { .. }))
            .map(|(i, _)| i)
    }

    /// Is thread i waiting for the lock?
    pub fn is_waiting(world: &World, thread: usize) -> bool {
        let t = &world.threads[thread];
        !t.crashed && matches!(t.main, Main::Acquiring { .. })
    }

    /// The acquisitions whose main cell is still live after they were released (K3): the lock
    /// is taken by nobody. Returns (cell's thread id, ticks it stays live).
    pub fn stuck_after_release(&self, world: &World) -> Option<(String, u64)> {
        let lock = LockId::new(LOCK).expect("valid");
        let reader_us = self.slowest_coordinator_us(world);
        for (column, version) in world.store.raw_slice(&lock.main_row(), "") {
            if !version.is_live_at(reader_us) {
                continue;
            }
            let Some((thread, acquisition)) = parse_model_thread(column) else {
                continue;
            };
            if acquisition < world.threads.get(thread)?.completed && !world.threads[thread].crashed {
                let expires_s = match &version.body {
                    cassalock::store::CellBody::Value {
                        expires_at_s: Some(expiry),
                        ..
                    } => *expiry,
                    _ => u64::MAX,
                };
                return Some((
                    column.to_owned(),
                    expires_s.saturating_sub(reader_us / MICROS_PER_SECOND),
                ));
            }
        }
        None
    }

    // ---- stepping ----

    fn start_acquisition(&self, thread: usize, acquisition: u8) -> Lifecycle {
        let lock = LockId::new(LOCK).expect("valid");
        let id = self.cfg.thread_id(thread, acquisition);
        let kind = match self.cfg.algorithm {
            LockAlgorithm::GetLock => AcquireKind::QueueGetLock,
            LockAlgorithm::TryGetLock => AcquireKind::QueueTryGetLock,
            LockAlgorithm::Old => AcquireKind::OldGetLock,
        };
        Lifecycle::acquire(kind, lock, id)
    }

    /// Carry out a pending action for thread i; the answer for its machine.
    fn perform<O>(&self, world: &mut World, thread: usize, (tag, action): Pending<O>, events: &mut Events) -> Input {
        let mut did = |what: String| {
            if let Some(events) = events {
                events.push(Event::Did { tag, what });
            }
        };
        match action {
            Action::Store(command) => {
                let timestamp = world.store.max_timestamp_us().unwrap_or(0) + 1;
                let request = command.stamp(|| timestamp);
                let coordinator_now_us = self.coordinator_now_us(world, thread);
                let reply = request.apply_to(&mut world.store, coordinator_now_us);
                if let Some(events) = events {
                    events.push(Event::Store {
                        tag,
                        request,
                        reply: reply.clone(),
                        coordinator_now_us,
                    });
                }
                Input::Reply(reply)
            }
            Action::Sleep { kind, .. } => {
                did(match kind {
                    SleepKind::Renewal => "slept until the renewal was due".into(),
                    _ => format!("slept ({kind:?}; durations are abstracted)"),
                });
                Input::Woke
            }
            Action::Draw { max_ms } => {
                did(format!("drew 0 from 0..={max_ms} ms (durations are abstracted)"));
                Input::Drawn(0)
            }
            Action::ReadTime => {
                let time = self.read_time_us(world, thread);
                did(format!("the time source read {}", show_time(time)));
                Input::Time(time)
            }
            Action::StopRenewal { wait } => {
                for slot in &mut world.threads[thread].slots {
                    slot.lifecycle.stop_renewal();
                }
                if wait {
                    // Enabled only when every renewal lane is asleep: it stops there.
                    for slot in &mut world.threads[thread].slots {
                        let stopped = slot.lifecycle.stop_sleeping_renewal();
                        debug_assert!(stopped, "release waits only for a sleeping renewal lane");
                        slot.renewal_next = None;
                    }
                    did("stopped the renewal task, which was asleep".into());
                } else {
                    did("told the renewal task to stop, and did NOT wait for it".into());
                }
                Input::RenewalStopped
            }
            Action::Done(_) => unreachable!("a finished machine has no pending action"),
        }
    }

    fn done(events: &mut Events, tag: StepTag, what: String) {
        if let Some(events) = events {
            events.push(Event::Done { tag, what });
        }
    }

    /// Thread i's main task takes one step.
    fn step_main(&self, world: &mut World, i: usize, events: &mut Events) {
        let main = std::mem::replace(&mut world.threads[i].main, Main::Idle);
        match main {
            Main::Idle => {
                let acquisition = world.threads[i].completed;
                note(events, || {
                    format!(
                        "t{i} starts acquisition {} as thread {}",
                        acquisition + 1,
                        self.cfg.thread_id(i, acquisition)
                    )
                });
                world.wait_order.push(i as u8);
                let lifecycle = self.start_acquisition(i, acquisition);
                world.threads[i].slots.push(Slot {
                    lifecycle,
                    renewal_next: None,
                    wake_at_us: 0,
                });
                self.run_main(world, i, Input::Start, events);
            }
            Main::Acquiring { next } | Main::Releasing { next } => {
                let input = match next {
                    None => Input::Start,
                    Some(pending) => self.perform(world, i, pending, events),
                };
                self.run_main(world, i, input, events);
            }
            Main::Holding { wrote_resource } => {
                if self.cfg.resource && !wrote_resource {
                    let token = Self::current(world, i)
                        .lifecycle
                        .held()
                        .map(|(_, token)| token.clone())
                        .expect("a holding thread's lifecycle holds the lock");
                    self.write_resource(world, i, &token, events);
                    world.threads[i].main = Main::Holding { wrote_resource: true };
                } else {
                    note(events, || format!("t{i} leaves its critical section and releases"));
                    Self::current(world, i).lifecycle.begin_release();
                    self.run_main(world, i, Input::Start, events);
                }
            }
            Main::Finished => unreachable!("a finished thread takes no steps"),
        }
    }

    /// The thread's current lifecycle (the last slot while it acquires, holds or releases).
    fn current(world: &mut World, i: usize) -> &mut Slot {
        world.threads[i]
            .slots
            .last_mut()
            .expect("a thread acquiring, holding or releasing has a lifecycle")
    }

    /// Step thread i's main lane with `input`, and keep its next action pending.
    fn run_main(&self, world: &mut World, i: usize, input: Input, events: &mut Events) {
        let now = self.client_now_us(world, i);
        let mut step = Self::current(world, i)
            .lifecycle
            .resume_main(&self.cfg.lock, input, now);
        if matches!(step.action, Action::ReadTime) && !self.cfg.delayed_enqueue {
            // The enqueue is one step: read the time (L5.1) and write the queue cell at once.
            let input = self.perform(world, i, (step.tag, Action::<MainEnd>::ReadTime), events);
            step = Self::current(world, i)
                .lifecycle
                .resume_main(&self.cfg.lock, input, now);
            if completes_enqueue(&step.tag) {
                let input = self.perform(world, i, (step.tag, step.action), events);
                step = Self::current(world, i)
                    .lifecycle
                    .resume_main(&self.cfg.lock, input, now);
            }
        }
        match step.action {
            Action::Done(MainEnd::Acquire(outcome)) => {
                Self::done(events, step.tag, show_acquire(&outcome));
                self.acquired(world, i, outcome, events);
            }
            Action::Done(MainEnd::Release(outcome)) => {
                Self::done(events, step.tag, format!("{outcome:?}").to_lowercase());
                self.finish_round(world, i);
            }
            action => {
                let next = Some((step.tag, action));
                world.threads[i].main = if Self::current(world, i).lifecycle.is_acquiring() {
                    Main::Acquiring { next }
                } else {
                    Main::Releasing { next }
                };
            }
        }
    }

    fn acquired(&self, world: &mut World, i: usize, outcome: Acquire, events: &mut Events) {
        // Threads that started waiting before thread i (and still wait).
        let position = world
            .wait_order
            .iter()
            .position(|&t| usize::from(t) == i)
            .expect("a waiting thread is in the wait order");
        let earlier: Vec<u8> = world.wait_order.drain(..=position).take(position).collect();
        world.wait_order.splice(0..0, earlier.iter().copied());
        match outcome {
            Acquire::Acquired { lease, token } => {
                note(events, || {
                    format!("t{i} HOLDS the lock (fencing token {})", short_column(token.as_str()))
                });
                // F: acquired while another live queue cell sorts before ours?
                if let Some(column) = &lease.queue_column {
                    let lock = LockId::new(LOCK).expect("valid");
                    let head = world
                        .store
                        .read_slice(&lock.queue_row(), "", 1, self.coordinator_now_us(world, i));
                    if head.first().is_some_and(|cell| cell.column < *column) {
                        world.order_broken = true;
                        note(events, || {
                            format!(
                                "F: t{i} took the lock while {} was ahead of it in the queue",
                                head[0].column
                            )
                        });
                    }
                }
                // F: every thread that started waiting earlier and still waits is overtaken.
                let bound = self.cfg.overtake_bound.saturating_add(1);
                for &earlier in &earlier {
                    let t = &mut world.threads[usize::from(earlier)];
                    t.overtaken = t.overtaken.saturating_add(1).min(bound);
                    note(events, || {
                        format!("F: t{i} overtook t{earlier}, which started waiting earlier")
                    });
                }
                world.threads[i].acquired += 1;
                world.threads[i].main = Main::Holding { wrote_resource: false };
            }
            other => {
                note(events, || format!("t{i} did not get the lock ({other:?})"));
                self.finish_round(world, i);
            }
        }
    }

    fn finish_round(&self, world: &mut World, i: usize) {
        let thread = &mut world.threads[i];
        thread.completed += 1;
        thread.main = if thread.completed >= self.cfg.acquisitions {
            Main::Finished
        } else {
            Main::Idle
        };
    }

    fn write_resource(&self, world: &mut World, i: usize, token: &FencingToken, events: &mut Events) {
        let resource = &mut world.resource;
        let admission = cassalock::algo::admit(
            resource.highest.as_ref().map(FencingToken::as_str),
            token.as_str(),
            self.cfg.fencing,
        );
        let stale = admission.stale;
        if !admission.accepted {
            resource.refused = resource.refused.saturating_add(1);
            let highest = short_column(resource.highest.as_ref().expect("stale").as_str());
            note(events, || {
                format!(
                    "resource REFUSES t{i}'s write: token {} is below {highest}",
                    short_column(token.as_str())
                )
            });
            return;
        }
        if stale {
            resource.stale_accepted = true;
            note(events, || {
                format!(
                    "resource ACCEPTS t{i}'s write with the stale token {} (no fencing): damage",
                    short_column(token.as_str())
                )
            });
        } else {
            note(events, || {
                format!(
                    "resource accepts t{i}'s write with token {}",
                    short_column(token.as_str())
                )
            });
            resource.highest = Some(token.clone());
        }
    }

    /// A renewal task takes one step.
    /// The slot of thread i's `task`-th running renewal lane.
    fn renewal_slot(world: &World, i: usize, task: usize) -> usize {
        world.threads[i]
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.lifecycle.renewal_running())
            .nth(task)
            .map(|(index, _)| index)
            .expect("an enabled renewal lane exists")
    }

    /// A renewal lane takes one step.
    fn step_renewal(&self, world: &mut World, i: usize, task: usize, events: &mut Events) {
        let index = Self::renewal_slot(world, i, task);
        let now = self.client_now_us(world, i);
        let slot = &mut world.threads[i].slots[index];
        let input = match slot.renewal_next.take() {
            None => Input::Start,
            // Release asked it to stop: the lifecycle ends the lane at this sleep.
            Some((_, Action::Sleep { .. })) if slot.lifecycle.renewal_wakes_to_stop() => Input::Woke,
            Some(pending) => self.perform(world, i, pending, events),
        };
        let slot = &mut world.threads[i].slots[index];
        let step = slot.lifecycle.resume_renewal(&self.cfg.lock, input, now);
        match step.action {
            Action::Done(end) => {
                Self::done(events, step.tag, format!("{end:?}"));
                if let RenewalEnd::Lost(why) = end {
                    note(events, || {
                        format!("t{i}'s renewal finds the lease LOST ({why:?}); t{i} is not told until it looks")
                    });
                    world.threads[i].lost = true;
                }
            }
            action => {
                if let Action::Sleep { ms, kind } = action {
                    slot.wake_at_us = if kind == SleepKind::Renewal {
                        now + ms * 1000
                    } else {
                        now
                    };
                }
                slot.renewal_next = Some((step.tag, action));
            }
        }
    }

    fn renewal_enabled(&self, world: &World, i: usize, slot: &Slot) -> bool {
        match &slot.renewal_next {
            Some((_, Action::Sleep { .. })) => {
                slot.lifecycle.renewal_stop_requested() || self.client_now_us(world, i) >= slot.wake_at_us
            }
            _ => true,
        }
    }

    /// Does thread i have a timed duty due, so that time may not pass?
    fn urgent(&self, world: &World, i: usize) -> bool {
        let t = &world.threads[i];
        if t.crashed || t.paused_at.is_some() {
            return false;
        }
        let now = self.client_now_us(world, i);
        let renewal_due = t
            .slots
            .iter()
            .filter(|slot| slot.lifecycle.renewal_running())
            .any(|slot| {
                let stop_requested = slot.lifecycle.renewal_stop_requested();
                match &slot.renewal_next {
                    Some((_, Action::Sleep { .. })) => !stop_requested && now >= slot.wake_at_us,
                    _ => !stop_requested,
                }
            });
        let main_due = match &t.main {
            Main::Acquiring { .. } => t
                .slots
                .last()
                .is_some_and(|slot| slot.lifecycle.main_urgent(&self.cfg.lock, now)),
            _ => false,
        };
        renewal_due || main_due
    }

    fn main_enabled(&self, world: &World, i: usize) -> bool {
        let t = &world.threads[i];
        match &t.main {
            Main::Finished => false,
            Main::Idle => t.completed < self.cfg.acquisitions,
            Main::Releasing {
                next: Some((_, Action::StopRenewal { wait: true })),
                ..
            } => t
                .slots
                .iter()
                .filter(|slot| slot.lifecycle.renewal_running())
                .all(|slot| matches!(slot.renewal_next, Some((_, Action::Sleep { .. })))),
            _ => true,
        }
    }

    /// Canonical form: purge dead versions, rename timestamps to ranks.
    fn canonicalize(&self, world: &mut World) {
        let horizon = self.slowest_coordinator_us(world);
        world.store.purge(u64::MAX, horizon);
        let mut stamps: Vec<u64> = world.store.versions().map(|(_, _, v)| v.timestamp_us).collect();
        stamps.sort_unstable();
        stamps.dedup();
        world
            .store
            .rename_timestamps(|ts| stamps.binary_search(&ts).expect("collected above") as u64 + 1);
    }

    /// The successor of `world` under `act`, with what happened (events only when asked).
    pub fn apply(&self, world: &World, act: Act, mut events: Events) -> (World, Events) {
        let mut next = world.clone();
        match act {
            Act::Main(i) => self.step_main(&mut next, usize::from(i), &mut events),
            Act::Renew { thread, task } => {
                self.step_renewal(&mut next, usize::from(thread), usize::from(task), &mut events)
            }
            Act::Tick => next.now += 1,
            Act::Pause(i) => {
                next.threads[usize::from(i)].paused_at = Some(next.now);
                next.fault_used = true;
            }
            Act::Resume(i) => next.threads[usize::from(i)].paused_at = None,
            Act::Crash(i) => {
                let t = &mut next.threads[usize::from(i)];
                t.crashed = true;
                t.main = Main::Finished;
                t.slots.clear();
                next.wait_order.retain(|&w| w != i);
                next.fault_used = true;
            }
        }
        for thread in &mut next.threads {
            // A lifecycle whose lanes have both ended acts no more.
            thread.slots.retain(|slot| !slot.lifecycle.is_over());
        }
        self.canonicalize(&mut next);
        (next, events)
    }

    /// Every action enabled in `world`.
    pub fn enabled(&self, world: &World, acts: &mut Vec<Act>) {
        for (i, t) in world.threads.iter().enumerate() {
            let id = i as u8;
            if t.crashed {
                continue;
            }
            if t.paused_at.is_some() {
                // A pause lasts at least one tick.
                if world.now > t.paused_at.unwrap_or(0) {
                    acts.push(Act::Resume(id));
                }
                continue;
            }
            if self.main_enabled(world, i) {
                acts.push(Act::Main(id));
            }
            let running = t.slots.iter().filter(|slot| slot.lifecycle.renewal_running());
            for (k, slot) in running.enumerate() {
                if self.renewal_enabled(world, i, slot) {
                    acts.push(Act::Renew {
                        thread: id,
                        task: k as u8,
                    });
                }
            }
            let holding = matches!(t.main, Main::Holding { .. });
            if holding && !world.fault_used {
                if self.cfg.pause == Some(id) {
                    acts.push(Act::Pause(id));
                }
                if self.cfg.crash == Some(id) {
                    acts.push(Act::Crash(id));
                }
            }
        }
        if let Some(max) = self.cfg.max_ticks() {
            if world.now < max && !(0..world.threads.len()).any(|i| self.urgent(world, i)) {
                acts.push(Act::Tick);
            }
        }
    }
}

/// "t3:1" → (3, 1).
pub fn parse_model_thread(id: &str) -> Option<(usize, u8)> {
    let (client, sequence) = id.split_once(':')?;
    Some((client.strip_prefix('t')?.parse().ok()?, sequence.parse().ok()?))
}

/// A microsecond time as ticks, for traces.
pub fn show_time(time_us: u64) -> String {
    format!("{}", time_us / MICROS_PER_SECOND)
}

fn show_acquire(outcome: &Acquire) -> String {
    match outcome {
        Acquire::Acquired { .. } => "acquired".into(),
        Acquire::NotAcquired => "not acquired".into(),
        Acquire::TimedOut => "timed out".into(),
        Acquire::Failed(failure) => format!("failed: {failure}"),
    }
}

/// A queue column as "time|thread" (the 20 zero-padded digits are hard to read).
pub fn short_column(column: &str) -> String {
    match cassalock::algo::queue_column::parse_queue_column(column) {
        Some((time, thread)) => format!("{}|{thread}", time / MICROS_PER_SECOND),
        None => column.to_owned(),
    }
}

fn show_request(request: &StoreRequest) -> String {
    use cassalock::store::StoreOp;
    match request {
        StoreOp::Write { row, cells, timestamp } => {
            let cells: Vec<String> = cells
                .iter()
                .map(|cell| match cell.ttl_s {
                    Some(ttl) => format!("{} ttl {ttl}", short_column(&cell.column)),
                    None => short_column(&cell.column),
                })
                .collect();
            format!("write {row} [{}] @ts{timestamp}", cells.join(", "))
        }
        StoreOp::Delete { row, column, timestamp } => format!("delete {row} [{}] @ts{timestamp}", short_column(column)),
        StoreOp::ReadSlice { row, count, .. } => format!("read {row} first {count}"),
    }
}

fn show_reply(reply: &StoreReply) -> String {
    match reply {
        StoreReply::Done => "ok".into(),
        StoreReply::Slice(cells) => {
            let cells: Vec<String> = cells.iter().map(|cell| short_column(&cell.column)).collect();
            format!("[{}]", cells.join(", "))
        }
    }
}

impl LockModel {
    fn live_row(&self, world: &World, row: &str) -> String {
        let reader = self.slowest_coordinator_us(world);
        let cells: Vec<String> = world
            .store
            .read_slice(row, "", 16, reader)
            .iter()
            .map(|cell| short_column(&cell.column))
            .collect();
        if cells.is_empty() {
            "-".into()
        } else {
            cells.join(" ")
        }
    }
}

fn holds_fn(_: &LockModel, world: &World) -> bool {
    LockModel::holders(world).count() <= 1
}

fn order_fn(_: &LockModel, world: &World) -> bool {
    !world.order_broken
}

fn overtakes_fn(model: &LockModel, world: &World) -> bool {
    world.threads.iter().all(|t| t.overtaken <= model.cfg.overtake_bound)
}

fn resource_fn(_: &LockModel, world: &World) -> bool {
    !world.resource.stale_accepted
}

fn stuck_fn(model: &LockModel, world: &World) -> bool {
    model.stuck_after_release(world).is_none()
}

fn waiting_fn(_: &LockModel, world: &World, thread: usize) -> bool {
    LockModel::is_waiting(world, thread)
}

fn nobody_acquired_fn(_: &LockModel, world: &World, _: usize) -> bool {
    world.threads.iter().all(|t| t.acquired == 0)
}

fn thread_name(thread: usize) -> String {
    format!("t{thread}")
}

fn everyone(_: usize) -> String {
    "every caller".into()
}

impl stateright::Model for LockModel {
    type State = World;
    type Action = Act;

    fn init_states(&self) -> Vec<World> {
        vec![self.initial()]
    }

    fn actions(&self, state: &World, actions: &mut Vec<Act>) {
        self.enabled(state, actions);
    }

    fn next_state(&self, state: &World, action: Act) -> Option<World> {
        Some(self.apply(state, action, None).0)
    }

    fn format_action(&self, action: &Act) -> String {
        action.to_string()
    }

    /// All properties of the lock models, in one place. The claim ID is the first word.
    fn properties(&self) -> Vec<stateright::Property<Self>> {
        use stateright::Property;
        let mutual_exclusion = match self.cfg.algorithm {
            LockAlgorithm::TryGetLock => Property::always("T3 at most one TryGetLock caller holds the lock", holds_fn),
            _ => Property::always("T1 at most one thread holds the lock", holds_fn),
        };
        let mut properties = vec![mutual_exclusion];
        if self.cfg.fairness {
            if self.cfg.algorithm != LockAlgorithm::Old {
                properties.push(Property::always(
                    "F-order whoever acquires is at the head of the queue",
                    order_fn,
                ));
            }
            properties.push(Property::always(
                "F-overtakes no waiter is overtaken more than the bound",
                overtakes_fn,
            ));
        }
        if self.cfg.resource {
            properties.push(Property::always(
                "T1-resource the resource never accepts a stale token",
                resource_fn,
            ));
        }
        if self.cfg.lock.ttl_s.is_some() {
            properties.push(Property::always("K3 no released lock stays taken by nobody", stuck_fn));
        }
        properties
    }
}

impl crate::liveness::Fairness for LockModel {
    fn fair_actor(&self, action: &Act) -> Option<u8> {
        let n = self.cfg.threads;
        match *action {
            Act::Main(i) | Act::Resume(i) => Some(i),
            Act::Renew { thread, .. } => Some(n + thread),
            Act::Tick => Some(2 * n),
            Act::Pause(_) | Act::Crash(_) => None,
        }
    }

    fn fair_actor_name(&self, actor: u8) -> String {
        let n = self.cfg.threads;
        match actor {
            a if a < n => format!("t{a}"),
            a if a < 2 * n => format!("t{}/renewal", a - n),
            _ => "clock".into(),
        }
    }

    fn at_bound(&self, world: &World) -> bool {
        self.cfg.max_ticks() == Some(world.now)
    }
}

impl crate::check::CheckedModel for LockModel {
    fn title(&self) -> String {
        let cfg = &self.cfg;
        let name = match cfg.algorithm {
            LockAlgorithm::GetLock => "getlock (Listing 6)",
            LockAlgorithm::TryGetLock => "trygetlock (Listing 7)",
            LockAlgorithm::Old => "old (Listings 3-4)",
        };
        let clocks = match &cfg.clocks {
            Clocks::Perfect => "perfect clock, no TTL".to_owned(),
            Clocks::Ticks {
                max,
                client_offset,
                coordinator_offset,
            } => {
                let ttl = cfg.lock.ttl_s.map_or("no TTL".to_owned(), |ttl| {
                    format!(
                        "TTL {ttl} ticks, renewal every {} ticks",
                        cfg.lock.renew_every_ms / 1000
                    )
                });
                format!("ticks up to {max}, {ttl}, client clock offsets {client_offset:?}, coordinator offsets {coordinator_offset:?}")
            }
        };
        let mut faults = Vec::new();
        if cfg.delayed_enqueue {
            faults.push("delayed enqueue".to_owned());
        }
        if let Some(t) = cfg.pause {
            faults.push(format!("t{t} may pause while holding"));
        }
        if let Some(t) = cfg.crash {
            faults.push(format!("t{t} may crash while holding"));
        }
        if cfg.lock.mutants.m1_skip_main_check {
            faults.push("MUTANT M1".into());
        }
        if cfg.lock.mutants.k3_release_without_waiting {
            faults.push("MUTANT K3".into());
        }
        if cfg.resource {
            faults.push(if cfg.fencing {
                "resource with fencing".into()
            } else {
                "resource without fencing".into()
            });
        }
        let faults = if faults.is_empty() {
            "none".to_owned()
        } else {
            faults.join(", ")
        };
        format!(
            "{name} | {} threads x {} acquisitions | {clocks} | faults: {faults}",
            cfg.threads, cfg.acquisitions
        )
    }

    fn obligations(&self) -> Vec<crate::liveness::Obligation<Self>> {
        use crate::liveness::Obligation;
        match self.cfg.algorithm {
            LockAlgorithm::TryGetLock => vec![Obligation {
                name: "T4 some TryGetLock caller acquires",
                count: 1,
                open: nobody_acquired_fn,
                subject: everyone,
            }],
            _ => vec![Obligation {
                name: "T2 every waiting thread acquires",
                count: usize::from(self.cfg.threads),
                open: waiting_fn,
                subject: thread_name,
            }],
        }
    }

    fn measures(&self) -> Vec<crate::check::Measure<Self>> {
        use crate::check::Measure;
        let mut measures = Vec::new();
        if self.cfg.fairness {
            measures.push(Measure {
                name: "F-overtakes most times one waiter was overtaken",
                unit: "(counted up to bound + 1)",
                value: |_, world: &World| world.threads.iter().map(|t| u64::from(t.overtaken)).max(),
            });
        }
        if self.cfg.lock.ttl_s.is_some() {
            measures.push(Measure {
                name: "K3 a released lock stays taken for",
                unit: "more ticks",
                value: |model: &LockModel, world: &World| model.stuck_after_release(world).map(|(_, ticks)| ticks),
            });
        }
        measures
    }

    fn clock_bound(&self) -> Option<u8> {
        self.cfg.max_ticks()
    }

    fn describe_step(&self, state: &World, action: &Act) -> (World, Vec<String>) {
        let (next, events) = self.apply(state, *action, Some(Vec::new()));
        let ticks = !matches!(self.cfg.clocks, Clocks::Perfect);
        let mut lines: Vec<String> = events
            .unwrap_or_default()
            .into_iter()
            .map(|event| match event {
                Event::Store {
                    tag,
                    request,
                    reply,
                    coordinator_now_us,
                } => {
                    let clock = if ticks {
                        format!("  (coordinator clock {})", show_time(coordinator_now_us))
                    } else {
                        String::new()
                    };
                    format!("{tag}: {} -> {}{clock}", show_request(&request), show_reply(&reply))
                }
                Event::Did { tag, what } => format!("{tag}: {what}"),
                Event::Done { tag, what } => format!("{tag} => {what}"),
                Event::Note(text) => text,
            })
            .collect();
        match action {
            Act::Tick => lines.push(format!("time passes: now {} -> {}", state.now, next.now)),
            Act::Pause(i) => lines.push(format!(
                "t{i} is PAUSED (a GC pause: none of its tasks run while time passes)"
            )),
            Act::Resume(i) => lines.push(format!(
                "t{i} resumes after {} ticks, still believing what it believed",
                next.now - state.threads[usize::from(*i)].paused_at.unwrap_or(next.now)
            )),
            Act::Crash(i) => lines.push(format!("t{i} CRASHES: no release, its renewal stops")),
            _ => {}
        }
        if lines.is_empty() {
            lines.push("(no visible effect)".into());
        }
        (next, lines)
    }

    fn describe_state(&self, world: &World) -> String {
        let lock = LockId::new(LOCK).expect("valid");
        let holders: Vec<String> = LockModel::holders(world).map(|i| format!("t{i}")).collect();
        let holders = if holders.is_empty() {
            "nobody".to_owned()
        } else {
            holders.join(" AND ")
        };
        let mut rows = format!("main [{}]", self.live_row(world, &lock.main_row()));
        match self.cfg.algorithm {
            LockAlgorithm::Old => rows.push_str(&format!(" shadow [{}]", self.live_row(world, &lock.shadow_row()))),
            _ => rows.push_str(&format!(" queue [{}]", self.live_row(world, &lock.queue_row()))),
        }
        let clock = match &self.cfg.clocks {
            Clocks::Perfect => String::new(),
            Clocks::Ticks { .. } => format!(" | now {}", world.now),
        };
        let paused: Vec<String> = world
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| t.paused_at.is_some())
            .map(|(i, _)| format!("t{i}"))
            .collect();
        let paused = if paused.is_empty() {
            String::new()
        } else {
            format!(" | paused: {}", paused.join(" "))
        };
        format!("holders: {holders} | {rows}{clock}{paused}")
    }

    fn actor(&self, action: &Act) -> String {
        match action {
            Act::Pause(_) | Act::Crash(_) => "faults".into(),
            Act::Resume(i) => format!("t{i}"),
            other => other.to_string(),
        }
    }
}
