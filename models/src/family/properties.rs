//! The claims the model checks: what they read off a world (who believes it holds, whose
//! keys are live), the property functions (T1, C-free, C-release, T2, C-lost, F-order,
//! C-token), and the `Model`, `Fairness` and `CheckedModel` impls that hand them to the checker.

use cassalock::algo::family::RenewalEnd;
use stateright::{Model, Property};

use super::trace::acquisition_bit;
use super::{Act, FamilyModel, Lane, ModelFamily, ModelServer, Pending, Phase, World, KEY, MILLIS_PER_TICK};
use crate::check::{CheckedModel, Measure};
use crate::liveness::{Fairness, Obligation};
use crate::lock_world::parse_model_thread;
use crate::Fault;

impl<F: ModelFamily> FamilyModel<F> {
    /// A `lock()` call can queue behind another waiter, or come back to a queue: 3 clients, or
    /// 2 acquisitions each. Below that, F-order would pass vacuously.
    fn can_queue(&self) -> bool {
        self.clients >= 3 || self.acquisitions >= 2
    }

    /// The claims this lock makes that a model of this size cannot exercise, each with why and
    /// what would: said beside the verdicts, so a claim left out is never read as one checked.
    pub fn left_out(&self) -> Vec<(&'static str, String)> {
        let mut left_out = Vec::new();
        if F::FIFO && !self.can_queue() {
            left_out.push((
                "F-order",
                format!(
                    "with {} clients x {} acquisition no lock() call can queue behind another waiter, so it would pass vacuously; --threads 3 or --acquisitions 2 checks it",
                    self.clients, self.acquisitions
                ),
            ));
        }
        left_out
    }

    /// Does client i believe it holds the lock: acquired, not yet releasing, not told it lost
    /// the lease, and its own clock below the lease's `valid_until`?
    pub fn believes(&self, world: &World<F>, i: usize) -> bool {
        match &world.clients[i].phase {
            Phase::Holding(hold) | Phase::Extending(_, hold) => {
                !hold.lost && self.client_now_us(world) < F::valid_until_us(&hold.lease, &self.lock)
            }
            _ => false,
        }
    }

    /// The owners (client, acquisition) of the live keys that hold a model token, with the
    /// milliseconds each still lives.
    pub(super) fn key_owners(&self, world: &World<F>) -> Vec<((usize, u8), Option<u64>)> {
        world
            .server
            .live_tokens(world.now_tick)
            .into_iter()
            .filter_map(|(value, left_ms)| Some((parse_model_thread(&value)?, left_ms)))
            .collect()
    }

    /// C-release: the ticks (on the server's clock) a live key still has when it holds the
    /// token of an acquisition whose `unlock()` returned (the longest, over Redlock's masters).
    fn released_key_left_ticks(&self, world: &World<F>) -> Option<u64> {
        self.key_owners(world)
            .into_iter()
            .filter(|((i, k), _)| {
                world
                    .clients
                    .get(*i)
                    .is_some_and(|c| c.released & acquisition_bit(*k) != 0)
            })
            .filter_map(|(_, left_ms)| left_ms.map(|ms| ms / MILLIS_PER_TICK))
            .max()
    }

    /// The longest a waiter still sleeps until notified while the lock is free (no live key)
    /// and no unlock message has arrived or is on its way to it: the holder's TTL it sleeps
    /// out when the message was lost (or never sent: the key expired, a restart).
    fn asleep_on_a_free_lock_ticks(&self, world: &World<F>) -> Option<u64> {
        let owners: Vec<usize> = world
            .server
            .live_tokens(world.now_tick)
            .into_iter()
            .map(|(value, _)| parse_model_thread(&value).map_or(usize::MAX, |(owner, _)| owner))
            .collect();
        // Free for waiter j: no live key but its own (a ZooKeeper or etcd waiter has one).
        world
            .clients
            .iter()
            .enumerate()
            .filter(|(j, _)| owners.iter().all(|owner| owner == j))
            .map(|(_, c)| c)
            .filter(|c| matches!(c.phase, Phase::Acquiring(_)) && c.messages_in_flight == 0 && !c.message_arrived)
            .filter_map(|c| match c.pending {
                Pending::Sleep {
                    wake_tick,
                    until_notified: true,
                } if world.now_tick < self.max_tick => Some(u64::from(wake_tick.saturating_sub(world.now_tick))),
                _ => None,
            })
            .max()
    }
}

