//! The family driver with the library's machines against in-memory servers: what
//! each call of `FamilyLocker` and `FamilyGuard` promises (contract items of docs/contract.md),
//! for `SET NX`, Redlock and Memcached. Runs under madsim with fixed seeds (simulated time).
#![cfg(madsim)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cassalock::algo::family::{MemcachedLock, RedlockLock, Release, SetNxLock};
use cassalock::algo::memcached::MemcachedLockConfig;
use cassalock::algo::redis::redlock::RedlockConfig;
use cassalock::algo::redis::RedisLockConfig;
use cassalock::algo::server_holder::ServerHolder;
use cassalock::driver::family::{FamilyError, FamilyLocker, FamilyStore};
use cassalock::store::family_memory::{InMemoryMemcached, InMemoryRedis, Masters};
use cassalock::store::redis_keyspace::RedisCommand;
use cassalock::SystemClock;

type Redis = Arc<InMemoryRedis<SystemClock>>;

fn on_seed<F: std::future::Future>(seed: u64, test: impl FnOnce() -> F) -> F::Output {
    madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default()).block_on(test())
}

fn sleep_ms(ms: u64) -> impl std::future::Future<Output = ()> {
    tokio::time::sleep(Duration::from_millis(ms))
}

fn redis_config() -> RedisLockConfig {
    RedisLockConfig {
        ttl_ms: 2000,
        retry_every_ms: 20,
        max_wait_ms: None,
        extend_every_ms: None,
        ..RedisLockConfig::default()
    }
}

fn set_nx(store: &Redis, client: &str, config: RedisLockConfig) -> FamilyLocker<SetNxLock, Redis, SystemClock> {
    FamilyLocker::new(Arc::clone(store), SystemClock, config, client, 7, None).unwrap()
}

#[test]
fn t1_set_nx_eight_lockers_never_hold_at_once_and_release_leaves_no_key() {
    on_seed(3, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let inside = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..8 {
            let locker = set_nx(&store, &format!("c{i}"), redis_config());
            let inside = Arc::clone(&inside);
            tasks.push(tokio::spawn(async move {
                for _ in 0..5 {
                    let guard = locker.lock("L").await.unwrap();
                    assert!(guard.is_valid());
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                    sleep_ms(15).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    assert_eq!(guard.release().await.unwrap(), Release::Released);
                }
                locker.acquisitions()
            }));
        }
        let mut total = 0;
        for task in tasks {
            total += task.await.unwrap();
        }
        assert_eq!(total, 40);
        assert!(store.snapshot().is_empty(), "C-release: a released key stayed");
    });
}

#[test]
fn try_lock_says_no_while_held_and_yes_after_release() {
    on_seed(1, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let a = set_nx(&store, "a", redis_config());
        let b = set_nx(&store, "b", redis_config());
        let guard = a.try_lock("L").await.unwrap().expect("free lock");
        assert!(b.try_lock("L").await.unwrap().is_none());
        guard.release().await.unwrap();
        let again = b.try_lock("L").await.unwrap().expect("released lock");
        assert_ne!(again.token(), "", "a token names its holder");
    });
}

#[test]
fn c_lost_an_expired_holder_stops_believing_before_the_next_acquires_and_learns_on_extend() {
    on_seed(2, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let a = set_nx(&store, "a", redis_config());
        let b = set_nx(&store, "b", redis_config());
        let mut first = a.lock("L").await.unwrap();
        let second = b.lock("L").await.unwrap(); // waits for the key to expire
        assert!(!first.is_valid(), "T1-belief: the expired holder still believes");
        assert!(second.is_valid());
        assert_eq!(first.extend().await, Err(FamilyError::LeaseLost { key: "L".into() }));
        assert!(!first.is_valid());
        assert_eq!(first.release().await.unwrap(), Release::WasNotOurs);
        assert!(second.is_valid(), "the stale release left the new holder's key alone");
        assert_eq!(second.release().await.unwrap(), Release::Released);
    });
}

