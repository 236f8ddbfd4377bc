//! Recorded seeds: a failing simulator seed, once found, is kept in
//! `regressions/<scenario>.seeds` as the `replay` arguments that reproduce it plus the verdicts it
//! gave, and `cargo test` (cli/tests/recorded_seeds.rs) replays every line. A seed recorded as
//! violating a known failure must still violate it (the harness has not gone blind); a seed
//! recorded as passing (a bug since fixed) must still pass (the fix holds).
//!
//! One line per seed, `#` starts a comment:
//!
//! ```text
//! --scenario cl-one --seed 15 --algorithm old --expect-violated T1-belief  # K2 at CL ONE
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail};
use cassalock_judge::claims::{ClaimId, ClaimVerdict};
use cassalock_sim::verdict::Verdicts;

/// Where recorded seeds live, relative to the repository root.
pub const DIRECTORY: &str = "regressions";

/// At most this many claims in one expectation list (there are fewer claims than this).
const MAX_CLAIMS: usize = 32;

/// What a recorded line expects of its run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expectation {
    pub violated: Vec<ClaimId>,
    pub passed: Vec<ClaimId>,
}

impl Expectation {
    /// Parse the two flag lists; an unknown claim or a claim in both lists is bad usage.
    pub fn parse(violated: &[String], passed: &[String]) -> anyhow::Result<Self> {
        if violated.len() + passed.len() > MAX_CLAIMS {
            bail!("at most {MAX_CLAIMS} claims in --expect-violated and --expect-passed");
        }
        let parse = |flag: &str, names: &[String]| -> anyhow::Result<Vec<ClaimId>> {
            names
                .iter()
                .map(|name| {
                    name.trim()
                        .parse::<ClaimId>()
                        .map_err(|error| anyhow!("{flag} {name}: {error}"))
                })
                .collect()
        };
        let expectation = Expectation {
            violated: parse("--expect-violated", violated)?,
            passed: parse("--expect-passed", passed)?,
        };
        if let Some(both) = expectation
            .violated
            .iter()
            .find(|claim| expectation.passed.contains(claim))
        {
            bail!("{both} is in both --expect-violated and --expect-passed");
        }
        Ok(expectation)
    }

    pub fn is_empty(&self) -> bool {
        self.violated.is_empty() && self.passed.is_empty()
    }

    /// Every expectation the run does not meet, each as a sentence; empty when all are met.
    pub fn unmet(&self, verdicts: &Verdicts) -> Vec<String> {
        let verdict_of = |claim: ClaimId| verdicts.checks.iter().find(|check| check.claim == claim);
        let mut unmet = Vec::new();
        for (claims, wanted) in [
            (&self.violated, ClaimVerdict::Violated),
            (&self.passed, ClaimVerdict::Holds),
        ] {
            for &claim in claims {
                match verdict_of(claim) {
                    None => unmet.push(format!(
                        "{claim}: recorded {}, but this run does not check it",
                        name(wanted)
                    )),
                    Some(check) if check.verdict != wanted => unmet.push(format!(
                        "{claim}: recorded {}, now {} ({})",
                        name(wanted),
                        name(check.verdict),
                        check.detail
                    )),
                    Some(_) => {}
                }
            }
        }
        unmet
    }
}

fn name(verdict: ClaimVerdict) -> &'static str {
    match verdict {
        ClaimVerdict::Holds => "holds",
        ClaimVerdict::Violated => "VIOLATED",
        ClaimVerdict::NotExercised => "not exercised",
        ClaimVerdict::Bounded => "bounded (no verdict)",
    }
}

/// The line that records a run: its replay arguments and the claims it violates.
pub fn line(replay_args: &str, verdicts: &Verdicts, comment: &str) -> String {
    let violated: Vec<String> = verdicts
        .checks
        .iter()
        .filter(|check| check.verdict == ClaimVerdict::Violated)
        .map(|check| check.claim.to_string())
        .collect();
    let mut line = replay_args.trim().to_owned();
    if !violated.is_empty() {
        line.push_str(&format!(" --expect-violated {}", violated.join(",")));
    }
    if !comment.is_empty() {
        line.push_str(&format!("  # {comment}"));
    }
    line
}

/// The file a scenario's seeds are recorded in.
pub fn file_for(root: &Path, scenario: &str) -> PathBuf {
    root.join(DIRECTORY).join(format!("{scenario}.seeds"))
}

/// Append `line` to `path` unless a line with the same arguments is there already; true if
/// appended.
pub fn append(path: &Path, line: &str) -> std::io::Result<bool> {
    let arguments = |text: &str| text.split('#').next().unwrap_or_default().trim().to_owned();
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(error),
    };
    if existing.lines().any(|old| arguments(old) == arguments(line)) {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    if !existing.is_empty() && !existing.ends_with('\n') {
        writeln!(file)?;
    }
    writeln!(file, "{line}")?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expectations_name_known_claims_once() {
        let ok = Expectation::parse(&["K3".into(), "C-release".into()], &["T1-belief".into()]).unwrap();
        assert_eq!(ok.violated.len(), 2);
        assert!(Expectation::parse(&["K9".into()], &[])
            .unwrap_err()
            .to_string()
            .contains("--expect-violated K9"));
        assert!(Expectation::parse(&["K3".into()], &["K3".into()])
            .unwrap_err()
            .to_string()
            .contains("in both"));
        assert!(Expectation::parse(&[], &[]).unwrap().is_empty());
    }

    #[test]
    fn append_skips_a_line_already_recorded_with_another_comment() {
        let dir = std::env::temp_dir().join(format!("cassalock-recorded-{}", std::process::id()));
        let path = dir.join("x.seeds");
        let _ = std::fs::remove_file(&path);
        assert!(append(&path, "--scenario x --seed 1 --expect-violated K3  # first").unwrap());
        assert!(!append(&path, "--scenario x --seed 1 --expect-violated K3  # again").unwrap());
        assert!(append(&path, "--scenario x --seed 2").unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
