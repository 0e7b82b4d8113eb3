package dev.syncmeshedge.testserver;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.Cursor;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.aggregation.Aggregation;
import de.bwaldvogel.mongo.bson.BsonTimestamp;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import de.bwaldvogel.mongo.oplog.CollectionBackedOplog;
import de.bwaldvogel.mongo.oplog.OplogCursor;
import de.bwaldvogel.mongo.oplog.OplogPosition;

/**
 * A bounded oplog, as MongoDB's capped {@code local.oplog.rs} is.
 *
 * <p>mongo-java-server keeps every oplog entry forever in an ordinary collection and scans all of
 * them on every change-stream getMore, so a node that loaded a month of readings paid a full scan
 * (10 to 30 ms) per listener poll and its heap grew without bound. Here the entries live in a
 * list that keeps at most {@code maxEntries} entries and none older than {@code maxAge}, and a
 * getMore of a stream opened with {@code startAfter} (or from now) reads only the entries after
 * its position (binary search: entries are appended in timestamp order). The library's own
 * {@link CollectionBackedOplog} still filters and formats the change events (its private
 * {@code streamOplog}, called by reflection: the library version is pinned); it reads the entries
 * through a collection proxy.
 *
 * <p>A change stream that resumes from a position that was trimmed away fails with
 * ChangeStreamHistoryLost (code 286), as MongoDB does once its oplog has moved past a resume
 * token (the library would instead answer with an invalidate event). So does an open stream
 * that fell behind: when entries of its namespace after its position were trimmed before it
 * read them (a listener paused longer than the oplog keeps), its next getMore fails with 286
 * instead of silently skipping them.
 *
 * <p>Clients reading {@code local.oplog.rs} directly see an empty collection: the entries are
 * only reachable through change streams.
 */
final class CappedOplog extends CollectionBackedOplog {

    static final int HISTORY_LOST_CODE = 286;

    private static final Method STREAM_OPLOG;

    static {
        try {
            STREAM_OPLOG = CollectionBackedOplog.class.getDeclaredMethod("streamOplog", Document.class, OplogPosition.class, Aggregation.class, String.class);
            STREAM_OPLOG.setAccessible(true);
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException("mongo-java-server changed: CollectionBackedOplog.streamOplog is gone", e);
        }
    }

    /** The position a getMore reads after, while the library's streamOplog asks for the entries. */
    private static final ThreadLocal<OplogPosition> READ_AFTER = new ThreadLocal<>();
    /** The newest entry the last read handed out (null: none), set by that read. */
    private static final ThreadLocal<BsonTimestamp> READ_UNTIL = new ThreadLocal<>();

    /**
     * What one cursor's last getMore looked at. A cursor's position only moves when it returns an
     * event, so a stream whose collection is quiet while others are written would read the same
     * entries again and again (MongoDB moves such a cursor on with its post-batch resume token).
     * When the last read from the same position returned nothing, every entry up to the newest it
     * looked at is known not to match, and the next read starts after it - unless an entry arrived
     * out of timestamp order since (writers take their timestamp before they append, so one can
     * land behind what a read already saw), in which case it reads from its position again.
     */
    private static final class Scan {
        // a cursor's getMores can arrive on different connection threads, one after the other
        volatile OplogPosition position;
        volatile BsonTimestamp until;
        volatile long disorder;
        volatile boolean matched;
    }

    private final Entries entries;
    private final CursorRegistry cursors;

    private CappedOplog(MongoBackend backend, Entries entries, CursorRegistry cursors) {
        super(backend, entries.asCollection(), cursors);
        this.entries = entries;
        this.cursors = cursors;
    }

    static CappedOplog create(MongoBackend backend, MongoCollection<Document> storage, CursorRegistry cursors, int maxEntries, Duration maxAge) {
        return new CappedOplog(backend, new Entries(storage, maxEntries, maxAge), cursors);
    }

    /** Drops entries that are too old even when nothing is written (called periodically). */
    void trim() {
        entries.trim();
    }

