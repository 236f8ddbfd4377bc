//! What a lock model run is parametrized by, and the fault presets shared by the lock models.

use cassalock::algo::queue_column::ClientId;
use cassalock::algo::LockConfig;

use crate::{Fault, Mutant};

/// The lock id every model thread contends for.
pub const LOCK: &str = "L";

/// Which lock algorithm the threads run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockAlgorithm {
    /// Listing 6 (GetLock).
    GetLock,
    /// Listing 7 (TryGetLock).
    TryGetLock,
    /// Listings 3–4 (the old shadow-row GetLock).
    Old,
}

/// How clocks behave.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Clocks {
    /// Strictly increasing time-source readings; no TTL.
    Perfect,
    /// A bounded global tick counter with per-thread offsets.
    Ticks {
        /// Time stops here: results are bounded by it.
        max_tick: u8,
        /// Thread i's clock reads `now + client_offset_ticks[i]` ticks.
        client_offset_ticks: Vec<u8>,
        /// Thread i's coordinator's clock reads `now + coordinator_offset_ticks[i]` ticks.
        coordinator_offset_ticks: Vec<u8>,
    },
}

/// Everything a lock model run is parametrized by.
#[derive(Clone, Debug)]
pub struct LockModelConfig {
    pub algorithm: LockAlgorithm,
    pub threads: u8,
    /// Acquisitions per thread (TryGetLock: attempts per thread).
    pub acquisitions: u8,
    /// The machines' config (TTL, mutants). One tick is one second of it.
    pub lock: LockConfig,
    pub clocks: Clocks,
    /// Reading the time and writing the queue cell are separate steps (else one step).
    pub delayed_enqueue: bool,
    /// This thread may be paused (once) while it holds the lock.
    pub pause: Option<u8>,
    /// This thread may crash (once) while it holds the lock.
    pub crash: Option<u8>,
    /// Holders write to the resource actor with their fencing token.
    pub resource: bool,
    /// The resource refuses tokens lower than the highest it has accepted.
    pub fencing: bool,
    /// Check F (queue order, overtakes). Off where clocks are coarse ticks for another purpose
    /// (TTL, pause, crash): same-tick ties are then ordered by thread id, which is not what
    /// those configurations test.
    pub fairness: bool,
    /// F: how often a waiter may be overtaken.
    pub overtake_bound: u8,
    /// Store requests the fault injector may fail in one run (before or after they apply).
    pub store_failures: u8,
    /// Partial synchrony: a TryGetLock waiting a poll interval in its step-10 loop does not
    /// wake while another thread is in the middle of a main-row contest (it has written its
    /// main cell and will read the row and delete the cell unless alone): a poll interval
    /// outlasts a contender's two or three requests. Off: the purely asynchronous model.
    pub poll_outlasts_contention: bool,
    /// Reduction 5 off: time passes in its own steps even where only the time source's
    /// readings can see it (see [`LockModelConfig::time_seen_only_by_readings`]). For tests
    /// that compare the reduced model with the unreduced one.
    pub eager_ticks: bool,
    /// For the long run (`Settings::reuse_thread_ids`): a thread's acquisitions all run
    /// under one thread id, as a locker used one acquisition at a time does, so that an
    /// acquisition's main (and shadow) cell has the name of the ones before it, and whatever
    /// they left behind.
    pub reuse_thread_ids: bool,
    /// For the long run (`Settings::queue_read_from_last_hold`): a thread's GetLock
    /// reads the queue from the queue column of its last hold instead of the row's start.
    pub queue_read_from_last_hold: bool,
    /// Reduction 6 off: a main task's sleeps and backoff draws are steps of their own even
    /// where nothing else can see them (see [`LockModelConfig::local_steps_merge`]). For tests
    /// that compare the reduced model with the unreduced one.
    pub separate_local_steps: bool,
    /// Reduction 7 off: times stay where they were read, and the clock bound `max_tick` stops
    /// time (see [`LockModelConfig::relative_time`]). For tests that compare the reduced model
    /// with the unreduced one.
    pub absolute_time: bool,
    /// Reduction 8 off: every thread keeps the tick its last hold began, read or not (see
    /// `LockModel::forget_unread_hold_ticks`). For tests that compare the reduced model with
    /// the unreduced one.
    pub keep_hold_ticks: bool,
}

