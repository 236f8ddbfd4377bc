//! The oracles: tasks that watch the replicas' data from outside the protocol (the simulation's
//! god view) and record what they see, for the verdicts.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cassalock::algo::global_time::{decode_time, GLOBAL_TIME_COLUMN, GLOBAL_TIME_ROW};
use cassalock::driver::LockEvent;
use cassalock::store::CellBody;
use cassalock::{Clock, LockId};
use cassalock_judge::holding::SimulatedTime;
use cassalock_judge::k3::{self, LiveCell, Release};

use crate::clock::SimClock;
use crate::cluster::ReplicaData;
use crate::trace::{Record, Recorder, What};

/// The most late renewal stamps the K3 oracle keeps for one released id. A watch lasts 500 ms
/// and two renewal intervals, so a renewal that outlives its release sends at most three
/// rewrites in it; a stamp past the limit is not kept, and the run says so
/// ([`K3_LIMIT_HIT`]), which fails its K3 check rather than passing it unjudged.
const MAX_LATE_RENEWALS: usize = 16;

/// How a note of the K3 oracle's limit begins: the verdicts count such notes against K3.
pub(crate) const K3_LIMIT_HIT: &str = "limit hit: the K3 oracle";

/// K3 with reused thread ids: what the oracle knows of a released id's renewal writes.
struct LateRenewals {
    /// The holder's write stamp when its release began.
    began_stamp_us: u64,
    /// The id began a new acquisition.
    reused: bool,
    /// The index of the record where that acquisition held the lock.
    reacquired_at: Option<usize>,
    /// Stamps of renewal rewrites sent after the release began, before `reacquired_at`.
    stamps_us: Vec<u64>,
}

/// A limit an oracle hit, with the note to record (the oracle's verdict is then undecided).
#[derive(Debug)]
struct LimitHit(String);

impl LateRenewals {
    /// Keep a late renewal's stamp; `Err` with the note to record when the limit is hit
    /// (the stamp is then not kept, and the id's K3 watch can no longer be trusted).
    fn keep(&mut self, thread: &str, stamp_us: u64) -> Result<(), LimitHit> {
        if self.stamps_us.contains(&stamp_us) {
            return Ok(());
        }
        if self.stamps_us.len() >= MAX_LATE_RENEWALS {
            return Err(LimitHit(format!(
                "{K3_LIMIT_HIT} kept {MAX_LATE_RENEWALS} late renewal stamps of {thread} (MAX_LATE_RENEWALS) and dropped one; K3 is undecided for this release"
            )));
        }
        self.stamps_us.push(stamp_us);
        debug_assert!(self.stamps_us.len() <= MAX_LATE_RENEWALS);
        Ok(())
    }
}

/// K3 oracle: after a successful release, no replica may hold a live main cell of that
/// acquisition written *after* the release began, that a read could see ([`readable`]): `cassalock_judge::k3::stuck` decides. (The
/// same locker stamps writes with monotonic timestamps, so "after" is "timestamp above its clock
/// when release began"; a replica that merely missed the delete holds an older version and is
/// not counted.) With reused thread ids the next acquisition may take the released one's id
/// and so the name of its main cell, and its own writes are stamped above the release too. So
/// once the id is reused, a cell counts only if it carries the stamp of a renewal rewrite the
/// released holder sent after its release began and before the id's next acquisition held
/// the lock (no renewal of that acquisition runs before then): the recorder notes each
/// renewal rewrite for this ([`Recorder::take_renewal_writes`]), in sweeps too. Once that
/// acquisition holds, the lock is not taken by nobody and the watch judges no more; a release
/// under the id ends the watch of the id's earlier release (and may be reported in its turn).
///
/// C-free oracle, in the same task (one more task would change madsim's schedule and so every
/// seed's run): after a call fails or gives up (an acquisition ending `Failed` or `TimedOut`, a
/// release ending `Failed`), how long a read could still see a cell holding that thread's id
/// ([`readable_cell_of`]), measured every 200 ms until none is left and no write of the call can still land
/// (`settle`), or the TTL has passed. One [`What::Leftover`] record per failed call.
pub(crate) async fn watch_replicas(
    recorder: Arc<Recorder>,
    replicas: Vec<(Arc<Mutex<ReplicaData>>, SimClock)>,
    renew_ms: u64,
    ttl: Duration,
    settle: Duration,
    read_quorum: usize,
) {
    let mut watch = ReplicaWatch {
        recorder,
        replicas,
        renew_ms,
        ttl,
        settle,
        read_quorum,
        releasing: BTreeMap::new(),
        released: Vec::new(),
        seen: 0,
        reported: BTreeSet::new(),
        failed: BTreeMap::new(),
        stamps_above: BTreeMap::new(),
        late_renewals: BTreeMap::new(),
    };
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        watch.step();
    }
}

