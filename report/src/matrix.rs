//! `cassalock report matrix`: every algorithm against every fault model, each cell judged by the
//! model checker where it applies and by the simulator over N seeds.

//!
//! Each cell is judged into typed values (`Judgement`: claim, verdict, model states or sim
//! seeds, whether the fault fired, trace files); the markdown, the compact view and the thesis
//! section are rendered from those values at the end, never from each other's text.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cassalock::driver::Algorithm;
use cassalock::registry::Lock;
use cassalock_judge::{Aspect, ClaimId, ClaimVerdict};
use cassalock_models::check::Verdict;
use cassalock_models::{Fault, ModelName, Spec};
use rayon::prelude::*;

use crate::{write_file, ReportError};
use cassalock_sim::run::{run, RunOutcome};
use cassalock_sim::scenario::{build, SimOptions};
use cassalock_sim::trace::render;

mod family_sim;
mod units;

use units::Unit;
pub use units::{MatrixShard, MatrixSweep, ModelOutcome, ModelRow, UnitResult};

/// A row: a lock of the registry (`cassalock::registry`) that has a row in the matrix.
pub type Row = cassalock::registry::Lock;

/// Every row, in the order of the registry's locks' declaration: the thesis's, then the other
/// families'.
pub fn matrix_rows() -> Vec<Row> {
    let mut rows: Vec<Row> = Row::all().filter(|lock| lock.entry().matrix_row.is_some()).collect();
    rows.sort();
    rows
}

/// What the matrix knows of a row beside the registry's entry.
pub trait MatrixRow {
    /// Its title in the matrix.
    fn row_title(self) -> &'static str;
    /// Its key in the matrix's file names: its registry name.
    fn key(self) -> &'static str;
    /// The faults this row is judged under: the thesis's rows under the Cassandra cluster's
    /// faults, the other families' under their servers' (a Redis server has no consistency
    /// level; a Cassandra cluster has no failover of a primary).
    fn columns(self) -> &'static [Column];
}

impl MatrixRow for Row {
    fn row_title(self) -> &'static str {
        self.entry().matrix_row.expect("a matrix row has a title (matrix_rows)")
    }

    fn key(self) -> &'static str {
        self.name()
    }

    fn columns(self) -> &'static [Column] {
        if self.is_family() {
            &Column::FAMILY
        } else {
            &Column::THESIS
        }
    }
}

/// The columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Column {
    None,
    Loss,
    Partition,
    Crash,
    Pause,
    SkewBelowTtl,
    SkewAtTtl,
    ClOne,
    RenewalRace,
    /// Store requests fail, before or after they apply.
    StoreFailure,
    /// A node's clock steps back.
    BackwardJump,
    /// A server restarts without persistence.
    Restart,
    /// A replica is promoted before it has the primary's acknowledged writes.
    Failover,
    /// A server's clock jumps forward by the TTL.
    ServerClockJump,
    /// An unlock message (Redis pub/sub) is lost on its way to a waiter (Redisson).
    LostNotification,
}

impl Column {
    /// The columns of the thesis's rows.
    pub const THESIS: [Column; 11] = [
        Column::None,
        Column::Loss,
        Column::Partition,
        Column::Crash,
        Column::Pause,
        Column::SkewBelowTtl,
        Column::SkewAtTtl,
        Column::ClOne,
        Column::RenewalRace,
        Column::StoreFailure,
        Column::BackwardJump,
    ];

    /// The columns of the other families' rows.
    pub const FAMILY: [Column; 7] = [
        Column::None,
        Column::Pause,
        Column::StoreFailure,
        Column::Restart,
        Column::Failover,
        Column::ServerClockJump,
        Column::LostNotification,
    ];

    fn name(self) -> &'static str {
        match self {
            Column::None => "none",
            Column::Loss => "message loss",
            Column::Partition => "partition",
            Column::Crash => "crash",
            Column::Pause => "pause",
            Column::SkewBelowTtl => "skew below the TTL",
            Column::SkewAtTtl => "skew at or above the TTL",
            Column::ClOne => "CL=ONE",
            Column::RenewalRace => "renewal race",
            Column::StoreFailure => "store failures",
            Column::BackwardJump => "clock steps back",
            Column::Restart => "restart without persistence",
            Column::Failover => "failover",
            Column::ServerClockJump => "server clock jumps",
            Column::LostNotification => "lost unlock message",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Column::None => "none",
            Column::Loss => "loss",
            Column::Partition => "partition",
            Column::Crash => "crash",
            Column::Pause => "pause",
            Column::SkewBelowTtl => "skew-below-ttl",
            Column::SkewAtTtl => "skew-at-ttl",
            Column::ClOne => "cl-one",
            Column::RenewalRace => "renewal-race",
            Column::StoreFailure => "store-failure",
            Column::BackwardJump => "backward-jump",
            Column::Restart => "restart",
            Column::Failover => "failover",
            Column::ServerClockJump => "server-clock-jump",
            Column::LostNotification => "lost-notification",
        }
    }
}

/// How a fault is brought about in a simulation run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Firing {
    /// By configuration (clock offsets, consistency level): always in effect.
    Configured,
    /// An injected fault: it fired if the run recorded it.
    Injected,
    /// A renewal ran during a release of the same acquisition (needs detailed records).
    RenewalDuringRelease,
}

/// One way of judging a cell.
#[derive(Clone, Debug)]
enum Source {
    Model {
        spec: Spec,
        label: &'static str,
    },
    Sim {
        scenario: &'static str,
        options: SimOptions,
        label: &'static str,
        firing: Firing,
    },
    /// A scenario of the other families' simulator (`cassalock sim --scenario NAME`).
    FamilySim {
        scenario: &'static str,
        label: &'static str,
    },
    NotApplicable(&'static str),
}

fn model(model: ModelName, fault: Fault, label: &'static str) -> Source {
    let mut spec = Spec::new(model);
    spec.fault = fault;
    Source::Model { spec, label }
}

fn sim(scenario: &'static str, label: &'static str, firing: Firing) -> Source {
    Source::Sim {
        scenario,
        options: SimOptions::default(),
        label,
        firing,
    }
}

fn skew(offset_s: f64, label: &'static str) -> Source {
    Source::Sim {
        scenario: "skew",
        options: SimOptions {
            offset_s: Some(offset_s),
            ..SimOptions::default()
        },
        label,
        firing: Firing::Configured,
    }
}

fn sources(row: Row, column: Column) -> Vec<Source> {
    use Column as C;
    use Firing::*;
    if row == Row::GlobalTime {
        return match column {
            C::None => vec![model(
                ModelName::Lock(Lock::GlobalTime),
                Fault::None,
                "model, clocks in any order",
            )],
            C::Crash => vec![
                model(
                    ModelName::Lock(Lock::GlobalTime),
                    Fault::Crash,
                    "model, r0 3 ticks ahead, crashes",
                ),
                sim("timeservice-stall", "sim, ts0 20 s ahead, killed", Injected),
            ],
            C::SkewBelowTtl | C::SkewAtTtl => {
                vec![model(
                    ModelName::Lock(Lock::GlobalTime),
                    Fault::Skew,
                    "model, r0 2 ticks ahead",
                )]
            }
            _ => vec![Source::NotApplicable(
                "the time service's claim (T5) is about clock order and crashes",
            )],
        };
    }
    if row.is_family() {
        return family_sources(row, column);
    }
    let lock_model = match row {
        Row::Old => ModelName::Lock(Lock::Old),
        Row::Queue => ModelName::Lock(Lock::Queue),
        _ => ModelName::Lock(Lock::QueueTry),
    };
    let mut list = match column {
        C::None => vec![
            model(lock_model, Fault::None, "model, perfect clock"),
            sim("contention", "sim, contention", Configured),
        ],
        C::Loss => vec![sim("loss", "sim, 20% loss for 40 s", Injected)],
        C::Partition => vec![sim("partition", "sim, holder cut off TTL + 15 s", Injected)],
        C::Crash => vec![
            model(lock_model, Fault::Crash, "model, holder crashes"),
            sim("crash-holder", "sim, holder killed", Injected),
        ],
        C::Pause => {
            let mut spec = Spec::new(lock_model);
            spec.fault = Fault::Pause;
            spec.fencing = true;
            vec![
                Source::Model {
                    spec,
                    label: "model, holder paused, fencing",
                },
                sim("pause", "sim, holder paused TTL + 10 s, fencing", Injected),
                sim(
                    "pause-at-rewrite",
                    "sim, holder paused at renewal's rewrite TTL/2 + 5 s, fencing",
                    Injected,
                ),
            ]
        }
        C::SkewBelowTtl => vec![
            model(lock_model, Fault::Skew, "model, a client clock a tick behind"),
            skew(7.5, "sim, r0 7.5 s ahead (TTL/4)"),
            skew(20.0, "sim, r0 20 s ahead (2 TTL/3)"),
        ],
        C::SkewAtTtl => vec![
            model(lock_model, Fault::TtlSkew, "model, coordinator a TTL ahead (S2)"),
            skew(30.0, "sim, r0 30 s ahead (= TTL)"),
        ],
        C::ClOne => vec![sim("cl-one", "sim, CL ONE, a replica briefly away", Configured)],
        C::RenewalRace => {
            let mut spec = Spec::new(lock_model);
            spec.leases = true;
            vec![
                Source::Model {
                    spec,
                    label: "model, leases and renewal",
                },
                sim("renew-race", "sim, renewals racing releases", RenewalDuringRelease),
            ]
        }
        C::StoreFailure => {
            let mut options = SimOptions::default();
            options.knobs.fail_before_apply_percent = Some(5.0);
            options.knobs.fail_after_apply_percent = Some(5.0);
            vec![
                model(
                    lock_model,
                    Fault::StoreFailure,
                    "model, one request fails, applied or not",
                ),
                Source::Sim {
                    scenario: "contention",
                    options,
                    label: "sim, contention, 5% of requests fail before and 5% after applying",
                    firing: Configured,
                },
            ]
        }
        C::Restart | C::Failover | C::ServerClockJump | C::LostNotification => {
            unreachable!("{} is a column of the other families' rows", column.name())
        }
        C::BackwardJump => {
            let mut options = SimOptions::default();
            options.knobs.backward_jump_s = Some(5.0);
            vec![Source::Sim {
                scenario: "contention",
                options,
                label: "sim, contention, one node's clock steps back 5 s",
                firing: Configured,
            }]
        }
    };
    if row == Row::QueueTry {
        for source in &mut list {
            if let Source::Sim { options, .. } = source {
                options.try_lock = true;
            }
        }
    }
    list
}

/// The other families' cells: their model (`models/src/family.rs`) under each of its faults.
fn family_sources(row: Row, column: Column) -> Vec<Source> {
    let model_name = match row {
        Row::RedisSetNx => ModelName::Lock(Lock::RedisSetNx),
        Row::Redlock => ModelName::Lock(Lock::Redlock),
        Row::Redisson => ModelName::Lock(Lock::Redisson),
        Row::RedissonFair => ModelName::Lock(Lock::RedissonFair),
        Row::Zookeeper => ModelName::Lock(Lock::Zookeeper),
        Row::Etcd => ModelName::Lock(Lock::Etcd),
        _ => ModelName::Lock(Lock::Memcached),
    };
    let (fault, label) = match column {
        Column::None => (Fault::None, "model, no fault"),
        Column::Pause => (Fault::Pause, "model, holder paused between its check and its write"),
        Column::StoreFailure => (Fault::StoreFailure, "model, one request or reply lost"),
        Column::Restart => (
            Fault::Restart,
            match row {
                Row::Redlock => "model, master 0 restarts at once without persistence",
                Row::Memcached => "model, the server restarts (Memcached keeps nothing)",
                Row::Zookeeper => "model, the server restarts (tree and sessions persist)",
                Row::Etcd => "model, the server restarts (keys and leases persist)",
                _ => "model, the server restarts without persistence",
            },
        ),
        Column::Failover => (
            Fault::Failover,
            "model, the replica promoted before it has the acknowledged writes",
        ),
        Column::ServerClockJump => (
            Fault::ServerClockJump,
            match row {
                Row::Redlock => "model, master 0's clock jumps forward by the TTL",
                Row::Zookeeper => "model, the server's clock jumps past the session timeout",
                Row::Etcd => "model, the server's clock jumps forward by the session TTL",
                _ => "model, the server's clock jumps forward by the TTL",
            },
        ),
        Column::LostNotification => (
            Fault::LostNotification,
            match row {
                Row::Zookeeper | Row::Etcd => "model, one watch event to a waiter lost",
                _ => "model, one unlock message to a waiter lost",
            },
        ),
        other => unreachable!("{} is not a column of the family rows", other.name()),
    };
    let supported = match row {
        Row::RedisSetNx => cassalock_models::family::RedisSetNxModel::supports(fault),
        Row::Redlock => cassalock_models::family::RedlockModel::supports(fault),
        Row::Redisson => cassalock_models::family::RedissonModel::supports(fault),
        Row::RedissonFair => cassalock_models::family::RedissonFairModel::supports(fault),
        Row::Zookeeper => cassalock_models::coord::ZooKeeperModel::supports(fault),
        Row::Etcd => cassalock_models::coord::EtcdModel::supports(fault),
        _ => cassalock_models::family::MemcachedModel::supports(fault),
    };
    if !supported {
        debug_assert!(
            family_sim::sources(row, column).is_empty(),
            "a simulator line where the model says the fault does not apply"
        );
        return vec![Source::NotApplicable(match column {
            Column::Failover if matches!(row, Row::Zookeeper | Row::Etcd) => {
                "one server in the model (a quorum ensemble does not fail over to a replica that lacks acknowledged writes)"
            }
            Column::Failover => "no replica (independent servers)",
            Column::LostNotification => "no unlock message: waiters poll",
            _ => "not a fault of this lock's server",
        })];
    }
    let mut sources = vec![model(model_name, fault, label)];
    sources.extend(family_sim::sources(row, column));
    if row == Row::RedissonFair && column == Column::None {
        // F-order needs a client that comes back to a queue another waits in: 2 x 1 has none.
        let mut spec = Spec::new(model_name);
        spec.acquisitions = Some(2);
        sources.push(Source::Model {
            spec,
            label: "model, no fault, 2 clients x 2 acquisitions (F-order)",
        });
    }
    sources
}

/// The theorem-level claims a sim cell judges per row (the "verdicts" column), in the order the
/// cells list them (by ID text).
fn sim_claims(row: Row) -> &'static [ClaimId] {
    match row {
        Row::QueueTry => &[ClaimId::K3, ClaimId::T1Belief, ClaimId::T1Resource],
        Row::RedissonFair => &[
            ClaimId::FDrop,
            ClaimId::FOrder,
            ClaimId::T1Belief,
            ClaimId::T1Resource,
            ClaimId::T2,
        ],
        // The family simulator has no K3 (no renewal stamped after a delete can resurrect a
        // server-expired key).
        _ if row.is_family() => &[ClaimId::T1Belief, ClaimId::T1Resource, ClaimId::T2],
        _ => &[ClaimId::K3, ClaimId::T1Belief, ClaimId::T1Resource, ClaimId::T2],
    }
}

