//! `SET key token NX PX ttl`: the single-instance Redis lock (seeds 001–003).
//!
//! The recipe every survey gives: to acquire, set the key to a random token only if it does not
//! exist, with an expiry; to release, delete the key only if its value is still our token (a
//! script, so that the check and the delete are one step: a plain `DEL` after the lease ran out
//! would delete the next holder's key); to keep a lock longer than one TTL, extend the expiry
//! the same way, only if the value is ours. Three machines here, one per call:
//!
//! - [`SetNxAcquire`]: R1 `SET NX PX`; when the key is taken, R2 wait and try again (or give up:
//!   `try_lock`, a deadline). Ours: a request that failed may still have been applied — the
//!   server took the lock and the reply was lost. Sending `SET NX` again then answers nil
//!   *because of our own key*; the machine remembers that an attempt may have applied and, on
//!   nil, reads the key: if it holds our token, we hold the lock (the lease counted from the
//!   first uncertain send, the earliest the server can have stamped it). Without this check the
//!   client waits a whole TTL for its own key (C-release). When a call gives up after such a
//!   failure it deletes the key if it is ours (C-free), as the Cassandra locks' clean-up does.
//! - [`SetNxExtend`]: R4 `PEXPIRE` if the value is our token. 0 means the key expired or
//!   another client holds it now: the lease is lost, and the holder must learn it (C-lost).
//! - [`SetNxRelease`]: R3 delete if the value is our token. 0 means we had lost the lock before
//!   releasing — unless an earlier attempt of this release may have applied and lost its
//!   reply, in which case the key is gone because of us: the machine says it cannot tell.
//!
//! What this lock cannot do, whatever the machine: hand out a token that only grows (the
//! random token only names the holder: fencing needs a counter, `INCR` on another key, which is
//! only as safe as the lock itself); survive a failover that loses the acknowledged `SET`
//! (asynchronous replication) or a restart without fsync. The simulator shows both.

use super::{RedisLease, RedisLockConfig};
use crate::algo::retry::Uncertainty;
use crate::algo::server_holder::ServerHolder;
use crate::algo::{Action, Input, Leftover, Machine, SleepKind, Source, Step, StepTag};
use crate::store::redis_keyspace::{RedisCommand, RedisReply};
use crate::store::redis_keyspace::{RedisKeyspace, RedisValue};
use crate::store::StoreFailure;

const R1_SET: StepTag = StepTag::new(Source::Redis, 1, "SET key token NX PX ttl");
const R2_WAIT: StepTag = StepTag::new(Source::Redis, 2, "the key is taken: wait, then try again");
const R2_GIVE_UP_TAKEN: StepTag = StepTag::new(Source::Redis, 2, "the key is taken: give up (try_lock)");
const R2_GIVE_UP_DEADLINE: StepTag =
    StepTag::new(Source::Redis, 2, "the key is taken and the deadline passed: give up");
const R1_ACQUIRED: StepTag = StepTag::new(Source::Redis, 1, "OK: the lock is ours");
const CHECK_OURS: StepTag = StepTag::new(
    Source::Ours,
    0,
    "nil after an attempt that may have applied: read the key, is the value our token?",
);
const CHECKED_OURS: StepTag = StepTag::new(
    Source::Ours,
    0,
    "the key holds our token: an earlier attempt took the lock",
);
const RETRY_AFTER_FAILURE: StepTag = StepTag::new(Source::Ours, 0, "the request failed: wait, then try again");
const CLEAN_UP: StepTag = StepTag::new(
    Source::Ours,
    0,
    "giving up after an attempt that may have applied: delete the key if it is ours (C-free)",
);
const FAILED: StepTag = StepTag::new(Source::Ours, 0, "the store kept failing: give up");
const R4_EXTEND: StepTag = StepTag::new(Source::Redis, 4, "extend: PEXPIRE the key if its value is our token");
const R4_EXTENDED: StepTag = StepTag::new(Source::Redis, 4, "extended");
const R4_LOST: StepTag = StepTag::new(Source::Redis, 4, "not ours any more: the lease is lost");
const R3_RELEASE: StepTag = StepTag::new(Source::Redis, 3, "release: delete the key if its value is our token");
const R3_RELEASED: StepTag = StepTag::new(Source::Redis, 3, "released");
const R3_NOT_OURS: StepTag = StepTag::new(Source::Redis, 3, "the key was not ours: the lock had been lost");

