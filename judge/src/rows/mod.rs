//! The row locks' judge: verdicts on a run of the row-lock simulator, from its event record
//! ([`crate::event`]) under [`RowRules`].
//!
//! - **T1-belief**: two threads believed they held the lock at the same simulated instant
//!   (belief runs from `Acquired` to `Releasing`, or to the death of the holder's process).
//! - **T1-resource**: the resource accepted a write whose fencing token was below one it had
//!   already accepted: real damage. With fencing on the resource refuses such writes; they are
//!   counted as *stale writes refused*.
//! - **T1-server**: at every reading of a lock's main row (the simulator reads it as a belief
//!   begins, after each renewal's rewrite is answered, before a resource write or a release,
//!   and after a fault), every thread that believed it held the lock was named by the row:
//!   every read at the run's consistency level found its cell live
//!   (`cassalock::algo::server_holder::row_holders`).
//! - **C-token** (docs/contract.md): fencing tokens increase from one holder to the next, and
//!   the resource never refuses a write from the current holder: the thread that acquired
//!   last, while it is the only one that believes it holds the lock. (A refused write from a
//!   holder whose lock was taken over since, as after a pause longer than the TTL, is fencing
//!   doing its job.)
//! - **C-try**: no `try_lock()` call sent more requests than the contract's bound
//!   (`cassalock::algo::contract`); the longest call is shown against the longest hold.
//! - **C-free**: cells of a call that failed stayed live (oracle) no longer than the bound after
//!   it returned, unless the failed client was paused, killed or cut off when it returned.
//! - **C-release**: after a release returned Ok while another client waited, someone acquired
//!   within the bound; judged only where no fault was active in that window.
//! - **C-lost**: a holder whose belief overlapped a later holder's heard `is_lost()` (or
//!   stopped believing) within the bound after the other acquired, not counting time it spent
//!   paused.
//! - **T2**: every client that was not killed for good finished its acquisitions; the bound is
//!   the simulated time from the last fault's end to the last client's finish. A run is finite,
//!   so a client still unfinished when the run's time limit stops it is judged by how long its
//!   open acquisition had been trying ([`stuck_after`]): for at least half the run (a deadlock,
//!   a starved client, a holder that never lets go) T2 is *violated*; for less, the limit came
//!   first and T2 is *bounded*, never a pass and never a violation. (The family judge applies
//!   the same rule, from the end of the last fault.)
//! - **K3**: an oracle saw a released acquisition's main cell live again (written after the
//!   release began): [`crate::k3`]'s definition, applied by the simulator's oracle.
//! - **S1**: the longest time the GlobalTime value stood still.
//!
//! Belief intervals and their overlaps are [`crate::holding`]'s, on simulated time: the real
//! runner judges T1-belief with the same function.

pub mod contract;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use crate::belief::{BeliefRules, Believing};
use crate::event::{Disruption, Event, Header, Limit, RowRules, Rules, What};
use crate::holding::{overlaps, SimulatedTime};
use crate::server_state::ServerAgreement;
use crate::text::count;
use crate::{AsClaim, ClaimId, ClaimVerdict};

/// Two overlapping beliefs, on simulated time.
pub type Overlap = crate::holding::Overlap<SimulatedTime>;

/// One claim's result in one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub claim: ClaimId,
    /// Holds or violated (every claim a run checks is exercised by the run).
    pub verdict: ClaimVerdict,
    pub detail: String,
}

impl Check {
    pub(crate) fn new(claim: ClaimId, held: bool, detail: String) -> Self {
        Check {
            claim,
            verdict: ClaimVerdict::from_holds(held),
            detail,
        }
    }

    /// A claim the run gave no occasion to check (never a pass).
    pub(crate) fn not_exercised(claim: ClaimId, detail: String) -> Self {
        Check {
            claim,
            verdict: ClaimVerdict::NotExercised,
            detail,
        }
    }

