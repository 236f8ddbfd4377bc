//! One acquisition's whole life, once: acquire, hold (renewing if the cells expire), release.
//!
//! A [`Lifecycle`] owns the sub-machines of one acquisition, as quinn-proto's `Connection` owns
//! its streams and timers: the acquisition (Listings 3–4, 6 or 7), the renewal task and the
//! release (section 5.3). It runs them as two *lanes* that a driver steps concurrently, because
//! the thesis's renewal is a task of its own that may race the release (K3):
//!
//! - the **main lane**: the acquisition, then — once the user calls release — the release;
//! - the **renewal lane**: armed by the lifecycle itself when the acquisition succeeded and the
//!   cells carry a TTL; it rewrites the cells until release stops it or it finds the lease lost.
//!
//! Every decision about the lock's life is made here, not in a driver:
//! - whether renewal runs at all (only after a successful acquisition, only with a TTL);
//! - that a renewal sleep ends early once release asked renewal to stop (the driver only wakes
//!   the lane; the lifecycle turns the wake-up into [`Input::StopRequested`]);
//! - what the guard knows about its lease: renewal's report of a lost lease, or the holder's own
//!   clock passing the lease's validity (the last main-cell write + TTL − 1 s) without a renewal.
//!
//! The async driver runs each lane as a task (the renewal lane with a stop signal that cuts its
//! sleep short); the model checker runs each lane as an actor. Both only carry out the
//! [`Action`]s the lanes ask for.

use super::clean_up::CleanUp;
use super::fence::Fence;
use super::lease::{lease_valid_until_us, LeaseLost, Release, Released, Renewal, RenewalEnd};
use super::old_shadow_lock::{OldGetLock, OldMode};
use super::queue_get_lock::QueueGetLock;
use super::queue_try_get_lock::QueueTryGetLock;
use super::retry::Retrying;
use super::{Acquire, Action, FencingToken, Input, LeaseCells, LockConfig, LockId, Machine, Step, StepTag, ThreadId};

/// Which acquisition a lifecycle starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AcquireKind {
    /// Listing 6: wait in the queue until the lock is held.
    QueueGetLock,
    /// Listing 7: take the lock only if nobody else needs to be waited for.
    QueueTryGetLock,
    /// Listings 3–4: the old GetLock (TryLock with random backoff until it succeeds).
    OldGetLock,
    /// Listing 3 once: the old TryLock used as TryGetLock.
    OldTryLock,
}

impl AcquireKind {
    /// Does the acquisition's first action read the time source? GetLock's does (L5.1, the
    /// queue column's time); TryGetLock reads the main row first (L7.1) and the time only if
    /// it is empty, and the old lock reads the main row. A driver that lets time pass only
    /// before readings (the model checker's reduction 5) asks this before it has started the
    /// machine.
    pub fn starts_by_reading_time(self) -> bool {
        match self {
            AcquireKind::QueueGetLock => true,
            AcquireKind::QueueTryGetLock | AcquireKind::OldGetLock | AcquireKind::OldTryLock => false,
        }
    }
}

/// An acquisition machine, inside the retry wrapper every driver uses.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AcquireMachine {
    Queue(Retrying<CleanUp<Fence<QueueGetLock>>>),
    Try(Retrying<CleanUp<Fence<QueueTryGetLock>>>),
    Old(Retrying<CleanUp<Fence<OldGetLock>>>),
}

impl AcquireMachine {
    pub fn new(kind: AcquireKind, lock: LockId, thread: ThreadId) -> Self {
        Self::reading_the_queue_from(kind, lock, thread, None)
    }

