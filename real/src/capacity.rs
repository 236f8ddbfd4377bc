//! The store's own ceiling: how many requests a second the Cassandra cluster
//! answers on this machine when nothing but requests are asked of it.
//!
//! Why a lock benchmark needs it: on one machine the cluster's nodes and the lockers share the
//! same cores, so a lock's throughput could be bounded by the cluster's request rate (divided by
//! the lock's requests per acquisition) rather than by its handoff. Measured here, it is not: the
//! locks' runs ask a third or less of what the cluster answers to as many clients
//! asking one request after another. What bounds them is how many requests they make one after
//! another, each at the latency of one round trip. `real` states each run's requests a second
//! and how busy the machine's CPU was ([`CpuTimes`]); a busy CPU alone proves nothing, as
//! Cassandra's threads keep the cores busy at a fraction of the rate it can answer.
//!
//! What is measured: `c` clients on one connection, each asking one request after another,
//! alternating a slice read and a one-cell write (with a TTL, so nothing stays) on a row of its
//! own, at the lock's consistency, for a fixed time; the requests answered, their latency, and
//! the machine's CPU over that time. The mix is about the locks' own (their requests are half
//! reads, half writes and deletes).

use serde::{Deserialize, Serialize};

/// The most client counts one measurement takes.
pub const MAX_POINTS: usize = 12;
/// The most clients at one point.
pub const MAX_CLIENTS: usize = 256;
/// The most seconds one point runs.
pub const MAX_SECONDS: u64 = 600;
/// Seconds of requests before the first point, not counted (a cluster just started answers its
/// first requests several times slower).
pub const WARM_UP_SECONDS: u64 = 3;
/// The most latencies kept at one point (the first ones; their count is stated when cut).
pub const MAX_LATENCIES: usize = 1_000_000;

/// What to measure.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CapacityPlan {
    pub contact_points: Vec<String>,
    pub keyspace: String,
    pub consistency: String,
    /// Client counts, increasing.
    pub clients: Vec<usize>,
    pub seconds: u64,
}

impl CapacityPlan {
    /// Why the plan cannot run, if it cannot.
    pub fn check(&self) -> Result<(), crate::Refused> {
        if self.clients.is_empty() || self.clients.len() > MAX_POINTS {
            return Err(crate::Refused(format!(
                "--clients takes 1 to {MAX_POINTS} counts, got {}",
                self.clients.len()
            )));
        }
        if let Some(bad) = self.clients.iter().find(|&&c| c == 0 || c > MAX_CLIENTS) {
            return Err(crate::Refused(format!(
                "--clients: each count must be 1-{MAX_CLIENTS}, got {bad}"
            )));
        }
        if self.clients.windows(2).any(|w| w[0] >= w[1]) {
            return Err("--clients must be increasing, e.g. 1,4,16".into());
        }
        if self.seconds == 0 || self.seconds > MAX_SECONDS {
            return Err(crate::Refused(format!(
                "--seconds must be 1-{MAX_SECONDS}, got {}",
                self.seconds
            )));
        }
        Ok(())
    }
}

/// One client count's figures.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CapacityPoint {
    pub clients: usize,
    pub elapsed_s: f64,
    pub requests: u64,
    pub requests_per_s: f64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    /// How many requests the latencies are over: all answered, or the first of each client's
    /// when more than [`MAX_LATENCIES`] in all were answered.
    pub latencies: u64,
    /// Requests that failed (timeouts, unavailable); they end that client's loop for the point.
    pub errors: u64,
    /// The machine's CPU over the point, all cores (None where /proc/stat cannot be read).
    pub cpu_busy_pct: Option<f64>,
}

/// The machine's CPU time so far, from Linux's /proc/stat: ticks spent busy (user, nice,
/// system, irq, softirq, steal) and in all (those and idle, iowait).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    pub busy_ticks: u64,
    pub total_ticks: u64,
}

