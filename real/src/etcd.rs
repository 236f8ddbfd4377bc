//! A real etcd cluster as a [`FamilyStore`] of [`EtcdOp`]s, over the `etcd-client` crate (gRPC
//! on tonic; its build compiles etcd's protobuf files with `protoc`, which
//! `cluster/cassalock-servers install etcd` installs). What
//! [`cassalock::algo::family::EtcdLock`] (our sans-IO machine of `clientv3/concurrency.Mutex`)
//! asks of a server; the crate's own lock API is not used, so the real run checks *our*
//! machine's steps, the ones the model and the simulator check.
//!
//! Every reply is translated to the [`EtcdReply`] that
//! [`cassalock::store::etcd_keyspace::EtcdKeyspace::execute`] gives for the same command (the
//! differential test in `cli/tests/real_servers.rs` holds the two to that, revisions compared
//! by order, not value):
//! - puts, ranges (key or prefix, at a revision, sorted by create revision, `limit`,
//!   `max_create_revision`), deletes and transactions answer their bodies and the header's
//!   revision;
//! - leases are granted under *our* id (the machine draws it; id 0 is refused unsent, as the
//!   key space refuses it), a keep-alive is a keep-alive stream of its own on which the crate
//!   sends one (TTL 0 in the answer is "lease not found") and we a second, whose TTL is the
//!   reply's; revoke and time-to-live as etcd answers them;
//! - etcd's error answers (`requested lease not found`, `lease already exists`, `too large
//!   lease TTL`, `duplicate key`, `too many operations`, `key is not provided`, `compacted`,
//!   `future revision`) are [`EtcdResponse::Error`] replies. etcd sends no header with an error;
//!   the reply carries the highest revision this store has seen. A compaction error does not say
//!   where the history starts: `compact_revision` is 0 then;
//! - no answer within the command timeout, or the gRPC call failing (`Unavailable`, a broken
//!   connection): [`StoreFailure::Timeout`] (a write may have applied); anything else:
//!   [`StoreFailure::Other`].
//!
//! **`WatchDeletion { key, after_revision }`** opens a watch on `key` from `after_revision + 1`
//! and waits for etcd to say it is created (`Watching`), then reads the key once: if it is not
//! there as it was (absent, or created again after `after_revision`), the deletion is in the
//! watched history and the answer is `Deleted` at the first DELETE event's revision, as the key
//! space answers from its history. Otherwise a task keeps the watch and, on the first DELETE
//! event (or the watch breaking: "look again", never a decision), publishes on this store's
//! channel for the key's prefix (everything up to its last `/`), which the driver's waiter
//! subscribed to. A watch from a compacted revision answers `Error(Compacted)`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client as ec;

use cassalock::algo::etcd::mutex::prefix_of as prefix_of_lock;
use cassalock::algo::server_holder::{ReadState, ServerSnapshot};
use cassalock::driver::family::FamilyStore;
use cassalock::driver::notify::{Channels, Subscription};
use cassalock::store::etcd_client::{EtcdOp, EtcdOpReply};
use cassalock::store::etcd_keyspace::{
    CompareResult, CompareTarget, EtcdCommand, EtcdError, EtcdKeyspace, EtcdReply, EtcdResponse, KeyRange, KeyValue,
    Lease, LeaseId, RangeOrder, RangeRequest, RangeResponse, Revision, TxnOp, NO_LEASE,
};
use cassalock::store::StoreFailure;

/// Why a [`RealEtcd`] could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RealEtcdError {
    #[error("etcd endpoints: give host:port[,host:port...], not {0:?}")]
    Servers(String),
}

/// How long one request may take (etcd's own request timeout is 5 s; a leader election in the
/// script's clusters takes about 1-2 s).
pub const DEFAULT_COMMAND_TIMEOUT_MS: u64 = 5000;

/// How long T1-server's reading of a lock's prefix may take in all (its keys, then each
/// lease's time to live); past it the server names nobody, and the holder goes on.
const READ_TIMEOUT_MS: u64 = 1000;

/// The most keys under a lock's prefix a reading takes in (one lease lookup each at most).
const MAX_READ_KEYS: usize = 256;

