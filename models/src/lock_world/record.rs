//! A path of the lock world as the event record every driver writes
//! (`cassalock_judge::event`), so that the one judge reads a model's counterexample as it
//! reads a simulated or a real run.
//!
//! The path is replayed from its initial state with the times as they were read
//! ([`LockModel::apply_as_shown`]: the checker's own states have their times and tokens renamed
//! at every step, reduction 7), and each step's events are read off the difference between the
//! state before it and after it:
//!
//! | change of thread i | event |
//! |---|---|
//! | `Idle` to anything | `invoke` (acquisition = acquisitions done + 1) |
//! | becomes `Holding` | `acquired`, with its lifecycle's fencing token |
//! | an acquisition ends without the lock | `not_acquired` (taken, timed out, failed: from the step's own account) |
//! | `Holding { wrote_resource: false }` to `true` | `write` at the resource, accepted and stale as [`cassalock::algo::admit`] says |
//! | leaves `Holding`, not crashed | `releasing` |
//! | the release ends | `released` (released, or failed) |
//! | its renewal finds the lease lost | `lease_lost` |
//! | crashes / is paused / resumes | `fault` on `c{i}` (killed; paused, begins or ends) |
//! | a store request fails | `store_fault` |
//!
//! Names: node `c{i}`, client `c{i}-0` (a model thread never restarts), thread
//! `c{i}-0:{acquisition}`. Time: the record's clock is the model's ticks; a step at tick t,
//! the j-th of its tick, happens at `t * 1e9 + j` ns, so that two steps of one tick (every
//! step, with perfect clocks) keep their order and a belief that begins and ends within a tick
//! is not empty. The record ends just after its last step.
//!
//! The rules are `observed`: T1-belief (a holder's belief ends at its release or its death,
//! not at its renewal's notice, as the model's T1 counts holders) and T1-resource.

use cassalock::algo::FencingToken;
use cassalock_judge::event::{
    Call, Clock, Disruption, Driver, Event, Header, NotAcquired, ObservedRules, Phase, Record, ReleaseOutcome, Rules,
    RunFacts, What,
};

use super::config::LockAlgorithm;
use super::state::{Act, Main, World};
use super::step::LockModel;
use super::trace;

/// The lock's name in a record, as the simulator names it.
fn lock_name(algorithm: LockAlgorithm) -> &'static str {
    match algorithm {
        LockAlgorithm::GetLock => "queue",
        LockAlgorithm::TryGetLock => "queue-try",
        LockAlgorithm::Old => "old",
    }
}

impl LockModel {
    /// The path from initial state `init` through `actions`, as an event record.
    pub fn path_record(&self, init: usize, actions: &[Act]) -> Record {
        let mut world = stateright::Model::init_states(self).swap_remove(init);
        let mut events = Vec::new();
        let (mut tick, mut within_tick) = (u64::from(world.now_tick), 0u64);
        for act in actions {
            let (next, told) = self.apply_as_shown(&world, *act, Some(Vec::new()));
            let next_tick = u64::from(next.now_tick);
            if next_tick == tick {
                within_tick += 1;
            } else {
                (tick, within_tick) = (next_tick, 1);
            }
            let at_ns = tick.saturating_mul(1_000_000_000).saturating_add(within_tick);
            self.step_events(&world, *act, &next, &told.unwrap_or_default(), at_ns, &mut events);
            world = next;
        }
        let end_ns = events.last().map_or(0, |event: &Event| event.at_ns.saturating_add(1));
        let header = Header::new(
            Driver::Model,
            lock_name(self.cfg.algorithm),
            Clock::ModelTicks,
            RunFacts {
                clients: usize::from(self.cfg.threads),
                end_ns,
                rules: Rules::Observed(ObservedRules {
                    fencing: self.cfg.fencing,
                    lease_lost_ends_it: false,
                    call_bound_ms: None,
                }),
                ..RunFacts::default()
            },
        );
        Record { header, events }
    }

