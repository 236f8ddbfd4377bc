//! The judge of a run seen from outside: what its clients reported (each acquisition, when
//! its holder stopped believing, what failed) and what the resource saw (each write, accepted
//! or refused, stale or not). The real runner's runs are such records, whatever lock they ran;
//! so will be the runs of shipped client libraries. Judged:
//!
//! - **T1-belief**: two holders' beliefs ([`crate::belief`]) overlap.
//! - **T1-resource**: the resource accepted a stale write (a token below one it had accepted).
//! - **C-lost** (for the code people run): every holder overtaken (the earlier holder of a
//!   T1-belief overlap, or a holder whose write fencing refused) was told, by an unasked
//!   `lease_lost`, its release's answer (`not_held`, `failed`) or the refused write, before its
//!   client acquired again or the record ended ([`crate::told`]). A model's record (its clock
//!   the model's ticks or steps) ends where its counterexample ends, not where a run did: a
//!   holder not yet told there leaves C-lost undecided (bounded), the model's own C-lost
//!   deciding it.
//! - **T2** within the run's bound, where the header gives one: every `lock` call answered
//!   ([`crate::call_bound`]).
//! - **C-free** and **C-release**: the next caller, once every call had returned, got the lock
//!   ([`crate::next_caller`]).
//! - **F-order**, for a lock that promises first come, first served ([`fifo_promise`]): no
//!   acquisition overtook a waiter that invoked more than [`FIFO_TOLERANCE`] before it. A waiter
//!   that a fault stopped while it waited (its process paused, killed, cut off) is not counted:
//!   its session may have expired and its place gone with it, which is the lock keeping its
//!   word, not breaking it.
//!
//! and measured, for the reports: waits (from a node's `invoke` to its `acquired`), holds and
//! handoffs (from one holder's belief ending to the next acquisition by another), each client
//! node's share (Jain's index, every client counted, even one that never acquired), the
//! longest run of acquisitions by one node, and overtakes (an acquisition by a client whose
//! `invoke` came after another still-waiting client's).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::belief::client_index;
use crate::belief::{BeliefRules, Believing};
use crate::call_bound::CallBound;
use crate::event::{Clock, Driver, Event, Header, ObservedRules, Rules, What};
use crate::holding::{HoldingInterval, Overlap, SimulatedTime};
use crate::next_caller::NextCaller;
use crate::overlap_window::OverlapWindow;
use crate::server_state::{ServerAgreement, ServerJudge};
use crate::stats;
use crate::text::count;
use crate::told::{relative, LostHolder, Tellings};
use crate::{ClaimId, ClaimVerdict};

/// A stale write the resource saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleWrite {
    pub at: Duration,
    pub client: String,
    pub token: String,
    /// It went through: damage (only without fencing).
    pub accepted: bool,
}

/// How much of a run the judge keeps beside its verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Every belief, overlap, stale write and wait, and the figures of the cycle (holds,
    /// handoffs): for a run's summary, its timeline and its tests. Grows with the history.
    Everything,
    /// The verdicts, the counts and the first [`EXAMPLES`] overlaps and stale writes: memory
    /// that does not grow with the history's length (`cassalock judge FILE`).
    Verdicts,
}

/// Overlaps and stale writes kept as examples under [`Keep::Verdicts`].
pub const EXAMPLES: usize = 5;

/// F-order's tolerance: an acquisition overtakes a waiter in breach of first come, first
/// served only when the waiter's `invoke` came more than this before its own. The `invoke`s
/// are when cassalock sent `lock`, the queue's order is when the library's request reached the
/// server: in between, a pipe, the program's thread and a request to a local server, a few
/// milliseconds on a loaded machine (8 ms seen once, kazoo with no fault). Below the 20 ms of
/// the runs' shortest hold, so a waiter passed over for a whole hold is caught.
pub const FIFO_TOLERANCE: Duration = Duration::from_millis(15);

