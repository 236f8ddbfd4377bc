//! Memcached `add`: the lock people build on a cache (seeds 001–003).
//!
//! To acquire, `add key token exptime` (stored only if no live item holds the key); to release,
//! `delete key`; to keep it longer, `touch key exptime`. That is the recipe as usually written,
//! and two of its three steps act on whoever holds the key *now*: a holder whose lease ran out
//! (a pause, a slow network) deletes or extends the *next* holder's lock. The checked variants
//! do what the Redis recipe's scripts do, with Memcached's only conditional write: `gets` the
//! item (its value and CAS unique), and only if the value is our token, `cas` it with that
//! unique — with a negative exptime to release (the item is replaced by one already dead), with
//! the lease to extend. `cas` answers EXISTS if anyone stored the key since the `gets`.
//!
//! Three machines, one per call, over [`crate::store::memcached`]:
//! - [`AddAcquire`]: M1 `add`; NOT_STORED: M2 wait and try again, or give up. Ours, as for
//!   `SET NX` ([`super::redis::set_nx`]): a failed `add` may have been stored with its reply
//!   lost, so a NOT_STORED after it reads the key and takes a value equal to our token as ours;
//!   a call that gives up after such a failure deletes the key if it is ours (C-free).
//! - [`LeaseCall`] extending: M4 extend, `touch` as written ([`Checks::AsWritten`]) or `gets` +
//!   `cas`.
//! - [`LeaseCall`] releasing: M3 release, `delete` as written or `gets` + `cas` with a negative
//!   exptime.
//!
//! What Memcached adds to a lock's troubles: expiry in whole seconds of the server's clock (a
//! lease is up to a second shorter than asked, so the lease counts from the send minus one
//! second); no replication and no persistence (a restart frees every lock); the 30-day rule (an
//! exptime above 2,592,000 s is an absolute Unix time: a lock "for 31 days" is dead on arrival),
//! which [`MemcachedLockConfig::check`] refuses.

use super::retry::Uncertainty;
use super::{Action, Input, Leftover, Machine, RetryPolicy, SleepKind, Source, Step, StepTag};
use crate::store::memcached::{MemcachedCommand, MemcachedReply, MAX_RELATIVE_EXPTIME_S};
use crate::store::StoreFailure;

const M1_ADD: StepTag = StepTag::new(Source::Memcached, 1, "add key token exptime");
const M1_ACQUIRED: StepTag = StepTag::new(Source::Memcached, 1, "STORED: the lock is ours");
const M2_WAIT: StepTag = StepTag::new(Source::Memcached, 2, "NOT_STORED: wait, then try again");
const M2_GIVE_UP: StepTag = StepTag::new(Source::Memcached, 2, "NOT_STORED: give up (try_lock)");
const M2_DEADLINE: StepTag = StepTag::new(Source::Memcached, 2, "NOT_STORED and the deadline passed: give up");
const CHECK_OURS: StepTag = StepTag::new(
    Source::Ours,
    0,
    "NOT_STORED after an attempt that may have been stored: read the key, is the value our token?",
);
const CHECKED_OURS: StepTag = StepTag::new(
    Source::Ours,
    0,
    "the key holds our token: an earlier attempt took the lock",
);
const RETRY_AFTER_FAILURE: StepTag = StepTag::new(Source::Ours, 0, "the request failed: wait, then try again");
const FAILED: StepTag = StepTag::new(Source::Ours, 0, "the store kept failing: give up");
const M3_DELETE: StepTag = StepTag::new(
    Source::Memcached,
    3,
    "release: delete key (as usually written: whoever holds it)",
);
const M4_TOUCH: StepTag = StepTag::new(
    Source::Memcached,
    4,
    "extend: touch key exptime (as usually written: whoever holds it)",
);
const READ_FOR_CAS: StepTag = StepTag::new(
    Source::Ours,
    0,
    "gets key: is the value still our token, and its CAS unique",
);
const CAS_RELEASE: StepTag = StepTag::new(
    Source::Ours,
    0,
    "release: cas with a negative exptime, only if nobody stored since",
);
const CAS_EXTEND: StepTag = StepTag::new(
    Source::Ours,
    0,
    "extend: cas with the lease, only if nobody stored since",
);
const CLEAN_UP: StepTag = StepTag::new(
    Source::Ours,
    0,
    "giving up after an attempt that may have been stored: release the key if it is ours (C-free)",
);
const DONE: StepTag = StepTag::new(Source::Memcached, 0, "done");

