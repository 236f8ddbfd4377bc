//! Curator's `InterProcessMutex` (the recipe most JVM users take from ZooKeeper), as a sans-IO
//! machine.
//!
//! The lock is a directory; each contender creates one node in it and the lowest sequence
//! holds:
//!
//! - **C1 create** `{dir}/_c_{guid}-lock-` as EPHEMERAL_SEQUENTIAL. The guid is the
//!   acquisition's token (Curator's "protected" mode): when the create's reply is lost, the
//!   node may exist without the client knowing its name, so before creating again it lists the
//!   directory and adopts the child that carries its guid (C1 find). A missing directory is
//!   created first (persistent; "already exists" is fine).
//! - **C2 list** the directory's children, sorted by the ten-digit sequence. Ours first: held.
//!   Ours missing: the session that owned it has expired (the node went with it): the
//!   acquisition fails, as Curator's does.
//! - **C3 watch the predecessor**, not the directory (no herd): `getData` with a watch on the
//!   child just before ours. Gone already (no node): list again at once. Otherwise sleep until
//!   the watch fires, then list again. Curator waits on the watch alone (for ever, or the
//!   acquire's wait time); a watch lost across a disconnect leaves the waiter asleep while the
//!   lock is free. [`CuratorConfig::recheck_every_ms`] (ours) bounds each sleep so that it lists
//!   again anyway.
//! - **C4 give up**: a wait time that runs out (or `try_lock` finding the lock held) deletes our
//!   node, so that the one behind us does not wait for nobody.
//! - **C5 release**: delete our node. "No node" means our session expired and took it: the lock
//!   was lost before the release. Ours: a delete that fails is sent again after a backoff, up to
//!   the retry policy (a node left behind is not freed by any TTL: it stays while our session
//!   lives, and every later contender queues behind it), and a release that still fails says so.
//!   CURATOR-678 is the bug this guards against: a release during a connection loss dropped the
//!   client's record of the lock while the node stayed, so every later acquire waited behind it
//!   (the mutant [`CuratorMutants::release_gives_up_after_one_failure`]).
//! - **A session that expired ends the acquisition** (ours, stricter than Curator): our node
//!   belonged to it and is gone, or about to go. Curator's retry policy retries a request
//!   answered SESSIONEXPIRED on its client's new session; when the server has refused the old
//!   session but not yet applied its close, the new session's listing still shows the old
//!   node, the lowest, and the acquisition holds a node that vanishes a moment later, when the
//!   next contender acquires too. That is CURATOR-604 (the mutant
//!   [`CuratorMutants::keeps_its_node_across_a_new_session`]; the window is
//!   [`crate::store::znode_tree::ZnodeTree::with_close_lag_ms`]).
//!
//! The holder's token is its node's `czxid`: ZooKeeper orders all writes, so a later holder's
//! node was created later and carries a larger zxid (a fencing token that only grows). Curator
//! keeps reentrancy in the client; one acquisition here is one node.
//!
//! What the recipe does not bound: a holder believes it holds until its client library tells
//! it the connection is lost (Curator's SUSPENDED and LOST states). A holder paused past its
//! session timeout has lost its node, and the next contender holds, while it still believes.

use super::super::retry::Uncertainty;
use super::super::{Action, Input, Machine, RetryPolicy, SleepKind, Source, Step, StepTag};
use crate::algo::server_holder::ServerHolder;
use crate::store::znode_tree::ZnodeTree;
use crate::store::znode_tree::{ZkError, ZkOp, ZkReply};
use crate::store::StoreFailure;

const C1_CREATE: StepTag = StepTag::new(Source::Curator, 1, "create {dir}/_c_{guid}-lock- EPHEMERAL_SEQUENTIAL");
const C1_DIRECTORY: StepTag = StepTag::new(Source::Curator, 1, "no directory: create it (persistent)");
const C1_FIND: StepTag = StepTag::new(
    Source::Curator,
    1,
    "the create's reply was lost: list the directory for a child with our guid",
);
const C2_LIST: StepTag = StepTag::new(Source::Curator, 2, "list the children, sorted by sequence");
const C2_HELD: StepTag = StepTag::new(Source::Curator, 2, "ours is the lowest: held");
const C2_VANISHED: StepTag = StepTag::new(
    Source::Curator,
    2,
    "our node is gone (its session expired): the acquisition fails",
);
const C2_TOKEN: StepTag = StepTag::new(
    Source::Ours,
    0,
    "ours is the lowest, adopted after a lost reply: read its czxid for the token",
);
const C3_WATCH: StepTag = StepTag::new(Source::Curator, 3, "getData with a watch on the node just before ours");
const C3_WAIT: StepTag = StepTag::new(Source::Curator, 3, "wait for the watch to fire");
const C4_GIVE_UP: StepTag = StepTag::new(Source::Curator, 4, "the wait is over: delete our node");
const C4_GAVE_UP: StepTag = StepTag::new(Source::Curator, 4, "gave up without the lock");
const C5_RELEASE: StepTag = StepTag::new(Source::Curator, 5, "release: delete our node");
const C5_DONE: StepTag = StepTag::new(Source::Curator, 5, "released, or found our node gone");
const RETRY_AFTER_FAILURE: StepTag = StepTag::new(Source::Ours, 0, "the request failed: wait, then try again");
const MUTANT_678: StepTag = StepTag::new(
    Source::Ours,
    0,
    "MUTANT CURATOR-678: the delete failed, the release gives up and forgets the node",
);

