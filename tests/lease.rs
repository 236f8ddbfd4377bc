//! Section 5.3 through the real driver: a lease is renewed while held, and vanishes after the
//! TTL once nobody renews it. Runs under madsim with fixed seeds.
#![cfg(madsim)]

use std::sync::Arc;
use std::time::Duration;

use cassalock::algo::lease::LeaseLost;
use cassalock::driver::Algorithm;
use cassalock::{InMemoryStore, LockError, RemoteLocker, Settings, SystemClock};

const TTL_S: u32 = 4;

fn on_seed<F: std::future::Future>(seed: u64, test: impl FnOnce() -> F) -> F::Output {
    madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default()).block_on(test())
}

fn settings(client: &str, algorithm: Algorithm) -> Settings {
    let mut settings = Settings::new(client);
    settings.algorithm = algorithm;
    settings.ttl_s = TTL_S;
    settings.renew_every_ms = 2000;
    settings.poll_ms = 50;
    settings
}

fn sleep_ms(ms: u64) -> impl std::future::Future<Output = ()> {
    tokio::time::sleep(Duration::from_millis(ms))
}

#[test]
fn a_held_lease_is_renewed_past_its_ttl_and_released_at_once() {
    for algorithm in [Algorithm::Queue, Algorithm::Old] {
        on_seed(1, || async move {
            let store = Arc::new(InMemoryStore::new(SystemClock));
            let locker = RemoteLocker::new(Arc::clone(&store), SystemClock, settings("a", algorithm)).unwrap();
            let guard = locker.lock("L").await.unwrap();
            // Hold for three TTLs, checking every half second that our main cell is there.
            for _ in 0..(3 * TTL_S * 2) {
                sleep_ms(500).await;
                assert_eq!(
                    store.read_now("m:L", 10).len(),
                    1,
                    "{algorithm:?}: the main cell outlived its TTL"
                );
            }
            assert!(!guard.is_lost());
            let writes_before = locker.requests().writes;
            guard.release().await.unwrap();
            assert!(store.read_now("m:L", 10).is_empty());
            assert!(store.read_now("q:L", 10).is_empty());
            assert!(
                writes_before > 5,
                "{algorithm:?}: at least 1 acquisition write and 5 renewals in 12 s"
            );
        });
    }
}

#[test]
fn an_abandoned_lease_vanishes_after_the_ttl_and_the_lock_frees() {
    for algorithm in [Algorithm::Queue, Algorithm::Old] {
        on_seed(2, || async move {
            let store = Arc::new(InMemoryStore::new(SystemClock));
            let handle = madsim::runtime::Handle::current();
            // The holder runs on its own node, which is killed while it holds the lock: its
            // renewal task dies with it and nothing releases.
            let holder = handle.create_node().name("holder").build();
            let holder_store = Arc::clone(&store);
            holder.spawn(async move {
                let locker = RemoteLocker::new(holder_store, SystemClock, settings("holder", algorithm)).unwrap();
                let guard = locker.lock("L").await.unwrap();
                std::future::pending::<()>().await;
                drop(guard);
            });
            sleep_ms(3000).await;
            assert_eq!(store.read_now("m:L", 10).len(), 1, "held and renewed");
            handle.kill(holder.id());
            let killed_at = tokio::time::Instant::now();

            let waiter = RemoteLocker::new(Arc::clone(&store), SystemClock, settings("waiter", algorithm)).unwrap();
            let guard = waiter.lock("L").await.unwrap();
            let waited = killed_at.elapsed();
            assert!(
                waited <= Duration::from_secs(u64::from(TTL_S) + 2),
                "{algorithm:?}: freed {waited:?} after the kill"
            );
            assert!(
                waited >= Duration::from_millis(1000),
                "{algorithm:?}: the last renewal was kept for a while ({waited:?})"
            );
            guard.release().await.unwrap();
        });
    }
}

#[test]
fn dropping_a_guard_releases_in_the_background() {
    on_seed(3, || async {
        let store = Arc::new(InMemoryStore::new(SystemClock));
        let locker = RemoteLocker::new(Arc::clone(&store), SystemClock, settings("a", Algorithm::Queue)).unwrap();
        drop(locker.lock("L").await.unwrap());
        sleep_ms(100).await;
        assert!(store.read_now("m:L", 10).is_empty(), "released long before the 4 s TTL");
        assert!(store.read_now("q:L", 10).is_empty());
        let other = RemoteLocker::new(Arc::clone(&store), SystemClock, settings("b", Algorithm::Queue)).unwrap();
        assert!(other.try_lock("L").await.unwrap().is_some());
    });
}

