//! Pictures of the shipped libraries' runs, drawn from the records `cassalock bench clients`
//! committed (`real-clients/*.jsonl`): each run's timeline beside its record
//! (`real-clients/NAME.svg`, the simulation build draws), and one chart over every run of what
//! a holder that lost its lock was told, and how long after another client took it
//! (`real-clients/told.svg`).
//!
//! The runs are wall-clock and need live servers; their pictures do not. Drawn from the
//! records by the judge that judged them when they ran, they are the same bytes every time,
//! so `.ci/check-reports` holds them to the records, and a picture can never show a run other
//! than the one its row reports.

use std::fmt::Write as _;
use std::io::BufReader;
use std::path::Path;
use std::time::Duration;

use cassalock_judge::event::{self, Call, Record, What};
use cassalock_judge::observed::ObservedVerdicts;
use cassalock_judge::told::{LostHolder, Told};
use cassalock_judge::{judge, Judgement};

use crate::real_clients::{record_name, ClientFault, LIBRARIES};
use crate::{write_file, ReportError};

/// The folder of a report folder that holds the client runs' records.
pub const RECORDS_DIR: &str = "real-clients";
/// The chart of what overtaken holders were told, in [`RECORDS_DIR`].
pub const TOLD_CHART: &str = "told.svg";
/// Most records read (`bench clients` writes 34 today).
const MOST_RECORDS: usize = 1_000;
/// Most bytes of one record read (the largest today is about 12 KB; a record of a long run
/// belongs to `cassalock judge`, which reads it in flat memory, not to a picture).
const MOST_RECORD_BYTES: u64 = 64 * 1024 * 1024;
/// The told chart's axis: from the overtaking acquisition to this many seconds after it. A
/// telling later than that is drawn at the axis' end with its time written beside it.
const TOLD_AXIS_S: f64 = 5.0;

/// One client run as the site shows it: its record's stem (`redis-py-paused-holder`), a title,
/// the program that ran, and the judge's verdicts as `cassalock judge` prints them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientRun {
    pub stem: String,
    pub title: String,
    pub program: Option<String>,
    pub verdicts: String,
    /// Whether its timeline was drawn (`real-clients/STEM.svg`): the simulation build draws.
    pub drawn: bool,
}

/// Every record under `dir/real-clients/`, judged: its timeline drawn beside it (the
/// simulation build), and the told chart written when a run had an overtaken holder. None
/// when the folder is not there.
pub fn draw_client_runs(dir: &Path) -> Result<Vec<ClientRun>, ReportError> {
    let records = dir.join(RECORDS_DIR);
    let mut runs = Vec::new();
    let mut told_rows = Vec::new();
    for name in record_files(&records)? {
        let path = records.join(&name);
        let record = read_record(&path)?;
        let judgement = judge(&record);
        let Judgement::Observed(verdicts) = &judgement else {
            return Err(ReportError::NotAClientRun { path });
        };
        let stem = name.trim_end_matches(".jsonl").to_owned();
        let (order, fault) = match record_name(&name) {
            Some((slug, fault)) => (
                (
                    LIBRARIES
                        .iter()
                        .position(|(listed, _)| *listed == slug)
                        .unwrap_or(LIBRARIES.len()),
                    ClientFault::ALL
                        .iter()
                        .position(|&listed| listed == fault)
                        .unwrap_or_default(),
                ),
                fault.label(),
            ),
            None => ((LIBRARIES.len(), 0), ""),
        };
        let tries = record
            .events
            .iter()
            .find_map(|event| match &event.what {
                What::Invoke { call, .. } => Some(*call == Call::TryLock),
                _ => None,
            })
            .unwrap_or(false);
        let fault_words = if tries {
            format!("{fault}, each call a try_lock")
        } else {
            fault.to_owned()
        };
        let title = format!("{}, {fault_words} ({stem})", record.header.lock);
        if !verdicts.lost_holders.is_empty() || verdicts.never_told > 0 {
            let short_lock = match record.header.lock.split_once(" (") {
                // "etcd client 3.4.13 (v0.5.0-alpha...) concurrency.Mutex": the pseudo-version
                // says nothing a reader of the chart needs.
                Some((head, rest)) => format!("{head}{}", rest.split_once(')').map_or("", |(_, tail)| tail)),
                None => record.header.lock.clone(),
            };
            told_rows.push((order, told_row(&format!("{short_lock}, {fault_words}"), verdicts)));
        }
        let drawn = draw_timeline(&record, &judgement, &records.join(format!("{stem}.svg")))?;
        runs.push(ClientRun {
            stem,
            title,
            program: record
                .header
                .replay
                .as_deref()
                .map(|replay| replay.trim_start_matches("client program: ").to_owned()),
            verdicts: judgement.to_string(),
            drawn,
        });
    }
    if !told_rows.is_empty() {
        // In the report's order: by library as `LIBRARIES` lists them, then by fault.
        told_rows.sort_by(|(a, a_row), (b, b_row)| (a, &a_row.title).cmp(&(b, &b_row.title)));
        let rows: Vec<ToldRow> = told_rows.into_iter().map(|(_, row)| row).collect();
        write_file(&records, TOLD_CHART, &told_chart(&rows))?;
    }
    Ok(runs)
}

