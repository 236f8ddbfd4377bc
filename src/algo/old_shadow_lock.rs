//! Listings 3–4: the old algorithm (Fominykh, 2012), a main row and a shadow row.
//!
//! TryLock (Listing 3) returns Success, AnotherThreadIsOwner or ConcurrentAttempt:
//!
//! 1. read the main row; if it holds exactly one cell, Success if that cell is ours, else
//!    AnotherThreadIsOwner (more than one cell: AnotherThreadIsOwner);
//! 7. write our cell to the shadow row; 8. read the shadow row;
//! 9. if our cell is alone there and (10) the main row, read again, is empty:
//!    11. write our cell to the main row, 12. delete our shadow cell, 13. Success;
//! 14. otherwise delete our shadow cell, 15. ConcurrentAttempt.
//!
//! GetLock (Listing 4) repeats TryLock: AnotherThreadIsOwner sleeps uniform 0–1000 ms,
//! ConcurrentAttempt sleeps uniform 0–50·attempt ms and increments `attempt`. The random
//! draws come from the driver ([`Action::Draw`]). [`OldMode::Once`] runs TryLock once: the
//! old algorithm's TryGetLock.
//!
//! Mutual exclusion rests on Lemma 1 (two threads that each write a cell to the shadow row
//! and read it back cannot both see only their own). Progress is only probabilistic: two
//! threads can meet in the shadow row for ever, and a releasing thread often re-acquires
//! while the others sleep — the unfairness the thesis set out to fix.

use super::queue_column::queue_column;
use super::SLOW_ACQUISITION;
use super::{
    deadline_after, delete_own_cell, is_only, lease_outlived, read_first, sleep_until_deadline_ms, write_own_cell,
    Acquire, Action, FencingToken, Input, LeaseCells, Leftover, LockConfig, LockId, Machine, SleepKind, Source, Step,
    StepTag, ThreadId,
};
use crate::store::{StoreCommand, StoreReply};

/// Blocking GetLock (Listing 4) or a single TryLock (Listing 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OldMode {
    Blocking,
    Once,
}

/// The outcome of one TryLock (Listing 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TryLockResult {
    Success,
    AnotherThreadIsOwner,
    ConcurrentAttempt,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum State {
    Idle,
    /// L3.1 sent.
    ReadingMain,
    /// L3.7 sent.
    WritingShadow,
    /// L3.8 sent.
    ReadingShadow,
    /// L3.10 sent.
    ReadingMainAgain,
    /// L3.11 sent; the client time at which it was sent.
    WritingMain {
        at_us: u64,
    },
    /// L3.12 or L3.14 sent.
    DeletingShadow {
        then: TryLockResult,
        main_written_at_us: Option<u64>,
    },
    /// Ours: the fencing token's time reading, after Success.
    ReadingTokenTime {
        main_written_at_us: u64,
    },
    /// Ours: Success came a whole TTL after the main write; deleting our main cell.
    DeletingStaleMain,
    /// L4.6 / L4.9: the backoff draw and sleep.
    DrawingBackoff,
    BackingOff,
    Finished,
}

/// Listings 3–4 as a machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OldGetLock {
    lock: LockId,
    thread: ThreadId,
    mode: OldMode,
    /// L4.1: attempt = 1.
    attempt: u32,
    /// Client time of our shadow write in the current TryLock (tracked only with a TTL):
    /// the contest that Lemma 1 decides is only sound while that cell lives.
    contest_started_us: u64,
    state: State,
    deadline_us: Option<u64>,
}

const L3_READ_MAIN: StepTag = StepTag::new(Source::L3, 1, "read the main row");
const L3_OWNER: StepTag = StepTag::new(Source::L3, 6, "AnotherThreadIsOwner: not acquired");
const L3_WRITE_SHADOW: StepTag = StepTag::new(Source::L3, 7, "write own cell to the shadow row");
const L3_READ_SHADOW: StepTag = StepTag::new(Source::L3, 8, "read the shadow row");
const L3_READ_MAIN_AGAIN: StepTag = StepTag::new(Source::L3, 10, "alone in the shadow row: read the main row again");
const L3_WRITE_MAIN: StepTag = StepTag::new(Source::L3, 11, "main row empty: write own cell to the main row");
const L3_DELETE_SHADOW_WON: StepTag = StepTag::new(Source::L3, 12, "delete own shadow cell");
const L3_DELETE_SHADOW_LOST: StepTag = StepTag::new(Source::L3, 14, "not alone: delete own shadow cell");
const L3_SUCCESS_REENTRY: StepTag = StepTag::new(Source::L3, 4, "the main row's one cell is ours: Success");
const TOKEN_TIME: StepTag = StepTag::new(Source::Ours, 0, "Success: read the time for the fencing token");
const L4_DONE: StepTag = StepTag::new(Source::L4, 4, "Success: the lock is held");
const L4_OWNER_BACKOFF: StepTag = StepTag::new(Source::L4, 6, "AnotherThreadIsOwner: draw a sleep of 0-1000 ms");
const L4_CONCURRENT_BACKOFF: StepTag =
    StepTag::new(Source::L4, 9, "ConcurrentAttempt: draw a sleep of 0-50*attempt ms");