/// How a `SET NX` acquisition ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RedisAcquire {
    Acquired {
        lease: RedisLease,
    },
    /// `try_lock` found the key taken.
    NotAcquired,
    /// `max_wait_ms` ran out with the key taken by someone else.
    TimedOut,
    /// The store kept failing; `left`: what this call may have left behind.
    Failed {
        failure: StoreFailure,
        left: Leftover,
    },
}

/// Wait until acquired, or try once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Patience {
    /// `lock()`: try again every `retry_every_ms` until acquired or `max_wait_ms`.
    Wait,
    /// `try_lock()`: one answer from the server decides.
    Once,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum AcquireState {
    Idle,
    /// `SET NX PX` sent at this client time.
    Setting {
        sent_at_us: u64,
    },
    /// `GET` sent after a nil that may hide our own key.
    CheckingOurs,
    Waiting,
    /// The delete of a key that may be ours, before reporting `failure`.
    CleaningUp {
        failure: StoreFailure,
    },
    Finished,
}

/// R1–R2: acquire the `SET NX` lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SetNxAcquire {
    key: String,
    token: String,
    patience: Patience,
    state: AcquireState,
    deadline_us: Option<u64>,
    /// Failed `SET`s that may have applied, and failures in a row.
    uncertainty: Uncertainty,
}

