//! The contract checks' constants of the simulator (docs/contract.md): how fast a request is
//! without faults, how often the oracle and the holders look. The bounds computed from them
//! go into a run's event record (`crate::events::bounds`); the checks themselves are the
//! judge's (`cassalock_judge::rows::contract`).

pub use cassalock_judge::rows::contract::{ContractBounds, ContractFigures};

/// The longest a request takes when no fault is active: a client-coordinator-replica round
/// trip is four messages of at most 10 ms each in madsim's default network; 100 ms leaves room
/// for a read repair. C-release's bound is computed with it.
pub const FAULT_FREE_REQUEST_MS: u64 = 100;

/// How often the oracle looks at the replicas (`crate::oracles::watch_replicas`): a cell seen
/// live once after a failed call returned may have died any time before the next look.
pub const ORACLE_PERIOD_MS: u64 = 200;

/// How often the workload's holders ask `is_lost()` (`crate::workload`); C-lost's bound adds
/// one period.
pub const LEASE_CHECK_MS: u64 = 100;
