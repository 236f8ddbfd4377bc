//! The client protocol, version 1 (`docs/client-protocol.md`): what cassalock and a client
//! program say to each other over the program's standard input and output, one JSON object a
//! line.
//!
//! cassalock starts the program and waits for its **hello** (which library, which version,
//! what its tokens are). Then it sends **commands** (`lock`, `try_lock`, `write`, `extend`,
//! `unlock`, `exit`), one at a time, each with an id, and reads the program's **answers**: every
//! command gets exactly one final answer with the command's id (`unlock` first says
//! `releasing`, then `released`). The program may also say, at any time and without an id,
//! that the library told it its lock is `lost`. Every answer carries the client's own clock,
//! read when the library returned.
//!
//! Reading is strict: a line that is not one of these objects, an answer to another command
//! than the one outstanding, a second hello, a line over [`MAX_LINE_BYTES`]: the client broke
//! the protocol, and the error names the line. Unknown fields are refused too, so a misspelt
//! field is not silently taken as absent.

use serde::{Deserialize, Serialize};

/// The protocol's name, in every hello.
pub const PROTOCOL: &str = "cassalock-client";
/// The version this cassalock speaks. A hello with another version is refused.
pub const VERSION: u32 = 1;
/// The longest line a client may print, in bytes, newline excluded.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// The longest text (an error, a token) kept from one answer; longer ones are cut, said.
pub const MAX_TEXT_CHARS: usize = 500;

/// A command cassalock sends. `id`s grow by one per command, from 1, per client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// Take the lock, waiting as long as the library waits. `lease_ms`: the lease to ask for
    /// (none: the library's default, its watchdog or session).
    Lock { id: u64, lease_ms: Option<u64> },
    /// Take the lock if it comes within `wait_ms`.
    TryLock {
        id: u64,
        wait_ms: u64,
        lease_ms: Option<u64>,
    },
    /// Say the token the client holds, as the code it protects would send it to a resource.
    Write { id: u64 },
    /// Extend the held lock's lease to `lease_ms` from now.
    Extend { id: u64, lease_ms: u64 },
    /// Release the held lock.
    Unlock { id: u64 },
    /// Release what is held, close the library's connections and exit.
    Exit,
}

impl Command {
    pub fn id(&self) -> Option<u64> {
        match self {
            Command::Lock { id, .. }
            | Command::TryLock { id, .. }
            | Command::Write { id }
            | Command::Extend { id, .. }
            | Command::Unlock { id } => Some(*id),
            Command::Exit => None,
        }
    }

    /// Its name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Lock { .. } => "lock",
            Command::TryLock { .. } => "try_lock",
            Command::Write { .. } => "write",
            Command::Extend { .. } => "extend",
            Command::Unlock { .. } => "unlock",
            Command::Exit => "exit",
        }
    }

    /// One line, newline included.
    pub fn line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a command always serializes");
        line.push('\n');
        line
    }
}

/// What a client's tokens are worth to a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tokens {
    /// Whole numbers that grow with every acquisition (a fenced lock, a znode's czxid, a key's
    /// create revision): a resource can refuse a lower one.
    Fencing,
    /// A value that names the holder and orders nothing (a random string).
    Random,
}

/// The first line a client prints, once its library is connected and ready.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// Always [`PROTOCOL`].
    pub protocol: String,
    /// [`VERSION`].
    pub version: u32,
    /// The library, as its users name it (`redis-py`, `Redisson`, `Curator`).
    pub library: String,
    /// Its version, as its package says.
    pub library_version: String,
    /// The lock type the client takes (`Lock`, `RLock`, `InterProcessMutex`).
    pub lock: String,
    pub tokens: Tokens,
    /// The client's clock when it was ready, microseconds since the Unix epoch.
    pub clock_us: u64,
}

/// How a release ended, as the client saw the library answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Released {
    /// The library said it released the lock (returned normally, or true).
    Released,
    /// The library said the lock was no longer the caller's (an exception saying so, false).
    NotHeld,
    /// The library failed otherwise (the server did not answer).
    Failed,
}

