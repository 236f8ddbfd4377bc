//! A run of client programs: start N copies, wait for every hello, then let each take the lock
//! again and again (ask, hold, write its token to the resource, release), a holder paused on
//! plan (`faults.rs`), and write down everything as an event record for the one judge. Once
//! every copy is done, and before any exits, one more copy started with them (the next caller)
//! asks for the lock: whether it gets it judges C-free and C-release (`judge/src/next_caller.rs`).
//!
//! The resource is cassalock's own, in this process: a write carries the holder's token; with
//! fencing tokens it refuses one below the highest it accepted (unless fencing is off); with
//! tokens that order nothing, it orders writes by their acquisitions (the holder's clock when
//! its library returned the lock) and can only count a stale write, not refuse it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use cassalock_judge::event::{
    self as record, Call, Disruption, Event, NextCallerGot, NotAcquired, ReleaseOutcome, What,
};

use super::faults::run_command;
pub use super::faults::{Halt, Pause, Paused, ServerFault, SERVER_FAULT_LIMIT, WAITER_SEARCH};
use super::process::{ClientFault, ClientProcess};
use super::protocol::{self, Answer, Broken, Command, Hello, Released, Tokens};
use super::proxy::{self, Proxies};
use super::server_reading::{ReaderError, Reading, ServerReader, ServerReading};
use crate::now_us;

mod faults_fired;
mod next_caller;
use next_caller::ask_next_caller;
pub use next_caller::DEFAULT_NEXT_CALLER_WAIT_MS;
mod resource;
use resource::{Order, PipesMayClose, Resource};

/// The lock every client of a run takes (its record's events name it).
const LOCK: &str = "the run's lock";
/// How far a client's clock may read from cassalock's before its answers are refused: its
/// clock must be this machine's wall clock, in microseconds.
pub const CLOCK_SLACK: Duration = Duration::from_secs(5);
/// Clients one run starts, at most.
pub const MAX_CLIENTS: usize = 64;
/// Acquisitions of all clients together, at most (the record stays under a few hundred MB).
pub const MAX_ACQUISITIONS: u64 = 200_000;
/// `lost` lines one client may print in a run before it is taken to have broken the protocol.
pub const MAX_LOST_NOTICES: u64 = 1000;
/// How long a client has to exit after `exit` before its process group is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// The next caller's node in the record, and its name in its environment.
pub const NEXT_CALLER: &str = "next";
/// The longest wait a next caller may be given (`--next-caller-wait-ms`).
pub const NEXT_CALLER_WAIT_MAX_MS: u64 = 60_000;

/// What a run does.
#[derive(Clone, Debug)]
pub struct ClientSpec {
    /// The program, run through `/bin/sh -c`.
    pub command: String,
    pub clients: usize,
    /// Per client.
    pub acquisitions: u32,
    pub call: Call,
    /// `try_lock`'s wait.
    pub try_wait_ms: u64,
    /// The lease each acquisition asks for; none: the library's default.
    pub lease_ms: Option<u64>,
    pub hold_ms: u64,
    /// The longest cassalock waits for one answer (a `lock` call waits this long at most).
    pub max_wait: Duration,
    /// The longest cassalock waits for a client's hello after starting it.
    pub start_timeout: Duration,
    /// Stop starting acquisitions after this long (none: run them all).
    pub run_limit: Option<Duration>,
    /// The resource refuses a fencing token below the highest it accepted.
    pub fencing: bool,
    pub pause: Option<Pause>,
    pub server_fault: Option<ServerFault>,
    /// Server addresses, as the command names them, that each client reaches through
    /// forwarders of its own (`proxy.rs`), which a cut-off [`Pause`] cuts.
    pub proxy: Vec<String>,
    /// The name the clients lock (`CASSALOCK_LOCK` in their environment).
    pub lock_name: String,
    /// The next caller's `try_lock` wait, once the others are done (none: no next caller).
    pub next_caller_wait_ms: Option<u64>,
    /// Read the lock's servers as each hold begins and before each release (T1-server).
    pub server_reading: Option<ServerReading>,
}

/// A spec the runner refuses, in a sentence naming the flag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadClientSpec(pub String);

