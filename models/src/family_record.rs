//! A path of a family lock's world (Redis, Redlock, Memcached, Redisson, ZooKeeper, etcd) as
//! the event record every driver writes (`cassalock_judge::event`), so that the one judge reads
//! the model's counterexamples as it reads a simulated or a real run.
//!
//! The path is replayed from its initial state (these worlds rename nothing), and each step's
//! events are read off the difference between the state before it and after it:
//!
//! | change of client i | event |
//! |---|---|
//! | leaves `Idle` | `invoke` |
//! | becomes a holder (`Holding`) | `acquired`, its token and its validity |
//! | its validity moves while it holds | `extended` |
//! | writes (its checked lease is used) | `write`, accepted and stale as [`Resource::admit`] says |
//! | learns its lease is lost | `lease_lost` (from an extension or its watchdog), `saw_invalid` (from its own check) |
//! | leaves `Holding` / `Extending` | `releasing` |
//! | its release ends | `released` |
//! | its `lock()` ends without the lock | `not_acquired` |
//! | is paused / resumes; a request or reply lost; the server restarts, fails over, jumps | `fault`, `store_fault` |
//! | an unlock message or watch reaches it, or is lost | `wake_message` |
//!
//! A holder believes, in the model, while it holds, has not learned its lease is lost and its
//! clock is below the lease's validity (`FamilyModel::believes`). In the record: its validity
//! `valid_until_us` is reached at the first tick whose clock reads it,
//! `ceil(valid_until_us / 1e6)` ticks, and the rules end a belief at `lease_lost`. Time: a step
//! at tick t, the j-th of its tick, at `t * 1e9 + j` ns; the record ends just after its last
//! step. Names: node `c{i}`, client `c{i}-0`, thread `c{i}-{acquisition}`, as the family
//! simulator names them.

use cassalock::store::MICROS_PER_SECOND;
use cassalock_judge::event::{
    Call, Clock, Disruption, Driver, Event, Header, Left, NotAcquired, ObservedRules, Phase as WritePhase, Record,
    ReleaseOutcome, Rules, RunFacts, Wake, What,
};

use crate::family::{Act, FamilyModel, Hold, ModelFamily, Phase, Resource, World};

/// The hold of a client that believes it may hold: holding or extending.
fn holding<F: ModelFamily>(phase: &Phase<F>) -> Option<&Hold<F::Lease>> {
    match phase {
        Phase::Holding(hold) | Phase::Extending(_, hold) => Some(hold),
        _ => None,
    }
}

impl<F: ModelFamily> FamilyModel<F> {
    /// The path from initial state `init` through `actions`, as an event record.
    pub fn path_record(&self, init: usize, actions: &[Act]) -> Record {
        let mut world: World<F> = stateright::Model::init_states(self).swap_remove(init);
        let mut events = Vec::new();
        let (mut tick, mut within_tick) = (u64::from(world.now_tick), 0u64);
        for act in actions {
            let next = stateright::Model::next_state(self, &world, *act).expect("a path's actions are enabled");
            let next_tick = u64::from(next.now_tick);
            if next_tick == tick {
                within_tick += 1;
            } else {
                (tick, within_tick) = (next_tick, 1);
            }
            let at_ns = tick.saturating_mul(1_000_000_000).saturating_add(within_tick);
            self.step_events(&world, *act, &next, at_ns, &mut events);
            world = next;
        }
        let end_ns = events.last().map_or(0, |event: &Event| event.at_ns.saturating_add(1));
        let header = Header::new(
            Driver::Model,
            F::MODEL,
            Clock::ModelTicks,
            RunFacts {
                clients: usize::from(self.clients),
                end_ns,
                rules: Rules::Observed(ObservedRules {
                    fencing: F::FENCING,
                    lease_lost_ends_it: true,
                    call_bound_ms: None,
                }),
                ..RunFacts::default()
            },
        );
        Record { header, events }
    }

