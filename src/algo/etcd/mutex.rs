//! etcd's mutex (`clientv3/concurrency`: a `Session`, then `NewMutex(session, prefix).Lock`), as
//! sans-IO machines. etcd's own lock service (`v3lock`) runs the same steps on the server.
//!
//! A contender owns a *session*: a lease that its client keeps alive in the background. Under
//! the lock's prefix it puts one key named after that lease, and the keys' `create_revision`s
//! order the contenders:
//!
//! - **E0 session**: grant a lease of `session_ttl_s` (etcd's default is 60 s). Here each
//!   acquisition has a session of its own, with an id drawn from its token, as a program that
//!   calls `NewSession` per lock does; sharing one session between two acquisitions is
//!   etcd-io/etcd#10756, below.
//! - **E1 try**: one transaction, `if create_revision(our key) = 0 then put(our key, lease),
//!   read the first-created key under the prefix; else read our key, read the first-created`.
//!   Our revision is the put's (the transaction's header), or our existing key's create
//!   revision. A repeated try (after a lost reply) takes the second branch and finds its old
//!   place instead of queueing twice. First-created is ours: held.
//! - **E2 try_lock**: the lock is held by another: delete our key and say so.
//! - **E3 wait for deletes**: read the last key created before ours; none: go to E4. Otherwise
//!   watch that key for its deletion from the revision of the read (one waiter woken per
//!   handoff: no herd), sleep until told, and read again.
//! - **E4 check**: read our own key. Still there: held, our create revision the fencing token
//!   (revisions only grow, and a re-created key gets a new one). Gone: the session's lease
//!   expired while we waited (its revocation deleted the key): "session expired".
//! - **E5 release**: delete our key (`Unlock`), then revoke the session's lease (`Close`).
//!
//! The session's keep-alive runs every third of the TTL, as etcd's client sends it: while the
//! acquisition waits, the waiting step wakes for it (its sleep is bounded by the period); once
//! held, [`KeepAlive`] is the holder's renewal lane. A keep-alive answered "lease not found"
//! means the session is over: the holder is told it lost the lock. etcd's client also closes the
//! session when no keep-alive got through for a whole TTL; [`EtcdLease::valid_until_us`] is that
//! bound, counted from the last keep-alive that got through (its send).
//!
//! Giving up (try_lock, a wait that runs out, a store that keeps failing) revokes the session's
//! lease, which deletes our key in the same revision: nothing of ours stays to make the next
//! contender wait, unless the revocation itself never got through (then the key goes with the
//! lease's TTL, and the outcome says so).
//!
//! Known bugs as switches ([`EtcdMutants`]):
//! - etcd-io/etcd#11456 (Jepsen, etcd 3.4.3): E4 was missing. A waiter whose lease expired
//!   during the wait had its key deleted by the revocation; the wait ended as if its
//!   predecessors had gone, and the lock service answered "acquired" with no key standing for
//!   it. A later contender's key is then the lowest and it acquires too.

use super::super::retry::Uncertainty;
use super::super::{Action, Input, LockConfigError, Machine, RetryPolicy, SleepKind, Source, Step, StepTag};
use crate::store::etcd_client::{EtcdOp, EtcdOpReply};
use crate::store::etcd_keyspace::{
    Compare, CompareResult, EtcdCommand, EtcdError, EtcdReply, EtcdResponse, LeaseId, RangeRequest, Revision, TxnOp,
    TxnRequest, MAX_LEASE_TTL_S,
};
use crate::store::StoreFailure;

