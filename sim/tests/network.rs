//! The cluster's own transport (`--network queues`) against madsim's network:
//! the same simulated times and message counts, and every network fault doing what it does on
//! madsim's (a cut-off client hears nothing, lost messages time requests out, an isolated
//! replica misses writes, a killed node's messages are lost), deterministically.
#![cfg(madsim)]

use std::time::Duration;

use cassalock::driver::Algorithm;
use cassalock::LockEvent;
use cassalock_sim::cluster::Network;
use cassalock_sim::knobs::Knobs;
use cassalock_sim::run::{check_determinism, run, RunOutcome};
use cassalock_sim::scenario::{build, SimOptions};
use cassalock_sim::trace::{Disruption, What};

fn on(network: Network) -> SimOptions {
    SimOptions {
        knobs: Box::new(Knobs {
            network: Some(network),
            ..Knobs::default()
        }),
        ..SimOptions::default()
    }
}

fn one(scenario: &str, seed: u64, algorithm: Algorithm, network: Network, detailed: bool) -> RunOutcome {
    let config = build(scenario, seed, algorithm, &on(network)).expect("a known scenario");
    run(&config, seed, detailed)
}

/// The replies a client's lock code got, with when: `Ok` or the failure's text.
fn replies(outcome: &RunOutcome, node: &str) -> Vec<(Duration, Result<(), String>)> {
    outcome
        .records
        .iter()
        .filter(|record| record.node == node)
        .filter_map(|record| match &record.what {
            What::Lock(LockEvent::Reply { result, .. }) => Some((
                record.at,
                result.as_ref().map(|_| ()).map_err(|failure| failure.to_string()),
            )),
            _ => None,
        })
        .collect()
}

/// The periods a fault of `kind` disrupted: (node, from, to).
fn periods(outcome: &RunOutcome, kind: Disruption) -> Vec<(Option<String>, Duration, Duration)> {
    let mut open: Vec<(Option<String>, Duration)> = Vec::new();
    let mut closed = Vec::new();
    for record in &outcome.records {
        if let What::Fault {
            node, period, begins, ..
        } = &record.what
        {
            if *period != kind {
                continue;
            }
            if *begins {
                open.push((node.clone(), record.at));
            } else if let Some(i) = open.iter().position(|(n, _)| n == node) {
                let (node, from) = open.swap_remove(i);
                closed.push((node, from, record.at));
            }
        }
    }
    closed.extend(open.into_iter().map(|(node, from)| (node, from, outcome.sim_time)));
    closed
}

/// Contention, no faults: on both networks every check passes, and the simulated time and the
/// messages an acquisition costs agree within 3% over forty seeds (the queues add madsim's 2 ms
/// a message and draw latencies from the same range). Measured: old 1.0029x, queue 1.0020x
/// the simulated time of madsim's network over seeds 0..300.
#[test]
fn queues_take_the_simulated_time_and_messages_of_madsim_s_network() {
    for algorithm in [Algorithm::Old, Algorithm::Queue] {
        let mut totals = [(Duration::ZERO, 0u64); 2];
        for (i, network) in [Network::Madsim, Network::Queues].into_iter().enumerate() {
            for seed in 0..40 {
                let outcome = one("contention", seed, algorithm, network, false);
                for claim in ["T1-belief", "T1-resource", "T2", "C-free", "C-release"] {
                    assert!(
                        outcome.verdicts.passed(claim),
                        "{network} network, seed {seed}, {}: {claim} failed: {}",
                        algorithm.name(),
                        outcome.verdicts.check(claim).detail
                    );
                }
                totals[i].0 += outcome.sim_time;
                totals[i].1 += outcome.messages;
            }
        }
        let time_ratio = totals[1].0.as_secs_f64() / totals[0].0.as_secs_f64();
        let message_ratio = totals[1].1 as f64 / totals[0].1 as f64;
        eprintln!(
            "{}: queues take {time_ratio:.4}x madsim's simulated time and carry {message_ratio:.4}x its messages",
            algorithm.name()
        );
        assert!(
            (0.97..1.03).contains(&time_ratio),
            "{}: queues take {time_ratio:.3}x madsim's simulated time",
            algorithm.name()
        );
        assert!(
            (0.97..1.03).contains(&message_ratio),
            "{}: queues carry {message_ratio:.3}x madsim's messages",
            algorithm.name()
        );
    }
}

