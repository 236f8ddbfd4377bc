//! The etcd family's locks, each written once as a sans-IO machine over the requests
//! of [`crate::store::etcd_keyspace`] and the deletion watch of [`crate::store::etcd_client`].
//!
//! Like ZooKeeper's, a "listening" lock: the store orders the waiters (each key's
//! `create_revision`) and tells the next one when the key before it goes (a watch), where the
//! thesis's queue lock polls its queue head.
//!
//! | file | lock | source |
//! |---|---|---|
//! | [`mutex`] | `clientv3/concurrency`'s `Session` + `Mutex`: a key per session under the lock's prefix, lowest create revision holds, watch the key just before ours | seeds' survey |

pub mod mutex;
