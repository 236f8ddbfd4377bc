//! What a service author configures, and its validation into the machines' [`LockConfig`].

use crate::algo::lifecycle::AcquireKind;
use crate::algo::queue_column::{ClientId, InvalidName};
use crate::algo::{Fixes, LockConfig, Mutants, OldBackoff, RetryPolicy};

/// Cassandra's largest TTL (20 years), in seconds.
pub const MAX_TTL_S: u32 = 630_720_000;

/// Which lock algorithm a locker runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Algorithm {
    /// Listings 3–4: main row + shadow row, random backoff.
    Old,
    /// Listings 5–7: the fair queue.
    Queue,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Old => "old",
            Algorithm::Queue => "queue",
        }
    }

    /// The acquisition `lock()` runs.
    pub fn get_lock(self) -> AcquireKind {
        match self {
            Algorithm::Old => AcquireKind::OldGetLock,
            Algorithm::Queue => AcquireKind::QueueGetLock,
        }
    }

    /// The acquisition `try_lock()` runs.
    pub fn try_lock(self) -> AcquireKind {
        match self {
            Algorithm::Old => AcquireKind::OldTryLock,
            Algorithm::Queue => AcquireKind::QueueTryGetLock,
        }
    }
}

/// Where the queue column's time (Listing 5) and fencing-token times come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TimeSource {
    /// The client's own clock.
    Local,
    /// The GlobalTime cell of the time service (section 5.4); replicas must be running.
    Global,
}

/// Settings of a [`crate::RemoteLocker`]. Build with [`Settings::new`] and adjust fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Settings {
    /// This process's name, unique among all users of the locks: thread ids are
    /// `client_id:sequence`. ASCII letters, digits, `.`, `_`, `-`.
    pub client_id: String,
    pub algorithm: Algorithm,
    /// TTL of every lock cell, whole seconds (Cassandra's unit).
    pub ttl_s: u32,
    /// How often a holder rewrites its cells; at most half the TTL.
    pub renew_every_ms: u64,
    /// How often a waiter reads the queue head.
    pub poll_ms: u64,
    /// The queue lock's waiter next in line reads the head this often instead of `poll_ms`
    /// (`None`: every waiter at `poll_ms`, as the thesis's listing). The faster handoff:
    /// the next holder learns of a release within this, the others keep their pace.
    pub next_poll_ms: Option<u64>,
    /// With `next_poll_ms`: every waiter learns its rank in the queue and sleeps until about
    /// when the queue's pace says it will be next in line (never longer than it has watched
    /// the queue, at most ten `poll_ms`), instead of `poll_ms`; the one next in line sleeps
    /// about half the time left before the holder's expected release, down to
    /// `next_poll_ms`. Fewer reads than polling at one interval; the cost: a lock whose
    /// waiters ahead vanish may stay free up to ten polls (C-release's bound says so).
    pub paced_poll: bool,
    /// For the long run: an acquisition takes the lowest thread id none of this
    /// locker's acquisitions in flight uses (`client_id:slot`) instead of a new one
    /// (`client_id:sequence`). The main and shadow rows are named by thread id, so a lock
    /// used for ever by the same lockers keeps one cell per locker and slot there, rewritten
    /// in place, instead of gathering a tombstone per acquisition that every read walks past.
    /// On by default (`false` gives every acquisition a new id, as the
    /// thesis's listings do). The queue row still gathers one per acquisition (its column is the
    /// enqueue time); `queue_read_from_last_hold` keeps the queue lock's reads off them.
    pub reuse_thread_ids: bool,
    /// For the long run: the queue lock's GetLock reads the queue from the queue column
    /// with which this locker last held the same lock, instead of from the row's start, so
    /// that a read does not walk past the tombstone of every acquisition ever made (the queue
    /// row's columns are enqueue times, new for every acquisition). After finding another
    /// contender in the main row it reads from the row's start again. On by default
    /// (`false` reads from the row's start, as the listing does). The locker remembers the [`crate::driver::MAX_QUEUE_STARTS`] locks it held most recently
    /// (`QueueStarts` in `algo::queue_column`).
    pub queue_read_from_last_hold: bool,
    pub time_source: TimeSource,
    /// Give up acquiring after this long (`None`: wait for ever).
    pub max_wait_ms: Option<u64>,
    pub retry: RetryPolicy,
    pub old_backoff: OldBackoff,
    /// C-try: how often `try_lock` goes back to the queue head after finding another cell
    /// beside its own in the main row, before it answers "no" (at least 1; see
    /// docs/contract.md).
    pub try_turns: u8,
    /// Deliberately broken variants for the harness; leave off.
    pub mutants: Mutants,
    /// Our fixes to the thesis's listings (docs/contract.md); all on by default.
    /// `Fixes::THESIS` runs the listings as written.
    pub fixes: Fixes,
    /// Seed of the backoff draws; `None` derives one from the client id.
    pub seed: Option<u64>,
}

