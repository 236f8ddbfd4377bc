//! The real-cluster configuration: the library's own lock code against a running Cassandra,
//! with a resource check.
//!
//! `T` lockers take one lock `K` times each, spread over `P` processes. Every locker reports
//! what it did as [`Event`]s (a JSON line each when it runs in a worker process). The parent
//! judges the run from the events alone:
//! - **T1-belief**: two lockers' holding intervals (from the moment `lock` returned to the
//!   moment `release` was called, or to the earlier moment the guard stopped being valid, its
//!   lease run out: [`belief_ended_at_us`]; all read from the machine's shared wall clock) overlap:
//!   `cassalock_judge::holding::overlaps`, the judge the simulator uses too;
//! - **T1-resource**: the [`Monitor`], a file under an exclusive `flock` that every process on
//!   this machine shares, accepted a fencing token lower than one it had already accepted.
//!   With fencing on (the default) it refuses such a write; the refusal is counted.

//!
//! The same judges serve the other families' locks ([`Lock::RedisSetNx`],
//! [`Lock::Redlock`], [`Lock::Memcached`], run through the library's family driver
//! against real Redis and Memcached servers, see `family`). Those locks hand out no growing
//! token, so their holders give the monitor one that orders acquisitions instead: the
//! acquisition's wall-clock time in microseconds, zero-padded, then the locker's name. Fencing
//! is off for them (there is nothing to fence with): a "stale" write is an older acquisition
//! writing after a newer one did, which only two holders at once can cause.
//!
//! The judging code here compiles in every build (and is tested in the simulation build);
//! `cluster` and `lwt`, which talk to Cassandra, [`redis`] and `memcached`, the real
//! servers' stores, and `family`, only in the real one.

pub mod capacity;
pub mod client;
#[cfg(not(madsim))]
pub mod cluster;
#[cfg(not(madsim))]
pub mod etcd;
#[cfg(not(madsim))]
pub mod family;
pub mod long_run;
#[cfg(not(madsim))]
pub mod lwt;
#[cfg(not(madsim))]
pub mod memcached;
#[cfg(not(madsim))]
pub mod redis;
#[cfg(not(madsim))]
pub mod runner;
#[cfg(not(madsim))]
pub mod zookeeper;

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use cassalock_judge::stats;

/// The lock every locker of a run takes (its events do not name it: a run has one lock).
const RUN_LOCK: &str = "the run's lock";

pub use cassalock::registry::{Family, Lock};

/// A setting or a server list the real runner refuses before it starts, in a sentence that
/// names the flag and what it accepts (exit status 2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// A `host:port` with a port above 0.
pub fn is_host_port(address: &str) -> bool {
    address
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.trim().is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0))
}

impl From<&str> for Refused {
    fn from(why: &str) -> Self {
        Refused(why.to_owned())
    }
}

/// A server that could not be reached or used, and why (exit status 4).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(pub String);

impl From<&str> for Unreachable {
    fn from(why: &str) -> Self {
        Unreachable(why.to_owned())
    }
}

/// The locks the real runner runs, in the registry's order (`Entry::real`).
pub fn real_locks() -> Vec<Lock> {
    Lock::all().filter(|lock| lock.entry().real).collect()
}

/// What the real runner knows of a lock beside the registry's entry.
pub trait RealLock {
    /// Runs on one Redis server, or the master of a primary and its replicas (not Redlock's
    /// independent masters).
    fn on_one_redis(self) -> bool;
    /// What the resource's tokens are, for the summary: empty for the Cassandra locks' own
    /// fencing tokens.
    fn token_note(self) -> &'static str;
}

impl RealLock for Lock {
    fn on_one_redis(self) -> bool {
        self.servers() == cassalock::registry::Servers::OneRedis
    }

    fn token_note(self) -> &'static str {
        if self.is_family() {
            FAMILY_TOKENS
        } else {
            ""
        }
    }
}

/// How often [`Lock::QueueNextInLine`]'s waiter next in line reads the queue head, in ms
/// (its name says it too): the figure docs/findings-handoff.md's simulator and cluster runs of the variant use.
pub const NEXT_IN_LINE_POLL_MS: u64 = 5;

