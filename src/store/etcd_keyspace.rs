//! etcd's revisioned key space, written once: the key-value, transaction, lease, watch and
//! compaction rules of etcd v3 that the etcd lock recipes use.
//!
//! The etcd mutex (`clientv3/concurrency.Mutex`, and etcd's own lock service, which runs the
//! same steps on the server) is a client of this key space. Each contender puts its own key
//! under the lock's prefix (`prefix/<lease id in hex>`) with its session's lease, in a
//! transaction that puts only when the key does not exist yet (so a retried acquire finds its
//! old place instead of queueing twice). The key with the lowest `create_revision` holds the
//! lock. Every other contender waits for the deletion of the key created just before its own
//! (not the holder's: one wake-up per handoff, no herd), then checks again. Release deletes the
//! own key; a crashed holder's key goes when its lease expires. The simulator's servers, the
//! model checker's server actors and the tests keep their data in an [`EtcdKeyspace`], so the
//! rules below exist in exactly one place. Like [`crate::store::redis_keyspace`], the type owns
//! no clock, does no I/O and draws no random numbers: every call where time matters takes
//! `server_now_ms`, the reading of the clock of the server that leads (etcd judges leases on the
//! leader only).
//!
//! The rules, and why each matters for a lock:
//!
//! - **One store-wide revision, one step per write.** The empty store is at revision
//!   [`EMPTY_STORE_REVISION`] (1). Every request that changes at least one key (a put, a delete
//!   that deletes something, a transaction, a lease revocation that deletes keys) makes it
//!   exactly one higher, however many keys it changes. A request that changes nothing (a read, a
//!   delete of nothing, a transaction whose chosen branch only reads, an error) leaves it. Every
//!   reply carries the revision in its header ([`EtcdReply::revision`]): after a write, the
//!   write's revision. For a lock, the revision is the one total order of all writes.
//! - **Per key: `create_revision`, `mod_revision`, `version`.** The revision of the put that
//!   created the key, of its last change, and the number of puts since it was created (1 after
//!   the creating put). A delete removes the key, so the next put creates it afresh with a new,
//!   higher `create_revision` and version 1. For the mutex, `create_revision` is a contender's
//!   place in the queue *and* its fencing token: a token handed to a later holder is always
//!   higher, because revisions only grow and a re-created key gets a new one. (The Cassandra
//!   queue column is chosen by a client and has no such guarantee.)
//! - **A transaction compares, then acts, atomically.** Every compare (on a key's
//!   `create_revision`, `mod_revision`, `version` or value, with `=`, `!=`, `<`, `>`) is judged
//!   on the store as it was before the transaction; if all hold, the success ops run, otherwise
//!   the failure ops. Ops run in order and a read sees the transaction's own earlier writes; all
//!   the writes are one revision. A missing key compares as revisions and version 0, and **any
//!   value compare on a missing key fails, even `!=`** (etcd cannot tell a missing value from an
//!   empty one). The mutex's acquire is `if create_revision(own key) = 0 then put(own key,
//!   lease), get(first created) else get(own key), get(first created)`.
//! - **Checks first, so a refused request writes nothing.** Before it is run: an empty key
//!   anywhere, more than [`MAX_TXN_OPS`] compares or ops in one branch, or (in either branch,
//!   taken or not) a put whose key another put or a delete of the same branch also names, are
//!   refused. Then, in the branch the compares chose, a put with a lease that does not exist
//!   ("lease not found") or a read at a compacted or future revision refuses the whole
//!   transaction: nothing is written and the revision stays. So a session whose lease has gone
//!   cannot queue again with it: its acquire answers "lease not found". Within one revision a
//!   key changes at most once, which these checks guarantee.
//! - **Range reads** of one key or a prefix, at the latest revision or an older one, sorted by
//!   key (the default) or by `create_revision`, with a `limit` and a `max_create_revision`
//!   filter (0 means none for both, as in etcd). `count` is every key of the range at that
//!   revision, before the filter and the limit, as etcd counts. The mutex reads "first created
//!   under the prefix" (who holds) and "last created at or below my revision - 1" (whom to wait
//!   for). Keys created by one transaction share a `create_revision`; they come in key order
//!   here (etcd leaves their order unspecified; the mutex never creates two at once).
//! - **Leases.** A grant names its id (0 is refused: etcd would pick a random id, and this type
//!   draws no random numbers) and a TTL in whole seconds, raised to [`MIN_LEASE_TTL_S`] when
//!   shorter (a lock asking for a 1 s lease gets 2 s) and refused above [`MAX_LEASE_TTL_S`]; a
//!   second grant of a live id is refused. Its deadline is `server_now_ms + ttl`; a keep-alive
//!   resets it to `server_now_ms + ttl` and answers the granted TTL; time-to-live answers the
//!   whole seconds left (truncated), the granted TTL and the attached keys, or TTL -1 for a
//!   lease that does not exist; a revoke deletes every attached key, in key order, as one
//!   revision, then the lease. A put attaches its key to its lease and detaches it from the
//!   lease it had (a put with lease 0 leaves the key with none). The session's lease is what
//!   frees a crashed holder's key.
//! - **Expiry is eager, on the leader's clock, one revision per lease.** A lease is expired once
//!   `server_now_ms >= deadline_ms` (etcd: remaining time `<= 0`). Every command first runs
//!   [`EtcdKeyspace::expire_leases`] at its own clock reading: each expired lease is revoked as
//!   above, in deadline order (then id), each its own revision. So no command sees a key whose
//!   lease's deadline has passed, and a keep-alive that arrives at or after the deadline answers
//!   "lease not found". Real etcd revokes through its lessor loop on the leader (a check every
//!   500 ms, then a revoke proposal through raft), so a key may outlive its deadline by up to
//!   about half a second plus a commit; in that window reads still see the key and a put may
//!   still attach to the lease (a keep-alive waits for the revocation and then answers "not
//!   found", as here). We judge at the deadline exactly because it is deterministic and it is
//!   the earliest etcd can free a lock: the worst case for a holder who still believes it holds,
//!   which is what the checks are after. The lag itself is not modelled: it only frees later.
//! - **A new leader refreshes every lease** ([`EtcdKeyspace::promote`]): each deadline becomes
//!   `server_now_ms + extend_ms + ttl` (etcd extends by the election timeout,
//!   [`DEFAULT_ELECTION_TIMEOUT_MS`]), including a lease whose deadline passed while no leader
//!   revoked it. A restart or leader change thus keeps a crashed holder's lock for up to a whole
//!   TTL more: liveness, not safety. (A driver that had a leader up until some instant calls
//!   `expire_leases` at that instant first.)
//! - **Watches from a revision.** The key space keeps the events since the last compaction: a
//!   put (the new key-value and the previous one, if the key existed) or a delete (the key, the
//!   revision, the previous key-value); the events of one revision in the order its request
//!   made them. [`EtcdKeyspace::watch_events`] answers every event on a key or prefix at or after
//!   a revision. A waiter that read at revision `r` watches its predecessor from `r + 1`, so a
//!   delete between its read and its watch is not missed: it is in the history.
//! - **Compaction and the history bound.** `Compact{r}` refuses `r` above the current revision
//!   and `r` at or below the last compaction; otherwise reads below `r` and watches from below
//!   `r` answer "compacted" (with the compaction revision, where a watcher must read again) and
//!   the events below `r` are dropped. The history holds at most `history_limit` events
//!   ([`MAX_HISTORY_EVENTS`] unless set with [`EtcdKeyspace::with_history_limit`]): a call that
//!   takes it past the limit compacts away its oldest revisions, whole, never the newest one,
//!   and reports the new compaction revision (`auto_compacted`), never silently. The bound is
//!   ours (etcd keeps history until compacted; deployments run its auto-compaction, which keeps
//!   the last N revisions or hours); its effect is the same: a watcher that falls that far
//!   behind is told "compacted" and must read again.
//!
//! **etcd-io/etcd#11456** (Jepsen, etcd 3.4.3): the lock service queued the caller's key, waited
//! for the deletion of every key created before it, and answered "acquired" without checking
//! that the caller's own key still existed. When the caller's lease expired during the wait,
//! the revocation deleted the caller's key, the waits ended all the same, and the caller was
//! told it held a lock that no key in the store stood for; a later contender could then queue
//! and acquire while the first still believed. The mutex now reads its own key after the wait
//! and answers "session expired" when it is gone. This key space has no lock command: it
//! answers the primitives, and after the lease's deadline they all tell the truth. A range of
//! the caller's key is empty, a keep-alive answers "lease not found", time-to-live answers -1,
//! and the history holds the key's delete at the revocation's revision. A lock machine detects
//! the expiry by reading its own key after the wait (the fix) or by watching its own key; the
//! 3.4.3 behaviour is the mutant machine that skips that read, and over this key space the
//! harness sees its second holder. Even with the check, a lease can expire between the check
//! and the use of the lock: `create_revision` is the fencing token a resource must check, and a
//! holder can make the store check it itself (`create_revision(own key) = my revision` as the
//! compare of its own writes).
//!
//! One concept, kept in one file over 1,000 lines: etcd's key space as one value type (keys,
//! revisions, transactions, leases, watches, compaction) and its property tests.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::ops::Bound;

/// A store revision (etcd: int64; never negative here).
pub type Revision = u64;

/// A lease id, chosen by the caller of [`EtcdCommand::LeaseGrant`]. [`NO_LEASE`] means none.
pub type LeaseId = i64;

/// A key attached to no lease.
pub const NO_LEASE: LeaseId = 0;

/// The revision of the empty store: the first write is revision 2, as in etcd.
pub const EMPTY_STORE_REVISION: Revision = 1;

/// The shortest lease etcd grants: `ceil(1.5 * election ticks * heartbeat)` seconds, 2 s with
/// the default election timeout (1000 ms) and heartbeat (100 ms). A shorter TTL is raised.
pub const MIN_LEASE_TTL_S: i64 = 2;

/// The longest lease etcd grants (`MaxLeaseTTL`); a longer one is refused.
pub const MAX_LEASE_TTL_S: i64 = 9_000_000_000;

