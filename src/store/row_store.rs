//! Cassandra's cell rules, written once.
//!
//! A column family is a map of rows; a row is a sorted map of cells keyed by column name
//! (byte-wise order). Every replica, the model's store actor and the in-memory store keep their
//! data in a [`RowStore`], so the rules below exist in exactly one place:
//!
//! - **Last write wins** by write timestamp (client-supplied microseconds).
//! - **A tombstone wins a tie**: a delete shadows a write with a lower *or equal* timestamp.
//! - Between two writes with equal timestamps the **greater value** wins, then the later expiry
//!   (Cassandra's `Conflicts.resolveRegular`).
//! - **TTL**: the node that *coordinates a write* fixes the expiry instant from its own clock,
//!   `coordinator_now_s + ttl_s` in whole seconds; a read is judged at the clock of whoever
//!   *coordinates the read*: a cell is live while `reader_now_s < expires_at_s`. The type owns no
//!   clock: every call that needs one takes `now_us`.
//! - Slice reads (start column, count) return live cells only, in column order.
//!
//! An expired cell keeps its timestamp: it still shadows older writes of the same column, as a
//! Cassandra expired cell (which becomes a tombstone) does.
//!
//! A **row tombstone** (`DELETE FROM t WHERE key = ?`, what an operator clearing a lock runs)
//! shadows every cell of the row with a timestamp at or below its own, the cells it never saw
//! included: a write with an older timestamp that arrives after the delete (a retried or
//! in-flight request, a hint) stays shadowed, not only the cells present when the delete ran.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Microseconds in one second; TTLs and expiry instants are whole seconds.
pub const MICROS_PER_SECOND: u64 = 1_000_000;

/// Whole seconds of a microsecond clock reading, as Cassandra's `nowInSec`.
pub fn whole_seconds(now_us: u64) -> u64 {
    now_us / MICROS_PER_SECOND
}

/// What a cell holds at one timestamp: a value (perhaps expiring) or a tombstone.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum CellBody {
    /// A written value. `expires_at_s` is `coordinator_now_s + ttl_s`, fixed at write time.
    Value { value: String, expires_at_s: Option<u64> },
    /// A delete.
    Tombstone,
}

/// One version of a cell: the body and its write timestamp.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct CellVersion {
    pub timestamp_us: u64,
    pub body: CellBody,
}

impl CellVersion {
    /// A written value. `ttl_s` counts from `coordinator_now_us` (the write coordinator's clock).
    pub fn value(value: impl Into<String>, timestamp_us: u64, ttl_s: Option<u32>, coordinator_now_us: u64) -> Self {
        let expires_at_s = ttl_s.map(|ttl| whole_seconds(coordinator_now_us) + u64::from(ttl));
        CellVersion {
            timestamp_us,
            body: CellBody::Value {
                value: value.into(),
                expires_at_s,
            },
        }
    }

    pub fn tombstone(timestamp_us: u64) -> Self {
        CellVersion {
            timestamp_us,
            body: CellBody::Tombstone,
        }
    }

    /// Is this version a live value when judged at `reader_now_us`?
    pub fn is_live_at(&self, reader_now_us: u64) -> bool {
        match &self.body {
            CellBody::Tombstone => false,
            CellBody::Value { expires_at_s, .. } => match expires_at_s {
                None => true,
                Some(expiry) => whole_seconds(reader_now_us) < *expiry,
            },
        }
    }

    pub fn live_value_at(&self, reader_now_us: u64) -> Option<&str> {
        match &self.body {
            CellBody::Value { value, .. } if self.is_live_at(reader_now_us) => Some(value),
            _ => None,
        }
    }

    /// The reconciliation rank: the version with the greater rank wins.
    ///
    /// Order of the tuple = order of the rules: timestamp, then tombstone over value, then the
    /// greater value, then the later expiry (no expiry counts as the latest).
    fn rank(&self) -> (u64, bool, &str, u64) {
        match &self.body {
            CellBody::Tombstone => (self.timestamp_us, true, "", u64::MAX),
            CellBody::Value { value, expires_at_s } => (
                self.timestamp_us,
                false,
                value.as_str(),
                expires_at_s.unwrap_or(u64::MAX),
            ),
        }
    }
}

/// The winner of two versions of the same cell (commutative, associative, idempotent).
pub fn reconcile(a: CellVersion, b: CellVersion) -> CellVersion {
    debug_assert!(
        a.rank() != b.rank() || a == b,
        "reconcile: two different versions of equal rank ({a:?}, {b:?}) would make the winner depend on the order"
    );
    if b.rank() > a.rank() {
        b
    } else {
        a
    }
}

