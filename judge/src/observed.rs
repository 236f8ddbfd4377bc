//! The judge of a run seen from outside: what its clients reported (each acquisition, when
//! its holder stopped believing, what failed) and what the resource saw (each write, accepted
//! or refused, stale or not). The real runner's runs are such records, whatever lock they ran;
//! so will be the runs of shipped client libraries. Judged:
//!
//! - **T1-belief**: two holders' beliefs ([`crate::belief`]) overlap.
//! - **T1-resource**: the resource accepted a stale write (a token below one it had accepted).
//!
//! and measured, for the reports: waits (from a node's `invoke` to its `acquired`), holds and
//! handoffs (from one holder's belief ending to the next acquisition by another), each client
//! node's share (Jain's index, every client counted, even one that never acquired) and the
//! longest run of acquisitions by one node.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::belief::{BeliefRules, Believing};
use crate::event::{Clock, Event, Header, ObservedRules, Rules, What};
use crate::holding::{HoldingInterval, Overlap, SimulatedTime};
use crate::overlap_window::OverlapWindow;
use crate::stats;
use crate::text::count;
use crate::{ClaimId, ClaimVerdict};

/// A stale write the resource saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleWrite {
    pub at: Duration,
    pub client: String,
    pub token: String,
    /// It went through: damage (only without fencing).
    pub accepted: bool,
}

/// How much of a run the judge keeps beside its verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Every belief, overlap, stale write and wait, and the figures of the cycle (holds,
    /// handoffs): for a run's summary, its timeline and its tests. Grows with the history.
    Everything,
    /// The verdicts, the counts and the first [`EXAMPLES`] overlaps and stale writes: memory
    /// that does not grow with the history's length (`cassalock judge FILE`).
    Verdicts,
}

/// Overlaps and stale writes kept as examples under [`Keep::Verdicts`].
pub const EXAMPLES: usize = 5;

/// Everything judged and measured about one observed run.
#[derive(Clone, Debug, Default)]
pub struct ObservedVerdicts {
    pub acquisitions: u64,
    /// From each `invoke` to its `acquired`, milliseconds, in acquisition order
    /// ([`Keep::Everything`] only).
    pub waits_ms: Vec<f64>,
    /// Every belief, by (acquisition, end, holder) ([`Keep::Everything`] only).
    pub intervals: Vec<HoldingInterval<SimulatedTime>>,
    /// Two holders at once, in [`crate::holding::overlaps`]'s order: every one, or the first
    /// [`EXAMPLES`] under [`Keep::Verdicts`].
    pub overlaps: Vec<Overlap<SimulatedTime>>,
    /// How many overlaps there were.
    pub overlap_count: u64,
    /// Stale writes in the order they happened: every one, or the first [`EXAMPLES`].
    pub stale_writes: Vec<StaleWrite>,
    /// How many stale writes the resource saw, and how many it accepted.
    pub stale_count: u64,
    pub stale_accepted_count: u64,
    /// Hold lengths (beliefs that ended before the record did), milliseconds
    /// ([`Keep::Everything`] only).
    pub holds_ms: Vec<f64>,
    /// From one holder's belief ending to the next acquisition by another, milliseconds
    /// ([`Keep::Everything`] only).
    pub handoffs_ms: Vec<f64>,
    pub jain: f64,
    pub longest_run: u64,
    /// T1-belief and T1-resource.
    pub checks: Vec<(ClaimId, ClaimVerdict, String)>,
}

impl ObservedVerdicts {
    pub fn stale_accepted(&self) -> usize {
        usize::try_from(self.stale_accepted_count).unwrap_or(usize::MAX)
    }

    pub fn any_violated(&self) -> bool {
        self.checks.iter().any(|(_, verdict, _)| verdict.is_violated())
    }

    /// No claim was violated, and a limit of the judge left one undecided.
    pub fn any_bounded(&self) -> bool {
        !self.any_violated()
            && self
                .checks
                .iter()
                .any(|(_, verdict, _)| *verdict == ClaimVerdict::Bounded)
    }
}

/// Judge a record of a run seen from outside (its header's rules must be
/// [`Rules::Observed`]), keeping everything.
///
/// # Panics
/// If the header asks for other rules; [`crate::judge`] picks the judge a record asks for.
pub fn judge_record(header: &Header, events: &[Event]) -> ObservedVerdicts {
    let mut judge = Judge::for_record(header, Keep::Everything);
    for event in events {
        judge.see(event);
    }
    judge.finish(Duration::from_nanos(header.run.end_ns))
}

