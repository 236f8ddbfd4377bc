//! The memory guard of a model check: the process's resident memory, watched while stateright
//! runs and our graph is built, and the flag every model's `within_boundary` reads, so that a
//! breadth-first frontier that would fill the machine stops growing and the check says it was
//! cut (never "holds").

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The part of the machine's memory a check may fill before stateright stops expanding states.
const MEMORY_SHARE_PERCENT: u64 = 60;
/// What `max_memory_bytes` is when the machine's memory cannot be read.
const FALLBACK_MEMORY_BYTES: u64 = 8 << 30;
/// How often the memory guard reads the process's resident memory.
const MEMORY_POLL: Duration = Duration::from_millis(50);

/// The machine's memory (`/proc/meminfo`'s MemTotal), if it can be read.
pub fn machine_memory_bytes() -> Option<u64> {
    kilobytes_in("/proc/meminfo", "MemTotal:").map(|kb| kb.saturating_mul(1024))
}

/// The part of the machine's memory a check may fill by default (60%, `MEMORY_SHARE_PERCENT`).
pub fn default_max_memory_bytes() -> u64 {
    machine_memory_bytes().map_or(FALLBACK_MEMORY_BYTES, |bytes| bytes / 100 * MEMORY_SHARE_PERCENT)
}

/// The kilobytes on the line of `file` that begins with `key` ("VmRSS:", "MemTotal:").
fn kilobytes_in(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|line| line.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// Set by a check's memory guard when the process's memory passed its limit; read by every
/// model's `within_boundary`. Process-wide, as resident memory is: checks running at the same
/// time in one process are all cut, and each reports it. Cleared when the last check running
/// finishes.
static MEMORY_LIMIT_HIT: AtomicBool = AtomicBool::new(false);
/// Checks running in this process.
static CHECKS_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// May stateright expand one more state? False once a check's memory guard fired.
pub fn memory_allows() -> bool {
    !MEMORY_LIMIT_HIT.load(Ordering::Relaxed)
}

/// Watches the process's resident memory while stateright runs and our graph is built.
pub(crate) struct MemoryGuard {
    stop: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl MemoryGuard {
    pub(crate) fn start(max_bytes: u64) -> Self {
        CHECKS_RUNNING.fetch_add(1, Ordering::SeqCst);
        let stop = Arc::new(AtomicBool::new(false));
        let watching = Arc::clone(&stop);
        let watcher = std::thread::Builder::new()
            .name("check-memory-guard".into())
            .spawn(move || {
                while !watching.load(Ordering::Relaxed) {
                    let resident = kilobytes_in("/proc/self/status", "VmRSS:").map_or(0, |kb| kb * 1024);
                    if resident > max_bytes {
                        MEMORY_LIMIT_HIT.store(true, Ordering::Relaxed);
                    }
                    // Woken early by `finish`, so a short check does not wait out a poll.
                    std::thread::park_timeout(MEMORY_POLL);
                }
            })
            .ok();
        MemoryGuard { stop, watcher }
    }

    /// Stop watching; did the limit fire while this check ran?
    pub(crate) fn finish(mut self) -> bool {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(watcher) = self.watcher.take() {
            watcher.thread().unpark();
            let _ = watcher.join();
        }
        !memory_allows()
    }
}

impl Drop for MemoryGuard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if CHECKS_RUNNING.fetch_sub(1, Ordering::SeqCst) == 1 {
            MEMORY_LIMIT_HIT.store(false, Ordering::Relaxed);
        }
    }
}
