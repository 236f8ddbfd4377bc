//! # cassalock-models
//!
//! stateright models of the thesis's algorithms, and of the other families' locks. The
//! thread actors step the very machines the library runs (`cassalock::algo`), against the
//! library's own store value types (`RowStore`; `RedisKeyspace` and `ReplicatedRedis`).
//!
//! | model | claims | file |
//! |---|---|---|
//! | lemma | L1 | [`lemma`] |
//! | getlock | T1, T2, F; M1, S2, K1, K3 under faults and mutants | [`getlock`] |
//! | trygetlock | T3, T4 | [`trygetlock`] |
//! | old | T1 holds, T2 and F fail | [`old`] |
//! | globaltime | T5, S1 | [`globaltime`] |
//! | redis-set-nx, redis-setnx-expire, redlock, memcached, redisson, redisson-fair, redisson-fenced | T1-belief, T1-resource, C-free, C-release, T2 of Redis's `SET NX PX` lock and the `SETNX`-then-`EXPIRE` recipe before it, Redlock over 3 masters, Memcached's `add` lock and Redisson's `RLock`, fair lock and fenced lock (C-lost too: their watchdog; F-order for the fair lock; C-token for the fenced lock, whose resource fences), under a pause, lost requests, a restart, a failover (Redis), a server clock jump, a lost unlock message (Redisson) | [`family`] |
//! | zookeeper, etcd | the same claims for Curator's `InterProcessMutex` and etcd's mutex, with a fenced resource (their tokens grow: C-token), under a pause (a ZooKeeper session's heartbeat stops), lost requests, a restart (everything persists), a server clock jump (sessions and leases expire early), a missed watch | [`family`], [`coord`] |
//!
//! [`lock_world`] is the world the three lock models share; [`liveness`] is our fair-cycle
//! check; `check` runs a model and produces one row per property.

pub mod check;
pub mod coord;
pub mod family;
pub mod family_record;
pub mod getlock;
pub mod globaltime;
pub mod lemma;
pub mod liveness;
pub mod lock_world;
pub mod memory;
pub mod old;
pub mod shared;
pub mod trygetlock;

use cassalock::registry::Lock;
use check::{check, Limits, Report};
use lock_world::{Clocks, LockAlgorithm, LockModel, LockModelConfig};

/// A model `cassalock check --model NAME` runs: Lemma 1's, or the model of a lock of the
/// registry (`cassalock::registry`) whose entry names one. The list of locks is the
/// registry's; this type only adds the lemma, which is not a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ModelName {
    /// Lemma 1: writers and readers of one row (L1).
    Lemma,
    /// The model of this lock (its registry entry's `model`).
    Lock(Lock),
}

impl ModelName {
    /// Every model: the lemma, then the registry's locks that have one, in its order.
    pub fn all() -> impl Iterator<Item = ModelName> {
        std::iter::once(ModelName::Lemma).chain(
            Lock::all()
                .filter(|lock| lock.entry().model.is_some())
                .map(ModelName::Lock),
        )
    }

    /// The model named `name` on the command line.
    pub fn named(name: &str) -> Option<ModelName> {
        ModelName::all().find(|model| model.name() == name)
    }

    /// Its name on the command line: `lemma`, or the lock's registry entry's `model`.
    pub fn name(self) -> &'static str {
        match self {
            ModelName::Lemma => "lemma",
            ModelName::Lock(lock) => lock
                .entry()
                .model
                .unwrap_or_else(|| panic!("{lock} has no model (ModelName::all lists only those that do)")),
        }
    }

    /// What it checks, in a line (`check --help`).
    pub fn help(self) -> &'static str {
        match self {
            ModelName::Lemma => "Lemma 1: writers and readers of one row (L1)",
            ModelName::Lock(lock) => match lock {
                Lock::Queue => "Listing 6, the fair queue GetLock (T1, T2, F)",
                Lock::QueueTry => "Listing 7, TryGetLock (T3, T4)",
                Lock::Old => "Listings 3-4, the old shadow-row lock (T1 holds, T2 and F fail)",
                Lock::GlobalTime => "Listing 8, the global time service (T5, S1)",
                other => family::registered_model(other).map_or("", |model| model.help),
            },
        }
    }
}