/// Release and extension as usually written, or checked with `gets` + `cas`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Checks {
    /// `delete` and `touch`: act on whoever holds the key now.
    AsWritten,
    /// `gets`, then `cas` only if the value is our token (ours; the default).
    CasChecked,
}

/// What the Memcached lock machines read.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemcachedLockConfig {
    /// The item's exptime, whole seconds from the server's now (1..=2,592,000).
    pub ttl_s: u32,
    pub retry_every_ms: u64,
    pub max_wait_ms: Option<u64>,
    pub checks: Checks,
    pub retry: RetryPolicy,
}

impl Default for MemcachedLockConfig {
    fn default() -> Self {
        MemcachedLockConfig {
            ttl_s: 30,
            retry_every_ms: 100,
            max_wait_ms: None,
            checks: Checks::CasChecked,
            retry: RetryPolicy::default(),
        }
    }
}

/// Why a configuration is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemcachedConfigError {
    #[error(
        "ttl_s is 0, and exptime 0 means the lock never expires: a crashed holder keeps it for ever; use 2 s or more"
    )]
    NeverExpires,
    #[error(
        "ttl_s is 1: the server counts whole seconds, so the lock can expire the moment it is stored; use 2 s or more"
    )]
    OneSecond,
    #[error("ttl_s {0} is over 30 days (2592000 s), which Memcached reads as an absolute Unix time: the lock would be dead on arrival")]
    ReadAsAbsoluteTime(u32),
}

impl MemcachedLockConfig {
    pub fn check(&self) -> Result<(), MemcachedConfigError> {
        match self.ttl_s {
            0 => Err(MemcachedConfigError::NeverExpires),
            1 => Err(MemcachedConfigError::OneSecond),
            ttl if i64::from(ttl) > MAX_RELATIVE_EXPTIME_S => Err(MemcachedConfigError::ReadAsAbsoluteTime(ttl)),
            _ => Ok(()),
        }
    }

    fn exptime_s(&self) -> i64 {
        i64::from(self.ttl_s)
    }
}

impl AsRef<RetryPolicy> for MemcachedLockConfig {
    fn as_ref(&self) -> &RetryPolicy {
        &self.retry
    }
}

/// A Memcached holder's key and token.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemcachedLease {
    pub key: String,
    pub token: String,
    /// The client time the request that set the item's expiry was sent.
    pub set_sent_at_us: u64,
}

impl MemcachedLease {
    /// The client time until which the item certainly lives on a server clock that runs at the
    /// client's rate: `sent + ttl - 1 s` (the server floors its clock to whole seconds).
    pub fn valid_until_us(&self, config: &MemcachedLockConfig) -> u64 {
        let ttl_us = u64::from(config.ttl_s).saturating_mul(1_000_000);
        self.set_sent_at_us.saturating_add(ttl_us).saturating_sub(1_000_000)
    }
}

/// How an `add` acquisition ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemcachedAcquire {
    Acquired { lease: MemcachedLease },
    NotAcquired,
    TimedOut,
    Failed { failure: StoreFailure, left: Leftover },
}

pub use super::redis::set_nx::Patience;
use super::server_holder::ServerHolder;
use crate::store::memcached::Memcached;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum AcquireState {
    Idle,
    Adding {
        sent_at_us: u64,
    },
    CheckingOurs,
    Waiting,
    /// Giving up after an uncertain `add`: `gets`, then `cas` it dead if ours.
    CleaningUpRead {
        failure: StoreFailure,
    },
    CleaningUpCas {
        failure: StoreFailure,
    },
    Finished,
}

/// M1–M2: acquire with `add`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AddAcquire {
    key: String,
    token: String,
    patience: Patience,
    state: AcquireState,
    deadline_us: Option<u64>,
    /// Failed requests that may have applied, and failures in a row.
    uncertainty: Uncertainty,
}

impl AddAcquire {
    pub fn new(key: impl Into<String>, token: impl Into<String>, patience: Patience) -> Self {
        AddAcquire {
            key: key.into(),
            token: token.into(),
            patience,
            state: AcquireState::Idle,
            deadline_us: None,
            uncertainty: Uncertainty::default(),
        }
    }

    pub fn is_finished(&self) -> bool {
        self.state == AcquireState::Finished
    }

