//! `cassalock check`: run a stateright model of the thesis's algorithms (and of the other
//! families' locks: Redis `SET NX PX`, Redlock, Memcached `add`, Redisson's `RLock`).

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cassalock_models::check::{Limits, Verdict};
use cassalock_models::{build, Fault, ModelName, Mutant, Spec};
use clap::Args;

/// Seconds between progress lines when stderr is not a terminal.
const PIPED_PROGRESS_S: u64 = 10;

/// Check a model: one row per property, a numbered trace for each violation.
///
/// Exit status: 0 every property holds (exhaustively, or within the model's clock range);
/// 1 a property is VIOLATED; 2 bad arguments; 3 no violation found but a state, time or clock
/// bound stopped a verdict (reported as "bounded", never as "holds").
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Which model.
    #[arg(long, value_enum)]
    model: ModelName,
    /// Threads (replicas for globaltime). Default depends on the model and fault; each model
    /// says its feasible sizes when given another.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..))]
    threads: Option<u8>,
    /// Acquisitions per thread (TryGetLock: attempts). Lock models only; each model says its
    /// feasible sizes when given another.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..))]
    acquisitions: Option<u8>,
    /// Fault knob.
    #[arg(long, value_enum, default_value = "none")]
    fault: Fault,
    /// A deliberately broken variant.
    #[arg(long, value_enum)]
    mutant: Option<Mutant>,
    /// Holders write to a resource that refuses stale fencing tokens.
    #[arg(long)]
    fencing: bool,
    /// Lock models: cells carry a TTL and holders renew them (clock ticks), even without a fault.
    #[arg(long)]
    leases: bool,
    /// Lock models: run the thesis's listings as written, without the library's fixes (see
    /// docs/contract.md), to show what each fix is for.
    #[arg(long)]
    thesis_listings: bool,
    /// Lock models: drop the partial-synchrony assumption that a TryGetLock's poll interval
    /// outlasts a contender's requests (the purely asynchronous model).
    #[arg(long)]
    asynchronous: bool,
    /// getlock: the faster handoff, the waiter next in line polls at its own short
    /// interval (each waiter reads two queue cells to know).
    #[arg(long)]
    next_poll: bool,
    /// getlock: the paced variant (implies --next-poll): each waiter reads up to 32
    /// queue cells, learns its rank and sleeps by it and the queue's pace. `--paced-poll`
    /// alone is `--paced-poll true`.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    paced_poll: bool,
    /// Lock models: every acquisition of a thread runs under one thread id, as a locker with
    /// `reuse_thread_ids` used one acquisition at a time (for the long run: the main and
    /// shadow cells are rewritten in place instead of new ones under new names). On in the
    /// library by default, off here unless given: the models keep the listings' one id per
    /// acquisition, and give the same verdicts with it (models/tests/verdicts.rs).
    #[arg(long)]
    reuse_thread_ids: bool,
    /// getlock: each thread reads the queue from the queue column of its last hold instead of
    /// the row's start, and from the row's start again after meeting another contender in the
    /// main row (for the long run). On in the library by default, off here unless given,
    /// as --reuse-thread-ids.
    #[arg(long)]
    queue_read_from_last_hold: bool,
    /// redis-set-nx: each holder extends its key once (compare-and-pexpire) between two uses of
    /// the resource.
    #[arg(long)]
    extend: bool,
    /// Lock models whose clocks tick (--leases, --fault pause, crash, ttl-skew, store-failure
    /// --leases, --mutant k3): time stops at this tick instead of the default (3 +
    /// acquisitions), 2 to 250. A verdict "holds within bound (clock <= N ticks)" says nothing
    /// past N: raise the bound to see whether it still holds (2 ticks more multiplied the
    /// states of the 2 threads x 1 acquisition worlds 3-8x, measured 2026-11-28).
    #[arg(long, value_name = "TICKS", value_parser = clap::value_parser!(u8).range(2..=i64::from(cassalock_models::MOST_CLOCK_BOUND_TICKS)))]
    clock_bound: Option<u8>,
    /// Check only this claim (T1, T1-belief, T2, T3, T4, T5, F-order, F-overtakes, T1-resource,
    /// K3, L1, S1, C-try, C-free, C-release, C-lost, C-token).
    #[arg(long, value_name = "ID")]
    property: Option<String>,
    /// Stop at the first violation (its trace is still the shortest).
    #[arg(long)]
    stop_at_first: bool,
    /// Give up (and say "bounded") after this many unique states.
    #[arg(long, default_value_t = 5_000_000)]
    max_states: usize,
    /// Give up (and say "bounded") after this many seconds of the whole check: stateright's
    /// search, then our graph (liveness, shortest traces) in what is left (1-2592000).
    #[arg(long, default_value_t = 300)]
    max_seconds: u64,
    /// Say "bounded" once the process's resident memory passes this many MiB: stateright, then
    /// our graph, stop expanding states (64 up to the machine's memory) [default: 60% of the
    /// machine's memory].
    #[arg(long, value_name = "MIB", allow_negative_numbers = true)]
    max_memory_mib: Option<u64>,
    /// Serve stateright's Explorer on this loopback address (e.g. 127.0.0.1:3000) instead.
    #[arg(long, value_name = "ADDR")]
    explore: Option<SocketAddr>,
    /// Also write the first violated property's counterexample (with --property, that
    /// property's) as an event record into this file (JSON lines, docs/events.md): `cassalock
    /// judge FILE` reads it as a run seen from outside. Every lock model writes one (not lemma
    /// or globaltime).
    #[arg(long, value_name = "FILE", conflicts_with = "explore")]
    events: Option<std::path::PathBuf>,
}

