//! Verdicts on a run, computed from its records.
//!
//! - **T1-belief**: two threads believed they held the lock at the same simulated instant
//!   (belief runs from `Acquired` to `Releasing`, or to the death of the holder's process).
//! - **T1-resource**: the resource accepted a write whose fencing token was below one it had
//!   already accepted: real damage. With fencing on the resource refuses such writes; they are
//!   counted as *stale writes refused*.
//! - **tokens**: do fencing tokens increase from one holder to the next? A drop means a later
//!   holder carries a lower token, so fencing would refuse a legitimate holder.
//! - **legitimate holders refused**: a refused write from a thread that was the only believer.
//! - **T2**: every client that was not killed for good finished its acquisitions; the bound is
//!   the simulated time from the last fault's end to the last client's finish.
//! - **K3**: an oracle saw a released acquisition's main cell live again (written after the
//!   release began).
//! - **S1**: the longest time the GlobalTime value stood still.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use cassalock::driver::LockEvent;

use crate::scenario::RunConfig;
use crate::trace::{Record, What};

/// Two overlapping beliefs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    pub first: String,
    pub second: String,
    pub from: Duration,
    pub to: Duration,
}

/// One claim's result in one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub claim: &'static str,
    pub passed: bool,
    pub detail: String,
}

/// Everything judged about one run.
#[derive(Clone, Debug, Default)]
pub struct Verdicts {
    pub acquisitions: usize,
    pub overlaps: Vec<Overlap>,
    pub stale_accepted: usize,
    pub stale_refused: usize,
    pub legit_refused: usize,
    pub token_drops: usize,
    pub first_token_drop: Option<(String, String)>,
    pub unfinished: Vec<String>,
    /// From the end of the last fault to the last client's finish.
    pub done_after_heal: Option<Duration>,
    pub last_heal: Duration,
    pub max_wait: Duration,
    pub resurrections: usize,
    pub leases_lost: Vec<String>,
    /// From a client's kill to the next acquisition by another client.
    pub free_after_kill: Option<Duration>,
    /// The longest the GlobalTime value stood still (after it was first written).
    pub global_time_stall: Option<Duration>,
    pub client_errors: usize,
    /// Simulated time the run took.
    pub sim_time: Duration,
    pub checks: Vec<Check>,
}

impl Verdicts {
    pub fn check(&self, claim: &str) -> &Check {
        self.checks
            .iter()
            .find(|c| c.claim == claim)
            .unwrap_or_else(|| panic!("no check {claim}"))
    }

    pub fn passed(&self, claim: &str) -> bool {
        self.check(claim).passed
    }

