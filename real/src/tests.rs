use super::*;

fn acquired(locker: &str, at_us: u64) -> Event {
    Event::Acquired {
        locker: locker.into(),
        at_us,
        wait_us: 1000,
        token: format!("{at_us:020}"),
        lock_token: None,
        lock_thread: None,
    }
}

fn released(locker: &str, at_us: u64) -> Event {
    Event::Released {
        locker: locker.into(),
        at_us,
        lost: false,
    }
}

#[test]
fn a_handoff_whose_next_holder_slept_through_the_release_is_counted_with_how_late_it_woke() {
    let step = |locker: &str, at_us: u64, what: &str, detail: &str| Event::Step {
        locker: locker.into(),
        at_us,
        thread: format!("{locker}:0"),
        what: what.into(),
        detail: detail.into(),
        sleep: None,
    };
    // A sleep step as the reporter writes it: the figures in `sleep`, the text for people.
    let sleep = |locker: &str, at_us: u64, tag: &str, ms: u64, kind: &str| Event::Step {
        locker: locker.into(),
        at_us,
        thread: format!("{locker}:0"),
        what: "sleep".into(),
        detail: format!("{tag}: {ms} ms ({kind})"),
        sleep: Some(StepSleep {
            ms,
            kind: kind.into(),
            waiting: kind == "Poll" || kind == "Backoff",
        }),
    };
    let mut slept = SleptThrough::default();
    for event in [
        // b sleeps 100 ms from 0, c sleeps 10 ms from 0 and then reads (awake).
        sleep("b", 0, "ours paced: not next in line", 100, "Poll"),
        sleep("c", 0, "ours paced: next in line", 10, "Poll"),
        step("c", 10_000, "request", "L6.2 read the head of the queue: read q"),
        // a releases at 30 ms; b, asleep until 100 ms, takes the lock next: 70 ms late.
        step("a", 30_000, "releasing", ""),
        step("b", 100_000, "request", "L6.2 read the head of the queue: read q"),
        step("b", 105_000, "acquired", "token t"),
        // b releases; c was awake (reading): a handoff, not slept through.
        step("b", 120_000, "releasing", ""),
        step("c", 125_000, "acquired", "token u"),
        // c releases and takes the lock straight back: no handoff.
        step("c", 140_000, "releasing", ""),
        step("c", 141_000, "acquired", "token v"),
        // A renewal's sleep is no poll: d is not counted asleep.
        sleep("d", 141_500, "5.3 renewal", 5000, "Renewal"),
        step("c", 150_000, "releasing", ""),
        step("d", 151_000, "acquired", "token w"),
        // The old lock's backoff counts as a poll: e, backing off until 200 ms, sleeps
        // through d's release at 170 ms by 30 ms.
        sleep("e", 160_000, "L4.4 someone else is in: back off", 40, "Backoff"),
        step("d", 170_000, "releasing", ""),
        step("e", 200_000, "acquired", "token x"),
    ] {
        slept.observe(&event);
    }
    let figures = slept.figures();
    assert_eq!(figures.handoffs, 4, "{figures:?}");
    assert_eq!(figures.slept_through, 2, "{figures:?}");
    assert_eq!(figures.woke_after_max_ms, 70.0);
    assert_eq!(figures.woke_after_p50_ms, 50.0);
    // Nothing slept through: 0, not NaN (the summary is JSON).
    let none = SleptThrough::default().figures();
    assert_eq!((none.slept_through, none.woke_after_p90_ms), (0, 0.0));
}