    /// The validity of `hold` on its clock, and when (on the record's clock) the model stops
    /// believing it: the first tick whose clock reads it (`None`: it never runs out).
    fn validity(&self, hold: &Hold<F::Lease>) -> (Option<u64>, Option<u64>) {
        let valid_until_us = F::valid_until_us(&hold.lease, &self.lock);
        if valid_until_us == u64::MAX {
            return (None, None);
        }
        let ticks = valid_until_us.div_ceil(MICROS_PER_SECOND);
        (Some(valid_until_us), Some(ticks.saturating_mul(1_000_000_000)))
    }

    /// The events of one step, `before` to `after` under `act`.
    fn step_events(&self, before: &World<F>, act: Act, after: &World<F>, at_ns: u64, out: &mut Vec<Event>) {
        let event = |node: String, what: What| Event {
            at_ns,
            node,
            clock_us: Some(u64::from(after.now_tick) * MICROS_PER_SECOND),
            what,
        };
        Self::fault_events(act, &mut |node, what| out.push(event(node, what)));
        for i in 0..before.clients.len().min(after.clients.len()) {
            let (was, now) = (&before.clients[i], &after.clients[i]);
            let node = format!("c{i}");
            let client = format!("c{i}-0");
            let acquisition = was.completed;
            let thread = format!("c{i}-{acquisition}");
            let lock = || "lock".to_owned();
            if matches!(was.phase, Phase::Idle) && (!matches!(now.phase, Phase::Idle) || now.completed > was.completed)
            {
                out.push(event(
                    node.clone(),
                    What::Invoke {
                        client: client.clone(),
                        call: Call::Lock,
                        acquisition: u32::from(acquisition) + 1,
                    },
                ));
            }
            let (was_hold, now_hold) = (holding::<F>(&was.phase), holding::<F>(&now.phase));
            let was_holder = was_hold.is_some() || matches!(was.phase, Phase::Unlocking(_));
            if let (false, Some(hold)) = (was_holder, now_hold) {
                let (valid_until_us, valid_until_at_ns) = self.validity(hold);
                out.push(event(
                    node.clone(),
                    What::Acquired {
                        thread: thread.clone(),
                        lock: lock(),
                        token: F::token(&hold.lease).to_owned(),
                        valid_until_us,
                        valid_until_at_ns,
                    },
                ));
            }
            if let (Some(was_hold), Some(now_hold)) = (was_hold, now_hold) {
                if was_hold.checked && !now_hold.checked && now_hold.uses > was_hold.uses {
                    out.push(event(
                        "resource".into(),
                        write::<F>(&before.resource, &client, now_hold),
                    ));
                }
                let (old_until, _) = self.validity(was_hold);
                let (new_until, new_at_ns) = self.validity(now_hold);
                if new_until != old_until && !now_hold.lost {
                    if let Some(valid_until_us) = new_until {
                        out.push(event(
                            node.clone(),
                            What::Extended {
                                thread: thread.clone(),
                                lock: lock(),
                                valid_until_us,
                                valid_until_at_ns: new_at_ns,
                            },
                        ));
                    }
                }
                if !was_hold.lost && now_hold.lost {
                    // Its own check found the clock past the validity: it knew (the belief had
                    // already ended there); an extension's or a watchdog's answer told it.
                    let own_check =
                        matches!(act, Act::Client(c) if usize::from(c) == i) && matches!(was.phase, Phase::Holding(_));
                    out.push(event(
                        node.clone(),
                        if own_check {
                            What::SawInvalid { thread: thread.clone() }
                        } else {
                            What::LeaseLost {
                                thread: thread.clone(),
                                lock: lock(),
                                why: "the server said the key is not ours".into(),
                            }
                        },
                    ));
                }
            }
            if was_hold.is_some() && now_hold.is_none() {
                out.push(event(
                    node.clone(),
                    What::Releasing {
                        thread: thread.clone(),
                        lock: lock(),
                    },
                ));
            }
            let ended = matches!(now.phase, Phase::Idle | Phase::Finished) && now.completed > was.completed;
            let bit = 1u8 << acquisition.min(7);
            if ended && (was_holder || matches!(was.phase, Phase::Releasing(_))) {
                let released = now.released & bit != 0;
                out.push(event(
                    node.clone(),
                    What::Released {
                        thread: thread.clone(),
                        lock: lock(),
                        outcome: if released {
                            ReleaseOutcome::Released
                        } else {
                            ReleaseOutcome::Failed
                        },
                        why: if released { "released" } else { "the release failed" }.into(),
                    },
                ));
            } else if ended && matches!(was.phase, Phase::Acquiring(_) | Phase::Idle) {
                let waited = now.gave_up_waiting & bit != 0;
                let clean = now.gave_up_clean & bit != 0;
                out.push(event(
                    node.clone(),
                    What::NotAcquired {
                        thread,
                        lock: lock(),
                        outcome: if waited {
                            NotAcquired::Taken
                        } else {
                            NotAcquired::Failed
                        },
                        left: Some(if clean { Left::Nothing } else { Left::NotCleanedUp }),
                        why: if waited {
                            "the lock was taken"
                        } else {
                            "the store kept failing"
                        }
                        .into(),
                    },
                ));
            }
        }
    }

