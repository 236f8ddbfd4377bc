//! A run as a picture, drawn from its event record (`cassalock_judge::event`) and the one
//! judge's verdicts on it, whatever drove the run: one lane per node, top to bottom the
//! clients, the replicas, the time-service replicas and the servers, on the record's clock.
//!
//! A lane's bar is what the node does: a client waits (grey) or believes it holds the lock
//! (green); a replica or time-service replica is down, paused or cut off. A client's
//! disruptions (paused, dead, cut off) run in a strip above its bar, so that a paused holder
//! shows both. Behind the bar, the lane is tinted by the node's clock against simulated time,
//! taken from the clocks the record's header gives ([`ClockSpec::ahead_us_at`]): ahead (blue)
//! or behind (pink), with its offset, drift and per-reading error written under the bar, and a
//! marker with the step at every jump.
//!
//! On top, what the judge found: a red band where two clients believed they held the same
//! lock (T1-belief), and one mark per resource write or K3 oracle record that matters, each of
//! its own shape: a stale token accepted (damage, T1-resource), a stale holder's write refused
//! (fencing doing its job), the only holder's write refused (C-token: the judge decides which
//! refusals are these, `cassalock_judge::rows::Refusal`), a released lock live again (K3), and a
//! holder's `is_lost()` turning true (a filled square) or false again (a hollow one: C-lost
//! asks that it stays true). The title
//! names every claim the run violated; the legend counts every mark.
//!
//! Nothing here decides anything about the lock: the lanes come from the record's events, the
//! clocks from its header, the verdicts, overlaps and refusals from the judge.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cassalock_judge::belief::BeliefRules;
use cassalock_judge::event::{Clock, Disruption, Event, Header, Rules, What};
use cassalock_judge::holding::{HoldingInterval, SimulatedTime};
use cassalock_judge::rows::{Overlap, Refusal};
use cassalock_judge::{ClaimVerdict, Judgement};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::clock::ClockSpec;
use crate::run::RunOutcome;

mod glyphs;
use glyphs::*;
mod record_marks;
use record_marks::{record_marks, RecordMarks};

/// The picture's width, and the height of one lane, in pixels.
const WIDTH: u32 = 1200;
const LANE_PX: u32 = 50;
const TITLE_FONT: u32 = 18;
const LEGEND_FONT: u32 = 13;
const CLOCK_FONT: u32 = 11;

/// The strips of a lane, in lane units around its centre (a lane is 1 high).
const DISRUPTION: (f64, f64) = (0.27, 0.45);
const HOLDING: (f64, f64) = (-0.13, 0.24);
const WAITING: (f64, f64) = (-0.02, 0.13);
/// A clock's tint covers the whole lane (a gap to the next), its words sit under the bar.
const CLOCK_TINT: (f64, f64) = (-0.46, 0.46);
const CLOCK_WORDS: f64 = -0.31;
/// Where a mark sits: on the holding bar.
const MARK: f64 = 0.055;
/// `is_lost()`'s two answers often come a fraction of a second apart: the turn to true sits
/// at the bar's top edge, the turn back at its foot, so that neither hides the other.
const LOST_SEEN_MARK: f64 = HOLDING.1;
const LOST_RETRACTED_MARK: f64 = HOLDING.0;

const STALE_ACCEPTED: RGBColor = RGBColor(230, 0, 0);
const STALE_REFUSED: RGBColor = RGBColor(30, 110, 230);
const LEGIT_REFUSED: RGBColor = RGBColor(200, 0, 160);
const RESURRECTED: RGBColor = RGBColor(140, 0, 60);
const UNNAMED: RGBColor = RGBColor(225, 110, 0);
/// A client run's fault on its servers (a band behind every lane).
const SERVER_FAULT: RGBColor = RGBColor(120, 110, 190);
const CLOCK_AHEAD: RGBColor = RGBColor(205, 225, 248);
const CLOCK_BEHIND: RGBColor = RGBColor(248, 215, 232);

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
        Span::Disrupted(Disruption::DataLost) => RGBColor(180, 40, 40),
    }
}

/// (kind, from, to).
type Spans = Vec<(Span, Duration, Duration)>;

/// A lane's node: clients first, then replicas, then time-service replicas, then servers,
/// each by number.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Lane {
    Client(usize),
    Replica(usize),
    TimeReplica(usize),
    Server(usize),
}

