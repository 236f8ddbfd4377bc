//! The simulation build's `real` and `bench real` (`--cfg madsim`): no servers to talk to, so
//! they say how to build and run the real one.

use std::process::ExitCode;

use cassalock_real::{Lock, RealLock};

use super::args::RealArgs;
use super::plan::BenchPlan;
use super::servers::{start_command, START_REPLICATED};

#[cfg(madsim)]
pub fn run(args: RealArgs) -> ExitCode {
    not_the_real_build(args.algorithm)
}

/// What the simulation build says when asked to run `lock` on real servers: the same command
/// line in the real build, and the servers that lock needs started first.
#[cfg(madsim)]
pub fn not_the_real_build(lock: Lock) -> ExitCode {
    let given: Vec<String> = std::env::args()
        .skip(1)
        .map(|word| shlex::try_quote(&word).map_or(word.clone(), |quoted| quoted.into_owned()))
        .collect();
    eprintln!(
        "error: `cassalock real` runs {} on real servers, and this is the simulation build (--cfg madsim).\n\
         Start its servers:\n  {}\n\
         then run the same command in the real build (own target directory; `cluster/cassalock-servers install etcd` first brings protoc, which it needs):\n  \
         RUSTFLAGS=\"\" CARGO_TARGET_DIR=target/real cargo run --release -- {}",
        lock.name(),
        start_command(lock),
        given.join(" ")
    );
    ExitCode::from(2)
}

/// What the simulation build says to `bench real` (whose options were valid): the same
/// benchmark in the real build, and the servers to start first.
#[cfg(madsim)]
pub fn bench_needs_the_real_build(plan: &BenchPlan) -> ExitCode {
    let mut start: Vec<&str> = plan.locks.iter().map(|&lock| start_command(lock)).collect();
    start.dedup();
    if plan.fault_runs() > 0 && plan.locks.iter().any(|l| l.on_one_redis()) {
        start.push(START_REPLICATED);
    }
    let servers: Vec<String> = plan
        .locks
        .iter()
        .map(|&lock| {
            let servers = plan.servers(lock);
            let servers = if servers.is_empty() {
                &plan.contact_points
            } else {
                &servers
            };
            format!("  {} on {}", lock.name(), servers.join(","))
        })
        .collect();
    eprintln!(
        "error: `cassalock bench real` runs the locks on real servers, and this is the simulation build (--cfg madsim).\n\
         Start the servers:\n  {}\n\
         then run it in the real build (own target directory):\n  \
         RUSTFLAGS=\"\" CARGO_TARGET_DIR=target/real cargo run --release -- {}\n\
         The locks and their servers:\n{}",
        start.join("\n  "),
        plan.command().trim_start_matches("cassalock "),
        servers.join("\n")
    );
    ExitCode::from(2)
}
