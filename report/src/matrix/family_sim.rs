//! The simulator's lines in the other families' cells, as tables: which named scenario of the
//! families' simulator (`cassalock sim --scenario NAME`, sim/src/family) judges which fault
//! column of each lock's row, and which scenario catches each planted client bug.
//!
//! The scenarios are written once, in sim/src/family/scenario.rs, and this file only says where
//! each one's verdicts go; they are searched seed by seed like the thesis's (`seed_search`),
//! their judges filed under the claim IDs of docs/claims.md. A scenario that plants a client's
//! bug (go-redsync, node-redlock, Redisson 775, etcd 11456 and 10756, CURATOR-604, the barging
//! fair lock) is not a fault of the lock: those are the "Broken variants" lines
//! ([`CLIENT_BUGS`]), and docs/mutants.md.

use cassalock_judge::ClaimId;
use cassalock_sim::family::scenario::build as build_family;

use super::grid::{Column, Row};

/// A simulator line of a cell: (scenario, label).
pub(super) type Line = (&'static str, &'static str);

/// A cell's simulator lines. Empty: the cell is judged by the model alone.
pub(super) fn scenarios(row: Row, column: Column) -> &'static [Line] {
    match row {
        Row::RedisSetNx => redis_set_nx(column),
        Row::Redlock => redlock(column),
        Row::Memcached => memcached(column),
        Row::Redisson => redisson(column),
        Row::RedissonFair => redisson_fair(column),
        Row::Zookeeper => zookeeper(column),
        Row::Etcd => etcd(column),
        _ => &[],
    }
}

/// Redis `SET NX PX`'s simulator lines.
fn redis_set_nx(column: Column) -> &'static [Line] {
    use Column as C;
    match column {
        C::None => &[("set-nx-contention", "sim, 5-32 clients, one Redis")],
        C::StoreFailure => &[(
            "set-nx-lost-messages",
            "sim, 8 clients, 5% of requests and 5% of replies lost",
        )],
        C::Restart => &[
            (
                "set-nx-restart-no-persistence",
                "sim, the server restarts empty right after an acquire",
            ),
            (
                "set-nx-restart-persistence",
                "sim, the same restart with appendfsync always (control)",
            ),
        ],
        C::Failover => &[(
            "set-nx-failover-after-acquire",
            "sim, the primary fails over right after an acquire, before replication",
        )],
        C::ServerClockJump => &[(
            "set-nx-clock-drift",
            "sim, the server's clock runs 5% fast (a drift past the lock's 1% margin, not a jump)",
        )],
        _ => &[],
    }
}

/// Redlock's simulator lines.
fn redlock(column: Column) -> &'static [Line] {
    use Column as C;
    match column {
        C::None => &[("redlock-contention", "sim, 5 clients, 5 masters")],
        C::Pause => &[(
            "redlock-gc-pause",
            "sim, the holder pauses past the TTL between its check and its write",
        )],
        C::StoreFailure => &[
            ("redlock-lost-messages", "sim, 5% of requests and 5% of replies lost"),
            (
                "redlock-retry-after-drop",
                "sim, 3 of 5 masters drop the first second's requests",
            ),
        ],
        C::Restart => &[
            (
                "redlock-restart-no-fsync",
                "sim, a master of the holder's majority restarts empty at once",
            ),
            (
                "redlock-restart-delayed",
                "sim, the same restart delayed by the TTL (control)",
            ),
        ],
        C::ServerClockJump => &[(
            "redlock-clock-jump",
            "sim, a master of the holder's majority jumps forward by the TTL",
        )],
        _ => &[],
    }
}

/// Memcached `add`'s simulator lines.
fn memcached(column: Column) -> &'static [Line] {
    use Column as C;
    match column {
        C::None => &[("memcached-contention", "sim, 5-32 clients, one Memcached")],
        C::Pause => &[(
            "memcached-pause",
            "sim, the holder pauses past the TTL between its check and its write",
        )],
        C::StoreFailure => &[(
            "memcached-lost-messages",
            "sim, 8 clients, 5% of requests and 5% of replies lost",
        )],
        _ => &[],
    }
}

/// Redisson's `RLock`'s simulator lines.
fn redisson(column: Column) -> &'static [Line] {
    use Column as C;
    match column {
        C::None => &[("redisson-contention", "sim, 5-32 clients, watchdog, unlock messages")],
        C::Pause => &[(
            "redisson-pause",
            "sim, the holder's whole process (its watchdog too) stops past the watchdog timeout",
        )],
        C::StoreFailure => &[(
            "redisson-failed-renewal",
            "sim, the holder's first renewal lost, then the network recovers",
        )],
        C::Failover => &[(
            "redisson-failover-during-renewal",
            "sim, the primary dies with the first renewal in flight, before the replica has the key",
        )],
        C::LostNotification => &[(
            "redisson-lost-unlock-messages",
            "sim, every unlock message lost (waiters sleep out the holder's TTL)",
        )],
        _ => &[],
    }
}

