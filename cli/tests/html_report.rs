//! `cassalock report html`: the committed reports as one static site. Written from a copy of
//! `reports/` (beside a link to `docs/`, as in the repository), every page is held to links
//! that resolve (files, and `#anchors` to ids of the page they name) and to a body that says
//! something; then, in CI (ignored here: it needs Debian's `chromium`), a real browser opens
//! every page, its text is read back from the DOM it built, and the index and a lock's page
//! are photographed into `target/html-screenshots/` for a person to look at.
#![cfg(madsim)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a folder");
    for entry in std::fs::read_dir(from).expect("a readable folder") {
        let path = entry.expect("an entry").path();
        let target = to.join(path.file_name().expect("a name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("a copy");
        }
    }
}

/// The site, written by the binary into `<tmp>/reports` from a copy of the committed reports
/// (their `.html` left out), with `<tmp>/docs` the repository's book.
fn site(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("cassalock-html-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let reports = root.join("reports");
    copy_dir(&repository().join("reports"), &reports);
    for entry in std::fs::read_dir(&reports).expect("the copy") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "html") {
            std::fs::remove_file(path).expect("removed");
        }
    }
    std::os::unix::fs::symlink(repository().join("docs"), root.join("docs")).expect("a link to docs/");
    let out = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(["report", "html", "--dir"])
        .arg(&reports)
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    reports
}

fn pages(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the site")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "html"))
        .collect();
    found.sort();
    found
}

/// Every value of `attribute="..."` in `html`.
fn attribute_values<'a>(html: &'a str, attribute: &str) -> Vec<&'a str> {
    let marker = format!("{attribute}=\"");
    let mut values = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find(&marker) {
        let after = &rest[start + marker.len()..];
        let Some(end) = after.find('"') else { break };
        values.push(&after[..end]);
        rest = &after[end..];
    }
    values
}

/// The text of `html` without its tags, roughly: what a reader sees.
fn visible_text(html: &str) -> String {
    let body = html.split_once("<main>").map_or(html, |(_, body)| body);
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

/// A page per recorded run of a shipped library, its timeline drawn from its record, and the
/// chart of what their overtaken holders were told.
fn each_client_run_has_its_page_and_timeline(dir: &Path, names: &BTreeSet<String>) {
    let records: Vec<String> = std::fs::read_dir(dir.join("real-clients"))
        .expect("the client runs' records")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix(".jsonl").map(str::to_owned))
        .collect();
    assert!(records.len() >= 20, "{} client records", records.len());
    for stem in &records {
        assert!(names.contains(&format!("client-{stem}.html")), "no page for {stem}");
        let timeline = std::fs::read_to_string(dir.join("real-clients").join(format!("{stem}.svg")))
            .unwrap_or_else(|e| panic!("the timeline of {stem}: {e}"));
        assert!(
            timeline.contains("</svg>") && timeline.len() > 2_000,
            "{stem}'s timeline is empty"
        );
    }
    let client_pages = names.iter().filter(|name| name.starts_with("client-")).count();
    assert_eq!(client_pages, records.len(), "{names:?}");
    let told = std::fs::read_to_string(dir.join("real-clients/told.svg")).expect("the told chart");
    assert!(
        told.matches("class=\"told\"").count() > 10,
        "the told chart has next to no marks"
    );
}

