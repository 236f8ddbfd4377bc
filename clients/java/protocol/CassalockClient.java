package cassalock;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/**
 * cassalock's client protocol, version 1 (docs/client-protocol.md), for Java lock libraries.
 *
 * <p>A client program hands {@link #serve} a {@link Shim}: each of its methods is one call into
 * the library, as the library's documentation shows, and nothing more. {@code serve} says
 * hello, answers each command on standard input with one line on standard output ({@code
 * unlock} with {@code releasing} before the release call, then {@code released}), and returns
 * at {@code exit}. {@link #lost} says, from any thread, that the library told the holder its
 * lock is lost. The protocol's lines go to the process's original standard output, written
 * whole under one lock; {@code System.out} is pointed at standard error, so a library that
 * prints cannot break a line.
 */
public final class CassalockClient {
    public static final int VERSION = 1;

    /** The library's calls. */
    public interface Shim {
        /** Take the lock: its token, or null when the wait ran out. {@code leaseMs} null: the
         * library's default lease; {@code waitMs} null: wait as long as the library waits. */
        Acquired acquire(Long leaseMs, Long waitMs) throws Exception;

        /** The token of the lock held, as the protected code would send it to a resource. */
        String token();

        /** Extend the held lock's lease: the new validity on the client's clock, or null. */
        Long extend(long leaseMs) throws Exception;

        /** Release: true when released, false when the library said the lock was not ours. */
        boolean release() throws Exception;

        void close();
    }

    /** A lock taken: its token and, where the library says, how long it is good for. */
    public record Acquired(String token, Long validUntilUs) {}

    private static final PrintStream PROTOCOL =
            new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);

    static {
        System.setOut(System.err);
    }

    private CassalockClient() {}

    /** This machine's wall clock, microseconds since the Unix epoch. */
    public static long nowUs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    /** Print one line of the protocol: the fields in order, then the client's clock. */
    public static synchronized void say(Object... keysAndValues) {
        StringBuilder line = new StringBuilder("{");
        for (int i = 0; i < keysAndValues.length; i += 2) {
            line.append(quote((String) keysAndValues[i])).append(':').append(value(keysAndValues[i + 1])).append(',');
        }
        line.append("\"clock_us\":").append(nowUs()).append('}');
        PROTOCOL.print(line.append('\n'));
        PROTOCOL.flush();
    }

    /** The library told the holder its lock is lost. */
    public static void lost(String why) {
        say("event", "lost", "why", why);
    }

    /** A package's version, from its jar's Maven metadata ("unknown" when it has none). */
    public static String mavenVersion(Class<?> inJar, String group, String artifact) {
        String path = "/META-INF/maven/" + group + "/" + artifact + "/pom.properties";
        try (InputStream in = inJar.getResourceAsStream(path)) {
            Properties properties = new Properties();
            properties.load(in);
            return properties.getProperty("version", "unknown");
        } catch (Exception e) {
            return "unknown";
        }
    }

    /** Speak the protocol for {@code shim} until {@code exit}. {@code tokens}: "fencing" or
     * "random"; {@code notHeld}: the exceptions by which the library says a lock is not ours. */
    @SafeVarargs
    public static void serve(Shim shim, String library, String version, String lock, String tokens,
            Class<? extends Throwable>... notHeld) throws Exception {
        say("protocol", "cassalock-client", "version", VERSION, "library", library, "library_version", version,
                "lock", lock, "tokens", tokens);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> command = parse(line);
            String kind = (String) command.get("cmd");
            Object id = command.get("id");
            if ("exit".equals(kind)) {
                break;
            }
            try {
                switch (kind) {
                    case "lock", "try_lock" -> {
                        Acquired got = shim.acquire((Long) command.get("lease_ms"), (Long) command.get("wait_ms"));
                        if (got == null) {
                            say("event", "not_acquired", "id", id, "why", "the wait ran out");
                        } else {
                            say("event", "acquired", "id", id, "token", got.token(), "valid_until_us", got.validUntilUs());
                        }
                    }
                    case "write" -> say("event", "written", "id", id, "token", shim.token());
                    case "extend" -> say("event", "extended", "id", id, "valid_until_us",
                            shim.extend((Long) command.get("lease_ms")));
                    case "unlock" -> {
                        say("event", "releasing", "id", id);
                        release(shim, id, notHeld);
                    }
                    default -> say("event", "failed", "id", id, "error", "no such command: " + kind);
                }
            } catch (Exception e) {
                say("event", "failed", "id", id, "error", describe(e));
            }
        }
        shim.close();
    }

    private static void release(Shim shim, Object id, Class<? extends Throwable>[] notHeld) {
        try {
            if (shim.release()) {
                say("event", "released", "id", id, "outcome", "released", "error", null);
            } else {
                say("event", "released", "id", id, "outcome", "not_held", "error", "the library returned false");
            }
        } catch (Exception e) {
            boolean ours = false;
            for (Class<? extends Throwable> kind : notHeld) {
                ours |= kind.isInstance(e);
            }
            say("event", "released", "id", id, "outcome", ours ? "not_held" : "failed", "error", describe(e));
        }
    }

    /** An exception as its type and message. */
    public static String describe(Throwable e) {
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    private static String value(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof Number) {
            return value.toString();
        }
        return quote(value.toString());
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    /** A command: one flat JSON object of strings, whole numbers and nulls. */
    static Map<String, Object> parse(String line) {
        Map<String, Object> fields = new LinkedHashMap<>();
        int[] at = {skip(line, 0)};
        expect(line, at, '{');
        while (true) {
            at[0] = skip(line, at[0]);
            if (line.charAt(at[0]) == '}') {
                return fields;
            }
            String key = string(line, at);
            at[0] = skip(line, at[0]);
            expect(line, at, ':');
            at[0] = skip(line, at[0]);
            char c = line.charAt(at[0]);
            Object value;
            if (c == '"') {
                value = string(line, at);
            } else if (line.startsWith("null", at[0])) {
                value = null;
                at[0] += 4;
            } else {
                int end = at[0];
                while (end < line.length() && (Character.isDigit(line.charAt(end)) || line.charAt(end) == '-')) {
                    end++;
                }
                value = Long.parseLong(line.substring(at[0], end));
                at[0] = end;
            }
            fields.put(key, value);
            at[0] = skip(line, at[0]);
            if (line.charAt(at[0]) == ',') {
                at[0]++;
            }
        }
    }

    private static int skip(String line, int at) {
        while (at < line.length() && Character.isWhitespace(line.charAt(at))) {
            at++;
        }
        return at;
    }

    private static void expect(String line, int[] at, char c) {
        if (line.charAt(at[0]) != c) {
            throw new IllegalArgumentException("expected " + c + " at " + at[0] + " of " + line);
        }
        at[0]++;
    }

    private static String string(String line, int[] at) {
        expect(line, at, '"');
        StringBuilder out = new StringBuilder();
        while (line.charAt(at[0]) != '"') {
            char c = line.charAt(at[0]++);
            if (c == '\\') {
                char escaped = line.charAt(at[0]++);
                switch (escaped) {
                    case 'n' -> out.append('\n');
                    case 't' -> out.append('\t');
                    case 'r' -> out.append('\r');
                    case 'u' -> {
                        out.append((char) Integer.parseInt(line.substring(at[0], at[0] + 4), 16));
                        at[0] += 4;
                    }
                    default -> out.append(escaped);
                }
            } else {
                out.append(c);
            }
        }
        at[0]++;
        return out.toString();
    }
}
