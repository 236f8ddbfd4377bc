//! `EtcdKeyspace` against a deliberately naive reference, over random sequences of every
//! command on a few keys and two leases, with random advances of the leader's clock, explicit
//! expiry runs, leader changes, compactions and a small or large history limit.
//!
//! The reference keeps every call ever made, with the clock reading it ran at, in a list, and
//! replays the whole list from nothing to answer anything. It stores no key records at all: it
//! keeps the list of every change ever made (revision, key, and the value and lease written, or
//! a deletion) and derives a key's create revision, mod revision and version, the store as of
//! any revision, and the watch events by scanning that list from its start. Leases are a flat
//! list; the keys attached to one are found by scanning the store. Nothing is shared with
//! `EtcdKeyspace` but the command, reply, event and key-value types.

use cassalock::store::etcd_keyspace::{
    Compare, CompareResult, CompareTarget, EtcdCommand, EtcdError, EtcdExecuted, EtcdKeyspace, EtcdReply, EtcdResponse,
    ExpiredLease, KeyRange, KeyValue, LeaseExpiry, RangeOrder, RangeRequest, RangeResponse, TxnOp, TxnRequest,
    WatchEvent, MAX_HISTORY_EVENTS, MAX_LEASE_TTL_S, MAX_TXN_OPS, MIN_LEASE_TTL_S,
};
use proptest::prelude::*;

/// One change: `write` is the value and lease put, or `None` for a deletion.
#[derive(Clone, Debug)]
struct Change {
    revision: u64,
    key: String,
    write: Option<(String, i64)>,
}

#[derive(Clone, Debug)]
struct LeaseRecord {
    id: i64,
    ttl_s: i64,
    deadline_ms: u64,
}

/// Is `key` one of the keys `range` names? (Written here, not borrowed from the key space.)
fn covers(range: &KeyRange, key: &str) -> bool {
    match range {
        KeyRange::Key(one) => key == one,
        KeyRange::Prefix(prefix) => key.len() >= prefix.len() && &key[..prefix.len()] == prefix,
    }
}

fn names_empty_key(range: &KeyRange) -> bool {
    matches!(range, KeyRange::Key(key) if key.is_empty())
}

/// The store the reference replays into: every change ever, the leases, the compaction floor.
struct Flat {
    changes: Vec<Change>,
    leases: Vec<LeaseRecord>,
    floor: u64,
    limit: usize,
}

impl Flat {
    fn new(limit: usize) -> Self {
        Flat {
            changes: Vec::new(),
            leases: Vec::new(),
            floor: 0,
            limit,
        }
    }

    /// The revision of the newest change, or 1 for a store never written.
    fn revision(&self) -> u64 {
        match self.changes.last() {
            Some(change) => change.revision,
            None => 1,
        }
    }

    /// `key` as of `revision`, by scanning every change from the first.
    fn kv_at(&self, key: &str, revision: u64) -> Option<KeyValue> {
        let mut found: Option<KeyValue> = None;
        for change in &self.changes {
            if change.revision > revision {
                break;
            }
            if change.key != key {
                continue;
            }
            found = match (&change.write, found) {
                (None, _) => None,
                (Some((value, lease)), None) => Some(KeyValue {
                    key: key.to_owned(),
                    create_revision: change.revision,
                    mod_revision: change.revision,
                    version: 1,
                    value: value.clone(),
                    lease: *lease,
                }),
                (Some((value, lease)), Some(old)) => Some(KeyValue {
                    key: key.to_owned(),
                    create_revision: old.create_revision,
                    mod_revision: change.revision,
                    version: old.version + 1,
                    value: value.clone(),
                    lease: *lease,
                }),
            };
        }
        found
    }

    /// Every key as of `revision`, in key order.
    fn store_at(&self, revision: u64) -> Vec<KeyValue> {
        let mut keys: Vec<String> = self.changes.iter().map(|change| change.key.clone()).collect();
        keys.sort();
        keys.dedup();
        keys.iter().filter_map(|key| self.kv_at(key, revision)).collect()
    }