    pub fn passed(&self) -> bool {
        !self.verdict.is_violated()
    }

    /// A bound of the run stopped this check before it decided (neither a pass nor a failure).
    pub fn bounded(&self) -> bool {
        self.verdict == ClaimVerdict::Bounded
    }
}

/// A write the resource refused (its token was below the highest it had accepted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub at: Duration,
    /// The writer's client id (`c0-0`: client c0, incarnation 0).
    pub client: String,
    pub lock: String,
    /// The writer acquired this lock last and is the only thread believing it holds it: the
    /// refusal broke C-token. Otherwise a stale holder was fenced off, as fencing should.
    pub legitimate: bool,
}

/// Everything judged about one run.
#[derive(Clone, Debug, Default)]
pub struct Verdicts {
    pub acquisitions: usize,
    pub overlaps: Vec<Overlap>,
    pub stale_accepted: usize,
    pub stale_refused: usize,
    pub legit_refused: usize,
    /// Every write the resource refused, in time order, with the judge's reading of it: a
    /// stale holder's write (fencing working) or the legitimate holder's (C-token).
    pub refusals: Vec<Refusal>,
    pub token_drops: usize,
    pub first_token_drop: Option<(String, String)>,
    pub unfinished: Vec<String>,
    /// The unfinished clients whose open acquisition had been trying for at least
    /// [`stuck_after`] of the run when it ended, with how long: T2's violations.
    pub stuck: Vec<(String, Duration)>,
    /// The longest an unfinished client's open acquisition had been trying when the run ended.
    pub longest_open_attempt: Option<(String, Duration)>,
    /// From the end of the last fault to the last client's finish.
    pub done_after_heal: Option<Duration>,
    pub last_heal: Duration,
    pub max_wait: Duration,
    pub resurrections: usize,
    /// Times the K3 oracle's limit was hit ([`Limit::K3Oracle`]): K3 undecided.
    pub k3_limit_hits: usize,
    /// Messages the cluster's queues dropped at their limit ([`Limit::NetworkQueues`]):
    /// the run lost messages no fault planned, so none of its checks passes.
    pub network_limit_hits: usize,
    pub leases_lost: Vec<String>,
    /// From a client's kill to the next acquisition by another client.
    pub free_after_kill: Option<Duration>,
    /// The longest the GlobalTime value stood still (after it was first written).
    pub global_time_stall: Option<Duration>,
    pub client_errors: usize,
    /// The run gives acquisitions a deadline (`max_wait_ms`): client errors include give-ups.
    pub deadline: bool,
    /// Store faults injected per call (the store-fault knobs): failed before being applied,
    /// and applied with the reply lost.
    pub store_faults_before_apply: usize,
    pub store_faults_after_apply: usize,
    /// Simulated time the run took.
    pub sim_time: Duration,
    /// Faults that began (injected faults that fired; configured ones are not recorded).
    pub faults_begun: usize,
    /// Planned faults that never fired: a holder fault that found no holder, or a fault
    /// planned after the run had ended.
    pub faults_unfired: usize,
    /// A renewal request of an acquisition was sent while that acquisition was being released
    /// (seen only in detailed records, which keep store requests).
    pub renewal_during_release: bool,
    pub contract: contract::ContractFigures,
    pub checks: Vec<Check>,
}

impl Verdicts {
    /// The check of `claim` (a [`ClaimId`], or its text); panics if the run made none.
    pub fn check(&self, claim: impl AsClaim) -> &Check {
        let claim = claim.claim_id();
        self.checks
            .iter()
            .find(|c| c.claim == claim)
            .unwrap_or_else(|| panic!("no check {claim}"))
    }

    pub fn passed(&self, claim: impl AsClaim) -> bool {
        self.check(claim).passed()
    }

    pub fn all_passed(&self) -> bool {
        self.checks.iter().all(Check::passed)
    }

