//! `cassalock bench judge`: how fast the judge of observed runs reads a long record, and in how
//! much memory. A run of the real runner or of a client library can be long; its record is
//! judged as it is read (`cassalock judge FILE`), and its memory should not grow with the
//! record's length.
//!
//! Each record is written here, in a temporary folder: 16 clients taking one lock in turn, five
//! events an acquisition (asked, acquired, a write to the resource, releasing, released), with
//! two holders at once planted every 1,000 acquisitions and a stale write the resource accepted
//! every 997. A child `cassalock judge FILE` judges it; its time is the wall clock around it,
//! its peak resident memory the kernel's count for that child (`wait4`'s `ru_maxrss`). The
//! judge must find exactly what was planted, or the bench fails (exit 1).

use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use cassalock_judge::event::{
    Call, Clock, Driver, Event, Header, ObservedRules, ReleaseOutcome, Rules, RunFacts, What,
};
use cassalock_judge::text::count;

/// Events per record when `--counts` is not given.
pub const DEFAULT_EVENTS: [u64; 3] = [10_000, 100_000, 1_000_000];
/// The longest record the bench writes (about 1.3 GB on disk).
pub const MAX_EVENTS: u64 = 10_000_000;
/// The shortest: fewer events than a few acquisitions measure nothing.
pub const MIN_EVENTS: u64 = 100;
const CLIENTS: usize = 16;
const OVERLAP_EVERY: u64 = 1000;
const STALE_EVERY: u64 = 997;
/// The judge of one record may take this long before the bench gives up on it.
const JUDGE_TIMEOUT: Duration = Duration::from_secs(600);

/// What a record holds, as written.
#[derive(Debug, Default, PartialEq, Eq)]
struct Planted {
    events: u64,
    acquisitions: u64,
    overlaps: u64,
    stale_accepted: u64,
}

/// One record judged.
struct Measured {
    planted: Planted,
    file_bytes: u64,
    judged_in: Duration,
    peak_rss_kib: u64,
    output: String,
}

pub fn run(counts: &[u64]) -> ExitCode {
    if let Err(message) = check_counts(counts) {
        return crate::usage_error(&message.to_string());
    }
    let dir = std::env::temp_dir().join(format!("cassalock-bench-judge-{}", std::process::id()));
    if let Err(error) = std::fs::create_dir_all(&dir) {
        return crate::usage_error(&format!("cannot create {}: {error}", dir.display()));
    }
    let result = measure_all(counts, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(4)
        }
    }
}

fn check_counts(counts: &[u64]) -> anyhow::Result<()> {
    if counts.is_empty() || counts.len() > 8 {
        return Err(anyhow::anyhow!(
            "--counts takes 1 to 8 event counts, not {}",
            counts.len()
        ));
    }
    if let Some(bad) = counts.iter().find(|&&n| !(MIN_EVENTS..=MAX_EVENTS).contains(&n)) {
        return Err(anyhow::anyhow!(
            "--counts {bad}: each count of events is {MIN_EVENTS}..={MAX_EVENTS}"
        ));
    }
    if counts.windows(2).any(|pair| pair[0] >= pair[1]) {
        anyhow::bail!("--counts must increase (for example 10000,100000,1000000)");
    }
    Ok(())
}

fn measure_all(counts: &[u64], dir: &Path) -> anyhow::Result<ExitCode> {
    let binary =
        std::env::current_exe().map_err(|error| anyhow::anyhow!("cannot find this program's path: {error}"))?;
    println!(
        "bench judge: `cassalock judge FILE` on records of a run seen from outside: {CLIENTS} clients, 5 events an \
         acquisition, two holders at once every {OVERLAP_EVERY} acquisitions, a stale write accepted every {STALE_EVERY}"
    );
    println!(
        "  {:>10}  {:>8}  {:>10}  {:>12}  {:>11}  {:>16}  {:>16}",
        "events", "file MB", "judged s", "events/s", "peak RSS MB", "overlaps found", "stale accepted"
    );
    let mut rows = Vec::new();
    let mut wrong = Vec::new();
    for &events in counts {
        eprintln!(
            "bench judge: writing and judging a record of {} ...",
            count(events, "event")
        );
        let path = dir.join(format!("record-{events}.jsonl"));
        let measured = measure(&binary, &path, events)?;
        let _ = std::fs::remove_file(&path);
        let found = found_counts(&measured.output);
        let expected = (measured.planted.overlaps, measured.planted.stale_accepted);
        if found != Some(expected)
            || !measured
                .output
                .starts_with(&format!("{} of a real run", count(measured.planted.events, "event")))
        {
            wrong.push(format!(
                "{events} events: planted {} overlaps and {} accepted stale writes, the judge said:\n{}",
                expected.0, expected.1, measured.output
            ));
        }
        println!(
            "  {:>10}  {:>8.1}  {:>10.2}  {:>12.0}  {:>11.1}  {:>16}  {:>16}",
            measured.planted.events,
            measured.file_bytes as f64 / 1e6,
            measured.judged_in.as_secs_f64(),
            measured.planted.events as f64 / measured.judged_in.as_secs_f64().max(1e-9),
            measured.peak_rss_kib as f64 / 1024.0,
            found.map_or("?".to_owned(), |(overlaps, _)| format!("{overlaps} of {}", expected.0)),
            found.map_or("?".to_owned(), |(_, stale)| format!("{stale} of {}", expected.1)),
        );
        rows.push((events, measured.peak_rss_kib));
    }
    if let (Some(&(first_events, first_kib)), Some(&(last_events, last_kib))) = (rows.first(), rows.last()) {
        if rows.len() > 1 {
            println!(
                "peak memory at {last_events} events against {first_events}: {:.2}x for {:.0}x the events",
                last_kib as f64 / first_kib.max(1) as f64,
                last_events as f64 / first_events as f64
            );
        }
    }
    if wrong.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for message in &wrong {
            eprintln!("bench judge: the judge did not find what was planted: {message}");
        }
        Ok(ExitCode::from(1))
    }
}

