//! Redisson's `RLock` (seed 001): a reentrant lock in a Redis hash, kept alive by a watchdog.
//!
//! The lock is a hash at `key` with one field per owner (client id and thread), counting how
//! many times the owner holds it (reentrancy). Three scripts do all the work, atomically on the
//! server ([`RedisCommand::RedissonAcquire`], `RedissonRenew`, `RedissonRelease`):
//!
//! - **acquire** (D1): if the key is absent or the hash has our field, increment our count and
//!   set the key's expiry to the lease, answer nil; otherwise answer the key's remaining TTL.
//! - **wait** (D2): a waiter does not poll. It subscribes to the lock's channel and sleeps until
//!   an unlock message arrives or the holder's TTL runs out, whichever comes first, then tries
//!   again (`tryLock(waitTime, ...)` gives up when `waitTime` is spent). A lost or late message
//!   costs the waiter the rest of the holder's TTL, not safety.
//! - **watchdog** (D3): with no lease time given (`lock()`, `tryLock(waitTime)`), the lease is
//!   `lockWatchdogTimeout` (30 s) and a timer renews it every third of that (10 s) while held.
//!   With a lease time given (`lock(leaseTime)`, `tryLock(waitTime, leaseTime)`) there is no
//!   watchdog: the lock simply expires.
//! - **release** (D4): if our field is absent, answer nil (Redisson throws
//!   `IllegalMonitorStateException`: the lock was lost); decrement; still above 0, reset the
//!   expiry and answer 0 (still held, reentrant); at 0 delete the key, publish the unlock
//!   message, answer 1.
//!
//! Ours, as for `SET NX` ([`super::set_nx`]): a failed acquire script may have run with its reply
//! lost. Running it again would count a *second* hold (the script sees our field and
//! increments), and the one release the caller makes would leave the count at 1: the lock
//! stays taken by nobody until its lease runs out (C-release; Redisson later added per-request
//! records for this). After an uncertain attempt the machine reads our count (`HGET`) instead.
//!
//! The known bug switch [`RedissonMutants::watchdog_stops_after_a_failed_renewal`] is
//! redisson/redisson#775: a renewal that fails (a timeout during a failover) is not rescheduled, so the
//! watchdog stops, the lease runs out 30 s later while the holder still believes it holds the
//! lock, and nobody tells it. The fixed watchdog tries again at the next interval; it reports
//! the lock lost when the server says our field is gone, and expired when renewals have failed
//! for a whole lease since the last one that got through.
//!
//! The fair lock ([`super::redisson_fair`], F1-F3) and the fenced lock
//! ([`super::redisson_fenced`], G1) run these machines over scripts of their own.

use super::super::retry::Uncertainty;
use super::super::{Action, Input, Machine, RetryPolicy, SleepKind, Source, Step, StepTag};
use crate::algo::server_holder::ServerHolder;
use crate::store::redis_keyspace::{fenced_token_key, RedisCommand, RedisReply};
use crate::store::redis_keyspace::{RedisKeyspace, RedisValue};
use crate::store::StoreFailure;

