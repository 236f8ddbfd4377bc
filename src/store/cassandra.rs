//! A [`Store`] over a real Apache Cassandra cluster, through the `scylla` driver.
//!
//! Only in the build without `--cfg madsim`: the simulation build never compiles a network
//! driver. The lock algorithms see exactly what they see elsewhere: a row of cells sorted by
//! column name, written with the client's timestamp and a TTL, read as a slice. Cassandra
//! itself applies the cell rules that [`super::RowStore`] models (last write wins, a tombstone
//! beats an equal timestamp, TTL counted on the coordinator's clock).
//!
//! Schema: one table, `PRIMARY KEY ((row), col)` with `col` ascending and `value blob`.
//! - write: `UPDATE .. USING TIMESTAMP ? AND TTL ? SET value = ? WHERE row = ? AND col = ?`
//!   (UPDATE writes no row marker, so an expired cell really disappears); the cells of one
//!   request go in one unlogged single-partition batch, atomic and isolated within the row;
//! - delete: `DELETE .. USING TIMESTAMP ? WHERE row = ? AND col = ?`;
//! - slice read: `SELECT col, value, WRITETIME(value) .. WHERE row = ? AND col >= ? LIMIT ?`.
//!
//! Every statement is prepared once, runs at the configured consistency (QUORUM by default),
//! and is never retried by the driver: the machines retry, and count what they send.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::policies::retry::FallthroughRetryPolicy;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;

use super::{LiveCell, Store, StoreFailure, StoreOp, StoreReply, StoreRequest};

/// The consistency level of every lock request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Consistency {
    One,
    Quorum,
    All,
}

impl Consistency {
    fn to_driver(self) -> scylla::statement::Consistency {
        match self {
            Consistency::One => scylla::statement::Consistency::One,
            Consistency::Quorum => scylla::statement::Consistency::Quorum,
            Consistency::All => scylla::statement::Consistency::All,
        }
    }
}

/// Where and how to connect.
#[derive(Clone, Debug)]
pub struct CassandraConfig {
    /// `host:port` of one or more nodes.
    pub contact_points: Vec<String>,
    pub keyspace: String,
    pub table: String,
    /// Replication factor of the keyspace when this store creates it; `None`: as many nodes
    /// as the cluster has, at most 3.
    pub replication_factor: Option<u8>,
    pub consistency: Consistency,
    /// Client-side limit on one request; above the servers' own timeouts (5 s in the
    /// cluster's yaml) so that a server-side timeout arrives as one.
    pub request_timeout: Duration,
    /// Limit on connecting and setting up (session, keyspace, table, prepared statements): a
    /// contact point that accepts connections but never answers (a paused node) fails after
    /// this instead of the driver's own minute.
    pub connect_timeout: Duration,
    /// `gc_grace_seconds` of the lock table: how long tombstones are kept. Lock rows are
    /// deleted and expire all the time; a short grace keeps reads from wading through them.
    pub gc_grace_s: u32,
}

/// The default of [`CassandraConfig::connect_timeout`], seconds.
pub const DEFAULT_CONNECT_TIMEOUT_S: u64 = 15;

impl Default for CassandraConfig {
    fn default() -> Self {
        CassandraConfig {
            contact_points: vec!["127.0.0.1:9042".into()],
            keyspace: "cassalock".into(),
            table: "locks".into(),
            replication_factor: None,
            consistency: Consistency::Quorum,
            request_timeout: Duration::from_secs(12),
            connect_timeout: Duration::from_secs(DEFAULT_CONNECT_TIMEOUT_S),
            gc_grace_s: super::DEFAULT_GC_GRACE_S,
        }
    }
}

