//! F-order's bookkeeping, for a lock that promises first come, first served: which `lock()`
//! call reached the server before which, who a script dropped from the queue, and who was
//! served ahead of a call queued before it.

use super::trace::{note, token, Notes};
use super::{FamilyModel, ModelFamily, Phase, World};

impl<F: ModelFamily> FamilyModel<F> {
    /// F-order: client i's `lock()` call returns (or was served): it leaves everyone's view of
    /// the queue.
    pub(super) fn leave_queue(world: &mut World<F>, i: usize) {
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
    pub(super) fn note_queue(
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
}
