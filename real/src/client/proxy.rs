//! A client's own road to its servers, which cassalock can cut: one forwarder per server
//! address, listening on a loopback port of its own, so that one client program can be cut off
//! from every server while the others still reach them (a network partition of one process,
//! made without a network namespace or root).
//!
//! A forwarder copies bytes both ways, connection by connection. Cut, it stops copying: what a
//! side sends waits in the forwarder and in the kernel's buffers, as a partitioned packet waits
//! for TCP's retransmission; no connection is closed, no error is sent, and a server that
//! expires the client's lease or session meanwhile does so on its own clock. Healed, the
//! waiting bytes flow on in order, as TCP delivers them once a partition ends. Two differences
//! from a partition of the network, both small and both said in `docs/client-protocol.md`: a
//! connection the client opens during a cut completes its handshake (with the forwarder) and
//! then carries nothing until the cut ends; and the kernel's buffers (a few MB) can hold more
//! than a real network would before the sender's writes block.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// Server addresses one client's forwarders may stand for, at most.
pub const MAX_PROXIED_ADDRESSES: usize = 16;
/// Connections one client's forwarders carry over a run, at most (Redisson opens a pool of
/// about 25); a connection beyond it is closed at once and counted.
pub const MAX_CONNECTIONS: u64 = 256;
/// How often an idle copier looks whether the forwarder is closing.
const POLL: Duration = Duration::from_millis(20);
/// How often an acceptor, or a copier holding bytes during a cut, looks again.
const TICK: Duration = Duration::from_millis(1);
/// Bytes a copier reads at a time.
const CHUNK_BYTES: usize = 16 * 1024;
/// The longest a forwarder waits to reach its server for a new connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A server address the forwarders cannot stand for.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadProxy {
    #[error("--proxy {0}: not HOST:PORT with an IP address (127.0.0.1:16380)")]
    NotAnAddress(String),
    #[error("--proxy {0}: not a loopback address; cassalock forwards only to servers on this machine's loopback")]
    NotLoopback(String),
    #[error(
        "--proxy {0} does not appear in the --client command: write the address as the command gives it to the library"
    )]
    NotInCommand(String),
    #[error("--proxy names {0} addresses: at most {MAX_PROXIED_ADDRESSES}")]
    TooMany(usize),
    #[error("--proxy names {0} twice")]
    Twice(String),
}

/// A move of a forwarded address the runner refuses (`--move-address FROM=TO`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadMove {
    #[error("--move-address {0}: not FROM=TO, two HOST:PORT addresses (127.0.0.1:16390=127.0.0.1:16391)")]
    NotAPair(String),
    #[error("--move-address {0}: {1} is not a loopback address with a port")]
    NotLoopback(String, String),
    #[error("--move-address {0}: {1} is not one of the --proxy addresses, so no forwarder stands for it")]
    NotProxied(String, String),
    #[error("--move-address {0}: an address moved to itself")]
    ToItself(String),
    #[error("--move-address {0}: {1} is moved twice")]
    Twice(String, String),
}

/// Parse and check `--move-address FROM=TO` pairs against the forwarded addresses.
pub fn check_moves(moves: &[String], proxied: &[String]) -> Result<Vec<(String, SocketAddr)>, BadMove> {
    let mut checked: Vec<(String, SocketAddr)> = Vec::with_capacity(moves.len());
    for pair in moves {
        let (from, to) = pair.split_once('=').ok_or_else(|| BadMove::NotAPair(pair.clone()))?;
        for side in [from, to] {
            match side.parse::<SocketAddr>() {
                Ok(address) if address.ip().is_loopback() => {}
                _ => return Err(BadMove::NotLoopback(pair.clone(), side.to_owned())),
            }
        }
        if !proxied.iter().any(|address| address == from) {
            return Err(BadMove::NotProxied(pair.clone(), from.to_owned()));
        }
        if from == to {
            return Err(BadMove::ToItself(pair.clone()));
        }
        if checked.iter().any(|(moved, _)| moved == from) {
            return Err(BadMove::Twice(pair.clone(), from.to_owned()));
        }
        let to = to
            .parse()
            .map_err(|_| BadMove::NotLoopback(pair.clone(), to.to_owned()))?;
        checked.push((from.to_owned(), to));
    }
    Ok(checked)
}

