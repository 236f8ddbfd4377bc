//! The async driver of the other families' lease locks (Redis `SET NX`, Redlock,
//! Memcached `add`): one loop that carries out any [`FamilyLock`]'s machines against a
//! [`FamilyStore`] of that family, and the user's API over it, [`FamilyLocker`] and
//! [`FamilyGuard`].
//!
//! As for the Cassandra driver, everything here moves data and time and decides nothing: it
//! executes the machines' commands, sleeps on the clock, draws from a seeded generator, and
//! reports what happened to an observer. Whether an answer means "acquired", "lost" or
//! "released" is the machines' (and [`FamilyLock`]'s) to say.
//!
//! The same code runs against the in-memory stores of [`crate::store::family_memory`], the
//! simulator's servers (`sim/`) and real servers (`real/`).

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;

use super::clock::Clock;
use super::notify::Subscription;
use crate::algo::family::{Acquisition, Extension, FamilyLock, Release, RenewalEnd};
use crate::algo::redis::set_nx::Patience;
use crate::algo::server_holder::{ServerHolder, ServerNow, ServerSnapshot};
use crate::algo::{Action, Input, Leftover, LockConfigError, Machine, SleepKind, StepTag};
use crate::store::StoreFailure;

/// The longest lock key or client name the family lockers accept (Memcached's key limit is
/// 250 bytes; a token is the client name and two numbers).
pub const MAX_NAME_LEN: usize = 200;

/// Where a family driver sends a lock's commands: an in-memory server, a simulated one, a real
/// one (or, for Redlock, N of them).
pub trait FamilyStore<C>: Send + Sync + 'static {
    type Reply;
    fn execute(&self, command: C) -> impl Future<Output = Result<Self::Reply, StoreFailure>> + Send;

    /// Receive the messages published on `channel` from now on, if the store delivers them
    /// (Redis pub/sub); `None` (the default): a waiter that sleeps until notified sleeps its
    /// whole wait, as when every message is lost.
    fn subscribe(&self, _channel: &str) -> impl Future<Output = Option<Subscription>> + Send {
        std::future::ready(None)
    }

    /// What the store's server (each master, for Redlock) holds for lock `key` now, read from
    /// the server itself, one snapshot per server: the readings of T1-server
    /// ([`crate::algo::server_holder`]). `None` (the default): this store is not read. A read
    /// that fails is an error; a master that does not answer is [`ReadState::Down`].
    fn read_state(&self, _key: &str) -> impl Future<Output = Option<Result<Vec<ServerSnapshot>, StoreFailure>>> + Send {
        std::future::ready(None)
    }
}

impl<C, S: FamilyStore<C>> FamilyStore<C> for Arc<S> {
    type Reply = S::Reply;
    fn execute(&self, command: C) -> impl Future<Output = Result<S::Reply, StoreFailure>> + Send {
        S::execute(self, command)
    }

    fn subscribe(&self, channel: &str) -> impl Future<Output = Option<Subscription>> + Send {
        S::subscribe(self, channel)
    }

    fn read_state(&self, key: &str) -> impl Future<Output = Option<Result<Vec<ServerSnapshot>, StoreFailure>>> + Send {
        S::read_state(self, key)
    }
}

/// Errors of the family lockers' API.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FamilyError {
    #[error("{what} {name:?}: give 1 to {MAX_NAME_LEN} printable characters without spaces")]
    Name { what: &'static str, name: String },
    #[error("lock settings: {0}")]
    Config(#[from] LockConfigError),
    #[error("gave up after waiting {waited_ms} ms for lock {key} (max_wait_ms)")]
    TimedOut { key: String, waited_ms: u64 },
    #[error("lock {key}: every attempt failed to take a majority of the masters within the validity")]
    NoMajority { key: String },
    #[error("acquiring lock {key}: the store kept failing ({failure}); {}", match left {
        Leftover::Nothing => "nothing of this attempt was left behind",
        Leftover::CleanUpFailed => "deleting what this attempt may have written failed too: the key may keep others out until its TTL runs out",
        Leftover::NotCleanedUp => "what this attempt may have written was left to its TTL",
    })]
    AcquireFailed {
        key: String,
        failure: StoreFailure,
        left: Leftover,
    },
    #[error("the lease on lock {key} is lost: the key is not ours any more, and another holder may be running")]
    LeaseLost { key: String },
    #[error("the store kept failing: {0}")]
    Store(StoreFailure),
}

