//! Who held which lock when, on a named clock, and the one T1-belief judge: two holders'
//! intervals overlap.
//!
//! The simulator builds its intervals from its trace records (simulated time), the real runner
//! from its lockers' events (the machine's wall clock); both ask [`overlaps`] the same question.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

/// The clock a history's instants are read from. Instants of two clocks never mix: an interval
/// is typed by its clock.
pub trait TimeBase: Copy + fmt::Debug + Default + PartialEq + Eq + Hash {
    type Instant: Copy + Ord + fmt::Debug + Hash;
    /// What the instants count ("simulated time since the run began").
    const NAME: &'static str;
    /// The time from `from` to `to` (zero if `to` is earlier).
    fn between(from: Self::Instant, to: Self::Instant) -> Duration;
}

/// The simulator's clock: simulated time since the run began (the god view, not a node's clock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SimulatedTime;

impl TimeBase for SimulatedTime {
    type Instant = Duration;
    const NAME: &'static str = "simulated time since the run began";
    fn between(from: Duration, to: Duration) -> Duration {
        to.saturating_sub(from)
    }
}

/// The real runner's clock: the machine's wall clock, microseconds since the Unix epoch (every
/// locker process on the machine reads the same one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WallClockMicros;

impl TimeBase for WallClockMicros {
    type Instant = u64;
    const NAME: &'static str = "wall clock, microseconds since the Unix epoch";
    fn between(from: u64, to: u64) -> Duration {
        Duration::from_micros(to.saturating_sub(from))
    }
}

/// The model checker's clock: whole ticks (one tick is one second of the lock's config).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ModelTicks;

impl TimeBase for ModelTicks {
    type Instant = u64;
    const NAME: &'static str = "model ticks";
    fn between(from: u64, to: u64) -> Duration {
        Duration::from_secs(to.saturating_sub(from))
    }
}

/// One holder's belief that it held one lock: from the moment it learned it acquired to the
/// moment it stopped using the lock (release began, or its process died). An interval still
/// open when the history ends runs to the history's end.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HoldingInterval<B: TimeBase> {
    /// The thread (or locker) that held.
    pub holder: String,
    pub lock: String,
    pub acquired_at: B::Instant,
    pub released_at: B::Instant,
}

impl<B: TimeBase> HoldingInterval<B> {
    pub fn new(
        holder: impl Into<String>,
        lock: impl Into<String>,
        acquired_at: B::Instant,
        released_at: B::Instant,
    ) -> Self {
        HoldingInterval {
            holder: holder.into(),
            lock: lock.into(),
            acquired_at,
            released_at,
        }
    }

    pub fn length(&self) -> Duration {
        B::between(self.acquired_at, self.released_at)
    }
}

/// Two holders of the same lock at once (a T1-belief violation): `second` acquired at `from`
/// while `first` still held; both held until `to`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Overlap<B: TimeBase> {
    pub first: HoldingInterval<B>,
    pub second: HoldingInterval<B>,
    pub from: B::Instant,
    pub to: B::Instant,
}

/// The T1-belief judge: every pair of intervals of the same lock, held by different holders,
/// that share an instant. Intervals that only touch (one released when the other acquired) do
/// not overlap.
///
/// An empty interval (a holder told it acquired after its validity had already run out, so it
/// never believed it held) overlaps nothing.
///
/// Order: by the first interval's acquisition (ties: input order), then by the second's.
pub fn overlaps<B: TimeBase>(intervals: &[HoldingInterval<B>]) -> Vec<Overlap<B>> {
    let mut sorted: Vec<&HoldingInterval<B>> = intervals
        .iter()
        .filter(|interval| interval.released_at > interval.acquired_at)
        .collect();
    sorted.sort_by_key(|interval| interval.acquired_at);
    let mut found = Vec::new();
    for (i, a) in sorted.iter().enumerate() {
        for b in &sorted[i + 1..] {
            if b.acquired_at >= a.released_at {
                break;
            }
            if a.holder != b.holder && a.lock == b.lock {
                found.push(Overlap {
                    first: (*a).clone(),
                    second: (*b).clone(),
                    from: b.acquired_at,
                    to: a.released_at.min(b.released_at),
                });
            }
        }
    }
    found
}

/// Who believes they hold which lock as a history unfolds, and the holding intervals that
/// closed: the one way every driver turns "acquired", "release began", "process died" and "its
/// validity ran out" into [`HoldingInterval`]s for [`overlaps`] (`crate::belief` reads them
/// from a record).
#[derive(Clone, Debug)]
pub struct Beliefs<B: TimeBase> {
    /// holder -> what it believes. Ordered by holder, so closing is deterministic.
    open: std::collections::BTreeMap<String, Open<B>>,
    closed: Vec<HoldingInterval<B>>,
}

