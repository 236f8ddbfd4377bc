//! The judges of a family run, from its records (simulated time since the run began):
//!
//! - **T1-belief**: two holders believed they held the lock at once. A holder's interval runs
//!   from its `Acquired` event to the first of `Releasing`, `LeaseLost`, and the moment its own
//!   clock passed the lease's `valid_until_us` (an `Extended` event before that moment moves the
//!   end; one after it starts a new interval). Judged by the shared
//!   [`cassalock_history::holding::overlaps`].
//! - **T1-resource**: the resource received a write from an older acquisition after a newer one
//!   had written (acquisitions numbered in the order they happened). What a fencing token would
//!   have refused; the lock's belief can be right while this is violated (a pause between the
//!   check and the write).
//! - **C-release**: at the instant a release said `Released`, or at the end of the run, a key
//!   still holds the released token (for Redlock: on a majority of the masters, enough to keep
//!   every other client out until the TTL).
//! - **C-lost** (locks whose holder runs a watchdog: Redisson): a holder that a later
//!   acquisition overtook learns it within a bound: by its watchdog (`LeaseLost`), by its own
//!   validity check finding the lease run out, or by starting its release, no later than one
//!   renewal period plus one request timeout (and 100 ms) after the other acquired, the time
//!   its process was paused not counted. (Its clock passing its validity unnoticed does not
//!   count: a Redisson user has no such check, and trusts the watchdog to keep or end the lock.)
//! - **C-fence** (locks whose token is a fencing token: ZooKeeper's czxid, etcd's create
//!   revision): every acquisition's token is larger than every earlier acquisition's. Where it
//!   holds, T1-resource is judged against a resource that checks the token: a write carrying a
//!   token below the largest it has seen is refused, not counted.
//! - **T2**: every client finished its acquisitions before the run's bound. A run cut by the
//!   bound is reported *bounded*: nothing was shown either way.
//! - **T2-free** (single-client scenarios only): a `lock` call gave up although no other client
//!   could have held the lock.
//! - **F-order** (Redisson's fair lock): the lock goes to `lock()` calls in the order their first
//!   acquire reached the server, as the server recorded it (`FairAsked`, `FairGranted`). A grant
//!   to B violates it when a call A asked first, had not been granted, was still waiting in
//!   `lock()` (no `NotAcquired` yet) and had not been dropped from the queue by the scripts.
//!   A waiter the scripts dropped as stale is excused from then on, as the model's F-order
//!   excuses it: the claim is the queue's discipline over the waiters it keeps. The drop itself
//!   is F-drop's, never excused.
//! - **F-drop** (Redisson's fair lock): no waiter is dropped from the queue without being told.
//!   The scripts drop a waiter whose deadline passed (`FairDropped`, recorded by the server); a
//!   call still waiting in `lock()` then is not told, and joins the tail whenever it next asks.
//!   A drop of a call that had already ended (gave up) is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use cassalock::algo::family::Release;
use cassalock::driver::family::FamilyEvent;
use cassalock_history::holding::{overlaps, HoldingInterval, SimulatedTime};
use cassalock_history::ClaimId;

use super::run::{FamilyRecord, FamilyWhat, RunFacts};
use super::scenario::{FamilyScenario, LockKind};
use crate::clock::SimClock;

/// The claims, in the order they are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Claim {
    T1Belief,
    T1Resource,
    CRelease,
    CLost,
    CFence,
    T2,
    T2Free,
    FOrder,
    FDrop,
}

