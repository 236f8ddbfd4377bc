//! `SETNX key` then `EXPIRE key ttl`, released by `DEL key`: the lock seed 003 starts from,
//! before it shows why each step is not enough.
//!
//! Before Redis 2.6.12 `SET` took no `NX` and `PX` together, and the recipe every early blog
//! gave is two commands: `SETNX` takes the key if it is free (1) or says it is taken (0); then
//! `EXPIRE` gives it a time to live, so that a holder that dies does not keep it for ever; to
//! release, `DEL`. The seed names what this costs, and the machines here do each step exactly as
//! the recipe says, so the model and the simulator can show it:
//!
//! - **Two commands, not one.** Between the `SETNX` and the `EXPIRE` the key has no TTL. If the
//!   holder never sends the `EXPIRE` (it dies, or gives up after its requests fail) or its
//!   `SETNX` applied and the reply was lost (a retry then reads 0 and waits as for anybody
//!   else's key), the key stays for ever and nobody acquires again (T2).
//! - **`DEL` deletes whoever's key is there.** A holder paused past its TTL releases the next
//!   holder's lock; a third client takes it while the second still believes (T1-belief). The
//!   machine says so: its release reports that it acted on whoever held the key.
//! - **`EXPIRE` renews whoever's key is there** (the extension): after a pause past the TTL the
//!   old holder extends the new holder's key and believes it holds the lock again.
//!
//! The value written is the holder's token, which the recipe never reads (the seed writes `1`):
//! it only lets a reader of the server's keys see who set one. [`redis-set-nx`] is the
//! recipe's answer to all three: one `SET NX PX`, a release and an extension that check the
//! value first.
//!
//! [`redis-set-nx`]: super::set_nx

use super::set_nx::{Extended, Patience, RedisAcquire};
use super::{RedisLease, RedisLockConfig};
use crate::algo::family::{
    Acquisition, Extension, FamilyLock, LockConfigError, NoRenewal, Release, RenewalEnd, SetNxLock,
};
use crate::algo::retry::Uncertainty;
use crate::algo::server_holder::{ServerHolder, ServerNow};
use crate::algo::{Action, Input, Leftover, Machine, SleepKind, Source, Step, StepTag};
use crate::store::redis_keyspace::{RedisCommand, RedisReply};
use crate::store::StoreFailure;

const SETNX: StepTag = StepTag::new(Source::Redis, 0, "seed 003: SETNX key (no expiry yet)");
const TAKEN_WAIT: StepTag = StepTag::new(
    Source::Redis,
    0,
    "seed 003: SETNX said 0, the key is taken: wait, then try again",
);
const TAKEN_GIVE_UP: StepTag = StepTag::new(Source::Redis, 0, "seed 003: SETNX said 0: give up (try_lock)");
const DEADLINE: StepTag = StepTag::new(
    Source::Redis,
    0,
    "seed 003: the key is taken and the deadline passed: give up",
);
const EXPIRE: StepTag = StepTag::new(Source::Redis, 0, "seed 003: SETNX said 1: EXPIRE key ttl");
const EXPIRED_SET: StepTag = StepTag::new(Source::Redis, 0, "seed 003: EXPIRE answered: the lock is ours");
const RETRY: StepTag = StepTag::new(Source::Ours, 0, "the request failed: wait, then send it again");
const FAILED: StepTag = StepTag::new(
    Source::Ours,
    0,
    "the store kept failing: give up (a key set without its EXPIRE stays for ever)",
);
const EXTEND: StepTag = StepTag::new(
    Source::Redis,
    0,
    "seed 003: extend: EXPIRE key ttl (whoever's key it is)",
);
const EXTENDED: StepTag = StepTag::new(Source::Redis, 0, "seed 003: EXPIRE said 1: extended");
const EXTEND_LOST: StepTag = StepTag::new(Source::Redis, 0, "seed 003: EXPIRE said 0: no key, the lease is lost");
const DEL: StepTag = StepTag::new(Source::Redis, 0, "seed 003: release: DEL key (whoever's key it is)");
const DELETED: StepTag = StepTag::new(
    Source::Redis,
    0,
    "seed 003: DEL said 1: a key was deleted, ours or the next holder's",
);
const NO_KEY: StepTag = StepTag::new(Source::Redis, 0, "seed 003: DEL said 0: no key, the lease had run out");

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum AcquireState {
    Idle,
    /// `SETNX` sent at this client time.
    Setting {
        sent_at_us: u64,
    },
    /// The key is ours; `EXPIRE` sent at this client time.
    Expiring {
        sent_at_us: u64,
    },
    /// Asleep; on waking, `SETNX` again.
    WaitingToSet,
    /// Asleep after a failed `EXPIRE`; on waking, send it again.
    WaitingToExpire,
    Finished,
}