    /// The events of one step, `before` to `after` under `act`; `told`: the step's own account.
    fn step_events(
        &self,
        before: &World,
        act: Act,
        after: &World,
        told: &[trace::Event],
        at_ns: u64,
        out: &mut Vec<Event>,
    ) {
        let event = |node: String, what: What| Event {
            at_ns,
            node,
            clock_us: None,
            what,
        };
        if let Act::FailStore { thread, lane, applied } = act {
            out.push(event(
                format!("c{thread}"),
                What::StoreFault {
                    op: format!("{lane:?}"),
                    applied,
                },
            ));
        }
        for i in 0..before.threads.len().min(after.threads.len()) {
            let (was, now) = (&before.threads[i], &after.threads[i]);
            let node = format!("c{i}");
            let client = format!("c{i}-0");
            // The acquisition this step is about: the one it started, or the one under way.
            let acquisition = was.completed;
            let thread = format!("{client}:{acquisition}");
            if !was.crashed && now.crashed {
                out.push(event(
                    node.clone(),
                    What::Fault {
                        text: format!("t{i} crashes"),
                        target: Some(node.clone()),
                        disruption: Some(Disruption::Killed),
                        begins: true,
                        at_step: false,
                    },
                ));
                continue;
            }
            if was.paused_at_tick.is_none() && now.paused_at_tick.is_some() {
                out.push(event(node.clone(), pause(i, &node, true)));
            }
            if was.paused_at_tick.is_some() && now.paused_at_tick.is_none() {
                out.push(event(node.clone(), pause(i, &node, false)));
            }
            // An acquisition starts: the thread leaves `Idle`, or a whole try ends within the
            // step that started it (back to `Idle` with one more done).
            let started = !matches!(now.main, Main::Idle) || now.completed > was.completed;
            if matches!(was.main, Main::Idle) && started {
                out.push(event(
                    node.clone(),
                    What::Invoke {
                        client: client.clone(),
                        call: match self.cfg.algorithm {
                            LockAlgorithm::TryGetLock => Call::TryLock,
                            LockAlgorithm::GetLock | LockAlgorithm::Old => Call::Lock,
                        },
                        acquisition: u32::from(acquisition) + 1,
                    },
                ));
            }
            let was_holding = matches!(was.main, Main::Holding { .. });
            let is_holding = matches!(now.main, Main::Holding { .. });
            if !was_holding && is_holding {
                let token = now
                    .slots
                    .last()
                    .and_then(|slot| slot.lifecycle.held())
                    .map(|(_, token)| token.as_str().to_owned())
                    .unwrap_or_default();
                out.push(event(
                    node.clone(),
                    What::Acquired {
                        thread: thread.clone(),
                        lock: super::LOCK.into(),
                        token,
                        valid_until_us: None,
                        valid_until_at_ns: None,
                    },
                ));
            }
            if let (Main::Holding { wrote_resource: false }, Main::Holding { wrote_resource: true }) =
                (&was.main, &now.main)
            {
                out.push(event("resource".into(), self.write(before, now, &client)));
            }
            let ended_without_lock = now.ended_without_lock & !was.ended_without_lock != 0
                || now.clean_up_failed & !was.clean_up_failed != 0;
            if ended_without_lock {
                out.push(event(node.clone(), not_acquired(&thread, told)));
            }
            if was_holding && !is_holding {
                out.push(event(
                    node.clone(),
                    What::Releasing {
                        thread: thread.clone(),
                        lock: super::LOCK.into(),
                    },
                ));
            }
            let release_ended = (was_holding || matches!(was.main, Main::Releasing { .. }))
                && matches!(now.main, Main::Idle | Main::Finished)
                && now.completed > was.completed;
            if release_ended {
                let ok = now.released_ok & (1 << acquisition) != 0;
                out.push(event(
                    node.clone(),
                    What::Released {
                        thread: thread.clone(),
                        lock: super::LOCK.into(),
                        outcome: if ok {
                            ReleaseOutcome::Released
                        } else {
                            ReleaseOutcome::Failed
                        },
                        why: if ok { "released" } else { "a delete kept failing" }.into(),
                    },
                ));
            }
            if !was.lost && now.lost {
                out.push(event(
                    node,
                    What::LeaseLost {
                        thread,
                        lock: super::LOCK.into(),
                        why: "its renewal found the lease lost".into(),
                    },
                ));
            }
        }
    }

    /// Thread `client`'s write with its current token, as the resource judged it.
    fn write(&self, before: &World, holder: &super::state::Thread, client: &str) -> What {
        let token = holder
            .slots
            .last()
            .and_then(|slot| slot.lifecycle.held())
            .map(|(_, token)| token.clone())
            .unwrap_or_else(|| FencingToken(String::new()));
        let admission = cassalock::algo::admit(
            before.resource.highest.as_ref().map(FencingToken::as_str),
            token.as_str(),
            self.cfg.fencing,
        );
        What::Write {
            client: Some(client.to_owned()),
            lock: Some(super::LOCK.into()),
            token: token.as_str().to_owned(),
            phase: Some(Phase::Enter),
            accepted: Some(admission.accepted),
            stale: Some(admission.stale),
            acquisition: None,
        }
    }
}

fn pause(i: usize, node: &str, begins: bool) -> What {
    What::Fault {
        text: format!("t{i} {}", if begins { "is paused" } else { "resumes" }),
        target: Some(node.to_owned()),
        disruption: Some(Disruption::Paused),
        begins,
        at_step: false,
    }
}

/// How an acquisition ended without the lock, from the step's own account ("not acquired",
/// "timed out", "failed: ..."; `trace::show_acquire`).
fn not_acquired(thread: &str, told: &[trace::Event]) -> What {
    let said = told.iter().rev().find_map(|event| match event {
        trace::Event::Done { what, .. } if what != "acquired" => Some(what.as_str()),
        _ => None,
    });
    let outcome = match said {
        Some(what) if what.starts_with("timed out") => NotAcquired::TimedOut,
        Some(what) if what.starts_with("failed") => NotAcquired::Failed,
        _ => NotAcquired::Taken,
    };
    What::NotAcquired {
        thread: thread.to_owned(),
        lock: super::LOCK.into(),
        outcome,
        left: None,
        why: said.unwrap_or("not acquired").to_owned(),
    }
}
