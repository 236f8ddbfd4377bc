use super::*;

fn set_nx_px(key: &str, value: &str, ttl_ms: u64) -> RedisCommand {
    RedisCommand::set_nx_px(key, value, ttl_ms)
}

fn get(key: &str) -> RedisCommand {
    RedisCommand::Get { key: key.into() }
}

fn pttl(key: &str) -> RedisCommand {
    RedisCommand::PTtl { key: key.into() }
}

fn acquire(owner: &str, lease_ms: u64) -> RedisCommand {
    RedisCommand::RedissonAcquire {
        key: "lock".into(),
        owner: owner.into(),
        lease_ms,
    }
}

fn renew(owner: &str, lease_ms: u64) -> RedisCommand {
    RedisCommand::RedissonRenew {
        key: "lock".into(),
        owner: owner.into(),
        lease_ms,
    }
}

fn release(owner: &str, lease_ms: u64) -> RedisCommand {
    RedisCommand::RedissonRelease {
        key: "lock".into(),
        owner: owner.into(),
        lease_ms,
        channel: "unlock:lock".into(),
    }
}

#[test]
fn set_nx_on_a_live_key_is_nil_and_keeps_value_and_ttl() {
    let mut redis = RedisKeyspace::new();
    assert_eq!(redis.apply(&set_nx_px("k", "a", 100), 1_000), RedisReply::Ok);
    let before = redis.clone();
    assert_eq!(redis.apply(&set_nx_px("k", "b", 500), 1_050), RedisReply::Nil);
    assert_eq!(redis, before);
    assert_eq!(redis.apply(&get("k"), 1_050), RedisReply::Bulk("a".into()));
    assert_eq!(redis.apply(&pttl("k"), 1_050), RedisReply::Integer(50));
}

#[test]
fn a_key_is_live_at_its_expiry_instant_and_free_one_ms_later() {
    let mut redis = RedisKeyspace::new();
    redis.apply(&set_nx_px("k", "a", 100), 1_000);
    assert_eq!(redis.apply(&pttl("k"), 1_100), RedisReply::Integer(0));
    assert_eq!(redis.apply(&set_nx_px("k", "b", 100), 1_100), RedisReply::Nil);
    // One millisecond past the instant the lease is over: SET NX succeeds.
    let executed = redis.execute(&set_nx_px("k", "b", 100), 1_101);
    assert_eq!(executed.reply, RedisReply::Ok);
    assert_eq!(
        executed.effects,
        vec![
            RedisEffect::Del { key: "k".into() },
            RedisEffect::Set {
                key: "k".into(),
                value: "b".into(),
                expires_at_ms: Some(1_201)
            },
        ],
        "the expired key's lazy delete comes first, then the write with its absolute instant"
    );
    assert_eq!(redis.apply(&get("k"), 1_101), RedisReply::Bulk("b".into()));
}

#[test]
fn set_without_keepttl_clears_the_ttl() {
    let mut redis = RedisKeyspace::new();
    redis.apply(&set_nx_px("k", "a", 100), 0);
    let plain_set = RedisCommand::Set {
        key: "k".into(),
        value: "b".into(),
        only_if_absent: false,
        ttl_ms: None,
    };
    assert_eq!(redis.apply(&plain_set, 10), RedisReply::Ok);
    assert_eq!(redis.apply(&pttl("k"), 10), RedisReply::Integer(-1));
    assert_eq!(redis.apply(&get("k"), 1_000_000), RedisReply::Bulk("b".into()));
}

#[test]
fn set_px_0_and_instants_past_the_range_are_errors_that_change_nothing() {
    let mut redis = RedisKeyspace::new();
    assert_eq!(
        redis.apply(&set_nx_px("k", "a", 0), 5),
        RedisReply::Error(RedisError::InvalidExpireTime)
    );
    assert_eq!(
        redis.apply(&set_nx_px("k", "a", MAX_EXPIRES_AT_MS), 5),
        RedisReply::Error(RedisError::InvalidExpireTime)
    );
    assert!(redis.is_empty());
    assert_eq!(
        redis.apply(&set_nx_px("k", "a", MAX_EXPIRES_AT_MS - 5), 5),
        RedisReply::Ok,
        "the last instant in range is accepted"
    );
}

