//! Running a model: stateright's checker for the safety properties, our graph for liveness,
//! shortest traces and figures; one row per property.
//!
//! Two explorations of the same `Model` run and must agree:
//! - stateright's BFS checker (two threads, with state and time limits) judges every
//!   `always` / `sometimes` property and counts unique states;
//! - our breadth-first graph (`liveness::Graph`) evaluates the same property functions on every
//!   state, so it also knows the *shortest* path to each discovery (stateright's multi-threaded
//!   BFS does not promise that), judges the liveness obligations, and keeps the extreme value
//!   of each measure (S1's staleness, K3's stuck time, F's overtakes) with a path to it.
//!
//! Where both ran to completion they must agree on the state count and on every verdict; a
//! disagreement is reported as an internal error. A run cut short by a limit is never reported
//! as "holds".

use std::fmt;
use std::hash::Hash;
use std::time::{Duration, Instant};

use cassalock_judge::{AsClaim, ClaimId};
use stateright::{Checker, Expectation, Model};

use crate::liveness::{Fairness, Graph, Lasso, LivenessVerdict, Obligation};
use crate::memory::MemoryGuard;
pub use crate::memory::{default_max_memory_bytes, machine_memory_bytes, memory_allows};

/// stateright may generate this many states (repeats included) per unique state of the budget.
const GENERATED_PER_UNIQUE: usize = 32;

/// A number worth reporting about the reachable states (its maximum is reported).
pub struct Measure<M: Model> {
    pub name: &'static str,
    pub unit: &'static str,
    pub value: fn(&M, &M::State) -> Option<u64>,
}

/// What the CLI and the tests need from a model, beyond stateright's `Model`.
pub trait CheckedModel: Model + Fairness + Clone + Send + Sync + 'static
where
    Self::State: Clone + fmt::Debug + Hash + PartialEq + Send + Sync + 'static,
    Self::Action: Clone + fmt::Debug + PartialEq + Send + Sync + 'static,
{
    /// One line: model, sizes, faults.
    fn title(&self) -> String;
    fn obligations(&self) -> Vec<Obligation<Self>>;
    fn measures(&self) -> Vec<Measure<Self>> {
        Vec::new()
    }
    /// The clock bound of a ticks-mode model, which caps every verdict.
    fn clock_bound(&self) -> Option<u8>;
    /// Replay `action` from `state`: the next state and lines describing what happened.
    fn describe_step(&self, state: &Self::State, action: &Self::Action) -> (Self::State, Vec<String>);
    /// One line about a state: clocks, holders, rows.
    fn describe_state(&self, state: &Self::State) -> String;
    /// The actor of an action, for traces ("t1", "clock").
    fn actor(&self, action: &Self::Action) -> String;
    /// A path from initial state `init` as the event record every driver writes (`None`:
    /// this model does not write one).
    fn record_of_path(&self, init: usize, actions: &[Self::Action]) -> Option<EventRecord> {
        let _ = (init, actions);
        None
    }
    /// The claim IDs this model checks: the first word of each property's and liveness
    /// obligation's name.
    fn claim_ids(&self) -> Vec<String> {
        self.properties()
            .into_iter()
            .map(|p| p.name)
            .chain(self.obligations().into_iter().map(|o| o.name))
            .map(|name| name.split_whitespace().next().unwrap_or("").to_owned())
            .collect()
    }
}

/// A run's event record (`cassalock_judge::event`).
pub type EventRecord = cassalock_judge::event::Record;

/// Limits on one run.
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_states: usize,
    pub max_seconds: u64,
    pub checker_threads: usize,
    /// Stop at the first violated `always` property (its shortest counterexample is still
    /// found: the search is breadth-first). Other properties are then reported as bounded and
    /// liveness is not checked.
    pub stop_at_first_violation: bool,
    /// Check only the property (or liveness obligation) with this claim ID ("T1", "K3").
    pub only_claim: Option<String>,
    /// stateright, then our graph, stop expanding states once the process's resident memory
    /// passes this (a breadth-first frontier holds whole states; a fast machine reaches more of
    /// them within the time limit): the run is then bounded, and says so.
    pub max_memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_states: 5_000_000,
            max_seconds: 300,
            checker_threads: 2,
            stop_at_first_violation: false,
            only_claim: None,
            max_memory_bytes: default_max_memory_bytes(),
        }
    }
}

