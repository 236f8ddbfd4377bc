//! Redlock: one lock over N independent Redis masters (seeds 002, 003).
//!
//! The Redis documentation's algorithm, step by step (tagged `redlock.2`–`redlock.5` below):
//! 1. read the clock (`start`);
//! 2. try `SET key token NX PX ttl` on every master in turn, each with a short request timeout;
//! 3. the lock is acquired when a majority of masters said OK *and* the time left,
//!    `validity = ttl - (now - start) - drift`, is positive; the holder may use it only until
//!    `start + ttl - drift`;
//! 4. otherwise unlock every master (also those that seemed to fail: the reply may have been
//!    lost) and try again after a random delay, up to a retry count; ours: the masters that did
//!    not answer the unlock are asked again, as a release asks them, and a `lock()` that gives up
//!    with a master still unanswered says so (its key may stay there until the TTL);
//! 5. release: the compare-and-delete script on every master.
//!
//! Extending is the same as acquiring with the compare-and-pexpire script: a majority must say
//! yes within the validity.
//!
//! What Redlock assumes and the checks attack (Kleppmann's critique): clocks that advance at
//! about the same rate on every master and client (a master whose clock jumps forward expires
//! the key early), processes that are not paused longer than the validity between checking it and
//! using the lock (nothing fences a paused holder: the random token only names it), and masters
//! that keep their keys across a restart (without fsync a restarted master forgets the key, and a
//! second client can gather a majority). The simulator drives those faults; the machine cannot
//! see them.
//!
//! Known client bugs as switches ([`RedlockMutants`]):
//! - node-redlock: the validity of every attempt is computed from the start of the *first*
//!   attempt. After retries whose delays add up past the TTL, no attempt can have validity left:
//!   a client that gathers a majority on a free lock still gives up (and unlocks), for ever.
//! - go-redsync: an extension that gathers a majority but ends after the validity is over (a
//!   slow round: the masters extended first have already let the key expire again) is taken as
//!   good, and the holder believes in a fresh TTL while fewer than a majority of keys live: a
//!   second client can gather a majority.

use super::super::{Action, Input, Machine, RetryPolicy, SleepKind, Source, Step, StepTag};
use super::{RedisLease, RedisLockConfig};
use crate::algo::server_holder::ServerHolder;
use crate::store::redis_keyspace::{RedisCommand, RedisReply};
use crate::store::StoreFailure;

const L2_SET: StepTag = StepTag::new(Source::Redlock, 2, "SET key token NX PX ttl on the next master");
const L3_ACQUIRED: StepTag = StepTag::new(Source::Redlock, 3, "a majority said OK within the validity: acquired");
const L4_UNLOCK: StepTag = StepTag::new(
    Source::Redlock,
    4,
    "no majority or no validity left: unlock every master",
);
const L4_DELAY: StepTag = StepTag::new(Source::Redlock, 4, "wait a random delay before the next attempt");
const L4_GIVE_UP: StepTag = StepTag::new(Source::Redlock, 4, "the retries are spent: give up");
const RETRY_UNLOCK: StepTag = StepTag::new(
    Source::Ours,
    0,
    "unlock again the masters that did not answer (compare-and-delete is safe to repeat)",
);
const L5_RELEASE: StepTag = StepTag::new(Source::Redlock, 5, "release: compare-and-delete on every master");
const L5_RELEASED: StepTag = StepTag::new(Source::Redlock, 5, "released on every master that answered");
const RETRY_RELEASE: StepTag = StepTag::new(
    Source::Ours,
    0,
    "release again on the masters that did not answer (compare-and-delete is safe to repeat)",
);
const EXTEND: StepTag = StepTag::new(Source::Redlock, 0, "extend: compare-and-pexpire on every master");
const EXTENDED: StepTag = StepTag::new(
    Source::Redlock,
    0,
    "extension done: a majority within the validity, or lost",
);

/// Known bugs of real Redlock clients, off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedlockMutants {
    /// node-redlock's bug: every attempt's validity is counted from the first attempt's start.
    pub validity_from_first_attempt: bool,
    /// go-redsync's bug: an extension succeeds when a majority said yes, however long it took,
    /// and the holder believes in a fresh TTL from its end.
    pub extend_ignores_validity: bool,
}