/// Known bugs of Curator's lock, off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CuratorMutants {
    /// CURATOR-678: a release whose delete fails once ends there; the node stays while the
    /// session lives and every later contender waits behind it.
    pub release_gives_up_after_one_failure: bool,
    /// CURATOR-604: a listing, watch or token read answered SESSIONEXPIRED is retried (after
    /// the retry backoff) on the client's new session, with the node the old session created.
    pub keeps_its_node_across_a_new_session: bool,
}
const MUTANT_604: StepTag = StepTag::new(
    Source::Ours,
    0,
    "MUTANT CURATOR-604: session expired; list again on the new session, keeping the old session's node",
);
const FAILED: StepTag = StepTag::new(Source::Ours, 0, "the store kept failing: give up");

/// What the Curator machines read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CuratorConfig {
    /// `acquire(time, unit)`: give up after this long; `None`: `acquire()`, wait for ever.
    pub wait_ms: Option<u64>,
    /// Ours: list the directory again after this long even if no watch fired (`None`:
    /// Curator's wait on the watch alone).
    pub recheck_every_ms: Option<u64>,
    pub retry: RetryPolicy,
    pub mutants: CuratorMutants,
}

impl AsRef<RetryPolicy> for CuratorConfig {
    fn as_ref(&self) -> &RetryPolicy {
        &self.retry
    }
}

/// The longest sleep one wait step asks for when neither a wait time nor a recheck bounds it
/// (a day: the driver's sleep until notified ends earlier when the watch fires).
pub const MAX_WAIT_STEP_MS: u64 = 86_400_000;

/// What a Curator holder owns.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CuratorLease {
    /// Our node's full path.
    pub node: String,
    /// Its creation zxid: the fencing token.
    pub czxid: u64,
    /// The czxid as the resource sees it (20 digits, so that text order is number order).
    pub token: String,
}

impl CuratorLease {
    pub fn new(node: String, czxid: u64) -> Self {
        CuratorLease {
            node,
            czxid,
            token: format!("{czxid:020}"),
        }
    }
}

/// How an acquisition ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CuratorAcquired {
    Acquired(CuratorLease),
    /// `try_lock` found the lock held.
    NotAcquired,
    TimedOut,
    /// Our node vanished while we waited (the session expired).
    NodeVanished,
    Failed(StoreFailure),
}

/// Where every lock's directory lives.
pub const LOCKS_ROOT: &str = "/locks";

/// The directory of lock `key`: `/locks/{key}`.
pub fn directory_of(key: &str) -> String {
    format!("{LOCKS_ROOT}/{key}")
}

/// The ten-digit sequence at the end of a child's name (ZooKeeper's sequential suffix).
fn sequence_of(name: &str) -> Option<u64> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    digits.parse().ok()
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum State {
    Idle,
    Creating {
        sent_at_us: u64,
    },
    /// Creating the directory's `n`-th ancestor (the directory itself last).
    CreatingDirectory(usize),
    Finding,
    Listing,
    Watching,
    Waiting,
    /// Held, with our node adopted from a listing: reading its czxid (the token).
    ReadingToken,
    /// A failed request is retried after a backoff: which one.
    Backoff(Box<State>),
    GivingUp(Box<CuratorAcquired>),
    Finished,
}

/// C1–C4: take the lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CuratorAcquire {
    /// The lock's directory ([`directory_of`]).
    directory: String,
    guid: String,
    once: bool,
    state: State,
    deadline_us: Option<u64>,
    /// Our node once known: its name in the directory and its czxid.
    ours: Option<(String, u64)>,
    uncertainty: Uncertainty,
}

impl CuratorAcquire {
    /// Lock `key` (its directory [`directory_of`]); `guid`: unique per acquisition; `once`:
    /// `try_lock`.
    pub fn new(key: &str, guid: impl Into<String>, once: bool) -> Self {
        CuratorAcquire {
            directory: directory_of(key),
            guid: guid.into(),
            once,
            state: State::Idle,
            deadline_us: None,
            ours: None,
            uncertainty: Uncertainty::default(),
        }
    }