const L4_SLEEP: StepTag = StepTag::new(Source::L4, 6, "sleep, then TryLock again");
const ONCE_NOT_ACQUIRED: StepTag = StepTag::new(Source::L3, 15, "ConcurrentAttempt: not acquired");
const GAVE_UP: StepTag = StepTag::new(Source::Ours, 0, "the store kept failing: give up");
const TIMED_OUT: StepTag = StepTag::new(Source::Ours, 0, "max wait ran out: give up");

impl OldGetLock {
    pub fn new(lock: LockId, thread: ThreadId, mode: OldMode) -> Self {
        OldGetLock {
            lock,
            thread,
            mode,
            attempt: 1,
            contest_started_us: 0,
            state: State::Idle,
            deadline_us: None,
        }
    }

    pub fn thread(&self) -> &ThreadId {
        &self.thread
    }

    /// L3.1: the first step of every TryLock.
    fn try_lock(&mut self, now_us: u64) -> Step<Acquire> {
        if self.deadline_us.is_some_and(|deadline| now_us >= deadline) {
            self.state = State::Finished;
            return Step::done(TIMED_OUT, Acquire::TimedOut);
        }
        self.state = State::ReadingMain;
        Step::store(L3_READ_MAIN, read_first(self.lock.main_row(), 2))
    }

    fn write_own(&self, config: &LockConfig, row: String) -> StoreCommand {
        write_own_cell(config, row, self.thread.as_str().to_owned(), &self.thread)
    }

    /// Listing 4 after a TryLock that did not succeed.
    fn after_try_lock(&mut self, config: &LockConfig, result: TryLockResult) -> Step<Acquire> {
        if self.mode == OldMode::Once {
            self.state = State::Finished;
            let tag = match result {
                TryLockResult::AnotherThreadIsOwner => L3_OWNER,
                _ => ONCE_NOT_ACQUIRED,
            };
            return Step::done(tag, Acquire::NotAcquired);
        }
        self.state = State::DrawingBackoff;
        match result {
            TryLockResult::AnotherThreadIsOwner => Step::new(
                L4_OWNER_BACKOFF,
                Action::Draw {
                    max_ms: config.old_backoff.owner_max_ms,
                },
            ),
            TryLockResult::ConcurrentAttempt => {
                let max_ms = config
                    .old_backoff
                    .concurrent_step_ms
                    .saturating_mul(u64::from(self.attempt));
                // L4.10: attempt = attempt + 1 (ours: bounded by max_attempt).
                self.attempt = (self.attempt + 1).min(config.old_backoff.max_attempt.max(1));
                debug_assert!(
                    (1..=config.old_backoff.max_attempt.max(1)).contains(&self.attempt),
                    "L4.10: attempt {} outside 1..=max_attempt",
                    self.attempt
                );
                Step::new(L4_CONCURRENT_BACKOFF, Action::Draw { max_ms })
            }
            TryLockResult::Success => unreachable!("Success ends GetLock"),
        }
    }
}

