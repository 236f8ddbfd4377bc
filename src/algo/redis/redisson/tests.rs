use std::collections::VecDeque;

use super::*;
use crate::store::redis_keyspace::RedisKeyspace;

enum Fate {
    Answered,
    LostBefore(StoreFailure),
    LostAfter(StoreFailure),
}

/// A client and one Redis server with the same clock; every request takes 1 ms. A sleep
/// `UntilNotified` ends early when an unlock message is pending for the waiter, unless the
/// bench drops messages.
struct Bench {
    server: RedisKeyspace,
    now_us: u64,
    fates: VecDeque<Fate>,
    tags: Vec<StepTag>,
    /// Unlock messages published and not yet delivered.
    unlocks: usize,
    drop_messages: bool,
    /// At this client time, stop the machine's renewal sleep (the release).
    stop_at_us: Option<u64>,
}

impl Bench {
    fn new() -> Self {
        Bench {
            server: RedisKeyspace::new(),
            now_us: 1_000_000,
            fates: VecDeque::new(),
            tags: Vec::new(),
            unlocks: 0,
            drop_messages: false,
            stop_at_us: None,
        }
    }

    fn now_ms(&self) -> u64 {
        self.now_us / 1000
    }

    fn apply(&mut self, command: &RedisCommand) -> RedisReply {
        let executed = self.server.execute(command, self.now_ms());
        self.unlocks += executed.published.len();
        executed.reply
    }

    fn run<M>(&mut self, config: &RedissonConfig, machine: &mut M) -> M::Output
    where
        M: Machine<Config = RedissonConfig, Command = RedisCommand, Reply = RedisReply>,
    {
        let mut input = Input::Start;
        for _ in 0..100_000 {
            let step = machine.resume(config, input, self.now_us);
            self.tags.push(step.tag);
            input = match step.action {
                Action::Store(command) => {
                    self.now_us += 1000;
                    match self.fates.pop_front().unwrap_or(Fate::Answered) {
                        Fate::Answered => Input::Reply(self.apply(&command)),
                        Fate::LostBefore(failure) => Input::Failed(failure),
                        Fate::LostAfter(failure) => {
                            self.apply(&command);
                            Input::Failed(failure)
                        }
                    }
                }
                Action::Sleep {
                    kind: SleepKind::UntilNotified,
                    ms,
                } if self.unlocks > 0 && !self.drop_messages => {
                    self.unlocks -= 1;
                    self.now_us += (ms * 1000).min(2000);
                    Input::Woke
                }
                Action::Sleep {
                    kind: SleepKind::Renewal,
                    ms,
                } if self.stop_at_us.is_some_and(|stop| stop <= self.now_us + ms * 1000) => {
                    self.now_us = self.stop_at_us.expect("checked").max(self.now_us);
                    Input::StopRequested
                }
                Action::Sleep { ms, .. } => {
                    self.now_us += ms * 1000;
                    Input::Woke
                }
                Action::Done(output) => return output,
                Action::Draw { .. } | Action::ReadTime | Action::StopRenewal { .. } => {
                    panic!("a Redisson machine draws nothing, reads no time source, stops no task")
                }
            };
        }
        panic!("the machine did not finish in 100000 steps")
    }
}

fn lease(output: RedissonAcquired) -> RedissonLease {
    match output {
        RedissonAcquired::Acquired { lease } => lease,
        other => panic!("expected the lock, got {other:?}"),
    }
}

fn hold_count(bench: &mut Bench, owner: &str) -> RedisReply {
    bench.apply(&RedisCommand::HGet {
        key: "lock".into(),
        field: owner.into(),
    })
}

#[test]
fn reentrant_holds_need_as_many_releases() {
    let config = RedissonConfig::default();
    let mut bench = Bench::new();
    let first = lease(bench.run(&config, &mut RedissonAcquire::new("lock", "c1:t1")));
    let _again = lease(bench.run(&config, &mut RedissonAcquire::new("lock", "c1:t1")));
    assert_eq!(hold_count(&mut bench, "c1:t1"), RedisReply::Integer(2));
    let release = |bench: &mut Bench| bench.run(&config, &mut RedissonRelease::new(first.clone()));
    assert_eq!(release(&mut bench), RedissonReleased::StillHeld);
    assert_eq!(release(&mut bench), RedissonReleased::Released);
    assert_eq!(bench.unlocks, 1, "the last release publishes the unlock message");
    assert_eq!(release(&mut bench), RedissonReleased::NotOurs);
}

