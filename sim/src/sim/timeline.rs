//! A run as a picture: one lane per client (waiting, holding, paused, cut off, dead), one per
//! replica (down periods shaded), violations marked.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cassalock::driver::LockEvent;
use plotters::prelude::*;

use super::run::RunOutcome;
use super::trace::{Disruption, What};

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
    let mut close = |lanes: &mut BTreeMap<String, Vec<(Span, Duration, Duration)>>,
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

/// Draw `outcome` into an SVG file.
pub fn write_svg(outcome: &RunOutcome, path: &Path) -> Result<(), String> {
    let lanes = lanes(outcome);
    let names: Vec<String> = lanes.keys().cloned().collect();
    let seconds = outcome.sim_time.as_secs_f64().max(1.0);
    let height = 140 + 34 * names.len() as u32;
    let root = SVGBackend::new(path, (1200, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
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
    let lane_count = names.len() as i32;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(0.0..seconds, 0..lane_count)
        .map_err(|e| e.to_string())?;
    let label_names = names.clone();
    chart
        .configure_mesh()
        .x_desc("simulated seconds")
        .y_labels(names.len())
        .y_label_formatter(&move |y| label_names.get(*y as usize).cloned().unwrap_or_default())
        .disable_y_mesh()
        .draw()
        .map_err(|e| e.to_string())?;
    for (row, name) in names.iter().enumerate() {
        let row = row as i32;
        for &(span, from, to) in &lanes[name] {
            let (bottom, top) = match span {
                Span::Waiting => (0.35, 0.65),
                _ => (0.15, 0.85),
            };
            let _ = bottom;
            let _ = top;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [
                        (from.as_secs_f64(), row),
                        (to.as_secs_f64().max(from.as_secs_f64() + seconds / 2000.0), row + 1),
                    ],
                    colour(span)
                        .mix(if matches!(span, Span::Waiting) { 0.6 } else { 0.85 })
                        .filled(),
                )))
                .map_err(|e| e.to_string())?;
        }
    }
    // Violations: overlapping beliefs in red, across the whole chart.
    for overlap in &outcome.verdicts.overlaps {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [
                    (overlap.from.as_secs_f64(), 0),
                    (
                        overlap
                            .to
                            .as_secs_f64()
                            .max(overlap.from.as_secs_f64() + seconds / 500.0),
                        lane_count,
                    ),
                ],
                RED.mix(0.35).filled(),
            )))
            .map_err(|e| e.to_string())?;
    }
    // Stale resource writes (refused or accepted) and K3 resurrections as red marks.
    let lane_of: BTreeMap<&str, i32> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i as i32)).collect();
    for record in &outcome.records {
        let mark = match &record.what {
            What::Resource {
                client, stale: true, ..
            } => client.split('-').next().and_then(|node| lane_of.get(node)).copied(),
            What::Resurrected { .. } => Some(lane_count - 1),
            _ => None,
        };
        if let Some(row) = mark {
            chart
                .draw_series(std::iter::once(Cross::new(
                    (record.at.as_secs_f64(), row),
                    7,
                    RED.stroke_width(3),
                )))
                .map_err(|e| e.to_string())?;
        }
    }
    let legend = [
        ("waiting", Span::Waiting),
        ("holding (believes it holds)", Span::Holding),
        ("paused", Span::Disrupted(Disruption::Paused)),
        ("dead", Span::Disrupted(Disruption::Killed)),
        ("cut off / isolated", Span::Disrupted(Disruption::CutOff)),
    ];
    for (i, (label, span)) in legend.iter().enumerate() {
        let x = 60 + 220 * i as i32;
        let y = height as i32 - 22;
        root.draw(&Rectangle::new([(x, y - 8), (x + 16, y + 6)], colour(*span).filled()))
            .map_err(|e| e.to_string())?;
        root.draw(&Text::new(*label, (x + 22, y - 6), ("sans-serif", 13)))
            .map_err(|e| e.to_string())?;
    }
    root.draw(&Text::new(
        "red band: two believers at once (T1); red x: a stale-token write or a K3 resurrection",
        (60, height as i32 - 46),
        ("sans-serif", 13).into_font().color(&RED),
    ))
    .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
