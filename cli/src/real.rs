//! `cassalock real`: the library's lock code against a running Cassandra cluster, with a
//! resource check; and `cassalock bench real`, the benchmark behind `reports/real-cluster.md`.
//!
//! Only the real build (no `--cfg madsim`) talks to a cluster; the simulation build prints how
//! to get the real one.

use std::path::PathBuf;
#[cfg(madsim)]
use std::process::ExitCode;

use clap::Args;

use cassalock_real::Variant;

/// `--connect-timeout-s` by default: the store's own default (checked below in the real build,
/// which has the store; this command's flags exist in both builds).
const CONNECT_TIMEOUT_S: u64 = 15;
#[cfg(not(madsim))]
const _: () = assert!(CONNECT_TIMEOUT_S == cassalock::store::cassandra::DEFAULT_CONNECT_TIMEOUT_S);

/// Run lockers against a real cluster and judge mutual exclusion.
#[derive(Args, Debug, Clone)]
pub struct RealArgs {
    /// Cassandra nodes, host:port, comma-separated.
    #[arg(long, default_value = "127.0.0.1:9042", value_delimiter = ',')]
    pub contact_points: Vec<String>,
    /// Which lock: Cassandra's (old, queue, lwt; --contact-points) or another family's
    /// (redis-set-nx, redisson, redlock, memcached; --servers).
    #[arg(long, value_enum, default_value = "queue")]
    pub algorithm: Variant,
    /// Redis or Memcached servers, host:port, comma-separated: redis-set-nx and redisson one
    /// server (or a primary and its replicas: the lockers use the master), redlock every
    /// master (1-15), memcached one server. Redisson's waiters have no pub/sub here: a handoff
    /// waits up to the holder's remaining lease.
    #[arg(long, value_delimiter = ',')]
    pub servers: Vec<String>,
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
    /// Give up connecting to the cluster and setting up its table after this many seconds
    /// (1-600): a contact point that accepts connections but never answers (a paused node)
    /// fails with exit status 4 instead of hanging.
    #[arg(long, default_value_t = CONNECT_TIMEOUT_S)]
    pub connect_timeout_s: u64,
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
    use std::path::{Path, PathBuf};
    use std::process::ExitCode;
    use std::time::Duration;

    use cassalock_real::runner::{check, execute, worker, RunSpec};
    use cassalock_real::{Summary, Variant};
    use cassalock_report::real_cluster::{self, Setup};

    use super::RealArgs;
    use crate::usage_error;

