//! Every property, liveness obligation and measure of the lock models, in one place; and the
//! checker's view of the model (its title, fairness, and how steps and states read).

use cassalock::algo::server_holder::row_holders;
use cassalock::algo::{contract, LockId};

use super::config::{Clocks, LockAlgorithm, LOCK};
use super::state::{Act, Main, World};
use super::step::LockModel;
use super::trace::{parse_model_thread, short_column, show_time, Event};

impl LockModel {
    /// The first live cell, in the main, queue or shadow row, of an acquisition for which
    /// `owned_by(thread, k)` holds, as the slowest coordinator sees it (a cell live there is
    /// live for some reader). Cells carry their thread id as their value.
    pub(super) fn live_cell_of(&self, world: &World, owned_by: impl Fn(usize, u8) -> bool) -> Option<String> {
        let lock = LockId::new(LOCK).expect("valid");
        let reader = self.slowest_coordinator_us(world);
        [lock.main_row(), lock.queue_row(), lock.shadow_row()]
            .iter()
            .flat_map(|row| world.store.read_slice(row, "", 16, reader))
            .find(|cell| {
                self.owner(world, &cell.value)
                    .is_some_and(|(thread, k)| owned_by(thread, k))
            })
            .map(|cell| format!("{} (of {})", short_column(&cell.column), cell.value))
    }

    /// Which thread and acquisition a cell named or valued `thread_id` is judged against.
    /// A thread id names one acquisition, unless threads reuse theirs
    /// (`reuse_thread_ids`): then a cell is judged against the acquisition that last used
    /// the name (the one running, or the last that ended), and not at all (`None`) if an
    /// earlier one said its cells may stay (a failed clean-up or release), since the name no
    /// longer tells whose a surviving cell is. A leftover of an acquisition is still seen
    /// while the thread is between acquisitions, a state of its own.
    pub(super) fn owner(&self, world: &World, thread_id: &str) -> Option<(usize, u8)> {
        let (thread, k) = parse_model_thread(thread_id)?;
        if !self.cfg.reuse_thread_ids {
            return Some((thread, k));
        }
        let t = world.threads.get(thread)?;
        let last = match t.main {
            Main::Idle | Main::Finished => t.completed.checked_sub(1)?,
            _ => t.completed,
        };
        let excused = (0..last).any(|j| {
            let bit = LockModel::acquisition_bit(j);
            let released = t.released_ok & bit != 0;
            let ended_clean = t.ended_without_lock & bit != 0 && t.clean_up_failed & bit == 0;
            !(released || ended_clean)
        });
        (!excused).then_some((thread, last))
    }

    /// C-free: a live cell of an acquisition that ended without the lock, unless it said a
    /// clean-up delete failed (its cells then expire with the TTL).
    pub fn left_by_failed_call(&self, world: &World) -> Option<String> {
        self.live_cell_of(world, |thread, k| {
            let t = &world.threads[thread];
            let bit = LockModel::acquisition_bit(k);
            !t.crashed && t.ended_without_lock & bit != 0 && t.clean_up_failed & bit == 0
        })
    }

    /// C-release: a live cell of an acquisition whose release returned Ok.
    pub fn left_after_release(&self, world: &World) -> Option<String> {
        self.live_cell_of(world, |thread, k| {
            let t = &world.threads[thread];
            !t.crashed && t.released_ok & LockModel::acquisition_bit(k) != 0
        })
    }

    /// C-lost: the ticks thread i has believed it holds since another thread acquired after
    /// it, not counting time it spent paused (`None`: no such other holder, or i knows).
    pub fn unaware_of_loss_ticks(&self, world: &World, i: usize) -> Option<u8> {
        let t = &world.threads[i];
        if t.lost || t.crashed || t.paused_at_tick.is_some() || !matches!(t.main, Main::Holding { .. }) {
            return None;
        }
        LockModel::holders(world)
            .filter(|&j| j != i && world.threads[j].held_since_tick >= t.held_since_tick)
            .map(|j| {
                let since = world.threads[j].held_since_tick.max(t.resumed_at_tick);
                world.now_tick.saturating_sub(since)
            })
            .max()
    }