    pub fn all_passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

fn node_index(node: &str) -> Option<usize> {
    node.strip_prefix('c')?.parse().ok()
}

pub fn judge(
    config: &RunConfig,
    records: &[Record],
    sim_time: Duration,
    killed_for_good: &BTreeSet<usize>,
) -> Verdicts {
    let mut v = Verdicts {
        sim_time,
        ..Verdicts::default()
    };
    // Belief intervals: thread -> (node, from, to).
    let mut open: BTreeMap<String, (usize, Duration)> = BTreeMap::new();
    let mut beliefs: Vec<(String, usize, Duration, Duration)> = Vec::new();
    let mut waiting_since: BTreeMap<usize, Duration> = BTreeMap::new();
    let mut tokens: Vec<(String, String)> = Vec::new();
    let mut done: BTreeSet<usize> = BTreeSet::new();
    let mut last_done = Duration::ZERO;
    let mut kill_at: Option<(usize, Duration)> = None;
    let mut global_changes: Vec<Duration> = Vec::new();
    for record in records {
        match &record.what {
            What::Lock(LockEvent::Acquired { thread, token, .. }) => {
                let Some(node) = node_index(&record.node) else { continue };
                v.acquisitions += 1;
                open.insert(thread.to_string(), (node, record.at));
                tokens.push((thread.to_string(), token.to_string()));
                if let Some(since) = waiting_since.remove(&node) {
                    v.max_wait = v.max_wait.max(record.at - since);
                }
                if let Some((killed, at)) = kill_at {
                    if killed != node && v.free_after_kill.is_none() {
                        v.free_after_kill = Some(record.at - at);
                    }
                }
            }
            What::Lock(LockEvent::Releasing { thread, .. }) => {
                if let Some((node, from)) = open.remove(thread.as_str()) {
                    beliefs.push((thread.to_string(), node, from, record.at));
                }
            }
            What::Lock(LockEvent::LeaseLost { thread, .. }) => v.leases_lost.push(thread.to_string()),
            What::Waiting { .. } => {
                if let Some(node) = node_index(&record.node) {
                    waiting_since.insert(node, record.at);
                }
            }
            What::ClientDone { .. } => {
                if let Some(node) = node_index(&record.node) {
                    done.insert(node);
                    last_done = last_done.max(record.at);
                }
            }
            What::ClientError { .. } => v.client_errors += 1,
            What::Resource {
                client,
                accepted,
                stale,
                ..
            } => {
                if *stale && *accepted {
                    v.stale_accepted += 1;
                }
                if *stale && !*accepted {
                    v.stale_refused += 1;
                }
                if !*accepted {
                    // Legitimate: the writer's thread is the only one believing it holds.
                    let believers: Vec<&String> = open.keys().collect();
                    if believers.len() == 1 && believers[0].split(':').next() == Some(client.as_str()) {
                        v.legit_refused += 1;
                    }
                }
            }
            What::Fault {
                node, period, begins, ..
            } => {
                v.last_heal = v.last_heal.max(record.at);
                let killed_client = match (node, period, begins) {
                    (Some(node), crate::trace::Disruption::Killed, true) => node_index(node),
                    _ => None,
                };
                if let Some(client) = killed_client {
                    // A dead process believes nothing any more.
                    let dead: Vec<String> = open
                        .iter()
                        .filter(|(_, (node, _))| *node == client)
                        .map(|(t, _)| t.clone())
                        .collect();
                    for thread in dead {
                        let (node, from) = open.remove(&thread).expect("listed");
                        beliefs.push((thread, node, from, record.at));
                    }
                    kill_at.get_or_insert((client, record.at));
                }
            }
            What::Resurrected { .. } => v.resurrections += 1,
            What::GlobalTime { .. } => global_changes.push(record.at),
            What::Lock(_) | What::Note(_) | What::TryRefused { .. } => {}
        }
    }
    for (thread, (node, from)) in open {
        beliefs.push((thread, node, from, sim_time));
    }
    beliefs.sort_by_key(|b| b.2);
    for (i, a) in beliefs.iter().enumerate() {
        for b in &beliefs[i + 1..] {
            if b.2 >= a.3 {
                break;
            }
            if a.0 != b.0 {
                v.overlaps.push(Overlap {
                    first: a.0.clone(),
                    second: b.0.clone(),
                    from: b.2,
                    to: a.3.min(b.3),
                });
            }
        }
    }
    for pair in tokens.windows(2) {
        if pair[1].1 < pair[0].1 {
            v.token_drops += 1;
            v.first_token_drop.get_or_insert((pair[0].0.clone(), pair[1].0.clone()));
        }
    }
    v.unfinished = (0..config.clients)
        .filter(|c| !done.contains(c) && !killed_for_good.contains(c))
        .map(|c| format!("c{c}"))
        .collect();
    if v.unfinished.is_empty() {
        v.done_after_heal = Some(last_done.saturating_sub(v.last_heal));
    }
    v.global_time_stall = global_changes.windows(2).map(|w| w[1] - w[0]).max();

    let s = |d: Duration| format!("{:.3} s", d.as_secs_f64());
    let first_overlap = v
        .overlaps
        .first()
        .map(|o| format!("{} and {} from {} to {}", o.first, o.second, s(o.from), s(o.to)));
    v.checks = vec![
        Check {
            claim: "T1-belief",
            passed: v.overlaps.is_empty(),
            detail: match &first_overlap {
                None => format!("{} acquisitions, never two believers", v.acquisitions),
                Some(first) => format!("{} overlaps; first: {first}", v.overlaps.len()),
            },
        },
        Check {
            claim: "T1-resource",
            passed: v.stale_accepted == 0,
            detail: format!(
                "{} stale writes accepted, {} refused by fencing{}",
                v.stale_accepted,
                v.stale_refused,
                if config.fencing { "" } else { " (fencing off)" }
            ),
        },
        Check {
            claim: "tokens",
            passed: v.token_drops == 0,
            detail: match &v.first_token_drop {
                None => "every holder's token above the previous holder's".into(),
                Some((a, b)) => format!("{} drops; first: {b} got a lower token than {a}", v.token_drops),
            },
        },
        Check {
            claim: "T2",
            passed: v.unfinished.is_empty(),
            detail: match v.done_after_heal {
                Some(after) if v.last_heal > Duration::ZERO => {
                    format!(
                        "every client finished, {} after the last fault ended; longest wait {}",
                        s(after),
                        s(v.max_wait)
                    )
                }
                Some(after) => format!("every client finished by {}; longest wait {}", s(after), s(v.max_wait)),
                None => format!(
                    "unfinished after {} simulated: {}",
                    s(sim_time),
                    v.unfinished.join(", ")
                ),
            },
        },
        Check {
            claim: "K3",
            passed: v.resurrections == 0,
            detail: format!("{} released acquisitions came back to life", v.resurrections),
        },
    ];
    v
}

impl fmt::Display for Verdicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for check in &self.checks {
            writeln!(
                f,
                "  {:<12} {:<8} {}",
                check.claim,
                if check.passed { "ok" } else { "FAILED" },
                check.detail
            )?;
        }
        if self.legit_refused > 0 {
            writeln!(
                f,
                "  anomaly      {} writes of a legitimate holder (the only believer) refused by fencing",
                self.legit_refused
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
        if self.client_errors > 0 {
            writeln!(
                f,
                "  errors       lock() failed {} times (store failures), retried",
                self.client_errors
            )?;
        }
        Ok(())
    }
}