/// T1-server's reading: a locker asks who its server names, by the lock's own rule over what
/// the store reads; the holder's token while it holds, nobody once its key is gone.
#[test]
fn t1_server_a_locker_reads_the_holder_its_server_names() {
    on_seed(4, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let a = set_nx(&store, "a", redis_config());
        let b = set_nx(&store, "b", redis_config());
        assert_eq!(b.holder_on_server("L").await, Some(Ok(ServerHolder::Nobody)));
        let guard = a.lock("L").await.unwrap();
        let named = b.holder_on_server("L").await.unwrap().unwrap();
        assert_eq!(named.token(), Some(guard.token()), "{named:?}");
        assert!(named.gone_at_us().is_some(), "a SET NX key expires: {named:?}");
        // An operator deletes the key: the holder still believes, the server names nobody.
        store.execute(RedisCommand::Del { key: "L".into() }).await.unwrap();
        assert!(guard.is_valid());
        assert_eq!(a.holder_on_server("L").await, Some(Ok(ServerHolder::Nobody)));
        // A server that is down names nobody: a lock on one server is not read then.
        store.set_down(true);
        assert_eq!(a.holder_on_server("L").await, None);
    });
}

/// Redlock's reading: every master's state, a majority naming the holder (a master that is
/// down counts for no other client).
#[test]
fn t1_server_redlock_names_the_holder_of_a_majority_with_a_master_down() {
    on_seed(5, || async {
        let three = masters(3);
        let a = redlock(&three, "a");
        let guard = a.lock("L").await.unwrap();
        three.get(0).unwrap().set_down(true);
        let named = a.holder_on_server("L").await.unwrap().unwrap();
        assert_eq!(named.token(), Some(guard.token()), "{named:?}");
        three.get(0).unwrap().set_down(false);
        for master in 1..3 {
            three
                .get(master)
                .unwrap()
                .execute(RedisCommand::Del { key: "L".into() })
                .await
                .unwrap();
        }
        assert_eq!(a.holder_on_server("L").await, Some(Ok(ServerHolder::Nobody)));
    });
}

#[test]
fn extend_keeps_the_key_past_its_ttl() {
    on_seed(4, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let a = set_nx(&store, "a", redis_config());
        let b = set_nx(&store, "b", redis_config());
        let mut guard = a.lock("L").await.unwrap();
        for _ in 0..4 {
            sleep_ms(1000).await;
            guard.extend().await.unwrap();
            assert!(b.try_lock("L").await.unwrap().is_none(), "the extended key was taken");
        }
        assert!(guard.is_valid());
        assert_eq!(guard.release().await.unwrap(), Release::Released);
    });
}

#[test]
fn lock_gives_up_at_max_wait_and_says_how_long_it_waited() {
    on_seed(5, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let a = set_nx(&store, "a", redis_config());
        let patient = RedisLockConfig {
            max_wait_ms: Some(500),
            ..redis_config()
        };
        let b = set_nx(&store, "b", patient);
        let _held = a.lock("L").await.unwrap();
        match b.lock("L").await {
            Err(FamilyError::TimedOut { waited_ms, .. }) => assert!((500..600).contains(&waited_ms), "{waited_ms}"),
            other => panic!("expected a timeout, got {other:?}"),
        }
    });
}