impl Lane {
    fn parse(node: &str) -> Option<Lane> {
        if let Some(i) = node.strip_prefix("ts") {
            return i.parse().ok().map(Lane::TimeReplica);
        }
        if let Some(i) = node.strip_prefix('r') {
            return i.parse().ok().map(Lane::Replica);
        }
        if let Some(i) = node.strip_prefix('s') {
            return i.parse().ok().map(Lane::Server);
        }
        // A client node is `c3`; a client id or thread `c3-0`, `c3-0:2` names its node first.
        let node = node.split(['-', ':']).next()?;
        node.strip_prefix('c')?.parse().ok().map(Lane::Client)
    }

    fn name(&self) -> String {
        match self {
            Lane::Client(i) => format!("c{i}"),
            Lane::Replica(i) => format!("r{i}"),
            Lane::TimeReplica(i) => format!("ts{i}"),
            Lane::Server(i) => format!("s{i}"),
        }
    }

    fn is_client(&self) -> bool {
        matches!(self, Lane::Client(_))
    }
}

/// What a timeline draws: a run's event record and the judge's verdicts on it.
pub struct Picture<'a> {
    header: &'a Header,
    events: &'a [Event],
    /// The record's instant that is 0 on the picture: its start (the first event, on the wall
    /// clock; 0 otherwise).
    origin_ns: u64,
    /// Every claim the judge judged, by its name, with its verdict.
    checks: Vec<(String, ClaimVerdict)>,
    /// Two holders at once (T1-belief).
    overlaps: Vec<Overlap>,
    /// The writes the resource refused, read by the judge (the row locks' judge says which).
    refusals: Vec<Refusal>,
    /// Every holder's belief, as the judge reads it: the holding bars.
    holds: Vec<HoldingInterval<SimulatedTime>>,
    /// Stale writes the resource accepted, where the judge rather than the resource decides
    /// (the families'): when, and the writer's node.
    stale_writes: Vec<(Duration, String)>,
    /// Each instant the server's own state stopped naming a believer (T1-server), and the
    /// node the believer acquired on.
    unnamed: Vec<(Duration, String)>,
    /// Writes a fenced resource refused where the record rather than the row locks' judge
    /// says so (the families', a client program's): when, the writer's node, and whether the
    /// writer was the only holder (C-token) rather than a stale one.
    refused_writes: Vec<(Duration, String, bool)>,
    /// A library's notices that the lock is lost, where the record is a client program's
    /// (its `lease_lost` events are what C-lost judges): when, and the holder's node.
    lost_notices: Vec<(Duration, String)>,
}

impl<'a> Picture<'a> {
    /// The picture of `events` under `header`, as `judgement` judged them.
    pub fn new(header: &'a Header, events: &'a [Event], judgement: &Judgement) -> Self {
        let origin_ns = match header.clock {
            Clock::WallSinceEpoch => events.first().map_or(0, |event| event.at_ns),
            Clock::SimulatedSinceStart | Clock::ModelTicks | Clock::ModelSteps => 0,
        };
        let end = Duration::from_nanos(header.run.end_ns.saturating_sub(origin_ns));
        let shift = |at: Duration| at.saturating_sub(Duration::from_nanos(origin_ns));
        let shifted = |overlaps: Vec<Overlap>| -> Vec<Overlap> {
            overlaps
                .into_iter()
                .map(|mut overlap| {
                    overlap.from = shift(overlap.from);
                    overlap.to = shift(overlap.to);
                    overlap
                })
                .collect()
        };
        let shifted_holds = |holds: Vec<HoldingInterval<SimulatedTime>>| -> Vec<HoldingInterval<SimulatedTime>> {
            holds
                .into_iter()
                .map(|mut hold| {
                    hold.acquired_at = shift(hold.acquired_at);
                    hold.released_at = shift(hold.released_at);
                    hold
                })
                .collect()
        };
        let holds = match (&header.run.rules, judgement) {
            (_, Judgement::Observed(verdicts)) => shifted_holds(verdicts.intervals.clone()),
            (Rules::Families(_), _) => cassalock_judge::families::holding_intervals(events, end),
            (Rules::Observed(rules), _) => cassalock_judge::belief::holding_intervals(
                events,
                end,
                BeliefRules {
                    lease_lost_ends_it: rules.lease_lost_ends_it,
                },
            ),
            (Rules::Rows(_), _) => cassalock_judge::belief::holding_intervals(events, end, BeliefRules::default()),
        };
        // T1-server's marks, with the beliefs its judge reads for each kind of record.
        let belief_rules = match &header.run.rules {
            Rules::Families(_) => BeliefRules {
                lease_lost_ends_it: true,
            },
            Rules::Observed(rules) => BeliefRules {
                lease_lost_ends_it: rules.lease_lost_ends_it,
            },
            Rules::Rows(_) => BeliefRules::default(),
        };
        let node_of = acquiring_nodes(events);
        let unnamed =
            cassalock_judge::server_state::unnamed_from(events, Duration::from_nanos(header.run.end_ns), belief_rules)
                .into_iter()
                .map(|turn| {
                    let node = node_of
                        .get(turn.believer.as_str())
                        .map_or(turn.believer.clone(), |node| (*node).to_owned());
                    (shift(turn.at), node)
                })
                .collect();
        let RecordMarks {
            stale_writes,
            refused_writes,
            lost_notices,
        } = record_marks(header, events, shift);
        let (checks, overlaps, refusals) = match judgement {
            Judgement::Rows(verdicts) => (
                verdicts
                    .checks
                    .iter()
                    .map(|check| (check.claim.as_str().to_owned(), check.verdict))
                    .collect(),
                verdicts.overlaps.clone(),
                verdicts.refusals.clone(),
            ),
            Judgement::Families(verdicts) => (
                verdicts
                    .claims
                    .iter()
                    .map(|(claim, verdict)| {
                        use cassalock_judge::families::Verdict;
                        let verdict = match verdict {
                            Verdict::NoViolation => ClaimVerdict::Holds,
                            Verdict::Violated(_) => ClaimVerdict::Violated,
                            Verdict::Bounded(_) => ClaimVerdict::Bounded,
                            Verdict::NotChecked => ClaimVerdict::NotExercised,
                        };
                        (claim.name().to_owned(), verdict)
                    })
                    .collect(),
                cassalock_judge::holding::overlaps(&cassalock_judge::families::holding_intervals(events, end)),
                Vec::new(),
            ),
            Judgement::Observed(verdicts) => (
                verdicts
                    .checks
                    .iter()
                    .map(|(claim, verdict, _)| (claim.as_str().to_owned(), *verdict))
                    .collect(),
                shifted(verdicts.overlaps.clone()),
                Vec::new(),
            ),
        };
        Picture {
            header,
            events,
            origin_ns,
            checks,
            overlaps,
            refusals,
            holds,
            stale_writes,
            unnamed,
            refused_writes,
            lost_notices,
        }
    }

