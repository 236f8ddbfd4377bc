//! A holder's belief, one definition for every record: from `acquired` to the first of
//!
//! - `releasing` (it stops using the lock before it asks to release it);
//! - its process's death (a `fault` that kills or restarts its node: a dead process believes
//!   nothing);
//! - the moment its own clock reads the validity it was given (`valid_until_at_ns`, where the
//!   lock gives one; an `extended` before that moment moves it, one after it starts a new
//!   belief, which the lock's answer renewed);
//! - `lease_lost`, where the record's rules say the library's notice ends the holder's use
//!   ([`BeliefRules::lease_lost_ends_it`]: a Redisson holder told by its watchdog; a row-lock
//!   holder is told by `is_lost()`, which it asks only now and then, so a lost lease does not
//!   end its belief until it releases).
//!
//! A belief still open when the record ends lasts to its end. T1-belief is then
//! [`crate::holding::overlaps`] over these intervals.

use std::time::Duration;

use crate::event::{Disruption, Event, What};
use crate::holding::{Beliefs, HoldingInterval, SimulatedTime};

/// What ends a belief beside `releasing`, death and the validity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BeliefRules {
    /// `lease_lost` ends it: the library's notice reaches the code that uses the lock.
    pub lease_lost_ends_it: bool,
}

/// The node index of a client node (`c3` -> 3).
pub fn client_index(node: &str) -> Option<usize> {
    node.strip_prefix('c')?.parse().ok()
}

fn at(event: &Event) -> Duration {
    Duration::from_nanos(event.at_ns)
}

/// Who believes what as a record unfolds: feed it every event in order ([`Believing::see`]),
/// ask who believes now ([`Believing::holders_of`]), and take the intervals at the end.
#[derive(Clone, Debug)]
pub struct Believing {
    rules: BeliefRules,
    beliefs: Beliefs<SimulatedTime>,
}

impl Believing {
    pub fn new(rules: BeliefRules) -> Self {
        Believing {
            rules,
            beliefs: Beliefs::default(),
        }
    }

    /// Take in one event (events in time order).
    pub fn see(&mut self, event: &Event) {
        let now = at(event);
        let lapse = |valid_until_at_ns: &Option<u64>| valid_until_at_ns.map(Duration::from_nanos);
        match &event.what {
            What::Acquired {
                thread,
                lock,
                valid_until_at_ns,
                ..
            } => {
                let Some(process) = client_index(&event.node) else {
                    return;
                };
                self.beliefs
                    .acquired_until(thread, process, lock, now, lapse(valid_until_at_ns));
            }
            What::Extended {
                thread,
                lock,
                valid_until_at_ns,
                ..
            } => {
                let Some(process) = client_index(&event.node) else {
                    return;
                };
                self.beliefs
                    .extended(thread, process, lock, now, lapse(valid_until_at_ns));
            }
            What::Releasing { thread, .. } => self.beliefs.stopped(thread, now),
            What::LeaseLost { thread, .. } if self.rules.lease_lost_ends_it => self.beliefs.stopped(thread, now),
            What::Fault {
                target: Some(node),
                disruption: Some(Disruption::Killed),
                ..
            } => {
                // A restart (the end of a kill) kills the incarnation that runs, if one does.
                if let Some(process) = client_index(node) {
                    self.beliefs.process_died(process, now);
                }
            }
            _ => {}
        }
    }

    /// The holders that believe they hold `lock` now (a lapsed validity not yet noticed by a
    /// later event still counts: the holder has not stopped).
    pub fn holders_of<'a>(&'a self, lock: &'a str) -> impl Iterator<Item = &'a str> {
        self.beliefs.holders_of(lock)
    }

    /// The holders that believe they hold `lock` at `at`, a validity that ran out by then no
    /// longer counted.
    pub fn holders_of_at<'a>(&'a self, lock: &'a str, at: Duration) -> impl Iterator<Item = &'a str> {
        self.beliefs.holders_of_at(lock, at)
    }

    /// The intervals closed since the last call, in the order they closed.
    pub fn take_closed(&mut self) -> std::vec::Drain<'_, HoldingInterval<SimulatedTime>> {
        self.beliefs.take_closed()
    }

    /// When the oldest belief still open began.
    pub fn earliest_open_since(&self) -> Option<Duration> {
        self.beliefs.earliest_open_since()
    }

    /// Every interval, in the order they closed, then the ones open at `end` (by holder).
    pub fn finish(self, end: Duration) -> Vec<HoldingInterval<SimulatedTime>> {
        self.beliefs.finish(end)
    }
}

/// The holding intervals of `events`, a record that ended at `end`.
pub fn holding_intervals(events: &[Event], end: Duration, rules: BeliefRules) -> Vec<HoldingInterval<SimulatedTime>> {
    let mut believing = Believing::new(rules);
    for event in events {
        believing.see(event);
    }
    believing.finish(end)
}
