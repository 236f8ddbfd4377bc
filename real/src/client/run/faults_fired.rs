//! The planned faults as they fire, on a client's thread while it holds: its own or a
//! waiter's halt (a process group stopped, or its forwarders cut), and the servers' command and
//! its undo; each end in the record.

use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use cassalock_judge::event::{Disruption, What};

use super::{run_command, Client, Halt, ServerFault, WAITER_SEARCH};
use crate::client::proxy;
use crate::now_us;

impl Client<'_> {
    /// Halt client `name` (index `index`, process `pid`) for `ms` as the plan says: its process
    /// group stopped then continued, or its forwarders cut then healed; both ends in the
    /// record. `when` says what it was doing.
    pub(super) fn pause(&self, name: &str, index: usize, pid: u32, when: &str, ms: u64) {
        let how = self.shared.spec.pause.map_or(Halt::Stopped, |pause| pause.how);
        let (text, disruption) = match how {
            Halt::Stopped => (
                format!("{name}'s process stopped (SIGSTOP) for {ms} ms {when}"),
                Disruption::Paused,
            ),
            Halt::CutOff => (
                format!("{name} cut off from its servers for {ms} ms {when}"),
                Disruption::CutOff,
            ),
        };
        let fault = |begins: bool| What::Fault {
            text: text.clone(),
            target: Some(name.to_owned()),
            disruption: Some(disruption),
            begins,
            at_step: false,
        };
        self.shared.paused.store(true, Ordering::Relaxed);
        self.shared.push(now_us(), "faults", None, fault(true));
        let halted = match how {
            Halt::Stopped => signal_group(pid, true),
            Halt::CutOff => self.shared.proxies.get(index).map(|own| own.cut(true)).is_some(),
        };
        thread::sleep(Duration::from_millis(ms));
        if halted {
            match how {
                Halt::Stopped => {
                    signal_group(pid, false);
                }
                Halt::CutOff => self.shared.proxies[index].cut(false),
            }
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
            let moved = self.move_addresses(fault);
            self.shared.push(
                now_us(),
                "faults",
                None,
                fault_event(format!("`{}`, undone by `{undo}`{moved}", fault.command), false),
            );
        } else {
            let moved = self.move_addresses(fault);
            if !moved.is_empty() {
                self.shared.push(
                    now_us(),
                    "faults",
                    None,
                    fault_event(format!("after `{}`{moved}", fault.command), true),
                );
            }
        }
        self.shared.server_fault_fired.store(true, Ordering::Relaxed);
    }

    /// Once the server fault's last command has succeeded (its undo, if it has one), lead
    /// every client's new connections to each moved address to its new server; what moved, as
    /// words to end the fault's text with (empty: nothing).
    fn move_addresses(&self, fault: &ServerFault) -> String {
        let mut moved = String::new();
        // Checked before the run started.
        for (from, to) in proxy::check_moves(&fault.moves, &self.shared.spec.proxy).unwrap_or_default() {
            for proxies in &self.shared.proxies {
                proxies.move_address(&from, to);
            }
            moved.push_str(&format!("; then {from} led every client's new connections to {to}"));
        }
        moved
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
                index,
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

/// Stop (SIGSTOP) or continue (SIGCONT) process group `pid`; whether the signal was sent.
fn signal_group(pid: u32, stop: bool) -> bool {
    #[cfg(unix)]
    {
        let signal = if stop { libc::SIGSTOP } else { libc::SIGCONT };
        crate::client::process::signal_group(pid, signal).is_ok()
    }
    #[cfg(not(unix))]
    {
        let _ = (pid, stop);
        false
    }
}