/// A verdict on one property (serialized in the matrix's shard files).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Verdict {
    /// Every reachable state was checked.
    Holds,
    /// Every reachable state with clocks up to the bound was checked.
    HoldsWithinClockBound(u8),
    Violated,
    /// A state, depth or time limit was hit before a verdict.
    Bounded(String),
    /// A `sometimes` property: an example exists.
    Reachable,
    /// A `sometimes` property: no reachable state has it.
    Unreachable,
}

impl Verdict {
    pub fn is_violation(&self) -> bool {
        matches!(self, Verdict::Violated)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Holds => write!(f, "holds"),
            Verdict::HoldsWithinClockBound(max) => {
                write!(f, "holds within bound (clock <= {max} ticks)")
            }
            Verdict::Violated => write!(f, "VIOLATED"),
            Verdict::Bounded(why) => write!(f, "bounded ({why})"),
            Verdict::Reachable => write!(f, "reachable"),
            Verdict::Unreachable => write!(f, "unreachable"),
        }
    }
}

/// A numbered trace.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub lines: Vec<String>,
    pub steps: usize,
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// The claim a property, obligation or measure is about: the first word of its name, parsed
/// once. Every name must start with a claim ID (`cassalock_judge::ClaimId`).
pub fn claim_of(name: &str) -> ClaimId {
    ClaimId::of_name(name).unwrap_or_else(|| panic!("{name:?} does not start with a claim ID"))
}

/// One row of the report.
#[derive(Clone, Debug)]
pub struct Row {
    /// The claim, parsed from the property name's first word.
    pub claim: ClaimId,
    pub property: &'static str,
    pub kind: &'static str,
    pub verdict: Verdict,
    pub unique_states: usize,
    pub depth: usize,
    pub seconds: f64,
    pub detail: Option<String>,
    pub trace: Option<Trace>,
    /// The trace's path as an event record, where the model writes one (a safety property's
    /// counterexample, a reachable state's witness).
    pub record: Option<EventRecord>,
}

/// The limit that cut a check short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoppedBy {
    /// The process passed `Limits::max_memory_bytes`.
    Memory,
    /// `Limits::max_seconds` ran out (stateright's search, or our graph after it).
    Time,
    /// `Limits::max_states`: our graph's budget, or the generated states stateright may make.
    States,
}

/// The outcome of checking one model.
#[derive(Clone, Debug)]
pub struct Report {
    pub title: String,
    pub rows: Vec<Row>,
    pub figures: Vec<(String, Option<Trace>)>,
    /// stateright's count, and ours.
    pub stateright_states: usize,
    pub graph_states: usize,
    pub complete: bool,
    /// Which limit cut the check short (`None`: none did; a stop at the first violation is
    /// not a limit).
    pub stopped_by: Option<StoppedBy>,
    pub internal_errors: Vec<String>,
}

impl Report {
    /// The row of `claim` (a [`ClaimId`], or its text).
    pub fn row(&self, claim: impl AsClaim) -> &Row {
        let claim = claim.claim_id();
        self.rows
            .iter()
            .find(|row| row.claim == claim)
            .unwrap_or_else(|| panic!("no property {claim} in {}", self.title))
    }

    pub fn any_violation(&self) -> bool {
        self.rows.iter().any(|row| row.verdict.is_violation())
    }
}

