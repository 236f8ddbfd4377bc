//! A client's step: the library's machines driven through `lock()`, one extension and
//! `unlock()`, their outcomes, and the user's code around them (check the lease, write to
//! the resource).

use cassalock::algo::family::{Acquisition, Extension, Release};
use cassalock::algo::redis::set_nx::Patience;
use cassalock::algo::{Action, Input, Leftover, Machine, SleepKind, Step};

use super::trace::{acquisition_bit, note, show_input, show_us, token, Notes};
use super::{
    FamilyModel, Grant, Hold, Lane, ModelFamily, Pending, Phase, World, KEY, MAX_DRAWS_IN_A_ROW, MILLIS_PER_TICK,
};

impl<F: ModelFamily> FamilyModel<F> {
    /// Resume `machine`, answering its random draws with 0 at once (Redlock's retry delay:
    /// the sleep that follows takes at least a tick either way).
    pub(super) fn resume<M>(
        &self,
        machine: &mut M,
        mut input: Input<F::Reply>,
        now_us: u64,
        notes: &mut Notes,
    ) -> Step<M::Output, F::Command>
    where
        M: Machine<Config = F::Config, Command = F::Command, Reply = F::Reply>,
    {
        for _ in 0..MAX_DRAWS_IN_A_ROW {
            let step = machine.resume(&self.lock, input, now_us);
            match step.action {
                Action::Draw { max_ms } => {
                    let tag = step.tag;
                    note(notes, || format!("{tag}: draws a delay in 0..={max_ms} ms: 0"));
                    input = Input::Drawn(0);
                }
                _ => return step,
            }
        }
        unreachable!("a machine drew {MAX_DRAWS_IN_A_ROW} times in a row without acting")
    }

    /// Carry out a machine's step: a request goes on the wire, a sleep is noted; its output
    /// when it finished.
    fn carry_out<O>(&self, world: &mut World<F>, i: usize, step: Step<O, F::Command>, notes: &mut Notes) -> Option<O> {
        let (pending, output) = Self::pending_of(world.now_tick, step, notes);
        world.clients[i].pending = pending;
        output
    }

    /// What a machine waits for after `step` (a request on the wire, a sleep), or its output
    /// when it finished.
    pub(super) fn pending_of<O>(
        now_tick: u8,
        step: Step<O, F::Command>,
        notes: &mut Notes,
    ) -> (Pending<F::Command, F::Reply>, Option<O>) {
        let tag = step.tag;
        match step.action {
            Action::Store(command) => {
                note(notes, || format!("{tag}: sends {}", command));
                (Pending::Request { tag, command }, None)
            }
            Action::Sleep { ms, kind } => {
                let ticks = u8::try_from(ms.div_ceil(MILLIS_PER_TICK).max(1)).unwrap_or(u8::MAX);
                let wake_tick = now_tick.saturating_add(ticks);
                let until_notified = kind == SleepKind::UntilNotified;
                note(notes, || {
                    format!(
                        "{tag}: sleeps {ms} ms, until tick {wake_tick}{}",
                        if until_notified { " or the unlock message" } else { "" }
                    )
                });
                (
                    Pending::Sleep {
                        wake_tick,
                        until_notified,
                    },
                    None,
                )
            }
            Action::Done(output) => (Pending::Nothing, Some(output)),
            Action::Draw { .. } | Action::ReadTime | Action::StopRenewal { .. } => {
                unreachable!(
                    "{tag}: draws are answered in `resume`; these locks read no time source, and the model stops a renewal lane itself"
                )
            }
        }
    }

