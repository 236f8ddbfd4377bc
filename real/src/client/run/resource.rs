//! The run's resource, as the runner keeps it: the highest write it accepted, by fencing token or
//! acquisition order; and SIGPIPE ignored while the clients run.

/// The resource's state: the highest write it accepted.
#[derive(Default)]
pub(super) struct Resource {
    highest: Option<Order>,
}

/// A write's place in the order of writes: a fencing token's digits, or an acquisition's time
/// and client.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Order {
    Fencing(usize, String),
    Acquired(u64, usize),
}

impl Resource {
    /// (accepted, stale).
    pub(super) fn write(&mut self, order: Order, fencing: bool) -> (bool, bool) {
        let stale = self.highest.as_ref().is_some_and(|highest| order < *highest);
        let accepted = !(stale && fencing);
        if accepted && self.highest.as_ref().is_none_or(|highest| order > *highest) {
            self.highest = Some(order);
        }
        (accepted, stale)
    }
}

/// SIGPIPE ignored while it lives: a command written to a client that closed its input (it
/// died, or broke) must fail as a write, which names the client, instead of killing cassalock
/// (a command line tool keeps SIGPIPE's default). The disposition before is restored on drop.
pub(super) struct PipesMayClose {
    #[cfg(unix)]
    before: libc::sighandler_t,
}

impl PipesMayClose {
    pub(super) fn new() -> PipesMayClose {
        PipesMayClose {
            // SAFETY: changing a signal's disposition; no handler of ours runs.
            #[cfg(unix)]
            before: unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) },
        }
    }
}

impl Drop for PipesMayClose {
    fn drop(&mut self) {
        // SAFETY: as above, restoring what was there.
        #[cfg(unix)]
        unsafe {
            libc::signal(libc::SIGPIPE, self.before);
        }
    }
}
