//! Listing 8 and section 5.4: the global time service.
//!
//! One cell, `GlobalTime`, holds the greatest local time any replica of the time service has
//! seen. Every replica, every ~500 ms, runs TryUpdateGlobalTime:
//!
//! 1. read its local time L;
//! 2. read the GlobalTime cell, G;
//! 3. if L > G, (4) write GlobalTime = L **with write timestamp L**.
//!
//! Theorem 5: GlobalTime never decreases — the cell's value always equals its timestamp, and
//! last-write-wins never lets a lower timestamp replace a higher one. Asking for the time is
//! reading the cell ([`ReadGlobalTime`]).
//!
//! S1 (thesis section 6): a replica whose clock ran ahead by D and then crashed leaves G at a
//! value the other replicas' clocks only reach D later; until then the service answers the same
//! time.
//!
//! The value is written as 20 decimal digits (microseconds), so it reads well in traces and
//! sorts as it compares.

use super::{Input, Machine, RetryPolicy, Source, Step, StepTag};
use crate::store::{CellWrite, Stamp, StoreFailure, StoreOp, StoreReply};

/// The row of the GlobalTime cell. Its prefix, `g:`, is no lock row's (`m:`, `q:`, `s:`, `t:`
/// and the lock id): it was `t:` until the counter token took `t:` for token rows, and a lock
/// named `time-service` then shared its row with GlobalTime (found by mutation testing:
/// docs/mutants.md).
pub const GLOBAL_TIME_ROW: &str = "g:time-service";
/// The GlobalTime column.
pub const GLOBAL_TIME_COLUMN: &str = "GlobalTime";

impl AsRef<RetryPolicy> for RetryPolicy {
    fn as_ref(&self) -> &RetryPolicy {
        self
    }
}

/// Encode a time as the GlobalTime cell's value.
pub fn encode_time(time_us: u64) -> String {
    // 20 digits hold any u64; written by hand because the model checker renames every stored
    // time after each step, and `format!` was a tenth of its time.
    let mut digits = [b'0'; 20];
    let mut rest = time_us;
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    debug_assert_eq!(rest, 0, "a u64 has at most 20 digits");
    let encoded = String::from_utf8(digits.to_vec()).expect("ASCII digits");
    debug_assert_eq!(encoded, format!("{time_us:020}"));
    encoded
}

