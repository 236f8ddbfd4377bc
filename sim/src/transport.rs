//! The cluster's own transport: a delivery queue per node instead of madsim's
//! network, for the Cassandra cluster's traffic (clients and the time service to coordinators,
//! coordinators to replicas, and every answer).
//!
//! # Why
//!
//! A sweep spends most of its time in madsim's network, not in the lock code: one
//! `call_timeout` there costs a task spawned for the handler, a sleep when the request is sent
//! and another when it is received, a timer for its delivery, the same three for the answer, and
//! a timeout; the coordinator spawns one more task per replica it fans out to. `bench sim`
//! runs the contention sweep on both networks in the same run: on 2 cores, about 5,000
//! seeds/min on madsim's network and about 12,000 on the queues.
//!
//! # What a message does here
//!
//! - **Sent**: at once, from the sender's task, with nothing to await. A message from or to a
//!   node the fault injector isolated, or over a link it clogged, is dropped; under message
//!   loss each message is dropped with the loss rate, drawn from madsim's generator; a message
//!   to a node with no queue (killed, not yet restarted) is dropped.
//! - **In flight**: its latency is drawn uniformly from the cluster's range (madsim's 1..10 ms
//!   unless `message_latency_us` says otherwise), plus [`SEND_AND_RECEIVE_COST`]: madsim's
//!   network sleeps at least 1 ms when a message is sent and again when it is received, and
//!   the simulated times of the two networks are kept comparable (a request and its answer take
//!   the same simulated time in distribution).
//! - **Delivered**: the receiving node's delivery task (one per node, spawned on it) sleeps until
//!   the earliest message is due and hands every due message over, in due order, ties in the
//!   order they arrived. Replicas apply writes and read slices in that task; a request to
//!   coordinate gets a task of its own (it waits for other replicas). An answer runs the
//!   caller's continuation (a channel send) in the caller's delivery task.
//!
//! Faults keep their meaning because the delivery task belongs to the node: a paused node's
//! queue waits (its messages are delivered when it resumes), a killed node's queue dies with it
//! (messages in flight to it are lost, as they are when madsim drops a dead node's socket), and
//! a restarted node opens a new one. A lost request or answer leaves its caller waiting out its
//! timeout, never failing early: callers keep their channels open until their deadline.
//!
//! # What differs from madsim's network
//!
//! Isolation, clogs and loss are judged once, when a message is sent (madsim judges them after
//! its 1 ms send sleep). Read repairs go out at once under one timeout (madsim's path sends them
//! one after the other). madsim's receiving side sleeps 1 ms after taking each message off an
//! endpoint, one message after the other, so a replica there takes at most one request of a
//! kind a millisecond; here every due message is handed over at its instant. Runs on the two
//! networks draw different random numbers, so a seed gives a different run on each: seeds
//! recorded before 2026-11-27 ran on madsim's network and replay with `--network madsim`. The
//! queues are the default since then.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use cassalock::store::{CellVersion, StoreFailure, StoreReply, StoreRequest};
use tokio::time::Instant;

use crate::wire::{RawSlice, ReadRefused};

/// What madsim's network adds to every message beyond its latency (1 ms sleep on sending, 1 ms
/// on receiving), added here too so that simulated times compare across the two networks.
pub const SEND_AND_RECEIVE_COST: Duration = Duration::from_millis(2);
/// madsim's default latency of one message, microseconds (`send_latency`: 1..10 ms).
pub const DEFAULT_LATENCY_US: (u64, u64) = (1_000, 10_000);
/// At most this many messages wait in one node's queue; a message beyond it is dropped and
/// counted ([`QueueTransport::over_limit`]), the run says so in a note starting with
/// [`NETWORK_LIMIT_HIT`], and none of the run's checks passes (`verdict::judge`).
pub const MAX_WAITING_MESSAGES: usize = 1_000_000;
/// How the note of a run whose queues hit [`MAX_WAITING_MESSAGES`] begins.
pub const NETWORK_LIMIT_HIT: &str = "limit hit: the cluster's queues";

/// Where an answer goes: the calling node, and what to do with the answer when it arrives there.
pub struct Reply<T> {
    to: IpAddr,
    deliver: Box<dyn FnOnce(T) + Send>,
}