    fn spec(args: &RealArgs) -> RunSpec {
        RunSpec {
            contact_points: args.contact_points.clone(),
            servers: args.servers.clone(),
            variant: args.algorithm,
            threads: args.threads,
            acquisitions: args.acquisitions,
            processes: args.processes,
            hold_ms: args.hold_ms,
            ttl_s: args.ttl_s,
            renew_ms: args.renew_ms,
            poll_ms: args.poll_ms,
            consistency: args.consistency.clone(),
            keyspace: args.keyspace.clone(),
            lock_id: args.lock_id.clone(),
            max_wait_s: args.max_wait_s,
            run_limit_s: args.run_limit_s,
            fencing: !args.no_fencing,
            connect_timeout_s: args.connect_timeout_s,
        }
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
        if !summary.tokens.is_empty() {
            println!("  resource tokens         {}", summary.tokens);
        }
        println!(
            "  T1-belief               {}",
            if summary.t1_belief_holds() {
                "no two holders at once".to_string()
            } else {
                format!(
                    "VIOLATED: {}",
                    cassalock_history::text::count(summary.belief_overlaps, "overlap")
                )
            }
        );
        println!(
            "  T1-resource             {}",
            if summary.t1_resource_holds() {
                if summary.tokens.is_empty() {
                    format!("no stale write accepted ({} refused by fencing)", summary.stale_tokens)
                } else {
                    "no stale write (fencing off)".to_string()
                }
            } else {
                format!(
                    "VIOLATED: {} accepted",
                    cassalock_history::text::count(summary.stale_accepted, "stale write")
                )
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
                    ExitCode::from(BACKEND_UNAVAILABLE)
                }
            };
        }
        let spec = spec(&args);
        if let Err(e) = check(&spec) {
            return usage_error(&e.to_string());
        }
        match execute(&spec, args.events) {
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
                ExitCode::from(BACKEND_UNAVAILABLE)
            }
        }
    }

    /// Exit status when the cluster cannot be reached or set up (or a worker process cannot
    /// run): not a verdict, so not 1.
    const BACKEND_UNAVAILABLE: u8 = 4;

    /// Seconds of unreported load before the benchmark's first configuration.
    const WARM_UP_S: u64 = 15;

    /// `cassalock bench real`: old, queue and LWT at each locker count, for a fixed time each.
    pub fn bench(
        contact_points: Vec<String>,
        lockers: Vec<usize>,
        seconds: u64,
        repeats: usize,
        out: PathBuf,
    ) -> ExitCode {
        if lockers.is_empty() || lockers.iter().any(|&n| !(1..=256).contains(&n)) {
            return usage_error("--lockers: give counts between 1 and 256");
        }
        if !(1..=3600).contains(&seconds) {
            return usage_error("--seconds must be between 1 and 3600");
        }
        if !(1..=20).contains(&repeats) {
            return usage_error("--repeats must be between 1 and 20");
        }
        // The report's "Generated by": every option that shapes it.
        let command = format!(
            "cassalock bench real --contact-points {} --lockers {} --seconds {seconds} --repeats {repeats}",
            contact_points.join(","),
            lockers.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
        );
        let variants = [Variant::Old, Variant::Queue, Variant::Lwt];
        let total_runs = repeats * variants.len() * lockers.len();
        eprintln!(
            "bench real: {total_runs} runs of {seconds} s ({repeats} of each configuration), about {} min with the warm-up",
            (total_runs as u64 * (seconds + 1) + WARM_UP_S).div_ceil(60)
        );
        if let Err(e) = std::fs::create_dir_all(&out) {
            return usage_error(&format!("cannot create {}: {e}", out.display()));
        }
        let template = RunSpec {
            contact_points: contact_points.clone(),
            servers: Vec::new(),
            variant: Variant::Queue,
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
            fencing: true,
            connect_timeout_s: super::CONNECT_TIMEOUT_S,
        };
        // Warm the cluster up first (JIT, connection pools, the tables): a freshly started
        // cluster ran the first configuration at a third of its later speed. Not reported.
        let warm_up = RunSpec {
            variant: Variant::Queue,
            threads: 1,
            run_limit_s: WARM_UP_S,
            ..template.clone()
        };
        eprintln!("bench real: warming up for {WARM_UP_S} s (not reported)");
        if let Err(e) = execute(&warm_up, false) {
            eprintln!("error: warm-up: {e}");
            return ExitCode::from(BACKEND_UNAVAILABLE);
        }
        let mut runs = Vec::new();
        // Interleaved: one run of every configuration, then the next round, so that a slow
        // stretch of the machine spreads over all configurations instead of one.
        for round in 1..=repeats {
            for variant in variants {
                for &n in &lockers {
                    let spec = RunSpec {
                        variant,
                        threads: n,
                        ..template.clone()
                    };
                    eprintln!(
                        "bench real: run {}/{total_runs} (round {round}/{repeats}): {} with {} for {seconds} s",
                        runs.len() + 1,
                        variant.name(),
                        cassalock_history::text::count(n, "locker")
                    );
                    match execute(&spec, false) {
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
                            return ExitCode::from(BACKEND_UNAVAILABLE);
                        }
                    }
                    // Let the last run's lease cells and tombstones age out of the picture: every
                    // run uses a fresh lock id anyway.
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
        let nodes = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
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
            repeats,
            command,
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
