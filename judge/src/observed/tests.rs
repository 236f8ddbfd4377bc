use super::*;
use crate::event::{Call, ReleaseOutcome, RunFacts};
use crate::told::Told;

fn event(us: u64, node: &str, what: What) -> Event {
    Event {
        at_ns: us * 1000,
        node: node.to_owned(),
        clock_us: None,
        what,
    }
}

/// `locker` asks at `asked_us`, holds from `from_us` to `to_us`.
fn hold(locker: &str, node: &str, asked_us: u64, from_us: u64, to_us: u64) -> Vec<Event> {
    vec![
        event(
            asked_us,
            node,
            What::Invoke {
                client: locker.into(),
                call: Call::Lock,
                acquisition: 1,
            },
        ),
        event(
            from_us,
            node,
            What::Acquired {
                thread: locker.into(),
                lock: "K".into(),
                token: format!("{from_us:020}"),
                valid_until_us: None,
                valid_until_at_ns: None,
            },
        ),
        event(
            to_us,
            node,
            What::Releasing {
                thread: locker.into(),
                lock: "K".into(),
            },
        ),
    ]
}

fn judged(mut events: Vec<Event>, clients: usize) -> ObservedVerdicts {
    events.sort_by_key(|event| event.at_ns);
    judge(
        &ObservedRules {
            fencing: true,
            lease_lost_ends_it: false,
            call_bound_ms: None,
        },
        Clock::WallSinceEpoch,
        clients,
        Duration::from_millis(1),
        &events,
    )
}

#[test]
fn t1_belief_counts_every_overlapping_pair_and_measures_the_cycle() {
    let back_to_back = [hold("a", "c0", 0, 10, 20), hold("b", "c1", 5, 20, 30)].concat();
    let v = judged(back_to_back, 2);
    assert!(v.overlaps.is_empty());
    assert_eq!(v.waits_ms, [0.01, 0.015]);
    assert_eq!(v.handoffs_ms, [0.0]);
    assert_eq!(v.holds_ms, [0.01, 0.01]);
    let three = [
        hold("a", "c0", 0, 0, 100),
        hold("b", "c1", 0, 10, 90),
        hold("c", "c2", 0, 20, 80),
    ]
    .concat();
    let v = judged(three, 3);
    assert_eq!(v.overlaps.len(), 3);
    assert!(v.checks[0].1.is_violated());
    assert!(
        v.checks[0]
            .2
            .starts_with("3 overlaps; first: b acquired at 10 us while a held until 100 us"),
        "{}",
        v.checks[0].2
    );
}

#[test]
fn shares_count_a_client_that_never_acquired() {
    let v = judged([hold("a", "c0", 0, 10, 20), hold("a", "c0", 20, 30, 40)].concat(), 2);
    assert_eq!(v.longest_run, 2);
    assert!((v.jain - 0.5).abs() < 1e-9, "{}", v.jain);
}

#[test]
fn a_stale_write_accepted_violates_t1_resource_and_one_refused_does_not() {
    let write = |us: u64, accepted: bool| {
        event(
            us,
            "resource",
            What::Write {
                client: Some("a".into()),
                lock: None,
                token: "1".into(),
                phase: None,
                accepted: Some(accepted),
                stale: Some(true),
                acquisition: None,
            },
        )
    };
    let refused = judged(vec![write(5, false)], 1);
    assert!(!refused.any_violated());
    assert!(
        refused.checks[1].2.contains("0 stale writes accepted, 1 refused"),
        "{}",
        refused.checks[1].2
    );
    let accepted = judged(vec![write(5, true)], 1);
    assert!(accepted.checks[1].1.is_violated());
}

/// A holder's events, in milliseconds: asks at `asked`, holds from `from`, releasing at
/// `to`, its release answering `answer` 1 ms later.
fn hold_ms(node: &str, n: u32, asked: u64, from: u64, to: u64, answer: (ReleaseOutcome, &str)) -> Vec<Event> {
    let thread = format!("{node}-{n}");
    vec![
        event(
            asked * 1000,
            node,
            What::Invoke {
                client: node.into(),
                call: Call::Lock,
                acquisition: n,
            },
        ),
        event(
            from * 1000,
            node,
            What::Acquired {
                thread: thread.clone(),
                lock: "K".into(),
                token: format!("{thread}-token"),
                valid_until_us: None,
                valid_until_at_ns: None,
            },
        ),
        event(
            to * 1000,
            node,
            What::Releasing {
                thread: thread.clone(),
                lock: "K".into(),
            },
        ),
        event(
            (to + 1) * 1000,
            node,
            What::Released {
                thread,
                lock: "K".into(),
                outcome: answer.0,
                why: answer.1.into(),
            },
        ),
    ]
}

