//! One client program as cassalock runs it: started through `/bin/sh` in a process group of its
//! own (so a pause or a kill reaches every process it started), its standard input cassalock's
//! commands, its standard output read line by line on a thread of its own (at most
//! [`MAX_LINE_BYTES`](super::protocol::MAX_LINE_BYTES) a line), the last
//! [`STDERR_TAIL_BYTES`] of its standard error kept to show when it breaks. Dropping it kills
//! the group and reaps the program.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::protocol::{self, Answer, Broken, Command, Hello, MAX_LINE_BYTES};

/// How much of a client's standard error is kept, bytes (the end of it).
pub const STDERR_TAIL_BYTES: usize = 4096;
/// Lines read ahead of the runner, at most, before the reader waits.
const LINES_AHEAD: usize = 1024;

/// What went wrong with a client program: it broke the protocol, stopped, or did not answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientFault {
    #[error("client {client} could not be started (`{command}`): {error}")]
    Start {
        client: String,
        command: String,
        error: std::io::Error,
    },
    #[error("client {client} broke the protocol: {broken}{stderr}")]
    Broke {
        client: String,
        broken: Broken,
        stderr: StderrTail,
    },
    #[error("client {client} exited ({status}) {when}{stderr}")]
    Exited {
        client: String,
        status: String,
        when: String,
        stderr: StderrTail,
    },
    #[error("client {client} did not answer {what} within {waited_ms} ms{stderr}")]
    Silent {
        client: String,
        what: String,
        waited_ms: u64,
        stderr: StderrTail,
    },
}

impl ClientFault {
    pub fn client(&self) -> &str {
        match self {
            ClientFault::Start { client, .. }
            | ClientFault::Broke { client, .. }
            | ClientFault::Exited { client, .. }
            | ClientFault::Silent { client, .. } => client,
        }
    }
}

/// The end of a client's standard error, shown after a fault ("; its standard error ended
/// with: ...").
#[derive(Debug, Default)]
pub struct StderrTail(pub String);

impl std::fmt::Display for StderrTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.0.trim();
        if text.is_empty() {
            Ok(())
        } else {
            write!(f, "; its standard error ended with:\n{text}")
        }
    }
}

/// A line from the client's standard output, or how its output ended.
enum Line {
    /// Its number, its text, and when the reader took it from the pipe (microseconds since the
    /// epoch): a line the program printed while nobody asked (a `lost` notice of an idle copy)
    /// may wait in the channel long after.
    Text(u64, String, u64),
    Bad(Broken),
    End,
}

/// A running client program.
pub struct ClientProcess {
    /// Its node name in the record (`c0`).
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// Lines it printed so far.
    last_line: u64,
    /// When cassalock last read a line of it (or started it), on this machine's wall clock,
    /// microseconds.
    last_heard_us: u64,
}

