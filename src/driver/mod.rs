//! The async driver: runs the machines of [`crate::algo`] against any [`Store`] and [`Clock`].
//!
//! The driver only moves data and time: it executes store commands (stamping client writes
//! with a [`MonotonicTimestamps`] reading), sleeps on the clock, draws random numbers from a
//! seeded generator, reads the time source, and starts, signals and joins the renewal task.
//! Every decision is the machine's: a lock's whole life (acquire, renew while held, release,
//! what the guard knows about its lease) is one [`Lifecycle`], whose two lanes run here as two
//! tasks. `Engine::drive` is the one loop that carries out any machine's actions.

pub mod any_lock;
pub mod clock;
pub mod family;
pub mod notify;
pub mod settings;
pub mod time_service;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;

use crate::algo::global_time::{GlobalTimeReading, ReadGlobalTime};
use crate::algo::lease::{LeaseLost, Released, RenewalEnd};
use crate::algo::lifecycle::{AcquireKind, Lifecycle, MainEnd};
use crate::algo::queue_column::{ClientId, InvalidName, QueueStarts, ThreadSlots};
use crate::algo::retry::Retrying;
use crate::algo::Leftover;
use crate::algo::{
    Acquire, Action, FencingToken, Input, LockConfig, LockId, Machine, RetryPolicy, SleepKind, Step, StepTag, ThreadId,
};
use crate::store::{MonotonicTimestamps, Store, StoreFailure, StoreOp, StoreReply, StoreRequest};

pub use clock::{Clock, SystemClock};
pub use settings::{Algorithm, Settings, SettingsError, TimeSource};

/// Errors of the lock API.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    #[error(transparent)]
    Name(#[from] InvalidName),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("gave up after waiting {waited_ms} ms for lock {lock} (max_wait_ms)")]
    TimedOut { lock: String, waited_ms: u64 },
    #[error("the store kept failing: {0}")]
    Store(StoreFailure),
    #[error("acquiring lock {lock}: the store kept failing ({failure}); {}", match left {
        Leftover::Nothing => "nothing of this attempt was left behind",
        Leftover::CleanUpFailed => "deleting what this attempt wrote failed too: its cells may keep others from the lock until their TTL runs out",
        Leftover::NotCleanedUp => "cells of this attempt were left to their TTL (the thesis's listing does not clean up)",
    })]
    AcquireFailed {
        lock: String,
        failure: StoreFailure,
        left: Leftover,
    },
    #[error("the lease on lock {lock} was lost while held ({why:?}): another holder may have run concurrently; the cells were deleted anyway")]
    LeaseLost { lock: String, why: LeaseLost },
}

/// What a driver reports while it runs (the simulator's trace and checkers listen to these).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockEvent {
    /// A machine step sent a request (`client_us`: the sender's clock).
    Request {
        thread: ThreadId,
        tag: StepTag,
        request: StoreRequest,
        client_us: u64,
    },
    /// The answer to that request.
    Reply {
        thread: ThreadId,
        result: Result<StoreReply, StoreFailure>,
        client_us: u64,
    },
    /// A machine step sleeps.
    Sleep {
        thread: ThreadId,
        tag: StepTag,
        ms: u64,
        kind: SleepKind,
    },
    /// The lock is held.
    Acquired {
        thread: ThreadId,
        lock: LockId,
        token: FencingToken,
        client_us: u64,
    },
    /// An acquisition ended without the lock (TryGetLock said no, max wait, store failures).
    NotAcquired {
        thread: ThreadId,
        lock: LockId,
        outcome: Acquire,
        client_us: u64,
    },
    /// Release began: from here the holder no longer uses the lock.
    Releasing {
        thread: ThreadId,
        lock: LockId,
        client_us: u64,
    },
    /// Release ended.
    Released {
        thread: ThreadId,
        lock: LockId,
        outcome: Released,
        client_us: u64,
    },
    /// With `Settings::reuse_thread_ids`: an acquisition begins under a thread id an earlier
    /// acquisition of this locker used (and has ended). Events and cells under the id from
    /// here on are the new acquisition's (the simulator's oracles stop attributing them to
    /// the earlier one). Never sent without reuse.
    Reused {
        thread: ThreadId,
        lock: LockId,
        client_us: u64,
        /// Every write of the new acquisition is stamped above this (the locker's last
        /// timestamp so far; its generator strictly increases): a cell under the id stamped
        /// at or below it is an earlier acquisition's.
        stamps_above_us: u64,
    },
    /// The renewal task found the lease lost.
    LeaseLost {
        thread: ThreadId,
        lock: LockId,
        why: LeaseLost,
        client_us: u64,
    },
}

