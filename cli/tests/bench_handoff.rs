//! `cassalock bench handoff`: its figures are simulated, so exact: two runs
//! print the same table, and each faster variant's goal line judges every figure the goal
//! names.
#![cfg(madsim)]

use std::process::Command;

fn handoff(seeds: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(["bench", "handoff", "--seeds", seeds])
        .output()
        .expect("the cassalock binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn bench_handoff_prints_the_same_exact_figures_twice_and_judges_each_variant() {
    let without_wall_clock = |stdout: &str| -> Vec<String> {
        stdout
            .lines()
            .filter(|line| !line.ends_with("wall clock"))
            .map(str::to_owned)
            .collect()
    };
    let first = handoff("1");
    assert_eq!(without_wall_clock(&first), without_wall_clock(&handoff("1")), "{first}");
    for variant in [
        "queue (listing's poll)",
        "next in line every 5 ms",
        "paced, next in line 5 ms",
    ] {
        let goals = first
            .lines()
            .filter(|line| line.starts_with(&format!("  goal, {variant}: ")))
            .count();
        assert_eq!(goals, 2, "one goal line per latency for {variant}:\n{first}");
    }
    // A line per variant and latency, each with a throughput above zero.
    let rows: Vec<&str> = first
        .lines()
        .filter(|line| ["old ", "queue ", "next ", "paced"].iter().any(|p| line.starts_with(p)))
        .collect();
    assert_eq!(rows.len(), 8, "{first}");
    for row in rows {
        let acquisitions_per_second: f64 = row[26..]
            .split_whitespace()
            .next()
            .and_then(|figure| figure.parse().ok())
            .unwrap_or_else(|| panic!("acq/s in {row:?}"));
        assert!(acquisitions_per_second > 0.5, "{row}");
    }
}
