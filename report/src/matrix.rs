//! `cassalock report matrix`: every algorithm against every fault model, each cell judged by the
//! model checker where it applies and by the simulator over N seeds.

//!
//! Each cell is judged into typed values ([`Judgement`]: claim, verdict, model states or sim
//! seeds, whether the fault fired, trace files); the markdown, the compact view and the thesis
//! section are rendered from those values at the end, never from each other's text.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use cassalock::driver::Algorithm;
use cassalock_history::{ClaimId, ClaimVerdict};
use cassalock_models::check::{Limits, Report, Verdict};
use cassalock_models::{build as build_model, Fault, ModelName, Spec};
use rayon::prelude::*;

use crate::{write_file, ReportError};
use cassalock_sim::run::{run, RunOutcome};
use cassalock_sim::scenario::{build, SimOptions};
use cassalock_sim::trace::render;

/// The rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Row {
    Old,
    Queue,
    TryGetLock,
    GlobalTime,
}

impl Row {
    pub const ALL: [Row; 4] = [Row::Old, Row::Queue, Row::TryGetLock, Row::GlobalTime];

    fn name(self) -> &'static str {
        match self {
            Row::Old => "old GetLock (L3-4)",
            Row::Queue => "queue GetLock (L6)",
            Row::TryGetLock => "TryGetLock (L7)",
            Row::GlobalTime => "global time (L8)",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Row::Old => "old",
            Row::Queue => "queue",
            Row::TryGetLock => "trygetlock",
            Row::GlobalTime => "globaltime",
        }
    }
}

/// The columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Column {
    None,
    Loss,
    Partition,
    Crash,
    Pause,
    SkewBelowTtl,
    SkewAtTtl,
    ClOne,
    RenewalRace,
}

impl Column {
    pub const ALL: [Column; 9] = [
        Column::None,
        Column::Loss,
        Column::Partition,
        Column::Crash,
        Column::Pause,
        Column::SkewBelowTtl,
        Column::SkewAtTtl,
        Column::ClOne,
        Column::RenewalRace,
    ];

    fn name(self) -> &'static str {
        match self {
            Column::None => "none",
            Column::Loss => "message loss",
            Column::Partition => "partition",
            Column::Crash => "crash",
            Column::Pause => "pause",
            Column::SkewBelowTtl => "skew below the TTL",
            Column::SkewAtTtl => "skew at or above the TTL",
            Column::ClOne => "CL=ONE",
            Column::RenewalRace => "renewal race",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Column::None => "none",
            Column::Loss => "loss",
            Column::Partition => "partition",
            Column::Crash => "crash",
            Column::Pause => "pause",
            Column::SkewBelowTtl => "skew-below-ttl",
            Column::SkewAtTtl => "skew-at-ttl",
            Column::ClOne => "cl-one",
            Column::RenewalRace => "renewal-race",
        }
    }
}

/// How a fault is brought about in a simulation run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Firing {
    /// By configuration (clock offsets, consistency level): always in effect.
    Configured,
    /// An injected fault: it fired if the run recorded it.
    Injected,
    /// A renewal ran during a release of the same acquisition (needs detailed records).
    RenewalDuringRelease,
}

