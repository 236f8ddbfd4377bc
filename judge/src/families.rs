//! The judges of a run of the families' simulator, from its event record under
//! [`FamilyRules`] (simulated time since the run began):
//!
//! - **T1-belief**: two holders believed they held the lock at once. A holder's interval runs
//!   from its `acquired` event to the first of `releasing`, `lease_lost`, and the moment its own
//!   clock passed the lease's `valid_until_us` (`valid_until_at_ns`, on the record's clock; an
//!   `extended` event before that moment moves the end; one after it starts a new interval).
//!   Judged by the shared [`crate::holding::overlaps`].
//! - **T1-resource**: the resource received a write from an older acquisition after a newer one
//!   had written (acquisitions numbered in the order they happened). What a fencing token would
//!   have refused; the lock's belief can be right while this is violated (a pause between the
//!   check and the write).
//! - **T1-server**: at every reading of the server's state the record holds (`server_holder`),
//!   every believer is the holder the server names ([`crate::server_state`]); not checked in a
//!   record without readings.
//! - **C-release**: at the instant a release said `Released`, or at the end of the run, a key
//!   still holds the released token (for Redlock: on a majority of the masters, enough to keep
//!   every other client out until the TTL).
//! - **C-lost** (locks whose holder runs a watchdog: Redisson): a holder that a later
//!   acquisition overtook learns it within a bound: by its watchdog (`LeaseLost`), by its own
//!   validity check finding the lease run out, or by starting its release, no later than one
//!   renewal period plus one request timeout (and 100 ms) after the other acquired, the time
//!   its process was paused not counted. (Its clock passing its validity unnoticed does not
//!   count: a Redisson user has no such check, and trusts the watchdog to keep or end the lock.)
//! - **C-token**, its growing half (locks whose token is a fencing token: ZooKeeper's czxid, etcd's create
//!   revision): every acquisition's token is larger than every earlier acquisition's. Where it
//!   holds, T1-resource is judged against a resource that checks the token: a write carrying a
//!   token below the largest it has seen is refused, not counted.
//! - **T2**: every client finished its acquisitions before the run's bound. A run cut by the
//!   bound is reported *bounded*, unless a client had been trying to acquire while the lock was
//!   free for half the run or more with no fault in the way (the rows' stuck rule, on free
//!   time): then T2 is *violated*.
//! - **T2-free** (single-client scenarios only): a `lock` call gave up although no other client
//!   could have held the lock.
//! - **F-order** (Redisson's fair lock): the lock goes to `lock()` calls in the order their first
//!   acquire reached the server, as the server recorded it (`FairAsked`, `FairGranted`). A grant
//!   to B violates it when a call A asked first, had not been granted, was still waiting in
//!   `lock()` (no `NotAcquired` yet, and its wait had not run out: no `FairGivingUp`) and had
//!   not been dropped from the queue by the scripts.
//!   A waiter the scripts dropped as stale is excused from then on, as the model's F-order
//!   excuses it: the claim is the queue's discipline over the waiters it keeps. The drop itself
//!   is F-drop's, never excused.
//! - **C-wait** (a lock whose `lock()` has a deadline: `max_wait_ms`, `wait_ms`): every call
//!   returns, with the lock or without, within its wait plus [`FamilyRules::wait_past_ms`],
//!   measured on the caller's clock from its `calling` event to its `acquired` or
//!   `not_acquired`; a call still inside `lock()` when the run stopped, longer than that after
//!   it began, violates it too.
//! - **F-drop** (Redisson's fair lock): no waiter is dropped from the queue without being told.
//!   The scripts drop a waiter whose deadline passed (`FairDropped`, recorded by the server); a
//!   call still waiting in `lock()` then is not told, and joins the tail whenever it next asks.
//!   A drop of a call that had already ended (gave up), or whose wait had run out and which
//!   was sending its leave (`FairGivingUp`: the drop and the leave race), is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use crate::belief::BeliefRules;
use crate::event::{Event, FamilyRules, Header, ReleaseOutcome, Rules, What};
use crate::holding::{overlaps, HoldingInterval, SimulatedTime};
use crate::server_state::ServerAgreement;
use crate::ClaimId;

/// The key every family run's lock is on (its holding intervals name it).
pub const KEY: &str = "L";

