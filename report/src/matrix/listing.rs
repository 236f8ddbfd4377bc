//! What the matrix knows of each lock, without running anything: the faults its row is judged
//! under (the columns where some model or simulator line exists, not those marked n/a) and the broken variants the
//! matrix runs against it. `cassalock locks` prints it beside the registry's entry.

use cassalock::registry::Lock;
use cassalock_sim::family::scenario::build as build_family;

use super::family_sim::client_bugs;
use super::grid::{matrix_rows, MatrixRow};
use super::mutants::{MUTANT_MODELS, MUTANT_SIMS};
use super::sources::{sources, Source};

/// One lock as the matrix sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockListing {
    pub lock: Lock,
    /// The faults its row is judged under, in the matrix's column order (none without a row).
    pub faults: Vec<&'static str>,
    /// The broken variants the matrix runs against it: each one's label.
    pub mutants: Vec<String>,
}

/// Every lock of the registry, in its order, with its faults and broken variants.
pub fn lock_listings() -> Vec<LockListing> {
    let rows = matrix_rows();
    Lock::all()
        .map(|lock| {
            let has_row = rows.contains(&lock);
            let faults = if has_row {
                lock.columns()
                    .iter()
                    .filter(|&&column| {
                        sources(lock, column)
                            .iter()
                            .any(|source| !matches!(source, Source::NotApplicable(_)))
                    })
                    .map(|column| column.name())
                    .collect()
            } else {
                Vec::new()
            };
            let mut mutants: Vec<String> = MUTANT_MODELS
                .iter()
                .filter(|mutant| mutant.lock() == Some(lock))
                .map(|mutant| format!("model: {}", mutant.label))
                .collect();
            if matches!(lock, Lock::Old | Lock::Queue) {
                mutants.extend(
                    MUTANT_SIMS
                        .iter()
                        .map(|mutant| format!("sim {} ({}): {}", mutant.flag, mutant.scenario, mutant.breaks)),
                );
            }
            for (scenario, label) in client_bugs() {
                let planted_in = build_family(scenario, 0)
                    .ok()
                    .and_then(|built| Lock::named(built.lock.name()));
                if planted_in == Some(lock) {
                    mutants.push(format!("sim {scenario}: {label}"));
                }
            }
            LockListing { lock, faults, mutants }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lock_is_listed_and_every_broken_variant_belongs_to_one() {
        let listings = lock_listings();
        assert_eq!(listings.len(), Lock::all().count());
        let mutants: usize = listings.iter().map(|listing| listing.mutants.len()).sum();
        // Each model mutant and client bug once; each simulator mutant for the old and the
        // queue lock.
        assert_eq!(
            mutants,
            MUTANT_MODELS.len() + 2 * MUTANT_SIMS.len() + client_bugs().len()
        );
        let redlock = listings
            .iter()
            .find(|listing| listing.lock == Lock::Redlock)
            .expect("redlock");
        assert!(redlock.faults.contains(&"restart without persistence"), "{redlock:?}");
        assert!(!redlock.faults.contains(&"failover"), "n/a: no replica: {redlock:?}");
        let paced = listings
            .iter()
            .find(|listing| listing.lock == Lock::QueuePaced)
            .expect("paced");
        assert!(paced.faults.is_empty(), "no matrix row: {paced:?}");
    }
}
