//! # trygetlock: take the lock only if nobody has it (Listing 7)
//!
//! TryGetLock first reads the main row and gives up at once if anybody's cell is there. If the
//! main row is empty it enqueues like GetLock and looks at the head of the queue once: not
//! first, it deletes its queue cell and gives up; first, it writes its main cell and reads the
//! main row back, holding the lock if its cell is alone and otherwise deleting it and looking at
//! the queue again.
//!
//! **T3** (at most one holder) is T1's argument word for word: the success condition is the
//! same main-row check. **T4** claims that when several threads call TryGetLock on a free lock
//! at least one of them gets it: the thread first in the queue keeps looping while the main row
//! holds other cells, and those belong to threads that will delete them once they see they are
//! not first.
//!
//! Note what "try" means here: a thread first in the queue that finds another thread's cell in
//! the main row loops (steps 4–10) for as long as that cell stays, which may be a holder's whole
//! critical section. The thesis's T4 proof relies on exactly that loop.
//!
//! # What is checked
//!
//! | property | kind | meaning |
//! |---|---|---|
//! | T3 | always | at most one caller holds the lock |
//! | T1-resource, K3 | always | as in `getlock`, under the pause and lease knobs |
//! | T4 | liveness | some caller acquires: no run ends, and no fair cycle runs for ever, with nobody having acquired |
//!
//! Each thread makes `--acquisitions` attempts (default 1: the T4 setting, everybody calls
//! once on a free lock). Fault knobs and mutants are those of `getlock`.

use crate::lock_world::{LockAlgorithm, LockModelConfig};
use crate::{Spec, SpecError};

/// Default sizes: 3 threads x 1 attempt untimed, 2 x 1 with ticks.
pub fn config(spec: &Spec) -> Result<LockModelConfig, SpecError> {
    crate::lock_config(LockAlgorithm::TryGetLock, spec)
}
