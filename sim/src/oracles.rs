//! The oracles: tasks that watch the replicas' data from outside the protocol (the simulation's
//! god view) and record what they see, for the verdicts.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cassalock::algo::global_time::{decode_time, GLOBAL_TIME_COLUMN, GLOBAL_TIME_ROW};
use cassalock::driver::LockEvent;
use cassalock::store::CellBody;
use cassalock::{Clock, LockId};
use cassalock_history::holding::SimulatedTime;
use cassalock_history::k3::{self, LiveCell, Release};

use crate::clock::SimClock;
use crate::cluster::ReplicaData;
use crate::scenario::LOCK;
use crate::trace::{Recorder, What};

/// K3 oracle: after a successful release, no replica may hold a live main cell of that
/// acquisition written *after* the release began: `cassalock_history::k3::stuck` decides. (The
/// same locker stamps writes with monotonic timestamps, so "after" is "timestamp above its clock
/// when release began"; a replica that merely missed the delete holds an older version and is
/// not counted.)
pub(crate) async fn watch_resurrections(
    recorder: Arc<Recorder>,
    replicas: Vec<(Arc<Mutex<ReplicaData>>, SimClock)>,
    renew_ms: u64,
) {
    let main_row = LockId::new(LOCK).expect("valid").main_row();
    let mut releasing: BTreeMap<String, u64> = BTreeMap::new();
    let mut released: Vec<Release<SimulatedTime>> = Vec::new();
    let mut seen = 0usize;
    let mut reported: BTreeSet<String> = BTreeSet::new();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        recorder.with_records(|records| {
            for record in &records[seen..] {
                match &record.what {
                    What::Lock(LockEvent::Releasing { thread, client_us, .. }) => {
                        releasing.insert(thread.to_string(), *client_us);
                    }
                    What::Lock(LockEvent::Released {
                        thread,
                        lock,
                        outcome: cassalock::algo::lease::Released::Released,
                        ..
                    }) => {
                        if let Some(began_us) = releasing.remove(thread.as_str()) {
                            released.push(Release {
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
            seen = records.len();
        });
        let now = recorder.elapsed();
        // A renewal write in flight at release time lands within a few round trips; look
        // from 500 ms after the release for as long as a renewal could still write (two intervals).
        let window = Duration::from_millis(500)..Duration::from_millis(500 + 2 * renew_ms.max(1000));
        for release in &released {
            let age = now.saturating_sub(release.completed_at);
            if !window.contains(&age) || reported.contains(&release.holder) {
                continue;
            }
            for (index, (data, clock)) in replicas.iter().enumerate() {
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
                if cell.is_some_and(|cell| k3::stuck(release, &cell).is_some()) {
                    reported.insert(release.holder.clone());
                    recorder.record(
                        "oracle",
                        None,
                        What::Resurrected {
                            thread: release.holder.clone(),
                            replica: index,
                        },
                    );
                    break;
                }
            }
        }
        released.retain(|release| now.saturating_sub(release.completed_at) < window.end);
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