impl<T> Reply<T> {
    pub fn new(to: IpAddr, deliver: impl FnOnce(T) + Send + 'static) -> Self {
        Reply {
            to,
            deliver: Box::new(deliver),
        }
    }
}

/// A message on the cluster's network.
pub enum Delivery {
    /// Coordinator -> replica: merge these versions, acknowledge.
    Apply {
        row: String,
        versions: Vec<(String, CellVersion)>,
        ack: Reply<()>,
    },
    /// Coordinator -> replica: the raw versions of a slice.
    ReadRaw {
        row: String,
        start: String,
        live_limit: usize,
        answer: Reply<Result<RawSlice, ReadRefused>>,
    },
    /// Client -> coordinator: carry out this request.
    Coordinate {
        request: StoreRequest,
        answer: Reply<Result<StoreReply, StoreFailure>>,
    },
    /// An answer arriving at its caller.
    Answer(Box<dyn FnOnce() + Send>),
}

/// One node's queue.
struct Inbox {
    /// Which `serve` call opened it: a restarted node's queue replaces its earlier one.
    incarnation: u64,
    /// Due instant, arrival number (ties go in the order they arrived): the message.
    waiting: BTreeMap<(Instant, u64), Delivery>,
    arrivals: u64,
    /// The delivery task's waker, once it has run.
    waker: Option<Waker>,
    /// The earliest instant a timer is set to wake the delivery task at.
    wake_at: Option<Instant>,
}

/// The incarnation of a queue opened before its node's first `serve` ([`QueueTransport::open`]).
const UNCLAIMED: u64 = 0;

impl Inbox {
    fn new(incarnation: u64) -> Self {
        Inbox {
            incarnation,
            waiting: BTreeMap::new(),
            arrivals: 0,
            waker: None,
            wake_at: None,
        }
    }
}

/// Set a madsim timer that wakes `waker` at `at` (at least 1 ms from now, madsim's rule);
/// returns the instant it was set for. madsim's `Sleep` adds a timer each time it is polled
/// while pending, so one poll sets one timer, and nothing else polls it.
fn set_timer(time: &madsim::time::TimeHandle, waker: &Waker, at: Instant) -> Instant {
    let mut sleep = std::pin::pin!(time.sleep_until(at));
    let deadline = sleep.deadline();
    let _pending = sleep.as_mut().poll(&mut Context::from_waker(waker));
    deadline
}

/// The network's state: every queue and every fault.
#[derive(Default)]
struct Links {
    /// Each node's queue, by its address.
    inboxes: BTreeMap<IpAddr, Inbox>,
    /// `serve` calls so far (each queue's incarnation).
    opened: u64,
    /// One-way links that drop everything (sender, receiver).
    clogged: BTreeSet<(IpAddr, IpAddr)>,
    /// Nodes cut off from everybody.
    isolated: BTreeSet<IpAddr>,
    loss_rate: f64,
    /// Messages sent into a queue.
    carried: u64,
    /// Messages dropped because their queue held [`MAX_WAITING_MESSAGES`].
    over_limit: u64,
}

/// The transport of one run: every node's queue, and the network's faults.
pub struct QueueTransport {
    links: Mutex<Links>,
    latency_us: (u64, u64),
    /// madsim's clock, read directly (cheaper than `Instant::now()`; see `SimClock`).
    time: madsim::time::TimeHandle,
}

impl QueueTransport {
    /// A network whose messages take `latency_us` (uniform, half-open; `None`: madsim's
    /// default). Inside a madsim runtime only.
    pub fn new(latency_us: Option<(u64, u64)>) -> Arc<Self> {
        let latency_us = latency_us.unwrap_or(DEFAULT_LATENCY_US);
        debug_assert!(latency_us.0 < latency_us.1, "a non-empty latency range");
        Arc::new(QueueTransport {
            links: Mutex::new(Links::default()),
            latency_us,
            time: madsim::time::TimeHandle::current(),
        })
    }

    /// Simulated time now.
    pub fn now(&self) -> Instant {
        self.time.now_instant()
    }

