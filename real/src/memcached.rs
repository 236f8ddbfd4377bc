//! A real Memcached server as a [`FamilyStore`] of [`MemcachedCommand`]s: a small client of
//! Memcached's text protocol, of our own, over one tokio `TcpStream`.
//!
//! Only the seven commands the lock uses (`add`, `set`, `get`, `gets`, `delete`, `touch`,
//! `cas`), each sent as one request and read back as one answer; flags are always 0 and
//! `noreply` is never used. Every answer is translated to the [`MemcachedReply`] that
//! [`cassalock::store::memcached::Memcached::apply`] gives for the same command (the
//! differential test in `cli/tests/real_servers.rs` holds the two to that).
//!
//! Failures, as the lock machines read them:
//! - **no connection could be made** (refused, nothing listening, the connect timing out), or
//!   the command timeout ran out before the request was written: [`StoreFailure::Unavailable`]
//!   (nothing sent, nothing applied);
//! - **the request was (perhaps partly) written and no whole answer came** within the command
//!   timeout (1000 ms by default), or the connection broke: [`StoreFailure::Timeout`] (it may
//!   have applied). The connection is dropped, since whatever answer is still on its way would
//!   be read as the next command's; the next command connects again;
//! - **an error answer** (`ERROR`, `CLIENT_ERROR ...`, `SERVER_ERROR ...`) or one that does not
//!   parse: [`StoreFailure::Other`]; the connection is dropped as well. A key Memcached would
//!   refuse (empty, over 250 bytes, with spaces or control characters) is refused here, unsent.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::Instant;

use cassalock::algo::server_holder::{ReadState, ServerSnapshot};
use cassalock::driver::family::FamilyStore;
use cassalock::store::memcached::{Memcached, MemcachedCommand, MemcachedReply};
use cassalock::store::StoreFailure;

pub use crate::redis::{DEFAULT_COMMAND_TIMEOUT_MS, DEFAULT_CONNECT_TIMEOUT_MS};

/// Memcached's longest key, bytes.
pub const MAX_KEY_BYTES: usize = 250;

/// The longest value this client reads back, bytes (a lock's token is a few dozen).
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// The longest answer line this client reads, bytes (`VALUE key flags bytes cas` is under 300).
pub const MAX_LINE_BYTES: usize = 1024;

/// Why a [`RealMemcached`] could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RealMemcachedError {
    #[error("Memcached address {0:?}: give host:port")]
    Address(String),
    #[error("the command timeout must be 1 to 60000 ms, not {0}")]
    Timeout(u64),
}

/// What went wrong with one request, before it becomes a [`StoreFailure`].
#[derive(Debug)]
enum Trouble {
    /// Nothing was sent.
    NotSent,
    /// Sent (or partly sent), no whole answer.
    NoAnswer,
    /// An answer we cannot use.
    Bad(String),
}

/// One Memcached server reached over TCP, one connection at a time.
pub struct RealMemcached {
    address: String,
    command_timeout: Duration,
    connect_timeout: Duration,
    connection: tokio::sync::Mutex<Option<BufReader<TcpStream>>>,
}

impl RealMemcached {
    /// A store of the server at `address` (`host:port`), with the default timeouts. Connects
    /// lazily: the first command makes the connection ([`RealMemcached::ping`] checks one).
    pub fn new(address: &str) -> Result<RealMemcached, RealMemcachedError> {
        RealMemcached::with_timeouts(address, DEFAULT_COMMAND_TIMEOUT_MS, DEFAULT_CONNECT_TIMEOUT_MS)
    }

