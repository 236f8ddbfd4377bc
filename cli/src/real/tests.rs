//! Tests of `bench real`'s plan and checks, its warm-up's end, its report written again from
//! data, and the start commands.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cassalock_real::{Family, Lock, Summary};
use cassalock_report::real_backends;

use super::plan::{row_lock_settings, BenchPlan, BenchRealFlags};
use super::report::rerender;
use super::servers::start_command;
use super::warm_up::warm_up_settled;

/// The warm-up ends when its last two stretches agree within 15% of the faster, never on
/// one stretch, never on two that took nothing.
#[test]
fn the_warm_up_has_settled_when_two_stretches_in_a_row_agree() {
    assert!(!warm_up_settled(&[]));
    assert!(!warm_up_settled(&[50.0]));
    // A cluster just started: 6.7, then 30, then 48, then 50 (within 4%).
    assert!(!warm_up_settled(&[6.7, 30.0]));
    assert!(!warm_up_settled(&[6.7, 30.0, 48.0]), "30 against 48 is 37% apart");
    assert!(warm_up_settled(&[6.7, 30.0, 48.0, 50.0]));
    // 15% of the faster is the edge: 85 against 100 settles, 84 does not, either order.
    assert!(warm_up_settled(&[100.0, 85.0]));
    assert!(warm_up_settled(&[85.0, 100.0]));
    assert!(!warm_up_settled(&[84.0, 100.0]));
    assert!(!warm_up_settled(&[0.0, 0.0]));
}

fn plan(flags: BenchRealFlags) -> anyhow::Result<BenchPlan> {
    BenchPlan::new(flags)
}

/// Why `flags` are refused, as `bench real` prints it after "error: ".
fn refusal(flags: BenchRealFlags) -> String {
    match BenchPlan::new(flags.clone()) {
        Ok(_) => panic!("{flags:?}: not refused"),
        Err(error) => format!("{error:#}"),
    }
}

#[test]
fn the_default_plan_runs_every_lock_against_the_scripts_ports() {
    let plan = plan(BenchRealFlags::default()).expect("defaults are valid");
    // Every lock.
    assert_eq!(plan.locks, cassalock_real::real_locks());
    assert_eq!(plan.locks.len(), 13);
    assert_eq!(plan.lockers, vec![1, 4, 16]);
    assert_eq!((plan.seconds, plan.repeats, plan.fault_seconds), (20, 3, 20));
    assert_eq!(plan.runs(), 117);
    assert_eq!(plan.fault_runs(), 13);
    assert_eq!(plan.servers(Lock::Zookeeper).len(), 3);
    assert_eq!(plan.servers(Lock::Etcd)[0], "127.0.0.1:23781");
    assert_eq!(plan.servers(Lock::Redisson), vec!["127.0.0.1:16380".to_string()]);
    assert_eq!(plan.servers(Lock::Redlock).len(), 3);
    assert_eq!(plan.servers(Lock::Memcached), vec!["127.0.0.1:21211".to_string()]);
    assert!(plan.servers(Lock::Queue).is_empty());
    assert_eq!(
        plan.command(),
        "cassalock bench real --locks old,queue,queue-next-in-line,queue-paced,lwt,redis-set-nx,redisson,redisson-fair,redisson-fenced,redlock,memcached,zookeeper,etcd --lockers 1,4,16 --seconds 20 --hold-ms 10 --repeats 3 --fault-seconds 20 --contact-points 127.0.0.1:9042 --redis 127.0.0.1:16380 --redis-replicated 127.0.0.1:16390,127.0.0.1:16391 --redlock-masters 127.0.0.1:16380,127.0.0.1:16381,127.0.0.1:16382 --memcached 127.0.0.1:21211 --zookeeper 127.0.0.1:22181,127.0.0.1:22182,127.0.0.1:22183 --etcd 127.0.0.1:23781,127.0.0.1:23782,127.0.0.1:23783"
    );
    // Warm-up, 117 runs of 20 + 3 s, 13 fault runs of 20 + 60 s.
    assert_eq!(plan.estimate_s(), 15 + 117 * 23 + 13 * 80);
}