    fn store(&self) -> Vec<KeyValue> {
        self.store_at(u64::MAX)
    }

    fn event_of(&self, change: &Change) -> WatchEvent {
        let before = self.kv_at(&change.key, change.revision - 1);
        match &change.write {
            Some(_) => WatchEvent::Put {
                kv: self.kv_at(&change.key, change.revision).expect("a put leaves its key"),
                prev_kv: before,
            },
            None => WatchEvent::Delete {
                key: change.key.clone(),
                revision: change.revision,
                prev_kv: before.expect("only an existing key is deleted"),
            },
        }
    }

    /// The events of the changes from index `from` on.
    fn events_since(&self, from: usize) -> Vec<WatchEvent> {
        self.changes[from..]
            .iter()
            .map(|change| self.event_of(change))
            .collect()
    }

    fn watch(&self, from_revision: u64, range: &KeyRange) -> Result<Vec<WatchEvent>, EtcdError> {
        if names_empty_key(range) {
            return Err(EtcdError::EmptyKey);
        }
        if from_revision < self.floor {
            return Err(EtcdError::Compacted {
                compact_revision: self.floor,
            });
        }
        Ok(self
            .changes
            .iter()
            .filter(|change| change.revision >= from_revision && covers(range, &change.key))
            .map(|change| self.event_of(change))
            .collect())
    }

    fn lease_index(&self, id: i64) -> Option<usize> {
        self.leases.iter().position(|lease| lease.id == id)
    }

    /// Delete every key whose lease is `id`, all at `revision`, then forget the lease.
    fn revoke(&mut self, id: i64, revision: u64) {
        for kv in self.store() {
            if kv.lease == id {
                self.changes.push(Change {
                    revision,
                    key: kv.key,
                    write: None,
                });
            }
        }
        self.leases.retain(|lease| lease.id != id);
    }

    /// Revoke, one by one, the lease with the earliest deadline (then lowest id) that is due.
    fn expire(&mut self, now: u64) -> LeaseExpiry {
        let mut revoked = Vec::new();
        loop {
            let mut first: Option<LeaseRecord> = None;
            for lease in &self.leases {
                if lease.deadline_ms <= now {
                    let earlier = match &first {
                        None => true,
                        Some(f) => (lease.deadline_ms, lease.id) < (f.deadline_ms, f.id),
                    };
                    if earlier {
                        first = Some(lease.clone());
                    }
                }
            }
            let Some(lease) = first else { break };
            let mark = self.changes.len();
            let revision = self.revision() + 1;
            self.revoke(lease.id, revision);
            let events = self.events_since(mark);
            revoked.push(ExpiredLease {
                id: lease.id,
                revision: if events.is_empty() { None } else { Some(revision) },
                events,
            });
        }
        LeaseExpiry {
            revoked,
            auto_compacted: self.trim(),
        }
    }

    /// Past the limit, raise the floor one revision at a time, never to past the newest.
    fn trim(&mut self) -> Option<u64> {
        let before = self.floor;
        loop {
            let kept: Vec<u64> = self
                .changes
                .iter()
                .filter(|change| change.revision >= self.floor)
                .map(|change| change.revision)
                .collect();
            if kept.len() <= self.limit || kept[0] == self.revision() {
                break;
            }
            self.floor = kept[0] + 1;
        }
        if self.floor == before {
            None
        } else {
            Some(self.floor)
        }
    }

    fn compare_holds(&self, key: &str, result: CompareResult, target: &CompareTarget) -> bool {
        let kv = self.kv_at(key, u64::MAX);
        let (field, operand): (String, String) = match (target, &kv) {
            (CompareTarget::Value(_), None) => return false,
            (CompareTarget::Value(operand), Some(kv)) => (kv.value.clone(), operand.clone()),
            // Numbers compared as zero-padded decimal strings: the same order, another way.
            (CompareTarget::CreateRevision(n), _) => {
                (padded(kv.as_ref().map_or(0, |kv| kv.create_revision)), padded(*n))
            }
            (CompareTarget::ModRevision(n), _) => (padded(kv.as_ref().map_or(0, |kv| kv.mod_revision)), padded(*n)),
            (CompareTarget::Version(n), _) => (padded(kv.as_ref().map_or(0, |kv| kv.version)), padded(*n)),
        };
        match result {
            CompareResult::Equal => field == operand,
            CompareResult::NotEqual => field != operand,
            CompareResult::Less => field < operand,
            CompareResult::Greater => field > operand,
        }
    }

