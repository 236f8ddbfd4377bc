//! `cassalock real --client COMMAND`: copies of a client program that drives a lock library
//! (docs/client-protocol.md) take turns at one lock under the planned fault; the run's event
//! record is judged by the one judge, and what the libraries told their holders is said.
//!
//! Exit status: 0 no claim violated; 1 a claim violated; 2 bad usage; 3 a fault asked for did
//! not fire, or a claim was left undecided (the next caller's call failed); 4 a client never said
//! hello (it could not start, or reach its server); 5 a client broke the protocol or stopped
//! answering mid-run (the verdicts on what happened before are printed, but the run is cut).

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use cassalock_judge::event::Call;
use cassalock_judge::stats::percentile;
use cassalock_judge::text::count;
use cassalock_judge::{ClaimId, Judgement};
use cassalock_real::client::process::ClientFault;
use cassalock_real::client::run::{check, run as run_clients, ClientRun, ClientSpec, Halt, Pause, Paused, ServerFault};
use cassalock_real::client::server_reading::{ReaderError, ServerReading};

use super::args::{ClientCall, RealArgs};
use crate::usage_error;

/// A client never said hello: it could not start or reach its server.
const NOT_STARTED: u8 = 4;
/// A client broke the protocol or went silent after its hello.
const CLIENT_BROKE: u8 = 5;

fn spec(args: &RealArgs, command: &str) -> ClientSpec {
    ClientSpec {
        command: command.to_owned(),
        clients: args.threads,
        acquisitions: args.acquisitions,
        call: match args.call {
            ClientCall::Lock => Call::Lock,
            ClientCall::TryLock => Call::TryLock,
        },
        try_wait_ms: args.try_wait_ms,
        lease_ms: args.lease_ms,
        hold_ms: args.hold_ms,
        max_wait: Duration::from_millis(args.max_wait_ms),
        start_timeout: Duration::from_secs(args.start_timeout_s),
        run_limit: (args.run_limit_s > 0).then(|| Duration::from_secs(args.run_limit_s)),
        fencing: !args.no_fencing,
        pause: [
            (args.pause_holder_ms, Paused::Holder, Halt::Stopped),
            (args.pause_waiter_ms, Paused::Waiter, Halt::Stopped),
            (args.cut_off_holder_ms, Paused::Holder, Halt::CutOff),
            (args.cut_off_waiter_ms, Paused::Waiter, Halt::CutOff),
        ]
        .into_iter()
        .find_map(|(ms, whom, how)| {
            ms.map(|ms| Pause {
                at_acquisition: args.pause_at.unwrap_or(2),
                ms,
                whom,
                how,
            })
        }),
        proxy: args.proxy.clone(),
        server_fault: args.server_fault.clone().map(|command| ServerFault {
            at_acquisition: args.server_fault_at,
            command,
            undo: args.server_fault_undo.clone(),
            ms: args.server_fault_ms,
            moves: args.move_address.clone(),
        }),
        lock_name: args
            .lock_id
            .clone()
            .unwrap_or_else(|| format!("cassalock-{}", cassalock_real::now_us())),
        next_caller_wait_ms: (args.next_caller_wait_ms > 0).then_some(args.next_caller_wait_ms),
        server_reading: args.read_server_as.map(|lock| ServerReading {
            lock,
            servers: args.servers.clone(),
        }),
    }
}

