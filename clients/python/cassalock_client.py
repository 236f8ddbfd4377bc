"""cassalock's client protocol, version 1, for Python lock libraries (docs/client-protocol.md).

A client program hands `serve` a shim: an object whose methods are each one call into its
library, as the library's documentation shows, and nothing more:

    acquire(lease_ms, wait_ms) -> (token, valid_until_us) when it got the lock, None when its
        wait ran out; lease_ms None: the library's default lease; wait_ms None: wait as long as
        the library waits
    token() -> the token of the lock held, as the protected code would send it to a resource
    extend(lease_ms) -> the new validity on the client's clock (microseconds), or None
    release() -> True (released) or False (the library said the lock was not ours); an
        exception in `not_held` means not ours too, any other a failure
    close() -> release the library's connections

`serve` says hello, answers each command on standard input with one line on standard output
(`unlock` with `releasing` before the release call, then `released`), and returns at `exit` or
when its input ends. `lost(why)` says, from any thread, that the library told the holder its
lock is lost. Lines are written whole under one lock, so listener threads cannot interleave
them; the library's own logging belongs on standard error.
"""

import json
import os
import sys
import threading
import time

PROTOCOL = "cassalock-client"
VERSION = 1

_out = threading.Lock()


def now_us():
    """This machine's wall clock, microseconds since the Unix epoch."""
    return time.time_ns() // 1000


def say(**fields):
    """Print one line of the protocol, stamped with the client's clock."""
    fields.setdefault("clock_us", now_us())
    line = json.dumps(fields, separators=(",", ":"))
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def lost(why):
    """The library told the holder its lock is lost."""
    say(event="lost", why=why)


def describe(error):
    """An exception as its type and text."""
    return f"{type(error).__name__}: {error}"


def serve(shim, library, library_version, lock, tokens, not_held=()):
    """Speak the protocol for `shim` until `exit`. `tokens`: "fencing" or "random".

    With CASSALOCK_SELF_LOOP=N in the environment, speak no protocol: take and release the lock
    N times in a plain loop (each hold CASSALOCK_HOLD_MS, the lease CASSALOCK_LEASE_MS), print
    the loop's seconds, and return. That is the library without cassalock, which
    `cassalock bench clients` times beside the same library driven through the protocol.
    """
    if os.environ.get("CASSALOCK_SELF_LOOP"):
        self_loop(shim, int(os.environ["CASSALOCK_SELF_LOOP"]))
        return
    say(
        protocol=PROTOCOL,
        version=VERSION,
        library=library,
        library_version=library_version,
        lock=lock,
        tokens=tokens,
    )
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        kind, ident = command["cmd"], command.get("id")
        if kind == "exit":
            break
        try:
            if kind in ("lock", "try_lock"):
                got = shim.acquire(command.get("lease_ms"), command.get("wait_ms"))
                if got is None:
                    say(event="not_acquired", id=ident, why="the wait ran out")
                else:
                    token, valid_until_us = got
                    say(event="acquired", id=ident, token=str(token), valid_until_us=valid_until_us)
            elif kind == "write":
                say(event="written", id=ident, token=str(shim.token()))
            elif kind == "extend":
                say(event="extended", id=ident, valid_until_us=shim.extend(command["lease_ms"]))
            elif kind == "unlock":
                say(event="releasing", id=ident)
                release(shim, ident, not_held)
            else:
                say(event="failed", id=ident, error=f"no such command: {kind}")
        except Exception as error:  # the library's error is the answer
            say(event="failed", id=ident, error=describe(error))
    shim.close()


def release(shim, ident, not_held):
    try:
        ours = shim.release()
    except not_held as error:
        say(event="released", id=ident, outcome="not_held", error=describe(error))
    except Exception as error:
        say(event="released", id=ident, outcome="failed", error=describe(error))
    else:
        if ours is False:
            say(event="released", id=ident, outcome="not_held", error="the library returned False")
        else:
            say(event="released", id=ident, outcome="released", error=None)


def self_loop(shim, count):
    """The library's own loop, timed: acquire, hold, read the token, release."""
    hold_s = int(os.environ.get("CASSALOCK_HOLD_MS", "0")) / 1000
    lease = os.environ.get("CASSALOCK_LEASE_MS")
    lease_ms = int(lease) if lease else None
    started = time.monotonic()
    for _ in range(count):
        shim.acquire(lease_ms, None)
        time.sleep(hold_s)
        shim.token()
        shim.release()
    print(json.dumps({"self_loop": count, "seconds": time.monotonic() - started}), flush=True)
    shim.close()
