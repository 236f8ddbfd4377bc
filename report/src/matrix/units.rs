//! Execution: the matrix's work, cut into units that machines can share (`report matrix --shard
//! K/N`), each unit run here, and the units' results gathered back from the shards.
//!
//! A matrix run is a few hundred independent pieces of work: one model run per distinct model
//! of a row (the same spec judging several faults is run once), one seed search per simulator
//! line of a cell, the broken variants' checks, and the contract findings' run sets. None of
//! them reads another's result. So the run is done in two steps:
//!
//! 1. *execute*: the [`plan`] lists the units in a fixed order, a pure function of the options
//!    that shape the report; shard K of N executes the units whose index `i` has
//!    `i % N == K - 1` and keeps each one's result ([`UnitResult`]: verdicts, counts, the model
//!    traces' text; never a simulator's records);
//! 2. *render*: with every unit's result in hand, the cells, their trace files and the markdown
//!    are written exactly as one machine writes them. The simulator's trace files are made in
//!    this step, by running the one failing seed again (a seed's run is a function of the
//!    seed), so a shard's file holds no simulator trace.
//!
//! One machine runs shard 1 of 1 and renders at once; `cassalock merge` renders from every
//! shard's file. The bytes are the same either way because rendering reads only the results,
//! and a result is a function of its unit and the options (a search stopped by its wall-time
//! cap is the exception, and is reported as such wherever it ran).
//!
//! Units are dealt round-robin, not by cost: a model run can take a minute where a seed search
//! takes a second, so shards are balanced in count, not in time.

use std::collections::BTreeMap;
use std::time::Duration;

use cassalock_judge::ClaimId;
use cassalock_models::check::{Limits, Report, StoppedBy, Verdict};
use cassalock_models::{build as build_model, Spec};
use serde::{Deserialize, Serialize};

use super::claims::all_sim_claims;
use super::family_sim::client_bugs;
use super::grid::{Column, MatrixRow, Row};
use super::judgement::claim_text;
use super::mutants::{MUTANT_MODELS, MUTANT_SIMS};
use super::options::{MatrixError, MatrixOptions};
use super::seed_search::{client_bug_search, family_one_seed, one_seed, search, Budget, SimResult};
use super::sources::{sources, Source};

/// One unit of a matrix run's work.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Unit {
    /// A model run of `row`, shown first in `column`'s cell (later cells of the same spec
    /// point there).
    Model {
        row: Row,
        column: Column,
        spec: Spec,
        label: &'static str,
    },
    /// The seed search of simulator line `source` (its index in [`sources`]) of a cell, thesis
    /// simulator or the families'.
    Search { row: Row, column: Column, source: usize },
    /// A broken variant's model run: [`MUTANT_MODELS`]`[i]`.
    MutantModel(usize),
    /// A broken variant's seed search in the simulator, for the old or queue lock:
    /// [`MUTANT_SIMS`]`[i]`.
    MutantSim(usize, Row),
    /// A planted client bug's seed search: [`client_bugs`]`()[i]`.
    ClientBug(usize),
    /// A run set of the contract findings: `contract_findings::keys()[i]`.
    ContractSet(usize),
}

impl Unit {
    /// What the progress line says while the unit runs.
    pub(super) fn label(&self) -> String {
        match self {
            Unit::Model { row, column, .. } | Unit::Search { row, column, .. } => {
                format!("{} / {}", row.key(), column.key())
            }
            Unit::MutantModel(_) | Unit::MutantSim(..) | Unit::ClientBug(_) => "mutants".into(),
            Unit::ContractSet(_) => "contract findings".into(),
        }
    }
}

/// Every unit of a matrix run with these options, in the order the shards index them.
pub(super) fn plan(options: &MatrixOptions) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    for row in options.rows() {
        for &column in row.columns() {
            for (index, source) in sources(row, column).into_iter().enumerate() {
                match source {
                    Source::NotApplicable(_) => {}
                    Source::Model { spec, label } => {
                        let known = units
                            .iter()
                            .any(|unit| matches!(unit, Unit::Model { row: r, spec: s, .. } if *r == row && *s == spec));
                        if !known {
                            units.push(Unit::Model {
                                row,
                                column,
                                spec,
                                label,
                            });
                        }
                    }
                    Source::Sim { .. } | Source::FamilySim { .. } => units.push(Unit::Search {
                        row,
                        column,
                        source: index,
                    }),
                }
            }
        }
    }
    for (index, mutant) in MUTANT_MODELS.iter().enumerate() {
        // `--thesis-only` leaves out the other families' rows, their client bugs with them.
        if !(options.thesis_only && mutant.mutant.is_family_client_bug()) {
            units.push(Unit::MutantModel(index));
        }
    }
    for index in 0..MUTANT_SIMS.len() {
        units.push(Unit::MutantSim(index, Row::Old));
        units.push(Unit::MutantSim(index, Row::Queue));
    }
    if !options.thesis_only {
        units.extend((0..client_bugs().len()).map(Unit::ClientBug));
    }
    units.extend((0..crate::contract_findings::keys().len()).map(Unit::ContractSet));
    units
}

