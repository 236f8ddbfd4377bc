//! `cassalock real`'s arguments: the lock and its servers, the lockers and their timings, the
//! files a run writes; their checks are the runner's (`cassalock_real::runner::check`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use cassalock_real::Lock;

/// `--connect-timeout-s` by default: the store's own default (checked below in the real build,
/// which has the store; this command's flags exist in both builds).
pub(super) const CONNECT_TIMEOUT_S: u64 = 15;
#[cfg(not(madsim))]
const _: () = assert!(CONNECT_TIMEOUT_S == cassalock::store::cassandra::DEFAULT_CONNECT_TIMEOUT_S);

/// Run lockers against a real cluster and judge mutual exclusion.
/// The arguments of runs of cassalock's own lockers, which a run of client programs does not
/// take. Every argument that only a client run takes conflicts with each of them: clap stops
/// asking for a `requires`'d `--client` once an argument that conflicts with it is present, so
/// without this `--lock redis-set-nx --pause-holder-ms 500` would run without its pause.
pub const OWN_LOCKERS_ONLY: [&str; 17] = [
    "contact_points",
    "algorithm",
    "processes",
    "ttl_s",
    "renew_ms",
    "poll_ms",
    "next_poll_ms",
    "paced_poll",
    "reuse_thread_ids",
    "queue_read_from_last_hold",
    "consistency",
    "keyspace",
    "connect_timeout_s",
    "no_server_readings",
    "json",
    "print_events",
    "steps",
];