/// `SETNX` until it says 1 (or once, or until the deadline), then `EXPIRE`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SetNxThenExpire {
    key: String,
    token: String,
    patience: Patience,
    state: AcquireState,
    deadline_us: Option<u64>,
    /// Failed requests in a row, and whether a failed `SETNX` may have set the key.
    uncertainty: Uncertainty,
    /// `SETNX` said 1: the key is ours and has no expiry until an `EXPIRE` applies.
    set: bool,
    /// The send of the first `EXPIRE` that failed in a way that may have applied: the key's
    /// expiry may count from there, so the lease does (ours: the recipe sends it once).
    expire_uncertain_since_us: Option<u64>,
}

impl SetNxThenExpire {
    pub fn new(key: impl Into<String>, token: impl Into<String>, patience: Patience) -> Self {
        SetNxThenExpire {
            key: key.into(),
            token: token.into(),
            patience,
            state: AcquireState::Idle,
            deadline_us: None,
            uncertainty: Uncertainty::default(),
            set: false,
            expire_uncertain_since_us: None,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.state == AcquireState::Finished
    }

    fn setnx(&mut self, now_us: u64) -> Step<RedisAcquire, RedisCommand> {
        self.state = AcquireState::Setting { sent_at_us: now_us };
        Step::new(
            SETNX,
            Action::Store(RedisCommand::Set {
                key: self.key.clone(),
                value: self.token.clone(),
                only_if_absent: true,
                ttl_ms: None,
            }),
        )
    }

    fn expire(&mut self, config: &RedisLockConfig, now_us: u64) -> Step<RedisAcquire, RedisCommand> {
        debug_assert!(self.set, "EXPIRE only after SETNX said 1");
        self.state = AcquireState::Expiring { sent_at_us: now_us };
        Step::new(
            EXPIRE,
            Action::Store(RedisCommand::PExpire {
                key: self.key.clone(),
                ttl_ms: config.ttl_ms,
            }),
        )
    }

    fn finish(&mut self, tag: StepTag, output: RedisAcquire) -> Step<RedisAcquire, RedisCommand> {
        self.state = AcquireState::Finished;
        Step::done(tag, output)
    }

    fn past_deadline(&self, now_us: u64) -> bool {
        self.patience == Patience::Wait && self.deadline_us.is_some_and(|deadline| now_us >= deadline)
    }

    /// `SETNX` said 0: the recipe reads that as someone else's key, whatever an earlier
    /// attempt may have done.
    fn taken(&mut self, config: &RedisLockConfig, now_us: u64) -> Step<RedisAcquire, RedisCommand> {
        match self.patience {
            Patience::Once => self.finish(TAKEN_GIVE_UP, RedisAcquire::NotAcquired),
            Patience::Wait if self.past_deadline(now_us) => self.give_up_waiting(),
            Patience::Wait => {
                self.state = AcquireState::WaitingToSet;
                Step::new(
                    TAKEN_WAIT,
                    Action::Sleep {
                        ms: config.retry_every_ms,
                        kind: SleepKind::Poll,
                    },
                )
            }
        }
    }

    fn give_up_waiting(&mut self) -> Step<RedisAcquire, RedisCommand> {
        let output = if self.uncertainty.may_have_applied() {
            RedisAcquire::Failed {
                failure: StoreFailure::Timeout,
                left: Leftover::CleanUpFailed,
            }
        } else {
            RedisAcquire::TimedOut
        };
        self.finish(DEADLINE, output)
    }

    fn failed(
        &mut self,
        config: &RedisLockConfig,
        failure: StoreFailure,
        sent_at_us: u64,
    ) -> Step<RedisAcquire, RedisCommand> {
        // A failed EXPIRE changes nothing the recipe could undo: its key is set either way.
        let setting = !self.set;
        if !setting && failure != StoreFailure::Unavailable && self.expire_uncertain_since_us.is_none() {
            self.expire_uncertain_since_us = Some(sent_at_us);
        }
        let applied = if setting { Some(sent_at_us) } else { None };
        if self.uncertainty.failed(&failure, applied, &config.retry) {
            let left = if self.set || self.uncertainty.may_have_applied() {
                Leftover::CleanUpFailed
            } else {
                Leftover::Nothing
            };
            return self.finish(FAILED, RedisAcquire::Failed { failure, left });
        }
        self.state = if setting {
            AcquireState::WaitingToSet
        } else {
            AcquireState::WaitingToExpire
        };
        Step::new(
            RETRY,
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
                self.setnx(now_us)
            }
            (AcquireState::Setting { .. }, Input::Reply(RedisReply::Ok)) => {
                self.uncertainty.answered();
                self.set = true;
                self.expire(config, now_us)
            }
            (AcquireState::Setting { .. }, Input::Reply(RedisReply::Nil)) => {
                self.uncertainty.answered();
                self.taken(config, now_us)
            }
            (AcquireState::Expiring { sent_at_us }, Input::Reply(_)) => {
                // The recipe does not read EXPIRE's answer: 0 (the key is gone, deleted by a
                // former holder's DEL) is believed as much as 1.
                self.uncertainty.answered();
                let since_us = self
                    .expire_uncertain_since_us
                    .map_or(sent_at_us, |first| first.min(sent_at_us));
                let lease = RedisLease {
                    key: self.key.clone(),
                    token: self.token.clone(),
                    set_sent_at_us: since_us,
                };
                self.finish(EXPIRED_SET, RedisAcquire::Acquired { lease })
            }
            (AcquireState::Setting { .. }, Input::Reply(reply)) => {
                let failure = StoreFailure::Other(format!("unexpected reply {reply:?} to SETNX"));
                self.finish(
                    FAILED,
                    RedisAcquire::Failed {
                        failure,
                        left: Leftover::Nothing,
                    },
                )
            }
            (AcquireState::Setting { sent_at_us } | AcquireState::Expiring { sent_at_us }, Input::Failed(failure)) => {
                self.failed(config, failure, sent_at_us)
            }
            (AcquireState::WaitingToSet, Input::Woke) if self.past_deadline(now_us) => self.give_up_waiting(),
            (AcquireState::WaitingToSet, Input::Woke) => self.setnx(now_us),
            (AcquireState::WaitingToExpire, Input::Woke) => self.expire(config, now_us),
            (state, input) => panic!("SetNxThenExpire: {input:?} in state {state:?}"),
        }
    }
}

