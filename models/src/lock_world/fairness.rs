//! The bookkeeping behind F: the order threads started waiting in, overtakes, and whether whoever
//! acquires is at the head of the queue. It lives in the state (`World::wait_order`,
//! `World::order_broken`, `Thread::overtaken`) because stateright's properties read states; it
//! is kept only where F is checked, and a broken order or an overtake past the bound only in the
//! state that broke it (see the reductions in `lock_world`).

use cassalock::algo::{LeaseCells, LockId};

use super::config::LOCK;
use super::state::World;
use super::trace::{note, Events};

/// Thread i's acquisition ended: take it out of the wait order. Returns the threads that
/// started waiting before it and still wait.
pub(super) fn leave_wait_order(world: &mut World, i: usize) -> Vec<u8> {
    let position = world
        .wait_order
        .iter()
        .position(|&t| usize::from(t) == i)
        .expect("a waiting thread is in the wait order");
    let earlier: Vec<u8> = world.wait_order.drain(..=position).take(position).collect();
    world.wait_order.splice(0..0, earlier.iter().copied());
    earlier
}

/// F-order: did thread i acquire while another live queue cell sorted before its own?
pub(super) fn check_queue_order(
    world: &mut World,
    i: usize,
    lease: &LeaseCells,
    coordinator_now_us: u64,
    events: &mut Events,
) {
    let Some(column) = &lease.queue_column else {
        return;
    };
    let lock = LockId::new(LOCK).expect("valid");
    let head = world.store.read_slice(&lock.queue_row(), "", 1, coordinator_now_us);
    if head.first().is_some_and(|cell| cell.column < *column) {
        world.order_broken = true;
        note(events, || {
            format!(
                "F: t{i} took the lock while {} was ahead of it in the queue",
                head[0].column
            )
        });
    }
}

/// F-overtakes: every thread that started waiting before thread i and still waits is
/// overtaken (counted up to `bound + 1`, which is all the property needs).
pub(super) fn count_overtakes(world: &mut World, i: usize, earlier: &[u8], bound: u8, events: &mut Events) {
    let cap = bound.saturating_add(1);
    for &earlier in earlier {
        let t = &mut world.threads[usize::from(earlier)];
        t.overtaken = t.overtaken.saturating_add(1).min(cap);
        note(events, || {
            format!("F: t{i} overtook t{earlier}, which started waiting earlier")
        });
    }
}