/// Every model, for the command line's list of values.
#[cfg(feature = "clap")]
static MODELS: std::sync::LazyLock<Vec<ModelName>> = std::sync::LazyLock::new(|| ModelName::all().collect());

#[cfg(feature = "clap")]
impl clap::ValueEnum for ModelName {
    fn value_variants<'a>() -> &'a [Self] {
        MODELS.as_slice()
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.help()))
    }
}

/// Fault knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Fault {
    /// Perfect clocks, atomic enqueue, no TTL: exhaustive and unbounded.
    None,
    /// One thread's clock runs a tick behind (queue order).
    Skew,
    /// A node's clock ahead of another's by the TTL (S2).
    TtlSkew,
    /// A holder paused longer than its TTL (K1).
    Pause,
    /// Reading the time and writing the queue cell are separate steps.
    DelayedEnqueue,
    /// A holder crashes; its lease expires.
    Crash,
    /// One store request fails, before it is applied or after (the reply is lost): the
    /// contract items C-free and C-release (leases on, retries exhausted at once). In the
    /// other families' models: one request lost before the server sees it, or its reply after
    /// it applied (one retry).
    StoreFailure,
    /// redis-set-nx, redis-setnx-expire, memcached: the server restarts without persistence (`Persistence::None`):
    /// every key is gone, acknowledged or not; redlock: master 0 does, at once.
    Restart,
    /// redis-set-nx, redis-setnx-expire: the primary acknowledged a write, and the replica is promoted before the
    /// write reached it (asynchronous replication).
    Failover,
    /// redis-set-nx, memcached, redisson: the server's clock jumps forward by the TTL, a key
    /// expires early; redlock: master 0's clock does.
    ServerClockJump,
    /// redisson: one unlock message (Redis pub/sub) is lost on its way to a waiter, which then
    /// sleeps out the holder's TTL.
    LostNotification,
}

impl Fault {
    pub const ALL: [Fault; 11] = [
        Fault::None,
        Fault::Skew,
        Fault::TtlSkew,
        Fault::Pause,
        Fault::DelayedEnqueue,
        Fault::Crash,
        Fault::StoreFailure,
        Fault::Restart,
        Fault::Failover,
        Fault::ServerClockJump,
        Fault::LostNotification,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::Skew => "skew",
            Fault::TtlSkew => "ttl-skew",
            Fault::Pause => "pause",
            Fault::DelayedEnqueue => "delayed-enqueue",
            Fault::Crash => "crash",
            Fault::StoreFailure => "store-failure",
            Fault::Restart => "restart",
            Fault::Failover => "failover",
            Fault::ServerClockJump => "server-clock-jump",
            Fault::LostNotification => "lost-notification",
        }
    }

    /// A fault of a Redis server (or of its pub/sub), which the Cassandra lock models do not
    /// have.
    pub fn is_redis_server_fault(self) -> bool {
        matches!(
            self,
            Fault::Restart | Fault::Failover | Fault::ServerClockJump | Fault::LostNotification
        )
    }
}

