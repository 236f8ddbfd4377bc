package cassalock;

import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson's locks as a cassalock client (docs/client-protocol.md).
 *
 * <pre>RedissonLocks [--server HOST:PORT] [--kind rlock|fair|fenced] [--watchdog-ms MS]</pre>
 *
 * Locks $CASSALOCK_LOCK on one Redis server with {@code getLock} (rlock), {@code getFairLock}
 * (fair) or {@code getFencedLock} (fenced). A lease in a command is the call's {@code
 * leaseTime}; none: the watchdog renews it every third of {@code --watchdog-ms} (Redisson's
 * default, 30 s, unless given). The fenced lock's token is its counter, 1, 2, 3, ...; the
 * others' is the value Redisson keeps in the lock's hash, its client id and thread.
 */
public final class RedissonLocks implements CassalockClient.Shim {
    private final RedissonClient redisson;
    private final RLock lock;
    private String token;

    private RedissonLocks(RedissonClient redisson, RLock lock) {
        this.redisson = redisson;
        this.lock = lock;
    }

    @Override
    public CassalockClient.Acquired acquire(Long leaseMs, Long waitMs) throws Exception {
        long lease = leaseMs == null ? -1 : leaseMs;
        if (lock instanceof RFencedLock fenced) {
            Long got = waitMs == null
                    ? fenced.lockAndGetToken(lease, TimeUnit.MILLISECONDS)
                    : fenced.tryLockAndGetToken(waitMs, lease, TimeUnit.MILLISECONDS);
            if (got == null) {
                return null;
            }
            token = got.toString();
        } else {
            if (waitMs == null) {
                lock.lock(lease, TimeUnit.MILLISECONDS);
            } else if (!lock.tryLock(waitMs, lease, TimeUnit.MILLISECONDS)) {
                return null;
            }
            token = redisson.getId() + ":" + Thread.currentThread().getId();
        }
        return new CassalockClient.Acquired(token, null);
    }

    @Override
    public String token() {
        return token;
    }

    @Override
    public Long extend(long leaseMs) {
        throw new UnsupportedOperationException("Redisson's RLock has no call that extends a held lock's lease");
    }

    @Override
    public boolean release() {
        lock.unlock();
        return true;
    }

    @Override
    public void close() {
        redisson.shutdown();
    }

    public static void main(String[] args) throws Exception {
        String server = "127.0.0.1:16380";
        String kind = "rlock";
        Long watchdogMs = null;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--server" -> server = args[i + 1];
                case "--kind" -> kind = args[i + 1];
                case "--watchdog-ms" -> watchdogMs = Long.parseLong(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        Config config = new Config();
        config.useSingleServer().setAddress("redis://" + server);
        if (watchdogMs != null) {
            config.setLockWatchdogTimeout(watchdogMs);
        }
        RedissonClient redisson = Redisson.create(config);
        String name = System.getenv().getOrDefault("CASSALOCK_LOCK", "cassalock");
        RLock lock = switch (kind) {
            case "rlock" -> redisson.getLock(name);
            case "fair" -> redisson.getFairLock(name);
            case "fenced" -> redisson.getFencedLock(name);
            default -> throw new IllegalArgumentException("--kind " + kind + ": rlock, fair or fenced");
        };
        String lockName = switch (kind) {
            case "rlock" -> "RLock";
            case "fair" -> "fair lock";
            default -> "RFencedLock";
        };
        CassalockClient.serve(new RedissonLocks(redisson, lock), "Redisson",
                CassalockClient.mavenVersion(Redisson.class, "org.redisson", "redisson"), lockName,
                kind.equals("fenced") ? "fencing" : "random", IllegalMonitorStateException.class);
        System.exit(0);
    }
}