/// One open belief.
#[derive(Clone, Debug)]
struct Open<B: TimeBase> {
    process: usize,
    lock: String,
    since: B::Instant,
    /// When its validity runs out, if the lock gave one.
    lapse: Option<B::Instant>,
}

impl<B: TimeBase> Open<B> {
    /// Its end if it stops at `at`: then, or when its validity ran out, if earlier.
    fn ends(&self, at: B::Instant) -> B::Instant {
        self.lapse.map_or(at, |lapse| lapse.min(at))
    }
}

impl<B: TimeBase> Default for Beliefs<B> {
    fn default() -> Self {
        Beliefs {
            open: std::collections::BTreeMap::new(),
            closed: Vec::new(),
        }
    }
}

impl<B: TimeBase> Beliefs<B> {
    /// `holder`, running in `process`, learned at `at` that it holds `lock`.
    pub fn acquired(&mut self, holder: &str, process: usize, lock: &str, at: B::Instant) {
        self.acquired_until(holder, process, lock, at, None);
    }

    /// The same, believing it until `lapse` at the latest (its validity, on this clock).
    pub fn acquired_until(
        &mut self,
        holder: &str,
        process: usize,
        lock: &str,
        at: B::Instant,
        lapse: Option<B::Instant>,
    ) {
        self.open.insert(
            holder.to_owned(),
            Open {
                process,
                lock: lock.to_owned(),
                since: at,
                lapse,
            },
        );
    }

    /// At `at`, `holder`'s validity moved to `lapse`. If the old one had already run out, that
    /// belief ended then, and a new one begins now.
    pub fn extended(&mut self, holder: &str, process: usize, lock: &str, at: B::Instant, lapse: Option<B::Instant>) {
        let lapsed = self
            .open
            .get(holder)
            .and_then(|open| open.lapse.filter(|lapse| *lapse <= at));
        if let Some(lapsed_at) = lapsed {
            let open = self.open.remove(holder).expect("just read");
            self.closed
                .push(HoldingInterval::new(holder, open.lock, open.since, lapsed_at));
        }
        self.open
            .entry(holder.to_owned())
            .or_insert_with(|| Open {
                process,
                lock: lock.to_owned(),
                since: at,
                lapse: None,
            })
            .lapse = lapse;
    }

    /// `holder` stopped using its lock at `at` (release began), or earlier, when its validity
    /// ran out.
    pub fn stopped(&mut self, holder: &str, at: B::Instant) {
        if let Some(open) = self.open.remove(holder) {
            let ends = open.ends(at);
            self.closed
                .push(HoldingInterval::new(holder, open.lock, open.since, ends));
        }
    }

    /// `process` died at `at`: a dead process believes nothing any more.
    pub fn process_died(&mut self, process: usize, at: B::Instant) {
        let dead: Vec<String> = self
            .open
            .iter()
            .filter(|(_, open)| open.process == process)
            .map(|(holder, _)| holder.clone())
            .collect();
        for holder in dead {
            self.stopped(&holder, at);
        }
    }