/// What a Redlock client reads.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedlockConfig {
    /// The masters' count (N); a majority is N/2 + 1.
    pub masters: usize,
    pub lock: RedisLockConfig,
    /// Attempts before giving up (the documentation's retry count).
    pub attempts: u32,
    /// The random delay between attempts is drawn in `0..=retry_delay_max_ms`.
    pub retry_delay_max_ms: u64,
    pub mutants: RedlockMutants,
}

impl Default for RedlockConfig {
    fn default() -> Self {
        RedlockConfig {
            masters: 5,
            lock: RedisLockConfig::default(),
            attempts: 3,
            retry_delay_max_ms: 200,
            mutants: RedlockMutants::default(),
        }
    }
}

impl AsRef<RetryPolicy> for RedlockConfig {
    fn as_ref(&self) -> &RetryPolicy {
        &self.lock.retry
    }
}

/// How many of `masters` are a majority: what an acquisition must lock, and what the masters'
/// state must agree on to name a holder ([`holder_on_masters`]).
pub fn majority_of(masters: usize) -> usize {
    masters / 2 + 1
}

impl RedlockConfig {
    pub fn majority(&self) -> usize {
        majority_of(self.masters)
    }

    /// `ttl - elapsed - drift` in microseconds (0 when nothing is left), drift being the
    /// documentation's 1% of the TTL plus 2 ms.
    pub fn validity_us(&self, elapsed_us: u64) -> u64 {
        let ttl_us = self.lock.ttl_ms.saturating_mul(1000);
        let drift_us = ttl_us / 100 + 2000;
        ttl_us.saturating_sub(elapsed_us).saturating_sub(drift_us)
    }
}

/// A command for one master.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToMaster {
    /// 0..masters.
    pub master: usize,
    pub command: RedisCommand,
}

impl std::fmt::Display for ToMaster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "master {}: {}", self.master, self.command)
    }
}

/// How an acquisition ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RedlockAcquire {
    /// The lock is ours until `lease.valid_until_us` (a [`RedisLease`] whose `set_sent_at_us` is
    /// the attempt's start, and whose drift is the documentation's).
    Acquired { lease: RedisLease, valid_until_us: u64 },
    /// Every attempt failed to gather a majority within the validity. `unanswered`: masters
    /// that never answered an unlock, however often asked, and may keep our key until its TTL.
    NotAcquired { unanswered: usize },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Phase {
    Idle,
    /// Sending `SET NX PX` to master `next - 1`; `oks` masters said OK so far.
    Setting {
        next: usize,
        oks: usize,
    },
    /// Unlocking `master` after a failed attempt; `rest`: the masters still to ask in this
    /// round, `failed`: those whose unlock failed in it (bit sets over at most
    /// [`MAX_MASTERS_BITS`] masters), `rounds_left`: rounds of asking the failed ones again.
    Unlocking {
        master: usize,
        rest: u16,
        failed: u16,
        rounds_left: u8,
    },
    Drawing,
    Delaying,
    Finished,
}

/// L1–L4: acquire over N masters, sequentially.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedlockAcquireMachine {
    key: String,
    token: String,
    phase: Phase,
    attempt: u32,
    attempt_start_us: u64,
    first_attempt_start_us: u64,
    /// Masters that may hold our key (a bit each): their `SET` said OK or got no answer, and
    /// no unlock has been answered by them since.
    maybe_holding: u16,
}

/// Masters a bit set of the acquire machine can name.
pub const MAX_MASTERS_BITS: usize = 16;

