//! A lock cassalock does not define: a lease lock over one compare-and-set register.
//!
//! This crate is what a user writes to have cassalock check their own lock. It lives outside
//! cassalock's workspace and depends on it by path, as a user's crate would by version.
//!
//! The lock keeps one register (a Memcached item, read with `gets` and written with `cas`):
//! empty or `free` means nobody holds it; otherwise it holds the holder's token, and it expires
//! a lease after its last write, so a crashed holder frees it by doing nothing.
//!
//! - **acquire**: read the register. Empty: `add` our token with the lease as its expiry. `free`:
//!   `cas` our token in. Someone's token: wait and read again. Our own token (a write whose
//!   reply was lost had applied): ours, counted from the first write we sent.
//! - **extend**: read; if it still holds our token, `cas` our token with a fresh lease.
//! - **release**: read; if it still holds our token, `cas` it to `free` (which never expires).
//!
//! A holder believes it holds until its clock passes the send of the write that set its expiry,
//! plus the lease, minus a second (the server counts whole seconds). Nothing here grows from one
//! holder to the next, so a resource cannot fence with the token.
//!
//! Each machine is sans-IO: it is told the last reply and the client's clock, and answers with
//! the next command, a sleep or its outcome. cassalock's model checker, simulator and real
//! driver all run these same machines.

use cassalock::algo::family::{Acquisition, Extension, FamilyLock, NoRenewal, Release, RenewalEnd};
use cassalock::algo::redis::set_nx::Patience;
use cassalock::algo::server_holder::{ServerHolder, ServerNow};
use cassalock::algo::{
    Action, Input, Leftover, LockConfigError, Machine, RetryPolicy, SleepKind, Source, Step, StepTag,
};
use cassalock::store::memcached::{MemcachedCommand, MemcachedReply};
use cassalock::store::StoreFailure;

/// What the register holds when nobody holds the lock.
pub const FREE: &str = "free";

/// The lock's settings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CasLeaseConfig {
    /// The lease: the register's expiry after each write, whole seconds (2 or more).
    pub lease_s: u32,
    /// A waiter reads the register again this often.
    pub retry_every_ms: u64,
    /// A `lock()` gives up after this long (`None`: waits for ever).
    pub max_wait_ms: Option<u64>,
    /// How the driver retries a request that failed.
    pub retry: RetryPolicy,
}

impl AsRef<RetryPolicy> for CasLeaseConfig {
    fn as_ref(&self) -> &RetryPolicy {
        &self.retry
    }
}

/// What a holder owns.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CasLease {
    pub key: String,
    pub token: String,
    /// The client time the write that set the register's expiry was sent.
    pub written_at_us: u64,
}

impl CasLease {
    /// Until when the holder may believe it holds: the lease from the write's send, less the
    /// second the server's whole-second clock may round away.
    pub fn valid_until_us(&self, config: &CasLeaseConfig) -> u64 {
        let lease_us = u64::from(config.lease_s).saturating_mul(1_000_000);
        self.written_at_us.saturating_add(lease_us).saturating_sub(1_000_000)
    }
}

const fn tag(step: u8, note: &'static str) -> StepTag {
    StepTag::new(Source::Ours, step, note)
}

const READ: StepTag = tag(1, "read the register");
const ADD: StepTag = tag(2, "empty: add our token");
const CAS_IN: StepTag = tag(3, "free: cas our token in");
const WAIT: StepTag = tag(4, "held: wait and read again");
const ACQUIRED: StepTag = tag(5, "acquired");
const GAVE_UP: StepTag = tag(6, "gave up");
const EXTEND_CAS: StepTag = tag(7, "ours: cas our token with a fresh lease");
const RELEASE_CAS: StepTag = tag(8, "ours: cas the register to free");
const ENDED: StepTag = tag(9, "done");

/// How an acquisition's register reads went.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum AcquireState {
    Start,
    Reading,
    /// `add` or `cas` sent at this client time.
    Writing {
        sent_at_us: u64,
    },
    Waiting,
    Finished,
}

/// The acquire machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CasAcquire {
    key: String,
    token: String,
    patience: Patience,
    state: AcquireState,
    /// When this acquisition began (for `max_wait_ms`).
    began_at_us: Option<u64>,
    /// The first write this acquisition sent: a write whose reply was lost may have applied,
    /// and a lease counts from the earliest send that could have set it.
    first_write_at_us: Option<u64>,
}

impl CasAcquire {
    fn read(&mut self) -> Step<Acquisition<CasLease>, MemcachedCommand> {
        self.state = AcquireState::Reading;
        Step::store(READ, MemcachedCommand::Gets { key: self.key.clone() })
    }

    fn write(
        &mut self,
        tag: StepTag,
        command: MemcachedCommand,
        now_us: u64,
    ) -> Step<Acquisition<CasLease>, MemcachedCommand> {
        self.state = AcquireState::Writing { sent_at_us: now_us };
        self.first_write_at_us.get_or_insert(now_us);
        Step::store(tag, command)
    }

    fn finish(
        &mut self,
        tag: StepTag,
        outcome: Acquisition<CasLease>,
    ) -> Step<Acquisition<CasLease>, MemcachedCommand> {
        self.state = AcquireState::Finished;
        Step::done(tag, outcome)
    }