/// The queue lock's polling as a run gives it: `--next-poll-ms` and `--paced-poll` as given,
/// or what the variant implies (next in line every [`NEXT_IN_LINE_POLL_MS`] ms for
/// `queue-next-in-line` and `queue-paced`, paced for `queue-paced`); a `--next-poll-ms` given
/// with such a variant still wins. The one place the drivers and the labels read it from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuePolling {
    /// `Settings::next_poll_ms`.
    pub next_poll_ms: Option<u64>,
    /// `Settings::paced_poll`.
    pub paced: bool,
}

impl QueuePolling {
    pub fn of(variant: Lock, next_poll_ms: Option<u64>, paced_poll: bool) -> QueuePolling {
        QueuePolling {
            next_poll_ms: match variant {
                Lock::QueueNextInLine | Lock::QueuePaced => next_poll_ms.or(Some(NEXT_IN_LINE_POLL_MS)),
                _ => next_poll_ms,
            },
            paced: paced_poll || variant == Lock::QueuePaced,
        }
    }

    /// What a run's summary calls a queue lock polled so: the name of the variant these
    /// settings are (`--algorithm queue --next-poll-ms 5` is next in line, `--paced-poll` is
    /// paced), or, for a next-in-line poll other than the variants' 5 ms, a name with its figure
    /// (a summary never names settings the run did not use). `None`: not the queue lock.
    pub fn label(variant: Lock, next_poll_ms: Option<u64>, paced_poll: bool) -> Option<String> {
        if !matches!(variant, Lock::Queue | Lock::QueueNextInLine | Lock::QueuePaced) {
            return None;
        }
        let polling = QueuePolling::of(variant, next_poll_ms, paced_poll);
        Some(match (polling.next_poll_ms, polling.paced) {
            // Paced without a next-in-line poll is refused before a run (runner::check).
            (None, _) => Lock::Queue.title().into(),
            (Some(NEXT_IN_LINE_POLL_MS), true) => Lock::QueuePaced.title().into(),
            (Some(NEXT_IN_LINE_POLL_MS), false) => Lock::QueueNextInLine.title().into(),
            (Some(ms), true) => format!("queue GetLock, paced, next in line {ms} ms"),
            (Some(ms), false) => format!("queue GetLock, next in line {ms} ms"),
        })
    }
}

/// Do Redisson's waiters in these runs wake on the lock's unlock message (pub/sub), as
/// Redisson's own client does? Yes: the family driver subscribes a waiter to its lock's channel
/// before its first attempt (`src/driver/notify.rs`) and `real/src/redis.rs` carries the
/// subscriptions on a connection of their own. A subscription that fails leaves that waiter to
/// sleep out the holder's remaining TTL. The benchmark's report says which; clear this if the
/// real store stops subscribing.
pub const REDISSON_WAITERS_NOTIFIED: bool = true;

/// How the family locks' runs make their resource tokens (see the module documentation).
pub const FAMILY_TOKENS: &str = "acquire time in us + locker name (these locks have no growing token; fencing off: \
     a stale write is an older acquisition writing after a newer one)";

/// Everything one process needs to run its lockers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    pub contact_points: Vec<String>,
    /// The family locks' servers, host:port (Redlock: every one a master).
    #[serde(default)]
    pub servers: Vec<String>,
    pub keyspace: String,
    pub consistency: String,
    pub variant: Lock,
    pub lock_id: String,
    /// Locker names this process runs (`p0-t3`, ...).
    pub lockers: Vec<String>,
    pub acquisitions: u32,
    pub hold_ms: u64,
    pub ttl_s: u32,
    pub renew_ms: u64,
    pub poll_ms: u64,
    /// The queue lock's next-in-line poll (`Settings::next_poll_ms`; `None`: off).
    #[serde(default)]
    pub next_poll_ms: Option<u64>,
    /// With `next_poll_ms`: waiters sleep by rank and the queue's pace (`Settings::paced_poll`).
    #[serde(default)]
    pub paced_poll: bool,
    /// Each locker reuses its thread ids (`Settings::reuse_thread_ids`).
    #[serde(default)]
    pub reuse_thread_ids: bool,
    /// The queue lock reads its queue from its last hold's column
    /// (`Settings::queue_read_from_last_hold`).
    #[serde(default)]
    pub queue_read_from_last_hold: bool,
    /// Give up one acquisition after this long.
    pub max_wait_ms: u64,
    /// Stop starting new acquisitions after this long (`0`: no limit).
    pub run_limit_s: u64,
    pub monitor: PathBuf,
    pub fencing: bool,
    /// Give up connecting after this long.
    pub connect_timeout_s: u64,
    /// Report every machine step as an [`Event::Step`] (`cassalock real --steps`).
    #[serde(default)]
    pub steps: bool,
    /// Read the lock's server as each hold begins, after each extension and before each
    /// release ([`Event::ServerHolder`], T1-server), where the lock's store can be read.
    #[serde(default)]
    pub server_readings: bool,
}