/// What a read coordinator makes of replicas' raw slices (each as [`RowStore::raw_slice`] gives
/// it): per column, the winner of every replica's version ([`reconcile`]), in column order.
pub fn merge_slices<'a, S>(slices: impl IntoIterator<Item = S>) -> std::collections::BTreeMap<String, CellVersion>
where
    S: IntoIterator<Item = (&'a str, &'a CellVersion)>,
{
    let mut merged: std::collections::BTreeMap<String, CellVersion> = std::collections::BTreeMap::new();
    for slice in slices {
        for (column, version) in slice {
            match merged.get_mut(column) {
                Some(existing) => *existing = reconcile(existing.clone(), version.clone()),
                None => {
                    merged.insert(column.to_owned(), version.clone());
                }
            }
        }
    }
    merged
}

/// A live cell as a slice read returns it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct LiveCell {
    pub column: String,
    pub value: String,
    pub timestamp_us: u64,
}

/// The first `count` live cells among `versions` (in column order), as a reader whose clock
/// reads `reader_now_us` sees them: deleted and expired cells are skipped. A replica's slice
/// read and a coordinator's merge of replica answers both end here.
pub fn live_slice<'a>(
    versions: impl IntoIterator<Item = (&'a String, &'a CellVersion)>,
    count: usize,
    reader_now_us: u64,
) -> Vec<LiveCell> {
    let cells: Vec<LiveCell> = versions
        .into_iter()
        .filter_map(|(column, version)| {
            version.live_value_at(reader_now_us).map(|value| LiveCell {
                column: column.clone(),
                value: value.to_owned(),
                timestamp_us: version.timestamp_us,
            })
        })
        .take(count)
        .collect();
    debug_assert!(
        cells.windows(2).all(|pair| pair[0].column < pair[1].column),
        "live_slice: versions must come once per column, in column order"
    );
    cells
}

/// Rows of cells sorted by column name, with Cassandra's reconciliation rules.
///
/// Each row sits behind an [`Arc`] and is copied on write: a model checker clones the whole
/// store for every successor state, and a step changes at most a row or two, so a clone shares
/// every row it does not change. Equality, order and hashing look through the `Arc` (the
/// row's cells), so sharing is invisible.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowStore {
    rows: BTreeMap<String, Arc<Row>>,
    /// Row tombstones: each deleted row's greatest delete timestamp. Every cell of the row
    /// stored at or below it is a tombstone at it (the invariant `apply` and `delete_row`
    /// keep), so reads and replicas' exchanges of versions need not look here.
    row_deleted_at_us: BTreeMap<String, u64>,
}

/// One row: its cells' stored versions by column name.
type Row = BTreeMap<String, CellVersion>;