/// The contract items (docs/contract.md), one column each.
const CONTRACT: [ClaimId; 5] = [
    ClaimId::CTry,
    ClaimId::CFree,
    ClaimId::CRelease,
    ClaimId::CLost,
    ClaimId::CToken,
];

fn is_contract(claim: ClaimId) -> bool {
    CONTRACT.contains(&claim)
}

/// The contract items a sim cell of this row judges: C-try where clients call `try_lock`,
/// C-release where they call `lock()` (the simulator judges handovers for `lock()` callers).
fn contract_claims(row: Row) -> &'static [ClaimId] {
    match row {
        Row::QueueTry => &[ClaimId::CTry, ClaimId::CFree, ClaimId::CLost, ClaimId::CToken],
        // The family simulator judges C-token's growing half (its C-fence) where tokens grow,
        // and no C-free (the model does).
        // C-lost only where a lane renews the lease and so can tell the holder (Redisson's
        // watchdog, etcd's keep-alive); a Curator holder is never told (it believes until its
        // next request), and SET NX, Redlock and Memcached holders check their own clock.
        Row::Etcd => &[ClaimId::CRelease, ClaimId::CLost, ClaimId::CToken],
        Row::Zookeeper => &[ClaimId::CRelease, ClaimId::CToken],
        Row::Redisson | Row::RedissonFair => &[ClaimId::CRelease, ClaimId::CLost],
        _ if row.is_family() => &[ClaimId::CRelease],
        _ => &[ClaimId::CFree, ClaimId::CRelease, ClaimId::CLost, ClaimId::CToken],
    }
}

/// Why a row's sim cells do not judge a contract item.
fn contract_not_applicable(row: Row, claim: ClaimId) -> &'static str {
    match claim {
        ClaimId::CTry => "n/a: clients call lock()",
        ClaimId::CFree if row.is_family() => "not judged by this simulator (the model's: verdicts column)",
        ClaimId::CToken if row.is_family() => "n/a: no growing token",
        ClaimId::CLost if row.is_family() => {
            "not judged by this simulator: no lane renews the lease to tell the holder"
        }
        ClaimId::CRelease => "n/a: judged for lock() callers",
        _ => "n/a",
    }
}

/// Every claim a sim cell of this row judges, and searches seeds for.
fn all_sim_claims(row: Row) -> Vec<ClaimId> {
    sim_claims(row).iter().chain(contract_claims(row)).copied().collect()
}

fn algorithm(row: Row) -> Algorithm {
    match row {
        Row::Old => Algorithm::Old,
        _ => Algorithm::Queue,
    }
}

/// Options of a matrix run.
#[derive(Clone, Debug)]
pub struct MatrixOptions {
    pub out: PathBuf,
    /// The seed budget of each simulator search: seeds 0, 1, ... up to this many.
    pub max_seeds: u64,
    /// The wall-time cap of each simulator search (each sim line of a cell). A search it stops
    /// is no verdict, and the report says so: its output depends on the machine.
    pub cell_time: Duration,
    /// Seeds of each run behind "What the contract checks found".
    pub contract_seeds: u64,
    pub jobs: usize,
    /// Only the thesis's rows (`--thesis-only`): the other families' are left out.
    pub thesis_only: bool,
}

impl MatrixOptions {
    /// The rows this run judges.
    pub fn rows(&self) -> Vec<Row> {
        matrix_rows()
            .into_iter()
            .filter(|row| !(self.thesis_only && row.is_family()))
            .collect()
    }
}

/// What a matrix run wrote, and what made its output depend on the machine.
#[derive(Clone, Debug)]
pub struct MatrixRun {
    pub files: Vec<String>,
    /// The searches the wall-time cap stopped before their seed budget (empty: the report is a
    /// function of the commit and the options).
    pub stopped_by_time: Vec<String>,
}

/// Did the fault of a sim source fire in this run?
fn fired(firing: Firing, outcome: &RunOutcome) -> bool {
    match firing {
        Firing::Configured => true,
        Firing::Injected => outcome.verdicts.faults_begun > 0,
        Firing::RenewalDuringRelease => outcome.verdicts.renewal_during_release,
    }
}

// ---- the typed cells ----

/// A model's trace file, linked from its cell.
#[derive(Clone, Debug)]
struct TraceFile {
    /// Under `matrix/`.
    name: String,
    /// The trace's length.
    steps: usize,
}

/// One claim as a model judged it.
#[derive(Clone, Debug)]
struct ModelClaim {
    claim: ClaimId,
    /// The claim as the cell prints it: its ID, tagged "(always)" or "(liveness)" when the
    /// model checks it both ways (C-lost: within its bound, and eventually).
    name: String,
    verdict: Verdict,
    /// The shortest counterexample or example, for a violated or reachable property.
    trace: Option<TraceFile>,
}

/// The first failing seed of a sim claim.
#[derive(Clone, Debug)]
struct FirstFailure {
    seed: u64,
    /// Its trace file, under `matrix/`.
    file: String,
    /// The replay command of that seed.
    command: String,
}

/// One claim's seed search.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClaimSearch {
    #[serde(with = "units::claim_text")]
    claim: ClaimId,
    /// The lowest seed in which it was violated.
    first_violation: Option<u64>,
    /// Seeds (of those tried) whose run gave the check an occasion.
    exercised: u64,
    /// Seeds whose run stopped at its bound before the check could decide (the family
    /// simulator's T2: a client not done by then): no verdict in those seeds.
    bounded: u64,
}

/// One claim as the simulator's seed search judged it.
#[derive(Clone, Debug)]
struct SimClaim {
    search: ClaimSearch,
    first_failure: Option<FirstFailure>,
}

/// One way a cell was judged, with its verdicts: what the markdown is rendered from.
#[derive(Clone, Debug)]
enum Judgement {
    NotApplicable(&'static str),
    Model {
        label: &'static str,
        states: usize,
        claims: Vec<ModelClaim>,
        /// The same model run (same spec) was already shown in this row's cell of that fault:
        /// the cell points there instead of repeating it, and its violations are listed once.
        same_run_as: Option<&'static str>,
    },
    Sim {
        label: &'static str,
        /// Seeds tried (0..tried), and whether the wall-time cap ended the search.
        tried: u64,
        stopped_by_time: bool,
        /// Seeds in which the fault fired.
        fired: u64,
        /// Theorem-level claims, then contract items.
        claims: Vec<SimClaim>,
        /// The longest GlobalTime stall over the seeds (S1), in seconds.
        stall_s: Option<f64>,
        /// Times a fencing token went down, over the seeds.
        token_drops: u64,
    },
}

/// "1 seed" or "N seeds".
fn seeds(n: u64) -> String {
    if n == 1 {
        "1 seed".into()
    } else {
        format!("{n} seeds")
    }
}

impl Judgement {
    /// Did this judgement find `claim` violated (`None`: any theorem-level claim, not the
    /// contract items)?
    fn violated(&self, claim: Option<ClaimId>) -> bool {
        let wanted = |c: ClaimId| claim.map_or(!is_contract(c), |claim| claim == c);
        match self {
            Judgement::NotApplicable(_) => false,
            Judgement::Model { claims, .. } => claims.iter().any(|c| wanted(c.claim) && c.verdict == Verdict::Violated),
            // A fault that never fired hides its failures: no verdict.
            Judgement::Sim { claims, fired, .. } => {
                *fired > 0
                    && claims
                        .iter()
                        .any(|c| wanted(c.search.claim) && c.search.first_violation.is_some())
            }
        }
    }

    /// The model's verdict on `claim`, if this is a model judgement that checked it.
    fn model_verdict(&self, claim: ClaimId) -> Option<&Verdict> {
        match self {
            Judgement::Model { claims, .. } => claims.iter().find(|c| c.claim == claim).map(|c| &c.verdict),
            _ => None,
        }
    }

    /// A sim judgement whose fault never fired: no verdict.
    fn never_fired(&self) -> bool {
        matches!(self, Judgement::Sim { fired: 0, .. })
    }

    /// Fencing tokens went down in a sim judgement with a verdict.
    fn tokens_went_down(&self) -> bool {
        matches!(self, Judgement::Sim { fired, token_drops, .. } if *fired > 0 && *token_drops > 0)
    }

    /// A sim claim's search result in words (no link).
    fn search_text(tried: u64, stopped_by_time: bool, search: &ClaimSearch) -> String {
        match search.first_violation {
            Some(seed) => format!("violated at seed {seed} ({} tried)", seeds(seed + 1)),
            None if stopped_by_time => {
                format!("stopped by the time limit after {}: not a verdict", seeds(tried))
            }
            None if search.exercised == 0 && search.bounded > 0 => {
                format!("bounded in {} of {}: no verdict", search.bounded, seeds(tried))
            }
            None if search.exercised == 0 => format!("no occasion in {}", seeds(tried)),
            None if search.bounded > 0 => format!(
                "no violation in {} ({} stopped at the run's bound: no verdict there)",
                seeds(tried),
                search.bounded
            ),
            None => format!("no violation in {}", seeds(tried)),
        }
    }

    /// A sim claim's search result, linked to the first failing seed's trace.
    fn search_markdown(tried: u64, stopped_by_time: bool, claim: &SimClaim) -> String {
        let text = Self::search_text(tried, stopped_by_time, &claim.search);
        match &claim.first_failure {
            Some(first) => format!("[{text}](matrix/{})", first.file),
            None => text,
        }
    }