/// The record files' names in `records`, sorted; none when the folder is not there.
fn record_files(records: &Path) -> Result<Vec<String>, ReportError> {
    let read_error = |source| ReportError::Read {
        path: records.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(records) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(read_error(source)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let name = entry.map_err(read_error)?.file_name();
        if let Some(name) = name.to_str().filter(|name| name.ends_with(".jsonl")) {
            names.push(name.to_owned());
        }
        if names.len() > MOST_RECORDS {
            return Err(ReportError::TooManyRecords {
                path: records.to_path_buf(),
                found: names.len(),
                most: MOST_RECORDS,
            });
        }
    }
    names.sort();
    Ok(names)
}

fn read_record(path: &Path) -> Result<Record, ReportError> {
    let read_error = |source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::metadata(path).map_err(read_error)?.len();
    if bytes > MOST_RECORD_BYTES {
        return Err(ReportError::TooLarge {
            path: path.to_path_buf(),
            bytes,
            most: MOST_RECORD_BYTES,
        });
    }
    let file = std::fs::File::open(path).map_err(read_error)?;
    event::read(BufReader::new(file)).map_err(|source| ReportError::Record {
        path: path.to_path_buf(),
        source,
    })
}

/// Draw the run's timeline into `path` (as `cassalock judge FILE --svg` draws it); whether it
/// was drawn: the real build has no timelines.
#[cfg(madsim)]
fn draw_timeline(record: &Record, judgement: &Judgement, path: &Path) -> Result<bool, ReportError> {
    let picture = cassalock_sim::timeline::Picture::new(&record.header, &record.events, judgement);
    cassalock_sim::timeline::write_record_svg(&picture, path).map_err(|source| ReportError::Timeline {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(true)
}

#[cfg(not(madsim))]
fn draw_timeline(_: &Record, _: &Judgement, _: &Path) -> Result<bool, ReportError> {
    Ok(false)
}

/// How a holder was told, as the chart draws it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    LostNotice,
    AtRelease,
    RefusedWrite,
}

impl Way {
    fn of(told: &Told) -> Self {
        match told {
            Told::LostNotice { .. } => Self::LostNotice,
            Told::AtRelease { .. } => Self::AtRelease,
            Told::RefusedWrite => Self::RefusedWrite,
        }
    }

    const ALL: [Way; 3] = [Way::LostNotice, Way::AtRelease, Way::RefusedWrite];

    fn words(self) -> &'static str {
        match self {
            Self::LostNotice => "a lost notice, unasked",
            Self::AtRelease => "its release's answer",
            Self::RefusedWrite => "its write refused by fencing",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Self::LostNotice => "#1f77b4",
            Self::AtRelease => "#6a3d9a",
            Self::RefusedWrite => "#2ca02c",
        }
    }

    /// Its mark centred on (x, y): a circle, a square, a triangle, so that two ways told at
    /// one instant both show; `title` is the mark's tooltip.
    fn mark(self, x: i64, y: i64, title: &str) -> String {
        let fill = self.colour();
        let shape = match self {
            Self::LostNotice => format!("<circle class=\"told\" cx=\"{x}\" cy=\"{y}\" r=\"6\""),
            Self::AtRelease => format!(
                "<rect class=\"told\" x=\"{}\" y=\"{}\" width=\"11\" height=\"11\"",
                x - 5,
                y - 5
            ),
            Self::RefusedWrite => format!("<path class=\"told\" d=\"M{x} {} l7 12 h-14 z\"", y - 7),
        };
        format!(
            "{shape} fill=\"{fill}\" fill-opacity=\"0.75\"><title>{title}</title></{}>",
            self.element()
        )
    }

    fn element(self) -> &'static str {
        match self {
            Self::LostNotice => "circle",
            Self::AtRelease => "rect",
            Self::RefusedWrite => "path",
        }
    }
}