    @Override
    public Cursor createCursor(Document changeStream, String namespace, Aggregation aggregation) {
        Object startAfter = changeStream.get("startAfter");
        Object resume = startAfter != null ? startAfter : changeStream.get("resumeAfter");
        if (resume instanceof Document token) {
            BsonTimestamp newestTrimmed = entries.newestTrimmed();
            // Resuming needs the token's own entry: lost when it was trimmed (at or before the newest trimmed).
            if (newestTrimmed != null && !OplogPosition.fromDocument(token).isAfter(new OplogPosition(newestTrimmed))) {
                throw new MongoServerError(HISTORY_LOST_CODE, "ChangeStreamHistoryLost",
                        "Resume of change stream was not possible, as the resume point may no longer be in the oplog.");
            }
        }
        OplogPosition start;
        if (startAfter instanceof Document token) {
            start = OplogPosition.fromDocument(token);
        } else if (resume == null && changeStream.get("startAtOperationTime") == null) {
            // from now: after every entry so far (or after the beginning when there was none)
            BsonTimestamp newest = entries.newest();
            start = new OplogPosition(newest != null ? newest : new BsonTimestamp(0));
        } else {
            // resumeAfter (the library checks for an invalidating drop) or startAtOperationTime:
            // the library's own cursor, which scans every entry.
            return super.createCursor(changeStream, namespace, aggregation);
        }
        Scan scan = new Scan();
        Function<OplogPosition, Stream<Document>> after = position -> readAfter(changeStream, position, aggregation, namespace, scan);
        OplogCursor cursor = new OplogCursor(cursors.generateCursorId(), after, start);
        cursors.add(cursor);
        return cursor;
    }

    @SuppressWarnings("unchecked")
    private Stream<Document> readAfter(Document changeStream, OplogPosition position, Aggregation aggregation, String namespace, Scan scan) {
        // same position object as last time and nothing matched then: skip what that read saw
        long disorder = entries.disorder();
        boolean quiet = scan.position == position && scan.until != null && !scan.matched && scan.disorder == disorder;
        OplogPosition from = quiet ? new OplogPosition(scan.until) : position;
        BsonTimestamp lost = entries.newestTrimmedFor(namespace);
        if (lost != null && new OplogPosition(lost).isAfter(from)) {
            throw new MongoServerError(HISTORY_LOST_CODE, "ChangeStreamHistoryLost",
                    "The change stream fell behind the oplog: entries after its position were dropped before it read them.");
        }
        READ_AFTER.set(from);
        READ_UNTIL.remove();
        try {
            Stream<Document> events = (Stream<Document>) STREAM_OPLOG.invoke(this, changeStream, position, aggregation, namespace);
            BsonTimestamp until = READ_UNTIL.get();
            if (scan.position != position) {
                scan.position = position;
                scan.until = null;
            }
            if (until != null) {
                scan.until = until;
            }
            scan.disorder = disorder;
            scan.matched = false;
            // The cursor collects this stream at once; an event passing through means it matched.
            return events.peek(event -> scan.matched = true);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(e.getCause());
        } finally {
            READ_AFTER.remove();
            READ_UNTIL.remove();
        }
    }

    /** The entries, and a MongoCollection view of them for the library's oplog. */
    private static final class Entries implements InvocationHandler {
        private final MongoCollection<Document> storage;
        private final int maxEntries;
        private final Duration maxAge;
        /** Entries in timestamp order from index {@code head} on; the ones before it are trimmed. */
        private final ArrayList<Document> list = new ArrayList<>();
        private int head;
        private BsonTimestamp newestTrimmed;
        /** The newest trimmed entry per namespace ("db.collection", or "db.$cmd" for commands). */
        private final java.util.Map<String, BsonTimestamp> newestTrimmedByNs = new java.util.HashMap<>();
        /** Counts entries that arrived behind a newer one (they are put in timestamp order). */
        private long disorder;