    /// The "verdicts" column: the theorem-level claims.
    fn markdown(&self) -> String {
        match self {
            Judgement::NotApplicable(why) => format!("n/a: {why}"),
            Judgement::Model {
                label,
                same_run_as: Some(column),
                ..
            } => format!("**{label}**: the same model run as the *{column}* row above (its verdicts count here too)"),
            Judgement::Model {
                label, states, claims, ..
            } => {
                let parts: Vec<String> = claims
                    .iter()
                    .map(|c| match &c.trace {
                        Some(trace) => format!("{} [{}](matrix/{})", c.name, short(&c.verdict), trace.name),
                        None => format!("{} {}", c.name, short(&c.verdict)),
                    })
                    .collect();
                format!("**{label}** ({states} states): {}", parts.join(", "))
            }
            Judgement::Sim {
                label,
                tried,
                stopped_by_time,
                fired,
                claims,
                stall_s,
                token_drops,
            } => {
                if *fired == 0 {
                    return format!("**{label}**: the fault never fired in {}: no verdict", seeds(*tried));
                }
                // Claims with the same result share it: "K3, T2: no violation in 200 seeds".
                let mut groups: Vec<(String, Vec<String>)> = Vec::new();
                for claim in claims.iter().filter(|c| !is_contract(c.search.claim)) {
                    let text = Self::search_markdown(*tried, *stopped_by_time, claim);
                    match groups.iter_mut().find(|(t, _)| *t == text) {
                        Some((_, ids)) => ids.push(claim.search.claim.to_string()),
                        None => groups.push((text, vec![claim.search.claim.to_string()])),
                    }
                }
                let parts: Vec<String> = groups
                    .iter()
                    .map(|(text, ids)| format!("{}: {text}", ids.join(", ")))
                    .collect();
                let fired = if fired < tried {
                    format!(", the fault fired in {fired} of them")
                } else {
                    String::new()
                };
                let mut line = format!("**{label}** ({} searched{fired}): {}", seeds(*tried), parts.join("; "));
                if let Some(stall) = stall_s {
                    line.push_str(&format!("; S1: GlobalTime stood still up to {stall:.1} s"));
                }
                if *token_drops > 0 {
                    line.push_str(&format!("; fencing tokens went down {token_drops} times"));
                }
                line
            }
        }
    }

    /// A contract column: this judgement's result on `claim` (`None`: a model, which does not
    /// judge the contract).
    fn contract_markdown(&self, row: Row, claim: ClaimId) -> Option<String> {
        match self {
            Judgement::NotApplicable(_) => Some("n/a".into()),
            Judgement::Model { .. } => None,
            Judgement::Sim {
                tried,
                stopped_by_time,
                fired,
                claims,
                ..
            } => Some(match claims.iter().find(|c| c.search.claim == claim) {
                None => contract_not_applicable(row, claim).into(),
                Some(_) if *fired == 0 => "no verdict: the fault never fired".into(),
                Some(c) => Self::search_markdown(*tried, *stopped_by_time, c),
            }),
        }
    }

    /// The violations this judgement found, one line each, for "Every violation found".
    fn findings(&self, row: Row, column: Column) -> Vec<String> {
        match self {
            Judgement::NotApplicable(_) => Vec::new(),
            Judgement::Model {
                same_run_as: Some(_), ..
            } => Vec::new(),
            Judgement::Model { claims, .. } => claims
                .iter()
                .filter(|c| c.verdict == Verdict::Violated)
                .filter_map(|c| {
                    let trace = c.trace.as_ref()?;
                    Some(format!(
                        "{} / {}: model: {} violated ({} steps): [trace](matrix/{})",
                        row.row_title(),
                        column.name(),
                        c.name,
                        trace.steps,
                        trace.name
                    ))
                })
                .collect(),
            Judgement::Sim { label, claims, .. } => claims
                .iter()
                .filter_map(|c| {
                    let first = c.first_failure.as_ref()?;
                    Some(format!(
                        "{} / {}: {label}: {} violated at seed {} ({} tried): `{}`",
                        row.row_title(),
                        column.name(),
                        c.search.claim,
                        first.seed,
                        seeds(first.seed + 1),
                        first.command
                    ))
                })
                .collect(),
        }
    }
}

/// A cell: every judgement made of it, in source order.
type Cell = Vec<Judgement>;

/// The aspects the compact view shows apart, so that an unfair lock never reads as unsafe.
const COMPACT_ASPECTS: [Aspect; 3] = [Aspect::Safety, Aspect::Liveness, Aspect::Fairness];

impl Judgement {
    /// The claims of `aspect` this judgement gave a verdict on, and whether each was violated
    /// and had an occasion (a model always has one; a simulator check may not).
    fn aspect_claims(&self, aspect: Aspect) -> Vec<(ClaimId, bool, bool)> {
        match self {
            Judgement::NotApplicable(_) => Vec::new(),
            Judgement::Model { claims, .. } => claims
                .iter()
                .filter(|c| c.claim.aspect() == aspect)
                .map(|c| (c.claim, c.verdict == Verdict::Violated, true))
                .collect(),
            // A fault that never fired gives no verdict: nothing judged here.
            Judgement::Sim { fired: 0, .. } => Vec::new(),
            Judgement::Sim { claims, .. } => claims
                .iter()
                .filter(|c| c.search.claim.aspect() == aspect)
                .map(|c| {
                    (
                        c.search.claim,
                        c.search.first_violation.is_some(),
                        c.search.exercised > 0,
                    )
                })
                .collect(),
        }
    }

    /// The claims of `aspect` this judgement found neither held nor violated: a model's
    /// "bounded" (its only counterexamples reach the last tick, or its budget stopped it), a
    /// seed search with seeds stopped at the run's bound and no violation.
    fn bounded_claims(&self, aspect: Aspect) -> Vec<ClaimId> {
        match self {
            Judgement::NotApplicable(_) | Judgement::Sim { fired: 0, .. } => Vec::new(),
            Judgement::Model { claims, .. } => claims
                .iter()
                .filter(|c| c.claim.aspect() == aspect && matches!(c.verdict, Verdict::Bounded(_)))
                .map(|c| c.claim)
                .collect(),
            Judgement::Sim { claims, .. } => claims
                .iter()
                .filter(|c| c.search.claim.aspect() == aspect)
                .filter(|c| c.search.first_violation.is_none() && c.search.bounded > 0)
                .map(|c| c.search.claim)
                .collect(),
        }
    }

    /// Does this judgement check any claim of `aspect` (whether or not its fault fired)?
    fn checks(&self, aspect: Aspect) -> bool {
        match self {
            Judgement::NotApplicable(_) => false,
            Judgement::Model { claims, .. } => claims.iter().any(|c| c.claim.aspect() == aspect),
            Judgement::Sim { claims, .. } => claims.iter().any(|c| c.search.claim.aspect() == aspect),
        }
    }
}

/// What the compact view says of one aspect (safety, liveness, fairness) of a cell.
fn aspect_mark(cell: &Cell, aspect: Aspect) -> String {
    if matches!(cell.first(), Some(Judgement::NotApplicable(_))) {
        return "n/a".into();
    }
    let judged: Vec<(ClaimId, bool, bool)> = cell.iter().flat_map(|j| j.aspect_claims(aspect)).collect();
    let mut violated: Vec<ClaimId> = judged.iter().filter(|c| c.1).map(|c| c.0).collect();
    violated.sort();
    violated.dedup();
    if !violated.is_empty() {
        let ids: Vec<&str> = violated.iter().map(|c| c.as_str()).collect();
        return format!("**violated: {}**", ids.join(", "));
    }
    if aspect == Aspect::Liveness
        && cell
            .iter()
            .any(|j| j.model_verdict(ClaimId::S1) == Some(&Verdict::Reachable))
    {
        return "**S1 stall**".into();
    }
    if judged.is_empty() {
        // Checked only by a fault that never fired, or not checked at all.
        return if cell.iter().any(|j| j.checks(aspect)) {
            "no verdict".into()
        } else {
            "-".into()
        };
    }
    // Claims no check could decide (a model's last tick, a run's bound): never a pass.
    let mut bounded: Vec<ClaimId> = cell.iter().flat_map(|j| j.bounded_claims(aspect)).collect();
    bounded.sort();
    bounded.dedup();
    let bounded_ids: Vec<&str> = bounded.iter().map(|c| c.as_str()).collect();
    if judged.iter().all(|c| !c.2) {
        return if bounded.is_empty() {
            "no occasion".into()
        } else {
            format!("bounded: {}", bounded_ids.join(", "))
        };
    }
    let bounded_note = if bounded.is_empty() {
        String::new()
    } else {
        format!("; bounded: {}", bounded_ids.join(", "))
    };
    if cell.iter().any(|j| j.never_fired() && j.checks(aspect)) {
        // Some line's fault never fired: what was judged found nothing, the rest is unknown.
        return format!("no violation (part: no verdict){bounded_note}");
    }
    format!("no violation{bounded_note}")
}

/// What the compact contract view says of `claim` in a cell: the lowest first-violating seed
/// over the cell's simulator configurations, else the smallest search.
fn contract_compact_mark(cell: &Cell, claim: ClaimId) -> String {
    let mut lowest: Option<u64> = None;
    let mut searched: Option<u64> = None;
    let (mut judged, mut exercised, mut stopped, mut unfired) = (false, false, false, false);
    for judgement in cell {
        let Judgement::Sim {
            tried,
            stopped_by_time,
            fired,
            claims,
            ..
        } = judgement
        else {
            continue;
        };
        let Some(c) = claims.iter().find(|c| c.search.claim == claim) else {
            continue;
        };
        judged = true;
        if *fired == 0 {
            unfired = true;
            continue;
        }
        if let Some(seed) = c.search.first_violation {
            lowest = Some(lowest.map_or(seed, |l| l.min(seed)));
        }
        searched = Some(searched.map_or(*tried, |s| s.min(*tried)));
        exercised |= c.search.exercised > 0;
        stopped |= *stopped_by_time;
    }
    match (lowest, searched) {
        _ if matches!(cell.first(), Some(Judgement::NotApplicable(_))) => "n/a".into(),
        (Some(seed), _) => format!("**seed {seed}**"),
        _ if !judged => "-".into(),
        _ if stopped => "time limit".into(),
        (None, Some(n)) if exercised => format!("none in {n}"),
        (None, Some(n)) => format!("no occasion in {n}"),
        (None, None) if unfired => "no verdict".into(),
        (None, None) => "-".into(),
    }
}

/// What one seed's run says of one claim.
#[derive(Clone, Copy, Debug, Default)]
struct Check {
    violated: bool,
    /// The run gave the check an occasion.
    exercised: bool,
    /// The run stopped at its bound before the check could decide.
    bounded: bool,
}

/// What one seed's run says, kept small: the run's records are dropped in the worker.
struct SeedOutcome {
    fired: bool,
    /// Per searched claim.
    checks: Vec<Check>,
    /// S1 stall, seconds.
    stall_s: Option<f64>,
    token_drops: u64,
}

/// What a sim source's seed search found: aggregates only, whatever the number of seeds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimResult {
    /// Seeds tried: 0..tried.
    tried: u64,
    /// The wall-time cap ended the search before the seed budget.
    stopped_by_time: bool,
    fired: u64,
    claims: Vec<ClaimSearch>,
    /// Longest GlobalTime stall (S1 runs).
    stall_s: Option<f64>,
    token_drops: u64,
}

impl SimResult {
    fn new(claims: &[ClaimId]) -> Self {
        SimResult {
            tried: 0,
            stopped_by_time: false,
            fired: 0,
            claims: claims
                .iter()
                .map(|&claim| ClaimSearch {
                    claim,
                    first_violation: None,
                    exercised: 0,
                    bounded: 0,
                })
                .collect(),
            stall_s: None,
            token_drops: 0,
        }
    }

    /// Add the next seed's outcome (seeds come in order: `self.tried` is its seed).
    fn add(&mut self, outcome: &SeedOutcome) {
        let seed = self.tried;
        self.tried += 1;
        self.fired += u64::from(outcome.fired);
        self.token_drops += outcome.token_drops;
        if let Some(stall) = outcome.stall_s {
            self.stall_s = Some(self.stall_s.map_or(stall, |s: f64| s.max(stall)));
        }
        for (search, check) in self.claims.iter_mut().zip(&outcome.checks) {
            search.exercised += u64::from(check.exercised);
            search.bounded += u64::from(check.bounded);
            if check.violated {
                search.first_violation.get_or_insert(seed);
            }
        }
    }