#[test]
fn pexpire_on_a_missing_key_is_0_and_pexpire_0_deletes() {
    let mut redis = RedisKeyspace::new();
    let pexpire = |ttl_ms| RedisCommand::PExpire {
        key: "k".into(),
        ttl_ms,
    };
    assert_eq!(redis.apply(&pexpire(100), 0), RedisReply::Integer(0));
    assert!(redis.is_empty(), "PEXPIRE creates nothing");
    redis.apply(&set_nx_px("k", "a", 100), 0);
    assert_eq!(redis.apply(&pexpire(500), 50), RedisReply::Integer(1));
    assert_eq!(redis.apply(&pttl("k"), 50), RedisReply::Integer(500));
    let executed = redis.execute(&pexpire(0), 60);
    assert_eq!(executed.reply, RedisReply::Integer(1));
    assert_eq!(executed.effects, vec![RedisEffect::Del { key: "k".into() }]);
    assert!(redis.is_empty());
    // A key that expired is missing too.
    redis.apply(&set_nx_px("k", "a", 10), 100);
    assert_eq!(redis.apply(&pexpire(500), 111), RedisReply::Integer(0));
}

#[test]
fn pttl_is_minus_2_missing_minus_1_without_expiry_else_remaining_ms() {
    let mut redis = RedisKeyspace::new();
    assert_eq!(redis.apply(&pttl("k"), 0), RedisReply::Integer(-2));
    redis.apply(
        &RedisCommand::Set {
            key: "k".into(),
            value: "v".into(),
            only_if_absent: false,
            ttl_ms: None,
        },
        0,
    );
    assert_eq!(redis.apply(&pttl("k"), 0), RedisReply::Integer(-1));
    redis.apply(
        &RedisCommand::PExpire {
            key: "k".into(),
            ttl_ms: 300,
        },
        10,
    );
    assert_eq!(redis.apply(&pttl("k"), 110), RedisReply::Integer(200));
    assert_eq!(redis.apply(&pttl("k"), 311), RedisReply::Integer(-2));
}

#[test]
fn get_on_a_hash_is_wrongtype_and_redisson_on_a_string_is_wrongtype() {
    let mut redis = RedisKeyspace::new();
    redis.apply(&acquire("c1:t1", 100), 0);
    assert_eq!(redis.apply(&get("lock"), 1), RedisReply::Error(RedisError::WrongType));
    let mut strings = RedisKeyspace::new();
    strings.apply(&set_nx_px("lock", "token", 100), 0);
    let before = strings.clone();
    for script in [acquire("c1:t1", 100), renew("c1:t1", 100), release("c1:t1", 100)] {
        assert_eq!(strings.apply(&script, 1), RedisReply::Error(RedisError::WrongType));
    }
    assert_eq!(strings, before);
}

#[test]
fn compare_and_delete_deletes_only_the_callers_token() {
    let mut redis = RedisKeyspace::new();
    let release = |token: &str| RedisCommand::DeleteIfEquals {
        key: "k".into(),
        token: token.into(),
    };
    assert_eq!(redis.apply(&release("t1"), 0), RedisReply::Integer(0));
    redis.apply(&set_nx_px("k", "t1", 100), 0);
    let before = redis.clone();
    assert_eq!(redis.apply(&release("t2"), 10), RedisReply::Integer(0));
    assert_eq!(redis, before);
    assert_eq!(redis.apply(&release("t1"), 10), RedisReply::Integer(1));
    assert_eq!(redis.apply(&get("k"), 10), RedisReply::Nil);
    // After its lease ran out the old holder's release finds nothing, even with its token.
    redis.apply(&set_nx_px("k", "t1", 100), 20);
    assert_eq!(redis.apply(&release("t1"), 121), RedisReply::Integer(0));
}