impl RedlockAcquireMachine {
    pub fn new(key: impl Into<String>, token: impl Into<String>) -> Self {
        RedlockAcquireMachine {
            key: key.into(),
            token: token.into(),
            phase: Phase::Idle,
            attempt: 0,
            attempt_start_us: 0,
            first_attempt_start_us: 0,
            maybe_holding: 0,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    fn send(&mut self, tag: StepTag, master: usize, command: RedisCommand) -> Step<RedlockAcquire, ToMaster> {
        Step::store(tag, ToMaster { master, command })
    }

    fn start_attempt(&mut self, config: &RedlockConfig, now_us: u64) -> Step<RedlockAcquire, ToMaster> {
        self.attempt += 1;
        self.attempt_start_us = now_us;
        if self.attempt == 1 {
            self.first_attempt_start_us = now_us;
        }
        self.phase = Phase::Setting { next: 1, oks: 0 };
        self.send(
            L2_SET,
            0,
            RedisCommand::set_nx_px(&self.key, &self.token, config.lock.ttl_ms),
        )
    }

    fn after_set(
        &mut self,
        config: &RedlockConfig,
        next: usize,
        oks: usize,
        now_us: u64,
    ) -> Step<RedlockAcquire, ToMaster> {
        if next < config.masters {
            self.phase = Phase::Setting { next: next + 1, oks };
            return self.send(
                L2_SET,
                next,
                RedisCommand::set_nx_px(&self.key, &self.token, config.lock.ttl_ms),
            );
        }
        let start_us = if config.mutants.validity_from_first_attempt {
            self.first_attempt_start_us
        } else {
            self.attempt_start_us
        };
        let validity_us = config.validity_us(now_us.saturating_sub(start_us));
        if oks >= config.majority() && validity_us > 0 {
            self.phase = Phase::Finished;
            let lease = RedisLease {
                key: self.key.clone(),
                token: self.token.clone(),
                set_sent_at_us: self.attempt_start_us,
            };
            let valid_until_us = now_us.saturating_add(validity_us);
            return Step::done(L3_ACQUIRED, RedlockAcquire::Acquired { lease, valid_until_us });
        }
        debug_assert!(config.masters <= MAX_MASTERS_BITS, "checked by the lock's config check");
        let every = u16::MAX
            .checked_shr(MAX_MASTERS_BITS.saturating_sub(config.masters) as u32)
            .unwrap_or(0);
        self.phase = Phase::Unlocking {
            master: 0,
            rest: every & !1,
            failed: 0,
            rounds_left: config.lock.retry.max_retries,
        };
        self.send(L4_UNLOCK, 0, self.unlock())
    }

    /// An unlock of `master` ended (`answered` or not): ask the next master of the round, or
    /// the round's failed ones again, or go on to the delay or the give-up.
    fn after_unlock(
        &mut self,
        config: &RedlockConfig,
        (master, mut rest, mut failed, mut rounds_left): (usize, u16, u16, u8),
        answered: bool,
    ) -> Step<RedlockAcquire, ToMaster> {
        let bit = 1u16 << master;
        if answered {
            self.maybe_holding &= !bit;
        } else {
            failed |= bit;
        }
        let mut tag = L4_UNLOCK;
        if rest == 0 && failed != 0 && rounds_left > 0 {
            rounds_left -= 1;
            rest = std::mem::take(&mut failed);
            tag = RETRY_UNLOCK;
        }
        if rest != 0 {
            let next = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            self.phase = Phase::Unlocking {
                master: next,
                rest,
                failed,
                rounds_left,
            };
            return self.send(tag, next, self.unlock());
        }
        if self.attempt >= config.attempts {
            self.phase = Phase::Finished;
            let unanswered = self.maybe_holding.count_ones() as usize;
            return Step::done(L4_GIVE_UP, RedlockAcquire::NotAcquired { unanswered });
        }
        self.phase = Phase::Drawing;
        Step::new(
            L4_DELAY,
            Action::Draw {
                max_ms: config.retry_delay_max_ms,
            },
        )
    }

    fn unlock(&self) -> RedisCommand {
        RedisCommand::DeleteIfEquals {
            key: self.key.clone(),
            token: self.token.clone(),
        }
    }

    fn advance(
        &mut self,
        config: &RedlockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedlockAcquire, ToMaster> {
        match (self.phase.clone(), input) {
            (Phase::Idle, Input::Start) => self.start_attempt(config, now_us),
            (Phase::Setting { next, oks }, Input::Reply(RedisReply::Ok)) => {
                self.maybe_holding |= 1 << (next - 1);
                self.after_set(config, next, oks + 1, now_us)
            }
            // A failed request may have been applied (its reply lost), unless the master was
            // not reached at all.
            (Phase::Setting { next, oks }, Input::Failed(failure)) => {
                if failure != StoreFailure::Unavailable {
                    self.maybe_holding |= 1 << (next - 1);
                }
                self.after_set(config, next, oks, now_us)
            }
            // Nil (taken) or an error: this master did not give us the lock.
            (Phase::Setting { next, oks }, Input::Reply(_)) => self.after_set(config, next, oks, now_us),
            (
                Phase::Unlocking {
                    master,
                    rest,
                    failed,
                    rounds_left,
                },
                input @ (Input::Reply(_) | Input::Failed(_)),
            ) => {
                let answered = matches!(input, Input::Reply(_));
                self.after_unlock(config, (master, rest, failed, rounds_left), answered)
            }
            (Phase::Drawing, Input::Drawn(ms)) => {
                self.phase = Phase::Delaying;
                Step::new(
                    L4_DELAY,
                    Action::Sleep {
                        ms,
                        kind: SleepKind::Backoff,
                    },
                )
            }
            (Phase::Delaying, Input::Woke) => self.start_attempt(config, now_us),
            (phase, input) => panic!("RedlockAcquireMachine: {input:?} in {phase:?}"),
        }
    }
}

impl Machine for RedlockAcquireMachine {
    type Config = RedlockConfig;
    type Output = RedlockAcquire;
    type Command = ToMaster;
    type Reply = RedisReply;

    fn resume(
        &mut self,
        config: &RedlockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedlockAcquire, ToMaster> {
        super::super::resume_checked(
            "RedlockAcquireMachine",
            self,
            RedlockAcquireMachine::is_finished,
            RedlockAcquireMachine::advance,
            (config, input, now_us),
        )
    }
}

/// Release (L5) or extension: one script on every master in turn, counting yeses.
///
/// Ours: a release sends its compare-and-delete again to the masters that did not answer, up
/// to `max_retries` more rounds (the documentation's release is one best-effort round, which
/// can leave a majority holding the key until its TTL while reporting "released"), and says
/// how many never answered.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedlockAllMasters {
    lease: RedisLease,
    extend: bool,
    /// Masters still to ask in this round, the next one last.
    to_send: Vec<usize>,
    in_flight: Option<usize>,
    /// Masters whose request failed in this round.
    failed: Vec<usize>,
    rounds_left: u8,
    yes: usize,
    started_us: Option<u64>,
    finished: bool,
}

/// What a release or an extension over every master found.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RedlockOutcome {
    /// Released: how many masters deleted our key, and how many never answered (their key, if
    /// it was still ours, stays until its TTL; fewer than a majority: the others can lock).
    Released { deleted: usize, unanswered: usize },
    /// A majority of the masters never answered the release: they may all still hold our key,
    /// keeping every other client out until its TTL.
    ReleaseUnconfirmed { unanswered: usize },
    /// Extended: valid until this client time.
    Extended { valid_until_us: u64 },
    /// No majority within the validity: the lock must be taken as lost.
    ExtensionFailed { yes: usize },
}

impl RedlockAllMasters {
    pub fn release(lease: RedisLease) -> Self {
        Self::new(lease, false)
    }

    pub fn extend(lease: RedisLease) -> Self {
        Self::new(lease, true)
    }

    fn new(lease: RedisLease, extend: bool) -> Self {
        RedlockAllMasters {
            lease,
            extend,
            to_send: Vec::new(),
            in_flight: None,
            failed: Vec::new(),
            rounds_left: 0,
            yes: 0,
            started_us: None,
            finished: false,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn command(&self, config: &RedlockConfig) -> RedisCommand {
        if self.extend {
            RedisCommand::PExpireIfEquals {
                key: self.lease.key.clone(),
                token: self.lease.token.clone(),
                ttl_ms: config.lock.ttl_ms,
            }
        } else {
            RedisCommand::DeleteIfEquals {
                key: self.lease.key.clone(),
                token: self.lease.token.clone(),
            }
        }
    }

    fn advance(
        &mut self,
        config: &RedlockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedlockOutcome, ToMaster> {
        let mut tag = if self.extend { EXTEND } else { L5_RELEASE };
        match input {
            Input::Start => {
                self.started_us = Some(now_us);
                self.to_send = (0..config.masters).rev().collect();
                self.rounds_left = if self.extend { 0 } else { config.lock.retry.max_retries };
            }
            Input::Reply(RedisReply::Integer(1)) => self.yes += 1,
            Input::Reply(_) => {}
            Input::Failed(_) => self.failed.extend(self.in_flight),
            other => panic!("RedlockAllMasters: {other:?}"),
        }
        self.in_flight = None;
        if self.to_send.is_empty() && !self.failed.is_empty() && self.rounds_left > 0 {
            self.rounds_left -= 1;
            self.to_send = std::mem::take(&mut self.failed);
            self.to_send.reverse();
            tag = RETRY_RELEASE;
        }
        if let Some(master) = self.to_send.pop() {
            self.in_flight = Some(master);
            return Step::store(
                tag,
                ToMaster {
                    master,
                    command: self.command(config),
                },
            );
        }
        self.finished = true;
        if !self.extend {
            let unanswered = self.failed.len();
            let outcome = if unanswered >= config.majority() {
                RedlockOutcome::ReleaseUnconfirmed { unanswered }
            } else {
                RedlockOutcome::Released {
                    deleted: self.yes,
                    unanswered,
                }
            };
            return Step::done(L5_RELEASED, outcome);
        }
        let started = self.started_us.expect("set at the start");
        let validity_us = config.validity_us(now_us.saturating_sub(started));
        if self.yes >= config.majority() && config.mutants.extend_ignores_validity {
            // MUTANT: a fresh TTL from now, whatever the round cost.
            let valid_until_us = now_us.saturating_add(config.validity_us(0));
            return Step::done(EXTENDED, RedlockOutcome::Extended { valid_until_us });
        }
        if self.yes >= config.majority() && validity_us > 0 {
            Step::done(
                EXTENDED,
                RedlockOutcome::Extended {
                    valid_until_us: now_us.saturating_add(validity_us),
                },
            )
        } else {
            Step::done(EXTENDED, RedlockOutcome::ExtensionFailed { yes: self.yes })
        }
    }
}

impl Machine for RedlockAllMasters {
    type Config = RedlockConfig;
    type Output = RedlockOutcome;
    type Command = ToMaster;
    type Reply = RedisReply;

    fn resume(
        &mut self,
        config: &RedlockConfig,
        input: Input<RedisReply>,
        now_us: u64,
    ) -> Step<RedlockOutcome, ToMaster> {
        super::super::resume_checked(
            "RedlockAllMasters",
            self,
            RedlockAllMasters::is_finished,
            RedlockAllMasters::advance,
            (config, input, now_us),
        )
    }
}

/// Who the masters say holds the lock (T1-server), from each master's reading (each read as
/// [`super::set_nx::holder_on_server`]; `None`: the master is down). A token names the holder
/// when the masters that hold it, with those that are down (which grant nobody else), make a
/// majority: then no other client can gather one. Else nobody: no client could acquire now.
pub fn holder_on_masters(masters: &[Option<ServerHolder>], majority: usize) -> ServerHolder {
    debug_assert!(majority > masters.len() / 2, "a majority is more than half");
    let down = masters.iter().filter(|reading| reading.is_none()).count();
    let holding = |token: &str| {
        masters
            .iter()
            .flatten()
            .filter(|held| held.token() == Some(token))
            .count()
    };
    masters
        .iter()
        .flatten()
        .filter_map(ServerHolder::token)
        .find(|token| holding(token) + down >= majority)
        .map_or(ServerHolder::Nobody, |token| ServerHolder::token_until(token, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redis_keyspace::RedisKeyspace;

    /// A client and N masters with the client's clock; every request takes `request_ms`;
    /// masters listed in `down` do not answer.
    struct Bench {
        masters: Vec<RedisKeyspace>,
        down: Vec<usize>,
        now_us: u64,
        request_ms: u64,
        draws: u64,
        /// Requests (counted from 0 over the bench's life) that fail as if lost.
        lose_requests: Vec<u64>,
        requests: u64,
    }

    impl Bench {
        fn new(masters: usize) -> Self {
            Bench {
                masters: vec![RedisKeyspace::new(); masters],
                down: Vec::new(),
                now_us: 1_000_000,
                request_ms: 1,
                draws: 0,
                lose_requests: Vec::new(),
                requests: 0,
            }
        }

        fn run<M>(&mut self, config: &RedlockConfig, machine: &mut M) -> M::Output
        where
            M: Machine<Config = RedlockConfig, Command = ToMaster, Reply = RedisReply>,
        {
            let mut input = Input::Start;
            for _ in 0..100_000 {
                let step = machine.resume(config, input, self.now_us);
                input = match step.action {
                    Action::Store(ToMaster { master, command }) => {
                        self.now_us += self.request_ms * 1000;
                        self.requests += 1;
                        if self.down.contains(&master) || self.lose_requests.contains(&(self.requests - 1)) {
                            Input::Failed(crate::store::StoreFailure::Timeout)
                        } else {
                            Input::Reply(self.masters[master].apply(&command, self.now_us / 1000))
                        }
                    }
                    Action::Draw { max_ms } => {
                        self.draws += 1;
                        Input::Drawn(max_ms)
                    }
                    Action::Sleep { ms, .. } => {
                        self.now_us += ms * 1000;
                        Input::Woke
                    }
                    Action::Done(output) => return output,
                    Action::ReadTime | Action::StopRenewal { .. } => panic!("Redlock reads no time source"),
                };
            }
            panic!("the machine did not finish")
        }

        fn holders(&self, token: &str) -> usize {
            self.masters
                .iter()
                .filter(|m| {
                    m.live_entry("lock", self.now_us / 1000)
                        .is_some_and(|e| format!("{:?}", e.value).contains(token))
                })
                .count()
        }
    }

    fn config() -> RedlockConfig {
        RedlockConfig {
            lock: RedisLockConfig {
                ttl_ms: 10_000,
                ..RedisLockConfig::default()
            },
            ..RedlockConfig::default()
        }
    }

    #[test]
    fn a_majority_within_the_validity_acquires_and_a_minority_unlocks_and_retries() {
        let mut bench = Bench::new(5);
        bench.down = vec![3, 4];
        let start = bench.now_us;
        match bench.run(&config(), &mut RedlockAcquireMachine::new("lock", "a")) {
            RedlockAcquire::Acquired { valid_until_us, lease } => {
                assert_eq!(lease.set_sent_at_us, start);
                // ttl 10 s - 5 ms of requests - drift (1% + 2 ms).
                assert_eq!(valid_until_us, start + 10_000_000 - 100_000 - 2_000);
            }
            other => panic!("3 of 5 masters is a majority: {other:?}"),
        }
        assert_eq!(bench.holders("a"), 3);
        // A second client finds 3 masters taken: no majority, it unlocks and retries, then gives up.
        // Masters 3 and 4 answer neither its SET nor its unlock: it says they may hold its key.
        let output = bench.run(&config(), &mut RedlockAcquireMachine::new("lock", "b"));
        assert_eq!(output, RedlockAcquire::NotAcquired { unanswered: 2 });
        assert_eq!(bench.draws, 2, "a random delay between each of the 3 attempts");
        assert_eq!(bench.holders("b"), 0, "a failed attempt leaves no key of its own");
        assert_eq!(bench.holders("a"), 3, "and never unlocks another client's key");
    }

    #[test]
    fn c_free_a_give_up_asks_an_unanswered_master_again_and_says_when_it_never_answered() {
        // Masters 0-2 hold another client's key; "b" gets master 3 and 4, no majority. Its
        // unlock of master 3 (request 8: five SETs, then unlocks 0..4) is lost.
        let taken = |bench: &mut Bench| {
            for master in 0..3 {
                bench.masters[master].apply(&RedisCommand::set_nx_px("lock", "other", 60_000), 1_000);
            }
        };
        let one_attempt = |max_retries: u8| RedlockConfig {
            attempts: 1,
            lock: RedisLockConfig {
                ttl_ms: 10_000,
                retry: RetryPolicy {
                    max_retries,
                    ..RetryPolicy::default()
                },
                ..RedisLockConfig::default()
            },
            ..RedlockConfig::default()
        };
        let mut bench = Bench::new(5);
        taken(&mut bench);
        bench.lose_requests = vec![8];
        let output = bench.run(&one_attempt(3), &mut RedlockAcquireMachine::new("lock", "b"));
        assert_eq!(output, RedlockAcquire::NotAcquired { unanswered: 0 });
        assert_eq!(bench.requests, 11, "5 SETs, 5 unlocks, master 3 asked again");
        assert_eq!(bench.holders("b"), 0, "the second unlock of master 3 removed our key");

        // Without the second round (the documentation's one best-effort round) the key stays,
        // and the give-up says so.
        let mut bench = Bench::new(5);
        taken(&mut bench);
        bench.lose_requests = vec![8];
        let output = bench.run(&one_attempt(0), &mut RedlockAcquireMachine::new("lock", "b"));
        assert_eq!(output, RedlockAcquire::NotAcquired { unanswered: 1 });
        assert_eq!(bench.holders("b"), 1, "our key stays on master 3 until its TTL");

        // A master that never answers: asked 1 + 3 times in each of 3 attempts, then named.
        let mut bench = Bench::new(5);
        taken(&mut bench);
        bench.down = vec![4];
        let config = RedlockConfig {
            lock: RedisLockConfig {
                ttl_ms: 10_000,
                ..RedisLockConfig::default()
            },
            ..RedlockConfig::default()
        };
        let output = bench.run(&config, &mut RedlockAcquireMachine::new("lock", "b"));
        assert_eq!(output, RedlockAcquire::NotAcquired { unanswered: 1 });
        assert_eq!(
            bench.requests,
            3 * (5 + 5 + 3),
            "each attempt: 5 SETs, 5 unlocks, 3 retries of master 4"
        );
        assert_eq!(
            bench.holders("b"),
            0,
            "master 4 never took our key; master 3's was deleted"
        );
    }

    #[test]
    fn validity_is_counted_per_attempt_and_the_node_redlock_mutant_counts_from_the_first() {
        // Masters 0-2 hold another client's keys for 11 s; attempts are 6 s apart (the random
        // delay): the first two find them taken, the third (12 s after the first) is free.
        for mutant in [false, true] {
            let mut bench = Bench::new(5);
            for master in 0..3 {
                bench.masters[master].apply(&RedisCommand::set_nx_px("lock", "other", 11_000), 1_000);
            }
            let config = RedlockConfig {
                retry_delay_max_ms: 6_000,
                mutants: RedlockMutants {
                    validity_from_first_attempt: mutant,
                    extend_ignores_validity: false,
                },
                ..config()
            };
            let output = bench.run(&config, &mut RedlockAcquireMachine::new("lock", "a"));
            match (mutant, output) {
                (false, RedlockAcquire::Acquired { .. }) => {}
                // 12 s after the first attempt's start, a 10 s TTL has no validity left by the
                // mutant's count: it takes a free lock's majority for a failure and gives up.
                (true, RedlockAcquire::NotAcquired { unanswered: 0 }) => {}
                (mutant, output) => panic!("mutant {mutant}: {output:?}"),
            }
        }
    }

    #[test]
    fn a_slow_extension_past_the_validity_fails_and_the_go_redsync_mutant_believes_it() {
        for mutant in [false, true] {
            let mut bench = Bench::new(5);
            let lease = match bench.run(&config(), &mut RedlockAcquireMachine::new("lock", "a")) {
                RedlockAcquire::Acquired { lease, .. } => lease,
                other => panic!("{other:?}"),
            };
            // Each request now takes 3 s: the round of 5 takes 15 s, longer than the TTL.
            bench.request_ms = 3_000;
            let config = RedlockConfig {
                mutants: RedlockMutants {
                    validity_from_first_attempt: false,
                    extend_ignores_validity: mutant,
                },
                ..config()
            };
            let outcome = bench.run(&config, &mut RedlockAllMasters::extend(lease));
            // When the round ends, the masters extended first have let the key go again.
            let live = bench.holders("a");
            assert!(live < config.majority(), "only {live} keys live after the slow round");
            match (mutant, outcome) {
                (false, RedlockOutcome::ExtensionFailed { .. }) => {}
                (true, RedlockOutcome::Extended { valid_until_us }) => {
                    assert!(
                        valid_until_us > bench.now_us,
                        "the mutant believes it holds a minority lock"
                    );
                }
                (mutant, outcome) => panic!("mutant {mutant}: {outcome:?}"),
            }
        }
    }

    #[test]
    fn a_release_that_a_majority_never_answers_is_unconfirmed() {
        let mut bench = Bench::new(5);
        let lease = match bench.run(&config(), &mut RedlockAcquireMachine::new("lock", "a")) {
            RedlockAcquire::Acquired { lease, .. } => lease,
            other => panic!("{other:?}"),
        };
        bench.down = vec![0, 2, 4];
        assert_eq!(
            bench.run(&config(), &mut RedlockAllMasters::release(lease)),
            RedlockOutcome::ReleaseUnconfirmed { unanswered: 3 },
            "three of five masters may still hold the key: the lock is not free"
        );
        assert_eq!(bench.holders("a"), 3);
    }

    #[test]
    fn release_deletes_our_key_on_every_master_that_answers() {
        let mut bench = Bench::new(5);
        let lease = match bench.run(&config(), &mut RedlockAcquireMachine::new("lock", "a")) {
            RedlockAcquire::Acquired { lease, .. } => lease,
            other => panic!("{other:?}"),
        };
        bench.down = vec![4];
        assert_eq!(
            bench.run(&config(), &mut RedlockAllMasters::release(lease)),
            RedlockOutcome::Released {
                deleted: 4,
                unanswered: 1
            }
        );
        assert_eq!(
            bench.holders("a"),
            1,
            "the master that did not answer keeps it until its TTL"
        );
    }
}