    pub fn with_timeouts(
        address: &str,
        command_timeout_ms: u64,
        connect_timeout_ms: u64,
    ) -> Result<RealMemcached, RealMemcachedError> {
        let well_formed = address
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
        if !well_formed {
            return Err(RealMemcachedError::Address(address.to_owned()));
        }
        for timeout_ms in [command_timeout_ms, connect_timeout_ms] {
            if !(1..=60_000).contains(&timeout_ms) {
                return Err(RealMemcachedError::Timeout(timeout_ms));
            }
        }
        Ok(RealMemcached {
            address: address.to_owned(),
            command_timeout: Duration::from_millis(command_timeout_ms),
            connect_timeout: Duration::from_millis(connect_timeout_ms),
            connection: tokio::sync::Mutex::new(None),
        })
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Check the server answers (`version`): its version line, or why not.
    pub async fn ping(&self) -> Result<String, crate::Unreachable> {
        let deadline = Instant::now() + self.command_timeout;
        let mut slot = self.connection.lock().await;
        let result = self.exchange(&mut slot, b"version\r\n", deadline, |stream| {
            Box::pin(async move {
                let line = read_line(stream).await?;
                line.strip_prefix("VERSION ")
                    .map(str::to_owned)
                    .ok_or_else(|| Trouble::Bad(format!("version answered {line:?}")))
            })
        });
        match result.await {
            Ok(version) => Ok(version),
            Err(Trouble::NotSent) => Err(crate::Unreachable(format!("{}: cannot connect", self.address))),
            Err(Trouble::NoAnswer) => Err(crate::Unreachable(format!(
                "{}: no answer to `version` within {} ms",
                self.address,
                self.command_timeout.as_millis()
            ))),
            Err(Trouble::Bad(why)) => Err(crate::Unreachable(format!("{}: {why}", self.address))),
        }
    }

    /// Connect if need be, write `request`, read the answer with `read`, all before
    /// `deadline`. Drops the connection on any trouble after the request went out.
    async fn exchange<T>(
        &self,
        slot: &mut Option<BufReader<TcpStream>>,
        request: &[u8],
        deadline: Instant,
        read: impl for<'s> FnOnce(
            &'s mut BufReader<TcpStream>,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, Trouble>> + Send + 's>>,
    ) -> Result<T, Trouble> {
        if slot.is_none() {
            let connect_by = deadline.min(Instant::now() + self.connect_timeout);
            let stream = tokio::time::timeout_at(connect_by, TcpStream::connect(&self.address))
                .await
                .map_err(|_| Trouble::NotSent)?
                .map_err(|_| Trouble::NotSent)?;
            stream.set_nodelay(true).map_err(|_| Trouble::NotSent)?;
            *slot = Some(BufReader::new(stream));
        }
        let Some(stream) = slot.as_mut() else {
            return Err(Trouble::NotSent);
        };
        if Instant::now() >= deadline {
            return Err(Trouble::NotSent);
        }
        let exchanged = tokio::time::timeout_at(deadline, async {
            stream
                .get_mut()
                .write_all(request)
                .await
                .map_err(|_| Trouble::NoAnswer)?;
            read(stream).await
        })
        .await;
        match exchanged {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(trouble)) => {
                *slot = None;
                Err(trouble)
            }
            Err(_elapsed) => {
                *slot = None;
                Err(Trouble::NoAnswer)
            }
        }
    }
}

/// A key Memcached accepts: 1 to 250 bytes, no spaces or control characters.
fn check_key(key: &str) -> Result<(), StoreFailure> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES || key.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(StoreFailure::Other(format!(
            "Memcached key {key:?}: give 1 to {MAX_KEY_BYTES} bytes without spaces or control characters"
        )));
    }
    Ok(())
}

/// The request's bytes.
fn request(command: &MemcachedCommand) -> Vec<u8> {
    let storage = |verb: &str, key: &str, value: &str, exptime_s: i64, cas: Option<u64>| {
        let mut bytes = format!("{verb} {key} 0 {exptime_s} {}", value.len());
        if let Some(unique) = cas {
            bytes.push_str(&format!(" {unique}"));
        }
        bytes.push_str("\r\n");
        bytes.push_str(value);
        bytes.push_str("\r\n");
        bytes.into_bytes()
    };
    match command {
        MemcachedCommand::Add { key, value, exptime_s } => storage("add", key, value, *exptime_s, None),
        MemcachedCommand::Set { key, value, exptime_s } => storage("set", key, value, *exptime_s, None),
        MemcachedCommand::Cas {
            key,
            value,
            exptime_s,
            cas_unique,
        } => storage("cas", key, value, *exptime_s, Some(*cas_unique)),
        MemcachedCommand::Get { key } => format!("get {key}\r\n").into_bytes(),
        MemcachedCommand::Gets { key } => format!("gets {key}\r\n").into_bytes(),
        MemcachedCommand::Delete { key } => format!("delete {key}\r\n").into_bytes(),
        MemcachedCommand::Touch { key, exptime_s } => format!("touch {key} {exptime_s}\r\n").into_bytes(),
    }
}

/// One answer line, without its `\r\n`, at most [`MAX_LINE_BYTES`].
async fn read_line(stream: &mut BufReader<TcpStream>) -> Result<String, Trouble> {
    let mut line = Vec::new();
    let read = (&mut *stream)
        .take(MAX_LINE_BYTES as u64 + 2)
        .read_until(b'\n', &mut line)
        .await
        .map_err(|_| Trouble::NoAnswer)?;
    if read == 0 {
        return Err(Trouble::NoAnswer); // the server closed the connection
    }
    if !line.ends_with(b"\r\n") {
        return Err(Trouble::Bad(format!(
            "an answer line longer than {MAX_LINE_BYTES} bytes or cut short"
        )));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| Trouble::Bad("an answer line that is not UTF-8".into()))
}

