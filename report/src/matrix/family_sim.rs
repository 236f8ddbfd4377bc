//! The simulator's lines in the other families' cells: each cell's named scenarios of the
//! families' simulator (`cassalock sim --scenario NAME`, sim/src/family), searched seed by seed
//! like the thesis's, their judges filed under the claim IDs of docs/claims.md.
//!
//! Which scenario judges which fault is a table here: the scenarios are written once, in
//! sim/src/family/scenario.rs, and this file only says where each one's verdicts go. A
//! scenario that plants a client's bug (go-redsync, node-redlock, Redisson 775, etcd 11456 and
//! 10756, CURATOR-604, the barging fair lock) is not a fault of the lock: those are the "Broken
//! variants" lines ([`client_bug_lines`]), and docs/mutants.md.

use cassalock_judge::ClaimId;
use cassalock_sim::family::scenario::{build as build_family, replay_command};
use cassalock_sim::family::{run_family, Verdict as FamilyVerdict};

use super::{
    seeds, shortened, Check, ClaimSearch, Column, FirstFailure, Judgement, Row, SeedOutcome, SimResult, Source,
};
use crate::{write_file, ReportError};

/// A cell's simulator lines: (scenario, label). Empty: the cell is judged by the model alone.
fn scenarios(row: Row, column: Column) -> &'static [(&'static str, &'static str)] {
    use Column as C;
    match (row, column) {
        (Row::RedisSetNx, C::None) => &[("set-nx-contention", "sim, 5-32 clients, one Redis")],
        (Row::RedisSetNx, C::StoreFailure) => &[(
            "set-nx-lost-messages",
            "sim, 8 clients, 5% of requests and 5% of replies lost",
        )],
        (Row::RedisSetNx, C::Restart) => &[
            (
                "set-nx-restart-no-persistence",
                "sim, the server restarts empty right after an acquire",
            ),
            (
                "set-nx-restart-persistence",
                "sim, the same restart with appendfsync always (control)",
            ),
        ],
        (Row::RedisSetNx, C::Failover) => &[(
            "set-nx-failover-after-acquire",
            "sim, the primary fails over right after an acquire, before replication",
        )],
        (Row::RedisSetNx, C::ServerClockJump) => &[(
            "set-nx-clock-drift",
            "sim, the server's clock runs 5% fast (a drift past the lock's 1% margin, not a jump)",
        )],
        (Row::Redlock, C::None) => &[("redlock-contention", "sim, 5 clients, 5 masters")],
        (Row::Redlock, C::Pause) => &[(
            "redlock-gc-pause",
            "sim, the holder pauses past the TTL between its check and its write",
        )],
        (Row::Redlock, C::StoreFailure) => &[
            ("redlock-lost-messages", "sim, 5% of requests and 5% of replies lost"),
            (
                "redlock-retry-after-drop",
                "sim, 3 of 5 masters drop the first second's requests",
            ),
        ],
        (Row::Redlock, C::Restart) => &[
            (
                "redlock-restart-no-fsync",
                "sim, a master of the holder's majority restarts empty at once",
            ),
            (
                "redlock-restart-delayed",
                "sim, the same restart delayed by the TTL (control)",
            ),
        ],
        (Row::Redlock, C::ServerClockJump) => &[(
            "redlock-clock-jump",
            "sim, a master of the holder's majority jumps forward by the TTL",
        )],
        (Row::Memcached, C::None) => &[("memcached-contention", "sim, 5-32 clients, one Memcached")],
        (Row::Memcached, C::Pause) => &[(
            "memcached-pause",
            "sim, the holder pauses past the TTL between its check and its write",
        )],
        (Row::Memcached, C::StoreFailure) => &[(
            "memcached-lost-messages",
            "sim, 8 clients, 5% of requests and 5% of replies lost",
        )],
        (Row::Redisson, C::None) => &[("redisson-contention", "sim, 5-32 clients, watchdog, unlock messages")],
        (Row::Redisson, C::Pause) => &[(
            "redisson-pause",
            "sim, the holder's whole process (its watchdog too) stops past the watchdog timeout",
        )],
        (Row::Redisson, C::StoreFailure) => &[(
            "redisson-failed-renewal",
            "sim, the holder's first renewal lost, then the network recovers",
        )],
        (Row::Redisson, C::Failover) => &[(
            "redisson-failover-during-renewal",
            "sim, the primary dies with the first renewal in flight, before the replica has the key",
        )],
        (Row::Redisson, C::LostNotification) => &[(
            "redisson-lost-unlock-messages",
            "sim, every unlock message lost (waiters sleep out the holder's TTL)",
        )],
        (Row::RedissonFair, C::None) => &[
            (
                "redisson-fair-contention",
                "sim, 5-32 clients, queue, watchdog, per-waiter unlock messages",
            ),
            (
                "redisson-fair-long-contention",
                "sim, 5 clients holding 300 ms, unbroken contention past a lease",
            ),
        ],
        (Row::RedissonFair, C::Pause) => &[(
            "redisson-fair-pause",
            "sim, the holder's whole process stops past the watchdog timeout",
        )],
        (Row::RedissonFair, C::Failover) => &[(
            "redisson-fair-failover-during-renewal",
            "sim, the primary dies with the first renewal in flight, before the replica has the key",
        )],
        (Row::RedissonFair, C::LostNotification) => &[(
            "redisson-fair-lost-unlock-messages",
            "sim, every unlock message lost (waiters wake at their deadline)",
        )],
        (Row::Zookeeper, C::None) => &[("zookeeper-contention", "sim, 5-32 clients, one server, watches")],
        (Row::Zookeeper, C::Pause) => &[(
            "zookeeper-session-expiry-pause",
            "sim, the holder's whole process stops past its session timeout",
        )],
        (Row::Zookeeper, C::StoreFailure) => &[
            (
                "zookeeper-lost-messages",
                "sim, 8 clients, 5% of requests and 5% of replies lost (heartbeats too)",
            ),
            (
                "zookeeper-expired-session-lingers",
                "sim, a waiter's requests dropped 2.7 s, past its session timeout; its node deleted 3 s after the session is refused",
            ),
        ],
        (Row::Zookeeper, C::Restart) => &[(
            "zookeeper-server-restart",
            "sim, the server restarts (data on disk) for 300 ms right after an acquire",
        )],
        (Row::Zookeeper, C::ServerClockJump) => &[(
            "zookeeper-clock-jump",
            "sim, the server's clock jumps by the session timeout while a client holds",
        )],
        (Row::Zookeeper, C::LostNotification) => &[
            (
                "zookeeper-missed-watch",
                "sim, every watch event lost, Curator waits on the watch alone",
            ),
            (
                "zookeeper-missed-watch-recheck",
                "sim, the same with our recheck every 500 ms",
            ),
        ],
        (Row::Etcd, C::None) => &[("etcd-contention", "sim, 5-32 clients, one server")],
        (Row::Etcd, C::Pause) => &[(
            "etcd-pause",
            "sim, the holder's whole process stops past its lease between its check and its write",
        )],
        (Row::Etcd, C::StoreFailure) => &[(
            "etcd-lost-messages",
            "sim, 8 clients, 5% of requests and 5% of replies lost (keep-alives too)",
        )],
        (Row::Etcd, C::Restart) => &[(
            "etcd-server-restart",
            "sim, the server restarts (data on disk) for 300 ms right after an acquire",
        )],
        (Row::Etcd, C::ServerClockJump) => &[
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

/// A cell's simulator sources.
pub(super) fn sources(row: Row, column: Column) -> Vec<Source> {
    scenarios(row, column)
        .iter()
        .map(|&(scenario, label)| {
            debug_assert!(
                build_family(scenario, 0).is_ok(),
                "{scenario} is a scenario of sim/src/family"
            );
            Source::FamilySim { scenario, label }
        })
        .collect()
}

/// One seed of a family scenario, kept small.
pub(super) fn one_seed(scenario: &str, claims: &[ClaimId], seed: u64) -> SeedOutcome {
    let built = build_family(scenario, seed).expect("a scenario of the table above");
    let outcome = run_family(&built, seed, false);
    let checks = claims
        .iter()
        .map(|&claim| {
            let mut check = Check::default();
            // T2 gathers T2 and T2-free: either judge's violation, occasion or bound counts.
            for (judged, verdict) in &outcome.verdicts.claims {
                if judged.id() != claim {
                    continue;
                }
                match verdict {
                    FamilyVerdict::Violated(_) => {
                        check.violated = true;
                        check.exercised = true;
                    }
                    FamilyVerdict::NoViolation => check.exercised = true,
                    FamilyVerdict::Bounded(_) => check.bounded = true,
                    FamilyVerdict::NotChecked => {}
                }
            }
            check
        })
        .collect();
    SeedOutcome {
        fired: !built.injects_faults() || outcome.fault_fired(),
        checks,
        stall_s: None,
        token_drops: 0,
    }
}

/// The simulator's verdicts on a cell from a family scenario's search; writes the first failing
/// seed's trace of every violated claim (one file per seed).
pub(super) fn judgement(
    row: Row,
    column: Column,
    scenario: &str,
    label: &'static str,
    result: &SimResult,
    out_dir: &std::path::Path,
    files: &mut Vec<String>,
) -> Result<Judgement, ReportError> {
    super::searched_judgement(label, result, None, 0, |search, seed| {
        write_trace(row, column, scenario, search, seed, out_dir, files)
    })
}

/// The trace of `seed`, run again with every request and reply.
fn write_trace(
    row: Row,
    column: Column,
    scenario: &str,
    search: &ClaimSearch,
    seed: u64,
    out_dir: &std::path::Path,
    files: &mut Vec<String>,
) -> Result<FirstFailure, ReportError> {
    let name = super::trace_file_name(row, column, scenario, search.claim, seed);
    let built = build_family(scenario, seed).expect("a scenario of the table above");
    let outcome = run_family(&built, seed, true);
    let command = replay_command(scenario, seed, "");
    let verdicts: String = outcome
        .verdicts
        .claims
        .iter()
        .map(|(claim, verdict)| format!("  {:<12} {verdict}\n", claim.name()))
        .collect();
    let text = format!(
        "{} ({}): {}\nseed {seed}, {} client(s)\n\nverdicts:\n{verdicts}\nreplay: {command}\n\n{}",
        built.name,
        built.lock.name(),
        built.premise,
        built.clients,
        shortened(&outcome.trace_text(), &command)
    );
    write_file(out_dir, &name, &text)?;
    files.push(format!("matrix/{name}"));
    Ok(FirstFailure {
        seed,
        file: name,
        command,
    })
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
        "node-redlock's validity counted from the first attempt, 3 of 5 masters drop the first second's requests, Redlock",
    ),
    (
        "redisson-failed-renewal-775",
        "Redisson issue 775 (the watchdog is not rescheduled after a failed renewal), Redisson RLock",
    ),
    (
        "redisson-fair-barging",
        "an acquire that ignores the queue (a planted unfair variant), Redisson fair lock",
    ),
    (
        "etcd-lease-expires-while-waiting-11456",
        "etcd issue 11456 (a waiter whose lease expired takes the lock without reading its own key), etcd mutex",
    ),
    (
        "etcd-shared-session-10756",
        "etcd issue 10756 (acquisitions sharing one session, so one lease and one key), etcd mutex",
    ),
    (
        "zookeeper-expired-session-lingers-604",
        "CURATOR-604 (a listing retried on the new session keeps the expired session's node, not yet deleted), Curator's InterProcessMutex",
    ),
];

/// A client bug's seed search for the claim its scenario exists to violate
/// (`FamilyScenario::expect_violated`): [`CLIENT_BUGS`]`[index]`.
pub(super) fn client_bug_search(pool: &rayon::ThreadPool, index: usize, budget: super::Budget) -> SimResult {
    let (scenario, _) = CLIENT_BUGS[index];
    let claim = expected_claim(scenario).1;
    super::search(pool, &|seed| one_seed(scenario, &[claim], seed), &[claim], budget)
}

/// The claim a client bug's scenario exists to violate: its name as the family judges write it,
/// and its ID.
fn expected_claim(scenario: &str) -> (&'static str, ClaimId) {
    let built = build_family(scenario, 0).expect("a scenario of sim/src/family");
    let expected = built.expect_violated.expect("a client bug's scenario names its claim");
    let claim = cassalock_sim::family::Claim::named(expected)
        .expect("a claim of the family judges")
        .id();
    (expected, claim)
}

/// The "Broken variants" line of [`CLIENT_BUGS`]`[index]`, from its search.
pub(super) fn client_bug_line(index: usize, result: &SimResult, stopped_by_time: &mut Vec<String>) -> (String, String) {
    let (scenario, label) = CLIENT_BUGS[index];
    let (expected, claim) = expected_claim(scenario);
    let fired = if result.fired < result.tried {
        format!(", the fault fired in {} of them", result.fired)
    } else {
        String::new()
    };
    let text = match result.first_violation(claim) {
        Some(seed) if result.fired > 0 => format!(
            "sim: {label}: {expected} violated at seed {seed} ({} tried{fired}): `{}`",
            seeds(seed + 1),
            replay_command(scenario, seed, "")
        ),
        None if result.stopped_by_time => {
            stopped_by_time.push(format!("client bug {scenario} (after {})", seeds(result.tried)));
            format!(
                "sim: {label}: stopped by the time limit after {}: not a verdict",
                seeds(result.tried)
            )
        }
        _ => format!(
            "sim: {label}: **not caught**: no {expected} violation in {}{fired}",
            seeds(result.tried)
        ),
    };
    (text, String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::MatrixRow;

    #[test]
    fn every_scenario_in_the_table_exists_and_sits_in_a_column_of_its_own_lock() {
        let mut listed = 0;
        for row in crate::matrix::matrix_rows().into_iter().filter(|row| row.is_family()) {
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

    #[test]
    fn a_family_seed_files_t2_free_under_t2_and_c_fence_under_c_token() {
        // etcd-contention fences (C-fence judged) and has several clients (T2 judged).
        let claims = [ClaimId::T2, ClaimId::CToken, ClaimId::FOrder];
        let outcome = one_seed("etcd-contention", &claims, 0);
        assert!(outcome.fired, "a control's conditions are always in effect");
        let [t2, token, order] = [outcome.checks[0], outcome.checks[1], outcome.checks[2]];
        assert!(t2.exercised && !t2.violated, "{t2:?}");
        assert!(token.exercised && !token.violated, "{token:?}");
        assert!(!order.exercised, "F-order is judged for the fair lock only: {order:?}");
    }
}
