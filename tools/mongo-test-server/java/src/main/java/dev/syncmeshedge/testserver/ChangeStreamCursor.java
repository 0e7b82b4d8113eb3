package dev.syncmeshedge.testserver;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongFunction;
import java.util.function.LongUnaryOperator;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.backend.AbstractCursor;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;

/**
 * The cursor of one change stream. Its position is the oplog timestamp it has read up to; every
 * batch moves it on to the newest entry the read looked at (also when none of them was an event
 * of the stream), and that position is the batch's {@code postBatchResumeToken}, which MongoDB
 * returns with every change stream batch and drivers use to resume (pymongo refuses a change
 * stream without it). With a {@code batchSize} smaller than the events waiting, the position is
 * the last event returned.
 */
final class ChangeStreamCursor extends AbstractCursor {

    /** MongoDB's ChangeStreamFatalError: a pipeline stage changed an event's resume token. */
    private static final int FATAL_CODE = 280;

    /**
     * The postBatchResumeToken of the batch this thread took last: the backend adds it to the
     * aggregate or getMore response it is building (the library builds the cursor documents).
     */
    static final ThreadLocal<Document> POST_BATCH_RESUME_TOKEN = new ThreadLocal<>();

    /**
     * Runs an aggregate or getMore and adds the postBatchResumeToken of the change stream batch it
     * took, if it took one.
     */
    static Document withPostBatchResumeToken(Supplier<Document> command) {
        POST_BATCH_RESUME_TOKEN.remove();
        try {
            Document response = command.get();
            Document token = POST_BATCH_RESUME_TOKEN.get();
            if (token != null && response != null && response.get("cursor") instanceof Document cursor) {
                cursor.put("postBatchResumeToken", token);
            }
            return response;
        } finally {
            POST_BATCH_RESUME_TOKEN.remove();
        }
    }

    /** What one read found after a position: the stream's events, and the newest entry it looked at. */
    record Batch(Stream<Document> events, long until) {
    }

    private final LongFunction<Batch> reader;
    /**
     * Looks at the entries after a position: -1 when one of them is for this stream (or history
     * was lost), else the newest position looked at.
     */
    private final LongUnaryOperator pending;
    /** Oplog timestamp (as a long) this stream has read up to; the next read starts after it. */
    private long after;
    /**
     * The entries up to here hold nothing for this stream ({@link #idle}), so the next check
     * looks only at newer ones: a waiting getMore is checked on every write to any collection,
     * and checking all entries after {@code after} each time cost a subscriber's database
     * O(entries²) while it applied a burst of replicas.
     */
    private long checked;

    ChangeStreamCursor(long id, long after, LongFunction<Batch> reader, LongUnaryOperator pending) {
        super(id);
        this.after = after;
        this.checked = after;
        this.reader = reader;
        this.pending = pending;
    }

    /** Would a getMore now return nothing (and no error)? A getMore then waits ({@link AwaitData}). */
    synchronized boolean idle() {
        long newest = pending.applyAsLong(Math.max(after, checked));
        if (newest < 0) {
            return false;
        }
        checked = Math.max(checked, newest);
        return true;
    }

    @Override
    public boolean isEmpty() {
        return false; // a change stream stays open until it is killed
    }

    // a cursor's getMores can arrive on different connection threads, one after the other
    @Override
    public synchronized List<Document> takeDocuments(int numberToReturn) {
        Batch batch = reader.apply(after);
        Stream<Document> events = batch.events();
        if (numberToReturn > 0) {
            events = events.limit(numberToReturn + 1L);
        }
        List<Document> taken = events.collect(Collectors.toCollection(ArrayList::new));
        if (numberToReturn > 0 && taken.size() > numberToReturn) {
            taken = new ArrayList<>(taken.subList(0, numberToReturn));
            after = position(taken.get(numberToReturn - 1));
        } else {
            after = Math.max(after, batch.until());
            if (!taken.isEmpty()) {
                after = Math.max(after, position(taken.get(taken.size() - 1)));
            }
        }
        POST_BATCH_RESUME_TOKEN.set(CappedOplog.token(after));
        return taken;
    }

    private static long position(Document event) {
        try {
            return CappedOplog.parseToken((Document) event.get("_id"));
        } catch (RuntimeException e) {
            throw new MongoServerError(FATAL_CODE, "ChangeStreamFatalError",
                    "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline.");
        }
    }
}