/// One line a client prints after its hello.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum Answer {
    /// `lock` or `try_lock` returned the lock. `valid_until_us`: where the library says how
    /// long the lock is good for (on the client's clock).
    Acquired {
        id: u64,
        token: String,
        #[serde(default)]
        valid_until_us: Option<u64>,
        clock_us: u64,
    },
    /// `try_lock` returned without the lock (its wait ran out).
    NotAcquired { id: u64, why: String, clock_us: u64 },
    /// The command failed: the library raised or returned an error (`error`: its text).
    Failed { id: u64, error: String, clock_us: u64 },
    /// `write`: the token the holder holds now.
    Written { id: u64, token: String, clock_us: u64 },
    /// `extend` returned.
    Extended {
        id: u64,
        #[serde(default)]
        valid_until_us: Option<u64>,
        clock_us: u64,
    },
    /// `unlock` is about to call the library's release: from here the holder no longer uses
    /// the lock.
    Releasing { id: u64, clock_us: u64 },
    /// `unlock`'s release returned.
    Released {
        id: u64,
        outcome: Released,
        #[serde(default)]
        error: Option<String>,
        clock_us: u64,
    },
    /// The library told the holder its lock is lost (a listener, a callback), unasked.
    Lost { why: String, clock_us: u64 },
}

impl Answer {
    /// The command it answers; none for `lost`.
    pub fn id(&self) -> Option<u64> {
        match self {
            Answer::Acquired { id, .. }
            | Answer::NotAcquired { id, .. }
            | Answer::Failed { id, .. }
            | Answer::Written { id, .. }
            | Answer::Extended { id, .. }
            | Answer::Releasing { id, .. }
            | Answer::Released { id, .. } => Some(*id),
            Answer::Lost { .. } => None,
        }
    }

    pub fn clock_us(&self) -> u64 {
        match self {
            Answer::Acquired { clock_us, .. }
            | Answer::NotAcquired { clock_us, .. }
            | Answer::Failed { clock_us, .. }
            | Answer::Written { clock_us, .. }
            | Answer::Extended { clock_us, .. }
            | Answer::Releasing { clock_us, .. }
            | Answer::Released { clock_us, .. }
            | Answer::Lost { clock_us, .. } => *clock_us,
        }
    }

    /// Its name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Answer::Acquired { .. } => "acquired",
            Answer::NotAcquired { .. } => "not_acquired",
            Answer::Failed { .. } => "failed",
            Answer::Written { .. } => "written",
            Answer::Extended { .. } => "extended",
            Answer::Releasing { .. } => "releasing",
            Answer::Released { .. } => "released",
            Answer::Lost { .. } => "lost",
        }
    }
}

/// A line the client printed that is not what the protocol allows there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of its output {why}: {text}")]
pub struct Broken {
    /// 1-based, counting every line the client printed.
    pub line: u64,
    pub why: String,
    /// The line, cut to [`MAX_TEXT_CHARS`].
    pub text: String,
}

impl Broken {
    pub fn new(line: u64, why: impl Into<String>, text: &str) -> Broken {
        Broken {
            line,
            why: why.into(),
            text: cut(text),
        }
    }
}

/// `text` cut to [`MAX_TEXT_CHARS`] characters, the cut said.
pub fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}... ({} bytes in all)", &text[..at], text.len()),
    }
}

/// Read the hello on line `line`.
pub fn hello(line: u64, text: &str) -> Result<Hello, Broken> {
    let hello: Hello =
        serde_json::from_str(text).map_err(|error| Broken::new(line, format!("is not a hello ({error})"), text))?;
    if hello.protocol != PROTOCOL {
        return Err(Broken::new(
            line,
            format!("names protocol {:?}, not {PROTOCOL:?}", hello.protocol),
            text,
        ));
    }
    if hello.version != VERSION {
        return Err(Broken::new(
            line,
            format!(
                "speaks version {} of the protocol; this cassalock speaks version {VERSION}",
                hello.version
            ),
            text,
        ));
    }
    Ok(hello)
}