/// What a locker did. Times are wall-clock microseconds since the Unix epoch.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Acquired {
        locker: String,
        at_us: u64,
        wait_us: u64,
        token: String,
        /// The lock's own token for this hold, where it differs from `token` (a family lock's
        /// key value, node or revision): what a reading of the server names
        /// ([`Event::ServerHolder`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lock_token: Option<String>,
        /// A row lock's thread id for this hold: what a reading of its main row names
        /// ([`Event::ServerHolder`]'s `threads`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lock_thread: Option<String>,
    },
    /// T1-server: what the lock's server named as its holder when a locker read it (right
    /// after acquiring, during the hold, before releasing): the lock's own token of the hold
    /// (`None`: nobody), or for a row lock the thread ids with a cell in its main row. `at_us`:
    /// when the reading's answer came. It says nothing of when the holder's key would expire:
    /// a later reading may fail (a server unreachable, a leader being elected), and an expiry
    /// projected past a state nobody read could name nobody where the server named a new
    /// holder.
    ServerHolder {
        locker: String,
        at_us: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lock_token: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        threads: Vec<String>,
    },
    /// The monitor's answer to the holder's write inside its critical section (`at_us`: when
    /// it answered; 0 in events from before it was recorded).
    Resource {
        locker: String,
        #[serde(default)]
        at_us: u64,
        token: String,
        accepted: bool,
        stale: bool,
    },
    /// The holder stopped believing it held: at the end of its hold, or, when its lease had run
    /// out by then, at the moment its guard stopped being valid ([`belief_ended_at_us`]).
    Released { locker: String, at_us: u64, lost: bool },
    /// A lock or release call failed (after the library's own retries).
    Error {
        locker: String,
        #[serde(default)]
        at_us: u64,
        during: String,
        message: String,
    },
    /// A process finished: its store requests.
    Done { process: usize, requests: u64 },
    /// With `cassalock real --steps FILE`: one thing a row lock's machine did (a request, its
    /// reply, a sleep, the library's own acquired / releasing / released), as the driver
    /// reported it to its [`cassalock::Observer`]. Written to the file, never summarized.
    Step {
        locker: String,
        /// The locker's wall clock when the driver reported it.
        at_us: u64,
        /// The acquisition's thread id (a locker may reuse one across acquisitions).
        thread: String,
        /// request, reply, sleep, acquired, not-acquired, releasing, released, reused, lease-lost.
        what: String,
        /// The step's listing tag and the request, reply or sleep, as the simulator's traces
        /// print them.
        detail: String,
        /// A sleep's length and kind, as the machine asked for it (only on "sleep" steps; the
        /// figures [`SleptThrough`] reads, so that it never parses `detail`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sleep: Option<StepSleep>,
    },
}

/// A sleep step's figures ([`Event::Step`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepSleep {
    pub ms: u64,
    /// The machine's `SleepKind`, by name: Poll, Backoff, Retry, Renewal, UntilNotified, ...
    pub kind: String,
    /// A sleep a waiter takes while it waits for the lock (a poll, or the old lock's
    /// backoff): one that a release can fall into. Renewal and retry sleeps are not.
    pub waiting: bool,
}

