//! One `cassalock real` run in the real build: the lockers against the servers, the summary
//! printed (text or JSON), the steps and event record written, the exit status.

use std::process::ExitCode;

use cassalock_real::runner::{check, execute_recorded, worker, RunSpec};
use cassalock_real::Summary;

use super::args::RealArgs;
use crate::usage_error;

fn spec(args: &RealArgs) -> RunSpec {
    RunSpec {
        contact_points: args.contact_points.clone(),
        servers: args.servers.clone(),
        variant: args.algorithm,
        threads: args.threads,
        acquisitions: args.acquisitions,
        processes: args.processes,
        hold_ms: args.hold_ms,
        ttl_s: args.ttl_s,
        renew_ms: args.renew_ms,
        poll_ms: args.poll_ms,
        next_poll_ms: args.next_poll_ms,
        paced_poll: args.paced_poll,
        reuse_thread_ids: args.reuse_thread_ids,
        queue_read_from_last_hold: args.queue_read_from_last_hold,
        consistency: args.consistency.clone(),
        keyspace: args.keyspace.clone(),
        lock_id: args.lock_id.clone(),
        max_wait_ms: args.max_wait_ms,
        run_limit_s: args.run_limit_s,
        fencing: !args.no_fencing,
        connect_timeout_s: args.connect_timeout_s,
        steps: args.steps.clone(),
        server_readings: !args.no_server_readings,
    }
}

fn print(summary: &Summary) {
    println!(
        "{} x {} lockers in {} process(es): {} acquisitions in {:.1} s",
        summary.variant, summary.lockers, summary.processes, summary.acquisitions, summary.elapsed_s
    );
    println!("  acquisitions/s          {:.2}", summary.acquisitions_per_s);
    println!(
        "  wait p50 / p99 / max    {:.1} / {:.1} / {:.1} ms",
        summary.wait_p50_ms, summary.wait_p99_ms, summary.wait_max_ms
    );
    println!(
        "  store requests/acq      {:.1} ({} requests, {:.0} a second)",
        summary.requests_per_acquisition,
        summary.requests,
        summary.requests as f64 / summary.elapsed_s.max(1e-9)
    );
    if let Some(busy) = summary.cpu_busy_pct {
        // Not a sign of saturation by itself: Cassandra's threads keep the cores busy at
        // a fraction of the rate it can answer (`bench capacity`).
        println!("  machine CPU busy        {busy:.0}% of all cores over the run");
    }
    println!("  Jain, longest run       {:.3}, {}", summary.jain, summary.longest_run);
    if summary.handoffs > 0 {
        println!(
            "  hold / handoff p50      {:.1} / {:.1} ms ({} handoffs from one locker to another)",
            summary.hold_p50_ms, summary.handoff_p50_ms, summary.handoffs
        );
    }
    println!("  errors, lost leases     {}, {}", summary.errors, summary.lost_leases);
    if !summary.tokens.is_empty() {
        println!("  resource tokens         {}", summary.tokens);
    }
    println!(
        "  T1-belief               {}",
        if summary.t1_belief_holds() {
            "no two holders at once".to_string()
        } else {
            format!(
                "VIOLATED: {}",
                cassalock_judge::text::count(summary.belief_overlaps, "overlap")
            )
        }
    );
    println!(
        "  T1-resource             {}",
        if summary.t1_resource_holds() {
            if summary.tokens.is_empty() {
                format!("no stale write accepted ({} refused by fencing)", summary.stale_tokens)
            } else {
                "no stale write (fencing off)".to_string()
            }
        } else {
            format!(
                "VIOLATED: {} accepted",
                cassalock_judge::text::count(summary.stale_accepted, "stale write")
            )
        }
    );
    println!("  T1-server               {}", t1_server_line(summary));
    for example in &summary.examples {
        println!("  - {example}");
    }
}

/// T1-server's line of the summary: checked at how many readings of the server, or not.
fn t1_server_line(summary: &Summary) -> String {
    if summary.server_readings == 0 {
        "not checked: the run read no server (--no-server-readings, or a lock whose store is not read)".to_string()
    } else if summary.t1_server_holds() {
        format!(
            "every believer named by the server, at {}",
            cassalock_judge::text::count(summary.server_readings, "reading")
        )
    } else {
        format!(
            "VIOLATED: {} of {} named another holder or nobody while a locker believed it held",
            summary.server_disagreements,
            cassalock_judge::text::count(summary.server_readings, "reading")
        )
    }
}