#[test]
fn a_waiter_wakes_on_the_unlock_message_and_a_lost_message_costs_the_holders_ttl() {
    for (drop_messages, longest_wait_s) in [(false, 3), (true, 31)] {
        let config = RedissonConfig::default();
        let mut bench = Bench::new();
        bench.drop_messages = drop_messages;
        let holder = lease(bench.run(&config, &mut RedissonAcquire::new("lock", "c1:t1")));
        // The waiter's first attempt finds the lock taken; the holder releases meanwhile.
        let mut waiter = RedissonAcquire::new("lock", "c2:t1");
        let first = waiter.resume(&config, Input::Start, bench.now_us);
        assert!(matches!(first.action, Action::Store(_)));
        let reply = bench.apply(match &first.action {
            Action::Store(command) => command,
            _ => unreachable!(),
        });
        assert!(matches!(reply, RedisReply::Integer(ttl) if ttl > 29_000), "{reply:?}");
        assert_eq!(
            bench.run(&config, &mut RedissonRelease::new(holder.clone())),
            RedissonReleased::Released
        );
        let started = bench.now_us;
        let step = waiter.resume(&config, Input::Reply(reply), bench.now_us);
        assert_eq!(step.tag, D2_WAIT);
        // Hand the rest to the bench, starting with the sleep just asked for.
        let slept_ms = match step.action {
            Action::Sleep { ms, .. } => ms,
            _ => panic!("the waiter sleeps"),
        };
        if bench.unlocks > 0 && !drop_messages {
            bench.unlocks -= 1;
            bench.now_us += 2000;
        } else {
            bench.now_us += slept_ms * 1000;
        }
        let output = {
            let mut input = Input::Woke;
            loop {
                let step = waiter.resume(&config, input, bench.now_us);
                match step.action {
                    Action::Store(command) => {
                        bench.now_us += 1000;
                        input = Input::Reply(bench.apply(&command));
                    }
                    Action::Done(output) => break output,
                    _ => panic!("one more attempt finds the lock free"),
                }
            }
        };
        assert!(matches!(output, RedissonAcquired::Acquired { .. }));
        let waited_s = (bench.now_us - started) / 1_000_000;
        assert!(
            waited_s < longest_wait_s,
            "messages dropped: {drop_messages}; waited {waited_s} s"
        );
        if drop_messages {
            assert!(
                waited_s >= 29,
                "without the message the waiter sleeps out the holder's 30 s TTL"
            );
        }
    }
}

#[test]
fn try_lock_gives_up_after_its_wait_time() {
    let config = RedissonConfig {
        wait_ms: Some(2_000),
        lease_ms: Some(10_000),
        ..RedissonConfig::default()
    };
    let mut bench = Bench::new();
    lease(bench.run(&config, &mut RedissonAcquire::new("lock", "c1:t1")));
    let started = bench.now_us;
    assert_eq!(
        bench.run(&config, &mut RedissonAcquire::new("lock", "c2:t1")),
        RedissonAcquired::TimedOut
    );
    assert!(bench.now_us - started <= 2_100_000, "gave up at its wait time");
    assert!(!config.watchdog(), "a lease time given: no watchdog");
}

#[test]
fn an_acquire_whose_reply_was_lost_is_not_counted_twice() {
    let config = RedissonConfig::default();
    let mut bench = Bench::new();
    bench.fates.push_back(Fate::LostAfter(StoreFailure::Timeout));
    let held = lease(bench.run(&config, &mut RedissonAcquire::new("lock", "c1:t1")));
    assert!(bench.tags.contains(&CHECK_OURS));
    assert_eq!(
        hold_count(&mut bench, "c1:t1"),
        RedisReply::Integer(1),
        "one hold, not two"
    );
    assert_eq!(
        bench.run(&config, &mut RedissonRelease::new(held)),
        RedissonReleased::Released,
        "one release frees the lock"
    );
}

#[test]
fn the_watchdog_renews_until_stopped_and_reports_a_lost_lock() {
    let config = RedissonConfig::default();
    let mut bench = Bench::new();
    let held = lease(bench.run(&config, &mut RedissonAcquire::new("lock", "c1:t1")));
    // Renew for 100 s (well past the 30 s lease), then the release stops it.
    bench.stop_at_us = Some(bench.now_us + 100_000_000);
    assert_eq!(
        bench.run(&config, &mut Watchdog::new(held.clone())),
        WatchdogEnd::Stopped
    );
    assert!(
        matches!(hold_count(&mut bench, "c1:t1"), RedisReply::Integer(1)),
        "still held after 100 s"
    );
    // The key deleted under it (a failover lost it): the next renewal says so.
    bench.apply(&RedisCommand::Del { key: "lock".into() });
    bench.stop_at_us = None;
    assert_eq!(bench.run(&config, &mut Watchdog::new(held)), WatchdogEnd::Lost);
}

#[test]
fn a_watchdog_whose_renewals_keep_failing_reports_the_expiry_instead_of_retrying_for_ever() {
    let config = RedissonConfig::default();
    let mut bench = Bench::new();
    let held = lease(bench.run(&config, &mut RedissonAcquire::new("lock", "c1:t1")));
    // The server stops answering: renewals at 10, 20 and 30 s fail.
    for _ in 0..10 {
        bench.fates.push_back(Fate::LostBefore(StoreFailure::Timeout));
    }
    assert_eq!(
        bench.run(&config, &mut Watchdog::new(held.clone())),
        WatchdogEnd::Expired
    );
    assert!(bench.tags.contains(&D3_EXPIRED));
    let since_good_us = bench.now_us - held.set_sent_at_us;
    assert!(
        (30_000_000..=31_000_000).contains(&since_good_us),
        "told at the lease's end, not later: {since_good_us} us"
    );
}

