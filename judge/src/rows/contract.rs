//! The contract checks of one run (docs/contract.md): what each public call promises, judged
//! from the run's records against the bounds of `cassalock::algo::contract`.
//!
//! - **C-try**: no `try_lock()` call sent more store requests than
//!   `cassalock::algo::contract::try_call_max_requests`. The figure beside it is the longest call against the
//!   longest hold by anyone: a call that waits for another owner grows with that hold.
//! - **C-free**: after a call failed or gave up, the oracle measured how long any cell holding
//!   its thread id stayed live on a replica ([`What::Leftover`]). Judged against
//!   `cassalock::algo::contract::LEFTOVER_AFTER_FAILED_CALL_MS` (plus the oracle's sampling period), except
//!   for calls whose client was paused, killed or cut off from the replicas when the call
//!   returned, and calls whose clean-up was tried and failed (`Left::CleanUpFailed`, or a failed release): the
//!   contract lets those expire with the TTL.
//! - **C-release**: after a release returned Ok while another client waited, the next
//!   acquisition came within `cassalock::algo::contract::handover_ms` (the simulator's fault-free request time).
//!   Judged only for releases with no fault active from one request's time with retries
//!   before the release to the bound (a request sent during a fault may still be failing), not for
//!   a release by a holder whose lease another client had already taken over.
//! - **C-lost**: for two overlapping beliefs, the earlier holder heard `is_lost()`, or stopped
//!   believing, within `cassalock::algo::contract::lost_learned_ms` (plus one period of the holders' `is_lost()` checks) after the
//!   later one acquired, not counting time the earlier holder's process was paused.
//! - **C-token** is judged in [`super`] (it needs the resource's records as they
//!   stream past, with the beliefs at that instant).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use super::{Check, Overlap};
use crate::event::{Call, Disruption, Event, Left, NotAcquired, ReleaseOutcome, RowRules, What};
use crate::holding::{HoldingInterval, SimulatedTime};
use crate::text::count;
use crate::ClaimId;

/// The contract's figures in one run.
#[derive(Clone, Debug, Default)]
pub struct ContractFigures {
    /// C-try: `try_lock()` calls, the longest one (duration, requests) and the most requests.
    pub try_calls: usize,
    pub longest_try: Option<(Duration, u64)>,
    pub most_try_requests: u64,
    /// The longest hold (belief) of any client.
    pub longest_hold: Duration,
    /// C-free: failed calls measured by the oracle; the longest their cells stayed live; the
    /// longest among the judged ones (the client could reach the store), with its thread.
    pub failed_calls: usize,
    pub leftover_max: Option<Duration>,
    pub leftover_judged_max: Option<(Duration, String)>,
    /// C-release: releases judged, and the longest wait from one to the next acquisition.
    pub handovers: usize,
    /// C-release: releases the run's end cut short (nobody had acquired, and the bound was not
    /// yet up when the run stopped): not judged, never passed.
    pub handovers_cut: usize,
    pub handover_max: Option<(Duration, String)>,
    /// C-lost: overlaps judged, and the longest a holder went on not knowing.
    pub lost_judged: usize,
    pub lost_lag_max: Option<(Duration, String)>,
    /// C-lost: times a holder's `is_lost()` said no again after it had said yes.
    pub lost_retracted: usize,
    /// C-lost: overlaps the run's end cut short (the earlier holder had not heard, still
    /// believed, and the bound was not yet up): not judged, never passed.
    pub lost_cut: usize,
    /// The bounds the run was judged against.
    pub bounds: ContractBounds,
}

/// The contract's bounds in one run, as computed from its configuration (`None`: the item has
/// no bound in this run, e.g. C-try for `lock()` callers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ContractBounds {
    /// C-try: store requests in one `try_lock` call.
    pub try_requests: Option<u64>,
    /// C-free: how long a failed call's cells may stay live (with the oracle's period).
    pub leftover: Duration,
    /// C-release: from a release's return to the next acquisition.
    pub handover: Duration,
    /// C-lost: from another client's acquisition to the holder learning it (with one check period).
    pub lost: Option<Duration>,
}

