//! # The lease locks people use instead: redis-set-nx, redlock, memcached, redisson; zookeeper, etcd
//!
//! One model runs the four locks whose key the *server* expires: Redis's single-instance
//! `SET NX PX` lock, Redlock over three Redis masters, Memcached's `add` lock and Redisson's
//! `RLock`. Each is the library's [`FamilyLock`] (its acquire, extend and release machines, and
//! Redisson's watchdog, unchanged) against its server's value type ([`ModelServer`]:
//! `RedisKeyspace` or `ReplicatedRedis`, three `RedisKeyspace`s, `Memcached`). Everything below
//! is said of `SET NX`, then what differs for the other three.
//!
//! ## The lock (`SET NX`)
//!
//! The lock most engineers reach for is one Redis key. To acquire, a client sets the key to a
//! token only it knows, only if the key does not exist, with an expiry: `SET lock token NX PX
//! ttl`. Nil means someone else holds it: wait a little and try again. To release, it deletes
//! the key only if the key still holds its token (a script, so that the check and the delete are
//! one step). To hold longer than one TTL it extends the expiry the same way, only if the value
//! is its token. The *server's* clock decides when the key expires; the client knows only when it
//! *sent* the request that set the expiry, so it counts its lease from that send, minus a drift
//! margin: `RedisLease::valid_until_us`. Before each use of the protected resource it checks that
//! its own clock is still below that instant.
//!
//! Why it works, when it works: the key is written at or after the send, so it lives at least
//! until `send + ttl` on a server clock that runs at the client's rate; the client stops
//! believing at `send + ttl - drift`. A second client's `SET NX` succeeds only once the key is
//! gone, after the first client stopped believing. Each of the faults below breaks one premise
//! of that argument.
//!
//! ## Redlock and Memcached
//!
//! **Redlock** (`--model redlock`): each client sends `SET NX PX` to masters 0, 1, 2 in turn;
//! with a majority (2) within the validity (`TTL - elapsed - (1% of the TTL + 2 ms)`) it holds
//! until `start + validity`; otherwise it deletes its key on every master, sleeps a random delay
//! (the model draws 0: the sleep lasts a tick) and tries once more (2 attempts), then returns
//! *not acquired*. Release and extension run a compare-and-delete / compare-and-pexpire on
//! every master. The faults strike master 0: a restart without persistence and without delay,
//! a clock jump by the TTL: Kleppmann's cases, where a holder with a bare majority loses one of
//! its keys and another client builds a majority from the rest. `--mutant go-redsync-extend`
//! (with `--extend`) believes in a fresh TTL from the end of an extension round however long
//! it took; `--mutant node-redlock-validity` counts every attempt's validity from the first
//! attempt's start (a liveness bug: it gives up on a lock it got; the unit tests catch it, this
//! model's T2 (always) fails under contention with or without it).
//!
//! **Memcached** (`--model memcached`): `add key token exptime` stores only if no live item
//! holds the key; the server counts whole seconds, so a holder believes for `TTL - 1 s` from
//! its send (`MemcachedLease::valid_until_us`); release and extension read the item with
//! `gets` and act with `cas` only if it holds the token. Memcached keeps nothing across a
//! restart, so `--fault restart` is its normal restart.
//!
//! **Redisson** (`--model redisson`): the lock is a hash at the key, `owner -> hold count`,
//! written by an acquire script that answers nil (ours) or the key's remaining TTL. `lock()`
//! without a lease time gives the key the watchdog's timeout (3 ticks here) and starts the
//! **watchdog**: a lane of the holder's process of its own (the driver's renewal task), asleep a
//! third of the lease (a tick), then a renew script that resets the expiry if our field is
//! there, and so on until `unlock()` stops it (at its sleep; a renewal out is waited for, as the
//! driver's release waits for the task). The holder's lease is the one the watchdog last
//! renewed. The watchdog tells the holder its lease is lost when the server says our field is
//! gone, or expired when renewals kept failing for a whole lease; `--mutant redisson-775` is
//! Redisson issue 775, a watchdog that is not rescheduled after one failed renewal and ends
//! without telling anyone. A **waiter** does not poll: it subscribes to the lock's channel
//! while in `lock()`, and after an attempt finds the lock taken it sleeps until the holder's
//! TTL runs out or an unlock message arrives, whichever comes first. The release script
//! deletes the key at count 0 and publishes the unlock message; the model carries it to every
//! subscribed waiter as a message of its own (delivered at a step of its own, in any order
//! with the others, but within the tick: time does not pass while one is on its way), and the
//! `lost-notification` fault drops one. The library's Redisson holder also checks its clock
//! against the lease before each use, as the others do (Redisson itself offers no such
//! check: its users trust the watchdog).
//!
//! **Redisson's fair lock** (`--model redisson-fair`): the same hash, watchdog and release
//! count, with the fair scripts: a waiter joins a queue (a list, and a deadline per waiter on
//! the *caller's* clock, `threadWaitTime` 5 s = 5 ticks here) and takes the lock only when it is
//! free and the waiter is first in line; the release tells the first waiter alone, on its own
//! channel. Its extra claim is **F-order**: the lock goes to the `lock()` calls in the order
//! their first request reached the server (the model notes that order, and "served" when the
//! key takes a call's token, whether or not the reply arrives); a waiter that a script drops
//! from the queue because its deadline passed has lost its place by the lock's design and is
//! excused. It needs a call that can queue behind another (2 x 2 or 3 clients), so 2 x 1 does
//! not check it. `--mutant redisson-fair-barging` is a planted unfair variant: the acquire runs
//! the RLock's script, so whoever asks when the lock is free takes it; F-order catches it in
//! 12 steps (pinned in `models/tests/redisson_fair.rs`, with the counts of every fault).
//!
//! ## ZooKeeper (Curator) and etcd
//!
//! The coordination services' locks run in this model too (their servers and settings are in
//! [`crate::coord`]): the library's [`cassalock::algo::family::CuratorLock`] against the
//! library's `ZnodeTree`, and [`cassalock::algo::family::EtcdLock`] against `EtcdKeyspace` with
//! `DeletionWatches`. Neither has a key the server expires on a TTL of the lock's own: the node
//! (key) lives as long as the client's *session*, and the server judges the session on its own
//! clock. Both locks queue (the lowest sequence, the first create revision holds) and a waiter
//! watches its predecessor: the **watch fires as a message to the watching client** (as
//! Redisson's unlock message, at a step of its own within the tick), so `lost-notification` is a
//! missed watch event. Both tokens grow (the node's czxid, the key's create revision), so their
//! **resource fences**: it refuses a token below the highest it accepted, T1-resource there
//! means it accepted no stale token and none that another acquisition wrote with, and **C-token**
//! checks that a holder whose node (key) the server still has holds a token above every earlier
//! holder's (a holder whose reply arrived after its node went is a stale holder: the fence is
//! what stops it). Neither has a failover in the model (one server: a quorum ensemble does not
//! lose acknowledged writes that way); a restart keeps everything (both persist).
//!
//! **ZooKeeper** (`--model zookeeper`): Curator's `InterProcessMutex` as the library writes it
//! (`acquire()` without a time: it waits on the watch alone, no recheck). Each client opens a
//! session (timeout 2 ticks) when the run starts; the lock's directory exists already. The
//! session is kept alive by the client process's **heartbeat**, which the model delivers at
//! every tick for every client not paused; the server expires a session not heard from for more
//! than the timeout, deleting its ephemeral node in the same transaction, and the predecessor's
//! watch fires for the next waiter. A client whose heartbeat (or request) finds its session
//! expired opens a new one, and a waiter of the expired session is woken (every watcher gets
//! the Expired event). Curator's holder has **no bound of its own** (`valid_until_us` is
//! `u64::MAX`): it believes until something tells it, and the recipe tells it nothing. So a
//! **pause** past the session timeout breaks **T1-belief**: the paused holder's session expires,
//! the waiter holds, and the paused holder still believes (its write is refused by the fence:
//! T1-resource holds). A clock jump past the session timeout does the same to every session at
//! once (the model jumps by the timeout plus a tick: a session heard from this very tick
//! survives a jump of exactly the timeout). A lost create reply is ridden out (Curator's
//! protected mode: the machine lists the directory for its guid). A lost watch event leaves the
//! waiter asleep on a free lock with no timeout of its own (the figure reads 254 ticks: until
//! the clock's bound, where the model ends every sleep; the liveness check cannot see past it).
//! A node has no TTL: a release that returned `Failed` counts for **C-release** (nothing would
//! ever free what it left while the session lives). `--mutant curator-678` (CURATOR-678, with
//! `--fault store-failure`): a release whose delete is lost gives up and forgets the node; it
//! stays for ever, C-release breaks in 10 steps, and the other waiter starves until the bound.
//!
//! **etcd** (`--model etcd`): etcd's mutex with a session per acquisition (lease TTL 3 ticks,
//! so the keep-alive, every third of it, is a whole tick). A waiter wakes every keep-alive period
//! to keep its session alive (and reads again), or when its watch on the predecessor's deletion
//! fires; the holder's **keep-alive** is its renewal lane (as Redisson's watchdog: C-lost is
//! checked). Leases expire on the server's clock (at every tick, and before every request); a
//! holder believes for the TTL from its last keep-alive that got through (`EtcdLease`), which is
//! never later than the server's deadline, so a pause breaks nothing but what the fence stops.
//! A clock jump by the TTL expires every lease at once. **A finding** (store-failure): when the
//! session's grant applies and its reply is lost, the retry is answered "lease already exists"
//! and the library's `EtcdAcquire` counted the lease from the *retry's* send, a tick after the
//! grant that set the server's deadline: its holder believed a tick past its lease, and the
//! other client held meanwhile (T1-belief VIOLATED in 17 steps). Fixed: a grant answered
//! "exists" now counts from the first grant's send (unit test in `mutex.rs`), which also makes
//! the machine's state carry that send (the counts below grew by about a quarter). etcd issue 11456 (`--mutant etcd-11456`: held after the wait
//! without reading its own key) needs a lease the server expires before the client's own bound
//! ends, which only a clock jump or that lost grant reply gives in this model, and both break
//! T1-belief without the mutant too: at 2 x 1 the model does not tell the mutant apart by its
//! verdicts. The watch history is kept short (2 events: a watch from before it is answered
//! "compacted" and the waiter reads again), and a waiter's new watch cancels its last one (as
//! etcd's client does when `waitDeletes` returns).
//!
//! A lost watch message costs an etcd waiter at most a tick (it wakes every keep-alive period
//! and reads again); a pause, a restart and a lost request break nothing else.
//!
//! Sizes and outcomes, pinned in `models/tests/coord.rs` (2 clients x 1 acquisition):
//! ZooKeeper's worlds are small and explored whole within their clock bound (4 ticks): 1,492
//! states without a fault, 2,613 under a pause (T1-belief VIOLATED), 13,658 with a lost request
//! or reply, 2,930 under a restart, 18,100 under a clock jump (T1-belief VIOLATED), 1,568 with a
//! lost watch (the waiter sleeps until the bound); 19,026 at 2 x 2 without a fault. etcd's are
//! larger (clock bound 5 ticks): 842,273 states without a fault, 1,138,762 under a pause,
//! 2,611,052 under a restart, 1,015,961 with a lost watch (all holding within the bound),
//! 2,926,781 under a clock jump (T1-belief VIOLATED); with a lost request or reply the world
//! passes 5 million states: before the fix below T1-belief was VIOLATED in 17 steps (the finding
//! above); since, nothing is violated in the first 5 million states and every claim is bounded
//! by the state budget.
//!
//! ## What the model runs
//!
//! The clients step the library's own machines, unchanged: for `SET NX`, [`SetNxLock`]'s
//! `SetNxAcquire` (waiting, `Patience::Wait`, no deadline), `SetNxExtend` and `SetNxRelease`
//! (`cassalock::algo::redis::set_nx`); for the others, [`RedlockLock`]'s and
//! [`MemcachedLock`]'s. The model decides nothing about the lock: it carries the machines'
//! requests to the server, hands them the replies, ends their sleeps, reads their outcomes
//! through [`FamilyLock`], and plays the user's code around them. Each client runs
//! `--acquisitions` rounds of:
//!
//! 1. `lock()`: the acquire machine until it returns;
//! 2. *use*: check `now < lease.valid_until_us` on its own clock, and if so write to the
//!    resource (two steps: the check, then the write);
//! 3. with `--extend`: extend once (the extension machine), then *use* again with the new lease;
//! 4. `unlock()`: the release machine, always (as a `finally` block would), even when the lease
//!    is known to be lost.
//!
//! The server is one [`RedisKeyspace`] (for `--fault failover`, a [`ReplicatedRedis`] primary
//! and replica): the store's rules exist once, in the library, and the model calls them.
//!
//! **Requests travel.** A store request the machine asks for is *sent* at the client's step (the
//! machine reads the client clock then: that is the instant a lease counts from), *applied* by
//! the server at a later step of its own (on the server's clock, which may have moved on), and
//! its reply is *received* at a later step of the client. So two clients' requests interleave in
//! every order, and time can pass while one is in flight. Nothing is lost unless the
//! store-failure fault loses it.
//!
//! **Time** is a global tick counter, from 1 up to a bound (`2 + TTL + acquisitions - 1` ticks;
//! Redisson's lease is 3 ticks where the others' TTL is 2, below);
//! a tick is one second of the machines' config. The clients' clocks read it; the server's
//! clock reads it plus a jump (0 unless the clock-jump fault fired). TTL is 2 ticks, the drift
//! margin the library's default 1%, so a lease acquired with a send at tick `s` is believed
//! while the client clock is at most `s + 1`, and its key lives through server tick `a + 2`,
//! where `a >= s` is when it was applied. A sleep ends when the client's clock reaches its
//! wake-up tick (the machines sleep whole ticks: retry every 1 s, back off 1 s). Time may not
//! pass between a client's check and its write: that gap is the pause fault's, and nothing
//! else's. At the bound time stops, and a sleep there ends at once, so waiters keep retrying
//! and a starvation shows as a cycle at the bound (reported bounded) rather than as a deadlock.
//! (Not a renewal lane's sleep: a watchdog renewing for ever while time stands still would show
//! nothing new.) Every verdict is "within the bound": `holds within bound (clock <= N ticks)`.
//! Redisson's lease is 3 ticks, so that the watchdog's third of it is a whole tick and one
//! failed renewal leaves a tick to spare: a lease renewed with a send at `s` is believed while
//! the clock is below `s + 2.97`; its clock bound is 5.
//!
//! **The resource** is a register that records the last writer (the acquisition's grant number:
//! the order in which acquisitions returned). Without fencing (a random token only names its
//! holder; it does not grow) it accepts every write; the model only notes a write from an
//! acquisition older than one that already wrote.
//!
//! **State reduction:** expired keys are purged from the single server after every step (every
//! command treats an expired key as absent, and the server clock never goes back, so no reply
//! changes). The replicated pair keeps Redis's lazy expiry, whose `DEL`s travel to the replica.
//! Redisson's model keeps the promoted primary alone after its failover (no second failover
//! comes, so its fresh replica can no longer matter), which lets its world end: its watchdog's
//! renewals fill the replication stream with batches.
//!
//! ## Faults (`--fault`, each at most once per run, by an injector bound by no fairness)
//!
//! | fault | what happens | premise it breaks |
//! |---|---|---|
//! | `none` | | |
//! | `pause` | t0, between checking its lease and writing, stops taking steps while time passes (Kleppmann's GC pause); it resumes at least a tick later, on its own (fairly); not at the bound, where no time is left to pass | the check and the use are one instant |
//! | `store-failure` | one request is lost before the server sees it (the client is told `Unavailable`, as in the Cassandra models: nothing applied) or its reply after it applied (`Timeout`: it may have); the machines retry once (`max_retries` 1), so one loss never exhausts a call (the tests also run two losses in a row, where `lock()` gives up and cleans up) | every request is answered |
//! | `restart` | the server restarts without persistence (`Persistence::None`): every key is gone | an acknowledged key stays until its TTL |
//! | `failover` | the primary acknowledges, the replica is promoted before the write reached it: the batches in flight are lost (`ReplicatedRedis::failover`); replication otherwise delivers batches in order, fairly | same |
//! | `server-clock-jump` | the server's clock jumps forward by the TTL: a key expires early | the server's clock runs at the client's rate |
//! | `lost-notification` | (Redisson) one unlock message is lost on its way to a waiter | a waiter hears of every release |
//!
//! For Redisson the pause stops the whole process, its watchdog too (a GC pause stops every
//! thread), and a lost request may be the watchdog's.
//! ## Properties (claim IDs of docs/claims.md and docs/contract.md)
//!
//! | property | kind | meaning |
//! |---|---|---|
//! | T1-belief | always | no two clients believe at once that they hold the lock: acquired, not yet calling unlock, not told the lease is lost, own clock below `valid_until` |
//! | T1-resource | always | the resource never receives a write from an acquisition after a later acquisition wrote (without fencing nothing stops it) |
//! | C-free | always | a `lock()` that failed or gave up saying it left nothing leaves no key holding its token |
//! | C-release | always | an acquisition whose `unlock()` returned (released, not ours, or gone either way) leaves no key holding its token (the K3 question for Redis: a released lock taken by nobody) |
//! | T2 | always | no `lock()` returns without the lock while the store answers (Redlock's attempts can run out under contention; the others wait for ever) |
//! | T2 | liveness | every client that calls `lock()` acquires (our fair-cycle check; a starvation that depends on the clock's bound is bounded) |
//! | C-lost | always | (Redisson) a holder that a later acquisition overtook has been told its lease is lost (by its watchdog, or its own check found the lease run out), or its watchdog still runs, and so asks the server again within a third of the lease: never a holder left with nothing that would tell it |
//!
//! Figures: C-free, how many `lock()` calls gave up; C-release, how long a released key stays
//! live; and for Redisson how long a waiter still sleeps on a free lock with no unlock message
//! on its way to it (what a lost message costs: the rest of the holder's TTL).
//!
//! The outcome, pinned in `models/tests/redis_set_nx.rs`: with no fault everything holds (T2
//! too), with or without the extension; a pause breaks T1-resource but not T1-belief (the
//! paused client's clock ran past its lease: it would know, if it looked, and it writes
//! anyway); a restart without persistence, a failover and a server clock jump each break
//! T1-belief (and so T1-resource). A failover also breaks C-release: a release's delete that
//! the replica had not received is lost, while the acquiring `SET` had reached it, so the
//! released key comes back, taken by nobody until its TTL (the report's figure says for how
//! long; T2 is then bounded: only the clock's bound keeps that TTL from running out). A lost
//! request or reply breaks nothing: the acquire machine reads the key after a nil that may hide
//! its own earlier `SET`, and every call leaves nothing behind.
//!
//! Redlock and Memcached, pinned in `models/tests/family.rs`: Redlock keeps T1 with no fault
//! and loses it (T1-belief) to a restart or a clock jump of one master; a pause breaks
//! T1-resource for all three; Redlock's `lock()` can return empty-handed when two clients split
//! the masters (T2 always VIOLATED, T2 liveness holds: the client stops asking); a lost
//! request or reply keeps C-free and C-release (the give-up and the release ask the masters
//! that did not answer again, and say so when one never answers). Memcached
//! keeps everything with no fault and with lost requests, and loses T1 to a restart or a clock
//! jump, like `SET NX`.
//!
//! Redisson, pinned in `models/tests/redisson.rs`: everything holds with no fault (41,607
//! states) and with one lost request or reply, a renewal's included (the watchdog renews at its
//! next tick); a lost unlock message breaks nothing but costs the waiter up to the holder's
//! TTL (3 ticks; never without the fault); a pause longer than the lease breaks T1-resource; a
//! restart, a failover and a clock jump break T1-belief (the watchdog's next renewal then finds
//! the field gone and tells the holder: C-lost holds), and a failover brings back a released
//! key (C-release). The issue-775 mutant, with one lost renewal, breaks C-lost and nothing
//! else: its watchdog ends quietly, the key runs out, the other client takes the lock, and the
//! holder is never told. T1-belief still holds, because the library's holder checks its own
//! clock against the last renewal's lease; a Redisson user, who has no such check and trusts
//! the watchdog, would go on as the holder: Redisson's two holders.
//!
//! ## What the model cannot see
//!
//! Durations below a tick (requests take no time; a server apply and a client step are
//! instants), clock *rates* (the clocks move together; only the jump separates them), client
//! clocks that disagree with each other, more than one fault per run, Redis Cluster or Sentinel
//! (one primary, one replica), persistence settings between none and every write, a request
//! applied after its client gave up on it (a late duplicate: a request is either answered,
//! lost before applying, or applied with its reply lost), and anything past the clock's bound.
//! Redisson's reentrancy (each acquisition is its own owner, as in the family driver), a lease
//! time given to `lock()` (no watchdog), resubscription after a restart (a waiter's
//! subscription survives it here). The bounds are small (2 clients, 1 acquisition, 4 ticks by
//! default, 5 for Redisson): a verdict "holds" is about this world only.