impl OldGetLock {
    /// One transition; [`Machine::resume`] checks it in debug builds.
    fn advance(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<Acquire> {
        if let Input::Failed(failure) = input {
            self.state = State::Finished;
            return Step::done(
                GAVE_UP,
                Acquire::Failed {
                    failure,
                    left: Leftover::NotCleanedUp,
                },
            );
        }
        match (std::mem::replace(&mut self.state, State::Finished), input) {
            (State::Idle, Input::Start) => {
                self.deadline_us = deadline_after(config, now_us);
                self.try_lock(now_us)
            }
            (State::ReadingMain, Input::Reply(StoreReply::Slice(cells))) => {
                match cells.as_slice() {
                    // L3.2–4: exactly one cell, and it is ours (a re-entry, or a retried write).
                    [cell] if cell.column == self.thread.as_str() => {
                        // The lease runs from our cell's write, whose timestamp is our clock's.
                        self.state = State::ReadingTokenTime {
                            main_written_at_us: cell.timestamp_us.min(now_us),
                        };
                        Step::new(L3_SUCCESS_REENTRY, Action::ReadTime)
                    }
                    // L3.5–6 (and more than one cell).
                    [_, ..] => self.after_try_lock(config, TryLockResult::AnotherThreadIsOwner),
                    // L3.7: the main row is empty.
                    [] => {
                        self.state = State::WritingShadow;
                        if config.ttl_s.is_some() {
                            self.contest_started_us = now_us;
                        }
                        Step::store(L3_WRITE_SHADOW, self.write_own(config, self.lock.shadow_row()))
                    }
                }
            }
            (State::WritingShadow, Input::Reply(StoreReply::Done)) => {
                self.state = State::ReadingShadow;
                Step::store(L3_READ_SHADOW, read_first(self.lock.shadow_row(), 2))
            }
            (State::ReadingShadow, Input::Reply(reply)) => {
                if is_only(&reply, self.thread.as_str()) {
                    // L3.9–10.
                    self.state = State::ReadingMainAgain;
                    Step::store(L3_READ_MAIN_AGAIN, read_first(self.lock.main_row(), 1))
                } else {
                    self.state = State::DeletingShadow {
                        then: TryLockResult::ConcurrentAttempt,
                        main_written_at_us: None,
                    };
                    Step::store(L3_DELETE_SHADOW_LOST, self.delete_shadow())
                }
            }
            (State::ReadingMainAgain, Input::Reply(StoreReply::Slice(cells))) => {
                if cells.is_empty() {
                    self.state = State::WritingMain { at_us: now_us };
                    Step::store(L3_WRITE_MAIN, self.write_own(config, self.lock.main_row()))
                } else {
                    self.state = State::DeletingShadow {
                        then: TryLockResult::ConcurrentAttempt,
                        main_written_at_us: None,
                    };
                    Step::store(L3_DELETE_SHADOW_LOST, self.delete_shadow())
                }
            }
            (State::WritingMain { at_us }, Input::Reply(StoreReply::Done)) => {
                self.state = State::DeletingShadow {
                    then: TryLockResult::Success,
                    main_written_at_us: Some(at_us),
                };
                Step::store(L3_DELETE_SHADOW_WON, self.delete_shadow())
            }
            (
                State::DeletingShadow {
                    then,
                    main_written_at_us,
                },
                Input::Reply(StoreReply::Done),
            ) => match then {
                TryLockResult::Success => {
                    self.state = State::ReadingTokenTime {
                        main_written_at_us: main_written_at_us.expect("Success wrote the main cell"),
                    };
                    Step::new(TOKEN_TIME, Action::ReadTime)
                }
                other => self.after_try_lock(config, other),
            },
            // Ours: Lemma 1 on the shadow row holds only while our shadow cell lives; a
            // contest slower than the TTL may have let another thread win it too.
            (State::ReadingTokenTime { .. }, Input::Time(_))
                if lease_outlived(config, self.contest_started_us, now_us) =>
            {
                self.state = State::DeletingStaleMain;
                let delete = delete_own_cell(self.lock.main_row(), self.thread.as_str().to_owned());
                Step::store(SLOW_ACQUISITION, delete)
            }
            (State::DeletingStaleMain, Input::Reply(StoreReply::Done)) => {
                self.after_try_lock(config, TryLockResult::ConcurrentAttempt)
            }
            (State::ReadingTokenTime { main_written_at_us }, Input::Time(time_us)) => {
                let lease = LeaseCells {
                    lock: self.lock.clone(),
                    thread: self.thread.clone(),
                    queue_column: None,
                    main_written_at_us,
                };
                let token = FencingToken(queue_column(time_us, &self.thread));
                Step::done(L4_DONE, Acquire::Acquired { lease, token })
            }
            (State::DrawingBackoff, Input::Drawn(ms)) => {
                self.state = State::BackingOff;
                Step::new(
                    L4_SLEEP,
                    Action::Sleep {
                        // Ours (C-wait): never past the deadline.
                        ms: sleep_until_deadline_ms(ms, self.deadline_us, now_us),
                        kind: SleepKind::Backoff,
                    },
                )
            }
            // L4.7 / L4.11: go to 2.
            (State::BackingOff, Input::Woke) => self.try_lock(now_us),
            (state, input) => {
                panic!("old GetLock: input {input:?} does not answer state {state:?}")
            }
        }
    }
}

impl Machine for OldGetLock {
    type Config = LockConfig;
    type Output = Acquire;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<Acquire> {
        super::resume_checked(
            "old GetLock",
            self,
            |machine| machine.state == State::Finished,
            Self::advance,
            (config, input, now_us),
        )
    }
}

impl OldGetLock {
    fn delete_shadow(&self) -> StoreCommand {
        delete_own_cell(self.lock.shadow_row(), self.thread.as_str().to_owned())
    }
}

/// Reduction 7 of the lock models: the old lock holds no queue column (its token's time
/// reading goes straight into the outcome it returns).
impl crate::algo::held_columns::HeldColumns for OldGetLock {
    fn see_columns(&self, _: &mut dyn FnMut(&str)) {}
    fn rename_columns(&mut self, _: &mut dyn FnMut(&mut String)) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::queue_column::ClientId;
    use crate::algo::testkit::Bench;
    use crate::store::StoreFailure;