/// With `--steps`, over one process's steps: handoffs (a release, then the next acquisition,
/// by another locker) whose next holder was asleep on a poll (the queue lock) or a backoff
/// (the old lock) when the release began, and how
/// long after it that sleep ended. A waiter that sleeps through its turn stalls everyone
/// queued behind it: the figure that found the paced poll's two late-wake faults (2026-11-28).
/// Steps must come in time order (one process's are); a step's sleep is its [`StepSleep`].
#[derive(Clone, Debug, Default)]
pub struct SleptThrough {
    /// Per locker: when its current sleep ends (wall-clock us), while it sleeps.
    asleep_until_us: std::collections::BTreeMap<String, u64>,
    /// The latest release not yet followed by an acquisition.
    release: Option<PendingRelease>,
    pub handoffs: u64,
    /// How long after each slept-through release the sleeper's sleep ended, ms.
    pub woke_after_ms: Vec<f64>,
}

/// A release not yet followed by an acquisition: who released, when, and who was asleep then
/// (until when).
#[derive(Clone, Debug, Default)]
struct PendingRelease {
    releaser: String,
    at_us: u64,
    asleep_until_us: Vec<(String, u64)>,
}

/// The figures of a [`SleptThrough`], for a run's summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SleptThroughFigures {
    pub handoffs: u64,
    /// Handoffs whose next holder was asleep when the release began.
    pub slept_through: u64,
    pub woke_after_p50_ms: f64,
    pub woke_after_p90_ms: f64,
    pub woke_after_max_ms: f64,
}

impl SleptThrough {
    pub fn observe(&mut self, step: &Event) {
        let Event::Step {
            locker,
            at_us,
            what,
            sleep,
            ..
        } = step
        else {
            return;
        };
        match what.as_str() {
            "sleep" => {
                if let Some(sleep) = sleep.as_ref().filter(|sleep| sleep.waiting) {
                    self.asleep_until_us
                        .insert(locker.clone(), at_us.saturating_add(sleep.ms.saturating_mul(1000)));
                }
            }
            "releasing" => {
                let asleep = self
                    .asleep_until_us
                    .iter()
                    .filter(|(who, &until)| *who != locker && until > *at_us)
                    .map(|(who, &until)| (who.clone(), until))
                    .collect();
                self.release = Some(PendingRelease {
                    releaser: locker.clone(),
                    at_us: *at_us,
                    asleep_until_us: asleep,
                });
            }
            "acquired" => {
                if let Some(release) = self.release.take() {
                    if release.releaser != *locker {
                        self.handoffs += 1;
                        if let Some((_, until)) = release.asleep_until_us.iter().find(|(who, _)| who == locker) {
                            self.woke_after_ms
                                .push(until.saturating_sub(release.at_us) as f64 / 1000.0);
                        }
                    }
                }
                self.asleep_until_us.remove(locker);
            }
            // Any other step of a locker means it is awake.
            _ => {
                self.asleep_until_us.remove(locker);
            }
        }
    }

