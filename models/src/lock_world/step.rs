//! The model's own driver: it carries out what the library's lifecycle machines ask for, against
//! one linearizable `RowStore`, with the model's clocks and faults, and keeps the state canonical.
//!
//! One concept, kept in one file over 1,000 lines: one function's job, the model's step over
//! the row locks' machines, with the helpers it alone calls.

use cassalock::algo::held_columns::HeldColumns;
use cassalock::algo::lease::{Released, RenewalEnd};
use cassalock::algo::lifecycle::{completes_enqueue, AcquireKind, Lifecycle, MainEnd};
use cassalock::algo::queue_column::{parse_queue_column, set_queue_time};
use cassalock::algo::{contract, Acquire, Action, FencingToken, Input, Leftover, LockId, SleepKind, Step, StepTag};
use cassalock::store::{RowStore, StoreCommand, StoreFailure, MICROS_PER_SECOND};

use cassalock_judge::holding::ModelTicks;
use cassalock_judge::k3;

use super::config::{Clocks, LockAlgorithm, LockModelConfig, LOCK};
use super::fairness;
use super::state::{Act, Lane, Main, Pending, Resource, Slot, Thread, World};
use super::trace::{note, short_column, show_acquire, show_time, Event, Events};

/// Reduction 6's bound on the sleeps and draws merged into one step (a machine asks for a draw
/// and a sleep between two requests).
const MOST_MERGED_LOCAL_STEPS: usize = 8;