/// Which client libraries' locks promise their waiters first come, first served, by the lock a
/// real run's header names (the client's hello: library, version, lock), and why.
pub fn fifo_promise(header: &Header) -> Option<&'static str> {
    if header.driver != Driver::Real {
        return None;
    }
    let lock = header.lock.as_str();
    if lock.starts_with("Redisson ") && lock.ends_with(" fair lock") {
        Some("Redisson's fair lock: waiters are served in the order they asked (its documentation; our model checks F-order)")
    } else if lock.starts_with("Curator ") && lock.ends_with(" InterProcessMutex") {
        Some("Curator's InterProcessMutex: fair, each caller gets the mutex in the order requested, as ZooKeeper orders its sequential nodes (its documentation)")
    } else if lock.starts_with("kazoo ") && lock.ends_with(" Lock") {
        Some("kazoo's Lock: ZooKeeper's lock recipe, the lowest sequential node holds and each waiter watches the one before it")
    } else if lock.starts_with("etcd client ") && lock.ends_with(" concurrency.Mutex") {
        Some("etcd's concurrency.Mutex: the lowest create revision holds and each waiter waits for the key created just before its own")
    } else {
        None
    }
}

/// An acquisition that overtook a waiter that invoked earlier.
#[derive(Clone, Debug, PartialEq)]
pub struct Overtake {
    /// The acquiring client's node, and when it acquired.
    pub by: String,
    pub at: Duration,
    /// The waiter passed over, and how much earlier it had invoked.
    pub waiter: String,
    pub earlier: Duration,
}

/// Everything judged and measured about one observed run.
#[derive(Clone, Debug, Default)]
pub struct ObservedVerdicts {
    pub acquisitions: u64,
    /// From each `invoke` to its `acquired`, milliseconds, in acquisition order
    /// ([`Keep::Everything`] only).
    pub waits_ms: Vec<f64>,
    /// Every belief, by (acquisition, end, holder) ([`Keep::Everything`] only).
    pub intervals: Vec<HoldingInterval<SimulatedTime>>,
    /// Two holders at once, in [`crate::holding::overlaps`]'s order: every one, or the first
    /// [`EXAMPLES`] under [`Keep::Verdicts`].
    pub overlaps: Vec<Overlap<SimulatedTime>>,
    /// How many overlaps there were.
    pub overlap_count: u64,
    /// Stale writes in the order they happened: every one, or the first [`EXAMPLES`].
    pub stale_writes: Vec<StaleWrite>,
    /// How many stale writes the resource saw, and how many it accepted.
    pub stale_count: u64,
    pub stale_accepted_count: u64,
    /// Hold lengths (beliefs that ended before the record did), milliseconds
    /// ([`Keep::Everything`] only).
    pub holds_ms: Vec<f64>,
    /// From one holder's belief ending to the next acquisition by another, milliseconds
    /// ([`Keep::Everything`] only).
    pub handoffs_ms: Vec<f64>,
    pub jain: f64,
    pub longest_run: u64,
    /// C-lost: holders overtaken (the earlier holder of an overlap, or a holder whose write
    /// fencing refused), how many of them were never told, and how each was told: every one,
    /// or the first [`EXAMPLES`] under [`Keep::Verdicts`], in the order the judge settled them.
    pub overtaken_holders: u64,
    pub never_told: u64,
    pub lost_holders: Vec<LostHolder>,
    /// Acquisitions made while another client waited (an occasion to overtake it).
    pub contended: u64,
    /// Acquisitions that overtook a waiter that invoked earlier; those that overtook one by
    /// more than [`FIFO_TOLERANCE`]; the first of those.
    pub overtakes: u64,
    pub overtakes_past_tolerance: u64,
    pub first_unfair: Option<Overtake>,
    /// The most times one waiting call was overtaken.
    pub most_overtaken: u64,
    /// T1-server: readings of the server the record holds (0: not read, not judged), and how
    /// many left out a believer.
    pub server_readings: u64,
    pub server_disagreements: u64,
    /// Why the lock promises first come, first served (F-order judged), if it does.
    pub fifo: Option<&'static str>,
    /// T1-belief, T1-resource, C-lost, T2 where the header gives a bound, C-free and C-release
    /// where a next caller asked, and
    /// F-order where the lock promises it.
    pub checks: Vec<(ClaimId, ClaimVerdict, String)>,
}

