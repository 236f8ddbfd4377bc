//! The reports as one small static site, readable offline with no server: `index.html` opens
//! with the answer table (which lock keeps which claim under which fault) and the shipped
//! libraries as run, each lock's name linking to a page with that lock's cells; every Markdown
//! report of the folder (`matrix.md`, `fairness.md`, `real-*.md`) becomes a page of its own,
//! its charts shown where it links them, its traces and event records linked as they are;
//! each counterexample with a timeline, and each recorded run of a shipped library, gets a page
//! with its timeline (the latter drawn here from its record: `client_pictures`).
//!
//! Nothing is measured here: the pages are the Markdown reports and records, rendered. So the site is
//! written from a folder of reports (`cassalock report html --dir reports`), after `report all`
//! and the `bench` reports wrote theirs, and the same folder always gives the same bytes.

use std::fmt::Write as _;
use std::path::Path;

use pulldown_cmark::{html, CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::client_pictures::{draw_client_runs, ClientRun};
use crate::{write_file, ReportError};

/// The reports a site is made of, in the order the index lists them: the file, and what it
/// answers. The matrix must be there; the others are shown when the folder has them.
pub const REPORTS: [(&str, &str); 5] = [
    (
        "matrix.md",
        "Every lock against every fault, judged by the model checker and the simulator",
    ),
    (
        "fairness.md",
        "Is the old lock slower and less fair than the queue lock, as the thesis claims?",
    ),
    (
        "real-backends.md",
        "Every lock on real local servers: throughput, waits, fairness, each backend's own fault",
    ),
    (
        "real-clients.md",
        "The shipped client libraries, as black boxes under faults",
    ),
    (
        "real-long-run.md",
        "Does a Cassandra lock slow down over 10,000 acquisitions?",
    ),
];

/// The matrix's sections the index shows before anything else.
const ANSWER_SECTIONS: [&str; 2] = ["Which lock, under which faults", "The shipped libraries, as run"];

/// Most bytes of one Markdown report read (the matrix is about 140 KB today).
const MOST_REPORT_BYTES: u64 = 16 * 1024 * 1024;

/// What a site holds, for the caller to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// Every page written, file names in `dir`, the index first.
    pub pages: Vec<String>,
}

/// One `## ` section of a Markdown report: its heading's text and its lines, heading included.
struct Section<'a> {
    heading: &'a str,
    text: String,
}

/// A report split at its `## ` headings: what comes before the first, then each section.
fn sections(markdown: &str) -> (String, Vec<Section<'_>>) {
    let mut preamble = String::new();
    let mut found: Vec<Section<'_>> = Vec::new();
    let mut in_fence = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        if let Some(heading) = line.strip_prefix("## ").filter(|_| !in_fence) {
            found.push(Section {
                heading: heading.trim(),
                text: String::new(),
            });
        }
        let into = match found.last_mut() {
            Some(section) => &mut section.text,
            None => &mut preamble,
        };
        into.push_str(line);
        into.push('\n');
    }
    (preamble, found)
}

/// The lock pages: the matrix's sections named in the first column of its answer table.
fn lock_names(answer_table: &str) -> Vec<String> {
    answer_table
        .lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter_map(|row| row.split(" | ").next())
        .filter(|first| *first != "lock" && !first.starts_with("---"))
        .map(str::to_owned)
        .collect()
}

/// A page's file name for a lock's section ("Redis SET NX PX (redis-set-nx)" ->
/// "lock-redis-set-nx-px-redis-set-nx.html").
pub fn lock_page(name: &str) -> String {
    format!("lock-{}.html", anchor(name))
}

/// A heading's anchor, as GitHub and mdBook spell it.
pub fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The stem of a counterexample's trace under `matrix/` (`matrix/x-seed3.txt` -> `x-seed3`).
fn trace_stem(path: &str) -> Option<&str> {
    path.strip_prefix("matrix/")?.strip_suffix(".txt")
}

/// The page of a counterexample whose trace has a timeline: its timeline above its steps.
fn trace_page(stem: &str) -> String {
    format!("trace-{stem}.html")
}