/// Why connecting or preparing failed.
#[derive(Debug, thiserror::Error)]
pub enum CassandraError {
    #[error(
        "{what} {name:?} is not a plain CQL name: use 1-48 characters, a lowercase letter first, then lowercase letters, digits or _"
    )]
    BadName { what: &'static str, name: String },
    #[error("no contact point given: pass at least one host:port, e.g. 127.0.0.1:9042")]
    NoContactPoints,
    #[error("replication factor must be between 1 and 5, not {0}")]
    BadReplicationFactor(u8),
    #[error("cannot connect to Cassandra at {contact_points}: {reason} (is the cluster up? `cluster/cassalock-cluster status`)")]
    Connect { contact_points: String, reason: String },
    #[error("Cassandra refused `{statement}`: {reason}")]
    Statement { statement: String, reason: String },
    #[error("no answer from Cassandra at {contact_points} within {seconds} s of connecting and setting up (a paused or overloaded node? `cluster/cassalock-cluster status`; the limit is --connect-timeout-s)")]
    ConnectTimeout { contact_points: String, seconds: u64 },
}

/// Check a keyspace or table name: the names are spliced into CQL text, so only plain
/// lowercase identifiers pass (no quoting, no injection).
pub fn validate_name(what: &'static str, name: &str) -> Result<(), CassandraError> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if first_ok && rest_ok && name.len() <= 48 {
        Ok(())
    } else {
        Err(CassandraError::BadName {
            what,
            name: name.to_owned(),
        })
    }
}

/// The lock store on a real cluster.
pub struct CassandraStore {
    session: Arc<Session>,
    write: PreparedStatement,
    delete: PreparedStatement,
    read: PreparedStatement,
    requests: AtomicU64,
    nodes: usize,
}

impl CassandraStore {
    /// Connect, create the keyspace and table if they do not exist, and prepare the
    /// statements.
    pub async fn connect(config: &CassandraConfig) -> Result<Self, CassandraError> {
        match tokio::time::timeout(config.connect_timeout, Self::connect_unbounded(config)).await {
            Ok(result) => result,
            Err(_) => Err(CassandraError::ConnectTimeout {
                contact_points: config.contact_points.join(","),
                seconds: config.connect_timeout.as_secs(),
            }),
        }
    }

    async fn connect_unbounded(config: &CassandraConfig) -> Result<Self, CassandraError> {
        validate_name("keyspace", &config.keyspace)?;
        validate_name("table", &config.table)?;
        let session = Arc::new(open_session(config).await?);
        let nodes = node_count(&session).await?;
        let rf = match config.replication_factor {
            Some(rf) if !(1..=5).contains(&rf) => return Err(CassandraError::BadReplicationFactor(rf)),
            Some(rf) => rf as usize,
            None => nodes.clamp(1, 3),
        };
        let (ks, table) = (&config.keyspace, &config.table);
        run_ddl(
            &session,
            &format!("CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"),
        )
        .await?;
        run_ddl(
            &session,
            &format!(
                "CREATE TABLE IF NOT EXISTS {ks}.{table} (row text, col text, value blob, PRIMARY KEY ((row), col)) \
                 WITH CLUSTERING ORDER BY (col ASC) AND gc_grace_seconds = {}",
                config.gc_grace_s
            ),
        )
        .await?;
        let write = prepare(
            &session,
            &format!("UPDATE {ks}.{table} USING TIMESTAMP ? AND TTL ? SET value = ? WHERE row = ? AND col = ?"),
        )
        .await?;
        let delete = prepare(
            &session,
            &format!("DELETE FROM {ks}.{table} USING TIMESTAMP ? WHERE row = ? AND col = ?"),
        )
        .await?;
        let read = prepare(
            &session,
            &format!("SELECT col, value, WRITETIME(value) FROM {ks}.{table} WHERE row = ? AND col >= ? LIMIT ?"),
        )
        .await?;
        Ok(CassandraStore {
            session,
            write,
            delete,
            read,
            requests: AtomicU64::new(0),
            nodes,
        })
    }

