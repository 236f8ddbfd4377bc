//! `cassalock sim-family`: the other lock families (Redis SET NX, Redlock, Memcached,
//! Redisson) in the simulator, over seeds or one seed in full (docs/simulator-families.md).
//!
//! Exit status: 0 no violation in any seed; 1 a claim was violated (the first violating seed
//! and the command that replays it are printed); 2 bad usage; 3 no violation, but some run hit
//! its time bound (T2 bounded).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use cassalock_sim::family::scenario::{build, names, FamilyScenario, LockKind, SCENARIOS};
use cassalock_sim::family::{run_family, Claim, Verdict};
use cassalock_sim::ranges::SeedRange;
use clap::Args;
use rayon::prelude::*;

use crate::usage_error;

/// The most seeds one call runs, per scenario.
pub const MAX_SEEDS: u64 = 1_000_000;
/// Seeds per batch: tallied in seed order, at most a batch of outcomes held at once.
const BATCH: u64 = 256;

/// Shown under `sim-family --help`.
pub const HELP: &str = "Scenarios: see docs/simulator-families.md, or give an unknown name to list them.

Exit status:
  0  no violation in any seed
  1  a claim was violated (the first seed and its replay command are printed)
  2  bad usage: nothing ran
  3  no violation, but a run hit its time bound (T2 bounded)";

#[derive(Args, Debug)]
pub struct SimFamilyArgs {
    /// Scenario name, several separated by commas, or `all`.
    #[arg(long)]
    scenario: String,
    /// Seeds as A..B (B excluded) or A..=B.
    #[arg(long, default_value = "0..100", allow_hyphen_values = true)]
    seeds: SeedRange,
    /// Run this one seed only (with --trace: print every event).
    #[arg(long, conflicts_with = "seeds")]
    seed: Option<u64>,
    /// With --seed: print the run's whole trace (every request, reply and sleep too).
    #[arg(long, requires = "seed")]
    trace: bool,
    /// Parallel runs.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Stop each run at this many simulated milliseconds instead of the scenario's bound
    /// (clients not done by then make T2 bounded, exit status 3).
    #[arg(long, value_name = "MS")]
    bound_ms: Option<u64>,
    /// The replica's lag behind the primary, simulated ms, instead of the scenario's (only
    /// for scenarios with a replica: 0 makes the failover lose nothing).
    #[arg(long, value_name = "MS")]
    replication_lag_ms: Option<u64>,
}

/// What the command line changes in a scenario (and a replay command must repeat).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Knobs {
    pub bound_ms: Option<u64>,
    pub replication_lag_ms: Option<u64>,
}

impl Knobs {
    /// The flags that set these knobs, each with a leading space.
    fn flags(self) -> String {
        let mut flags = String::new();
        if let Some(ms) = self.bound_ms {
            flags.push_str(&format!(" --bound-ms {ms}"));
        }
        if let Some(ms) = self.replication_lag_ms {
            flags.push_str(&format!(" --replication-lag-ms {ms}"));
        }
        flags
    }
}

/// The longest bound `--bound-ms` accepts: one simulated hour.
pub const MAX_BOUND_MS: u64 = 3_600_000;

/// The scenario `name` on `seed`, with the command line's knobs.
fn scenario(name: &str, seed: u64, knobs: Knobs) -> FamilyScenario {
    let mut scenario = build(name, seed).expect("named above");
    if let Some(bound_ms) = knobs.bound_ms {
        scenario.bound_ms = bound_ms;
    }
    if let Some(lag_ms) = knobs.replication_lag_ms {
        debug_assert!(scenario.replication_lag_ms.is_some(), "checked by run");
        scenario.replication_lag_ms = Some(lag_ms);
    }
    scenario
}

/// The command that replays one seed of one scenario with its trace.
pub fn replay_command(scenario: &str, seed: u64, knobs: Knobs) -> String {
    format!(
        "cassalock sim-family --scenario {scenario} --seed {seed}{} --trace",
        knobs.flags()
    )
}

fn scenarios_named(text: &str) -> Result<Vec<&'static str>, String> {
    if text == "all" {
        return Ok(names());
    }
    let mut chosen = Vec::new();
    for name in text.split(',').map(str::trim) {
        match SCENARIOS.iter().find(|named| named.name == name) {
            Some(named) if !chosen.contains(&named.name) => chosen.push(named.name),
            Some(_) => {}
            None => {
                let list: Vec<String> = SCENARIOS
                    .iter()
                    .map(|named| format!("  {:<40} {}", named.name, named.help))
                    .collect();
                return Err(format!(
                    "no scenario named {name:?}; give one of (or several, comma-separated, or all):\n{}",
                    list.join("\n")
                ));
            }
        }
    }
    Ok(chosen)
}