/// Check `model` within `limits`.
pub fn check<M>(model: &M, limits: Limits) -> Report
where
    M: CheckedModel,
    M::State: Clone + fmt::Debug + Hash + PartialEq + Send + Sync + 'static,
    M::Action: Clone + fmt::Debug + PartialEq + Send + Sync + 'static,
{
    let first_word = |name: &str| name.split_whitespace().next().unwrap_or("").to_owned();
    let wanted = |name: &str| limits.only_claim.as_ref().is_none_or(|only| first_word(name) == *only);
    let mut properties = model.properties();
    properties.retain(|p| wanted(p.name));
    let mut obligations = model.obligations();
    obligations.retain(|o| wanted(o.name));
    let mut measures = model.measures();
    measures.retain(|m| wanted(m.name));

    // 1. stateright. `max_seconds` bounds the whole check: stateright, then our graph in
    // what is left.
    let started = Instant::now();
    let deadline = started.checked_add(Duration::from_secs(limits.max_seconds));
    let guard = MemoryGuard::start(limits.max_memory_bytes);
    let stateright = Stateright::run(model, &properties, &limits, started);

    // 2. Our graph, with the same properties evaluated on every state.
    let started = Instant::now();
    let probe = Probe::new(&properties, &measures);
    let graph = Graph::build_within(model, &obligations, limits.max_states, deadline, |id, state| {
        probe.visit(model, id, state) && limits.stop_at_first_violation
    });
    let graph_seconds = started.elapsed().as_secs_f64();
    let memory_hit = guard.finish();
    let graph_complete = !graph.truncated;
    let stopped_by = if memory_hit {
        Some(StoppedBy::Memory)
    } else if stateright.out_of_time || graph.timed_out {
        Some(StoppedBy::Time)
    } else if stateright.out_of_states || (graph.truncated && !graph.stopped_early) {
        Some(StoppedBy::States)
    } else {
        None
    };

    let timed_out = stateright.timed_out();
    let all_found = properties.iter().all(|p| stateright.discoveries.contains_key(p.name));
    let complete = graph_complete && !timed_out && (stateright.states == graph.state_count() || all_found);
    let mut internal_errors = Vec::new();
    if graph_complete && !timed_out && !all_found && stateright.states != graph.state_count() {
        internal_errors.push(format!(
            "stateright counted {} unique states, our graph {}: the explorations disagree",
            stateright.states,
            graph.state_count()
        ));
    }

    let explored = Explored {
        model,
        limits: &limits,
        stateright: &stateright,
        graph: &graph,
        graph_seconds,
        probe: &probe,
        complete,
        memory_hit,
    };
    let mut rows = explored.property_rows(&properties, &mut internal_errors);
    rows.extend(explored.obligation_rows(&obligations));
    let figures = explored.figures(&measures);

    Report {
        title: model.title(),
        rows,
        figures,
        stateright_states: stateright.states,
        graph_states: graph.state_count(),
        complete,
        stopped_by,
        internal_errors,
    }
}

/// What stateright's search found, copied out of its checker.
struct Stateright<M: Model> {
    seconds: f64,
    states: usize,
    depth: usize,
    discoveries: std::collections::HashMap<&'static str, stateright::Path<M::State, M::Action>>,
    /// The generated states stateright was allowed (see `Stateright::run`).
    generated_budget: usize,
    cut_by_memory: bool,
    out_of_time: bool,
    out_of_states: bool,
}

impl<M> Stateright<M>
where
    M: CheckedModel,
    M::State: Clone + fmt::Debug + Hash + PartialEq + Send + Sync + 'static,
    M::Action: Clone + fmt::Debug + PartialEq + Send + Sync + 'static,
{
    /// stateright's BFS on `properties`, within `limits` (from `started`).
    fn run(model: &M, properties: &[stateright::Property<M>], limits: &Limits, started: Instant) -> Self {
        // stateright's target counts generated states, repeats included: allow a generous
        // multiple of the unique-state budget, and call the run bounded if it was reached.
        let generated_budget = limits.max_states.saturating_mul(GENERATED_PER_UNIQUE);
        let names: std::collections::BTreeSet<&'static str> = properties.iter().map(|p| p.name).collect();
        let failures: std::collections::BTreeSet<&'static str> = properties
            .iter()
            .filter(|p| p.expectation.discovery_is_failure())
            .map(|p| p.name)
            .collect();
        let finish_when = if limits.stop_at_first_violation {
            stateright::HasDiscoveries::AnyOf(failures)
        } else {
            stateright::HasDiscoveries::AllOf(names)
        };
        let checker = model
            .clone()
            .checker()
            .finish_when(finish_when)
            .threads(limits.checker_threads.max(2))
            .target_state_count(generated_budget)
            .timeout(Duration::from_secs(limits.max_seconds))
            .spawn_bfs()
            .join();
        let seconds = started.elapsed().as_secs_f64();
        let found = Stateright {
            seconds,
            states: checker.unique_state_count(),
            depth: checker.max_depth(),
            discoveries: checker.discoveries(),
            generated_budget,
            // The guard keeps watching while our graph is built (after this): the graph stops too.
            cut_by_memory: !memory_allows(),
            out_of_time: seconds >= limits.max_seconds as f64,
            out_of_states: checker.state_count() >= generated_budget,
        };
        // What stateright found is copied out above: its fingerprints and paths go before our
        // graph is built, so the two explorations do not hold their memory at once.
        drop(checker);
        found
    }

    /// A limit cut stateright's search short.
    fn timed_out(&self) -> bool {
        self.out_of_time || self.out_of_states || self.cut_by_memory
    }
}