/// C-lost: from when on the holder knew, durably, during one belief `[from, to]`: the last
/// time `is_lost()` turned true there, if it then stayed true (`changes`: each change of the
/// answer, true where it turned true, in time order). A loss reported and then taken back was
/// not learned: a user who asks a moment later is told the lease is fine.
fn lasting_loss_heard(changes: &[(Duration, bool)], from: Duration, to: Duration) -> Option<Duration> {
    debug_assert!(
        changes.windows(2).all(|pair| pair[0].0 <= pair[1].0),
        "changes in time order"
    );
    let mut within = changes.iter().filter(|(at, _)| (from..=to).contains(at));
    match within.next_back() {
        Some(&(at, true)) => Some(at),
        _ => None,
    }
}

fn node_index(node: &str) -> Option<usize> {
    node.strip_prefix('c')?.parse().ok()
}

fn secs(duration: Duration) -> String {
    format!("{:.3} s", duration.as_secs_f64())
}

fn keep_max(slot: &mut Option<(Duration, String)>, value: Duration, what: impl FnOnce() -> String) {
    if slot.as_ref().is_none_or(|(max, _)| value > *max) {
        *slot = Some((value, what()));
    }
}

/// Time inside `[from, to]` covered by `intervals`.
fn covered(intervals: &[(Duration, Duration)], from: Duration, to: Duration) -> Duration {
    intervals
        .iter()
        .map(|&(begin, end)| end.min(to).saturating_sub(begin.max(from)))
        .sum()
}

/// Judge C-try, C-free, C-release and C-lost. `holds` are the run's belief intervals (closed
/// at the end of the run), `overlaps` the T1-belief judge's.
pub fn judge_contract(
    rules: &RowRules,
    events: &[Event],
    sim_time: Duration,
    holds: &[HoldingInterval<SimulatedTime>],
    overlaps: &[Overlap],
) -> (ContractFigures, Vec<Check>) {
    let mut figures = ContractFigures {
        longest_hold: holds
            .iter()
            .map(|hold| hold.released_at.saturating_sub(hold.acquired_at))
            .max()
            .unwrap_or_default(),
        ..ContractFigures::default()
    };
    let Some(bounds) = rules.bounds else {
        let why = "the run's settings are invalid: no client started".to_owned();
        return (
            figures,
            [ClaimId::CTry, ClaimId::CFree, ClaimId::CRelease, ClaimId::CLost]
                .into_iter()
                .map(|claim| Check::not_exercised(claim, why.clone()))
                .collect(),
        );
    };
    figures.bounds = ContractBounds {
        try_requests: bounds.try_requests.filter(|_| rules.call == Call::TryLock),
        leftover: Duration::from_nanos(bounds.leftover_ns),
        handover: Duration::from_nanos(bounds.handover_ns),
        lost: bounds.lost_ns.map(Duration::from_nanos),
    };
    let evidence = Evidence::gather(rules.call, bounds.try_requests, events, sim_time, &mut figures);
    measure_handovers(&evidence, &bounds, sim_time, holds, &mut figures);
    measure_lost_lags(&evidence, sim_time, overlaps, &mut figures);
    let checks = vec![
        check_try(&figures, evidence.try_over_bound.as_ref()),
        check_free(&figures),
        check_release(rules, &figures),
        check_lost(&figures),
    ];
    (figures, checks)
}

/// What one pass over a run's events gathers for the contract's items (the figures it can
/// count as it goes, C-try's and C-free's, go straight into [`ContractFigures`]).
#[derive(Default)]
struct Evidence {
    /// When each client node's current call began.
    call_started: BTreeMap<usize, Duration>,
    /// Client nodes inside a call that has not yet acquired or given up.
    waiting: BTreeSet<usize>,
    /// C-try: the first call over the bound (its requests, and who and when).
    try_over_bound: Option<(u64, String)>,
    /// Disruptions in force per node.
    disrupted: BTreeMap<String, BTreeSet<Disruption>>,
    /// Pauses begun and not yet ended, and pause intervals, per client node.
    pause_began: BTreeMap<usize, Duration>,
    paused: BTreeMap<usize, Vec<(Duration, Duration)>>,
    active_faults: i64,
    fault_times: Vec<Duration>,
    /// C-free: failed calls by thread: judged? (The client could reach the store when the call
    /// returned, and the call did not report cells left behind.)
    /// In call order per thread id (ids are reused with `reuse_thread_ids`; the oracle's
    /// leftover records come in the same order, one per failed call).
    failed: BTreeMap<String, VecDeque<bool>>,
    /// C-release: (release began, released at, thread) for releases while another client
    /// waited and no fault was active; when each release began; when each acquisition took
    /// the lock.
    releases: Vec<(Duration, Duration, String)>,
    release_began: BTreeMap<String, Duration>,
    acquisitions: Vec<Duration>,
    /// C-lost: each time a client node's is_lost() changed its answer (true: it turned true).
    lost_seen: BTreeMap<usize, Vec<(Duration, bool)>>,
}

