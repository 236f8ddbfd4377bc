//! What an etcd lock asks of a server beyond [`EtcdKeyspace`]'s requests: a watch for one key's
//! deletion, and the registry of such watches that a server (in memory, simulated) keeps.
//!
//! etcd's watches are streams a client opens from a revision; the mutex uses them one way only:
//! "tell me when this key is deleted, counting from the revision I read it at" (`waitDeletes`
//! in `clientv3/concurrency`). [`EtcdOp::WatchDeletion`] is that request. The server answers at
//! once when its history already holds the deletion (the key went between the read and the
//! watch), and otherwise registers the watch and, when a later write or a lease revocation
//! deletes the key, publishes on the waiter's channel ([`DeletionWatches::fired`]). A watch
//! fires once. The waiter is told nothing but "look again": the message carries no decision.
//!
//! A watch from a revision the history no longer reaches ("compacted") is answered as the
//! server answers it, an error: the waiter reads again. A server keeps at most
//! [`MAX_DELETION_WATCHES`]; one more is refused ([`EtcdOpReply::TooManyWatches`]), never
//! dropped silently.

use std::collections::BTreeMap;
use std::fmt;

use super::etcd_keyspace::{EtcdCommand, EtcdKeyspace, EtcdReply, EtcdResponse, KeyRange, Revision, WatchEvent};

/// The most deletion watches one server keeps registered.
pub const MAX_DELETION_WATCHES: usize = 4096;

/// A request of an etcd lock machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum EtcdOp {
    /// A key-value, transaction or lease request, answered by the key space.
    Kv(EtcdCommand),
    /// Tell this client's channel when `key` is deleted at a revision above `after_revision`.
    WatchDeletion { key: String, after_revision: Revision },
}

/// The answer to an [`EtcdOp`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum EtcdOpReply {
    Kv(EtcdReply),
    /// The watch is registered: a message comes when the key is deleted.
    Watching,
    /// The key was deleted already, at this revision.
    Deleted {
        revision: Revision,
    },
    /// The server keeps [`MAX_DELETION_WATCHES`] already.
    TooManyWatches,
}

impl fmt::Display for EtcdOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtcdOp::Kv(command) => write!(f, "{command}"),
            EtcdOp::WatchDeletion { key, after_revision } => {
                write!(f, "WATCH {key} for its deletion after revision {after_revision}")
            }
        }
    }
}

impl fmt::Display for EtcdOpReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtcdOpReply::Kv(reply) => write!(f, "{reply}"),
            EtcdOpReply::Watching => write!(f, "watching"),
            EtcdOpReply::Deleted { revision } => write!(f, "deleted already, at revision {revision}"),
            EtcdOpReply::TooManyWatches => write!(f, "refused: {MAX_DELETION_WATCHES} watches registered"),
        }
    }
}

/// The prefix a key sits under: everything up to its last `/`, kept (the directory a waiter's
/// deletion watches are told on).
pub fn prefix_of_key(key: &str) -> &str {
    key.rfind('/').map_or("", |at| &key[..=at])
}

/// One etcd server as its leader answers: the key space and the deletion watches registered
/// on it. The one server step every driver runs (in memory, simulated, modelled): run the
/// leader's clock on the leases, then answer the request, and say which watch channels to
/// tell. Where the channels lead is the driver's business.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct EtcdServerState {
    pub keyspace: EtcdKeyspace,
    pub watches: DeletionWatches,
}

impl EtcdServerState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Revoke the leases expired at `now_ms` (a server does between requests too); the
    /// channels of the watches on the keys they deleted.
    pub fn expire(&mut self, now_ms: u64) -> Vec<String> {
        let expiry = self.keyspace.expire_leases(now_ms);
        self.watches
            .fired(expiry.revoked.iter().flat_map(|lease| &lease.events))
    }

    /// Answer `op` at `now_ms` (after expiring the leases run out by then); a deletion watch
    /// is registered for `watch_channel`. The reply, and the channels of every watch that this
    /// step fired.
    pub fn handle(&mut self, op: &EtcdOp, watch_channel: &str, now_ms: u64) -> (EtcdOpReply, Vec<String>) {
        let mut told = self.expire(now_ms);
        let reply = match op {
            EtcdOp::Kv(command) => {
                let executed = self.keyspace.execute(command, now_ms);
                told.extend(self.watches.fired(&executed.events));
                EtcdOpReply::Kv(executed.reply)
            }
            EtcdOp::WatchDeletion { key, after_revision } => {
                self.watches.watch(&self.keyspace, key, *after_revision, watch_channel)
            }
        };
        (reply, told)
    }
}

