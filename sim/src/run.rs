//! One simulated run, the harness: a fresh thread and madsim runtime per run, the nodes built
//! and run (`crate::assembly`), the records judged ([`crate::verdict`]).
//!
//! The parts of a run live in their own files: `crate::assembly` builds the nodes,
//! `crate::workload` is what a client does, `crate::faults` injects the faults and
//! `crate::oracles` watch the replicas from outside.

use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::Duration;

use crate::assembly::{simulate, Simulated};
use crate::config::RunConfig;
use crate::trace::Record;
use crate::verdict::Verdicts;

/// The outcome of one run.
pub struct RunOutcome {
    pub config: RunConfig,
    pub seed: u64,
    pub records: Vec<Record>,
    /// The header of the run's event record: the facts and bounds its verdicts were judged
    /// with (`crate::events::events` gives the events from `records`).
    pub header: cassalock_judge::event::Header,
    pub verdicts: Verdicts,
    /// Simulated time the run took.
    pub sim_time: Duration,
    /// A hash of every record: equal for two runs of the same (scenario, seed, options).
    pub trace_hash: u64,
    /// Store requests made by the lock clients (renewals and releases included).
    pub requests: u64,
    /// Messages the simulated network carried (every RPC's request and reply, each replica's
    /// traffic): the simulator's unit of work.
    pub messages: u64,
}

/// Run `config` on `seed`. `detailed` keeps every store request and reply in the records.
pub fn run(config: &RunConfig, seed: u64, detailed: bool) -> RunOutcome {
    // Every run gets a fresh OS thread. std seeds HashMap keys once per thread and advances them
    // with every map it makes, so a thread reused across runs carries the runs before into the
    // next one's hash orders (and madsim's scheduling): measured, the same seed gave different
    // traces after other runs on its thread.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(format!("sim-seed-{seed}"))
            .stack_size(16 << 20)
            .spawn_scoped(scope, || run_on_fresh_thread(config, seed, detailed))
            .expect("a thread for the run")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn run_on_fresh_thread(config: &RunConfig, seed: u64, detailed: bool) -> RunOutcome {
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, config.cluster.madsim_config());
    let for_run = config.clone();
    let (simulated, madsim_messages) = runtime.block_on(async move {
        let outcome = simulate(for_run, detailed).await;
        (outcome, madsim::net::NetSim::current().stat().msg_count)
    });
    let Simulated {
        records,
        sim_time,
        killed,
        requests,
        queued_messages,
    } = simulated;
    let messages = madsim_messages + queued_messages;
    let header = crate::events::header(config, seed, sim_time, &killed);
    let verdicts = cassalock_judge::rows::judge_record(&header, &crate::events::events(config, &records));
    let trace_hash = hash_records(&records);
    RunOutcome {
        config: config.clone(),
        seed,
        records,
        header,
        verdicts,
        sim_time,
        trace_hash,
        requests,
        messages,
    }
}

/// Run `config` twice on `seed` under madsim's own determinism check (it panics if the two runs
/// draw different random numbers at different times).
pub fn check_determinism(config: &RunConfig, seed: u64) {
    // madsim takes a plain `fn()`, so the config travels through a static; the lock keeps two
    // checks from sharing it.
    static SERIAL: Mutex<()> = Mutex::new(());
    static CONFIG: Mutex<Option<RunConfig>> = Mutex::new(None);
    let _serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    *CONFIG.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(config.clone());
    fn body() -> impl std::future::Future<Output = ()> {
        let config = CONFIG
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
            .expect("set above");
        async move {
            simulate(config, false).await;
        }
    }
    madsim::runtime::Runtime::check_determinism(seed, config.cluster.madsim_config(), body);
}

/// The hash of the records every run keeps: a detailed run (replay) hashes to the same value
/// as the summary run of the same seed, since the details it adds are left out.
fn hash_records(records: &[Record]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for record in records.iter().filter(|record| !record.is_detail()) {
        record.at.hash(&mut hasher);
        record.node.hash(&mut hasher);
        record.clock_us.hash(&mut hasher);
        record.what.to_string().hash(&mut hasher);
    }
    hasher.finish()
}

/// An echo request for [`raw_rpc_rate`].
#[derive(Clone, Debug, madsim::net::rpc::Serialize, madsim::net::rpc::Deserialize)]
struct Echo(u64);
impl madsim::net::rpc::Request for Echo {
    type Response = u64;
    const ID: u64 = 0xBE_0001;
}

/// The most calls [`raw_rpc_rate`] makes.
pub const MAX_RAW_CALLS: u64 = 10_000_000;

/// What [`echo_calls`] measured.
#[derive(Clone, Copy, Debug)]
pub struct EchoCalls {
    /// Messages the network carried (two a call).
    pub messages: u64,
    /// Wall-clock seconds the calls took.
    pub wall_s: f64,
    /// Simulated time the calls took.
    pub simulated: Duration,
}