/// C-wait for Memcached's `add` lock: a waiter told to wait 500 ms gives up within one retry
/// interval of it (its retries every `retry_every_ms` are not cut at the deadline, as SET NX's
/// are not: the overshoot is at most one interval, 100 ms by default).
#[test]
fn memcached_lock_gives_up_within_a_retry_of_max_wait() {
    on_seed(10, || async {
        let server = Arc::new(InMemoryMemcached::new(SystemClock));
        let config = |max_wait_ms| MemcachedLockConfig {
            ttl_s: 5,
            retry_every_ms: 100,
            max_wait_ms,
            ..MemcachedLockConfig::default()
        };
        let locker = |name: &str, max_wait_ms| -> FamilyLocker<MemcachedLock, _, _> {
            FamilyLocker::new(Arc::clone(&server), SystemClock, config(max_wait_ms), name, 1, None).unwrap()
        };
        let _held = locker("a", None).lock("L").await.unwrap();
        let started = tokio::time::Instant::now();
        match locker("b", Some(500)).lock("L").await {
            Err(FamilyError::TimedOut { waited_ms, .. }) => {
                let returned_ms = started.elapsed().as_millis() as u64;
                assert!((500..=600).contains(&waited_ms), "{waited_ms}");
                assert!((500..=600).contains(&returned_ms), "{returned_ms}");
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
    });
}

#[test]
fn a_server_that_stays_down_fails_the_acquisition_and_leaves_nothing() {
    on_seed(6, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        store.set_down(true);
        let a = set_nx(&store, "a", redis_config());
        match a.lock("L").await {
            Err(FamilyError::AcquireFailed { .. }) => {}
            other => panic!("expected a failure, got {other:?}"),
        }
        store.set_down(false);
        assert!(store.snapshot().is_empty());
    });
}

#[test]
fn bad_names_and_settings_are_refused_with_a_reason() {
    on_seed(7, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let a = set_nx(&store, "a", redis_config());
        for key in ["", "has space", &"k".repeat(201)] {
            assert!(
                matches!(a.try_lock(key).await, Err(FamilyError::Name { .. })),
                "{key:?}"
            );
        }
        let refused = |config: RedisLockConfig| {
            FamilyLocker::<SetNxLock, _, _>::new(Arc::clone(&store), SystemClock, config, "a", 1, None).err()
        };
        assert!(matches!(
            refused(RedisLockConfig {
                ttl_ms: 0,
                ..redis_config()
            }),
            Some(FamilyError::Config(_))
        ));
        assert!(matches!(
            refused(RedisLockConfig {
                retry_every_ms: 0,
                ..redis_config()
            }),
            Some(FamilyError::Config(_))
        ));
        assert!(matches!(
            refused(RedisLockConfig {
                extend_every_ms: Some(5000),
                ..redis_config()
            }),
            Some(FamilyError::Config(_))
        ));
        assert!(
            FamilyLocker::<SetNxLock, _, _>::new(Arc::clone(&store), SystemClock, redis_config(), "", 1, None).is_err()
        );
        let memcached = Arc::new(InMemoryMemcached::new(SystemClock));
        for ttl_s in [0, 1, 2_592_001] {
            let config = MemcachedLockConfig {
                ttl_s,
                ..MemcachedLockConfig::default()
            };
            let refused =
                FamilyLocker::<MemcachedLock, _, _>::new(Arc::clone(&memcached), SystemClock, config, "a", 1, None);
            assert!(matches!(refused, Err(FamilyError::Config(_))), "ttl_s {ttl_s}");
        }
    });
}

fn masters(n: usize) -> Arc<Masters<Redis>> {
    Arc::new(Masters::new(
        (0..n).map(|_| Arc::new(InMemoryRedis::new(SystemClock))).collect(),
    ))
}

fn redlock(masters: &Arc<Masters<Redis>>, client: &str) -> FamilyLocker<RedlockLock, Arc<Masters<Redis>>, SystemClock> {
    let config = RedlockConfig {
        masters: masters.len(),
        lock: redis_config(),
        ..RedlockConfig::default()
    };
    FamilyLocker::new(Arc::clone(masters), SystemClock, config, client, 11, None).unwrap()
}

#[test]
fn redlock_takes_a_majority_with_two_of_five_masters_down_and_not_with_three() {
    on_seed(8, || async {
        let five = masters(5);
        for down in 0..2 {
            five.get(down).unwrap().set_down(true);
        }
        let a = redlock(&five, "a");
        let b = redlock(&five, "b");
        let guard = a.lock("L").await.unwrap();
        assert!(guard.is_valid());
        assert!(b.try_lock("L").await.unwrap().is_none(), "T1: a second majority");
        assert_eq!(guard.release().await.unwrap(), Release::Released);
        five.get(2).unwrap().set_down(true);
        assert_eq!(
            a.lock("L").await.err(),
            Some(FamilyError::NoMajority { key: "L".into() })
        );
        for up in 3..5 {
            assert!(
                five.get(up).unwrap().snapshot().is_empty(),
                "a failed attempt left its key on master {up}"
            );
        }
    });
}

