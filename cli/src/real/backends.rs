//! The backends of a `bench real` benchmark as its report's header states them: each server's
//! software and version, asked of the server itself, its addresses and the command that starts it.

use std::path::Path;
use std::time::Duration;

use cassalock_real::{Family, Lock, RealLock};
use cassalock_report::real_backends::BackendSetup;

use super::plan::BenchPlan;
use super::servers::{start_command, START_REPLICATED};

/// The backends of the plan, for the report's header.
pub(super) fn backends(plan: &BenchPlan, nodes: usize) -> Vec<BackendSetup> {
    let mut backends = Vec::new();
    if plan.uses(Family::Cassandra) {
        backends.push(BackendSetup {
            backend: Family::Cassandra,
            software: format!(
                "Apache Cassandra {} from jars Maven resolves, one JVM per node on 127.0.0.x",
                cassandra_version()
            ),
            servers: format!(
                "{} (contact point {}), consistency QUORUM",
                cassalock_judge::text::count(nodes, "node"),
                plan.contact_points.join(",")
            ),
            start: format!("`{}`", start_command(Lock::Queue)),
        });
    }
    if plan.uses(Family::Redis) {
        let mut servers = Vec::new();
        let mut start = vec![format!("`{}`", start_command(Lock::Redlock))];
        let single = plan.locks.iter().any(|l| l.on_one_redis());
        if single {
            servers.push(format!("SET NX and Redisson's locks: {}", plan.redis));
        }
        if plan.locks.contains(&Lock::Redlock) {
            servers.push(format!(
                "Redlock: {} masters, {}",
                plan.redlock_masters.len(),
                plan.redlock_masters.join(", ")
            ));
        }
        if single && plan.fault_seconds > 0 {
            servers.push(format!(
                "fault runs of SET NX and Redisson's locks: the pair {}",
                plan.redis_replicated.join(", ")
            ));
            start.push(format!("`{START_REPLICATED}`"));
        }
        let address = if single { &plan.redis } else { &plan.redlock_masters[0] };
        backends.push(BackendSetup {
            backend: Family::Redis,
            software: format!(
                "redis-server {}, no persistence",
                server_version(address, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n", "redis_version:")
            ),
            servers: servers.join("; "),
            start: start.join(", "),
        });
    }
    if plan.uses(Family::Memcached) {
        backends.push(BackendSetup {
            backend: Family::Memcached,
            software: format!(
                "memcached {}",
                server_version(&plan.memcached, "version\r\n", "VERSION ")
            ),
            servers: plan.memcached.clone(),
            start: format!("`{}`", start_command(Lock::Memcached)),
        });
    }
    if plan.uses(Family::ZooKeeper) {
        let version = server_version(&plan.zookeeper[0], "srvr", "Zookeeper version: ");
        backends.push(BackendSetup {
            backend: Family::ZooKeeper,
            software: format!(
                "ZooKeeper {} (Debian's package), Curator's lock layout run by our machine over the zookeeper-client crate",
                version.split(['-', ',']).next().unwrap_or(&version)
            ),
            servers: format!("{} members, {}", plan.zookeeper.len(), plan.zookeeper.join(", ")),
            start: format!("`{}`", start_command(Lock::Zookeeper)),
        });
    }
    if plan.uses(Family::Etcd) {
        let version = server_version(&plan.etcd[0], "GET /version HTTP/1.0\r\n\r\n", "\"etcdserver\":\"");
        backends.push(BackendSetup {
            backend: Family::Etcd,
            software: format!(
                "etcd {} (Debian's etcd-server), the mutex run by our machine over the etcd-client crate",
                version.split('"').next().unwrap_or(&version)
            ),
            servers: format!("{} members, {}", plan.etcd.len(), plan.etcd.join(", ")),
            start: format!("`{}`", start_command(Lock::Etcd)),
        });
    }
    backends
}

/// A server's version, asked over its own protocol: the rest of the line after `prefix` in
/// its answer to `request` ("unknown" when it does not say).
fn server_version(address: &str, request: &str, prefix: &str) -> String {
    use std::io::{Read, Write};
    let ask = || -> std::io::Result<String> {
        let address = std::net::ToSocketAddrs::to_socket_addrs(address)?
            .next()
            .ok_or_else(|| std::io::Error::other("no address"))?;
        let mut stream = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.write_all(request.as_bytes())?;
        let mut answer = vec![0; 8192];
        let read = stream.read(&mut answer)?;
        Ok(String::from_utf8_lossy(&answer[..read]).into_owned())
    };
    ask()
        .ok()
        .and_then(|answer| {
            let start = answer.find(prefix)? + prefix.len();
            let line = answer[start..].lines().next()?.trim().to_owned();
            (!line.is_empty()).then_some(line)
        })
        .unwrap_or_else(|| "(version unknown)".into())
}

/// The Cassandra version the cluster script resolves (from its pom), for the report.
fn cassandra_version() -> String {
    let pom = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cluster/pom.xml");
    std::fs::read_to_string(pom)
        .ok()
        .and_then(|text| {
            let start = text.find("<cassandra.version>")? + "<cassandra.version>".len();
            let end = text[start..].find('<')? + start;
            Some(text[start..end].to_string())
        })
        .unwrap_or_else(|| "5.0.x".into())
}
