//! T1-server: a holder's belief against the server's own state.
//!
//! T1-belief needs a second holder to see a wrong belief: a holder whose key expired early,
//! was lost in a failover or taken by an operator goes on believing unseen until someone else
//! acquires. T1-server reads the server instead. A driver that can see the server's state
//! writes `server_holder` events: at this instant the server names this token as the lock's
//! holder (or nobody), as the lock itself reads its server (`FamilyLock::holder_on_server`:
//! the Redis key's value, Redisson's hash field, the lowest child of Curator's directory, the
//! lowest create revision under etcd's prefix, a majority of Redlock's masters).
//!
//! At every such event, every thread that believes it holds that lock (the one belief of
//! [`crate::belief`], a lapsed validity no longer counted) must hold the token the server
//! names. A driver writes a reading right after every `acquired` and `extended` it records
//! (so a belief is checked as it begins or grows), and at any other instant it reads the
//! server (a resource write, a release about to begin), when the reading changed. A record
//! without a reading is not judged: the driver did not look at the server. Between readings
//! nothing is known, so the judge is exactly as fine as the driver's readings, never finer.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::belief::{BeliefRules, Believing};
use crate::event::{Event, What};

/// T1-server's verdict on one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerAgreement {
    /// The record holds no reading of the server's state.
    NotRead,
    /// At every one of `readings`, every believer held the token the server named.
    Agreed { readings: u64 },
    /// The first reading that disagreed with a believer, and how many did.
    Disagreed {
        first: Disagreement,
        disagreeing_readings: u64,
        readings: u64,
    },
}

/// A believer the server did not name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    pub at: Duration,
    pub lock: String,
    pub believer: String,
    pub believer_token: String,
    /// The token the server named (`None`: nobody), and the thread that acquired with it.
    pub server_token: Option<String>,
    pub server_thread: Option<String>,
    /// A server that names holders by thread: the threads it named (empty: nobody, unless a
    /// token was named).
    pub server_threads: Vec<String>,
}

impl Disagreement {
    /// The disagreement in words, its instant as `at` reads it (each record's clock has its
    /// own way of saying an instant).
    pub fn describe(&self, at: &str) -> String {
        // A library may return the lock with no token to give (etcd's key already gone).
        let token = match self.believer_token.as_str() {
            "" => "no token".to_owned(),
            token => format!("token {token}"),
        };
        format!(
            "{} believed it held {} with {token} at {at} while the server named {}",
            self.believer,
            self.lock,
            self.server_named()
        )
    }

    /// Whom the server named instead: a holder (by thread, and its token), threads, or nobody.
    fn server_named(&self) -> String {
        match (&self.server_token, &self.server_thread) {
            (None, _) if !self.server_threads.is_empty() => self.server_threads.join(", "),
            (None, _) => "nobody".to_owned(),
            (Some(token), Some(thread)) => format!("{thread} (token {token})"),
            (Some(token), None) => format!("token {token}, whose acquisition had not returned"),
        }
    }
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = format!("{:.3} ms", self.at.as_secs_f64() * 1000.0);
        write!(f, "{}", self.describe(&at))
    }
}

/// Whom one reading names: a token, or (a server that names holders by thread) threads;
/// neither is nobody.
#[derive(Clone, Copy)]
struct Named<'a> {
    token: Option<&'a str>,
    threads: &'a [String],
}

impl Named<'_> {
    const NOBODY: Named<'static> = Named {
        token: None,
        threads: &[],
    };

    fn anybody(&self) -> bool {
        self.token.is_some() || !self.threads.is_empty()
    }
}

/// T1-server's judge, fed one event at a time in time order ([`ServerJudge::see`]), then told
/// when the record ended ([`ServerJudge::finish`]). Its memory grows with the threads and locks
/// of the record, never with its events: a belief is dropped as it ends, each thread keeps its
/// last token, and at most [`MAX_TURNS`] instants are kept for a timeline.
pub struct ServerJudge {
    believing: Believing,
    /// Each thread's token (its last acquisition's).
    token_of: BTreeMap<String, String>,
    /// Per lock, when the key of the holder its last reading named expires: from then its
    /// server names nobody.
    expiring: BTreeMap<String, Duration>,
    readings: u64,
    disagreeing_readings: u64,
    first: Option<Disagreement>,
    /// Per lock, the believers its last reading did not name.
    unnamed: BTreeMap<String, Vec<String>>,
    /// Each instant a believer went from named (or not believing) to not named, at most
    /// [`MAX_TURNS`] of them.
    turns: Vec<Disagreement>,
}

/// The most instants [`unnamed_from`] keeps (a picture draws one mark for each): a run that
/// has more is already violated at the first.
pub const MAX_TURNS: usize = 256;

