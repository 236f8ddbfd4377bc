//! The contract a user relies on, as numbers: the bounds of `docs/contract.md`, computed from
//! the configuration the machines run with.
//!
//! The thesis states theorems about the algorithm (one holder at a time, every waiter served).
//! A user of the library also relies on what each call promises: how long `try_lock` can take,
//! what a failed call leaves behind, how soon a release lets the next waiter in, how soon a
//! holder learns it lost its lease, and what the fencing token guarantees. Each promise has an
//! ID (`C-try`, `C-free`, `C-release`, `C-lost`, `C-token`, `C-wait`) and, where it is a bound, the bound
//! is computed here, once, so that the model, the simulator and the reports judge the same
//! number. A bound takes the store's worst request time as a parameter (`request_ms`): the
//! machines know how many requests they make, not how long the store takes to answer.

use super::lifecycle::AcquireKind;
use super::LockConfig;

/// Store requests on the longest path through one TryLock or TryGetLock call (first
/// attempts; each may be retried):
/// - Listing 3 (the old TryLock): read main, write shadow, read shadow, read main, write main,
///   delete shadow: 6;
/// - Listing 7 (TryGetLock): read main, enqueue, read head, write main, read main, delete main
///   (6), then each turn of the step-10 loop ("go to 4": read head, write main, read main,
///   delete main: 4), then delete own queue cell (1): 7 + 4 x [`LockConfig::try_turns`].
///
/// The listing itself bounds the loop by nothing: each turn waits for another thread's main
/// cell to go away, possibly a holder's, which is what C-try forbids. The library's fix
/// ([`super::Fixes::try_bounded_loop`]) stops after `try_turns` turns; the listing run as
/// written is judged against the same number.
pub fn try_call_requests(kind: AcquireKind, config: &LockConfig) -> Option<u64> {
    match kind {
        AcquireKind::OldTryLock => Some(6),
        AcquireKind::QueueTryGetLock => Some(7 + 4 * u64::from(config.try_turns)),
        AcquireKind::QueueGetLock | AcquireKind::OldGetLock => None,
    }
}

/// The deletes [`super::clean_up::CleanUp`] may add to a failed call: one per cell the call
/// may have written (the main cell and the queue or shadow cell), when the fix is on.
pub fn clean_up_requests(config: &LockConfig) -> u64 {
    if config.fixes.clean_up_on_failure {
        2
    } else {
        0
    }
}

/// C-try: the most store requests one try call may send, its clean-up after a failure and
/// every retry included.
pub fn try_call_max_requests(kind: AcquireKind, config: &LockConfig) -> Option<u64> {
    try_call_requests(kind, config)
        .map(|requests| (requests + clean_up_requests(config)) * (1 + u64::from(config.retry.max_retries)))
}

/// The longest one request can take with its retries, if each attempt takes at most
/// `request_ms` (the client's request timeout).
pub fn request_with_retries_ms(config: &LockConfig, request_ms: u64) -> u64 {
    let retries = u64::from(config.retry.max_retries);
    (1 + retries)
        .saturating_mul(request_ms)
        .saturating_add(retries.saturating_mul(config.retry.backoff_ms))
}

/// C-release: after a release returned Ok, the longest a waiting client needs to acquire while
/// the store answers every request within `request_ms` (no fault): the waiter's sleep before it
/// looks again (a poll for the queue algorithm, the old algorithm's largest owner backoff) and
/// the requests of one successful attempt. A paced GetLock waiter may sleep up to ten polls
/// (`queue_get_lock::longest_poll_ms`): its hand-over bound is that much longer.
pub fn handover_ms(kind: AcquireKind, config: &LockConfig, request_ms: u64) -> u64 {
    let (wait_ms, listing_requests) = match kind {
        // Read head, write main, read main.
        // The next-in-line and paced polls can sleep longer than `poll_ms`.
        AcquireKind::QueueGetLock => (super::queue_get_lock::longest_poll_ms(config), 3),
        AcquireKind::QueueTryGetLock => (config.poll_ms, 3),
        // Read main, write shadow, read shadow, read main, write main, delete shadow.
        AcquireKind::OldGetLock | AcquireKind::OldTryLock => (config.old_backoff.owner_max_ms, 6),
    };
    let requests = listing_requests + token_requests(config);
    wait_ms.saturating_add(requests * request_ms)
}