    /// Every searched claim has its first violation: nothing left to search for.
    fn all_violated(&self) -> bool {
        self.claims.iter().all(|c| c.first_violation.is_some())
    }

    fn first_violation(&self, claim: ClaimId) -> Option<u64> {
        self.claims
            .iter()
            .find(|c| c.claim == claim)
            .and_then(|c| c.first_violation)
    }
}

/// The budget of one seed search.
#[derive(Clone, Copy, Debug)]
struct Budget {
    max_seeds: u64,
    time: Duration,
    /// Seeds run in parallel at a time. The result does not depend on it: seeds past the
    /// point where the search stops are dropped unread.
    batch: u64,
}

impl Budget {
    fn of(options: &MatrixOptions) -> Self {
        Budget {
            max_seeds: options.max_seeds,
            time: options.cell_time,
            batch: (options.jobs.max(1) as u64) * 4,
        }
    }
}

/// Why the matrix could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error("{label}: {source}")]
    Model {
        label: String,
        source: cassalock_models::SpecError,
    },
    /// The checker's own cross-checks disagreed: a bug in the checker, not a verdict.
    #[error("model checker disagreement in {label}: {errors:?}")]
    CheckerDisagreement { label: String, errors: Vec<String> },
    /// Shards' results that do not make one matrix (missing, repeated, of another sweep).
    #[error("{0}")]
    Shard(String),
}