    /// C-lost: the bound in ticks (one tick is one second of the machines' config; requests
    /// take no time in the model).
    pub fn lost_bound_ticks(&self) -> Option<u8> {
        contract::lost_learned_ms(&self.cfg.lock, 0).map(|ms| u8::try_from(ms / 1000).unwrap_or(u8::MAX))
    }

    /// T1-server: a thread that believes it holds the lock whose cell some read of the main
    /// row does not find live (each coordinator's clock is a read; the store is one), with what
    /// the row names (`None`: every believer is named). Who the row names is the lock's own
    /// rule, [`row_holders`].
    pub fn believer_not_named(&self, world: &World) -> Option<(String, Vec<String>)> {
        let main_row = LockId::new(LOCK).expect("valid").main_row();
        let reads: Vec<Vec<cassalock::store::LiveCell>> = (0..world.threads.len())
            .map(|i| {
                world
                    .store
                    .read_slice(&main_row, "", 16, self.coordinator_now_us(world, i))
            })
            .collect();
        let named = row_holders(reads.iter().map(Vec::as_slice));
        LockModel::holders(world)
            .map(|i| self.cfg.thread_id(i, world.threads[i].completed).to_string())
            .find(|believer| !named.contains(believer))
            .map(|believer| (believer, named))
    }

    fn live_row(&self, world: &World, row: &str) -> String {
        let reader = self.slowest_coordinator_us(world);
        let cells: Vec<String> = world
            .store
            .read_slice(row, "", 16, reader)
            .iter()
            .map(|cell| short_column(&cell.column))
            .collect();
        if cells.is_empty() {
            "-".into()
        } else {
            cells.join(" ")
        }
    }
}

fn holds_fn(_: &LockModel, world: &World) -> bool {
    LockModel::holders(world).count() <= 1
}

fn t1_server_fn(model: &LockModel, world: &World) -> bool {
    model.believer_not_named(world).is_none()
}

fn order_fn(_: &LockModel, world: &World) -> bool {
    !world.order_broken
}

fn overtakes_fn(model: &LockModel, world: &World) -> bool {
    world.threads.iter().all(|t| t.overtaken <= model.cfg.overtake_bound)
}

fn resource_fn(_: &LockModel, world: &World) -> bool {
    !world.resource.stale_accepted
}

fn stuck_fn(model: &LockModel, world: &World) -> bool {
    model.stuck_after_release(world).is_none()
}

fn c_try_fn(model: &LockModel, world: &World) -> bool {
    let bound = model.try_request_bound().unwrap_or(u64::MAX);
    world.threads.iter().all(|t| u64::from(t.try_requests) <= bound)
}

fn c_free_fn(model: &LockModel, world: &World) -> bool {
    model.left_by_failed_call(world).is_none()
}

fn c_release_fn(model: &LockModel, world: &World) -> bool {
    model.left_after_release(world).is_none()
}

fn c_lost_fn(model: &LockModel, world: &World) -> bool {
    let bound = model.lost_bound_ticks().unwrap_or(u8::MAX);
    (0..world.threads.len()).all(|i| model.unaware_of_loss_ticks(world, i).is_none_or(|ticks| ticks <= bound))
}

fn c_lost_open_fn(model: &LockModel, world: &World, thread: usize) -> bool {
    model.unaware_of_loss_ticks(world, thread).is_some()
}

fn c_token_fn(_: &LockModel, world: &World) -> bool {
    !world.resource.token_went_down && !world.resource.sole_holder_refused
}

fn waiting_fn(_: &LockModel, world: &World, thread: usize) -> bool {
    LockModel::is_waiting(world, thread)
}

fn nobody_acquired_fn(_: &LockModel, world: &World, _: usize) -> bool {
    !world.anyone_acquired
}

fn thread_name(thread: usize) -> String {
    format!("t{thread}")
}

fn everyone(_: usize) -> String {
    "every caller".into()
}

impl stateright::Model for LockModel {
    type State = World;
    type Action = Act;

    /// Every state is inside, until the check's memory guard fires (`check::memory_allows`).
    fn within_boundary(&self, _: &Self::State) -> bool {
        crate::check::memory_allows()
    }

    fn init_states(&self) -> Vec<World> {
        vec![self.initial()]
    }