    /// Did a bound of the run leave some check undecided?
    pub fn any_bounded(&self) -> bool {
        self.checks.iter().any(Check::bounded)
    }
}

/// How long an open acquisition must have been trying, when the run's time limit stops it,
/// for T2 to call it stuck: half the run. Shorter, and the run was simply too short for its
/// workload (T2 bounded).
pub fn stuck_after(sim_time: Duration) -> Duration {
    sim_time / 2
}

/// One client's acquisition in progress: which one (`Waiting`'s `n`), since when it has been
/// trying (its first `Waiting`: a retry after an error or a "no" keeps trying the same one),
/// and how many of its locks it holds so far.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    n: u32,
    since: Duration,
    locks_taken: usize,
}

fn node_index(node: &str) -> Option<usize> {
    node.strip_prefix('c')?.parse().ok()
}

/// Judge a record of the row-lock simulator (its header's rules must be [`Rules::Rows`]).
///
/// # Panics
/// If the header asks for other rules; [`crate::judge`] picks the judge a record asks for.
pub fn judge_record(header: &Header, events: &[Event]) -> Verdicts {
    let Rules::Rows(rules) = &header.run.rules else {
        panic!(
            "the row locks' judge was given a record with other rules: {:?}",
            header.run.rules
        )
    };
    judge(
        rules,
        header.run.clients,
        events,
        Duration::from_nanos(header.run.end_ns),
    )
}

/// Judge a run of the row-lock simulator: its events, the clients it started, when it stopped
/// (`sim_time`) and its rules.
pub fn judge(rules: &RowRules, clients: usize, events: &[Event], sim_time: Duration) -> Verdicts {
    let mut v = Verdicts {
        sim_time,
        deadline: rules.deadline,
        // A fault planned at or after the run's end never fires (and leaves no record).
        faults_unfired: rules.faults_planned_after_end,
        ..Verdicts::default()
    };
    let mut pass = Pass::new(rules);
    for event in events {
        pass.read(event, &mut v);
    }
    count_unfired_step_pause(rules, events, &mut v);
    count_token_drops(&pass.tokens, &mut v);
    pass.judge_progress(rules, clients, sim_time, &mut v);
    v.global_time_stall = pass.global_changes.windows(2).map(|w| w[1] - w[0]).max();
    // A belief still open when the run ended lasted to the end.
    let holds = pass.beliefs.finish(sim_time);
    v.overlaps = overlaps(&holds);

    v.checks = vec![
        check_t1_belief(&v),
        check_t1_resource(rules, &v),
        check_t1_server(events, sim_time),
        check_c_token(&v),
        t2(&v, sim_time),
        check_k3(&v),
    ];
    let (figures, contract_checks) = contract::judge_contract(rules, events, sim_time, &holds, &v.overlaps);
    v.contract = figures;
    v.checks.extend(contract_checks);
    undecided_past_the_network_limit(&mut v);
    v
}

/// What the judge follows through one pass over a run's events (what it counts as it goes
/// lands in [`Verdicts`] directly).
struct Pass {
    /// Who believes they hold, by thread (its process is its client node): a notice that the
    /// lease is lost does not end a belief here; the holder learns it from `is_lost()`.
    beliefs: Believing,
    releasing: BTreeSet<String>,
    waiting_since: BTreeMap<usize, Duration>,
    /// Per client, the acquisition it is trying to complete (none while it holds or thinks).
    attempts: BTreeMap<usize, Attempt>,
    locks_per_acquisition: usize,
    /// Tokens in acquisition order, per lock (C-token compares each lock's holders).
    tokens: BTreeMap<String, Vec<(String, String)>>,
    done: BTreeSet<usize>,
    last_done: Duration,
    kill_at: Option<(usize, Duration)>,
    global_changes: Vec<Duration>,
}

