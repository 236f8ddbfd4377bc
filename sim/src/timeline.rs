//! A run as a picture: one lane per client (waiting, holding, paused, cut off, dead), one per
//! replica (down periods shaded), violations marked.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cassalock::driver::LockEvent;
use plotters::prelude::*;

use crate::run::RunOutcome;
use crate::trace::{Disruption, What};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Span {
    Waiting,
    Holding,
    Disrupted(Disruption),
}

fn colour(span: Span) -> RGBColor {
    match span {
        Span::Waiting => RGBColor(210, 210, 210),
        Span::Holding => RGBColor(46, 139, 87),
        Span::Disrupted(Disruption::Paused) => RGBColor(120, 120, 160),
        Span::Disrupted(Disruption::Killed) => RGBColor(40, 40, 40),
        Span::Disrupted(Disruption::CutOff) => RGBColor(230, 150, 40),
        Span::Disrupted(Disruption::Isolated) => RGBColor(230, 150, 40),
        Span::Disrupted(Disruption::Lossy) => RGBColor(200, 180, 60),
    }
}

/// Lanes: name -> spans (kind, from, to).
fn lanes(outcome: &RunOutcome) -> BTreeMap<String, Vec<(Span, Duration, Duration)>> {
    let end = outcome.sim_time;
    let mut lanes: BTreeMap<String, Vec<(Span, Duration, Duration)>> = BTreeMap::new();
    for i in 0..outcome.config.clients {
        lanes.insert(format!("c{i}"), Vec::new());
    }
    for i in 0..outcome.config.cluster.replicas {
        lanes.insert(format!("r{i}"), Vec::new());
    }
    for i in 0..outcome.config.time_replicas {
        lanes.insert(format!("ts{i}"), Vec::new());
    }
    let mut open: BTreeMap<(String, u8), (Span, Duration)> = BTreeMap::new();
    let key = |span: Span| match span {
        Span::Waiting => 0u8,
        Span::Holding => 1,
        Span::Disrupted(d) => 2 + d as u8,
    };
    let close = |lanes: &mut BTreeMap<String, Vec<(Span, Duration, Duration)>>,
                 node: &str,
                 span: Span,
                 at: Duration,
                 open: &mut BTreeMap<(String, u8), (Span, Duration)>| {
        if let Some((span, from)) = open.remove(&(node.to_owned(), key(span))) {
            lanes.entry(node.to_owned()).or_default().push((span, from, at));
        }
    };
    for record in &outcome.records {
        match &record.what {
            What::Waiting { .. } => {
                open.insert((record.node.clone(), key(Span::Waiting)), (Span::Waiting, record.at));
            }
            What::Lock(LockEvent::Acquired { .. }) => {
                close(&mut lanes, &record.node, Span::Waiting, record.at, &mut open);
                open.insert((record.node.clone(), key(Span::Holding)), (Span::Holding, record.at));
            }
            What::Lock(LockEvent::Releasing { .. }) => {
                close(&mut lanes, &record.node, Span::Holding, record.at, &mut open)
            }
            What::Fault {
                node: Some(node),
                period,
                begins,
                ..
            } => {
                let span = Span::Disrupted(*period);
                if *begins {
                    if *period == Disruption::Killed {
                        close(&mut lanes, node, Span::Waiting, record.at, &mut open);
                        close(&mut lanes, node, Span::Holding, record.at, &mut open);
                    }
                    open.insert((node.clone(), key(span)), (span, record.at));
                } else {
                    close(&mut lanes, node, span, record.at, &mut open);
                }
            }
            _ => {}
        }
    }
    for ((node, _), (span, from)) in open {
        lanes.entry(node).or_default().push((span, from, end));
    }
    lanes
}

/// Why the timeline could not be drawn: plotters' SVG backend failed, in practice an I/O error
/// writing the file (its message names the cause, e.g. a missing directory).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct TimelineError(#[from] DrawingAreaErrorKind<std::io::Error>);

