//! The scenario language of the family simulator: a lock's scenarios are a TOML file.
//!
//! A file names its lock and lists its scenarios, each a `[[scenario]]` table:
//!
//! ```toml
//! lock = "redis-set-nx"
//!
//! [[scenario]]
//! name = "set-nx-failover-after-acquire"
//! help = "a line for `sim --list`"
//! premise = "the premise the fault breaks, in a sentence"
//! matrix = { column = "failover", label = "sim, ..." }   # or { client_bug = "..." }; absent: not in the matrix
//! expect_violated = "T1-belief"                           # absent: a control
//! settings = { ttl_ms = 2000 }                            # the lock's own settings
//! clients = 5                                             # or "5..=32": drawn from the seed
//! replication_lag_ms = 100
//! [[scenario.faults]]
//! after = "first-acquired"                                # or at_ms = 1200
//! delay_ms = 0
//! action = "failover"                                     # or "restart", with server, persistence, down_ms
//! ```
//!
//! Every other key is a field of [`FamilyScenario`] with the same name and unit, and the
//! same default ([`FamilyScenario::base`]); `cuts`, `pauses`, `slow` and `faults` are arrays
//! of tables, clocks are `{ offset_us, drift_ppm, jumps = [{ at_ms, step_us }], error_us }`.
//! An unknown key is refused, with its line. What the `settings` table holds is the lock's
//! business: each lock's file beside its scenarios (`scenario/<lock>.rs`) turns it into the
//! lock, refusing keys it does not know.

use std::ops::RangeInclusive;

use cassalock::registry::Lock;
use cassalock::store::redis_keyspace::Persistence;
use cassalock_judge::families::Claim;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use super::net::{Cut, CutMode, Slow};
use super::scenario::{
    FamilyScenario, InMatrix, MatrixColumn, Pause, ScenarioError, ServerAction, ServerFault, Trigger,
};
use super::sim_lock::LockKind;
use crate::clock::ClockSpec;

/// Turns a scenario's `settings` table into its lock (a serde error names the key).
pub type LockBuilder = fn(toml::Table) -> Result<LockKind, toml::de::Error>;

/// The most scenarios one file may list.
pub const MAX_SCENARIOS_PER_FILE: usize = 1000;

/// A named scenario: its name, a line of help, where the matrix files it, and what it runs.
#[derive(Clone, Debug)]
pub struct Named {
    pub name: &'static str,
    pub help: &'static str,
    /// Where the property matrix files its verdicts.
    pub matrix: InMatrix,
    /// The scenario with every value but the seeded ones.
    template: FamilyScenario,
    /// The client count is drawn from the seed in this range.
    clients_from_seed: Option<RangeInclusive<usize>>,
    /// Its table as its file wrote it, and the builder of its lock: [`Named::with`] lays
    /// settings over them.
    table: toml::Table,
    build_lock: LockBuilder,
}

impl Named {
    /// The scenario on `seed` (unchecked: [`super::scenario::build`] checks it).
    pub fn build(&self, seed: u64) -> FamilyScenario {
        let mut scenario = self.template.clone();
        if let Some(range) = &self.clients_from_seed {
            scenario.clients = clients_from_seed(seed, range.clone());
        }
        scenario
    }
}

/// One key of a scenario set from the command line (`--set hold_ms=50`,
/// `--set settings.ttl_ms=3000`): a dotted path into the scenario's table and a TOML value.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    pub path: Vec<String>,
    pub value: toml::Value,
    /// As given, for the replay command.
    pub text: String,
}

/// The keys a setting may not change: what names and files the scenario, not what it runs.
const FIXED_KEYS: [&str; 5] = ["name", "help", "premise", "matrix", "expect_violated"];

/// Why a `--set` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("{0:?}: write KEY=VALUE (hold_ms=50, settings.ttl_ms=3000)")]
    Malformed(String),
    #[error("{0:?}: {1} names the scenario, it does not change what runs; give another key")]
    Fixed(String, String),
}