/// The stem of a client run's timeline (`real-clients/x.svg` -> `x`).
fn client_run_stem(path: &str) -> Option<&str> {
    path.strip_prefix("real-clients/")?.strip_suffix(".svg")
}

/// The page of a shipped library's run: its timeline above its verdicts.
fn client_run_page(stem: &str) -> String {
    format!("client-{stem}.html")
}

/// A client run's page: the program, its record, its timeline, the judge's verdicts.
fn client_run_body(run: &ClientRun) -> String {
    let program = run
        .program
        .as_deref()
        .map(|program| format!("The program: <code>{}</code> · ", escape(program)))
        .unwrap_or_default();
    format!(
        "<h1>{title}</h1>\n<p>{program}<a href=\"real-clients/{stem}.jsonl\">its event record</a> · \
         every run: <a href=\"real-clients.html\">real-clients</a></p>\n\
         <p><img src=\"real-clients/{stem}.svg\" alt=\"the timeline of {title}\"></p>\n\
         <p>The judge's verdicts (<code>cassalock judge real-clients/{stem}.jsonl</code>):</p>\n<pre>{verdicts}</pre>\n",
        title = escape(&run.title),
        stem = run.stem,
        verdicts = escape(&run.verdicts)
    )
}

/// The most counterexample pages a site writes (the matrix has about fifty).
const MOST_TRACE_PAGES: usize = 1000;

/// The traces under `dir/matrix/` with a timeline beside them (`x.txt` and `x.svg`), as
/// `matrix/x.txt`, sorted.
fn traces_with_timelines(dir: &Path) -> Result<Vec<String>, ReportError> {
    let matrix = dir.join("matrix");
    let Ok(entries) = std::fs::read_dir(&matrix) else {
        return Ok(Vec::new()); // no counterexamples: no pages
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| ReportError::Read {
            path: matrix.clone(),
            source,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".txt") {
            if matrix.join(format!("{stem}.svg")).is_file() {
                found.push(format!("matrix/{name}"));
            }
        }
        if found.len() > MOST_TRACE_PAGES {
            return Err(ReportError::TooManyRecords {
                path: matrix,
                found: found.len(),
                most: MOST_TRACE_PAGES,
            });
        }
    }
    found.sort();
    Ok(found)
}

/// A counterexample's page: its replay command, its timeline, then its steps as written.
fn trace_body(stem: &str, trace: &str) -> String {
    let replay = trace
        .lines()
        .find_map(|line| {
            line.strip_prefix("replay")
                .and_then(|rest| rest.split_once(": "))
                .map(|(_, cmd)| cmd)
        })
        .unwrap_or("");
    let replay = if replay.is_empty() {
        String::new()
    } else {
        format!("Replay: <code>{}</code> · ", escape(replay))
    };
    format!(
        "<h1>{title}</h1>\n<p>{replay}<a href=\"matrix/{stem}.txt\">the steps as text</a></p>\n\
         <p><img src=\"matrix/{stem}.svg\" alt=\"the timeline of {title}\"></p>\n<pre>{steps}</pre>\n",
        title = escape(stem),
        steps = escape(trace)
    )
}

/// A link of a report, as the site needs it: a report of the site becomes its page.
fn site_link(destination: &str, present: &[&str]) -> String {
    let (path, fragment) = match destination.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (destination, None),
    };
    let page = match (path.strip_suffix(".md"), trace_stem(path), client_run_stem(path)) {
        (Some(stem), _, _) if present.contains(&path) => format!("{stem}.html"),
        (_, Some(stem), _) if present.contains(&path) => trace_page(stem),
        (_, _, Some(stem)) if present.contains(&path) => client_run_page(stem),
        _ => path.to_owned(),
    };
    match fragment {
        Some(fragment) => format!("{page}#{fragment}"),
        None => page,
    }
}

