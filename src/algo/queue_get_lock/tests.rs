use super::*;
use crate::algo::queue_column::ClientId;
use crate::algo::testkit::Bench;

fn thread(name: &str) -> ThreadId {
    ClientId::new(name).unwrap().thread(1)
}

fn machine() -> QueueGetLock {
    QueueGetLock::new(LockId::new("L").unwrap(), thread("a"))
}

fn enqueue(bench: &mut Bench, time_us: u64, who: &ThreadId) -> String {
    let column = queue_column(time_us, who);
    bench.execute(write_own_cell(&bench.config, "q:L".into(), column.clone(), who));
    column
}

#[test]
fn l6_first_in_an_empty_queue_takes_the_lock() {
    let mut bench = Bench::new(LockConfig::untimed());
    let Acquire::Acquired { lease, token } = bench.run(&mut machine()) else {
        panic!()
    };
    assert_eq!(bench.steps(), ["L5.1", "L6.1", "L6.2", "L6.3", "L6.4", "L6.6"]);
    let column = queue_column(1_000_000, &thread("a"));
    assert_eq!(token.as_str(), column, "the token is the L5 queue column");
    assert_eq!(lease.queue_column.as_deref(), Some(column.as_str()));
    assert_eq!(bench.live_columns("q:L"), [column]);
    assert_eq!(bench.live_columns("m:L"), ["a:1"]);
}

#[test]
fn l6_10_a_waiter_polls_until_the_head_leaves() {
    let mut bench = Bench::new(LockConfig::untimed());
    let first = thread("b");
    let head = enqueue(&mut bench, 5, &first);
    let mut queue = machine();
    let polls = |bench: &Bench| bench.steps().iter().filter(|s| *s == "L6.10").count();
    let mut step = bench.run_until(&mut queue, Input::Start, |step| step.tag == L6_NOT_FIRST);
    for _ in 0..3 {
        step = bench.run_until(&mut queue, Input::Woke, |step| step.tag == L6_NOT_FIRST);
    }
    assert_eq!(polls(&bench), 4);
    assert_eq!(
        step.action,
        Action::Sleep {
            ms: 100,
            kind: SleepKind::Poll
        }
    );
    bench.execute(delete_own_cell("q:L".into(), head));
    let done = bench.run_until(&mut queue, Input::Woke, |_| false);
    assert!(matches!(done.action, Action::Done(Acquire::Acquired { .. })));
}

/// The next-in-line poll: second in the queue sleeps the short interval, third the
/// listing's; one read of two cells says which.
#[test]
fn the_waiter_next_in_line_polls_at_the_short_interval_and_the_others_at_the_listing_s() {
    let config = LockConfig {
        next_poll_ms: Some(5),
        ..LockConfig::untimed()
    };
    let mut bench = Bench::new(config);
    let head = enqueue(&mut bench, 5, &thread("b"));
    let mut next = machine();
    let is_sleep = |step: &Step<Acquire>| matches!(step.action, Action::Sleep { .. });
    let read = bench.run_until(&mut next, Input::Start, |step| step.tag == L6_READ_HEAD);
    assert_eq!(
        read.action,
        Action::Store(read_first("q:L".into(), 2)),
        "the head and the one behind it"
    );
    let Action::Store(command) = read.action else {
        unreachable!()
    };
    let reply = bench.execute(command);
    let step = bench.run_until(&mut next, Input::Reply(reply), is_sleep);
    assert_eq!(step.tag, NEXT_IN_LINE);
    assert_eq!(
        step.action,
        Action::Sleep {
            ms: 5,
            kind: SleepKind::Poll
        }
    );
    // Someone enqueued ahead of us (an earlier time): now third, the listing's interval.
    let ahead = enqueue(&mut bench, 6, &thread("c"));
    let step = bench.run_until(&mut next, Input::Woke, is_sleep);
    assert_eq!(step.tag, L6_NOT_FIRST);
    assert!(matches!(step.action, Action::Sleep { ms: 100, .. }));
    bench.execute(delete_own_cell("q:L".into(), head));
    bench.execute(delete_own_cell("q:L".into(), ahead));
    let done = bench.run_until(&mut next, Input::Woke, |_| false);
    assert!(matches!(done.action, Action::Done(Acquire::Acquired { .. })));
}

