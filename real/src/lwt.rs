//! The reference a user would pick instead of the thesis's locks: a lock on one Cassandra
//! lightweight transaction (Paxos) per step.
//!
//! - acquire: `INSERT INTO lwt_locks (lock, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?`,
//!   polled until it applies;
//! - release: `DELETE FROM lwt_locks WHERE lock = ? IF owner = ?`.
//!
//! No renewal: the benchmark's holds are milliseconds against a TTL of seconds. LWTs reject
//! `USING TIMESTAMP` and must never share cells with plain writes, so this lock has its own
//! table. It is not a thesis listing and is not model-checked; it is only measured.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cassalock::store::cassandra::{failure, validate_name, CassandraError};
use cassalock::StoreFailure;
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};

pub struct LwtLock {
    session: Arc<Session>,
    insert: PreparedStatement,
    delete: PreparedStatement,
    ttl_s: i32,
    poll: Duration,
    requests: AtomicU64,
}

impl LwtLock {
    pub async fn new(
        session: Arc<Session>,
        keyspace: &str,
        ttl_s: u32,
        poll: Duration,
    ) -> Result<Self, CassandraError> {
        validate_name("keyspace", keyspace)?;
        let ddl = format!("CREATE TABLE IF NOT EXISTS {keyspace}.lwt_locks (lock text PRIMARY KEY, owner text)");
        let statement_error = |statement: &str, e: String| CassandraError::Statement {
            statement: statement.into(),
            reason: e,
        };
        session
            .query_unpaged(ddl.as_str(), ())
            .await
            .map_err(|e| statement_error(&ddl, e.to_string()))?;
        session
            .await_schema_agreement()
            .await
            .map_err(|e| statement_error(&ddl, e.to_string()))?;
        let insert = format!("INSERT INTO {keyspace}.lwt_locks (lock, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?");
        let delete = format!("DELETE FROM {keyspace}.lwt_locks WHERE lock = ? IF owner = ?");
        let insert_prepared = session
            .prepare(insert.as_str())
            .await
            .map_err(|e| statement_error(&insert, e.to_string()))?;
        let delete_prepared = session
            .prepare(delete.as_str())
            .await
            .map_err(|e| statement_error(&delete, e.to_string()))?;
        Ok(LwtLock {
            session,
            insert: insert_prepared,
            delete: delete_prepared,
            ttl_s: i32::try_from(ttl_s).unwrap_or(i32::MAX),
            poll,
            requests: AtomicU64::new(0),
        })
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Poll the conditional insert until it applies or `max_wait` passes.
    pub async fn lock(&self, lock: &str, owner: &str, max_wait: Duration) -> Result<(), StoreFailure> {
        let began = Instant::now();
        loop {
            self.requests.fetch_add(1, Ordering::Relaxed);
            let result = self
                .session
                .execute_unpaged(&self.insert, (lock, owner, self.ttl_s))
                .await;
            match result.map(|result| held_by(result, owner)) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                // A timed-out Paxos round may have applied: the next round tells, because a
                // refused insert returns the row it found, and that row names us.
                Err(error) => {
                    let kind = failure(error);
                    if matches!(kind, StoreFailure::Other(_)) {
                        return Err(kind);
                    }
                }
            }
            if began.elapsed() >= max_wait {
                return Err(StoreFailure::Timeout);
            }
            tokio::time::sleep(self.poll).await;
        }
    }

    /// The conditional delete, tried up to 3 times while its outcome is unknown (a timed-out
    /// Paxos round).
    pub async fn unlock(&self, lock: &str, owner: &str) -> Result<Unlocked, StoreFailure> {
        let mut last = StoreFailure::Timeout;
        for attempt in 0..3 {
            self.requests.fetch_add(1, Ordering::Relaxed);
            match self
                .session
                .execute_unpaged(&self.delete, (lock, owner))
                .await
                .map_err(failure)
            {
                Ok(result) => return Ok(Unlocked::judge(applied_row(result), attempt > 0)),
                Err(StoreFailure::Other(message)) => return Err(StoreFailure::Other(message)),
                Err(unknown) => last = unknown,
            }
        }
        Err(last)
    }
}

/// How a release ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unlocked {
    /// The conditional delete applied.
    Released,
    /// A retry found no row: an earlier attempt whose reply was lost had deleted it (or the
    /// row expired meanwhile); either way nobody holds the lock by our row.
    GoneAfterLostReply,
    /// The row had expired before the first attempt: the lease ran out while held.
    Expired,
    /// Another owner holds the lock now.
    TakenOver,
}

impl Unlocked {
    /// Judge a conditional delete's answer (`[applied]`, and the owner of the row it found);
    /// `retried`: an earlier attempt timed out, so it may have applied.
    fn judge(answer: Option<(bool, Option<String>)>, retried: bool) -> Self {
        match answer {
            Some((true, _)) => Unlocked::Released,
            Some((false, Some(_))) => Unlocked::TakenOver,
            _ if retried => Unlocked::GoneAfterLostReply,
            _ => Unlocked::Expired,
        }
    }

    /// Did the lock stay ours until the release?
    pub fn kept_until_release(self) -> bool {
        matches!(self, Unlocked::Released | Unlocked::GoneAfterLostReply)
    }
}

/// The `[applied]` column of an LWT's answer, and the owner column of the row it found when
/// it did not apply.
fn applied_row(result: scylla::response::query_result::QueryResult) -> Option<(bool, Option<String>)> {
    let rows = result.into_rows_result().ok()?;
    let row = rows.maybe_first_row::<Row>().ok()??;
    let applied = matches!(row.columns.first(), Some(Some(CqlValue::Boolean(true))));
    let owner = row.columns.iter().skip(1).rev().find_map(|column| match column {
        Some(CqlValue::Text(text)) => Some(text.clone()),
        _ => None,
    });
    Some((applied, owner))
}

/// Whether the conditional insert leaves `owner` holding the lock: it applied, or it found a
/// row that already names `owner` (an earlier round that timed out had applied).
fn held_by(result: scylla::response::query_result::QueryResult, owner: &str) -> bool {
    match applied_row(result) {
        Some((true, _)) => true,
        Some((false, Some(found))) => found == owner,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_that_finds_no_row_is_told_from_a_lost_lock() {
        assert_eq!(Unlocked::judge(Some((true, None)), false), Unlocked::Released);
        assert_eq!(Unlocked::judge(Some((false, None)), true), Unlocked::GoneAfterLostReply);
        assert_eq!(Unlocked::judge(None, true), Unlocked::GoneAfterLostReply);
        assert_eq!(Unlocked::judge(Some((false, None)), false), Unlocked::Expired);
        assert_eq!(
            Unlocked::judge(Some((false, Some("b".into()))), true),
            Unlocked::TakenOver
        );
        assert!(Unlocked::GoneAfterLostReply.kept_until_release());
        assert!(!Unlocked::TakenOver.kept_until_release());
    }
}
