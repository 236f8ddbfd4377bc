//! The commands `sim` and `replay` print for a user to paste back: a word quoted for the shell,
//! and the `replay` command of one seed. Uses nothing else of `sim`.

use cassalock::driver::Algorithm;

/// `text` as one shell word: as it is when the shell would read it unchanged, else quoted, so
/// that every printed command (and every recorded line) can be pasted back (a scenario file
/// under a path with spaces, say).
pub fn shell_word(text: &str) -> String {
    shlex::try_quote(text).map_or_else(|_| text.to_owned(), |quoted| quoted.into_owned())
}

/// The `replay` command that runs one seed of a row locks' scenario again in full.
pub fn replay_command(scenario: &str, seed: u64, algorithm: Algorithm, flags: &str) -> String {
    format!(
        "cassalock replay --scenario {scenario} --seed {seed} --algorithm {}{flags}",
        algorithm.name()
    )
}
