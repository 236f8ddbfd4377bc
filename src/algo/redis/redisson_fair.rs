//! Redisson's fair lock (`RedissonFairLock`, seed 001): the RLock's hash and watchdog, with a
//! queue that makes waiters take the lock in the order they first asked.
//!
//! The machines are the RLock's ([`super::redisson`]) switched to the fair scripts
//! ([`RedissonAcquire::fair`], [`RedissonRelease::fair`]); what differs is all in the scripts of
//! [`crate::store::redis_keyspace`]:
//!
//! - **F1 acquire.** Beside the hash `key` the lock keeps a list of waiters and a sorted set of
//!   their deadlines. The script first drops waiters at the head of the queue whose deadline
//!   has passed; then takes the lock if it is free and we are first in the queue (or nobody
//!   waits), moving every other waiter's deadline one slot (`threadWaitTime`, 5 s) earlier;
//!   re-enters if ours; otherwise answers how long to wait. A newcomer joins the queue with the
//!   deadline "the last waiter's deadline (or the holder's `PTTL`) plus one slot", and waits
//!   until the one before it would be due.
//! - **F2 wait.** As the RLock's, but on the waiter's own channel
//!   (`redisson_lock__channel:{key}:owner`): the release tells only the first waiter.
//! - **F2 give up.** A `tryLock` whose wait time ran out leaves the queue and moves the waiters
//!   behind it one slot earlier (Redisson's `acquireFailed`). `try_lock` (wait 0) joins the
//!   queue and leaves it at once.
//! - **F3 release.** Drops stale waiters; counts down our hold as the RLock does; when the lock
//!   is free afterwards, publishes the unlock message to the first waiter. It answers 1 both
//!   when it freed our hold and when the lock key was already gone (our lease had run out):
//!   unlike the RLock, the caller cannot learn from the release that it had lost the lock, so
//!   the driver reads it as [`crate::algo::family::Release::GoneEitherWay`].
//! - **Watchdog (D3)** and one-off renewal: the RLock's, on the hash alone.
//!
//! What can go wrong that the RLock does not have:
//!
//! - **Deadlines are on the clients' clocks.** Redisson passes the caller's
//!   `System.currentTimeMillis()` into the scripts. A waiter whose clock runs ahead of the
//!   others' drops them from the queue as stale; one whose clock lags keeps a dead waiter's
//!   place for longer. Safety does not depend on it (the hash decides who holds), fairness
//!   does.
//! - **A waiter that does not ask again within its slot loses its place** (a GC pause, a lost
//!   reply): it is dropped once its deadline passes, and joins at the tail on its next attempt.
//! - **A lost unlock message** costs the first waiter the rest of its wait, and everybody
//!   behind it waits too: the queue makes one waiter's lost message everyone's delay.
//!
//! Fencing: as with the RLock, the owner id does not grow; there is no token a resource could
//! check.

use super::redisson::{RedissonAcquire, RedissonRelease};

/// The channel on which the fair release tells `owner` it is first in line.
pub fn waiter_channel(key: &str, owner: &str) -> String {
    format!("{}:{owner}", super::redisson::channel(key))
}

/// The fair lock's acquire: `once` for `try_lock` (join the queue, leave it at once if the
/// lock is taken).
pub fn acquire(key: &str, owner: &str, once: bool) -> RedissonAcquire {
    RedissonAcquire::fair(key, owner, once)
}