    /// Why a read at `revision` is refused, judged against the store before the request.
    fn unreadable(&self, revision: Option<u64>, current: u64) -> Option<EtcdError> {
        let revision = revision?;
        if revision == 0 {
            None
        } else if revision > current {
            Some(EtcdError::FutureRevision {
                current_revision: current,
            })
        } else if revision < self.floor {
            Some(EtcdError::Compacted {
                compact_revision: self.floor,
            })
        } else {
            None
        }
    }

    fn lease_missing(&self, lease: i64) -> bool {
        lease != 0 && self.lease_index(lease).is_none()
    }

    fn read(&self, request: &RangeRequest) -> RangeResponse {
        let revision = match request.revision {
            None | Some(0) => u64::MAX,
            Some(revision) => revision,
        };
        let mut kvs: Vec<KeyValue> = self
            .store_at(revision)
            .into_iter()
            .filter(|kv| covers(&request.range, &kv.key))
            .collect();
        let count = kvs.len() as u64;
        if request.max_create_revision > 0 {
            kvs.retain(|kv| kv.create_revision <= request.max_create_revision);
        }
        match request.order {
            RangeOrder::Key => {}
            RangeOrder::CreateAscending => {
                kvs.sort_by(|a, b| a.create_revision.cmp(&b.create_revision).then(a.key.cmp(&b.key)))
            }
            RangeOrder::CreateDescending => {
                kvs.sort_by(|a, b| b.create_revision.cmp(&a.create_revision).then(a.key.cmp(&b.key)))
            }
        }
        let mut more = false;
        if request.limit > 0 && kvs.len() as u64 > request.limit {
            kvs.truncate(request.limit as usize);
            more = true;
        }
        RangeResponse { kvs, count, more }
    }

    /// Run one put, range or delete already checked; its changes get `revision`.
    fn run_op(&mut self, op: &TxnOp, revision: u64) -> EtcdResponse {
        match op {
            TxnOp::Put { key, value, lease } => {
                self.changes.push(Change {
                    revision,
                    key: key.clone(),
                    write: Some((value.clone(), *lease)),
                });
                EtcdResponse::Put
            }
            TxnOp::Range(request) => EtcdResponse::Range(self.read(request)),
            TxnOp::DeleteRange { range } => {
                let mut deleted = 0;
                for kv in self.store() {
                    if covers(range, &kv.key) {
                        self.changes.push(Change {
                            revision,
                            key: kv.key,
                            write: None,
                        });
                        deleted += 1;
                    }
                }
                EtcdResponse::DeleteRange { deleted }
            }
        }
    }

    fn op_names_empty_key(op: &TxnOp) -> bool {
        match op {
            TxnOp::Put { key, .. } => key.is_empty(),
            TxnOp::Range(request) => names_empty_key(&request.range),
            TxnOp::DeleteRange { range } => names_empty_key(range),
        }
    }

    fn branch_writes_a_key_twice(branch: &[TxnOp]) -> bool {
        for (i, op) in branch.iter().enumerate() {
            let TxnOp::Put { key, .. } = op else { continue };
            for (j, other) in branch.iter().enumerate() {
                match other {
                    TxnOp::Put { key: other_key, .. } if i != j && other_key == key => return true,
                    TxnOp::DeleteRange { range } if covers(range, key) => return true,
                    _ => {}
                }
            }
        }
        false
    }