pub fn run(args: &RealArgs, command: &str) -> ExitCode {
    let spec = spec(args, command);
    if !args.servers.is_empty() && args.read_server_as.is_none() {
        return usage_error(
            "--servers with --client names the servers cassalock reads: give --read-server-as LOCK too (the client's own servers are in its command)",
        );
    }
    if spec.pause.is_none() && args.pause_at.is_some() {
        return usage_error("--pause-at needs a pause: --pause-holder-ms, --pause-waiter-ms, --cut-off-holder-ms or --cut-off-waiter-ms");
    }
    if !(1..=3_600_000).contains(&args.max_wait_ms) {
        return usage_error(&format!("--max-wait-ms {}: 1-3600000", args.max_wait_ms));
    }
    if let Err(refused) = check(&spec) {
        return usage_error(&refused.to_string());
    }
    if !(1..=600).contains(&args.start_timeout_s) {
        return usage_error(&format!("--start-timeout-s {}: 1-600", args.start_timeout_s));
    }
    let events_file = match &args.events {
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => Some((path, file)),
            Err(e) => return usage_error(&format!("--events {}: cannot write it: {e}", path.display())),
        },
        None => None,
    };
    eprintln!(
        "starting {} of `{command}` ({} acquisitions each{})",
        cassalock_judge::text::Counted::irregular(spec.clients, "copy", "copies"),
        spec.acquisitions,
        spec.pause.map_or_else(String::new, |pause| format!(
            "; {} {} for {} ms at acquisition {}",
            match pause.whom {
                Paused::Holder => "its holder",
                Paused::Waiter => "a waiter",
            },
            match pause.how {
                Halt::Stopped => "paused",
                Halt::CutOff => "cut off from its servers",
            },
            pause.ms,
            pause.at_acquisition
        ))
    );
    let outcome = match run_clients(&spec) {
        Ok(outcome) => outcome,
        Err(refused @ (ReaderError::Bad(_) | ReaderError::SimulationBuild)) => {
            return usage_error(&refused.to_string())
        }
        Err(why) => {
            eprintln!(
                "error: {why}: is the server running (cluster/cassalock-servers start redis|zookeeper)? --servers must name the servers the client's library uses"
            );
            return ExitCode::from(NOT_STARTED);
        }
    };
    let judgement = cassalock_judge::judge(&outcome.record);
    print!("{}", report(&spec, &outcome, &judgement));
    if let Some((path, file)) = events_file {
        let mut out = std::io::BufWriter::new(file);
        let written =
            cassalock_judge::event::write(&mut out, &outcome.record.header, &outcome.record.events).and_then(|()| {
                out.into_inner()
                    .map_err(std::io::IntoInnerError::into_error)?
                    .sync_all()
            });
        match written {
            Ok(()) => eprintln!(
                "event record: {} written to {} (cassalock judge {} reads it back)",
                count(outcome.record.events.len(), "event"),
                path.display(),
                path.display()
            ),
            Err(e) => eprintln!(
                "error: --events {}: writing the event record failed: {e}",
                path.display()
            ),
        }
    }
    for fault in &outcome.faults {
        eprintln!("error: {fault}");
    }
    if outcome.proxy_refused > 0 {
        eprintln!(
            "error: the clients' forwarders closed {} at once, over their limit of {} per client: the run is not the one asked for",
            count(outcome.proxy_refused, "connection"),
            cassalock_real::client::proxy::MAX_CONNECTIONS
        );
    }
    if violated_before(&judgement, outcome.cut_at_ns) {
        ExitCode::from(1)
    } else if outcome
        .faults
        .iter()
        .any(|fault| matches!(fault, ClientFault::Broke { .. }))
    {
        eprintln!("no verdict covers the run: a client broke the protocol (docs/client-protocol.md)");
        ExitCode::from(CLIENT_BROKE)
    } else if outcome.hello.is_none() {
        eprintln!(
            "no client said hello, so nothing ran: is its server running (cluster/cassalock-servers start redis|zookeeper|...)? Its command, run by hand, prints its hello first (docs/client-protocol.md)."
        );
        ExitCode::from(NOT_STARTED)
    } else if !outcome.faults.is_empty() {
        eprintln!("the run was cut short by the client above: no verdict covers what it would have done");
        ExitCode::from(CLIENT_BROKE)
    } else if (spec.pause.is_some() && !outcome.paused)
        || (spec.server_fault.is_some() && !outcome.server_fault_fired)
        || outcome.proxy_refused > 0
    {
        eprintln!(
            "the fault asked for did not fire as planned (above): no violation, but the run is not the one asked for"
        );
        ExitCode::from(3)
    } else if judgement.any_bounded() {
        eprintln!("a claim was left undecided (\"bounded\" above, and why): no violation, but no verdict for it");
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

/// The run's summary, verdicts and what the holders were told.
fn report(spec: &ClientSpec, outcome: &ClientRun, judgement: &Judgement) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} x {}: {} in {:.1} s",
        outcome.record.header.lock,
        count(spec.clients, "client"),
        count(outcome.acquisitions, "acquisition"),
        outcome.elapsed.as_secs_f64()
    );
    if let Some(pause) = spec.pause {
        let _ = writeln!(
            out,
            "  fault                   {}",
            match (outcome.paused, pause.whom, pause.how) {
                (true, Paused::Holder, Halt::Stopped) => format!(
                    "the holder of acquisition {} stopped (SIGSTOP) for {} ms, then continued",
                    pause.at_acquisition, pause.ms
                ),
                (true, Paused::Waiter, Halt::Stopped) => format!(
                    "a client waiting at acquisition {} stopped (SIGSTOP) for {} ms, then continued",
                    pause.at_acquisition, pause.ms
                ),
                (true, Paused::Holder, Halt::CutOff) => format!(
                    "the holder of acquisition {} cut off from its servers for {} ms, then healed",
                    pause.at_acquisition, pause.ms
                ),
                (true, Paused::Waiter, Halt::CutOff) => format!(
                    "a client waiting at acquisition {} cut off from its servers for {} ms, then healed",
                    pause.at_acquisition, pause.ms
                ),
                (false, _, _) => format!(
                    "NOT FIRED at acquisition {} (the record says why)",
                    pause.at_acquisition
                ),
            }
        );
    }
    if let Some(fault) = &spec.server_fault {
        let _ = writeln!(
            out,
            "  server fault            {}",
            if outcome.server_fault_fired {
                let undo = fault
                    .undo
                    .as_ref()
                    .map(|undo| format!(", undone {} ms later by `{undo}`", fault.ms))
                    .unwrap_or_default();
                let moves = if fault.moves.is_empty() {
                    String::new()
                } else {
                    format!("; then moved {}", fault.moves.join(", "))
                };
                format!(
                    "`{}` at acquisition {}{undo}{moves}",
                    fault.command, fault.at_acquisition
                )
            } else {
                format!(
                    "NOT FIRED: `{}` at acquisition {} (the record says why)",
                    fault.command, fault.at_acquisition
                )
            }
        );
    }
    if let Judgement::Observed(verdicts) = judgement {
        if !verdicts.waits_ms.is_empty() {
            let _ = writeln!(
                out,
                "  wait p50 / p99 / max    {:.1} / {:.1} / {:.1} ms",
                percentile(&verdicts.waits_ms, 50),
                percentile(&verdicts.waits_ms, 99),
                verdicts.waits_ms.iter().copied().fold(0.0, f64::max)
            );
        }
    }
    let told: Vec<String> = outcome
        .told_at_release
        .iter()
        .map(|((outcome, why), n)| {
            if why.is_empty() {
                format!("{n} {outcome}")
            } else {
                format!("{n} {outcome} ({why})")
            }
        })
        .collect();
    let _ = writeln!(
        out,
        "  told at release         {}",
        if told.is_empty() {
            "no release returned".to_owned()
        } else {
            told.join("; ")
        }
    );
    let lost = outcome
        .record
        .events
        .iter()
        .filter(|event| matches!(event.what, cassalock_judge::event::What::LeaseLost { .. }))
        .count();
    let _ = writeln!(out, "  told it lost the lock   {}", count(lost, "time"));
    if let (Some(reading), Some((readings, failed))) = (&spec.server_reading, outcome.server_readings) {
        let failed = if failed > 0 {
            format!(", {} (nothing known at those)", count(failed, "failed reading"))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  servers read            {} as {} reads {}{failed}",
            count(readings, "time"),
            reading.lock.name(),
            reading.servers.join(",")
        );
    }
    if outcome.killed_at_exit > 0 {
        let _ = writeln!(
            out,
            "  killed at exit          {} (did not exit within 5 s of `exit`)",
            count(outcome.killed_at_exit, "client")
        );
    }
    if outcome.hello.is_none() {
        let _ = writeln!(out, "no verdict: no client said hello, so no lock was asked for");
    } else if !outcome.faults.is_empty() {
        let _ = write!(
            out,
            "cut short by a client (below): these verdicts cover what ran, not the run asked for;\n\
             only a violation before the cut counts\n{judgement}"
        );
    } else {
        let _ = write!(out, "{judgement}");
    }
    out
}

/// Some claim was violated before `cut_at_ns` (none: the run was not cut): an overlap that
/// began, or a stale write accepted, before the first broken client was stopped.
fn violated_before(judgement: &Judgement, cut_at_ns: Option<u64>) -> bool {
    let Some(cut_at_ns) = cut_at_ns else {
        return judgement.any_violated();
    };
    let cut = Duration::from_nanos(cut_at_ns);
    match judgement {
        Judgement::Observed(verdicts) => {
            // A lock call left unanswered is what cut the run: its T2 counts.
            verdicts
                .checks
                .iter()
                .any(|(claim, verdict, _)| *claim == ClaimId::T2 && verdict.is_violated())
                || verdicts.overlaps.iter().any(|overlap| overlap.from < cut)
                || verdicts
                    .stale_writes
                    .iter()
                    .any(|write| write.accepted && write.at < cut)
        }
        other => other.any_violated(),
    }
}
