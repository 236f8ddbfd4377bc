//! The long run: one locker takes and releases one lock many times in a row
//! on the real cluster, with nobody contending, and the acquire and release latencies are read
//! block by block, so that a cost that grows with the lock's age shows as a slope.
//!
//! Why it might grow: every acquisition of the queue lock writes a queue cell and deletes it
//! again, all in one row, so the row gathers tombstones; a read of the row walks past every
//! tombstone not yet purged (`gc_grace_seconds`, 60 s on our table, then a compaction). The old
//! lock deletes its cells in place, in rows of its own.
//!
//! What a latency is compared with: *probes*, single requests of the same consistency on a row
//! the lock never touches, timed before each block: slice reads and one-cell writes apart,
//! since a quorum read costs more than a write. An uncontended call that makes `r` reads and
//! `w` writes (deletes count as writes) one after the other cannot take much less than `r`
//! read probes plus `w` write probes; the ratio of the two says how much the lock adds beyond
//! its requests (the goal is 1.3x at most).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use cassalock_judge::stats;

/// The most acquisitions one long run makes.
pub const MAX_ACQUISITIONS: u64 = 1_000_000;
/// The most blocks a run is cut into (the chart's points).
pub const MAX_BLOCKS: u64 = 1_000;
/// Probes of each kind (read, write) timed before each block.
pub const PROBES_PER_BLOCK: usize = 10;
/// Acquisitions of another lock made first and not reported: a freshly started cluster
/// answers its first requests several times slower (JIT, connection pools).
pub const WARM_UP_ACQUISITIONS: u64 = 200;

/// The store requests of one call, by kind (deletes are writes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Requests {
    pub reads: f64,
    pub writes: f64,
}

impl Requests {
    pub fn total(&self) -> f64 {
        self.reads + self.writes
    }

    /// What these requests take one after the other, at the probes' medians.
    pub fn round_trips_ms(&self, read_ms: f64, write_ms: f64) -> f64 {
        self.reads * read_ms + self.writes * write_ms
    }
}

/// Where one call's wall time went, as the locker's own step events tell it: waiting for its
/// store requests' replies, and sleeping (poll, backoff, retry: the machine's own sleeps; the
/// renewal lane's sleep runs beside the call and is not counted). The rest is the client's
/// own work between steps (machine steps, tasks, the driver's queues).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spent {
    pub in_requests: Duration,
    pub asleep: Duration,
}

/// What one acquisition cost: wall time of `lock` and of `release`, and their store requests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub acquire: Duration,
    pub release: Duration,
    pub acquire_requests: Requests,
    pub release_requests: Requests,
    pub acquire_spent: Spent,
    pub release_spent: Spent,
}

/// The probes timed before a block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Probes {
    pub reads: Vec<Duration>,
    pub writes: Vec<Duration>,
}

impl Probes {
    /// Add another block's probes.
    pub fn extend(&mut self, other: &Probes) {
        self.reads.extend_from_slice(&other.reads);
        self.writes.extend_from_slice(&other.writes);
    }
}

/// One block of consecutive acquisitions, summarized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// The index (from 0) of the block's first acquisition.
    pub first: u64,
    pub acquisitions: u64,
    pub acquire_p50_ms: f64,
    pub acquire_p99_ms: f64,
    pub release_p50_ms: f64,
    pub release_p99_ms: f64,
    /// Store requests per call, in `lock` and in `release` (means).
    pub acquire_requests: Requests,
    pub release_requests: Requests,
    /// Medians of the probes timed just before the block.
    pub read_probe_p50_ms: f64,
    pub write_probe_p50_ms: f64,
    /// Means over the block's calls: the call, the part spent waiting for its requests' replies,
    /// the part asleep (the rest is the client's own work). Means, so that the parts add up.
    #[serde(default)]
    pub acquire_breakdown: Breakdown,
    #[serde(default)]
    pub release_breakdown: Breakdown,
}