    pub fn figures(&self) -> SleptThroughFigures {
        // 0, not NaN, when none was slept through (a summary is JSON, which has no NaN).
        let percentile = |p| {
            if self.woke_after_ms.is_empty() {
                0.0
            } else {
                stats::percentile(&self.woke_after_ms, p)
            }
        };
        SleptThroughFigures {
            handoffs: self.handoffs,
            slept_through: self.woke_after_ms.len() as u64,
            woke_after_p50_ms: percentile(50),
            woke_after_p90_ms: percentile(90),
            woke_after_max_ms: self.woke_after_ms.iter().copied().fold(0.0, f64::max),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// When a holder stopped believing it held the lock (the end of its interval for the T1-belief
/// judge). A holder acts only after asking its guard whether the lease is still valid, so its
/// belief ends when the hold ends (`now_us`), or earlier, at `valid_until_us`, if the guard was
/// no longer valid by then (a lease that ran out while held: its holder, asking, is told so from
/// that moment on). Never before the acquisition. A guard known lost for another reason (a
/// renewal that found the key taken) may have stopped believing earlier still: `valid_until_us`
/// is the latest the belief can have lasted, so the judge errs towards overlaps, never away
/// from them.
pub fn belief_ended_at_us(acquired_at_us: u64, now_us: u64, still_valid: bool, valid_until_us: Option<u64>) -> u64 {
    let ended = match valid_until_us {
        Some(until) if !still_valid => until.min(now_us),
        _ => now_us,
    };
    debug_assert!(ended <= now_us);
    ended.max(acquired_at_us.min(now_us))
}

pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// The shared resource: the highest fencing token accepted so far, in a file that every
/// process on this machine updates under an exclusive lock.
pub struct Monitor {
    path: PathBuf,
}

impl Monitor {
    pub fn create(path: &Path) -> std::io::Result<Monitor> {
        File::create(path)?;
        Ok(Monitor {
            path: path.to_path_buf(),
        })
    }

    pub fn open(path: &Path) -> Monitor {
        Monitor {
            path: path.to_path_buf(),
        }
    }

    /// Write under `token`: (accepted, stale). A token below the highest seen is stale and is
    /// refused when `fencing` is on: [`cassalock::algo::admit`], the rule the model and the
    /// simulator apply too.
    pub fn write(&self, token: &str, fencing: bool) -> std::io::Result<(bool, bool)> {
        let file = OpenOptions::new().read(true).write(true).open(&self.path)?;
        let _guard = FileLock::exclusive(&file)?;
        let mut file = &file;
        let mut highest = String::new();
        file.read_to_string(&mut highest)?;
        let admission = cassalock::algo::admit(Some(highest.as_str()).filter(|h| !h.is_empty()), token, fencing);
        let (accepted, stale) = (admission.accepted, admission.stale);
        if admission.raises_highest() {
            file.seek(SeekFrom::Start(0))?;
            file.set_len(0)?;
            file.write_all(token.as_bytes())?;
        }
        Ok((accepted, stale))
    }
}

struct FileLock<'a> {
    file: &'a File,
}

impl<'a> FileLock<'a> {
    fn exclusive(file: &'a File) -> std::io::Result<Self> {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a file descriptor we own for the guard's lifetime.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(FileLock { file })
    }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as above; unlocking a descriptor we hold.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// The verdicts and figures of one run, judged from its events.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    pub variant: String,
    pub lockers: usize,
    pub processes: usize,
    pub acquisitions: u64,
    pub elapsed_s: f64,
    pub acquisitions_per_s: f64,
    pub wait_p50_ms: f64,
    pub wait_p99_ms: f64,
    pub wait_max_ms: f64,
    pub requests: u64,
    pub requests_per_acquisition: f64,
    pub errors: u64,
    pub lost_leases: u64,
    /// Jain's index of per-locker acquisition counts (1: equal shares).
    pub jain: f64,
    /// Longest stretch of consecutive acquisitions by one locker (the thesis's "batches").
    pub longest_run: u64,
    /// Where a cycle of the lock goes, medians over the run (0 when there were none, as in
    /// data from before 2026-11-28): a hold, from an acquisition to its holder's belief
    /// ending ...
    #[serde(default)]
    pub hold_p50_ms: f64,
    /// ... and a handoff, from one holder's belief ending to the next acquisition by another
    /// locker (its release's requests, the waiter's sleep before it looks again, and its
    /// acquisition's requests; 0 when they overlapped). A locker that takes the lock straight
    /// back is not a handoff and is not counted.
    #[serde(default)]
    pub handoff_p50_ms: f64,
    /// How many handoffs [`Summary::handoff_p50_ms`] is over.
    #[serde(default)]
    pub handoffs: u64,
    /// Pairs of holding intervals that overlapped (T1-belief violations): every pair counts, so
    /// three lockers holding at once are three pairs.
    pub belief_overlaps: u64,
    /// Stale tokens the monitor saw (refused with fencing on, accepted without).
    pub stale_tokens: u64,
    /// Stale tokens the monitor accepted (T1-resource violations: only without fencing).
    pub stale_accepted: u64,
    /// T1-server: readings of the lock's server the run made ([`Event::ServerHolder`]; 0: the
    /// server was not read, T1-server not checked) ...
    #[serde(default)]
    pub server_readings: u64,
    /// ... and how many of them did not name every locker that believed it held then.
    #[serde(default)]
    pub server_disagreements: u64,
    /// What the resource's tokens were, when not the lock's own fencing tokens
    /// ([`Lock::token_note`]).
    #[serde(default)]
    pub tokens: String,
    /// Examples of what went wrong, for the printout.
    pub examples: Vec<String>,
    /// With `--steps`: lines written to the steps file, and steps left out once it held
    /// `runner::MAX_STEP_LINES` (absent from a summary without `--steps`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steps_written: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steps_dropped: u64,
    /// With `--steps`: why the file could not be written (a full disk, say); the run's verdicts
    /// stand, its steps file does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_failed: Option<String>,
    /// With `--steps` in one process: handoffs the next holder slept through ([`SleptThrough`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slept_through: Option<SleptThroughFigures>,
    /// How busy the machine's CPU was over the run, all cores, percent ([`capacity::CpuTimes`];
    /// absent in data from before 2026-11-29 and where /proc/stat cannot be read). Near 100 the
    /// run measured the machine's cores as much as the lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_busy_pct: Option<f64>,
}

impl Summary {
    pub fn t1_belief_holds(&self) -> bool {
        self.belief_overlaps == 0
    }

    pub fn t1_resource_holds(&self) -> bool {
        self.stale_accepted == 0
    }

    /// No reading of the server left out a believer (vacuous without readings:
    /// [`Summary::server_readings`] says whether it was checked).
    pub fn t1_server_holds(&self) -> bool {
        self.server_disagreements == 0
    }
}

/// A run's events as its event record (`cassalock_judge::event`, rules `observed`), on the
/// machine's wall clock: each acquisition as an `invoke` when its locker asked and an
/// `acquired` when `lock` returned; the end of each belief as a `releasing` (a `lease_lost`
/// just before it where the guard said the lease was lost); each monitor answer as a `write`;
/// each failed call as a `call_failed`. Lockers are client nodes `c0`, `c1`, ... in the order of
/// their names; the record ends just after its last event. Events from several processes come
/// in any order: the record is in time order.
pub fn record(variant: Lock, lockers: usize, fencing: bool, events: &[Event]) -> EventRecord {
    use cassalock_judge::event::{self as record, What};
    let mut names: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            Event::Acquired { locker, .. }
            | Event::ServerHolder { locker, .. }
            | Event::Released { locker, .. }
            | Event::Resource { locker, .. }
            | Event::Error { locker, .. } => Some(locker.as_str()),
            Event::Done { .. } | Event::Step { .. } => None,
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    let node = |locker: &str| format!("c{}", names.binary_search(&locker).unwrap_or(names.len()));
    let line = |at_us: u64, node: String, what: What| record::Event {
        at_ns: at_us.saturating_mul(1000),
        node,
        clock_us: Some(at_us),
        what,
    };
    let holds = LockTokens::of(events);
    let mut lines: Vec<record::Event> = Vec::with_capacity(events.len() * 2);
    for event in events {
        match event {
            Event::Acquired {
                locker,
                at_us,
                wait_us,
                token,
                ..
            } => {
                lines.push(line(
                    at_us.saturating_sub(*wait_us),
                    node(locker),
                    What::Invoke {
                        client: locker.clone(),
                        call: record::Call::Lock,
                        acquisition: 0,
                    },
                ));
                lines.push(line(
                    *at_us,
                    node(locker),
                    What::Acquired {
                        thread: locker.clone(),
                        lock: RUN_LOCK.into(),
                        token: token.clone(),
                        valid_until_us: None,
                        valid_until_at_ns: None,
                    },
                ));
            }
            Event::Released { locker, at_us, lost } => {
                if *lost {
                    lines.push(line(
                        *at_us,
                        node(locker),
                        What::LeaseLost {
                            thread: locker.clone(),
                            lock: RUN_LOCK.into(),
                            why: "the guard said the lease was lost at the end of the hold".into(),
                        },
                    ));
                }
                lines.push(line(
                    *at_us,
                    node(locker),
                    What::Releasing {
                        thread: locker.clone(),
                        lock: RUN_LOCK.into(),
                    },
                ));
            }
            Event::Resource {
                locker,
                at_us,
                token,
                accepted,
                stale,
            } => lines.push(line(
                *at_us,
                "resource".into(),
                What::Write {
                    client: Some(locker.clone()),
                    lock: Some(RUN_LOCK.into()),
                    token: token.clone(),
                    phase: Some(record::Phase::Enter),
                    accepted: Some(*accepted),
                    stale: Some(*stale),
                    acquisition: None,
                },
            )),
            Event::Error {
                locker,
                at_us,
                during,
                message,
            } => lines.push(line(
                *at_us,
                node(locker),
                What::CallFailed {
                    client: locker.clone(),
                    error: format!("{during} failed: {message}"),
                },
            )),
            Event::ServerHolder {
                locker,
                at_us,
                lock_token,
                threads,
            } => lines.push(line(
                *at_us,
                node(locker),
                What::ServerHolder {
                    lock: RUN_LOCK.into(),
                    holder: lock_token.as_deref().map(|named| holds.record_token(named, *at_us)),
                    threads: holds.record_threads(threads, *at_us),
                    // No expiry is projected (see `Event::ServerHolder`): each reading is
                    // judged at its own instant.
                    gone_at_ns: None,
                },
            )),
            Event::Done { .. } | Event::Step { .. } => {}
        }
    }
    lines.sort_by_key(|event| event.at_ns);
    let end_ns = lines.last().map_or(0, |event| event.at_ns.saturating_add(1));
    let header = record::Header::new(
        record::Driver::Real,
        variant.name(),
        record::Clock::WallSinceEpoch,
        record::RunFacts {
            clients: lockers,
            end_ns,
            // The real runner's belief already ends where the guard was lost (`Released`).
            rules: record::Rules::Observed(record::ObservedRules {
                fencing,
                lease_lost_ends_it: false,
                call_bound_ms: None,
            }),
            ..record::RunFacts::default()
        },
    );
    EventRecord { header, events: lines }
}

/// The holds whose lock names them otherwise than their `acquired` event does, each with
/// when it began: by the lock's own token (the family lockers', whose readings name tokens),
/// with the event's token; by the lock's thread id (the row locks', whose main row names
/// threads), with the event's locker. How a reading of the server is written in the record's
/// names.
struct LockTokens<'a> {
    holds: BTreeMap<&'a str, Vec<(u64, &'a str)>>,
    threads: BTreeMap<&'a str, Vec<(u64, &'a str)>>,
}

