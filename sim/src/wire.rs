//! The simulated cluster's wire: every node's address and the messages the clients, the
//! coordinators and the replicas send each other. Below the cluster, the transport and the
//! trace, which all name them.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use cassalock::store::{CellVersion, StoreFailure, StoreReply, StoreRequest};
use madsim::net::rpc::{Deserialize, Request, Serialize};

/// The lock every client contends for (with `--locks N`, N > 1: `shared-0` .. `shared-{N-1}`).
pub const LOCK: &str = "shared";

/// The port every simulated service listens on.
pub const PORT: u16 = 9042;
pub fn replica_addr(i: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1 + i as u8)), PORT)
}

pub fn client_ip(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1 + i as u8))
}

pub fn time_replica_ip(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 3, 1 + i as u8))
}

pub fn resource_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 2, 1)), PORT)
}

/// Client → coordinator.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Coordinate(pub StoreRequest);
impl Request for Coordinate {
    type Response = Result<StoreReply, StoreFailure>;
    const ID: u64 = 0xCA55_0001;
}

/// Coordinator → replica: merge these versions.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Apply {
    pub row: String,
    pub versions: Vec<(String, CellVersion)>,
}
impl Request for Apply {
    type Response = ();
    const ID: u64 = 0xCA55_0002;
}

/// Coordinator → replica: the versions of a slice (tombstones and expired cells included),
/// stopping once `live_limit` live cells (by the replica's clock) have been included.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReadRaw {
    pub row: String,
    pub start: String,
    pub live_limit: usize,
}

/// A replica's refusal to answer a raw read, in a sentence (a read that would carry more
/// versions than one read may: the client's request fails with it, never with a shorter slice).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{0}")]
pub struct ReadRefused(pub String);

/// A replica's answer: the versions, and whether it stopped at the limit (more may follow).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RawSlice {
    pub versions: Vec<(String, CellVersion)>,
    pub truncated: bool,
}
impl Request for ReadRaw {
    type Response = Result<RawSlice, ReadRefused>;
    const ID: u64 = 0xCA55_0003;
}
