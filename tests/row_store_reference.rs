//! `RowStore` against a deliberately naive reference, over random sequences of writes,
//! deletes of a cell and of a whole row, reads, clock advances and compactions.
//!
//! The reference keeps every write ever made in a list. A read scans the whole list, finds each
//! cell's winner by comparing versions pairwise with the rules spelled out as plain `if`s, and
//! only then filters by liveness and sorts. Nothing is shared with `RowStore` but the inputs.

use cassalock::store::{CellBody, CellVersion, LiveCell, RowStore, MICROS_PER_SECOND};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Write {
        row: u8,
        column: String,
        value: String,
        timestamp_us: u64,
        ttl_s: Option<u32>,
    },
    Delete {
        row: u8,
        column: String,
        timestamp_us: u64,
    },
    /// A row tombstone (`DELETE FROM t WHERE key = ?`).
    DeleteRow {
        row: u8,
        timestamp_us: u64,
    },
    Read {
        row: u8,
        start: String,
        count: usize,
    },
    Advance {
        by_us: u64,
    },
}

#[derive(Clone, Debug)]
struct Written {
    row: u8,
    column: String,
    timestamp_us: u64,
    tombstone: bool,
    value: String,
    expires_at_s: Option<u64>,
}

/// Does `a` beat `b` under Cassandra's rules?
fn beats(a: &Written, b: &Written) -> bool {
    if a.timestamp_us != b.timestamp_us {
        return a.timestamp_us > b.timestamp_us;
    }
    if a.tombstone != b.tombstone {
        return a.tombstone; // a delete wins a tie
    }
    if a.value != b.value {
        return a.value > b.value;
    }
    // Equal timestamp and value: the later expiry (no expiry is the latest).
    a.expires_at_s.unwrap_or(u64::MAX) > b.expires_at_s.unwrap_or(u64::MAX)
}

#[derive(Default)]
struct Reference {
    log: Vec<Written>,
    /// Every row delete ever made: (row, timestamp).
    row_deletes: Vec<(u8, u64)>,
}

impl Reference {
    fn read(&self, row: u8, start: &str, count: usize, now_us: u64) -> Vec<LiveCell> {
        let now_s = now_us / MICROS_PER_SECOND;
        let mut winners: Vec<&Written> = Vec::new();
        for write in self.log.iter().filter(|w| w.row == row) {
            match winners.iter_mut().find(|w| w.column == write.column) {
                Some(winner) => {
                    if beats(write, winner) {
                        *winner = write;
                    }
                }
                None => winners.push(write),
            }
        }
        let mut live: Vec<LiveCell> = winners
            .into_iter()
            .filter(|w| !w.tombstone && w.expires_at_s.is_none_or(|expiry| now_s < expiry))
            // A row delete at or after the cell's timestamp shadows it, whenever either came.
            .filter(|w| {
                !self
                    .row_deletes
                    .iter()
                    .any(|&(r, at_us)| r == row && at_us >= w.timestamp_us)
            })
            .filter(|w| w.column.as_str() >= start)
            .map(|w| LiveCell {
                column: w.column.clone(),
                value: w.value.clone(),
                timestamp_us: w.timestamp_us,
            })
            .collect();
        live.sort_by(|a, b| a.column.as_bytes().cmp(b.column.as_bytes()));
        live.truncate(count);
        live
    }
}

fn row_key(row: u8) -> String {
    format!("row{row}")
}