fn t1_belief<F: ModelFamily>(model: &FamilyModel<F>, world: &World<F>) -> bool {
    (0..world.clients.len()).filter(|&i| model.believes(world, i)).count() <= 1
}

/// T1-server: every client that believes it holds holds the token the servers' state names,
/// as the lock reads it (a lock that does not say passes).
fn t1_server<F: ModelFamily>(model: &FamilyModel<F>, world: &World<F>) -> bool {
    let Some(holder) = F::holder_on_servers(&world.server.states(world.now_tick), KEY) else {
        return true;
    };
    (0..world.clients.len())
        .filter(|&i| model.believes(world, i))
        .all(|i| match &world.clients[i].phase {
            Phase::Holding(hold) | Phase::Extending(_, hold) => holder.token() == Some(F::token(&hold.lease)),
            _ => unreachable!("a client that believes holds"),
        })
}

fn t1_resource<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>) -> bool {
    !world.resource.stale_write
}

fn c_free<F: ModelFamily>(model: &FamilyModel<F>, world: &World<F>) -> bool {
    model.key_owners(world).into_iter().all(|((i, k), _)| {
        world
            .clients
            .get(i)
            .is_none_or(|c| c.gave_up_clean & acquisition_bit(k) == 0)
    })
}

fn c_release<F: ModelFamily>(model: &FamilyModel<F>, world: &World<F>) -> bool {
    model.key_owners(world).into_iter().all(|((i, k), _)| {
        world
            .clients
            .get(i)
            .is_none_or(|c| c.released & acquisition_bit(k) == 0)
    })
}

fn t2_never_gives_up<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>) -> bool {
    world.clients.iter().all(|c| c.gave_up_waiting == 0)
}

/// C-lost, for a lock whose holder runs a renewal lane: a holder that a later acquisition
/// overtook (its key gone or expired) either has been told (the lane ended `Lost` or
/// `Expired`, or its own check found the lease run out), or its lane is still running, and
/// so asks the server again within one renewal period. A lane that ended quietly leaves it
/// believing until its clock says otherwise, with nothing that would tell it sooner.
fn c_lost<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>) -> bool {
    world.clients.iter().all(|c| match (&c.phase, &c.lane) {
        (Phase::Holding(hold) | Phase::Extending(_, hold), Some(Lane::Ended(RenewalEnd::QuietlyEnded))) => {
            hold.lost || world.grants <= hold.grant + 1
        }
        _ => true,
    })
}

/// F-order, for a lock that promises first come, first served: no `lock()` call returns with
/// the lock while a call that reached the server before it still waits.
fn f_order<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>) -> bool {
    !world.overtaken
}

/// C-token, for a lock whose token grows (czxid, create revision): no acquisition is granted
/// a token at or below an earlier holder's.
fn c_token<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>) -> bool {
    !world.token_went_down
}

fn t2_open<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>, client: usize) -> bool {
    matches!(world.clients[client].phase, Phase::Acquiring(_))
}

fn client_name(client: usize) -> String {
    format!("t{client}")
}

impl<F: ModelFamily> Model for FamilyModel<F> {
    type State = World<F>;
    type Action = Act;

    /// Every state is inside, until the check's memory guard fires (`check::memory_allows`).
    fn within_boundary(&self, _: &Self::State) -> bool {
        crate::check::memory_allows()
    }

