//! # cassalock-sim
//!
//! The deterministic simulation: the real lock code (`cassalock::RemoteLocker` and the
//! machines) against a simulated Cassandra cluster under madsim. It exists only in the
//! simulation build (`--cfg madsim`, the default here); the real build compiles it empty.
//!
//! A run ([`run`]) is assembled from its parts: the nodes (`assembly`), the clients'
//! workload (`workload`), the fault injector (`faults`) and the oracles (`oracles`); its
//! records ([`trace`]) are judged in [`verdict`] (the theorems) and [`contract`] (what each
//! public call promises, docs/contract.md).

#[cfg(madsim)]
mod assembly;
#[cfg(madsim)]
pub mod clock;
#[cfg(madsim)]
pub mod cluster;
#[cfg(madsim)]
pub mod config;
#[cfg(madsim)]
pub mod contract;
#[cfg(madsim)]
pub mod events;
#[cfg(madsim)]
pub mod family;
#[cfg(madsim)]
mod faults;
#[cfg(madsim)]
pub mod knobs;
#[cfg(madsim)]
pub mod metrics;
#[cfg(madsim)]
mod oracles;
#[cfg(madsim)]
pub mod ranges;
#[cfg(madsim)]
pub mod run;
#[cfg(madsim)]
pub mod scenario;
#[cfg(madsim)]
pub mod server_reading;
#[cfg(madsim)]
pub mod timeline;
#[cfg(madsim)]
pub mod trace;
#[cfg(madsim)]
pub mod transport;
#[cfg(madsim)]
pub mod verdict;
#[cfg(madsim)]
pub mod wire;
#[cfg(madsim)]
mod workload;