impl<'a> LockTokens<'a> {
    fn of(events: &'a [Event]) -> Self {
        let mut holds: BTreeMap<&str, Vec<(u64, &str)>> = BTreeMap::new();
        let mut threads: BTreeMap<&str, Vec<(u64, &str)>> = BTreeMap::new();
        for event in events {
            if let Event::Acquired {
                locker,
                at_us,
                token,
                lock_token,
                lock_thread,
                ..
            } = event
            {
                if let Some(lock_token) = lock_token {
                    holds.entry(lock_token).or_default().push((*at_us, token));
                }
                if let Some(lock_thread) = lock_thread {
                    threads.entry(lock_thread).or_default().push((*at_us, locker));
                }
            }
        }
        for began in holds.values_mut().chain(threads.values_mut()) {
            began.sort_unstable();
        }
        LockTokens { holds, threads }
    }

    /// The record's threads (its lockers) of the lock threads a main row named in a reading at
    /// `at_us`: each the locker of the latest hold with that thread id acquired by then; a
    /// thread id no acquisition had returned yet is kept as the row named it.
    fn record_threads(&self, lock_threads: &[String], at_us: u64) -> Vec<String> {
        let mut named: Vec<String> = lock_threads
            .iter()
            .map(|thread| {
                self.threads
                    .get(thread.as_str())
                    .and_then(|began| began.iter().rev().find(|(began_us, _)| *began_us <= at_us))
                    .map_or_else(|| thread.clone(), |(_, locker)| (*locker).to_owned())
            })
            .collect();
        named.sort();
        named.dedup();
        named
    }

