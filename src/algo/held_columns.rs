//! Ours, for the model checker (reduction 7): every Listing 5 queue column a machine
//! holds, reachable so that a model can rename the times inside them.
//!
//! Where no clock is read but the time source (no TTL, no deadline: the models' skew worlds),
//! a reading matters only through the queue columns built from it, and those are only ever
//! compared with one another and with later readings. A model checker may then rewrite the
//! time in every column by one order-preserving map (times that lie below every later reading
//! closer together, and everything shifted so that the clock sits at a fixed tick). No machine
//! decides differently afterwards, and states that differ only by where they sit in time
//! become one. For that the model must reach every column: in the machines' own state, in the
//! store commands they are about to send, in leases, tokens and what a finished machine
//! returns. A driver never calls this.
//!
//! Each type hands over every string it holds that may be a queue column (columns, cell
//! values, tokens, the start of a read); the caller recognises the columns
//! ([`crate::algo::queue_column::parse_queue_column`]) and leaves the other strings alone.

use std::collections::BTreeSet;

use super::queue_column::FencingToken;
use super::{Acquire, Action, LeaseCells};
use crate::store::StoreOp;

/// A value that may hold Listing 5 queue columns. See the module documentation.
pub trait HeldColumns {
    /// Call `see` with every string held that may be a queue column.
    fn see_columns(&self, see: &mut dyn FnMut(&str));
    /// Rewrite each of those strings in place with `rename`, which must leave a string that is
    /// not a queue column as it is and preserve the order of those that are (so that sets and
    /// maps keyed by them keep their order).
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String));
}

impl HeldColumns for String {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        see(self)
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        rename(self)
    }
}

impl<T: HeldColumns> HeldColumns for Option<T> {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        if let Some(value) = self {
            value.see_columns(see)
        }
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        if let Some(value) = self {
            value.rename_columns(rename)
        }
    }
}

impl<A: HeldColumns, B: HeldColumns> HeldColumns for (A, B) {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        self.0.see_columns(see);
        self.1.see_columns(see);
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        self.0.rename_columns(rename);
        self.1.rename_columns(rename);
    }
}

/// A set of (row, column) pairs: renamed by rebuilding it (the order is kept, but a set's
/// elements cannot be changed in place).
impl HeldColumns for BTreeSet<(String, String)> {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        for pair in self {
            pair.see_columns(see);
        }
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        let pairs = std::mem::take(self);
        *self = pairs
            .into_iter()
            .map(|mut pair| {
                pair.rename_columns(rename);
                pair
            })
            .collect();
    }
}

/// Nothing of a unit or of a value without strings.
macro_rules! holds_no_columns {
    ($($t:ty),*) => {$(
        impl $crate::algo::held_columns::HeldColumns for $t {
            fn see_columns(&self, _: &mut dyn FnMut(&str)) {}
            fn rename_columns(&mut self, _: &mut dyn FnMut(&mut String)) {}
        }
    )*};
}
pub(crate) use holds_no_columns;

impl HeldColumns for FencingToken {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        see(&self.0)
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        rename(&mut self.0)
    }
}

impl HeldColumns for LeaseCells {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        self.queue_column.see_columns(see)
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        self.queue_column.rename_columns(rename)
    }
}

impl HeldColumns for Acquire {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        if let Acquire::Acquired { lease, token } = self {
            lease.see_columns(see);
            token.see_columns(see);
        }
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        if let Acquire::Acquired { lease, token } = self {
            lease.rename_columns(rename);
            token.rename_columns(rename);
        }
    }
}

impl<T> HeldColumns for StoreOp<T> {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        match self {
            StoreOp::Write { cells, .. } => {
                for cell in cells {
                    see(&cell.column);
                    see(&cell.value);
                }
            }
            StoreOp::Delete { column, .. } => see(column),
            StoreOp::ReadSlice { start, .. } => see(start),
        }
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        match self {
            StoreOp::Write { cells, .. } => {
                for cell in cells {
                    rename(&mut cell.column);
                    rename(&mut cell.value);
                }
            }
            StoreOp::Delete { column, .. } => rename(column),
            StoreOp::ReadSlice { start, .. } => rename(start),
        }
    }
}

impl<T: HeldColumns, C: HeldColumns> HeldColumns for Action<T, C> {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        match self {
            Action::Store(command) => command.see_columns(see),
            Action::Done(outcome) => outcome.see_columns(see),
            Action::Sleep { .. } | Action::Draw { .. } | Action::ReadTime | Action::StopRenewal { .. } => {}
        }
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        match self {
            Action::Store(command) => command.rename_columns(rename),
            Action::Done(outcome) => outcome.rename_columns(rename),
            Action::Sleep { .. } | Action::Draw { .. } | Action::ReadTime | Action::StopRenewal { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::queue_column::{parse_queue_column, queue_column, set_queue_time, ClientId};

    /// Every column a finished GetLock's outcome holds is reached, and renamed in place.
    #[test]
    fn an_outcome_hands_over_its_lease_column_and_its_token() {
        let thread = ClientId::new("a").unwrap().thread(1);
        let column = queue_column(3_000_000, &thread);
        let mut action: Action<Acquire> = Action::Done(Acquire::Acquired {
            lease: LeaseCells {
                lock: crate::algo::LockId::new("L").unwrap(),
                thread: thread.clone(),
                queue_column: Some(column.clone()),
                main_written_at_us: 0,
            },
            token: FencingToken(column.clone()),
        });
        let mut seen = Vec::new();
        action.see_columns(&mut |s| seen.push(s.to_owned()));
        assert_eq!(seen, [column.clone(), column]);
        action.rename_columns(&mut |s| {
            if let Some((time, _)) = parse_queue_column(s) {
                set_queue_time(s, time - 1_000_000);
            }
        });
        let mut renamed = Vec::new();
        action.see_columns(&mut |s| renamed.push(parse_queue_column(s).map(|(time, _)| time)));
        assert_eq!(renamed, [Some(2_000_000), Some(2_000_000)]);
    }
}
