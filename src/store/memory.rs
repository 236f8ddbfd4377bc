//! A single in-memory copy of the data: linearizable, with the cell rules of [`RowStore`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{RowStore, Store, StoreFailure, StoreReply, StoreRequest, MICROS_PER_SECOND};
use crate::driver::Clock;

/// Compaction runs after this many requests.
const PURGE_EVERY_REQUESTS: u64 = 4096;

/// One `RowStore` behind a mutex. Its clock coordinates every request (fixes TTL expiry and
/// judges liveness). Dead versions older than `gc_grace_s` are purged now and then, as
/// Cassandra's compaction does.
pub struct InMemoryStore<C> {
    data: Mutex<RowStore>,
    clock: C,
    gc_grace_s: u64,
    requests: AtomicU64,
    /// Optional one-way latency, uniform in `0..=max_ms`, drawn from a seeded generator.
    latency: Option<(u64, Mutex<ChaCha8Rng>)>,
}

impl<C: Clock> InMemoryStore<C> {
    pub fn new(clock: C) -> Self {
        InMemoryStore {
            data: Mutex::new(RowStore::new()),
            clock,
            gc_grace_s: 60,
            requests: AtomicU64::new(0),
            latency: None,
        }
    }

    /// Delay each request and each reply by a uniform `0..=max_ms`, drawn from `seed`, so
    /// that concurrent callers interleave differently from seed to seed.
    pub fn with_latency(mut self, max_ms: u64, seed: u64) -> Self {
        self.latency = Some((max_ms, Mutex::new(ChaCha8Rng::seed_from_u64(seed))));
        self
    }

    fn draw_latency_ms(&self) -> u64 {
        match &self.latency {
            None => 0,
            Some((max_ms, rng)) => rng
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .gen_range(0..=*max_ms),
        }
    }

    /// How many requests it has executed.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// A copy of the data (for tests and checks).
    pub fn snapshot(&self) -> RowStore {
        self.data
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Read live cells at the store's clock.
    pub fn read_now(&self, row: &str, count: usize) -> Vec<super::LiveCell> {
        self.snapshot().read_slice(row, "", count, self.clock.now_us())
    }

    fn execute_now(&self, request: &StoreRequest) -> StoreReply {
        let now_us = self.clock.now_us();
        let executed = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let mut data = self.data.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if executed % PURGE_EVERY_REQUESTS == 0 {
            let horizon_us = now_us.saturating_sub(self.gc_grace_s * MICROS_PER_SECOND);
            data.purge(horizon_us, horizon_us);
        }
        request.apply_to(&mut data, now_us)
    }
}

impl<C: Clock> Store for InMemoryStore<C> {
    async fn execute(&self, request: StoreRequest) -> Result<StoreReply, StoreFailure> {
        if self.latency.is_none() {
            return Ok(self.execute_now(&request));
        }
        let (there_ms, back_ms) = (self.draw_latency_ms(), self.draw_latency_ms());
        self.clock.sleep_ms(there_ms).await;
        let reply = self.execute_now(&request);
        self.clock.sleep_ms(back_ms).await;
        Ok(reply)
    }
}