/// One way of judging a cell.
#[derive(Clone, Debug)]
enum Source {
    Model {
        spec: Spec,
        label: &'static str,
    },
    Sim {
        scenario: &'static str,
        options: SimOptions,
        label: &'static str,
        firing: Firing,
    },
    NotApplicable(&'static str),
}

fn model(model: ModelName, fault: Fault, label: &'static str) -> Source {
    let mut spec = Spec::new(model);
    spec.fault = fault;
    Source::Model { spec, label }
}

fn sim(scenario: &'static str, label: &'static str, firing: Firing) -> Source {
    Source::Sim {
        scenario,
        options: SimOptions::default(),
        label,
        firing,
    }
}

fn skew(offset_s: f64, label: &'static str) -> Source {
    Source::Sim {
        scenario: "skew",
        options: SimOptions {
            offset_s: Some(offset_s),
            ..SimOptions::default()
        },
        label,
        firing: Firing::Configured,
    }
}

fn sources(row: Row, column: Column) -> Vec<Source> {
    use Column as C;
    use Firing::*;
    if row == Row::GlobalTime {
        return match column {
            C::None => vec![model(ModelName::GlobalTime, Fault::None, "model, clocks in any order")],
            C::Crash => vec![
                model(ModelName::GlobalTime, Fault::Crash, "model, r0 3 ticks ahead, crashes"),
                sim("timeservice-stall", "sim, ts0 20 s ahead, killed", Injected),
            ],
            C::SkewBelowTtl | C::SkewAtTtl => {
                vec![model(ModelName::GlobalTime, Fault::Skew, "model, r0 2 ticks ahead")]
            }
            _ => vec![Source::NotApplicable(
                "the time service's claim (T5) is about clock order and crashes",
            )],
        };
    }
    let lock_model = match row {
        Row::Old => ModelName::Old,
        Row::Queue => ModelName::GetLock,
        _ => ModelName::TryGetLock,
    };
    let mut list = match column {
        C::None => vec![
            model(lock_model, Fault::None, "model, perfect clock"),
            sim("contention", "sim, contention", Configured),
        ],
        C::Loss => vec![sim("loss", "sim, 20% loss for 40 s", Injected)],
        C::Partition => vec![sim("partition", "sim, holder cut off TTL + 15 s", Injected)],
        C::Crash => vec![
            model(lock_model, Fault::Crash, "model, holder crashes"),
            sim("crash-holder", "sim, holder killed", Injected),
        ],
        C::Pause => {
            let mut spec = Spec::new(lock_model);
            spec.fault = Fault::Pause;
            spec.fencing = true;
            vec![
                Source::Model {
                    spec,
                    label: "model, holder paused, fencing",
                },
                sim("pause", "sim, holder paused TTL + 10 s, fencing", Injected),
            ]
        }
        C::SkewBelowTtl => vec![
            model(lock_model, Fault::Skew, "model, a client clock a tick behind"),
            skew(7.5, "sim, r0 7.5 s ahead (TTL/4)"),
            skew(20.0, "sim, r0 20 s ahead (2 TTL/3)"),
        ],
        C::SkewAtTtl => vec![
            model(lock_model, Fault::TtlSkew, "model, coordinator a TTL ahead (S2)"),
            skew(30.0, "sim, r0 30 s ahead (= TTL)"),
        ],
        C::ClOne => vec![sim("cl-one", "sim, CL ONE, a replica briefly away", Configured)],
        C::RenewalRace => {
            let mut spec = Spec::new(lock_model);
            spec.leases = true;
            vec![
                Source::Model {
                    spec,
                    label: "model, leases and renewal",
                },
                sim("renew-race", "sim, renewals racing releases", RenewalDuringRelease),
            ]
        }
    };
    if row == Row::TryGetLock {
        for source in &mut list {
            if let Source::Sim { options, .. } = source {
                options.try_lock = true;
            }
        }
    }
    list
}

/// The sim claims shown per row, in the order the cells list them (by ID text).
fn sim_claims(row: Row) -> &'static [ClaimId] {
    match row {
        Row::TryGetLock => &[ClaimId::K3, ClaimId::T1Belief, ClaimId::T1Resource],
        _ => &[ClaimId::K3, ClaimId::T1Belief, ClaimId::T1Resource, ClaimId::T2],
    }
}

fn algorithm(row: Row) -> Algorithm {
    match row {
        Row::Old => Algorithm::Old,
        _ => Algorithm::Queue,
    }
}

/// Options of a matrix run.
#[derive(Clone, Debug)]
pub struct MatrixOptions {
    pub out: PathBuf,
    pub seeds: u64,
    pub jobs: usize,
}

/// Did the fault of a sim source fire in this run?
fn fired(firing: Firing, outcome: &RunOutcome) -> bool {
    match firing {
        Firing::Configured => true,
        Firing::Injected => outcome.verdicts.faults_begun > 0,
        Firing::RenewalDuringRelease => outcome.verdicts.renewal_during_release,
    }
}

// ---- the typed cells ----

/// A model's trace file, linked from its cell.
#[derive(Clone, Debug)]
struct TraceFile {
    /// Under `matrix/`.
    name: String,
    /// The trace's length.
    steps: usize,
}

/// One claim as a model judged it.
#[derive(Clone, Debug)]
struct ModelClaim {
    claim: ClaimId,
    verdict: Verdict,
    /// The shortest counterexample or example, for a violated or reachable property.
    trace: Option<TraceFile>,
}

/// The first failing seed of a sim claim.
#[derive(Clone, Debug)]
struct FirstFailure {
    seed: u64,
    /// Its trace file, under `matrix/`.
    file: String,
    /// The replay command of that seed.
    command: String,
}

/// One claim as the simulator judged it over the seeds.
#[derive(Clone, Debug)]
struct SimClaim {
    claim: ClaimId,
    /// Violated if any seed failed; not exercised if the fault never fired.
    verdict: ClaimVerdict,
    /// Failing seeds.
    failures: u64,
    first_failure: Option<FirstFailure>,
}

/// One way a cell was judged, with its verdicts: what the markdown is rendered from.
#[derive(Clone, Debug)]
enum Judgement {
    NotApplicable(&'static str),
    Model {
        label: &'static str,
        states: usize,
        claims: Vec<ModelClaim>,
    },
    Sim {
        label: &'static str,
        /// Seeds asked for, seeds run, seeds in which the fault fired.
        seeds: u64,
        runs: u64,
        fired: u64,
        claims: Vec<SimClaim>,
        /// The longest GlobalTime stall over the seeds (S1), in seconds.
        stall_s: Option<f64>,
        /// Times a fencing token went down, over the seeds.
        token_drops: u64,
    },
}

impl Judgement {
    /// Did this judgement find `claim` violated (`None`: any claim)?
    fn violated(&self, claim: Option<ClaimId>) -> bool {
        let wanted = |c: ClaimId| claim.is_none_or(|claim| claim == c);
        match self {
            Judgement::NotApplicable(_) => false,
            Judgement::Model { claims, .. } => claims.iter().any(|c| wanted(c.claim) && c.verdict == Verdict::Violated),
            Judgement::Sim { claims, .. } => claims.iter().any(|c| wanted(c.claim) && c.verdict.is_violated()),
        }
    }

