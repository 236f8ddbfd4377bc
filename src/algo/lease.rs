//! Section 5.3: leases — renewal while held, and release.
//!
//! Every lock cell is written with TTL N, so a holder that crashes loses the lock after N.
//! While the lock is held a background task rewrites the holder's cells (the queue cell and the
//! main cell; the old algorithm has only the main cell) every N/2. Release stops that task and
//! deletes the cells.
//!
//! **Release must wait for the renewal task to stop.** A renewal that has already decided to
//! rewrite, and stamps its write after the release's delete, brings the cell back (a later
//! timestamp beats the tombstone). The lock then stays taken by nobody until the TTL runs out:
//! K3. [`Release`] asks the driver to stop the task and *wait* for it; the mutant
//! [`crate::algo::Mutants::k3_release_without_waiting`] does not wait.
//!
//! Ours, beyond the thesis:
//! - before rewriting, renewal reads the main row from our column on. If our cell is no longer
//!   there, the lease was lost (expired while we were paused or cut off, and perhaps taken by
//!   another thread): renewal stops and reports it instead of writing our cell back next to
//!   the new holder's. The guard then tells its user the lock is lost.
//! - if renewal cannot write for a whole TTL (the store failing), or wakes up after the TTL
//!   has already passed since the main cell's last write, it reports the lease as expired.
//!   So does a rewrite whose reply comes a whole TTL after that write: the holder was paused
//!   between deciding to rewrite and writing, the cells may have expired meanwhile and the lock
//!   been taken, and the late write put a dead cell back beside the new holder's. The check
//!   looks for our own cell only, so it would find that cell and never learn (C-lost).
//! - the lease is timed from the *main* cell's write, not the queue cell's. An acquisition that
//!   waited long may hold a queue cell near (or past) its expiry; that is harmless while the
//!   main cell lives (a thread that becomes first meanwhile finds our main cell and backs off),
//!   and the first renewal rewrites it. Timing the lease from the queue cell instead made a
//!   slow TryGetLock start with a lease its renewal judged already lost (found by the model
//!   checker: `trygetlock --fault crash`).

use super::{
    delete_own_cell, write_own_cell, Action, Input, LeaseCells, LockConfig, Machine, SleepKind, Source, Step, StepTag,
};
use crate::store::{Stamp, StoreFailure, StoreOp, StoreReply};

/// The client time until which a lease is certainly still ours, if cells expire at all: one
/// TTL after the main cell's last write, less one second, because Cassandra fixes expiry in
/// whole seconds of the coordinator's clock (a cell written at 10.9 s with TTL 5 dies at 15 s).
/// Clock skew between this client and the coordinators eats into it further (S2).
pub fn lease_valid_until_us(config: &LockConfig, lease: &LeaseCells) -> Option<u64> {
    config.ttl_ms().map(|ttl_ms| {
        lease
            .main_written_at_us
            .saturating_add((ttl_ms * 1000).saturating_sub(crate::store::MICROS_PER_SECOND))
    })
}

/// Why a lease was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LeaseLost {
    /// Our main cell was gone when renewal checked it.
    MainCellGone,
    /// A whole TTL passed since our cells were last written.
    Expired,
}

/// How the renewal task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RenewalEnd {
    /// Release stopped it.
    Stopped,
    /// The lease is lost: the lock may belong to someone else now.
    Lost(LeaseLost),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum RenewalState {
    Idle,
    Sleeping,
    /// Ours: reading the main row from our column on.
    Checking,
    /// Rewriting the queue cell; the rewrite started at this client time.
    WritingQueue {
        started_us: u64,
    },
    /// Rewriting the main cell.
    WritingMain {
        started_us: u64,
    },
    Finished,
}

/// The renewal task (section 5.3).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Renewal {
    lease: LeaseCells,
    state: RenewalState,
}

const NOTHING_EXPIRES: StepTag = StepTag::new(Source::Lease, 0, "cells have no TTL: nothing to renew");
const SLEEP: StepTag = StepTag::new(Source::Lease, 0, "renewal: wait for the next rewrite");
const STOPPED: StepTag = StepTag::new(Source::Lease, 0, "renewal stopped by release");
const CHECK: StepTag = StepTag::new(Source::Ours, 0, "renewal: check own main cell is still there");
const REWRITE_QUEUE_UNCHECKED: StepTag = StepTag::new(
    Source::Ours,
    0,
    "MUTANT M2: renewal: rewrite own queue cell without checking",
);
const REWRITE_MAIN_UNCHECKED: StepTag = StepTag::new(
    Source::Ours,
    0,
    "MUTANT M2: renewal: rewrite own main cell without checking",
);
const REWRITE_QUEUE: StepTag = StepTag::new(Source::Lease, 0, "renewal: rewrite own queue cell");
const REWRITE_MAIN: StepTag = StepTag::new(Source::Lease, 0, "renewal: rewrite own main cell");

