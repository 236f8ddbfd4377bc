//! The `cassalock` command: model checking, simulation, reports and the real cluster.

// First: its print macros shadow the standard ones in every module declared after it.
#[macro_use]
mod output;

mod bench;
mod bench_clients;
#[cfg(madsim)]
mod bench_handoff;
mod bench_judge;
#[cfg(madsim)]
mod bench_sim;
mod capacity;
mod check;
mod cluster_scripts;
#[cfg(madsim)]
mod family_sim;
mod judge;
mod listings;
mod lock_names;
mod long_run;
#[cfg(madsim)]
mod merge;
mod paxos_baseline;
mod real;
#[cfg(madsim)]
mod recorded;
#[cfg(madsim)]
mod report;
#[cfg(madsim)]
mod shard;
#[cfg(madsim)]
mod sim;

use std::process::ExitCode;

/// mimalloc instead of the system allocator: a simulated run allocates and frees a message's
/// strings and cell copies on every hop, and glibc's malloc and free were a fifth of a sweep's
/// time (perf, `sim --scenario contention`). No outcome depends on an address.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

/// cassalock: distributed locks on Cassandra rows (the Kontur thesis), checked.
///
/// Is the lock safe, live, fair and fast, and under exactly which faults does it break?
/// The exit statuses, the same for every command (shown under every `--help`).
macro_rules! exit_status_help {
    () => {
        "Exit status:
  0  done, and every claim checked holds
  1  a claim was violated (replay --expect-*: a recorded verdict did not reproduce)
  2  bad usage: nothing ran (the message names the flag)
  3  no violation, but a bound stopped a verdict (a model-checking budget, a time cap)
  4  a backend could not be reached or set up (the real cluster, a client's server)
  5  a client program broke the protocol or stopped answering (real --client)
  6  an output could not be written (a full disk, a closed file); a violation still exits 1"
    };
}

#[derive(Parser, Debug)]
#[command(name = "cassalock", version, after_help = exit_status_help!())]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Model-check an algorithm with stateright (L1, T1-T5, F; M1, S2, K1, K3 under faults).
    #[command(after_help = exit_status_help!())]
    Check(check::CheckArgs),
    /// Measure speed figures (benchmarks that print numbers, not tests).
    #[command(after_help = exit_status_help!())]
    Bench(Box<bench::BenchArgs>),
    /// Simulate a scenario over many seeds: the real lock code against simulated servers, for
    /// every lock family (the row locks' scenarios and the other families', listed below).
    #[cfg(madsim)]
    #[command(after_help = SCENARIOS_HELP)]
    Sim(sim::SimArgs),
    /// Replay one simulated run in full, for every lock family: plan, every event, verdicts,
    /// and with --svg its timeline, with --events its event record.
    #[cfg(madsim)]
    #[command(after_help = SCENARIOS_HELP)]
    Replay(sim::ReplayArgs),
    /// The families' scenarios over seeds: the older spelling of `sim --scenario NAME` (and
    /// `replay --scenario NAME --seed N` with --seed), kept for scripts; takes --scenario all.
    #[cfg(madsim)]
    #[command(hide = true, after_help = family_sim::HELP)]
    SimFamily(family_sim::SimFamilyArgs),
    /// Combine the result files of a sweep's shards (`sim --shard K/N --shard-out FILE`,
    /// `report ...`/`bench sim --shard K/N --shard-out FILE`) into what one machine prints (and,
    /// for a report, writes) for the whole sweep, with its exit status.
    #[cfg(madsim)]
    #[command(after_help = family_sim::MERGE_HELP)]
    Merge(merge::MergeArgs),
    /// Regenerate the reports in reports/ (fairness and performance, the property matrix).
    #[cfg(madsim)]
    #[command(after_help = exit_status_help!())]
    Report(report::ReportArgs),
    /// Run lockers against real servers and judge T1 (the real build only); or, with
    /// --client, copies of a program that drives a shipped lock library (either build).
    #[command(after_help = exit_status_help!())]
    Real(Box<real::RealArgs>),
    /// Judge an event record (docs/events.md; `replay --events FILE` writes one): every claim's
    /// verdict, as the run that wrote it printed them.
    #[command(after_help = exit_status_help!())]
    Judge(judge::JudgeArgs),
    /// List every claim cassalock judges, with its kind and definition.
    Claims,
    /// List every lock: its family, its model, whether the real runner runs it, the faults its
    /// matrix row is judged under and the broken variants run against it.
    #[cfg(madsim)]
    Locks,
    /// List every simulator scenario with its defaults, without running it.
    #[cfg(madsim)]
    Scenarios,
}