#[test]
fn memcached_add_lock_serves_four_lockers_one_at_a_time() {
    on_seed(9, || async {
        let server = Arc::new(InMemoryMemcached::new(SystemClock));
        let inside = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..4 {
            let config = MemcachedLockConfig {
                ttl_s: 5,
                retry_every_ms: 20,
                ..MemcachedLockConfig::default()
            };
            let locker: FamilyLocker<MemcachedLock, _, _> =
                FamilyLocker::new(Arc::clone(&server), SystemClock, config, &format!("m{i}"), i, None).unwrap();
            let inside = Arc::clone(&inside);
            tasks.push(tokio::spawn(async move {
                for _ in 0..3 {
                    let guard = locker.lock("L").await.unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                    sleep_ms(10).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    assert_eq!(guard.release().await.unwrap(), Release::Released);
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert!(server.snapshot().is_empty());
    });
}

// ---- Redisson's RLock: the watchdog as the holder's renewal lane ----

use cassalock::algo::family::{RedissonLock, RenewalEnd};
use cassalock::algo::redis::redisson::{RedissonConfig, RedissonMutants};

fn redisson_config(mutant_775: bool) -> RedissonConfig {
    RedissonConfig {
        watchdog_timeout_ms: 3000, // renewed every 1000 ms
        mutants: RedissonMutants {
            watchdog_stops_after_a_failed_renewal: mutant_775,
            ..RedissonMutants::default()
        },
        ..RedissonConfig::default()
    }
}

fn redisson(store: &Redis, client: &str, config: RedissonConfig) -> FamilyLocker<RedissonLock, Redis, SystemClock> {
    FamilyLocker::new(Arc::clone(store), SystemClock, config, client, 13, None).unwrap()
}

#[test]
fn redisson_watchdog_keeps_the_lock_past_its_lease_until_release() {
    on_seed(10, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let a = redisson(&store, "a", redisson_config(false));
        let b = redisson(&store, "b", redisson_config(false));
        let guard = a.lock("L").await.unwrap();
        // Three leases long: the watchdog renews every third of one.
        for _ in 0..18 {
            sleep_ms(500).await;
            assert!(guard.is_valid(), "the watchdog let the lease run out");
            assert!(b.try_lock("L").await.unwrap().is_none(), "T1: taken while renewed");
        }
        assert_eq!(guard.renewal_ended(), None, "still renewing");
        assert_eq!(guard.release().await.unwrap(), Release::Released);
        assert!(store.snapshot().is_empty(), "released: the hash is gone");
        assert!(b.try_lock("L").await.unwrap().is_some());
    });
}

#[test]
fn c_lost_redisson_watchdog_tells_the_holder_when_renewals_fail_for_a_whole_lease() {
    on_seed(11, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let a = redisson(&store, "a", redisson_config(false));
        let guard = a.lock("L").await.unwrap();
        store.set_down(true);
        sleep_ms(4500).await;
        assert_eq!(guard.renewal_ended(), Some(RenewalEnd::Expired));
        assert!(!guard.is_valid());
        store.set_down(false);
        let b = redisson(&store, "b", redisson_config(false));
        assert!(b.try_lock("L").await.unwrap().is_some(), "the expired hash is free");
    });
}

#[test]
fn redisson_issue_775_one_failed_renewal_stops_the_watchdog_quietly_and_the_lock_expires() {
    for mutant in [false, true] {
        on_seed(12, || async move {
            let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
            let a = redisson(&store, "a", redisson_config(mutant));
            let b = redisson(&store, "b", redisson_config(false));
            let guard = a.lock("L").await.unwrap();
            // A short outage across one renewal (as during a failover).
            sleep_ms(700).await;
            store.set_down(true);
            sleep_ms(600).await;
            store.set_down(false);
            sleep_ms(4000).await;
            let taken_over = b.try_lock("L").await.unwrap().is_some();
            if mutant {
                assert_eq!(guard.renewal_ended(), Some(RenewalEnd::QuietlyEnded));
                assert!(taken_over, "775: the lease ran out under a holder that was not told");
                // Our guard still judges by its clock: it stopped believing at the last
                // renewal's validity (the harm is to users who trust the watchdog instead).
                assert!(!guard.is_valid());
            } else {
                assert_eq!(guard.renewal_ended(), None, "the fixed watchdog tried again");
                assert!(!taken_over, "the fixed watchdog kept the lock");
                assert!(guard.is_valid());
            }
        });
    }
}

#[test]
fn a_dropped_redisson_guard_stops_its_watchdog_and_the_lock_expires() {
    on_seed(13, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let a = redisson(&store, "a", redisson_config(false));
        let b = redisson(&store, "b", redisson_config(false));
        drop(a.lock("L").await.unwrap());
        sleep_ms(4500).await;
        assert!(
            b.try_lock("L").await.unwrap().is_some(),
            "nobody renews a dropped guard's lock"
        );
    });
}

/// How long (simulated ms) `b`'s `lock()` waits after `a` holds for 200 ms and releases, with
/// the unlock message delivered or lost.
async fn redisson_wait_after_release_ms(drop_messages: bool) -> u64 {
    let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
    store.drop_messages(drop_messages);
    let a = redisson(&store, "a", redisson_config(false));
    let b = redisson(&store, "b", redisson_config(false));
    let guard = a.lock("L").await.unwrap();
    let waiter = tokio::spawn(async move {
        let guard = b.lock("L").await.unwrap();
        let at = tokio::time::Instant::now();
        guard.release().await.unwrap();
        at
    });
    sleep_ms(200).await;
    let released_at = tokio::time::Instant::now();
    assert_eq!(guard.release().await.unwrap(), Release::Released);
    let acquired_at = waiter.await.unwrap();
    acquired_at.duration_since(released_at).as_millis() as u64
}

#[test]
fn redisson_waiter_wakes_on_the_unlock_message_and_without_it_sleeps_out_the_holders_ttl() {
    on_seed(15, || async {
        let notified_ms = redisson_wait_after_release_ms(false).await;
        assert!(notified_ms < 50, "woken by the unlock message: took {notified_ms} ms");
        // Lost message: the waiter's sleep is the holder's remaining PTTL (the watchdog keeps it
        // near 3000 ms), so it retries only when that sleep ends.
        let lost_ms = redisson_wait_after_release_ms(true).await;
        eprintln!("waited after the release: {notified_ms} ms notified, {lost_ms} ms with the message lost");
        assert!(
            lost_ms >= 1500,
            "a lost message costs the rest of the sleep: took {lost_ms} ms"
        );
    });
}

use cassalock::algo::family::RedissonFairLock;

fn redisson_fair(store: &Redis, client: &str) -> FamilyLocker<RedissonFairLock, Redis, SystemClock> {
    FamilyLocker::new(Arc::clone(store), SystemClock, redisson_config(false), client, 17, None).unwrap()
}

#[test]
fn t1_fairness_redisson_fair_lock_serves_waiters_in_the_order_they_asked_and_leaves_nothing() {
    on_seed(16, || async {
        let store: Redis = Arc::new(InMemoryRedis::new(SystemClock));
        let first = redisson_fair(&store, "first").lock("L").await.unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let holders = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        // Waiters join 10 ms apart; each holds 30 ms and releases.
        for i in 0..5 {
            let locker = redisson_fair(&store, &format!("w{i}"));
            let (order, holders) = (Arc::clone(&order), Arc::clone(&holders));
            tasks.push(tokio::spawn(async move {
                let guard = locker.lock("L").await.unwrap();
                assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "T1: two holders");
                order.lock().unwrap().push(i);
                sleep_ms(30).await;
                holders.fetch_sub(1, Ordering::SeqCst);
                guard.release().await.unwrap()
            }));
            sleep_ms(10).await;
        }
        // A latecomer that keeps asking with try_lock never jumps the queue.
        let latecomer = redisson_fair(&store, "late");
        assert!(latecomer.try_lock("L").await.unwrap().is_none());
        let started = tokio::time::Instant::now();
        assert_eq!(first.release().await.unwrap(), Release::GoneEitherWay);
        for task in tasks {
            assert_eq!(
                task.await.unwrap(),
                Release::GoneEitherWay,
                "the fair release cannot say more"
            );
        }
        let took_ms = started.elapsed().as_millis();
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4], "first come, first served");
        // Woken by their own unlock messages: about five holds of 30 ms, not a lease each.
        assert!(took_ms < 400, "handoffs took {took_ms} ms");
        assert!(
            store.snapshot().is_empty(),
            "no hash, queue or deadline left: {:?}",
            store.snapshot()
        );
    });
}

