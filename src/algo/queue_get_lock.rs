//! Listing 6: GetLock over a queue row and a main row (the thesis's new algorithm).
//!
//! 1. Enqueue: read the time source and write our cell to the queue row under the Listing 5
//!    name (time, then thread id).
//! 2. Read the first cell of the queue row.
//!    - If it is ours: (3) write our cell (column = thread id) to the main row and (4) read
//!      the main row. If our cell is alone there (5–6) the lock is held. Otherwise (7) delete
//!      our main cell and (8) go back to 2.
//!    - Otherwise (9–10) go back to 2.
//!
//! Two threads first in the queue at once (one enqueued late, with an earlier time) both
//! write the main row; Lemma 1 says at least one sees both cells, so at most one keeps its
//! cell: Theorem 1. A thread that stays enqueued becomes first once the threads ahead of it
//! leave, provided nobody can keep enqueueing ahead of it: Theorem 2, which therefore needs a
//! time source that does not run backwards.
//!
//! Ours, beyond the listing (each tagged [`Source::Ours`]):
//! - both "go back to 2" branches wait one poll interval first (the listing spins on the
//!   store);
//! - a waiter rewrites its queue cell every renewal interval, so that a wait longer than the
//!   TTL does not silently drop it from the queue (the thesis renews only while held);
//! - if the queue head sorts after our column, or the queue is empty, our own cell is gone
//!   (expired, or lost to a failed write): we write it again under the same name;
//! - with `max_wait_ms`, a waiter gives up and deletes its queue cell.
//!
//! Mutant M1 ([`crate::algo::Mutants::m1_skip_main_check`]) skips step 4: the first thread in
//! the queue writes its main cell and takes the lock without reading the main row.

use super::queue_column::queue_column;
use super::SLOW_ACQUISITION;
use super::{
    deadline_after, delete_own_cell, is_only, lease_outlived, read_first, write_own_cell, Acquire, Action,
    FencingToken, Input, LeaseCells, Leftover, LockConfig, LockId, Machine, SleepKind, Source, Step, StepTag, ThreadId,
};
use crate::store::{StoreCommand, StoreReply};

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum State {
    Idle,
    /// L5.1 asked the time source.
    ReadingTime,
    /// L6.1 (or our refresh / re-enqueue) sent.
    WritingQueue,
    /// L6.2 sent.
    ReadingHead,
    /// L6.3 sent, at this client time.
    WritingMain {
        at_us: u64,
    },
    /// L6.4 sent.
    ReadingMain {
        main_at_us: u64,
    },
    /// L6.7 sent.
    DeletingMain,
    /// Waiting a poll interval before going back to L6.2.
    Polling,
    /// Ours: max wait ran out; deleting our queue cell.
    Leaving,
    Finished,
}

/// Listing 6 as a machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueGetLock {
    lock: LockId,
    thread: ThreadId,
    /// Our Listing 5 column, once the time was read.
    column: Option<String>,
    /// Client time of the last write of our queue cell (tracked only when cells have a TTL).
    queue_written_at_us: u64,
    state: State,
    deadline_us: Option<u64>,
}

const L5_READ_TIME: StepTag = StepTag::new(Source::L5, 1, "read the time for the queue column");
pub(crate) const L6_ENQUEUE: StepTag = StepTag::new(Source::L6, 1, "write own cell to the queue row");
const L6_READ_HEAD: StepTag = StepTag::new(Source::L6, 2, "read the head of the queue");
const L6_WRITE_MAIN: StepTag = StepTag::new(Source::L6, 3, "first in the queue: write own cell to the main row");
const L6_READ_MAIN: StepTag = StepTag::new(Source::L6, 4, "read the main row");
const L6_HELD: StepTag = StepTag::new(Source::L6, 6, "own cell alone in the main row: the lock is held");
const L6_DELETE_MAIN: StepTag = StepTag::new(Source::L6, 7, "not alone in the main row: delete own main cell");
const L6_NOT_FIRST: StepTag = StepTag::new(Source::L6, 10, "not first in the queue: wait a poll interval");
const NEXT_IN_LINE: StepTag = StepTag::new(
    Source::Ours,
    0,
    "next in line (second in the queue): wait the short next-in-line poll",
);
const AFTER_DELETE_WAIT: StepTag = StepTag::new(Source::Ours, 0, "wait a poll interval before L6.2 again");
const M1_HELD: StepTag = StepTag::new(
    Source::Ours,
    0,
    "MUTANT M1: first in the queue, taken without reading the main row",
);
const REFRESH: StepTag = StepTag::new(
    Source::Ours,
    0,
    "rewrite own waiting queue cell before its TTL runs out",
);
const REENQUEUE: StepTag = StepTag::new(Source::Ours, 0, "own queue cell is gone: write it again");
const GIVE_UP_LEAVE: StepTag = StepTag::new(Source::Ours, 0, "max wait ran out: delete own queue cell");
const TIMED_OUT: StepTag = StepTag::new(Source::Ours, 0, "max wait ran out: not acquired");
const GAVE_UP: StepTag = StepTag::new(Source::Ours, 0, "the store kept failing: give up");

