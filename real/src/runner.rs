//! One run against a real cluster: `threads` lockers spread over `processes` processes (this
//! one, or worker processes of the same program started as `<program> real --worker-job FILE
//! --worker-index N`), their events gathered and summarized.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cassalock::algo::queue_column::InvalidName;
use cassalock::store::cassandra::CassandraError;

use crate::cluster::{consistency, run_job, ClusterError, UnknownConsistency};
use crate::{now_us, summarize, Event, Job, Lock, Monitor, Summary};

/// What to run: the settings of `cassalock real`, checked by [`check`].
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// Cassandra nodes, host:port.
    pub contact_points: Vec<String>,
    /// The Redis / Memcached servers of the family variants, host:port.
    pub servers: Vec<String>,
    pub variant: Lock,
    /// Lockers contending for the one lock (1-256).
    pub threads: usize,
    /// Acquisitions per locker (1-100000).
    pub acquisitions: u32,
    /// Processes the lockers are spread over (1-threads).
    pub processes: usize,
    /// Critical-section length (0-60000 ms).
    pub hold_ms: u64,
    /// Lease TTL, whole seconds (2-3600).
    pub ttl_s: u32,
    /// Lease renewal interval (default: half the TTL).
    pub renew_ms: Option<u64>,
    /// How often a waiter polls (1-60000 ms).
    pub poll_ms: u64,
    /// The queue lock's waiter next in line polls this often instead (1-60000 ms; `None`: off).
    pub next_poll_ms: Option<u64>,
    /// With `next_poll_ms`: waiters sleep by rank and the queue's pace.
    pub paced_poll: bool,
    /// Each locker reuses its thread ids (`Settings::reuse_thread_ids`).
    pub reuse_thread_ids: bool,
    /// The queue lock reads its queue from its last hold's column.
    pub queue_read_from_last_hold: bool,
    /// one, quorum or all.
    pub consistency: String,
    pub keyspace: String,
    /// Lock id (default: a fresh one per run).
    pub lock_id: Option<String>,
    /// Give up one acquisition after this long (1-3600 s).
    pub max_wait_ms: u64,
    /// Stop starting acquisitions after this long (0: run every acquisition).
    pub run_limit_s: u64,
    /// The resource refuses stale tokens.
    pub fencing: bool,
    /// Give up connecting to the cluster (and setting up its table) after this long (1-600 s).
    pub connect_timeout_s: u64,
    /// Write every machine step of the row locks to this file, one JSON line each
    /// ([`Event::Step`]), at most [`MAX_STEP_LINES`].
    pub steps: Option<PathBuf>,
    /// Read the lock's server during each hold (T1-server's readings, [`Event::ServerHolder`]):
    /// one more round trip as a hold begins, after each extension and before each release.
    pub server_readings: bool,
}

/// The most lines `--steps` writes (about 330 bytes each, some 670 MB in all); steps after them are counted, not
/// written (16 paced lockers wrote 15,000-22,000 in 15 s on the local cluster).
pub const MAX_STEP_LINES: u64 = 2_000_000;

