//! `cassalock bench clients`: every client program of `clients/` (docs/client-protocol.md)
//! against the local servers, with no fault, with a client stopped past its lease, with a
//! holder cut off from its servers past it (`real --proxy`), with the lock's Redis restarted
//! and with a Redis pair failed over to a replica that lagged; each run judged and written
//! down. The report (`reports/real-clients.md`) sets each run beside what our model and
//! simulator of the same lock say.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use cassalock_judge::event::{Call, What};
use cassalock_judge::stats::percentile;
use cassalock_judge::{ClaimId, ClaimVerdict, Judgement};
use cassalock_real::client::run::{run as run_clients, ClientSpec, Halt, Pause, Paused, ServerFault};
use cassalock_real::client::server_reading::{ServerReading, READABLE};
use cassalock_report::real_clients::{ours, render, ClientFault, ClientRunRow, Overhead, Seen};

/// One program of the plan.
struct Program {
    /// Its file name in the record file names.
    slug: &'static str,
    /// Its command line, from the repository's root.
    command: &'static str,
    /// The file it runs (built by `clients/setup`).
    built: &'static str,
    /// The server it needs, and how to start it.
    server: (&'static str, &'static str),
    /// The lease each acquisition asks for (none: a session the program sets).
    lease_ms: Option<u64>,
    /// Long enough for its lease or session to run out: a pause, or a cut-off.
    pause_ms: u64,
    /// Each hold. A paused waiter's bogus acquisition comes a few ms after the fair one:
    /// holds of 300 ms make the two meet every time (20 ms: 4 runs of 6).
    hold_ms: u64,
    /// Our registry lock of the same algorithm.
    /// The faults it runs under.
    faults: &'static [ClientFault],
    call: Call,
}

const REDIS: (&str, &str) = ("127.0.0.1:16380", "start redis --instances 3");
const REDIS_3: (&str, &str) = ("127.0.0.1:16382", "start redis --instances 3");
const ZOOKEEPER: (&str, &str) = ("127.0.0.1:22181", "start zookeeper --nodes 3");
const ETCD: (&str, &str) = ("127.0.0.1:23781", "start etcd --nodes 3");
/// No fault, the holder paused, and the holder cut off from its servers.
const HOLDER_FAULTS: &[ClientFault] = &[ClientFault::None, ClientFault::PausedHolder, ClientFault::CutOffHolder];
/// These, its one Redis server restarted without persistence, and a failover.
const ON_ONE_REDIS: &[ClientFault] = &[
    ClientFault::None,
    ClientFault::PausedHolder,
    ClientFault::ServerRestarted,
    ClientFault::CutOffHolder,
    ClientFault::LaggingFailover,
];
/// The command that restarts the one Redis server (`cluster/cassalock-servers`' redis1).
const RESTART_REDIS: &str = "cluster/cassalock-servers restart redis1";
const PAUSED: &[ClientFault] = &[ClientFault::PausedHolder];

/// The replicated Redis pair as `cluster/cassalock-servers start redis-replicated` sets it up:
/// the primary (repl1) and its replica (repl2).
const PAIR_PRIMARY: &str = "127.0.0.1:16390";
const PAIR_REPLICA: &str = "127.0.0.1:16391";
const PAIR_START: &str = "start redis-replicated";
/// The failover's fault: the replica stops receiving the primary's writes, and once the holder
/// has held for `FAILOVER_LAG_MS`, the primary dies and the replica is promoted with what it had.
const LAG_REPLICA: &str = "cluster/cassalock-servers lag-replica";
const FAILOVER: &str = "cluster/cassalock-servers failover";
const FAILOVER_LAG_MS: u64 = 4000;
/// Holds across the failover: long enough that the replica misses renewals (Redisson's
/// watchdog renews every third of its 2 s), short enough that a 10 s lease outlives the run's
/// fault.
const FAILOVER_HOLD_MS: u64 = 1000;

