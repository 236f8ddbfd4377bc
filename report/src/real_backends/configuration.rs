//! The runs grouped by configuration (lock x lockers), and the figures read from a
//! configuration's repeated runs.

use cassalock_real::{Family, Lock, Summary};

use super::text::f;

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
fn median(values: &[f64]) -> f64 {
    cassalock_judge::stats::percentile(values, 50)
}

/// The lock's backend, when its name is one of ours.
pub(super) fn backend_of(lock: &str) -> Option<Family> {
    Lock::titled(lock).map(Lock::family)
}

/// One configuration (lock x lockers) and its repeated runs, in run order.
pub(super) struct Configuration<'a> {
    pub(super) variant: &'a str,
    pub(super) lockers: usize,
    pub(super) runs: Vec<&'a Summary>,
}

impl Configuration<'_> {
    /// A figure's values over the runs that made at least one acquisition (a run without any
    /// has no wait or requests per acquisition).
    pub(super) fn values(&self, value: &dyn Fn(&Summary) -> f64) -> Vec<f64> {
        self.runs
            .iter()
            .filter(|r| r.acquisitions > 0)
            .map(|r| value(r))
            .filter(|v| v.is_finite())
            .collect()
    }

    pub(super) fn median(&self, value: &dyn Fn(&Summary) -> f64) -> f64 {
        median(&self.values(value))
    }

    /// "median (min-max)", or the one value when there is one run.
    pub(super) fn spread(&self, value: &dyn Fn(&Summary) -> f64, digits: usize) -> String {
        let values = self.values(value);
        if values.is_empty() {
            return "-".into();
        }
        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if values.len() == 1 {
            f(values[0], digits)
        } else {
            format!(
                "{} ({}-{})",
                f(median(&values), digits),
                f(low, digits),
                f(high, digits)
            )
        }
    }

    /// The widest spread of a figure, as (max - min) / median.
    pub(super) fn relative_range(&self, value: &dyn Fn(&Summary) -> f64) -> f64 {
        let values = self.values(value);
        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (high - low) / median(&values)
    }

    pub(super) fn acquired_nothing(&self) -> bool {
        self.runs.iter().all(|r| r.acquisitions == 0)
    }
}

/// The runs grouped by configuration: lock by lock in the order the locks first ran, lockers
/// ascending.
pub(super) fn configurations(runs: &[Summary]) -> Vec<Configuration<'_>> {
    let mut groups: Vec<Configuration<'_>> = Vec::new();
    for run in runs {
        match groups
            .iter_mut()
            .find(|g| g.variant == run.variant && g.lockers == run.lockers)
        {
            Some(group) => group.runs.push(run),
            None => groups.push(Configuration {
                variant: &run.variant,
                lockers: run.lockers,
                runs: vec![run],
            }),
        }
    }
    let order = lock_names(&groups);
    groups.sort_by_key(|g| (order.iter().position(|n| *n == g.variant), g.lockers));
    groups
}

/// The locks of `groups`, each once, in the order they appear.
pub(super) fn lock_names<'a>(groups: &[Configuration<'a>]) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for g in groups {
        if !names.contains(&g.variant) {
            names.push(g.variant);
        }
    }
    names
}