fn spec(args: &CheckArgs) -> Spec {
    let mut spec = Spec::new(args.model);
    spec.threads = args.threads;
    spec.acquisitions = args.acquisitions;
    spec.fault = args.fault;
    spec.mutant = args.mutant;
    spec.fencing = args.fencing;
    spec.leases = args.leases;
    spec.thesis_listings = args.thesis_listings;
    spec.asynchronous = args.asynchronous;
    spec.next_poll = args.next_poll;
    spec.paced_poll = args.paced_poll;
    spec.reuse_thread_ids = args.reuse_thread_ids;
    spec.queue_read_from_last_hold = args.queue_read_from_last_hold;
    spec.extend = args.extend;
    spec.clock_bound = args.clock_bound;
    spec
}

/// The largest `--max-seconds`: 30 days.
const MAX_SECONDS_LIMIT: u64 = 30 * 24 * 3600;

pub fn run(args: CheckArgs) -> ExitCode {
    let model = match build(&spec(&args)) {
        Ok(model) => model,
        Err(error) => return crate::usage_error(&error.to_string()),
    };
    if args.max_states == 0 || args.max_seconds == 0 {
        return crate::usage_error("--max-states and --max-seconds must be at least 1");
    }
    if args.max_seconds > MAX_SECONDS_LIMIT {
        return crate::usage_error(&format!(
            "--max-seconds {}: at most {MAX_SECONDS_LIMIT} (30 days)",
            args.max_seconds
        ));
    }
    let machine_mib = cassalock_models::check::machine_memory_bytes().unwrap_or(u64::MAX) >> 20;
    let max_memory_bytes = match args.max_memory_mib {
        None => cassalock_models::check::default_max_memory_bytes(),
        Some(mib) if (64..=machine_mib.max(64)).contains(&mib) => mib << 20,
        Some(mib) => {
            return crate::usage_error(&format!(
                "--max-memory-mib {mib}: give 64 to {machine_mib} (this machine's memory)"
            ))
        }
    };
    if let Some(address) = args.explore {
        if !address.ip().is_loopback() {
            return crate::usage_error(&format!(
                "--explore {address}: the Explorer only listens on loopback addresses (127.0.0.1, ::1)"
            ));
        }
        // stateright binds the address itself and panics if it cannot: try it first (the
        // probe is released at once, so only a port taken in between slips through). Port 0
        // asks for any free port: the probe's is the one said and served.
        let address = match std::net::TcpListener::bind(address) {
            Ok(probe) => probe.local_addr().unwrap_or(address),
            Err(error) => {
                let why = match error.kind() {
                    std::io::ErrorKind::AddrInUse => "address in use".to_owned(),
                    _ => error.to_string(),
                };
                return crate::usage_error(&format!(
                    "--explore {address}: cannot listen there ({why}); choose a free port"
                ));
            }
        };
        println!("{}", model.title());
        println!("stateright Explorer on http://{address}/ (Ctrl-C to stop)");
        model.explore(address);
        return ExitCode::SUCCESS;
    }
    let left_out = model.left_out();
    if let Some(only) = &args.property {
        if let Some((_, why)) = left_out.iter().find(|(claim, _)| claim == only) {
            return crate::usage_error(&format!("--property {only}: not checked at this size: {why}"));
        }
        let mut claims = model.claims();
        // A claim checked in two forms (T2 as an invariant and as liveness) is named once.
        let mut seen = std::collections::BTreeSet::new();
        claims.retain(|claim| seen.insert(claim.clone()));
        if !claims.iter().any(|claim| claim == only) {
            return crate::usage_error(&format!("--property {only}: this model checks {}", claims.join(", ")));
        }
    }
    let limits = Limits {
        max_states: args.max_states,
        max_seconds: args.max_seconds,
        checker_threads: 2,
        stop_at_first_violation: args.stop_at_first,
        only_claim: args.property.clone(),
        max_memory_bytes,
    };
    let done = Arc::new(AtomicBool::new(false));
    // Progress on stderr: on a terminal one line redrawn every half second; otherwise (a pipe,
    // a CI log) a line every PIPED_PROGRESS_S once a check has run that long, so a long check
    // is never silent. Both say the time limit, the most the check can take.
    let terminal = std::io::stderr().is_terminal();
    let ticker = {
        let done = Arc::clone(&done);
        let title = model.title();
        let name = title.split(" | ").next().unwrap_or("").to_owned();
        let limit_s = args.max_seconds;
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut said_s = 0;
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(500));
                if done.load(Ordering::Relaxed) {
                    break;
                }
                let elapsed_s = started.elapsed().as_secs();
                if terminal {
                    let line = format!("checking {name} ... {elapsed_s} s of at most {limit_s} s");
                    eprint!("\r{}", line.chars().take(79).collect::<String>());
                } else if elapsed_s >= said_s + PIPED_PROGRESS_S {
                    said_s = elapsed_s;
                    eprintln!("checking {name} ... {elapsed_s} s of at most {limit_s} s");
                }
            }
            if terminal {
                eprint!("\r{:79}\r", "");
            }
        })
    };
    let limits_used = limits.clone();
    let report = model.check(limits);
    done.store(true, Ordering::Relaxed);
    {
        let _ = ticker.join();
    }
    print!("{report}");
    for (claim, why) in &left_out {
        println!("\n{claim} NOT CHECKED: {why}");
    }
    print_how_to_go_further(&report, &limits_used);
    if let Some(path) = &args.events {
        if let Err(code) = write_counterexample_record(&report, path) {
            return code;
        }
    }
    if !report.internal_errors.is_empty() {
        return ExitCode::from(1);
    }
    if report.any_violation() {
        return ExitCode::from(1);
    }
    if report.rows.iter().any(|row| matches!(row.verdict, Verdict::Bounded(_))) {
        println!("\nno violation found, but not every verdict is final (bounded): exit status 3");
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}

