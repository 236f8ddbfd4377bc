//! `bench real`'s report in either build: written again from an earlier benchmark's data
//! (`--from-data`), and how a benchmark ends (where the report went; exit 1 when two holders
//! overlapped in a run without a fault).

use std::path::Path;
use std::process::ExitCode;

use cassalock_real::Summary;
use cassalock_report::real_backends;

use super::plan::BenchRealFlags;

pub(super) fn print_written(out: &Path, files: &[String]) {
    println!(
        "real-backends report: {}",
        files
            .iter()
            .map(|f| out.join(f).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Exit 1, saying where, when two holders overlapped in a run without a fault.
pub(super) fn violations(runs: &[Summary]) -> ExitCode {
    let broken: Vec<String> = runs
        .iter()
        .filter(|r| !r.t1_belief_holds() || !r.t1_resource_holds())
        .map(|r| format!("{} at {}", r.variant, cassalock_judge::text::count(r.lockers, "locker")))
        .collect();
    if broken.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "error: mutual exclusion VIOLATED without any fault injected: {}",
            broken.join(", ")
        );
        ExitCode::from(1)
    }
}

/// `bench real --from-data FILE`: the report again from an earlier benchmark's measurements
/// (after a change to the report's text or charts), measuring nothing; any build.
pub fn rerender(data: &Path, flags: &BenchRealFlags) -> ExitCode {
    let measuring = [
        ("--locks", flags.locks.is_some()),
        ("--lockers", flags.lockers.is_some()),
        ("--seconds", flags.seconds.is_some()),
        ("--hold-ms", flags.hold_ms.is_some()),
        ("--repeats", flags.repeats.is_some()),
        ("--fault-seconds", flags.fault_seconds.is_some()),
        ("--contact-points", flags.contact_points.is_some()),
        ("--redis", flags.redis.is_some()),
        ("--redlock-masters", flags.redlock_masters.is_some()),
        ("--memcached", flags.memcached.is_some()),
        ("--redis-replicated", flags.redis_replicated.is_some()),
        ("--zookeeper", flags.zookeeper.is_some()),
        ("--etcd", flags.etcd.is_some()),
        ("--add-to", flags.add_to.is_some()),
    ];
    if let Some((flag, _)) = measuring.iter().find(|(_, given)| *given) {
        return crate::usage_error(&format!(
            "--from-data writes the report from the runs in {} and measures nothing: drop {flag}",
            data.display()
        ));
    }
    let out = flags.out.clone().unwrap_or_else(|| "reports".into());
    if let Err(e) = real_backends::read_data(data) {
        return crate::usage_error(&format!("--from-data: {e}"));
    }
    match real_backends::write_again(data, &out) {
        Ok((files, measured)) => {
            print_written(&out, &files);
            violations(&measured.runs)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