/// Is `tag` the renewal task's rewrite of its holder's main cell (mutant M2's too)? The
/// simulator's K3 oracle tells a released acquisition's late renewal from the next
/// acquisition's own main cell by it, when both go by one reused thread id.
pub fn is_renewal_main_rewrite(tag: StepTag) -> bool {
    tag == REWRITE_MAIN || tag == REWRITE_MAIN_UNCHECKED
}
const GONE: StepTag = StepTag::new(Source::Ours, 0, "own main cell is gone: the lease is lost");
const EXPIRED: StepTag = StepTag::new(
    Source::Ours,
    0,
    "a whole TTL passed since the last write: the lease is lost",
);
const LANDED_LATE: StepTag = StepTag::new(
    Source::Ours,
    0,
    "the rewrite landed a whole TTL after the last write: the cells may have expired first, the lease is lost",
);
const RETRY_LATER: StepTag = StepTag::new(Source::Ours, 0, "renewal failed: try again shortly");

/// Is `tag` a rewrite the renewal task sends, of the queue or the main cell (mutant M2's
/// too)? The simulator's `pause-at-rewrite` scenario pauses a holder right at the first one,
/// after renewal's check and before the write leaves.
pub fn is_renewal_rewrite(tag: StepTag) -> bool {
    [
        REWRITE_QUEUE,
        REWRITE_MAIN,
        REWRITE_QUEUE_UNCHECKED,
        REWRITE_MAIN_UNCHECKED,
    ]
    .contains(&tag)
}

/// Is `tag` one of the renewal task's steps (its sleeps, check, rewrites and how it ends)?
pub fn is_renewal_step(tag: &StepTag) -> bool {
    [
        NOTHING_EXPIRES,
        SLEEP,
        STOPPED,
        CHECK,
        REWRITE_QUEUE,
        REWRITE_MAIN,
        REWRITE_QUEUE_UNCHECKED,
        REWRITE_MAIN_UNCHECKED,
        GONE,
        EXPIRED,
        LANDED_LATE,
        RETRY_LATER,
    ]
    .contains(tag)
}

impl Renewal {
    pub fn new(lease: LeaseCells) -> Self {
        Renewal {
            lease,
            state: RenewalState::Idle,
        }
    }

    pub fn lease(&self) -> &LeaseCells {
        &self.lease
    }

    /// Until when the lease is certainly ours, after the renewals so far.
    pub fn valid_until_us(&self, config: &LockConfig) -> Option<u64> {
        lease_valid_until_us(config, &self.lease)
    }

    /// Is the renewal between its wake-up and its last rewrite?
    pub fn is_rewriting(&self) -> bool {
        matches!(
            self.state,
            RenewalState::Checking | RenewalState::WritingQueue { .. } | RenewalState::WritingMain { .. }
        )
    }

    /// Did our main cell's last write die (or may it have), counted as the store counts
    /// ([`super::cells_live_until_us`]: whole seconds)?
    fn expired(&self, config: &LockConfig, now_us: u64) -> bool {
        super::cells_live_until_us(config, self.lease.main_written_at_us).is_some_and(|until_us| now_us >= until_us)
    }

    fn sleep_until_due(&mut self, config: &LockConfig, now_us: u64) -> Step<RenewalEnd> {
        debug_assert!(config.ttl_s.is_some(), "only a lease whose cells expire is renewed");
        self.state = RenewalState::Sleeping;
        let due_us = self
            .lease
            .main_written_at_us
            .saturating_add(config.renew_every_ms.saturating_mul(1000));
        let ms = due_us.saturating_sub(now_us).div_ceil(1000);
        Step::new(
            SLEEP,
            Action::Sleep {
                ms,
                kind: SleepKind::Renewal,
            },
        )
    }

    fn finish(&mut self, tag: StepTag, end: RenewalEnd) -> Step<RenewalEnd> {
        self.state = RenewalState::Finished;
        Step::done(tag, end)
    }