/// The long run: a locker that held the lock before reads the queue from that
/// hold's column (not walking the tombstones below it), never from above its own column.
#[test]
fn the_queue_is_read_from_the_last_hold_and_never_from_above_our_own_column() {
    let is_read = |step: &Step<Acquire>| step.tag == L6_READ_HEAD;
    for (hint, expected_start) in [
        (queue_column(10, &thread("a")), queue_column(10, &thread("a"))),
        // A hint above our own column (a clock that went back): clamped to our column.
        (
            queue_column(u64::MAX, &thread("z")),
            queue_column(1_000_000, &thread("a")),
        ),
    ] {
        let mut bench = Bench::new(LockConfig::untimed());
        let old = enqueue(&mut bench, 5, &thread("b"));
        bench.execute(delete_own_cell("q:L".into(), old));
        let mut queue = machine().reading_the_queue_from(Some(hint));
        let read = bench.run_until(&mut queue, Input::Start, is_read);
        assert_eq!(read.action, Action::Store(read_from("q:L".into(), expected_start, 1)));
        let Action::Store(command) = read.action else {
            unreachable!()
        };
        let reply = bench.execute(command);
        let done = bench.run_until(&mut queue, Input::Reply(reply), |_| false);
        assert!(matches!(done.action, Action::Done(Acquire::Acquired { .. })));
    }
}

/// A late enqueuer below our start (an earlier time, written after our last hold) is
/// hidden from our first read; the main row shows it to us, and from then on we read from
/// the row's start, see it ahead and wait (T2 and the queue order, as the listing's).
#[test]
fn after_meeting_another_contender_in_the_main_row_the_queue_is_read_from_its_start() {
    let mut bench = Bench::new(LockConfig::untimed());
    let late = thread("l");
    enqueue(&mut bench, 3, &late);
    bench.execute(write_own_cell(
        &bench.config,
        "m:L".into(),
        late.as_str().to_owned(),
        &late,
    ));
    let mut queue = machine().reading_the_queue_from(Some(queue_column(4, &thread("a"))));
    let is_read = |step: &Step<Acquire>| step.tag == L6_READ_HEAD;
    let first = bench.run_until(&mut queue, Input::Start, is_read);
    assert_eq!(
        first.action,
        Action::Store(read_from("q:L".into(), queue_column(4, &thread("a")), 1))
    );
    let Action::Store(command) = first.action else {
        unreachable!()
    };
    let reply = bench.execute(command);
    let wait = bench.run_until(&mut queue, Input::Reply(reply), |step| step.tag == AFTER_DELETE_WAIT);
    assert!(matches!(wait.action, Action::Sleep { .. }), "not alone: deleted, waits");
    assert!(bench.steps().iter().any(|step| step == "L6.7"));
    let again = bench.run_until(&mut queue, Input::Woke, is_read);
    assert_eq!(
        again.action,
        Action::Store(read_first("q:L".into(), 1)),
        "from the row's start"
    );
    let Action::Store(command) = again.action else {
        unreachable!()
    };
    let reply = bench.execute(command);
    let step = bench.run_until(&mut queue, Input::Reply(reply), |step| {
        matches!(step.action, Action::Sleep { .. })
    });
    assert_eq!(step.tag, L6_NOT_FIRST, "the late enqueuer is ahead: wait");
}

fn paced() -> LockConfig {
    LockConfig {
        next_poll_ms: Some(5),
        paced_poll: true,
        ..LockConfig::untimed()
    }
}

/// Enqueue `count` waiters ahead of ours (times 1.., before any machine's reading).
fn waiters_ahead(bench: &mut Bench, count: u64) -> Vec<String> {
    (1..=count)
        .map(|n| enqueue(bench, n, &thread(&format!("w{n}"))))
        .collect()
}

