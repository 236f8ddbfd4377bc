//! A family run's records as the event record every driver writes (`cassalock_judge::event`):
//! its header (the rules of the scenario's lock) and one event per record, then one
//! `left_at_end` per key a server still held when the run stopped.
//!
//! A holder's validity is on its own clock; each `acquired` and `extended` event also says
//! when, on the run's clock, the holder's clock first reads it (`valid_until_at_ns`), so the
//! judge needs no clock model.

use std::time::Duration;

use cassalock::algo::family::{Acquisition, Release};
use cassalock::algo::Leftover;
use cassalock::driver::family::FamilyEvent;
use cassalock_judge::event::{
    self, Clock, Driver, Event, FamilyRules, Header, NotAcquired, ReleaseOutcome, Rules, RunFacts, Wake,
};

use super::record::{FamilyRecord, FamilyWhat, RunFacts as Facts};
use super::scenario::FamilyScenario;
use crate::clock::clock_passes;

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

/// Slack on C-wait's bound for the network's latency and the scheduling of the caller's tasks.
const C_WAIT_SLACK_MS: u64 = 100;

/// C-wait's bound past a call's deadline for this scenario's lock: the lock's last sleep past
/// the deadline, the request under way and one clean-up request (each with its retries, each
/// try up to a request timeout), plus `C_WAIT_SLACK_MS`; `None` for a lock whose `lock()` has
/// no deadline.
pub fn wait_past_ms(scenario: &FamilyScenario) -> Option<u64> {
    let wait = scenario.lock.wait()?;
    Some(
        wait.overshoot_ms
            .saturating_add(wait.request_ms(scenario.request_timeout_ms).saturating_mul(2))
            .saturating_add(C_WAIT_SLACK_MS),
    )
}

/// The rules a run of `scenario` is judged by.
pub fn rules(scenario: &FamilyScenario) -> FamilyRules {
    FamilyRules {
        fencing_tokens: scenario.lock.fences(),
        fair_queue: scenario.lock.is_fair(),
        release_quorum: scenario.lock.release_quorum(),
        lone_client: scenario.check_free_progress,
        lost_bound_ms: lost_bound_ms(scenario),
        bound_ms: scenario.bound_ms,
        wait_past_ms: wait_past_ms(scenario),
    }
}

/// The header of the run of `scenario` on `seed` that stopped at `end`.
pub fn header(scenario: &FamilyScenario, seed: u64, end: Duration) -> Header {
    let clients = (0..scenario.clients).map(|i| (format!("c{i}"), scenario.client_clock(i)));
    let servers = (0..scenario.server_clocks.len()).map(|i| (format!("s{i}"), scenario.server_clock(i)));
    Header::new(
        Driver::Simulator,
        scenario.lock.name(),
        Clock::SimulatedSinceStart,
        RunFacts {
            clients: scenario.clients,
            end_ns: nanos(end),
            rules: Rules::Families(rules(scenario)),
            name: Some(format!("{} / seed {seed}", scenario.name)),
            nodes: (0..scenario.clients).map(|i| format!("c{i}")).collect(),
            clocks: clients
                .chain(servers)
                .filter_map(|(node, clock)| clock.to_record(&node))
                .collect(),
        },
    )
}

fn nanos(at: Duration) -> u64 {
    u64::try_from(at.as_nanos()).unwrap_or(u64::MAX)
}