    fn acquired(&mut self, written_at_us: u64) -> Step<Acquisition<CasLease>, MemcachedCommand> {
        let lease = CasLease {
            key: self.key.clone(),
            token: self.token.clone(),
            written_at_us,
        };
        self.finish(ACQUIRED, Acquisition::Acquired(lease))
    }

    /// Someone else holds it (or won the race): give up, wait, or time out.
    fn held(&mut self, config: &CasLeaseConfig, now_us: u64) -> Step<Acquisition<CasLease>, MemcachedCommand> {
        if self.patience == Patience::Once {
            return self.finish(GAVE_UP, Acquisition::NotAcquired);
        }
        let began_at_us = self.began_at_us.unwrap_or(now_us);
        if let Some(max_wait_ms) = config.max_wait_ms {
            if now_us.saturating_sub(began_at_us) >= max_wait_ms.saturating_mul(1000) {
                return self.finish(GAVE_UP, Acquisition::TimedOut);
            }
        }
        self.state = AcquireState::Waiting;
        Step::new(
            WAIT,
            Action::Sleep {
                ms: config.retry_every_ms,
                kind: SleepKind::Poll,
            },
        )
    }

    fn failed(&mut self, failure: StoreFailure) -> Step<Acquisition<CasLease>, MemcachedCommand> {
        let left = if self.first_write_at_us.is_some() {
            Leftover::NotCleanedUp
        } else {
            Leftover::Nothing
        };
        self.finish(GAVE_UP, Acquisition::Failed { failure, left })
    }
}

impl Machine for CasAcquire {
    type Config = CasLeaseConfig;
    type Output = Acquisition<CasLease>;
    type Command = MemcachedCommand;
    type Reply = MemcachedReply;

    fn resume(
        &mut self,
        config: &CasLeaseConfig,
        input: Input<MemcachedReply>,
        now_us: u64,
    ) -> Step<Acquisition<CasLease>, MemcachedCommand> {
        debug_assert!(self.state != AcquireState::Finished, "resumed after it finished");
        let lease_s = i64::from(config.lease_s);
        match (self.state.clone(), input) {
            (_, Input::Failed(failure)) => self.failed(failure),
            (AcquireState::Start, _) => {
                self.began_at_us = Some(now_us);
                self.read()
            }
            (AcquireState::Waiting, _) => self.read(),
            (AcquireState::Reading, Input::Reply(MemcachedReply::Miss)) => {
                let command = MemcachedCommand::Add {
                    key: self.key.clone(),
                    value: self.token.clone(),
                    exptime_s: lease_s,
                };
                self.write(ADD, command, now_us)
            }
            (AcquireState::Reading, Input::Reply(MemcachedReply::ValueWithCas { value, cas_unique })) => {
                if value == self.token {
                    let written_at_us = self.first_write_at_us.expect("our token is there only if we wrote it");
                    self.acquired(written_at_us)
                } else if value == FREE {
                    let command = MemcachedCommand::Cas {
                        key: self.key.clone(),
                        value: self.token.clone(),
                        exptime_s: lease_s,
                        cas_unique,
                    };
                    self.write(CAS_IN, command, now_us)
                } else {
                    self.held(config, now_us)
                }
            }
            (AcquireState::Writing { .. }, Input::Reply(MemcachedReply::Stored)) => {
                // Counted from the first write: an earlier one whose reply was lost may be the
                // one that set the expiry.
                let written_at_us = self.first_write_at_us.expect("a write was sent");
                self.acquired(written_at_us)
            }
            // Another client's write came first (NOT_STORED, EXISTS, NOT_FOUND): read again.
            (AcquireState::Writing { .. }, Input::Reply(_)) => self.held(config, now_us),
            (state, input) => panic!("CasAcquire: {input:?} in {state:?}"),
        }
    }
}

/// Extend or release: read, then `cas` if the register still holds our token.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CasCall {
    lease: CasLease,
    release: bool,
    /// `None` before the read; `Some(sent_at_us)` once the `cas` is sent.
    cas_sent_at_us: Option<u64>,
    started: bool,
    finished: bool,
}

/// What an extension or a release found.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CasOutcome {
    /// Done on our register: extended (with the new lease) or released.
    Done(Option<CasLease>),
    /// The register was not ours any more (expired, or another holder's).
    NotOurs,
    /// The register was gone when our `cas` landed: ours had expired, or our lost release had
    /// applied.
    Gone,
    Failed(StoreFailure),
}

impl CasCall {
    fn finish(&mut self, outcome: CasOutcome) -> Step<CasOutcome, MemcachedCommand> {
        self.finished = true;
        Step::done(ENDED, outcome)
    }
}

impl Machine for CasCall {
    type Config = CasLeaseConfig;
    type Output = CasOutcome;
    type Command = MemcachedCommand;
    type Reply = MemcachedReply;