const FINE: (ReleaseOutcome, &str) = (ReleaseOutcome::Released, "");

fn c_lost(v: &ObservedVerdicts) -> (ClaimVerdict, &str) {
    let (_, verdict, text) = v
        .checks
        .iter()
        .find(|(id, _, _)| *id == ClaimId::CLost)
        .expect("C-lost");
    (*verdict, text.as_str())
}

/// Judged with the header of a real client run of `lock`, both ways, which must agree.
fn judged_as(lock: &str, mut events: Vec<Event>, clients: usize) -> ObservedVerdicts {
    events.sort_by_key(|event| event.at_ns);
    let end = Duration::from_nanos(events.last().map_or(0, |e| e.at_ns) + 1000);
    let header = Header::new(
        Driver::Real,
        lock,
        Clock::WallSinceEpoch,
        RunFacts {
            clients,
            end_ns: u64::try_from(end.as_nanos()).unwrap(),
            rules: Rules::Observed(ObservedRules {
                fencing: true,
                lease_lost_ends_it: false,
                call_bound_ms: None,
            }),
            ..RunFacts::default()
        },
    );
    let everything = judge_record(&header, &events);
    let mut bounded = Judge::for_record(&header, Keep::Verdicts);
    for event in &events {
        bounded.see(event);
    }
    assert_eq!(everything.checks, bounded.finish(end).checks);
    everything
}

/// c0 holds from 0 to 3 s (paused); c1 acquires at 1 s and holds to 1.1 s.
fn paused_holder(answer: (ReleaseOutcome, &str)) -> Vec<Event> {
    [
        hold_ms("c0", 1, 0, 0, 3000, answer),
        hold_ms("c1", 1, 500, 1000, 1100, FINE),
    ]
    .concat()
}

#[test]
fn c_lost_is_kept_when_the_overtaken_holder_hears_a_lost_notice() {
    let mut events = paused_holder(FINE);
    events.push(event(
        1_400_000,
        "c0",
        What::LeaseLost {
            thread: "c0-1".into(),
            lock: "K".into(),
            why: "the session is lost".into(),
        },
    ));
    let v = judged_as("kazoo 2.11.0 Lock", events, 2);
    let (verdict, text) = c_lost(&v);
    assert_eq!(verdict, ClaimVerdict::Holds, "{text}");
    assert!(text.starts_with("kept: 1 overtaken holder, every one told"), "{text}");
    assert!(
        text.contains("c0-1 told lost notice (the session is lost), 400 ms after"),
        "{text}"
    );
    assert_eq!(
        v.lost_holders[0].describe(),
        "lost notice (the session is lost), 400 ms after; its release said released"
    );
}

#[test]
fn c_lost_is_kept_when_the_release_answers_not_held() {
    let v = judged_as(
        "redis-py 8.1.0 Lock",
        paused_holder((ReleaseOutcome::NotHeld, "LockNotOwnedError: no longer owned")),
        2,
    );
    let (verdict, text) = c_lost(&v);
    assert_eq!(verdict, ClaimVerdict::Holds, "{text}");
    assert!(
        text.contains("at release, LockNotOwnedError: no longer owned, 2.0 s after"),
        "{text}"
    );
    assert_eq!(v.lost_holders[0].overtaken_at, Duration::from_secs(1));
    assert!(matches!(
        v.lost_holders[0].first_told(),
        Some((_, Told::AtRelease { .. }))
    ));
}

#[test]
fn c_lost_is_violated_when_the_overtaken_holder_is_never_told() {
    let v = judged_as("Redisson 4.3.1 fair lock", paused_holder(FINE), 2);
    let (verdict, text) = c_lost(&v);
    assert_eq!(verdict, ClaimVerdict::Violated, "{text}");
    assert!(
            text.starts_with("violated: 1 of 1 overtaken holder never told; first: c0-1, overtaken at 1000000 us, never told; its release said released"),
            "{text}"
        );
    assert!(v.any_violated());
    assert_eq!(v.never_told, 1);
}