#[test]
fn a_run_is_labelled_by_the_polling_it_used_not_by_the_variant_typed() {
    let label = |variant, next, paced| QueuePolling::label(variant, next, paced);
    // The variants as they are.
    assert_eq!(label(Lock::Queue, None, false).as_deref(), Some("queue GetLock"));
    assert_eq!(
        label(Lock::QueueNextInLine, None, false).as_deref(),
        Some(Lock::QueueNextInLine.title())
    );
    assert_eq!(
        label(Lock::QueuePaced, None, false).as_deref(),
        Some(Lock::QueuePaced.title())
    );
    // Settings that make one variant another: named as the variant they run.
    assert_eq!(
        label(Lock::QueueNextInLine, None, true).as_deref(),
        Some(Lock::QueuePaced.title())
    );
    assert_eq!(
        label(Lock::Queue, Some(NEXT_IN_LINE_POLL_MS), false).as_deref(),
        Some(Lock::QueueNextInLine.title())
    );
    assert_eq!(
        label(Lock::Queue, Some(NEXT_IN_LINE_POLL_MS), true).as_deref(),
        Some(Lock::QueuePaced.title())
    );
    // A next-in-line poll the variants' names do not say: named with its figure.
    assert_eq!(
        label(Lock::QueueNextInLine, Some(20), false).as_deref(),
        Some("queue GetLock, next in line 20 ms")
    );
    assert_eq!(
        label(Lock::QueuePaced, Some(2), false).as_deref(),
        Some("queue GetLock, paced, next in line 2 ms")
    );
    // What the driver runs is what the label says.
    assert_eq!(
        QueuePolling::of(Lock::QueueNextInLine, None, true),
        QueuePolling {
            next_poll_ms: Some(NEXT_IN_LINE_POLL_MS),
            paced: true
        }
    );
    // Other locks keep their names.
    assert_eq!(label(Lock::Old, Some(5), true), None);
    assert_eq!(label(Lock::Lwt, None, false), None);
}
/// A run's event record reads back as written, in time order, and the one judge reading
/// it finds the summary's verdicts: the overlap, the stale write fencing refused.
#[test]
fn a_run_s_event_record_is_judged_as_its_summary() {
    let events = [
        acquired("b", 15),
        acquired("a", 10),
        Event::Resource {
            locker: "a".into(),
            at_us: 12,
            token: "1".into(),
            accepted: false,
            stale: true,
        },
        released("a", 20),
        released("b", 30),
        Event::Done {
            process: 0,
            requests: 9,
        },
    ];
    let summary = summarize(Lock::Queue, 2, 1, Duration::from_secs(1), &events);
    assert_eq!(
        (summary.belief_overlaps, summary.stale_tokens, summary.stale_accepted),
        (1, 1, 0)
    );
    let run = record(Lock::Queue, 2, true, &events);
    assert_eq!(run.header.lock, "queue");
    assert!(run.events.windows(2).all(|pair| pair[0].at_ns <= pair[1].at_ns));
    let mut bytes = Vec::new();
    cassalock_judge::event::write(&mut bytes, &run.header, &run.events).unwrap();
    let read = cassalock_judge::event::read(&bytes[..]).unwrap();
    assert_eq!(read, run);
    let cassalock_judge::Judgement::Observed(judged) = cassalock_judge::judge(&read) else {
        panic!("a real run's record has the observed rules")
    };
    assert_eq!(judged.overlaps.len(), 1);
    assert_eq!((judged.stale_writes.len(), judged.stale_accepted()), (1, 0));
    assert!(judged.any_violated(), "{judged}");
}

#[test]
fn t1_belief_is_violated_exactly_when_holding_intervals_of_two_lockers_overlap() {
    let back_to_back = [
        acquired("a", 10),
        released("a", 20),
        acquired("b", 20),
        released("b", 30),
    ];
    let s = summarize(Lock::Queue, 2, 1, Duration::from_secs(1), &back_to_back);
    assert!(s.t1_belief_holds(), "touching intervals are not an overlap: {s:?}");
    assert_eq!(s.acquisitions, 2);
    let overlapping = [
        acquired("a", 10),
        acquired("b", 15),
        released("a", 20),
        released("b", 30),
    ];
    let s = summarize(Lock::Queue, 2, 1, Duration::from_secs(1), &overlapping);
    assert_eq!(s.belief_overlaps, 1, "{s:?}");
    // Nested inside a long interval that is not the latest to start.
    let nested = [
        acquired("a", 0),
        released("a", 100),
        acquired("b", 10),
        released("b", 20),
        acquired("c", 50),
        released("c", 60),
    ];
    let s = summarize(Lock::Old, 3, 1, Duration::from_secs(1), &nested);
    assert_eq!(s.belief_overlaps, 2, "{s:?}");
    // Three at once: every pair counts.
    let three = [
        acquired("a", 0),
        acquired("b", 10),
        acquired("c", 20),
        released("c", 80),
        released("b", 90),
        released("a", 100),
    ];
    let s = summarize(Lock::Old, 3, 1, Duration::from_secs(1), &three);
    assert_eq!(s.belief_overlaps, 3, "{s:?}");
    assert_eq!(
        s.examples[0], "T1-belief: b acquired at 10 us while a held until 100 us",
        "{s:?}"
    );
}

/// Where a cycle goes (the handoffs the fair lock's waiters slept through): holds,
/// and handoffs only between two lockers; a locker still holding at the end adds a
/// handoff but no hold.
#[test]
fn a_cycle_is_cut_into_holds_and_handoffs_between_two_lockers() {
    let events = [
        acquired("a", 0),
        released("a", 10_000),
        acquired("b", 15_000),
        released("b", 25_000),
        // b takes it straight back: no handoff.
        acquired("b", 26_000),
        released("b", 36_000),
        acquired("a", 40_000),
        released("a", 50_000),
        acquired("c", 60_000),
    ];
    let s = summarize(Lock::QueuePaced, 3, 1, Duration::from_secs(1), &events);
    assert_eq!(s.hold_p50_ms, 10.0, "{s:?}");
    // 5, 4 and 10 ms.
    assert_eq!((s.handoffs, s.handoff_p50_ms), (3, 5.0), "{s:?}");
    // One locker alone: no handoff, and the figure says none rather than 0 ms of one.
    let alone = [
        acquired("a", 0),
        released("a", 10_000),
        acquired("a", 11_000),
        released("a", 21_000),
    ];
    let s = summarize(Lock::Old, 1, 1, Duration::from_secs(1), &alone);
    assert_eq!((s.handoffs, s.handoff_p50_ms, s.hold_p50_ms), (0, 0.0, 10.0), "{s:?}");
}