impl LockModelConfig {
    pub fn new(algorithm: LockAlgorithm, threads: u8, acquisitions: u8) -> Self {
        let mut lock = LockConfig::untimed();
        // Backoff durations are abstracted (draws answer 0), so the attempt counter that
        // scales them is irrelevant: keep it at 1 instead of letting it multiply states.
        lock.old_backoff.max_attempt = 1;
        LockModelConfig {
            algorithm,
            threads,
            acquisitions,
            lock,
            clocks: Clocks::Perfect,
            delayed_enqueue: false,
            pause: None,
            crash: None,
            resource: false,
            fencing: false,
            fairness: algorithm != LockAlgorithm::TryGetLock,
            overtake_bound: 0,
            store_failures: 0,
            poll_outlasts_contention: true,
            eager_ticks: false,
            reuse_thread_ids: false,
            queue_read_from_last_hold: false,
            separate_local_steps: false,
            absolute_time: false,
            keep_hold_ticks: false,
        }
    }

    /// Reduction 6: are a main task's sleeps and draws invisible here, so that each is merged
    /// into the step that asked for it? Where machines are resumed with a constant time
    /// (perfect clocks, or reduction 5), a sleep only yields and a draw answers 0: neither reads
    /// the clock or the store, and no other actor is enabled or disabled by it. (Elsewhere a
    /// woken machine sees its clock. Merging only the sleeps whose wake-up is the same at every
    /// later clock and leaves the clock's urgency as it was was tried on 2026-11-28: 0.5-6%
    /// fewer states in the leases, pause, crash and TTL-skew worlds; not kept.)
    pub fn local_steps_merge(&self) -> bool {
        !self.separate_local_steps && (matches!(self.clocks, Clocks::Perfect) || self.time_seen_only_by_readings())
    }

    /// Reduction 7: are times kept relative to the clock, and time unbounded? Where reduction 5
    /// applies (nothing but the time source reads a clock), a reading is seen only through the
    /// queue columns made from it, which are compared with one another and with later
    /// readings, and a later reading is at least `now + min offset`. So after every step the
    /// model renames every time it holds: those below `now + min offset` (below anything read
    /// from now on) to 1, 2, 3, ... in order, and the clock and the times from there up
    /// shifted alike to sit just above them. States that differ only by where they sit in time
    /// become one, and time needs no bound: the clock bound is dropped, and every verdict is
    /// for time without end (a reading may come any number of ticks after the last).
    pub fn relative_time(&self) -> bool {
        self.time_seen_only_by_readings() && !self.absolute_time
    }

    /// Reduction 5 applies: clocks tick, but nothing reads the time except a queue lock's time
    /// source (L5.1). No cell carries a TTL (so no expiry, renewal, queue refresh or lease
    /// check reads a clock), no acquisition has a deadline, and no thread is paused or crashed
    /// (a pause's length is counted in ticks). The skew fault is such a world.
    pub fn time_seen_only_by_readings(&self) -> bool {
        matches!(self.clocks, Clocks::Ticks { .. })
            && !self.eager_ticks
            && self.lock.ttl_s.is_none()
            && self.lock.max_wait_ms.is_none()
            && self.pause.is_none()
            && self.crash.is_none()
    }

    /// Ticks mode with TTL `ttl_ticks`, renewals every `ttl_ticks / 2` (at least 1).
    pub fn with_ticks(mut self, max_tick: u8, ttl_ticks: u32) -> Self {
        let n = usize::from(self.threads);
        self.clocks = Clocks::Ticks {
            max_tick,
            client_offset_ticks: vec![0; n],
            coordinator_offset_ticks: vec![0; n],
        };
        self.lock.ttl_s = Some(ttl_ticks);
        self.lock.renew_every_ms = u64::from((ttl_ticks / 2).max(1)) * 1000;
        self
    }

    /// Ticks mode without TTL (for skew of the queue's time source only).
    pub fn with_untimed_ticks(mut self, max_tick: u8) -> Self {
        self = self.with_ticks(max_tick, 1);
        self.lock.ttl_s = None;
        self
    }

    /// Reduction 5: the longest jump of time before a reading that the model tries.
    ///
    /// Every time a state holds (a queue column, its token) is a reading `now' + o` taken at an
    /// earlier `now' <= now`, with `o` a client offset, so it is at most `now + max o`. A jump
    /// of `k > max o - min o` ticks puts every later reading above every time held: all jumps
    /// that long leave the same order among all times, held and to come, and differ only by a
    /// shift. Nothing but that order is seen (queue columns compare as numbers; no TTL, and the
    /// machines are resumed with a constant clock), so a run that jumps further is matched
    /// step for step by one that jumps `max o - min o + 1` and reads every later time that
    /// much lower, which the tick bound allows as well.
    pub fn useful_tick_jumps(&self) -> u8 {
        match &self.clocks {
            Clocks::Perfect => 0,
            Clocks::Ticks {
                client_offset_ticks, ..
            } => {
                let highest = client_offset_ticks.iter().copied().max().unwrap_or(0);
                let lowest = client_offset_ticks.iter().copied().min().unwrap_or(0);
                highest - lowest + 1
            }
        }
    }

