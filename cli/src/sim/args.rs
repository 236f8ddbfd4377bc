//! The command lines of `sim` and `replay`: their flags (beside the scenario's, in
//! [`ScenarioArgs`]), `--algorithm`'s values, and which flags only the row locks' scenarios take.

use std::path::PathBuf;
use std::sync::OnceLock;

use cassalock::driver::Algorithm;
use cassalock_sim::ranges::SeedRange;
use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};

use super::row_file::{names_a_row_lock, row_lock_names};
use super::scenario_args::ScenarioArgs;
use crate::shard::Shard;

/// `--algorithm` of `sim`: one of the library's algorithms, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithms {
    One(Algorithm),
    /// Both, one after the other.
    Both,
}

impl Algorithms {
    pub fn algorithms(self) -> Vec<Algorithm> {
        match self {
            Algorithms::One(algorithm) => vec![algorithm],
            Algorithms::Both => Algorithm::value_variants().to_vec(),
        }
    }
}

/// The library's algorithms (their names and help), then `both`.
impl ValueEnum for Algorithms {
    fn value_variants<'a>() -> &'a [Self] {
        static VARIANTS: OnceLock<Vec<Algorithms>> = OnceLock::new();
        VARIANTS.get_or_init(|| {
            Algorithm::value_variants()
                .iter()
                .map(|&algorithm| Algorithms::One(algorithm))
                .chain([Algorithms::Both])
                .collect()
        })
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            Algorithms::One(algorithm) => algorithm.to_possible_value(),
            Algorithms::Both => Some(PossibleValue::new("both").help("Both, one after the other")),
        }
    }
}

/// Run a scenario over a range of seeds and summarise.
///
/// Exit status: 0 every run passed every check; 1 some check failed (the first failing seed
/// and the command that replays it are printed); 2 bad arguments. With --shard K/N --shard-out FILE:
/// 0 once the file is written (the verdict is `cassalock merge`'s), 4 if writing it failed.
/// The wall-clock figures (seconds, seeds/minute) go to stderr.
#[derive(Args, Debug)]
pub struct SimArgs {
    #[command(flatten)]
    pub(super) scenario: ScenarioArgs,
    /// Seeds as A..B (B excluded) or A..=B.
    #[arg(long, default_value = "0..100", allow_hyphen_values = true)]
    pub(super) seeds: SeedRange,
    /// Parallel runs (each on its own thread).
    #[arg(long, default_value_t = 2)]
    pub(super) jobs: usize,
    /// The row locks' algorithm [default: both].
    #[arg(long, value_enum)]
    pub(super) algorithm: Option<Algorithms>,
    /// The families' scenarios: stop each run at this many simulated milliseconds instead of
    /// the scenario's bound (clients not done by then make T2 bounded, exit status 3).
    #[arg(long, value_name = "MS")]
    pub(super) bound_ms: Option<u64>,
    /// The families' scenarios with a replica: its lag behind the primary, simulated ms,
    /// instead of the scenario's.
    #[arg(long, value_name = "MS")]
    pub(super) replication_lag_ms: Option<u64>,
    /// Write one JSON line per seed to FILE as the sweep goes (algorithm, seed, acquisitions,
    /// simulated seconds, each claim's verdict), in seed order; nothing per seed is kept in memory.
    #[arg(long, value_name = "FILE")]
    pub(super) per_seed_out: Option<std::path::PathBuf>,
    /// Record each claim's first failing seed in regressions/<scenario>.seeds (created if
    /// missing; a seed already there is not added twice), for `cargo test` to replay.
    #[arg(long)]
    pub(super) record: bool,
    /// skew only: sweep replica r0's offset over 0..=2 TTL (1 s steps, then 0.1 s below the first
    /// offset that breaks T1) and report the smallest offset that breaks it, with its seed
    /// (exit 1 when one did, as its replay does).
    #[arg(long)]
    pub(super) sweep_offsets: bool,
    /// Run only shard K of N of the seeds (those with seed % N == K-1) and write a result
    /// file for `cassalock merge` (docs/sweeps.md); needs --shard-out.
    #[arg(long, value_name = "K/N", requires = "shard_out", conflicts_with_all = ["sweep_offsets", "record"])]
    pub(super) shard: Option<Shard>,
    /// With --shard: the result file to write (JSON); the verdict comes from `cassalock merge`.
    #[arg(long, value_name = "FILE", requires = "shard")]
    pub(super) shard_out: Option<PathBuf>,
}