/// Receives [`LockEvent`]s.
pub trait Observer: Send + Sync + 'static {
    fn on_event(&self, event: LockEvent);
}

/// Store requests made by one engine, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestCounts {
    pub reads: u64,
    pub writes: u64,
    pub deletes: u64,
    pub failures: u64,
}

impl RequestCounts {
    pub fn total(&self) -> u64 {
        self.reads + self.writes + self.deletes
    }
}

#[derive(Default)]
struct Counters {
    reads: AtomicU64,
    writes: AtomicU64,
    deletes: AtomicU64,
    failures: AtomicU64,
}

/// Runs machines: the store, the clock, the write-timestamp generator, the random generator
/// and the time source of one process.
pub struct Engine<S, C> {
    store: S,
    clock: C,
    time_source: TimeSource,
    retry: RetryPolicy,
    timestamps: MonotonicTimestamps,
    rng: Mutex<ChaCha8Rng>,
    counters: Counters,
    observer: Option<Arc<dyn Observer>>,
}

/// What the loop needs besides the machine: the renewal task's stop signal (for renewal
/// sleeps), and the lifecycle and its renewal task (for [`Action::StopRenewal`]).
#[derive(Default)]
struct Hooks {
    stop: Option<watch::Receiver<bool>>,
    lifecycle: Option<Arc<Mutex<Lifecycle>>>,
    renewal: Option<RenewalTask>,
}

