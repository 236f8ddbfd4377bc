//! Every committed record of `cassalock bench clients` (reports/real-clients/), judged again:
//! C-lost's and F-order's verdicts are what the records show.

use std::path::PathBuf;

use cassalock_judge::event::{ReleaseOutcome, What};
use cassalock_judge::observed::{judge_record, Judge, Keep, ObservedVerdicts};
use cassalock_judge::told::Told;
use cassalock_judge::{ClaimId, ClaimVerdict};

fn records() -> Vec<(String, cassalock_judge::event::Record)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../reports/real-clients");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("reports/real-clients") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "jsonl") {
            let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
            let record = cassalock_judge::event::read(file).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push((path.file_stem().unwrap().to_string_lossy().into_owned(), record));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn verdict(v: &ObservedVerdicts, claim: ClaimId) -> Option<(ClaimVerdict, String)> {
    v.checks
        .iter()
        .find(|(id, _, _)| *id == claim)
        .map(|(_, verdict, text)| (*verdict, text.clone()))
}

/// What each record shows of the holders overtaken: (record, C-lost, the first telling's
/// kind and words, or None for never told). Read off the records by hand: the overlap's
/// earlier holder, then its `lease_lost`, its `released` answer and the resource's refusals.
/// How the first telling came ("refused", "lost", "release") and words it carries.
type FirstTold = Option<(&'static str, &'static str)>;

const EXPECTED: [(&str, ClaimVerdict, FirstTold); 18] = [
    (
        "curator-cut-off-holder",
        ClaimVerdict::Holds,
        Some(("lost", "the connection state is LOST")),
    ),
    ("curator-paused-holder", ClaimVerdict::Holds, Some(("refused", ""))),
    (
        "etcd-paused-holder",
        ClaimVerdict::Holds,
        Some(("lost", "the session is done")),
    ),
    (
        "etcd-cut-off-holder",
        ClaimVerdict::Holds,
        Some(("lost", "the session is done")),
    ),
    // The resumed waiter, its key gone, took the lock a few ms before the fair holder did, with
    // no token: the fence refused its write.
    (
        "etcd34-waiter-paused-waiter",
        ClaimVerdict::Holds,
        Some(("refused", "")),
    ),
    ("kazoo-cut-off-holder", ClaimVerdict::Holds, Some(("refused", ""))),
    ("kazoo-paused-holder", ClaimVerdict::Holds, Some(("refused", ""))),
    (
        "redis-py-cut-off-holder",
        ClaimVerdict::Holds,
        Some(("release", "LockNotOwnedError")),
    ),
    (
        "redis-py-paused-holder",
        ClaimVerdict::Holds,
        Some(("release", "LockNotOwnedError")),
    ),
    (
        "redis-py-server-restarted",
        ClaimVerdict::Holds,
        Some(("release", "LockNotOwnedError")),
    ),
    ("redisson-fair-cut-off-holder", ClaimVerdict::Violated, None),
    (
        "redisson-fair-failover-to-lagging-replica",
        ClaimVerdict::Holds,
        Some(("release", "IllegalMonitorStateException")),
    ),
    ("redisson-fair-paused-holder", ClaimVerdict::Violated, None),
    (
        "redisson-fenced-try-paused-holder",
        ClaimVerdict::Holds,
        Some(("refused", "")),
    ),
    (
        "redisson-rlock-cut-off-holder",
        ClaimVerdict::Holds,
        Some(("release", "IllegalMonitorStateException")),
    ),
    (
        "redisson-rlock-failover-to-lagging-replica",
        ClaimVerdict::Holds,
        Some(("release", "IllegalMonitorStateException")),
    ),
    (
        "redisson-rlock-paused-holder",
        ClaimVerdict::Holds,
        Some(("release", "IllegalMonitorStateException")),
    ),
    (
        "redsync-one-server-restarted",
        ClaimVerdict::Holds,
        Some(("release", "redsync.ErrTaken")),
    ),
];