/// How a program runs on the replicated pair: its command naming the pair's primary, and the
/// lease it asks for (none: the library's own renewal, Redisson's watchdog).
struct OnPair {
    slug: &'static str,
    command: &'static str,
    lease_ms: Option<u64>,
}

/// The programs that run the failover, by slug. A lease that outlives the fault (redis-py 10 s,
/// go-redsync's default 8 s) shows the failover alone; a lease shorter than the fault would
/// run out on the primary during it, two holders from the lease, not the failover.
const ON_PAIR: [OnPair; 5] = [
    OnPair {
        slug: "redis-py",
        command: "target/clients/python/bin/python clients/python/redis_py_lock.py --server 127.0.0.1:16390",
        lease_ms: Some(10_000),
    },
    OnPair {
        slug: "redisson-rlock",
        command: "target/clients/java/redisson-locks --server 127.0.0.1:16390 --kind rlock --watchdog-ms 2000",
        lease_ms: None,
    },
    OnPair {
        slug: "redisson-fair",
        command: "target/clients/java/redisson-locks --server 127.0.0.1:16390 --kind fair --watchdog-ms 2000",
        lease_ms: None,
    },
    OnPair {
        slug: "redisson-fenced",
        command: "target/clients/java/redisson-locks --server 127.0.0.1:16390 --kind fenced --watchdog-ms 2000",
        lease_ms: None,
    },
    OnPair {
        slug: "redsync-one",
        command: "target/clients/go/redsync -servers 127.0.0.1:16390",
        lease_ms: None,
    },
];

fn on_pair(program: &Program) -> Option<&'static OnPair> {
    ON_PAIR.iter().find(|run| run.slug == program.slug)
}