    fn actions(&self, state: &World, actions: &mut Vec<Act>) {
        self.enabled(state, actions);
    }

    fn next_state(&self, state: &World, action: Act) -> Option<World> {
        Some(self.apply(state, action, None).0)
    }

    fn format_action(&self, action: &Act) -> String {
        action.to_string()
    }

    /// All properties of the lock models, in one place. The claim ID is the first word.
    fn properties(&self) -> Vec<stateright::Property<Self>> {
        use stateright::Property;
        let mutual_exclusion = match self.cfg.algorithm {
            LockAlgorithm::TryGetLock => Property::always("T3 at most one TryGetLock caller holds the lock", holds_fn),
            _ => Property::always("T1 at most one thread holds the lock", holds_fn),
        };
        let t1_server = Property::always(
            "T1-server whoever believes it holds is named by the main row",
            t1_server_fn,
        );
        let mut properties = vec![mutual_exclusion];
        if self.cfg.fairness {
            if self.cfg.algorithm != LockAlgorithm::Old {
                properties.push(Property::always(
                    "F-order whoever acquires is at the head of the queue",
                    order_fn,
                ));
            }
            properties.push(Property::always(
                "F-overtakes no waiter is overtaken more than the bound",
                overtakes_fn,
            ));
        }
        if self.cfg.resource {
            properties.push(Property::always(
                "T1-resource the resource never accepts a stale token",
                resource_fn,
            ));
        }
        // Beside T1-resource where there is one, as in the other families' models.
        if self.cfg.resource {
            properties.push(t1_server);
        } else {
            properties.insert(1, t1_server);
        }
        if self.cfg.lock.ttl_s.is_some() {
            properties.push(Property::always("K3 no released lock stays taken by nobody", stuck_fn));
        }
        // The contract (docs/contract.md).
        if self.try_request_bound().is_some() {
            properties.push(Property::always(
                "C-try a try call sends at most its bound of store requests",
                c_try_fn,
            ));
        }
        properties.push(Property::always(
            "C-free a call that failed or gave up leaves no live cell",
            c_free_fn,
        ));
        properties.push(Property::always(
            "C-release a released acquisition leaves no live cell",
            c_release_fn,
        ));
        if self.checks_c_lost() {
            properties.push(Property::always(
                "C-lost a holder learns its lease is lost within the bound after another acquires",
                c_lost_fn,
            ));
        }
        if self.cfg.resource {
            properties.push(Property::always(
                "C-token tokens only grow, and the sole holder is never refused",
                c_token_fn,
            ));
        }
        properties
    }
}

impl crate::liveness::Fairness for LockModel {
    fn fair_actor(&self, action: &Act) -> Option<u8> {
        let n = self.cfg.threads;
        match *action {
            Act::Main(i) | Act::Resume(i) | Act::TicksThenMain { thread: i, .. } => Some(i),
            Act::Renew { thread, .. } => Some(n + thread),
            Act::Tick => Some(2 * n),
            Act::Pause(_) | Act::Crash(_) | Act::FailStore { .. } => None,
        }
    }

    fn fair_actor_name(&self, actor: u8) -> String {
        let n = self.cfg.threads;
        match actor {
            a if a < n => format!("t{a}"),
            a if a < 2 * n => format!("t{}/renewal", a - n),
            _ => "clock".into(),
        }
    }

    fn at_bound(&self, world: &World) -> bool {
        // Reduction 5: without `Tick` steps a cycle may sit at any tick. In the unreduced model
        // every cycle and deadlock sits at the last tick (before it, the clock, a fair actor,
        // could still move), so each of them is reported as bounded there. Counting every state
        // as at the bound keeps that: a lasso is never reported as a violation, only "holds"
        // (no lasso, so none in the unreduced model either) or "bounded".
        //
        // Reduction 7 drops the bound: time goes on for ever, and a cycle of steps none of which
        // reads the time is a run in which time passes unseen (ticks change nothing any step
        // reads, by reduction 5's condition), so every lasso and deadlock is a counterexample.
        if self.cfg.relative_time() {
            return false;
        }
        self.cfg.max_ticks() == Some(world.now_tick) || self.cfg.time_seen_only_by_readings()
    }