    /// The model's verdict on `claim`, if this is a model judgement that checked it.
    fn model_verdict(&self, claim: ClaimId) -> Option<&Verdict> {
        match self {
            Judgement::Model { claims, .. } => claims.iter().find(|c| c.claim == claim).map(|c| &c.verdict),
            _ => None,
        }
    }

    /// A sim judgement whose fault never fired: no verdict.
    fn never_fired(&self) -> bool {
        matches!(self, Judgement::Sim { fired: 0, .. })
    }

    /// Fencing tokens went down in a sim judgement with a verdict.
    fn tokens_went_down(&self) -> bool {
        matches!(self, Judgement::Sim { fired, token_drops, .. } if *fired > 0 && *token_drops > 0)
    }

    fn markdown(&self) -> String {
        match self {
            Judgement::NotApplicable(why) => format!("n/a: {why}"),
            Judgement::Model { label, states, claims } => {
                let parts: Vec<String> = claims
                    .iter()
                    .map(|c| match &c.trace {
                        Some(trace) => format!("{} [{}](matrix/{})", c.claim, short(&c.verdict), trace.name),
                        None => format!("{} {}", c.claim, short(&c.verdict)),
                    })
                    .collect();
                format!("**{label}** ({states} states): {}", parts.join(", "))
            }
            Judgement::Sim {
                label,
                seeds,
                runs,
                fired,
                claims,
                stall_s,
                token_drops,
            } => {
                if *fired == 0 {
                    return format!("**{label}**: the fault never fired in {runs} seeds: no verdict");
                }
                let parts: Vec<String> = claims
                    .iter()
                    .map(|c| match &c.first_failure {
                        None => format!("{} ok", c.claim),
                        Some(first) => format!("{} [VIOLATED {}/{runs}](matrix/{})", c.claim, c.failures, first.file),
                    })
                    .collect();
                let fired = if fired < runs {
                    format!(", the fault fired in {fired} of them")
                } else {
                    String::new()
                };
                let mut line = format!("**{label}** ({seeds} seeds{fired}): {}", parts.join(", "));
                if let Some(stall) = stall_s {
                    line.push_str(&format!("; S1: GlobalTime stood still up to {stall:.1} s"));
                }
                if *token_drops > 0 {
                    line.push_str(&format!("; fencing tokens went down {token_drops} times"));
                }
                line
            }
        }
    }

    /// The violations this judgement found, one line each, for "Every violation found".
    fn findings(&self, row: Row, column: Column) -> Vec<String> {
        match self {
            Judgement::NotApplicable(_) => Vec::new(),
            Judgement::Model { claims, .. } => claims
                .iter()
                .filter(|c| c.verdict == Verdict::Violated)
                .filter_map(|c| {
                    let trace = c.trace.as_ref()?;
                    Some(format!(
                        "{} / {}: model: {} violated ({} steps): [trace](matrix/{})",
                        row.name(),
                        column.name(),
                        c.claim,
                        trace.steps,
                        trace.name
                    ))
                })
                .collect(),
            Judgement::Sim {
                label, runs, claims, ..
            } => claims
                .iter()
                .filter_map(|c| {
                    let first = c.first_failure.as_ref()?;
                    Some(format!(
                        "{} / {}: {label}: {} violated in {} of {runs} seeds; first seed {}: `{}`",
                        row.name(),
                        column.name(),
                        c.claim,
                        c.failures,
                        first.seed,
                        first.command
                    ))
                })
                .collect(),
        }
    }
}

/// A cell: every judgement made of it, in source order.
type Cell = Vec<Judgement>;

/// What the compact view says of a cell.
fn compact_mark(cell: &Cell) -> &'static str {
    if matches!(cell.first(), Some(Judgement::NotApplicable(_))) {
        "n/a"
    } else if cell.iter().any(|j| j.violated(None)) {
        "**broken**"
    } else if cell
        .iter()
        .any(|j| j.model_verdict(ClaimId::S1) == Some(&Verdict::Reachable))
    {
        "**S1 stall**"
    } else if cell.iter().any(Judgement::never_fired) {
        "no verdict"
    } else {
        "no violation"
    }
}

/// What a sim source found over its seeds.
struct SimResult {
    runs: u64,
    fired: u64,
    /// Per claim (in [`sim_claims`] order): failing runs, first failing seed.
    failures: Vec<(ClaimId, u64, Option<u64>)>,
    /// Longest GlobalTime stall (S1 runs).
    stall_s: Option<f64>,
    token_drops: u64,
}