    /// Rewrite the queue cell (if any), then the main cell.
    fn rewrite(&mut self, config: &LockConfig, now_us: u64) -> Step<RenewalEnd> {
        match self.lease.queue_column.clone() {
            Some(column) => {
                self.state = RenewalState::WritingQueue { started_us: now_us };
                let command = write_own_cell(config, self.lease.lock.queue_row(), column, &self.lease.thread);
                let tag = if config.mutants.m2_renew_without_checking {
                    REWRITE_QUEUE_UNCHECKED
                } else {
                    REWRITE_QUEUE
                };
                Step::store(tag, command)
            }
            None => self.write_main(config, now_us),
        }
    }

    fn write_main(&mut self, config: &LockConfig, started_us: u64) -> Step<RenewalEnd> {
        self.state = RenewalState::WritingMain { started_us };
        let lease = &self.lease;
        let command = write_own_cell(
            config,
            lease.lock.main_row(),
            lease.thread.as_str().to_owned(),
            &lease.thread,
        );
        let tag = if config.mutants.m2_renew_without_checking {
            REWRITE_MAIN_UNCHECKED
        } else {
            REWRITE_MAIN
        };
        Step::store(tag, command)
    }
}

impl Machine for Renewal {
    type Config = LockConfig;
    type Output = RenewalEnd;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<RenewalEnd> {
        match (std::mem::replace(&mut self.state, RenewalState::Finished), input) {
            (RenewalState::Idle, Input::Start) => {
                if config.ttl_s.is_none() {
                    return self.finish(NOTHING_EXPIRES, RenewalEnd::Stopped);
                }
                self.sleep_until_due(config, now_us)
            }
            (RenewalState::Sleeping, Input::StopRequested) => self.finish(STOPPED, RenewalEnd::Stopped),
            (RenewalState::Sleeping, Input::Woke) => {
                if self.expired(config, now_us) {
                    return self.finish(EXPIRED, RenewalEnd::Lost(LeaseLost::Expired));
                }
                if config.mutants.m2_renew_without_checking {
                    return self.rewrite(config, now_us);
                }
                self.state = RenewalState::Checking;
                let check = StoreOp::ReadSlice {
                    row: self.lease.lock.main_row(),
                    start: self.lease.thread.as_str().to_owned(),
                    count: 1,
                };
                Step::store(CHECK, check)
            }
            (RenewalState::Checking, Input::Reply(StoreReply::Slice(cells))) => {
                if cells
                    .first()
                    .is_none_or(|cell| cell.column != self.lease.thread.as_str())
                {
                    return self.finish(GONE, RenewalEnd::Lost(LeaseLost::MainCellGone));
                }
                self.rewrite(config, now_us)
            }
            // A rewrite decided in time may land late (the holder paused between the check and
            // the write): if a whole TTL has passed since the main cell's last write, our cells
            // may have expired before it landed, and another thread may have taken the lock
            // in between. The rewrite then brought a dead cell back next to the new holder's,
            // where the next check, which looks for our own cell only, would find it: the
            // lease is lost, and renewal says so now (C-lost; found by checking the pause
            // world two ticks past its clock bound).
            (RenewalState::WritingQueue { .. } | RenewalState::WritingMain { .. }, Input::Reply(StoreReply::Done))
                if self.expired(config, now_us) && !config.mutants.m4_trust_a_late_rewrite =>
            {
                self.finish(LANDED_LATE, RenewalEnd::Lost(LeaseLost::Expired))
            }
            (RenewalState::WritingQueue { started_us }, Input::Reply(StoreReply::Done)) => {
                self.write_main(config, started_us)
            }
            (RenewalState::WritingMain { started_us }, Input::Reply(StoreReply::Done)) => {
                self.lease.main_written_at_us = started_us;
                self.sleep_until_due(config, now_us)
            }
            (
                RenewalState::Checking | RenewalState::WritingQueue { .. } | RenewalState::WritingMain { .. },
                Input::Failed(_),
            ) => {
                if self.expired(config, now_us) {
                    return self.finish(EXPIRED, RenewalEnd::Lost(LeaseLost::Expired));
                }
                self.state = RenewalState::Sleeping;
                Step::new(
                    RETRY_LATER,
                    Action::Sleep {
                        ms: config.retry.backoff_ms,
                        kind: SleepKind::Renewal,
                    },
                )
            }
            (state, input) => panic!("renewal: input {input:?} does not answer state {state:?}"),
        }
    }

    fn urgent(&self, _config: &LockConfig, _now_us: u64) -> bool {
        self.is_rewriting()
    }
}

/// How a release ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Released {
    /// Both deletes were acknowledged.
    Released,
    /// A delete kept failing; the cells will expire after their TTL.
    Failed(StoreFailure),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum ReleaseState {
    Idle,
    StoppingRenewal,
    DeletingMain,
    DeletingQueue { main_failed: Option<StoreFailure> },
    Finished,
}