/// Check a spec before anything starts.
pub fn check(spec: &ClientSpec) -> Result<(), BadClientSpec> {
    let refuse = |why: String| Err(BadClientSpec(why));
    if spec.command.trim().is_empty() {
        return refuse("--client needs a command: the program and its arguments, as one string".into());
    }
    if spec.clients == 0 || spec.clients > MAX_CLIENTS {
        return refuse(format!(
            "--threads {} with --client: copies of the client, 1-{MAX_CLIENTS}",
            spec.clients
        ));
    }
    let total = spec.clients as u64 * u64::from(spec.acquisitions);
    if spec.acquisitions == 0 || total > MAX_ACQUISITIONS {
        return refuse(format!(
            "--acquisitions {} x --threads {} = {total} acquisitions: 1-{MAX_ACQUISITIONS} in all with --client",
            spec.acquisitions, spec.clients
        ));
    }
    if let Some(lease) = spec.lease_ms {
        if !(1..=3_600_000).contains(&lease) {
            return refuse(format!("--lease-ms {lease}: 1-3600000"));
        }
    }
    if spec.hold_ms > 60_000 {
        return refuse(format!("--hold-ms {}: 0-60000", spec.hold_ms));
    }
    if !(1..=3_600_000).contains(&spec.try_wait_ms) {
        return refuse(format!("--try-wait-ms {}: 1-3600000", spec.try_wait_ms));
    }
    proxy::check(&spec.proxy, &spec.command).map_err(|bad| BadClientSpec(bad.to_string()))?;
    if let Some(reading) = &spec.server_reading {
        reading.check()?;
    }
    if let Some(pause) = spec.pause {
        if pause.how == Halt::CutOff && spec.proxy.is_empty() {
            return refuse(format!(
                "{} needs --proxy: the server addresses in the --client command whose connections cassalock carries and can cut",
                pause.flag()
            ));
        }
        if !(1..=600_000).contains(&pause.ms) {
            return refuse(format!("{} {}: 1-600000", pause.flag(), pause.ms));
        }
        if u128::from(pause.ms) >= spec.max_wait.as_millis() {
            return refuse(format!(
                "{} {} is not below --max-wait-ms {}: the paused client's answer would come after cassalock stopped waiting for it",
                pause.flag(),
                pause.ms,
                spec.max_wait.as_millis()
            ));
        }
        if pause.whom == Paused::Waiter && spec.clients < 2 {
            return refuse(format!("{} needs a waiter: --threads 2 or more", pause.flag()));
        }
        if pause.at_acquisition == 0 || pause.at_acquisition > total {
            return refuse(format!(
                "--pause-at {}: an acquisition of the run, 1-{total}",
                pause.at_acquisition
            ));
        }
    }
    if let Some(wait) = spec.next_caller_wait_ms {
        if !(1..=NEXT_CALLER_WAIT_MAX_MS).contains(&wait) {
            return refuse(format!(
                "--next-caller-wait-ms {wait}: 1-{NEXT_CALLER_WAIT_MAX_MS}, or 0 for no next caller"
            ));
        }
    }
    if let Some(fault) = &spec.server_fault {
        if fault.command.trim().is_empty() {
            return refuse("--server-fault needs a command".into());
        }
        if fault.at_acquisition == 0 || fault.at_acquisition > total {
            return refuse(format!(
                "--server-fault-at {}: an acquisition of the run, 1-{total}",
                fault.at_acquisition
            ));
        }
        if fault.ms > 600_000 {
            return refuse(format!("--server-fault-ms {}: 0-600000", fault.ms));
        }
        proxy::check_moves(&fault.moves, &spec.proxy).map_err(|bad| BadClientSpec(bad.to_string()))?;
    }
    Ok(())
}

