//! The ZooKeeper family's locks, each written once as a sans-IO machine over the
//! requests of [`crate::store::znode_tree`].
//!
//! These are "listening" locks: the store orders the waiters (sequential nodes) and tells the
//! next one when its predecessor goes (a watch), where the thesis's queue lock polls its queue
//! head. A machine asks for [`ZkOp`](crate::store::znode_tree::ZkOp)s; the connection it runs
//! on owns the session and stamps it on each request.
//!
//! | file | lock | source |
//! |---|---|---|
//! | [`curator_mutex`] | Curator's `InterProcessMutex`: an ephemeral sequential node, lowest holds, watch the predecessor | seeds' survey |

pub mod curator_mutex;
