//! The faults of a client run, as planned: a client's process group stopped and continued, or
//! its connections to its servers cut and healed (a holder past its lease, a waiter while
//! another holds), and a command run on the servers while a client holds (and its undo), run
//! through `/bin/sh` within a time limit. The run (`run.rs`) fires them and records each with
//! its start and end.

use std::thread;
use std::time::{Duration, Instant};

use super::protocol;

/// A client halted on plan, as soon as the run's `at_acquisition`-th acquisition is made, for
/// `ms`: its process (group) stopped (SIGSTOP), then continued (SIGCONT); or its connections
/// to every server cut at its forwarders (`proxy.rs`), then healed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    pub at_acquisition: u64,
    pub ms: u64,
    pub whom: Paused,
    pub how: Halt,
}

/// How a [`Pause`] halts its client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halt {
    /// Its process group stopped: it runs no code, its library's timers and listeners too.
    Stopped,
    /// Cut off from its servers: it runs on, its library sees no answer, its leases and
    /// sessions run out at the servers.
    CutOff,
}

/// Which client a [`Pause`] stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paused {
    /// The client that made that acquisition: its hold, its write and its release follow.
    Holder,
    /// The lowest-numbered other client waiting in its `lock` call then (its lease or session
    /// may run out while it waits); the holder holds on meanwhile.
    Waiter,
}

impl Pause {
    pub(super) fn flag(&self) -> &'static str {
        match (self.how, self.whom) {
            (Halt::Stopped, Paused::Holder) => "--pause-holder-ms",
            (Halt::Stopped, Paused::Waiter) => "--pause-waiter-ms",
            (Halt::CutOff, Paused::Holder) => "--cut-off-holder-ms",
            (Halt::CutOff, Paused::Waiter) => "--cut-off-waiter-ms",
        }
    }
}

/// A fault on the servers, by a command (`cluster/cassalock-servers pause redis1`, `... restart
/// zk1`): run through `/bin/sh` as soon as the run's `at_acquisition`-th acquisition is made,
/// while its holder holds; then, after `ms`, `undo` if there is one (`... resume redis1`).
/// Once its last command has succeeded (the undo, if any), each of `moves` (`FROM=TO`, FROM a forwarded address) leads
/// every client's new connections to FROM to TO: a virtual address moved to a promoted replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerFault {
    pub at_acquisition: u64,
    pub command: String,
    pub undo: Option<String>,
    pub ms: u64,
    pub moves: Vec<String>,
}

/// How long a planned waiter pause looks for a client waiting in its `lock` call.
pub const WAITER_SEARCH: Duration = Duration::from_secs(1);

/// The longest a server fault's command may run.
pub const SERVER_FAULT_LIMIT: Duration = Duration::from_secs(60);

/// A fault's command that did not do its work.
#[derive(Debug, thiserror::Error)]
pub(super) enum CommandFailed {
    #[error("`{command}` could not start: {source}")]
    NotStarted { command: String, source: std::io::Error },
    #[error("`{command}` did not end within {} s", SERVER_FAULT_LIMIT.as_secs())]
    TooLong { command: String },
    #[error("`{command}`: {source}")]
    Wait { command: String, source: std::io::Error },
    /// It exited with a failure; what it printed, cut to the protocol's length.
    #[error("{0}")]
    Exited(String),
}

/// Run `command` through `/bin/sh`, at most [`SERVER_FAULT_LIMIT`]; why not, if it failed.
pub(super) fn run_command(command: &str) -> Result<(), CommandFailed> {
    let wait_failed = |source| CommandFailed::Wait {
        command: command.to_owned(),
        source,
    };
    let mut child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|source| CommandFailed::NotStarted {
            command: command.to_owned(),
            source,
        })?;
    let deadline = Instant::now() + SERVER_FAULT_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CommandFailed::TooLong {
                    command: command.to_owned(),
                });
            }
            Err(e) => return Err(wait_failed(e)),
        }
    }
    let output = child.wait_with_output().map_err(wait_failed)?;
    if output.status.success() {
        Ok(())
    } else {
        Err(CommandFailed::Exited(protocol::cut(&format!(
            "`{command}` failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        ))))
    }
}
