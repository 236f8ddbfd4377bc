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
//! redisson/redisson#775, a watchdog that is not rescheduled after one failed renewal and ends
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
//! **Redisson's fenced lock** (`--model redisson-fenced`): the RLock's hash, watchdog, unlock
//! message and release, with the fenced acquire script, which also counts up a counter key
//! beside the hash (no expiry) and answers its value as the holder's token. The token grows, so
//! the model's resource fences with it and checks C-token, as for ZooKeeper and etcd below. The
//! counter lives on the same server as the lock: a restart without persistence empties both,
//! and a failover promotes a replica that may lack the last `INCR`, so both hand a token out
//! again (pinned in `models/tests/redisson_fenced.rs`, beside the RLock's counts).
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
//! watch fires for the next waiter. A heartbeat that finds its session expired wakes its client
//! (every watcher of the session gets the Expired event) and leaves its handle dead: the next
//! request on it, or one already in flight, is answered SESSIONEXPIRED, and only then does the
//! client open a new session (as the simulator's and a real server's do). Curator's holder has **no bound of its own** (`valid_until_us` is
//! `u64::MAX`): it believes until something tells it, and the recipe tells it nothing. So a
//! **pause** past the session timeout breaks **T1-belief**: the paused holder's session expires,
//! the waiter holds, and the paused holder still believes (its write is refused by the fence:
//! T1-resource holds). A clock jump past the session timeout expires every session at once (the
//! model jumps by the timeout plus a tick: a session heard from this very tick survives a jump
//! of exactly the timeout); the waiter's acquisition fails on SESSIONEXPIRED, and its next
//! `lock()` holds while the old holder believes. A lost create reply is ridden out (Curator's
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
//! the machine's state carry that send (the counts below grew by about a quarter). etcd-io/etcd#11456 (`--mutant etcd-11456`: held after the wait
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
//! states without a fault, 2,484 under a pause (T1-belief VIOLATED), 13,658 with a lost request
//! or reply, 2,930 under a restart, 13,416 under a clock jump, 1,568 with a lost watch (the
//! waiter sleeps until the bound); 19,026 at 2 x 2 without a fault, 325,906 at 2 x 2 under a
//! clock jump (T1-belief VIOLATED). A jump expires every session: the waiter's request in
//! flight is answered SESSIONEXPIRED on the session it was sent on and its acquisition fails
//! (at 2 x 1 nobody else holds); its second `lock()`, on a new session, holds while the old
//! holder, never told, believes. A heartbeat that finds its session expired only wakes its
//! client: the handle stays dead until a request is answered SESSIONEXPIRED, as in the
//! simulator and against a real server. etcd's are
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
    FamilyLock, MemcachedLock, RedissonFairLock, RedissonLock, RedlockLock, RenewalEnd, SetNxLock,
};
use cassalock::algo::redis::redisson::RedissonMutants;
use cassalock::algo::redis::redlock::RedlockMutants;
use cassalock::algo::server_holder::ServerNow;
use cassalock::algo::zookeeper::curator_mutex::CuratorMutants;
use cassalock::algo::{Input, Machine, Step};
#[cfg(doc)]
use cassalock::store::redis_keyspace::RedisKeyspace;
#[cfg(doc)]
use cassalock::store::redis_replication::ReplicatedRedis;
use cassalock::store::MICROS_PER_SECOND;

use crate::{Fault, Mutant, SpecError};
use cassalock::registry::Lock;

mod client;
mod lane;
mod locks;
mod properties;
mod queue;
mod runnable;
mod servers;
mod state;
mod step;
mod trace;

pub(crate) use locks::model_retry;
pub use locks::{registered_models, REDISSON_FAIR_SLOT_TICKS, REDISSON_LEASE_TICKS};
pub use runnable::{FamilyCheck, MatrixLine, RegisteredModel};

/// The family model of `lock`, if it has one.
pub fn registered_model(lock: Lock) -> Option<RegisteredModel> {
    registered_models().into_iter().find(|model| model.lock == lock)
}
pub(crate) use servers::ms_of_tick;
pub use servers::{MemcachedServer, RedisInstance, RedisServer, RedlockMasters, REDLOCK_MASTERS};
pub use state::{Act, Client, Hold, Lane, Pending, Phase, Resource, World};

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

    /// The model's CLI name (`redis-set-nx`): its lock's registry entry's `model`.
    const MODEL: &'static str;

    /// The lock of the registry this is the model of (`None`: a lock defined outside
    /// cassalock, which runs its model without the registry, as examples/own-lock does).
    const LOCK: Option<Lock> = None;

    /// What the model checks, in a line (`check --help`).
    const HELP: &'static str;

    /// `--extend` applies: the holders extend the key themselves (a watchdog's or a
    /// keep-alive's renewal needs no flag).
    const EXTENDS: bool = false;

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

    /// Switch on `mutant` in `mutants` if it is a bug of this lock's client: `Ok(true)`;
    /// `Ok(false)`: not this lock's; `Err`: this lock's, but not with these settings.
    fn plant(mutant: Mutant, mutants: &mut FamilyMutants, extend: bool) -> Result<bool, SpecError> {
        let _ = (mutant, mutants, extend);
        Ok(false)
    }

    /// How the property matrix runs this lock's model under `fault`, where the family's line
    /// does not fit this lock ([`MatrixLine`]; the default: the family's line as it is).
    fn matrix_line(fault: Fault) -> MatrixLine {
        let _ = fault;
        MatrixLine::default()
    }

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

    /// Every instance clients talk to, with its clock now: what the lock reads its holder
    /// from (T1-server, [`FamilyLock::holder_on_servers`]).
    fn states(&self, now_tick: u8) -> Vec<ServerNow<'_>>;
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
