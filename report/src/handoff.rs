//! The fair lock's goal, in the simulator: the queue lock's faster handoffs against the old lock
//! at 16 lockers. The workload, the variants and the goal are defined here once, for the
//! fairness report's section and for `cassalock bench handoff`.
//!
//! The workload is the fairness report's open-ended one (every locker acquires again at once
//! for a fixed simulated time), not `sim`'s fixed count of acquisitions per client: with a
//! fixed count every locker ends with the same share, and Jain's index is 1 whatever the lock
//! did. Hold 10 ms, no think time, TTL 10 s (renewal every 5 s), as `cassalock real` is run for
//! the same comparison on the real cluster. Two latencies a message: the simulator's default
//! (1..10 ms) and the floor (1..2 us), where a request is cheap against the hold.

use std::time::Duration;

use cassalock::driver::Algorithm;
use cassalock_sim::scenario::{fairness, ClientMode, FairnessParams, RunConfig};

/// How many lockers contend.
pub const LOCKERS: usize = 16;
pub const HOLD_MS: u64 = 10;
pub const TTL_S: u32 = 10;
pub const RENEW_EVERY_MS: u64 = 5000;
/// Simulated time each run keeps every locker acquiring.
pub const RUN_SIMULATED: Duration = Duration::from_secs(60);
/// The next-in-line poll of the faster variants (as `bench real`'s `queue-next-in-line`).
pub const NEXT_POLL_MS: u64 = 5;
/// The goal: at least this many times the old lock's throughput ...
pub const GOAL_THROUGHPUT_RATIO: f64 = 2.0;
/// ... at Jain's index at least this (the mean over the seeds) ...
pub const GOAL_JAIN: f64 = 0.99;
/// ... with no more store requests an acquisition than the old lock.
pub const GOAL_REQUEST_RATIO: f64 = 1.0;

/// A lock variant compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HandoffVariant {
    /// The old (shadow-row) lock.
    Old,
    /// The queue lock as listed: every waiter reads the head every `poll_ms`.
    Queue,
    /// The waiter next in line polls every [`NEXT_POLL_MS`] (`Settings::next_poll_ms`).
    NextInLine,
    /// The same, and the others sleep by rank and pace (`Settings::paced_poll`).
    Paced,
}

/// Every variant, the old lock (the yardstick) first.
pub const HANDOFF_VARIANTS: [HandoffVariant; 4] = [
    HandoffVariant::Old,
    HandoffVariant::Queue,
    HandoffVariant::NextInLine,
    HandoffVariant::Paced,
];

/// Latencies a message: a label, and `--message-latency-us` (`None`: the default 1..10 ms).
pub const HANDOFF_LATENCIES: [(&str, Option<(u64, u64)>); 2] = [
    ("1..10 ms a message (the default)", None),
    ("1..2 us a message (the floor)", Some((1, 2))),
];

impl HandoffVariant {
    pub fn name(self) -> &'static str {
        match self {
            HandoffVariant::Old => "old",
            HandoffVariant::Queue => "queue (listing's poll)",
            HandoffVariant::NextInLine => "next in line every 5 ms",
            HandoffVariant::Paced => "paced, next in line 5 ms",
        }
    }

    /// One run of the workload with this variant at `latency_us` a message.
    pub fn config(self, latency_us: Option<(u64, u64)>, seed: u64) -> RunConfig {
        let params = FairnessParams {
            algorithm: if self == HandoffVariant::Old {
                Algorithm::Old
            } else {
                Algorithm::Queue
            },
            mode: ClientMode::GetLock,
            threads: LOCKERS,
            skew_ms: 0,
            global_time: false,
            hold_ms: (HOLD_MS, HOLD_MS),
            think_ms: (0, 0),
            duration: RUN_SIMULATED,
        };
        let mut config = fairness(&params, seed);
        config.ttl_s = TTL_S;
        config.renew_every_ms = RENEW_EVERY_MS;
        config.next_poll_ms =
            matches!(self, HandoffVariant::NextInLine | HandoffVariant::Paced).then_some(NEXT_POLL_MS);
        config.paced_poll = self == HandoffVariant::Paced;
        config.cluster.message_latency_us = latency_us;
        config
    }
}

