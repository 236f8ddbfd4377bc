//! # cassalock
//!
//! Distributed locks on Cassandra rows, after the thesis "distributed locks on Apache Cassandra"
//! (SKB Kontur): the old shadow-row lock (Listings 3–4), the fair queue GetLock (Listings 5–6),
//! TryGetLock (Listing 7), TTL leases with renewal and release (5.3) and the global time
//! service (Listing 8).
//!
//! Each listing is written once, as a sans-IO state machine in [`algo`]; Cassandra's cell
//! rules are written once, as [`store::RowStore`]. The async [`driver`] runs the machines
//! against any [`store::Store`]: the in-memory one here, the simulated cluster in `sim/`, or a
//! real Cassandra cluster. The stateright models in `models/` step the same machines.
//!
//! ```no_run
//! # async fn demo() -> Result<(), cassalock::LockError> {
//! use cassalock::{InMemoryStore, RemoteLocker, Settings, SystemClock};
//! let locker = RemoteLocker::new(InMemoryStore::new(SystemClock), SystemClock, Settings::new("web-1"))?;
//! let guard = locker.lock("orders/42").await?;
//! // ... the critical section; pass guard.fencing_token() to the resource ...
//! guard.release().await?;
//! # Ok(()) }
//! ```

pub mod algo;
pub mod driver;
pub mod registry;
pub mod store;

pub use algo::{FencingToken, LockId, ThreadId};
pub use driver::{
    Algorithm, Clock, LockError, LockEvent, LockGuard, Observer, RemoteLocker, Settings, SystemClock, TimeSource,
};
pub use store::memory::InMemoryStore;
pub use store::{RowStore, Store, StoreFailure};