    /// As [`AcquireMachine::new`]; a queue GetLock reads the queue from `queue_start`
    /// ([`QueueGetLock::reading_the_queue_from`]; the other acquisitions ignore it).
    pub fn reading_the_queue_from(
        kind: AcquireKind,
        lock: LockId,
        thread: ThreadId,
        queue_start: Option<String>,
    ) -> Self {
        match kind {
            AcquireKind::QueueGetLock => AcquireMachine::Queue(Retrying::new(CleanUp::new(Fence::new(
                QueueGetLock::new(lock, thread).reading_the_queue_from(queue_start),
            )))),
            AcquireKind::QueueTryGetLock => AcquireMachine::Try(Retrying::new(CleanUp::new(Fence::new(
                QueueTryGetLock::new(lock, thread),
            )))),
            AcquireKind::OldGetLock => AcquireMachine::Old(Retrying::new(CleanUp::new(Fence::new(OldGetLock::new(
                lock,
                thread,
                OldMode::Blocking,
            ))))),
            AcquireKind::OldTryLock => AcquireMachine::Old(Retrying::new(CleanUp::new(Fence::new(OldGetLock::new(
                lock,
                thread,
                OldMode::Once,
            ))))),
        }
    }
}

impl Machine for AcquireMachine {
    type Config = LockConfig;
    type Output = Acquire;
    type Command = crate::store::StoreCommand;
    type Reply = crate::store::StoreReply;

    fn resume(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<Acquire> {
        match self {
            AcquireMachine::Queue(machine) => machine.resume(config, input, now_us),
            AcquireMachine::Try(machine) => machine.resume(config, input, now_us),
            AcquireMachine::Old(machine) => machine.resume(config, input, now_us),
        }
    }

    fn urgent(&self, config: &LockConfig, now_us: u64) -> bool {
        match self {
            AcquireMachine::Queue(machine) => machine.urgent(config, now_us),
            AcquireMachine::Try(machine) => machine.urgent(config, now_us),
            AcquireMachine::Old(machine) => machine.urgent(config, now_us),
        }
    }

    fn contending(&self) -> bool {
        match self {
            AcquireMachine::Queue(machine) => machine.contending(),
            AcquireMachine::Try(machine) => machine.contending(),
            AcquireMachine::Old(machine) => machine.contending(),
        }
    }
}

/// Is this the queue write that completes an enqueue begun by reading the time (L5.1 then
/// L6.1 or L7.3)? A model that treats the enqueue as one atomic step merges the two.
pub fn completes_enqueue(tag: &StepTag) -> bool {
    *tag == super::queue_get_lock::L6_ENQUEUE || *tag == super::queue_try_get_lock::L7_ENQUEUE
}

/// How a main-lane run ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MainEnd {
    /// The acquisition ended: with the lock (the lane now waits for [`Lifecycle::begin_release`])
    /// or without it (the lifecycle's main lane is over).
    Acquire(Acquire),
    /// The release ended; the main lane is over.
    Release(Released),
}

// The model checker clones and hashes lifecycles in every state: a boxed acquisition would add
// an allocation per clone to save bytes in the lanes that hold no machine.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum MainLane {
    Acquiring(AcquireMachine),
    Holding { lease: LeaseCells, token: FencingToken },
    Releasing(Retrying<Release>),
    Ended,
}

/// The renewal lane.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum RenewalLane {
    /// No renewal: not acquired (yet), the cells never expire, or it has ended.
    Idle,
    /// Renewing; `stop_requested` once release asked it to stop.
    Running {
        machine: Retrying<Renewal>,
        stop_requested: bool,
    },
}

/// One acquisition's lifecycle. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lifecycle {
    main: MainLane,
    renewal: RenewalLane,
    /// The lease's validity on the holder's clock, after the renewals so far (`None`: no lease
    /// yet, or cells that never expire).
    valid_until_us: Option<u64>,
    /// Renewal found the lease lost.
    lost: Option<LeaseLost>,
}

const NO_RELEASE_WHILE_ACQUIRING: &str = "release begins only while the lock is held";

impl Lifecycle {
    /// A lifecycle whose main lane starts with `kind`.
    pub fn acquire(kind: AcquireKind, lock: LockId, thread: ThreadId) -> Self {
        Self::acquire_reading_the_queue_from(kind, lock, thread, None)
    }