/// Run the matrix and write matrix.md and its trace files: every unit of the plan on this
/// machine (shard 1 of 1), then the report rendered from their results.
pub fn run_matrix(
    options: &MatrixOptions,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<MatrixRun, MatrixError> {
    let shard = run_matrix_shard(options, 1, 1, progress)?;
    render_matrix(options, &[shard])
}

/// Run shard `k` of `n` of the matrix's units (`units`: the units `i % n == k - 1` of the
/// plan) and keep their results, writing nothing; `progress(unit, done, total)` before each.
pub fn run_matrix_shard(
    options: &MatrixOptions,
    k: u64,
    n: u64,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<MatrixShard, MatrixError> {
    debug_assert!(1 <= k && k <= n, "shard {k}/{n}");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .thread_name(|i| format!("matrix-{i}"))
        .build()
        .map_err(ReportError::from)?;
    let plan = units::plan(options);
    let mine: Vec<usize> = (0..plan.len()).filter(|&i| i as u64 % n == k - 1).collect();
    let mut results = Vec::with_capacity(mine.len());
    for (done, &index) in mine.iter().enumerate() {
        progress(&plan[index].label(), done, mine.len());
        results.push((index, units::execute(&plan[index], &pool, options)?));
    }
    Ok(MatrixShard {
        sweep: MatrixSweep::of(options),
        k,
        n,
        units: plan.len(),
        results,
    })
}

/// Write matrix.md and its trace files from the results of shards that together hold every
/// unit of the plan once (one machine's shard 1 of 1, or `cassalock merge` of N).
pub fn render_matrix(options: &MatrixOptions, shards: &[MatrixShard]) -> Result<MatrixRun, MatrixError> {
    if let Some(other) = shards.iter().find(|shard| shard.sweep != MatrixSweep::of(options)) {
        return Err(MatrixError::Shard(format!(
            "shard {}/{} is of another sweep ({:?}) than {:?}",
            other.k,
            other.n,
            other.sweep,
            MatrixSweep::of(options)
        )));
    }
    let results = units::Results::gathered(options, shards)?;
    let out_dir = options.out.join("matrix");
    crate::create_dir(&out_dir)?;
    let mut files = Vec::new();
    let mut stopped_by_time = Vec::new();
    let mut cells: BTreeMap<(Row, Column), Cell> = BTreeMap::new();
    // Per row, the model runs shown so far (by spec) and the fault whose cell shows them.
    let mut model_runs: Vec<(Row, Spec, &'static str, Judgement)> = Vec::new();
    for row in options.rows() {
        for &column in row.columns() {
            let mut cell = Cell::new();
            for (index, source) in sources(row, column).into_iter().enumerate() {
                // The unit of this line if it is a simulator's (thesis or families').
                let search = Unit::Search {
                    row,
                    column,
                    source: index,
                };
                match source {
                    Source::NotApplicable(why) => cell.push(Judgement::NotApplicable(why)),
                    Source::Model { spec, label } => {
                        if let Some((_, _, shown_in, judgement)) =
                            model_runs.iter().find(|(r, s, _, _)| *r == row && *s == spec)
                        {
                            let mut same = judgement.clone();
                            if let Judgement::Model { same_run_as, .. } = &mut same {
                                *same_run_as = Some(*shown_in);
                            }
                            cell.push(same);
                            continue;
                        }
                        let outcome = results.model(&Unit::Model {
                            row,
                            column,
                            spec: spec.clone(),
                            label,
                        })?;
                        let judgement = model_judgement(row, column, label, outcome, &out_dir, &mut files)?;
                        model_runs.push((row, spec, column.name(), judgement.clone()));
                        cell.push(judgement);
                    }
                    Source::Sim {
                        scenario,
                        options: sim_options,
                        label,
                        ..
                    } => {
                        let result = results.search(&search)?;
                        note_stopped(&mut stopped_by_time, (row, column, label), result);
                        cell.push(sim_judgement(
                            row,
                            column,
                            scenario,
                            &sim_options,
                            label,
                            result,
                            &out_dir,
                            &mut files,
                        )?);
                    }
                    Source::FamilySim { scenario, label } => {
                        let result = results.search(&search)?;
                        note_stopped(&mut stopped_by_time, (row, column, label), result);
                        cell.push(family_sim::judgement(
                            row, column, scenario, label, result, &out_dir, &mut files,
                        )?);
                    }
                }
            }
            cells.insert((row, column), cell);
        }
    }
    let mutants = mutant_lines(options, &results, &out_dir, &mut files, &mut stopped_by_time)?;
    let figures = (0..crate::contract_findings::keys().len())
        .map(|index| results.contract(&Unit::ContractSet(index)).cloned())
        .collect::<Result<Vec<_>, MatrixError>>()?;
    let findings = crate::contract_findings::assemble(options.contract_seeds, figures);
    stopped_by_time.extend(findings.stopped_by_time());
    let mut md = markdown(&cells, &mutants, options);
    crate::contract_findings::render(&mut md, &findings);
    write_file(&options.out, "matrix.md", &md)?;
    files.push("matrix.md".into());
    Ok(MatrixRun { files, stopped_by_time })
}

/// A search the wall-time cap stopped is listed in `stopped_by_time` (its verdicts depend on
/// the machine that ran it).
fn note_stopped(stopped_by_time: &mut Vec<String>, (row, column, label): (Row, Column, &str), result: &SimResult) {
    if result.stopped_by_time {
        stopped_by_time.push(format!(
            "{} / {}: {label} (after {})",
            row.row_title(),
            column.name(),
            seeds(result.tried)
        ));
    }
}

/// The file name of the trace of `claim`'s first failing `seed` in a cell's `scenario` line.
fn trace_file_name(row: Row, column: Column, scenario: &str, claim: ClaimId, seed: u64) -> String {
    format!(
        "{}-{}-{scenario}-{}-seed{seed}.txt",
        row.key(),
        column.key(),
        claim.as_str().to_lowercase()
    )
}

fn short(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Holds => "holds (exhaustive)".into(),
        // The checker's own wording: a clock-bounded run is never reported as plain "holds".
        Verdict::HoldsWithinClockBound(_) => verdict.to_string(),
        Verdict::Violated => "VIOLATED".into(),
        Verdict::Bounded(_) => "bounded".into(),
        Verdict::Reachable => "reachable".into(),
        Verdict::Unreachable => "unreachable".into(),
    }
}

/// A model's verdicts on a cell; writes the trace of every violated or reachable property.
fn model_judgement(
    row: Row,
    column: Column,
    label: &'static str,
    report: &ModelOutcome,
    out_dir: &std::path::Path,
    files: &mut Vec<String>,
) -> Result<Judgement, ReportError> {
    let mut claims = Vec::new();
    for property in &report.rows {
        let claim = property.claim;
        let checked_twice = report.rows.iter().filter(|other| other.claim == claim).count() > 1;
        let (claim_name, file_suffix) = if checked_twice {
            (format!("{claim} ({})", property.kind), format!("-{}", property.kind))
        } else {
            (claim.to_string(), String::new())
        };
        let trace = match &property.trace {
            Some((trace, steps)) if matches!(property.verdict, Verdict::Violated | Verdict::Reachable) => {
                let name = format!(
                    "{}-{}-model-{}{file_suffix}.txt",
                    row.key(),
                    column.key(),
                    claim.as_str().to_lowercase()
                );
                let text = format!(
                    "{}\n\n{} -- {}\n{}{}",
                    report.title,
                    property.property,
                    property.verdict,
                    property.detail.as_deref().map(|d| format!("{d}\n")).unwrap_or_default(),
                    trace
                );
                write_file(out_dir, &name, &text)?;
                files.push(format!("matrix/{name}"));
                Some(TraceFile { name, steps: *steps })
            }
            _ => None,
        };
        claims.push(ModelClaim {
            claim,
            name: claim_name,
            verdict: property.verdict.clone(),
            trace,
        });
    }
    Ok(Judgement::Model {
        label,
        states: report.graph_states,
        claims,
        same_run_as: None,
    })
}

/// Run one seed of a sim source and keep only what the search needs.
fn one_seed(
    row: Row,
    scenario: &str,
    sim_options: &SimOptions,
    firing: Firing,
    claims: &[ClaimId],
    seed: u64,
) -> SeedOutcome {
    let config = build(scenario, seed, algorithm(row), sim_options).expect("a known scenario");
    let outcome = run(&config, seed, firing == Firing::RenewalDuringRelease);
    SeedOutcome {
        fired: fired(firing, &outcome),
        checks: claims
            .iter()
            .map(|&claim| {
                let check = outcome.verdicts.check(claim);
                Check {
                    violated: check.verdict.is_violated(),
                    exercised: check.verdict != ClaimVerdict::NotExercised,
                    bounded: check.bounded(),
                }
            })
            .collect(),
        stall_s: outcome.verdicts.global_time_stall.map(|d| d.as_secs_f64()),
        token_drops: outcome.verdicts.token_drops as u64,
    }
}

/// The seed search of a sim source: seeds 0, 1, 2, ... in parallel batches of `budget.batch`,
/// read in seed order, until every claim in `claims` has its first violation, or the seed
/// budget, or the wall-time cap (checked between batches). Each claim's first violation is
/// its lowest violating seed whatever the batch size or thread count, and the aggregates cover
/// exactly the seeds up to where the search stopped, so the result is a function of the
/// options, unless the time cap stopped it (`stopped_by_time`).
fn search(
    pool: &rayon::ThreadPool,
    one_seed: &(dyn Fn(u64) -> SeedOutcome + Sync),
    claims: &[ClaimId],
    budget: Budget,
) -> SimResult {
    let started = Instant::now();
    let mut result = SimResult::new(claims);
    let mut next = 0u64;
    'search: while next < budget.max_seeds {
        if started.elapsed() >= budget.time {
            result.stopped_by_time = true;
            break;
        }
        let end = next.saturating_add(budget.batch.max(1)).min(budget.max_seeds);
        let outcomes: Vec<SeedOutcome> = pool.install(|| (next..end).into_par_iter().map(one_seed).collect());
        for outcome in &outcomes {
            result.add(outcome);
            if result.all_violated() {
                break 'search;
            }
        }
        next = end;
    }
    result
}

/// The replay flags of a sim source's options.
fn replay_flags(sim_options: &SimOptions) -> String {
    let mut flags = String::new();
    if let Some(offset) = sim_options.offset_s {
        flags.push_str(&format!(" --offset-s {offset}"));
    }
    if sim_options.try_lock {
        flags.push_str(" --try-lock");
    }
    if sim_options.k3 {
        flags.push_str(" --k3");
    }
    if sim_options.thesis_listings {
        flags.push_str(" --thesis-listings");
    }
    flags
}

/// Lines of a run's events kept in a trace file, half from the start and half from the end:
/// a long run's full trace is megabytes, and its replay command prints it all.
const TRACE_LINES: usize = 3000;

/// `events` with its middle left out if it is longer than [`TRACE_LINES`] lines.
fn shortened(events: &str, command: &str) -> String {
    let lines: Vec<&str> = events.lines().collect();
    if lines.len() <= TRACE_LINES {
        return events.to_owned();
    }
    let half = TRACE_LINES / 2;
    format!(
        "{}\n... {} lines left out here: `{command}` prints every event ...\n{}\n",
        lines[..half].join("\n"),
        lines.len() - 2 * half,
        lines[lines.len() - half..].join("\n")
    )
}

/// The simulator's verdicts on a cell; writes the first failing seed's trace of every violated
/// claim (one file per seed).
#[allow(clippy::too_many_arguments)]
fn sim_judgement(
    row: Row,
    column: Column,
    scenario: &str,
    sim_options: &SimOptions,
    label: &'static str,
    result: &SimResult,
    out_dir: &std::path::Path,
    files: &mut Vec<String>,
) -> Result<Judgement, ReportError> {
    let flags = replay_flags(sim_options);
    searched_judgement(label, result, result.stall_s, result.token_drops, |search, seed| {
        let name = trace_file_name(row, column, scenario, search.claim, seed);
        let config = build(scenario, seed, algorithm(row), sim_options).expect("known");
        let outcome = run(&config, seed, false);
        let command = format!(
            "cassalock replay --scenario {scenario} --seed {seed} --algorithm {}{flags}",
            algorithm(row).name()
        );
        let text = format!(
            "{}\nseed {seed}\n\nverdicts:\n{}\nreplay (with every store request): {command}\n\n{}",
            config.plan(),
            outcome.verdicts,
            shortened(&render(&outcome.records), &command)
        );
        write_file(out_dir, &name, &text)?;
        files.push(format!("matrix/{name}"));
        Ok(FirstFailure {
            seed,
            file: name,
            command,
        })
    })
}

/// A seed search's judgement: each claim with the trace of its first failing seed, written by
/// `write_trace` once per seed (claims first violated in the same seed share its file), and
/// none when the fault never fired.
fn searched_judgement(
    label: &'static str,
    result: &SimResult,
    stall_s: Option<f64>,
    token_drops: u64,
    mut write_trace: impl FnMut(&ClaimSearch, u64) -> Result<FirstFailure, ReportError>,
) -> Result<Judgement, ReportError> {
    let mut claims = Vec::new();
    let mut traces: BTreeMap<u64, FirstFailure> = BTreeMap::new();
    for search in &result.claims {
        let first_failure = match search.first_violation {
            Some(seed) if result.fired > 0 => Some(match traces.get(&seed) {
                Some(known) => known.clone(),
                None => {
                    let first = write_trace(search, seed)?;
                    traces.insert(seed, first.clone());
                    first
                }
            }),
            _ => None,
        };
        claims.push(SimClaim {
            search: search.clone(),
            first_failure,
        });
    }
    Ok(Judgement::Sim {
        label,
        tried: result.tried,
        stopped_by_time: result.stopped_by_time,
        fired: result.fired,
        claims,
        stall_s,
        token_drops,
    })
}

/// Which of the library's long-run settings (reused thread ids, the queue read from the last
/// hold) the sim lines and the model rows run with, read from how each builds its runs.
fn long_run_settings_sentence() -> String {
    let on_off = |on: bool| if on { "on" } else { "off" };
    let sim = |thesis_listings: bool| {
        let options = cassalock_sim::scenario::SimOptions {
            thesis_listings,
            ..Default::default()
        };
        cassalock_sim::scenario::build("contention", 0, cassalock::Algorithm::Queue, &options)
            .map(|run| (run.reuse_thread_ids, run.queue_read_from_last_hold))
            .expect("the contention scenario builds")
    };
    let (sim_reuse, sim_queue) = sim(false);
    let (listing_reuse, listing_queue) = sim(true);
    let model = Spec::new(ModelName::Lock(Lock::Queue));
    format!(
        "**Long-run settings.** The sim lines run the library's default: thread ids reused {}, the queue read from the last hold {} (lines run with `--thesis-listings`: {} and {}, as the listings). The model rows keep the listings' way: thread ids reused {}, the queue read from the last hold {} (`cassalock check --reuse-thread-ids --queue-read-from-last-hold` turns them on).",
        on_off(sim_reuse),
        on_off(sim_queue),
        on_off(listing_reuse),
        on_off(listing_queue),
        on_off(model.reuse_thread_ids),
        on_off(model.queue_read_from_last_hold)
    )
}

/// The whole report, rendered from the typed cells.
fn markdown(cells: &BTreeMap<(Row, Column), Cell>, mutants: &[(String, String)], options: &MatrixOptions) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Property matrix: algorithm x fault model\n");
    let _ = writeln!(
        md,
        "Generated by `{command}`. Each cell says how its claims fared under that fault, judged two ways: **model** rows come from the stateright models (`cassalock check`: every reachable state, exhaustively or up to a clock bound); **sim** rows come from the simulator (the library's own code against a simulated 3-replica cluster). The same command on the same commit writes the same bytes.\n",
        command = options.command_line(),
    );
    let _ = writeln!(md, "{}\n", long_run_settings_sentence());
    let _ = writeln!(
        md,
        "**Seed search.** Each sim line of a cell runs seeds 0, 1, 2, ... until every claim it judges has been violated, or the budget runs out: {} and {} s of wall time per sim line. Each claim reports the lowest seed that violates it (\"violated at seed S (S+1 seeds tried)\") or \"no violation in N seeds\"; a check the runs gave no occasion for says \"no occasion in N seeds\", never \"ok\". A search stopped by the time limit says \"stopped by the time limit after N seeds: not a verdict\" (that output depends on the machine, and `cassalock report` then exits with status 3).\n",
        seeds(options.max_seeds),
        options.cell_time.as_secs()
    );
    let _ = writeln!(md, "Claims: T1 (model) / T1-belief (sim): never two holders at once; T3 for TryGetLock. T1-resource: the resource never accepts a stale fencing token (fencing on). T2: every waiter acquires (model: no fair cycle or deadlock starves it; sim: every client finishes). T4: some TryGetLock caller acquires. F-order, F-overtakes: queue order. K3: no released lock stays taken. T5: GlobalTime never decreases. S1: a crashed replica that ran ahead freezes GlobalTime.\n");
    let _ = writeln!(md, "The contract (docs/contract.md): the C-* columns give the simulator's seed search; the model's verdicts on the same items (C-try, C-free, C-release, C-lost, C-token) are in the verdicts column. C-try: `try_lock` never waits for another owner (TryGetLock row); C-free: a failed call leaves nothing that keeps the lock from the next caller; C-release: after `release()` returns, a waiter acquires within a bound (lock() rows); C-lost: a holder whose lease ran out learns it within a bound; C-token: a later holder's token is higher, and the current holder's writes are never refused.\n");
    let _ = writeln!(md, "Verdicts: \"holds (exhaustive)\": every reachable state of the model checked (in the models with a clock a tick behind, time is kept relative to the clock and has no bound: reduction 7); \"holds within bound (clock <= N ticks)\": every reachable state with clocks up to the model's bound checked, nothing beyond it (each timed world at 2 threads x 1 acquisition is also checked by a test with the bound 2 ticks higher, and must give the same verdicts: that test found C-lost broken under a pause, fixed 2026-11-28); \"bounded\": a liveness property whose only counterexamples reach the model's last tick (where time stops), or a search its budget stopped: no verdict either way; \"reachable\" / \"unreachable\" (S1, T5-race, which say what *can* happen): the model found such a state, or proved there is none; \"no violation in N seeds\": none of the seeds searched broke it (never a proof); VIOLATED links to the shortest counterexample (model), \"violated at seed S\" to that seed's trace (sim); \"the fault never fired\": no verdict, never a pass. Every claim ID is defined in [docs/claims.md](../docs/claims.md), the contract items in [docs/contract.md](../docs/contract.md).\n");
    let rows = options.rows();
    if rows.iter().any(|row| row.is_family()) {
        let _ = writeln!(md, "**The locks people use instead** (Redis `SET NX PX`, Redlock over 3 masters, Memcached `add`, Redisson's `RLock` with its watchdog, and its fair lock) are judged under their servers' faults: a pause between the holder's validity check and its write (for Redisson the whole process, its watchdog too), a lost request or reply, a restart without persistence, a failover to a replica that lacks acknowledged writes, a server clock jump by the TTL, and for Redisson a lost unlock message. Their cells come from their model (`cassalock check --model redis-set-nx|redlock|memcached|redisson|redisson-fair`, the library's own machines against the servers' value types) and from the simulator's named scenarios (`cassalock sim --scenario NAME`, docs/simulator-families.md: the library's own `FamilyLocker` against simulated servers on their own clocks, each line naming its scenario's fault); a cell with no sim line has no scenario for that fault yet. The simulator's T2 includes T2-free (a lone client never gives up on a free lock), its C-token is the growing-token half (C-fence, for the locks whose tokens grow), its C-lost is judged only where a watchdog or keep-alive renews the lease (Redisson, etcd), and it judges no C-free (the model does); a seed whose run stopped at its bound with a client still waiting gives T2 no verdict and is counted apart (\"bounded\"). Their resource has no fencing (their tokens name a holder, they do not grow), so T1-resource there means: no write from an acquisition after a later acquisition wrote. Their T2 is checked twice: (always) no `lock()` returns without the lock while the store answers; (liveness) every client that calls `lock()` acquires. Redisson's C-lost: a holder that a later acquisition overtook has been told (by its watchdog or its own check), or its watchdog still asks. The fair lock's F-order (2 clients x 2 acquisitions, no fault): the lock goes to the `lock()` calls in the order they reached the server (a waiter the scripts drop because its deadline passed lost its place by design, and is excused).\n");
        let _ = writeln!(md, "**The coordination services' locks** (Curator's `InterProcessMutex` on ZooKeeper, etcd's mutex with its session) run in the same model (`cassalock check --model zookeeper|etcd`, the library's `CuratorLock` and `EtcdLock` against `ZnodeTree` and `EtcdKeyspace`), with one server (no failover) and their own readings of the faults: a ZooKeeper session is kept alive by the heartbeat of its client's process, which a pause stops, and expires on the server's clock; an etcd session's lease by the holder's keep-alive lane; a restart keeps the tree, the sessions and the leases (they persist); a clock jump expires sessions and leases early; a lost notification is a missed watch event. Their tokens grow (the node's czxid, the key's create revision), so their resource fences: T1-resource there means the fenced resource accepted no stale token and no token another acquisition wrote with, and C-token checks that a holder whose node or key is live has a token above every earlier holder's. Curator's holder has no bound of its own (it believes until told), so a pause past the session timeout leaves it believing while the next waiter holds.\n");
    }
    which_lock_section(&mut md, cells, &rows);
    for &row in &rows {
        let _ = writeln!(md, "## {}\n", row.row_title());
        let _ = write!(md, "| fault | verdicts |");
        for claim in CONTRACT {
            let _ = write!(md, " {claim} |");
        }
        let _ = writeln!(md);
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for &column in row.columns() {
            let cell = &cells[&(row, column)];
            let lines: Vec<String> = cell.iter().map(Judgement::markdown).collect();
            let _ = write!(md, "| {} | {} |", column.name(), lines.join("<br>"));
            let sims = cell.iter().filter(|j| matches!(j, Judgement::Sim { .. })).count();
            for claim in CONTRACT {
                let parts: Vec<String> = cell
                    .iter()
                    .filter_map(|j| {
                        let text = j.contract_markdown(row, claim)?;
                        Some(match j {
                            Judgement::Sim { label, .. } if sims > 1 => format!("{}: {text}", sim_short_label(label)),
                            _ => text,
                        })
                    })
                    .collect();
                let text = if parts.is_empty() {
                    "not checked (model only)".to_string()
                } else {
                    parts.join("<br>")
                };
                let _ = write!(md, " {text} |");
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "## Compact view: safety, liveness and fairness apart\n");
    for family in [false, true] {
        let rows: Vec<Row> = rows.iter().copied().filter(|row| row.is_family() == family).collect();
        if rows.is_empty() {
            continue;
        }
        if family {
            let _ = writeln!(md, "\nThe locks people use instead, under their servers' faults:\n");
        }
        compact_header(&mut md, rows[0].columns());
        for row in rows {
            for aspect in COMPACT_ASPECTS {
                let marks: Vec<String> = row
                    .columns()
                    .iter()
                    .map(|column| aspect_mark(&cells[&(row, *column)], aspect))
                    .collect();
                if marks.iter().all(|mark| mark == "-" || mark == "n/a") {
                    continue;
                }
                let _ = writeln!(md, "| {} {} | {} |", row.row_title(), aspect.name(), marks.join(" | "));
            }
        }
    }
    // The claims of each aspect that some cell judges, in ID order.
    let claims_of = |aspect: Aspect| -> String {
        let mut ids: Vec<ClaimId> = cells
            .values()
            .flatten()
            .flat_map(|judgement| match judgement {
                Judgement::NotApplicable(_) => Vec::new(),
                Judgement::Model { claims, .. } => claims.iter().map(|c| c.claim).collect(),
                Judgement::Sim { claims, .. } => claims.iter().map(|c| c.search.claim).collect(),
            })
            .filter(|claim| claim.aspect() == aspect)
            .collect();
        ids.sort();
        ids.dedup();
        ids.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
    };
    let _ = writeln!(
        md,
        "\nSafety: {}. Liveness: {}. Fairness: {}. A lock can be safe and still unfair or stall: each line says only what it names. \"violated: X\": X failed in that cell (details and traces above); \"S1 stall\": the time service can freeze; \"no violation\": no check of that kind made there found one (exhaustive, clock-bounded or seeded: see the cell for which); \"no occasion\": the simulator's checks of that kind never had an occasion (no handover, no failed call, no lost lease); \"bounded: X\": no check decided X either way (the model's only counterexamples reach its last tick, or a run stopped at its time bound with a client still waiting): not a pass; \"no verdict\": its fault never fired; \"(part: no verdict)\": one of the cell's lines gave none; \"-\": not checked there; a lock without fairness claims has no fairness line.\n",
        claims_of(Aspect::Safety),
        claims_of(Aspect::Liveness),
        claims_of(Aspect::Fairness),
    );
    let _ = writeln!(md, "## Compact view: the contract\n");
    compact_header(&mut md, &Column::THESIS);
    // The thesis's rows first; the other families' (their sim lines) below.
    for row in matrix_rows().into_iter().filter(|row| !row.is_family()) {
        for claim in contract_claims(row) {
            let _ = write!(md, "| {} {claim} |", row.row_title());
            for column in Column::THESIS {
                let mark = contract_compact_mark(&cells[&(row, column)], *claim);
                let _ = write!(md, " {mark} |");
            }
            let _ = writeln!(md);
        }
    }
    if rows.iter().any(|row| row.is_family()) {
        let _ = writeln!(md, "\nThe locks people use instead, their simulator lines:\n");
        compact_header(&mut md, &Column::FAMILY);
        for row in rows.iter().copied().filter(|row| row.is_family()) {
            for claim in contract_claims(row) {
                let _ = write!(md, "| {} {claim} |", row.row_title());
                for column in Column::FAMILY {
                    let mark = contract_compact_mark(&cells[&(row, column)], *claim);
                    let _ = write!(md, " {mark} |");
                }
                let _ = writeln!(md);
            }
        }
    }
    let _ = writeln!(md, "\n\"seed S\": violated, S the lowest violating seed over the cell's simulator configurations (details and traces above); \"none in N\": no violation in the N seeds searched; \"no occasion in N\": the runs never gave the check an occasion (no failed call, no handover, no lost lease): no verdict; \"time limit\": the search was stopped by the wall-time cap, no verdict; \"-\": no simulator run in that cell.\n");
    thesis_section(&mut md, cells);
    let _ = writeln!(md, "## Broken variants (mutants)\n");
    for (text, link) in mutants {
        let _ = writeln!(md, "- {text}{link}");
    }
    let _ = writeln!(md);
    let _ = writeln!(md, "## Every violation found\n");
    for &row in &rows {
        for &column in row.columns() {
            for judgement in &cells[&(row, column)] {
                for finding in judgement.findings(row, column) {
                    let _ = writeln!(md, "- {finding}");
                }
            }
        }
    }
    let _ = writeln!(md);
    md
}

/// The header of a compact table: one column per fault.
fn compact_header(md: &mut String, columns: &[Column]) {
    let _ = write!(md, "| |");
    for column in columns {
        let _ = write!(md, " {} |", column.name());
    }
    let _ = writeln!(md);
    let _ = write!(md, "|---|");
    for _ in columns {
        let _ = write!(md, "---|");
    }
    let _ = writeln!(md);
}

/// A sim label without its "sim, " prefix, to tell a cell's sim lines apart in the contract
/// columns.
fn sim_short_label(label: &str) -> &str {
    label.strip_prefix("sim, ").unwrap_or(label)
}

/// "Which lock, under which faults": one line per lock, read off the cells' verdicts (the
/// faults under which some check found two holders, or a stale write reaching the resource),
/// so that the summary cannot drift from the tables below it.
fn which_lock_section(md: &mut String, cells: &BTreeMap<(Row, Column), Cell>, rows: &[Row]) {
    let broken_under = |row: Row, claims: &[ClaimId]| -> String {
        let names: Vec<&str> = row
            .columns()
            .iter()
            .filter(|&&column| {
                cells[&(row, column)]
                    .iter()
                    .any(|judgement| claims.iter().any(|&claim| judgement.violated(Some(claim))))
            })
            .map(|column| column.name())
            .collect();
        if names.is_empty() {
            "none found".to_owned()
        } else {
            names.join(", ")
        }
    };
    let fencing = |row: Row| match row {
        Row::Old | Row::Queue | Row::QueueTry => {
            let down = broken_under(row, &[ClaimId::CToken]);
            if down == "none found" {
                "yes: the resource refuses a stale token; no check found a token going down".to_owned()
            } else {
                format!("yes, but a later holder's token was not always higher (C-token) under: {down}")
            }
        }
        Row::GlobalTime | Row::QueueNextInLine | Row::QueuePaced | Row::Lwt => String::new(),
        Row::RedisSetNx | Row::Memcached => "no: a random token names the holder, it does not grow".to_owned(),
        Row::Redlock => "no: a random token on every master, it does not grow".to_owned(),
        Row::Redisson | Row::RedissonFair => "no: the owner field names the holder, it does not grow".to_owned(),
        Row::Zookeeper | Row::Etcd => {
            let token = if row == Row::Zookeeper {
                "the node's czxid"
            } else {
                "the key's create revision"
            };
            let down = broken_under(row, &[ClaimId::CToken]);
            if down == "none found" {
                format!("yes: {token}, which only grows; the model's fenced resource refuses a lower one, and no check found a live holder's token going down")
            } else {
                format!("yes ({token}), but a live holder's token was not always higher (C-token) under: {down}")
            }
        }
    };
    let _ = writeln!(md, "## Which lock, under which faults\n");
    let _ = writeln!(md, "Read off the cells below (model and simulator verdicts alike; a fault with no line here was not checked for that lock). \"Two holders\": some check found two clients believing they held the lock at once (T1, T1-belief; T3 for TryGetLock). \"Stale write\": the resource received a write from a holder whose lock had passed to a later one (T1-resource; with fencing on for the thesis's locks, without fencing for the others, which have none).\n");
    let _ = writeln!(
        md,
        "| lock | no fault | two holders under | stale write reaches the resource under | fencing token |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    for &row in rows.iter().filter(|row| **row != Row::GlobalTime) {
        let t1: &[ClaimId] = match row {
            Row::QueueTry => &[ClaimId::T3, ClaimId::T1Belief],
            _ => &[ClaimId::T1, ClaimId::T1Belief],
        };
        let none_safe = !cells[&(row, Column::None)]
            .iter()
            .any(|judgement| t1.iter().any(|&claim| judgement.violated(Some(claim))));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            row.row_title(),
            if none_safe {
                "no two holders found"
            } else {
                "**two holders**"
            },
            broken_under(row, t1),
            broken_under(row, &[ClaimId::T1Resource]),
            fencing(row),
        );
    }
    let _ = writeln!(md);
}

/// What the matrix says about the thesis's claims, read off the cells' verdicts themselves so
/// that the prose cannot drift from them.
fn thesis_section(md: &mut String, cells: &BTreeMap<(Row, Column), Cell>) {
    let cell = |row: Row, column: Column| &cells[&(row, column)];
    // Some judgement of the cell found `claim` violated.
    let violated = |row: Row, column: Column, claim: ClaimId| cell(row, column).iter().any(|j| j.violated(Some(claim)));
    // Some model of the cell gave `claim` a verdict that `wanted` accepts.
    let model_says = |row: Row, column: Column, claim: ClaimId, wanted: fn(&Verdict) -> bool| {
        cell(row, column)
            .iter()
            .any(|j| j.model_verdict(claim).is_some_and(wanted))
    };
    let exhaustive = |verdict: &Verdict| *verdict == Verdict::Holds;
    let _ = writeln!(md, "## What this says about the thesis\n");
    let t1_exhaustive = model_says(Row::Queue, Column::None, ClaimId::T1, exhaustive);
    let t1_tolerant = [
        Column::Loss,
        Column::Partition,
        Column::Crash,
        Column::ClOne,
        Column::RenewalRace,
    ]
    .iter()
    .all(|&column| !cell(Row::Queue, column).iter().any(|j| j.violated(None)));
    let _ = writeln!(
        md,
        "- **Theorem 1 (mutual exclusion, queue GetLock).** With no faults: {}. Under message loss, a partition, a crashed holder, CL=ONE and renewal racing release: {}. It needs its assumptions: a holder paused past the TTL (K1) and a coordinator clock ahead break it, as K1 and S2 ([docs/claims.md](../docs/claims.md)) predict.",
        if t1_exhaustive { "holds in every reachable state of the bounded model" } else { "see the table, it did not hold" },
        if t1_tolerant { "no violation in the model or the seeds" } else { "violated in at least one of them (see the table)" }
    );
    // K2: CL ONE instead of QUORUM breaks L1 and so T1; the seed search shows which locks.
    let k2: Vec<String> = [Row::Old, Row::Queue, Row::QueueTry]
        .iter()
        .map(|&row| {
            let found = cell(row, Column::ClOne).iter().find_map(|j| match j {
                Judgement::Sim {
                    tried, fired, claims, ..
                } if *fired > 0 => claims
                    .iter()
                    .find(|c| c.search.claim == ClaimId::T1Belief)
                    .map(|c| (*tried, c.search.first_violation)),
                _ => None,
            });
            match found {
                Some((_, Some(seed))) => format!(
                    "{}: T1-belief violated at seed {seed} ({} tried)",
                    row.row_title(),
                    seeds(seed + 1)
                ),
                Some((tried, None)) => format!("{}: no violation in {}", row.row_title(), seeds(tried)),
                None => format!("{}: no verdict", row.row_title()),
            }
        })
        .collect();
    let _ = writeln!(
        md,
        "- **K2 (consistency ONE).** With CL ONE a read can miss a write, so L1 and with it T1 can fail; how soon the seed search finds it: {}. A lock that shows no violation here is not shown safe at CL ONE: the thesis requires QUORUM.",
        k2.join("; ")
    );
    let below = violated(Row::Queue, Column::SkewBelowTtl, ClaimId::T1Belief);
    let _ = writeln!(
        md,
        "- **S2 (skew versus the TTL).** The thesis puts the danger at clock differences of the TTL or more. {}",
        if below {
            "The simulator breaks T1 below that: with TTL 30 s and renewal every 15 s, a coordinator 20 s ahead already lets a second holder in. A renewed cell has to outlive only the renewal interval before its next rewrite, so a coordinator ahead by TTL - renewal interval (15 s here) sees it expire first. The bound is a little lower still, between 14 and 15 s here: the writing coordinator fixes a cell's expiry in whole seconds of its clock (up to 1 s lost), and the rewrite lands a few requests after the interval (renewal first reads its own cell). `cassalock sim --scenario skew --sweep-offsets` finds the smallest breaking offset: 14.0 s for the queue lock (seed 53: the main cell was written 0.96 s into a second, and a waiter's read through the skewed coordinator came 15.04 s later, just before the rewrite)."
        } else {
            "Below the TTL the simulator found no violation."
        }
    );
    let fenced = [Row::Old, Row::Queue, Row::QueueTry]
        .iter()
        .all(|&row| !violated(row, Column::Pause, ClaimId::T1Resource));
    let _ = writeln!(
        md,
        "- **Pauses (K1).** Every lock variant lets two clients believe they hold the lock after a pause longer than the TTL. {}",
        if fenced {
            "With the resource checking fencing tokens the stale holder's write was refused in every check: the damage needs fencing to prevent, and the thesis does not mention it."
        } else {
            "Even with fencing the resource accepted a stale write (see the table)."
        }
    );
    let old_t2 = violated(Row::Old, Column::None, ClaimId::T2);
    let queue_t2 = model_says(Row::Queue, Column::None, ClaimId::T2, exhaustive);
    let _ = writeln!(
        md,
        "- **Theorem 2 (liveness) and the old lock's unfairness.** Old lock: {}. Queue lock: {}.",
        if old_t2 {
            "T2 fails, with a weakly fair cycle in which one thread never acquires, as the thesis says"
        } else {
            "no starvation cycle found, against the thesis"
        },
        if queue_t2 {
            "T2 holds in the bounded model (no fair cycle starves a waiter)"
        } else {
            "T2 did not hold exhaustively (see the table)"
        }
    );
    let t4 = model_says(Row::QueueTry, Column::None, ClaimId::T4, exhaustive);
    let _ = writeln!(
        md,
        "- **Theorems 3-4 (TryGetLock).** T3 {} with no faults; T4 (some caller of a free lock acquires) {}.",
        if model_says(Row::QueueTry, Column::None, ClaimId::T3, exhaustive) {
            "holds in every reachable state"
        } else {
            "did not hold"
        },
        if t4 {
            "holds in the bounded model"
        } else {
            "did not hold in the model (see the table)"
        }
    );
    let _ = writeln!(
        md,
        "- **Theorem 5 and S1 (global time).** T5 (GlobalTime never decreases) {}; S1 {}.",
        if model_says(Row::GlobalTime, Column::Crash, ClaimId::T5, |v| {
            matches!(v, Verdict::Holds | Verdict::HoldsWithinClockBound(_))
        }) {
            "held in every model configuration"
        } else {
            "was violated"
        },
        if model_says(Row::GlobalTime, Column::Crash, ClaimId::S1, |v| *v
            == Verdict::Reachable)
        {
            "is real: a replica that ran ahead and crashed freezes GlobalTime for about as long as its lead (measured in the simulator)"
        } else {
            "was not reached"
        }
    );
    let drops: Vec<&str> = Column::THESIS
        .iter()
        .filter(|&&column| {
            [Row::Old, Row::Queue, Row::QueueTry]
                .iter()
                .any(|&row| cell(row, column).iter().any(Judgement::tokens_went_down))
        })
        .map(|&column| column.name())
        .collect();
    let _ = writeln!(
        md,
        "- **Fencing tokens (our addition, not a thesis claim).** The thesis names no token; its queue column, used as one, goes down whenever a queue cell that sorts first lands after another thread took the lock (C-token in \"What the contract checks found\"). The library's token is a counter each holder bumps under the lock (src/algo/fence.rs). It went down across holders under: {}. A counter read under the lock is only as good as the lock and the read: where mutual exclusion breaks or a read can miss the last write (CL=ONE), two holders can draw the same number.\n",
        if drops.is_empty() { "no fault model".to_string() } else { drops.join(", ") }
    );
}

/// A broken variant the model checker must catch: its model, fault, mutant and the claim it
/// exists to break.
pub(crate) struct MutantModel {
    label: &'static str,
    model: ModelName,
    fault: Fault,
    pub(crate) mutant: cassalock_models::Mutant,
    pub(crate) claim: ClaimId,
    /// Its trace file's name: `mutant-{key}.txt`.
    key: &'static str,
    /// A clock bound other than the world's default (`--clock-bound`).
    clock_bound: Option<u8>,
}

impl MutantModel {
    pub(crate) fn spec(&self) -> Spec {
        let mut spec = Spec::new(self.model);
        spec.fault = self.fault;
        spec.mutant = Some(self.mutant);
        spec.clock_bound = self.clock_bound;
        if self.mutant == cassalock_models::Mutant::RedissonFairBarging {
            // F-order needs a client that comes back to a queue another waits in.
            spec.acquisitions = Some(2);
        }
        spec
    }
}

/// The deliberately broken variants the model checker runs: each must break its claim, or the
/// checks prove nothing.
pub(crate) const MUTANT_MODELS: [MutantModel; 6] = {
    use cassalock_models::Mutant;
    [
        MutantModel {
            label: "M1 (first in the queue skips the main-row check) with delayed enqueue, queue GetLock",
            model: ModelName::Lock(Lock::Queue),
            fault: Fault::DelayedEnqueue,
            mutant: Mutant::M1,
            claim: ClaimId::T1,
            key: "queue-m1-delayed-t1",
            clock_bound: None,
        },
        MutantModel {
            label: "K3 (release does not wait for renewal), queue GetLock",
            model: ModelName::Lock(Lock::Queue),
            fault: Fault::None,
            mutant: Mutant::K3,
            claim: ClaimId::K3,
            key: "queue-k3-k3",
            clock_bound: None,
        },
        MutantModel {
            label: "K3, old GetLock",
            model: ModelName::Lock(Lock::Old),
            fault: Fault::None,
            mutant: Mutant::K3,
            claim: ClaimId::K3,
            key: "old-k3-k3",
            clock_bound: None,
        },
        MutantModel {
            label: "M4 (renewal trusts a rewrite that landed a TTL late, the library before 2026-11-28), holder paused, clock <= 5 ticks, queue GetLock",
            model: ModelName::Lock(Lock::Queue),
            fault: Fault::Pause,
            mutant: Mutant::M4,
            claim: ClaimId::CLost,
            key: "queue-m4-pause-c-lost",
            clock_bound: Some(5),
        },
        MutantModel {
            label: "Redisson issue 775 (the watchdog is not rescheduled after a failed renewal) with one lost request, Redisson RLock",
            model: ModelName::Lock(Lock::Redisson),
            fault: Fault::StoreFailure,
            mutant: Mutant::Redisson775,
            claim: ClaimId::CLost,
            key: "redisson-775-store-failure-c-lost",
            clock_bound: None,
        },
        MutantModel {
            label: "an acquire that ignores the queue (the RLock's script; a planted unfair variant), 2 clients x 2 acquisitions, Redisson fair lock",
            model: ModelName::Lock(Lock::RedissonFair),
            fault: Fault::None,
            mutant: Mutant::RedissonFairBarging,
            claim: ClaimId::FOrder,
            key: "redisson-fair-barging-f-order",
            clock_bound: None,
        },
    ]
};

/// A broken variant the simulator must catch: the real library with one of its mutants, in
/// the scenario that reaches the step the mutant changes.
struct MutantSim {
    claim: ClaimId,
    scenario: &'static str,
    /// The `sim`/`replay` flag that turns the mutant on, and the option it sets.
    flag: &'static str,
    turn_on: fn(&mut SimOptions),
    /// What the violation is, in the line's words.
    breaks: &'static str,
    firing: Firing,
}

impl MutantSim {
    fn options(&self) -> SimOptions {
        let mut options = SimOptions::default();
        (self.turn_on)(&mut options);
        options
    }
}

/// The simulator's broken variants, each searched for the old and the queue lock.
const MUTANT_SIMS: [MutantSim; 2] = [
    MutantSim {
        claim: ClaimId::K3,
        scenario: "renew-race",
        flag: "--k3",
        turn_on: |options| options.k3 = true,
        breaks: "a released lock came back to life",
        firing: Firing::Configured,
    },
    MutantSim {
        claim: ClaimId::CLost,
        scenario: "pause-at-rewrite",
        flag: "--m4",
        turn_on: |options| options.m4 = true,
        breaks: "a holder paused at renewal's rewrite was told it lost the lease, then told it had not",
        firing: Firing::Injected,
    },
];

/// The "Broken variants" lines, from the mutants' units: each must break its claim, or the
/// checks prove nothing. Writes each model counterexample's trace file.
fn mutant_lines(
    options: &MatrixOptions,
    results: &units::Results,
    out_dir: &std::path::Path,
    files: &mut Vec<String>,
    stopped_by_time: &mut Vec<String>,
) -> Result<Vec<(String, String)>, MatrixError> {
    let mut lines = Vec::new();
    for (index, mutant) in MUTANT_MODELS.iter().enumerate() {
        // `--thesis-only` leaves out the other families' rows, their client bugs with them.
        if options.thesis_only && mutant.mutant.is_family_client_bug() {
            continue;
        }
        let report = results.model(&Unit::MutantModel(index))?;
        let claim = mutant.claim;
        let row = report.row(claim)?;
        let name = format!("mutant-{}.txt", mutant.key);
        let link = match &row.trace {
            Some((trace, steps)) => {
                write_file(
                    out_dir,
                    &name,
                    &format!("{}\n\n{} -- {}\n{}", report.title, row.property, row.verdict, trace),
                )?;
                files.push(format!("matrix/{name}"));
                format!(" [{steps} steps](matrix/{name})")
            }
            None => String::new(),
        };
        lines.push((
            format!("model: {}: {claim} {}", mutant.label, short(&row.verdict)),
            link,
        ));
    }
    for (index, mutant) in MUTANT_SIMS.iter().enumerate() {
        for row in [Row::Old, Row::Queue] {
            let result = results.search(&Unit::MutantSim(index, row))?;
            let (claim, scenario, flag) = (mutant.claim, mutant.scenario, mutant.flag);
            let text = match result.first_violation(claim) {
                Some(seed) => format!(
                    "sim: {claim}, {}, {scenario} {flag}: {}, violated at seed {seed} ({} tried): `cassalock replay --scenario {scenario} --seed {seed} --algorithm {} {flag}`",
                    row.row_title(),
                    mutant.breaks,
                    seeds(seed + 1),
                    algorithm(row).name()
                ),
                None if result.stopped_by_time => {
                    stopped_by_time.push(format!(
                        "mutant {claim}, {}, {scenario} {flag} (after {})",
                        row.row_title(),
                        seeds(result.tried)
                    ));
                    format!(
                        "sim: {claim}, {}, {scenario} {flag}: stopped by the time limit after {}: not a verdict",
                        row.row_title(),
                        seeds(result.tried)
                    )
                }
                None => format!(
                    "sim: {claim}, {}, {scenario} {flag}: not seen in {}: the check missed the mutant",
                    row.row_title(),
                    seeds(result.tried)
                ),
            };
            lines.push((text, String::new()));
        }
    }
    if !options.thesis_only {
        for index in 0..family_sim::CLIENT_BUGS.len() {
            let result = results.search(&Unit::ClientBug(index))?;
            lines.push(family_sim::client_bug_line(index, result, stopped_by_time));
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(claims: &[(ClaimId, Verdict, bool)]) -> Judgement {
        Judgement::Model {
            label: "model, m",
            states: 7,
            claims: claims
                .iter()
                .map(|(claim, verdict, traced)| ModelClaim {
                    claim: *claim,
                    name: claim.to_string(),
                    verdict: verdict.clone(),
                    trace: traced.then(|| TraceFile {
                        name: format!("x-{}.txt", claim.as_str().to_lowercase()),
                        steps: 4,
                    }),
                })
                .collect(),
            same_run_as: None,
        }
    }

    /// A sim judgement over 5 seeds: per claim, its first violating seed and the seeds that
    /// exercised it.
    fn sim_searched(fired: u64, stopped_by_time: bool, claims: &[(ClaimId, Option<u64>, u64)]) -> Judgement {
        Judgement::Sim {
            label: "sim, s",
            tried: 5,
            stopped_by_time,
            fired,
            claims: claims
                .iter()
                .map(|&(claim, first_violation, exercised)| SimClaim {
                    search: ClaimSearch {
                        bounded: 0,
                        claim,
                        first_violation,
                        exercised,
                    },
                    first_failure: first_violation.filter(|_| fired > 0).map(|seed| FirstFailure {
                        seed,
                        file: "y.txt".into(),
                        command: "cassalock replay".into(),
                    }),
                })
                .collect(),
            stall_s: None,
            token_drops: 0,
        }
    }

    fn sim(fired: u64, failures: &[(ClaimId, u64)]) -> Judgement {
        let claims: Vec<(ClaimId, Option<u64>, u64)> = failures
            .iter()
            .map(|&(claim, failures)| (claim, (failures > 0).then_some(2), 5))
            .collect();
        sim_searched(fired, false, &claims)
    }

    #[test]
    fn cells_render_as_the_matrix_always_wrote_them() {
        let m = model(&[
            (ClaimId::T1, Verdict::Holds, false),
            (ClaimId::T2, Verdict::Violated, true),
            (ClaimId::S1, Verdict::Reachable, true),
            (ClaimId::K3, Verdict::HoldsWithinClockBound(4), false),
        ]);
        assert_eq!(
            m.markdown(),
            "**model, m** (7 states): T1 holds (exhaustive), T2 [VIOLATED](matrix/x-t2.txt), S1 [reachable](matrix/x-s1.txt), K3 holds within bound (clock <= 4 ticks)"
        );
        let s = sim(3, &[(ClaimId::K3, 0), (ClaimId::T1Belief, 2), (ClaimId::T2, 0)]);
        assert_eq!(
            s.markdown(),
            "**sim, s** (5 seeds searched, the fault fired in 3 of them): K3, T2: no violation in 5 seeds; T1-belief: [violated at seed 2 (3 seeds tried)](matrix/y.txt)"
        );
        assert_eq!(
            sim(0, &[(ClaimId::K3, 1)]).markdown(),
            "**sim, s**: the fault never fired in 5 seeds: no verdict"
        );
        assert_eq!(
            s.findings(Row::Queue, Column::Pause),
            ["queue GetLock (L6) / pause: sim, s: T1-belief violated at seed 2 (3 seeds tried): `cassalock replay`"]
        );
        assert_eq!(
            m.findings(Row::Old, Column::None),
            ["old GetLock (L3-4) / none: model: T2 violated (4 steps): [trace](matrix/x-t2.txt)"]
        );
    }

    #[test]
    fn contract_columns_never_read_a_check_without_occasion_as_a_pass() {
        let s = sim_searched(
            5,
            false,
            &[
                (ClaimId::T1Belief, None, 5),
                (ClaimId::CFree, None, 0),
                (ClaimId::CRelease, Some(0), 4),
                (ClaimId::CToken, None, 5),
            ],
        );
        assert_eq!(
            s.contract_markdown(Row::Queue, ClaimId::CFree).as_deref(),
            Some("no occasion in 5 seeds")
        );
        assert_eq!(
            s.contract_markdown(Row::Queue, ClaimId::CRelease).as_deref(),
            Some("[violated at seed 0 (1 seed tried)](matrix/y.txt)")
        );
        assert_eq!(
            s.contract_markdown(Row::Queue, ClaimId::CToken).as_deref(),
            Some("no violation in 5 seeds")
        );
        assert_eq!(
            s.contract_markdown(Row::Queue, ClaimId::CTry).as_deref(),
            Some("n/a: clients call lock()")
        );
        // A model does not judge the contract: no entry, never "ok".
        assert_eq!(
            model(&[(ClaimId::T1, Verdict::Holds, false)]).contract_markdown(Row::Queue, ClaimId::CFree),
            None
        );
        // A liveness item of the contract (C-release) is not a safety finding.
        assert_eq!(aspect_mark(&vec![s.clone()], Aspect::Safety), "no violation");
        assert_eq!(
            aspect_mark(&vec![s.clone()], Aspect::Liveness),
            "**violated: C-release**"
        );
        assert_eq!(contract_compact_mark(&vec![s.clone()], ClaimId::CRelease), "**seed 0**");
        assert_eq!(
            contract_compact_mark(&vec![s.clone()], ClaimId::CFree),
            "no occasion in 5"
        );
        assert_eq!(contract_compact_mark(&vec![s], ClaimId::CToken), "none in 5");
        let stopped = sim_searched(5, true, &[(ClaimId::T2, None, 5), (ClaimId::CFree, Some(3), 4)]);
        assert_eq!(
            stopped.markdown(),
            "**sim, s** (5 seeds searched): T2: stopped by the time limit after 5 seeds: not a verdict"
        );
        // A violation found before the time limit is still a finding.
        assert_eq!(
            stopped.contract_markdown(Row::Queue, ClaimId::CFree).as_deref(),
            Some("[violated at seed 3 (4 seeds tried)](matrix/y.txt)")
        );
        assert_eq!(contract_compact_mark(&vec![stopped.clone()], ClaimId::T2), "time limit");
    }

    #[test]
    fn long_traces_keep_their_start_and_end() {
        let events: String = (0..TRACE_LINES + 10).map(|i| format!("event {i}\n")).collect();
        let short = shortened(&events, "cassalock replay x");
        assert!(short.starts_with("event 0\n"));
        assert!(short.contains("... 10 lines left out here: `cassalock replay x` prints every event ..."));
        assert!(short.ends_with(&format!("event {}\n", TRACE_LINES + 9)));
        assert!(!short.contains(&format!("event {}\n", TRACE_LINES / 2 + 5)));
        assert_eq!(short.lines().count(), TRACE_LINES + 1);
        let few = "a\nb\n";
        assert_eq!(shortened(few, "x"), few);
    }

    fn pool() -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("pool")
    }

    fn budget(max_seeds: u64, batch: u64) -> Budget {
        Budget {
            max_seeds,
            time: Duration::from_secs(600),
            batch,
        }
    }

    #[test]
    fn the_seed_search_reports_the_lowest_violating_seed_whatever_the_batch() {
        let pool = pool();
        let options = SimOptions::default();
        // A pause past the TTL breaks T1-belief (K1) in every seed: the search stops at seed 0.
        let k1 = search(
            &pool,
            &|seed| {
                one_seed(
                    Row::Queue,
                    "pause",
                    &options,
                    Firing::Injected,
                    &[ClaimId::T1Belief],
                    seed,
                )
            },
            &[ClaimId::T1Belief],
            budget(50, 4),
        );
        assert_eq!(k1.tried, 1, "stops at the first violation, not at the budget");
        assert_eq!(k1.first_violation(ClaimId::T1Belief), Some(0));
        // K3 never breaks here: the search runs the whole budget, and its result (aggregates
        // over exactly the seeds tried) is the same with any batch size.
        let claims = [ClaimId::T1Belief, ClaimId::K3];
        let one = search(
            &pool,
            &|seed| one_seed(Row::Queue, "pause", &options, Firing::Injected, &claims, seed),
            &claims,
            budget(5, 1),
        );
        let four = search(
            &pool,
            &|seed| one_seed(Row::Queue, "pause", &options, Firing::Injected, &claims, seed),
            &claims,
            budget(5, 4),
        );
        assert_eq!(one, four);
        assert_eq!(one.tried, 5);
        assert_eq!(one.first_violation(ClaimId::K3), None);
        assert!(!one.stopped_by_time);
    }

    #[test]
    fn a_search_stopped_by_the_time_cap_says_so() {
        let pool = pool();
        let stopped = search(
            &pool,
            &|seed| {
                one_seed(
                    Row::Queue,
                    "contention",
                    &SimOptions::default(),
                    Firing::Configured,
                    &[ClaimId::T1Belief],
                    seed,
                )
            },
            &[ClaimId::T1Belief],
            Budget {
                max_seeds: 10,
                time: Duration::ZERO,
                batch: 2,
            },
        );
        assert!(stopped.stopped_by_time);
        assert_eq!(stopped.tried, 0);
    }

    #[test]
    fn a_claim_no_check_could_decide_is_shown_bounded_never_as_a_plain_pass() {
        // A model's T2 that only the last tick breaks, beside a judged C-release: the liveness
        // mark names T2 as bounded.
        let model_bounded = vec![model(&[
            (ClaimId::T2, Verdict::Bounded("last tick".into()), false),
            (ClaimId::CRelease, Verdict::Holds, false),
        ])];
        assert_eq!(
            aspect_mark(&model_bounded, Aspect::Liveness),
            "no violation; bounded: T2"
        );
        // A seed search whose every run stopped at its bound with a client waiting.
        let mut search = sim(200, &[(ClaimId::T2, 0)]);
        if let Judgement::Sim { claims, .. } = &mut search {
            claims[0].search.exercised = 0;
            claims[0].search.bounded = 200;
        }
        assert_eq!(aspect_mark(&vec![search.clone()], Aspect::Liveness), "bounded: T2");
        if let Judgement::Sim { claims, .. } = &search {
            assert_eq!(
                Judgement::search_text(200, false, &claims[0].search),
                "bounded in 200 of 200 seeds: no verdict"
            );
        }
    }

    #[test]
    fn the_compact_view_keeps_safety_liveness_and_fairness_apart() {
        let na = vec![Judgement::NotApplicable("why")];
        assert_eq!(aspect_mark(&na, Aspect::Safety), "n/a");
        // The old lock with no faults: T1 holds, T2 and F-overtakes fail. Not "unsafe".
        let old_none = vec![
            model(&[
                (ClaimId::T1, Verdict::Holds, false),
                (ClaimId::FOvertakes, Verdict::Violated, true),
                (ClaimId::T2, Verdict::Violated, true),
            ]),
            sim(5, &[(ClaimId::T1Belief, 0), (ClaimId::K3, 0)]),
        ];
        assert_eq!(aspect_mark(&old_none, Aspect::Safety), "no violation");
        assert_eq!(aspect_mark(&old_none, Aspect::Liveness), "**violated: T2**");
        assert_eq!(aspect_mark(&old_none, Aspect::Fairness), "**violated: F-overtakes**");
        // Every violated claim of the aspect is named, once, whichever line found it.
        let broken = vec![
            model(&[(ClaimId::T1, Verdict::Violated, true)]),
            sim(5, &[(ClaimId::T1Belief, 2), (ClaimId::CToken, 1)]),
            sim(5, &[(ClaimId::T1Belief, 1)]),
        ];
        assert_eq!(
            aspect_mark(&broken, Aspect::Safety),
            "**violated: T1, T1-belief, C-token**"
        );
        assert_eq!(aspect_mark(&broken, Aspect::Fairness), "-");
        assert_eq!(
            aspect_mark(
                &vec![model(&[(ClaimId::S1, Verdict::Reachable, true)])],
                Aspect::Liveness
            ),
            "**S1 stall**"
        );
        // A fault that never fired hides its failures: no verdict, never a pass or a break.
        assert_eq!(
            aspect_mark(&vec![sim(0, &[(ClaimId::T1Belief, 3)])], Aspect::Safety),
            "no verdict"
        );
        assert_eq!(
            aspect_mark(
                &vec![
                    model(&[(ClaimId::T1, Verdict::Holds, false)]),
                    sim(0, &[(ClaimId::T1Belief, 3)])
                ],
                Aspect::Safety
            ),
            "no violation (part: no verdict)"
        );
        // A check that never had an occasion is not a pass.
        assert_eq!(
            aspect_mark(
                &vec![sim_searched(5, false, &[(ClaimId::CFree, None, 0)])],
                Aspect::Liveness
            ),
            "no occasion"
        );
        // A reachability check is neither safety nor liveness.
        assert_eq!(
            aspect_mark(
                &vec![model(&[(ClaimId::T5Race, Verdict::Reachable, true)])],
                Aspect::Safety
            ),
            "-"
        );
    }

    #[test]
    fn a_claim_checked_twice_by_one_model_is_named_apart() {
        let dir = std::env::temp_dir().join(format!("cassalock-matrix-twice-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut spec = Spec::new(ModelName::Lock(Lock::Old));
        spec.fault = Fault::Crash;
        let report = cassalock_models::build(&spec)
            .expect("spec")
            .check(cassalock_models::check::Limits::default());
        let report = ModelOutcome::of(&report);
        let mut files = Vec::new();
        let judgement = model_judgement(
            Row::Old,
            Column::Crash,
            "model, holder crashes",
            &report,
            &dir,
            &mut files,
        )
        .expect("judged");
        let text = judgement.markdown();
        assert!(text.contains("C-lost (always) "), "{text}");
        assert!(text.contains("C-lost (liveness) "), "{text}");
        assert!(!text.contains("C-lost holds"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