const E0_SESSION: StepTag = StepTag::new(Source::Etcd, 0, "NewSession: grant the session's lease");
const E1_TRY: StepTag = StepTag::new(
    Source::Etcd,
    1,
    "txn: if our key is new, put it with the lease; read the first created under the prefix",
);
const E1_HELD: StepTag = StepTag::new(Source::Etcd, 1, "the first created is ours: held");
const E2_HELD_BY_ANOTHER: StepTag = StepTag::new(Source::Etcd, 2, "try_lock: held by another, give up");
const E3_PREDECESSOR: StepTag = StepTag::new(Source::Etcd, 3, "read the last key created before ours");
const E3_WATCH: StepTag = StepTag::new(Source::Etcd, 3, "watch that key for its deletion");
const E3_WAIT: StepTag = StepTag::new(Source::Etcd, 3, "wait for the deletion");
const E3_KEEP_ALIVE: StepTag = StepTag::new(Source::Etcd, 3, "the session's keep-alive, while we wait");
const E4_CHECK: StepTag = StepTag::new(Source::Etcd, 4, "nobody before us: is our key still there?");
const E4_HELD: StepTag = StepTag::new(Source::Etcd, 4, "our key is there and first: held");
const E4_EXPIRED: StepTag = StepTag::new(Source::Etcd, 4, "our key is gone: the session expired while we waited");
const MUTANT_11456: StepTag = StepTag::new(
    Source::Ours,
    0,
    "MUTANT etcd 11456: nobody before us, held without reading our key",
);
const GIVE_UP: StepTag = StepTag::new(Source::Etcd, 0, "give up: revoke the session's lease (deletes our key)");
const GAVE_UP: StepTag = StepTag::new(Source::Etcd, 0, "gave up without the lock");
const E5_RELEASE: StepTag = StepTag::new(Source::Etcd, 5, "Unlock: delete our key");
const E5_CLOSE: StepTag = StepTag::new(Source::Etcd, 5, "Close: revoke the session's lease");
const E5_DONE: StepTag = StepTag::new(Source::Etcd, 5, "released, or found our key gone");
const KA_WAIT: StepTag = StepTag::new(Source::Etcd, 0, "keep-alive: wait a third of the TTL");
const KA_SEND: StepTag = StepTag::new(Source::Etcd, 0, "keep-alive: renew the session's lease");
const KA_STOPPED: StepTag = StepTag::new(Source::Etcd, 0, "keep-alive: stopped by the release");
const KA_LOST: StepTag = StepTag::new(Source::Etcd, 0, "keep-alive: lease not found, the session is over");
const KA_EXPIRED: StepTag = StepTag::new(
    Source::Etcd,
    0,
    "keep-alive: nothing got through for a whole TTL, the session is over",
);
const RETRY_AFTER_FAILURE: StepTag = StepTag::new(Source::Ours, 0, "the request failed: wait, then try again");

/// Known bugs of etcd's lock, off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EtcdMutants {
    /// etcd-io/etcd#11456: no E4; after the wait the waiter holds without reading its own key.
    pub no_own_key_check_after_wait: bool,
    /// etcd-io/etcd#10756: the program's goroutines lock through one session, so every
    /// acquisition of the lock has the same lease and so the same key; the second finds "its"
    /// key already there, first in line, and holds beside the first.
    pub one_session_for_every_acquisition: bool,
}

/// What the etcd machines read.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EtcdMutexConfig {
    /// The session's lease TTL, whole seconds (etcd: 60 by default; the server raises it to
    /// its minimum, 2 s).
    pub session_ttl_s: i64,
    /// `Lock(ctx)` with a deadline: give up after this long; `None`: wait for ever.
    pub wait_ms: Option<u64>,
    pub retry: RetryPolicy,
    pub mutants: EtcdMutants,
}

impl Default for EtcdMutexConfig {
    fn default() -> Self {
        EtcdMutexConfig {
            session_ttl_s: 60,
            wait_ms: None,
            retry: RetryPolicy::default(),
            mutants: EtcdMutants::default(),
        }
    }
}

impl AsRef<RetryPolicy> for EtcdMutexConfig {
    fn as_ref(&self) -> &RetryPolicy {
        &self.retry
    }
}

impl EtcdMutexConfig {
    pub fn ttl_us(&self) -> u64 {
        u64::try_from(self.session_ttl_s).unwrap_or(0).saturating_mul(1_000_000)
    }

    /// etcd's client sends a keep-alive every third of the TTL.
    pub fn keep_alive_every_ms(&self) -> u64 {
        (self.ttl_us() / 3_000).max(1)
    }

    /// Settings the lock cannot work with, said in a sentence.
    pub fn check(&self) -> Result<(), LockConfigError> {
        if !(1..=MAX_LEASE_TTL_S).contains(&self.session_ttl_s) {
            return Err(LockConfigError(format!(
                "session_ttl_s {}: give 1 to {MAX_LEASE_TTL_S} seconds",
                self.session_ttl_s
            )));
        }
        Ok(())
    }
}

/// Where every lock's keys live.
pub const LOCKS_PREFIX: &str = "/locks/";

/// The prefix of lock `key`'s contenders: `/locks/{key}/`.
pub fn prefix_of(key: &str) -> String {
    format!("{LOCKS_PREFIX}{key}/")
}

/// The session's lease id drawn from an acquisition's token (FNV-1a, positive, never 0): a
/// session of its own per acquisition.
pub fn lease_id_of(token: &str) -> LeaseId {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in token.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let positive = i64::try_from(hash >> 1).expect("63 bits fit");
    positive.max(1)
}

/// What an etcd holder owns.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EtcdLease {
    /// Our key: `{prefix}{lease id in hex}`, as etcd names it.
    pub key: String,
    pub lease: LeaseId,
    /// Our key's create revision: the fencing token.
    pub revision: Revision,
    /// The revision as the resource sees it (20 digits, so that text order is number order).
    pub token: String,
    /// When the last keep-alive (or the grant) that got through was sent, client time.
    pub kept_alive_sent_at_us: u64,
}