impl QueueGetLock {
    pub fn new(lock: LockId, thread: ThreadId) -> Self {
        QueueGetLock {
            lock,
            thread,
            column: None,
            queue_written_at_us: 0,
            state: State::Idle,
            deadline_us: None,
        }
    }

    pub fn thread(&self) -> &ThreadId {
        &self.thread
    }

    /// Our queue column, once the time has been read.
    pub fn queue_column(&self) -> Option<&str> {
        self.column.as_deref()
    }

    fn column(&self) -> String {
        self.column
            .clone()
            .expect("the queue column is named before it is used")
    }

    fn write_queue_cell(&mut self, config: &LockConfig, tag: StepTag, now_us: u64) -> Step<Acquire> {
        if config.ttl_s.is_some() {
            self.queue_written_at_us = now_us;
        }
        self.state = State::WritingQueue;
        Step::store(
            tag,
            write_own_cell(config, self.lock.queue_row(), self.column(), &self.thread),
        )
    }

    fn refresh_due(&self, config: &LockConfig, now_us: u64) -> bool {
        config.ttl_s.is_some()
            && now_us
                >= self
                    .queue_written_at_us
                    .saturating_add(config.renew_every_ms.saturating_mul(1000))
    }

    /// The top of the L6.2 loop.
    fn loop_top(&mut self, config: &LockConfig, now_us: u64) -> Step<Acquire> {
        if self.deadline_us.is_some_and(|deadline| now_us >= deadline) {
            self.state = State::Leaving;
            return Step::store(GIVE_UP_LEAVE, delete_own_cell(self.lock.queue_row(), self.column()));
        }
        if self.refresh_due(config, now_us) {
            return self.write_queue_cell(config, REFRESH, now_us);
        }
        self.state = State::ReadingHead;
        // With a next-in-line poll, two cells: the head, and whether we are right behind it.
        let cells = if config.next_poll_ms.is_some() { 2 } else { 1 };
        Step::store(L6_READ_HEAD, read_first(self.lock.queue_row(), cells))
    }

    fn poll(&mut self, config: &LockConfig, tag: StepTag) -> Step<Acquire> {
        self.poll_for(config.poll_ms, tag)
    }