/// Judge `events` of `clients` clients, a record on `clock` that ended at `end`, keeping
/// everything.
pub fn judge(rules: &ObservedRules, clock: Clock, clients: usize, end: Duration, events: &[Event]) -> ObservedVerdicts {
    let mut judge = Judge::new(rules, clock, clients, Keep::Everything);
    for event in events {
        judge.see(event);
    }
    judge.finish(end)
}

/// The judge of an observed run, fed one event at a time in time order ([`Judge::see`]), then
/// told when the record ended ([`Judge::finish`]). Under [`Keep::Verdicts`] its memory grows
/// with the number of clients, never with the number of events.
pub struct Judge {
    rules: ObservedRules,
    clock: Clock,
    clients: usize,
    keep: Keep,
    believing: Believing,
    window: OverlapWindow<SimulatedTime>,
    now: Duration,
    /// Each waiting node's `invoke`.
    invoked: BTreeMap<String, Duration>,
    acquisitions: u64,
    /// Acquisitions by client, for the shares.
    shares: BTreeMap<String, u64>,
    /// Acquisitions at the instant `now` not yet counted in the runs (ties go by client name).
    this_instant: Vec<String>,
    runs: LongestRun,
    stale_writes: Vec<StaleWrite>,
    stale_count: u64,
    stale_accepted_count: u64,
    waits_ms: Vec<f64>,
    intervals: Vec<HoldingInterval<SimulatedTime>>,
}

/// The longest stretch of acquisitions by one client, counted as they come.
#[derive(Default)]
struct LongestRun {
    previous: Option<String>,
    run: u64,
    longest: u64,
}

impl LongestRun {
    fn see(&mut self, client: String) {
        self.run = if self.previous.as_ref() == Some(&client) {
            self.run + 1
        } else {
            1
        };
        self.longest = self.longest.max(self.run);
        self.previous = Some(client);
    }
}

impl Judge {
    /// A judge for a record with this header.
    ///
    /// # Panics
    /// If the header asks for other rules than [`Rules::Observed`].
    pub fn for_record(header: &Header, keep: Keep) -> Judge {
        let Rules::Observed(rules) = &header.run.rules else {
            panic!(
                "the observed runs' judge was given a record with other rules: {:?}",
                header.run.rules
            )
        };
        Judge::new(rules, header.clock, header.run.clients, keep)
    }

    pub fn new(rules: &ObservedRules, clock: Clock, clients: usize, keep: Keep) -> Judge {
        Judge {
            rules: rules.clone(),
            clock,
            clients,
            keep,
            believing: Believing::new(BeliefRules {
                lease_lost_ends_it: rules.lease_lost_ends_it,
            }),
            window: OverlapWindow::new(match keep {
                Keep::Everything => usize::MAX,
                Keep::Verdicts => EXAMPLES,
            }),
            now: Duration::ZERO,
            invoked: BTreeMap::new(),
            acquisitions: 0,
            shares: BTreeMap::new(),
            this_instant: Vec::new(),
            runs: LongestRun::default(),
            stale_writes: Vec::new(),
            stale_count: 0,
            stale_accepted_count: 0,
            waits_ms: Vec::new(),
            intervals: Vec::new(),
        }
    }

    /// Take in the next event (events in time order).
    pub fn see(&mut self, event: &Event) {
        let at = Duration::from_nanos(event.at_ns);
        if at != self.now {
            self.count_runs();
            self.now = at;
        }
        self.believing.see(event);
        self.close_intervals(self.now);
        match &event.what {
            What::Invoke { .. } => {
                self.invoked.insert(event.node.clone(), at);
            }
            What::Acquired { .. } => {
                self.acquisitions += 1;
                let since = self.invoked.remove(event.node.as_str()).unwrap_or(at);
                if self.keep == Keep::Everything {
                    self.waits_ms.push(ms(at.saturating_sub(since)));
                }
                *self.shares.entry(event.node.clone()).or_default() += 1;
                self.this_instant.push(event.node.clone());
            }
            What::Write {
                client,
                token,
                stale: Some(true),
                accepted,
                ..
            } => {
                let accepted = accepted.unwrap_or(true);
                self.stale_count += 1;
                self.stale_accepted_count += u64::from(accepted);
                if self.keep == Keep::Everything || self.stale_writes.len() < EXAMPLES {
                    self.stale_writes.push(StaleWrite {
                        at,
                        client: client.clone().unwrap_or_else(|| event.node.clone()),
                        token: token.clone(),
                        accepted,
                    });
                }
            }
            _ => {}
        }
    }

