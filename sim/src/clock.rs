//! A clock per simulated node. madsim has one global clock; skew is ours to build.
//!
//! A node's clock reads `epoch + elapsed·(1 + drift) + offset + jumps so far`, where `elapsed`
//! is madsim's simulated time since the run began. Sleeps go through the clock too: a sleep of
//! `d` on a clock that runs fast by `drift` lasts `d / (1 + drift)` of global time, so drift
//! affects timers (renewal, polling, backoff). Jumps (NTP steps) move readings only, as they
//! would move the wall clock Cassandra reads while monotonic timers carry on. A per-reading
//! error (`error_us`, the `--clock-error-ms` knob) is added to each `now_us` reading only, so
//! two readings in a row may go backwards; timers are not affected. The error may have a heavy
//! tail (`error_tail_us` with probability `error_tail_ppm`): most readings close, a few far
//! off, as a clock read over a congested path or a bad NTP sample gives.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use cassalock::Clock;
use tokio::time::Instant;

/// Microseconds at which every simulated clock starts (14 Nov 2023), far from zero, so that
/// negative offsets stay positive readings.
pub const EPOCH_US: u64 = 1_700_000_000_000_000;

/// How one node's clock departs from global time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClockSpec {
    pub offset_us: i64,
    /// Parts per million faster (positive) or slower (negative) than global time.
    pub drift_ppm: i64,
    /// (global ms since the run began, step in µs), in time order. A negative step is a
    /// backward jump.
    pub jumps: Vec<(u64, i64)>,
    /// Every reading through [`Clock::now_us`] is off by an error drawn uniformly from
    /// `-error_us..=error_us` (madsim's seeded generator), independently per reading: a clock
    /// read over a noisy source. 0: exact readings, and no draw.
    pub error_us: u64,
    /// The error's tail: with probability `error_tail_ppm` per million, a reading's error is
    /// drawn from `-error_tail_us..=error_tail_us` instead of `error_us`'s range (a mixture of
    /// two uniform errors). 0 ppm: no tail, and no draw for it.
    pub error_tail_us: u64,
    pub error_tail_ppm: u32,
}

/// A clock no run should have: running backwards or more than twice as fast, or more than a
/// day away from true time.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClockSpecError {
    #[error("drift_ppm = {0}: give -999999 to 1000000 (a clock cannot run backwards)")]
    Drift(i64),
    #[error("{key} = {value}: give at most a day ({DAY_US} µs) either way")]
    TooFar { key: &'static str, value: i64 },
    #[error("jumps.at_ms = {0}: give 0 to 3600000 (one simulated hour)")]
    JumpTime(u64),
    #[error("error_tail_ppm = {0}: give 0 to 1000000 (a probability in parts per million)")]
    TailPpm(u32),
}

/// A day in microseconds: the farthest a clock of a scenario may be from true time.
pub const DAY_US: i64 = 86_400_000_000;

impl ClockSpec {
    /// The settings a clock of a scenario may have ([`ClockSpecError`]); [`SimClock::new`]
    /// refuses a backward clock outright.
    pub fn check(&self) -> Result<(), ClockSpecError> {
        if !(-999_999..=1_000_000).contains(&self.drift_ppm) {
            return Err(ClockSpecError::Drift(self.drift_ppm));
        }
        if self.error_tail_ppm > 1_000_000 {
            return Err(ClockSpecError::TailPpm(self.error_tail_ppm));
        }
        let error = i64::try_from(self.error_us).unwrap_or(i64::MAX);
        let tail = i64::try_from(self.error_tail_us).unwrap_or(i64::MAX);
        let far = [
            ("offset_us", self.offset_us),
            ("error_us", error),
            ("error_tail_us", tail),
        ]
        .into_iter()
        .chain(self.jumps.iter().map(|(_, step_us)| ("jumps.step_us", *step_us)));
        for (key, value) in far {
            if value.checked_abs().is_none_or(|abs| abs > DAY_US) {
                return Err(ClockSpecError::TooFar { key, value });
            }
        }
        if let Some((at_ms, _)) = self.jumps.iter().find(|(at_ms, _)| *at_ms > 3_600_000) {
            return Err(ClockSpecError::JumpTime(*at_ms));
        }
        Ok(())
    }