/// What the judges read: the rules, the clients started, when the run stopped, the events.
struct Run<'a> {
    rules: &'a FamilyRules,
    clients: usize,
    end: Duration,
    events: &'a [Event],
}

fn at(event: &Event) -> Duration {
    Duration::from_nanos(event.at_ns)
}

/// The claims, in the order they are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Claim {
    T1Belief,
    T1Resource,
    T1Server,
    CRelease,
    CLost,
    CToken,
    T2,
    T2Free,
    FOrder,
    FDrop,
    CWait,
}

impl Claim {
    pub const ALL: [Claim; 11] = [
        Claim::T1Belief,
        Claim::T1Resource,
        Claim::T1Server,
        Claim::CRelease,
        Claim::CLost,
        Claim::CToken,
        Claim::T2,
        Claim::T2Free,
        Claim::FOrder,
        Claim::FDrop,
        Claim::CWait,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Claim::T1Belief => "T1-belief",
            Claim::T1Resource => "T1-resource",
            Claim::T1Server => "T1-server",
            Claim::CRelease => "C-release",
            Claim::CLost => "C-lost",
            Claim::CToken => "C-token",
            Claim::T2 => "T2",
            Claim::T2Free => "T2-free",
            Claim::FOrder => "F-order",
            Claim::FDrop => "F-drop",
            Claim::CWait => "C-wait",
        }
    }

    pub fn named(name: &str) -> Option<Claim> {
        Claim::ALL.into_iter().find(|claim| claim.name() == name)
    }

    /// The claim of docs/claims.md this judge checks, as the property matrix files it: C-token
    /// (judged on its growing half), and T2-free (a lone client never gives up on a free
    /// lock) is a case of T2.
    pub fn id(self) -> ClaimId {
        match self {
            Claim::T1Belief => ClaimId::T1Belief,
            Claim::T1Resource => ClaimId::T1Resource,
            Claim::T1Server => ClaimId::T1Server,
            Claim::CRelease => ClaimId::CRelease,
            Claim::CLost => ClaimId::CLost,
            Claim::CToken => ClaimId::CToken,
            Claim::T2 | Claim::T2Free => ClaimId::T2,
            Claim::FOrder => ClaimId::FOrder,
            Claim::FDrop => ClaimId::FDrop,
            Claim::CWait => ClaimId::CWait,
        }
    }
}

/// One claim's verdict on one run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    NoViolation,
    /// What broke, in a sentence (the first instance).
    Violated(String),
    /// The run's bound stopped the judge: neither held nor violated.
    Bounded(String),
    /// The judge does not apply to this scenario.
    NotChecked,
}

impl Verdict {
    pub fn is_violated(&self) -> bool {
        matches!(self, Verdict::Violated(_))
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::NoViolation => write!(f, "no violation"),
            Verdict::Violated(why) => write!(f, "VIOLATED: {why}"),
            Verdict::Bounded(why) => write!(f, "bounded: {why}"),
            Verdict::NotChecked => write!(f, "not checked"),
        }
    }
}

/// Every claim's verdict on one run, in [`Claim::ALL`] order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FamilyVerdicts {
    pub claims: Vec<(Claim, Verdict)>,
}

impl FamilyVerdicts {
    pub fn get(&self, claim: Claim) -> &Verdict {
        &self
            .claims
            .iter()
            .find(|(c, _)| *c == claim)
            .expect("every claim is judged")
            .1
    }

    pub fn any_violated(&self) -> bool {
        self.claims.iter().any(|(_, verdict)| verdict.is_violated())
    }

    pub fn any_bounded(&self) -> bool {
        self.claims
            .iter()
            .any(|(_, verdict)| matches!(verdict, Verdict::Bounded(_)))
    }
}

/// Judge a record of the families' simulator (its header's rules must be [`Rules::Families`]).
///
/// # Panics
/// If the header asks for other rules; [`crate::judge`] picks the judge a record asks for.
pub fn judge_record(header: &Header, events: &[Event]) -> FamilyVerdicts {
    let Rules::Families(rules) = &header.run.rules else {
        panic!(
            "the families' judge was given a record with other rules: {:?}",
            header.run.rules
        )
    };
    judge(
        rules,
        header.run.clients,
        Duration::from_nanos(header.run.end_ns),
        events,
    )
}