/// What a run found.
#[derive(Debug)]
pub struct ClientRun {
    /// The clients' hello (all said the same), if they said one.
    pub hello: Option<Hello>,
    /// Everything that happened, for the judge.
    pub record: record::Record,
    /// The clients that broke the protocol, exited or went silent: the run is cut short and
    /// no claim holds on its account.
    pub faults: Vec<ClientFault>,
    /// What the libraries answered at release, by outcome and text, with counts.
    pub told_at_release: BTreeMap<(String, String), u64>,
    /// Acquisitions made.
    pub acquisitions: u64,
    /// The planned pause fired (false: the run ended before its acquisition).
    pub paused: bool,
    /// The server fault's command ran and succeeded (and its undo, if any).
    pub server_fault_fired: bool,
    /// Connections the forwarders closed at once, over their limit
    /// ([`proxy::MAX_CONNECTIONS`] per client): a run with any is not the one planned.
    pub proxy_refused: u64,
    /// When the first client that broke was stopped (on the record's clock): what the judge
    /// finds from there on may be cassalock's doing (a holder killed), not the lock's.
    pub cut_at_ns: Option<u64>,
    /// Clients that did not exit within the grace after `exit` and were killed.
    pub killed_at_exit: usize,
    /// With a server reading: readings made, and how many failed (nothing known then).
    pub server_readings: Option<(u64, u64)>,
    pub elapsed: Duration,
}

/// What the client threads share.
struct Shared {
    spec: ClientSpec,
    tokens: Tokens,
    events: Mutex<Vec<Event>>,
    resource: Mutex<Resource>,
    acquisitions: AtomicU64,
    stop: AtomicBool,
    /// The planned pause fired.
    paused: AtomicBool,
    /// The server fault's command ran and succeeded.
    server_fault_fired: AtomicBool,
    /// The planned pause was due and could not fire (said in the record already).
    pause_unfired: AtomicBool,
    /// The clients waiting in a `lock` call now: their index and process id.
    waiting: Mutex<BTreeMap<usize, u32>>,
    /// Each client's forwarders to its servers, by index (the next caller's last); empty
    /// without `--proxy`.
    proxies: Vec<Proxies>,
    told: Mutex<BTreeMap<(String, String), u64>>,
    /// Reads the lock's servers, with a server reading.
    reader: Option<ServerReader>,
    started: Instant,
}

