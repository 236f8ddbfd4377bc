//! The scenario and its knobs, shared by `sim` and `replay`: the flags, the `--scenario-file`
//! laid under them, the checks made before a run is built, a refused knob said in the user's
//! terms, and the flags that reproduce them in a printed command.

use std::path::PathBuf;

use anyhow::bail;
use cassalock_sim::cluster::Consistency;
use cassalock_sim::cluster::Network;
use cassalock_sim::config::LockOrder;
use cassalock_sim::knobs::{whole, Knobs, MsRange};
use cassalock_sim::scenario::{BuildError, SimOptions};
use clap::{Args, ValueEnum};

use super::command_line::shell_word;
use super::row_file::{names_a_row_lock, row_lock_names, RowFile};
use cassalock_sim::family::scenario_file::Setting;

/// Knobs shared by `sim` and `replay`. A row lock's scenario file (`--scenario-file`, TOML) sets
/// the same fields under the same names in snake_case (`ttl_s`, `hold_ms`, ...) in each of its
/// `[[scenario]]` tables, and so does `--set KEY=VALUE`; a flag given too overrides both.
#[derive(Args, Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScenarioArgs {
    /// A row locks' scenario (contention, skew, pause, pause-at-rewrite, rows-deleted, cl-one,
    /// partition, crash-holder, renew-race, timeservice-stall, loss, swarm), the other locks'
    /// scenarios by name or by lock, several comma-separated (`contention,redlock,etcd-pause`:
    /// `sim` sweeps each in turn, `replay` one family's), `all` for every scenario of every
    /// lock, or `list` (required unless the --scenario-file names one).
    #[arg(long)]
    pub scenario: Option<String>,
    /// Scenarios of your own, from a TOML file (examples in scenarios/): it names its lock
    /// (`lock = "queue"`) and lists `[[scenario]]` tables. A row lock's tables each name a built-in
    /// scenario as `base` and set any knob below in snake_case (`fail_after_apply_percent =
    /// 10`); the other locks' set any key of their built-in scenarios (docs/own-scenario.md).
    /// `sim` runs every scenario of the file, or those --scenario names; unknown keys are
    /// refused; flags given too override the file.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub scenario_file: Option<PathBuf>,
    /// skew: replica r0's clock offset in seconds (default: drawn from the seed in 0..=2 TTL).
    #[arg(long, allow_hyphen_values = true)]
    pub offset_s: Option<f64>,
    /// renew-race: release without waiting for renewal (mutant K3).
    #[arg(long)]
    pub k3: bool,
    /// Mutant M2, any scenario: renewal rewrites the holder's cells without first checking that
    /// its main cell is still there, so a holder whose lease ran out never learns it (C-lost).
    #[arg(long)]
    pub m2: bool,
    /// Mutant M3, any scenario: release stamps its deletes at the lease's start instead of
    /// afresh, so a renewed cell outlives its tombstone (C-release).
    #[arg(long)]
    pub m3: bool,
    /// Mutant M4, any scenario: renewal trusts a rewrite whose reply comes after the cells may
    /// have expired (the library before 2026-11-28), so a holder paused between renewal's check
    /// and its rewrite writes its dead cells back beside the next holder's and goes on renewing
    /// them: `is_lost()` says true at the resume, then false again (C-lost; scenario
    /// pause-at-rewrite).
    #[arg(long)]
    pub m4: bool,
    /// Let the resource accept stale tokens (to see the damage fencing prevents).
    #[arg(long)]
    pub no_fencing: bool,
    /// Restarted replicas lose the writes since their last commit-log sync.
    #[arg(long)]
    pub lose_unsynced: bool,
    /// Override the scenario's consistency level.
    #[arg(long, value_enum)]
    #[serde(deserialize_with = "consistency_named")]
    pub consistency: Option<Consistency>,
    /// Clients call TryGetLock (and try again after a "no") instead of GetLock.
    #[arg(long)]
    pub try_lock: bool,
    /// Run the thesis's listings as written, without our fixes (docs/contract.md): shows the
    /// contract violations the fixes remove.
    #[arg(long)]
    pub thesis_listings: bool,

    /// TTL of the lock cells, whole seconds (library rule: 2 or more, and at least twice the renewal interval).
    #[arg(long, value_name = "S", value_parser = whole::<u32>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub ttl_s: Option<u32>,
    /// How often a holder renews its cells (library rule: at most TTL/2).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub renew_every_ms: Option<u64>,
    /// How often a waiter reads the queue head / main cell.
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub poll_ms: Option<u64>,
    /// Queue lock: the waiter next in line (second in the queue) reads the head this often
    /// instead of --poll-ms, and every waiter reads two queue cells to know (the faster
    /// handoff; default: off, every waiter at --poll-ms).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub next_poll_ms: Option<u64>,
    /// With --next-poll-ms: every waiter reads up to 32 queue cells to learn its rank and
    /// sleeps until the queue's pace says it will be next in line (no longer than it has
    /// watched the queue, at most ten --poll-ms); the
    /// one next in line halves the holder's expected time left, down to --next-poll-ms
    /// (default false; `--paced-poll` alone is true).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = KNOBS)]
    pub paced_poll: Option<bool>,
    /// Each client's acquisitions reuse thread ids: the lowest one none of its acquisitions
    /// in flight uses, so the main and shadow rows keep a cell per client and slot instead of
    /// a tombstone per acquisition (`Settings::reuse_thread_ids`; default true,
    /// false with --thesis-listings: a new id per acquisition, as the listings do).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = KNOBS)]
    pub reuse_thread_ids: Option<bool>,
    /// Queue lock: GetLock reads the queue from the column of the client's last hold of the
    /// lock instead of the row's start, and from the row's start again after meeting another
    /// contender in the main row (`Settings::queue_read_from_last_hold`; default
    /// true, false with --thesis-listings: from the row's start, as the listing does).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = KNOBS)]
    pub queue_read_from_last_hold: Option<bool>,
    /// Give up an acquisition after this long (default: wait for ever); a give-up is a client error, retried.
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub max_wait_ms: Option<u64>,
    /// Retries of a failed store request (library default 3; at most 20).
    #[arg(long, value_name = "N", value_parser = whole::<u8>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub retries: Option<u8>,
    /// Sleep before each retry (library default 100).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub retry_backoff_ms: Option<u64>,
    /// Client side: give up waiting for the coordinator's answer after this long (default 3000).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub request_timeout_ms: Option<u64>,
    /// Coordinator: give up waiting for replicas' read answers after this long (default 2000).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub read_timeout_ms: Option<u64>,
    /// Coordinator: give up waiting for replicas' write acknowledgements after this long (default 2000).
    #[arg(long, value_name = "MS", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub write_timeout_ms: Option<u64>,
    /// Number of clients (1..=64), for any lock's scenario; a row locks' scenario's client faults
    /// map onto them (client c -> c mod N).
    #[arg(long, value_name = "N", value_parser = whole::<usize>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub clients: Option<usize>,
    /// Set any key of the scenario, as its TOML file would (repeatable): a row locks' knob by
    /// its snake_case name (`--set ttl_s=10 --set hold_ms=0..50`; a flag given too wins), any
    /// key of the other locks' scenarios (`--set settings.ttl_ms=3000`; every key:
    /// docs/own-scenario.md).
    #[arg(long, value_name = "KEY=VALUE", help_heading = KNOBS)]
    #[serde(skip)]
    pub set: Vec<String>,
    /// Acquisitions per client (1..=10000), for any lock's scenario.
    #[arg(long, value_name = "N", value_parser = whole::<u32>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub acquisitions: Option<u32>,
    /// Critical-section length, uniform in LO..HI ms (both included).
    #[arg(long, value_name = "LO..HI", allow_hyphen_values = true, help_heading = KNOBS)]
    pub hold_ms: Option<MsRange>,
    /// Pause between a release and the next acquisition, uniform in LO..HI ms.
    #[arg(long, value_name = "LO..HI", allow_hyphen_values = true, help_heading = KNOBS)]
    pub think_ms: Option<MsRange>,
    /// Long operations: a hold is drawn from this range instead, with --long-hold-percent.
    #[arg(long, value_name = "LO..HI", allow_hyphen_values = true, help_heading = KNOBS)]
    pub long_hold_ms: Option<MsRange>,
    /// How often a hold is long (0..=100), with --long-hold-ms.
    #[arg(long, value_name = "P", value_parser = number, allow_hyphen_values = true, help_heading = KNOBS)]
    pub long_hold_percent: Option<f64>,
    /// Each store call of a lock client fails before it is applied (Unavailable at once) with this probability (0..100).
    #[arg(long, value_name = "P", value_parser = number, allow_hyphen_values = true, help_heading = KNOBS)]
    pub fail_before_apply_percent: Option<f64>,
    /// Each store call of a lock client is applied but its reply is lost (the client times out) with this probability (0..100).
    #[arg(long, value_name = "P", value_parser = number, allow_hyphen_values = true, help_heading = KNOBS)]
    pub fail_after_apply_percent: Option<f64>,
    /// Every clock reading of a client is off by an error uniform in ±D ms, drawn per reading.
    #[arg(long, value_name = "D", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub clock_error_ms: Option<u64>,
    /// Each client's clock is off by a constant offset drawn from the seed, uniform in ±D ms (on top of the scenario's own).
    #[arg(long, value_name = "D", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub clock_offset_ms: Option<u64>,
    /// A heavy tail of the reading error: P percent of readings (with --clock-error-tail-percent) are off by an error uniform in ±D ms instead of --clock-error-ms's.
    #[arg(long, value_name = "D", value_parser = whole::<u64>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub clock_error_tail_ms: Option<u64>,
    /// How many readings fall in the error's tail (0..100), with --clock-error-tail-ms.
    #[arg(long, value_name = "P", value_parser = number, allow_hyphen_values = true, help_heading = KNOBS)]
    pub clock_error_tail_percent: Option<f64>,
    /// One node's clock (a client or a replica, drawn from the seed) steps back S seconds at a time in 1..15 s drawn from the seed.
    #[arg(long, value_name = "S", value_parser = number, allow_hyphen_values = true, help_heading = KNOBS)]
    pub backward_jump_s: Option<f64>,
    /// Locks per acquisition (1..=16): each client takes shared-0 .. shared-{N-1}, holds them all,
    /// releases them last first; every claim is judged per lock (C-release is not judged then).
    #[arg(long, value_name = "N", value_parser = whole::<usize>, allow_hyphen_values = true, help_heading = KNOBS)]
    pub locks: Option<usize>,
    /// The order a client takes its locks in: fixed (the same for all) or random (drawn per
    /// acquisition; GetLock clients can then deadlock until --max-wait-ms or the time limit); or
    /// one: independent locks, each acquisition takes one of the --locks N, drawn at random.
    #[arg(long, value_name = "fixed|random|one", help_heading = KNOBS)]
    pub lock_order: Option<LockOrder>,
    /// One message's latency on the simulated network, uniform in LO..HI microseconds (default:
    /// madsim's 1000..10000). To compare with a real cluster, give what its round trips measure.
    #[arg(long, value_name = "LO..HI", allow_hyphen_values = true, help_heading = KNOBS)]
    pub message_latency_us: Option<MsRange>,
    /// Which network carries the cluster's messages: queues (the default: a delivery queue per
    /// node) or madsim (its endpoints and RPC: the same latencies and faults, about
    /// 2x slower; what seeds recorded before 2026-11-27 ran on). A seed gives a different run
    /// on each.
    #[arg(long, value_name = "madsim|queues", help_heading = KNOBS)]
    pub network: Option<Network>,
}