/// Why a [`RunSpec`] was refused: which option, and what it may be.
#[derive(Debug, thiserror::Error)]
pub enum InvalidSpec {
    #[error("--contact-points: give host:port[,host:port...]")]
    ContactPoints,
    /// The family variants' `--servers` or lease settings.
    #[error("{0}")]
    Servers(String),
    #[error("--threads must be between 1 and 256, not {0}")]
    Threads(usize),
    #[error("--acquisitions must be between 1 and 100000, not {0}")]
    Acquisitions(u32),
    #[error("--processes must be between 1 and --threads ({threads}), not {processes}")]
    Processes { threads: usize, processes: usize },
    #[error("--hold-ms must be at most 60000")]
    HoldMs,
    #[error("--ttl-s must be between 2 and 3600, not {0}")]
    TtlS(u32),
    #[error("--poll-ms and --next-poll-ms must be between 1 and 60000")]
    PollMs,
    #[error("--max-wait-ms must be between 1 and 3600000")]
    MaxWaitMs,
    #[error("--connect-timeout-s must be between 1 and 600, not {0}")]
    ConnectTimeoutS(u64),
    /// `--steps` records the row locks' machines, which the other locks do not run.
    #[error("--steps records the machine steps of Cassandra's row locks (old, queue, queue-next-in-line, queue-paced), not of {0}")]
    StepsNotARowLock(&'static str),
    /// The paced poll paces down to a next-in-line poll, which none of the flags gives.
    #[error("--paced-poll needs --next-poll-ms (or --algorithm queue-next-in-line, whose next in line polls every 5 ms; --algorithm queue-paced is both)")]
    PacedPollWithoutNextPoll,
    #[error(transparent)]
    Consistency(#[from] UnknownConsistency),
    /// The keyspace is not a plain CQL name.
    #[error(transparent)]
    Keyspace(#[from] CassandraError),
    #[error(transparent)]
    LockId(#[from] InvalidName),
    /// The library refuses the lease settings (the TTL / renewal pair, the poll interval).
    #[error("--ttl-s {ttl_s} with --renew-every-ms {renew_ms}: {source}")]
    Lease {
        ttl_s: u32,
        renew_ms: u64,
        source: cassalock::driver::SettingsError,
    },
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Invalid(#[from] InvalidSpec),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("cannot create {}: {source}", path.display())]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot create the monitor file: {0}")]
    Monitor(std::io::Error),
    #[error("cannot find this program: {0}")]
    CurrentExe(std::io::Error),
    #[error("cannot write {}: {source}", path.display())]
    WriteJob { path: PathBuf, source: std::io::Error },
    #[error("cannot start worker {index}: {source}")]
    StartWorker { index: usize, source: std::io::Error },
    #[error("worker {index}: {source}")]
    WaitWorker { index: usize, source: std::io::Error },
    #[error("worker process {index} failed ({status})")]
    WorkerFailed { index: usize, status: ExitStatus },
    #[error("cannot read the job {}: {source}", path.display())]
    ReadJob { path: PathBuf, source: std::io::Error },
    #[error("malformed job file {}: {source}", path.display())]
    MalformedJob { path: PathBuf, source: serde_json::Error },
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// `--steps FILE` cannot be created or written: the user's to fix (exit 2).
    #[error("--steps: cannot write {}: {source}", path.display())]
    Steps { path: PathBuf, source: std::io::Error },
}

pub fn check(spec: &RunSpec) -> Result<(), InvalidSpec> {
    if spec.contact_points.is_empty() || spec.contact_points.iter().any(|c| c.trim().is_empty()) {
        return Err(InvalidSpec::ContactPoints);
    }

    if !(1..=256).contains(&spec.threads) {
        return Err(InvalidSpec::Threads(spec.threads));
    }
    if !(1..=100_000).contains(&spec.acquisitions) {
        return Err(InvalidSpec::Acquisitions(spec.acquisitions));
    }
    if spec.processes == 0 || spec.processes > spec.threads {
        return Err(InvalidSpec::Processes {
            threads: spec.threads,
            processes: spec.processes,
        });
    }
    if spec.hold_ms > 60_000 {
        return Err(InvalidSpec::HoldMs);
    }
    if !(2..=3600).contains(&spec.ttl_s) {
        return Err(InvalidSpec::TtlS(spec.ttl_s));
    }
    if !(1..=60_000).contains(&spec.poll_ms) || spec.next_poll_ms.is_some_and(|ms| !(1..=60_000).contains(&ms)) {
        return Err(InvalidSpec::PollMs);
    }
    if spec.paced_poll
        && spec.next_poll_ms.is_none()
        && !matches!(spec.variant, Lock::QueueNextInLine | Lock::QueuePaced)
    {
        return Err(InvalidSpec::PacedPollWithoutNextPoll);
    }
    if spec.steps.is_some() && !spec.variant.is_row_lock() {
        return Err(InvalidSpec::StepsNotARowLock(spec.variant.name()));
    }
    if !(1..=3_600_000).contains(&spec.max_wait_ms) {
        return Err(InvalidSpec::MaxWaitMs);
    }
    if !(1..=600).contains(&spec.connect_timeout_s) {
        return Err(InvalidSpec::ConnectTimeoutS(spec.connect_timeout_s));
    }
    if spec.variant.is_family() {
        crate::family::check(spec.variant, &spec.servers, spec.ttl_s, spec.poll_ms, spec.max_wait_ms)
            .map_err(|refused| InvalidSpec::Servers(refused.0))?;
        if let Some(id) = &spec.lock_id {
            crate::family::check_key(id).map_err(|refused| InvalidSpec::Servers(refused.0))?;
        }
    } else if !spec.servers.is_empty() {
        let family_locks: Vec<&str> = crate::real_locks()
            .into_iter()
            .filter(|lock| lock.is_family())
            .map(Lock::name)
            .collect();
        return Err(InvalidSpec::Servers(format!(
            "--servers is for {}; the Cassandra locks use --contact-points",
            cassalock::registry::listed(&family_locks, "and")
        )));
    }
    consistency(&spec.consistency)?;
    // The same rules the lockers' settings will be held to, checked before any process starts.
    let renew_ms = renew_ms(spec);
    let mut settings = cassalock::Settings::new("check");
    settings.ttl_s = spec.ttl_s;
    settings.renew_every_ms = renew_ms;
    settings.poll_ms = spec.poll_ms;
    if let Err(source) = settings.validate() {
        return Err(InvalidSpec::Lease {
            ttl_s: spec.ttl_s,
            renew_ms,
            source,
        });
    }
    cassalock::store::cassandra::validate_name("keyspace", &spec.keyspace)?;
    if let Some(id) = &spec.lock_id {
        cassalock::LockId::new(id)?;
    }
    Ok(())
}

/// The renewal interval: given, or half the TTL.
fn renew_ms(spec: &RunSpec) -> u64 {
    spec.renew_ms.unwrap_or(u64::from(spec.ttl_s) * 500)
}

fn job(spec: &RunSpec, lockers: Vec<String>, monitor: &Path) -> Job {
    Job {
        contact_points: spec.contact_points.clone(),
        servers: spec.servers.clone(),
        keyspace: spec.keyspace.clone(),
        consistency: spec.consistency.clone(),
        variant: spec.variant,
        lock_id: spec
            .lock_id
            .clone()
            .unwrap_or_else(|| format!("run-{}-{}", std::process::id(), now_us())),
        lockers,
        acquisitions: spec.acquisitions,
        hold_ms: spec.hold_ms,
        ttl_s: spec.ttl_s,
        renew_ms: renew_ms(spec),
        poll_ms: spec.poll_ms,
        next_poll_ms: spec.next_poll_ms,
        paced_poll: spec.paced_poll,
        reuse_thread_ids: spec.reuse_thread_ids,
        queue_read_from_last_hold: spec.queue_read_from_last_hold,
        max_wait_ms: spec.max_wait_ms,
        run_limit_s: spec.run_limit_s,
        monitor: monitor.to_path_buf(),
        // The family locks have no fencing token: the monitor only counts stale writes.
        fencing: spec.fencing && !spec.variant.is_family(),
        connect_timeout_s: spec.connect_timeout_s,
        steps: spec.steps.is_some(),
        server_readings: spec.server_readings,
    }
}

/// Where a run's events go: the summary's list, and the steps to their file (never the list:
/// a long run's steps would fill the memory).
struct Sink {
    events: Mutex<Vec<Event>>,
    steps: Option<Mutex<StepFile>>,
}

struct StepFile {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    written: u64,
    dropped: u64,
    /// The first write that failed: the run goes on, and ends with it as its error.
    failed: Option<std::io::Error>,
    /// Over the written steps, in one process only (several processes' steps arrive out of
    /// time order).
    slept: Option<crate::SleptThrough>,
}

impl Sink {
    fn new(steps: Option<&Path>, processes: usize) -> Result<Sink, RunError> {
        let steps = match steps {
            None => None,
            Some(path) => {
                let file = std::fs::File::create(path).map_err(|source| RunError::Steps {
                    path: path.to_path_buf(),
                    source,
                })?;
                Some(Mutex::new(StepFile {
                    path: path.to_path_buf(),
                    out: std::io::BufWriter::new(file),
                    written: 0,
                    dropped: 0,
                    failed: None,
                    slept: (processes == 1).then(crate::SleptThrough::default),
                }))
            }
        };
        Ok(Sink {
            events: Mutex::new(Vec::new()),
            steps,
        })
    }

    fn take(&self, event: Event) {
        match (&event, &self.steps) {
            (Event::Step { .. }, Some(steps)) => {
                let mut steps = steps.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if steps.written >= MAX_STEP_LINES || steps.failed.is_some() {
                    steps.dropped += 1;
                    return;
                }
                let line = serde_json::to_string(&event).expect("events serialize");
                match writeln!(steps.out, "{line}") {
                    Ok(()) => steps.written += 1,
                    Err(e) => steps.failed = Some(e),
                }
                if let Some(slept) = &mut steps.slept {
                    slept.observe(&event);
                }
            }
            // Steps without a file to go to (not asked for) are not kept either.
            (Event::Step { .. }, None) => {}
            _ => self.events.lock().expect("events").push(event),
        }
    }

    /// The run's events, and what became of its steps (the file flushed). A steps file that could not be written
    /// does not cost the run its verdicts: the failure is a figure of its own.
    fn finish(&self) -> (Vec<Event>, StepFigures) {
        let events = std::mem::take(&mut *self.events.lock().expect("events"));
        let Some(steps) = &self.steps else {
            return (events, StepFigures::default());
        };
        let mut steps = steps.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let failed = match steps.failed.take() {
            Some(source) => Some(source),
            None => steps.out.flush().err(),
        }
        .map(|source| {
            RunError::Steps {
                path: steps.path.clone(),
                source,
            }
            .to_string()
        });
        (
            events,
            StepFigures {
                written: steps.written,
                dropped: steps.dropped,
                slept_through: steps.slept.as_ref().map(crate::SleptThrough::figures),
                failed,
            },
        )
    }
}

#[derive(Default)]
struct StepFigures {
    written: u64,
    dropped: u64,
    slept_through: Option<crate::SleptThroughFigures>,
    /// Why the steps file could not be written, if it could not.
    failed: Option<String>,
}

/// Run one configuration: in this process (P = 1) or in P worker processes.
pub fn execute(spec: &RunSpec, print_events: bool) -> Result<Summary, RunError> {
    execute_recorded(spec, print_events).map(|(summary, _)| summary)
}

/// [`execute`], and the run's event record (`crate::record`), which its summary was judged
/// from.
pub fn execute_recorded(spec: &RunSpec, print_events: bool) -> Result<(Summary, crate::EventRecord), RunError> {
    check(spec)?;
    let run_dir = std::env::temp_dir().join(format!("cassalock-real-{}-{}", std::process::id(), now_us()));
    std::fs::create_dir_all(&run_dir).map_err(|source| RunError::CreateDir {
        path: run_dir.clone(),
        source,
    })?;
    let monitor = run_dir.join("monitor");
    Monitor::create(&monitor).map_err(RunError::Monitor)?;
    let run_tag = format!("r{}x{}", std::process::id(), now_us() % 1_000_000_000);
    let per_process: Vec<Vec<String>> = (0..spec.processes)
        .map(|p| {
            (0..spec.threads)
                .filter(|t| t % spec.processes == p)
                // Unique among every user of the lock, across runs too: a locker that reused
                // a dead process's name would find "its own" lock cell and walk in (the
                // thesis's thread ids identify owners; found by the crash test).
                .map(|t| format!("{run_tag}-p{p}-t{t}"))
                .collect()
        })
        .collect();
    let all_lockers: Vec<String> = per_process.iter().flatten().cloned().collect();
    let base = job(spec, all_lockers, &monitor);
    let events = Arc::new(Sink::new(spec.steps.as_deref(), spec.processes)?);
    let cpu_before = crate::capacity::CpuTimes::now();
    let began = Instant::now();
    if spec.processes == 1 {
        let sink = Arc::clone(&events);
        let emit: Arc<dyn Fn(Event) + Send + Sync> = Arc::new(move |event: Event| {
            if print_events {
                println!("{}", serde_json::to_string(&event).expect("events serialize"));
                let _ = std::io::stdout().flush();
            }
            sink.take(event);
        });
        runtime()?.block_on(run_job(&base, 0, emit))?;
    } else {
        let exe = std::env::current_exe().map_err(RunError::CurrentExe)?;
        let mut children = Vec::new();
        for (index, lockers) in per_process.into_iter().enumerate() {
            let path = run_dir.join(format!("job-{index}.json"));
            let job = Job {
                lockers,
                ..base.clone()
            };
            std::fs::write(&path, serde_json::to_vec(&job).expect("job serializes")).map_err(|source| {
                RunError::WriteJob {
                    path: path.clone(),
                    source,
                }
            })?;
            let child = Command::new(&exe)
                .arg("real")
                .arg("--worker-job")
                .arg(&path)
                .arg("--worker-index")
                .arg(index.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|source| RunError::StartWorker { index, source })?;
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
                            sink.take(event);
                        }
                    }
                })
            })
            .collect();
        for reader in readers {
            let _ = reader.join();
        }
        for (index, mut child) in children.into_iter().enumerate() {
            let status = child.wait().map_err(|source| RunError::WaitWorker { index, source })?;
            if !status.success() {
                return Err(RunError::WorkerFailed { index, status });
            }
        }
    }
    let elapsed = began.elapsed();
    let cpu_busy_pct = match (cpu_before, crate::capacity::CpuTimes::now()) {
        (Some(before), Some(after)) => after.busy_pct_since(&before),
        _ => None,
    };
    std::fs::remove_dir_all(&run_dir).ok();
    // Every locker has ended (the runtime and the readers with them): nothing adds to it now.
    let (events, steps) = events.finish();
    let mut summary = summarize(spec.variant, spec.threads, spec.processes, elapsed, &events);
    let record = crate::record(
        spec.variant,
        spec.threads,
        spec.fencing && !spec.variant.is_family(),
        &events,
    );
    summary.steps_written = steps.written;
    summary.steps_dropped = steps.dropped;
    summary.slept_through = steps.slept_through;
    summary.steps_failed = steps.failed;
    summary.cpu_busy_pct = cpu_busy_pct;
    if let Some(label) = crate::QueuePolling::label(spec.variant, spec.next_poll_ms, spec.paced_poll) {
        summary.variant = label;
    }
    Ok((summary, record))
}