    fn add(&mut self, config: &MemcachedLockConfig, now_us: u64) -> Step<MemcachedAcquire, MemcachedCommand> {
        self.state = AcquireState::Adding { sent_at_us: now_us };
        Step::store(
            M1_ADD,
            MemcachedCommand::Add {
                key: self.key.clone(),
                value: self.token.clone(),
                exptime_s: config.exptime_s(),
            },
        )
    }

    fn finish(&mut self, tag: StepTag, output: MemcachedAcquire) -> Step<MemcachedAcquire, MemcachedCommand> {
        self.state = AcquireState::Finished;
        Step::done(tag, output)
    }

    fn acquired(&mut self, tag: StepTag, set_sent_at_us: u64) -> Step<MemcachedAcquire, MemcachedCommand> {
        let lease = MemcachedLease {
            key: self.key.clone(),
            token: self.token.clone(),
            set_sent_at_us,
        };
        self.finish(tag, MemcachedAcquire::Acquired { lease })
    }

    fn taken(&mut self, config: &MemcachedLockConfig, now_us: u64) -> Step<MemcachedAcquire, MemcachedCommand> {
        match self.patience {
            Patience::Once => self.finish(M2_GIVE_UP, MemcachedAcquire::NotAcquired),
            Patience::Wait if self.deadline_us.is_some_and(|deadline| now_us >= deadline) => {
                self.finish(M2_DEADLINE, MemcachedAcquire::TimedOut)
            }
            Patience::Wait => {
                self.state = AcquireState::Waiting;
                Step::new(
                    M2_WAIT,
                    Action::Sleep {
                        ms: config.retry_every_ms,
                        kind: SleepKind::Poll,
                    },
                )
            }
        }
    }

    /// Give up with `failure`; first release the key if an attempt may have stored it.
    fn give_up(&mut self, failure: StoreFailure) -> Step<MemcachedAcquire, MemcachedCommand> {
        if self.uncertainty.may_have_applied() {
            self.state = AcquireState::CleaningUpRead { failure };
            return Step::store(CLEAN_UP, MemcachedCommand::Gets { key: self.key.clone() });
        }
        self.finish(
            FAILED,
            MemcachedAcquire::Failed {
                failure,
                left: Leftover::Nothing,
            },
        )
    }

    fn failed(
        &mut self,
        config: &MemcachedLockConfig,
        failure: StoreFailure,
        sent_at_us: Option<u64>,
    ) -> Step<MemcachedAcquire, MemcachedCommand> {
        if self.uncertainty.failed(&failure, sent_at_us, &config.retry) {
            return self.give_up(failure);
        }
        self.state = AcquireState::Waiting;
        Step::new(
            RETRY_AFTER_FAILURE,
            Action::Sleep {
                ms: config.retry.backoff_ms,
                kind: SleepKind::Retry,
            },
        )
    }

