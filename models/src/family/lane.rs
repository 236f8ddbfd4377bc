//! A holder's renewal lane (Redisson's watchdog, etcd's keep-alive): started when the lock is
//! acquired, stepped as a task of its own, its lease handed to the holder and its end told.

use cassalock::algo::family::RenewalEnd;
use cassalock::algo::{Action, Input};

use super::trace::{note, show_input, Notes};
use super::{FamilyModel, Hold, Lane, ModelFamily, Pending, Phase, World};

impl<F: ModelFamily> FamilyModel<F> {
    /// Start a new holder's renewal lane, if the lock has one: it goes to sleep at once.
    pub(super) fn start_lane(&self, world: &mut World<F>, i: usize, lease: &F::Lease, notes: &mut Notes) {
        let Some(mut machine) = F::lane(lease, &self.lock) else {
            return;
        };
        let now_us = self.client_now_us(world);
        let step = self.resume(&mut machine, Input::Start, now_us, notes);
        let (pending, done) = Self::pending_of(world.now_tick, step, notes);
        debug_assert!(done.is_none(), "a renewal lane does not end as it starts");
        world.clients[i].lane = Some(Lane::Running {
            machine,
            pending,
            stop: false,
        });
    }

    /// The renewal lane's next step: wake up, or take in its request's answer. Its lease
    /// becomes the holder's (the driver's guard reads the lane's); a lost or expired lease is
    /// told to the holder at once (the guard's `is_valid` reads how the lane ended).
    pub(super) fn step_lane(&self, world: &mut World<F>, i: usize, notes: &mut Notes) {
        let Some(Lane::Running {
            mut machine,
            pending,
            stop,
        }) = world.clients[i].lane.take()
        else {
            unreachable!("t{i}'s renewal lane steps only while it runs");
        };
        let input = match pending {
            Pending::Answer { tag, input, .. } => {
                note(notes, || {
                    format!("{tag}: t{i}'s watchdog receives {}", show_input(&input))
                });
                input
            }
            Pending::Sleep { wake_tick, .. } => {
                debug_assert!(world.now_tick >= wake_tick, "a renewal lane sleeps its whole period");
                Input::Woke
            }
            other => unreachable!("t{i}'s watchdog stepped while it waits for {other:?}"),
        };
        let now_us = self.client_now_us(world);
        let mut step = self.resume(&mut machine, input, now_us, notes);
        if stop && matches!(step.action, Action::Sleep { .. }) {
            // The release asked it to stop: it ends at this sleep.
            step = self.resume(&mut machine, Input::StopRequested, now_us, notes);
        }
        let tag = step.tag;
        let lease = F::lane_lease(&machine);
        let (pending, done) = Self::pending_of(world.now_tick, step, notes);
        if let Some(hold) = Self::hold_mut(&mut world.clients[i].phase) {
            if F::valid_until_us(&lease, &self.lock) != F::valid_until_us(&hold.lease, &self.lock) {
                note(notes, || {
                    let validity = self.show_validity(&lease);
                    format!(
                        "t{i}'s lease now {}",
                        validity.strip_prefix("its lease ").unwrap_or(&validity)
                    )
                });
            }
            hold.lease = lease;
        }
        world.clients[i].lane = Some(match done {
            None => Lane::Running { machine, pending, stop },
            Some(output) => {
                let end = F::lane_ended(output);
                match end {
                    RenewalEnd::Lost | RenewalEnd::Expired => {
                        note(notes, || {
                            format!("{tag} => t{i}'s watchdog ends: {end:?}; t{i} is told its lease is LOST")
                        });
                        if let Some(hold) = Self::hold_mut(&mut world.clients[i].phase) {
                            hold.lost = true;
                        }
                    }
                    RenewalEnd::QuietlyEnded => {
                        note(notes, || {
                            format!("{tag} => t{i}'s watchdog ENDS QUIETLY: nobody renews t{i}'s lease, and t{i} is not told")
                        })
                    }
                    RenewalEnd::Stopped => note(notes, || format!("{tag} => t{i}'s watchdog stops: unlock() goes on")),
                }
                Lane::Ended(end)
            }
        });
    }

    /// The hold of a client that holds (or waits in `unlock()` for its lane).
    fn hold_mut(phase: &mut Phase<F>) -> Option<&mut Hold<F::Lease>> {
        match phase {
            Phase::Holding(hold) | Phase::Extending(_, hold) | Phase::Unlocking(hold) => Some(hold),
            _ => None,
        }
    }
}