/// Redisson's fair lock's simulator lines.
fn redisson_fair(column: Column) -> &'static [Line] {
    use Column as C;
    match column {
        C::None => &[
            (
                "redisson-fair-contention",
                "sim, 5-32 clients, queue, watchdog, per-waiter unlock messages",
            ),
            (
                "redisson-fair-long-contention",
                "sim, 5 clients holding 300 ms, unbroken contention past a lease",
            ),
        ],
        C::Pause => &[(
            "redisson-fair-pause",
            "sim, the holder's whole process stops past the watchdog timeout",
        )],
        C::Failover => &[(
            "redisson-fair-failover-during-renewal",
            "sim, the primary dies with the first renewal in flight, before the replica has the key",
        )],
        C::LostNotification => &[(
            "redisson-fair-lost-unlock-messages",
            "sim, every unlock message lost (waiters wake at their deadline)",
        )],
        _ => &[],
    }
}

/// Curator's `InterProcessMutex` on ZooKeeper's simulator lines.
fn zookeeper(column: Column) -> &'static [Line] {
    use Column as C;
    match column {
        C::None => &[("zookeeper-contention", "sim, 5-32 clients, one server, watches")],
        C::Pause => &[(
            "zookeeper-session-expiry-pause",
            "sim, the holder's whole process stops past its session timeout",
        )],
        C::StoreFailure => &[
            (
                "zookeeper-lost-messages",
                "sim, 8 clients, 5% of requests and 5% of replies lost (heartbeats too)",
            ),
            (
                "zookeeper-expired-session-lingers",
                "sim, a waiter's requests dropped 2.7 s, past its session timeout; its node deleted 3 s \
                 after the session is refused",
            ),
        ],
        C::Restart => &[(
            "zookeeper-server-restart",
            "sim, the server restarts (data on disk) for 300 ms right after an acquire",
        )],
        C::ServerClockJump => &[(
            "zookeeper-clock-jump",
            "sim, the server's clock jumps by the session timeout while a client holds",
        )],
        C::LostNotification => &[
            (
                "zookeeper-missed-watch",
                "sim, every watch event lost, Curator waits on the watch alone",
            ),
            (
                "zookeeper-missed-watch-recheck",
                "sim, the same with our recheck every 500 ms",
            ),
        ],
        _ => &[],
    }
}

/// etcd's mutex's simulator lines.
fn etcd(column: Column) -> &'static [Line] {
    use Column as C;
    match column {
        C::None => &[("etcd-contention", "sim, 5-32 clients, one server")],
        C::Pause => &[(
            "etcd-pause",
            "sim, the holder's whole process stops past its lease between its check and its write",
        )],
        C::StoreFailure => &[(
            "etcd-lost-messages",
            "sim, 8 clients, 5% of requests and 5% of replies lost (keep-alives too)",
        )],
        C::Restart => &[(
            "etcd-server-restart",
            "sim, the server restarts (data on disk) for 300 ms right after an acquire",
        )],
        C::ServerClockJump => &[
            (
                "etcd-clock-jump",
                "sim, the server's clock jumps by the lease TTL while a client holds",
            ),
            (
                "etcd-lease-expires-while-waiting",
                "sim, a waiter's lease expires (server clock jump) before its late watch event",
            ),
        ],
        _ => &[],
    }
}

/// The real clients' bugs the family simulator plants (docs/mutants.md), each with the scenario
/// that catches it: a line each for "Broken variants".
pub(super) const CLIENT_BUGS: [(&str, &str); 7] = [
    (
        "redlock-slow-extend-go-redsync",
        "go-redsync's extend that ignores the validity time, masters slow during the extension, Redlock",
    ),
    (
        "redlock-retry-after-drop-node-redlock",
        "node-redlock's validity counted from the first attempt, 3 of 5 masters drop the first second's \
         requests, Redlock",
    ),
    (
        "redisson-failed-renewal-775",
        "redisson/redisson#775 (the watchdog is not rescheduled after a failed renewal), Redisson RLock",
    ),
    (
        "redisson-fair-barging",
        "an acquire that ignores the queue (a planted unfair variant), Redisson fair lock",
    ),
    (
        "etcd-lease-expires-while-waiting-11456",
        "etcd-io/etcd#11456 (a waiter whose lease expired takes the lock without reading its own key), etcd mutex",
    ),
    (
        "etcd-shared-session-10756",
        "etcd-io/etcd#10756 (acquisitions sharing one session, so one lease and one key), etcd mutex",
    ),
    (
        "zookeeper-expired-session-lingers-604",
        "CURATOR-604 (a listing retried on the new session keeps the expired session's node, not yet \
         deleted), Curator's InterProcessMutex",
    ),
];

/// The claim a client bug's scenario exists to violate: its name as the family judges write it,
/// and its ID.
pub(super) fn expected_claim(scenario: &str) -> (&'static str, ClaimId) {
    let built = build_family(scenario, 0).expect("a scenario of sim/src/family");
    let expected = built.expect_violated.expect("a client bug's scenario names its claim");
    let claim = cassalock_sim::family::Claim::named(expected)
        .expect("a claim of the family judges")
        .id();
    (expected, claim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::grid::{matrix_rows, MatrixRow};

    #[test]
    fn every_scenario_in_the_table_exists_and_sits_in_a_column_of_its_own_lock() {
        let mut listed = 0;
        for row in matrix_rows().into_iter().filter(|row| row.is_family()) {
            for &column in Column::FAMILY.iter() {
                for &(scenario, label) in scenarios(row, column) {
                    listed += 1;
                    let built = build_family(scenario, 0).expect("a family scenario");
                    assert_eq!(built.lock.name(), row.key(), "{scenario} runs {}", row.key());
                    assert!(label.starts_with("sim, "), "{label}");
                }
            }
        }
        assert!(listed >= 30, "{listed} scenarios listed");
    }
}