impl SimResult {
    fn failures_of(&self, claim: ClaimId) -> (u64, Option<u64>) {
        self.failures
            .iter()
            .find(|(c, _, _)| *c == claim)
            .map_or((0, None), |&(_, failures, first)| (failures, first))
    }
}

/// Why the matrix could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error("{label}: {source}")]
    Model {
        label: String,
        source: cassalock_models::SpecError,
    },
    /// The checker's own cross-checks disagreed: a bug in the checker, not a verdict.
    #[error("model checker disagreement in {label}: {errors:?}")]
    CheckerDisagreement { label: String, errors: Vec<String> },
}

/// Run the matrix and write matrix.md and its trace files.
pub fn run_matrix(
    options: &MatrixOptions,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<Vec<String>, MatrixError> {
    let out_dir = options.out.join("matrix");
    crate::create_dir(&out_dir)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .thread_name(|i| format!("matrix-{i}"))
        .build()
        .map_err(ReportError::from)?;
    let mut files = Vec::new();
    let mut cells: BTreeMap<(Row, Column), Cell> = BTreeMap::new();
    let total_cells = Row::ALL.len() * Column::ALL.len();
    let mut done_cells = 0;
    for row in Row::ALL {
        for column in Column::ALL {
            done_cells += 1;
            progress(&format!("{} / {}", row.key(), column.key()), done_cells, total_cells);
            let mut cell = Cell::new();
            for source in sources(row, column) {
                match source {
                    Source::NotApplicable(why) => cell.push(Judgement::NotApplicable(why)),
                    Source::Model { spec, label } => {
                        let report = build_model(&spec)
                            .map_err(|source| MatrixError::Model {
                                label: label.to_owned(),
                                source,
                            })?
                            .check(Limits::default());
                        if !report.internal_errors.is_empty() {
                            return Err(MatrixError::CheckerDisagreement {
                                label: label.to_owned(),
                                errors: report.internal_errors.clone(),
                            });
                        }
                        cell.push(model_judgement(row, column, label, &report, &out_dir, &mut files)?);
                    }
                    Source::Sim {
                        scenario,
                        options: sim_options,
                        label,
                        firing,
                    } => {
                        let result = run_sims(&pool, row, scenario, &sim_options, firing, options);
                        cell.push(sim_judgement(
                            row,
                            column,
                            scenario,
                            &sim_options,
                            label,
                            &result,
                            options,
                            &out_dir,
                            &mut files,
                        )?);
                    }
                }
            }
            cells.insert((row, column), cell);
        }
    }
    let mutants = mutant_checks(&pool, options, &out_dir, &mut files)?;
    write_file(&options.out, "matrix.md", &markdown(&cells, &mutants, options))?;
    files.push("matrix.md".into());
    Ok(files)
}

fn short(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Holds => "holds (exhaustive)".into(),
        // The checker's own wording: a clock-bounded run is never reported as plain "holds".
        Verdict::HoldsWithinClockBound(_) => verdict.to_string(),
        Verdict::Violated => "VIOLATED".into(),
        Verdict::Bounded(_) => "bounded".into(),
        Verdict::Reachable => "reachable".into(),
        Verdict::Unreachable => "unreachable".into(),
    }
}

/// A model's verdicts on a cell; writes the trace of every violated or reachable property.
fn model_judgement(
    row: Row,
    column: Column,
    label: &'static str,
    report: &Report,
    out_dir: &std::path::Path,
    files: &mut Vec<String>,
) -> Result<Judgement, ReportError> {
    let mut claims = Vec::new();
    for property in &report.rows {
        let claim = property.claim;
        let trace = match &property.trace {
            Some(trace) if matches!(property.verdict, Verdict::Violated | Verdict::Reachable) => {
                let name = format!(
                    "{}-{}-model-{}.txt",
                    row.key(),
                    column.key(),
                    claim.as_str().to_lowercase()
                );
                let text = format!(
                    "{}\n\n{} -- {}\n{}{}",
                    report.title,
                    property.property,
                    property.verdict,
                    property.detail.as_deref().map(|d| format!("{d}\n")).unwrap_or_default(),
                    trace
                );
                write_file(out_dir, &name, &text)?;
                files.push(format!("matrix/{name}"));
                Some(TraceFile {
                    name,
                    steps: trace.steps,
                })
            }
            _ => None,
        };
        claims.push(ModelClaim {
            claim,
            verdict: property.verdict.clone(),
            trace,
        });
    }
    Ok(Judgement::Model {
        label,
        states: report.graph_states,
        claims,
    })
}

/// One seed's result.
struct SeedOutcome {
    seed: u64,
    fired: bool,
    /// Per claim of [`sim_claims`]: did it hold?
    checks: Vec<(ClaimId, bool)>,
    /// S1 stall, seconds.
    stall_s: Option<f64>,
    token_drops: u64,
}

