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
//!   TTL does not silently drop it from the queue (the thesis renews only while held); every
//!   such rewrite is followed by a read of the head, so a renewal interval shorter than a
//!   write's round trip slows a waiter down but never starves it of that read (T2);
//! - if the queue head sorts after our column, or the queue is empty, our own cell is gone
//!   (expired, or lost to a failed write): we write it again under the same name;
//! - with `max_wait_ms`, a waiter gives up and deletes its queue cell;
//! - with `next_poll_ms`, the waiter next in line sleeps that instead of `poll_ms`,
//!   and with `paced_poll` too every waiter sleeps by its rank and the queue's pace (`Pace`).
//!   Only how long a waiter sleeps changes: what it does after waking is the listing's, so
//!   T1 and the queue order do not rest on these sleeps (the model checks them as they are).
//!
//! Mutant M1 ([`crate::algo::Mutants::m1_skip_main_check`]) skips step 4: the first thread in
//! the queue writes its main cell and takes the lock without reading the main row.

use super::queue_column::{parse_queue_column, queue_column};
use super::SLOW_ACQUISITION;
use super::{
    deadline_after, delete_own_cell, is_only, lease_outlived, read_first, read_from, sleep_until_deadline_ms,
    write_own_cell, Acquire, Action, FencingToken, Input, LeaseCells, Leftover, LockConfig, LockId, Machine, SleepKind,
    Source, Step, StepTag, ThreadId,
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

/// Ours (`paced_poll`): how many queue cells a paced waiter reads to learn its
/// rank. A waiter further back counts itself at this rank (a lower bound), which only makes
/// it think the queue faster than it is and wake earlier.
pub const PACE_READ_CELLS: u32 = 32;

/// Ours (`paced_poll`): a paced sleep is at most this many `poll_ms`, so a waiter
/// whose estimate is stale (the queue stalled, or sped up) still reads the queue now and then.
pub const PACE_MAX_POLLS: u64 = 10;

/// The longest a GetLock waiter sleeps between two reads of the queue: `poll_ms`, the
/// next-in-line poll if longer, and with `paced_poll` [`PACE_MAX_POLLS`] polls. How late a
/// waiter may notice that the lock fell free (the contract's C-release hand-over bound).
pub fn longest_poll_ms(config: &LockConfig) -> u64 {
    let longest_ms = config.poll_ms.max(config.next_poll_ms.unwrap_or(0));
    if config.paced_poll && config.next_poll_ms.is_some() {
        longest_ms.max(config.poll_ms.saturating_mul(PACE_MAX_POLLS))
    } else {
        longest_ms
    }
}

/// Ours (`paced_poll`): what a waiter has learnt of the queue's pace from its own
/// reads, all on its own clock.
///
/// - One handoff (a release and the next acquisition) takes `h`, estimated as the time since
///   the waiter's first read divided by the number of cells that left ahead of it since: a
///   whole wait's average, not one interval's (one short interval with one handoff in it
///   would say the queue is as fast as the poll).
/// - The last handoff happened at `d`, estimated when a read finds fewer cells ahead than the
///   one before it (at `t_prev`): somewhere in `(max(t_prev, t - h), t]`; we take the start,
///   the earliest, so that an error makes the waiter read early (a request) rather than late
///   (the whole queue waiting for a head that sleeps).
/// - Handoffs go on at that pace: a waiter at rank r (r cells ahead) is next in line at
///   `d + (r - 1) h` and first at `d + r h`.
///
/// The sleeps: at rank r >= 2, until `d + (r - 1) h`, when it should be next in line, but
/// never longer than the waiter has watched the queue so far (one early handoff says little
/// of the pace, and a waiter that wakes past its turn stalls everyone behind it; past
/// `d + (r - 1) h` the queue is slower than its average: one handoff, `h`, at most
/// `poll_ms`, since it may be next in line any moment now); next in line, half
/// the time left until `d + h`, so that it reads about log2(h / next_poll_ms) times rather
/// than h / next_poll_ms and is late by at most about its last sleep. Before any cell has
/// left ahead of it: next in line, `next_poll_ms`; further back, `r - 1` times the mean gap
/// between the enqueue times of the waiters behind the head and ours (their queue columns'
/// times: a busy queue takes waiters in about as fast as it hands over), at most `poll_ms`
/// (found on the real cluster at 4 lockers, 2026-11-28: with `poll_ms` there a waiter two
/// handoffs from its turn slept through it; 32 acquisitions/s before, 44-48 after). Every sleep is at least
/// `next_poll_ms` and at most [`PACE_MAX_POLLS`] x `poll_ms`, and no longer than `poll_ms`
/// past a deadline or a queue-cell refresh that falls due.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Pace {
    /// Rank and client time of this acquisition's first read of the queue.
    first: Option<(u32, u64)>,
    /// Rank and client time of the latest read.
    last: Option<(u32, u64)>,
    /// Estimated client time of the last handoff seen ahead of us.
    handoff_at_us: Option<u64>,
}

