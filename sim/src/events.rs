//! A run's records as the event record every driver writes (`cassalock_judge::event`): its
//! header (the run's facts and the bounds the contract items are judged against, computed
//! here from the run's configuration) and one event per record.

use std::collections::BTreeSet;
use std::time::Duration;

use cassalock::algo::{contract, Acquire, Leftover};
use cassalock::driver::LockEvent;
use cassalock_judge::event::{
    self, Call, Clock, ContractBounds, Driver, Event, Header, Limit, NotAcquired, ReleaseOutcome, RowRules, Rules,
    RunFacts,
};

use crate::config::{ClientMode, LockOrder, RunConfig};
use crate::contract::{FAULT_FREE_REQUEST_MS, LEASE_CHECK_MS, ORACLE_PERIOD_MS};
use crate::trace::{Disruption, Record, What};

/// The lock a run takes, by the name a record's header gives it: the algorithm, and `-try`
/// where the clients call `try_lock`.
pub fn lock_name(config: &RunConfig) -> String {
    match config.mode {
        ClientMode::GetLock => config.algorithm.name().to_owned(),
        ClientMode::TryGetLock => format!("{}-try", config.algorithm.name()),
    }
}

/// The header of the run of `config` on `seed` that stopped at `sim_time`, with
/// `killed_for_good` clients never restarted.
pub fn header(config: &RunConfig, seed: u64, sim_time: Duration, killed_for_good: &BTreeSet<usize>) -> Header {
    let rules = RowRules {
        locks_per_acquisition: if config.lock_order == LockOrder::One {
            1
        } else {
            config.locks
        },
        locks: config.locks,
        call: call(config.mode),
        fencing: config.fencing,
        deadline: config.max_wait_ms.is_some(),
        killed_for_good: killed_for_good.iter().copied().collect(),
        faults_planned_after_end: config.faults.iter().filter(|fault| fault.at >= sim_time).count(),
        step_pause_planned: config.pause_at_renewal_rewrite.is_some(),
        bounds: bounds(config),
    };
    Header::new(
        Driver::Simulator,
        lock_name(config),
        Clock::SimulatedSinceStart,
        RunFacts {
            clients: config.clients,
            end_ns: nanos(sim_time),
            rules: Rules::Rows(rules),
            name: Some(format!(
                "{} / {} algorithm / seed {seed}",
                config.scenario,
                config.algorithm.name()
            )),
            nodes: nodes(config).map(|(node, _)| node).collect(),
            clocks: nodes(config)
                .filter_map(|(node, clock)| clock.and_then(|clock| clock.to_record(&node)))
                .collect(),
        },
    )
}

/// Every node of a run, clients first, then the replicas and the time-service replicas, with
/// its clock where the run gives it one.
fn nodes(config: &RunConfig) -> impl Iterator<Item = (String, Option<&crate::clock::ClockSpec>)> {
    let clients = (0..config.clients).map(|i| (format!("c{i}"), config.client_clocks.get(i)));
    let replicas = (0..config.cluster.replicas).map(|i| (format!("r{i}"), config.replica_clocks.get(i)));
    let time = (0..config.time_replicas).map(|i| (format!("ts{i}"), config.time_replica_clocks.get(i)));
    clients.chain(replicas).chain(time)
}

fn call(mode: ClientMode) -> Call {
    match mode {
        ClientMode::GetLock => Call::Lock,
        ClientMode::TryGetLock => Call::TryLock,
    }
}

/// The contract's bounds for `config` (`None`: its settings are invalid, no client ran).
pub fn bounds(config: &RunConfig) -> Option<ContractBounds> {
    let lock_config = config.lock_config()?;
    let kind = config.acquire_kind();
    let request_ms = u64::try_from(config.cluster.client_timeout.as_millis()).unwrap_or(u64::MAX);
    let ms = |ms: u64| ms.saturating_mul(1_000_000);
    Some(ContractBounds {
        try_requests: contract::try_call_max_requests(kind, &lock_config),
        leftover_ns: ms(contract::LEFTOVER_AFTER_FAILED_CALL_MS + ORACLE_PERIOD_MS),
        handover_ns: ms(contract::handover_ms(kind, &lock_config, FAULT_FREE_REQUEST_MS)),
        lost_ns: contract::lost_learned_ms(&lock_config, request_ms).map(|lost_ms| ms(lost_ms + LEASE_CHECK_MS)),
        fault_aftermath_ns: ms(contract::request_with_retries_ms(&lock_config, request_ms)),
    })
}

fn nanos(at: Duration) -> u64 {
    u64::try_from(at.as_nanos()).unwrap_or(u64::MAX)
}

/// Every record of a run as an event, in the same order.
pub fn events(config: &RunConfig, records: &[Record]) -> Vec<Event> {
    records.iter().map(|record| event(config.mode, record)).collect()
}

/// One record as an event.
pub fn event(mode: ClientMode, record: &Record) -> Event {
    Event {
        at_ns: nanos(record.at),
        node: record.node.clone(),
        clock_us: record.clock_us,
        what: what(mode, &record.what),
    }
}