/// How long a `WatchDeletion` waits for the DELETE event it knows is in the history.
const HISTORY_WAIT_MS: u64 = 3000;

/// One client of an etcd cluster.
pub struct RealEtcd {
    endpoints: Vec<String>,
    client: tokio::sync::Mutex<Option<ec::Client>>,
    channels: Arc<Channels>,
    /// The highest header revision seen (for error replies, which have none).
    revision: AtomicU64,
    command_timeout: Duration,
}

/// The prefix a key sits under: everything up to its last `/`, kept (the in-memory server's).
fn prefix_of_key(key: &str) -> &str {
    key.rfind('/').map_or("", |at| &key[..=at])
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn key_value(kv: &ec::KeyValue) -> KeyValue {
    KeyValue {
        key: text(kv.key()),
        create_revision: kv.create_revision() as Revision,
        mod_revision: kv.mod_revision() as Revision,
        version: kv.version() as u64,
        value: text(kv.value()),
        lease: kv.lease(),
    }
}

fn header_revision(header: Option<&ec::ResponseHeader>) -> Revision {
    header.map_or(0, |h| h.revision() as Revision)
}

/// A failed call: an error answer the key space gives too, or a failure.
fn translate(error: ec::Error) -> Result<EtcdError, StoreFailure> {
    let status = match error {
        ec::Error::GRpcStatus(status) => status,
        ec::Error::TransportError(e) => return Err(StoreFailure::Other(format!("etcd transport: {e}"))),
        ec::Error::IoError(_) => return Err(StoreFailure::Timeout),
        other => return Err(StoreFailure::Other(format!("etcd: {other}"))),
    };
    let message = status.message();
    let known = [
        ("requested lease not found", EtcdError::LeaseNotFound),
        ("lease already exists", EtcdError::LeaseExists),
        ("too large lease TTL", EtcdError::LeaseTtlTooLarge),
        ("duplicate key given in txn request", EtcdError::DuplicateKey),
        ("too many operations in txn request", EtcdError::TooManyOps),
        ("key is not provided", EtcdError::EmptyKey),
        (
            "required revision has been compacted",
            EtcdError::Compacted { compact_revision: 0 },
        ),
    ];
    if let Some((_, error)) = known.into_iter().find(|(said, _)| message.contains(said)) {
        return Ok(error);
    }
    if message.contains("required revision is a future revision") {
        return Ok(EtcdError::FutureRevision { current_revision: 0 });
    }
    // tonic's code, named by its Debug form (the crate does not re-export tonic).
    let code = format!("{:?}", status.code());
    match code.as_str() {
        // The call may have reached the server: a write may have applied.
        "Unavailable" | "DeadlineExceeded" | "Cancelled" | "Unknown" | "Aborted" => Err(StoreFailure::Timeout),
        _ => Err(StoreFailure::Other(format!("etcd: {message} ({code})"))),
    }
}

fn get_options(request: &RangeRequest) -> (String, ec::GetOptions) {
    let mut options = ec::GetOptions::new();
    let key = match &request.range {
        KeyRange::Key(key) => key.clone(),
        KeyRange::Prefix(prefix) => {
            options = if prefix.is_empty() {
                options.with_all_keys()
            } else {
                options.with_prefix()
            };
            prefix.clone()
        }
    };
    if let Some(revision) = request.revision {
        options = options.with_revision(revision as i64);
    }
    options = match request.order {
        RangeOrder::Key => options,
        RangeOrder::CreateAscending => options.with_sort(ec::SortTarget::Create, ec::SortOrder::Ascend),
        RangeOrder::CreateDescending => options.with_sort(ec::SortTarget::Create, ec::SortOrder::Descend),
    };
    if request.limit > 0 {
        options = options.with_limit(request.limit as i64);
    }
    if request.max_create_revision > 0 {
        options = options.with_max_create_revision(request.max_create_revision as i64);
    }
    (key, options)
}

fn delete_options(range: &KeyRange) -> (String, Option<ec::DeleteOptions>) {
    match range {
        KeyRange::Key(key) => (key.clone(), None),
        KeyRange::Prefix(prefix) if prefix.is_empty() => {
            (String::new(), Some(ec::DeleteOptions::new().with_all_keys()))
        }
        KeyRange::Prefix(prefix) => (prefix.clone(), Some(ec::DeleteOptions::new().with_prefix())),
    }
}

fn range_response(response: &ec::GetResponse) -> RangeResponse {
    RangeResponse {
        kvs: response.kvs().iter().map(key_value).collect(),
        count: response.count() as u64,
        more: response.more(),
    }
}

fn compare(compare: &cassalock::store::etcd_keyspace::Compare) -> ec::Compare {
    let op = match compare.result {
        CompareResult::Equal => ec::CompareOp::Equal,
        CompareResult::NotEqual => ec::CompareOp::NotEqual,
        CompareResult::Less => ec::CompareOp::Less,
        CompareResult::Greater => ec::CompareOp::Greater,
    };
    let key = compare.key.clone();
    match &compare.target {
        CompareTarget::CreateRevision(r) => ec::Compare::create_revision(key, op, *r as i64),
        CompareTarget::ModRevision(r) => ec::Compare::mod_revision(key, op, *r as i64),
        CompareTarget::Version(v) => ec::Compare::version(key, op, *v as i64),
        CompareTarget::Value(value) => ec::Compare::value(key, op, value.clone()),
    }
}

fn txn_op(op: &TxnOp) -> ec::TxnOp {
    match op {
        TxnOp::Put { key, value, lease } => ec::TxnOp::put(
            key.clone(),
            value.clone(),
            Some(ec::PutOptions::new().with_lease(*lease)),
        ),
        TxnOp::Range(request) => {
            let (key, options) = get_options(request);
            ec::TxnOp::get(key, Some(options))
        }
        TxnOp::DeleteRange { range } => {
            let (key, options) = delete_options(range);
            ec::TxnOp::delete(key, options)
        }
    }
}

fn txn_response(response: ec::TxnOpResponse) -> EtcdResponse {
    match response {
        ec::TxnOpResponse::Put(_) => EtcdResponse::Put,
        ec::TxnOpResponse::Get(get) => EtcdResponse::Range(range_response(&get)),
        ec::TxnOpResponse::Delete(delete) => EtcdResponse::DeleteRange {
            deleted: delete.deleted() as u64,
        },
        ec::TxnOpResponse::Txn(txn) => EtcdResponse::Txn {
            succeeded: txn.succeeded(),
            responses: txn.op_responses().into_iter().map(txn_response).collect(),
        },
    }
}

impl RealEtcd {
    /// A client of the cluster at `endpoints` (`host:port` each); it connects on the first
    /// request ([`RealEtcd::ping`] connects at once).
    pub fn new(endpoints: &[String]) -> Result<RealEtcd, RealEtcdError> {
        if endpoints.is_empty() || endpoints.iter().any(|s| s.trim().is_empty() || s.contains(',')) {
            return Err(RealEtcdError::Servers(endpoints.join(",")));
        }
        Ok(RealEtcd {
            endpoints: endpoints.iter().map(|e| format!("http://{}", e.trim())).collect(),
            client: tokio::sync::Mutex::new(None),
            channels: Arc::new(Channels::new()),
            revision: AtomicU64::new(0),
            command_timeout: Duration::from_millis(DEFAULT_COMMAND_TIMEOUT_MS),
        })
    }

    /// Connect and read the cluster's revision: an error says why not.
    pub async fn ping(&self) -> Result<(), crate::Unreachable> {
        let endpoints = self.endpoints.join(",").replace("http://", "");
        let reply = self
            .execute(EtcdOp::Kv(EtcdCommand::Range(RangeRequest::key("cassalock-ping"))))
            .await
            .map_err(|e| crate::Unreachable(format!("{endpoints}: etcd: {e}")))?;
        match reply {
            EtcdOpReply::Kv(EtcdReply {
                response: EtcdResponse::Range(_),
                ..
            }) => Ok(()),
            other => Err(crate::Unreachable(format!("{endpoints}: etcd answered {other}"))),
        }
    }

    async fn client(&self) -> Result<ec::Client, StoreFailure> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        let options = ec::ConnectOptions::new()
            .with_connect_timeout(Duration::from_millis(1000))
            .with_timeout(self.command_timeout)
            .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2));
        let connecting = ec::Client::connect(&self.endpoints, Some(options));
        match tokio::time::timeout(self.command_timeout, connecting).await {
            Ok(Ok(client)) => {
                *slot = Some(client.clone());
                Ok(client)
            }
            Ok(Err(_)) | Err(_) => Err(StoreFailure::Unavailable),
        }
    }

    fn seen(&self, revision: Revision) -> Revision {
        self.revision.fetch_max(revision, Ordering::Relaxed).max(revision)
    }

    fn reply(&self, header: Option<&ec::ResponseHeader>, response: EtcdResponse) -> EtcdReply {
        EtcdReply {
            revision: self.seen(header_revision(header)),
            response,
        }
    }

    async fn kv(&self, client: &mut ec::Client, command: EtcdCommand) -> Result<EtcdReply, ec::Error> {
        Ok(match command {
            EtcdCommand::Put { key, value, lease } => {
                let response = client
                    .put(key, value, Some(ec::PutOptions::new().with_lease(lease)))
                    .await?;
                self.reply(response.header(), EtcdResponse::Put)
            }
            EtcdCommand::Range(request) => {
                let (key, options) = get_options(&request);
                let response = client.get(key, Some(options)).await?;
                self.reply(response.header(), EtcdResponse::Range(range_response(&response)))
            }
            EtcdCommand::DeleteRange { range } => {
                let (key, options) = delete_options(&range);
                let response = client.delete(key, options).await?;
                let deleted = response.deleted() as u64;
                self.reply(response.header(), EtcdResponse::DeleteRange { deleted })
            }
            EtcdCommand::Txn(txn) => {
                let request = ec::Txn::new()
                    .when(txn.compares.iter().map(compare).collect::<Vec<_>>())
                    .and_then(txn.success.iter().map(txn_op).collect::<Vec<_>>())
                    .or_else(txn.failure.iter().map(txn_op).collect::<Vec<_>>());
                let response = client.txn(request).await?;
                let body = EtcdResponse::Txn {
                    succeeded: response.succeeded(),
                    responses: response.op_responses().into_iter().map(txn_response).collect(),
                };
                self.reply(response.header(), body)
            }
            EtcdCommand::LeaseGrant { id, ttl_s } => {
                if id == 0 {
                    return Ok(self.error(EtcdError::LeaseIdZero));
                }
                let response = client
                    .lease_grant(ttl_s, Some(ec::LeaseGrantOptions::new().with_id(id)))
                    .await?;
                if !response.error().is_empty() {
                    return Err(ec::Error::InvalidArgs(response.error().to_owned()));
                }
                let body = EtcdResponse::LeaseGrant {
                    id: response.id(),
                    ttl_s: response.ttl(),
                };
                self.reply(response.header(), body)
            }
            EtcdCommand::LeaseKeepAlive { id } => {
                // The crate's call sends a first keep-alive and reads its answer itself (TTL 0:
                // its "lease not found" error); the TTL is read from a second one.
                let (mut keeper, mut stream) = match client.lease_keep_alive(id).await {
                    Ok(opened) => opened,
                    Err(ec::Error::LeaseKeepAliveError(why)) if why.contains("lease not found") => {
                        return Ok(self.error(EtcdError::LeaseNotFound));
                    }
                    Err(other) => return Err(other),
                };
                keeper.keep_alive().await?;
                match stream.message().await? {
                    Some(response) if response.ttl() > 0 => {
                        let body = EtcdResponse::LeaseKeepAlive {
                            id: response.id(),
                            ttl_s: response.ttl(),
                        };
                        self.reply(response.header(), body)
                    }
                    Some(_) => self.error(EtcdError::LeaseNotFound),
                    None => return Err(ec::Error::LeaseKeepAliveError("the keep-alive stream ended".into())),
                }
            }
            EtcdCommand::LeaseRevoke { id } => {
                let response = client.lease_revoke(id).await?;
                self.reply(response.header(), EtcdResponse::LeaseRevoke)
            }
            EtcdCommand::LeaseTimeToLive { id } => {
                let response = client
                    .lease_time_to_live(id, Some(ec::LeaseTimeToLiveOptions::new().with_keys()))
                    .await?;
                let mut keys: Vec<String> = response.keys().iter().map(|k| text(k)).collect();
                keys.sort();
                let body = if response.ttl() < 0 {
                    EtcdResponse::LeaseTimeToLive {
                        id,
                        ttl_s: -1,
                        granted_ttl_s: 0,
                        keys: Vec::new(),
                    }
                } else {
                    EtcdResponse::LeaseTimeToLive {
                        id: response.id(),
                        ttl_s: response.ttl(),
                        granted_ttl_s: response.granted_ttl(),
                        keys,
                    }
                };
                self.reply(response.header(), body)
            }
            EtcdCommand::Compact { revision } => {
                let response = client.compact(revision as i64, None).await?;
                self.reply(response.header(), EtcdResponse::Compact)
            }
        })
    }

    fn error(&self, error: EtcdError) -> EtcdReply {
        EtcdReply {
            revision: self.revision.load(Ordering::Relaxed),
            response: EtcdResponse::Error(error),
        }
    }

    /// Open the watch; answer `Watching`, `Deleted` or the watch's error.
    async fn watch_deletion(
        &self,
        client: &mut ec::Client,
        key: String,
        after_revision: Revision,
    ) -> Result<EtcdOpReply, ec::Error> {
        let from = after_revision.saturating_add(1) as i64;
        let mut stream = client
            .watch(key.clone(), Some(ec::WatchOptions::new().with_start_revision(from)))
            .await?;
        // Until etcd says the watch is created (events may come in the same answer).
        let mut first_delete = None;
        loop {
            let Some(response) = stream.message().await? else {
                return Err(ec::Error::WatchError(
                    "the watch stream ended before it was created".into(),
                ));
            };
            if response.canceled() {
                let compact_revision = response.compact_revision().max(0) as Revision;
                return Ok(EtcdOpReply::Kv(self.error(if compact_revision > 0 {
                    EtcdError::Compacted { compact_revision }
                } else {
                    EtcdError::FutureRevision {
                        current_revision: self.revision.load(Ordering::Relaxed),
                    }
                })));
            }
            first_delete = first_delete.or_else(|| first_delete_in(&response));
            if response.created() {
                break;
            }
        }
        if let Some(revision) = first_delete {
            return Ok(EtcdOpReply::Deleted { revision });
        }
        // Is the key still as it was at after_revision? Then no deletion is in the history yet.
        let now = client.get(key.clone(), None).await?;
        self.seen(header_revision(now.header()));
        let unchanged = now
            .kvs()
            .first()
            .is_some_and(|kv| (kv.create_revision() as Revision) <= after_revision);
        let (told, heard) = tokio::sync::oneshot::channel();
        let channels = Arc::clone(&self.channels);
        let channel = prefix_of_key(&key).to_owned();
        tokio::spawn(async move {
            let mut told = Some(told);
            // Until the DELETE; a watch that breaks (a server went) or is cancelled ends too,
            // and the waiter looks again.
            while let Ok(Some(response)) = stream.message().await {
                if let Some(revision) = first_delete_in(&response) {
                    if let Some(told) = told.take() {
                        let _ = told.send(revision);
                    }
                    break;
                }
                if response.canceled() {
                    break;
                }
            }
            channels.publish(&channel);
            drop(stream);
        });
        if unchanged {
            return Ok(EtcdOpReply::Watching);
        }
        // Gone or created again since: the DELETE event is in the watched history.
        match tokio::time::timeout(Duration::from_millis(HISTORY_WAIT_MS), heard).await {
            Ok(Ok(revision)) => Ok(EtcdOpReply::Deleted { revision }),
            _ => Ok(EtcdOpReply::Watching),
        }
    }
}

