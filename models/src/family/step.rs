//! The world's transitions: the initial world, its successor under an action ([`Act`]), the
//! server applying requests and publishing, the faults, and which actions are enabled.

#[cfg(doc)]
use cassalock::algo::family::FamilyLock;
use cassalock::algo::Input;
use cassalock::store::StoreFailure;

use super::trace::{note, token, Notes};
use super::{
    Act, Client, FamilyModel, Lane, ModelFamily, ModelServer, Pending, Phase, Resource, World, FIRST_TICK, KEY,
    MAX_MESSAGES_IN_FLIGHT, MILLIS_PER_TICK,
};
use crate::Fault;

impl<F: ModelFamily> FamilyModel<F> {
    pub(super) fn initial(&self) -> World<F> {
        let mut server = F::server(self.fault);
        server.connect(usize::from(self.clients), FIRST_TICK);
        World {
            now_tick: FIRST_TICK,
            server,
            clients: (0..self.clients)
                .map(|_| Client {
                    phase: Phase::Idle,
                    pending: Pending::Nothing,
                    lane: None,
                    messages_in_flight: 0,
                    message_arrived: false,
                    queued: false,
                    ahead: 0,
                    served: false,
                    completed: 0,
                    paused_at_tick: None,
                    released: 0,
                    gave_up_clean: 0,
                    gave_up_waiting: 0,
                })
                .collect(),
            grants: 0,
            resource: Resource::default(),
            fault_used: false,
            store_failures_used: 0,
            overtaken: false,
            last_grant_token: None,
            token_went_down: false,
        }
    }

