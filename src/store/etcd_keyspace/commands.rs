//! etcd's commands and replies as the key space takes and gives them: ranges, compares,
//! transactions, leases, watch events.

use super::*;

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

    pub(super) fn check(&self) -> Result<(), EtcdError> {
        match self {
            KeyRange::Key(key) => check_key(key),
            KeyRange::Prefix(_) => Ok(()),
        }
    }

    /// The smallest key the range can hold: every key of the range sorts at or after it, and
    /// the keys of the range are contiguous in key order.
    pub(super) fn start(&self) -> &str {
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
    pub(super) fn holds(self, ordering: std::cmp::Ordering) -> bool {
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
    pub(super) fn request(&self) -> KvRequest<'_> {
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
    pub(super) fn check(&self) -> Result<(), EtcdError> {
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
pub(super) enum KvRequest<'a> {
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
    pub(super) fn check(self) -> Result<(), EtcdError> {
        match self {
            KvRequest::Put { key, .. } => check_key(key),
            KvRequest::Range(request) => request.range.check(),
            KvRequest::DeleteRange(range) => range.check(),
        }
    }
}

pub(super) fn check_key(key: &str) -> Result<(), EtcdError> {
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