    fn resume(
        &mut self,
        config: &CasLeaseConfig,
        input: Input<MemcachedReply>,
        now_us: u64,
    ) -> Step<CasOutcome, MemcachedCommand> {
        debug_assert!(!self.finished, "resumed after it finished");
        if !self.started {
            self.started = true;
            return Step::store(
                READ,
                MemcachedCommand::Gets {
                    key: self.lease.key.clone(),
                },
            );
        }
        let reply = match input {
            Input::Failed(failure) => return self.finish(CasOutcome::Failed(failure)),
            Input::Reply(reply) => reply,
            other => panic!("CasCall: {other:?}"),
        };
        match (self.cas_sent_at_us, reply) {
            (None, MemcachedReply::ValueWithCas { value, cas_unique }) if value == self.lease.token => {
                self.cas_sent_at_us = Some(now_us);
                let (tag, value, exptime_s) = if self.release {
                    (RELEASE_CAS, FREE.to_owned(), 0)
                } else {
                    (EXTEND_CAS, self.lease.token.clone(), i64::from(config.lease_s))
                };
                let command = MemcachedCommand::Cas {
                    key: self.lease.key.clone(),
                    value,
                    exptime_s,
                    cas_unique,
                };
                Step::store(tag, command)
            }
            (None, _) => self.finish(CasOutcome::NotOurs),
            (Some(sent_at_us), MemcachedReply::Stored) => {
                let lease = (!self.release).then(|| CasLease {
                    written_at_us: sent_at_us,
                    ..self.lease.clone()
                });
                self.finish(CasOutcome::Done(lease))
            }
            (Some(_), MemcachedReply::Exists) => self.finish(CasOutcome::NotOurs),
            (Some(_), _) => self.finish(CasOutcome::Gone),
        }
    }
}

/// The lock, as cassalock's family driver runs it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CasLeaseLock;

impl FamilyLock for CasLeaseLock {
    const NAME: &'static str = "cas-lease";
    type Config = CasLeaseConfig;
    type Command = MemcachedCommand;
    type Reply = MemcachedReply;
    type Lease = CasLease;
    type AcquireMachine = CasAcquire;
    type ExtendMachine = CasCall;
    type ReleaseMachine = CasCall;
    type RenewalMachine = NoRenewal<CasLeaseConfig, MemcachedCommand, MemcachedReply>;

    fn acquire(key: &str, token: &str, patience: Patience) -> CasAcquire {
        CasAcquire {
            key: key.to_owned(),
            token: token.to_owned(),
            patience,
            state: AcquireState::Start,
            began_at_us: None,
            first_write_at_us: None,
        }
    }

    fn acquired(output: Acquisition<CasLease>) -> Acquisition<CasLease> {
        output
    }

    fn extend(lease: CasLease) -> CasCall {
        CasCall {
            lease,
            release: false,
            cas_sent_at_us: None,
            started: false,
            finished: false,
        }
    }

    fn extended(_old: &CasLease, output: CasOutcome) -> Extension<CasLease> {
        match output {
            CasOutcome::Done(Some(lease)) => Extension::Extended(lease),
            CasOutcome::Done(None) => unreachable!("an extension answers its new lease"),
            CasOutcome::NotOurs | CasOutcome::Gone => Extension::Lost,
            CasOutcome::Failed(failure) => Extension::Failed(failure),
        }
    }

    fn release(lease: CasLease) -> CasCall {
        CasCall {
            release: true,
            ..Self::extend(lease)
        }
    }

    fn released(output: CasOutcome) -> Release {
        match output {
            CasOutcome::Done(_) => Release::Released,
            CasOutcome::NotOurs => Release::WasNotOurs,
            CasOutcome::Gone => Release::GoneEitherWay,
            CasOutcome::Failed(failure) => Release::Failed(failure),
        }
    }

    fn valid_until_us(lease: &CasLease, config: &CasLeaseConfig) -> u64 {
        lease.valid_until_us(config)
    }

    fn token(lease: &CasLease) -> &str {
        &lease.token
    }

    /// Who the server says holds the lock (T1-server): the token the live register holds;
    /// `free`, or no live item, is nobody.
    fn holder_on_servers(servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        let (server, now_ms) = ServerNow::memcached(servers)?;
        let live = server.item(key).filter(|item| item.is_live_at(now_ms));
        Some(match live {
            Some(item) if item.value != FREE => {
                ServerHolder::token_until(&item.value, item.expires_at_s.map(|s| s.saturating_mul(1_000_000)))
            }
            _ => ServerHolder::Nobody,
        })
    }

    fn check(config: &CasLeaseConfig) -> Result<(), LockConfigError> {
        if config.lease_s < 2 {
            return Err(LockConfigError(format!(
                "lease_s {}: the server counts whole seconds, so a lease under 2 s may leave no time to hold; use 2 or more",
                config.lease_s
            )));
        }
        if config.retry_every_ms == 0 {
            return Err(
                "retry_every_ms is 0: a waiter would read the register in a busy loop; use 1 ms or more".into(),
            );
        }
        Ok(())
    }

    fn renewal_ended(output: RenewalEnd) -> RenewalEnd {
        output
    }

    fn renewed_lease(machine: &Self::RenewalMachine) -> CasLease {
        machine.unreachable()
    }
}

pub mod model;
pub mod scenarios;
