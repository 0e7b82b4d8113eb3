package dev.syncmeshedge.testserver;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.AbstractCursor;
import de.bwaldvogel.mongo.backend.Cursor;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.backend.aggregation.Aggregation;
import de.bwaldvogel.mongo.bson.BsonTimestamp;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import de.bwaldvogel.mongo.oplog.Oplog;

/**
 * The oplog behind change streams: bounded like MongoDB's capped {@code local.oplog.rs}, and
 * producing the change events MongoDB produces.
 *
 * <p><b>What goes in.</b> The collections report every write themselves ({@link
 * ObservedCollection}: the document inserted, the document before and after an update or
 * replacement, the {@code _id} deleted), so every path that writes is covered, {@code
 * findAndModify} and upserts included. The library's own oplog calls are ignored: it logged the
 * update specification instead of the document's key (update events without {@code _id}, which
 * made every update a resync), logged inserts that failed with a duplicate key, and logged nothing
 * for {@code findAndModify}.
 *
 * <p><b>What comes out.</b> Events as MongoDB 7.0 formats them: {@code _id} (the resume token),
 * {@code operationType} ({@code insert}, {@code update}, {@code replace}, {@code delete}, {@code
 * drop}), {@code clusterTime}, {@code wallTime}, {@code ns: {db, coll}}, {@code documentKey:
 * {_id}}, {@code updateDescription} for updates ({@link UpdateDescription}), {@code fullDocument}
 * for inserts and replacements, and for updates when the stream asks for {@code
 * fullDocument: "updateLookup"}: the document as it is when the event is read (null when it was
 * deleted since), as MongoDB looks it up. A resume token is the hex of the entry's timestamp (the
 * library's format, so tokens stored before this change still resume).
 *
 * <p><b>Bounded.</b> At most {@code maxEntries} entries, none older than {@code maxAge}. A getMore
 * reads only the entries after its stream's position (binary search: entries are appended in
 * timestamp order, the timestamp is taken when the entry is appended), and every batch moves the
 * position on to the newest entry it looked at ({@link ChangeStreamCursor}, whose position is the
 * batch's {@code postBatchResumeToken}). Resuming from a position after which entries were trimmed
 * fails with ChangeStreamHistoryLost (code 286), as MongoDB does once its oplog has moved past a
 * resume token; so does an open stream that fell behind (entries of its namespace after its
 * position were trimmed before it read them): its next getMore fails with 286 instead of silently
 * skipping them. The entries live in memory: clients reading {@code local.oplog.rs} directly see
 * an empty collection.
 */
final class CappedOplog implements Oplog {

    static final int HISTORY_LOST_CODE = 286;
    /** MongoDB's BadValue, for change stream options the test server does not offer. */
    private static final int BAD_VALUE_CODE = 2;

    private final MongoBackend backend;
    private final CursorRegistry cursors;
    private final Entries entries;
    /** Waiting getMores ({@link AwaitData}): each is run once after the next entry is appended. */
    private final Set<Runnable> waiters = ConcurrentHashMap.newKeySet();

    CappedOplog(MongoBackend backend, CursorRegistry cursors, int maxEntries, Duration maxAge) {
        this.backend = backend;
        this.cursors = cursors;
        this.entries = new Entries(backend.getClock(), maxEntries, maxAge);
    }

    /** Drops entries that are too old even when nothing is written (called periodically). */
    void trim() {
        entries.trim();
    }

    // ------------------------------------------------------------------ what the collections report

    void inserted(String namespace, Document document) {
        append(new Document("op", "i").append("ns", namespace).append("o", document.cloneDeeply()));
    }

    void deleted(String namespace, Object id) {
        append(new Document("op", "d").append("ns", namespace).append("o", new Document("_id", id)));
    }

    /** An update ({@code replacement} false) or a replacement of the document {@code _id}. */
    void updated(String namespace, Object id, Document before, Document after, boolean replacement) {
        Document entry = new Document("op", "u").append("ns", namespace).append("o2", new Document("_id", id));
        if (replacement) {
            entry.append("replacement", after.cloneDeeply());
        } else {
            entry.append("updateDescription", UpdateDescription.between(before, after));
        }
        append(entry);
    }

    /** Appends an entry and wakes the getMores waiting for one. */
    private void append(Document entry) {
        entries.add(entry);
        if (!waiters.isEmpty()) {
            for (Runnable waiter : waiters.toArray(Runnable[]::new)) {
                if (waiters.remove(waiter)) {
                    waiter.run();
                }
            }
        }
    }

    /** Runs {@code waiter} once after the next entry is appended (unless {@link #forget}ten first). */
    void onAppend(Runnable waiter) {
        waiters.add(waiter);
    }