impl CpuTimes {
    /// Now, or None where /proc/stat cannot be read or has no "cpu" line.
    pub fn now() -> Option<CpuTimes> {
        CpuTimes::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The first ("cpu", all cores) line of /proc/stat's text.
    pub fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().find(|line| line.starts_with("cpu "))?;
        let ticks: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|field| field.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal [guest guest_nice: already in user].
        if ticks.len() < 8 {
            return None;
        }
        let idle = ticks[3] + ticks[4];
        let busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7];
        Some(CpuTimes {
            busy_ticks: busy,
            total_ticks: busy + idle,
        })
    }

    /// Percent of all cores' time spent busy from `earlier` to `self`; None when no tick passed.
    pub fn busy_pct_since(&self, earlier: &CpuTimes) -> Option<f64> {
        let total = self.total_ticks.checked_sub(earlier.total_ticks)?;
        let busy = self.busy_ticks.checked_sub(earlier.busy_ticks)?;
        if total == 0 {
            return None;
        }
        debug_assert!(busy <= total, "busy ticks are a part of all ticks");
        Some(100.0 * busy as f64 / total as f64)
    }
}

#[cfg(not(madsim))]
pub use measure::{measure, CapacityError};

#[cfg(not(madsim))]
mod measure {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use cassalock::store::cassandra::CassandraStore;
    use cassalock::store::{CellWrite, Store, StoreOp};
    use cassalock_judge::stats;

    use super::{CapacityPlan, CapacityPoint, CpuTimes, MAX_LATENCIES, WARM_UP_SECONDS};