/// The figures the goal names, for one variant at one latency.
#[derive(Clone, Copy, Debug)]
pub struct GoalFigures {
    pub throughput: f64,
    /// Mean over the seeds (NaN without acquisitions).
    pub jain: f64,
    pub requests_per_acquisition: f64,
}

/// "met (...)", or "not met: " and each figure that misses.
pub fn judge(candidate: GoalFigures, old: GoalFigures) -> String {
    let throughput = candidate.throughput / old.throughput.max(f64::MIN_POSITIVE);
    let requests = candidate.requests_per_acquisition / old.requests_per_acquisition.max(f64::MIN_POSITIVE);
    let jain = candidate.jain;
    let mut misses = Vec::new();
    if throughput.is_nan() || throughput < GOAL_THROUGHPUT_RATIO {
        misses.push(format!("throughput {throughput:.2}x < {GOAL_THROUGHPUT_RATIO}x"));
    }
    // NaN (no acquisition at all) misses too.
    if jain.is_nan() || jain < GOAL_JAIN {
        misses.push(format!("Jain {jain:.3} < {GOAL_JAIN}"));
    }
    if requests.is_nan() || requests > GOAL_REQUEST_RATIO {
        misses.push(format!("requests {requests:.2}x > {GOAL_REQUEST_RATIO}x"));
    }
    if misses.is_empty() {
        format!("met ({throughput:.2}x the throughput, Jain {jain:.3}, {requests:.2}x the requests)")
    } else {
        format!("not met: {}", misses.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(throughput: f64, requests_per_acquisition: f64, jain: f64) -> GoalFigures {
        GoalFigures {
            throughput,
            jain,
            requests_per_acquisition,
        }
    }

    #[test]
    fn the_goal_names_each_figure_that_misses_it() {
        let old = figures(10.0, 10.0, 0.5);
        assert!(judge(figures(20.0, 10.0, 0.995), old).starts_with("met"));
        let slow = judge(figures(19.9, 10.0, 0.995), old);
        assert!(slow.contains("throughput 1.99x") && !slow.contains("Jain"), "{slow}");
        let unfair = judge(figures(30.0, 9.0, 0.98), old);
        assert!(
            unfair.contains("Jain 0.980") && !unfair.contains("throughput"),
            "{unfair}"
        );
        // The old lock made 10 requests an acquisition; 10.5 is too many, however fast.
        let costly = judge(figures(30.0, 10.5, 1.0), old);
        assert!(
            costly.contains("requests 1.05x") && !costly.contains("throughput"),
            "{costly}"
        );
        let nothing = judge(figures(0.0, f64::NAN, f64::NAN), old);
        assert!(
            nothing.contains("throughput 0.00x") && nothing.contains("Jain NaN"),
            "{nothing}"
        );
    }

    #[test]
    fn every_variant_runs_the_workload_the_goal_names() {
        for variant in HANDOFF_VARIANTS {
            let config = variant.config(Some((1, 2)), 3);
            assert_eq!(config.clients, LOCKERS);
            assert_eq!(config.hold_ms, (HOLD_MS, HOLD_MS));
            assert_eq!(config.think_ms, (0, 0));
            assert_eq!((config.ttl_s, config.renew_every_ms), (TTL_S, RENEW_EVERY_MS));
            assert!(config.open_ended);
            assert_eq!(config.max_sim, RUN_SIMULATED);
            assert_eq!(config.cluster.message_latency_us, Some((1, 2)));
            assert_eq!(config.algorithm == Algorithm::Old, variant == HandoffVariant::Old);
            assert_eq!(
                config.next_poll_ms.is_some(),
                matches!(variant, HandoffVariant::NextInLine | HandoffVariant::Paced)
            );
            assert_eq!(config.paced_poll, variant == HandoffVariant::Paced);
        }
    }
}
