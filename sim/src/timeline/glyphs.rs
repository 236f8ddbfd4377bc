//! The marks on a timeline's lanes (stale writes, lost notices, clock jumps), its title and its
//! legend.

use super::*;

/// A mark on a lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Glyph {
    /// The resource accepted a stale token (damage: T1-resource).
    StaleAccepted,
    /// The resource refused a stale holder's write (fencing worked).
    StaleRefused,
    /// The resource refused the only holder's write (C-token).
    LegitRefused,
    /// A released acquisition's main cell live again (K3).
    Resurrected,
    /// The server's own state stopped naming a client that believes it holds (T1-server).
    Unnamed,
    /// The holder asked and `is_lost()` turned true, or its library told it the lock is lost
    /// (C-lost).
    LostSeen,
    /// The holder asked again and `is_lost()` was false after it had said true (C-lost).
    LostRetracted,
    /// A clock stepped back (or forward).
    JumpBack,
    JumpForward,
}

/// Every mark the judge and the resource's events call for: (glyph, time, lane).
pub(super) fn marks(picture: &Picture) -> Vec<(Glyph, Duration, Lane)> {
    let mut marks = Vec::new();
    for event in picture.events {
        let at = picture.at(event);
        match &event.what {
            What::Write {
                client: Some(client),
                stale: Some(true),
                accepted: Some(true),
                ..
            } => marks.extend(Lane::parse(client).map(|lane| (Glyph::StaleAccepted, at, lane))),
            What::Resurrected { thread, .. } => {
                marks.extend(Lane::parse(thread).map(|lane| (Glyph::Resurrected, at, lane)))
            }
            What::LostSeen { client, .. } => marks.extend(Lane::parse(client).map(|lane| (Glyph::LostSeen, at, lane))),
            What::LostRetracted { client } => {
                marks.extend(Lane::parse(client).map(|lane| (Glyph::LostRetracted, at, lane)))
            }
            _ => {}
        }
    }
    for (at, node) in &picture.unnamed {
        marks.extend(Lane::parse(node).map(|lane| (Glyph::Unnamed, *at, lane)));
    }
    for (at, node) in &picture.stale_writes {
        marks.extend(Lane::parse(node).map(|lane| (Glyph::StaleAccepted, *at, lane)));
    }
    for (at, node, legitimate) in &picture.refused_writes {
        let glyph = if *legitimate {
            Glyph::LegitRefused
        } else {
            Glyph::StaleRefused
        };
        marks.extend(Lane::parse(node).map(|lane| (glyph, *at, lane)));
    }
    for (at, thread) in &picture.lost_notices {
        marks.extend(Lane::parse(thread).map(|lane| (Glyph::LostSeen, *at, lane)));
    }
    for refusal in &picture.refusals {
        let glyph = if refusal.legitimate {
            Glyph::LegitRefused
        } else {
            Glyph::StaleRefused
        };
        let at = refusal.at.saturating_sub(Duration::from_nanos(picture.origin_ns));
        marks.extend(Lane::parse(&refusal.client).map(|lane| (glyph, at, lane)));
    }
    marks
}

pub(super) type Fallible = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Draw `glyph` centred on `at`, in `area`'s coordinates.
pub(super) fn draw_glyph<CT: CoordTranslate>(
    area: &DrawingArea<SVGBackend<'_>, CT>,
    glyph: Glyph,
    at: CT::From,
) -> Fallible {
    let at = EmptyElement::at(at);
    match glyph {
        Glyph::StaleAccepted => area.draw(&(at + Cross::new((0, 0), 6, STALE_ACCEPTED.stroke_width(3)))),
        Glyph::StaleRefused => area.draw(&(at + Circle::new((0, 0), 6, STALE_REFUSED.stroke_width(3)))),
        Glyph::LegitRefused => area.draw(&(at + TriangleMarker::new((0, 0), 8, LEGIT_REFUSED.filled()))),
        Glyph::Resurrected => {
            area.draw(&(at + Polygon::new(vec![(0, -8), (8, 0), (0, 8), (-8, 0)], RESURRECTED.filled())))
        }
        Glyph::Unnamed => area
            .draw(&(at + PathElement::new(vec![(0, -8), (8, 0), (0, 8), (-8, 0), (0, -8)], UNNAMED.stroke_width(3)))),
        Glyph::LostSeen => area.draw(&(at + Rectangle::new([(-5, -5), (5, 5)], BLACK.filled()))),
        Glyph::LostRetracted => area.draw(
            &(at + Rectangle::new([(-5, -5), (5, 5)], WHITE.filled())
                + Rectangle::new([(-5, -5), (5, 5)], BLACK.stroke_width(2))),
        ),
        Glyph::JumpBack | Glyph::JumpForward => draw_jump(area, glyph, at, 8),
    }
}

