//! The matrix's shape: its rows (the registry's locks that have a row) and its columns (the
//! fault models each row is judged under), with their titles and file-name keys.

/// A row: a lock of the registry (`cassalock::registry`) that has a row in the matrix.
pub type Row = cassalock::registry::Lock;

/// Every row, in the order of the registry's locks' declaration: the thesis's, then the other
/// families'.
pub fn matrix_rows() -> Vec<Row> {
    let mut rows: Vec<Row> = Row::all().filter(|lock| lock.entry().matrix_row.is_some()).collect();
    rows.sort();
    rows
}

/// What the matrix knows of a row beside the registry's entry.
pub trait MatrixRow {
    /// Its title in the matrix.
    fn row_title(self) -> &'static str;
    /// Its key in the matrix's file names: its registry name.
    fn key(self) -> &'static str;
    /// The faults this row is judged under: the thesis's rows under the Cassandra cluster's
    /// faults, the other families' under their servers' (a Redis server has no consistency
    /// level; a Cassandra cluster has no failover of a primary).
    fn columns(self) -> &'static [Column];
}

impl MatrixRow for Row {
    fn row_title(self) -> &'static str {
        self.entry().matrix_row.expect("a matrix row has a title (matrix_rows)")
    }

    fn key(self) -> &'static str {
        self.name()
    }

    fn columns(self) -> &'static [Column] {
        if self.is_family() {
            &Column::FAMILY
        } else {
            &Column::THESIS
        }
    }
}

/// The columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Column {
    None,
    Loss,
    Partition,
    Crash,
    Pause,
    SkewBelowTtl,
    SkewAtTtl,
    ClOne,
    RenewalRace,
    /// Store requests fail, before or after they apply.
    StoreFailure,
    /// A node's clock steps back.
    BackwardJump,
    /// An operator deletes the lock's rows while a client holds (no skew, no expiry).
    RowsDeleted,
    /// A server restarts without persistence.
    Restart,
    /// A replica is promoted before it has the primary's acknowledged writes.
    Failover,
    /// A server's clock jumps forward by the TTL.
    ServerClockJump,
    /// An unlock message (Redis pub/sub) is lost on its way to a waiter (Redisson).
    LostNotification,
}

impl Column {
    /// The columns of the thesis's rows.
    pub const THESIS: [Column; 12] = [
        Column::None,
        Column::Loss,
        Column::Partition,
        Column::Crash,
        Column::Pause,
        Column::SkewBelowTtl,
        Column::SkewAtTtl,
        Column::ClOne,
        Column::RenewalRace,
        Column::StoreFailure,
        Column::BackwardJump,
        Column::RowsDeleted,
    ];

    /// The columns of the other families' rows.
    pub const FAMILY: [Column; 8] = [
        Column::None,
        Column::Pause,
        Column::StoreFailure,
        Column::Partition,
        Column::Restart,
        Column::Failover,
        Column::ServerClockJump,
        Column::LostNotification,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Column::None => "none",
            Column::Loss => "message loss",
            Column::Partition => "partition",
            Column::Crash => "crash",
            Column::Pause => "pause",
            Column::SkewBelowTtl => "skew below the TTL",
            Column::SkewAtTtl => "skew at or above the TTL",
            Column::ClOne => "CL=ONE",
            Column::RenewalRace => "renewal race",
            Column::StoreFailure => "store failures",
            Column::BackwardJump => "clock steps back",
            Column::RowsDeleted => "lock rows deleted",
            Column::Restart => "restart without persistence",
            Column::Failover => "failover",
            Column::ServerClockJump => "server clock jumps",
            Column::LostNotification => "lost unlock message",
        }
    }

    pub(super) fn key(self) -> &'static str {
        match self {
            Column::None => "none",
            Column::Loss => "loss",
            Column::Partition => "partition",
            Column::Crash => "crash",
            Column::Pause => "pause",
            Column::SkewBelowTtl => "skew-below-ttl",
            Column::SkewAtTtl => "skew-at-ttl",
            Column::ClOne => "cl-one",
            Column::RenewalRace => "renewal-race",
            Column::StoreFailure => "store-failure",
            Column::BackwardJump => "backward-jump",
            Column::RowsDeleted => "rows-deleted",
            Column::Restart => "restart",
            Column::Failover => "failover",
            Column::ServerClockJump => "server-clock-jump",
            Column::LostNotification => "lost-notification",
        }
    }
}