impl Evidence {
    /// One pass over `events`; pauses still on at the end last to `sim_time`.
    fn gather(
        call: Call,
        try_bound: Option<u64>,
        events: &[Event],
        sim_time: Duration,
        figures: &mut ContractFigures,
    ) -> Self {
        let mut evidence = Evidence::default();
        for event in events {
            evidence.read(event, call, try_bound, figures);
        }
        for (client, began) in std::mem::take(&mut evidence.pause_began) {
            evidence.paused.entry(client).or_default().push((began, sim_time));
        }
        evidence
    }

    fn read(&mut self, event: &Event, call: Call, try_bound: Option<u64>, figures: &mut ContractFigures) {
        let at = Duration::from_nanos(event.at_ns);
        let node = node_index(&event.node);
        match &event.what {
            What::Invoke { .. } => {
                if let Some(node) = node {
                    self.call_started.insert(node, at);
                    self.waiting.insert(node);
                }
            }
            What::Acquired { .. } => {
                if let Some(node) = node {
                    self.waiting.remove(&node);
                }
                self.acquisitions.push(at);
            }
            What::NotAcquired {
                thread, outcome, left, ..
            } => self.not_acquired(event, node, thread, outcome, left),
            What::Releasing { thread, .. } => {
                self.release_began.insert(thread.clone(), at);
            }
            What::Released { thread, outcome, .. } => self.released(at, node, thread, outcome, call),
            What::TryReturned { requests, .. } => self.try_returned(event, at, node, *requests, try_bound, figures),
            What::LostSeen { .. } => {
                if let Some(node) = node {
                    self.lost_seen.entry(node).or_default().push((at, true));
                }
            }
            What::LostRetracted { .. } => {
                if let Some(node) = node {
                    figures.lost_retracted += 1;
                    self.lost_seen.entry(node).or_default().push((at, false));
                }
            }
            What::Leftover { thread, live_for_ns } => {
                self.leftover(thread, Duration::from_nanos(*live_for_ns), figures);
            }
            // A store fault delays whatever call it hits by up to a request with its retries,
            // like any other fault (C-release's windows).
            What::StoreFault { .. } => self.fault_times.push(at),
            What::Fault {
                target,
                disruption,
                begins,
                ..
            } => self.fault(at, target.as_deref(), *disruption, *begins),
            _ => {}
        }
    }

    fn not_acquired(
        &mut self,
        event: &Event,
        node: Option<usize>,
        thread: &str,
        outcome: &NotAcquired,
        left: &Option<Left>,
    ) {
        if let Some(node) = node {
            self.waiting.remove(&node);
        }
        let reported_left = match outcome {
            // Only a clean-up that was tried and failed excuses cells left behind.
            NotAcquired::Failed => Some(*left == Some(Left::CleanUpFailed)),
            NotAcquired::TimedOut => Some(false),
            NotAcquired::Taken => None,
        };
        if let Some(reported_left) = reported_left {
            let reachable = self.disrupted.get(&event.node).is_none_or(BTreeSet::is_empty);
            self.failed
                .entry(thread.to_owned())
                .or_default()
                .push_back(reachable && !reported_left);
        }
    }

