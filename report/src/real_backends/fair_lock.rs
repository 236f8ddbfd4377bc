//! The fair lock's goal against the old lock, and the ceiling its handoffs put on a fair lock's
//! throughput under contention.

use cassalock_judge::text::count;
use cassalock_real::Lock;

use super::configuration::Configuration;
use super::text::f;

/// The fair lock's goal against the old one at `lockers` (medians): at
/// least twice its throughput, Jain >= 0.99, no more store requests an acquisition. One clause
/// per queue lock measured, each saying which of the three it meets; `None` when the old lock
/// or both queue locks did not run (or took nothing) at that count.
pub(super) fn fair_lock_goal(groups: &[Configuration<'_>], lockers: usize) -> Option<String> {
    const THROUGHPUT_RATIO_GOAL: f64 = 2.0;
    const JAIN_GOAL: f64 = 0.99;
    let at = |lock: Lock| {
        groups
            .iter()
            .find(|g| g.variant == lock.title() && g.lockers == lockers && !g.acquired_nothing())
    };
    let old = at(Lock::Old)?;
    let old_rate = old.median(&|r| r.acquisitions_per_s);
    let old_requests = old.median(&|r| r.requests_per_acquisition);
    let clauses: Vec<String> = [Lock::Queue, Lock::QueueNextInLine, Lock::QueuePaced]
        .into_iter()
        .filter_map(at)
        .map(|fair| {
            let ratio = fair.median(&|r| r.acquisitions_per_s) / old_rate;
            let jain = fair.median(&|r| r.jain);
            let requests = fair.median(&|r| r.requests_per_acquisition);
            let missed: Vec<&str> = [
                (ratio >= THROUGHPUT_RATIO_GOAL, "throughput"),
                (jain >= JAIN_GOAL, "Jain"),
                (requests <= old_requests, "requests"),
            ]
            .into_iter()
            .filter(|(met, _)| !met)
            .map(|(_, what)| what)
            .collect();
            format!(
                "{} {} acq/s, {}x the old lock's {}; Jain {}; {} requests an acquisition against the old lock's {}: {}",
                fair.variant,
                f(fair.median(&|r| r.acquisitions_per_s), 2),
                f(ratio, 2),
                f(old_rate, 2),
                f(jain, 3),
                f(requests, 1),
                f(old_requests, 1),
                if missed.is_empty() {
                    "goal met".to_string()
                } else {
                    format!("not met ({})", missed.join(", "))
                }
            )
        })
        .collect();
    (!clauses.is_empty()).then(|| {
        format!(
            "The fair lock's goal (at least {THROUGHPUT_RATIO_GOAL}x the old lock's throughput at {}, Jain >= {JAIN_GOAL}, no more requests an acquisition; medians): {}.",
            count(lockers, "locker"),
            clauses.join("; ")
        )
    })
}

/// A fair lock's ceiling under contention from its runs alone (see [`fair_lock_ceiling`]): its
/// median rate alone times r/(r-2), r its median requests alone; `None` when r <= 2 or no run
/// acquired anything.
pub(super) fn ceiling_from_alone(alone: &Configuration<'_>) -> Option<f64> {
    let rate = alone.median(&|r| r.acquisitions_per_s);
    let requests = alone.median(&|r| r.requests_per_acquisition);
    (requests > 2.0 && rate.is_finite() && !alone.acquired_nothing()).then(|| rate * requests / (requests - 2.0))
}

/// The fair locks (the queue lock and its variants) among the runs, in the order they ran.
pub(super) fn fair_lock_names<'a>(groups: &[Configuration<'a>]) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for g in groups {
        if g.variant.starts_with(Lock::Queue.title()) && !names.contains(&g.variant) {
            names.push(g.variant);
        }
    }
    names
}