/// The help heading of the knobs.
const KNOBS: &str = "Knobs (each overrides the scenario's value)";

/// A decimal number for a knob: finite.
fn number(text: &str) -> anyhow::Result<f64> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        _ => bail!("{text:?} is not a finite decimal number"),
    }
}

/// `consistency = "quorum"` in a scenario file: the flag's names.
fn consistency_named<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Consistency>, D::Error> {
    let name = <String as serde::Deserialize>::deserialize(deserializer)?;
    Consistency::from_str(&name, true)
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("unknown consistency {name:?}; use one, quorum or all")))
}

/// The knobs, listed once: the file's fallback, the library's [`Knobs`], the printed flags.
macro_rules! knob_fields {
    ($($name:ident),* $(,)?) => {
        /// The largest scenario file read (a scenario is a few hundred bytes).
const MAX_SCENARIO_FILE_BYTES: u64 = 1 << 20;

/// The text of a `--scenario-file`, of either kind; a file that cannot be read, or is larger
/// than a mebibyte, is refused naming it.
pub(super) fn read_scenario_file(path: &std::path::Path) -> anyhow::Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .map_err(|error| anyhow::anyhow!("--scenario-file {}: cannot read it: {error}", path.display()))?;
    let mut text = String::new();
    file.take(MAX_SCENARIO_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|error| anyhow::anyhow!("--scenario-file {}: cannot read it: {error}", path.display()))?;
    if text.len() as u64 > MAX_SCENARIO_FILE_BYTES {
        anyhow::bail!(
            "--scenario-file {}: larger than {MAX_SCENARIO_FILE_BYTES} bytes; a scenario file holds a few scenarios",
            path.display()
        );
    }
    Ok(text)
}

impl ScenarioArgs {
            /// Each knob's snake_case name and value as given here (`None`: not given).
            fn knob_values(&self) -> Vec<(&'static str, Option<String>)> {
                vec![$((stringify!($name), self.$name.as_ref().map(ToString::to_string))),*]
            }

            fn knobs(&self) -> Knobs {
                Knobs { $($name: self.$name.clone()),* }
            }

            /// Take each knob not given here from `file`.
            fn fill_knobs_from(&mut self, file: &ScenarioArgs) {
                $(if self.$name.is_none() { self.$name = file.$name.clone(); })*
            }
        }
    };
}

