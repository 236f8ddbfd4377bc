//! The long run: with `Settings::reuse_thread_ids` a locker's acquisitions reuse
//! thread ids, so the main and shadow rows (named by thread id) keep one cell per slot
//! instead of a tombstone per acquisition. Through the real driver, under madsim.
#![cfg(madsim)]

use std::sync::Arc;
use std::time::Duration;

use cassalock::driver::Algorithm;
use cassalock::{InMemoryStore, RemoteLocker, Settings, SystemClock};

const ACQUISITIONS: usize = 40;

fn on_seed<F: std::future::Future>(seed: u64, test: impl FnOnce() -> F) -> F::Output {
    madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default()).block_on(test())
}

fn settings(client: &str, algorithm: Algorithm, reuse: bool) -> Settings {
    let mut settings = Settings::new(client);
    settings.algorithm = algorithm;
    settings.ttl_s = 4;
    settings.renew_every_ms = 2000;
    settings.poll_ms = 50;
    settings.reuse_thread_ids = reuse;
    settings
}

/// Cells of `row`, live or deleted (tombstones count: they are what a read walks past).
fn versions(store: &InMemoryStore<SystemClock>, row: &str) -> usize {
    store.snapshot().raw_slice(row, "").count()
}

#[test]
fn reused_thread_ids_keep_one_cell_per_slot_in_the_main_and_shadow_rows() {
    for algorithm in [Algorithm::Queue, Algorithm::Old] {
        for reuse in [false, true] {
            on_seed(1, || async move {
                // A millisecond or two a request, so that every enqueue reads a new time.
                let store = Arc::new(InMemoryStore::new(SystemClock).with_latency(2, 7));
                let locker =
                    RemoteLocker::new(Arc::clone(&store), SystemClock, settings("a", algorithm, reuse)).unwrap();
                let mut threads = std::collections::BTreeSet::new();
                for _ in 0..ACQUISITIONS {
                    let guard = locker.lock("L").await.unwrap();
                    threads.insert(guard.thread_id().as_str().to_owned());
                    guard.release().await.unwrap();
                }
                let (main, shadow, queue) = (
                    versions(&store, "m:L"),
                    versions(&store, "s:L"),
                    versions(&store, "q:L"),
                );
                assert!(store.read_now("m:L", 10).is_empty(), "{algorithm:?}: released");
                if reuse {
                    assert_eq!(threads.len(), 1, "{algorithm:?}: one thread id for every acquisition");
                    assert_eq!(locker.thread_slots_in_use(), Some(0));
                    assert_eq!(main, 1, "{algorithm:?}: one main cell, rewritten in place");
                } else {
                    assert_eq!(
                        threads.len(),
                        ACQUISITIONS,
                        "{algorithm:?}: a thread id per acquisition"
                    );
                    assert_eq!(locker.thread_slots_in_use(), None);
                    assert_eq!(main, ACQUISITIONS, "{algorithm:?}: a tombstone per acquisition");
                }
                match algorithm {
                    Algorithm::Old => assert_eq!(shadow, if reuse { 1 } else { ACQUISITIONS }, "shadow row"),
                    // The queue row is named by the enqueue time: it still gathers one cell an
                    // acquisition, with or without reuse (not fixed by this setting).
                    Algorithm::Queue => assert_eq!(queue, ACQUISITIONS, "queue row"),
                }
            });
        }
    }
}

#[test]
fn acquisitions_in_flight_never_share_a_thread_id_and_a_dropped_guard_frees_its_slot_after_its_release() {
    on_seed(2, || async {
        let store = Arc::new(InMemoryStore::new(SystemClock));
        let locker = RemoteLocker::new(Arc::clone(&store), SystemClock, settings("a", Algorithm::Queue, true)).unwrap();
        let first = locker.lock("L1").await.unwrap();
        let second = locker.lock("L2").await.unwrap();
        assert_eq!(first.thread_id().as_str(), "a:0");
        assert_eq!(
            second.thread_id().as_str(),
            "a:1",
            "a slot in use is not handed out again"
        );
        assert_eq!(locker.thread_slots_in_use(), Some(2));
        // Dropped unreleased: the release runs in the background, and the slot stays taken
        // until it has run (a later acquisition under the same id could otherwise have its
        // main cell deleted by the earlier one's release).
        drop(first);
        assert_eq!(
            locker.thread_slots_in_use(),
            Some(2),
            "held until the background release ran"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(store.read_now("m:L1", 10).is_empty(), "released in the background");
        assert_eq!(locker.thread_slots_in_use(), Some(1));
        let third = locker.lock("L1").await.unwrap();
        assert_eq!(third.thread_id().as_str(), "a:0", "the lowest free slot again");
        third.release().await.unwrap();
        second.release().await.unwrap();
        assert_eq!(locker.thread_slots_in_use(), Some(0));
    });
}

#[test]
fn a_failed_acquisition_gives_its_slot_back() {
    on_seed(3, || async {
        let store = Arc::new(InMemoryStore::new(SystemClock));
        let holder = RemoteLocker::new(Arc::clone(&store), SystemClock, settings("h", Algorithm::Queue, true)).unwrap();
        let mut waiting = settings("w", Algorithm::Queue, true);
        waiting.max_wait_ms = Some(200);
        let waiter = RemoteLocker::new(Arc::clone(&store), SystemClock, waiting).unwrap();
        let guard = holder.lock("L").await.unwrap();
        assert!(waiter.lock("L").await.is_err(), "timed out behind the holder");
        assert_eq!(waiter.thread_slots_in_use(), Some(0));
        guard.release().await.unwrap();
        let taken = waiter.lock("L").await.unwrap();
        assert_eq!(taken.thread_id().as_str(), "w:0");
        taken.release().await.unwrap();
    });
}