impl ObservedVerdicts {
    pub fn stale_accepted(&self) -> usize {
        usize::try_from(self.stale_accepted_count).unwrap_or(usize::MAX)
    }

    pub fn any_violated(&self) -> bool {
        self.checks.iter().any(|(_, verdict, _)| verdict.is_violated())
    }

    /// No claim was violated, and a limit of the judge left one undecided.
    pub fn any_bounded(&self) -> bool {
        !self.any_violated()
            && self
                .checks
                .iter()
                .any(|(_, verdict, _)| *verdict == ClaimVerdict::Bounded)
    }
}

/// Judge a record of a run seen from outside (its header's rules must be
/// [`Rules::Observed`]), keeping everything.
///
/// # Panics
/// If the header asks for other rules; [`crate::judge`] picks the judge a record asks for.
pub fn judge_record(header: &Header, events: &[Event]) -> ObservedVerdicts {
    let mut judge = Judge::for_record(header, Keep::Everything);
    for event in events {
        judge.see(event);
    }
    judge.finish(Duration::from_nanos(header.run.end_ns))
}

/// Judge `events` of `clients` clients, a record on `clock` that ended at `end`, keeping
/// everything.
pub fn judge(rules: &ObservedRules, clock: Clock, clients: usize, end: Duration, events: &[Event]) -> ObservedVerdicts {
    let mut judge = Judge::new(rules, clock, clients, Keep::Everything);
    for event in events {
        judge.see(event);
    }
    judge.finish(end)
}

/// The judge of an observed run, fed one event at a time in time order ([`Judge::see`]), then
/// told when the record ended ([`Judge::finish`]). Under [`Keep::Verdicts`] its memory grows
/// with the number of clients, never with the number of events.
pub struct Judge {
    rules: ObservedRules,
    clock: Clock,
    clients: usize,
    keep: Keep,
    believing: Believing,
    window: OverlapWindow<SimulatedTime>,
    now: Duration,
    /// Each waiting node's `invoke`, and how often that call was overtaken.
    invoked: BTreeMap<String, Duration>,
    passed_over: BTreeMap<String, u64>,
    /// Nodes a fault disrupts now (a pause, a kill), and waiting nodes whose wait a fault
    /// disrupted: F-order does not count an overtake of those.
    disrupted: std::collections::BTreeSet<String>,
    excused: std::collections::BTreeSet<String>,
    /// Overtakes past the tolerance of a waiter a fault had disrupted: not F-order's.
    overtakes_excused: u64,
    tellings: Tellings,
    fifo: Option<&'static str>,
    contended: u64,
    overtakes: u64,
    overtakes_past_tolerance: u64,
    first_unfair: Option<Overtake>,
    most_overtaken: u64,
    /// Clock reading errors by node (the header's `clocks`), added to F-order's tolerance.
    clock_error: BTreeMap<String, Duration>,
    acquisitions: u64,
    /// Acquisitions by client, for the shares.
    shares: BTreeMap<String, u64>,
    /// Acquisitions at the instant `now` not yet counted in the runs (ties go by client name).
    this_instant: Vec<String>,
    runs: LongestRun,
    stale_writes: Vec<StaleWrite>,
    stale_count: u64,
    stale_accepted_count: u64,
    waits_ms: Vec<f64>,
    intervals: Vec<HoldingInterval<SimulatedTime>>,
    next_caller: NextCaller,
    call_bound: CallBound,
    /// T1-server, where the record holds readings of the server.
    server: ServerJudge,
}

/// The longest stretch of acquisitions by one client, counted as they come.
#[derive(Default)]
struct LongestRun {
    previous: Option<String>,
    run: u64,
    longest: u64,
}

impl LongestRun {
    fn see(&mut self, client: String) {
        self.run = if self.previous.as_ref() == Some(&client) {
            self.run + 1
        } else {
            1
        };
        self.longest = self.longest.max(self.run);
        self.previous = Some(client);
    }
}