/// The most compares, or ops in one branch, of a transaction (etcd's `--max-txn-ops` default).
pub const MAX_TXN_OPS: usize = 128;

/// The default bound on the watch history, in events. Past it the oldest revisions are
/// compacted away (see the module documentation); [`EtcdKeyspace::with_history_limit`] sets
/// another.
pub const MAX_HISTORY_EVENTS: usize = 10_000;

/// etcd's default election timeout: what a new leader adds to every lease's TTL
/// ([`EtcdKeyspace::promote`]).
pub const DEFAULT_ELECTION_TIMEOUT_MS: u64 = 1_000;

const MILLIS_PER_SECOND: u64 = 1_000;

/// The keys a request names: one key, or every key that starts with a prefix.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum KeyRange {
    /// One key (etcd: `key` without `range_end`). The empty key is refused.
    Key(String),
    /// Every key starting with the prefix (etcd: `WithPrefix`); the empty prefix is every key.
    Prefix(String),
}

impl KeyRange {
    pub fn contains(&self, key: &str) -> bool {
        match self {
            KeyRange::Key(one) => one == key,
            KeyRange::Prefix(prefix) => key.starts_with(prefix.as_str()),
        }
    }

    fn check(&self) -> Result<(), EtcdError> {
        match self {
            KeyRange::Key(key) => check_key(key),
            KeyRange::Prefix(_) => Ok(()),
        }
    }

    /// The smallest key the range can hold: every key of the range sorts at or after it, and
    /// the keys of the range are contiguous in key order.
    fn start(&self) -> &str {
        match self {
            KeyRange::Key(key) | KeyRange::Prefix(key) => key,
        }
    }
}

/// A stored key, as etcd's `mvccpb.KeyValue`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct KeyValue {
    pub key: String,
    /// The revision of the put that created the key (since its last delete).
    pub create_revision: Revision,
    /// The revision of the key's last put.
    pub mod_revision: Revision,
    /// Puts since the key was created: 1 after the creating put.
    pub version: u64,
    pub value: String,
    /// The lease the key is attached to, [`NO_LEASE`] for none.
    pub lease: LeaseId,
}

/// In which order a range answers its keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum RangeOrder {
    /// Ascending key order (etcd's default).
    #[default]
    Key,
    /// Lowest `create_revision` first (`WithFirstCreate` with a limit of 1: who holds).
    CreateAscending,
    /// Highest `create_revision` first (`WithLastCreate`: whom a waiter waits for).
    CreateDescending,
}

/// A range read, as etcd's `RangeRequest` restricted to what the lock recipes use.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct RangeRequest {
    pub range: KeyRange,
    /// Read as of this revision; `None` (or `Some(0)`, as in etcd) reads the latest.
    pub revision: Option<Revision>,
    pub order: RangeOrder,
    /// At most this many keys, after sorting; 0 means no limit.
    pub limit: u64,
    /// Only keys with `create_revision` at or below this; 0 means no filter.
    pub max_create_revision: Revision,
}

impl RangeRequest {
    /// Every key of `range`, at the latest revision, in key order.
    pub fn new(range: KeyRange) -> Self {
        RangeRequest {
            range,
            revision: None,
            order: RangeOrder::Key,
            limit: 0,
            max_create_revision: 0,
        }
    }

    pub fn key(key: impl Into<String>) -> Self {
        Self::new(KeyRange::Key(key.into()))
    }

    pub fn prefix(prefix: impl Into<String>) -> Self {
        Self::new(KeyRange::Prefix(prefix.into()))
    }

    /// The same read as of `revision`.
    pub fn at_revision(self, revision: Revision) -> Self {
        RangeRequest {
            revision: Some(revision),
            ..self
        }
    }

    /// The key with the lowest `create_revision`: the mutex's "who holds".
    pub fn first_created(self) -> Self {
        RangeRequest {
            order: RangeOrder::CreateAscending,
            limit: 1,
            ..self
        }
    }

    /// The key with the highest `create_revision` at or below `revision`: the mutex's "whom do
    /// I wait for" (with my revision - 1).
    pub fn last_created_at_most(self, revision: Revision) -> Self {
        RangeRequest {
            order: RangeOrder::CreateDescending,
            limit: 1,
            max_create_revision: revision,
            ..self
        }
    }
}

/// What a compare looks at, and the operand it compares with.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum CompareTarget {
    CreateRevision(Revision),
    ModRevision(Revision),
    Version(u64),
    Value(String),
}

/// How the key's field must relate to the operand: `field = operand`, and so on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum CompareResult {
    Equal,
    NotEqual,
    Less,
    Greater,
}

impl CompareResult {
    /// Does `field.cmp(operand)` satisfy this relation?
    fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering;
        match self {
            CompareResult::Equal => ordering == Ordering::Equal,
            CompareResult::NotEqual => ordering != Ordering::Equal,
            CompareResult::Less => ordering == Ordering::Less,
            CompareResult::Greater => ordering == Ordering::Greater,
        }
    }
}

/// One compare of a transaction, on one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Compare {
    pub key: String,
    pub result: CompareResult,
    pub target: CompareTarget,
}

impl Compare {
    /// `create_revision(key) <result> revision`; with `Equal` and 0: "the key does not exist".
    pub fn create_revision(key: impl Into<String>, result: CompareResult, revision: Revision) -> Self {
        Compare {
            key: key.into(),
            result,
            target: CompareTarget::CreateRevision(revision),
        }
    }
}

/// One op of a transaction's branch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum TxnOp {
    Put { key: String, value: String, lease: LeaseId },
    Range(RangeRequest),
    DeleteRange { range: KeyRange },
}

impl TxnOp {
    fn request(&self) -> KvRequest<'_> {
        match self {
            TxnOp::Put { key, value, lease } => KvRequest::Put {
                key,
                value,
                lease: *lease,
            },
            TxnOp::Range(request) => KvRequest::Range(request),
            TxnOp::DeleteRange { range } => KvRequest::DeleteRange(range),
        }
    }
}

/// A transaction: if every compare holds, the success ops, else the failure ops.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct TxnRequest {
    pub compares: Vec<Compare>,
    pub success: Vec<TxnOp>,
    pub failure: Vec<TxnOp>,
}

impl TxnRequest {
    /// The checks etcd makes before the request reaches the store, in its order: too many ops,
    /// an empty key, a put that another put or a delete of its branch also names.
    fn check(&self) -> Result<(), EtcdError> {
        let most = self.compares.len().max(self.success.len()).max(self.failure.len());
        if most > MAX_TXN_OPS {
            return Err(EtcdError::TooManyOps);
        }
        for compare in &self.compares {
            check_key(&compare.key)?;
        }
        for op in self.success.iter().chain(&self.failure) {
            op.request().check()?;
        }
        for branch in [&self.success, &self.failure] {
            let mut puts = BTreeSet::new();
            for op in branch {
                if let TxnOp::Put { key, .. } = op {
                    let deleted = branch
                        .iter()
                        .any(|other| matches!(other, TxnOp::DeleteRange { range } if range.contains(key)));
                    if !puts.insert(key) || deleted {
                        return Err(EtcdError::DuplicateKey);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A request, as a client sends it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum EtcdCommand {
    /// Write `key`, attached to `lease` ([`NO_LEASE`] for none). "lease not found" writes nothing.
    Put {
        key: String,
        value: String,
        lease: LeaseId,
    },
    /// Read keys, at the latest or an older revision.
    Range(RangeRequest),
    /// Delete every key of the range: how many were deleted.
    DeleteRange {
        range: KeyRange,
    },
    Txn(TxnRequest),
    /// Grant lease `id` (not 0) for `ttl_s` seconds, raised to [`MIN_LEASE_TTL_S`].
    LeaseGrant {
        id: LeaseId,
        ttl_s: i64,
    },
    /// Reset the lease's deadline to a whole TTL from now: the granted TTL, or "lease not found"
    /// (etcd's keep-alive stream answers TTL 0, which its client reports as that error).
    LeaseKeepAlive {
        id: LeaseId,
    },
    /// Delete the lease's keys (one revision) and the lease, or "lease not found".
    LeaseRevoke {
        id: LeaseId,
    },
    /// The whole seconds left, the granted TTL and the keys; TTL -1 when there is no such lease.
    LeaseTimeToLive {
        id: LeaseId,
    },
    /// Forget the history below `revision`.
    Compact {
        revision: Revision,
    },
}

impl EtcdCommand {
    pub fn put(key: impl Into<String>, value: impl Into<String>, lease: LeaseId) -> Self {
        EtcdCommand::Put {
            key: key.into(),
            value: value.into(),
            lease,
        }
    }

    pub fn delete(key: impl Into<String>) -> Self {
        EtcdCommand::DeleteRange {
            range: KeyRange::Key(key.into()),
        }
    }
}

/// A put, a range or a delete, alone or in a transaction: the three share their checks and
/// their run.
#[derive(Clone, Copy)]
enum KvRequest<'a> {
    Put {
        key: &'a str,
        value: &'a str,
        lease: LeaseId,
    },
    Range(&'a RangeRequest),
    DeleteRange(&'a KeyRange),
}

impl KvRequest<'_> {
    /// The check made before the request reaches the store: no empty key.
    fn check(self) -> Result<(), EtcdError> {
        match self {
            KvRequest::Put { key, .. } => check_key(key),
            KvRequest::Range(request) => request.range.check(),
            KvRequest::DeleteRange(range) => range.check(),
        }
    }
}

fn check_key(key: &str) -> Result<(), EtcdError> {
    if key.is_empty() {
        Err(EtcdError::EmptyKey)
    } else {
        Ok(())
    }
}

/// Why etcd refused a request. Nothing was written.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, thiserror::Error, serde::Serialize, serde::Deserialize,
)]
pub enum EtcdError {
    #[error("etcdserver: key is not provided (a request named the empty key)")]
    EmptyKey,
    #[error("etcdserver: too many operations in txn request (at most {MAX_TXN_OPS} compares or ops per branch)")]
    TooManyOps,
    #[error(
        "etcdserver: duplicate key given in txn request (a branch puts a key twice, or puts a key it also deletes)"
    )]
    DuplicateKey,
    #[error("etcdserver: requested lease not found (it expired or was revoked: grant a new one)")]
    LeaseNotFound,
    #[error("etcdserver: lease already exists (grant under another id)")]
    LeaseExists,
    #[error("etcdserver: too large lease TTL (at most {MAX_LEASE_TTL_S} s)")]
    LeaseTtlTooLarge,
    /// etcd answers a grant of id 0 by choosing a random id; this key space chooses none.
    #[error("lease id 0 means \"no lease\": grant the lease under an id of your choosing")]
    LeaseIdZero,
    #[error(
        "mvcc: required revision has been compacted (the history starts at {compact_revision}: read the latest and watch from there)"
    )]
    Compacted { compact_revision: Revision },
    #[error("mvcc: required revision is a future revision (the store is at {current_revision})")]
    FutureRevision { current_revision: Revision },
}

