//! Listing 7: TryGetLock — take the lock if that needs no waiting for another owner.
//!
//! 1. If the main row holds a cell, (2) return false.
//! 3. Enqueue (Listing 5 name, as in Listing 6).
//! 4. If we are first in the queue: (5) write our main cell and (6) read the main row; if
//!    our cell is alone (7) return true, else (9) delete our main cell and (10) go to 4.
//! 11. Otherwise (12) delete our queue cell and (13) return false.
//!
//! Theorem 3 (at most one holder) is Theorem 1's argument: the success condition is the same.
//! Theorem 4 claims at least one of several concurrent callers on a free lock succeeds.
//!
//! Note what the listing does not say: a thread first in the queue that finds another cell in
//! the main row loops through steps 4–10 for as long as that cell stays. The thesis's queue
//! cells are only renewed while held, so a long loop ends when our queue cell expires, and
//! then we are no longer first and return false.
//!
//! Ours: the step-10 loop waits one poll interval per turn; `max_wait_ms` bounds it. Mutant
//! M1 skips step 6, as in Listing 6.
//!
//! Ours (C-try, [`Fixes::try_bounded_loop`](super::Fixes::try_bounded_loop), on by default):
//! the loop goes back to step 4 at most [`LockConfig::try_turns`] times; then the call deletes
//! its queue cell and returns false. A call then sends at most 7 + 4 x `try_turns` requests
//! (before retries and clean-up), however long anybody holds the lock. The cell that keeps us
//! looping may be an owner's (a holder whose queue cell sorts after ours, under clock skew: the
//! listing then waits for its whole critical section, which C-try forbids) or a contender's (a
//! thread that wrote its main cell a moment before us and will delete it when it sees ours):
//! the listing cannot tell them apart. Giving up is what `try` promises for the first; for the
//! second it costs Theorem 4 unless the contender's two requests finish within our turns. That
//! is a real limit, not a flaw of this fix: cells compared by timestamp are registers, and a
//! try-lock that always lets one of several callers in while every caller finishes in a
//! bounded number of its own steps would be a wait-free test-and-set, which registers cannot
//! implement (consensus number 1 against 2). The model checks T4 for this variant under the
//! assumption that a poll interval outlasts a contender's requests, and shows it fails without
//! (`cassalock check --model trygetlock --fault skew --asynchronous`).

use super::queue_column::queue_column;
use super::SLOW_ACQUISITION;
use super::{
    deadline_after, delete_own_cell, is_only, lease_outlived, read_first, sleep_until_deadline_ms, write_own_cell,
    Acquire, Action, FencingToken, Input, LeaseCells, Leftover, LockConfig, LockId, Machine, SleepKind, Source, Step,
    StepTag, ThreadId,
};
use crate::store::StoreReply;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum State {
    Idle,
    /// L7.1 sent.
    CheckingMain,
    /// L5.1 asked the time source.
    ReadingTime,
    /// L7.3 sent.
    WritingQueue,
    /// L7.4 sent.
    ReadingHead,
    /// L7.5 sent at this client time.
    WritingMain {
        at_us: u64,
    },
    /// L7.6 sent.
    ReadingMain {
        main_at_us: u64,
    },
    /// L7.9 sent.
    DeletingMain,
    /// Ours: a poll interval before L7.10's go-to-4.
    Polling,
    /// L7.12 sent (or ours: max wait ran out).
    Leaving {
        timed_out: bool,
    },
    Finished,
}

/// Listing 7 as a machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueTryGetLock {
    lock: LockId,
    thread: ThreadId,
    column: Option<String>,
    state: State,
    deadline_us: Option<u64>,
    /// Times the step-10 loop went back to step 4.
    turns: u8,
}