/// Both explorations' findings, from which the rows and figures are made.
struct Explored<'a, M: CheckedModel>
where
    M::State: Clone + fmt::Debug + Hash + PartialEq + Send + Sync + 'static,
    M::Action: Clone + fmt::Debug + PartialEq + Send + Sync + 'static,
{
    model: &'a M,
    limits: &'a Limits,
    stateright: &'a Stateright<M>,
    graph: &'a Graph<M>,
    graph_seconds: f64,
    probe: &'a Probe<'a, M>,
    /// Both explorations ran to the end and agree on the state count (or found everything).
    complete: bool,
    memory_hit: bool,
}

impl<M> Explored<'_, M>
where
    M: CheckedModel,
    M::State: Clone + fmt::Debug + Hash + PartialEq + Send + Sync + 'static,
    M::Action: Clone + fmt::Debug + PartialEq + Send + Sync + 'static,
{
    /// Why a property with no discovery is bounded: the limit that stopped the search.
    fn bound_reason(&self) -> String {
        let limits = self.limits;
        if self.memory_hit {
            format!(
                "memory limit of {} MiB resident: the exploration stopped expanding states",
                limits.max_memory_bytes >> 20
            )
        } else if self.stateright.out_of_time || self.graph.timed_out {
            format!("time limit of {} s", limits.max_seconds)
        } else if self.stateright.timed_out() {
            format!(
                "{} generated states, repeats included ({GENERATED_PER_UNIQUE} x the state limit of {})",
                self.stateright.generated_budget, limits.max_states
            )
        } else {
            format!("state limit of {}", limits.max_states)
        }
    }

    /// One row per safety (`always`, `sometimes`) property; a disagreement between the two
    /// explorations goes to `internal_errors`.
    fn property_rows(&self, properties: &[stateright::Property<M>], internal_errors: &mut Vec<String>) -> Vec<Row> {
        let (model, graph, stateright) = (self.model, self.graph, self.stateright);
        let mut rows = Vec::new();
        for (p, property) in properties.iter().enumerate() {
            let found_by_stateright = stateright.discoveries.contains_key(property.name);
            let found_by_graph = self.probe.first_discovery(p);
            if self.complete && !self.limits.stop_at_first_violation && found_by_stateright != found_by_graph.is_some()
            {
                internal_errors.push(format!(
                    "{}: stateright {} a discovery, our graph {}",
                    property.name,
                    if found_by_stateright { "made" } else { "did not make" },
                    if found_by_graph.is_some() { "did" } else { "did not" }
                ));
            }
            let discovered = found_by_stateright || found_by_graph.is_some();
            let verdict = match (&property.expectation, discovered) {
                (Expectation::Always | Expectation::Eventually, true) => Verdict::Violated,
                (Expectation::Sometimes, true) => Verdict::Reachable,
                (_, false) if graph.stopped_early => Verdict::Bounded("stopped at the first violation".into()),
                (_, false) if !self.complete => Verdict::Bounded(self.bound_reason()),
                (Expectation::Always, false) => match model.clock_bound() {
                    Some(max) => Verdict::HoldsWithinClockBound(max),
                    None => Verdict::Holds,
                },
                (Expectation::Sometimes, false) => Verdict::Unreachable,
                (Expectation::Eventually, false) => Verdict::Holds,
            };
            let (trace, record) = self.discovery_trace(property.name, found_by_graph);
            rows.push(Row {
                claim: claim_of(property.name),
                property: property.name,
                kind: match property.expectation {
                    Expectation::Always => "always",
                    Expectation::Sometimes => "sometimes",
                    Expectation::Eventually => "eventually",
                },
                verdict,
                unique_states: stateright.states,
                depth: stateright.depth,
                seconds: stateright.seconds,
                detail: None,
                trace,
                record,
            });
        }
        rows
    }

    /// The trace (and event record) of a property's discovery. Our graph's path is the
    /// shortest. When the graph stopped at a limit before reaching the violation,
    /// stateright's path (found breadth-first on several threads, so short but not always
    /// the shortest) is shown instead, and says so.
    fn discovery_trace(&self, name: &str, found_by_graph: Option<u32>) -> (Option<Trace>, Option<EventRecord>) {
        let model = self.model;
        match found_by_graph {
            Some(node) => {
                let path = self.graph.path_to(node);
                (Some(path_trace(model, &path)), model.record_of_path(path.0, &path.1))
            }
            None => match self.stateright.discoveries.get(name) {
                Some(path) => {
                    let mut states_and_actions = path.clone().into_vec();
                    let init = states_and_actions
                        .first()
                        .and_then(|(first, _)| model.init_states().iter().position(|init| init == first))
                        .unwrap_or(0);
                    let actions: Vec<M::Action> =
                        states_and_actions.drain(..).filter_map(|(_, action)| action).collect();
                    let record = model.record_of_path(init, &actions);
                    let mut trace = path_trace(model, &(init, actions));
                    trace.lines.insert(
                        0,
                        "   (stateright's path: our graph stopped at a limit before this state, so it may not be the shortest)"
                            .to_owned(),
                    );
                    (Some(trace), record)
                }
                None => (None, None),
            },
        }
    }

    /// One row per liveness obligation, judged on our graph.
    fn obligation_rows(&self, obligations: &[Obligation<M>]) -> Vec<Row> {
        let (model, graph) = (self.model, self.graph);
        let mut rows = Vec::new();
        for (o, obligation) in obligations.iter().enumerate() {
            if graph.stopped_early {
                rows.push(Row {
                    claim: claim_of(obligation.name),
                    property: obligation.name,
                    kind: "liveness",
                    verdict: Verdict::Bounded("not checked: stopped at the first violation".into()),
                    unique_states: graph.state_count(),
                    depth: graph.depth(),
                    seconds: self.graph_seconds,
                    detail: None,
                    trace: None,
                    record: None,
                });
                continue;
            }
            let started = Instant::now();
            let verdict = graph.check(obligations, o);
            let seconds = self.graph_seconds + started.elapsed().as_secs_f64();
            let (verdict, detail, trace) = match verdict {
                LivenessVerdict::Holds => (
                    model
                        .clock_bound()
                        .map_or(Verdict::Holds, Verdict::HoldsWithinClockBound),
                    Some("no deadlock, no weakly fair cycle that starves it".to_owned()),
                    None,
                ),
                LivenessVerdict::Violated(lasso) => {
                    let detail = lasso_summary(&lasso);
                    (Verdict::Violated, Some(detail), Some(lasso_trace(model, &lasso)))
                }
                LivenessVerdict::Bounded { reason, lasso } => {
                    let trace = lasso.as_ref().map(|lasso| lasso_trace(model, lasso));
                    (Verdict::Bounded(reason), lasso.map(|l| lasso_summary(&l)), trace)
                }
            };
            rows.push(Row {
                claim: claim_of(obligation.name),
                property: obligation.name,
                kind: "liveness",
                verdict,
                unique_states: graph.state_count(),
                depth: graph.depth(),
                seconds,
                detail,
                trace,
                record: None,
            });
        }
        rows
    }

    /// Each measure's extreme, with a path to it. A figure is over every reachable state only
    /// when our graph reached them all.
    fn figures(&self, measures: &[Measure<M>]) -> Vec<(String, Option<Trace>)> {
        let graph = self.graph;
        let scope = if graph.truncated {
            format!(" (bounded: over the {} states our graph explored)", graph.state_count())
        } else {
            String::new()
        };
        measures
            .iter()
            .enumerate()
            .map(|(m, measure)| match self.probe.extreme(m) {
                Some((0, _)) if graph.truncated => (format!("{}: 0{scope}", measure.name), None),
                Some((0, _)) => (format!("{}: 0 in every reachable state", measure.name), None),
                Some((value, node)) => {
                    let path = graph.path_to(node);
                    (
                        format!(
                            "{}: at most {} {} (reached in {} steps){scope}",
                            measure.name,
                            value,
                            measure.unit,
                            path.1.len()
                        ),
                        Some(path_trace(self.model, &path)),
                    )
                }
                None => (format!("{}: never applies{scope}", measure.name), None),
            })
            .collect()
    }
}