fn what(mode: ClientMode, what: &What) -> event::What {
    use event::What as E;
    match what {
        What::Lock(lock_event) => lock(lock_event),
        What::Waiting { client, n } => E::Invoke {
            client: client.clone(),
            call: call(mode),
            acquisition: *n,
        },
        What::ClientDone { client } => E::Done { client: client.clone() },
        What::ClientError { client, error } => E::CallFailed {
            client: client.clone(),
            error: error.clone(),
        },
        What::TryReturned {
            client,
            acquired,
            requests,
        } => E::TryReturned {
            client: client.clone(),
            acquired: *acquired,
            requests: *requests,
        },
        What::LeaseLostSeen { client, abandons } => E::LostSeen {
            client: client.clone(),
            abandons: *abandons,
        },
        What::LeaseLostRetracted { client } => E::LostRetracted { client: client.clone() },
        What::Leftover { thread, live_for } => E::Leftover {
            thread: thread.clone(),
            live_for_ns: nanos(*live_for),
        },
        What::Resource {
            client,
            lock,
            token,
            phase,
            accepted,
            stale,
        } => E::Write {
            client: Some(client.clone()),
            lock: Some(lock.clone()),
            token: token.to_string(),
            phase: Some(match phase {
                crate::trace::Phase::Enter => event::Phase::Enter,
                crate::trace::Phase::Exit => event::Phase::Exit,
            }),
            accepted: Some(*accepted),
            stale: Some(*stale),
            acquisition: None,
        },
        What::Fault {
            text,
            node,
            period,
            begins,
        } => E::Fault {
            text: text.clone(),
            target: node.clone(),
            disruption: Some(disruption(*period)),
            begins: *begins,
            at_step: text.starts_with(crate::faults::STEP_PAUSE_TEXT),
        },
        What::Resurrected { thread, replica } => E::Resurrected {
            thread: thread.clone(),
            replica: *replica,
        },
        What::GlobalTime { value_us } => E::GlobalTime { value_us: *value_us },
        What::ServerHolder { lock, threads, gone_at } => E::ServerHolder {
            lock: lock.clone(),
            holder: None,
            threads: threads.clone(),
            gone_at_ns: gone_at.map(nanos),
        },
        What::StoreFault { op, applied } => E::StoreFault {
            op: op.clone(),
            applied: *applied,
        },
        What::Note(text) if text.ends_with(crate::faults::DID_NOT_FIRE) => E::FaultUnfired { text: text.clone() },
        What::Note(text) if text.starts_with(crate::oracles::K3_LIMIT_HIT) => E::LimitHit {
            limit: Limit::K3Oracle,
            text: text.clone(),
        },
        What::Note(text) if text.starts_with(crate::transport::NETWORK_LIMIT_HIT) => E::LimitHit {
            limit: Limit::NetworkQueues,
            text: text.clone(),
        },
        What::Note(text) => E::Note { text: text.clone() },
    }
}

fn disruption(period: Disruption) -> event::Disruption {
    match period {
        Disruption::Paused => event::Disruption::Paused,
        Disruption::Killed => event::Disruption::Killed,
        Disruption::CutOff => event::Disruption::CutOff,
        Disruption::Isolated => event::Disruption::Isolated,
        Disruption::Lossy => event::Disruption::Lossy,
        Disruption::DataLost => event::Disruption::DataLost,
    }
}

fn lock(lock_event: &LockEvent) -> event::What {
    use event::What as E;
    match lock_event {
        LockEvent::Request {
            thread, tag, request, ..
        } => E::Request {
            thread: thread.to_string(),
            step: tag.to_string(),
            command: request.to_string(),
            renewal: cassalock::algo::lease::is_renewal_step(tag),
        },
        LockEvent::Reply { thread, result, .. } => E::Reply {
            thread: thread.to_string(),
            reply: result.as_ref().ok().map(ToString::to_string),
            failure: result.as_ref().err().map(ToString::to_string),
        },
        LockEvent::Sleep { thread, tag, ms, kind } => E::Sleep {
            thread: thread.to_string(),
            step: tag.to_string(),
            ms: *ms,
            sleep: format!("{kind:?}"),
        },
        LockEvent::Acquired {
            thread, lock, token, ..
        } => E::Acquired {
            thread: thread.to_string(),
            lock: lock.to_string(),
            token: token.to_string(),
            valid_until_us: None,
            valid_until_at_ns: None,
        },
        LockEvent::NotAcquired {
            thread, lock, outcome, ..
        } => {
            let (outcome_kind, left) = match outcome {
                Acquire::Failed { left, .. } => (NotAcquired::Failed, Some(left_of(*left))),
                Acquire::TimedOut => (NotAcquired::TimedOut, None),
                Acquire::NotAcquired | Acquire::Acquired { .. } => (NotAcquired::Taken, None),
            };
            E::NotAcquired {
                thread: thread.to_string(),
                lock: lock.to_string(),
                outcome: outcome_kind,
                left,
                why: format!("{outcome:?}"),
            }
        }
        LockEvent::Releasing { thread, lock, .. } => E::Releasing {
            thread: thread.to_string(),
            lock: lock.to_string(),
        },
        LockEvent::Released {
            thread, lock, outcome, ..
        } => E::Released {
            thread: thread.to_string(),
            lock: lock.to_string(),
            outcome: match outcome {
                cassalock::algo::lease::Released::Released => ReleaseOutcome::Released,
                cassalock::algo::lease::Released::Failed(_) => ReleaseOutcome::Failed,
            },
            why: format!("{outcome:?}"),
        },
        LockEvent::Reused {
            thread,
            lock,
            stamps_above_us,
            ..
        } => E::Reused {
            thread: thread.to_string(),
            lock: lock.to_string(),
            stamps_above_us: *stamps_above_us,
        },
        LockEvent::LeaseLost { thread, lock, why, .. } => E::LeaseLost {
            thread: thread.to_string(),
            lock: lock.to_string(),
            why: format!("{why:?}"),
        },
    }
}

fn left_of(left: Leftover) -> event::Left {
    match left {
        Leftover::Nothing => event::Left::Nothing,
        Leftover::CleanUpFailed => event::Left::CleanUpFailed,
        Leftover::NotCleanedUp => event::Left::NotCleanedUp,
    }
}