    /// Why the store refuses this op of the chosen branch, if it does.
    fn refusal(&self, op: &TxnOp, current: u64) -> Option<EtcdError> {
        match op {
            TxnOp::Put { lease, .. } if self.lease_missing(*lease) => Some(EtcdError::LeaseNotFound),
            TxnOp::Range(request) => self.unreadable(request.revision, current),
            _ => None,
        }
    }

    fn respond(&mut self, command: &EtcdCommand, now: u64) -> Result<EtcdResponse, EtcdError> {
        let current = self.revision();
        let next = current + 1;
        match command {
            EtcdCommand::Put { key, value, lease } => self.single(
                TxnOp::Put {
                    key: key.clone(),
                    value: value.clone(),
                    lease: *lease,
                },
                current,
                next,
            ),
            EtcdCommand::Range(request) => self.single(TxnOp::Range(request.clone()), current, next),
            EtcdCommand::DeleteRange { range } => {
                self.single(TxnOp::DeleteRange { range: range.clone() }, current, next)
            }
            EtcdCommand::Txn(TxnRequest {
                compares,
                success,
                failure,
            }) => {
                if compares.len() > MAX_TXN_OPS || success.len() > MAX_TXN_OPS || failure.len() > MAX_TXN_OPS {
                    return Err(EtcdError::TooManyOps);
                }
                if compares.iter().any(|compare| compare.key.is_empty()) {
                    return Err(EtcdError::EmptyKey);
                }
                if success.iter().chain(failure).any(Self::op_names_empty_key) {
                    return Err(EtcdError::EmptyKey);
                }
                if Self::branch_writes_a_key_twice(success) || Self::branch_writes_a_key_twice(failure) {
                    return Err(EtcdError::DuplicateKey);
                }
                let succeeded = compares
                    .iter()
                    .all(|compare| self.compare_holds(&compare.key, compare.result, &compare.target));
                let branch = if succeeded { success } else { failure };
                for op in branch {
                    if let Some(error) = self.refusal(op, current) {
                        return Err(error);
                    }
                }
                let responses = branch.iter().map(|op| self.run_op(op, next)).collect();
                Ok(EtcdResponse::Txn { succeeded, responses })
            }
            EtcdCommand::LeaseGrant { id, ttl_s } => {
                if *id == 0 {
                    Err(EtcdError::LeaseIdZero)
                } else if *ttl_s > MAX_LEASE_TTL_S {
                    Err(EtcdError::LeaseTtlTooLarge)
                } else if self.lease_index(*id).is_some() {
                    Err(EtcdError::LeaseExists)
                } else {
                    let ttl_s = if *ttl_s < MIN_LEASE_TTL_S {
                        MIN_LEASE_TTL_S
                    } else {
                        *ttl_s
                    };
                    self.leases.push(LeaseRecord {
                        id: *id,
                        ttl_s,
                        deadline_ms: now + ttl_s as u64 * 1000,
                    });
                    Ok(EtcdResponse::LeaseGrant { id: *id, ttl_s })
                }
            }
            EtcdCommand::LeaseKeepAlive { id } => match self.lease_index(*id) {
                None => Err(EtcdError::LeaseNotFound),
                Some(i) => {
                    let lease = &mut self.leases[i];
                    lease.deadline_ms = now + lease.ttl_s as u64 * 1000;
                    Ok(EtcdResponse::LeaseKeepAlive {
                        id: *id,
                        ttl_s: lease.ttl_s,
                    })
                }
            },
            EtcdCommand::LeaseRevoke { id } => {
                if self.lease_index(*id).is_none() {
                    return Err(EtcdError::LeaseNotFound);
                }
                self.revoke(*id, next);
                Ok(EtcdResponse::LeaseRevoke)
            }
            EtcdCommand::LeaseTimeToLive { id } => Ok(match self.lease_index(*id) {
                None => EtcdResponse::LeaseTimeToLive {
                    id: *id,
                    ttl_s: -1,
                    granted_ttl_s: 0,
                    keys: vec![],
                },
                Some(i) => {
                    let lease = &self.leases[i];
                    EtcdResponse::LeaseTimeToLive {
                        id: *id,
                        ttl_s: ((lease.deadline_ms - now) / 1000) as i64,
                        granted_ttl_s: lease.ttl_s,
                        keys: self
                            .store()
                            .into_iter()
                            .filter(|kv| kv.lease == *id)
                            .map(|kv| kv.key)
                            .collect(),
                    }
                }
            }),
            EtcdCommand::Compact { revision } => {
                if *revision > current {
                    Err(EtcdError::FutureRevision {
                        current_revision: current,
                    })
                } else if *revision <= self.floor {
                    Err(EtcdError::Compacted {
                        compact_revision: self.floor,
                    })
                } else {
                    self.floor = *revision;
                    Ok(EtcdResponse::Compact)
                }
            }
        }
    }