impl Shared {
    fn waiting(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, u32>> {
        self.waiting.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, at_us: u64, node: &str, clock_us: Option<u64>, what: What) {
        let event = Event {
            at_ns: at_us.saturating_mul(1000),
            node: node.to_owned(),
            clock_us,
            what,
        };
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(event);
    }
}

/// Run the clients of `spec` (checked by [`check`]); with a server reading, its servers must
/// answer first.
pub fn run(spec: &ClientSpec) -> Result<ClientRun, ReaderError> {
    let reader = spec
        .server_reading
        .as_ref()
        .map(|reading| ServerReader::connect(reading, &spec.lock_name))
        .transpose()?;
    let _pipes = PipesMayClose::new();
    let started = Instant::now();
    let (proxies, mut faults) = start_proxies(spec);
    let (mut processes, started_faults) = if faults.is_empty() {
        start_clients(spec, &proxies)
    } else {
        (Vec::new(), Vec::new())
    };
    faults.extend(started_faults);
    let hello = hellos(spec, &mut processes, &mut faults);
    let tokens = hello.as_ref().map_or(Tokens::Random, |hello| hello.tokens);
    let shared = Arc::new(Shared {
        spec: spec.clone(),
        tokens,
        events: Mutex::new(Vec::new()),
        resource: Mutex::new(Resource::default()),
        acquisitions: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        paused: AtomicBool::new(false),
        server_fault_fired: AtomicBool::new(false),
        pause_unfired: AtomicBool::new(false),
        waiting: Mutex::new(BTreeMap::new()),
        proxies,
        told: Mutex::new(BTreeMap::new()),
        reader,
        started,
    });
    let next_caller = match spec.next_caller_wait_ms {
        Some(_) if processes.len() == spec.clients + 1 => processes.pop(),
        _ => None,
    };
    // A client that broke before the run began: nothing runs, and every process is killed
    // (dropped) without an `exit` it might not read.
    let mut done = if faults.is_empty() {
        take_turns_all(&shared, processes, &mut faults)
    } else {
        Vec::new()
    };
    if let Some(mut next) = next_caller.filter(|_| faults.is_empty()) {
        if !shared.stop.load(Ordering::Relaxed) {
            if let Err(fault) = ask_next_caller(&shared, &mut next) {
                faults.push(fault);
            }
        }
        done.push(next);
    }
    let killed_at_exit = exit_all(done);
    let elapsed = started.elapsed();
    let shared = Arc::into_inner(shared).expect("every client thread has ended");
    let acquisitions = shared.acquisitions.load(Ordering::Relaxed);
    let paused = shared.paused.load(Ordering::Relaxed);
    let proxy_refused = shared.proxies.iter().map(Proxies::refused).sum();
    drop(shared.proxies);
    let server_fault_fired = shared.server_fault_fired.load(Ordering::Relaxed);
    let settled = paused || shared.pause_unfired.load(Ordering::Relaxed);
    let mut events = shared
        .events
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(pause) = spec.pause.filter(|_| !settled) {
        events.push(Event {
            at_ns: now_us().saturating_mul(1000),
            node: "faults".into(),
            clock_us: None,
            what: What::FaultUnfired {
                text: format!(
                    "a pause at acquisition {} for {} ms: the run made only {acquisitions} acquisitions",
                    pause.at_acquisition, pause.ms,
                ),
            },
        });
    }
    events.sort_by_key(|event| event.at_ns);
    let cut_at_ns = events
        .iter()
        .find(|event| {
            matches!(
                event.what,
                What::Fault {
                    disruption: Some(Disruption::Killed),
                    ..
                }
            )
        })
        .map(|event| event.at_ns);
    let header = header(spec, hello.as_ref(), tokens, &events);
    Ok(ClientRun {
        hello,
        record: record::Record { header, events },
        faults,
        told_at_release: shared
            .told
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
        acquisitions,
        paused,
        server_fault_fired,
        proxy_refused,
        cut_at_ns,
        killed_at_exit,
        server_readings: shared.reader.as_ref().map(ServerReader::counts),
        elapsed,
    })
}

/// The names of the run's client programs, in index order: the next caller's last.
fn client_names(spec: &ClientSpec) -> impl Iterator<Item = String> {
    let next = spec.next_caller_wait_ms.map(|_| NEXT_CALLER.to_owned());
    (0..spec.clients).map(|index| format!("c{index}")).chain(next)
}

/// Each client's forwarders, with `--proxy`; a forwarder that could not start is a fault.
fn start_proxies(spec: &ClientSpec) -> (Vec<Proxies>, Vec<ClientFault>) {
    if spec.proxy.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let mut proxies = Vec::new();
    for name in client_names(spec) {
        match Proxies::start(&name, &spec.proxy) {
            Ok(started) => proxies.push(started),
            Err(error) => {
                let fault = ClientFault::Start {
                    client: name,
                    command: format!("its forwarders to {}", spec.proxy.join(", ")),
                    error,
                };
                return (proxies, vec![fault]);
            }
        }
    }
    (proxies, Vec::new())
}

/// Start every copy of the client program (through its forwarders' addresses, with
/// `--proxy`); those that could not start are faults.
fn start_clients(spec: &ClientSpec, proxies: &[Proxies]) -> (Vec<ClientProcess>, Vec<ClientFault>) {
    let mut faults = Vec::new();
    let mut processes = Vec::new();
    for (index, name) in client_names(spec).enumerate() {
        let command = proxies.get(index).map_or_else(
            || spec.command.clone(),
            |own| proxy::substitute(&spec.command, own.pairs()),
        );
        let env = [
            ("CASSALOCK_LOCK", spec.lock_name.clone()),
            ("CASSALOCK_CLIENT", name.clone()),
            ("CASSALOCK_PROTOCOL_VERSION", protocol::VERSION.to_string()),
        ];
        match ClientProcess::start(&name, &command, &env) {
            Ok(process) => processes.push(process),
            Err(fault) => faults.push(fault),
        }
    }
    (processes, faults)
}

/// Every hello before any command: a client that starts slowly (a JVM) must not find the
/// others' run half over. The first hello; a client that says another is a fault.
fn hellos(spec: &ClientSpec, processes: &mut [ClientProcess], faults: &mut Vec<ClientFault>) -> Option<Hello> {
    let hello_deadline = Instant::now() + spec.start_timeout;
    let mut hello: Option<Hello> = None;
    for process in processes {
        if !faults.is_empty() {
            break;
        }
        match process.hello(hello_deadline) {
            Ok(said) => match &hello {
                Some(first) if !same_library(first, &said) => {
                    let line = process.last_line();
                    faults.push(process.broke(Broken::new(
                        line,
                        format!(
                            "says {} {} {} with {:?} tokens, while c0 said {} {} {} with {:?} tokens",
                            said.library,
                            said.library_version,
                            said.lock,
                            said.tokens,
                            first.library,
                            first.library_version,
                            first.lock,
                            first.tokens
                        ),
                        "(its hello)",
                    )));
                }
                Some(_) => {}
                None => hello = Some(said),
            },
            Err(fault) => faults.push(fault),
        }
    }
    hello
}

/// A thread per client taking turns until the run ends; the processes of those that ended
/// well, still running (they exit together, after the next caller).
fn take_turns_all(
    shared: &Arc<Shared>,
    processes: Vec<ClientProcess>,
    faults: &mut Vec<ClientFault>,
) -> Vec<ClientProcess> {
    let workers: Vec<_> = processes
        .into_iter()
        .enumerate()
        .map(|(index, process)| {
            let shared = Arc::clone(shared);
            thread::Builder::new()
                .name(format!("client-{index}"))
                .spawn(move || take_turns(&shared, index, process))
                .expect("a client thread starts")
        })
        .collect();
    let mut done = Vec::new();
    for worker in workers {
        match worker.join().expect("a client thread does not panic") {
            Ok(process) => done.push(process),
            Err(fault) => faults.push(*fault),
        }
    }
    done
}

/// Say `exit` to every process and give each [`EXIT_GRACE`] to end, together; how many had to
/// be killed.
fn exit_all(processes: Vec<ClientProcess>) -> usize {
    let exiting: Vec<_> = processes
        .into_iter()
        .map(|mut process| {
            thread::spawn(move || {
                let said_exit = process.send(&Command::Exit).is_ok();
                said_exit && process.finish(EXIT_GRACE)
            })
        })
        .collect();
    exiting
        .into_iter()
        .map(|exiting| exiting.join().unwrap_or(false))
        .filter(|exited| !exited)
        .count()
}

/// The run's record header: the library as its hello named it, judged with the observed rules
/// (fenced where the tokens grow and fencing is on).
fn header(spec: &ClientSpec, hello: Option<&Hello>, tokens: Tokens, events: &[Event]) -> record::Header {
    let end_ns = events.last().map_or(0, |event| event.at_ns.saturating_add(1));
    let lock = hello.map_or_else(
        || "a client that never said hello".to_owned(),
        |hello| format!("{} {} {}", hello.library, hello.library_version, hello.lock),
    );
    let mut header = record::Header::new(
        record::Driver::Real,
        lock,
        record::Clock::WallSinceEpoch,
        record::RunFacts {
            clients: spec.clients,
            end_ns,
            rules: record::Rules::Observed(record::ObservedRules {
                fencing: spec.fencing && tokens == Tokens::Fencing,
                lease_lost_ends_it: false,
                call_bound_ms: Some(u64::try_from(spec.max_wait.as_millis()).unwrap_or(u64::MAX)),
            }),
            name: Some(format!("{} x `{}`", spec.clients, spec.command)),
            ..record::RunFacts::default()
        },
    );
    header.replay = Some(format!("client program: {}", spec.command));
    header
}

fn same_library(a: &Hello, b: &Hello) -> bool {
    (&a.library, &a.library_version, &a.lock, a.tokens) == (&b.library, &b.library_version, &b.lock, b.tokens)
}

/// One client's turns at the lock, until its acquisitions are made, the run's limit passes, or
/// another client broke: its process, still running, or what it broke.
fn take_turns(shared: &Shared, index: usize, mut process: ClientProcess) -> Result<ClientProcess, Box<ClientFault>> {
    let mut client = Client {
        shared,
        index,
        name: format!("c{index}"),
        next_id: 0,
        thread: None,
        lost_notices: 0,
    };
    for acquisition in 1..=shared.spec.acquisitions {
        let over = shared
            .spec
            .run_limit
            .is_some_and(|limit| shared.started.elapsed() >= limit);
        if over || shared.stop.load(Ordering::Relaxed) {
            break;
        }
        if let Err(fault) = client.turn(&mut process, acquisition) {
            shared.stop.store(true, Ordering::Relaxed);
            // From the moment it broke, what it does is unknown: its belief ends there (its
            // process is killed now, if it has not died already), and the run is cut.
            let cut_us = process.last_heard_us();
            drop(process);
            let text = match &fault {
                ClientFault::Exited { status, .. } => format!("{}'s process exited ({status})", client.name),
                _ => format!(
                    "{} broke the protocol or went silent: cassalock stopped listening and killed it",
                    client.name
                ),
            };
            shared.push(
                cut_us,
                "faults",
                None,
                What::Fault {
                    text,
                    target: Some(client.name.clone()),
                    disruption: Some(Disruption::Killed),
                    begins: true,
                    at_step: false,
                },
            );
            return Err(Box::new(fault));
        }
    }
    Ok(process)
}

/// A client's state between its answers.
struct Client<'a> {
    shared: &'a Shared,
    index: usize,
    name: String,
    next_id: u64,
    /// The acquisition it holds or last held (`c2-7`).
    thread: Option<String>,
    /// `lost` lines it printed: at most [`MAX_LOST_NOTICES`], so that a client repeating one
    /// cannot grow the record without bound while a command is outstanding.
    lost_notices: u64,
}

