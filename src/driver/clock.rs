//! Clocks. The machines never read one; the drivers hand them readings.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A node's clock: a reading in microseconds since the Unix epoch, and sleeps measured by it.
///
/// The simulator gives each node its own clock (offset, drift, jumps) and routes sleeps
/// through it, so drift affects timers; the real build uses [`SystemClock`].
pub trait Clock: Send + Sync + 'static {
    fn now_us(&self) -> u64;
    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send;
}

/// The machine's wall clock and the runtime's timers (simulated ones under madsim, which
/// intercepts `SystemTime::now`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_us(&self) -> u64 {
        let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        u64::try_from(since_epoch.as_micros()).unwrap_or(u64::MAX)
    }

    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(Duration::from_millis(ms))
    }
}

impl<C: Clock> Clock for Arc<C> {
    fn now_us(&self) -> u64 {
        C::now_us(self)
    }

    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send {
        C::sleep_ms(self, ms)
    }
}