/// Deliberately broken variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Mutant {
    /// First in the queue takes the lock without reading the main row.
    M1,
    /// Release does not wait for the renewal task (turns leases on).
    K3,
    /// Renewal trusts a rewrite that landed a whole TTL after the last write (the library
    /// before 2026-11-28): a holder paused between its check and its rewrite never learns it
    /// lost the lock (C-lost; needs clocks that tick, e.g. --fault pause, and shows one tick
    /// past the default bound: --clock-bound 5).
    M4,
    /// redlock: node-redlock's bug, every attempt's validity counted from the first attempt's
    /// start.
    #[cfg_attr(feature = "clap", value(name = "node-redlock-validity"))]
    NodeRedlockValidity,
    /// redlock with --extend: go-redsync's bug, an extension that took a majority however long
    /// it took, the holder believing in a fresh TTL from its end.
    #[cfg_attr(feature = "clap", value(name = "go-redsync-extend"))]
    GoRedsyncExtend,
    /// redisson: redisson/redisson#775, a watchdog that is not rescheduled after one failed
    /// renewal (the lease runs out while the holder holds, and nobody tells it).
    #[cfg_attr(feature = "clap", value(name = "redisson-775"))]
    Redisson775,
    /// redisson-fair: a planted unfair variant (no known Redisson bug), an acquire that runs
    /// the RLock's script and so lets whoever asks take a free lock, queue or not (barging).
    #[cfg_attr(feature = "clap", value(name = "redisson-fair-barging"))]
    RedissonFairBarging,
    /// zookeeper: CURATOR-678, a release whose delete fails once gives up and forgets the node,
    /// which stays while the session lives (every later contender waits behind it). Needs
    /// --fault store-failure.
    #[cfg_attr(feature = "clap", value(name = "curator-678"))]
    Curator678,
    /// etcd: etcd-io/etcd#11456 (Jepsen, 3.4.3), a waiter that holds after the wait without
    /// reading its own key, which its lease's expiry may have deleted.
    #[cfg_attr(feature = "clap", value(name = "etcd-11456"))]
    Etcd11456,
}

impl Mutant {
    pub const ALL: [Mutant; 9] = [
        Mutant::M1,
        Mutant::K3,
        Mutant::M4,
        Mutant::NodeRedlockValidity,
        Mutant::GoRedsyncExtend,
        Mutant::Redisson775,
        Mutant::RedissonFairBarging,
        Mutant::Curator678,
        Mutant::Etcd11456,
    ];

    /// The family model whose client has this bug, if one has.
    pub fn planted_in(self) -> Option<family::RegisteredModel> {
        family::registered_models().into_iter().find(|model| model.plants(self))
    }

    pub fn name(self) -> &'static str {
        match self {
            Mutant::M1 => "m1",
            Mutant::K3 => "k3",
            Mutant::M4 => "m4",
            Mutant::NodeRedlockValidity => "node-redlock-validity",
            Mutant::GoRedsyncExtend => "go-redsync-extend",
            Mutant::Redisson775 => "redisson-775",
            Mutant::RedissonFairBarging => "redisson-fair-barging",
            Mutant::Curator678 => "curator-678",
            Mutant::Etcd11456 => "etcd-11456",
        }
    }

    /// A bug of another family's client (the model that plants it: [`Mutant::planted_in`]),
    /// not of the thesis's locks.
    pub fn is_family_client_bug(self) -> bool {
        self.planted_in().is_some()
    }
}

/// What to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub model: ModelName,
    pub threads: Option<u8>,
    pub acquisitions: Option<u8>,
    pub fault: Fault,
    pub mutant: Option<Mutant>,
    pub fencing: bool,
    /// Lock models: cells carry a TTL and holders renew (ticks), even without a fault.
    pub leases: bool,
    /// Lock models: run the thesis's listings as written, without the library's fixes
    /// (`Fixes::THESIS`), to show what the fixes are for.
    pub thesis_listings: bool,
    /// Lock models: no bound on how long a contender's requests take against a TryGetLock's
    /// poll interval (the purely asynchronous model; see `LockModelConfig::poll_outlasts_contention`).
    pub asynchronous: bool,
    /// redis-set-nx: each holder extends its key once (`SetNxExtend`) between two uses of the
    /// resource.
    pub extend: bool,
    /// getlock: the waiter next in line polls at its own interval (the faster handoff: every
    /// waiter reads two queue cells; the model's sleeps are untimed, so what changes is what
    /// a waiter reads and which branch it takes).
    pub next_poll: bool,
    /// getlock: the paced variant on top of `next_poll` (every waiter reads up to 32
    /// queue cells, learns its rank and sleeps by it; the sleeps are untimed here, so what
    /// changes is what a waiter reads and what it remembers).
    pub paced_poll: bool,
    /// Lock models: a thread's acquisitions all use one thread id (`Settings::reuse_thread_ids`,
    /// for the long run), so later ones write the cells earlier ones wrote and deleted.
    pub reuse_thread_ids: bool,
    /// getlock: each thread reads the queue from the queue column of its last hold
    /// (`Settings::queue_read_from_last_hold`, for the long run).
    pub queue_read_from_last_hold: bool,
    /// Lock models whose clocks tick with a bound (leases, pause, crash, a coordinator a TTL
    /// ahead, store failures with leases, K3): time stops at this tick instead of the default
    /// (3 + acquisitions). Raising it shows whether a "holds within bound" depends on the
    /// bound.
    pub clock_bound: Option<u8>,
}