    /// As [`Lifecycle::acquire`]; a queue GetLock reads the queue from `queue_start` (for
    /// the long run: the queue column of the locker's last hold of this lock, from
    /// [`LeaseCells::queue_column`]).
    pub fn acquire_reading_the_queue_from(
        kind: AcquireKind,
        lock: LockId,
        thread: ThreadId,
        queue_start: Option<String>,
    ) -> Self {
        Lifecycle {
            main: MainLane::Acquiring(AcquireMachine::reading_the_queue_from(kind, lock, thread, queue_start)),
            renewal: RenewalLane::Idle,
            valid_until_us: None,
            lost: None,
        }
    }

    /// Step the main lane with the answer to its last action.
    pub fn resume_main(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<MainEnd> {
        match &mut self.main {
            MainLane::Acquiring(machine) => {
                let step = machine.resume(config, input, now_us);
                let Action::Done(outcome) = step.action else {
                    return relabel(step);
                };
                match &outcome {
                    Acquire::Acquired { lease, token } => {
                        self.valid_until_us = lease_valid_until_us(config, lease);
                        // Section 5.3: a lease whose cells expire is renewed while held.
                        if config.ttl_s.is_some() {
                            self.renewal = RenewalLane::Running {
                                machine: Retrying::new(Renewal::new(lease.clone())),
                                stop_requested: false,
                            };
                        }
                        self.main = MainLane::Holding {
                            lease: lease.clone(),
                            token: token.clone(),
                        };
                    }
                    _ => {
                        debug_assert!(matches!(self.renewal, RenewalLane::Idle), "no renewal without the lock");
                        self.main = MainLane::Ended;
                    }
                }
                Step::done(step.tag, MainEnd::Acquire(outcome))
            }
            MainLane::Releasing(machine) => {
                let step = machine.resume(config, input, now_us);
                match step.action {
                    Action::Done(outcome) => {
                        self.main = MainLane::Ended;
                        Step::done(step.tag, MainEnd::Release(outcome))
                    }
                    _ => relabel(step),
                }
            }
            MainLane::Holding { .. } => panic!("lifecycle: the main lane is idle while the lock is held"),
            MainLane::Ended => panic!("lifecycle: the main lane has ended"),
        }
    }

    /// The user is done with the lock: the main lane runs the release next (start it with
    /// [`Input::Start`]).
    pub fn begin_release(&mut self) {
        let MainLane::Holding { lease, .. } = &self.main else {
            panic!("{NO_RELEASE_WHILE_ACQUIRING}");
        };
        self.main = MainLane::Releasing(Retrying::new(Release::new(lease.clone())));
    }

    /// Step the renewal lane (start it with [`Input::Start`]). A wake-up after release asked
    /// renewal to stop is a stop: the renewal machine ends there.
    pub fn resume_renewal(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<RenewalEnd> {
        debug_assert!(
            !matches!(self.main, MainLane::Acquiring(_)),
            "the renewal lane runs only after a successful acquisition"
        );
        let RenewalLane::Running {
            machine,
            stop_requested,
        } = &mut self.renewal
        else {
            panic!("lifecycle: the renewal lane is not running");
        };
        let input = match input {
            // Section 5.3: release stops the renewal task at its sleep.
            Input::Woke if *stop_requested && !machine.inner().is_rewriting() => Input::StopRequested,
            other => other,
        };
        let step = machine.resume(config, input, now_us);
        if let Some(until) = machine.inner().valid_until_us(config) {
            // No assertion that validity only grows: a clock stepped back (NTP) may shorten it.
            self.valid_until_us = Some(until);
        }
        if let Action::Done(end) = &step.action {
            if let RenewalEnd::Lost(why) = end {
                self.lost = Some(*why);
            }
            self.renewal = RenewalLane::Idle;
        }
        step
    }

    /// Carry out the release's [`Action::StopRenewal`]: from now on the renewal lane stops at
    /// its next sleep. (A driver that waits for the lane then answers
    /// [`Input::RenewalStopped`] once it has ended, or at once if it is asleep: see
    /// [`Lifecycle::stop_sleeping_renewal`].)
    pub fn stop_renewal(&mut self) {
        if let RenewalLane::Running { stop_requested, .. } = &mut self.renewal {
            *stop_requested = true;
        }
    }

    /// Release waits for a renewal lane that is asleep (not between its wake-up and its last
    /// rewrite): end it there. Returns false if the lane is mid-rewrite (wait for it).
    pub fn stop_sleeping_renewal(&mut self) -> bool {
        match &self.renewal {
            RenewalLane::Running { machine, .. } if machine.inner().is_rewriting() => false,
            _ => {
                self.renewal = RenewalLane::Idle;
                true
            }
        }
    }

    /// Has release asked the renewal lane to stop?
    pub fn renewal_stop_requested(&self) -> bool {
        matches!(
            self.renewal,
            RenewalLane::Running {
                stop_requested: true,
                ..
            }
        )
    }

    /// Will the renewal lane's next wake-up be a stop (release asked, and the lane is asleep
    /// rather than mid-rewrite)? A driver need not sleep it out.
    pub fn renewal_wakes_to_stop(&self) -> bool {
        matches!(&self.renewal, RenewalLane::Running { machine, stop_requested: true } if !machine.inner().is_rewriting())
    }

    /// Is the renewal lane running (armed after the acquisition, not yet ended)?
    pub fn renewal_running(&self) -> bool {
        matches!(self.renewal, RenewalLane::Running { .. })
    }

    /// Is the renewal lane between its wake-up and its last rewrite?
    pub fn renewal_rewriting(&self) -> bool {
        matches!(&self.renewal, RenewalLane::Running { machine, .. } if machine.inner().is_rewriting())
    }

    /// Does the main lane have a timed duty due (see [`Machine::urgent`])?
    pub fn main_urgent(&self, config: &LockConfig, now_us: u64) -> bool {
        match &self.main {
            MainLane::Acquiring(machine) => machine.urgent(config, now_us),
            _ => false,
        }
    }

    /// Is the main lane in a contest it finishes in a bounded number of requests (see
    /// [`Machine::contending`])?
    pub fn main_contending(&self) -> bool {
        match &self.main {
            MainLane::Acquiring(machine) => machine.contending(),
            _ => false,
        }
    }

    /// Is the main lane a TryGetLock waiting a poll interval before its step-10 loop
    /// ("go to 4")?
    pub fn in_try_loop_wait(&self) -> bool {
        match &self.main {
            MainLane::Acquiring(AcquireMachine::Try(machine)) => machine.inner().inner().inner().in_loop_wait(),
            _ => false,
        }
    }

    /// Is the lock held (acquired, release not begun)?
    pub fn is_holding(&self) -> bool {
        matches!(self.main, MainLane::Holding { .. })
    }

    /// Is the acquisition still running?
    pub fn is_acquiring(&self) -> bool {
        matches!(self.main, MainLane::Acquiring(_))
    }

    /// Have both lanes ended? Then nothing of this acquisition acts any more.
    pub fn is_over(&self) -> bool {
        matches!(self.main, MainLane::Ended) && matches!(self.renewal, RenewalLane::Idle)
    }

    /// The cells held and the fencing token, while held.
    pub fn held(&self) -> Option<(&LeaseCells, &FencingToken)> {
        match &self.main {
            MainLane::Holding { lease, token } => Some((lease, token)),
            _ => None,
        }
    }

    /// The client time until which the lease is certainly ours (`None`: no TTL).
    pub fn valid_until_us(&self) -> Option<u64> {
        self.valid_until_us
    }

    /// What the holder knows about losing its lease at `now_us` on its clock: renewal found it
    /// lost, or the validity passed without a renewal (then another holder may exist, whatever
    /// renewal is still trying).
    pub fn lost(&self, now_us: u64) -> Option<LeaseLost> {
        self.lost.or_else(|| {
            self.valid_until_us
                .filter(|until| now_us >= *until)
                .map(|_| LeaseLost::Expired)
        })
    }

    /// The acquisition machine, while acquiring (for a model checker's renamings).
    pub fn acquiring_mut(&mut self) -> Option<&mut AcquireMachine> {
        match &mut self.main {
            MainLane::Acquiring(machine) => Some(machine),
            _ => None,
        }
    }
}

/// A sub-machine's step as a main-lane step (every action but `Done` passes through).
fn relabel<T>(step: Step<T>) -> Step<MainEnd> {
    let action = match step.action {
        Action::Store(command) => Action::Store(command),
        Action::Sleep { ms, kind } => Action::Sleep { ms, kind },
        Action::Draw { max_ms } => Action::Draw { max_ms },
        Action::ReadTime => Action::ReadTime,
        Action::StopRenewal { wait } => Action::StopRenewal { wait },
        Action::Done(_) => unreachable!("a sub-machine's Done is handled by the lifecycle"),
    };
    Step::new(step.tag, action)
}

/// Reduction 7 of the lock models: whichever machine runs.
impl crate::algo::held_columns::HeldColumns for AcquireMachine {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        match self {
            AcquireMachine::Queue(machine) => machine.see_columns(see),
            AcquireMachine::Try(machine) => machine.see_columns(see),
            AcquireMachine::Old(machine) => machine.see_columns(see),
        }
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        match self {
            AcquireMachine::Queue(machine) => machine.rename_columns(rename),
            AcquireMachine::Try(machine) => machine.rename_columns(rename),
            AcquireMachine::Old(machine) => machine.rename_columns(rename),
        }
    }
}

/// Reduction 7 of the lock models: a finished acquisition's lease and token.
impl crate::algo::held_columns::HeldColumns for MainEnd {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        match self {
            MainEnd::Acquire(outcome) => outcome.see_columns(see),
            MainEnd::Release(_) => {}
        }
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        match self {
            MainEnd::Acquire(outcome) => outcome.rename_columns(rename),
            MainEnd::Release(_) => {}
        }
    }
}