/// Check the addresses a run forwards, against the client command that must contain each.
pub fn check(addresses: &[String], command: &str) -> Result<(), BadProxy> {
    if addresses.len() > MAX_PROXIED_ADDRESSES {
        return Err(BadProxy::TooMany(addresses.len()));
    }
    for (index, address) in addresses.iter().enumerate() {
        let parsed: SocketAddr = address.parse().map_err(|_| BadProxy::NotAnAddress(address.clone()))?;
        if !parsed.ip().is_loopback() {
            return Err(BadProxy::NotLoopback(address.clone()));
        }
        if addresses[..index].contains(address) {
            return Err(BadProxy::Twice(address.clone()));
        }
        if occurrences(command, address).is_empty() {
            return Err(BadProxy::NotInCommand(address.clone()));
        }
    }
    Ok(())
}

/// Where `address` stands in `text` as a whole address: not followed by a digit (so
/// `127.0.0.1:2218` is not found in `127.0.0.1:22181`) and not preceded by a digit or a dot.
fn occurrences(text: &str, address: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    text.match_indices(address)
        .map(|(at, _)| at)
        .filter(|&at| {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(at + address.len()).copied();
            !matches!(before, Some(b) if b.is_ascii_digit() || b == b'.')
                && !matches!(after, Some(b) if b.is_ascii_digit())
        })
        .collect()
}

/// `command` with every whole occurrence of each `(server, forwarder)` pair's server address
/// replaced by its forwarder's.
pub fn substitute(command: &str, pairs: &[(String, SocketAddr)]) -> String {
    let mut at_to_pair: Vec<(usize, usize)> = pairs
        .iter()
        .enumerate()
        .flat_map(|(pair, (server, _))| occurrences(command, server).into_iter().map(move |at| (at, pair)))
        .collect();
    at_to_pair.sort_unstable();
    let mut out = String::with_capacity(command.len());
    let mut copied_to = 0;
    for (at, pair) in at_to_pair {
        if at < copied_to {
            continue; // inside an address already replaced
        }
        out.push_str(&command[copied_to..at]);
        out.push_str(&pairs[pair].1.to_string());
        copied_to = at + pairs[pair].0.len();
    }
    out.push_str(&command[copied_to..]);
    out
}

/// What one client's forwarders share.
#[derive(Default)]
struct Switches {
    cut: AtomicBool,
    closing: AtomicBool,
    connections: AtomicU64,
    refused: AtomicU64,
}

/// One client's forwarders: one per server address, on `127.0.0.1` ports of their own.
pub struct Proxies {
    pairs: Vec<(String, SocketAddr)>,
    /// Where each forwarder connects a new connection: its server address, until moved.
    upstreams: Vec<Arc<Mutex<SocketAddr>>>,
    switches: Arc<Switches>,
}

impl Proxies {
    /// Start a forwarder for each of `servers` (checked by [`check`]).
    pub fn start(client: &str, servers: &[String]) -> io::Result<Proxies> {
        let switches = Arc::new(Switches::default());
        let mut pairs = Vec::with_capacity(servers.len());
        let mut upstreams = Vec::with_capacity(servers.len());
        for server in servers {
            let upstream: SocketAddr = server
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("not an address: {server}")))?;
            let listener = TcpListener::bind(("127.0.0.1", 0))?;
            listener.set_nonblocking(true)?;
            pairs.push((server.clone(), listener.local_addr()?));
            let switches = Arc::clone(&switches);
            let target = Arc::new(Mutex::new(upstream));
            upstreams.push(Arc::clone(&target));
            thread::Builder::new()
                .name(format!("{client}-proxy-{}", upstream.port()))
                .spawn(move || accept_all(&listener, &target, &switches))?;
        }
        Ok(Proxies {
            pairs,
            upstreams,
            switches,
        })
    }

    /// From now on, connect each new connection to the forwarder of `from` (a server address
    /// as the command gives it) to `to` instead: the address moved, as a virtual IP or a DNS
    /// name moves to a promoted replica. Connections already made stay where they are. False
    /// if no forwarder stands for `from`.
    pub fn move_address(&self, from: &str, to: SocketAddr) -> bool {
        let Some(index) = self.pairs.iter().position(|(server, _)| server == from) else {
            return false;
        };
        *self.upstreams[index]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = to;
        true
    }

    /// Each server address with its forwarder's.
    pub fn pairs(&self) -> &[(String, SocketAddr)] {
        &self.pairs
    }

    /// Cut (true) or heal (false) every connection of this client to its servers.
    pub fn cut(&self, cut: bool) {
        self.switches.cut.store(cut, Ordering::SeqCst);
    }

    /// Connections closed at once because [`MAX_CONNECTIONS`] had been carried.
    pub fn refused(&self) -> u64 {
        self.switches.refused.load(Ordering::Relaxed)
    }
}

