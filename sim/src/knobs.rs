//! Knobs: what a user may vary in a run without editing code.
//!
//! A named scenario fixes a base plan; every knob that is set overrides the scenario's value.
//! The command line (`cassalock sim --ttl-s 10 ...`) and scenario files (TOML, same names in
//! snake_case) fill the same [`Knobs`]. Each knob is checked on its own ([`Knobs::check`]) and
//! then, once applied, the whole run is checked against the library's own rules
//! (`Settings::validate`: TTL, renewal at most every TTL/2, intervals not zero) and the
//! simulator's limits ([`check_run`]). A refusal is a [`KnobError`] that names the knob, its
//! value and the rule it breaks; nothing runs.
//!
//! Every random draw a knob adds comes from the seed (madsim's generator inside the run, the
//! plan's ChaCha generator for the plan), and only when the knob is set: a run without knobs
//! draws exactly what it drew before they existed.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use cassalock::driver::SettingsError;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::cluster::Network;
use crate::config::{FaultKind, LockOrder, LongHold, RunConfig};

/// The most clients a run may have (their addresses are 10.0.1.1 ..; the fairness report's
/// largest run has 32).
pub const MAX_CLIENTS: usize = 64;
/// The most acquisitions per client.
pub const MAX_ACQUISITIONS: u32 = 10_000;
/// The most retries of one store request.
pub const MAX_RETRIES: u8 = 20;
/// The longest timeout or backoff a knob may set: a minute.
pub const MAX_TIMEOUT_MS: u64 = 60_000;
/// The most locks one acquisition takes.
pub const MAX_LOCKS: usize = 16;
/// The largest per-read clock error.
pub const MAX_CLOCK_ERROR_MS: u64 = 60_000;
/// The largest latency of one simulated message, microseconds (10 s).
pub const MAX_MESSAGE_LATENCY_US: u64 = 10_000_000;
/// The largest backward clock jump: a day.
pub const MAX_BACKWARD_JUMP_S: f64 = 86_400.0;

/// A range of milliseconds, `LO..HI` with both ends included (`LO..=HI` is accepted too), or
/// one value `N` meaning `N..N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsRange {
    pub lo: u64,
    pub hi: u64,
}

impl MsRange {
    pub fn pair(self) -> (u64, u64) {
        (self.lo, self.hi)
    }
}

/// A knob's number that is not a whole number it can take, in words a user can act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadNumber {
    #[error("{0} is negative; the knob takes a whole number (its lower bound is checked next)")]
    Negative(String),
    #[error("{0:?} is not a whole number")]
    NotANumber(String),
    #[error("{text} is too large (it overflows a {bits}-bit number)")]
    TooLarge { text: String, bits: usize },
}

/// Parse a whole number for a knob, saying what is wrong in words a user can act on.
pub fn whole<T: FromStr + TryFrom<u128>>(text: &str) -> Result<T, BadNumber> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(BadNumber::Negative(text.to_owned()));
    }
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BadNumber::NotANumber(text.to_owned()));
    }
    let too_large = || BadNumber::TooLarge {
        text: text.to_owned(),
        bits: std::mem::size_of::<T>() * 8,
    };
    let value: u128 = text.parse().map_err(|_| too_large())?;
    T::try_from(value).map_err(|_| too_large())
}

/// A knob's range that is not `LO..HI` of whole numbers with LO <= HI.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadRange {
    #[error("LO: {0} (write LO..HI, whole numbers in the unit the knob names)")]
    Lo(BadNumber),
    #[error("HI: {0} (write LO..HI, whole numbers in the unit the knob names)")]
    Hi(BadNumber),
    #[error("LO {lo} is above HI {hi}; write LO..HI with LO <= HI")]
    Reversed { lo: u64, hi: u64 },
}

impl FromStr for MsRange {
    type Err = BadRange;