impl EtcdLease {
    /// etcd's client gives the session up when nothing got through for a whole TTL.
    pub fn valid_until_us(&self, config: &EtcdMutexConfig) -> u64 {
        self.kept_alive_sent_at_us.saturating_add(config.ttl_us())
    }
}

/// Why an acquisition ended without the lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EtcdNotAcquired {
    /// `try_lock` found another holder.
    HeldByAnother,
    TimedOut,
    /// The session's lease was gone (it expired while we waited): our key went with it.
    SessionExpired,
    /// The store kept failing.
    Failed(StoreFailure),
}

/// How an acquisition ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EtcdAcquired {
    Acquired(EtcdLease),
    /// `key_may_remain`: the revocation never got through, our key stays until the lease's TTL.
    NotAcquired {
        why: EtcdNotAcquired,
        key_may_remain: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum State {
    Idle,
    Granting {
        sent_at_us: u64,
    },
    Trying {
        sent_at_us: u64,
    },
    ReadingPredecessor,
    Watching,
    Waiting,
    KeepingAlive {
        sent_at_us: u64,
    },
    Checking,
    Backoff(Box<State>),
    /// Revoking the session's lease, then ending with this; the revocations left to try.
    GivingUp {
        why: EtcdNotAcquired,
        tries_left: u8,
    },
    Finished,
}

/// E0–E4: take the lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EtcdAcquire {
    prefix: String,
    key: String,
    lease: LeaseId,
    once: bool,
    state: State,
    deadline_us: Option<u64>,
    /// Our key's create revision, once known.
    revision: Option<Revision>,
    /// The send time of the last grant or keep-alive that got through.
    kept_alive_sent_at_us: u64,
    /// The send time of our first grant: a later grant answered "exists" found one of the
    /// earlier ones applied, at the earliest this one.
    first_grant_sent_at_us: Option<u64>,
    /// When the waiting step sends the next keep-alive.
    keep_alive_due_us: u64,
    uncertainty: Uncertainty,
}

impl EtcdAcquire {
    /// E1's lease grant answered: on to the transaction, the lease counted from the send that applied.
    fn granting_answered(
        &mut self,
        config: &EtcdMutexConfig,
        sent_at_us: u64,
        reply: EtcdReply,
        now_us: u64,
    ) -> Step<EtcdAcquired, EtcdOp> {
        use EtcdOpReply as R;
        match reply.response {
            // Granted now: this send is the one that applied.
            EtcdResponse::LeaseGrant { .. } => {
                self.uncertainty.answered();
                self.kept_alive(config, sent_at_us);
                self.try_acquire(now_us)
            }
            // A lease id is unique per acquisition: "exists" is one of our own earlier
            // grants, whose reply was lost; it may have applied as early as the first send,
            // so the lease counts from there (counted from this send, the holder would
            // believe past the server's deadline: found by the model, store-failure).
            EtcdResponse::Error(EtcdError::LeaseExists) => {
                self.uncertainty.answered();
                let first = self.first_grant_sent_at_us.unwrap_or(sent_at_us);
                debug_assert!(first <= sent_at_us, "the first grant was sent first");
                self.kept_alive(config, first);
                self.try_acquire(now_us)
            }
            _ => self.unexpected(config, &R::Kv(reply), &State::Granting { sent_at_us }),
        }
    }

    /// E2's read of the key before ours answered: watch it, or (none left) check our own key.
    fn predecessor_read(&mut self, config: &EtcdMutexConfig, reply: EtcdReply) -> Step<EtcdAcquired, EtcdOp> {
        use EtcdOpReply as R;
        match reply.response {
            EtcdResponse::Range(range) => {
                self.uncertainty.answered();
                match range.kvs.first() {
                    Some(predecessor) => {
                        let op = EtcdOp::WatchDeletion {
                            key: predecessor.key.clone(),
                            after_revision: reply.revision,
                        };
                        self.state = State::Watching;
                        Step::store(E3_WATCH, op)
                    }
                    None if config.mutants.no_own_key_check_after_wait => self.held(MUTANT_11456),
                    None => {
                        let command = EtcdCommand::Range(RangeRequest::key(self.key.clone()));
                        self.kv(E4_CHECK, State::Checking, command)
                    }
                }
            }
            response => self.unexpected(
                config,
                &R::Kv(EtcdReply {
                    revision: reply.revision,
                    response,
                }),
                &State::ReadingPredecessor,
            ),
        }
    }

    /// A keep-alive sent while waiting answered.
    fn keep_alive_answered(
        &mut self,
        config: &EtcdMutexConfig,
        sent_at_us: u64,
        reply: EtcdReply,
    ) -> Step<EtcdAcquired, EtcdOp> {
        use EtcdOpReply as R;
        match reply.response {
            EtcdResponse::LeaseKeepAlive { .. } => {
                self.uncertainty.answered();
                self.kept_alive(config, sent_at_us);
                self.read_predecessor()
            }
            _ if lease_gone(&reply) => self.give_up(config, EtcdNotAcquired::SessionExpired),
            response => self.unexpected(
                config,
                &R::Kv(EtcdReply {
                    revision: reply.revision,
                    response,
                }),
                &State::KeepingAlive { sent_at_us },
            ),
        }
    }