    fn single(&mut self, op: TxnOp, current: u64, next: u64) -> Result<EtcdResponse, EtcdError> {
        if Self::op_names_empty_key(&op) {
            return Err(EtcdError::EmptyKey);
        }
        if let Some(error) = self.refusal(&op, current) {
            return Err(error);
        }
        Ok(self.run_op(&op, next))
    }

    fn step(&mut self, command: &EtcdCommand, now: u64) -> EtcdExecuted {
        let expiry = self.expire(now);
        let mark = self.changes.len();
        let response = self.respond(command, now).unwrap_or_else(EtcdResponse::Error);
        let events = self.events_since(mark);
        let auto_compacted = self.trim();
        EtcdExecuted {
            expiry,
            reply: EtcdReply {
                revision: self.revision(),
                response,
            },
            events,
            auto_compacted,
        }
    }

    /// Leases as (id, granted TTL, deadline, attached keys), in id order.
    fn observe_leases(&self) -> Vec<(i64, i64, u64, Vec<String>)> {
        let mut seen: Vec<(i64, i64, u64, Vec<String>)> = self
            .leases
            .iter()
            .map(|lease| {
                let keys = self
                    .store()
                    .into_iter()
                    .filter(|kv| kv.lease == lease.id)
                    .map(|kv| kv.key)
                    .collect();
                (lease.id, lease.ttl_s, lease.deadline_ms, keys)
            })
            .collect();
        seen.sort();
        seen
    }
}

fn padded(n: u64) -> String {
    format!("{n:020}")
}

/// Every call made, with the clock reading it ran at.
#[derive(Clone, Debug)]
enum Call {
    Command(EtcdCommand),
    Expire,
    Promote { extend_ms: u64 },
}

struct Reference {
    limit: usize,
    log: Vec<(Call, u64)>,
}

/// What the last call answered.
#[derive(Debug, PartialEq)]
enum Outcome {
    Executed(EtcdExecuted),
    Expired(LeaseExpiry),
    Promoted,
}

impl Reference {
    fn replay(&self) -> (Flat, Outcome) {
        let mut flat = Flat::new(self.limit);
        let mut outcome = Outcome::Promoted;
        for (call, now) in &self.log {
            outcome = match call {
                Call::Command(command) => Outcome::Executed(flat.step(command, *now)),
                Call::Expire => Outcome::Expired(flat.expire(*now)),
                Call::Promote { extend_ms } => {
                    for lease in &mut flat.leases {
                        lease.deadline_ms = now + extend_ms + lease.ttl_s as u64 * 1000;
                    }
                    Outcome::Promoted
                }
            };
        }
        (flat, outcome)
    }
}

fn observe_leases(etcd: &EtcdKeyspace) -> Vec<(i64, i64, u64, Vec<String>)> {
    etcd.leases()
        .map(|lease| {
            (
                lease.id,
                lease.ttl_s,
                lease.deadline_ms,
                lease.keys.iter().cloned().collect(),
            )
        })
        .collect()
}

/// A revision as generated: a number as such, or one relative to the store's revision or its
/// compaction when the command runs.
#[derive(Clone, Copy, Debug)]
enum Rev {
    Is(u64),
    Behind(u64),
    Ahead,
    Compacted,
}

