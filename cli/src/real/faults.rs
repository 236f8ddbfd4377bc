//! The faults `bench real` injects on real servers mid-run (a Cassandra node or a leader killed, a
//! Redis failover, a Redlock master paused, memcached restarted) through the cluster scripts, and
//! the run they are injected into.

use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use cassalock::registry::Servers;
use cassalock_real::runner::{execute, RunSpec};
use cassalock_real::Lock;
use cassalock_report::real_backends::FaultOutcome;

use super::plan::BenchPlan;
pub(super) use crate::cluster_scripts::{run_script, servers_status, ServerInstance};

/// The managed instance listening on `address` (127.0.0.1 only: the script binds nothing
/// else), of `kind` and in a set whose name starts with `set`.
fn instance_at<'a>(
    servers: &'a [ServerInstance],
    address: &str,
    kind: &str,
    set: &str,
) -> anyhow::Result<&'a ServerInstance> {
    let port = address
        .rsplit_once(':')
        .filter(|(host, _)| matches!(*host, "127.0.0.1" | "localhost"))
        .and_then(|(_, port)| port.parse::<u16>().ok());
    port.and_then(|port| {
        servers
            .iter()
            .find(|s| s.port == port && s.kind == kind && s.set == set)
    })
    .ok_or_else(|| {
        anyhow!("{address} is not a {kind} instance of cluster/cassalock-servers (its `status --json` lists none in set {set} there), so nothing here can inject its fault")
    })
}

/// A backend's natural fault, as this benchmark injects it mid-run.
#[derive(Clone, Debug)]
pub(super) enum Fault {
    /// SIGKILL a Cassandra node (`cassalock-cluster kill N`), restart it after the run.
    NodeKilled { node: usize, nodes: usize },
    /// `cassalock-servers failover`: the pair's primary killed, the replica promoted; the old
    /// primary restarted as its replica after the run.
    Failover,
    /// SIGSTOP one Redlock master for a third of the run, then SIGCONT.
    MasterPaused {
        name: String,
        master: usize,
        masters: usize,
    },
    /// SIGKILL memcached and start it again at once (empty: it keeps nothing).
    ServerRestarted { name: String },
    /// SIGKILL the ZooKeeper ensemble's or etcd cluster's leader (as `status` finds it just
    /// before); restarted after the run.
    LeaderKilled { name: String, members: usize },
}