    fn bound_reason(&self) -> String {
        if self.cfg.time_seen_only_by_readings() {
            "the only counterexamples are cycles where time stands still (here it moves only before a time-source reading), which a fair clock allows only at the model's last tick".into()
        } else {
            "the only counterexamples reach the model's last clock tick, where time stops".into()
        }
    }
}

impl crate::check::CheckedModel for LockModel {
    fn title(&self) -> String {
        let cfg = &self.cfg;
        let name = match cfg.algorithm {
            LockAlgorithm::GetLock => "getlock (Listing 6)",
            LockAlgorithm::TryGetLock => "trygetlock (Listing 7)",
            LockAlgorithm::Old => "old (Listings 3-4)",
        };
        let clocks = match &cfg.clocks {
            Clocks::Perfect => "perfect clock, no TTL".to_owned(),
            Clocks::Ticks {
                max_tick,
                client_offset_ticks,
                coordinator_offset_ticks,
            } => {
                let ttl = cfg.lock.ttl_s.map_or("no TTL".to_owned(), |ttl| {
                    format!(
                        "TTL {ttl} ticks, renewal every {} ticks",
                        cfg.lock.renew_every_ms / 1000
                    )
                });
                let time = if cfg.relative_time() {
                    "time without end, kept relative to the clock (reduction 7)".to_owned()
                } else {
                    format!("ticks up to {max_tick}")
                };
                format!("{time}, {ttl}, client clock offsets {client_offset_ticks:?}, coordinator offsets {coordinator_offset_ticks:?}")
            }
        };
        let mut faults = Vec::new();
        if cfg.delayed_enqueue {
            faults.push("delayed enqueue".to_owned());
        }
        if let Some(t) = cfg.pause {
            faults.push(format!("t{t} may pause while holding"));
        }
        if let Some(t) = cfg.crash {
            faults.push(format!("t{t} may crash while holding"));
        }
        if cfg.store_failures > 0 {
            faults.push(format!(
                "{} store request(s) may fail, before or after applying (retries {})",
                cfg.store_failures, cfg.lock.retry.max_retries
            ));
        }
        if cfg.algorithm == LockAlgorithm::TryGetLock && !cfg.poll_outlasts_contention {
            faults.push("asynchronous (a contender may outlast any number of polls)".into());
        }
        if cfg.lock.fixes == cassalock::algo::Fixes::THESIS {
            faults.push("the thesis's listings as written (no fixes)".into());
        }
        if cfg.lock.mutants.m1_skip_main_check {
            faults.push("MUTANT M1".into());
        }
        if cfg.lock.mutants.k3_release_without_waiting {
            faults.push("MUTANT K3".into());
        }
        if cfg.lock.mutants.m4_trust_a_late_rewrite {
            faults.push("MUTANT M4 (a late rewrite trusted)".into());
        }
        if cfg.resource {
            faults.push(if cfg.fencing {
                "resource with fencing".into()
            } else {
                "resource without fencing".into()
            });
        }
        let faults = if faults.is_empty() {
            "none".to_owned()
        } else {
            faults.join(", ")
        };
        format!(
            "{name} | {} threads x {} acquisitions | {clocks} | faults: {faults}",
            cfg.threads, cfg.acquisitions
        )
    }

    fn obligations(&self) -> Vec<crate::liveness::Obligation<Self>> {
        use crate::liveness::Obligation;
        let mut obligations = match self.cfg.algorithm {
            LockAlgorithm::TryGetLock => vec![Obligation {
                name: "T4 some TryGetLock caller acquires",
                count: 1,
                open: nobody_acquired_fn,
                subject: everyone,
            }],
            _ => vec![Obligation {
                name: "T2 every waiting thread acquires",
                count: usize::from(self.cfg.threads),
                open: waiting_fn,
                subject: thread_name,
            }],
        };
        if self.checks_c_lost() {
            obligations.push(Obligation {
                name: "C-lost a holder whose lock another took eventually learns it",
                count: usize::from(self.cfg.threads),
                open: c_lost_open_fn,
                subject: thread_name,
            });
        }
        obligations
    }

