//! Fairness and performance figures of a run, from its records.

use std::collections::BTreeMap;
use std::time::Duration;

use cassalock::driver::LockEvent;

use crate::run::RunOutcome;
use crate::trace::What;

/// What the fairness report plots, for one run. Serializable so that a shard of the fairness
/// sweep run on one machine can be merged on another: every field is an integer or a
/// `Duration` (seconds and nanoseconds), so it comes back bit for bit.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FairnessMetrics {
    pub acquisitions: u64,
    /// Acquisitions per client (node), in client order.
    pub per_client: Vec<u64>,
    /// Waiting → acquired, for every acquisition (GetLock) or success (TryGetLock).
    pub waits: Vec<Duration>,
    /// Acquisitions by a client other than the previous holder.
    pub handoffs: u64,
    pub requests: u64,
    /// The longest run of consecutive acquisitions by one client.
    pub longest_run: u64,
    /// Acquisitions that went to a client while another had been waiting longer, counted once
    /// per client overtaken.
    pub overtakes: u64,
    /// TryGetLock attempts that said no.
    pub refusals: u64,
    pub duration: Duration,
}

impl FairnessMetrics {
    pub fn from_run(outcome: &RunOutcome) -> Self {
        let clients = outcome.config.clients;
        let mut m = FairnessMetrics {
            per_client: vec![0; clients],
            requests: outcome.requests,
            duration: outcome.sim_time,
            ..FairnessMetrics::default()
        };
        let mut waiting_since: BTreeMap<usize, Duration> = BTreeMap::new();
        let mut previous: Option<usize> = None;
        let mut run = 0u64;
        for record in &outcome.records {
            let Some(client) = record.node.strip_prefix('c').and_then(|i| i.parse::<usize>().ok()) else {
                continue;
            };
            match &record.what {
                What::Waiting { .. } => {
                    waiting_since.entry(client).or_insert(record.at);
                }
                What::TryReturned { acquired: false, .. } => {
                    m.refusals += 1;
                }
                What::Lock(LockEvent::Acquired { .. }) => {
                    m.acquisitions += 1;
                    m.per_client[client] += 1;
                    let started = waiting_since.remove(&client).unwrap_or(record.at);
                    m.waits.push(record.at - started);
                    m.overtakes += waiting_since.values().filter(|&&since| since < started).count() as u64;
                    if previous == Some(client) {
                        run += 1;
                    } else {
                        if previous.is_some() {
                            m.handoffs += 1;
                        }
                        run = 1;
                    }
                    m.longest_run = m.longest_run.max(run);
                    previous = Some(client);
                }
                _ => {}
            }
        }
        m
    }

    /// Jain's fairness index of per-client acquisitions: 1 = perfectly even, 1/n = one client
    /// got everything.
    pub fn jain(&self) -> f64 {
        let shares: Vec<f64> = self.per_client.iter().map(|&x| x as f64).collect();
        cassalock_judge::stats::jain(&shares)
    }

    pub fn throughput(&self) -> f64 {
        self.acquisitions as f64 / self.duration.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_when_even_and_one_over_n_when_one_takes_all() {
        let even = FairnessMetrics {
            per_client: vec![5, 5, 5, 5],
            ..FairnessMetrics::default()
        };
        assert!((even.jain() - 1.0).abs() < 1e-12);
        let greedy = FairnessMetrics {
            per_client: vec![20, 0, 0, 0],
            ..FairnessMetrics::default()
        };
        assert!((greedy.jain() - 0.25).abs() < 1e-12);
    }
}