    /// `node`'s clock as an event record's header says it (`None`: it reads simulated time).
    pub fn to_record(&self, node: &str) -> Option<cassalock_judge::event::NodeClock> {
        (*self != ClockSpec::default()).then(|| cassalock_judge::event::NodeClock {
            node: node.to_owned(),
            offset_us: self.offset_us,
            drift_ppm: self.drift_ppm,
            jumps: self
                .jumps
                .iter()
                .map(|&(at_ms, step_us)| cassalock_judge::event::ClockJump { at_ms, step_us })
                .collect(),
            error_us: self.error_us,
            error_tail_us: self.error_tail_us,
            error_tail_ppm: self.error_tail_ppm,
        })
    }

    /// The clock an event record's header gives a node.
    pub fn from_record(clock: &cassalock_judge::event::NodeClock) -> ClockSpec {
        ClockSpec {
            offset_us: clock.offset_us,
            drift_ppm: clock.drift_ppm,
            jumps: clock.jumps.iter().map(|jump| (jump.at_ms, jump.step_us)).collect(),
            error_us: clock.error_us,
            error_tail_us: clock.error_tail_us,
            error_tail_ppm: clock.error_tail_ppm,
        }
    }

    /// How far this clock reads ahead of global time (negative: behind) at a global elapsed
    /// time: the offset, the drift so far and the jumps so far, without the per-reading error.
    /// [`SimClock::reading_at`] is global time plus this; the timeline draws it.
    pub fn ahead_us_at(&self, elapsed: Duration) -> i64 {
        let elapsed_us = elapsed.as_micros() as i64;
        let elapsed_ms = elapsed.as_millis() as u64;
        let jumped: i64 = self
            .jumps
            .iter()
            .filter(|(at, _)| *at <= elapsed_ms)
            .map(|(_, step)| step)
            .sum();
        elapsed_us * self.drift_ppm / 1_000_000 + self.offset_us + jumped
    }
}

/// A node's clock.
#[derive(Clone)]
pub struct SimClock {
    spec: Arc<ClockSpec>,
    start: Instant,
    /// madsim's clock, read directly: `Instant::now()` reaches the same reading through the
    /// C library's `clock_gettime`, which madsim overrides, and a look-up of the runtime per
    /// call (a tenth of a sweep's time went there). `None` outside a runtime.
    time: Option<madsim::time::TimeHandle>,
}

impl std::fmt::Debug for SimClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimClock")
            .field("spec", &self.spec)
            .field("start", &self.start)
            .finish()
    }
}

impl SimClock {
    pub fn new(spec: ClockSpec, start: Instant) -> Self {
        assert!(spec.drift_ppm > -1_000_000, "a clock cannot run backwards");
        SimClock {
            spec: Arc::new(spec),
            start,
            time: madsim::time::TimeHandle::try_current(),
        }
    }

    /// Global simulated time since the run began (what `start.elapsed()` reads).
    fn elapsed(&self) -> Duration {
        match &self.time {
            Some(time) => time.now_instant().saturating_duration_since(self.start),
            None => self.start.elapsed(),
        }
    }

    pub fn spec(&self) -> &ClockSpec {
        &self.spec
    }

    /// The reading at a global elapsed time.
    pub fn reading_at(&self, elapsed: Duration) -> u64 {
        let elapsed_us = elapsed.as_micros() as i64;
        (EPOCH_US as i64 + elapsed_us + self.spec.ahead_us_at(elapsed)).max(0) as u64
    }
}

impl Clock for SimClock {
    fn now_us(&self) -> u64 {
        let exact = self.reading_at(self.elapsed());
        if self.spec.error_us == 0 && self.spec.error_tail_ppm == 0 {
            return exact;
        }
        use rand::Rng;
        let mut rng = madsim::rand::thread_rng();
        // Without a tail, one draw a reading (the draws of runs without one stay as they were).
        let in_tail = self.spec.error_tail_ppm > 0 && rng.gen_range(0..1_000_000) < self.spec.error_tail_ppm;
        let bound_us = if in_tail {
            self.spec.error_tail_us
        } else {
            self.spec.error_us
        };
        if bound_us == 0 {
            return exact;
        }
        let bound = i64::try_from(bound_us).unwrap_or(i64::MAX);
        let error = rng.gen_range(-bound..=bound);
        exact.saturating_add_signed(error)
    }

    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send {
        let global_us = (ms as i128 * 1000 * 1_000_000 / (1_000_000 + self.spec.drift_ppm as i128)).max(0) as u64;
        tokio::time::sleep(Duration::from_micros(global_us))
    }
}

/// The most 1 ms steps spent correcting an estimate of when a clock passes a reading.
const MAX_STEPS: u32 = 100_000;

