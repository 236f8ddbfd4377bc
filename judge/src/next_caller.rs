//! C-free and C-release for a run seen from outside, judged by the next caller.
//!
//! A lock library's give-up or failed call may leave something on the server (a queued node,
//! a key, a hash field) that keeps the lock from the next caller though nobody holds it; so may
//! a release that said it released. From outside, the only question that matters to a user is
//! whether the next caller gets the lock. The real runner asks it once: when every call of the
//! workload has returned and every release has been answered, one more client of the same
//! program (node `next`, started and connected with the others, idle until then) calls
//! `try_lock` with a short wait, and the record gets one [`What::NextCaller`] event with what
//! it got. The other clients are still running then, so a node or key that lives as long as
//! their session is still there to be found.
//!
//! The verdicts, from that event and the calls before it:
//!
//! - it **acquired**: C-free is kept if a call of the run gave up or failed (an occasion), and
//!   C-release is kept if a release was answered `released`; each without an occasion says so.
//! - the lock was **taken** (its wait ran out): the run left the lock held with nobody holding
//!   it. If only give-ups and failed calls could have left it, C-free is violated; if only
//!   releases, C-release is. A run that had both cannot tell which from outside: C-free is
//!   charged (the give-ups come first in the list of suspects, and a run of `lock` calls, which
//!   do not give up, tells whether the releases alone leave it) and C-release is undecided.
//! - its call **failed**, or never returned within the run's bound: nothing is known; both
//!   undecided, never a pass.
//!
//! The check is bounded by its wait: something left that expires within the wait is not
//! seen, and the verdict says the wait. A record without the event (a run cut short, or written
//! before the check existed) gets neither claim.

use std::time::Duration;

use crate::event::{Event, NextCallerGot, ReleaseOutcome, What};
use crate::text::count;
use crate::{ClaimId, ClaimVerdict};

/// The calls of a run that could leave something behind, and what the next caller got.
#[derive(Clone, Debug, Default)]
pub struct NextCaller {
    /// Acquisitions that ended without the lock (a `try_lock`'s no, a deadline, a failure).
    give_ups: u64,
    /// Releases answered `failed`.
    failed_releases: u64,
    /// Releases that returned as done (`released`; a library that cannot tell released from
    /// already gone, or that acted without knowing whose the key was, counts too).
    releases: u64,
    /// The next caller's wait and what it got, once it asked.
    asked: Option<(u64, NextCallerGot, String)>,
}

impl NextCaller {
    /// Take in the next event of the record.
    pub fn see(&mut self, event: &Event) {
        match &event.what {
            What::NotAcquired { .. } => self.give_ups += 1,
            What::Released { outcome, .. } => match outcome {
                ReleaseOutcome::Released | ReleaseOutcome::GoneEitherWay | ReleaseOutcome::ActedBlind => {
                    self.releases += 1;
                }
                ReleaseOutcome::Failed => self.failed_releases += 1,
                ReleaseOutcome::NotHeld => {}
            },
            What::NextCaller { wait_ms, got, why } => self.asked = Some((*wait_ms, *got, why.clone())),
            _ => {}
        }
    }

