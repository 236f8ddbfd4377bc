//! The statistics every report uses, in one place: the simulator's fairness figures and the
//! real cluster's summary compute percentiles, Jain's index and the longest run the same way.

use statrs::statistics::{Data, OrderStatistics};

/// The `p`-th percentile (0-100) of `values` (statrs' order statistics); NaN when empty.
pub fn percentile(values: &[f64], p: usize) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    Data::new(values.to_vec()).percentile(p.min(100))
}

/// Jain's fairness index of per-client shares: 1 when every client got the same, 1/n when one
/// got everything; 0 when nobody got anything.
pub fn jain(shares: &[f64]) -> f64 {
    let sum: f64 = shares.iter().sum();
    let squares: f64 = shares.iter().map(|x| x * x).sum();
    if squares == 0.0 {
        return 0.0;
    }
    sum * sum / (shares.len() as f64 * squares)
}

/// The longest stretch of equal consecutive items (the thesis's "batches" when the items are
/// the clients in acquisition order).
pub fn longest_run<T: PartialEq>(items: impl IntoIterator<Item = T>) -> u64 {
    let (mut longest, mut run, mut previous) = (0, 0, None);
    for item in items {
        run = if previous.as_ref() == Some(&item) { run + 1 } else { 1 };
        longest = longest.max(run);
        previous = Some(item);
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_for_equal_shares_and_one_over_n_when_one_takes_all() {
        assert_eq!(jain(&[3.0, 3.0, 3.0]), 1.0);
        assert!((jain(&[9.0, 0.0, 0.0]) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(jain(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn longest_run_counts_consecutive_equal_items_only() {
        assert_eq!(longest_run(["a", "a", "b", "a", "a", "a", "b"]), 3);
        assert_eq!(longest_run(Vec::<u8>::new()), 0);
    }

    #[test]
    fn percentile_of_nothing_is_not_a_number() {
        assert!(percentile(&[], 50).is_nan());
        assert_eq!(percentile(&[5.0], 99), 5.0);
    }
}
