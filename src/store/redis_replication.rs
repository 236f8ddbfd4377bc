//! Redis's asynchronous replication, as a value type: one primary, one replica, and the effects
//! the primary has applied and acknowledged but the replica has not received yet.
//!
//! A Redis primary answers a client as soon as *it* has applied the command; the command's
//! writes reach the replica later, in order, over the replication link. That gap is the whole
//! story of a Redis lock under failover (the Redis documentation's own argument for Redlock):
//!
//! 1. client A acquires the lock on the primary and gets its OK;
//! 2. the primary dies before the write reaches the replica;
//! 3. the replica is promoted;
//! 4. client B acquires the same lock on the new primary: two holders.
//!
//! The rules, and why each matters for a lock:
//!
//! - **Effects, not commands, travel** ([`RedisEffect`]): the writes a command made, in order,
//!   one batch per command (a script's writes arrive together, as Redis wraps them in
//!   `MULTI`/`EXEC`). A replica applies them without judging anything itself, so a script whose
//!   outcome depended on the primary's clock has the same outcome on the replica.
//! - **Expiries travel as absolute instants of the primary's clock** (Redis replicates a TTL as
//!   `PEXPIREAT`). The replica keeps the instant and judges it by *its own* clock: a replica
//!   whose clock runs ahead sees the lease end earlier in real time, and once promoted it frees
//!   the lock that much earlier.
//! - **A replica never expires a key on its own**: it waits for the primary's `DEL` (the primary
//!   reports one whenever it drops a key it found expired). So after every pending batch is
//!   delivered, the replica's stored data *equals* the primary's, and both observe the same key
//!   space when their clocks read the same.
//! - **Delivery is in order, each batch once** ([`ReplicatedRedis::deliver`]): batch `n + 1`
//!   never reaches the replica before batch `n`; the replication offset counts batches.
//! - **Failover loses what was pending** ([`ReplicatedRedis::failover`]): the replica becomes the
//!   primary with exactly the batches it had received; acknowledged writes still pending are
//!   gone. The old primary is gone too: its place is taken by a fresh replica fully synchronised
//!   from the new primary (as a demoted primary resynchronises, discarding its own extra
//!   writes).
//!
//! A crash of a single server without a replica is [`RedisKeyspace::crash_restart`]: with no
//! persistence the key space comes back empty and every lock on it is free (Kleppmann's case of
//! a Redlock master restarted without fsync).
//!
//! The stream of pending batches is bounded by [`MAX_PENDING_BATCHES`]; a command that would
//! exceed it is refused with [`ReplicationError::BacklogFull`] before it runs (a real primary
//! would drop the replica and force a full resynchronisation; a caller that hits the cap should
//! deliver or fail over).

use std::collections::VecDeque;

use crate::store::redis_keyspace::{Executed, RedisCommand, RedisEffect, RedisKeyspace};

/// The most batches the primary keeps for a replica that has not received them.
pub const MAX_PENDING_BATCHES: usize = 1024;

/// One command's writes, numbered by the replication offset (0 for the first batch of the
/// current history).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct EffectBatch {
    pub offset: u64,
    pub effects: Vec<RedisEffect>,
}

/// Why the replicated pair refused a command.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, thiserror::Error, serde::Serialize, serde::Deserialize,
)]
pub enum ReplicationError {
    /// The replica is [`MAX_PENDING_BATCHES`] batches behind; nothing was applied.
    #[error(
        "the replica is {pending} batches behind, the cap of the replication stream: deliver batches or fail over before applying more (nothing was applied)"
    )]
    BacklogFull { pending: usize },
}

/// A primary, its replica and the batches in flight between them. See the module
/// documentation. The type owns no clock: the primary's clock reading is passed to every call
/// that needs one; the replica's is for whoever reads [`ReplicatedRedis::replica`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReplicatedRedis {
    primary: RedisKeyspace,
    replica: RedisKeyspace,
    pending: VecDeque<EffectBatch>,
    /// Offset of the next batch the replica will apply = batches it has applied.
    replica_offset: u64,
}

impl ReplicatedRedis {
    pub fn new() -> Self {
        Self::default()
    }