    fn released(&mut self, at: Duration, node: Option<usize>, thread: &str, outcome: &ReleaseOutcome, call: Call) {
        match outcome {
            ReleaseOutcome::Released => {
                let others_wait = self.waiting.iter().any(|&waiter| Some(waiter) != node);
                let began = self.release_began.remove(thread).unwrap_or(at);
                if others_wait && self.active_faults == 0 && call == Call::Lock {
                    self.releases.push((began, at, thread.to_owned()));
                }
            }
            // A failed release failed to delete: its error says the cells may be left.
            ReleaseOutcome::Failed => {
                self.failed.entry(thread.to_owned()).or_default().push_back(false);
            }
            ReleaseOutcome::NotHeld | ReleaseOutcome::GoneEitherWay | ReleaseOutcome::ActedBlind => {}
        }
    }

    fn try_returned(
        &mut self,
        event: &Event,
        at: Duration,
        node: Option<usize>,
        requests: u64,
        try_bound: Option<u64>,
        figures: &mut ContractFigures,
    ) {
        figures.try_calls += 1;
        figures.most_try_requests = figures.most_try_requests.max(requests);
        let took = node
            .and_then(|node| self.call_started.get(&node))
            .map_or(Duration::ZERO, |started| at.saturating_sub(*started));
        if figures.longest_try.is_none_or(|(longest, _)| took > longest) {
            figures.longest_try = Some((took, requests));
        }
        if try_bound.is_some_and(|bound| requests > bound) && self.try_over_bound.is_none() {
            self.try_over_bound = Some((requests, format!("{} at {}", event.node, secs(at))));
        }
    }

    /// The oracle measured how long a failed call's cells stayed live.
    fn leftover(&mut self, thread: &str, live_for: Duration, figures: &mut ContractFigures) {
        figures.failed_calls += 1;
        figures.leftover_max = Some(figures.leftover_max.map_or(live_for, |max| max.max(live_for)));
        let judged = self
            .failed
            .get_mut(thread)
            .and_then(VecDeque::pop_front)
            .unwrap_or(false);
        if judged {
            keep_max(&mut figures.leftover_judged_max, live_for, || thread.to_owned());
        }
    }

    fn fault(&mut self, at: Duration, target: Option<&str>, disruption: Option<Disruption>, begins: bool) {
        self.fault_times.push(at);
        self.active_faults += if begins { 1 } else { -1 };
        let (Some(fault_node), Some(period)) = (target, disruption) else {
            return;
        };
        let now = self.disrupted.entry(fault_node.to_owned()).or_default();
        if begins {
            now.insert(period);
        } else {
            now.remove(&period);
        }
        if let (Some(client), Disruption::Paused) = (node_index(fault_node), period) {
            // madsim's pauses do not nest: the first resume ends them all.
            if begins {
                self.pause_began.entry(client).or_insert(at);
            } else if let Some(began) = self.pause_began.remove(&client) {
                self.paused.entry(client).or_default().push((began, at));
            }
        }
    }
}

/// C-release: the next acquisition after each judged release.
/// (An acquisition while the release was still deleting counts: the lock was handed over.)
/// A request sent while a fault was active may take up to one request with its retries to
/// finish: a fault's effects last that long after its end.
fn measure_handovers(
    evidence: &Evidence,
    bounds: &crate::event::ContractBounds,
    sim_time: Duration,
    holds: &[HoldingInterval<SimulatedTime>],
    figures: &mut ContractFigures,
) {
    let handover_bound = figures.bounds.handover;
    let aftermath = Duration::from_nanos(bounds.fault_aftermath_ns);
    for (began_at, released_at, thread) in &evidence.releases {
        let window_end = *released_at + handover_bound;
        let window_start = began_at.saturating_sub(aftermath);
        if evidence
            .fault_times
            .iter()
            .any(|at| (window_start..=window_end).contains(at))
        {
            continue;
        }
        // A release by a holder whose lease was already taken over hands nothing over.
        let another_holds = holds
            .iter()
            .any(|hold| hold.holder != *thread && hold.acquired_at <= *began_at && *began_at < hold.released_at);
        if another_holds {
            continue;
        }
        // Any acquisition from the release's start on is another acquisition than the one
        // releasing, under whatever thread id: with `reuse_thread_ids` the releaser's own next
        // acquisition has the same id, and it takes the lock as any other would.
        let next = match evidence.acquisitions.iter().find(|at| *at >= began_at) {
            Some(at) => *at,
            // Nobody acquired before the run stopped, and the bound was not up yet: the run's
            // end, not the lock, decided this window.
            None if window_end > sim_time => {
                figures.handovers_cut += 1;
                continue;
            }
            None => sim_time,
        };
        figures.handovers += 1;
        keep_max(&mut figures.handover_max, next.saturating_sub(*released_at), || {
            format!("after {thread}'s release at {}", secs(*released_at))
        });
    }
}