pub fn run(args: SimFamilyArgs) -> ExitCode {
    let chosen = match scenarios_named(&args.scenario) {
        Ok(chosen) => chosen,
        Err(message) => return usage_error(&message),
    };
    if args.jobs == 0 || args.jobs > 256 {
        return usage_error(&format!("--jobs {}: give 1 to 256", args.jobs));
    }
    if args.bound_ms.is_some_and(|ms| ms == 0 || ms > MAX_BOUND_MS) {
        return usage_error(&format!(
            "--bound-ms {}: give 1 to {MAX_BOUND_MS} (simulated milliseconds)",
            args.bound_ms.unwrap_or_default()
        ));
    }
    if let Some(lag_ms) = args.replication_lag_ms {
        if lag_ms > MAX_BOUND_MS {
            return usage_error(&format!("--replication-lag-ms {lag_ms}: give 0 to {MAX_BOUND_MS}"));
        }
        if let Some(name) = chosen
            .iter()
            .find(|name| build(name, 0).is_ok_and(|scenario| scenario.replication_lag_ms.is_none()))
        {
            return usage_error(&format!(
                "--replication-lag-ms applies to scenarios with a replica (set-nx-failover-after-acquire, redisson-failover-during-renewal), not {name}"
            ));
        }
    }
    let knobs = Knobs {
        bound_ms: args.bound_ms,
        replication_lag_ms: args.replication_lag_ms,
    };
    if let Some(seed) = args.seed {
        return one_seed(&chosen, seed, args.trace, knobs);
    }
    if args.seeds.len() > u128::from(MAX_SEEDS) {
        return usage_error(&format!(
            "--seeds {} asks for {} runs per scenario; at most {MAX_SEEDS}",
            args.seeds,
            args.seeds.len()
        ));
    }
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(args.jobs).build() {
        Ok(pool) => pool,
        Err(error) => return usage_error(&format!("--jobs {}: {error}", args.jobs)),
    };
    let mut violated = false;
    let mut bounded = false;
    for name in chosen {
        let (v, b) = sweep(name, &args.seeds, &pool, knobs);
        violated |= v;
        bounded |= b;
    }
    if violated {
        ExitCode::from(1)
    } else if bounded {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

fn describe(scenario: &FamilyScenario) {
    println!("{} ({}): {}", scenario.name, scenario.lock.name(), scenario.premise);
}

fn one_seed(chosen: &[&'static str], seed: u64, trace: bool, knobs: Knobs) -> ExitCode {
    let mut violated = false;
    let mut bounded = false;
    for name in chosen {
        let scenario = scenario(name, seed, knobs);
        describe(&scenario);
        println!("seed {seed}, {} client(s)", scenario.clients);
        let outcome = run_family(&scenario, seed, trace);
        if trace {
            for record in &outcome.records {
                println!("  {record}");
            }
            for left in &outcome.left {
                println!(
                    "  left at the end: server {} key {} = {}",
                    left.server, left.key, left.token
                );
            }
        }
        for (claim, verdict) in &outcome.verdicts.claims {
            println!("  {:<12} {verdict}", claim.name());
        }
        if reports_handovers(&scenario) {
            match outcome.longest_handover {
                Some((gap, at)) => println!(
                    "  longest handover: {:.3} ms, from the release at {:.3} ms to the next acquisition",
                    gap.as_secs_f64() * 1000.0,
                    at.as_secs_f64() * 1000.0
                ),
                None => println!("  longest handover: none (no release was followed by an acquisition)"),
            }
        }
        println!(
            "  simulated {:.3} s, trace hash {:016x}",
            outcome.sim_time.as_secs_f64(),
            outcome.trace_hash
        );
        violated |= outcome.verdicts.any_violated();
        bounded |= outcome.verdicts.any_bounded();
    }
    if violated {
        ExitCode::from(1)
    } else if bounded {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

/// Whether a scenario's runs report their longest handover: where waiters sleep until
/// notified (Redisson), what a lost unlock message costs.
fn reports_handovers(scenario: &FamilyScenario) -> bool {
    matches!(scenario.lock, LockKind::Redisson(_) | LockKind::RedissonFair(_))
}

/// One seed's verdicts, simulated seconds and longest handover (`None`: the run panicked).
type SeedResult = Option<(Vec<(Claim, Verdict)>, f64, Option<Duration>)>;

/// Per claim: seeds violated, the first of them and why; seeds bounded and the first.
#[derive(Default)]
struct Tally {
    violated: u64,
    first_violation: Option<(u64, String)>,
    bounded: u64,
    first_bounded: Option<u64>,
    checked: u64,
}

/// Sweep one scenario; returns (some claim violated, some run bounded).
fn sweep(name: &str, seeds: &SeedRange, pool: &rayon::ThreadPool, knobs: Knobs) -> (bool, bool) {
    let first_scenario = scenario(name, seeds.first(), knobs);
    describe(&first_scenario);
    let total = u64::try_from(seeds.len()).expect("at most MAX_SEEDS");
    let started = Instant::now();
    let mut tallies: Vec<(Claim, Tally)> = Claim::ALL.into_iter().map(|c| (c, Tally::default())).collect();
    let mut panicked: Option<u64> = None;
    let mut sim_seconds = 0.0;
    let mut longest_handover: Option<(Duration, u64)> = None;
    let mut done = 0u64;
    for batch in seeds.chunks(BATCH) {
        let batch_seeds: Vec<u64> = batch.collect();
        let outcomes: Vec<SeedResult> = pool.install(|| {
            batch_seeds
                .par_iter()
                .map(|&seed| {
                    let scenario = scenario(name, seed, knobs);
                    std::panic::catch_unwind(|| {
                        let outcome = run_family(&scenario, seed, false);
                        (
                            outcome.verdicts.claims,
                            outcome.sim_time.as_secs_f64(),
                            outcome.longest_handover.map(|(gap, _)| gap),
                        )
                    })
                    .ok()
                })
                .collect()
        });
        for (seed, outcome) in batch_seeds.iter().zip(outcomes) {
            let Some((claims, sim_s, handover)) = outcome else {
                panicked.get_or_insert(*seed);
                continue;
            };
            sim_seconds += sim_s;
            if let Some(gap) = handover {
                if longest_handover.is_none_or(|(worst, _)| gap > worst) {
                    longest_handover = Some((gap, *seed));
                }
            }
            for ((claim, verdict), (tallied, tally)) in claims.into_iter().zip(tallies.iter_mut()) {
                debug_assert_eq!(claim, *tallied);
                match verdict {
                    Verdict::NoViolation => tally.checked += 1,
                    Verdict::Violated(why) => {
                        tally.checked += 1;
                        tally.violated += 1;
                        tally.first_violation.get_or_insert((*seed, why));
                    }
                    Verdict::Bounded(_) => {
                        tally.bounded += 1;
                        tally.first_bounded.get_or_insert(*seed);
                    }
                    Verdict::NotChecked => {}
                }
            }
        }
        done += batch_seeds.len() as u64;
        if total > BATCH {
            eprintln!(
                "  {name}: {done}/{total} seeds, {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut violated = false;
    let mut bounded = false;
    for (claim, tally) in &tallies {
        let line = if let Some((seed, why)) = &tally.first_violation {
            violated = true;
            format!(
                "VIOLATED in {} of {total} seeds; first seed {seed}: {why}\n  {:<12}   replay: {}",
                tally.violated,
                "",
                replay_command(name, *seed, knobs)
            )
        } else if tally.checked == 0 && tally.bounded == 0 {
            "not checked in this scenario".to_owned()
        } else if let Some(seed) = tally.first_bounded {
            bounded = true;
            format!(
                "no violation in {} seeds; bounded in {} (first seed {seed}: replay: {})",
                tally.checked,
                tally.bounded,
                replay_command(name, seed, knobs)
            )
        } else {
            format!("no violation in {} seeds", tally.checked)
        };
        println!("  {:<12} {line}", claim.name());
    }
    if reports_handovers(&first_scenario) {
        match longest_handover {
            Some((gap, seed)) => println!(
                "  longest handover (a release to the next acquisition): {:.3} ms, seed {seed}: replay: {}",
                gap.as_secs_f64() * 1000.0,
                replay_command(name, seed, knobs)
            ),
            None => println!("  longest handover: none in any seed"),
        }
    }
    if let Some(seed) = panicked {
        violated = true;
        println!(
            "  a run panicked (a harness bug), first seed {seed}: replay: {}",
            replay_command(name, seed, knobs)
        );
    }
    println!(
        "  {total} seeds in {elapsed:.1} s ({:.0} seeds/min), {sim_seconds:.0} simulated s",
        total as f64 / elapsed.max(1e-9) * 60.0
    );
    (violated, bounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_are_checked_listed_and_deduplicated() {
        assert_eq!(scenarios_named("all").unwrap().len(), SCENARIOS.len());
        assert_eq!(
            scenarios_named("memcached-pause, redlock-gc-pause,memcached-pause").unwrap(),
            vec!["memcached-pause", "redlock-gc-pause"]
        );
        let error = scenarios_named("set-nx-contention,nope").unwrap_err();
        assert!(error.contains("\"nope\""), "{error}");
        for named in SCENARIOS {
            assert!(error.contains(named.name), "{error}");
        }
    }

    #[test]
    fn the_replay_command_parses_back_to_one_seed_with_its_trace() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: SimFamilyArgs,
        }
        let knobs = Knobs {
            bound_ms: Some(900),
            replication_lag_ms: Some(0),
        };
        let line = replay_command("set-nx-failover-after-acquire", 17, knobs);
        let words: Vec<&str> = line.split(' ').skip(1).collect();
        assert_eq!(words[0], "sim-family");
        let parsed = Wrapper::try_parse_from(words).unwrap().args;
        assert_eq!(parsed.scenario, "set-nx-failover-after-acquire");
        assert_eq!(parsed.seed, Some(17));
        assert!(parsed.trace);
        assert_eq!(parsed.bound_ms, Some(900));
        assert_eq!(parsed.replication_lag_ms, Some(0));
    }
}