/// Judge one run: its rules, the clients it started, when it stopped, its events.
pub fn judge(rules: &FamilyRules, clients: usize, end: Duration, events: &[Event]) -> FamilyVerdicts {
    debug_assert!(
        events.windows(2).all(|pair| pair[0].at_ns <= pair[1].at_ns),
        "events are in time order"
    );
    let run = Run {
        rules,
        clients,
        end,
        events,
    };
    let claims = vec![
        (Claim::T1Belief, t1_belief(&run)),
        (Claim::T1Resource, t1_resource(&run)),
        (Claim::T1Server, t1_server(&run)),
        (Claim::CRelease, c_release(&run)),
        (Claim::CLost, c_lost(&run)),
        (Claim::CToken, c_token(&run)),
        (Claim::T2, t2(&run)),
        (Claim::T2Free, t2_free(&run)),
        (Claim::FOrder, f_order(&run)),
        (Claim::FDrop, f_drop(&run)),
        (Claim::CWait, c_wait(&run)),
    ];
    debug_assert!(claims.iter().map(|(c, _)| *c).eq(Claim::ALL));
    FamilyVerdicts { claims }
}

/// The holders' intervals (see [`crate::belief`]: the library's notice of a lost lock ends a
/// belief here), in the order they closed; `end`: when the run stopped.
pub fn holding_intervals(events: &[Event], end: Duration) -> Vec<HoldingInterval<SimulatedTime>> {
    crate::belief::holding_intervals(
        events,
        end,
        BeliefRules {
            lease_lost_ends_it: true,
        },
    )
}

fn ms(at: Duration) -> String {
    format!("{:.3} ms", at.as_secs_f64() * 1000.0)
}

fn t1_belief(run: &Run) -> Verdict {
    let intervals = holding_intervals(run.events, run.end);
    match overlaps(&intervals).first() {
        None => Verdict::NoViolation,
        Some(overlap) => Verdict::Violated(format!(
            "{} and {} both believed they held {} from {} to {}",
            overlap.first.holder,
            overlap.second.holder,
            overlap.first.lock,
            ms(overlap.from),
            ms(overlap.to)
        )),
    }
}

/// Every believer is the holder the server's state names, at each reading of the server
/// ([`crate::server_state`]).
fn t1_server(run: &Run) -> Verdict {
    let rules = BeliefRules {
        lease_lost_ends_it: true,
    };
    match crate::server_state::judge(run.events, run.end, rules) {
        ServerAgreement::NotRead => Verdict::NotChecked,
        ServerAgreement::Agreed { .. } => Verdict::NoViolation,
        ServerAgreement::Disagreed {
            first,
            disagreeing_readings,
            readings,
        } => Verdict::Violated(format!(
            "{first} ({disagreeing_readings} of {readings} readings of the server disagreed)"
        )),
    }
}

/// A write the resource saw, as the families' judge reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JudgedWrite {
    pub at: Duration,
    pub token: String,
    /// The order number of the acquisition that held the token (`None`: no acquisition had it).
    pub acquisition: Option<u64>,
    /// A fenced resource refused it: its token is below one it has accepted.
    pub refused: bool,
    /// It came from an older acquisition after a newer one had written (or from no
    /// acquisition), and went through: T1-resource's damage.
    pub stale_accepted: bool,
    /// The newer acquisition that had written before it, and when, where it was stale.
    pub after: Option<(u64, String, Duration)>,
}

