//! The summaries read off the cells: "Which lock, under which faults" and "What this says about
//! the thesis", each sentence chosen from the cells' verdicts themselves so that the prose
//! cannot drift from the tables.

use std::fmt::Write as _;

use cassalock::registry::Holder;
use cassalock_judge::ClaimId;
use cassalock_models::check::Verdict;

use super::cells::Cells;
use super::grid::{Column, MatrixRow, Row};
use super::judgement::{Cell, Judgement};
use super::marks::seeds;

/// "Which lock, under which faults": one line per lock, read off the cells' verdicts (the
/// faults under which some check found two holders, or a stale write reaching the resource),
/// so that the summary cannot drift from the tables below it.
pub(super) fn which_lock_section(md: &mut String, cells: &Cells, rows: &[Row]) {
    let broken_under = |row: Row, claims: &[ClaimId]| -> String {
        let names: Vec<&str> = row
            .columns()
            .iter()
            .filter(|&&column| {
                cells[&(row, column)]
                    .iter()
                    .any(|judgement| claims.iter().any(|&claim| judgement.violated(Some(claim))))
            })
            // "none" would read as "none found".
            .map(|column| {
                if *column == Column::None {
                    "no fault"
                } else {
                    column.name()
                }
            })
            .collect();
        if names.is_empty() {
            "none found".to_owned()
        } else {
            names.join(", ")
        }
    };
    let fencing = |row: Row| match row.entry().holder {
        Holder::FencedByTheResource => {
            let down = broken_under(row, &[ClaimId::CToken]);
            if down == "none found" {
                "yes: the resource refuses a stale token; no check found a token going down".to_owned()
            } else {
                format!("yes, but a later holder's token was not always higher (C-token) under: {down}")
            }
        }
        Holder::Unsaid => String::new(),
        Holder::Named(token) => format!("no: {token}, it does not grow"),
        Holder::Grows(token) => {
            let down = broken_under(row, &[ClaimId::CToken]);
            if down == "none found" {
                format!(
                    "yes: {token}, which only grows; the model's fenced resource refuses a lower one, and no \
                     check found a live holder's token going down"
                )
            } else {
                format!("yes ({token}), but a live holder's token was not always higher (C-token) under: {down}")
            }
        }
    };
    let _ = writeln!(md, "## Which lock, under which faults\n");
    let _ = writeln!(
        md,
        "Read off the cells below (model and simulator verdicts alike; a fault with no line here was not \
         checked for that lock). \"Two holders\": some check found two clients believing they held the lock \
         at once (T1, T1-belief; T3 for TryGetLock). \"Stale write\": the resource received a write from a \
         holder whose lock had passed to a later one (T1-resource; with fencing on for the thesis's locks, \
         without fencing for the others, which have none). \"Holder the server no longer names\": a client \
         believed it held the lock while the server's own state named another holder or nobody (T1-server), \
         seen even where nobody else took the lock.\n"
    );
    let _ = writeln!(
        md,
        "| lock | no fault | two holders under | stale write reaches the resource under | holder the server no longer names under | fencing token |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for &row in rows.iter().filter(|row| **row != Row::GlobalTime) {
        let t1: &[ClaimId] = match row {
            Row::QueueTry => &[ClaimId::T3, ClaimId::T1Belief],
            _ => &[ClaimId::T1, ClaimId::T1Belief],
        };
        let none_safe = !cells[&(row, Column::None)]
            .iter()
            .any(|judgement| t1.iter().any(|&claim| judgement.violated(Some(claim))));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            row.row_title(),
            if none_safe {
                "no two holders found"
            } else {
                "**two holders**"
            },
            broken_under(row, t1),
            broken_under(row, &[ClaimId::T1Resource]),
            broken_under(row, &[ClaimId::T1Server]),
            fencing(row),
        );
    }
    let _ = writeln!(md);
}

/// What the matrix says about the thesis's claims, read off the cells' verdicts themselves so
/// that the prose cannot drift from them.
pub(super) fn thesis_section(md: &mut String, cells: &Cells) {
    let _ = writeln!(md, "## What this says about the thesis\n");
    theorem_1(md, cells);
    consistency_one(md, cells);
    skew_and_pauses(md, cells);
    liveness_and_try_lock(md, cells);
    global_time(md, cells);
    fencing_tokens(md, cells);
}