/// What a family driver reports while it runs (the simulator's trace and judges listen).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FamilyEvent {
    /// A `lock()` call begins; `wait_ms`: how long it waits before it gives up, if it has a
    /// deadline (C-wait).
    Calling {
        thread: String,
        key: String,
        wait_ms: Option<u64>,
        client_us: u64,
    },
    /// A machine step sent a command (as the store's syntax prints it).
    Request {
        thread: String,
        tag: StepTag,
        command: String,
        client_us: u64,
    },
    Reply {
        thread: String,
        reply: Result<String, StoreFailure>,
        client_us: u64,
    },
    Sleep {
        thread: String,
        tag: StepTag,
        ms: u64,
        kind: SleepKind,
    },
    /// A sleep until notified ended early: a message arrived on the lock's channel.
    Notified {
        thread: String,
        key: String,
        client_us: u64,
    },
    /// The lock is held, on the holder's belief, until its clock reads `valid_until_us`.
    Acquired {
        thread: String,
        key: String,
        token: String,
        valid_until_us: u64,
        client_us: u64,
    },
    /// An acquisition ended without the lock: how (`outcome`), and as the library says it.
    NotAcquired {
        thread: String,
        key: String,
        outcome: Acquisition<()>,
        why: String,
        client_us: u64,
    },
    Extended {
        thread: String,
        key: String,
        valid_until_us: u64,
        client_us: u64,
    },
    /// An extension found the key not ours: the holder knows it lost the lock.
    LeaseLost {
        thread: String,
        key: String,
        client_us: u64,
    },
    /// Release began: from here the holder no longer uses the lock.
    Releasing {
        thread: String,
        key: String,
        client_us: u64,
    },
    Released {
        thread: String,
        key: String,
        outcome: Release,
        client_us: u64,
    },
}

/// Receives [`FamilyEvent`]s.
pub trait FamilyObserver: Send + Sync + 'static {
    fn on_event(&self, event: FamilyEvent);
}

struct Inner<F: FamilyLock, S, C> {
    store: S,
    clock: C,
    config: F::Config,
    client: String,
    rng: Mutex<ChaCha8Rng>,
    next_sequence: AtomicU64,
    requests: AtomicU64,
    failures: AtomicU64,
    acquisitions: AtomicU64,
    observer: Option<Arc<dyn FamilyObserver>>,
}

/// A process's handle on one family's locks: `lock` waits, `try_lock` asks once.
pub struct FamilyLocker<F: FamilyLock, S, C> {
    inner: Arc<Inner<F, S, C>>,
}

