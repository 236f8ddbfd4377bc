//! `reports/real-long-run.md`: the Cassandra locks used many times in a row on the real cluster
//! with nobody contending (`cassalock bench long-run`): does an acquisition get
//! slower as the lock ages, and how far is it from its own requests' round trips?

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use cassalock_real::long_run::{LongRun, Requests, GC_GRACE_S, PROBES_PER_BLOCK, ROW_READS, WARM_UP_ACQUISITIONS};

use crate::charts::{colour, LineChart, Series, Y};
use crate::{write_file, ReportError};

pub const REPORT: &str = "real-long-run.md";
pub const CHART: &str = "real-long-run.svg";
pub const DATA: &str = "real-long-run.json";

/// The long run's goal: an uncontended call within this many times its requests' round trips.
pub const ROUND_TRIP_GOAL: f64 = 1.3;

/// The requests of the thesis's own listing for an uncontended acquire and release, against
/// which the long run's goal is stated: the queue lock's Listing 6 enqueues (a write), reads
/// the queue head, writes and reads the main row; its release deletes two cells.
pub fn listing_requests(lock: &str) -> Option<(Requests, Requests)> {
    (lock == "queue").then_some((
        Requests {
            reads: 2.0,
            writes: 2.0,
        },
        Requests {
            reads: 0.0,
            writes: 2.0,
        },
    ))
}

/// What was measured, as the data file keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measured {
    /// The command that measured it.
    pub command: String,
    /// The cluster, as `cluster/cassalock-cluster` started it.
    pub cluster: String,
    /// How long the locks sat idle after the runs before their rows were read again.
    #[serde(default)]
    pub idle_s: Option<u64>,
    pub runs: Vec<LongRun>,
}

fn chart(measured: &Measured) -> LineChart<'_> {
    let mut series = Vec::new();
    for (i, run) in measured.runs.iter().enumerate() {
        let point = |first: u64, value: f64| {
            (
                first as f64,
                if value.is_finite() {
                    Y::Value(value)
                } else {
                    Y::Undefined("no acquisition".into())
                },
            )
        };
        series.push(Series {
            name: format!("{}: acquire p50", run.lock),
            colour: colour(i),
            dashed: false,
            points: run.blocks.iter().map(|b| point(b.first, b.acquire_p50_ms)).collect(),
        });
        series.push(Series {
            name: format!("{}: release p50", run.lock),
            colour: colour(i),
            dashed: true,
            points: run.blocks.iter().map(|b| point(b.first, b.release_p50_ms)).collect(),
        });
    }
    if let Some(run) = measured.runs.first() {
        series.push(Series {
            name: format!("one read ({}'s probes, p50)", run.lock),
            colour: colour(4),
            dashed: true,
            points: run
                .blocks
                .iter()
                .map(|b| (b.first as f64, Y::Value(b.read_probe_p50_ms)))
                .collect(),
        });
    }
    LineChart {
        title: "Uncontended acquire and release over the lock's life (real cluster)",
        subtitle: &measured.cluster,
        x_label: "acquisitions made on this lock so far (block start)",
        y_label: "milliseconds (median of the block)",
        x_unit: ("acquisition", "acquisitions"),
        log2_x: false,
        log_y: false,
        y_decimals: 2,
        series,
    }
}

fn requests(r: &Requests) -> String {
    format!("{:.1} + {:.1}", r.reads, r.writes)
}

fn verdict(ratio: f64) -> &'static str {
    if ratio <= ROUND_TRIP_GOAL {
        "met"
    } else {
        "not met"
    }
}

/// The markdown.
pub fn render(measured: &Measured) -> String {
    let mut md = String::new();
    introduction(&mut md, measured);
    summary_section(&mut md, measured);
    new_and_old_lock_section(&mut md, measured);
    call_time_breakdown_section(&mut md, measured);
    row_reads_section(&mut md, measured);
    block_by_block_sections(&mut md, measured);
    md
}