    /// The step's fault, store fault or message, if it is one.
    fn fault_events(act: Act, out: &mut dyn FnMut(String, What)) {
        let fault = |text: String, target: Option<String>, disruption: Option<Disruption>, begins: bool| What::Fault {
            text,
            target,
            disruption,
            begins,
            at_step: false,
        };
        match act {
            Act::Pause(i) => out(
                format!("c{i}"),
                fault(
                    format!("t{i} is paused"),
                    Some(format!("c{i}")),
                    Some(Disruption::Paused),
                    true,
                ),
            ),
            Act::Resume(i) => out(
                format!("c{i}"),
                fault(
                    format!("t{i} resumes"),
                    Some(format!("c{i}")),
                    Some(Disruption::Paused),
                    false,
                ),
            ),
            Act::Restart => out(
                "s0".into(),
                fault(
                    "the server restarts without persistence".into(),
                    Some("s0".into()),
                    Some(Disruption::Killed),
                    true,
                ),
            ),
            Act::Failover => out("s0".into(), fault("the replica is promoted".into(), None, None, true)),
            Act::ClockJump => out(
                "s0".into(),
                fault("the server's clock jumps forward by the TTL".into(), None, None, true),
            ),
            Act::Lose { client, after_apply } | Act::LoseLane { client, after_apply } => out(
                format!("c{client}"),
                What::StoreFault {
                    op: if matches!(act, Act::LoseLane { .. }) {
                        "renewal request".into()
                    } else {
                        "request".into()
                    },
                    applied: after_apply,
                },
            ),
            Act::Notify(i) | Act::LoseNotification(i) => out(
                "s0".into(),
                What::WakeMessage {
                    wake: if F::FENCING { Wake::Watch } else { Wake::Unlock },
                    to: usize::from(i),
                    lost: matches!(act, Act::LoseNotification(_)),
                },
            ),
            _ => {}
        }
    }
}

/// Client `client`'s write with its hold's token, as the resource judged it.
fn write<F: ModelFamily>(resource: &Resource, client: &str, hold: &Hold<F::Lease>) -> What {
    let token = F::token(&hold.lease);
    let admission = resource.admit::<F>(hold.grant, token);
    What::Write {
        client: Some(client.to_owned()),
        lock: Some("lock".into()),
        token: token.to_owned(),
        phase: Some(WritePhase::Enter),
        accepted: Some(admission.accepted),
        stale: Some(admission.stale),
        acquisition: Some(u64::from(hold.grant)),
    }
}
