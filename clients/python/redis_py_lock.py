"""redis-py's `Lock` (`Redis.lock`) as a cassalock client (docs/client-protocol.md).

    redis_py_lock.py [--server HOST:PORT]

Locks the key named by CASSALOCK_LOCK on one Redis server. A lease in a command is the lock's
`timeout` (none: the key never expires, redis-py's default); a try_lock's wait is
`blocking_timeout`. The token is the random value redis-py stores in the key.
"""

import argparse
import os
import sys

import redis
from redis.exceptions import LockNotOwnedError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cassalock_client as protocol  # noqa: E402


class RedisPyLock:
    def __init__(self, client, name):
        self.client = client
        self.name = name
        self.lock = None

    def acquire(self, lease_ms, wait_ms):
        timeout = None if lease_ms is None else lease_ms / 1000
        self.lock = self.client.lock(self.name, timeout=timeout)
        wait = None if wait_ms is None else wait_ms / 1000
        if not self.lock.acquire(blocking=True, blocking_timeout=wait):
            return None
        return self.lock.local.token.decode(), None

    def token(self):
        return self.lock.local.token.decode()

    def extend(self, lease_ms):
        self.lock.extend(lease_ms / 1000, replace_ttl=True)
        return None

    def release(self):
        self.lock.release()
        return True

    def close(self):
        self.client.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:16380", help="host:port of the Redis server")
    args = parser.parse_args()
    host, port = args.server.rsplit(":", 1)
    client = redis.Redis(host=host, port=int(port))
    client.ping()
    protocol.serve(
        RedisPyLock(client, os.environ.get("CASSALOCK_LOCK", "cassalock")),
        library="redis-py",
        library_version=redis.__version__,
        lock="Lock",
        tokens="random",
        not_held=(LockNotOwnedError,),
    )


if __name__ == "__main__":
    main()