    pub fn is_finished(&self) -> bool {
        self.state == State::Finished
    }

    fn prefix(&self) -> String {
        format!("_c_{}-lock-", self.guid)
    }

    fn create(&mut self, now_us: u64) -> Step<CuratorAcquired, ZkOp> {
        self.state = State::Creating { sent_at_us: now_us };
        Step::store(
            C1_CREATE,
            ZkOp::Create {
                path: format!("{}/{}", self.directory, self.prefix()),
                data: String::new(),
                ephemeral: true,
                sequential: true,
            },
        )
    }

    /// Create the directory's ancestors from the top, then the directory, then our node
    /// (Curator's `creatingParentContainersIfNeeded`).
    fn create_directory(&mut self, level: usize, now_us: u64) -> Step<CuratorAcquired, ZkOp> {
        let ends = self.directory.match_indices('/').map(|(at, _)| at).skip(1);
        let paths: Vec<String> = ends
            .map(|at| self.directory[..at].to_owned())
            .chain(std::iter::once(self.directory.clone()))
            .collect();
        let Some(path) = paths.get(level) else {
            return self.create(now_us);
        };
        self.state = State::CreatingDirectory(level);
        Step::store(
            C1_DIRECTORY,
            ZkOp::Create {
                path: path.clone(),
                data: String::new(),
                ephemeral: false,
                sequential: false,
            },
        )
    }

    fn list(&mut self, tag: StepTag) -> Step<CuratorAcquired, ZkOp> {
        self.state = if tag == C1_FIND { State::Finding } else { State::Listing };
        Step::store(
            tag,
            ZkOp::GetChildren {
                path: self.directory.clone(),
                watch: false,
            },
        )
    }

    fn finish(&mut self, tag: StepTag, output: CuratorAcquired) -> Step<CuratorAcquired, ZkOp> {
        self.state = State::Finished;
        Step::done(tag, output)
    }

    /// End without the lock, deleting our node first if we have one.
    fn give_up(&mut self, output: CuratorAcquired) -> Step<CuratorAcquired, ZkOp> {
        match &self.ours {
            Some((name, _)) => {
                let path = format!("{}/{name}", self.directory);
                self.state = State::GivingUp(Box::new(output));
                Step::store(C4_GIVE_UP, ZkOp::Delete { path, version: None })
            }
            None => self.finish(C4_GAVE_UP, output),
        }
    }

    fn failed(
        &mut self,
        config: &CuratorConfig,
        failure: StoreFailure,
        sent_at_us: Option<u64>,
        retry: State,
    ) -> Step<CuratorAcquired, ZkOp> {
        if self.uncertainty.failed(&failure, sent_at_us, &config.retry) {
            return self.give_up(CuratorAcquired::Failed(failure));
        }
        self.state = State::Backoff(Box::new(retry));
        Step::new(
            RETRY_AFTER_FAILURE,
            Action::Sleep {
                ms: config.retry.backoff_ms,
                kind: SleepKind::Retry,
            },
        )
    }

    /// The children sorted by sequence: ours first means held; else watch the one before.
    fn judge(&mut self, mut children: Vec<String>, now_us: u64) -> Step<CuratorAcquired, ZkOp> {
        children.retain(|name| sequence_of(name).is_some());
        children.sort_by_key(|name| sequence_of(name));
        let (ours, _) = self.ours.clone().expect("listing only once our node is known");
        let Some(at) = children.iter().position(|name| *name == ours) else {
            return self.finish(C2_VANISHED, CuratorAcquired::NodeVanished);
        };
        if at == 0 && self.ours.as_ref().is_some_and(|(_, czxid)| *czxid == 0) {
            // Adopted after a lost create reply: the listing did not say its czxid.
            self.state = State::ReadingToken;
            return Step::store(
                C2_TOKEN,
                ZkOp::Exists {
                    path: format!("{}/{ours}", self.directory),
                    watch: false,
                },
            );
        }
        if at == 0 {
            let (node, czxid) = self.ours.take().expect("known");
            let lease = CuratorLease::new(format!("{}/{node}", self.directory), czxid);
            return self.finish(C2_HELD, CuratorAcquired::Acquired(lease));
        }
        if self.once {
            return self.give_up(CuratorAcquired::NotAcquired);
        }
        if self.deadline_us.is_some_and(|deadline| now_us >= deadline) {
            return self.give_up(CuratorAcquired::TimedOut);
        }
        self.state = State::Watching;
        Step::store(
            C3_WATCH,
            ZkOp::GetData {
                path: format!("{}/{}", self.directory, children[at - 1]),
                watch: true,
            },
        )
    }