    fn advance(
        &mut self,
        config: &MemcachedLockConfig,
        input: Input<MemcachedReply>,
        now_us: u64,
    ) -> Step<MemcachedAcquire, MemcachedCommand> {
        use AcquireState as S;
        match (std::mem::replace(&mut self.state, S::Finished), input) {
            (S::Idle, Input::Start) => {
                debug_assert!(
                    config.check().is_ok(),
                    "a refused config reached the machine: {config:?}"
                );
                self.deadline_us = config
                    .max_wait_ms
                    .map(|ms| now_us.saturating_add(ms.saturating_mul(1000)));
                self.add(config, now_us)
            }
            (S::Adding { sent_at_us }, Input::Reply(MemcachedReply::Stored)) => {
                let since = self.uncertainty.lease_start_us(sent_at_us);
                self.acquired(M1_ACQUIRED, since)
            }
            (S::Adding { .. }, Input::Reply(MemcachedReply::NotStored)) => {
                self.uncertainty.answered();
                if self.uncertainty.may_have_applied() {
                    self.state = S::CheckingOurs;
                    Step::store(CHECK_OURS, MemcachedCommand::Get { key: self.key.clone() })
                } else {
                    self.taken(config, now_us)
                }
            }
            (S::CheckingOurs, Input::Reply(MemcachedReply::Value { value })) if value == self.token => {
                debug_assert!(
                    self.uncertainty.may_have_applied(),
                    "checked only after an uncertain attempt"
                );
                let since = self.uncertainty.lease_start_us(now_us);
                self.acquired(CHECKED_OURS, since)
            }
            (S::CheckingOurs, Input::Reply(MemcachedReply::Value { .. } | MemcachedReply::Miss)) => {
                self.uncertainty.settled();
                self.taken(config, now_us)
            }
            (S::Adding { sent_at_us }, Input::Failed(failure)) => self.failed(config, failure, Some(sent_at_us)),
            (S::CheckingOurs, Input::Failed(failure)) => self.failed(config, failure, None),
            (S::Waiting, Input::Woke) => {
                if self.patience == Patience::Wait && self.deadline_us.is_some_and(|deadline| now_us >= deadline) {
                    if self.uncertainty.may_have_applied() {
                        return self.give_up(StoreFailure::Timeout);
                    }
                    return self.finish(M2_DEADLINE, MemcachedAcquire::TimedOut);
                }
                self.add(config, now_us)
            }
            (S::CleaningUpRead { failure }, Input::Reply(MemcachedReply::ValueWithCas { value, cas_unique }))
                if value == self.token =>
            {
                self.state = S::CleaningUpCas { failure };
                Step::store(
                    CAS_RELEASE,
                    MemcachedCommand::Cas {
                        key: self.key.clone(),
                        value,
                        exptime_s: -1,
                        cas_unique,
                    },
                )
            }
            (S::CleaningUpRead { failure }, Input::Reply(_)) => self.finish(
                FAILED,
                MemcachedAcquire::Failed {
                    failure,
                    left: Leftover::Nothing,
                },
            ),
            (S::CleaningUpCas { failure }, Input::Reply(MemcachedReply::Stored)) => self.finish(
                FAILED,
                MemcachedAcquire::Failed {
                    failure,
                    left: Leftover::Nothing,
                },
            ),
            (S::CleaningUpRead { failure } | S::CleaningUpCas { failure }, Input::Reply(_) | Input::Failed(_)) => self
                .finish(
                    FAILED,
                    MemcachedAcquire::Failed {
                        failure,
                        left: Leftover::CleanUpFailed,
                    },
                ),
            (S::Adding { .. } | S::CheckingOurs, Input::Reply(reply)) => {
                let failure = StoreFailure::Other(format!("unexpected reply {reply:?}"));
                self.give_up(failure)
            }
            (state, input) => panic!("AddAcquire: {input:?} in state {state:?}"),
        }
    }
}

impl Machine for AddAcquire {
    type Config = MemcachedLockConfig;
    type Output = MemcachedAcquire;
    type Command = MemcachedCommand;
    type Reply = MemcachedReply;

    fn resume(
        &mut self,
        config: &MemcachedLockConfig,
        input: Input<MemcachedReply>,
        now_us: u64,
    ) -> Step<MemcachedAcquire, MemcachedCommand> {
        super::resume_checked(
            "AddAcquire",
            self,
            AddAcquire::is_finished,
            AddAcquire::advance,
            (config, input, now_us),
        )
    }
}

/// What a release or an extension found.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// Done on our item (released; or extended, with the new lease).
    Done {
        lease: Option<MemcachedLease>,
    },
    /// The key was not ours (expired, or another holder's): nothing done to it.
    NotOurs,
    /// As written: `delete`/`touch` acted on the key without knowing whose it was.
    ActedOnWhoeverHeldIt,
    /// The key was gone (NOT_FOUND), as written: ours had expired, or someone released it.
    Gone,
    Failed(StoreFailure),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum CallState {
    Idle,
    /// `delete` or `touch` (as written) sent at this client time.
    Plain {
        sent_at_us: u64,
    },
    Reading,
    Cas {
        sent_at_us: u64,
    },
    Finished,
}

/// Release (M3) or extend (M4), as written or checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LeaseCall {
    lease: MemcachedLease,
    extend: bool,
    state: CallState,
}

/// M3: release.
pub fn release(lease: MemcachedLease) -> LeaseCall {
    LeaseCall {
        lease,
        extend: false,
        state: CallState::Idle,
    }
}

/// M4: extend by one TTL.
pub fn touch(lease: MemcachedLease) -> LeaseCall {
    LeaseCall {
        lease,
        extend: true,
        state: CallState::Idle,
    }
}

impl LeaseCall {
    pub fn is_finished(&self) -> bool {
        self.state == CallState::Finished
    }

    fn finish(&mut self, output: Outcome) -> Step<Outcome, MemcachedCommand> {
        self.state = CallState::Finished;
        Step::done(DONE, output)
    }