/// madsim's own speed on this machine, the ceiling of any simulation built on it: one client
/// node calls an echo handler on a second node `calls` times in a row (`call_timeout`, as the
/// simulator's nodes call one another; each call is two messages), on madsim's default network.
/// Returns the messages carried and the wall-clock seconds they took.
pub fn raw_rpc_rate(calls: u64) -> (u64, f64) {
    let measured = echo_calls(calls, None);
    (measured.messages, measured.wall_s)
}

/// `calls` echo calls in a row between two nodes, each message's latency uniform in
/// `latency_us` (`None`: madsim's default, 1..10 ms).
pub fn echo_calls(calls: u64, latency_us: Option<(u64, u64)>) -> EchoCalls {
    let calls = calls.clamp(1, MAX_RAW_CALLS);
    let cluster = crate::cluster::ClusterConfig {
        message_latency_us: latency_us,
        ..crate::cluster::ClusterConfig::default()
    };
    let runtime = madsim::runtime::Runtime::with_seed_and_config(0, cluster.madsim_config());
    let started = std::time::Instant::now();
    let (messages, simulated) = runtime.block_on(async move {
        let handle = madsim::runtime::Handle::current();
        let server_ip: std::net::IpAddr = [10, 99, 0, 1].into();
        let server_addr = std::net::SocketAddr::new(server_ip, 1);
        handle
            .create_node()
            .name("echo")
            .ip(server_ip)
            .init(move || async move {
                let endpoint = madsim::net::Endpoint::bind(server_addr)
                    .await
                    .expect("echo address free");
                endpoint.add_rpc_handler(|Echo(n)| async move { n });
                std::future::pending::<()>().await;
            })
            .build();
        let client = handle.create_node().name("caller").ip([10, 99, 0, 2].into()).build();
        let simulated = client
            .spawn(async move {
                // Let the server bind first.
                madsim::time::sleep(Duration::from_millis(1)).await;
                let endpoint = madsim::net::Endpoint::bind("0.0.0.0:0").await.expect("a client port");
                let began = madsim::time::Instant::now();
                for n in 0..calls {
                    let echoed = endpoint
                        .call_timeout(server_addr, Echo(n), Duration::from_secs(1))
                        .await
                        .expect("the echo answers: no faults on this network");
                    debug_assert_eq!(echoed, n);
                }
                began.elapsed()
            })
            .await
            .expect("the caller ran");
        (madsim::net::NetSim::current().stat().msg_count, simulated)
    });
    EchoCalls {
        messages,
        wall_s: started.elapsed().as_secs_f64(),
        simulated,
    }
}

/// One call of the echoes without madsim's network: its number, and where the answer goes.
type EchoCall = (u64, tokio::sync::oneshot::Sender<u64>);

/// A message's latency in those echoes: uniform in 1..10 ms, from madsim's generator.
fn echo_latency() -> Duration {
    use madsim::rand::Rng;
    Duration::from_micros(madsim::rand::thread_rng().gen_range(1_000..10_000))
}

/// The echo of [`timer_echo_calls`] and [`queue_echo_calls`]: `calls` calls in a row from a
/// caller node to an echo node, each waiting for its answer under a timeout, as
/// `call_timeout` does. `wire(echo node, caller node)` sets a design up and returns how the
/// caller sends a call. No loss, no clogs: a yardstick of timers and tasks, not a network.
fn echo_without_network<Sends>(
    calls: u64,
    wire: impl FnOnce(madsim::runtime::NodeHandle, madsim::runtime::NodeHandle) -> Sends,
) -> EchoCalls
where
    Sends: Fn(EchoCall) + Send + 'static,
{
    let calls = calls.clamp(1, MAX_RAW_CALLS);
    let runtime = madsim::runtime::Runtime::with_seed_and_config(0, madsim::Config::default());
    let started = std::time::Instant::now();
    let (messages, simulated) = runtime.block_on(async move {
        let handle = madsim::runtime::Handle::current();
        let server = handle.create_node().name("echo").ip([10, 99, 0, 1].into()).build();
        let client = handle.create_node().name("caller").ip([10, 99, 0, 2].into()).build();
        let send = wire(server, client.clone());
        client
            .spawn(async move {
                let began = madsim::time::Instant::now();
                let mut messages = 0u64;
                for n in 0..calls {
                    let (answer, answered) = tokio::sync::oneshot::channel();
                    send((n, answer));
                    let echoed = tokio::time::timeout(Duration::from_secs(1), answered)
                        .await
                        .expect("no faults: every message arrives in time")
                        .expect("the echo answers");
                    debug_assert_eq!(echoed, n);
                    messages += 2;
                }
                (messages, began.elapsed())
            })
            .await
            .expect("the caller ran")
    });
    EchoCalls {
        messages,
        wall_s: started.elapsed().as_secs_f64(),
        simulated,
    }
}