    fn advance(&mut self, config: &CuratorConfig, input: Input<ZkReply>, now_us: u64) -> Step<CuratorAcquired, ZkOp> {
        match (std::mem::replace(&mut self.state, State::Finished), input) {
            (State::Idle, Input::Start) => {
                self.deadline_us = config.wait_ms.map(|ms| now_us.saturating_add(ms.saturating_mul(1000)));
                self.create(now_us)
            }
            (State::Creating { .. }, Input::Reply(ZkReply::Created { path, stat })) => {
                self.uncertainty.answered();
                let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
                self.ours = Some((name, stat.czxid));
                self.list(C2_LIST)
            }
            (State::Creating { .. }, Input::Reply(ZkReply::Error(ZkError::NoNode))) => {
                self.uncertainty.answered();
                self.create_directory(0, now_us)
            }
            (
                State::CreatingDirectory(level),
                Input::Reply(ZkReply::Created { .. } | ZkReply::Error(ZkError::NodeExists)),
            ) => self.create_directory(level + 1, now_us),
            (State::Creating { sent_at_us }, Input::Failed(failure)) => {
                self.failed(config, failure, Some(sent_at_us), State::Finding)
            }
            (State::Finding, Input::Reply(ZkReply::Children(children))) => {
                self.uncertainty.answered();
                let prefix = self.prefix();
                match children.into_iter().find(|name| name.starts_with(&prefix)) {
                    // Our lost create did apply. A listing does not say its czxid: it is read
                    // once held (0 until then).
                    Some(name) => {
                        self.ours = Some((name, 0));
                        self.list(C2_LIST)
                    }
                    None => self.create(now_us),
                }
            }
            (State::Finding, Input::Reply(ZkReply::Error(ZkError::NoNode))) => self.create(now_us),
            (State::Listing, Input::Reply(ZkReply::Children(children))) => {
                self.uncertainty.answered();
                self.judge(children, now_us)
            }
            (State::Listing, Input::Reply(ZkReply::Error(ZkError::NoNode))) => {
                self.finish(C2_VANISHED, CuratorAcquired::NodeVanished)
            }
            (State::Watching, Input::Reply(ZkReply::Error(ZkError::NoNode))) => {
                // The predecessor went between the listing and the watch: list again.
                self.uncertainty.answered();
                self.list(C2_LIST)
            }
            (State::Watching, Input::Reply(ZkReply::Data { .. })) => {
                self.uncertainty.answered();
                let remaining_ms = self
                    .deadline_us
                    .map(|deadline| deadline.saturating_sub(now_us).div_ceil(1000).max(1));
                let ms = [remaining_ms, config.recheck_every_ms, Some(MAX_WAIT_STEP_MS)]
                    .into_iter()
                    .flatten()
                    .min()
                    .expect("one bound at least");
                self.state = State::Waiting;
                Step::new(
                    C3_WAIT,
                    Action::Sleep {
                        ms,
                        kind: SleepKind::UntilNotified,
                    },
                )
            }
            (State::Waiting, Input::Woke) => self.list(C2_LIST),
            (State::ReadingToken, Input::Reply(ZkReply::Exists(Some(stat)))) => {
                let (node, _) = self.ours.take().expect("known");
                let lease = CuratorLease::new(format!("{}/{node}", self.directory), stat.czxid);
                self.finish(C2_HELD, CuratorAcquired::Acquired(lease))
            }
            (State::ReadingToken, Input::Reply(ZkReply::Exists(None))) => {
                self.finish(C2_VANISHED, CuratorAcquired::NodeVanished)
            }
            (
                State::Finding | State::Listing | State::Watching | State::ReadingToken | State::CreatingDirectory(_),
                Input::Failed(failure),
            ) => {
                let retry = if self.ours.is_none() {
                    State::Finding
                } else {
                    State::Listing
                };
                self.failed(config, failure, None, retry)
            }
            (State::Backoff(retry), Input::Woke) => match *retry {
                State::Finding if self.uncertainty.may_have_applied() => self.list(C1_FIND),
                State::Finding => self.create(now_us),
                _ => self.list(C2_LIST),
            },
            (State::GivingUp(output), Input::Reply(_) | Input::Failed(_)) => {
                // Deleted, or not: a node left behind goes with our session.
                self.finish(C4_GAVE_UP, *output)
            }
            (
                State::Listing | State::Watching | State::ReadingToken,
                Input::Reply(ZkReply::Error(ZkError::SessionExpired)),
            ) if config.mutants.keeps_its_node_across_a_new_session && self.ours.is_some() => {
                // Curator's retry loop: bounded by the policy's retries, as a failure is.
                let failure = StoreFailure::Other("session expired".into());
                if self.uncertainty.failed(&failure, None, &config.retry) {
                    return self.finish(FAILED, CuratorAcquired::Failed(failure));
                }
                self.state = State::Backoff(Box::new(State::Listing));
                Step::new(
                    MUTANT_604,
                    Action::Sleep {
                        ms: config.retry.backoff_ms,
                        kind: SleepKind::Retry,
                    },
                )
            }
            (_, Input::Reply(ZkReply::Error(ZkError::SessionExpired))) => self.finish(
                FAILED,
                CuratorAcquired::Failed(StoreFailure::Other("session expired".into())),
            ),
            (state, Input::Reply(reply)) => self.finish(
                FAILED,
                CuratorAcquired::Failed(StoreFailure::Other(format!("unexpected reply {reply} in {state:?}"))),
            ),
            (state, input) => panic!("CuratorAcquire: {input:?} in state {state:?}"),
        }
    }
}