impl Fault {
    /// The fault a lock gets, in a few words (for a fault that cannot run here).
    pub(super) fn planned(lock: Lock) -> &'static str {
        match lock.servers() {
            Servers::CassandraCluster => "one of 3 nodes killed (SIGKILL)",
            Servers::RedisMasters => "one master paused (SIGSTOP)",
            Servers::OneRedis => "primary killed, replica promoted (failover)",
            Servers::OneMemcached => "server killed and restarted",
            Servers::ZooKeeperEnsemble | Servers::EtcdCluster => "the leader killed (SIGKILL)",
        }
    }

    /// The fault for `lock`, or why this machine cannot inject it (print it with `{:#}`).
    pub(super) fn for_lock(
        lock: Lock,
        plan: &BenchPlan,
        nodes: usize,
        servers: &anyhow::Result<Vec<ServerInstance>>,
    ) -> anyhow::Result<Fault> {
        if lock.servers() == Servers::CassandraCluster {
            if nodes < 3 {
                bail!(
                    "a {nodes}-node cluster: QUORUM does not survive a node down (cluster/cassalock-cluster start --nodes 3)"
                );
            }
            return Ok(Fault::NodeKilled { node: nodes, nodes });
        }
        let servers = servers.as_ref().map_err(|why| anyhow!("{why:#}"))?;
        match lock.servers() {
            Servers::RedisMasters => {
                let master = plan.redlock_masters.len().min(2);
                let name = instance_at(servers, &plan.redlock_masters[master - 1], "redis", "redis")?
                    .name
                    .clone();
                Ok(Fault::MasterPaused {
                    name,
                    master,
                    masters: plan.redlock_masters.len(),
                })
            }
            Servers::OneMemcached => Ok(Fault::ServerRestarted {
                name: instance_at(servers, &plan.memcached, "memcached", "memcached")?
                    .name
                    .clone(),
            }),
            Servers::ZooKeeperEnsemble | Servers::EtcdCluster => {
                let (members, kind) = if lock.servers() == Servers::ZooKeeperEnsemble {
                    (&plan.zookeeper, "zookeeper")
                } else {
                    (&plan.etcd, "etcd")
                };
                if members.len() < 3 {
                    bail!(
                        "{} member(s): a majority does not survive its leader killed (cluster/cassalock-servers start {kind} --nodes 3)",
                        members.len()
                    );
                }
                let mut leader = None;
                for address in members {
                    let instance = instance_at(servers, address, kind, kind)?;
                    if instance.role == "leader" {
                        leader = Some(instance.name.clone());
                    }
                }
                let name = leader.ok_or_else(|| {
                    anyhow!(
                        "no member of {} is the {kind} leader now (`cluster/cassalock-servers status`)",
                        members.join(",")
                    )
                })?;
                Ok(Fault::LeaderKilled {
                    name,
                    members: members.len(),
                })
            }
            Servers::OneRedis | Servers::CassandraCluster => {
                for address in &plan.redis_replicated {
                    instance_at(servers, address, "redis", "redis-replicated")?;
                }
                Ok(Fault::Failover)
            }
        }
    }

    pub(super) fn on_replicated_pair(&self) -> bool {
        matches!(self, Fault::Failover)
    }

    /// When, after the run starts, the fault is injected; a pause lasts as long again.
    fn at(run_s: u64) -> Duration {
        Duration::from_secs_f64(run_s as f64 / 3.0)
    }

    pub(super) fn describe(&self, run_s: u64) -> String {
        let at = format!("{:.1} s", Fault::at(run_s).as_secs_f64());
        match self {
            Fault::NodeKilled { node, nodes } => {
                format!("node {node} of {nodes} killed (SIGKILL) {at} in, restarted after the run")
            }
            Fault::Failover => format!("primary killed (SIGKILL) and replica promoted (`failover`) {at} in"),
            Fault::MasterPaused { name, master, masters } => {
                format!("master {master} of {masters} ({name}) paused (SIGSTOP) {at} in, resumed {at} later")
            }
            Fault::ServerRestarted { name } => {
                format!("{name} killed (SIGKILL) and restarted, empty, {at} in")
            }
            Fault::LeaderKilled { name, members } => {
                format!("the leader ({name}, of {members} members) killed (SIGKILL) {at} in, restarted after the run")
            }
        }
    }

    /// Inject the fault (a pause: and end it).
    fn inject(&self, run_s: u64) -> anyhow::Result<()> {
        match self {
            Fault::NodeKilled { node, .. } => run_script("cassalock-cluster", &["kill", &node.to_string()]).map(drop),
            Fault::Failover => run_script("cassalock-servers", &["failover"]).map(drop),
            Fault::MasterPaused { name, .. } => {
                run_script("cassalock-servers", &["pause", name])?;
                std::thread::sleep(Fault::at(run_s));
                run_script("cassalock-servers", &["resume", name]).map(drop)
            }
            Fault::ServerRestarted { name } => {
                run_script("cassalock-servers", &["kill", name])?;
                run_script("cassalock-servers", &["restart", name]).map(drop)
            }
            Fault::LeaderKilled { name, .. } => run_script("cassalock-servers", &["kill", name]).map(drop),
        }
    }

    /// Bring the backend back as it was before the run, for the runs after it.
    fn restore(&self) -> anyhow::Result<()> {
        match self {
            Fault::NodeKilled { node, .. } => {
                run_script("cassalock-cluster", &["restart", &node.to_string()]).map(drop)
            }
            // The old primary, recorded as the new one's replica, comes back as that.
            Fault::Failover => run_script("cassalock-servers", &["restart", "replica"]).map(drop),
            // Resumed already, unless `inject` failed between its pause and its resume: a
            // SIGCONT to a running process changes nothing.
            Fault::MasterPaused { name, .. } => run_script("cassalock-servers", &["resume", name]).map(drop),
            Fault::ServerRestarted { .. } => Ok(()),
            Fault::LeaderKilled { name, .. } => run_script("cassalock-servers", &["restart", name]).map(drop),
        }
    }
}

/// One run with `fault` injected a third of the way in; its outcome, and whether the
/// backend was brought back afterwards (print why not with `{:#}`).
pub(super) fn run_through(spec: &RunSpec, fault: &Fault, run_s: u64) -> (FaultOutcome, anyhow::Result<()>) {
    let running = {
        let spec = spec.clone();
        std::thread::spawn(move || execute(&spec, false).map_err(|e| anyhow!("{e}")))
    };
    std::thread::sleep(Fault::at(run_s));
    let injected = fault.inject(run_s);
    let result = running
        .join()
        .unwrap_or_else(|_| Err(anyhow!("the run's thread panicked")));
    let restored = fault
        .restore()
        .context("the backend was not brought back after the fault");
    let outcome = match (injected, result) {
        (Err(e), _) => FaultOutcome::NotRun(format!("the fault could not be injected: {e:#}")),
        (Ok(()), Err(e)) => FaultOutcome::NotRun(format!("the run failed: {e:#}")),
        (Ok(()), Ok(summary)) => FaultOutcome::Ran(Box::new(summary)),
    };
    (outcome, restored)
}
