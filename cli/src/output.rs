//! The command's standard output and error, which a full disk, a closed file or a vanished
//! terminal cannot turn into a panic.
//!
//! Rust's `println!` panics when a write fails (`cassalock replay ... > /dev/full` ended in a
//! backtrace and exit 101). This crate's `println!`, `print!`, `eprintln!` and `eprint!` are
//! the macros below, which shadow the standard ones in every module of the crate (they are
//! defined before any module is declared): a failed write to standard output is remembered,
//! later writes are skipped, and [`finish`] says so on standard error and turns the exit status
//! into [`OUTPUT_FAILED`] (a violated claim keeps its 1: the verdict is the run's first answer).
//! A failed write to standard error is dropped: there is nowhere left to say it.
//!
//! A closed pipe is not a failed write: `main` restores SIGPIPE's default, so
//! `cassalock replay ... | head` ends quietly, as a Unix tool does.

use std::fmt;
use std::io::Write;
use std::process::ExitCode;
use std::sync::OnceLock;

/// The exit status when an output (standard output, a file named by a flag) could not be
/// written: the run may have finished, but what it says did not reach its reader.
pub(crate) const OUTPUT_FAILED: u8 = 6;

/// The first failed write to standard output, if any.
static STDOUT_FAILED: OnceLock<std::io::Error> = OnceLock::new();

/// Write to standard output, unless an earlier write failed (then nothing: the reader already
/// lost part of the output, and the first error is the one to report).
pub(crate) fn out(args: fmt::Arguments<'_>) {
    if STDOUT_FAILED.get().is_some() {
        return;
    }
    if let Err(error) = std::io::stdout().lock().write_fmt(args) {
        let _ = STDOUT_FAILED.set(error);
    }
}

/// Write to standard error; a failure is dropped.
pub(crate) fn err(args: fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Flush standard output and return the exit status to end with: `code`, or, when standard
/// output could not be written, [`OUTPUT_FAILED`] (1, a violation, stays 1) after saying why.
pub(crate) fn finish(code: ExitCode) -> ExitCode {
    if let Err(error) = std::io::stdout().lock().flush() {
        let _ = STDOUT_FAILED.set(error);
    }
    match STDOUT_FAILED.get() {
        None => code,
        Some(error) => {
            err(format_args!(
                "error: cannot write to standard output: {error}; what was printed is incomplete\n"
            ));
            failed_output(code)
        }
    }
}

/// The exit status of a run whose output could not be written: a violation stays 1, anything
/// else becomes [`OUTPUT_FAILED`].
pub(crate) fn failed_output(code: ExitCode) -> ExitCode {
    if code == ExitCode::from(1) {
        code
    } else {
        ExitCode::from(OUTPUT_FAILED)
    }
}

macro_rules! println {
    () => {
        $crate::output::out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

macro_rules! print {
    ($($arg:tt)*) => {
        $crate::output::out(format_args!($($arg)*))
    };
}

macro_rules! eprintln {
    () => {
        $crate::output::err(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

macro_rules! eprint {
    ($($arg:tt)*) => {
        $crate::output::err(format_args!($($arg)*))
    };
}
