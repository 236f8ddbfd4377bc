//! Ours (contract item C-token): the fencing token is a counter, bumped by each holder.
//!
//! The thesis suggests no token; the library used to hand out the holder's queue column (its
//! enqueue time, then its thread id), which sorts the way the queue does. That is not the order
//! in which threads *get* the lock: a thread whose column sorts first can land in the queue
//! after another thread read the head and took the lock (a slower write, a clock behind, or
//! two enqueues in the same clock tick), and it then holds the lock next with a lower token.
//! A resource that refuses lower tokens refuses the only holder's writes. The model checker
//! finds it in a few steps (`check --model getlock --fault pause --fencing`); the simulator
//! finds it under clock skew and message loss.
//!
//! [`Fence`] wraps an acquisition machine. When the machine has acquired, and
//! [`Fixes::counter_token`](super::Fixes::counter_token) is on, it reads the lock's token row
//! (one cell, never expiring), and writes back the counter plus one, stamped above the cell's
//! own timestamp (a client clock behind the last holder's must not lose the write to the
//! older value). The token is the new counter, zero-padded, then the thread id:
//! `#0000000000000000042/client:7`. Because the lock is held while the counter is read and
//! written, and reads and writes are at QUORUM, each holder reads the value the previous holder
//! wrote: tokens rise with every acquisition, whatever the clocks say. When mutual exclusion
//! itself breaks (S2, K2) two holders may read the same value; the thread id keeps their
//! tokens distinct, and the resource lets only one of them through.
//!
//! The two requests take time, during which the lease may run out (a slow store, a paused
//! client): another thread may then hold the lock and bump the counter, and our write, stamped
//! lower, would silently lose to theirs. So the token is handed out only if our lease is still
//! certainly valid on our clock when the write is acknowledged
//! ([`super::lease::lease_valid_until_us`]); otherwise the acquisition fails with a timeout. (The
//! model checker found this: `check --model getlock --fault pause --fencing`, a holder whose
//! lease ran out between its read and its write of the counter got the same token as the next
//! holder.)
//!
//! Cost: two requests per acquisition (a read and a write of the token row). If either fails
//! the acquisition fails, and [`super::clean_up::CleanUp`], outside this wrapper, deletes the
//! main and queue cells it wrote; the token cell is never deleted (a counter that restarted
//! would hand out old tokens again).

use super::{read_first, Acquire, Action, Input, LeaseCells, Leftover, LockConfig, Machine, Source, Step, StepTag};
use crate::store::{CellWrite, Stamp, StoreCommand, StoreFailure, StoreReply};

/// The token row's one column.
pub const TOKEN_COLUMN: &str = "token";

/// Digits of the counter in a token.
const COUNTER_DIGITS: usize = 19;

const READ_COUNTER: StepTag = StepTag::new(Source::Ours, 0, "C-token: the lock is held; read the token counter");
const WRITE_COUNTER: StepTag = StepTag::new(
    Source::Ours,
    0,
    "C-token: write the counter plus one, stamped above its last write",
);
const TOKEN_FAILED: StepTag = StepTag::new(
    Source::Ours,
    0,
    "C-token: a request for the token failed: the acquisition fails",
);
const LEASE_RAN_OUT: StepTag = StepTag::new(
    Source::Ours,
    0,
    "C-token: our lease may have run out while we took the token: fail (another may hold the lock now)",
);

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum State {
    /// The wrapped machine is acquiring.
    Inner,
    /// Acquired (`won`: the listing's step that decided it); the read of the token row is in
    /// flight.
    Reading {
        lease: LeaseCells,
        won: StepTag,
    },
    /// The write of the new counter is in flight.
    Writing {
        lease: LeaseCells,
        won: StepTag,
        counter: u64,
    },
    Finished,
}

/// An acquisition machine whose token is the lock's counter. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fence<M> {
    inner: M,
    state: State,
}

/// The token for `counter`, held by `thread`: byte order is counter order.
pub fn counter_token(counter: u64, thread: &str) -> String {
    format!("#{counter:0width$}/{thread}", width = COUNTER_DIGITS)
}

/// The counter and thread of a token made by [`counter_token`].
pub fn parse_counter_token(token: &str) -> Option<(u64, &str)> {
    let rest = token.strip_prefix('#')?;
    let (digits, thread) = rest.split_at_checked(COUNTER_DIGITS)?;
    let thread = thread.strip_prefix('/')?;
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())
        .flatten()
        .map(|counter| (counter, thread))
}

impl<M> Fence<M> {
    pub fn new(inner: M) -> Self {
        Fence {
            inner,
            state: State::Inner,
        }
    }

    pub fn inner(&self) -> &M {
        &self.inner
    }

    fn fail(&mut self, failure: StoreFailure) -> Step<Acquire> {
        self.state = State::Finished;
        // CleanUp, outside, deletes what the acquisition wrote and sets `left`.
        Step::done(
            TOKEN_FAILED,
            Acquire::Failed {
                failure,
                left: Leftover::NotCleanedUp,
            },
        )
    }
}