fn sleep_ms(step: &Step<Acquire>) -> u64 {
    match step.action {
        Action::Sleep { ms, .. } => ms,
        ref other => panic!("expected a sleep, got {other:?}"),
    }
}

fn is_sleep(step: &Step<Acquire>) -> bool {
    matches!(step.action, Action::Sleep { .. })
}

/// The paced poll, step by step on the waiter's own clock: with nothing known of
/// the pace it sleeps the listing's poll; once cells have left ahead of it, until it should
/// be next in line; next in line, half the holder's expected time left, down to the
/// next-in-line poll. Each figure is worked out in [`Pace`]'s terms (h, d) in the comments.
#[test]
fn a_paced_waiter_sleeps_by_its_rank_and_the_queue_s_pace() {
    let mut bench = Bench::new(paced());
    let mut ahead = waiters_ahead(&mut bench, 6);
    let mut waiter = machine();
    let read = bench.run_until(&mut waiter, Input::Start, |step| step.tag == L6_READ_HEAD);
    assert_eq!(read.action, Action::Store(read_first("q:L".into(), PACE_READ_CELLS)));
    let Action::Store(command) = read.action else {
        unreachable!()
    };
    let reply = bench.execute(command);
    // t = 0, rank 6: no pace yet.
    let step = bench.run_until(&mut waiter, Input::Reply(reply), is_sleep);
    assert_eq!((step.tag, sleep_ms(&step)), (PACED_BEHIND, 100));
    let mut wake_after = |bench: &mut Bench, waiter: &mut QueueGetLock, ms: u64, leave: usize| {
        bench.now_us += ms * 1000;
        for column in ahead.drain(..leave) {
            bench.execute(delete_own_cell("q:L".into(), column));
        }
        bench.run_until(waiter, Input::Woke, |step| {
            is_sleep(step) || matches!(step.action, Action::Done(_))
        })
    };
    // t = 100, three left, rank 3: h = 100 / 3 = 33.3, d = the earliest the last could
    // have been, 100 - h = 66.7; next in line at d + 2h = 133.3.
    let step = wake_after(&mut bench, &mut waiter, 100, 3);
    assert_eq!((step.tag, sleep_ms(&step)), (PACED_BEHIND, 33));
    // t = 133, none: h = 133 / 3 = 44.3, next in line at 66.7 + 88.7 = 155.3.
    let step = wake_after(&mut bench, &mut waiter, 33, 0);
    assert_eq!((step.tag, sleep_ms(&step)), (PACED_BEHIND, 22));
    // t = 155, one, rank 2: h = 155 / 4 = 38.75, d = the read before, 133 (later than
    // 155 - h); next in line at 171.75.
    let step = wake_after(&mut bench, &mut waiter, 22, 1);
    assert_eq!((step.tag, sleep_ms(&step)), (PACED_BEHIND, 16));
    // t = 171, one, next in line: h = 171 / 5 = 34.2, d = 155; the release due at 189.2,
    // half of the 18.2 ms left.
    let step = wake_after(&mut bench, &mut waiter, 16, 1);
    assert_eq!((step.tag, sleep_ms(&step)), (PACED_NEXT, 9));
    // t = 180, none: h = 36, due at 191: half of 11 ms.
    let step = wake_after(&mut bench, &mut waiter, 9, 0);
    assert_eq!((step.tag, sleep_ms(&step)), (PACED_NEXT, 5));
    // t = 185, the holder leaves: the waiter takes the lock as the listing does.
    let step = wake_after(&mut bench, &mut waiter, 5, 1);
    assert_eq!(step.tag, L6_HELD);
    assert!(matches!(step.action, Action::Done(Acquire::Acquired { .. })));
}