    /// The record's token of the hold the server named by `lock_token` in a reading at
    /// `at_us`: the latest hold with that lock token acquired by then (a Redisson owner takes
    /// the same token at each of its holds). A token no acquisition had returned yet is kept
    /// as the server named it.
    fn record_token(&self, lock_token: &str, at_us: u64) -> String {
        self.holds
            .get(lock_token)
            .and_then(|began| began.iter().rev().find(|(began_us, _)| *began_us <= at_us))
            .map_or_else(|| lock_token.to_owned(), |(_, token)| (*token).to_owned())
    }
}

/// A run's event record: [`cassalock_judge::event::Record`].
pub type EventRecord = cassalock_judge::event::Record;

/// Judge a run from all its events (any order across processes), by the one judge, on its
/// event record ([`record`]).
pub fn summarize(variant: Lock, lockers: usize, processes: usize, elapsed: Duration, events: &[Event]) -> Summary {
    let mut summary = Summary {
        variant: variant.title().into(),
        lockers,
        processes,
        elapsed_s: elapsed.as_secs_f64(),
        tokens: variant.token_note().into(),
        ..Summary::default()
    };
    let run = record(variant, lockers, !variant.is_family(), events);
    let judged = cassalock_judge::observed::judge_record(&run.header, &run.events);
    // What went wrong, in the order it happened in each process: stale writes and failures.
    for event in events {
        match event {
            Event::Released { lost, .. } => summary.lost_leases += u64::from(*lost),
            Event::Resource {
                locker,
                token,
                accepted,
                stale: true,
                ..
            } if summary.examples.len() < 5 => summary.examples.push(format!(
                "{locker} wrote with stale token {token} ({})",
                if *accepted {
                    "ACCEPTED: damage"
                } else {
                    "refused by fencing"
                }
            )),
            Event::Error {
                locker,
                during,
                message,
                ..
            } => {
                summary.errors += 1;
                if summary.examples.len() < 5 {
                    summary.examples.push(format!("{locker} {during} failed: {message}"));
                }
            }
            Event::Done { requests, .. } => summary.requests += requests,
            _ => {}
        }
    }
    summary.acquisitions = judged.acquisitions;
    summary.stale_tokens = judged.stale_count;
    summary.stale_accepted = judged.stale_accepted() as u64;
    let median = |values: &[f64]| {
        if values.is_empty() {
            0.0
        } else {
            stats::percentile(values, 50)
        }
    };
    summary.hold_p50_ms = median(&judged.holds_ms);
    summary.handoff_p50_ms = median(&judged.handoffs_ms);
    summary.handoffs = judged.handoffs_ms.len() as u64;
    summary.belief_overlaps = judged.overlap_count;
    for overlap in &judged.overlaps {
        if summary.examples.len() < 5 {
            summary.examples.push(format!(
                "T1-belief: {} acquired at {} us while {} held until {} us",
                overlap.second.holder,
                overlap.from.as_micros(),
                overlap.first.holder,
                overlap.first.released_at.as_micros()
            ));
        }
    }
    summary.server_readings = judged.server_readings;
    summary.server_disagreements = judged.server_disagreements;
    for (claim, verdict, detail) in &judged.checks {
        if *claim == cassalock_judge::ClaimId::T1Server && verdict.is_violated() && summary.examples.len() < 5 {
            summary.examples.push(format!("T1-server: {detail}"));
        }
    }
    summary.jain = judged.jain;
    summary.longest_run = judged.longest_run;
    summary.wait_p50_ms = stats::percentile(&judged.waits_ms, 50);
    summary.wait_p99_ms = stats::percentile(&judged.waits_ms, 99);
    summary.wait_max_ms = judged.waits_ms.iter().copied().fold(f64::NAN, f64::max);
    summary.acquisitions_per_s = summary.acquisitions as f64 / summary.elapsed_s.max(1e-9);
    summary.requests_per_acquisition = summary.requests as f64 / (summary.acquisitions.max(1) as f64);
    summary
}

#[cfg(test)]
mod tests;