impl SimArgs {
    /// The algorithms to run: as given, or those `scenario` tests (both, but for a scenario
    /// only one of them can show: timeservice-stall's time service only the queue lock reads).
    pub(crate) fn algorithms(&self, scenario: &str) -> Algorithms {
        self.algorithm
            .unwrap_or(match cassalock_sim::scenario::algorithms_for(scenario) {
                [only] => Algorithms::One(*only),
                _ => Algorithms::Both,
            })
    }

    /// A flag given that only the row locks' scenarios take, for a refusal.
    pub(super) fn row_lock_flag(&self) -> Option<String> {
        let flags = self.scenario.row_only_flags();
        let given = [
            (self.algorithm.is_some(), "--algorithm".to_owned()),
            (self.per_seed_out.is_some(), "--per-seed-out".to_owned()),
            (self.record, "--record".to_owned()),
            (self.sweep_offsets, "--sweep-offsets".to_owned()),
            (
                !flags.is_empty(),
                flags.trim().split(' ').next().unwrap_or_default().to_owned(),
            ),
        ];
        given.into_iter().find_map(|(on, flag)| on.then_some(flag))
    }
}

/// The knobs a family scenario takes from `sim`'s or `replay`'s command line.
pub(super) fn family_knobs(
    scenario: &ScenarioArgs,
    bound_ms: Option<u64>,
    replication_lag_ms: Option<u64>,
) -> crate::family_sim::Knobs {
    crate::family_sim::Knobs {
        bound_ms,
        replication_lag_ms,
        clients: scenario.clients,
        acquisitions: scenario.acquisitions,
        set: scenario.set.clone(),
        clocks: crate::family_sim::ClockKnobs {
            clock_offset_ms: scenario.clock_offset_ms,
            clock_error_ms: scenario.clock_error_ms,
            clock_error_tail_ms: scenario.clock_error_tail_ms,
            clock_error_tail_percent: scenario.clock_error_tail_percent,
        },
    }
}

/// The families' scenarios named by `scenario` (one, or several comma-separated), when it
/// names no row-lock scenario and no row lock's scenario file is given; with a families' scenario
/// file (one that names its lock), its scenarios are read and added, and named by
/// `--scenario` or, without it, all of the file's.
pub(super) fn family_scenarios(scenario: &ScenarioArgs) -> anyhow::Result<Option<String>> {
    if let Some(path) = &scenario.scenario_file {
        let shown = path.display().to_string();
        let text = super::scenario_args::read_scenario_file(path)?;
        if !cassalock_sim::family::scenario_file::names_a_lock(&text) || names_a_row_lock(&text).is_some() {
            return Ok(None);
        }
        let named = toml::from_str::<toml::Table>(&text)
            .ok()
            .and_then(|table| table.get("lock").and_then(|lock| lock.as_str().map(str::to_owned)));
        if let Some(name) = named
            .filter(|name| !cassalock_sim::family::scenario::locks_with_scenarios().any(|lock| lock.name() == name))
        {
            anyhow::bail!(
                "--scenario-file {shown}: lock {name:?} has no scenarios in the simulator: give a row lock ({rows}) or one of {others}",
                rows = row_lock_names(),
                others = crate::family_sim::lock_names_with_scenarios()
            );
        }
        let names = cassalock_sim::family::scenario::add_scenario_file(&shown, &text)
            .map_err(|error| anyhow::anyhow!("--scenario-file {error}"))?;
        return Ok(Some(scenario.scenario.clone().unwrap_or_else(|| names.join(","))));
    }
    let Some(name) = scenario.scenario.as_deref() else {
        return Ok(None);
    };
    Ok(crate::family_sim::names_family_scenarios(name).then(|| name.to_owned()))
}