    /// E4's read of our own key answered: held if it is still there.
    fn own_key_checked(&mut self, config: &EtcdMutexConfig, reply: EtcdReply) -> Step<EtcdAcquired, EtcdOp> {
        use EtcdOpReply as R;
        match reply.response {
            EtcdResponse::Range(range) if range.kvs.is_empty() => {
                self.state = State::Finished;
                Step::done(
                    E4_EXPIRED,
                    EtcdAcquired::NotAcquired {
                        why: EtcdNotAcquired::SessionExpired,
                        key_may_remain: false,
                    },
                )
            }
            EtcdResponse::Range(_) => self.held(E4_HELD),
            response => self.unexpected(
                config,
                &R::Kv(EtcdReply {
                    revision: reply.revision,
                    response,
                }),
                &State::Checking,
            ),
        }
    }

    /// Woken while waiting: give up at the deadline or when the session has lapsed, keep it
    /// alive when due, else read the predecessor again.
    fn woke_waiting(&mut self, config: &EtcdMutexConfig, now_us: u64) -> Step<EtcdAcquired, EtcdOp> {
        if self.deadline_us.is_some_and(|deadline| now_us >= deadline) {
            return self.give_up(config, EtcdNotAcquired::TimedOut);
        }
        // etcd's client gives the session up when nothing got through for a TTL; the
        // server may not have expired it yet: revoke it (and our key) all the same.
        if now_us >= self.kept_alive_sent_at_us.saturating_add(config.ttl_us()) {
            let state = State::GivingUp {
                why: EtcdNotAcquired::SessionExpired,
                tries_left: config.retry.max_retries,
            };
            return self.kv(GIVE_UP, state, EtcdCommand::LeaseRevoke { id: self.lease });
        }
        if now_us >= self.keep_alive_due_us {
            let command = EtcdCommand::LeaseKeepAlive { id: self.lease };
            return self.kv(E3_KEEP_ALIVE, State::KeepingAlive { sent_at_us: now_us }, command);
        }
        self.read_predecessor()
    }

    /// Lock `key` (its prefix [`prefix_of`]); `token`: unique per acquisition (the session's
    /// lease id is drawn from it); `once`: `try_lock`.
    pub fn new(key: &str, token: &str, once: bool) -> Self {
        Self::with_lease(key, lease_id_of(token), once)
    }

    /// As [`Self::new`], in the session `lease` (two acquisitions given one lease share a
    /// session: etcd-io/etcd#10756's misuse).
    pub fn with_lease(key: &str, lease: LeaseId, once: bool) -> Self {
        let prefix = prefix_of(key);
        EtcdAcquire {
            key: format!("{prefix}{lease:x}"),
            prefix,
            lease,
            once,
            state: State::Idle,
            deadline_us: None,
            revision: None,
            kept_alive_sent_at_us: 0,
            first_grant_sent_at_us: None,
            keep_alive_due_us: 0,
            uncertainty: Uncertainty::default(),
        }
    }

    pub fn is_finished(&self) -> bool {
        self.state == State::Finished
    }

    /// A grant or keep-alive sent at `sent_at_us` got through.
    fn kept_alive(&mut self, config: &EtcdMutexConfig, sent_at_us: u64) {
        self.kept_alive_sent_at_us = sent_at_us;
        self.keep_alive_due_us = sent_at_us.saturating_add(config.keep_alive_every_ms().saturating_mul(1000));
    }

    fn kv(&mut self, tag: StepTag, state: State, command: EtcdCommand) -> Step<EtcdAcquired, EtcdOp> {
        self.state = state;
        Step::store(tag, EtcdOp::Kv(command))
    }

    fn grant(&mut self, config: &EtcdMutexConfig, now_us: u64) -> Step<EtcdAcquired, EtcdOp> {
        let command = EtcdCommand::LeaseGrant {
            id: self.lease,
            ttl_s: config.session_ttl_s,
        };
        self.first_grant_sent_at_us.get_or_insert(now_us);
        self.kv(E0_SESSION, State::Granting { sent_at_us: now_us }, command)
    }

    fn try_acquire(&mut self, now_us: u64) -> Step<EtcdAcquired, EtcdOp> {
        let first = TxnOp::Range(RangeRequest::prefix(self.prefix.clone()).first_created());
        let txn = TxnRequest {
            compares: vec![Compare::create_revision(self.key.clone(), CompareResult::Equal, 0)],
            success: vec![
                TxnOp::Put {
                    key: self.key.clone(),
                    value: String::new(),
                    lease: self.lease,
                },
                first.clone(),
            ],
            failure: vec![TxnOp::Range(RangeRequest::key(self.key.clone())), first],
        };
        self.kv(E1_TRY, State::Trying { sent_at_us: now_us }, EtcdCommand::Txn(txn))
    }