impl Pass {
    fn new(rules: &RowRules) -> Self {
        Pass {
            beliefs: Believing::new(BeliefRules::default()),
            releasing: BTreeSet::new(),
            waiting_since: BTreeMap::new(),
            attempts: BTreeMap::new(),
            locks_per_acquisition: rules.locks_per_acquisition.max(1),
            tokens: BTreeMap::new(),
            done: BTreeSet::new(),
            last_done: Duration::ZERO,
            kill_at: None,
            global_changes: Vec::new(),
        }
    }

    fn read(&mut self, event: &Event, v: &mut Verdicts) {
        let at = Duration::from_nanos(event.at_ns);
        self.beliefs.see(event);
        match &event.what {
            What::Acquired {
                thread, lock, token, ..
            } => self.acquired(event, at, thread, lock, token, v),
            What::Releasing { thread, .. } => {
                self.releasing.insert(thread.clone());
            }
            What::Released { thread, .. } => {
                self.releasing.remove(thread);
            }
            What::Request {
                thread, renewal: true, ..
            } if self.releasing.contains(thread) => v.renewal_during_release = true,
            What::LeaseLost { thread, .. } => v.leases_lost.push(thread.clone()),
            What::Invoke { acquisition: n, .. } => self.invoked(event, at, *n),
            What::Done { .. } => {
                if let Some(node) = node_index(&event.node) {
                    self.done.insert(node);
                    self.last_done = self.last_done.max(at);
                }
            }
            What::CallFailed { .. } => v.client_errors += 1,
            What::StoreFault { applied, .. } => {
                if *applied {
                    v.store_faults_after_apply += 1;
                } else {
                    v.store_faults_before_apply += 1;
                }
            }
            What::Write {
                client,
                token,
                lock,
                accepted,
                stale,
                ..
            } => self.write(
                at,
                client.as_deref().unwrap_or_default(),
                token,
                lock.as_deref().unwrap_or_default(),
                (accepted.unwrap_or(true), stale.unwrap_or(false)),
                v,
            ),
            What::Fault {
                target,
                disruption,
                begins,
                ..
            } => self.fault(at, target.as_deref(), *disruption, *begins, v),
            What::Resurrected { .. } => v.resurrections += 1,
            What::GlobalTime { .. } => self.global_changes.push(at),
            What::FaultUnfired { .. } => v.faults_unfired += 1,
            What::LimitHit {
                limit: Limit::K3Oracle, ..
            } => v.k3_limit_hits += 1,
            What::LimitHit {
                limit: Limit::NetworkQueues,
                ..
            } => v.network_limit_hits += 1,
            _ => {}
        }
    }

    fn acquired(&mut self, event: &Event, at: Duration, thread: &str, lock: &str, token: &str, v: &mut Verdicts) {
        let Some(node) = node_index(&event.node) else { return };
        v.acquisitions += 1;
        self.tokens
            .entry(lock.to_owned())
            .or_default()
            .push((thread.to_owned(), token.to_owned()));
        if let Some(since) = self.waiting_since.remove(&node) {
            v.max_wait = v.max_wait.max(at - since);
        }
        if let Some(attempt) = self.attempts.get_mut(&node) {
            attempt.locks_taken += 1;
            if attempt.locks_taken >= self.locks_per_acquisition {
                self.attempts.remove(&node);
            }
        }
        if let Some((killed, killed_at)) = self.kill_at {
            if killed != node && v.free_after_kill.is_none() {
                v.free_after_kill = Some(at - killed_at);
            }
        }
    }

    /// A client starts (or retries) its `n`-th acquisition.
    fn invoked(&mut self, event: &Event, at: Duration, n: u32) {
        let Some(node) = node_index(&event.node) else { return };
        self.waiting_since.insert(node, at);
        let since = match self.attempts.get(&node) {
            Some(open) if open.n == n => open.since,
            _ => at,
        };
        self.attempts.insert(
            node,
            Attempt {
                n,
                since,
                locks_taken: 0,
            },
        );
    }