#[test]
fn every_page_of_the_html_report_links_only_to_what_exists_and_says_something() {
    let dir = site("links");
    let pages = pages(&dir);
    let names: BTreeSet<String> = pages
        .iter()
        .map(|page| page.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    // The index, matrix.md's page, one per lock of the matrix's answer table, the other reports.
    assert!(
        names.contains("index.html") && names.contains("matrix.html"),
        "{names:?}"
    );
    let matrix = std::fs::read_to_string(dir.join("matrix.md")).expect("the matrix");
    let answer_rows = matrix
        .split("## Which lock, under which faults")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the answer table")
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| lock |"))
        .count();
    let lock_pages = names.iter().filter(|name| name.starts_with("lock-")).count();
    assert!(answer_rows >= 11, "{answer_rows} rows in the answer table");
    assert_eq!(lock_pages, answer_rows, "{names:?}");
    // A page per counterexample with a timeline beside its trace: every seed's trace (the
    // simulator's), and a lock model's where its record shows the violation (drawn one step a
    // unit; two believers always show, T1-server and fairness are the model's alone).
    let traces: Vec<String> = std::fs::read_dir(dir.join("matrix"))
        .expect("the traces")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".txt"))
        .collect();
    let drawn = |name: &&String| dir.join("matrix").join(name.replace(".txt", ".svg")).is_file();
    let seed_traces: Vec<&String> = traces.iter().filter(|name| name.contains("-seed")).collect();
    let two_believers: Vec<&String> = traces
        .iter()
        .filter(|name| name.contains("-model-t1.txt") || name.contains("-model-t1-belief.txt"))
        .collect();
    assert!(seed_traces.len() >= 40, "{} seed traces", seed_traces.len());
    assert!(
        two_believers.len() >= 20,
        "{} model traces of two believers",
        two_believers.len()
    );
    let undrawn: Vec<&&String> = seed_traces
        .iter()
        .chain(&two_believers)
        .filter(|name| !drawn(name))
        .collect();
    assert!(undrawn.is_empty(), "traces without a timeline: {undrawn:?}");
    let server_only: Vec<&String> = traces
        .iter()
        .filter(|name| name.contains("-model-t1-server.txt") && drawn(name))
        .collect();
    assert!(
        server_only.is_empty(),
        "a T1-server trace drawn from a record without server readings: {server_only:?}"
    );
    let trace_pages = names.iter().filter(|name| name.starts_with("trace-")).count();
    assert_eq!(trace_pages, traces.iter().filter(drawn).count(), "{names:?}");
    let stray: Vec<String> = std::fs::read_dir(dir.join("matrix"))
        .expect("the traces")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".html"))
        .collect();
    assert!(stray.is_empty(), "pages written among the traces: {stray:?}");
    each_client_run_has_its_page_and_timeline(&dir, &names);
    let mut links = 0_usize;
    let mut broken = Vec::new();
    for page in &pages {
        let html = std::fs::read_to_string(page).expect("a page");
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        assert!(visible_text(&html).trim().len() > 300, "{name} says next to nothing");
        let ids: BTreeSet<&str> = attribute_values(&html, "id").into_iter().collect();
        for target in attribute_values(&html, "href")
            .into_iter()
            .chain(attribute_values(&html, "src"))
        {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            links += 1;
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target, None),
            };
            let resolved = if path.is_empty() { page.clone() } else { dir.join(path) };
            if !resolved.exists() {
                broken.push(format!("{name}: {target}: no such file"));
                continue;
            }
            if let (Some(fragment), true) = (fragment, path.is_empty() || path.ends_with(".html")) {
                let other = std::fs::read_to_string(&resolved).expect("a page");
                let found = if path.is_empty() {
                    ids.contains(fragment)
                } else {
                    attribute_values(&other, "id").contains(&fragment)
                };
                if !found {
                    broken.push(format!("{name}: {target}: no such id"));
                }
            }
        }
    }
    assert!(links >= 300, "only {links} links: is the site whole?");
    assert!(
        broken.is_empty(),
        "{} broken of {links}:\n{}",
        broken.len(),
        broken.join("\n")
    );
    // The index opens with the answer table, each lock's name a link to its page.
    let index = std::fs::read_to_string(dir.join("index.html")).expect("the index");
    let table = index.find("<table>").expect("a table");
    assert!(
        index[..table].contains("Which lock, under which faults"),
        "{index:.600}"
    );
    assert!(
        index.contains("<a href=\"lock-etcd-mutex-session-lease--keep-alive-etcd.html\">etcd mutex"),
        "{index:.2000}"
    );
    // A chart of the fairness report is shown, not only linked.
    let fairness = std::fs::read_to_string(dir.join("fairness.html")).expect("fairness");
    assert!(
        fairness.contains("<img src=\"fairness-throughput.svg\""),
        "{fairness:.1000}"
    );
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn the_committed_html_report_is_what_the_reports_give() {
    let dir = site("committed");
    for page in pages(&dir).into_iter().chain([dir.join("style.css")]) {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let committed = std::fs::read_to_string(repository().join("reports").join(&name))
            .unwrap_or_else(|_| panic!("reports/{name} is not committed: run `cassalock report html`"));
        assert!(
            committed == std::fs::read_to_string(&page).unwrap(),
            "reports/{name} is not what `cassalock report html` writes from reports/: run it and commit"
        );
    }
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn report_html_without_reports_says_what_to_run() {
    let empty = std::env::temp_dir().join(format!("cassalock-html-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(["report", "html", "--dir"])
        .arg(&empty)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("matrix.md is not there") && stderr.contains("cassalock report all"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&empty);
}

/// Chromium, headless, as root on a machine with no network: these flags keep it from trying.
fn chromium(args: &[&str]) -> std::process::Output {
    let profile = std::env::temp_dir().join(format!("cassalock-chromium-{}", std::process::id()));
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("chromium runs (Debian's package `chromium`)")
}

/// The name of the checking page written beside the site's pages: not one of them.
const BROWSER_CHECK_PAGE: &str = "zz-browser-check.html";

/// Virtual time the checking page may take in Chromium: each page's load is real time, not
/// virtual, so this bounds only the page's own timers; a check cut short says so.
const BROWSER_CHECK_BUDGET_MS: u32 = 120_000;

/// A page that opens each of `names` in a frame, one after another, and writes one line per
/// page: its name, the length of the visible text of its `<main>`, whether it has a `<nav>`,
/// then `DONE`. One Chromium reads them all (started once per page, it took minutes).
fn browser_check_page(names: &[String]) -> String {
    let list: Vec<String> = names.iter().map(|name| format!("{name:?}")).collect();
    format!(
        r#"<!doctype html><html><body><pre id="out"></pre><script>
const pages = [{}];
const out = document.getElementById("out");
let next = 0;
function open() {{
  if (next >= pages.length) {{ out.textContent += "DONE\n"; return; }}
  const name = pages[next++];
  const frame = document.createElement("iframe");
  frame.onload = () => {{
    let line;
    try {{
      const page = frame.contentDocument;
      const main = page.querySelector("main");
      line = name + "\t" + (main ? main.innerText.trim().length : -1) + "\t" + !!page.querySelector("nav");
    }} catch (error) {{
      line = name + "\tunreadable: " + error;
    }}
    out.textContent += line + "\n";
    frame.remove();
    open();
  }};
  frame.src = name;
  document.body.appendChild(frame);
}}
open();
</script></body></html>
"#,
        list.join(",")
    )
}

#[test]
#[ignore = "needs Debian's chromium; .ci/run installs it and runs this"]
fn a_real_browser_renders_every_page_of_the_html_report() {
    let dir = site("browser");
    let names: Vec<String> = pages(&dir)
        .iter()
        .map(|page| page.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.len() > 100, "the site has {} pages", names.len());
    let check = dir.join(BROWSER_CHECK_PAGE);
    std::fs::write(&check, browser_check_page(&names)).expect("the checking page is written");
    let out = chromium(&[
        "--allow-file-access-from-files",
        &format!("--virtual-time-budget={BROWSER_CHECK_BUDGET_MS}"),
        "--dump-dom",
        &format!("file://{}", check.display()),
    ]);
    std::fs::remove_file(&check).expect("the checking page is removed");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout);
    let report = dom
        .split_once("<pre id=\"out\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(report, _)| report)
        .unwrap_or_else(|| panic!("the checking page wrote no report: {dom:.400}"));
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(
        lines.last(),
        Some(&"DONE"),
        "Chromium stopped after {} of {} pages ({BROWSER_CHECK_BUDGET_MS} ms of virtual time)",
        lines.len(),
        names.len()
    );
    assert_eq!(lines.len(), names.len() + 1, "one line per page: {report:.400}");
    for (line, name) in lines.iter().zip(&names) {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.first(), Some(&name.as_str()), "pages in order: {line}");
        assert_eq!(fields.len(), 3, "{name}: the browser could not read the page: {line}");
        let text: i64 = fields[1].parse().expect("a length");
        assert!(
            text > 300,
            "{name}: the browser built an empty page ({text} characters in <main>)"
        );
        assert_eq!(fields[2], "true", "{name}: no <nav> in the page the browser built");
    }
    let shots = repository().join("target/html-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for (page, width) in [
        ("index.html", 1400),
        ("lock-old-getlock-l3-4.html", 1400),
        ("fairness.html", 1100),
        (
            "trace-redis-set-nx-failover-set-nx-failover-after-acquire-t1-belief-seed0.html",
            1400,
        ),
        ("client-redisson-fair-paused-holder.html", 1400),
    ] {
        let shot = shots.join(page.replace(".html", ".png"));
        let url = format!("file://{}", dir.join(page).display());
        let out = chromium(&[
            &format!("--screenshot={}", shot.display()),
            &format!("--window-size={width},1000"),
            &url,
        ]);
        assert!(out.status.success(), "{page}: {}", String::from_utf8_lossy(&out.stderr));
        let bytes = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(bytes > 20_000, "{page}: a screenshot of {bytes} bytes is a blank page");
        println!("screenshot: {}", shot.display());
    }
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}
