//! The faults of a client run: a client's process group stopped and continued (a holder past
//! its lease, a waiter while another holds), and a command run on the servers while a client
//! holds (and its undo), each with its start and end in the run's event record; a fault that
//! could not fire is recorded as such.

use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use cassalock_judge::event::{Disruption, What};

use super::protocol;
use super::run::Client;
use crate::now_us;

/// A client paused on plan, as soon as the run's `at_acquisition`-th acquisition is made: its
/// process (group) stopped (SIGSTOP) for `ms`, then continued (SIGCONT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    pub at_acquisition: u64,
    pub ms: u64,
    pub whom: Paused,
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
        match self.whom {
            Paused::Holder => "--pause-holder-ms",
            Paused::Waiter => "--pause-waiter-ms",
        }
    }
}

/// A fault on the servers, by a command (`cluster/cassalock-servers pause redis1`, `... restart
/// zk1`): run through `/bin/sh` as soon as the run's `at_acquisition`-th acquisition is made,
/// while its holder holds; then, after `ms`, `undo` if there is one (`... resume redis1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerFault {
    pub at_acquisition: u64,
    pub command: String,
    pub undo: Option<String>,
    pub ms: u64,
}

/// How long a planned waiter pause looks for a client waiting in its `lock` call.
pub const WAITER_SEARCH: Duration = Duration::from_secs(1);

/// The longest a server fault's command may run.
pub const SERVER_FAULT_LIMIT: Duration = Duration::from_secs(60);

impl Client<'_> {
    /// Stop client `name`'s process group (process `pid`) for `ms`, then continue it; both
    /// ends in the record. `when` says what it was doing.
    pub(super) fn pause(&self, name: &str, pid: u32, when: &str, ms: u64) {
        let text = format!("{name}'s process stopped (SIGSTOP) for {ms} ms {when}");
        let fault = |begins: bool| What::Fault {
            text: text.clone(),
            target: Some(name.to_owned()),
            disruption: Some(Disruption::Paused),
            begins,
            at_step: false,
        };
        self.shared.paused.store(true, Ordering::Relaxed);
        self.shared.push(now_us(), "faults", None, fault(true));
        #[cfg(unix)]
        let paused = super::process::signal_group(pid, libc::SIGSTOP).is_ok();
        #[cfg(not(unix))]
        let paused = false;
        thread::sleep(Duration::from_millis(ms));
        #[cfg(unix)]
        if paused {
            let _ = super::process::signal_group(pid, libc::SIGCONT);
        }
        self.shared.push(now_us(), "faults", None, fault(false));
    }

    /// Run the server fault's command, and after its time its undo, while this client holds;
    /// each end in the record, a command that fails said as unfired with its output.
    pub(super) fn server_fault(&self, fault: &ServerFault) {
        let fault_event = |text: String, begins: bool| What::Fault {
            text,
            target: Some("servers".into()),
            disruption: None,
            begins,
            at_step: false,
        };
        self.shared.push(
            now_us(),
            "faults",
            None,
            fault_event(format!("`{}`", fault.command), true),
        );
        if let Err(why) = run_command(&fault.command) {
            self.shared
                .push(now_us(), "faults", None, What::FaultUnfired { text: why.to_string() });
            return;
        }
        if let Some(undo) = &fault.undo {
            thread::sleep(Duration::from_millis(fault.ms));
            if let Err(why) = run_command(undo) {
                self.shared
                    .push(now_us(), "faults", None, What::FaultUnfired { text: why.to_string() });
                return;
            }
            self.shared.push(
                now_us(),
                "faults",
                None,
                fault_event(format!("`{}`, undone by `{undo}`", fault.command), false),
            );
        }
        self.shared.server_fault_fired.store(true, Ordering::Relaxed);
    }

    /// Stop the lowest-numbered other client waiting in its `lock` call, while this one holds;
    /// the others may not have asked yet when the first acquisition is made, so it looks for
    /// one for up to [`WAITER_SEARCH`].
    pub(super) fn pause_a_waiter(&self, order: u64, ms: u64) {
        let give_up = Instant::now() + WAITER_SEARCH;
        let waiter = loop {
            let found = self
                .shared
                .waiting()
                .iter()
                .map(|(&index, &pid)| (index, pid))
                .find(|&(index, _)| index != self.index);
            if found.is_some() || Instant::now() >= give_up {
                break found;
            }
            thread::sleep(Duration::from_millis(5));
        };
        match waiter {
            Some((index, pid)) => self.pause(
                &format!("c{index}"),
                pid,
                &format!("while it waits for the lock {} holds", self.name),
                ms,
            ),
            None => {
                self.shared.pause_unfired.store(true, Ordering::Relaxed);
                self.shared.push(
                    now_us(),
                    "faults",
                    None,
                    What::FaultUnfired {
                        text: format!(
                            "a waiter to pause at acquisition {order}: no other client was waiting within {} ms",
                            WAITER_SEARCH.as_millis()
                        ),
                    },
                );
            }
        }
    }
}

/// A fault's command that did not do its work.
#[derive(Debug, thiserror::Error)]
enum CommandFailed {
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
fn run_command(command: &str) -> Result<(), CommandFailed> {
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