    fn from_str(text: &str) -> Result<Self, BadRange> {
        let (lo, hi) = match text.split_once("..") {
            Some((lo, hi)) => (lo, hi.strip_prefix('=').unwrap_or(hi)),
            None => (text, text),
        };
        let lo: u64 = whole(lo).map_err(BadRange::Lo)?;
        let hi: u64 = whole(hi).map_err(BadRange::Hi)?;
        if lo > hi {
            return Err(BadRange::Reversed { lo, hi });
        }
        Ok(MsRange { lo, hi })
    }
}

impl fmt::Display for MsRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.lo, self.hi)
    }
}

/// In a scenario file: `"LO..HI"` or a whole number.
impl<'de> serde::Deserialize<'de> for MsRange {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = MsRange;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a range \"LO..HI\" or a whole number, in the unit the knob names")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<MsRange, E> {
                text.parse().map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<MsRange, E> {
                Ok(MsRange { lo: value, hi: value })
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<MsRange, E> {
                u64::try_from(value)
                    .map(|value| MsRange { lo: value, hi: value })
                    .map_err(|_| {
                        E::custom(format!(
                            "{value} is negative; the knob takes a whole number (its lower bound is checked next)"
                        ))
                    })
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Every knob; `None`: the scenario's value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Knobs {
    /// TTL of the lock cells, whole seconds.
    pub ttl_s: Option<u32>,
    /// How often a holder renews.
    pub renew_every_ms: Option<u64>,
    /// How often a waiter polls.
    pub poll_ms: Option<u64>,
    /// How often the queue lock's next-in-line waiter polls.
    pub next_poll_ms: Option<u64>,
    /// With `next_poll_ms`: the queue lock's waiters sleep by rank and the queue's pace.
    pub paced_poll: Option<bool>,
    /// Each client's acquisitions reuse thread ids (`Settings::reuse_thread_ids`).
    pub reuse_thread_ids: Option<bool>,
    /// The queue lock reads the queue from its last hold's column
    /// (`Settings::queue_read_from_last_hold`).
    pub queue_read_from_last_hold: Option<bool>,
    /// Give up an acquisition after this long (the library's `max_wait_ms`).
    pub max_wait_ms: Option<u64>,
    /// Retries of one failed store request (the library's retry policy).
    pub retries: Option<u8>,
    /// Sleep before each retry.
    pub retry_backoff_ms: Option<u64>,
    /// The client gives up waiting for the coordinator after this long.
    pub request_timeout_ms: Option<u64>,
    /// The coordinator gives up waiting for replicas' read answers after this long.
    pub read_timeout_ms: Option<u64>,
    /// The coordinator gives up waiting for replicas' write acknowledgements after this long.
    pub write_timeout_ms: Option<u64>,
    pub clients: Option<usize>,
    pub acquisitions: Option<u32>,
    /// Critical-section length, uniform in the range.
    pub hold_ms: Option<MsRange>,
    /// Pause between a release and the next acquisition.
    pub think_ms: Option<MsRange>,
    /// A long operation: with `long_hold_percent`, the hold is drawn from here instead.
    pub long_hold_ms: Option<MsRange>,
    pub long_hold_percent: Option<f64>,
    /// Each store call of a lock client fails before it is applied (Unavailable) with this
    /// probability.
    pub fail_before_apply_percent: Option<f64>,
    /// Each store call of a lock client is applied but its reply is lost (the client times out)
    /// with this probability.
    pub fail_after_apply_percent: Option<f64>,
    /// Every clock reading of a client is off by an error uniform in ±this.
    pub clock_error_ms: Option<u64>,
    /// Each client's clock is off by a constant offset drawn from the seed, uniform in ±this.
    pub clock_offset_ms: Option<u64>,
    /// With `clock_error_tail_percent`: that share of the readings is off by an error uniform
    /// in ±this instead of `clock_error_ms`'s (a heavy tail).
    pub clock_error_tail_ms: Option<u64>,
    pub clock_error_tail_percent: Option<f64>,
    /// One node's clock (drawn from the seed) steps back this far at a time drawn from the seed.
    pub backward_jump_s: Option<f64>,
    /// Every acquisition takes this many locks (`shared-0`, `shared-1`, ...), one after the
    /// other, holds them all, and releases them in the reverse order.
    pub locks: Option<usize>,
    /// The order a client takes its locks in.
    pub lock_order: Option<LockOrder>,
    /// One message's latency on the simulated network, uniform in the range, microseconds.
    pub message_latency_us: Option<MsRange>,
    /// Which network carries the cluster's messages.
    pub network: Option<Network>,
}

impl fmt::Display for LockOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LockOrder::Fixed => "fixed",
            LockOrder::Random => "random",
            LockOrder::One => "one",
        })
    }
}