/// Said of the slept-through figure when the steps file filled up: it covers the steps
/// written, the run's start.
fn partial(summary: &Summary) -> String {
    if summary.steps_dropped > 0 {
        format!(" (over the first {} steps only)", summary.steps_written)
    } else {
        String::new()
    }
}

pub fn run(args: RealArgs) -> ExitCode {
    if let Some(path) = &args.worker_job {
        return match worker(path, args.worker_index.unwrap_or(0)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: worker: {e}");
                ExitCode::from(BACKEND_UNAVAILABLE)
            }
        };
    }
    let spec = spec(&args);
    if let Err(e) = check(&spec) {
        return usage_error(&e.to_string());
    }
    // The event record's file, made before the run: one that cannot be written is refused
    // before anything runs.
    let events_file = match &args.events {
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => Some((path, file)),
            Err(e) => return usage_error(&format!("--events {}: cannot write it: {e}", path.display())),
        },
        None => None,
    };
    match execute_recorded(&spec, args.print_events) {
        Ok((summary, record)) => {
            if args.json {
                println!("{}", serde_json::to_string(&summary).expect("summary serializes"));
            } else {
                print(&summary);
            }
            match (&summary.slept_through, args.json) {
                (Some(slept), false) if slept.slept_through > 0 => println!(
                    "  next holder asleep      {} of {} handoffs{}: its poll or backoff ended p50 {:.1} / p90 {:.1} / max {:.1} ms after the release began",
                    slept.slept_through,
                    slept.handoffs,
                    partial(&summary),
                    slept.woke_after_p50_ms,
                    slept.woke_after_p90_ms,
                    slept.woke_after_max_ms
                ),
                (Some(slept), false) => println!(
                    "  next holder asleep      in none of {} handoffs{}",
                    slept.handoffs,
                    partial(&summary)
                ),
                _ => {}
            }
            if let Some(path) = &args.steps {
                eprintln!(
                    "steps: {} written to {}{}",
                    cassalock_judge::text::count(summary.steps_written as usize, "line"),
                    path.display(),
                    if summary.steps_failed.is_some() {
                        format!(
                            " before writing failed (some may not have reached the file); {} more left out",
                            summary.steps_dropped
                        )
                    } else if summary.steps_dropped > 0 {
                        format!(
                            "; {} more left out: the file holds at most {} (run fewer lockers, acquisitions or seconds)",
                            summary.steps_dropped,
                            cassalock_real::runner::MAX_STEP_LINES
                        )
                    } else {
                        String::new()
                    }
                );
            }
            let events_failed = events_file.and_then(|(path, file)| {
                let mut out = std::io::BufWriter::new(file);
                let written = cassalock_judge::event::write(&mut out, &record.header, &record.events).and_then(|()| {
                    out.into_inner()
                        .map_err(std::io::IntoInnerError::into_error)?
                        .sync_all()
                });
                match written {
                    Ok(()) => {
                        eprintln!(
                            "event record: {} written to {}",
                            cassalock_judge::text::count(record.events.len(), "event"),
                            path.display()
                        );
                        None
                    }
                    Err(e) => Some(format!(
                        "--events {}: writing the event record failed: {e}",
                        path.display()
                    )),
                }
            });
            let failed_files: Vec<&String> = summary.steps_failed.iter().chain(events_failed.iter()).collect();
            if !(summary.t1_belief_holds() && summary.t1_resource_holds() && summary.t1_server_holds()) {
                // A violation outranks a file that failed: say both, exit 1.
                for why in failed_files {
                    eprintln!("error: {why}");
                }
                ExitCode::from(1)
            } else if let Some(why) = failed_files.first() {
                // The verdicts above stand; the file is incomplete.
                usage_error(&format!(
                    "{why} (the run's verdicts above stand; that file is incomplete)"
                ))
            } else {
                ExitCode::SUCCESS
            }
        }
        // The file named by --steps: the user's to fix, as any other option.
        Err(e @ cassalock_real::runner::RunError::Steps { .. }) => usage_error(&e.to_string()),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(BACKEND_UNAVAILABLE)
        }
    }
}

/// Exit status when the cluster cannot be reached or set up (or a worker process cannot
/// run): not a verdict, so not 1.
pub(super) const BACKEND_UNAVAILABLE: u8 = 4;
