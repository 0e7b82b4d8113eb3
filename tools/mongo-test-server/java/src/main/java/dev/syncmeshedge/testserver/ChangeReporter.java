package dev.syncmeshedge.testserver;

import java.util.function.Supplier;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.bson.Document;

/**
 * Reports one collection's writes to the oplog ({@link CappedOplog}): the part the two
 * {@link ObservedBackends} collections (in memory, on disk) share. Every method runs under the
 * collection's lock (the library's collections are synchronized), so the oplog sees one
 * collection's writes in the order they happened.
 */
final class ChangeReporter {

    private final MongoCollection<?> collection;
    private final Supplier<CappedOplog> oplog;
    /** The running update replaces the document (no update operators): a replace event. */
    private boolean replacing;

    ChangeReporter(MongoCollection<?> collection, Supplier<CappedOplog> oplog) {
        this.collection = collection;
        this.oplog = oplog;
    }

    /** The oplog, or null when nothing is reported: no oplog yet, or a system collection. */
    private CappedOplog target() {
        String name = collection.getCollectionName();
        if (name.startsWith("system.") || "local".equals(collection.getDatabaseName())) {
            return null;
        }
        return oplog.get();
    }

    /** Runs an update or findAndModify whose update is {@code update}. */
    <T> T updating(Object update, Supplier<T> run) {
        boolean outer = replacing;
        replacing = update instanceof Document spec && spec.keySet().stream().noneMatch(key -> key.startsWith("$"));
        try {
            return run.get();
        } finally {
            replacing = outer;
        }
    }

    void inserted(Document document) {
        CappedOplog target = target();
        if (target != null) {
            target.inserted(collection.getFullName(), document);
        }
    }

    void updated(Document before, Document after) {
        CappedOplog target = target();
        if (target != null) {
            target.updated(collection.getFullName(), after.get("_id"), before, after, replacing);
        }
    }

    void deleted(Document document) {
        CappedOplog target = target();
        if (target != null && document != null) {
            target.deleted(collection.getFullName(), document.get("_id"));
        }
    }
}