    /// A write reached the resource: `(accepted, stale)`.
    fn write(
        &mut self,
        at: Duration,
        client: &str,
        token: &str,
        lock: &str,
        (accepted, stale): (bool, bool),
        v: &mut Verdicts,
    ) {
        if stale && accepted {
            v.stale_accepted += 1;
        }
        if stale && !accepted {
            v.stale_refused += 1;
        }
        if !accepted {
            // Legitimate: the writer acquired this lock last (its token is the latest
            // handed out for it) and is the only thread believing it holds it.
            let believers: Vec<&str> = self.beliefs.holders_of(lock).collect();
            let acquired_last = self
                .tokens
                .get(lock)
                .and_then(|tokens| tokens.last())
                .is_some_and(|(_, last)| last == token);
            let legitimate = acquired_last && believers.len() == 1 && believers[0].split(':').next() == Some(client);
            v.legit_refused += usize::from(legitimate);
            v.refusals.push(Refusal {
                at,
                client: client.to_owned(),
                lock: lock.to_owned(),
                legitimate,
            });
        }
    }

    fn fault(
        &mut self,
        at: Duration,
        target: Option<&str>,
        disruption: Option<Disruption>,
        begins: bool,
        v: &mut Verdicts,
    ) {
        v.last_heal = v.last_heal.max(at);
        v.faults_begun += usize::from(begins);
        // A kill (or a restart, which kills the incarnation that runs) ends the
        // client's beliefs (`Believing` saw it); the first kill starts the clock of
        // how long the lock stays taken.
        let client = match (target, disruption) {
            (Some(node), Some(Disruption::Killed)) => node_index(node),
            _ => None,
        };
        if let (Some(client), true) = (client, begins) {
            self.kill_at.get_or_insert((client, at));
        }
    }

    /// T2's figures: the clients that did not finish (and were not killed for good), when the
    /// rest finished after the last fault, and how long each open acquisition had been trying.
    fn judge_progress(&self, rules: &RowRules, clients: usize, sim_time: Duration, v: &mut Verdicts) {
        let killed_for_good: BTreeSet<usize> = rules.killed_for_good.iter().copied().collect();
        v.unfinished = (0..clients)
            .filter(|c| !self.done.contains(c) && !killed_for_good.contains(c))
            .map(|c| format!("c{c}"))
            .collect();
        if v.unfinished.is_empty() {
            v.done_after_heal = Some(self.last_done.saturating_sub(v.last_heal));
        }
        for (&node, attempt) in &self.attempts {
            if self.done.contains(&node) || killed_for_good.contains(&node) {
                continue;
            }
            let open = sim_time.saturating_sub(attempt.since);
            let client = format!("c{node}");
            if open >= stuck_after(sim_time) {
                v.stuck.push((client.clone(), open));
            }
            if v.longest_open_attempt
                .as_ref()
                .is_none_or(|(_, longest)| open > *longest)
            {
                v.longest_open_attempt = Some((client, open));
            }
        }
    }
}

/// A pause planned at a renewal's rewrite fires at a step, not a time: a run whose holders
/// never renewed never fired it.
fn count_unfired_step_pause(rules: &RowRules, events: &[Event], v: &mut Verdicts) {
    let step_pause_fired = events.iter().any(|event| {
        matches!(
            &event.what,
            What::Fault {
                begins: true,
                at_step: true,
                ..
            }
        )
    });
    if rules.step_pause_planned && !step_pause_fired {
        v.faults_unfired += 1;
    }
}

