//! `cassalock real`: the library's lock code against a running Cassandra cluster, with a
//! resource check; and `cassalock bench real`, the benchmark behind `reports/real-cluster.md`.
//!
//! Only the real build (no `--cfg madsim`) talks to a cluster; the simulation build prints how
//! to get the real one.

use std::path::PathBuf;
#[cfg(madsim)]
use std::process::ExitCode;

use clap::Args;

use cassalock_sim::real::Variant;

/// Run lockers against a real cluster and judge mutual exclusion.
#[derive(Args, Debug, Clone)]
pub struct RealArgs {
    /// Cassandra nodes, host:port, comma-separated.
    #[arg(long, default_value = "127.0.0.1:9042", value_delimiter = ',')]
    pub contact_points: Vec<String>,
    /// Which lock.
    #[arg(long, value_enum, default_value = "queue")]
    pub algorithm: Variant,
    /// Lockers contending for the one lock (1-256).
    #[arg(long, default_value_t = 8)]
    pub threads: usize,
    /// Acquisitions per locker (1-100000).
    #[arg(long, default_value_t = 20)]
    pub acquisitions: u32,
    /// Processes the lockers are spread over (1-threads); more than one checks mutual
    /// exclusion across processes, through a shared monitor file.
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// Critical-section length, milliseconds (0-60000).
    #[arg(long, default_value_t = 10)]
    pub hold_ms: u64,
    /// Lease TTL, whole seconds (2-3600).
    #[arg(long, default_value_t = 10)]
    pub ttl_s: u32,
    /// Lease renewal interval, milliseconds (default: half the TTL).
    #[arg(long)]
    pub renew_ms: Option<u64>,
    /// How often a waiter polls, milliseconds (1-60000).
    #[arg(long, default_value_t = 100)]
    pub poll_ms: u64,
    /// Consistency of every lock request: one, quorum or all.
    #[arg(long, default_value = "quorum")]
    pub consistency: String,
    /// Keyspace (created with RF min(3, nodes) when missing).
    #[arg(long, default_value = "cassalock")]
    pub keyspace: String,
    /// Lock id (default: a fresh one per run, so earlier runs' cells do not matter).
    #[arg(long)]
    pub lock_id: Option<String>,
    /// Give up one acquisition after this many seconds (1-3600).
    #[arg(long, default_value_t = 120)]
    pub max_wait_s: u64,
    /// Stop starting acquisitions after this many seconds (0: run every acquisition).
    #[arg(long, default_value_t = 0)]
    pub run_limit_s: u64,
    /// Let the resource accept stale tokens (shows damage instead of refusals).
    #[arg(long)]
    pub no_fencing: bool,
    /// Print the summary as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print every event as a JSON line as it happens (for tests that act mid-run).
    #[arg(long)]
    pub events: bool,
    /// Internal: run as worker process N of a multi-process run, with the job in this file.
    #[arg(long, hide = true, requires = "worker_index")]
    pub worker_job: Option<PathBuf>,
    #[arg(long, hide = true)]
    pub worker_index: Option<usize>,
}

#[cfg(madsim)]
pub fn run(_args: RealArgs) -> ExitCode {
    not_the_real_build()
}

/// What the simulation build says when asked to talk to a real cluster.
#[cfg(madsim)]
pub fn not_the_real_build() -> ExitCode {
    eprintln!(
        "error: `cassalock real` talks to a real Cassandra cluster, and this is the simulation build (--cfg madsim).\n\
         Build and run the real one (own target directory):\n  \
         RUSTFLAGS=\"\" CARGO_TARGET_DIR=target/real cargo run --release -- real --contact-points 127.0.0.1:9042\n\
         (or `-- bench real` for the benchmark)\n\
         Start a local cluster first: cluster/cassalock-cluster start --nodes 3"
    );
    ExitCode::from(2)
}

#[cfg(not(madsim))]
pub use imp::{bench, run};

#[cfg(not(madsim))]
mod imp {
    use std::io::{BufRead, BufReader, Write};
    use std::path::{Path, PathBuf};
    use std::process::{Command, ExitCode, Stdio};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use cassalock_sim::real::cluster::consistency;
    use cassalock_sim::real::cluster::run_job;
    use cassalock_sim::real::{now_us, summarize, Event, Job, Monitor, Summary, Variant};
    use cassalock_sim::report::real_cluster::{self, Setup};