/// Judged as a record on `clock` that ends 200 ms after its last event.
fn judged_on(clock: Clock, mut events: Vec<Event>, clients: usize) -> ObservedVerdicts {
    events.sort_by_key(|event| event.at_ns);
    let end = Duration::from_nanos(events.last().map_or(0, |e| e.at_ns) + 200_000_000);
    let header = Header::new(
        Driver::Model,
        "m",
        clock,
        RunFacts {
            clients,
            end_ns: u64::try_from(end.as_nanos()).unwrap(),
            rules: Rules::Observed(ObservedRules {
                fencing: true,
                lease_lost_ends_it: true,
                call_bound_ms: None,
            }),
            ..RunFacts::default()
        },
    );
    judge_record(&header, &events)
}

/// A model's record stops at its counterexample: a holder overtaken there and not yet told
/// might be told later, so C-lost is undecided (bounded), not violated, where the same events
/// ending a run violate it; a holder whose release had already answered "released" is never
/// told, cut or not.
#[test]
fn c_lost_is_undecided_where_a_models_record_stops_before_the_holder_could_hear() {
    let still_holding: Vec<Event> = [
        hold_ms("c0", 1, 0, 0, 3000, FINE)[..2].to_vec(),
        hold_ms("c1", 1, 500, 1000, 1100, FINE),
    ]
    .concat();
    let run = judged_on(Clock::WallSinceEpoch, still_holding.clone(), 2);
    assert_eq!(c_lost(&run).0, ClaimVerdict::Violated, "{}", c_lost(&run).1);
    for clock in [Clock::ModelTicks, Clock::ModelSteps] {
        let cut = judged_on(clock, still_holding.clone(), 2);
        let (verdict, text) = c_lost(&cut);
        assert_eq!(verdict, ClaimVerdict::Bounded, "{clock:?}: {text}");
        assert!(
            text.starts_with("undecided: 1 of 1 overtaken holder not yet told where the record stops"),
            "{text}"
        );
        assert_eq!((cut.never_told, cut.overtaken_holders), (0, 1));
        let released = judged_on(clock, paused_holder(FINE), 2);
        assert_eq!(c_lost(&released).0, ClaimVerdict::Violated, "{}", c_lost(&released).1);
    }
}

#[test]
fn c_lost_has_no_occasion_when_nobody_is_overtaken() {
    let v = judged_as(
        "redis-py 8.1.0 Lock",
        [hold_ms("c0", 1, 0, 0, 10, FINE), hold_ms("c1", 1, 5, 10, 20, FINE)].concat(),
        2,
    );
    let (verdict, text) = c_lost(&v);
    assert_eq!(verdict, ClaimVerdict::NotExercised);
    assert_eq!(text, "no occasion: no holder was overtaken");
}

#[test]
fn a_refused_write_overtakes_and_tells_its_holder() {
    // c0's belief ended by its validity before c1 acquired: no overlap, but fencing
    // refused its late write.
    let mut events = hold_ms("c0", 1, 0, 0, 3000, FINE);
    if let What::Acquired { valid_until_at_ns, .. } = &mut events[1].what {
        *valid_until_at_ns = Some(500_000_000);
    }
    events.extend(hold_ms("c1", 1, 600, 1000, 1100, FINE));
    events.push(event(
        2_999_000,
        "resource",
        What::Write {
            client: Some("c0".into()),
            lock: None,
            token: "c0-1-token".into(),
            phase: None,
            accepted: Some(false),
            stale: Some(true),
            acquisition: None,
        },
    ));
    let v = judged_as("Curator 5.9.0 InterProcessMutex", events, 2);
    assert_eq!(v.overlap_count, 0);
    let (verdict, text) = c_lost(&v);
    assert_eq!(verdict, ClaimVerdict::Holds, "{text}");
    assert!(text.contains("its write refused by fencing, 2.0 s after"), "{text}");
}

