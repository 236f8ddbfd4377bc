//! Ours: what a machine does when the store fails a request.
//!
//! The thesis assumes every request succeeds. A real cluster times out and reports too few
//! replicas, so every driver runs machines inside [`Retrying`]: a failed request is sent again,
//! unchanged apart from a fresh client timestamp, after [`RetryPolicy::backoff_ms`], up to
//! [`RetryPolicy::max_retries`] times. Re-sending is safe for every request the listings make:
//! a write of the same cell with a later timestamp, a delete of the same cell, or a read. Only
//! when the retries run out does the wrapped machine see [`Input::Failed`] and decide (give up,
//! or for renewal, try again at the next interval).

use super::{Action, Input, Machine, RetryPolicy, SleepKind, Source, Step, StepTag};
use crate::store::{StoreCommand, StoreFailure};

const RETRY: StepTag = StepTag::new(Source::Ours, 0, "retry the failed request");
const WAIT_BEFORE_RETRY: StepTag = StepTag::new(Source::Ours, 0, "wait before retrying a failed request");

/// A machine whose failed store requests are retried.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Retrying<M> {
    inner: M,
    /// The request in flight (kept to send it again), and how often it has failed.
    in_flight: Option<(StoreCommand, u8)>,
    waiting_to_retry: bool,
}

impl<M> Retrying<M> {
    pub fn new(inner: M) -> Self {
        Retrying {
            inner,
            in_flight: None,
            waiting_to_retry: false,
        }
    }

    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// The wrapped machine, for a model checker's order-preserving renamings (see
    /// `TryUpdateGlobalTime::rename_times`); the request in flight is renamed with it.
    pub fn inner_mut(&mut self) -> (&mut M, Option<&mut StoreCommand>) {
        (&mut self.inner, self.in_flight.as_mut().map(|(command, _)| command))
    }
}

impl<M> Machine for Retrying<M>
where
    M: Machine<Command = crate::store::StoreCommand, Reply = crate::store::StoreReply>,
    M::Config: AsRef<RetryPolicy>,
{
    type Config = M::Config;
    type Output = M::Output;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &M::Config, input: Input, now_us: u64) -> Step<M::Output> {
        let policy = *config.as_ref();
        debug_assert!(
            !self.waiting_to_retry || matches!(input, Input::Woke),
            "Retrying: the backoff before a retry is not interruptible; it ends with Woke, not {input:?}"
        );
        debug_assert!(
            !self.waiting_to_retry || self.in_flight.is_some(),
            "Retrying: waiting to retry with no request in flight"
        );
        let input = match input {
            Input::Failed(failure) if self.in_flight.is_some() => {
                let failures = &mut self.in_flight.as_mut().expect("checked above").1;
                *failures = failures.saturating_add(1);
                if *failures <= policy.max_retries {
                    self.waiting_to_retry = true;
                    return Step::new(
                        WAIT_BEFORE_RETRY,
                        Action::Sleep {
                            ms: policy.backoff_ms,
                            kind: SleepKind::Retry,
                        },
                    );
                }
                self.in_flight = None;
                Input::Failed(failure)
            }
            Input::Woke if self.waiting_to_retry => {
                self.waiting_to_retry = false;
                let (command, failures) = self.in_flight.as_ref().expect("a retry re-sends the request in flight");
                debug_assert!(
                    (1..=policy.max_retries).contains(failures),
                    "Retrying: retry {failures} of a request exceeds the policy's {} retries",
                    policy.max_retries
                );
                return Step::store(RETRY, command.clone());
            }
            Input::Reply(reply) => {
                self.in_flight = None;
                Input::Reply(reply)
            }
            other => other,
        };
        let step = self.inner.resume(config, input, now_us);
        if let Action::Store(command) = &step.action {
            self.in_flight = Some((command.clone(), 0));
        }
        step
    }

    fn urgent(&self, config: &M::Config, now_us: u64) -> bool {
        self.inner.urgent(config, now_us)
    }

    fn contending(&self) -> bool {
        self.inner.contending()
    }
}

/// What an acquisition that re-sends its own requests (the Redis and Memcached locks: not
/// wrapped in [`Retrying`], because a re-sent `SET NX` or `add` after a lost reply answers "taken"
/// *because of our own key*) must remember about its failed requests: whether one may have
/// applied, since when, and how many failed in a row. One place for the rule every such
/// machine follows: a failure other than `Unavailable` may have applied; the lease of a key that
/// turns out ours counts from the earliest send that may have set it; a reply resets the count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uncertainty {
    /// The client time of the first send whose outcome is unknown.
    since_us: Option<u64>,
    failures_in_a_row: u8,
}