    /// The acquisitions of the instant that ended, by client name, into the runs.
    fn count_runs(&mut self) {
        self.this_instant.sort();
        for client in self.this_instant.drain(..) {
            self.runs.see(client);
        }
    }

    /// Hand the beliefs that closed to the overlap window (and keep them, if asked).
    fn close_intervals(&mut self, present: Duration) {
        let closed: Vec<_> = self.believing.take_closed().collect();
        // Nothing still to close began before the oldest open belief, the present, or any
        // belief of this batch (one closing after another in it may overlap the other).
        let horizon = closed
            .iter()
            .map(|interval| interval.acquired_at)
            .chain(self.believing.earliest_open_since())
            .fold(present, Duration::min);
        for interval in closed {
            self.window.closed(&interval, horizon);
            if self.keep == Keep::Everything {
                self.intervals.push(interval);
            }
        }
    }

    /// The record ended at `end`: beliefs still open last until then. Every verdict.
    pub fn finish(mut self, end: Duration) -> ObservedVerdicts {
        self.count_runs();
        let open = std::mem::replace(&mut self.believing, Believing::new(BeliefRules::default())).finish(end);
        for (i, interval) in open.iter().enumerate() {
            // Those still to close began no earlier than the earliest of them.
            let horizon = open[i + 1..]
                .iter()
                .map(|later| later.acquired_at)
                .min()
                .map_or(end, |since| since.min(end));
            self.window.closed(interval, horizon);
            if self.keep == Keep::Everything {
                self.intervals.push(interval.clone());
            }
        }
        let (overlap_count, overlaps, window_full) = self.window.finish();
        let mut v = ObservedVerdicts {
            acquisitions: self.acquisitions,
            overlap_count,
            overlaps,
            stale_count: self.stale_count,
            stale_accepted_count: self.stale_accepted_count,
            stale_writes: self.stale_writes,
            waits_ms: self.waits_ms,
            ..ObservedVerdicts::default()
        };
        if self.keep == Keep::Everything {
            let mut intervals = self.intervals;
            intervals.sort_by(|a, b| {
                (a.acquired_at, a.released_at, &a.holder).cmp(&(b.acquired_at, b.released_at, &b.holder))
            });
            debug_assert_eq!(
                v.overlaps,
                crate::holding::overlaps(&intervals),
                "the overlap window and the whole list disagree"
            );
            // The cycle: holds, and handoffs between consecutive beliefs of two clients (one
            // still open at the end has no hold to count).
            v.holds_ms = intervals
                .iter()
                .filter(|interval| interval.released_at < end)
                .map(|interval| ms(interval.length()))
                .collect();
            v.handoffs_ms = intervals
                .windows(2)
                .filter(|pair| pair[0].holder != pair[1].holder && pair[0].released_at < end)
                .map(|pair| ms(pair[1].acquired_at.saturating_sub(pair[0].released_at)))
                .collect();
            v.intervals = intervals;
        }
        let mut share_list: Vec<f64> = self.shares.into_values().map(|n| n as f64).collect();
        share_list.resize(self.clients.max(share_list.len()), 0.0);
        v.jain = stats::jain(&share_list);
        v.longest_run = self.runs.longest;
        v.checks = vec![
            (
                ClaimId::T1Belief,
                if v.overlap_count > 0 {
                    ClaimVerdict::Violated
                } else if window_full {
                    ClaimVerdict::Bounded
                } else {
                    ClaimVerdict::Holds
                },
                t1_belief_detail(&v, self.clock, window_full),
            ),
            (
                ClaimId::T1Resource,
                ClaimVerdict::from_holds(v.stale_accepted_count == 0),
                format!(
                    "{} accepted, {} refused by fencing{}",
                    count(v.stale_accepted_count, "stale write"),
                    v.stale_count - v.stale_accepted_count,
                    if self.rules.fencing { "" } else { " (fencing off)" }
                ),
            ),
        ];
        v
    }
}