impl Claim {
    pub const ALL: [Claim; 9] = [
        Claim::T1Belief,
        Claim::T1Resource,
        Claim::CRelease,
        Claim::CLost,
        Claim::CFence,
        Claim::T2,
        Claim::T2Free,
        Claim::FOrder,
        Claim::FDrop,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Claim::T1Belief => "T1-belief",
            Claim::T1Resource => "T1-resource",
            Claim::CRelease => "C-release",
            Claim::CLost => "C-lost",
            Claim::CFence => "C-fence",
            Claim::T2 => "T2",
            Claim::T2Free => "T2-free",
            Claim::FOrder => "F-order",
            Claim::FDrop => "F-drop",
        }
    }

    pub fn named(name: &str) -> Option<Claim> {
        Claim::ALL.into_iter().find(|claim| claim.name() == name)
    }

    /// The claim of docs/claims.md this judge checks, as the property matrix files it: C-fence
    /// is C-token's growing-token half, and T2-free (a lone client never gives up on a free
    /// lock) is a case of T2.
    pub fn id(self) -> ClaimId {
        match self {
            Claim::T1Belief => ClaimId::T1Belief,
            Claim::T1Resource => ClaimId::T1Resource,
            Claim::CRelease => ClaimId::CRelease,
            Claim::CLost => ClaimId::CLost,
            Claim::CFence => ClaimId::CToken,
            Claim::T2 | Claim::T2Free => ClaimId::T2,
            Claim::FOrder => ClaimId::FOrder,
            Claim::FDrop => ClaimId::FDrop,
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

/// Judge one run.
pub fn judge(scenario: &FamilyScenario, records: &[FamilyRecord], facts: &RunFacts) -> FamilyVerdicts {
    debug_assert!(
        records.windows(2).all(|pair| pair[0].at <= pair[1].at),
        "records are in time order"
    );
    let claims = vec![
        (Claim::T1Belief, t1_belief(records, facts)),
        (Claim::T1Resource, t1_resource(scenario, records)),
        (Claim::CRelease, c_release(scenario, records, facts)),
        (Claim::CLost, c_lost(scenario, records, facts)),
        (Claim::CFence, c_fence(scenario, records)),
        (Claim::T2, t2(scenario, facts)),
        (Claim::T2Free, t2_free(scenario, records)),
        (Claim::FOrder, f_order(scenario, records)),
        (Claim::FDrop, f_drop(scenario, records)),
    ];
    debug_assert!(claims.iter().map(|(c, _)| *c).eq(Claim::ALL));
    FamilyVerdicts { claims }
}

/// The most 1 ms steps spent correcting an estimate of when a clock passes a reading.
const MAX_STEPS: u32 = 100_000;

/// The first global instant at or after `from` (and at most `end`) at which `clock` reads
/// `valid_until_us` or more.
pub fn clock_passes(clock: &SimClock, from: Duration, valid_until_us: u64, end: Duration) -> Duration {
    let reading = |at: Duration| clock.reading_at(at);
    if reading(from) >= valid_until_us {
        return from;
    }
    // A clock that keeps pace passes it exactly this far on; drift and jumps are corrected
    // 1 ms at a time.
    let mut at = from + Duration::from_micros(valid_until_us - reading(from));
    let step = Duration::from_millis(1);
    for _ in 0..MAX_STEPS {
        if at >= end || reading(at) >= valid_until_us {
            break;
        }
        at += step;
    }
    for _ in 0..MAX_STEPS {
        match at.checked_sub(step) {
            Some(earlier) if earlier >= from && reading(earlier) >= valid_until_us => at = earlier,
            _ => break,
        }
    }
    at.min(end)
}

fn client_index(node: &str) -> Option<usize> {
    node.strip_prefix('c')?.parse().ok()
}

/// The holders' intervals (see the module documentation), in the order they closed.
pub fn holding_intervals(records: &[FamilyRecord], facts: &RunFacts) -> Vec<HoldingInterval<SimulatedTime>> {
    struct Open {
        client: usize,
        since: Duration,
        valid_until_us: u64,
    }
    let mut open: BTreeMap<String, Open> = BTreeMap::new();
    let mut intervals = Vec::new();
    let passes = |client: usize, since: Duration, valid_until_us: u64| {
        clock_passes(&facts.client_clocks[client], since, valid_until_us, facts.end)
    };
    for record in records {
        let FamilyWhat::Lock(event) = &record.what else {
            continue;
        };
        let Some(client) = client_index(&record.node) else {
            continue;
        };
        match event {
            FamilyEvent::Acquired {
                thread, valid_until_us, ..
            } => {
                let previous = open.insert(
                    thread.clone(),
                    Open {
                        client,
                        since: record.at,
                        valid_until_us: *valid_until_us,
                    },
                );
                debug_assert!(previous.is_none(), "{thread} acquired twice");
            }
            FamilyEvent::Extended {
                thread, valid_until_us, ..
            } => {
                let lapsed = open.get(thread).and_then(|held| {
                    let lapse = passes(held.client, held.since, held.valid_until_us);
                    (lapse <= record.at).then_some((held.since, lapse))
                });
                if let Some((since, lapse)) = lapsed {
                    intervals.push(HoldingInterval::new(thread.clone(), super::run::KEY, since, lapse));
                    open.remove(thread);
                }
                let held = open.entry(thread.clone()).or_insert(Open {
                    client,
                    since: record.at,
                    valid_until_us: *valid_until_us,
                });
                held.valid_until_us = *valid_until_us;
            }
            FamilyEvent::LeaseLost { thread, .. } | FamilyEvent::Releasing { thread, .. } => {
                if let Some(held) = open.remove(thread) {
                    let lapse = passes(held.client, held.since, held.valid_until_us);
                    intervals.push(HoldingInterval::new(
                        thread.clone(),
                        super::run::KEY,
                        held.since,
                        lapse.min(record.at),
                    ));
                }
            }
            _ => {}
        }
    }
    for (thread, held) in open {
        let lapse = passes(held.client, held.since, held.valid_until_us);
        intervals.push(HoldingInterval::new(
            thread,
            super::run::KEY,
            held.since,
            lapse.min(facts.end),
        ));
    }
    intervals
}

fn ms(at: Duration) -> String {
    format!("{:.3} ms", at.as_secs_f64() * 1000.0)
}

fn t1_belief(records: &[FamilyRecord], facts: &RunFacts) -> Verdict {
    let intervals = holding_intervals(records, facts);
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

fn t1_resource(scenario: &FamilyScenario, records: &[FamilyRecord]) -> Verdict {
    // A fenced resource's largest token so far (tokens of fencing locks are 20 digits: text
    // order is number order).
    let fenced = scenario.lock.fences();
    let mut largest_token: Option<&str> = None;
    let mut newest: Option<(u64, &str, Duration)> = None;
    for record in records {
        let FamilyWhat::Write { token, acquisition } = &record.what else {
            continue;
        };
        let Some(acquisition) = *acquisition else {
            return Verdict::Violated(format!(
                "a write from {token} at {}, a token no acquisition had",
                ms(record.at)
            ));
        };
        if fenced {
            if largest_token.is_some_and(|largest| token.as_str() < largest) {
                continue; // refused by the resource: its token is below one it has seen
            }
            largest_token = Some(token);
        }
        match newest {
            Some((newer, newer_token, newer_at)) if acquisition < newer => {
                return Verdict::Violated(format!(
                    "acquisition #{acquisition} ({token}) wrote at {} after acquisition #{newer} ({newer_token}) had written at {}",
                    ms(record.at),
                    ms(newer_at)
                ));
            }
            Some((newer, _, _)) if acquisition == newer => {}
            _ => newest = Some((acquisition, token, record.at)),
        }
    }
    Verdict::NoViolation
}

fn c_release(scenario: &FamilyScenario, records: &[FamilyRecord], facts: &RunFacts) -> Verdict {
    // Tokens by thread, from the Acquired events; threads whose release said Released.
    let mut token_of: BTreeMap<&str, &str> = BTreeMap::new();
    let mut released: BTreeSet<&str> = BTreeSet::new();
    for record in records {
        match &record.what {
            FamilyWhat::Lock(FamilyEvent::Acquired { thread, token, .. }) => {
                token_of.insert(thread, token);
            }
            FamilyWhat::Lock(FamilyEvent::Released {
                thread,
                outcome: Release::Released,
                ..
            }) => {
                if let Some(token) = token_of.get(thread.as_str()) {
                    released.insert(token);
                }
            }
            _ => {}
        }
    }
    let needed = match &scenario.lock {
        LockKind::Redlock(config) => config.majority(),
        _ => 1,
    };
    // At the instant a release said Released (recorded by the run).
    for record in records {
        if let FamilyWhat::KeptAfterRelease { token, servers } = &record.what {
            if servers.len() >= needed {
                return Verdict::Violated(format!(
                    "{}'s release of {token} said Released at {}, yet server(s) {servers:?} still held its key",
                    record.node,
                    ms(record.at)
                ));
            }
        }
    }
    // At the end of the run.
    let mut holding: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for left in &facts.left {
        if released.contains(left.token.as_str()) {
            holding.entry(&left.token).or_default().push(left.server);
        }
    }
    match holding.into_iter().find(|(_, servers)| servers.len() >= needed) {
        None => Verdict::NoViolation,
        Some((token, servers)) => Verdict::Violated(format!(
            "token {token} was released (Released) but still holds the key on server(s) {servers:?} at the end"
        )),
    }
}

fn c_fence(scenario: &FamilyScenario, records: &[FamilyRecord]) -> Verdict {
    if !scenario.lock.fences() {
        return Verdict::NotChecked;
    }
    let mut largest: Option<(&str, u64)> = None;
    for record in records {
        let FamilyWhat::Numbered { token, acquisition } = &record.what else {
            continue;
        };
        if let Some((before, earlier)) = largest {
            if token.as_str() <= before {
                return Verdict::Violated(format!(
                    "acquisition #{acquisition} at {} got token {token}, not above acquisition #{earlier}'s {before}",
                    ms(record.at)
                ));
            }
        }
        largest = Some((token, *acquisition));
    }
    Verdict::NoViolation
}

/// Slack on C-lost's bound for the network's latency (a request and its reply take up to
/// 20 ms) and the scheduling of the holder's tasks.
const C_LOST_SLACK_MS: u64 = 100;

/// C-lost's bound for this scenario's lock: one renewal period plus one request timeout (a
/// renewal out when the other acquired may time out first), plus `C_LOST_SLACK_MS`; `None`
/// for a lock without a watchdog.
pub fn lost_bound_ms(scenario: &FamilyScenario) -> Option<u64> {
    let every_ms = scenario.lock.renew_every_ms()?;
    Some(every_ms + scenario.request_timeout_ms + C_LOST_SLACK_MS)
}

/// The intervals each client's process was paused, from the `Paused` records.
fn paused_intervals(records: &[FamilyRecord]) -> BTreeMap<String, Vec<(Duration, Duration)>> {
    let mut paused: BTreeMap<String, Vec<(Duration, Duration)>> = BTreeMap::new();
    for record in records {
        if let FamilyWhat::Paused { ms } = record.what {
            paused
                .entry(record.node.clone())
                .or_default()
                .push((record.at, record.at + Duration::from_millis(ms)));
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

fn c_lost(scenario: &FamilyScenario, records: &[FamilyRecord], facts: &RunFacts) -> Verdict {
    let Some(bound_ms) = lost_bound_ms(scenario) else {
        return Verdict::NotChecked;
    };
    let bound = Duration::from_millis(bound_ms);
    let paused = paused_intervals(records);
    // Per holder: its node, when it acquired, and when it learned or stopped holding.
    struct Held<'a> {
        node: &'a str,
        thread: &'a str,
        since: Duration,
        until: Option<Duration>,
    }
    let mut held: Vec<Held> = Vec::new();
    let mut acquisitions: Vec<(Duration, &str)> = Vec::new();
    for record in records {
        let learned = match &record.what {
            FamilyWhat::Lock(FamilyEvent::Acquired { thread, .. }) => {
                held.push(Held {
                    node: &record.node,
                    thread,
                    since: record.at,
                    until: None,
                });
                acquisitions.push((record.at, thread));
                None
            }
            FamilyWhat::Lock(FamilyEvent::LeaseLost { thread, .. } | FamilyEvent::Releasing { thread, .. }) => {
                Some(thread.as_str())
            }
            FamilyWhat::SawInvalid { thread } => Some(thread.as_str()),
            _ => None,
        };
        if let Some(thread) = learned {
            if let Some(holder) = held.iter_mut().find(|h| h.thread == thread && h.until.is_none()) {
                holder.until = Some(record.at);
            }
        }
    }
    for holder in &held {
        let until = holder.until.unwrap_or(facts.end);
        let overtaken = acquisitions
            .iter()
            .find(|(at, thread)| *thread != holder.thread && *at > holder.since && *at < until);
        let Some(&(overtaken_at, by)) = overtaken else {
            continue;
        };
        let no_pauses = Vec::new();
        let stopped = paused.get(holder.node).unwrap_or(&no_pauses);
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

/// The longest handover of a run: from a release that said `Released` to the next
/// `Acquired`, and when that release was (what a lost unlock message costs: the waiter sleeps
/// out the TTL it was told; a newcomer after a think time counts too).
pub fn longest_handover(records: &[FamilyRecord]) -> Option<(Duration, Duration)> {
    let mut released_at: Option<Duration> = None;
    let mut longest: Option<(Duration, Duration)> = None;
    for record in records {
        match &record.what {
            // The fair lock's release cannot tell "freed" from "already gone" (both 1).
            FamilyWhat::Lock(FamilyEvent::Released {
                outcome: Release::Released | Release::GoneEitherWay,
                ..
            }) => released_at = Some(record.at),
            FamilyWhat::Lock(FamilyEvent::Acquired { .. }) => {
                if let Some(at) = released_at.take() {
                    let gap = record.at.saturating_sub(at);
                    if longest.is_none_or(|(worst, _)| gap > worst) {
                        longest = Some((gap, at));
                    }
                }
            }
            _ => {}
        }
    }
    longest
}

fn t2(scenario: &FamilyScenario, facts: &RunFacts) -> Verdict {
    if facts.clients_done == scenario.clients {
        Verdict::NoViolation
    } else {
        Verdict::Bounded(format!(
            "{} of {} clients still running at the bound of {} ms",
            scenario.clients - facts.clients_done,
            scenario.clients,
            scenario.bound_ms
        ))
    }
}

fn t2_free(scenario: &FamilyScenario, records: &[FamilyRecord]) -> Verdict {
    if !scenario.check_free_progress {
        return Verdict::NotChecked;
    }
    debug_assert_eq!(scenario.clients, 1, "T2-free is judged only with one client");
    records
        .iter()
        .find_map(|record| match &record.what {
            FamilyWhat::GaveUp { error } => Some(Verdict::Violated(format!(
                "{} gave up at {} on a lock no other client held: {error}",
                record.node,
                ms(record.at)
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
    dropped: Option<(Duration, String)>,
}

fn fair_calls(records: &[FamilyRecord]) -> BTreeMap<String, FairCall> {
    let mut ended_threads: BTreeMap<&str, Duration> = BTreeMap::new();
    for record in records {
        if let FamilyWhat::Lock(FamilyEvent::NotAcquired { thread, .. }) = &record.what {
            ended_threads.entry(thread).or_insert(record.at);
        }
    }
    let mut calls: BTreeMap<String, FairCall> = BTreeMap::new();
    let mut order = 0;
    for record in records {
        match &record.what {
            FamilyWhat::FairAsked { owner } => {
                let call = calls.entry(owner.clone()).or_default();
                call.asked.get_or_insert((order, record.at));
                order += 1;
            }
            FamilyWhat::FairGranted { owner } => {
                calls.entry(owner.clone()).or_default().granted.get_or_insert(record.at);
            }
            FamilyWhat::FairDropped { owner, by, script } => {
                let why = if by == owner {
                    format!("its own late {script}, which queued it again at the tail")
                } else {
                    format!("{}'s {script}", thread_of(by))
                };
                calls
                    .entry(owner.clone())
                    .or_default()
                    .dropped
                    .get_or_insert((record.at, why));
            }
            _ => {}
        }
    }
    for (token, call) in calls.iter_mut() {
        call.ended = ended_threads.get(thread_of(token).as_str()).copied();
    }
    calls
}

fn f_order(scenario: &FamilyScenario, records: &[FamilyRecord]) -> Verdict {
    if !scenario.lock.is_fair() {
        return Verdict::NotChecked;
    }
    let calls = fair_calls(records);
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

fn f_drop(scenario: &FamilyScenario, records: &[FamilyRecord]) -> Verdict {
    if !scenario.lock.is_fair() {
        return Verdict::NotChecked;
    }
    let calls = fair_calls(records);
    let mut drops: Vec<(Duration, &str, &FairCall)> = calls
        .iter()
        .filter_map(|(token, call)| {
            let (at, _) = call.dropped.as_ref()?;
            // A call that had already given up is not owed a place.
            call.ended
                .is_none_or(|ended| ended > *at)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{ClockSpec, EPOCH_US};
    use crate::family::run::LeftKey;
    use crate::family::scenario::build;

    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn record(ms: u64, node: &str, what: FamilyWhat) -> FamilyRecord {
        FamilyRecord {
            at: at(ms),
            node: node.to_owned(),
            what,
        }
    }

    fn acquired(ms: u64, client: usize, thread: &str, valid_until_ms: u64) -> FamilyRecord {
        record(
            ms,
            &format!("c{client}"),
            FamilyWhat::Lock(FamilyEvent::Acquired {
                thread: thread.into(),
                key: "L".into(),
                token: format!("tok-{thread}"),
                valid_until_us: EPOCH_US + valid_until_ms * 1000,
                client_us: 0,
            }),
        )
    }

    fn releasing(ms: u64, client: usize, thread: &str) -> FamilyRecord {
        record(
            ms,
            &format!("c{client}"),
            FamilyWhat::Lock(FamilyEvent::Releasing {
                thread: thread.into(),
                key: "L".into(),
                client_us: 0,
            }),
        )
    }

    fn write(ms: u64, thread: &str, acquisition: u64) -> FamilyRecord {
        record(
            ms,
            "resource",
            FamilyWhat::Write {
                token: format!("tok-{thread}"),
                acquisition: Some(acquisition),
            },
        )
    }

    fn with_facts<T>(left: Vec<LeftKey>, judge: impl FnOnce(&RunFacts) -> T) -> T {
        madsim::runtime::Runtime::new().block_on(async move {
            let start = tokio::time::Instant::now();
            let facts = RunFacts {
                end: at(10_000),
                clients_done: 2,
                client_clocks: (0..2).map(|_| SimClock::new(ClockSpec::default(), start)).collect(),
                left,
            };
            judge(&facts)
        })
    }

    #[test]
    fn belief_ends_at_release_or_when_the_holder_s_clock_passes_its_validity() {
        let records = vec![
            acquired(0, 0, "c0-0", 1000),
            acquired(900, 1, "c1-0", 3000),
            releasing(2000, 0, "c0-0"),
            releasing(2500, 1, "c1-0"),
        ];
        let intervals = with_facts(Vec::new(), |facts| holding_intervals(&records, facts));
        assert_eq!(
            intervals[0].released_at,
            at(1000),
            "the clock passed before the release"
        );
        assert_eq!(intervals[1].released_at, at(2500));
        assert!(with_facts(Vec::new(), |facts| t1_belief(&records, facts)).is_violated());
        let apart = vec![acquired(0, 0, "c0-0", 1000), acquired(1000, 1, "c1-0", 3000)];
        assert_eq!(
            with_facts(Vec::new(), |facts| t1_belief(&apart, facts)),
            Verdict::NoViolation
        );
    }

    #[test]
    fn an_extension_after_the_belief_lapsed_starts_a_new_interval() {
        let extended = record(
            1500,
            "c0",
            FamilyWhat::Lock(FamilyEvent::Extended {
                thread: "c0-0".into(),
                key: "L".into(),
                valid_until_us: EPOCH_US + 2_500_000,
                client_us: 0,
            }),
        );
        let records = vec![acquired(0, 0, "c0-0", 1000), extended, releasing(2000, 0, "c0-0")];
        let intervals = with_facts(Vec::new(), |facts| holding_intervals(&records, facts));
        let spans: Vec<(Duration, Duration)> = intervals.iter().map(|i| (i.acquired_at, i.released_at)).collect();
        assert_eq!(spans, vec![(at(0), at(1000)), (at(1500), at(2000))]);
    }

    #[test]
    fn an_older_acquisition_writing_after_a_newer_one_violates_t1_resource() {
        let unfenced = build("set-nx-contention", 0).unwrap();
        let ordered = vec![write(10, "a", 0), write(20, "a", 0), write(30, "b", 1)];
        assert_eq!(t1_resource(&unfenced, &ordered), Verdict::NoViolation);
        let stale = vec![write(10, "a", 0), write(30, "b", 1), write(40, "a", 0)];
        assert!(t1_resource(&unfenced, &stale).is_violated());
    }

    #[test]
    fn c_fence_a_fenced_resource_refuses_a_smaller_token_and_a_token_that_does_not_grow_violates_c_fence() {
        let fenced = build("etcd-contention", 0).unwrap();
        let (small, large) = ("00000000000000000003", "00000000000000000007");
        // The older acquisition's late write carries the smaller revision: refused.
        let stale = vec![write(10, small, 0), write(30, large, 1), write(40, small, 0)];
        assert_eq!(t1_resource(&fenced, &stale), Verdict::NoViolation);
        // A token that did not grow (#1's is below #0's) lets the older acquisition's write
        // through after the newer one wrote.
        let backwards = vec![write(30, small, 1), write(40, large, 0)];
        assert!(t1_resource(&fenced, &backwards).is_violated());
        let numbered = |at_ms: u64, token: &str, acquisition: u64| {
            record(
                at_ms,
                "c0",
                FamilyWhat::Numbered {
                    token: token.into(),
                    acquisition,
                },
            )
        };
        let growing = vec![numbered(10, small, 0), numbered(20, large, 1)];
        assert_eq!(c_fence(&fenced, &growing), Verdict::NoViolation);
        let shrinking = vec![numbered(10, large, 0), numbered(20, small, 1)];
        assert!(c_fence(&fenced, &shrinking).is_violated());
        let unfenced = build("set-nx-contention", 0).unwrap();
        assert_eq!(c_fence(&unfenced, &shrinking), Verdict::NotChecked);
    }

    #[test]
    fn a_released_token_left_on_a_majority_of_masters_violates_c_release() {
        let scenario = build("redlock-contention", 0).unwrap();
        let released = record(
            100,
            "c0",
            FamilyWhat::Lock(FamilyEvent::Released {
                thread: "c0-0".into(),
                key: "L".into(),
                outcome: Release::Released,
                client_us: 0,
            }),
        );
        let records = vec![acquired(0, 0, "c0-0", 1000), released];
        let left = |servers: &[usize]| -> Vec<LeftKey> {
            servers
                .iter()
                .map(|&server| LeftKey {
                    server,
                    key: "L".into(),
                    token: "tok-c0-0".into(),
                })
                .collect()
        };
        let two = with_facts(left(&[0, 1]), |facts| c_release(&scenario, &records, facts));
        assert_eq!(two, Verdict::NoViolation, "2 of 5 masters keep no one out");
        let three = with_facts(left(&[0, 1, 4]), |facts| c_release(&scenario, &records, facts));
        assert!(three.is_violated());
    }

    #[test]
    fn a_holder_not_told_after_another_acquired_violates_c_lost_unless_it_was_paused() {
        // Bound: the 500 ms renewal period + the 200 ms request timeout + 100 ms.
        let scenario = build("redisson-failed-renewal", 0).unwrap();
        assert_eq!(lost_bound_ms(&scenario), Some(800));
        let overtaken = vec![
            acquired(0, 0, "c0-0", 1400),
            acquired(1000, 1, "c1-0", 2500),
            releasing(2500, 0, "c0-0"),
        ];
        let verdict = with_facts(Vec::new(), |facts| c_lost(&scenario, &overtaken, facts));
        assert!(verdict.is_violated(), "{verdict}");
        // Told by its watchdog 700 ms after the other acquired: within the bound.
        let told = vec![
            acquired(0, 0, "c0-0", 1400),
            acquired(1000, 1, "c1-0", 2500),
            record(
                1700,
                "c0",
                FamilyWhat::Lock(FamilyEvent::LeaseLost {
                    thread: "c0-0".into(),
                    key: "L".into(),
                    client_us: 0,
                }),
            ),
            releasing(2500, 0, "c0-0"),
        ];
        let verdict = with_facts(Vec::new(), |facts| c_lost(&scenario, &told, facts));
        assert_eq!(verdict, Verdict::NoViolation);
        // Paused from 900 to 2100 ms: it ran 400 ms unaware after the other acquired.
        let mut paused = overtaken.clone();
        paused.insert(1, record(900, "c0", FamilyWhat::Paused { ms: 1200 }));
        let verdict = with_facts(Vec::new(), |facts| c_lost(&scenario, &paused, facts));
        assert_eq!(verdict, Verdict::NoViolation);
        // A lock without a watchdog is not judged.
        let set_nx = build("set-nx-contention", 0).unwrap();
        let verdict = with_facts(Vec::new(), |facts| c_lost(&set_nx, &overtaken, facts));
        assert_eq!(verdict, Verdict::NotChecked);
    }

    #[test]
    fn clients_still_running_at_the_bound_make_t2_bounded_not_violated() {
        let scenario = build("redlock-gc-pause", 0).unwrap();
        let verdict = with_facts(Vec::new(), |facts| {
            let cut = RunFacts {
                clients_done: 1,
                end: facts.end,
                client_clocks: facts.client_clocks.clone(),
                left: Vec::new(),
            };
            t2(&scenario, &cut)
        });
        assert!(matches!(verdict, Verdict::Bounded(_)), "{verdict}");
    }

    fn fair(ms: u64, what: FamilyWhat) -> FamilyRecord {
        record(ms, "s0", what)
    }

    fn asked(ms: u64, owner: &str) -> FamilyRecord {
        fair(ms, FamilyWhat::FairAsked { owner: owner.into() })
    }

    fn granted(ms: u64, owner: &str) -> FamilyRecord {
        fair(ms, FamilyWhat::FairGranted { owner: owner.into() })
    }

    #[test]
    fn f_order_takes_the_server_s_order_and_excuses_a_dropped_waiter_that_f_drop_reports() {
        let scenario = build("redisson-fair-contention", 0).unwrap();
        let in_order = vec![
            asked(0, "c0:0:a"),
            granted(0, "c0:0:a"),
            asked(5, "c1:0:b"),
            asked(6, "c2:0:c"),
            granted(30, "c1:0:b"),
            granted(60, "c2:0:c"),
        ];
        assert_eq!(f_order(&scenario, &in_order), Verdict::NoViolation);
        assert_eq!(f_drop(&scenario, &in_order), Verdict::NoViolation);
        // c2 granted ahead of c1, which asked first and still waits.
        let barged = vec![
            asked(0, "c0:0:a"),
            granted(0, "c0:0:a"),
            asked(5, "c1:0:b"),
            asked(6, "c2:0:c"),
            granted(30, "c2:0:c"),
            granted(60, "c1:0:b"),
        ];
        let verdict = f_order(&scenario, &barged);
        assert!(verdict.is_violated(), "{verdict}");
        assert!(verdict.to_string().contains("c2-0 was granted"), "{verdict}");
        // The same, c1 dropped as stale by c0's release first: excused by F-order, reported by
        // F-drop.
        let mut dropped = barged.clone();
        dropped.insert(
            4,
            fair(
                20,
                FamilyWhat::FairDropped {
                    owner: "c1:0:b".into(),
                    by: "c0:0:a".into(),
                    script: "release",
                },
            ),
        );
        assert_eq!(f_order(&scenario, &dropped), Verdict::NoViolation);
        let verdict = f_drop(&scenario, &dropped);
        assert!(verdict.is_violated(), "{verdict}");
        assert!(verdict.to_string().contains("c1-0"), "{verdict}");
        // A call that had given up (NotAcquired) before it was dropped is owed nothing.
        let mut gave_up = dropped.clone();
        gave_up.insert(
            4,
            record(
                10,
                "c1",
                FamilyWhat::Lock(FamilyEvent::NotAcquired {
                    thread: "c1-0".into(),
                    key: "L".into(),
                    why: "TimedOut".into(),
                    client_us: 0,
                }),
            ),
        );
        assert_eq!(f_drop(&scenario, &gave_up), Verdict::NoViolation);
        // Other locks are not judged.
        let rlock = build("redisson-contention", 0).unwrap();
        assert_eq!(f_order(&rlock, &barged), Verdict::NotChecked);
        assert_eq!(f_drop(&rlock, &dropped), Verdict::NotChecked);
    }
}