    /// The answer a running machine waits for: the reply (or failure) that arrived, or the end
    /// of its sleep.
    fn take_input(world: &mut World<F>, i: usize, notes: &mut Notes) -> Input<F::Reply> {
        match std::mem::replace(&mut world.clients[i].pending, Pending::Nothing) {
            Pending::Answer { tag, input, .. } => {
                note(notes, || format!("{tag}: receives {}", show_input(&input)));
                input
            }
            Pending::Sleep {
                wake_tick,
                until_notified,
            } => {
                let client = &mut world.clients[i];
                if until_notified && client.message_arrived {
                    // The driver's select takes the message first (biased).
                    client.message_arrived = false;
                    if world.now_tick < wake_tick {
                        note(notes, || {
                            format!("t{i} is woken by the unlock message before tick {wake_tick}")
                        });
                    }
                } else if world.now_tick < wake_tick {
                    note(notes, || {
                        format!("t{i} wakes before tick {wake_tick}: time stops at the bound, so a sleep there ends at once")
                    });
                }
                Input::Woke
            }
            other => unreachable!("t{i} stepped while its machine waits for {other:?}"),
        }
    }

    fn finish_round(&self, world: &mut World<F>, i: usize) {
        let client = &mut world.clients[i];
        client.completed += 1;
        client.phase = if client.completed >= self.acquisitions {
            Phase::Finished
        } else {
            Phase::Idle
        };
    }

    fn after_acquire(
        &self,
        world: &mut World<F>,
        i: usize,
        mut machine: F::AcquireMachine,
        input: Input<F::Reply>,
        notes: &mut Notes,
    ) {
        let now_us = self.client_now_us(world);
        let step = self.resume(&mut machine, input, now_us, notes);
        let tag = step.tag;
        let Some(output) = self.carry_out(world, i, step, notes) else {
            world.clients[i].phase = Phase::Acquiring(machine);
            return;
        };
        // `lock()` returns: its subscription to the unlock messages is dropped.
        world.clients[i].messages_in_flight = 0;
        world.clients[i].message_arrived = false;
        let k = world.clients[i].completed;
        Self::leave_queue(world, i);
        world.clients[i].served = false;
        match F::acquired(output) {
            Acquisition::Acquired(lease) => {
                let grant = world.grants;
                world.grants += 1;
                note(notes, || {
                    format!(
                        "{tag} => t{i} HOLDS the lock (grant {grant}): {}",
                        self.show_validity(&lease)
                    )
                });
                if F::FENCING {
                    let token = F::token(&lease).to_owned();
                    // Judged for a holder whose node (key) the server still has: one whose
                    // reply came after its node went is a stale holder (the fence refuses it).
                    let live = self.key_owners(world).iter().any(|(owner, _)| *owner == (i, k));
                    if live && world.last_grant_token.as_ref().is_some_and(|last| *last >= token) {
                        world.token_went_down = true;
                        note(notes, || {
                            format!(
                                "C-token: t{i}'s token {token} is NOT above an earlier holder's ({})",
                                world.last_grant_token.as_deref().unwrap_or("")
                            )
                        });
                    }
                    if world.last_grant_token.as_ref().is_none_or(|last| *last < token) {
                        world.last_grant_token = Some(token);
                    }
                }

                self.start_lane(world, i, &lease, notes);
                world.clients[i].phase = Phase::Holding(Hold {
                    lease,
                    grant,
                    uses: 0,
                    extended: false,
                    lost: false,
                    checked: false,
                });
            }
            other => {
                note(notes, || format!("{tag} => t{i} did not get the lock: {other:?}"));
                let clean = !matches!(
                    other,
                    Acquisition::Failed {
                        left: Leftover::CleanUpFailed | Leftover::NotCleanedUp,
                        ..
                    }
                );
                if clean {
                    world.clients[i].gave_up_clean |= acquisition_bit(k);
                }
                if matches!(other, Acquisition::NotAcquired | Acquisition::TimedOut) {
                    world.clients[i].gave_up_waiting |= acquisition_bit(k);
                }
                self.finish_round(world, i);
            }
        }
    }

