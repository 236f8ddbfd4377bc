//! Ours (contract item C-free): an acquisition that fails deletes what it wrote before it
//! returns.
//!
//! The thesis's listings give up on a failed request and leave their cells to the TTL. A queue
//! cell left by a waiter that gave up sits at the head of the queue once the holder leaves, and
//! nobody can take the lock until it expires (30 s by default): measured in the simulator, with
//! 20% message loss for 40 s, the next caller waited up to 9.8 s after a release for a cell of a
//! call that had already failed (`cassalock sim --scenario loss`, queue algorithm, seed 1).
//!
//! [`CleanUp`] wraps an acquisition machine (inside [`super::retry::Retrying`], so its deletes
//! are retried like any request). It remembers every cell the machine wrote, or tried to write
//! (a write that timed out may still have been applied), and has not deleted since. When the
//! machine gives up with [`Acquire::Failed`], and [`Fixes::clean_up_on_failure`] is on, it
//! deletes those cells one by one, stamped with the client's clock: a later tombstone beats the
//! write even if the write lands afterwards. Only then does it return, saying whether any cell
//! may be left (`left`). With the fix off it returns at once, as the listings do, and
//! `cells_left` says whether the machine had written anything.
//!
//! [`Fixes::clean_up_on_failure`]: super::Fixes::clean_up_on_failure

use std::collections::BTreeSet;

use super::{delete_own_cell, Acquire, Action, Input, Leftover, LockConfig, Machine, Source, Step, StepTag};
use crate::store::{StoreCommand, StoreFailure, StoreReply};

const CLEAN_UP: StepTag = StepTag::new(
    Source::Ours,
    0,
    "the acquisition failed: delete a cell it wrote, so that it blocks nobody (C-free)",
);

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Cleaning {
    failure: StoreFailure,
    /// A clean-up delete failed too: that cell may be left until its TTL.
    delete_failed: bool,
}

/// An acquisition machine whose failure cleans up after it. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CleanUp<M> {
    inner: M,
    /// (row, column) of every cell written (or tried) and not deleted since.
    written: BTreeSet<(String, String)>,
    /// The inner machine's delete in flight, to forget its cell once the delete is done.
    deleting: Option<(String, String)>,
    cleaning: Option<Cleaning>,
}

impl<M> CleanUp<M> {
    pub fn new(inner: M) -> Self {
        CleanUp {
            inner,
            written: BTreeSet::new(),
            deleting: None,
            cleaning: None,
        }
    }

    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// The next clean-up delete, or the end.
    fn next_delete(&mut self) -> Step<Acquire> {
        let cleaning = self.cleaning.as_ref().expect("cleaning");
        match self.written.pop_first() {
            Some((row, column)) => {
                self.deleting = Some((row.clone(), column.clone()));
                Step::store(CLEAN_UP, delete_own_cell(row, column))
            }
            None => Step::done(
                CLEAN_UP,
                Acquire::Failed {
                    failure: cleaning.failure.clone(),
                    left: if cleaning.delete_failed {
                        Leftover::CleanUpFailed
                    } else {
                        Leftover::Nothing
                    },
                },
            ),
        }
    }
}