/// Markdown to HTML: tables on, headings given their anchors as ids, links to the site's
/// reports pointed at their pages.
fn render(markdown: &str, present: &[&str]) -> String {
    let parser = Parser::new_ext(markdown, Options::ENABLE_TABLES);
    let mut events: Vec<Event<'_>> = Vec::new();
    let mut heading: Option<(HeadingLevel, Vec<Event<'_>>, String)> = None;
    for event in parser {
        let event = match event {
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => Event::Start(Tag::Link {
                link_type,
                dest_url: CowStr::from(site_link(&dest_url, present)),
                title,
                id,
            }),
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => Event::Start(Tag::Image {
                link_type,
                dest_url: CowStr::from(site_link(&dest_url, present)),
                title,
                id,
            }),
            other => other,
        };
        match (&mut heading, event) {
            (None, Event::Start(Tag::Heading { level, .. })) => heading = Some((level, Vec::new(), String::new())),
            (Some(_), Event::End(TagEnd::Heading(_))) => {
                let (level, inner, text) = heading.take().expect("inside a heading");
                let mut inner_html = String::new();
                html::push_html(&mut inner_html, inner.into_iter());
                events.push(Event::Html(CowStr::from(format!(
                    "<{level} id=\"{}\">{inner_html}</{level}>\n",
                    anchor(&text)
                ))));
            }
            (Some((_, inner, text)), event) => {
                if let Event::Text(t) | Event::Code(t) = &event {
                    text.push_str(t);
                }
                inner.push(event);
            }
            (None, event) => events.push(event),
        }
    }
    let mut out = String::new();
    html::push_html(&mut out, events.into_iter());
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A whole page: the site's bar of links, then `body`.
fn page(title: &str, body: &str, present: &[&str]) -> String {
    let mut bar = String::from("<a href=\"index.html\">answers</a>");
    for (file, _) in REPORTS.iter().filter(|(file, _)| present.contains(file)) {
        let stem = file.trim_end_matches(".md");
        let _ = write!(bar, " · <a href=\"{stem}.html\">{stem}</a>");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<link rel=\"stylesheet\" href=\"{STYLESHEET}\">\n</head>\n<body>\n<nav>{bar}</nav>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title)
    )
}

/// The site's one stylesheet, written beside its pages.
const STYLESHEET: &str = "style.css";

const STYLE: &str = "body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1b1b1b; }
nav { background: #20304a; padding: 0.6em 1.2em; position: sticky; top: 0; z-index: 1; }
nav a { color: #fff; text-decoration: none; margin-right: 0.3em; }
main { padding: 0.5em 1.5em 3em; max-width: 110em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }
th, td { border: 1px solid #c8ccd4; padding: 0.3em 0.5em; vertical-align: top; text-align: left; }
th { background: #eef1f6; position: sticky; top: 2.4em; }
tr:nth-child(even) td { background: #fafbfc; }
img { max-width: 100%; border: 1px solid #e1e4ea; }
code { background: #f1f3f6; padding: 0 0.2em; font-size: 0.92em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #dde1e8; padding-bottom: 0.2em; margin-top: 1.6em; }
ul.reports li { margin: 0.3em 0; }
pre { font-size: 12px; background: #f6f7f9; padding: 0.6em; overflow-x: auto; }
";

fn read_report(path: &Path) -> Result<String, ReportError> {
    let read_error = |source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::metadata(path).map_err(read_error)?.len();
    if bytes > MOST_REPORT_BYTES {
        return Err(ReportError::TooLarge {
            path: path.to_path_buf(),
            bytes,
            most: MOST_REPORT_BYTES,
        });
    }
    std::fs::read_to_string(path).map_err(read_error)
}

/// Write the site into `dir`, from the Markdown reports there (the matrix at least).
pub fn write_site(dir: &Path) -> Result<Site, ReportError> {
    let traces = traces_with_timelines(dir)?;
    let client_runs: Vec<ClientRun> = draw_client_runs(dir)?.into_iter().filter(|run| run.drawn).collect();
    let client_timelines: Vec<String> = client_runs
        .iter()
        .map(|run| format!("real-clients/{}.svg", run.stem))
        .collect();
    let present: Vec<&str> = REPORTS
        .iter()
        .map(|(file, _)| *file)
        .filter(|file| dir.join(file).is_file())
        .chain(traces.iter().map(String::as_str))
        .chain(client_timelines.iter().map(String::as_str))
        .collect();
    let matrix = read_report(&dir.join("matrix.md"))?;
    let (_, matrix_sections) = sections(&matrix);
    let answers: Vec<&Section<'_>> = ANSWER_SECTIONS
        .iter()
        .filter_map(|name| matrix_sections.iter().find(|section| section.heading == *name))
        .collect();
    let Some(answer_table) = answers.first() else {
        return Err(ReportError::NotAReport {
            path: dir.join("matrix.md"),
            missing: ANSWER_SECTIONS[0],
        });
    };
    let locks = lock_names(&answer_table.text);
    let mut pages = vec!["index.html".to_owned()];
    let mut written: Vec<(String, String)> = Vec::new();

    // The index: the answers, each lock's name a link to its page, then the reports.
    let mut index = String::from(
        "<h1>cassalock: which lock keeps which claim under which fault</h1>\n\
         <p>Read off the property matrix (model checker and simulator) and the runs of the shipped \
         client libraries. Each lock's name opens its cells; every claim ID is defined in \
         <a href=\"../docs/claims.md\">docs/claims.md</a>.</p>\n",
    );
    for section in &answers {
        let mut text = section.text.clone();
        for lock in &locks {
            text = text.replace(&format!("| {lock} |"), &format!("| [{lock}]({}) |", lock_page(lock)));
        }
        index.push_str(&render(&text, &present));
    }
    index.push_str("<h2 id=\"every-lock\">Every lock's cells</h2>\n<ul class=\"reports\">\n");
    for lock in &locks {
        let _ = writeln!(index, "<li><a href=\"{}\">{}</a></li>", lock_page(lock), escape(lock));
    }
    index.push_str("</ul>\n<h2 id=\"the-reports\">The reports</h2>\n<ul class=\"reports\">\n");
    for (file, what) in REPORTS.iter().filter(|(file, _)| present.contains(file)) {
        let stem = file.trim_end_matches(".md");
        let _ = writeln!(index, "<li><a href=\"{stem}.html\">{stem}</a>: {}</li>", escape(what));
    }
    index.push_str("</ul>\n");
    written.push((
        "index.html".to_owned(),
        page("cassalock: the answers", &index, &present),
    ));

    // A page per lock: its section of the matrix, with the matrix's legend a link away.
    for lock in &locks {
        let Some(section) = matrix_sections.iter().find(|section| section.heading == lock.as_str()) else {
            return Err(ReportError::NotAReport {
                path: dir.join("matrix.md"),
                missing: "a section for every lock of its answer table",
            });
        };
        let body = format!(
            "{}<p>How to read the cells: the legend at the top of <a href=\"matrix.html\">the matrix</a>.</p>\n",
            render(&section.text, &present)
        );
        written.push((lock_page(lock), page(lock, &body, &present)));
    }

    // Every report, whole.
    for file in present.iter().filter(|file| file.ends_with(".md")) {
        let text = if *file == "matrix.md" {
            matrix.clone()
        } else {
            read_report(&dir.join(file))?
        };
        let stem = file.trim_end_matches(".md");
        written.push((format!("{stem}.html"), page(stem, &render(&text, &present), &present)));
    }
    // A page per counterexample with a timeline.
    for trace in &traces {
        let stem = trace_stem(trace).expect("listed as matrix/x.txt");
        let text = read_report(&dir.join(trace))?;
        written.push((trace_page(stem), page(stem, &trace_body(stem, &text), &present)));
    }
    // A page per run of a shipped library, where its timeline was drawn.
    for run in &client_runs {
        written.push((
            client_run_page(&run.stem),
            page(&run.title, &client_run_body(run), &present),
        ));
    }
    write_file(dir, STYLESHEET, STYLE)?;
    for (name, html) in &written {
        write_file(dir, name, html)?;
        if name != "index.html" {
            pages.push(name.clone());
        }
    }
    Ok(Site { pages })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_link_becomes_its_page_and_other_links_stay() {
        let present = ["matrix.md", "fairness.md"];
        assert_eq!(site_link("fairness.md#jain", &present), "fairness.html#jain");
        assert_eq!(site_link("real-clients.md", &present), "real-clients.md");
        assert_eq!(
            site_link("matrix/old-pause-model-t1.txt", &present),
            "matrix/old-pause-model-t1.txt"
        );
        assert_eq!(site_link("fairness-jain.svg", &present), "fairness-jain.svg");
    }

    /// A counterexample whose trace has a timeline opens its page (timeline and steps); one
    /// without stays its text.
    #[test]
    fn a_trace_with_a_timeline_becomes_its_page() {
        let present = ["matrix.md", "matrix/x-partition-s-t1-belief-seed3.txt"];
        assert_eq!(
            site_link("matrix/x-partition-s-t1-belief-seed3.txt", &present),
            "trace-x-partition-s-t1-belief-seed3.html"
        );
        assert_eq!(site_link("matrix/x-model-t1.txt", &present), "matrix/x-model-t1.txt");
        let body = trace_body(
            "x-seed3",
            "plan <a>\nseed 3\n\nreplay (with every store request): cassalock replay --scenario s --seed 3\n",
        );
        assert!(
            body.contains("Replay: <code>cassalock replay --scenario s --seed 3</code>"),
            "{body}"
        );
        assert!(body.contains("<img src=\"matrix/x-seed3.svg\""), "{body}");
        assert!(body.contains("plan &lt;a&gt;"), "{body}");
    }

    /// A client run's timeline link opens its page (timeline and verdicts); the told chart,
    /// an image, stays itself.
    #[test]
    fn a_client_run_s_timeline_becomes_its_page() {
        let present = ["real-clients.md", "real-clients/curator-paused-holder.svg"];
        assert_eq!(
            site_link("real-clients/curator-paused-holder.svg", &present),
            "client-curator-paused-holder.html"
        );
        assert_eq!(site_link("real-clients/told.svg", &present), "real-clients/told.svg");
        let body = client_run_body(&ClientRun {
            stem: "curator-paused-holder".into(),
            title: "Curator <5>, holder paused".into(),
            program: Some("target/clients/java/curator --connect 127.0.0.1:2181".into()),
            verdicts: "T1-belief: violated".into(),
            drawn: true,
        });
        assert!(body.contains("<h1>Curator &lt;5&gt;, holder paused</h1>"), "{body}");
        assert!(
            body.contains("<img src=\"real-clients/curator-paused-holder.svg\""),
            "{body}"
        );
        assert!(
            body.contains("href=\"real-clients/curator-paused-holder.jsonl\""),
            "{body}"
        );
        assert!(body.contains("<pre>T1-belief: violated</pre>"), "{body}");
    }

    #[test]
    fn headings_get_their_anchors_and_tables_render() {
        let html = render(
            "## Which lock, under which faults\n\n| a | b |\n|---|---|\n| 1 | [x](matrix.md) |\n",
            &["matrix.md"],
        );
        assert!(
            html.contains("<h2 id=\"which-lock-under-which-faults\">Which lock, under which faults</h2>"),
            "{html}"
        );
        assert!(
            html.contains("<table>") && html.contains("<a href=\"matrix.html\">x</a>"),
            "{html}"
        );
    }

    #[test]
    fn the_lock_names_are_the_answer_table_s_first_column() {
        let table = "## Which lock\n\n| lock | no fault |\n|---|---|\n| old GetLock (L3-4) | ok |\n| etcd mutex (etcd) | ok |\n";
        assert_eq!(lock_names(table), ["old GetLock (L3-4)", "etcd mutex (etcd)"]);
        assert_eq!(
            lock_page("Redis SET NX PX (redis-set-nx)"),
            "lock-redis-set-nx-px-redis-set-nx.html"
        );
    }
}