fn lasso_summary<A>(lasso: &Lasso<A>) -> String {
    if lasso.is_deadlock() {
        format!("{}: deadlock after {} steps", lasso.subject, lasso.stem.len())
    } else {
        format!(
            "{}: starved for ever in a fair cycle of {} steps, entered after {} steps",
            lasso.subject,
            lasso.cycle.len(),
            lasso.stem.len()
        )
    }
}

/// Evaluates properties and measures on every state the graph visits.
struct Probe<'a, M: Model> {
    properties: &'a [stateright::Property<M>],
    measures: &'a [Measure<M>],
    first: std::cell::RefCell<Vec<Option<u32>>>,
    extremes: std::cell::RefCell<Vec<Option<(u64, u32)>>>,
}

impl<'a, M: Model> Probe<'a, M> {
    fn new(properties: &'a [stateright::Property<M>], measures: &'a [Measure<M>]) -> Self {
        Probe {
            properties,
            measures,
            first: std::cell::RefCell::new(vec![None; properties.len()]),
            extremes: std::cell::RefCell::new(vec![None; measures.len()]),
        }
    }

    /// Returns true when an `always` property was first violated at this state.
    fn visit(&self, model: &M, id: u32, state: &M::State) -> bool {
        let mut violated_now = false;
        let mut first = self.first.borrow_mut();
        for (p, property) in self.properties.iter().enumerate() {
            if first[p].is_some() {
                continue;
            }
            let holds = (property.condition)(model, state);
            let discovery = match property.expectation {
                Expectation::Always => !holds,
                Expectation::Sometimes => holds,
                Expectation::Eventually => false,
            };
            if discovery {
                first[p] = Some(id);
                violated_now |= property.expectation == Expectation::Always;
            }
        }
        let mut extremes = self.extremes.borrow_mut();
        for (m, measure) in self.measures.iter().enumerate() {
            if let Some(value) = (measure.value)(model, state) {
                if extremes[m].is_none_or(|(best, _)| value > best) {
                    extremes[m] = Some((value, id));
                }
            }
        }
        violated_now
    }