/// The keys a range found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct RangeResponse {
    pub kvs: Vec<KeyValue>,
    /// Every key of the range at that revision, before `max_create_revision` and `limit`.
    pub count: u64,
    /// The limit left keys out.
    pub more: bool,
}

/// The body of a reply. A transaction's responses are `Put`, `Range` and `DeleteRange` bodies.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum EtcdResponse {
    Put,
    Range(RangeResponse),
    DeleteRange {
        deleted: u64,
    },
    Txn {
        succeeded: bool,
        responses: Vec<EtcdResponse>,
    },
    LeaseGrant {
        id: LeaseId,
        ttl_s: i64,
    },
    LeaseKeepAlive {
        id: LeaseId,
        ttl_s: i64,
    },
    LeaseRevoke,
    /// `ttl_s` -1 (and the rest empty): no such lease, as etcd answers.
    LeaseTimeToLive {
        id: LeaseId,
        ttl_s: i64,
        granted_ttl_s: i64,
        keys: Vec<String>,
    },
    Compact,
    Error(EtcdError),
}

/// What the server answers: its response header's revision and the body. etcd sends an error
/// without a header; here an error carries the store's revision too, so every trace line shows
/// where the store stood.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct EtcdReply {
    pub revision: Revision,
    pub response: EtcdResponse,
}

/// One change, as a watcher sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum WatchEvent {
    /// A put; `kv.mod_revision` is its revision. `prev_kv` is `None` when it created the key.
    Put { kv: KeyValue, prev_kv: Option<KeyValue> },
    /// A delete (by a request or a lease's revocation) of a key that existed.
    Delete {
        key: String,
        revision: Revision,
        prev_kv: KeyValue,
    },
}

impl WatchEvent {
    pub fn revision(&self) -> Revision {
        match self {
            WatchEvent::Put { kv, .. } => kv.mod_revision,
            WatchEvent::Delete { revision, .. } => *revision,
        }
    }

    pub fn key(&self) -> &str {
        match self {
            WatchEvent::Put { kv, .. } => &kv.key,
            WatchEvent::Delete { key, .. } => key,
        }
    }
}

/// A granted lease.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Lease {
    pub id: LeaseId,
    /// The granted TTL (after raising to [`MIN_LEASE_TTL_S`]).
    pub ttl_s: i64,
    /// When it expires, on the leader's clock.
    pub deadline_ms: u64,
    /// The keys attached to it.
    pub keys: BTreeSet<String>,
}

impl Lease {
    /// etcd: expired once the remaining time is `<= 0`.
    pub fn is_expired_at(&self, server_now_ms: u64) -> bool {
        server_now_ms >= self.deadline_ms
    }
}

/// A lease the clock ran out, revoked by [`EtcdKeyspace::expire_leases`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ExpiredLease {
    pub id: LeaseId,
    /// The revision of the revocation; `None` when the lease had no keys (nothing changed).
    pub revision: Option<Revision>,
    /// The deletes of its keys, in key order.
    pub events: Vec<WatchEvent>,
}

/// What [`EtcdKeyspace::expire_leases`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct LeaseExpiry {
    /// The revoked leases, in the order they were revoked.
    pub revoked: Vec<ExpiredLease>,
    /// The new compaction revision when the history limit was passed.
    pub auto_compacted: Option<Revision>,
}

/// Everything one command did: the expiries before it, its reply, its changes as watchers see
/// them, and an automatic compaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct EtcdExecuted {
    /// What the clock did first.
    pub expiry: LeaseExpiry,
    pub reply: EtcdReply,
    /// The command's own events, all at `reply.revision` (none when it wrote nothing).
    pub events: Vec<WatchEvent>,
    /// The new compaction revision when the command took the history past its limit.
    pub auto_compacted: Option<Revision>,
}

/// An etcd key space: keys with revisions, leases, the watch history. See the module
/// documentation for the rules.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EtcdKeyspace {
    revision: Revision,
    /// Reads below it and watches from below it are refused (0: never compacted).
    compact_revision: Revision,
    kvs: BTreeMap<String, KeyValue>,
    leases: BTreeMap<LeaseId, Lease>,
    /// Every event at or after `compact_revision`, in revision order.
    history: VecDeque<WatchEvent>,
    history_limit: usize,
}

impl Default for EtcdKeyspace {
    fn default() -> Self {
        Self::new()
    }
}

impl EtcdKeyspace {
    pub fn new() -> Self {
        Self::with_history_limit(MAX_HISTORY_EVENTS)
    }

    /// An empty key space whose watch history keeps at most `history_limit` events (plus the
    /// events of the newest revision, which are always kept).
    pub fn with_history_limit(history_limit: usize) -> Self {
        EtcdKeyspace {
            revision: EMPTY_STORE_REVISION,
            compact_revision: 0,
            kvs: BTreeMap::new(),
            leases: BTreeMap::new(),
            history: VecDeque::new(),
            history_limit,
        }
    }

    /// Run one command at `server_now_ms` and return only its reply.
    pub fn apply(&mut self, command: &EtcdCommand, server_now_ms: u64) -> EtcdReply {
        self.execute(command, server_now_ms).reply
    }

    /// Run one command at `server_now_ms`: first the leases expired by then, then the command.
    pub fn execute(&mut self, command: &EtcdCommand, server_now_ms: u64) -> EtcdExecuted {
        let expiry = self.expire_leases(server_now_ms);
        let revision_before = self.revision;
        let mut run = Run {
            keyspace: self,
            pending: Vec::new(),
        };
        let response = run.command(command, server_now_ms).unwrap_or_else(EtcdResponse::Error);
        let events = run.commit();
        debug_assert_eq!(
            self.revision,
            revision_before + u64::from(!events.is_empty()),
            "{command:?}: a request that changes keys is exactly one revision"
        );
        debug_assert!(
            events.iter().all(|event| event.revision() == self.revision),
            "{command:?}: its events are not all at {}: {events:?}",
            self.revision
        );
        debug_assert!(
            self.leases.values().all(|lease| !lease.is_expired_at(server_now_ms)),
            "{command:?} left a lease expired at {server_now_ms}"
        );
        let auto_compacted = self.compact_history_to_limit();
        self.debug_check_invariant();
        EtcdExecuted {
            expiry,
            reply: EtcdReply {
                revision: self.revision,
                response,
            },
            events,
            auto_compacted,
        }
    }

    /// Revoke every lease expired at `server_now_ms` (deadline at or before it), in deadline
    /// order then id, each as its own revision when it has keys. Every command does this first.
    pub fn expire_leases(&mut self, server_now_ms: u64) -> LeaseExpiry {
        let mut due: Vec<(u64, LeaseId)> = self
            .leases
            .values()
            .filter(|lease| lease.is_expired_at(server_now_ms))
            .map(|lease| (lease.deadline_ms, lease.id))
            .collect();
        due.sort_unstable();
        let revoked = due
            .into_iter()
            .map(|(_, id)| {
                let mut run = Run {
                    keyspace: self,
                    pending: Vec::new(),
                };
                run.revoke(id);
                let events = run.commit();
                ExpiredLease {
                    id,
                    revision: (!events.is_empty()).then_some(self.revision),
                    events,
                }
            })
            .collect();
        let auto_compacted = self.compact_history_to_limit();
        debug_assert!(
            self.leases.values().all(|lease| !lease.is_expired_at(server_now_ms)),
            "expire_leases left a lease expired at {server_now_ms}"
        );
        self.debug_check_invariant();
        LeaseExpiry {
            revoked,
            auto_compacted,
        }
    }

    /// A new leader (after an election, or the restart of a single member) takes over the
    /// leases: every deadline becomes `server_now_ms + extend_ms + ttl`, whether or not it had
    /// passed. etcd extends by its election timeout ([`DEFAULT_ELECTION_TIMEOUT_MS`]).
    pub fn promote(&mut self, server_now_ms: u64, extend_ms: u64) {
        for lease in self.leases.values_mut() {
            lease.deadline_ms = deadline_ms(server_now_ms.saturating_add(extend_ms), lease.ttl_s);
        }
        self.debug_check_invariant();
    }

    /// Every event on `range` at or after `from_revision`, in revision order; "compacted" when
    /// the history no longer reaches back to `from_revision`. To watch from now, pass
    /// [`Self::revision`] + 1.
    pub fn watch_events(&self, from_revision: Revision, range: &KeyRange) -> Result<Vec<WatchEvent>, EtcdError> {
        range.check()?;
        if from_revision < self.compact_revision {
            return Err(EtcdError::Compacted {
                compact_revision: self.compact_revision,
            });
        }
        Ok(self
            .history
            .iter()
            .filter(|event| event.revision() >= from_revision && range.contains(event.key()))
            .cloned()
            .collect())
    }

    /// Every key as of `revision` (0: the latest), in key order: what a range of every key at
    /// that revision finds, without running the clock.
    pub fn key_values_at(&self, revision: Revision) -> Result<Vec<KeyValue>, EtcdError> {
        self.check_readable(Some(revision))?;
        Ok(match revision {
            0 => self.kvs.values().cloned().collect(),
            _ => self.key_values_in(&KeyRange::Prefix(String::new()), revision, &[]),
        })
    }