pub fn worker(path: &Path, index: usize) -> Result<(), RunError> {
    let text = std::fs::read(path).map_err(|source| RunError::ReadJob {
        path: path.to_path_buf(),
        source,
    })?;
    let job: Job = serde_json::from_slice(&text).map_err(|source| RunError::MalformedJob {
        path: path.to_path_buf(),
        source,
    })?;
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let emit: Arc<dyn Fn(Event) + Send + Sync> = Arc::new(move |event: Event| {
        let mut out = out.lock().expect("stdout");
        let _ = writeln!(out, "{}", serde_json::to_string(&event).expect("events serialize"));
        let _ = out.flush();
    });
    Ok(runtime()?.block_on(run_job(&job, index, emit))?)
}

fn runtime() -> Result<tokio::runtime::Runtime, RunError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(RunError::Runtime)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(variant: Lock, next_poll_ms: Option<u64>, paced_poll: bool) -> RunSpec {
        RunSpec {
            contact_points: vec!["127.0.0.1:9042".into()],
            servers: Vec::new(),
            variant,
            threads: 4,
            acquisitions: 10,
            processes: 1,
            hold_ms: 10,
            ttl_s: 10,
            renew_ms: None,
            poll_ms: 100,
            next_poll_ms,
            paced_poll,
            reuse_thread_ids: true,
            queue_read_from_last_hold: true,
            consistency: "quorum".into(),
            keyspace: "cassalock".into(),
            lock_id: None,
            max_wait_ms: 120_000,
            run_limit_s: 0,
            fencing: true,
            connect_timeout_s: 30,
            steps: None,
            server_readings: true,
        }
    }

    /// The paced poll paces down to a next-in-line poll: given by --next-poll-ms or by the
    /// lock's name, and refused (naming both ways) when neither gives it.
    #[test]
    fn the_paced_poll_needs_a_next_in_line_poll_from_a_flag_or_the_lock() {
        for (variant, next_poll_ms) in [
            (Lock::Queue, Some(5)),
            (Lock::QueueNextInLine, None),
            (Lock::QueuePaced, None),
        ] {
            check(&spec(variant, next_poll_ms, true)).unwrap_or_else(|e| panic!("{variant:?}: {e}"));
        }
        let refused = check(&spec(Lock::Queue, None, true)).expect_err("no next-in-line poll");
        assert!(matches!(refused, InvalidSpec::PacedPollWithoutNextPoll), "{refused}");
        assert!(refused.to_string().contains("--next-poll-ms"), "{refused}");
        assert!(refused.to_string().contains("queue-paced"), "{refused}");
        check(&spec(Lock::Queue, None, false)).expect("the listing's poll alone");
    }
}
