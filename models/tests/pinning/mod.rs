//! What the model-checking tests share: running a spec, and pinning its report (the verdicts,
//! the unique-state counts, and the whole text in a golden file beside the test).
//!
//! Each test file that uses it declares `mod pinning;`; a function one of them does not call
//! is not dead code.
#![allow(dead_code)]

use std::fmt::Write as _;

use cassalock_models::check::{Limits, Report, Verdict};
use cassalock_models::{build, Fault, ModelName, Spec};
use expect_test::ExpectFile;

pub fn spec(model: ModelName, fault: Fault) -> Spec {
    let mut spec = Spec::new(model);
    spec.fault = fault;
    spec
}

pub fn run(spec: &Spec, limits: Limits) -> Report {
    let report = build(spec).expect("a valid spec").check(limits);
    assert!(report.internal_errors.is_empty(), "{:?}", report.internal_errors);
    report
}

pub fn full(spec: &Spec) -> Report {
    run(spec, Limits::default())
}

/// The shortest counterexample to one claim.
pub fn first_violation(spec: &Spec, claim: &str) -> Report {
    let limits = Limits {
        stop_at_first_violation: true,
        only_claim: Some(claim.to_owned()),
        ..Limits::default()
    };
    let report = run(spec, limits);
    assert_eq!(report.row(claim).verdict, Verdict::Violated, "{report}");
    report
}

/// The counterexample `report` found to `claim`, as the checker prints it.
pub fn trace(report: &Report, claim: &str) -> String {
    report
        .rows
        .iter()
        .find(|row| row.claim.as_str() == claim && row.trace.is_some())
        .and_then(|row| row.trace.as_ref())
        .unwrap_or_else(|| panic!("{claim} has a trace:\n{report}"))
        .to_string()
}

/// The report as the checker prints it, without what varies from run to run: the timings, and
/// stateright's state count and depth (its BFS is multi-threaded, so a run stopped at the
/// first violation counts a different number of states each time). Our graph's count, every
/// verdict, detail and figure, and every trace (figures' traces too) are kept byte for byte.
pub fn golden_text(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "model: {}", report.title);
    let _ = writeln!(
        out,
        "our graph: {} unique states ({})",
        report.graph_states,
        if report.complete { "complete" } else { "incomplete" }
    );
    let width = report
        .rows
        .iter()
        .map(|row| row.property.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let _ = writeln!(out);
    let _ = writeln!(out, "{:<width$}  {:<10}  verdict", "property", "kind");
    for row in &report.rows {
        let _ = writeln!(out, "{:<width$}  {:<10}  {}", row.property, row.kind, row.verdict);
    }
    for row in &report.rows {
        if let Some(detail) = &row.detail {
            let claim = row.property.split_whitespace().next().unwrap_or("");
            let _ = writeln!(out, "  {claim}: {detail}");
        }
    }
    for error in &report.internal_errors {
        let _ = writeln!(out, "INTERNAL ERROR: {error}");
    }
    for (figure, trace) in &report.figures {
        let _ = writeln!(out);
        let _ = writeln!(out, "figure: {figure}");
        if let Some(trace) = trace {
            let _ = write!(out, "{trace}");
        }
    }
    for row in &report.rows {
        if let Some(trace) = &row.trace {
            let what = match row.verdict {
                Verdict::Reachable => "example",
                Verdict::Violated => "counterexample",
                _ => "counterexample that depends on the bound",
            };
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "{} -- {} -- {what}, {} steps:",
                row.property, row.verdict, trace.steps
            );
            let _ = write!(out, "{trace}");
        }
    }
    out
}

/// Compare `actual` with a golden file. A difference fails with a line diff (`-` golden, `+`
/// now); with `UPDATE_EXPECT=1` the file is rewritten instead.
pub fn pin(golden: ExpectFile, actual: &str) {
    let expected = golden.data();
    if expected != actual && std::env::var_os("UPDATE_EXPECT").is_none() {
        let diff = similar::TextDiff::from_lines(expected.as_str(), actual)
            .unified_diff()
            .context_radius(3)
            .header("golden", "now")
            .to_string();
        panic!(
            "the output differs from models/tests/{} (- golden, + now):\n{diff}\nIf the change is intended: UPDATE_EXPECT=1 cargo test -p cassalock-models --test {}",
            golden.path.display(),
            env!("CARGO_CRATE_NAME")
        );
    }
    golden.assert_eq(actual);
}

pub fn verdicts(report: &Report) -> Vec<(String, String)> {
    report
        .rows
        .iter()
        .map(|row| {
            (
                row.property.split_whitespace().next().unwrap().to_owned(),
                row.verdict.to_string(),
            )
        })
        .collect()
}

/// Where T1-server's verdict is not T1-belief's: a model (the title's `model:` word) under a
/// fault (the start of the title's `faults:` part), and T1-server's verdict there. Elsewhere
/// the two agree: two believers at once are never both the one holder a server names, and the
/// lists below are the disagreements seen by one holder alone.
const T1_SERVER_APART: &[(&str, &str, &str)] = &[
    // The session expires under its holder on the jumped clock: the waiter, which has not yet
    // looked, does not take the lock within the bound; the holder believes without a node.
    ("zookeeper", "the server's clock may jump", "VIOLATED"),
    // The recipe's blind DEL deletes the next holder's fresh key between its SETNX and its
    // EXPIRE; the EXPIRE answers 0 and the recipe believes anyway, with no key at all.
    ("redis-setnx-expire", "none", "VIOLATED"),
    ("redis-setnx-expire", "1 request(s) may be lost", "VIOLATED"),
];

/// The model's name and fault, read from a report's title.
fn model_and_fault(title: &str) -> (&str, &str) {
    let model = title
        .trim_start_matches("model: ")
        .split_whitespace()
        .next()
        .unwrap_or("");
    let fault = title.rsplit("faults: ").next().unwrap_or("");
    (model, fault)
}

/// `expected` with T1-server's row after T1-resource's (or second), where the report has one:
/// T1-belief's verdict (T1's or T3's in the row-lock models), or the one [`T1_SERVER_APART`]
/// lists.
fn with_t1_server(report: &Report, expected: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = expected.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    let has_row = report.rows.iter().any(|row| row.property.starts_with("T1-server "));
    let listed = expected.iter().any(|(claim, _)| *claim == "T1-server");
    if !has_row || listed {
        return rows;
    }
    let (model, fault) = model_and_fault(&report.title);
    let apart = T1_SERVER_APART
        .iter()
        .find(|(m, f, _)| *m == model && fault.starts_with(f))
        .map(|(_, _, verdict)| verdict.to_string());
    // The row-lock models name mutual exclusion T1 (T3 for TryGetLock).
    let belief = rows
        .iter()
        .find(|(claim, _)| ["T1-belief", "T1", "T3"].contains(&claim.as_str()))
        .map(|(_, v)| v.clone());
    let Some(verdict) = apart.or(belief) else {
        return rows;
    };
    let at = rows
        .iter()
        .position(|(claim, _)| claim == "T1-resource")
        .map_or(1, |i| i + 1);
    rows.insert(at, ("T1-server".to_owned(), verdict));
    rows
}

pub fn pinned(report: &Report, expected: &[(&str, &str)], states: usize) {
    let expected = with_t1_server(report, expected);
    assert_eq!(verdicts(report), expected, "{report}");
    assert!(report.complete, "the whole state space was explored");
    assert_eq!(report.stateright_states, states, "stateright's unique states");
    assert_eq!(report.graph_states, states, "our graph's unique states");
}