/// What a transport of our own could reach, bypassing madsim's network, built the simplest
/// way: each message a task spawned on the receiving node that sleeps the message's latency
/// and hands it over through a channel ([`echo_without_network`]).
pub fn timer_echo_calls(calls: u64) -> EchoCalls {
    echo_without_network(calls, |server, client| {
        let (to_server, mut inbox) = tokio::sync::mpsc::unbounded_channel::<EchoCall>();
        let echo_on = server.clone();
        echo_on.spawn(async move {
            while let Some((n, answer)) = inbox.recv().await {
                let delay = echo_latency();
                client.spawn(async move {
                    madsim::time::sleep(delay).await;
                    let _ = answer.send(n);
                });
            }
        });
        move |call: EchoCall| {
            let (to_server, delay) = (to_server.clone(), echo_latency());
            server.spawn(async move {
                madsim::time::sleep(delay).await;
                let _ = to_server.send(call);
            });
        }
    })
}

/// The echo of [`timer_echo_calls`] over the cluster's own transport
/// ([`crate::transport::QueueTransport`], the simulator's default network): the caller's
/// request is a slice read the echo node answers at once. Each message carries the 2 ms the
/// transport adds as madsim's network does.
pub fn queue_echo_calls(calls: u64) -> EchoCalls {
    use crate::cluster::RawSlice;
    use crate::transport::{Delivery, QueueTransport, Reply};
    use crate::wire::ReadRefused;
    echo_without_network(calls, |server, client| {
        let (server_ip, client_ip): (std::net::IpAddr, std::net::IpAddr) =
            ([10, 99, 0, 1].into(), [10, 99, 0, 2].into());
        let transport = QueueTransport::new(None);
        transport.open(server_ip);
        transport.open(client_ip);
        let on_server = std::sync::Arc::clone(&transport);
        server.spawn(async move {
            let answering = std::sync::Arc::clone(&on_server);
            on_server.serve(server_ip, move |delivery| {
                if let Delivery::ReadRaw { answer, .. } = delivery {
                    let echo = RawSlice {
                        versions: Vec::new(),
                        truncated: false,
                    };
                    answering.answer(server_ip, answer, Ok(echo));
                }
            });
            std::future::pending::<()>().await;
        });
        let on_client = std::sync::Arc::clone(&transport);
        client.spawn(async move {
            on_client.serve(client_ip, |_request| {});
            std::future::pending::<()>().await;
        });
        move |(n, answer): EchoCall| {
            let answer = Reply::new(client_ip, move |_: Result<RawSlice, ReadRefused>| {
                let _ = answer.send(n);
            });
            let read = Delivery::ReadRaw {
                row: String::new(),
                start: String::new(),
                live_limit: 1,
                answer,
            };
            transport.send(client_ip, server_ip, read);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both echoes without madsim's network carry two messages a call, each its 1..10 ms
    /// latency: the task per message nothing more, the cluster's transport the 2 ms a message
    /// madsim's network adds too (so a call takes what it takes there, 13..17 ms).
    #[test]
    fn echoes_without_the_network_carry_two_messages_of_their_latency_each() {
        for (design, measured, took) in [
            ("a task per message", timer_echo_calls(1000), 9..13),
            ("the cluster's transport", queue_echo_calls(1000), 13..17),
        ] {
            assert_eq!(measured.messages, 2000, "{design}");
            let call = measured.simulated / 1000;
            assert!(
                (Duration::from_millis(took.start)..Duration::from_millis(took.end)).contains(&call),
                "{design}: {call:?} a call"
            );
        }
    }

    /// Each echo call is two messages on the network, and the count says so.
    #[test]
    fn raw_rpc_rate_counts_two_messages_a_call() {
        let (messages, seconds) = raw_rpc_rate(1000);
        assert_eq!(messages, 2000);
        assert!(seconds > 0.0);
    }

    /// madsim sleeps at least 1 ms when a message is sent and again when it is received (its
    /// random jitter goes through `sleep`, which waits 1 ms at least): a message costs 2 ms of
    /// simulated time beyond its latency, so a call with next to no latency takes 4 ms, and
    /// with the default 1..10 ms about 15 ms. A Cassandra request in the simulator is four
    /// messages on its critical path: at least 8 ms, where the loopback cluster answers in
    /// 2 to 4 (docs/findings-handoff.md, "The simulator against the real cluster").
    #[test]
    fn a_simulated_message_costs_2_ms_beyond_its_latency() {
        let floor = echo_calls(200, Some((1, 2))).simulated / 200;
        assert!(
            (Duration::from_micros(4000)..Duration::from_micros(4050)).contains(&floor),
            "{floor:?} a call"
        );
        let default = echo_calls(200, None).simulated / 200;
        assert!(
            (Duration::from_millis(13)..Duration::from_millis(17)).contains(&default),
            "{default:?} a call"
        );
    }
}
