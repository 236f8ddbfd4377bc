//! `cassalock claims`, `locks` and `scenarios` list what the checks use: every claim ID, every
//! lock of the registry with its faults and mutants, every scenario with its defaults.
#![cfg(madsim)]

use std::process::Command;

fn listed(command: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .arg(command)
        .output()
        .expect("the cassalock binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn claims_lists_every_claim_id_with_its_definition() {
    let text = listed("claims");
    for id in cassalock_judge::ClaimId::ALL {
        let line = format!("  {:<16} {}", id.as_str(), id.definition());
        assert!(text.contains(&line), "{id}: {text}");
    }
}

#[test]
fn locks_lists_every_lock_with_its_faults_and_mutants() {
    let text = listed("locks");
    for entry in cassalock::registry::LOCKS {
        assert!(
            text.contains(&format!("\n{} ({}, ", entry.name, entry.title)),
            "{}: {text}",
            entry.name
        );
    }
    assert!(text.contains("restart without persistence"), "{text}");
    assert!(text.contains("sim redisson-fair-barging"), "{text}");
}

#[test]
fn scenarios_lists_every_scenario_with_its_defaults() {
    let text = listed("scenarios");
    for scenario in cassalock_sim::scenario::SCENARIOS {
        assert!(
            text.contains(&format!("\n  {} (", scenario.name)),
            "{}: {text}",
            scenario.name
        );
    }
    for named in cassalock_sim::family::scenarios() {
        assert!(text.contains(named.name), "{}: {text}", named.name);
    }
    assert!(text.contains("  timeservice-stall (queue)"), "{text}");
    assert!(!text.contains("cannot be built"), "{text}");
}
