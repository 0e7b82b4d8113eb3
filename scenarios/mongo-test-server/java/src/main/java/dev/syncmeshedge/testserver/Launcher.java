package dev.syncmeshedge.testserver;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.AbstractMongoBackend;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

/**
 * Starts mongo-java-server, a MongoDB-compatible test server (NOT MongoDB), with its oplog
 * enabled so that change streams work for inserts and deletes.
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

    private static final String USAGE = String.join("\n",
            "usage: mongo-test-server [--bind HOST] [--port PORT] [--data-dir DIR] [--exit-on-stdin-eof]",
            "  --bind HOST           address to listen on (default 127.0.0.1)",
            "  --port PORT           TCP port, 0 picks a free one (default 27017)",
            "  --data-dir DIR        keep data on disk in DIR/mongo.mv (H2 MVStore); default: in memory",
            "  --exit-on-stdin-eof   shut down when standard input is closed");

    private Launcher() {
    }

    public static void main(String[] args) throws Exception {
        String bind = "127.0.0.1";
        int port = 27017;
        Path dataDir = null;
        boolean exitOnStdinEof = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bind" -> bind = value(args, ++i);
                case "--port" -> port = parsePort(value(args, ++i));
                case "--data-dir" -> dataDir = Path.of(value(args, ++i));
                case "--exit-on-stdin-eof" -> exitOnStdinEof = true;
                case "--help", "-h" -> {
                    System.out.println(USAGE);
                    return;
                }
                default -> fail("unknown argument '" + args[i] + "'");
            }
        }

        AbstractMongoBackend backend;
        if (dataDir == null) {
            backend = new MemoryBackend();
        } else {
            Files.createDirectories(dataDir);
            backend = new H2Backend(dataDir.resolve("mongo.mv").toString());
        }
        MongoServer server = new MongoServer(backend);
        server.enableOplog();
        try {
            server.bind(bind, port);
        } catch (Exception e) { // netty rethrows the checked BindException unchecked
            server.shutdownNow();
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

        InetSocketAddress address = server.getLocalAddress();
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