/// The cell of `row` under `column`.
fn cell(cells: &Cells, row: Row, column: Column) -> &Cell {
    &cells[&(row, column)]
}

/// Some judgement of the cell found `claim` violated.
fn violated(cells: &Cells, row: Row, column: Column, claim: ClaimId) -> bool {
    cell(cells, row, column).iter().any(|j| j.violated(Some(claim)))
}

/// Some model of the cell gave `claim` a verdict that `wanted` accepts.
fn model_says(cells: &Cells, row: Row, column: Column, claim: ClaimId, wanted: fn(&Verdict) -> bool) -> bool {
    cell(cells, row, column)
        .iter()
        .any(|j| j.model_verdict(claim).is_some_and(wanted))
}

/// Held in every reachable state of the model.
fn exhaustive(verdict: &Verdict) -> bool {
    *verdict == Verdict::Holds
}

/// Theorem 1: mutual exclusion with no faults and under the faults it should survive.
fn theorem_1(md: &mut String, cells: &Cells) {
    let t1_exhaustive = model_says(cells, Row::Queue, Column::None, ClaimId::T1, exhaustive);
    let t1_tolerant = [
        Column::Loss,
        Column::Partition,
        Column::Crash,
        Column::ClOne,
        Column::RenewalRace,
    ]
    .iter()
    .all(|&column| !cell(cells, Row::Queue, column).iter().any(|j| j.violated(None)));
    let _ = writeln!(
        md,
        "- **Theorem 1 (mutual exclusion, queue GetLock).** With no faults: {}. Under message loss, a \
         partition, a crashed holder, CL=ONE and renewal racing release: {}. It needs its assumptions: a \
         holder paused past the TTL (K1) and a coordinator clock ahead break it, as K1 and S2 \
         ([docs/claims.md](../docs/claims.md)) predict.",
        if t1_exhaustive {
            "holds in every reachable state of the bounded model"
        } else {
            "see the table, it did not hold"
        },
        if t1_tolerant {
            "no violation in the model or the seeds"
        } else {
            "violated in at least one of them (see the table)"
        }
    );
}

/// K2: how soon the seed search finds T1 broken at consistency ONE, per lock.
fn consistency_one(md: &mut String, cells: &Cells) {
    // K2: CL ONE instead of QUORUM breaks L1 and so T1; the seed search shows which locks.
    let k2: Vec<String> = [Row::Old, Row::Queue, Row::QueueTry]
        .iter()
        .map(|&row| {
            let found = cell(cells, row, Column::ClOne).iter().find_map(|j| match j {
                Judgement::Sim {
                    tried, fired, claims, ..
                } if *fired > 0 => claims
                    .iter()
                    .find(|c| c.search.claim == ClaimId::T1Belief)
                    .map(|c| (*tried, c.search.first_violation)),
                _ => None,
            });
            match found {
                Some((_, Some(seed))) => format!(
                    "{}: T1-belief violated at seed {seed} ({} tried)",
                    row.row_title(),
                    seeds(seed + 1)
                ),
                Some((tried, None)) => format!("{}: no violation in {}", row.row_title(), seeds(tried)),
                None => format!("{}: no verdict", row.row_title()),
            }
        })
        .collect();
    let _ = writeln!(
        md,
        "- **K2 (consistency ONE).** With CL ONE a read can miss a write, so L1 and with it T1 can fail; how \
         soon the seed search finds it: {}. A lock that shows no violation here is not shown safe at CL ONE: \
         the thesis requires QUORUM.",
        k2.join("; ")
    );
}