const D1_ACQUIRE: StepTag = StepTag::new(
    Source::Redisson,
    1,
    "acquire script: take or re-enter the hash lock with the lease",
);
const D1_ACQUIRED: StepTag = StepTag::new(Source::Redisson, 1, "nil: the lock is ours");
const D2_WAIT: StepTag = StepTag::new(
    Source::Redisson,
    2,
    "taken: wait for the unlock message or the holder's TTL, whichever comes first",
);
const D2_GIVE_UP: StepTag = StepTag::new(Source::Redisson, 2, "taken and the wait time is spent: give up");
const D3_WAIT: StepTag = StepTag::new(Source::Redisson, 3, "watchdog: wait a third of the lease");
const D3_RENEW: StepTag = StepTag::new(
    Source::Redisson,
    3,
    "watchdog: renew script, reset the expiry if our field is there",
);
const D3_LOST: StepTag = StepTag::new(Source::Redisson, 3, "watchdog: our field is gone, the lock is lost");
const D3_EXPIRED: StepTag = StepTag::new(
    Source::Ours,
    0,
    "watchdog: renewals failed for a whole lease since the last good one: the lock has expired",
);
const D3_STOPPED: StepTag = StepTag::new(Source::Redisson, 3, "watchdog: stopped by the release");
const MUTANT_775: StepTag = StepTag::new(
    Source::Redisson,
    3,
    "MUTANT 775: a renewal failed, the watchdog is not rescheduled",
);
const D4_RELEASE: StepTag = StepTag::new(
    Source::Redisson,
    4,
    "release script: count down our hold, delete and publish at 0",
);
const D4_DONE: StepTag = StepTag::new(Source::Redisson, 4, "released, still held (reentrant), or not ours");
const CHECK_OURS: StepTag = StepTag::new(
    Source::Ours,
    0,
    "after an acquire that may have run: read our hold count instead of running it again",
);
const G1_ACQUIRE: StepTag = StepTag::new(
    Source::Redisson,
    8,
    "fenced acquire script: count the token up, take or re-enter the hash lock with the lease",
);
const G1_ACQUIRED: StepTag = StepTag::new(Source::Redisson, 8, "[-1, token]: the lock is ours, with its token");
const G1_UNCERTAIN: StepTag = StepTag::new(
    Source::Ours,
    0,
    "fenced: an acquire that may have run: give up rather than count a second hold or guess the token",
);
const RETRY_AFTER_FAILURE: StepTag = StepTag::new(Source::Ours, 0, "the request failed: wait, then try again");
const FAILED: StepTag = StepTag::new(Source::Ours, 0, "the store kept failing: give up");
const F1_ACQUIRE: StepTag = StepTag::new(
    Source::Redisson,
    5,
    "fair acquire script: drop stale waiters; take the lock if free and first (or re-enter), else queue",
);
/// The fair lock's give-up: the waiter's wait ran out and it leaves the queue. Public so that a
/// harness can tell, from the step alone, that the waiter no longer waits (F-order, F-drop).
pub const F2_GIVE_UP: StepTag = StepTag::new(
    Source::Redisson,
    6,
    "fair: the wait is over without the lock, leave the queue (acquireFailed script)",
);
const F3_RELEASE: StepTag = StepTag::new(
    Source::Redisson,
    7,
    "fair release script: drop stale waiters, count down our hold, tell the first waiter at 0",
);

/// Known bugs of the real client, off by default, so the checks can show they catch them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedissonMutants {
    /// redisson/redisson#775: one failed renewal stops the watchdog for good.
    pub watchdog_stops_after_a_failed_renewal: bool,
    /// A planted unfair variant (not a known Redisson bug): the fair lock's acquire runs the
    /// RLock's script, so whoever asks when the lock is free takes it, waiters or not.
    pub fair_acquire_ignores_the_queue: bool,
}

/// What the Redisson machines read.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedissonConfig {
    /// `lockWatchdogTimeout`: the lease when no lease time is given (Redisson: 30 s).
    pub watchdog_timeout_ms: u64,
    /// A lease time given to `lock(leaseTime)` / `tryLock(waitTime, leaseTime)`: no watchdog.
    pub lease_ms: Option<u64>,
    /// `tryLock(waitTime, ...)`: give up after this long; `None`: `lock()`, wait for ever.
    pub wait_ms: Option<u64>,
    pub retry: RetryPolicy,
    pub mutants: RedissonMutants,
    /// The fair lock's `threadWaitTime`: how long a queued waiter may go without asking again
    /// before the others drop it from the queue (Redisson: 5000 ms; the RLock ignores it).
    pub fair_thread_wait_ms: u64,
}