/// Decode the GlobalTime cell's value.
pub fn decode_time(value: &str) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    // One pass (a model checker decodes every stored time after each step): digits only, and
    // `None` past u64::MAX, as `str::parse` would say.
    value.bytes().try_fold(0u64, |time, byte| {
        let digit = byte.checked_sub(b'0').filter(|digit| *digit <= 9)?;
        time.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

fn read_global_time() -> crate::store::StoreCommand {
    StoreOp::ReadSlice {
        row: GLOBAL_TIME_ROW.to_owned(),
        start: GLOBAL_TIME_COLUMN.to_owned(),
        count: 1,
    }
}

/// The GlobalTime value in a read reply: `Ok(None)` when the cell was never written.
fn global_time_in(cells: &[crate::store::LiveCell]) -> Result<Option<u64>, StoreFailure> {
    match cells.first() {
        Some(cell) if cell.column == GLOBAL_TIME_COLUMN => decode_time(&cell.value)
            .map(Some)
            .ok_or_else(|| StoreFailure::Other(format!("the GlobalTime cell holds {:?}, not a time", cell.value))),
        _ => Ok(None),
    }
}

/// How one TryUpdateGlobalTime ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GlobalTimeUpdate {
    /// L < G... or equal: nothing written.
    Unchanged {
        local_us: u64,
        global_us: u64,
    },
    /// GlobalTime was written with L (it was `previous_us`, or absent).
    Raised {
        previous_us: Option<u64>,
        to_us: u64,
    },
    Failed(StoreFailure),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum UpdateState {
    Idle,
    Reading { local_us: u64 },
    Writing { previous_us: Option<u64>, local_us: u64 },
    Finished,
}

/// Listing 8 as a machine. `now_us` at [`Input::Start`] is the replica's local time L.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TryUpdateGlobalTime {
    state: UpdateState,
}

const L8_READ: StepTag = StepTag::new(Source::L8, 2, "read the GlobalTime cell");
const L8_WRITE: StepTag = StepTag::new(
    Source::L8,
    4,
    "local > global: write GlobalTime = local, timestamp = local",
);
const L8_UNCHANGED: StepTag = StepTag::new(Source::L8, 3, "local <= global: nothing to write");
const L8_RAISED: StepTag = StepTag::new(Source::L8, 4, "GlobalTime raised");
const L8_FAILED: StepTag = StepTag::new(Source::Ours, 0, "the store kept failing: skip this round");

impl Default for TryUpdateGlobalTime {
    fn default() -> Self {
        Self::new()
    }
}

impl TryUpdateGlobalTime {
    pub fn new() -> Self {
        TryUpdateGlobalTime {
            state: UpdateState::Idle,
        }
    }

    /// The times this machine holds (its local time L, and G once read): at most two, and
    /// no allocation (a model checker asks after every step).
    pub fn times(&self) -> impl Iterator<Item = u64> {
        let (local, global) = match &self.state {
            UpdateState::Reading { local_us } => (Some(*local_us), None),
            UpdateState::Writing { previous_us, local_us } => (Some(*local_us), *previous_us),
            UpdateState::Idle | UpdateState::Finished => (None, None),
        };
        global.into_iter().chain(local)
    }

    /// Rename every time it holds through `rename`, which must be strictly increasing. Listing 8
    /// only compares and copies times, so a model checker may replace them by their ranks.
    pub fn rename_times(&mut self, rename: impl Fn(u64) -> u64) {
        match &mut self.state {
            UpdateState::Reading { local_us } => *local_us = rename(*local_us),
            UpdateState::Writing { previous_us, local_us } => {
                *local_us = rename(*local_us);
                if let Some(previous) = previous_us {
                    *previous = rename(*previous);
                }
                debug_assert!(
                    previous_us.is_none_or(|previous| *local_us > previous),
                    "rename_times: the renaming must be strictly increasing (it reordered G and L)"
                );
            }
            UpdateState::Idle | UpdateState::Finished => {}
        }
    }
}

impl TryUpdateGlobalTime {
    /// One transition; [`Machine::resume`] checks it in debug builds.
    fn advance(&mut self, _config: &RetryPolicy, input: Input, now_us: u64) -> Step<GlobalTimeUpdate> {
        if let Input::Failed(failure) = input {
            self.state = UpdateState::Finished;
            return Step::done(L8_FAILED, GlobalTimeUpdate::Failed(failure));
        }
        match (std::mem::replace(&mut self.state, UpdateState::Finished), input) {
            // L8.1: localTime = the replica's clock.
            (UpdateState::Idle, Input::Start) => {
                self.state = UpdateState::Reading { local_us: now_us };
                Step::store(L8_READ, read_global_time())
            }
            (UpdateState::Reading { local_us }, Input::Reply(StoreReply::Slice(cells))) => {
                let global = match global_time_in(&cells) {
                    Ok(global) => global,
                    Err(failure) => return Step::done(L8_FAILED, GlobalTimeUpdate::Failed(failure)),
                };
                match global {
                    Some(global_us) if local_us <= global_us => {
                        Step::done(L8_UNCHANGED, GlobalTimeUpdate::Unchanged { local_us, global_us })
                    }
                    previous_us => {
                        debug_assert!(
                            previous_us.is_none_or(|previous| local_us > previous),
                            "L8.3: GlobalTime is written only with a greater time"
                        );
                        debug_assert_eq!(
                            decode_time(&encode_time(local_us)),
                            Some(local_us),
                            "L8.4: the written value decodes to its timestamp (Theorem 5)"
                        );
                        self.state = UpdateState::Writing { previous_us, local_us };
                        let write = StoreOp::Write {
                            row: GLOBAL_TIME_ROW.to_owned(),
                            cells: vec![CellWrite {
                                column: GLOBAL_TIME_COLUMN.to_owned(),
                                value: encode_time(local_us),
                                ttl_s: None,
                            }],
                            timestamp: Stamp::At(local_us),
                        };
                        Step::store(L8_WRITE, write)
                    }
                }
            }
            (UpdateState::Writing { previous_us, local_us }, Input::Reply(StoreReply::Done)) => Step::done(
                L8_RAISED,
                GlobalTimeUpdate::Raised {
                    previous_us,
                    to_us: local_us,
                },
            ),
            (state, input) => {
                panic!("TryUpdateGlobalTime: input {input:?} does not answer state {state:?}")
            }
        }
    }
}

impl Machine for TryUpdateGlobalTime {
    type Config = RetryPolicy;
    type Output = GlobalTimeUpdate;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &RetryPolicy, input: Input, now_us: u64) -> Step<GlobalTimeUpdate> {
        super::resume_checked(
            "TryUpdateGlobalTime",
            self,
            |machine| machine.state == UpdateState::Finished,
            Self::advance,
            (config, input, now_us),
        )
    }
}