/// An error line (`ERROR`, `CLIENT_ERROR ...`, `SERVER_ERROR ...`), or `None`.
fn error_line(line: &str) -> Option<Trouble> {
    (line == "ERROR" || line.starts_with("CLIENT_ERROR") || line.starts_with("SERVER_ERROR"))
        .then(|| Trouble::Bad(format!("the server answered {line:?}")))
}

/// The answer to a one-line command: one of `expected` (word, reply).
async fn read_status(
    stream: &mut BufReader<TcpStream>,
    expected: &[(&str, MemcachedReply)],
) -> Result<MemcachedReply, Trouble> {
    let line = read_line(stream).await?;
    if let Some(trouble) = error_line(&line) {
        return Err(trouble);
    }
    expected
        .iter()
        .find(|(word, _)| *word == line)
        .map(|(_, reply)| reply.clone())
        .ok_or_else(|| Trouble::Bad(format!("unexpected answer {line:?}")))
}

/// A value's data block of `bytes` bytes and its `\r\n`, at most [`MAX_VALUE_BYTES`].
async fn read_block(stream: &mut BufReader<TcpStream>, bytes: usize) -> Result<String, Trouble> {
    if bytes > MAX_VALUE_BYTES {
        return Err(Trouble::Bad(format!(
            "a value of {bytes} bytes, over this client's {MAX_VALUE_BYTES}"
        )));
    }
    let mut data = vec![0; bytes + 2];
    stream.read_exact(&mut data).await.map_err(|_| Trouble::NoAnswer)?;
    if !data.ends_with(b"\r\n") {
        return Err(Trouble::Bad("a value block not ended by \\r\\n".into()));
    }
    data.truncate(bytes);
    let value = String::from_utf8(data).map_err(|_| Trouble::Bad("a value that is not UTF-8".into()))?;
    Ok(value)
}

/// The answer to `get`/`gets` of one key: `VALUE key flags bytes [cas]`, the data, `END`; or
/// just `END`.
async fn read_value(stream: &mut BufReader<TcpStream>, key: &str, with_cas: bool) -> Result<MemcachedReply, Trouble> {
    let line = read_line(stream).await?;
    if line == "END" {
        return Ok(MemcachedReply::Miss);
    }
    if let Some(trouble) = error_line(&line) {
        return Err(trouble);
    }
    let fields: Vec<&str> = line.split(' ').collect();
    let bad = || Trouble::Bad(format!("unexpected answer {line:?}"));
    let (bytes, cas_unique) = match (with_cas, fields.as_slice()) {
        (false, ["VALUE", k, _flags, bytes]) if *k == key => (bytes.parse::<usize>().map_err(|_| bad())?, None),
        (true, ["VALUE", k, _flags, bytes, cas]) if *k == key => (
            bytes.parse::<usize>().map_err(|_| bad())?,
            Some(cas.parse::<u64>().map_err(|_| bad())?),
        ),
        _ => return Err(bad()),
    };
    let value = read_block(stream, bytes).await?;
    let end = read_line(stream).await?;
    if end != "END" {
        return Err(Trouble::Bad(format!("expected END after the value, got {end:?}")));
    }
    Ok(match cas_unique {
        Some(cas_unique) => MemcachedReply::ValueWithCas { value, cas_unique },
        None => MemcachedReply::Value { value },
    })
}

/// The answer to T1-server's reading `mg key v t` (the meta get: the value and the seconds
/// left): `VA bytes t<seconds>`, the data; or `EN` for a miss. The value and its seconds left,
/// `-1` for an item that never expires.
async fn read_meta(stream: &mut BufReader<TcpStream>) -> Result<Option<(String, i64)>, Trouble> {
    let line = read_line(stream).await?;
    if line == "EN" {
        return Ok(None);
    }
    if let Some(trouble) = error_line(&line) {
        return Err(trouble);
    }
    let bad = || Trouble::Bad(format!("unexpected answer {line:?} to a meta get"));
    let fields: Vec<&str> = line.split(' ').collect();
    let (bytes, left_s) = match fields.as_slice() {
        ["VA", bytes, flags @ ..] => {
            let left_s = flags
                .iter()
                .find_map(|flag| flag.strip_prefix('t'))
                .ok_or_else(bad)?
                .parse::<i64>()
                .map_err(|_| bad())?;
            (bytes.parse::<usize>().map_err(|_| bad())?, left_s)
        }
        _ => return Err(bad()),
    };
    let value = read_block(stream, bytes).await?;
    Ok(Some((value, left_s)))
}