/// The title, what was run and how, and the command that measured it.
fn introduction(md: &mut String, measured: &Measured) {
    let _ = writeln!(md, "# The Cassandra locks over a long run (real cluster)\n");
    let _ = writeln!(
        md,
        "One locker takes and releases one lock again and again, nobody else contending, on {}, \
         after {WARM_UP_ACQUISITIONS} acquisitions of another lock to warm the cluster up (not \
         reported). Each block of acquisitions is summarized: medians and 99th percentiles of the \
         wall time of the `lock` and `release` calls, and their store requests (reads + writes; a \
         delete is a write). Before each block, {PROBES_PER_BLOCK} slice reads and \
         {PROBES_PER_BLOCK} one-cell writes, same consistency, on a row the lock never touches, \
         time one request of each kind (the *probes*). Measured with:\n\n```sh\n{}\n```\n",
        measured.cluster, measured.command
    );
}

/// Each lock's whole run against its requests' round trips, and against the listing's.
fn summary_section(md: &mut String, measured: &Measured) {
    let _ = writeln!(md, "## Summary\n");
    let _ = writeln!(
        md,
        "| lock | acquisitions | seconds | acquire p50 ms | its requests | x their round trips | release p50 ms | its requests | x their round trips | read / write probe p50 ms | last block / first (acquire p50) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    for run in &measured.runs {
        let w = &run.whole;
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {:.2} | {} | {:.2}x | {:.2} | {} | {:.2}x | {:.2} / {:.2} | {:.2}x |",
            run.lock,
            w.acquisitions,
            run.seconds,
            w.acquire_p50_ms,
            requests(&w.acquire_requests),
            w.acquire_ratio(),
            w.release_p50_ms,
            requests(&w.release_requests),
            w.release_ratio(),
            w.read_probe_p50_ms,
            w.write_probe_p50_ms,
            run.growth()
        );
    }
    let _ = writeln!(
        md,
        "\n\"x their round trips\": the call's median over the time its requests take one after \
         the other at the probes' medians (reads x read probe + writes x write probe).\n"
    );
    for run in &measured.runs {
        let w = &run.whole;
        let _ = writeln!(
            md,
            "- {}: acquire {:.2}x its own requests' round trips, release {:.2}x; the last block's median acquire is {:.2}x the first's.",
            run.lock,
            w.acquire_ratio(),
            w.release_ratio(),
            run.growth()
        );
        if let Some((acquire, release)) = listing_requests(&run.lock) {
            let (a, r) = (
                w.acquire_p50_ms / w.round_trips_ms(&acquire),
                w.release_p50_ms / w.round_trips_ms(&release),
            );
            let _ = writeln!(
                md,
                "  Against the listing's requests, as the goal is stated ({} for acquire, {} for release, at most {ROUND_TRIP_GOAL}x): acquire {a:.2}x ({}), release {r:.2}x ({}). The library's acquire makes {} requests where the listing makes {}.",
                requests(&acquire),
                requests(&release),
                verdict(a),
                verdict(r),
                requests(&w.acquire_requests),
                requests(&acquire)
            );
        }
    }
}

/// The first block against the last, each judged against the goal, and the chart.
fn new_and_old_lock_section(md: &mut String, measured: &Measured) {
    let _ = writeln!(md, "\n### A new lock and an old one\n");
    let _ = writeln!(
        md,
        "The first block (a lock just created) against the last (the same lock after every \
         acquisition before it), each over its own probes:\n"
    );
    let _ = writeln!(
        md,
        "| lock | block | acquire p50 ms | x its requests' round trips | release p50 ms | x its requests' round trips |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for run in &measured.runs {
        let ends = [("first", run.blocks.first()), ("last", run.blocks.last())];
        for (which, block) in ends.into_iter().filter_map(|(w, b)| b.map(|b| (w, b))) {
            let _ = writeln!(
                md,
                "| {} | {which} (from {}) | {:.2} | {:.2}x ({}) | {:.2} | {:.2}x ({}) |",
                run.lock,
                block.first,
                block.acquire_p50_ms,
                block.acquire_ratio(),
                verdict(block.acquire_ratio()),
                block.release_p50_ms,
                block.release_ratio(),
                verdict(block.release_ratio())
            );
        }
    }
    let _ = writeln!(
        md,
        "\n(met / not met: against the goal's bound of {ROUND_TRIP_GOAL}x the call's own requests.)"
    );
    let _ = writeln!(md, "\n![acquire and release over the run]({CHART})\n");
}

