//! Which sources feed each cell: for every (row, column), the model runs and simulator lines
//! that judge it, or why none applies, and how each simulator line's fault is brought about.

use cassalock::driver::Algorithm;
use cassalock::registry::Lock;
use cassalock_models::{Fault, ModelName, Spec};
use cassalock_sim::family::scenario::build as build_family;
use cassalock_sim::scenario::SimOptions;

use super::family_sim;
use super::grid::{Column, Row};

/// How a fault is brought about in a simulation run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Firing {
    /// By configuration (clock offsets, consistency level): always in effect.
    Configured,
    /// An injected fault: it fired if the run recorded it.
    Injected,
    /// A renewal ran during a release of the same acquisition (needs detailed records).
    RenewalDuringRelease,
}

/// One way of judging a cell.
#[derive(Clone, Debug)]
pub(super) enum Source {
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
    /// A scenario of the other families' simulator (`cassalock sim --scenario NAME`).
    FamilySim {
        scenario: &'static str,
        label: &'static str,
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

/// Every source of a cell, in the order the cell lists them (a search unit names its line by
/// its index here).
pub(super) fn sources(row: Row, column: Column) -> Vec<Source> {
    use Column as C;
    use Firing::*;
    if row == Row::GlobalTime {
        return global_time_sources(column);
    }
    if row.is_family() {
        return family_sources(row, column);
    }
    let lock_model = match row {
        Row::Old => ModelName::Lock(Lock::Old),
        Row::Queue => ModelName::Lock(Lock::Queue),
        _ => ModelName::Lock(Lock::QueueTry),
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
                sim(
                    "pause-at-rewrite",
                    "sim, holder paused at renewal's rewrite TTL/2 + 5 s, fencing",
                    Injected,
                ),
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
        C::StoreFailure => {
            let mut options = SimOptions::default();
            options.knobs.fail_before_apply_percent = Some(5.0);
            options.knobs.fail_after_apply_percent = Some(5.0);
            vec![
                model(
                    lock_model,
                    Fault::StoreFailure,
                    "model, one request fails, applied or not",
                ),
                Source::Sim {
                    scenario: "contention",
                    options,
                    label: "sim, contention, 5% of requests fail before and 5% after applying",
                    firing: Configured,
                },
            ]
        }
        C::Restart | C::Failover | C::ServerClockJump | C::LostNotification => {
            unreachable!("{} is a column of the other families' rows", column.name())
        }
        C::RowsDeleted => vec![sim(
            "rows-deleted",
            "sim, an operator deletes the lock's rows while a client holds",
            Injected,
        )],
        C::BackwardJump => {
            let mut options = SimOptions::default();
            options.knobs.backward_jump_s = Some(5.0);
            vec![Source::Sim {
                scenario: "contention",
                options,
                label: "sim, contention, one node's clock steps back 5 s",
                firing: Configured,
            }]
        }
    };
    if row == Row::QueueTry {
        for source in &mut list {
            if let Source::Sim { options, .. } = source {
                options.try_lock = true;
            }
        }
    }
    list
}

/// The time service's cells (the GlobalTime row): its claims are about clock order and crashes.
fn global_time_sources(column: Column) -> Vec<Source> {
    use Column as C;
    match column {
        C::None => vec![model(
            ModelName::Lock(Lock::GlobalTime),
            Fault::None,
            "model, clocks in any order",
        )],
        C::Crash => vec![
            model(
                ModelName::Lock(Lock::GlobalTime),
                Fault::Crash,
                "model, r0 3 ticks ahead, crashes",
            ),
            sim("timeservice-stall", "sim, ts0 20 s ahead, killed", Firing::Injected),
        ],
        C::SkewBelowTtl | C::SkewAtTtl => {
            vec![model(
                ModelName::Lock(Lock::GlobalTime),
                Fault::Skew,
                "model, r0 2 ticks ahead",
            )]
        }
        _ => vec![Source::NotApplicable(
            "the time service's claim (T5) is about clock order and crashes",
        )],
    }
}

/// The other families' cells: their model (`models/src/family.rs`) under each of its faults.
fn family_sources(row: Row, column: Column) -> Vec<Source> {
    let model_name = ModelName::Lock(row);
    let registered = cassalock_models::family::registered_model(row)
        .unwrap_or_else(|| panic!("{row} has a family row, so a family model"));
    let (fault, family_label) = match column {
        // The models have no partition fault: the simulator's line alone (every family lock
        // has one; a test holds it so).
        Column::Partition => return family_sim_sources(row, column),
        Column::None => (Fault::None, "model, no fault"),
        Column::Pause => (Fault::Pause, "model, holder paused between its check and its write"),
        Column::StoreFailure => (Fault::StoreFailure, "model, one request or reply lost"),
        Column::Restart => (Fault::Restart, "model, the server restarts without persistence"),
        Column::Failover => (
            Fault::Failover,
            "model, the replica promoted before it has the acknowledged writes",
        ),
        Column::ServerClockJump => (
            Fault::ServerClockJump,
            "model, the server's clock jumps forward by the TTL",
        ),
        Column::LostNotification => (Fault::LostNotification, "model, one unlock message to a waiter lost"),
        other => unreachable!("{} is not a column of the family rows", other.name()),
    };
    // The lock's own words and sizes, where the family's do not fit it.
    let line = (registered.matrix_line)(fault);
    if !(registered.supports)(fault) {
        debug_assert!(
            family_sim::scenarios(row, column).is_empty(),
            "a simulator line where the model says the fault does not apply"
        );
        return vec![Source::NotApplicable(line.not_applicable.unwrap_or(match column {
            Column::Failover => "no replica (independent servers)",
            Column::LostNotification => "no unlock message: waiters poll",
            _ => "not a fault of this lock's server",
        }))];
    }
    let mut spec = Spec::new(model_name);
    spec.fault = fault;
    spec.acquisitions = line.acquisitions;
    let mut sources = vec![Source::Model {
        spec,
        label: line.label.unwrap_or(family_label),
    }];
    sources.extend(family_sim_sources(row, column));
    if let Some((acquisitions, label)) = line.also {
        let mut spec = Spec::new(model_name);
        spec.fault = fault;
        spec.acquisitions = Some(acquisitions);
        sources.push(Source::Model { spec, label });
    }
    sources
}

/// A family cell's simulator lines ([`family_sim::scenarios`]).
fn family_sim_sources(row: Row, column: Column) -> Vec<Source> {
    family_sim::scenarios(row, column)
        .into_iter()
        .map(|(scenario, label)| {
            debug_assert!(
                build_family(scenario, 0).is_ok(),
                "{scenario} is a scenario of sim/src/family"
            );
            Source::FamilySim { scenario, label }
        })
        .collect()
}

/// The library's algorithm a thesis row's simulator lines run.
pub(super) fn algorithm(row: Row) -> Algorithm {
    match row {
        Row::Old => Algorithm::Old,
        _ => Algorithm::Queue,
    }
}
