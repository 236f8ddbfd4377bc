//! `cassalock bench real` in the real build: every server checked first, Cassandra warmed up,
//! the measured runs in interleaved rounds, the fault runs, and the report written (or added to
//! an earlier one's).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Context};
use cassalock_real::runner::{execute, RunSpec};
use cassalock_real::{Family, Lock, RealLock, Summary};
use cassalock_report::real_backends::{self, FaultOutcome, FaultRun, Measured, RedissonWake, Setup};

use super::backends::backends;
use super::faults::{run_through, servers_status, Fault};
use super::plan::BenchPlan;
use super::run::BACKEND_UNAVAILABLE;
use super::servers::{start_command, START_REPLICATED};
use super::warm_up::{warm_up_settled, MAX_WARM_UP_S, WARM_UP_S, WARM_UP_STEADY_WITHIN, WARM_UP_STRETCH_S};
use crate::usage_error;

/// How long the warm-up ran, and whether its rate had settled.
struct WarmUp {
    seconds: u64,
    settled: bool,
}

/// Lockers of each fault run: enough to contend, few enough that one run says what happened.
const FAULT_LOCKERS: usize = 4;

/// `cassalock bench real`: every lock of the plan at each locker count for a fixed time,
/// in interleaved rounds; then one run of each lock under its backend's fault.
pub fn bench(plan: BenchPlan) -> ExitCode {
    announce(&plan);
    if let Err(e) = std::fs::create_dir_all(&plan.out) {
        return usage_error(&format!("--out: cannot create {}: {e}", plan.out.display()));
    }
    let specs = Specs::new(&plan);
    let nodes = match check_servers(&specs) {
        Ok(nodes) => nodes,
        Err(code) => return code,
    };
    let faults = plan_faults(&plan, nodes);
    let warm_up = match warm_up(&specs) {
        Ok(warm_up) => warm_up,
        Err(code) => return code,
    };
    let runs = match measure(&specs) {
        Ok(runs) => runs,
        Err(code) => return code,
    };
    let fault_runs = run_faults(&specs, faults);
    let setup = setup(&specs, nodes, warm_up);
    match &plan.add_to {
        None => write_report(&plan.out, &setup, &runs, &fault_runs),
        Some(path) => match real_backends::read_data(path) {
            Ok(old) => {
                let (setup, runs, fault_runs) = added(old, setup, runs, fault_runs);
                write_report(&plan.out, &setup, &runs, &fault_runs)
            }
            Err(e) => {
                eprintln!("error: --add-to: {e} (the runs just measured are not written)");
                ExitCode::from(1)
            }
        },
    }
}

/// Say what the benchmark will run and about how long it will take.
fn announce(plan: &BenchPlan) {
    eprintln!(
        "bench real: {} at {} lockers: {} of {} s ({} of each configuration){}, about {} min",
        plan.locks.iter().map(|l| l.name()).collect::<Vec<_>>().join(", "),
        plan.lockers.iter().map(usize::to_string).collect::<Vec<_>>().join(", "),
        cassalock_judge::text::count(plan.runs(), "run"),
        plan.seconds,
        plan.repeats,
        if plan.fault_runs() > 0 {
            format!(
                ", then {} of {} s",
                cassalock_judge::text::count(plan.fault_runs(), "fault run"),
                plan.fault_seconds
            )
        } else {
            String::new()
        },
        plan.estimate_s().div_ceil(60)
    );
}

/// The plan, and what every run of it shares: each run is [`Specs::of`] a lock, its lockers
/// and its seconds.
struct Specs<'a> {
    plan: &'a BenchPlan,
    template: RunSpec,
}