/// Every record of a run as an event, then the keys left at its end.
pub fn events(records: &[FamilyRecord], facts: &Facts) -> Vec<Event> {
    let passes = |node: &str, from: Duration, valid_until_us: u64| {
        let client: Option<usize> = node.strip_prefix('c').and_then(|rest| rest.parse().ok());
        client
            .and_then(|client| facts.client_clocks.get(client))
            .map(|clock| nanos(clock_passes(clock, from, valid_until_us, facts.end)))
    };
    let mut events: Vec<Event> = records
        .iter()
        .map(|record| {
            let (clock_us, what) = what(&record.node, &record.what, |valid_until_us| {
                passes(&record.node, record.at, valid_until_us)
            });
            Event {
                at_ns: nanos(record.at),
                node: record.node.clone(),
                clock_us,
                what,
            }
        })
        .collect();
    events.extend(facts.left.iter().map(|left| Event {
        at_ns: nanos(facts.end),
        node: format!("s{}", left.server),
        clock_us: None,
        what: event::What::LeftAtEnd {
            token: left.token.clone(),
            server: left.server,
        },
    }));
    events
}

/// A record of `node` as an event's clock reading and kind; `passes` says when the holder's
/// clock reads a validity.
fn what(node: &str, what: &FamilyWhat, passes: impl Fn(u64) -> Option<u64>) -> (Option<u64>, event::What) {
    use event::What as E;
    match what {
        FamilyWhat::Lock(lock_event) => lock(lock_event, passes),
        FamilyWhat::Waiting { acquisition } => (
            None,
            E::Invoke {
                client: node.to_owned(),
                call: event::Call::Lock,
                acquisition: *acquisition,
            },
        ),
        FamilyWhat::Numbered { token, acquisition } => (
            None,
            E::Numbered {
                token: token.clone(),
                acquisition: *acquisition,
            },
        ),
        FamilyWhat::Write { token, acquisition } => (
            None,
            E::Write {
                client: None,
                lock: None,
                token: token.clone(),
                phase: None,
                accepted: None,
                stale: None,
                acquisition: *acquisition,
            },
        ),
        FamilyWhat::KeptAfterRelease { token, servers } => (
            None,
            E::KeptAfterRelease {
                token: token.clone(),
                servers: servers.clone(),
            },
        ),
        FamilyWhat::ServerHolder { token, gone_at } => (
            None,
            E::ServerHolder {
                lock: crate::family::record::KEY.to_owned(),
                holder: token.clone(),
                threads: Vec::new(),
                gone_at_ns: gone_at.map(nanos),
            },
        ),
        FamilyWhat::GaveUp { error } => (
            None,
            E::CallFailed {
                client: node.to_owned(),
                error: error.clone(),
            },
        ),
        FamilyWhat::Paused { ms } => (None, E::ClientPaused { ms: *ms }),
        FamilyWhat::SawInvalid { thread } => (None, E::SawInvalid { thread: thread.clone() }),
        FamilyWhat::UnlockMessage { to, lost } => (
            None,
            E::WakeMessage {
                wake: Wake::Unlock,
                to: *to,
                lost: *lost,
            },
        ),
        FamilyWhat::Watch { to, lost } => (
            None,
            E::WakeMessage {
                wake: Wake::Watch,
                to: *to,
                lost: *lost,
            },
        ),
        FamilyWhat::Fault(text) => (
            None,
            E::Fault {
                text: text.clone(),
                target: None,
                disruption: None,
                begins: true,
                at_step: false,
            },
        ),
        FamilyWhat::Done => (
            None,
            E::Done {
                client: node.to_owned(),
            },
        ),
        FamilyWhat::FairAsked { owner } => (None, E::FairAsked { owner: owner.clone() }),
        FamilyWhat::FairGranted { owner } => (None, E::FairGranted { owner: owner.clone() }),
        FamilyWhat::FairGivingUp { thread } => (None, E::FairGivingUp { thread: thread.clone() }),
        FamilyWhat::FairDropped { owner, by, script } => (
            None,
            E::FairDropped {
                owner: owner.clone(),
                by: by.clone(),
                script: (*script).to_owned(),
            },
        ),
    }
}