#[test]
fn a_holder_found_overtaken_after_its_client_moved_on_is_still_judged() {
    // c0-1 overtaken by c1-1 and told at release; c0 acquires again (c0-2) while c1-1
    // still believes, so c1-1 is overtaken too, and never told. The first overlap is found
    // only when c1-1 closes, after c0 moved on.
    let events = [
        hold_ms("c0", 1, 0, 0, 2000, (ReleaseOutcome::NotHeld, "not yours")),
        hold_ms("c1", 1, 0, 1000, 3000, FINE),
        hold_ms("c0", 2, 2100, 2200, 2300, FINE),
    ]
    .concat();
    let v = judged_as("redis-py 8.1.0 Lock", events, 2);
    assert_eq!(v.overtaken_holders, 2);
    assert_eq!(v.never_told, 1);
    let told: Vec<String> = v
        .lost_holders
        .iter()
        .map(|lost| format!("{}: {}", lost.holder, lost.describe()))
        .collect();
    assert_eq!(
        told,
        [
            "c0-1: at release, not yours, 1.0 s after; its release said released"
                .replace("; its release said released", ""),
            "c1-1: never told; its release said released".to_owned()
        ]
    );
}

#[test]
fn memory_for_c_lost_does_not_grow_with_the_history() {
    let rules = ObservedRules {
        fencing: true,
        lease_lost_ends_it: false,
        call_bound_ms: None,
    };
    let mut judge = Judge::new(&rules, Clock::WallSinceEpoch, 3, Keep::Verdicts);
    // c0 holds throughout (paused); c1 and c2 take turns 3,000 times beside it.
    let mut events = hold_ms("c0", 1, 0, 0, 1_000_000, FINE);
    for i in 0..3000u64 {
        let node = if i % 2 == 0 { "c1" } else { "c2" };
        events.extend(hold_ms(
            node,
            u32::try_from(i).unwrap() + 1,
            10 + i * 10,
            11 + i * 10,
            15 + i * 10,
            FINE,
        ));
    }
    events.sort_by_key(|event| event.at_ns);
    let mut most = 0;
    for event in &events {
        judge.see(event);
        most = most.max(judge.cases_followed());
    }
    let v = judge.finish(Duration::from_secs(2000));
    // Each client's latest, and at most one earlier one each until it settles.
    assert!(most <= 6, "{most} cases followed at once");
    assert_eq!(v.overtaken_holders, 1);
    assert_eq!(v.never_told, 1);
}

#[test]
fn overtakes_are_counted_and_f_order_allows_the_tolerance() {
    // c0 holds 0-100 ms; c1 asks at 10 ms, c2 at 10 ms + `gap`; c2 acquires first.
    let run = |gap: u64| {
        [
            hold_ms("c0", 1, 0, 0, 100, FINE),
            hold_ms("c1", 1, 10, 150, 160, FINE),
            hold_ms("c2", 1, 10 + gap, 100, 140, FINE),
        ]
        .concat()
    };
    let f_order = |v: &ObservedVerdicts| {
        v.checks
            .iter()
            .find(|(id, _, _)| *id == ClaimId::FOrder)
            .map(|(_, verdict, text)| (*verdict, text.clone()))
    };
    let close = judged_as("Redisson 4.3.1 fair lock", run(10), 3);
    assert_eq!(
        (close.overtakes, close.overtakes_past_tolerance, close.contended),
        (1, 0, 1)
    );
    let (verdict, text) = f_order(&close).expect("the fair lock promises FIFO");
    assert_eq!(verdict, ClaimVerdict::Holds, "{text}");
    assert_eq!(
        text,
        "kept: 1 acquisition while another waited, 1 overtook a waiter, none by more than 15 ms"
    );
    let far = judged_as("Redisson 4.3.1 fair lock", run(40), 3);
    let (verdict, text) = f_order(&far).unwrap();
    assert_eq!(verdict, ClaimVerdict::Violated);
    assert!(
            text.starts_with("violated: 1 acquisition overtook a waiter that invoked more than 15 ms earlier; first: c2 acquired at 100000 us ahead of c1, which invoked 40 ms before it"),
            "{text}"
        );
    // The same overtake of a waiter whose process a fault stopped while it waited: its
    // place may have gone with its session, and F-order does not count it.
    let paused = |begins: bool, us: u64| {
        event(
            us,
            "faults",
            What::Fault {
                text: "c1 paused".into(),
                target: Some("c1".into()),
                disruption: Some(crate::event::Disruption::Paused),
                begins,
                at_step: false,
            },
        )
    };
    let mut stopped = run(40);
    stopped.extend([paused(true, 20_000), paused(false, 90_000)]);
    stopped.sort_by_key(|event| event.at_ns);
    let stopped = judged_as("Redisson 4.3.1 fair lock", stopped, 3);
    let (verdict, text) = f_order(&stopped).unwrap();
    assert_eq!(verdict, ClaimVerdict::Holds, "{text}");
    assert!(
        text.ends_with(
            "but 1 overtake of a waiter a fault had stopped (not counted: its place may have gone with its session)"
        ),
        "{text}"
    );
    // A lock that promises no order: overtakes counted, F-order not judged.
    let rlock = judged_as("Redisson 4.3.1 RLock", run(40), 3);
    assert_eq!(rlock.overtakes, 1);
    assert!(f_order(&rlock).is_none());
    assert!(!rlock.any_violated());
    // Nobody waited while another acquired: no occasion.
    let alone = judged_as("kazoo 2.11.0 Lock", hold_ms("c0", 1, 0, 0, 10, FINE), 1);
    assert_eq!(f_order(&alone).unwrap().0, ClaimVerdict::NotExercised);
}