/// Shown under `sim --help` and `replay --help`.
#[cfg(madsim)]
const SCENARIOS_HELP: &str = concat!(
    "Scenarios:
  contention         5 clients x 20 acquisitions, QUORUM, no faults
  skew               replica r0's clock ahead by 0..=2 TTL (--offset-s to choose)
  pause              the holder pauses for TTL + 10 s (K1), fencing on
  pause-at-rewrite   a holder pauses between renewal's check and its rewrite, TTL - interval + 5 s (C-lost; --m4)
  cl-one             consistency ONE (K2)
  partition          the holder is cut off from the replicas, then healed
  crash-holder       the holder's process is killed
  renew-race         renewal racing release (--k3 for the broken release)
  timeservice-stall  a time-service replica 20 s ahead crashes at 10 s (S1)
  swarm              the whole fault plan drawn from the seed
  loss               20% message loss for 40 s, then healed

The other families' scenarios (Redis SET NX, Redlock, Memcached, Redisson and its fair lock,
ZooKeeper, etcd), each a premise of a lock and the fault that breaks it, for example:
  redlock-gc-pause, set-nx-restart-no-persistence, redisson-fair-barging,
  zookeeper-session-expiry-pause, etcd-lease-expires-while-waiting-11456
every one listed with its line of help by `cassalock sim --scenario list`, and named by lock too
(`--scenario redlock,etcd`: every scenario of both); they take --seeds, --jobs,
--shard/--shard-out, --clients, --acquisitions, the clock knobs (--clock-offset-ms,
--clock-error-ms, --clock-error-tail-ms, --clock-error-tail-percent), --bound-ms,
--replication-lag-ms and --set KEY=VALUE, any key of their scenario (--set settings.ttl_ms=3000; replay: --seed,
--summary, --svg, --events), not the row locks' other knobs. `--scenario all` runs every
scenario of every lock with its own defaults.

Knobs (the options above under \"Knobs\") override the scenario's values, and --set KEY=VALUE
sets one by its snake_case name too (--set ttl_s=10). A --scenario-file FILE.toml holds
scenarios of your own in one language for every lock: it names its lock (lock = \"queue\",
lock = \"redisson\") and lists [[scenario]] tables; a row lock's tables name a built-in scenario as
their `base` and set its knobs (scenarios/flaky-store.toml), the others' set any key of the
built-in ones (scenarios/redisson-pause-boundary.toml; docs/own-scenario.md). `sim` runs all of
them, or those --scenario names; flags given too override the file, and the replay command
printed for a failing seed carries both.

",
    exit_status_help!()
);

/// Print a usage error and return exit status 2.
pub(crate) fn usage_error(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    // Behave like a Unix tool when the reader goes away (`cassalock replay ... | head`): end
    // quietly instead of panicking on a broken pipe.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(refused) => return clap_exit(&refused),
    };
    let code = match cli.command {
        Command::Check(args) => check::run(args),
        Command::Bench(args) => bench::run(*args),
        #[cfg(madsim)]
        Command::Sim(args) => sim::sim(args),
        #[cfg(madsim)]
        Command::Replay(args) => sim::replay(args),
        #[cfg(madsim)]
        Command::SimFamily(args) => family_sim::run(args),
        #[cfg(madsim)]
        Command::Merge(args) => merge::merge(args),
        #[cfg(madsim)]
        Command::Report(args) => report::run(args),
        Command::Real(args) => match args.client.clone() {
            Some(command) => real::run_client(&args, &command),
            None => real::run(*args),
        },
        Command::Judge(args) => judge::run(args),
        Command::Claims => listings::claims(),
        #[cfg(madsim)]
        Command::Locks => listings::locks(),
        #[cfg(madsim)]
        Command::Scenarios => listings::scenarios(),
    };
    output::finish(code)
}

/// What clap stops on: `--help` and `--version` (printed to standard output, exit 0, or 6 when
/// that write fails), or a usage error (printed to standard error, exit 2).
fn clap_exit(stop: &clap::Error) -> ExitCode {
    let printed = stop
        .print()
        .and_then(|()| std::io::Write::flush(&mut std::io::stdout()));
    let code = ExitCode::from(u8::try_from(stop.exit_code()).unwrap_or(2));
    match printed {
        Ok(()) => code,
        Err(_) if stop.use_stderr() => code,
        Err(error) => {
            eprintln!("error: cannot write to standard output: {error}");
            ExitCode::from(output::OUTPUT_FAILED)
        }
    }
}