knob_fields!(
    ttl_s,
    renew_every_ms,
    poll_ms,
    max_wait_ms,
    retries,
    retry_backoff_ms,
    request_timeout_ms,
    read_timeout_ms,
    write_timeout_ms,
    clients,
    acquisitions,
    hold_ms,
    think_ms,
    long_hold_ms,
    long_hold_percent,
    fail_before_apply_percent,
    fail_after_apply_percent,
    clock_error_ms,
    clock_offset_ms,
    clock_error_tail_ms,
    clock_error_tail_percent,
    backward_jump_s,
    locks,
    lock_order,
    message_latency_us,
    network,
    next_poll_ms,
    paced_poll,
    reuse_thread_ids,
    queue_read_from_last_hold,
);

/// A scenario with its options, from the flags and the scenario file.
#[derive(Debug)]
pub struct Resolved {
    pub scenario: String,
    pub options: SimOptions,
}

impl ScenarioArgs {
    /// The knobs and switches set with `--set KEY=VALUE`, as a scenario file's table would set
    /// them (a later `--set` of the same key wins).
    fn set_args(&self) -> anyhow::Result<ScenarioArgs> {
        let mut table = toml::Table::new();
        for entry in &self.set {
            let setting: Setting = entry.parse().map_err(|error| anyhow::anyhow!("--set {error}"))?;
            let [key] = setting.path.as_slice() else {
                bail!("--set {entry}: a row locks' scenario has no tables; give a knob of `sim --help` in snake_case (ttl_s=10, hold_ms=0..50)");
            };
            if key == "scenario" {
                bail!("--set {entry}: give --scenario NAME instead");
            }
            table.insert(key.clone(), setting.value);
        }
        toml::Value::Table(table)
            .try_into()
            .map_err(|error: toml::de::Error| anyhow::anyhow!("--set: {}", error.to_string().trim_end()))
    }