impl Drop for Proxies {
    /// Stop accepting and copying: every forwarder thread ends within [`POLL`].
    fn drop(&mut self) {
        self.switches.closing.store(true, Ordering::SeqCst);
    }
}

fn accept_all(listener: &TcpListener, target: &Mutex<SocketAddr>, switches: &Arc<Switches>) {
    while !switches.closing.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                let upstream = *target.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if switches.connections.fetch_add(1, Ordering::Relaxed) >= MAX_CONNECTIONS {
                    switches.refused.fetch_add(1, Ordering::Relaxed);
                    continue; // dropped: closed
                }
                let switches = Arc::clone(switches);
                let _ = thread::Builder::new()
                    .name("proxy-connection".into())
                    .spawn(move || connect_and_copy(client, upstream, &switches));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => thread::sleep(TICK),
            Err(_) => thread::sleep(POLL),
        }
    }
}

/// Reach the server (after the cut, if the client connected during one), then copy both ways.
/// A connection made during a cut reaches the server its forwarder led to when it was accepted.
fn connect_and_copy(client: TcpStream, upstream: SocketAddr, switches: &Arc<Switches>) {
    if !wait_while_cut(switches) {
        return;
    }
    let Ok(server) = TcpStream::connect_timeout(&upstream, CONNECT_TIMEOUT) else {
        return; // the client sees its connection closed, as when the server is down
    };
    let streams = client
        .set_nonblocking(false)
        .and_then(|()| client.set_nodelay(true))
        .and_then(|()| server.set_nodelay(true))
        .and_then(|()| Ok((client.try_clone()?, server.try_clone()?)));
    let Ok((client_side, server_side)) = streams else {
        return;
    };
    let back = Arc::clone(switches);
    let _ = thread::Builder::new()
        .name("proxy-back".into())
        .spawn(move || copy(server_side, client_side, &back));
    copy(client, server, switches);
}

/// Wait until the cut is healed; false if the forwarders are closing first.
fn wait_while_cut(switches: &Switches) -> bool {
    while switches.cut.load(Ordering::SeqCst) {
        if switches.closing.load(Ordering::SeqCst) {
            return false;
        }
        thread::sleep(TICK);
    }
    !switches.closing.load(Ordering::SeqCst)
}

/// Write all of `bytes` to `to`, waiting while its reader is slow (a stopped client fills its
/// socket's buffer) but not past the forwarders' closing; false if it could not.
fn write_all(to: &mut TcpStream, mut bytes: &[u8], switches: &Switches) -> bool {
    while !bytes.is_empty() {
        if switches.closing.load(Ordering::SeqCst) {
            return false;
        }
        match to.write(bytes) {
            Ok(0) => return false,
            Ok(n) => bytes = &bytes[n..],
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return false,
        }
    }
    true
}