const PLAN: [Program; 12] = [
    Program {
        slug: "redis-py",
        command: "target/clients/python/bin/python clients/python/redis_py_lock.py --server 127.0.0.1:16380",
        built: "target/clients/python/bin/python",
        server: REDIS,
        lease_ms: Some(1000),
        pause_ms: 3000,
        hold_ms: HOLD_MS,
        faults: ON_ONE_REDIS,
        call: Call::Lock,
    },
    Program {
        slug: "kazoo",
        command:
            "target/clients/python/bin/python clients/python/kazoo_lock.py --servers 127.0.0.1:22181 --session-ms 2000",
        built: "target/clients/python/bin/python",
        server: ZOOKEEPER,
        lease_ms: None,
        pause_ms: 6000,
        hold_ms: HOLD_MS,
        faults: HOLDER_FAULTS,
        call: Call::Lock,
    },
    Program {
        slug: "redisson-rlock",
        command: "target/clients/java/redisson-locks --server 127.0.0.1:16380 --kind rlock",
        built: "target/clients/java/redisson-locks",
        server: REDIS,
        lease_ms: Some(1000),
        pause_ms: 3000,
        hold_ms: HOLD_MS,
        faults: ON_ONE_REDIS,
        call: Call::Lock,
    },
    Program {
        slug: "redisson-fair",
        command: "target/clients/java/redisson-locks --server 127.0.0.1:16380 --kind fair",
        built: "target/clients/java/redisson-locks",
        server: REDIS,
        lease_ms: Some(1000),
        pause_ms: 3000,
        hold_ms: HOLD_MS,
        faults: &[
            ClientFault::None,
            ClientFault::PausedHolder,
            ClientFault::CutOffHolder,
            ClientFault::LaggingFailover,
        ],
        call: Call::Lock,
    },
    Program {
        slug: "redisson-fenced",
        command: "target/clients/java/redisson-locks --server 127.0.0.1:16380 --kind fenced",
        built: "target/clients/java/redisson-locks",
        server: REDIS,
        lease_ms: Some(1000),
        pause_ms: 3000,
        hold_ms: HOLD_MS,
        faults: &[ClientFault::PausedHolder, ClientFault::LaggingFailover],
        call: Call::Lock,
    },
    Program {
        slug: "redisson-fenced-try",
        command: "target/clients/java/redisson-locks --server 127.0.0.1:16380 --kind fenced",
        built: "target/clients/java/redisson-locks",
        server: REDIS,
        lease_ms: Some(1000),
        pause_ms: 3000,
        hold_ms: HOLD_MS,
        faults: PAUSED,
        call: Call::TryLock,
    },
    Program {
        slug: "curator",
        command: "target/clients/java/curator-mutex --servers 127.0.0.1:22181 --session-ms 2000",
        built: "target/clients/java/curator-mutex",
        server: ZOOKEEPER,
        lease_ms: None,
        pause_ms: 6000,
        hold_ms: HOLD_MS,
        faults: HOLDER_FAULTS,
        call: Call::Lock,
    },
    Program {
        slug: "redsync-redlock",
        command: "target/clients/go/redsync -servers 127.0.0.1:16380,127.0.0.1:16381,127.0.0.1:16382",
        built: "target/clients/go/redsync",
        server: REDIS_3,
        lease_ms: Some(1000),
        pause_ms: 3000,
        hold_ms: HOLD_MS,
        faults: HOLDER_FAULTS,
        call: Call::Lock,
    },
    Program {
        slug: "redsync-one",
        command: "target/clients/go/redsync -servers 127.0.0.1:16380",
        built: "target/clients/go/redsync",
        server: REDIS,
        lease_ms: Some(1000),
        pause_ms: 3000,
        hold_ms: HOLD_MS,
        faults: &[
            ClientFault::PausedHolder,
            ClientFault::ServerRestarted,
            ClientFault::LaggingFailover,
        ],
        call: Call::Lock,
    },
    Program {
        slug: "etcd",
        command: "target/clients/go/etcdmutex -endpoints 127.0.0.1:23781 -ttl-s 2",
        built: "target/clients/go/etcdmutex",
        server: ETCD,
        lease_ms: None,
        pause_ms: 6000,
        hold_ms: HOLD_MS,
        faults: HOLDER_FAULTS,
        call: Call::Lock,
    },
    Program {
        slug: "etcd-waiter",
        command: "target/clients/go/etcdmutex -endpoints 127.0.0.1:23781 -ttl-s 2",
        built: "target/clients/go/etcdmutex",
        server: ETCD,
        lease_ms: None,
        pause_ms: 6000,
        hold_ms: WAITER_HOLD_MS,
        faults: &[ClientFault::PausedWaiter],
        call: Call::Lock,
    },
    Program {
        slug: "etcd34-waiter",
        command: "target/clients/go/etcd34 -endpoints 127.0.0.1:23781 -ttl-s 2",
        built: "target/clients/go/etcd34",
        server: ETCD,
        lease_ms: None,
        pause_ms: 6000,
        hold_ms: WAITER_HOLD_MS,
        faults: &[ClientFault::PausedWaiter],
        call: Call::Lock,
    },
];

/// Copies of each program in a run, and acquisitions of each.
const CLIENTS: usize = 3;
/// The next caller's wait, once a run's clients are done (C-free, C-release): the default of
/// `real --next-caller-wait-ms`, so that a run's rerun line needs no flag for it.
const NEXT_CALLER_WAIT_MS: u64 = cassalock_real::client::run::DEFAULT_NEXT_CALLER_WAIT_MS;
const ACQUISITIONS: u32 = 3;
const HOLD_MS: u64 = 20;
/// Holds where the fault frees the lock under a holder or a waiter: 300 ms.
const WAITER_HOLD_MS: u64 = 300;

/// The command a program runs under `fault`, and the lease it asks for.
fn command_and_lease(program: &Program, fault: ClientFault) -> (&'static str, Option<u64>) {
    match (fault, on_pair(program)) {
        (ClientFault::LaggingFailover, Some(run)) => (run.command, run.lease_ms),
        _ => (program.command, program.lease_ms),
    }
}