    use super::RealArgs;
    use crate::usage_error;

    fn check(args: &RealArgs) -> Result<(), String> {
        if args.contact_points.is_empty() || args.contact_points.iter().any(|c| c.trim().is_empty()) {
            return Err("--contact-points: give host:port[,host:port...]".into());
        }
        if !(1..=256).contains(&args.threads) {
            return Err(format!("--threads must be between 1 and 256, not {}", args.threads));
        }
        if !(1..=100_000).contains(&args.acquisitions) {
            return Err(format!(
                "--acquisitions must be between 1 and 100000, not {}",
                args.acquisitions
            ));
        }
        if args.processes == 0 || args.processes > args.threads {
            return Err(format!(
                "--processes must be between 1 and --threads ({}), not {}",
                args.threads, args.processes
            ));
        }
        if args.hold_ms > 60_000 {
            return Err("--hold-ms must be at most 60000".into());
        }
        if !(2..=3600).contains(&args.ttl_s) {
            return Err(format!("--ttl-s must be between 2 and 3600, not {}", args.ttl_s));
        }
        if !(1..=60_000).contains(&args.poll_ms) {
            return Err("--poll-ms must be between 1 and 60000".into());
        }
        if !(1..=3600).contains(&args.max_wait_s) {
            return Err("--max-wait-s must be between 1 and 3600".into());
        }
        consistency(&args.consistency)?;
        cassalock::store::cassandra::validate_name("keyspace", &args.keyspace).map_err(|e| e.to_string())?;
        if let Some(id) = &args.lock_id {
            cassalock::LockId::new(id).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn job(args: &RealArgs, lockers: Vec<String>, monitor: &Path) -> Job {
        Job {
            contact_points: args.contact_points.clone(),
            keyspace: args.keyspace.clone(),
            consistency: args.consistency.clone(),
            variant: args.algorithm,
            lock_id: args
                .lock_id
                .clone()
                .unwrap_or_else(|| format!("run-{}-{}", std::process::id(), now_us())),
            lockers,
            acquisitions: args.acquisitions,
            hold_ms: args.hold_ms,
            ttl_s: args.ttl_s,
            renew_ms: args.renew_ms.unwrap_or(args.ttl_s as u64 * 500),
            poll_ms: args.poll_ms,
            max_wait_s: args.max_wait_s,
            run_limit_s: args.run_limit_s,
            monitor: monitor.to_path_buf(),
            fencing: !args.no_fencing,
        }
    }

    fn runtime() -> Result<tokio::runtime::Runtime, String> {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))
    }