    /// When `event` happened, on the picture.
    fn at(&self, event: &Event) -> Duration {
        Duration::from_nanos(event.at_ns.saturating_sub(self.origin_ns))
    }

    /// When the record ends, on the picture.
    fn end(&self) -> Duration {
        Duration::from_nanos(self.header.run.end_ns.saturating_sub(self.origin_ns))
    }

    /// The lanes to draw: the header's nodes, or the clients and every node an event names.
    fn lane_names(&self) -> Vec<Lane> {
        let mut lanes: Vec<Lane> = if self.header.run.nodes.is_empty() {
            let mut found: Vec<Lane> = (0..self.header.run.clients).map(Lane::Client).collect();
            found.extend(self.events.iter().filter_map(|event| Lane::parse(&event.node)));
            found
        } else {
            self.header
                .run
                .nodes
                .iter()
                .filter_map(|node| Lane::parse(node))
                .collect()
        };
        lanes.sort();
        lanes.dedup();
        lanes
    }
}

/// What the picture draws under its marks: every lane with its spans, in drawing order; the
/// periods of message loss (all nodes); the instants the lock's data was deleted at the store
/// (all nodes).
struct Drawn {
    lanes: BTreeMap<Lane, Spans>,
    loss: Vec<(Duration, Duration)>,
    data_lost: Vec<Duration>,
    /// A client run's faults on its servers (a command, to its undo if it has one).
    server_faults: Vec<(Duration, Duration)>,
}

/// The node each thread acquired on (its last acquisition's): the lane of its holds and of
/// its T1-server marks. A thread named after its node (`c3-0:2`) finds its lane either way; a
/// real run's thread is its locker's name, which only this says the node of.
fn acquiring_nodes(events: &[Event]) -> BTreeMap<&str, &str> {
    events
        .iter()
        .filter_map(|event| match &event.what {
            What::Acquired { thread, .. } => Some((thread.as_str(), event.node.as_str())),
            _ => None,
        })
        .collect()
}