use cassalock::algo::family::CuratorLock;
use cassalock::algo::zookeeper::curator_mutex::CuratorConfig;
use cassalock::store::family_memory::{InMemoryZooKeeper, ZkClient};

type ZooKeeper = Arc<InMemoryZooKeeper<SystemClock>>;

fn curator(server: &ZooKeeper, client: &str) -> FamilyLocker<CuratorLock, Arc<ZkClient<SystemClock>>, SystemClock> {
    let connection = Arc::new(ZkClient::connect(Arc::clone(server), 3000));
    FamilyLocker::new(connection, SystemClock, CuratorConfig::default(), client, 19, None).unwrap()
}

#[test]
fn t1_fairness_curator_serves_in_order_with_a_constant_number_of_requests_per_handoff() {
    on_seed(18, || async {
        let server: ZooKeeper = Arc::new(InMemoryZooKeeper::new(SystemClock));
        let first = curator(&server, "first");
        let first_guard = first.lock("L").await.unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let holders = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..5 {
            let locker = curator(&server, &format!("w{i}"));
            let (order, holders) = (Arc::clone(&order), Arc::clone(&holders));
            tasks.push(tokio::spawn(async move {
                let guard = locker.lock("L").await.unwrap();
                assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "T1: two holders");
                order.lock().unwrap().push((i, guard.lease().czxid));
                sleep_ms(30).await;
                holders.fetch_sub(1, Ordering::SeqCst);
                assert_eq!(guard.release().await.unwrap(), Release::Released);
                locker.requests()
            }));
            sleep_ms(10).await;
        }
        assert_eq!(first_guard.release().await.unwrap(), Release::Released);
        let mut requests = Vec::new();
        for task in tasks {
            requests.push(task.await.unwrap());
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(
            order.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4],
            "first come, first served"
        );
        assert!(
            order.windows(2).all(|pair| pair[0].1 < pair[1].1),
            "the czxid token grows: {order:?}"
        );
        // Each waiter: create, list, watch, list again when woken, delete: 5 requests whatever
        // the wait (the thesis's queue lock polls its head every interval instead).
        eprintln!("curator requests per acquisition and release: {requests:?}");
        assert!(
            requests.iter().all(|&n| n <= 6),
            "requests per acquisition: {requests:?}"
        );
        assert_eq!(
            server
                .snapshot()
                .nodes()
                .filter(|(path, _)| path.starts_with("/locks/L/"))
                .count(),
            0,
            "no node left behind"
        );
    });
}