    void forget(Runnable waiter) {
        waiters.remove(waiter);
    }

    /**
     * Would a getMore of cursor {@code cursorId} find nothing to return now: a change stream with
     * no entry of its collection after its position (and no history lost)? False for any other
     * cursor, and for one that does not exist (the getMore then fails at once, as it should).
     */
    boolean idle(long cursorId) {
        try {
            return cursors.getCursor(cursorId) instanceof ChangeStreamCursor stream && stream.idle();
        } catch (RuntimeException e) {
            return false;
        }
    }

    // ------------------------------------------------------------------ the library's calls

    @Override
    public void handleInsert(String namespace, List<Document> documents) {
        // reported by ObservedCollection (only the inserts that succeeded)
    }

    @Override
    public void handleUpdate(String namespace, Document selector, Document query, List<Object> modifiedIds) {
        // reported by ObservedCollection, with the documents before and after
    }

    @Override
    public void handleDelete(String namespace, Document query, List<Object> deletedIds) {
        // reported by ObservedCollection
    }

    @Override
    public void handleDropCollection(String namespace) {
        String db = Utils.getDatabaseNameFromFullName(namespace);
        String coll = Utils.getCollectionNameFromFullName(namespace);
        append(new Document("op", "c").append("ns", db + ".$cmd").append("o", new Document("drop", coll)));
    }

    // ------------------------------------------------------------------ change streams

    @Override
    public Cursor createCursor(Document changeStream, String namespace, Aggregation aggregation) {
        boolean lookup = fullDocumentLookup(changeStream);
        Object startAfter = changeStream.get("startAfter");
        Object resumeAfter = changeStream.get("resumeAfter");
        Object startAt = changeStream.get("startAtOperationTime");
        Document token = startAfter instanceof Document d ? d : resumeAfter instanceof Document d ? d : null;
        long after;
        if (token != null) {
            // An unparsable token fails here ("For input string: ... under radix 16"), as before.
            after = parseToken(token);
            if (entries.lostAfter(after)) {
                throw historyLost("Resume of change stream was not possible, as the resume point may no longer be in the oplog.");
            }
            if (startAfter == null && entries.isDropOf(after, namespace)) {
                // resumeAfter the drop of the stream's collection: the stream is invalidated, as on MongoDB
                return new InvalidateCursor(token);
            }
        } else if (startAt instanceof BsonTimestamp at) {
            after = at.getValue() - 1; // the entry at that time included
            if (entries.lostAfter(after)) {
                throw historyLost("Resume of change stream was not possible, as the resume point may no longer be in the oplog.");
            }
        } else {
            after = entries.newest(); // from now
        }
        ChangeStreamCursor cursor = new ChangeStreamCursor(cursors.generateCursorId(), after,
                from -> readAfter(from, namespace, lookup, aggregation),
                from -> entries.lostFor(namespace, from) ? -1 : entries.scanFor(from, namespace));
        cursors.add(cursor);
        return cursor;
    }

    /** True for {@code fullDocument: "updateLookup"}; refuses the modes that need stored post-images. */
    private static boolean fullDocumentLookup(Document changeStream) {
        Object before = changeStream.getOrDefault("fullDocumentBeforeChange", "off");
        if (!"off".equals(before)) {
            throw new MongoServerError(BAD_VALUE_CODE, "BadValue", "fullDocumentBeforeChange: '" + before
                    + "' is not supported by the test server (it keeps no pre-images); use 'off'");
        }
        Object mode = changeStream.getOrDefault("fullDocument", "default");
        if ("updateLookup".equals(mode)) {
            return true;
        }
        if (!"default".equals(mode)) {
            throw new MongoServerError(BAD_VALUE_CODE, "BadValue", "fullDocument: '" + mode
                    + "' is not supported by the test server (it keeps no post-images); use 'default' or 'updateLookup'");
        }
        return false;
    }

    private static MongoServerError historyLost(String message) {
        return new MongoServerError(HISTORY_LOST_CODE, "ChangeStreamHistoryLost", message);
    }

    /** A resume token for an oplog position: the hex of the timestamp (the library's format). */
    static Document token(long position) {
        return new Document("_data", Long.toHexString(position));
    }

    /** The oplog position of a resume token; throws NumberFormatException for one it did not issue. */
    static long parseToken(Document token) {
        return Long.parseLong((String) token.get("_data"), 16);
    }