    /// The current revision (the last write's, or [`EMPTY_STORE_REVISION`]).
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// The last compaction's revision (0: never compacted).
    pub fn compact_revision(&self) -> Revision {
        self.compact_revision
    }

    pub fn get(&self, key: &str) -> Option<&KeyValue> {
        self.kvs.get(key)
    }

    /// Every key, in key order.
    pub fn key_values(&self) -> impl Iterator<Item = &KeyValue> {
        self.kvs.values()
    }

    pub fn lease(&self, id: LeaseId) -> Option<&Lease> {
        self.leases.get(&id)
    }

    /// Every lease, in id order.
    pub fn leases(&self) -> impl Iterator<Item = &Lease> {
        self.leases.values()
    }

    /// The events kept for watchers, in revision order.
    pub fn history(&self) -> impl Iterator<Item = &WatchEvent> {
        self.history.iter()
    }

    /// The current keys of `range`, in key order.
    fn current_in<'a>(&'a self, range: &'a KeyRange) -> impl Iterator<Item = &'a KeyValue> + 'a {
        self.kvs
            .range::<str, _>((Bound::Included(range.start()), Bound::Unbounded))
            .map(|(_, kv)| kv)
            .take_while(move |kv| range.contains(&kv.key))
    }

    /// The keys of `range` as of `revision`: the current ones with every later change undone,
    /// newest first (`pending`: the changes of a transaction not yet committed).
    fn key_values_in(&self, range: &KeyRange, revision: Revision, pending: &[WatchEvent]) -> Vec<KeyValue> {
        debug_assert!(
            self.compact_revision <= revision && revision <= self.revision,
            "a read at {revision} outside the history [{}, {}]",
            self.compact_revision,
            self.revision
        );
        let mut at: BTreeMap<&str, &KeyValue> = self.current_in(range).map(|kv| (kv.key.as_str(), kv)).collect();
        let later = self
            .history
            .iter()
            .rev()
            .take_while(|event| event.revision() > revision);
        for event in pending.iter().rev().chain(later) {
            if !range.contains(event.key()) {
                continue;
            }
            match event {
                WatchEvent::Put { kv, prev_kv: None } => {
                    at.remove(kv.key.as_str());
                }
                WatchEvent::Put {
                    prev_kv: Some(prev), ..
                }
                | WatchEvent::Delete { prev_kv: prev, .. } => {
                    at.insert(&prev.key, prev);
                }
            }
        }
        at.into_values().cloned().collect()
    }

    /// A read at `revision` (`None` or 0: the latest) is possible.
    fn check_readable(&self, revision: Option<Revision>) -> Result<(), EtcdError> {
        match revision {
            None | Some(0) => Ok(()),
            Some(revision) if revision > self.revision => Err(EtcdError::FutureRevision {
                current_revision: self.revision,
            }),
            Some(revision) if revision < self.compact_revision => Err(EtcdError::Compacted {
                compact_revision: self.compact_revision,
            }),
            Some(_) => Ok(()),
        }
    }

    /// The check made on the store before a request runs: its lease exists, its revision is
    /// readable.
    fn check_request(&self, request: KvRequest<'_>) -> Result<(), EtcdError> {
        match request {
            KvRequest::Put { lease, .. } if lease != NO_LEASE && !self.leases.contains_key(&lease) => {
                Err(EtcdError::LeaseNotFound)
            }
            KvRequest::Range(range) => self.check_readable(range.revision),
            KvRequest::Put { .. } | KvRequest::DeleteRange(_) => Ok(()),
        }
    }

    /// Judge a compare on the store as it is (before the transaction's writes).
    fn compare_holds(&self, compare: &Compare) -> bool {
        let Some(kv) = self.kvs.get(&compare.key) else {
            // A missing key: revisions and version 0; a value compare always fails.
            return match &compare.target {
                CompareTarget::Value(_) => false,
                CompareTarget::CreateRevision(operand)
                | CompareTarget::ModRevision(operand)
                | CompareTarget::Version(operand) => compare.result.holds(0.cmp(operand)),
            };
        };
        let ordering = match &compare.target {
            CompareTarget::CreateRevision(operand) => kv.create_revision.cmp(operand),
            CompareTarget::ModRevision(operand) => kv.mod_revision.cmp(operand),
            CompareTarget::Version(operand) => kv.version.cmp(operand),
            CompareTarget::Value(operand) => kv.value.as_str().cmp(operand.as_str()),
        };
        compare.result.holds(ordering)
    }

    /// Forget the history below `revision`.
    fn compact(&mut self, revision: Revision) {
        debug_assert!(self.compact_revision < revision && revision <= self.revision);
        self.compact_revision = revision;
        while self.history.front().is_some_and(|event| event.revision() < revision) {
            self.history.pop_front();
        }
    }

    /// Past the history limit, compact away the oldest revisions, whole, but never the newest.
    fn compact_history_to_limit(&mut self) -> Option<Revision> {
        let before = self.compact_revision;
        while self.history.len() > self.history_limit {
            match self.history.front().map(WatchEvent::revision) {
                Some(oldest) if oldest < self.revision => self.compact(oldest + 1),
                _ => break,
            }
        }
        (self.compact_revision != before).then_some(self.compact_revision)
    }

    fn detach(&mut self, lease: LeaseId, key: &str) {
        if lease != NO_LEASE {
            let detached = self.leases.get_mut(&lease).is_some_and(|lease| lease.keys.remove(key));
            debug_assert!(detached, "{key} was attached to lease {lease}, which did not list it");
        }
    }

    fn attach(&mut self, lease: LeaseId, key: &str) {
        if lease != NO_LEASE {
            let attached = self
                .leases
                .get_mut(&lease)
                .is_some_and(|lease| lease.keys.insert(key.to_owned()));
            debug_assert!(attached, "{key} attached to lease {lease}, which is missing or had it");
        }
    }

    /// Debug builds: revisions within bounds and ordered, keys and leases pointing at each
    /// other, the history in revision order within its limit.
    fn debug_check_invariant(&self) {
        if cfg!(debug_assertions) {
            assert!(self.compact_revision <= self.revision, "compacted past the store");
            for (key, kv) in &self.kvs {
                assert_eq!(key, &kv.key);
                assert!(
                    EMPTY_STORE_REVISION < kv.create_revision
                        && kv.create_revision <= kv.mod_revision
                        && kv.mod_revision <= self.revision,
                    "revisions out of order at {}: {kv:?}",
                    self.revision
                );
                assert!(
                    kv.version >= 1 && kv.version <= kv.mod_revision - kv.create_revision + 1,
                    "a version counts the puts since creation, at most one a revision: {kv:?}"
                );
                assert!(
                    kv.lease == NO_LEASE || self.leases.get(&kv.lease).is_some_and(|lease| lease.keys.contains(key)),
                    "{kv:?} names a lease that does not list it"
                );
            }
            for (id, lease) in &self.leases {
                assert!(*id == lease.id && *id != NO_LEASE, "{lease:?}");
                assert!((MIN_LEASE_TTL_S..=MAX_LEASE_TTL_S).contains(&lease.ttl_s), "{lease:?}");
                assert!(
                    lease
                        .keys
                        .iter()
                        .all(|key| self.kvs.get(key).is_some_and(|kv| kv.lease == *id)),
                    "{lease:?} lists a key not attached to it"
                );
            }
            assert!(
                self.history
                    .iter()
                    .zip(self.history.iter().skip(1))
                    .all(|(a, b)| a.revision() <= b.revision()),
                "the history is out of revision order"
            );
            assert!(
                self.history
                    .iter()
                    .all(|event| self.compact_revision <= event.revision() && event.revision() <= self.revision),
                "an event outside [{}, {}]",
                self.compact_revision,
                self.revision
            );
            assert!(
                self.history.len() <= self.history_limit
                    || self
                        .history
                        .front()
                        .is_some_and(|event| event.revision() == self.revision),
                "the history holds {} events, more than its limit {} and not all of the newest revision",
                self.history.len(),
                self.history_limit
            );
        }
    }
}

/// `now + ttl_s` seconds, in milliseconds.
fn deadline_ms(server_now_ms: u64, ttl_s: i64) -> u64 {
    let ttl_ms = u64::try_from(ttl_s).unwrap_or(0).saturating_mul(MILLIS_PER_SECOND);
    server_now_ms.saturating_add(ttl_ms)
}

/// One request's run: the key space and the changes it made so far. The changes are applied at
/// once and become one revision when the run commits.
struct Run<'a> {
    keyspace: &'a mut EtcdKeyspace,
    pending: Vec<WatchEvent>,
}