fn column() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["a", "b", "c", "d", "e", "GlobalTime", "00000000000000000005t1:0"])
            .prop_map(String::from),
        "[a-c]{1,3}",
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..3, column(), prop::sample::select(vec!["x", "y", "z"]), 0u64..20, prop::option::of(1u32..6)).prop_map(
            |(row, column, value, timestamp_us, ttl_s)| Op::Write { row, column, value: value.into(), timestamp_us, ttl_s }
        ),
        2 => (0u8..3, column(), 0u64..20).prop_map(|(row, column, timestamp_us)| Op::Delete { row, column, timestamp_us }),
        1 => (0u8..3, 0u64..20).prop_map(|(row, timestamp_us)| Op::DeleteRow { row, timestamp_us }),
        3 => (0u8..3, prop_oneof![Just(String::new()), column()], 0usize..5).prop_map(|(row, start, count)| Op::Read { row, start, count }),
        2 => prop_oneof![0u64..3, Just(MICROS_PER_SECOND), Just(2 * MICROS_PER_SECOND + 1)].prop_map(|by_us| Op::Advance { by_us }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Every slice read of `RowStore` equals the reference's, whatever came before.
    #[test]
    fn row_store_reads_match_the_naive_reference(ops in prop::collection::vec(op(), 1..60)) {
        let mut store = RowStore::new();
        let mut reference = Reference::default();
        let mut now_us = 10 * MICROS_PER_SECOND;
        for op in ops {
            match op {
                Op::Write { row, column, value, timestamp_us, ttl_s } => {
                    store.write(&row_key(row), &column, &value, timestamp_us, ttl_s, now_us);
                    reference.log.push(Written {
                        row, column, timestamp_us, tombstone: false, value,
                        expires_at_s: ttl_s.map(|ttl| now_us / MICROS_PER_SECOND + u64::from(ttl)),
                    });
                }
                Op::Delete { row, column, timestamp_us } => {
                    store.delete(&row_key(row), &column, timestamp_us);
                    reference.log.push(Written { row, column, timestamp_us, tombstone: true, value: String::new(), expires_at_s: None });
                }
                Op::DeleteRow { row, timestamp_us } => {
                    store.delete_row(&row_key(row), timestamp_us);
                    reference.row_deletes.push((row, timestamp_us));
                }
                Op::Read { row, start, count } => {
                    prop_assert_eq!(store.read_slice(&row_key(row), &start, count, now_us), reference.read(row, &start, count, now_us));
                }
                Op::Advance { by_us } => now_us += by_us,
            }
        }
        for row in 0..3 {
            prop_assert_eq!(store.read_slice(&row_key(row), "", 100, now_us), reference.read(row, "", 100, now_us));
        }
    }

    /// Replicas that receive the same writes in different orders hold the same data: the
    /// reconciliation is commutative and idempotent (what lets the simulator's replicas
    /// converge by exchanging versions).
    #[test]
    fn order_and_repetition_of_writes_do_not_matter(
        ops in prop::collection::vec(op(), 1..40),
        shuffle_seed in any::<u64>(),
    ) {
        // A cell's version (column `Some`), or a row tombstone (column `None`).
        let versions: Vec<(String, Option<String>, CellVersion)> = ops.into_iter().filter_map(|op| match op {
            Op::Write { row, column, value, timestamp_us, ttl_s } => Some((row_key(row), Some(column), CellVersion::value(value, timestamp_us, ttl_s, 5 * MICROS_PER_SECOND))),
            Op::Delete { row, column, timestamp_us } => Some((row_key(row), Some(column), CellVersion::tombstone(timestamp_us))),
            Op::DeleteRow { row, timestamp_us } => Some((row_key(row), None, CellVersion::tombstone(timestamp_us))),
            _ => None,
        }).collect();
        let land = |store: &mut RowStore, row: &str, column: &Option<String>, version: &CellVersion| match column {
            Some(column) => { store.apply(row, column, version.clone()); }
            None => { store.delete_row(row, version.timestamp_us); }
        };
        let mut in_order = RowStore::new();
        for (row, column, version) in &versions {
            land(&mut in_order, row, column, version);
        }
        let mut shuffled = versions.clone();
        let mut state = shuffle_seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let mut other = RowStore::new();
        for (row, column, version) in shuffled.iter().chain(versions.iter()) {
            land(&mut other, row, column, version);
        }
        prop_assert_eq!(in_order, other);
    }

    /// Compaction changes no read made at or after its horizon, as long as no write older
    /// than the horizon arrives afterwards (gc_grace's promise).
    #[test]
    fn purge_changes_no_later_read(ops in prop::collection::vec(op(), 1..50), later in 0u64..8) {
        let mut store = RowStore::new();
        let now_us = 10 * MICROS_PER_SECOND;
        for op in ops {
            match op {
                Op::Write { row, column, value, timestamp_us, ttl_s } => { store.write(&row_key(row), &column, &value, timestamp_us, ttl_s, now_us); }
                Op::Delete { row, column, timestamp_us } => { store.delete(&row_key(row), &column, timestamp_us); }
                Op::DeleteRow { row, timestamp_us } => { store.delete_row(&row_key(row), timestamp_us); }
                _ => {}
            }
        }
        let mut purged = store.clone();
        let horizon = store.max_timestamp_us().unwrap_or(0) + 1;
        purged.purge(horizon, now_us);
        let only_live_values = purged.versions().all(|(_, _, v)| matches!(v.body, CellBody::Value { .. }) && v.is_live_at(now_us));
        prop_assert!(only_live_values, "purge left a dead version behind");
        let read_at = now_us + later * MICROS_PER_SECOND;
        for row in 0..3 {
            prop_assert_eq!(store.read_slice(&row_key(row), "", 100, read_at), purged.read_slice(&row_key(row), "", 100, read_at));
        }
        // A newer write lands the same way on both.
        store.write("row0", "a", "w", horizon, None, now_us);
        purged.write("row0", "a", "w", horizon, None, now_us);
        prop_assert_eq!(store.read_slice("row0", "", 100, read_at), purged.read_slice("row0", "", 100, read_at));
    }

    /// Rows are shared between clones and copied on write: whatever a clone goes through
    /// (writes, deletes, compaction, renaming of timestamps), the store it was cloned from keeps
    /// every version it had, and the clone ends where a store never shared would.
    #[test]
    fn a_clone_shares_rows_without_either_seeing_the_others_writes(
        before in prop::collection::vec(op(), 0..30),
        after in prop::collection::vec(op(), 1..30),
    ) {
        let now_us = 10 * MICROS_PER_SECOND;
        let apply = |store: &mut RowStore, ops: &[Op]| {
            for op in ops {
                match op {
                    Op::Write { row, column, value, timestamp_us, ttl_s } => { store.write(&row_key(*row), column, value, *timestamp_us, *ttl_s, now_us); }
                    Op::Delete { row, column, timestamp_us } => { store.delete(&row_key(*row), column, *timestamp_us); }
                    Op::DeleteRow { row, timestamp_us } => { store.delete_row(&row_key(*row), *timestamp_us); }
                    Op::Read { .. } => {}
                    // Compaction at a horizon in the middle of the timestamps, then a renaming.
                    Op::Advance { by_us } => {
                        store.purge(10 + by_us % 5, now_us);
                        store.rename_timestamps(|ts| ts * 2 + 1);
                    }
                }
            }
        };
        let mut original = RowStore::new();
        apply(&mut original, &before);
        let snapshot: Vec<(String, String, CellVersion)> =
            original.versions().map(|(row, column, version)| (row.to_owned(), column.to_owned(), version.clone())).collect();
        let mut shared = original.clone();
        apply(&mut shared, &after);
        let now: Vec<(String, String, CellVersion)> =
            original.versions().map(|(row, column, version)| (row.to_owned(), column.to_owned(), version.clone())).collect();
        prop_assert_eq!(&snapshot, &now, "a clone's changes reached the store it was cloned from");
        // The same history on a store that never shared a row.
        let mut alone = RowStore::new();
        apply(&mut alone, &before);
        apply(&mut alone, &after);
        prop_assert_eq!(alone, shared);
    }
}