fn lanes(picture: &Picture) -> Drawn {
    let end = picture.end();
    let mut lanes: BTreeMap<Lane, Spans> = BTreeMap::new();
    lanes.extend(picture.lane_names().into_iter().map(|lane| (lane, Vec::new())));
    let mut open: BTreeMap<(Lane, u8), (Span, Duration)> = BTreeMap::new();
    let key = |span: Span| match span {
        Span::Waiting => 0u8,
        Span::Holding => 1,
        Span::Disrupted(d) => 2 + d as u8,
    };
    let close = |lanes: &mut BTreeMap<Lane, Spans>,
                 open: &mut BTreeMap<(Lane, u8), (Span, Duration)>,
                 lane: &Lane,
                 span: Span,
                 at: Duration| {
        if let Some((span, from)) = open.remove(&(lane.clone(), key(span))) {
            lanes.entry(lane.clone()).or_default().push((span, from, at));
        }
    };
    let mut loss: Vec<(Duration, Duration)> = Vec::new();
    let mut server_faults: Vec<(Duration, Duration)> = Vec::new();
    let mut server_fault_from: Option<Duration> = None;
    let mut loss_from: Option<Duration> = None;
    let mut data_lost: Vec<Duration> = Vec::new();
    for event in picture.events {
        let at = picture.at(event);
        match &event.what {
            What::Invoke { .. }
            | What::Acquired { .. }
            | What::Releasing { .. }
            | What::CallFailed { .. }
            | What::TryReturned { acquired: false, .. } => {
                let Some(lane) = Lane::parse(&event.node) else {
                    continue;
                };
                // A span opens once: a second lock of the same acquisition does not move its
                // holding's start.
                // Holding is drawn from the judge's beliefs, below.
                match &event.what {
                    What::Invoke { .. } => {
                        open.entry((lane, key(Span::Waiting))).or_insert((Span::Waiting, at));
                    }
                    What::Acquired { .. } => close(&mut lanes, &mut open, &lane, Span::Waiting, at),
                    What::Releasing { .. } => {}
                    // The attempt failed, or try_lock said no: the client stops waiting until
                    // its next attempt.
                    _ => close(&mut lanes, &mut open, &lane, Span::Waiting, at),
                }
            }
            What::Fault {
                target: Some(node),
                disruption: Some(period),
                begins,
                ..
            } => {
                let Some(lane) = Lane::parse(node) else { continue };
                let span = Span::Disrupted(*period);
                if *begins {
                    if *period == Disruption::Killed {
                        close(&mut lanes, &mut open, &lane, Span::Waiting, at);
                    }
                    open.insert((lane, key(span)), (span, at));
                } else {
                    close(&mut lanes, &mut open, &lane, span, at);
                }
            }
            // A client's own pause (a GC pause between its check and its write).
            What::ClientPaused { ms } => {
                if let Some(lane) = Lane::parse(&event.node) {
                    let span = Span::Disrupted(Disruption::Paused);
                    let to = (at + Duration::from_millis(*ms)).min(end);
                    lanes.entry(lane).or_default().push((span, at, to));
                }
            }
            What::Fault {
                target: None,
                disruption: Some(Disruption::Lossy),
                begins,
                ..
            } => {
                if *begins {
                    loss_from.get_or_insert(at);
                } else if let Some(from) = loss_from.take() {
                    loss.push((from, at));
                }
            }
            What::Fault {
                target: None,
                disruption: Some(Disruption::DataLost),
                begins: true,
                ..
            } => data_lost.push(at),
            // A client run's command on its servers: from its start to its undo, or an instant.
            What::Fault {
                target: Some(target),
                disruption: None,
                begins,
                ..
            } if target == "servers" => {
                if *begins {
                    if let Some(from) = server_fault_from.replace(at) {
                        server_faults.push((from, from));
                    }
                } else if let Some(from) = server_fault_from.take() {
                    server_faults.push((from, at));
                }
            }
            _ => {}
        }
    }
    for ((lane, _), (span, from)) in open {
        lanes.entry(lane).or_default().push((span, from, end));
    }
    // A hold's lane: the node its holder acquired on.
    let node_of = acquiring_nodes(picture.events);
    for hold in &picture.holds {
        let node = node_of.get(hold.holder.as_str()).copied().unwrap_or(&hold.holder);
        if let Some(lane) = Lane::parse(node) {
            if hold.released_at > hold.acquired_at {
                lanes
                    .entry(lane)
                    .or_default()
                    .push((Span::Holding, hold.acquired_at, hold.released_at));
            }
        }
    }
    loss.extend(loss_from.map(|from| (from, end)));
    server_faults.extend(server_fault_from.map(|from| (from, from)));
    Drawn {
        lanes,
        loss,
        data_lost,
        server_faults,
    }
}

/// The track of each span in its strip: disruptions that overlap in time get different tracks
/// (the first free one, in order of start), so that none hides another; the bar's spans are 0.
fn disruption_tracks(spans: &[(Span, Duration, Duration)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..spans.len())
        .filter(|&i| matches!(spans[i].0, Span::Disrupted(_)))
        .collect();
    order.sort_by_key(|&i| (spans[i].1, spans[i].2));
    let mut tracks = vec![0; spans.len()];
    // Where each track is free from.
    let mut free_from: Vec<Duration> = Vec::new();
    for i in order {
        let (_, from, to) = spans[i];
        let track = match free_from.iter().position(|&free| free <= from) {
            Some(track) => track,
            None => {
                free_from.push(Duration::ZERO);
                free_from.len() - 1
            }
        };
        free_from[track] = to;
        tracks[i] = track;
    }
    tracks
}