/// S2 and K1: skew below the TTL, and pauses with fencing.
fn skew_and_pauses(md: &mut String, cells: &Cells) {
    let below = violated(cells, Row::Queue, Column::SkewBelowTtl, ClaimId::T1Belief);
    let _ = writeln!(
        md,
        "- **S2 (skew versus the TTL).** The thesis puts the danger at clock differences of the TTL or more. {}",
        if below {
            "The simulator breaks T1 below that: with TTL 30 s and renewal every 15 s, a coordinator 20 s \
             ahead already lets a second holder in. A renewed cell has to outlive only the renewal interval \
             before its next rewrite, so a coordinator ahead by TTL - renewal interval (15 s here) sees it \
             expire first. The bound is a little lower still, between 14 and 15 s here: the writing \
             coordinator fixes a cell's expiry in whole seconds of its clock (up to 1 s lost), and the \
             rewrite lands a few requests after the interval (renewal first reads its own cell). `cassalock \
             sim --scenario skew --sweep-offsets` finds the smallest breaking offset: 14.0 s for the queue \
             lock (seed 53: the main cell was written 0.96 s into a second, and a waiter's read through the \
             skewed coordinator came 15.04 s later, just before the rewrite)."
        } else {
            "Below the TTL the simulator found no violation."
        }
    );
    let fenced = [Row::Old, Row::Queue, Row::QueueTry]
        .iter()
        .all(|&row| !violated(cells, row, Column::Pause, ClaimId::T1Resource));
    let _ = writeln!(
        md,
        "- **Pauses (K1).** Every lock variant lets two clients believe they hold the lock after a pause \
         longer than the TTL. {}",
        if fenced {
            "With the resource checking fencing tokens the stale holder's write was refused in every check: \
             the damage needs fencing to prevent, and the thesis does not mention it."
        } else {
            "Even with fencing the resource accepted a stale write (see the table)."
        }
    );
}

/// Theorem 2 and the old lock's unfairness; theorems 3-4 (TryGetLock).
fn liveness_and_try_lock(md: &mut String, cells: &Cells) {
    let old_t2 = violated(cells, Row::Old, Column::None, ClaimId::T2);
    let queue_t2 = model_says(cells, Row::Queue, Column::None, ClaimId::T2, exhaustive);
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
    let t4 = model_says(cells, Row::QueueTry, Column::None, ClaimId::T4, exhaustive);
    let _ = writeln!(
        md,
        "- **Theorems 3-4 (TryGetLock).** T3 {} with no faults; T4 (some caller of a free lock acquires) {}.",
        if model_says(cells, Row::QueueTry, Column::None, ClaimId::T3, exhaustive) {
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
}

/// Theorem 5 and S1: GlobalTime never decreases, and can stall.
fn global_time(md: &mut String, cells: &Cells) {
    let _ = writeln!(
        md,
        "- **Theorem 5 and S1 (global time).** T5 (GlobalTime never decreases) {}; S1 {}.",
        if model_says(cells, Row::GlobalTime, Column::Crash, ClaimId::T5, |v| {
            matches!(v, Verdict::Holds | Verdict::HoldsWithinClockBound(_))
        }) {
            "held in every model configuration"
        } else {
            "was violated"
        },
        if model_says(cells, Row::GlobalTime, Column::Crash, ClaimId::S1, |v| *v
            == Verdict::Reachable)
        {
            "is real: a replica that ran ahead and crashed freezes GlobalTime for about as long as its lead \
             (measured in the simulator)"
        } else {
            "was not reached"
        }
    );
}

/// Fencing tokens: the faults under which a token went down across holders.
fn fencing_tokens(md: &mut String, cells: &Cells) {
    let drops: Vec<&str> = Column::THESIS
        .iter()
        .filter(|&&column| {
            [Row::Old, Row::Queue, Row::QueueTry]
                .iter()
                .any(|&row| cell(cells, row, column).iter().any(Judgement::tokens_went_down))
        })
        .map(|&column| column.name())
        .collect();
    let _ = writeln!(
        md,
        "- **Fencing tokens (our addition, not a thesis claim).** The thesis names no token; its queue \
         column, used as one, goes down whenever a queue cell that sorts first lands after another thread \
         took the lock (C-token in \"What the contract checks found\"). The library's token is a counter \
         each holder bumps under the lock (src/algo/fence.rs). It went down across holders under: {}. A \
         counter read under the lock is only as good as the lock and the read: where mutual exclusion breaks \
         or a read can miss the last write (CL=ONE), two holders can draw the same number.\n",
        if drops.is_empty() {
            "no fault model".to_string()
        } else {
            drops.join(", ")
        }
    );
}
