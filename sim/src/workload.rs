//! The workload: what one client does, acquisition after acquisition, with a critical section
//! that writes to the resource under the fencing token.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cassalock::{Clock, LockGuard, RemoteLocker};
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
    if let Some(client) = Client::start(config, state, clock, recorder).await {
        client.run().await;
    }
}

/// The guards of one acquisition's locks, in the order it took them.
type Guards = Vec<(String, LockGuard<SimStore, SimClock>)>;

/// One incarnation of a client: its locker and its endpoint to the resource. (Fields drop in
/// the order the function they came from dropped them.)
struct Client {
    names: Vec<String>,
    resource: Endpoint,
    locker: RemoteLocker<SimStore, SimClock>,
    node: String,
    client_id: String,
    config: Arc<RunConfig>,
    state: Arc<ClientState>,
    clock: SimClock,
    recorder: Arc<Recorder>,
}

impl Client {
    /// Connect to the cluster, build the locker (`None`, recorded, if its settings are
    /// refused) and bind the endpoint that writes to the resource.
    async fn start(
        config: Arc<RunConfig>,
        state: Arc<ClientState>,
        clock: SimClock,
        recorder: Arc<Recorder>,
    ) -> Option<Client> {
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
                return None;
            }
        };
        let resource = Endpoint::bind(std::net::SocketAddr::new(client_ip(state.index), 0))
            .await
            .expect("client address free");
        Some(Client {
            names: config.lock_names(),
            resource,
            locker,
            node,
            client_id,
            config,
            state,
            clock,
            recorder,
        })
    }

    /// Acquisition after acquisition, until the run's count is done.
    async fn run(self) {
        let (config, clock) = (&self.config, &self.clock);
        loop {
            let done = self.state.done.load(Ordering::Relaxed);
            if done >= config.acquisitions && !config.open_ended {
                break;
            }
            self.recorder.record(
                &self.node,
                Some(clock.now_us()),
                What::Waiting {
                    client: self.client_id.clone(),
                    n: done + 1,
                },
            );
            let (mut guards, short) = self.take_locks().await;
            if let Some(error) = short {
                // Give back what was taken, last first, then try the whole acquisition again.
                release_last_first(&mut guards).await;
                self.after_short(error).await;
                continue;
            }
            let tokens: Vec<(String, String)> = guards
                .iter()
                .map(|(lock, guard)| (lock.clone(), guard.fencing_token().to_string()))
                .collect();
            for (lock, token) in &tokens {
                self.write(lock.clone(), token.clone(), Phase::Enter).await;
            }
            let abandoned = self.critical_section(&guards).await;
            if !abandoned {
                for (lock, token) in tokens {
                    self.write(lock, token, Phase::Exit).await;
                }
            }
            release_last_first(&mut guards).await;
            if self.state.done.fetch_add(1, Ordering::Relaxed) + 1 >= config.acquisitions && !config.open_ended {
                break;
            }
            let think = madsim::rand::thread_rng().gen_range(config.think_ms.0..=config.think_ms.1);
            clock.sleep_ms(think).await;
        }
        self.recorder.record(
            &self.node,
            Some(clock.now_us()),
            What::ClientDone {
                client: self.client_id.clone(),
            },
        );
        self.state.finished.store(true, Ordering::Relaxed);
    }

    /// Take this acquisition's locks in its order (one lock: no draw), or the one lock drawn
    /// for it (independent locks). Stops short at a "no" from try_lock (`Some(None)`) or an
    /// error (`Some(Some(error))`), with the guards taken.
    async fn take_locks(&self) -> (Guards, Option<Option<String>>) {
        let mut order: Vec<&str> = self.names.iter().map(String::as_str).collect();
        if self.config.lock_order == LockOrder::Random && order.len() > 1 {
            order.shuffle(&mut madsim::rand::thread_rng());
        }
        if self.config.lock_order == LockOrder::One && order.len() > 1 {
            let drawn = madsim::rand::thread_rng().gen_range(0..order.len());
            order = vec![order[drawn]];
        }
        let mut guards = Vec::with_capacity(order.len());
        for lock in &order {
            let requests_before = self.locker.requests().total();
            let attempt = match self.config.mode {
                ClientMode::GetLock => self.locker.lock(lock).await.map(Some),
                ClientMode::TryGetLock => {
                    let attempt = self.locker.try_lock(lock).await;
                    self.recorder.record(
                        &self.node,
                        Some(self.clock.now_us()),
                        What::TryReturned {
                            client: self.client_id.clone(),
                            acquired: matches!(attempt, Ok(Some(_))),
                            requests: self.locker.requests().total() - requests_before,
                        },
                    );
                    attempt
                }
            };
            match attempt {
                Ok(Some(guard)) => guards.push((lock.to_string(), guard)),
                Ok(None) => return (guards, Some(None)),
                Err(error) => return (guards, Some(Some(error.to_string()))),
            }
        }
        (guards, None)
    }

    /// After an acquisition stopped short: a "no" thinks before trying again, an error is
    /// recorded and waits half a second.
    async fn after_short(&self, error: Option<String>) {
        match error {
            None => {
                let think = madsim::rand::thread_rng().gen_range(self.config.think_ms.0..=self.config.think_ms.1);
                self.clock.sleep_ms(think.max(1)).await;
            }
            Some(error) => {
                self.recorder.record(
                    &self.node,
                    Some(self.clock.now_us()),
                    What::ClientError {
                        client: self.client_id.clone(),
                        error,
                    },
                );
                self.clock.sleep_ms(500).await;
            }
        }
    }

    /// A write to the resource under `token` (its answer, or its timeout, is not used).
    async fn write(&self, lock: String, token: String, phase: Phase) {
        let message = ResourceWrite {
            client: self.client_id.clone(),
            lock,
            token,
            phase,
        };
        let _ = self
            .resource
            .call_timeout(resource_addr(), message, Duration::from_secs(3))
            .await;
    }

    /// The critical section, watching the leases as a careful user would: a lost lease ends
    /// it early (a paused process cannot look, which is K1). True if it did (abandoned).
    async fn critical_section(&self, guards: &Guards) -> bool {
        let (config, clock) = (&self.config, &self.clock);
        let mut hold = hold_ms(config);
        // Every holder asks its guards (C-lost measures when it first hears a lease is lost);
        // only a lease-aware one acts on the answer.
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
                self.recorder.record(
                    &self.node,
                    Some(clock.now_us()),
                    What::LeaseLostSeen {
                        client: self.client_id.clone(),
                        abandons: config.lease_aware,
                    },
                );
                if config.lease_aware {
                    return true;
                }
            } else if !lost_now && seen_lost {
                seen_lost = false;
                self.recorder.record(
                    &self.node,
                    Some(clock.now_us()),
                    What::LeaseLostRetracted {
                        client: self.client_id.clone(),
                    },
                );
            }
        }
        false
    }
}

/// Release every guard, last taken first.
async fn release_last_first(guards: &mut Guards) {
    while let Some((_, guard)) = guards.pop() {
        let _ = guard.release().await;
    }
}