    fn extended(&self, sent_at_us: u64) -> Option<MemcachedLease> {
        self.extend.then(|| MemcachedLease {
            set_sent_at_us: sent_at_us,
            ..self.lease.clone()
        })
    }

    fn advance(
        &mut self,
        config: &MemcachedLockConfig,
        input: Input<MemcachedReply>,
        now_us: u64,
    ) -> Step<Outcome, MemcachedCommand> {
        let key = self.lease.key.clone();
        match (std::mem::replace(&mut self.state, CallState::Finished), input) {
            (CallState::Idle, Input::Start) => match config.checks {
                Checks::AsWritten => {
                    self.state = CallState::Plain { sent_at_us: now_us };
                    if self.extend {
                        Step::store(
                            M4_TOUCH,
                            MemcachedCommand::Touch {
                                key,
                                exptime_s: config.exptime_s(),
                            },
                        )
                    } else {
                        Step::store(M3_DELETE, MemcachedCommand::Delete { key })
                    }
                }
                Checks::CasChecked => {
                    self.state = CallState::Reading;
                    Step::store(READ_FOR_CAS, MemcachedCommand::Gets { key })
                }
            },
            (CallState::Plain { sent_at_us }, Input::Reply(MemcachedReply::Deleted | MemcachedReply::Touched)) => {
                let lease = self.extended(sent_at_us);
                // Whose item it was, the server did not say: ours if the lease was still good.
                if now_us < self.lease.valid_until_us(config) {
                    self.finish(Outcome::Done { lease })
                } else {
                    self.finish(Outcome::ActedOnWhoeverHeldIt)
                }
            }
            (CallState::Plain { .. }, Input::Reply(MemcachedReply::NotFound)) => self.finish(Outcome::Gone),
            (CallState::Reading, Input::Reply(MemcachedReply::ValueWithCas { value, cas_unique }))
                if value == self.lease.token =>
            {
                self.state = CallState::Cas { sent_at_us: now_us };
                let (tag, exptime_s) = if self.extend {
                    (CAS_EXTEND, config.exptime_s())
                } else {
                    (CAS_RELEASE, -1)
                };
                Step::store(
                    tag,
                    MemcachedCommand::Cas {
                        key,
                        value,
                        exptime_s,
                        cas_unique,
                    },
                )
            }
            (CallState::Reading, Input::Reply(MemcachedReply::ValueWithCas { .. } | MemcachedReply::Miss)) => {
                self.finish(Outcome::NotOurs)
            }
            (CallState::Cas { sent_at_us }, Input::Reply(MemcachedReply::Stored)) => {
                let lease = self.extended(sent_at_us);
                self.finish(Outcome::Done { lease })
            }
            // EXISTS: someone stored the key since our `gets` (it had expired and was taken);
            // NOT_FOUND: it expired in between.
            (CallState::Cas { .. }, Input::Reply(MemcachedReply::Exists | MemcachedReply::NotFound)) => {
                self.finish(Outcome::NotOurs)
            }
            (_, Input::Failed(failure)) => self.finish(Outcome::Failed(failure)),
            (state, Input::Reply(reply)) => self.finish(Outcome::Failed(StoreFailure::Other(format!(
                "unexpected reply {reply:?} in {state:?}"
            )))),
            (state, input) => panic!("LeaseCall: {input:?} in state {state:?}"),
        }
    }
}

impl Machine for LeaseCall {
    type Config = MemcachedLockConfig;
    type Output = Outcome;
    type Command = MemcachedCommand;
    type Reply = MemcachedReply;

    fn resume(
        &mut self,
        config: &MemcachedLockConfig,
        input: Input<MemcachedReply>,
        now_us: u64,
    ) -> Step<Outcome, MemcachedCommand> {
        super::resume_checked(
            "LeaseCall",
            self,
            LeaseCall::is_finished,
            LeaseCall::advance,
            (config, input, now_us),
        )
    }
}

