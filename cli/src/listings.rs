//! `cassalock claims`, `cassalock locks`, `cassalock scenarios`: what the tool checks, on what,
//! and under which runs, listed from the same tables the checks use (the judge's claim IDs, the
//! registry and the matrix's rows, the simulator's scenarios), without running anything.

use std::process::ExitCode;

use cassalock_judge::{Aspect, ClaimId};

/// `cassalock claims`: every claim ID with its kind and its one-line definition.
pub fn claims() -> ExitCode {
    println!("Every claim cassalock judges (docs/claims.md defines each with an example):");
    for aspect in Aspect::ALL {
        let ids: Vec<ClaimId> = ClaimId::ALL.into_iter().filter(|id| id.aspect() == aspect).collect();
        if ids.is_empty() {
            continue;
        }
        println!("\n{}:", aspect.name());
        for id in ids {
            println!("  {:<16} {}", id.as_str(), id.definition());
        }
    }
    ExitCode::SUCCESS
}

/// `cassalock locks` (simulation build: the matrix's tables are built there): every lock of the registry, its family, what runs it, the faults its
/// matrix row is judged under and the broken variants run against it.
#[cfg(madsim)]
pub fn locks() -> ExitCode {
    println!("Every lock cassalock checks (--lock / --model names; reports/matrix.md has each row):");
    for listing in cassalock_report::matrix::lock_listings() {
        let lock = listing.lock;
        let entry = lock.entry();
        println!("\n{} ({}, {})", lock.name(), entry.title, entry.family.name());
        println!(
            "  model:    {}",
            entry
                .model
                .map_or("none".to_owned(), |model| format!("cassalock check --model {model}"))
        );
        println!(
            "  real:     {}",
            if entry.real {
                format!("cassalock real --lock {} (the real build)", lock.name())
            } else {
                "not run on real servers".to_owned()
            }
        );
        println!(
            "  faults:   {}",
            if listing.faults.is_empty() {
                "no row in the property matrix".to_owned()
            } else {
                listing.faults.join(", ")
            }
        );
        if listing.mutants.is_empty() {
            println!("  mutants:  none");
        }
        for (i, mutant) in listing.mutants.iter().enumerate() {
            println!("  {}{mutant}", if i == 0 { "mutants:  " } else { "          " });
        }
    }
    println!("\nShipped client libraries (redis-py, kazoo, Redisson, Curator, go-redsync, etcd's client): `cassalock real --client`, docs/client-protocol.md.");
    debug_assert_eq!(
        cassalock::registry::Lock::all().count(),
        cassalock::registry::LOCKS.len()
    );
    ExitCode::SUCCESS
}

/// `cassalock scenarios`: every simulator scenario with its defaults (the plan of its seed 0
/// without the seed's faults), without running it.
#[cfg(madsim)]
pub fn scenarios() -> ExitCode {
    use cassalock::driver::Algorithm;
    use cassalock_sim::scenario::{algorithms_for, build, SimOptions, SCENARIOS};
    println!(
        "The row locks' scenarios (`cassalock sim --scenario NAME`; the knobs of `sim --help` override the defaults):"
    );
    for scenario in SCENARIOS {
        let algorithm = algorithms_for(scenario.name)
            .last()
            .copied()
            .unwrap_or(Algorithm::Queue);
        let defaults = build(scenario.name, 0, algorithm, &SimOptions::default())
            .map(|config| {
                let plan = config.plan();
                let first = plan.lines().next().unwrap_or_default().to_owned();
                // "scenario NAME | queue algorithm | 5 clients x ...": the part after the
                // algorithm is the scenario's defaults.
                first.splitn(3, " | ").nth(2).unwrap_or_default().to_owned()
            })
            .unwrap_or_else(|error| format!("cannot be built: {error}"));
        let algorithms: Vec<&str> = algorithms_for(scenario.name).iter().map(|a| a.name()).collect();
        println!("\n  {} ({})", scenario.name, algorithms.join(", "));
        println!("    {}", scenario.setup);
        println!("    expected: {}", scenario.expected);
        println!("    defaults: {defaults}");
    }
    println!("\nThe other families' scenarios (`cassalock sim --scenario NAME`, or a lock's name for all of its; --clients, --acquisitions, --clock-offset-ms, --clock-error-ms, --clock-error-tail-ms with --clock-error-tail-percent, --bound-ms, --replication-lag-ms):");
    for named in cassalock_sim::family::scenarios() {
        println!("  {:<40} {}", named.name, named.help);
    }
    ExitCode::SUCCESS
}