impl Machine for CuratorAcquire {
    type Config = CuratorConfig;
    type Output = CuratorAcquired;
    type Command = ZkOp;
    type Reply = ZkReply;

    fn resume(&mut self, config: &CuratorConfig, input: Input<ZkReply>, now_us: u64) -> Step<CuratorAcquired, ZkOp> {
        super::super::resume_checked(
            "CuratorAcquire",
            self,
            CuratorAcquire::is_finished,
            CuratorAcquire::advance,
            (config, input, now_us),
        )
    }
}

/// How a release ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CuratorReleased {
    Released,
    /// Our node was gone: the session had expired and the lock was lost before.
    WasGone,
    Failed(StoreFailure),
}

/// C5: delete our node, again after a failure (ours; see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CuratorRelease {
    lease: CuratorLease,
    sent: bool,
    backing_off: bool,
    finished: bool,
    uncertainty: Uncertainty,
}

impl CuratorRelease {
    pub fn new(lease: CuratorLease) -> Self {
        CuratorRelease {
            lease,
            sent: false,
            backing_off: false,
            finished: false,
            uncertainty: Uncertainty::default(),
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn delete(&mut self) -> Step<CuratorReleased, ZkOp> {
        self.sent = true;
        self.backing_off = false;
        Step::store(
            C5_RELEASE,
            ZkOp::Delete {
                path: self.lease.node.clone(),
                version: None,
            },
        )
    }

    fn advance(&mut self, config: &CuratorConfig, input: Input<ZkReply>, now_us: u64) -> Step<CuratorReleased, ZkOp> {
        let output = match (self.sent, self.backing_off, input) {
            (false, _, Input::Start) => return self.delete(),
            (true, true, Input::Woke) => return self.delete(),
            (true, false, Input::Reply(ZkReply::Ok)) => CuratorReleased::Released,
            // A retried delete that finds no node: our earlier one may have applied.
            (true, false, Input::Reply(ZkReply::Error(ZkError::NoNode))) if self.uncertainty.may_have_applied() => {
                CuratorReleased::Released
            }
            (true, false, Input::Reply(ZkReply::Error(ZkError::NoNode | ZkError::SessionExpired))) => {
                CuratorReleased::WasGone
            }
            (true, false, Input::Reply(reply)) => {
                CuratorReleased::Failed(StoreFailure::Other(format!("unexpected reply {reply}")))
            }
            (true, false, Input::Failed(failure)) if config.mutants.release_gives_up_after_one_failure => {
                self.finished = true;
                return Step::done(MUTANT_678, CuratorReleased::Failed(failure));
            }
            (true, false, Input::Failed(failure)) => {
                if self.uncertainty.failed(&failure, Some(now_us), &config.retry) {
                    CuratorReleased::Failed(failure)
                } else {
                    self.backing_off = true;
                    return Step::new(
                        RETRY_AFTER_FAILURE,
                        Action::Sleep {
                            ms: config.retry.backoff_ms,
                            kind: SleepKind::Retry,
                        },
                    );
                }
            }
            (sent, backing_off, input) => panic!("CuratorRelease: {input:?} (sent {sent}, backing off {backing_off})"),
        };
        self.finished = true;
        Step::done(C5_DONE, output)
    }
}

impl Machine for CuratorRelease {
    type Config = CuratorConfig;
    type Output = CuratorReleased;
    type Command = ZkOp;
    type Reply = ZkReply;

    fn resume(&mut self, config: &CuratorConfig, input: Input<ZkReply>, now_us: u64) -> Step<CuratorReleased, ZkOp> {
        super::super::resume_checked(
            "CuratorRelease",
            self,
            CuratorRelease::is_finished,
            CuratorRelease::advance,
            (config, input, now_us),
        )
    }
}

/// What a holder's check found.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CuratorChecked {
    /// Our node is there: still held.
    StillOurs,
    /// Our node is gone (the session expired): the lock is lost.
    Gone,
    Failed(StoreFailure),
}

/// Ours (the family driver's `extend`): does our node still exist? ZooKeeper locks have no
/// lease to extend; the session's heartbeats keep the node, and this is how a holder asks.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CuratorCheck {
    lease: CuratorLease,
    sent: bool,
    finished: bool,
}

