//! The findings page's reading of the fairness report quotes numbers; this keeps them those of
//! the report. In `docs/findings.md`'s paragraph "How to read them, and what they say about the
//! thesis", every bullet that cites the fairness report (`fairness-*.svg` or
//! `reports/fairness.md`, in parentheses after its bold title) may only quote numbers that
//! `reports/fairness.md` prints, written as it prints them: "Jain 0.620", not "0.62" or "about
//! 0.6". When the report is regenerated and a figure moves, this fails with the page's line and
//! the number to update.

use std::path::Path;

/// The page that reads the fairness report.
const PAGE: &str = "docs/findings.md";

const PARAGRAPH: &str = "How to read them, and what they say about the thesis:";

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The numbers in `text` as written: digits with an optional fraction ("3.65-3.69" holds 3.65
/// and 3.69; "0..3" holds 0 and 3). With `figures_only`, a number glued to a letter is a name,
/// not a figure ("T1", "p99", "S1"), and is skipped.
fn numbers(text: &str, figures_only: bool) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        if i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
        }
        let glued = |c: Option<&char>| c.is_some_and(|c| c.is_ascii_alphabetic());
        if figures_only && (glued(start.checked_sub(1).and_then(|s| chars.get(s))) || glued(chars.get(i))) {
            continue;
        }
        found.push(chars[start..i].iter().collect());
    }
    found
}

/// A bullet of the paragraph: its lines on the page (number, text).
type Bullet = Vec<(usize, String)>;

fn bullets(page: &str) -> Vec<Bullet> {
    let lines: Vec<&str> = page.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == PARAGRAPH)
        .unwrap_or_else(|| panic!("{PAGE} has no paragraph {PARAGRAPH:?}"));
    let mut bullets: Vec<Bullet> = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(start + 1) {
        if line.trim().is_empty() || line.starts_with('#') {
            break;
        }
        if line.starts_with("- ") || bullets.is_empty() {
            bullets.push(Vec::new());
        }
        bullets.last_mut().expect("a bullet").push((i + 1, line.to_string()));
    }
    bullets
}

/// The files a bullet cites: the backquoted names in the parentheses right after its bold title.
fn cited(bullet: &Bullet) -> Vec<String> {
    let text: String = bullet.iter().map(|(_, l)| l.trim()).collect::<Vec<_>>().join(" ");
    let Some(after_title) = text
        .strip_prefix("- **")
        .and_then(|t| t.split_once("**"))
        .map(|(_, rest)| rest)
    else {
        return Vec::new();
    };
    let Some(citation) = after_title
        .trim_start()
        .strip_prefix('(')
        .and_then(|c| c.split_once(')'))
        .map(|(c, _)| c)
    else {
        return Vec::new();
    };
    citation.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

fn cites_fairness(name: &str) -> bool {
    name == "reports/fairness.md" || (name.starts_with("fairness-") && name.ends_with(".svg"))
}

#[test]
fn findings_figures_are_the_fairness_reports() {
    let page = read(PAGE);
    let report = read("reports/fairness.md");
    let printed = numbers(&report, false);
    let mut checked = 0;
    let mut missing = Vec::new();
    for bullet in bullets(&page) {
        let files = cited(&bullet);
        if !files.iter().any(|f| cites_fairness(f)) {
            continue;
        }
        checked += 1;
        for file in files.iter().filter(|f| f.ends_with(".svg")) {
            assert!(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../reports")
                    .join(file)
                    .is_file(),
                "{PAGE} cites {file}, which is not in reports/"
            );
            assert!(
                report.contains(&format!("]({file})")),
                "{PAGE} cites {file}, which reports/fairness.md does not show"
            );
        }
        for (line_number, line) in &bullet {
            for number in numbers(line, true) {
                if !printed.contains(&number) {
                    missing.push(format!(
                        "{PAGE}:{line_number}: {number} is not in reports/fairness.md\n  {line}"
                    ));
                }
            }
        }
    }
    assert!(
        checked >= 3,
        "found {checked} bullets citing the fairness report under {PARAGRAPH:?}; expected throughput, runs and Jain, overtakes"
    );
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn numbers_are_read_as_written() {
    assert_eq!(
        numbers("old 2.94 -> 0.98 at 3.65-3.69.", true),
        ["2.94", "0.98", "3.65", "3.69"]
    );
    assert_eq!(numbers("T1 under p99, seeds 0..3", true), ["0", "3"]);
    assert_eq!(numbers("T1 under p99", false), ["1", "99"]);
}