impl Run<'_> {
    fn command(&mut self, command: &EtcdCommand, now_ms: u64) -> Result<EtcdResponse, EtcdError> {
        match command {
            EtcdCommand::Put { key, value, lease } => self.single(KvRequest::Put {
                key,
                value,
                lease: *lease,
            }),
            EtcdCommand::Range(request) => self.single(KvRequest::Range(request)),
            EtcdCommand::DeleteRange { range } => self.single(KvRequest::DeleteRange(range)),
            EtcdCommand::Txn(txn) => {
                txn.check()?;
                let succeeded = txn.compares.iter().all(|compare| self.keyspace.compare_holds(compare));
                let branch = if succeeded { &txn.success } else { &txn.failure };
                for op in branch {
                    self.keyspace.check_request(op.request())?;
                }
                let responses = branch.iter().map(|op| self.run(op.request())).collect();
                Ok(EtcdResponse::Txn { succeeded, responses })
            }
            EtcdCommand::LeaseGrant { id, ttl_s } => {
                if *id == NO_LEASE {
                    return Err(EtcdError::LeaseIdZero);
                }
                if *ttl_s > MAX_LEASE_TTL_S {
                    return Err(EtcdError::LeaseTtlTooLarge);
                }
                if self.keyspace.leases.contains_key(id) {
                    return Err(EtcdError::LeaseExists);
                }
                let ttl_s = (*ttl_s).max(MIN_LEASE_TTL_S);
                let lease = Lease {
                    id: *id,
                    ttl_s,
                    deadline_ms: deadline_ms(now_ms, ttl_s),
                    keys: BTreeSet::new(),
                };
                self.keyspace.leases.insert(*id, lease);
                Ok(EtcdResponse::LeaseGrant { id: *id, ttl_s })
            }
            EtcdCommand::LeaseKeepAlive { id } => {
                let lease = self.keyspace.leases.get_mut(id).ok_or(EtcdError::LeaseNotFound)?;
                lease.deadline_ms = deadline_ms(now_ms, lease.ttl_s);
                Ok(EtcdResponse::LeaseKeepAlive {
                    id: *id,
                    ttl_s: lease.ttl_s,
                })
            }
            EtcdCommand::LeaseRevoke { id } => {
                if !self.keyspace.leases.contains_key(id) {
                    return Err(EtcdError::LeaseNotFound);
                }
                self.revoke(*id);
                Ok(EtcdResponse::LeaseRevoke)
            }
            EtcdCommand::LeaseTimeToLive { id } => Ok(match self.keyspace.leases.get(id) {
                None => EtcdResponse::LeaseTimeToLive {
                    id: *id,
                    ttl_s: -1,
                    granted_ttl_s: 0,
                    keys: Vec::new(),
                },
                Some(lease) => EtcdResponse::LeaseTimeToLive {
                    id: *id,
                    // Whole seconds, truncated (etcd: `Remaining().Seconds()` as an integer).
                    ttl_s: i64::try_from(lease.deadline_ms.saturating_sub(now_ms) / MILLIS_PER_SECOND)
                        .unwrap_or(i64::MAX),
                    granted_ttl_s: lease.ttl_s,
                    keys: lease.keys.iter().cloned().collect(),
                },
            }),
            EtcdCommand::Compact { revision } => {
                if *revision > self.keyspace.revision {
                    return Err(EtcdError::FutureRevision {
                        current_revision: self.keyspace.revision,
                    });
                }
                if *revision <= self.keyspace.compact_revision {
                    return Err(EtcdError::Compacted {
                        compact_revision: self.keyspace.compact_revision,
                    });
                }
                self.keyspace.compact(*revision);
                Ok(EtcdResponse::Compact)
            }
        }
    }

    /// A put, range or delete sent alone: checked, then run.
    fn single(&mut self, request: KvRequest<'_>) -> Result<EtcdResponse, EtcdError> {
        request.check()?;
        self.keyspace.check_request(request)?;
        Ok(self.run(request))
    }

    /// Run a checked request: it cannot fail.
    fn run(&mut self, request: KvRequest<'_>) -> EtcdResponse {
        match request {
            KvRequest::Put { key, value, lease } => {
                self.put(key, value, lease);
                EtcdResponse::Put
            }
            KvRequest::Range(request) => EtcdResponse::Range(self.read(request)),
            KvRequest::DeleteRange(range) => {
                let keys: Vec<String> = self.keyspace.current_in(range).map(|kv| kv.key.clone()).collect();
                for key in &keys {
                    self.delete(key);
                }
                EtcdResponse::DeleteRange {
                    deleted: keys.len() as u64,
                }
            }
        }
    }

    /// The revision this run's changes will have.
    fn next_revision(&self) -> Revision {
        self.keyspace.revision + 1
    }

    fn put(&mut self, key: &str, value: &str, lease: LeaseId) {
        let revision = self.next_revision();
        let prev_kv = self.keyspace.kvs.get(key).cloned();
        debug_assert!(
            prev_kv.as_ref().is_none_or(|prev| prev.mod_revision < revision),
            "{key} changed twice in revision {revision}: the transaction checks refuse that"
        );
        let kv = KeyValue {
            key: key.to_owned(),
            create_revision: prev_kv.as_ref().map_or(revision, |prev| prev.create_revision),
            mod_revision: revision,
            version: prev_kv.as_ref().map_or(1, |prev| prev.version + 1),
            value: value.to_owned(),
            lease,
        };
        if let Some(prev) = &prev_kv {
            self.keyspace.detach(prev.lease, key);
        }
        self.keyspace.attach(lease, key);
        self.keyspace.kvs.insert(key.to_owned(), kv.clone());
        self.pending.push(WatchEvent::Put { kv, prev_kv });
    }

    fn delete(&mut self, key: &str) {
        let revision = self.next_revision();
        if let Some(prev_kv) = self.keyspace.kvs.remove(key) {
            self.keyspace.detach(prev_kv.lease, key);
            self.pending.push(WatchEvent::Delete {
                key: key.to_owned(),
                revision,
                prev_kv,
            });
        }
    }

    /// Delete the lease's keys in key order, then the lease.
    fn revoke(&mut self, id: LeaseId) {
        let keys: Vec<String> = self
            .keyspace
            .leases
            .get(&id)
            .map(|lease| lease.keys.iter().cloned().collect())
            .unwrap_or_default();
        for key in &keys {
            self.delete(key);
        }
        let removed = self.keyspace.leases.remove(&id);
        debug_assert!(
            removed.is_some_and(|lease| lease.keys.is_empty()),
            "revoked lease {id} was missing or kept keys"
        );
    }

    fn read(&self, request: &RangeRequest) -> RangeResponse {
        let mut kvs: Vec<KeyValue> = match request.revision {
            None | Some(0) => self.keyspace.current_in(&request.range).cloned().collect(),
            Some(revision) => self.keyspace.key_values_in(&request.range, revision, &self.pending),
        };
        let count = kvs.len() as u64;
        if request.max_create_revision != 0 {
            kvs.retain(|kv| kv.create_revision <= request.max_create_revision);
        }
        // Stable sorts: keys created together stay in key order.
        match request.order {
            RangeOrder::Key => {}
            RangeOrder::CreateAscending => kvs.sort_by_key(|kv| kv.create_revision),
            RangeOrder::CreateDescending => kvs.sort_by_key(|kv| Reverse(kv.create_revision)),
        }
        let more = request.limit != 0 && kvs.len() as u64 > request.limit;
        if more {
            kvs.truncate(usize::try_from(request.limit).unwrap_or(usize::MAX));
        }
        RangeResponse { kvs, count, more }
    }

    /// Make the changes one revision and add them to the history.
    fn commit(self) -> Vec<WatchEvent> {
        let Run { keyspace, pending } = self;
        if !pending.is_empty() {
            keyspace.revision += 1;
            keyspace.history.extend(pending.iter().cloned());
        }
        pending
    }
}

/// A key as traces print it: as is, or `""` when empty.
struct ShownKey<'a>(&'a str);

impl fmt::Display for ShownKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            write!(f, "\"\"")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// As `etcdctl` writes a key or a prefix.
impl fmt::Display for KeyRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyRange::Key(key) => write!(f, "{}", ShownKey(key)),
            KeyRange::Prefix(prefix) => write!(f, "{} --prefix", ShownKey(prefix)),
        }
    }
}

impl fmt::Display for KvRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KvRequest::Put { key, value, lease } => {
                write!(f, "put {} {value:?}", ShownKey(key))?;
                if *lease != NO_LEASE {
                    write!(f, " --lease={lease}")?;
                }
                Ok(())
            }
            KvRequest::Range(request) => write!(f, "{request}"),
            KvRequest::DeleteRange(range) => write!(f, "del {range}"),
        }
    }
}

/// As `etcdctl get` with its flags.
impl fmt::Display for RangeRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "get {}", self.range)?;
        if let Some(revision) = self.revision {
            write!(f, " --rev={revision}")?;
        }
        match self.order {
            RangeOrder::Key => {}
            RangeOrder::CreateAscending => write!(f, " --sort-by=create --order=ascend")?,
            RangeOrder::CreateDescending => write!(f, " --sort-by=create --order=descend")?,
        }
        if self.limit != 0 {
            write!(f, " --limit={}", self.limit)?;
        }
        if self.max_create_revision != 0 {
            write!(f, " --max-create-rev={}", self.max_create_revision)?;
        }
        Ok(())
    }
}

impl fmt::Display for TxnOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.request().fmt(f)
    }
}

/// `create_revision(key) = 0`, `value(key) != "v"`, ...
impl fmt::Display for Compare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let relation = match self.result {
            CompareResult::Equal => "=",
            CompareResult::NotEqual => "!=",
            CompareResult::Less => "<",
            CompareResult::Greater => ">",
        };
        let key = ShownKey(&self.key);
        match &self.target {
            CompareTarget::CreateRevision(operand) => write!(f, "create_revision({key}) {relation} {operand}"),
            CompareTarget::ModRevision(operand) => write!(f, "mod_revision({key}) {relation} {operand}"),
            CompareTarget::Version(operand) => write!(f, "version({key}) {relation} {operand}"),
            CompareTarget::Value(operand) => write!(f, "value({key}) {relation} {operand:?}"),
        }
    }
}

/// Items separated by `separator`.
fn write_joined<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T], separator: &str) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        write!(f, "{}{item}", if i == 0 { "" } else { separator })?;
    }
    Ok(())
}

/// `txn if <compares> then [<ops>] else [<ops>]`.
impl fmt::Display for TxnRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "txn if ")?;
        if self.compares.is_empty() {
            write!(f, "true")?;
        }
        write_joined(f, &self.compares, " and ")?;
        write!(f, " then [")?;
        write_joined(f, &self.success, "; ")?;
        write!(f, "] else [")?;
        write_joined(f, &self.failure, "; ")?;
        write!(f, "]")
    }
}