impl ClientProcess {
    /// Start `command` through `/bin/sh -c` as client `name`, with `env` added to its
    /// environment.
    pub fn start(name: &str, command: &str, env: &[(&str, String)]) -> Result<ClientProcess, ClientFault> {
        let mut process = Process::new("/bin/sh");
        process
            .arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in env {
            process.env(key, value);
        }
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut process, 0);
        let mut child = process.spawn().map_err(|error| ClientFault::Start {
            client: name.to_owned(),
            command: command.to_owned(),
            error,
        })?;
        let stdout = child.stdout.take().expect("stdout was piped");
        let stderr_pipe = child.stderr.take().expect("stderr was piped");
        let (send, lines) = mpsc::sync_channel(LINES_AHEAD);
        thread::Builder::new()
            .name(format!("{name}-stdout"))
            .spawn(move || read_lines(stdout, &send))
            .expect("a reader thread starts");
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_BYTES)));
        let tail = Arc::clone(&stderr);
        thread::Builder::new()
            .name(format!("{name}-stderr"))
            .spawn(move || keep_tail(stderr_pipe, &tail))
            .expect("a reader thread starts");
        Ok(ClientProcess {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            last_line: 0,
            last_heard_us: crate::now_us(),
        })
    }

    /// Its process id (its process group's too).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait for its hello, until `deadline`.
    pub fn hello(&mut self, deadline: Instant) -> Result<Hello, ClientFault> {
        let (line, text) = self.next_line(Instant::now(), deadline, "its hello")?;
        protocol::hello(line, &text).map_err(|broken| self.broke(broken))
    }

    /// Send a command.
    pub fn send(&mut self, command: &Command) -> Result<(), ClientFault> {
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(command.line().as_bytes()).and_then(|()| stdin.flush()),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        };
        written.map_err(|_| self.exited(format!("before it read `{}`", command.name())))
    }

    /// Its next answer, until `deadline`; `waiting_for` names what is awaited, for the error,
    /// and `asked` is when it was asked (a silence is said as the time since then, not since
    /// the last line the process printed, a `lost` notice before the answer for one).
    pub fn answer(&mut self, asked: Instant, deadline: Instant, waiting_for: &str) -> Result<Answer, ClientFault> {
        let (line, text) = self.next_line(asked, deadline, waiting_for)?;
        protocol::answer(line, &text).map_err(|broken| self.broke(broken))
    }

    /// A protocol break found by the caller on a line this process printed.
    pub fn broke(&mut self, broken: Broken) -> ClientFault {
        ClientFault::Broke {
            client: self.name.clone(),
            broken,
            stderr: self.stderr_tail(),
        }
    }

    /// The number of the line last read.
    pub fn last_line(&self) -> u64 {
        self.last_line
    }

    /// When cassalock last read a line of it from its pipe (microseconds since the epoch): the
    /// clock its last answer is checked against; after a fault,
    /// what it did from then on is unknown (a process that exited, for one, died at some
    /// moment after its last line, and its output's end comes later still).
    pub fn last_heard_us(&self) -> u64 {
        self.last_heard_us
    }

    fn next_line(
        &mut self,
        asked: Instant,
        deadline: Instant,
        waiting_for: &str,
    ) -> Result<(u64, String), ClientFault> {
        let line = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()));
        match &line {
            Ok(Line::Text(_, _, heard_us)) => self.last_heard_us = *heard_us,
            Ok(Line::Bad(_)) => self.last_heard_us = crate::now_us(),
            _ => {}
        }
        match line {
            Ok(Line::Text(line, text, _)) => {
                self.last_line = line;
                Ok((line, text))
            }
            Ok(Line::Bad(broken)) => Err(self.broke(broken)),
            Ok(Line::End) | Err(RecvTimeoutError::Disconnected) => {
                Err(self.exited(format!("while cassalock waited for {waiting_for}")))
            }
            Err(RecvTimeoutError::Timeout) => Err(ClientFault::Silent {
                client: self.name.clone(),
                what: waiting_for.to_owned(),
                waited_ms: u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX),
                stderr: self.stderr_tail(),
            }),
        }
    }

    fn exited(&mut self, when: String) -> ClientFault {
        // Its output ended: give it a moment to be reaped, so the status can be said.
        let deadline = Instant::now() + Duration::from_millis(500);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status.to_string(),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                Ok(None) => break "it closed its pipes, its process still running".to_owned(),
                Err(error) => break format!("its status unknown: {error}"),
            }
        };
        ClientFault::Exited {
            client: self.name.clone(),
            status,
            when,
            stderr: self.stderr_tail(),
        }
    }

    fn stderr_tail(&self) -> StderrTail {
        // The reader thread may still be copying the last bytes in: a moment for it.
        thread::sleep(Duration::from_millis(50));
        let tail = self.stderr.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let bytes: Vec<u8> = tail.iter().copied().collect();
        StderrTail(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Stop the client's process group (SIGSTOP); [`Self::resume`] continues it.
    #[cfg(unix)]
    pub fn pause(&self) -> std::io::Result<()> {
        self.signal(libc::SIGSTOP)
    }

    #[cfg(unix)]
    pub fn resume(&self) -> std::io::Result<()> {
        self.signal(libc::SIGCONT)
    }

    #[cfg(unix)]
    fn signal(&self, signal: libc::c_int) -> std::io::Result<()> {
        signal_group(self.child.id(), signal)
    }

    /// Close its input and wait up to `grace` for it to exit by itself; then kill its group.
    /// Whether it exited by itself.
    pub fn finish(mut self, grace: Duration) -> bool {
        self.stdin = None;
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

impl Drop for ClientProcess {
    fn drop(&mut self) {
        self.stdin = None;
        #[cfg(unix)]
        {
            // A paused group must be continued to die promptly; errors: it is gone already.
            let _ = self.signal(libc::SIGKILL);
            let _ = self.signal(libc::SIGCONT);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Read `output` line by line into `send` until it ends, a line is too long or not UTF-8, or
/// nobody listens.
fn read_lines(output: impl Read, send: &mpsc::SyncSender<Line>) {
    let mut reader = BufReader::new(output);
    let mut number = 0u64;
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let limit = (MAX_LINE_BYTES + 2) as u64;
        // A read error ends the output as its end does.
        let read: usize = reader
            .by_ref()
            .take(limit)
            .read_until(b'\n', &mut buffer)
            .unwrap_or_default();
        if read == 0 {
            let _ = send.send(Line::End);
            return;
        }
        number += 1;
        if buffer.last() == Some(&b'\n') {
            buffer.pop();
            if buffer.last() == Some(&b'\r') {
                buffer.pop();
            }
        }
        if buffer.len() > MAX_LINE_BYTES {
            let start = String::from_utf8_lossy(&buffer[..200]).into_owned();
            let _ = send.send(Line::Bad(Broken::new(
                number,
                format!("is longer than {MAX_LINE_BYTES} bytes"),
                &start,
            )));
            return;
        }
        let line = match String::from_utf8(std::mem::take(&mut buffer)) {
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => Line::Text(number, text, crate::now_us()),
            Err(error) => {
                let text = String::from_utf8_lossy(error.as_bytes()).into_owned();
                let _ = send.send(Line::Bad(Broken::new(number, "is not UTF-8", &text)));
                return;
            }
        };
        if send.send(line).is_err() {
            return;
        }
    }
}

/// Keep the last [`STDERR_TAIL_BYTES`] of `stderr` in `tail`.
fn keep_tail(mut stderr: impl Read, tail: &Mutex<VecDeque<u8>>) {
    let mut chunk = [0u8; 4096];
    loop {
        let read = match stderr.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        let mut tail = tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        tail.extend(&chunk[..read]);
        let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
        tail.drain(..excess);
    }
}

/// Send `signal` to the process group a client leads (its pid: [`ClientProcess::pid`]).
#[cfg(unix)]
pub fn signal_group(pid: u32, signal: libc::c_int) -> std::io::Result<()> {
    let group = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    // SAFETY: kill(2) with a process group cassalock created (the client leads it) and a
    // constant signal; it touches no memory of ours.
    if unsafe { libc::kill(-group, signal) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