impl<M> Machine for Fence<M>
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
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Inner => {
                let step = self.inner.resume(config, input, now_us);
                match step.action {
                    Action::Done(Acquire::Acquired { lease, .. }) if config.fixes.counter_token => {
                        let read = read_first(lease.lock.token_row(), 1);
                        self.state = State::Reading { lease, won: step.tag };
                        Step::store(READ_COUNTER, read)
                    }
                    action => {
                        if !matches!(action, Action::Done(_)) {
                            self.state = State::Inner;
                        }
                        Step::new(step.tag, action)
                    }
                }
            }
            State::Reading { lease, won } => match input {
                Input::Reply(StoreReply::Slice(cells)) => {
                    let (last, last_stamp_us) = match cells.first() {
                        None => (0, 0),
                        Some(cell) => match cell.value.parse::<u64>() {
                            Ok(counter) if cell.column == TOKEN_COLUMN => (counter, cell.timestamp_us),
                            _ => {
                                return self.fail(StoreFailure::Other(format!(
                                    "the token row of {} holds {:?} = {:?}, not a counter",
                                    lease.lock, cell.column, cell.value
                                )))
                            }
                        },
                    };
                    let Some(counter) = last.checked_add(1) else {
                        return self.fail(StoreFailure::Other(format!(
                            "the token counter of {} is exhausted",
                            lease.lock
                        )));
                    };
                    let write = StoreCommand::Write {
                        row: lease.lock.token_row(),
                        cells: vec![CellWrite {
                            column: TOKEN_COLUMN.to_owned(),
                            value: counter.to_string(),
                            ttl_s: None,
                        }],
                        timestamp: Stamp::At(now_us.max(last_stamp_us.saturating_add(1))),
                    };
                    self.state = State::Writing { lease, won, counter };
                    Step::store(WRITE_COUNTER, write)
                }
                Input::Failed(failure) => self.fail(failure),
                other => panic!("Fence: {other:?} does not answer the token read"),
            },
            State::Writing { lease, won, counter } => match input {
                Input::Reply(StoreReply::Done) => {
                    if super::lease::lease_valid_until_us(config, &lease).is_some_and(|until| now_us > until) {
                        self.state = State::Finished;
                        return Step::done(
                            LEASE_RAN_OUT,
                            Acquire::Failed {
                                failure: StoreFailure::Timeout,
                                left: Leftover::NotCleanedUp,
                            },
                        );
                    }
                    let token = super::FencingToken(counter_token(counter, lease.thread.as_str()));
                    // The listing's step that took the lock ends the acquisition, as without
                    // the token.
                    Step::done(won, Acquire::Acquired { lease, token })
                }
                Input::Failed(failure) => self.fail(failure),
                other => panic!("Fence: {other:?} does not answer the token write"),
            },
            State::Finished => panic!("Fence: resumed with {input:?} after it finished"),
        }
    }

    fn urgent(&self, config: &LockConfig, now_us: u64) -> bool {
        self.state == State::Inner && self.inner.urgent(config, now_us)
    }

    fn contending(&self) -> bool {
        self.state == State::Inner && self.inner.contending()
    }
}

/// Reduction 7 of the lock models: the wrapped machine's columns and the lease being fenced.
impl<M: crate::algo::held_columns::HeldColumns> crate::algo::held_columns::HeldColumns for Fence<M> {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        self.inner.see_columns(see);
        match &self.state {
            State::Reading { lease, .. } | State::Writing { lease, .. } => lease.see_columns(see),
            State::Inner | State::Finished => {}
        }
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        self.inner.rename_columns(rename);
        match &mut self.state {
            State::Reading { lease, .. } | State::Writing { lease, .. } => lease.rename_columns(rename),
            State::Inner | State::Finished => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::queue_column::ClientId;
    use crate::algo::queue_get_lock::QueueGetLock;
    use crate::algo::testkit::Bench;
    use crate::algo::{Fixes, LockId};

    fn get_lock(client: &str) -> Fence<QueueGetLock> {
        let thread = ClientId::new(client).unwrap().thread(1);
        Fence::new(QueueGetLock::new(LockId::new("L").unwrap(), thread))
    }

    fn token(outcome: Acquire) -> String {
        match outcome {
            Acquire::Acquired { token, .. } => token.0,
            other => panic!("not acquired: {other:?}"),
        }
    }

    #[test]
    fn tokens_count_up_across_holders_whatever_their_clocks() {
        let mut bench = Bench::new(LockConfig::untimed());
        bench.now_us = 5_000_000;
        let first = token(bench.run(&mut get_lock("a")));
        bench.execute(crate::algo::delete_own_cell("m:L".into(), "a:1".into()));
        // The next holder's clock is far behind: its write must still win.
        bench.now_us = 1_000;
        let second = token(bench.run(&mut get_lock("b")));
        assert_eq!(parse_counter_token(&first), Some((1, "a:1")));
        assert_eq!(parse_counter_token(&second), Some((2, "b:1")));
        assert!(second > first, "{second} > {first}");
    }

    #[test]
    fn the_listings_token_is_the_queue_column() {
        let mut bench = Bench::new(LockConfig {
            fixes: Fixes::THESIS,
            ..LockConfig::untimed()
        });
        let token = token(bench.run(&mut get_lock("a")));
        assert!(parse_counter_token(&token).is_none(), "{token}");
        assert!(bench.live_columns("t:L").is_empty(), "no token row");
    }

    #[test]
    fn a_failed_counter_write_fails_the_acquisition() {
        let mut bench = Bench::new(LockConfig::untimed());
        let mut fence = get_lock("a");
        let step = bench.run_until(&mut fence, Input::Start, |step| step.tag == WRITE_COUNTER);
        assert!(matches!(step.action, Action::Store(_)));
        let end = fence.resume(&bench.config, Input::Failed(StoreFailure::Timeout), 0);
        assert!(matches!(end.action, Action::Done(Acquire::Failed { .. })));
    }

    #[test]
    fn tokens_parse_back_and_refuse_other_shapes() {
        let token = counter_token(42, "c:7");
        assert_eq!(token, "#0000000000000000042/c:7");
        assert_eq!(parse_counter_token(&token), Some((42, "c:7")));
        assert_eq!(parse_counter_token("00000000000000000042c:7"), None);
        assert_eq!(parse_counter_token("#12/c"), None);
    }
}