/// Found on the real cluster at 4 lockers (2026-11-28): before any cell has left
/// ahead of it, a paced waiter guesses the pace from how far apart the waiters behind the
/// head enqueued (the head's own column is left out: it dates from before its hold), and
/// sleeps `rank - 1` such gaps, never longer than the listing's poll.
#[test]
fn a_paced_waiter_with_no_pace_yet_guesses_it_from_the_waiters_enqueue_times() {
    for (gap_ms, expected_ms) in [(10, 30), (20, 60), (50, 100)] {
        let mut bench = Bench::new(paced());
        bench.now_us = 20_000_000;
        let now_us = bench.now_us;
        // The head enqueued long ago (a long hold); three waiters `gap_ms` apart, the last
        // `gap_ms` before our reading.
        enqueue(&mut bench, now_us - 10_000_000, &thread("holder"));
        for n in 1..=3u64 {
            enqueue(&mut bench, now_us - (4 - n) * gap_ms * 1000, &thread(&format!("w{n}")));
        }
        let mut waiter = machine();
        let step = bench.run_until(&mut waiter, Input::Start, is_sleep);
        assert_eq!(
            (step.tag, sleep_ms(&step)),
            (PACED_BEHIND, expected_ms),
            "gap {gap_ms} ms, rank 4"
        );
    }
}

/// Found on the real cluster (2026-11-28): a paced waiter behind the next in
/// line whose turn to be next in line is overdue reads again after one handoff, not after
/// the listing's poll, which on a queue quicker than its poll would make it sleep through
/// its turn while everyone behind it waits.
#[test]
fn an_overdue_paced_waiter_reads_again_after_one_handoff_not_a_listing_poll() {
    let mut bench = Bench::new(paced());
    let ahead = waiters_ahead(&mut bench, 6);
    let mut waiter = machine();
    let step = bench.run_until(&mut waiter, Input::Start, is_sleep);
    assert_eq!((step.tag, sleep_ms(&step)), (PACED_BEHIND, 100), "rank 6, no pace yet");
    // t = 100, three left, rank 3: h = 33.3, d = 66.7, next in line due at 133.3.
    bench.now_us += 100_000;
    for column in &ahead[..3] {
        bench.execute(delete_own_cell("q:L".into(), column.clone()));
    }
    let step = bench.run_until(&mut waiter, Input::Woke, is_sleep);
    assert_eq!((step.tag, sleep_ms(&step)), (PACED_BEHIND, 33));
    // Woken late at t = 220, none left: h = 220 / 3 = 73.3, next in line was due at
    // 66.7 + 2h = 213.3, overdue: one handoff, 73 ms (the listing's poll would be 100).
    bench.now_us += 120_000;
    let step = bench.run_until(&mut waiter, Input::Woke, is_sleep);
    assert_eq!((step.tag, sleep_ms(&step)), (PACED_BEHIND, 73));
    // Woken at t = 900, none left: h = 300, overdue again, but never past the listing's
    // poll.
    bench.now_us += 680_000;
    let step = bench.run_until(&mut waiter, Input::Woke, is_sleep);
    assert_eq!((step.tag, sleep_ms(&step)), (PACED_BEHIND, 100));
}

/// A paced sleep is bounded: never further ahead than the waiter has watched the queue
/// (an estimate from one early handoff can be far off), at most ten listing polls, and no
/// later past a deadline than the listing's poll would be.
#[test]
fn a_paced_sleep_is_at_most_what_was_watched_ten_polls_and_the_deadline() {
    for (max_wait_ms, expected_ms) in [(None, 100 * PACE_MAX_POLLS), (Some(2300), 300)] {
        let mut bench = Bench::new(LockConfig { max_wait_ms, ..paced() });
        let ahead = waiters_ahead(&mut bench, 30);
        let mut waiter = machine();
        let step = bench.run_until(&mut waiter, Input::Start, is_sleep);
        assert_eq!((step.tag, sleep_ms(&step)), (PACED_BEHIND, 100), "rank 30, no pace yet");
        // t = 100, two left: h = 50 says next in line at 1,400 ms; watched for 100 only.
        bench.now_us += 100_000;
        for column in &ahead[..2] {
            bench.execute(delete_own_cell("q:L".into(), column.clone()));
        }
        let step = bench.run_until(&mut waiter, Input::Woke, is_sleep);
        assert_eq!((step.tag, sleep_ms(&step)), (PACED_BEHIND, 100));
        // The waiter wakes late, at t = 2000 (its process was descheduled), and two more
        // have left: h = 500, next in line at 1500 + 25 x 500; watched for 2 s.
        bench.now_us += 1_900_000;
        for column in &ahead[2..4] {
            bench.execute(delete_own_cell("q:L".into(), column.clone()));
        }
        let step = bench.run_until(&mut waiter, Input::Woke, is_sleep);
        assert_eq!(
            (step.tag, sleep_ms(&step)),
            (PACED_BEHIND, expected_ms),
            "max wait {max_wait_ms:?}"
        );
    }
}