impl std::str::FromStr for Setting {
    type Err = SettingError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let malformed = || SettingError::Malformed(text.to_owned());
        let (key, value) = text.split_once('=').ok_or_else(malformed)?;
        let path: Vec<String> = key.trim().split('.').map(str::to_owned).collect();
        let key_ok = |part: &String| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        };
        if !path.iter().all(key_ok) {
            return Err(malformed());
        }
        if FIXED_KEYS.contains(&path[0].as_str()) {
            return Err(SettingError::Fixed(text.to_owned(), path[0].clone()));
        }
        // A TOML value (50, true, [0, 50], { ... }, "text"); anything else is taken as text,
        // so that clients=5..=32 needs no quotes.
        let value = toml::from_str::<toml::Table>(&format!("v = {}", value.trim()))
            .ok()
            .and_then(|mut table| table.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.trim().to_owned()));
        Ok(Setting {
            path,
            value,
            text: text.to_owned(),
        })
    }
}

impl Named {
    /// This scenario with `settings` laid over its table, checked as a file's scenario is (a
    /// setting the language does not know, or one the simulator refuses to run, is refused
    /// naming the key). Its strings live as long as the process: resolve once per run.
    pub fn with(&self, settings: &[Setting]) -> Result<Named, ScenarioDataError> {
        if settings.is_empty() {
            return Ok(self.clone());
        }
        let mut table = self.table.clone();
        for setting in settings {
            let (last, parents) = setting.path.split_last().expect("a setting has a key");
            let mut at = &mut table;
            for parent in parents {
                let entry = at
                    .entry(parent.clone())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                at = match entry {
                    toml::Value::Table(inner) => inner,
                    _ => return Err(ScenarioDataError::NotATable(setting.text.clone(), parent.clone())),
                };
            }
            at.insert(last.clone(), setting.value.clone());
        }
        let data: ScenarioData = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|error| ScenarioDataError::Set(Box::new(error)))?;
        data.into_named(table, self.build_lock)
    }
}

/// A client count drawn from the seed (ChaCha8 seeded with it, the first draw).
pub fn clients_from_seed(seed: u64, range: RangeInclusive<usize>) -> usize {
    ChaCha8Rng::seed_from_u64(seed).gen_range(range)
}

/// Why a scenario file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioFileError {
    #[error("{file}: {source}")]
    Toml { file: String, source: Box<toml::de::Error> },
    #[error("{file}: the file is lock {found:?}'s, expected {expected:?}")]
    WrongLock {
        file: String,
        found: String,
        expected: String,
    },
    #[error("{file}: no lock = \"NAME\" line: a scenario file names its lock ({locks})")]
    NoLock { file: String, locks: String },
    #[error("{file}: lock {found:?} has no scenarios in the simulator: give one of {locks}")]
    UnknownLock { file: String, found: String, locks: String },
    #[error("{file}: scenario {scenario:?}: the simulator has a scenario of that name: rename it")]
    BuiltInName { file: String, scenario: String },
    #[error("{file}: one scenario file per run ({first} was read already)")]
    SecondFile { file: String, first: String },
    #[error("{file}: lists no scenario: add a [[scenario]] table")]
    Empty { file: String },
    #[error("{file}: lists {count} scenarios, more than {MAX_SCENARIOS_PER_FILE}")]
    TooMany { file: String, count: usize },
    #[error("{file}: scenario {scenario:?}: {why}")]
    Scenario {
        file: String,
        scenario: String,
        why: Box<ScenarioDataError>,
    },
}

/// What is wrong with one scenario of a file.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioDataError {
    #[error("its name is empty or not lower-case letters, digits and '-'")]
    Name,
    #[error("another scenario has the same name")]
    Duplicate,
    #[error("clients {0:?}: write a count (5) or a range drawn from the seed (5..=32, or 5..33)")]
    ClientsRange(String),
    #[error("expect_violated {claim:?} is not a claim: give one of {}", Claim::ALL.map(Claim::name).join(", "))]
    Claim { claim: String },
    #[error("matrix: give either column and label, or client_bug")]
    Matrix,
    #[error("a fault: give either at_ms or after (first-acquired, first-renewal), not both")]
    Trigger,
    #[error("a restart fault needs server, persistence and down_ms")]
    Restart,
    #[error("settings: {0}")]
    Settings(Box<toml::de::Error>),
    #[error("{0}")]
    Refused(ScenarioError),
    #[error("--set {0}: {1} is not a table of the scenario")]
    NotATable(String, String),
    #[error("--set: {0}")]
    Set(Box<toml::de::Error>),
}