/// A record drawn from `seed`: four clients on two nodes each... acquiring, extending,
/// losing, releasing, dying, writing stale tokens, in random order and with validities
/// that lapse.
fn random_events(seed: u64, n: usize) -> Vec<Event> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = move |bound: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % bound
    };
    let mut events = Vec::new();
    let mut us = 0;
    for _ in 0..n {
        us += next(3);
        let node = format!("c{}", next(4));
        let thread = format!("{node}-t{}", next(2));
        let lapse = |from: u64, pick: u64| (pick > 0).then(|| (from + pick * 7) * 1000);
        let what = match next(9) {
            0 => What::Invoke {
                client: thread.clone(),
                call: Call::Lock,
                acquisition: 1,
            },
            1 | 2 => What::Acquired {
                thread: thread.clone(),
                lock: if next(5) == 0 { "L".into() } else { "K".into() },
                token: us.to_string(),
                valid_until_us: None,
                valid_until_at_ns: lapse(us, next(4)),
            },
            3 => What::Extended {
                thread: thread.clone(),
                lock: "K".into(),
                valid_until_us: 0,
                valid_until_at_ns: lapse(us, next(4)),
            },
            4 => What::Releasing {
                thread: thread.clone(),
                lock: "K".into(),
            },
            5 => What::Fault {
                text: "kill".into(),
                target: Some(node.clone()),
                disruption: Some(crate::event::Disruption::Killed),
                begins: true,
                at_step: false,
            },
            6 => What::LeaseLost {
                thread: thread.clone(),
                lock: "K".into(),
                why: "gone".into(),
            },
            7 => What::Released {
                thread: thread.clone(),
                lock: "K".into(),
                outcome: if next(2) == 0 {
                    ReleaseOutcome::Released
                } else {
                    ReleaseOutcome::NotHeld
                },
                why: String::new(),
            },
            _ => What::Write {
                client: Some(thread.clone()),
                lock: None,
                token: if next(2) == 0 {
                    "1".into()
                } else {
                    us.saturating_sub(next(4)).to_string()
                },
                phase: None,
                accepted: Some(next(2) == 0),
                stale: Some(next(3) == 0),
                acquisition: None,
            },
        };
        events.push(event(us, &node, what));
    }
    events
}

