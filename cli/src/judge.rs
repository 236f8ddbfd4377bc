//! `cassalock judge FILE`: read an event record (docs/events.md) and print every claim's
//! verdict, as the run that wrote it printed them.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use cassalock_judge::event;
use cassalock_judge::text::count;

#[derive(clap::Args, Debug)]
pub struct JudgeArgs {
    /// The event record: JSON lines, a header then one event a line (`replay --events FILE`
    /// writes one). `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

pub fn run(args: JudgeArgs) -> ExitCode {
    let read = if args.file.as_os_str() == "-" {
        event::read(std::io::stdin().lock())
    } else {
        match std::fs::File::open(&args.file) {
            Ok(file) => event::read(std::io::BufReader::new(file)),
            Err(error) => {
                return crate::usage_error(&format!(
                    "cannot open the event record {}: {error}",
                    args.file.display()
                ))
            }
        }
    };
    let record = match read {
        Ok(record) => record,
        Err(error) => return crate::usage_error(&format!("{}: {error}", args.file.display())),
    };
    let header = &record.header;
    let mut out = format!(
        "{} of a {} run of the {} lock ({}, version {} of the record)\n",
        count(record.events.len(), "event"),
        header.driver,
        header.lock,
        count(header.run.clients, "client"),
        header.version
    );
    if let Some(replay) = &header.replay {
        out.push_str(&format!("written by: {replay}\n"));
    }
    let judgement = cassalock_judge::judge(&record);
    out.push_str(&format!("\n{judgement}"));
    // A full disk or a closed pipe is said, not a panic: the verdict stands, the output does not.
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        eprintln!("error: cannot write the verdicts to standard output: {error}");
        return ExitCode::from(if judgement.any_violated() { 1 } else { 2 });
    }
    if judgement.any_violated() {
        ExitCode::from(1)
    } else if judgement.any_bounded() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}
