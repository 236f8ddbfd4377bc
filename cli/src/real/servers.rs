//! The servers `bench real` runs on by default (those the cluster scripts start) and the commands
//! that start them.

use cassalock_real::{Family, Lock};

/// `bench real`'s default servers: those `cluster/cassalock-cluster` and
/// `cluster/cassalock-servers` start (docs/servers.md, "Names, ports, roles").
pub const DEFAULT_CONTACT_POINT: &str = "127.0.0.1:9042";
pub const DEFAULT_REDIS: &str = "127.0.0.1:16380";
pub const DEFAULT_REDLOCK_MASTERS: [&str; 3] = ["127.0.0.1:16380", "127.0.0.1:16381", "127.0.0.1:16382"];
pub const DEFAULT_MEMCACHED: &str = "127.0.0.1:21211";
pub const DEFAULT_REDIS_REPLICATED: [&str; 2] = ["127.0.0.1:16390", "127.0.0.1:16391"];
pub const DEFAULT_ZOOKEEPER: [&str; 3] = ["127.0.0.1:22181", "127.0.0.1:22182", "127.0.0.1:22183"];
pub const DEFAULT_ETCD: [&str; 3] = ["127.0.0.1:23781", "127.0.0.1:23782", "127.0.0.1:23783"];

/// The command that starts the servers `lock` runs on.
pub fn start_command(lock: Lock) -> &'static str {
    match lock.family() {
        Family::Cassandra => "cluster/cassalock-cluster start --nodes 3",
        Family::Redis => "cluster/cassalock-servers start redis --instances 3",
        Family::Memcached => "cluster/cassalock-servers start memcached --instances 1",
        Family::ZooKeeper => "cluster/cassalock-servers start zookeeper --nodes 3",
        Family::Etcd => "cluster/cassalock-servers start etcd --nodes 3",
    }
}

/// The command that starts the replicated pair of the Redis failover runs.
pub const START_REPLICATED: &str = "cluster/cassalock-servers start redis-replicated";
