//! A family sweep's shard file (`sim --scenario NAMES --shard K/N --shard-out FILE`): what it
//! holds, how a merge reads and checks it, and the merge that prints what one machine would.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context};
use cassalock_sim::family::Claim;
use cassalock_sim::ranges::SeedRange;
use serde::{Deserialize, Serialize};

use super::{exit_status, print_summary, scenarios_named, Knobs, ScenarioResult, MAX_BOUND_MS};
use crate::shard::Shard;
use crate::usage_error;

/// What a shard file says it is, and the version of its layout this build reads and writes.
pub const SHARD_FORMAT: &str = "cassalock-sim-family-shard";
pub const SHARD_VERSION: u64 = 1;

/// A shard's result file (`sim-family --shard K/N --shard-out FILE`), read by `cassalock merge`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ShardFile {
    pub(super) format: String,
    pub(super) version: u64,
    /// The sweep: scenario names in order, the whole seed range, the knobs, N.
    pub(super) scenarios: Vec<String>,
    pub(super) seeds: String,
    #[serde(flatten)]
    pub(super) knobs: Knobs,
    pub(super) k: u64,
    pub(super) n: u64,
    /// The most seeds each list holds (the rest only counted, in `not_listed`).
    pub(super) max_listed_seeds: usize,
    pub(super) results: Vec<ScenarioResult>,
}

/// The sweep a shard file belongs to, as a merge compares it.
pub(super) fn sweep_of(file: &ShardFile) -> String {
    format!(
        "scenario {}, seeds {}, {} shards{}",
        file.scenarios.join(","),
        file.seeds,
        file.n,
        file.knobs.flags()
    )
}
/// Read one shard file, or say why not (naming the file; print it with `{:#}`).
fn read_shard(path: &Path) -> anyhow::Result<ShardFile> {
    let value = crate::shard::read_json(path, SHARD_FORMAT, SHARD_VERSION)?;
    let damaged = || format!("{}: a damaged shard file", path.display());
    let file: ShardFile = serde_json::from_value(value).with_context(damaged)?;
    check_shard(&file).with_context(damaged)?;
    Ok(file)
}

/// What a well-formed shard file holds, beyond its JSON shape.
fn check_shard(file: &ShardFile) -> anyhow::Result<SeedRange> {
    let range: SeedRange = file
        .seeds
        .parse()
        .map_err(|error| anyhow!("seeds {:?}: {error}", file.seeds))?;
    let shard = Shard::new(file.k, file.n).ok_or_else(|| anyhow!("shard {}/{}", file.k, file.n))?;
    let chosen = scenarios_named(&file.scenarios.join(","))
        .map_err(|_| anyhow!("scenarios {:?} not all known to this cassalock", file.scenarios))?;
    if chosen.len() != file.scenarios.len() || file.results.len() != chosen.len() {
        bail!("the scenarios and the results do not match");
    }
    if file.knobs.bound_ms.is_some_and(|ms| ms == 0 || ms > MAX_BOUND_MS)
        || file.knobs.replication_lag_ms.is_some_and(|ms| ms > MAX_BOUND_MS)
    {
        bail!("bound_ms or replication_lag_ms out of range");
    }
    if let Some(refused) = chosen.iter().find_map(|name| file.knobs.refused_by(name)) {
        bail!("{refused}");
    }
    let runs = shard.count(&range);
    for (name, result) in chosen.iter().zip(&file.results) {
        if result.scenario != *name
            || u128::from(result.seeds_run) != runs
            || result.claims.len() != Claim::ALL.len()
            || !result
                .claims
                .iter()
                .zip(Claim::ALL)
                .all(|(tally, claim)| tally.claim == claim.name())
        {
            bail!("the result for {name} is not {runs} seeds of every claim");
        }
    }
    Ok(range)
}

/// The merge of `sim-family` shards: print what one run over the whole range prints, from the
/// shards' result files, and exit as it would (0, 1 or 3; 2 for bad files).
pub fn merge(paths: &[PathBuf]) -> ExitCode {
    let mut files: Vec<(&PathBuf, ShardFile)> = Vec::new();
    for path in paths {
        match read_shard(path) {
            Ok(file) => files.push((path, file)),
            Err(error) => return usage_error(&format!("{error:#}")),
        }
    }
    let cover: Vec<(&PathBuf, String, Shard)> = files
        .iter()
        .map(|(path, file)| {
            (
                *path,
                sweep_of(file),
                Shard::new(file.k, file.n).expect("checked on reading"),
            )
        })
        .collect();
    let first = &files[0].1;
    let rerun = format!(
        "cassalock sim --scenario {} --seeds {}{}",
        first.scenarios.join(","),
        first.seeds,
        first.knobs.flags()
    );
    if let Err(error) = crate::shard::check_cover(&cover, &rerun) {
        return usage_error(&format!("{error:#}"));
    }
    let range: SeedRange = first.seeds.parse().expect("checked on reading");
    let knobs = first.knobs.clone();
    let mut merged: Vec<ScenarioResult> = first.scenarios.iter().map(|name| ScenarioResult::new(name)).collect();
    for (_, file) in &files {
        for (into, result) in merged.iter_mut().zip(&file.results) {
            into.absorb(result);
        }
    }
    let (mut violated, mut bounded) = (false, false);
    for result in &merged {
        let (v, b) = print_summary(&range, &knobs, result);
        violated |= v;
        bounded |= b;
    }
    exit_status(violated, bounded)
}