impl<F: FamilyLock, S, C> Clone for FamilyLocker<F, S, C> {
    fn clone(&self) -> Self {
        FamilyLocker {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// A lock key or client name: 1..=[`MAX_NAME_LEN`] printable characters, no spaces (Memcached
/// keys may hold neither; tokens are built from client names).
fn check_name(what: &'static str, name: &str) -> Result<(), FamilyError> {
    let fine =
        !name.is_empty() && name.len() <= MAX_NAME_LEN && name.chars().all(|c| !c.is_whitespace() && !c.is_control());
    if fine {
        Ok(())
    } else {
        Err(FamilyError::Name {
            what,
            name: name.chars().take(MAX_NAME_LEN + 1).collect(),
        })
    }
}

impl<F, S, C> FamilyLocker<F, S, C>
where
    F: FamilyLock,
    S: FamilyStore<F::Command, Reply = F::Reply>,
    C: Clock,
{
    /// A locker named `client` (unique among the lock's users: tokens are built from it), its
    /// random draws (Redlock's retry delay, tokens' nonces) from `seed`.
    pub fn new(
        store: S,
        clock: C,
        config: F::Config,
        client: &str,
        seed: u64,
        observer: Option<Arc<dyn FamilyObserver>>,
    ) -> Result<Self, FamilyError> {
        check_name("client name", client)?;
        F::check(&config).map_err(FamilyError::Config)?;
        Ok(FamilyLocker {
            inner: Arc::new(Inner {
                store,
                clock,
                config,
                client: client.to_owned(),
                rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
                next_sequence: AtomicU64::new(0),
                requests: AtomicU64::new(0),
                failures: AtomicU64::new(0),
                acquisitions: AtomicU64::new(0),
                observer,
            }),
        })
    }

    /// Wait until the lock is held (or `max_wait_ms`, store failures, Redlock's attempts).
    pub async fn lock(&self, key: &str) -> Result<FamilyGuard<F, S, C>, FamilyError> {
        match self.acquire(key, Patience::Wait).await? {
            Some(guard) => Ok(guard),
            // Redlock's attempts are its patience.
            None => Err(FamilyError::NoMajority { key: key.to_owned() }),
        }
    }

    /// Take the lock if it is free now: `None` when another holder has it.
    pub async fn try_lock(&self, key: &str) -> Result<Option<FamilyGuard<F, S, C>>, FamilyError> {
        self.acquire(key, Patience::Once).await
    }

    /// Who the lock's server says holds `key` now, by the lock's own rule
    /// ([`FamilyLock::holder_on_servers`]) over what the store read from its server
    /// ([`FamilyStore::read_state`]): T1-server's reading. `None`: the store is not read, or the
    /// lock does not say who holds. A reading sends no lock command and changes nothing.
    pub async fn holder_on_server(&self, key: &str) -> Option<Result<ServerHolder, StoreFailure>> {
        let snapshots = match self.inner.store.read_state(key).await? {
            Ok(snapshots) => snapshots,
            Err(failure) => return Some(Err(failure)),
        };
        let servers: Vec<ServerNow<'_>> = snapshots.iter().map(ServerSnapshot::as_now).collect();
        F::holder_on_servers(&servers, key).map(Ok)
    }

    /// Store commands sent (every master's, for Redlock), failures included.
    pub fn requests(&self) -> u64 {
        self.inner.requests.load(Ordering::Relaxed)
    }

    /// Commands that failed (timeouts, no answer).
    pub fn failures(&self) -> u64 {
        self.inner.failures.load(Ordering::Relaxed)
    }

    pub fn acquisitions(&self) -> u64 {
        self.inner.acquisitions.load(Ordering::Relaxed)
    }

    pub fn config(&self) -> &F::Config {
        &self.inner.config
    }

    pub fn store(&self) -> &S {
        &self.inner.store
    }

    pub fn clock(&self) -> &C {
        &self.inner.clock
    }

    async fn acquire(&self, key: &str, patience: Patience) -> Result<Option<FamilyGuard<F, S, C>>, FamilyError> {
        check_name("lock key", key)?;
        let inner = &self.inner;
        let sequence = inner.next_sequence.fetch_add(1, Ordering::Relaxed);
        let thread = format!("{}-{sequence}", inner.client);
        let nonce: u32 = lock_ignoring_poison(&inner.rng).gen();
        let token = format!("{}:{sequence}:{nonce:08x}", inner.client);
        let started_us = inner.clock.now_us();
        if patience == Patience::Wait {
            self.emit(|| FamilyEvent::Calling {
                thread: thread.clone(),
                key: key.to_owned(),
                wait_ms: F::wait_ms(&inner.config),
                client_us: started_us,
            });
        }
        // Subscribe before the first attempt, so that a release between an attempt's reply and
        // the sleep after it still wakes us (dropped, so unsubscribed, when this call returns).
        let mut subscription = match F::notification_channel(key, &token) {
            Some(channel) if patience == Patience::Wait => inner.store.subscribe(&channel).await,
            _ => None,
        };
        let machine = F::acquire(key, &token, patience);
        let outcome = F::acquired(
            self.drive_lane(machine, &thread, key, None, subscription.as_mut(), |_| None)
                .await,
        );
        drop(subscription);
        let now_us = inner.clock.now_us();
        match outcome {
            Acquisition::Acquired(lease) => {
                inner.acquisitions.fetch_add(1, Ordering::Relaxed);
                let valid_until_us = F::valid_until_us(&lease, &inner.config);
                self.emit(|| FamilyEvent::Acquired {
                    thread: thread.clone(),
                    key: key.to_owned(),
                    token: F::token(&lease).to_owned(),
                    valid_until_us,
                    client_us: now_us,
                });
                let renewal =
                    F::renewal(&lease, &inner.config).map(|machine| self.start_renewal(machine, &lease, key, &thread));
                Ok(Some(FamilyGuard {
                    locker: self.clone(),
                    key: key.to_owned(),
                    thread,
                    lease,
                    lost: false,
                    renewal,
                }))
            }
            other => {
                self.emit(|| FamilyEvent::NotAcquired {
                    thread,
                    key: key.to_owned(),
                    outcome: match &other {
                        Acquisition::Failed { failure, left } => Acquisition::Failed {
                            failure: failure.clone(),
                            left: *left,
                        },
                        Acquisition::TimedOut => Acquisition::TimedOut,
                        Acquisition::NotAcquired | Acquisition::Acquired(_) => Acquisition::NotAcquired,
                    },
                    why: format!("{other:?}"),
                    client_us: now_us,
                });
                match other {
                    Acquisition::NotAcquired => Ok(None),
                    Acquisition::TimedOut => Err(FamilyError::TimedOut {
                        key: key.to_owned(),
                        waited_ms: now_us.saturating_sub(started_us) / 1000,
                    }),
                    Acquisition::Failed { failure, left } => Err(FamilyError::AcquireFailed {
                        key: key.to_owned(),
                        failure,
                        left,
                    }),
                    Acquisition::Acquired(_) => unreachable!("handled above"),
                }
            }
        }
    }

    /// Run a holder's renewal lane as a task; the guard reads the lease it leaves and stops it.
    fn start_renewal(&self, machine: F::RenewalMachine, lease: &F::Lease, key: &str, thread: &str) -> RenewalLane<F> {
        let (stop, mut stopped) = watch::channel(false);
        let shared = Arc::new(Mutex::new(RenewalState {
            lease: lease.clone(),
            ended: None,
        }));
        let locker = self.clone();
        let state = Arc::clone(&shared);
        let (key, thread) = (key.to_owned(), thread.to_owned());
        let handle = tokio::spawn(async move {
            let end = locker
                .drive_lane(machine, &thread, &key, Some(&mut stopped), None, |machine| {
                    let lease = F::renewed_lease(machine);
                    let mut state = lock_ignoring_poison(&state);
                    let before = F::valid_until_us(&state.lease, &locker.inner.config);
                    let after = F::valid_until_us(&lease, &locker.inner.config);
                    state.lease = lease;
                    (after > before).then_some(after)
                })
                .await;
            let end = F::renewal_ended(end);
            lock_ignoring_poison(&state).ended = Some(end);
            if matches!(end, RenewalEnd::Lost | RenewalEnd::Expired) {
                locker.emit(|| FamilyEvent::LeaseLost {
                    thread: thread.clone(),
                    key: key.clone(),
                    client_us: locker.inner.clock.now_us(),
                });
            }
        });
        RenewalLane {
            stop,
            handle: Some(handle),
            shared,
        }
    }

    fn emit(&self, event: impl FnOnce() -> FamilyEvent) {
        if let Some(observer) = &self.inner.observer {
            observer.on_event(event());
        }
    }

    /// Carry out `machine`'s actions until it is done.
    async fn drive<M>(&self, machine: M, thread: &str) -> M::Output
    where
        M: Machine<Config = F::Config, Command = F::Command, Reply = F::Reply> + Send,
    {
        self.drive_lane(machine, thread, "", None, None, |_| None).await
    }

    /// [`Self::drive`], with a stop signal that cuts renewal sleeps short, a subscription whose
    /// messages cut sleeps until notified short, and `after_reply`
    /// called once the machine has taken in each reply (a renewal lane answers the client
    /// time its lease now lasts until, when that moved on: reported as `Extended`).
    async fn drive_lane<M>(
        &self,
        mut machine: M,
        thread: &str,
        key: &str,
        mut stop: Option<&mut watch::Receiver<bool>>,
        mut notified: Option<&mut Subscription>,
        mut after_reply: impl FnMut(&M) -> Option<u64> + Send,
    ) -> M::Output
    where
        M: Machine<Config = F::Config, Command = F::Command, Reply = F::Reply> + Send,
    {
        let inner = &self.inner;
        let mut step = machine.resume(&inner.config, Input::Start, inner.clock.now_us());
        loop {
            let input = match step.action {
                Action::Done(output) => return output,
                Action::Store(command) => {
                    inner.requests.fetch_add(1, Ordering::Relaxed);
                    self.emit(|| FamilyEvent::Request {
                        thread: thread.to_owned(),
                        tag: step.tag,
                        command: command.to_string(),
                        client_us: inner.clock.now_us(),
                    });
                    let result = inner.store.execute(command).await;
                    if result.is_err() {
                        inner.failures.fetch_add(1, Ordering::Relaxed);
                    }
                    self.emit(|| FamilyEvent::Reply {
                        thread: thread.to_owned(),
                        reply: result.as_ref().map(ToString::to_string).map_err(Clone::clone),
                        client_us: inner.clock.now_us(),
                    });
                    let input = match result {
                        Ok(reply) => Input::Reply(reply),
                        Err(failure) => Input::Failed(failure),
                    };
                    step = machine.resume(&inner.config, input, inner.clock.now_us());
                    if let Some(valid_until_us) = after_reply(&machine) {
                        self.emit(|| FamilyEvent::Extended {
                            thread: thread.to_owned(),
                            key: key.to_owned(),
                            valid_until_us,
                            client_us: inner.clock.now_us(),
                        });
                    }
                    continue;
                }
                Action::Sleep { ms, kind } => {
                    self.emit(|| FamilyEvent::Sleep {
                        thread: thread.to_owned(),
                        tag: step.tag,
                        ms,
                        kind,
                    });
                    match (&mut stop, kind) {
                        (Some(stop), SleepKind::Renewal) => {
                            if super::sleep_unless_stopped(&inner.clock, ms, stop).await {
                                Input::StopRequested
                            } else {
                                Input::Woke
                            }
                        }
                        (_, SleepKind::UntilNotified) if notified.is_some() => {
                            let subscription = notified.as_mut().expect("checked");
                            tokio::select! {
                                biased;
                                _ = subscription.message() => {
                                    self.emit(|| FamilyEvent::Notified {
                                        thread: thread.to_owned(),
                                        key: key.to_owned(),
                                        client_us: inner.clock.now_us(),
                                    });
                                    Input::Woke
                                }
                                _ = inner.clock.sleep_ms(ms) => Input::Woke,
                            }
                        }
                        // No subscription: a sleep until notified runs its full length, as
                        // when every message is lost.
                        _ => {
                            inner.clock.sleep_ms(ms).await;
                            Input::Woke
                        }
                    }
                }
                Action::Draw { max_ms } => Input::Drawn(lock_ignoring_poison(&inner.rng).gen_range(0..=max_ms)),
                Action::ReadTime => Input::Time(inner.clock.now_us()),
                // The renewal lane is the guard's to stop (`FamilyGuard::release`).
                Action::StopRenewal { .. } => Input::RenewalStopped,
            };
            step = machine.resume(&inner.config, input, inner.clock.now_us());
        }
    }
}

/// What a holder's renewal lane has left: the lease as its last renewal set it, and how it
/// ended, once it has.
struct RenewalState<L> {
    lease: L,
    ended: Option<RenewalEnd>,
}

/// A running renewal lane: its stop signal, its task, what it has left.
struct RenewalLane<F: FamilyLock> {
    stop: watch::Sender<bool>,
    handle: Option<tokio::task::JoinHandle<()>>,
    shared: Arc<Mutex<RenewalState<F::Lease>>>,
}

/// A held family lock. Check [`FamilyGuard::is_valid`] before each use of what it protects;
/// [`FamilyGuard::extend`] to hold longer than one TTL; [`FamilyGuard::release`] when done.
/// Dropping it unreleased leaves the key until its TTL runs out (no background release: the
/// key frees itself).
pub struct FamilyGuard<F: FamilyLock, S, C> {
    locker: FamilyLocker<F, S, C>,
    key: String,
    thread: String,
    /// The lease as acquired, or as the holder's last `extend` left it.
    lease: F::Lease,
    lost: bool,
    /// The background renewal (Redisson's watchdog), if the lock has one.
    renewal: Option<RenewalLane<F>>,
}

impl<F: FamilyLock, S, C> Drop for FamilyGuard<F, S, C> {
    /// A guard dropped unreleased stops its renewal lane (at the lane's next sleep), so that
    /// the key runs out with its TTL instead of being renewed by nobody for ever.
    fn drop(&mut self) {
        if let Some(lane) = &self.renewal {
            let _ = lane.stop.send(true);
        }
    }
}

impl<F: FamilyLock, S, C> fmt::Debug for FamilyGuard<F, S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FamilyGuard")
            .field("lock", &F::NAME)
            .field("key", &self.key)
            .field("thread", &self.thread)
            .field("lease", &self.lease)
            .field("lost", &self.lost)
            .finish()
    }
}

impl<F, S, C> FamilyGuard<F, S, C>
where
    F: FamilyLock,
    S: FamilyStore<F::Command, Reply = F::Reply>,
    C: Clock,
{
    /// The lease as it stands: as acquired, extended, or renewed by the renewal lane.
    pub fn lease(&self) -> F::Lease {
        match &self.renewal {
            Some(lane) => lock_ignoring_poison(&lane.shared).lease.clone(),
            None => self.lease.clone(),
        }
    }

    /// How the renewal lane ended, if the lock has one and it has ended.
    pub fn renewal_ended(&self) -> Option<RenewalEnd> {
        self.renewal
            .as_ref()
            .and_then(|lane| lock_ignoring_poison(&lane.shared).ended)
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// The value only this holder wrote (it names the holder; it does not grow).
    pub fn token(&self) -> &str {
        F::token(&self.lease)
    }

    /// The holder's (acquisition's) name in events.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// The client time until which the lease is ours, if the server's clock keeps pace.
    pub fn valid_until_us(&self) -> u64 {
        F::valid_until_us(&self.lease(), &self.locker.inner.config)
    }

    /// Not known lost (by an extension or the renewal lane), and the client's clock still below
    /// [`Self::valid_until_us`].
    pub fn is_valid(&self) -> bool {
        let told_lost = matches!(self.renewal_ended(), Some(RenewalEnd::Lost | RenewalEnd::Expired));
        !self.lost && !told_lost && self.locker.inner.clock.now_us() < self.valid_until_us()
    }

    /// Extend the lease by one TTL, only if the key is still ours.
    pub async fn extend(&mut self) -> Result<(), FamilyError> {
        let locker = &self.locker;
        let current = self.lease();
        let output = locker.drive(F::extend(current.clone()), &self.thread).await;
        let now_us = locker.inner.clock.now_us();
        match F::extended(&current, output) {
            Extension::Extended(lease) => {
                if let Some(lane) = &self.renewal {
                    lock_ignoring_poison(&lane.shared).lease = lease.clone();
                }
                self.lease = lease;
                let valid_until_us = self.valid_until_us();
                locker.emit(|| FamilyEvent::Extended {
                    thread: self.thread.clone(),
                    key: self.key.clone(),
                    valid_until_us,
                    client_us: now_us,
                });
                Ok(())
            }
            Extension::Lost => {
                self.lost = true;
                locker.emit(|| FamilyEvent::LeaseLost {
                    thread: self.thread.clone(),
                    key: self.key.clone(),
                    client_us: now_us,
                });
                Err(FamilyError::LeaseLost { key: self.key.clone() })
            }
            Extension::Failed(failure) => Err(FamilyError::Store(failure)),
        }
    }

    /// Release: stop the renewal lane (waiting for a renewal in flight), then delete the key if
    /// it is still ours. The answer says whether it was.
    pub async fn release(mut self) -> Result<Release, FamilyError> {
        let locker = self.locker.clone();
        locker.emit(|| FamilyEvent::Releasing {
            thread: self.thread.clone(),
            key: self.key.clone(),
            client_us: locker.inner.clock.now_us(),
        });
        if let Some(lane) = &mut self.renewal {
            let _ = lane.stop.send(true);
            if let Some(handle) = lane.handle.take() {
                // The lane may have ended already (lease lost): then nobody listens.
                let _ = handle.await;
            }
        }
        let output = locker.drive(F::release(self.lease()), &self.thread).await;
        let outcome = F::released(output);
        locker.emit(|| FamilyEvent::Released {
            thread: self.thread.clone(),
            key: self.key.clone(),
            outcome: outcome.clone(),
            client_us: locker.inner.clock.now_us(),
        });
        match outcome {
            Release::Failed(failure) => Err(FamilyError::Store(failure)),
            other => Ok(other),
        }
    }
}

fn lock_ignoring_poison<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