fn spec(program: &Program, fault: ClientFault) -> ClientSpec {
    let (command, lease_ms) = command_and_lease(program, fault);
    ClientSpec {
        command: command.to_owned(),
        clients: CLIENTS,
        acquisitions: ACQUISITIONS,
        call: program.call,
        try_wait_ms: 20_000,
        lease_ms,
        hold_ms: hold_ms(program, fault),
        max_wait: Duration::from_secs(60),
        start_timeout: Duration::from_secs(60),
        run_limit: None,
        fencing: true,
        pause: match fault {
            ClientFault::None | ClientFault::ServerRestarted | ClientFault::LaggingFailover => None,
            ClientFault::PausedHolder => Some(Pause {
                at_acquisition: 2,
                ms: program.pause_ms,
                whom: Paused::Holder,
                how: Halt::Stopped,
            }),
            ClientFault::PausedWaiter => Some(Pause {
                at_acquisition: 1,
                ms: program.pause_ms,
                whom: Paused::Waiter,
                how: Halt::Stopped,
            }),
            ClientFault::CutOffHolder => Some(Pause {
                at_acquisition: 2,
                ms: program.pause_ms,
                whom: Paused::Holder,
                how: Halt::CutOff,
            }),
        },
        proxy: match fault {
            ClientFault::CutOffHolder => server_addresses(program.command),
            ClientFault::LaggingFailover => vec![PAIR_PRIMARY.to_owned()],
            _ => Vec::new(),
        },
        server_fault: match fault {
            ClientFault::ServerRestarted => Some(ServerFault {
                at_acquisition: 2,
                command: RESTART_REDIS.into(),
                undo: None,
                ms: 0,
                moves: Vec::new(),
            }),
            ClientFault::LaggingFailover => Some(ServerFault {
                at_acquisition: 2,
                command: LAG_REPLICA.into(),
                undo: Some(FAILOVER.into()),
                ms: FAILOVER_LAG_MS,
                moves: vec![format!("{PAIR_PRIMARY}={PAIR_REPLICA}")],
            }),
            _ => None,
        },
        lock_name: format!("cassalock-{}-{}", program.slug, cassalock_real::now_us()),
        next_caller_wait_ms: Some(NEXT_CALLER_WAIT_MS),
        server_reading: server_reading(program, fault),
    }
}

/// What cassalock reads beside a run (T1-server): the servers the program's command names, by
/// our rule for the same lock; in a failover, the pair (the reader follows the master, as the
/// clients' moved address does). None where our rule does not name the library's holder.
fn server_reading(program: &Program, fault: ClientFault) -> Option<ServerReading> {
    let lock = cassalock_real::Lock::named(ours(program.slug)?)?;
    if !READABLE.contains(&lock) {
        return None;
    }
    let servers = match fault {
        ClientFault::LaggingFailover => vec![PAIR_PRIMARY.to_owned(), PAIR_REPLICA.to_owned()],
        _ => server_addresses(command_and_lease(program, fault).0),
    };
    Some(ServerReading { lock, servers })
}

/// Each hold of a run: long enough, where a fault frees the lock under its holder (a restarted
/// server), for waiters that poll (redis-py every 100 ms) to come in while it still holds.
fn hold_ms(program: &Program, fault: ClientFault) -> u64 {
    match fault {
        ClientFault::ServerRestarted => WAITER_HOLD_MS,
        ClientFault::LaggingFailover => FAILOVER_HOLD_MS,
        _ => program.hold_ms,
    }
}