/// A stretch of a node's clock between jumps: how far ahead it reads at `from` (negative:
/// behind), and the jump that began it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ClockStretch {
    from: Duration,
    to: Duration,
    ahead_us: i64,
    jump_us: Option<i64>,
}

/// The clock of lane `lane` as the record's header gives it (`None`: it reads the record's
/// clock).
fn clock_of(picture: &Picture, lane: &Lane) -> Option<ClockSpec> {
    let name = lane.name();
    let clock = picture.header.run.clocks.iter().find(|clock| clock.node == name)?;
    let spec = ClockSpec::from_record(clock);
    (spec != ClockSpec::default()).then_some(spec)
}

/// The clock's stretches from the run's start to `end`: one, and one more per jump before
/// `end` (steps at the same millisecond add up).
fn clock_stretches(spec: &ClockSpec, end: Duration) -> Vec<ClockStretch> {
    let mut jumps: BTreeMap<u64, i64> = BTreeMap::new();
    for &(at_ms, step_us) in &spec.jumps {
        // A jump at 0 is part of the clock's first reading, not an event in the run.
        if at_ms > 0 && Duration::from_millis(at_ms) < end {
            *jumps.entry(at_ms).or_default() += step_us;
        }
    }
    let starts = std::iter::once((Duration::ZERO, None)).chain(
        jumps
            .into_iter()
            .map(|(at_ms, step)| (Duration::from_millis(at_ms), Some(step))),
    );
    let starts: Vec<(Duration, Option<i64>)> = starts.collect();
    starts
        .iter()
        .enumerate()
        .map(|(i, &(from, jump_us))| ClockStretch {
            from,
            to: starts.get(i + 1).map_or(end, |next| next.0),
            ahead_us: spec.ahead_us_at(from),
            jump_us,
        })
        .collect()
}

/// Seconds in the shortest form that keeps milliseconds, signed: "+30 s", "−5 s", "+0.25 s".
fn signed_seconds(us: i64) -> String {
    let sign = if us < 0 { "\u{2212}" } else { "+" };
    format!("{sign}{} s", shortest(us.unsigned_abs() as f64 / 1e6, 3))
}