/// As traces print a command: `etcdctl`'s syntax.
impl fmt::Display for EtcdCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtcdCommand::Put { key, value, lease } => KvRequest::Put {
                key,
                value,
                lease: *lease,
            }
            .fmt(f),
            EtcdCommand::Range(request) => request.fmt(f),
            EtcdCommand::DeleteRange { range } => KvRequest::DeleteRange(range).fmt(f),
            EtcdCommand::Txn(txn) => txn.fmt(f),
            EtcdCommand::LeaseGrant { id, ttl_s } => write!(f, "lease grant {id} {ttl_s}s"),
            EtcdCommand::LeaseKeepAlive { id } => write!(f, "lease keep-alive {id}"),
            EtcdCommand::LeaseRevoke { id } => write!(f, "lease revoke {id}"),
            EtcdCommand::LeaseTimeToLive { id } => write!(f, "lease timetolive {id}"),
            EtcdCommand::Compact { revision } => write!(f, "compact {revision}"),
        }
    }
}

/// `key="value" (create 2, mod 4, version 2, lease 7)`.
impl fmt::Display for KeyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} (create {}, mod {}, version {}",
            ShownKey(&self.key),
            self.value,
            self.create_revision,
            self.mod_revision,
            self.version
        )?;
        if self.lease != NO_LEASE {
            write!(f, ", lease {}", self.lease)?;
        }
        write!(f, ")")
    }
}

impl fmt::Display for RangeResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        write_joined(f, &self.kvs, ", ")?;
        write!(f, "] count {}", self.count)?;
        if self.more {
            write!(f, " (more)")?;
        }
        Ok(())
    }
}

impl fmt::Display for EtcdResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtcdResponse::Put => write!(f, "OK"),
            EtcdResponse::Range(range) => range.fmt(f),
            EtcdResponse::DeleteRange { deleted } => write!(f, "deleted {deleted}"),
            EtcdResponse::Txn { succeeded, responses } => {
                write!(f, "{} [", if *succeeded { "succeeded" } else { "failed" })?;
                write_joined(f, responses, "; ")?;
                write!(f, "]")
            }
            EtcdResponse::LeaseGrant { id, ttl_s } => write!(f, "lease {id} granted, TTL {ttl_s}s"),
            EtcdResponse::LeaseKeepAlive { id, ttl_s } => write!(f, "lease {id} kept alive, TTL {ttl_s}s"),
            EtcdResponse::LeaseRevoke => write!(f, "lease revoked"),
            EtcdResponse::LeaseTimeToLive { id, ttl_s: -1, .. } => write!(f, "lease {id} not found (TTL -1)"),
            EtcdResponse::LeaseTimeToLive {
                id,
                ttl_s,
                granted_ttl_s,
                keys,
            } => {
                write!(f, "lease {id}: {ttl_s}s left of {granted_ttl_s}s, keys [")?;
                write_joined(f, keys, ", ")?;
                write!(f, "]")
            }
            EtcdResponse::Compact => write!(f, "compacted"),
            EtcdResponse::Error(error) => write!(f, "error: {error}"),
        }
    }
}

/// `@<header revision> <body>`.
impl fmt::Display for EtcdReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{} {}", self.revision, self.response)
    }
}