    fn first_discovery(&self, p: usize) -> Option<u32> {
        self.first.borrow()[p]
    }

    fn extreme(&self, m: usize) -> Option<(u64, u32)> {
        self.extremes.borrow()[m]
    }
}

/// Replay a path from an initial state into numbered lines.
pub fn path_trace<M>(model: &M, (init, actions): &(usize, Vec<M::Action>)) -> Trace
where
    M: CheckedModel,
    M::State: Clone + fmt::Debug + Hash + PartialEq + Send + Sync + 'static,
    M::Action: Clone + fmt::Debug + PartialEq + Send + Sync + 'static,
{
    let mut trace = Trace::default();
    let mut state = model.init_states().swap_remove(*init);
    trace
        .lines
        .push(format!("   0. initial state: {}", model.describe_state(&state)));
    append_steps(model, &mut state, actions, 1, &mut trace);
    trace
}

fn append_steps<M>(model: &M, state: &mut M::State, actions: &[M::Action], first_number: usize, trace: &mut Trace)
where
    M: CheckedModel,
    M::State: Clone + fmt::Debug + Hash + PartialEq + Send + Sync + 'static,
    M::Action: Clone + fmt::Debug + PartialEq + Send + Sync + 'static,
{
    for (offset, action) in actions.iter().enumerate() {
        let (next, lines) = model.describe_step(state, action);
        let number = first_number + offset;
        let actor = model.actor(action);
        let mut lines = lines.into_iter();
        trace
            .lines
            .push(format!("{number:>4}. {actor:<12} {}", lines.next().unwrap_or_default()));
        for line in lines {
            trace.lines.push(format!("      {:<12} {line}", ""));
        }
        trace
            .lines
            .push(format!("      {:<12} => {}", "", model.describe_state(&next)));
        *state = next;
        trace.steps += 1;
    }
}