    fn thread(name: &str) -> ThreadId {
        ClientId::new(name).unwrap().thread(1)
    }

    fn machine(mode: OldMode) -> OldGetLock {
        OldGetLock::new(LockId::new("L").unwrap(), thread("a"), mode)
    }

    #[test]
    fn l3_free_lock_is_taken_through_the_shadow_row() {
        let mut bench = Bench::new(LockConfig::untimed());
        let outcome = bench.run(&mut machine(OldMode::Blocking));
        let Acquire::Acquired { lease, token } = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(
            bench.steps(),
            ["L3.1", "L3.7", "L3.8", "L3.10", "L3.11", "L3.12", "L4.4"]
        );
        assert_eq!(bench.live_columns("m:L"), ["a:1"], "L3.11 wrote the main cell");
        assert!(bench.live_columns("s:L").is_empty(), "L3.12 deleted the shadow cell");
        assert_eq!(lease.queue_column, None);
        assert_eq!(token.time_us(), Some(bench.now_us));
    }

    #[test]
    fn l3_4_another_owner_backs_off_up_to_1000_ms_then_tries_again() {
        let mut bench = Bench::new(LockConfig::untimed());
        let other = thread("b");
        bench.execute(crate::algo::write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        let mut old = machine(OldMode::Blocking);
        let step = bench.run_until(&mut old, Input::Start, |step| {
            matches!(step.action, Action::Draw { .. })
        });
        assert_eq!(step.action, Action::Draw { max_ms: 1000 }, "L4.6");
        assert_eq!(bench.steps(), ["L3.1", "L4.6"]);
        // The owner leaves while we sleep: the next TryLock succeeds.
        bench.execute(crate::algo::delete_own_cell("m:L".into(), other.as_str().into()));
        let done = bench.run_until(&mut old, Input::Drawn(300), |_| false);
        assert!(matches!(done.action, Action::Done(Acquire::Acquired { .. })));
        assert_eq!(bench.now_us, 1_000_000 + 300_000, "slept the drawn 300 ms");
    }

    #[test]
    fn l3_one_cell_that_is_ours_is_success_at_once() {
        let mut bench = Bench::new(LockConfig::untimed());
        let me = thread("a");
        bench.execute(crate::algo::write_own_cell(
            &bench.config,
            "m:L".into(),
            me.as_str().into(),
            &me,
        ));
        assert!(bench.run(&mut machine(OldMode::Blocking)).is_acquired());
        assert_eq!(bench.steps(), ["L3.1", "L3.4", "L4.4"]);
    }

    #[test]
    fn l3_14_a_second_shadow_cell_is_a_concurrent_attempt_with_growing_backoff() {
        let mut bench = Bench::new(LockConfig::untimed());
        let other = thread("b");
        bench.execute(crate::algo::write_own_cell(
            &bench.config,
            "s:L".into(),
            other.as_str().into(),
            &other,
        ));
        let mut old = machine(OldMode::Blocking);
        let mut draws = Vec::new();
        let mut input = Input::Start;
        for _ in 0..25 {
            let step = bench.run_until(&mut old, input, |step| matches!(step.action, Action::Draw { .. }));
            let Action::Draw { max_ms } = step.action else { panic!() };
            draws.push(max_ms);
            input = Input::Drawn(0);
        }
        assert_eq!(
            &draws[..3],
            [50, 100, 150],
            "L4.9: 0..50*attempt, attempt + 1 each time"
        );
        assert_eq!(*draws.last().unwrap(), 1000, "ours: attempt stops at max_attempt = 20");
        assert!(
            bench.live_columns("s:L") == ["b:1"],
            "L3.14 deleted our shadow cell every time"
        );
        assert!(bench.steps().contains(&"L3.14".to_owned()));
    }

    #[test]
    fn l3_10_a_main_cell_written_meanwhile_is_a_concurrent_attempt() {
        let mut bench = Bench::new(LockConfig::untimed());
        let mut old = machine(OldMode::Once);
        let step = bench.run_until(&mut old, Input::Start, |step| step.tag == L3_READ_MAIN_AGAIN);
        let other = thread("b");
        bench.execute(crate::algo::write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        let Action::Store(read) = step.action else { panic!() };
        let reply = bench.execute(read);
        let done = bench.run_until(&mut old, Input::Reply(reply), |_| false);
        assert_eq!(done.action, Action::Done(Acquire::NotAcquired));
        assert_eq!(bench.steps(), ["L3.1", "L3.7", "L3.8", "L3.10", "L3.14", "L3.15"]);
        assert_eq!(bench.live_columns("m:L"), ["b:1"]);
    }

    #[test]
    fn once_mode_reports_another_owner_as_not_acquired() {
        let mut bench = Bench::new(LockConfig::untimed());
        let other = thread("b");
        bench.execute(crate::algo::write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        assert_eq!(bench.run(&mut machine(OldMode::Once)), Acquire::NotAcquired);
        assert_eq!(bench.steps(), ["L3.1", "L3.6"]);
    }

    #[test]
    fn store_failure_and_deadline_end_the_attempt() {
        let bench = Bench::new(LockConfig::untimed());
        let mut old = machine(OldMode::Blocking);
        old.resume(&bench.config, Input::Start, 0);
        let failed = old.resume(&bench.config, Input::Failed(StoreFailure::Timeout), 0);
        assert_eq!(
            failed.action,
            Action::Done(Acquire::Failed {
                failure: StoreFailure::Timeout,
                left: Leftover::NotCleanedUp
            })
        );

        let mut bench = owned_by_b_waiting_at_most_500_ms();
        assert_eq!(bench.run(&mut machine(OldMode::Blocking)), Acquire::TimedOut);
    }

    /// Thread b owns the main row; a waiter may wait 500 ms and draws 1000 ms backoffs.
    fn owned_by_b_waiting_at_most_500_ms() -> Bench {
        let mut bench = Bench::new(LockConfig {
            max_wait_ms: Some(500),
            ..LockConfig::untimed()
        });
        let other = thread("b");
        bench.execute(crate::algo::write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        bench.draw = 1000;
        bench
    }

    /// C-wait: the owner backoff (1000 ms drawn) ends at the deadline (500 ms), not after it.
    #[test]
    fn a_backoff_ends_at_the_deadline() {
        let mut bench = owned_by_b_waiting_at_most_500_ms();
        let mut old = machine(OldMode::Blocking);
        let step = bench.run_until(&mut old, Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        assert_eq!(
            step.action,
            Action::Sleep {
                ms: 500,
                kind: SleepKind::Backoff
            }
        );
        // It wakes at the deadline and gives up without another attempt.
        bench.now_us += 500_000;
        let step = old.resume(&bench.config, Input::Woke, bench.now_us);
        assert_eq!(step.action, Action::Done(Acquire::TimedOut));
    }

    #[test]
    fn a_contest_slower_than_the_ttl_is_not_trusted() {
        let mut bench = Bench::new(LockConfig {
            ttl_s: Some(4),
            renew_every_ms: 2000,
            ..LockConfig::untimed()
        });
        let mut old = machine(OldMode::Once);
        bench.run_until(&mut old, Input::Start, |step| step.tag == TOKEN_TIME);
        // Our shadow cell was written 4 s ago: it may have expired mid-contest.
        bench.now_us += 4_000_000;
        let step = old.resume(&bench.config, Input::Time(bench.now_us), bench.now_us);
        assert_eq!(step.tag, SLOW_ACQUISITION);
        let Action::Store(delete) = step.action else { panic!() };
        let reply = bench.execute(delete);
        let done = bench.run_until(&mut old, Input::Reply(reply), |_| false);
        assert_eq!(done.action, Action::Done(Acquire::NotAcquired));
        assert!(bench.live_columns("m:L").is_empty(), "our stale main cell is gone");
    }
}