#[test]
fn c_lost_on_every_committed_record_is_what_the_record_shows() {
    let records = records();
    assert_eq!(records.len(), 34, "the report's 34 runs");
    for (name, record) in &records {
        let v = judge_record(&record.header, &record.events);
        let (verdict, text) = verdict(&v, ClaimId::CLost).expect("C-lost is judged");
        let expected = EXPECTED.iter().find(|(run, _, _)| run == name);
        let Some((_, expected_verdict, told)) = expected else {
            assert_eq!(verdict, ClaimVerdict::NotExercised, "{name}: {text}");
            assert!(text.starts_with("no occasion"), "{name}: {text}");
            assert!(v.lost_holders.is_empty(), "{name}");
            continue;
        };
        assert_eq!(verdict, *expected_verdict, "{name}: {text}");
        assert_eq!(
            v.lost_holders.len(),
            1,
            "{name}: one holder overtaken, the one the fault hit"
        );
        let lost = &v.lost_holders[0];
        match (told, lost.first_told()) {
            (None, None) => assert!(text.contains("never told"), "{name}: {text}"),
            (Some(("refused", _)), Some((_, Told::RefusedWrite))) => {}
            (Some(("lost", words)), Some((_, Told::LostNotice { why }))) => {
                assert!(why.contains(words), "{name}: {why}")
            }
            (Some(("release", words)), Some((_, Told::AtRelease { outcome, why }))) => {
                assert_eq!(*outcome, ReleaseOutcome::NotHeld, "{name}");
                assert!(why.contains(words), "{name}: {why}");
            }
            (expected, got) => panic!("{name}: expected {expected:?}, the judge says {got:?}"),
        }
        // Checked against the raw events: the holder was the earlier one of an overlap or
        // wrote and was refused, and what it heard is in the record.
        let node = lost.holder.split('-').next().unwrap();
        let heard_lost = record.events.iter().any(|e| {
            e.node == node && matches!(&e.what, What::LeaseLost { .. }) && e.at_ns >= lost.acquired_at.as_nanos() as u64
        });
        let answered_not_held = record.events.iter().any(|e| {
            matches!(&e.what, What::Released { thread, outcome, .. }
                if *thread == lost.holder && matches!(outcome, ReleaseOutcome::NotHeld | ReleaseOutcome::Failed))
        });
        let refused = record.events.iter().any(
            |e| matches!(&e.what, What::Write { client: Some(client), accepted: Some(false), .. } if client == node),
        );
        assert_eq!(
            told.is_some(),
            heard_lost || answered_not_held || refused,
            "{name}: {} told by the judge, the record says lost {heard_lost}, not held {answered_not_held}, refused {refused}",
            lost.holder
        );
        assert!(
            v.overlaps.iter().any(|o| o.first.holder == lost.holder) || refused,
            "{name}: {} overtaken",
            lost.holder
        );
        // The delay runs from the overtaking acquisition, which the record has.
        let overtaker = record.events.iter().any(|e| {
            matches!(&e.what, What::Acquired { .. }) && e.node != node && e.at_ns == lost.overtaken_at.as_nanos() as u64
        });
        assert!(overtaker, "{name}: no acquisition at {:?}", lost.overtaken_at);
    }
}

#[test]
fn f_order_is_judged_for_the_locks_that_promise_it_and_kept_in_every_committed_record() {
    for (name, record) in records() {
        let v = judge_record(&record.header, &record.events);
        let fifo = ["redisson-fair", "curator", "kazoo", "etcd"]
            .iter()
            .any(|lock| name.starts_with(lock));
        assert_eq!(v.fifo.is_some(), fifo, "{name}: {}", record.header.lock);
        match verdict(&v, ClaimId::FOrder) {
            Some((verdict, text)) => {
                assert!(fifo, "{name}");
                assert_eq!(verdict, ClaimVerdict::Holds, "{name}: {text}");
            }
            None => assert!(!fifo, "{name}"),
        }
        assert!(v.overtakes_past_tolerance == 0 || !fifo, "{name}");
    }
}

#[test]
fn every_committed_record_judges_the_same_in_bounded_memory() {
    for (name, record) in records() {
        let everything = judge_record(&record.header, &record.events);
        let mut bounded = Judge::for_record(&record.header, Keep::Verdicts);
        for event in &record.events {
            bounded.see(event);
        }
        let bounded = bounded.finish(std::time::Duration::from_nanos(record.header.run.end_ns));
        assert_eq!(everything.checks, bounded.checks, "{name}");
        assert_eq!(everything.lost_holders, bounded.lost_holders, "{name}");
    }
}

/// `Judgement::claim_verdicts` names each claim and verdict as the judgement prints them.
#[test]
fn every_records_claim_verdicts_are_its_printed_lines() {
    for (name, record) in records() {
        let judgement = cassalock_judge::judge(&record);
        let printed: Vec<(String, String)> = judgement
            .to_string()
            .lines()
            .filter_map(|line| {
                let mut words = line.strip_prefix("  ")?.split_whitespace();
                Some((words.next()?.to_owned(), words.next()?.to_owned()))
            })
            .filter(|(claim, _)| claim.contains('-') || claim.starts_with('T'))
            .collect();
        let listed: Vec<(String, String)> = judgement
            .claim_verdicts()
            .into_iter()
            .map(|(claim, verdict)| {
                let word = match verdict {
                    ClaimVerdict::Holds => "ok",
                    ClaimVerdict::Violated => "FAILED",
                    ClaimVerdict::NotExercised => "-",
                    ClaimVerdict::Bounded => "bounded",
                };
                (claim.to_owned(), word.to_owned())
            })
            .collect();
        assert!(!listed.is_empty(), "{name}: no claim judged");
        assert_eq!(listed, printed, "{name}");
    }
}