    fn read_predecessor(&mut self) -> Step<EtcdAcquired, EtcdOp> {
        let revision = self.revision.expect("known once queued");
        let command = EtcdCommand::Range(RangeRequest::prefix(self.prefix.clone()).last_created_at_most(revision - 1));
        self.kv(E3_PREDECESSOR, State::ReadingPredecessor, command)
    }

    fn held(&mut self, tag: StepTag) -> Step<EtcdAcquired, EtcdOp> {
        let revision = self.revision.expect("known once queued");
        self.state = State::Finished;
        Step::done(
            tag,
            EtcdAcquired::Acquired(EtcdLease {
                key: self.key.clone(),
                lease: self.lease,
                revision,
                token: format!("{revision:020}"),
                kept_alive_sent_at_us: self.kept_alive_sent_at_us,
            }),
        )
    }

    /// End without the lock: revoke the session (deleting our key with it) unless it is gone.
    fn give_up(&mut self, config: &EtcdMutexConfig, why: EtcdNotAcquired) -> Step<EtcdAcquired, EtcdOp> {
        if why == EtcdNotAcquired::SessionExpired {
            self.state = State::Finished;
            return Step::done(
                GAVE_UP,
                EtcdAcquired::NotAcquired {
                    why,
                    key_may_remain: false,
                },
            );
        }
        let tag = if why == EtcdNotAcquired::HeldByAnother {
            E2_HELD_BY_ANOTHER
        } else {
            GIVE_UP
        };
        let state = State::GivingUp {
            why,
            tries_left: config.retry.max_retries,
        };
        self.kv(tag, state, EtcdCommand::LeaseRevoke { id: self.lease })
    }

    fn failed(
        &mut self,
        config: &EtcdMutexConfig,
        failure: StoreFailure,
        sent_at_us: Option<u64>,
        retry: State,
    ) -> Step<EtcdAcquired, EtcdOp> {
        if self.uncertainty.failed(&failure, sent_at_us, &config.retry) {
            return self.give_up(config, EtcdNotAcquired::Failed(failure));
        }
        self.state = State::Backoff(Box::new(retry));
        Step::new(
            RETRY_AFTER_FAILURE,
            Action::Sleep {
                ms: config.retry.backoff_ms,
                kind: SleepKind::Retry,
            },
        )
    }

    fn unexpected(
        &mut self,
        config: &EtcdMutexConfig,
        reply: &EtcdOpReply,
        state: &State,
    ) -> Step<EtcdAcquired, EtcdOp> {
        let failure = StoreFailure::Other(format!("unexpected reply {reply} in {state:?}"));
        self.give_up(config, EtcdNotAcquired::Failed(failure))
    }

    /// After a try: ours first means held; otherwise wait (or give up).
    fn judge(
        &mut self,
        config: &EtcdMutexConfig,
        reply: &EtcdReply,
        succeeded: bool,
        responses: &[EtcdResponse],
        now_us: u64,
    ) -> Step<EtcdAcquired, EtcdOp> {
        let first_kv = |response: Option<&EtcdResponse>| match response {
            Some(EtcdResponse::Range(range)) => range.kvs.first().cloned(),
            _ => None,
        };
        let ours = if succeeded {
            Some(reply.revision)
        } else {
            first_kv(responses.first()).map(|kv| kv.create_revision)
        };
        let Some(ours) = ours else {
            // Our key existed for the compare and not for the read: impossible in one revision.
            let failure = StoreFailure::Other(format!("the try's reply does not show our key: {reply}"));
            return self.give_up(config, EtcdNotAcquired::Failed(failure));
        };
        self.revision = Some(ours);
        let owner = first_kv(responses.get(1)).map(|kv| kv.create_revision);
        if owner == Some(ours) {
            return self.held(E1_HELD);
        }
        if self.once {
            return self.give_up(config, EtcdNotAcquired::HeldByAnother);
        }
        if self.deadline_us.is_some_and(|deadline| now_us >= deadline) {
            return self.give_up(config, EtcdNotAcquired::TimedOut);
        }
        self.read_predecessor()
    }

    fn wait(&mut self, now_us: u64) -> Step<EtcdAcquired, EtcdOp> {
        let until_us = self
            .deadline_us
            .map_or(self.keep_alive_due_us, |deadline| deadline.min(self.keep_alive_due_us));
        let ms = until_us.saturating_sub(now_us).div_ceil(1000).max(1);
        self.state = State::Waiting;
        Step::new(
            E3_WAIT,
            Action::Sleep {
                ms,
                kind: SleepKind::UntilNotified,
            },
        )
    }