/// Every write of `events`, judged: a fenced resource (tokens that grow: 20 digits, so text
/// order is number order) refuses a token below the largest it has accepted; a write that goes
/// through from an older acquisition than one that has already written is stale.
pub fn judged_writes(rules: &FamilyRules, events: &[Event]) -> Vec<JudgedWrite> {
    let fenced = rules.fencing_tokens;
    let mut largest_token: Option<&str> = None;
    let mut newest: Option<(u64, &str, Duration)> = None;
    let mut writes = Vec::new();
    for event in events {
        let What::Write { token, acquisition, .. } = &event.what else {
            continue;
        };
        let mut write = JudgedWrite {
            at: at(event),
            token: token.clone(),
            acquisition: *acquisition,
            refused: false,
            stale_accepted: false,
            after: None,
        };
        let Some(acquisition) = *acquisition else {
            write.stale_accepted = true;
            writes.push(write);
            continue;
        };
        if fenced {
            if largest_token.is_some_and(|largest| token.as_str() < largest) {
                write.refused = true;
                writes.push(write);
                continue;
            }
            largest_token = Some(token);
        }
        match newest {
            Some((newer, newer_token, newer_at)) if acquisition < newer => {
                write.stale_accepted = true;
                write.after = Some((newer, newer_token.to_owned(), newer_at));
            }
            Some((newer, _, _)) if acquisition == newer => {}
            _ => newest = Some((acquisition, token, at(event))),
        }
        writes.push(write);
    }
    writes
}

fn t1_resource(run: &Run) -> Verdict {
    let writes = judged_writes(run.rules, run.events);
    let Some(stale) = writes.iter().find(|write| write.stale_accepted) else {
        return Verdict::NoViolation;
    };
    match (&stale.acquisition, &stale.after) {
        (Some(acquisition), Some((newer, newer_token, newer_at))) => Verdict::Violated(format!(
            "acquisition #{acquisition} ({}) wrote at {} after acquisition #{newer} ({newer_token}) had written at {}",
            stale.token,
            ms(stale.at),
            ms(*newer_at)
        )),
        _ => Verdict::Violated(format!(
            "a write from {} at {}, a token no acquisition had",
            stale.token,
            ms(stale.at)
        )),
    }
}

fn c_release(run: &Run) -> Verdict {
    // Tokens by thread, from the acquired events; threads whose release said released.
    let mut token_of: BTreeMap<&str, &str> = BTreeMap::new();
    let mut released: BTreeSet<&str> = BTreeSet::new();
    for event in run.events {
        match &event.what {
            What::Acquired { thread, token, .. } => {
                token_of.insert(thread, token);
            }
            What::Released {
                thread,
                outcome: ReleaseOutcome::Released,
                ..
            } => {
                if let Some(token) = token_of.get(thread.as_str()) {
                    released.insert(token);
                }
            }
            _ => {}
        }
    }
    let needed = run.rules.release_quorum.max(1);
    // At the instant a release said released (recorded by the run).
    for event in run.events {
        if let What::KeptAfterRelease { token, servers } = &event.what {
            if servers.len() >= needed {
                return Verdict::Violated(format!(
                    "{}'s release of {token} said Released at {}, yet server(s) {servers:?} still held its key",
                    event.node,
                    ms(at(event))
                ));
            }
        }
    }
    // At the end of the run.
    let mut holding: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for event in run.events {
        if let What::LeftAtEnd { token, server } = &event.what {
            if released.contains(token.as_str()) {
                holding.entry(token).or_default().push(*server);
            }
        }
    }
    match holding.into_iter().find(|(_, servers)| servers.len() >= needed) {
        None => Verdict::NoViolation,
        Some((token, servers)) => Verdict::Violated(format!(
            "token {token} was released (Released) but still holds the key on server(s) {servers:?} at the end"
        )),
    }
}

fn c_token(run: &Run) -> Verdict {
    if !run.rules.fencing_tokens {
        return Verdict::NotChecked;
    }
    let mut largest: Option<(&str, u64)> = None;
    for event in run.events {
        let What::Numbered { token, acquisition } = &event.what else {
            continue;
        };
        if let Some((before, earlier)) = largest {
            if token.as_str() <= before {
                return Verdict::Violated(format!(
                    "acquisition #{acquisition} at {} got token {token}, not above acquisition #{earlier}'s {before}",
                    ms(at(event))
                ));
            }
        }
        largest = Some((token, *acquisition));
    }
    Verdict::NoViolation
}

/// The intervals each client's process was paused, from the `client_paused` events.
fn paused_intervals(events: &[Event]) -> BTreeMap<&str, Vec<(Duration, Duration)>> {
    let mut paused: BTreeMap<&str, Vec<(Duration, Duration)>> = BTreeMap::new();
    for event in events {
        if let What::ClientPaused { ms } = event.what {
            paused
                .entry(&event.node)
                .or_default()
                .push((at(event), at(event) + Duration::from_millis(ms)));
        }
    }
    paused
}

