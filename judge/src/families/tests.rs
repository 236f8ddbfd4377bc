use super::*;
use crate::event::NotAcquired;

fn at_ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

fn event(ms: u64, node: &str, what: What) -> Event {
    Event {
        at_ns: ms * 1_000_000,
        node: node.to_owned(),
        clock_us: None,
        what,
    }
}

/// `thread` of client `client` acquires at `ms`; its clock (exact) reads its validity at
/// `valid_until_ms`.
fn acquired(ms: u64, client: usize, thread: &str, valid_until_ms: u64) -> Event {
    event(
        ms,
        &format!("c{client}"),
        What::Acquired {
            thread: thread.into(),
            lock: KEY.into(),
            token: format!("tok-{thread}"),
            valid_until_us: Some(valid_until_ms * 1000),
            valid_until_at_ns: Some(valid_until_ms * 1_000_000),
        },
    )
}

fn releasing(ms: u64, client: usize, thread: &str) -> Event {
    event(
        ms,
        &format!("c{client}"),
        What::Releasing {
            thread: thread.into(),
            lock: KEY.into(),
        },
    )
}

fn write(ms: u64, thread: &str, acquisition: u64) -> Event {
    event(
        ms,
        "resource",
        What::Write {
            client: None,
            lock: None,
            token: format!("tok-{thread}"),
            phase: None,
            accepted: None,
            stale: None,
            acquisition: Some(acquisition),
        },
    )
}

const END_MS: u64 = 10_000;

fn run<'a>(rules: &'a FamilyRules, events: &'a [Event]) -> Run<'a> {
    Run {
        rules,
        clients: 2,
        end: at_ms(END_MS),
        events,
    }
}

fn unfenced() -> FamilyRules {
    FamilyRules {
        release_quorum: 1,
        bound_ms: END_MS,
        ..FamilyRules::default()
    }
}

#[test]
fn belief_ends_at_release_or_when_the_holder_s_clock_passes_its_validity() {
    let events = vec![
        acquired(0, 0, "c0-0", 1000),
        acquired(900, 1, "c1-0", 3000),
        releasing(2000, 0, "c0-0"),
        releasing(2500, 1, "c1-0"),
    ];
    let intervals = holding_intervals(&events, at_ms(END_MS));
    assert_eq!(
        intervals[0].released_at,
        at_ms(1000),
        "the clock passed before the release"
    );
    assert_eq!(intervals[1].released_at, at_ms(2500));
    let rules = unfenced();
    assert!(t1_belief(&run(&rules, &events)).is_violated());
    let apart = vec![acquired(0, 0, "c0-0", 1000), acquired(1000, 1, "c1-0", 3000)];
    assert_eq!(t1_belief(&run(&rules, &apart)), Verdict::NoViolation);
}

#[test]
fn an_extension_after_the_belief_lapsed_starts_a_new_interval() {
    let extended = event(
        1500,
        "c0",
        What::Extended {
            thread: "c0-0".into(),
            lock: KEY.into(),
            valid_until_us: 2_500_000,
            valid_until_at_ns: Some(2_500_000_000),
        },
    );
    let events = vec![acquired(0, 0, "c0-0", 1000), extended, releasing(2000, 0, "c0-0")];
    let spans: Vec<(Duration, Duration)> = holding_intervals(&events, at_ms(END_MS))
        .iter()
        .map(|i| (i.acquired_at, i.released_at))
        .collect();
    assert_eq!(spans, vec![(at_ms(0), at_ms(1000)), (at_ms(1500), at_ms(2000))]);
}

#[test]
fn an_older_acquisition_writing_after_a_newer_one_violates_t1_resource() {
    let rules = unfenced();
    let ordered = vec![write(10, "a", 0), write(20, "a", 0), write(30, "b", 1)];
    assert_eq!(t1_resource(&run(&rules, &ordered)), Verdict::NoViolation);
    let stale = vec![write(10, "a", 0), write(30, "b", 1), write(40, "a", 0)];
    assert!(t1_resource(&run(&rules, &stale)).is_violated());
}