const L7_CHECK_MAIN: StepTag = StepTag::new(Source::L7, 1, "read the main row");
const L7_TAKEN: StepTag = StepTag::new(Source::L7, 2, "the main row holds a cell: return false");
const L5_READ_TIME: StepTag = StepTag::new(Source::L5, 1, "read the time for the queue column");
pub(crate) const L7_ENQUEUE: StepTag = StepTag::new(Source::L7, 3, "write own cell to the queue row");
const L7_READ_HEAD: StepTag = StepTag::new(Source::L7, 4, "read the head of the queue");
const L7_WRITE_MAIN: StepTag = StepTag::new(Source::L7, 5, "first in the queue: write own cell to the main row");
const L7_READ_MAIN: StepTag = StepTag::new(Source::L7, 6, "read the main row");
const L7_HELD: StepTag = StepTag::new(Source::L7, 7, "own cell alone in the main row: return true");
const L7_DELETE_MAIN: StepTag = StepTag::new(Source::L7, 9, "not alone in the main row: delete own main cell");
const L7_LOOP_WAIT: StepTag = StepTag::new(Source::Ours, 0, "wait a poll interval before L7.10 (go to 4)");
const L7_LEAVE: StepTag = StepTag::new(Source::L7, 12, "not first in the queue: delete own queue cell");
const L7_NOT_ACQUIRED: StepTag = StepTag::new(Source::L7, 13, "return false");
const M1_HELD: StepTag = StepTag::new(
    Source::Ours,
    0,
    "MUTANT M1: first in the queue, taken without reading the main row",
);
const GIVE_UP_LEAVE: StepTag = StepTag::new(Source::Ours, 0, "max wait ran out: delete own queue cell");
const TIMED_OUT: StepTag = StepTag::new(Source::Ours, 0, "max wait ran out: not acquired");
const GAVE_UP: StepTag = StepTag::new(Source::Ours, 0, "the store kept failing: give up");
const TRY_TURNS_USED: StepTag = StepTag::new(
    Source::Ours,
    0,
    "C-try: another cell stayed in the main row for every turn of the step-10 loop: delete own queue cell and return false",
);

impl QueueTryGetLock {
    pub fn new(lock: LockId, thread: ThreadId) -> Self {
        QueueTryGetLock {
            lock,
            thread,
            column: None,
            state: State::Idle,
            deadline_us: None,
            turns: 0,
        }
    }

    /// Waiting a poll interval before going back to step 4 (L7.10)?
    pub fn in_loop_wait(&self) -> bool {
        self.state == State::Polling
    }

    pub fn thread(&self) -> &ThreadId {
        &self.thread
    }

    pub fn queue_column(&self) -> Option<&str> {
        self.column.as_deref()
    }

    fn column(&self) -> String {
        self.column
            .clone()
            .expect("the queue column is named before it is used")
    }

    /// L7.4, the top of the loop.
    fn read_head(&mut self, now_us: u64) -> Step<Acquire> {
        if self.deadline_us.is_some_and(|deadline| now_us >= deadline) {
            self.state = State::Leaving { timed_out: true };
            return Step::store(GIVE_UP_LEAVE, delete_own_cell(self.lock.queue_row(), self.column()));
        }
        self.state = State::ReadingHead;
        Step::store(L7_READ_HEAD, read_first(self.lock.queue_row(), 1))
    }

    fn held(&mut self, tag: StepTag, main_at_us: u64) -> Step<Acquire> {
        self.state = State::Finished;
        let column = self.column();
        let lease = LeaseCells {
            lock: self.lock.clone(),
            thread: self.thread.clone(),
            queue_column: Some(column.clone()),
            main_written_at_us: main_at_us,
        };
        Step::done(
            tag,
            Acquire::Acquired {
                lease,
                token: FencingToken(column),
            },
        )
    }
}