/// The state of [`watch_replicas`]: the K3 and the C-free oracles'.
struct ReplicaWatch {
    recorder: Arc<Recorder>,
    replicas: Vec<(Arc<Mutex<ReplicaData>>, SimClock)>,
    renew_ms: u64,
    ttl: Duration,
    settle: Duration,
    read_quorum: usize,
    /// K3: releases begun (thread -> its write stamp then), and releases completed.
    releasing: BTreeMap<String, u64>,
    released: Vec<Release<SimulatedTime>>,
    /// Records read so far.
    seen: usize,
    /// K3: released ids already reported.
    reported: BTreeSet<String>,
    /// C-free: failed calls being watched: thread -> (returned at, last seen live at, the
    /// timestamp its acquisition's writes are above: 0, or with reused ids the locker's last
    /// before the acquisition began).
    failed: BTreeMap<String, (Duration, Option<Duration>, u64)>,
    /// With reused thread ids: per id, what the current acquisition's writes are stamped above.
    stamps_above: BTreeMap<String, u64>,
    /// K3 with reused thread ids: per released id, its late renewal writes.
    late_renewals: BTreeMap<String, LateRenewals>,
}

impl ReplicaWatch {
    /// One look, every 200 ms: the records since the last, then the replicas.
    fn step(&mut self) {
        let mut ended_by_reuse = Vec::new();
        let recorder = Arc::clone(&self.recorder);
        recorder.with_records(|records| {
            for (index, record) in records.iter().enumerate().skip(self.seen) {
                self.read(index, record, &mut ended_by_reuse);
            }
            self.seen = records.len();
        });
        self.keep_late_renewals();
        for leftover in ended_by_reuse {
            self.recorder.record("oracle", None, leftover);
        }
        let now = self.recorder.elapsed();
        self.watch_releases(now);
        self.watch_failed_calls(now);
    }

    /// Follow one record; the leftover records of failed calls whose id a new acquisition
    /// took go to `ended_by_reuse` (recorded after this pass: the records are locked while we
    /// read them).
    fn read(&mut self, index: usize, record: &Record, ended_by_reuse: &mut Vec<What>) {
        if let Some(thread) = failed_call(&record.what) {
            let above_us = self.stamps_above.get(&thread).copied().unwrap_or(0);
            self.failed.insert(thread, (record.at, None, above_us));
        }
        match &record.what {
            What::Lock(LockEvent::Reused {
                thread,
                stamps_above_us,
                ..
            }) => self.reused(thread.as_str(), *stamps_above_us, ended_by_reuse),
            What::Lock(LockEvent::Acquired { thread, .. }) => {
                // The id's next acquisition holds: renewal writes from here may be its own.
                if let Some(late) = self.late_renewals.get_mut(thread.as_str()) {
                    if late.reused && late.reacquired_at.is_none() {
                        late.reacquired_at = Some(index);
                    }
                }
            }
            What::Lock(LockEvent::Releasing { thread, client_us, .. }) => {
                self.releasing.insert(thread.to_string(), *client_us);
                if self.recorder.watches_renewal_writes() {
                    // With reuse, an id's new release replaces its older one's watch
                    // (the id held again in between, so the older one's late renewals
                    // are no longer told apart).
                    self.released.retain(|release| release.holder != thread.as_str());
                    self.reported.remove(thread.as_str());
                    self.late_renewals.insert(
                        thread.to_string(),
                        LateRenewals {
                            began_stamp_us: *client_us,
                            reused: false,
                            reacquired_at: None,
                            stamps_us: Vec::new(),
                        },
                    );
                }
            }
            What::Lock(LockEvent::Released {
                thread,
                lock,
                outcome: cassalock::algo::lease::Released::Released,
                ..
            }) => {
                if let Some(began_us) = self.releasing.remove(thread.as_str()) {
                    self.released.push(Release {
                        holder: thread.to_string(),
                        lock: lock.as_str().to_owned(),
                        began_stamp_us: began_us,
                        completed_at: record.at,
                    });
                }
            }
            _ => {}
        }
    }

