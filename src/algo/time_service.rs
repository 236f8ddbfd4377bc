//! Section 5.4: a time-service replica's schedule — Listing 8 (TryUpdateGlobalTime) once per
//! period, for ever or for a given number of rounds.
//!
//! The period is part of the algorithm, not of its driver: how often the replicas push
//! GlobalTime forward bounds how stale a client's reading can be, and how often a waiter whose
//! clock is behind sees the queue move (S1, F). The thesis runs it every
//! [`THESIS_PERIOD_MS`].

use super::global_time::{GlobalTimeUpdate, TryUpdateGlobalTime};
use super::retry::Retrying;
use super::{Action, Input, Machine, RetryPolicy, SleepKind, Source, Step, StepTag};

/// The thesis's period between two TryUpdateGlobalTime runs of one replica.
pub const THESIS_PERIOD_MS: u64 = 500;

/// What the schedule reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimeServiceConfig {
    /// Between the end of one run of Listing 8 and the start of the next; at least 1.
    pub period_ms: u64,
    /// Stop after this many runs (`None`: run for ever).
    pub rounds: Option<u64>,
    pub retry: RetryPolicy,
}

impl AsRef<RetryPolicy> for TimeServiceConfig {
    fn as_ref(&self) -> &RetryPolicy {
        &self.retry
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum State {
    Updating(Retrying<TryUpdateGlobalTime>),
    Waiting,
    Finished,
}

/// A replica's schedule. Its output is the number of rounds run.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimeServiceSchedule {
    state: State,
    rounds_done: u64,
    /// The last round's outcome.
    last: Option<GlobalTimeUpdate>,
}

const WAIT: StepTag = StepTag::new(
    Source::TimeClient,
    0,
    "time service: wait a period before Listing 8 again",
);
const DONE: StepTag = StepTag::new(Source::TimeClient, 0, "time service: the rounds asked for are done");

impl Default for TimeServiceSchedule {
    fn default() -> Self {
        Self::new()
    }
}

impl TimeServiceSchedule {
    pub fn new() -> Self {
        TimeServiceSchedule {
            state: State::Waiting,
            rounds_done: 0,
            last: None,
        }
    }

    /// The outcome of the last finished round of Listing 8.
    pub fn last_update(&self) -> Option<&GlobalTimeUpdate> {
        self.last.as_ref()
    }

    fn next_round(&mut self, config: &TimeServiceConfig, now_us: u64) -> Step<u64> {
        if config.rounds.is_some_and(|rounds| self.rounds_done >= rounds) {
            self.state = State::Finished;
            return Step::done(DONE, self.rounds_done);
        }
        let mut update = Retrying::new(TryUpdateGlobalTime::new());
        let step = update.resume(&config.retry, Input::Start, now_us);
        self.state = State::Updating(update);
        self.after_update_step(config, step)
    }

    fn after_update_step(&mut self, config: &TimeServiceConfig, step: Step<GlobalTimeUpdate>) -> Step<u64> {
        match step.action {
            Action::Done(update) => {
                self.last = Some(update);
                self.rounds_done = self.rounds_done.saturating_add(1);
                if config.rounds.is_some_and(|rounds| self.rounds_done >= rounds) {
                    self.state = State::Finished;
                    return Step::done(DONE, self.rounds_done);
                }
                self.state = State::Waiting;
                Step::new(
                    WAIT,
                    Action::Sleep {
                        ms: config.period_ms,
                        kind: SleepKind::Poll,
                    },
                )
            }
            Action::Store(command) => Step::store(step.tag, command),
            Action::Sleep { ms, kind } => Step::new(step.tag, Action::Sleep { ms, kind }),
            Action::Draw { max_ms } => Step::new(step.tag, Action::Draw { max_ms }),
            Action::ReadTime => Step::new(step.tag, Action::ReadTime),
            Action::StopRenewal { wait } => Step::new(step.tag, Action::StopRenewal { wait }),
        }
    }
}

impl Machine for TimeServiceSchedule {
    type Config = TimeServiceConfig;
    type Output = u64;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &TimeServiceConfig, input: Input, now_us: u64) -> Step<u64> {
        debug_assert!(config.period_ms >= 1, "a period of 0 would spin");
        match (&mut self.state, input) {
            (State::Waiting, Input::Start | Input::Woke) => self.next_round(config, now_us),
            (State::Updating(update), input) => {
                let step = update.resume(&config.retry, input, now_us);
                self.after_update_step(config, step)
            }
            (state, input) => panic!("time service: input {input:?} does not answer state {state:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{RowStore, StoreReply};

    /// Run the schedule against one store, sleeping on a counter clock.
    fn run(config: TimeServiceConfig, limit_steps: usize) -> (u64, u64, usize) {
        let mut store = RowStore::new();
        let mut schedule = TimeServiceSchedule::new();
        let mut now_us = 1_000_000u64;
        let mut input = Input::Start;
        let mut writes = 0;
        for _ in 0..limit_steps {
            let step = schedule.resume(&config, input, now_us);
            input = match step.action {
                Action::Store(command) => {
                    let request = command.stamp(|| now_us);
                    let reply: StoreReply = request.apply_to(&mut store, now_us);
                    if reply == StoreReply::Done {
                        writes += 1;
                    }
                    Input::Reply(reply)
                }
                Action::Sleep { ms, .. } => {
                    now_us += ms * 1000;
                    Input::Woke
                }
                Action::ReadTime => Input::Time(now_us),
                Action::Done(rounds) => return (rounds, now_us, writes),
                other => panic!("unexpected {other:?}"),
            };
            now_us += 1;
        }
        panic!("the schedule did not finish in {limit_steps} steps");
    }

    #[test]
    fn the_schedule_runs_listing_8_once_per_period_for_the_rounds_asked() {
        let config = TimeServiceConfig {
            period_ms: THESIS_PERIOD_MS,
            rounds: Some(4),
            retry: RetryPolicy::default(),
        };
        let (rounds, now_us, writes) = run(config, 1000);
        assert_eq!(rounds, 4);
        assert!(
            writes >= 4,
            "each round moves GlobalTime forward on a clock that advances"
        );
        let slept_us = 3 * THESIS_PERIOD_MS * 1000;
        assert!(now_us >= 1_000_000 + slept_us, "three periods between four rounds");
        assert!(
            now_us < 1_000_000 + slept_us + 1_000,
            "and no fourth period after the last round"
        );
    }

    #[test]
    fn zero_rounds_do_nothing() {
        let config = TimeServiceConfig {
            period_ms: 1,
            rounds: Some(0),
            retry: RetryPolicy::default(),
        };
        assert_eq!(run(config, 10).0, 0);
    }
}