    fn after_extend(
        &self,
        world: &mut World<F>,
        i: usize,
        mut machine: F::ExtendMachine,
        mut hold: Hold<F::Lease>,
        input: Input<F::Reply>,
        notes: &mut Notes,
    ) {
        let now_us = self.client_now_us(world);
        let step = self.resume(&mut machine, input, now_us, notes);
        let tag = step.tag;
        let Some(output) = self.carry_out(world, i, step, notes) else {
            world.clients[i].phase = Phase::Extending(machine, hold);
            return;
        };
        match F::extended(&hold.lease, output) {
            Extension::Extended(lease) => {
                note(notes, || {
                    let validity = self.show_validity(&lease);
                    format!(
                        "{tag} => t{i}'s lease now {}",
                        validity.strip_prefix("its lease ").unwrap_or(&validity)
                    )
                });
                hold.lease = lease;
            }
            Extension::Lost => {
                note(notes, || format!("{tag} => t{i} learns its lease is LOST"));
                hold.lost = true;
            }
            Extension::Failed(failure) => {
                note(notes, || {
                    format!("{tag} => the extension failed ({failure:?}): t{i} keeps its old lease")
                });
            }
        }
        world.clients[i].phase = Phase::Holding(hold);
    }

    fn after_release(
        &self,
        world: &mut World<F>,
        i: usize,
        mut machine: F::ReleaseMachine,
        input: Input<F::Reply>,
        notes: &mut Notes,
    ) {
        let now_us = self.client_now_us(world);
        let step = self.resume(&mut machine, input, now_us, notes);
        let tag = step.tag;
        let Some(output) = self.carry_out(world, i, step, notes) else {
            world.clients[i].phase = Phase::Releasing(machine);
            return;
        };
        let output = F::released(output);
        note(notes, || format!("{tag} => unlock() returns {output:?}"));
        if F::KEYS_OUTLIVE_FAILURES || !matches!(output, Release::Failed(_)) {
            let k = world.clients[i].completed;
            world.clients[i].released |= acquisition_bit(k);
        }
        self.finish_round(world, i);
    }

    /// The user's code while holding: use the resource (check, then write), extend once if
    /// configured, use it again, release.
    fn hold_step(&self, world: &mut World<F>, i: usize, mut hold: Hold<F::Lease>, notes: &mut Notes) {
        let now_us = self.client_now_us(world);
        if hold.checked {
            let token = F::token(&hold.lease).to_owned();
            self.write_resource(world, i, hold.grant, &token, notes);
            hold.checked = false;
            hold.uses += 1;
            world.clients[i].phase = Phase::Holding(hold);
        } else if !hold.lost && hold.uses < 1 + u8::from(hold.extended) {
            let valid_until_us = F::valid_until_us(&hold.lease, &self.lock);
            if now_us < valid_until_us {
                note(notes, || {
                    format!(
                        "t{i} checks its lease: clock {} < {}: valid, it will write",
                        show_us(now_us),
                        show_us(valid_until_us)
                    )
                });
                hold.checked = true;
            } else {
                note(notes, || {
                    format!(
                        "t{i} checks its lease: clock {} >= {}: it ran out, t{i} does not write",
                        show_us(now_us),
                        show_us(valid_until_us)
                    )
                });
                hold.lost = true;
            }
            world.clients[i].phase = Phase::Holding(hold);
        } else if self.extend && !hold.extended && !hold.lost {
            note(notes, || format!("t{i} extends its lock"));
            hold.extended = true;
            let machine = F::extend(hold.lease.clone());
            self.after_extend(world, i, machine, hold, Input::Start, notes);
        } else {
            note(notes, || format!("t{i} calls unlock()"));
            self.unlock(world, i, hold, notes);
        }
    }