/// Release (section 5.3): stop renewal (and wait for it), delete the main cell, then the
/// queue cell. The main cell goes first, so that while it is being deleted the next thread
/// in the queue is not yet first and does not collide with it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Release {
    lease: LeaseCells,
    state: ReleaseState,
}

const STOP_AND_WAIT: StepTag = StepTag::new(Source::Lease, 0, "release: stop the renewal task and wait for it");
const STOP_NO_WAIT: StepTag = StepTag::new(
    Source::Ours,
    0,
    "MUTANT K3: release: stop the renewal task, do not wait",
);
const DELETE_MAIN: StepTag = StepTag::new(Source::Lease, 0, "release: delete own main cell");
const DELETE_QUEUE: StepTag = StepTag::new(Source::Lease, 0, "release: delete own queue cell");
const DELETE_MAIN_STALE: StepTag = StepTag::new(
    Source::Ours,
    0,
    "MUTANT M3: release: delete own main cell, stamped at the lease's start",
);
const DELETE_QUEUE_STALE: StepTag = StepTag::new(
    Source::Ours,
    0,
    "MUTANT M3: release: delete own queue cell, stamped at the lease's start",
);
const RELEASED: StepTag = StepTag::new(Source::Lease, 0, "released");
const RELEASE_FAILED: StepTag = StepTag::new(
    Source::Ours,
    0,
    "a delete kept failing: the cells expire after their TTL",
);

impl Release {
    pub fn new(lease: LeaseCells) -> Self {
        Release {
            lease,
            state: ReleaseState::Idle,
        }
    }

    pub fn lease(&self) -> &LeaseCells {
        &self.lease
    }

    /// Delete one of our cells: stamped by the client's timestamp generator, so the tombstone
    /// is newer than every write of ours before it (renewal's included); under mutant M3,
    /// stamped at the lease's start instead.
    fn delete(&self, config: &LockConfig, tags: [StepTag; 2], row: String, column: String) -> Step<Released> {
        let [tag, stale_tag] = tags;
        if !config.mutants.m3_delete_stamped_at_acquisition {
            return Step::store(tag, delete_own_cell(row, column));
        }
        let command = StoreOp::Delete {
            row,
            column,
            timestamp: Stamp::At(self.lease.main_written_at_us),
        };
        Step::store(stale_tag, command)
    }

    fn after_main(&mut self, config: &LockConfig, main_failed: Option<StoreFailure>) -> Step<Released> {
        match self.lease.queue_column.clone() {
            Some(column) => {
                self.state = ReleaseState::DeletingQueue { main_failed };
                self.delete(
                    config,
                    [DELETE_QUEUE, DELETE_QUEUE_STALE],
                    self.lease.lock.queue_row(),
                    column,
                )
            }
            None => self.finish(main_failed),
        }
    }

    fn finish(&mut self, failed: Option<StoreFailure>) -> Step<Released> {
        self.state = ReleaseState::Finished;
        match failed {
            None => Step::done(RELEASED, Released::Released),
            Some(failure) => Step::done(RELEASE_FAILED, Released::Failed(failure)),
        }
    }
}

impl Machine for Release {
    type Config = LockConfig;
    type Output = Released;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &LockConfig, input: Input, _now_us: u64) -> Step<Released> {
        match (std::mem::replace(&mut self.state, ReleaseState::Finished), input) {
            (ReleaseState::Idle, Input::Start) => {
                self.state = ReleaseState::StoppingRenewal;
                let wait = !config.mutants.k3_release_without_waiting;
                Step::new(
                    if wait { STOP_AND_WAIT } else { STOP_NO_WAIT },
                    Action::StopRenewal { wait },
                )
            }
            (ReleaseState::StoppingRenewal, Input::RenewalStopped) => {
                self.state = ReleaseState::DeletingMain;
                let (row, column) = (self.lease.lock.main_row(), self.lease.thread.as_str().to_owned());
                self.delete(config, [DELETE_MAIN, DELETE_MAIN_STALE], row, column)
            }
            (ReleaseState::DeletingMain, Input::Reply(StoreReply::Done)) => self.after_main(config, None),
            (ReleaseState::DeletingMain, Input::Failed(failure)) => self.after_main(config, Some(failure)),
            (ReleaseState::DeletingQueue { main_failed }, Input::Reply(StoreReply::Done)) => self.finish(main_failed),
            (ReleaseState::DeletingQueue { .. }, Input::Failed(failure)) => self.finish(Some(failure)),
            (state, input) => panic!("release: input {input:?} does not answer state {state:?}"),
        }
    }
}