impl Settings {
    /// Defaults: the queue algorithm, TTL 30 s renewed every 15 s (the thesis's N/2), polling
    /// every 100 ms, the local clock as time source, no deadline.
    pub fn new(client_id: impl Into<String>) -> Self {
        let defaults = LockConfig::default();
        Settings {
            client_id: client_id.into(),
            algorithm: Algorithm::Queue,
            ttl_s: defaults.ttl_s.unwrap_or(30),
            renew_every_ms: defaults.renew_every_ms,
            poll_ms: defaults.poll_ms,
            next_poll_ms: defaults.next_poll_ms,
            paced_poll: defaults.paced_poll,
            reuse_thread_ids: true,
            queue_read_from_last_hold: true,
            time_source: TimeSource::Local,
            max_wait_ms: None,
            retry: defaults.retry,
            old_backoff: defaults.old_backoff,
            try_turns: defaults.try_turns,
            mutants: Mutants::default(),
            fixes: Fixes::default(),
            seed: None,
        }
    }

    /// Check every field; on success, the client id and the machines' config.
    pub fn validate(&self) -> Result<(ClientId, LockConfig), SettingsError> {
        let client = ClientId::new(&self.client_id)?;
        if self.ttl_s < 2 {
            return Err(SettingsError::TtlTooShort { ttl_s: self.ttl_s });
        }
        if self.ttl_s > MAX_TTL_S {
            return Err(SettingsError::TtlTooLong { ttl_s: self.ttl_s });
        }
        for (name, value) in [
            ("renew_every_ms", self.renew_every_ms),
            ("poll_ms", self.poll_ms),
            ("retry.backoff_ms", self.retry.backoff_ms),
        ] {
            if value == 0 {
                return Err(SettingsError::ZeroInterval { name });
            }
        }
        if self.max_wait_ms == Some(0) {
            return Err(SettingsError::ZeroInterval { name: "max_wait_ms" });
        }
        if self.next_poll_ms == Some(0) {
            return Err(SettingsError::ZeroInterval { name: "next_poll_ms" });
        }
        if self.paced_poll && self.next_poll_ms.is_none() {
            return Err(SettingsError::PacedPollWithoutNextPoll);
        }
        let ttl_ms = u64::from(self.ttl_s) * 1000;
        if ttl_ms < self.renew_every_ms.saturating_mul(2) {
            return Err(SettingsError::TtlBelowTwoRenewals {
                ttl_ms,
                renew_every_ms: self.renew_every_ms,
            });
        }
        if self.try_turns == 0 {
            return Err(SettingsError::ZeroInterval { name: "try_turns" });
        }
        if self.old_backoff.max_attempt == 0 {
            return Err(SettingsError::ZeroInterval {
                name: "old_backoff.max_attempt",
            });
        }
        let config = LockConfig {
            ttl_s: Some(self.ttl_s),
            renew_every_ms: self.renew_every_ms,
            poll_ms: self.poll_ms,
            next_poll_ms: self.next_poll_ms,
            paced_poll: self.paced_poll,
            old_backoff: self.old_backoff,
            retry: self.retry,
            max_wait_ms: self.max_wait_ms,
            try_turns: self.try_turns,
            mutants: self.mutants,
            fixes: self.fixes,
        };
        Ok((client, config))
    }

