//! A row lock's scenario file: the one scenario language (`lock = "NAME"` and `[[scenario]]`
//! tables, as every other lock's files) for the Cassandra row locks.
//!
//! Each table names its scenario (`name`, `help`), the built-in scenario whose fault plan it
//! runs (`base`: contention, skew, pause, ...), and any knob or switch of `cassalock sim` in
//! snake_case (`ttl_s = 10`, `fail_after_apply_percent = 5`, `m2 = true`). The lock fixes the
//! algorithm and the lock's own settings: `trygetlock` calls TryGetLock, `queue-next-in-line`
//! polls the head every 5 ms when next in line, `queue-paced` paces its waiters too (a knob the
//! scenario sets still wins). The file's scenarios are added to the simulator under their names,
//! so a printed replay command names the file and the scenario, and reads them again.
//!
//! ```toml
//! lock = "queue"
//!
//! [[scenario]]
//! name = "queue-flaky-store"
//! help = "5% of store calls fail before they apply, 5% after"
//! base = "contention"
//! fail_before_apply_percent = 5
//! fail_after_apply_percent = 5
//! ```

use cassalock::driver::Algorithm;
use cassalock::registry::Lock;
use cassalock_sim::family::scenario_file::MAX_SCENARIOS_PER_FILE;
use cassalock_sim::scenario::FileScenario;
use serde::de::DeserializeOwned;

/// The row locks a scenario file may name, each with its algorithm.
const ROW_LOCKS: [(Lock, Algorithm); 5] = [
    (Lock::Old, Algorithm::Old),
    (Lock::Queue, Algorithm::Queue),
    (Lock::QueueNextInLine, Algorithm::Queue),
    (Lock::QueuePaced, Algorithm::Queue),
    (Lock::QueueTry, Algorithm::Queue),
];

/// The names of the row locks a scenario file may name, for messages.
pub(super) fn row_lock_names() -> String {
    ROW_LOCKS.map(|(lock, _)| lock.name()).join(", ")
}

/// One scenario of a row lock's file: its name, help, base and knobs `A` (`sim`'s flags; the
/// lock's own settings laid under them).
#[derive(Clone, Debug)]
pub(super) struct RowScenario<A> {
    pub name: String,
    pub help: String,
    pub base: String,
    pub args: A,
}

/// A row lock's scenario file, read and checked, its knobs read as `A`.
#[derive(Clone, Debug)]
pub(super) struct RowFile<A> {
    pub algorithm: Algorithm,
    pub scenarios: Vec<RowScenario<A>>,
}

/// What is wrong with a row lock's scenario file, each naming the scenario and the key.
#[derive(Debug, thiserror::Error)]
pub(super) enum RowFileError {
    #[error("{0}")]
    Toml(Box<toml::de::Error>),
    #[error("lists no scenario: add a [[scenario]] table (name, help, base and knobs)")]
    Empty,
    #[error("lists {0} scenarios, more than {MAX_SCENARIOS_PER_FILE}")]
    TooMany(usize),
    #[error("scenario {index}: {key} is missing or not text")]
    Missing { index: usize, key: &'static str },
    #[error("scenario {0:?}: its name is empty, longer than 64, or not lower-case letters, digits and '-'")]
    Name(String),
    #[error("scenario {0:?}: another scenario has that name")]
    Duplicate(String),
    #[error("scenario {0:?}: the simulator has a scenario of that name; rename it")]
    BuiltInName(String),
    #[error("scenario {scenario:?}: base {base:?} is not a row locks' scenario; give one of {known}")]
    UnknownBase {
        scenario: String,
        base: String,
        known: String,
    },
    #[error("scenario {0:?}: `scenario` is the base's key here; write base = \"NAME\"")]
    ScenarioKey(String),
    #[error("scenario {scenario:?}: {error}")]
    Knob {
        scenario: String,
        error: Box<toml::de::Error>,
    },
}

/// The lock a row lock's file names, with its algorithm, or `None` for a lock of no row.
pub(super) fn row_lock_named(name: &str) -> Option<(Lock, Algorithm)> {
    ROW_LOCKS.into_iter().find(|(lock, _)| lock.name() == name)
}

/// The row lock `text` names at its top (`lock = "queue"`), if it names one.
pub(super) fn names_a_row_lock(text: &str) -> Option<(Lock, Algorithm)> {
    let table = toml::from_str::<toml::Table>(text).ok()?;
    row_lock_named(table.get("lock")?.as_str()?)
}

/// The longest scenario name.
const MAX_NAME_CHARS: usize = 64;

impl<A: DeserializeOwned> RowFile<A> {
    /// Read a row lock's file (the caller has seen it name a row lock).
    pub(super) fn parse(text: &str) -> Result<RowFile<A>, RowFileError> {
        let mut table: toml::Table = toml::from_str(text).map_err(|error| RowFileError::Toml(Box::new(error)))?;
        let (lock, algorithm) = table
            .remove("lock")
            .and_then(|lock| lock.as_str().and_then(row_lock_named))
            .ok_or(RowFileError::Missing { index: 0, key: "lock" })?;
        let tables = match table.remove("scenario") {
            Some(toml::Value::Array(tables)) => tables,
            _ => return Err(RowFileError::Empty),
        };
        if let Some(key) = table.keys().next() {
            return Err(RowFileError::Toml(Box::new(serde::de::Error::custom(format!(
                "unknown key `{key}` at the top: a scenario file has `lock` and [[scenario]] tables"
            )))));
        }
        if tables.is_empty() {
            return Err(RowFileError::Empty);
        }
        if tables.len() > MAX_SCENARIOS_PER_FILE {
            return Err(RowFileError::TooMany(tables.len()));
        }
        let mut scenarios: Vec<RowScenario<A>> = Vec::with_capacity(tables.len());
        for (index, value) in tables.into_iter().enumerate() {
            let scenario = RowScenario::parse(index, value, lock)?;
            if scenarios.iter().any(|other| other.name == scenario.name) {
                return Err(RowFileError::Duplicate(scenario.name));
            }
            scenarios.push(scenario);
        }
        Ok(RowFile { algorithm, scenarios })
    }