/// The highest `--clock-bound`: clocks read `now` plus an offset of up to a TTL (2 ticks) in a
/// tick counter of one byte, and a bound this high is far past any world within reach.
pub const MOST_CLOCK_BOUND_TICKS: u8 = 250;

impl Spec {
    /// Does it ask for one of the Cassandra lock models' variants (the listings, the
    /// asynchronous model, the next-in-line and paced polls, reused thread ids, the queue start)?
    fn uses_cassandra_lock_variants(&self) -> bool {
        self.thesis_listings
            || self.asynchronous
            || self.next_poll
            || self.paced_poll
            || self.reuse_thread_ids
            || self.queue_read_from_last_hold
            || self.clock_bound.is_some()
    }

    /// The `cassalock check` command that checks this spec: `--model` and every field that
    /// is not [`Spec::new`]'s, as its flag (`cli/src/check.rs` tests that the line parses back
    /// into the same spec).
    pub fn command_line(&self) -> String {
        let Spec {
            model,
            threads,
            acquisitions,
            fault,
            mutant,
            fencing,
            leases,
            thesis_listings,
            asynchronous,
            next_poll,
            paced_poll,
            reuse_thread_ids,
            queue_read_from_last_hold,
            extend,
            clock_bound,
        } = self;
        let mut line = format!("cassalock check --model {}", model.name());
        if let Some(threads) = threads {
            line += &format!(" --threads {threads}");
        }
        if let Some(acquisitions) = acquisitions {
            line += &format!(" --acquisitions {acquisitions}");
        }
        if *fault != Fault::None {
            line += &format!(" --fault {}", fault.name());
        }
        if let Some(mutant) = mutant {
            line += &format!(" --mutant {}", mutant.name());
        }
        for (on, flag) in [
            (fencing, "--fencing"),
            (leases, "--leases"),
            (thesis_listings, "--thesis-listings"),
            (asynchronous, "--asynchronous"),
            (next_poll, "--next-poll"),
            (paced_poll, "--paced-poll"),
            (reuse_thread_ids, "--reuse-thread-ids"),
            (queue_read_from_last_hold, "--queue-read-from-last-hold"),
            (extend, "--extend"),
        ] {
            if *on {
                line += " ";
                line += flag;
            }
        }
        if let Some(ticks) = clock_bound {
            line += &format!(" --clock-bound {ticks}");
        }
        line
    }

    pub fn new(model: ModelName) -> Self {
        Spec {
            model,
            threads: None,
            acquisitions: None,
            fault: Fault::None,
            mutant: None,
            fencing: false,
            leases: false,
            thesis_listings: false,
            asynchronous: false,
            next_poll: false,
            paced_poll: false,
            reuse_thread_ids: false,
            queue_read_from_last_hold: false,
            extend: false,
            clock_bound: None,
        }
    }
}

/// Why a spec was refused: a sentence naming the option and what it may be.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

/// `a, b and c` (or `or`): a list of names in a sentence.
fn listed(names: &[&str], last_word: &str) -> String {
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} {last_word} {last}", rest.join(", ")),
        None => String::new(),
    }
}

