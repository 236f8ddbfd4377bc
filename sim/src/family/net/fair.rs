//! What the fair lock's scripts did on a server, as the simulator observes it for F-order and
//! F-drop: which script, the queue before and after, who was granted or dropped.

use super::*;

/// Which of the fair lock's scripts (or, for the barging mutant, the RLock's acquire) a server
/// applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairScript {
    Acquire,
    Release,
    GiveUp,
}

/// What one script did, as the server applied it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FairStep {
    /// The server node that applied it.
    pub node: usize,
    pub script: FairScript,
    /// The caller's owner id (the lock() call's token).
    pub owner: String,
    /// An acquire that answered "yours" (nil).
    pub granted: bool,
    /// Waiters the script removed from the queue that neither took the lock nor gave up: the
    /// stale waiters it dropped (the caller too, when it was dropped and queued again at the
    /// tail), in queue order.
    pub dropped: Vec<String>,
}

/// Told of every [`FairStep`], on the server node, at the instant it applied.
pub type FairObserver = Box<dyn Fn(FairStep) + Send + Sync>;

/// The queue and the deadlines of the lock `key`, as they stand in `keyspace`.
pub(super) fn fair_snapshot(keyspace: &RedisKeyspace, key: &str) -> (Vec<String>, BTreeMap<String, i64>) {
    let queue = match keyspace.entry(&fair_queue_key(key)).map(|entry| &entry.value) {
        Some(RedisValue::List(items)) => items.clone(),
        _ => Vec::new(),
    };
    let deadlines = match keyspace.entry(&fair_timeouts_key(key)).map(|entry| &entry.value) {
        Some(RedisValue::SortedSet(scores)) => scores.clone(),
        _ => BTreeMap::new(),
    };
    (queue, deadlines)
}

/// The fair script `command` runs (with its key and caller), if it is one.
pub(super) fn fair_script(command: &RedisCommand) -> Option<(FairScript, &str, &str)> {
    match command {
        RedisCommand::RedissonFairAcquire { key, owner, .. } | RedisCommand::RedissonAcquire { key, owner, .. } => {
            Some((FairScript::Acquire, key, owner))
        }
        RedisCommand::RedissonFairRelease { key, owner, .. } => Some((FairScript::Release, key, owner)),
        RedisCommand::RedissonFairGiveUp { key, owner, .. } => Some((FairScript::GiveUp, key, owner)),
        _ => None,
    }
}

/// What a fair script did, from the queue before and after it and its reply.
pub(super) fn fair_step(
    node: usize,
    script: FairScript,
    owner: &str,
    reply: &RedisReply,
    before: &(Vec<String>, BTreeMap<String, i64>),
    after: &(Vec<String>, BTreeMap<String, i64>),
) -> FairStep {
    let granted = script == FairScript::Acquire && *reply == RedisReply::Nil;
    let left_legitimately = |waiter: &str| waiter == owner && (granted || script == FairScript::GiveUp);
    let mut dropped: Vec<String> = before
        .0
        .iter()
        .filter(|waiter| !after.0.contains(waiter) && !left_legitimately(waiter))
        .cloned()
        .collect();
    // Dropped as stale and queued again at the tail by its own acquire: a new deadline (an
    // acquire that grants nothing moves no one else's).
    let requeued = script == FairScript::Acquire
        && !granted
        && before.0.iter().any(|waiter| waiter == owner)
        && after.0.iter().any(|waiter| waiter == owner)
        && before.1.get(owner) != after.1.get(owner);
    if requeued {
        dropped.push(owner.to_owned());
    }
    FairStep {
        node,
        script,
        owner: owner.to_owned(),
        granted,
        dropped,
    }
}