    fn init_states(&self) -> Vec<World<F>> {
        vec![self.initial()]
    }

    fn actions(&self, state: &World<F>, actions: &mut Vec<Act>) {
        self.enabled(state, actions);
    }

    fn next_state(&self, state: &World<F>, action: Act) -> Option<World<F>> {
        Some(self.apply(state, action, None).0)
    }

    fn format_action(&self, action: &Act) -> String {
        action.to_string()
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("T1-belief at most one client believes it holds the lock", t1_belief),
            Property::always(
                if F::FENCING {
                    "T1-resource the fenced resource accepts no stale or shared token"
                } else {
                    "T1-resource no write from an acquisition after a later one's"
                },
                t1_resource,
            ),
            Property::always(
                "T1-server whoever believes it holds is the holder the server's state names",
                t1_server,
            ),
            Property::always("C-free a lock() that gave up leaves no key with its token", c_free),
            Property::always(
                "C-release an unlock() that returned leaves no key with its token",
                c_release,
            ),
            Property::always(
                "T2 no lock() returns without the lock while the store answers",
                t2_never_gives_up,
            ),
        ]
        .into_iter()
        .chain(F::RENEWAL_LANE.then(|| {
            Property::always(
                "C-lost a holder whose lock another took is told, or its watchdog still asks",
                c_lost,
            )
        }))
        // F-order needs a call that can queue behind another waiter, or come back to a queue:
        // 2 clients x 1 acquisition have none, and would pass it vacuously.
        .chain((F::FIFO && self.can_queue()).then(|| {
            Property::always(
                "F-order the lock goes to the lock() calls in the order they reached the server",
                f_order,
            )
        }))
        .chain(F::FENCING.then(|| {
            Property::always(
                "C-token a holder whose key is live has a token above every earlier holder's",
                c_token,
            )
        }))
        .collect()
    }
}

impl<F: ModelFamily> Fairness for FamilyModel<F> {
    fn fair_actor(&self, action: &Act) -> Option<u8> {
        let n = self.clients;
        match *action {
            Act::Client(i) | Act::Resume(i) => Some(i),
            Act::Apply(i) => Some(n + i),
            Act::Replicate => Some(2 * n),
            Act::Tick => Some(2 * n + 1),
            // The renewal lane is a task of its own, the unlock message a delivery of its own.
            Act::Lane(i) => Some(2 * n + 2 + i),
            Act::ApplyLane(i) => Some(3 * n + 2 + i),
            Act::Notify(i) => Some(4 * n + 2 + i),
            Act::Lose { .. }
            | Act::Pause(_)
            | Act::Restart
            | Act::Failover
            | Act::ClockJump
            | Act::LoseLane { .. }
            | Act::LoseNotification(_) => None,
        }
    }

    fn fair_actor_name(&self, actor: u8) -> String {
        let n = self.clients;
        match actor {
            a if a < n => format!("t{a}"),
            a if a < 2 * n => format!("server for t{}", a - n),
            a if a == 2 * n => "replication".into(),
            a if a == 2 * n + 1 => "clock".into(),
            a if a < 3 * n + 2 => format!("t{}'s watchdog", a - 2 * n - 2),
            a if a < 4 * n + 2 => format!("server for t{}'s watchdog", a - 3 * n - 2),
            a => format!("the unlock message to t{}", a - 4 * n - 2),
        }
    }

    fn at_bound(&self, world: &World<F>) -> bool {
        world.now_tick >= self.max_tick
    }
}