#[test]
fn c_lost_a_curator_holder_whose_session_expires_still_believes_and_learns_only_when_it_asks() {
    on_seed(19, || async {
        let server: ZooKeeper = Arc::new(InMemoryZooKeeper::new(SystemClock));
        let connection = Arc::new(ZkClient::connect(Arc::clone(&server), 3000));
        let a = FamilyLocker::<CuratorLock, _, _>::new(
            Arc::clone(&connection),
            SystemClock,
            CuratorConfig::default(),
            "a",
            19,
            None,
        )
        .unwrap();
        let b = curator(&server, "b");
        let guard = a.lock("L").await.unwrap();
        // a's process stops beating (a pause); its session expires after 3 s.
        connection.stop_heartbeat();
        let b_guard = b.lock("L").await.unwrap();
        assert!(guard.is_valid(), "the recipe gives a holder no bound: a still believes");
        assert!(
            b_guard.lease().czxid > guard.lease().czxid,
            "a fencing resource would refuse a's writes"
        );
        let mut guard = guard;
        assert!(
            matches!(guard.extend().await, Err(FamilyError::LeaseLost { .. })),
            "asking tells it"
        );
    });
}

use cassalock::algo::etcd::mutex::{lease_id_of, EtcdMutants, EtcdMutexConfig};
use cassalock::algo::family::EtcdLock;
use cassalock::driver::Clock;
use cassalock::store::family_memory::{EtcdClient, InMemoryEtcd};