/// Write a record of `events` events to `path`, then judge it in a child process.
fn measure(binary: &Path, path: &PathBuf, events: u64) -> anyhow::Result<Measured> {
    let planted =
        write_record(path, events).map_err(|error| anyhow::anyhow!("cannot write {}: {error}", path.display()))?;
    let file_bytes = std::fs::metadata(path).map(|meta| meta.len()).unwrap_or(0);
    let started = Instant::now();
    let child = Command::new(binary)
        .arg("judge")
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| anyhow::anyhow!("cannot start {} judge: {error}", binary.display()))?;
    let (output, peak_rss_kib) = wait_with_peak_memory(child)?;
    Ok(Measured {
        planted,
        file_bytes,
        judged_in: started.elapsed(),
        peak_rss_kib,
        output,
    })
}

/// The child's standard output and its peak resident memory (KiB), once it exited. Killed
/// after [`JUDGE_TIMEOUT`].
fn wait_with_peak_memory(mut child: std::process::Child) -> anyhow::Result<(String, u64)> {
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    let pid = child.id();
    let deadline = Instant::now() + JUDGE_TIMEOUT;
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for the kernel to fill in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our child, not yet waited for; both pointers are to live locals.
        let waited = unsafe { libc::wait4(pid as libc::pid_t, &mut status, libc::WNOHANG, &mut usage) };
        if waited == pid as libc::pid_t {
            let output = reader.join().unwrap_or_default();
            return Ok((output, u64::try_from(usage.ru_maxrss).unwrap_or(0)));
        }
        if waited < 0 {
            return Err(anyhow::anyhow!(
                "waiting for the judge: {}",
                std::io::Error::last_os_error()
            ));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(anyhow::anyhow!("the judge ran past {} s", JUDGE_TIMEOUT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The judge's counts of overlaps and accepted stale writes, from its printed verdicts.
fn found_counts(output: &str) -> Option<(u64, u64)> {
    let number_before = |line: &str, word: &str| -> Option<u64> {
        let before = line.split(word).next()?;
        before.split_whitespace().last()?.parse().ok()
    };
    let belief = output.lines().find(|line| line.trim_start().starts_with("T1-belief"))?;
    let overlaps = if belief.contains("never two believers") {
        0
    } else {
        number_before(belief, " overlap")?
    };
    let resource = output
        .lines()
        .find(|line| line.trim_start().starts_with("T1-resource"))?;
    let stale = number_before(resource, " stale write")?;
    Some((overlaps, stale))
}

/// Write the record; what it planted.
fn write_record(path: &Path, events: u64) -> std::io::Result<Planted> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut planted = Planted::default();
    let mut lines: Vec<Event> = Vec::with_capacity(10);
    let mut at_us: u64 = 1_000_000;
    let mut acquisition: u64 = 0;
    // Every turn writes at least five events and moves the clock 50 us: the record ends by then.
    let end_us = at_us + 50 * (events / 5 + 2);
    let header = Header::new(
        Driver::Real,
        "bench judge",
        Clock::WallSinceEpoch,
        RunFacts {
            clients: CLIENTS,
            end_ns: end_us * 1000,
            rules: Rules::Observed(ObservedRules {
                fencing: false,
                lease_lost_ends_it: false,
                call_bound_ms: None,
            }),
            ..RunFacts::default()
        },
    );
    serde_json::to_writer(&mut out, &header)?;
    out.write_all(b"\n")?;
    while planted.events < events {
        lines.clear();
        let holder = (acquisition % CLIENTS as u64) as usize;
        if acquisition % OVERLAP_EVERY == OVERLAP_EVERY - 1 {
            // Two holders at once: the next one acquires before this one releases.
            let next = (holder + 1) % CLIENTS;
            cycle_start(&mut lines, holder, at_us, acquisition, false);
            cycle_start(&mut lines, next, at_us + 5, acquisition + 1, false);
            cycle_end(&mut lines, holder, at_us + 30);
            cycle_end(&mut lines, next, at_us + 40);
            planted.overlaps += 1;
            planted.acquisitions += 2;
            acquisition += 2;
        } else {
            let stale = acquisition % STALE_EVERY == STALE_EVERY - 1;
            cycle_start(&mut lines, holder, at_us, acquisition, stale);
            cycle_end(&mut lines, holder, at_us + 30);
            planted.stale_accepted += u64::from(stale);
            planted.acquisitions += 1;
            acquisition += 1;
        }
        lines.sort_by_key(|event| event.at_ns);
        for event in &lines {
            serde_json::to_writer(&mut out, event)?;
            out.write_all(b"\n")?;
        }
        planted.events += lines.len() as u64;
        at_us += 50;
    }
    debug_assert!(at_us <= end_us, "the record's end {end_us} us is before its last event");
    out.flush()?;
    Ok(planted)
}

fn node(client: usize) -> String {
    format!("c{client}")
}

fn event(at_us: u64, node: String, what: What) -> Event {
    Event {
        at_ns: at_us * 1000,
        node,
        clock_us: None,
        what,
    }
}

/// Asked, acquired and a write: three events.
fn cycle_start(lines: &mut Vec<Event>, client: usize, at_us: u64, acquisition: u64, stale: bool) {
    let thread = format!("c{client}-0");
    lines.push(event(
        at_us,
        node(client),
        What::Invoke {
            client: thread.clone(),
            call: Call::Lock,
            acquisition: 1,
        },
    ));
    lines.push(event(
        at_us + 10,
        node(client),
        What::Acquired {
            thread: thread.clone(),
            lock: "bench".into(),
            token: acquisition.to_string(),
            valid_until_us: None,
            valid_until_at_ns: None,
        },
    ));
    lines.push(event(
        at_us + 20,
        "resource".into(),
        What::Write {
            client: Some(thread),
            lock: None,
            token: acquisition.to_string(),
            phase: None,
            accepted: Some(true),
            stale: Some(stale),
            acquisition: None,
        },
    ));
}

/// Releasing and released: two events.
fn cycle_end(lines: &mut Vec<Event>, client: usize, at_us: u64) {
    let thread = format!("c{client}-0");
    lines.push(event(
        at_us,
        node(client),
        What::Releasing {
            thread: thread.clone(),
            lock: "bench".into(),
        },
    ));
    lines.push(event(
        at_us + 5,
        node(client),
        What::Released {
            thread,
            lock: "bench".into(),
            outcome: ReleaseOutcome::Released,
            why: String::new(),
        },
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_plants_what_it_says_and_the_judge_finds_it() {
        let dir = std::env::temp_dir().join(format!("cassalock-bench-judge-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.jsonl");
        let planted = write_record(&path, 12_000).unwrap();
        assert!(planted.events >= 12_000 && planted.events < 12_010, "{planted:?}");
        assert_eq!((planted.overlaps, planted.stale_accepted), (2, 2), "{planted:?}");
        let reader =
            cassalock_judge::event::Reader::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap())).unwrap();
        let mut judge =
            cassalock_judge::observed::Judge::for_record(&reader.header, cassalock_judge::observed::Keep::Verdicts);
        let end = Duration::from_nanos(reader.header.run.end_ns);
        let mut reader = reader;
        for event in reader.by_ref() {
            judge.see(&event.unwrap());
        }
        let verdicts = judge.finish(end);
        assert_eq!(reader.events_read, planted.events);
        assert_eq!(verdicts.acquisitions, planted.acquisitions);
        assert_eq!((verdicts.overlap_count, verdicts.stale_accepted_count), (2, 2));
        let printed = format!("{}", cassalock_judge::Judgement::Observed(Box::new(verdicts)));
        assert_eq!(found_counts(&printed), Some((2, 2)), "{printed}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn counts_out_of_range_or_not_increasing_are_refused() {
        assert!(check_counts(&[]).is_err());
        assert!(check_counts(&[99]).is_err());
        assert!(check_counts(&[MAX_EVENTS + 1]).is_err());
        assert!(check_counts(&[1000, 1000]).is_err());
        assert!(check_counts(&[1000, 10_000]).is_ok());
    }
}
