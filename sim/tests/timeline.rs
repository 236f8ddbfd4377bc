//! The replay timeline (`cassalock replay --svg`) says what the run and its judge say: each
//! node's clock as the plan set it, where a clock jumped and by how much, which refusals were
//! fencing at work and which refused the only holder (C-token), and every violated claim in the
//! title. The checks read the SVG's text and the colours that only one kind of mark uses.
#![cfg(madsim)]

use cassalock::driver::Algorithm;
use cassalock_judge::ClaimVerdict;
use cassalock_sim::knobs::Knobs;
use cassalock_sim::run::{run, RunOutcome};
use cassalock_sim::scenario::{build, SimOptions};

/// The mark colours (sim/src/timeline.rs); the legend draws each once as its key.
const STALE_REFUSED: &str = "#1E6EE6";
const LEGIT_REFUSED: &str = "#C800A0";
const STALE_ACCEPTED: &str = "#E60000";
/// A clock ahead / behind tints its lane.
const CLOCK_AHEAD: &str = "#CDE1F8";
const CLOCK_BEHIND: &str = "#F8D7E8";

fn timeline(scenario: &str, seed: u64, options: &SimOptions) -> (RunOutcome, String) {
    let config = build(scenario, seed, Algorithm::Queue, options).expect("a known scenario");
    let outcome = run(&config, seed, false);
    let path = std::env::temp_dir().join(format!(
        "cassalock-timeline-{scenario}-{seed}-{}.svg",
        std::process::id()
    ));
    cassalock_sim::timeline::write_svg(&outcome, &path).expect("written");
    let svg = std::fs::read_to_string(&path).expect("read back");
    let _ = std::fs::remove_file(&path);
    (outcome, svg)
}