/// Run every seed of a sim source on `pool`; the results come back in seed order, so the
/// first failing seed is the lowest whatever thread ran it.
fn run_sims(
    pool: &rayon::ThreadPool,
    row: Row,
    scenario: &'static str,
    sim_options: &SimOptions,
    firing: Firing,
    options: &MatrixOptions,
) -> SimResult {
    let detailed = firing == Firing::RenewalDuringRelease;
    let outcomes: Vec<SeedOutcome> = pool.install(|| {
        (0..options.seeds)
            .into_par_iter()
            .map(|seed| {
                let config = build(scenario, seed, algorithm(row), sim_options).expect("a known scenario");
                let outcome = run(&config, seed, detailed);
                SeedOutcome {
                    seed,
                    fired: fired(firing, &outcome),
                    checks: sim_claims(row)
                        .iter()
                        .map(|&claim| (claim, outcome.verdicts.passed(claim)))
                        .collect(),
                    stall_s: outcome.verdicts.global_time_stall.map(|d| d.as_secs_f64()),
                    token_drops: outcome.verdicts.token_drops as u64,
                }
            })
            .collect()
    });
    let mut result = SimResult {
        runs: outcomes.len() as u64,
        fired: 0,
        failures: sim_claims(row).iter().map(|&claim| (claim, 0, None)).collect(),
        stall_s: None,
        token_drops: 0,
    };
    for outcome in outcomes {
        result.fired += u64::from(outcome.fired);
        result.token_drops += outcome.token_drops;
        if let Some(stall) = outcome.stall_s {
            result.stall_s = Some(result.stall_s.map_or(stall, |s: f64| s.max(stall)));
        }
        for (claim, passed) in outcome.checks {
            let entry = result
                .failures
                .iter_mut()
                .find(|(c, _, _)| *c == claim)
                .expect("every claim listed");
            if !passed {
                entry.1 += 1;
                entry.2.get_or_insert(outcome.seed);
            }
        }
    }
    result
}

/// The simulator's verdicts on a cell; writes the first failing seed's trace of every violated
/// claim.
#[allow(clippy::too_many_arguments)]
fn sim_judgement(
    row: Row,
    column: Column,
    scenario: &str,
    sim_options: &SimOptions,
    label: &'static str,
    result: &SimResult,
    options: &MatrixOptions,
    out_dir: &std::path::Path,
    files: &mut Vec<String>,
) -> Result<Judgement, ReportError> {
    let mut claims = Vec::new();
    let exercised = result.fired > 0;
    let mut flags = String::new();
    if let Some(offset) = sim_options.offset_s {
        flags.push_str(&format!(" --offset-s {offset}"));
    }
    if sim_options.try_lock {
        flags.push_str(" --try-lock");
    }
    for &(claim, failures, first) in &result.failures {
        let first_failure = match first {
            Some(seed) if exercised => {
                let name = format!(
                    "{}-{}-{}-{}-seed{seed}.txt",
                    row.key(),
                    column.key(),
                    scenario,
                    claim.as_str().to_lowercase()
                );
                let config = build(scenario, seed, algorithm(row), sim_options).expect("known");
                let outcome = run(&config, seed, false);
                let command = format!(
                    "cassalock replay --scenario {scenario} --seed {seed} --algorithm {}{flags}",
                    algorithm(row).name()
                );
                let text = format!(
                    "{}\nseed {seed}\n\n{}\nverdicts:\n{}\nreplay (with every store request): {command}\n",
                    config.plan(),
                    render(&outcome.records),
                    outcome.verdicts
                );
                write_file(out_dir, &name, &text)?;
                files.push(format!("matrix/{name}"));
                Some(FirstFailure {
                    seed,
                    file: name,
                    command,
                })
            }
            _ => None,
        };
        let verdict = if !exercised {
            ClaimVerdict::NotExercised
        } else {
            ClaimVerdict::from_holds(failures == 0)
        };
        claims.push(SimClaim {
            claim,
            verdict,
            failures,
            first_failure,
        });
    }
    Ok(Judgement::Sim {
        label,
        seeds: options.seeds,
        runs: result.runs,
        fired: result.fired,
        claims,
        stall_s: result.stall_s,
        token_drops: result.token_drops,
    })
}