/// Copy `from` to `to` until either end closes or the forwarders close, holding what was read
/// while the cut lasts.
fn copy(mut from: TcpStream, mut to: TcpStream, switches: &Switches) {
    let mut chunk = vec![0_u8; CHUNK_BYTES];
    if from.set_read_timeout(Some(POLL)).is_err() || to.set_write_timeout(Some(POLL)).is_err() {
        return;
    }
    loop {
        if switches.closing.load(Ordering::SeqCst) {
            break;
        }
        match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                if !wait_while_cut(switches) || !write_all(&mut to, &chunk[..n], switches) {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_replaced_only_where_it_stands_whole() {
        let forwarder: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        let pairs = vec![("127.0.0.1:2218".to_owned(), forwarder)];
        assert_eq!(
            substitute("prog --servers 127.0.0.1:22181,127.0.0.1:2218 x", &pairs),
            "prog --servers 127.0.0.1:22181,127.0.0.1:40001 x"
        );
        assert_eq!(substitute("a 127.0.0.1:2218", &pairs), "a 127.0.0.1:40001");
        assert_eq!(substitute("a 1127.0.0.1:2218", &pairs), "a 1127.0.0.1:2218");
    }

    #[test]
    fn every_address_of_an_ensemble_is_replaced() {
        let pairs: Vec<(String, SocketAddr)> = (1..=3)
            .map(|n| {
                (
                    format!("127.0.0.1:2218{n}"),
                    format!("127.0.0.1:4000{n}").parse().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            substitute("k --servers 127.0.0.1:22181,127.0.0.1:22182,127.0.0.1:22183", &pairs),
            "k --servers 127.0.0.1:40001,127.0.0.1:40002,127.0.0.1:40003"
        );
    }

    #[test]
    fn addresses_that_cannot_be_forwarded_are_refused_with_the_reason() {
        let command = "prog --server 127.0.0.1:16380";
        assert_eq!(check(&["127.0.0.1:16380".into()], command), Ok(()));
        assert!(matches!(
            check(&["redis:16380".into()], command),
            Err(BadProxy::NotAnAddress(_))
        ));
        assert!(matches!(
            check(&["10.0.0.1:16380".into()], command),
            Err(BadProxy::NotLoopback(_))
        ));
        assert!(matches!(
            check(&["127.0.0.1:1638".into()], command),
            Err(BadProxy::NotInCommand(_))
        ));
        assert!(matches!(
            check(&["127.0.0.1:16380".into(), "127.0.0.1:16380".into()], command),
            Err(BadProxy::Twice(_))
        ));
        let many: Vec<String> = (0..=MAX_PROXIED_ADDRESSES)
            .map(|n| format!("127.0.0.1:{}", 30000 + n))
            .collect();
        assert_eq!(check(&many, command), Err(BadProxy::TooMany(MAX_PROXIED_ADDRESSES + 1)));
    }

    /// A forwarder carries bytes both ways; cut, it carries nothing and closes nothing; healed,
    /// what waited arrives in order.
    #[test]
    fn a_cut_holds_bytes_until_it_is_healed() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let server_address = server.local_addr().unwrap().to_string();
        let proxies = Proxies::start("c0", std::slice::from_ref(&server_address)).unwrap();
        let forwarder = proxies.pairs()[0].1;
        let mut client = TcpStream::connect(forwarder).unwrap();
        let (mut accepted, _) = server.accept().unwrap();
        client.write_all(b"ping").unwrap();
        let mut four = [0_u8; 4];
        accepted.read_exact(&mut four).unwrap();
        assert_eq!(&four, b"ping");

        proxies.cut(true);
        thread::sleep(Duration::from_millis(50)); // a copier mid-poll sees the cut
        client.write_all(b"lost?").unwrap();
        accepted.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        let mut five = [0_u8; 5];
        let during_cut = accepted.read(&mut five);
        assert!(
            matches!(&during_cut, Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)),
            "a cut forwarder delivered {during_cut:?}"
        );

        proxies.cut(false);
        accepted.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        accepted.read_exact(&mut five).unwrap();
        assert_eq!(&five, b"lost?");
        accepted.write_all(b"pong").unwrap();
        client.read_exact(&mut four).unwrap();
        assert_eq!(&four, b"pong");
        assert_eq!(proxies.refused(), 0);
    }

    /// A copier blocked on a reader that never reads (a stopped program's full socket) still
    /// ends when the forwarders close: its sockets close and the writer is told.
    #[test]
    fn a_copier_stuck_on_a_full_socket_ends_when_the_forwarders_close() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let server_address = server.local_addr().unwrap().to_string();
        let proxies = Proxies::start("c0", std::slice::from_ref(&server_address)).unwrap();
        let mut client = TcpStream::connect(proxies.pairs()[0].1).unwrap();
        let (_never_read, _) = server.accept().unwrap();
        let (told, told_rx) = std::sync::mpsc::channel();
        let written = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&written);
        thread::spawn(move || {
            let chunk = vec![7_u8; 64 * 1024];
            // Far more than every buffer between here and the server holds; bounded all the same.
            for _ in 0..16_384 {
                if let Err(e) = client.write_all(&chunk) {
                    let _ = told.send(Some(e.kind()));
                    return;
                }
                counted.fetch_add(chunk.len() as u64, Ordering::SeqCst);
            }
            let _ = told.send(None);
        });
        // Wait until the buffers are full: no byte moves for 300 ms (at most 10 s).
        let mut last = u64::MAX;
        for _ in 0..33 {
            thread::sleep(Duration::from_millis(300));
            let now = written.load(Ordering::SeqCst);
            if now == last {
                break;
            }
            last = now;
        }
        assert!(told_rx.try_recv().is_err(), "the writer should be blocked, not done");
        assert_eq!(written.load(Ordering::SeqCst), last, "the writer never blocked");
        drop(proxies);
        let outcome = told_rx.recv_timeout(Duration::from_secs(10));
        assert!(
            matches!(outcome, Ok(Some(_))),
            "the writer was not told the forwarder closed: {outcome:?}"
        );
    }

    /// A moved address leads new connections to its new server; a connection made before
    /// stays with the old one.
    #[test]
    fn a_moved_address_leads_new_connections_to_the_new_server() {
        let old = TcpListener::bind("127.0.0.1:0").unwrap();
        let new = TcpListener::bind("127.0.0.1:0").unwrap();
        let old_address = old.local_addr().unwrap().to_string();
        let proxies = Proxies::start("c0", std::slice::from_ref(&old_address)).unwrap();
        let forwarder = proxies.pairs()[0].1;
        let mut before = TcpStream::connect(forwarder).unwrap();
        let (mut on_old, _) = old.accept().unwrap();
        assert!(proxies.move_address(&old_address, new.local_addr().unwrap()));
        assert!(!proxies.move_address("127.0.0.1:1", new.local_addr().unwrap()));
        let mut after = TcpStream::connect(forwarder).unwrap();
        let (mut on_new, _) = new.accept().unwrap();
        before.write_all(b"old").unwrap();
        after.write_all(b"new").unwrap();
        let mut three = [0_u8; 3];
        on_old.read_exact(&mut three).unwrap();
        assert_eq!(&three, b"old");
        on_new.read_exact(&mut three).unwrap();
        assert_eq!(&three, b"new");
    }

    #[test]
    fn moves_are_checked_against_the_forwarded_addresses() {
        let proxied = vec!["127.0.0.1:16390".to_owned()];
        let moved = |pair: &str| check_moves(&[pair.to_owned()], &proxied);
        assert_eq!(
            moved("127.0.0.1:16390=127.0.0.1:16391").unwrap(),
            vec![("127.0.0.1:16390".to_owned(), "127.0.0.1:16391".parse().unwrap())]
        );
        assert!(matches!(moved("127.0.0.1:16390"), Err(BadMove::NotAPair(_))));
        assert!(matches!(
            moved("127.0.0.1:16390=10.0.0.1:1"),
            Err(BadMove::NotLoopback(..))
        ));
        assert!(matches!(
            moved("127.0.0.1:16392=127.0.0.1:16391"),
            Err(BadMove::NotProxied(..))
        ));
        assert!(matches!(
            moved("127.0.0.1:16390=127.0.0.1:16390"),
            Err(BadMove::ToItself(_))
        ));
        let twice = [
            "127.0.0.1:16390=127.0.0.1:16391".to_owned(),
            "127.0.0.1:16390=127.0.0.1:16392".to_owned(),
        ];
        assert!(matches!(check_moves(&twice, &proxied), Err(BadMove::Twice(..))));
    }
}
