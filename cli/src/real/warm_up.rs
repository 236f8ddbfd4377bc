//! How long `bench real` warms Cassandra up before its first measured run, and when the warm-up's
//! rate has settled.

/// Seconds of unreported load on Cassandra before the first measured run, at least: the
/// warm-up goes on in stretches of [`WARM_UP_STRETCH_S`] until two in a row make rates within
/// [`WARM_UP_STEADY_WITHIN`] of each other, or [`MAX_WARM_UP_S`] have passed (a cluster just
/// started ran the old lock at 6.7 acquisitions/s for a minute or more, 2026-11-28).
pub const WARM_UP_S: u64 = 15;
#[cfg_attr(madsim, allow(dead_code))]
pub const WARM_UP_STRETCH_S: u64 = 5;
#[cfg_attr(madsim, allow(dead_code))]
pub const MAX_WARM_UP_S: u64 = 60;
const _: () = assert!(MAX_WARM_UP_S >= WARM_UP_S && WARM_UP_S % WARM_UP_STRETCH_S == 0);
/// How close two stretches' rates must be, as a share of the faster, for the warm-up to end.
#[cfg_attr(madsim, allow(dead_code))]
pub const WARM_UP_STEADY_WITHIN: f64 = 0.15;

/// Whether the warm-up's rates so far (acquisitions/s, one per stretch) have settled: the last
/// two within [`WARM_UP_STEADY_WITHIN`] of the faster (two stretches that took nothing have not).
#[cfg_attr(madsim, allow(dead_code))]
pub fn warm_up_settled(rates: &[f64]) -> bool {
    match rates {
        [.., a, b] => {
            let faster = a.max(*b);
            faster > 0.0 && (a - b).abs() <= WARM_UP_STEADY_WITHIN * faster
        }
        _ => false,
    }
}
