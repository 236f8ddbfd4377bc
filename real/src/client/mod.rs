//! The locks people run, as shipped: client programs that drive a real client library
//! (Redisson, Curator, go-redsync, etcd's client, redis-py, kazoo, or a user's own code) and
//! speak cassalock's client protocol (`docs/client-protocol.md`), run as black boxes against the
//! real servers, under faults, and judged from their event record by the one judge.
//!
//! A client program is a few dozen lines around a library: it says hello, then turns each
//! command cassalock sends (`lock`, `try_lock`, `write`, `extend`, `unlock`, `exit`) into the
//! library's call, and each return into an answer with the client's clock. It holds no lock
//! logic of its own; cassalock holds the workload (who asks when, how long a hold lasts), the
//! resource the holders write to, and the faults (a holder's process stopped past its lease),
//! and writes everything down in the event record every other driver writes.
//!
//! - [`protocol`]: the lines, read strictly (a break names its line);
//! - [`process`]: one client program, its pipes, its process group, its bounds;
//! - [`proxy`]: a client's forwarders to its servers, which a fault can cut;
//! - [`run`]: N copies taking turns, the resource, the planned pause, the record;
//! - [`server_reading`]: cassalock's own readings of the servers, for T1-server.

pub mod faults;
pub mod process;
pub mod protocol;
pub mod proxy;
pub mod run;
pub mod server_reading;