/// Far back in a long queue, a waiter reads only the first cells and counts itself at
/// their number (a lower bound: it wakes early, never late).
#[test]
fn a_paced_waiter_beyond_the_cells_it_reads_counts_itself_at_their_number() {
    let mut bench = Bench::new(paced());
    let ahead = waiters_ahead(&mut bench, u64::from(PACE_READ_CELLS) + 8);
    let mut waiter = machine();
    bench.run_until(&mut waiter, Input::Start, is_sleep);
    assert_eq!(waiter.pace.first, Some((PACE_READ_CELLS, bench.now_us)));
    bench.now_us += 100_000;
    for column in &ahead[..12] {
        bench.execute(delete_own_cell("q:L".into(), column.clone()));
    }
    bench.run_until(&mut waiter, Input::Woke, is_sleep);
    assert_eq!(waiter.pace.last, Some((PACE_READ_CELLS - 4, bench.now_us)));
}

#[test]
fn l6_7_first_but_not_alone_in_the_main_row_deletes_and_retries() {
    let mut bench = Bench::new(LockConfig::untimed());
    let other = thread("b");
    bench.execute(write_own_cell(
        &bench.config,
        "m:L".into(),
        other.as_str().into(),
        &other,
    ));
    let mut queue = machine();
    let step = bench.run_until(&mut queue, Input::Start, |step| step.tag == AFTER_DELETE_WAIT);
    assert_eq!(bench.steps(), ["L5.1", "L6.1", "L6.2", "L6.3", "L6.4", "L6.7"]);
    assert_eq!(bench.live_columns("m:L"), ["b:1"], "L6.7 removed our main cell");
    assert!(matches!(
        step.action,
        Action::Sleep {
            kind: SleepKind::Poll,
            ..
        }
    ));
    bench.execute(delete_own_cell("m:L".into(), other.as_str().into()));
    let done = bench.run_until(&mut queue, Input::Woke, |_| false);
    assert!(
        matches!(done.action, Action::Done(Acquire::Acquired { .. })),
        "L6.8: back to 2, then held"
    );
}

#[test]
fn m1_mutant_takes_the_lock_without_reading_the_main_row() {
    let mut bench = Bench::new(LockConfig::untimed());
    bench.config.mutants.m1_skip_main_check = true;
    let other = thread("b");
    bench.execute(write_own_cell(
        &bench.config,
        "m:L".into(),
        other.as_str().into(),
        &other,
    ));
    assert!(bench.run(&mut machine()).is_acquired(), "M1 ignores b's main cell");
    assert_eq!(
        bench.live_columns("m:L"),
        ["a:1", "b:1"],
        "two holders' cells: T1 is broken"
    );
    assert!(bench.tags.contains(&M1_HELD));
}

#[test]
fn a_waiter_refreshes_its_queue_cell_and_rewrites_it_if_gone() {
    let mut bench = Bench::new(LockConfig {
        ttl_s: Some(4),
        renew_every_ms: 2000,
        poll_ms: 500,
        ..LockConfig::default()
    });
    let head = enqueue(&mut bench, 5, &thread("b"));
    let mut queue = machine();
    let mut input = Input::Start;
    for _ in 0..20 {
        // Keep b's head cell alive, as b's renewal would.
        bench.execute(write_own_cell(&bench.config, "q:L".into(), head.clone(), &thread("b")));
        let step = bench.run_until(&mut queue, input, |step| step.tag == L6_NOT_FIRST);
        assert_eq!(
            step.action,
            Action::Sleep {
                ms: 500,
                kind: SleepKind::Poll
            }
        );
        bench.now_us += 500_000;
        input = Input::Woke;
    }
    assert!(
        bench.tags.contains(&REFRESH),
        "refreshed while waiting 10 s with a 4 s TTL"
    );
    let ours = queue.queue_column().unwrap().to_owned();
    assert!(
        bench.live_columns("q:L").contains(&ours),
        "still enqueued after 2.5 TTLs"
    );
}