fn lock(lock_event: &FamilyEvent, passes: impl Fn(u64) -> Option<u64>) -> (Option<u64>, event::What) {
    use event::What as E;
    match lock_event {
        FamilyEvent::Calling {
            thread,
            key,
            wait_ms,
            client_us,
        } => (
            Some(*client_us),
            E::Calling {
                thread: thread.clone(),
                lock: key.clone(),
                wait_ms: *wait_ms,
            },
        ),
        FamilyEvent::Request {
            thread,
            tag,
            command,
            client_us,
        } => (
            Some(*client_us),
            E::Request {
                thread: thread.clone(),
                step: tag.to_string(),
                command: command.clone(),
                renewal: false,
            },
        ),
        FamilyEvent::Reply {
            thread,
            reply,
            client_us,
        } => (
            Some(*client_us),
            E::Reply {
                thread: thread.clone(),
                reply: reply.as_ref().ok().cloned(),
                failure: reply.as_ref().err().map(ToString::to_string),
            },
        ),
        FamilyEvent::Sleep { thread, tag, ms, kind } => (
            None,
            E::Sleep {
                thread: thread.clone(),
                step: tag.to_string(),
                ms: *ms,
                sleep: format!("{kind:?}"),
            },
        ),
        FamilyEvent::Notified { thread, key, client_us } => (
            Some(*client_us),
            E::Notified {
                thread: thread.clone(),
                key: key.clone(),
            },
        ),
        FamilyEvent::Acquired {
            thread,
            key,
            token,
            valid_until_us,
            client_us,
        } => (
            Some(*client_us),
            E::Acquired {
                thread: thread.clone(),
                lock: key.clone(),
                token: token.clone(),
                valid_until_us: Some(*valid_until_us),
                valid_until_at_ns: passes(*valid_until_us),
            },
        ),
        FamilyEvent::NotAcquired {
            thread,
            key,
            outcome,
            why,
            client_us,
        } => {
            let (outcome, left) = match outcome {
                Acquisition::Failed { left, .. } => (NotAcquired::Failed, Some(left_of(*left))),
                Acquisition::TimedOut => (NotAcquired::TimedOut, None),
                Acquisition::NotAcquired | Acquisition::Acquired(()) => (NotAcquired::Taken, None),
            };
            (
                Some(*client_us),
                E::NotAcquired {
                    thread: thread.clone(),
                    lock: key.clone(),
                    outcome,
                    left,
                    why: why.clone(),
                },
            )
        }
        FamilyEvent::Extended {
            thread,
            key,
            valid_until_us,
            client_us,
        } => (
            Some(*client_us),
            E::Extended {
                thread: thread.clone(),
                lock: key.clone(),
                valid_until_us: *valid_until_us,
                valid_until_at_ns: passes(*valid_until_us),
            },
        ),
        FamilyEvent::LeaseLost { thread, key, client_us } => (
            Some(*client_us),
            E::LeaseLost {
                thread: thread.clone(),
                lock: key.clone(),
                why: "the server said the key is not ours".to_owned(),
            },
        ),
        FamilyEvent::Releasing { thread, key, client_us } => (
            Some(*client_us),
            E::Releasing {
                thread: thread.clone(),
                lock: key.clone(),
            },
        ),
        FamilyEvent::Released {
            thread,
            key,
            outcome,
            client_us,
        } => (
            Some(*client_us),
            E::Released {
                thread: thread.clone(),
                lock: key.clone(),
                outcome: match outcome {
                    Release::Released => ReleaseOutcome::Released,
                    Release::WasNotOurs => ReleaseOutcome::NotHeld,
                    Release::GoneEitherWay => ReleaseOutcome::GoneEitherWay,
                    Release::ActedBlind => ReleaseOutcome::ActedBlind,
                    Release::Failed(_) => ReleaseOutcome::Failed,
                },
                why: format!("{outcome:?}"),
            },
        ),
    }
}

fn left_of(left: Leftover) -> event::Left {
    match left {
        Leftover::Nothing => event::Left::Nothing,
        Leftover::CleanUpFailed => event::Left::CleanUpFailed,
        Leftover::NotCleanedUp => event::Left::NotCleanedUp,
    }
}