impl ServerJudge {
    pub fn new(rules: BeliefRules) -> Self {
        ServerJudge {
            believing: Believing::new(rules),
            token_of: BTreeMap::new(),
            expiring: BTreeMap::new(),
            readings: 0,
            disagreeing_readings: 0,
            first: None,
            unnamed: BTreeMap::new(),
            turns: Vec::new(),
        }
    }

    /// Take in one event (events in time order).
    pub fn see(&mut self, event: &Event) {
        let now = Duration::from_nanos(event.at_ns);
        self.expire(now);
        self.believing.see(event);
        // Ended beliefs are not asked about again.
        self.believing.take_closed();
        match &event.what {
            What::Acquired { thread, token, .. } => {
                self.token_of.insert(thread.clone(), token.clone());
            }
            What::ServerHolder {
                lock,
                holder,
                threads,
                gone_at_ns,
            } => {
                let named = Named {
                    token: holder.as_deref(),
                    threads,
                };
                match gone_at_ns.map(Duration::from_nanos).filter(|_| named.anybody()) {
                    Some(gone_at) => self.expiring.insert(lock.clone(), gone_at),
                    None => self.expiring.remove(lock.as_str()),
                };
                self.compare(lock, named, now);
            }
            _ => {}
        }
    }

    /// The verdict on the record, which ended at `end`, and the instants a believer stopped
    /// being named (at most [`MAX_TURNS`]).
    pub fn finish(mut self, end: Duration) -> (ServerAgreement, Vec<Disagreement>) {
        if self.readings > 0 {
            self.expire(end);
        }
        debug_assert!(self.disagreeing_readings <= self.readings);
        let agreement = match self.first {
            _ if self.readings == 0 => ServerAgreement::NotRead,
            None => ServerAgreement::Agreed {
                readings: self.readings,
            },
            Some(first) => ServerAgreement::Disagreed {
                first,
                disagreeing_readings: self.disagreeing_readings,
                readings: self.readings,
            },
        };
        (agreement, self.turns)
    }

    /// The server names `named` for `lock` at `at`: every believer then must be named, by its
    /// token or by its thread.
    fn compare(&mut self, lock: &str, named: Named<'_>, at: Duration) {
        self.readings += 1;
        let token_of = &self.token_of;
        let is_named = |believer: &str| {
            named.threads.iter().any(|thread| thread == believer)
                || named
                    .token
                    .is_some_and(|token| token_of.get(believer).map(String::as_str) == Some(token))
        };
        let holder = named.token;
        // The thread whose last acquisition had the token the server named.
        let server_thread = holder.and_then(|token| {
            token_of
                .iter()
                .find(|(_, held)| held.as_str() == token)
                .map(|(thread, _)| thread.clone())
        });
        let disagreement = |believer: &str| Disagreement {
            at,
            lock: lock.to_owned(),
            believer: believer.to_owned(),
            believer_token: token_of.get(believer).map_or("?", String::as_str).to_owned(),
            server_token: holder.map(str::to_owned),
            server_thread: server_thread.clone(),
            server_threads: named.threads.to_vec(),
        };
        let wrong: Vec<&str> = self
            .believing
            .holders_of_at(lock, at)
            .filter(|believer| !is_named(believer))
            .collect();
        let before = self.unnamed.remove(lock).unwrap_or_default();
        for believer in &wrong {
            if !before.iter().any(|earlier| earlier == believer) && self.turns.len() < MAX_TURNS {
                self.turns.push(disagreement(believer));
            }
        }
        let Some(believer) = wrong.first() else {
            return;
        };
        self.disagreeing_readings += 1;
        if self.first.is_none() {
            self.first = Some(disagreement(believer));
        }
        let wrong: Vec<String> = wrong.iter().map(|believer| (*believer).to_owned()).collect();
        self.unnamed.insert(lock.to_owned(), wrong);
        debug_assert!(self.turns.len() <= MAX_TURNS);
    }

    /// The keys that expired by `now`: from its expiry, each server names nobody.
    fn expire(&mut self, now: Duration) {
        let expired: Vec<(String, Duration)> = self
            .expiring
            .iter()
            .filter(|(_, gone_at)| **gone_at <= now)
            .map(|(lock, gone_at)| (lock.clone(), *gone_at))
            .collect();
        for (lock, gone_at) in expired {
            self.expiring.remove(&lock);
            self.compare(&lock, Named::NOBODY, gone_at);
        }
    }
}

/// Judge T1-server over `events` (in time order) of a record that ended at `end`, beliefs as
/// `rules` end them. A reading that says when the holder's key expires stands for one more
/// reading then, naming nobody, unless a later reading came first.
pub fn judge(events: &[Event], end: Duration, rules: BeliefRules) -> ServerAgreement {
    read_all(events, end, rules).0
}