/// The command line that reruns one run.
fn rerun(program: &Program, fault: ClientFault) -> String {
    let (command, lease_ms) = command_and_lease(program, fault);
    let mut line = format!(
        "cassalock real --client '{command}' --threads {CLIENTS} --acquisitions {ACQUISITIONS} --hold-ms {}",
        hold_ms(program, fault)
    );
    if let Some(lease) = lease_ms {
        line.push_str(&format!(" --lease-ms {lease}"));
    }
    if program.call == Call::TryLock {
        line.push_str(" --call try-lock --try-wait-ms 20000");
    }
    if let Some(reading) = server_reading(program, fault) {
        line.push_str(&format!(
            " --read-server-as {} --servers {}",
            reading.lock.name(),
            reading.servers.join(",")
        ));
    }
    match fault {
        ClientFault::None => {}
        ClientFault::PausedHolder => line.push_str(&format!(" --pause-holder-ms {} --pause-at 2", program.pause_ms)),
        ClientFault::PausedWaiter => line.push_str(&format!(" --pause-waiter-ms {} --pause-at 1", program.pause_ms)),
        ClientFault::ServerRestarted => {
            line.push_str(&format!(" --server-fault '{RESTART_REDIS}' --server-fault-at 2"))
        }
        ClientFault::CutOffHolder => line.push_str(&format!(
            " --cut-off-holder-ms {} --pause-at 2 --proxy {}",
            program.pause_ms,
            server_addresses(program.command).join(",")
        )),
        ClientFault::LaggingFailover => line.push_str(&format!(
            " --proxy {PAIR_PRIMARY} --server-fault '{LAG_REPLICA}' --server-fault-at 2 \
             --server-fault-undo '{FAILOVER}' --server-fault-ms {FAILOVER_LAG_MS} \
             --move-address {PAIR_PRIMARY}={PAIR_REPLICA}; cluster/cassalock-servers restart replica"
        )),
    }
    line
}

/// The server addresses a program's command names (`--server 127.0.0.1:16380`, `-servers
/// A,B,C`): what a cut-off forwards.
fn server_addresses(command: &str) -> Vec<String> {
    command
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|word| word.parse::<SocketAddr>().is_ok())
        .map(str::to_owned)
        .collect()
}

/// The longest `put_pair_back` goes on: each step mends one thing, and a pair after a failover
/// needs three (the old primary restarted as replica, failed over back, the other restarted).
const PAIR_STEPS: usize = 6;

/// Bring the replicated pair back as configured (repl1 the primary, repl2 its replica, both
/// running), whatever failover left it in, so that every run starts from, and the rerun lines
/// name, the same addresses.
fn put_pair_back() -> anyhow::Result<()> {
    for _ in 0..PAIR_STEPS {
        let all = crate::cluster_scripts::servers_status()?;
        let member = |name: &str| {
            all.iter()
                .find(|m| m.set == "redis-replicated" && m.name == name)
                .ok_or_else(|| anyhow::anyhow!("the servers list no {name}"))
        };
        let (first, second) = (member("repl1")?, member("repl2")?);
        let up = |m: &crate::cluster_scripts::ServerInstance| m.state == "up";
        let step: &[&str] = if !up(first) {
            &["restart", "repl1"]
        } else if !up(second) {
            &["restart", "repl2"]
        } else if first.role != "primary" {
            &["failover"]
        } else {
            return Ok(());
        };
        crate::cluster_scripts::run_script("cassalock-servers", step)?;
    }
    anyhow::bail!("not as configured after {PAIR_STEPS} steps")
}

fn reachable(address: &str) -> bool {
    let address: SocketAddr = address.parse().expect("a literal address");
    TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok()
}