fn refuse<T>(message: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError(message.into()))
}

/// `value` within `range`, or a message naming the option and the feasible sizes.
fn size(
    option: &str,
    value: Option<u8>,
    default: u8,
    range: std::ops::RangeInclusive<u8>,
    why: &str,
) -> Result<u8, SpecError> {
    let value = value.unwrap_or(default);
    if !range.contains(&value) {
        return refuse(format!(
            "{option} {value} is outside {}..={} for this model and fault ({why}); larger sizes have no feasible bound on this machine",
            range.start(),
            range.end()
        ));
    }
    Ok(value)
}

/// `threads` x `acquisitions` of at most 6, or a message: `what` the world is, and `sizes`,
/// what the feasible sizes cost (closing the parenthesis) and which to use.
fn at_most_six(threads: u8, acquisitions: u8, what: &str, sizes: &str) -> Result<(u8, u8), SpecError> {
    if threads * acquisitions > 6 {
        return refuse(format!(
            "{what}: --threads x --acquisitions = {} is over 6 ({sizes}",
            threads * acquisitions
        ));
    }
    Ok((threads, acquisitions))
}

/// Build a lock model's config from a spec (sizes checked against feasible ranges).
pub(crate) fn lock_config(algorithm: LockAlgorithm, spec: &Spec) -> Result<LockModelConfig, SpecError> {
    if let Some(mutant) = spec.mutant.filter(|m| m.is_family_client_bug()) {
        let model = mutant.planted_in().map_or("", |model| model.name);
        return refuse(format!(
            "--mutant {} is a bug of the {model} model's client; use --model {model}",
            mutant.name(),
        ));
    }
    if spec.fault.is_redis_server_fault() {
        return refuse(format!(
            "--fault {} is a fault of a Redis server; the {} model's store is Cassandra (use --model redis-set-nx, or redisson for lost-notification)",
            spec.fault.name(),
            spec.model.name()
        ));
    }
    let timed = !matches!(spec.fault, Fault::None | Fault::DelayedEnqueue | Fault::StoreFailure)
        || spec.mutant == Some(Mutant::K3)
        || spec.leases;
    let (threads, acquisitions) = match (algorithm, timed) {
        (LockAlgorithm::GetLock, false) if spec.fault == Fault::DelayedEnqueue => {
            let threads = size("--threads", spec.threads, 2, 1..=3, "delayed enqueue")?;
            let acquisitions = size("--acquisitions", spec.acquisitions, 2, 1..=3, "delayed enqueue")?;
            at_most_six(
                threads,
                acquisitions,
                "getlock with delayed enqueue",
                "3 x 2 is 464,673 states, about 5 s); use 3 x 2, 2 x 3 or fewer",
            )?
        }
        (LockAlgorithm::GetLock, false) => (
            size("--threads", spec.threads, 3, 1..=4, "untimed")?,
            size("--acquisitions", spec.acquisitions, 2, 1..=3, "untimed")?,
        ),
        (LockAlgorithm::TryGetLock, false) => (
            size("--threads", spec.threads, 3, 1..=4, "untimed")?,
            size("--acquisitions", spec.acquisitions, 1, 1..=3, "untimed")?,
        ),
        (LockAlgorithm::Old, false) => (
            size("--threads", spec.threads, 2, 1..=3, "untimed")?,
            size("--acquisitions", spec.acquisitions, 1, 1..=2, "untimed")?,
        ),
        // Skew alone: time is seen only by the time source and kept relative to the clock
        // (reductions 5 and 7 in `lock_world`), so GetLock 4 x 2 is within reach (9,961,752
        // states, about 4 GB and 3.5 minutes here).
        (_, true) if spec.fault == Fault::Skew && !spec.leases && spec.mutant != Some(Mutant::K3) => {
            // TryGetLock's skewed worlds stay larger (3 x 2 is 3,923,469 states, 45 s).
            let most = if algorithm == LockAlgorithm::TryGetLock { 3 } else { 4 };
            let threads = size("--threads", spec.threads, 2, 1..=most, "skew")?;
            let acquisitions = size("--acquisitions", spec.acquisitions, 1, 1..=2, "skew")?;
            match algorithm {
                LockAlgorithm::GetLock => (threads, acquisitions),
                LockAlgorithm::TryGetLock => at_most_six(
                    threads,
                    acquisitions,
                    "trygetlock with skew",
                    "3 x 2 is 3,923,469 states, about 45 s); use 3 x 2 or fewer",
                )?,
                LockAlgorithm::Old => at_most_six(
                    threads,
                    acquisitions,
                    "old with skew",
                    "4 x 1 is 397,744 states, about 6 s; 3 x 2 is 80,931); use 3 x 2, 4 x 1 or fewer",
                )?,
            }
        }
        (_, true) => (
            size("--threads", spec.threads, 2, 1..=3, "clocks and leases")?,
            size("--acquisitions", spec.acquisitions, 1, 1..=2, "clocks and leases")?,
        ),
    };
    if spec.mutant == Some(Mutant::M4) && !timed {
        return refuse("mutant m4 changes what renewal does with a late rewrite; renewal runs only where cells expire: add --fault pause (where it shows, one tick past the default bound: --clock-bound 5), crash, ttl-skew or --leases");
    }
    if spec.mutant == Some(Mutant::M1) && algorithm == LockAlgorithm::Old {
        return refuse("mutant m1 skips the queue algorithm's main-row check; the old algorithm has no queue (use getlock or trygetlock)");
    }
    let mut cfg = LockModelConfig::new(algorithm, threads, acquisitions);
    if spec.thesis_listings {
        cfg.lock.fixes = cassalock::algo::Fixes::THESIS;
    }
    cfg.poll_outlasts_contention = !spec.asynchronous;
    cfg.reuse_thread_ids = spec.reuse_thread_ids;
    if spec.queue_read_from_last_hold {
        if algorithm != LockAlgorithm::GetLock {
            return refuse("--queue-read-from-last-hold is the queue GetLock's (use --model getlock)");
        }
        cfg.queue_read_from_last_hold = true;
    }
    if spec.next_poll || spec.paced_poll {
        if algorithm != LockAlgorithm::GetLock {
            return refuse("--next-poll and --paced-poll are the queue GetLock's variants (use --model getlock)");
        }
        cfg.lock.next_poll_ms = Some(10);
        cfg.lock.paced_poll = spec.paced_poll;
    }
    let mut cfg = lock_world::apply_fault(cfg, spec.fault, spec.mutant, spec.fencing, spec.leases);
    if spec.mutant == Some(Mutant::M4) && cfg.lock.ttl_s.is_none() {
        return refuse("mutant m4 changes what renewal does with a late rewrite; with a clock a tick behind alone no cell expires and nothing is renewed: use --fault pause (where it shows, one tick past the default bound: --clock-bound 5), crash, ttl-skew or --leases");
    }
    if let Some(bound) = spec.clock_bound {
        if cfg.relative_time() {
            return refuse("--clock-bound: with a clock a tick behind (--fault skew) time has no bound (times are kept relative to the clock), so there is none to move");
        }
        let Clocks::Ticks { max_tick, .. } = &mut cfg.clocks else {
            return refuse("--clock-bound applies where clocks tick: --leases, --fault pause, crash or ttl-skew, --fault store-failure --leases, or --mutant k3 (without them the clock is perfect and time has no bound)");
        };
        if !(2..=MOST_CLOCK_BOUND_TICKS).contains(&bound) {
            return refuse(format!(
                "--clock-bound must be 2 to {MOST_CLOCK_BOUND_TICKS} ticks (clocks start at tick 1; this world's default is {max_tick}), not {bound}"
            ));
        }
        *max_tick = bound;
    }
    Ok(cfg)
}