    /// Take each switch and knob not given here from `under`.
    fn lay_over(&mut self, under: &ScenarioArgs) {
        self.offset_s = self.offset_s.or(under.offset_s);
        self.consistency = self.consistency.or(under.consistency);
        self.k3 |= under.k3;
        self.m2 |= under.m2;
        self.m3 |= under.m3;
        self.m4 |= under.m4;
        self.no_fencing |= under.no_fencing;
        self.lose_unsynced |= under.lose_unsynced;
        self.try_lock |= under.try_lock;
        self.thesis_listings |= under.thesis_listings;
        self.fill_knobs_from(under);
    }

    /// Lay the flags over the `--set`s, and both over the scenario file's scenario, if any: a
    /// row lock's file (`lock = "queue"`), whose scenarios are added to the simulator and one
    /// of which `--scenario` names (or the file's only one).
    fn merged(&self) -> anyhow::Result<ScenarioArgs> {
        let mut merged = self.clone();
        merged.lay_over(&self.set_args()?);
        let Some(path) = &self.scenario_file else {
            return Ok(merged);
        };
        let shown = path.display().to_string();
        let text = read_scenario_file(path)?;
        if names_a_row_lock(&text).is_none() {
            bail!("{}", not_a_scenario_file(&shown, &text));
        }
        let file: RowFile<ScenarioArgs> =
            RowFile::parse(&text).map_err(|error| anyhow::anyhow!("--scenario-file {shown}: {error}"))?;
        file.add_to_simulator(&shown)?;
        let chosen = match self.scenario.as_deref() {
            Some(name) => file
                .scenarios
                .iter()
                .find(|scenario| scenario.name == name)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "--scenario {name}: --scenario-file {shown} has no scenario of that name; it has {}",
                        file.names()
                    )
                })?,
            None => match file.scenarios.as_slice() {
                [only] => only,
                _ => bail!(
                    "--scenario-file {shown} has {} scenarios: give --scenario NAME, one of {}",
                    file.scenarios.len(),
                    file.names()
                ),
            },
        };
        merged.scenario = Some(chosen.name.clone());
        merged.lay_over(&chosen.args);
        Ok(merged)
    }

    /// The names of the scenarios of the row lock's `--scenario-file`, comma-separated.
    pub fn file_scenario_names(&self) -> anyhow::Result<String> {
        let Some(path) = &self.scenario_file else {
            bail!("no --scenario-file given");
        };
        let shown = path.display().to_string();
        let text = read_scenario_file(path)?;
        if names_a_row_lock(&text).is_none() {
            bail!("{}", not_a_scenario_file(&shown, &text));
        }
        let file: RowFile<ScenarioArgs> =
            RowFile::parse(&text).map_err(|error| anyhow::anyhow!("--scenario-file {shown}: {error}"))?;
        Ok(file.names())
    }

    /// The scenario and its options: the file (if any) with the flags over it, checked as far as
    /// it can be without building the run ([`build`] checks the rest).
    pub fn resolve(&self) -> anyhow::Result<Resolved> {
        let merged = self.merged()?;
        let Some(scenario) = merged.scenario.clone() else {
            bail!("give --scenario NAME, or a --scenario-file that sets scenario = \"NAME\"");
        };
        // A scenario file's scenario runs its base's plan.
        let base = cassalock_sim::scenario::file_scenario(&scenario).map_or(scenario.as_str(), |added| added.base.name);
        if let Some(offset) = merged.offset_s {
            if !offset.is_finite() || offset.abs() > 86_400.0 {
                bail!("--offset-s {offset}: give an offset within one day (in seconds)");
            }
            if base != "skew" {
                bail!("--offset-s applies to the skew scenario only");
            }
        }
        if merged.k3 && base != "renew-race" {
            bail!("--k3 applies to the renew-race scenario only");
        }
        Ok(Resolved {
            scenario,
            options: SimOptions {
                offset_s: merged.offset_s,
                k3: merged.k3,
                m2: merged.m2,
                m3: merged.m3,
                m4: merged.m4,
                no_fencing: merged.no_fencing,
                lose_unsynced: merged.lose_unsynced,
                consistency: merged.consistency,
                try_lock: merged.try_lock,
                thesis_listings: merged.thesis_listings,
                knobs: Box::new(merged.knobs()),
            },
        })
    }

    /// A refused knob in the user's terms: the flag if it was given as one, else the file's key.
    pub fn explain(&self, error: &BuildError) -> String {
        let BuildError::Knob(knob) = error else {
            return error.to_string();
        };
        let given = |args: &ScenarioArgs| {
            args.knob_values()
                .iter()
                .any(|(name, value)| *name == knob.knob && value.is_some())
        };
        let given_as_flag = given(self);
        let given_as_set = !given_as_flag && self.set_args().is_ok_and(|set| given(&set));
        match &self.scenario_file {
            _ if given_as_set => format!("--set {}={}: {}", knob.knob, knob.value, knob.rule),
            Some(path) if !given_as_flag => format!(
                "--scenario-file {}: {} = {}: {}",
                path.display(),
                knob.knob,
                knob.value,
                knob.rule
            ),
            _ => format!("--{} {}: {}", knob.knob.replace('_', "-"), knob.value, knob.rule),
        }
    }

    /// The flags that reproduce these options, for printed commands: the scenario file, then
    /// every flag given (the file's values come from the file).
    /// The flags given that only the row locks' scenarios take: every flag of [`Self::flags`]
    /// but `--clients` and `--acquisitions`, which the other locks' scenarios take too.
    pub fn row_only_flags(&self) -> String {
        let read_as_families = cassalock_sim::family::scenario::scenario_file_read();
        ScenarioArgs {
            clients: None,
            acquisitions: None,
            set: Vec::new(),
            clock_offset_ms: None,
            clock_error_ms: None,
            clock_error_tail_ms: None,
            clock_error_tail_percent: None,
            // A families' scenario file was read as one: not a row locks' knobs file.
            scenario_file: self
                .scenario_file
                .clone()
                .filter(|path| Some(path.display().to_string().as_str()) != read_as_families),
            ..self.clone()
        }
        .flags()
    }

    pub fn flags(&self) -> String {
        let mut flags = String::new();
        if let Some(path) = &self.scenario_file {
            flags.push_str(&format!(" --scenario-file {}", shell_word(&path.display().to_string())));
        }
        if let Some(offset) = self.offset_s {
            flags.push_str(&format!(" --offset-s {offset}"));
        }
        if let Some(value) = self.consistency.as_ref().and_then(ValueEnum::to_possible_value) {
            flags.push_str(&format!(" --consistency {}", value.get_name()));
        }
        for (on, flag) in [
            (self.k3, " --k3"),
            (self.m2, " --m2"),
            (self.m3, " --m3"),
            (self.m4, " --m4"),
            (self.no_fencing, " --no-fencing"),
            (self.lose_unsynced, " --lose-unsynced"),
            (self.try_lock, " --try-lock"),
            (self.thesis_listings, " --thesis-listings"),
        ] {
            if on {
                flags.push_str(flag);
            }
        }
        for (name, value) in self.knob_values() {
            if let Some(value) = value {
                flags.push_str(&format!(" --{} {value}", name.replace('_', "-")));
            }
        }
        for setting in &self.set {
            flags.push_str(&format!(" --set {}", shell_word(setting)));
        }
        flags
    }
}

/// Why a `--scenario-file` that names no row lock is not one (the other locks' files never get
/// here): the old knobs file (`scenario = "NAME"` at the top) says how to write it now.
fn not_a_scenario_file(shown: &str, text: &str) -> String {
    let old_knobs = toml::from_str::<toml::Table>(text).ok().and_then(|table| {
        table
            .get("scenario")
            .and_then(|value| value.as_str().map(str::to_owned))
    });
    match old_knobs {
        Some(base) => format!(
            "--scenario-file {shown}: the knobs file of before is now a scenario of the one scenario language: write lock = \"NAME\" at its top (a row lock: {locks}), then its knobs under [[scenario]] with name = \"...\", help = \"...\" and base = \"{base}\" (docs/own-scenario.md)",
            locks = row_lock_names(),
        ),
        None => format!(
            "--scenario-file {shown}: no lock = \"NAME\" line: a scenario file names its lock (a row lock: {locks}; or another lock with scenarios, `cassalock sim --scenario list`)",
            locks = row_lock_names(),
        ),
    }
}