#[test]
fn c_token_a_fenced_resource_refuses_a_smaller_token_and_a_token_that_does_not_grow_violates_c_token() {
    let fenced = FamilyRules {
        fencing_tokens: true,
        ..unfenced()
    };
    let (small, large) = ("00000000000000000003", "00000000000000000007");
    // The older acquisition's late write carries the smaller revision: refused.
    let stale = vec![write(10, small, 0), write(30, large, 1), write(40, small, 0)];
    assert_eq!(t1_resource(&run(&fenced, &stale)), Verdict::NoViolation);
    // A token that did not grow (#1's is below #0's) lets the older acquisition's write
    // through after the newer one wrote.
    let backwards = vec![write(30, small, 1), write(40, large, 0)];
    assert!(t1_resource(&run(&fenced, &backwards)).is_violated());
    let numbered = |ms: u64, token: &str, acquisition: u64| {
        event(
            ms,
            "c0",
            What::Numbered {
                token: token.into(),
                acquisition,
            },
        )
    };
    let growing = vec![numbered(10, small, 0), numbered(20, large, 1)];
    assert_eq!(c_token(&run(&fenced, &growing)), Verdict::NoViolation);
    let shrinking = vec![numbered(10, large, 0), numbered(20, small, 1)];
    assert!(c_token(&run(&fenced, &shrinking)).is_violated());
    assert_eq!(c_token(&run(&unfenced(), &shrinking)), Verdict::NotChecked);
}

#[test]
fn a_released_token_left_on_a_majority_of_masters_violates_c_release() {
    let redlock = FamilyRules {
        release_quorum: 3,
        ..unfenced()
    };
    let released = event(
        100,
        "c0",
        What::Released {
            thread: "c0-0".into(),
            lock: KEY.into(),
            outcome: ReleaseOutcome::Released,
            why: "Released".into(),
        },
    );
    let with_left = |servers: &[usize]| -> Vec<Event> {
        let mut events = vec![acquired(0, 0, "c0-0", 1000), released.clone()];
        events.extend(servers.iter().map(|&server| {
            event(
                END_MS,
                &format!("s{server}"),
                What::LeftAtEnd {
                    token: "tok-c0-0".into(),
                    server,
                },
            )
        }));
        events
    };
    let two = with_left(&[0, 1]);
    assert_eq!(
        c_release(&run(&redlock, &two)),
        Verdict::NoViolation,
        "2 of 5 masters keep no one out"
    );
    let three = with_left(&[0, 1, 4]);
    assert!(c_release(&run(&redlock, &three)).is_violated());
}

#[test]
fn a_holder_not_told_after_another_acquired_violates_c_lost_unless_it_was_paused() {
    // Bound: a 500 ms renewal period + a 200 ms request timeout + 100 ms.
    let watchdog = FamilyRules {
        lost_bound_ms: Some(800),
        ..unfenced()
    };
    let overtaken = vec![
        acquired(0, 0, "c0-0", 1400),
        acquired(1000, 1, "c1-0", 2500),
        releasing(2500, 0, "c0-0"),
    ];
    let verdict = c_lost(&run(&watchdog, &overtaken));
    assert!(verdict.is_violated(), "{verdict}");
    // Told by its watchdog 700 ms after the other acquired: within the bound.
    let told = vec![
        acquired(0, 0, "c0-0", 1400),
        acquired(1000, 1, "c1-0", 2500),
        event(
            1700,
            "c0",
            What::LeaseLost {
                thread: "c0-0".into(),
                lock: KEY.into(),
                why: String::new(),
            },
        ),
        releasing(2500, 0, "c0-0"),
    ];
    assert_eq!(c_lost(&run(&watchdog, &told)), Verdict::NoViolation);
    // Paused from 900 to 2100 ms: it ran 400 ms unaware after the other acquired.
    let mut paused = overtaken.clone();
    paused.insert(1, event(900, "c0", What::ClientPaused { ms: 1200 }));
    assert_eq!(c_lost(&run(&watchdog, &paused)), Verdict::NoViolation);
    // A lock without a watchdog is not judged.
    assert_eq!(c_lost(&run(&unfenced(), &overtaken)), Verdict::NotChecked);
}

