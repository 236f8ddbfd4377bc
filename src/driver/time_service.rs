//! A replica of the global time service (section 5.4): runs Listing 8 every period.

use crate::algo::global_time::{GlobalTimeUpdate, TryUpdateGlobalTime};
use crate::algo::queue_column::ClientId;
use crate::algo::RetryPolicy;
use crate::driver::{Clock, Engine, TimeSource};
use crate::store::Store;

/// The thesis's period between two TryUpdateGlobalTime runs of one replica.
pub const THESIS_PERIOD_MS: u64 = 500;

/// One time-service replica: its own store handle and clock (its local time is the L of
/// Listing 8).
pub struct TimeServiceReplica<S, C> {
    engine: Engine<S, C>,
    name: ClientId,
    period_ms: u64,
    retry: RetryPolicy,
}

impl<S: Store, C: Clock> TimeServiceReplica<S, C> {
    /// `name` follows the client-id rules; `period_ms` must be at least 1.
    pub fn new(store: S, clock: C, name: &str, period_ms: u64) -> Result<Self, crate::driver::LockError> {
        let name = ClientId::new(name)?;
        if period_ms == 0 {
            return Err(crate::driver::SettingsError::ZeroInterval { name: "period_ms" }.into());
        }
        let retry = RetryPolicy::default();
        Ok(TimeServiceReplica {
            engine: Engine::new(store, clock, TimeSource::Local, retry, 0),
            name,
            period_ms,
            retry,
        })
    }

    pub fn with_observer(mut self, observer: std::sync::Arc<dyn crate::driver::Observer>) -> Self {
        self.engine = self.engine.with_observer(observer);
        self
    }

    /// One run of Listing 8.
    pub async fn update_once(&self) -> GlobalTimeUpdate {
        self.engine
            .run(TryUpdateGlobalTime::new(), &self.retry, &self.name.thread(0))
            .await
    }

    /// Run Listing 8 every period, `rounds` times (`None`: for ever).
    pub async fn run(&self, rounds: Option<u64>) {
        let mut done = 0u64;
        while rounds.is_none_or(|rounds| done < rounds) {
            self.update_once().await;
            done += 1;
            self.engine.clock().sleep_ms(self.period_ms).await;
        }
    }
}