/// The part of `from..to` in which none of `paused` ran.
fn running_time(from: Duration, to: Duration, paused: &[(Duration, Duration)]) -> Duration {
    let stopped: Duration = paused
        .iter()
        .map(|&(start, end)| end.min(to).saturating_sub(start.max(from)))
        .sum();
    to.saturating_sub(from).saturating_sub(stopped)
}

fn c_lost(run: &Run) -> Verdict {
    let Some(bound_ms) = run.rules.lost_bound_ms else {
        return Verdict::NotChecked;
    };
    let bound = Duration::from_millis(bound_ms);
    let paused = paused_intervals(run.events);
    // Per holder: its node, when it acquired, and when it learned or stopped holding.
    struct Held<'a> {
        node: &'a str,
        thread: &'a str,
        since: Duration,
        until: Option<Duration>,
    }
    let mut held: Vec<Held> = Vec::new();
    let mut acquisitions: Vec<(Duration, &str)> = Vec::new();
    for event in run.events {
        let learned = match &event.what {
            What::Acquired { thread, .. } => {
                held.push(Held {
                    node: &event.node,
                    thread,
                    since: at(event),
                    until: None,
                });
                acquisitions.push((at(event), thread));
                None
            }
            What::LeaseLost { thread, .. } | What::Releasing { thread, .. } | What::SawInvalid { thread } => {
                Some(thread.as_str())
            }
            _ => None,
        };
        if let Some(thread) = learned {
            if let Some(holder) = held.iter_mut().find(|h| h.thread == thread && h.until.is_none()) {
                holder.until = Some(at(event));
            }
        }
    }
    for holder in &held {
        let until = holder.until.unwrap_or(run.end);
        let overtaken = acquisitions
            .iter()
            .find(|(at, thread)| *thread != holder.thread && *at > holder.since && *at < until);
        let Some(&(overtaken_at, by)) = overtaken else {
            continue;
        };
        let stopped = paused.get(holder.node).map_or(&[][..], Vec::as_slice);
        let unaware = running_time(overtaken_at, until, stopped);
        if unaware > bound {
            return Verdict::Violated(format!(
                "{} was not told for {} after {by} acquired at {} (bound {bound_ms} ms: a renewal period and a request timeout){}",
                holder.thread,
                ms(unaware),
                ms(overtaken_at),
                if holder.until.is_none() {
                    ", up to the end of the run"
                } else {
                    ""
                }
            ));
        }
    }
    Verdict::NoViolation
}

/// The longest handover of a run: from a release that said released to the next
/// `acquired`, and when that release was (what a lost unlock message costs: the waiter sleeps
/// out the TTL it was told; a newcomer after a think time counts too).
pub fn longest_handover(events: &[Event]) -> Option<(Duration, Duration)> {
    let mut released_at: Option<Duration> = None;
    let mut longest: Option<(Duration, Duration)> = None;
    for event in events {
        match &event.what {
            // The fair lock's release cannot tell "freed" from "already gone" (both 1).
            What::Released {
                outcome: ReleaseOutcome::Released | ReleaseOutcome::GoneEitherWay,
                ..
            } => released_at = Some(at(event)),
            What::Acquired { .. } => {
                if let Some(released) = released_at.take() {
                    let gap = at(event).saturating_sub(released);
                    if longest.is_none_or(|(worst, _)| gap > worst) {
                        longest = Some((gap, released));
                    }
                }
            }
            _ => {}
        }
    }
    longest
}

fn t2(run: &Run) -> Verdict {
    let done: BTreeSet<&str> = run
        .events
        .iter()
        .filter(|event| matches!(event.what, What::Done { .. }))
        .map(|event| event.node.as_str())
        .collect();
    if done.len() == run.clients {
        return Verdict::NoViolation;
    }
    let still = format!(
        "{} of {} clients still running at the bound of {} ms",
        run.clients.saturating_sub(done.len()),
        run.clients,
        run.rules.bound_ms
    );
    let stuck = stuck(run, &done);
    if stuck.is_empty() {
        Verdict::Bounded(still)
    } else {
        let stuck: Vec<String> = stuck
            .iter()
            .map(|(client, open)| format!("{client} {:.3} s", open.as_secs_f64()))
            .collect();
        Verdict::Violated(format!(
            "{still}; stuck (trying to acquire on a free lock, with no fault on it, for half the run or more): {}",
            stuck.join(", ")
        ))
    }
}