impl Uncertainty {
    /// A request sent at `sent_at_us` (`None`: a read, which applies nothing) failed. True when
    /// the failures in a row exceed the policy's retries: give up.
    pub fn failed(&mut self, failure: &StoreFailure, sent_at_us: Option<u64>, policy: &RetryPolicy) -> bool {
        if let (Some(sent), true) = (sent_at_us, *failure != StoreFailure::Unavailable) {
            self.since_us = Some(self.since_us.map_or(sent, |first| first.min(sent)));
        }
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        self.failures_in_a_row > policy.max_retries
    }

    /// The store answered.
    pub fn answered(&mut self) {
        self.failures_in_a_row = 0;
    }

    /// Some earlier attempt may have applied.
    pub fn may_have_applied(&self) -> bool {
        self.since_us.is_some()
    }

    /// The earliest send that may have set our key: the uncertain ones' first, or `sent_at_us`.
    pub fn lease_start_us(&self, sent_at_us: u64) -> u64 {
        self.since_us.map_or(sent_at_us, |first| first.min(sent_at_us))
    }

    /// A read showed nothing of ours is there: no earlier attempt left anything.
    pub fn settled(&mut self) {
        self.since_us = None;
        self.failures_in_a_row = 0;
    }
}

/// Reduction 7 of the lock models: the wrapped machine's columns and the request in flight.
impl<M: crate::algo::held_columns::HeldColumns> crate::algo::held_columns::HeldColumns for Retrying<M> {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        self.inner.see_columns(see);
        if let Some((command, _)) = &self.in_flight {
            command.see_columns(see);
        }
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        self.inner.rename_columns(rename);
        if let Some((command, _)) = &mut self.in_flight {
            command.rename_columns(rename);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::queue_column::ClientId;
    use crate::algo::queue_try_get_lock::QueueTryGetLock;
    use crate::algo::{Acquire, LockConfig, LockId};
    use crate::store::{StoreFailure, StoreReply};

    #[test]
    fn a_failed_request_is_sent_again_after_a_backoff_and_the_machine_never_notices() {
        let config = LockConfig::untimed();
        let thread = ClientId::new("a").unwrap().thread(1);
        let mut machine = Retrying::new(QueueTryGetLock::new(LockId::new("L").unwrap(), thread));
        let first = machine.resume(&config, Input::Start, 0);
        let Action::Store(read) = first.action.clone() else {
            panic!()
        };
        let wait = machine.resume(&config, Input::Failed(StoreFailure::Timeout), 0);
        assert_eq!(
            wait.action,
            Action::Sleep {
                ms: 100,
                kind: SleepKind::Retry
            }
        );
        let again = machine.resume(&config, Input::Woke, 0);
        assert_eq!(again.action, Action::Store(read));
        assert_eq!(again.tag, RETRY);
        // The retried read succeeds: the listing goes on to L5.1.
        let next = machine.resume(&config, Input::Reply(StoreReply::Slice(vec![])), 0);
        assert_eq!(next.action, Action::ReadTime);
    }

    #[test]
    fn after_max_retries_the_machine_sees_the_failure() {
        let config = LockConfig::untimed();
        let thread = ClientId::new("a").unwrap().thread(1);
        let mut machine = Retrying::new(QueueTryGetLock::new(LockId::new("L").unwrap(), thread));
        machine.resume(&config, Input::Start, 0);
        for _ in 0..config.retry.max_retries {
            assert!(matches!(
                machine
                    .resume(&config, Input::Failed(StoreFailure::Unavailable), 0)
                    .action,
                Action::Sleep { .. }
            ));
            assert!(matches!(
                machine.resume(&config, Input::Woke, 0).action,
                Action::Store(_)
            ));
        }
        let end = machine.resume(&config, Input::Failed(StoreFailure::Unavailable), 0);
        assert_eq!(
            end.action,
            Action::Done(Acquire::Failed {
                failure: StoreFailure::Unavailable,
                left: crate::algo::Leftover::NotCleanedUp
            })
        );
    }

    #[test]
    fn uncertainty_keeps_the_earliest_send_that_may_have_applied_and_counts_failures_in_a_row() {
        let policy = RetryPolicy {
            max_retries: 2,
            backoff_ms: 1,
        };
        let mut u = Uncertainty::default();
        assert!(
            !u.failed(&StoreFailure::Unavailable, Some(5), &policy),
            "the first failure"
        );
        assert!(!u.may_have_applied(), "Unavailable applied nothing");
        assert!(!u.failed(&StoreFailure::Timeout, Some(9), &policy), "retry 1 failed");
        assert_eq!(u.lease_start_us(20), 9, "the earliest send that may have set the key");
        assert!(
            u.failed(&StoreFailure::Timeout, None, &policy),
            "retry 2 failed too: give up"
        );
        assert_eq!(u.lease_start_us(20), 9, "a read applies nothing");
        u.answered();
        assert!(
            !u.failed(&StoreFailure::Timeout, Some(40), &policy),
            "a reply reset the count"
        );
        assert_eq!(u.lease_start_us(50), 9);
        u.settled();
        assert!(!u.may_have_applied());
        assert_eq!(u.lease_start_us(50), 50);
    }
}
