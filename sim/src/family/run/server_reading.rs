//! T1-server's readings: what the servers' own state says about who holds the lock, read
//! from outside the protocol (the simulation's view of every server) at the instants a client
//! records a step, and asked of the lock itself ([`SimLock::holder_on_servers`]), so no rule of
//! the lock's is written here. A reading takes no time and draws nothing from the seed, so the
//! runs' schedules are those of runs without it.

use std::sync::MutexGuard;
use std::time::Duration;

use cassalock::algo::server_holder::{ServerNow, ServerState};
use cassalock::Clock;

use super::{lock, Servers};
use crate::clock::clock_passes;
use crate::family::net::{FamilyNet, ServerData};
use crate::family::record::KEY;
use crate::family::sim_lock::SimLock;

/// What a reading found: the token the servers name (`None`: nobody), and the instant (since
/// the run began) from which its key has expired unless a command renews or deletes it first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Reading {
    pub token: Option<String>,
    pub gone_at: Option<Duration>,
}

/// The longest ahead a key's expiry is placed on the run's time line (beyond it: not placed).
const MAX_EXPIRY_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// Who `lock`'s servers say holds [`KEY`] now (`now`, since the run began), each read on its
/// serving node's clock (a server that is down read as [`ServerState::Down`]); `None` when the
/// lock does not say, or its one server is down.
pub(super) fn read_holder(
    servers: &Servers,
    net: &FamilyNet,
    lock_kind: &dyn SimLock,
    now: Duration,
) -> Option<Reading> {
    // Every logical server's data, locked in server order (as every other reader does).
    let nodes: Vec<_> = net.slots.iter().map(|slot| &servers.nodes[slot.node()]).collect();
    let guards: Vec<MutexGuard<'_, ServerData>> = nodes.iter().map(|node| lock(&node.data)).collect();
    let states: Vec<ServerNow<'_>> = (net.slots.iter().zip(&nodes).zip(&guards))
        .map(|((slot, node), data)| ServerNow {
            state: match &**data {
                _ if !slot.is_up() => ServerState::Down,
                ServerData::Redis(keyspace) => ServerState::Redis(keyspace),
                ServerData::Pair(pair) => ServerState::Redis(pair.primary()),
                ServerData::Memcached(items) => ServerState::Memcached(items),
                ServerData::ZooKeeper { tree, .. } => ServerState::ZooKeeper(tree),
                ServerData::Etcd(state) => ServerState::Etcd(&state.keyspace),
            },
            now_ms: node.clock.now_us() / 1000,
        })
        .collect();
    let holder = lock_kind.holder_on_servers(&states, KEY)?;
    // A key's expiry is on its server's clock: placed on the run's time line when the lock is on
    // one server.
    let gone_at = match (holder.gone_at_us(), nodes.as_slice()) {
        (Some(gone_at_us), [node]) => {
            let until = now.saturating_add(MAX_EXPIRY_AHEAD);
            Some(clock_passes(&node.clock, now, gone_at_us, until)).filter(|at| *at < until)
        }
        _ => None,
    };
    Some(Reading {
        token: holder.token().map(str::to_owned),
        gone_at,
    })
}
