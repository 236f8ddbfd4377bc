use super::*;

fn acquire(owner: &str, now_ms: u64) -> RedisCommand {
    RedisCommand::RedissonFairAcquire {
        key: "L".into(),
        owner: owner.into(),
        lease_ms: 1000,
        thread_wait_ms: 5000,
        client_now_ms: now_ms,
    }
}

/// Apply `command` at `now_ms` (server and client clocks agree) and say what it did.
fn step(keyspace: &mut RedisKeyspace, command: RedisCommand, now_ms: u64) -> FairStep {
    let (script, key, owner) = fair_script(&command).expect("a fair script");
    let before = fair_snapshot(keyspace, key);
    let executed = keyspace.execute(&command, now_ms);
    let after = fair_snapshot(keyspace, key);
    fair_step(0, script, owner, &executed.reply, &before, &after)
}

/// a holds (its key expires at 2000); b and c queue (deadlines 7000 and 12000).
fn queued() -> RedisKeyspace {
    let mut keyspace = RedisKeyspace::new();
    assert!(step(&mut keyspace, acquire("a", 1000), 1000).granted);
    for (owner, at) in [("b", 1000), ("c", 1000)] {
        let asked = step(&mut keyspace, acquire(owner, at), at);
        assert!(!asked.granted && asked.dropped.is_empty(), "{asked:?}");
    }
    assert_eq!(fair_snapshot(&keyspace, "L").0, ["b", "c"]);
    keyspace
}

#[test]
fn a_stale_head_removed_by_another_s_script_is_dropped_and_a_grant_or_give_up_is_not() {
    let mut keyspace = queued();
    // a's release after b's deadline: b is dropped, c told.
    let release = RedisCommand::RedissonFairRelease {
        key: "L".into(),
        owner: "a".into(),
        lease_ms: 1000,
        channel: "ch".into(),
        client_now_ms: 7500,
    };
    let released = step(&mut keyspace, release, 7500);
    assert_eq!(released.dropped, ["b"]);
    // c takes the lock: leaving the queue so is no drop.
    let granted = step(&mut keyspace, acquire("c", 7510), 7510);
    assert!(granted.granted && granted.dropped.is_empty(), "{granted:?}");
    // d queues and gives up: no drop either.
    assert!(!step(&mut keyspace, acquire("d", 7520), 7520).granted);
    let gave_up = RedisCommand::RedissonFairGiveUp {
        key: "L".into(),
        owner: "d".into(),
        thread_wait_ms: 5000,
    };
    assert!(step(&mut keyspace, gave_up, 7530).dropped.is_empty());
}

#[test]
fn a_waiter_whose_own_late_acquire_requeues_it_at_the_tail_is_dropped() {
    let mut keyspace = queued();
    // b asks again after its deadline: dropped, then queued again behind c.
    let late = step(&mut keyspace, acquire("b", 7500), 7500);
    assert!(!late.granted);
    assert_eq!(late.dropped, ["b"]);
    assert_eq!(fair_snapshot(&keyspace, "L").0, ["c", "b"]);
    // Asking again within its slot is no drop.
    let again = step(&mut keyspace, acquire("b", 7600), 7600);
    assert!(again.dropped.is_empty(), "{again:?}");
}
