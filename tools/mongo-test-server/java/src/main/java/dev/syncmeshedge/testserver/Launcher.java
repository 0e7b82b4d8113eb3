package dev.syncmeshedge.testserver;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import de.bwaldvogel.mongo.backend.AbstractMongoBackend;
import org.h2.mvstore.MVStore;

/**
 * Starts mongo-java-server, a MongoDB-compatible test server (NOT MongoDB), with its oplog
 * enabled so that change streams work. The oplog is bounded like MongoDB's capped one and its
 * change events are MongoDB's (see {@link CappedOplog}); it says it is MongoDB 7.0 and answers
 * {@code hello} (see {@link Handshake}).
 *
 * <p>Contract with the TypeScript starter (../src/index.ts):
 * <ul>
 *   <li>prints exactly one line {@code READY mongodb://HOST:PORT/} on stdout once it accepts connections;</li>
 *   <li>on SIGTERM/SIGINT it stops listening, closes the backend (the H2 store is committed and
 *       closed, so on-disk data survives) and exits 0;</li>
 *   <li>with {@code --exit-on-stdin-eof} it also shuts down when its stdin closes, so a test runner
 *       that dies never leaves a JVM behind.</li>
 * </ul>
 */
public final class Launcher {

    /** Enough for a listener that is minutes behind; a change-stream poll reads only the entries after its position. */
    static final int DEFAULT_OPLOG_MAX_ENTRIES = 10_000;
    static final int DEFAULT_OPLOG_MAX_AGE_S = 120;
    /**
     * How long H2 keeps a replaced chunk of the on-disk store (its default: 45 s). A reader that
     * traverses an older version needs that version's chunks: a scan that outlived the retention
     * time while the oplog was trimmed (a month of readings on a VM under software emulation)
     * failed with "Chunk N not found" (h2database/h2database#4383). Costs only disk space.
     */
    static final int DEFAULT_H2_RETENTION_S = 300;

    /** Commands that write (--durable-writes commits after each of them). */
    static final java.util.Set<String> WRITE_COMMANDS = java.util.Set.of("insert", "update", "delete", "findAndModify", "findandmodify",
            "create", "drop", "dropDatabase", "createIndexes", "dropIndexes", "renameCollection");

    private static final String USAGE = String.join("\n",
            "usage: mongo-test-server [--bind HOST] [--port PORT] [--data-dir DIR [--durable-writes]] [--oplog-max-entries N]",
            "                         [--oplog-max-age-seconds S] [--h2-retention-seconds S] [--exit-on-stdin-eof]",
            "  --bind HOST                address to listen on (default 127.0.0.1)",
            "  --port PORT                TCP port, 0 picks a free one (default 27017)",
            "  --data-dir DIR             keep data on disk in DIR/mongo.mv (H2 MVStore); default: in memory",
            "  --durable-writes           with --data-dir: commit the store before answering a command that wrote,",
            "                             so kill -9 loses nothing acknowledged (default: H2 commits once a second)",
            "  --oplog-max-entries N      oplog entries kept for change streams (default " + DEFAULT_OPLOG_MAX_ENTRIES + ")",
            "  --oplog-max-age-seconds S  oplog entries older than this are dropped (default " + DEFAULT_OPLOG_MAX_AGE_S + ")",
            "  --h2-retention-seconds S   with --data-dir: how long replaced chunks are kept for readers of older",
            "                             versions (default " + DEFAULT_H2_RETENTION_S + "; H2's own is 45)",
            "  --exit-on-stdin-eof        shut down when standard input is closed");


    private Launcher() {
    }