impl Default for RedissonConfig {
    fn default() -> Self {
        RedissonConfig {
            watchdog_timeout_ms: 30_000,
            lease_ms: None,
            wait_ms: None,
            retry: RetryPolicy::default(),
            mutants: RedissonMutants::default(),
            fair_thread_wait_ms: 5000,
        }
    }
}

impl AsRef<RetryPolicy> for RedissonConfig {
    fn as_ref(&self) -> &RetryPolicy {
        &self.retry
    }
}

impl RedissonConfig {
    /// The lease the acquire and release scripts set.
    pub fn lease_ms(&self) -> u64 {
        self.lease_ms.unwrap_or(self.watchdog_timeout_ms)
    }

    /// Whether a watchdog keeps the lock alive (no lease time given).
    pub fn watchdog(&self) -> bool {
        self.lease_ms.is_none()
    }

    /// The watchdog's period: a third of the lease.
    pub fn renew_every_ms(&self) -> u64 {
        (self.watchdog_timeout_ms / 3).max(1)
    }
}

/// The unlock channel of a lock key.
pub fn channel(key: &str) -> String {
    format!("redisson_lock__channel:{{{key}}}")
}

/// What a Redisson holder owns.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedissonLease {
    pub key: String,
    /// Our field in the hash: client id and thread.
    pub owner: String,
    /// The client time the request that last set the expiry was sent.
    pub set_sent_at_us: u64,
    /// The fenced lock's token ([`super::redisson_fenced`]): the counter its acquire script
    /// counted up, as [`fence_text`] spells it; none for the RLock and the fair lock.
    pub fence: Option<String>,
}

/// A fenced lock's token as a resource compares it, byte by byte: 20 digits, zero-padded, so
/// that a later (higher) counter sorts later. A negative counter, which only a hand-set key can
/// give, sorts before every other.
pub fn fence_text(token: i64) -> String {
    format!("{token:020}")
}

/// Ours: the margin a holder keeps below the lease for the server's clock running faster than
/// its own, parts per million (Redisson itself trusts the watchdog and computes no validity).
pub const DRIFT_PPM: u64 = 10_000;

impl RedissonLease {
    /// The client time until which the lease is certainly ours if the server's clock keeps
    /// pace: `sent + lease - 1%` ([`DRIFT_PPM`]).
    pub fn valid_until_us(&self, config: &RedissonConfig) -> u64 {
        let lease_us = config.lease_ms().saturating_mul(1000);
        let drift_us = lease_us.saturating_mul(DRIFT_PPM) / 1_000_000;
        self.set_sent_at_us.saturating_add(lease_us).saturating_sub(drift_us)
    }
}

/// How an acquisition ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RedissonAcquired {
    Acquired {
        lease: RedissonLease,
    },
    /// `tryLock`'s wait time ran out.
    TimedOut,
    /// `tryLock(0)` (the family driver's `try_lock`): taken, and no waiting asked for.
    NotAcquired,
    Failed(StoreFailure),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum AcquireState {
    Idle,
    Running {
        sent_at_us: u64,
    },
    CheckingOurs,
    Waiting,
    /// The fair lock's give-up script is out; then finish with this.
    GivingUp(Box<RedissonAcquired>),
    Finished,
}

/// D1–D2: acquire (or re-enter) the lock; F1–F2 for the fair lock
/// ([`super::redisson_fair`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedissonAcquire {
    key: String,
    owner: String,
    /// `tryLock(0)`: one answer decides (a taken lock is `NotAcquired`, not a wait).
    once: bool,
    /// The fair lock's scripts: a queue, and leaving it on giving up.
    fair: bool,
    /// The fenced lock's acquire script: a token counted up with each hold.
    fenced: bool,
    state: AcquireState,
    deadline_us: Option<u64>,
    /// Failed requests that may have applied, and failures in a row.
    uncertainty: Uncertainty,
}