impl QueueTryGetLock {
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
                self.state = State::CheckingMain;
                Step::store(L7_CHECK_MAIN, read_first(self.lock.main_row(), 1))
            }
            (State::CheckingMain, Input::Reply(StoreReply::Slice(cells))) => {
                if !cells.is_empty() {
                    return Step::done(L7_TAKEN, Acquire::NotAcquired);
                }
                self.state = State::ReadingTime;
                Step::new(L5_READ_TIME, Action::ReadTime)
            }
            (State::ReadingTime, Input::Time(time_us)) => {
                self.column = Some(queue_column(time_us, &self.thread));
                self.state = State::WritingQueue;
                Step::store(
                    L7_ENQUEUE,
                    write_own_cell(config, self.lock.queue_row(), self.column(), &self.thread),
                )
            }
            (State::WritingQueue, Input::Reply(StoreReply::Done)) => self.read_head(now_us),
            (State::ReadingHead, Input::Reply(StoreReply::Slice(cells))) => {
                if cells.first().is_some_and(|head| head.column == self.column()) {
                    self.state = State::WritingMain { at_us: now_us };
                    let command = write_own_cell(
                        config,
                        self.lock.main_row(),
                        self.thread.as_str().to_owned(),
                        &self.thread,
                    );
                    Step::store(L7_WRITE_MAIN, command)
                } else {
                    self.state = State::Leaving { timed_out: false };
                    Step::store(L7_LEAVE, delete_own_cell(self.lock.queue_row(), self.column()))
                }
            }
            (State::WritingMain { at_us }, Input::Reply(StoreReply::Done)) => {
                if config.mutants.m1_skip_main_check && !lease_outlived(config, at_us, now_us) {
                    return self.held(M1_HELD, at_us);
                }
                self.state = State::ReadingMain { main_at_us: at_us };
                Step::store(L7_READ_MAIN, read_first(self.lock.main_row(), 2))
            }
            (State::ReadingMain { main_at_us }, Input::Reply(reply)) => {
                let alone = is_only(&reply, self.thread.as_str());
                if alone && !lease_outlived(config, main_at_us, now_us) {
                    self.held(L7_HELD, main_at_us)
                } else {
                    self.state = State::DeletingMain;
                    Step::store(
                        if alone { SLOW_ACQUISITION } else { L7_DELETE_MAIN },
                        delete_own_cell(self.lock.main_row(), self.thread.as_str().to_owned()),
                    )
                }
            }
            (State::DeletingMain, Input::Reply(StoreReply::Done)) => {
                if config.fixes.try_bounded_loop && self.turns >= config.try_turns {
                    self.state = State::Leaving { timed_out: false };
                    return Step::store(TRY_TURNS_USED, delete_own_cell(self.lock.queue_row(), self.column()));
                }
                self.turns = self.turns.saturating_add(1);
                self.state = State::Polling;
                Step::new(
                    L7_LOOP_WAIT,
                    Action::Sleep {
                        // Ours (C-wait): never past the deadline.
                        ms: sleep_until_deadline_ms(config.poll_ms, self.deadline_us, now_us),
                        kind: SleepKind::Poll,
                    },
                )
            }
            (State::Polling, Input::Woke) => self.read_head(now_us),
            (State::Leaving { timed_out }, Input::Reply(StoreReply::Done)) => {
                if timed_out {
                    Step::done(TIMED_OUT, Acquire::TimedOut)
                } else {
                    Step::done(L7_NOT_ACQUIRED, Acquire::NotAcquired)
                }
            }
            (state, input) => panic!("TryGetLock: input {input:?} does not answer state {state:?}"),
        }
    }
}

impl Machine for QueueTryGetLock {
    type Config = LockConfig;
    type Output = Acquire;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<Acquire> {
        super::resume_checked(
            "TryGetLock",
            self,
            |machine| machine.state == State::Finished,
            Self::advance,
            (config, input, now_us),
        )
    }

    fn contending(&self) -> bool {
        matches!(
            self.state,
            State::WritingMain { .. } | State::ReadingMain { .. } | State::DeletingMain
        )
    }
}

/// Reduction 7 of the lock models: our column.
impl crate::algo::held_columns::HeldColumns for QueueTryGetLock {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        self.column.see_columns(see)
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        self.column.rename_columns(rename)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::queue_column::ClientId;
    use crate::algo::testkit::Bench;

    fn thread(name: &str) -> ThreadId {
        ClientId::new(name).unwrap().thread(1)
    }

    fn machine() -> QueueTryGetLock {
        QueueTryGetLock::new(LockId::new("L").unwrap(), thread("a"))
    }

    #[test]
    fn l7_free_lock_is_taken() {
        let mut bench = Bench::new(LockConfig::untimed());
        assert!(bench.run(&mut machine()).is_acquired());
        assert_eq!(bench.steps(), ["L7.1", "L5.1", "L7.3", "L7.4", "L7.5", "L7.6", "L7.7"]);
    }

