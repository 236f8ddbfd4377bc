//! The report's findings ("What the numbers say"): one function per finding or group of
//! findings, each computed from the runs, in the order the report gives them.

use std::fmt::Write as _;

use cassalock_judge::text::count;
use cassalock_real::{Family, Lock, Summary};

use super::configuration::{backend_of, lock_names, Configuration};
use super::data::{FaultOutcome, FaultRun, RedissonWake, Setup};
use super::fair_lock::{fair_lock_ceiling, fair_lock_goal};
use super::text::{and_list, f};

/// Medians closer than this fraction of the lower one are lines the eye cannot separate on
/// the throughput chart's log axis.
const CLOSE_LINES: f64 = 0.15;

/// What the findings read: the runs, their configurations and locks, and the locker counts at
/// either end.
struct Context<'g, 'a> {
    setup: &'g Setup,
    runs: &'g [Summary],
    groups: &'g [Configuration<'a>],
    locks: Vec<&'a str>,
    fewest: usize,
    most: usize,
}

impl<'g, 'a> Context<'g, 'a> {
    fn new(setup: &'g Setup, runs: &'g [Summary], groups: &'g [Configuration<'a>]) -> Self {
        Context {
            setup,
            runs,
            groups,
            locks: lock_names(groups),
            fewest: groups.iter().map(|g| g.lockers).min().unwrap_or(1),
            most: groups.iter().map(|g| g.lockers).max().unwrap_or(1),
        }
    }

    /// The configuration of `lock` at `lockers`.
    fn at(&self, lock: &str, lockers: usize) -> Option<&'g Configuration<'a>> {
        self.groups.iter().find(|g| g.variant == lock && g.lockers == lockers)
    }

    /// Locks at one locker count, by a figure (NaN last), with the figure's text.
    fn ranked(&self, lockers: usize, value: &dyn Fn(&Summary) -> f64, descending: bool) -> Vec<&'g Configuration<'a>> {
        let mut at_count: Vec<&Configuration<'_>> = self
            .groups
            .iter()
            .filter(|g| g.lockers == lockers && !g.acquired_nothing())
            .collect();
        at_count.sort_by(|a, b| {
            let (a, b) = (a.median(value), b.median(value));
            let order = if descending { b.total_cmp(&a) } else { a.total_cmp(&b) };
            a.is_nan().cmp(&b.is_nan()).then(order)
        });
        at_count
    }
}

/// A configuration's median acq/s.
fn throughput(g: &Configuration<'_>) -> f64 {
    g.median(&|r| r.acquisitions_per_s)
}