    fn advance(
        &mut self,
        config: &EtcdMutexConfig,
        input: Input<EtcdOpReply>,
        now_us: u64,
    ) -> Step<EtcdAcquired, EtcdOp> {
        use EtcdOpReply as R;
        match (std::mem::replace(&mut self.state, State::Finished), input) {
            (State::Idle, Input::Start) => {
                if config.mutants.one_session_for_every_acquisition {
                    self.lease = lease_id_of(&format!("the one session of {}", self.prefix));
                    self.key = format!("{}{:x}", self.prefix, self.lease);
                }
                self.deadline_us = config.wait_ms.map(|ms| now_us.saturating_add(ms.saturating_mul(1000)));
                self.grant(config, now_us)
            }
            (State::Granting { sent_at_us }, Input::Reply(R::Kv(reply))) => {
                self.granting_answered(config, sent_at_us, reply, now_us)
            }
            (State::Granting { sent_at_us }, Input::Failed(failure)) => {
                self.failed(config, failure, None, State::Granting { sent_at_us })
            }
            (State::Trying { .. }, Input::Reply(R::Kv(reply))) => match &reply.response {
                EtcdResponse::Txn { succeeded, responses } => {
                    self.uncertainty.answered();
                    let (succeeded, responses) = (*succeeded, responses.clone());
                    self.judge(config, &reply, succeeded, &responses, now_us)
                }
                _ if lease_gone(&reply) => self.give_up(config, EtcdNotAcquired::SessionExpired),
                _ => self.unexpected(config, &R::Kv(reply), &State::Trying { sent_at_us: now_us }),
            },
            (State::Trying { sent_at_us }, Input::Failed(failure)) => {
                self.failed(config, failure, Some(sent_at_us), State::Trying { sent_at_us })
            }
            (State::ReadingPredecessor, Input::Reply(R::Kv(reply))) => self.predecessor_read(config, reply),
            (State::Watching, Input::Reply(R::Watching)) => {
                self.uncertainty.answered();
                self.wait(now_us)
            }
            // Gone already, or the history no longer reaches back: read again.
            (State::Watching, Input::Reply(R::Deleted { .. } | R::Kv(_))) => {
                self.uncertainty.answered();
                self.read_predecessor()
            }
            (State::Watching, Input::Reply(R::TooManyWatches)) => {
                let failure = StoreFailure::Other("the server refused another watch".into());
                self.give_up(config, EtcdNotAcquired::Failed(failure))
            }
            (State::Waiting, Input::Woke) => self.woke_waiting(config, now_us),
            (State::KeepingAlive { sent_at_us }, Input::Reply(R::Kv(reply))) => {
                self.keep_alive_answered(config, sent_at_us, reply)
            }
            (State::Checking, Input::Reply(R::Kv(reply))) => self.own_key_checked(config, reply),
            (State::ReadingPredecessor | State::Watching | State::Checking, Input::Failed(failure)) => {
                self.failed(config, failure, None, State::ReadingPredecessor)
            }
            (State::KeepingAlive { .. }, Input::Failed(_)) => {
                // As etcd's client: the wait goes on, the keep-alive is tried again after the
                // backoff, until the session's TTL has passed without one getting through.
                self.keep_alive_due_us = now_us.saturating_add(config.retry.backoff_ms.max(1).saturating_mul(1000));
                self.read_predecessor()
            }
            (State::Backoff(retry), Input::Woke) => match *retry {
                State::Granting { .. } => self.grant(config, now_us),
                State::Trying { .. } => self.try_acquire(now_us),
                _ => self.read_predecessor(),
            },
            (State::GivingUp { why, .. }, Input::Reply(_)) => {
                self.state = State::Finished;
                Step::done(
                    GAVE_UP,
                    EtcdAcquired::NotAcquired {
                        why,
                        key_may_remain: false,
                    },
                )
            }
            (State::GivingUp { why, tries_left }, Input::Failed(_)) if tries_left > 0 => {
                let state = State::GivingUp {
                    why,
                    tries_left: tries_left - 1,
                };
                self.kv(GIVE_UP, state, EtcdCommand::LeaseRevoke { id: self.lease })
            }
            (State::GivingUp { why, .. }, Input::Failed(_)) => {
                self.state = State::Finished;
                Step::done(
                    GAVE_UP,
                    EtcdAcquired::NotAcquired {
                        why,
                        key_may_remain: true,
                    },
                )
            }
            (state, Input::Reply(reply)) => self.unexpected(config, &reply, &state),
            (state, input) => panic!("EtcdAcquire: {input:?} in state {state:?}"),
        }
    }
}

/// The server no longer knows the lease.
fn lease_gone(reply: &EtcdReply) -> bool {
    reply.response == EtcdResponse::Error(EtcdError::LeaseNotFound)
}

impl Machine for EtcdAcquire {
    type Config = EtcdMutexConfig;
    type Output = EtcdAcquired;
    type Command = EtcdOp;
    type Reply = EtcdOpReply;