    /// Run `command` on the primary at `primary_now_ms`. Its writes, if any, join the stream
    /// as one batch; the reply is what the client is told (the write is acknowledged now, not
    /// when the replica has it).
    pub fn apply(&mut self, command: &RedisCommand, primary_now_ms: u64) -> Result<Executed, ReplicationError> {
        self.check_room()?;
        let executed = self.primary.execute(command, primary_now_ms);
        self.push(executed.effects.clone());
        Ok(executed)
    }

    /// The primary's active expiry at `primary_now_ms`: every expired key deleted, the `DEL`s
    /// sent as one batch. Returns them (empty when nothing had expired).
    pub fn purge_expired(&mut self, primary_now_ms: u64) -> Result<Vec<RedisEffect>, ReplicationError> {
        self.check_room()?;
        let effects = self.primary.purge_expired(primary_now_ms);
        self.push(effects.clone());
        Ok(effects)
    }

    /// Apply the first `batches` pending batches to the replica, in order. Returns how many
    /// were delivered: `batches`, or fewer when fewer were pending.
    pub fn deliver(&mut self, batches: usize) -> usize {
        let delivered = batches.min(self.pending.len());
        for batch in self.pending.drain(..delivered) {
            debug_assert_eq!(
                batch.offset, self.replica_offset,
                "the replica applies batches in order, each once"
            );
            self.replica.apply_effects(&batch.effects);
            self.replica_offset += 1;
        }
        self.debug_check_offsets();
        delivered
    }

    /// Deliver every pending batch. Returns how many.
    pub fn deliver_all(&mut self) -> usize {
        self.deliver(self.pending.len())
    }

    /// Promote the replica: it becomes the primary with what it had received; every pending
    /// batch is lost. A fresh replica, a full copy of the new primary, takes the old primary's
    /// place. Returns how many acknowledged batches were lost.
    pub fn failover(&mut self) -> usize {
        let lost = self.pending.len();
        self.pending.clear();
        self.primary = self.replica.clone();
        self.debug_check_offsets();
        lost
    }

    pub fn primary(&self) -> &RedisKeyspace {
        &self.primary
    }

    /// The replica's data: judge it with the replica's clock ([`RedisKeyspace::live_entry`]).
    pub fn replica(&self) -> &RedisKeyspace {
        &self.replica
    }

    /// The batches applied on the primary and not yet on the replica, oldest first.
    pub fn pending(&self) -> impl Iterator<Item = &EffectBatch> {
        self.pending.iter()
    }

    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Batches the replica has applied in the current history.
    pub fn replica_offset(&self) -> u64 {
        self.replica_offset
    }

    /// Batches the primary has produced in the current history (applied on the replica or
    /// pending). After a failover it restarts from the replica's offset.
    pub fn primary_offset(&self) -> u64 {
        self.replica_offset + self.pending.len() as u64
    }

    fn check_room(&self) -> Result<(), ReplicationError> {
        if self.pending.len() >= MAX_PENDING_BATCHES {
            return Err(ReplicationError::BacklogFull {
                pending: self.pending.len(),
            });
        }
        Ok(())
    }

    fn push(&mut self, effects: Vec<RedisEffect>) {
        if effects.is_empty() {
            return; // a read, or a write that changed nothing: nothing to replicate
        }
        let offset = self.primary_offset();
        self.pending.push_back(EffectBatch { offset, effects });
        self.debug_check_offsets();
    }