impl Pace {
    /// Record a read at `rank`; the sleep it asks for, microseconds (`None`: nothing known
    /// of the pace yet).
    fn sleep_us(&mut self, rank: u32, now_us: u64, poll_us: u64) -> Option<u64> {
        let (first_rank, first_at_us) = *self.first.get_or_insert((rank, now_us));
        let handoff_us = (first_rank > rank).then(|| now_us.saturating_sub(first_at_us) / u64::from(first_rank - rank));
        let previous = self.last.replace((rank, now_us));
        if let (Some(handoff_us), Some((last_rank, last_at_us))) = (handoff_us, previous) {
            if rank < last_rank {
                let from_us = last_at_us.max(now_us.saturating_sub(handoff_us));
                self.handoff_at_us = Some(from_us);
            }
        }
        let handoff_us = handoff_us?;
        let handoff_at_us = self.handoff_at_us?;
        if rank == 1 {
            let release_at_us = handoff_at_us.saturating_add(handoff_us);
            Some(release_at_us.saturating_sub(now_us) / 2)
        } else {
            let next_at_us = handoff_at_us.saturating_add(handoff_us.saturating_mul(u64::from(rank - 1)));
            // Overdue (the queue is slower than its average so far): read again after one
            // handoff, at most the listing's poll. Not the listing's poll itself: where
            // handoffs are quicker than a poll, an overdue waiter is about to be next in line
            // and would sleep through its turn, and everyone behind it would wait (measured on
            // the real cluster, 2026-11-28: 21 acquisitions/s with the listing's poll here, 40
            // with one handoff). And never further ahead than the waiter has watched the
            // queue: an estimate from one early handoff can be far off.
            let watched_us = now_us.saturating_sub(first_at_us);
            Some(
                next_at_us
                    .checked_sub(now_us)
                    .map_or(handoff_us.min(poll_us), |until_us| until_us.min(watched_us)),
            )
        }
    }
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
    pace: Pace,
    /// Ours (the long run): where L6.2 reads the queue from ("": the row's start,
    /// as the listing). Given, it is the queue column of this locker's last acquisition that
    /// held the lock ([`QueueGetLock::reading_the_queue_from`]), clamped to our own column.
    queue_from: String,
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
const PACED_BEHIND: StepTag = StepTag::new(
    Source::Ours,
    0,
    "paced: not next in line: sleep until the queue's pace says we will be",
);
const PACED_NEXT: StepTag = StepTag::new(
    Source::Ours,
    0,
    "paced: next in line: sleep half the holder's expected time left",
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
            pace: Pace::default(),
            queue_from: String::new(),
        }
    }

    /// Ours (the long run): read the queue from `start` (the queue column with which
    /// this locker last held the lock) instead of the row's start, so that a read does not
    /// walk past the tombstone of every acquisition before it. Below that column every cell
    /// had left when that acquisition took the lock; what can appear there later is a late
    /// enqueuer only (a slow clock, or a delay between reading the time and writing), which
    /// the listing lets overtake too. What keeps this sound: T1 never rested on the queue read
    /// (the main-row check, Lemma 1, does); the start is clamped to our own column, so we
    /// always see our own cell; and once the main row shows us another contender we read from
    /// the row's start again, so a late enqueuer ahead of us is seen and waited for (T2).
    pub fn reading_the_queue_from(mut self, start: Option<String>) -> Self {
        self.queue_from = start.unwrap_or_default();
        self
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

    /// The top of the L6.2 loop, after a poll: give up at the deadline, rewrite our queue cell
    /// if its refresh is due, else read the head.
    fn loop_top(&mut self, config: &LockConfig, now_us: u64) -> Step<Acquire> {
        if self.deadline_us.is_some_and(|deadline| now_us >= deadline) {
            return self.leave();
        }
        if self.refresh_due(config, now_us) {
            return self.write_queue_cell(config, REFRESH, now_us);
        }
        self.read_head(config)
    }

    /// After our queue cell was written (enqueued, refreshed or written again): give up at the
    /// deadline, else read the head, whether or not a refresh is due again by now. A refresh
    /// never follows a queue write directly: where the renewal interval is shorter than a
    /// write's round trip, every write would find the next refresh due and the waiter would
    /// rewrite its cell for ever without reading the head (a livelock, T2). So every queue
    /// write is followed by one read of the head, and a waiter makes progress at any interval.
    fn after_queue_write(&mut self, config: &LockConfig, now_us: u64) -> Step<Acquire> {
        if self.deadline_us.is_some_and(|deadline| now_us >= deadline) {
            return self.leave();
        }
        self.read_head(config)
    }

    fn leave(&mut self) -> Step<Acquire> {
        self.state = State::Leaving;
        Step::store(GIVE_UP_LEAVE, delete_own_cell(self.lock.queue_row(), self.column()))
    }

    /// L6.2: read the head of the queue.
    fn read_head(&mut self, config: &LockConfig) -> Step<Acquire> {
        self.state = State::ReadingHead;
        // With a next-in-line poll, two cells: the head, and whether we are right behind it;
        // paced, enough to know our rank.
        let cells = match config.next_poll_ms {
            Some(_) if config.paced_poll => PACE_READ_CELLS,
            Some(_) => 2,
            None => 1,
        };
        Step::store(
            L6_READ_HEAD,
            read_from(self.lock.queue_row(), self.queue_from.clone(), cells),
        )
    }

    fn poll(&mut self, config: &LockConfig, tag: StepTag, now_us: u64) -> Step<Acquire> {
        self.poll_for(config.poll_ms, tag, now_us)
    }

    fn poll_for(&mut self, ms: u64, tag: StepTag, now_us: u64) -> Step<Acquire> {
        self.state = State::Polling;
        Step::new(
            tag,
            Action::Sleep {
                // Ours (C-wait): never past the deadline.
                ms: sleep_until_deadline_ms(ms, self.deadline_us, now_us),
                kind: SleepKind::Poll,
            },
        )
    }

    /// Ours: a paced waiter's sleep at `rank` (cells ahead of ours, >= 1); see
    /// [`Pace`].
    ///
    /// `arrivals_us`: how far apart the waiters behind the head enqueued, on average (their
    /// columns' times, from the first waiter's to ours over the `rank - 1` cells between),
    /// the guess at the pace before any cell has left ahead of us.
    fn paced_poll(
        &mut self,
        config: &LockConfig,
        next_poll_ms: u64,
        rank: u32,
        arrivals_us: Option<u64>,
        now_us: u64,
    ) -> Step<Acquire> {
        debug_assert!(rank >= 1, "the head does not wait");
        let (tag, unknown_ms) = if rank == 1 {
            (PACED_NEXT, next_poll_ms)
        } else {
            // Nothing watched yet: a busy queue takes waiters in about as fast as it hands
            // the lock over, so we are next in line after about `rank - 1` such gaps; never
            // longer than the listing's poll (a sparse queue, or clocks that disagree, can only
            // make the guess long, and the poll is what the listing would sleep anyway).
            let guess_ms = arrivals_us.map_or(config.poll_ms, |us| us.saturating_mul(u64::from(rank - 1)) / 1000);
            (PACED_BEHIND, guess_ms.min(config.poll_ms))
        };
        let wanted_ms = self
            .pace
            .sleep_us(rank, now_us, config.poll_ms.saturating_mul(1000))
            .map_or(unknown_ms, |us| us / 1000);
        let longest_ms = longest_poll_ms(config);
        let mut ms = wanted_ms.clamp(next_poll_ms, longest_ms);
        // Never later past a deadline or a refresh than the listing's poll would be.
        let due_us = [
            self.deadline_us,
            config.ttl_s.map(|_| {
                self.queue_written_at_us
                    .saturating_add(config.renew_every_ms.saturating_mul(1000))
            }),
        ];
        for due_us in due_us.into_iter().flatten() {
            let until_ms = due_us.saturating_sub(now_us) / 1000;
            ms = ms.min(until_ms.max(config.poll_ms).max(next_poll_ms));
        }
        debug_assert!(ms >= next_poll_ms && ms <= longest_ms);
        self.poll_for(ms, tag, now_us)
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
                let column = queue_column(time_us, &self.thread);
                if self.queue_from > column {
                    // A start above our own column would hide our own cell.
                    self.queue_from = column.clone();
                }
                self.column = Some(column);
                self.write_queue_cell(config, L6_ENQUEUE, now_us)
            }
            (State::WritingQueue, Input::Reply(StoreReply::Done)) => self.after_queue_write(config, now_us),
            (State::ReadingHead, Input::Reply(StoreReply::Slice(cells))) => {
                let column = self.column();
                match cells.first() {
                    Some(head) if head.column == column => {
                        self.state = State::WritingMain { at_us: now_us };
                        Step::store(L6_WRITE_MAIN, self.main_command(config))
                    }
                    Some(head) if head.column < column => match config.next_poll_ms {
                        Some(next_ms) if config.paced_poll => {
                            // Cells ahead of ours; all that were read if ours was not among them.
                            let rank = cells.iter().take_while(|cell| cell.column < column).count();
                            let rank = u32::try_from(rank).unwrap_or(PACE_READ_CELLS);
                            // Not from the head: its column dates from before its hold, however
                            // long that has lasted.
                            let arrivals_us = cells
                                .get(1)
                                .filter(|_| rank >= 2)
                                .and_then(|first_waiter| parse_queue_column(&first_waiter.column))
                                .zip(parse_queue_column(&column))
                                .map(|((first_us, _), (own_us, _))| {
                                    own_us.saturating_sub(first_us) / u64::from(rank - 1)
                                });
                            self.paced_poll(config, next_ms, rank, arrivals_us, now_us)
                        }
                        Some(ms) if cells.get(1).is_some_and(|second| second.column == column) => {
                            self.poll_for(ms, NEXT_IN_LINE, now_us)
                        }
                        _ => self.poll(config, L6_NOT_FIRST, now_us),
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
                if !alone {
                    // Another contender in the main row: perhaps one ahead of us that our
                    // start hid. From here on, the listing's read from the row's start.
                    self.queue_from.clear();
                }
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
            (State::DeletingMain, Input::Reply(StoreReply::Done)) => self.poll(config, AFTER_DELETE_WAIT, now_us),
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

/// Reduction 7 of the lock models: our column and where we read the queue from.
impl crate::algo::held_columns::HeldColumns for QueueGetLock {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        self.column.see_columns(see);
        see(&self.queue_from);
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        self.column.rename_columns(rename);
        rename(&mut self.queue_from);
    }
}

#[cfg(test)]
mod tests;