#[test]
fn compare_and_pexpire_extends_only_the_callers_token() {
    let mut redis = RedisKeyspace::new();
    let extend = |token: &str| RedisCommand::PExpireIfEquals {
        key: "k".into(),
        token: token.into(),
        ttl_ms: 1_000,
    };
    redis.apply(&set_nx_px("k", "t1", 100), 0);
    assert_eq!(redis.apply(&extend("t2"), 50), RedisReply::Integer(0));
    assert_eq!(redis.apply(&pttl("k"), 50), RedisReply::Integer(50));
    assert_eq!(redis.apply(&extend("t1"), 50), RedisReply::Integer(1));
    assert_eq!(redis.apply(&pttl("k"), 50), RedisReply::Integer(1_000));
    assert_eq!(
        redis.apply(&extend("t1"), 1_051),
        RedisReply::Integer(0),
        "too late: expired"
    );
}

#[test]
fn redisson_acquire_takes_a_free_lock_and_a_held_one_replies_the_holders_pttl() {
    let mut redis = RedisKeyspace::new();
    assert_eq!(redis.apply(&acquire("c1:t1", 30_000), 0), RedisReply::Nil);
    assert_eq!(
        redis.apply(
            &RedisCommand::HGet {
                key: "lock".into(),
                field: "c1:t1".into()
            },
            0
        ),
        RedisReply::Integer(1)
    );
    let before = redis.clone();
    assert_eq!(
        redis.apply(&acquire("c2:t1", 30_000), 10_000),
        RedisReply::Integer(20_000)
    );
    assert_eq!(redis, before, "a refused acquire writes nothing");
    // The lease runs out without a renewal: the next acquire finds the lock free.
    assert_eq!(redis.apply(&acquire("c2:t1", 30_000), 30_001), RedisReply::Nil);
}

#[test]
fn redisson_reentrant_acquire_twice_needs_two_releases() {
    let mut redis = RedisKeyspace::new();
    assert_eq!(redis.apply(&acquire("c1:t1", 30_000), 0), RedisReply::Nil);
    assert_eq!(redis.apply(&acquire("c1:t1", 30_000), 100), RedisReply::Nil);
    assert_eq!(redis.apply(&pttl("lock"), 100), RedisReply::Integer(30_000));
    let first = redis.execute(&release("c1:t1", 30_000), 5_000);
    assert_eq!(first.reply, RedisReply::Integer(0), "still held once");
    assert!(first.published.is_empty());
    assert_eq!(
        redis.apply(&pttl("lock"), 5_000),
        RedisReply::Integer(30_000),
        "fresh lease"
    );
    assert_eq!(
        redis.apply(&acquire("c2:t1", 30_000), 5_000),
        RedisReply::Integer(30_000)
    );
    let second = redis.execute(&release("c1:t1", 30_000), 6_000);
    assert_eq!(second.reply, RedisReply::Integer(1));
    assert_eq!(
        second.published,
        vec![Published {
            channel: "unlock:lock".into(),
            message: UNLOCK_MESSAGE.into()
        }]
    );
    assert!(redis.is_empty());
    assert_eq!(redis.apply(&acquire("c2:t1", 30_000), 6_000), RedisReply::Nil);
}

#[test]
fn redisson_release_by_a_non_owner_replies_nil_and_changes_nothing() {
    let mut redis = RedisKeyspace::new();
    let on_free = redis.execute(&release("c2:t1", 30_000), 0);
    assert_eq!(on_free.reply, RedisReply::Nil);
    redis.apply(&acquire("c1:t1", 30_000), 0);
    let before = redis.clone();
    let executed = redis.execute(&release("c2:t1", 30_000), 10);
    assert_eq!(executed.reply, RedisReply::Nil);
    assert!(executed.effects.is_empty() && executed.published.is_empty());
    assert_eq!(redis, before);
}

#[test]
fn redisson_renew_resets_the_owners_lease_and_refuses_anyone_else() {
    let mut redis = RedisKeyspace::new();
    redis.apply(&acquire("c1:t1", 30_000), 0);
    assert_eq!(redis.apply(&renew("c2:t1", 30_000), 10_000), RedisReply::Integer(0));
    assert_eq!(redis.apply(&pttl("lock"), 10_000), RedisReply::Integer(20_000));
    assert_eq!(redis.apply(&renew("c1:t1", 30_000), 10_000), RedisReply::Integer(1));
    assert_eq!(redis.apply(&pttl("lock"), 10_000), RedisReply::Integer(30_000));
    // A renewal after the lease ran out is refused: the watchdog learns the lock is lost.
    assert_eq!(redis.apply(&renew("c1:t1", 30_000), 40_001), RedisReply::Integer(0));
}