/// Take the lock, have someone delete our main cell (as an expiry during a pause, or on a
/// coordinator whose clock is ahead, would), let renewal run once; then release. Returns what
/// the guard said, the main row after the renewal, and what release said.
fn lose_the_main_cell_while_held(
    mutants: cassalock::algo::Mutants,
) -> (Option<LeaseLost>, Vec<String>, Result<(), LockError>) {
    on_seed(4, || async move {
        let store = Arc::new(InMemoryStore::new(SystemClock));
        let mut settings = settings("a", Algorithm::Queue);
        settings.mutants = mutants;
        let locker = RemoteLocker::new(Arc::clone(&store), SystemClock, settings).unwrap();
        let guard = locker.lock("L").await.unwrap();
        let row = store.snapshot();
        let stamp = row.version("m:L", guard.thread_id().as_str()).unwrap().timestamp_us + 1;
        use cassalock::store::{Store, StoreOp};
        store
            .execute(StoreOp::Delete {
                row: "m:L".into(),
                column: guard.thread_id().as_str().into(),
                timestamp: stamp,
            })
            .await
            .unwrap();
        sleep_ms(2500).await;
        let lost = guard.lost_reason();
        let main_row = store.read_now("m:L", 10).into_iter().map(|cell| cell.column).collect();
        (lost, main_row, guard.release().await.map(|_| ()))
    })
}

#[test]
fn a_lease_lost_while_held_is_reported_by_the_guard_and_by_release() {
    let (lost, main_row, released) = lose_the_main_cell_while_held(Default::default());
    assert_eq!(lost, Some(LeaseLost::MainCellGone));
    assert!(main_row.is_empty(), "renewal did not write the lost cell back");
    assert!(
        matches!(
            released,
            Err(LockError::LeaseLost {
                why: LeaseLost::MainCellGone,
                ..
            })
        ),
        "{released:?}"
    );
}

/// Mutant M2 (docs/mutants.md): renewal skips its check. The test above must fail on it:
/// the guard is never told, and the lost cell is written back.
#[test]
fn m2_renewal_without_its_check_is_caught_the_guard_never_learns() {
    let m2 = cassalock::algo::Mutants {
        m2_renew_without_checking: true,
        ..Default::default()
    };
    let (lost, main_row, released) = lose_the_main_cell_while_held(m2);
    assert_eq!(lost, None, "M2 never reports the loss");
    assert_eq!(main_row.len(), 1, "M2 writes the lost cell back");
    assert!(released.is_ok(), "{released:?}");
}

#[test]
fn bad_input_gets_typed_errors_not_panics() {
    on_seed(5, || async {
        let store = Arc::new(InMemoryStore::new(SystemClock));
        let locker = RemoteLocker::new(Arc::clone(&store), SystemClock, settings("a", Algorithm::Queue)).unwrap();
        assert!(matches!(locker.lock("").await, Err(LockError::Name(_))));
        assert!(matches!(
            locker.try_lock(&"x".repeat(10_000)).await,
            Err(LockError::Name(_))
        ));
        let mut bad = settings("a:1", Algorithm::Queue);
        assert!(matches!(
            RemoteLocker::new(Arc::clone(&store), SystemClock, bad.clone()),
            Err(LockError::Settings(_))
        ));
        bad.client_id = "a".into();
        bad.renew_every_ms = 3000;
        let refused = RemoteLocker::new(Arc::clone(&store), SystemClock, bad).err().unwrap();
        assert!(refused.to_string().contains("twice the renewal interval"), "{refused}");
    });
}

#[test]
fn max_wait_gives_up_with_a_timeout_error() {
    on_seed(6, || async {
        let store = Arc::new(InMemoryStore::new(SystemClock));
        let holder = RemoteLocker::new(Arc::clone(&store), SystemClock, settings("h", Algorithm::Queue)).unwrap();
        let _held = holder.lock("L").await.unwrap();
        let mut impatient = settings("w", Algorithm::Queue);
        impatient.max_wait_ms = Some(700);
        let waiter = RemoteLocker::new(Arc::clone(&store), SystemClock, impatient).unwrap();
        let refused = waiter.lock("L").await.err().unwrap();
        assert!(
            matches!(refused, LockError::TimedOut { waited_ms, .. } if (700..1000).contains(&waited_ms)),
            "{refused}"
        );
        assert_eq!(store.read_now("q:L", 10).len(), 1, "the waiter left the queue");
    });
}