    /// The intervals closed since the last call, in the order they closed: a judge that keeps
    /// bounded state takes them as they close instead of at [`Beliefs::finish`].
    pub fn take_closed(&mut self) -> std::vec::Drain<'_, HoldingInterval<B>> {
        self.closed.drain(..)
    }

    /// When the oldest belief still open began (none open: `None`).
    pub fn earliest_open_since(&self) -> Option<B::Instant> {
        self.open.values().map(|open| open.since).min()
    }

    /// The holders that believe they hold a lock now.
    pub fn holders(&self) -> impl Iterator<Item = &str> {
        self.open.keys().map(String::as_str)
    }

    /// The holders that believe they hold `lock` now.
    pub fn holders_of<'a>(&'a self, lock: &'a str) -> impl Iterator<Item = &'a str> {
        self.open
            .iter()
            .filter(move |(_, open)| open.lock == lock)
            .map(|(holder, _)| holder.as_str())
    }

    /// The holders that believe they hold `lock` at `at`: open, and their validity (if any)
    /// not yet run out.
    pub fn holders_of_at<'a>(&'a self, lock: &'a str, at: B::Instant) -> impl Iterator<Item = &'a str> {
        self.open
            .iter()
            .filter(move |(_, open)| open.lock == lock && open.lapse.is_none_or(|lapse| at < lapse))
            .map(|(holder, _)| holder.as_str())
    }

    /// The history ended at `end`: beliefs still open lasted until then (or their validity).
    /// Every interval, in the order they closed (then the open ones, by holder).
    pub fn finish(mut self, end: B::Instant) -> Vec<HoldingInterval<B>> {
        for (holder, open) in std::mem::take(&mut self.open) {
            let ends = open.ends(end);
            self.closed
                .push(HoldingInterval::new(holder, open.lock, open.since, ends));
        }
        self.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall(holder: &str, from: u64, to: u64) -> HoldingInterval<WallClockMicros> {
        HoldingInterval::new(holder, "K", from, to)
    }

    #[test]
    fn beliefs_close_on_release_on_death_and_at_the_end() {
        let mut beliefs: Beliefs<WallClockMicros> = Beliefs::default();
        beliefs.acquired("a", 0, "K", 10);
        beliefs.acquired("b", 1, "K", 12);
        beliefs.acquired("c", 1, "K", 14);
        assert_eq!(beliefs.holders().collect::<Vec<_>>(), ["a", "b", "c"]);
        beliefs.stopped("a", 20);
        beliefs.stopped("nobody", 21);
        beliefs.process_died(1, 30);
        beliefs.acquired("d", 2, "K", 40);
        let intervals = beliefs.finish(50);
        assert_eq!(
            intervals,
            [
                wall("a", 10, 20),
                wall("b", 12, 30),
                wall("c", 14, 30),
                wall("d", 40, 50)
            ]
        );
        assert_eq!(overlaps(&intervals).len(), 3, "a-b, a-c, b-c");
    }

    #[test]
    fn an_empty_belief_overlaps_nothing() {
        // b was told it acquired at 15 with a validity that had run out at 12.
        assert!(overlaps(&[wall("a", 10, 20), wall("b", 15, 12)]).is_empty());
        assert!(overlaps(&[wall("a", 10, 20), wall("b", 15, 15)]).is_empty());
        assert_eq!(overlaps(&[wall("a", 10, 20), wall("b", 15, 16)]).len(), 1);
    }

    #[test]
    fn touching_intervals_do_not_overlap() {
        assert!(overlaps(&[wall("a", 10, 20), wall("b", 20, 30)]).is_empty());
        assert!(overlaps::<WallClockMicros>(&[]).is_empty());
    }

    #[test]
    fn an_overlap_runs_from_the_second_acquisition_to_the_first_release() {
        let found = overlaps(&[wall("b", 15, 30), wall("a", 10, 20)]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].first.holder, "a");
        assert_eq!(found[0].second.holder, "b");
        assert_eq!((found[0].from, found[0].to), (15, 20));
    }

    #[test]
    fn every_overlapping_pair_counts_once() {
        // b and c both inside a, but not inside each other.
        let nested = [wall("a", 0, 100), wall("b", 10, 20), wall("c", 50, 60)];
        let found = overlaps(&nested);
        let pairs: Vec<(&str, &str)> = found
            .iter()
            .map(|o| (o.first.holder.as_str(), o.second.holder.as_str()))
            .collect();
        assert_eq!(pairs, [("a", "b"), ("a", "c")]);
        // Three at once: three pairs.
        let three = [wall("a", 0, 100), wall("b", 10, 90), wall("c", 20, 80)];
        assert_eq!(overlaps(&three).len(), 3);
    }

    #[test]
    fn one_holder_and_different_locks_never_overlap() {
        assert!(overlaps(&[wall("a", 0, 10), wall("a", 5, 15)]).is_empty());
        let other_lock = HoldingInterval::<WallClockMicros>::new("b", "L", 5, 15);
        assert!(overlaps(&[wall("a", 0, 10), other_lock]).is_empty());
    }

    #[test]
    fn simulated_intervals_measure_in_durations() {
        let a = HoldingInterval::<SimulatedTime>::new("a", "K", Duration::from_millis(100), Duration::from_millis(400));
        let b = HoldingInterval::<SimulatedTime>::new("b", "K", Duration::from_millis(300), Duration::from_millis(900));
        assert_eq!(a.length(), Duration::from_millis(300));
        let found = overlaps(&[a, b]);
        assert_eq!(found.len(), 1);
        assert_eq!(
            SimulatedTime::between(found[0].from, found[0].to),
            Duration::from_millis(100)
        );
        assert_eq!(WallClockMicros::between(5, 3), Duration::ZERO);
    }
}