    /// The id now names a new acquisition (`reuse_thread_ids`): what a read finds under it is
    /// no longer the earlier call's. A failed call's watch ends with what it measured so far,
    /// a release's K3 watch ends.
    fn reused(&mut self, thread: &str, stamps_above_us: u64, ended_by_reuse: &mut Vec<What>) {
        self.stamps_above.insert(thread.to_owned(), stamps_above_us);
        if let Some((returned_at, last_live, _)) = self.failed.remove(thread) {
            ended_by_reuse.push(What::Leftover {
                thread: thread.to_owned(),
                live_for: last_live.map_or(Duration::ZERO, |last| last.saturating_sub(returned_at)),
            });
        }
        self.releasing.remove(thread);
        // From here a cell under the id counts for K3 only by a late renewal's stamp.
        if let Some(late) = self.late_renewals.get_mut(thread) {
            late.reused = true;
        }
    }

    /// Renewal rewrites a released holder sent after its release began and before its id
    /// held again (at most MAX_LATE_RENEWALS kept an id, reported when hit: a renewal that
    /// outlives its release sends one or two).
    fn keep_late_renewals(&mut self) {
        for write in self.recorder.take_renewal_writes() {
            if let Some(late) = self.late_renewals.get_mut(&write.thread) {
                if write.stamp_us > late.began_stamp_us
                    && late.reacquired_at.is_none_or(|held_at| write.position <= held_at)
                {
                    if let Err(LimitHit(note)) = late.keep(&write.thread, write.stamp_us) {
                        self.recorder.record("oracle", None, What::Note(note));
                    }
                }
            }
        }
    }

    /// K3: each release in its window, the first replica holding a stuck cell of it.
    fn watch_releases(&mut self, now: Duration) {
        // A renewal write in flight at release time lands within a few round trips; look
        // from 500 ms after the release for as long as a renewal could still write (two intervals).
        let window = Duration::from_millis(500)..Duration::from_millis(500 + 2 * self.renew_ms.max(1000));
        for release in &self.released {
            let age = now.saturating_sub(release.completed_at);
            if !window.contains(&age) || self.reported.contains(&release.holder) {
                continue;
            }
            if let Some(index) = self.stuck_replica(release, now) {
                self.reported.insert(release.holder.clone());
                self.recorder.record(
                    "oracle",
                    None,
                    What::Resurrected {
                        thread: release.holder.clone(),
                        replica: index,
                    },
                );
            }
        }
        self.released
            .retain(|release| now.saturating_sub(release.completed_at) < window.end);
        let (releasing, released) = (&self.releasing, &self.released);
        self.late_renewals.retain(|thread, _| {
            releasing.contains_key(thread) || released.iter().any(|release| release.holder == *thread)
        });
    }

    /// The first replica that holds a live main cell of `release` that K3 calls stuck and a
    /// read could see.
    fn stuck_replica(&self, release: &Release<SimulatedTime>, now: Duration) -> Option<usize> {
        let main_row = LockId::new(&release.lock).expect("a lock the clients took").main_row();
        for (index, (data, clock)) in self.replicas.iter().enumerate() {
            let reader_us = clock.now_us();
            let cell = data
                .lock()
                .expect("replica data")
                .live
                .version(&main_row, &release.holder)
                .filter(|version| version.is_live_at(reader_us))
                .map(|version| LiveCell {
                    holder: release.holder.clone(),
                    lock: release.lock.clone(),
                    seen_at: now,
                    stamp_us: version.timestamp_us,
                    live_until: match &version.body {
                        CellBody::Value {
                            expires_at_s: Some(expiry_s),
                            ..
                        } => Some(now + Duration::from_micros((expiry_s * 1_000_000).saturating_sub(reader_us))),
                        _ => None,
                    },
                });
            // A replica that missed the release's delete holds the cell live, but a read
            // that also meets the delete does not see it: only a cell some read can see is
            // stuck.
            // With the id reused, only a late renewal's stamp tells the released
            // acquisition's cell from the next one's.
            let by_late_renewal = |cell: &LiveCell<SimulatedTime>| match self.late_renewals.get(&release.holder) {
                // Once the id holds again the lock is not taken by nobody: not judged.
                Some(late) if late.reused => late.reacquired_at.is_none() && late.stamps_us.contains(&cell.stamp_us),
                _ => true,
            };
            if cell.is_some_and(|cell| k3::stuck(release, &cell).is_some() && by_late_renewal(&cell))
                && readable(
                    &self.replicas,
                    self.read_quorum,
                    &main_row,
                    &release.holder,
                    &release.holder,
                    0,
                )
            {
                return Some(index);
            }
        }
        None
    }

