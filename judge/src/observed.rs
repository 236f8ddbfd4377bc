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
use crate::holding::{overlaps, HoldingInterval, Overlap, SimulatedTime};
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

/// Everything judged and measured about one observed run.
#[derive(Clone, Debug, Default)]
pub struct ObservedVerdicts {
    pub acquisitions: u64,
    /// From each `invoke` to its `acquired`, milliseconds, in acquisition order.
    pub waits_ms: Vec<f64>,
    /// Every belief, by (acquisition, end, holder).
    pub intervals: Vec<HoldingInterval<SimulatedTime>>,
    pub overlaps: Vec<Overlap<SimulatedTime>>,
    pub stale_writes: Vec<StaleWrite>,
    /// Hold lengths (beliefs that ended before the record did), milliseconds.
    pub holds_ms: Vec<f64>,
    /// From one holder's belief ending to the next acquisition by another, milliseconds.
    pub handoffs_ms: Vec<f64>,
    pub jain: f64,
    pub longest_run: u64,
    /// T1-belief and T1-resource.
    pub checks: Vec<(ClaimId, ClaimVerdict, String)>,
}

impl ObservedVerdicts {
    pub fn stale_accepted(&self) -> usize {
        self.stale_writes.iter().filter(|write| write.accepted).count()
    }

    pub fn any_violated(&self) -> bool {
        self.checks.iter().any(|(_, verdict, _)| verdict.is_violated())
    }
}

/// Judge a record of a run seen from outside (its header's rules must be
/// [`Rules::Observed`]).
///
/// # Panics
/// If the header asks for other rules; [`crate::judge`] picks the judge a record asks for.
pub fn judge_record(header: &Header, events: &[Event]) -> ObservedVerdicts {
    let Rules::Observed(rules) = &header.run.rules else {
        panic!(
            "the observed runs' judge was given a record with other rules: {:?}",
            header.run.rules
        )
    };
    judge(
        rules,
        header.clock,
        header.run.clients,
        Duration::from_nanos(header.run.end_ns),
        events,
    )
}

/// Judge `events` of `clients` clients, a record on `clock` that ended at `end`.
pub fn judge(rules: &ObservedRules, clock: Clock, clients: usize, end: Duration, events: &[Event]) -> ObservedVerdicts {
    let mut v = ObservedVerdicts::default();
    let mut believing = Believing::new(BeliefRules {
        lease_lost_ends_it: rules.lease_lost_ends_it,
    });
    let mut invoked: BTreeMap<&str, Duration> = BTreeMap::new();
    // (when, client) of every acquisition, for the shares and runs.
    let mut acquired: Vec<(Duration, &str)> = Vec::new();
    for event in events {
        believing.see(event);
        let at = Duration::from_nanos(event.at_ns);
        match &event.what {
            What::Invoke { .. } => {
                invoked.insert(&event.node, at);
            }
            What::Acquired { .. } => {
                v.acquisitions += 1;
                let since = invoked.remove(event.node.as_str()).unwrap_or(at);
                v.waits_ms.push(ms(at.saturating_sub(since)));
                acquired.push((at, &event.node));
            }
            What::Write {
                client,
                token,
                stale: Some(true),
                accepted,
                ..
            } => v.stale_writes.push(StaleWrite {
                at,
                client: client.clone().unwrap_or_else(|| event.node.clone()),
                token: token.clone(),
                accepted: accepted.unwrap_or(true),
            }),
            _ => {}
        }
    }
    let mut intervals = believing.finish(end);
    intervals.sort_by(|a, b| (a.acquired_at, a.released_at, &a.holder).cmp(&(b.acquired_at, b.released_at, &b.holder)));
    // The cycle: holds, and handoffs between consecutive beliefs of two clients (one still
    // open at the end has no hold to count).
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
    v.overlaps = overlaps(&intervals);
    v.intervals = intervals;
    acquired.sort();
    let mut shares: BTreeMap<&str, f64> = BTreeMap::new();
    for &(_, client) in &acquired {
        *shares.entry(client).or_default() += 1.0;
    }
    let mut share_list: Vec<f64> = shares.into_values().collect();
    share_list.resize(clients.max(share_list.len()), 0.0);
    v.jain = stats::jain(&share_list);
    v.longest_run = stats::longest_run(acquired.iter().map(|&(_, client)| client));
    v.checks = vec![
        (
            ClaimId::T1Belief,
            ClaimVerdict::from_holds(v.overlaps.is_empty()),
            match v.overlaps.first() {
                None => format!("{}, never two believers", count(v.acquisitions, "acquisition")),
                Some(first) => format!(
                    "{}; first: {} acquired at {} while {} held until {}",
                    count(v.overlaps.len(), "overlap"),
                    first.second.holder,
                    instant(clock, first.from),
                    first.first.holder,
                    instant(clock, first.first.released_at)
                ),
            },
        ),
        (
            ClaimId::T1Resource,
            ClaimVerdict::from_holds(v.stale_accepted() == 0),
            format!(
                "{} accepted, {} refused by fencing{}",
                count(v.stale_accepted(), "stale write"),
                v.stale_writes.len() - v.stale_accepted(),
                if rules.fencing { "" } else { " (fencing off)" }
            ),
        ),
    ];
    v
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
}
