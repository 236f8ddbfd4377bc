//! Running lockers against a real cluster (the build without `--cfg madsim`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cassalock::store::cassandra::{CassandraConfig, CassandraError, CassandraStore};
use cassalock::{Algorithm, LockError, RemoteLocker, Settings, SystemClock};

use crate::{lwt, now_us, Event, Job, Lock, Monitor};

/// A consistency level that is not one, quorum or all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown consistency {0:?}: use one, quorum or all")]
pub struct UnknownConsistency(pub String);

/// Why a process's lockers could not run.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Consistency(#[from] UnknownConsistency),
    /// Connecting, creating the tables or preparing the statements failed.
    #[error(transparent)]
    Cassandra(#[from] CassandraError),
    /// The locker's settings were refused.
    #[error(transparent)]
    Settings(#[from] LockError),
    #[error("a locker task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The Redis / Memcached lockers could not run (a server unreachable, say).
    #[error(transparent)]
    Family(#[from] crate::family::FamilyRunError),
}

/// The driver's settings for `contact_points` and `keyspace` at the consistency named
/// (one, quorum, all), the rest the driver's defaults.
pub fn config(
    contact_points: &[String],
    keyspace: &str,
    consistency_name: &str,
) -> Result<cassalock::store::cassandra::CassandraConfig, UnknownConsistency> {
    Ok(cassalock::store::cassandra::CassandraConfig {
        contact_points: contact_points.to_vec(),
        keyspace: keyspace.to_owned(),
        consistency: consistency(consistency_name)?,
        ..cassalock::store::cassandra::CassandraConfig::default()
    })
}

pub fn consistency(name: &str) -> Result<cassalock::store::cassandra::Consistency, UnknownConsistency> {
    use cassalock::store::cassandra::Consistency;
    match name.to_ascii_lowercase().as_str() {
        "one" => Ok(Consistency::One),
        "quorum" => Ok(Consistency::Quorum),
        "all" => Ok(Consistency::All),
        other => Err(UnknownConsistency(other.to_owned())),
    }
}

/// Run this process's lockers; every event goes to `emit`, in the order it happened here.
pub async fn run_job(job: &Job, process: usize, emit: Arc<dyn Fn(Event) + Send + Sync>) -> Result<(), ClusterError> {
    if job.variant.is_family() {
        return Ok(crate::family::run_job(job, process, emit).await?);
    }
    let config = CassandraConfig {
        connect_timeout: std::time::Duration::from_secs(job.connect_timeout_s),
        ..config(&job.contact_points, &job.keyspace, &job.consistency)?
    };
    let store = Arc::new(CassandraStore::connect(&config).await?);
    let monitor = Arc::new(Monitor::open(&job.monitor));
    let started = Instant::now();
    let lwt = match job.variant {
        Lock::Lwt => Some(Arc::new(
            lwt::LwtLock::new(
                Arc::clone(store.session()),
                &job.keyspace,
                job.ttl_s,
                Duration::from_millis(job.poll_ms),
            )
            .await?,
        )),
        _ => None,
    };
    let mut tasks = Vec::new();
    for name in &job.lockers {
        let (job, name, emit, monitor) = (job.clone(), name.clone(), Arc::clone(&emit), Arc::clone(&monitor));
        let (store, lwt) = (Arc::clone(&store), lwt.clone());
        tasks.push(tokio::spawn(async move {
            match lwt {
                Some(lwt) => run_lwt_locker(&job, &name, &lwt, &monitor, &*emit, started).await,
                None => {
                    let steps = job.steps.then(|| {
                        Arc::new(StepReporter {
                            locker: name.clone(),
                            emit: Arc::clone(&emit),
                        }) as Arc<dyn cassalock::Observer>
                    });
                    run_locker(&job, &name, store, &monitor, &*emit, steps, started).await
                }
            }
        }));
    }
    for task in tasks {
        task.await??;
    }
    let requests = store.requests() + lwt.map(|l| l.requests()).unwrap_or(0);
    emit(Event::Done { process, requests });
    Ok(())
}

/// Attempts per acquisition before a locker moves on to the next one.
const MAX_LOCK_ATTEMPTS: u32 = 3;

fn out_of_time(job: &Job, started: Instant) -> bool {
    job.run_limit_s > 0 && started.elapsed() >= Duration::from_secs(job.run_limit_s)
}

fn critical_section(job: &Job, name: &str, token: &str, monitor: &Monitor, emit: &(dyn Fn(Event) + Send + Sync)) {
    match monitor.write(token, job.fencing) {
        Ok((accepted, stale)) => emit(Event::Resource {
            locker: name.into(),
            at_us: now_us(),
            token: token.into(),
            accepted,
            stale,
        }),
        Err(e) => emit(Event::Error {
            locker: name.into(),
            at_us: now_us(),
            during: "resource".into(),
            message: e.to_string(),
        }),
    }
}

/// `cassalock real --steps`: every step a row lock's machine makes, as an [`Event::Step`].
struct StepReporter {
    locker: String,
    emit: Arc<dyn Fn(Event) + Send + Sync>,
}

impl cassalock::Observer for StepReporter {
    fn on_event(&self, event: cassalock::LockEvent) {
        use cassalock::LockEvent;
        let mut sleep = None;
        let (thread, what, detail) = match event {
            LockEvent::Request {
                thread, tag, request, ..
            } => (thread, "request", format!("{tag}: {request}")),
            LockEvent::Reply { thread, result, .. } => (
                thread,
                "reply",
                match result {
                    Ok(reply) => reply.to_string(),
                    Err(failure) => format!("failed: {failure}"),
                },
            ),
            LockEvent::Sleep { thread, tag, ms, kind } => {
                sleep = Some(crate::StepSleep {
                    ms,
                    kind: format!("{kind:?}"),
                    waiting: matches!(
                        kind,
                        cassalock::algo::SleepKind::Poll | cassalock::algo::SleepKind::Backoff
                    ),
                });
                (thread, "sleep", format!("{tag}: {ms} ms ({kind:?})"))
            }
            LockEvent::Acquired { thread, token, .. } => (thread, "acquired", format!("token {}", token.as_str())),
            LockEvent::NotAcquired { thread, outcome, .. } => (thread, "not-acquired", format!("{outcome:?}")),
            LockEvent::Releasing { thread, .. } => (thread, "releasing", String::new()),
            LockEvent::Released { thread, outcome, .. } => (thread, "released", format!("{outcome:?}")),
            LockEvent::Reused { thread, .. } => (thread, "reused", String::new()),
            LockEvent::LeaseLost { thread, why, .. } => (thread, "lease-lost", format!("{why:?}")),
        };
        (self.emit)(Event::Step {
            locker: self.locker.clone(),
            at_us: now_us(),
            thread: thread.as_str().to_owned(),
            what: what.into(),
            detail,
            sleep,
        });
    }
}

async fn run_locker(
    job: &Job,
    name: &str,
    store: Arc<CassandraStore>,
    monitor: &Monitor,
    emit: &(dyn Fn(Event) + Send + Sync),
    steps: Option<Arc<dyn cassalock::Observer>>,
    started: Instant,
) -> Result<(), ClusterError> {
    let mut settings = Settings::new(name);
    settings.algorithm = if job.variant == Lock::Old {
        Algorithm::Old
    } else {
        Algorithm::Queue
    };
    settings.ttl_s = job.ttl_s;
    settings.renew_every_ms = job.renew_ms;
    settings.poll_ms = job.poll_ms;
    let polling = crate::QueuePolling::of(job.variant, job.next_poll_ms, job.paced_poll);
    settings.next_poll_ms = polling.next_poll_ms;
    settings.paced_poll = polling.paced;
    settings.reuse_thread_ids = job.reuse_thread_ids;
    settings.queue_read_from_last_hold = job.queue_read_from_last_hold;
    settings.max_wait_ms = Some(job.max_wait_ms);
    let locker = match steps {
        Some(observer) => RemoteLocker::with_observer(store, SystemClock, settings, observer)?,
        None => RemoteLocker::new(store, SystemClock, settings)?,
    };
    for _ in 0..job.acquisitions {
        if out_of_time(job, started) {
            break;
        }
        let asked = Instant::now();
        // A failed acquisition (the library's own retries exhausted, say while a node dies) is
        // reported and asked again, as a service would, up to 3 times.
        let mut failures = 0;
        let guard = loop {
            match locker.lock(&job.lock_id).await {
                Ok(guard) => break Some(guard),
                Err(e) => {
                    emit(Event::Error {
                        locker: name.into(),
                        at_us: now_us(),
                        during: "lock".into(),
                        message: e.to_string(),
                    });
                    failures += 1;
                    if failures >= MAX_LOCK_ATTEMPTS || out_of_time(job, started) {
                        break None;
                    }
                }
            }
        };
        let Some(guard) = guard else { continue };
        let token = guard.fencing_token().to_string();
        let acquired_at_us = now_us();
        emit(Event::Acquired {
            locker: name.into(),
            at_us: acquired_at_us,
            wait_us: asked.elapsed().as_micros() as u64,
            token: token.clone(),
            lock_token: None,
            lock_thread: Some(guard.thread_id().as_str().to_owned()),
        });
        read_main_row(job, name, &locker, emit).await;
        critical_section(job, name, &token, monitor, emit);
        hold(job, name, &locker, &guard, emit).await;
        let lost = guard.is_lost();
        emit(Event::Released {
            locker: name.into(),
            at_us: crate::belief_ended_at_us(acquired_at_us, now_us(), !lost, guard.valid_until_us()),
            lost,
        });
        if let Err(e) = guard.release().await {
            emit(Event::Error {
                locker: name.into(),
                at_us: now_us(),
                during: "release".into(),
                message: e.to_string(),
            });
        }
    }
    Ok(())
}

/// Hold the lock `job.hold_ms`, reading its main row after each renewal interval of it
/// (T1-server's readings while held; the renewal itself runs in the guard's background lane),
/// and once more at the end unless the guard learned it lost the lock.
async fn hold<S: cassalock::Store, C: cassalock::Clock>(
    job: &Job,
    name: &str,
    locker: &RemoteLocker<S, C>,
    guard: &cassalock::LockGuard<S, C>,
    emit: &(dyn Fn(Event) + Send + Sync),
) {
    if !job.server_readings {
        tokio::time::sleep(Duration::from_millis(job.hold_ms)).await;
        return;
    }
    let hold_until = Instant::now() + Duration::from_millis(job.hold_ms);
    for _ in 0..MAX_HOLD_READINGS {
        let left = hold_until.saturating_duration_since(Instant::now());
        if left.is_zero() || guard.is_lost() {
            return;
        }
        tokio::time::sleep(left.min(Duration::from_millis(job.renew_ms.max(1)))).await;
        if !guard.is_lost() {
            read_main_row(job, name, locker, emit).await;
        }
    }
    // The readings' limit: the rest of the hold unread (the summary counts the readings).
    tokio::time::sleep(hold_until.saturating_duration_since(Instant::now())).await;
}

/// The most readings of its main row one hold makes (a renewal interval of 1 ms on a minute's
/// hold would otherwise read 60,000 times).
const MAX_HOLD_READINGS: u32 = 1000;

/// T1-server's reading of a row lock: the threads whose cells its main row holds now, by one
/// read at the run's consistency level ([`RemoteLocker::holders_on_server`]), recorded as
/// [`Event::ServerHolder`]. A read that fails, or a row too full to name anyone for sure, is
/// no reading.
async fn read_main_row<S: cassalock::Store, C: cassalock::Clock>(
    job: &Job,
    name: &str,
    locker: &RemoteLocker<S, C>,
    emit: &(dyn Fn(Event) + Send + Sync),
) {
    if !job.server_readings {
        return;
    }
    if let Ok(Some(threads)) = locker.holders_on_server(&job.lock_id).await {
        emit(Event::ServerHolder {
            locker: name.into(),
            at_us: now_us(),
            lock_token: None,
            threads,
        });
    }
}

async fn run_lwt_locker(
    job: &Job,
    name: &str,
    lwt: &lwt::LwtLock,
    monitor: &Monitor,
    emit: &(dyn Fn(Event) + Send + Sync),
    started: Instant,
) -> Result<(), ClusterError> {
    for _ in 0..job.acquisitions {
        if out_of_time(job, started) {
            break;
        }
        let asked = Instant::now();
        if let Err(e) = lwt
            .lock(&job.lock_id, name, Duration::from_millis(job.max_wait_ms))
            .await
        {
            emit(Event::Error {
                locker: name.into(),
                at_us: now_us(),
                during: "lock".into(),
                message: e.to_string(),
            });
            continue;
        }
        let at_us = now_us();
        // The LWT lock has no token of its own: use the acquisition time, as the queue
        // column does (a clock-based token, as weak as that clock).
        let token = format!("{at_us:020}{name}");
        emit(Event::Acquired {
            locker: name.into(),
            at_us,
            wait_us: asked.elapsed().as_micros() as u64,
            token: token.clone(),
            lock_token: None,
            lock_thread: None,
        });
        critical_section(job, name, &token, monitor, emit);
        tokio::time::sleep(Duration::from_millis(job.hold_ms)).await;
        emit(Event::Released {
            locker: name.into(),
            at_us: now_us(),
            lost: false,
        });
        match lwt.unlock(&job.lock_id, name).await {
            Ok(unlocked) if unlocked.kept_until_release() => {}
            Ok(unlocked) => emit(Event::Error {
                locker: name.into(),
                at_us: now_us(),
                during: "release".into(),
                message: match unlocked {
                    lwt::Unlocked::TakenOver => {
                        "the conditional delete did not apply: another owner holds the lock (ours had expired)"
                    }
                    _ => "the conditional delete did not apply: our row had expired before the release",
                }
                .into(),
            }),
            Err(e) => emit(Event::Error {
                locker: name.into(),
                at_us: now_us(),
                during: "release".into(),
                message: e.to_string(),
            }),
        }
    }
    Ok(())
}