#[test]
fn kept_verdicts_equal_everything_kept_on_random_records() {
    let rules = ObservedRules {
        fencing: false,
        lease_lost_ends_it: true,
        call_bound_ms: None,
    };
    let mut overlapping = 0;
    for seed in 0..300 {
        let events = random_events(seed, 1 + (seed as usize % 60));
        let end = Duration::from_nanos(events.last().map_or(0, |e| e.at_ns) + 5_000);
        let everything = judge(&rules, Clock::WallSinceEpoch, 4, end, &events);
        let mut bounded = Judge::new(&rules, Clock::WallSinceEpoch, 4, Keep::Verdicts);
        for event in &events {
            bounded.see(event);
        }
        let bounded = bounded.finish(end);
        assert_eq!(everything.checks, bounded.checks, "seed {seed}");
        assert_eq!(
            everything.overlap_count,
            crate::holding::overlaps(&everything.intervals).len() as u64
        );
        assert_eq!(everything.overlap_count, bounded.overlap_count, "seed {seed}");
        assert_eq!(
            &everything.overlaps[..bounded.overlaps.len()],
            &bounded.overlaps[..],
            "seed {seed}"
        );
        assert_eq!(
            bounded.overlaps.len() as u64,
            everything.overlap_count.min(EXAMPLES as u64)
        );
        assert_eq!(
            (everything.jain, everything.longest_run),
            (bounded.jain, bounded.longest_run)
        );
        assert_eq!(
            (everything.stale_count, everything.stale_accepted_count),
            (bounded.stale_count, bounded.stale_accepted_count)
        );
        assert!(bounded.intervals.is_empty() && bounded.waits_ms.is_empty());
        assert_eq!(
            (everything.overtaken_holders, everything.never_told),
            (bounded.overtaken_holders, bounded.never_told),
            "seed {seed}"
        );
        assert_eq!(everything.lost_holders.len() as u64, everything.overtaken_holders);
        assert_eq!(
            &everything.lost_holders[..bounded.lost_holders.len()],
            &bounded.lost_holders[..],
            "seed {seed}"
        );
        // Every earlier holder of an overlap is among the overtaken.
        for overlap in &everything.overlaps {
            assert!(
                everything
                    .lost_holders
                    .iter()
                    .any(|lost| lost.holder == overlap.first.holder),
                "seed {seed}: {} overtaken but not followed",
                overlap.first.holder
            );
        }
        overlapping += u64::from(everything.overlap_count > 0);
    }
    // The records exercise the window, not only quiet runs.
    assert!(overlapping > 100, "{overlapping} of 300 records overlap");
}

fn reading(us: u64, node: &str, holder: Option<String>) -> Event {
    event(
        us,
        node,
        What::ServerHolder {
            lock: "K".into(),
            holder,
            threads: Vec::new(),
            gone_at_ns: None,
        },
    )
}

/// T1-server in a run seen from outside: judged where the record holds readings of the server
/// (listed then, not otherwise), the same by the streaming judge as over the whole record.
#[test]
fn t1_server_is_judged_from_the_readings_an_observed_record_holds() {
    let t1_server = |v: &ObservedVerdicts| {
        v.checks
            .iter()
            .find(|(claim, ..)| *claim == ClaimId::T1Server)
            .map(|(_, verdict, _)| *verdict)
    };
    let unread = judged(hold("a", "c0", 0, 10, 50), 1);
    assert_eq!(t1_server(&unread), None, "{unread}");
    let mut named = hold("a", "c0", 0, 10, 50);
    named.push(reading(11, "c0", Some(format!("{:020}", 10))));
    let named = judged(named, 1);
    assert_eq!(t1_server(&named), Some(ClaimVerdict::Holds), "{named}");
    assert_eq!((named.server_readings, named.server_disagreements), (1, 0));
    // The key went while a held: a reading names nobody, with no second holder about.
    let mut forgotten = hold("a", "c0", 0, 10, 50);
    forgotten.push(reading(11, "c0", Some(format!("{:020}", 10))));
    forgotten.push(reading(40, "c0", None));
    let whole = judged(forgotten.clone(), 1);
    assert_eq!(t1_server(&whole), Some(ClaimVerdict::Violated), "{whole}");
    assert_eq!((whole.server_readings, whole.server_disagreements), (2, 1));
    assert_eq!(whole.overlap_count, 0, "T1-belief sees nothing: one holder");
    forgotten.sort_by_key(|event| event.at_ns);
    let rules = ObservedRules {
        fencing: true,
        lease_lost_ends_it: false,
        call_bound_ms: None,
    };
    let mut streaming = Judge::new(&rules, Clock::WallSinceEpoch, 1, Keep::Verdicts);
    for event in &forgotten {
        streaming.see(event);
    }
    let streamed = streaming.finish(Duration::from_millis(1));
    assert_eq!(streamed.checks, whole.checks);
}