fn t1_belief_detail(v: &ObservedVerdicts, clock: Clock, window_full: bool) -> String {
    let full = if window_full {
        format!(
            " (the judge's window of {} beliefs filled: overlaps with beliefs closed after that were not all counted)",
            crate::overlap_window::WINDOW_LIMIT
        )
    } else {
        String::new()
    };
    match v.overlaps.first() {
        None => format!("{}, never two believers{full}", count(v.acquisitions, "acquisition")),
        Some(first) => format!(
            "{}; first: {} acquired at {} while {} held until {}{full}",
            count(v.overlap_count, "overlap"),
            first.second.holder,
            instant(clock, first.from),
            first.first.holder,
            instant(clock, first.first.released_at)
        ),
    }
}

/// Milliseconds, from whole microseconds (the real runner's clock reads microseconds).
fn ms(duration: Duration) -> f64 {
    duration.as_micros() as f64 / 1000.0
}

/// An instant as its clock reads: microseconds since the epoch on the wall clock; a tick and
/// the step within it on the model's; seconds on the simulator's.
fn instant(clock: Clock, at: Duration) -> String {
    match clock {
        Clock::WallSinceEpoch => format!("{} us", at.as_micros()),
        Clock::ModelTicks => format!("tick {}, step {}", at.as_secs(), at.subsec_nanos()),
        Clock::SimulatedSinceStart => format!("{:.6} s", at.as_secs_f64()),
    }
}

