"""kazoo's `Lock` on ZooKeeper as a cassalock client (docs/client-protocol.md).

    kazoo_lock.py [--servers HOST:PORT,...] [--session-ms MS]

Locks the znode /locks/$CASSALOCK_LOCK (where our machine of Curator's recipe keeps its nodes, so
that cassalock can read the server as our rule does: docs/client-protocol.md, T1-server). kazoo's lock has no lease of its own: its holder's
node lives as long as the client's session, whose timeout is --session-ms (a lease in a command
is not the library's to set and is ignored). The token is the lock node's czxid, which grows
with every node ZooKeeper creates: a fencing token. A session the library reports LOST is said
as `lost`.
"""

import argparse
import os
import sys
from importlib.metadata import version

from kazoo.client import KazooClient, KazooState

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cassalock_client as protocol  # noqa: E402


class KazooLock:
    def __init__(self, client, path, identifier):
        self.client = client
        self.lock = client.Lock(path, identifier)
        self.czxid = None

    def acquire(self, lease_ms, wait_ms):
        wait = None if wait_ms is None else wait_ms / 1000
        if not self.lock.acquire(blocking=True, timeout=wait):
            return None
        # The token is read once, as the holder's code would, right after acquiring.
        self.czxid = self.client.exists(f"{self.lock.path}/{self.lock.node}").czxid
        return self.czxid, None

    def token(self):
        return self.czxid

    def extend(self, lease_ms):
        raise NotImplementedError("kazoo's Lock has no lease to extend: its session is kept alive")

    def release(self):
        return self.lock.release()

    def close(self):
        self.client.stop()
        self.client.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="127.0.0.1:22181", help="host:port of the ensemble, comma-separated")
    parser.add_argument("--session-ms", type=int, default=10000, help="the session's timeout, milliseconds")
    args = parser.parse_args()
    client = KazooClient(hosts=args.servers, timeout=args.session_ms / 1000)

    def on_state(state):
        if state == KazooState.LOST:
            protocol.lost("the session is lost (KazooState.LOST)")

    client.add_listener(on_state)
    client.start(timeout=15)
    name = os.environ.get("CASSALOCK_LOCK", "cassalock")
    protocol.serve(
        KazooLock(client, f"/locks/{name}", os.environ.get("CASSALOCK_CLIENT", "")),
        library="kazoo",
        library_version=version("kazoo"),
        lock="Lock",
        tokens="fencing",
    )


if __name__ == "__main__":
    main()