/// Mean milliseconds of a call, and of its parts (see [`Spent`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub call_mean_ms: f64,
    pub in_requests_mean_ms: f64,
    pub asleep_mean_ms: f64,
}

impl Breakdown {
    fn of(calls: impl Iterator<Item = (Duration, Spent)> + Clone) -> Breakdown {
        Breakdown {
            call_mean_ms: mean(calls.clone().map(|(call, _)| ms(&call))),
            in_requests_mean_ms: mean(calls.clone().map(|(_, spent)| ms(&spent.in_requests))),
            asleep_mean_ms: mean(calls.map(|(_, spent)| ms(&spent.asleep))),
        }
    }

    /// What is neither a request nor a sleep: the client's own work.
    pub fn client_mean_ms(&self) -> f64 {
        self.call_mean_ms - self.in_requests_mean_ms - self.asleep_mean_ms
    }
}

/// Reads of one row of the lock after the run, against the probe row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowRead {
    /// What the row is: "main", "shadow", "queue", "token", or "probe" (a row the lock never
    /// touched).
    pub row: String,
    /// The row's key in the table.
    #[serde(default)]
    pub key: String,
    /// Median of [`ROW_READS`] reads of its first live cell (a slice of one from the start:
    /// the server walks past every deleted cell before it).
    pub read_p50_ms: f64,
    /// The same, read again after the table's `gc_grace_seconds` and a margin went by with the
    /// lock unused (`reread_after_idle`): a tombstone older than the grace is no longer
    /// returned to the read, though it stays where it is until a compaction drops it.
    #[serde(default)]
    pub after_idle_p50_ms: Option<f64>,
}

/// Reads of each row timed after the run.
pub const ROW_READS: usize = 20;

/// One lock's long run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LongRun {
    /// The lock's name on the command line (`old`, `queue`).
    pub lock: String,
    pub blocks: Vec<Block>,
    /// After the last block: a read of each of the lock's rows, and of the probe row.
    pub row_reads: Vec<RowRead>,
    /// Over the whole run: every acquisition and every probe.
    pub whole: Block,
    pub seconds: f64,
}

fn ms(duration: &Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0u64), |(s, c), v| (s + v, c + 1));
    if count == 0 {
        f64::NAN
    } else {
        sum / count as f64
    }
}

fn mean_requests(requests: impl Iterator<Item = Requests> + Clone) -> Requests {
    Requests {
        reads: mean(requests.clone().map(|r| r.reads)),
        writes: mean(requests.map(|r| r.writes)),
    }
}

impl Block {
    /// Summarize `samples`, the acquisitions from `first` on, after `probes`.
    pub fn of(first: u64, samples: &[Sample], probes: &Probes) -> Block {
        let percentile = |values: Vec<f64>, p| stats::percentile(&values, p);
        let acquire: Vec<f64> = samples.iter().map(|s| ms(&s.acquire)).collect();
        let release: Vec<f64> = samples.iter().map(|s| ms(&s.release)).collect();
        Block {
            first,
            acquisitions: samples.len() as u64,
            acquire_p50_ms: stats::percentile(&acquire, 50),
            acquire_p99_ms: stats::percentile(&acquire, 99),
            release_p50_ms: stats::percentile(&release, 50),
            release_p99_ms: stats::percentile(&release, 99),
            acquire_requests: mean_requests(samples.iter().map(|s| s.acquire_requests)),
            release_requests: mean_requests(samples.iter().map(|s| s.release_requests)),
            read_probe_p50_ms: percentile(probes.reads.iter().map(ms).collect(), 50),
            write_probe_p50_ms: percentile(probes.writes.iter().map(ms).collect(), 50),
            acquire_breakdown: Breakdown::of(samples.iter().map(|s| (s.acquire, s.acquire_spent))),
            release_breakdown: Breakdown::of(samples.iter().map(|s| (s.release, s.release_spent))),
        }
    }