/// A lasso as a trace: the stem, then the cycle, marked.
pub fn lasso_trace<M>(model: &M, lasso: &Lasso<M::Action>) -> Trace
where
    M: CheckedModel,
    M::State: Clone + fmt::Debug + Hash + PartialEq + Send + Sync + 'static,
    M::Action: Clone + fmt::Debug + PartialEq + Send + Sync + 'static,
{
    let mut trace = Trace::default();
    let mut state = model.init_states().swap_remove(lasso.init);
    trace
        .lines
        .push(format!("   0. initial state: {}", model.describe_state(&state)));
    append_steps(model, &mut state, &lasso.stem, 1, &mut trace);
    if lasso.is_deadlock() {
        trace.lines.push(format!(
            "      -- deadlock: no actor can take a step, and {} still waits",
            lasso.subject
        ));
    } else {
        let start = lasso.stem.len() + 1;
        trace.lines.push(format!(
            "      -- the cycle: steps {start}..{} repeat for ever; every actor enabled throughout takes a step, and {} never gets what it waits for",
            start + lasso.cycle.len() - 1,
            lasso.subject
        ));
        append_steps(model, &mut state, &lasso.cycle, start, &mut trace);
        trace
            .lines
            .push(format!("      -- back to the state after step {}", start - 1));
    }
    trace
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "model: {}", self.title)?;
        writeln!(f)?;
        let width = self.rows.iter().map(|row| row.property.len()).max().unwrap_or(8).max(8);
        writeln!(
            f,
            "{:<width$}  {:<9}  {:<40}  {:>13}  {:>5}  {:>8}",
            "property", "kind", "verdict", "unique states", "depth", "seconds"
        )?;
        for row in &self.rows {
            writeln!(
                f,
                "{:<width$}  {:<9}  {:<40}  {:>13}  {:>5}  {:>8.2}",
                row.property,
                row.kind,
                row.verdict.to_string(),
                row.unique_states,
                row.depth,
                row.seconds
            )?;
        }
        for row in &self.rows {
            if let Some(detail) = &row.detail {
                writeln!(f, "  {}: {detail}", row.claim)?;
            }
        }
        if !self.figures.is_empty() {
            writeln!(f)?;
            for (figure, _) in &self.figures {
                writeln!(f, "figure: {figure}")?;
            }
        }
        for error in &self.internal_errors {
            writeln!(f, "INTERNAL ERROR: {error}")?;
        }
        for row in &self.rows {
            if let (true, Some(trace)) = (
                row.verdict.is_violation() || matches!(row.verdict, Verdict::Reachable | Verdict::Bounded(_)),
                &row.trace,
            ) {
                writeln!(f)?;
                let what = match row.verdict {
                    Verdict::Reachable => "example",
                    Verdict::Violated => "counterexample",
                    _ => "counterexample that depends on the bound",
                };
                writeln!(
                    f,
                    "{} -- {} -- {what}, {} steps:",
                    row.property, row.verdict, trace.steps
                )?;
                write!(f, "{trace}")?;
            }
        }
        Ok(())
    }
}
