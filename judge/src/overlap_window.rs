//! T1-belief as intervals close, in memory that does not grow with the history: the same
//! question as [`crate::holding::overlaps`] (two holders of one lock share an instant), asked
//! of each interval when it closes, against a window of the intervals closed before it that a
//! later one can still overlap.
//!
//! Why a window suffices: a pair is compared when the second of the two closes. The first
//! closed earlier, so it is in the window then, unless it was dropped; it is dropped only once
//! its release is at or before every acquisition still to close (the oldest open belief's
//! start, and the present for beliefs not yet begun), after which nothing can overlap it. So
//! every overlapping pair is counted exactly once, and the window holds the intervals closed
//! since the oldest belief still open began: about one per client in a run where holders come
//! and go, more while one belief stays open long (a paused holder).
//!
//! Limits: the window holds at most [`WINDOW_LIMIT`] intervals; past that an interval is still
//! compared but not kept, so the count is a lower bound and the judge says so
//! ([`OverlapWindow::window_full`]). Overlaps kept as examples: the first ones in the order
//! [`crate::holding::overlaps`] lists them (by the first interval's acquisition, release and
//! holder, then the second's), at most `examples` of them.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::holding::{HoldingInterval, Overlap, TimeBase};

/// The most intervals the window keeps (about 48 bytes each: some 50 MB).
pub const WINDOW_LIMIT: usize = 1 << 20;

/// A closed interval in the window: names interned.
#[derive(Clone, Copy, Debug)]
struct Closed<B: TimeBase> {
    holder: u32,
    lock: u32,
    acquired_at: B::Instant,
    released_at: B::Instant,
}

/// The overlaps of intervals given as they close.
#[derive(Clone, Debug)]
pub struct OverlapWindow<B: TimeBase> {
    names: Vec<String>,
    ids: BTreeMap<String, u32>,
    window: Vec<Closed<B>>,
    /// Overlapping pairs found.
    pub count: u64,
    examples: usize,
    /// The first overlaps found so far, in [`crate::holding::overlaps`]'s order (at most
    /// `examples` after [`OverlapWindow::finish`]).
    kept: Vec<Overlap<B>>,
    /// The window reached [`WINDOW_LIMIT`]: intervals closed since were compared, not kept.
    pub window_full: bool,
}

impl<B: TimeBase> OverlapWindow<B> {
    /// Keep at most `examples` overlaps (`usize::MAX`: every one).
    pub fn new(examples: usize) -> Self {
        OverlapWindow {
            names: Vec::new(),
            ids: BTreeMap::new(),
            window: Vec::new(),
            count: 0,
            examples,
            kept: Vec::new(),
            window_full: false,
        }
    }

    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = u32::try_from(self.names.len()).expect("fewer than 2^32 names");
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        id
    }

    fn interval(&self, closed: &Closed<B>) -> HoldingInterval<B> {
        HoldingInterval::new(
            self.names[closed.holder as usize].as_str(),
            self.names[closed.lock as usize].as_str(),
            closed.acquired_at,
            closed.released_at,
        )
    }

    /// `interval` closed; no interval still to close begins before `horizon` (the oldest open
    /// belief's start, or the present if none is open). Returns the overlaps it makes with the
    /// intervals closed before it (each pair once, as counted), for a judge that asks who was
    /// overtaken (C-lost): the earlier holder is each overlap's `first`.
    pub fn closed(&mut self, interval: &HoldingInterval<B>, horizon: B::Instant) -> Vec<Overlap<B>> {
        let mut made = Vec::new();
        if interval.released_at > interval.acquired_at {
            let this = Closed {
                holder: self.id(&interval.holder),
                lock: self.id(&interval.lock),
                acquired_at: interval.acquired_at,
                released_at: interval.released_at,
            };
            let mut found = Vec::new();
            for earlier in &self.window {
                if earlier.lock == this.lock
                    && earlier.holder != this.holder
                    && earlier.acquired_at.max(this.acquired_at) < earlier.released_at.min(this.released_at)
                {
                    found.push(*earlier);
                }
            }
            for earlier in found {
                self.count += 1;
                let overlap = self.pair(&earlier, &this);
                if self.examples > 0 {
                    self.keep(overlap.clone());
                }
                made.push(overlap);
            }
            if self.window.len() < WINDOW_LIMIT {
                self.window.push(this);
            } else {
                self.window_full = true;
            }
        }
        self.window.retain(|closed| closed.released_at > horizon);
        made
    }

    /// Two overlapping intervals as an overlap: `first` the earlier in
    /// [`crate::holding::overlaps`]'s order.
    fn pair(&self, a: &Closed<B>, b: &Closed<B>) -> Overlap<B> {
        let (a, b) = (self.interval(a), self.interval(b));
        let (first, second) = if order(&a, &b) == Ordering::Greater {
            (b, a)
        } else {
            (a, b)
        };
        Overlap {
            from: second.acquired_at,
            to: first.released_at.min(second.released_at),
            first,
            second,
        }
    }

    fn keep(&mut self, overlap: Overlap<B>) {
        self.kept.push(overlap);
        if self.examples != usize::MAX && self.kept.len() >= 2 * self.examples {
            self.sort_and_cut();
        }
    }

    fn sort_and_cut(&mut self) {
        self.kept
            .sort_by(|x, y| order(&x.first, &y.first).then_with(|| order(&x.second, &y.second)));
        self.kept.truncate(self.examples);
    }

    /// The overlaps kept, in [`crate::holding::overlaps`]'s order.
    pub fn finish(mut self) -> (u64, Vec<Overlap<B>>, bool) {
        self.sort_and_cut();
        (self.count, self.kept, self.window_full)
    }

    /// Intervals in the window now.
    pub fn window_len(&self) -> usize {
        self.window.len()
    }
}