    /// The median acquire over its requests' round trips (1.0: nothing beyond its requests).
    pub fn acquire_ratio(&self) -> f64 {
        self.acquire_p50_ms / self.round_trips_ms(&self.acquire_requests)
    }

    pub fn release_ratio(&self) -> f64 {
        self.release_p50_ms / self.round_trips_ms(&self.release_requests)
    }

    /// What `requests` take one after the other at this block's probe medians.
    pub fn round_trips_ms(&self, requests: &Requests) -> f64 {
        requests.round_trips_ms(self.read_probe_p50_ms, self.write_probe_p50_ms)
    }
}

impl LongRun {
    /// The run's figures: the blocks, and the medians over every acquisition and probe.
    pub fn of(lock: &str, blocks: Vec<Block>, samples: &[Sample], probes: &Probes, seconds: f64) -> LongRun {
        LongRun {
            lock: lock.to_owned(),
            blocks,
            row_reads: Vec::new(),
            whole: Block::of(0, samples, probes),
            seconds,
        }
    }

    /// The last block's median acquire over the first's (1.0: no growth).
    pub fn growth(&self) -> f64 {
        match (self.blocks.first(), self.blocks.last()) {
            (Some(first), Some(last)) => last.acquire_p50_ms / first.acquire_p50_ms,
            _ => f64::NAN,
        }
    }
}

/// Adds up, from the locker's step events, the time one call spends waiting for replies and
/// asleep; [`CallTimer::take`] reads and resets it between calls. One locker, one call at a
/// time: the renewal lane's events (its sleep, and a renewal due only after `ttl/2`, which a
/// call with no hold never reaches) are left out by their sleep kind.
#[cfg(not(madsim))]
#[derive(Default)]
struct CallTimer {
    state: std::sync::Mutex<CallTimerState>,
}

#[cfg(not(madsim))]
#[derive(Default)]
struct CallTimerState {
    spent: Spent,
    asked: Option<std::time::Instant>,
}

#[cfg(not(madsim))]
impl CallTimer {
    fn take(&self) -> Spent {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        debug_assert!(state.asked.is_none(), "a call ends with every request answered");
        std::mem::take(&mut state.spent)
    }
}

#[cfg(not(madsim))]
impl cassalock::Observer for CallTimer {
    fn on_event(&self, event: cassalock::LockEvent) {
        use cassalock::algo::SleepKind;
        use cassalock::LockEvent;

        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match event {
            LockEvent::Request { .. } => state.asked = Some(std::time::Instant::now()),
            LockEvent::Reply { .. } => {
                if let Some(asked) = state.asked.take() {
                    state.spent.in_requests += asked.elapsed();
                }
            }
            LockEvent::Sleep { ms, kind, .. } if kind != SleepKind::Renewal => {
                state.spent.asleep += Duration::from_millis(ms);
            }
            _ => {}
        }
    }
}

/// How a long run is cut and where it runs.
#[derive(Clone, Debug)]
pub struct LongRunPlan {
    pub acquisitions: u64,
    pub block: u64,
    pub contact_points: Vec<String>,
    pub keyspace: String,
    pub consistency: String,
    /// The locker reuses its thread ids (`Settings::reuse_thread_ids`).
    pub reuse_thread_ids: bool,
    /// The queue lock reads its queue from its last hold's column
    /// (`Settings::queue_read_from_last_hold`).
    pub queue_read_from_last_hold: bool,
}

impl LongRunPlan {
    /// Check the sizes: an error names the flag and what it accepts.
    pub fn check(&self) -> Result<(), crate::Refused> {
        if !(1..=MAX_ACQUISITIONS).contains(&self.acquisitions) {
            return Err(crate::Refused(format!(
                "--acquisitions {}: give 1 to {MAX_ACQUISITIONS}",
                self.acquisitions
            )));
        }
        if self.block == 0 || self.block > self.acquisitions {
            return Err(crate::Refused(format!(
                "--block {}: give 1 to --acquisitions ({})",
                self.block, self.acquisitions
            )));
        }
        if self.acquisitions.div_ceil(self.block) > MAX_BLOCKS {
            return Err(crate::Refused(format!(
                "--block {}: {} acquisitions would make {} blocks; at most {MAX_BLOCKS} (give a larger block)",
                self.block,
                self.acquisitions,
                self.acquisitions.div_ceil(self.block)
            )));
        }
        Ok(())
    }
}