/// The server a reading shows: `key` alone, stored at `now_ms` (this machine's clock) with the
/// seconds it had left and one more (the server counts whole seconds on a clock of its own,
/// so the item may live up to a second past what it says: the reading never ends it early).
fn server_read(key: &str, item: Option<(String, i64)>, now_ms: u64) -> Memcached {
    let mut server = Memcached::new();
    if let Some((value, left_s)) = item {
        let exptime_s = if left_s < 0 { 0 } else { left_s.saturating_add(1) };
        server.apply(
            &MemcachedCommand::Set {
                key: key.to_owned(),
                value,
                exptime_s,
            },
            now_ms,
        );
    }
    server
}

impl FamilyStore<MemcachedCommand> for RealMemcached {
    type Reply = MemcachedReply;

    /// The lock's item as the server holds it now (`mg key v t`); no connection is a server
    /// that names nobody ([`ReadState::Down`]).
    async fn read_state(&self, key: &str) -> Option<Result<Vec<ServerSnapshot>, StoreFailure>> {
        if let Err(refused) = check_key(key) {
            return Some(Err(refused));
        }
        let deadline = Instant::now() + self.command_timeout;
        let down = || {
            Some(Ok(vec![ServerSnapshot {
                state: ReadState::Down,
                now_ms: crate::now_us() / 1000,
            }]))
        };
        let Ok(mut slot) = tokio::time::timeout_at(deadline, self.connection.lock()).await else {
            return down();
        };
        let request = format!("mg {key} v t\r\n").into_bytes();
        let answer = self
            .exchange(&mut slot, &request, deadline, |stream| Box::pin(read_meta(stream)))
            .await;
        let now_ms = crate::now_us() / 1000;
        match answer {
            Ok(item) => Some(Ok(vec![ServerSnapshot {
                state: ReadState::Memcached(server_read(key, item, now_ms)),
                now_ms,
            }])),
            Err(Trouble::NotSent | Trouble::NoAnswer) => down(),
            Err(Trouble::Bad(why)) => Some(Err(StoreFailure::Other(why))),
        }
    }

    async fn execute(&self, command: MemcachedCommand) -> Result<MemcachedReply, StoreFailure> {
        check_key(command.key())?;
        let deadline = Instant::now() + self.command_timeout;
        // Waiting for the connection counts against the command's time: a command that never
        // got it was never sent.
        let Ok(mut slot) = tokio::time::timeout_at(deadline, self.connection.lock()).await else {
            return Err(StoreFailure::Unavailable);
        };
        let bytes = request(&command);
        let key = command.key().to_owned();
        let answer = self
            .exchange(&mut slot, &bytes, deadline, |stream| {
                Box::pin(async move {
                    match &command {
                        MemcachedCommand::Add { .. } | MemcachedCommand::Set { .. } => {
                            read_status(
                                stream,
                                &[
                                    ("STORED", MemcachedReply::Stored),
                                    ("NOT_STORED", MemcachedReply::NotStored),
                                ],
                            )
                            .await
                        }
                        MemcachedCommand::Cas { .. } => {
                            read_status(
                                stream,
                                &[
                                    ("STORED", MemcachedReply::Stored),
                                    ("EXISTS", MemcachedReply::Exists),
                                    ("NOT_FOUND", MemcachedReply::NotFound),
                                ],
                            )
                            .await
                        }
                        MemcachedCommand::Get { .. } => read_value(stream, &key, false).await,
                        MemcachedCommand::Gets { .. } => read_value(stream, &key, true).await,
                        MemcachedCommand::Delete { .. } => {
                            read_status(
                                stream,
                                &[
                                    ("DELETED", MemcachedReply::Deleted),
                                    ("NOT_FOUND", MemcachedReply::NotFound),
                                ],
                            )
                            .await
                        }
                        MemcachedCommand::Touch { .. } => {
                            read_status(
                                stream,
                                &[
                                    ("TOUCHED", MemcachedReply::Touched),
                                    ("NOT_FOUND", MemcachedReply::NotFound),
                                ],
                            )
                            .await
                        }
                    }
                })
            })
            .await;
        answer.map_err(|trouble| match trouble {
            Trouble::NotSent => StoreFailure::Unavailable,
            Trouble::NoAnswer => StoreFailure::Timeout,
            Trouble::Bad(why) => StoreFailure::Other(why),
        })
    }
}