    fn links(&self) -> std::sync::MutexGuard<'_, Links> {
        self.links.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Send `message` from `from` to `to`: dropped, or queued at `to` for its latency.
    pub fn send(&self, from: IpAddr, to: IpAddr, message: Delivery) {
        use rand::Rng;
        let mut links = self.links();
        if links.isolated.contains(&from) || links.isolated.contains(&to) || links.clogged.contains(&(from, to)) {
            return;
        }
        let mut rng = madsim::rand::thread_rng();
        if links.loss_rate > 0.0 && rng.gen_bool(links.loss_rate) {
            return;
        }
        let Some(inbox) = links.inboxes.get_mut(&to) else {
            return;
        };
        if inbox.waiting.len() >= MAX_WAITING_MESSAGES {
            links.over_limit += 1;
            return;
        }
        let latency = Duration::from_micros(rng.gen_range(self.latency_us.0..self.latency_us.1));
        let due = self.now() + SEND_AND_RECEIVE_COST + latency;
        inbox.waiting.insert((due, inbox.arrivals), message);
        inbox.arrivals += 1;
        // The delivery task sleeps until its earliest message: wake it earlier for this one.
        if let Some(waker) = &inbox.waker {
            if inbox.wake_at.is_none_or(|at| due < at) {
                inbox.wake_at = Some(set_timer(&self.time, waker, due));
            }
        }
        links.carried += 1;
    }

    /// Answer a request: `value` travels from `from` back to the caller.
    pub fn answer<T: Send + 'static>(&self, from: IpAddr, reply: Reply<T>, value: T) {
        let Reply { to, deliver } = reply;
        self.send(from, to, Delivery::Answer(Box::new(move || deliver(value))));
    }

    /// Open `at`'s queue and spawn its delivery task on the current node (a node's init):
    /// answers run their continuation, every other message goes to `handle`. Replaces the queue
    /// of an earlier incarnation of the node (its messages are lost).
    pub fn serve(self: &Arc<Self>, at: IpAddr, handle: impl FnMut(Delivery) + Send + 'static) {
        let incarnation = {
            let mut links = self.links();
            links.opened += 1;
            let incarnation = links.opened;
            match links.inboxes.get_mut(&at) {
                // Opened before the node ran: what was sent to it since is kept.
                Some(inbox) if inbox.incarnation == UNCLAIMED => inbox.incarnation = incarnation,
                _ => {
                    links.inboxes.insert(at, Inbox::new(incarnation));
                }
            }
            incarnation
        };
        let closer = CloseOnDrop {
            transport: Arc::clone(self),
            at,
            incarnation,
        };
        madsim::task::spawn(async move {
            closer.deliver(handle).await;
        });
    }

    /// Open `at`'s queue before its node runs (when the node is created): messages sent to it
    /// before its init has called [`QueueTransport::serve`] wait for it, as on madsim's network,
    /// whose 1 ms send delay lets every node of a run bind before the first message lands.
    pub fn open(&self, at: IpAddr) {
        self.links().inboxes.entry(at).or_insert_with(|| Inbox::new(UNCLAIMED));
    }

    /// The messages of `at`'s queue (incarnation `incarnation`) due now, in order, into `due`;
    /// `false` once that queue is gone. With none due, sets a timer for the earliest and
    /// returns `Pending`.
    fn poll_due(&self, at: IpAddr, incarnation: u64, cx: &mut Context<'_>, due: &mut Vec<Delivery>) -> Poll<bool> {
        let mut links = self.links();
        let Some(inbox) = links
            .inboxes
            .get_mut(&at)
            .filter(|inbox| inbox.incarnation == incarnation)
        else {
            return Poll::Ready(false);
        };
        if !inbox.waker.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
            inbox.waker = Some(cx.waker().clone());
        }
        let now = self.now();
        if inbox.wake_at.is_some_and(|at| at <= now) {
            inbox.wake_at = None;
        }
        while let Some(entry) = inbox.waiting.first_entry() {
            if entry.key().0 > now {
                break;
            }
            due.push(entry.remove());
        }
        if !due.is_empty() {
            return Poll::Ready(true);
        }
        if let Some(&(head, _)) = inbox.waiting.keys().next() {
            if inbox.wake_at.is_none_or(|at| at > head) {
                inbox.wake_at = Some(set_timer(&self.time, cx.waker(), head));
            }
        }
        Poll::Pending
    }

    /// Drop every message over the one-way link `from` -> `to` (`clog` false: carry them again).
    pub fn clog_link(&self, from: IpAddr, to: IpAddr, clog: bool) {
        let mut links = self.links();
        if clog {
            links.clogged.insert((from, to));
        } else {
            links.clogged.remove(&(from, to));
        }
    }

    /// Cut `node` off from every other node (`isolate` false: reconnect it).
    pub fn isolate(&self, node: IpAddr, isolate: bool) {
        let mut links = self.links();
        if isolate {
            links.isolated.insert(node);
        } else {
            links.isolated.remove(&node);
        }
    }

    /// Lose each message sent from now on with probability `rate` (0 to 1).
    pub fn set_loss_rate(&self, rate: f64) {
        debug_assert!((0.0..=1.0).contains(&rate), "a probability");
        self.links().loss_rate = rate.clamp(0.0, 1.0);
    }

    /// Messages this transport queued for delivery (the simulator's unit of work).
    pub fn carried(&self) -> u64 {
        self.links().carried
    }

    /// Messages dropped because a queue held [`MAX_WAITING_MESSAGES`].
    pub fn over_limit(&self) -> u64 {
        self.links().over_limit
    }
}