    /// C-free's and C-release's verdicts and texts; none when no next caller asked.
    pub fn checks(&self) -> Vec<(ClaimId, ClaimVerdict, String)> {
        let Some((wait_ms, got, why)) = &self.asked else {
            return Vec::new();
        };
        let wait = Duration::from_millis(*wait_ms);
        let failures = self.give_ups + self.failed_releases;
        let suspects_free = format!(
            "{} and {}",
            count(self.give_ups, "give-up"),
            count(self.failed_releases, "failed release")
        );
        let suspects_release = count(self.releases, "release");
        let said = if why.is_empty() {
            String::new()
        } else {
            format!(" (its library: {why})")
        };
        match got {
            NextCallerGot::Acquired => {
                let free = format!(
                    "the next caller's try_lock acquired within its {} ms wait",
                    wait.as_millis()
                );
                vec![
                    if failures > 0 {
                        (
                            ClaimId::CFree,
                            ClaimVerdict::Holds,
                            format!("kept: after {suspects_free}, {free}"),
                        )
                    } else {
                        (
                            ClaimId::CFree,
                            ClaimVerdict::NotExercised,
                            format!("no occasion: no call gave up or failed ({free})"),
                        )
                    },
                    if self.releases > 0 {
                        (
                            ClaimId::CRelease,
                            ClaimVerdict::Holds,
                            format!("kept: after {suspects_release}, {free}"),
                        )
                    } else {
                        (
                            ClaimId::CRelease,
                            ClaimVerdict::NotExercised,
                            format!("no occasion: no release was answered released ({free})"),
                        )
                    },
                ]
            }
            NextCallerGot::Taken => {
                let taken = format!(
                    "the next caller's try_lock did not get the lock in {} ms{said}, once every call had returned and every release had been answered",
                    wait.as_millis()
                );
                match (failures > 0, self.releases > 0) {
                    (true, false) => vec![
                        (
                            ClaimId::CFree,
                            ClaimVerdict::Violated,
                            format!("violated: {taken}; only {suspects_free} could have left it"),
                        ),
                        (ClaimId::CRelease, ClaimVerdict::NotExercised, "no occasion: no release was answered released".into()),
                    ],
                    (false, true) => vec![
                        (ClaimId::CFree, ClaimVerdict::NotExercised, "no occasion: no call gave up or failed".into()),
                        (
                            ClaimId::CRelease,
                            ClaimVerdict::Violated,
                            format!("violated: {taken}; only {suspects_release} could have left it"),
                        ),
                    ],
                    (true, true) => vec![
                        (
                            ClaimId::CFree,
                            ClaimVerdict::Violated,
                            format!(
                                "violated: {taken}; {suspects_free}, or {suspects_release}, left it (from outside the two cannot be told apart; a run of lock calls, which do not give up, tells whether releases alone leave it)"
                            ),
                        ),
                        (
                            ClaimId::CRelease,
                            ClaimVerdict::Bounded,
                            "not decided: the lock was left held, by a give-up or by a release (C-free)".into(),
                        ),
                    ],
                    (false, false) => {
                        let text = format!("not decided: {taken}, yet no call of the run gave up or released: something outside the run holds it");
                        vec![
                            (ClaimId::CFree, ClaimVerdict::Bounded, text.clone()),
                            (ClaimId::CRelease, ClaimVerdict::Bounded, text),
                        ]
                    }
                }
            }
            NextCallerGot::Failed | NextCallerGot::NoAnswer => {
                let text = if *got == NextCallerGot::Failed {
                    format!("not decided: the next caller's try_lock failed{said}")
                } else {
                    format!("not decided: the next caller's try_lock never returned ({why})")
                };
                vec![
                    (ClaimId::CFree, ClaimVerdict::Bounded, text.clone()),
                    (ClaimId::CRelease, ClaimVerdict::Bounded, text),
                ]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::NotAcquired;

    fn event(what: What) -> Event {
        Event {
            at_ns: 0,
            node: "c0".into(),
            clock_us: None,
            what,
        }
    }

    fn gave_up() -> Event {
        event(What::NotAcquired {
            thread: "c0-1".into(),
            lock: "l".into(),
            outcome: NotAcquired::TimedOut,
            left: None,
            why: String::new(),
        })
    }

    fn released() -> Event {
        event(What::Released {
            thread: "c0-1".into(),
            lock: "l".into(),
            outcome: ReleaseOutcome::Released,
            why: String::new(),
        })
    }

    fn next(got: NextCallerGot) -> Event {
        event(What::NextCaller {
            wait_ms: 1000,
            got,
            why: String::new(),
        })
    }

    fn verdicts(events: &[Event]) -> Vec<(ClaimId, ClaimVerdict)> {
        let mut judge = NextCaller::default();
        for event in events {
            judge.see(event);
        }
        judge
            .checks()
            .into_iter()
            .map(|(claim, verdict, _)| (claim, verdict))
            .collect()
    }

    #[test]
    fn c_free_and_c_release_are_not_judged_without_a_next_caller() {
        assert!(verdicts(&[gave_up(), released()]).is_empty());
    }

    #[test]
    fn a_free_lock_keeps_both_where_each_had_an_occasion() {
        use ClaimVerdict::*;
        assert_eq!(
            verdicts(&[gave_up(), released(), next(NextCallerGot::Acquired)]),
            [(ClaimId::CFree, Holds), (ClaimId::CRelease, Holds)]
        );
        assert_eq!(
            verdicts(&[released(), next(NextCallerGot::Acquired)]),
            [(ClaimId::CFree, NotExercised), (ClaimId::CRelease, Holds)]
        );
    }

    #[test]
    fn a_taken_lock_is_charged_to_the_only_kind_of_call_that_could_leave_it() {
        use ClaimVerdict::*;
        assert_eq!(
            verdicts(&[gave_up(), next(NextCallerGot::Taken)]),
            [(ClaimId::CFree, Violated), (ClaimId::CRelease, NotExercised)]
        );
        assert_eq!(
            verdicts(&[released(), next(NextCallerGot::Taken)]),
            [(ClaimId::CFree, NotExercised), (ClaimId::CRelease, Violated)]
        );
        assert_eq!(
            verdicts(&[released(), gave_up(), next(NextCallerGot::Taken)]),
            [(ClaimId::CFree, Violated), (ClaimId::CRelease, Bounded)]
        );
    }

    #[test]
    fn a_failed_next_caller_decides_nothing() {
        use ClaimVerdict::*;
        assert_eq!(
            verdicts(&[gave_up(), released(), next(NextCallerGot::Failed)]),
            [(ClaimId::CFree, Bounded), (ClaimId::CRelease, Bounded)]
        );
        assert_eq!(
            verdicts(&[gave_up(), released(), next(NextCallerGot::NoAnswer)]),
            [(ClaimId::CFree, Bounded), (ClaimId::CRelease, Bounded)]
        );
    }
}