/// Where the mean acquire and release spend their time: replies, sleeps, the client's own work.
fn call_time_breakdown_section(md: &mut String, measured: &Measured) {
    let _ = writeln!(md, "## Where a call's time goes\n");
    let _ = writeln!(
        md,
        "From the locker's own step events (an observer on the `RemoteLocker`): the time from \
         each store request to its reply, and the machine's own sleeps (poll, backoff, retry); \
         the rest is the client's own work between steps. Means over the whole run, so that the \
         parts add up (the summary's figures are medians).\n"
    );
    let _ = writeln!(
        md,
        "| lock | call | mean ms | waiting for replies | asleep | the client's own |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for run in &measured.runs {
        for (call, b) in [
            ("acquire", &run.whole.acquire_breakdown),
            ("release", &run.whole.release_breakdown),
        ] {
            let share = |part: f64| format!("{part:.2} ({:.0}%)", 100.0 * part / b.call_mean_ms);
            let _ = writeln!(
                md,
                "| {} | {call} | {:.2} | {} | {} | {} |",
                run.lock,
                b.call_mean_ms,
                share(b.in_requests_mean_ms),
                share(b.asleep_mean_ms),
                share(b.client_mean_ms())
            );
        }
    }
    let _ = writeln!(md);
}

/// The reads of the lock's rows after the run (and after the idle wait), when they were measured.
fn row_reads_section(md: &mut String, measured: &Measured) {
    if !measured.runs.iter().any(|run| !run.row_reads.is_empty()) {
        return;
    }
    let _ = writeln!(md, "## Where the time goes: the lock's rows after the run\n");
    let _ = writeln!(
        md,
        "After the last block, {ROW_READS} reads of the first live cell of each row the lock \
         wrote (a slice of one from the row's start, as the queue lock reads its queue head: \
         the server walks past every deleted cell before it), and of the probe row, which \
         holds one cell. Medians, milliseconds{}:\n",
        match measured.idle_s {
            Some(idle) => format!(
                "; then the same reads again after every lock had sat idle {idle} s (the \
                 table's `gc_grace_seconds` is {GC_GRACE_S} s: a tombstone older than the grace \
                 is no longer returned to a read, though it stays until a flush and a \
                 compaction)"
            ),
            None => String::new(),
        }
    );
    let _ = writeln!(
        md,
        "| lock | row | read p50 ms | x the probe row | after the idle wait, ms | x the probe row |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for run in &measured.runs {
        let probe = run.row_reads.iter().find(|r| r.row == "probe");
        let probe_now = probe.map_or(f64::NAN, |r| r.read_p50_ms);
        let probe_idle = probe.and_then(|r| r.after_idle_p50_ms).unwrap_or(f64::NAN);
        for read in &run.row_reads {
            let idle = match read.after_idle_p50_ms {
                Some(ms) => format!("{ms:.2} | {:.1}x", ms / probe_idle),
                None => "not measured | -".into(),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {:.2} | {:.1}x | {idle} |",
                run.lock,
                read.row,
                read.read_p50_ms,
                read.read_p50_ms / probe_now
            );
        }
    }
    let _ = writeln!(md);
}

/// One table per lock, a row per block.
fn block_by_block_sections(md: &mut String, measured: &Measured) {
    for run in &measured.runs {
        let _ = writeln!(md, "## {}, block by block\n", run.lock);
        let _ = writeln!(
            md,
            "| from | acquire p50 ms | acquire p99 ms | release p50 ms | release p99 ms | requests (acquire; release) | read / write probe p50 ms |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for b in &run.blocks {
            let _ = writeln!(
                md,
                "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {}; {} | {:.2} / {:.2} |",
                b.first,
                b.acquire_p50_ms,
                b.acquire_p99_ms,
                b.release_p50_ms,
                b.release_p99_ms,
                requests(&b.acquire_requests),
                requests(&b.release_requests),
                b.read_probe_p50_ms,
                b.write_probe_p50_ms
            );
        }
        let _ = writeln!(md);
    }
}

/// Read the data file of an earlier `bench long-run` back.
pub fn read_data(path: &Path) -> Result<Measured, ReportError> {
    crate::read_json(path)
}

/// Write the report and its chart again from `measured` (the data file is left as it is).
pub fn write_rendered(out: &Path, measured: &Measured) -> Result<Vec<String>, ReportError> {
    write_file(out, REPORT, &render(measured))?;
    chart(measured).write(&out.join(CHART))?;
    Ok(vec![REPORT.into(), CHART.into()])
}