    fn measures(&self) -> Vec<crate::check::Measure<Self>> {
        use crate::check::Measure;
        let mut measures = Vec::new();
        if self.cfg.fairness {
            measures.push(Measure {
                name: "F-overtakes most times one waiter was overtaken",
                unit: "(counted up to bound + 1)",
                value: |_, world: &World| world.threads.iter().map(|t| u64::from(t.overtaken)).max(),
            });
        }
        if self.cfg.lock.ttl_s.is_some() {
            measures.push(Measure {
                name: "K3 a released lock stays taken for",
                unit: "more ticks",
                value: |model: &LockModel, world: &World| model.stuck_after_release(world).map(|(_, ticks)| ticks),
            });
        }
        measures
    }

    fn clock_bound(&self) -> Option<u8> {
        self.cfg.max_ticks()
    }

    fn describe_step(&self, state: &World, action: &Act) -> (World, Vec<String>) {
        let (next, events) = self.apply_as_shown(state, *action, Some(Vec::new()));
        let ticks = !matches!(self.cfg.clocks, Clocks::Perfect);
        let mut lines: Vec<String> = events
            .unwrap_or_default()
            .into_iter()
            .map(|event| match event {
                Event::Store {
                    tag,
                    request,
                    reply,
                    coordinator_now_us,
                } => {
                    let clock = if ticks {
                        format!("  (coordinator clock {})", show_time(coordinator_now_us))
                    } else {
                        String::new()
                    };
                    format!(
                        "{tag}: {} -> {}{clock}",
                        request.show_with(&short_column),
                        reply.show_with(&short_column)
                    )
                }
                Event::Did { tag, what } => format!("{tag}: {what}"),
                Event::Done { tag, what } => format!("{tag} => {what}"),
                Event::Note(text) => text,
            })
            .collect();
        match action {
            Act::Tick => lines.push(format!("time passes: now {} -> {}", state.now_tick, next.now_tick)),
            Act::TicksThenMain { .. } => lines.insert(
                0,
                format!(
                    "time passes: now {} -> {} (nothing but the time source sees it)",
                    state.now_tick, next.now_tick
                ),
            ),
            Act::Pause(i) => lines.push(format!(
                "t{i} is PAUSED (a GC pause: none of its tasks run while time passes)"
            )),
            Act::Resume(i) => lines.push(format!(
                "t{i} resumes after {} ticks, still believing what it believed",
                next.now_tick - state.threads[usize::from(*i)].paused_at_tick.unwrap_or(next.now_tick)
            )),
            Act::Crash(i) => lines.push(format!("t{i} CRASHES: no release, its renewal stops")),
            _ => {}
        }
        if lines.is_empty() {
            lines.push("(no visible effect)".into());
        }
        (next, lines)
    }

    fn describe_state(&self, world: &World) -> String {
        let lock = LockId::new(LOCK).expect("valid");
        let holders: Vec<String> = LockModel::holders(world).map(|i| format!("t{i}")).collect();
        let holders = if holders.is_empty() {
            "nobody".to_owned()
        } else {
            holders.join(" AND ")
        };
        let mut rows = format!("main [{}]", self.live_row(world, &lock.main_row()));
        match self.cfg.algorithm {
            LockAlgorithm::Old => rows.push_str(&format!(" shadow [{}]", self.live_row(world, &lock.shadow_row()))),
            _ => rows.push_str(&format!(" queue [{}]", self.live_row(world, &lock.queue_row()))),
        }
        let clock = match &self.cfg.clocks {
            Clocks::Perfect => String::new(),
            Clocks::Ticks { .. } => format!(" | now {}", world.now_tick),
        };
        let paused: Vec<String> = world
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| t.paused_at_tick.is_some())
            .map(|(i, _)| format!("t{i}"))
            .collect();
        let paused = if paused.is_empty() {
            String::new()
        } else {
            format!(" | paused: {}", paused.join(" "))
        };
        format!("holders: {holders} | {rows}{clock}{paused}")
    }

    fn actor(&self, action: &Act) -> String {
        match action {
            Act::Pause(_) | Act::Crash(_) | Act::FailStore { .. } => "faults".into(),
            Act::Resume(i) => format!("t{i}"),
            other => other.to_string(),
        }
    }

    fn record_of_path(&self, init: usize, actions: &[Act]) -> Option<crate::check::EventRecord> {
        Some(self.path_record(init, actions))
    }
}
