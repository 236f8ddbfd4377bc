use super::*;
use crate::store::etcd_client::DeletionWatches;
use crate::store::etcd_keyspace::EtcdKeyspace;

/// One etcd server and its watches; each request takes 1 ms of the one clock.
struct Bench {
    keyspace: EtcdKeyspace,
    watches: DeletionWatches,
    now_us: u64,
    /// Requests (counted from 0) whose reply is lost after the server applied them.
    lose_replies: Vec<u64>,
    /// Requests that fail before reaching the server.
    lose_requests: Vec<u64>,
    requests: u64,
}

/// Where a machine stopped.
#[derive(Debug, PartialEq)]
enum Stop<T> {
    Done(T),
    /// Asleep until its watch fires.
    Waiting,
}

impl Bench {
    fn new() -> Self {
        Bench {
            keyspace: EtcdKeyspace::new(),
            watches: DeletionWatches::new(),
            now_us: 1_000_000,
            lose_replies: Vec::new(),
            lose_requests: Vec::new(),
            requests: 0,
        }
    }

    fn answer(&mut self, op: &EtcdOp) -> EtcdOpReply {
        let now_ms = self.now_us / 1000;
        match op {
            EtcdOp::Kv(command) => {
                let executed = self.keyspace.execute(command, now_ms);
                self.watches.fired(&executed.events);
                EtcdOpReply::Kv(executed.reply)
            }
            EtcdOp::WatchDeletion { key, after_revision } => {
                self.watches.watch(&self.keyspace, key, *after_revision, "waiter")
            }
        }
    }

    /// Run `machine` from `input` until it finishes or waits for a watch.
    fn run<M>(&mut self, config: &EtcdMutexConfig, machine: &mut M, mut input: Input<EtcdOpReply>) -> Stop<M::Output>
    where
        M: Machine<Config = EtcdMutexConfig, Command = EtcdOp, Reply = EtcdOpReply>,
    {
        for _ in 0..10_000 {
            let step = machine.resume(config, input, self.now_us);
            let tag = step.tag;
            input = match step.action {
                Action::Store(op) => {
                    self.now_us += 1000;
                    self.requests += 1;
                    let index = self.requests - 1;
                    if self.lose_requests.contains(&index) {
                        Input::Failed(StoreFailure::Timeout)
                    } else {
                        let reply = self.answer(&op);
                        if self.lose_replies.contains(&index) {
                            Input::Failed(StoreFailure::Timeout)
                        } else {
                            Input::Reply(reply)
                        }
                    }
                }
                Action::Sleep {
                    kind: SleepKind::UntilNotified,
                    ..
                } => return Stop::Waiting,
                Action::Sleep { ms, .. } => {
                    self.now_us += ms * 1000;
                    Input::Woke
                }
                Action::Done(output) => return Stop::Done(output),
                _ => panic!("the etcd machines ask for no time or draw ({tag})"),
            };
        }
        panic!("the machine did not finish")
    }

    fn keys(&self) -> Vec<String> {
        self.keyspace.key_values().map(|kv| kv.key.clone()).collect()
    }
}

fn config() -> EtcdMutexConfig {
    EtcdMutexConfig {
        session_ttl_s: 10,
        ..EtcdMutexConfig::default()
    }
}

fn held(stop: Stop<EtcdAcquired>) -> EtcdLease {
    match stop {
        Stop::Done(EtcdAcquired::Acquired(lease)) => lease,
        other => panic!("not held: {other:?}"),
    }
}

#[test]
fn a_lost_try_reply_finds_its_old_place_instead_of_queueing_twice() {
    let mut bench = Bench::new();
    // Request 1 is the try (after the grant): applied, its reply lost.
    bench.lose_replies = vec![1];
    let lease = held(bench.run(&config(), &mut EtcdAcquire::new("L", "a", false), Input::Start));
    assert_eq!(bench.keys(), vec![lease.key.clone()], "one key, ours");
    assert_eq!(lease.revision, bench.keyspace.get(&lease.key).unwrap().create_revision);
    assert_eq!(bench.requests, 3, "grant, try (reply lost), try again (second branch)");
}

/// Found by the family model (store-failure): the grant applied, its reply was lost, the
/// retry (after the backoff) was answered "exists". The server's deadline counts from the
/// first grant's arrival, so the holder's belief must count from that send, not the retry's.
#[test]
fn a_lost_grant_reply_counts_the_lease_from_the_first_grant_not_the_retry() {
    let mut bench = Bench::new();
    let first_send_us = bench.now_us;
    bench.lose_replies = vec![0];
    let lease = held(bench.run(&config(), &mut EtcdAcquire::new("L", "a", false), Input::Start));
    assert_eq!(bench.requests, 3, "grant (reply lost), grant again (exists), try");
    assert_eq!(lease.kept_alive_sent_at_us, first_send_us);
    let server_deadline_ms = bench.keyspace.lease(lease.lease).unwrap().deadline_ms;
    assert!(
        lease.valid_until_us(&config()) / 1000 <= server_deadline_ms,
        "the holder believes until {} ms, the server keeps the lease until {server_deadline_ms} ms",
        lease.valid_until_us(&config()) / 1000
    );
}