/// `x` with at most `decimals` decimals, no trailing zeros: 50, 2.5, 0.125.
fn shortest(x: f64, decimals: usize) -> String {
    let text = format!("{x:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// What a clock stretch says, longest first; the drawing takes the first that fits.
fn clock_labels(spec: &ClockSpec, stretch: &ClockStretch) -> Vec<String> {
    let offset = match stretch.ahead_us {
        0 => "exact".to_owned(),
        us if us > 0 => format!("{} ahead", signed_seconds(us)),
        us => format!("{} behind", signed_seconds(us)),
    };
    let mut long = match stretch.jump_us {
        Some(step) => format!("clock jumps {}: {offset}", signed_seconds(step)),
        None => format!("clock {offset}"),
    };
    if spec.drift_ppm != 0 {
        long.push_str(&format!(", drifting {:+} ppm", spec.drift_ppm));
    }
    if spec.error_us != 0 {
        long.push_str(&format!(
            ", readings \u{b1}{} ms",
            shortest(spec.error_us as f64 / 1e3, 3)
        ));
    }
    if spec.error_tail_ppm != 0 {
        long.push_str(&format!(
            ", {}% of readings \u{b1}{} ms",
            shortest(f64::from(spec.error_tail_ppm) / 1e4, 4),
            shortest(spec.error_tail_us as f64 / 1e3, 3)
        ));
    }
    let short = match stretch.jump_us {
        Some(step) => signed_seconds(step),
        None => signed_seconds(stretch.ahead_us),
    };
    vec![long, short]
}

/// A text's width in pixels, generously: plotters draws a font of size `font` at `font / 1.24`
/// pixels, and its own width estimate is too narrow for the SVG viewers' sans-serif; a label
/// that overruns its room is worse than one dropped.
fn text_width(text: &str, font: u32) -> i32 {
    (text.chars().count() as f64 * f64::from(font) / 1.24 * 0.6).ceil() as i32
}

/// Why the timeline could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    /// plotters could not draw the picture (into memory: no file is touched yet).
    #[error("the timeline could not be drawn: {0}")]
    Draw(#[from] DrawingAreaErrorKind<std::io::Error>),
    /// The drawn picture could not be written to its file (a missing directory, a full disk).
    #[error("the timeline was drawn but could not be written: {0}")]
    Write(#[source] std::io::Error),
}

/// What the picture's time axis counts.
fn clock_name(clock: Clock) -> &'static str {
    match clock {
        Clock::SimulatedSinceStart => "simulated time",
        Clock::WallSinceEpoch => "the wall clock",
        Clock::ModelTicks => "the model's clock",
        Clock::ModelSteps => "the model's clock",
    }
}

/// Draw a simulated run into an SVG file: its event record, as its verdicts judged it.
pub fn write_svg(outcome: &RunOutcome, path: &Path) -> Result<(), TimelineError> {
    let events = crate::events::events(&outcome.config, &outcome.records);
    let judgement = Judgement::Rows(Box::new(outcome.verdicts.clone()));
    write_record_svg(&Picture::new(&outcome.header, &events, &judgement), path)
}

/// Draw `picture` into an SVG file.
pub fn write_record_svg(picture: &Picture, path: &Path) -> Result<(), TimelineError> {
    let layout = Layout::new(picture);
    let marks = marks(picture);
    let title = title_lines(picture, WIDTH as i32 - 40);
    let legend_rows = legend(
        picture,
        &marks,
        layout.jumps(),
        layout.data_lost.len(),
        layout.server_faults.len(),
    );
    let title_px = 14 + 24 * title.len() as u32;
    let plot_px = LANE_PX * layout.count as u32 + 12 + 40;
    let legend_px = 12 + LEGEND_ROW_PX as u32 * legend_rows.len() as u32;
    let height = title_px + plot_px + legend_px;

    // Drawn into memory first and written in one call: a write that fails says why, with its
    // path (plotters' own file backend reports only "Drawing backend error").
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, rest) = root.split_vertically(title_px);
        let (plot, legend_area) = rest.split_vertically(plot_px);
        draw_title(&top, &title)?;
        layout.draw_plot(&plot, &marks)?;
        draw_legend(&legend_area, &legend_rows)?;
        root.present()?;
    }
    std::fs::write(path, svg).map_err(TimelineError::Write)
}