impl SetNxAcquire {
    /// `token` must be unique to this acquisition (a random value, or client id + counter).
    pub fn new(key: impl Into<String>, token: impl Into<String>, patience: Patience) -> Self {
        SetNxAcquire {
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

    fn set(&mut self, config: &RedisLockConfig, now_us: u64) -> Step<RedisAcquire, RedisCommand> {
        self.state = AcquireState::Setting { sent_at_us: now_us };
        Step::new(
            R1_SET,
            Action::Store(RedisCommand::set_nx_px(&self.key, &self.token, config.ttl_ms)),
        )
    }

    fn finish(&mut self, tag: StepTag, output: RedisAcquire) -> Step<RedisAcquire, RedisCommand> {
        self.state = AcquireState::Finished;
        Step::done(tag, output)
    }

    fn acquired(&mut self, tag: StepTag, set_sent_at_us: u64) -> Step<RedisAcquire, RedisCommand> {
        let lease = RedisLease {
            key: self.key.clone(),
            token: self.token.clone(),
            set_sent_at_us,
        };
        self.finish(tag, RedisAcquire::Acquired { lease })
    }

    /// Give up: delete the key first if an attempt may have left it ours.
    fn give_up(&mut self, tag: StepTag, output: RedisAcquire) -> Step<RedisAcquire, RedisCommand> {
        match (&output, self.uncertainty.may_have_applied()) {
            (RedisAcquire::Failed { failure, .. }, true) => {
                self.state = AcquireState::CleaningUp {
                    failure: failure.clone(),
                };
                Step::new(
                    CLEAN_UP,
                    Action::Store(RedisCommand::DeleteIfEquals {
                        key: self.key.clone(),
                        token: self.token.clone(),
                    }),
                )
            }
            _ => self.finish(tag, output),
        }
    }

    /// The key is taken by someone else: wait and try again, or give up.
    fn taken(&mut self, config: &RedisLockConfig, now_us: u64) -> Step<RedisAcquire, RedisCommand> {
        match self.patience {
            Patience::Once => self.finish(R2_GIVE_UP_TAKEN, RedisAcquire::NotAcquired),
            Patience::Wait if self.deadline_us.is_some_and(|deadline| now_us >= deadline) => {
                self.finish(R2_GIVE_UP_DEADLINE, RedisAcquire::TimedOut)
            }
            Patience::Wait => {
                self.state = AcquireState::Waiting;
                Step::new(
                    R2_WAIT,
                    Action::Sleep {
                        ms: config.retry_every_ms,
                        kind: SleepKind::Poll,
                    },
                )
            }
        }
    }

    fn failed(
        &mut self,
        config: &RedisLockConfig,
        failure: StoreFailure,
        sent_at_us: Option<u64>,
    ) -> Step<RedisAcquire, RedisCommand> {
        if self.uncertainty.failed(&failure, sent_at_us, &config.retry) {
            let left = if self.uncertainty.may_have_applied() {
                Leftover::CleanUpFailed
            } else {
                Leftover::Nothing
            };
            return self.give_up(FAILED, RedisAcquire::Failed { failure, left });
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
        config: &RedisLockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedisAcquire, RedisCommand> {
        match (std::mem::replace(&mut self.state, AcquireState::Finished), input) {
            (AcquireState::Idle, Input::Start) => {
                self.deadline_us = config
                    .max_wait_ms
                    .map(|ms| now_us.saturating_add(ms.saturating_mul(1000)));
                self.set(config, now_us)
            }
            (AcquireState::Setting { sent_at_us }, Input::Reply(RedisReply::Ok)) => {
                self.uncertainty.answered();
                // An earlier attempt may have set the key first; this one then overwrote
                // nothing (NX), so the key is the earlier one's: count from the earliest.
                let since = self.uncertainty.lease_start_us(sent_at_us);
                self.acquired(R1_ACQUIRED, since)
            }
            (AcquireState::Setting { .. }, Input::Reply(RedisReply::Nil)) => {
                self.uncertainty.answered();
                if self.uncertainty.may_have_applied() {
                    self.state = AcquireState::CheckingOurs;
                    Step::new(CHECK_OURS, Action::Store(RedisCommand::Get { key: self.key.clone() }))
                } else {
                    self.taken(config, now_us)
                }
            }
            (AcquireState::CheckingOurs, Input::Reply(RedisReply::Bulk(value))) if value == self.token => {
                debug_assert!(
                    self.uncertainty.may_have_applied(),
                    "checked only after an uncertain attempt"
                );
                let since = self.uncertainty.lease_start_us(now_us);
                self.acquired(CHECKED_OURS, since)
            }
            (AcquireState::CheckingOurs, Input::Reply(RedisReply::Bulk(_) | RedisReply::Nil)) => {
                // Another client's key, or none (expired meanwhile): ours did not apply, or has
                // expired already. Either way nothing of ours is there now.
                self.uncertainty.settled();
                self.taken(config, now_us)
            }
            (AcquireState::Setting { .. } | AcquireState::CheckingOurs, Input::Reply(reply)) => {
                // An error reply (a wrong type under our key): a bug of the caller's, not a fault.
                let failure = StoreFailure::Other(format!("unexpected reply {reply:?}"));
                self.give_up(
                    FAILED,
                    RedisAcquire::Failed {
                        failure,
                        left: Leftover::Nothing,
                    },
                )
            }
            (AcquireState::Setting { sent_at_us }, Input::Failed(failure)) => {
                self.failed(config, failure, Some(sent_at_us))
            }
            (AcquireState::CheckingOurs, Input::Failed(failure)) => self.failed(config, failure, None),
            (AcquireState::Waiting, Input::Woke) => {
                if self.patience == Patience::Wait && self.deadline_us.is_some_and(|deadline| now_us >= deadline) {
                    let output = if self.uncertainty.may_have_applied() {
                        RedisAcquire::Failed {
                            failure: StoreFailure::Timeout,
                            left: Leftover::CleanUpFailed,
                        }
                    } else {
                        RedisAcquire::TimedOut
                    };
                    return self.give_up(R2_GIVE_UP_DEADLINE, output);
                }
                self.set(config, now_us)
            }
            (AcquireState::CleaningUp { failure }, Input::Reply(_)) => self.finish(
                FAILED,
                RedisAcquire::Failed {
                    failure,
                    left: Leftover::Nothing,
                },
            ),
            (AcquireState::CleaningUp { failure }, Input::Failed(_)) => self.finish(
                FAILED,
                RedisAcquire::Failed {
                    failure,
                    left: Leftover::CleanUpFailed,
                },
            ),
            (state, input) => panic!("SetNxAcquire: {input:?} in state {state:?}"),
        }
    }
}

impl Machine for SetNxAcquire {
    type Config = RedisLockConfig;
    type Output = RedisAcquire;
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn resume(
        &mut self,
        config: &RedisLockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedisAcquire, RedisCommand> {
        crate::algo::resume_checked(
            "SetNxAcquire",
            self,
            SetNxAcquire::is_finished,
            SetNxAcquire::advance,
            (config, input, now_us),
        )
    }
}

/// How an extension ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Extended {
    /// The key is ours for another TTL, counted from `lease.set_sent_at_us`.
    Extended { lease: RedisLease },
    /// The key expired or another client holds it: the lock is lost (C-lost).
    Lost,
    /// The store did not answer: the lease runs out at its old validity unless a later
    /// extension gets through.
    Failed(StoreFailure),
}

/// R4: extend the lease, only if the key still holds our token.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SetNxExtend {
    lease: RedisLease,
    /// The client time the `PEXPIRE` was sent, while in flight.
    sent_at_us: Option<u64>,
    finished: bool,
}

impl SetNxExtend {
    pub fn new(lease: RedisLease) -> Self {
        SetNxExtend {
            lease,
            sent_at_us: None,
            finished: false,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn advance(
        &mut self,
        config: &RedisLockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<Extended, RedisCommand> {
        match (self.sent_at_us, input) {
            (None, Input::Start) => {
                self.sent_at_us = Some(now_us);
                Step::new(
                    R4_EXTEND,
                    Action::Store(RedisCommand::PExpireIfEquals {
                        key: self.lease.key.clone(),
                        token: self.lease.token.clone(),
                        ttl_ms: config.ttl_ms,
                    }),
                )
            }
            (Some(sent_at_us), Input::Reply(RedisReply::Integer(1))) => {
                self.finished = true;
                let lease = RedisLease {
                    set_sent_at_us: sent_at_us,
                    ..self.lease.clone()
                };
                Step::done(R4_EXTENDED, Extended::Extended { lease })
            }
            (Some(_), Input::Reply(_)) => {
                self.finished = true;
                Step::done(R4_LOST, Extended::Lost)
            }
            (Some(_), Input::Failed(failure)) => {
                self.finished = true;
                Step::done(R4_EXTEND, Extended::Failed(failure))
            }
            (sent, input) => panic!("SetNxExtend: {input:?} with the request sent at {sent:?}"),
        }
    }
}

impl Machine for SetNxExtend {
    type Config = RedisLockConfig;
    type Output = Extended;
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn resume(
        &mut self,
        config: &RedisLockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<Extended, RedisCommand> {
        crate::algo::resume_checked(
            "SetNxExtend",
            self,
            SetNxExtend::is_finished,
            SetNxExtend::advance,
            (config, input, now_us),
        )
    }
}

/// How a release ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RedisReleased {
    /// Our key was deleted.
    Released,
    /// The key was not ours when the delete ran: the lease had been lost before the release.
    WasNotOurs,
    /// An earlier attempt may have deleted it and lost its reply, and the retry found the key
    /// gone or someone else's: released, or lost before — the store cannot tell which.
    GoneEitherWay,
    /// The store kept failing: the key stays until its TTL unless an attempt applied.
    Failed(StoreFailure),
}

/// R3: release, deleting the key only if it holds our token.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SetNxRelease {
    lease: RedisLease,
    in_flight: bool,
    waiting: bool,
    /// An attempt failed in a way that may have applied.
    uncertain: bool,
    failures: u8,
    finished: bool,
}

impl SetNxRelease {
    pub fn new(lease: RedisLease) -> Self {
        SetNxRelease {
            lease,
            in_flight: false,
            waiting: false,
            uncertain: false,
            failures: 0,
            finished: false,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn delete(&mut self) -> Step<RedisReleased, RedisCommand> {
        self.in_flight = true;
        self.waiting = false;
        Step::new(
            R3_RELEASE,
            Action::Store(RedisCommand::DeleteIfEquals {
                key: self.lease.key.clone(),
                token: self.lease.token.clone(),
            }),
        )
    }

    fn finish(&mut self, tag: StepTag, output: RedisReleased) -> Step<RedisReleased, RedisCommand> {
        self.finished = true;
        self.in_flight = false;
        Step::done(tag, output)
    }

    fn advance(
        &mut self,
        config: &RedisLockConfig,
        input: Input<RedisReply>,
        _now_us: u64,
    ) -> Step<RedisReleased, RedisCommand> {
        match input {
            Input::Start if !self.in_flight => self.delete(),
            Input::Woke if self.waiting => self.delete(),
            Input::Reply(RedisReply::Integer(1)) if self.in_flight => self.finish(R3_RELEASED, RedisReleased::Released),
            Input::Reply(_) if self.in_flight && self.uncertain => {
                self.finish(R3_NOT_OURS, RedisReleased::GoneEitherWay)
            }
            Input::Reply(_) if self.in_flight => self.finish(R3_NOT_OURS, RedisReleased::WasNotOurs),
            Input::Failed(failure) if self.in_flight => {
                self.in_flight = false;
                self.uncertain |= failure != StoreFailure::Unavailable;
                self.failures = self.failures.saturating_add(1);
                if self.failures > config.retry.max_retries {
                    return self.finish(FAILED, RedisReleased::Failed(failure));
                }
                self.waiting = true;
                Step::new(
                    RETRY_AFTER_FAILURE,
                    Action::Sleep {
                        ms: config.retry.backoff_ms,
                        kind: SleepKind::Retry,
                    },
                )
            }
            input => panic!(
                "SetNxRelease: {input:?} (in flight {}, waiting {})",
                self.in_flight, self.waiting
            ),
        }
    }
}

impl Machine for SetNxRelease {
    type Config = RedisLockConfig;
    type Output = RedisReleased;
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn resume(
        &mut self,
        config: &RedisLockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedisReleased, RedisCommand> {
        crate::algo::resume_checked(
            "SetNxRelease",
            self,
            SetNxRelease::is_finished,
            SetNxRelease::advance,
            (config, input, now_us),
        )
    }
}

/// Who the server says holds `key` (T1-server): the token its live string value carries.
/// SETNX+EXPIRE and every Redlock master store the lock the same way.
pub fn holder_on_server(keyspace: &RedisKeyspace, key: &str, server_now_ms: u64) -> ServerHolder {
    let Some(entry) = keyspace.live_entry(key, server_now_ms) else {
        return ServerHolder::Nobody;
    };
    match &entry.value {
        // Live through its expiry's millisecond, gone after it.
        RedisValue::Text(token) => ServerHolder::token_until(
            token,
            entry.expires_at_ms.map(|ms| ms.saturating_mul(1000).saturating_add(1)),
        ),
        _ => ServerHolder::Nobody,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::store::redis_keyspace::RedisKeyspace;

    /// What happens to one request.
    #[derive(Clone, Debug)]
    enum Fate {
        Answered,
        /// Failed before the server saw it.
        LostBefore(StoreFailure),
        /// Applied, then the reply was lost.
        LostAfter(StoreFailure),
    }

    /// A client and one Redis server with the same clock; every request takes 1 ms.
    struct Bench {
        server: RedisKeyspace,
        now_us: u64,
        fates: VecDeque<Fate>,
        tags: Vec<StepTag>,
    }

    impl Bench {
        fn new() -> Self {
            Bench {
                server: RedisKeyspace::new(),
                now_us: 1_000_000,
                fates: VecDeque::new(),
                tags: Vec::new(),
            }
        }

        fn now_ms(&self) -> u64 {
            self.now_us / 1000
        }

        /// Another client's `SET NX PX` of `key`.
        fn other_takes(&mut self, key: &str, ttl_ms: u64) {
            let reply = self
                .server
                .apply(&RedisCommand::set_nx_px(key, "other", ttl_ms), self.now_ms());
            assert_eq!(reply, RedisReply::Ok, "the other client takes a free key");
        }

        fn value(&self, key: &str) -> Option<String> {
            self.server
                .live_entry(key, self.now_ms())
                .map(|entry| format!("{:?}", entry.value))
        }

        fn run<M>(&mut self, config: &RedisLockConfig, machine: &mut M) -> M::Output
        where
            M: Machine<Config = RedisLockConfig, Command = RedisCommand, Reply = RedisReply>,
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
                            Fate::LostBefore(failure) => Input::Failed(failure),
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
                        panic!("a SET NX machine draws nothing, reads no time source, has no renewal task")
                    }
                };
            }
            panic!("the machine did not finish in 100000 steps")
        }
    }

    fn config() -> RedisLockConfig {
        RedisLockConfig {
            ttl_ms: 10_000,
            max_wait_ms: Some(60_000),
            ..RedisLockConfig::default()
        }
    }

    fn acquire(bench: &mut Bench, patience: Patience) -> RedisAcquire {
        bench.run(&config(), &mut SetNxAcquire::new("lock", "t1", patience))
    }

    fn lease(output: RedisAcquire) -> RedisLease {
        match output {
            RedisAcquire::Acquired { lease } => lease,
            other => panic!("expected the lock, got {other:?}"),
        }
    }

    #[test]
    fn a_free_key_is_taken_and_the_lease_counts_from_the_send() {
        let mut bench = Bench::new();
        let sent = bench.now_us;
        let lease = lease(acquire(&mut bench, Patience::Wait));
        assert_eq!(lease.set_sent_at_us, sent);
        assert_eq!(
            lease.valid_until_us(&config()),
            sent + 10_000_000 - 100_000,
            "1% drift margin"
        );
        assert!(bench.value("lock").is_some_and(|v| v.contains("t1")));
    }

    #[test]
    fn a_taken_key_is_refused_once_waited_for_or_given_up_on() {
        let mut bench = Bench::new();
        bench.other_takes("lock", 10_000);
        assert_eq!(acquire(&mut bench, Patience::Once), RedisAcquire::NotAcquired);
        // Waiting: the other's key expires after 10 s and ours goes in.
        let started = bench.now_us;
        let lease = lease(acquire(&mut bench, Patience::Wait));
        assert!(
            lease.set_sent_at_us >= started + 9_000_000,
            "waited for the other's TTL"
        );
        assert!(bench.tags.contains(&R2_WAIT));
        // A deadline shorter than the other's TTL gives up.
        let mut bench = Bench::new();
        bench.other_takes("lock", 10_000);
        let short = RedisLockConfig {
            max_wait_ms: Some(2_000),
            ..config()
        };
        let output = bench.run(&short, &mut SetNxAcquire::new("lock", "t1", Patience::Wait));
        assert_eq!(output, RedisAcquire::TimedOut);
        assert!(bench.now_us < 1_000_000 + 3_000_000, "gave up near its deadline");
    }

    #[test]
    fn a_set_whose_reply_was_lost_is_recognised_as_ours_not_waited_for() {
        let mut bench = Bench::new();
        let first_send = bench.now_us;
        bench.fates.push_back(Fate::LostAfter(StoreFailure::Timeout));
        let lease = lease(acquire(&mut bench, Patience::Wait));
        assert!(bench.tags.contains(&CHECK_OURS) && bench.tags.contains(&CHECKED_OURS));
        assert_eq!(
            lease.set_sent_at_us, first_send,
            "the lease counts from the send that applied"
        );
        assert!(bench.now_us < first_send + 1_000_000, "no wait for our own key's TTL");
    }

    #[test]
    fn a_set_that_failed_before_applying_is_just_tried_again() {
        let mut bench = Bench::new();
        bench.fates.push_back(Fate::LostBefore(StoreFailure::Unavailable));
        let output = acquire(&mut bench, Patience::Once);
        assert!(matches!(output, RedisAcquire::Acquired { .. }), "{output:?}");
        assert!(
            !bench.tags.contains(&CHECK_OURS),
            "Unavailable applied nothing: no check needed"
        );
    }

    #[test]
    fn a_failed_call_leaves_no_key_of_its_own_behind() {
        // Every attempt applies and loses its reply, the clean-up gets through: C-free.
        let mut bench = Bench::new();
        for _ in 0..4 {
            bench.fates.push_back(Fate::LostAfter(StoreFailure::Timeout));
        }
        let output = acquire(&mut bench, Patience::Wait);
        assert_eq!(
            output,
            RedisAcquire::Failed {
                failure: StoreFailure::Timeout,
                left: Leftover::Nothing
            }
        );
        assert!(bench.tags.contains(&CLEAN_UP));
        assert_eq!(bench.value("lock"), None, "the key it may have set is gone");
        // Failures that applied nothing leave nothing and need no clean-up.
        let mut bench = Bench::new();
        for _ in 0..4 {
            bench.fates.push_back(Fate::LostBefore(StoreFailure::Unavailable));
        }
        let output = acquire(&mut bench, Patience::Wait);
        assert_eq!(
            output,
            RedisAcquire::Failed {
                failure: StoreFailure::Unavailable,
                left: Leftover::Nothing
            }
        );
        assert!(!bench.tags.contains(&CLEAN_UP));
    }

    #[test]
    fn extend_renews_our_key_and_reports_a_lost_one() {
        let mut bench = Bench::new();
        let held = lease(acquire(&mut bench, Patience::Wait));
        bench.now_us += 5_000_000;
        let sent = bench.now_us;
        let extended = bench.run(&config(), &mut SetNxExtend::new(held.clone()));
        assert_eq!(
            extended,
            Extended::Extended {
                lease: RedisLease {
                    set_sent_at_us: sent,
                    ..held.clone()
                }
            }
        );
        // Paused past the TTL: another client took the key; the extension must not take it back.
        bench.now_us += 11_000_000;
        bench.other_takes("lock", 10_000);
        assert_eq!(bench.run(&config(), &mut SetNxExtend::new(held)), Extended::Lost);
        assert!(bench.value("lock").is_some_and(|v| v.contains("other")));
    }

    #[test]
    fn release_deletes_only_our_key_and_says_when_it_cannot_tell() {
        let mut bench = Bench::new();
        let held = lease(acquire(&mut bench, Patience::Wait));
        assert_eq!(
            bench.run(&config(), &mut SetNxRelease::new(held.clone())),
            RedisReleased::Released
        );
        assert_eq!(bench.value("lock"), None);
        // Expired and taken by another: the release must leave the other's key alone.
        let held = lease(acquire(&mut bench, Patience::Wait));
        bench.now_us += 11_000_000;
        bench.other_takes("lock", 10_000);
        assert_eq!(
            bench.run(&config(), &mut SetNxRelease::new(held)),
            RedisReleased::WasNotOurs
        );
        assert!(bench.value("lock").is_some_and(|v| v.contains("other")));
        // The delete applied and its reply was lost: the retry finds nothing, and says so
        // rather than claiming the lock had been lost.
        let mut bench = Bench::new();
        let held = lease(acquire(&mut bench, Patience::Wait));
        bench.fates.push_back(Fate::LostAfter(StoreFailure::Timeout));
        assert_eq!(
            bench.run(&config(), &mut SetNxRelease::new(held)),
            RedisReleased::GoneEitherWay
        );
    }
}