    /// C-free: each failed call's cells, until none is left and no write of the call can
    /// still land, or the TTL has passed; then its leftover record.
    fn watch_failed_calls(&mut self, now: Duration) {
        let mut settled = Vec::new();
        for (thread, (returned_at, last_live, above_us)) in self.failed.iter_mut() {
            let live = readable_cell_of(&self.replicas, self.read_quorum, thread, *above_us);
            if live {
                *last_live = Some(now);
            }
            let age = now.saturating_sub(*returned_at);
            if (!live && age >= self.settle) || age >= self.ttl + self.settle {
                settled.push(thread.clone());
                self.recorder.record(
                    "oracle",
                    None,
                    What::Leftover {
                        thread: thread.clone(),
                        live_for: last_live.map_or(Duration::ZERO, |last| last.saturating_sub(*returned_at)),
                    },
                );
            }
        }
        for thread in settled {
            self.failed.remove(&thread);
        }
    }
}

/// Could a read at the run's consistency level (`read_quorum` replicas) see a live cell whose
/// value is `thread`, stamped above `above_us` (the call's own writes, where thread ids are
/// reused)? Every such cell on any replica is tried with [`readable`].
fn readable_cell_of(
    replicas: &[(Arc<Mutex<ReplicaData>>, SimClock)],
    read_quorum: usize,
    thread: &str,
    above_us: u64,
) -> bool {
    let mut candidates: BTreeSet<(String, String)> = BTreeSet::new();
    for (data, clock) in replicas {
        let now_us = clock.now_us();
        let data = data.lock().expect("replica data");
        candidates.extend(
            data.live
                .versions()
                .filter(|(_, _, version)| {
                    version.timestamp_us > above_us && version.live_value_at(now_us) == Some(thread)
                })
                .map(|(row, column, _)| (row.to_owned(), column.to_owned())),
        );
    }
    candidates
        .iter()
        .any(|(row, column)| readable(replicas, read_quorum, row, column, thread, above_us))
}

/// Could a read of `read_quorum` replicas see cell (`row`, `column`) live with `value`? Every
/// set of `read_quorum` replicas is tried: the versions they hold are reconciled as a
/// coordinator would, and the winner judged on the first replica's clock. A cell that one
/// replica still holds while enough others hold its delete is seen by no read.
fn readable(
    replicas: &[(Arc<Mutex<ReplicaData>>, SimClock)],
    read_quorum: usize,
    row: &str,
    column: &str,
    value: &str,
    above_us: u64,
) -> bool {
    let views: Vec<(Option<cassalock::store::CellVersion>, u64)> = replicas
        .iter()
        .map(|(data, clock)| {
            let version = data.lock().expect("replica data").live.version(row, column).cloned();
            (version, clock.now_us())
        })
        .collect();
    let quorum = read_quorum.clamp(1, views.len().max(1));
    subsets(views.len(), quorum).any(|members| {
        let merged = members
            .iter()
            .filter_map(|&i| views[i].0.clone())
            .reduce(cassalock::store::reconcile);
        let reader_us = views[members[0]].1;
        merged.is_some_and(|version| version.timestamp_us > above_us && version.live_value_at(reader_us) == Some(value))
    })
}