impl<'a> Specs<'a> {
    fn new(plan: &'a BenchPlan) -> Specs<'a> {
        let template = RunSpec {
            contact_points: plan.contact_points.clone(),
            servers: Vec::new(),
            variant: Lock::Queue,
            threads: 1,
            acquisitions: 100_000,
            processes: 1,
            hold_ms: plan.hold_ms,
            ttl_s: 10,
            renew_ms: None,
            poll_ms: 100,
            next_poll_ms: None,
            paced_poll: false,
            // The library's defaults (its long-run settings are on).
            reuse_thread_ids: super::row_lock_settings().reuse_thread_ids,
            queue_read_from_last_hold: super::row_lock_settings().queue_read_from_last_hold,
            consistency: "quorum".into(),
            keyspace: "cassalock".into(),
            lock_id: None,
            max_wait_ms: 120_000,
            run_limit_s: plan.seconds,
            fencing: true,
            connect_timeout_s: super::CONNECT_TIMEOUT_S,
            steps: None,
            // A benchmark measures the lock's own round trips: no readings of the server.
            server_readings: false,
        };
        Specs { plan, template }
    }

    /// A run of `lock` on its servers with `threads` lockers for `run_limit_s` seconds.
    fn of(&self, lock: Lock, threads: usize, run_limit_s: u64) -> RunSpec {
        RunSpec {
            variant: lock,
            servers: self.plan.servers(lock),
            threads,
            run_limit_s,
            ..self.template.clone()
        }
    }

    /// One acquisition of `lock` without a hold: does its backend answer?
    fn probe(&self, lock: Lock) -> RunSpec {
        RunSpec {
            acquisitions: 1,
            hold_ms: 0,
            run_limit_s: 0,
            ..self.of(lock, 1, 0)
        }
    }
}

/// Every server answers before anything is measured: a missing one is said at once, with the
/// command that starts it, not after half an hour of the others. The Cassandra cluster's node
/// count (0 without a Cassandra lock), or exit 4.
fn check_servers(specs: &Specs) -> Result<usize, ExitCode> {
    let plan = specs.plan;
    let nodes = if plan.uses(Family::Cassandra) {
        eprintln!(
            "bench real: connecting to Cassandra at {}",
            plan.contact_points.join(",")
        );
        match cassandra_nodes(&plan.contact_points) {
            Ok(nodes) => nodes,
            Err(e) => {
                let cassandra: Vec<Lock> = plan
                    .locks
                    .iter()
                    .copied()
                    .filter(|l| l.family() == Family::Cassandra)
                    .collect();
                return Err(unreachable(
                    &cassandra,
                    &plan.contact_points,
                    start_command(Lock::Queue),
                    &format!("{e:#}"),
                ));
            }
        }
    } else {
        0
    };
    for &lock in plan.locks.iter().filter(|l| l.is_family()) {
        let probe = specs.probe(lock);
        if let Err(e) = execute(&probe, false) {
            return Err(unreachable(
                &[lock],
                &probe.servers,
                start_command(lock),
                &e.to_string(),
            ));
        }
    }
    let failover_locks: Vec<Lock> = plan.locks.iter().copied().filter(|l| l.on_one_redis()).collect();
    if plan.fault_seconds > 0 && !failover_locks.is_empty() {
        let probe = RunSpec {
            servers: plan.redis_replicated.clone(),
            ..specs.probe(Lock::RedisSetNx)
        };
        if let Err(e) = execute(&probe, false) {
            eprintln!("  (the failover runs need the pair; --fault-seconds 0 runs no fault)");
            return Err(unreachable(
                &failover_locks,
                &plan.redis_replicated,
                START_REPLICATED,
                &e.to_string(),
            ));
        }
    }
    Ok(nodes)
}

/// Which faults this machine can inject (none without fault runs), each lock's fault or why it
/// cannot run, said before the long part.
fn plan_faults(plan: &BenchPlan, nodes: usize) -> Vec<(Lock, anyhow::Result<Fault>)> {
    let faults: Vec<(Lock, anyhow::Result<Fault>)> = if plan.fault_seconds > 0 {
        let servers = servers_status();
        plan.locks
            .iter()
            .map(|&lock| (lock, Fault::for_lock(lock, plan, nodes, &servers)))
            .collect()
    } else {
        Vec::new()
    };
    for (lock, fault) in &faults {
        if let Err(why) = fault {
            eprintln!("bench real: {}'s fault run will not run: {why:#}", lock.title());
        }
    }
    faults
}

/// Warm the cluster up first (JIT, connection pools, the tables): a freshly started cluster ran
/// the first configuration at a third of its later speed. Not reported. At least WARM_UP_S,
/// then until two stretches agree, at most MAX_WARM_UP_S. `None` without a Cassandra lock;
/// exit 4 when Cassandra stops answering.
fn warm_up(specs: &Specs) -> Result<Option<WarmUp>, ExitCode> {
    let plan = specs.plan;
    let Some(&first) = plan.locks.iter().find(|l| l.family() == Family::Cassandra) else {
        return Ok(None);
    };
    eprintln!(
        "bench real: warming Cassandra up (not reported): {WARM_UP_S}-{MAX_WARM_UP_S} s, until two {WARM_UP_STRETCH_S} s stretches make rates within {:.0}%",
        100.0 * WARM_UP_STEADY_WITHIN
    );
    let mut rates = Vec::new();
    let mut warmed_s = 0;
    while warmed_s < MAX_WARM_UP_S {
        match execute(&specs.of(first, 1, WARM_UP_STRETCH_S), false) {
            Ok(summary) => rates.push(summary.acquisitions_per_s),
            Err(e) => {
                return Err(unreachable(
                    &[first],
                    &plan.contact_points,
                    start_command(first),
                    &e.to_string(),
                ))
            }
        }
        warmed_s += WARM_UP_STRETCH_S;
        eprintln!("  warm-up {warmed_s:>2} s: {:.2} acq/s", rates[rates.len() - 1]);
        if warmed_s >= WARM_UP_S && warm_up_settled(&rates) {
            break;
        }
    }
    let settled = warm_up_settled(&rates);
    if !settled {
        eprintln!(
            "warning: Cassandra's rate was still changing after {warmed_s} s of warm-up; the first rounds may run slower (the report says so)"
        );
    }
    Ok(Some(WarmUp {
        seconds: warmed_s,
        settled,
    }))
}

/// The measured runs, interleaved: one run of every configuration, then the next round, so that
/// a slow stretch of the machine spreads over all configurations instead of one. Exit 4 when a
/// backend stops answering.
fn measure(specs: &Specs) -> Result<Vec<Summary>, ExitCode> {
    let plan = specs.plan;
    let total_runs = plan.runs();
    let mut runs = Vec::new();
    for round in 1..=plan.repeats {
        for &lock in &plan.locks {
            for &n in &plan.lockers {
                let spec = specs.of(lock, n, plan.seconds);
                eprintln!(
                    "bench real: run {}/{total_runs} (round {round}/{}): {} with {} for {} s",
                    runs.len() + 1,
                    plan.repeats,
                    lock.title(),
                    cassalock_judge::text::count(n, "locker"),
                    plan.seconds
                );
                match execute(&spec, false) {
                    Ok(summary) => {
                        eprintln!("  {}", progress(&summary));
                        runs.push(summary);
                    }
                    Err(e) => {
                        let servers = if lock.is_family() {
                            spec.servers.clone()
                        } else {
                            plan.contact_points.clone()
                        };
                        return Err(unreachable(&[lock], &servers, start_command(lock), &e.to_string()));
                    }
                }
                // Let the last run's lease cells and tombstones age out of the picture: every
                // run uses a fresh lock id anyway.
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
    Ok(runs)
}

/// One run of each lock under its fault (or the reason it did not run); a backend a fault run
/// could not bring back runs none of its later fault runs.
fn run_faults(specs: &Specs, faults: Vec<(Lock, anyhow::Result<Fault>)>) -> Vec<FaultRun> {
    let plan = specs.plan;
    let mut fault_runs = Vec::new();
    // A backend a fault run could not bring back: the later fault runs on it do not run.
    let mut not_restored: Vec<(Family, String)> = Vec::new();
    for (index, (lock, fault)) in faults.into_iter().enumerate() {
        let fault = match fault {
            Ok(fault) => fault,
            Err(why) => {
                fault_runs.push(FaultRun {
                    lock: lock.title().into(),
                    fault: Fault::planned(lock).into(),
                    outcome: FaultOutcome::NotRun(format!("{why:#}")),
                });
                continue;
            }
        };
        let description = fault.describe(plan.fault_seconds);
        if let Some((_, why)) = not_restored.iter().find(|(b, _)| *b == lock.family()) {
            fault_runs.push(FaultRun {
                lock: lock.title().into(),
                fault: description,
                outcome: FaultOutcome::NotRun(why.clone()),
            });
            continue;
        }
        let mut spec = specs.of(lock, FAULT_LOCKERS, plan.fault_seconds);
        if fault.on_replicated_pair() {
            spec.servers = plan.redis_replicated.clone();
        }
        eprintln!(
            "bench real: fault run {}/{}: {} with {} for {} s; {description}",
            index + 1,
            plan.fault_runs(),
            lock.title(),
            cassalock_judge::text::count(FAULT_LOCKERS, "locker"),
            plan.fault_seconds
        );
        let (outcome, restored) = run_through(&spec, &fault, plan.fault_seconds);
        match &outcome {
            FaultOutcome::Ran(summary) => eprintln!(
                "  {}; {} overlapping, {} stale writes accepted",
                progress(summary),
                summary.belief_overlaps,
                summary.stale_accepted
            ),
            FaultOutcome::NotRun(why) => eprintln!("  not measured: {why}"),
        }
        if let Err(why) = restored {
            let why = format!("{why:#}");
            eprintln!("  {why}");
            not_restored.push((lock.family(), why));
        }
        fault_runs.push(FaultRun {
            lock: lock.title().into(),
            fault: description,
            outcome,
        });
    }
    fault_runs
}

/// What the report says of how it was measured.
fn setup(specs: &Specs, nodes: usize, warm_up: Option<WarmUp>) -> Setup {
    let (plan, template) = (specs.plan, &specs.template);
    Setup {
        command: plan.command(),
        machine: format!(
            "{} cores",
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        ),
        backends: backends(plan, nodes),
        seconds_per_run: plan.seconds,
        hold_ms: template.hold_ms,
        ttl_s: template.ttl_s,
        poll_ms: template.poll_ms,
        repeats: plan.repeats,
        warm_up_s: warm_up.as_ref().map(|w| w.seconds),
        warm_up_settled: warm_up.map(|w| w.settled),
        redisson_wake: if cassalock_real::REDISSON_WAITERS_NOTIFIED {
            RedissonWake::Notified
        } else {
            RedissonWake::SleepsOutTheTtl
        },
        fault_lockers: FAULT_LOCKERS,
        fault_seconds: plan.fault_seconds,
        row_lock_settings: plan
            .locks
            .iter()
            .any(|l| l.is_row_lock())
            .then_some(super::row_lock_settings()),
    }
}

/// `old`'s measurements with the runs of the locks just measured put in place of theirs;
/// the setup says both commands and every backend used.
fn added(old: Measured, new: Setup, runs: Vec<Summary>, faults: Vec<FaultRun>) -> (Setup, Vec<Summary>, Vec<FaultRun>) {
    let measured: Vec<String> = runs
        .iter()
        .map(|r| r.variant.clone())
        .chain(faults.iter().map(|f| f.lock.clone()))
        .collect();
    let mut setup = old.setup;
    setup.command = format!("{}; then {}", setup.command, new.command);
    if new.row_lock_settings.is_some() {
        // `check_addable` made sure no row lock kept from `old` ran with other settings.
        setup.row_lock_settings = new.row_lock_settings;
    }
    for backend in new.backends {
        if !setup.backends.iter().any(|b| b.backend == backend.backend) {
            setup.backends.push(backend);
        }
    }
    let mut all_runs: Vec<Summary> = old
        .runs
        .into_iter()
        .filter(|r| !measured.contains(&r.variant))
        .collect();
    all_runs.extend(runs);
    let mut all_faults: Vec<FaultRun> = old.faults.into_iter().filter(|f| !measured.contains(&f.lock)).collect();
    all_faults.extend(faults);
    // Each lock where the reports list it (stable: a lock's runs keep their order).
    let place = |name: &str| {
        cassalock_real::real_locks()
            .iter()
            .position(|v| v.title() == name)
            .unwrap_or(usize::MAX)
    };
    all_runs.sort_by_key(|r| place(&r.variant));
    all_faults.sort_by_key(|f| place(&f.lock));
    (setup, all_runs, all_faults)
}

/// Write `reports/real-backends.md` (charts, data) into `out` and say where; exit 1 when two
/// holders overlapped in a run without a fault (under a fault that is a finding, reported).
fn write_report(out: &Path, setup: &Setup, runs: &[Summary], faults: &[FaultRun]) -> ExitCode {
    match cassalock_report::real_backends::write(out, setup, runs, faults) {
        Ok(files) => super::print_written(out, &files),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    }
    super::violations(runs)
}

/// One line of figures for the progress output.
fn progress(summary: &Summary) -> String {
    format!(
        "{:.2} acq/s, wait p50 {:.1} ms p99 {:.1} ms, {:.1} requests/acq, {} errors",
        summary.acquisitions_per_s,
        summary.wait_p50_ms,
        summary.wait_p99_ms,
        summary.requests_per_acquisition,
        summary.errors
    )
}

/// A backend that does not answer: what, where, and the command that starts it; exit 4.
fn unreachable(locks: &[Lock], servers: &[String], start: &str, error: &str) -> ExitCode {
    let fresh = if locks.iter().any(|l| l.is_family()) {
        "on a fresh machine `cluster/cassalock-servers install all` first; "
    } else {
        ""
    };
    eprintln!(
        "error: {} cannot run: {error}\n  nothing usable answers at {}; start it with:\n    {start}\n  ({fresh}--locks leaves locks out)",
        locks.iter().map(|l| l.name()).collect::<Vec<_>>().join(", "),
        servers.join(",")
    );
    ExitCode::from(BACKEND_UNAVAILABLE)
}

/// The Cassandra cluster's node count, or why it cannot be reached (print it with `{:#}`).
fn cassandra_nodes(contact_points: &[String]) -> anyhow::Result<usize> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let config = cassalock::store::cassandra::CassandraConfig {
            contact_points: contact_points.to_vec(),
            ..Default::default()
        };
        cassalock::store::cassandra::CassandraStore::connect(&config)
            .await
            .map(|store| store.nodes())
            .map_err(|e| anyhow!("{e}"))
    })
}