/// In a scenario file: `"fixed"`, `"random"` or `"one"`.
impl<'de> serde::Deserialize<'de> for LockOrder {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A knob refused: which one, its value, the rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{knob} = {value}: {rule}")]
pub struct KnobError {
    /// The knob's name in snake_case (the flag is `--` and the name in kebab-case).
    pub knob: &'static str,
    pub value: String,
    pub rule: String,
}

fn refuse(knob: &'static str, value: impl fmt::Display, rule: impl Into<String>) -> KnobError {
    KnobError {
        knob,
        value: value.to_string(),
        rule: rule.into(),
    }
}

/// A percentage: finite, in 0..=100 (`below_100`: 100 itself refused).
fn check_percent(knob: &'static str, value: Option<f64>, below_100: bool) -> Result<(), KnobError> {
    let Some(value) = value else { return Ok(()) };
    if !value.is_finite() || !(0.0..=100.0).contains(&value) {
        return Err(refuse(knob, value, "a percentage must be between 0 and 100"));
    }
    if below_100 && value >= 100.0 {
        return Err(refuse(
            knob,
            value,
            "at 100% no store request would ever succeed and the run could only time out; use less than 100",
        ));
    }
    Ok(())
}

fn check_between(knob: &'static str, value: Option<u64>, lo: u64, hi: u64, why: &str) -> Result<(), KnobError> {
    match value {
        Some(value) if value < lo || value > hi => Err(refuse(knob, value, format!("must be in {lo}..={hi} ({why})"))),
        _ => Ok(()),
    }
}

impl Knobs {
    /// Is any knob set?
    pub fn any(&self) -> bool {
        *self != Knobs::default()
    }

