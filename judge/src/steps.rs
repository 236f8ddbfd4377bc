//! A model's record on a step axis, for drawing.
//!
//! A model record's clock is the model's ticks: a step at tick t, the j-th of its tick, happens
//! at `t * 1e9 + j` ns. Drawn on that axis, every step of one tick lands at one instant: with
//! perfect clocks a whole counterexample is a sliver at tick 1, and a hold that begins and ends
//! within a tick has no width. [`by_steps`] gives the same record each step as one unit of its
//! own: the k-th instant at which anything happened is at `k` seconds (`Clock::ModelSteps`).
//! Order is kept, and so is everything the judge reads: a validity that lapses at a tick lapses
//! at the first step of that tick or later (the first step whose tick reads it), a server's
//! "gone from" likewise, so the judge gives the same verdicts on both records.

use std::collections::BTreeMap;

use crate::event::{Clock, Record, What};

/// One unit of the step axis: a second, so that a drawing's axis counts steps.
const STEP_NS: u64 = 1_000_000_000;

/// `record` with one step per unit of time (`Clock::ModelSteps`); a record on any clock but the
/// model's ticks comes back unchanged.
pub fn by_steps(record: &Record) -> Record {
    if record.header.clock != Clock::ModelTicks {
        return record.clone();
    }
    // Each distinct instant (a step that wrote events), in order: its step number from 1.
    let mut step_of: BTreeMap<u64, u64> = BTreeMap::new();
    for event in &record.events {
        let next = step_of.len() as u64 + 1;
        step_of.entry(event.at_ns).or_insert(next);
    }
    let last_step = step_of.len() as u64;
    // An instant that is not a step's (a validity's lapse, the record's end): the first step
    // at or after it, or one past the last step.
    let at_or_after = |at_ns: u64| -> u64 {
        let step = step_of.range(at_ns..).next().map_or(last_step + 1, |(_, step)| *step);
        step.saturating_mul(STEP_NS)
    };
    let events = record
        .events
        .iter()
        .map(|event| {
            let mut event = event.clone();
            event.at_ns = at_or_after(event.at_ns);
            match &mut event.what {
                What::Acquired { valid_until_at_ns, .. } | What::Extended { valid_until_at_ns, .. } => {
                    *valid_until_at_ns = valid_until_at_ns.map(at_or_after);
                }
                What::ServerHolder { gone_at_ns, .. } => *gone_at_ns = gone_at_ns.map(at_or_after),
                _ => {}
            }
            event
        })
        .collect();
    let mut header = record.header.clone();
    header.clock = Clock::ModelSteps;
    header.run.end_ns = (last_step + 1).saturating_mul(STEP_NS);
    debug_assert!(
        record.header.run.end_ns >= record.events.last().map_or(0, |event| event.at_ns),
        "a record ends after its last event"
    );
    Record { header, events }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Driver, Event, Header, ObservedRules, Rules, RunFacts};

    fn event(at_ns: u64, node: &str, what: What) -> Event {
        Event {
            at_ns,
            node: node.into(),
            clock_us: None,
            what,
        }
    }

    fn acquired(thread: &str, valid_until_at_ns: Option<u64>) -> What {
        What::Acquired {
            thread: thread.into(),
            lock: "k".into(),
            token: thread.into(),
            valid_until_us: valid_until_at_ns.map(|ns| ns / 1000),
            valid_until_at_ns,
        }
    }

    fn released(thread: &str) -> What {
        What::Releasing {
            thread: thread.into(),
            lock: "k".into(),
        }
    }

    /// Two holds within tick 1 and one across ticks: every instant becomes its own step, in
    /// order; a validity that lapses at tick 3 lapses at the first step of tick 3; the record
    /// ends a step after its last.
    #[test]
    fn each_instant_becomes_one_step_and_lapses_move_to_the_next_step() {
        let tick = STEP_NS;
        let record = Record {
            header: Header::new(
                Driver::Model,
                "test",
                Clock::ModelTicks,
                RunFacts {
                    clients: 2,
                    end_ns: 4 * tick + 1,
                    rules: Rules::Observed(ObservedRules::default()),
                    ..RunFacts::default()
                },
            ),
            events: vec![
                event(tick + 1, "c0", acquired("c0-1", Some(3 * tick))),
                event(tick + 2, "c0", released("c0-1")),
                event(tick + 2, "c1", acquired("c1-1", None)),
                event(tick + 3, "c1", released("c1-1")),
                event(3 * tick + 1, "c0", acquired("c0-2", Some(9 * tick))),
                event(4 * tick, "c0", released("c0-2")),
            ],
        };
        let stepped = by_steps(&record);
        assert_eq!(stepped.header.clock, Clock::ModelSteps);
        let at: Vec<u64> = stepped.events.iter().map(|e| e.at_ns / STEP_NS).collect();
        assert_eq!(at, [1, 2, 2, 3, 4, 5]);
        assert_eq!(stepped.header.run.end_ns, 6 * STEP_NS);
        let lapses: Vec<Option<u64>> = stepped
            .events
            .iter()
            .filter_map(|e| match &e.what {
                What::Acquired { valid_until_at_ns, .. } => Some(valid_until_at_ns.map(|ns| ns / STEP_NS)),
                _ => None,
            })
            .collect();
        // Tick 3 begins at step 4; tick 9 is past the last step (5), so one past it.
        assert_eq!(lapses, [Some(4), None, Some(6)]);
        // A record on another clock is left as it is.
        let mut wall = record.clone();
        wall.header.clock = Clock::WallSinceEpoch;
        assert_eq!(by_steps(&wall), wall);
    }
}
