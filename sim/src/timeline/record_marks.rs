//! The marks a record's own events call for, where no judge's list of them does: the writes a
//! resource accepted from a stale holder or refused (the families', a client program's), and a
//! client program's lost notices.

use std::collections::BTreeMap;
use std::time::Duration;

use cassalock_judge::event::{Event, Header, Rules, What};

/// What [`record_marks`] finds, each shifted onto the picture's time.
pub(super) struct RecordMarks {
    /// Stale writes the resource accepted, where the judge rather than the resource decides
    /// (the families'): when, and the writer's node.
    pub stale_writes: Vec<(Duration, String)>,
    /// Writes a fenced resource refused where the record rather than the row locks' judge
    /// says so: when, the writer's node, and whether the writer was the only holder (C-token).
    pub refused_writes: Vec<(Duration, String, bool)>,
    /// A client program's lost notices (its `lease_lost` events, what C-lost judges): when,
    /// and the holder's thread.
    pub lost_notices: Vec<(Duration, String)>,
}

/// The writer of each token, in a families' record: the node that acquired with it.
fn holders_of_tokens(events: &[Event]) -> BTreeMap<&str, &str> {
    events
        .iter()
        .filter_map(|event| match &event.what {
            What::Acquired { token, .. } => Some((token.as_str(), event.node.as_str())),
            _ => None,
        })
        .collect()
}

/// The marks of `events` under `header`'s rules, `shift`ed onto the picture's time.
pub(super) fn record_marks(header: &Header, events: &[Event], shift: impl Fn(Duration) -> Duration) -> RecordMarks {
    let holder_of_token = holders_of_tokens(events);
    let stale_writes = match &header.run.rules {
        Rules::Families(rules) => cassalock_judge::families::judged_writes(rules, events)
            .into_iter()
            .filter(|write| write.stale_accepted)
            .filter_map(|write| {
                let node = holder_of_token.get(write.token.as_str())?;
                Some((shift(write.at), (*node).to_owned()))
            })
            .collect(),
        Rules::Rows(_) | Rules::Observed(_) => Vec::new(),
    };
    let refused_writes = match &header.run.rules {
        Rules::Families(rules) => cassalock_judge::families::judged_writes(rules, events)
            .into_iter()
            .filter(|write| write.refused)
            .filter_map(|write| {
                let node = holder_of_token.get(write.token.as_str())?;
                Some((shift(write.at), (*node).to_owned(), false))
            })
            .collect(),
        Rules::Observed(_) => events
            .iter()
            .filter_map(|event| match &event.what {
                What::Write {
                    client: Some(client),
                    accepted: Some(false),
                    stale,
                    ..
                } => Some((
                    shift(Duration::from_nanos(event.at_ns)),
                    client.clone(),
                    *stale == Some(false),
                )),
                _ => None,
            })
            .collect(),
        Rules::Rows(_) => Vec::new(),
    };
    let lost_notices = match &header.run.rules {
        Rules::Observed(_) => events
            .iter()
            .filter_map(|event| match &event.what {
                What::LeaseLost { thread, .. } => Some((shift(Duration::from_nanos(event.at_ns)), thread.clone())),
                _ => None,
            })
            .collect(),
        Rules::Rows(_) | Rules::Families(_) => Vec::new(),
    };
    RecordMarks {
        stale_writes,
        refused_writes,
        lost_notices,
    }
}
