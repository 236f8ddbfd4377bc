//! A run's verdicts: its records written as the event record ([`crate::events`]) and judged
//! by the one judge, `cassalock_judge::rows` (the claims and their definitions are there).

use std::collections::BTreeSet;
use std::time::Duration;

pub use cassalock_judge::rows::{stuck_after, Check, Overlap, Refusal, Verdicts};

use crate::config::RunConfig;
use crate::trace::Record;

/// Judge a run of `config` from its records: written as events, then judged.
pub fn judge(
    config: &RunConfig,
    records: &[Record],
    sim_time: Duration,
    killed_for_good: &BTreeSet<usize>,
) -> Verdicts {
    let header = crate::events::header(config, 0, sim_time, killed_for_good);
    let events = crate::events::events(config, records);
    cassalock_judge::rows::judge_record(&header, &events)
}