/// The deletion watches one server holds: key → the channels to tell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct DeletionWatches {
    by_key: BTreeMap<String, Vec<String>>,
    registered: usize,
}

impl DeletionWatches {
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a watch on `key` from `after_revision` for `channel`, or answer that the key
    /// is gone already.
    pub fn watch(
        &mut self,
        keyspace: &EtcdKeyspace,
        key: &str,
        after_revision: Revision,
        channel: &str,
    ) -> EtcdOpReply {
        let from = after_revision.saturating_add(1);
        match keyspace.watch_events(from, &KeyRange::Key(key.to_owned())) {
            Err(error) => {
                return EtcdOpReply::Kv(EtcdReply {
                    revision: keyspace.revision(),
                    response: EtcdResponse::Error(error),
                })
            }
            Ok(events) => {
                if let Some(event) = events.iter().find(|e| matches!(e, WatchEvent::Delete { .. })) {
                    return EtcdOpReply::Deleted {
                        revision: event.revision(),
                    };
                }
            }
        }
        if self.registered >= MAX_DELETION_WATCHES {
            return EtcdOpReply::TooManyWatches;
        }
        self.by_key.entry(key.to_owned()).or_default().push(channel.to_owned());
        self.registered += 1;
        EtcdOpReply::Watching
    }

    /// The channels to tell about `events` (a command's, or a lease revocation's); their
    /// watches are spent.
    pub fn fired<'e>(&mut self, events: impl IntoIterator<Item = &'e WatchEvent>) -> Vec<String> {
        let mut told = Vec::new();
        for event in events {
            if let WatchEvent::Delete { key, .. } = event {
                if let Some(channels) = self.by_key.remove(key) {
                    self.registered -= channels.len();
                    told.extend(channels);
                }
            }
        }
        debug_assert_eq!(self.registered, self.by_key.values().map(Vec::len).sum::<usize>());
        told
    }

    /// Cancel every watch registered for `channel` (a waiter that stopped waiting: etcd's
    /// client cancels the watch of a `waitDeletes` that returned).
    pub fn cancel(&mut self, channel: &str) {
        for channels in self.by_key.values_mut() {
            let before = channels.len();
            channels.retain(|c| c != channel);
            self.registered -= before - channels.len();
        }
        self.by_key.retain(|_, channels| !channels.is_empty());
    }

    /// Watches registered and not yet fired.
    pub fn len(&self) -> usize {
        self.registered
    }

    pub fn is_empty(&self) -> bool {
        self.registered == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(keyspace: &mut EtcdKeyspace, key: &str) -> Revision {
        keyspace.apply(&EtcdCommand::put(key, "", 0), 0).revision
    }

    #[test]
    fn a_watch_fires_once_on_the_deletion_and_a_past_deletion_is_answered_at_once() {
        let mut keyspace = EtcdKeyspace::new();
        let mut watches = DeletionWatches::new();
        let read_at = put(&mut keyspace, "/l/a");
        assert_eq!(watches.watch(&keyspace, "/l/a", read_at, "w1"), EtcdOpReply::Watching);
        let put_b = keyspace.execute(&EtcdCommand::put("/l/b", "", 0), 0);
        assert!(
            watches.fired(&put_b.events).is_empty(),
            "a put of another key tells nobody"
        );
        let deleted = keyspace.execute(&EtcdCommand::delete("/l/a"), 0);
        assert_eq!(watches.fired(&deleted.events), vec!["w1".to_string()]);
        assert!(watches.is_empty(), "fired once");
        // Watching from before the deletion: answered at once.
        assert_eq!(
            watches.watch(&keyspace, "/l/a", read_at, "w2"),
            EtcdOpReply::Deleted {
                revision: deleted.reply.revision
            }
        );
        assert!(watches.is_empty());
    }

    #[test]
    fn watches_are_bounded() {
        let mut keyspace = EtcdKeyspace::new();
        let at = put(&mut keyspace, "/l/a");
        let mut watches = DeletionWatches::new();
        for i in 0..MAX_DELETION_WATCHES {
            assert_eq!(
                watches.watch(&keyspace, "/l/a", at, &format!("w{i}")),
                EtcdOpReply::Watching
            );
        }
        assert_eq!(
            watches.watch(&keyspace, "/l/a", at, "one more"),
            EtcdOpReply::TooManyWatches
        );
        let deleted = keyspace.execute(&EtcdCommand::delete("/l/a"), 0);
        assert_eq!(watches.fired(&deleted.events).len(), MAX_DELETION_WATCHES);
        assert_eq!(watches.len(), 0);
    }
}