impl Judge {
    /// A judge for a record with this header.
    ///
    /// # Panics
    /// If the header asks for other rules than [`Rules::Observed`].
    pub fn for_record(header: &Header, keep: Keep) -> Judge {
        let Rules::Observed(rules) = &header.run.rules else {
            panic!(
                "the observed runs' judge was given a record with other rules: {:?}",
                header.run.rules
            )
        };
        let mut judge = Judge::new(rules, header.clock, header.run.clients, keep);
        judge.fifo = fifo_promise(header);
        judge.clock_error = header
            .run
            .clocks
            .iter()
            .map(|clock| (clock.node.clone(), Duration::from_micros(clock.error_us)))
            .collect();
        judge
    }

    pub fn new(rules: &ObservedRules, clock: Clock, clients: usize, keep: Keep) -> Judge {
        Judge {
            rules: rules.clone(),
            clock,
            clients,
            keep,
            believing: Believing::new(BeliefRules {
                lease_lost_ends_it: rules.lease_lost_ends_it,
            }),
            window: OverlapWindow::new(match keep {
                Keep::Everything => usize::MAX,
                Keep::Verdicts => EXAMPLES,
            }),
            now: Duration::ZERO,
            invoked: BTreeMap::new(),
            passed_over: BTreeMap::new(),
            disrupted: std::collections::BTreeSet::new(),
            excused: std::collections::BTreeSet::new(),
            overtakes_excused: 0,
            tellings: Tellings::new(match keep {
                Keep::Everything => usize::MAX,
                Keep::Verdicts => EXAMPLES,
            }),
            fifo: None,
            contended: 0,
            overtakes: 0,
            overtakes_past_tolerance: 0,
            first_unfair: None,
            most_overtaken: 0,
            clock_error: BTreeMap::new(),
            acquisitions: 0,
            shares: BTreeMap::new(),
            this_instant: Vec::new(),
            runs: LongestRun::default(),
            stale_writes: Vec::new(),
            stale_count: 0,
            stale_accepted_count: 0,
            waits_ms: Vec::new(),
            intervals: Vec::new(),
            next_caller: NextCaller::default(),
            call_bound: CallBound::default(),
            server: ServerJudge::new(BeliefRules {
                lease_lost_ends_it: rules.lease_lost_ends_it,
            }),
        }
    }

    /// Acquisitions C-lost follows now: one per client, and earlier ones T1-belief may still
    /// find overtaken (for the memory tests).
    pub fn cases_followed(&self) -> usize {
        self.tellings.followed()
    }

    /// Take in the next event (events in time order).
    pub fn see(&mut self, event: &Event) {
        let at = Duration::from_nanos(event.at_ns);
        if at != self.now {
            self.count_runs();
            self.now = at;
        }
        self.believing.see(event);
        self.close_intervals(self.now);
        self.server.see(event);
        self.next_caller.see(event);
        self.call_bound.see(event);
        match &event.what {
            What::Invoke { .. } => {
                self.invoked.insert(event.node.clone(), at);
                self.passed_over.insert(event.node.clone(), 0);
                if self.disrupted.contains(&event.node) {
                    self.excused.insert(event.node.clone());
                }
            }
            What::Fault {
                target: Some(target),
                disruption: Some(_),
                begins,
                ..
            } => {
                if *begins {
                    self.disrupted.insert(target.clone());
                    if self.invoked.contains_key(target) {
                        self.excused.insert(target.clone());
                    }
                } else {
                    self.disrupted.remove(target);
                }
            }
            What::NotAcquired { .. } => {
                if let Some(since) = self.invoked.get(event.node.as_str()) {
                    self.call_bound.answered(*since, at);
                }
                self.excused.remove(event.node.as_str());
                self.invoked.remove(event.node.as_str());
                self.passed_over.remove(event.node.as_str());
            }
            What::Acquired { thread, token, .. } => {
                self.acquisitions += 1;
                let since = self.invoked.remove(event.node.as_str()).unwrap_or(at);
                self.call_bound.answered(since, at);
                self.excused.remove(event.node.as_str());
                self.passed_over.remove(event.node.as_str());
                self.overtakes(&event.node, since, at);
                if self.keep == Keep::Everything {
                    self.waits_ms.push(ms(at.saturating_sub(since)));
                }
                *self.shares.entry(event.node.clone()).or_default() += 1;
                self.this_instant.push(event.node.clone());
                if client_index(&event.node).is_some() {
                    self.tellings.acquired(&event.node, thread, token, at);
                }
            }
            What::Extended { thread, .. } if client_index(&event.node).is_some() => {
                self.tellings.extended(&event.node, thread, at);
            }
            What::LeaseLost { thread, why, .. } => self.tellings.lost(&event.node, thread, why, at),
            What::Released {
                thread, outcome, why, ..
            } => self.tellings.released(thread, *outcome, why, at),
            What::Write {
                client,
                token,
                accepted: Some(false),
                stale,
                ..
            } => {
                let writer = client.as_deref().unwrap_or(event.node.as_str());
                self.tellings.refused(writer, token, at);
                if *stale == Some(true) {
                    self.stale_count += 1;
                    if self.keep == Keep::Everything || self.stale_writes.len() < EXAMPLES {
                        self.stale_writes.push(StaleWrite {
                            at,
                            client: writer.to_owned(),
                            token: token.clone(),
                            accepted: false,
                        });
                    }
                }
            }
            What::Write {
                client,
                token,
                stale: Some(true),
                accepted,
                ..
            } => {
                let accepted = accepted.unwrap_or(true);
                self.stale_count += 1;
                self.stale_accepted_count += u64::from(accepted);
                if self.keep == Keep::Everything || self.stale_writes.len() < EXAMPLES {
                    self.stale_writes.push(StaleWrite {
                        at,
                        client: client.clone().unwrap_or_else(|| event.node.clone()),
                        token: token.clone(),
                        accepted,
                    });
                }
            }
            _ => {}
        }
    }

