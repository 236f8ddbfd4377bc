//! Who the etcd server says holds a mutex's key (T1-server), read as the mutex reads it: the
//! contender with the lowest create revision under the lock's prefix.

use super::prefix_of;
use crate::algo::server_holder::ServerHolder;
use crate::store::etcd_keyspace::{EtcdKeyspace, NO_LEASE};

/// Who the server says holds `key` (T1-server): among the keys under the lock's prefix whose
/// lease is live at `server_now_ms`, the one with the lowest create revision, by that revision
/// (the token), gone at its lease's deadline.
pub fn holder_on_server(keyspace: &EtcdKeyspace, key: &str, server_now_ms: u64) -> ServerHolder {
    let prefix = prefix_of(key);
    keyspace
        .key_values()
        .filter(|kv| kv.key.starts_with(&prefix))
        .filter(|kv| {
            kv.lease == NO_LEASE
                || keyspace
                    .lease(kv.lease)
                    .is_some_and(|lease| !lease.is_expired_at(server_now_ms))
        })
        .min_by_key(|kv| kv.create_revision)
        .map_or(ServerHolder::Nobody, |kv| {
            // Gone once the leader's clock reaches its lease's deadline.
            let deadline_ms = keyspace.lease(kv.lease).map(|lease| lease.deadline_ms);
            ServerHolder::token_until(
                &format!("{:020}", kv.create_revision),
                deadline_ms.map(|ms| ms.saturating_mul(1000)),
            )
        })
}
