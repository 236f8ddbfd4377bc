//! Judging the cells: from the units' results to each cell's typed judgements, in source
//! order, writing the trace file of every violation found (a model's counterexample, or a
//! simulator's first failing seed run again with its full records).

use std::collections::BTreeMap;
use std::path::Path;

use cassalock_judge::{ClaimId, ClaimVerdict};
use cassalock_models::check::Verdict;
use cassalock_models::Spec;
use cassalock_sim::family::run_family;
use cassalock_sim::family::scenario::{build as build_family, replay_command};
use cassalock_sim::run::run;
use cassalock_sim::scenario::{build, SimOptions};
use cassalock_sim::trace::render;

use super::grid::{Column, MatrixRow, Row};
use super::judgement::{Cell, ClaimSearch, FirstFailure, Judgement, ModelClaim, SimClaim, TraceFile};
use super::marks::seeds;
use super::options::{MatrixError, MatrixOptions};
use super::seed_search::SimResult;
use super::sources::{algorithm, sources, Source};
use super::units::{ModelOutcome, Results, Unit};
use crate::{write_file, ReportError};

/// The typed cells of the rows a run judges, by (row, column).
pub(super) type Cells = BTreeMap<(Row, Column), Cell>;

/// Every cell of the rows `options` judges, from the units' `results`: writes the trace files
/// under `out_dir` (listed in `files`), and lists in `stopped_by_time` the searches the
/// wall-time cap stopped.
pub(super) fn judge_cells(
    options: &MatrixOptions,
    results: &Results,
    out_dir: &Path,
    files: &mut Vec<String>,
    stopped_by_time: &mut Vec<String>,
) -> Result<Cells, MatrixError> {
    let mut cells: Cells = BTreeMap::new();
    // Per row, the model runs shown so far (by spec) and the fault whose cell shows them.
    let mut model_runs: Vec<(Row, Spec, &'static str, Judgement)> = Vec::new();
    for row in options.rows() {
        for &column in row.columns() {
            let mut cell = Cell::new();
            for (index, source) in sources(row, column).into_iter().enumerate() {
                // The unit of this line if it is a simulator's (thesis or families').
                let search = Unit::Search {
                    row,
                    column,
                    source: index,
                };
                match source {
                    Source::NotApplicable(why) => cell.push(Judgement::NotApplicable(why)),
                    Source::Model { spec, label } => {
                        if let Some((_, _, shown_in, judgement)) =
                            model_runs.iter().find(|(r, s, _, _)| *r == row && *s == spec)
                        {
                            let mut same = judgement.clone();
                            if let Judgement::Model { same_run_as, .. } = &mut same {
                                *same_run_as = Some(*shown_in);
                            }
                            cell.push(same);
                            continue;
                        }
                        let outcome = results.model(&Unit::Model {
                            row,
                            column,
                            spec: spec.clone(),
                            label,
                        })?;
                        note_machine_limit(
                            stopped_by_time,
                            &format!("{} / {}: {label}", row.row_title(), column.name()),
                            outcome,
                        );
                        let judgement = model_judgement(row, column, label, outcome, out_dir, files)?;
                        model_runs.push((row, spec, column.name(), judgement.clone()));
                        cell.push(judgement);
                    }
                    Source::Sim {
                        scenario,
                        options: sim_options,
                        label,
                        ..
                    } => {
                        let result = results.search(&search)?;
                        note_stopped(stopped_by_time, (row, column, label), result);
                        cell.push(sim_judgement(
                            row,
                            column,
                            scenario,
                            &sim_options,
                            label,
                            result,
                            out_dir,
                            files,
                        )?);
                    }
                    Source::FamilySim { scenario, label } => {
                        let result = results.search(&search)?;
                        note_stopped(stopped_by_time, (row, column, label), result);
                        cell.push(family_judgement(row, column, scenario, label, result, out_dir, files)?);
                    }
                }
            }
            cells.insert((row, column), cell);
        }
    }
    Ok(cells)
}

/// A search the wall-time cap stopped is listed in `stopped_by_time` (its verdicts depend on
/// the machine that ran it).
fn note_stopped(stopped_by_time: &mut Vec<String>, (row, column, label): (Row, Column, &str), result: &SimResult) {
    if result.stopped_by_time {
        stopped_by_time.push(format!(
            "{} / {}: {label} (after {})",
            row.row_title(),
            column.name(),
            seeds(result.tried)
        ));
    }
}

/// A model check the machine's time or memory limit stopped is listed in `stopped_by_time`:
/// its state count and bounded verdicts depend on the machine that ran it.
pub(super) fn note_machine_limit(stopped_by_time: &mut Vec<String>, what: &str, outcome: &ModelOutcome) {
    if let Some(limit) = &outcome.machine_limit {
        stopped_by_time.push(format!(
            "{what} (model check stopped by {limit} at {} states)",
            outcome.graph_states
        ));
    }
}

/// The file name of the trace of `claim`'s first failing `seed` in a cell's `scenario` line.
fn trace_file_name(row: Row, column: Column, scenario: &str, claim: ClaimId, seed: u64) -> String {
    format!(
        "{}-{}-{scenario}-{}-seed{seed}.txt",
        row.key(),
        column.key(),
        claim.as_str().to_lowercase()
    )
}

/// A model's verdicts on a cell; writes the trace of every violated or reachable property.
fn model_judgement(
    row: Row,
    column: Column,
    label: &'static str,
    report: &ModelOutcome,
    out_dir: &Path,
    files: &mut Vec<String>,
) -> Result<Judgement, ReportError> {
    let mut claims = Vec::new();
    for property in &report.rows {
        let claim = property.claim;
        let checked_twice = report.rows.iter().filter(|other| other.claim == claim).count() > 1;
        let (claim_name, file_suffix) = if checked_twice {
            (format!("{claim} ({})", property.kind), format!("-{}", property.kind))
        } else {
            (claim.to_string(), String::new())
        };
        let trace = match &property.trace {
            Some((trace, steps)) if matches!(property.verdict, Verdict::Violated | Verdict::Reachable) => {
                let name = format!(
                    "{}-{}-model-{}{file_suffix}.txt",
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
                if let Some(record) = &property.record {
                    if let Some(svg) = write_model_timeline(&name, claim, record, out_dir)? {
                        files.push(format!("matrix/{svg}"));
                    }
                }
                Some(TraceFile { name, steps: *steps })
            }
            _ => None,
        };
        claims.push(ModelClaim {
            claim,
            name: claim_name,
            verdict: property.verdict.clone(),
            trace,
        });
    }
    Ok(Judgement::Model {
        label,
        states: report.graph_states,
        claims,
        same_run_as: None,
    })
}

/// The replay flags of a sim source's options.
fn replay_flags(sim_options: &SimOptions) -> String {
    let mut flags = String::new();
    if let Some(offset) = sim_options.offset_s {
        flags.push_str(&format!(" --offset-s {offset}"));
    }
    if sim_options.try_lock {
        flags.push_str(" --try-lock");
    }
    if sim_options.k3 {
        flags.push_str(" --k3");
    }
    if sim_options.thesis_listings {
        flags.push_str(" --thesis-listings");
    }
    flags
}

/// Lines of a run's events kept in a trace file, half from the start and half from the end:
/// a long run's full trace is megabytes, and its replay command prints it all.
const TRACE_LINES: usize = 3000;

/// `events` with its middle left out if it is longer than [`TRACE_LINES`] lines.
fn shortened(events: &str, command: &str) -> String {
    let lines: Vec<&str> = events.lines().collect();
    if lines.len() <= TRACE_LINES {
        return events.to_owned();
    }
    let half = TRACE_LINES / 2;
    format!(
        "{}\n... {} lines left out here: `{command}` prints every event ...\n{}\n",
        lines[..half].join("\n"),
        lines.len() - 2 * half,
        lines[lines.len() - half..].join("\n")
    )
}

/// The simulator's verdicts on a cell; writes the first failing seed's trace of every violated
/// claim (one file per seed).
#[allow(clippy::too_many_arguments)]
fn sim_judgement(
    row: Row,
    column: Column,
    scenario: &str,
    sim_options: &SimOptions,
    label: &'static str,
    result: &SimResult,
    out_dir: &Path,
    files: &mut Vec<String>,
) -> Result<Judgement, ReportError> {
    let flags = replay_flags(sim_options);
    searched_judgement(label, result, result.stall_s, result.token_drops, |search, seed| {
        let name = trace_file_name(row, column, scenario, search.claim, seed);
        let config = build(scenario, seed, algorithm(row), sim_options).expect("known");
        let outcome = run(&config, seed, false);
        let command = format!(
            "cassalock replay --scenario {scenario} --seed {seed} --algorithm {}{flags}",
            algorithm(row).name()
        );
        let text = format!(
            "{}\nseed {seed}\n\nverdicts:\n{}\nreplay (with every store request): {command}\n\n{}",
            config.plan(),
            outcome.verdicts,
            shortened(&render(&outcome.records), &command)
        );
        write_file(out_dir, &name, &text)?;
        files.push(format!("matrix/{name}"));
        let svg = timeline_name(&name);
        let path = out_dir.join(&svg);
        cassalock_sim::timeline::write_svg(&outcome, &path).map_err(|source| ReportError::Timeline { path, source })?;
        files.push(format!("matrix/{svg}"));
        Ok(FirstFailure {
            seed,
            file: name,
            command,
        })
    })
}

/// The file name of a seed's timeline, beside its trace (`...-seed3.txt` -> `...-seed3.svg`).
pub fn timeline_name(trace: &str) -> String {
    format!("{}.svg", trace.trim_end_matches(".txt"))
}

/// A seed search's judgement: each claim with the trace of its first failing seed, written by
/// `write_trace` once per seed (claims first violated in the same seed share its file), and
/// none when the fault never fired.
fn searched_judgement(
    label: &'static str,
    result: &SimResult,
    stall_s: Option<f64>,
    token_drops: u64,
    mut write_trace: impl FnMut(&ClaimSearch, u64) -> Result<FirstFailure, ReportError>,
) -> Result<Judgement, ReportError> {
    let mut claims = Vec::new();
    let mut traces: BTreeMap<u64, FirstFailure> = BTreeMap::new();
    for search in &result.claims {
        let first_failure = match search.first_violation {
            Some(seed) if result.fired > 0 => Some(match traces.get(&seed) {
                Some(known) => known.clone(),
                None => {
                    let first = write_trace(search, seed)?;
                    traces.insert(seed, first.clone());
                    first
                }
            }),
            _ => None,
        };
        claims.push(SimClaim {
            search: search.clone(),
            first_failure,
        });
    }
    Ok(Judgement::Sim {
        label,
        tried: result.tried,
        stopped_by_time: result.stopped_by_time,
        fired: result.fired,
        claims,
        stall_s,
        token_drops,
    })
}

/// The simulator's verdicts on a cell from a family scenario's search; writes the first failing
/// seed's trace of every violated claim (one file per seed).
fn family_judgement(
    row: Row,
    column: Column,
    scenario: &str,
    label: &'static str,
    result: &SimResult,
    out_dir: &Path,
    files: &mut Vec<String>,
) -> Result<Judgement, ReportError> {
    searched_judgement(label, result, None, 0, |search, seed| {
        write_family_trace(row, column, scenario, search, seed, out_dir, files)
    })
}

/// The timeline of a model's trace `name` of `claim`, from its path's event record, one step a
/// unit of its axis (`cassalock_judge::steps`): the file's name, beside the trace. None where
/// the record's judge finds `claim` neither violated nor undecided (T1-server and the fairness
/// and liveness claims are judged by the model alone: their records carry no server readings
/// and no infinite paths), so that no picture beside a violated trace says "ok". C-lost's
/// counterexample is undecided on its record: the record stops at the violating state, where
/// the holder has not been told, and only the model knows it never will be.
pub(super) fn write_model_timeline(
    name: &str,
    claim: ClaimId,
    record: &str,
    out_dir: &Path,
) -> Result<Option<String>, ReportError> {
    let svg = timeline_name(name);
    let path = out_dir.join(&svg);
    let record = cassalock_judge::event::read(record.as_bytes()).map_err(|source| ReportError::Record {
        path: path.clone(),
        source,
    })?;
    let stepped = cassalock_judge::steps::by_steps(&record);
    let judgement = cassalock_judge::judge(&stepped);
    let verdicts = judgement.claim_verdicts();
    assert_eq!(
        verdicts,
        cassalock_judge::judge(&record).claim_verdicts(),
        "{name}: a record judged on its step axis must keep the verdicts of its ticks"
    );
    // The row locks' models call two believers T1; the record's judge, T1-belief.
    let shown = |id: ClaimId| {
        verdicts
            .iter()
            .any(|&(c, verdict)| c == id.as_str() && matches!(verdict, ClaimVerdict::Violated | ClaimVerdict::Bounded))
    };
    if !(shown(claim) || (claim == ClaimId::T1 && shown(ClaimId::T1Belief))) {
        return Ok(None);
    }
    let picture = cassalock_sim::timeline::Picture::new(&stepped.header, &stepped.events, &judgement);
    cassalock_sim::timeline::write_record_svg(&picture, &path)
        .map_err(|source| ReportError::Timeline { path, source })?;
    Ok(Some(svg))
}

/// The trace of `seed`, run again with every request and reply.
fn write_family_trace(
    row: Row,
    column: Column,
    scenario: &str,
    search: &ClaimSearch,
    seed: u64,
    out_dir: &Path,
    files: &mut Vec<String>,
) -> Result<FirstFailure, ReportError> {
    let name = trace_file_name(row, column, scenario, search.claim, seed);
    let built = build_family(scenario, seed).expect("a scenario of the family_sim table");
    let outcome = run_family(&built, seed, true);
    let command = replay_command(scenario, seed, "");
    let verdicts: String = outcome
        .verdicts
        .claims
        .iter()
        .map(|(claim, verdict)| format!("  {:<12} {verdict}\n", claim.name()))
        .collect();
    let text = format!(
        "{} ({}): {}\nseed {seed}, {} client(s)\n\nverdicts:\n{verdicts}\nreplay: {command}\n\n{}",
        built.name,
        built.lock.name(),
        built.premise,
        built.clients,
        shortened(&outcome.trace_text(), &command)
    );
    write_file(out_dir, &name, &text)?;
    files.push(format!("matrix/{name}"));
    let svg = timeline_name(&name);
    let path = out_dir.join(&svg);
    let judgement = cassalock_judge::Judgement::Families(outcome.verdicts.clone());
    let picture = cassalock_sim::timeline::Picture::new(&outcome.header, &outcome.events, &judgement);
    cassalock_sim::timeline::write_record_svg(&picture, &path)
        .map_err(|source| ReportError::Timeline { path, source })?;
    files.push(format!("matrix/{svg}"));
    Ok(FirstFailure {
        seed,
        file: name,
        command,
    })
}

#[cfg(test)]
mod tests {
    use cassalock::registry::Lock;
    use cassalock_models::{Fault, ModelName};

    use super::*;

    #[test]
    fn long_traces_keep_their_start_and_end() {
        let events: String = (0..TRACE_LINES + 10).map(|i| format!("event {i}\n")).collect();
        let short = shortened(&events, "cassalock replay x");
        assert!(short.starts_with("event 0\n"));
        assert!(short.contains("... 10 lines left out here: `cassalock replay x` prints every event ..."));
        assert!(short.ends_with(&format!("event {}\n", TRACE_LINES + 9)));
        assert!(!short.contains(&format!("event {}\n", TRACE_LINES / 2 + 5)));
        assert_eq!(short.lines().count(), TRACE_LINES + 1);
        let few = "a\nb\n";
        assert_eq!(shortened(few, "x"), few);
    }

    #[test]
    fn a_claim_checked_twice_by_one_model_is_named_apart() {
        let dir = std::env::temp_dir().join(format!("cassalock-matrix-twice-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut spec = Spec::new(ModelName::Lock(Lock::Old));
        spec.fault = Fault::Crash;
        let report = cassalock_models::build(&spec)
            .expect("spec")
            .check(cassalock_models::check::Limits::default());
        let report = ModelOutcome::of(&report);
        let mut files = Vec::new();
        let judgement = model_judgement(
            Row::Old,
            Column::Crash,
            "model, holder crashes",
            &report,
            &dir,
            &mut files,
        )
        .expect("judged");
        let text = judgement.markdown();
        assert!(text.contains("C-lost (always) "), "{text}");
        assert!(text.contains("C-lost (liveness) "), "{text}");
        assert!(!text.contains("C-lost holds"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