    /// Check each knob on its own (ranges, limits, knobs that need each other). Rules that
    /// involve the scenario's values are checked by [`check_run`] once the knobs are applied.
    pub fn check(&self, max_sim: Duration) -> Result<(), KnobError> {
        let max_sim_ms = u64::try_from(max_sim.as_millis()).unwrap_or(u64::MAX);
        let within_run = format!("the run stops after {} s of simulated time", max_sim.as_secs());
        check_between(
            "poll_ms",
            self.poll_ms,
            1,
            max_sim_ms,
            &format!("0 would poll in a busy loop; {within_run}"),
        )?;
        check_between(
            "next_poll_ms",
            self.next_poll_ms,
            1,
            max_sim_ms,
            &format!("0 would poll in a busy loop; {within_run}"),
        )?;
        check_between("max_wait_ms", self.max_wait_ms, 1, max_sim_ms, &within_run)?;
        check_between(
            "retry_backoff_ms",
            self.retry_backoff_ms,
            1,
            MAX_TIMEOUT_MS,
            "0 would retry at once, in a loop",
        )?;
        if let Some(retries) = self.retries {
            if retries > MAX_RETRIES {
                return Err(refuse(
                    "retries",
                    retries,
                    format!("at most {MAX_RETRIES} retries of one request; more would look like a hang"),
                ));
            }
        }
        for (knob, value) in [
            ("request_timeout_ms", self.request_timeout_ms),
            ("read_timeout_ms", self.read_timeout_ms),
            ("write_timeout_ms", self.write_timeout_ms),
        ] {
            check_between(knob, value, 1, MAX_TIMEOUT_MS, "a timeout of 0 fails every request")?;
        }
        if let Some(clients) = self.clients {
            if clients == 0 || clients > MAX_CLIENTS {
                return Err(refuse("clients", clients, format!("must be in 1..={MAX_CLIENTS}")));
            }
        }
        if let Some(acquisitions) = self.acquisitions {
            if acquisitions == 0 || acquisitions > MAX_ACQUISITIONS {
                return Err(refuse(
                    "acquisitions",
                    acquisitions,
                    format!("must be in 1..={MAX_ACQUISITIONS}"),
                ));
            }
        }
        for (knob, range) in [
            ("hold_ms", self.hold_ms),
            ("think_ms", self.think_ms),
            ("long_hold_ms", self.long_hold_ms),
        ] {
            if let Some(range) = range {
                if range.lo > range.hi {
                    return Err(refuse(knob, range, "LO is above HI"));
                }
                if range.hi > max_sim_ms {
                    return Err(refuse(
                        knob,
                        range,
                        format!("HI is beyond the run's time limit ({max_sim_ms} ms)"),
                    ));
                }
            }
        }
        check_percent("long_hold_percent", self.long_hold_percent, false)?;
        match (self.long_hold_ms, self.long_hold_percent) {
            (Some(range), None) => {
                return Err(refuse(
                    "long_hold_ms",
                    range,
                    "needs long_hold_percent (--long-hold-percent P): how often a hold is long",
                ))
            }
            (None, Some(percent)) => {
                return Err(refuse(
                    "long_hold_percent",
                    percent,
                    "needs long_hold_ms (--long-hold-ms LO..HI): how long a long hold is",
                ))
            }
            _ => {}
        }
        check_percent("fail_before_apply_percent", self.fail_before_apply_percent, true)?;
        check_percent("fail_after_apply_percent", self.fail_after_apply_percent, true)?;
        if let (Some(before), Some(after)) = (self.fail_before_apply_percent, self.fail_after_apply_percent) {
            if before + after >= 100.0 {
                return Err(refuse(
                    "fail_after_apply_percent",
                    after,
                    format!("with fail_before_apply_percent {before}, no store request would ever succeed; keep their sum below 100"),
                ));
            }
        }
        if let Some(locks) = self.locks {
            if locks == 0 || locks > MAX_LOCKS {
                return Err(refuse("locks", locks, format!("must be in 1..={MAX_LOCKS}")));
            }
        }
        if let Some(order) = self.lock_order {
            if self.locks.unwrap_or(1) < 2 {
                return Err(refuse(
                    "lock_order",
                    order,
                    "an order needs several locks: add --locks N (2 or more)",
                ));
            }
        }
        if let Some(MsRange { lo, hi }) = self.message_latency_us {
            if lo == 0 || lo >= hi || hi > MAX_MESSAGE_LATENCY_US {
                return Err(refuse(
                    "message_latency_us",
                    format!("{lo}..{hi}"),
                    format!("give LO..HI microseconds with 1 <= LO < HI <= {MAX_MESSAGE_LATENCY_US} (madsim draws each message's latency from the half-open range)"),
                ));
            }
        }
        self.check_clocks()?;
        if let Some(jump) = self.backward_jump_s {
            if !jump.is_finite() || jump <= 0.0 || jump > MAX_BACKWARD_JUMP_S {
                return Err(refuse(
                    "backward_jump_s",
                    jump,
                    format!("the step back must be more than 0 and at most {MAX_BACKWARD_JUMP_S} s"),
                ));
            }
        }
        Ok(())
    }