/// The instants a believer stopped being named, as [`judge`] reads `events`: one per believer
/// each time a reading of its lock stops naming it (it is named again, or stops believing,
/// before a later one counts), at most [`MAX_TURNS`]. What a timeline marks.
pub fn unnamed_from(events: &[Event], end: Duration, rules: BeliefRules) -> Vec<Disagreement> {
    read_all(events, end, rules).1
}

fn read_all(events: &[Event], end: Duration, rules: BeliefRules) -> (ServerAgreement, Vec<Disagreement>) {
    let mut judge = ServerJudge::new(rules);
    for event in events {
        judge.see(event);
    }
    judge.finish(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;

    fn at(ms: u64, node: &str, what: What) -> Event {
        Event {
            at_ns: ms * 1_000_000,
            node: node.to_owned(),
            clock_us: None,
            what,
        }
    }

    fn acquired(ms: u64, thread: &str, token: &str, valid_until_ms: Option<u64>) -> Event {
        at(
            ms,
            "c0",
            What::Acquired {
                thread: thread.to_owned(),
                lock: "L".to_owned(),
                token: token.to_owned(),
                valid_until_us: valid_until_ms.map(|ms| ms * 1000),
                valid_until_at_ns: valid_until_ms.map(|ms| ms * 1_000_000),
            },
        )
    }

    fn server(ms: u64, holder: Option<&str>) -> Event {
        at(
            ms,
            "oracle",
            What::ServerHolder {
                lock: "L".to_owned(),
                holder: holder.map(str::to_owned),
                threads: Vec::new(),
                gone_at_ns: None,
            },
        )
    }

    fn releasing(ms: u64, thread: &str) -> Event {
        at(
            ms,
            "c0",
            What::Releasing {
                thread: thread.to_owned(),
                lock: "L".to_owned(),
            },
        )
    }

    const END: Duration = Duration::from_millis(100);

    const RULES: BeliefRules = BeliefRules {
        lease_lost_ends_it: true,
    };

    #[test]
    fn t1_server_a_record_without_readings_is_not_read() {
        let events = [acquired(1, "c0-0:1", "a", None), releasing(5, "c0-0:1")];
        assert_eq!(judge(&events, END, RULES), ServerAgreement::NotRead);
    }

    #[test]
    fn t1_server_agrees_while_the_server_names_the_believer() {
        let events = [
            server(0, None),
            acquired(1, "c0-0:1", "a", None),
            server(1, Some("a")),
            releasing(5, "c0-0:1"),
            server(6, None),
        ];
        assert_eq!(judge(&events, END, RULES), ServerAgreement::Agreed { readings: 3 });
    }

    #[test]
    fn t1_server_a_believer_the_server_forgot_disagrees() {
        let events = [
            acquired(1, "c0-0:1", "a", None),
            server(1, Some("a")),
            server(3, None),
            acquired(4, "c0-1:1", "b", None),
            server(4, Some("b")),
        ];
        let ServerAgreement::Disagreed {
            first,
            disagreeing_readings,
            readings,
        } = judge(&events, END, RULES)
        else {
            panic!("a believer the server no longer names must disagree");
        };
        assert_eq!((disagreeing_readings, readings), (2, 3));
        assert_eq!(first.believer, "c0-0:1");
        assert_eq!(first.server_token, None);
        assert_eq!(first.at, Duration::from_millis(3));
        assert!(first.to_string().contains("named nobody"), "{first}");
    }

    #[test]
    fn t1_server_names_the_other_holder_when_the_server_does() {
        let events = [
            acquired(1, "c0-0:1", "a", None),
            acquired(2, "c1-0:1", "b", None),
            server(2, Some("b")),
        ];
        let ServerAgreement::Disagreed { first, .. } = judge(&events, END, RULES) else {
            panic!("the server names the other holder");
        };
        assert_eq!(first.server_thread.as_deref(), Some("c1-0:1"));
        assert!(first.to_string().contains("c1-0:1 (token b)"), "{first}");
    }

    #[test]
    fn t1_server_a_believer_without_a_token_is_never_named_by_one() {
        // etcd's 3.4 client returns the lock after its key was deleted: no token to give.
        let events = [acquired(1, "c0-0:1", "", None), server(1, Some("b"))];
        let ServerAgreement::Disagreed { first, .. } = judge(&events, END, RULES) else {
            panic!("a tokenless believer is not the holder the server names");
        };
        assert_eq!(first.believer_token, "");
        assert!(first.to_string().contains("with no token at"), "{first}");
    }

    #[test]
    fn t1_server_a_lapsed_validity_is_no_longer_a_belief() {
        // The holder's validity ran out at 5 ms; the key expired at 6 ms: no disagreement.
        let events = [
            acquired(1, "c0-0:1", "a", Some(5)),
            server(1, Some("a")),
            server(6, None),
        ];
        assert_eq!(judge(&events, END, RULES), ServerAgreement::Agreed { readings: 2 });
        // Believed until 8 ms, the key gone at 6 ms: a disagreement.
        let events = [
            acquired(1, "c0-0:1", "a", Some(8)),
            server(1, Some("a")),
            server(6, None),
        ];
        assert!(matches!(judge(&events, END, RULES), ServerAgreement::Disagreed { .. }));
    }

    #[test]
    fn t1_server_a_key_that_expires_under_a_believer_disagrees_without_another_reading() {
        let expiring = |ms: u64, token: &str, gone_ms: u64| {
            at(
                ms,
                "oracle",
                What::ServerHolder {
                    lock: "L".to_owned(),
                    holder: Some(token.to_owned()),
                    threads: Vec::new(),
                    gone_at_ns: Some(gone_ms * 1_000_000),
                },
            )
        };
        // The key expires at 6 ms; its holder believes until 8 ms: one holder alone, and the
        // expiry is the reading that disagrees.
        let events = [acquired(1, "c0-0:1", "a", Some(8)), expiring(1, "a", 6)];
        let ServerAgreement::Disagreed { first, readings, .. } = judge(&events, END, RULES) else {
            panic!("the key expired under its believer");
        };
        assert_eq!((first.at, readings), (Duration::from_millis(6), 2));
        // Believing until 5 ms only: the expiry finds no believer.
        let events = [acquired(1, "c0-0:1", "a", Some(5)), expiring(1, "a", 6)];
        assert_eq!(judge(&events, END, RULES), ServerAgreement::Agreed { readings: 2 });
        // An extension read before the expiry moves it.
        let events = [
            acquired(1, "c0-0:1", "a", Some(8)),
            expiring(1, "a", 6),
            expiring(5, "a", 20),
            releasing(7, "c0-0:1"),
        ];
        // Two readings, and the moved expiry at 20 ms, after the release began.
        assert_eq!(judge(&events, END, RULES), ServerAgreement::Agreed { readings: 3 });
    }

    #[test]
    fn t1_server_a_server_naming_threads_names_each_of_them() {
        // A row lock's main row names holders by thread: the believer's thread among them
        // agrees, even beside a contender's passing cell.
        let rows = |ms: u64, threads: &[&str], gone_ms: Option<u64>| {
            at(
                ms,
                "oracle",
                What::ServerHolder {
                    lock: "L".to_owned(),
                    holder: None,
                    threads: threads.iter().map(|thread| (*thread).to_owned()).collect(),
                    gone_at_ns: gone_ms.map(|ms| ms * 1_000_000),
                },
            )
        };
        let events = [
            acquired(1, "c0-0:1", "column-a", None),
            rows(1, &["c0-0:1"], Some(9)),
            rows(2, &["c0-0:1", "c1-0:1"], None),
            releasing(3, "c0-0:1"),
        ];
        assert_eq!(judge(&events, END, RULES), ServerAgreement::Agreed { readings: 2 });
        // The row names another thread only: the believer is not named.
        let events = [acquired(1, "c0-0:1", "column-a", None), rows(2, &["c1-0:1"], None)];
        let ServerAgreement::Disagreed { first, .. } = judge(&events, END, RULES) else {
            panic!("the row names another thread");
        };
        assert!(first.to_string().ends_with("the server named c1-0:1"), "{first}");
        // The cell's expiry, read at 1 ms, names nobody from 9 ms on.
        let events = [acquired(1, "c0-0:1", "column-a", None), rows(1, &["c0-0:1"], Some(9))];
        let ServerAgreement::Disagreed { first, .. } = judge(&events, END, RULES) else {
            panic!("the cell expired under its believer");
        };
        assert_eq!(first.at, Duration::from_millis(9));
    }

    #[test]
    fn t1_server_a_believer_turns_unnamed_once_until_it_is_named_again() {
        let events = [
            acquired(1, "c0-0:1", "a", None),
            server(1, Some("a")),
            server(2, None),
            server(3, None),
            server(4, Some("a")),
            server(5, Some("b")),
        ];
        let turns = unnamed_from(&events, END, RULES);
        let at: Vec<Duration> = turns.iter().map(|turn| turn.at).collect();
        assert_eq!(at, [Duration::from_millis(2), Duration::from_millis(5)]);
        assert!(turns.iter().all(|turn| turn.believer == "c0-0:1"));
    }
}