/// The title's lines, centred at the top.
fn draw_title(top: &DrawingArea<SVGBackend<'_>, Shift>, title: &[String]) -> Fallible {
    for (i, line) in title.iter().enumerate() {
        top.draw(&Text::new(
            line.as_str(),
            (WIDTH as i32 / 2, 10 + 24 * i as i32),
            ("sans-serif", TITLE_FONT)
                .into_font()
                .into_text_style(top)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    Ok(())
}

/// The plot's drawing area, in (seconds, lane) coordinates.
type PlotArea<'b> = DrawingArea<SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Where a picture's things go: its lanes, top first, and its time axis.
struct Layout<'p> {
    picture: &'p Picture<'p>,
    /// Each lane's spans, in lane order (top first), and the message loss behind them all.
    lanes: BTreeMap<Lane, Spans>,
    loss: Vec<(Duration, Duration)>,
    /// When the lock's data was deleted at the store: a line across every lane.
    data_lost: Vec<Duration>,
    /// A client run's faults on its servers: a band behind every lane.
    server_faults: Vec<(Duration, Duration)>,
    count: usize,
    /// The time axis's length.
    seconds: f64,
    /// The lanes whose clock is not the record's: (lane index, clock, its stretches).
    clocks: Vec<(usize, ClockSpec, Vec<ClockStretch>)>,
}

impl<'p> Layout<'p> {
    fn new(picture: &'p Picture<'p>) -> Self {
        let Drawn {
            lanes,
            loss,
            data_lost,
            server_faults,
        } = lanes(picture);
        let count = lanes.len();
        let end = picture.end();
        // A model's record ends just after its last step: half a tick more shows what that step did.
        let margin = if picture.header.clock == Clock::ModelTicks {
            0.5
        } else {
            0.0
        };
        let seconds = (end.as_secs_f64() + margin).max(1.0);
        let clocks: Vec<(usize, ClockSpec, Vec<ClockStretch>)> = lanes
            .keys()
            .enumerate()
            .filter_map(|(i, lane)| {
                clock_of(picture, lane).map(|spec| {
                    let stretches = clock_stretches(&spec, end);
                    (i, spec, stretches)
                })
            })
            .collect();
        Layout {
            picture,
            lanes,
            loss,
            data_lost,
            server_faults,
            count,
            seconds,
            clocks,
        }
    }

    /// The clocks' jumps, all lanes together.
    fn jumps(&self) -> usize {
        self.clocks
            .iter()
            .map(|(_, _, stretches)| stretches.iter().filter(|s| s.jump_us.is_some()).count())
            .sum()
    }

    /// Lane i (top first) is centred on y = count - 1 - i.
    fn y_of(&self, i: usize) -> f64 {
        (self.count - 1 - i) as f64
    }

    /// A band from `from` to `to` seconds, at least 1/2000 of the axis wide.
    fn band(&self, from: f64, to: f64, low: f64, high: f64, colour: ShapeStyle) -> Rectangle<(f64, f64)> {
        let min_width = self.seconds / 2000.0;
        Rectangle::new([(from, low), (to.max(from + min_width), high)], colour)
    }

    /// The axes, then from the back to the front: the loss, the clocks' tints, the lanes'
    /// bars, the clocks' words and jumps, the overlaps, the marks.
    fn draw_plot(&self, plot: &DrawingArea<SVGBackend<'_>, Shift>, marks: &[(Glyph, Duration, Lane)]) -> Fallible {
        let count = self.count;
        let mut chart = ChartBuilder::on(plot)
            .margin_left(12)
            .margin_right(12)
            .margin_top(6)
            .x_label_area_size(40)
            .y_label_area_size(48)
            .build_cartesian_2d(0.0..self.seconds, -0.5..(count as f64 - 0.5))?;
        let label_names: Vec<String> = self.lanes.keys().map(|lane| lane.name()).collect();
        // A model's axis counts steps or ticks: a label between two says nothing.
        let whole_units_only = matches!(self.picture.header.clock, Clock::ModelTicks | Clock::ModelSteps);
        chart
            .configure_mesh()
            .x_desc(match self.picture.header.clock {
                Clock::SimulatedSinceStart => "simulated seconds",
                Clock::WallSinceEpoch => "seconds since the first event",
                Clock::ModelTicks => "model ticks",
                Clock::ModelSteps => "the model's steps, one a unit",
            })
            .x_label_formatter(&|x: &f64| {
                if whole_units_only && (x - x.round()).abs() > 1e-6 {
                    String::new()
                } else {
                    shortest(*x, 6)
                }
            })
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
        let area = chart.plotting_area();
        self.draw_loss(area)?;
        self.draw_server_faults(area)?;
        self.draw_clock_tints(area)?;
        self.draw_spans(area)?;
        self.draw_data_lost(area)?;
        self.draw_clock_words(area)?;
        self.draw_overlaps(area)?;
        self.draw_marks(area, marks)
    }

    /// Message loss hits every node: a band behind all lanes.
    fn draw_loss(&self, area: &PlotArea<'_>) -> Fallible {
        for &(from, to) in &self.loss {
            let colour = colour(Span::Disrupted(Disruption::Lossy)).mix(0.3).filled();
            area.draw(&self.band(
                from.as_secs_f64(),
                to.as_secs_f64(),
                -0.5,
                self.count as f64 - 0.5,
                colour,
            ))?;
        }
        Ok(())
    }

    /// The lock's data deleted at the store: a thin line across every lane, over the bars.
    fn draw_data_lost(&self, area: &PlotArea<'_>) -> Fallible {
        for &at in &self.data_lost {
            // A few pixels wide at any length of run: an instant, but one to see.
            let (from, width) = (at.as_secs_f64(), self.seconds / 300.0);
            let colour = colour(Span::Disrupted(Disruption::DataLost)).filled();
            area.draw(&self.band(from, from + width, -0.5, self.count as f64 - 0.5, colour))?;
        }
        Ok(())
    }

    /// A fault on the servers hits every client: a band behind all lanes, from its command to
    /// its undo (at least a few pixels wide: a restart is an instant on most runs' scale).
    fn draw_server_faults(&self, area: &PlotArea<'_>) -> Fallible {
        for &(from, to) in &self.server_faults {
            let from = from.as_secs_f64();
            let to = to.as_secs_f64().max(from + self.seconds / 300.0);
            area.draw(&self.band(from, to, -0.5, self.count as f64 - 0.5, SERVER_FAULT.mix(0.35).filled()))?;
        }
        Ok(())
    }

    /// Clocks: the tint (under the bars).
    fn draw_clock_tints(&self, area: &PlotArea<'_>) -> Fallible {
        for (i, spec, stretches) in &self.clocks {
            let y = self.y_of(*i);
            for stretch in stretches {
                let (from, to) = (stretch.from.as_secs_f64(), stretch.to.as_secs_f64());
                // A clock exact at the stretch's start but drifting is tinted the way it drifts.
                let ahead = if stretch.ahead_us != 0 {
                    stretch.ahead_us
                } else {
                    spec.drift_ppm
                };
                if ahead != 0 {
                    let colour = if ahead > 0 { CLOCK_AHEAD } else { CLOCK_BEHIND };
                    area.draw(&self.band(from, to, y + CLOCK_TINT.0, y + CLOCK_TINT.1, colour.filled()))?;
                }
            }
        }
        Ok(())
    }

    /// Each lane's bar: waiting, holding, disrupted.
    fn draw_spans(&self, area: &PlotArea<'_>) -> Fallible {
        for (i, (lane, spans)) in self.lanes.iter().enumerate() {
            let y = self.y_of(i);
            let tracks = disruption_tracks(spans);
            let track_count = tracks.iter().copied().max().map_or(1, |last| last + 1);
            for (&(span, from, to), &track) in spans.iter().zip(&tracks) {
                // A client's disruptions above its bar; a replica's are its bar (it holds nothing).
                // Disruptions that overlap share the strip, one track each, the first on top.
                let (low, high) = match span {
                    Span::Waiting => WAITING,
                    Span::Holding => HOLDING,
                    Span::Disrupted(_) => {
                        let (low, high) = if lane.is_client() { DISRUPTION } else { HOLDING };
                        let step = (high - low) / track_count as f64;
                        let top = high - step * track as f64;
                        (top - step + if track_count > 1 { 0.02 } else { 0.0 }, top)
                    }
                };
                area.draw(&self.band(
                    from.as_secs_f64(),
                    to.as_secs_f64(),
                    y + low,
                    y + high,
                    colour(span).filled(),
                ))?;
            }
        }
        Ok(())
    }

    /// Clocks: their words under the bar where they fit, a marker at each jump.
    fn draw_clock_words(&self, area: &PlotArea<'_>) -> Fallible {
        let clock_font = ("sans-serif", CLOCK_FONT)
            .into_font()
            .into_text_style(area)
            .pos(Pos::new(HPos::Left, VPos::Center));
        let px_per_s = f64::from(area.dim_in_pixel().0) / self.seconds;
        let half_lane_px = (LANE_PX as i32 * 46) / 100;
        for (i, spec, stretches) in &self.clocks {
            let y = self.y_of(*i);
            for stretch in stretches {
                let (from, to) = (stretch.from.as_secs_f64(), stretch.to.as_secs_f64());
                let exact = stretch.ahead_us == 0 && spec.drift_ppm == 0 && spec.error_us == 0;
                let indent_px = if stretch.jump_us.is_some() { 12 } else { 4 };
                if let Some(step) = stretch.jump_us {
                    let glyph = if step < 0 { Glyph::JumpBack } else { Glyph::JumpForward };
                    draw_jump(area, glyph, EmptyElement::at((from, y)), half_lane_px)?;
                }
                let room = ((to - from) * px_per_s) as i32 - indent_px - 2;
                let label = clock_labels(spec, stretch)
                    .into_iter()
                    .find(|label| text_width(label, CLOCK_FONT) <= room);
                if let (Some(label), false) = (label, exact && stretch.jump_us.is_none()) {
                    area.draw(
                        &(EmptyElement::at((from, y + CLOCK_WORDS))
                            + Text::new(label, (indent_px, 0), clock_font.clone())),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Overlapping beliefs: red bands across the client lanes.
    fn draw_overlaps(&self, area: &PlotArea<'_>) -> Fallible {
        let clients = self.lanes.keys().filter(|lane| lane.is_client()).count();
        if clients > 0 {
            let (low, high) = (self.y_of(clients - 1) - 0.5, self.y_of(0) + 0.5);
            for overlap in &self.picture.overlaps {
                let to = overlap
                    .to
                    .as_secs_f64()
                    .max(overlap.from.as_secs_f64() + self.seconds / 500.0);
                area.draw(&self.band(overlap.from.as_secs_f64(), to, low, high, RED.mix(0.25).filled()))?;
            }
        }
        Ok(())
    }

    /// The judge's marks, each on its lane.
    fn draw_marks(&self, area: &PlotArea<'_>, marks: &[(Glyph, Duration, Lane)]) -> Fallible {
        let lane_index: BTreeMap<&Lane, usize> = self.lanes.keys().enumerate().map(|(i, lane)| (lane, i)).collect();
        for (glyph, at, lane) in marks {
            if let Some(&i) = lane_index.get(lane) {
                let height = match glyph {
                    Glyph::LostSeen => LOST_SEEN_MARK,
                    Glyph::LostRetracted => LOST_RETRACTED_MARK,
                    _ => MARK,
                };
                draw_glyph(area, *glyph, (at.as_secs_f64(), self.y_of(i) + height))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