/// The unfinished clients whose open acquisition had been trying, when the run ended, while
/// the lock was free (no client between its `acquired` and its release) for at least half the
/// run with no fault in the way: the rows' rule ([`crate::rows::stuck_after`]), on free time
/// only, so that a waiter behind a long queue of holders is not taken for a stuck one. Counted
/// from its `invoke`, from the end of the last fault (any node's, the network's), and from the
/// end of its own last pause, whichever is latest. A fault still on at the end decides nothing
/// (the run stopped inside it). Less, and the run was only too short: bounded.
fn stuck(run: &Run, done: &BTreeSet<&str>) -> Vec<(String, Duration)> {
    let mut trying: BTreeMap<&str, Duration> = BTreeMap::new();
    let mut paused_until: BTreeMap<&str, Duration> = BTreeMap::new();
    let mut active: BTreeMap<(Option<&str>, &str), usize> = BTreeMap::new();
    let mut last_heal = Duration::ZERO;
    let mut holding_since: BTreeMap<&str, Duration> = BTreeMap::new();
    let mut held: Vec<(Duration, Duration)> = Vec::new();
    for event in run.events {
        let node = event.node.as_str();
        match &event.what {
            What::Invoke { .. } => {
                trying.insert(node, at(event));
            }
            What::Acquired { .. } => {
                trying.remove(node);
                holding_since.entry(node).or_insert(at(event));
            }
            What::Releasing { .. } | What::Released { .. } => {
                if let Some(since) = holding_since.remove(node) {
                    held.push((since, at(event)));
                }
            }
            What::ClientPaused { ms } => {
                let until = at(event) + Duration::from_millis(*ms);
                let entry = paused_until.entry(node).or_default();
                *entry = (*entry).max(until);
            }
            What::Fault {
                text, target, begins, ..
            } => {
                let key = (target.as_deref(), text.as_str());
                if *begins {
                    *active.entry(key).or_default() += 1;
                } else {
                    last_heal = last_heal.max(at(event));
                    if let Some(count) = active.get_mut(&key) {
                        *count = count.saturating_sub(1);
                    }
                }
            }
            _ => {}
        }
    }
    if active.values().any(|count| *count > 0) {
        return Vec::new();
    }
    held.extend(holding_since.into_values().map(|since| (since, run.end)));
    let half = crate::rows::stuck_after(run.end);
    trying
        .into_iter()
        .filter(|(node, _)| !done.contains(node))
        .filter_map(|(node, since)| {
            let from = since
                .max(last_heal)
                .max(paused_until.get(node).copied().unwrap_or_default());
            let free = free_time(&held, from, run.end);
            (free >= half && !half.is_zero()).then(|| (node.to_owned(), free))
        })
        .collect()
}

/// How much of `from..to` no interval of `held` covers.
fn free_time(held: &[(Duration, Duration)], from: Duration, to: Duration) -> Duration {
    let mut clipped: Vec<(Duration, Duration)> = held
        .iter()
        .map(|&(a, b)| (a.max(from), b.min(to)))
        .filter(|(a, b)| a < b)
        .collect();
    clipped.sort();
    let mut covered = Duration::ZERO;
    let mut reach = from;
    for (a, b) in clipped {
        let a = a.max(reach);
        if b > a {
            covered += b - a;
            reach = b;
        }
    }
    to.saturating_sub(from).saturating_sub(covered)
}

fn t2_free(run: &Run) -> Verdict {
    if !run.rules.lone_client {
        return Verdict::NotChecked;
    }
    debug_assert_eq!(run.clients, 1, "T2-free is judged only with one client");
    run.events
        .iter()
        .find_map(|event| match &event.what {
            What::CallFailed { error, .. } => Some(Verdict::Violated(format!(
                "{} gave up at {} on a lock no other client held: {error}",
                event.node,
                ms(at(event))
            ))),
            _ => None,
        })
        .unwrap_or(Verdict::NoViolation)
}

