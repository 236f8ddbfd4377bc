//! The other lock families in the simulator: the library's `FamilyLocker`, unchanged,
//! against simulated Redis and Memcached servers under madsim (SET NX, Redlock, Memcached `add`,
//! Redisson's `RLock` and fair lock), and Curator's lock and etcd's mutex against
//! simulated ZooKeeper and etcd servers that judge sessions and leases on their own clocks and
//! send fired watches over the network (docs/simulator.md).
//!
//! The lock code decides everything; the simulator only moves messages, runs clocks and injects
//! faults, then judges what happened from the run's records (simulated time, the god view):
//!
//! - [`net`]: the server nodes (one madsim node per Redis instance or Memcached server, each
//!   applying the library's value type on its *own* [`crate::clock::SimClock`]), a Redis
//!   primary+replica pair with `ReplicatedRedis`'s asynchronous replication and a failover, and
//!   the client side, [`net::SimServerStore`], a `FamilyStore` with a request timeout and (for
//!   Redisson) a subscription to the server's pub/sub, whose messages travel the network.
//! - [`sim_lock`]: a lock as the simulator runs it, whoever defined it (the library's locks and
//!   a user's own alike): its server, lease, renewal, wake-up, and a locker per client.
//! - [`scenario`]: the named scenarios, each a premise of the locks and the fault that breaks it.
//! - [`run`]: one seed: the nodes, the clients' workload, the faults, the records.
//! - [`events`]: a run's records as the event record every driver writes, and [`verdict`]
//!   its verdicts by the one judge (`cassalock_judge::families`: T1-belief, T1-resource,
//!   C-release, C-lost for a lock with a watchdog, T2, T2-free, and for the fair lock F-order
//!   and F-drop, judged from the server's own records of its queue), and the longest handover
//!   of a run.
//!
//! Verdicts say "no violation in N seeds", never "holds": a sweep samples runs, it proves nothing.

pub mod events;
pub mod net;
pub mod record;
pub mod run;
pub mod scenario;
pub mod scenario_file;
pub mod sim_lock;
pub mod verdict;

pub use record::{FamilyRecord, FamilyWhat};
pub use run::{check_family_determinism, run_family, FamilyOutcome};
pub use scenario::{scenarios, FamilyScenario, ScenarioError};
pub use verdict::{Claim, FamilyVerdicts, Verdict};