/// `--events FILE`: the first violated property's counterexample as an event record. None to
/// write is said, not an error; a file that cannot be written is exit 2 (1 if a property was
/// violated: a verdict outranks the file).
fn write_counterexample_record(
    report: &cassalock_models::check::Report,
    path: &std::path::Path,
) -> Result<(), ExitCode> {
    let Some(row) = report
        .rows
        .iter()
        .find(|row| row.verdict.is_violation() && row.record.is_some())
    else {
        let why = if report.any_violation() {
            "this model writes no event record"
        } else {
            "no property was violated"
        };
        println!("\nno event record written to {}: {why}", path.display());
        return Ok(());
    };
    let record = row.record.as_ref().expect("found with one");
    let written = std::fs::File::create(path).and_then(|file| {
        let mut out = std::io::BufWriter::new(file);
        cassalock_judge::event::write(&mut out, &record.header, &record.events)?;
        out.into_inner()
            .map_err(std::io::IntoInnerError::into_error)?
            .sync_all()
    });
    match written {
        Ok(()) => {
            println!(
                "\n{}'s counterexample written to {} as an event record ({} events): cassalock judge {} reads it",
                row.property,
                path.display(),
                record.events.len(),
                path.display()
            );
            Ok(())
        }
        Err(error) => {
            eprintln!("error: --events {}: {error}", path.display());
            Err(crate::output::failed_output(ExitCode::from(u8::from(
                report.any_violation(),
            ))))
        }
    }
}

