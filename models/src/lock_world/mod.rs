//! The world the lock models run in: thread actors stepping the library's machines against one
//! linearizable copy of the store, a clock, a fault injector and a resource.
//!
//! # Actors
//!
//! - **Thread *i*, main task**: runs acquisitions one after another. Each acquisition is the
//!   library's own machine (`QueueGetLock`, `QueueTryGetLock` or `OldGetLock`, inside the same
//!   `Retrying` wrapper the driver uses), then a critical section (optionally a write to the
//!   resource, carrying the fencing token), then the library's `Release` machine.
//! - **Thread *i*, renewal task**: the library's `Renewal` machine, started when a lease with a
//!   TTL is acquired. A released lock's renewal may outlive its release (mutant K3).
//! - **The store**: one `RowStore`. A thread's step executes its pending store command
//!   atomically, so the store is linearizable: every command takes effect at the step that
//!   sends it. The reply is the thread's input for its next step.
//! - **The clock** (ticks mode only): advances global time by one tick.
//! - **The fault injector**: pauses or crashes a holder, or fails one store request before or
//!   after the store applies it (`--fault store-failure`). It is not bound by fairness.
//! - **The resource**: records the highest fencing token it accepted; with fencing on it
//!   refuses lower ones.
//!
//! Every step is "carry out the pending action, hand the machine its answer, keep the next
//! action as pending". Sleeps are yields (any duration), except renewal sleeps in ticks mode,
//! which end when the thread's clock reaches their wake-up time. Random backoff draws always
//! answer 0: durations are abstracted, so the draw's value cannot matter.
//!
//! # Time
//!
//! - **Perfect clock** (no timing fault): every reading of the time source is strictly greater
//!   than the last one. Cells never expire and there is no renewal. Readings are counted, so
//!   the state space is finite and explored exhaustively.
//! - **Ticks** (TTL, skew, pause, crash): a global tick counter bounded by `max`; thread *i*'s
//!   clock reads `now + client_offset_ticks[i]`, and its requests are coordinated by a node whose
//!   clock reads `now + coordinator_offset_ticks[i]` (which fixes TTL expiry of what it writes and
//!   judges liveness of what it reads, as in Cassandra). A tick is not allowed while a running
//!   thread has a timed duty due (a renewal, a waiting queue cell to refresh): renewal is
//!   punctual unless the thread is paused. Results are bounded by `max`.
//!
//! # Reductions, all exact
//!
//! - **Write timestamps are ranks.** The store is linearizable and each lock cell has a
//!   single writer whose client timestamps increase, so a later command always carries a later
//!   timestamp. After every step the model renames all stored timestamps to 1, 2, 3, ... in
//!   order: reconciliation only compares timestamps, so no read changes.
//! - **Dead versions are purged.** For the same reason a tombstone never has to shadow a
//!   future write, and a cell expired at the slowest coordinator's clock is expired for every
//!   reader from then on; dropping both changes no read.
//!
//! - **A violation flag lives one state.** F-order's flag, an overtake count past its bound,
//!   T1-resource's and C-token's flags record that the step just taken broke a claim. No step
//!   reads them, so the next step clears them: the violating state is still reached by the same
//!   shortest path and judged, and the rest of the run is no longer explored twice, once with
//!   the flag and once without (`LockModel::forget_recorded_violations`).
//! - **Bookkeeping only for claims that are checked.** The wait order and overtake counts exist
//!   only where F is checked, the ticks of a hold and of a resume only where C-lost is (leases
//!   with a TTL); the per-thread count of acquisitions that got the lock is one flag, "someone
//!   acquired", all T4's obligation reads. Unused fields never tell states apart.
//! - **An invisible start merges with the first act.** Starting an acquisition sends nothing and
//!   reads no clock, so with a delayed enqueue it is one step with reading the time
//!   (`LockModel::merge_invisible_start`); F then counts a thread as waiting from that reading.
//!
//! Without the first two, every retry loop (the old algorithm's shadow-row dance, renewals) would
//! grow timestamps for ever and no model would be finite. The last three cut GetLock 3 x 2 with a
//! delayed enqueue from over 3 million states to 859,761, and 2 x 2 with a clock a tick behind
//! from 1,055,767 to 172,940. There is no symmetry reduction: thread ids
//! break ties in queue order, so threads are not interchangeable.
//!
//! # Where things are
//!
//! | file | what |
//! |---|---|
//! | [`config`] | what a run is parametrized by, and the fault presets shared by the three lock models |
//! | [`state`] | the world: threads (each acquisition a library `Lifecycle`), the store, the resource |
//! | [`step`] | the model's driver: carries out the lifecycles' actions; time, faults, the reductions |
//! | [`fairness`] | the bookkeeping behind F: wait order, overtakes, queue order at acquisition |
//! | [`trace`] | how a step and a state read in a counterexample |
//! | [`properties`] | every property, liveness obligation and measure, in one place |

mod config;
mod fairness;
mod properties;
mod state;
mod step;
mod trace;

pub use config::{apply_fault, Clocks, LockAlgorithm, LockModelConfig, LOCK};
pub use state::{Act, Lane, Main, Pending, Resource, Slot, Thread, World};
pub use step::LockModel;
pub use trace::{parse_model_thread, short_column, show_time, Event};
