//! `cassalock judge FILE`: read an event record (docs/events.md) and print every claim's
//! verdict, as the run that wrote it printed them.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use cassalock_judge::text::count;
use cassalock_judge::{event, observed};

#[derive(clap::Args, Debug)]
pub struct JudgeArgs {
    /// The event record: JSON lines, a header then one event a line (`replay --events FILE`
    /// writes one). `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Also draw the run's timeline as SVG into this file: a lane per node, waits and holds,
    /// faults, clocks, two holders at once, the resource's marks (the simulation build draws).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

pub fn run(args: JudgeArgs) -> ExitCode {
    let input: Box<dyn std::io::BufRead> = if args.file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        match std::fs::File::open(&args.file) {
            Ok(file) => Box::new(std::io::BufReader::new(file)),
            Err(error) => {
                return crate::usage_error(&format!(
                    "cannot open the event record {}: {error}",
                    args.file.display()
                ))
            }
        }
    };
    let read = event::Reader::new(input).and_then(|reader| judge_reading(reader, args.svg.is_some()));
    let Judged {
        record,
        events_read,
        judgement,
    } = match read {
        Ok(judged) => judged,
        Err(error) => return crate::usage_error(&format!("{}: {error}", args.file.display())),
    };
    let header = &record.header;
    let mut out = format!(
        "{} of a {} run of the {} lock ({}, version {} of the record)\n",
        count(events_read, "event"),
        header.driver,
        header.lock,
        count(header.run.clients, "client"),
        header.version
    );
    if let Some(replay) = &header.replay {
        out.push_str(&format!("written by: {replay}\n"));
    }
    out.push_str(&format!("\n{judgement}"));
    let drawn = args.svg.as_deref().map(|path| draw(&record, &judgement, path));
    if let Some(Ok(path)) = &drawn {
        out.push_str(&format!("timeline written to {path}\n"));
    }
    // A full disk or a closed pipe is said, not a panic: the verdict stands, the output does not.
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        eprintln!("error: cannot write the verdicts to standard output: {error}");
        return crate::output::failed_output(ExitCode::from(if judgement.any_violated() { 1 } else { 0 }));
    }
    if let Some(Err(why)) = &drawn {
        eprintln!("error: {why}");
        return crate::output::failed_output(ExitCode::from(if judgement.any_violated() { 1 } else { 0 }));
    }
    if judgement.any_violated() {
        ExitCode::from(1)
    } else if judgement.any_bounded() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

/// A record judged: its header and events (none kept when judged as read), how many events it
/// had, and every claim's verdict.
struct Judged {
    record: event::Record,
    events_read: u64,
    judgement: cassalock_judge::Judgement,
}

/// Judge the record `reader` reads. A run seen from outside (the real runner's, a client
/// library's: runs that can be long) is judged as it is read, in memory that does not grow with
/// its length, unless its events are `needed` (to draw them); any other record is read whole.
fn judge_reading(
    mut reader: event::Reader<Box<dyn std::io::BufRead + '_>>,
    needed: bool,
) -> Result<Judged, event::ReadError> {
    if matches!(reader.header.run.rules, event::Rules::Observed(_)) && !needed {
        let mut judge = observed::Judge::for_record(&reader.header, observed::Keep::Verdicts);
        for event in reader.by_ref() {
            judge.see(&event?);
        }
        let end = std::time::Duration::from_nanos(reader.header.run.end_ns);
        return Ok(Judged {
            events_read: reader.events_read,
            judgement: cassalock_judge::Judgement::Observed(Box::new(judge.finish(end))),
            record: event::Record {
                header: reader.header,
                events: Vec::new(),
            },
        });
    }
    let events = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
    let record = event::Record {
        header: reader.header,
        events,
    };
    Ok(Judged {
        events_read: reader.events_read,
        judgement: cassalock_judge::judge(&record),
        record,
    })
}

/// Draw the record's timeline into `path`; its name, or why not. A model's record is drawn one
/// step a unit of the axis (`cassalock_judge::steps`): on its ticks, every step of a tick would
/// land at one instant.
#[cfg(madsim)]
fn draw(
    record: &event::Record,
    judgement: &cassalock_judge::Judgement,
    path: &std::path::Path,
) -> anyhow::Result<String> {
    let stepped;
    let (record, judgement) = if record.header.clock == event::Clock::ModelTicks {
        stepped = cassalock_judge::steps::by_steps(record);
        (&stepped, &cassalock_judge::judge(&stepped))
    } else {
        (record, judgement)
    };
    let picture = cassalock_sim::timeline::Picture::new(&record.header, &record.events, judgement);
    cassalock_sim::timeline::write_record_svg(&picture, path)
        .map(|()| path.display().to_string())
        .map_err(|error| anyhow::anyhow!("--svg {}: {error}", path.display()))
}

#[cfg(not(madsim))]
fn draw(_: &event::Record, _: &cassalock_judge::Judgement, path: &std::path::Path) -> anyhow::Result<String> {
    Err(anyhow::anyhow!(
        "--svg {}: the timeline is drawn by the simulation build: cargo run --release -- judge FILE --svg OUT",
        path.display()
    ))
}