    private ChangeStreamCursor.Batch readAfter(long from, String namespace, boolean lookup, Aggregation aggregation) {
        if (entries.lostFor(namespace, from)) {
            throw historyLost("The change stream fell behind the oplog: entries after its position were dropped before it read them.");
        }
        List<Document> read = entries.after(from);
        long until = read.isEmpty() ? from : tsOf(read.get(read.size() - 1)).getValue();
        Stream<Document> events = read.stream()
                .filter(entry -> concerns(entry, namespace))
                .map(entry -> toEvent(entry, lookup));
        return new ChangeStreamCursor.Batch(aggregation.runStagesAsStream(events), until);
    }

    /** The stream's own collection, or the drop of it. */
    private static boolean concerns(Document entry, String namespace) {
        String ns = (String) entry.get("ns");
        if (ns.equals(namespace)) {
            return true;
        }
        return "c".equals(entry.get("op")) && ns.equals(Utils.getDatabaseNameFromFullName(namespace) + ".$cmd")
                && Utils.getCollectionNameFromFullName(namespace).equals(((Document) entry.get("o")).get("drop"));
    }

    private Document toEvent(Document entry, boolean lookup) {
        BsonTimestamp ts = tsOf(entry);
        String ns = (String) entry.get("ns");
        String db = Utils.getDatabaseNameFromFullName(ns);
        Document event = new Document("_id", token(ts.getValue()));
        switch ((String) entry.get("op")) {
            case "i" -> {
                Document document = (Document) entry.get("o");
                event.append("operationType", "insert").append("clusterTime", ts).append("wallTime", entry.get("wall"))
                        .append("fullDocument", document.cloneDeeply())
                        .append("ns", namespaceOf(db, Utils.getCollectionNameFromFullName(ns)))
                        .append("documentKey", new Document("_id", document.get("_id")));
            }
            case "d" -> event.append("operationType", "delete").append("clusterTime", ts).append("wallTime", entry.get("wall"))
                    .append("ns", namespaceOf(db, Utils.getCollectionNameFromFullName(ns)))
                    .append("documentKey", ((Document) entry.get("o")).cloneDeeply());
            case "u" -> {
                String coll = Utils.getCollectionNameFromFullName(ns);
                Document key = ((Document) entry.get("o2")).cloneDeeply();
                Document replacement = (Document) entry.get("replacement");
                event.append("operationType", replacement != null ? "replace" : "update").append("clusterTime", ts)
                        .append("wallTime", entry.get("wall"))
                        .append("ns", namespaceOf(db, coll))
                        .append("documentKey", key);
                if (replacement != null) {
                    event.append("fullDocument", replacement.cloneDeeply());
                } else {
                    event.append("updateDescription", ((Document) entry.get("updateDescription")).cloneDeeply());
                    if (lookup) {
                        event.append("fullDocument", currentDocument(db, coll, key.get("_id")));
                    }
                }
            }
            case "c" -> event.append("operationType", "drop").append("clusterTime", ts).append("wallTime", entry.get("wall"))
                    .append("ns", namespaceOf(db, (String) ((Document) entry.get("o")).get("drop")));
            default -> throw new IllegalStateException("unknown oplog entry " + entry);
        }
        return event;
    }

    /** The document as it is now (updateLookup), or null when it no longer exists. */
    private Document currentDocument(String db, String coll, Object id) {
        MongoCollection<?> collection = backend.resolveDatabase(db).resolveCollection(coll, false);
        if (collection == null) {
            return null;
        }
        // the collection's writes hold its lock: copy the document while none runs
        synchronized (collection) {
            Iterator<Document> found = collection.handleQuery(new Document("_id", id), 0, 1).iterator();
            return found.hasNext() ? found.next().cloneDeeply() : null;
        }
    }

    private static Document namespaceOf(String db, String coll) {
        return new Document("db", db).append("coll", coll);
    }

    private static BsonTimestamp tsOf(Document entry) {
        return (BsonTimestamp) entry.get("ts");
    }

    /** A stream resumed after the drop of its collection: one invalidate event, then closed. */
    private static final class InvalidateCursor extends AbstractCursor {
        private final Document token;
        private boolean taken;

        InvalidateCursor(Document token) {
            super(0);
            this.token = token;
        }

        @Override
        public boolean isEmpty() {
            return taken;
        }

        @Override
        public List<Document> takeDocuments(int numberToReturn) {
            if (taken) {
                return List.of();
            }
            taken = true;
            return List.of(new Document("_id", token.cloneDeeply()).append("operationType", "invalidate"));
        }
    }

