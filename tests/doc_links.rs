//! The docs hold together: every relative link in the repository's Markdown (the README, the
//! book under `docs/`, the reports, the changelog, the example's README) names a file or folder
//! that exists, and every `#anchor` names a heading (or an `<a id>`) of the page it points to,
//! as GitHub and mdBook both spell a heading's anchor; every page of the book is in its
//! `SUMMARY.md`, which mdBook (with `create-missing = false`) needs to build it. Links that
//! leave the repository (`https:`, `mailto:`) are not followed: the test runs offline.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every `.md` file of the repository, build output and hidden folders left out.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, found);
                }
            } else if name.ends_with(".md") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root(), &mut found);
    found.sort();
    found
}

/// The lines of a Markdown text outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut in_fence = false;
    text.lines().enumerate().filter_map(move |(index, line)| {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            return None;
        }
        (!in_fence).then_some((index + 1, line))
    })
}

/// `line` without its inline code spans (a link inside backticks is not a link).
fn without_code_spans(line: &str) -> String {
    let mut kept = String::with_capacity(line.len());
    for (index, part) in line.split('`').enumerate() {
        if index % 2 == 0 {
            kept.push_str(part);
        }
    }
    kept
}

/// The targets of a line's inline links (`[text](target "title")`) and of a reference
/// definition (`[name]: target`).
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        // The target runs to the parenthesis that closes the one opened, nested ones included.
        let mut depth = 1_usize;
        let mut end = None;
        for (offset, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(offset);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let inside = after[..end].trim();
        let target = inside.split_whitespace().next().unwrap_or("");
        let target = target.trim_start_matches('<').trim_end_matches('>');
        if !target.is_empty() {
            targets.push(target.to_owned());
        }
        rest = &after[end..];
    }
    let trimmed = line.trim_start();
    if let Some(definition) = trimmed.strip_prefix('[') {
        if let Some((_, target)) = definition.split_once("]:") {
            if let Some(target) = target.split_whitespace().next() {
                targets.push(target.to_owned());
            }
        }
    }
    targets
}

/// A heading's anchor as GitHub and mdBook spell it: links reduced to their text, lower case,
/// letters, digits, `-` and `_` kept, spaces made `-`, everything else dropped.
fn anchor_of(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](").zip(after.find(')')) {
            Some((close, end)) if close < end => {
                text.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            _ => {
                text.push('[');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a page offers: its headings' (the second heading of a name gets `-1`, and so
/// on) and its `<a id="...">` / `<a name="...">`.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let heading = line[hashes..].trim().trim_end_matches('#').trim_end();
            let anchor = anchor_of(heading);
            let count = seen.entry(anchor.clone()).or_insert(0);
            found.insert(if *count == 0 {
                anchor
            } else {
                format!("{anchor}-{count}")
            });
            *count += 1;
        }
        for marker in ["<a id=\"", "<a name=\""] {
            let mut rest = line;
            while let Some(start) = rest.find(marker) {
                let after = &rest[start + marker.len()..];
                let Some(end) = after.find('"') else { break };
                found.insert(after[..end].to_owned());
                rest = &after[end..];
            }
        }
    }
    found
}

/// `path` with its `.` and `..` resolved, without asking the file system.
fn normalised(path: &Path) -> PathBuf {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(parts.last(), Some(Component::Normal(_))) => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.iter().collect()
}

/// What is wrong with one link of `page`, if anything.
fn broken(page: &Path, target: &str, root: &Path) -> Option<String> {
    let leaves_the_repository = target.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '.')
    });
    if leaves_the_repository {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let resolved = if path.is_empty() {
        page.to_path_buf()
    } else {
        normalised(&page.parent().expect("a page lives in a folder").join(path))
    };
    if !resolved.starts_with(root) {
        return Some(format!("{target} leaves the repository"));
    }
    if !resolved.exists() {
        return Some(format!("{target}: no such file or folder"));
    }
    let anchor = anchor?;
    if resolved.extension().is_some_and(|e| e == "md") {
        let text = std::fs::read_to_string(&resolved).expect("a readable page");
        if !anchors(&text).contains(anchor) {
            return Some(format!("{target}: no heading with that anchor"));
        }
    }
    None
}

#[test]
fn every_relative_link_of_the_docs_names_a_file_and_a_heading_that_exist() {
    let root = root();
    let pages = markdown_files();
    assert!(pages.len() >= 20, "only {} Markdown pages found", pages.len());
    let mut links = 0_usize;
    let mut problems = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).expect("a readable page");
        for (number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                links += 1;
                if let Some(problem) = broken(page, &target, &root) {
                    let shown = page.strip_prefix(&root).unwrap_or(page).display();
                    problems.push(format!("{shown}:{number}: {problem}"));
                }
            }
        }
    }
    assert!(
        links >= 300,
        "only {links} links found: is the parser reading the pages?"
    );
    assert!(
        problems.is_empty(),
        "{} broken links of {links}:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let docs = root().join("docs");
    let summary = std::fs::read_to_string(docs.join("SUMMARY.md")).expect("docs/SUMMARY.md");
    let listed: BTreeSet<String> = prose_lines(&summary).flat_map(|(_, line)| link_targets(line)).collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&docs).expect("docs/") {
        let name = entry.expect("an entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && name != "SUMMARY.md" && !listed.contains(&name) {
            missing.push(name);
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "pages the book would leave out: {missing:?}");
}

#[test]
fn the_link_reader_finds_what_a_reader_would_click_and_no_more() {
    assert_eq!(
        link_targets("see [the matrix](../reports/matrix.md#which-lock) and [b](b.md \"B\")"),
        ["../reports/matrix.md#which-lock", "b.md"]
    );
    assert_eq!(link_targets("`[not](a-link.md)` but [this](f(x).md)"), ["f(x).md"]);
    assert_eq!(link_targets("[ref]: docs/claims.md"), ["docs/claims.md"]);
    let fenced = "a\n```\n[x](inside-a-fence.md)\n```\n[y](outside.md)";
    let found: Vec<String> = prose_lines(fenced).flat_map(|(_, line)| link_targets(line)).collect();
    assert_eq!(found, ["outside.md"]);
    assert_eq!(
        anchor_of("C-wait: `lock()` with a [deadline](x.md)"),
        "c-wait-lock-with-a-deadline"
    );
    assert_eq!(
        anchor_of("Which lock, under which faults?"),
        "which-lock-under-which-faults"
    );
    let page = "# Intro\n## Runs\n## Runs\n<a id=\"t1\"></a>";
    assert_eq!(
        anchors(page).into_iter().collect::<Vec<_>>(),
        ["intro", "runs", "runs-1", "t1"]
    );
    let root = root();
    let readme = root.join("README.md");
    assert_eq!(broken(&readme, "https://example.invalid/x", &root), None);
    assert_eq!(broken(&readme, "docs/claims.md", &root), None);
    assert!(broken(&readme, "docs/no-such-page.md", &root).is_some());
    assert!(broken(&readme, "docs/claims.md#no-such-heading", &root).is_some());
    assert!(broken(&readme, "../outside.md", &root).is_some());
}