/// What one unit found: all rendering needs of it, and nothing a seed can recompute.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum UnitResult {
    Model(ModelOutcome),
    Search(SimResult),
    /// Boxed: a run set's figures are several times a search's.
    Contract(Box<crate::contract_findings::Figures>),
}

/// A model run's verdicts and traces, kept from its [`Report`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelOutcome {
    pub title: String,
    /// Our graph's state count (the cell shows it).
    pub graph_states: usize,
    pub rows: Vec<ModelRow>,
    /// The machine's own limit (wall time or resident memory) cut the check short: where it
    /// stopped, and so its state count and bounded verdicts, depend on this machine's speed.
    /// `None`: it ran to the end, to a violation, or to its state limit (the same everywhere).
    #[serde(default)]
    pub machine_limit: Option<String>,
}

/// One property of a model run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelRow {
    #[serde(with = "claim_text")]
    pub claim: ClaimId,
    pub property: String,
    pub kind: String,
    pub verdict: Verdict,
    pub detail: Option<String>,
    /// The trace as its file prints it, and its length in steps.
    pub trace: Option<(String, usize)>,
    /// The trace's path as an event record (JSON lines, docs/events.md), where the model writes
    /// one: drawn as the trace's timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
}

impl ModelOutcome {
    pub(super) fn of(report: &Report) -> ModelOutcome {
        ModelOutcome {
            title: report.title.clone(),
            graph_states: report.graph_states,
            machine_limit: match report.stopped_by {
                Some(StoppedBy::Time) => Some("its time limit".to_owned()),
                Some(StoppedBy::Memory) => Some("its memory limit".to_owned()),
                Some(StoppedBy::States) | None => None,
            },
            rows: report
                .rows
                .iter()
                .map(|row| ModelRow {
                    claim: row.claim,
                    property: row.property.to_owned(),
                    kind: row.kind.to_owned(),
                    verdict: row.verdict.clone(),
                    detail: row.detail.clone(),
                    trace: row.trace.as_ref().map(|trace| (trace.to_string(), trace.steps)),
                    record: row.record.as_ref().map(|record| {
                        let mut lines = Vec::new();
                        cassalock_judge::event::write(&mut lines, &record.header, &record.events)
                            .expect("writing to memory does not fail");
                        String::from_utf8(lines).expect("records are written as UTF-8")
                    }),
                })
                .collect(),
        }
    }

    /// The row of `claim` (a model run for a broken variant checks that claim alone).
    pub(super) fn row(&self, claim: ClaimId) -> Result<&ModelRow, MatrixError> {
        self.rows
            .iter()
            .find(|row| row.claim == claim)
            .ok_or_else(|| MatrixError::Shard(format!("{}: no property {claim}", self.title)))
    }
}

/// Run one unit. Model runs check the checker's own cross-checks here, where they ran.
pub(super) fn execute(
    unit: &Unit,
    pool: &rayon::ThreadPool,
    options: &MatrixOptions,
) -> Result<UnitResult, MatrixError> {
    let budget = Budget::of(options);
    let model = |spec: &Spec, label: &str, limits: Limits| -> Result<ModelOutcome, MatrixError> {
        let report = build_model(spec)
            .map_err(|source| MatrixError::Model {
                label: label.to_owned(),
                source,
            })?
            .check(limits);
        if !report.internal_errors.is_empty() {
            return Err(MatrixError::CheckerDisagreement {
                label: label.to_owned(),
                errors: report.internal_errors.clone(),
            });
        }
        Ok(ModelOutcome::of(&report))
    };
    Ok(match unit {
        Unit::Model { spec, label, .. } => UnitResult::Model(model(spec, label, Limits::default())?),
        Unit::Search { row, column, source } => {
            let (row, column) = (*row, *column);
            let claims = all_sim_claims(row);
            let result = match sources(row, column).into_iter().nth(*source) {
                Some(Source::Sim {
                    scenario,
                    options: sim_options,
                    firing,
                    ..
                }) => search(
                    pool,
                    &|seed| one_seed(row, scenario, &sim_options, firing, &claims, seed),
                    &claims,
                    budget,
                ),
                Some(Source::FamilySim { scenario, .. }) => {
                    search(pool, &|seed| family_one_seed(scenario, &claims, seed), &claims, budget)
                }
                other => unreachable!("the plan lists searches only: {other:?}"),
            };
            UnitResult::Search(result)
        }
        Unit::MutantModel(index) => {
            let mutant = &MUTANT_MODELS[*index];
            let limits = Limits {
                stop_at_first_violation: true,
                only_claim: Some(mutant.claim.to_string()),
                ..Limits::default()
            };
            UnitResult::Model(model(&mutant.spec(), &format!("{} mutant", mutant.claim), limits)?)
        }
        Unit::MutantSim(index, row) => {
            let (row, mutant) = (*row, &MUTANT_SIMS[*index]);
            let options = mutant.options();
            UnitResult::Search(search(
                pool,
                &|seed| one_seed(row, mutant.scenario, &options, mutant.firing, &[mutant.claim], seed),
                &[mutant.claim],
                budget,
            ))
        }
        Unit::ClientBug(index) => UnitResult::Search(client_bug_search(pool, *index, budget)),
        Unit::ContractSet(index) => UnitResult::Contract(Box::new(crate::contract_findings::run_key(
            pool,
            *index,
            options.contract_seeds,
            options.cell_time,
            options.jobs,
        ))),
    })
}

