//! The clock knobs every lock's scenario takes (`--clock-offset-ms`, `--clock-error-ms`,
//! `--clock-error-tail-ms` with `--clock-error-tail-percent`), laid over a family scenario's
//! client clocks: the same knobs, ranges and meaning as the row locks' (`sim --help`).

use cassalock_sim::clock::ClockSpec;
use cassalock_sim::family::scenario::FamilyScenario;
use clap::Args;
use serde::{Deserialize, Serialize};

/// Clock knobs of a family scenario (each `None`: the scenario's own clocks).
#[derive(Args, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockKnobs {
    /// Each client's clock is off by a constant offset drawn from the seed, uniform in ±D ms
    /// (on top of the scenario's own).
    #[arg(long, value_name = "D")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset_ms: Option<u64>,
    /// Every clock reading of a client is off by an error uniform in ±D ms, drawn per reading.
    #[arg(long, value_name = "D")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_error_ms: Option<u64>,
    /// A heavy tail of the reading error: P percent of readings (with
    /// --clock-error-tail-percent) are off by up to ±D ms instead.
    #[arg(long, value_name = "D")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_error_tail_ms: Option<u64>,
    /// How many readings fall in the error's tail (0..100), with --clock-error-tail-ms.
    #[arg(long, value_name = "P")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_error_tail_percent: Option<f64>,
}

impl ClockKnobs {
    pub fn is_empty(&self) -> bool {
        *self == ClockKnobs::default()
    }

    /// The knobs' check, as the row locks' (ranges; a tail needs both its knobs), said with
    /// the flag's name.
    pub fn refused(&self) -> Option<String> {
        let knobs = cassalock_sim::knobs::Knobs {
            clock_offset_ms: self.clock_offset_ms,
            clock_error_ms: self.clock_error_ms,
            clock_error_tail_ms: self.clock_error_tail_ms,
            clock_error_tail_percent: self.clock_error_tail_percent,
            ..Default::default()
        };
        let error = knobs.check(std::time::Duration::from_secs(3600)).err()?;
        Some(format!(
            "--{} {}: {}",
            error.knob.replace('_', "-"),
            error.value,
            error.rule
        ))
    }

    /// The flags that set these knobs, each with a leading space.
    pub fn flags(&self) -> String {
        let mut flags = String::new();
        for (flag, value) in [
            ("--clock-offset-ms", self.clock_offset_ms.map(|ms| ms.to_string())),
            ("--clock-error-ms", self.clock_error_ms.map(|ms| ms.to_string())),
            (
                "--clock-error-tail-ms",
                self.clock_error_tail_ms.map(|ms| ms.to_string()),
            ),
            (
                "--clock-error-tail-percent",
                self.clock_error_tail_percent.map(|p| p.to_string()),
            ),
        ] {
            if let Some(value) = value {
                flags.push_str(&format!(" {flag} {value}"));
            }
        }
        flags
    }

    /// Lay the knobs over `scenario`'s client clocks; the offsets are drawn from `seed`.
    pub fn apply(&self, scenario: &mut FamilyScenario, seed: u64) {
        if self.is_empty() {
            return;
        }
        scenario.client_clocks.resize(scenario.clients, ClockSpec::default());
        for (client, clock) in scenario.client_clocks.iter_mut().enumerate() {
            if let Some(ms) = self.clock_error_ms {
                clock.error_us = ms.saturating_mul(1000);
            }
            if let (Some(ms), Some(percent)) = (self.clock_error_tail_ms, self.clock_error_tail_percent) {
                clock.error_tail_us = ms.saturating_mul(1000);
                clock.error_tail_ppm = cassalock_sim::knobs::percent_to_ppm(percent);
            }
            if let Some(ms) = self.clock_offset_ms {
                let bound_us = ms.saturating_mul(1000);
                let span = bound_us.saturating_mul(2).saturating_add(1);
                let drawn = offset_draw(seed, client as u64) % span;
                let offset_us = drawn as i64 - bound_us as i64;
                debug_assert!(offset_us.unsigned_abs() <= bound_us);
                clock.offset_us = clock.offset_us.saturating_add(offset_us);
            }
        }
    }
}

/// A number drawn for `client`'s clock offset from the run's seed (splitmix64 of the two):
/// the same seed gives the same offsets, and it takes nothing from the run's own generator.
fn offset_draw(seed: u64, client: u64) -> u64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(client.wrapping_add(1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_drawn_per_client_within_their_bound_and_repeat_with_the_seed() {
        let draw = |seed| -> Vec<u64> { (0..8).map(|client| offset_draw(seed, client) % 2001).collect() };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let distinct: std::collections::BTreeSet<u64> = draw(7).into_iter().collect();
        assert!(distinct.len() >= 7, "{distinct:?}");
    }

    #[test]
    fn a_tail_without_its_share_is_refused_naming_the_flag() {
        let knobs = ClockKnobs {
            clock_error_tail_ms: Some(300),
            ..ClockKnobs::default()
        };
        assert!(knobs
            .refused()
            .is_some_and(|said| said.starts_with("--clock-error-tail-ms 300: needs")));
        assert_eq!(ClockKnobs::default().refused(), None);
        assert_eq!(
            ClockKnobs {
                clock_offset_ms: Some(500),
                clock_error_tail_ms: Some(300),
                clock_error_tail_percent: Some(1.0),
                ..ClockKnobs::default()
            }
            .flags(),
            " --clock-offset-ms 500 --clock-error-tail-ms 300 --clock-error-tail-percent 1"
        );
    }
}