#[test]
fn try_lock_on_a_held_lock_revokes_its_session_and_a_revocation_that_never_gets_through_says_so() {
    let mut bench = Bench::new();
    let a = held(bench.run(&config(), &mut EtcdAcquire::new("L", "a", false), Input::Start));
    let outcome = bench.run(&config(), &mut EtcdAcquire::new("L", "b", true), Input::Start);
    assert_eq!(
        outcome,
        Stop::Done(EtcdAcquired::NotAcquired {
            why: EtcdNotAcquired::HeldByAnother,
            key_may_remain: false
        })
    );
    assert_eq!(bench.keys(), vec![a.key.clone()], "b's key went with its session");
    // The revocation (request 2 of c's: grant, try, revoke) and its 3 retries all lost.
    let from = bench.requests;
    bench.lose_requests = (from + 2..from + 6).collect();
    let outcome = bench.run(&config(), &mut EtcdAcquire::new("L", "c", true), Input::Start);
    assert_eq!(
        outcome,
        Stop::Done(EtcdAcquired::NotAcquired {
            why: EtcdNotAcquired::HeldByAnother,
            key_may_remain: true
        })
    );
    assert_eq!(bench.keys().len(), 2, "c's key stays until its lease's TTL");
}

#[test]
fn a_waiter_watches_only_its_predecessor_and_holds_after_the_deletion_with_a_larger_token() {
    let mut bench = Bench::new();
    let a = held(bench.run(&config(), &mut EtcdAcquire::new("L", "a", false), Input::Start));
    let mut b = EtcdAcquire::new("L", "b", false);
    let mut c = EtcdAcquire::new("L", "c", false);
    assert_eq!(bench.run(&config(), &mut b, Input::Start), Stop::Waiting);
    assert_eq!(bench.run(&config(), &mut c, Input::Start), Stop::Waiting);
    assert_eq!(bench.watches.len(), 2, "b watches a's key, c watches b's");
    let released = bench.run(&config(), &mut EtcdRelease::new(a.clone()), Input::Start);
    assert_eq!(released, Stop::Done(EtcdReleased::Released));
    // Only b's watch fired (a's key); c sleeps on.
    assert_eq!(bench.watches.len(), 1);
    let b_lease = held(bench.run(&config(), &mut b, Input::Woke));
    assert!(b_lease.revision > a.revision, "the token grows");
    assert_eq!(
        bench.run(&config(), &mut EtcdRelease::new(b_lease), Input::Start),
        Stop::Done(EtcdReleased::Released)
    );
    let c_lease = held(bench.run(&config(), &mut c, Input::Woke));
    assert_eq!(bench.keys(), vec![c_lease.key], "nothing of a's or b's is left");
}

#[test]
fn etcd_issue_10756_two_acquisitions_sharing_one_session_both_hold() {
    // Two goroutines with one session's mutex: the same lease, so the same key. The second
    // try takes the second branch, reads the existing key as its own place, and holds.
    let mut bench = Bench::new();
    let lease_id = lease_id_of("the one session");
    let first = held(bench.run(
        &config(),
        &mut EtcdAcquire::with_lease("L", lease_id, false),
        Input::Start,
    ));
    let second = held(bench.run(
        &config(),
        &mut EtcdAcquire::with_lease("L", lease_id, false),
        Input::Start,
    ));
    assert_eq!(
        first.token, second.token,
        "T1 violated: two holders with one key and one token"
    );
    // The mutant switch does the same to EtcdLock's acquisitions, whatever their tokens.
    let shared = EtcdMutexConfig {
        mutants: EtcdMutants {
            one_session_for_every_acquisition: true,
            ..EtcdMutants::default()
        },
        ..config()
    };
    let mut other = Bench::new();
    let a = held(other.run(&shared, &mut EtcdAcquire::new("L", "a", false), Input::Start));
    let b = held(other.run(&shared, &mut EtcdAcquire::new("L", "b", false), Input::Start));
    assert_eq!(a.token, b.token, "one_session_for_every_acquisition: two holders");
    // Separate sessions (what EtcdLock does: a lease per acquisition's token) do not.
    let own = bench.run(&config(), &mut EtcdAcquire::new("L", "another", true), Input::Start);
    assert!(matches!(
        own,
        Stop::Done(EtcdAcquired::NotAcquired {
            why: EtcdNotAcquired::HeldByAnother,
            ..
        })
    ));
}

#[test]
fn the_keep_alive_lane_renews_and_is_told_when_the_lease_is_gone() {
    let mut bench = Bench::new();
    let lease = held(bench.run(&config(), &mut EtcdAcquire::new("L", "a", false), Input::Start));
    let mut once = KeepAlive::once(lease.clone());
    match bench.run(&config(), &mut once, Input::Start) {
        Stop::Done(KeptAlive::Renewed(renewed)) => {
            assert!(renewed.kept_alive_sent_at_us > lease.kept_alive_sent_at_us)
        }
        other => panic!("{other:?}"),
    }
    bench
        .keyspace
        .apply(&EtcdCommand::LeaseRevoke { id: lease.lease }, bench.now_us / 1000);
    let mut lane = KeepAlive::lane(lease);
    assert_eq!(
        bench.run(&config(), &mut lane, Input::Start),
        Stop::Done(KeptAlive::Lost)
    );
}
