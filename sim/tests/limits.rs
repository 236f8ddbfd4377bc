//! A limit that is hit is reported, never silent: a read that would need more versions than the
//! simulated cluster lets one read carry ([`MAX_RAW_VERSIONS`]) fails with a store error that
//! says "limit hit", instead of answering with a slice that may miss cells.
#![cfg(madsim)]

use std::sync::{Arc, Mutex};

use cassalock::store::{Store, StoreFailure, StoreOp, StoreReply};
use cassalock::Clock;
use cassalock_sim::clock::{ClockSpec, SimClock};
use cassalock_sim::cluster::{
    client_ip, replica_addr, ClusterConfig, Network, Replica, ReplicaData, SimStore, MAX_RAW_VERSIONS,
};
use cassalock_sim::transport::QueueTransport;
use madsim::runtime::{Handle, Runtime};

const ROW: &str = "q:L";
/// The one cell every replica holds live, sorted after all the others.
const LAST: &str = "zz";

/// Start the replicas (`fill` sets up each one's data, given its clock) and send `reads` slice
/// reads of the first cell of [`ROW`] from one client; each picks a coordinator at random. On
/// both networks: the answers on madsim's, then on the queues.
fn read_through_the_cluster(
    offsets_s: [i64; 3],
    fill: fn(usize, &SimClock, &mut ReplicaData),
    reads: usize,
) -> Vec<Result<StoreReply, StoreFailure>> {
    [Network::Madsim, Network::Queues]
        .into_iter()
        .flat_map(|network| read_on(network, offsets_s, fill, reads))
        .collect()
}

fn read_on(
    network: Network,
    offsets_s: [i64; 3],
    fill: fn(usize, &SimClock, &mut ReplicaData),
    reads: usize,
) -> Vec<Result<StoreReply, StoreFailure>> {
    let runtime = Runtime::with_seed_and_config(1, madsim::Config::default());
    runtime.block_on(async move {
        let handle = Handle::current();
        let start = tokio::time::Instant::now();
        let config = ClusterConfig {
            network,
            ..ClusterConfig::default()
        };
        let transport = (network == Network::Queues).then(|| QueueTransport::new(None));
        if let Some(transport) = &transport {
            for i in 0..3 {
                transport.open(replica_addr(i).ip());
            }
        }
        for (i, offset_s) in offsets_s.into_iter().enumerate() {
            let clock = SimClock::new(
                ClockSpec {
                    offset_us: offset_s * 1_000_000,
                    ..ClockSpec::default()
                },
                start,
            );
            let mut data = ReplicaData::default();
            fill(i, &clock, &mut data);
            let replica = Replica {
                index: i,
                data: Arc::new(Mutex::new(data)),
                clock,
                config: config.clone(),
                transport: transport.clone(),
            };
            handle
                .create_node()
                .name(format!("r{i}"))
                .ip(replica_addr(i).ip())
                .init(move || replica.clone().serve())
                .build();
        }
        let client = handle.create_node().name("c0").ip(client_ip(0)).build();
        client
            .spawn(async move {
                let store = SimStore::connect(client_ip(0), config, transport).await;
                let mut answers = Vec::new();
                for _ in 0..reads {
                    let read = StoreOp::ReadSlice {
                        row: ROW.into(),
                        start: String::new(),
                        count: 1,
                    };
                    answers.push(store.execute(read).await);
                }
                answers
            })
            .await
            .expect("the client task ran")
    })
}

fn assert_limit_hit(answer: &Result<StoreReply, StoreFailure>) {
    match answer {
        Err(StoreFailure::Other(why)) => assert!(
            why.contains("limit hit") && why.contains("possibly incomplete"),
            "{why}"
        ),
        other => panic!("expected a store error naming the limit, got {other:?}"),
    }
}

#[test]
fn a_replica_holding_more_versions_than_one_read_may_carry_fails_the_read() {
    // A row full of fresh tombstones (compaction keeps them for gc_grace) before the live cell.
    let answers = read_through_the_cluster(
        [0, 0, 0],
        |_, clock, data| {
            let now_us = clock.now_us();
            for column in 0..MAX_RAW_VERSIONS {
                data.live.delete(ROW, &format!("{column:06}"), now_us);
            }
            data.live.write(ROW, LAST, "t", now_us, None, now_us);
        },
        1,
    );
    assert_eq!(answers.len(), 2, "one read on each network");
    for answer in &answers {
        assert_limit_hit(answer);
    }
}

#[test]
fn a_coordinator_whose_short_read_protection_runs_into_the_limit_fails_the_read() {
    // r1 and r2 hold MAX_RAW_VERSIONS cells live by their clocks, already expired by r0's clock
    // (100 s ahead): when r0 coordinates, every round's merged view is cut at r1's or r2's last
    // column and holds no live cell, so the limit grows to MAX_RAW_VERSIONS and the view is
    // still incomplete. It used to answer an empty slice, hiding LAST; now it fails.
    let answers = read_through_the_cluster(
        [100, 0, 0],
        |i, clock, data| {
            let now_us = clock.now_us();
            if i != 0 {
                for column in 0..MAX_RAW_VERSIONS {
                    data.live
                        .write(ROW, &format!("{column:06}"), "t", now_us, Some(30), now_us);
                }
            }
            data.live.write(ROW, LAST, "t", now_us, None, now_us);
        },
        12,
    );
    // Twelve reads on each network: r0 coordinates some of them on each.
    for (network, answers) in ["madsim", "queues"].into_iter().zip(answers.chunks(12)) {
        let mut limit_hits = 0;
        for answer in answers {
            match answer {
                // r1 or r2 coordinated: the cells are live by its clock.
                Ok(StoreReply::Slice(cells)) => assert_eq!(cells.len(), 1, "{network}: {answers:?}"),
                other => {
                    assert_limit_hit(other);
                    limit_hits += 1;
                }
            }
        }
        assert!(
            limit_hits > 0,
            "{network}: r0 never coordinated in {} reads",
            answers.len()
        );
    }
}
