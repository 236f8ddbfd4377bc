//! `ReplicatedRedis` against a naive account of the replication stream, over random
//! interleavings of commands on the primary, deliveries, failovers, active expiry and clock
//! advances, with the two servers' clocks apart.
//!
//! The test keeps its own history: the list of every batch of effects the primary reported in
//! the current history, and how many of them were delivered. A naive interpreter (plain `if`s
//! over a flat record list, no clock) replays a prefix of it. After every step:
//! - the replica holds exactly the replay of the delivered batches (no batch applied twice, none
//!   out of order, none skipped), and the primary the replay of all of them (the effects say
//!   everything the primary wrote);
//! - after delivering everything, replica and primary hold the same data, and observe the same
//!   key space whenever their clocks read the same;
//! - after a failover, only the delivered batches survive, and the lost count is what was
//!   pending.

use cassalock::store::redis_keyspace::{RedisCommand, RedisEffect, RedisEntry, RedisKeyspace, RedisValue};
use cassalock::store::redis_replication::ReplicatedRedis;
use proptest::prelude::*;

/// A stored record: key, string or counters, expiry instant.
#[derive(Clone, Debug, PartialEq)]
struct Record {
    key: String,
    text: Option<String>,
    counters: Vec<(String, i64)>,
    /// A list or sorted set put whole (the fair lock's queue and deadlines).
    whole: Option<RedisValue>,
    expires_at_ms: Option<u64>,
}