impl Machine for SetNxThenExpire {
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
            "SetNxThenExpire",
            self,
            SetNxThenExpire::is_finished,
            SetNxThenExpire::advance,
            (config, input, now_us),
        )
    }
}

/// What the release's `DEL` found.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Deleted {
    /// It deleted a key: ours, or the next holder's if our TTL had run out.
    AKey,
    /// There was no key: our TTL had run out (or an earlier attempt of this `DEL` applied).
    NoKey {
        uncertain: bool,
    },
    Failed(StoreFailure),
}

/// One command about the key, sent again after a failure: the extension's `EXPIRE` and the
/// release's `DEL`, neither of which looks at whose key it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlindCall {
    lease: RedisLease,
    delete: bool,
    /// The client time the request in flight was sent.
    sent_at_us: Option<u64>,
    waiting: bool,
    /// An attempt failed in a way that may have applied.
    uncertain: bool,
    failures: u8,
    finished: bool,
}

/// The extension's output (a [`BlindCall`] with `delete` false) or the release's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlindOutcome {
    Expired(Extended),
    Deleted(Deleted),
}

impl BlindCall {
    pub fn extend(lease: RedisLease) -> Self {
        BlindCall::new(lease, false)
    }

    pub fn release(lease: RedisLease) -> Self {
        BlindCall::new(lease, true)
    }