use std::convert::Infallible;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use cassalock::algo::etcd::mutex::EtcdMutants;
use cassalock::algo::family::{
    Acquisition, Extension, FamilyLock, MemcachedLock, RedissonFairLock, RedissonLock, RedlockLock, Release,
    RenewalEnd, SetNxLock,
};
use cassalock::algo::memcached::MemcachedLockConfig;
use cassalock::algo::redis::redisson::{RedissonConfig, RedissonLease, RedissonMutants, Watchdog};
use cassalock::algo::redis::redlock::{RedlockConfig, RedlockMutants, ToMaster};
use cassalock::algo::redis::set_nx::Patience;
use cassalock::algo::redis::RedisLockConfig;
use cassalock::algo::zookeeper::curator_mutex::CuratorMutants;
use cassalock::algo::{Action, Input, Leftover, Machine, RetryPolicy, SleepKind, Step, StepTag};
use cassalock::store::memcached::{Memcached, MemcachedCommand};
use cassalock::store::redis_keyspace::{
    fair_queue_key, Persistence, RedisCommand, RedisKeyspace, RedisReply, RedisValue,
};
use cassalock::store::redis_replication::ReplicatedRedis;
use cassalock::store::{StoreFailure, MICROS_PER_SECOND};
use stateright::{Model, Property};

use crate::check::{CheckedModel, Measure};
use crate::liveness::{Fairness, Obligation};
use crate::lock_world::parse_model_thread;
use crate::Fault;

/// The key every client contends for.
pub const KEY: &str = "lock";
/// The key's TTL, in ticks (one tick is one second of the machines' config).
pub const TTL_TICKS: u8 = 2;
/// Clocks start here.
const FIRST_TICK: u8 = 1;
pub(crate) const MILLIS_PER_TICK: u64 = 1000;
/// A machine that draws more often than this between two actions is broken.
const MAX_DRAWS_IN_A_ROW: usize = 8;
/// Unlock messages counted on their way to one waiter (more collapse into this many: only a
/// second release within one tick could send more).
const MAX_MESSAGES_IN_FLIGHT: u8 = 2;

/// An acquisition's place in the order in which acquisitions returned (0 first).
pub type Grant = u8;

// ---- the families ----

/// What a model state may hold: stateright hashes, compares and clones states across threads.
pub trait ModelState: Clone + fmt::Debug + Eq + Hash + Send + Sync + 'static {}
impl<T: Clone + fmt::Debug + Eq + Hash + Send + Sync + 'static> ModelState for T {}

/// A lock the model can run: the library's [`FamilyLock`], its server as the model steps it,
/// and how the model configures it.
pub trait ModelFamily:
    FamilyLock<
        AcquireMachine: ModelState,
        ExtendMachine: ModelState,
        ReleaseMachine: ModelState,
        Lease: ModelState,
        Command: ModelState,
        Reply: ModelState,
        Config: Clone,
    > + ModelState
    + Default
{
    type Server: ModelServer<Command = Self::Command, Reply = Self::Reply>;

    /// The holder's background renewal lane as the model keeps it in its state: the library's
    /// [`FamilyLock::RenewalMachine`] (Redisson's watchdog), or [`NoLane`] for the locks that
    /// have none (the library's `NoRenewal` is not a state stateright can hash).
    type Lane: ModelState + Machine<Config = Self::Config, Command = Self::Command, Reply = Self::Reply>;

    /// The model's CLI name (`redis-set-nx`).
    const MODEL: &'static str;

    /// The key's time to live (the lease), in ticks.
    const TTL_TICKS: u8 = TTL_TICKS;

    /// The lock's holders run a renewal lane (with the settings the model gives them).
    const RENEWAL_LANE: bool = false;

    /// The lock promises its waiters first come, first served (Redisson's fair lock): the
    /// model notes the order in which their `lock()` calls reached the server, and checks F-order.
    const FIFO: bool = false;

    /// The holder's token grows from one holder to the next (ZooKeeper's czxid, etcd's create
    /// revision): the resource fences with it (it refuses a token below the highest it has
    /// seen), and the model checks C-token (every holder's token above every earlier holder's).
    const FENCING: bool = false;

    /// A released or abandoned key has no TTL of its own (a ZooKeeper node lives as long as its
    /// session): an `unlock()` that returned `Failed` counts for C-release too, since nothing
    /// would ever free what it left.
    const KEYS_OUTLIVE_FAILURES: bool = false;

    /// The server's queue of waiters, first in line first (F-order; empty for a lock without).
    fn queue(_server: &Self::Server) -> Vec<String> {
        Vec::new()
    }

    /// A new holder's renewal lane ([`FamilyLock::renewal`]), if the lock has one.
    fn lane(_lease: &Self::Lease, _config: &Self::Config) -> Option<Self::Lane> {
        None
    }

    /// How the lane's end reads ([`FamilyLock::renewal_ended`]).
    fn lane_ended(output: <Self::Lane as Machine>::Output) -> RenewalEnd;

    /// The lease as the lane has left it ([`FamilyLock::renewed_lease`]).
    fn lane_lease(lane: &Self::Lane) -> Self::Lease;

    /// The faults this lock's model has.
    fn supports(fault: Fault) -> bool;

    /// The machines' config for a TTL of `ttl_ticks` ticks of `ms_per_tick`, retrying every tick.
    fn config(ttl_ticks: u8, ms_per_tick: u64, extend: bool, mutants: &FamilyMutants) -> Self::Config;

    fn server(fault: Fault) -> Self::Server;

    /// The lock as the title line names it: `redis-set-nx (SET NX PX, compare-and-delete)`.
    fn describe_lock(config: &Self::Config, extend: bool) -> String;

    /// Its timing, for the title line: `TTL 2 ticks, drift 10000 ppm, retry every tick`.
    fn describe_timing(config: &Self::Config) -> String;

    /// The client time a lease counts from (the send of the request that set its expiry);
    /// `None` when the machine gave the validity itself (Redlock: TTL minus the round's time).
    fn counted_from_us(lease: &Self::Lease) -> Option<u64>;

    /// The title's words for a server fault.
    fn describe_fault(fault: Fault) -> String {
        match fault {
            Fault::Restart => "the server may restart without persistence".to_owned(),
            Fault::Failover => "the replica may be promoted before it has the primary's writes".to_owned(),
            Fault::ServerClockJump => "the server's clock may jump forward by the TTL".to_owned(),
            other => other.name().to_owned(),
        }
    }
}

/// Known client bugs a model may switch on (`--mutant`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FamilyMutants {
    pub redlock: RedlockMutants,
    pub redisson: RedissonMutants,
    pub curator: CuratorMutants,
    pub etcd: EtcdMutants,
}

/// The renewal lane of a lock that has none: a machine that cannot be built (the model's own
/// twin of the library's `NoRenewal`, with the traits a state needs).
pub struct NoLane<K, C, R>(pub(crate) Infallible, LaneTypes<K, C, R>);

/// Names the types a [`NoLane`] would run with (and nothing else: `fn` keeps it `Send`).
type LaneTypes<K, C, R> = PhantomData<fn() -> (K, C, R)>;

impl<K, C, R> Clone for NoLane<K, C, R> {
    fn clone(&self) -> Self {
        match self.0 {}
    }
}

impl<K, C, R> fmt::Debug for NoLane<K, C, R> {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {}
    }
}

impl<K, C, R> PartialEq for NoLane<K, C, R> {
    fn eq(&self, _: &Self) -> bool {
        match self.0 {}
    }
}

impl<K, C, R> Eq for NoLane<K, C, R> {}

impl<K, C, R> Hash for NoLane<K, C, R> {
    fn hash<H: Hasher>(&self, _: &mut H) {
        match self.0 {}
    }
}

impl<K, C, R> NoLane<K, C, R> {
    /// Anything at all, since no such lane exists: a lock without a renewal lane answers
    /// [`ModelFamily::lane_lease`] with it.
    pub fn unreachable<T>(&self) -> T {
        match self.0 {}
    }
}

impl<K, C, R> Machine for NoLane<K, C, R> {
    type Config = K;
    type Output = RenewalEnd;
    type Command = C;
    type Reply = R;

    fn resume(&mut self, _: &K, _: Input<R>, _: u64) -> Step<RenewalEnd, C> {
        match self.0 {}
    }
}

/// [`ModelFamily`]'s lane functions for a lock without a renewal lane.
macro_rules! no_lane {
    () => {
        fn lane_ended(output: RenewalEnd) -> RenewalEnd {
            output
        }

        fn lane_lease(lane: &Self::Lane) -> Self::Lease {
            match lane.0 {}
        }
    };
}
pub(crate) use no_lane;

/// A server (or Redlock's masters) as the model steps it: the library's value types, with the
/// faults of the model's runs.
pub trait ModelServer: ModelState {
    type Command: ModelState + fmt::Display;
    type Reply: ModelState + fmt::Display;

    /// Apply a client's command when the clients' clock reads `now_tick`: the reply, and the
    /// reading (ms) of the clock of the server that applied it.
    fn apply(&mut self, command: &Self::Command, now_tick: u8) -> (Self::Reply, u64);

    /// [`Self::apply`], with the channels the command published on (Redis pub/sub: Redisson's
    /// release publishes the unlock message).
    fn apply_publishing(&mut self, command: &Self::Command, now_tick: u8) -> (Self::Reply, u64, Vec<String>) {
        let (reply, server_now_ms) = self.apply(command, now_tick);
        (reply, server_now_ms, Vec::new())
    }

