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

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::ops::Bound;

mod commands;
mod display;
pub use commands::*;

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

    /// The part of a key space a client read from a real server (T1-server's reading,
    /// `cassalock::algo::server_holder::ServerSnapshot`): these keys and leases, at
    /// `revision`; no history. A snapshot to ask who holds, not a server to run commands on.
    pub fn as_read(
        revision: Revision,
        kvs: impl IntoIterator<Item = KeyValue>,
        leases: impl IntoIterator<Item = Lease>,
    ) -> Self {
        let mut keyspace = EtcdKeyspace::new();
        keyspace.kvs = kvs.into_iter().map(|kv| (kv.key.clone(), kv)).collect();
        keyspace.leases = leases.into_iter().map(|lease| (lease.id, lease)).collect();
        keyspace.revision = keyspace
            .kvs
            .values()
            .map(|kv| kv.mod_revision)
            .fold(revision, Revision::max);
        keyspace
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

#[cfg(test)]
mod tests;
