//! The README is the front door and `docs/` is a small mdBook; this keeps both walkable.
//!
//! - Every relative markdown link `[text](target)` in `README.md` and `docs/**/*.md` names a file
//!   or directory that exists, resolved from the linking file's directory, with its `#anchor`
//!   stripped. Links to `http:`, `https:` and `mailto:` and pure `#anchor` links are not checked;
//!   links inside fenced code blocks and inline code are not links.
//! - `README.md` stays a front door: at most [`README_MAX_LINES`] lines.
//! - Every page `docs/*.md` is listed in `docs/SUMMARY.md`, mdBook's table of contents (a page
//!   not listed there is not in the book).
//! - No page names this project's issue tracker by number (the pattern `[Ii]ssues? [0-9]`): a
//!   page names the thing itself. Another project's issue is written `owner/repo#N`.
//!
//! Each test lists every offence it finds, with file and line, not just the first.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const README_MAX_LINES: usize = 200;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the workspace root")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `README.md` and every `.md` file under `docs/`, sorted.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    let root = root();
    let mut found = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut found);
    found.sort();
    found
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// The lines of `text` outside fenced code blocks, with inline code blanked out: (line number,
/// prose).
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut prose = String::with_capacity(line.len());
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
                prose.push(' ');
            } else {
                prose.push(if in_code { ' ' } else { c });
            }
        }
        lines.push((i + 1, prose));
    }
    lines
}

/// The targets of the markdown links `[text](target)` on one line of prose, as written (a title
/// after the target, `(target "title")`, is dropped; `<target>` loses its brackets).
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let inside = after[..end].trim();
        let target = match inside.strip_prefix('<') {
            Some(bracketed) => bracketed.split('>').next().unwrap_or(""),
            None => inside.split_whitespace().next().unwrap_or(""),
        };
        if !target.is_empty() {
            targets.push(target.to_owned());
        }
        rest = &after[end + 1..];
    }
    targets
}

/// A link this test checks: relative, to a file or directory.
fn is_relative(target: &str) -> bool {
    !(target.starts_with("http:")
        || target.starts_with("https:")
        || target.starts_with("mailto:")
        || target.starts_with('#'))
}

#[test]
fn every_relative_link_names_a_file_that_exists() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let dir = page.parent().expect("a page's directory").to_path_buf();
        for (line_number, line) in prose_lines(&read(&page)) {
            for target in link_targets(&line).into_iter().filter(|t| is_relative(t)) {
                let file = target.split('#').next().unwrap_or("");
                checked += 1;
                if !dir.join(file).exists() {
                    broken.push(format!("{}:{line_number}: {target} does not exist", shown(&page)));
                }
            }
        }
    }
    assert!(checked > 0, "no relative links found: is the page walk broken?");
    assert!(
        broken.is_empty(),
        "{} broken link(s):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn the_readme_stays_a_front_door() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move the detail into a page of docs/ and link to it"
    );
}

#[test]
fn every_docs_page_is_in_the_summary() {
    let docs = root().join("docs");
    let summary = read(&docs.join("SUMMARY.md"));
    let listed: BTreeSet<String> = prose_lines(&summary)
        .iter()
        .flat_map(|(_, line)| link_targets(line))
        .map(|t| t.split('#').next().unwrap_or("").trim_start_matches("./").to_owned())
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&docs).expect("docs/") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_owned();
        if path.extension().is_some_and(|e| e == "md") && name != "SUMMARY.md" && !listed.contains(&name) {
            missing.push(format!("docs/{name}"));
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "not in docs/SUMMARY.md, so not in the book: {}",
        missing.join(", ")
    );
}

/// Where `[Ii]ssues? [0-9]` matches in `line`.
fn issue_numbers(line: &str) -> Vec<usize> {
    let bytes = line.as_bytes();
    let mut found = Vec::new();
    for (at, _) in line.match_indices("ssue") {
        let Some(first) = at.checked_sub(1) else { continue };
        if bytes[first] != b'i' && bytes[first] != b'I' {
            continue;
        }
        let mut next = at + "ssue".len();
        if bytes.get(next) == Some(&b's') {
            next += 1;
        }
        if bytes.get(next) == Some(&b' ') && bytes.get(next + 1).is_some_and(u8::is_ascii_digit) {
            found.push(first);
        }
    }
    found
}

#[test]
fn no_page_names_an_issue_by_number() {
    let mut found = Vec::new();
    for page in pages() {
        for (i, line) in read(&page).lines().enumerate() {
            for at in issue_numbers(line) {
                let end = (at + 40).min(line.len());
                let end = (end..=line.len())
                    .find(|&e| line.is_char_boundary(e))
                    .unwrap_or(line.len());
                found.push(format!("{}:{}: {}", shown(&page), i + 1, &line[at..end]));
            }
        }
    }
    assert!(
        found.is_empty(),
        "name the thing, not the issue number (another project's issue: owner/repo#N):\n{}",
        found.join("\n")
    );
}

/// The code, its help texts and the generated reports: every `.rs` file of the repository
/// (but this one, whose tests spell issue numbers on purpose), every page and trace under
/// `reports/`, the recorded seeds under `regressions/`.
fn sources_and_reports() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let in_reports = path.strip_prefix(root()).is_ok_and(|p| p.starts_with("reports"));
            let in_regressions = path.strip_prefix(root()).is_ok_and(|p| p.starts_with("regressions"));
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, found);
                }
            } else if name.ends_with(".rs") && name != "doc_links.rs"
                || in_reports && (name.ends_with(".md") || name.ends_with(".txt"))
                || in_regressions
            {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root(), &mut found);
    found.sort();
    found
}

#[test]
fn no_source_file_help_text_or_report_names_an_issue_by_number() {
    let files = sources_and_reports();
    assert!(
        files.len() > 100,
        "only {} files found: is the root right?",
        files.len()
    );
    let mut found = Vec::new();
    for file in files {
        for (i, line) in read(&file).lines().enumerate() {
            for at in issue_numbers(line) {
                let end = (at + 40..=line.len())
                    .find(|&e| line.is_char_boundary(e))
                    .unwrap_or(line.len());
                found.push(format!("{}:{}: {}", shown(&file), i + 1, &line[at..end]));
            }
        }
    }
    assert!(
        found.is_empty(),
        "name the thing, not the issue number (another project's issue: owner/repo#N):\n{}",
        found.join("\n")
    );
}

#[test]
fn links_and_issue_numbers_are_read_as_written() {
    assert_eq!(
        link_targets(r#"see [a](b.md#c), [d](<e f.md>) and [g](h.md "title")"#),
        ["b.md#c", "e f.md", "h.md"]
    );
    assert!(!prose_lines("[a](b.md) `[c](d.md)`")[0].1.contains("d.md"));
    assert_eq!(
        issue_numbers("Issue 15, issues 13 and etcd-io/etcd#11456, an issue of 3"),
        [0, 10]
    );
    assert!(issue_numbers("the issue's goal, issue-15, issues: 3").is_empty());
}
