//! `cassalock judge FILE`: read an event record (docs/events.md) and print every claim's
//! verdict, as the run that wrote it printed them.

use std::path::PathBuf;
use std::process::ExitCode;

use cassalock_judge::event;

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
    println!(
        "{} events of a {} run of the {} lock ({} clients, version {} of the record)",
        record.events.len(),
        header.driver,
        header.lock,
        header.run.clients,
        header.version
    );
    if let Some(replay) = &header.replay {
        println!("written by: {replay}");
    }
    println!();
    let judgement = cassalock_judge::judge(&record);
    print!("{judgement}");
    if judgement.any_violated() {
        ExitCode::from(1)
    } else if judgement.any_bounded() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}