    fn resume(
        &mut self,
        config: &EtcdMutexConfig,
        input: Input<EtcdOpReply>,
        now_us: u64,
    ) -> Step<EtcdAcquired, EtcdOp> {
        super::super::resume_checked(
            "EtcdAcquire",
            self,
            EtcdAcquire::is_finished,
            EtcdAcquire::advance,
            (config, input, now_us),
        )
    }
}

/// How a release ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EtcdReleased {
    /// Our key was deleted.
    Released,
    /// Our key was gone (the session had expired): the lock was lost before.
    WasGone,
    /// A retry after a lost reply found our key gone: deleted by us, or lost before.
    GoneEitherWay,
    /// The delete never got through: our key stays until the lease's TTL.
    Failed(StoreFailure),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum ReleaseState {
    Idle,
    Deleting,
    Backoff,
    Closing(EtcdReleased),
    Finished,
}

/// E5: delete our key, then close the session.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EtcdRelease {
    lease: EtcdLease,
    state: ReleaseState,
    uncertainty: Uncertainty,
}

impl EtcdRelease {
    pub fn new(lease: EtcdLease) -> Self {
        EtcdRelease {
            lease,
            state: ReleaseState::Idle,
            uncertainty: Uncertainty::default(),
        }
    }

    pub fn is_finished(&self) -> bool {
        self.state == ReleaseState::Finished
    }

    fn delete(&mut self) -> Step<EtcdReleased, EtcdOp> {
        self.state = ReleaseState::Deleting;
        Step::store(E5_RELEASE, EtcdOp::Kv(EtcdCommand::delete(self.lease.key.clone())))
    }

    fn close(&mut self, outcome: EtcdReleased) -> Step<EtcdReleased, EtcdOp> {
        self.state = ReleaseState::Closing(outcome);
        Step::store(E5_CLOSE, EtcdOp::Kv(EtcdCommand::LeaseRevoke { id: self.lease.lease }))
    }

    fn advance(
        &mut self,
        config: &EtcdMutexConfig,
        input: Input<EtcdOpReply>,
        now_us: u64,
    ) -> Step<EtcdReleased, EtcdOp> {
        match (std::mem::replace(&mut self.state, ReleaseState::Finished), input) {
            (ReleaseState::Idle, Input::Start) => self.delete(),
            (ReleaseState::Deleting, Input::Reply(EtcdOpReply::Kv(reply))) => {
                let outcome = match reply.response {
                    EtcdResponse::DeleteRange { deleted: 1.. } => EtcdReleased::Released,
                    EtcdResponse::DeleteRange { deleted: 0 } if self.uncertainty.may_have_applied() => {
                        EtcdReleased::GoneEitherWay
                    }
                    EtcdResponse::DeleteRange { deleted: 0 } => EtcdReleased::WasGone,
                    other => EtcdReleased::Failed(StoreFailure::Other(format!("unexpected reply {other}"))),
                };
                self.close(outcome)
            }
            (ReleaseState::Deleting, Input::Failed(failure)) => {
                if self.uncertainty.failed(&failure, Some(now_us), &config.retry) {
                    // The session's revocation deletes our key too: try that.
                    return self.close(EtcdReleased::Failed(failure));
                }
                self.state = ReleaseState::Backoff;
                Step::new(
                    RETRY_AFTER_FAILURE,
                    Action::Sleep {
                        ms: config.retry.backoff_ms,
                        kind: SleepKind::Retry,
                    },
                )
            }
            (ReleaseState::Backoff, Input::Woke) => self.delete(),
            (ReleaseState::Closing(outcome), Input::Reply(reply)) => {
                self.state = ReleaseState::Finished;
                let outcome = match (outcome, reply) {
                    // The delete failed and the revocation got through: our key is gone.
                    (
                        EtcdReleased::Failed(_),
                        EtcdOpReply::Kv(EtcdReply {
                            response: EtcdResponse::LeaseRevoke,
                            ..
                        }),
                    ) => EtcdReleased::GoneEitherWay,
                    (outcome, _) => outcome,
                };
                Step::done(E5_DONE, outcome)
            }
            (ReleaseState::Closing(outcome), Input::Failed(_)) => {
                // A session left open expires with its TTL; the key was dealt with above.
                self.state = ReleaseState::Finished;
                Step::done(E5_DONE, outcome)
            }
            (state, input) => panic!("EtcdRelease: {input:?} in state {state:?}"),
        }
    }
}

impl Machine for EtcdRelease {
    type Config = EtcdMutexConfig;
    type Output = EtcdReleased;
    type Command = EtcdOp;
    type Reply = EtcdOpReply;