impl<F: ModelFamily> CheckedModel for FamilyModel<F> {
    fn title(&self) -> String {
        let fault = match self.fault {
            Fault::None => "none".to_owned(),
            Fault::Pause => "t0 may pause between checking its lease and writing".to_owned(),
            Fault::StoreFailure => format!(
                "{} request(s) may be lost before applying, or their reply after (retries {})",
                self.store_failures,
                self.lock.as_ref().max_retries
            ),
            other => F::describe_fault(other),
        };
        format!(
            "{} | {} x {} | ticks up to {}, {} | resource {} | faults: {fault}",
            F::describe_lock(&self.lock, self.extend),
            cassalock_judge::text::count(self.clients, "client"),
            cassalock_judge::text::count(self.acquisitions, "acquisition"),
            self.max_tick,
            F::describe_timing(&self.lock),
            if F::FENCING {
                "fenced: it refuses a token below the highest it has seen"
            } else {
                "without fencing"
            },
        )
    }

    fn obligations(&self) -> Vec<Obligation<Self>> {
        vec![Obligation {
            name: "T2 every client that calls lock() acquires",
            count: usize::from(self.clients),
            open: t2_open,
            subject: client_name,
        }]
    }

    fn measures(&self) -> Vec<Measure<Self>> {
        vec![
            Measure {
                name: "C-free lock() calls that gave up (the store kept failing)",
                unit: "call(s)",
                value: |_, world: &World<F>| {
                    Some(
                        world
                            .clients
                            .iter()
                            .map(|c| u64::from(c.gave_up_clean.count_ones()))
                            .sum(),
                    )
                },
            },
            Measure {
                name: "C-release a released acquisition's key stays live for",
                unit: "more ticks",
                value: |model: &FamilyModel<F>, world: &World<F>| model.released_key_left_ticks(world),
            },
        ]
        .into_iter()
        .chain(F::notification_channel(KEY, "").map(|_| Measure {
            name: "C-release a waiter sleeps on while the lock is free and no unlock message is on its way, for",
            unit: "more ticks",
            value: |model: &FamilyModel<F>, world: &World<F>| model.asleep_on_a_free_lock_ticks(world),
        }))
        .collect()
    }

    fn clock_bound(&self) -> Option<u8> {
        Some(self.max_tick)
    }

    fn describe_step(&self, state: &World<F>, action: &Act) -> (World<F>, Vec<String>) {
        let (next, notes) = self.apply(state, *action, Some(Vec::new()));
        let mut lines = notes.unwrap_or_default();
        if lines.is_empty() {
            lines.push("(no visible effect)".into());
        }
        (next, lines)
    }

    fn describe_state(&self, world: &World<F>) -> String {
        let believers: Vec<String> = (0..world.clients.len())
            .filter(|&i| self.believes(world, i))
            .map(|i| format!("t{i}"))
            .collect();
        let believers = if believers.is_empty() {
            "nobody".to_owned()
        } else {
            believers.join(" AND ")
        };
        let clients: Vec<String> = (0..world.clients.len()).map(|i| self.show_client(world, i)).collect();
        let last_write = world
            .resource
            .last_write
            .map_or("-".to_owned(), |(i, grant)| format!("t{i} (grant {grant})"));
        format!(
            "now {} {} | believe: {believers} | {} | resource last written by {last_write}",
            world.now_tick,
            world.server.describe(world.now_tick),
            clients.join(", "),
        )
    }

    fn record_of_path(&self, init: usize, actions: &[Act]) -> Option<crate::check::EventRecord> {
        Some(self.path_record(init, actions))
    }

    fn actor(&self, action: &Act) -> String {
        match action {
            Act::Client(i) | Act::Resume(i) => format!("t{i}"),
            Act::Lane(i) => format!("t{i} watchdog"),
            Act::Apply(_) | Act::ApplyLane(_) => "server".into(),
            Act::Replicate => "replication".into(),
            Act::Tick => "clock".into(),
            Act::Notify(_) => "pub/sub".into(),
            Act::Lose { .. }
            | Act::Pause(_)
            | Act::Restart
            | Act::Failover
            | Act::ClockJump
            | Act::LoseLane { .. }
            | Act::LoseNotification(_) => "faults".into(),
        }
    }
}
