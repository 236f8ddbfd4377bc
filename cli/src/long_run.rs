//! `cassalock bench long-run`: the Cassandra locks used many times in a row, uncontended, on
//! the real cluster; writes reports/real-long-run.md.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use cassalock_real::long_run::LongRunPlan;
use cassalock_real::Lock;

/// The longest idle wait `--idle-s` takes: an hour.
const MAX_IDLE_S: u64 = 3600;

/// The long run's options, as `bench` parsed them.
pub struct LongRunArgs {
    pub locks: Vec<Lock>,
    pub plan: LongRunPlan,
    pub out: PathBuf,
    /// Seconds the locks sit idle before their rows are read again (0: not read again).
    pub idle_s: u64,
    /// Write the report again from this data file, measuring nothing.
    pub from_data: Option<PathBuf>,
    /// The measuring flags given with --from-data, which it does not read.
    pub measuring_flags: Vec<&'static str>,
}

/// Say which files were written into `out`; exit 2 when writing failed.
fn written(out: &std::path::Path, result: Result<Vec<String>, cassalock_report::ReportError>) -> ExitCode {
    match result {
        Ok(files) => {
            for file in files {
                eprintln!("wrote {}", out.join(file).display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// `bench long-run --from-data FILE`: the report and chart again from an earlier run's data
/// (any build). Exit 2 when the file cannot be read or is not such data.
fn rerender(data: &std::path::Path, args: &LongRunArgs) -> ExitCode {
    use cassalock_report::real_long_run;

    if let Some(flag) = args.measuring_flags.first() {
        return crate::usage_error(&format!(
            "--from-data writes the report from the runs in {} and measures nothing: drop {flag}",
            data.display()
        ));
    }
    let measured = match real_long_run::read_data(data) {
        Ok(measured) => measured,
        Err(e) => return crate::usage_error(&format!("--from-data: {e}")),
    };
    written(&args.out, real_long_run::write_rendered(&args.out, &measured))
}

impl LongRunArgs {
    /// Check the options; the error (print it with `{:#}`) names the flag.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(other) = self.locks.iter().find(|l| !matches!(l, Lock::Old | Lock::Queue)) {
            bail!(
                "--locks {}: the long run takes the Cassandra row locks old and queue only",
                other.name()
            );
        }
        if self.locks.is_empty() {
            bail!("--locks: name old, queue or both");
        }
        crate::real::check_contact_points(&self.plan.contact_points)?;
        if self.idle_s > MAX_IDLE_S {
            bail!("--idle-s {}: give 0 to {MAX_IDLE_S}", self.idle_s);
        }
        self.plan.check().map_err(|refused| anyhow!(refused.0))
    }

    /// The command that measures this again (`--out` only when not the default).
    pub fn command(&self) -> String {
        let out = if self.out == std::path::Path::new("reports") {
            String::new()
        } else {
            format!(" --out {}", self.out.display())
        };
        // Both settings are on by default; a run without one names both.
        let reuse = match (self.plan.reuse_thread_ids, self.plan.queue_read_from_last_hold) {
            (true, true) => String::new(),
            (reuse, from_last_hold) => {
                format!(" --reuse-thread-ids {reuse} --queue-read-from-last-hold {from_last_hold}")
            }
        };
        format!(
            "cassalock bench long-run --locks {} --acquisitions {} --block {} --idle-s {} --contact-points {}{reuse}{out}",
            self.locks.iter().map(|l| l.name()).collect::<Vec<_>>().join(","),
            self.plan.acquisitions,
            self.plan.block,
            self.idle_s,
            self.plan.contact_points.join(",")
        )
    }
}

#[cfg(madsim)]
pub fn run(args: LongRunArgs) -> ExitCode {
    if let Some(data) = &args.from_data {
        return rerender(data, &args);
    }
    if let Err(error) = args.check() {
        return crate::usage_error(&format!("{error:#}"));
    }
    eprintln!(
        "error: `bench long-run` talks to a real Cassandra cluster: use the real build, \
         `RUSTFLAGS=\"\" CARGO_TARGET_DIR=target/real cargo run --release -- {}` (after `cluster/cassalock-cluster start --nodes 3`)",
        args.command().trim_start_matches("cassalock ")
    );
    ExitCode::from(2)
}

#[cfg(not(madsim))]
pub fn run(args: LongRunArgs) -> ExitCode {
    use cassalock_report::real_long_run::{self, Measured};

    if let Some(data) = &args.from_data {
        return rerender(data, &args);
    }
    if let Err(error) = args.check() {
        return crate::usage_error(&format!("{error:#}"));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(4);
        }
    };
    let blocks = args.plan.acquisitions.div_ceil(args.plan.block);
    let mut runs = Vec::new();
    for &lock in &args.locks {
        eprintln!(
            "bench long-run: {}, {} in {} of {} (one line a block)",
            lock.title(),
            cassalock_judge::text::count(args.plan.acquisitions, "acquisition"),
            cassalock_judge::text::count(blocks, "block"),
            args.plan.block
        );
        let progress = |b: &cassalock_real::long_run::Block| {
            eprintln!(
                "  from {:>7}: acquire p50 {:6.2} ms p99 {:7.2} ms ({:.1} + {:.1} requests, {:.2}x; mean {:.2} ms: {:.2} waiting for replies, {:.2} asleep), release p50 {:5.2} ms ({:.2}x), probes {:.2} / {:.2} ms",
                b.first,
                b.acquire_p50_ms,
                b.acquire_p99_ms,
                b.acquire_requests.reads,
                b.acquire_requests.writes,
                b.acquire_ratio(),
                b.acquire_breakdown.call_mean_ms,
                b.acquire_breakdown.in_requests_mean_ms,
                b.acquire_breakdown.asleep_mean_ms,
                b.release_p50_ms,
                b.release_ratio(),
                b.read_probe_p50_ms,
                b.write_probe_p50_ms
            );
        };
        match runtime.block_on(cassalock_real::long_run::run(&args.plan, lock, &progress)) {
            Ok(run) => {
                let w = &run.whole;
                println!(
                    "{}: acquire p50 {:.2} ms = {:.2}x its {:.1} + {:.1} requests' round trips; release p50 {:.2} ms = {:.2}x its {:.1} + {:.1}; probes {:.2} / {:.2} ms; last block / first {:.2}x; {:.1} s",
                    run.lock,
                    w.acquire_p50_ms,
                    w.acquire_ratio(),
                    w.acquire_requests.reads,
                    w.acquire_requests.writes,
                    w.release_p50_ms,
                    w.release_ratio(),
                    w.release_requests.reads,
                    w.release_requests.writes,
                    w.read_probe_p50_ms,
                    w.write_probe_p50_ms,
                    run.growth(),
                    run.seconds
                );
                for read in &run.row_reads {
                    println!("  a read of its {} row: {:.2} ms (p50)", read.row, read.read_p50_ms);
                }
                runs.push(run);
            }
            Err(e) => {
                eprintln!("error: {}: {e}", lock.title());
                return ExitCode::from(4);
            }
        }
    }
    if args.idle_s > 0 {
        eprintln!(
            "bench long-run: the locks sit idle {} s (the table's gc_grace_seconds is {} s), then their rows are read again",
            args.idle_s,
            cassalock_real::long_run::GC_GRACE_S
        );
        std::thread::sleep(std::time::Duration::from_secs(args.idle_s));
        if let Err(e) = runtime.block_on(cassalock_real::long_run::reread_after_idle(&args.plan, &mut runs)) {
            eprintln!("error: reading the rows again: {e}");
            return ExitCode::from(4);
        }
        for run in &runs {
            for read in &run.row_reads {
                println!(
                    "{}: a read of its {} row after {} s idle: {:.2} ms (p50; {:.2} right after the run)",
                    run.lock,
                    read.row,
                    args.idle_s,
                    read.after_idle_p50_ms.unwrap_or(f64::NAN),
                    read.read_p50_ms
                );
            }
        }
    }
    let nodes = runtime.block_on(async {
        let config = cassalock::store::cassandra::CassandraConfig {
            contact_points: args.plan.contact_points.clone(),
            ..Default::default()
        };
        cassalock::store::cassandra::CassandraStore::connect(&config)
            .await
            .map(|s| s.nodes())
    });
    // The report names the cluster it measured: a cluster that no longer answers ends the run
    // here instead of writing "0 Cassandra nodes".
    let nodes = match nodes {
        Ok(nodes) => nodes,
        Err(e) => {
            eprintln!("error: counting the cluster's nodes after the runs: {e}");
            return ExitCode::from(4);
        }
    };
    let measured = Measured {
        command: args.command(),
        cluster: format!(
            "{} on loopback (contact point {}), consistency {}, one locker, no hold",
            cassalock_judge::text::count(nodes, "Cassandra node"),
            args.plan.contact_points.join(","),
            args.plan.consistency.to_uppercase()
        ),
        idle_s: (args.idle_s > 0).then_some(args.idle_s),
        runs,
    };
    written(&args.out, real_long_run::write(&args.out, &measured))
}
