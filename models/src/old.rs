//! # old: the shadow-row lock (Listings 3–4)
//!
//! The algorithm the thesis replaced. A thread reads the main row: one cell there means
//! somebody owns the lock (Success if it is us). An empty main row starts a contest in the
//! *shadow row*: write our cell, read the shadow row; alone there, read the main row again and,
//! still empty, write our cell into it, delete our shadow cell and own the lock. Not alone: delete
//! our shadow cell and report ConcurrentAttempt. GetLock repeats TryLock, sleeping a random
//! 0–1000 ms after AnotherThreadIsOwner and 0–50·attempt ms after ConcurrentAttempt.
//!
//! **T1 holds**, by Lemma 1 on the shadow row: of two threads that both write it and read it
//! back, at least one sees both cells and backs off, and a thread only writes the main row after
//! finding it empty *after* winning the shadow row.
//!
//! **T2 fails.** Progress rests on the random sleeps: two threads can meet in the shadow row,
//! both back off, and meet again, for ever. A randomised scheduler makes that unlikely, but
//! nothing excludes it, and the checker finds the cycle (a *fair* one: both threads keep
//! taking steps). The thesis's own complaint is the milder version of this: a releasing thread
//! re-acquires while the other sleeps, so threads hold the lock in long batches (**F** fails:
//! a later thread overtakes one that was already waiting).
//!
//! The model abstracts the sleeps' durations (a sleep lets any other step happen first), so the
//! random draw is irrelevant and answered with 0, and the attempt counter that scales it is held
//! at 1.
//!
//! # What is checked
//!
//! | property | kind | meaning |
//! |---|---|---|
//! | T1 | always | at most one holder |
//! | F-overtakes | always | no waiter is overtaken (expected to FAIL) |
//! | T2 | liveness | every waiter acquires (expected to FAIL, with a lasso) |
//!
//! Fault knobs and mutant K3 are those of `getlock` (M1 does not apply: there is no queue).

use crate::lock_world::{LockAlgorithm, LockModelConfig};
use crate::{Spec, SpecError};

/// Default sizes: 2 threads x 1 acquisition.
pub fn config(spec: &Spec) -> Result<LockModelConfig, SpecError> {
    crate::lock_config(LockAlgorithm::Old, spec)
}
