//! # cassalock-sim
//!
//! The deterministic simulation: the real lock code (`cassalock::RemoteLocker` and the
//! machines) against a simulated Cassandra cluster under madsim. It exists only in the
//! simulation build (`--cfg madsim`, the default here); the real build compiles it empty.

#[cfg(madsim)]
pub mod clock;
#[cfg(madsim)]
pub mod cluster;
#[cfg(madsim)]
pub mod metrics;
#[cfg(madsim)]
pub mod ranges;
#[cfg(madsim)]
pub mod run;
#[cfg(madsim)]
pub mod scenario;
#[cfg(madsim)]
pub mod timeline;
#[cfg(madsim)]
pub mod trace;
#[cfg(madsim)]
pub mod verdict;