/// A node's delivery task: it owns the node's queue, which closes when the task is dropped (the
/// node killed, or the run over): messages in flight to a dead node are lost, not kept.
struct CloseOnDrop {
    transport: Arc<QueueTransport>,
    at: IpAddr,
    incarnation: u64,
}

impl CloseOnDrop {
    async fn deliver(&self, mut handle: impl FnMut(Delivery)) {
        let mut due = Vec::new();
        loop {
            let open =
                std::future::poll_fn(|cx| self.transport.poll_due(self.at, self.incarnation, cx, &mut due)).await;
            if !open {
                return;
            }
            for message in due.drain(..) {
                match message {
                    Delivery::Answer(continuation) => continuation(),
                    request => handle(request),
                }
            }
        }
    }
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        let mut links = self.transport.links();
        if links
            .inboxes
            .get(&self.at)
            .is_some_and(|inbox| inbox.incarnation == self.incarnation)
        {
            links.inboxes.remove(&self.at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 4] = [10, 98, 0, 1];
    const B: [u8; 4] = [10, 98, 0, 2];

    /// What arrived at B: the row names of the writes, with when.
    type Arrivals = Arc<Mutex<Vec<(String, Duration)>>>;

    fn write(row: &str) -> Delivery {
        Delivery::Apply {
            row: row.to_owned(),
            versions: Vec::new(),
            ack: Reply::new(A.into(), |()| {}),
        }
    }

    /// Run `script` on node A against a receiver B that records what it gets; B can be killed
    /// and restarted by the script through the handle and B's node id.
    fn with_two_nodes<F, Fut>(script: F) -> (Vec<(String, Duration)>, u64)
    where
        F: FnOnce(Arc<QueueTransport>, madsim::runtime::Handle, madsim::task::NodeId) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        runtime.block_on(async move {
            let handle = madsim::runtime::Handle::current();
            let transport = QueueTransport::new(Some((1_000, 2_000)));
            let arrivals: Arrivals = Arc::default();
            let started = Instant::now();
            let (on_b, seen) = (Arc::clone(&transport), Arc::clone(&arrivals));
            let b = handle
                .create_node()
                .name("b")
                .ip(B.into())
                .init(move || {
                    let (transport, seen) = (Arc::clone(&on_b), Arc::clone(&seen));
                    async move {
                        transport.serve(B.into(), move |delivery| {
                            if let Delivery::Apply { row, .. } = delivery {
                                seen.lock().unwrap().push((row, started.elapsed()));
                            }
                        });
                        std::future::pending::<()>().await;
                    }
                })
                .build();
            let a = handle.create_node().name("a").ip(A.into()).build();
            let on_a = Arc::clone(&transport);
            a.spawn(async move {
                // B's queue opens in its init.
                tokio::time::sleep(Duration::from_millis(1)).await;
                script(on_a, handle, b.id()).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
            })
            .await
            .expect("the script ran");
            let seen = arrivals.lock().unwrap().clone();
            (seen, transport.carried())
        })
    }