/// Runs `queue` from `input` where every store request takes `round_trip_us` (the reply is
/// applied and read that long after the request), until it finishes (its outcome) or
/// `max_requests` were sent (the input to go on with); and the requests sent.
fn run_with_round_trip(
    bench: &mut Bench,
    queue: &mut QueueGetLock,
    mut input: Input,
    round_trip_us: u64,
    max_requests: u32,
) -> (Result<Acquire, Input>, u32) {
    let mut requests = 0;
    while requests < max_requests {
        let step = queue.resume(&bench.config, input, bench.now_us);
        bench.tags.push(step.tag);
        input = match step.action {
            Action::Store(command) => {
                requests += 1;
                bench.now_us += round_trip_us;
                Input::Reply(bench.execute(command))
            }
            Action::Sleep { ms, .. } => {
                bench.now_us += ms * 1000;
                Input::Woke
            }
            Action::ReadTime => Input::Time(bench.now_us),
            Action::Done(outcome) => return (Ok(outcome), requests),
            other => panic!("queue GetLock asked for {other:?}"),
        };
    }
    (Err(input), requests)
}

/// T2 at any renewal interval: a waiter whose queue-cell refresh falls due again before
/// each rewrite is answered (interval 1-10 ms, round trip 20 ms) still reads the head after
/// every rewrite, so it acquires once the head leaves. Before, it rewrote for ever.
#[test]
fn t2_a_renewal_interval_below_the_round_trip_does_not_starve_the_head_read() {
    for renew_every_ms in [1, 5, 10, 19, 20, 21, 50] {
        let mut bench = Bench::new(LockConfig {
            ttl_s: Some(180),
            renew_every_ms,
            ..LockConfig::default()
        });
        // Alone: acquired in the listing's four requests after the enqueue.
        let (outcome, requests) = run_with_round_trip(&mut bench, &mut machine(), Input::Start, 20_000, 1000);
        assert!(
            matches!(outcome, Ok(Acquire::Acquired { .. })),
            "alone, renewing every {renew_every_ms} ms: {outcome:?} after {requests} requests"
        );
        assert_eq!(
            requests, 4,
            "enqueue, head, main write, main read ({renew_every_ms} ms)"
        );
        // Behind a head that leaves after a while: acquired, one refresh per poll at most.
        let mut bench = Bench::new(bench.config.clone());
        let head = enqueue(&mut bench, 5, &thread("b"));
        let mut queue = machine();
        let (outcome, _) = run_with_round_trip(&mut bench, &mut queue, Input::Start, 20_000, 40);
        let Err(input) = outcome else {
            panic!("acquired while b holds the head: {outcome:?}")
        };
        let refreshes = bench.tags.iter().filter(|tag| **tag == REFRESH).count();
        let reads = bench.tags.iter().filter(|tag| **tag == L6_READ_HEAD).count();
        assert!(
            reads >= refreshes && reads >= 19,
            "every refresh is followed by a head read: {refreshes} refreshes, {reads} reads ({renew_every_ms} ms)"
        );
        bench.execute(delete_own_cell("q:L".into(), head));
        let (outcome, requests) = run_with_round_trip(&mut bench, &mut queue, input, 20_000, 1000);
        assert!(
            matches!(outcome, Ok(Acquire::Acquired { .. })),
            "renewing every {renew_every_ms} ms, after the head left: {outcome:?} after {requests} requests"
        );
    }
}