/// Every text element: (its y, its text).
fn texts(svg: &str) -> Vec<(f64, String)> {
    svg.split("<text ")
        .skip(1)
        .map(|element| {
            let y = element
                .split("y=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .and_then(|y| y.parse().ok())
                .expect("a text has a y");
            let text = element
                .split_once('>')
                .and_then(|(_, rest)| rest.split_once("</text>"))
                .map(|(text, _)| text.trim().replace("&apos;", "'"))
                .expect("a text has content");
            (y, text)
        })
        .collect()
}

/// Some text element reads `text`.
fn has_text(svg: &str, text: &str) -> bool {
    texts(svg).iter().any(|(_, t)| t == text)
}

/// The y of the one text that reads `text`.
fn y_of(svg: &str, text: &str) -> f64 {
    let found: Vec<f64> = texts(svg)
        .into_iter()
        .filter(|(_, t)| t == text)
        .map(|(y, _)| y)
        .collect();
    assert_eq!(found.len(), 1, "one text {text:?} in the timeline, found {found:?}");
    found[0]
}

/// `label` is written inside lane `lane` (a lane is 50 px high, its name at its centre).
fn in_lane(svg: &str, label: &str, lane: &str) {
    let (label_y, lane_y) = (y_of(svg, label), y_of(svg, lane));
    assert!(
        (label_y - lane_y).abs() < 25.0,
        "{label:?} at y {label_y} is not in lane {lane} (y {lane_y})"
    );
}

/// The title's lines: the texts above the first lane.
fn title_lines(svg: &str) -> Vec<String> {
    let lane_top = y_of(svg, "c0") - 25.0;
    texts(svg)
        .into_iter()
        .filter(|(y, _)| *y < lane_top - 10.0)
        .map(|(_, text)| text)
        .collect()
}

/// The title names every violated claim and only those,
/// and counts the others.
fn title_names_every_violation(outcome: &RunOutcome, svg: &str) -> String {
    let title = title_lines(svg).join(" ");
    let checks = &outcome.verdicts.checks;
    for check in checks {
        let named = title.contains(&format!("{} VIOLATED", check.claim.as_str()));
        assert_eq!(
            named,
            check.verdict == ClaimVerdict::Violated,
            "{}: {:?} in the title {title:?}",
            check.claim.as_str(),
            check.verdict
        );
    }
    let held = checks.iter().filter(|c| c.verdict == ClaimVerdict::Holds).count();
    let violated = checks.iter().filter(|c| c.verdict.is_violated()).count();
    let others = if violated == 0 {
        format!("all {held} judged claims ok")
    } else {
        format!("the other {held} ok")
    };
    assert!(title.contains(&others), "{others:?} in {title:?}");
    title
}

#[test]
fn a_skewed_replica_s_lane_shows_its_offset() {
    let options = SimOptions {
        offset_s: Some(30.0),
        ..SimOptions::default()
    };
    let (outcome, svg) = timeline("skew", 0, &options);
    in_lane(&svg, "clock +30 s ahead", "r0");
    // The tint: the legend's key and r0's band; no clock is behind.
    assert_eq!(svg.matches(CLOCK_AHEAD).count(), 2);
    assert_eq!(svg.matches(CLOCK_BEHIND).count(), 1);
    let title = title_names_every_violation(&outcome, &svg);
    assert!(
        !outcome.verdicts.all_passed(),
        "skew seed 0 at +30 s breaks T1: {title}"
    );
    // Axis labels in their shortest form.
    let labels: Vec<String> = texts(&svg).into_iter().map(|(_, text)| text).collect();
    assert!(labels.iter().any(|text| text == "50"), "{labels:?}");
    assert!(!labels.iter().any(|text| text.ends_with(".0")), "{labels:?}");
}

#[test]
fn a_backward_jump_is_marked_where_and_by_how_much() {
    let options = SimOptions {
        knobs: Box::new(Knobs {
            backward_jump_s: Some(5.0),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    };
    // Seed 0 draws the jump onto replica r1, at 5.768 s.
    let (outcome, svg) = timeline("contention", 0, &options);
    assert_eq!(
        outcome.config.replica_clocks.get(1).map(|clock| clock.jumps.clone()),
        Some(vec![(5_768, -5_000_000)]),
        "the plan: {}",
        outcome.config.plan()
    );
    in_lane(&svg, "clock jumps \u{2212}5 s: \u{2212}5 s behind", "r1");
    assert!(has_text(&svg, "clock jump: 1"), "the legend counts the jump");
    assert_eq!(svg.matches(CLOCK_BEHIND).count(), 2, "r1 behind from the jump on");
    title_names_every_violation(&outcome, &svg);
}

#[test]
fn refusing_the_only_holder_is_marked_apart_from_fencing_a_stale_one() {
    // CL=ONE seed 38: the resource refused the only holder's writes (seed 28 on madsim's
    // network, reports/matrix.md before 2026-11-27).
    let (outcome, svg) = timeline("cl-one", 38, &SimOptions::default());
    let refused = outcome.verdicts.refusals.len();
    assert!(refused > 0 && outcome.verdicts.refusals.iter().all(|r| r.legitimate));
    assert!(outcome.verdicts.check("C-token").verdict.is_violated());
    assert!(has_text(
        &svg,
        &format!("only holder's write refused (C-token): {refused}")
    ));
    assert!(has_text(&svg, "stale holder's write refused (fencing worked): 0"));
    assert_eq!(
        svg.matches(LEGIT_REFUSED).count(),
        refused + 1,
        "one mark per refusal, and the key"
    );
    assert_eq!(svg.matches(STALE_REFUSED).count(), 1, "the key only");
    let title = title_names_every_violation(&outcome, &svg);
    assert!(title.contains("C-token VIOLATED"), "{title}");

    // Pause seed 0: the paused holder comes back and writes with its stale token; fencing
    // refuses it, which is no violation.
    let (outcome, svg) = timeline("pause", 0, &SimOptions::default());
    let refused = outcome.verdicts.refusals.len();
    assert!(refused > 0 && outcome.verdicts.refusals.iter().all(|r| !r.legitimate));
    assert!(has_text(
        &svg,
        &format!("stale holder's write refused (fencing worked): {refused}")
    ));
    assert_eq!(svg.matches(STALE_REFUSED).count(), refused + 1);
    assert_eq!(svg.matches(LEGIT_REFUSED).count(), 1, "the key only");
    assert_eq!(
        svg.matches(STALE_ACCEPTED).count(),
        2,
        "the key's two strokes: no stale write got through"
    );
    title_names_every_violation(&outcome, &svg);
}

#[test]
fn a_long_title_wraps_and_names_every_violation() {
    // The thesis's listings without fencing, r0 40 s ahead: four claims broken.
    let options = SimOptions {
        offset_s: Some(40.0),
        no_fencing: true,
        thesis_listings: true,
        ..SimOptions::default()
    };
    let (outcome, svg) = timeline("skew", 3, &options);
    let violated = outcome
        .verdicts
        .checks
        .iter()
        .filter(|c| c.verdict.is_violated())
        .count();
    assert!(violated >= 3, "{}", outcome.verdicts);
    let title = title_names_every_violation(&outcome, &svg);
    assert!(title_lines(&svg).len() >= 2, "wrapped, not cut: {title}");
    let stale = outcome.verdicts.stale_accepted;
    assert!(has_text(&svg, &format!("stale token accepted (T1-resource): {stale}")));
    // A cross is two strokes.
    assert_eq!(svg.matches(STALE_ACCEPTED).count(), 2 * (stale + 1));
}
