//! The lock in cassalock's model checker: the same machines, stepped by the model's clients
//! against the model's Memcached server (whose clock may jump, which may restart empty, whose
//! requests and replies may be lost), with every interleaving explored.

use cassalock::algo::family::RenewalEnd;
use cassalock::algo::RetryPolicy;
use cassalock::store::memcached::{Memcached, MemcachedCommand, MemcachedReply};
use cassalock_models::family::{FamilyMutants, MemcachedServer, ModelFamily, NoLane};
use cassalock_models::Fault;

use super::{CasLease, CasLeaseConfig, CasLeaseLock};

impl ModelFamily for CasLeaseLock {
    type Server = MemcachedServer;
    type Lane = NoLane<CasLeaseConfig, MemcachedCommand, MemcachedReply>;
    const MODEL: &'static str = "cas-lease";
    const HELP: &'static str =
        "a lease lock over one compare-and-set register (T1-belief, T1-resource, C-free, C-release, T2)";

    fn supports(fault: Fault) -> bool {
        matches!(
            fault,
            Fault::None | Fault::Pause | Fault::StoreFailure | Fault::Restart | Fault::ServerClockJump
        )
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, _extend: bool, _: &FamilyMutants) -> CasLeaseConfig {
        debug_assert_eq!(
            ms_per_tick, 1000,
            "the register's server counts whole seconds: a tick is one"
        );
        CasLeaseConfig {
            lease_s: u32::from(ttl_ticks),
            retry_every_ms: ms_per_tick,
            max_wait_ms: None,
            // One retry, a tick later: a lost request or reply is sent again once.
            retry: RetryPolicy {
                max_retries: 1,
                backoff_ms: ms_per_tick,
            },
        }
    }

    fn server(_: Fault) -> MemcachedServer {
        MemcachedServer {
            items: Memcached::new(),
            ahead_ticks: 0,
        }
    }

    fn describe_lock(_: &CasLeaseConfig, extend: bool) -> String {
        format!(
            "cas-lease (a register read with gets, taken with add or cas, released by cas to free{})",
            if extend { ", one extension" } else { "" }
        )
    }

    fn describe_timing(config: &CasLeaseConfig) -> String {
        format!(
            "lease {} s, believed for the lease - 1 s (the server counts whole seconds), read again every tick",
            config.lease_s
        )
    }

    fn counted_from_us(lease: &CasLease) -> Option<u64> {
        Some(lease.written_at_us)
    }

    fn lane_ended(output: RenewalEnd) -> RenewalEnd {
        output
    }

    fn lane_lease(lane: &Self::Lane) -> CasLease {
        lane.unreachable()
    }
}
