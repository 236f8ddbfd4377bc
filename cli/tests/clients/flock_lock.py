"""A test client: a lock on this machine only, `flock` on a file, and ways to break it.

    flock_lock.py FILE [--barge] [--keep-after-give-up] [--keep-after-release]
        [--say-garbage-after N] [--hang-after N] [--exit-after N] [--close-input-after N]
        [--wrong-id] [--no-hello] [--clock-in-ms] [--lost-spam] [--hang-on-try-lock]
        [--lost-before-hang-ms MS] [--lost-at-start]

--barge says acquired without taking the lock (a broken lock: two holders at once);
--keep-after-give-up leaves a mark (FILE.left) when a try_lock gives up, and the lock is taken
while the mark is there (a queue entry a give-up left behind, ahead of every later caller);
--keep-after-release says released
and keeps the lock (a release that did nothing); --hang-on-try-lock never answers a try_lock
(a call that hangs); --lost-before-hang-ms MS, with --hang-after, says `lost` MS ms into the
hang (a line before the silence); --lost-at-start says `lost` right after its hello, unasked
(a library's notice printed while nobody reads it: an idle copy's line waits in the pipe); the others break the protocol before the N-th
command (0-based); --close-input-after N closes its input before the N-th command and
answers it, so cassalock's next command finds no reader. Tokens are the count of acquisitions kept in FILE.count,
under the lock: a fencing token.
"""

import argparse
import fcntl
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../clients/python"))
import cassalock_client as protocol  # noqa: E402


# Files whose lock a broken mode keeps: never closed while the process lives.
KEPT = []


class FlockLock:
    def __init__(self, path, barge, keep_after_give_up=False, keep_after_release=False):
        self.path = path
        self.barge = barge
        self.keep_after_give_up = keep_after_give_up
        self.keep_after_release = keep_after_release
        self.file = None
        self.held = None

    def taken(self):
        """Take the lock if it is free: the flock, and no mark a give-up left."""
        self.file = open(self.path, "a+")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.close()
            return True
        if os.path.exists(self.path + ".left"):
            self.file.close()
            return True
        return False

    def acquire(self, lease_ms, wait_ms):
        if self.barge:
            self.file = open(self.path, "a+")
        elif wait_ms is None and not self.keep_after_give_up:
            self.file = open(self.path, "a+")
            fcntl.flock(self.file, fcntl.LOCK_EX)
        else:
            stop = None if wait_ms is None else time.monotonic() + wait_ms / 1000
            while self.taken():
                if stop is not None and time.monotonic() >= stop:
                    if self.keep_after_give_up:
                        open(self.path + ".left", "w").close()
                    return None
                time.sleep(0.005)
        with open(self.path + ".count", "a+") as counter:
            fcntl.flock(counter, fcntl.LOCK_EX)
            counter.seek(0)
            count = int(counter.read() or "0") + 1
            counter.seek(0)
            counter.truncate()
            counter.write(str(count))
        self.held = count
        return count, None

    def token(self):
        return self.held

    def extend(self, lease_ms):
        return None

    def release(self):
        if self.keep_after_release:
            KEPT.append(self.file)
        else:
            self.file.close()
        return True

    def close(self):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--barge", action="store_true")
    parser.add_argument("--keep-after-give-up", action="store_true")
    parser.add_argument("--keep-after-release", action="store_true")
    parser.add_argument("--say-garbage-after", type=int)
    parser.add_argument("--hang-after", type=int)
    parser.add_argument("--exit-after", type=int)
    parser.add_argument("--close-input-after", type=int)
    parser.add_argument("--wrong-id", action="store_true")
    parser.add_argument("--no-hello", action="store_true")
    parser.add_argument("--clock-in-ms", action="store_true")
    parser.add_argument("--lost-spam", action="store_true")
    parser.add_argument("--hang-on-try-lock", action="store_true")
    parser.add_argument("--lost-before-hang-ms", type=int)
    parser.add_argument("--lost-at-start", action="store_true")
    args = parser.parse_args()
    if args.clock_in_ms:
        # The usual mistake: a clock in milliseconds where microseconds are asked for.
        protocol.now_us = lambda: time.time_ns() // 1_000_000
    if args.no_hello:
        time.sleep(3600)
    sys.stdin = Breaking(sys.stdin, args)
    lock = FlockLock(args.file, args.barge, args.keep_after_give_up, args.keep_after_release)
    protocol.serve(lock, library="flock", library_version="0", lock="flock",
                   tokens="fencing")


class Breaking:
    """Standard input that breaks the protocol on cue: before the N-th command (0-based) it
    prints garbage, hangs or exits; with --wrong-id it answers every command twice, the first
    time with another id."""

    def __init__(self, lines, args):
        self.lines = lines
        self.args = args

    def __iter__(self):
        if self.args.lost_at_start:  # runs once serve() starts reading, after its hello
            protocol.lost("a notice printed before anyone asked")
        for seen, line in enumerate(self.lines):
            if seen == self.args.say_garbage_after:
                print("this is not JSON", flush=True)
            if seen == self.args.hang_after:
                if self.args.lost_before_hang_ms is not None:
                    time.sleep(self.args.lost_before_hang_ms / 1000)
                    protocol.lost("a line before the silence")
                time.sleep(3600)
            if self.args.hang_on_try_lock and '"try_lock"' in line:
                time.sleep(3600)
            if seen == self.args.exit_after:
                sys.exit(3)
            if seen == self.args.close_input_after:
                os.close(0)
                yield line
                time.sleep(5)
                sys.exit(3)
            if self.args.lost_spam:
                for _ in range(1200):
                    protocol.lost("again")
            if self.args.wrong_id:
                protocol.say(event="acquired", id=99, token="1")
            yield line


if __name__ == "__main__":
    main()