    public static void main(String[] args) throws Exception {
        String bind = "127.0.0.1";
        int port = 27017;
        Path dataDir = null;
        boolean exitOnStdinEof = false;
        boolean durableWrites = false;
        int oplogMaxEntries = DEFAULT_OPLOG_MAX_ENTRIES;
        int oplogMaxAgeS = DEFAULT_OPLOG_MAX_AGE_S;
        int h2RetentionS = DEFAULT_H2_RETENTION_S;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bind" -> bind = value(args, ++i);
                case "--port" -> port = parsePort(value(args, ++i));
                case "--data-dir" -> dataDir = Path.of(value(args, ++i));
                case "--oplog-max-entries" -> oplogMaxEntries = parsePositive("--oplog-max-entries", value(args, ++i));
                case "--oplog-max-age-seconds" -> oplogMaxAgeS = parsePositive("--oplog-max-age-seconds", value(args, ++i));
                case "--h2-retention-seconds" -> h2RetentionS = parsePositive("--h2-retention-seconds", value(args, ++i));
                case "--exit-on-stdin-eof" -> exitOnStdinEof = true;
                case "--durable-writes" -> durableWrites = true;
                case "--help", "-h" -> {
                    System.out.println(USAGE);
                    return;
                }
                default -> fail("unknown argument '" + args[i] + "'");
            }
        }

        if (durableWrites && dataDir == null) {
            fail("--durable-writes needs --data-dir (an in-memory server keeps nothing across a restart)");
        }
        Duration maxAge = Duration.ofSeconds(oplogMaxAgeS);
        AbstractMongoBackend backend;
        if (dataDir == null) {
            backend = ObservedBackends.inMemory(oplogMaxEntries, maxAge);
        } else {
            Files.createDirectories(dataDir);
            MVStore store = MVStore.open(dataDir.resolve("mongo.mv").toString());
            store.setRetentionTime((int) Math.min(Integer.MAX_VALUE, h2RetentionS * 1000L));
            backend = ObservedBackends.onDisk(store, oplogMaxEntries, maxAge, durableWrites);
        }
        backend.version(Handshake.VERSION);
        backend.enableOplog();
        // Old entries also go when nothing is written.
        ScheduledExecutorService trimmer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "oplog-trimmer");
            t.setDaemon(true);
            return t;
        });
        CappedOplog oplog = ((ObservedBackends.WithOplog) backend).cappedOplog();
        trimmer.scheduleWithFixedDelay(oplog::trim, 1, 1, TimeUnit.SECONDS);
        WireServer server = new WireServer(backend);
        InetSocketAddress address = null;
        try {
            address = server.bind(bind, port);
        } catch (Exception e) { // netty rethrows the checked BindException unchecked
            backend.close();
            fail("cannot listen on " + bind + ":" + port + ": " + rootMessage(e));
        }

        CountDownLatch stopped = new CountDownLatch(1);
        AtomicBoolean stopping = new AtomicBoolean(false);
        Runnable stop = () -> {
            if (!stopping.compareAndSet(false, true)) {
                return;
            }
            server.shutdown();
            backend.close();
            stopped.countDown();
        };
        Runtime.getRuntime().addShutdownHook(new Thread(stop, "mongo-test-server-shutdown"));

        System.out.println("READY mongodb://" + bind + ":" + address.getPort() + "/");
        System.out.flush();

        if (exitOnStdinEof) {
            Thread watcher = new Thread(() -> {
                waitForEof(System.in);
                System.exit(0);
            }, "stdin-eof-watcher");
            watcher.setDaemon(true);
            watcher.start();
        }
        stopped.await();
    }

    private static void waitForEof(InputStream in) {
        byte[] buffer = new byte[256];
        try {
            while (in.read(buffer) >= 0) {
                // Input is ignored; only its end matters.
            }
        } catch (IOException e) {
            // A broken stdin means the parent is gone, same as EOF.
        }
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            fail("'" + args[i - 1] + "' needs a value");
        }
        return args[i];
    }

    private static int parsePort(String raw) {
        try {
            int p = Integer.parseInt(raw);
            if (p < 0 || p > 65535) {
                fail("port must be 0..65535, got '" + raw + "'");
            }
            return p;
        } catch (NumberFormatException e) {
            fail("port must be a number, got '" + raw + "'");
            return -1;
        }
    }

    private static int parsePositive(String option, String raw) {
        try {
            int n = Integer.parseInt(raw);
            if (n < 1) {
                fail(option + " must be at least 1, got '" + raw + "'");
            }
            return n;
        } catch (NumberFormatException e) {
            fail(option + " must be a number, got '" + raw + "'");
            return -1;
        }
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    private static void fail(String message) {
        System.err.println("mongo-test-server: " + message);
        System.err.println(USAGE);
        System.exit(2);
    }
}