    /// A message arrives after its latency plus madsim's 2 ms; a clogged link, an isolated
    /// node and a loss rate of 1 drop it, and undoing each carries messages again.
    #[test]
    fn faults_drop_messages_and_healing_carries_them_again() {
        let (seen, carried) = with_two_nodes(|transport, _, _| async move {
            let (a, b) = (IpAddr::from(A), IpAddr::from(B));
            transport.send(a, b, write("plain"));
            tokio::time::sleep(Duration::from_millis(10)).await;
            transport.clog_link(a, b, true);
            transport.send(a, b, write("clogged"));
            transport.send(b, b, write("other link"));
            transport.clog_link(a, b, false);
            transport.isolate(b, true);
            transport.send(a, b, write("isolated"));
            transport.isolate(b, false);
            transport.set_loss_rate(1.0);
            transport.send(a, b, write("lost"));
            transport.set_loss_rate(0.0);
            transport.send(a, b, write("healed"));
            transport.send(a, "10.98.0.9".parse().unwrap(), write("nobody there"));
        });
        // Sent at the same instant, the last two arrive in the order of their latencies.
        let mut rows: Vec<&str> = seen.iter().map(|(row, _)| row.as_str()).collect();
        rows.sort_unstable();
        assert_eq!(rows, ["healed", "other link", "plain"]);
        assert_eq!(carried, 3);
        // 1 ms after the start, 2 ms of madsim's cost and 1..2 ms of latency (madsim's
        // timers round up to the next millisecond).
        let first = seen.iter().find(|(row, _)| row == "plain").expect("arrived").1;
        assert!(
            (Duration::from_millis(4)..=Duration::from_millis(6)).contains(&first),
            "{first:?}"
        );
    }

    /// Messages are delivered in the order they are due, ties in the order sent.
    #[test]
    fn messages_arrive_in_due_order() {
        let (seen, _) = with_two_nodes(|transport, _, _| async move {
            for n in 0..50 {
                transport.send(A.into(), B.into(), write(&n.to_string()));
            }
        });
        assert_eq!(seen.len(), 50);
        assert!(seen.windows(2).all(|pair| pair[0].1 <= pair[1].1), "{seen:?}");
    }

    /// Messages in flight to a node that is killed are lost; once it restarts (its init opens a
    /// new queue) it receives again.
    #[test]
    fn a_killed_node_loses_its_messages_in_flight_and_a_restarted_one_receives() {
        let (seen, _) = with_two_nodes(|transport, handle, b| async move {
            transport.send(A.into(), B.into(), write("in flight at the kill"));
            handle.kill(b);
            tokio::time::sleep(Duration::from_millis(10)).await;
            transport.send(A.into(), B.into(), write("to a dead node"));
            handle.restart(b);
            tokio::time::sleep(Duration::from_millis(1)).await;
            transport.send(A.into(), B.into(), write("after the restart"));
        });
        let rows: Vec<&str> = seen.iter().map(|(row, _)| row.as_str()).collect();
        assert_eq!(rows, ["after the restart"]);
    }

    /// A queue opened before its node runs keeps what is sent to it until the node serves;
    /// without `open`, such a message finds no queue and is lost.
    #[test]
    fn an_opened_queue_keeps_messages_sent_before_its_node_serves() {
        for open in [true, false] {
            let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
            let arrived = runtime.block_on(async move {
                let transport = QueueTransport::new(None);
                if open {
                    transport.open(B.into());
                }
                transport.send(A.into(), B.into(), write("early"));
                tokio::time::sleep(Duration::from_millis(20)).await;
                let seen: Arrivals = Arc::default();
                let (on_b, into) = (Arc::clone(&transport), Arc::clone(&seen));
                let handle = madsim::runtime::Handle::current();
                handle
                    .create_node()
                    .name("b")
                    .ip(B.into())
                    .init(move || {
                        let (transport, into) = (Arc::clone(&on_b), Arc::clone(&into));
                        async move {
                            transport.serve(B.into(), move |delivery| {
                                if let Delivery::Apply { row, .. } = delivery {
                                    into.lock().unwrap().push((row, Duration::ZERO));
                                }
                            });
                            // A node whose init returns has exited, its tasks with it.
                            std::future::pending::<()>().await;
                        }
                    })
                    .build();
                tokio::time::sleep(Duration::from_millis(20)).await;
                let rows: Vec<String> = seen.lock().unwrap().iter().map(|(row, _)| row.clone()).collect();
                rows
            });
            assert_eq!(
                arrived,
                if open { vec!["early".to_owned()] } else { Vec::new() },
                "open: {open}"
            );
        }
    }
}