fn first_delete_in(response: &ec::WatchResponse) -> Option<Revision> {
    response
        .events()
        .iter()
        .find(|e| e.event_type() == ec::EventType::Delete)
        .and_then(|e| e.kv().map(|kv| kv.mod_revision() as Revision))
}

impl RealEtcd {
    /// The keys under lock `key`'s prefix (the etcd mutex's layout,
    /// [`cassalock::algo::etcd::mutex::prefix_of`]) and their leases, as the server holds them
    /// now: what the lock's holder rule reads. A lease's deadline is placed a second past the
    /// whole seconds etcd says it has left, on this machine's clock (never earlier than on the
    /// leader); a lease etcd no longer knows is left out, and its keys with it.
    async fn read_prefix(&self, client: &mut ec::Client, key: &str) -> Result<EtcdKeyspace, ec::Error> {
        let prefix = prefix_of_lock(key);
        let response = client
            .get(prefix.as_str(), Some(ec::GetOptions::new().with_prefix()))
            .await?;
        let kvs: Vec<KeyValue> = response.kvs().iter().map(key_value).collect();
        if kvs.len() > MAX_READ_KEYS {
            return Err(ec::Error::InvalidArgs(format!(
                "reading {prefix}: {} keys, over the {MAX_READ_KEYS} a reading takes in",
                kvs.len()
            )));
        }
        let revision = header_revision(response.header());
        let mut ids: Vec<LeaseId> = kvs.iter().map(|kv| kv.lease).filter(|id| *id != NO_LEASE).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut leases = Vec::with_capacity(ids.len());
        for id in ids {
            let lived = client.lease_time_to_live(id, None).await?;
            let now_ms = crate::now_us() / 1000;
            if lived.ttl() >= 0 {
                leases.push(Lease {
                    id,
                    ttl_s: lived.granted_ttl(),
                    deadline_ms: now_ms.saturating_add((lived.ttl() as u64).saturating_add(1).saturating_mul(1000)),
                    keys: kvs
                        .iter()
                        .filter(|kv| kv.lease == id)
                        .map(|kv| kv.key.clone())
                        .collect(),
                });
            }
        }
        Ok(EtcdKeyspace::as_read(revision, kvs, leases))
    }
}