        Entries(MongoCollection<Document> storage, int maxEntries, Duration maxAge) {
            this.storage = storage;
            this.maxEntries = maxEntries;
            this.maxAge = maxAge;
            // The entries live in memory: a (re)started server has none of its previous run's, also
            // with the on-disk store. Every position before this start counts as trimmed, so a
            // stream resuming from an older token gets ChangeStreamHistoryLost (as from MongoDB,
            // whose oplog would have those entries) instead of silently skipping the changes made
            // between that token and the restart.
            this.newestTrimmed = new BsonTimestamp(Instant.now(), 0);
        }

        @SuppressWarnings("unchecked")
        MongoCollection<Document> asCollection() {
            return (MongoCollection<Document>) Proxy.newProxyInstance(MongoCollection.class.getClassLoader(),
                    new Class<?>[] {MongoCollection.class}, this);
        }

        synchronized BsonTimestamp newestTrimmed() {
            return newestTrimmed;
        }

        /**
         * The newest trimmed entry a stream on {@code namespace} ("db.collection") would have
         * returned: its own collection's, or its database's commands' (the library's namespace
         * filter passes both).
         */
        synchronized BsonTimestamp newestTrimmedFor(String namespace) {
            BsonTimestamp own = newestTrimmedByNs.get(namespace);
            int dot = namespace.indexOf('.');
            BsonTimestamp commands = dot < 0 ? null : newestTrimmedByNs.get(namespace.substring(0, dot) + ".$cmd");
            if (own == null) {
                return commands;
            }
            return commands == null || own.compareTo(commands) >= 0 ? own : commands;
        }

        /** Timestamp of the newest entry ever added, or null. */
        synchronized BsonTimestamp newest() {
            return list.size() > head ? tsOf(list.get(list.size() - 1)) : newestTrimmed;
        }

        synchronized long disorder() {
            return disorder;
        }

        synchronized void add(Document entry) {
            BsonTimestamp ts = tsOf(entry);
            int at = list.size();
            while (at > head && tsOf(list.get(at - 1)).compareTo(ts) > 0) {
                at--;
            }
            if (at < list.size()) {
                disorder++;
            }
            list.add(at, entry);
            trim();
        }

        synchronized void trim() {
            Instant oldest = Instant.now().minus(maxAge);
            while (head < list.size() && (list.size() - head > maxEntries || wallOf(list.get(head)).isBefore(oldest))) {
                Document gone = list.get(head);
                newestTrimmed = tsOf(gone);
                if (gone.get("ns") instanceof String ns) {
                    newestTrimmedByNs.merge(ns, newestTrimmed, (a, b) -> a.compareTo(b) >= 0 ? a : b);
                }
                list.set(head++, null);
            }
            if (head > 1024 && head > list.size() / 2) {
                list.subList(0, head).clear();
                head = 0;
            }
        }

        /** All entries, or with READ_AFTER set only those after that position. */
        private synchronized List<Document> entries() {
            int from = head;
            OplogPosition after = READ_AFTER.get();
            if (after != null) {
                int hi = list.size();
                while (from < hi) { // first entry whose position is after `after`
                    int mid = (from + hi) >>> 1;
                    if (new OplogPosition(tsOf(list.get(mid))).isAfter(after)) {
                        hi = mid;
                    } else {
                        from = mid + 1;
                    }
                }
            }
            if (after != null && from < list.size()) {
                READ_UNTIL.set(tsOf(list.get(list.size() - 1)));
            }
            return new ArrayList<>(list.subList(from, list.size()));
        }

        private static BsonTimestamp tsOf(Document entry) {
            return (BsonTimestamp) entry.get("ts");
        }

        private static Instant wallOf(Document entry) {
            return entry.get("wall") instanceof Instant wall ? wall : Instant.now();
        }

        @Override
        @SuppressWarnings("unchecked")
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            switch (method.getName()) {
                case "addDocument":
                    add((Document) args[0]);
                    return null;
                case "addDocuments":
                    ((Stream<Document>) args[0]).forEachOrdered(this::add);
                    return null;
                case "queryAllAsStream":
                    return entries().stream();
                default:
                    try {
                        return method.invoke(storage, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
            }
        }
    }
}
