//! The workload: what one client does, acquisition after acquisition, with a critical section
//! that writes to the resource under the fencing token.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cassalock::{Clock, RemoteLocker};
use madsim::net::Endpoint;
use rand::seq::SliceRandom;
use rand::Rng;

use crate::clock::SimClock;
use crate::cluster::{client_ip, resource_addr, SimStore};
use crate::config::LockOrder;
use crate::config::{ClientMode, RunConfig};
use crate::trace::{NodeObserver, Phase, Recorder, ResourceWrite, What};

/// How often a holder looks at `guard.is_lost()` during its critical section.
const LEASE_CHECK_MS: u64 = 100;

/// State a client keeps across restarts of its node.
pub(crate) struct ClientState {
    pub(crate) index: usize,
    pub(crate) done: AtomicU32,
    pub(crate) incarnations: AtomicU32,
    /// Set once the client recorded that it is done.
    pub(crate) finished: AtomicBool,
    /// The run's queues, when the cluster's network is `Network::Queues`.
    pub(crate) transport: Option<Arc<crate::transport::QueueTransport>>,
}

/// A critical section's length: from `hold_ms`, or, with a long-operation mix, from its range
/// with its probability (one more draw, only when the mix is on).
fn hold_ms(config: &RunConfig) -> u64 {
    let mut rng = madsim::rand::thread_rng();
    let range = match config.long_hold {
        Some(long) if rng.gen_bool(long.percent / 100.0) => long.hold_ms,
        _ => config.hold_ms,
    };
    rng.gen_range(range.0..=range.1)
}

pub(crate) async fn client_main(
    config: Arc<RunConfig>,
    state: Arc<ClientState>,
    clock: SimClock,
    recorder: Arc<Recorder>,
) {
    let incarnation = state.incarnations.fetch_add(1, Ordering::Relaxed);
    let node = format!("c{}", state.index);
    // A new incarnation gets a new client id: thread ids must never repeat.
    let client_id = format!("c{}-{incarnation}", state.index);
    let store = SimStore::connect(client_ip(state.index), config.cluster.clone(), state.transport.clone())
        .await
        .with_store_faults(Arc::clone(&recorder), node.clone());
    let mut settings = config.settings(&client_id);
    settings.seed = Some(madsim::rand::random());
    let observer = Arc::new(NodeObserver {
        node: node.clone(),
        clock: clock.clone(),
        recorder: Arc::clone(&recorder),
    });
    let locker = match RemoteLocker::with_observer(store, clock.clone(), settings, observer) {
        Ok(locker) => locker,
        Err(error) => {
            recorder.record(
                &node,
                None,
                What::ClientError {
                    client: client_id,
                    error: error.to_string(),
                },
            );
            return;
        }
    };
    let resource = Endpoint::bind(std::net::SocketAddr::new(client_ip(state.index), 0))
        .await
        .expect("client address free");
    let write = |lock: String, token: String, phase: Phase| {
        let message = ResourceWrite {
            client: client_id.clone(),
            lock,
            token,
            phase,
        };
        resource.call_timeout(resource_addr(), message, Duration::from_secs(3))
    };
    let names = config.lock_names();
    loop {
        let done = state.done.load(Ordering::Relaxed);
        if done >= config.acquisitions && !config.open_ended {
            break;
        }
        recorder.record(
            &node,
            Some(clock.now_us()),
            What::Waiting {
                client: client_id.clone(),
                n: done + 1,
            },
        );
        // The locks of this acquisition, in its order (one lock: no draw).
        let mut order: Vec<&str> = names.iter().map(String::as_str).collect();
        if config.lock_order == LockOrder::Random && order.len() > 1 {
            order.shuffle(&mut madsim::rand::thread_rng());
        }
        let mut guards = Vec::with_capacity(order.len());
        // Why the acquisition stopped short of every lock: a "no" from try_lock, or an error.
        let mut short: Option<Option<String>> = None;
        for lock in &order {
            let requests_before = locker.requests().total();
            let attempt = match config.mode {
                ClientMode::GetLock => locker.lock(lock).await.map(Some),
                ClientMode::TryGetLock => {
                    let attempt = locker.try_lock(lock).await;
                    recorder.record(
                        &node,
                        Some(clock.now_us()),
                        What::TryReturned {
                            client: client_id.clone(),
                            acquired: matches!(attempt, Ok(Some(_))),
                            requests: locker.requests().total() - requests_before,
                        },
                    );
                    attempt
                }
            };
            match attempt {
                Ok(Some(guard)) => guards.push((lock.to_string(), guard)),
                Ok(None) => {
                    short = Some(None);
                    break;
                }
                Err(error) => {
                    short = Some(Some(error.to_string()));
                    break;
                }
            }
        }
        if let Some(error) = short {
            // Give back what was taken, last first, then try the whole acquisition again.
            while let Some((_, guard)) = guards.pop() {
                let _ = guard.release().await;
            }
            match error {
                None => {
                    let think = madsim::rand::thread_rng().gen_range(config.think_ms.0..=config.think_ms.1);
                    clock.sleep_ms(think.max(1)).await;
                }
                Some(error) => {
                    recorder.record(
                        &node,
                        Some(clock.now_us()),
                        What::ClientError {
                            client: client_id.clone(),
                            error,
                        },
                    );
                    clock.sleep_ms(500).await;
                }
            }
            continue;
        }
        let tokens: Vec<(String, String)> = guards
            .iter()
            .map(|(lock, guard)| (lock.clone(), guard.fencing_token().to_string()))
            .collect();
        for (lock, token) in &tokens {
            let _ = write(lock.clone(), token.clone(), Phase::Enter).await;
        }
        // The critical section, watching the leases as a careful user would: a lost lease ends
        // it early (a paused process cannot look, which is K1).
        let mut hold = hold_ms(&config);
        // Every holder asks its guards (C-lost measures when it first hears a lease is lost);
        // only a lease-aware one acts on the answer.
        let mut abandoned = false;
        let mut seen_lost = false;
        while hold > 0 {
            let slice = hold.min(LEASE_CHECK_MS);
            clock.sleep_ms(slice).await;
            hold -= slice;
            // Every answer that differs from the last is recorded: a loss, once reported,
            // should stay reported (C-lost judges from the last time it turned true).
            let lost_now = guards.iter().any(|(_, guard)| guard.is_lost());
            if lost_now && !seen_lost {
                seen_lost = true;
                recorder.record(
                    &node,
                    Some(clock.now_us()),
                    What::LeaseLostSeen {
                        client: client_id.clone(),
                        abandons: config.lease_aware,
                    },
                );
                if config.lease_aware {
                    abandoned = true;
                    break;
                }
            } else if !lost_now && seen_lost {
                seen_lost = false;
                recorder.record(
                    &node,
                    Some(clock.now_us()),
                    What::LeaseLostRetracted {
                        client: client_id.clone(),
                    },
                );
            }
        }
        if !abandoned {
            for (lock, token) in tokens {
                let _ = write(lock, token, Phase::Exit).await;
            }
        }
        while let Some((_, guard)) = guards.pop() {
            let _ = guard.release().await;
        }
        if state.done.fetch_add(1, Ordering::Relaxed) + 1 >= config.acquisitions && !config.open_ended {
            break;
        }
        let think = madsim::rand::thread_rng().gen_range(config.think_ms.0..=config.think_ms.1);
        clock.sleep_ms(think).await;
    }
    recorder.record(&node, Some(clock.now_us()), What::ClientDone { client: client_id });
    state.finished.store(true, Ordering::Relaxed);
}
