//! The report's three charts (throughput, wait p50, wait p99), written beside its markdown, with
//! the fair lock's goal and ceiling drawn on the throughput chart.

use std::path::Path;

use cassalock_judge::text::count;
use cassalock_real::{Family, Lock, Summary};

use super::configuration::{backend_of, configurations, lock_names, Configuration};
use super::data::{FaultRun, Setup};
use super::fair_lock::{ceiling_from_alone, fair_lock_names};
use super::markdown::render;
use super::{CHARTS, REPORT};
use crate::charts::{colour_of_sixteen, LineChart, Series, Y};
use crate::{write_file, ReportError};

/// A lock's colour: its place among every lock, so it is the same on every chart and run.
pub(super) fn lock_colour(name: &str, fallback: usize) -> plotters::style::RGBColor {
    colour_of_sixteen(
        cassalock_real::real_locks()
            .iter()
            .position(|v| v.title() == name)
            .unwrap_or(fallback),
    )
}

/// The fair lock's goal and ceiling on the throughput chart, when the old lock ran with
/// contention: the goal, twice the old lock's rate at each locker count past one, and the fair
/// locks' highest ceiling ([`fair_lock_ceiling`]) across those counts, when a fair lock ran
/// alone. Grey, dashed; drawn when every lock on the chart is Cassandra's.
pub(super) fn goal_and_ceiling_lines(groups: &[Configuration<'_>]) -> Vec<Series> {
    let contended: Vec<&Configuration<'_>> = groups
        .iter()
        .filter(|g| g.variant == Lock::Old.title() && g.lockers > 1 && !g.acquired_nothing())
        .collect();
    if contended.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![Series {
        name: "the fair lock's goal: 2x the old lock".into(),
        colour: plotters::style::RGBColor(60, 60, 60),
        dashed: true,
        points: contended
            .iter()
            .map(|g| (g.lockers as f64, Y::Value(2.0 * g.median(&|r| r.acquisitions_per_s))))
            .collect(),
    }];
    let ceiling = fair_lock_names(groups)
        .into_iter()
        .filter_map(|name| groups.iter().find(|g| g.variant == name && g.lockers == 1))
        .filter_map(ceiling_from_alone)
        .fold(f64::NAN, f64::max);
    if ceiling.is_finite() {
        lines.push(Series {
            name: "a fair lock's ceiling: its rate alone x r/(r-2)".into(),
            colour: plotters::style::RGBColor(160, 160, 160),
            dashed: true,
            points: contended
                .iter()
                .map(|g| (g.lockers as f64, Y::Value(ceiling)))
                .collect(),
        });
    }
    lines
}

/// The markdown and its charts; their file names.
pub(super) fn write_rendered(
    out: &Path,
    setup: &Setup,
    runs: &[Summary],
    faults: &[FaultRun],
) -> Result<Vec<String>, ReportError> {
    crate::create_dir(out)?;
    let groups = configurations(runs);
    let locks = lock_names(&groups);
    let subtitle = format!(
        "hold {} ms, {} s per run, TTL {} s, poll {} ms; median of {}; {}",
        setup.hold_ms,
        setup.seconds_per_run,
        setup.ttl_s,
        setup.poll_ms,
        count(setup.repeats, "run"),
        setup.machine
    );
    // Cassandra's locks solid, the others dashed: seven lines stay apart by colour and dash.
    let series = |value: &dyn Fn(&Summary) -> f64| -> Vec<Series> {
        locks
            .iter()
            .enumerate()
            .map(|(i, name)| Series {
                name: name.to_string(),
                colour: lock_colour(name, i),
                dashed: backend_of(name).is_some_and(|b| b != Family::Cassandra),
                points: groups
                    .iter()
                    .filter(|g| g.variant == *name)
                    .map(|g| {
                        let y = if g.acquired_nothing() {
                            Y::Undefined("0 acquisitions".into())
                        } else {
                            Y::Value(g.median(value))
                        };
                        (g.lockers as f64, y)
                    })
                    .collect(),
            })
            .collect()
    };
    let chart =
        |title: &'static str, y_label: &'static str, y_decimals: usize, value: &dyn Fn(&Summary) -> f64| LineChart {
            title,
            subtitle: &subtitle,
            x_label: "lockers contending for one lock",
            y_label,
            x_unit: ("locker", "lockers"),
            log2_x: true,
            log_y: true,
            y_decimals,
            series: series(value),
        };
    let mut throughput = chart(
        "Real backends: acquisitions per second (Cassandra solid, the other stores dashed)",
        "acquisitions / s (log)",
        2,
        &|r| r.acquisitions_per_s,
    );
    // Only beside Cassandra's locks alone: with the other stores' dashed lines they would be
    // two more dashed lines among many.
    if locks.iter().all(|l| backend_of(l) == Some(Family::Cassandra)) {
        throughput.series.extend(goal_and_ceiling_lines(&groups));
    }
    throughput.write(&out.join(CHARTS[0]))?;
    chart(
        "Real backends: median wait from asking to holding (p50)",
        "milliseconds (log)",
        1,
        &|r| r.wait_p50_ms,
    )
    .write(&out.join(CHARTS[1]))?;
    chart(
        "Real backends: wait from asking to holding, p99",
        "milliseconds (log)",
        1,
        &|r| r.wait_p99_ms,
    )
    .write(&out.join(CHARTS[2]))?;
    write_file(out, REPORT, &render(setup, runs, faults))?;
    let mut files = vec![REPORT.to_string()];
    files.extend(CHARTS.iter().map(|c| c.to_string()));
    Ok(files)
}