#[test]
fn a_lease_that_ran_out_while_held_ends_the_belief_at_its_validity_not_at_the_end_of_the_hold() {
    // Still valid at the end of the hold: the belief lasts the whole hold.
    assert_eq!(belief_ended_at_us(100, 200, true, Some(150)), 200);
    assert_eq!(belief_ended_at_us(100, 200, true, None), 200);
    // Ran out at 150, asked at 200: the holder was told so from 150 on.
    assert_eq!(belief_ended_at_us(100, 200, false, Some(150)), 150);
    // Lost without a TTL to bound it: the whole hold counts.
    assert_eq!(belief_ended_at_us(100, 200, false, None), 200);
    // Already over when the lock call returned: the belief ends where it began.
    assert_eq!(belief_ended_at_us(100, 200, false, Some(90)), 100);
    // Known lost (told) while the TTL still ran: the end of the hold, the latest it lasted.
    assert_eq!(belief_ended_at_us(100, 200, false, Some(300)), 200);
    // The judge: b acquired at 160, after a's lease ran out at 150 (a noticed at 200).
    let ran_out = |at_us| Event::Released {
        locker: "a".into(),
        at_us,
        lost: true,
    };
    let judged = |a_ended_us| {
        let events = [
            acquired("a", 100),
            ran_out(a_ended_us),
            acquired("b", 160),
            released("b", 300),
        ];
        summarize(Lock::Old, 2, 1, Duration::from_secs(1), &events).belief_overlaps
    };
    assert_eq!(judged(belief_ended_at_us(100, 200, false, Some(150))), 0);
    // Had a's lease run until 170, b's acquisition at 160 overlaps it.
    assert_eq!(judged(belief_ended_at_us(100, 200, false, Some(170))), 1);
}

#[test]
fn fairness_counts_every_locker_and_the_longest_run_in_acquisition_order() {
    let events = [
        acquired("a", 10),
        released("a", 11),
        acquired("a", 12),
        released("a", 13),
        acquired("b", 14),
        released("b", 15),
        acquired("a", 16),
        released("a", 17),
    ];
    let s = summarize(Lock::Old, 3, 1, Duration::from_secs(1), &events);
    assert_eq!(s.longest_run, 2, "{s:?}");
    // Shares 3, 1 and 0 (locker c never acquired): 16 / (3 x 10).
    assert!((s.jain - 16.0 / 30.0).abs() < 1e-9, "{s:?}");
}

#[test]
fn every_variant_is_listed_once_and_found_by_its_name() {
    for (i, variant) in crate::real_locks().into_iter().enumerate() {
        assert_eq!(Lock::titled(variant.title()), Some(variant));
        assert_eq!(
            crate::real_locks().iter().position(|v| *v == variant),
            Some(i),
            "{variant:?} twice"
        );
        assert_eq!(
            variant.is_family(),
            variant.family() != Family::Cassandra,
            "{variant:?}"
        );
    }
    assert_eq!(Lock::titled("nope"), None);
    assert!(
        Lock::QueueNextInLine
            .title()
            .ends_with(&format!("next in line {NEXT_IN_LINE_POLL_MS} ms")),
        "the variant's name states its poll"
    );
}