impl FamilyStore<EtcdOp> for RealEtcd {
    type Reply = EtcdOpReply;

    /// Lock `key`'s keys and leases as the server holds them now; a cluster that cannot be
    /// reached, or does not answer within [`READ_TIMEOUT_MS`], names nobody
    /// ([`ReadState::Down`]).
    async fn read_state(&self, key: &str) -> Option<Result<Vec<ServerSnapshot>, StoreFailure>> {
        let down = || {
            Some(Ok(vec![ServerSnapshot {
                state: ReadState::Down,
                now_ms: crate::now_us() / 1000,
            }]))
        };
        let Ok(mut client) = self.client().await else {
            return down();
        };
        let read = tokio::time::timeout(
            Duration::from_millis(READ_TIMEOUT_MS),
            self.read_prefix(&mut client, key),
        )
        .await;
        match read {
            Ok(Ok(keyspace)) => Some(Ok(vec![ServerSnapshot {
                state: ReadState::Etcd(keyspace),
                now_ms: crate::now_us() / 1000,
            }])),
            Ok(Err(ec::Error::InvalidArgs(why))) => Some(Err(StoreFailure::Other(why))),
            Ok(Err(_)) | Err(_) => down(),
        }
    }

    async fn execute(&self, op: EtcdOp) -> Result<EtcdOpReply, StoreFailure> {
        let mut client = self.client().await?;
        let answer = async {
            match op {
                EtcdOp::Kv(command) => self.kv(&mut client, command).await.map(EtcdOpReply::Kv),
                EtcdOp::WatchDeletion { key, after_revision } => {
                    self.watch_deletion(&mut client, key, after_revision).await
                }
            }
        };
        match tokio::time::timeout(self.command_timeout, answer).await {
            Err(_) => Err(StoreFailure::Timeout),
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(error)) => translate(error).map(|error| EtcdOpReply::Kv(self.error(error))),
        }
    }

    /// Deletions this client watches of keys under `prefix`.
    async fn subscribe(&self, prefix: &str) -> Option<Subscription> {
        Some(self.channels.subscribe(prefix))
    }
}
