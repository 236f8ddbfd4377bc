use super::page::slowdown_verdict;
use super::*;

#[test]
fn the_slowdown_is_judged_only_from_two_thread_counts_that_contend() {
    assert_eq!(
            slowdown_verdict(1, 1, 3.10, 3.10),
            "whether it falls as threads grow needs two thread counts of 2 or more (--threads 2,16); this run has only 1 thread"
        );
    assert_eq!(
        slowdown_verdict(2, 32, 2.99, 1.07),
        "it falls as threads grow, as the thesis says"
    );
    assert_eq!(
        slowdown_verdict(2, 4, 2.95, 2.75),
        "it falls by only 7% from 2 to 4 threads (this report counts a fall of a fifth or more)"
    );
    assert_eq!(
        slowdown_verdict(2, 4, 2.95, 3.0),
        "it does not fall as threads grow, against the thesis"
    );
}

fn run(per_client: Vec<u64>) -> FairnessMetrics {
    FairnessMetrics {
        acquisitions: per_client.iter().sum(),
        per_client,
        duration: Duration::from_secs(60),
        ..FairnessMetrics::default()
    }
}

/// Jain's index of zero acquisitions is 0/0: a run without acquisitions does not pull the
/// mean down, and with none at all the table prints "-" and the chart leaves the point off.
#[test]
fn jain_is_undefined_without_acquisitions() {
    let mixed = aggregate(&[run(vec![0, 0]), run(vec![3, 3])]);
    assert_eq!(mixed.jain, 1.0);
    let none = aggregate(&[run(vec![0, 0]), run(vec![0, 0])]);
    assert_eq!(f(none.jain, 3), "-");
    assert_eq!(none.of_acquisitions(none.jain), Y::Undefined("0 acquisitions".into()));
    assert_eq!(none.throughput, 0.0, "a rate of 0 acquisitions is 0, and is plotted");
}

/// A grid small enough to run twice in a test: 21 cells x 2 seeds = 42 runs of 3 s.
fn small() -> FairnessOptions {
    FairnessOptions {
        out: PathBuf::from("unused-by-these-tests"),
        seeds: 2,
        threads: vec![1, 2],
        hold_ms: (5, 20),
        think_ms: (0, 50),
        duration: Duration::from_secs(3),
        jobs: 2,
    }
}

/// The small grid measured whole by `measure`, and in shards 1/3, 2/3, 3/3 (each with the
/// highest `done` its progress saw), once for all the tests below.
struct Computed {
    whole: Measured,
    shards: Vec<FairnessShard>,
    progress_seen: Vec<usize>,
}

fn computed() -> &'static Computed {
    static COMPUTED: std::sync::OnceLock<Computed> = std::sync::OnceLock::new();
    COMPUTED.get_or_init(|| {
        let options = small();
        let whole = measure(&options, &|_, _| {}).expect("measured");
        let mut shards = Vec::new();
        let mut progress_seen = Vec::new();
        for k in 1..=3 {
            let seen = AtomicUsize::new(0);
            let progress = |done: usize, total: usize| {
                assert!(done <= total, "progress {done} of {total}");
                seen.fetch_max(done, Ordering::Relaxed);
            };
            shards.push(measure_shard(&options, k, 3, &progress).expect("shard measured"));
            progress_seen.push(seen.into_inner());
        }
        Computed {
            whole,
            shards,
            progress_seen,
        }
    })
}

/// Every figure of a `Measured`, bit for bit (f64's `Debug` reads back exactly; NaN is
/// "NaN", so equal to itself here, unlike under `==`).
fn figures(measured: &Measured) -> String {
    format!("{measured:?}")
}

fn through_json(shard: &FairnessShard) -> FairnessShard {
    let text = serde_json::to_string(shard).expect("a shard serializes");
    let back: FairnessShard = serde_json::from_str(&text).expect("and reads back");
    assert_eq!(&back, shard, "shard {}/{} survives JSON exactly", shard.k, shard.n);
    back
}

#[test]
fn work_list_is_jobs_then_seeds() {
    let work = work(&small());
    // 4 variants x 2 thread counts, old lock x 3 skews, queue x 3 skews x 2 time sources,
    // 4 S1 leads, 4 handoff variants x 2 latencies: 29 cells, 2 seeds each.
    assert_eq!(work.len(), 58);
    assert_eq!(work[0], (Job::Threads(0, 1), 0));
    assert_eq!(work[1], (Job::Threads(0, 1), 1));
    assert_eq!(work[2], (Job::Threads(0, 2), 0));
    assert_eq!(work[16], (Job::Skew(0, 0, false), 0));
    assert_eq!(work[41], (Job::Stall(40), 1));
    assert_eq!(work[42], (Job::Handoff(0, 0), 0));
    assert_eq!(work[57], (Job::Handoff(3, 1), 1));
}