/// The fair lock's release.
pub fn release(lease: super::redisson::RedissonLease) -> RedissonRelease {
    RedissonRelease::fair(lease)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::redis::redisson::{RedissonAcquired, RedissonConfig, RedissonLease, RedissonReleased};
    use crate::algo::{Action, Input, Machine, SleepKind};
    use crate::store::redis_keyspace::{fair_queue_key, RedisCommand, RedisKeyspace, RedisReply, RedisValue};

    /// Run `machine` against `server` until it sleeps until notified (answering `None`) or
    /// ends; every request takes 1 ms of the shared clock.
    fn run<M>(
        server: &mut RedisKeyspace,
        now_us: &mut u64,
        config: &RedissonConfig,
        machine: &mut M,
    ) -> Option<M::Output>
    where
        M: Machine<Config = RedissonConfig, Command = RedisCommand, Reply = RedisReply>,
    {
        let mut input = Input::Start;
        for _ in 0..1000 {
            let step = machine.resume(config, input, *now_us);
            input = match step.action {
                Action::Store(command) => {
                    *now_us += 1000;
                    Input::Reply(server.apply(&command, *now_us / 1000))
                }
                Action::Sleep {
                    kind: SleepKind::UntilNotified,
                    ..
                } => return None,
                Action::Sleep { ms, .. } => {
                    *now_us += ms * 1000;
                    Input::Woke
                }
                Action::Done(output) => return Some(output),
                _ => panic!("an action the fair lock does not take"),
            };
        }
        panic!("no end in 1000 steps")
    }

    fn queue(server: &RedisKeyspace, key: &str) -> Vec<String> {
        match server.entry(&fair_queue_key(key)).map(|entry| &entry.value) {
            Some(RedisValue::List(items)) => items.clone(),
            _ => Vec::new(),
        }
    }

    fn lease_of(output: Option<RedissonAcquired>) -> RedissonLease {
        match output {
            Some(RedissonAcquired::Acquired { lease }) => lease,
            other => panic!("not acquired: {other:?}"),
        }
    }

    #[test]
    fn f1_waiters_take_the_lock_in_the_order_they_first_asked() {
        let config = RedissonConfig::default();
        let mut server = RedisKeyspace::new();
        let mut now_us = 1_000_000;
        let holder = lease_of(run(&mut server, &mut now_us, &config, &mut acquire("L", "a", false)));
        let mut waiters: Vec<RedissonAcquire> = ["b", "c", "d"].iter().map(|w| acquire("L", w, false)).collect();
        for waiter in &mut waiters {
            assert!(run(&mut server, &mut now_us, &config, waiter).is_none(), "waits");
        }
        assert_eq!(queue(&server, "L"), ["b", "c", "d"]);
        // The release frees the lock; the latecomer "d" asks first but is not first in line.
        let released = run(&mut server, &mut now_us, &config, &mut release(holder));
        assert_eq!(released, Some(RedissonReleased::FreeAfterwards));
        let mut order = Vec::new();
        for _ in 0..3 {
            // Each remaining waiter asks again, last in line first: only the head gets it.
            for (name, waiter) in ["d", "c", "b"].iter().zip(waiters.iter_mut().rev()) {
                if order.contains(name) {
                    continue;
                }
                let step = waiter.resume(&config, Input::Woke, now_us);
                let Action::Store(command) = step.action else {
                    panic!("asks again")
                };
                now_us += 1000;
                let reply = server.apply(&command, now_us / 1000);
                let next = waiter.resume(&config, Input::Reply(reply), now_us);
                if let Action::Done(RedissonAcquired::Acquired { lease }) = next.action {
                    order.push(*name);
                    run(&mut server, &mut now_us, &config, &mut release(lease));
                }
            }
        }
        assert_eq!(order, ["b", "c", "d"], "FIFO");
        assert!(server.is_empty(), "nothing left behind: {server:?}");
    }

    #[test]
    fn f2_try_lock_on_a_taken_lock_leaves_no_place_in_the_queue() {
        let config = RedissonConfig::default();
        let mut server = RedisKeyspace::new();
        let mut now_us = 1_000_000;
        lease_of(run(&mut server, &mut now_us, &config, &mut acquire("L", "a", false)));
        let answer = run(&mut server, &mut now_us, &config, &mut acquire("L", "b", true));
        assert_eq!(answer, Some(RedissonAcquired::NotAcquired));
        assert_eq!(queue(&server, "L"), Vec::<String>::new(), "b left the queue");
    }

    #[test]
    fn f2_a_waiter_that_does_not_ask_again_within_its_slot_loses_its_place() {
        let config = RedissonConfig::default();
        let mut server = RedisKeyspace::new();
        let mut now_us = 1_000_000;
        let holder = lease_of(run(&mut server, &mut now_us, &config, &mut acquire("L", "a", false)));
        assert!(run(&mut server, &mut now_us, &config, &mut acquire("L", "b", false)).is_none());
        assert!(run(&mut server, &mut now_us, &config, &mut acquire("L", "c", false)).is_none());
        // b is paused past its deadline (the holder's lease plus one slot); the holder
        // releases late, and the release drops b before telling the first waiter.
        now_us += (config.lease_ms() + config.fair_thread_wait_ms + 1) * 1000;
        // Keep the holder's hash alive as its watchdog would have.
        server.apply(
            &RedisCommand::RedissonRenew {
                key: "L".into(),
                owner: "a".into(),
                lease_ms: config.lease_ms(),
            },
            now_us / 1000 - config.lease_ms() / 2,
        );
        let executed = server.execute(
            &RedisCommand::RedissonFairRelease {
                key: "L".into(),
                owner: holder.owner.clone(),
                lease_ms: config.lease_ms(),
                channel: crate::algo::redis::redisson::channel("L"),
                client_now_ms: now_us / 1000,
            },
            now_us / 1000,
        );
        assert_eq!(executed.reply, RedisReply::Integer(1));
        assert_eq!(queue(&server, "L"), ["c"], "b was dropped as stale");
        assert_eq!(executed.published.len(), 1);
        assert_eq!(
            executed.published[0].channel,
            waiter_channel("L", "c"),
            "c is told, not b"
        );
    }
}