    /// [`Self::apply_publishing`] for client `client` (a server that keeps per-client state:
    /// ZooKeeper's sessions, etcd's watches); the channels may name a client (`watch:t1`).
    fn apply_from(&mut self, client: usize, command: &Self::Command, now_tick: u8) -> (Self::Reply, u64, Vec<String>) {
        let _ = client;
        self.apply_publishing(command, now_tick)
    }

    /// The clients connect when the run starts (ZooKeeper: each opens its session).
    fn connect(&mut self, _clients: usize, _now_tick: u8) {}

    /// The server's clock has moved (a tick, a jump, a restart): what it does on its own then
    /// (ZooKeeper: the heartbeats of the clients that are `beating` arrive and sessions not
    /// heard from within their timeout expire; etcd: expired leases are revoked), and the
    /// channels it told (fired watches, naming their client: `watch:t1`).
    fn pass_time(&mut self, _now_tick: u8, _beating: &[bool]) -> Vec<String> {
        Vec::new()
    }

    /// A read: losing its reply after it applied is the same as losing the request before.
    fn is_read(command: &Self::Command) -> bool;

    /// Replication batches in flight to a replica.
    fn pending_batches(&self) -> usize {
        0
    }

    /// Deliver the oldest batch to the replica.
    fn replicate(&mut self) {}

    /// Promote the replica; how many acknowledged batches were lost.
    fn failover(&mut self) -> usize {
        0
    }

    /// A restart would lose something.
    fn can_restart(&self) -> bool;

    /// Restart without persistence; what happened, for the trace.
    fn restart(&mut self) -> String;

    /// A server clock jumps forward by `ticks`; what happened, for the trace.
    fn clock_jump(&mut self, ticks: u8, now_tick: u8) -> String;

    /// Drop what no command can tell from absent (expired keys on a clock that never goes back).
    fn canonical(&mut self, now_tick: u8);

    /// The live values of the lock's key on every instance, with the milliseconds each still
    /// lives (on its server's clock; `None`: no expiry).
    fn live_tokens(&self, now_tick: u8) -> Vec<(String, Option<u64>)>;

    /// The server's clock(s) and key(s), for a state line: `(server 3) | key: t0:0 through 5`.
    fn describe(&self, now_tick: u8) -> String;
}

pub(crate) fn ms_of_tick(tick: u8) -> u64 {
    u64::from(tick) * MILLIS_PER_TICK
}

fn show_redis_key(keyspace: &RedisKeyspace, server_now_ms: u64) -> String {
    match keyspace.live_entry(KEY, server_now_ms) {
        None => "-".to_owned(),
        Some(entry) => {
            let value = match &entry.value {
                RedisValue::Text(text) => text.clone(),
                RedisValue::Hash(hash) => format!("{hash:?}"),
                RedisValue::List(items) => format!("{items:?}"),
                RedisValue::SortedSet(scores) => format!("{scores:?}"),
            };
            match entry.expires_at_ms {
                Some(at) => format!("{value} through {}", at / MILLIS_PER_TICK),
                None => value,
            }
        }
    }
}

/// The token the lock's key holds: a `SET NX` key's value, or the owner field of Redisson's
/// hash (one field, with a count above 0, in every state these scripts reach).
fn redis_live_token(keyspace: &RedisKeyspace, server_now_ms: u64) -> Option<(String, Option<u64>)> {
    let entry = keyspace.live_entry(KEY, server_now_ms)?;
    let left_ms = entry.expires_at_ms.map(|at| at.saturating_sub(server_now_ms));
    match &entry.value {
        RedisValue::Text(value) => Some((value.clone(), left_ms)),
        RedisValue::Hash(hash) => hash
            .iter()
            .find(|(_, count)| **count > 0)
            .map(|(owner, _)| (owner.clone(), left_ms)),
        RedisValue::List(_) | RedisValue::SortedSet(_) => None,
    }
}

/// The Redis server of `redis-set-nx`: one instance, or (`--fault failover`) a primary, its
/// replica and the batches between them; its clock reads the clients' plus a jump.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RedisServer {
    pub instance: RedisInstance,
    pub ahead_ticks: u8,
    /// After the run's one failover, keep the promoted primary alone (its fresh replica can
    /// no longer matter: no second failover comes), with expired keys dropped as a single
    /// server's are. Redisson's model does, to stay checkable (its watchdog's renewals fill
    /// the replication stream); `SET NX`'s keeps the pair, as its pinned counts were taken.
    pub single_after_failover: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RedisInstance {
    Single(RedisKeyspace),
    Replicated(ReplicatedRedis),
}

impl RedisServer {
    /// One instance, or (`--fault failover`) a primary and its replica.
    fn new(fault: Fault) -> Self {
        RedisServer {
            instance: if fault == Fault::Failover {
                RedisInstance::Replicated(ReplicatedRedis::new())
            } else {
                RedisInstance::Single(RedisKeyspace::new())
            },
            ahead_ticks: 0,
            single_after_failover: false,
        }
    }

    /// The key space clients talk to.
    pub fn primary(&self) -> &RedisKeyspace {
        match &self.instance {
            RedisInstance::Single(keyspace) => keyspace,
            RedisInstance::Replicated(pair) => pair.primary(),
        }
    }

    fn now_ms(&self, now_tick: u8) -> u64 {
        ms_of_tick(now_tick + self.ahead_ticks)
    }
}

impl ModelServer for RedisServer {
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn apply(&mut self, command: &RedisCommand, now_tick: u8) -> (RedisReply, u64) {
        let (reply, now_ms, _) = self.apply_publishing(command, now_tick);
        (reply, now_ms)
    }

    fn apply_publishing(&mut self, command: &RedisCommand, now_tick: u8) -> (RedisReply, u64, Vec<String>) {
        let now_ms = self.now_ms(now_tick);
        let executed = match &mut self.instance {
            RedisInstance::Single(keyspace) => keyspace.execute(command, now_ms),
            RedisInstance::Replicated(pair) => pair
                .apply(command, now_ms)
                .expect("a bounded run sends far fewer requests than the replication stream's cap"),
        };
        let channels = executed.published.into_iter().map(|message| message.channel).collect();
        (executed.reply, now_ms, channels)
    }

    fn is_read(command: &RedisCommand) -> bool {
        matches!(command, RedisCommand::Get { .. } | RedisCommand::HGet { .. })
    }

    fn pending_batches(&self) -> usize {
        match &self.instance {
            RedisInstance::Single(_) => 0,
            RedisInstance::Replicated(pair) => pair.pending_len(),
        }
    }

    fn replicate(&mut self) {
        if let RedisInstance::Replicated(pair) = &mut self.instance {
            pair.deliver(1);
        }
    }

    fn failover(&mut self) -> usize {
        match &mut self.instance {
            RedisInstance::Replicated(pair) => {
                let lost = pair.failover();
                if self.single_after_failover {
                    self.instance = RedisInstance::Single(pair.primary().clone());
                }
                lost
            }
            RedisInstance::Single(_) => 0,
        }
    }

    fn can_restart(&self) -> bool {
        matches!(&self.instance, RedisInstance::Single(keyspace) if !keyspace.is_empty())
    }

    fn restart(&mut self) -> String {
        if let RedisInstance::Single(keyspace) = &mut self.instance {
            keyspace.crash_restart(Persistence::None);
        }
        "the server RESTARTS without persistence: every key is gone".to_owned()
    }

    fn clock_jump(&mut self, ticks: u8, now_tick: u8) -> String {
        self.ahead_ticks = ticks;
        format!(
            "the server's clock JUMPS forward by the TTL: {} -> {}",
            now_tick,
            now_tick + ticks
        )
    }

    fn canonical(&mut self, now_tick: u8) {
        let now_ms = self.now_ms(now_tick);
        // The replicated pair keeps Redis's lazy expiry: its DELs travel to the replica.
        if let RedisInstance::Single(keyspace) = &mut self.instance {
            keyspace.purge_expired(now_ms);
        }
    }

    fn live_tokens(&self, now_tick: u8) -> Vec<(String, Option<u64>)> {
        redis_live_token(self.primary(), self.now_ms(now_tick))
            .into_iter()
            .collect()
    }

    fn describe(&self, now_tick: u8) -> String {
        let now_ms = self.now_ms(now_tick);
        let replica = match &self.instance {
            RedisInstance::Single(_) => String::new(),
            RedisInstance::Replicated(pair) => format!(
                " | replica key: {}, {} batch(es) pending",
                show_redis_key(pair.replica(), now_ms),
                pair.pending_len()
            ),
        };
        format!(
            "(server {}) | key: {}{replica}",
            now_ms / MILLIS_PER_TICK,
            show_redis_key(self.primary(), now_ms)
        )
    }
}

/// The number of Redlock masters in the model.
pub const REDLOCK_MASTERS: usize = 3;

/// Redlock's independent masters; the faults strike master 0 (a restart without persistence,
/// a clock jump).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RedlockMasters {
    pub masters: Vec<RedisKeyspace>,
    pub ahead_ticks: Vec<u8>,
}

impl RedlockMasters {
    fn now_ms(&self, master: usize, now_tick: u8) -> u64 {
        ms_of_tick(now_tick + self.ahead_ticks[master])
    }
}

impl ModelServer for RedlockMasters {
    type Command = ToMaster;
    type Reply = RedisReply;

    fn apply(&mut self, command: &ToMaster, now_tick: u8) -> (RedisReply, u64) {
        let now_ms = self.now_ms(command.master, now_tick);
        (self.masters[command.master].apply(&command.command, now_ms), now_ms)
    }

    fn is_read(command: &ToMaster) -> bool {
        RedisServer::is_read(&command.command)
    }

    fn can_restart(&self) -> bool {
        !self.masters[0].is_empty()
    }

    fn restart(&mut self) -> String {
        self.masters[0].crash_restart(Persistence::None);
        "master 0 RESTARTS at once without persistence: its keys are gone".to_owned()
    }

    fn clock_jump(&mut self, ticks: u8, now_tick: u8) -> String {
        self.ahead_ticks[0] = ticks;
        format!(
            "master 0's clock JUMPS forward by the TTL: {} -> {}",
            now_tick,
            now_tick + ticks
        )
    }

    fn canonical(&mut self, now_tick: u8) {
        for master in 0..self.masters.len() {
            let now_ms = self.now_ms(master, now_tick);
            self.masters[master].purge_expired(now_ms);
        }
    }

    fn live_tokens(&self, now_tick: u8) -> Vec<(String, Option<u64>)> {
        (0..self.masters.len())
            .filter_map(|m| redis_live_token(&self.masters[m], self.now_ms(m, now_tick)))
            .collect()
    }

    fn describe(&self, now_tick: u8) -> String {
        let clocks: Vec<String> = (0..self.masters.len())
            .map(|m| (self.now_ms(m, now_tick) / MILLIS_PER_TICK).to_string())
            .collect();
        let keys: Vec<String> = (0..self.masters.len())
            .map(|m| show_redis_key(&self.masters[m], self.now_ms(m, now_tick)))
            .collect();
        format!("(masters {}) | keys: {}", clocks.join(" "), keys.join(", "))
    }
}

/// One Memcached server; its clock reads the clients' plus a jump.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemcachedServer {
    pub items: Memcached,
    pub ahead_ticks: u8,
}

impl MemcachedServer {
    fn now_ms(&self, now_tick: u8) -> u64 {
        ms_of_tick(now_tick + self.ahead_ticks)
    }
}

impl ModelServer for MemcachedServer {
    type Command = MemcachedCommand;
    type Reply = cassalock::store::memcached::MemcachedReply;

    fn apply(&mut self, command: &MemcachedCommand, now_tick: u8) -> (Self::Reply, u64) {
        let now_ms = self.now_ms(now_tick);
        (self.items.apply(command, now_ms), now_ms)
    }

    fn is_read(command: &MemcachedCommand) -> bool {
        matches!(command, MemcachedCommand::Get { .. } | MemcachedCommand::Gets { .. })
    }

    fn can_restart(&self) -> bool {
        !self.items.is_empty()
    }

    fn restart(&mut self) -> String {
        self.items.crash_restart();
        "the server RESTARTS (Memcached keeps nothing): every item is gone".to_owned()
    }

    fn clock_jump(&mut self, ticks: u8, now_tick: u8) -> String {
        self.ahead_ticks = ticks;
        format!(
            "the server's clock JUMPS forward by the TTL: {} -> {}",
            now_tick,
            now_tick + ticks
        )
    }

    fn canonical(&mut self, now_tick: u8) {
        let now_ms = self.now_ms(now_tick);
        self.items.purge_expired(now_ms);
    }

    fn live_tokens(&self, now_tick: u8) -> Vec<(String, Option<u64>)> {
        let now_ms = self.now_ms(now_tick);
        self.items
            .live_items(now_ms)
            .filter(|(key, _)| *key == KEY)
            .map(|(_, item)| {
                (
                    item.value.clone(),
                    item.expires_at_s.map(|at_s| (at_s * 1000).saturating_sub(now_ms)),
                )
            })
            .collect()
    }

    fn describe(&self, now_tick: u8) -> String {
        let now_ms = self.now_ms(now_tick);
        let item = match self.items.live_items(now_ms).find(|(key, _)| *key == KEY) {
            None => "-".to_owned(),
            Some((_, item)) => match item.expires_at_s {
                Some(at_s) => format!("{} through {}", item.value, at_s * 1000 / MILLIS_PER_TICK),
                None => item.value.clone(),
            },
        };
        format!("(server {}) | key: {item}", now_ms / MILLIS_PER_TICK)
    }
}

pub(crate) fn model_retry() -> RetryPolicy {
    // One retry: a single lost request or reply is retried, so the acquire machine's check of
    // a nil that may hide its own key is reached.
    RetryPolicy {
        max_retries: 1,
        backoff_ms: MILLIS_PER_TICK,
    }
}

fn model_redis_config(ttl_ticks: u8, ms_per_tick: u64, extend: bool) -> RedisLockConfig {
    let ttl_ms = u64::from(ttl_ticks) * ms_per_tick;
    RedisLockConfig {
        ttl_ms,
        retry_every_ms: ms_per_tick,
        max_wait_ms: None,
        // Documentation only: the model's holders extend once, at a point of the schedule's
        // choosing.
        extend_every_ms: extend.then_some(ttl_ms / 2),
        drift_ppm: RedisLockConfig::default().drift_ppm,
        retry: model_retry(),
    }
}

impl ModelFamily for SetNxLock {
    type Server = RedisServer;
    type Lane = NoLane<Self::Config, Self::Command, Self::Reply>;
    const MODEL: &'static str = "redis-set-nx";

    fn supports(fault: Fault) -> bool {
        matches!(
            fault,
            Fault::None
                | Fault::Pause
                | Fault::StoreFailure
                | Fault::Restart
                | Fault::Failover
                | Fault::ServerClockJump
        )
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, extend: bool, _: &FamilyMutants) -> RedisLockConfig {
        model_redis_config(ttl_ticks, ms_per_tick, extend)
    }