    /// Debug builds: pending batches are numbered consecutively from the replica's offset.
    fn debug_check_offsets(&self) {
        debug_assert!(
            self.pending
                .iter()
                .zip(self.replica_offset..)
                .all(|(batch, expected)| batch.offset == expected),
            "pending batches must follow the replica's offset {} consecutively: {:?}",
            self.replica_offset,
            self.pending.iter().map(|batch| batch.offset).collect::<Vec<_>>()
        );
        debug_assert!(self.pending.len() <= MAX_PENDING_BATCHES);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redis_keyspace::RedisReply;

    const LEASE_MS: u64 = 30_000;

    fn acquire(owner: &str) -> RedisCommand {
        RedisCommand::RedissonAcquire {
            key: "lock".into(),
            owner: owner.into(),
            lease_ms: LEASE_MS,
        }
    }

    #[test]
    fn an_acknowledged_acquire_is_lost_on_failover_and_a_second_client_acquires() {
        let mut pair = ReplicatedRedis::new();
        assert_eq!(pair.apply(&acquire("A"), 1_000).unwrap().reply, RedisReply::Nil);
        assert_eq!(pair.failover(), 1, "A's acquire was pending");
        assert_eq!(
            pair.apply(&acquire("B"), 1_001).unwrap().reply,
            RedisReply::Nil,
            "B acquires the lock A was told it holds"
        );
    }

    #[test]
    fn a_delivered_acquire_survives_failover() {
        let mut pair = ReplicatedRedis::new();
        pair.apply(&acquire("A"), 1_000).unwrap();
        assert_eq!(pair.deliver(5), 1);
        assert_eq!(pair.failover(), 0);
        assert_eq!(
            pair.apply(&acquire("B"), 1_001).unwrap().reply,
            RedisReply::Integer(29_999)
        );
    }

    #[test]
    fn a_replica_clock_ahead_ends_the_lease_earlier_in_real_time() {
        // Both clocks read real time plus their offset; the replica's runs 10 s ahead.
        let replica_ahead_ms = 10_000;
        let mut pair = ReplicatedRedis::new();
        let acquired_real_ms = 1_000_000;
        pair.apply(&acquire("A"), acquired_real_ms).unwrap();
        pair.deliver_all();
        // One millisecond of real time after the replica's clock passes the lease's instant.
        let real_ms = acquired_real_ms + LEASE_MS - replica_ahead_ms + 1;
        assert!(
            pair.primary().live_entry("lock", real_ms).is_some(),
            "the primary: 10 s left"
        );
        assert!(
            pair.replica().live_entry("lock", real_ms + replica_ahead_ms).is_none(),
            "the replica, same data, same real instant: expired"
        );
        // Promoted, the replica frees the lock 10 s of real time before the lease's end.
        pair.failover();
        let executed = pair.apply(&acquire("B"), real_ms + replica_ahead_ms).unwrap();
        assert_eq!(executed.reply, RedisReply::Nil);
    }

    #[test]
    fn reads_and_refused_writes_add_no_batch_but_lazy_expiry_does() {
        let mut pair = ReplicatedRedis::new();
        pair.apply(&RedisCommand::set_nx_px("k", "t", 10), 0).unwrap();
        pair.apply(&RedisCommand::set_nx_px("k", "u", 10), 5).unwrap();
        pair.apply(&RedisCommand::Get { key: "k".into() }, 5).unwrap();
        assert_eq!(pair.pending_len(), 1);
        pair.apply(&RedisCommand::Get { key: "k".into() }, 11).unwrap();
        assert_eq!(
            pair.pending().last().map(|batch| batch.effects.clone()),
            Some(vec![RedisEffect::Del { key: "k".into() }])
        );
        assert_eq!(pair.primary_offset(), 2);
    }

    #[test]
    fn the_stream_cap_refuses_a_command_before_it_runs() {
        let mut pair = ReplicatedRedis::new();
        for i in 0..MAX_PENDING_BATCHES {
            pair.apply(&RedisCommand::set_nx_px(format!("k{i}"), "t", 10), 0)
                .unwrap();
        }
        let before = pair.clone();
        assert_eq!(
            pair.apply(&RedisCommand::set_nx_px("one-more", "t", 10), 0),
            Err(ReplicationError::BacklogFull {
                pending: MAX_PENDING_BATCHES
            })
        );
        assert_eq!(pair, before);
        assert_eq!(pair.deliver(1), 1);
        assert!(pair.apply(&RedisCommand::set_nx_px("one-more", "t", 10), 0).is_ok());
    }

    #[test]
    fn deliver_takes_batches_in_order_and_never_more_than_are_pending() {
        let mut pair = ReplicatedRedis::new();
        for i in 0..3 {
            pair.apply(&RedisCommand::set_nx_px(format!("k{i}"), "t", 100), 0)
                .unwrap();
        }
        assert_eq!(pair.deliver(2), 2);
        assert_eq!(pair.replica().len(), 2);
        assert!(pair.replica().entry("k2").is_none());
        assert_eq!(pair.deliver(10), 1);
        assert_eq!(pair.deliver(10), 0);
        assert_eq!(pair.replica(), pair.primary());
        assert_eq!((pair.replica_offset(), pair.primary_offset()), (3, 3));
    }
}