/// C-lost: for each overlap, when the earlier holder learned (or stopped believing).
fn measure_lost_lags(evidence: &Evidence, sim_time: Duration, overlaps: &[Overlap], figures: &mut ContractFigures) {
    let lost_bound = figures.bounds.lost;
    for overlap in overlaps {
        let (earlier, later) = (&overlap.first, &overlap.second);
        let Some(node) = earlier
            .holder
            .strip_prefix('c')
            .and_then(|rest| rest.split('-').next()?.parse::<usize>().ok())
        else {
            continue;
        };
        let taken_at = later.acquired_at;
        let heard = lasting_loss_heard(
            evidence.lost_seen.get(&node).map_or(&[][..], Vec::as_slice),
            earlier.acquired_at,
            earlier.released_at,
        );
        // Still believing, never told, when the run stopped short of the bound: undecided.
        if heard.is_none()
            && earlier.released_at >= sim_time
            && lost_bound.is_some_and(|bound| taken_at + bound > sim_time)
        {
            figures.lost_cut += 1;
            continue;
        }
        let learned = heard.map_or(earlier.released_at, |heard| heard.min(earlier.released_at));
        let lag = learned.saturating_sub(taken_at).saturating_sub(covered(
            evidence.paused.get(&node).map_or(&[][..], Vec::as_slice),
            taken_at,
            learned,
        ));
        figures.lost_judged += 1;
        keep_max(&mut figures.lost_lag_max, lag, || {
            format!(
                "{} after {} acquired at {}",
                earlier.holder,
                later.holder,
                secs(taken_at)
            )
        });
    }
}

/// C-try: judged for `try_lock()` callers with a bound (`figures.bounds.try_requests`).
fn check_try(figures: &ContractFigures, try_over_bound: Option<&(u64, String)>) -> Check {
    match figures.bounds.try_requests {
        Some(bound) if figures.try_calls > 0 => {
            let (longest, requests) = figures.longest_try.unwrap_or_default();
            let figure = format!(
                "{} try_lock calls, the most requests in one {} (bound {bound}); longest call {} ({requests} requests) against a longest hold of {}",
                figures.try_calls,
                figures.most_try_requests,
                secs(longest),
                secs(figures.longest_hold)
            );
            match try_over_bound {
                None => Check::new(ClaimId::CTry, true, figure),
                Some((requests, at)) => Check::new(
                    ClaimId::CTry,
                    false,
                    format!("a call sent {requests} requests ({at}): it waited for another owner; {figure}"),
                ),
            }
        }
        _ => Check::not_exercised(ClaimId::CTry, "no try_lock calls".into()),
    }
}

fn check_free(figures: &ContractFigures) -> Check {
    if figures.failed_calls == 0 {
        return Check::not_exercised(ClaimId::CFree, "no call failed".into());
    }
    let leftover_bound = figures.bounds.leftover;
    let worst = figures.leftover_max.unwrap_or_default();
    match &figures.leftover_judged_max {
        Some((judged, thread)) if *judged > leftover_bound => Check::new(
            ClaimId::CFree,
            false,
            format!(
                "{thread}'s call failed and its cells stayed live {} after it returned (bound {}); {} failed calls",
                secs(*judged),
                secs(leftover_bound),
                figures.failed_calls
            ),
        ),
        Some((judged, _)) => Check::new(
            ClaimId::CFree,
            true,
            format!(
                "{} failed calls; cells left at most {} (bound {}; {} counting calls that said cells may be left, or whose client could not reach the store)",
                figures.failed_calls,
                secs(*judged),
                secs(leftover_bound),
                secs(worst)
            ),
        ),
        None => Check::not_exercised(
            ClaimId::CFree,
            format!(
                "{} failed calls, all saying cells may be left or by clients that could not reach the store (cells left at most {})",
                figures.failed_calls,
                secs(worst)
            ),
        ),
    }
}