    fn server(fault: Fault) -> RedisServer {
        RedisServer::new(fault)
    }

    fn describe_lock(config: &RedisLockConfig, extend: bool) -> String {
        let _ = config;
        format!(
            "redis-set-nx (SET NX PX, compare-and-delete{})",
            if extend {
                ", one compare-and-pexpire extension"
            } else {
                ""
            },
        )
    }

    fn describe_timing(config: &RedisLockConfig) -> String {
        format!(
            "TTL {TTL_TICKS} ticks, drift {} ppm, retry every tick",
            config.drift_ppm
        )
    }

    fn counted_from_us(lease: &cassalock::algo::redis::RedisLease) -> Option<u64> {
        Some(lease.set_sent_at_us)
    }

    no_lane!();
}

impl ModelFamily for RedlockLock {
    type Server = RedlockMasters;
    type Lane = NoLane<Self::Config, Self::Command, Self::Reply>;
    const MODEL: &'static str = "redlock";

    fn supports(fault: Fault) -> bool {
        matches!(
            fault,
            Fault::None | Fault::Pause | Fault::StoreFailure | Fault::Restart | Fault::ServerClockJump
        )
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, extend: bool, mutants: &FamilyMutants) -> RedlockConfig {
        RedlockConfig {
            masters: REDLOCK_MASTERS,
            lock: model_redis_config(ttl_ticks, ms_per_tick, extend),
            // Two attempts: a failed first attempt (another client has a master) is retried once.
            attempts: 2,
            retry_delay_max_ms: ms_per_tick,
            mutants: mutants.redlock,
        }
    }

    fn server(_: Fault) -> RedlockMasters {
        RedlockMasters {
            masters: vec![RedisKeyspace::new(); REDLOCK_MASTERS],
            ahead_ticks: vec![0; REDLOCK_MASTERS],
        }
    }

    fn describe_lock(config: &RedlockConfig, extend: bool) -> String {
        let mut mutants = Vec::new();
        if config.mutants.validity_from_first_attempt {
            mutants.push("mutant: validity from the first attempt (node-redlock)");
        }
        if config.mutants.extend_ignores_validity {
            mutants.push("mutant: an extension ignores the validity (go-redsync)");
        }
        format!(
            "redlock ({} masters, majority {}, {} attempts{}{})",
            config.masters,
            config.majority(),
            config.attempts,
            if extend { ", one extension on every master" } else { "" },
            mutants.iter().map(|m| format!(", {m}")).collect::<String>(),
        )
    }

    fn describe_timing(_: &RedlockConfig) -> String {
        format!("TTL {TTL_TICKS} ticks, drift 1% + 2 ms, the retry's random delay drawn as 0 (a sleep of one tick)")
    }

    fn counted_from_us(_: &cassalock::algo::family::RedlockHold) -> Option<u64> {
        None
    }

    fn describe_fault(fault: Fault) -> String {
        match fault {
            Fault::Restart => "master 0 may restart at once without persistence".to_owned(),
            Fault::ServerClockJump => "master 0's clock may jump forward by the TTL".to_owned(),
            other => other.name().to_owned(),
        }
    }

    no_lane!();
}

impl ModelFamily for MemcachedLock {
    type Server = MemcachedServer;
    type Lane = NoLane<Self::Config, Self::Command, Self::Reply>;
    const MODEL: &'static str = "memcached";

    fn supports(fault: Fault) -> bool {
        matches!(
            fault,
            Fault::None | Fault::Pause | Fault::StoreFailure | Fault::Restart | Fault::ServerClockJump
        )
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, _extend: bool, _: &FamilyMutants) -> MemcachedLockConfig {
        debug_assert_eq!(ms_per_tick, 1000, "Memcached counts whole seconds: a tick is one");
        MemcachedLockConfig {
            ttl_s: u32::from(ttl_ticks),
            retry_every_ms: ms_per_tick,
            max_wait_ms: None,
            checks: cassalock::algo::memcached::Checks::CasChecked,
            retry: model_retry(),
        }
    }

    fn server(_: Fault) -> MemcachedServer {
        MemcachedServer {
            items: Memcached::new(),
            ahead_ticks: 0,
        }
    }

    fn describe_lock(config: &MemcachedLockConfig, extend: bool) -> String {
        format!(
            "memcached (add with exptime, release and touch {}{})",
            match config.checks {
                cassalock::algo::memcached::Checks::CasChecked => "checked with gets + cas",
                cassalock::algo::memcached::Checks::AsWritten => "as usually written (delete, touch)",
            },
            if extend { ", one extension" } else { "" },
        )
    }

    fn describe_timing(_: &MemcachedLockConfig) -> String {
        format!("TTL {TTL_TICKS} s, believed for TTL - 1 s (the server counts whole seconds), retry every tick")
    }

    fn counted_from_us(lease: &cassalock::algo::memcached::MemcachedLease) -> Option<u64> {
        Some(lease.set_sent_at_us)
    }

    fn describe_fault(fault: Fault) -> String {
        match fault {
            Fault::Restart => "the server may restart (Memcached keeps nothing)".to_owned(),
            Fault::ServerClockJump => "the server's clock may jump forward by the TTL".to_owned(),
            other => other.name().to_owned(),
        }
    }

    no_lane!();
}

/// Redisson's lease in ticks: three, so that the watchdog renews every tick (a third of it)
/// and one failed renewal leaves a tick to spare.
pub const REDISSON_LEASE_TICKS: u8 = 3;

impl ModelFamily for RedissonLock {
    type Server = RedisServer;
    type Lane = Watchdog;
    const MODEL: &'static str = "redisson";
    const TTL_TICKS: u8 = REDISSON_LEASE_TICKS;
    // `lock()` without a lease time: the watchdog runs.
    const RENEWAL_LANE: bool = true;

    fn supports(fault: Fault) -> bool {
        matches!(
            fault,
            Fault::None
                | Fault::Pause
                | Fault::StoreFailure
                | Fault::Restart
                | Fault::Failover
                | Fault::ServerClockJump
                | Fault::LostNotification
        )
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, _extend: bool, mutants: &FamilyMutants) -> RedissonConfig {
        RedissonConfig {
            // `lock()` without a lease time: the lease is the watchdog's timeout, renewed every
            // third of it.
            watchdog_timeout_ms: u64::from(ttl_ticks) * ms_per_tick,
            lease_ms: None,
            wait_ms: None,
            retry: model_retry(),
            mutants: mutants.redisson,
            ..RedissonConfig::default()
        }
    }

    fn server(fault: Fault) -> RedisServer {
        RedisServer {
            single_after_failover: true,
            ..RedisServer::new(fault)
        }
    }

    fn describe_lock(config: &RedissonConfig, _extend: bool) -> String {
        format!(
            "redisson (RLock: hash lock, watchdog, waiters woken by the unlock message{})",
            if config.mutants.watchdog_stops_after_a_failed_renewal {
                ", mutant: the watchdog stops after a failed renewal (Redisson issue 775)"
            } else {
                ""
            }
        )
    }

    fn describe_timing(config: &RedissonConfig) -> String {
        format!(
            "lease (lockWatchdogTimeout) {REDISSON_LEASE_TICKS} ticks renewed every {} ms, drift {} ppm; a waiter sleeps the holder's TTL or until the unlock message",
            config.renew_every_ms(),
            cassalock::algo::redis::redisson::DRIFT_PPM
        )
    }

    fn counted_from_us(lease: &RedissonLease) -> Option<u64> {
        Some(lease.set_sent_at_us)
    }

    fn describe_fault(fault: Fault) -> String {
        match fault {
            Fault::LostNotification => "one unlock message may be lost on its way to a waiter".to_owned(),
            Fault::Restart => "the server may restart without persistence".to_owned(),
            Fault::Failover => "the replica may be promoted before it has the primary's writes".to_owned(),
            Fault::ServerClockJump => "the server's clock may jump forward by the TTL".to_owned(),
            other => other.name().to_owned(),
        }
    }

    fn lane(lease: &RedissonLease, config: &RedissonConfig) -> Option<Watchdog> {
        <RedissonLock as FamilyLock>::renewal(lease, config)
    }

    fn lane_ended(output: <Watchdog as Machine>::Output) -> RenewalEnd {
        <RedissonLock as FamilyLock>::renewal_ended(output)
    }

    fn lane_lease(lane: &Watchdog) -> RedissonLease {
        <RedissonLock as FamilyLock>::renewed_lease(lane)
    }
}

/// The fair lock's `threadWaitTime` in ticks: how long a queued waiter may go without asking
/// again before the others drop it. Redisson's default, 5 s (a tick is a second): longer than
/// any request can be in flight within the clock's bound, so that only a fault can drop a
/// waiter. With a shorter slot a request that is slow to reach the server joins the queue
/// already stale and loses its place (with 1 tick and F-order not excusing a dropped waiter,
/// 2 x 2 found it in 16 steps: a request 3 ticks in flight).
pub const REDISSON_FAIR_SLOT_TICKS: u8 = 5;

impl ModelFamily for RedissonFairLock {
    type Server = RedisServer;
    type Lane = Watchdog;
    const MODEL: &'static str = "redisson-fair";
    const TTL_TICKS: u8 = REDISSON_LEASE_TICKS;
    const RENEWAL_LANE: bool = true;
    const FIFO: bool = true;

    fn supports(fault: Fault) -> bool {
        RedissonLock::supports(fault)
    }

    fn queue(server: &RedisServer) -> Vec<String> {
        match server.primary().entry(&fair_queue_key(KEY)).map(|entry| &entry.value) {
            Some(RedisValue::List(items)) => items.clone(),
            _ => Vec::new(),
        }
    }

    fn config(ttl_ticks: u8, ms_per_tick: u64, extend: bool, mutants: &FamilyMutants) -> RedissonConfig {
        RedissonConfig {
            fair_thread_wait_ms: u64::from(REDISSON_FAIR_SLOT_TICKS) * ms_per_tick,
            ..<RedissonLock as ModelFamily>::config(ttl_ticks, ms_per_tick, extend, mutants)
        }
    }

    fn server(fault: Fault) -> RedisServer {
        <RedissonLock as ModelFamily>::server(fault)
    }

    fn describe_lock(config: &RedissonConfig, _extend: bool) -> String {
        let mut mutants = Vec::new();
        if config.mutants.watchdog_stops_after_a_failed_renewal {
            mutants.push(", mutant: the watchdog stops after a failed renewal (Redisson issue 775)");
        }
        if config.mutants.fair_acquire_ignores_the_queue {
            mutants.push(", mutant: the acquire runs the RLock's script, ignoring the queue");
        }
        format!(
            "redisson-fair (fair lock: hash lock, queue of waiters with deadlines on the clients' clocks, watchdog, the first waiter woken by the unlock message{})",
            mutants.concat()
        )
    }

    fn describe_timing(config: &RedissonConfig) -> String {
        format!(
            "lease (lockWatchdogTimeout) {REDISSON_LEASE_TICKS} ticks renewed every {} ms, threadWaitTime {} ms, drift {} ppm; a waiter sleeps until its turn is due or the unlock message",
            config.renew_every_ms(),
            config.fair_thread_wait_ms,
            cassalock::algo::redis::redisson::DRIFT_PPM
        )
    }

    fn counted_from_us(lease: &RedissonLease) -> Option<u64> {
        Some(lease.set_sent_at_us)
    }

    fn describe_fault(fault: Fault) -> String {
        <RedissonLock as ModelFamily>::describe_fault(fault)
    }

    fn lane(lease: &RedissonLease, config: &RedissonConfig) -> Option<Watchdog> {
        <RedissonFairLock as FamilyLock>::renewal(lease, config)
    }

    fn lane_ended(output: <Watchdog as Machine>::Output) -> RenewalEnd {
        <RedissonFairLock as FamilyLock>::renewal_ended(output)
    }

    fn lane_lease(lane: &Watchdog) -> RedissonLease {
        <RedissonFairLock as FamilyLock>::renewed_lease(lane)
    }
}

/// The model's parameters.
#[derive(Clone, Debug)]
pub struct FamilyModel<F: ModelFamily> {
    pub clients: u8,
    /// Acquisitions per client.
    pub acquisitions: u8,
    /// Each holder extends its key once, between two uses of the resource.
    pub extend: bool,
    pub fault: Fault,
    /// Time stops here: every verdict is within it.
    pub max_tick: u8,
    /// The machines' config: TTL, retry interval, drift margin, retries.
    pub lock: F::Config,
    /// Requests (or replies) the fault injector may lose in one run.
    pub store_failures: u8,
    family: PhantomData<F>,
}

/// The `SET NX PX` model.
pub type RedisSetNxModel = FamilyModel<SetNxLock>;
/// The Redlock model (3 masters).
pub type RedlockModel = FamilyModel<RedlockLock>;
/// The Memcached `add` model.
pub type MemcachedModel = FamilyModel<MemcachedLock>;
/// The Redisson `RLock` model (watchdog, unlock messages).
pub type RedissonModel = FamilyModel<RedissonLock>;
/// Redisson's fair lock model (a queue of waiters, F-order).
pub type RedissonFairModel = FamilyModel<RedissonFairLock>;

impl<F: ModelFamily> FamilyModel<F> {
    /// The faults this lock's model has.
    pub fn supports(fault: Fault) -> bool {
        F::supports(fault)
    }

    pub fn new(clients: u8, acquisitions: u8, extend: bool, fault: Fault) -> Self {
        Self::with_mutants(clients, acquisitions, extend, fault, FamilyMutants::default())
    }

    pub fn with_mutants(clients: u8, acquisitions: u8, extend: bool, fault: Fault, mutants: FamilyMutants) -> Self {
        assert!(F::supports(fault), "{} has no fault {}", F::MODEL, fault.name());
        let store_failures = u8::from(fault == Fault::StoreFailure);
        FamilyModel {
            clients,
            acquisitions,
            extend,
            fault,
            // Room for a key to run out and the next client to take it (the first key, set at
            // tick 1, lives through tick 3; another SET lands at 4), and a tick more for each
            // further acquisition.
            max_tick: FIRST_TICK + 1 + F::TTL_TICKS + acquisitions.saturating_sub(1),
            lock: F::config(F::TTL_TICKS, MILLIS_PER_TICK, extend, &mutants),
            store_failures,
            family: PhantomData,
        }
    }

    fn client_now_us(&self, world: &World<F>) -> u64 {
        u64::from(world.now_tick) * MICROS_PER_SECOND
    }
}

// ---- the state ----

/// A holder's view of its lock, between `lock()` and `unlock()`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Hold<L> {
    pub lease: L,
    pub grant: Grant,
    /// Writes to the resource so far.
    pub uses: u8,
    pub extended: bool,
    /// It learned the lease is lost: its check found the clock past `valid_until`, or the
    /// extension answered "not ours".
    pub lost: bool,
    /// It checked its lease and is about to write (the pause fault's gap).
    pub checked: bool,
}

/// What a client is doing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase<F: ModelFamily> {
    /// Between acquisitions.
    Idle,
    Acquiring(F::AcquireMachine),
    Holding(Hold<F::Lease>),
    Extending(F::ExtendMachine, Hold<F::Lease>),
    /// `unlock()` was called while the renewal lane has a request out: it waits for the lane
    /// to stop (the family driver's release waits for a renewal in flight).
    Unlocking(Hold<F::Lease>),
    Releasing(F::ReleaseMachine),
    /// Every acquisition done.
    Finished,
}