    /** The entries, in timestamp order. Positions are timestamps as longs ({@link BsonTimestamp#getValue()}). */
    private static final class Entries {
        private final Clock clock;
        private final int maxEntries;
        private final Duration maxAge;
        /** Entries in timestamp order from index {@code head} on; the ones before it are trimmed. */
        private final ArrayList<Document> list = new ArrayList<>();
        private int head;
        /** Position of the newest trimmed entry: a stream positioned before it lost history. */
        private long newestTrimmed;
        /** Timestamp of the newest entry ever added (null: none yet). */
        private BsonTimestamp last;
        /** The newest trimmed entry per namespace ("db.collection", or "db.$cmd" for commands). */
        private final Map<String, Long> newestTrimmedByNs = new HashMap<>();

        Entries(Clock clock, int maxEntries, Duration maxAge) {
            this.clock = clock;
            this.maxEntries = maxEntries;
            this.maxAge = maxAge;
            // The entries live in memory: a (re)started server has none of its previous run's, also
            // with the on-disk store. Every position before this start counts as trimmed, so a
            // stream resuming from an older token gets ChangeStreamHistoryLost (as from MongoDB,
            // whose oplog would have those entries) instead of silently skipping the changes made
            // between that token and the restart.
            this.newestTrimmed = new BsonTimestamp(clock.instant(), 0).getValue();
        }

        /** Were entries after {@code position} trimmed (a resume from it would miss them)? */
        synchronized boolean lostAfter(long position) {
            return Long.compare(newestTrimmed, position) > 0;
        }

        /**
         * Were entries after {@code position} trimmed that a stream on {@code namespace}
         * ("db.collection") would have returned: its own collection's, or its database's commands'?
         */
        synchronized boolean lostFor(String namespace, long position) {
            Long own = newestTrimmedByNs.get(namespace);
            int dot = namespace.indexOf('.');
            Long commands = dot < 0 ? null : newestTrimmedByNs.get(namespace.substring(0, dot) + ".$cmd");
            return (own != null && Long.compare(own, position) > 0) || (commands != null && Long.compare(commands, position) > 0);
        }

        /** The newest position: of the newest entry ever added, or of the start. */
        synchronized long newest() {
            return last != null ? last.getValue() : newestTrimmed;
        }

        /** Is the entry at {@code position} the drop of {@code namespace}'s collection? */
        synchronized boolean isDropOf(long position, String namespace) {
            int at = firstAfter(position - 1);
            if (at >= list.size()) {
                return false;
            }
            Document entry = list.get(at);
            return tsOf(entry).getValue() == position && "c".equals(entry.get("op")) && concerns(entry, namespace);
        }

        /**
         * Appends an entry with the next timestamp: the time in seconds and a counter within the
         * second, strictly increasing also when the clock steps back. Taking the timestamp here,
         * under the lock, keeps the entries in timestamp order.
         */
        synchronized void add(Document entry) {
            Instant now = clock.instant();
            BsonTimestamp ts = new BsonTimestamp(now, 1);
            if (last != null && ts.compareTo(last) <= 0) {
                ts = new BsonTimestamp(last.getValue() + 1);
            }
            last = ts;
            Document stamped = new Document("ts", ts).append("wall", now);
            stamped.putAll(entry);
            list.add(stamped);
            trim();
        }

        synchronized void trim() {
            Instant oldest = clock.instant().minus(maxAge);
            while (head < list.size() && (list.size() - head > maxEntries || ((Instant) list.get(head).get("wall")).isBefore(oldest))) {
                Document gone = list.get(head);
                newestTrimmed = tsOf(gone).getValue();
                newestTrimmedByNs.merge((String) gone.get("ns"), newestTrimmed, (a, b) -> Long.compare(a, b) >= 0 ? a : b);
                list.set(head++, null);
            }
            if (head > 1024 && head > list.size() / 2) {
                list.subList(0, head).clear();
                head = 0;
            }
        }

        /** The entries after {@code position}, oldest first. */
        synchronized List<Document> after(long position) {
            return new ArrayList<>(list.subList(firstAfter(position), list.size()));
        }

        /**
         * -1 when an entry of {@code namespace}'s stream (its collection's, or its drop) comes after
         * {@code position}; else the newest position looked at ({@code position} when none is newer).
         */
        synchronized long scanFor(long position, String namespace) {
            long newest = position;
            for (int i = firstAfter(position); i < list.size(); i++) {
                Document entry = list.get(i);
                if (concerns(entry, namespace)) {
                    return -1;
                }
                newest = tsOf(entry).getValue();
            }
            return newest;
        }

        /** Index of the first entry after {@code position} (binary search). */
        private int firstAfter(long position) {
            int from = head;
            int hi = list.size();
            while (from < hi) {
                int mid = (from + hi) >>> 1;
                if (Long.compare(tsOf(list.get(mid)).getValue(), position) > 0) {
                    hi = mid;
                } else {
                    from = mid + 1;
                }
            }
            return from;
        }
    }
}