    /// The clock bound: time stops at this tick (`None`: perfect clocks, or time kept relative
    /// by reduction 7, where it never stops).
    pub fn max_ticks(&self) -> Option<u8> {
        if self.relative_time() {
            return None;
        }
        match &self.clocks {
            Clocks::Perfect => None,
            Clocks::Ticks { max_tick, .. } => Some(*max_tick),
        }
    }

    pub(super) fn thread_id(&self, thread: usize, acquisition: u8) -> cassalock::ThreadId {
        let sequence = if self.reuse_thread_ids {
            0
        } else {
            u64::from(acquisition)
        };
        ClientId::new(&format!("t{thread}"))
            .expect("model thread names are valid")
            .thread(sequence)
    }
}

/// The fault presets shared by the three lock models.
pub fn apply_fault(
    mut cfg: LockModelConfig,
    fault: Fault,
    mutant: Option<Mutant>,
    fencing: bool,
    leases: bool,
) -> LockModelConfig {
    const TTL_TICKS: u32 = 2;
    // Clocks start at 1: TTL-driven faults play out within a few ticks.
    let ticks_max = 3 + cfg.acquisitions;
    match fault {
        Fault::None | Fault::DelayedEnqueue => {
            cfg.delayed_enqueue = fault == Fault::DelayedEnqueue;
            if mutant == Some(Mutant::K3) || leases {
                cfg = cfg.with_ticks(ticks_max, TTL_TICKS);
                cfg.fairness = false;
            }
        }
        Fault::Skew => {
            let max = 2 + cfg.acquisitions * cfg.threads;
            cfg = cfg.with_untimed_ticks(max);
            if let Clocks::Ticks {
                client_offset_ticks, ..
            } = &mut cfg.clocks
            {
                // Thread 0's clock is one tick behind everybody else's.
                for (i, offset) in client_offset_ticks.iter_mut().enumerate() {
                    *offset = u8::from(i != 0);
                }
            }
        }
        Fault::TtlSkew => {
            cfg = cfg.with_ticks(ticks_max, TTL_TICKS);
            cfg.fairness = false;
            if let Clocks::Ticks {
                coordinator_offset_ticks,
                ..
            } = &mut cfg.clocks
            {
                // Thread 1's requests are coordinated by a node a whole TTL ahead.
                let victim = 1 % coordinator_offset_ticks.len();
                coordinator_offset_ticks[victim] = TTL_TICKS as u8;
            }
        }
        Fault::Pause => {
            cfg = cfg.with_ticks(ticks_max, TTL_TICKS);
            cfg.fairness = false;
            cfg.pause = Some(0);
            cfg.resource = true;
        }
        Fault::Crash => {
            cfg = cfg.with_ticks(ticks_max, TTL_TICKS);
            cfg.fairness = false;
            cfg.crash = Some(0);
        }
        Fault::StoreFailure => {
            // Untimed by default (cells never expire: a leftover blocks for ever, and the
            // checks are exhaustive); with leases, cells carry a TTL and what a failure leaves
            // expires, and a failed renewal can lose the lease (as a pause does).
            if leases {
                cfg = cfg.with_ticks(ticks_max, TTL_TICKS);
                cfg.fairness = false;
            }
            cfg.store_failures = 1;
            // The failure reaches the machine at once: it stands for a request whose every
            // retry failed (retries resend the same command, so they add states, not paths).
            cfg.lock.retry.max_retries = 0;
        }
        Fault::Restart | Fault::Failover | Fault::ServerClockJump | Fault::LostNotification => {
            unreachable!("crate::lock_config refuses a Redis server's faults for the Cassandra lock models")
        }
    }
    match mutant {
        Some(Mutant::M1) => cfg.lock.mutants.m1_skip_main_check = true,
        Some(Mutant::K3) => cfg.lock.mutants.k3_release_without_waiting = true,
        Some(Mutant::M4) => cfg.lock.mutants.m4_trust_a_late_rewrite = true,
        Some(
            Mutant::NodeRedlockValidity
            | Mutant::GoRedsyncExtend
            | Mutant::Redisson775
            | Mutant::RedissonFairBarging
            | Mutant::Curator678
            | Mutant::Etcd11456,
        ) => {
            unreachable!("crate::lock_config refuses the other families' client bugs for the Cassandra lock models")
        }
        None => {}
    }
    if fencing {
        cfg.resource = true;
        cfg.fencing = true;
    }
    cfg
}
