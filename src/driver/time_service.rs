//! A replica of the global time service (section 5.4): runs the
//! [`crate::algo::time_service::TimeServiceSchedule`] machine, which runs
//! Listing 8 once per period.

use crate::algo::global_time::{GlobalTimeUpdate, TryUpdateGlobalTime};
use crate::algo::queue_column::ClientId;
use crate::algo::time_service::{TimeServiceConfig, TimeServiceSchedule};
use crate::algo::RetryPolicy;
use crate::driver::{Clock, Engine, Hooks, TimeSource};
use crate::store::Store;

pub use crate::algo::time_service::THESIS_PERIOD_MS;

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

    /// Run Listing 8 every period, `rounds` times (`None`: for ever). Returns the rounds run.
    pub async fn run(&self, rounds: Option<u64>) -> u64 {
        let config = TimeServiceConfig {
            period_ms: self.period_ms,
            rounds,
            retry: self.retry,
        };
        // The schedule retries inside its rounds: no Retrying wrapper around it.
        self.engine
            .drive(
                TimeServiceSchedule::new(),
                &config,
                &self.name.thread(0),
                &mut Hooks::default(),
            )
            .await
    }
}