/// A model ready to run.
pub enum Runnable {
    Lock(LockModel),
    Lemma(lemma::LemmaModel),
    GlobalTime(globaltime::GlobalTimeModel),
    /// A model of the other families' locks ([`family::registered_models`]).
    Family(Box<dyn family::FamilyCheck>),
}

/// Validate a spec and build its model.
pub fn build(spec: &Spec) -> Result<Runnable, SpecError> {
    let registered = match spec.model {
        ModelName::Lock(lock) => family::registered_model(lock),
        ModelName::Lemma => None,
    };
    if spec.extend && !registered.is_some_and(|model| model.extends) {
        let extending: Vec<&str> = family::registered_models()
            .iter()
            .filter(|model| model.extends)
            .map(|model| model.name)
            .collect();
        return refuse(format!(
            "--extend applies to the {} models, not to {}{}",
            listed(&extending, "and"),
            spec.model.name(),
            if registered.is_some_and(|model| model.renews) {
                " (its watchdog renews the lease)"
            } else {
                ""
            }
        ));
    }
    match spec.model {
        ModelName::Lemma | ModelName::Lock(Lock::GlobalTime) => {
            if spec.acquisitions.is_some() {
                return refuse(format!(
                    "--acquisitions does not apply to the {} model",
                    spec.model.name()
                ));
            }
            if spec.mutant.is_some() || spec.fencing || spec.uses_cassandra_lock_variants() {
                return refuse(format!(
                    "--mutant, --fencing, --thesis-listings, --asynchronous, --next-poll, --paced-poll, --reuse-thread-ids, --queue-read-from-last-hold and --clock-bound apply to the lock models (getlock, trygetlock, old), not to {}",
                    spec.model.name()
                ));
            }
        }
        _ => {}
    }
    match spec.model {
        ModelName::Lemma => {
            if spec.fault != Fault::None {
                return refuse("the lemma model has no fault knobs: Lemma 1 is about a linearizable store (weak consistency, K2, is the simulator's cl-one scenario)");
            }
            Ok(Runnable::Lemma(lemma::LemmaModel {
                threads: size("--threads", spec.threads, 2, 2..=3, "the lemma is about 2 or 3 writers")?,
            }))
        }
        ModelName::Lock(Lock::Queue) => Ok(Runnable::Lock(LockModel::new(getlock::config(spec)?))),
        ModelName::Lock(Lock::QueueTry) => Ok(Runnable::Lock(LockModel::new(trygetlock::config(spec)?))),
        ModelName::Lock(Lock::Old) => Ok(Runnable::Lock(LockModel::new(old::config(spec)?))),
        ModelName::Lock(Lock::GlobalTime) => {
            let time = match spec.fault {
                Fault::None => globaltime::TimeKeeping::Ranks,
                Fault::Skew => globaltime::TimeKeeping::Ticks {
                    max_tick: 5,
                    ahead_ticks: 2,
                    crash: false,
                },
                Fault::Crash => globaltime::TimeKeeping::Ticks {
                    max_tick: 5,
                    ahead_ticks: 3,
                    crash: true,
                },
                other => {
                    return refuse(format!(
                        "the globaltime model supports --fault none, skew or crash, not {}",
                        other.name()
                    ))
                }
            };
            let (default, range) = match time {
                globaltime::TimeKeeping::Ranks => (2, 2..=3),
                _ => (2, 2..=3),
            };
            Ok(Runnable::GlobalTime(globaltime::GlobalTimeModel {
                replicas: size("--threads (replicas)", spec.threads, default, range, "replicas")?,
                time,
                every_tick_jump: false,
            }))
        }
        ModelName::Lock(_) if registered.is_some() => {
            let model = registered.expect("matched as some");
            Ok(Runnable::Family((model.build)(spec)?))
        }
        ModelName::Lock(lock) => refuse(format!(
            "{lock} has no model of its own (the queue GetLock's polls are `--model getlock --next-poll` and `--paced-poll`)"
        )),
    }
}