impl<M> Machine for CleanUp<M>
where
    M: Machine<
        Config = LockConfig,
        Output = Acquire,
        Command = crate::store::StoreCommand,
        Reply = crate::store::StoreReply,
    >,
{
    type Config = LockConfig;
    type Output = Acquire;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<Acquire> {
        if let Some(cleaning) = &mut self.cleaning {
            match input {
                Input::Reply(StoreReply::Done) => {}
                Input::Failed(_) => cleaning.delete_failed = true,
                other => panic!("CleanUp: {other:?} does not answer a clean-up delete"),
            }
            self.deleting = None;
            return self.next_delete();
        }
        if matches!(input, Input::Reply(StoreReply::Done)) {
            if let Some(cell) = self.deleting.take() {
                self.written.remove(&cell);
            }
        } else {
            self.deleting = None;
        }
        let step = self.inner.resume(config, input, now_us);
        match &step.action {
            // The token counter ([`super::fence`]) is the lock's, not the call's: never deleted.
            Action::Store(StoreCommand::Write { row, cells, .. }) if !super::LockId::is_token_row(row) => {
                for cell in cells {
                    self.written.insert((row.clone(), cell.column.clone()));
                }
            }
            Action::Store(StoreCommand::Delete { row, column, .. }) => {
                self.deleting = Some((row.clone(), column.clone()));
            }
            Action::Done(Acquire::Failed { failure, .. }) => {
                if config.fixes.clean_up_on_failure && !self.written.is_empty() {
                    self.cleaning = Some(Cleaning {
                        failure: failure.clone(),
                        delete_failed: false,
                    });
                    return self.next_delete();
                }
                return Step::done(
                    step.tag,
                    Acquire::Failed {
                        failure: failure.clone(),
                        left: if self.written.is_empty() {
                            Leftover::Nothing
                        } else {
                            Leftover::NotCleanedUp
                        },
                    },
                );
            }
            _ => {}
        }
        step
    }

    fn urgent(&self, config: &LockConfig, now_us: u64) -> bool {
        self.cleaning.is_none() && self.inner.urgent(config, now_us)
    }

    /// Cleaning up, it deletes what it wrote (its main cell among them) in a bounded number
    /// of requests.
    fn contending(&self) -> bool {
        self.cleaning.is_some() || self.inner.contending()
    }
}

/// Reduction 7 of the lock models: the wrapped machine's columns and the cells it wrote.
impl<M: crate::algo::held_columns::HeldColumns> crate::algo::held_columns::HeldColumns for CleanUp<M> {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        self.inner.see_columns(see);
        self.written.see_columns(see);
        self.deleting.see_columns(see);
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        self.inner.rename_columns(rename);
        self.written.rename_columns(rename);
        self.deleting.rename_columns(rename);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::queue_column::ClientId;
    use crate::algo::queue_get_lock::QueueGetLock;
    use crate::algo::{Fixes, LockId};

    fn machine() -> CleanUp<QueueGetLock> {
        CleanUp::new(QueueGetLock::new(
            LockId::new("L").unwrap(),
            ClientId::new("a").unwrap().thread(1),
        ))
    }

    /// Run until the machine asks for the queue write, then fail it.
    fn fail_the_enqueue(config: &LockConfig) -> (CleanUp<QueueGetLock>, Step<Acquire>) {
        let mut machine = machine();
        let mut step = machine.resume(config, Input::Start, 1_000_000);
        loop {
            match &step.action {
                Action::ReadTime => step = machine.resume(config, Input::Time(1_000_000), 1_000_000),
                Action::Store(StoreCommand::Write { .. }) => {
                    let step = machine.resume(config, Input::Failed(StoreFailure::Timeout), 1_000_000);
                    return (machine, step);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn c_free_a_failed_enqueue_is_deleted_before_the_call_returns() {
        let config = LockConfig::default();
        let (mut machine, step) = fail_the_enqueue(&config);
        let Action::Store(StoreCommand::Delete { row, .. }) = &step.action else {
            panic!("expected the clean-up delete, got {step:?}");
        };
        assert_eq!(row, &LockId::new("L").unwrap().queue_row());
        assert_eq!(step.tag, CLEAN_UP);
        let end = machine.resume(&config, Input::Reply(StoreReply::Done), 1_100_000);
        assert_eq!(
            end.action,
            Action::Done(Acquire::Failed {
                failure: StoreFailure::Timeout,
                left: Leftover::Nothing
            })
        );
    }

    #[test]
    fn c_free_a_clean_up_that_fails_says_cells_are_left() {
        let config = LockConfig::default();
        let (mut machine, _) = fail_the_enqueue(&config);
        let end = machine.resume(&config, Input::Failed(StoreFailure::Unavailable), 1_100_000);
        assert_eq!(
            end.action,
            Action::Done(Acquire::Failed {
                failure: StoreFailure::Timeout,
                left: Leftover::CleanUpFailed
            })
        );
    }

    #[test]
    fn the_thesis_listing_returns_at_once_and_leaves_its_cells() {
        let config = LockConfig {
            fixes: Fixes::THESIS,
            ..LockConfig::default()
        };
        let (_, step) = fail_the_enqueue(&config);
        assert_eq!(
            step.action,
            Action::Done(Acquire::Failed {
                failure: StoreFailure::Timeout,
                left: Leftover::NotCleanedUp
            })
        );
    }
}