/// A file's scenarios as tables, as written.
#[derive(Deserialize)]
struct RawFile {
    #[serde(default, rename = "scenario")]
    scenarios: Vec<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileData {
    lock: String,
    #[serde(default, rename = "scenario")]
    scenarios: Vec<ScenarioData>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioData {
    name: String,
    help: String,
    premise: String,
    matrix: Option<MatrixData>,
    expect_violated: Option<String>,
    #[serde(default)]
    settings: toml::Table,
    clients: Option<ClientsData>,
    acquisitions: Option<u32>,
    max_tries: Option<u32>,
    hold_ms: Option<u64>,
    extend_after_ms: Option<u64>,
    extends: Option<u32>,
    think_max_ms: Option<u64>,
    #[serde(default)]
    start_ms: Vec<u64>,
    #[serde(default)]
    server_clocks: Vec<ClockData>,
    #[serde(default)]
    client_clocks: Vec<ClockData>,
    lost_request_ppm: Option<u32>,
    lost_reply_ppm: Option<u32>,
    lost_message_ppm: Option<u32>,
    message_delay_ms: Option<u64>,
    replication_lag_ms: Option<u64>,
    zk_close_lag_ms: Option<u64>,
    #[serde(default)]
    slow: Vec<SlowData>,
    #[serde(default)]
    cuts: Vec<CutData>,
    #[serde(default)]
    faults: Vec<FaultData>,
    #[serde(default)]
    pauses: Vec<PauseData>,
    request_timeout_ms: Option<u64>,
    bound_ms: Option<u64>,
    #[serde(default)]
    check_free_progress: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ClientsData {
    Count(usize),
    Range(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixData {
    column: Option<MatrixColumn>,
    label: Option<String>,
    client_bug: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ClockData {
    offset_us: i64,
    drift_ppm: i64,
    jumps: Vec<JumpData>,
    error_us: u64,
    error_tail_us: u64,
    error_tail_ppm: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JumpData {
    at_ms: u64,
    step_us: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SlowData {
    server: usize,
    from_ms: u64,
    to_ms: u64,
    extra_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CutData {
    /// Absent: every client.
    client: Option<usize>,
    server: usize,
    from_ms: u64,
    /// Absent: to the end of the run.
    to_ms: Option<u64>,
    mode: CutMode,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PauseData {
    client: usize,
    acquisition: u32,
    pause_ms: u64,
    #[serde(default)]
    whole_process: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultData {
    at_ms: Option<u64>,
    after: Option<AfterData>,
    #[serde(default)]
    delay_ms: u64,
    action: ActionData,
    server: Option<usize>,
    persistence: Option<PersistenceData>,
    down_ms: Option<u64>,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum AfterData {
    FirstAcquired,
    FirstRenewal,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ActionData {
    Failover,
    Restart,
}

/// The store's `Persistence` keeps its own serde names (`None`, `EveryWrite`) for the records
/// that carry it; the scenario language writes `none`, `every-write`.
#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum PersistenceData {
    None,
    EveryWrite,
}

/// Whether `text` reads as a families' scenario file (it names its lock), not a row locks'
/// knobs file.
pub fn names_a_lock(text: &str) -> bool {
    toml::from_str::<toml::Table>(text).is_ok_and(|table| table.contains_key("lock"))
}

/// The lock a scenario file names; `locks` lists the locks with scenarios for the refusal.
pub fn lock_of(file: &str, text: &str, locks: &str) -> Result<Lock, ScenarioFileError> {
    let table: toml::Table = toml::from_str(text).map_err(|source| ScenarioFileError::Toml {
        file: file.to_owned(),
        source: Box::new(source),
    })?;
    let Some(name) = table.get("lock").and_then(toml::Value::as_str) else {
        return Err(ScenarioFileError::NoLock {
            file: file.to_owned(),
            locks: locks.to_owned(),
        });
    };
    Lock::named(name).ok_or_else(|| ScenarioFileError::UnknownLock {
        file: file.to_owned(),
        found: name.to_owned(),
        locks: locks.to_owned(),
    })
}

/// The scenarios of `text`, a scenario file of the lock named `lock` (a registry name, or a
/// lock of your own: its `SimLock::name`), read as `file` in errors, each lock built by
/// `build_lock` from its `settings`.
///
/// The strings of a loaded file live as long as the process (a file is loaded once).
pub fn load(lock: &str, file: &str, text: &str, build_lock: LockBuilder) -> Result<Vec<Named>, ScenarioFileError> {
    let data: FileData = toml::from_str(text).map_err(|source| ScenarioFileError::Toml {
        file: file.to_owned(),
        source: Box::new(source),
    })?;
    if data.lock != lock {
        return Err(ScenarioFileError::WrongLock {
            file: file.to_owned(),
            found: data.lock,
            expected: lock.to_owned(),
        });
    }
    if data.scenarios.is_empty() {
        return Err(ScenarioFileError::Empty { file: file.to_owned() });
    }
    if data.scenarios.len() > MAX_SCENARIOS_PER_FILE {
        return Err(ScenarioFileError::TooMany {
            file: file.to_owned(),
            count: data.scenarios.len(),
        });
    }
    let raw: RawFile = toml::from_str(text).map_err(|source| ScenarioFileError::Toml {
        file: file.to_owned(),
        source: Box::new(source),
    })?;
    let mut named: Vec<Named> = Vec::with_capacity(data.scenarios.len());
    for (scenario, table) in data.scenarios.into_iter().zip(raw.scenarios) {
        let name = scenario.name.clone();
        let refuse = |why| ScenarioFileError::Scenario {
            file: file.to_owned(),
            scenario: name.clone(),
            why: Box::new(why),
        };
        if named.iter().any(|other| other.name == name) {
            return Err(refuse(ScenarioDataError::Duplicate));
        }
        named.push(scenario.into_named(table, build_lock).map_err(refuse)?);
    }
    Ok(named)
}

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

impl ScenarioData {
    fn into_named(self, table: toml::Table, build_lock: LockBuilder) -> Result<Named, ScenarioDataError> {
        let name_ok = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !name_ok {
            return Err(ScenarioDataError::Name);
        }
        let expect_violated = match &self.expect_violated {
            None => None,
            Some(claim) => Some(
                Claim::named(claim)
                    .ok_or_else(|| ScenarioDataError::Claim { claim: claim.clone() })?
                    .name(),
            ),
        };
        let matrix = match self.matrix {
            None => InMatrix::No,
            Some(MatrixData {
                column: Some(column),
                label: Some(label),
                client_bug: None,
            }) => InMatrix::Cell(column, leak(label)),
            Some(MatrixData {
                column: None,
                label: None,
                client_bug: Some(label),
            }) => InMatrix::ClientBug(leak(label)),
            Some(_) => return Err(ScenarioDataError::Matrix),
        };
        let (clients, clients_from_seed) = match self.clients {
            None => (None, None),
            Some(ClientsData::Count(count)) => (Some(count), None),
            Some(ClientsData::Range(text)) => {
                let range = parse_clients_range(&text).ok_or(ScenarioDataError::ClientsRange(text))?;
                (Some(*range.start()), Some(range))
            }
        };
        let faults = self
            .faults
            .into_iter()
            .map(FaultData::into_fault)
            .collect::<Result<Vec<_>, _>>()?;
        let lock = build_lock(self.settings).map_err(|error| ScenarioDataError::Settings(Box::new(error)))?;
        let base = FamilyScenario::base(leak(self.name), leak(self.premise), lock);
        let template = FamilyScenario {
            clients: clients.unwrap_or(base.clients),
            acquisitions: self.acquisitions.unwrap_or(base.acquisitions),
            max_tries: self.max_tries.unwrap_or(base.max_tries),
            hold_ms: self.hold_ms.unwrap_or(base.hold_ms),
            extend_after_ms: self.extend_after_ms.or(base.extend_after_ms),
            extends: self.extends.unwrap_or(base.extends),
            think_max_ms: self.think_max_ms.unwrap_or(base.think_max_ms),
            start_ms: self.start_ms,
            server_clocks: self.server_clocks.into_iter().map(ClockData::into_spec).collect(),
            client_clocks: self.client_clocks.into_iter().map(ClockData::into_spec).collect(),
            lost_request_ppm: self.lost_request_ppm.unwrap_or(base.lost_request_ppm),
            lost_reply_ppm: self.lost_reply_ppm.unwrap_or(base.lost_reply_ppm),
            lost_message_ppm: self.lost_message_ppm.unwrap_or(base.lost_message_ppm),
            message_delay_ms: self.message_delay_ms.unwrap_or(base.message_delay_ms),
            replication_lag_ms: self.replication_lag_ms.or(base.replication_lag_ms),
            zk_close_lag_ms: self.zk_close_lag_ms.unwrap_or(base.zk_close_lag_ms),
            slow: self
                .slow
                .into_iter()
                .map(|slow| {
                    (
                        slow.server,
                        Slow {
                            from_ms: slow.from_ms,
                            to_ms: slow.to_ms,
                            extra_ms: slow.extra_ms,
                        },
                    )
                })
                .collect(),
            cuts: self
                .cuts
                .into_iter()
                .map(|cut| Cut {
                    client: cut.client,
                    server: cut.server,
                    from_ms: cut.from_ms,
                    to_ms: cut.to_ms.unwrap_or(u64::MAX),
                    mode: cut.mode,
                })
                .collect(),
            faults,
            pauses: self
                .pauses
                .into_iter()
                .map(|pause| Pause {
                    client: pause.client,
                    acquisition: pause.acquisition,
                    pause_ms: pause.pause_ms,
                    whole_process: pause.whole_process,
                })
                .collect(),
            request_timeout_ms: self.request_timeout_ms.unwrap_or(base.request_timeout_ms),
            bound_ms: self.bound_ms.unwrap_or(base.bound_ms),
            check_free_progress: self.check_free_progress,
            expect_violated,
            ..base
        };
        // What the simulator refuses to run (counts out of range, a fault on a client the run
        // lacks, the lock's own settings), at both ends of a seeded client count (the checks
        // that depend on the count hold between its ends if they hold at both).
        let ends = clients_from_seed
            .clone()
            .map_or([template.clients; 2], |range| [*range.start(), *range.end()]);
        for clients in ends {
            FamilyScenario {
                clients,
                ..template.clone()
            }
            .check()
            .map_err(ScenarioDataError::Refused)?;
        }
        Ok(Named {
            name: template.name,
            help: leak(self.help),
            matrix,
            template,
            clients_from_seed,
            table,
            build_lock,
        })
    }
}

/// `A..=B` or `A..B` (B excluded), a non-empty range of client counts.
fn parse_clients_range(text: &str) -> Option<RangeInclusive<usize>> {
    let (start, end) = text.split_once("..")?;
    let start: usize = start.trim().parse().ok()?;
    let last: usize = match end.strip_prefix('=') {
        Some(last) => last.trim().parse().ok()?,
        None => end.trim().parse::<usize>().ok()?.checked_sub(1)?,
    };
    (start <= last).then_some(start..=last)
}

impl ClockData {
    fn into_spec(self) -> ClockSpec {
        ClockSpec {
            offset_us: self.offset_us,
            drift_ppm: self.drift_ppm,
            jumps: self.jumps.into_iter().map(|jump| (jump.at_ms, jump.step_us)).collect(),
            error_us: self.error_us,
            error_tail_us: self.error_tail_us,
            error_tail_ppm: self.error_tail_ppm,
        }
    }
}

impl FaultData {
    fn into_fault(self) -> Result<ServerFault, ScenarioDataError> {
        let trigger = match (self.at_ms, self.after) {
            (Some(at_ms), None) => Trigger::AtMs(at_ms),
            (None, Some(AfterData::FirstAcquired)) => Trigger::FirstAcquired {
                delay_ms: self.delay_ms,
            },
            (None, Some(AfterData::FirstRenewal)) => Trigger::FirstRenewal {
                delay_ms: self.delay_ms,
            },
            _ => return Err(ScenarioDataError::Trigger),
        };
        let action = match self.action {
            ActionData::Failover => ServerAction::Failover,
            ActionData::Restart => match (self.server, self.persistence, self.down_ms) {
                (Some(server), Some(persistence), Some(down_ms)) => ServerAction::Restart {
                    server,
                    persistence: match persistence {
                        PersistenceData::None => Persistence::None,
                        PersistenceData::EveryWrite => Persistence::EveryWrite,
                    },
                    down_ms,
                },
                _ => return Err(ScenarioDataError::Restart),
            },
        };
        Ok(ServerFault { trigger, action })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_range_is_inclusive_or_excludes_its_end_and_never_empty() {
        assert_eq!(parse_clients_range("5..=32"), Some(5..=32));
        assert_eq!(parse_clients_range("5..33"), Some(5..=32));
        assert_eq!(parse_clients_range("5..5"), None);
        assert_eq!(parse_clients_range("6..=5"), None);
        assert_eq!(parse_clients_range("0..0"), None);
        assert_eq!(parse_clients_range("5-32"), None);
        assert_eq!(parse_clients_range("-1..3"), None);
    }

    #[test]
    fn drawing_from_an_inclusive_range_equals_drawing_from_the_exclusive_one() {
        for seed in 0..200 {
            assert_eq!(
                clients_from_seed(seed, 5..=32),
                ChaCha8Rng::seed_from_u64(seed).gen_range(5..33)
            );
        }
    }
}

#[cfg(test)]
mod refusals {
    use super::*;
    use crate::family::sim_lock::Simulated;
    use cassalock::algo::family::SetNxLock;
    use cassalock::algo::redis::RedisLockConfig;
    use std::sync::Arc;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Settings {
        ttl_ms: u64,
    }

    fn set_nx(settings: toml::Table) -> Result<LockKind, toml::de::Error> {
        let Settings { ttl_ms } = toml::Value::Table(settings).try_into()?;
        let config = RedisLockConfig {
            ttl_ms,
            extend_every_ms: None,
            ..RedisLockConfig::default()
        };
        Ok(Arc::new(Simulated::<SetNxLock>::new(config, ttl_ms)))
    }

    const GOOD: &str = r#"
lock = "redis-set-nx"
[[scenario]]
name = "a"
help = "h"
premise = "p"
settings = { ttl_ms = 2000 }
clients = "5..=32"
expect_violated = "T1-belief"
matrix = { column = "failover", label = "l" }
replication_lag_ms = 100
[[scenario.faults]]
after = "first-acquired"
action = "failover"
"#;

    fn refusal(text: &str) -> String {
        match load("redis-set-nx", "f.toml", text, set_nx) {
            Ok(_) => panic!("loaded: {text}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn a_good_file_loads_with_its_seeded_client_count() {
        let named = load("redis-set-nx", "f.toml", GOOD, set_nx).expect("loads");
        assert_eq!(named.len(), 1);
        let counts: Vec<usize> = (0..50).map(|seed| named[0].build(seed).clients).collect();
        assert!(counts.iter().all(|count| (5..=32).contains(count)));
        assert!(
            counts.iter().any(|count| *count != counts[0]),
            "the count varies with the seed"
        );
        assert_eq!(named[0].build(3).expect_violated, Some("T1-belief"));
        assert_eq!(named[0].matrix, InMatrix::Cell(MatrixColumn::Failover, "l"));
    }

    #[test]
    fn each_defect_of_a_file_is_refused_with_what_and_where() {
        let cases: [(String, &str); 12] = [
            (GOOD.replace("clients =", "clients_ ="), "unknown field `clients_`"),
            (
                GOOD.replace("redis-set-nx", "redlock"),
                "the file is lock \"redlock\"'s, expected \"redis-set-nx\"",
            ),
            (GOOD.replace("T1-belief", "T9"), "\"T9\" is not a claim"),
            (GOOD.replace("5..=32", "32..=5"), "clients \"32..=5\""),
            (
                GOOD.replace("ttl_ms = 2000", "ttl = 2000"),
                "settings: unknown field `ttl`",
            ),
            (GOOD.replace("ttl_ms = 2000", ""), "settings: missing field `ttl_ms`"),
            (GOOD.replace("5..=32", "5..=65"), "65 clients: give 1 to 64"),
            (
                GOOD.replace("column = \"failover\", ", ""),
                "matrix: give either column and label, or client_bug",
            ),
            (
                GOOD.replace("failover\", label", "flood\", label"),
                "unknown variant `flood`",
            ),
            (
                GOOD.replace("after = \"first-acquired\"", "at_ms = 5\nafter = \"first-acquired\""),
                "give either at_ms or after",
            ),
            (
                GOOD.replace("action = \"failover\"", "action = \"restart\""),
                "a restart fault needs server",
            ),
            (
                format!("{GOOD}{}", &GOOD[GOOD.find("[[scenario]]").unwrap()..]),
                "another scenario has the same name",
            ),
        ];
        for (text, expected) in cases {
            let refusal = refusal(&text);
            assert!(refusal.contains(expected), "{refusal:?} does not say {expected:?}");
            assert!(refusal.starts_with("f.toml"), "{refusal:?} does not name the file");
        }
        assert!(refusal("lock = \"redis-set-nx\"\n").contains("lists no scenario"));
        assert!(refusal("lock = [").contains("line 1"), "a TOML error says its line");
    }

    #[test]
    fn a_setting_changes_its_key_and_nothing_else_and_is_checked_as_a_file_is() {
        let named = load("redis-set-nx", "f.toml", GOOD, set_nx).expect("loads").remove(0);
        let set = |texts: &[&str]| {
            let settings: Vec<Setting> = texts.iter().map(|text| text.parse().expect("parses")).collect();
            named.with(&settings)
        };
        let base = format!("{:?}", named.build(4));
        assert_eq!(format!("{:?}", set(&[]).expect("nothing set").build(4)), base);
        let changed = set(&["hold_ms=50", "settings.ttl_ms=3000", "clients=3"]).expect("valid");
        let scenario = changed.build(4);
        assert_eq!(
            (scenario.hold_ms, scenario.lock.ttl_ms(), scenario.clients),
            (50, 3000, 3)
        );
        let expected = base
            .replace("hold_ms: 300", "hold_ms: 50")
            .replace("ttl_ms: 2000", "ttl_ms: 3000")
            .replace(&format!("clients: {}", named.build(4).clients), "clients: 3");
        assert_eq!(format!("{scenario:?}"), expected, "nothing else moved");
        let refusal = |texts: &[&str]| set(texts).expect_err("refused").to_string();
        assert!(refusal(&["hold_ms=\"x\""]).contains("invalid type"));
        assert!(refusal(&["bogus=1"]).contains("unknown field `bogus`"));
        assert!(refusal(&["settings.ttl=1"]).contains("unknown field `ttl`"));
        assert!(refusal(&["settings.ttl_ms.x=1"]).contains("ttl_ms is not a table"));
        assert!(refusal(&["clients=100"]).contains("100 clients: give 1 to 64"));
        assert!(matches!("name=x".parse::<Setting>(), Err(SettingError::Fixed(..))));
        assert!(matches!("hold_ms".parse::<Setting>(), Err(SettingError::Malformed(_))));
        assert!(matches!("Hold=1".parse::<Setting>(), Err(SettingError::Malformed(_))));
        let range: Setting = "clients=5..=8".parse().expect("parses");
        assert_eq!(
            range.value,
            toml::Value::String("5..=8".into()),
            "a range needs no quotes"
        );
    }

    #[test]
    fn a_setting_out_of_range_or_naming_what_the_run_lacks_is_refused_not_run() {
        let named = load("redis-set-nx", "f.toml", GOOD, set_nx).expect("loads").remove(0);
        let cases = [
            ("bound_ms=0", "bound_ms = 0: give 1 to 3600000"),
            ("request_timeout_ms=0", "request_timeout_ms = 0"),
            ("max_tries=0", "max_tries = 0"),
            ("lost_reply_ppm=1000001", "lost_reply_ppm = 1000001"),
            ("hold_ms=3600001", "hold_ms = 3600001"),
            (
                "pauses=[{client=0,acquisition=0,pause_ms=9223372036854775807}]",
                "pauses.pause_ms",
            ),
            ("server_clocks=[{drift_ppm=-1000000}]", "a clock cannot run backwards"),
            ("client_clocks=[{offset_us=86400000001}]", "offset_us = 86400000001"),
            (
                "cuts=[{server=1,from_ms=0,mode=\"dropped\"}]",
                "names server 1, but the lock runs on 1",
            ),
            ("replication_lag_ms=false", "invalid type"),
            (
                "faults=[{at_ms=5,action=\"failover\"},{at_ms=9,action=\"failover\"}]",
                "two failovers",
            ),
            (
                "faults=[{after=\"first-renewal\",action=\"failover\"}]",
                "does not renew in the background",
            ),
        ];
        for (text, expected) in cases {
            let setting: Setting = text.parse().expect(text);
            let refusal = named.with(&[setting]).expect_err(text).to_string();
            assert!(
                refusal.contains(expected),
                "{text}: {refusal:?} does not say {expected:?}"
            );
        }
        let without_replica = load(
            "redis-set-nx",
            "f.toml",
            &GOOD.replace("replication_lag_ms = 100\n", ""),
            set_nx,
        );
        assert!(without_replica
            .expect_err("a failover without a replica")
            .to_string()
            .contains("give replication_lag_ms"));
    }
}