impl RedissonAcquire {
    pub fn new(key: impl Into<String>, owner: impl Into<String>) -> Self {
        RedissonAcquire {
            key: key.into(),
            owner: owner.into(),
            once: false,
            fair: false,
            fenced: false,
            state: AcquireState::Idle,
            deadline_us: None,
            uncertainty: Uncertainty::default(),
        }
    }

    /// `tryLock(0)`: take the lock if it is free now, else answer `NotAcquired` (after an
    /// uncertain attempt it still reads its own hold count first).
    pub fn once(key: impl Into<String>, owner: impl Into<String>) -> Self {
        RedissonAcquire {
            once: true,
            ..Self::new(key, owner)
        }
    }

    /// The fair lock's acquire (F1–F2): the same waits, over the fair scripts.
    pub fn fair(key: impl Into<String>, owner: impl Into<String>, once: bool) -> Self {
        RedissonAcquire {
            once,
            fair: true,
            ..Self::new(key, owner)
        }
    }

    /// The fenced lock's acquire ([`super::redisson_fenced`]): the RLock's waits, over the
    /// fenced script.
    pub fn fenced(key: impl Into<String>, owner: impl Into<String>, once: bool) -> Self {
        RedissonAcquire {
            once,
            fenced: true,
            ..Self::new(key, owner)
        }
    }

    pub fn is_finished(&self) -> bool {
        self.state == AcquireState::Finished
    }

    /// End without the lock: the fair lock leaves its queue first (Redisson's acquireFailed),
    /// or its place would make the waiters behind it wait a slot for nobody.
    fn give_up(&mut self, config: &RedissonConfig, output: RedissonAcquired) -> Step<RedissonAcquired, RedisCommand> {
        if !self.fair {
            return self.finish(D2_GIVE_UP, output);
        }
        self.state = AcquireState::GivingUp(Box::new(output));
        Step::store(
            F2_GIVE_UP,
            RedisCommand::RedissonFairGiveUp {
                key: self.key.clone(),
                owner: self.owner.clone(),
                thread_wait_ms: config.fair_thread_wait_ms,
            },
        )
    }

    fn run_script(&mut self, config: &RedissonConfig, now_us: u64) -> Step<RedissonAcquired, RedisCommand> {
        self.state = AcquireState::Running { sent_at_us: now_us };
        if self.fair && !config.mutants.fair_acquire_ignores_the_queue {
            return Step::store(
                F1_ACQUIRE,
                RedisCommand::RedissonFairAcquire {
                    key: self.key.clone(),
                    owner: self.owner.clone(),
                    lease_ms: config.lease_ms(),
                    thread_wait_ms: config.fair_thread_wait_ms,
                    client_now_ms: now_us / 1000,
                },
            );
        }
        if self.fenced {
            return Step::store(
                G1_ACQUIRE,
                RedisCommand::RedissonFencedAcquire {
                    key: self.key.clone(),
                    token_key: fenced_token_key(&self.key),
                    owner: self.owner.clone(),
                    lease_ms: config.lease_ms(),
                },
            );
        }
        Step::store(
            D1_ACQUIRE,
            RedisCommand::RedissonAcquire {
                key: self.key.clone(),
                owner: self.owner.clone(),
                lease_ms: config.lease_ms(),
            },
        )
    }

    fn finish(&mut self, tag: StepTag, output: RedissonAcquired) -> Step<RedissonAcquired, RedisCommand> {
        self.state = AcquireState::Finished;
        Step::done(tag, output)
    }

    fn acquired(
        &mut self,
        tag: StepTag,
        set_sent_at_us: u64,
        fence: Option<String>,
    ) -> Step<RedissonAcquired, RedisCommand> {
        debug_assert_eq!(fence.is_some(), self.fenced, "a token exactly when fenced");
        let lease = RedissonLease {
            key: self.key.clone(),
            owner: self.owner.clone(),
            set_sent_at_us,
            fence,
        };
        self.finish(tag, RedissonAcquired::Acquired { lease })
    }