    fn apply_request(&self, world: &mut World<F>, i: usize, notes: &mut Notes) {
        let Pending::Request { tag, command } = std::mem::replace(&mut world.clients[i].pending, Pending::Nothing)
        else {
            unreachable!("the server applies only a request in flight");
        };
        let (owners_before, queue_before): (Vec<(usize, u8)>, Vec<String>) = if F::FIFO {
            (
                self.key_owners(world).into_iter().map(|(owner, _)| owner).collect(),
                F::queue(&world.server),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let (reply, server_now_ms, published) = world.server.apply_from(i, &command, world.now_tick);
        self.note_queue(world, i, (&owners_before, &queue_before), notes);
        note(notes, || {
            format!(
                "{tag}: the server (clock {}) applies t{i}'s {} -> {}",
                server_now_ms / MILLIS_PER_TICK,
                command,
                reply
            )
        });
        self.publish(world, &published, notes);
        world.clients[i].pending = Pending::Answer {
            tag,
            command,
            input: Input::Reply(reply),
        };
    }

    /// The server applies client i's renewal lane's request.
    fn apply_lane_request(&self, world: &mut World<F>, i: usize, notes: &mut Notes) {
        let Some(Lane::Running { pending, .. }) = &mut world.clients[i].lane else {
            unreachable!("the server applies only a running lane's request");
        };
        let Pending::Request { tag, command } = std::mem::replace(pending, Pending::Nothing) else {
            unreachable!("the server applies only a request in flight");
        };
        let (reply, server_now_ms, published) = world.server.apply_from(i, &command, world.now_tick);
        note(notes, || {
            format!(
                "{tag}: the server (clock {}) applies t{i}'s watchdog's {} -> {}",
                server_now_ms / MILLIS_PER_TICK,
                command,
                reply
            )
        });
        self.publish(world, &published, notes);
        if let Some(Lane::Running { pending, .. }) = &mut world.clients[i].lane {
            *pending = Pending::Answer {
                tag,
                command,
                input: Input::Reply(reply),
            };
        }
    }

    /// Redis pub/sub: a message goes out to every client subscribed to its channel (each waiter
    /// in `lock()` on its [`FamilyLock::notification_channel`]: the RLock's waiters share one,
    /// the fair lock's each have their own; a message to nobody is gone).
    fn publish(&self, world: &mut World<F>, channels: &[String], notes: &mut Notes) {
        for channel in channels {
            // A watch (ZooKeeper, etcd) fires for one client, named by the server: it reaches
            // that client if it still waits in `lock()` (a watch of an earlier call is moot).
            if let Some(j) = channel.strip_prefix("watch:t").and_then(|j| j.parse::<usize>().ok()) {
                let waiting = j < world.clients.len() && matches!(world.clients[j].phase, Phase::Acquiring(_));
                note(notes, || {
                    if waiting {
                        format!("t{j}'s watch fires: a message goes out to t{j}")
                    } else {
                        format!("t{j}'s watch fires, but t{j} no longer waits in lock(): nobody listens")
                    }
                });
                if waiting {
                    let client = &mut world.clients[j];
                    client.messages_in_flight = (client.messages_in_flight + 1).min(MAX_MESSAGES_IN_FLIGHT);
                }
                continue;
            }
            let waiters: Vec<usize> = (0..world.clients.len())
                .filter(|&j| matches!(world.clients[j].phase, Phase::Acquiring(_)))
                .filter(|&j| {
                    F::notification_channel(KEY, &token(j, world.clients[j].completed)).as_ref() == Some(channel)
                })
                .collect();
            if waiters.is_empty() && F::notification_channel(KEY, "").is_none() {
                continue;
            }
            note(notes, || {
                if waiters.is_empty() {
                    format!("the unlock message on {channel} has no subscriber: it is gone")
                } else {
                    let names: Vec<String> = waiters.iter().map(|j| format!("t{j}")).collect();
                    format!("the unlock message on {channel} goes out to {}", names.join(", "))
                }
            });
            for j in waiters {
                let client = &mut world.clients[j];
                client.messages_in_flight = (client.messages_in_flight + 1).min(MAX_MESSAGES_IN_FLIGHT);
            }
        }
    }

    fn lose(world: &mut World<F>, i: usize, after_apply: bool, notes: &mut Notes) {
        world.store_failures_used += 1;
        Self::lose_pending(&mut world.clients[i].pending, i, after_apply, notes);
    }

    fn lose_lane(world: &mut World<F>, i: usize, after_apply: bool, notes: &mut Notes) {
        world.store_failures_used += 1;
        let Some(Lane::Running { pending, .. }) = &mut world.clients[i].lane else {
            unreachable!("only a running lane's request is lost");
        };
        Self::lose_pending(pending, i, after_apply, notes);
    }

    fn lose_pending(pending: &mut Pending<F::Command, F::Reply>, i: usize, after_apply: bool, notes: &mut Notes) {
        match std::mem::replace(pending, Pending::Nothing) {
            Pending::Request { tag, command } if !after_apply => {
                note(notes, || {
                    format!(
                        "{tag}: FAULT: t{i}'s {} is lost before the server sees it; t{i} is told it failed (nothing applied)",
                        command
                    )
                });
                *pending = Pending::Answer {
                    tag,
                    command,
                    input: Input::Failed(StoreFailure::Unavailable),
                };
            }
            Pending::Answer {
                tag,
                command,
                input: Input::Reply(reply),
            } if after_apply => {
                note(notes, || {
                    format!(
                        "{tag}: FAULT: the reply {} to t{i}'s {} is lost after it applied; t{i} sees a timeout",
                        reply, command
                    )
                });
                *pending = Pending::Answer {
                    tag,
                    command,
                    input: Input::Failed(StoreFailure::Timeout),
                };
            }
            other => unreachable!("no {after_apply} loss of {other:?}"),
        }
    }

    /// The successor of `world` under `act`, with what happened (notes only when asked).
    pub(super) fn apply(&self, world: &World<F>, act: Act, mut notes: Notes) -> (World<F>, Notes) {
        let mut next = world.clone();
        let w = &mut next;
        match act {
            Act::Client(i) => self.step_client(w, usize::from(i), &mut notes),
            Act::Apply(i) => self.apply_request(w, usize::from(i), &mut notes),
            Act::Replicate => {
                w.server.replicate();
                note(&mut notes, || {
                    format!(
                        "one batch reaches the replica ({} still pending)",
                        w.server.pending_batches()
                    )
                });
            }
            Act::Tick => {
                w.now_tick += 1;
                note(&mut notes, || {
                    format!("time passes: now {} -> {}", world.now_tick, world.now_tick + 1)
                });
                self.pass_time(w, &mut notes);
            }
            Act::Lose { client, after_apply } => Self::lose(w, usize::from(client), after_apply, &mut notes),
            Act::Pause(i) => {
                w.clients[usize::from(i)].paused_at_tick = Some(w.now_tick);
                w.fault_used = true;
                note(&mut notes, || {
                    format!("t{i} is PAUSED between its check and its write (a GC pause): it takes no step while time passes")
                });
            }
            Act::Resume(i) => {
                let since = w.clients[usize::from(i)].paused_at_tick.take().unwrap_or(w.now_tick);
                note(&mut notes, || {
                    format!(
                        "t{i} resumes after {} ticks, right where it was: about to write",
                        w.now_tick - since
                    )
                });
            }
            Act::Restart => {
                let what = w.server.restart();
                w.fault_used = true;
                note(&mut notes, || what);
                self.pass_time(w, &mut notes);
            }
            Act::Failover => {
                let lost = w.server.failover();
                w.fault_used = true;
                note(&mut notes, || {
                    format!(
                        "FAILOVER: the replica is promoted; {lost} acknowledged batch(es) it had not received are lost"
                    )
                });
            }
            Act::ClockJump => {
                let what = w.server.clock_jump(F::TTL_TICKS, world.now_tick);
                w.fault_used = true;
                note(&mut notes, || what);
                self.pass_time(w, &mut notes);
            }
            Act::Lane(i) => self.step_lane(w, usize::from(i), &mut notes),
            Act::ApplyLane(i) => self.apply_lane_request(w, usize::from(i), &mut notes),
            Act::LoseLane { client, after_apply } => Self::lose_lane(w, usize::from(client), after_apply, &mut notes),
            Act::Notify(i) => {
                let client = &mut w.clients[usize::from(i)];
                client.messages_in_flight -= 1;
                client.message_arrived = true;
                note(&mut notes, || {
                    format!("the unlock message reaches t{i}: a sleep until notified ends at once")
                });
            }
            Act::LoseNotification(i) => {
                w.clients[usize::from(i)].messages_in_flight -= 1;
                w.fault_used = true;
                note(&mut notes, || {
                    format!("FAULT: the unlock message to t{i} is LOST: t{i} sleeps out the holder's TTL")
                });
            }
        }
        // Canonical form: an expired key behaves as absent for every command, and a server's
        // clock never goes back, so the server drops it.
        w.server.canonical(w.now_tick);
        (next, notes)
    }

    /// The server's clock moved: what the server does on its own (heartbeats arrive from the
    /// clients not paused, sessions and leases expire), and the watches that fired.
    fn pass_time(&self, world: &mut World<F>, notes: &mut Notes) {
        let beating: Vec<bool> = world.clients.iter().map(|c| c.paused_at_tick.is_none()).collect();
        let told = world.server.pass_time(world.now_tick, &beating);
        self.publish(world, &told, notes);
    }

    fn client_enabled(&self, world: &World<F>, i: usize) -> bool {
        let client = &world.clients[i];
        match &client.phase {
            Phase::Idle | Phase::Holding(_) => true,
            Phase::Finished => false,
            // unlock() goes on once the renewal lane has ended.
            Phase::Unlocking(_) => matches!(client.lane, Some(Lane::Ended(_))),
            Phase::Acquiring(_) | Phase::Extending(..) | Phase::Releasing(_) => {
                let at_bound = world.now_tick >= self.max_tick;
                Self::pending_ready(world, &client.pending, at_bound, client.message_arrived)
            }
        }
    }

    /// Is a machine's pending action done: its answer arrived, or its sleep is over (an arrived
    /// unlock message ends a sleep until notified)? `at_bound`: time has stopped at the bound,
    /// and a sleep there ends at once, so that a waiter keeps trying and a starvation shows as
    /// a cycle. (Not a renewal lane's: renewing for ever while time stands still would show
    /// nothing, and with a replica it would fill the replication stream state after state.)
    fn pending_ready(
        world: &World<F>,
        pending: &Pending<F::Command, F::Reply>,
        at_bound: bool,
        message_arrived: bool,
    ) -> bool {
        match pending {
            Pending::Answer { .. } => true,
            Pending::Sleep {
                wake_tick,
                until_notified,
            } => world.now_tick >= *wake_tick || at_bound || (*until_notified && message_arrived),
            Pending::Request { .. } => false,
            Pending::Nothing => unreachable!("a running machine always has a pending action"),
        }
    }

    /// Time may not pass while a running client is between its check and its write, nor while
    /// an unlock message is on its way (pub/sub delivers within a tick; losing one is the
    /// lost-notification fault's business).
    fn urgent(world: &World<F>) -> bool {
        world.clients.iter().any(|c| {
            c.messages_in_flight > 0
                || (c.paused_at_tick.is_none() && matches!(&c.phase, Phase::Holding(hold) if hold.checked))
        })
    }

    pub(super) fn enabled(&self, world: &World<F>, acts: &mut Vec<Act>) {
        let may_lose = world.store_failures_used < self.store_failures;
        for (i, client) in world.clients.iter().enumerate() {
            let id = i as u8;
            if let Some(paused_at) = client.paused_at_tick {
                if world.now_tick > paused_at {
                    acts.push(Act::Resume(id));
                }
                continue;
            }
            if self.client_enabled(world, i) {
                acts.push(Act::Client(id));
            }
            match &client.pending {
                Pending::Request { .. } => {
                    acts.push(Act::Apply(id));
                    if may_lose {
                        acts.push(Act::Lose {
                            client: id,
                            after_apply: false,
                        });
                    }
                }
                // A read's reply lost after it applied is the same as the request lost before.
                Pending::Answer {
                    command,
                    input: Input::Reply(_),
                    ..
                } if may_lose && !<F::Server as ModelServer>::is_read(command) => acts.push(Act::Lose {
                    client: id,
                    after_apply: true,
                }),
                _ => {}
            }
            let about_to_write = matches!(&client.phase, Phase::Holding(hold) if hold.checked);
            // A pause needs time to pass: none at the bound, where time stops.
            let time_left = world.now_tick < self.max_tick;
            if self.fault == Fault::Pause && i == 0 && about_to_write && !world.fault_used && time_left {
                acts.push(Act::Pause(id));
            }
            // The renewal lane: the same process, so paused with it (above).
            if let Some(Lane::Running { pending, .. }) = &client.lane {
                if Self::pending_ready(world, pending, false, false) {
                    acts.push(Act::Lane(id));
                }
                match pending {
                    Pending::Request { .. } => {
                        acts.push(Act::ApplyLane(id));
                        if may_lose {
                            acts.push(Act::LoseLane {
                                client: id,
                                after_apply: false,
                            });
                        }
                    }
                    Pending::Answer {
                        command,
                        input: Input::Reply(_),
                        ..
                    } if may_lose && !<F::Server as ModelServer>::is_read(command) => acts.push(Act::LoseLane {
                        client: id,
                        after_apply: true,
                    }),
                    _ => {}
                }
            }
            if client.messages_in_flight > 0 {
                acts.push(Act::Notify(id));
                if self.fault == Fault::LostNotification && !world.fault_used {
                    acts.push(Act::LoseNotification(id));
                }
            }
        }
        if world.server.pending_batches() > 0 {
            acts.push(Act::Replicate);
            // A failover with nothing in flight loses nothing: it changes no reply.
            if self.fault == Fault::Failover && !world.fault_used {
                acts.push(Act::Failover);
            }
        }
        if !world.fault_used {
            match self.fault {
                // A restart of an empty server loses nothing.
                Fault::Restart if world.server.can_restart() => acts.push(Act::Restart),
                Fault::ServerClockJump => acts.push(Act::ClockJump),
                _ => {}
            }
        }
        if world.now_tick < self.max_tick && !Self::urgent(world) {
            acts.push(Act::Tick);
        }
    }
}
