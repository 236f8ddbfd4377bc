//! `cassalock real`: the library's lock code against a running Cassandra cluster or Redis and
//! Memcached servers, with a resource check; and `cassalock bench real`, the benchmark behind
//! `reports/real-backends.md`.
//!
//! Only the real build (no `--cfg madsim`) talks to servers; the simulation build checks the
//! options and prints how to get the real one.

mod args;
#[cfg(not(madsim))]
mod backends;
#[cfg(not(madsim))]
mod bench;
mod client;
#[cfg(not(madsim))]
mod faults;
mod plan;
mod report;
#[cfg(not(madsim))]
mod run;
mod servers;
#[cfg(madsim)]
mod simulation;
#[cfg(test)]
mod tests;
mod warm_up;

pub use args::RealArgs;
pub use client::run as run_client;
pub use plan::{check_contact_points, BenchPlan, BenchRealFlags};
pub use report::rerender;
#[cfg(madsim)]
pub use simulation::{bench_needs_the_real_build, run};

#[cfg(not(madsim))]
pub use self::{bench::bench, run::run};

// The real build's `bench` reaches these as `super::X`, as it did when it lived in this module.
#[cfg(not(madsim))]
use self::{
    args::CONNECT_TIMEOUT_S,
    plan::row_lock_settings,
    report::{print_written, violations},
};