#[test]
fn clients_still_running_at_the_bound_make_t2_bounded_not_violated() {
    let rules = unfenced();
    let one_done = vec![event(100, "c0", What::Done { client: "c0".into() })];
    let verdict = t2(&run(&rules, &one_done));
    assert!(matches!(verdict, Verdict::Bounded(_)), "{verdict}");
    // c1 has been trying since 100 ms of a run that ends at `run`'s end: stuck, unless a
    // fault came late in it or is still on.
    let invoke = |ms: u64| {
        event(
            ms,
            "c1",
            What::Invoke {
                client: "c1".into(),
                call: crate::event::Call::Lock,
                acquisition: 1,
            },
        )
    };
    let fault = |ms: u64, begins: bool| {
        event(
            ms,
            "faults",
            What::Fault {
                text: "s0 down".into(),
                target: Some("s0".into()),
                disruption: Some(crate::event::Disruption::Killed),
                begins,
                at_step: false,
            },
        )
    };
    let early = vec![invoke(100), event(150, "c0", What::Done { client: "c0".into() })];
    let verdict = t2(&run(&rules, &early));
    assert!(matches!(verdict, Verdict::Violated(_)), "{verdict}");
    assert!(verdict.to_string().contains("stuck"), "{verdict}");
    let late = END_MS - 10;
    let mut recent = vec![invoke(late), event(150, "c0", What::Done { client: "c0".into() })];
    recent.sort_by_key(|event| event.at_ns);
    assert!(matches!(t2(&run(&rules, &recent)), Verdict::Bounded(_)));
    let mut healed_late = early.clone();
    healed_late.extend([fault(200, true), fault(late, false)]);
    healed_late.sort_by_key(|event| event.at_ns);
    assert!(matches!(t2(&run(&rules, &healed_late)), Verdict::Bounded(_)));
    let mut still_on = early.clone();
    still_on.push(fault(200, true));
    still_on.sort_by_key(|event| event.at_ns);
    assert!(matches!(t2(&run(&rules, &still_on)), Verdict::Bounded(_)));
    // Behind a holder that never lets go, c1 waits on a taken lock: not stuck.
    let mut behind = early.clone();
    behind.push(event(
        90,
        "c2",
        What::Acquired {
            thread: "c2-1".into(),
            lock: "L".into(),
            token: "1".into(),
            valid_until_us: None,
            valid_until_at_ns: None,
        },
    ));
    behind.sort_by_key(|event| event.at_ns);
    assert!(matches!(t2(&run(&rules, &behind)), Verdict::Bounded(_)));
    let both = vec![
        event(100, "c0", What::Done { client: "c0".into() }),
        event(200, "c1", What::Done { client: "c1".into() }),
    ];
    assert_eq!(t2(&run(&rules, &both)), Verdict::NoViolation);
}

fn fair(ms: u64, what: What) -> Event {
    event(ms, "s0", what)
}

fn asked(ms: u64, owner: &str) -> Event {
    fair(ms, What::FairAsked { owner: owner.into() })
}

fn granted(ms: u64, owner: &str) -> Event {
    fair(ms, What::FairGranted { owner: owner.into() })
}

#[test]
fn f_order_takes_the_server_s_order_and_excuses_a_dropped_waiter_that_f_drop_reports() {
    let fair_lock = FamilyRules {
        fair_queue: true,
        ..unfenced()
    };
    let in_order = vec![
        asked(0, "c0:0:a"),
        granted(0, "c0:0:a"),
        asked(5, "c1:0:b"),
        asked(6, "c2:0:c"),
        granted(30, "c1:0:b"),
        granted(60, "c2:0:c"),
    ];
    assert_eq!(f_order(&run(&fair_lock, &in_order)), Verdict::NoViolation);
    assert_eq!(f_drop(&run(&fair_lock, &in_order)), Verdict::NoViolation);
    // c2 granted ahead of c1, which asked first and still waits.
    let barged = vec![
        asked(0, "c0:0:a"),
        granted(0, "c0:0:a"),
        asked(5, "c1:0:b"),
        asked(6, "c2:0:c"),
        granted(30, "c2:0:c"),
        granted(60, "c1:0:b"),
    ];
    let verdict = f_order(&run(&fair_lock, &barged));
    assert!(verdict.is_violated(), "{verdict}");
    assert!(verdict.to_string().contains("c2-0 was granted"), "{verdict}");
    // The same, c1 dropped as stale by c0's release first: excused by F-order, reported by
    // F-drop.
    let mut dropped = barged.clone();
    dropped.insert(
        4,
        fair(
            20,
            What::FairDropped {
                owner: "c1:0:b".into(),
                by: "c0:0:a".into(),
                script: "release".into(),
            },
        ),
    );
    assert_eq!(f_order(&run(&fair_lock, &dropped)), Verdict::NoViolation);
    let verdict = f_drop(&run(&fair_lock, &dropped));
    assert!(verdict.is_violated(), "{verdict}");
    assert!(verdict.to_string().contains("c1-0"), "{verdict}");
    // A call that had given up before it was dropped is owed nothing.
    let mut gave_up = dropped.clone();
    gave_up.insert(
        4,
        event(
            10,
            "c1",
            What::NotAcquired {
                thread: "c1-0".into(),
                lock: KEY.into(),
                outcome: NotAcquired::TimedOut,
                left: None,
                why: "TimedOut".into(),
            },
        ),
    );
    assert_eq!(f_drop(&run(&fair_lock, &gave_up)), Verdict::NoViolation);
    // Nor is one whose wait had run out and which was sending its leave when the drop came
    // (the two race); one that starts leaving only after the drop was wronged.
    let leaving_at = |ms_at: u64| event(ms_at, "c1", What::FairGivingUp { thread: "c1-0".into() });
    let mut leaving = dropped.clone();
    leaving.insert(4, leaving_at(15));
    assert_eq!(f_drop(&run(&fair_lock, &leaving)), Verdict::NoViolation);
    let mut left_late = dropped.clone();
    left_late.insert(5, leaving_at(25));
    assert!(f_drop(&run(&fair_lock, &left_late)).is_violated());
    // F-order: c1, leaving before c2's grant, is not passed over; leaving after it, it is.
    let mut barged_leaving = barged.clone();
    barged_leaving.insert(4, leaving_at(10));
    assert_eq!(f_order(&run(&fair_lock, &barged_leaving)), Verdict::NoViolation);
    let mut barged_then_left = barged.clone();
    barged_then_left.insert(5, leaving_at(40));
    assert!(f_order(&run(&fair_lock, &barged_then_left)).is_violated());
    // Other locks are not judged.
    assert_eq!(f_order(&run(&unfenced(), &barged)), Verdict::NotChecked);
    assert_eq!(f_drop(&run(&unfenced(), &dropped)), Verdict::NotChecked);
}