    #[derive(Debug, thiserror::Error)]
    pub enum CapacityError {
        #[error(transparent)]
        Consistency(#[from] crate::cluster::UnknownConsistency),
        #[error("cannot reach the cluster: {0}")]
        Connect(#[from] cassalock::store::cassandra::CassandraError),
        #[error("cannot start the async runtime: {0}")]
        Runtime(std::io::Error),
    }

    /// What one client did at one point.
    struct ClientFigures {
        latencies_ms: Vec<f64>,
        answered: u64,
        errors: u64,
    }

    /// Measure every client count of `plan` in turn, calling `progress` after each.
    pub fn measure(
        plan: &CapacityPlan,
        progress: &(dyn Fn(&CapacityPoint) + Sync),
    ) -> Result<Vec<CapacityPoint>, CapacityError> {
        debug_assert!(plan.check().is_ok(), "the plan is checked before it runs");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(CapacityError::Runtime)?;
        runtime.block_on(async {
            let config = crate::cluster::config(&plan.contact_points, &plan.keyspace, &plan.consistency)?;
            let store = Arc::new(CassandraStore::connect(&config).await?);
            let run_id = crate::now_us();
            let warm_clients = plan.clients[plan.clients.len() / 2];
            point(&store, run_id, warm_clients, Duration::from_secs(WARM_UP_SECONDS)).await;
            let mut points = Vec::with_capacity(plan.clients.len());
            for &clients in &plan.clients {
                let figures = point(&store, run_id, clients, Duration::from_secs(plan.seconds)).await;
                progress(&figures);
                points.push(figures);
            }
            Ok(points)
        })
    }

    /// `clients` clients asking for `length`, each on its own row.
    async fn point(store: &Arc<CassandraStore>, run_id: u64, clients: usize, length: Duration) -> CapacityPoint {
        let cpu_before = CpuTimes::now();
        let began = Instant::now();
        let deadline = began + length;
        let per_client_latencies = MAX_LATENCIES / clients.max(1);
        let tasks: Vec<_> = (0..clients)
            .map(|client| {
                let store = Arc::clone(store);
                let row = format!("capacity-{run_id}-{client}");
                tokio::spawn(async move {
                    let mut figures = ClientFigures {
                        latencies_ms: Vec::new(),
                        answered: 0,
                        errors: 0,
                    };
                    // Bounded by the deadline: every request ends (the driver's timeout) or fails.
                    let mut i: u64 = 0;
                    while Instant::now() < deadline {
                        let request = if i % 2 == 0 {
                            StoreOp::ReadSlice {
                                row: row.clone(),
                                start: String::new(),
                                count: 10,
                            }
                        } else {
                            StoreOp::Write {
                                row: row.clone(),
                                cells: vec![CellWrite {
                                    column: "capacity".into(),
                                    value: i.to_string(),
                                    ttl_s: Some(60),
                                }],
                                timestamp: crate::now_us(),
                            }
                        };
                        i += 1;
                        let asked = Instant::now();
                        match store.execute(request).await {
                            Ok(_) => {
                                figures.answered += 1;
                                if figures.latencies_ms.len() < per_client_latencies {
                                    figures.latencies_ms.push(asked.elapsed().as_secs_f64() * 1e3);
                                }
                            }
                            Err(_) => {
                                figures.errors += 1;
                                break;
                            }
                        }
                    }
                    figures
                })
            })
            .collect();
        let mut latencies = Vec::new();
        let mut requests = 0;
        let mut errors = 0;
        for task in tasks {
            // A task that panicked counts as an error, not as requests.
            match task.await {
                Ok(figures) => {
                    requests += figures.answered;
                    errors += figures.errors;
                    latencies.extend(figures.latencies_ms);
                }
                Err(_) => errors += 1,
            }
        }
        let elapsed_s = began.elapsed().as_secs_f64();
        let cpu_busy_pct = match (cpu_before, CpuTimes::now()) {
            (Some(before), Some(after)) => after.busy_pct_since(&before),
            _ => None,
        };
        CapacityPoint {
            clients,
            elapsed_s,
            requests,
            requests_per_s: requests as f64 / elapsed_s,
            latency_p50_ms: stats::percentile(&latencies, 50),
            latency_p99_ms: stats::percentile(&latencies, 99),
            latencies: latencies.len() as u64,
            errors,
            cpu_busy_pct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_read_the_all_cores_line_and_give_the_busy_share() {
        let before = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n";
        let after = "cpu  250 0 100 850 50 10 0 0 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n";
        let before = CpuTimes::parse(before).unwrap();
        let after = CpuTimes::parse(after).unwrap();
        assert_eq!(
            before,
            CpuTimes {
                busy_ticks: 150,
                total_ticks: 1000
            }
        );
        // 210 busy ticks of 260.
        let pct = after.busy_pct_since(&before).unwrap();
        assert!((pct - 100.0 * 210.0 / 260.0).abs() < 1e-9, "{pct}");
        assert_eq!(before.busy_pct_since(&before), None, "no tick passed");
        assert_eq!(before.busy_pct_since(&after), None, "time does not run back");
        assert_eq!(CpuTimes::parse("cpu0 1 2 3\n"), None, "no all-cores line");
        assert_eq!(CpuTimes::parse("cpu  1 2 x 4 5 6 7 8\n"), None, "malformed");
    }

    #[test]
    fn a_capacity_plan_refuses_what_it_cannot_run() {
        let plan = |clients: Vec<usize>, seconds| CapacityPlan {
            contact_points: vec![],
            keyspace: "k".into(),
            consistency: "quorum".into(),
            clients,
            seconds,
        };
        assert!(plan(vec![1, 4, 16], 10).check().is_ok());
        assert!(plan(vec![], 10).check().is_err());
        assert!(plan(vec![0], 10).check().is_err());
        assert!(plan(vec![MAX_CLIENTS + 1], 10).check().is_err());
        assert!(plan(vec![4, 4], 10).check().is_err());
        assert!(plan(vec![4, 1], 10).check().is_err());
        assert!(plan(vec![1], 0).check().is_err());
        assert!(plan(vec![1], MAX_SECONDS + 1).check().is_err());
        assert!(plan((1..=MAX_POINTS + 1).collect(), 1).check().is_err());
    }
}