#[test]
fn redisson_acquire_with_a_zero_lease_deletes_the_key_it_just_wrote() {
    // PEXPIRE with a non-positive timeout deletes; the script still replies "acquired".
    let mut redis = RedisKeyspace::new();
    let executed = redis.execute(&acquire("c1:t1", 0), 7);
    assert_eq!(executed.reply, RedisReply::Nil);
    assert!(redis.is_empty());
    assert_eq!(executed.effects.len(), 2, "{:?}", executed.effects);
}

#[test]
fn a_script_error_keeps_the_writes_made_before_it() {
    // HINCRBY succeeds, then the lease's instant is past the range: no rollback, as in Redis.
    let mut redis = RedisKeyspace::new();
    assert_eq!(
        redis.apply(&acquire("c1:t1", MAX_EXPIRES_AT_MS), 1),
        RedisReply::Error(RedisError::InvalidExpireTime)
    );
    assert_eq!(redis.apply(&pttl("lock"), 1), RedisReply::Integer(-1));
}

#[test]
fn effects_replayed_on_an_empty_key_space_rebuild_the_primary() {
    let mut primary = RedisKeyspace::new();
    let mut replica = RedisKeyspace::new();
    let commands = [
        (acquire("c1:t1", 100), 0),
        (acquire("c1:t1", 100), 10),
        (release("c1:t1", 100), 20),
        (set_nx_px("s", "t", 5), 20),
        (get("s"), 40),
        (acquire("c2:t1", 100), 500),
    ];
    for (command, now_ms) in &commands {
        let executed = primary.execute(command, *now_ms);
        replica.apply_effects(&executed.effects);
        assert_eq!(replica, primary, "after {command:?}");
    }
}

#[test]
fn purge_expired_deletes_exactly_the_expired_keys() {
    let mut redis = RedisKeyspace::new();
    redis.apply(&set_nx_px("a", "1", 10), 0);
    redis.apply(&set_nx_px("b", "1", 100), 0);
    redis.apply(&acquire("c1:t1", 5), 0);
    assert_eq!(redis.purge_expired(10), vec![RedisEffect::Del { key: "lock".into() }]);
    assert_eq!(redis.len(), 2);
    assert_eq!(redis.live_entries(11).count(), 1);
}

#[test]
fn a_restart_without_persistence_frees_every_lock_and_with_fsync_always_none() {
    let mut redis = RedisKeyspace::new();
    redis.apply(&set_nx_px("lock", "t1", 30_000), 0);
    let mut durable = redis.clone();
    durable.crash_restart(Persistence::EveryWrite);
    assert_eq!(durable.apply(&set_nx_px("lock", "t2", 30_000), 1_000), RedisReply::Nil);
    redis.crash_restart(Persistence::None);
    assert_eq!(redis.apply(&set_nx_px("lock", "t2", 30_000), 1_000), RedisReply::Ok);
}

fn fenced_acquire(owner: &str, lease_ms: u64) -> RedisCommand {
    RedisCommand::RedissonFencedAcquire {
        key: "lock".into(),
        token_key: fenced_token_key("lock"),
        owner: owner.into(),
        lease_ms,
    }
}

#[test]
fn the_fenced_acquire_counts_its_token_up_on_every_acquisition_and_re_entry_never_when_taken() {
    let mut redis = RedisKeyspace::new();
    assert_eq!(redis.apply(&fenced_acquire("a", 100), 0), RedisReply::Pair(-1, 1));
    // Re-entry counts the token up too, as Redisson's script does.
    assert_eq!(redis.apply(&fenced_acquire("a", 100), 10), RedisReply::Pair(-1, 2));
    // Taken: the holder's PTTL, and the counter left alone.
    assert_eq!(redis.apply(&fenced_acquire("b", 100), 20), RedisReply::Pair(90, -1));
    assert_eq!(
        redis.apply(&get(&fenced_token_key("lock")), 20),
        RedisReply::Bulk("2".into())
    );
    // The counter has no expiry: it outlives the lease, and the next holder's token is higher.
    assert_eq!(
        redis.apply(&pttl(&fenced_token_key("lock")), 20),
        RedisReply::Integer(-1)
    );
    assert_eq!(redis.apply(&fenced_acquire("b", 100), 111), RedisReply::Pair(-1, 3));
    // The fenced lock's hash is the RLock's: its release frees it.
    assert_eq!(redis.apply(&release("b", 100), 120), RedisReply::Integer(1));
    assert_eq!(redis.apply(&fenced_acquire("c", 100), 130), RedisReply::Pair(-1, 4));
}

