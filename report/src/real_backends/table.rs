//! The report's two tables: one row per configuration, and one row per lock's run under its
//! backend's fault.

use std::fmt::Write as _;

use cassalock_judge::text::count;
use cassalock_real::{Family, Summary};

use super::configuration::{backend_of, Configuration};
use super::data::{FaultOutcome, FaultRun};
use super::text::f;

/// "no overlap" or "**2 overlaps**".
fn overlaps_cell(overlaps: u64) -> String {
    if overlaps == 0 {
        "no overlap".to_string()
    } else {
        format!("**{}**", count(overlaps, "overlap"))
    }
}

/// The resource's verdict over some runs: stale writes accepted (damage) and refused (fencing).
fn stale_cell(accepted: u64, refused: u64) -> String {
    if accepted == 0 {
        format!("no stale write accepted ({refused} refused)")
    } else {
        format!("**{} accepted**", count(accepted, "stale write"))
    }
}

fn refused(run: &Summary) -> u64 {
    run.stale_tokens - run.stale_accepted.min(run.stale_tokens)
}

/// The main table: one row per configuration.
pub(super) fn table(groups: &[Configuration<'_>]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "| lock | backend | lockers | runs | acquisitions per run | acq/s | wait p50 ms | wait p99 ms | wait max ms | requests/acq | requests/s | CPU busy % | Jain | longest run | errors | T1-belief | T1-resource |");
    let _ = writeln!(
        md,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    );
    for g in groups {
        let overlaps: u64 = g.runs.iter().map(|r| r.belief_overlaps).sum();
        let stale_accepted: u64 = g.runs.iter().map(|r| r.stale_accepted).sum();
        let stale_refused: u64 = g.runs.iter().map(|r| refused(r)).sum();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            g.variant,
            backend_of(g.variant).map_or("-", Family::name),
            g.lockers,
            g.runs.len(),
            g.spread(&|r| r.acquisitions as f64, 0),
            g.spread(&|r| r.acquisitions_per_s, 2),
            g.spread(&|r| r.wait_p50_ms, 1),
            g.spread(&|r| r.wait_p99_ms, 1),
            g.spread(&|r| r.wait_max_ms, 1),
            g.spread(&|r| r.requests_per_acquisition, 1),
            g.spread(&|r| r.requests as f64 / r.elapsed_s, 0),
            // NaN (left out) in data from before the figure existed.
            g.spread(&|r| r.cpu_busy_pct.unwrap_or(f64::NAN), 0),
            g.spread(&|r| r.jain, 3),
            g.spread(&|r| r.longest_run as f64, 0),
            g.runs.iter().map(|r| r.errors).sum::<u64>(),
            overlaps_cell(overlaps),
            stale_cell(stale_accepted, stale_refused),
        );
    }
    md
}

/// The fault table: one row per lock, its one run under its backend's fault.
pub(super) fn fault_table(faults: &[FaultRun]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "| lock | fault injected | acquisitions | run s | acq/s | wait p99 ms | wait max ms | errors | lost leases | T1-belief: two holders | T1-resource: stale writes |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|");
    for run in faults {
        match &run.outcome {
            FaultOutcome::Ran(s) => {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    run.lock,
                    run.fault,
                    s.acquisitions,
                    f(s.elapsed_s, 1),
                    f(s.acquisitions_per_s, 2),
                    f(s.wait_p99_ms, 1),
                    f(s.wait_max_ms, 1),
                    s.errors,
                    s.lost_leases,
                    overlaps_cell(s.belief_overlaps),
                    stale_cell(s.stale_accepted, refused(s)),
                );
            }
            FaultOutcome::NotRun(why) => {
                let _ = writeln!(
                    md,
                    "| {} | {}: **not run**: {why} | - | - | - | - | - | - | - | not measured | not measured |",
                    run.lock, run.fault
                );
            }
        }
    }
    md
}