    fn poll_for(&mut self, ms: u64, tag: StepTag) -> Step<Acquire> {
        self.state = State::Polling;
        Step::new(
            tag,
            Action::Sleep {
                ms,
                kind: SleepKind::Poll,
            },
        )
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

    fn main_command(&self, config: &LockConfig) -> StoreCommand {
        write_own_cell(
            config,
            self.lock.main_row(),
            self.thread.as_str().to_owned(),
            &self.thread,
        )
    }
}

impl QueueGetLock {
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
                self.state = State::ReadingTime;
                Step::new(L5_READ_TIME, Action::ReadTime)
            }
            (State::ReadingTime, Input::Time(time_us)) => {
                // L5.2–3, then L6.1.
                self.column = Some(queue_column(time_us, &self.thread));
                self.write_queue_cell(config, L6_ENQUEUE, now_us)
            }
            (State::WritingQueue, Input::Reply(StoreReply::Done)) => self.loop_top(config, now_us),
            (State::ReadingHead, Input::Reply(StoreReply::Slice(cells))) => {
                let column = self.column();
                match cells.first() {
                    Some(head) if head.column == column => {
                        self.state = State::WritingMain { at_us: now_us };
                        Step::store(L6_WRITE_MAIN, self.main_command(config))
                    }
                    Some(head) if head.column < column => match config.next_poll_ms {
                        Some(ms) if cells.get(1).is_some_and(|second| second.column == column) => {
                            self.poll_for(ms, NEXT_IN_LINE)
                        }
                        _ => self.poll(config, L6_NOT_FIRST),
                    },
                    _ => self.write_queue_cell(config, REENQUEUE, now_us),
                }
            }
            (State::WritingMain { at_us }, Input::Reply(StoreReply::Done)) => {
                if config.mutants.m1_skip_main_check && !lease_outlived(config, at_us, now_us) {
                    return self.held(M1_HELD, at_us);
                }
                self.state = State::ReadingMain { main_at_us: at_us };
                Step::store(L6_READ_MAIN, read_first(self.lock.main_row(), 2))
            }
            (State::ReadingMain { main_at_us }, Input::Reply(reply)) => {
                let alone = is_only(&reply, self.thread.as_str());
                if alone && !lease_outlived(config, main_at_us, now_us) {
                    self.held(L6_HELD, main_at_us)
                } else {
                    self.state = State::DeletingMain;
                    Step::store(
                        if alone { SLOW_ACQUISITION } else { L6_DELETE_MAIN },
                        delete_own_cell(self.lock.main_row(), self.thread.as_str().to_owned()),
                    )
                }
            }
            (State::DeletingMain, Input::Reply(StoreReply::Done)) => self.poll(config, AFTER_DELETE_WAIT),
            (State::Polling, Input::Woke) => self.loop_top(config, now_us),
            (State::Leaving, Input::Reply(StoreReply::Done)) => Step::done(TIMED_OUT, Acquire::TimedOut),
            (state, input) => {
                panic!("queue GetLock: input {input:?} does not answer state {state:?}")
            }
        }
    }
}

impl Machine for QueueGetLock {
    type Config = LockConfig;
    type Output = Acquire;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<Acquire> {
        super::resume_checked(
            "queue GetLock",
            self,
            |machine| machine.state == State::Finished,
            Self::advance,
            (config, input, now_us),
        )
    }

    fn urgent(&self, config: &LockConfig, now_us: u64) -> bool {
        !matches!(self.state, State::Idle | State::ReadingTime | State::Finished) && self.refresh_due(config, now_us)
    }