/// The options that shape a matrix report (not where it goes, not the thread count): shards
/// merge only with shards of the same sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixSweep {
    pub max_seeds: u64,
    pub cell_time: Duration,
    pub contract_seeds: u64,
    pub thesis_only: bool,
}

impl MatrixSweep {
    pub fn of(options: &MatrixOptions) -> MatrixSweep {
        MatrixSweep {
            max_seeds: options.max_seeds,
            cell_time: options.cell_time,
            contract_seeds: options.contract_seeds,
            thesis_only: options.thesis_only,
        }
    }

    /// Options that render this sweep into `out`.
    pub fn options(&self, out: std::path::PathBuf, jobs: usize) -> MatrixOptions {
        MatrixOptions {
            out,
            max_seeds: self.max_seeds,
            cell_time: self.cell_time,
            contract_seeds: self.contract_seeds,
            jobs,
            thesis_only: self.thesis_only,
        }
    }
}

/// One shard's results: the units `i % n == k - 1` of the plan, by index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatrixShard {
    pub sweep: MatrixSweep,
    pub k: u64,
    pub n: u64,
    /// The plan's length where the shard ran (a merge with another plan is refused).
    pub units: usize,
    pub results: Vec<(usize, UnitResult)>,
}

/// Every unit's result, from shards that together cover the plan once.
pub(super) fn gather(units: usize, shards: &[MatrixShard]) -> Result<Vec<UnitResult>, MatrixError> {
    let mut by_index: BTreeMap<usize, UnitResult> = BTreeMap::new();
    for shard in shards {
        if shard.units != units {
            return Err(MatrixError::Shard(format!(
                "shard {}/{} was cut from a plan of {} units; this cassalock plans {units}: run every shard \
                 with the same cassalock",
                shard.k, shard.n, shard.units
            )));
        }
        for (index, result) in &shard.results {
            if *index >= units || (*index as u64) % shard.n != shard.k - 1 {
                return Err(MatrixError::Shard(format!(
                    "shard {}/{} holds unit {index}, which is not one of its units",
                    shard.k, shard.n
                )));
            }
            if by_index.insert(*index, result.clone()).is_some() {
                return Err(MatrixError::Shard(format!(
                    "unit {index} is given twice (shard {}/{} and another): give each shard once",
                    shard.k, shard.n
                )));
            }
        }
    }
    if let Some(missing) = (0..units).find(|index| !by_index.contains_key(index)) {
        let n = shards.first().map_or(1, |shard| shard.n);
        return Err(MatrixError::Shard(format!(
            "unit {missing} has no result: shard {}/{n} is missing or incomplete",
            missing as u64 % n + 1
        )));
    }
    Ok(by_index.into_values().collect())
}

/// Every unit of the plan with its result, looked up by unit while rendering.
pub(super) struct Results {
    plan: Vec<Unit>,
    results: Vec<UnitResult>,
}

impl Results {
    /// The plan of `options`, with results from shards that cover it once.
    pub(super) fn gathered(options: &MatrixOptions, shards: &[MatrixShard]) -> Result<Results, MatrixError> {
        let plan = plan(options);
        let results = gather(plan.len(), shards)?;
        Ok(Results { plan, results })
    }

    fn of(&self, wanted: &Unit) -> &UnitResult {
        let index = self
            .plan
            .iter()
            .position(|unit| unit == wanted)
            .unwrap_or_else(|| panic!("{wanted:?} is not a unit of the plan"));
        &self.results[index]
    }

    fn mismatch(wanted: &Unit, expected: &str, found: &UnitResult) -> MatrixError {
        MatrixError::Shard(format!("{wanted:?}: {expected} expected, found {found:?}"))
    }

    pub(super) fn model(&self, wanted: &Unit) -> Result<&ModelOutcome, MatrixError> {
        match self.of(wanted) {
            UnitResult::Model(outcome) => Ok(outcome),
            other => Err(Self::mismatch(wanted, "a model run's result", other)),
        }
    }

    pub(super) fn search(&self, wanted: &Unit) -> Result<&SimResult, MatrixError> {
        match self.of(wanted) {
            UnitResult::Search(result) => Ok(result),
            other => Err(Self::mismatch(wanted, "a seed search's result", other)),
        }
    }

    pub(super) fn contract(&self, wanted: &Unit) -> Result<&crate::contract_findings::Figures, MatrixError> {
        match self.of(wanted) {
            UnitResult::Contract(figures) => Ok(figures),
            other => Err(Self::mismatch(wanted, "a contract run set's figures", other)),
        }
    }
}