/// Why a long run stopped.
#[cfg(not(madsim))]
#[derive(Debug, thiserror::Error)]
pub enum LongRunError {
    #[error("the long run takes the old or the queue lock, not {0}")]
    NotOldOrQueue(&'static str),
    #[error(transparent)]
    Consistency(#[from] crate::cluster::UnknownConsistency),
    #[error(transparent)]
    Cassandra(#[from] cassalock::store::cassandra::CassandraError),
    #[error(transparent)]
    LockId(#[from] cassalock::algo::queue_column::InvalidName),
    /// `lock` or `release` failed (nobody contends: the cluster failed).
    #[error(transparent)]
    Lock(#[from] cassalock::LockError),
    #[error("a probe request failed: {0}")]
    Probe(cassalock::store::StoreFailure),
}

/// Run one lock's long run on the cluster; `progress` is told after each block.
#[cfg(not(madsim))]
pub async fn run(
    plan: &LongRunPlan,
    variant: crate::Lock,
    progress: &(dyn Fn(&Block) + Sync),
) -> Result<LongRun, LongRunError> {
    use std::sync::Arc;
    use std::time::Instant;

    use cassalock::store::cassandra::CassandraStore;
    use cassalock::store::{CellWrite, Store, StoreOp};
    use cassalock::{Algorithm, RemoteLocker, Settings, SystemClock};

    debug_assert!(plan.check().is_ok(), "the plan is checked before it runs");
    let algorithm = match variant {
        crate::Lock::Old => Algorithm::Old,
        crate::Lock::Queue => Algorithm::Queue,
        other => return Err(LongRunError::NotOldOrQueue(other.title())),
    };
    let config = crate::cluster::config(&plan.contact_points, &plan.keyspace, &plan.consistency)?;
    let store = Arc::new(CassandraStore::connect(&config).await?);
    let run_id = crate::now_us();
    let probe_row = format!("long-run-probe-{run_id}");
    let mut settings = Settings::new(format!("long-runner-{run_id}"));
    settings.algorithm = algorithm;
    settings.reuse_thread_ids = plan.reuse_thread_ids;
    settings.queue_read_from_last_hold = plan.queue_read_from_last_hold;
    let timer = Arc::new(CallTimer::default());
    let locker = RemoteLocker::with_observer(Arc::clone(&store), SystemClock, settings, timer.clone())?;
    let requests = || {
        let counts = locker.requests();
        Requests {
            reads: counts.reads as f64,
            writes: (counts.writes + counts.deletes) as f64,
        }
    };
    let since = |before: Requests, after: Requests| Requests {
        reads: after.reads - before.reads,
        writes: after.writes - before.writes,
    };
    // Warm up on a lock of its own, so that the measured lock starts new.
    let warm_up_lock = format!("long-run-warm-up-{}-{run_id}", variant.name());
    for _ in 0..WARM_UP_ACQUISITIONS {
        locker.lock(&warm_up_lock).await?.release().await?;
    }
    timer.take();
    let lock_id = format!("long-run-{}-{run_id}", variant.name());
    let started = Instant::now();
    let mut samples = Vec::with_capacity(plan.acquisitions as usize);
    let mut probes = Probes::default();
    let mut blocks = Vec::new();
    let mut first = 0;
    while first < plan.acquisitions {
        let mut block_probes = Probes::default();
        for i in 0..2 * PROBES_PER_BLOCK {
            let read = i % 2 == 0;
            let request = if read {
                StoreOp::ReadSlice {
                    row: probe_row.clone(),
                    start: String::new(),
                    count: 10,
                }
            } else {
                StoreOp::Write {
                    row: probe_row.clone(),
                    cells: vec![CellWrite {
                        column: "probe".into(),
                        value: i.to_string(),
                        ttl_s: Some(60),
                    }],
                    timestamp: crate::now_us(),
                }
            };
            let asked = Instant::now();
            store.execute(request).await.map_err(LongRunError::Probe)?;
            let took = asked.elapsed();
            if read {
                block_probes.reads.push(took);
            } else {
                block_probes.writes.push(took);
            }
        }
        let last = (first + plan.block).min(plan.acquisitions);
        let from = samples.len();
        for _ in first..last {
            let before = requests();
            let asked = Instant::now();
            let guard = locker.lock(&lock_id).await?;
            let acquire = asked.elapsed();
            let acquire_spent = timer.take();
            let acquired = requests();
            let releasing = Instant::now();
            guard.release().await?;
            let release = releasing.elapsed();
            samples.push(Sample {
                acquire,
                release,
                acquire_requests: since(before, acquired),
                release_requests: since(acquired, requests()),
                acquire_spent,
                release_spent: timer.take(),
            });
        }
        let block = Block::of(first, &samples[from..], &block_probes);
        progress(&block);
        blocks.push(block);
        probes.extend(&block_probes);
        first = last;
    }
    let seconds = started.elapsed().as_secs_f64();
    // Where the time goes: a read of each row the lock wrote, against the probe row.
    let lock = cassalock::LockId::new(&lock_id)?;
    let rows = [
        ("main", lock.main_row()),
        (
            if variant == crate::Lock::Old { "shadow" } else { "queue" },
            if variant == crate::Lock::Old {
                lock.shadow_row()
            } else {
                lock.queue_row()
            },
        ),
        ("token", lock.token_row()),
        ("probe", probe_row.clone()),
    ];
    let mut row_reads = Vec::new();
    for (what, key) in rows {
        row_reads.push(RowRead {
            row: what.into(),
            read_p50_ms: time_row_reads(&store, &key).await?,
            key,
            after_idle_p50_ms: None,
        });
    }
    let mut run = LongRun::of(variant.name(), blocks, &samples, &probes, seconds);
    run.row_reads = row_reads;
    Ok(run)
}

/// The median of [`ROW_READS`] reads of `key`'s first live cell, milliseconds.
#[cfg(not(madsim))]
async fn time_row_reads(store: &cassalock::store::cassandra::CassandraStore, key: &str) -> Result<f64, LongRunError> {
    use cassalock::store::{Store, StoreOp};

    let mut timed = Vec::with_capacity(ROW_READS);
    for _ in 0..ROW_READS {
        let asked = std::time::Instant::now();
        let read = StoreOp::ReadSlice {
            row: key.to_owned(),
            start: String::new(),
            count: 1,
        };
        store.execute(read).await.map_err(LongRunError::Probe)?;
        timed.push(ms(&asked.elapsed()));
    }
    Ok(stats::percentile(&timed, 50))
}

/// Read every run's rows again (after the caller has let the lock sit idle past the table's
/// `gc_grace_seconds`), filling [`RowRead::after_idle_p50_ms`].
#[cfg(not(madsim))]
pub async fn reread_after_idle(plan: &LongRunPlan, runs: &mut [LongRun]) -> Result<(), LongRunError> {
    use cassalock::store::cassandra::CassandraStore;

    let config = crate::cluster::config(&plan.contact_points, &plan.keyspace, &plan.consistency)?;
    let store = CassandraStore::connect(&config).await?;
    for run in runs {
        for read in &mut run.row_reads {
            read.after_idle_p50_ms = Some(time_row_reads(&store, &read.key).await?);
        }
    }
    Ok(())
}

/// How long the lock sits idle before `reread_after_idle`: the table's grace, and a margin
/// for the replicas' clocks and the last requests.
pub fn idle_before_reread() -> Duration {
    Duration::from_secs(u64::from(GC_GRACE_S) + 5)
}

/// The lock table's `gc_grace_seconds` as this build creates it (a table created earlier with
/// another grace keeps its own: `CREATE TABLE IF NOT EXISTS`).
pub use cassalock::store::DEFAULT_GC_GRACE_S as GC_GRACE_S;

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(acquire_ms: u64, release_ms: u64) -> Sample {
        Sample {
            acquire: Duration::from_millis(acquire_ms),
            release: Duration::from_millis(release_ms),
            acquire_requests: Requests {
                reads: 2.0,
                writes: 2.0,
            },
            release_requests: Requests {
                reads: 0.0,
                writes: 2.0,
            },
            acquire_spent: Spent {
                in_requests: Duration::from_millis(acquire_ms / 2),
                asleep: Duration::from_millis(1),
            },
            release_spent: Spent {
                in_requests: Duration::from_millis(release_ms),
                asleep: Duration::ZERO,
            },
        }
    }

    #[test]
    fn a_run_compares_its_medians_with_its_requests_round_trips_and_its_last_block_with_its_first() {
        let probes = Probes {
            reads: vec![Duration::from_millis(3); 3],
            writes: vec![Duration::from_millis(1); 3],
        };
        let early: Vec<Sample> = (0..10).map(|_| sample(8, 2)).collect();
        let late: Vec<Sample> = (0..10).map(|_| sample(16, 3)).collect();
        let blocks = vec![Block::of(0, &early, &probes), Block::of(10, &late, &probes)];
        assert_eq!(blocks[1].first, 10);
        assert_eq!(blocks[1].acquire_p50_ms, 16.0);
        assert_eq!(blocks[1].acquire_requests.total(), 4.0);
        // Two reads at 3 ms and two writes at 1 ms: 8 ms; the first block takes exactly that.
        assert_eq!(blocks[0].acquire_ratio(), 1.0);
        assert_eq!(blocks[1].acquire_ratio(), 2.0);
        assert_eq!(blocks[1].release_ratio(), 1.5);
        let all: Vec<Sample> = early.iter().chain(&late).copied().collect();
        let run = LongRun::of("queue", blocks, &all, &probes, 1.0);
        assert_eq!(run.growth(), 2.0, "{run:?}");
        assert_eq!(run.whole.acquisitions, 20);
        // Means: acquire (8 + 16) / 2 = 12 ms, half of it in requests, 1 ms asleep, 5 ms the
        // client's own; release all in requests.
        let acquire = run.whole.acquire_breakdown;
        assert_eq!(
            (
                acquire.call_mean_ms,
                acquire.in_requests_mean_ms,
                acquire.asleep_mean_ms
            ),
            (12.0, 6.0, 1.0)
        );
        assert_eq!(acquire.client_mean_ms(), 5.0);
        assert_eq!(run.whole.release_breakdown.client_mean_ms(), 0.0);
        assert!((1.0..=2.0).contains(&run.whole.acquire_ratio()), "{run:?}");
    }

    #[test]
    fn a_plan_outside_its_limits_is_refused_with_the_flag_named() {
        let plan = |acquisitions, block| LongRunPlan {
            acquisitions,
            block,
            contact_points: vec!["127.0.0.1:9042".into()],
            keyspace: "cassalock".into(),
            consistency: "quorum".into(),
            reuse_thread_ids: false,
            queue_read_from_last_hold: false,
        };
        assert!(plan(10_000, 500).check().is_ok());
        assert!(plan(0, 1).check().unwrap_err().0.contains("--acquisitions"));
        assert!(plan(MAX_ACQUISITIONS + 1, 10_000)
            .check()
            .unwrap_err()
            .0
            .contains("--acquisitions"));
        assert!(plan(100, 0).check().unwrap_err().0.contains("--block"));
        assert!(plan(100, 101).check().unwrap_err().0.contains("--block"));
        assert!(plan(1_000_000, 10).check().unwrap_err().0.contains("at most"));
    }
}