    #[test]
    fn l7_2_a_taken_main_row_returns_false_without_enqueueing() {
        let mut bench = Bench::new(LockConfig::untimed());
        let other = thread("b");
        bench.execute(write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        let outcome = bench.run(&mut machine());
        assert_eq!(outcome, Acquire::NotAcquired);
        assert!(!outcome.is_acquired(), "a refusal is not an acquisition");
        assert_eq!(bench.steps(), ["L7.1", "L7.2"]);
        assert!(bench.live_columns("q:L").is_empty());
    }

    #[test]
    fn l7_12_not_first_leaves_the_queue_and_returns_false() {
        let mut bench = Bench::new(LockConfig::untimed());
        let other = thread("b");
        let head = queue_column(5, &other);
        bench.execute(write_own_cell(&bench.config, "q:L".into(), head.clone(), &other));
        assert_eq!(bench.run(&mut machine()), Acquire::NotAcquired);
        assert_eq!(bench.steps(), ["L7.1", "L5.1", "L7.3", "L7.4", "L7.12", "L7.13"]);
        assert_eq!(bench.live_columns("q:L"), [head], "our queue cell is gone");
    }

    /// Another cell that stays in the main row (an owner whose queue cell sorts after ours):
    /// the listing loops until it goes; the fix gives up after `try_turns` turns. Returns the
    /// outcome and the queue row after it, or `None` if it was still looping after 50 turns.
    fn loop_against_a_cell_that_stays(config: LockConfig) -> Option<(Acquire, Vec<String>)> {
        let mut bench = Bench::new(config);
        let mut try_lock = machine();
        let step = bench.run_until(&mut try_lock, Input::Start, |step| step.tag == L7_WRITE_MAIN);
        let other = thread("b");
        bench.execute(write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        let Action::Store(write) = step.action else { panic!() };
        let mut input = Input::Reply(bench.execute(write));
        for _ in 0..50 {
            let step = bench.run_until(&mut try_lock, input, |step| step.tag == L7_LOOP_WAIT);
            if let Action::Done(outcome) = step.action {
                return Some((outcome, bench.live_columns("q:L")));
            }
            input = Input::Woke;
        }
        None
    }

    #[test]
    fn c_try_the_fix_gives_up_after_its_turns_the_listing_loops_on() {
        let config = LockConfig::untimed();
        let (outcome, queue) = loop_against_a_cell_that_stays(config.clone()).expect("the fix ends the loop");
        assert_eq!(outcome, Acquire::NotAcquired);
        assert!(queue.is_empty(), "it left the queue");
        let thesis = LockConfig {
            fixes: crate::algo::Fixes::THESIS,
            ..config
        };
        assert_eq!(
            loop_against_a_cell_that_stays(thesis),
            None,
            "the listing was still looping after 50 turns"
        );
    }

    #[test]
    fn l7_9_first_but_not_alone_loops_until_the_main_row_clears() {
        let mut bench = Bench::new(LockConfig::untimed());
        let mut try_lock = machine();
        let step = bench.run_until(&mut try_lock, Input::Start, |step| step.tag == L7_WRITE_MAIN);
        let other = thread("b");
        bench.execute(write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        let Action::Store(write) = step.action else { panic!() };
        let reply = bench.execute(write);
        let step = bench.run_until(&mut try_lock, Input::Reply(reply), |step| step.tag == L7_LOOP_WAIT);
        assert!(bench
            .steps()
            .ends_with(&["L7.5".to_owned(), "L7.6".to_owned(), "L7.9".to_owned()]));
        assert!(matches!(step.action, Action::Sleep { .. }));
        bench.execute(delete_own_cell("m:L".into(), other.as_str().into()));
        let done = bench.run_until(&mut try_lock, Input::Woke, |_| false);
        assert!(
            matches!(done.action, Action::Done(Acquire::Acquired { .. })),
            "L7.10: back to 4, then true"
        );
    }

    #[test]
    fn m1_mutant_skips_the_main_row_check() {
        let mut bench = Bench::new(LockConfig::untimed());
        bench.config.mutants.m1_skip_main_check = true;
        let mut try_lock = machine();
        let step = bench.run_until(&mut try_lock, Input::Start, |step| step.tag == L7_WRITE_MAIN);
        let other = thread("b");
        bench.execute(write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        let Action::Store(write) = step.action else { panic!() };
        let reply = bench.execute(write);
        let done = bench.run_until(&mut try_lock, Input::Reply(reply), |_| false);
        assert!(matches!(done.action, Action::Done(Acquire::Acquired { .. })));
        assert_eq!(bench.live_columns("m:L"), ["a:1", "b:1"]);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "resumed with Failed(Timeout) after it finished")]
    fn a_finished_machine_is_never_resumed_in_debug_builds() {
        let mut bench = Bench::new(LockConfig::untimed());
        let mut try_lock = machine();
        assert!(bench.run(&mut try_lock).is_acquired());
        try_lock.resume(&bench.config, Input::Failed(crate::store::StoreFailure::Timeout), 0);
    }

    #[test]
    fn max_wait_ends_the_step_10_loop() {
        let mut bench = Bench::new(LockConfig {
            max_wait_ms: Some(1000),
            // More turns than a second of polls: the deadline ends the loop.
            try_turns: 100,
            ..LockConfig::untimed()
        });
        let mut try_lock = machine();
        let step = bench.run_until(&mut try_lock, Input::Start, |step| step.tag == L7_WRITE_MAIN);
        let other = thread("b");
        bench.execute(write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        let Action::Store(write) = step.action else { panic!() };
        let reply = bench.execute(write);
        let done = bench.run_until(&mut try_lock, Input::Reply(reply), |_| false);
        assert_eq!(done.action, Action::Done(Acquire::TimedOut));
        assert!(bench.live_columns("q:L").is_empty());
    }
}