    /// `node`, which invoked at `since`, acquired at `at`: the waiters that invoked before it
    /// and still wait are overtaken.
    fn overtakes(&mut self, node: &str, since: Duration, at: Duration) {
        if !self.invoked.is_empty() {
            self.contended += 1;
        }
        let mut overtook = false;
        let mut excused = false;
        let mut unfair: Option<(String, Duration)> = None;
        for (waiter, &invoked) in &self.invoked {
            if invoked >= since {
                continue;
            }
            overtook = true;
            let passed = self.passed_over.entry(waiter.clone()).or_default();
            *passed += 1;
            self.most_overtaken = self.most_overtaken.max(*passed);
            // Both instants are on the record's clock; a node whose readings may be off (the
            // header's `clocks`, `error_us`) widens the tolerance by its error.
            let error = |n: &str| self.clock_error.get(n).copied().unwrap_or_default();
            let tolerance = FIFO_TOLERANCE + error(node) + error(waiter);
            let earlier = since - invoked;
            if earlier > tolerance && self.excused.contains(waiter) {
                excused = true;
            } else if earlier > tolerance && unfair.as_ref().is_none_or(|(_, most)| earlier > *most) {
                unfair = Some((waiter.clone(), earlier));
            }
        }
        self.overtakes += u64::from(overtook);
        self.overtakes_excused += u64::from(excused && unfair.is_none());
        if let Some((waiter, earlier)) = unfair {
            self.overtakes_past_tolerance += 1;
            self.first_unfair.get_or_insert(Overtake {
                by: node.to_owned(),
                at,
                waiter,
                earlier,
            });
        }
    }

    /// The acquisitions of the instant that ended, by client name, into the runs.
    fn count_runs(&mut self) {
        self.this_instant.sort();
        for client in self.this_instant.drain(..) {
            self.runs.see(client);
        }
    }

    /// Hand the beliefs that closed to the overlap window (and keep them, if asked).
    fn close_intervals(&mut self, present: Duration) {
        let closed: Vec<_> = self.believing.take_closed().collect();
        // Nothing still to close began before the oldest open belief, the present, or any
        // belief of this batch (one closing after another in it may overlap the other).
        let horizon = closed
            .iter()
            .map(|interval| interval.acquired_at)
            .chain(self.believing.earliest_open_since())
            .fold(present, Duration::min);
        for interval in closed {
            self.close(&interval, horizon);
            if self.keep == Keep::Everything {
                self.intervals.push(interval);
            }
        }
        self.tellings.settle(present);
    }