impl RowStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Merge one version into a cell. Returns true when the stored winner changed.
    pub fn apply(&mut self, row: &str, column: &str, version: CellVersion) -> bool {
        // A version the row's tombstone shadows lands as that tombstone (a tombstone wins a tie).
        let version = match self.row_deleted_at_us.get(row) {
            Some(&deleted_at_us) if version.timestamp_us <= deleted_at_us => CellVersion::tombstone(deleted_at_us),
            _ => version,
        };
        let cells = match self.rows.get_mut(row) {
            Some(cells) => cells,
            None => self.rows.entry(row.to_owned()).or_default(),
        };
        match cells.get(column) {
            None => {
                Arc::make_mut(cells).insert(column.to_owned(), version);
                true
            }
            Some(existing) => {
                debug_assert!(
                    existing.rank() != version.rank() || *existing == version,
                    "apply {row}/{column}: two different versions of equal rank ({existing:?}, {version:?})"
                );
                if version.rank() > existing.rank() {
                    let existing = Arc::make_mut(cells)
                        .get_mut(column)
                        .expect("apply: the column was just found in this row");
                    *existing = version;
                    true
                } else {
                    false
                }
            }
        }
    }

    /// Write one cell, coordinated at `coordinator_now_us` (which fixes the TTL's expiry).
    pub fn write(
        &mut self,
        row: &str,
        column: &str,
        value: &str,
        timestamp_us: u64,
        ttl_s: Option<u32>,
        coordinator_now_us: u64,
    ) -> bool {
        self.apply(
            row,
            column,
            CellVersion::value(value, timestamp_us, ttl_s, coordinator_now_us),
        )
    }

    /// Delete one cell: a tombstone at `timestamp_us`.
    pub fn delete(&mut self, row: &str, column: &str, timestamp_us: u64) -> bool {
        self.apply(row, column, CellVersion::tombstone(timestamp_us))
    }

    /// Delete a whole row: a row tombstone at `timestamp_us`, which shadows every cell of
    /// `row` with a timestamp at or below it, those applied later included. Returns true when a
    /// stored version or the row's tombstone changed.
    pub fn delete_row(&mut self, row: &str, timestamp_us: u64) -> bool {
        let deleted_at_us = self.row_deleted_at_us.entry(row.to_owned()).or_insert(timestamp_us);
        let mut changed = *deleted_at_us < timestamp_us;
        *deleted_at_us = (*deleted_at_us).max(timestamp_us);
        let deleted_at_us = *deleted_at_us;
        let shadowed: Vec<String> = self
            .rows
            .get(row)
            .into_iter()
            .flat_map(|cells| cells.iter())
            .filter(|(_, version)| version.timestamp_us <= deleted_at_us)
            .map(|(column, _)| column.clone())
            .collect();
        for column in shadowed {
            changed |= self.apply(row, &column, CellVersion::tombstone(deleted_at_us));
        }
        debug_assert!(self.rows.get(row).is_none_or(|cells| cells
            .values()
            .all(|version| version.timestamp_us > deleted_at_us || *version == CellVersion::tombstone(deleted_at_us))));
        changed
    }

    /// The timestamp of `row`'s row tombstone, if it has one.
    pub fn row_deleted_at_us(&self, row: &str) -> Option<u64> {
        self.row_deleted_at_us.get(row).copied()
    }

    /// Up to `count` live cells of `row` with `column >= start`, in column order, judged at the
    /// read coordinator's clock `reader_now_us`.
    pub fn read_slice(&self, row: &str, start: &str, count: usize, reader_now_us: u64) -> Vec<LiveCell> {
        let Some(cells) = self.rows.get(row) else {
            return Vec::new();
        };
        live_slice(
            cells.range::<str, _>((std::ops::Bound::Included(start), std::ops::Bound::Unbounded)),
            count,
            reader_now_us,
        )
    }

    /// Every stored version of `row` with `column >= start` (tombstones and expired cells
    /// included), in column order: what a replica sends a read coordinator to reconcile.
    pub fn raw_slice<'a>(&'a self, row: &str, start: &'a str) -> impl Iterator<Item = (&'a str, &'a CellVersion)> + 'a {
        self.rows
            .get(row)
            .into_iter()
            .flat_map(move |cells| {
                cells.range::<str, _>((std::ops::Bound::Included(start), std::ops::Bound::Unbounded))
            })
            .map(|(column, version)| (column.as_str(), version))
    }

    /// The stored version of one cell, if any (live or not).
    pub fn version(&self, row: &str, column: &str) -> Option<&CellVersion> {
        self.rows.get(row).and_then(|cells| cells.get(column))
    }

    /// Every stored version, row by row, in order.
    pub fn versions(&self) -> impl Iterator<Item = (&str, &str, &CellVersion)> {
        self.rows.iter().flat_map(|(row, cells)| {
            cells
                .iter()
                .map(move |(column, version)| (row.as_str(), column.as_str(), version))
        })
    }

    /// Drop versions that can no longer affect any read: tombstones whose timestamp is below
    /// `tombstone_horizon_us`, and values that expired at or before `expiry_horizon_now_us`
    /// (judged as a reader whose clock reads that value) with a timestamp below the
    /// tombstone horizon. This is compaction after `gc_grace`: a write that arrives later
    /// with a timestamp below the horizon would come back to life, exactly as in Cassandra.
    /// Returns how many versions were dropped.
    pub fn purge(&mut self, tombstone_horizon_us: u64, expiry_horizon_now_us: u64) -> usize {
        let mut dropped = 0;
        let droppable = |version: &CellVersion| {
            let below = version.timestamp_us < tombstone_horizon_us;
            let dead = match version.body {
                CellBody::Tombstone => true,
                CellBody::Value { .. } => !version.is_live_at(expiry_horizon_now_us),
            };
            below && dead
        };
        self.rows.retain(|_, cells| {
            // Copy a shared row only when something in it goes.
            if cells.values().any(droppable) {
                Arc::make_mut(cells).retain(|_, version| {
                    let drop = droppable(version);
                    dropped += usize::from(drop);
                    !drop
                });
            }
            !cells.is_empty()
        });
        self.row_deleted_at_us.retain(|_, deleted_at_us| {
            let drop = *deleted_at_us < tombstone_horizon_us;
            dropped += usize::from(drop);
            !drop
        });
        dropped
    }

    /// Rewrite every write timestamp through `rename`, which must be strictly increasing.
    /// The model checker uses this to replace timestamps by their ranks: reconciliation only
    /// compares timestamps, so an order-preserving renaming changes no read.
    pub fn rename_timestamps(&mut self, mut rename: impl FnMut(u64) -> u64) {
        #[cfg(debug_assertions)]
        let mut renamed = Vec::new();
        for cells in self.rows.values_mut() {
            // Copy a shared row only when a timestamp in it changes.
            let renamed_row: Vec<u64> = cells.values().map(|version| rename(version.timestamp_us)).collect();
            if cells
                .values()
                .zip(&renamed_row)
                .all(|(version, new)| version.timestamp_us == *new)
            {
                #[cfg(debug_assertions)]
                renamed.extend(renamed_row.iter().map(|&same| (same, same)));
                continue;
            }
            for (version, new) in Arc::make_mut(cells).values_mut().zip(renamed_row) {
                #[cfg(debug_assertions)]
                renamed.push((version.timestamp_us, new));
                version.timestamp_us = new;
            }
        }
        for deleted_at_us in self.row_deleted_at_us.values_mut() {
            let new = rename(*deleted_at_us);
            #[cfg(debug_assertions)]
            renamed.push((*deleted_at_us, new));
            *deleted_at_us = new;
        }
        #[cfg(debug_assertions)]
        debug_check_order_preserving("rename_timestamps: the timestamp renaming", renamed);
    }

    /// Rewrite every stored version in place with `rewrite`, which must preserve the order of
    /// timestamps and of values (a model checker's order-preserving renaming of times, as in
    /// Listing 8, where a cell's value is a time). `rewrite` must be a pure function of the
    /// version: it is called once more on a copy of each version to learn whether a shared row
    /// needs copying at all.
    pub fn rewrite_versions(&mut self, mut rewrite: impl FnMut(&mut CellVersion)) {
        #[cfg(debug_assertions)]
        let (mut timestamps, mut values) = (Vec::new(), Vec::new());
        for cells in self.rows.values_mut() {
            // Copy a shared row only when the rewriting changes a version in it.
            let changes = cells.values().any(|version| {
                let mut rewritten = version.clone();
                rewrite(&mut rewritten);
                rewritten != *version
            });
            if !changes {
                // Unchanged versions still take part in the order check.
                #[cfg(debug_assertions)]
                for version in cells.values() {
                    timestamps.push((version.timestamp_us, version.timestamp_us));
                    if let CellBody::Value { value, .. } = &version.body {
                        values.push((value.clone(), value.clone()));
                    }
                }
                continue;
            }
            for version in Arc::make_mut(cells).values_mut() {
                #[cfg(debug_assertions)]
                let before = version.clone();
                rewrite(version);
                #[cfg(debug_assertions)]
                {
                    timestamps.push((before.timestamp_us, version.timestamp_us));
                    if let (CellBody::Value { value: old, .. }, CellBody::Value { value: new, .. }) =
                        (before.body, &version.body)
                    {
                        values.push((old, new.clone()));
                    }
                }
            }
        }
        // A row tombstone's timestamp is rewritten as its cells' tombstones are.
        for deleted_at_us in self.row_deleted_at_us.values_mut() {
            let mut tombstone = CellVersion::tombstone(*deleted_at_us);
            rewrite(&mut tombstone);
            #[cfg(debug_assertions)]
            timestamps.push((*deleted_at_us, tombstone.timestamp_us));
            *deleted_at_us = tombstone.timestamp_us;
        }
        #[cfg(debug_assertions)]
        {
            debug_check_order_preserving("rewrite_versions: the rewriting of timestamps", timestamps);
            debug_check_order_preserving("rewrite_versions: the rewriting of values", values);
        }
    }

    /// Number of stored versions (live or not), row tombstones included.
    pub fn len(&self) -> usize {
        self.rows.values().map(|cells| cells.len()).sum::<usize>() + self.row_deleted_at_us.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.row_deleted_at_us.is_empty()
    }

    /// The greatest write timestamp stored, if any (row tombstones included).
    pub fn max_timestamp_us(&self) -> Option<u64> {
        self.rows
            .values()
            .flat_map(|cells| cells.values().map(|v| v.timestamp_us))
            .chain(self.row_deleted_at_us.values().copied())
            .max()
    }
}