/// A seed determines its run on the queues too: the same records twice, madsim's own check
/// (the same draws at the same times) passes, and another seed gives another run.
#[test]
fn queues_a_run_is_determined_by_its_seed() {
    for (scenario, seed) in [("contention", 7), ("swarm", 3)] {
        let first = one(scenario, seed, Algorithm::Queue, Network::Queues, true);
        let second = one(scenario, seed, Algorithm::Queue, Network::Queues, true);
        assert_eq!(first.records, second.records, "{scenario} seed {seed}: two runs differ");
        let other = one(scenario, seed + 1, Algorithm::Queue, Network::Queues, true);
        assert_ne!(
            first.trace_hash,
            other.trace_hash,
            "{scenario}: seeds {seed} and {}",
            seed + 1
        );
    }
    let config = build("swarm", 5, Algorithm::Old, &on(Network::Queues)).unwrap();
    check_determinism(&config, 5);
}

/// Partition: while a client is cut off, every request it sends fails (an answer already in
/// flight when the cut began may still arrive: allow 50 ms); after the heal it is answered
/// again; the holder learns it lost the lock and somebody else acquires.
#[test]
fn queues_a_cut_off_client_hears_nothing_until_the_heal() {
    for seed in 0..3 {
        let outcome = one("partition", seed, Algorithm::Queue, Network::Queues, true);
        let cuts = periods(&outcome, Disruption::CutOff);
        assert_eq!(cuts.len(), 1, "seed {seed}: one cut");
        let (node, from, to) = cuts[0].clone();
        let node = node.expect("a cut names its client");
        let replies = replies(&outcome, &node);
        let during: Vec<_> = replies
            .iter()
            .filter(|(at, _)| *at > from + Duration::from_millis(50) && *at < to)
            .collect();
        assert!(!during.is_empty(), "seed {seed}: {node} sent nothing while cut off");
        assert!(
            during.iter().all(|(_, result)| result.is_err()),
            "seed {seed}: {node} was answered while cut off: {during:?}"
        );
        assert!(
            replies.iter().any(|(at, result)| *at > to && result.is_ok()),
            "seed {seed}: {node} was never answered after the heal"
        );
        assert!(
            !outcome.verdicts.leases_lost.is_empty(),
            "seed {seed}: the cut-off holder never learned it lost the lock"
        );
        for claim in ["T1-belief", "T1-resource", "T2"] {
            assert!(outcome.verdicts.passed(claim), "seed {seed}: {claim} failed");
        }
    }
}

/// Loss: requests fail only while messages are lost (or within one client timeout after,
/// for a request sent during it), and some do.
#[test]
fn queues_lose_messages_only_while_the_loss_lasts() {
    let mut failed = 0;
    for seed in 0..5 {
        let outcome = one("loss", seed, Algorithm::Old, Network::Queues, true);
        let lossy = periods(&outcome, Disruption::Lossy);
        assert!(!lossy.is_empty(), "seed {seed}: no loss period");
        let slack = outcome.config.cluster.client_timeout + Duration::from_millis(100);
        for client in 0..outcome.config.clients {
            for (at, result) in replies(&outcome, &format!("c{client}")) {
                if result.is_err() {
                    failed += 1;
                    assert!(
                        lossy.iter().any(|(_, from, to)| at >= *from && at <= *to + slack),
                        "seed {seed}: c{client} failed at {at:?} outside every loss period {lossy:?}: {result:?}"
                    );
                }
            }
        }
    }
    assert!(failed > 0, "no request failed under message loss in seeds 0..5");
}