/// Replay one run in full: the plan, every event, the verdicts.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub(crate) scenario: ScenarioArgs,
    /// The seed of the run: it fixes the whole run (fault plan, message delays, clocks), so the
    /// same seed and flags replay the same run, event for event.
    #[arg(long)]
    pub(crate) seed: u64,
    /// The row locks' algorithm [default: queue].
    #[arg(long, value_enum)]
    pub(super) algorithm: Option<Algorithm>,
    /// The families' scenarios: stop the run at this many simulated milliseconds.
    #[arg(long, value_name = "MS")]
    pub(crate) bound_ms: Option<u64>,
    /// The families' scenarios with a replica: its lag behind the primary, simulated ms.
    #[arg(long, value_name = "MS")]
    pub(crate) replication_lag_ms: Option<u64>,
    /// Also draw the timeline as SVG into this file.
    #[arg(long, value_name = "FILE")]
    pub(super) svg: Option<std::path::PathBuf>,
    /// Print the plan and verdicts only, not every event.
    #[arg(long)]
    pub(crate) summary: bool,
    /// Also write the run's event record into this file (JSON lines, docs/events.md; every
    /// request and reply too, unless --summary): `cassalock judge FILE` reads it back and
    /// prints the same verdicts.
    #[arg(long, value_name = "FILE")]
    pub(super) events: Option<std::path::PathBuf>,
    /// Check the run against recorded verdicts (a line of regressions/*.seeds): these claims,
    /// comma-separated, must be violated. With --expect-violated or --expect-passed the exit
    /// status says whether the recording still holds (0) or not (1), not whether claims hold.
    #[arg(long, value_delimiter = ',', value_name = "CLAIMS")]
    pub(super) expect_violated: Vec<String>,
    /// ... and these claims must hold (checked and not violated: a bug since fixed).
    #[arg(long, value_delimiter = ',', value_name = "CLAIMS")]
    pub(super) expect_passed: Vec<String>,
}

/// The row locks' scenarios, as refusals name them.
pub(super) fn row_scenarios() -> String {
    cassalock_sim::scenario::SCENARIOS
        .iter()
        .map(|scenario| scenario.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Sim {
        #[command(flatten)]
        args: SimArgs,
    }

    fn parse(line: &[&str]) -> Result<SimArgs, clap::Error> {
        Sim::try_parse_from(std::iter::once("sim").chain(line.iter().copied())).map(|sim| sim.args)
    }

    #[test]
    fn algorithms_are_the_library_s_and_both() {
        let choose =
            |name: &str| parse(&["--scenario", "contention", "--algorithm", name]).map(|a| a.algorithms("contention"));
        assert_eq!(choose("old").unwrap(), Algorithms::One(Algorithm::Old));
        assert_eq!(choose("queue").unwrap(), Algorithms::One(Algorithm::Queue));
        assert_eq!(
            choose("both").unwrap().algorithms(),
            vec![Algorithm::Old, Algorithm::Queue]
        );
        assert!(choose("lwt").is_err());
        let default = parse(&["--scenario", "contention"]).unwrap();
        assert_eq!(default.algorithms("contention"), Algorithms::Both);
        assert_eq!(
            default.algorithms("timeservice-stall"),
            Algorithms::One(Algorithm::Queue),
            "the time service's scenario tests the lock that reads it"
        );
        assert_eq!(default.seeds.to_string(), "0..100");
    }

    #[test]
    fn seeds_parse_up_to_the_last_and_say_what_is_wrong() {
        let seeds = |text: &str| parse(&["--scenario", "contention", "--seeds", text]).map(|a| a.seeds);
        let last = seeds("18446744073709551613..18446744073709551615").unwrap();
        assert_eq!(last.len(), 2);
        let negative = seeds("-1..5").unwrap_err().to_string();
        assert!(negative.contains("not negative"), "{negative}");
        let overflow = seeds("0..18446744073709551616").unwrap_err().to_string();
        assert!(overflow.contains("overflows"), "{overflow}");
    }

    #[test]
    fn printed_flags_name_the_consistency_as_typed() {
        let args = parse(&["--scenario", "cl-one", "--consistency", "quorum", "--try-lock"]).unwrap();
        assert_eq!(args.scenario.flags(), " --consistency quorum --try-lock");
    }
}
