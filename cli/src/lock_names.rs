//! Lock names on the command line, from the registry (`cassalock::registry`): a command offers
//! exactly the locks it can run, each with its title as help.

use cassalock::registry::{Entry, Lock, LOCKS};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// A value parser for a lock that `runs` accepts.
fn locks_where(runs: fn(&Entry) -> bool) -> impl TypedValueParser<Value = Lock> {
    let values: Vec<PossibleValue> = LOCKS
        .iter()
        .filter(|entry| runs(entry))
        .map(|entry| PossibleValue::new(entry.name).help(entry.title))
        .collect();
    PossibleValuesParser::new(values).map(|name| Lock::named(&name).expect("a registry name"))
}

/// The locks the real runner runs (`real --lock`, `bench real --locks`).
pub fn real_lock() -> impl TypedValueParser<Value = Lock> {
    locks_where(|entry| entry.real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[arg(long, value_parser = real_lock())]
        lock: Lock,
    }

    #[test]
    fn a_command_offers_the_locks_it_runs_by_their_registry_names() {
        for entry in LOCKS.iter() {
            let parsed = Command::try_parse_from(["c", "--lock", entry.name]).map(|command| command.lock);
            if entry.real {
                assert_eq!(parsed.unwrap(), entry.lock);
            } else {
                let error = parsed.unwrap_err().to_string();
                assert!(error.contains("possible values"), "{}: {error}", entry.name);
            }
        }
    }
}