    /// Run one configuration: in this process (P = 1) or in P worker processes.
    pub fn execute(args: &RealArgs, print_events: bool) -> Result<Summary, String> {
        check(args)?;
        let run_dir = std::env::temp_dir().join(format!("cassalock-real-{}-{}", std::process::id(), now_us()));
        std::fs::create_dir_all(&run_dir).map_err(|e| format!("cannot create {}: {e}", run_dir.display()))?;
        let monitor = run_dir.join("monitor");
        Monitor::create(&monitor).map_err(|e| format!("cannot create the monitor file: {e}"))?;
        let run_tag = format!("r{}x{}", std::process::id(), now_us() % 1_000_000_000);
        let per_process: Vec<Vec<String>> = (0..args.processes)
            .map(|p| {
                (0..args.threads)
                    .filter(|t| t % args.processes == p)
                    // Unique among every user of the lock, across runs too: a locker that reused
                    // a dead process's name would find "its own" lock cell and walk in (the
                    // thesis's thread ids identify owners; found by the crash test).
                    .map(|t| format!("{run_tag}-p{p}-t{t}"))
                    .collect()
            })
            .collect();
        let all_lockers: Vec<String> = per_process.iter().flatten().cloned().collect();
        let base = job(args, all_lockers, &monitor);
        let events: Arc<Mutex<Vec<Event>>> = Arc::new(Mutex::new(Vec::new()));
        let began = Instant::now();
        if args.processes == 1 {
            let sink = Arc::clone(&events);
            let emit: Arc<dyn Fn(Event) + Send + Sync> = Arc::new(move |event: Event| {
                if print_events {
                    println!("{}", serde_json::to_string(&event).expect("events serialize"));
                    let _ = std::io::stdout().flush();
                }
                sink.lock().expect("events").push(event);
            });
            runtime()?.block_on(run_job(&base, 0, emit))?;
        } else {
            let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
            let mut children = Vec::new();
            for (index, lockers) in per_process.into_iter().enumerate() {
                let path = run_dir.join(format!("job-{index}.json"));
                let job = Job {
                    lockers,
                    ..base.clone()
                };
                std::fs::write(&path, serde_json::to_vec(&job).expect("job serializes"))
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                let child = Command::new(&exe)
                    .arg("real")
                    .arg("--worker-job")
                    .arg(&path)
                    .arg("--worker-index")
                    .arg(index.to_string())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| format!("cannot start worker {index}: {e}"))?;
                children.push(child);
            }
            let readers: Vec<_> = children
                .iter_mut()
                .map(|child| {
                    let stdout = child.stdout.take().expect("piped");
                    let sink = Arc::clone(&events);
                    std::thread::spawn(move || {
                        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                            if print_events {
                                println!("{line}");
                            }
                            if let Ok(event) = serde_json::from_str::<Event>(&line) {
                                sink.lock().expect("events").push(event);
                            }
                        }
                    })
                })
                .collect();
            for reader in readers {
                let _ = reader.join();
            }
            for (index, mut child) in children.into_iter().enumerate() {
                let status = child.wait().map_err(|e| format!("worker {index}: {e}"))?;
                if !status.success() {
                    return Err(format!("worker process {index} failed ({status})"));
                }
            }
        }
        let elapsed = began.elapsed();
        std::fs::remove_dir_all(&run_dir).ok();
        let events = events.lock().expect("events").clone();
        Ok(summarize(
            args.algorithm,
            args.threads,
            args.processes,
            elapsed,
            &events,
        ))
    }

    fn worker(path: &Path, index: usize) -> Result<(), String> {
        let text = std::fs::read(path).map_err(|e| format!("cannot read the job {}: {e}", path.display()))?;
        let job: Job =
            serde_json::from_slice(&text).map_err(|e| format!("malformed job file {}: {e}", path.display()))?;
        let out = Arc::new(Mutex::new(std::io::stdout()));
        let emit: Arc<dyn Fn(Event) + Send + Sync> = Arc::new(move |event: Event| {
            let mut out = out.lock().expect("stdout");
            let _ = writeln!(out, "{}", serde_json::to_string(&event).expect("events serialize"));
            let _ = out.flush();
        });
        runtime()?.block_on(run_job(&job, index, emit))
    }

    fn print(summary: &Summary) {
        println!(
            "{} x {} lockers in {} process(es): {} acquisitions in {:.1} s",
            summary.variant, summary.lockers, summary.processes, summary.acquisitions, summary.elapsed_s
        );
        println!("  acquisitions/s          {:.2}", summary.acquisitions_per_s);
        println!(
            "  wait p50 / p99 / max    {:.1} / {:.1} / {:.1} ms",
            summary.wait_p50_ms, summary.wait_p99_ms, summary.wait_max_ms
        );
        println!(
            "  store requests/acq      {:.1} ({} requests)",
            summary.requests_per_acquisition, summary.requests
        );
        println!("  Jain, longest run       {:.3}, {}", summary.jain, summary.longest_run);
        println!("  errors, lost leases     {}, {}", summary.errors, summary.lost_leases);
        println!(
            "  T1-belief               {}",
            if summary.t1_belief_holds() {
                "no two holders at once".to_string()
            } else {
                format!("VIOLATED: {} overlaps", summary.belief_overlaps)
            }
        );
        println!(
            "  T1-resource             {}",
            if summary.t1_resource_holds() {
                format!("no stale write accepted ({} refused by fencing)", summary.stale_tokens)
            } else {
                format!("VIOLATED: {} stale writes accepted", summary.stale_accepted)
            }
        );
        for example in &summary.examples {
            println!("  - {example}");
        }
    }

    pub fn run(args: RealArgs) -> ExitCode {
        if let Some(path) = &args.worker_job {
            return match worker(path, args.worker_index.unwrap_or(0)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: worker: {e}");
                    ExitCode::from(1)
                }
            };
        }
        if let Err(e) = check(&args) {
            return usage_error(&e);
        }
        match execute(&args, args.events) {
            Ok(summary) => {
                if args.json {
                    println!("{}", serde_json::to_string(&summary).expect("summary serializes"));
                } else {
                    print(&summary);
                }
                if summary.t1_belief_holds() && summary.t1_resource_holds() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        }
    }

    /// Seconds of unreported load before the benchmark's first configuration.
    const WARM_UP_S: u64 = 15;

    /// `cassalock bench real`: old, queue and LWT at each locker count, for a fixed time each.
    pub fn bench(contact_points: Vec<String>, lockers: Vec<usize>, seconds: u64, out: PathBuf) -> ExitCode {
        if lockers.is_empty() || lockers.iter().any(|&n| !(1..=256).contains(&n)) {
            return usage_error("--lockers: give counts between 1 and 256");
        }
        if !(1..=3600).contains(&seconds) {
            return usage_error("--seconds must be between 1 and 3600");
        }
        if let Err(e) = std::fs::create_dir_all(&out) {
            return usage_error(&format!("cannot create {}: {e}", out.display()));
        }
        let template = RealArgs {
            contact_points: contact_points.clone(),
            algorithm: Variant::Queue,
            threads: 1,
            acquisitions: 100_000,
            processes: 1,
            hold_ms: 10,
            ttl_s: 10,
            renew_ms: None,
            poll_ms: 100,
            consistency: "quorum".into(),
            keyspace: "cassalock".into(),
            lock_id: None,
            max_wait_s: 120,
            run_limit_s: seconds,
            no_fencing: false,
            json: false,
            events: false,
            worker_job: None,
            worker_index: None,
        };
        // Warm the cluster up first (JIT, connection pools, the tables): a freshly started
        // cluster ran the first configuration at a third of its later speed. Not reported.
        let warm_up = RealArgs {
            algorithm: Variant::Queue,
            threads: 1,
            run_limit_s: WARM_UP_S,
            ..template.clone()
        };
        eprintln!("bench real: warming up for {WARM_UP_S} s (not reported)");
        if let Err(e) = execute(&warm_up, false) {
            eprintln!("error: warm-up: {e}");
            return ExitCode::from(1);
        }
        let mut runs = Vec::new();
        for variant in [Variant::Old, Variant::Queue, Variant::Lwt] {
            for &n in &lockers {
                let args = RealArgs {
                    algorithm: variant,
                    threads: n,
                    ..template.clone()
                };
                eprintln!("bench real: {} with {n} lockers for {seconds} s", variant.name());
                match execute(&args, false) {
                    Ok(summary) => {
                        eprintln!(
                            "  {:.2} acq/s, wait p50 {:.1} ms p99 {:.1} ms, {:.1} requests/acq, {} errors",
                            summary.acquisitions_per_s,
                            summary.wait_p50_ms,
                            summary.wait_p99_ms,
                            summary.requests_per_acquisition,
                            summary.errors
                        );
                        runs.push(summary);
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(1);
                    }
                }
                // Let the last run's lease cells and tombstones age out of the picture: every
                // run uses a fresh lock id anyway.
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        let nodes = runtime()
            .ok()
            .and_then(|rt| {
                rt.block_on(async {
                    let config = cassalock::store::cassandra::CassandraConfig {
                        contact_points: contact_points.clone(),
                        ..Default::default()
                    };
                    cassalock::store::cassandra::CassandraStore::connect(&config)
                        .await
                        .ok()
                        .map(|s| s.nodes())
                })
            })
            .unwrap_or(0);
        let setup = Setup {
            nodes,
            consistency: "QUORUM".into(),
            cassandra_version: cassandra_version(),
            seconds_per_run: seconds,
            hold_ms: template.hold_ms,
            ttl_s: template.ttl_s,
            poll_ms: template.poll_ms,
            machine: format!(
                "{} cores",
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
            ),
        };
        match real_cluster::write(&out, &setup, &runs) {
            Ok(files) => {
                println!(
                    "real-cluster report: {}",
                    files
                        .iter()
                        .map(|f| out.join(f).display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        }
    }

    /// The Cassandra version the cluster script resolves (from its pom), for the report.
    fn cassandra_version() -> String {
        let pom = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cluster/pom.xml");
        std::fs::read_to_string(pom)
            .ok()
            .and_then(|text| {
                let start = text.find("<cassandra.version>")? + "<cassandra.version>".len();
                let end = text[start..].find('<')? + start;
                Some(text[start..end].to_string())
            })
            .unwrap_or_else(|| "5.0.x".into())
    }
}