/// How fast a fair lock can go at `lockers`, from its own runs with one
/// locker (`None` without those, or without the old lock at `lockers`).
///
/// A fair lock hands every acquisition to another locker. After the hold come the release's
/// two deletes (main cell, then queue cell) and the next holder's queue read, main-cell write,
/// main-row read and token read and write, each sent when the one before has been answered;
/// only the queue read may already be under way while the last delete lands (it must see the
/// delete, not finish after it), which saves at most about one request. So a handoff is at
/// least `r - 2` requests in a row, where `r` is the lock's requests an acquisition alone (the
/// enqueue, made while it waited, is the other one), and a cycle alone is the hold and `r`. As
/// long as a request under load takes no less than alone, a contended cycle is at least
/// `(r - 2) / r` of a cycle alone: the rate at most `r / (r - 2)` times the rate alone, however
/// the lock polls. (The bound once had `r - 1`; the simulator, whose handoffs overlap a poll
/// with the release, beat it.) Beside it: any lock's cycle is at least its hold, and the old
/// lock's rate at `lockers` against alone, with the share of its acquisitions that went to
/// another locker (the rest: its releaser taking the lock back).
pub(super) fn fair_lock_ceiling(groups: &[Configuration<'_>], lockers: usize) -> Option<String> {
    const THROUGHPUT_RATIO_GOAL: f64 = 2.0;
    let at = |lock: &str, count: usize| {
        groups
            .iter()
            .find(|g| g.variant == lock && g.lockers == count && !g.acquired_nothing())
    };
    if lockers <= 1 {
        return None;
    }
    let old = at(Lock::Old.title(), lockers)?;
    let old_rate = old.median(&|r| r.acquisitions_per_s);
    let goal_rate = THROUGHPUT_RATIO_GOAL * old_rate;
    // (ceiling, name) of each fair lock that ran alone.
    let mut ceilings: Vec<(f64, &str)> = Vec::new();
    let clauses: Vec<String> = fair_lock_names(groups)
        .into_iter()
        .filter_map(|name| {
            let alone = at(name, 1)?;
            let ceiling = ceiling_from_alone(alone)?;
            ceilings.push((ceiling, name));
            let measured = at(name, lockers)
                .map(|g| {
                    let rate = g.median(&|r| r.acquisitions_per_s);
                    format!(" (measured: {}, {}% of it)", f(rate, 2), f(100.0 * rate / ceiling, 0))
                })
                .unwrap_or_default();
            Some(format!(
                "{name} made {} acq/s alone with {} requests each, so at most {} at {}{measured}, {}x the old lock's {}",
                f(alone.median(&|r| r.acquisitions_per_s), 2),
                f(alone.median(&|r| r.requests_per_acquisition), 1),
                f(ceiling, 2),
                count(lockers, "locker"),
                f(ceiling / old_rate, 2),
                f(old_rate, 2),
            ))
        })
        .collect();
    if clauses.is_empty() {
        return None;
    }
    let acquisitions: u64 = old.runs.iter().map(|r| r.acquisitions).sum();
    let handoffs: u64 = old.runs.iter().map(|r| r.handoffs).sum();
    let old_against_alone = at(Lock::Old.title(), 1)
        .map(|alone| {
            format!(
                "{}x its rate alone ({}), and ",
                f(old_rate / alone.median(&|r| r.acquisitions_per_s), 2),
                f(alone.median(&|r| r.acquisitions_per_s), 2)
            )
        })
        .unwrap_or_default();
    // Any lock's cycle is at least its hold (0 in data from before the figure existed).
    let hold_ms = old.median(&|r| r.hold_p50_ms);
    let hold_limit = (hold_ms > 0.0).then(|| 1000.0 / hold_ms);
    let hold_sentence = hold_limit
        .map(|limit| {
            format!(
                " Any lock's cycle is at least its hold, {} ms here (median), so no lock can pass {} acq/s, {}x the old lock's.",
                f(hold_ms, 1),
                f(limit, 2),
                f(limit / old_rate, 2)
            )
        })
        .unwrap_or_default();
    let (best, best_name) = ceilings
        .iter()
        .copied()
        .fold((f64::NEG_INFINITY, ""), |a, b| if b.0 > a.0 { b } else { a });
    let verdict = if hold_limit.is_some_and(|limit| limit < goal_rate) {
        format!("So no lock can reach the goal's {THROUGHPUT_RATIO_GOAL}x here, fair or not: it needs a cycle shorter than the hold.")
    } else if best < goal_rate {
        format!("So the goal's {THROUGHPUT_RATIO_GOAL}x is above every fair lock's ceiling here: only a handoff of fewer requests in a row could reach it, or a store whose requests get slower under the old lock's contention.")
    } else {
        format!(
            "So the goal's {THROUGHPUT_RATIO_GOAL}x is within a fair lock's ceiling here, but only near it: {best_name} would have to make {}% of its ceiling.",
            f(100.0 * goal_rate / best, 0)
        )
    };
    Some(format!(
        "A fair lock's ceiling: every acquisition is a handoff, the release's two deletes and then the next holder's queue read, main-cell write, main-row read and token read and write, each sent once the one before is answered, but for the queue read, which may already be under way while the last delete lands: at least r-2 requests in a row, where r requests and the hold make a cycle alone (the enqueue was made while waiting). So a fair lock can be at most r/(r-2) times as fast as alone (r = 8: 1.33x), however it polls, if a request under load is no faster than alone: {}.{hold_sentence} The old lock at {} made {}only {} of its {} acquisitions ({}%) passed the lock to another locker: the others were its releaser taking it straight back, a cycle as cheap as alone. {verdict}",
        clauses.join("; "),
        count(lockers, "locker"),
        old_against_alone,
        handoffs,
        acquisitions,
        f(100.0 * handoffs as f64 / acquisitions.max(1) as f64, 0),
    ))
}