/// Run the plan, write the report into `out` (default reports/).
pub fn run(out: Option<&Path>) -> ExitCode {
    let out = out.map_or_else(|| PathBuf::from("reports"), Path::to_path_buf);
    for program in &PLAN {
        if !Path::new(program.built).exists() {
            eprintln!(
                "error: {} is not built: run clients/setup all (from the repository's root)",
                program.built
            );
            return ExitCode::from(4);
        }
        if !reachable(program.server.0) {
            eprintln!(
                "error: nothing answers on {} for {}: start it with cluster/cassalock-servers {}",
                program.server.0, program.slug, program.server.1
            );
            return ExitCode::from(4);
        }
    }
    let fails_over = PLAN
        .iter()
        .any(|program| program.faults.contains(&ClientFault::LaggingFailover));
    if fails_over {
        if let Err(why) = put_pair_back() {
            eprintln!(
                "error: the replicated Redis pair is not as configured ({why:#}): start it with cluster/cassalock-servers {}",
                PAIR_START
            );
            return ExitCode::from(4);
        }
    }
    let records = out.join("real-clients");
    if let Err(e) = std::fs::create_dir_all(&records) {
        return crate::usage_error(&format!("cannot create {}: {e}", records.display()));
    }
    let runs: usize = PLAN.iter().map(|program| program.faults.len()).sum();
    let mut rows = Vec::new();
    let mut broken = 0;
    for program in &PLAN {
        for &fault in program.faults {
            eprintln!("[{}/{runs}] {}, {}", rows.len() + 1, program.slug, fault.label());
            let spec = spec(program, fault);
            let outcome = match run_clients(&spec) {
                Ok(outcome) => outcome,
                Err(why) => {
                    eprintln!("error: {why}");
                    return ExitCode::from(4);
                }
            };
            if fault == ClientFault::LaggingFailover {
                if let Err(why) = put_pair_back() {
                    eprintln!("error: the replicated Redis pair could not be put back after the failover: {why:#}");
                    return ExitCode::from(4);
                }
            }
            let judgement = cassalock_judge::judge(&outcome.record);
            for fault in &outcome.faults {
                eprintln!("  {fault}");
            }
            let cut = !outcome.faults.is_empty()
                || (spec.pause.is_some() && !outcome.paused)
                || (spec.server_fault.is_some() && !outcome.server_fault_fired)
                || outcome.proxy_refused > 0;
            broken += usize::from(cut);
            let name = format!("{}-{}.jsonl", program.slug, fault.slug());
            let path = records.join(&name);
            let written = std::fs::File::create(&path).and_then(|file| {
                let mut file = std::io::BufWriter::new(file);
                cassalock_judge::event::write(&mut file, &outcome.record.header, &outcome.record.events)
            });
            if let Err(e) = written {
                return crate::usage_error(&format!("cannot write {}: {e}", path.display()));
            }
            rows.push(row(
                program,
                fault,
                &outcome,
                &judgement,
                cut,
                format!("real-clients/{name}"),
            ));
        }
    }
    let mut overhead = Vec::new();
    for program in PLAN.iter().filter(|program| SELF_LOOPS.contains(&program.slug)) {
        match cost(program) {
            Ok(figures) => {
                eprintln!(
                    "{}: own loop {:.1} acq/s, under cassalock {:.1} acq/s ({:.2}x)",
                    figures.library,
                    figures.own_loop_per_s,
                    figures.under_cassalock_per_s,
                    figures.ratio()
                );
                overhead.push(figures);
            }
            Err(why) => {
                eprintln!("error: timing {}: {why}", program.slug);
                broken += 1;
            }
        }
    }
    let matrix = std::fs::read_to_string(out.join("matrix.md")).ok();
    let report = render(&rows, &overhead, matrix.as_deref(), "cassalock bench clients");
    let path = out.join("real-clients.md");
    if let Err(e) = std::fs::write(&path, report) {
        return crate::usage_error(&format!("cannot write {}: {e}", path.display()));
    }
    eprintln!(
        "wrote {} ({} runs, {broken} without a verdict)",
        path.display(),
        rows.len()
    );
    if broken > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

fn row(
    program: &Program,
    fault: ClientFault,
    outcome: &cassalock_real::client::run::ClientRun,
    judgement: &Judgement,
    cut: bool,
    record: String,
) -> ClientRunRow {
    let empty = cassalock_judge::observed::ObservedVerdicts::default();
    let verdicts = match judgement {
        Judgement::Observed(verdicts) => verdicts.as_ref(),
        _ => &empty,
    };
    let observed = matches!(judgement, Judgement::Observed(_));
    // The judge's verdict on a claim: kept, violated, or no occasion; no verdict on a run cut
    // short (or a record the observed judge did not read).
    let claim = |id: ClaimId| {
        let verdict = verdicts
            .checks
            .iter()
            .find(|(claim, _, _)| *claim == id)
            .map(|(_, verdict, _)| *verdict);
        match verdict {
            _ if cut || !observed => Seen::NoVerdict,
            Some(ClaimVerdict::Violated) => Seen::Violated,
            Some(ClaimVerdict::Holds) => Seen::Kept,
            Some(ClaimVerdict::NotExercised) => Seen::NoOccasion,
            Some(ClaimVerdict::Bounded) | None => Seen::NoVerdict,
        }
    };
    let belief = claim(ClaimId::T1Belief);
    let resource = claim(ClaimId::T1Resource);
    let refused = usize::try_from(verdicts.stale_count - verdicts.stale_accepted_count).unwrap_or(usize::MAX);
    let waits = &verdicts.waits_ms;
    ClientRunRow {
        library: outcome.record.header.lock.clone(),
        command: rerun(program, fault),
        fault,
        ours: ours(program.slug),
        acquisitions: outcome.acquisitions,
        t1_belief: belief,
        t1_resource: resource,
        t1_server: outcome.server_readings.map(|_| claim(ClaimId::T1Server)),
        refused,
        max_wait_ms: if waits.is_empty() { 0.0 } else { percentile(waits, 100) },
        c_lost: claim(ClaimId::CLost),
        // Each holder named where a run overtook more than one.
        told: verdicts
            .lost_holders
            .iter()
            .map(|lost| match verdicts.lost_holders.len() {
                1 => lost.describe(),
                _ => format!("{}: {}", lost.holder, lost.describe()),
            })
            .collect(),
        jain: verdicts.jain,
        overtakes: verdicts.overtakes,
        f_order: verdicts.fifo.map(|_| claim(ClaimId::FOrder)),
        t2: claim(ClaimId::T2),
        call_bound_ms: match &outcome.record.header.run.rules {
            cassalock_judge::event::Rules::Observed(rules) => rules.call_bound_ms.unwrap_or_default(),
            _ => 0,
        },
        c_free: claim(ClaimId::CFree),
        c_release: claim(ClaimId::CRelease),
        record,
    }
}

/// The programs whose protocol side can run the library's own loop (`CASSALOCK_SELF_LOOP`).
const SELF_LOOPS: [&str; 2] = ["redis-py", "kazoo"];
/// Interleaved rounds of the cost measurement, and acquisitions of each copy in a round.
const COST_ROUNDS: usize = 3;
const COST_ACQUISITIONS: u64 = 50;
const COST_HOLD_MS: u64 = 5;
/// The longest one round of a library's own loop may take.
const OWN_LOOP_LIMIT: Duration = Duration::from_secs(120);

/// The library's own loop against the same copies under cassalock (no fault).
fn cost(program: &Program) -> anyhow::Result<Overhead> {
    let mut own = Vec::new();
    let mut under = Vec::new();
    let mut library = program.slug.to_owned();
    for _ in 0..COST_ROUNDS {
        own.push(own_loop(program)?);
        let spec = ClientSpec {
            acquisitions: COST_ACQUISITIONS as u32,
            hold_ms: COST_HOLD_MS,
            next_caller_wait_ms: None,
            // The library's cost under the protocol, not cassalock's readings beside it.
            server_reading: None,
            ..spec(program, ClientFault::None)
        };
        let outcome = run_clients(&spec)?;
        if !outcome.faults.is_empty() {
            anyhow::bail!(
                "{}",
                outcome
                    .faults
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        library = outcome.record.header.lock.clone();
        let events = &outcome.record.events;
        let first = events
            .iter()
            .find(|e| matches!(e.what, What::Invoke { .. }))
            .map(|e| e.at_ns);
        let last = events
            .iter()
            .rev()
            .find(|e| matches!(e.what, What::Released { .. }))
            .map(|e| e.at_ns);
        let (Some(first), Some(last)) = (first, last) else {
            anyhow::bail!("the run under cassalock made no acquisition");
        };
        under.push(outcome.acquisitions as f64 / ((last - first) as f64 / 1e9).max(1e-9));
    }
    Ok(Overhead {
        library,
        rounds: COST_ROUNDS,
        acquisitions_per_round: CLIENTS as u64 * COST_ACQUISITIONS,
        own_loop_per_s: percentile(&own, 50),
        under_cassalock_per_s: percentile(&under, 50),
    })
}

/// One round of the library's own loop: `CLIENTS` processes, acquisitions a second over the
/// slowest one's loop.
fn own_loop(program: &Program) -> anyhow::Result<f64> {
    let lock = format!("cassalock-own-{}-{}", program.slug, cassalock_real::now_us());
    let children: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let mut command = std::process::Command::new("/bin/sh");
            command
                .arg("-c")
                .arg(program.command)
                .env("CASSALOCK_SELF_LOOP", COST_ACQUISITIONS.to_string())
                .env("CASSALOCK_HOLD_MS", COST_HOLD_MS.to_string())
                .env("CASSALOCK_LOCK", &lock)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null());
            if let Some(lease) = program.lease_ms {
                command.env("CASSALOCK_LEASE_MS", lease.to_string());
            }
            command.spawn()
        })
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", program.command))?;
    // A loop that hangs is killed, not waited for.
    let deadline = std::time::Instant::now() + OWN_LOOP_LIMIT;
    let mut children = children;
    while children.iter_mut().any(|child| matches!(child.try_wait(), Ok(None))) {
        if std::time::Instant::now() >= deadline {
            for child in &mut children {
                let _ = child.kill();
                let _ = child.wait();
            }
            return Err(anyhow::anyhow!(
                "its own loop did not end within {} s",
                OWN_LOOP_LIMIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut slowest_s: f64 = 0.0;
    for child in children {
        let output = child.wait_with_output().map_err(anyhow::Error::from)?;
        let text = String::from_utf8_lossy(&output.stdout);
        // Its listener threads may print protocol lines too (a session lost at close): the
        // loop's own line is the one that names it.
        let line = text
            .lines()
            .find(|line| line.contains("\"self_loop\""))
            .unwrap_or_default();
        let seconds = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|value| value.get("seconds").and_then(serde_json::Value::as_f64))
            .ok_or_else(|| anyhow::anyhow!("its own loop printed {:?}, not its seconds", text.trim()))?;
        slowest_s = slowest_s.max(seconds);
    }
    Ok((CLIENTS as u64 * COST_ACQUISITIONS) as f64 / slowest_s.max(1e-9))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cassalock_report::real_clients::{record_name, LIBRARIES};

    /// The report's list of programs (read by the matrix to name our line beside each) is the
    /// plan's, in its order, and each planned record's name reads back as its program and fault.
    #[test]
    fn the_plan_and_the_reports_list_of_programs_agree() {
        let planned: Vec<&str> = PLAN.iter().map(|program| program.slug).collect();
        let listed: Vec<&str> = LIBRARIES.iter().map(|(slug, _)| *slug).collect();
        assert_eq!(planned, listed);
        for program in &PLAN {
            for &fault in program.faults {
                let name = format!("{}-{}.jsonl", program.slug, fault.slug());
                assert_eq!(record_name(&name), Some((program.slug, fault)), "{name}");
            }
        }
    }

    /// Every program planned across the failover has its command on the pair, naming the
    /// primary the address moves from, and no other server; and every such command is planned.
    #[test]
    fn every_failover_run_names_the_pairs_primary() {
        for program in PLAN.iter().filter(|p| p.faults.contains(&ClientFault::LaggingFailover)) {
            let (command, _) = command_and_lease(program, ClientFault::LaggingFailover);
            assert_ne!(command, program.command, "{}", program.slug);
            assert_eq!(server_addresses(command), vec![PAIR_PRIMARY], "{}", program.slug);
            let line = rerun(program, ClientFault::LaggingFailover);
            assert!(
                line.contains(&format!("--move-address {PAIR_PRIMARY}={PAIR_REPLICA}")),
                "{line}"
            );
        }
        for run in &ON_PAIR {
            let program = PLAN.iter().find(|p| p.slug == run.slug).expect("a planned program");
            assert!(program.faults.contains(&ClientFault::LaggingFailover), "{}", run.slug);
        }
    }
}