/// C-token's figures: a holder whose token is below the previous holder's, per lock.
fn count_token_drops(tokens: &BTreeMap<String, Vec<(String, String)>>, v: &mut Verdicts) {
    for pair in tokens.values().flat_map(|tokens| tokens.windows(2)) {
        if pair[1].1 < pair[0].1 {
            v.token_drops += 1;
            v.first_token_drop.get_or_insert((pair[0].0.clone(), pair[1].0.clone()));
        }
    }
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn check_t1_belief(v: &Verdicts) -> Check {
    let first_overlap = v.overlaps.first().map(|o| {
        format!(
            "{} and {} from {} to {}",
            o.first.holder,
            o.second.holder,
            secs(o.from),
            secs(o.to)
        )
    });
    Check::new(
        ClaimId::T1Belief,
        v.overlaps.is_empty(),
        match &first_overlap {
            None => format!("{}, never two believers", count(v.acquisitions, "acquisition")),
            Some(first) => format!("{}; first: {first}", count(v.overlaps.len(), "overlap")),
        },
    )
}

fn check_t1_resource(rules: &RowRules, v: &Verdicts) -> Check {
    // A refused write of the only holder (its token went down) is C-token's
    // finding, not fencing stopping a stale holder: counted apart.
    let fenced_off = v.refusals.iter().filter(|r| !r.legitimate).count();
    let mut text = format!(
        "{} accepted, {fenced_off} refused by fencing{}",
        count(v.stale_accepted, "stale write"),
        if rules.fencing { "" } else { " (fencing off)" }
    );
    if v.legit_refused > 0 {
        text.push_str(&format!(
            "; {} of the only holder refused too (C-token)",
            count(v.legit_refused, "write")
        ));
    }
    Check::new(ClaimId::T1Resource, v.stale_accepted == 0, text)
}

fn check_c_token(v: &Verdicts) -> Check {
    Check::new(
        ClaimId::CToken,
        v.token_drops == 0 && v.legit_refused == 0,
        match &v.first_token_drop {
            None => format!(
                "every holder's token above the previous holder's; {} of the only holder refused",
                count(v.legit_refused, "write")
            ),
            Some((a, b)) => format!(
                "{} (first: {b} got a lower token than {a}); {} of the only holder refused",
                count(v.token_drops, "drop"),
                count(v.legit_refused, "write")
            ),
        },
    )
}

/// The oracle's limit hit leaves a release unjudged: that fails the check, it never passes it.
/// T1-server: at every reading of a lock's main row, every thread that believed it held the
/// lock was one the row names ([`crate::server_state`]; beliefs end as T1-belief's do).
fn check_t1_server(events: &[Event], sim_time: Duration) -> Check {
    match crate::server_state::judge(events, sim_time, BeliefRules::default()) {
        ServerAgreement::NotRead => Check::not_exercised(
            ClaimId::T1Server,
            "the run read no lock's main row (a cluster too large to read at every step)".to_owned(),
        ),
        ServerAgreement::Agreed { readings } => Check::new(
            ClaimId::T1Server,
            true,
            format!("every believer named by the main row at {}", count(readings, "reading")),
        ),
        ServerAgreement::Disagreed {
            first,
            disagreeing_readings,
            readings,
        } => Check::new(
            ClaimId::T1Server,
            false,
            format!("{first} ({disagreeing_readings} of {readings} readings of the main row disagreed)"),
        ),
    }
}

fn check_k3(v: &Verdicts) -> Check {
    Check::new(
        ClaimId::K3,
        v.resurrections == 0 && v.k3_limit_hits == 0,
        if v.k3_limit_hits == 0 {
            format!("{} came back to life", count(v.resurrections, "released acquisition"))
        } else {
            format!(
                "{} came back to life; undecided: the oracle's limit was hit {} (see the trace's notes), counted as a failure",
                count(v.resurrections, "released acquisition"),
                count(v.k3_limit_hits, "time")
            )
        },
    )
}

/// T2 on a finite run: finished, stuck (violated), or stopped by the time limit (bounded).
fn t2(v: &Verdicts, sim_time: Duration) -> Check {
    let s = |d: Duration| format!("{:.3} s", d.as_secs_f64());
    match v.done_after_heal {
        Some(after) if v.last_heal > Duration::ZERO => {
            return Check::new(
                ClaimId::T2,
                true,
                format!(
                    "every client finished, {} after the last fault ended; longest wait {}",
                    s(after),
                    s(v.max_wait)
                ),
            );
        }
        Some(after) => {
            return Check::new(
                ClaimId::T2,
                true,
                format!("every client finished by {}; longest wait {}", s(after), s(v.max_wait)),
            )
        }
        None => {}
    }
    debug_assert!(!v.unfinished.is_empty(), "T2 judged unfinished with every client done");
    let unfinished = format!(
        "unfinished after {} simulated: {}",
        s(sim_time),
        v.unfinished.join(", ")
    );
    if !v.stuck.is_empty() {
        let stuck: Vec<String> = v
            .stuck
            .iter()
            .map(|(client, open)| format!("{client} {}", s(*open)))
            .collect();
        return Check::new(
            ClaimId::T2,
            false,
            format!(
                "{unfinished}; stuck (trying to acquire for half the run or more): {}",
                stuck.join(", ")
            ),
        );
    }
    let longest = match &v.longest_open_attempt {
        Some((client, open)) => format!(
            "the longest open acquisition had been trying for {} ({client})",
            s(*open)
        ),
        None => "no acquisition was open (every unfinished client held or thought)".to_owned(),
    };
    Check {
        claim: ClaimId::T2,
        verdict: ClaimVerdict::Bounded,
        detail: format!(
            "undecided: {unfinished}; the run's time limit came first ({} acquisitions done), and {longest}, under half the run: ask for fewer acquisitions or clients",
            v.acquisitions
        ),
    }
}

/// A run whose network dropped messages at its queue limit is not the run its scenario
/// describes: every check it would pass is counted as a failure, saying why, never as a pass.
fn undecided_past_the_network_limit(v: &mut Verdicts) {
    if v.network_limit_hits == 0 {
        return;
    }
    let why = format!(
        "undecided: the cluster's queues hit their limit {} and dropped messages no fault planned (see the trace's notes), counted as a failure",
        count(v.network_limit_hits, "time")
    );
    for check in &mut v.checks {
        if check.verdict == ClaimVerdict::Holds {
            check.verdict = ClaimVerdict::Violated;
            check.detail = format!("{}; {why}", check.detail);
        }
    }
}

impl fmt::Display for Verdicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for check in &self.checks {
            writeln!(
                f,
                "  {:<12} {:<8} {}",
                check.claim.as_str(),
                match check.verdict {
                    ClaimVerdict::Holds => "ok",
                    ClaimVerdict::Violated => "FAILED",
                    ClaimVerdict::NotExercised => "-",
                    ClaimVerdict::Bounded => "bounded",
                },
                check.detail
            )?;
        }
        if !self.leases_lost.is_empty() {
            writeln!(
                f,
                "  leases lost  {} (the guard learned it: {})",
                self.leases_lost.len(),
                self.leases_lost.join(", ")
            )?;
        }
        if let Some(free) = self.free_after_kill {
            writeln!(
                f,
                "  after kill   another client acquired {:.3} s after the holder was killed",
                free.as_secs_f64()
            )?;
        }
        if let Some(stall) = self.global_time_stall {
            writeln!(
                f,
                "  S1           GlobalTime stood still for at most {:.3} s",
                stall.as_secs_f64()
            )?;
        }
        if self.store_faults_before_apply + self.store_faults_after_apply > 0 {
            writeln!(
                f,
                "  store faults {} calls failed before being applied, {} applied with the reply lost",
                self.store_faults_before_apply, self.store_faults_after_apply
            )?;
        }
        if self.client_errors > 0 {
            writeln!(
                f,
                "  errors       lock() failed {} times (store failures{}), retried",
                self.client_errors,
                if self.deadline { " or max_wait_ms give-ups" } else { "" }
            )?;
        }
        Ok(())
    }
}