/// A running machine's pending action, as it travels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pending<C, R> {
    Nothing,
    /// A sleep that ends when the client's clock reaches `wake_tick` (or, `until_notified`,
    /// when an unlock message has arrived).
    Sleep {
        wake_tick: u8,
        until_notified: bool,
    },
    /// Sent, not yet applied by the server.
    Request {
        tag: StepTag,
        command: C,
    },
    /// The answer on its way back (a reply, or the failure the client will see).
    Answer {
        tag: StepTag,
        command: C,
        input: Input<R>,
    },
}

/// A holder's renewal lane (Redisson's watchdog), from the acquisition to the release.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Lane<F: ModelFamily> {
    Running {
        machine: F::Lane,
        pending: Pending<F::Command, F::Reply>,
        /// `unlock()` asked it to stop: it ends at its next sleep.
        stop: bool,
    },
    /// It ended: stopped by the release, or having told the holder (lost, expired), or
    /// quietly (Redisson issue 775's mutant).
    Ended(RenewalEnd),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client<F: ModelFamily> {
    pub phase: Phase<F>,
    pub pending: Pending<F::Command, F::Reply>,
    /// The holder's renewal lane (`None`: not holding, or the lock has none).
    pub lane: Option<Lane<F>>,
    /// Unlock messages on their way to this waiter (it is subscribed while in `lock()`).
    pub messages_in_flight: u8,
    /// An unlock message arrived and no sleep until notified has taken it yet.
    pub message_arrived: bool,
    /// Acquisitions finished (the current one's index while one runs).
    pub completed: u8,
    pub paused_at_tick: Option<u8>,
    /// F-order (a lock that promises it): this `lock()` call has reached the server (its first
    /// request applied): it is in the queue, or took the lock.
    pub queued: bool,
    /// F-order: bit j set when client j's `lock()` call was queued before this one's and has
    /// not returned yet.
    pub ahead: u8,
    /// F-order: this `lock()` call was served (the key took its token), whether or not it has
    /// heard so yet.
    pub served: bool,
    /// C-release: bit k set when acquisition k's `unlock()` returned other than `Failed`.
    pub released: u8,
    /// C-free: bit k set when acquisition k's `lock()` ended without the lock and said it left
    /// nothing.
    pub gave_up_clean: u8,
    /// T2 (always): bit k set when acquisition k's `lock()` returned without the lock while the
    /// store answered (Redlock's attempts ran out under contention).
    pub gave_up_waiting: u8,
}

/// The resource the lock protects: it records the last writer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Resource {
    /// (client, grant) of the last write.
    pub last_write: Option<(u8, Grant)>,
    /// A write came from an acquisition older than one that had already written, and the
    /// resource accepted it.
    pub stale_write: bool,
    /// Fencing (a lock whose token grows): the highest token the resource has accepted; a write
    /// with a lower one is refused.
    pub fence: Option<String>,
}

impl Resource {
    /// What the resource does with a write of acquisition `grant` carrying `token`: with a
    /// fencing token (`F::FENCING`), it refuses a token below the highest it accepted, and
    /// accepts, stale, one equal to it from another acquisition (two holders sharing a token);
    /// without, it accepts everything, stale when a later acquisition has already written.
    /// `accepted` and `stale` as the resource of the other drivers says them
    /// (`cassalock::algo::admit`).
    pub fn admit<F: ModelFamily>(&self, grant: Grant, token: &str) -> cassalock::algo::Admission {
        if F::FENCING {
            if self.fence.as_deref().is_some_and(|fence| fence > token) {
                return cassalock::algo::Admission {
                    stale: true,
                    accepted: false,
                };
            }
            let shared = self.fence.as_deref() == Some(token) && self.last_write.is_some_and(|(_, last)| last != grant);
            return cassalock::algo::Admission {
                stale: shared,
                accepted: true,
            };
        }
        let stale = self.last_write.is_some_and(|(_, last)| last > grant);
        cassalock::algo::Admission { stale, accepted: true }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World<F: ModelFamily> {
    pub now_tick: u8,
    pub server: F::Server,
    pub clients: Vec<Client<F>>,
    /// Acquisitions granted so far.
    pub grants: u8,
    pub resource: Resource,
    /// The run's one pause, restart, failover or clock jump has happened.
    pub fault_used: bool,
    pub store_failures_used: u8,
    /// F-order: a `lock()` call returned with the lock while one queued before it still waited.
    pub overtaken: bool,
    /// C-token (a lock whose token grows): the highest token granted so far.
    pub last_grant_token: Option<String>,
    /// C-token: an acquisition was granted a token not above an earlier holder's.
    pub token_went_down: bool,
}

/// Who acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Act {
    /// Client i takes its next step: start a call, receive an answer, wake, check, write.
    Client(u8),
    /// The server applies client i's request in flight.
    Apply(u8),
    /// Replication delivers the oldest pending batch to the replica.
    Replicate,
    /// Time passes one tick.
    Tick,
    /// Faults: client i's request is lost before the server sees it, or (`after_apply`) its
    /// reply is lost after the server applied it.
    Lose {
        client: u8,
        after_apply: bool,
    },
    Pause(u8),
    /// Client i resumes from its pause (its own step, so fairness ends every pause).
    Resume(u8),
    /// Faults: the server restarts without persistence.
    Restart,
    /// Faults: the replica is promoted, losing the batches in flight.
    Failover,
    /// Faults: the server's clock jumps forward by the TTL.
    ClockJump,
    /// Client i's renewal lane (Redisson's watchdog) takes its next step.
    Lane(u8),
    /// The server applies client i's renewal lane's request in flight.
    ApplyLane(u8),
    /// Faults: client i's renewal request is lost before the server sees it, or its reply after.
    LoseLane {
        client: u8,
        after_apply: bool,
    },
    /// An unlock message reaches waiter i.
    Notify(u8),
    /// Faults: an unlock message to waiter i is lost.
    LoseNotification(u8),
}

impl fmt::Display for Act {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Act::Client(i) => write!(f, "t{i}"),
            Act::Apply(i) => write!(f, "server applies t{i}'s request"),
            Act::Replicate => write!(f, "replication"),
            Act::Tick => write!(f, "clock"),
            Act::Lose { client, after_apply } => write!(
                f,
                "faults: t{client}'s {} is lost",
                if *after_apply { "reply" } else { "request" }
            ),
            Act::Pause(i) => write!(f, "faults: pause t{i}"),
            Act::Resume(i) => write!(f, "t{i} resumes"),
            Act::Restart => write!(f, "faults: server restart"),
            Act::Failover => write!(f, "faults: failover"),
            Act::ClockJump => write!(f, "faults: server clock jump"),
            Act::Lane(i) => write!(f, "t{i}'s watchdog"),
            Act::ApplyLane(i) => write!(f, "server applies t{i}'s watchdog request"),
            Act::LoseLane { client, after_apply } => write!(
                f,
                "faults: t{client}'s watchdog {} is lost",
                if *after_apply { "reply" } else { "request" }
            ),
            Act::Notify(i) => write!(f, "the unlock message reaches t{i}"),
            Act::LoseNotification(i) => write!(f, "faults: the unlock message to t{i} is lost"),
        }
    }
}

// ---- how things read in traces ----

type Notes = Option<Vec<String>>;

fn note(notes: &mut Notes, text: impl FnOnce() -> String) {
    if let Some(notes) = notes {
        notes.push(text());
    }
}

fn token(client: usize, acquisition: u8) -> String {
    format!("t{client}:{acquisition}")
}

fn acquisition_bit(k: u8) -> u8 {
    debug_assert!(k < 8, "per-acquisition bits hold 8 acquisitions");
    1u8 << k.min(7)
}

/// A time in ticks, with the fraction a drift margin leaves ("2.98").
fn show_us(time_us: u64) -> String {
    if time_us == u64::MAX {
        "for ever (no bound)".to_owned()
    } else if time_us % MICROS_PER_SECOND == 0 {
        format!("{}", time_us / MICROS_PER_SECOND)
    } else {
        format!("{:.2}", time_us as f64 / MICROS_PER_SECOND as f64)
    }
}

fn show_input<R: fmt::Display + fmt::Debug>(input: &Input<R>) -> String {
    match input {
        Input::Reply(reply) => reply.to_string(),
        Input::Failed(failure) => format!("FAILED ({failure:?})"),
        other => format!("{other:?}"),
    }
}

// ---- stepping ----

impl<F: ModelFamily> FamilyModel<F> {
    fn initial(&self) -> World<F> {
        let mut server = F::server(self.fault);
        server.connect(usize::from(self.clients), FIRST_TICK);
        World {
            now_tick: FIRST_TICK,
            server,
            clients: (0..self.clients)
                .map(|_| Client {
                    phase: Phase::Idle,
                    pending: Pending::Nothing,
                    lane: None,
                    messages_in_flight: 0,
                    message_arrived: false,
                    queued: false,
                    ahead: 0,
                    served: false,
                    completed: 0,
                    paused_at_tick: None,
                    released: 0,
                    gave_up_clean: 0,
                    gave_up_waiting: 0,
                })
                .collect(),
            grants: 0,
            resource: Resource::default(),
            fault_used: false,
            store_failures_used: 0,
            overtaken: false,
            last_grant_token: None,
            token_went_down: false,
        }
    }

    /// Does client i believe it holds the lock: acquired, not yet releasing, not told it lost
    /// the lease, and its own clock below the lease's `valid_until`?
    pub fn believes(&self, world: &World<F>, i: usize) -> bool {
        match &world.clients[i].phase {
            Phase::Holding(hold) | Phase::Extending(_, hold) => {
                !hold.lost && self.client_now_us(world) < F::valid_until_us(&hold.lease, &self.lock)
            }
            _ => false,
        }
    }

    /// The owners (client, acquisition) of the live keys that hold a model token, with the
    /// milliseconds each still lives.
    fn key_owners(&self, world: &World<F>) -> Vec<((usize, u8), Option<u64>)> {
        world
            .server
            .live_tokens(world.now_tick)
            .into_iter()
            .filter_map(|(value, left_ms)| Some((parse_model_thread(&value)?, left_ms)))
            .collect()
    }

    /// C-release: the ticks (on the server's clock) a live key still has when it holds the
    /// token of an acquisition whose `unlock()` returned (the longest, over Redlock's masters).
    fn released_key_left_ticks(&self, world: &World<F>) -> Option<u64> {
        self.key_owners(world)
            .into_iter()
            .filter(|((i, k), _)| {
                world
                    .clients
                    .get(*i)
                    .is_some_and(|c| c.released & acquisition_bit(*k) != 0)
            })
            .filter_map(|(_, left_ms)| left_ms.map(|ms| ms / MILLIS_PER_TICK))
            .max()
    }

    /// The longest a waiter still sleeps until notified while the lock is free (no live key)
    /// and no unlock message has arrived or is on its way to it: the holder's TTL it sleeps
    /// out when the message was lost (or never sent: the key expired, a restart).
    fn asleep_on_a_free_lock_ticks(&self, world: &World<F>) -> Option<u64> {
        let owners: Vec<usize> = world
            .server
            .live_tokens(world.now_tick)
            .into_iter()
            .map(|(value, _)| parse_model_thread(&value).map_or(usize::MAX, |(owner, _)| owner))
            .collect();
        // Free for waiter j: no live key but its own (a ZooKeeper or etcd waiter has one).
        world
            .clients
            .iter()
            .enumerate()
            .filter(|(j, _)| owners.iter().all(|owner| owner == j))
            .map(|(_, c)| c)
            .filter(|c| matches!(c.phase, Phase::Acquiring(_)) && c.messages_in_flight == 0 && !c.message_arrived)
            .filter_map(|c| match c.pending {
                Pending::Sleep {
                    wake_tick,
                    until_notified: true,
                } if world.now_tick < self.max_tick => Some(u64::from(wake_tick.saturating_sub(world.now_tick))),
                _ => None,
            })
            .max()
    }

    /// "its lease counts from its send at 1, valid while its clock < 2.98", or, when the machine
    /// computed the validity itself, "its lease is valid while its clock < 2.98".
    fn show_validity(&self, lease: &F::Lease) -> String {
        let until = show_us(F::valid_until_us(lease, &self.lock));
        match F::counted_from_us(lease) {
            Some(from_us) => format!(
                "its lease counts from its send at {}, valid while its clock < {until}",
                show_us(from_us)
            ),
            None => format!("its lease is valid while its clock < {until}"),
        }
    }

    /// Resume `machine`, answering its random draws with 0 at once (Redlock's retry delay:
    /// the sleep that follows takes at least a tick either way).
    fn resume<M>(
        &self,
        machine: &mut M,
        mut input: Input<F::Reply>,
        now_us: u64,
        notes: &mut Notes,
    ) -> Step<M::Output, F::Command>
    where
        M: Machine<Config = F::Config, Command = F::Command, Reply = F::Reply>,
    {
        for _ in 0..MAX_DRAWS_IN_A_ROW {
            let step = machine.resume(&self.lock, input, now_us);
            match step.action {
                Action::Draw { max_ms } => {
                    let tag = step.tag;
                    note(notes, || format!("{tag}: draws a delay in 0..={max_ms} ms: 0"));
                    input = Input::Drawn(0);
                }
                _ => return step,
            }
        }
        unreachable!("a machine drew {MAX_DRAWS_IN_A_ROW} times in a row without acting")
    }

    /// Carry out a machine's step: a request goes on the wire, a sleep is noted; its output
    /// when it finished.
    fn carry_out<O>(&self, world: &mut World<F>, i: usize, step: Step<O, F::Command>, notes: &mut Notes) -> Option<O> {
        let (pending, output) = Self::pending_of(world.now_tick, step, notes);
        world.clients[i].pending = pending;
        output
    }

    /// What a machine waits for after `step` (a request on the wire, a sleep), or its output
    /// when it finished.
    fn pending_of<O>(
        now_tick: u8,
        step: Step<O, F::Command>,
        notes: &mut Notes,
    ) -> (Pending<F::Command, F::Reply>, Option<O>) {
        let tag = step.tag;
        match step.action {
            Action::Store(command) => {
                note(notes, || format!("{tag}: sends {}", command));
                (Pending::Request { tag, command }, None)
            }
            Action::Sleep { ms, kind } => {
                let ticks = u8::try_from(ms.div_ceil(MILLIS_PER_TICK).max(1)).unwrap_or(u8::MAX);
                let wake_tick = now_tick.saturating_add(ticks);
                let until_notified = kind == SleepKind::UntilNotified;
                note(notes, || {
                    format!(
                        "{tag}: sleeps {ms} ms, until tick {wake_tick}{}",
                        if until_notified { " or the unlock message" } else { "" }
                    )
                });
                (
                    Pending::Sleep {
                        wake_tick,
                        until_notified,
                    },
                    None,
                )
            }
            Action::Done(output) => (Pending::Nothing, Some(output)),
            Action::Draw { .. } | Action::ReadTime | Action::StopRenewal { .. } => {
                unreachable!(
                    "{tag}: draws are answered in `resume`; these locks read no time source, and the model stops a renewal lane itself"
                )
            }
        }
    }