/// "; N things cut short by the run's end, not judged", or nothing.
fn cut_short(n: usize, what: &str) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("; {} cut short by the run's end, not judged", count(n, what))
    }
}

fn check_release(rules: &RowRules, figures: &ContractFigures) -> Check {
    let releases_cut = cut_short(figures.handovers_cut, "release");
    let handover_bound = figures.bounds.handover;
    match &figures.handover_max {
        // A waiter's record does not say which lock it waits for, so with several locks a
        // release cannot be matched with the acquisition it should let in.
        _ if rules.locks_per_acquisition > 1 => Check::not_exercised(
            ClaimId::CRelease,
            format!("not judged with {} locks per acquisition", rules.locks_per_acquisition),
        ),
        _ if rules.locks > 1 => Check::not_exercised(
            ClaimId::CRelease,
            format!("not judged with {} independent locks", rules.locks),
        ),
        None => Check::not_exercised(
            ClaimId::CRelease,
            format!("no release while another client waited and no fault was active{releases_cut}"),
        ),
        Some((gap, what)) => Check::new(
            ClaimId::CRelease,
            *gap <= handover_bound,
            format!(
                "{} judged; longest wait for the next acquisition {} ({what}; bound {}){releases_cut}",
                count(figures.handovers, "release"),
                secs(*gap),
                secs(handover_bound)
            ),
        ),
    }
}