#[cfg(debug_assertions)]
thread_local! {
    /// Time-source readings taken on this thread, for reduction 5's check in `apply`.
    static TIME_READINGS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
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
            now_tick: start,
            next_time_s: 1,
            store: RowStore::new(),
            threads: (0..self.cfg.threads)
                .map(|_| Thread {
                    main: Main::Idle,
                    slots: Vec::new(),
                    completed: 0,
                    overtaken: 0,
                    paused_at_tick: None,
                    crashed: false,
                    lost: false,
                    try_requests: 0,
                    ended_without_lock: 0,
                    clean_up_failed: 0,
                    released_ok: 0,
                    held_since_tick: 0,
                    resumed_at_tick: 0,
                    queue_start: None,
                })
                .collect(),
            resource: Resource::default(),
            wait_order: Vec::new(),
            order_broken: false,
            anyone_acquired: false,
            fault_used: false,
            store_failures_used: 0,
        }
    }

    /// C-try: the most store requests one TryGetLock call may send (`None`: not a try lock).
    pub fn try_request_bound(&self) -> Option<u64> {
        match self.cfg.algorithm {
            LockAlgorithm::TryGetLock => contract::try_call_max_requests(AcquireKind::QueueTryGetLock, &self.cfg.lock),
            _ => None,
        }
    }

    /// C-try: count a store request of thread i's main lane if it belongs to a try call
    /// (counted up to the bound + 1, which is all the property needs).
    fn count_try_request(&self, world: &mut World, i: usize) {
        let Some(bound) = self.try_request_bound() else {
            return;
        };
        let acquiring = world.threads[i]
            .slots
            .last()
            .is_some_and(|slot| slot.lifecycle.is_acquiring());
        if acquiring {
            let cap = u8::try_from(bound.saturating_add(1)).unwrap_or(u8::MAX);
            let t = &mut world.threads[i];
            t.try_requests = t.try_requests.saturating_add(1).min(cap);
        }
    }

    /// Thread i's clock, in microseconds (ticks are seconds).
    pub fn client_now_us(&self, world: &World, thread: usize) -> u64 {
        match &self.cfg.clocks {
            Clocks::Perfect => 0,
            Clocks::Ticks {
                client_offset_ticks, ..
            } => u64::from(world.now_tick + client_offset_ticks[thread]) * MICROS_PER_SECOND,
        }
    }

    /// The clock of the node coordinating thread i's requests, in microseconds.
    pub fn coordinator_now_us(&self, world: &World, thread: usize) -> u64 {
        match &self.cfg.clocks {
            Clocks::Perfect => 0,
            Clocks::Ticks {
                coordinator_offset_ticks,
                ..
            } => u64::from(world.now_tick + coordinator_offset_ticks[thread]) * MICROS_PER_SECOND,
        }
    }

    /// The slowest coordinator clock: a cell dead there is dead for every reader.
    pub(super) fn slowest_coordinator_us(&self, world: &World) -> u64 {
        (0..world.threads.len())
            .map(|i| self.coordinator_now_us(world, i))
            .min()
            .unwrap_or(0)
    }

    fn read_time_us(&self, world: &mut World, thread: usize) -> u64 {
        #[cfg(debug_assertions)]
        TIME_READINGS.with(|count| count.set(count.get() + 1));
        match &self.cfg.clocks {
            Clocks::Perfect => {
                let time = u64::from(world.next_time_s) * MICROS_PER_SECOND;
                world.next_time_s += 1;
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

    /// The acquisitions whose main cell is still live after they were released (K3, as
    /// `cassalock_judge::k3` defines it): the lock is taken by nobody. Returns (cell's thread
    /// id, ticks it stays live). On the model's one linearizable copy, a cell live after its
    /// release completed was necessarily written after the release's delete (an older version
    /// would be shadowed by the tombstone), so every such write counts as "after the release
    /// began".
    pub fn stuck_after_release(&self, world: &World) -> Option<(String, u64)> {
        let lock = LockId::new(LOCK).expect("valid");
        let reader_us = self.slowest_coordinator_us(world);
        let now_s = reader_us / MICROS_PER_SECOND;
        for (column, version) in world.store.raw_slice(&lock.main_row(), "") {
            if !version.is_live_at(reader_us) {
                continue;
            }
            let Some((thread, acquisition)) = self.owner(world, column) else {
                continue;
            };
            let t = world.threads.get(thread)?;
            // Only a release that returned Ok: a failed one says its cells may stay (C-release
            // judges the same set, in every row).
            if t.released_ok & Self::acquisition_bit(acquisition) != 0 && !t.crashed {
                let release = k3::Release::<ModelTicks> {
                    holder: column.to_owned(),
                    lock: LOCK.to_owned(),
                    began_stamp_us: 0,
                    completed_at: now_s,
                };
                let cell = k3::LiveCell::<ModelTicks> {
                    holder: column.to_owned(),
                    lock: LOCK.to_owned(),
                    seen_at: now_s,
                    stamp_us: version.timestamp_us.max(1),
                    live_until: match &version.body {
                        cassalock::store::CellBody::Value {
                            expires_at_s: Some(expiry),
                            ..
                        } => Some(*expiry),
                        _ => None,
                    },
                };
                if let Some(stuck) = k3::stuck(&release, &cell) {
                    let ticks = stuck
                        .remaining_when_seen()
                        .map_or(u64::MAX.saturating_sub(now_s), |left| left.as_secs());
                    return Some((column.to_owned(), ticks));
                }
            }
        }
        None
    }

    // ---- stepping ----

    /// The library's acquisition the threads run.
    fn acquire_kind(&self) -> AcquireKind {
        match self.cfg.algorithm {
            LockAlgorithm::GetLock => AcquireKind::QueueGetLock,
            LockAlgorithm::TryGetLock => AcquireKind::QueueTryGetLock,
            LockAlgorithm::Old => AcquireKind::OldGetLock,
        }
    }

    fn start_acquisition(&self, thread: usize, acquisition: u8, queue_start: Option<String>) -> Lifecycle {
        let lock = LockId::new(LOCK).expect("valid");
        let id = self.cfg.thread_id(thread, acquisition);
        Lifecycle::acquire_reading_the_queue_from(self.acquire_kind(), lock, id, queue_start)
    }

    /// Carry out a pending action for thread i; the answer for its machine.
    fn perform<O>(
        &self,
        world: &mut World,
        thread: usize,
        lane: Lane,
        (tag, action): Pending<O>,
        events: &mut Events,
    ) -> Input {
        let mut did = |what: String| {
            if let Some(events) = events {
                events.push(Event::Did { tag, what });
            }
        };
        match action {
            Action::Store(command) => {
                if lane == Lane::Main {
                    self.count_try_request(world, thread);
                }
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

    /// The fault injector fails a pending store request of thread i: `applied`, the store
    /// applies it and the reply is lost (a timeout); else it never reaches the store. Either
    /// way the machine is told the request failed (its retries are used up: see
    /// `Fault::StoreFailure`).
    fn fail_request<O>(
        &self,
        world: &mut World,
        thread: usize,
        lane: Lane,
        pending: Pending<O>,
        applied: bool,
        events: &mut Events,
    ) -> Input {
        debug_assert!(matches!(pending.1, Action::Store(_)), "only a store request can fail");
        world.store_failures_used += 1;
        let tag = pending.0;
        if applied {
            let _lost_reply = self.perform(world, thread, lane, pending, events);
            if let Some(events) = events {
                events.push(Event::Did {
                    tag,
                    what: "FAULT: the store applied it, but the reply is lost: the client sees a timeout".into(),
                });
            }
            Input::Failed(StoreFailure::Timeout)
        } else {
            if lane == Lane::Main {
                self.count_try_request(world, thread);
            }
            if let Some(events) = events {
                events.push(Event::Did {
                    tag,
                    what: "FAULT: the request fails before the store applies it".into(),
                });
            }
            Input::Failed(StoreFailure::Unavailable)
        }
    }

    fn done(events: &mut Events, tag: StepTag, what: String) {
        if let Some(events) = events {
            events.push(Event::Done { tag, what });
        }
    }

    /// Thread i's main task takes one step; `fail`: the fault injector fails its pending store
    /// request (after it applied, or before).
    fn step_main(&self, world: &mut World, i: usize, fail: Option<bool>, events: &mut Events) {
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
                if self.cfg.fairness {
                    world.wait_order.push(i as u8);
                }
                world.threads[i].try_requests = 0;
                world.threads[i].lost = false;
                let queue_start = world.threads[i].queue_start.take();
                let lifecycle = self.start_acquisition(i, acquisition, queue_start);
                world.threads[i].slots.push(Slot {
                    lifecycle,
                    renewal_next: None,
                    wake_at_us: 0,
                });
                self.run_main(world, i, Input::Start, events);
                self.merge_invisible_start(world, i, events);
            }
            Main::Acquiring { next } | Main::Releasing { next } => {
                let reads_time = matches!(next, Some((_, Action::ReadTime)));
                let input = match (next, fail) {
                    (None, _) => Input::Start,
                    (Some(pending), None) => self.perform(world, i, Lane::Main, pending, events),
                    (Some(pending), Some(applied)) => self.fail_request(world, i, Lane::Main, pending, applied, events),
                };
                if reads_time && !self.cfg.delayed_enqueue {
                    // Reduction 5 left a reading pending: it and the queue write are one step.
                    let now = self.machine_now_us(world, i);
                    let step = Self::current(world, i)
                        .lifecycle
                        .resume_main(&self.cfg.lock, input, now);
                    let step = self.complete_enqueue(world, i, step, now, events);
                    self.settle_main(world, i, step, events);
                } else {
                    self.run_main(world, i, input, events);
                }
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

    /// Reduction 4: starting an acquisition touches nothing another actor can see (no store
    /// request, no clock), so with a delayed enqueue the start and the acquisition's first
    /// action, reading the time, are one step (with an atomic enqueue that step writes the
    /// queue cell too). Every run that lets other actors move between the two has an
    /// equivalent run in which the start waits until just before the reading; only the
    /// intermediate states go. F counts waiting from this step, the thread's first act, so a
    /// waiter is overtaken only by a thread that read the time after it.
    fn merge_invisible_start(&self, world: &mut World, i: usize, events: &mut Events) {
        if !self.cfg.delayed_enqueue {
            return;
        }
        let pending = match &mut world.threads[i].main {
            Main::Acquiring { next } if matches!(next, Some((_, Action::ReadTime))) => next.take(),
            _ => None,
        };
        if let Some(pending) = pending {
            let input = self.perform(world, i, Lane::Main, pending, events);
            self.run_main(world, i, input, events);
        }
    }

    /// Reduction 6: thread i's main task carries out the sleeps and backoff draws it has just
    /// asked for in the same step, where [`LockModelConfig::local_steps_merge`] says nobody
    /// else can see them. Such a step reads and writes nothing but the thread's own machine,
    /// and no other actor's step is enabled or disabled by it: it commutes with every step of
    /// every other actor, so any run that lets others move between the request and the sleep
    /// has an equivalent run in which the sleep comes at once. Only the states in between go,
    /// and no property tells them apart from the state after the sleep: none looks at a
    /// pending action or inside a machine.
    ///
    /// What a machine does on waking is checked, not assumed: a merged step is kept only if it
    /// left everything but thread i's machine and pending action as it was (the store, the
    /// clocks, the resource, the wait order, the thread's task and bookkeeping, and whether it
    /// is in a contest other threads' polls wait for). A sleep whose wake-up does more (ends
    /// the acquisition, or reads the time and writes the queue cell in one step, as the atomic
    /// enqueue does with perfect clocks) stays a step of its own.
    fn merge_local_steps(&self, world: &mut World, i: usize, events: &mut Events) {
        if !self.cfg.local_steps_merge() {
            return;
        }
        for _ in 0..MOST_MERGED_LOCAL_STEPS {
            if !self.local_step_pending(world, i) {
                return;
            }
            let events_before = events.as_ref().map(Vec::len);
            let mut merged = world.clone();
            self.step_main(&mut merged, i, None, events);
            if !Self::only_machine_changed(world, &merged, i) {
                if let (Some(events), Some(len)) = (events.as_mut(), events_before) {
                    events.truncate(len);
                }
                return;
            }
            *world = merged;
        }
        debug_assert!(
            !self.local_step_pending(world, i),
            "t{i}'s machine asked for more than {MOST_MERGED_LOCAL_STEPS} sleeps and draws in a row"
        );
    }

    /// Is thread i's main task's pending action a sleep or a draw that reduction 6 may merge?
    fn local_step_pending(&self, world: &World, i: usize) -> bool {
        let t = &world.threads[i];
        let local = match &t.main {
            Main::Acquiring {
                next: Some((_, action)),
            }
            | Main::Releasing {
                next: Some((_, action)),
            } => matches!(
                action,
                Action::Draw { .. }
                    | Action::Sleep {
                        kind: SleepKind::Poll | SleepKind::Backoff | SleepKind::Retry,
                        ..
                    }
            ),
            _ => false,
        };
        // A TryGetLock's loop wait that waits for open contests is enabled by other threads.
        let waits_for_others =
            self.cfg.poll_outlasts_contention && t.slots.last().is_some_and(|slot| slot.lifecycle.in_try_loop_wait());
        local && !t.crashed && t.paused_at_tick.is_none() && !waits_for_others && self.main_enabled(world, i)
    }

    /// Reduction 6's check: did the step from `before` to `after` change nothing but thread
    /// i's machine and its pending action?
    fn only_machine_changed(before: &World, after: &World, i: usize) -> bool {
        let (b, a) = (&before.threads[i], &after.threads[i]);
        let same_task = std::mem::discriminant(&b.main) == std::mem::discriminant(&a.main);
        let contending = |t: &Thread| t.slots.last().is_some_and(|slot| slot.lifecycle.main_contending());
        let bookkeeping = |t: &Thread| {
            (
                t.slots.len(),
                t.completed,
                t.overtaken,
                t.lost,
                t.try_requests,
                t.ended_without_lock,
                t.clean_up_failed,
                t.released_ok,
                t.queue_start.clone(),
            )
        };
        same_task
            && contending(b) == contending(a)
            && bookkeeping(b) == bookkeeping(a)
            && before.now_tick == after.now_tick
            && before.next_time_s == after.next_time_s
            && before.store == after.store
            && before.resource == after.resource
            && before.wait_order == after.wait_order
            && before.anyone_acquired == after.anyone_acquired
            && before.order_broken == after.order_broken
    }

    /// The thread's current lifecycle (the last slot while it acquires, holds or releases).
    fn current(world: &mut World, i: usize) -> &mut Slot {
        world.threads[i]
            .slots
            .last_mut()
            .expect("a thread acquiring, holding or releasing has a lifecycle")
    }

    /// The clock a thread's machines are resumed with. Under reduction 5 nothing a machine
    /// decides depends on it (no TTL, no deadline; see the module's essay for the fencing
    /// counter's stamp), so it is a constant: the times a machine notes in its state (when it
    /// wrote its main cell) would only tell apart states that behave alike.
    fn machine_now_us(&self, world: &World, thread: usize) -> u64 {
        if self.cfg.time_seen_only_by_readings() {
            0
        } else {
            self.client_now_us(world, thread)
        }
    }

    /// Reduction 5: does thread i's next main step read the time source? A start does if the
    /// machine's first action is a reading (the library says which do; with a delayed enqueue
    /// the start and the reading are one step, see `merge_invisible_start`), and so does a
    /// step whose pending action is one. `apply` checks in debug builds that no other step
    /// reads it.
    fn main_step_reads_time(&self, world: &World, i: usize) -> bool {
        match &world.threads[i].main {
            Main::Idle => self.acquire_kind().starts_by_reading_time(),
            Main::Acquiring { next } => matches!(next, Some((_, Action::ReadTime))),
            _ => false,
        }
    }

    /// Step thread i's main lane with `input`, and keep its next action pending.
    fn run_main(&self, world: &mut World, i: usize, input: Input, events: &mut Events) {
        let now = self.machine_now_us(world, i);
        let starting = input == Input::Start && Self::current(world, i).lifecycle.is_acquiring();
        let mut step = Self::current(world, i)
            .lifecycle
            .resume_main(&self.cfg.lock, input, now);
        // Reduction 5 lets time pass only before a step that `main_step_reads_time` announced:
        // a reading that comes up in the middle of another step (Listing 7 enqueues after it
        // read the main row) stays pending, a step of its own.
        let may_read = starting || !self.cfg.time_seen_only_by_readings();
        if matches!(step.action, Action::ReadTime) && !self.cfg.delayed_enqueue && may_read {
            // The enqueue is one step: read the time (L5.1) and write the queue cell at once.
            let input = self.perform(world, i, Lane::Main, (step.tag, Action::<MainEnd>::ReadTime), events);
            step = Self::current(world, i)
                .lifecycle
                .resume_main(&self.cfg.lock, input, now);
            step = self.complete_enqueue(world, i, step, now, events);
        }
        self.settle_main(world, i, step, events);
    }

    /// With an atomic enqueue, the queue write that follows a reading is part of its step.
    fn complete_enqueue(
        &self,
        world: &mut World,
        i: usize,
        step: Step<MainEnd>,
        now: u64,
        events: &mut Events,
    ) -> Step<MainEnd> {
        if !completes_enqueue(&step.tag) {
            return step;
        }
        let input = self.perform(world, i, Lane::Main, (step.tag, step.action), events);
        Self::current(world, i)
            .lifecycle
            .resume_main(&self.cfg.lock, input, now)
    }

    /// Act on what thread i's main lane asked for: an outcome, or its next pending action.
    fn settle_main(&self, world: &mut World, i: usize, step: Step<MainEnd>, events: &mut Events) {
        match step.action {
            Action::Done(MainEnd::Acquire(outcome)) => {
                Self::done(events, step.tag, show_acquire(&outcome));
                self.acquired(world, i, outcome, events);
            }
            Action::Done(MainEnd::Release(outcome)) => {
                Self::done(events, step.tag, format!("{outcome:?}").to_lowercase());
                if outcome == Released::Released {
                    let t = &mut world.threads[i];
                    t.released_ok |= Self::acquisition_bit(t.completed);
                }
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

    /// The bit of acquisition `k` in a thread's per-acquisition bit sets.
    pub(super) fn acquisition_bit(k: u8) -> u8 {
        debug_assert!(k < 8, "per-acquisition bits hold 8 acquisitions");
        1u8 << k.min(7)
    }

    /// C-token: the token handed to thread i must be above every token handed out before.
    fn issue_token(&self, world: &mut World, i: usize, token: &FencingToken, events: &mut Events) {
        if !self.cfg.resource {
            return;
        }
        let resource = &mut world.resource;
        resource.last_acquirer = Some(i as u8);
        match &resource.highest_issued {
            Some(highest) if token.as_str() <= highest.as_str() => {
                resource.token_went_down = true;
                let highest = short_column(highest.as_str());
                note(events, || {
                    format!(
                        "C-token: t{i} is handed token {}, not above {highest}, handed out before",
                        short_column(token.as_str())
                    )
                });
            }
            _ => resource.highest_issued = Some(token.clone()),
        }
    }

    fn acquired(&self, world: &mut World, i: usize, outcome: Acquire, events: &mut Events) {
        let earlier = if self.cfg.fairness {
            fairness::leave_wait_order(world, i)
        } else {
            Vec::new()
        };
        match outcome {
            Acquire::Acquired { lease, token } => {
                note(events, || {
                    format!("t{i} HOLDS the lock (fencing token {})", short_column(token.as_str()))
                });
                self.issue_token(world, i, &token, events);
                if self.checks_c_lost() {
                    world.threads[i].held_since_tick = world.now_tick;
                }
                let coordinator_now_us = self.coordinator_now_us(world, i);
                if self.cfg.fairness {
                    fairness::check_queue_order(world, i, &lease, coordinator_now_us, events);
                    fairness::count_overtakes(world, i, &earlier, self.cfg.overtake_bound, events);
                }
                world.anyone_acquired = true;
                // Kept only for a thread with an acquisition still to come (the next start
                // takes it): no later step reads it.
                let t = &mut world.threads[i];
                if self.cfg.queue_read_from_last_hold && t.completed + 1 < self.cfg.acquisitions {
                    t.queue_start = lease.queue_column.clone();
                }
                world.threads[i].main = Main::Holding { wrote_resource: false };
            }
            other => {
                note(events, || format!("t{i} did not get the lock ({other:?})"));
                let t = &mut world.threads[i];
                let bit = Self::acquisition_bit(t.completed);
                t.ended_without_lock |= bit;
                if matches!(
                    other,
                    Acquire::Failed {
                        left: Leftover::CleanUpFailed,
                        ..
                    }
                ) {
                    t.clean_up_failed |= bit;
                }
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
        // C-token: is i the current holder: it acquired last, and nobody else believes?
        let sole_holder =
            world.resource.last_acquirer == Some(i as u8) && LockModel::holders(world).all(|holder| holder == i);
        let resource = &mut world.resource;
        let admission = cassalock::algo::admit(
            resource.highest.as_ref().map(FencingToken::as_str),
            token.as_str(),
            self.cfg.fencing,
        );
        let stale = admission.stale;
        if !admission.accepted {
            if sole_holder {
                resource.sole_holder_refused = true;
                note(events, || {
                    format!("C-token: t{i}, the current holder (it acquired last, nobody else believes), is refused")
                });
            }
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
    fn step_renewal(&self, world: &mut World, i: usize, task: usize, fail: Option<bool>, events: &mut Events) {
        let index = Self::renewal_slot(world, i, task);
        let now = self.client_now_us(world, i);
        let slot = &mut world.threads[i].slots[index];
        let lane = Lane::Renewal(task as u8);
        let input = match slot.renewal_next.take() {
            None => Input::Start,
            // Release asked it to stop: the lifecycle ends the lane at this sleep.
            Some((_, Action::Sleep { .. })) if slot.lifecycle.renewal_wakes_to_stop() => Input::Woke,
            Some(pending) => match fail {
                None => self.perform(world, i, lane, pending, events),
                Some(applied) => self.fail_request(world, i, lane, pending, applied, events),
            },
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
        if t.crashed || t.paused_at_tick.is_some() {
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
            Main::Acquiring {
                next: Some((_, Action::Sleep { .. })),
            } if self.cfg.poll_outlasts_contention
                && t.slots.last().is_some_and(|slot| slot.lifecycle.in_try_loop_wait()) =>
            {
                // Partial synchrony: the poll ends after every open contest has.
                !world.threads.iter().enumerate().any(|(j, other)| {
                    j != i
                        && !other.crashed
                        && other.paused_at_tick.is_none()
                        && other.slots.last().is_some_and(|slot| slot.lifecycle.main_contending())
                })
            }
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

    /// C-lost is checked only where leases have a TTL; elsewhere its bookkeeping (the ticks a
    /// hold began and a pause ended) would only tell apart states no property tells apart.
    pub(super) fn checks_c_lost(&self) -> bool {
        self.cfg.lock.ttl_s.is_some()
    }

    /// Reduction 3: a violation flag is kept only in the state its step made.
    ///
    /// `order_broken`, an overtake count past the bound, `stale_accepted`, `token_went_down` and
    /// `sole_holder_refused` record that a step broke a claim. No step reads them (only the
    /// properties and the F measure do), so clearing them when the next step starts changes no
    /// behaviour: the state that shows the flag is still reached, by the same shortest path, and
    /// every property and measure is judged on it. What goes away is the copy of the rest of
    /// the run that differs from the unbroken one only by the flag.
    fn forget_recorded_violations(&self, world: &mut World) {
        world.order_broken = false;
        let bound = self.cfg.overtake_bound;
        world
            .threads
            .update_where(|thread| thread.overtaken > bound, |thread| thread.overtaken = 0);
        let resource = &mut world.resource;
        resource.stale_accepted = false;
        resource.token_went_down = false;
        resource.sole_holder_refused = false;
    }

    /// The successor of `world` under `act`, with what happened (events only when asked), in
    /// the form the checker explores (with reduction 7, times relative to the clock).
    pub fn apply(&self, world: &World, act: Act, events: Events) -> (World, Events) {
        self.apply_in(world, act, events, self.cfg.relative_time())
    }

    /// As [`LockModel::apply`], but every time stays as it was read: a trace replayed from the
    /// initial state this way shows the times a run took (reduction 7 renames them after every
    /// step, which would make the same cell read differently from one step to the next). The
    /// initial state is the same in both forms, and so is every step's effect up to the
    /// renaming.
    pub fn apply_as_shown(&self, world: &World, act: Act, events: Events) -> (World, Events) {
        self.apply_in(world, act, events, false)
    }

    fn apply_in(&self, world: &World, act: Act, mut events: Events, relative_time: bool) -> (World, Events) {
        let mut next = world.clone();
        self.forget_recorded_violations(&mut next);
        #[cfg(debug_assertions)]
        let readings_before = TIME_READINGS.with(|count| count.get());
        match act {
            Act::Main(i) => {
                self.step_main(&mut next, usize::from(i), None, &mut events);
                self.merge_local_steps(&mut next, usize::from(i), &mut events);
            }
            Act::TicksThenMain { ticks, thread } => {
                debug_assert!(self.main_step_reads_time(world, usize::from(thread)));
                // Relative times keep the clock a few ticks above 1, and a clock bound stops it
                // below 255; only a trace replayed as shown could pass 255 (some 120 readings),
                // and it says so instead of wrapping.
                next.now_tick = next.now_tick.checked_add(ticks).unwrap_or_else(|| {
                    note(&mut events, || {
                        "the shown clock stops at 255 ticks: from here on this trace's times are not the run's".into()
                    });
                    u8::MAX
                });
                self.step_main(&mut next, usize::from(thread), None, &mut events);
                self.merge_local_steps(&mut next, usize::from(thread), &mut events);
            }
            Act::Renew { thread, task } => {
                self.step_renewal(&mut next, usize::from(thread), usize::from(task), None, &mut events)
            }
            Act::FailStore { thread, lane, applied } => match lane {
                Lane::Main => {
                    self.step_main(&mut next, usize::from(thread), Some(applied), &mut events);
                    self.merge_local_steps(&mut next, usize::from(thread), &mut events);
                }
                Lane::Renewal(task) => self.step_renewal(
                    &mut next,
                    usize::from(thread),
                    usize::from(task),
                    Some(applied),
                    &mut events,
                ),
            },
            Act::Tick => next.now_tick += 1,
            Act::Pause(i) => {
                next.threads[usize::from(i)].paused_at_tick = Some(next.now_tick);
                next.fault_used = true;
            }
            Act::Resume(i) => {
                let t = &mut next.threads[usize::from(i)];
                t.paused_at_tick = None;
                if self.checks_c_lost() {
                    t.resumed_at_tick = next.now_tick;
                }
            }
            Act::Crash(i) => {
                let t = &mut next.threads[usize::from(i)];
                t.crashed = true;
                t.main = Main::Finished;
                t.slots.clear();
                next.wait_order.retain(|&w| w != i);
                next.fault_used = true;
            }
        }
        #[cfg(debug_assertions)]
        if self.cfg.time_seen_only_by_readings() {
            let read = TIME_READINGS.with(|count| count.get()) != readings_before;
            let announced = match act {
                Act::Main(i) | Act::TicksThenMain { thread: i, .. } => self.main_step_reads_time(world, usize::from(i)),
                _ => false,
            };
            debug_assert!(
                !read || announced,
                "reduction 5: {act} read the time source in a step `main_step_reads_time` did not announce, so time could not pass before it (from {:?})",
                world.threads.iter().map(|t| &t.main).collect::<Vec<_>>()
            );
        }
        // A lifecycle whose lanes have both ended acts no more.
        next.threads.update_where(
            |thread| thread.slots.iter().any(|slot| slot.lifecycle.is_over()),
            |thread| thread.slots.retain(|slot| !slot.lifecycle.is_over()),
        );
        self.canonicalize(&mut next);
        if self.checks_c_lost() && !self.cfg.keep_hold_ticks {
            Self::forget_unread_hold_ticks(&mut next);
        }
        if relative_time {
            self.relative_times(&mut next);
        }
        (next, events)
    }

    /// Reduction 8: a thread's `held_since_tick` (C-lost's bookkeeping) is set to 0 where no
    /// property can read it any more. C-lost reads it only among threads that believe they hold
    /// the lock: a later holder j's tick decides whether j acquired no earlier than holder i
    /// (`held_since_j >= held_since_i`) and how long i has not known (`now - held_since_j`).
    /// So it is unread for a thread that does not believe it holds (it is set again when it
    /// next acquires), and for the earliest holder once its tick is below the clock and below
    /// every other holder's: every holder there is or will be acquired strictly later, so each
    /// comparison with its tick comes out the same with 0 (ticks start at 1), and its own tick
    /// is never the later one whose distance to the clock is counted.
    pub(super) fn forget_unread_hold_ticks(world: &mut World) {
        let now = world.now_tick;
        let holding: Vec<(usize, u8)> = world
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| matches!(t.main, Main::Holding { .. }))
            .map(|(i, t)| (i, t.held_since_tick))
            .collect();
        let earliest_alone = holding
            .iter()
            .filter(|&&(i, since)| since < now && holding.iter().all(|&(j, other)| j == i || since < other))
            .map(|&(i, _)| i)
            .next();
        let unread = |i: usize, t: &Thread| !matches!(t.main, Main::Holding { .. }) || Some(i) == earliest_alone;
        for i in 0..world.threads.len() {
            if world.threads[i].held_since_tick != 0 && unread(i, &world.threads[i]) {
                world.threads[i].held_since_tick = 0;
            }
        }
    }

    /// Reduction 7 ([`LockModelConfig::relative_time`]): rename every time the world holds (in
    /// the queue columns of the store, the machines, their pending commands, the resource's
    /// tokens) and the clock, so that the times below `now + min offset` are 1, 2, 3, ... in
    /// order and the clock and the times from there up keep their distances to one another,
    /// just above those. Every later reading is at least `now + min offset`, so it compares
    /// with every renamed time as it would have with the time itself, and nothing but the
    /// time source reads a clock (reduction 5's condition): no step decides differently.
    pub(super) fn relative_times(&self, world: &mut World) {
        let Clocks::Ticks {
            client_offset_ticks, ..
        } = &self.cfg.clocks
        else {
            return;
        };
        let lowest_offset = u64::from(client_offset_ticks.iter().copied().min().unwrap_or(0));
        let window_tick = u64::from(world.now_tick) + lowest_offset;
        let mut below: Vec<u64> = Vec::new();
        let mut times_below = |column: &str| {
            if let Some((time_us, _)) = parse_queue_column(column) {
                debug_assert_eq!(time_us % MICROS_PER_SECOND, 0, "readings are whole ticks: {column}");
                let tick = time_us / MICROS_PER_SECOND;
                if tick < window_tick {
                    below.push(tick);
                }
            }
        };
        world.store.see_columns(&mut times_below);
        for thread in world.threads.iter() {
            Self::thread_columns(thread, &mut times_below);
        }
        world.resource.highest.see_columns(&mut times_below);
        world.resource.highest_issued.see_columns(&mut times_below);
        below.sort_unstable();
        below.dedup();
        let new_window_tick = (below.len() as u64 + 1).max(lowest_offset + 1);
        let renamed = |tick: u64| -> u64 {
            if tick < window_tick {
                below.binary_search(&tick).expect("collected above") as u64 + 1
            } else {
                tick - window_tick + new_window_tick
            }
        };
        if new_window_tick == window_tick && below.iter().all(|&tick| renamed(tick) == tick) {
            return;
        }
        let changes = |column: &str| {
            parse_queue_column(column).is_some_and(|(time_us, _)| {
                let tick = time_us / MICROS_PER_SECOND;
                renamed(tick) != tick
            })
        };
        let mut rename = |column: &mut String| {
            if let Some((time_us, _)) = parse_queue_column(column) {
                set_queue_time(column, renamed(time_us / MICROS_PER_SECOND) * MICROS_PER_SECOND);
            }
        };
        world.store.rename_columns(&mut rename);
        world.threads.update_where(
            |thread| {
                let mut any = false;
                Self::thread_columns(thread, &mut |column| any |= changes(column));
                any
            },
            |thread| Self::rename_thread_columns(thread, &mut rename),
        );
        world.resource.highest.rename_columns(&mut rename);
        world.resource.highest_issued.rename_columns(&mut rename);
        let now_tick = new_window_tick - lowest_offset;
        debug_assert!(
            now_tick <= u64::from(world.now_tick),
            "renaming never moves the clock up"
        );
        world.now_tick = u8::try_from(now_tick).expect("below the clock it was");
    }

    /// Every string of a thread that may be a queue column (reduction 7).
    fn thread_columns(thread: &Thread, see: &mut dyn FnMut(&str)) {
        if let Main::Acquiring {
            next: Some((_, action)),
        }
        | Main::Releasing {
            next: Some((_, action)),
        } = &thread.main
        {
            action.see_columns(see);
        }
        for slot in &thread.slots {
            slot.lifecycle.see_columns(see);
            if let Some((_, action)) = &slot.renewal_next {
                action.see_columns(see);
            }
        }
        thread.queue_start.see_columns(see);
    }

    /// Rename every string of [`LockModel::thread_columns`] with `rename`.
    fn rename_thread_columns(thread: &mut Thread, rename: &mut dyn FnMut(&mut String)) {
        if let Main::Acquiring {
            next: Some((_, action)),
        }
        | Main::Releasing {
            next: Some((_, action)),
        } = &mut thread.main
        {
            action.rename_columns(rename);
        }
        for slot in &mut thread.slots {
            slot.lifecycle.rename_columns(rename);
            if let Some((_, action)) = &mut slot.renewal_next {
                action.rename_columns(rename);
            }
        }
        thread.queue_start.rename_columns(rename);
    }

    /// The ways the fault injector can fail `command`: a read fails (applied or not is the same);
    /// a write or delete fails before or after the store applied it.
    fn failures(thread: u8, lane: Lane, command: &StoreCommand, acts: &mut Vec<Act>) {
        acts.push(Act::FailStore {
            thread,
            lane,
            applied: false,
        });
        if !matches!(command, StoreCommand::ReadSlice { .. }) {
            acts.push(Act::FailStore {
                thread,
                lane,
                applied: true,
            });
        }
    }

    /// Every action enabled in `world`.
    pub fn enabled(&self, world: &World, acts: &mut Vec<Act>) {
        for (i, t) in world.threads.iter().enumerate() {
            let id = i as u8;
            if t.crashed {
                continue;
            }
            if t.paused_at_tick.is_some() {
                // A pause lasts at least one tick.
                if world.now_tick > t.paused_at_tick.unwrap_or(0) {
                    acts.push(Act::Resume(id));
                }
                continue;
            }
            let may_fail = world.store_failures_used < self.cfg.store_failures;
            if self.main_enabled(world, i) {
                acts.push(Act::Main(id));
                if self.cfg.time_seen_only_by_readings() && self.main_step_reads_time(world, i) {
                    // Reduction 7: time has no bound; else it stops at the clock bound.
                    let left = self
                        .cfg
                        .max_ticks()
                        .map_or(u8::MAX, |max| max.saturating_sub(world.now_tick));
                    for ticks in 1..=self.cfg.useful_tick_jumps().min(left) {
                        acts.push(Act::TicksThenMain { ticks, thread: id });
                    }
                }
                if may_fail {
                    if let Main::Acquiring {
                        next: Some((_, Action::Store(command))),
                    }
                    | Main::Releasing {
                        next: Some((_, Action::Store(command))),
                    } = &t.main
                    {
                        Self::failures(id, Lane::Main, command, acts);
                    }
                }
            }
            let running = t.slots.iter().filter(|slot| slot.lifecycle.renewal_running());
            for (k, slot) in running.enumerate() {
                if self.renewal_enabled(world, i, slot) {
                    acts.push(Act::Renew {
                        thread: id,
                        task: k as u8,
                    });
                    if let (true, Some((_, Action::Store(command)))) = (may_fail, &slot.renewal_next) {
                        Self::failures(id, Lane::Renewal(k as u8), command, acts);
                    }
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
        if let (false, Some(max)) = (self.cfg.time_seen_only_by_readings(), self.cfg.max_ticks()) {
            if world.now_tick < max && !(0..world.threads.len()).any(|i| self.urgent(world, i)) {
                acts.push(Act::Tick);
            }
        }
    }
}
