package cassalock;

import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * Apache Curator's {@code InterProcessMutex} as a cassalock client (docs/client-protocol.md).
 *
 * <pre>CuratorMutex [--servers HOST:PORT,...] [--session-ms MS]</pre>
 *
 * Locks /locks/$CASSALOCK_LOCK (where our machine of it keeps its nodes, so that cassalock can
 * read the server as our rule does: docs/client-protocol.md, T1-server). The mutex has no lease of its own: its holder's node lives
 * as long as the client's session, whose timeout is {@code --session-ms} (a lease in a command
 * is ignored). The token is the lock node's czxid, which grows with every node ZooKeeper
 * creates: a fencing token. A connection state the library reports LOST is said as {@code lost}.
 */
public final class CuratorMutex implements CassalockClient.Shim {
    /** The mutex, its own node's path in reach (Curator keeps it protected). */
    private static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String ownNode() {
            return getLockPath();
        }
    }

    private final CuratorFramework client;
    private final Mutex mutex;
    private String token;

    private CuratorMutex(CuratorFramework client, Mutex mutex) {
        this.client = client;
        this.mutex = mutex;
    }

    @Override
    public CassalockClient.Acquired acquire(Long leaseMs, Long waitMs) throws Exception {
        if (waitMs == null) {
            mutex.acquire();
        } else if (!mutex.acquire(waitMs, TimeUnit.MILLISECONDS)) {
            return null;
        }
        // Read once, as the holder's code would, right after acquiring.
        token = Long.toString(client.checkExists().forPath(mutex.ownNode()).getCzxid());
        return new CassalockClient.Acquired(token, null);
    }

    @Override
    public String token() {
        return token;
    }

    @Override
    public Long extend(long leaseMs) {
        throw new UnsupportedOperationException("InterProcessMutex has no lease to extend: its session is kept alive");
    }

    @Override
    public boolean release() throws Exception {
        mutex.release();
        return true;
    }

    @Override
    public void close() {
        client.close();
    }

    public static void main(String[] args) throws Exception {
        String servers = "127.0.0.1:22181";
        int sessionMs = 10_000;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--servers" -> servers = args[i + 1];
                case "--session-ms" -> sessionMs = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        CuratorFramework client = CuratorFrameworkFactory.newClient(servers, sessionMs, Math.min(sessionMs, 15_000),
                new ExponentialBackoffRetry(100, 3));
        client.getConnectionStateListenable().addListener((framework, state) -> {
            if (state == ConnectionState.LOST) {
                CassalockClient.lost("the connection state is LOST");
            }
        });
        client.start();
        if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
            System.err.println("CuratorMutex: no ZooKeeper answered on " + servers + " within 15 s");
            System.exit(1);
        }
        String name = System.getenv().getOrDefault("CASSALOCK_LOCK", "cassalock");
        CassalockClient.serve(new CuratorMutex(client, new Mutex(client, "/locks/" + name)), "Curator",
                CassalockClient.mavenVersion(InterProcessMutex.class, "org.apache.curator", "curator-recipes"),
                "InterProcessMutex", "fencing", IllegalMonitorStateException.class);
        System.exit(0);
    }
}