/// [`crate::holding::overlaps`]'s order of intervals: acquisition, release, holder (then the
/// lock, which that order leaves to the input's).
fn order<B: TimeBase>(a: &HoldingInterval<B>, b: &HoldingInterval<B>) -> Ordering {
    (a.acquired_at, a.released_at, &a.holder, &a.lock).cmp(&(b.acquired_at, b.released_at, &b.holder, &b.lock))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::holding::{overlaps, WallClockMicros};

    fn wall(holder: &str, from: u64, to: u64) -> HoldingInterval<WallClockMicros> {
        HoldingInterval::new(holder, "K", from, to)
    }

    /// Close `intervals` in release order, the horizon the earliest start of those not yet
    /// closed: as a record's judge would.
    fn windowed(
        intervals: &[HoldingInterval<WallClockMicros>],
        examples: usize,
    ) -> (u64, Vec<Overlap<WallClockMicros>>) {
        let mut by_release: Vec<_> = intervals.to_vec();
        by_release.sort_by_key(|interval| interval.released_at);
        let mut window = OverlapWindow::new(examples);
        for (i, interval) in by_release.iter().enumerate() {
            let horizon = by_release[i + 1..]
                .iter()
                .map(|later| later.acquired_at)
                .min()
                .unwrap_or(u64::MAX)
                .min(interval.released_at);
            window.closed(interval, horizon);
        }
        let (count, kept, full) = window.finish();
        assert!(!full);
        (count, kept)
    }

    #[test]
    fn the_window_finds_what_the_whole_list_finds() {
        let cases: [&[HoldingInterval<WallClockMicros>]; 5] = [
            &[wall("a", 0, 100), wall("b", 10, 20), wall("c", 50, 60)],
            &[wall("a", 0, 100), wall("b", 10, 90), wall("c", 20, 80)],
            &[wall("a", 10, 20), wall("b", 20, 30)],
            &[wall("a", 10, 20), wall("b", 15, 12), wall("c", 15, 16)],
            &[wall("a", 0, 10), wall("a", 5, 15), wall("b", 12, 14)],
        ];
        for intervals in cases {
            let (count, kept) = windowed(intervals, usize::MAX);
            let mut sorted = intervals.to_vec();
            sorted.sort_by(order);
            let all = overlaps(&sorted);
            assert_eq!(count, all.len() as u64, "{intervals:?}");
            assert_eq!(kept, all, "{intervals:?}");
        }
    }

    #[test]
    fn a_few_examples_are_the_first_ones_and_the_count_is_all() {
        // a holds throughout; twenty others come and go inside it.
        let mut intervals = vec![wall("a", 0, 10_000)];
        for i in 0..20 {
            intervals.push(wall(&format!("b{i:02}"), 100 + i * 100, 150 + i * 100));
        }
        let (count, kept) = windowed(&intervals, 3);
        assert_eq!(count, 20);
        let holders: Vec<&str> = kept.iter().map(|o| o.second.holder.as_str()).collect();
        assert_eq!(holders, ["b00", "b01", "b02"]);
    }

    #[test]
    fn the_window_keeps_only_what_a_later_interval_can_overlap() {
        let mut window: OverlapWindow<WallClockMicros> = OverlapWindow::new(0);
        for i in 0..1000u64 {
            // Back to back, nobody open between them: each closes with the present as horizon.
            window.closed(&wall(&format!("c{}", i % 4), i * 10, i * 10 + 10), i * 10 + 10);
        }
        assert_eq!(window.count, 0);
        assert_eq!(window.window_len(), 0);
    }
}
