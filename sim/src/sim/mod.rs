//! The deterministic simulation: the real lock code (`cassalock::RemoteLocker` and the
//! machines) against a simulated Cassandra cluster under madsim.

pub mod clock;
pub mod cluster;
pub mod metrics;
pub mod run;
pub mod scenario;
pub mod timeline;
pub mod trace;
pub mod verdict;