    /// The answer a running machine waits for: the reply (or failure) that arrived, or the end
    /// of its sleep.
    fn take_input(world: &mut World<F>, i: usize, notes: &mut Notes) -> Input<F::Reply> {
        match std::mem::replace(&mut world.clients[i].pending, Pending::Nothing) {
            Pending::Answer { tag, input, .. } => {
                note(notes, || format!("{tag}: receives {}", show_input(&input)));
                input
            }
            Pending::Sleep {
                wake_tick,
                until_notified,
            } => {
                let client = &mut world.clients[i];
                if until_notified && client.message_arrived {
                    // The driver's select takes the message first (biased).
                    client.message_arrived = false;
                    if world.now_tick < wake_tick {
                        note(notes, || {
                            format!("t{i} is woken by the unlock message before tick {wake_tick}")
                        });
                    }
                } else if world.now_tick < wake_tick {
                    note(notes, || {
                        format!("t{i} wakes before tick {wake_tick}: time stops at the bound, so a sleep there ends at once")
                    });
                }
                Input::Woke
            }
            other => unreachable!("t{i} stepped while its machine waits for {other:?}"),
        }
    }

    fn finish_round(&self, world: &mut World<F>, i: usize) {
        let client = &mut world.clients[i];
        client.completed += 1;
        client.phase = if client.completed >= self.acquisitions {
            Phase::Finished
        } else {
            Phase::Idle
        };
    }

    fn after_acquire(
        &self,
        world: &mut World<F>,
        i: usize,
        mut machine: F::AcquireMachine,
        input: Input<F::Reply>,
        notes: &mut Notes,
    ) {
        let now_us = self.client_now_us(world);
        let step = self.resume(&mut machine, input, now_us, notes);
        let tag = step.tag;
        let Some(output) = self.carry_out(world, i, step, notes) else {
            world.clients[i].phase = Phase::Acquiring(machine);
            return;
        };
        // `lock()` returns: its subscription to the unlock messages is dropped.
        world.clients[i].messages_in_flight = 0;
        world.clients[i].message_arrived = false;
        let k = world.clients[i].completed;
        Self::leave_queue(world, i);
        world.clients[i].served = false;
        match F::acquired(output) {
            Acquisition::Acquired(lease) => {
                let grant = world.grants;
                world.grants += 1;
                note(notes, || {
                    format!(
                        "{tag} => t{i} HOLDS the lock (grant {grant}): {}",
                        self.show_validity(&lease)
                    )
                });
                if F::FENCING {
                    let token = F::token(&lease).to_owned();
                    // Judged for a holder whose node (key) the server still has: one whose
                    // reply came after its node went is a stale holder (the fence refuses it).
                    let live = self.key_owners(world).iter().any(|(owner, _)| *owner == (i, k));
                    if live && world.last_grant_token.as_ref().is_some_and(|last| *last >= token) {
                        world.token_went_down = true;
                        note(notes, || {
                            format!(
                                "C-token: t{i}'s token {token} is NOT above an earlier holder's ({})",
                                world.last_grant_token.as_deref().unwrap_or("")
                            )
                        });
                    }
                    if world.last_grant_token.as_ref().is_none_or(|last| *last < token) {
                        world.last_grant_token = Some(token);
                    }
                }

                self.start_lane(world, i, &lease, notes);
                world.clients[i].phase = Phase::Holding(Hold {
                    lease,
                    grant,
                    uses: 0,
                    extended: false,
                    lost: false,
                    checked: false,
                });
            }
            other => {
                note(notes, || format!("{tag} => t{i} did not get the lock: {other:?}"));
                let clean = !matches!(
                    other,
                    Acquisition::Failed {
                        left: Leftover::CleanUpFailed | Leftover::NotCleanedUp,
                        ..
                    }
                );
                if clean {
                    world.clients[i].gave_up_clean |= acquisition_bit(k);
                }
                if matches!(other, Acquisition::NotAcquired | Acquisition::TimedOut) {
                    world.clients[i].gave_up_waiting |= acquisition_bit(k);
                }
                self.finish_round(world, i);
            }
        }
    }

    /// F-order: client i's `lock()` call returns (or was served): it leaves everyone's view of
    /// the queue.
    fn leave_queue(world: &mut World<F>, i: usize) {
        if !F::FIFO {
            return;
        }
        let client = &mut world.clients[i];
        client.ahead = 0;
        client.queued = false;
        for other in &mut world.clients {
            other.ahead &= !(1u8 << i);
        }
    }

    /// F-order, after the server applied client i's request: a `lock()` call whose first
    /// request this was joins the queue behind every call that joined before and is not yet
    /// served; a waiter the script dropped from the server's queue (its deadline passed: it did
    /// not ask again within its slot) has lost its place, as the lock's design says, and joins
    /// again at its next request; a call whose token the lock's key now holds (and did not
    /// before) is served, and F-order breaks if one queued before it is still unserved and
    /// not dropped. Read off the server, not the reply: served is what the server did, whether
    /// or not the reply ever arrives. (A restart or a failover that loses the queue drops
    /// nobody by a script: its waiters keep their place here, and their overtaking counts.)
    fn note_queue(
        &self,
        world: &mut World<F>,
        i: usize,
        (owners_before, queue_before): (&[(usize, u8)], &[String]),
        notes: &mut Notes,
    ) {
        if !F::FIFO {
            return;
        }
        let queue_after = F::queue(&world.server);
        let dropped: Vec<usize> = (0..world.clients.len())
            .filter(|&j| world.clients[j].queued)
            .filter(|&j| {
                let waiter = token(j, world.clients[j].completed);
                queue_before.contains(&waiter) && !queue_after.contains(&waiter)
            })
            .collect();
        if !world.clients[i].queued && !world.clients[i].served && matches!(world.clients[i].phase, Phase::Acquiring(_))
        {
            let ahead = (0..world.clients.len())
                .filter(|&j| j != i && world.clients[j].queued)
                .fold(0u8, |mask, j| mask | (1u8 << j));
            let client = &mut world.clients[i];
            client.queued = true;
            client.ahead = ahead;
        }
        for j in dropped {
            note(notes, || {
                format!("F-order: the script drops t{j} from the queue (its deadline passed on the caller's clock): t{j} loses its place")
            });
            Self::leave_queue(world, j);
        }
        let served: Vec<usize> = self
            .key_owners(world)
            .into_iter()
            .map(|(owner, _)| owner)
            .filter(|owner| !owners_before.contains(owner))
            .filter(|&(j, k)| world.clients[j].queued && world.clients[j].completed == k)
            .map(|(j, _)| j)
            .collect();
        for j in served {
            let ahead = world.clients[j].ahead;
            if ahead != 0 {
                world.overtaken = true;
                note(notes, || {
                    let names: Vec<String> = (0..world.clients.len())
                        .filter(|x| ahead & (1 << x) != 0)
                        .map(|x| format!("t{x}"))
                        .collect();
                    format!(
                        "F-order: the lock goes to t{j} AHEAD of {}, queued before it and not served",
                        names.join(", ")
                    )
                });
            }
            Self::leave_queue(world, j);
            world.clients[j].served = true;
        }
    }

    fn after_extend(
        &self,
        world: &mut World<F>,
        i: usize,
        mut machine: F::ExtendMachine,
        mut hold: Hold<F::Lease>,
        input: Input<F::Reply>,
        notes: &mut Notes,
    ) {
        let now_us = self.client_now_us(world);
        let step = self.resume(&mut machine, input, now_us, notes);
        let tag = step.tag;
        let Some(output) = self.carry_out(world, i, step, notes) else {
            world.clients[i].phase = Phase::Extending(machine, hold);
            return;
        };
        match F::extended(&hold.lease, output) {
            Extension::Extended(lease) => {
                note(notes, || {
                    let validity = self.show_validity(&lease);
                    format!(
                        "{tag} => t{i}'s lease now {}",
                        validity.strip_prefix("its lease ").unwrap_or(&validity)
                    )
                });
                hold.lease = lease;
            }
            Extension::Lost => {
                note(notes, || format!("{tag} => t{i} learns its lease is LOST"));
                hold.lost = true;
            }
            Extension::Failed(failure) => {
                note(notes, || {
                    format!("{tag} => the extension failed ({failure:?}): t{i} keeps its old lease")
                });
            }
        }
        world.clients[i].phase = Phase::Holding(hold);
    }

    fn after_release(
        &self,
        world: &mut World<F>,
        i: usize,
        mut machine: F::ReleaseMachine,
        input: Input<F::Reply>,
        notes: &mut Notes,
    ) {
        let now_us = self.client_now_us(world);
        let step = self.resume(&mut machine, input, now_us, notes);
        let tag = step.tag;
        let Some(output) = self.carry_out(world, i, step, notes) else {
            world.clients[i].phase = Phase::Releasing(machine);
            return;
        };
        let output = F::released(output);
        note(notes, || format!("{tag} => unlock() returns {output:?}"));
        if F::KEYS_OUTLIVE_FAILURES || !matches!(output, Release::Failed(_)) {
            let k = world.clients[i].completed;
            world.clients[i].released |= acquisition_bit(k);
        }
        self.finish_round(world, i);
    }

    /// The user's code while holding: use the resource (check, then write), extend once if
    /// configured, use it again, release.
    fn hold_step(&self, world: &mut World<F>, i: usize, mut hold: Hold<F::Lease>, notes: &mut Notes) {
        let now_us = self.client_now_us(world);
        if hold.checked {
            let token = F::token(&hold.lease).to_owned();
            self.write_resource(world, i, hold.grant, &token, notes);
            hold.checked = false;
            hold.uses += 1;
            world.clients[i].phase = Phase::Holding(hold);
        } else if !hold.lost && hold.uses < 1 + u8::from(hold.extended) {
            let valid_until_us = F::valid_until_us(&hold.lease, &self.lock);
            if now_us < valid_until_us {
                note(notes, || {
                    format!(
                        "t{i} checks its lease: clock {} < {}: valid, it will write",
                        show_us(now_us),
                        show_us(valid_until_us)
                    )
                });
                hold.checked = true;
            } else {
                note(notes, || {
                    format!(
                        "t{i} checks its lease: clock {} >= {}: it ran out, t{i} does not write",
                        show_us(now_us),
                        show_us(valid_until_us)
                    )
                });
                hold.lost = true;
            }
            world.clients[i].phase = Phase::Holding(hold);
        } else if self.extend && !hold.extended && !hold.lost {
            note(notes, || format!("t{i} extends its lock"));
            hold.extended = true;
            let machine = F::extend(hold.lease.clone());
            self.after_extend(world, i, machine, hold, Input::Start, notes);
        } else {
            note(notes, || format!("t{i} calls unlock()"));
            self.unlock(world, i, hold, notes);
        }
    }

    /// `unlock()`: stop the renewal lane first (at once if it sleeps; a renewal out is waited
    /// for), then run the release machine on the lease the lane left.
    fn unlock(&self, world: &mut World<F>, i: usize, hold: Hold<F::Lease>, notes: &mut Notes) {
        match world.clients[i].lane.take() {
            Some(Lane::Running {
                mut machine,
                pending: Pending::Sleep { .. },
                ..
            }) => {
                let now_us = self.client_now_us(world);
                let step = self.resume(&mut machine, Input::StopRequested, now_us, notes);
                let tag = step.tag;
                let Action::Done(end) = step.action else {
                    unreachable!("{tag}: a renewal lane asked to stop at its sleep ends")
                };
                note(notes, || {
                    format!("{tag}: t{i}'s watchdog, asleep, ends: {:?}", F::lane_ended(end))
                });
            }
            Some(Lane::Running { machine, pending, .. }) => {
                note(notes, || {
                    format!("t{i}'s watchdog has a renewal out: unlock() waits for it to end")
                });
                world.clients[i].lane = Some(Lane::Running {
                    machine,
                    pending,
                    stop: true,
                });
                world.clients[i].phase = Phase::Unlocking(hold);
                return;
            }
            Some(Lane::Ended(_)) | None => {}
        }
        let machine = F::release(hold.lease);
        self.after_release(world, i, machine, Input::Start, notes);
    }

    /// Start a new holder's renewal lane, if the lock has one: it goes to sleep at once.
    fn start_lane(&self, world: &mut World<F>, i: usize, lease: &F::Lease, notes: &mut Notes) {
        let Some(mut machine) = F::lane(lease, &self.lock) else {
            return;
        };
        let now_us = self.client_now_us(world);
        let step = self.resume(&mut machine, Input::Start, now_us, notes);
        let (pending, done) = Self::pending_of(world.now_tick, step, notes);
        debug_assert!(done.is_none(), "a renewal lane does not end as it starts");
        world.clients[i].lane = Some(Lane::Running {
            machine,
            pending,
            stop: false,
        });
    }

    /// The renewal lane's next step: wake up, or take in its request's answer. Its lease
    /// becomes the holder's (the driver's guard reads the lane's); a lost or expired lease is
    /// told to the holder at once (the guard's `is_valid` reads how the lane ended).
    fn step_lane(&self, world: &mut World<F>, i: usize, notes: &mut Notes) {
        let Some(Lane::Running {
            mut machine,
            pending,
            stop,
        }) = world.clients[i].lane.take()
        else {
            unreachable!("t{i}'s renewal lane steps only while it runs");
        };
        let input = match pending {
            Pending::Answer { tag, input, .. } => {
                note(notes, || {
                    format!("{tag}: t{i}'s watchdog receives {}", show_input(&input))
                });
                input
            }
            Pending::Sleep { wake_tick, .. } => {
                debug_assert!(world.now_tick >= wake_tick, "a renewal lane sleeps its whole period");
                Input::Woke
            }
            other => unreachable!("t{i}'s watchdog stepped while it waits for {other:?}"),
        };
        let now_us = self.client_now_us(world);
        let mut step = self.resume(&mut machine, input, now_us, notes);
        if stop && matches!(step.action, Action::Sleep { .. }) {
            // The release asked it to stop: it ends at this sleep.
            step = self.resume(&mut machine, Input::StopRequested, now_us, notes);
        }
        let tag = step.tag;
        let lease = F::lane_lease(&machine);
        let (pending, done) = Self::pending_of(world.now_tick, step, notes);
        if let Some(hold) = Self::hold_mut(&mut world.clients[i].phase) {
            if F::valid_until_us(&lease, &self.lock) != F::valid_until_us(&hold.lease, &self.lock) {
                note(notes, || {
                    let validity = self.show_validity(&lease);
                    format!(
                        "t{i}'s lease now {}",
                        validity.strip_prefix("its lease ").unwrap_or(&validity)
                    )
                });
            }
            hold.lease = lease;
        }
        world.clients[i].lane = Some(match done {
            None => Lane::Running { machine, pending, stop },
            Some(output) => {
                let end = F::lane_ended(output);
                match end {
                    RenewalEnd::Lost | RenewalEnd::Expired => {
                        note(notes, || {
                            format!("{tag} => t{i}'s watchdog ends: {end:?}; t{i} is told its lease is LOST")
                        });
                        if let Some(hold) = Self::hold_mut(&mut world.clients[i].phase) {
                            hold.lost = true;
                        }
                    }
                    RenewalEnd::QuietlyEnded => {
                        note(notes, || {
                            format!("{tag} => t{i}'s watchdog ENDS QUIETLY: nobody renews t{i}'s lease, and t{i} is not told")
                        })
                    }
                    RenewalEnd::Stopped => note(notes, || format!("{tag} => t{i}'s watchdog stops: unlock() goes on")),
                }
                Lane::Ended(end)
            }
        });
    }

