//! # getlock: the fair queue lock (Listing 6)
//!
//! Every thread that wants the lock first writes a cell to the lock's *queue row*, named by the
//! time it read (20 zero-padded digits of microseconds) followed by its thread id (Listing 5).
//! Cassandra keeps a row's cells sorted by name, so the row reads as a queue in time order. A
//! thread then polls the head of the queue. When it finds itself first it writes its thread id
//! into the *main row* and reads the main row back: alone there, it holds the lock; otherwise
//! it deletes its main cell and tries again. Release deletes the main cell, then the queue cell,
//! and the next thread in the queue finds itself first.
//!
//! Why it works. Two threads can both believe they are first only if one enqueued late with an
//! earlier time. Both then write the main row and read it back, and Lemma 1 says at least one
//! of them sees both cells, so at most one keeps its cell: **T1**. A thread stays in the queue
//! until it acquires, and threads that arrive later sort after it as long as time does not run
//! backwards, so it eventually reaches the head: **T2**. The queue serves threads in time order:
//! **F**.
//!
//! Where it is subtle. "Read the time" and "write the queue cell" are two steps. A thread
//! delayed between them (a GC pause, a slow network) lands ahead of threads already waiting,
//! perhaps ahead of the holder itself. The main-row check is what keeps T1 then; skip it
//! (mutant **M1**) and two threads hold the lock. Leases add time: cells carry a TTL, and the
//! TTL is judged by whichever node coordinates the read, so clocks that differ by the TTL
//! expire a fresh cell at once (**S2**); a holder paused past its TTL still believes it holds
//! (**K1**), and only a fencing token checked by the resource stops the damage; a release that
//! does not wait for the renewal task can be undone by a late renewal write (**K3**).
//!
//! # What is checked
//!
//! | property | kind | meaning |
//! |---|---|---|
//! | T1 | always | at most one thread is in its critical section (believes it holds) |
//! | F-order | always | whoever acquires is at the head of the queue at that moment |
//! | F-overtakes | always | no waiter is overtaken (by a thread that started waiting later) more than the bound (0) |
//! | T1-resource | always | with a resource: it never accepts a write with a stale token |
//! | K3 | always | with leases: no released acquisition's main cell stays live |
//! | T2 | liveness | every waiting thread eventually acquires (our fair-cycle check) |
//!
//! # Fault knobs (`--fault`)
//!
//! - `none`: a perfect clock, atomic enqueue, no TTL. Exhaustive, unbounded.
//! - `delayed-enqueue`: reading the time and writing the queue cell are separate steps.
//! - `skew`: ticks; thread 0's clock runs one tick behind the others (no TTL).
//! - `ttl-skew`: ticks, TTL 2 ticks; thread 1's requests go to a node whose clock is a whole
//!   TTL ahead (S2).
//! - `pause`: ticks, TTL 2 ticks; thread 0 may be paused while it holds, for any number of
//!   ticks; holders write to the resource (K1).
//! - `crash`: ticks, TTL 2 ticks; thread 0 may crash while it holds.
//!
//! Mutants (`--mutant`): `m1` skips the main-row check; `k3` releases without waiting for the
//! renewal task (and turns leases on).

use crate::lock_world::{LockAlgorithm, LockModelConfig};
use crate::{Spec, SpecError};

/// Default sizes: 3 threads x 2 acquisitions untimed, 2 x 1 with ticks.
pub fn config(spec: &Spec) -> Result<LockModelConfig, SpecError> {
    crate::lock_config(LockAlgorithm::GetLock, spec)
}