/// `PUT <key-value> @<revision>` or `DELETE <key> @<revision>`.
impl fmt::Display for WatchEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchEvent::Put { kv, .. } => write!(f, "PUT {kv} @{}", kv.mod_revision),
            WatchEvent::Delete { key, revision, .. } => write!(f, "DELETE {} @{revision}", ShownKey(key)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, value: &str, lease: LeaseId) -> EtcdCommand {
        EtcdCommand::put(key, value, lease)
    }

    fn get(key: &str) -> EtcdCommand {
        EtcdCommand::Range(RangeRequest::key(key))
    }

    fn grant(id: LeaseId, ttl_s: i64) -> EtcdCommand {
        EtcdCommand::LeaseGrant { id, ttl_s }
    }

    fn put_op(key: &str, lease: LeaseId) -> TxnOp {
        TxnOp::Put {
            key: key.into(),
            value: String::new(),
            lease,
        }
    }

    fn kvs(reply: &EtcdReply) -> Vec<KeyValue> {
        match &reply.response {
            EtcdResponse::Range(range) => range.kvs.clone(),
            other => panic!("not a range response: {other:?}"),
        }
    }

    /// The mutex's acquire for the key `lock/<lease>`: put it if it does not exist, and read who
    /// holds (the first created under the prefix).
    fn mutex_acquire(lease: LeaseId) -> EtcdCommand {
        let own = format!("lock/{lease:x}");
        let holder = TxnOp::Range(RangeRequest::prefix("lock/").first_created());
        EtcdCommand::Txn(TxnRequest {
            compares: vec![Compare::create_revision(&own, CompareResult::Equal, 0)],
            success: vec![put_op(&own, lease), holder.clone()],
            failure: vec![TxnOp::Range(RangeRequest::key(&own)), holder],
        })
    }

    #[test]
    fn the_empty_store_is_at_revision_1_and_each_write_request_adds_one_however_many_keys() {
        let mut etcd = EtcdKeyspace::new();
        assert_eq!(etcd.apply(&get("a"), 0).revision, 1);
        assert_eq!(etcd.apply(&put("a", "1", NO_LEASE), 0).revision, 2);
        let two_puts = EtcdCommand::Txn(TxnRequest {
            success: vec![put_op("b", NO_LEASE), put_op("c", NO_LEASE)],
            ..TxnRequest::default()
        });
        let executed = etcd.execute(&two_puts, 0);
        assert_eq!(executed.reply.revision, 3, "a transaction is one revision");
        assert_eq!(executed.events.len(), 2);
        assert!(executed.events.iter().all(|event| event.revision() == 3));
        assert_eq!(etcd.get("b").map(|kv| kv.create_revision), Some(3));
        assert_eq!(etcd.get("c").map(|kv| kv.create_revision), Some(3));
    }

    #[test]
    fn a_request_that_changes_nothing_keeps_the_revision() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&put("a", "1", NO_LEASE), 0);
        let nothing = etcd.execute(&EtcdCommand::delete("missing"), 0);
        assert_eq!(nothing.reply.response, EtcdResponse::DeleteRange { deleted: 0 });
        assert_eq!(nothing.reply.revision, 2);
        assert!(nothing.events.is_empty());
        // A failed compare whose failure branch only reads writes nothing.
        let reads_only = EtcdCommand::Txn(TxnRequest {
            compares: vec![Compare::create_revision("a", CompareResult::Equal, 0)],
            success: vec![put_op("a", NO_LEASE)],
            failure: vec![TxnOp::Range(RangeRequest::key("a"))],
        });
        let reply = etcd.apply(&reads_only, 0);
        assert!(matches!(reply.response, EtcdResponse::Txn { succeeded: false, .. }));
        assert_eq!(reply.revision, 2);
        assert_eq!(etcd.get("a").map(|kv| kv.value.as_str()), Some("1"));
    }

    #[test]
    fn version_counts_puts_since_creation_and_a_delete_starts_the_key_afresh() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&put("k", "1", NO_LEASE), 0);
        etcd.apply(&put("k", "2", NO_LEASE), 0);
        let kv = etcd.get("k").cloned();
        assert_eq!(
            kv.map(|kv| (kv.create_revision, kv.mod_revision, kv.version)),
            Some((2, 3, 2))
        );
        etcd.apply(&EtcdCommand::delete("k"), 0);
        etcd.apply(&put("k", "3", NO_LEASE), 0);
        let kv = etcd.get("k").cloned();
        assert_eq!(
            kv.map(|kv| (kv.create_revision, kv.mod_revision, kv.version)),
            Some((5, 5, 1)),
            "re-created: a new, higher create_revision (the fencing token grows)"
        );
    }

    #[test]
    fn compares_on_a_missing_key_see_zeros_and_a_value_compare_always_fails() {
        let mut etcd = EtcdKeyspace::new();
        let txn = |target: CompareTarget, result: CompareResult| {
            EtcdCommand::Txn(TxnRequest {
                compares: vec![Compare {
                    key: "missing".into(),
                    result,
                    target,
                }],
                ..TxnRequest::default()
            })
        };
        let succeeded = |reply: EtcdReply| matches!(reply.response, EtcdResponse::Txn { succeeded: true, .. });
        assert!(succeeded(
            etcd.apply(&txn(CompareTarget::CreateRevision(0), CompareResult::Equal), 0)
        ));
        assert!(succeeded(
            etcd.apply(&txn(CompareTarget::Version(1), CompareResult::Less), 0)
        ));
        assert!(!succeeded(
            etcd.apply(&txn(CompareTarget::ModRevision(0), CompareResult::Greater), 0)
        ));
        for result in [
            CompareResult::Equal,
            CompareResult::NotEqual,
            CompareResult::Less,
            CompareResult::Greater,
        ] {
            assert!(
                !succeeded(etcd.apply(&txn(CompareTarget::Value(String::new()), result), 0)),
                "value {result:?} on a missing key"
            );
        }
        etcd.apply(&put("missing", "b", NO_LEASE), 0);
        assert!(succeeded(
            etcd.apply(&txn(CompareTarget::Value("a".into()), CompareResult::Greater), 0)
        ));
    }

    #[test]
    fn a_transactions_reads_see_its_own_earlier_writes_and_compares_see_the_store_before_it() {
        let mut etcd = EtcdKeyspace::new();
        let txn = EtcdCommand::Txn(TxnRequest {
            compares: vec![Compare::create_revision("a", CompareResult::Equal, 0)],
            success: vec![
                TxnOp::Range(RangeRequest::key("a")),
                put_op("a", NO_LEASE),
                TxnOp::Range(RangeRequest::key("a")),
                TxnOp::Range(RangeRequest::key("a").at_revision(1)),
            ],
            failure: vec![],
        });
        let reply = etcd.apply(&txn, 0);
        let EtcdResponse::Txn {
            succeeded: true,
            responses,
        } = reply.response
        else {
            panic!("{reply:?}")
        };
        let found: Vec<usize> = responses
            .iter()
            .filter_map(|response| match response {
                EtcdResponse::Range(range) => Some(range.kvs.len()),
                _ => None,
            })
            .collect();
        assert_eq!(found, vec![0, 1, 0], "before the put, after it, and as of revision 1");
    }

    #[test]
    fn a_put_with_a_missing_lease_writes_nothing_alone_or_in_a_transaction() {
        let mut etcd = EtcdKeyspace::new();
        let executed = etcd.execute(&put("k", "v", 7), 0);
        assert_eq!(executed.reply.response, EtcdResponse::Error(EtcdError::LeaseNotFound));
        assert_eq!(executed.reply.revision, 1);
        let txn = EtcdCommand::Txn(TxnRequest {
            success: vec![put_op("a", NO_LEASE), put_op("b", 7)],
            ..TxnRequest::default()
        });
        assert_eq!(
            etcd.apply(&txn, 0).response,
            EtcdResponse::Error(EtcdError::LeaseNotFound)
        );
        assert_eq!(
            etcd.key_values().count(),
            0,
            "the first put of the branch did not happen either"
        );
        assert_eq!(etcd.revision(), 1);
    }

    #[test]
    fn a_branch_that_writes_a_key_twice_is_refused_even_when_not_taken() {
        let mut etcd = EtcdKeyspace::new();
        let refused = |success: Vec<TxnOp>, failure: Vec<TxnOp>| {
            EtcdCommand::Txn(TxnRequest {
                compares: vec![],
                success,
                failure,
            })
        };
        let twice = vec![put_op("a", NO_LEASE), put_op("a", NO_LEASE)];
        let put_and_delete = vec![
            TxnOp::DeleteRange {
                range: KeyRange::Prefix("a".into()),
            },
            put_op("ab", NO_LEASE),
        ];
        for txn in [refused(vec![], twice), refused(put_and_delete, vec![])] {
            assert_eq!(
                etcd.apply(&txn, 0).response,
                EtcdResponse::Error(EtcdError::DuplicateKey)
            );
        }
        let two_deletes = vec![
            TxnOp::DeleteRange {
                range: KeyRange::Key("a".into()),
            },
            TxnOp::DeleteRange {
                range: KeyRange::Prefix(String::new()),
            },
        ];
        assert!(matches!(
            etcd.apply(&refused(two_deletes, vec![]), 0).response,
            EtcdResponse::Txn { .. }
        ));
        let too_many = refused(vec![TxnOp::Range(RangeRequest::key("a")); MAX_TXN_OPS + 1], vec![]);
        assert_eq!(
            etcd.apply(&too_many, 0).response,
            EtcdResponse::Error(EtcdError::TooManyOps)
        );
        assert_eq!(
            etcd.apply(&put("", "v", NO_LEASE), 0).response,
            EtcdResponse::Error(EtcdError::EmptyKey)
        );
    }

    #[test]
    fn leases_get_at_least_the_minimum_ttl_and_refuse_id_0_a_second_grant_and_a_huge_ttl() {
        let mut etcd = EtcdKeyspace::new();
        assert_eq!(
            etcd.apply(&grant(1, 1), 0).response,
            EtcdResponse::LeaseGrant {
                id: 1,
                ttl_s: MIN_LEASE_TTL_S
            }
        );
        assert_eq!(etcd.lease(1).map(|lease| lease.deadline_ms), Some(2_000));
        let refused = [
            (grant(1, 5), EtcdError::LeaseExists),
            (grant(0, 5), EtcdError::LeaseIdZero),
            (grant(2, MAX_LEASE_TTL_S + 1), EtcdError::LeaseTtlTooLarge),
        ];
        for (command, error) in refused {
            assert_eq!(etcd.apply(&command, 0).response, EtcdResponse::Error(error));
        }
        assert_eq!(
            etcd.apply(&grant(2, MAX_LEASE_TTL_S), 0).response,
            EtcdResponse::LeaseGrant {
                id: 2,
                ttl_s: MAX_LEASE_TTL_S
            }
        );
        assert_eq!(etcd.revision(), 1, "lease requests are not key writes");
    }

    #[test]
    fn a_lease_expires_at_its_deadline_and_takes_its_keys_in_one_revision() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&grant(1, 5), 1_000);
        etcd.apply(&put("b", "v", 1), 1_000);
        etcd.apply(&put("a", "v", 1), 1_000);
        etcd.apply(&put("c", "v", NO_LEASE), 1_000);
        assert_eq!(etcd.apply(&get("a"), 5_999).revision, 4);
        assert_eq!(
            kvs(&etcd.apply(&get("a"), 5_999)).len(),
            1,
            "live one millisecond before"
        );
        let executed = etcd.execute(&get("a"), 6_000);
        assert_eq!(executed.expiry.revoked.len(), 1);
        let expired = &executed.expiry.revoked[0];
        assert_eq!((expired.id, expired.revision), (1, Some(5)));
        let deleted: Vec<&str> = expired.events.iter().map(WatchEvent::key).collect();
        assert_eq!(deleted, vec!["a", "b"], "in key order, one revision");
        assert!(kvs(&executed.reply).is_empty());
        assert_eq!(executed.reply.revision, 5);
        assert!(etcd.get("c").is_some(), "a key without the lease stays");
        assert_eq!(
            etcd.apply(&EtcdCommand::LeaseKeepAlive { id: 1 }, 6_000).response,
            EtcdResponse::Error(EtcdError::LeaseNotFound)
        );
    }

    #[test]
    fn expired_leases_are_revoked_in_deadline_order_one_revision_each_and_without_keys_none() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&grant(9, 2), 0);
        etcd.apply(&grant(3, 3), 0);
        etcd.apply(&grant(4, 2), 0);
        etcd.apply(&put("x", "v", 3), 0);
        etcd.apply(&put("y", "v", 9), 0);
        let expiry = etcd.expire_leases(10_000);
        let order: Vec<(LeaseId, Option<Revision>)> =
            expiry.revoked.iter().map(|lease| (lease.id, lease.revision)).collect();
        assert_eq!(order, vec![(4, None), (9, Some(4)), (3, Some(5))]);
        assert_eq!(etcd.leases().count(), 0);
    }

    #[test]
    fn keep_alive_resets_the_deadline_and_time_to_live_answers_whole_seconds_left() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&grant(1, 10), 0);
        etcd.apply(&put("k", "v", 1), 0);
        let ttl = EtcdCommand::LeaseTimeToLive { id: 1 };
        assert_eq!(
            etcd.apply(&ttl, 2_500).response,
            EtcdResponse::LeaseTimeToLive {
                id: 1,
                ttl_s: 7,
                granted_ttl_s: 10,
                keys: vec!["k".into()]
            },
            "7.5 s left, truncated"
        );
        assert_eq!(
            etcd.apply(&EtcdCommand::LeaseKeepAlive { id: 1 }, 9_999).response,
            EtcdResponse::LeaseKeepAlive { id: 1, ttl_s: 10 }
        );
        assert_eq!(etcd.lease(1).map(|lease| lease.deadline_ms), Some(19_999));
        assert_eq!(
            kvs(&etcd.apply(&get("k"), 19_998)).len(),
            1,
            "live until the new deadline"
        );
        assert_eq!(
            etcd.apply(&EtcdCommand::LeaseTimeToLive { id: 1 }, 19_999).response,
            EtcdResponse::LeaseTimeToLive {
                id: 1,
                ttl_s: -1,
                granted_ttl_s: 0,
                keys: vec![]
            }
        );
    }

    #[test]
    fn revoke_deletes_the_attached_keys_and_a_put_moves_a_key_between_leases() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&grant(1, 60), 0);
        etcd.apply(&grant(2, 60), 0);
        etcd.apply(&put("a", "v", 1), 0);
        etcd.apply(&put("b", "v", 1), 0);
        etcd.apply(&put("b", "w", 2), 0);
        etcd.apply(&put("c", "v", 1), 0);
        etcd.apply(&put("c", "w", NO_LEASE), 0);
        assert_eq!(
            etcd.lease(1)
                .map(|lease| lease.keys.iter().cloned().collect::<Vec<_>>()),
            Some(vec!["a".to_owned()])
        );
        let executed = etcd.execute(&EtcdCommand::LeaseRevoke { id: 1 }, 0);
        assert_eq!(executed.reply.response, EtcdResponse::LeaseRevoke);
        assert_eq!(executed.events.len(), 1);
        assert_eq!(
            etcd.key_values().map(|kv| kv.key.as_str()).collect::<Vec<_>>(),
            vec!["b", "c"]
        );
        assert_eq!(
            etcd.apply(&EtcdCommand::LeaseRevoke { id: 1 }, 0).response,
            EtcdResponse::Error(EtcdError::LeaseNotFound)
        );
    }

    #[test]
    fn reads_at_an_older_revision_until_compacted_and_never_in_the_future() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&put("k", "1", NO_LEASE), 0);
        etcd.apply(&put("k", "2", NO_LEASE), 0);
        etcd.apply(&EtcdCommand::delete("k"), 0);
        let at = |etcd: &mut EtcdKeyspace, revision| {
            etcd.apply(&EtcdCommand::Range(RangeRequest::key("k").at_revision(revision)), 0)
                .response
        };
        let values = |response: EtcdResponse| match response {
            EtcdResponse::Range(range) => range.kvs.into_iter().map(|kv| kv.value).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(values(at(&mut etcd, 1)), Vec::<String>::new());
        assert_eq!(values(at(&mut etcd, 2)), vec!["1"]);
        assert_eq!(values(at(&mut etcd, 3)), vec!["2"]);
        assert_eq!(values(at(&mut etcd, 4)), Vec::<String>::new());
        assert_eq!(
            at(&mut etcd, 5),
            EtcdResponse::Error(EtcdError::FutureRevision { current_revision: 4 })
        );
        assert_eq!(
            etcd.apply(&EtcdCommand::Compact { revision: 3 }, 0).response,
            EtcdResponse::Compact
        );
        assert_eq!(
            at(&mut etcd, 2),
            EtcdResponse::Error(EtcdError::Compacted { compact_revision: 3 })
        );
        assert_eq!(
            values(at(&mut etcd, 3)),
            vec!["2"],
            "the compaction revision itself is readable"
        );
        for (revision, error) in [
            (3, EtcdError::Compacted { compact_revision: 3 }),
            (5, EtcdError::FutureRevision { current_revision: 4 }),
        ] {
            assert_eq!(
                etcd.apply(&EtcdCommand::Compact { revision }, 0).response,
                EtcdResponse::Error(error)
            );
        }
        assert_eq!(etcd.key_values_at(2), Err(EtcdError::Compacted { compact_revision: 3 }));
    }

    #[test]
    fn the_mutex_reads_who_holds_and_whom_to_wait_for() {
        let mut etcd = EtcdKeyspace::new();
        for lease in [0xa, 0xb, 0xc] {
            etcd.apply(&grant(lease, 30), 0);
        }
        // Queue in the order c, a, b: create revisions 2, 3, 4.
        for lease in [0xc, 0xa, 0xb] {
            etcd.apply(&mutex_acquire(lease), 0);
        }
        let holder = etcd.apply(&EtcdCommand::Range(RangeRequest::prefix("lock/").first_created()), 0);
        let EtcdResponse::Range(range) = &holder.response else {
            panic!("{holder:?}")
        };
        assert_eq!(
            range.kvs.iter().map(|kv| kv.key.as_str()).collect::<Vec<_>>(),
            vec!["lock/c"]
        );
        assert_eq!((range.count, range.more), (3, true));
        // b (created at 4) waits for the key created last at or below 3: a's, not the holder's.
        let predecessor = etcd.apply(
            &EtcdCommand::Range(RangeRequest::prefix("lock/").last_created_at_most(3)),
            0,
        );
        assert_eq!(
            kvs(&predecessor).iter().map(|kv| kv.key.as_str()).collect::<Vec<_>>(),
            vec!["lock/a"]
        );
        // A retried acquire finds its own key and does not queue again.
        let retried = etcd.execute(&mutex_acquire(0xa), 0);
        assert!(matches!(
            retried.reply.response,
            EtcdResponse::Txn { succeeded: false, .. }
        ));
        assert!(retried.events.is_empty());
    }

    #[test]
    fn watch_events_from_a_revision_with_the_previous_key_value() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&put("lock/a", "1", NO_LEASE), 0);
        etcd.apply(&put("other", "1", NO_LEASE), 0);
        etcd.apply(&put("lock/a", "2", NO_LEASE), 0);
        etcd.apply(&EtcdCommand::delete("lock/a"), 0);
        let events = etcd
            .watch_events(3, &KeyRange::Prefix("lock/".into()))
            .unwrap_or_default();
        let shown: Vec<String> = events.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec!["PUT lock/a=\"2\" (create 2, mod 4, version 2) @4", "DELETE lock/a @5"]
        );
        assert!(matches!(&events[0], WatchEvent::Put { prev_kv: Some(prev), .. } if prev.value == "1"));
        assert!(matches!(&events[1], WatchEvent::Delete { prev_kv, .. } if prev_kv.value == "2"));
        assert_eq!(etcd.watch_events(6, &KeyRange::Prefix(String::new())), Ok(vec![]));
        etcd.apply(&EtcdCommand::Compact { revision: 4 }, 0);
        assert_eq!(
            etcd.watch_events(3, &KeyRange::Key("lock/a".into())),
            Err(EtcdError::Compacted { compact_revision: 4 })
        );
        assert_eq!(
            etcd.watch_events(4, &KeyRange::Key("lock/a".into())).map(|e| e.len()),
            Ok(2)
        );
    }

    #[test]
    fn past_the_history_limit_the_oldest_revisions_are_compacted_whole_and_reported() {
        let mut etcd = EtcdKeyspace::with_history_limit(3);
        etcd.apply(&put("a", "1", NO_LEASE), 0);
        etcd.apply(&put("b", "1", NO_LEASE), 0);
        etcd.apply(&put("c", "1", NO_LEASE), 0);
        assert_eq!(etcd.compact_revision(), 0);
        let two = EtcdCommand::Txn(TxnRequest {
            success: vec![put_op("a", NO_LEASE), put_op("b", NO_LEASE)],
            ..TxnRequest::default()
        });
        let executed = etcd.execute(&two, 0);
        assert_eq!(executed.auto_compacted, Some(4), "revisions 2 and 3 dropped");
        assert_eq!(etcd.history().count(), 3);
        // A revision larger than the limit is kept whole.
        let mut small = EtcdKeyspace::with_history_limit(1);
        let executed = small.execute(&two, 0);
        assert_eq!(executed.auto_compacted, None);
        assert_eq!(small.history().count(), 2);
        assert_eq!(small.execute(&put("c", "1", NO_LEASE), 0).auto_compacted, Some(3));
    }

    #[test]
    fn a_new_leader_gives_every_lease_a_whole_ttl_even_one_past_its_deadline() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&grant(1, 5), 0);
        etcd.apply(&put("lock/1", "", 1), 0);
        // No leader between 4 s and 60 s: nobody revoked the lease.
        etcd.promote(60_000, DEFAULT_ELECTION_TIMEOUT_MS);
        assert_eq!(etcd.lease(1).map(|lease| lease.deadline_ms), Some(66_000));
        assert_eq!(kvs(&etcd.apply(&get("lock/1"), 65_999)).len(), 1);
        assert!(kvs(&etcd.apply(&get("lock/1"), 66_000)).is_empty());
    }

    /// etcd-io/etcd#11456: a waiter whose lease expires while it waits is no holder, and every
    /// primitive says so; the next holder's token is higher.
    #[test]
    fn a_waiter_whose_lease_expired_is_told_by_its_own_key_its_watch_and_its_keep_alive() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&grant(0xa, 5), 0);
        etcd.apply(&grant(0xb, 5), 0);
        etcd.apply(&mutex_acquire(0xa), 0); // holds, token 2
        let queued = etcd.apply(&mutex_acquire(0xb), 0); // waits for lock/a, token 3
        assert_eq!(queued.revision, 3);
        etcd.apply(&EtcdCommand::LeaseKeepAlive { id: 0xa }, 4_000); // a stays; b is paused
                                                                     // a releases at 5 s: b's lease expired first, in its own revision.
        let release = etcd.execute(&EtcdCommand::delete("lock/a"), 5_000);
        assert_eq!(
            release.expiry.revoked.first().map(|lease| (lease.id, lease.revision)),
            Some((0xb, Some(4)))
        );
        assert_eq!(release.reply.revision, 5);
        // b's wait on its predecessor ends (3.4.3 answered "acquired" here) ...
        let predecessor = etcd
            .watch_events(4, &KeyRange::Key("lock/a".into()))
            .unwrap_or_default();
        assert_eq!(
            predecessor.iter().map(WatchEvent::revision).collect::<Vec<_>>(),
            vec![5]
        );
        // ... but its own key is gone, its watch on it saw the delete, its lease is unknown.
        assert!(kvs(&etcd.apply(&get("lock/b"), 5_000)).is_empty());
        let own = etcd
            .watch_events(4, &KeyRange::Key("lock/b".into()))
            .unwrap_or_default();
        assert_eq!(
            own.iter().map(ToString::to_string).collect::<Vec<_>>(),
            vec!["DELETE lock/b @4"]
        );
        assert_eq!(
            etcd.apply(&EtcdCommand::LeaseKeepAlive { id: 0xb }, 5_000).response,
            EtcdResponse::Error(EtcdError::LeaseNotFound)
        );
        assert_eq!(
            etcd.apply(&mutex_acquire(0xb), 5_000).response,
            EtcdResponse::Error(EtcdError::LeaseNotFound),
            "and it cannot queue again with the dead lease"
        );
        // The next holder's token is above both earlier ones.
        etcd.apply(&grant(0xc, 5), 5_000);
        etcd.apply(&mutex_acquire(0xc), 5_000);
        assert_eq!(etcd.get("lock/c").map(|kv| kv.create_revision), Some(6));
    }

    #[test]
    fn every_command_expires_leases_first_even_one_that_fails() {
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&grant(1, 2), 0);
        etcd.apply(&put("k", "v", 1), 0);
        let executed = etcd.execute(&put("", "v", NO_LEASE), 2_000);
        assert_eq!(executed.reply.response, EtcdResponse::Error(EtcdError::EmptyKey));
        assert_eq!(executed.expiry.revoked.len(), 1);
        assert_eq!(executed.reply.revision, 3, "the header shows the expiry's revision");
    }

    #[test]
    fn commands_and_replies_print_as_etcdctl_writes_them() {
        let shown: Vec<String> = [
            mutex_acquire(0xa),
            EtcdCommand::Range(RangeRequest::prefix("lock/").last_created_at_most(3).at_revision(4)),
            EtcdCommand::DeleteRange {
                range: KeyRange::Prefix(String::new()),
            },
            grant(7, 5),
            EtcdCommand::LeaseKeepAlive { id: 7 },
            EtcdCommand::Compact { revision: 3 },
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            shown,
            vec![
                "txn if create_revision(lock/a) = 0 then [put lock/a \"\" --lease=10; get lock/ --prefix --sort-by=create --order=ascend --limit=1] else [get lock/a; get lock/ --prefix --sort-by=create --order=ascend --limit=1]",
                "get lock/ --prefix --rev=4 --sort-by=create --order=descend --limit=1 --max-create-rev=3",
                "del \"\" --prefix",
                "lease grant 7 5s",
                "lease keep-alive 7",
                "compact 3",
            ]
        );
        let mut etcd = EtcdKeyspace::new();
        etcd.apply(&grant(0xa, 5), 0);
        let replies: Vec<String> = [
            etcd.apply(&mutex_acquire(0xa), 0),
            etcd.apply(&EtcdCommand::LeaseTimeToLive { id: 0xa }, 1_000),
            etcd.apply(&EtcdCommand::LeaseTimeToLive { id: 3 }, 1_000),
            etcd.apply(&put("k", "v", 3), 1_000),
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            replies,
            vec![
                "@2 succeeded [OK; [lock/a=\"\" (create 2, mod 2, version 1, lease 10)] count 1]",
                "@2 lease 10: 4s left of 5s, keys [lock/a]",
                "@2 lease 3 not found (TTL -1)",
                "@2 error: etcdserver: requested lease not found (it expired or was revoked: grant a new one)",
            ]
        );
    }
}