impl Client<'_> {
    /// One acquisition: ask, hold, write, release.
    fn turn(&mut self, process: &mut ClientProcess, acquisition: u32) -> Result<(), ClientFault> {
        let thread = format!("{}-{acquisition}", self.name);
        let Some(acquired_us) = self.ask(process, acquisition, &thread)? else {
            return Ok(());
        };
        self.hold_and_write(process, acquired_us)?;
        self.release(process, thread)
    }

    /// Ask for the lock as the run calls it: the client's clock when it was acquired, or none
    /// when the call ended without it.
    fn ask(&mut self, process: &mut ClientProcess, acquisition: u32, thread: &str) -> Result<Option<u64>, ClientFault> {
        let spec = &self.shared.spec;
        let id = self.id();
        let (command, call) = match spec.call {
            Call::Lock => (
                Command::Lock {
                    id,
                    lease_ms: spec.lease_ms,
                },
                Call::Lock,
            ),
            Call::TryLock => (
                Command::TryLock {
                    id,
                    wait_ms: spec.try_wait_ms,
                    lease_ms: spec.lease_ms,
                },
                Call::TryLock,
            ),
        };
        self.shared.push(
            now_us(),
            &self.name,
            None,
            What::Invoke {
                client: self.name.clone(),
                call,
                acquisition,
            },
        );
        self.shared.waiting().insert(self.index, process.pid());
        process.send(&command)?;
        let answer = self.answer(process, &command);
        self.shared.waiting().remove(&self.index);
        if let Err(ClientFault::Silent { waited_ms, .. }) = &answer {
            self.shared.push(
                now_us(),
                &self.name,
                None,
                What::Unanswered {
                    client: self.name.clone(),
                    call,
                    waited_ms: *waited_ms,
                },
            );
        }
        let acquired_us = match answer? {
            Answer::Acquired {
                token,
                valid_until_us,
                clock_us,
                ..
            } => {
                self.thread = Some(thread.to_owned());
                self.shared.push(
                    clock_us,
                    &self.name,
                    Some(clock_us),
                    What::Acquired {
                        thread: thread.to_owned(),
                        lock: LOCK.into(),
                        token: token.clone(),
                        valid_until_us,
                        valid_until_at_ns: valid_until_us.map(|us| us.saturating_mul(1000)),
                    },
                );
                self.read_server();
                clock_us
            }
            Answer::NotAcquired { why, clock_us, .. } => {
                self.not_acquired(thread, clock_us, NotAcquired::TimedOut, why);
                return Ok(None);
            }
            Answer::Failed { error, clock_us, .. } => {
                self.not_acquired(thread, clock_us, NotAcquired::Failed, error);
                return Ok(None);
            }
            other => return Err(self.unexpected(process, &command, &other)),
        };
        Ok(Some(acquired_us))
    }

    /// Hold the lock: the run's fault at its acquisition, the hold, a write to the resource.
    fn hold_and_write(&mut self, process: &mut ClientProcess, acquired_us: u64) -> Result<(), ClientFault> {
        let spec = &self.shared.spec;
        let order = self.shared.acquisitions.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(pause) = spec.pause.filter(|pause| pause.at_acquisition == order) {
            match pause.whom {
                Paused::Holder => self.pause(&self.name, self.index, process.pid(), "while it holds", pause.ms),
                Paused::Waiter => self.pause_a_waiter(order, pause.ms),
            }
        }
        if let Some(fault) = spec.server_fault.as_ref().filter(|fault| fault.at_acquisition == order) {
            self.server_fault(fault);
        }
        thread::sleep(Duration::from_millis(spec.hold_ms));
        let write = Command::Write { id: self.id() };
        process.send(&write)?;
        match self.answer(process, &write)? {
            Answer::Written {
                token: said, clock_us, ..
            } => {
                self.write(process, &said, acquired_us, clock_us)?;
            }
            Answer::Failed { error, clock_us, .. } => self.shared.push(
                clock_us,
                &self.name,
                Some(clock_us),
                What::CallFailed {
                    client: self.name.clone(),
                    error: format!("write: {}", protocol::cut(&error)),
                },
            ),
            other => return Err(self.unexpected(process, &write, &other)),
        }
        Ok(())
    }

    /// Release the lock: `releasing` before the library's call, `released` with its answer.
    fn release(&mut self, process: &mut ClientProcess, thread: String) -> Result<(), ClientFault> {
        self.read_server();
        let unlock = Command::Unlock { id: self.id() };
        process.send(&unlock)?;
        match self.answer(process, &unlock)? {
            Answer::Releasing { clock_us, .. } => self.shared.push(
                clock_us,
                &self.name,
                Some(clock_us),
                What::Releasing {
                    thread: thread.clone(),
                    lock: LOCK.into(),
                },
            ),
            other => return Err(self.unexpected(process, &unlock, &other)),
        }
        match self.answer(process, &unlock)? {
            Answer::Released {
                outcome,
                error,
                clock_us,
                ..
            } => {
                let why = error.as_deref().map(protocol::cut).unwrap_or_default();
                // One line in the counts (a library may join one error per server).
                let said = why.split_whitespace().collect::<Vec<_>>().join(" ");
                *self
                    .shared
                    .told
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .entry((released_name(outcome).to_owned(), said))
                    .or_default() += 1;
                self.shared.push(
                    clock_us,
                    &self.name,
                    Some(clock_us),
                    What::Released {
                        thread,
                        lock: LOCK.into(),
                        outcome: match outcome {
                            Released::Released => ReleaseOutcome::Released,
                            Released::NotHeld => ReleaseOutcome::NotHeld,
                            Released::Failed => ReleaseOutcome::Failed,
                        },
                        why,
                    },
                );
            }
            other => return Err(self.unexpected(process, &unlock, &other)),
        }
        Ok(())
    }

    /// With a server reading: who the servers name now, as a `server_holder` event; a failed
    /// reading as a note (nothing is known then, and no claim counts it).
    fn read_server(&self) {
        let Some(reader) = &self.shared.reader else {
            return;
        };
        match reader.read() {
            Reading::Named(holder) => self.shared.push(
                now_us(),
                &self.name,
                None,
                What::ServerHolder {
                    lock: LOCK.into(),
                    holder,
                    threads: Vec::new(),
                    // Each reading is judged at its own instant: no expiry is projected past it.
                    gone_at_ns: None,
                },
            ),
            Reading::Failed(why) => self.shared.push(
                now_us(),
                "server-reader",
                None,
                What::Note {
                    text: format!("a reading of the servers for {} failed: {why}", self.name),
                },
            ),
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The final answer to `command`, recording every `lost` said before it; an answer to
    /// another command, or a clock that is not this machine's, breaks the protocol.
    fn answer(&mut self, process: &mut ClientProcess, command: &Command) -> Result<Answer, ClientFault> {
        let asked = Instant::now();
        let deadline = asked + self.shared.spec.max_wait;
        let waiting_for = format!("`{}` (id {})", command.name(), command.id().unwrap_or(0));
        loop {
            let answer = process.answer(asked, deadline, &waiting_for)?;
            // Against when its line came out of the pipe, not now: an unasked line waits.
            let ours_us = process.last_heard_us();
            let off_us = answer.clock_us().abs_diff(ours_us);
            if off_us > CLOCK_SLACK.as_micros() as u64 {
                let line = process.last_line();
                return Err(process.broke(Broken::new(
                    line,
                    format!(
                        "has clock_us {}, {:.1} s from this machine's clock ({ours_us}): clock_us is microseconds since the Unix epoch, read from the wall clock",
                        answer.clock_us(),
                        off_us as f64 / 1e6
                    ),
                    &format!("{answer:?}"),
                )));
            }
            match answer {
                Answer::Lost { .. } if self.lost_notices >= MAX_LOST_NOTICES => {
                    let line = process.last_line();
                    return Err(process.broke(Broken::new(
                        line,
                        format!("says `lost` more than {MAX_LOST_NOTICES} times: a library tells a holder once"),
                        &format!("{answer:?}"),
                    )));
                }
                Answer::Lost { why, clock_us } => {
                    self.lost_notices += 1;
                    self.shared.push(
                        clock_us,
                        &self.name,
                        Some(clock_us),
                        What::LeaseLost {
                            thread: self.thread.clone().unwrap_or_else(|| format!("{}-0", self.name)),
                            lock: LOCK.into(),
                            why: protocol::cut(&why),
                        },
                    );
                }
                answer if answer.id() == command.id() => return Ok(answer),
                other => return Err(self.unexpected(process, command, &other)),
            }
        }
    }

    fn unexpected(&self, process: &mut ClientProcess, command: &Command, answer: &Answer) -> ClientFault {
        let line = process.last_line();
        process.broke(Broken::new(
            line,
            format!(
                "answers `{}` (id {}) to `{}` (id {}), which it cannot",
                answer.name(),
                answer.id().map_or_else(|| "none".to_owned(), |id| id.to_string()),
                command.name(),
                command.id().unwrap_or(0)
            ),
            &format!("{answer:?}"),
        ))
    }

    fn not_acquired(&self, thread: &str, clock_us: u64, outcome: NotAcquired, why: String) {
        self.shared.push(
            clock_us,
            &self.name,
            Some(clock_us),
            What::NotAcquired {
                thread: thread.to_owned(),
                lock: LOCK.into(),
                outcome,
                left: None,
                why: protocol::cut(&why),
            },
        );
    }

    /// The resource takes a write with the token the holder said, `said`; it acquired at
    /// `acquired_us` on its clock.
    fn write(
        &self,
        process: &mut ClientProcess,
        said: &str,
        acquired_us: u64,
        clock_us: u64,
    ) -> Result<(), ClientFault> {
        let order = match self.shared.tokens {
            Tokens::Fencing => {
                match protocol::fencing_order(said) {
                    Some((digits, value)) => Order::Fencing(digits, value.to_owned()),
                    // The library returned the lock with no token to give (etcd's key already
                    // gone): below every token, so a fence takes it only before any other.
                    None if said.is_empty() => Order::Fencing(0, String::new()),
                    None => {
                        let line = process.last_line();
                        return Err(process.broke(Broken::new(
                        line,
                        format!("writes with token {said:?}, not a whole number, though its hello said its tokens fence"),
                        said,
                    )));
                    }
                }
            }
            Tokens::Random => Order::Acquired(acquired_us, self.index),
        };
        let fencing = self.shared.spec.fencing && self.shared.tokens == Tokens::Fencing;
        let (accepted, stale) = self
            .shared
            .resource
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .write(order, fencing);
        self.shared.push(
            clock_us,
            "resource",
            None,
            What::Write {
                client: Some(self.name.clone()),
                lock: Some(LOCK.into()),
                token: protocol::cut(said),
                phase: None,
                accepted: Some(accepted),
                stale: Some(stale),
                acquisition: None,
            },
        );
        Ok(())
    }
}

fn released_name(outcome: Released) -> &'static str {
    match outcome {
        Released::Released => "released",
        Released::NotHeld => "not held",
        Released::Failed => "failed",
    }
}

#[cfg(test)]
mod tests;