/// After a bounded run, which limit stopped it and the flag that moves it (a state or time
/// limit), or that this machine is too small for the world (the memory limit).
fn print_how_to_go_further(report: &cassalock_models::check::Report, limits: &Limits) {
    use cassalock_models::check::StoppedBy;
    let memory_mib = limits.max_memory_bytes >> 20;
    match report.stopped_by {
        Some(StoppedBy::Memory) => println!(
            "\nthe memory limit ({memory_mib} MiB resident) stopped the search: this world needs more memory than that (--max-memory-mib, up to the machine's), or a smaller world"
        ),
        Some(StoppedBy::Time) => println!(
            "\nthe time limit ({} s) stopped the search: --max-seconds raises it",
            limits.max_seconds
        ),
        Some(StoppedBy::States) => println!(
            "\nthe state limit ({}) stopped the search: --max-states raises it (the memory limit, {memory_mib} MiB resident, still stops a search the machine cannot hold)",
            limits.max_states
        ),
        None => {}
    }
    let clock_bound = report.rows.iter().find_map(|row| match row.verdict {
        Verdict::HoldsWithinClockBound(ticks) => Some(ticks),
        _ => None,
    });
    if let Some(ticks) = clock_bound {
        println!(
            "\n\"holds within bound\": every state with clocks up to tick {ticks} was checked, nothing later; --clock-bound raises the bound (each tick multiplies the states)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Check {
        #[command(flatten)]
        args: CheckArgs,
    }

    fn parsed(line: &str) -> Spec {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[..2], ["cassalock", "check"], "{line}");
        let check = Check::try_parse_from(std::iter::once("check").chain(words[2..].iter().copied()))
            .unwrap_or_else(|error| panic!("{line}: {error}"));
        spec(&check.args)
    }

    #[test]
    fn a_specs_command_line_parses_back_into_the_spec() {
        for model in ModelName::all() {
            let plain = Spec::new(model);
            assert_eq!(parsed(&plain.command_line()), plain);
        }
        let mut every_field = Spec::new(ModelName::named("getlock").expect("getlock"));
        every_field.threads = Some(3);
        every_field.acquisitions = Some(2);
        every_field.fault = Fault::DelayedEnqueue;
        every_field.mutant = Some(Mutant::M1);
        every_field.fencing = true;
        every_field.leases = true;
        every_field.thesis_listings = true;
        every_field.asynchronous = true;
        every_field.next_poll = true;
        every_field.paced_poll = true;
        every_field.reuse_thread_ids = true;
        every_field.queue_read_from_last_hold = true;
        every_field.extend = true;
        every_field.clock_bound = Some(5);
        assert_eq!(parsed(&every_field.command_line()), every_field);
    }
}
