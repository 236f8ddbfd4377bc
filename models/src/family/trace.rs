//! How things read in traces: the notes a step leaves, an acquisition's token and bit, times
//! in ticks, a machine's input, a lease's validity and a client's line in a state.

use std::fmt;

use cassalock::algo::Input;
use cassalock::store::MICROS_PER_SECOND;

use super::{FamilyModel, Lane, ModelFamily, Pending, Phase, World};

pub(super) type Notes = Option<Vec<String>>;

pub(super) fn note(notes: &mut Notes, text: impl FnOnce() -> String) {
    if let Some(notes) = notes {
        notes.push(text());
    }
}

pub(super) fn token(client: usize, acquisition: u8) -> String {
    format!("t{client}:{acquisition}")
}

pub(super) fn acquisition_bit(k: u8) -> u8 {
    debug_assert!(k < 8, "per-acquisition bits hold 8 acquisitions");
    1u8 << k.min(7)
}

/// A time in ticks, with the fraction a drift margin leaves ("2.98").
pub(super) fn show_us(time_us: u64) -> String {
    if time_us == u64::MAX {
        "for ever (no bound)".to_owned()
    } else if time_us % MICROS_PER_SECOND == 0 {
        format!("{}", time_us / MICROS_PER_SECOND)
    } else {
        format!("{:.2}", time_us as f64 / MICROS_PER_SECOND as f64)
    }
}

pub(super) fn show_input<R: fmt::Display + fmt::Debug>(input: &Input<R>) -> String {
    match input {
        Input::Reply(reply) => reply.to_string(),
        Input::Failed(failure) => format!("FAILED ({failure:?})"),
        other => format!("{other:?}"),
    }
}

impl<F: ModelFamily> FamilyModel<F> {
    /// "its lease counts from its send at 1, valid while its clock < 2.98", or, when the machine
    /// computed the validity itself, "its lease is valid while its clock < 2.98".
    pub(super) fn show_validity(&self, lease: &F::Lease) -> String {
        let until = show_us(F::valid_until_us(lease, &self.lock));
        match F::counted_from_us(lease) {
            Some(from_us) => format!(
                "its lease counts from its send at {}, valid while its clock < {until}",
                show_us(from_us)
            ),
            None => format!("its lease is valid while its clock < {until}"),
        }
    }

    fn show_pending(pending: &Pending<F::Command, F::Reply>) -> String {
        match pending {
            Pending::Nothing => String::new(),
            Pending::Sleep { wake_tick, .. } => format!(" [asleep until {wake_tick}]"),
            Pending::Request { command, .. } => format!(" [{} in flight]", command),
            Pending::Answer { input, .. } => format!(" [answer {} in flight]", show_input(input)),
        }
    }

    pub(super) fn show_client(&self, world: &World<F>, i: usize) -> String {
        let client = &world.clients[i];
        let what = match &client.phase {
            Phase::Idle => "idle".to_owned(),
            Phase::Acquiring(_) => "acquiring".to_owned(),
            Phase::Holding(hold) | Phase::Extending(_, hold) => {
                let mut text = format!(
                    "{} (lease < {}{})",
                    if matches!(client.phase, Phase::Extending(..)) {
                        "extends"
                    } else {
                        "holds"
                    },
                    show_us(F::valid_until_us(&hold.lease, &self.lock)),
                    if hold.lost { ", knows it is lost" } else { "" }
                );
                if hold.checked {
                    text.push_str(" checked, about to write");
                }
                text
            }
            Phase::Unlocking(_) => "unlocking, waits for its watchdog".to_owned(),
            Phase::Releasing(_) => "releasing".to_owned(),
            Phase::Finished => "done".to_owned(),
        };
        let paused = if client.paused_at_tick.is_some() { " PAUSED" } else { "" };
        let lane = match &client.lane {
            None => String::new(),
            Some(Lane::Running { pending, .. }) => format!(" (watchdog{})", Self::show_pending(pending)),
            Some(Lane::Ended(end)) => format!(" (watchdog ended: {end:?})"),
        };
        let messages = match (client.messages_in_flight, client.message_arrived) {
            (0, false) => String::new(),
            (0, true) => " [unlock message arrived]".to_owned(),
            (n, _) => format!(" [{n} unlock message(s) on the way]"),
        };
        format!(
            "t{i} {what}{}{lane}{messages}{paused}",
            Self::show_pending(&client.pending)
        )
    }
}
