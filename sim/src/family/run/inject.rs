//! A server fault of the scenario, injected when its trigger fires: a restart, a clock jump, a
//! failover, a cut, a slow server; recorded with its start and end.

use super::*;

pub(super) async fn inject(fault: ServerFault, recorder: &Recorder, net: &FamilyNet, servers: &Servers) {
    match fault.trigger {
        Trigger::AtMs(at_ms) => tokio::time::sleep_until(net.start + Duration::from_millis(at_ms)).await,
        Trigger::FirstAcquired { delay_ms } | Trigger::FirstRenewal { delay_ms } => {
            if matches!(fault.trigger, Trigger::FirstAcquired { .. }) {
                recorder.first_acquired.wait().await;
            } else {
                recorder.first_renewal.wait().await;
            }
            if delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
        }
    }
    let handle = Handle::current();
    match fault.action {
        ServerAction::Failover => {
            let replication = servers.replication.as_ref().expect("a failover needs a replica");
            let primary = net.slots[0].node();
            debug_assert_eq!(primary, 0, "one failover per run");
            handle.kill(servers.node_ids[primary]);
            let lost = replication.failover(&servers.nodes[primary].data);
            net.slots[0].set_node(1);
            recorder.record(
                "faults",
                FamilyWhat::Fault(format!(
                    "failover: primary s0 killed, replica s1 promoted; {lost} acknowledged batch(es) lost"
                )),
            );
            recorder.read_server(false);
        }
        ServerAction::Restart {
            server,
            persistence,
            down_ms,
        } => {
            let slot = &net.slots[server];
            let node = slot.node();
            slot.set_up(false);
            handle.kill(servers.node_ids[node]);
            let lost = {
                let mut data = lock(&servers.nodes[node].data);
                match &mut *data {
                    ServerData::Redis(keyspace) => {
                        let before = keyspace.len();
                        keyspace.crash_restart(persistence);
                        before - keyspace.len()
                    }
                    ServerData::Memcached(items) => {
                        let before = items.len();
                        items.crash_restart();
                        before - items.len()
                    }
                    // Both keep their data on disk (fsync before the reply): nothing is lost. A
                    // restarted etcd leader gives every lease its TTL again.
                    ServerData::ZooKeeper { .. } => 0,
                    ServerData::Etcd(EtcdServerState { keyspace, .. }) => {
                        let now_ms = servers.nodes[node].clock.now_us() / 1000;
                        keyspace.promote(now_ms, 0);
                        0
                    }
                    ServerData::Pair(_) => panic!("restart of a replicated pair: use a failover"),
                }
            };
            recorder.record(
                "faults",
                FamilyWhat::Fault(format!(
                    "s{server} crashed ({persistence:?} persistence: {lost} key(s) lost), down for {down_ms} ms"
                )),
            );
            recorder.read_server(false);
            tokio::time::sleep(Duration::from_millis(down_ms)).await;
            handle.restart(servers.node_ids[node]);
            slot.set_up(true);
            recorder.record("faults", FamilyWhat::Fault(format!("s{server} back up")));
            recorder.read_server(false);
        }
    }
}
