//! A family run's verdicts: its records written as the event record (`super::events`) and
//! judged by the one judge, `cassalock_judge::families` (the claims and their definitions are
//! there).

pub use cassalock_judge::families::{longest_handover, Claim, FamilyVerdicts, Verdict};

pub use super::events::lost_bound_ms;
pub use crate::clock::clock_passes;