/// Write the report, its chart and its data; returns the file names.
pub fn write(out: &Path, measured: &Measured) -> Result<Vec<String>, ReportError> {
    let data = serde_json::to_string_pretty(measured).expect("plain data serializes") + "\n";
    write_file(out, DATA, &data)?;
    let mut files = write_rendered(out, measured)?;
    files.push(DATA.into());
    Ok(files)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use cassalock_real::long_run::{Block, Probes, RowRead, Sample, Spent};

    use super::*;

    #[test]
    fn the_report_says_whether_each_goal_is_met_and_draws_every_block() {
        let sample = |acquire_ms: u64| Sample {
            acquire: Duration::from_millis(acquire_ms),
            release: Duration::from_millis(3),
            acquire_requests: Requests {
                reads: 3.0,
                writes: 3.0,
            },
            release_requests: Requests {
                reads: 0.0,
                writes: 2.0,
            },
            acquire_spent: Spent {
                in_requests: Duration::from_millis(6),
                asleep: Duration::from_millis(acquire_ms - 6),
            },
            release_spent: Spent {
                in_requests: Duration::from_millis(2),
                asleep: Duration::ZERO,
            },
        };
        let probes = Probes {
            reads: vec![Duration::from_millis(2); 4],
            writes: vec![Duration::from_millis(1); 4],
        };
        let early: Vec<Sample> = (0..6).map(|_| sample(9)).collect();
        let late: Vec<Sample> = (0..4).map(|_| sample(18)).collect();
        let blocks = vec![Block::of(0, &early, &probes), Block::of(6, &late, &probes)];
        let all: Vec<Sample> = early.iter().chain(&late).copied().collect();
        let mut run = LongRun::of("queue", blocks, &all, &probes, 1.0);
        run.row_reads = vec![
            RowRead {
                row: "main".into(),
                key: "m:lock".into(),
                read_p50_ms: 6.0,
                after_idle_p50_ms: Some(3.0),
            },
            RowRead {
                row: "probe".into(),
                key: "probe".into(),
                read_p50_ms: 2.0,
                after_idle_p50_ms: Some(1.0),
            },
        ];
        let measured = Measured {
            command: "cassalock bench long-run".into(),
            cluster: "3 nodes".into(),
            idle_s: Some(65),
            runs: vec![run],
        };
        let md = render(&measured);
        assert!(md.contains("| queue | 10 |"), "{md}");
        assert!(
            md.contains("the last block's median acquire is 2.00x the first's"),
            "{md}"
        );
        // Median acquire 9 ms (six of 9, four of 18) over 3 reads x 2 + 3 writes x 1 = 9 ms.
        assert!(
            md.contains("acquire 1.00x its own requests' round trips, release 1.50x"),
            "{md}"
        );
        // Against the listing: 2 x 2 + 2 x 1 = 6 ms for acquire, 2 ms for release.
        assert!(md.contains("acquire 1.50x (not met), release 1.50x (not met)"), "{md}");
        assert!(md.contains("| queue | main | 6.00 | 3.0x | 3.00 | 3.0x |"), "{md}");
        // The first block takes 9 ms for its 9 ms of requests, the last 18.
        assert!(
            md.contains("| queue | first (from 0) | 9.00 | 1.00x (met) | 3.00 | 1.50x (not met) |"),
            "{md}"
        );
        assert!(
            md.contains("| queue | last (from 6) | 18.00 | 2.00x (not met) |"),
            "{md}"
        );
        // Mean acquire (6 x 9 + 4 x 18) / 10 = 12.6 ms: 6 in requests, the rest asleep.
        assert!(
            md.contains("| queue | acquire | 12.60 | 6.00 (48%) | 6.60 (52%) | 0.00 (0%) |"),
            "{md}"
        );
        assert!(
            md.contains("| queue | release | 3.00 | 2.00 (67%) | 0.00 (0%) | 1.00 (33%) |"),
            "{md}"
        );
        let drawn = chart(&measured);
        assert_eq!(drawn.series.len(), 3);
        assert!(drawn.series.iter().all(|s| s.points.len() == 2));
    }
}