    fn failed(
        &mut self,
        config: &RedissonConfig,
        failure: StoreFailure,
        sent: Option<u64>,
    ) -> Step<RedissonAcquired, RedisCommand> {
        if self.uncertainty.failed(&failure, sent, &config.retry) {
            return self.finish(FAILED, RedissonAcquired::Failed(failure));
        }
        if self.fenced && self.uncertainty.may_have_applied() {
            return self.finish(G1_UNCERTAIN, RedissonAcquired::Failed(failure));
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

    /// Try again: read our count first if an attempt may have run.
    fn again(&mut self, config: &RedissonConfig, now_us: u64) -> Step<RedissonAcquired, RedisCommand> {
        if self.uncertainty.may_have_applied() {
            self.state = AcquireState::CheckingOurs;
            return Step::store(
                CHECK_OURS,
                RedisCommand::HGet {
                    key: self.key.clone(),
                    field: self.owner.clone(),
                },
            );
        }
        self.run_script(config, now_us)
    }

    fn advance(
        &mut self,
        config: &RedissonConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedissonAcquired, RedisCommand> {
        use AcquireState as S;
        match (std::mem::replace(&mut self.state, S::Finished), input) {
            (S::Idle, Input::Start) => {
                self.deadline_us = config.wait_ms.map(|ms| now_us.saturating_add(ms.saturating_mul(1000)));
                self.run_script(config, now_us)
            }
            (S::Running { sent_at_us }, Input::Reply(RedisReply::Nil)) if !self.fenced => {
                self.acquired(D1_ACQUIRED, sent_at_us, None)
            }
            // The fenced script's `[-1, token]`: ours, with its token (Redisson reads a first
            // element of -1 as acquired, whatever the second).
            (S::Running { sent_at_us }, Input::Reply(RedisReply::Pair(-1, token))) if self.fenced => {
                self.acquired(G1_ACQUIRED, sent_at_us, Some(fence_text(token)))
            }
            // `[PTTL, -1]`: taken, as the RLock's PTTL.
            (S::Running { sent_at_us }, Input::Reply(RedisReply::Pair(pttl_ms, _))) if self.fenced => {
                self.state = S::Running { sent_at_us };
                self.advance(config, Input::Reply(RedisReply::Integer(pttl_ms)), now_us)
            }
            (S::Running { .. }, Input::Reply(RedisReply::Integer(_))) if self.once => {
                self.uncertainty.answered();
                self.give_up(config, RedissonAcquired::NotAcquired)
            }
            (S::Running { .. }, Input::Reply(RedisReply::Integer(pttl_ms))) => {
                self.uncertainty.answered();
                let remaining_us = self.deadline_us.map(|deadline| deadline.saturating_sub(now_us));
                if remaining_us == Some(0) {
                    return self.give_up(config, RedissonAcquired::TimedOut);
                }
                // Sleep until the holder's key expires (at least 1 ms), or the wait time ends;
                // the unlock message cuts it short.
                let until_expiry_ms = u64::try_from(pttl_ms).unwrap_or(1).max(1);
                let ms = remaining_us.map_or(until_expiry_ms, |us| until_expiry_ms.min(us.div_ceil(1000)));
                self.state = S::Waiting;
                Step::new(
                    D2_WAIT,
                    Action::Sleep {
                        ms,
                        kind: SleepKind::UntilNotified,
                    },
                )
            }
            (S::CheckingOurs, Input::Reply(RedisReply::Integer(count))) if count > 0 => {
                debug_assert!(
                    self.uncertainty.may_have_applied(),
                    "checked only after an uncertain attempt"
                );
                let since = self.uncertainty.lease_start_us(now_us);
                self.acquired(D1_ACQUIRED, since, None)
            }
            (S::CheckingOurs, Input::Reply(RedisReply::Nil)) => {
                // Our attempt did not run (or its hold expired): nothing of ours is there.
                self.uncertainty.settled();
                self.run_script(config, now_us)
            }
            (S::Running { sent_at_us }, Input::Failed(failure)) => self.failed(config, failure, Some(sent_at_us)),
            (S::CheckingOurs, Input::Failed(failure)) => self.failed(config, failure, None),
            (S::Waiting, Input::Woke) => {
                if self.deadline_us.is_some_and(|deadline| now_us >= deadline) && !self.uncertainty.may_have_applied() {
                    return self.give_up(config, RedissonAcquired::TimedOut);
                }
                self.again(config, now_us)
            }
            // Left the queue, or not: either way the wait is over (a place left behind is
            // dropped once its deadline passes).
            (S::GivingUp(output), Input::Reply(_) | Input::Failed(_)) => self.finish(D2_GIVE_UP, *output),
            (S::Running { .. } | S::CheckingOurs, Input::Reply(reply)) => self.finish(
                FAILED,
                RedissonAcquired::Failed(StoreFailure::Other(format!("unexpected reply {reply:?}"))),
            ),
            (state, input) => panic!("RedissonAcquire: {input:?} in state {state:?}"),
        }
    }
}

impl Machine for RedissonAcquire {
    type Config = RedissonConfig;
    type Output = RedissonAcquired;
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn resume(
        &mut self,
        config: &RedissonConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedissonAcquired, RedisCommand> {
        super::super::resume_checked(
            "RedissonAcquire",
            self,
            RedissonAcquire::is_finished,
            RedissonAcquire::advance,
            (config, input, now_us),
        )
    }
}

/// How the watchdog ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WatchdogEnd {
    /// The release stopped it.
    Stopped,
    /// The server said our field is gone: the lock is lost, and the holder must be told.
    Lost,
    /// MUTANT 775: a renewal failed and the watchdog quietly ended; the holder is not told.
    QuietlyEnded,
    /// Renewals kept failing until a whole lease had passed since the last one that got
    /// through: the key has expired (on a server clock at the client's rate), and the holder
    /// must be told (C-lost), not left with a watchdog retrying for ever.
    Expired,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum WatchdogState {
    Idle,
    Sleeping,
    Renewing { sent_at_us: u64 },
    Finished,
}

/// D3: renew every third of the lease while held.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Watchdog {
    lease: RedissonLease,
    state: WatchdogState,
}

impl Watchdog {
    pub fn new(lease: RedissonLease) -> Self {
        Watchdog {
            lease,
            state: WatchdogState::Idle,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.state == WatchdogState::Finished
    }

    /// The lease as the last successful renewal left it.
    pub fn lease(&self) -> &RedissonLease {
        &self.lease
    }

    fn sleep(&mut self, config: &RedissonConfig) -> Step<WatchdogEnd, RedisCommand> {
        self.state = WatchdogState::Sleeping;
        Step::new(
            D3_WAIT,
            Action::Sleep {
                ms: config.renew_every_ms(),
                kind: SleepKind::Renewal,
            },
        )
    }

    fn finish(&mut self, tag: StepTag, end: WatchdogEnd) -> Step<WatchdogEnd, RedisCommand> {
        self.state = WatchdogState::Finished;
        Step::done(tag, end)
    }

    fn advance(
        &mut self,
        config: &RedissonConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<WatchdogEnd, RedisCommand> {
        use WatchdogState as S;
        match (std::mem::replace(&mut self.state, S::Finished), input) {
            (S::Idle, Input::Start) => self.sleep(config),
            (S::Sleeping, Input::StopRequested) => self.finish(D3_STOPPED, WatchdogEnd::Stopped),
            (S::Sleeping, Input::Woke) => {
                self.state = S::Renewing { sent_at_us: now_us };
                Step::store(
                    D3_RENEW,
                    RedisCommand::RedissonRenew {
                        key: self.lease.key.clone(),
                        owner: self.lease.owner.clone(),
                        lease_ms: config.lease_ms(),
                    },
                )
            }
            (S::Renewing { sent_at_us }, Input::Reply(RedisReply::Integer(1))) => {
                self.lease.set_sent_at_us = sent_at_us;
                self.sleep(config)
            }
            (S::Renewing { .. }, Input::Reply(_)) => self.finish(D3_LOST, WatchdogEnd::Lost),
            (S::Renewing { .. }, Input::Failed(_)) if config.mutants.watchdog_stops_after_a_failed_renewal => {
                self.finish(MUTANT_775, WatchdogEnd::QuietlyEnded)
            }
            // Fixed: the lease may still be good; try again at the next interval, until a whole
            // lease has passed since the last renewal that got through.
            (S::Renewing { .. }, Input::Failed(_)) => {
                let expires_us = self
                    .lease
                    .set_sent_at_us
                    .saturating_add(config.lease_ms().saturating_mul(1000));
                if now_us >= expires_us {
                    self.finish(D3_EXPIRED, WatchdogEnd::Expired)
                } else {
                    self.sleep(config)
                }
            }
            (state, input) => panic!("Watchdog: {input:?} in state {state:?}"),
        }
    }
}

impl Machine for Watchdog {
    type Config = RedissonConfig;
    type Output = WatchdogEnd;
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn resume(
        &mut self,
        config: &RedissonConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<WatchdogEnd, RedisCommand> {
        super::super::resume_checked(
            "Watchdog",
            self,
            Watchdog::is_finished,
            Watchdog::advance,
            (config, input, now_us),
        )
    }
}

/// How a one-off renewal ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Renewed {
    /// Our field is there: the expiry is reset, counted from the renewal's send.
    Renewed {
        lease: RedissonLease,
    },
    /// Our field is gone: the lock is lost.
    Lost,
    Failed(StoreFailure),
}

/// D3 once, on the holder's request (what the watchdog does each period; `RLock.expire` in
/// spirit): reset the expiry if our field is there.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RenewOnce {
    lease: RedissonLease,
    sent_at_us: Option<u64>,
    finished: bool,
}

impl RenewOnce {
    pub fn new(lease: RedissonLease) -> Self {
        RenewOnce {
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
        config: &RedissonConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<Renewed, RedisCommand> {
        let output = match (self.sent_at_us, input) {
            (None, Input::Start) => {
                self.sent_at_us = Some(now_us);
                return Step::store(
                    D3_RENEW,
                    RedisCommand::RedissonRenew {
                        key: self.lease.key.clone(),
                        owner: self.lease.owner.clone(),
                        lease_ms: config.lease_ms(),
                    },
                );
            }
            (Some(sent_at_us), Input::Reply(RedisReply::Integer(1))) => Renewed::Renewed {
                lease: RedissonLease {
                    set_sent_at_us: sent_at_us,
                    ..self.lease.clone()
                },
            },
            (Some(_), Input::Reply(_)) => Renewed::Lost,
            (Some(_), Input::Failed(failure)) => Renewed::Failed(failure),
            (sent, input) => panic!("RenewOnce: {input:?} with the request sent at {sent:?}"),
        };
        self.finished = true;
        let tag = if matches!(output, Renewed::Lost) {
            D3_LOST
        } else {
            D3_RENEW
        };
        Step::done(tag, output)
    }
}

impl Machine for RenewOnce {
    type Config = RedissonConfig;
    type Output = Renewed;
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn resume(
        &mut self,
        config: &RedissonConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<Renewed, RedisCommand> {
        super::super::resume_checked(
            "RenewOnce",
            self,
            RenewOnce::is_finished,
            RenewOnce::advance,
            (config, input, now_us),
        )
    }
}

/// How a release ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RedissonReleased {
    /// Count 0: the key is deleted and the unlock message published.
    Released,
    /// Count still above 0: re-entered holds remain.
    StillHeld,
    /// Our field was not there: the lock had been lost (`IllegalMonitorStateException`).
    NotOurs,
    /// The fair release's 1: the lock is free afterwards, freed by us or already gone (its
    /// script answers the same to both).
    FreeAfterwards,
    Failed(StoreFailure),
}

/// D4: count down our hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedissonRelease {
    lease: RedissonLease,
    fair: bool,
    sent: bool,
    finished: bool,
}

impl RedissonRelease {
    pub fn new(lease: RedissonLease) -> Self {
        RedissonRelease {
            lease,
            fair: false,
            sent: false,
            finished: false,
        }
    }

    /// The fair lock's release (F3).
    pub fn fair(lease: RedissonLease) -> Self {
        RedissonRelease {
            fair: true,
            ..Self::new(lease)
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn advance(
        &mut self,
        config: &RedissonConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedissonReleased, RedisCommand> {
        let output = match (self.sent, input) {
            (false, Input::Start) if self.fair => {
                self.sent = true;
                return Step::store(
                    F3_RELEASE,
                    RedisCommand::RedissonFairRelease {
                        key: self.lease.key.clone(),
                        owner: self.lease.owner.clone(),
                        lease_ms: config.lease_ms(),
                        channel: channel(&self.lease.key),
                        client_now_ms: now_us / 1000,
                    },
                );
            }
            (true, Input::Reply(RedisReply::Integer(1))) if self.fair => RedissonReleased::FreeAfterwards,
            (false, Input::Start) => {
                self.sent = true;
                return Step::store(
                    D4_RELEASE,
                    RedisCommand::RedissonRelease {
                        key: self.lease.key.clone(),
                        owner: self.lease.owner.clone(),
                        lease_ms: config.lease_ms(),
                        channel: channel(&self.lease.key),
                    },
                );
            }
            (true, Input::Reply(RedisReply::Integer(1))) => RedissonReleased::Released,
            (true, Input::Reply(RedisReply::Integer(0))) => RedissonReleased::StillHeld,
            (true, Input::Reply(RedisReply::Nil)) => RedissonReleased::NotOurs,
            (true, Input::Reply(reply)) => {
                RedissonReleased::Failed(StoreFailure::Other(format!("unexpected reply {reply:?}")))
            }
            // Not retried: a release script that ran and lost its reply would count down twice.
            (true, Input::Failed(failure)) => RedissonReleased::Failed(failure),
            (sent, input) => panic!("RedissonRelease: {input:?} (sent {sent})"),
        };
        self.finished = true;
        Step::done(D4_DONE, output)
    }
}

impl Machine for RedissonRelease {
    type Config = RedissonConfig;
    type Output = RedissonReleased;
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn resume(
        &mut self,
        config: &RedissonConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedissonReleased, RedisCommand> {
        super::super::resume_checked(
            "RedissonRelease",
            self,
            RedissonRelease::is_finished,
            RedissonRelease::advance,
            (config, input, now_us),
        )
    }
}

/// Who the server says holds `key` (T1-server): the owner whose hold count in the live hash is
/// above 0 (the scripts keep one owner; the fair lock's key is the same hash).
pub fn holder_on_server(keyspace: &RedisKeyspace, key: &str, server_now_ms: u64) -> ServerHolder {
    let Some(entry) = keyspace.live_entry(key, server_now_ms) else {
        return ServerHolder::Nobody;
    };
    // Live through its expiry's millisecond, gone after it.
    let gone_at_us = entry.expires_at_ms.map(|ms| ms.saturating_mul(1000).saturating_add(1));
    match &entry.value {
        RedisValue::Hash(owners) => owners
            .iter()
            .find(|(_, count)| **count > 0)
            .map_or(ServerHolder::Nobody, |(owner, _)| {
                ServerHolder::token_until(owner, gone_at_us)
            }),
        _ => ServerHolder::Nobody,
    }
}

#[cfg(test)]
mod tests;