#[test]
fn the_monitor_refuses_a_lower_token_with_fencing_and_accepts_it_without() {
    let dir = std::env::temp_dir().join(format!("cassalock-monitor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let monitor = Monitor::create(&dir.join("m")).unwrap();
    assert_eq!(monitor.write("0002", true).unwrap(), (true, false));
    assert_eq!(
        monitor.write("0002", true).unwrap(),
        (true, false),
        "the same holder writes again"
    );
    assert_eq!(monitor.write("0001", true).unwrap(), (false, true), "stale, refused");
    assert_eq!(
        monitor.write("0001", false).unwrap(),
        (true, true),
        "stale, accepted without fencing"
    );
    assert_eq!(monitor.write("0003", true).unwrap(), (true, false));
    std::fs::remove_dir_all(&dir).ok();
}

/// A family hold as the runner records it: its resource token, and the lock's own token that
/// a reading of the server names.
fn held_with(locker: &str, at_us: u64, lock_token: &str) -> Event {
    Event::Acquired {
        locker: locker.into(),
        at_us,
        wait_us: 1000,
        token: format!("{at_us:020}-{locker}"),
        lock_token: Some(lock_token.into()),
        lock_thread: None,
    }
}

fn reading(locker: &str, at_us: u64, named: Option<&str>) -> Event {
    Event::ServerHolder {
        locker: locker.into(),
        at_us,
        lock_token: named.map(str::to_owned),
        threads: Vec::new(),
    }
}

/// T1-server in a real run: a reading names the lock's own token; the record writes it as the
/// token of the hold that had it (the latest, where an owner reuses its token), and the judge
/// holds every believer to it.
#[test]
fn t1_server_a_reading_that_leaves_out_a_believer_is_a_violation_and_one_naming_it_is_not() {
    let agreeing = [
        held_with("a", 10, "owner-a"),
        reading("a", 11, Some("owner-a")),
        released("a", 20),
        held_with("b", 30, "owner-b"),
        reading("b", 31, Some("owner-b")),
        released("b", 40),
        // The same owner token again: the reading is of this hold, not the first.
        held_with("a", 50, "owner-a"),
        reading("a", 51, Some("owner-a")),
        released("a", 60),
    ];
    let s = summarize(Lock::Redisson, 2, 1, Duration::from_secs(1), &agreeing);
    assert_eq!((s.server_readings, s.server_disagreements), (3, 0), "{s:?}");
    assert!(s.t1_server_holds());
    let run = record(Lock::Redisson, 2, false, &agreeing);
    let holders: Vec<Option<String>> = run
        .events
        .iter()
        .filter_map(|event| match &event.what {
            cassalock_judge::event::What::ServerHolder { holder, .. } => Some(holder.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        holders,
        [
            Some(format!("{:020}-a", 10)),
            Some(format!("{:020}-b", 30)),
            Some(format!("{:020}-a", 50))
        ]
    );

    // The key went (a failover, an operator) while b held: its reading before releasing finds
    // nobody, with no second holder to show it to T1-belief.
    let lost_quietly = [
        held_with("b", 30, "owner-b"),
        reading("b", 31, Some("owner-b")),
        reading("b", 39, None),
        released("b", 40),
    ];
    let s = summarize(Lock::RedisSetNx, 1, 1, Duration::from_secs(1), &lost_quietly);
    assert!(s.t1_belief_holds(), "{s:?}");
    assert_eq!((s.server_readings, s.server_disagreements), (2, 1), "{s:?}");
    assert!(
        s.examples
            .iter()
            .any(|e| e.starts_with("T1-server: ") && e.contains("nobody")),
        "{s:?}"
    );
    // No reading: not checked, and nothing counted.
    let unread = [held_with("b", 30, "owner-b"), released("b", 40)];
    let s = summarize(Lock::RedisSetNx, 1, 1, Duration::from_secs(1), &unread);
    assert_eq!((s.server_readings, s.server_disagreements), (0, 0), "{s:?}");
}

/// A row lock's reading names thread ids of its main row's cells; the record writes each as
/// the locker of the latest hold with that thread id, and the judge holds every believer to
/// the threads named.
#[test]
fn t1_server_a_main_row_reading_names_the_lockers_by_their_threads() {
    let row_hold = |locker: &str, at_us: u64, thread: &str| Event::Acquired {
        locker: locker.into(),
        at_us,
        wait_us: 1000,
        token: format!("{at_us:020}"),
        lock_token: None,
        lock_thread: Some(thread.into()),
    };
    let row_reading = |locker: &str, at_us: u64, threads: &[&str]| Event::ServerHolder {
        locker: locker.into(),
        at_us,
        lock_token: None,
        threads: threads.iter().map(|thread| (*thread).to_owned()).collect(),
    };
    let events = [
        row_hold("a", 10, "a:1"),
        // A contender's passing cell beside the holder's names it too: the holder is named.
        row_reading("a", 11, &["a:1", "b:7"]),
        released("a", 20),
        row_hold("b", 30, "b:8"),
        // The holder's cell is gone from the row: nobody.
        row_reading("b", 35, &[]),
        released("b", 40),
    ];
    let s = summarize(Lock::Queue, 2, 1, Duration::from_secs(1), &events);
    assert_eq!((s.server_readings, s.server_disagreements), (2, 1), "{s:?}");
    let run = record(Lock::Queue, 2, true, &events);
    let named: Vec<Vec<String>> = run
        .events
        .iter()
        .filter_map(|event| match &event.what {
            cassalock_judge::event::What::ServerHolder { threads, .. } => Some(threads.clone()),
            _ => None,
        })
        .collect();
    // b:7 had no acquisition yet: kept as the row named it.
    assert_eq!(named, [vec!["a".to_owned(), "b:7".to_owned()], Vec::new()]);
}