/// The etcd leader's clock: the simulated clock, plus a jump the test can make.
#[derive(Default)]
struct LeaderClock {
    ahead_us: std::sync::atomic::AtomicU64,
}

impl Clock for LeaderClock {
    fn now_us(&self) -> u64 {
        SystemClock.now_us() + self.ahead_us.load(Ordering::SeqCst)
    }

    fn sleep_ms(&self, ms: u64) -> impl std::future::Future<Output = ()> + Send {
        SystemClock.sleep_ms(ms)
    }
}

type Etcd = Arc<InMemoryEtcd<Arc<LeaderClock>>>;
type EtcdLocker = FamilyLocker<EtcdLock, Arc<EtcdClient<Arc<LeaderClock>>>, SystemClock>;

fn etcd_server() -> (Etcd, Arc<LeaderClock>) {
    let clock = Arc::new(LeaderClock::default());
    (Arc::new(InMemoryEtcd::new(Arc::clone(&clock))), clock)
}

fn etcd_config(mutant_11456: bool) -> EtcdMutexConfig {
    EtcdMutexConfig {
        session_ttl_s: 2,
        mutants: EtcdMutants {
            no_own_key_check_after_wait: mutant_11456,
            ..EtcdMutants::default()
        },
        ..EtcdMutexConfig::default()
    }
}

fn etcd(server: &Etcd, client: &str, config: EtcdMutexConfig) -> EtcdLocker {
    let connection = Arc::new(EtcdClient::connect(Arc::clone(server)));
    FamilyLocker::new(connection, SystemClock, config, client, 23, None).unwrap()
}

fn etcd_keys_under(server: &Etcd, prefix: &str) -> usize {
    server
        .snapshot()
        .key_values()
        .filter(|kv| kv.key.starts_with(prefix))
        .count()
}

#[test]
fn t1_fairness_etcd_serves_in_order_with_a_constant_number_of_requests_per_handoff() {
    on_seed(21, || async {
        let (server, _) = etcd_server();
        let first = etcd(&server, "first", etcd_config(false));
        let first_guard = first.lock("L").await.unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let holders = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..5 {
            let locker = etcd(&server, &format!("w{i}"), etcd_config(false));
            let (order, holders) = (Arc::clone(&order), Arc::clone(&holders));
            tasks.push(tokio::spawn(async move {
                let guard = locker.lock("L").await.unwrap();
                assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "T1: two holders");
                order.lock().unwrap().push((i, guard.lease().revision));
                sleep_ms(30).await;
                holders.fetch_sub(1, Ordering::SeqCst);
                assert_eq!(guard.release().await.unwrap(), Release::Released);
                locker.requests()
            }));
            sleep_ms(10).await;
        }
        assert_eq!(first_guard.release().await.unwrap(), Release::Released);
        let mut requests = Vec::new();
        for task in tasks {
            requests.push(task.await.unwrap());
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(
            order.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4],
            "first come, first served"
        );
        assert!(
            order.windows(2).all(|pair| pair[0].1 < pair[1].1),
            "the create-revision token grows: {order:?}"
        );
        // Each waiter: grant, try, read the predecessor, watch it, read again when told, read
        // its own key; release: delete, revoke. 8 requests whatever the wait.
        eprintln!("etcd requests per acquisition and release: {requests:?}");
        assert!(
            requests.iter().all(|&n| n <= 8),
            "requests per acquisition: {requests:?}"
        );
        assert_eq!(etcd_keys_under(&server, "/locks/L/"), 0, "no key left behind");
        assert_eq!(server.snapshot().leases().count(), 0, "every session closed");
    });
}