/// Every `size`-element subset of `0..count`, in lexicographic order (count is a handful of
/// replicas).
pub(crate) fn subsets(count: usize, size: usize) -> impl Iterator<Item = Vec<usize>> {
    (0u32..(1u32 << count.min(16)))
        .filter(move |mask| mask.count_ones() as usize == size)
        .map(move |mask| (0..count).filter(|i| mask & (1 << i) != 0).collect())
}

/// The thread of a call that failed or gave up, if `what` ends one (C-free).
fn failed_call(what: &What) -> Option<String> {
    match what {
        What::Lock(LockEvent::NotAcquired {
            thread,
            outcome: cassalock::algo::Acquire::Failed { .. } | cassalock::algo::Acquire::TimedOut,
            ..
        })
        | What::Lock(LockEvent::Released {
            thread,
            outcome: cassalock::algo::lease::Released::Failed(_),
            ..
        }) => Some(thread.to_string()),
        _ => None,
    }
}

/// S1 oracle: the newest GlobalTime value held by any replica, recorded when it changes.
pub(crate) async fn watch_global_time(recorder: Arc<Recorder>, replicas: Vec<(Arc<Mutex<ReplicaData>>, SimClock)>) {
    let mut last = None;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut newest: Option<cassalock::store::CellVersion> = None;
        for (data, _) in &replicas {
            if let Some(version) = data
                .lock()
                .expect("replica data")
                .live
                .version(GLOBAL_TIME_ROW, GLOBAL_TIME_COLUMN)
            {
                newest = Some(match newest {
                    Some(current) => cassalock::store::reconcile(current, version.clone()),
                    None => version.clone(),
                });
            }
        }
        let value = newest.and_then(|v| match v.body {
            CellBody::Value { value, .. } => decode_time(&value),
            _ => None,
        });
        if value.is_some() && value != last {
            last = value;
            recorder.record(
                "oracle",
                None,
                What::GlobalTime {
                    value_us: value.unwrap_or(0),
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The K3 oracle's limit is reported, never passed over: past MAX_LATE_RENEWALS distinct
    /// stamps `keep` refuses with the note the verdicts count against K3.
    #[test]
    fn late_renewal_stamps_past_the_limit_are_refused_with_a_note() {
        let mut late = LateRenewals {
            began_stamp_us: 1,
            reused: true,
            reacquired_at: None,
            stamps_us: Vec::new(),
        };
        for stamp in 0..MAX_LATE_RENEWALS as u64 {
            late.keep("c0-0:0", 10 + stamp).expect("under the limit");
            // A retry resends the same stamp: kept once, never counted twice.
            late.keep("c0-0:0", 10 + stamp).expect("a stamp already kept");
        }
        let LimitHit(note) = late.keep("c0-0:0", 1_000).expect_err("the limit is hit");
        assert!(note.starts_with(K3_LIMIT_HIT), "{note}");
        assert!(note.contains("c0-0:0"), "{note}");
        assert_eq!(late.stamps_us.len(), MAX_LATE_RENEWALS);
    }

    /// A run whose K3 oracle hit its limit fails K3 (undecided, never a pass), and says why.
    #[test]
    fn a_k3_limit_hit_fails_the_k3_check() {
        let options = crate::scenario::SimOptions::default();
        let config =
            crate::scenario::build("contention", 0, cassalock::Algorithm::Queue, &options).expect("a scenario");
        let LimitHit(note) = LateRenewals {
            began_stamp_us: 0,
            reused: true,
            reacquired_at: None,
            stamps_us: (0..MAX_LATE_RENEWALS as u64).collect(),
        }
        .keep("c0-0:0", 99)
        .expect_err("full");
        let record = |what| crate::trace::Record {
            at: Duration::from_secs(1),
            node: "oracle".into(),
            clock_us: None,
            what,
        };
        let k3 = |records: &[crate::trace::Record]| {
            crate::verdict::judge(&config, records, Duration::from_secs(2), &BTreeSet::new())
                .checks
                .into_iter()
                .find(|check| check.claim == cassalock_judge::ClaimId::K3)
                .expect("K3 is checked")
        };
        assert!(k3(&[record(What::Note("a note".into()))]).passed());
        let check = k3(&[record(What::Note(note))]);
        assert!(!check.passed(), "{check:?}");
        assert!(check.detail.contains("undecided"), "{check:?}");
    }
}
