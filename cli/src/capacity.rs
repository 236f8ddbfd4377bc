//! `cassalock bench capacity`: the Cassandra cluster's own request ceiling on this machine
//! (`cassalock_real::capacity`), the figure a lock's real-cluster throughput is read against.

use std::process::ExitCode;

use cassalock_real::capacity::CapacityPlan;

/// The command that measures `plan`, for messages.
fn command(plan: &CapacityPlan) -> String {
    let clients: Vec<String> = plan.clients.iter().map(|c| c.to_string()).collect();
    format!(
        "bench capacity --clients {} --seconds {} --contact-points {}",
        clients.join(","),
        plan.seconds,
        plan.contact_points.join(",")
    )
}

#[cfg(madsim)]
pub fn run(plan: CapacityPlan) -> ExitCode {
    if let Err(refused) = plan.check() {
        return crate::usage_error(&refused.to_string());
    }
    eprintln!(
        "error: `bench capacity` talks to a real Cassandra cluster: use the real build, \
         `RUSTFLAGS=\"\" CARGO_TARGET_DIR=target/real cargo run --release -- {}` (after `cluster/cassalock-cluster start --nodes 3`)",
        command(&plan)
    );
    ExitCode::from(2)
}

#[cfg(not(madsim))]
pub fn run(plan: CapacityPlan) -> ExitCode {
    use cassalock_real::capacity::{measure, CapacityPoint};

    if let Err(refused) = plan.check() {
        return crate::usage_error(&refused.to_string());
    }
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    eprintln!(
        "bench capacity: {} s at each of {} client count(s), after {} s of warm-up; {} core(s) here",
        plan.seconds,
        plan.clients.len(),
        cassalock_real::capacity::WARM_UP_SECONDS,
        cores
    );
    // The header once the cluster has answered, before the first point's line.
    let header_printed = std::sync::atomic::AtomicBool::new(false);
    let line = |p: &CapacityPoint| {
        if !header_printed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            println!("cassalock {}", command(&plan));
            println!(
                "{:>7}  {:>10}  {:>9}  {:>9}  {:>8}  {:>6}",
                "clients", "requests/s", "p50 ms", "p99 ms", "CPU busy", "errors"
            );
        }
        println!(
            "{:>7}  {:>10.0}  {:>9.2}  {:>9.2}  {:>8}  {:>6}",
            p.clients,
            p.requests_per_s,
            p.latency_p50_ms,
            p.latency_p99_ms,
            p.cpu_busy_pct.map(|b| format!("{b:.0}%")).unwrap_or_else(|| "-".into()),
            p.errors
        )
    };
    match measure(&plan, &line) {
        Ok(points) => {
            let best = points
                .iter()
                .max_by(|a, b| a.requests_per_s.total_cmp(&b.requests_per_s))
                .expect("a plan has at least one client count");
            println!(
                "highest: {:.0} requests/s at {} clients (p50 {:.2} ms{})",
                best.requests_per_s,
                best.clients,
                best.latency_p50_ms,
                best.cpu_busy_pct
                    .map(|b| format!(", CPU {b:.0}% busy"))
                    .unwrap_or_default()
            );
            for p in points.iter().filter(|p| p.latencies < p.requests) {
                eprintln!(
                    "note: at {} clients the latencies are over the first {} of {} requests (each client keeps at most {})",
                    p.clients,
                    p.latencies,
                    p.requests,
                    cassalock_real::capacity::MAX_LATENCIES / p.clients
                );
            }
            let errors: u64 = points.iter().map(|p| p.errors).sum();
            if errors > 0 {
                eprintln!(
                    "warning: {} request(s) failed; a failed client stops for its point, so the rates above undercount",
                    errors
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(4)
        }
    }
}