crate::algo::held_columns::holds_no_columns!(RenewalEnd, Released);

/// Reduction 7 of the lock models: the lease's queue column.
impl crate::algo::held_columns::HeldColumns for Renewal {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        self.lease.see_columns(see)
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        self.lease.rename_columns(rename)
    }
}

/// Reduction 7 of the lock models: the lease's queue column.
impl crate::algo::held_columns::HeldColumns for Release {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        self.lease.see_columns(see)
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        self.lease.rename_columns(rename)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::queue_column::{queue_column, ClientId};
    use crate::algo::testkit::Bench;
    use crate::algo::{LockId, ThreadId};

    fn timed() -> LockConfig {
        LockConfig {
            ttl_s: Some(10),
            renew_every_ms: 5000,
            ..LockConfig::default()
        }
    }

    fn thread() -> ThreadId {
        ClientId::new("a").unwrap().thread(1)
    }

    /// Hold the lock as the queue algorithm would at `now`: both cells written.
    fn held(bench: &mut Bench) -> LeaseCells {
        let thread = thread();
        let column = queue_column(bench.now_us, &thread);
        bench.execute(write_own_cell(&bench.config, "q:L".into(), column.clone(), &thread));
        bench.execute(write_own_cell(
            &bench.config,
            "m:L".into(),
            thread.as_str().into(),
            &thread,
        ));
        LeaseCells {
            lock: LockId::new("L").unwrap(),
            thread,
            queue_column: Some(column),
            main_written_at_us: bench.now_us,
        }
    }

    #[test]
    fn renewal_rewrites_both_cells_every_interval_and_keeps_them_alive() {
        let mut bench = Bench::new(timed());
        let lease = held(&mut bench);
        let start_us = bench.now_us;
        let mut renewal = Renewal::new(lease.clone());
        let mut input = Input::Start;
        for round in 1..=6 {
            let step = bench.run_until(&mut renewal, input, |step| matches!(step.action, Action::Sleep { .. }));
            let Action::Sleep { ms, kind } = step.action else {
                panic!()
            };
            assert_eq!(kind, SleepKind::Renewal);
            assert_eq!(ms, 5000, "round {round}: sleep until the next renewal is due");
            bench.now_us += ms * 1000;
            input = Input::Woke;
        }
        assert_eq!(bench.now_us - start_us, 30_000_000, "30 s of renewals with a 10 s TTL");
        assert_eq!(bench.live_columns("m:L"), ["a:1"]);
        assert_eq!(bench.live_columns("q:L"), [lease.queue_column.unwrap()]);
        let rewrites = bench.tags.iter().filter(|tag| **tag == REWRITE_MAIN).count();
        assert_eq!(rewrites, 5);
        assert!(!renewal.urgent(&bench.config, bench.now_us), "asleep, so not urgent");
    }

    #[test]
    fn without_renewal_the_cells_vanish_after_the_ttl() {
        let mut bench = Bench::new(timed());
        held(&mut bench);
        bench.now_us += 9_999_999;
        assert_eq!(bench.live_columns("m:L").len(), 1);
        bench.now_us += 1;
        assert!(bench.live_columns("m:L").is_empty());
        assert!(bench.live_columns("q:L").is_empty());
    }