    /// Add the file's scenarios to the simulator under their names, read as `file`.
    pub(super) fn add_to_simulator(&self, file: &str) -> anyhow::Result<()> {
        let added = self
            .scenarios
            .iter()
            .map(|scenario| FileScenario {
                name: leak(&scenario.name),
                help: leak(&scenario.help),
                base: cassalock_sim::scenario::scenario(&scenario.base).expect("checked when parsed"),
                algorithm: self.algorithm,
            })
            .collect();
        cassalock_sim::scenario::add_file_scenarios(file, added)
            .map_err(|error| anyhow::anyhow!("--scenario-file {error}"))
    }

    /// The names of its scenarios, comma-separated.
    pub(super) fn names(&self) -> String {
        self.scenarios
            .iter()
            .map(|scenario| scenario.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A string that lives as long as the process: a file is added once per run.
fn leak(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

impl<A: DeserializeOwned> RowScenario<A> {
    fn parse(index: usize, value: toml::Value, lock: Lock) -> Result<RowScenario<A>, RowFileError> {
        let toml::Value::Table(mut table) = value else {
            return Err(RowFileError::Missing { index, key: "name" });
        };
        let mut text = |key: &'static str| match table.remove(key) {
            Some(toml::Value::String(text)) => Ok(text),
            _ => Err(RowFileError::Missing { index, key }),
        };
        let name = text("name")?;
        let help = text("help")?;
        let base = text("base")?;
        let name_ok = !name.is_empty()
            && name.chars().count() <= MAX_NAME_CHARS
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !name_ok {
            return Err(RowFileError::Name(name));
        }
        if cassalock_sim::scenario::scenario(&name).is_some() || crate::family_sim::names_family_scenarios(&name) {
            return Err(RowFileError::BuiltInName(name));
        }
        if cassalock_sim::scenario::scenario(&base).is_none() {
            return Err(RowFileError::UnknownBase {
                scenario: name,
                base,
                known: cassalock_sim::scenario::SCENARIOS
                    .map(|scenario| scenario.name)
                    .join(", "),
            });
        }
        if table.contains_key("scenario") {
            return Err(RowFileError::ScenarioKey(name));
        }
        lay_the_lock_under(lock, &mut table);
        let args: A = toml::Value::Table(table)
            .try_into()
            .map_err(|error| RowFileError::Knob {
                scenario: name.clone(),
                error: Box::new(error),
            })?;
        Ok(RowScenario { name, help, base, args })
    }
}

/// The lock's own settings, where the scenario does not set them: TryGetLock's calls, the
/// next-in-line poll and the paced poll of the queue lock's variants (their figure is the real
/// runner's, [`cassalock_real::NEXT_IN_LINE_POLL_MS`]).
fn lay_the_lock_under(lock: Lock, table: &mut toml::Table) {
    let mut under = |key: &str, value: toml::Value| {
        table.entry(key).or_insert(value);
    };
    if matches!(lock, Lock::QueueNextInLine | Lock::QueuePaced) {
        let ms = i64::try_from(cassalock_real::NEXT_IN_LINE_POLL_MS).expect("a few ms");
        under("next_poll_ms", toml::Value::Integer(ms));
    }
    if lock == Lock::QueuePaced {
        under("paced_poll", toml::Value::Boolean(true));
    }
    if lock == Lock::QueueTry {
        table.insert("try_lock".to_owned(), toml::Value::Boolean(true));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few of `sim`'s knobs, as the scenario's table is read into them.
    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Knobs {
        ttl_s: Option<u32>,
        clients: Option<usize>,
        next_poll_ms: Option<u64>,
        paced_poll: Option<bool>,
        try_lock: bool,
    }

    fn parse(text: &str) -> Result<RowFile<Knobs>, RowFileError> {
        RowFile::parse(text)
    }

    fn refusal(text: &str) -> String {
        parse(text).expect_err("refused").to_string()
    }

    #[test]
    fn a_row_lock_s_file_reads_its_scenarios_with_the_lock_laid_under_their_knobs() {
        let file = parse(
            "lock = \"queue-paced\"\n[[scenario]]\nname = \"mine\"\nhelp = \"h\"\nbase = \"loss\"\nttl_s = 10\n\
             [[scenario]]\nname = \"mine-2\"\nhelp = \"h\"\nbase = \"contention\"\nnext_poll_ms = 7\npaced_poll = false\n",
        )
        .expect("a good file");
        assert_eq!(file.algorithm, Algorithm::Queue);
        assert_eq!(file.names(), "mine,mine-2");
        let first = &file.scenarios[0].args;
        assert_eq!(
            (first.ttl_s, first.next_poll_ms, first.paced_poll),
            (Some(10), Some(5), Some(true))
        );
        let second = &file.scenarios[1].args;
        assert_eq!((second.next_poll_ms, second.paced_poll), (Some(7), Some(false)));
        let tried = parse("lock = \"trygetlock\"\n[[scenario]]\nname = \"t\"\nhelp = \"h\"\nbase = \"pause\"\n")
            .expect("a good file");
        assert!(tried.scenarios[0].args.try_lock);
        assert_eq!(tried.algorithm, Algorithm::Queue);
    }

    #[test]
    fn each_defect_of_a_row_lock_s_file_is_refused_naming_the_scenario_and_key() {
        let head = "lock = \"old\"\n[[scenario]]\n";
        for (body, says) in [
            ("name = \"a\"\nhelp = \"h\"\n", "scenario 0: base is missing"),
            ("help = \"h\"\nbase = \"loss\"\n", "scenario 0: name is missing"),
            ("name = \"A b\"\nhelp = \"h\"\nbase = \"loss\"\n", "\"A b\": its name is empty"),
            ("name = \"pause\"\nhelp = \"h\"\nbase = \"loss\"\n", "\"pause\": the simulator has a scenario"),
            ("name = \"a\"\nhelp = \"h\"\nbase = \"lost\"\n", "base \"lost\" is not a row locks' scenario"),
            ("name = \"a\"\nhelp = \"h\"\nbase = \"loss\"\nscenario = \"loss\"\n", "write base = \"NAME\""),
            ("name = \"a\"\nhelp = \"h\"\nbase = \"loss\"\nttl_seconds = 3\n", "unknown field `ttl_seconds`"),
            ("name = \"a\"\nhelp = \"h\"\nbase = \"loss\"\nclients = \"many\"\n", "scenario \"a\": "),
            (
                "name = \"a\"\nhelp = \"h\"\nbase = \"loss\"\n[[scenario]]\nname = \"a\"\nhelp = \"h\"\nbase = \"pause\"\n",
                "\"a\": another scenario has that name",
            ),
        ] {
            let said = refusal(&format!("{head}{body}"));
            assert!(said.contains(says), "{body:?}: {said}");
        }
        assert!(refusal("lock = \"old\"\n").contains("lists no scenario"));
        assert!(refusal("lock = \"old\"\nscenario = []\n").contains("lists no scenario"));
        assert!(
            refusal("lock = \"old\"\nttl_s = 3\n[[scenario]]\nname = \"a\"\nhelp = \"h\"\nbase = \"loss\"\n")
                .contains("unknown key `ttl_s` at the top")
        );
    }
}