fn check_lost(figures: &ContractFigures) -> Check {
    let overlaps_cut = cut_short(figures.lost_cut, "overlap");
    match (&figures.lost_lag_max, figures.bounds.lost) {
        (Some((lag, what)), Some(bound)) => Check::new(
            ClaimId::CLost,
            *lag <= bound,
            format!(
                "{}; the longest one went on not knowing {} ({what}; bound {}, paused time not counted){}{overlaps_cut}",
                count(figures.lost_judged, "overlapping holder"),
                secs(*lag),
                secs(bound),
                if figures.lost_retracted > 0 {
                    format!(
                        "; is_lost() went back to false {}",
                        count(figures.lost_retracted, "time")
                    )
                } else {
                    String::new()
                }
            ),
        ),
        _ => Check::not_exercised(
            ClaimId::CLost,
            format!("no holder lost its lease to another{overlaps_cut}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::ContractBounds as BoundsNs;
    use crate::ClaimVerdict;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    /// Rules of a one-lock `lock()` workload, with the bounds of the queue lock's defaults
    /// (a handover of 600 ms; a holder learns a loss within 31.2 s).
    fn rules() -> RowRules {
        RowRules {
            locks_per_acquisition: 1,
            fencing: true,
            bounds: Some(BoundsNs {
                try_requests: None,
                leftover_ns: 1_200_000_000,
                handover_ns: 600_000_000,
                lost_ns: Some(31_200_000_000),
                fault_aftermath_ns: 1_000_000_000,
            }),
            ..RowRules::default()
        }
    }

    /// c0 holds from 1 s and releases at 2 s while c1 waits; nobody acquires after that.
    fn release_with_a_waiter_and_nobody_after() -> Vec<Event> {
        let at = |ms: u64, node: &str, what: What| Event {
            at_ns: ms * 1_000_000,
            node: node.to_owned(),
            clock_us: None,
            what,
        };
        let (thread, lock) = (|| "c0-0:0".to_owned(), || "shared".to_owned());
        let invoke = |client: &str| What::Invoke {
            client: client.into(),
            call: Call::Lock,
            acquisition: 1,
        };
        vec![
            at(0, "c0", invoke("c0-0")),
            at(
                1000,
                "c0",
                What::Acquired {
                    thread: thread(),
                    lock: lock(),
                    token: "1".into(),
                    valid_until_us: None,
                    valid_until_at_ns: None,
                },
            ),
            at(1500, "c1", invoke("c1-0")),
            at(
                2000,
                "c0",
                What::Releasing {
                    thread: thread(),
                    lock: lock(),
                },
            ),
            at(
                2010,
                "c0",
                What::Released {
                    thread: thread(),
                    lock: lock(),
                    outcome: ReleaseOutcome::Released,
                    why: "Released".into(),
                },
            ),
        ]
    }

    /// C-release: a release whose window the run's end cut short is not judged (it once
    /// passed: its wait was "the run's end", under the bound); a window that was whole fails.
    #[test]
    fn c_release_a_window_the_run_s_end_cut_short_is_not_judged() {
        let rules = rules();
        let events = release_with_a_waiter_and_nobody_after();
        let judge = |end_ms: u64| {
            let (figures, checks) = judge_contract(&rules, &events, Duration::from_millis(end_ms), &[], &[]);
            let check = checks
                .into_iter()
                .find(|check| check.claim == ClaimId::CRelease)
                .expect("C-release is judged");
            (figures, check)
        };
        let bound = judge(2050).0.bounds.handover;
        assert!(bound > Duration::from_millis(100), "{bound:?}");
        let (figures, cut) = judge(2050);
        assert_eq!((figures.handovers, figures.handovers_cut), (0, 1));
        assert_eq!(cut.verdict, ClaimVerdict::NotExercised, "{}", cut.detail);
        assert!(
            cut.detail.contains("1 release cut short by the run's end"),
            "{}",
            cut.detail
        );
        let whole_ms = 2010 + u64::try_from(bound.as_millis()).unwrap() + 1000;
        let (figures, whole) = judge(whole_ms);
        assert_eq!((figures.handovers, figures.handovers_cut), (1, 0));
        assert_eq!(whole.verdict, ClaimVerdict::Violated, "{}", whole.detail);
    }

    /// C-lost: an overlap whose earlier holder had not heard when the run stopped, short of the
    /// bound, is not judged (it once passed: the run's end stood in for when it learned); with
    /// the whole bound run out it is violated.
    #[test]
    fn c_lost_an_overlap_the_run_s_end_cut_short_is_not_judged() {
        use crate::holding::overlaps;
        let rules = rules();
        let judge = |end: Duration| {
            let holds: Vec<HoldingInterval<SimulatedTime>> = vec![
                HoldingInterval::new("c0-0:0", "shared", s(1), end),
                HoldingInterval::new("c1-0:0", "shared", s(40), end),
            ];
            let found = overlaps(&holds);
            assert_eq!(found.len(), 1);
            let (figures, checks) = judge_contract(&rules, &[], end, &holds, &found);
            let check = checks
                .into_iter()
                .find(|check| check.claim == ClaimId::CLost)
                .expect("C-lost is judged");
            (figures, check)
        };
        let bound = judge(s(41)).0.bounds.lost.expect("a TTL");
        let (figures, cut) = judge(s(41));
        assert_eq!((figures.lost_judged, figures.lost_cut), (0, 1));
        assert_eq!(cut.verdict, ClaimVerdict::NotExercised, "{}", cut.detail);
        assert!(
            cut.detail.contains("1 overlap cut short by the run's end"),
            "{}",
            cut.detail
        );
        let (figures, whole) = judge(s(40) + bound + s(10));
        assert_eq!((figures.lost_judged, figures.lost_cut), (1, 0));
        assert_eq!(whole.verdict, ClaimVerdict::Violated, "{}", whole.detail);
    }

    #[test]
    fn c_lost_a_loss_reported_then_taken_back_is_not_learned() {
        let changes = [(s(37), true), (s(38), false)];
        assert_eq!(lasting_loss_heard(&changes, s(0), s(90)), None);
    }

    #[test]
    fn c_lost_a_loss_that_stays_reported_is_learned_when_it_last_turned_true() {
        let changes = [(s(37), true), (s(38), false), (s(45), true)];
        assert_eq!(lasting_loss_heard(&changes, s(0), s(90)), Some(s(45)));
        assert_eq!(lasting_loss_heard(&changes[..1], s(0), s(90)), Some(s(37)));
    }

    #[test]
    fn c_lost_answers_outside_the_belief_do_not_count() {
        // The previous acquisition's answers end before this one began.
        let changes = [(s(5), true), (s(50), true)];
        assert_eq!(lasting_loss_heard(&changes, s(10), s(40)), None);
        assert_eq!(lasting_loss_heard(&changes, s(10), s(60)), Some(s(50)));
    }
}