/// Debug builds: panic unless `pairs` (old, new) describe a strictly increasing renaming
/// (equal olds map to equal news, and a smaller old to a smaller new).
#[cfg(debug_assertions)]
fn debug_check_order_preserving<T: Ord + std::fmt::Debug>(what: &str, mut pairs: Vec<(T, T)>) {
    pairs.sort_unstable();
    for pair in pairs.windows(2) {
        let ((old_a, new_a), (old_b, new_b)) = (&pair[0], &pair[1]);
        let kept = if old_a == old_b { new_a == new_b } else { new_a < new_b };
        assert!(
            kept,
            "{what} must be strictly increasing: {old_a:?} -> {new_a:?} but {old_b:?} -> {new_b:?}"
        );
    }
}

/// Reduction 7 of the lock models: every column name and value in the store (the queue row's
/// columns are Listing 5 names). A row is copied only when a name or value in it changes.
impl crate::algo::held_columns::HeldColumns for RowStore {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        for cells in self.rows.values() {
            for (column, version) in cells.iter() {
                see(column);
                if let CellBody::Value { value, .. } = &version.body {
                    see(value);
                }
            }
        }
    }

    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        for cells in self.rows.values_mut() {
            let mut changed = false;
            let renamed: Vec<(String, CellVersion)> = cells
                .iter()
                .map(|(column, version)| {
                    let (mut new_column, mut new_version) = (column.clone(), version.clone());
                    rename(&mut new_column);
                    if let CellBody::Value { value, .. } = &mut new_version.body {
                        rename(value);
                    }
                    changed |= new_column != *column || new_version != *version;
                    (new_column, new_version)
                })
                .collect();
            if changed {
                debug_assert!(
                    renamed.windows(2).all(|pair| pair[0].0 < pair[1].0),
                    "renaming columns keeps their order"
                );
                *Arc::make_mut(cells) = renamed.into_iter().collect();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = MICROS_PER_SECOND;

    #[test]
    fn later_timestamp_wins_and_order_of_arrival_does_not_matter() {
        let mut a = RowStore::new();
        a.write("r", "c", "old", 1, None, 0);
        a.write("r", "c", "new", 2, None, 0);
        let mut b = RowStore::new();
        b.write("r", "c", "new", 2, None, 0);
        b.write("r", "c", "old", 1, None, 0);
        assert_eq!(a, b);
        assert_eq!(a.read_slice("r", "", 10, 0)[0].value, "new");
    }

    #[test]
    fn a_coordinator_merges_replica_slices_by_reconcile_in_any_order() {
        let mut a = RowStore::new();
        a.write("r", "x", "old", 1, None, 0);
        a.write("r", "y", "only-a", 1, None, 0);
        let mut b = RowStore::new();
        b.write("r", "x", "new", 2, None, 0);
        b.delete("r", "y", 3);
        let forward = merge_slices([a.raw_slice("r", ""), b.raw_slice("r", "")]);
        let backward = merge_slices([b.raw_slice("r", ""), a.raw_slice("r", "")]);
        assert_eq!(forward, backward);
        let live = live_slice(&forward, 10, 0);
        assert_eq!(live.len(), 1, "the delete wins y: {live:?}");
        assert_eq!((live[0].column.as_str(), live[0].value.as_str()), ("x", "new"));
    }

    #[test]
    fn tombstone_wins_a_timestamp_tie() {
        let mut store = RowStore::new();
        store.write("r", "c", "v", 5, None, 0);
        store.delete("r", "c", 5);
        assert!(store.read_slice("r", "", 10, 0).is_empty());
        // ... and a write at the same timestamp after the delete stays invisible.
        store.write("r", "c", "v", 5, None, 0);
        assert!(store.read_slice("r", "", 10, 0).is_empty());
        store.write("r", "c", "v", 6, None, 0);
        assert_eq!(store.read_slice("r", "", 10, 0).len(), 1);
    }

    #[test]
    fn a_row_tombstone_shadows_older_cells_even_those_that_arrive_after_it() {
        let mut store = RowStore::new();
        store.write("r", "a", "v", 5, None, 0);
        store.write("r", "b", "v", 9, None, 0);
        assert!(store.delete_row("r", 7));
        assert_eq!(store.row_deleted_at_us("r"), Some(7));
        let live: Vec<String> = store.read_slice("r", "", 10, 0).into_iter().map(|c| c.column).collect();
        assert_eq!(live, ["b"], "the newer cell outlives the delete");
        // An older write arriving late (a retry, a hint) stays shadowed, in a column the delete
        // never saw too; a tie goes to the tombstone; a newer write lands.
        store.write("r", "c", "v", 6, None, 0);
        store.write("r", "d", "v", 7, None, 0);
        store.write("r", "e", "v", 8, None, 0);
        let live: Vec<String> = store.read_slice("r", "", 10, 0).into_iter().map(|c| c.column).collect();
        assert_eq!(live, ["b", "e"]);
        // An older row delete changes nothing; other rows are untouched.
        assert!(!store.delete_row("r", 3));
        store.write("s", "a", "v", 1, None, 0);
        assert_eq!(store.read_slice("s", "", 10, 0).len(), 1);
        // Compaction past the row tombstone drops it with its cells' tombstones.
        store.purge(8, 0);
        assert_eq!(store.row_deleted_at_us("r"), None);
        assert_eq!(store.len(), 3, "b, e and s/a");
    }

    #[test]
    fn greater_value_wins_between_equal_timestamps() {
        let mut store = RowStore::new();
        store.write("r", "c", "b", 5, None, 0);
        store.write("r", "c", "a", 5, None, 0);
        assert_eq!(store.read_slice("r", "", 1, 0)[0].value, "b");
    }

    #[test]
    fn ttl_counts_from_the_write_coordinators_clock_and_is_judged_by_the_readers() {
        let mut store = RowStore::new();
        // Written by a coordinator whose clock reads 100 s, TTL 10 s: expires at 110 s.
        store.write("r", "c", "v", 1, Some(10), 100 * S);
        assert_eq!(store.read_slice("r", "", 1, 109 * S + 999_999).len(), 1);
        assert!(store.read_slice("r", "", 1, 110 * S).is_empty());
        // S2: a reader whose clock is ahead by the TTL sees the fresh cell as already expired.
        assert!(store.read_slice("r", "", 1, (100 + 10) * S).is_empty());
    }

    #[test]
    fn slice_reads_start_at_a_column_skip_dead_cells_and_stop_at_count() {
        let mut store = RowStore::new();
        for (i, column) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            store.write("r", column, column, i as u64 + 1, None, 0);
        }
        store.delete("r", "c", 10);
        let columns: Vec<_> = store.read_slice("r", "b", 3, 0).into_iter().map(|c| c.column).collect();
        assert_eq!(columns, ["b", "d", "e"]);
        assert_eq!(store.read_slice("r", "", 2, 0).len(), 2);
        assert!(store.read_slice("other", "", 2, 0).is_empty());
    }

    #[test]
    fn an_order_preserving_renaming_changes_no_read() {
        let mut store = RowStore::new();
        store.write("r", "a", "x", 10, None, 0);
        store.write("r", "b", "y", 30, None, 0);
        store.delete("r", "b", 20);
        store.rename_timestamps(|ts| ts / 10);
        assert_eq!(store.version("r", "b").unwrap().timestamp_us, 3);
        assert_eq!(store.read_slice("r", "", 10, 0).len(), 2);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "must be strictly increasing")]
    fn a_renaming_that_merges_two_timestamps_is_refused_in_debug_builds() {
        let mut store = RowStore::new();
        store.write("r", "a", "x", 10, None, 0);
        store.write("r", "b", "y", 11, None, 0);
        store.rename_timestamps(|ts| ts / 10);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "must be strictly increasing")]
    fn a_rewrite_that_reorders_values_is_refused_in_debug_builds() {
        let mut store = RowStore::new();
        store.write("r", "a", "1", 10, None, 0);
        store.write("r", "b", "2", 11, None, 0);
        store.rewrite_versions(|version| {
            if let CellBody::Value { value, .. } = &mut version.body {
                *value = if value == "1" { "9".into() } else { "0".into() };
            }
        });
    }

    #[test]
    fn purge_drops_only_dead_versions_below_the_horizon() {
        let mut store = RowStore::new();
        store.write("r", "live", "v", 1, None, 0);
        store.delete("r", "old-tomb", 2);
        store.delete("r", "new-tomb", 50);
        store.write("r", "expired", "v", 3, Some(1), 0);
        assert_eq!(store.purge(10, 5 * S), 2);
        assert!(store.version("r", "old-tomb").is_none());
        assert!(store.version("r", "expired").is_none());
        assert!(store.version("r", "new-tomb").is_some());
        assert!(store.version("r", "live").is_some());
    }
}