    /// `unlock()`: stop the renewal lane first (at once if it sleeps; a renewal out is waited
    /// for), then run the release machine on the lease the lane left.
    fn unlock(&self, world: &mut World<F>, i: usize, hold: Hold<F::Lease>, notes: &mut Notes) {
        match world.clients[i].lane.take() {
            Some(Lane::Running {
                mut machine,
                pending: Pending::Sleep { .. },
                ..
            }) => {
                let now_us = self.client_now_us(world);
                let step = self.resume(&mut machine, Input::StopRequested, now_us, notes);
                let tag = step.tag;
                let Action::Done(end) = step.action else {
                    unreachable!("{tag}: a renewal lane asked to stop at its sleep ends")
                };
                note(notes, || {
                    format!("{tag}: t{i}'s watchdog, asleep, ends: {:?}", F::lane_ended(end))
                });
            }
            Some(Lane::Running { machine, pending, .. }) => {
                note(notes, || {
                    format!("t{i}'s watchdog has a renewal out: unlock() waits for it to end")
                });
                world.clients[i].lane = Some(Lane::Running {
                    machine,
                    pending,
                    stop: true,
                });
                world.clients[i].phase = Phase::Unlocking(hold);
                return;
            }
            Some(Lane::Ended(_)) | None => {}
        }
        let machine = F::release(hold.lease);
        self.after_release(world, i, machine, Input::Start, notes);
    }

    fn write_resource(&self, world: &mut World<F>, i: usize, grant: Grant, token: &str, notes: &mut Notes) {
        let resource = &mut world.resource;
        let admission = resource.admit::<F>(grant, token);
        if F::FENCING {
            // The fence refuses a token below the highest it accepted; what it cannot refuse
            // is another acquisition's write with the same token (two holders sharing one).
            if !admission.accepted {
                let fence = resource.fence.as_deref().unwrap_or_default();
                note(notes, || {
                    format!("the resource REFUSES t{i}'s write (grant {grant}): its token {token} is below {fence}, the highest it has seen")
                });
                return;
            }
            let shared = admission.stale;
            resource.fence = Some(token.to_owned());
            if shared {
                resource.stale_write = true;
                note(notes, || {
                    format!("the resource ACCEPTS t{i}'s write (grant {grant}) with token {token}, the token another acquisition wrote with: the fence cannot tell them apart")
                });
            } else {
                note(notes, || {
                    format!("the resource accepts t{i}'s write (grant {grant}, token {token})")
                });
            }
            resource.last_write = Some((i as u8, grant));
            return;
        }
        match resource.last_write {
            Some((writer, last)) if admission.stale => {
                resource.stale_write = true;
                note(notes, || {
                    format!(
                        "the resource ACCEPTS t{i}'s write (grant {grant}) after t{writer}'s (grant {last}), a later acquisition's: {}",
                        if F::FENCING { "its token did not stop it" } else { "no fencing stops it" }
                    )
                });
            }
            _ => note(notes, || format!("the resource accepts t{i}'s write (grant {grant})")),
        }
        resource.last_write = Some((i as u8, grant));
    }

    pub(super) fn step_client(&self, world: &mut World<F>, i: usize, notes: &mut Notes) {
        match std::mem::replace(&mut world.clients[i].phase, Phase::Idle) {
            Phase::Idle => {
                let k = world.clients[i].completed;
                let token = token(i, k);
                note(notes, || {
                    format!("t{i} calls lock() (acquisition {}, token {token})", k + 1)
                });
                let machine = F::acquire(KEY, &token, Patience::Wait);
                self.after_acquire(world, i, machine, Input::Start, notes);
            }
            Phase::Acquiring(machine) => {
                let input = Self::take_input(world, i, notes);
                self.after_acquire(world, i, machine, input, notes);
            }
            Phase::Extending(machine, hold) => {
                let input = Self::take_input(world, i, notes);
                self.after_extend(world, i, machine, hold, input, notes);
            }
            Phase::Releasing(machine) => {
                let input = Self::take_input(world, i, notes);
                self.after_release(world, i, machine, input, notes);
            }
            Phase::Holding(hold) => self.hold_step(world, i, hold, notes),
            Phase::Unlocking(hold) => {
                note(notes, || format!("t{i}'s watchdog has ended: unlock() goes on"));
                world.clients[i].lane = None;
                let machine = F::release(hold.lease);
                self.after_release(world, i, machine, Input::Start, notes);
            }
            Phase::Finished => unreachable!("a finished client takes no step"),
        }
    }
}