/// Reduction 7 of the lock models: both lanes.
impl crate::algo::held_columns::HeldColumns for Lifecycle {
    fn see_columns(&self, see: &mut dyn FnMut(&str)) {
        match &self.main {
            MainLane::Acquiring(machine) => machine.see_columns(see),
            MainLane::Holding { lease, token } => {
                lease.see_columns(see);
                token.see_columns(see);
            }
            MainLane::Releasing(machine) => machine.see_columns(see),
            MainLane::Ended => {}
        }
        if let RenewalLane::Running { machine, .. } = &self.renewal {
            machine.see_columns(see);
        }
    }
    fn rename_columns(&mut self, rename: &mut dyn FnMut(&mut String)) {
        match &mut self.main {
            MainLane::Acquiring(machine) => machine.rename_columns(rename),
            MainLane::Holding { lease, token } => {
                lease.rename_columns(rename);
                token.rename_columns(rename);
            }
            MainLane::Releasing(machine) => machine.rename_columns(rename),
            MainLane::Ended => {}
        }
        if let RenewalLane::Running { machine, .. } = &mut self.renewal {
            machine.rename_columns(rename);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::queue_column::ClientId;
    use crate::algo::testkit::Bench;
    use crate::algo::{Mutants, SleepKind};

    /// The lanes as machines the bench can run.
    struct MainOf<'a>(&'a mut Lifecycle);
    struct RenewalOf<'a>(&'a mut Lifecycle);