#[test]
fn etcd_keep_alive_holds_the_lock_past_the_session_ttl_and_try_lock_leaves_nothing() {
    on_seed(22, || async {
        let (server, _) = etcd_server();
        let a = etcd(&server, "a", etcd_config(false));
        let b = etcd(&server, "b", etcd_config(false));
        let guard = a.lock("L").await.unwrap();
        sleep_ms(5_000).await;
        assert!(guard.is_valid(), "kept alive every 667 ms through 5 s of a 2 s TTL");
        assert!(b.try_lock("L").await.unwrap().is_none(), "held: try_lock says no");
        assert_eq!(
            etcd_keys_under(&server, "/locks/L/"),
            1,
            "try_lock's key went with its session"
        );
        assert_eq!(server.snapshot().leases().count(), 1, "try_lock's session revoked");
        assert_eq!(guard.release().await.unwrap(), Release::Released);
        let guard = b.try_lock("L").await.unwrap().expect("free after the release");
        assert_eq!(guard.release().await.unwrap(), Release::Released);
    });
}

/// A waiter queues behind a holder; the leader's clock jumps past both sessions' TTLs, its
/// lessor revokes them, and the holder's key's deletion wakes the waiter. Then a third
/// contender asks. Returns (the waiter's lock(), whether the third holds while the waiter
/// still believes).
async fn etcd_waiter_after_its_session_expired(mutant_11456: bool) -> (bool, bool) {
    let (server, leader_clock) = etcd_server();
    let a = etcd(&server, "a", etcd_config(false));
    let b = etcd(&server, "b", etcd_config(mutant_11456));
    let c = etcd(&server, "c", etcd_config(false));
    let a_guard = a.lock("L").await.unwrap();
    let waiter = tokio::spawn(async move { b.lock("L").await });
    sleep_ms(100).await;
    assert_eq!(etcd_keys_under(&server, "/locks/L/"), 2, "a holds, b waits");
    leader_clock.ahead_us.store(2_500_000, Ordering::SeqCst);
    server.expire_leases();
    assert_eq!(
        etcd_keys_under(&server, "/locks/L/"),
        0,
        "both sessions expired on the leader"
    );
    let b_result = waiter.await.unwrap();
    let b_acquired = b_result.is_ok();
    let c_guard = c.lock("L").await.unwrap();
    let both = b_result.as_ref().is_ok_and(|g| g.is_valid()) && c_guard.is_valid();
    drop(a_guard);
    (b_acquired, both)
}

#[test]
fn etcd_issue_11456_a_waiter_whose_session_expired_is_told_and_the_mutant_holds_beside_the_next() {
    on_seed(23, || async {
        let (acquired, two_holders) = etcd_waiter_after_its_session_expired(false).await;
        assert!(
            !acquired,
            "E4: the waiter reads its own key, finds it gone: session expired"
        );
        assert!(!two_holders);
        let (acquired, two_holders) = etcd_waiter_after_its_session_expired(true).await;
        assert!(acquired, "the 3.4.3 behaviour: acquired with no key standing for it");
        assert!(
            two_holders,
            "T1: the next contender's key is the lowest: two believe they hold"
        );
    });
}

#[test]
fn etcd_lease_ids_differ_per_token_and_are_positive() {
    let ids: std::collections::BTreeSet<i64> = (0..10_000).map(|i| lease_id_of(&format!("t{i}"))).collect();
    assert_eq!(ids.len(), 10_000);
    assert!(ids.iter().all(|&id| id > 0));
}