impl Rev {
    fn resolve(self, current: u64, compacted: u64) -> u64 {
        match self {
            Rev::Is(n) => n,
            Rev::Behind(by) => current.saturating_sub(by),
            Rev::Ahead => current + 1,
            Rev::Compacted => compacted,
        }
    }
}

#[derive(Clone, Debug)]
enum TargetSpec {
    Create(Rev),
    Mod(Rev),
    Version(u64),
    Value(String),
}

#[derive(Clone, Debug)]
struct RangeSpec {
    range: KeyRange,
    revision: Option<Rev>,
    order: RangeOrder,
    limit: u64,
    max_create: Option<Rev>,
}

#[derive(Clone, Debug)]
enum OpSpec {
    Put(String, String, i64),
    Range(RangeSpec),
    Delete(KeyRange),
}

#[derive(Clone, Debug)]
enum Op {
    Kv(OpSpec),
    Txn(Vec<(String, CompareResult, TargetSpec)>, Vec<OpSpec>, Vec<OpSpec>),
    Grant(i64, i64),
    KeepAlive(i64),
    Revoke(i64),
    TimeToLive(i64),
    Compact(Rev),
    Advance(u64),
    Expire,
    Promote(u64),
}

fn resolve_range(spec: &RangeSpec, current: u64, compacted: u64) -> RangeRequest {
    RangeRequest {
        range: spec.range.clone(),
        revision: spec.revision.map(|rev| rev.resolve(current, compacted)),
        order: spec.order,
        limit: spec.limit,
        max_create_revision: spec.max_create.map_or(0, |rev| rev.resolve(current, compacted)),
    }
}

fn resolve_op(spec: &OpSpec, current: u64, compacted: u64) -> TxnOp {
    match spec {
        OpSpec::Put(key, value, lease) => TxnOp::Put {
            key: key.clone(),
            value: value.clone(),
            lease: *lease,
        },
        OpSpec::Range(range) => TxnOp::Range(resolve_range(range, current, compacted)),
        OpSpec::Delete(range) => TxnOp::DeleteRange { range: range.clone() },
    }
}

impl Op {
    /// The command this op sends, its revisions fixed against the store as it stands.
    fn command(&self, current: u64, compacted: u64) -> Option<EtcdCommand> {
        Some(match self {
            Op::Kv(spec) => match resolve_op(spec, current, compacted) {
                TxnOp::Put { key, value, lease } => EtcdCommand::Put { key, value, lease },
                TxnOp::Range(request) => EtcdCommand::Range(request),
                TxnOp::DeleteRange { range } => EtcdCommand::DeleteRange { range },
            },
            Op::Txn(compares, success, failure) => EtcdCommand::Txn(TxnRequest {
                compares: compares
                    .iter()
                    .map(|(key, result, target)| Compare {
                        key: key.clone(),
                        result: *result,
                        target: match target {
                            TargetSpec::Create(rev) => CompareTarget::CreateRevision(rev.resolve(current, compacted)),
                            TargetSpec::Mod(rev) => CompareTarget::ModRevision(rev.resolve(current, compacted)),
                            TargetSpec::Version(n) => CompareTarget::Version(*n),
                            TargetSpec::Value(value) => CompareTarget::Value(value.clone()),
                        },
                    })
                    .collect(),
                success: success.iter().map(|op| resolve_op(op, current, compacted)).collect(),
                failure: failure.iter().map(|op| resolve_op(op, current, compacted)).collect(),
            }),
            Op::Grant(id, ttl_s) => EtcdCommand::LeaseGrant { id: *id, ttl_s: *ttl_s },
            Op::KeepAlive(id) => EtcdCommand::LeaseKeepAlive { id: *id },
            Op::Revoke(id) => EtcdCommand::LeaseRevoke { id: *id },
            Op::TimeToLive(id) => EtcdCommand::LeaseTimeToLive { id: *id },
            Op::Compact(rev) => EtcdCommand::Compact {
                revision: rev.resolve(current, compacted),
            },
            Op::Advance(_) | Op::Expire | Op::Promote(_) => return None,
        })
    }
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => prop::sample::select(vec!["k0", "k1", "l/a", "l/b"]).prop_map(String::from),
        1 => Just(String::new()),
    ]
}