    /// The backoff seed: the configured one, or one derived from the client id (FNV-1a), so
    /// that two clients never draw the same backoff sequence by default.
    pub fn backoff_seed(&self) -> u64 {
        self.seed.unwrap_or_else(|| {
            self.client_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            })
        })
    }
}

/// Why settings were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Name(#[from] InvalidName),
    #[error("ttl_s is {ttl_s}: Cassandra counts expiry in whole seconds, so a cell with TTL 1 may die microseconds after it is written; use at least 2 s (the thesis used ~15 min)")]
    TtlTooShort { ttl_s: u32 },
    #[error("ttl_s is {ttl_s}; Cassandra accepts at most {MAX_TTL_S} s (20 years)")]
    TtlTooLong { ttl_s: u32 },
    #[error("{name} is 0; it must be at least 1")]
    ZeroInterval { name: &'static str },
    #[error("TTL of {ttl_ms} ms is less than twice the renewal interval ({renew_every_ms} ms): one late renewal would lose the lock; renew at most every TTL/2")]
    TtlBelowTwoRenewals { ttl_ms: u64, renew_every_ms: u64 },
    #[error("paced_poll is on without next_poll_ms: the paced waiter next in line polls at next_poll_ms; set it (5 ms was measured) or turn paced_poll off")]
    PacedPollWithoutNextPoll,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_follow_the_thesis_renewal_ratio() {
        let (_, config) = Settings::new("web-1").validate().unwrap();
        assert_eq!(config.ttl_s, Some(30));
        assert_eq!(config.renew_every_ms * 2, 30_000);
    }

    #[test]
    fn bad_settings_are_refused_with_a_reason() {
        let check = |edit: fn(&mut Settings)| {
            let mut settings = Settings::new("web-1");
            edit(&mut settings);
            settings.validate().unwrap_err()
        };
        assert_eq!(check(|s| s.ttl_s = 0), SettingsError::TtlTooShort { ttl_s: 0 });
        assert_eq!(check(|s| s.ttl_s = 1), SettingsError::TtlTooShort { ttl_s: 1 });
        assert_eq!(
            check(|s| s.ttl_s = u32::MAX),
            SettingsError::TtlTooLong { ttl_s: u32::MAX }
        );
        assert_eq!(
            check(|s| s.poll_ms = 0),
            SettingsError::ZeroInterval { name: "poll_ms" }
        );
        assert_eq!(
            check(|s| s.renew_every_ms = 0),
            SettingsError::ZeroInterval { name: "renew_every_ms" }
        );
        assert_eq!(
            check(|s| s.max_wait_ms = Some(0)),
            SettingsError::ZeroInterval { name: "max_wait_ms" }
        );
        assert_eq!(
            check(|s| s.renew_every_ms = 15_001),
            SettingsError::TtlBelowTwoRenewals {
                ttl_ms: 30_000,
                renew_every_ms: 15_001
            }
        );
        assert!(matches!(
            check(|s| s.client_id = "a:b".into()),
            SettingsError::Name(InvalidName::ClientIdBadChar { .. })
        ));
        assert!(check(|s| s.renew_every_ms = 15_001).to_string().contains("TTL/2"));
        assert_eq!(check(|s| s.paced_poll = true), SettingsError::PacedPollWithoutNextPoll);
        let mut paced = Settings::new("web-1");
        paced.next_poll_ms = Some(5);
        paced.paced_poll = true;
        assert!(paced.validate().unwrap().1.paced_poll);
    }

    #[test]
    fn default_seeds_differ_between_clients() {
        assert_ne!(Settings::new("a").backoff_seed(), Settings::new("b").backoff_seed());
        let mut seeded = Settings::new("a");
        seeded.seed = Some(7);
        assert_eq!(seeded.backoff_seed(), 7);
    }
}