impl fmt::Display for ObservedVerdicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (claim, verdict, detail) in &self.checks {
            writeln!(
                f,
                "  {:<12} {:<8} {detail}",
                claim.as_str(),
                match verdict {
                    ClaimVerdict::Holds => "ok",
                    ClaimVerdict::Violated => "FAILED",
                    ClaimVerdict::NotExercised => "-",
                    ClaimVerdict::Bounded => "bounded",
                }
            )?;
        }
        writeln!(
            f,
            "  fairness     Jain {:.3} over {}, longest run by one client {}",
            self.jain,
            count(self.acquisitions, "acquisition"),
            self.longest_run
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Call;

    fn event(us: u64, node: &str, what: What) -> Event {
        Event {
            at_ns: us * 1000,
            node: node.to_owned(),
            clock_us: None,
            what,
        }
    }

    /// `locker` asks at `asked_us`, holds from `from_us` to `to_us`.
    fn hold(locker: &str, node: &str, asked_us: u64, from_us: u64, to_us: u64) -> Vec<Event> {
        vec![
            event(
                asked_us,
                node,
                What::Invoke {
                    client: locker.into(),
                    call: Call::Lock,
                    acquisition: 1,
                },
            ),
            event(
                from_us,
                node,
                What::Acquired {
                    thread: locker.into(),
                    lock: "K".into(),
                    token: format!("{from_us:020}"),
                    valid_until_us: None,
                    valid_until_at_ns: None,
                },
            ),
            event(
                to_us,
                node,
                What::Releasing {
                    thread: locker.into(),
                    lock: "K".into(),
                },
            ),
        ]
    }

    fn judged(mut events: Vec<Event>, clients: usize) -> ObservedVerdicts {
        events.sort_by_key(|event| event.at_ns);
        judge(
            &ObservedRules {
                fencing: true,
                lease_lost_ends_it: false,
            },
            Clock::WallSinceEpoch,
            clients,
            Duration::from_millis(1),
            &events,
        )
    }

    #[test]
    fn t1_belief_counts_every_overlapping_pair_and_measures_the_cycle() {
        let back_to_back = [hold("a", "c0", 0, 10, 20), hold("b", "c1", 5, 20, 30)].concat();
        let v = judged(back_to_back, 2);
        assert!(v.overlaps.is_empty());
        assert_eq!(v.waits_ms, [0.01, 0.015]);
        assert_eq!(v.handoffs_ms, [0.0]);
        assert_eq!(v.holds_ms, [0.01, 0.01]);
        let three = [
            hold("a", "c0", 0, 0, 100),
            hold("b", "c1", 0, 10, 90),
            hold("c", "c2", 0, 20, 80),
        ]
        .concat();
        let v = judged(three, 3);
        assert_eq!(v.overlaps.len(), 3);
        assert!(v.checks[0].1.is_violated());
        assert!(
            v.checks[0]
                .2
                .starts_with("3 overlaps; first: b acquired at 10 us while a held until 100 us"),
            "{}",
            v.checks[0].2
        );
    }

    #[test]
    fn shares_count_a_client_that_never_acquired() {
        let v = judged([hold("a", "c0", 0, 10, 20), hold("a", "c0", 20, 30, 40)].concat(), 2);
        assert_eq!(v.longest_run, 2);
        assert!((v.jain - 0.5).abs() < 1e-9, "{}", v.jain);
    }

    #[test]
    fn a_stale_write_accepted_violates_t1_resource_and_one_refused_does_not() {
        let write = |us: u64, accepted: bool| {
            event(
                us,
                "resource",
                What::Write {
                    client: Some("a".into()),
                    lock: None,
                    token: "1".into(),
                    phase: None,
                    accepted: Some(accepted),
                    stale: Some(true),
                    acquisition: None,
                },
            )
        };
        let refused = judged(vec![write(5, false)], 1);
        assert!(!refused.any_violated());
        assert!(
            refused.checks[1].2.contains("0 stale writes accepted, 1 refused"),
            "{}",
            refused.checks[1].2
        );
        let accepted = judged(vec![write(5, true)], 1);
        assert!(accepted.checks[1].1.is_violated());
    }

    /// A record drawn from `seed`: four clients on two nodes each... acquiring, extending,
    /// losing, releasing, dying, writing stale tokens, in random order and with validities
    /// that lapse.
    fn random_events(seed: u64, n: usize) -> Vec<Event> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut next = move |bound: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % bound
        };
        let mut events = Vec::new();
        let mut us = 0;
        for _ in 0..n {
            us += next(3);
            let node = format!("c{}", next(4));
            let thread = format!("{node}-t{}", next(2));
            let lapse = |from: u64, pick: u64| (pick > 0).then(|| (from + pick * 7) * 1000);
            let what = match next(7) {
                0 => What::Invoke {
                    client: thread.clone(),
                    call: Call::Lock,
                    acquisition: 1,
                },
                1 | 2 => What::Acquired {
                    thread: thread.clone(),
                    lock: if next(5) == 0 { "L".into() } else { "K".into() },
                    token: us.to_string(),
                    valid_until_us: None,
                    valid_until_at_ns: lapse(us, next(4)),
                },
                3 => What::Extended {
                    thread: thread.clone(),
                    lock: "K".into(),
                    valid_until_us: 0,
                    valid_until_at_ns: lapse(us, next(4)),
                },
                4 => What::Releasing {
                    thread: thread.clone(),
                    lock: "K".into(),
                },
                5 => What::Fault {
                    text: "kill".into(),
                    target: Some(node.clone()),
                    disruption: Some(crate::event::Disruption::Killed),
                    begins: true,
                    at_step: false,
                },
                _ => What::Write {
                    client: Some(thread.clone()),
                    lock: None,
                    token: "1".into(),
                    phase: None,
                    accepted: Some(next(2) == 0),
                    stale: Some(next(3) == 0),
                    acquisition: None,
                },
            };
            events.push(event(us, &node, what));
        }
        events
    }

    #[test]
    fn kept_verdicts_equal_everything_kept_on_random_records() {
        let rules = ObservedRules {
            fencing: false,
            lease_lost_ends_it: true,
        };
        let mut overlapping = 0;
        for seed in 0..300 {
            let events = random_events(seed, 1 + (seed as usize % 60));
            let end = Duration::from_nanos(events.last().map_or(0, |e| e.at_ns) + 5_000);
            let everything = judge(&rules, Clock::WallSinceEpoch, 4, end, &events);
            let mut bounded = Judge::new(&rules, Clock::WallSinceEpoch, 4, Keep::Verdicts);
            for event in &events {
                bounded.see(event);
            }
            let bounded = bounded.finish(end);
            assert_eq!(everything.checks, bounded.checks, "seed {seed}");
            assert_eq!(
                everything.overlap_count,
                crate::holding::overlaps(&everything.intervals).len() as u64
            );
            assert_eq!(everything.overlap_count, bounded.overlap_count, "seed {seed}");
            assert_eq!(
                &everything.overlaps[..bounded.overlaps.len()],
                &bounded.overlaps[..],
                "seed {seed}"
            );
            assert_eq!(
                bounded.overlaps.len() as u64,
                everything.overlap_count.min(EXAMPLES as u64)
            );
            assert_eq!(
                (everything.jain, everything.longest_run),
                (bounded.jain, bounded.longest_run)
            );
            assert_eq!(
                (everything.stale_count, everything.stale_accepted_count),
                (bounded.stale_count, bounded.stale_accepted_count)
            );
            assert!(bounded.intervals.is_empty() && bounded.waits_ms.is_empty());
            overlapping += u64::from(everything.overlap_count > 0);
        }
        // The records exercise the window, not only quiet runs.
        assert!(overlapping > 100, "{overlapping} of 300 records overlap");
    }
}
