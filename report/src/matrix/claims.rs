//! Which claims apply where: the theorem-level claims and the contract items (docs/contract.md)
//! a row's simulator lines judge and search seeds for, and why an item is not judged there.

use cassalock::registry::Holder;
use cassalock_judge::ClaimId;

use super::grid::Row;

/// The theorem-level claims a sim cell judges per row (the "verdicts" column), in the order the
/// cells list them (by ID text).
pub(super) fn sim_claims(row: Row) -> Vec<ClaimId> {
    // Every simulator reads the servers' state for T1-server (the row locks' main row, the
    // families' keys, nodes and revisions).
    if row == Row::QueueTry {
        return vec![ClaimId::K3, ClaimId::T1Belief, ClaimId::T1Resource, ClaimId::T1Server];
    }
    if !row.is_family() {
        return vec![
            ClaimId::K3,
            ClaimId::T1Belief,
            ClaimId::T1Resource,
            ClaimId::T1Server,
            ClaimId::T2,
        ];
    }
    // The family simulator has no K3 (no renewal stamped after a delete can resurrect a
    // server-expired key); F-drop and F-order where the lock promises first come, first served.
    let mut claims = Vec::new();
    if family_model(row).fifo {
        claims.extend([ClaimId::FDrop, ClaimId::FOrder]);
    }
    claims.extend([ClaimId::T1Belief, ClaimId::T1Resource, ClaimId::T1Server, ClaimId::T2]);
    claims
}

/// The family model of a family row.
fn family_model(row: Row) -> cassalock_models::family::RegisteredModel {
    cassalock_models::family::registered_model(row)
        .unwrap_or_else(|| panic!("{row} has a family row, so a family model"))
}

/// The contract items (docs/contract.md), one column each.
pub(super) const CONTRACT: [ClaimId; 5] = [
    ClaimId::CTry,
    ClaimId::CFree,
    ClaimId::CRelease,
    ClaimId::CLost,
    ClaimId::CToken,
];

pub(super) fn is_contract(claim: ClaimId) -> bool {
    CONTRACT.contains(&claim)
}

/// The contract items a sim cell of this row judges: C-try where clients call `try_lock`,
/// C-release where they call `lock()` (the simulator judges handovers for `lock()` callers).
pub(super) fn contract_claims(row: Row) -> Vec<ClaimId> {
    if row == Row::QueueTry {
        return vec![ClaimId::CTry, ClaimId::CFree, ClaimId::CLost, ClaimId::CToken];
    }
    if !row.is_family() {
        return vec![ClaimId::CFree, ClaimId::CRelease, ClaimId::CLost, ClaimId::CToken];
    }
    // The family simulator judges no C-free (the model does). C-lost only where a lane renews
    // the lease and so can tell the holder (Redisson's watchdog, etcd's keep-alive): a Curator
    // holder is never told (it believes until its next request), and SET NX, Redlock and
    // Memcached holders check their own clock. C-token (its growing half) where
    // tokens grow.
    let mut claims = vec![ClaimId::CRelease];
    if family_model(row).renews {
        claims.push(ClaimId::CLost);
    }
    if matches!(row.entry().holder, Holder::Grows(_)) {
        claims.push(ClaimId::CToken);
    }
    claims
}

/// Why a row's sim cells do not judge a contract item.
pub(super) fn contract_not_applicable(row: Row, claim: ClaimId) -> &'static str {
    match claim {
        ClaimId::CTry => "n/a: clients call lock()",
        ClaimId::CFree if row.is_family() => "not judged by this simulator (the model's: verdicts column)",
        ClaimId::CToken if row.is_family() => "n/a: no growing token",
        ClaimId::CLost if row.is_family() => {
            "not judged by this simulator: no lane renews the lease to tell the holder"
        }
        ClaimId::CRelease => "n/a: judged for lock() callers",
        _ => "n/a",
    }
}

/// Every claim a sim cell of this row judges, and searches seeds for.
pub(super) fn all_sim_claims(row: Row) -> Vec<ClaimId> {
    sim_claims(row).into_iter().chain(contract_claims(row)).collect()
}