    /// The hold of a client that holds (or waits in `unlock()` for its lane).
    fn hold_mut(phase: &mut Phase<F>) -> Option<&mut Hold<F::Lease>> {
        match phase {
            Phase::Holding(hold) | Phase::Extending(_, hold) | Phase::Unlocking(hold) => Some(hold),
            _ => None,
        }
    }

    fn write_resource(&self, world: &mut World<F>, i: usize, grant: Grant, token: &str, notes: &mut Notes) {
        let resource = &mut world.resource;
        let admission = resource.admit::<F>(grant, token);
        if F::FENCING {
            // The fence refuses a token below the highest it accepted; what it cannot refuse
            // is another acquisition's write with the same token (two holders sharing one).
            if !admission.accepted {
                let fence = resource.fence.as_deref().unwrap_or_default();
                note(notes, || {
                    format!("the resource REFUSES t{i}'s write (grant {grant}): its token {token} is below {fence}, the highest it has seen")
                });
                return;
            }
            let shared = admission.stale;
            resource.fence = Some(token.to_owned());
            if shared {
                resource.stale_write = true;
                note(notes, || {
                    format!("the resource ACCEPTS t{i}'s write (grant {grant}) with token {token}, the token another acquisition wrote with: the fence cannot tell them apart")
                });
            } else {
                note(notes, || {
                    format!("the resource accepts t{i}'s write (grant {grant}, token {token})")
                });
            }
            resource.last_write = Some((i as u8, grant));
            return;
        }
        match resource.last_write {
            Some((writer, last)) if admission.stale => {
                resource.stale_write = true;
                note(notes, || {
                    format!(
                        "the resource ACCEPTS t{i}'s write (grant {grant}) after t{writer}'s (grant {last}), a later acquisition's: {}",
                        if F::FENCING { "its token did not stop it" } else { "no fencing stops it" }
                    )
                });
            }
            _ => note(notes, || format!("the resource accepts t{i}'s write (grant {grant})")),
        }
        resource.last_write = Some((i as u8, grant));
    }

    fn step_client(&self, world: &mut World<F>, i: usize, notes: &mut Notes) {
        match std::mem::replace(&mut world.clients[i].phase, Phase::Idle) {
            Phase::Idle => {
                let k = world.clients[i].completed;
                let token = token(i, k);
                note(notes, || {
                    format!("t{i} calls lock() (acquisition {}, token {token})", k + 1)
                });
                let machine = F::acquire(KEY, &token, Patience::Wait);
                self.after_acquire(world, i, machine, Input::Start, notes);
            }
            Phase::Acquiring(machine) => {
                let input = Self::take_input(world, i, notes);
                self.after_acquire(world, i, machine, input, notes);
            }
            Phase::Extending(machine, hold) => {
                let input = Self::take_input(world, i, notes);
                self.after_extend(world, i, machine, hold, input, notes);
            }
            Phase::Releasing(machine) => {
                let input = Self::take_input(world, i, notes);
                self.after_release(world, i, machine, input, notes);
            }
            Phase::Holding(hold) => self.hold_step(world, i, hold, notes),
            Phase::Unlocking(hold) => {
                note(notes, || format!("t{i}'s watchdog has ended: unlock() goes on"));
                world.clients[i].lane = None;
                let machine = F::release(hold.lease);
                self.after_release(world, i, machine, Input::Start, notes);
            }
            Phase::Finished => unreachable!("a finished client takes no step"),
        }
    }

    fn apply_request(&self, world: &mut World<F>, i: usize, notes: &mut Notes) {
        let Pending::Request { tag, command } = std::mem::replace(&mut world.clients[i].pending, Pending::Nothing)
        else {
            unreachable!("the server applies only a request in flight");
        };
        let (owners_before, queue_before): (Vec<(usize, u8)>, Vec<String>) = if F::FIFO {
            (
                self.key_owners(world).into_iter().map(|(owner, _)| owner).collect(),
                F::queue(&world.server),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let (reply, server_now_ms, published) = world.server.apply_from(i, &command, world.now_tick);
        self.note_queue(world, i, (&owners_before, &queue_before), notes);
        note(notes, || {
            format!(
                "{tag}: the server (clock {}) applies t{i}'s {} -> {}",
                server_now_ms / MILLIS_PER_TICK,
                command,
                reply
            )
        });
        self.publish(world, &published, notes);
        world.clients[i].pending = Pending::Answer {
            tag,
            command,
            input: Input::Reply(reply),
        };
    }

    /// The server applies client i's renewal lane's request.
    fn apply_lane_request(&self, world: &mut World<F>, i: usize, notes: &mut Notes) {
        let Some(Lane::Running { pending, .. }) = &mut world.clients[i].lane else {
            unreachable!("the server applies only a running lane's request");
        };
        let Pending::Request { tag, command } = std::mem::replace(pending, Pending::Nothing) else {
            unreachable!("the server applies only a request in flight");
        };
        let (reply, server_now_ms, published) = world.server.apply_from(i, &command, world.now_tick);
        note(notes, || {
            format!(
                "{tag}: the server (clock {}) applies t{i}'s watchdog's {} -> {}",
                server_now_ms / MILLIS_PER_TICK,
                command,
                reply
            )
        });
        self.publish(world, &published, notes);
        if let Some(Lane::Running { pending, .. }) = &mut world.clients[i].lane {
            *pending = Pending::Answer {
                tag,
                command,
                input: Input::Reply(reply),
            };
        }
    }

    /// Redis pub/sub: a message goes out to every client subscribed to its channel (each waiter
    /// in `lock()` on its [`FamilyLock::notification_channel`]: the RLock's waiters share one,
    /// the fair lock's each have their own; a message to nobody is gone).
    fn publish(&self, world: &mut World<F>, channels: &[String], notes: &mut Notes) {
        for channel in channels {
            // A watch (ZooKeeper, etcd) fires for one client, named by the server: it reaches
            // that client if it still waits in `lock()` (a watch of an earlier call is moot).
            if let Some(j) = channel.strip_prefix("watch:t").and_then(|j| j.parse::<usize>().ok()) {
                let waiting = j < world.clients.len() && matches!(world.clients[j].phase, Phase::Acquiring(_));
                note(notes, || {
                    if waiting {
                        format!("t{j}'s watch fires: a message goes out to t{j}")
                    } else {
                        format!("t{j}'s watch fires, but t{j} no longer waits in lock(): nobody listens")
                    }
                });
                if waiting {
                    let client = &mut world.clients[j];
                    client.messages_in_flight = (client.messages_in_flight + 1).min(MAX_MESSAGES_IN_FLIGHT);
                }
                continue;
            }
            let waiters: Vec<usize> = (0..world.clients.len())
                .filter(|&j| matches!(world.clients[j].phase, Phase::Acquiring(_)))
                .filter(|&j| {
                    F::notification_channel(KEY, &token(j, world.clients[j].completed)).as_ref() == Some(channel)
                })
                .collect();
            if waiters.is_empty() && F::notification_channel(KEY, "").is_none() {
                continue;
            }
            note(notes, || {
                if waiters.is_empty() {
                    format!("the unlock message on {channel} has no subscriber: it is gone")
                } else {
                    let names: Vec<String> = waiters.iter().map(|j| format!("t{j}")).collect();
                    format!("the unlock message on {channel} goes out to {}", names.join(", "))
                }
            });
            for j in waiters {
                let client = &mut world.clients[j];
                client.messages_in_flight = (client.messages_in_flight + 1).min(MAX_MESSAGES_IN_FLIGHT);
            }
        }
    }

    fn lose(world: &mut World<F>, i: usize, after_apply: bool, notes: &mut Notes) {
        world.store_failures_used += 1;
        Self::lose_pending(&mut world.clients[i].pending, i, after_apply, notes);
    }

    fn lose_lane(world: &mut World<F>, i: usize, after_apply: bool, notes: &mut Notes) {
        world.store_failures_used += 1;
        let Some(Lane::Running { pending, .. }) = &mut world.clients[i].lane else {
            unreachable!("only a running lane's request is lost");
        };
        Self::lose_pending(pending, i, after_apply, notes);
    }

    fn lose_pending(pending: &mut Pending<F::Command, F::Reply>, i: usize, after_apply: bool, notes: &mut Notes) {
        match std::mem::replace(pending, Pending::Nothing) {
            Pending::Request { tag, command } if !after_apply => {
                note(notes, || {
                    format!(
                        "{tag}: FAULT: t{i}'s {} is lost before the server sees it; t{i} is told it failed (nothing applied)",
                        command
                    )
                });
                *pending = Pending::Answer {
                    tag,
                    command,
                    input: Input::Failed(StoreFailure::Unavailable),
                };
            }
            Pending::Answer {
                tag,
                command,
                input: Input::Reply(reply),
            } if after_apply => {
                note(notes, || {
                    format!(
                        "{tag}: FAULT: the reply {} to t{i}'s {} is lost after it applied; t{i} sees a timeout",
                        reply, command
                    )
                });
                *pending = Pending::Answer {
                    tag,
                    command,
                    input: Input::Failed(StoreFailure::Timeout),
                };
            }
            other => unreachable!("no {after_apply} loss of {other:?}"),
        }
    }

    /// The successor of `world` under `act`, with what happened (notes only when asked).
    fn apply(&self, world: &World<F>, act: Act, mut notes: Notes) -> (World<F>, Notes) {
        let mut next = world.clone();
        let w = &mut next;
        match act {
            Act::Client(i) => self.step_client(w, usize::from(i), &mut notes),
            Act::Apply(i) => self.apply_request(w, usize::from(i), &mut notes),
            Act::Replicate => {
                w.server.replicate();
                note(&mut notes, || {
                    format!(
                        "one batch reaches the replica ({} still pending)",
                        w.server.pending_batches()
                    )
                });
            }
            Act::Tick => {
                w.now_tick += 1;
                note(&mut notes, || {
                    format!("time passes: now {} -> {}", world.now_tick, world.now_tick + 1)
                });
                self.pass_time(w, &mut notes);
            }
            Act::Lose { client, after_apply } => Self::lose(w, usize::from(client), after_apply, &mut notes),
            Act::Pause(i) => {
                w.clients[usize::from(i)].paused_at_tick = Some(w.now_tick);
                w.fault_used = true;
                note(&mut notes, || {
                    format!("t{i} is PAUSED between its check and its write (a GC pause): it takes no step while time passes")
                });
            }
            Act::Resume(i) => {
                let since = w.clients[usize::from(i)].paused_at_tick.take().unwrap_or(w.now_tick);
                note(&mut notes, || {
                    format!(
                        "t{i} resumes after {} ticks, right where it was: about to write",
                        w.now_tick - since
                    )
                });
            }
            Act::Restart => {
                let what = w.server.restart();
                w.fault_used = true;
                note(&mut notes, || what);
                self.pass_time(w, &mut notes);
            }
            Act::Failover => {
                let lost = w.server.failover();
                w.fault_used = true;
                note(&mut notes, || {
                    format!(
                        "FAILOVER: the replica is promoted; {lost} acknowledged batch(es) it had not received are lost"
                    )
                });
            }
            Act::ClockJump => {
                let what = w.server.clock_jump(F::TTL_TICKS, world.now_tick);
                w.fault_used = true;
                note(&mut notes, || what);
                self.pass_time(w, &mut notes);
            }
            Act::Lane(i) => self.step_lane(w, usize::from(i), &mut notes),
            Act::ApplyLane(i) => self.apply_lane_request(w, usize::from(i), &mut notes),
            Act::LoseLane { client, after_apply } => Self::lose_lane(w, usize::from(client), after_apply, &mut notes),
            Act::Notify(i) => {
                let client = &mut w.clients[usize::from(i)];
                client.messages_in_flight -= 1;
                client.message_arrived = true;
                note(&mut notes, || {
                    format!("the unlock message reaches t{i}: a sleep until notified ends at once")
                });
            }
            Act::LoseNotification(i) => {
                w.clients[usize::from(i)].messages_in_flight -= 1;
                w.fault_used = true;
                note(&mut notes, || {
                    format!("FAULT: the unlock message to t{i} is LOST: t{i} sleeps out the holder's TTL")
                });
            }
        }
        // Canonical form: an expired key behaves as absent for every command, and a server's
        // clock never goes back, so the server drops it.
        w.server.canonical(w.now_tick);
        (next, notes)
    }

    /// The server's clock moved: what the server does on its own (heartbeats arrive from the
    /// clients not paused, sessions and leases expire), and the watches that fired.
    fn pass_time(&self, world: &mut World<F>, notes: &mut Notes) {
        let beating: Vec<bool> = world.clients.iter().map(|c| c.paused_at_tick.is_none()).collect();
        let told = world.server.pass_time(world.now_tick, &beating);
        self.publish(world, &told, notes);
    }

    fn client_enabled(&self, world: &World<F>, i: usize) -> bool {
        let client = &world.clients[i];
        match &client.phase {
            Phase::Idle | Phase::Holding(_) => true,
            Phase::Finished => false,
            // unlock() goes on once the renewal lane has ended.
            Phase::Unlocking(_) => matches!(client.lane, Some(Lane::Ended(_))),
            Phase::Acquiring(_) | Phase::Extending(..) | Phase::Releasing(_) => {
                let at_bound = world.now_tick >= self.max_tick;
                Self::pending_ready(world, &client.pending, at_bound, client.message_arrived)
            }
        }
    }

    /// Is a machine's pending action done: its answer arrived, or its sleep is over (an arrived
    /// unlock message ends a sleep until notified)? `at_bound`: time has stopped at the bound,
    /// and a sleep there ends at once, so that a waiter keeps trying and a starvation shows as
    /// a cycle. (Not a renewal lane's: renewing for ever while time stands still would show
    /// nothing, and with a replica it would fill the replication stream state after state.)
    fn pending_ready(
        world: &World<F>,
        pending: &Pending<F::Command, F::Reply>,
        at_bound: bool,
        message_arrived: bool,
    ) -> bool {
        match pending {
            Pending::Answer { .. } => true,
            Pending::Sleep {
                wake_tick,
                until_notified,
            } => world.now_tick >= *wake_tick || at_bound || (*until_notified && message_arrived),
            Pending::Request { .. } => false,
            Pending::Nothing => unreachable!("a running machine always has a pending action"),
        }
    }

    /// Time may not pass while a running client is between its check and its write, nor while
    /// an unlock message is on its way (pub/sub delivers within a tick; losing one is the
    /// lost-notification fault's business).
    fn urgent(world: &World<F>) -> bool {
        world.clients.iter().any(|c| {
            c.messages_in_flight > 0
                || (c.paused_at_tick.is_none() && matches!(&c.phase, Phase::Holding(hold) if hold.checked))
        })
    }

    fn enabled(&self, world: &World<F>, acts: &mut Vec<Act>) {
        let may_lose = world.store_failures_used < self.store_failures;
        for (i, client) in world.clients.iter().enumerate() {
            let id = i as u8;
            if let Some(paused_at) = client.paused_at_tick {
                if world.now_tick > paused_at {
                    acts.push(Act::Resume(id));
                }
                continue;
            }
            if self.client_enabled(world, i) {
                acts.push(Act::Client(id));
            }
            match &client.pending {
                Pending::Request { .. } => {
                    acts.push(Act::Apply(id));
                    if may_lose {
                        acts.push(Act::Lose {
                            client: id,
                            after_apply: false,
                        });
                    }
                }
                // A read's reply lost after it applied is the same as the request lost before.
                Pending::Answer {
                    command,
                    input: Input::Reply(_),
                    ..
                } if may_lose && !<F::Server as ModelServer>::is_read(command) => acts.push(Act::Lose {
                    client: id,
                    after_apply: true,
                }),
                _ => {}
            }
            let about_to_write = matches!(&client.phase, Phase::Holding(hold) if hold.checked);
            // A pause needs time to pass: none at the bound, where time stops.
            let time_left = world.now_tick < self.max_tick;
            if self.fault == Fault::Pause && i == 0 && about_to_write && !world.fault_used && time_left {
                acts.push(Act::Pause(id));
            }
            // The renewal lane: the same process, so paused with it (above).
            if let Some(Lane::Running { pending, .. }) = &client.lane {
                if Self::pending_ready(world, pending, false, false) {
                    acts.push(Act::Lane(id));
                }
                match pending {
                    Pending::Request { .. } => {
                        acts.push(Act::ApplyLane(id));
                        if may_lose {
                            acts.push(Act::LoseLane {
                                client: id,
                                after_apply: false,
                            });
                        }
                    }
                    Pending::Answer {
                        command,
                        input: Input::Reply(_),
                        ..
                    } if may_lose && !<F::Server as ModelServer>::is_read(command) => acts.push(Act::LoseLane {
                        client: id,
                        after_apply: true,
                    }),
                    _ => {}
                }
            }
            if client.messages_in_flight > 0 {
                acts.push(Act::Notify(id));
                if self.fault == Fault::LostNotification && !world.fault_used {
                    acts.push(Act::LoseNotification(id));
                }
            }
        }
        if world.server.pending_batches() > 0 {
            acts.push(Act::Replicate);
            // A failover with nothing in flight loses nothing: it changes no reply.
            if self.fault == Fault::Failover && !world.fault_used {
                acts.push(Act::Failover);
            }
        }
        if !world.fault_used {
            match self.fault {
                // A restart of an empty server loses nothing.
                Fault::Restart if world.server.can_restart() => acts.push(Act::Restart),
                Fault::ServerClockJump => acts.push(Act::ClockJump),
                _ => {}
            }
        }
        if world.now_tick < self.max_tick && !Self::urgent(world) {
            acts.push(Act::Tick);
        }
    }

    fn show_pending(pending: &Pending<F::Command, F::Reply>) -> String {
        match pending {
            Pending::Nothing => String::new(),
            Pending::Sleep { wake_tick, .. } => format!(" [asleep until {wake_tick}]"),
            Pending::Request { command, .. } => format!(" [{} in flight]", command),
            Pending::Answer { input, .. } => format!(" [answer {} in flight]", show_input(input)),
        }
    }

    fn show_client(&self, world: &World<F>, i: usize) -> String {
        let client = &world.clients[i];
        let what = match &client.phase {
            Phase::Idle => "idle".to_owned(),
            Phase::Acquiring(_) => "acquiring".to_owned(),
            Phase::Holding(hold) | Phase::Extending(_, hold) => {
                let mut text = format!(
                    "{} (lease < {}{})",
                    if matches!(client.phase, Phase::Extending(..)) {
                        "extends"
                    } else {
                        "holds"
                    },
                    show_us(F::valid_until_us(&hold.lease, &self.lock)),
                    if hold.lost { ", knows it is lost" } else { "" }
                );
                if hold.checked {
                    text.push_str(" checked, about to write");
                }
                text
            }
            Phase::Unlocking(_) => "unlocking, waits for its watchdog".to_owned(),
            Phase::Releasing(_) => "releasing".to_owned(),
            Phase::Finished => "done".to_owned(),
        };
        let paused = if client.paused_at_tick.is_some() { " PAUSED" } else { "" };
        let lane = match &client.lane {
            None => String::new(),
            Some(Lane::Running { pending, .. }) => format!(" (watchdog{})", Self::show_pending(pending)),
            Some(Lane::Ended(end)) => format!(" (watchdog ended: {end:?})"),
        };
        let messages = match (client.messages_in_flight, client.message_arrived) {
            (0, false) => String::new(),
            (0, true) => " [unlock message arrived]".to_owned(),
            (n, _) => format!(" [{n} unlock message(s) on the way]"),
        };
        format!(
            "t{i} {what}{}{lane}{messages}{paused}",
            Self::show_pending(&client.pending)
        )
    }
}

// ---- properties, in one place ----

fn t1_belief<F: ModelFamily>(model: &FamilyModel<F>, world: &World<F>) -> bool {
    (0..world.clients.len()).filter(|&i| model.believes(world, i)).count() <= 1
}

fn t1_resource<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>) -> bool {
    !world.resource.stale_write
}

fn c_free<F: ModelFamily>(model: &FamilyModel<F>, world: &World<F>) -> bool {
    model.key_owners(world).into_iter().all(|((i, k), _)| {
        world
            .clients
            .get(i)
            .is_none_or(|c| c.gave_up_clean & acquisition_bit(k) == 0)
    })
}

fn c_release<F: ModelFamily>(model: &FamilyModel<F>, world: &World<F>) -> bool {
    model.key_owners(world).into_iter().all(|((i, k), _)| {
        world
            .clients
            .get(i)
            .is_none_or(|c| c.released & acquisition_bit(k) == 0)
    })
}

fn t2_never_gives_up<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>) -> bool {
    world.clients.iter().all(|c| c.gave_up_waiting == 0)
}