#[derive(Args, Debug, Clone)]
pub struct RealArgs {
    /// Cassandra nodes, host:port, comma-separated.
    #[arg(
        long,
        default_value = "127.0.0.1:9042",
        value_delimiter = ',',
        conflicts_with = "client"
    )]
    pub contact_points: Vec<String>,
    /// Which lock: Cassandra's (old, queue, queue-next-in-line: the queue lock with
    /// --next-poll-ms 5 unless given, queue-paced: the same with --paced-poll, lwt;
    /// --contact-points) or another family's
    /// (redis-set-nx, redisson, redisson-fair, redisson-fenced, redlock, memcached, zookeeper, etcd;
    /// --servers).
    /// Also spelled --lock.
    #[arg(long, visible_alias = "lock", value_parser = crate::lock_names::real_lock(), default_value = "queue", conflicts_with = "client")]
    pub algorithm: Lock,
    /// Redis or Memcached servers, host:port, comma-separated: redis-set-nx and Redisson's
    /// three locks one server (or a primary and its replicas: the lockers use the master),
    /// redlock every master (1-15), memcached one server. Redisson's waiters wake on the unlock
    /// message (pub/sub), as Redisson's client does; the fair lock's, each on its own channel.
    /// With --client and --read-server-as: the servers cassalock reads, as the client's
    /// library uses them.
    #[arg(long, value_delimiter = ',')]
    pub servers: Vec<String>,
    /// Lockers contending for the one lock (1-256).
    #[arg(long, default_value_t = 8)]
    pub threads: usize,
    /// Acquisitions per locker (1-100000).
    #[arg(long, default_value_t = 20)]
    pub acquisitions: u32,
    /// Processes the lockers are spread over (1-threads); more than one checks mutual
    /// exclusion across processes, through a shared monitor file.
    #[arg(long, default_value_t = 1, conflicts_with = "client")]
    pub processes: usize,
    /// Critical-section length, milliseconds (0-60000).
    #[arg(long, default_value_t = 10)]
    pub hold_ms: u64,
    /// Lease TTL, whole seconds (2-3600).
    #[arg(long, default_value_t = 10, conflicts_with = "client")]
    pub ttl_s: u32,
    /// Lease renewal interval, milliseconds (default: half the TTL), as `sim --renew-every-ms`.
    #[arg(long = "renew-every-ms", alias = "renew-ms", conflicts_with = "client")]
    pub renew_ms: Option<u64>,
    /// How often a waiter polls, milliseconds (1-60000).
    #[arg(long, default_value_t = 100, conflicts_with = "client")]
    pub poll_ms: u64,
    /// Queue lock: the waiter next in line polls this often instead of --poll-ms, milliseconds
    /// (1-60000; default: off, as the thesis's listing).
    #[arg(long, conflicts_with = "client")]
    pub next_poll_ms: Option<u64>,
    /// Queue lock, with --next-poll-ms (or --algorithm queue-next-in-line; queue-paced is
    /// this already): every waiter learns its rank (reads up to 32 queue cells) and sleeps
    /// until the queue's pace says it will be next in line; the one next in line halves the
    /// holder's expected time left, down to --next-poll-ms. `--paced-poll` alone is
    /// `--paced-poll true`.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set, conflicts_with = "client")]
    pub paced_poll: bool,
    /// Each locker reuses its thread ids (the lowest none of its acquisitions in flight
    /// uses), so the main and shadow rows keep a cell per locker instead of a tombstone per
    /// acquisition (the library's default; false: a new id per
    /// acquisition, as the thesis's listings).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set, conflicts_with = "client")]
    pub reuse_thread_ids: bool,
    /// Queue lock: GetLock reads the queue from the column of the locker's last hold instead
    /// of the row's start (the library's default; false: from the row's
    /// start, as the listing).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set, conflicts_with = "client")]
    pub queue_read_from_last_hold: bool,
    /// Consistency of every lock request: one, quorum or all.
    #[arg(long, default_value = "quorum", conflicts_with = "client")]
    pub consistency: String,
    /// Keyspace (created with RF min(3, nodes) when missing).
    #[arg(long, default_value = "cassalock", conflicts_with = "client")]
    pub keyspace: String,
    /// Lock id (default: a fresh one per run, so earlier runs' cells do not matter).
    #[arg(long)]
    pub lock_id: Option<String>,
    /// Give up one acquisition after this many milliseconds (1-3600000).
    #[arg(long, default_value_t = 120_000)]
    pub max_wait_ms: u64,
    /// Stop starting acquisitions after this many seconds (0: run every acquisition).
    #[arg(long, default_value_t = 0)]
    pub run_limit_s: u64,
    /// Give up connecting to the cluster and setting up its table after this many seconds
    /// (1-600): a contact point that accepts connections but never answers (a paused node)
    /// fails with exit status 4 instead of hanging.
    #[arg(long, default_value_t = CONNECT_TIMEOUT_S, conflicts_with = "client")]
    pub connect_timeout_s: u64,
    /// Let the resource accept stale tokens (shows damage instead of refusals).
    #[arg(long)]
    pub no_fencing: bool,
    /// Do not read the lock's server during holds. By default a holder reads its server as each
    /// hold begins, during it (a family lock after each extension, a row lock once per renewal
    /// interval: one slice read of its main row at --consistency) and before it releases, one
    /// round trip each, and T1-server checks that the server named it; off, T1-server is not
    /// checked and the holds carry none of those round trips.
    #[arg(long, conflicts_with = "client")]
    pub no_server_readings: bool,
    /// Print the summary as one JSON object instead of text.
    #[arg(long, conflicts_with = "client")]
    pub json: bool,
    /// Print every locker's event as a JSON line as it happens (for tests that act mid-run).
    #[arg(long, conflicts_with = "client")]
    pub print_events: bool,
    /// Also write the run's event record into this file (JSON lines, docs/events.md): every
    /// acquisition, the end of every belief, every write the resource saw, every failure, on
    /// the machine's wall clock. `cassalock judge FILE` reads it back and prints its verdicts.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Write every step of every locker's machine to FILE, one JSON line each, as the library
    /// reported it: each request with its listing's step, its reply, each sleep with its
    /// length and kind, and the library's own acquired / releasing / released, stamped with the
    /// wall clock (at_us) and the locker. Where a run's time went: a waiter asleep when its
    /// turn came, a slow reply. The row locks only (old, queue, queue-next-in-line,
    /// queue-paced); at most 2,000,000 lines, the rest counted and said.
    #[arg(long, value_name = "FILE", conflicts_with = "client")]
    pub steps: Option<PathBuf>,
    /// Run copies of this program instead of cassalock's own lock code: any program that
    /// speaks the client protocol (docs/client-protocol.md), such as the shims in clients/
    /// that drive shipped libraries (redis-py, kazoo). Run through /bin/sh, each copy in a
    /// process group of its own; --threads copies, each making --acquisitions acquisitions of
    /// one lock (named in their environment, CASSALOCK_LOCK), holding each --hold-ms, writing
    /// its token to cassalock's resource, releasing. Works in either build.
    #[arg(long, value_name = "COMMAND")]
    pub client: Option<String>,
    /// With --client: the call each acquisition makes, lock or try-lock (with --try-wait-ms).
    #[arg(long, value_enum, default_value_t = ClientCall::Lock, requires = "client", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub call: ClientCall,
    /// With --client --call try-lock: how long try_lock waits, milliseconds (1-3600000).
    #[arg(long, default_value_t = 1000, requires = "client", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub try_wait_ms: u64,
    /// With --client: the lease each acquisition asks for, milliseconds (1-3600000; default:
    /// none, the library's own: its watchdog, its session, or no expiry).
    #[arg(long, requires = "client", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub lease_ms: Option<u64>,
    /// With --client: stop (SIGSTOP) the holder of the --pause-at-th acquisition of the run as
    /// soon as it holds, for this many milliseconds (1-600000), then continue it (SIGCONT);
    /// longer than its lease, another client may take the lock meanwhile.
    #[arg(long, requires = "client", conflicts_with_all = ["pause_waiter_ms", "cut_off_holder_ms", "cut_off_waiter_ms"], conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub pause_holder_ms: Option<u64>,
    /// With --client --proxy: cut the holder of the --pause-at-th acquisition of the run off
    /// from its servers as soon as it holds, for this many milliseconds (1-600000), then heal
    /// it: its program runs on, but nothing it sends or is sent crosses its forwarders, so its
    /// lease or session may run out at the servers while its library waits for an answer.
    #[arg(long, requires = "proxy", conflicts_with_all = ["pause_waiter_ms", "cut_off_waiter_ms"], conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub cut_off_holder_ms: Option<u64>,
    /// With --client --proxy: when the --pause-at-th acquisition of the run is made, cut the
    /// lowest-numbered other client waiting in its lock call off from its servers for this
    /// many milliseconds (1-600000), then heal it, while the holder holds on: a waiter whose
    /// session or lease runs out at the servers while its program runs on.
    #[arg(long, requires = "proxy", conflicts_with = "pause_waiter_ms", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub cut_off_waiter_ms: Option<u64>,
    /// With --client: server addresses in the client command (HOST:PORT, comma-separated, on
    /// loopback; each as the command writes it) that each copy reaches through forwarders of
    /// its own, which --cut-off-holder-ms and --cut-off-waiter-ms cut: every whole occurrence of an address in the
    /// command is replaced by its forwarder's for each copy.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT", requires = "client", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub proxy: Vec<String>,
    /// With --client: when the --pause-at-th acquisition of the run is made, stop (SIGSTOP)
    /// the lowest-numbered other client waiting in its lock call for this many milliseconds
    /// (1-600000), then continue it, while the holder holds on: a waiter whose lease or session
    /// runs out while it waits.
    #[arg(long, requires = "client", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub pause_waiter_ms: Option<u64>,
    /// With --pause-holder-ms, --pause-waiter-ms, --cut-off-holder-ms or --cut-off-waiter-ms:
    /// at which acquisition
    /// of the run (1-based, counting every client's; default 2).
    #[arg(long, requires = "client", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub pause_at: Option<u64>,
    /// With --client: a fault on the servers, as a command run through /bin/sh (from the
    /// current directory) when the --server-fault-at-th acquisition is made, while its holder
    /// holds: `cluster/cassalock-servers restart redis1`, `... pause redis1`, `... kill zk1`.
    /// Its start and end are in the record; a command that fails is said.
    #[arg(long, value_name = "COMMAND", requires = "client", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub server_fault: Option<String>,
    /// With --server-fault: a command that undoes it (`cluster/cassalock-servers resume
    /// redis1`), run --server-fault-ms after it.
    #[arg(long, value_name = "COMMAND", requires = "server_fault", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub server_fault_undo: Option<String>,
    /// With --server-fault-undo: how long the fault lasts, milliseconds (0-600000).
    #[arg(long, default_value_t = 0, requires = "server_fault_undo", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub server_fault_ms: u64,
    /// With --server-fault and --proxy: addresses that move once the fault's last command
    /// (its undo, if it has one) has succeeded (FROM=TO, comma-separated; FROM one of the --proxy addresses, TO on loopback):
    /// every client's new connections to FROM go to TO from then on, as a virtual IP or a DNS
    /// name moves to a promoted replica (`--server-fault 'cluster/cassalock-servers failover'
    /// --move-address 127.0.0.1:16390=127.0.0.1:16391`). Connections made before stay.
    #[arg(long, value_delimiter = ',', value_name = "FROM=TO", requires_all = ["server_fault", "proxy"], conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub move_address: Vec<String>,
    /// With --server-fault: at which acquisition of the run (1-based; default 2).
    #[arg(long, default_value_t = 2, requires = "server_fault", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub server_fault_at: u64,
    /// With --client: how long each copy may take to start and say hello, seconds (1-600).
    #[arg(long, default_value_t = 60, requires = "client", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub start_timeout_s: u64,
    /// With --client: once every copy is done, one more copy (started with them) calls try_lock
    /// waiting this long, milliseconds (1-60000); not getting the lock violates C-free or
    /// C-release. 0: no next caller.
    #[arg(long, default_value_t = cassalock_real::client::run::DEFAULT_NEXT_CALLER_WAIT_MS, requires = "client", conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub next_caller_wait_ms: u64,
    /// With --client: cassalock reads the lock's servers (--servers) itself as each hold
    /// begins and before each release, and names the holder by this lock's rule over the key
    /// named --lock-id (T1-server: a holder believing while its server names another or
    /// nobody). The rules that name a shipped library's holder as it does: redis-set-nx
    /// (redis-py, go-redsync over one server: the key's value), redlock (go-redsync over
    /// several: a majority's value), redisson, redisson-fair (the hash's owner), redisson-fenced
    /// (its token counter), zookeeper (Curator, kazoo: the lowest node under /locks/NAME, by its
    /// czxid).
    #[arg(long, value_name = "LOCK", value_parser = crate::lock_names::real_lock(), requires_all = ["client", "servers"], conflicts_with_all = OWN_LOCKERS_ONLY)]
    pub read_server_as: Option<Lock>,
    /// Internal: run as worker process N of a multi-process run, with the job in this file.
    #[arg(long, hide = true, requires = "worker_index")]
    pub worker_job: Option<PathBuf>,
    #[arg(long, hide = true)]
    pub worker_index: Option<usize>,
}

/// The call a client's acquisitions make (`real --client --call`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ClientCall {
    Lock,
    TryLock,
}