/// A `lock()` call with a deadline begins at `ms` on client 0's clock (exact).
fn calling(ms: u64, thread: &str, wait_ms: Option<u64>) -> Event {
    Event {
        clock_us: Some(ms * 1000),
        ..event(
            ms,
            "c0",
            What::Calling {
                thread: thread.into(),
                lock: KEY.into(),
                wait_ms,
            },
        )
    }
}

fn timed_out(ms: u64, thread: &str) -> Event {
    Event {
        clock_us: Some(ms * 1000),
        ..event(
            ms,
            "c0",
            What::NotAcquired {
                thread: thread.into(),
                lock: KEY.into(),
                outcome: NotAcquired::TimedOut,
                left: None,
                why: "TimedOut".into(),
            },
        )
    }
}

#[test]
fn c_wait_a_call_with_a_deadline_must_return_within_its_wait_and_the_bound_past_it() {
    let rules = FamilyRules {
        wait_past_ms: Some(50),
        ..unfenced()
    };
    // 100 ms asked, back at 150 ms: on the bound, kept.
    let on_time = vec![calling(0, "c0-0", Some(100)), timed_out(150, "c0-0")];
    assert_eq!(c_wait(&run(&rules, &on_time)), Verdict::NoViolation);
    // Back at 151 ms: late, named with its figures.
    let late = vec![calling(0, "c0-0", Some(100)), timed_out(151, "c0-0")];
    let verdict = c_wait(&run(&rules, &late));
    assert!(
        verdict.to_string().contains(
            "c0-0 called lock() waiting at most 100 ms at 0.000 ms and returned after 151.000 ms (bound 100 + 50 ms)"
        ),
        "{verdict}"
    );
    // Never back, the run over 200 ms after the call began: late too.
    let stuck = vec![calling(0, "c0-0", Some(100))];
    let mut stuck_run = run(&rules, &stuck);
    stuck_run.end = at_ms(200);
    assert!(c_wait(&stuck_run)
        .to_string()
        .contains("still inside lock() at the run's end"));
    // Measured on the caller's clock: its clock ran slow, so 160 ms of the run were 140 of its.
    let slow_clock = vec![
        calling(0, "c0-0", Some(100)),
        Event {
            clock_us: Some(140_000),
            ..timed_out(160, "c0-0")
        },
    ];
    assert_eq!(c_wait(&run(&rules, &slow_clock)), Verdict::NoViolation);
    // Every call is judged, not only a thread's first: its second call, back late, violates it.
    let second_late = vec![
        calling(0, "c0-0", Some(100)),
        timed_out(120, "c0-0"),
        calling(200, "c0-0", Some(100)),
        timed_out(400, "c0-0"),
    ];
    let verdict = c_wait(&run(&rules, &second_late));
    assert!(
        verdict.to_string().contains("1 of 2 calls late")
            && verdict
                .to_string()
                .contains("at 200.000 ms and returned after 200.000 ms"),
        "{verdict}"
    );
    // A thread's name called again with no word of how its last call ended: that call had
    // returned by then, judged up to the new call's start (300 ms, late), and no panic.
    let unended = vec![
        calling(0, "c0-0", Some(100)),
        calling(300, "c0-0", Some(100)),
        timed_out(350, "c0-0"),
    ];
    let verdict = c_wait(&run(&rules, &unended));
    assert!(verdict.to_string().contains("1 of 2 calls late"), "{verdict}");
    // No deadline in the lock, or no call with one: not checked.
    assert_eq!(c_wait(&run(&unfenced(), &late)), Verdict::NotChecked);
    let no_deadline = vec![calling(0, "c0-0", None), timed_out(500, "c0-0")];
    assert_eq!(c_wait(&run(&rules, &no_deadline)), Verdict::NotChecked);
}