    /// Requests sent through this store (each batch counts once).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Nodes in the cluster when this store connected.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The driver session, for callers that need more than the lock table (the LWT reference
    /// lock of the benchmark, say).
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    async fn run(&self, request: StoreRequest) -> Result<StoreReply, StoreFailure> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        match request {
            StoreOp::Write { row, cells, timestamp } => {
                let timestamp =
                    i64::try_from(timestamp).map_err(|_| StoreFailure::Other("timestamp above i64".into()))?;
                let values: Vec<(i64, i32, Vec<u8>, &str, &str)> = cells
                    .iter()
                    .map(|cell| {
                        let ttl_s = cell.ttl_s.unwrap_or(0);
                        // Refused, not clamped: a shorter TTL than asked would be a silent change.
                        let ttl = i32::try_from(ttl_s)
                            .map_err(|_| StoreFailure::Other(format!("TTL {ttl_s} s above the driver's i32")))?;
                        Ok((
                            timestamp,
                            ttl,
                            cell.value.as_bytes().to_vec(),
                            row.as_str(),
                            cell.column.as_str(),
                        ))
                    })
                    .collect::<Result<_, StoreFailure>>()?;
                match values.as_slice() {
                    [] => Ok(StoreReply::Done),
                    [one] => {
                        self.session.execute_unpaged(&self.write, one).await.map_err(failure)?;
                        Ok(StoreReply::Done)
                    }
                    many => {
                        let mut batch = Batch::new(BatchType::Unlogged);
                        for _ in many {
                            batch.append_statement(self.write.clone());
                        }
                        self.session.batch(&batch, many).await.map_err(failure)?;
                        Ok(StoreReply::Done)
                    }
                }
            }
            StoreOp::Delete { row, column, timestamp } => {
                let timestamp =
                    i64::try_from(timestamp).map_err(|_| StoreFailure::Other("timestamp above i64".into()))?;
                self.session
                    .execute_unpaged(&self.delete, (timestamp, row.as_str(), column.as_str()))
                    .await
                    .map_err(failure)?;
                Ok(StoreReply::Done)
            }
            StoreOp::ReadSlice { row, start, count } => {
                // CQL refuses LIMIT 0 (asking for 1 and keeping none, below, is the same read);
                // a count above i32::MAX asks for more rows than any partition holds.
                let limit = i32::try_from(count.max(1)).unwrap_or(i32::MAX);
                let result = self
                    .session
                    .execute_unpaged(&self.read, (row.as_str(), start.as_str(), limit))
                    .await
                    .map_err(failure)?;
                let rows = result
                    .into_rows_result()
                    .map_err(|e| StoreFailure::Other(format!("a slice read returned no rows result: {e}")))?;
                let mut cells = Vec::new();
                for parsed in rows
                    .rows::<(String, Vec<u8>, i64)>()
                    .map_err(|e| StoreFailure::Other(format!("unexpected slice columns: {e}")))?
                {
                    let (column, value, written) =
                        parsed.map_err(|e| StoreFailure::Other(format!("unreadable slice row: {e}")))?;
                    let value = String::from_utf8(value)
                        .map_err(|_| StoreFailure::Other(format!("cell {column:?} holds a value that is not UTF-8")))?;
                    // Refused, not mapped to 0: the lock code only writes positive timestamps.
                    let timestamp_us = u64::try_from(written).map_err(|_| {
                        StoreFailure::Other(format!("cell {column:?} has a negative write time {written}"))
                    })?;
                    cells.push(LiveCell {
                        column,
                        value,
                        timestamp_us,
                    });
                }
                cells.truncate(count as usize);
                debug_assert!(
                    cells.windows(2).all(|pair| pair[0].column < pair[1].column),
                    "Cassandra answered a slice read out of column order"
                );
                Ok(StoreReply::Slice(cells))
            }
        }
    }
}

impl Store for CassandraStore {
    fn execute(
        &self,
        request: StoreRequest,
    ) -> impl std::future::Future<Output = Result<StoreReply, StoreFailure>> + Send {
        self.run(request)
    }
}