fn key_range() -> impl Strategy<Value = KeyRange> {
    prop_oneof![
        3 => key().prop_map(KeyRange::Key),
        3 => prop::sample::select(vec!["l/", "k", "", "z"]).prop_map(|prefix| KeyRange::Prefix(prefix.into())),
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["", "v1", "v2"]).prop_map(String::from)
}

fn lease() -> impl Strategy<Value = i64> {
    prop_oneof![4 => Just(0i64), 6 => 1i64..=2, 1 => Just(3i64)]
}

fn rev() -> impl Strategy<Value = Rev> {
    prop_oneof![
        1 => (0u64..3).prop_map(Rev::Is),
        4 => (0u64..4).prop_map(Rev::Behind),
        1 => Just(Rev::Ahead),
        1 => Just(Rev::Compacted),
    ]
}

fn range_spec() -> impl Strategy<Value = RangeSpec> {
    (
        key_range(),
        prop::option::weighted(0.4, rev()),
        prop::sample::select(vec![
            RangeOrder::Key,
            RangeOrder::CreateAscending,
            RangeOrder::CreateDescending,
        ]),
        prop_oneof![2 => Just(0u64), 1 => 1u64..3],
        prop::option::weighted(0.3, rev()),
    )
        .prop_map(|(range, revision, order, limit, max_create)| RangeSpec {
            range,
            revision,
            order,
            limit,
            max_create,
        })
}

fn op_spec() -> impl Strategy<Value = OpSpec> {
    prop_oneof![
        4 => (key(), value(), lease()).prop_map(|(k, v, l)| OpSpec::Put(k, v, l)),
        3 => range_spec().prop_map(OpSpec::Range),
        1 => key_range().prop_map(OpSpec::Delete),
    ]
}

fn compare() -> impl Strategy<Value = (String, CompareResult, TargetSpec)> {
    let result = prop::sample::select(vec![
        CompareResult::Equal,
        CompareResult::NotEqual,
        CompareResult::Less,
        CompareResult::Greater,
    ]);
    let target = prop_oneof![
        3 => rev().prop_map(TargetSpec::Create),
        1 => rev().prop_map(TargetSpec::Mod),
        1 => (0u64..3).prop_map(TargetSpec::Version),
        1 => value().prop_map(TargetSpec::Value),
    ];
    (key(), result, target)
}

fn op() -> impl Strategy<Value = Op> {
    let ops = || prop::collection::vec(op_spec(), 0..3);
    let ttl_s = prop_oneof![
        3 => 0i64..4,
        4 => 5i64..=10,
        1 => Just(MAX_LEASE_TTL_S),
        1 => Just(MAX_LEASE_TTL_S + 1)
    ];
    prop_oneof![
        8 => op_spec().prop_map(Op::Kv),
        6 => (prop::collection::vec(compare(), 0..3), ops(), ops()).prop_map(|(c, s, f)| Op::Txn(c, s, f)),
        6 => (prop_oneof![8 => 1i64..=2, 1 => Just(0i64)], ttl_s).prop_map(|(id, ttl)| Op::Grant(id, ttl)),
        3 => (1i64..=3).prop_map(Op::KeepAlive),
        1 => (1i64..=3).prop_map(Op::Revoke),
        1 => (1i64..=3).prop_map(Op::TimeToLive),
        1 => rev().prop_map(Op::Compact),
        4 => prop_oneof![
            10 => prop::sample::select(vec![0u64, 1, 499, 999, 1_000, 1_001]),
            1 => prop::sample::select(vec![1_999u64, 2_000, 3_000, 10_000]),
        ]
        .prop_map(Op::Advance),
        1 => Just(Op::Expire),
        1 => prop::sample::select(vec![0u64, 1_000]).prop_map(Op::Promote),
    ]
}