/// Build one of the other families' models from a spec.
pub fn family_model<F: family::ModelFamily>(spec: &Spec) -> Result<family::FamilyModel<F>, SpecError> {
    let name = F::MODEL;
    if spec.fencing || spec.leases || spec.uses_cassandra_lock_variants() {
        return refuse(format!("--fencing, --leases, --thesis-listings, --asynchronous, --next-poll, --paced-poll, --reuse-thread-ids, --queue-read-from-last-hold and --clock-bound apply to the Cassandra lock models (getlock, trygetlock, old), not to {name} (its key always carries a TTL; --extend makes holders extend it)"));
    }
    let mut mutants = family::FamilyMutants::default();
    if let Some(mutant) = spec.mutant {
        if !F::plant(mutant, &mut mutants, spec.extend)? {
            let planted_by: Vec<String> = family::registered_models()
                .iter()
                .filter_map(|model| {
                    let applies: Vec<&str> = Mutant::ALL
                        .iter()
                        .filter(|m| model.plants(**m))
                        .map(|m| m.name())
                        .collect();
                    (!applies.is_empty()).then(|| format!("{}: {}", listed(&applies, "and"), model.name))
                })
                .collect();
            return refuse(format!(
                "--mutant {} does not apply to the {name} model (m1 and k3: getlock, trygetlock, old; {})",
                mutant.name(),
                planted_by.join("; ")
            ));
        }
    }
    if !F::supports(spec.fault) {
        let supported: Vec<&str> = Fault::ALL
            .iter()
            .filter(|f| F::supports(**f))
            .map(|f| f.name())
            .collect();
        let listed = listed(&supported, "or");
        return refuse(format!(
            "the {name} model supports --fault {listed}, not {}",
            spec.fault.name()
        ));
    }
    let clients = size("--threads (clients)", spec.threads, 2, 1..=3, "clients")?;
    let acquisitions = size(
        "--acquisitions",
        spec.acquisitions,
        1,
        1..=2,
        "clients and a TTL in ticks",
    )?;
    Ok(family::FamilyModel::with_mutants(
        clients,
        acquisitions,
        spec.extend,
        spec.fault,
        mutants,
    ))
}