/// One run's overtaken holders: each telling (seconds after its holder was overtaken, and
/// how), and how many were never told.
#[derive(Clone, Debug, PartialEq)]
struct ToldRow {
    title: String,
    tellings: Vec<(f64, Way)>,
    never_told: u64,
}

fn told_row(title: &str, verdicts: &ObservedVerdicts) -> ToldRow {
    let tellings = verdicts
        .lost_holders
        .iter()
        .flat_map(|lost: &LostHolder| {
            lost.told
                .iter()
                .map(move |(at, how)| (signed_s(*at, lost.overtaken_at), Way::of(how)))
        })
        .collect();
    ToldRow {
        title: title.to_owned(),
        tellings,
        never_told: verdicts.never_told,
    }
}

fn signed_s(at: Duration, from: Duration) -> f64 {
    if at >= from {
        (at - from).as_secs_f64()
    } else {
        -(from - at).as_secs_f64()
    }
}

const CHART_WIDTH_PX: i64 = 1240;
const LABEL_PX: i64 = 560;
const ROW_PX: i64 = 26;
const TOP_PX: i64 = 64;
/// Room right of the axis for "never told" and for a late telling's time.
const RIGHT_PX: i64 = 130;

/// The chart: a row per run with an overtaken holder, each telling a mark at its time after
/// the overtaking acquisition (its shape and colour say how), a holder never told a red cross
/// past the axis' end.
fn told_chart(rows: &[ToldRow]) -> String {
    let axis_from = LABEL_PX;
    let axis_to = CHART_WIDTH_PX - RIGHT_PX;
    let x_of =
        |s: f64| axis_from + ((s.clamp(0.0, TOLD_AXIS_S) / TOLD_AXIS_S) * (axis_to - axis_from) as f64).round() as i64;
    let never_x = axis_to + 60;
    let rows_px = ROW_PX * rows.len() as i64;
    let legend_y = TOP_PX + rows_px + 58;
    let height = legend_y + 24;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{CHART_WIDTH_PX}\" height=\"{height}\" \
         viewBox=\"0 0 {CHART_WIDTH_PX} {height}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        svg,
        "<text x=\"16\" y=\"26\" font-size=\"17\" font-weight=\"bold\">What a holder that lost its lock was told, and when</text>"
    );
    let _ = writeln!(
        svg,
        "<text x=\"16\" y=\"46\" font-size=\"13\" fill=\"#444\">Every recorded run of a shipped library in which another client took a holder's lock; \
         seconds from that acquisition (a telling before it is drawn at 0)</text>"
    );
    // Stripes first, then the grid over them, then the marks over both.
    for index in (0..rows.len()).step_by(2) {
        let _ = writeln!(
            svg,
            "<rect x=\"8\" y=\"{}\" width=\"{}\" height=\"{ROW_PX}\" fill=\"#f3f4f7\"/>",
            TOP_PX + ROW_PX * index as i64,
            CHART_WIDTH_PX - 16
        );
    }
    for second in 0..=TOLD_AXIS_S as i64 {
        let x = x_of(second as f64);
        let _ = writeln!(
            svg,
            "<line x1=\"{x}\" y1=\"{TOP_PX}\" x2=\"{x}\" y2=\"{}\" stroke=\"#c9ccd3\"/>",
            TOP_PX + rows_px
        );
        let _ = writeln!(
            svg,
            "<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{second} s</text>",
            TOP_PX + rows_px + 18
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">seconds after another client acquired the holder's lock</text>",
        (axis_from + axis_to) / 2,
        TOP_PX + rows_px + 34
    );
    let _ = writeln!(
        svg,
        "<text x=\"{never_x}\" y=\"{}\" fill=\"#c62828\" text-anchor=\"middle\">never</text>",
        TOP_PX + rows_px + 18
    );
    for (index, row) in rows.iter().enumerate() {
        let y = TOP_PX + ROW_PX * index as i64 + ROW_PX / 2;
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            LABEL_PX - 12,
            y + 4,
            escape(&row.title)
        );
        for &(seconds, way) in &row.tellings {
            let x = x_of(seconds);
            svg.push_str(&way.mark(x, y, &format!("{}, {seconds:.3} s after", way.words())));
            svg.push('\n');
            if seconds > TOLD_AXIS_S {
                let _ = writeln!(
                    svg,
                    "<text x=\"{}\" y=\"{}\" font-size=\"11\">{seconds:.1} s</text>",
                    x + 10,
                    y + 4
                );
            }
        }
        if row.never_told > 0 {
            let _ = writeln!(
                svg,
                "<path class=\"never\" d=\"M{} {} l12 12 M{} {} l-12 12\" stroke=\"#c62828\" stroke-width=\"3\"><title>{} never told</title></path>",
                never_x - 6,
                y - 6,
                never_x + 6,
                y - 6,
                row.never_told
            );
        }
    }
    let mut x = LABEL_PX - 200;
    for way in Way::ALL {
        svg.push_str(&way.mark(x, legend_y, way.words()).replace("class=\"told\" ", ""));
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\">{}</text>",
            x + 12,
            legend_y + 4,
            way.words()
        );
        x += 36 + 7 * way.words().len() as i64;
    }
    let _ = writeln!(
        svg,
        "<path d=\"M{} {} l12 12 M{} {} l-12 12\" stroke=\"#c62828\" stroke-width=\"3\"/><text x=\"{}\" y=\"{}\">never told while it held (C-lost violated)</text>",
        x - 6,
        legend_y - 6,
        x + 6,
        legend_y - 6,
        x + 12,
        legend_y + 4
    );
    svg.push_str("</svg>\n");
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(title: &str, tellings: &[(f64, Way)], never_told: u64) -> ToldRow {
        ToldRow {
            title: title.to_owned(),
            tellings: tellings.to_vec(),
            never_told,
        }
    }

    #[test]
    fn each_telling_is_a_mark_at_its_time_and_a_holder_never_told_a_cross() {
        let svg = told_chart(&[
            row("A <lock>, holder paused", &[(1.0, Way::AtRelease)], 0),
            row("B, cut off", &[(7.5, Way::LostNotice), (2.5, Way::RefusedWrite)], 1),
        ]);
        // 0..5 s over LABEL_PX..(WIDTH - RIGHT): 1 s is a fifth of the way.
        let one_s = LABEL_PX + (CHART_WIDTH_PX - RIGHT_PX - LABEL_PX) / 5;
        assert!(
            svg.contains(&format!("<rect class=\"told\" x=\"{}\"", one_s - 5)),
            "{svg}"
        );
        assert!(svg.contains("its release's answer, 1.000 s after"), "{svg}");
        // A telling past the axis is drawn at its end, its time written beside it.
        assert!(
            svg.contains(&format!("<circle class=\"told\" cx=\"{}\"", CHART_WIDTH_PX - RIGHT_PX)),
            "{svg}"
        );
        assert!(svg.contains(">7.5 s</text>"), "{svg}");
        assert!(svg.contains("<title>1 never told</title>"), "{svg}");
        assert!(svg.contains("A &lt;lock&gt;, holder paused"), "{svg}");
        assert_eq!(svg.matches("class=\"told\"").count(), 3);
        assert_eq!(svg.matches("class=\"never\"").count(), 1);
    }

    /// The committed records: every run whose holder was overtaken has its row, and the
    /// chart's marks are the judge's tellings, one each.
    #[test]
    fn the_told_chart_has_a_row_per_run_with_an_overtaken_holder() {
        let records = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../reports")
            .join(RECORDS_DIR);
        let mut rows = Vec::new();
        let mut never = 0;
        for name in record_files(&records).expect("the committed records") {
            let record = read_record(&records.join(&name)).expect("a record");
            let Judgement::Observed(verdicts) = judge(&record) else {
                panic!("{name} is not a client run's record");
            };
            if !verdicts.lost_holders.is_empty() {
                rows.push(told_row(&name, &verdicts));
            }
            never += verdicts.never_told;
        }
        assert!(rows.len() >= 10, "{} runs with an overtaken holder", rows.len());
        assert!(never >= 1, "the fair lock's holder never told is in the records");
        let svg = told_chart(&rows);
        let marks: usize = rows.iter().map(|row| row.tellings.len()).sum();
        assert_eq!(svg.matches("class=\"told\"").count(), marks);
        assert_eq!(
            svg.matches("never told</title>").count(),
            rows.iter().filter(|row| row.never_told > 0).count()
        );
    }
}