    /// One belief closed: T1-belief's window, and the holders it finds overtaken (C-lost).
    fn close(&mut self, interval: &HoldingInterval<SimulatedTime>, horizon: Duration) {
        self.tellings.belief_closed(interval);
        for overlap in self.window.closed(interval, horizon) {
            self.tellings.overlap(&overlap);
        }
    }

    /// The record ended at `end`: beliefs still open last until then. Every verdict.
    pub fn finish(mut self, end: Duration) -> ObservedVerdicts {
        self.count_runs();
        let open = std::mem::replace(&mut self.believing, Believing::new(BeliefRules::default())).finish(end);
        for (i, interval) in open.iter().enumerate() {
            // Those still to close began no earlier than the earliest of them.
            let horizon = open[i + 1..]
                .iter()
                .map(|later| later.acquired_at)
                .min()
                .map_or(end, |since| since.min(end));
            self.close(interval, horizon);
            if self.keep == Keep::Everything {
                self.intervals.push(interval.clone());
            }
        }
        // A model's record stops where its counterexample stops: nothing after it is a run's end.
        let cut = matches!(self.clock, Clock::ModelTicks | Clock::ModelSteps);
        self.tellings.finish(cut);
        let (overlap_count, overlaps, window_full) = self.window.finish();
        let c_lost = c_lost_check(&self.tellings, self.clock, window_full);
        let fairness = Fairness {
            first_unfair: self.first_unfair.as_ref(),
            overtakes_past_tolerance: self.overtakes_past_tolerance,
            contended: self.contended,
            overtakes: self.overtakes,
            overtakes_excused: self.overtakes_excused,
        };
        let f_order = self.fifo.map(|_| f_order_check(&fairness, self.clock));
        let mut v = ObservedVerdicts {
            acquisitions: self.acquisitions,
            overlap_count,
            overlaps,
            stale_count: self.stale_count,
            stale_accepted_count: self.stale_accepted_count,
            stale_writes: self.stale_writes,
            waits_ms: self.waits_ms,
            ..ObservedVerdicts::default()
        };
        if self.keep == Keep::Everything {
            let mut intervals = self.intervals;
            intervals.sort_by(|a, b| {
                (a.acquired_at, a.released_at, &a.holder).cmp(&(b.acquired_at, b.released_at, &b.holder))
            });
            debug_assert_eq!(
                v.overlaps,
                crate::holding::overlaps(&intervals),
                "the overlap window and the whole list disagree"
            );
            // The cycle: holds, and handoffs between consecutive beliefs of two clients (one
            // still open at the end has no hold to count).
            v.holds_ms = intervals
                .iter()
                .filter(|interval| interval.released_at < end)
                .map(|interval| ms(interval.length()))
                .collect();
            v.handoffs_ms = intervals
                .windows(2)
                .filter(|pair| pair[0].holder != pair[1].holder && pair[0].released_at < end)
                .map(|pair| ms(pair[1].acquired_at.saturating_sub(pair[0].released_at)))
                .collect();
            v.intervals = intervals;
        }
        let mut share_list: Vec<f64> = std::mem::take(&mut self.shares)
            .into_values()
            .map(|n| n as f64)
            .collect();
        share_list.resize(self.clients.max(share_list.len()), 0.0);
        v.jain = stats::jain(&share_list);
        v.longest_run = self.runs.longest;
        v.overtaken_holders = self.tellings.overtaken;
        v.never_told = self.tellings.never_told;
        v.contended = self.contended;
        v.overtakes = self.overtakes;
        v.overtakes_past_tolerance = self.overtakes_past_tolerance;
        v.most_overtaken = self.most_overtaken;
        v.fifo = self.fifo;
        v.first_unfair = self.first_unfair;
        v.lost_holders = std::mem::take(&mut self.tellings.kept);
        v.checks = vec![
            (
                ClaimId::T1Belief,
                if v.overlap_count > 0 {
                    ClaimVerdict::Violated
                } else if window_full {
                    ClaimVerdict::Bounded
                } else {
                    ClaimVerdict::Holds
                },
                t1_belief_detail(&v, self.clock, window_full),
            ),
            (
                ClaimId::T1Resource,
                ClaimVerdict::from_holds(v.stale_accepted_count == 0),
                format!(
                    "{} accepted, {} refused by fencing{}",
                    count(v.stale_accepted_count, "stale write"),
                    v.stale_count - v.stale_accepted_count,
                    if self.rules.fencing { "" } else { " (fencing off)" }
                ),
            ),
            c_lost,
        ];
        let (server, _) = std::mem::replace(&mut self.server, ServerJudge::new(BeliefRules::default())).finish(end);
        v.checks.extend(t1_server_check(&server, self.clock));
        match server {
            ServerAgreement::NotRead => {}
            ServerAgreement::Agreed { readings } => v.server_readings = readings,
            ServerAgreement::Disagreed {
                readings,
                disagreeing_readings,
                ..
            } => (v.server_readings, v.server_disagreements) = (readings, disagreeing_readings),
        }
        v.checks.extend(self.call_bound.check(self.rules.call_bound_ms));
        v.checks.extend(self.next_caller.checks());
        v.checks.extend(f_order);
        v
    }
}