impl Runnable {
    pub fn check(&self, limits: Limits) -> Report {
        match self {
            Runnable::Lock(model) => check(model, limits),
            Runnable::Lemma(model) => check(model, limits),
            Runnable::GlobalTime(model) => check(model, limits),
            Runnable::Family(model) => model.check(limits),
        }
    }

    /// The claim IDs this model checks (properties and liveness obligations).
    pub fn claims(&self) -> Vec<String> {
        use check::CheckedModel;
        match self {
            Runnable::Lock(model) => model.claim_ids(),
            Runnable::Lemma(model) => model.claim_ids(),
            Runnable::GlobalTime(model) => model.claim_ids(),
            Runnable::Family(model) => model.claims(),
        }
    }

    /// The claims of this lock its model at this size leaves out, each with why and the flag
    /// that checks it.
    pub fn left_out(&self) -> Vec<(&'static str, String)> {
        match self {
            Runnable::Family(model) => model.left_out(),
            Runnable::Lock(_) | Runnable::Lemma(_) | Runnable::GlobalTime(_) => Vec::new(),
        }
    }

    pub fn title(&self) -> String {
        use check::CheckedModel;
        match self {
            Runnable::Lock(model) => model.title(),
            Runnable::Lemma(model) => model.title(),
            Runnable::GlobalTime(model) => model.title(),
            Runnable::Family(model) => model.title(),
        }
    }

    /// Serve stateright's Explorer on `address` (blocks).
    pub fn explore(self, address: std::net::SocketAddr) {
        use stateright::Model;
        match self {
            Runnable::Lock(model) => {
                model.checker().serve(address);
            }
            Runnable::Lemma(model) => {
                model.checker().serve(address);
            }
            Runnable::GlobalTime(model) => {
                model.checker().serve(address);
            }
            Runnable::Family(model) => model.explore(address),
        }
    }
}