/// Watch queries compared after every step: from around the floor and the revision, on a few
/// ranges (one names the empty key).
fn compare_watches(etcd: &EtcdKeyspace, flat: &Flat) -> Result<(), TestCaseError> {
    let ranges = [
        KeyRange::Prefix(String::new()),
        KeyRange::Key("k0".into()),
        KeyRange::Prefix("l/".into()),
        KeyRange::Key(String::new()),
    ];
    let floor = flat.floor;
    let current = flat.revision();
    for from in [0, 1, floor.saturating_sub(1), floor, floor + 1, current, current + 1] {
        for range in &ranges {
            prop_assert_eq!(
                etcd.watch_events(from, range),
                flat.watch(from, range),
                "watch {:?} from {}",
                range,
                from
            );
        }
    }
    Ok(())
}

/// The key space as the reference shows it, checked whole: keys, leases, revisions, every
/// readable older revision, the watches.
fn compare_state(etcd: &EtcdKeyspace, flat: &Flat) -> Result<(), TestCaseError> {
    prop_assert_eq!(etcd.key_values().cloned().collect::<Vec<_>>(), flat.store());
    prop_assert_eq!(observe_leases(etcd), flat.observe_leases());
    prop_assert_eq!(etcd.revision(), flat.revision());
    prop_assert_eq!(etcd.compact_revision(), flat.floor);
    for revision in 0..=flat.revision() + 1 {
        let expected = if revision == 0 {
            Ok(flat.store())
        } else if revision > flat.revision() {
            Err(EtcdError::FutureRevision {
                current_revision: flat.revision(),
            })
        } else if revision < flat.floor {
            Err(EtcdError::Compacted {
                compact_revision: flat.floor,
            })
        } else {
            Ok(flat.store_at(revision))
        };
        prop_assert_eq!(etcd.key_values_at(revision), expected, "as of {}", revision);
    }
    compare_watches(etcd, flat)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Every reply, expiry, event and compaction of `EtcdKeyspace`, the store and leases it
    /// shows, its older revisions and its watches after every step, equal the reference's,
    /// whatever came before.
    #[test]
    fn keyspace_matches_the_naive_reference(
        limit in prop::sample::select(vec![2usize, 5, MAX_HISTORY_EVENTS]),
        start_ms in prop_oneof![Just(0u64), Just(1_700_000_000_000u64)],
        ops in prop::collection::vec(op(), 1..100),
    ) {
        let mut etcd = EtcdKeyspace::with_history_limit(limit);
        let mut reference = Reference { limit, log: Vec::new() };
        let mut now = start_ms;
        for op in ops {
            let call = match &op {
                Op::Advance(by_ms) => {
                    now += by_ms;
                    continue;
                }
                Op::Expire => Call::Expire,
                Op::Promote(extend_ms) => Call::Promote { extend_ms: *extend_ms },
                command => Call::Command(
                    command.command(etcd.revision(), etcd.compact_revision()).expect("a command op"),
                ),
            };
            let outcome = match &call {
                Call::Command(command) => Outcome::Executed(etcd.execute(command, now)),
                Call::Expire => Outcome::Expired(etcd.expire_leases(now)),
                Call::Promote { extend_ms } => {
                    etcd.promote(now, *extend_ms);
                    Outcome::Promoted
                }
            };
            reference.log.push((call.clone(), now));
            let (flat, expected) = reference.replay();
            prop_assert_eq!(&outcome, &expected, "{:?} at {}", call, now);
            compare_state(&etcd, &flat)?;
        }
        for later_ms in [0, 1_999, 2_000, 5_000, 3_600_000] {
            let outcome = etcd.expire_leases(now + later_ms);
            reference.log.push((Call::Expire, now + later_ms));
            let (flat, expected) = reference.replay();
            prop_assert_eq!(Outcome::Expired(outcome), expected, "{} ms later", later_ms);
            compare_state(&etcd, &flat)?;
        }
    }
}