/// Draw `outcome` into an SVG file.
pub fn write_svg(outcome: &RunOutcome, path: &Path) -> Result<(), TimelineError> {
    let lanes = lanes(outcome);
    // Clients on top, then replicas, then time-service replicas.
    let mut names: Vec<String> = lanes.keys().cloned().collect();
    names.sort_by_key(|name| {
        let rank = if name.starts_with('c') {
            0
        } else if name.starts_with('r') {
            1
        } else {
            2
        };
        (rank, name.clone())
    });
    let count = names.len();
    // Lane i (top first) is centred on y = count - 1 - i.
    let y_of = |i: usize| (count - 1 - i) as f64;
    let seconds = outcome.sim_time.as_secs_f64().max(1.0);
    let height = 150 + 40 * count as u32;
    let root = SVGBackend::new(path, (1200, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot, legend) = root.split_vertically(height - 56);
    let title = format!(
        "{} / {} algorithm / seed {}: T1-belief {}, T1-resource {}, K3 {}",
        outcome.config.scenario,
        outcome.config.algorithm.name(),
        outcome.seed,
        if outcome.verdicts.passed("T1-belief") {
            "ok"
        } else {
            "VIOLATED"
        },
        if outcome.verdicts.passed("T1-resource") {
            "ok"
        } else {
            "VIOLATED"
        },
        if outcome.verdicts.passed("K3") {
            "ok"
        } else {
            "VIOLATED"
        },
    );
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(0.0..seconds, -0.5..(count as f64 - 0.5))?;
    let label_names = names.clone();
    chart
        .configure_mesh()
        .x_desc("simulated seconds")
        .y_labels(count)
        .y_label_formatter(&move |y: &f64| {
            let lane = count as f64 - 1.0 - y.round();
            if (y - y.round()).abs() < 1e-6 && lane >= 0.0 {
                label_names.get(lane as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .disable_y_mesh()
        .draw()?;
    let min_width = seconds / 2000.0;
    for (i, name) in names.iter().enumerate() {
        let y = y_of(i);
        // Waiting and holding as the lane's bar; disruptions as a strip above it, so that a
        // paused holder shows both.
        for &(span, from, to) in &lanes[name] {
            let (low, high) = match span {
                Span::Waiting => (y - 0.15, y + 0.15),
                Span::Holding => (y - 0.3, y + 0.2),
                Span::Disrupted(_) => (y + 0.22, y + 0.4),
            };
            let to = to.as_secs_f64().max(from.as_secs_f64() + min_width);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(from.as_secs_f64(), low), (to, high)],
                colour(span).filled(),
            )))?;
        }
    }
    // Violations: overlapping beliefs as red bands across the client lanes.
    let clients = outcome.config.clients;
    let client_band = (y_of(clients - 1) - 0.5, y_of(0) + 0.5);
    for overlap in &outcome.verdicts.overlaps {
        let to = overlap
            .to
            .as_secs_f64()
            .max(overlap.from.as_secs_f64() + seconds / 500.0);
        chart.draw_series(std::iter::once(Rectangle::new(
            [(overlap.from.as_secs_f64(), client_band.0), (to, client_band.1)],
            RED.mix(0.25).filled(),
        )))?;
    }
    // Stale-token writes and K3 resurrections as red crosses on the writer's lane.
    let lane_of: BTreeMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    for record in &outcome.records {
        let lane = match &record.what {
            What::Resource {
                client, stale: true, ..
            } => client.split('-').next().and_then(|node| lane_of.get(node)).copied(),
            What::Resurrected { thread, .. } => thread.split('-').next().and_then(|node| lane_of.get(node)).copied(),
            _ => None,
        };
        if let Some(lane) = lane {
            chart.draw_series(std::iter::once(Cross::new(
                (record.at.as_secs_f64(), y_of(lane)),
                7,
                RED.stroke_width(3),
            )))?;
        }
    }
    let entries = [
        ("waiting", Span::Waiting),
        ("holding (believes it holds)", Span::Holding),
        ("paused", Span::Disrupted(Disruption::Paused)),
        ("dead", Span::Disrupted(Disruption::Killed)),
        ("cut off / isolated", Span::Disrupted(Disruption::CutOff)),
        ("message loss", Span::Disrupted(Disruption::Lossy)),
    ];
    for (i, (label, span)) in entries.iter().enumerate() {
        let x = 60 + 185 * i as i32;
        legend.draw(&Rectangle::new([(x, 8), (x + 16, 22)], colour(*span).filled()))?;
        legend.draw(&Text::new(*label, (x + 22, 9), ("sans-serif", 13)))?;
    }
    legend
        .draw(&Text::new(
            "red band: two clients believe they hold the lock (T1); red x: a write with a stale fencing token, or a K3 resurrection",
            (60, 34),
            ("sans-serif", 13).into_font().color(&RED),
        ))?;
    root.present()?;
    Ok(())
}