const CHECK: StepTag = StepTag::new(Source::Ours, 0, "is our node still there?");

impl CuratorCheck {
    pub fn new(lease: CuratorLease) -> Self {
        CuratorCheck {
            lease,
            sent: false,
            finished: false,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn advance(&mut self, _: &CuratorConfig, input: Input<ZkReply>, _: u64) -> Step<CuratorChecked, ZkOp> {
        let output = match (self.sent, input) {
            (false, Input::Start) => {
                self.sent = true;
                let path = self.lease.node.clone();
                return Step::store(CHECK, ZkOp::Exists { path, watch: false });
            }
            (true, Input::Reply(ZkReply::Exists(Some(stat)))) if stat.czxid == self.lease.czxid => {
                CuratorChecked::StillOurs
            }
            (true, Input::Reply(ZkReply::Exists(_) | ZkReply::Error(ZkError::SessionExpired))) => CuratorChecked::Gone,
            (true, Input::Reply(reply)) => {
                CuratorChecked::Failed(StoreFailure::Other(format!("unexpected reply {reply}")))
            }
            (true, Input::Failed(failure)) => CuratorChecked::Failed(failure),
            (sent, input) => panic!("CuratorCheck: {input:?} (sent {sent})"),
        };
        self.finished = true;
        Step::done(CHECK, output)
    }
}

impl Machine for CuratorCheck {
    type Config = CuratorConfig;
    type Output = CuratorChecked;
    type Command = ZkOp;
    type Reply = ZkReply;

    fn resume(&mut self, config: &CuratorConfig, input: Input<ZkReply>, now_us: u64) -> Step<CuratorChecked, ZkOp> {
        super::super::resume_checked(
            "CuratorCheck",
            self,
            CuratorCheck::is_finished,
            CuratorCheck::advance,
            (config, input, now_us),
        )
    }
}

/// Who the server says holds `key` (T1-server): the child of the lock's directory with the
/// lowest sequence, as step C2 sorts them, by its czxid (the token). A node whose session
/// expired is a child until the server closes the session and deletes it.
pub fn holder_on_server(tree: &ZnodeTree, key: &str) -> ServerHolder {
    let directory = directory_of(key);
    tree.nodes()
        .filter_map(|(path, node)| {
            let (parent, name) = path.rsplit_once('/')?;
            (parent == directory).then_some((sequence_of(name), node.czxid))
        })
        .min()
        .map_or(ServerHolder::Nobody, |(_, czxid)| {
            ServerHolder::token_until(&format!("{czxid:020}"), None)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::znode_tree::{SessionId, ZkCommand, ZnodeTree};

    /// Clients on one ZooKeeper server, each with its own session; every request takes 1 ms.
    struct Bench {
        tree: ZnodeTree,
        now_us: u64,
        /// Watch events not yet delivered, per session.
        fired: Vec<SessionId>,
        /// Lose the reply of the next create (after it applied).
        lose_next_create_reply: bool,
        /// Fail this many next deletes before they reach the server (a connection loss).
        fail_next_deletes: u8,
    }

    impl Bench {
        fn new() -> Self {
            Bench {
                tree: ZnodeTree::new(),
                now_us: 1_000_000,
                fired: Vec::new(),
                lose_next_create_reply: false,
                fail_next_deletes: 0,
            }
        }

        fn session(&mut self) -> SessionId {
            match self
                .tree
                .execute(&ZkCommand::CreateSession { timeout_ms: 10_000 }, self.now_us / 1000)
                .reply
            {
                ZkReply::SessionCreated { session } => session,
                other => panic!("{other:?}"),
            }
        }

        /// Run until done (`Some`) or asleep on a watch (`None`).
        fn run<M>(
            &mut self,
            session: SessionId,
            config: &CuratorConfig,
            machine: &mut M,
            input: Input<ZkReply>,
        ) -> Option<M::Output>
        where
            M: Machine<Config = CuratorConfig, Command = ZkOp, Reply = ZkReply>,
        {
            let mut input = input;
            // As the drivers do: a request answered SESSIONEXPIRED makes the client open a new
            // session, which the next request uses.
            let mut session = session;
            for _ in 0..1000 {
                let step = machine.resume(config, input, self.now_us);
                input = match step.action {
                    Action::Store(ZkOp::Delete { .. }) if self.fail_next_deletes > 0 => {
                        self.now_us += 1000;
                        self.fail_next_deletes -= 1;
                        Input::Failed(StoreFailure::Unavailable)
                    }
                    Action::Store(op) => {
                        self.now_us += 1000;
                        let lose = matches!(op, ZkOp::Create { ephemeral: true, .. }) && self.lose_next_create_reply;
                        let executed = self.tree.execute(&op.on(session), self.now_us / 1000);
                        self.fired.extend(executed.fired.iter().map(|event| event.session));
                        if executed.reply == ZkReply::Error(ZkError::SessionExpired) {
                            session = self.session();
                        }
                        if lose {
                            self.lose_next_create_reply = false;
                            Input::Failed(StoreFailure::Timeout)
                        } else {
                            Input::Reply(executed.reply)
                        }
                    }
                    Action::Sleep {
                        kind: SleepKind::UntilNotified,
                        ..
                    } => return None,
                    Action::Sleep { ms, .. } => {
                        self.now_us += ms * 1000;
                        Input::Woke
                    }
                    Action::Done(output) => return Some(output),
                    _ => panic!("an action the Curator machines do not take"),
                };
            }
            panic!("no end in 1000 steps")
        }

        fn children(&self, directory: &str) -> usize {
            self.tree
                .nodes()
                .filter(|(path, _)| path.starts_with(&format!("{directory}/")))
                .count()
        }
    }

    fn held(output: Option<CuratorAcquired>) -> CuratorLease {
        match output {
            Some(CuratorAcquired::Acquired(lease)) => lease,
            other => panic!("not held: {other:?}"),
        }
    }

    #[test]
    fn c2_the_lowest_node_holds_and_the_next_is_woken_by_its_watch_only() {
        let config = CuratorConfig::default();
        let mut bench = Bench::new();
        let (a, b, c) = (bench.session(), bench.session(), bench.session());
        let first = held(bench.run(a, &config, &mut CuratorAcquire::new("lock", "ga", false), Input::Start));
        let mut second = CuratorAcquire::new("lock", "gb", false);
        let mut third = CuratorAcquire::new("lock", "gc", false);
        assert!(bench.run(b, &config, &mut second, Input::Start).is_none());
        assert!(bench.run(c, &config, &mut third, Input::Start).is_none());
        assert_eq!(
            bench.tree.node("/locks").map(|_| ()),
            Some(()),
            "the directory was created"
        );
        let released = bench.run(a, &config, &mut CuratorRelease::new(first.clone()), Input::Start);
        assert_eq!(released, Some(CuratorReleased::Released));
        assert_eq!(bench.fired, vec![b], "only the next in line is told: no herd");
        let second_lease = held(bench.run(b, &config, &mut second, Input::Woke));
        assert!(second_lease.czxid > first.czxid, "the token grows");
        bench.run(b, &config, &mut CuratorRelease::new(second_lease.clone()), Input::Start);
        let third_lease = held(bench.run(c, &config, &mut third, Input::Woke));
        assert!(third_lease.czxid > second_lease.czxid);
    }

    /// The waiter's session expires while it waits; the server refuses it at once and deletes
    /// its node 5 s later. Ours ends the acquisition; the CURATOR-604 mutant lists again on its
    /// new session, finds the old node the lowest (the holder released) and holds a node about
    /// to vanish.
    #[test]
    fn c2_a_waiter_whose_session_expired_fails_and_the_curator_604_mutant_holds_the_old_node() {
        for mutant in [false, true] {
            let config = CuratorConfig {
                mutants: CuratorMutants {
                    keeps_its_node_across_a_new_session: mutant,
                    ..CuratorMutants::default()
                },
                ..CuratorConfig::default()
            };
            let mut bench = Bench::new();
            bench.tree = ZnodeTree::with_close_lag_ms(5_000);
            let holder = bench.session();
            let ZkReply::SessionCreated { session: waiter } = bench
                .tree
                .execute(&ZkCommand::CreateSession { timeout_ms: 100 }, bench.now_us / 1000)
                .reply
            else {
                panic!("no session")
            };
            let first = held(bench.run(
                holder,
                &config,
                &mut CuratorAcquire::new("lock", "ga", false),
                Input::Start,
            ));
            let mut second = CuratorAcquire::new("lock", "gb", false);
            assert!(bench.run(waiter, &config, &mut second, Input::Start).is_none());
            // The waiter is silent past its timeout: refused from now, its node still there.
            bench.now_us += 200_000;
            bench.tree.expire_sessions(bench.now_us / 1000);
            assert_eq!(bench.tree.closing_sessions().count(), 1);
            let released = bench.run(holder, &config, &mut CuratorRelease::new(first), Input::Start);
            assert_eq!(released, Some(CuratorReleased::Released));
            // Woken by the session's expiry, as a ZooKeeper client's watchers are.
            let outcome = bench.run(waiter, &config, &mut second, Input::Woke);
            if mutant {
                let lease = held(outcome);
                assert!(bench.tree.node(&lease.node).is_some(), "held on the old session's node");
                bench.now_us += 5_000_000;
                bench.tree.expire_sessions(bench.now_us / 1000);
                assert!(bench.tree.node(&lease.node).is_none(), "which the close deletes");
            } else {
                assert!(
                    matches!(&outcome, Some(CuratorAcquired::Failed(StoreFailure::Other(why))) if why == "session expired"),
                    "{outcome:?}"
                );
            }
        }
    }

    #[test]
    fn c5_a_release_whose_delete_fails_tries_again_and_the_curator_678_mutant_leaves_its_node_for_ever() {
        for mutant in [false, true] {
            let config = CuratorConfig {
                mutants: CuratorMutants {
                    release_gives_up_after_one_failure: mutant,
                    ..CuratorMutants::default()
                },
                ..CuratorConfig::default()
            };
            let mut bench = Bench::new();
            let (a, b, c) = (bench.session(), bench.session(), bench.session());
            let first = held(bench.run(a, &config, &mut CuratorAcquire::new("lock", "ga", false), Input::Start));
            let mut second = CuratorAcquire::new("lock", "gb", false);
            assert!(bench.run(b, &config, &mut second, Input::Start).is_none());
            bench.fail_next_deletes = 1;
            let released = bench.run(a, &config, &mut CuratorRelease::new(first), Input::Start);
            if mutant {
                assert!(matches!(released, Some(CuratorReleased::Failed(_))), "{released:?}");
                assert!(bench.fired.is_empty(), "the waiter is never told");
                assert_eq!(
                    bench.children("/locks/lock"),
                    2,
                    "a's node stays while its session lives"
                );
                let late = bench.run(c, &config, &mut CuratorAcquire::new("lock", "gc", true), Input::Start);
                assert_eq!(
                    late,
                    Some(CuratorAcquired::NotAcquired),
                    "every later try finds it held"
                );
            } else {
                assert_eq!(released, Some(CuratorReleased::Released), "deleted on the second try");
                assert_eq!(bench.fired, vec![b]);
                held(bench.run(b, &config, &mut second, Input::Woke));
            }
        }
    }

    #[test]
    fn c1_a_lost_create_reply_adopts_the_node_it_made_instead_of_making_a_second() {
        let config = CuratorConfig::default();
        let mut bench = Bench::new();
        let a = bench.session();
        bench.lose_next_create_reply = true;
        let lease = held(bench.run(a, &config, &mut CuratorAcquire::new("lock", "ga", false), Input::Start));
        assert_eq!(bench.children("/locks/lock"), 1, "one node, found by its guid");
        assert!(lease.node.contains("_c_ga-lock-"));
        assert_eq!(
            Some(lease.czxid),
            bench.tree.node(&lease.node).map(|node| node.czxid),
            "the token read back"
        );
    }

    #[test]
    fn c4_try_lock_on_a_held_lock_deletes_its_node_and_c2_a_vanished_node_fails() {
        let config = CuratorConfig::default();
        let mut bench = Bench::new();
        let (a, b) = (bench.session(), bench.session());
        held(bench.run(a, &config, &mut CuratorAcquire::new("lock", "ga", false), Input::Start));
        let answer = bench.run(b, &config, &mut CuratorAcquire::new("lock", "gb", true), Input::Start);
        assert_eq!(answer, Some(CuratorAcquired::NotAcquired));
        assert_eq!(bench.children("/locks/lock"), 1, "b's node is gone");
        // b waits; its session expires meanwhile (silent for 10 s); a releases.
        let mut waiter = CuratorAcquire::new("lock", "gb2", false);
        assert!(bench.run(b, &config, &mut waiter, Input::Start).is_none());
        bench.now_us += 11_000_000;
        bench.tree.execute(&ZkCommand::Ping { session: a }, bench.now_us / 1000);
        let output = bench.run(b, &config, &mut waiter, Input::Woke);
        assert!(
            matches!(
                output,
                Some(CuratorAcquired::Failed(_)) | Some(CuratorAcquired::NodeVanished)
            ),
            "{output:?}"
        );
    }

    #[test]
    fn sequence_of_reads_the_ten_digit_suffix() {
        assert_eq!(sequence_of("_c_g-lock-0000000042"), Some(42));
        assert_eq!(sequence_of("short"), None);
        assert_eq!(sequence_of("_c_g-lock-00000000x2"), None);
    }
}