struct RenewalTask {
    stop: watch::Sender<bool>,
    handle: tokio::task::JoinHandle<()>,
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl<S: Store, C: Clock> Engine<S, C> {
    pub fn new(store: S, clock: C, time_source: TimeSource, retry: RetryPolicy, seed: u64) -> Self {
        Engine {
            store,
            clock,
            time_source,
            retry,
            timestamps: MonotonicTimestamps::new(),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            counters: Counters::default(),
            observer: None,
        }
    }

    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    pub fn clock(&self) -> &C {
        &self.clock
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn requests(&self) -> RequestCounts {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        RequestCounts {
            reads: load(&self.counters.reads),
            writes: load(&self.counters.writes),
            deletes: load(&self.counters.deletes),
            failures: load(&self.counters.failures),
        }
    }

    fn emit(&self, event: impl FnOnce() -> LockEvent) {
        if let Some(observer) = &self.observer {
            observer.on_event(event());
        }
    }

    /// Run `machine` to its end (inside [`Retrying`]).
    pub async fn run<M>(&self, machine: M, config: &M::Config, thread: &ThreadId) -> M::Output
    where
        M: Machine<Command = crate::store::StoreCommand, Reply = crate::store::StoreReply> + Send,
        M::Config: AsRef<RetryPolicy> + Sync,
    {
        self.drive(Retrying::new(machine), config, thread, &mut Hooks::default())
            .await
    }

    /// Carry out `machine`'s actions until it is done. (Wrap it in [`Retrying`] first unless
    /// it retries on its own, as a [`Lifecycle`]'s lanes do.)
    async fn drive<M>(&self, mut machine: M, config: &M::Config, thread: &ThreadId, hooks: &mut Hooks) -> M::Output
    where
        M: Machine<Command = crate::store::StoreCommand, Reply = crate::store::StoreReply> + Send,
        M::Config: AsRef<RetryPolicy> + Sync,
    {
        let mut input = Input::Start;
        loop {
            let step = machine.resume(config, input, self.clock.now_us());
            input = match step.action {
                Action::Done(output) => return output,
                Action::Store(command) => {
                    let request = command.stamp(|| self.timestamps.next(self.clock.now_us()));
                    self.count(&request);
                    self.emit(|| LockEvent::Request {
                        thread: thread.clone(),
                        tag: step.tag,
                        request: request.clone(),
                        client_us: self.clock.now_us(),
                    });
                    let result = self.store.execute(request).await;
                    if result.is_err() {
                        self.counters.failures.fetch_add(1, Ordering::Relaxed);
                    }
                    self.emit(|| LockEvent::Reply {
                        thread: thread.clone(),
                        result: result.clone(),
                        client_us: self.clock.now_us(),
                    });
                    match result {
                        Ok(reply) => Input::Reply(reply),
                        Err(failure) => Input::Failed(failure),
                    }
                }
                Action::Sleep { ms, kind } => {
                    self.emit(|| LockEvent::Sleep {
                        thread: thread.clone(),
                        tag: step.tag,
                        ms,
                        kind,
                    });
                    match (&mut hooks.stop, kind) {
                        (Some(stop), SleepKind::Renewal) => {
                            if sleep_unless_stopped(&self.clock, ms, stop).await {
                                Input::StopRequested
                            } else {
                                Input::Woke
                            }
                        }
                        _ => {
                            self.clock.sleep_ms(ms).await;
                            Input::Woke
                        }
                    }
                }
                Action::Draw { max_ms } => {
                    let drawn = self
                        .rng
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .gen_range(0..=max_ms);
                    Input::Drawn(drawn)
                }
                Action::ReadTime => match self.read_time(thread).await {
                    Ok(time_us) => Input::Time(time_us),
                    Err(failure) => Input::Failed(failure),
                },
                Action::StopRenewal { wait } => {
                    if let Some(lifecycle) = &hooks.lifecycle {
                        lock_ignoring_poison(lifecycle).stop_renewal();
                    }
                    if let Some(task) = hooks.renewal.take() {
                        // The task may have ended already (lease lost): then nobody listens.
                        let _ = task.stop.send(true);
                        if wait {
                            let _ = task.handle.await;
                        }
                    }
                    Input::RenewalStopped
                }
            };
        }
    }

    fn count(&self, request: &StoreRequest) {
        let counter = match request {
            StoreOp::ReadSlice { .. } => &self.counters.reads,
            StoreOp::Write { .. } => &self.counters.writes,
            StoreOp::Delete { .. } => &self.counters.deletes,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A reading of the time source: the local clock, or the time service's GlobalTime.
    fn read_time<'a>(&'a self, thread: &'a ThreadId) -> BoxFuture<'a, Result<u64, StoreFailure>> {
        Box::pin(async move {
            match self.time_source {
                TimeSource::Local => Ok(self.clock.now_us()),
                TimeSource::Global => match self
                    .drive(
                        Retrying::new(ReadGlobalTime::new()),
                        &self.retry,
                        thread,
                        &mut Hooks::default(),
                    )
                    .await
                {
                    GlobalTimeReading::Time(time_us) => Ok(time_us),
                    GlobalTimeReading::NotYetWritten => Err(StoreFailure::Other(
                        "the time service has not written GlobalTime yet: start its replicas first".into(),
                    )),
                    GlobalTimeReading::Failed(failure) => Err(failure),
                },
            }
        })
    }
}

struct LockerInner<S, C> {
    engine: Engine<S, C>,
    client: ClientId,
    algorithm: Algorithm,
    config: LockConfig,
    next_sequence: AtomicU64,
    /// With `Settings::reuse_thread_ids`: the slots in use.
    slots: Option<Arc<Mutex<ThreadSlots>>>,
    /// With `Settings::queue_read_from_last_hold`: per lock, the queue column of this
    /// locker's last hold (at most [`MAX_QUEUE_STARTS`] locks).
    queue_starts: Option<Mutex<QueueStarts>>,
    acquisitions: AtomicU64,
}

/// How many locks' queue starts a locker with `Settings::queue_read_from_last_hold` keeps;
/// past that, it forgets the one held least recently (which then reads from its row's start
/// once).
pub const MAX_QUEUE_STARTS: usize = 4096;

/// A thread-id slot taken for one acquisition, given back when dropped: after the
/// acquisition's end (not acquired, or released), which the guard's drop carries into its
/// background release.
#[derive(Default)]
struct SlotHold(Option<(Arc<Mutex<ThreadSlots>>, u64)>);

impl Drop for SlotHold {
    fn drop(&mut self) {
        if let Some((slots, slot)) = self.0.take() {
            lock_ignoring_poison(&slots).give_back(slot);
        }
    }
}

/// A process's handle on the locks: `lock` (GetLock) and `try_lock` (TryGetLock).
pub struct RemoteLocker<S, C> {
    inner: Arc<LockerInner<S, C>>,
}

impl<S, C> Clone for RemoteLocker<S, C> {
    fn clone(&self) -> Self {
        RemoteLocker {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<S: Store, C: Clock> RemoteLocker<S, C> {
    /// A locker over `store`, reading `clock`. Settings are validated here.
    pub fn new(store: S, clock: C, settings: Settings) -> Result<Self, LockError> {
        Self::build(store, clock, settings, None)
    }

    /// As [`RemoteLocker::new`], reporting every step to `observer`.
    pub fn with_observer(
        store: S,
        clock: C,
        settings: Settings,
        observer: Arc<dyn Observer>,
    ) -> Result<Self, LockError> {
        Self::build(store, clock, settings, Some(observer))
    }

    fn build(store: S, clock: C, settings: Settings, observer: Option<Arc<dyn Observer>>) -> Result<Self, LockError> {
        let (client, config) = settings.validate()?;
        let mut engine = Engine::new(
            store,
            clock,
            settings.time_source,
            settings.retry,
            settings.backoff_seed(),
        );
        engine.observer = observer;
        Ok(RemoteLocker {
            inner: Arc::new(LockerInner {
                engine,
                client,
                algorithm: settings.algorithm,
                config,
                next_sequence: AtomicU64::new(0),
                slots: settings
                    .reuse_thread_ids
                    .then(|| Arc::new(Mutex::new(ThreadSlots::default()))),
                queue_starts: settings
                    .queue_read_from_last_hold
                    .then(|| Mutex::new(QueueStarts::new(MAX_QUEUE_STARTS))),
                acquisitions: AtomicU64::new(0),
            }),
        })
    }

    /// GetLock: wait until the lock is held.
    pub async fn lock(&self, lock_id: &str) -> Result<LockGuard<S, C>, LockError> {
        match self.acquire(lock_id, self.inner.algorithm.get_lock()).await? {
            Some(guard) => Ok(guard),
            None => unreachable!("GetLock returns only with the lock, a timeout or a failure"),
        }
    }

    /// TryGetLock: take the lock if that needs no waiting for another owner.
    pub async fn try_lock(&self, lock_id: &str) -> Result<Option<LockGuard<S, C>>, LockError> {
        self.acquire(lock_id, self.inner.algorithm.try_lock()).await
    }

    /// Store requests this locker has made (renewals and releases included).
    pub fn requests(&self) -> RequestCounts {
        self.inner.engine.requests()
    }

    /// Acquisitions this locker has made.
    pub fn acquisitions(&self) -> u64 {
        self.inner.acquisitions.load(Ordering::Relaxed)
    }

    /// T1-server's reading of a real cluster: the threads whose cells lock `lock_id`'s main row
    /// holds now, by one slice read at the store's consistency level
    /// ([`crate::algo::server_holder::main_row_reading`]); `Ok(None)` when the row filled the
    /// reading. Not a lock request: it is not counted in [`RemoteLocker::requests`], and it
    /// changes nothing.
    pub async fn holders_on_server(&self, lock_id: &str) -> Result<Option<Vec<String>>, LockError> {
        let lock = LockId::new(lock_id)?;
        let read = crate::algo::server_holder::main_row_reading(&lock).stamp(|| 0);
        match self
            .inner
            .engine
            .store()
            .execute(read)
            .await
            .map_err(LockError::Store)?
        {
            StoreReply::Slice(cells) => Ok(crate::algo::server_holder::holders_read(&cells)),
            StoreReply::Done => Err(LockError::Store(StoreFailure::Other(format!(
                "reading the main row of {lock_id}: the store answered a read with an acknowledgement"
            )))),
        }
    }

    pub fn client_id(&self) -> &str {
        self.inner.client.as_str()
    }

    pub fn algorithm(&self) -> Algorithm {
        self.inner.algorithm
    }

    /// The thread id of a new acquisition: a new sequence number, or with
    /// `reuse_thread_ids` the lowest free slot, held until the acquisition has ended (and
    /// whether an earlier acquisition used it).
    fn next_thread(&self) -> (ThreadId, SlotHold, bool) {
        match &self.inner.slots {
            None => (
                self.inner
                    .client
                    .thread(self.inner.next_sequence.fetch_add(1, Ordering::Relaxed)),
                SlotHold::default(),
                false,
            ),
            Some(slots) => {
                let (slot, reused) = lock_ignoring_poison(slots).take();
                (
                    self.inner.client.thread(slot),
                    SlotHold(Some((Arc::clone(slots), slot))),
                    reused,
                )
            }
        }
    }

    /// Thread-id slots held by acquisitions in flight (`None` without `reuse_thread_ids`).
    pub fn thread_slots_in_use(&self) -> Option<u64> {
        self.inner
            .slots
            .as_ref()
            .map(|slots| lock_ignoring_poison(slots).in_use())
    }

    /// Run a lifecycle's main lane through the acquisition.
    async fn acquire(&self, lock_id: &str, kind: AcquireKind) -> Result<Option<LockGuard<S, C>>, LockError> {
        let lock = LockId::new(lock_id)?;
        let (thread, slot, reused) = self.next_thread();
        let engine = &self.inner.engine;
        if reused {
            engine.emit(|| LockEvent::Reused {
                thread: thread.clone(),
                lock: lock.clone(),
                client_us: engine.clock.now_us(),
                stamps_above_us: engine.timestamps.last(),
            });
        }
        let queue_start = self
            .inner
            .queue_starts
            .as_ref()
            .and_then(|starts| lock_ignoring_poison(starts).start(&lock).map(str::to_owned));
        let lifecycle = Arc::new(Mutex::new(Lifecycle::acquire_reading_the_queue_from(
            kind,
            lock.clone(),
            thread.clone(),
            queue_start,
        )));
        let started_us = engine.clock.now_us();
        let lane = MainLane(Arc::clone(&lifecycle));
        let end = engine
            .drive(lane, &self.inner.config, &thread, &mut Hooks::default())
            .await;
        let MainEnd::Acquire(outcome) = end else {
            unreachable!("a lifecycle's first main-lane run ends with the acquisition")
        };
        let now_us = engine.clock.now_us();
        match outcome {
            Acquire::Acquired { lease, token } => {
                self.inner.acquisitions.fetch_add(1, Ordering::Relaxed);
                if let (Some(starts), Some(column)) = (&self.inner.queue_starts, &lease.queue_column) {
                    lock_ignoring_poison(starts).remember(&lease.lock, column);
                }
                engine.emit(|| LockEvent::Acquired {
                    thread,
                    lock,
                    token: token.clone(),
                    client_us: now_us,
                });
                Ok(Some(LockGuard::start(
                    Arc::clone(&self.inner),
                    lifecycle,
                    lease.lock,
                    lease.thread,
                    token,
                    slot,
                )))
            }
            other => {
                engine.emit(|| LockEvent::NotAcquired {
                    thread,
                    lock: lock.clone(),
                    outcome: other.clone(),
                    client_us: now_us,
                });
                match other {
                    Acquire::NotAcquired => Ok(None),
                    Acquire::TimedOut => Err(LockError::TimedOut {
                        lock: lock.to_string(),
                        waited_ms: now_us.saturating_sub(started_us) / 1000,
                    }),
                    Acquire::Failed { failure, left } => Err(LockError::AcquireFailed {
                        lock: lock.to_string(),
                        failure,
                        left,
                    }),
                    Acquire::Acquired { .. } => unreachable!("handled above"),
                }
            }
        }
    }
}

fn lock_ignoring_poison<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A lifecycle's main lane, as a machine the engine drives.
struct MainLane(Arc<Mutex<Lifecycle>>);

impl Machine for MainLane {
    type Config = LockConfig;
    type Output = MainEnd;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<MainEnd> {
        lock_ignoring_poison(&self.0).resume_main(config, input, now_us)
    }
}

/// A lifecycle's renewal lane, as a machine the engine drives.
struct RenewalLane(Arc<Mutex<Lifecycle>>);

impl Machine for RenewalLane {
    type Config = LockConfig;
    type Output = RenewalEnd;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<RenewalEnd> {
        lock_ignoring_poison(&self.0).resume_renewal(config, input, now_us)
    }
}

/// A held lock. Release it with [`LockGuard::release`]; dropping it unreleased stops renewal
/// and releases in the background.
pub struct LockGuard<S: Store, C: Clock> {
    inner: Arc<LockerInner<S, C>>,
    lifecycle: Arc<Mutex<Lifecycle>>,
    lock: LockId,
    thread: ThreadId,
    token: FencingToken,
    renewal: Option<RenewalTask>,
    released: bool,
    /// Given back when the release has run (the guard dropped, or the background release).
    slot: SlotHold,
}

impl<S: Store, C: Clock> LockGuard<S, C> {
    /// Hold the lock; run the renewal lane if the lifecycle armed it.
    fn start(
        inner: Arc<LockerInner<S, C>>,
        lifecycle: Arc<Mutex<Lifecycle>>,
        lock: LockId,
        thread: ThreadId,
        token: FencingToken,
        slot: SlotHold,
    ) -> Self {
        let renewal = lock_ignoring_poison(&lifecycle).renewal_running().then(|| {
            let (stop, stop_rx) = watch::channel(false);
            let task_inner = Arc::clone(&inner);
            let lane = RenewalLane(Arc::clone(&lifecycle));
            let (task_lock, task_thread) = (lock.clone(), thread.clone());
            let handle = tokio::spawn(async move {
                let engine = &task_inner.engine;
                let mut hooks = Hooks {
                    stop: Some(stop_rx),
                    ..Hooks::default()
                };
                let end = engine.drive(lane, &task_inner.config, &task_thread, &mut hooks).await;
                if let RenewalEnd::Lost(why) = end {
                    engine.emit(|| LockEvent::LeaseLost {
                        thread: task_thread,
                        lock: task_lock,
                        why,
                        client_us: engine.clock.now_us(),
                    });
                }
            });
            RenewalTask { stop, handle }
        });
        LockGuard {
            inner,
            lifecycle,
            lock,
            thread,
            token,
            renewal,
            released: false,
            slot,
        }
    }

    pub fn lock_id(&self) -> &LockId {
        &self.lock
    }

    pub fn thread_id(&self) -> &ThreadId {
        &self.thread
    }

    /// The fencing token: pass it to the protected resource, which should refuse any token
    /// lower than one it has already seen.
    pub fn fencing_token(&self) -> &FencingToken {
        &self.token
    }

    /// Has the lease been lost? True when renewal found it lost, and also as soon as this
    /// client's clock passes the lease's validity (the last successful write + TTL - 1 s)
    /// without a renewal: then another holder may exist, whatever renewal is still trying.
    /// (The lifecycle decides; see [`Lifecycle::lost`].)
    pub fn is_lost(&self) -> bool {
        self.lost_reason().is_some()
    }

    pub fn lost_reason(&self) -> Option<LeaseLost> {
        lock_ignoring_poison(&self.lifecycle).lost(self.inner.engine.clock.now_us())
    }

    /// The client time until which the lease is certainly ours (`None` without a TTL).
    pub fn valid_until_us(&self) -> Option<u64> {
        lock_ignoring_poison(&self.lifecycle).valid_until_us()
    }

    /// Stop renewal (waiting for it), delete the cells. Reports a lease that was lost while
    /// held as an error, after deleting the cells all the same.
    pub async fn release(mut self) -> Result<(), LockError> {
        self.released = true;
        let renewal = self.renewal.take();
        let outcome = release_lease(&self.inner, Arc::clone(&self.lifecycle), renewal).await;
        if let Some(why) = self.lost_reason() {
            return Err(LockError::LeaseLost {
                lock: self.lock.to_string(),
                why,
            });
        }
        match outcome {
            Released::Released => Ok(()),
            Released::Failed(failure) => Err(LockError::Store(failure)),
        }
    }
}

/// Run the lifecycle's main lane through the release.
async fn release_lease<S: Store, C: Clock>(
    inner: &LockerInner<S, C>,
    lifecycle: Arc<Mutex<Lifecycle>>,
    renewal: Option<RenewalTask>,
) -> Released {
    let engine = &inner.engine;
    let (lock, thread) = {
        let mut held = lock_ignoring_poison(&lifecycle);
        let (lease, _) = held.held().expect("release runs on a held lock");
        let ids = (lease.lock.clone(), lease.thread.clone());
        held.begin_release();
        ids
    };
    engine.emit(|| LockEvent::Releasing {
        thread: thread.clone(),
        lock: lock.clone(),
        client_us: engine.clock.now_us(),
    });
    let mut hooks = Hooks {
        stop: None,
        lifecycle: Some(Arc::clone(&lifecycle)),
        renewal,
    };
    let end = engine
        .drive(MainLane(lifecycle), &inner.config, &thread, &mut hooks)
        .await;
    let MainEnd::Release(outcome) = end else {
        unreachable!("a release run of the main lane ends with the release")
    };
    engine.emit(|| LockEvent::Released {
        thread,
        lock,
        outcome: outcome.clone(),
        client_us: engine.clock.now_us(),
    });
    outcome
}

impl<S: Store, C: Clock> Drop for LockGuard<S, C> {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let renewal = self.renewal.take();
        if tokio::runtime::Handle::try_current().is_err() {
            // No runtime to release on: stop renewal; the cells expire after their TTL.
            if let Some(task) = renewal {
                let _ = task.stop.send(true);
            }
            return;
        }
        let inner = Arc::clone(&self.inner);
        let lifecycle = Arc::clone(&self.lifecycle);
        let slot = std::mem::take(&mut self.slot);
        tokio::spawn(async move {
            release_lease(&inner, lifecycle, renewal).await;
            drop(slot);
        });
    }
}

/// A renewal lane's sleep of `ms` on `clock`, cut short by a stop request: true when stopped
/// (at once if the stop was asked before).
pub(crate) async fn sleep_unless_stopped<C: Clock>(clock: &C, ms: u64, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return true;
    }
    // `biased`: poll in the written order. An unbiased select draws its order from tokio's own
    // thread-local generator, which no seed controls (it broke the simulator's determinism
    // when a stop and a renewal timer met).
    tokio::select! {
        biased;
        _ = stop.changed() => true,
        _ = clock.sleep_ms(ms) => false,
    }
}