#[test]
fn a_waiter_whose_queue_cell_vanished_writes_it_again() {
    let mut bench = Bench::new(LockConfig::untimed());
    let head = enqueue(&mut bench, 5, &thread("b"));
    let mut queue = machine();
    bench.run_until(&mut queue, Input::Start, |step| step.tag == L6_NOT_FIRST);
    // Our cell is deleted behind our back (as an expiry would), and the head leaves.
    let ours = queue.queue_column().unwrap().to_owned();
    bench.execute(delete_own_cell("q:L".into(), ours.clone()));
    bench.execute(delete_own_cell("q:L".into(), head));
    bench.now_us += 1;
    let done = bench.run_until(&mut queue, Input::Woke, |_| false);
    assert!(bench.tags.contains(&REENQUEUE));
    assert!(matches!(done.action, Action::Done(Acquire::Acquired { .. })));
    assert_eq!(bench.live_columns("q:L"), [ours], "the same column, written again");
}

#[test]
fn max_wait_deletes_the_queue_cell_and_times_out() {
    let mut bench = Bench::new(LockConfig {
        max_wait_ms: Some(1000),
        ..LockConfig::untimed()
    });
    enqueue(&mut bench, 5, &thread("b"));
    assert_eq!(bench.run(&mut machine()), Acquire::TimedOut);
    assert_eq!(bench.live_columns("q:L").len(), 1, "only b is left in the queue");
    assert!(bench.tags.contains(&GIVE_UP_LEAVE));
}

#[test]
fn urgent_only_while_waiting_with_a_refresh_due() {
    let config = LockConfig {
        ttl_s: Some(4),
        renew_every_ms: 2000,
        ..LockConfig::default()
    };
    let mut queue = machine();
    assert!(!queue.urgent(&config, 10_000_000));
    queue.resume(&config, Input::Start, 0);
    queue.resume(&config, Input::Time(0), 0);
    assert!(!queue.urgent(&config, 1_999_999));
    assert!(queue.urgent(&config, 2_000_000));
    assert!(!queue.urgent(&LockConfig::untimed(), 9_000_000));
}

#[test]
fn a_success_a_whole_ttl_after_the_main_write_is_not_trusted() {
    let mut bench = Bench::new(LockConfig {
        ttl_s: Some(4),
        renew_every_ms: 2000,
        ..LockConfig::default()
    });
    let mut queue = machine();
    bench.run_until(&mut queue, Input::Start, |step| step.tag == L6_READ_MAIN);
    // The read saw our cell alone (it ran just before expiry), but the answer arrives a
    // whole TTL after we wrote the cell.
    bench.now_us += 4_000_000;
    let step = queue.resume(
        &bench.config,
        Input::Reply(StoreReply::Slice(vec![crate::store::LiveCell {
            column: "a:1".into(),
            value: "a:1".into(),
            timestamp_us: 1,
        }])),
        bench.now_us,
    );
    assert_eq!(step.tag, SLOW_ACQUISITION);
}

/// The same, within a TTL by our clock: a main cell written at 10.9 s with a 4 s TTL dies
/// at 14 s (Cassandra's whole-second expiry), so a success read at 14.5 s may be one that
/// another contender's read, after our cell died, did not see.
#[test]
fn a_success_after_the_main_cell_s_whole_second_expiry_is_not_trusted() {
    let config = LockConfig {
        ttl_s: Some(4),
        renew_every_ms: 2000,
        ..LockConfig::default()
    };
    let alone = || {
        Input::Reply(StoreReply::Slice(vec![crate::store::LiveCell {
            column: "a:1".into(),
            value: "a:1".into(),
            timestamp_us: 1,
        }]))
    };
    for (answered_us, trusted) in [(13_999_999, true), (14_000_000, false), (14_500_000, false)] {
        let mut bench = Bench::new(config.clone());
        bench.now_us = 10_900_000;
        let mut queue = machine();
        bench.run_until(&mut queue, Input::Start, |step| step.tag == L6_READ_MAIN);
        let step = queue.resume(&bench.config, alone(), answered_us);
        assert_eq!(step.tag == L6_HELD, trusted, "answered at {answered_us} us: {step:?}");
        assert_eq!(step.tag == SLOW_ACQUISITION, !trusted);
    }
}
