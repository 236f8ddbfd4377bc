//! How etcd's commands, replies and watch events print in traces and timelines.

use super::*;

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