/// Who the server says holds `key` (T1-server): the token its live item carries.
pub fn holder_on_server(server: &Memcached, key: &str, server_now_ms: u64) -> ServerHolder {
    // Live while the server's whole-second clock is below its expiry.
    server
        .item(key)
        .filter(|item| item.is_live_at(server_now_ms))
        .map_or(ServerHolder::Nobody, |item| {
            ServerHolder::token_until(&item.value, item.expires_at_s.map(|s| s.saturating_mul(1_000_000)))
        })
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::store::memcached::Memcached;

    enum Fate {
        Answered,
        LostAfter(StoreFailure),
    }

    /// A client and a Memcached server whose clock reads Unix time; every request takes 1 ms.
    struct Bench {
        server: Memcached,
        now_us: u64,
        fates: VecDeque<Fate>,
        tags: Vec<StepTag>,
    }

    impl Bench {
        fn new() -> Self {
            Bench {
                server: Memcached::new(),
                // 2023-11-14, mid-second: whole-second expiry shows.
                now_us: 1_700_000_000_500_000,
                fates: VecDeque::new(),
                tags: Vec::new(),
            }
        }

        fn now_ms(&self) -> u64 {
            self.now_us / 1000
        }

        fn other_adds(&mut self, key: &str, ttl_s: i64) {
            let add = MemcachedCommand::Add {
                key: key.into(),
                value: "other".into(),
                exptime_s: ttl_s,
            };
            assert_eq!(self.server.apply(&add, self.now_ms()), MemcachedReply::Stored);
        }

        fn value(&mut self, key: &str) -> Option<String> {
            match self
                .server
                .apply(&MemcachedCommand::Get { key: key.into() }, self.now_ms())
            {
                MemcachedReply::Value { value } => Some(value),
                _ => None,
            }
        }

        fn run<M>(&mut self, config: &MemcachedLockConfig, machine: &mut M) -> M::Output
        where
            M: Machine<Config = MemcachedLockConfig, Command = MemcachedCommand, Reply = MemcachedReply>,
        {
            let mut input = Input::Start;
            for _ in 0..100_000 {
                let step = machine.resume(config, input, self.now_us);
                self.tags.push(step.tag);
                input = match step.action {
                    Action::Store(command) => {
                        self.now_us += 1000;
                        match self.fates.pop_front().unwrap_or(Fate::Answered) {
                            Fate::Answered => Input::Reply(self.server.apply(&command, self.now_ms())),
                            Fate::LostAfter(failure) => {
                                self.server.apply(&command, self.now_ms());
                                Input::Failed(failure)
                            }
                        }
                    }
                    Action::Sleep { ms, .. } => {
                        self.now_us += ms * 1000;
                        Input::Woke
                    }
                    Action::Done(output) => return output,
                    Action::Draw { .. } | Action::ReadTime | Action::StopRenewal { .. } => {
                        panic!("a Memcached lock machine draws nothing, reads no time source, has no renewal task")
                    }
                };
            }
            panic!("the machine did not finish in 100000 steps")
        }
    }

    fn config(checks: Checks) -> MemcachedLockConfig {
        MemcachedLockConfig {
            ttl_s: 10,
            max_wait_ms: Some(60_000),
            checks,
            ..MemcachedLockConfig::default()
        }
    }

    fn acquire(bench: &mut Bench) -> MemcachedLease {
        match bench.run(
            &config(Checks::CasChecked),
            &mut AddAcquire::new("lock", "t1", Patience::Wait),
        ) {
            MemcachedAcquire::Acquired { lease } => lease,
            other => panic!("expected the lock, got {other:?}"),
        }
    }

    #[test]
    fn add_takes_a_free_key_waits_for_a_taken_one_and_counts_whole_seconds() {
        let mut bench = Bench::new();
        let sent = bench.now_us;
        let lease = acquire(&mut bench);
        assert_eq!(lease.set_sent_at_us, sent);
        assert_eq!(lease.valid_until_us(&config(Checks::CasChecked)), sent + 9_000_000);
        assert_eq!(bench.value("lock").as_deref(), Some("t1"));
        let mut bench = Bench::new();
        bench.other_adds("lock", 10);
        let once = bench.run(
            &config(Checks::CasChecked),
            &mut AddAcquire::new("lock", "t1", Patience::Once),
        );
        assert_eq!(once, MemcachedAcquire::NotAcquired);
        let started = bench.now_us;
        let lease = acquire(&mut bench);
        // The other's item dies at the whole second 10 s after it was stored: 9.5 s from now.
        assert!(
            lease.set_sent_at_us >= started + 9_400_000,
            "waited for the other's item"
        );
        assert!(bench.tags.contains(&M2_WAIT));
    }

    #[test]
    fn an_add_whose_reply_was_lost_is_recognised_as_ours() {
        let mut bench = Bench::new();
        let first = bench.now_us;
        bench.fates.push_back(Fate::LostAfter(StoreFailure::Timeout));
        let lease = acquire(&mut bench);
        assert!(bench.tags.contains(&CHECKED_OURS));
        assert_eq!(lease.set_sent_at_us, first);
        assert!(bench.now_us < first + 1_000_000, "no wait for our own item");
    }

    #[test]
    fn a_call_that_gives_up_after_an_uncertain_add_releases_the_item_if_ours() {
        let mut bench = Bench::new();
        for _ in 0..4 {
            bench.fates.push_back(Fate::LostAfter(StoreFailure::Timeout));
        }
        let output = bench.run(
            &config(Checks::CasChecked),
            &mut AddAcquire::new("lock", "t1", Patience::Wait),
        );
        assert_eq!(
            output,
            MemcachedAcquire::Failed {
                failure: StoreFailure::Timeout,
                left: Leftover::Nothing
            }
        );
        assert!(bench.tags.contains(&CLEAN_UP) && bench.tags.contains(&CAS_RELEASE));
        assert_eq!(bench.value("lock"), None, "C-free: the item it may have stored is gone");
    }

    #[test]
    fn release_as_written_deletes_the_next_holders_lock_and_the_checked_one_does_not() {
        for (checks, others_lock_survives) in [(Checks::AsWritten, false), (Checks::CasChecked, true)] {
            let mut bench = Bench::new();
            let lease = acquire(&mut bench);
            // Paused past the TTL: the item expired and another client added its own.
            bench.now_us += 11_000_000;
            bench.other_adds("lock", 10);
            let outcome = bench.run(&config(checks), &mut release(lease));
            assert_eq!(
                bench.value("lock").is_some(),
                others_lock_survives,
                "{checks:?}: {outcome:?}"
            );
            let expected = match checks {
                Checks::AsWritten => Outcome::ActedOnWhoeverHeldIt,
                Checks::CasChecked => Outcome::NotOurs,
            };
            assert_eq!(outcome, expected);
        }
        // While the lease is good, both release our item.
        for checks in [Checks::AsWritten, Checks::CasChecked] {
            let mut bench = Bench::new();
            let lease = acquire(&mut bench);
            assert_eq!(
                bench.run(&config(checks), &mut release(lease)),
                Outcome::Done { lease: None }
            );
            assert_eq!(bench.value("lock"), None);
        }
    }

    #[test]
    fn touch_as_written_extends_the_next_holders_lock_and_the_checked_one_does_not() {
        for checks in [Checks::AsWritten, Checks::CasChecked] {
            let mut bench = Bench::new();
            let lease = acquire(&mut bench);
            bench.now_us += 5_000_000;
            let sent = bench.now_us;
            match bench.run(&config(checks), &mut touch(lease.clone())) {
                Outcome::Done { lease: Some(extended) } => {
                    // The lease counts from the send of the request that set the expiry: the
                    // touch, or the cas one request after the gets.
                    let setting_request = match checks {
                        Checks::AsWritten => sent,
                        Checks::CasChecked => sent + 1000,
                    };
                    assert_eq!(extended.set_sent_at_us, setting_request);
                }
                other => panic!("{checks:?}: our own lease was not extended: {other:?}"),
            }
            bench.now_us += 11_000_000;
            bench.other_adds("lock", 2);
            let outcome = bench.run(&config(checks), &mut touch(lease));
            // The other's 2 s item: extended to 10 s by the stale touch, or left alone.
            bench.now_us += 3_000_000;
            let survives = bench.value("lock").is_some();
            match checks {
                Checks::AsWritten => assert!(survives && outcome == Outcome::ActedOnWhoeverHeldIt, "{outcome:?}"),
                Checks::CasChecked => assert!(!survives && outcome == Outcome::NotOurs, "{outcome:?}"),
            }
        }
    }

    #[test]
    fn configs_memcached_would_misread_are_refused() {
        let with = |ttl_s| MemcachedLockConfig {
            ttl_s,
            ..MemcachedLockConfig::default()
        };
        assert_eq!(with(0).check(), Err(MemcachedConfigError::NeverExpires));
        assert_eq!(with(1).check(), Err(MemcachedConfigError::OneSecond));
        assert_eq!(
            with(2_592_001).check(),
            Err(MemcachedConfigError::ReadAsAbsoluteTime(2_592_001))
        );
        assert_eq!(with(2_592_000).check(), Ok(()));
        assert_eq!(with(2).check(), Ok(()));
    }
}