/// An isolated replica misses writes: at consistency ONE that lets two clients each see their
/// own cell alone (K2), on the queues as on madsim's network (seeds 2 and 33 of 0..200 there);
/// the same plan at QUORUM is safe.
#[test]
fn queues_an_isolated_replica_misses_writes() {
    let broken = (0..40).find(|&seed| {
        !one("cl-one", seed, Algorithm::Old, Network::Queues, false)
            .verdicts
            .passed("T1-belief")
    });
    assert!(broken.is_some(), "no T1-belief violation at ONE in seeds 0..40");
    let quorum = SimOptions {
        consistency: Some(cassalock_sim::cluster::Consistency::Quorum),
        ..on(Network::Queues)
    };
    for seed in 0..5 {
        let config = build("cl-one", seed, Algorithm::Old, &quorum).unwrap();
        let outcome = run(&config, seed, false);
        assert!(outcome.verdicts.passed("T1-belief"), "seed {seed} at QUORUM");
    }
}

/// Killed and restarted nodes: a crashed holder's lock frees after its TTL, and the swarm
/// (replicas killed and restarted, clients paused, killed and restarted, links cut, loss)
/// never damages the resource, on the queues.
#[test]
fn queues_keep_kills_restarts_and_the_swarm_safe() {
    for seed in 0..4 {
        let outcome = one("crash-holder", seed, Algorithm::Queue, Network::Queues, false);
        let free = outcome
            .verdicts
            .free_after_kill
            .expect("somebody acquired after the kill");
        let ttl = Duration::from_secs(u64::from(outcome.config.ttl_s));
        assert!(
            free <= ttl + Duration::from_secs(2),
            "seed {seed}: freed {free:?} after the kill"
        );
    }
    for seed in 0..10 {
        for algorithm in [Algorithm::Old, Algorithm::Queue] {
            let outcome = one("swarm", seed, algorithm, Network::Queues, false);
            assert!(
                outcome.verdicts.passed("T1-resource"),
                "seed {seed}, {}: the resource was damaged",
                algorithm.name()
            );
        }
    }
}

/// A run whose queues hit their limit (`MAX_WAITING_MESSAGES`) lost messages no fault planned:
/// none of its checks may pass. The same records judged with the limit's note added: every
/// check that held is now a failure that says it is undecided, and none holds.
#[test]
fn queues_a_run_past_the_network_limit_passes_no_check() {
    use cassalock_sim::trace::Record;
    use cassalock_sim::transport::NETWORK_LIMIT_HIT;
    let outcome = one("contention", 0, Algorithm::Queue, Network::Queues, false);
    assert!(
        outcome.verdicts.all_passed(),
        "the plain run passes: {}",
        outcome.verdicts
    );
    let mut records = outcome.records.clone();
    records.push(Record {
        at: outcome.sim_time,
        node: "network".into(),
        clock_us: None,
        what: What::Note(format!("{NETWORK_LIMIT_HIT}: 1 message dropped")),
    });
    let killed = std::collections::BTreeSet::new();
    let judged = cassalock_sim::verdict::judge(&outcome.config, &records, outcome.sim_time, &killed);
    assert_eq!(judged.network_limit_hits, 1);
    for check in &judged.checks {
        assert_ne!(
            check.verdict,
            cassalock_judge::ClaimVerdict::Holds,
            "{} held past the network limit",
            check.claim
        );
    }
    assert!(!judged.all_passed());
    let held_before = outcome
        .verdicts
        .checks
        .iter()
        .filter(|check| check.verdict == cassalock_judge::ClaimVerdict::Holds)
        .count();
    let undecided = judged
        .checks
        .iter()
        .filter(|check| check.detail.contains("undecided: the cluster's queues hit their limit"))
        .count();
    assert!(held_before > 0);
    assert_eq!(undecided, held_before);
}