    fn new(lease: RedisLease, delete: bool) -> Self {
        BlindCall {
            lease,
            delete,
            sent_at_us: None,
            waiting: false,
            uncertain: false,
            failures: 0,
            finished: false,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn send(&mut self, config: &RedisLockConfig, now_us: u64) -> Step<BlindOutcome, RedisCommand> {
        self.sent_at_us = Some(now_us);
        self.waiting = false;
        let key = self.lease.key.clone();
        if self.delete {
            Step::new(DEL, Action::Store(RedisCommand::Del { key }))
        } else {
            Step::new(
                EXTEND,
                Action::Store(RedisCommand::PExpire {
                    key,
                    ttl_ms: config.ttl_ms,
                }),
            )
        }
    }

    fn finish(&mut self, tag: StepTag, output: BlindOutcome) -> Step<BlindOutcome, RedisCommand> {
        self.finished = true;
        self.sent_at_us = None;
        Step::done(tag, output)
    }

    fn answered(&mut self, reply: &RedisReply, sent_at_us: u64) -> Step<BlindOutcome, RedisCommand> {
        let one = *reply == RedisReply::Integer(1);
        match (self.delete, one) {
            (true, true) => self.finish(DELETED, BlindOutcome::Deleted(Deleted::AKey)),
            (true, false) => {
                let uncertain = self.uncertain;
                self.finish(NO_KEY, BlindOutcome::Deleted(Deleted::NoKey { uncertain }))
            }
            (false, true) => {
                let lease = RedisLease {
                    set_sent_at_us: sent_at_us,
                    ..self.lease.clone()
                };
                self.finish(EXTENDED, BlindOutcome::Expired(Extended::Extended { lease }))
            }
            (false, false) => self.finish(EXTEND_LOST, BlindOutcome::Expired(Extended::Lost)),
        }
    }

    fn advance(
        &mut self,
        config: &RedisLockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<BlindOutcome, RedisCommand> {
        match (self.sent_at_us, input) {
            (None, Input::Start) if !self.waiting => self.send(config, now_us),
            (None, Input::Woke) if self.waiting => self.send(config, now_us),
            (Some(sent_at_us), Input::Reply(reply)) => self.answered(&reply, sent_at_us),
            (Some(_), Input::Failed(failure)) => {
                self.sent_at_us = None;
                self.uncertain |= failure != StoreFailure::Unavailable;
                self.failures = self.failures.saturating_add(1);
                if self.failures > config.retry.max_retries {
                    let output = if self.delete {
                        BlindOutcome::Deleted(Deleted::Failed(failure))
                    } else {
                        BlindOutcome::Expired(Extended::Failed(failure))
                    };
                    return self.finish(FAILED, output);
                }
                self.waiting = true;
                Step::new(
                    RETRY,
                    Action::Sleep {
                        ms: config.retry.backoff_ms,
                        kind: SleepKind::Retry,
                    },
                )
            }
            (sent, input) => panic!("BlindCall: {input:?} (sent at {sent:?}, waiting {})", self.waiting),
        }
    }
}

impl Machine for BlindCall {
    type Config = RedisLockConfig;
    type Output = BlindOutcome;
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn resume(
        &mut self,
        config: &RedisLockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<BlindOutcome, RedisCommand> {
        crate::algo::resume_checked(
            "BlindCall",
            self,
            BlindCall::is_finished,
            BlindCall::advance,
            (config, input, now_us),
        )
    }
}

/// The lock: `SETNX` then `EXPIRE`, extended by `EXPIRE`, released by `DEL`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SetNxExpireLock;

impl FamilyLock for SetNxExpireLock {
    const NAME: &'static str = "redis-setnx-expire";

    fn wait_ms(config: &Self::Config) -> Option<u64> {
        config.max_wait_ms
    }

    fn wait_overshoot_ms(config: &Self::Config) -> u64 {
        config.retry_every_ms
    }
    type Config = RedisLockConfig;
    type Command = RedisCommand;
    type Reply = RedisReply;
    type Lease = RedisLease;
    type AcquireMachine = SetNxThenExpire;
    type ExtendMachine = BlindCall;
    type ReleaseMachine = BlindCall;
    type RenewalMachine = NoRenewal<Self::Config, Self::Command, Self::Reply>;

    fn acquire(key: &str, token: &str, patience: Patience) -> SetNxThenExpire {
        SetNxThenExpire::new(key, token, patience)
    }

    fn acquired(output: RedisAcquire) -> Acquisition<RedisLease> {
        match output {
            RedisAcquire::Acquired { lease } => Acquisition::Acquired(lease),
            RedisAcquire::NotAcquired => Acquisition::NotAcquired,
            RedisAcquire::TimedOut => Acquisition::TimedOut,
            RedisAcquire::Failed { failure, left } => Acquisition::Failed { failure, left },
        }
    }

    fn extend(lease: RedisLease) -> BlindCall {
        BlindCall::extend(lease)
    }

    fn extended(_old: &RedisLease, output: BlindOutcome) -> Extension<RedisLease> {
        match output {
            BlindOutcome::Expired(Extended::Extended { lease }) => Extension::Extended(lease),
            BlindOutcome::Expired(Extended::Lost) => Extension::Lost,
            BlindOutcome::Expired(Extended::Failed(failure)) => Extension::Failed(failure),
            BlindOutcome::Deleted(_) => unreachable!("an extension does not delete"),
        }
    }

    fn release(lease: RedisLease) -> BlindCall {
        BlindCall::release(lease)
    }

    fn released(output: BlindOutcome) -> Release {
        match output {
            BlindOutcome::Deleted(Deleted::AKey) => Release::ActedBlind,
            BlindOutcome::Deleted(Deleted::NoKey { uncertain: true }) => Release::GoneEitherWay,
            BlindOutcome::Deleted(Deleted::NoKey { uncertain: false }) => Release::WasNotOurs,
            BlindOutcome::Deleted(Deleted::Failed(failure)) => Release::Failed(failure),
            BlindOutcome::Expired(_) => unreachable!("a release does not extend"),
        }
    }

    fn valid_until_us(lease: &RedisLease, config: &RedisLockConfig) -> u64 {
        lease.valid_until_us(config)
    }

    fn token(lease: &RedisLease) -> &str {
        &lease.token
    }

    fn holder_on_servers(servers: &[ServerNow<'_>], key: &str) -> Option<ServerHolder> {
        let (keyspace, now_ms) = ServerNow::redis(servers)?;
        Some(super::set_nx::holder_on_server(keyspace, key, now_ms))
    }

    fn check(config: &RedisLockConfig) -> Result<(), LockConfigError> {
        // The same settings as the one-command lock's: a TTL, a poll interval, a drift margin
        // below the TTL, extensions within it.
        SetNxLock::check(config)
    }

    fn renewal_ended(output: RenewalEnd) -> RenewalEnd {
        output
    }

    fn renewed_lease(machine: &Self::RenewalMachine) -> RedisLease {
        machine.unreachable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redis_keyspace::RedisKeyspace;

    /// A client and one Redis server with the same clock; every request takes 1 ms. `lose`:
    /// the indexes (0-based, in the order sent) of requests that apply and lose their reply.
    fn run<M>(server: &mut RedisKeyspace, now_us: &mut u64, machine: &mut M, lose: &[usize]) -> M::Output
    where
        M: Machine<Config = RedisLockConfig, Command = RedisCommand, Reply = RedisReply>,
    {
        let config = config();
        let mut input = Input::Start;
        let mut sent = 0;
        for _ in 0..100_000 {
            let step = machine.resume(&config, input, *now_us);
            input = match step.action {
                Action::Store(command) => {
                    *now_us += 1000;
                    let reply = server.apply(&command, *now_us / 1000);
                    sent += 1;
                    if lose.contains(&(sent - 1)) {
                        Input::Failed(StoreFailure::Timeout)
                    } else {
                        Input::Reply(reply)
                    }
                }
                Action::Sleep { ms, .. } => {
                    *now_us += ms * 1000;
                    Input::Woke
                }
                Action::Done(output) => return output,
                Action::Draw { .. } | Action::ReadTime | Action::StopRenewal { .. } => {
                    panic!("these machines draw nothing, read no time source, have no renewal task")
                }
            };
        }
        panic!("the machine did not finish in 100000 steps")
    }

    fn config() -> RedisLockConfig {
        RedisLockConfig {
            ttl_ms: 10_000,
            max_wait_ms: Some(60_000),
            ..RedisLockConfig::default()
        }
    }

    fn take(server: &mut RedisKeyspace, now_us: &mut u64, token: &str, lose: &[usize]) -> RedisAcquire {
        run(
            server,
            now_us,
            &mut SetNxThenExpire::new("lock", token, Patience::Wait),
            lose,
        )
    }

    fn pttl(server: &RedisKeyspace, now_us: u64) -> RedisReply {
        server
            .clone()
            .apply(&RedisCommand::PTtl { key: "lock".into() }, now_us / 1000)
    }

    #[test]
    fn setnx_then_expire_takes_a_free_key_with_a_ttl_counted_from_the_expire() {
        let mut server = RedisKeyspace::new();
        let mut now_us = 1_000_000;
        let RedisAcquire::Acquired { lease } = take(&mut server, &mut now_us, "a", &[]) else {
            panic!("a free key is taken")
        };
        assert_eq!(
            lease.set_sent_at_us, 1_001_000,
            "the lease counts from the EXPIRE's send"
        );
        assert_eq!(pttl(&server, now_us), RedisReply::Integer(10_000));
    }

    #[test]
    fn a_setnx_whose_reply_was_lost_leaves_a_key_without_expiry_that_nobody_takes() {
        // The SETNX applies and its reply is lost; the retry says 0 and the recipe waits as for
        // anyone's key: no EXPIRE is ever sent, the key has no TTL, the deadline gives up.
        let mut server = RedisKeyspace::new();
        let mut now_us = 1_000_000;
        let output = take(&mut server, &mut now_us, "a", &[0]);
        assert_eq!(
            output,
            RedisAcquire::Failed {
                failure: StoreFailure::Timeout,
                left: Leftover::CleanUpFailed
            },
            "it says it may have left its key"
        );
        assert_eq!(pttl(&server, now_us), RedisReply::Integer(-1), "a key with no expiry");
        // Nobody else gets it either, however long they wait.
        let later = take(&mut server, &mut now_us, "b", &[]);
        assert_eq!(later, RedisAcquire::TimedOut);
    }

    #[test]
    fn a_failed_expire_is_sent_again_and_giving_up_says_the_key_stays() {
        let mut server = RedisKeyspace::new();
        let mut now_us = 1_000_000;
        let first_expire_us = now_us + 1000;
        let output = take(&mut server, &mut now_us, "a", &[1]);
        let RedisAcquire::Acquired { lease } = output else {
            panic!("the EXPIRE sent again gets through: {output:?}")
        };
        assert_eq!(
            lease.set_sent_at_us, first_expire_us,
            "the first EXPIRE applied and lost its reply: the lease counts from its send"
        );
        let mut server = RedisKeyspace::new();
        let mut now_us = 1_000_000;
        let all_expires: Vec<usize> = (1..10).collect();
        let output = take(&mut server, &mut now_us, "a", &all_expires);
        assert!(
            matches!(
                output,
                RedisAcquire::Failed {
                    left: Leftover::CleanUpFailed,
                    ..
                }
            ),
            "{output:?}"
        );
    }

    #[test]
    fn a_late_del_deletes_the_next_holder_s_key_and_a_late_expire_extends_it() {
        let mut server = RedisKeyspace::new();
        let mut now_us = 1_000_000;
        let RedisAcquire::Acquired { lease: first } = take(&mut server, &mut now_us, "a", &[]) else {
            panic!("a free key is taken")
        };
        // The first holder pauses past its TTL; the second takes the key.
        now_us += 11_000_000;
        assert!(matches!(
            take(&mut server, &mut now_us, "b", &[]),
            RedisAcquire::Acquired { .. }
        ));
        // The first holder's extension renews the second's key and is believed.
        let extended = run(&mut server, &mut now_us, &mut BlindCall::extend(first.clone()), &[]);
        assert!(
            matches!(extended, BlindOutcome::Expired(Extended::Extended { .. })),
            "{extended:?}"
        );
        // Its release deletes the second's key, and says it cannot tell whose it was.
        let released = run(&mut server, &mut now_us, &mut BlindCall::release(first.clone()), &[]);
        assert_eq!(SetNxExpireLock::released(released), Release::ActedBlind);
        assert_eq!(
            pttl(&server, now_us),
            RedisReply::Integer(-2),
            "the second holder's key is gone"
        );
        // A release that finds no key says the lease had run out.
        let again = run(&mut server, &mut now_us, &mut BlindCall::release(first), &[]);
        assert_eq!(SetNxExpireLock::released(again), Release::WasNotOurs);
    }

    #[test]
    fn try_lock_on_a_taken_key_gives_up_at_once() {
        let mut server = RedisKeyspace::new();
        let mut now_us = 1_000_000;
        take(&mut server, &mut now_us, "a", &[]);
        let once = run(
            &mut server,
            &mut now_us,
            &mut SetNxThenExpire::new("lock", "b", Patience::Once),
            &[],
        );
        assert_eq!(once, RedisAcquire::NotAcquired);
    }
}