    /// The clock knobs: each in range; a tail needs both its knobs.
    fn check_clocks(&self) -> Result<(), KnobError> {
        check_between(
            "clock_error_ms",
            self.clock_error_ms,
            0,
            MAX_CLOCK_ERROR_MS,
            "the error is uniform in ±this, per reading",
        )?;
        check_between(
            "clock_offset_ms",
            self.clock_offset_ms,
            0,
            MAX_CLOCK_ERROR_MS,
            "each client's offset is drawn uniform in ±this",
        )?;
        check_between(
            "clock_error_tail_ms",
            self.clock_error_tail_ms,
            0,
            MAX_CLOCK_ERROR_MS,
            "the tail's error is uniform in ±this, per reading",
        )?;
        check_percent("clock_error_tail_percent", self.clock_error_tail_percent, true)?;
        match (self.clock_error_tail_ms, self.clock_error_tail_percent) {
            (Some(tail_ms), None) => {
                return Err(refuse(
                    "clock_error_tail_ms",
                    tail_ms,
                    "needs clock_error_tail_percent (--clock-error-tail-percent P): how many readings fall in the tail",
                ))
            }
            (None, Some(percent)) => {
                return Err(refuse(
                    "clock_error_tail_percent",
                    percent,
                    "needs clock_error_tail_ms (--clock-error-tail-ms D): how far off a reading in the tail is",
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// Set the timing knobs a scenario's plan is drawn from (TTL, renewal), before the scenario
    /// draws it: the skew offset (0..=2 TTL) and the pause and cut-off lengths (TTL + ...)
    /// follow a TTL set here.
    pub(crate) fn apply_timing(&self, config: &mut RunConfig) {
        if let Some(ttl_s) = self.ttl_s {
            config.ttl_s = ttl_s;
        }
        if let Some(renew) = self.renew_every_ms {
            config.renew_every_ms = renew;
        }
    }

    /// Override the scenario's values with the knobs that are set. `rng` is the plan's
    /// generator, drawn from only for knobs that need a draw (the backward jump).
    pub(crate) fn apply(&self, config: &mut RunConfig, rng: &mut ChaCha8Rng) {
        self.apply_timing(config);
        if let Some(poll) = self.poll_ms {
            config.poll_ms = poll;
        }
        if let Some(ms) = self.next_poll_ms {
            config.next_poll_ms = Some(ms);
        }
        if let Some(paced) = self.paced_poll {
            config.paced_poll = paced;
        }
        if let Some(reuse) = self.reuse_thread_ids {
            config.reuse_thread_ids = reuse;
        }
        if let Some(from_last_hold) = self.queue_read_from_last_hold {
            config.queue_read_from_last_hold = from_last_hold;
        }
        if let Some(max_wait) = self.max_wait_ms {
            config.max_wait_ms = Some(max_wait);
        }
        if let Some(retries) = self.retries {
            config.retry.max_retries = retries;
        }
        if let Some(backoff) = self.retry_backoff_ms {
            config.retry.backoff_ms = backoff;
        }
        if let Some(ms) = self.request_timeout_ms {
            config.cluster.client_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.read_timeout_ms {
            config.cluster.read_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.write_timeout_ms {
            config.cluster.write_timeout = Duration::from_millis(ms);
        }
        if let Some(clients) = self.clients {
            set_clients(config, clients);
        }
        if let Some(acquisitions) = self.acquisitions {
            config.acquisitions = acquisitions;
        }
        if let Some(range) = self.hold_ms {
            config.hold_ms = range.pair();
        }
        if let Some(range) = self.think_ms {
            config.think_ms = range.pair();
        }
        if let (Some(range), Some(percent)) = (self.long_hold_ms, self.long_hold_percent) {
            config.long_hold = Some(LongHold {
                hold_ms: range.pair(),
                percent,
            });
        }
        if let Some(percent) = self.fail_before_apply_percent {
            config.cluster.store_faults.before_apply_ppm = percent_to_ppm(percent);
        }
        if let Some(percent) = self.fail_after_apply_percent {
            config.cluster.store_faults.after_apply_ppm = percent_to_ppm(percent);
        }
        if let Some(error_ms) = self.clock_error_ms {
            config.client_clocks.resize(config.clients, Default::default());
            for clock in &mut config.client_clocks {
                clock.error_us = error_ms * 1000;
            }
        }
        if let Some(jump_s) = self.backward_jump_s {
            backward_jump(config, jump_s, rng);
        }
        if let (Some(tail_ms), Some(percent)) = (self.clock_error_tail_ms, self.clock_error_tail_percent) {
            config.client_clocks.resize(config.clients, Default::default());
            for clock in &mut config.client_clocks {
                clock.error_tail_us = tail_ms * 1000;
                clock.error_tail_ppm = percent_to_ppm(percent);
            }
        }
        if let Some(offset_ms) = self.clock_offset_ms {
            config.client_clocks.resize(config.clients, Default::default());
            let bound_us = i64::try_from(offset_ms * 1000).unwrap_or(i64::MAX);
            for clock in &mut config.client_clocks {
                clock.offset_us = clock.offset_us.saturating_add(rng.gen_range(-bound_us..=bound_us));
            }
        }
        if let Some(locks) = self.locks {
            config.locks = locks;
        }
        if let Some(order) = self.lock_order {
            config.lock_order = order;
        }
        if let Some(range) = self.message_latency_us {
            config.cluster.message_latency_us = Some(range.pair());
        }
        if let Some(network) = self.network {
            config.cluster.network = network;
        }
    }
}

/// A percentage (0..=100) as parts per million, rounded.
pub fn percent_to_ppm(percent: f64) -> u32 {
    (percent * 10_000.0).round() as u32
}

/// The clients' count, with the plan's client faults mapped onto the clients that exist
/// (client `c` becomes `c mod clients`: a swarm plan drawn for 5 clients still fires with 2).
fn set_clients(config: &mut RunConfig, clients: usize) {
    config.clients = clients;
    config.client_clocks.truncate(clients);
    for fault in &mut config.faults {
        match &mut fault.kind {
            FaultKind::PauseClient { client, .. }
            | FaultKind::KillClient { client }
            | FaultKind::RestartClient { client }
            | FaultKind::CutOffClient { client, .. } => *client %= clients,
            _ => {}
        }
    }
}

/// One backward step of `jump_s` on one node, both drawn from the plan's generator: a client or
/// a replica, at a time in 1..15 s (early, so that even the short scenarios, contention's
/// ~10 s, see it; within the run's limit).
fn backward_jump(config: &mut RunConfig, jump_s: f64, rng: &mut ChaCha8Rng) {
    let nodes = config.clients + config.cluster.replicas;
    let node = rng.gen_range(0..nodes);
    let last_ms = u64::try_from(config.max_sim.as_millis())
        .unwrap_or(u64::MAX)
        .clamp(1_001, 15_000);
    let at_ms = rng.gen_range(1_000..last_ms);
    let step_us = -((jump_s * 1e6).round() as i64);
    let (specs, index) = if node < config.clients {
        (&mut config.client_clocks, node)
    } else {
        (&mut config.replica_clocks, node - config.clients)
    };
    if specs.len() <= index {
        specs.resize(index + 1, Default::default());
    }
    specs[index].jumps.push((at_ms, step_us));
    specs[index].jumps.sort_unstable();
}

/// Check the run as configured (the knobs applied) against the library's rules, naming the knob
/// the user set. `knobs`: what the user set, to name the right one when two take part.
pub fn check_run(config: &RunConfig, knobs: &Knobs) -> Result<(), KnobError> {
    let settings = config.settings("sim");
    let Err(error) = settings.validate() else {
        return Ok(());
    };
    let library = "(the library's rule, Settings::validate)";
    Err(match error {
        SettingsError::TtlTooShort { ttl_s } | SettingsError::TtlTooLong { ttl_s } => {
            refuse("ttl_s", ttl_s, format!("{error} {library}"))
        }
        SettingsError::TtlBelowTwoRenewals { ttl_ms, renew_every_ms } => {
            if knobs.renew_every_ms.is_some() || knobs.ttl_s.is_none() {
                refuse(
                    "renew_every_ms",
                    renew_every_ms,
                    format!(
                        "{error} {library}; with TTL {} s, renew every {} ms at most",
                        ttl_ms / 1000,
                        ttl_ms / 2
                    ),
                )
            } else {
                refuse(
                    "ttl_s",
                    ttl_ms / 1000,
                    format!(
                        "{error} {library}; with renewal every {renew_every_ms} ms the TTL must be at least {} s (or lower renew_every_ms)",
                        (renew_every_ms * 2).div_ceil(1000)
                    ),
                )
            }
        }
        SettingsError::ZeroInterval { name } => {
            let knob = match name {
                "renew_every_ms" => "renew_every_ms",
                "poll_ms" => "poll_ms",
                "max_wait_ms" => "max_wait_ms",
                "retry.backoff_ms" => "retry_backoff_ms",
                _ => "scenario",
            };
            refuse(knob, 0, format!("{error} {library}"))
        }
        SettingsError::PacedPollWithoutNextPoll => {
            refuse("paced_poll", true, format!("{error} {library}; add --next-poll-ms 5"))
        }
        SettingsError::Name(_) => refuse("scenario", config.scenario, format!("{error} {library}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_say_what_is_wrong() {
        assert_eq!("100..2000".parse::<MsRange>(), Ok(MsRange { lo: 100, hi: 2000 }));
        assert_eq!("100..=2000".parse::<MsRange>(), Ok(MsRange { lo: 100, hi: 2000 }));
        assert_eq!("5".parse::<MsRange>(), Ok(MsRange { lo: 5, hi: 5 }));
        assert!("9..3".parse::<MsRange>().unwrap_err().to_string().contains("above HI"));
        assert!("-1..3".parse::<MsRange>().unwrap_err().to_string().contains("negative"));
        assert!("0..99999999999999999999"
            .parse::<MsRange>()
            .unwrap_err()
            .to_string()
            .contains("too large"));
        assert!("a..b"
            .parse::<MsRange>()
            .unwrap_err()
            .to_string()
            .contains("not a whole number"));
        assert_eq!(MsRange { lo: 1, hi: 2 }.to_string(), "1..2");
    }

    #[test]
    fn each_knob_is_checked_on_its_own() {
        let limit = Duration::from_secs(900);
        let refused = |knobs: Knobs| knobs.check(limit).unwrap_err();
        assert_eq!(
            refused(Knobs {
                poll_ms: Some(0),
                ..Knobs::default()
            })
            .knob,
            "poll_ms"
        );
        assert_eq!(
            refused(Knobs {
                clients: Some(65),
                ..Knobs::default()
            })
            .knob,
            "clients"
        );
        let beyond = refused(Knobs {
            hold_ms: Some(MsRange { lo: 0, hi: 900_001 }),
            ..Knobs::default()
        });
        assert!(beyond.rule.contains("time limit"), "{beyond}");
        let alone = refused(Knobs {
            long_hold_percent: Some(5.0),
            ..Knobs::default()
        });
        assert_eq!(alone.knob, "long_hold_percent");
        let sum = refused(Knobs {
            fail_before_apply_percent: Some(60.0),
            fail_after_apply_percent: Some(40.0),
            ..Knobs::default()
        });
        assert!(sum.rule.contains("sum below 100"), "{sum}");
        for (lo, hi) in [(0, 5), (5, 5), (1, MAX_MESSAGE_LATENCY_US + 1)] {
            let latency = refused(Knobs {
                message_latency_us: Some(MsRange { lo, hi }),
                ..Knobs::default()
            });
            assert_eq!(latency.knob, "message_latency_us", "{lo}..{hi}");
        }
        assert!(Knobs::default().check(limit).is_ok());
        assert_eq!(percent_to_ppm(12.5), 125_000);
    }
}
