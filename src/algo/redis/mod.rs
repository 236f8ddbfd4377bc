//! The Redis family's locks, each written once as a sans-IO machine over the key
//! space of [`crate::store::redis_keyspace`].
//!
//! The thesis's locks poll Cassandra rows; the locks most engineers pick instead put one key in
//! Redis and let the *server* expire it. Everything that makes them safe or unsafe follows from
//! three facts the key space type encodes:
//!
//! - **The server's clock decides expiry.** `SET key token NX PX ttl` makes the key live until
//!   the server's clock passes `now + ttl`. The client only knows when it *sent* the request; the
//!   key may have been written later, never earlier. So a client that counts its lease from the
//!   moment it sent the acquiring request is conservative about when the server stamped it, but
//!   not about the server's clock rate or a jump of it (Kleppmann's Redlock critique).
//! - **A reply can be lost after the command applied.** A timed-out `SET NX` may have taken the
//!   lock. Sending it again then answers nil (the key exists: ours), and a client that reads
//!   nil as "someone else holds it" waits for its own key to expire. The machines here
//!   remember that an earlier attempt may have applied and check the key's value.
//! - **Replication is asynchronous** and persistence may be off: an acknowledged `SET` can
//!   vanish on failover or restart (the simulator's business, not the machine's: the machine
//!   cannot tell).
//!
//! | file | lock | source |
//! |---|---|---|
//! | [`redisson`] | Redisson's `RLock`: reentrant hash lock, pub/sub wait, watchdog renewal every lease/3; the switch for redisson/redisson#775 | seed 001 |
//! | [`redisson_fair`] | Redisson's fair lock: the RLock's scripts with a queue of waiters and their deadlines on the clients' clocks; the release tells the first waiter | seed 001 |
//! | [`redisson_fenced`] | Redisson's `RFencedLock`: the RLock with a token counter beside it, counted up by every acquisition; a resource can fence with it | Redisson's documentation and source |
//! | [`redlock`] | Redlock over N masters: majority within the validity, unlock all and retry after a random delay; switches for node-redlock's and go-redsync's validity bugs | seeds 002, 003 |
//! | [`set_nx`] | `SET key token NX PX ttl`; release by compare-and-delete; extend by compare-and-pexpire | seeds 001–003 (the Redis documentation's single-instance pattern) |
//! | [`setnx_expire`] | `SETNX key` then `EXPIRE key ttl`; release by `DEL`; extend by `EXPIRE`: the two-command recipe before `SET NX PX` | seed 003 |

pub mod redisson;
pub mod redisson_fair;
pub mod redisson_fenced;
pub mod redlock;
pub mod set_nx;
pub mod setnx_expire;

use super::RetryPolicy;

/// What every Redis-family lock machine reads.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedisLockConfig {
    /// The key's time to live on the server (`PX`), milliseconds.
    pub ttl_ms: u64,
    /// How long a waiter sleeps between two attempts on a taken lock, milliseconds.
    pub retry_every_ms: u64,
    /// Give up acquiring after this long on the client's clock (`None`: wait for ever).
    pub max_wait_ms: Option<u64>,
    /// Extend the key this often while held (`None`: no extension; the lease is one TTL).
    pub extend_every_ms: Option<u64>,
    /// Safety margin subtracted from the lease for the client's clock running slow against the
    /// server's, parts per million of the TTL (Redlock's "drift"; 0 trusts the clocks).
    pub drift_ppm: u64,
    /// Consecutive failed requests (timeouts, a server that does not answer) before a call
    /// gives up.
    pub retry: RetryPolicy,
}

impl Default for RedisLockConfig {
    fn default() -> Self {
        RedisLockConfig {
            ttl_ms: 30_000,
            retry_every_ms: 100,
            max_wait_ms: None,
            extend_every_ms: Some(10_000),
            drift_ppm: 10_000,
            retry: RetryPolicy::default(),
        }
    }
}

impl AsRef<RetryPolicy> for RedisLockConfig {
    fn as_ref(&self) -> &RetryPolicy {
        &self.retry
    }
}

/// What a Redis-family holder owns: its key and its token (the value only it wrote).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedisLease {
    pub key: String,
    pub token: String,
    /// The client time at which the request that (re)set the key's expiry was *sent*: the
    /// server applied it at that instant or later, so the key lives at least until
    /// `sent + ttl` on a server clock that runs at the client's rate.
    pub set_sent_at_us: u64,
}

impl RedisLease {
    /// The client time until which the lease is certainly still ours, if the server's clock
    /// runs within `drift_ppm` of the client's: `sent + ttl - drift`.
    pub fn valid_until_us(&self, config: &RedisLockConfig) -> u64 {
        let ttl_us = config.ttl_ms.saturating_mul(1000);
        let drift_us = ttl_us.saturating_mul(config.drift_ppm) / 1_000_000;
        self.set_sent_at_us.saturating_add(ttl_us).saturating_sub(drift_us)
    }
}