/// T1-server's verdict and text, where the record holds readings of the server (none: the
/// runner did not read it, and T1-server is not listed).
fn t1_server_check(server: &ServerAgreement, clock: Clock) -> Option<(ClaimId, ClaimVerdict, String)> {
    match server {
        ServerAgreement::NotRead => None,
        ServerAgreement::Agreed { readings } => Some((
            ClaimId::T1Server,
            ClaimVerdict::Holds,
            format!("every believer named by the server, at {}", count(*readings, "reading")),
        )),
        ServerAgreement::Disagreed {
            first,
            disagreeing_readings,
            readings,
        } => Some((
            ClaimId::T1Server,
            ClaimVerdict::Violated,
            format!(
                "{disagreeing_readings} of {} left out a believer; first: {}",
                count(*readings, "reading"),
                first.describe(&instant(clock, first.at))
            ),
        )),
    }
}

/// C-lost's verdict and text: kept when every overtaken holder was told, violated when one
/// never was, no occasion when nobody was overtaken.
fn c_lost_check(tellings: &Tellings, clock: Clock, window_full: bool) -> (ClaimId, ClaimVerdict, String) {
    let full = if window_full {
        " (T1-belief's window filled: holders overtaken later may not all be counted)"
    } else {
        ""
    };
    let latest = tellings.latest.as_ref().map(|told| {
        format!(
            "latest: {} told {} the overtaking acquisition",
            told.holder,
            told.first_described().unwrap_or_default()
        )
    });
    if let Some(never) = &tellings.first_never {
        let mut text = format!(
            "violated: {} of {} never told; first: {}, overtaken at {}, {}",
            tellings.never_told,
            count(tellings.overtaken, "overtaken holder"),
            never.holder,
            instant(clock, never.overtaken_at),
            never.describe()
        );
        if let Some(latest) = latest {
            text.push_str("; ");
            text.push_str(&latest);
        }
        text.push_str(full);
        return (ClaimId::CLost, ClaimVerdict::Violated, text);
    }
    if let Some(untold) = &tellings.first_untold_at_cut {
        return (
            ClaimId::CLost,
            ClaimVerdict::Bounded,
            format!(
                "undecided: {} of {} not yet told where the record stops (a model's counterexample ends at its violation; the model's own C-lost decides); first: {}, overtaken at {}{full}",
                tellings.untold_at_cut,
                count(tellings.overtaken, "overtaken holder"),
                untold.holder,
                instant(clock, untold.overtaken_at),
            ),
        );
    }
    match latest {
        None => (
            ClaimId::CLost,
            if window_full {
                ClaimVerdict::Bounded
            } else {
                ClaimVerdict::NotExercised
            },
            format!("no occasion: no holder was overtaken{full}"),
        ),
        Some(latest) => (
            ClaimId::CLost,
            if window_full {
                ClaimVerdict::Bounded
            } else {
                ClaimVerdict::Holds
            },
            format!(
                "kept: {}, every one told; {latest}{full}",
                count(tellings.overtaken, "overtaken holder")
            ),
        ),
    }
}

