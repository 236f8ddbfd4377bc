//! A `sim` shard's result file (`sim --shard K/N --shard-out FILE`): its layout, the sweep command it
//! names, and `cassalock merge` of such files into what `sim` over the whole range prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use cassalock_sim::scenario::build;
use clap::ValueEnum;

use super::args::SimArgs;
use super::command_line::shell_word;
use super::print::{print_tally, Ended};
use super::scenario_args::Resolved;
use super::tally::Tally;
use crate::shard::Shard;

/// What a `sim` shard file says it is, and the version of its layout.
pub const SHARD_FORMAT: &str = "cassalock-sim-shard";
/// Version 2 (2026-11-28): tallies count runs a bound left undecided (T2 at the time limit),
/// which version 1 counted as failures.
pub const SHARD_VERSION: u64 = 2;

/// A shard's result file (`sim --shard K/N --shard-out FILE`), read by `cassalock merge`.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct SimShardFile {
    pub(super) format: String,
    pub(super) version: u64,
    /// The sweep as a command (scenario, its flags, seeds, algorithms), which the merge parses back.
    pub(super) command: String,
    pub(super) k: u64,
    pub(super) n: u64,
    /// Per algorithm run: its name and tally.
    pub(super) tallies: Vec<(String, Tally)>,
}

/// The command that runs the whole sweep on one machine (without --jobs, --shard, --shard-out).
pub(super) fn sweep_command(args: &SimArgs, scenario: &str) -> String {
    let algorithms = args
        .algorithms(scenario)
        .to_possible_value()
        .expect("every value is named");
    format!(
        "cassalock sim --scenario {}{} --seeds {} --algorithm {}",
        shell_word(scenario),
        args.scenario.flags(),
        args.seeds,
        algorithms.get_name()
    )
}

/// `cassalock merge` of `sim` shards: print what `sim` over the whole range prints, and exit
/// as it would (0, 1; 2 for bad files).
pub fn merge(paths: &[PathBuf]) -> ExitCode {
    match merge_files(paths) {
        Ok(code) => code,
        Err(error) => crate::usage_error(&format!("{error:#}")),
    }
}

fn merge_files(paths: &[PathBuf]) -> anyhow::Result<ExitCode> {
    #[derive(clap::Parser)]
    struct SimCommand {
        #[command(flatten)]
        args: SimArgs,
    }
    use clap::Parser;
    let mut files = Vec::new();
    for path in paths {
        let value = crate::shard::read_json(path, SHARD_FORMAT, SHARD_VERSION)?;
        let damaged = |why: String| anyhow!("{}: a damaged shard file: {why}", path.display());
        let file: SimShardFile = serde_json::from_value(value).map_err(|error| damaged(error.to_string()))?;
        let shard = Shard::new(file.k, file.n).ok_or_else(|| damaged(format!("shard {}/{}", file.k, file.n)))?;
        let words = shlex::split(&file.command).unwrap_or_default();
        let args = SimCommand::try_parse_from(words.iter().skip(1))
            .map_err(|error| damaged(format!("command {:?}: {error}", file.command)))?
            .args;
        // The file's command names its algorithms (`sweep_command`): no scenario default applies.
        let names: Vec<&str> = args
            .algorithms("")
            .algorithms()
            .iter()
            .map(|algorithm| algorithm.name())
            .collect();
        let runs = shard.count(&args.seeds);
        if !file
            .tallies
            .iter()
            .map(|(name, _)| name.as_str())
            .eq(names.iter().copied())
            || file.tallies.iter().any(|(_, tally)| {
                u128::from(tally.runs) != runs
                    || tally.claim_seen.len() != tally.per_claim.len()
                    || tally
                        .per_claim
                        .iter()
                        .any(|(_, failures, first)| (*failures > 0) != first.is_some())
            })
        {
            return Err(damaged(format!("not {runs} runs of each of {}", names.join(", "))));
        }
        files.push((path, file, shard, args));
    }
    let cover: Vec<(&PathBuf, String, Shard)> = files
        .iter()
        .map(|(path, file, shard, _)| (*path, format!("`{}` in {} shards", file.command, shard.n()), *shard))
        .collect();
    crate::shard::check_cover(&cover, &files[0].1.command)?;
    let (_, first, _, args) = &files[0];
    let Resolved { scenario, options } = args.scenario.resolve().context(first.command.clone())?;
    let algorithms = args.algorithms(&scenario).algorithms();
    for algorithm in &algorithms {
        build(&scenario, args.seeds.first(), *algorithm, &options)
            .map_err(|error| anyhow!("{}: {}", first.command, args.scenario.explain(&error)))?;
    }
    let mut ended = Ended::default();
    for (index, algorithm) in algorithms.into_iter().enumerate() {
        let mut merged = Tally::default();
        for (_, file, _, _) in &files {
            merged.absorb(&file.tallies[index].1);
        }
        match print_tally(args, &scenario, &options, algorithm, &merged) {
            Ok(this) => ended = ended.and(this),
            Err(code) => return Ok(code),
        }
    }
    Ok(ended.exit_code())
}
