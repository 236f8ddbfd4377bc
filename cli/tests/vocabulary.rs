//! One name per knob across the command line: every subcommand's `--help` is walked, and a knob
//! spelled with two units (`--max-wait-ms` here, `--max-wait-s` there), an `--out` that is a file
//! here and a directory there, or a claim under an old name fails the test.
#![cfg(madsim)]

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Most subcommand levels walked (`cassalock report matrix` is two).
const MAX_DEPTH: usize = 3;

fn help(path: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cassalock"))
        .args(path)
        .arg("--help")
        .output()
        .expect("the cassalock binary runs");
    assert_eq!(out.status.code(), Some(0), "{path:?} --help");
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The subcommands a help text lists under "Commands:" (`help` left out).
fn subcommands(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|line| line.trim() != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The long flags an option line of a help text names (`      --max-wait-ms <MS>`, `  -h,
/// --help`): clap indents them 6 spaces at most, their descriptions 10.
fn flags(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|line| line.len() - line.trim_start().len() <= 6)
        .map(str::trim_start)
        .filter_map(|line| match line.strip_prefix("--") {
            Some(flag) => Some(flag),
            None => line.strip_prefix('-')?.split_once(", --").map(|(_, flag)| flag),
        })
        .map(|flag| {
            flag.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<String>()
        })
        .filter(|flag| !flag.is_empty())
        .collect()
}

/// Every subcommand path and its help text, depth first.
fn every_help() -> Vec<(Vec<String>, String)> {
    let mut found = Vec::new();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        let text = help(&path);
        if path.len() < MAX_DEPTH {
            for sub in subcommands(&text) {
                let mut next = path.clone();
                next.push(sub);
                todo.push(next);
            }
        }
        found.push((path, text));
    }
    found
}

#[test]
fn every_knob_has_one_unit_and_every_claim_one_name_across_the_command_line() {
    let helps = every_help();
    assert!(helps.len() >= 15, "{} help texts walked", helps.len());
    // stem -> (unit -> where)
    let mut units: BTreeMap<String, BTreeMap<&str, Vec<String>>> = BTreeMap::new();
    for (path, text) in &helps {
        for flag in flags(text) {
            for unit in ["us", "ms", "s"] {
                if let Some(stem) = flag.strip_suffix(&format!("-{unit}")) {
                    units
                        .entry(stem.to_owned())
                        .or_default()
                        .entry(unit)
                        .or_default()
                        .push(format!("cassalock {}", path.join(" ")));
                }
            }
        }
    }
    let twice: Vec<String> = units
        .iter()
        .filter(|(_, by_unit)| by_unit.len() > 1)
        .map(|(stem, by_unit)| format!("--{stem}-*: {by_unit:?}"))
        .collect();
    assert!(twice.is_empty(), "a knob spelled with two units: {twice:#?}");
    assert!(units.contains_key("max-wait"), "the walk reached the knobs: {units:?}");
    // `--out` names a directory wherever it is taken; a shard's result file is `--shard-out`.
    for (path, text) in &helps {
        assert!(
            !text.contains("--out <FILE>"),
            "cassalock {} --help takes a file as --out",
            path.join(" ")
        );
    }
    // Old names of claims, each replaced by the one name `cassalock claims` lists.
    for old in ["C-fence", "F-fifo"] {
        for (path, text) in &helps {
            assert!(!text.contains(old), "cassalock {} --help says {old}", path.join(" "));
        }
    }
}

#[test]
fn the_flag_reader_reads_option_lines_only() {
    let text =
        "Usage: x [OPTIONS]\n\nOptions:\n      --max-wait-ms <MS>\n          Give up after --poll-ms\n  -h, --help\n";
    let read: Vec<String> = flags(text).into_iter().collect();
    assert_eq!(read, ["help", "max-wait-ms"]);
    let listed = "Commands:\n  sim     Simulate\n  help    Print\n\nOptions:\n";
    assert_eq!(subcommands(listed), ["sim"]);
}
