//! T1-server for the row locks: who each lock's main row names as its holders, read from
//! outside the protocol (the simulation's view of every replica) at the instants a client
//! records a step, and decided by the lock's own rule ([`row_holders`]), so no rule of the
//! lock's is written here.
//!
//! A client's read goes to a coordinator picked at random, which reconciles the versions of a
//! quorum of replicas and judges expiry on its own clock; so a reading tries every quorum of
//! replicas with every replica as coordinator, and the row names a thread only if every such
//! read finds its cell live. A reading takes no time and draws nothing from the seed (clocks
//! are read without their per-reading error), so the runs' schedules are those of runs
//! without it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cassalock::algo::server_holder::row_holders;
use cassalock::store::{live_slice, merge_slices, CellBody, CellVersion, LiveCell, MICROS_PER_SECOND};
use cassalock::LockId;

use crate::clock::clock_passes;
use crate::clock::SimClock;
use crate::cluster::ReplicaData;
use crate::oracles::subsets;

/// What one reading of a lock's main row found: the threads it names (empty: nobody), and,
/// where it names one, the instant (since the run began) from which some read no longer finds
/// that thread's cell unless a write renews or deletes it first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowReading {
    pub threads: Vec<String>,
    pub gone_at: Option<Duration>,
}

/// The longest ahead a cell's expiry is placed on the run's time line (beyond it: not placed).
const MAX_EXPIRY_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// The most replicas a reading tries every quorum of (the quorums of a larger cluster are
/// too many to try at every step): a larger cluster is not read, and its T1-server is not
/// exercised.
pub const MAX_READ_REPLICAS: usize = 7;

/// The replicas a run's readings look at, and what the last reading of each lock found.
pub struct RowServers {
    replicas: Vec<(Arc<Mutex<ReplicaData>>, SimClock)>,
    read_quorum: usize,
    locks: Vec<LockId>,
    /// Per lock, the last reading recorded (a reading that found the same is not recorded
    /// again, unless a step asks for it).
    last: Mutex<BTreeMap<String, RowReading>>,
    /// Per thread, the lock whose main cell its renewal is rewriting (the reply is read).
    renewing: Mutex<BTreeMap<String, LockId>>,
}

impl RowServers {
    /// `None` when the cluster is larger than [`MAX_READ_REPLICAS`].
    pub fn new(
        replicas: Vec<(Arc<Mutex<ReplicaData>>, SimClock)>,
        read_quorum: usize,
        locks: Vec<LockId>,
    ) -> Option<Self> {
        (replicas.len() <= MAX_READ_REPLICAS).then(|| RowServers {
            read_quorum: read_quorum.clamp(1, replicas.len().max(1)),
            replicas,
            locks,
            last: Mutex::default(),
            renewing: Mutex::default(),
        })
    }

    /// Every lock of the run.
    pub fn locks(&self) -> &[LockId] {
        &self.locks
    }

    /// A renewal of `thread` sent a rewrite of its cell in `main_row`: its reply is read.
    pub fn renewal_sent(&self, thread: &str, main_row: &str) {
        if let Some(lock) = self.locks.iter().find(|lock| lock.main_row() == main_row) {
            self.renewing
                .lock()
                .expect("row readings")
                .insert(thread.to_owned(), lock.clone());
        }
    }

    /// The reply to a request of `thread` came: the lock its renewal rewrote, if it was one.
    pub fn renewal_answered(&self, thread: &str) -> Option<LockId> {
        self.renewing.lock().expect("row readings").remove(thread)
    }

    /// Read `lock`'s main row at `now`: the reading to record, or `None` when it found what the
    /// last recorded one did and `always` is false.
    pub fn read(&self, lock: &LockId, now: Duration, always: bool) -> Option<RowReading> {
        let reading = self.reading(lock, now);
        let mut last = self.last.lock().expect("row readings");
        if !always && last.get(lock.as_str()) == Some(&reading) {
            return None;
        }
        last.insert(lock.as_str().to_owned(), reading.clone());
        Some(reading)
    }

    fn reading(&self, lock: &LockId, now: Duration) -> RowReading {
        let main_row = lock.main_row();
        // Every replica's versions of the row, as each sends them to a read's coordinator.
        let held: Vec<Vec<(String, CellVersion)>> = self
            .replicas
            .iter()
            .map(|(data, _)| {
                let data = data.lock().expect("replica data");
                data.live
                    .raw_slice(&main_row, "")
                    .map(|(column, version)| (column.to_owned(), version.clone()))
                    .collect()
            })
            .collect();
        let clocks_us: Vec<u64> = self.replicas.iter().map(|(_, clock)| clock.reading_at(now)).collect();
        // Every read: a quorum's versions reconciled, judged on a coordinator's clock.
        let merged_rows: Vec<BTreeMap<String, CellVersion>> = subsets(held.len(), self.read_quorum)
            .map(|members| {
                merge_slices(
                    members
                        .into_iter()
                        .map(|member| held[member].iter().map(|(column, version)| (column.as_str(), version))),
                )
            })
            .collect();
        let reads: Vec<Vec<LiveCell>> = merged_rows
            .iter()
            .flat_map(|merged| {
                clocks_us
                    .iter()
                    .map(move |now_us| live_slice(merged, usize::MAX, *now_us))
            })
            .collect();
        let threads = row_holders(reads.iter().map(Vec::as_slice));
        let gone_at = match threads.as_slice() {
            [thread] => self.first_miss(&merged_rows, thread, now),
            _ => None,
        };
        RowReading { threads, gone_at }
    }

    /// The first instant some read no longer finds `thread`'s cell live as it stands: the
    /// earliest of its expiries over every read, each on its coordinator's clock.
    fn first_miss(
        &self,
        merged_rows: &[BTreeMap<String, CellVersion>],
        thread: &str,
        now: Duration,
    ) -> Option<Duration> {
        let until = now.saturating_add(MAX_EXPIRY_AHEAD);
        let expiries_us = merged_rows.iter().filter_map(|merged| match merged.get(thread) {
            Some(CellVersion {
                body:
                    CellBody::Value {
                        expires_at_s: Some(expiry_s),
                        ..
                    },
                ..
            }) => Some(expiry_s.saturating_mul(MICROS_PER_SECOND)),
            _ => None,
        });
        // A clock reads whole microseconds: the first whole microsecond at which it reads the
        // expiry (what the run's instant holds below one is not the clock's).
        let whole_micros = |at: Duration| Duration::from_micros(u64::try_from(at.as_micros()).unwrap_or(u64::MAX));
        expiries_us
            .flat_map(|expiry_us| {
                self.replicas
                    .iter()
                    .map(move |(_, clock)| clock_passes(clock, now, expiry_us, until))
            })
            .min()
            .filter(|at| *at < until)
            .map(|at| whole_micros(at).max(now))
    }
}