async fn open_session(config: &CassandraConfig) -> Result<Session, CassandraError> {
    if config.contact_points.is_empty() {
        return Err(CassandraError::NoContactPoints);
    }
    let profile = ExecutionProfile::builder()
        .consistency(config.consistency.to_driver())
        .request_timeout(Some(config.request_timeout))
        .retry_policy(Arc::new(FallthroughRetryPolicy))
        .build();
    SessionBuilder::new()
        .known_nodes(&config.contact_points)
        .connection_timeout(Duration::from_secs(5))
        .default_execution_profile_handle(profile.into_handle())
        .build()
        .await
        .map_err(|e| CassandraError::Connect {
            contact_points: config.contact_points.join(","),
            reason: e.to_string(),
        })
}

async fn node_count(session: &Session) -> Result<usize, CassandraError> {
    let statement = "SELECT peer FROM system.peers";
    let result = session
        .query_unpaged(statement, ())
        .await
        .map_err(|e| CassandraError::Statement {
            statement: statement.into(),
            reason: e.to_string(),
        })?;
    // An unreadable answer is an error, not "no peers" (which would pick replication factor 1).
    let peers = result
        .into_rows_result()
        .map_err(|e| CassandraError::Statement {
            statement: statement.into(),
            reason: format!("no rows result: {e}"),
        })?
        .rows_num();
    Ok(peers + 1)
}

async fn run_ddl(session: &Session, statement: &str) -> Result<(), CassandraError> {
    session
        .query_unpaged(statement, ())
        .await
        .map_err(|e| CassandraError::Statement {
            statement: statement.into(),
            reason: e.to_string(),
        })?;
    session
        .await_schema_agreement()
        .await
        .map_err(|e| CassandraError::Statement {
            statement: format!("(schema agreement after) {statement}"),
            reason: e.to_string(),
        })?;
    Ok(())
}

async fn prepare(session: &Session, statement: &str) -> Result<PreparedStatement, CassandraError> {
    session.prepare(statement).await.map_err(|e| CassandraError::Statement {
        statement: statement.into(),
        reason: e.to_string(),
    })
}

/// Map a driver error onto what the lock code handles. A request whose fate is unknown (the
/// server or the client timed out, the connection broke after sending) is a
/// [`StoreFailure::Timeout`]: a write may have been applied. Only errors that prove nothing
/// was applied become [`StoreFailure::Unavailable`].
pub fn failure(error: ExecutionError) -> StoreFailure {
    match &error {
        ExecutionError::RequestTimeout(_) => StoreFailure::Timeout,
        ExecutionError::EmptyPlan | ExecutionError::ConnectionPoolError(_) => StoreFailure::Unavailable,
        ExecutionError::LastAttemptError(attempt) => match attempt {
            RequestAttemptError::DbError(db, _) => match db {
                DbError::Unavailable { .. } | DbError::Overloaded | DbError::IsBootstrapping => {
                    StoreFailure::Unavailable
                }
                DbError::ReadTimeout { .. }
                | DbError::WriteTimeout { .. }
                | DbError::ReadFailure { .. }
                | DbError::WriteFailure { .. } => StoreFailure::Timeout,
                _ => StoreFailure::Other(error.to_string()),
            },
            RequestAttemptError::BrokenConnectionError(_) | RequestAttemptError::UnableToAllocStreamId => {
                StoreFailure::Timeout
            }
            _ => StoreFailure::Other(error.to_string()),
        },
        _ => StoreFailure::Other(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_spliced_into_cql_are_plain_identifiers_only() {
        for good in ["cassalock", "locks", "a", "lock_table_2"] {
            assert!(validate_name("table", good).is_ok(), "{good} should pass");
        }
        for bad in [
            "",
            "Locks",
            "2locks",
            "locks; DROP TABLE x",
            "a\"b",
            "lock-table",
            &"x".repeat(49),
        ] {
            assert!(validate_name("table", bad).is_err(), "{bad:?} must be refused");
        }
    }
}
