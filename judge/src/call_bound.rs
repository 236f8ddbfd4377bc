//! T2 within a bound, for a run seen from outside: every `lock` or `try_lock` call answered
//! (acquired, gave up or failed) within the run's bound.
//!
//! A shipped library's `lock()` that never returns, while the runner waits for it, is the
//! liveness failure a user meets as a hung service. From outside it cannot be told from the
//! client program hanging around the call (the program is a few lines around the library), so
//! the verdict names both. The runner waits at most the bound (`--max-wait-ms`) for any answer;
//! when a `lock` or `try_lock` gets none, it records an `unanswered` event and stops the
//! client. The bound is in the header (`call_bound_ms`); a record without it (written by a
//! runner that judged no bound, or before this check) gets no T2 line.

use std::time::Duration;

use crate::event::{Event, What};
use crate::text::count;
use crate::{ClaimId, ClaimVerdict};

/// The calls answered and the first that was not.
#[derive(Clone, Debug, Default)]
pub struct CallBound {
    answered: u64,
    /// The longest answered call, from its `invoke`.
    longest: Duration,
    /// The first call left unanswered: client, call, how long it was waited for.
    first_unanswered: Option<(String, String, u64)>,
    unanswered: u64,
}

impl CallBound {
    /// An answer to a call `node` invoked at `invoked`, seen at `at`.
    pub fn answered(&mut self, invoked: Duration, at: Duration) {
        self.answered += 1;
        self.longest = self.longest.max(at.saturating_sub(invoked));
    }

    /// Take in the next event.
    pub fn see(&mut self, event: &Event) {
        if let What::Unanswered {
            client,
            call,
            waited_ms,
        } = &event.what
        {
            self.unanswered += 1;
            self.first_unanswered.get_or_insert_with(|| {
                (
                    client.clone(),
                    serde_json::to_value(call)
                        .ok()
                        .and_then(|value| value.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    *waited_ms,
                )
            });
        }
    }

    /// T2's verdict and text under `bound_ms`; none without a bound.
    pub fn check(&self, bound_ms: Option<u64>) -> Option<(ClaimId, ClaimVerdict, String)> {
        let bound_ms = bound_ms?;
        Some(match &self.first_unanswered {
            Some((client, call, waited_ms)) => (
                ClaimId::T2,
                ClaimVerdict::Violated,
                format!(
                    "violated: {client}'s {call} had no answer in {waited_ms} ms (the bound: {bound_ms} ms): the library's call did not return, or the program around it hung; {} unanswered, {} answered",
                    count(self.unanswered, "call"),
                    count(self.answered, "call")
                ),
            ),
            None if self.answered == 0 => (
                ClaimId::T2,
                ClaimVerdict::NotExercised,
                "no occasion: no call was made".to_owned(),
            ),
            None => (
                ClaimId::T2,
                ClaimVerdict::Holds,
                format!(
                    "kept: {} answered within {bound_ms} ms, the longest in {:.1} ms",
                    count(self.answered, "lock call"),
                    self.longest.as_secs_f64() * 1000.0
                ),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Call;

    #[test]
    fn t2_is_kept_when_every_call_answered_and_violated_by_one_unanswered() {
        let mut bound = CallBound::default();
        bound.answered(Duration::from_millis(10), Duration::from_millis(40));
        let (_, verdict, text) = bound.check(Some(1000)).expect("a bound");
        assert_eq!(verdict, ClaimVerdict::Holds);
        assert!(
            text.contains("1 lock call answered within 1000 ms, the longest in 30.0 ms"),
            "{text}"
        );
        bound.see(&Event {
            at_ns: 2_000_000_000,
            node: "c1".into(),
            clock_us: None,
            what: What::Unanswered {
                client: "c1".into(),
                call: Call::Lock,
                waited_ms: 1000,
            },
        });
        let (_, verdict, text) = bound.check(Some(1000)).expect("a bound");
        assert_eq!(verdict, ClaimVerdict::Violated);
        assert!(text.contains("c1's lock had no answer in 1000 ms"), "{text}");
        assert!(bound.check(None).is_none());
    }
}