/// The `lock()` call (thread, `c3-2`) a token (`c3:2:nonce`) belongs to, as the driver names
/// them.
fn thread_of(token: &str) -> String {
    let mut parts = token.splitn(3, ':');
    match (parts.next(), parts.next()) {
        (Some(client), Some(sequence)) => format!("{client}-{sequence}"),
        _ => token.to_owned(),
    }
}

/// Per fair-lock `lock()` call (by token): when its first acquire reached the server, when it
/// was granted, when its call ended without the lock, when the scripts first dropped it.
#[derive(Default)]
struct FairCall {
    asked: Option<(usize, Duration)>,
    granted: Option<Duration>,
    ended: Option<Duration>,
    /// Its wait ran out and it sent the request that leaves the queue (`FairGivingUp`).
    giving_up: Option<Duration>,
    dropped: Option<(Duration, String)>,
}

fn fair_calls(events: &[Event]) -> BTreeMap<String, FairCall> {
    let mut ended_threads: BTreeMap<&str, Duration> = BTreeMap::new();
    let mut giving_up_threads: BTreeMap<&str, Duration> = BTreeMap::new();
    for event in events {
        match &event.what {
            What::NotAcquired { thread, .. } => {
                ended_threads.entry(thread).or_insert(at(event));
            }
            What::FairGivingUp { thread } => {
                giving_up_threads.entry(thread).or_insert(at(event));
            }
            _ => {}
        }
    }
    let mut calls: BTreeMap<String, FairCall> = BTreeMap::new();
    let mut order = 0;
    for event in events {
        match &event.what {
            What::FairAsked { owner } => {
                let call = calls.entry(owner.clone()).or_default();
                call.asked.get_or_insert((order, at(event)));
                order += 1;
            }
            What::FairGranted { owner } => {
                calls.entry(owner.clone()).or_default().granted.get_or_insert(at(event));
            }
            What::FairDropped { owner, by, script } => {
                let why = if by == owner {
                    format!("its own late {script}, which queued it again at the tail")
                } else {
                    format!("{}'s {script}", thread_of(by))
                };
                calls
                    .entry(owner.clone())
                    .or_default()
                    .dropped
                    .get_or_insert((at(event), why));
            }
            _ => {}
        }
    }
    for (token, call) in calls.iter_mut() {
        call.ended = ended_threads.get(thread_of(token).as_str()).copied();
        call.giving_up = giving_up_threads.get(thread_of(token).as_str()).copied();
    }
    calls
}

fn f_order(run: &Run) -> Verdict {
    if !run.rules.fair_queue {
        return Verdict::NotChecked;
    }
    let calls = fair_calls(run.events);
    // Grants in the order the server made them.
    let mut grants: Vec<(Duration, usize, &str)> = calls
        .iter()
        .filter_map(|(token, call)| Some((call.granted?, call.asked.map_or(usize::MAX, |a| a.0), token.as_str())))
        .collect();
    grants.sort();
    for &(granted_at, _, token) in &grants {
        let Some((rank, _)) = calls[token].asked else {
            return Verdict::Violated(format!(
                "{} was granted at {} without an acquire the server recorded",
                thread_of(token),
                ms(granted_at)
            ));
        };
        // A call that asked first and was still owed the lock.
        let passed_over = calls.iter().find(|(other, call)| {
            *other != token
                && call.asked.is_some_and(|(r, _)| r < rank)
                && call.granted.is_none_or(|at| at > granted_at)
                && call.ended.is_none_or(|at| at > granted_at)
                && call.giving_up.is_none_or(|at| at > granted_at)
                && call.dropped.as_ref().is_none_or(|(at, _)| *at > granted_at)
        });
        if let Some((other, call)) = passed_over {
            let asked_at = call.asked.map(|(_, at)| at).unwrap_or_default();
            let then = match call.granted {
                Some(at) => format!("granted only at {}", ms(at)),
                None => "never granted in the run".to_owned(),
            };
            return Verdict::Violated(format!(
                "{} was granted at {} ahead of {}, whose first acquire reached the server earlier (at {} against {}) and which was still waiting ({then})",
                thread_of(token),
                ms(granted_at),
                thread_of(other),
                ms(asked_at),
                ms(calls[token].asked.map(|(_, at)| at).unwrap_or_default()),
            ));
        }
    }
    Verdict::NoViolation
}