/// Read an answer on line `line`.
pub fn answer(line: u64, text: &str) -> Result<Answer, Broken> {
    serde_json::from_str(text).map_err(|error| Broken::new(line, format!("is not an answer ({error})"), text))
}

/// A fencing token's place in the order of tokens: whole numbers, compared as numbers of any
/// length (leading zeros ignored). None: not a whole number.
pub fn fencing_order(token: &str) -> Option<(usize, &str)> {
    if token.is_empty() || !token.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let digits = token.trim_start_matches('0');
    Some((digits.len(), digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_one_line_each_with_their_id() {
        assert_eq!(
            Command::Lock {
                id: 1,
                lease_ms: Some(2000)
            }
            .line(),
            "{\"cmd\":\"lock\",\"id\":1,\"lease_ms\":2000}\n"
        );
        assert_eq!(
            Command::TryLock {
                id: 2,
                wait_ms: 50,
                lease_ms: None
            }
            .line(),
            "{\"cmd\":\"try_lock\",\"id\":2,\"wait_ms\":50,\"lease_ms\":null}\n"
        );
        assert_eq!(Command::Exit.line(), "{\"cmd\":\"exit\"}\n");
        assert_eq!(Command::Unlock { id: 9 }.id(), Some(9));
    }

    #[test]
    fn a_hello_names_the_protocol_and_its_version() {
        let good = r#"{"protocol":"cassalock-client","version":1,"library":"redis-py","library_version":"8.1.0","lock":"Lock","tokens":"random","clock_us":5}"#;
        assert_eq!(hello(1, good).unwrap().library, "redis-py");
        let newer = good.replace("\"version\":1", "\"version\":2");
        let refused = hello(1, &newer).unwrap_err();
        assert!(refused.to_string().contains("speaks version 2"), "{refused}");
        let other = good.replace("cassalock-client", "something-else");
        assert!(hello(3, &other).unwrap_err().to_string().starts_with("line 3 "));
        let misspelt = good.replace("\"tokens\"", "\"token\"");
        assert!(
            hello(1, &misspelt).is_err(),
            "a misspelt field is refused, not taken as absent"
        );
    }

    #[test]
    fn answers_are_read_strictly_and_a_bad_line_is_named() {
        let acquired = answer(4, r#"{"event":"acquired","id":3,"token":"17","clock_us":10}"#).unwrap();
        assert_eq!(acquired.id(), Some(3));
        assert_eq!(acquired.name(), "acquired");
        let lost = answer(5, r#"{"event":"lost","why":"session expired","clock_us":11}"#).unwrap();
        assert_eq!(lost.id(), None);
        let released = answer(
            6,
            r#"{"event":"released","id":4,"outcome":"not_held","error":"not owned","clock_us":12}"#,
        )
        .unwrap();
        assert!(matches!(
            released,
            Answer::Released {
                outcome: Released::NotHeld,
                ..
            }
        ));
        for garbage in [
            "hello",
            "{}",
            r#"{"event":"acquired","id":3}"#,
            r#"{"event":"won","id":1,"clock_us":1}"#,
        ] {
            let broken = answer(7, garbage).unwrap_err();
            assert_eq!(broken.line, 7);
            assert!(
                broken.to_string().starts_with("line 7 of its output is not an answer"),
                "{broken}"
            );
        }
    }

    #[test]
    fn long_text_is_cut_and_says_so() {
        let long = "x".repeat(MAX_TEXT_CHARS + 10);
        let kept = cut(&long);
        assert!(kept.ends_with(&format!("... ({} bytes in all)", long.len())));
        assert_eq!(cut("short"), "short");
    }

    #[test]
    fn fencing_tokens_order_as_numbers_of_any_length() {
        assert!(fencing_order("9") < fencing_order("10"));
        assert!(fencing_order("0010") == fencing_order("10"));
        assert!(fencing_order("99999999999999999999999") > fencing_order("18446744073709551615"));
        assert_eq!(fencing_order("12a"), None);
        assert_eq!(fencing_order(""), None);
        assert_eq!(fencing_order("-1"), None);
    }
}
