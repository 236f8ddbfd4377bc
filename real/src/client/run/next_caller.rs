//! The next caller: once every client is done, one more copy of the program asks for the lock with
//! try_lock, and what it gets judges C-free and C-release.

use super::*;

/// How long the next caller's `try_lock` waits unless told otherwise (`real
/// --next-caller-wait-ms`, `bench clients`), milliseconds.
pub const DEFAULT_NEXT_CALLER_WAIT_MS: u64 = 1000;

/// The next caller asks for the lock with `try_lock`, once every other client is done: one
/// [`What::NextCaller`] event with what it got; if it got the lock, it releases it.
pub(super) fn ask_next_caller(shared: &Shared, process: &mut ClientProcess) -> Result<(), ClientFault> {
    let wait_ms = shared.spec.next_caller_wait_ms.unwrap_or(1);
    let mut client = Client {
        shared,
        index: shared.spec.clients,
        name: NEXT_CALLER.to_owned(),
        next_id: 0,
        thread: None,
        lost_notices: 0,
    };
    let ask = Command::TryLock {
        id: client.id(),
        wait_ms,
        lease_ms: shared.spec.lease_ms,
    };
    process.send(&ask)?;
    let (got, why, clock_us) = match client.answer(process, &ask) {
        Ok(Answer::Acquired { clock_us, .. }) => (NextCallerGot::Acquired, String::new(), clock_us),
        Ok(Answer::NotAcquired { why, clock_us, .. }) => (NextCallerGot::Taken, protocol::cut(&why), clock_us),
        Ok(Answer::Failed { error, clock_us, .. }) => (NextCallerGot::Failed, protocol::cut(&error), clock_us),
        Ok(other) => return Err(client.unexpected(process, &ask, &other)),
        // A try_lock that never returns is the library's call hanging, as for any client: T2
        // is violated, and the next caller learnt nothing (C-free and C-release undecided).
        // The process is killed at exit.
        Err(fault @ ClientFault::Silent { waited_ms, .. }) => {
            shared.push(
                now_us(),
                NEXT_CALLER,
                None,
                What::Unanswered {
                    client: NEXT_CALLER.to_owned(),
                    call: Call::TryLock,
                    waited_ms,
                },
            );
            shared.push(
                now_us(),
                NEXT_CALLER,
                None,
                What::NextCaller {
                    wait_ms,
                    got: NextCallerGot::NoAnswer,
                    why: format!("no answer within {waited_ms} ms"),
                },
            );
            return Err(fault);
        }
        Err(fault) => return Err(fault),
    };
    shared.push(
        clock_us,
        NEXT_CALLER,
        Some(clock_us),
        What::NextCaller { wait_ms, got, why },
    );
    if got != NextCallerGot::Acquired {
        return Ok(());
    }
    let unlock = Command::Unlock { id: client.id() };
    process.send(&unlock)?;
    // `releasing`, then `released`: what it says is not judged, the lock was free.
    for _ in 0..2 {
        match client.answer(process, &unlock)? {
            Answer::Releasing { .. } | Answer::Released { .. } => {}
            other => return Err(client.unexpected(process, &unlock, &other)),
        }
    }
    Ok(())
}