#[test]
fn add_to_needs_the_earlier_runs_settings_and_a_readable_data_file() {
    let data = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../reports/real-backends.json"));
    let flags = |lockers: Vec<usize>, path: PathBuf| BenchRealFlags {
        locks: Some(vec![Lock::RedissonFair]),
        lockers: Some(lockers),
        seconds: Some(15),
        repeats: Some(3),
        fault_seconds: Some(20),
        add_to: Some(path),
        ..BenchRealFlags::default()
    };
    // The committed data, with the row locks' long-run settings as given.
    let dir = std::env::temp_dir().join(format!("cassalock-add-to-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let with_settings = |settings: Option<real_backends::RowLockSettings>, name: &str| {
        let mut measured = real_backends::read_data(&data).expect("the committed data");
        measured.setup.row_lock_settings = settings;
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_string(&measured).expect("serializable")).expect("written");
        path
    };
    let current = with_settings(Some(row_lock_settings()), "current.json");
    let plan = BenchPlan::new(flags(vec![1, 4, 16], current.clone())).expect("the committed report's settings");
    assert!(plan.command().ends_with(&format!("--add-to {}", current.display())));
    let refused = refusal(flags(vec![1, 4], current.clone()));
    assert!(refused.contains("--lockers 1,4,16"), "{refused}");
    // Runs with another hold do not compare with the earlier ones (the report states one).
    let other_hold = BenchRealFlags {
        hold_ms: Some(0),
        ..flags(vec![1, 4, 16], current.clone())
    };
    let refused = refusal(other_hold);
    assert!(refused.contains("--hold-ms 10, this one would use 0"), "{refused}");
    let missing = refusal(flags(vec![1, 4, 16], PathBuf::from("/nonexistent/data.json")));
    assert!(missing.starts_with("--add-to: "), "{missing}");
    // A row lock measured beside row locks kept from data measured with other settings:
    // the report could not state one set of settings, so they must all be measured again.
    // Other locks may still be added to such data (the settings do not touch them).
    let older = with_settings(None, "older.json");
    BenchPlan::new(flags(vec![1, 4, 16], older.clone())).expect("redisson-fair is no row lock");
    let one_row_lock = BenchRealFlags {
        locks: Some(vec![Lock::Queue, Lock::RedissonFair]),
        ..flags(vec![1, 4, 16], older.clone())
    };
    let refused = refusal(one_row_lock);
    assert!(refused.contains("measure every row lock again"), "{refused}");
    assert!(refused.contains("--locks old,queue"), "{refused}");
    assert!(refused.ends_with(",redisson-fair"), "{refused}");
    let all_row_locks = BenchRealFlags {
        locks: Some(vec![Lock::Old, Lock::Queue, Lock::QueueNextInLine, Lock::QueuePaced]),
        ..flags(vec![1, 4, 16], older)
    };
    BenchPlan::new(all_row_locks).expect("every row lock measured again");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_command_names_only_the_servers_of_the_locks_that_run() {
    let plan = plan(BenchRealFlags {
        locks: Some(vec![Lock::Redlock, Lock::Memcached]),
        fault_seconds: Some(0),
        ..BenchRealFlags::default()
    })
    .expect("valid");
    assert!(!plan.uses(Family::Cassandra));
    assert_eq!(
        plan.command(),
        "cassalock bench real --locks redlock,memcached --lockers 1,4,16 --seconds 20 --hold-ms 10 --repeats 3 --fault-seconds 0 --redlock-masters 127.0.0.1:16380,127.0.0.1:16381,127.0.0.1:16382 --memcached 127.0.0.1:21211"
    );
    assert_eq!(
        plan.estimate_s(),
        18 * 23,
        "no warm-up without Cassandra, no fault runs"
    );
}

/// Each of `cases` is refused with a message that contains its words.
fn assert_refused<const N: usize>(cases: [(BenchRealFlags, &str); N]) {
    for (bad, says) in cases {
        let message = refusal(bad.clone());
        assert!(message.contains(says), "{bad:?}: {message}");
    }
}

/// --locks and --lockers: none, one twice, a count out of range, counts out of order.
#[test]
fn bad_locks_and_locker_counts_are_refused_naming_the_flag() {
    let flags = BenchRealFlags::default;
    assert_refused([
        (
            BenchRealFlags {
                locks: Some(vec![]),
                ..flags()
            },
            "--locks: name at least one lock",
        ),
        (
            BenchRealFlags {
                locks: Some(vec![Lock::Queue, Lock::Redlock, Lock::Queue]),
                ..flags()
            },
            "--locks: queue is named twice",
        ),
        (
            BenchRealFlags {
                lockers: Some(vec![0]),
                ..flags()
            },
            "--lockers 0: give counts between 1 and 256",
        ),
        (
            BenchRealFlags {
                lockers: Some(vec![1, 100_000]),
                ..flags()
            },
            "--lockers 100000: give counts between 1 and 256",
        ),
        (
            BenchRealFlags {
                lockers: Some(vec![]),
                ..flags()
            },
            "--lockers: give 1 to 8 counts",
        ),
        (
            BenchRealFlags {
                lockers: Some(vec![4, 4]),
                ..flags()
            },
            "--lockers 4,4: give the counts in increasing order",
        ),
    ]);
}

/// --seconds, --hold-ms, --repeats and --fault-seconds out of their ranges.
#[test]
fn bad_durations_and_repeats_are_refused_naming_the_flag_and_the_range() {
    let flags = BenchRealFlags::default;
    assert_refused([
        (
            BenchRealFlags {
                seconds: Some(0),
                ..flags()
            },
            "--seconds must be between 1 and 3600, not 0",
        ),
        (
            BenchRealFlags {
                seconds: Some(u64::MAX),
                ..flags()
            },
            "--seconds must be between 1 and 3600",
        ),
        (
            BenchRealFlags {
                hold_ms: Some(60_001),
                ..flags()
            },
            "--hold-ms must be between 0 and 60000, not 60001",
        ),
        (
            BenchRealFlags {
                hold_ms: Some(u64::MAX),
                ..flags()
            },
            "--hold-ms must be between 0 and 60000",
        ),
        (
            BenchRealFlags {
                repeats: Some(0),
                ..flags()
            },
            "--repeats must be between 1 and 20, not 0",
        ),
        (
            BenchRealFlags {
                fault_seconds: Some(2),
                ..flags()
            },
            "--fault-seconds must be 0 (no fault runs) or between 3 and 600, not 2",
        ),
    ]);
}

/// A server that is not host:port, too few or too many servers, one given twice.
#[test]
fn bad_server_addresses_are_refused_naming_the_flag_and_what_to_type() {
    let flags = BenchRealFlags::default;
    assert_refused([
        (
            BenchRealFlags {
                redis: Some("nohost".into()),
                ..flags()
            },
            "--redis: \"nohost\" is not host:port",
        ),
        (
            BenchRealFlags {
                memcached: Some("127.0.0.1:0".into()),
                ..flags()
            },
            "--memcached: \"127.0.0.1:0\" is not host:port",
        ),
        (
            BenchRealFlags {
                redlock_masters: Some(vec!["127.0.0.1:1".into(); 16]),
                ..flags()
            },
            "--redlock-masters: 16 given; give Redlock's masters (1 to 15",
        ),
        (
            BenchRealFlags {
                redlock_masters: Some(vec!["127.0.0.1:1".into(), "127.0.0.1:1".into()]),
                ..flags()
            },
            "--redlock-masters: 127.0.0.1:1 is given twice",
        ),
        (
            BenchRealFlags {
                redis_replicated: Some(vec!["127.0.0.1:16390".into()]),
                ..flags()
            },
            "--redis-replicated: 1 given; give the pair's primary and replica (2 to 16",
        ),
        (
            BenchRealFlags {
                contact_points: Some(vec![" ".into()]),
                ..flags()
            },
            "--contact-points: \" \" is not host:port",
        ),
        (
            BenchRealFlags {
                zookeeper: Some(vec!["127.0.0.1:1".into(); 8]),
                ..flags()
            },
            "--zookeeper: 8 given; give the ensemble's members (1 to 7",
        ),
    ]);
}

/// A server flag for a lock that does not run would be ignored: refused.
#[test]
fn server_flags_for_locks_that_do_not_run_are_refused() {
    let flags = BenchRealFlags::default;
    assert_refused([
        (
            BenchRealFlags {
                locks: Some(vec![Lock::Queue]),
                memcached: Some("127.0.0.1:21211".into()),
                ..flags()
            },
            "--memcached is for memcached, which this benchmark does not run (--locks queue)",
        ),
        (
            BenchRealFlags {
                locks: Some(vec![Lock::Redlock]),
                contact_points: Some(vec!["127.0.0.1:9042".into()]),
                ..flags()
            },
            "--contact-points is for old, queue, queue-next-in-line, queue-paced or lwt",
        ),
        (
            BenchRealFlags {
                fault_seconds: Some(0),
                redis_replicated: Some(vec!["127.0.0.1:1".into(), "127.0.0.1:2".into()]),
                ..flags()
            },
            "--redis-replicated is for redis-set-nx, redisson, redisson-fair or redisson-fenced, with fault runs, which this benchmark does not run (--locks old,queue,queue-next-in-line,queue-paced,lwt,redis-set-nx,redisson,redisson-fair,redisson-fenced,redlock,memcached,zookeeper,etcd, --fault-seconds 0)",
        ),
        (
            BenchRealFlags {
                locks: Some(vec![Lock::Queue]),
                etcd: Some(vec!["127.0.0.1:23781".into()]),
                ..flags()
            },
            "--etcd is for etcd, which this benchmark does not run (--locks queue)",
        ),
    ]);
}

/// Each value allowed, but together about 33 days.
#[test]
fn a_benchmark_that_would_take_too_long_is_refused() {
    let flags = BenchRealFlags::default;
    assert_refused([(
        BenchRealFlags {
            seconds: Some(3600),
            repeats: Some(20),
            ..flags()
        },
        "bench real would take about 781 h (780 runs of 3600 s, 13 fault runs of 20 s); the limit is 24 h",
    )]);
}

#[test]
fn from_data_writes_the_same_report_again_and_refuses_measuring_flags() {
    use cassalock_report::real_backends::{RedissonWake, Setup, DATA, REPORT};
    let dir = std::env::temp_dir().join(format!("cassalock-from-data-{}", std::process::id()));
    let setup = Setup {
        command: "cassalock bench real --locks memcached".into(),
        machine: "2 cores".into(),
        backends: Vec::new(),
        seconds_per_run: 15,
        hold_ms: 10,
        ttl_s: 10,
        poll_ms: 100,
        repeats: 1,
        warm_up_s: None,
        warm_up_settled: None,
        redisson_wake: RedissonWake::Notified,
        fault_lockers: 4,
        fault_seconds: 0,
        row_lock_settings: None,
    };
    let run = Summary {
        variant: Lock::Memcached.title().into(),
        lockers: 4,
        acquisitions: 100,
        acquisitions_per_s: 5.0,
        ..Summary::default()
    };
    let first = dir.join("first");
    real_backends::write(&first, &setup, &[run], &[]).expect("written");
    let again = dir.join("again");
    let flags = BenchRealFlags {
        out: Some(again.clone()),
        ..BenchRealFlags::default()
    };
    assert_eq!(rerender(&first.join(DATA), &flags), ExitCode::SUCCESS);
    let read = |d: &Path| std::fs::read_to_string(d.join(REPORT)).expect("report");
    assert_eq!(read(&first), read(&again));
    // Measuring flags, a missing file: bad usage, nothing written.
    let measuring = BenchRealFlags {
        seconds: Some(5),
        out: Some(dir.join("never")),
        ..BenchRealFlags::default()
    };
    assert_eq!(rerender(&first.join(DATA), &measuring), ExitCode::from(2));
    let missing = BenchRealFlags {
        out: Some(dir.join("never")),
        ..BenchRealFlags::default()
    };
    assert_eq!(rerender(&dir.join("nope.json"), &missing), ExitCode::from(2));
    assert!(!dir.join("never").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_lock_the_real_runner_runs_has_a_start_command() {
    for lock in cassalock_real::real_locks() {
        assert!(start_command(lock).starts_with("cluster/cassalock-"), "{lock:?}");
    }
}

/// `real`'s arguments as clap sees them, from `cassalock real WORDS`.
fn parse_real(words: &[&str]) -> Result<crate::Cli, clap::Error> {
    use clap::Parser as _;
    crate::Cli::try_parse_from(["cassalock", "real"].iter().chain(words))
}

/// A flag only a client run takes is refused beside one only cassalock's own lockers take,
/// instead of being dropped: clap alone would not ask for `--client` there.
#[test]
fn a_client_runs_flag_beside_an_own_lockers_flag_is_refused_not_dropped() {
    let own = ["--lock", "redis-set-nx", "--servers", "127.0.0.1:16380"];
    for client_only in [
        &["--pause-holder-ms", "500"][..],
        &["--proxy", "127.0.0.1:1"],
        &["--try-wait-ms", "5"],
        &["--lease-ms", "100"],
        &["--pause-at", "3"],
        &["--server-fault", "true"],
        &["--next-caller-wait-ms", "0"],
        &["--read-server-as", "redis-set-nx"],
    ] {
        let words: Vec<&str> = own.iter().chain(client_only).copied().collect();
        let refused = parse_real(&words)
            .err()
            .unwrap_or_else(|| panic!("{words:?} was taken"));
        assert_eq!(
            refused.kind(),
            clap::error::ErrorKind::ArgumentConflict,
            "{words:?}: {refused}"
        );
        for without_client in [&["--ttl-s", "5"][..], &[]] {
            let words: Vec<&str> = without_client.iter().chain(client_only).copied().collect();
            assert!(parse_real(&words).is_err(), "{words:?} was taken");
        }
    }
    assert!(parse_real(&own).is_ok());
    assert!(parse_real(&[
        "--client",
        "c",
        "--pause-holder-ms",
        "500",
        "--read-server-as",
        "redisson",
        "--servers",
        "127.0.0.1:1"
    ])
    .is_ok());
}

/// Every argument that conflicts with `--client` is in the list each client-only argument
/// conflicts with, and only those.
#[test]
fn the_own_lockers_arguments_are_exactly_those_that_conflict_with_client() {
    use clap::CommandFactory as _;
    let cli = crate::Cli::command();
    let real = cli.find_subcommand("real").expect("the real subcommand");
    let mut conflicting: Vec<&str> = real
        .get_arguments()
        .filter(|arg| {
            real.get_arg_conflicts_with(arg)
                .iter()
                .any(|other| other.get_id() == "client")
        })
        .map(|arg| arg.get_id().as_str())
        .collect();
    conflicting.sort_unstable();
    let mut listed = super::args::OWN_LOCKERS_ONLY.to_vec();
    listed.sort_unstable();
    assert_eq!(conflicting, listed);
}
