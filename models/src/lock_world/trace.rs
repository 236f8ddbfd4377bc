//! How a step and a state read in a counterexample trace.

use cassalock::algo::{Acquire, StepTag};
use cassalock::store::{StoreReply, StoreRequest, MICROS_PER_SECOND};

/// What a step did, for traces (computed only when a trace is printed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A store request made for a machine step, and its reply.
    Store {
        tag: StepTag,
        request: StoreRequest,
        reply: StoreReply,
        coordinator_now_us: u64,
    },
    /// Another action carried out for a machine step.
    Did {
        tag: StepTag,
        what: String,
    },
    /// A machine finished.
    Done {
        tag: StepTag,
        what: String,
    },
    Note(String),
}

pub(crate) type Events = Option<Vec<Event>>;

pub(super) fn note(events: &mut Events, text: impl FnOnce() -> String) {
    if let Some(events) = events {
        events.push(Event::Note(text()));
    }
}

/// "t3:1" → (3, 1).
pub fn parse_model_thread(id: &str) -> Option<(usize, u8)> {
    let (client, sequence) = id.split_once(':')?;
    Some((client.strip_prefix('t')?.parse().ok()?, sequence.parse().ok()?))
}

/// A microsecond time as ticks, for traces.
pub fn show_time(time_us: u64) -> String {
    format!("{}", time_us / MICROS_PER_SECOND)
}

pub(super) fn show_acquire(outcome: &Acquire) -> String {
    match outcome {
        Acquire::Acquired { .. } => "acquired".into(),
        Acquire::NotAcquired => "not acquired".into(),
        Acquire::TimedOut => "timed out".into(),
        Acquire::Failed { failure, left } => format!("failed: {failure} (left: {left:?})"),
    }
}

/// A queue column as "time|thread" (the 20 zero-padded digits are hard to read).
pub fn short_column(column: &str) -> String {
    if let Some((counter, thread)) = cassalock::algo::fence::parse_counter_token(column) {
        return format!("#{counter}/{thread}");
    }
    match cassalock::algo::queue_column::parse_queue_column(column) {
        Some((time, thread)) => format!("{}|{thread}", time / MICROS_PER_SECOND),
        None => column.to_owned(),
    }
}