/// C-wait: the longest `lock()` with `max_wait_ms` may take to return when it gives up, while
/// the store answers every request within `request_ms` (`None`: no deadline, it waits for
/// ever). The deadline is checked at the top of every attempt, and a backoff or a poll ends at
/// it ([`super::sleep_until_deadline_ms`]; a machine past it sleeps 1 ms); so past the
/// deadline a call finishes at most the attempt under way (the old algorithm's six requests
/// of Listing 3; the queue's refresh of its cell, read head, write main, read main, delete
/// main: five), sleeps at most 1 ms, then leaves (the queue: delete its queue cell) and cleans
/// up ([`clean_up_requests`]). Before the fix of 2026-11-28 a backoff ran to its end: the old
/// algorithm, told to wait 300 ms, returned after 1.3 s.
pub fn gave_up_within_ms(kind: AcquireKind, config: &LockConfig, request_ms: u64) -> Option<u64> {
    let max_wait_ms = config.max_wait_ms?;
    let (attempt, leave) = match kind {
        AcquireKind::OldGetLock | AcquireKind::OldTryLock => (6, 0),
        AcquireKind::QueueGetLock | AcquireKind::QueueTryGetLock => (5, 1),
    };
    let requests = attempt + leave + clean_up_requests(config);
    Some(
        max_wait_ms
            .saturating_add(1)
            .saturating_add(requests.saturating_mul(request_ms)),
    )
}

/// The requests the counter token ([`super::fence`]) adds to a successful acquisition: a read
/// and a write of the token row.
pub fn token_requests(config: &LockConfig) -> u64 {
    if config.fixes.counter_token {
        2
    } else {
        0
    }
}

/// C-lost: the longest a holder's guard may go on answering `is_lost() == false` after another
/// client acquired, while the holder's process runs and reaches the store within `request_ms`:
/// renewal checks the main row every renewal interval and finds our cell gone.
pub fn lost_learned_ms(config: &LockConfig, request_ms: u64) -> Option<u64> {
    config.ttl_s.map(|_| {
        config
            .renew_every_ms
            .saturating_add(request_with_retries_ms(config, request_ms))
    })
}

/// C-free: how long cells written by a call that failed or gave up may still block the next
/// caller once the call has returned, if the call's own clean-up deletes succeeded: not at all,
/// because the call deletes what it wrote before it returns. (If the clean-up fails too, the
/// error says so, and the cells expire with the TTL: the client cannot reach the store.)
///
/// The thesis's listings do not clean up: their cells stay until the TTL (30 s by default)
/// and block every other caller meanwhile.
pub const LEFTOVER_AFTER_FAILED_CALL_MS: u64 = 0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_follow_the_config() {
        let config = LockConfig::default();
        // 3 retries 100 ms apart, 1 s per attempt: 4 s + 300 ms.
        assert_eq!(request_with_retries_ms(&config, 1000), 4300);
        // (7 + 4 x 2 turns + 2 clean-up deletes) x 4 attempts; (6 + 2) x 4.
        assert_eq!(try_call_max_requests(AcquireKind::QueueTryGetLock, &config), Some(68));
        assert_eq!(try_call_max_requests(AcquireKind::OldTryLock, &config), Some(32));
        let thesis = LockConfig {
            fixes: crate::algo::Fixes::THESIS,
            ..LockConfig::default()
        };
        assert_eq!(try_call_max_requests(AcquireKind::QueueTryGetLock, &thesis), Some(60));
        assert_eq!(try_call_max_requests(AcquireKind::QueueGetLock, &config), None);
        // A poll, then read head, write main, read main, read and write the token: 5 x 50.
        assert_eq!(handover_ms(AcquireKind::QueueGetLock, &config, 50), 350);
        assert_eq!(handover_ms(AcquireKind::OldGetLock, &config, 50), 1400);
        assert_eq!(handover_ms(AcquireKind::QueueGetLock, &thesis, 50), 250);
        // The next-in-line and paced variants: the next-in-line poll never lengthens the
        // bound; a paced waiter may sleep ten polls.
        let next = LockConfig {
            next_poll_ms: Some(5),
            ..LockConfig::default()
        };
        assert_eq!(handover_ms(AcquireKind::QueueGetLock, &next, 50), 350);
        let paced = LockConfig {
            paced_poll: true,
            ..next
        };
        assert_eq!(handover_ms(AcquireKind::QueueGetLock, &paced, 50), 1250);
        assert_eq!(handover_ms(AcquireKind::QueueTryGetLock, &paced, 50), 350);
        assert_eq!(lost_learned_ms(&config, 1000), Some(19_300));
        assert_eq!(lost_learned_ms(&LockConfig::untimed(), 1000), None);
    }
}