fn f_drop(run: &Run) -> Verdict {
    if !run.rules.fair_queue {
        return Verdict::NotChecked;
    }
    let calls = fair_calls(run.events);
    let mut drops: Vec<(Duration, &str, &FairCall)> = calls
        .iter()
        .filter_map(|(token, call)| {
            let (at, _) = call.dropped.as_ref()?;
            // A call that had already given up, or whose wait had run out and which was
            // leaving the queue, is not owed a place.
            (call.ended.is_none_or(|ended| ended > *at) && call.giving_up.is_none_or(|leaving| leaving > *at))
                .then_some((*at, token.as_str(), call))
        })
        .collect();
    drops.sort_by_key(|(at, token, _)| (*at, *token));
    let Some(&(at, token, call)) = drops.first() else {
        return Verdict::NoViolation;
    };
    let (_, by) = call.dropped.as_ref().expect("filtered above");
    let asked = call.asked.map_or(at, |(_, asked)| asked);
    let then = match (call.granted, call.ended) {
        (Some(granted), _) => format!(
            "it took the lock at {}, {} after it first asked",
            ms(granted),
            ms(granted.saturating_sub(asked))
        ),
        (None, Some(ended)) => format!("its lock() ended without the lock at {}", ms(ended)),
        (None, None) => "it was still waiting at the end of the run".to_owned(),
    };
    Verdict::Violated(format!(
        "{} waiter(s) dropped from the queue while still in lock(); the first, {}, queued since {}, was dropped at {} by {by}, and not told while it waited; {then}",
        drops.len(),
        thread_of(token),
        ms(asked),
        ms(at),
    ))
}

/// C-wait: each `lock()` call with a deadline returned within its wait plus the rules' bound.
fn c_wait(run: &Run) -> Verdict {
    let Some(past_ms) = run.rules.wait_past_ms else {
        return Verdict::NotChecked;
    };
    // The call each thread is inside: its start on the record's clock, on the caller's, its wait.
    let mut open: BTreeMap<&str, (Duration, Option<u64>, u64)> = BTreeMap::new();
    let mut calls = 0_usize;
    let mut late: Vec<(Duration, String)> = Vec::new();
    let mut judge_call = |thread: &str,
                          (started, started_us, wait_ms): (Duration, Option<u64>, u64),
                          end: Option<&Event>| {
        let bound = Duration::from_millis(wait_ms.saturating_add(past_ms));
        let (took, how) = match end {
            // On the caller's clock where both readings are known, else on the record's.
            Some(end) => match (started_us, end.clock_us) {
                (Some(from), Some(to)) => (Duration::from_micros(to.saturating_sub(from)), "returned after"),
                _ => (at(end).saturating_sub(started), "returned after"),
            },
            None => (
                run.end.saturating_sub(started),
                "was still inside lock() at the run's end, after",
            ),
        };
        if took > bound {
            late.push((
                started,
                format!(
                    "{thread} called lock() waiting at most {wait_ms} ms at {} and {how} {} (bound {wait_ms} + {past_ms} ms)",
                    ms(started),
                    ms(took)
                ),
            ));
        }
    };
    for event in run.events {
        match &event.what {
            What::Calling {
                thread,
                wait_ms: Some(wait_ms),
                ..
            } => {
                calls += 1;
                // A record that reuses a thread's name without saying how its last call ended
                // (a client of the protocol may): that call had returned by this one's start.
                if let Some(previous) = open.insert(thread, (at(event), event.clock_us, *wait_ms)) {
                    judge_call(thread, previous, Some(event));
                }
            }
            What::Acquired { thread, .. } | What::NotAcquired { thread, .. } => {
                if let Some(call) = open.remove(thread.as_str()) {
                    judge_call(thread, call, Some(event));
                }
            }
            _ => {}
        }
    }
    for (thread, call) in open {
        judge_call(thread, call, None);
    }
    if calls == 0 {
        return Verdict::NotChecked;
    }
    late.sort();
    match late.first() {
        Some((_, first)) => Verdict::Violated(format!("{} of {calls} calls late; the first: {first}", late.len())),
        None => Verdict::NoViolation,
    }
}

#[cfg(test)]
mod tests;
