//! The `cassalock` command: model checking, simulation, reports and the real cluster.

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// cassalock: distributed locks on Cassandra rows (the Kontur thesis), checked.
///
/// Is the lock safe, live, fair and fast, and under exactly which faults does it break?
#[derive(Parser, Debug)]
#[command(name = "cassalock", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Model-check an algorithm with stateright (L1, T1-T5, F; M1, S2, K1, K3 under faults).
    Check(cli::check::CheckArgs),
    /// Measure speed figures (benchmarks that print numbers, not tests).
    Bench(cli::bench::BenchArgs),
}

/// Print a usage error and return exit status 2.
pub(crate) fn usage_error(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => cli::check::run(args),
        Command::Bench(args) => cli::bench::run(args),
    }
}