/// The first global instant at or after `from` (and at most `end`) at which `clock` reads
/// `valid_until_us` or more.
pub fn clock_passes(clock: &SimClock, from: Duration, valid_until_us: u64, end: Duration) -> Duration {
    let reading = |at: Duration| clock.reading_at(at);
    if reading(from) >= valid_until_us {
        return from;
    }
    // A clock that keeps pace passes it exactly this far on; drift and jumps are corrected
    // 1 ms at a time.
    let mut at = from + Duration::from_micros(valid_until_us - reading(from));
    let step = Duration::from_millis(1);
    for _ in 0..MAX_STEPS {
        if at >= end || reading(at) >= valid_until_us {
            break;
        }
        at += step;
    }
    for _ in 0..MAX_STEPS {
        match at.checked_sub(step) {
            Some(earlier) if earlier >= from && reading(earlier) >= valid_until_us => at = earlier,
            _ => break,
        }
    }
    at.min(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_drift_and_jumps_shape_the_reading() {
        madsim::runtime::Runtime::new().block_on(async {
            let start = Instant::now();
            let spec = ClockSpec {
                offset_us: -5_000_000,
                drift_ppm: 100_000, // 10% fast
                jumps: vec![(2_000, 1_000_000)],
                ..ClockSpec::default()
            };
            let clock = SimClock::new(spec, start);
            assert_eq!(clock.reading_at(Duration::ZERO), EPOCH_US - 5_000_000);
            assert_eq!(
                clock.reading_at(Duration::from_secs(1)),
                EPOCH_US - 5_000_000 + 1_100_000
            );
            assert_eq!(
                clock.reading_at(Duration::from_secs(2)),
                EPOCH_US - 5_000_000 + 2_200_000 + 1_000_000
            );
            // A 1100 ms sleep on a clock 10% fast lasts 1000 ms of global time.
            clock.sleep_ms(1100).await;
            assert_eq!(start.elapsed().as_millis(), 1000);
        });
    }

    #[test]
    fn a_per_reading_error_stays_within_its_bound_and_varies() {
        madsim::runtime::Runtime::new().block_on(async {
            let start = Instant::now();
            let clock = SimClock::new(
                ClockSpec {
                    error_us: 50_000,
                    ..ClockSpec::default()
                },
                start,
            );
            let readings: Vec<u64> = (0..200).map(|_| clock.now_us()).collect();
            assert!(readings.iter().all(|r| r.abs_diff(EPOCH_US) <= 50_000));
            assert!(readings.iter().any(|r| *r < EPOCH_US) && readings.iter().any(|r| *r > EPOCH_US));
            assert_eq!(
                clock.reading_at(Duration::ZERO),
                EPOCH_US,
                "the exact reading has no error"
            );
        });
    }

    #[test]
    fn a_heavy_tailed_error_puts_its_share_of_readings_in_the_tail_and_no_further() {
        madsim::runtime::Runtime::new().block_on(async {
            let start = Instant::now();
            let clock = SimClock::new(
                ClockSpec {
                    error_us: 1_000,
                    error_tail_us: 500_000,
                    error_tail_ppm: 100_000, // 10%
                    ..ClockSpec::default()
                },
                start,
            );
            const READINGS: usize = 20_000;
            let errors: Vec<u64> = (0..READINGS).map(|_| clock.now_us().abs_diff(EPOCH_US)).collect();
            assert!(errors.iter().all(|e| *e <= 500_000), "beyond the tail's bound");
            // A tail reading is within the body's ±1 ms with probability 1/500: nearly every
            // reading past 1 ms is a tail reading, and about 10% of readings are.
            let far = errors.iter().filter(|e| **e > 1_000).count();
            assert!(
                (1_700..=2_300).contains(&far),
                "{far} of {READINGS} readings in the tail"
            );
            assert!(errors.iter().any(|e| *e > 400_000), "the tail reaches far");
            // No tail: no reading past the body's bound.
            let plain = SimClock::new(
                ClockSpec {
                    error_us: 1_000,
                    error_tail_us: 500_000,
                    ..ClockSpec::default()
                },
                start,
            );
            assert!((0..2_000).all(|_| plain.now_us().abs_diff(EPOCH_US) <= 1_000));
        });
    }

    #[test]
    fn a_tail_probability_above_one_is_refused() {
        let spec = ClockSpec {
            error_tail_us: 1_000,
            error_tail_ppm: 1_000_001,
            ..ClockSpec::default()
        };
        assert_eq!(spec.check(), Err(ClockSpecError::TailPpm(1_000_001)));
    }
}