/// What F-order reads of the judge.
struct Fairness<'a> {
    first_unfair: Option<&'a Overtake>,
    overtakes_past_tolerance: u64,
    contended: u64,
    overtakes: u64,
    overtakes_excused: u64,
}

/// F-order's verdict and text, for a lock that promises first come, first served.
fn f_order_check(judge: &Fairness<'_>, clock: Clock) -> (ClaimId, ClaimVerdict, String) {
    let tolerance = format!("{} ms", FIFO_TOLERANCE.as_millis());
    match judge.first_unfair {
        Some(first) => (
            ClaimId::FOrder,
            ClaimVerdict::Violated,
            format!(
                "violated: {} overtook a waiter that invoked more than {tolerance} earlier; first: {} acquired at {} ahead of {}, which invoked {} before it",
                count(judge.overtakes_past_tolerance, "acquisition"),
                first.by,
                instant(clock, first.at),
                first.waiter,
                relative(first.earlier.as_secs_f64()).trim_end_matches(" after")
            ),
        ),
        None if judge.contended == 0 => (
            ClaimId::FOrder,
            ClaimVerdict::NotExercised,
            "no occasion: nobody acquired while another waited".into(),
        ),
        None => (
            ClaimId::FOrder,
            ClaimVerdict::Holds,
            format!(
                "kept: {} while another waited, {} overtook a waiter, none by more than {tolerance}{}",
                count(judge.contended, "acquisition"),
                judge.overtakes,
                if judge.overtakes_excused > 0 {
                    format!(
                        " but {} of a waiter a fault had stopped (not counted: its place may have gone with its session)",
                        count(judge.overtakes_excused, "overtake")
                    )
                } else {
                    String::new()
                }
            ),
        ),
    }
}

fn t1_belief_detail(v: &ObservedVerdicts, clock: Clock, window_full: bool) -> String {
    let full = if window_full {
        format!(
            " (the judge's window of {} beliefs filled: overlaps with beliefs closed after that were not all counted)",
            crate::overlap_window::WINDOW_LIMIT
        )
    } else {
        String::new()
    };
    match v.overlaps.first() {
        None => format!("{}, never two believers{full}", count(v.acquisitions, "acquisition")),
        Some(first) => format!(
            "{}; first: {} acquired at {} while {} held until {}{full}",
            count(v.overlap_count, "overlap"),
            first.second.holder,
            instant(clock, first.from),
            first.first.holder,
            instant(clock, first.first.released_at)
        ),
    }
}

/// Milliseconds, from whole microseconds (the real runner's clock reads microseconds).
fn ms(duration: Duration) -> f64 {
    duration.as_micros() as f64 / 1000.0
}

/// An instant as its clock reads: microseconds since the epoch on the wall clock; a tick and
/// the step within it on the model's; seconds on the simulator's.
fn instant(clock: Clock, at: Duration) -> String {
    match clock {
        Clock::WallSinceEpoch => format!("{} us", at.as_micros()),
        Clock::ModelTicks => format!("tick {}, step {}", at.as_secs(), at.subsec_nanos()),
        Clock::ModelSteps => format!("step {}", at.as_secs()),
        Clock::SimulatedSinceStart => format!("{:.6} s", at.as_secs_f64()),
    }
}

impl fmt::Display for ObservedVerdicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (claim, verdict, detail) in &self.checks {
            writeln!(
                f,
                "  {:<12} {:<8} {detail}",
                claim.as_str(),
                match verdict {
                    ClaimVerdict::Holds => "ok",
                    ClaimVerdict::Violated => "FAILED",
                    ClaimVerdict::NotExercised => "-",
                    ClaimVerdict::Bounded => "bounded",
                }
            )?;
        }
        writeln!(
            f,
            "  fairness     Jain {:.3} over {}, longest run by one client {}, {} (an acquisition ahead of a waiter that invoked earlier), a call overtaken at most {}",
            self.jain,
            count(self.acquisitions, "acquisition"),
            self.longest_run,
            count(self.overtakes, "overtake"),
            count(self.most_overtaken, "time")
        )?;
        for lost in &self.lost_holders {
            writeln!(f, "  lost holder  {}: {}", lost.holder, lost.describe())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