/// What asking the time service returned.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GlobalTimeReading {
    Time(u64),
    /// No replica has written GlobalTime yet.
    NotYetWritten,
    Failed(StoreFailure),
}

/// Section 5.4: ask the time service for the time (read the GlobalTime cell).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReadGlobalTime {
    asked: bool,
}

const READ: StepTag = StepTag::new(Source::TimeClient, 0, "ask the time service: read GlobalTime");
const ANSWER: StepTag = StepTag::new(Source::TimeClient, 0, "the time service answered");

impl ReadGlobalTime {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Machine for ReadGlobalTime {
    type Config = RetryPolicy;
    type Output = GlobalTimeReading;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, _config: &RetryPolicy, input: Input, _now_us: u64) -> Step<GlobalTimeReading> {
        match (self.asked, input) {
            (false, Input::Start) => {
                self.asked = true;
                Step::store(READ, read_global_time())
            }
            (true, Input::Reply(StoreReply::Slice(cells))) => {
                let reading = match global_time_in(&cells) {
                    Ok(Some(time_us)) => GlobalTimeReading::Time(time_us),
                    Ok(None) => GlobalTimeReading::NotYetWritten,
                    Err(failure) => GlobalTimeReading::Failed(failure),
                };
                Step::done(ANSWER, reading)
            }
            (true, Input::Failed(failure)) => Step::done(ANSWER, GlobalTimeReading::Failed(failure)),
            (asked, input) => panic!("ReadGlobalTime (asked: {asked}): unexpected input {input:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::Action;
    use crate::store::RowStore;

    /// Run one machine against `store`, coordinated at `now_us`.
    fn run<M: Machine<Config = RetryPolicy, Command = crate::store::StoreCommand, Reply = crate::store::StoreReply>>(
        machine: &mut M,
        store: &mut RowStore,
        now_us: u64,
    ) -> (M::Output, Vec<StepTag>) {
        let mut input = Input::Start;
        let mut tags = Vec::new();
        loop {
            let step = machine.resume(&RetryPolicy::default(), input, now_us);
            tags.push(step.tag);
            input = match step.action {
                Action::Store(command) => Input::Reply(
                    command
                        .stamp(|| panic!("Listing 8 sets its own timestamps"))
                        .apply_to(store, now_us),
                ),
                Action::Done(output) => return (output, tags),
                _ => panic!("Listing 8 and the time client only use the store"),
            };
        }
    }

    #[test]
    fn l8_raises_global_time_only_when_local_time_is_ahead() {
        let mut store = RowStore::new();
        let (first, tags) = run(&mut TryUpdateGlobalTime::new(), &mut store, 100);
        assert_eq!(
            first,
            GlobalTimeUpdate::Raised {
                previous_us: None,
                to_us: 100
            }
        );
        assert_eq!(tags, [L8_READ, L8_WRITE, L8_RAISED]);
        let (behind, tags) = run(&mut TryUpdateGlobalTime::new(), &mut store, 90);
        assert_eq!(
            behind,
            GlobalTimeUpdate::Unchanged {
                local_us: 90,
                global_us: 100
            }
        );
        assert_eq!(tags, [L8_READ, L8_UNCHANGED]);
        let (ahead, _) = run(&mut TryUpdateGlobalTime::new(), &mut store, 150);
        assert_eq!(
            ahead,
            GlobalTimeUpdate::Raised {
                previous_us: Some(100),
                to_us: 150
            }
        );
        assert_eq!(
            run(&mut ReadGlobalTime::new(), &mut store, 0).0,
            GlobalTimeReading::Time(150)
        );
        assert_eq!(
            store.version(GLOBAL_TIME_ROW, GLOBAL_TIME_COLUMN).unwrap().timestamp_us,
            150,
            "value = timestamp"
        );
    }

    #[test]
    fn t5_a_late_write_of_an_older_time_cannot_lower_global_time() {
        // A replica read G=100 at local time 120 and is slow to write; meanwhile another
        // raised it to 150. The late write carries timestamp 120 and loses.
        let mut store = RowStore::new();
        run(&mut TryUpdateGlobalTime::new(), &mut store, 100);
        let mut slow = TryUpdateGlobalTime::new();
        let read = slow.resume(&RetryPolicy::default(), Input::Start, 120);
        let Action::Store(read) = read.action else { panic!() };
        let reply = read.stamp(|| 0).apply_to(&mut store, 120);
        let write = slow.resume(&RetryPolicy::default(), Input::Reply(reply), 120);
        run(&mut TryUpdateGlobalTime::new(), &mut store, 150);
        let Action::Store(write) = write.action else { panic!() };
        write.stamp(|| 0).apply_to(&mut store, 120);
        assert_eq!(
            run(&mut ReadGlobalTime::new(), &mut store, 0).0,
            GlobalTimeReading::Time(150)
        );
    }

    #[test]
    fn the_time_client_reports_a_missing_or_garbled_cell() {
        let mut store = RowStore::new();
        assert_eq!(
            run(&mut ReadGlobalTime::new(), &mut store, 0).0,
            GlobalTimeReading::NotYetWritten
        );
        store.write(GLOBAL_TIME_ROW, GLOBAL_TIME_COLUMN, "soon", 1, None, 0);
        assert!(matches!(
            run(&mut ReadGlobalTime::new(), &mut store, 0).0,
            GlobalTimeReading::Failed(StoreFailure::Other(_))
        ));
        assert!(matches!(
            run(&mut TryUpdateGlobalTime::new(), &mut store, 5).0,
            GlobalTimeUpdate::Failed(_)
        ));
        assert_eq!(decode_time(&encode_time(42)), Some(42));
        assert_eq!(encode_time(42).len(), 20);
        // A cell of another column in the row is not GlobalTime: it was never written.
        let mut foreign = RowStore::new();
        foreign.write(GLOBAL_TIME_ROW, "Later", "x", 1, None, 0);
        assert_eq!(
            run(&mut ReadGlobalTime::new(), &mut foreign, 0).0,
            GlobalTimeReading::NotYetWritten
        );
        // Only plain digits: what `parse` alone would accept ("+5") is refused too.
        for garbled in [
            "",
            "+5",
            "-5",
            " 5",
            "5 ",
            "0x10",
            "1e3",
            "18446744073709551616",
            "/",
            ":",
        ] {
            assert_eq!(decode_time(garbled), None, "{garbled:?}");
        }
        // The one-pass decoder agrees with `parse` on plain digits, up to u64::MAX.
        for time in [0, 7, 1_000_000, u64::MAX / 10, u64::MAX - 1, u64::MAX] {
            assert_eq!(decode_time(&time.to_string()), Some(time));
            assert_eq!(decode_time(&encode_time(time)), Some(time));
        }
    }

    #[test]
    fn no_lock_s_rows_share_the_global_time_row() {
        for id in ["time-service", "g", "GlobalTime", "t"] {
            let lock = crate::algo::LockId::new(id).unwrap();
            for row in [lock.main_row(), lock.queue_row(), lock.shadow_row(), lock.token_row()] {
                assert_ne!(row, GLOBAL_TIME_ROW, "lock {id:?}");
                assert!(!row.starts_with("g:"), "lock {id:?}: row {row}");
            }
        }
    }

    #[test]
    fn the_time_machines_retry_as_their_policy_says() {
        use crate::algo::retry::Retrying;
        use crate::algo::Action;
        let after_one_failure = |max_retries: u8| {
            let policy = RetryPolicy {
                max_retries,
                backoff_ms: 7,
            };
            let mut read = Retrying::new(ReadGlobalTime::new());
            let first = read.resume(&policy, Input::Start, 0);
            assert!(matches!(first.action, Action::Store(_)));
            read.resume(&policy, Input::Failed(StoreFailure::Timeout), 0).action
        };
        assert!(matches!(
            after_one_failure(0),
            Action::Done(GlobalTimeReading::Failed(StoreFailure::Timeout))
        ));
        assert!(matches!(after_one_failure(2), Action::Sleep { ms: 7, .. }));
    }
}