#[test]
fn a_shard_holds_its_stride_of_the_work_list_and_the_same_runs() {
    let Computed {
        shards, progress_seen, ..
    } = computed();
    let options = small();
    let work = work(&options);
    for (shard, &seen) in shards.iter().zip(progress_seen) {
        let expected: Vec<u64> = (0..work.len() as u64).filter(|i| i % 3 == shard.k - 1).collect();
        let given: Vec<u64> = shard.results.iter().map(|(index, _, _)| *index).collect();
        assert_eq!(
            given, expected,
            "shard {}/3 holds indices k-1 mod 3, ascending",
            shard.k
        );
        assert_eq!(shard.work_items, 58);
        assert_eq!(shard.sweep, options.sweep());
        assert_eq!(seen, expected.len(), "progress counts shard {}/3's own runs", shard.k);
    }
    // Item i is the same run in a shard as anywhere: the first, the last S1 and the last
    // (a handoff run) rerun here.
    for index in [0, 41, 57] {
        let shard = &shards[index % 3];
        let item = shard.results.iter().find(|(i, _, _)| *i == index as u64).expect("item");
        let (job, seed) = &work[index];
        let (metrics, stall) = run_job(&options, job, *seed);
        assert_eq!((&item.1, item.2), (&metrics, stall), "work item {index}");
    }
    assert!(
        shards[2]
            .results
            .iter()
            .any(|(_, _, stall)| stall.is_some_and(|s| s > 0.0)),
        "the S1 items carry a stall, so its f64 goes through JSON too"
    );
}

#[test]
fn shards_assemble_in_any_order_into_what_one_run_measures() {
    let Computed { whole, shards, .. } = computed();
    let options = small();
    assert!(
        whole.threads[&(1, 2)].acquisitions > 0,
        "the grid measures something, so equal figures say something"
    );
    let read: Vec<FairnessShard> = shards.iter().map(through_json).collect();
    let orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    for order in orders {
        let given: Vec<FairnessShard> = order.iter().map(|&i| read[i].clone()).collect();
        let assembled = assemble(&options, &given).expect("three shards of one sweep");
        assert_eq!(figures(&assembled), figures(whole), "shards in order {order:?}");
        assert_eq!(
            markdown(&assembled, "workload"),
            markdown(whole, "workload"),
            "the report's text, shards in order {order:?}"
        );
    }
}

#[test]
fn assemble_ignores_where_the_files_go_and_how_many_threads_ran() {
    let Computed { whole, shards, .. } = computed();
    let options = FairnessOptions {
        out: PathBuf::from("elsewhere"),
        jobs: 7,
        ..small()
    };
    let assembled = assemble(&options, shards).expect("out and jobs are not the sweep");
    assert_eq!(assembled.threads.len(), whole.threads.len());
    assert_eq!(markdown(&assembled, "w"), markdown(whole, "w"));
}

#[test]
fn assemble_refuses_a_missing_shard() {
    let shards = &computed().shards;
    let given = [shards[2].clone(), shards[0].clone()];
    assert_eq!(
        assemble(&small(), &given).map(|_| ()),
        Err(AssembleError::Missing {
            index: 1,
            k: 2,
            n: 3,
            missing: shards[1].results.len() as u64,
        })
    );
    assert_eq!(assemble(&small(), &[]).map(|_| ()), Err(AssembleError::NoShards));
}

#[test]
fn assemble_refuses_a_shard_given_twice() {
    let shards = &computed().shards;
    let given = [
        shards[0].clone(),
        shards[1].clone(),
        shards[2].clone(),
        shards[1].clone(),
    ];
    assert_eq!(
        assemble(&small(), &given).map(|_| ()),
        Err(AssembleError::Twice { index: 1, k: 2, n: 3 })
    );
}

#[test]
fn assemble_refuses_a_shard_of_another_sweep() {
    let shards = &computed().shards;
    let other = FairnessOptions {
        hold_ms: (5, 21),
        ..small()
    };
    let refused = assemble(&other, shards).map(|_| ());
    assert_eq!(
        refused,
        Err(AssembleError::OtherSweep {
            k: 1,
            n: 3,
            expected: Box::new(other.sweep()),
            found: Box::new(small().sweep()),
        })
    );
    assert!(
        refused.unwrap_err().to_string().contains("hold 5..20 ms"),
        "the message shows the shard's sweep"
    );
    // One shard of a longer run among the others.
    let mut longer = shards[1].clone();
    longer.sweep.duration = Duration::from_secs(4);
    let given = [shards[0].clone(), longer, shards[2].clone()];
    assert!(matches!(
        assemble(&small(), &given),
        Err(AssembleError::OtherSweep { k: 2, n: 3, .. })
    ));
}

#[test]
fn assemble_refuses_malformed_shards() {
    let shards = &computed().shards;
    let with = |position: usize, change: &dyn Fn(&mut FairnessShard)| {
        let mut given = shards.clone();
        change(&mut given[position]);
        assemble(&small(), &given).map(|_| ())
    };
    assert_eq!(
        with(2, &|s| s.results.push((58, FairnessMetrics::default(), None))),
        Err(AssembleError::OutOfRange {
            index: 58,
            k: 3,
            n: 3,
            work_items: 58
        })
    );
    assert_eq!(
        with(0, &|s| s.results[0].0 = 1),
        Err(AssembleError::NotItsItem { index: 1, k: 1, n: 3 })
    );
    assert_eq!(
        with(1, &|s| s.work_items = 44),
        Err(AssembleError::OtherWorkList {
            k: 2,
            n: 3,
            found: 44,
            expected: 58
        })
    );
    assert_eq!(with(1, &|s| s.k = 0), Err(AssembleError::NotAShard { k: 0, n: 3 }));
    assert_eq!(
        with(2, &|s| s.n = 4),
        Err(AssembleError::MixedSplits {
            k: 3,
            n: 4,
            first_k: 1,
            first_n: 3
        })
    );
}