    impl Machine for MainOf<'_> {
        type Config = LockConfig;
        type Output = MainEnd;
        type Command = crate::store::StoreCommand;
        type Reply = crate::store::StoreReply;
        fn resume(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<MainEnd> {
            self.0.resume_main(config, input, now_us)
        }
    }

    impl Machine for RenewalOf<'_> {
        type Config = LockConfig;
        type Output = RenewalEnd;
        type Command = crate::store::StoreCommand;
        type Reply = crate::store::StoreReply;
        fn resume(&mut self, config: &LockConfig, input: Input, now_us: u64) -> Step<RenewalEnd> {
            self.0.resume_renewal(config, input, now_us)
        }
    }

    fn timed() -> LockConfig {
        LockConfig {
            ttl_s: Some(10),
            renew_every_ms: 5000,
            ..LockConfig::default()
        }
    }

    fn lifecycle(kind: AcquireKind, sequence: u64) -> Lifecycle {
        let thread = ClientId::new("a").expect("valid").thread(sequence);
        Lifecycle::acquire(kind, LockId::new("L").expect("valid"), thread)
    }

    fn acquired(bench: &mut Bench, life: &mut Lifecycle) {
        let end = bench.run(&mut MainOf(life));
        assert!(matches!(end, MainEnd::Acquire(Acquire::Acquired { .. })), "{end:?}");
        assert!(life.is_holding());
    }

    #[test]
    fn starts_by_reading_time_says_what_each_machine_asks_first() {
        let config = LockConfig::untimed();
        for kind in [
            AcquireKind::QueueGetLock,
            AcquireKind::QueueTryGetLock,
            AcquireKind::OldGetLock,
            AcquireKind::OldTryLock,
        ] {
            let lock = LockId::new("L").unwrap();
            let thread = ClientId::new("a").unwrap().thread(1);
            let mut life = Lifecycle::acquire(kind, lock, thread);
            let first = life.resume_main(&config, Input::Start, 1_000_000);
            assert_eq!(
                matches!(first.action, Action::ReadTime),
                kind.starts_by_reading_time(),
                "{kind:?} starts with {:?}",
                first.action
            );
        }
    }

    #[test]
    fn renewal_is_armed_only_after_acquiring_with_a_ttl() {
        let mut bench = Bench::new(timed());
        let mut life = lifecycle(AcquireKind::QueueGetLock, 1);
        assert!(!life.renewal_running(), "nothing to renew before the lock is held");
        acquired(&mut bench, &mut life);
        assert!(
            life.renewal_running(),
            "5.3: a lease whose cells expire is renewed while held"
        );
        assert_eq!(
            life.valid_until_us(),
            Some(bench.now_us + 9_000_000),
            "TTL - 1 s after the main cell"
        );

        let mut untimed = Bench::new(LockConfig::untimed());
        let mut life = lifecycle(AcquireKind::QueueGetLock, 1);
        acquired(&mut untimed, &mut life);
        assert!(!life.renewal_running(), "cells that never expire are not renewed");
        assert_eq!(life.valid_until_us(), None);
        assert_eq!(life.lost(u64::MAX), None);
    }

    #[test]
    fn a_failed_try_ends_the_lifecycle_without_renewal() {
        let mut bench = Bench::new(timed());
        let mut first = lifecycle(AcquireKind::QueueGetLock, 1);
        acquired(&mut bench, &mut first);
        let mut second = lifecycle(AcquireKind::QueueTryGetLock, 2);
        let end = bench.run(&mut MainOf(&mut second));
        assert_eq!(end, MainEnd::Acquire(Acquire::NotAcquired));
        assert!(second.is_over(), "both lanes have ended");
    }

    #[test]
    fn release_stops_a_sleeping_renewal_and_deletes_the_cells() {
        let mut bench = Bench::new(timed());
        let mut life = lifecycle(AcquireKind::QueueGetLock, 1);
        acquired(&mut bench, &mut life);
        let sleep = bench.run_until(&mut RenewalOf(&mut life), Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        assert!(matches!(
            sleep.action,
            Action::Sleep {
                kind: SleepKind::Renewal,
                ..
            }
        ));
        life.begin_release();
        let stop = life.resume_main(&bench.config, Input::Start, bench.now_us);
        assert_eq!(stop.action, Action::StopRenewal { wait: true });
        life.stop_renewal();
        assert!(life.renewal_wakes_to_stop(), "asleep and asked to stop");
        // The renewal lane wakes (its timer or the stop signal): the lifecycle makes it a stop.
        let end = life.resume_renewal(&bench.config, Input::Woke, bench.now_us);
        assert_eq!(end.action, Action::Done(RenewalEnd::Stopped));
        let released = bench.run_until(&mut MainOf(&mut life), Input::RenewalStopped, |_| false);
        assert_eq!(released.action, Action::Done(MainEnd::Release(Released::Released)));
        assert!(life.is_over());
        assert!(bench.live_columns("m:L").is_empty());
    }

    #[test]
    fn a_rewriting_renewal_is_waited_for_not_cut_short() {
        let mut bench = Bench::new(timed());
        let mut life = lifecycle(AcquireKind::OldGetLock, 1);
        acquired(&mut bench, &mut life);
        bench.run_until(&mut RenewalOf(&mut life), Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        bench.now_us += 5_000_000;
        let check = life.resume_renewal(&bench.config, Input::Woke, bench.now_us);
        assert!(
            matches!(check.action, Action::Store(_)),
            "renewal checks its cell first"
        );
        assert!(life.renewal_rewriting());
        life.stop_renewal();
        assert!(!life.renewal_wakes_to_stop());
        assert!(
            !life.stop_sleeping_renewal(),
            "release must wait for the rewrite to finish"
        );
    }

    #[test]
    fn the_holder_learns_of_a_lost_lease_from_renewal_or_from_its_clock() {
        let mut bench = Bench::new(timed());
        let mut life = lifecycle(AcquireKind::QueueGetLock, 1);
        acquired(&mut bench, &mut life);
        let until = life.valid_until_us().expect("a TTL");
        assert_eq!(life.lost(until - 1), None);
        assert_eq!(
            life.lost(until),
            Some(LeaseLost::Expired),
            "validity passed without a renewal"
        );
        // Someone deleted our main cell: renewal reports it and the lifecycle remembers why.
        bench.execute(crate::algo::delete_own_cell("m:L".into(), "a:1".into()));
        bench.run_until(&mut RenewalOf(&mut life), Input::Start, |step| {
            matches!(step.action, Action::Sleep { .. })
        });
        bench.now_us += 5_000_000;
        let end = bench.run_until(&mut RenewalOf(&mut life), Input::Woke, |_| false);
        assert_eq!(end.action, Action::Done(RenewalEnd::Lost(LeaseLost::MainCellGone)));
        assert_eq!(life.lost(bench.now_us), Some(LeaseLost::MainCellGone));
        assert!(!life.renewal_running());
    }

    #[test]
    fn the_k3_release_does_not_wait_and_leaves_the_renewal_lane_running() {
        let mut bench = Bench::new(LockConfig {
            mutants: Mutants {
                k3_release_without_waiting: true,
                ..Mutants::default()
            },
            ..timed()
        });
        let mut life = lifecycle(AcquireKind::QueueGetLock, 1);
        acquired(&mut bench, &mut life);
        life.begin_release();
        let stop = life.resume_main(&bench.config, Input::Start, bench.now_us);
        assert_eq!(stop.action, Action::StopRenewal { wait: false });
        life.stop_renewal();
        let released = bench.run_until(&mut MainOf(&mut life), Input::RenewalStopped, |_| false);
        assert_eq!(released.action, Action::Done(MainEnd::Release(Released::Released)));
        assert!(!life.is_over(), "the renewal lane outlives the release");
        assert!(life.renewal_stop_requested());
    }

    #[test]
    fn the_enqueue_tags_are_the_writes_after_reading_the_time() {
        assert!(completes_enqueue(&crate::algo::queue_get_lock::L6_ENQUEUE));
        assert!(completes_enqueue(&crate::algo::queue_try_get_lock::L7_ENQUEUE));
        let mut bench = Bench::new(LockConfig::untimed());
        let mut life = lifecycle(AcquireKind::QueueGetLock, 1);
        let read = bench.run_until(&mut MainOf(&mut life), Input::Start, |step| {
            matches!(step.action, Action::ReadTime)
        });
        assert!(!completes_enqueue(&read.tag), "reading the time is L5.1, not the write");
        let write = life.resume_main(&bench.config, Input::Time(bench.now_us), bench.now_us);
        assert!(completes_enqueue(&write.tag), "{}", write.tag);
    }
}