/// C-lost, for a lock whose holder runs a renewal lane: a holder that a later acquisition
/// overtook (its key gone or expired) either has been told (the lane ended `Lost` or
/// `Expired`, or its own check found the lease run out), or its lane is still running, and
/// so asks the server again within one renewal period. A lane that ended quietly leaves it
/// believing until its clock says otherwise, with nothing that would tell it sooner.
fn c_lost<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>) -> bool {
    world.clients.iter().all(|c| match (&c.phase, &c.lane) {
        (Phase::Holding(hold) | Phase::Extending(_, hold), Some(Lane::Ended(RenewalEnd::QuietlyEnded))) => {
            hold.lost || world.grants <= hold.grant + 1
        }
        _ => true,
    })
}

/// F-order, for a lock that promises first come, first served: no `lock()` call returns with
/// the lock while a call that reached the server before it still waits.
fn f_order<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>) -> bool {
    !world.overtaken
}

/// C-token, for a lock whose token grows (czxid, create revision): no acquisition is granted
/// a token at or below an earlier holder's.
fn c_token<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>) -> bool {
    !world.token_went_down
}

fn t2_open<F: ModelFamily>(_: &FamilyModel<F>, world: &World<F>, client: usize) -> bool {
    matches!(world.clients[client].phase, Phase::Acquiring(_))
}

fn client_name(client: usize) -> String {
    format!("t{client}")
}

impl<F: ModelFamily> Model for FamilyModel<F> {
    type State = World<F>;
    type Action = Act;

    /// Every state is inside, until the check's memory guard fires (`check::memory_allows`).
    fn within_boundary(&self, _: &Self::State) -> bool {
        crate::check::memory_allows()
    }

    fn init_states(&self) -> Vec<World<F>> {
        vec![self.initial()]
    }

    fn actions(&self, state: &World<F>, actions: &mut Vec<Act>) {
        self.enabled(state, actions);
    }

    fn next_state(&self, state: &World<F>, action: Act) -> Option<World<F>> {
        Some(self.apply(state, action, None).0)
    }

    fn format_action(&self, action: &Act) -> String {
        action.to_string()
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("T1-belief at most one client believes it holds the lock", t1_belief),
            Property::always(
                if F::FENCING {
                    "T1-resource the fenced resource accepts no stale or shared token"
                } else {
                    "T1-resource no write from an acquisition after a later one's"
                },
                t1_resource,
            ),
            Property::always("C-free a lock() that gave up leaves no key with its token", c_free),
            Property::always(
                "C-release an unlock() that returned leaves no key with its token",
                c_release,
            ),
            Property::always(
                "T2 no lock() returns without the lock while the store answers",
                t2_never_gives_up,
            ),
        ]
        .into_iter()
        .chain(F::RENEWAL_LANE.then(|| {
            Property::always(
                "C-lost a holder whose lock another took is told, or its watchdog still asks",
                c_lost,
            )
        }))
        // F-order needs a call that can queue behind another waiter, or come back to a queue:
        // 2 clients x 1 acquisition have none, and would pass it vacuously.
        .chain((F::FIFO && (self.clients >= 3 || self.acquisitions >= 2)).then(|| {
            Property::always(
                "F-order the lock goes to the lock() calls in the order they reached the server",
                f_order,
            )
        }))
        .chain(F::FENCING.then(|| {
            Property::always(
                "C-token a holder whose key is live has a token above every earlier holder's",
                c_token,
            )
        }))
        .collect()
    }
}

impl<F: ModelFamily> Fairness for FamilyModel<F> {
    fn fair_actor(&self, action: &Act) -> Option<u8> {
        let n = self.clients;
        match *action {
            Act::Client(i) | Act::Resume(i) => Some(i),
            Act::Apply(i) => Some(n + i),
            Act::Replicate => Some(2 * n),
            Act::Tick => Some(2 * n + 1),
            // The renewal lane is a task of its own, the unlock message a delivery of its own.
            Act::Lane(i) => Some(2 * n + 2 + i),
            Act::ApplyLane(i) => Some(3 * n + 2 + i),
            Act::Notify(i) => Some(4 * n + 2 + i),
            Act::Lose { .. }
            | Act::Pause(_)
            | Act::Restart
            | Act::Failover
            | Act::ClockJump
            | Act::LoseLane { .. }
            | Act::LoseNotification(_) => None,
        }
    }

    fn fair_actor_name(&self, actor: u8) -> String {
        let n = self.clients;
        match actor {
            a if a < n => format!("t{a}"),
            a if a < 2 * n => format!("server for t{}", a - n),
            a if a == 2 * n => "replication".into(),
            a if a == 2 * n + 1 => "clock".into(),
            a if a < 3 * n + 2 => format!("t{}'s watchdog", a - 2 * n - 2),
            a if a < 4 * n + 2 => format!("server for t{}'s watchdog", a - 3 * n - 2),
            a => format!("the unlock message to t{}", a - 4 * n - 2),
        }
    }

    fn at_bound(&self, world: &World<F>) -> bool {
        world.now_tick >= self.max_tick
    }
}

impl<F: ModelFamily> CheckedModel for FamilyModel<F> {
    fn title(&self) -> String {
        let fault = match self.fault {
            Fault::None => "none".to_owned(),
            Fault::Pause => "t0 may pause between checking its lease and writing".to_owned(),
            Fault::StoreFailure => format!(
                "{} request(s) may be lost before applying, or their reply after (retries {})",
                self.store_failures,
                self.lock.as_ref().max_retries
            ),
            other => F::describe_fault(other),
        };
        format!(
            "{} | {} x {} | ticks up to {}, {} | resource {} | faults: {fault}",
            F::describe_lock(&self.lock, self.extend),
            cassalock_judge::text::count(self.clients, "client"),
            cassalock_judge::text::count(self.acquisitions, "acquisition"),
            self.max_tick,
            F::describe_timing(&self.lock),
            if F::FENCING {
                "fenced: it refuses a token below the highest it has seen"
            } else {
                "without fencing"
            },
        )
    }

    fn obligations(&self) -> Vec<Obligation<Self>> {
        vec![Obligation {
            name: "T2 every client that calls lock() acquires",
            count: usize::from(self.clients),
            open: t2_open,
            subject: client_name,
        }]
    }

    fn measures(&self) -> Vec<Measure<Self>> {
        vec![
            Measure {
                name: "C-free lock() calls that gave up (the store kept failing)",
                unit: "call(s)",
                value: |_, world: &World<F>| {
                    Some(
                        world
                            .clients
                            .iter()
                            .map(|c| u64::from(c.gave_up_clean.count_ones()))
                            .sum(),
                    )
                },
            },
            Measure {
                name: "C-release a released acquisition's key stays live for",
                unit: "more ticks",
                value: |model: &FamilyModel<F>, world: &World<F>| model.released_key_left_ticks(world),
            },
        ]
        .into_iter()
        .chain(F::notification_channel(KEY, "").map(|_| Measure {
            name: "C-release a waiter sleeps on while the lock is free and no unlock message is on its way, for",
            unit: "more ticks",
            value: |model: &FamilyModel<F>, world: &World<F>| model.asleep_on_a_free_lock_ticks(world),
        }))
        .collect()
    }

    fn clock_bound(&self) -> Option<u8> {
        Some(self.max_tick)
    }

    fn describe_step(&self, state: &World<F>, action: &Act) -> (World<F>, Vec<String>) {
        let (next, notes) = self.apply(state, *action, Some(Vec::new()));
        let mut lines = notes.unwrap_or_default();
        if lines.is_empty() {
            lines.push("(no visible effect)".into());
        }
        (next, lines)
    }

    fn describe_state(&self, world: &World<F>) -> String {
        let believers: Vec<String> = (0..world.clients.len())
            .filter(|&i| self.believes(world, i))
            .map(|i| format!("t{i}"))
            .collect();
        let believers = if believers.is_empty() {
            "nobody".to_owned()
        } else {
            believers.join(" AND ")
        };
        let clients: Vec<String> = (0..world.clients.len()).map(|i| self.show_client(world, i)).collect();
        let last_write = world
            .resource
            .last_write
            .map_or("-".to_owned(), |(i, grant)| format!("t{i} (grant {grant})"));
        format!(
            "now {} {} | believe: {believers} | {} | resource last written by {last_write}",
            world.now_tick,
            world.server.describe(world.now_tick),
            clients.join(", "),
        )
    }

    fn record_of_path(&self, init: usize, actions: &[Act]) -> Option<crate::check::EventRecord> {
        Some(self.path_record(init, actions))
    }

    fn actor(&self, action: &Act) -> String {
        match action {
            Act::Client(i) | Act::Resume(i) => format!("t{i}"),
            Act::Lane(i) => format!("t{i} watchdog"),
            Act::Apply(_) | Act::ApplyLane(_) => "server".into(),
            Act::Replicate => "replication".into(),
            Act::Tick => "clock".into(),
            Act::Notify(_) => "pub/sub".into(),
            Act::Lose { .. }
            | Act::Pause(_)
            | Act::Restart
            | Act::Failover
            | Act::ClockJump
            | Act::LoseLane { .. }
            | Act::LoseNotification(_) => "faults".into(),
        }
    }
}