/// A jump: a bar `half_px` above and below `at`, with a triangle at its foot pointing the way
/// the clock went.
pub(super) fn draw_jump<'a, CT: CoordTranslate>(
    area: &DrawingArea<SVGBackend<'a>, CT>,
    glyph: Glyph,
    at: EmptyElement<CT::From, SVGBackend<'a>>,
    half_px: i32,
) -> Fallible {
    let tip = if glyph == Glyph::JumpBack { -7 } else { 7 };
    let foot = half_px - 5;
    area.draw(
        &(at + PathElement::new(vec![(0, -half_px), (0, half_px)], BLACK.stroke_width(2))
            + Polygon::new(vec![(tip, foot), (0, foot - 5), (0, foot + 5)], BLACK.filled())),
    )
}

/// The title: the run, then every claim it violated, then what held and what had no occasion;
/// wrapped at item boundaries to lines of at most `width` pixels.
pub(super) fn title_lines(picture: &Picture, width: i32) -> Vec<String> {
    let named = |verdict: ClaimVerdict| -> Vec<&str> {
        picture
            .checks
            .iter()
            .filter(|(_, judged)| *judged == verdict)
            .map(|(claim, _)| claim.as_str())
            .collect()
    };
    let (violated, held, idle) = (
        named(ClaimVerdict::Violated),
        named(ClaimVerdict::Holds),
        named(ClaimVerdict::NotExercised),
    );
    // Items, each with the separator that follows it.
    let mut items: Vec<String> = Vec::new();
    for (i, claim) in violated.iter().enumerate() {
        let separator = if i + 1 < violated.len() { ", " } else { "; " };
        items.push(format!("{claim} VIOLATED{separator}"));
    }
    // A claim the run's time limit left undecided, or a model's record its end (it stops
    // where the counterexample does): neither violated nor ok.
    let came_first = match picture.header.clock {
        Clock::ModelTicks | Clock::ModelSteps => "the counterexample's end came first",
        _ => "the time limit came first",
    };
    for claim in named(ClaimVerdict::Bounded) {
        items.push(format!("{claim} bounded ({came_first}); "));
    }
    items.push(format!(
        "{}{}",
        match (violated.is_empty(), held.len()) {
            (true, n) => format!("all {n} judged claims ok"),
            (false, 0) => "no other claim ok".to_owned(),
            (false, n) => format!("the other {n} ok"),
        },
        if idle.is_empty() { "" } else { "; " }
    ));
    for (i, claim) in idle.iter().enumerate() {
        let lead = if i == 0 { "no occasion for " } else { "" };
        let separator = if i + 1 < idle.len() { ", " } else { "" };
        items.push(format!("{lead}{claim}{separator}"));
    }
    let header = picture.header;
    let mut lines = vec![format!(
        "{}: ",
        header
            .run
            .name
            .clone()
            .unwrap_or_else(|| format!("the {} lock, a {} run", header.lock, header.driver))
    )];
    for item in items {
        let line = lines.last_mut().expect("a line");
        if text_width(&format!("{line}{item}"), TITLE_FONT) > width && text_width(line, TITLE_FONT) > 0 {
            lines.push(item);
        } else {
            line.push_str(&item);
        }
    }
    lines.iter().map(|line| line.trim_end().to_owned()).collect()
}

/// A legend entry's key.
#[derive(Clone, Copy)]
pub(super) enum Key {
    Bar(RGBColor),
    Band(RGBAColor),
    Glyph(Glyph),
}