#[test]
fn a_restart_without_persistence_starts_the_fenced_token_again() {
    let mut redis = RedisKeyspace::new();
    redis.apply(&fenced_acquire("a", 30_000), 0);
    redis.apply(&release("a", 30_000), 10);
    assert_eq!(redis.apply(&fenced_acquire("b", 30_000), 20), RedisReply::Pair(-1, 2));
    redis.crash_restart(Persistence::None);
    // A token the resource has seen before: what fencing refuses.
    assert_eq!(
        redis.apply(&fenced_acquire("c", 30_000), 1_000),
        RedisReply::Pair(-1, 1)
    );
}

#[test]
fn the_fenced_token_counter_is_read_as_redis_reads_an_integer() {
    for (text, read) in [
        ("0", Some(0)),
        ("41", Some(41)),
        ("-3", Some(-3)),
        ("9223372036854775807", Some(i64::MAX)),
        ("-9223372036854775808", Some(i64::MIN)),
        ("05", None),
        ("+5", None),
        ("-0", None),
        (" 5", None),
        ("", None),
        ("-", None),
        ("9223372036854775808", None),
        ("t1", None),
    ] {
        assert_eq!(redis_integer(text), read, "{text:?}");
    }
    let mut redis = RedisKeyspace::new();
    let token_key = fenced_token_key("lock");
    redis.apply(&RedisCommand::set_nx_px(&token_key, "t1", 1_000), 0);
    assert_eq!(
        redis.apply(&fenced_acquire("a", 100), 0),
        RedisReply::Error(RedisError::NotAnInteger)
    );
    assert_eq!(
        redis.apply(&pttl("lock"), 0),
        RedisReply::Integer(-2),
        "nothing written"
    );
    redis.apply(&RedisCommand::Del { key: token_key.clone() }, 0);
    redis.apply(&RedisCommand::set_nx_px(&token_key, "9223372036854775807", 1_000), 0);
    assert_eq!(
        redis.apply(&fenced_acquire("a", 100), 0),
        RedisReply::Error(RedisError::Overflow)
    );
    // A counter with an expiry keeps it when counted up.
    redis.apply(&RedisCommand::Del { key: token_key.clone() }, 0);
    redis.apply(&RedisCommand::set_nx_px(&token_key, "41", 1_000), 0);
    assert_eq!(redis.apply(&fenced_acquire("a", 100), 400), RedisReply::Pair(-1, 42));
    assert_eq!(redis.apply(&pttl(&token_key), 400), RedisReply::Integer(600));
    // A hash where the counter should be is WRONGTYPE.
    let mut hashed = RedisKeyspace::new();
    hashed.apply(
        &RedisCommand::RedissonAcquire {
            key: token_key.clone(),
            owner: "x".into(),
            lease_ms: 1_000,
        },
        0,
    );
    assert_eq!(
        hashed.apply(&fenced_acquire("a", 100), 0),
        RedisReply::Error(RedisError::WrongType)
    );
}

#[test]
fn the_fenced_acquire_s_effects_rebuild_its_counter_on_a_replica() {
    let mut primary = RedisKeyspace::new();
    let mut replica = RedisKeyspace::new();
    for (command, now_ms) in [
        (fenced_acquire("a", 100), 0),
        (fenced_acquire("a", 100), 10),
        (release("a", 100), 20),
        (release("a", 100), 30),
        (fenced_acquire("b", 100), 40),
    ] {
        let executed = primary.execute(&command, now_ms);
        replica.apply_effects(&executed.effects);
        assert_eq!(replica, primary, "after {command:?}");
    }
}