/// The whole report, rendered from the typed cells.
fn markdown(cells: &BTreeMap<(Row, Column), Cell>, mutants: &[(String, String)], options: &MatrixOptions) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Property matrix: algorithm x fault model\n");
    let _ = writeln!(
        md,
        "Generated by `cassalock report matrix --seeds {}`. Each cell says how its claims fared under that fault, judged two ways: **model** rows come from the stateright models (`cassalock check`: every reachable state, exhaustively or up to a clock bound); **sim** rows come from the simulator ({} seeds per configuration, the library's own code against a simulated 3-replica cluster). The same command on the same commit writes the same bytes.\n",
        options.seeds, options.seeds
    );
    let _ = writeln!(md, "Claims: T1 (model) / T1-belief (sim): never two holders at once; T3 for TryGetLock. T1-resource: the resource never accepts a stale fencing token (fencing on). T2: every waiter acquires (model: no fair cycle or deadlock starves it; sim: every client finishes). T4: some TryGetLock caller acquires. F-order, F-overtakes: queue order. K3: no released lock stays taken. T5: GlobalTime never decreases. S1: a crashed replica that ran ahead freezes GlobalTime.\n");
    let _ = writeln!(md, "Verdicts: \"holds (exhaustive)\": every reachable state of the model checked; \"holds within bound (clock <= N ticks)\": every reachable state with clocks up to the model's bound checked, nothing beyond it; \"ok\": no violation in the N seeds (never a proof); VIOLATED links to the shortest counterexample (model) or the first failing seed's trace (sim); \"the fault never fired\": no verdict, never a pass.\n");
    for row in Row::ALL {
        let _ = writeln!(md, "## {}\n", row.name());
        let _ = writeln!(md, "| fault | verdicts |");
        let _ = writeln!(md, "|---|---|");
        for column in Column::ALL {
            let lines: Vec<String> = cells[&(row, column)].iter().map(Judgement::markdown).collect();
            let _ = writeln!(md, "| {} | {} |", column.name(), lines.join("<br>"));
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "## Compact view\n");
    let _ = write!(md, "| |");
    for column in Column::ALL {
        let _ = write!(md, " {} |", column.name());
    }
    let _ = writeln!(md);
    let _ = write!(md, "|---|");
    for _ in Column::ALL {
        let _ = write!(md, "---|");
    }
    let _ = writeln!(md);
    for row in Row::ALL {
        let _ = write!(md, "| {} |", row.name());
        for column in Column::ALL {
            let mark = compact_mark(&cells[&(row, column)]);
            let _ = write!(md, " {mark} |");
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "\n\"broken\": some claim was violated in that cell (details above); \"S1 stall\": the time service can freeze; \"no violation\": no check made there found one (exhaustive, clock-bounded or seeded: see the cell for which).\n");
    thesis_section(&mut md, cells);
    let _ = writeln!(md, "## Broken variants (mutants)\n");
    for (text, link) in mutants {
        let _ = writeln!(md, "- {text}{link}");
    }
    let _ = writeln!(md);
    let _ = writeln!(md, "## Every violation found\n");
    for row in Row::ALL {
        for column in Column::ALL {
            for judgement in &cells[&(row, column)] {
                for finding in judgement.findings(row, column) {
                    let _ = writeln!(md, "- {finding}");
                }
            }
        }
    }
    md
}

/// What the matrix says about the thesis's claims, read off the cells' verdicts themselves so
/// that the prose cannot drift from them.
fn thesis_section(md: &mut String, cells: &BTreeMap<(Row, Column), Cell>) {
    let cell = |row: Row, column: Column| &cells[&(row, column)];
    // Some judgement of the cell found `claim` violated.
    let violated = |row: Row, column: Column, claim: ClaimId| cell(row, column).iter().any(|j| j.violated(Some(claim)));
    // Some model of the cell gave `claim` a verdict that `wanted` accepts.
    let model_says = |row: Row, column: Column, claim: ClaimId, wanted: fn(&Verdict) -> bool| {
        cell(row, column)
            .iter()
            .any(|j| j.model_verdict(claim).is_some_and(wanted))
    };
    let exhaustive = |verdict: &Verdict| *verdict == Verdict::Holds;
    let _ = writeln!(md, "## What this says about the thesis\n");
    let t1_exhaustive = model_says(Row::Queue, Column::None, ClaimId::T1, exhaustive);
    let t1_tolerant = [
        Column::Loss,
        Column::Partition,
        Column::Crash,
        Column::ClOne,
        Column::RenewalRace,
    ]
    .iter()
    .all(|&column| !cell(Row::Queue, column).iter().any(|j| j.violated(None)));
    let _ = writeln!(
        md,
        "- **Theorem 1 (mutual exclusion, queue GetLock).** With no faults: {}. Under message loss, a partition, a crashed holder, CL=ONE and renewal racing release: {}. It needs its assumptions: a holder paused past the TTL (K1) and a coordinator clock ahead break it, as SPEC.md's K1 and S2 predict.",
        if t1_exhaustive { "holds in every reachable state of the bounded model" } else { "see the table, it did not hold" },
        if t1_tolerant { "no violation in the model or the seeds" } else { "violated in at least one of them (see the table)" }
    );
    let below = violated(Row::Queue, Column::SkewBelowTtl, ClaimId::T1Belief);
    let _ = writeln!(
        md,
        "- **S2 (skew versus the TTL).** The thesis puts the danger at clock differences of the TTL or more. {}",
        if below {
            "The simulator breaks T1 below that: with TTL 30 s and renewal every 15 s, a coordinator 20 s ahead already lets a second holder in. A renewed cell is only guaranteed to live TTL - renewal interval past the last renewal, so the real bound is TTL - renewal interval (15 s here); `cassalock sim --scenario skew --sweep-offsets` finds the smallest breaking offset."
        } else {
            "Below the TTL the simulator found no violation."
        }
    );
    let fenced = [Row::Old, Row::Queue, Row::TryGetLock]
        .iter()
        .all(|&row| !violated(row, Column::Pause, ClaimId::T1Resource));
    let _ = writeln!(
        md,
        "- **Pauses (K1).** Every lock variant lets two clients believe they hold the lock after a pause longer than the TTL. {}",
        if fenced {
            "With the resource checking fencing tokens the stale holder's write was refused in every check: the damage needs fencing to prevent, and the thesis does not mention it."
        } else {
            "Even with fencing the resource accepted a stale write (see the table)."
        }
    );
    let old_t2 = violated(Row::Old, Column::None, ClaimId::T2);
    let queue_t2 = model_says(Row::Queue, Column::None, ClaimId::T2, exhaustive);
    let _ = writeln!(
        md,
        "- **Theorem 2 (liveness) and the old lock's unfairness.** Old lock: {}. Queue lock: {}.",
        if old_t2 {
            "T2 fails, with a weakly fair cycle in which one thread never acquires, as the thesis says"
        } else {
            "no starvation cycle found, against the thesis"
        },
        if queue_t2 {
            "T2 holds in the bounded model (no fair cycle starves a waiter)"
        } else {
            "T2 did not hold exhaustively (see the table)"
        }
    );
    let t4 = model_says(Row::TryGetLock, Column::None, ClaimId::T4, exhaustive);
    let _ = writeln!(
        md,
        "- **Theorems 3-4 (TryGetLock).** T3 {} with no faults; T4 (some caller of a free lock acquires) {}.",
        if model_says(Row::TryGetLock, Column::None, ClaimId::T3, exhaustive) {
            "holds in every reachable state"
        } else {
            "did not hold"
        },
        if t4 {
            "holds in the bounded model"
        } else {
            "did not hold in the model (see the table)"
        }
    );
    let _ = writeln!(
        md,
        "- **Theorem 5 and S1 (global time).** T5 (GlobalTime never decreases) {}; S1 {}.",
        if model_says(Row::GlobalTime, Column::Crash, ClaimId::T5, |v| {
            matches!(v, Verdict::Holds | Verdict::HoldsWithinClockBound(_))
        }) {
            "held in every model configuration"
        } else {
            "was violated"
        },
        if model_says(Row::GlobalTime, Column::Crash, ClaimId::S1, |v| *v
            == Verdict::Reachable)
        {
            "is real: a replica that ran ahead and crashed freezes GlobalTime for about as long as its lead (measured in the simulator)"
        } else {
            "was not reached"
        }
    );
    let drops: Vec<&str> = Column::ALL
        .iter()
        .filter(|&&column| {
            [Row::Queue, Row::TryGetLock]
                .iter()
                .any(|&row| cell(row, column).iter().any(Judgement::tokens_went_down))
        })
        .map(|&column| column.name())
        .collect();
    let _ = writeln!(
        md,
        "- **Fencing tokens (our addition, not a thesis claim).** The queue column name is the token. It went down across holders under: {}. A token that can go down lets the resource refuse a legitimate holder, so the queue name is a weak token outside fault-free runs.\n",
        if drops.is_empty() { "no fault model".to_string() } else { drops.join(", ") }
    );
}

/// The deliberately broken variants: each must break its claim, or the checks prove nothing.
fn mutant_checks(
    pool: &rayon::ThreadPool,
    options: &MatrixOptions,
    out_dir: &std::path::Path,
    files: &mut Vec<String>,
) -> Result<Vec<(String, String)>, MatrixError> {
    use cassalock_models::Mutant;
    let mut lines = Vec::new();
    let shortest = |spec: &Spec, claim: ClaimId| -> Result<Report, MatrixError> {
        let limits = Limits {
            stop_at_first_violation: true,
            only_claim: Some(claim.to_string()),
            ..Limits::default()
        };
        let model = build_model(spec).map_err(|source| MatrixError::Model {
            label: format!("{claim} mutant"),
            source,
        })?;
        Ok(model.check(limits))
    };
    for (label, model_name, fault, mutant, claim, key) in [
        (
            "M1 (first in the queue skips the main-row check) with delayed enqueue, queue GetLock",
            ModelName::GetLock,
            Fault::DelayedEnqueue,
            Mutant::M1,
            ClaimId::T1,
            "queue-m1-delayed-t1",
        ),
        (
            "K3 (release does not wait for renewal), queue GetLock",
            ModelName::GetLock,
            Fault::None,
            Mutant::K3,
            ClaimId::K3,
            "queue-k3-k3",
        ),
        (
            "K3, old GetLock",
            ModelName::Old,
            Fault::None,
            Mutant::K3,
            ClaimId::K3,
            "old-k3-k3",
        ),
    ] {
        let mut spec = Spec::new(model_name);
        spec.fault = fault;
        spec.mutant = Some(mutant);
        let report = shortest(&spec, claim)?;
        let row = report.row(claim);
        let name = format!("mutant-{key}.txt");
        let link = match &row.trace {
            Some(trace) => {
                write_file(
                    out_dir,
                    &name,
                    &format!("{}\n\n{} -- {}\n{}", report.title, row.property, row.verdict, trace),
                )?;
                files.push(format!("matrix/{name}"));
                format!(" [{} steps](matrix/{name})", trace.steps)
            }
            None => String::new(),
        };
        lines.push((format!("model: {label}: {claim} {}", short(&row.verdict)), link));
    }
    for row in [Row::Old, Row::Queue] {
        let options_k3 = SimOptions {
            k3: true,
            ..SimOptions::default()
        };
        let result = run_sims(pool, row, "renew-race", &options_k3, Firing::Configured, options);
        let (failures, first) = result.failures_of(ClaimId::K3);
        let text = match first {
            Some(seed) => format!(
                "sim: K3, {}, renew-race --k3: a released lock came back to life in {failures} of {} seeds; first: `cassalock replay --scenario renew-race --seed {seed} --algorithm {} --k3`",
                row.name(),
                result.runs,
                algorithm(row).name()
            ),
            None => format!("sim: K3, {}, renew-race --k3: not seen in {} seeds", row.name(), result.runs),
        };
        lines.push((text, String::new()));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(claims: &[(ClaimId, Verdict, bool)]) -> Judgement {
        Judgement::Model {
            label: "model, m",
            states: 7,
            claims: claims
                .iter()
                .map(|(claim, verdict, traced)| ModelClaim {
                    claim: *claim,
                    verdict: verdict.clone(),
                    trace: traced.then(|| TraceFile {
                        name: format!("x-{}.txt", claim.as_str().to_lowercase()),
                        steps: 4,
                    }),
                })
                .collect(),
        }
    }

    fn sim(fired: u64, failures: &[(ClaimId, u64)]) -> Judgement {
        Judgement::Sim {
            label: "sim, s",
            seeds: 5,
            runs: 5,
            fired,
            claims: failures
                .iter()
                .map(|&(claim, failures)| SimClaim {
                    claim,
                    verdict: if fired == 0 {
                        ClaimVerdict::NotExercised
                    } else {
                        ClaimVerdict::from_holds(failures == 0)
                    },
                    failures,
                    first_failure: (fired > 0 && failures > 0).then(|| FirstFailure {
                        seed: 2,
                        file: "y.txt".into(),
                        command: "cassalock replay".into(),
                    }),
                })
                .collect(),
            stall_s: None,
            token_drops: 0,
        }
    }

    #[test]
    fn cells_render_as_the_matrix_always_wrote_them() {
        let m = model(&[
            (ClaimId::T1, Verdict::Holds, false),
            (ClaimId::T2, Verdict::Violated, true),
            (ClaimId::S1, Verdict::Reachable, true),
            (ClaimId::K3, Verdict::HoldsWithinClockBound(4), false),
        ]);
        assert_eq!(
            m.markdown(),
            "**model, m** (7 states): T1 holds (exhaustive), T2 [VIOLATED](matrix/x-t2.txt), S1 [reachable](matrix/x-s1.txt), K3 holds within bound (clock <= 4 ticks)"
        );
        let s = sim(3, &[(ClaimId::K3, 0), (ClaimId::T1Belief, 2)]);
        assert_eq!(
            s.markdown(),
            "**sim, s** (5 seeds, the fault fired in 3 of them): K3 ok, T1-belief [VIOLATED 2/5](matrix/y.txt)"
        );
        assert_eq!(
            sim(0, &[(ClaimId::K3, 1)]).markdown(),
            "**sim, s**: the fault never fired in 5 seeds: no verdict"
        );
        assert_eq!(
            s.findings(Row::Queue, Column::Pause),
            ["queue GetLock (L6) / pause: sim, s: T1-belief violated in 2 of 5 seeds; first seed 2: `cassalock replay`"]
        );
        assert_eq!(
            m.findings(Row::Old, Column::None),
            ["old GetLock (L3-4) / none: model: T2 violated (4 steps): [trace](matrix/x-t2.txt)"]
        );
    }

    #[test]
    fn the_compact_view_reads_verdicts_not_text() {
        assert_eq!(compact_mark(&vec![Judgement::NotApplicable("why")]), "n/a");
        assert_eq!(
            compact_mark(&vec![
                model(&[(ClaimId::T1, Verdict::Holds, false)]),
                sim(5, &[(ClaimId::T2, 1)])
            ]),
            "**broken**"
        );
        assert_eq!(
            compact_mark(&vec![model(&[(ClaimId::S1, Verdict::Reachable, true)])]),
            "**S1 stall**"
        );
        // A fault that never fired hides its failures: no verdict, never a pass or a break.
        assert_eq!(compact_mark(&vec![sim(0, &[(ClaimId::T1Belief, 3)])]), "no verdict");
        assert_eq!(
            compact_mark(&vec![model(&[(ClaimId::T5Race, Verdict::Reachable, true)])]),
            "no violation"
        );
    }
}