/// The legend: one row of lane strips, one of clock strips, one of the judge's marks (each
/// counted in this run), each row wrapped to the picture's width.
pub(super) fn legend(
    picture: &Picture,
    marks: &[(Glyph, Duration, Lane)],
    jumps: usize,
    data_lost: usize,
    server_faults: usize,
) -> Vec<Vec<(Key, String)>> {
    let count = |glyph: Glyph| marks.iter().filter(|mark| mark.0 == glyph).count();
    let bar = |span: Span| Key::Bar(colour(span));
    let mut lanes = vec![
        (bar(Span::Waiting), "waiting".into()),
        (bar(Span::Holding), "holding (believes it holds)".into()),
        (bar(Span::Disrupted(Disruption::Paused)), "paused".into()),
        (bar(Span::Disrupted(Disruption::Killed)), "dead / down".into()),
        (bar(Span::Disrupted(Disruption::CutOff)), "cut off / isolated".into()),
        (
            Key::Band(colour(Span::Disrupted(Disruption::Lossy)).mix(0.3)),
            "message loss (every node)".into(),
        ),
    ];
    // Only where it happened: most runs have no such fault, and their legends stay as they were.
    if data_lost > 0 {
        lanes.push((
            bar(Span::Disrupted(Disruption::DataLost)),
            format!("the lock's data deleted at the store: {data_lost}"),
        ));
    }
    if server_faults > 0 {
        lanes.push((
            Key::Band(SERVER_FAULT.mix(0.35)),
            format!("a fault on the servers, its command to its undo: {server_faults}"),
        ));
    }
    let groups: Vec<Vec<(Key, String)>> = vec![
        lanes,
        vec![
            (
                Key::Bar(CLOCK_AHEAD),
                format!("clock ahead of {}", clock_name(picture.header.clock)),
            ),
            (Key::Bar(CLOCK_BEHIND), "clock behind".into()),
            (Key::Glyph(Glyph::JumpBack), format!("clock jump: {jumps}")),
        ],
        vec![
            (
                Key::Band(RED.mix(0.25)),
                format!(
                    "two clients believe they hold it (T1-belief): {}",
                    picture.overlaps.len()
                ),
            ),
            (
                Key::Glyph(Glyph::StaleAccepted),
                format!("stale token accepted (T1-resource): {}", count(Glyph::StaleAccepted)),
            ),
            (
                Key::Glyph(Glyph::StaleRefused),
                format!(
                    "stale holder's write refused (fencing worked): {}",
                    count(Glyph::StaleRefused)
                ),
            ),
            (
                Key::Glyph(Glyph::LegitRefused),
                format!("only holder's write refused (C-token): {}", count(Glyph::LegitRefused)),
            ),
            (
                Key::Glyph(Glyph::Resurrected),
                format!("released lock live again (K3): {}", count(Glyph::Resurrected)),
            ),
            (
                Key::Glyph(Glyph::LostSeen),
                match picture.header.run.rules {
                    Rules::Observed(_) => format!("library says the lock is lost (C-lost): {}", count(Glyph::LostSeen)),
                    Rules::Rows(_) | Rules::Families(_) => {
                        format!("holder sees is_lost() turn true (C-lost): {}", count(Glyph::LostSeen))
                    }
                },
            ),
            (
                Key::Glyph(Glyph::Unnamed),
                format!(
                    "the server's state stops naming a believer (T1-server): {}",
                    count(Glyph::Unnamed)
                ),
            ),
            (
                Key::Glyph(Glyph::LostRetracted),
                format!("is_lost() false again (C-lost): {}", count(Glyph::LostRetracted)),
            ),
        ],
    ];
    let mut rows = Vec::new();
    for group in groups {
        let mut row: Vec<(Key, String)> = Vec::new();
        let mut x = LEGEND_LEFT;
        for (key, label) in group {
            let w = legend_entry_width(&label);
            if !row.is_empty() && x + w > WIDTH as i32 - 10 {
                rows.push(std::mem::take(&mut row));
                x = LEGEND_LEFT;
            }
            row.push((key, label));
            x += w;
        }
        rows.push(row);
    }
    rows
}

pub(super) const LEGEND_LEFT: i32 = 60;
pub(super) const LEGEND_ROW_PX: i32 = 22;

pub(super) fn legend_entry_width(label: &str) -> i32 {
    22 + text_width(label, LEGEND_FONT) + 24
}

pub(super) fn draw_legend(area: &DrawingArea<SVGBackend<'_>, Shift>, rows: &[Vec<(Key, String)>]) -> Fallible {
    for (r, row) in rows.iter().enumerate() {
        let y = 8 + LEGEND_ROW_PX * r as i32;
        let mut x = LEGEND_LEFT;
        for (key, label) in row {
            match *key {
                Key::Bar(colour) => area.draw(&Rectangle::new([(x, y), (x + 16, y + 14)], colour.filled()))?,
                Key::Band(colour) => area.draw(&Rectangle::new([(x, y - 2), (x + 16, y + 16)], colour.filled()))?,
                Key::Glyph(glyph) => draw_glyph(area, glyph, (x + 8, y + 7))?,
            }
            area.draw(&Text::new(
                label.as_str(),
                (x + 22, y + 7),
                ("sans-serif", LEGEND_FONT)
                    .into_font()
                    .into_text_style(area)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
            x += legend_entry_width(label);
        }
    }
    Ok(())
}