    #[test]
    fn renewal_reports_a_lost_lease_instead_of_writing_back() {
        // Our main cell is gone (expired, say): renewal stops without resurrecting it.
        let mut bench = Bench::new(timed());
        let lease = held(&mut bench);
        bench.execute(delete_own_cell("m:L".into(), "a:1".into()));
        let mut renewal = Renewal::new(lease.clone());
        bench.run_until(&mut renewal, Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        bench.now_us += 5_000_000;
        let done = bench.run_until(&mut renewal, Input::Woke, |_| false);
        assert_eq!(done.action, Action::Done(RenewalEnd::Lost(LeaseLost::MainCellGone)));
        assert!(bench.live_columns("m:L").is_empty());

        // Woken only after a whole TTL (a pause): expired, without touching the store.
        let mut renewal = Renewal::new(lease);
        bench.run_until(&mut renewal, Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        bench.now_us += 60_000_000;
        let done = bench.run_until(&mut renewal, Input::Woke, |_| false);
        assert_eq!(done.action, Action::Done(RenewalEnd::Lost(LeaseLost::Expired)));
    }

    /// A held lease whose renewal woke when due, checked its main cell and now asks for the
    /// rewrite tagged `rewrite` (of the queue cell or the main cell): the bench, the renewal,
    /// and the command it asked for, not yet sent.
    fn renewal_about_to(rewrite: StepTag) -> (Bench, Renewal, crate::store::StoreCommand) {
        renewal_about_to_on(Bench::new(timed()), rewrite)
    }

    /// A lease taken on `bench` at its current time, whose renewal has started and sleeps
    /// until due.
    fn renewal_asleep(mut bench: Bench) -> (Bench, Renewal) {
        let mut renewal = Renewal::new(held(&mut bench));
        bench.run_until(&mut renewal, Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        (bench, renewal)
    }

    /// As [`renewal_about_to`], with the lease taken on `bench` at its current time.
    fn renewal_about_to_on(bench: Bench, rewrite: StepTag) -> (Bench, Renewal, crate::store::StoreCommand) {
        let (mut bench, mut renewal) = renewal_asleep(bench);
        bench.now_us += 5_000_000;
        let step = bench.run_until(&mut renewal, Input::Woke, |step| step.tag == rewrite);
        let Action::Store(command) = step.action else {
            panic!("a rewrite is a store command: {step:?}")
        };
        (bench, renewal, command)
    }

    /// C-lost: the holder pauses after renewal decided to rewrite, for longer than the TTL;
    /// its cells expire and another thread writes its main cell. The late rewrites land (they
    /// bring our cells back), and renewal must report the lease lost when their replies come,
    /// not go to sleep: its next check looks for our own cell only, which the rewrite put back.
    #[test]
    fn a_rewrite_landing_a_ttl_after_the_last_write_reports_the_lease_lost() {
        // Paused before the queue rewrite: our cells expire, another thread takes the main row.
        let (mut bench, mut renewal, command) = renewal_about_to(REWRITE_QUEUE);
        bench.now_us += 6_000_000;
        assert!(
            bench.live_columns("m:L").is_empty(),
            "our cells expired during the pause"
        );
        let other = ClientId::new("b").unwrap().thread(1);
        bench.execute(write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        // The late write lands, then its reply reaches renewal.
        let reply = bench.execute(command);
        let done = renewal.resume(&bench.config, Input::Reply(reply), bench.now_us);
        assert_eq!(done.action, Action::Done(RenewalEnd::Lost(LeaseLost::Expired)));
        assert_eq!(done.tag, LANDED_LATE);
        assert!(
            bench.live_columns("m:L") == ["b:1"],
            "the main cell was not written back next to the new holder's"
        );

        // The same pause between the queue and the main rewrite.
        let (mut bench, mut renewal, command) = renewal_about_to(REWRITE_MAIN);
        bench.now_us += 6_000_000;
        let reply = bench.execute(command);
        let done = renewal.resume(&bench.config, Input::Reply(reply), bench.now_us);
        assert_eq!(done.action, Action::Done(RenewalEnd::Lost(LeaseLost::Expired)));

        // A rewrite whose reply comes within the TTL goes on as before.
        let (mut bench, mut renewal, command) = renewal_about_to(REWRITE_QUEUE);
        bench.now_us += 4_999_999;
        let reply = bench.execute(command);
        let next = renewal.resume(&bench.config, Input::Reply(reply), bench.now_us);
        assert_eq!(next.tag, REWRITE_MAIN, "one microsecond inside the TTL: still ours");

        // Mutant M4 (the library before the fix) trusts the late reply and writes on.
        let (mut bench, mut renewal, command) = renewal_about_to(REWRITE_QUEUE);
        bench.config.mutants.m4_trust_a_late_rewrite = true;
        bench.now_us += 6_000_000;
        let reply = bench.execute(command);
        let next = renewal.resume(&bench.config, Input::Reply(reply), bench.now_us);
        assert_eq!(next.tag, REWRITE_MAIN, "M4 writes the expired main cell back");
    }

    /// C-lost again, within the TTL by our clock: Cassandra fixes expiry in whole seconds of
    /// the coordinator's clock, so a main cell written at 10.9 s with a 10 s TTL dies at 20 s,
    /// not 20.9 s. A rewrite decided at 15.9 s whose reply comes at 20.5 s may have put a dead
    /// cell back beside a new holder's: the lease is lost (before 2026-11-28 renewal trusted
    /// it, since 20.5 s is within 10 s of 10.9 s).
    #[test]
    fn a_rewrite_landing_after_the_cells_whole_second_expiry_reports_the_lease_lost() {
        let at_10_9_s = || {
            let mut bench = Bench::new(timed());
            bench.now_us = 10_900_000;
            bench
        };
        let (mut bench, mut renewal, command) = renewal_about_to_on(at_10_9_s(), REWRITE_QUEUE);
        // Paused until 20.5 s: less than a TTL after 10.9 s, but our cells died at 20 s.
        bench.now_us = 20_500_000;
        assert!(bench.live_columns("m:L").is_empty(), "expired at the whole second");
        let other = ClientId::new("b").unwrap().thread(1);
        bench.execute(write_own_cell(
            &bench.config,
            "m:L".into(),
            other.as_str().into(),
            &other,
        ));
        let reply = bench.execute(command);
        let done = renewal.resume(&bench.config, Input::Reply(reply), bench.now_us);
        assert_eq!(done.tag, LANDED_LATE);
        assert_eq!(done.action, Action::Done(RenewalEnd::Lost(LeaseLost::Expired)));

        // Woken at 20.2 s (a pause while asleep): expired too, without touching the store.
        let (mut bench, mut renewal) = renewal_asleep(at_10_9_s());
        bench.now_us = 20_200_000;
        let done = renewal.resume(&bench.config, Input::Woke, bench.now_us);
        assert_eq!(done.action, Action::Done(RenewalEnd::Lost(LeaseLost::Expired)));

        // A reply at 19.999999 s is before any cell written from 10.9 s on can have died.
        let (mut bench, mut renewal, command) = renewal_about_to_on(at_10_9_s(), REWRITE_QUEUE);
        bench.now_us = 19_999_999;
        assert_eq!(bench.live_columns("m:L"), ["a:1"]);
        let reply = bench.execute(command);
        let next = renewal.resume(&bench.config, Input::Reply(reply), bench.now_us);
        assert_eq!(next.tag, REWRITE_MAIN, "still ours");
    }

    #[test]
    fn renewal_stops_when_asked_and_has_nothing_to_do_without_a_ttl() {
        let mut bench = Bench::new(timed());
        let lease = held(&mut bench);
        let mut renewal = Renewal::new(lease.clone());
        bench.run_until(&mut renewal, Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        let done = renewal.resume(&bench.config, Input::StopRequested, bench.now_us);
        assert_eq!(done.action, Action::Done(RenewalEnd::Stopped));
        let mut untimed = Renewal::new(lease);
        let done = untimed.resume(&LockConfig::untimed(), Input::Start, 0);
        assert_eq!(done.action, Action::Done(RenewalEnd::Stopped));
    }

    #[test]
    fn renewal_is_urgent_between_waking_and_its_last_write() {
        let (bench, renewal, _) = renewal_about_to(REWRITE_MAIN);
        assert!(renewal.urgent(&bench.config, bench.now_us));
    }

    #[test]
    fn release_waits_for_renewal_then_deletes_main_then_queue() {
        let mut bench = Bench::new(timed());
        let lease = held(&mut bench);
        let mut release = Release::new(lease);
        let first = release.resume(&bench.config, Input::Start, bench.now_us);
        assert_eq!(first.action, Action::StopRenewal { wait: true });
        bench.run_until(&mut release, Input::RenewalStopped, |_| false);
        assert_eq!(
            &bench.tags[bench.tags.len() - 3..],
            [DELETE_MAIN, DELETE_QUEUE, RELEASED]
        );
        assert!(bench.live_columns("m:L").is_empty());
        assert!(bench.live_columns("q:L").is_empty());
    }

    #[test]
    fn k3_mutant_does_not_wait_and_a_late_renewal_resurrects_the_main_cell() {
        let mut bench = Bench::new(LockConfig {
            mutants: crate::algo::Mutants {
                k3_release_without_waiting: true,
                ..Default::default()
            },
            ..timed()
        });
        let lease = held(&mut bench);
        let mut renewal = Renewal::new(lease.clone());
        bench.run_until(&mut renewal, Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        bench.now_us += 5_000_000;
        // Renewal has checked its cell and is about to rewrite the main cell...
        let rewrite = bench.run_until(&mut renewal, Input::Woke, |step| step.tag == REWRITE_MAIN);
        // ... when release runs to the end without waiting.
        let mut release = Release::new(lease);
        assert_eq!(
            release.resume(&bench.config, Input::Start, bench.now_us).action,
            Action::StopRenewal { wait: false }
        );
        bench.run_until(&mut release, Input::RenewalStopped, |_| false);
        assert!(bench.live_columns("m:L").is_empty());
        // The renewal's write, stamped after the delete, brings the cell back: K3.
        let Action::Store(write) = rewrite.action else { panic!() };
        bench.execute(write);
        assert_eq!(bench.live_columns("m:L"), ["a:1"], "released, yet taken until the TTL");
        bench.now_us += 10_000_000;
        assert!(bench.live_columns("m:L").is_empty(), "free again once the TTL ran out");
    }

    /// Renewal of `lease` after its main cell was deleted (another holder's lease began): the
    /// store's main row afterwards.
    fn renew_after_our_cell_is_gone(mutants: crate::algo::Mutants) -> (RenewalEnd, Vec<String>) {
        let mut bench = Bench::new(LockConfig { mutants, ..timed() });
        let lease = held(&mut bench);
        bench.execute(delete_own_cell("m:L".into(), "a:1".into()));
        let mut renewal = Renewal::new(lease);
        bench.run_until(&mut renewal, Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        bench.now_us += 5_000_000;
        let step = bench.run_until(&mut renewal, Input::Woke, |step| {
            matches!(step.action, Action::Sleep { .. } | Action::Done(_))
        });
        let end = match step.action {
            Action::Done(end) => end,
            _ => RenewalEnd::Stopped,
        };
        (end, bench.live_columns("m:L"))
    }

    #[test]
    fn m2_mutant_renews_without_checking_and_never_learns_the_lease_is_lost() {
        let (end, main_row) = renew_after_our_cell_is_gone(crate::algo::Mutants::default());
        assert_eq!(end, RenewalEnd::Lost(LeaseLost::MainCellGone));
        assert!(main_row.is_empty());
        let m2 = crate::algo::Mutants {
            m2_renew_without_checking: true,
            ..Default::default()
        };
        let (end, main_row) = renew_after_our_cell_is_gone(m2);
        assert_eq!(
            end,
            RenewalEnd::Stopped,
            "M2 goes back to sleep: it never reports the loss"
        );
        assert_eq!(main_row, ["a:1"], "M2 writes the lost cell back");
    }

    /// Hold, let renewal rewrite once, release: the main row afterwards.
    fn release_after_a_renewal(mutants: crate::algo::Mutants) -> Vec<String> {
        let mut bench = Bench::new(LockConfig { mutants, ..timed() });
        let lease = held(&mut bench);
        let mut renewal = Renewal::new(lease.clone());
        bench.run_until(&mut renewal, Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        bench.now_us += 5_000_000;
        bench.run_until(&mut renewal, Input::Woke, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        let mut release = Release::new(lease);
        bench.run_until(&mut release, Input::Start, |_| false);
        bench.live_columns("m:L")
    }

    #[test]
    fn m3_mutant_stamps_the_delete_at_the_lease_start_and_a_renewed_cell_survives_it() {
        assert!(release_after_a_renewal(crate::algo::Mutants::default()).is_empty());
        let m3 = crate::algo::Mutants {
            m3_delete_stamped_at_acquisition: true,
            ..Default::default()
        };
        assert_eq!(
            release_after_a_renewal(m3),
            ["a:1"],
            "the renewal's write is newer than M3's tombstone: released, yet taken until the TTL"
        );
    }

    #[test]
    fn renewal_steps_are_told_from_release_steps() {
        // The simulator finds "a renewal request while the release ran" by these tags (the
        // renew-race cell of the matrix fires on it).
        for tag in [
            SLEEP,
            CHECK,
            REWRITE_QUEUE,
            REWRITE_MAIN,
            REWRITE_MAIN_UNCHECKED,
            GONE,
            EXPIRED,
        ] {
            assert!(is_renewal_step(&tag), "{tag}");
        }
        for tag in [STOP_AND_WAIT, DELETE_MAIN, DELETE_QUEUE, DELETE_MAIN_STALE, RELEASED] {
            assert!(!is_renewal_step(&tag), "{tag}");
        }
    }

    #[test]
    fn release_still_deletes_the_queue_cell_when_the_main_delete_fails() {
        let mut bench = Bench::new(timed());
        let lease = held(&mut bench);
        let mut release = Release::new(lease);
        release.resume(&bench.config, Input::Start, bench.now_us);
        release.resume(&bench.config, Input::RenewalStopped, bench.now_us);
        let next = release.resume(&bench.config, Input::Failed(StoreFailure::Unavailable), bench.now_us);
        assert_eq!(next.tag, DELETE_QUEUE);
        let done = release.resume(&bench.config, Input::Reply(StoreReply::Done), bench.now_us);
        assert_eq!(done.action, Action::Done(Released::Failed(StoreFailure::Unavailable)));
    }
}