    fn contending(&self) -> bool {
        matches!(
            self.state,
            State::WritingMain { .. } | State::ReadingMain { .. } | State::DeletingMain
        )
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

    fn machine() -> QueueGetLock {
        QueueGetLock::new(LockId::new("L").unwrap(), thread("a"))
    }

    fn enqueue(bench: &mut Bench, time_us: u64, who: &ThreadId) -> String {
        let column = queue_column(time_us, who);
        bench.execute(write_own_cell(&bench.config, "q:L".into(), column.clone(), who));
        column
    }

    #[test]
    fn l6_first_in_an_empty_queue_takes_the_lock() {
        let mut bench = Bench::new(LockConfig::untimed());
        let Acquire::Acquired { lease, token } = bench.run(&mut machine()) else {
            panic!()
        };
        assert_eq!(bench.steps(), ["L5.1", "L6.1", "L6.2", "L6.3", "L6.4", "L6.6"]);
        let column = queue_column(1_000_000, &thread("a"));
        assert_eq!(token.as_str(), column, "the token is the L5 queue column");
        assert_eq!(lease.queue_column.as_deref(), Some(column.as_str()));
        assert_eq!(bench.live_columns("q:L"), [column]);
        assert_eq!(bench.live_columns("m:L"), ["a:1"]);
    }

    #[test]
    fn l6_10_a_waiter_polls_until_the_head_leaves() {
        let mut bench = Bench::new(LockConfig::untimed());
        let first = thread("b");
        let head = enqueue(&mut bench, 5, &first);
        let mut queue = machine();
        let polls = |bench: &Bench| bench.steps().iter().filter(|s| *s == "L6.10").count();
        let mut step = bench.run_until(&mut queue, Input::Start, |step| step.tag == L6_NOT_FIRST);
        for _ in 0..3 {
            step = bench.run_until(&mut queue, Input::Woke, |step| step.tag == L6_NOT_FIRST);
        }
        assert_eq!(polls(&bench), 4);
        assert_eq!(
            step.action,
            Action::Sleep {
                ms: 100,
                kind: SleepKind::Poll
            }
        );
        bench.execute(delete_own_cell("q:L".into(), head));
        let done = bench.run_until(&mut queue, Input::Woke, |_| false);
        assert!(matches!(done.action, Action::Done(Acquire::Acquired { .. })));
    }

    /// Issue 15's next-in-line poll: second in the queue sleeps the short interval, third the
    /// listing's; one read of two cells says which.
    #[test]
    fn the_waiter_next_in_line_polls_at_the_short_interval_and_the_others_at_the_listing_s() {
        let config = LockConfig {
            next_poll_ms: Some(5),
            ..LockConfig::untimed()
        };
        let mut bench = Bench::new(config);
        let head = enqueue(&mut bench, 5, &thread("b"));
        let mut next = machine();
        let is_sleep = |step: &Step<Acquire>| matches!(step.action, Action::Sleep { .. });
        let read = bench.run_until(&mut next, Input::Start, |step| step.tag == L6_READ_HEAD);
        assert_eq!(
            read.action,
            Action::Store(read_first("q:L".into(), 2)),
            "the head and the one behind it"
        );
        let Action::Store(command) = read.action else {
            unreachable!()
        };
        let reply = bench.execute(command);
        let step = bench.run_until(&mut next, Input::Reply(reply), is_sleep);
        assert_eq!(step.tag, NEXT_IN_LINE);
        assert_eq!(
            step.action,
            Action::Sleep {
                ms: 5,
                kind: SleepKind::Poll
            }
        );
        // Someone enqueued ahead of us (an earlier time): now third, the listing's interval.
        let ahead = enqueue(&mut bench, 6, &thread("c"));
        let step = bench.run_until(&mut next, Input::Woke, is_sleep);
        assert_eq!(step.tag, L6_NOT_FIRST);
        assert!(matches!(step.action, Action::Sleep { ms: 100, .. }));
        bench.execute(delete_own_cell("q:L".into(), head));
        bench.execute(delete_own_cell("q:L".into(), ahead));
        let done = bench.run_until(&mut next, Input::Woke, |_| false);
        assert!(matches!(done.action, Action::Done(Acquire::Acquired { .. })));
    }

    #[test]
    fn l6_7_first_but_not_alone_in_the_main_row_deletes_and_retries() {
        let mut bench = Bench::new(LockConfig::untimed());
        let other = thread("b");
        bench.execute(write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        let mut queue = machine();
        let step = bench.run_until(&mut queue, Input::Start, |step| step.tag == AFTER_DELETE_WAIT);
        assert_eq!(bench.steps(), ["L5.1", "L6.1", "L6.2", "L6.3", "L6.4", "L6.7"]);
        assert_eq!(bench.live_columns("m:L"), ["b:1"], "L6.7 removed our main cell");
        assert!(matches!(
            step.action,
            Action::Sleep {
                kind: SleepKind::Poll,
                ..
            }
        ));
        bench.execute(delete_own_cell("m:L".into(), other.as_str().into()));
        let done = bench.run_until(&mut queue, Input::Woke, |_| false);
        assert!(
            matches!(done.action, Action::Done(Acquire::Acquired { .. })),
            "L6.8: back to 2, then held"
        );
    }

    #[test]
    fn m1_mutant_takes_the_lock_without_reading_the_main_row() {
        let mut bench = Bench::new(LockConfig::untimed());
        bench.config.mutants.m1_skip_main_check = true;
        let other = thread("b");
        bench.execute(write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        assert!(bench.run(&mut machine()).is_acquired(), "M1 ignores b's main cell");
        assert_eq!(
            bench.live_columns("m:L"),
            ["a:1", "b:1"],
            "two holders' cells: T1 is broken"
        );
        assert!(bench.tags.contains(&M1_HELD));
    }

    #[test]
    fn a_waiter_refreshes_its_queue_cell_and_rewrites_it_if_gone() {
        let mut bench = Bench::new(LockConfig {
            ttl_s: Some(4),
            renew_every_ms: 2000,
            poll_ms: 500,
            ..LockConfig::default()
        });
        let head = enqueue(&mut bench, 5, &thread("b"));
        let mut queue = machine();
        let mut input = Input::Start;
        for _ in 0..20 {
            // Keep b's head cell alive, as b's renewal would.
            bench.execute(write_own_cell(&bench.config, "q:L".into(), head.clone(), &thread("b")));
            let step = bench.run_until(&mut queue, input, |step| step.tag == L6_NOT_FIRST);
            assert_eq!(
                step.action,
                Action::Sleep {
                    ms: 500,
                    kind: SleepKind::Poll
                }
            );
            bench.now_us += 500_000;
            input = Input::Woke;
        }
        assert!(
            bench.tags.contains(&REFRESH),
            "refreshed while waiting 10 s with a 4 s TTL"
        );
        let ours = queue.queue_column().unwrap().to_owned();
        assert!(
            bench.live_columns("q:L").contains(&ours),
            "still enqueued after 2.5 TTLs"
        );
    }

    #[test]
    fn a_waiter_whose_queue_cell_vanished_writes_it_again() {
        let mut bench = Bench::new(LockConfig::untimed());
        let head = enqueue(&mut bench, 5, &thread("b"));
        let mut queue = machine();
        bench.run_until(&mut queue, Input::Start, |step| step.tag == L6_NOT_FIRST);
        // Our cell is deleted behind our back (as an expiry would), and the head leaves.
        let ours = queue.queue_column().unwrap().to_owned();
        bench.execute(delete_own_cell("q:L".into(), ours.clone()));
        bench.execute(delete_own_cell("q:L".into(), head));
        bench.now_us += 1;
        let done = bench.run_until(&mut queue, Input::Woke, |_| false);
        assert!(bench.tags.contains(&REENQUEUE));
        assert!(matches!(done.action, Action::Done(Acquire::Acquired { .. })));
        assert_eq!(bench.live_columns("q:L"), [ours], "the same column, written again");
    }

    #[test]
    fn max_wait_deletes_the_queue_cell_and_times_out() {
        let mut bench = Bench::new(LockConfig {
            max_wait_ms: Some(1000),
            ..LockConfig::untimed()
        });
        enqueue(&mut bench, 5, &thread("b"));
        assert_eq!(bench.run(&mut machine()), Acquire::TimedOut);
        assert_eq!(bench.live_columns("q:L").len(), 1, "only b is left in the queue");
        assert!(bench.tags.contains(&GIVE_UP_LEAVE));
    }

    #[test]
    fn urgent_only_while_waiting_with_a_refresh_due() {
        let config = LockConfig {
            ttl_s: Some(4),
            renew_every_ms: 2000,
            ..LockConfig::default()
        };
        let mut queue = machine();
        assert!(!queue.urgent(&config, 10_000_000));
        queue.resume(&config, Input::Start, 0);
        queue.resume(&config, Input::Time(0), 0);
        assert!(!queue.urgent(&config, 1_999_999));
        assert!(queue.urgent(&config, 2_000_000));
        assert!(!queue.urgent(&LockConfig::untimed(), 9_000_000));
    }

    #[test]
    fn a_success_a_whole_ttl_after_the_main_write_is_not_trusted() {
        let mut bench = Bench::new(LockConfig {
            ttl_s: Some(4),
            renew_every_ms: 2000,
            ..LockConfig::default()
        });
        let mut queue = machine();
        bench.run_until(&mut queue, Input::Start, |step| step.tag == L6_READ_MAIN);
        // The read saw our cell alone (it ran just before expiry), but the answer arrives a
        // whole TTL after we wrote the cell.
        bench.now_us += 4_000_000;
        let step = queue.resume(
            &bench.config,
            Input::Reply(StoreReply::Slice(vec![crate::store::LiveCell {
                column: "a:1".into(),
                value: "a:1".into(),
                timestamp_us: 1,
            }])),
            bench.now_us,
        );
        assert_eq!(step.tag, SLOW_ACQUISITION);
    }
}