/// Replay batches of effects from nothing, as a replica that judges nothing would.
fn replay(batches: &[Vec<RedisEffect>]) -> Vec<(String, RedisEntry)> {
    let mut records: Vec<Record> = Vec::new();
    for effect in batches.iter().flatten() {
        let position = records.iter().position(|record| record.key == effect.key());
        match effect {
            RedisEffect::Set {
                key,
                value,
                expires_at_ms,
            } => {
                if let Some(i) = position {
                    records.remove(i);
                }
                records.push(Record {
                    key: key.clone(),
                    text: Some(value.clone()),
                    counters: Vec::new(),
                    whole: None,
                    expires_at_ms: *expires_at_ms,
                });
            }
            RedisEffect::HIncrBy { key, field, by } => {
                let i = match position {
                    Some(i) => i,
                    None => {
                        records.push(Record {
                            key: key.clone(),
                            text: None,
                            counters: Vec::new(),
                            whole: None,
                            expires_at_ms: None,
                        });
                        records.len() - 1
                    }
                };
                match records[i].counters.iter_mut().find(|(name, _)| name == field) {
                    Some((_, count)) => *count += by,
                    None => records[i].counters.push((field.clone(), *by)),
                }
            }
            RedisEffect::ExpireAt { expires_at_ms, .. } => {
                if let Some(i) = position {
                    records[i].expires_at_ms = Some(*expires_at_ms);
                }
            }
            RedisEffect::Del { .. } => {
                if let Some(i) = position {
                    records.remove(i);
                }
            }
            RedisEffect::Put { key, value } => {
                if let Some(i) = position {
                    records.remove(i);
                }
                records.push(Record {
                    key: key.clone(),
                    text: None,
                    counters: Vec::new(),
                    whole: Some(value.clone()),
                    expires_at_ms: None,
                });
            }
        }
    }
    let mut entries: Vec<(String, RedisEntry)> = records
        .into_iter()
        .map(|record| {
            let value = match (record.text, record.whole) {
                (Some(text), _) => RedisValue::Text(text),
                (None, Some(whole)) => whole,
                (None, None) => RedisValue::Hash(record.counters.into_iter().collect()),
            };
            (
                record.key,
                RedisEntry {
                    value,
                    expires_at_ms: record.expires_at_ms,
                },
            )
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

fn stored(keyspace: &RedisKeyspace) -> Vec<(String, RedisEntry)> {
    keyspace
        .entries()
        .map(|(key, entry)| (key.to_owned(), entry.clone()))
        .collect()
}

fn observed(keyspace: &RedisKeyspace, now_ms: u64) -> Vec<(String, RedisEntry)> {
    keyspace
        .live_entries(now_ms)
        .map(|(key, entry)| (key.to_owned(), entry.clone()))
        .collect()
}

#[derive(Clone, Debug)]
enum Op {
    Apply(RedisCommand),
    Deliver(usize),
    DeliverAll,
    Failover,
    Purge,
    Advance { by_ms: u64 },
}

fn command() -> impl Strategy<Value = RedisCommand> {
    let key = || prop::sample::select(vec!["k0", "k1"]).prop_map(String::from);
    let owner = || prop::sample::select(vec!["A", "B"]).prop_map(String::from);
    let ttl_ms = || prop_oneof![4 => 1u64..30, 1 => Just(0u64)];
    prop_oneof![
        2 => (key(), owner(), ttl_ms()).prop_map(|(key, value, ttl_ms)| RedisCommand::Set {
            key, value, only_if_absent: true, ttl_ms: Some(ttl_ms)
        }),
        1 => key().prop_map(|key| RedisCommand::Get { key }),
        1 => (key(), owner()).prop_map(|(key, token)| RedisCommand::DeleteIfEquals { key, token }),
        1 => (key(), owner(), ttl_ms()).prop_map(|(key, token, ttl_ms)| RedisCommand::PExpireIfEquals { key, token, ttl_ms }),
        3 => (key(), owner(), ttl_ms()).prop_map(|(key, owner, lease_ms)| RedisCommand::RedissonAcquire { key, owner, lease_ms }),
        1 => (key(), owner(), ttl_ms()).prop_map(|(key, owner, lease_ms)| RedisCommand::RedissonRenew { key, owner, lease_ms }),
        2 => (key(), owner(), ttl_ms()).prop_map(|(key, owner, lease_ms)| RedisCommand::RedissonRelease {
            channel: format!("unlock:{key}"), key, owner, lease_ms
        }),
        3 => (key(), owner(), ttl_ms(), 0u64..5, 995u64..1_030).prop_map(
            |(key, owner, lease_ms, thread_wait_ms, client_now_ms)| RedisCommand::RedissonFairAcquire {
                key, owner, lease_ms, thread_wait_ms, client_now_ms
            }
        ),
        2 => (key(), owner(), ttl_ms(), 995u64..1_030).prop_map(|(key, owner, lease_ms, client_now_ms)| {
            RedisCommand::RedissonFairRelease { channel: format!("unlock:{key}"), key, owner, lease_ms, client_now_ms }
        }),
        1 => (key(), owner(), 0u64..5).prop_map(|(key, owner, thread_wait_ms)| RedisCommand::RedissonFairGiveUp {
            key, owner, thread_wait_ms
        }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => command().prop_map(Op::Apply),
        3 => (0usize..3).prop_map(Op::Deliver),
        1 => Just(Op::DeliverAll),
        1 => Just(Op::Failover),
        1 => Just(Op::Purge),
        3 => prop_oneof![0u64..5, Just(10u64), Just(30)].prop_map(|by_ms| Op::Advance { by_ms }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn replica_holds_exactly_the_delivered_prefix_of_the_primarys_effects(
        clock_offsets_ms in (0u64..40, 0u64..40),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        // Two servers; each clock reads real time plus its own offset. Server 0 starts as the
        // primary; a failover swaps the roles (the old primary comes back as the replica).
        let offsets_ms = [clock_offsets_ms.0, clock_offsets_ms.1];
        let mut primary_server = 0;
        let mut real_ms = 1_000u64;
        let mut pair = ReplicatedRedis::new();
        let mut history: Vec<Vec<RedisEffect>> = Vec::new();
        let mut delivered = 0usize;
        for op in ops {
            let primary_now_ms = real_ms + offsets_ms[primary_server];
            let replica_now_ms = real_ms + offsets_ms[1 - primary_server];
            match op {
                Op::Apply(command) => {
                    let executed = pair.apply(&command, primary_now_ms).expect("far below the stream's cap");
                    if !executed.effects.is_empty() {
                        prop_assert_eq!(pair.pending().last().map(|batch| &batch.effects), Some(&executed.effects));
                        history.push(executed.effects);
                    }
                }
                Op::Deliver(batches) => {
                    let count = pair.deliver(batches);
                    prop_assert_eq!(count, batches.min(history.len() - delivered));
                    delivered += count;
                }
                Op::DeliverAll => {
                    delivered += pair.deliver_all();
                    prop_assert_eq!(delivered, history.len());
                    prop_assert_eq!(pair.replica(), pair.primary());
                    for now_ms in [primary_now_ms, replica_now_ms, real_ms, real_ms + 30] {
                        prop_assert_eq!(observed(pair.replica(), now_ms), observed(pair.primary(), now_ms));
                    }
                }
                Op::Failover => {
                    prop_assert_eq!(pair.failover(), history.len() - delivered);
                    history.truncate(delivered);
                    primary_server = 1 - primary_server;
                }
                Op::Purge => {
                    let effects = pair.purge_expired(primary_now_ms).expect("far below the stream's cap");
                    prop_assert!(pair.primary().entries().all(|(_, entry)| entry.is_live_at(primary_now_ms)));
                    if !effects.is_empty() {
                        history.push(effects);
                    }
                }
                Op::Advance { by_ms } => real_ms += by_ms,
            }
            prop_assert_eq!(pair.replica_offset(), delivered as u64);
            prop_assert_eq!(pair.primary_offset(), history.len() as u64);
            prop_assert_eq!(stored(pair.replica()), replay(&history[..delivered]), "replica after {} of {} batches", delivered, history.len());
            prop_assert_eq!(stored(pair.primary()), replay(&history), "primary");
        }
    }
}