/// redisson/redisson#775: one failed renewal and the mutant's watchdog is gone; the lease runs
/// out while the holder believes it holds. The fixed watchdog rides it out.
#[test]
fn mutant_775_a_watchdog_that_stops_after_one_failed_renewal_loses_the_lock_silently() {
    for mutant in [false, true] {
        let config = RedissonConfig {
            mutants: RedissonMutants {
                watchdog_stops_after_a_failed_renewal: mutant,
                ..RedissonMutants::default()
            },
            ..RedissonConfig::default()
        };
        let mut bench = Bench::new();
        let held = lease(bench.run(&config, &mut RedissonAcquire::new("lock", "c1:t1")));
        bench.fates.push_back(Fate::LostBefore(StoreFailure::Timeout));
        bench.stop_at_us = Some(bench.now_us + 60_000_000);
        let end = bench.run(&config, &mut Watchdog::new(held));
        bench.now_us = bench.now_us.max(1_000_000 + 60_000_000);
        let still_held = matches!(hold_count(&mut bench, "c1:t1"), RedisReply::Integer(1));
        if mutant {
            assert_eq!(end, WatchdogEnd::QuietlyEnded);
            assert!(bench.tags.contains(&MUTANT_775));
            assert!(!still_held, "the mutant's lease ran out after 30 s, unannounced");
        } else {
            assert_eq!(end, WatchdogEnd::Stopped);
            assert!(still_held, "the fixed watchdog renewed at the next interval");
        }
    }
}

#[test]
fn g1_each_fenced_acquisition_gets_a_higher_token_and_a_waiter_sleeps_on_the_holder_s_ttl() {
    let config = RedissonConfig::default();
    let mut bench = Bench::new();
    let first = lease(bench.run(&config, &mut RedissonAcquire::fenced("lock", "c1:t1", false)));
    assert_eq!(first.fence.as_deref(), Some(fence_text(1).as_str()));
    assert!(bench.tags.contains(&G1_ACQUIRED));
    // Taken: try_lock answers at once; lock() waits out the holder's TTL (no unlock message
    // here), then takes the lock the expired hold left, with the next token.
    assert_eq!(
        bench.run(&config, &mut RedissonAcquire::fenced("lock", "c2:t1", true)),
        RedissonAcquired::NotAcquired
    );
    let started = bench.now_us;
    let second = lease(bench.run(&config, &mut RedissonAcquire::fenced("lock", "c2:t1", false)));
    assert!(bench.now_us - started >= 29_000_000, "slept on the holder's TTL");
    assert_eq!(second.fence.as_deref(), Some(fence_text(2).as_str()));
    assert!(second.fence > first.fence, "the later holder's token sorts higher");
    // The RLock's release frees it; the watchdog's renewals keep the token.
    assert_eq!(
        bench.run(&config, &mut RedissonRelease::new(second)),
        RedissonReleased::Released
    );
    let third = lease(bench.run(&config, &mut RedissonAcquire::fenced("lock", "c1:t1", false)));
    bench.stop_at_us = Some(bench.now_us + 40_000_000);
    bench.run(&config, &mut Watchdog::new(third.clone()));
    assert_eq!(third.fence.as_deref(), Some(fence_text(3).as_str()));
    // The RLock's acquire on the same key names no token.
    assert_eq!(
        lease(bench.run(&config, &mut RedissonAcquire::new("other", "c1:t1"))).fence,
        None
    );
}

#[test]
fn g1_a_fenced_acquire_that_may_have_run_gives_up_rather_than_count_a_second_hold() {
    let config = RedissonConfig::default();
    let mut bench = Bench::new();
    bench.fates.push_back(Fate::LostAfter(StoreFailure::Timeout));
    assert_eq!(
        bench.run(&config, &mut RedissonAcquire::fenced("lock", "c1:t1", false)),
        RedissonAcquired::Failed(StoreFailure::Timeout)
    );
    assert!(bench.tags.contains(&G1_UNCERTAIN));
    assert_eq!(
        hold_count(&mut bench, "c1:t1"),
        RedisReply::Integer(1),
        "one hold, left to expire"
    );
    // A request lost before it reached the server cannot have run: the machine tries again.
    let mut bench = Bench::new();
    bench.fates.push_back(Fate::LostBefore(StoreFailure::Unavailable));
    let held = lease(bench.run(&config, &mut RedissonAcquire::fenced("lock", "c1:t1", false)));
    assert_eq!(held.fence.as_deref(), Some(fence_text(1).as_str()));
}