/// The sentences of "What the numbers say", each computed from the runs.
pub(super) fn findings(
    setup: &Setup,
    runs: &[Summary],
    groups: &[Configuration<'_>],
    faults: &[FaultRun],
) -> Vec<String> {
    let mut said = Vec::new();
    let cx = Context::new(setup, runs, groups);
    throughput_at_either_end(&cx, &mut said);
    no_acquisition(&cx, &mut said);
    by_backend(&cx, &mut said);
    overlapping_lines(&cx, &mut said);
    contention(&cx, &mut said);
    requests(&cx, &mut said);
    redisson(&cx, &mut said);
    spread(&cx, &mut said);
    mutual_exclusion(&cx, &mut said);
    stalled_without_a_fault(&cx, &mut said);
    under_faults(&cx, faults, &mut said);
    said.push("The simulator's reports (`fairness.md`, `matrix.md`) measure the same machines on simulated networks with 1-10 ms messages and check them under every fault the models know; here every request pays a real server's path, and the servers share two cores with the lockers.".into());
    said
}

/// Acquisitions per second at the fewest and the most lockers, fastest first.
fn throughput_at_either_end(cx: &Context<'_, '_>, said: &mut Vec<String>) {
    let Context { fewest, most, .. } = *cx;
    for lockers in [fewest, most] {
        let listed: Vec<String> = cx
            .ranked(lockers, &|r| r.acquisitions_per_s, true)
            .iter()
            .map(|g| format!("{} {}", g.variant, g.spread(&|r| r.acquisitions_per_s, 2)))
            .collect();
        if listed.is_empty() {
            continue;
        }
        let what = if lockers == 1 {
            "With one locker (no contention: each acquisition is one lock, hold, release cycle)".to_string()
        } else {
            format!("At {} (contention)", count(lockers, "locker"))
        };
        said.push(format!(
            "{what}, acquisitions per second, fastest first (median, range): {}.",
            listed.join("; ")
        ));
        if lockers == most && most == fewest {
            break;
        }
    }
}

/// The configurations that took nothing in any run.
fn no_acquisition(cx: &Context<'_, '_>, said: &mut Vec<String>) {
    let Context { groups, .. } = *cx;
    let nothing: Vec<String> = groups
        .iter()
        .filter(|g| g.acquired_nothing())
        .map(|g| format!("{} at {}", g.variant, count(g.lockers, "locker")))
        .collect();
    if !nothing.is_empty() {
        said.push(format!("No acquisition at all in any run: {}.", and_list(&nothing)));
    }
}

/// Each backend's fastest lock against Cassandra's fastest.
fn by_backend(cx: &Context<'_, '_>, said: &mut Vec<String>) {
    let Context {
        setup, fewest, most, ..
    } = *cx;
    let locks = &cx.locks;
    // Families: the best lock of each backend, against Cassandra's best.
    let backends: Vec<Family> = {
        let mut seen: Vec<Family> = locks.iter().filter_map(|l| backend_of(l)).collect();
        seen.sort();
        seen.dedup();
        seen
    };
    if backends.len() > 1 {
        let mut clauses = Vec::new();
        let counts = if fewest == most { vec![most] } else { vec![fewest, most] };
        for lockers in counts {
            let best: Vec<(Family, &Configuration<'_>)> = backends
                .iter()
                .filter_map(|&b| {
                    cx.ranked(lockers, &|r| r.acquisitions_per_s, true)
                        .into_iter()
                        .find(|g| backend_of(g.variant) == Some(b))
                        .map(|g| (b, g))
                })
                .collect();
            let Some(&(_, cassandra)) = best.iter().find(|(b, _)| *b == Family::Cassandra) else {
                continue;
            };
            let others: Vec<String> = best
                .iter()
                .filter(|(b, _)| *b != Family::Cassandra)
                .map(|(b, g)| {
                    format!(
                        "{} ({}) {} ({}x)",
                        b.name(),
                        g.variant,
                        f(throughput(g), 2),
                        f(throughput(g) / throughput(cassandra), 1)
                    )
                })
                .collect();
            if !others.is_empty() {
                clauses.push(format!(
                    "at {}, Cassandra ({}) {}, {}",
                    count(lockers, "locker"),
                    cassandra.variant,
                    f(throughput(cassandra), 2),
                    others.join(", ")
                ));
            }
        }
        if !clauses.is_empty() {
            said.push(format!(
                "By backend, the fastest lock of each in acq/s (medians; in brackets, a multiple of Cassandra's fastest): {}. Redis and Memcached answer from memory, one round trip per request; every Cassandra request goes through a coordinator to a quorum of replicas{}.{}",
                clauses.join("; "),
                if backends.iter().any(|b| matches!(b, Family::ZooKeeper | Family::Etcd)) {
                    "; a ZooKeeper or etcd write is appended to the leader's log and fsynced on a majority before it is answered"
                } else {
                    ""
                },
                // With no hold, only the requests bound a cycle: there is no ceiling to state.
                if setup.hold_ms > 0 {
                    format!(
                        " Every cycle includes the {} ms hold, so one locker cannot pass {} acq/s on any backend.",
                        setup.hold_ms,
                        f(1000.0 / setup.hold_ms as f64, 0)
                    )
                } else {
                    String::new()
                }
            ));
        }
    }
}

/// Redis and Memcached locks whose throughput lines overlap on the chart.
fn overlapping_lines(cx: &Context<'_, '_>, said: &mut Vec<String>) {
    let Context { groups, .. } = *cx;
    let locks = &cx.locks;
    // Lines the throughput chart cannot separate: the locks of Redis and Memcached, when their
    // medians lie close together at every locker count.
    let in_memory: Vec<&str> = locks
        .iter()
        .copied()
        .filter(|l| backend_of(l).is_some_and(|b| matches!(b, Family::Redis | Family::Memcached)))
        .collect();
    if in_memory.len() > 1 {
        let widest = groups
            .iter()
            .map(|g| g.lockers)
            .map(|lockers| {
                let rates: Vec<f64> = in_memory
                    .iter()
                    .filter_map(|l| cx.at(l, lockers))
                    .map(throughput)
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .collect();
                let low = rates.iter().copied().fold(f64::INFINITY, f64::min);
                let high = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (high - low) / low
            })
            .fold(0.0, f64::max);
        if widest < CLOSE_LINES {
            said.push(format!(
                "The {} Redis and Memcached locks lie within {:.0}% of each other's median acq/s at every locker count: their lines overlap on the throughput chart, so read them in the table.",
                in_memory.len(),
                100.0 * widest
            ));
        }
    }
}

/// At the most lockers: fairness, the fair lock's goal and ceiling, and throughput against
/// the fewest lockers.
fn contention(cx: &Context<'_, '_>, said: &mut Vec<String>) {
    let Context {
        groups, fewest, most, ..
    } = *cx;
    let locks = &cx.locks;
    if most > 1 {
        let fair: Vec<String> = cx
            .ranked(most, &|r| r.jain, true)
            .iter()
            .map(|g| {
                format!(
                    "{} Jain {}, longest run {}, wait p99 {} ms",
                    g.variant,
                    f(g.median(&|r| r.jain), 3),
                    f(g.median(&|r| r.longest_run as f64), 0),
                    f(g.median(&|r| r.wait_p99_ms), 0)
                )
            })
            .collect();
        if !fair.is_empty() {
            said.push(format!(
                "Fairness at {} (medians, fairest first; no think time: a locker asks again as soon as it releases): {}. A lock whose releasing locker takes it straight back while the others sleep out their retry delay shows long runs and a low Jain index, however high its throughput.",
                count(most, "locker"),
                fair.join("; ")
            ));
        }
        if let Some(goal) = fair_lock_goal(groups, most) {
            said.push(goal);
        }
        if let Some(ceiling) = fair_lock_ceiling(groups, most) {
            said.push(ceiling);
        }
        let slowdown: Vec<String> = locks
            .iter()
            .filter_map(|lock| {
                let (one, many) = (cx.at(lock, fewest)?, cx.at(lock, most)?);
                let ratio = throughput(many) / throughput(one);
                ratio.is_finite().then(|| format!("{lock} {}x", f(ratio, 2)))
            })
            .collect();
        if !slowdown.is_empty() {
            said.push(format!(
                "Throughput at {} as a multiple of that at {} (medians; below 1: contention costs, each handoff waits for a waiter's next retry): {}.",
                count(most, "locker"),
                count(fewest, "locker"),
                slowdown.join(", ")
            ));
        }
    }
}

/// Store requests per acquisition at the most lockers, with what makes some locks ask more.
fn requests(cx: &Context<'_, '_>, said: &mut Vec<String>) {
    let Context { setup, most, .. } = *cx;
    let locks = &cx.locks;
    let requests: Vec<String> = cx
        .ranked(most, &|r| r.requests_per_acquisition, false)
        .iter()
        .map(|g| format!("{} {}", g.variant, f(g.median(&|r| r.requests_per_acquisition), 1)))
        .collect();
    if !requests.is_empty() {
        let runs_lock = |lock: Lock| locks.contains(&lock.title());
        let mut notes = String::new();
        if runs_lock(Lock::Redlock) {
            notes += " Redlock asks every master at each step.";
        }
        if runs_lock(Lock::Lwt) {
            notes += " An LWT request is a Paxos round (four round trips between replicas) where the other Cassandra requests are one.";
        }
        let told: Vec<&str> = [Lock::Zookeeper, Lock::Etcd]
            .into_iter()
            .filter(|&l| runs_lock(l))
            .map(Lock::title)
            .collect();
        let polling: Vec<&str> = [Lock::Queue, Lock::QueueNextInLine, Lock::QueuePaced, Lock::Old]
            .into_iter()
            .filter(|&l| runs_lock(l))
            .map(Lock::title)
            .collect();
        if !told.is_empty() && !polling.is_empty() {
            let _ = write!(
                notes,
                " S3: the waiters of {} are told when their predecessor goes (a watch on it), those of {} ask every {} ms{}, so only the latter pay for the wait in requests (etcd's waiters also renew their session every third of its TTL).",
                and_list(&told.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
                and_list(&polling.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
                setup.poll_ms,
                {
                    let fast: Vec<String> = [Lock::QueueNextInLine, Lock::QueuePaced]
                        .into_iter()
                        .filter(|&l| runs_lock(l))
                        .map(|l| l.title().to_string())
                        .collect();
                    if fast.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " (the next in line of {} every {} ms; the waiters of {} sleep by rank and pace in between)",
                            and_list(&fast),
                            cassalock_real::NEXT_IN_LINE_POLL_MS,
                            Lock::QueuePaced.title()
                        )
                    }
                }
            );
        }
        said.push(format!(
            "Store requests per acquisition at {} (medians, fewest first; failed retries, extensions, renewals and releases included): {}.{notes}",
            count(most, "locker"),
            requests.join(", ")
        ));
    }
}

/// How Redisson's waiters learn of a release, when Redisson ran.
fn redisson(cx: &Context<'_, '_>, said: &mut Vec<String>) {
    let Context { setup, most, .. } = *cx;
    let locks = &cx.locks;
    if let Some(redisson) = locks.iter().find(|l| Lock::titled(l) == Some(Lock::Redisson)) {
        // The p99: the median wait is the releasing locker's own, taken straight back.
        let wait_at = |lock: &str| cx.at(lock, most).map(|g| f(g.median(&|r| r.wait_p99_ms), 0));
        let set_nx = Lock::RedisSetNx.title();
        let compare = match (wait_at(redisson), wait_at(set_nx)) {
            (Some(r), Some(s)) if most > 1 => format!(
                ": at {} its wait p99 was {r} ms, against {s} ms for SET NX on the same server, whose waiters retry every {} ms",
                count(most, "locker"),
                setup.poll_ms
            ),
            (Some(r), _) if most > 1 => format!(": at {} its wait p99 was {r} ms", count(most, "locker")),
            _ => String::new(),
        };
        said.push(match setup.redisson_wake {
            RedissonWake::SleepsOutTheTtl => format!(
                "Redisson's waiters get no pub/sub notification here: the family driver does not subscribe to the lock's channel, so a waiter that finds the lock taken sleeps out the holder's remaining TTL (up to {} s, the watchdog renewing it every third) before it tries again, as if every unlock message were lost{compare}. Redisson's own client wakes on the unlock message; these figures are Redisson without it, not Redisson.",
                setup.ttl_s
            ),
            RedissonWake::Notified => format!(
                "Redisson's waiters subscribe to the lock's channel and wake on the unlock message, as Redisson's client does (a waiter whose subscription fails sleeps out the holder's remaining TTL instead){compare}."
            ),
        });
    }
}

/// The widest range of acq/s over repeated runs.
fn spread(cx: &Context<'_, '_>, said: &mut Vec<String>) {
    let Context { setup, groups, .. } = *cx;
    if setup.repeats > 1 {
        if let Some(widest) = groups
            .iter()
            .filter(|g| g.values(&|r| r.acquisitions_per_s).len() > 1)
            .max_by(|a, b| {
                a.relative_range(&|r| r.acquisitions_per_s)
                    .total_cmp(&b.relative_range(&|r| r.acquisitions_per_s))
            })
        {
            said.push(format!(
                "Spread: the widest range of acq/s was {} at {} ({}, {:.0}% of its median); compare configurations by their medians, and read a difference smaller than the ranges as no difference.",
                widest.variant,
                count(widest.lockers, "locker"),
                widest.spread(&|r| r.acquisitions_per_s, 2),
                100.0 * widest.relative_range(&|r| r.acquisitions_per_s)
            ));
        }
    }
}

/// Mutual exclusion without faults: held, or the configurations that broke it.
fn mutual_exclusion(cx: &Context<'_, '_>, said: &mut Vec<String>) {
    let Context { runs, groups, .. } = *cx;
    let broken: Vec<String> = groups
        .iter()
        .filter(|g| g.runs.iter().any(|r| !r.t1_belief_holds() || !r.t1_resource_holds()))
        .map(|g| format!("{} at {}", g.variant, count(g.lockers, "locker")))
        .collect();
    said.push(if broken.is_empty() {
        format!(
            "Mutual exclusion without faults: no two holding intervals overlapped and no stale write reached the resource in any of the {}.",
            count(runs.len(), "run")
        )
    } else {
        format!(
            "Mutual exclusion without faults: VIOLATED in {} (no fault was injected in these runs: a bug, or the machine stalled a holder past its TTL).",
            and_list(&broken)
        )
    });
}

/// Runs without a fault that went on past their seconds by more than a TTL.
fn stalled_without_a_fault(cx: &Context<'_, '_>, said: &mut Vec<String>) {
    let Context { setup, runs, .. } = *cx;
    // A run without a fault that went on past its seconds by more than a TTL: a waiter left
    // waiting longer than any lease it could have been sleeping out.
    let mut stalled: Vec<String> = Vec::new();
    for run in runs
        .iter()
        .filter(|r| r.elapsed_s > (setup.seconds_per_run + u64::from(setup.ttl_s)) as f64)
    {
        let what = format!("{} at {}", run.variant, count(run.lockers, "locker"));
        if !stalled.iter().any(|s| s.starts_with(&what)) {
            let longest = runs
                .iter()
                .filter(|r| r.variant == run.variant && r.lockers == run.lockers)
                .map(|r| r.wait_max_ms)
                .fold(0.0, f64::max);
            let times = runs
                .iter()
                .filter(|r| {
                    r.variant == run.variant
                        && r.lockers == run.lockers
                        && r.elapsed_s > (setup.seconds_per_run + u64::from(setup.ttl_s)) as f64
                })
                .count();
            stalled.push(format!(
                "{what} ({} of its runs, longest wait {} s)",
                times,
                f(longest / 1000.0, 1)
            ));
        }
    }
    if !stalled.is_empty() {
        said.push(format!(
            "Stalled without a fault: {} ran longer than their {} s by more than the TTL of {} s: a waiter slept past every lease it could have been waiting out; its acq/s counts the whole run.",
            and_list(&stalled),
            setup.seconds_per_run,
            setup.ttl_s
        ));
    }
}

/// Mutual exclusion under each fault, and the fault runs a fault stalled.
fn under_faults(cx: &Context<'_, '_>, faults: &[FaultRun], said: &mut Vec<String>) {
    let Context { setup, .. } = *cx;
    if setup.fault_seconds > 0 && !faults.is_empty() {
        let ran: Vec<(&FaultRun, &Summary)> = faults
            .iter()
            .filter_map(|run| match &run.outcome {
                FaultOutcome::Ran(s) => Some((run, &**s)),
                FaultOutcome::NotRun(_) => None,
            })
            .collect();
        let two_holders: Vec<String> = ran
            .iter()
            .filter(|(_, s)| !s.t1_belief_holds())
            .map(|(run, s)| format!("{} ({}, {})", run.lock, run.fault, count(s.belief_overlaps, "overlap")))
            .collect();
        let stale: Vec<String> = ran
            .iter()
            .filter(|(_, s)| !s.t1_resource_holds())
            .map(|(run, s)| format!("{} ({})", run.lock, count(s.stale_accepted, "stale write")))
            .collect();
        let held: Vec<String> = ran
            .iter()
            .filter(|(_, s)| s.t1_belief_holds() && s.t1_resource_holds())
            .map(|(run, _)| run.lock.clone())
            .collect();
        let not_run: Vec<String> = faults
            .iter()
            .filter(|run| matches!(run.outcome, FaultOutcome::NotRun(_)))
            .map(|run| run.lock.clone())
            .collect();
        let mut sentence =
            String::from("Under faults (one run each, so an absence of overlap is one sample, not a guarantee): ");
        if two_holders.is_empty() {
            sentence.push_str("no lock had two holders at once");
        } else {
            let _ = write!(sentence, "two holders at once under {}", and_list(&two_holders));
        }
        if !stale.is_empty() {
            let _ = write!(sentence, "; stale writes accepted under {}", and_list(&stale));
        }
        if !held.is_empty() {
            let _ = write!(sentence, "; one holder at a time throughout: {}", and_list(&held));
        }
        if !not_run.is_empty() {
            let _ = write!(sentence, "; not measured: {} (the table says why)", and_list(&not_run));
        }
        sentence.push('.');
        said.push(sentence);
        // A run that went on past its seconds by more than a TTL: a waiter the fault left
        // waiting longer than any lease it could have been waiting out.
        let stalled: Vec<String> = ran
            .iter()
            .filter(|(_, s)| s.elapsed_s > (setup.fault_seconds + u64::from(setup.ttl_s)) as f64)
            .map(|(run, s)| {
                format!(
                    "{} ran {} s (longest wait {} s)",
                    run.lock,
                    f(s.elapsed_s, 1),
                    f(s.wait_max_ms / 1000.0, 1)
                )
            })
            .collect();
        if !stalled.is_empty() {
            said.push(format!(
                "Stalled by the fault: {}, against {} s asked and a TTL of {} s: a waiter was left waiting past any lease it could have been sleeping out.",
                and_list(&stalled),
                setup.fault_seconds,
                setup.ttl_s
            ));
        }
    }
}
