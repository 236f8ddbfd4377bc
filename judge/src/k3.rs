//! K3, one definition: a lock released by its holder stays *taken by nobody* while that
//! holder's main cell is live again after the release completed. The cell must have been
//! written after the release began (a renewal stamped after the release's delete); a replica
//! that merely missed the delete holds an older version, which a quorum read overrules.
//!
//! The simulator's oracle looks at replicas' cells after releases and asks [`stuck`]; so does the
//! model checker's `stuck_after_release`, on its single linearizable copy (there a cell live
//! after a completed release was necessarily written after the delete, so every such write
//! counts as written after the release began).

use std::time::Duration;

use crate::holding::TimeBase;

/// A release that completed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Release<B: TimeBase> {
    pub holder: String,
    pub lock: String,
    /// The holder's write stamp (its own clock, microseconds) when the release began: its
    /// writes stamped above this were issued after the release began.
    pub began_stamp_us: u64,
    pub completed_at: B::Instant,
}

/// A released holder's main cell, seen live at `seen_at`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LiveCell<B: TimeBase> {
    pub holder: String,
    pub lock: String,
    pub seen_at: B::Instant,
    /// The cell's write stamp.
    pub stamp_us: u64,
    /// When the cell expires (its TTL), on the same clock; `None`: never, or unknown.
    pub live_until: Option<B::Instant>,
}

/// A K3 violation: the lock stays taken by nobody.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stuck<B: TimeBase> {
    pub release: Release<B>,
    pub seen_at: B::Instant,
    pub live_until: Option<B::Instant>,
}

impl<B: TimeBase> Stuck<B> {
    /// How long the lock stays taken by nobody: from the release's completion to the cell's
    /// expiry (`None`: no expiry known, so until someone deletes the cell).
    pub fn taken_by_nobody_for(&self) -> Option<Duration> {
        self.live_until
            .map(|until| B::between(self.release.completed_at, until))
    }

    /// How much longer the lock stays taken from the moment the cell was seen (the model's
    /// figure: ticks the cell stays live).
    pub fn remaining_when_seen(&self) -> Option<Duration> {
        self.live_until.map(|until| B::between(self.seen_at, until))
    }
}

/// Does `cell` show `release`'s lock stuck? Same holder and lock, seen at or after the release
/// completed, written after the release began.
pub fn stuck<B: TimeBase>(release: &Release<B>, cell: &LiveCell<B>) -> Option<Stuck<B>> {
    let resurrected = cell.holder == release.holder
        && cell.lock == release.lock
        && cell.seen_at >= release.completed_at
        && cell.stamp_us > release.began_stamp_us;
    resurrected.then(|| Stuck {
        release: release.clone(),
        seen_at: cell.seen_at,
        live_until: cell.live_until,
    })
}

/// Every release that some live cell shows stuck, once each (at its first such cell, in
/// `cells` order), in `releases` order.
pub fn stuck_after_release<B: TimeBase>(releases: &[Release<B>], cells: &[LiveCell<B>]) -> Vec<Stuck<B>> {
    releases
        .iter()
        .filter_map(|release| cells.iter().find_map(|cell| stuck(release, cell)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::holding::SimulatedTime;

    fn s(seconds: u64) -> Duration {
        Duration::from_secs(seconds)
    }

    fn release(holder: &str) -> Release<SimulatedTime> {
        Release {
            holder: holder.into(),
            lock: "K".into(),
            began_stamp_us: 1_000,
            completed_at: s(10),
        }
    }

    fn cell(holder: &str, seen: u64, stamp_us: u64, until: Option<u64>) -> LiveCell<SimulatedTime> {
        LiveCell {
            holder: holder.into(),
            lock: "K".into(),
            seen_at: s(seen),
            stamp_us,
            live_until: until.map(s),
        }
    }

    #[test]
    fn a_cell_written_after_the_release_began_and_live_after_it_completed_is_stuck() {
        let found = stuck(&release("a"), &cell("a", 11, 1_001, Some(40))).expect("stuck");
        assert_eq!(found.taken_by_nobody_for(), Some(s(30)));
        assert_eq!(found.remaining_when_seen(), Some(s(29)));
        let forever = stuck(&release("a"), &cell("a", 11, 2_000, None)).expect("stuck");
        assert_eq!(forever.taken_by_nobody_for(), None);
    }

    #[test]
    fn a_missed_delete_another_holder_or_a_look_before_completion_is_not() {
        assert!(
            stuck(&release("a"), &cell("a", 11, 1_000, Some(40))).is_none(),
            "older version"
        );
        assert!(
            stuck(&release("a"), &cell("b", 11, 5_000, Some(40))).is_none(),
            "another holder"
        );
        assert!(
            stuck(&release("a"), &cell("a", 9, 5_000, Some(40))).is_none(),
            "still releasing"
        );
        let mut elsewhere = cell("a", 11, 5_000, Some(40));
        elsewhere.lock = "L".into();
        assert!(stuck(&release("a"), &elsewhere).is_none(), "another lock");
    }

    #[test]
    fn each_stuck_release_is_reported_once() {
        let releases = [release("a"), release("b"), release("c")];
        let cells = [
            cell("a", 11, 2_000, Some(40)),
            cell("a", 12, 2_000, Some(40)),
            cell("c", 12, 900, Some(40)),
        ];
        let found = stuck_after_release(&releases, &cells);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].release.holder, "a");
        assert_eq!(found[0].seen_at, s(11));
    }
}