    fn resume(
        &mut self,
        config: &EtcdMutexConfig,
        input: Input<EtcdOpReply>,
        now_us: u64,
    ) -> Step<EtcdReleased, EtcdOp> {
        super::super::resume_checked(
            "EtcdRelease",
            self,
            EtcdRelease::is_finished,
            EtcdRelease::advance,
            (config, input, now_us),
        )
    }
}

/// How a keep-alive lane (or one keep-alive) ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeptAlive {
    /// The release stopped the lane.
    Stopped,
    /// One keep-alive got through (a one-off keep-alive's answer).
    Renewed(EtcdLease),
    /// "Lease not found": the session is over, and our key with it.
    Lost,
    /// No keep-alive got through for a whole TTL: the client gives the session up.
    Expired,
    /// A one-off keep-alive failed: the session may still be alive.
    Failed(StoreFailure),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum KeepAliveState {
    Idle,
    Sleeping,
    Sending { sent_at_us: u64 },
    Finished,
}

/// The session's keep-alive: as the holder's renewal lane, every third of the TTL until the
/// release stops it; [`KeepAlive::once`], one keep-alive on the holder's request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeepAlive {
    lease: EtcdLease,
    once: bool,
    state: KeepAliveState,
}

impl KeepAlive {
    pub fn lane(lease: EtcdLease) -> Self {
        KeepAlive {
            lease,
            once: false,
            state: KeepAliveState::Idle,
        }
    }

    pub fn once(lease: EtcdLease) -> Self {
        KeepAlive {
            lease,
            once: true,
            state: KeepAliveState::Idle,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.state == KeepAliveState::Finished
    }

    /// The lease as the last keep-alive that got through left it.
    pub fn lease(&self) -> &EtcdLease {
        &self.lease
    }

    fn sleep(&mut self, config: &EtcdMutexConfig) -> Step<KeptAlive, EtcdOp> {
        self.state = KeepAliveState::Sleeping;
        Step::new(
            KA_WAIT,
            Action::Sleep {
                ms: config.keep_alive_every_ms(),
                kind: SleepKind::Renewal,
            },
        )
    }

    fn send(&mut self, now_us: u64) -> Step<KeptAlive, EtcdOp> {
        self.state = KeepAliveState::Sending { sent_at_us: now_us };
        Step::store(
            KA_SEND,
            EtcdOp::Kv(EtcdCommand::LeaseKeepAlive { id: self.lease.lease }),
        )
    }

    fn finish(&mut self, tag: StepTag, end: KeptAlive) -> Step<KeptAlive, EtcdOp> {
        self.state = KeepAliveState::Finished;
        Step::done(tag, end)
    }

    fn advance(&mut self, config: &EtcdMutexConfig, input: Input<EtcdOpReply>, now_us: u64) -> Step<KeptAlive, EtcdOp> {
        use KeepAliveState as S;
        match (std::mem::replace(&mut self.state, S::Finished), input) {
            (S::Idle, Input::Start) if self.once => self.send(now_us),
            (S::Idle, Input::Start) => self.sleep(config),
            (S::Sleeping, Input::StopRequested) => self.finish(KA_STOPPED, KeptAlive::Stopped),
            (S::Sleeping, Input::Woke) => self.send(now_us),
            (S::Sending { sent_at_us }, Input::Reply(EtcdOpReply::Kv(reply))) => match reply.response {
                EtcdResponse::LeaseKeepAlive { .. } => {
                    self.lease.kept_alive_sent_at_us = sent_at_us;
                    if self.once {
                        let lease = self.lease.clone();
                        return self.finish(KA_SEND, KeptAlive::Renewed(lease));
                    }
                    self.sleep(config)
                }
                _ => self.finish(KA_LOST, KeptAlive::Lost),
            },
            (S::Sending { .. }, Input::Reply(_)) => self.finish(KA_LOST, KeptAlive::Lost),
            (S::Sending { .. }, Input::Failed(failure)) if self.once => {
                self.finish(KA_SEND, KeptAlive::Failed(failure))
            }
            (S::Sending { .. }, Input::Failed(_)) => {
                if now_us >= self.lease.valid_until_us(config) {
                    self.finish(KA_EXPIRED, KeptAlive::Expired)
                } else {
                    self.sleep(config)
                }
            }
            (state, input) => panic!("KeepAlive: {input:?} in state {state:?}"),
        }
    }
}

impl Machine for KeepAlive {
    type Config = EtcdMutexConfig;
    type Output = KeptAlive;
    type Command = EtcdOp;
    type Reply = EtcdOpReply;

    fn resume(&mut self, config: &EtcdMutexConfig, input: Input<EtcdOpReply>, now_us: u64) -> Step<KeptAlive, EtcdOp> {
        super::super::resume_checked(
            "KeepAlive",
            self,
            KeepAlive::is_finished,
            KeepAlive::advance,
            (config, input, now_us),
        )
    }
}

mod server_holder;
pub use server_holder::holder_on_server;

#[cfg(test)]
mod tests;
