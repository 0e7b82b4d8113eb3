package dev.syncmeshedge.testserver;

import java.time.Duration;
import java.util.function.Supplier;
import java.util.stream.Stream;

import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.AbstractMongoBackend;
import de.bwaldvogel.mongo.backend.ArrayFilters;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.h2.H2Collection;
import de.bwaldvogel.mongo.backend.h2.H2Database;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.backend.memory.MemoryDatabase;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.oplog.Oplog;
import de.bwaldvogel.mongo.wire.bson.BsonEncoder;
import de.bwaldvogel.mongo.wire.message.MongoMessage;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;

/**
 * The library's two backends (in memory; on disk in an H2 MVStore) with what the launcher adds:
 * <ul>
 *   <li>their collections report every write to the {@link CappedOplog} ({@link ChangeReporter}):
 *       the inserted document, the document before and after an update, the deleted
 *       {@code _id};</li>
 *   <li>the handshake and commands of {@link Handshake} (MongoDB 7.0, {@code hello});</li>
 *   <li>an error for a message {@link WireServer} could not read;</li>
 *   <li>the {@code postBatchResumeToken} of change stream batches ({@link ChangeStreamCursor}).</li>
 * </ul>
 * The databases and collections are inner classes: the library opens databases and collections
 * from its constructors, before a subclass's own fields are set, and an inner class can already
 * reach its backend then.
 */
final class ObservedBackends {

    private ObservedBackends() {
    }

    /** A command: the launcher's answer, or the library's (with a change stream batch's resume token). */
    private static Document handle(Channel channel, String command, Document query, Supplier<Document> library) {
        if (WireServer.UNREADABLE.equals(command)) {
            throw WireServer.unreadable(query.get(command));
        }
        Document answer = Handshake.answer(channel, command, query);
        return answer != null ? answer : ChangeStreamCursor.withPostBatchResumeToken(library);
    }

    interface WithOplog {
        CappedOplog cappedOplog();
    }

    static AbstractMongoBackend inMemory(int maxEntries, Duration maxAge) {
        return new Memory(maxEntries, maxAge);
    }

    /** {@code durable}: --durable-writes (see {@link OnDisk#handleMessage}). */
    static AbstractMongoBackend onDisk(MVStore store, int maxEntries, Duration maxAge, boolean durable) {
        return new OnDisk(store, maxEntries, maxAge, durable);
    }

    /**
     * The collection's data size (collStats, validate), computed when asked. The library keeps it
     * up to date on every write by BSON-encoding each inserted, updated and removed document
     * (Utils.calculateSize): about 10 % of the test server's CPU in a replication burst (JFR,
     * 2026-11-28). Our collections turn that off (tracksDataSize, which the library provides for
     * backends) and encode the documents only when a client asks for the size.
     */
    static int dataSizeOf(Stream<Document> documents) {
        ByteBuf buffer = Unpooled.buffer();
        try {
            long total = 0;
            for (Document document : (Iterable<Document>) documents::iterator) {
                buffer.clear();
                BsonEncoder.encodeDocument(document, buffer);
                total += buffer.writerIndex();
            }
            return (int) Math.min(Integer.MAX_VALUE, total);
        } finally {
            buffer.release();
        }
    }

    static final class Memory extends MemoryBackend implements WithOplog {
        private final int maxEntries;
        private final Duration maxAge;
        private volatile CappedOplog oplog;

        Memory(int maxEntries, Duration maxAge) {
            this.maxEntries = maxEntries;
            this.maxAge = maxAge;
        }

        @Override
        protected Oplog createOplog() {
            oplog = new CappedOplog(this, getCursorRegistry(), maxEntries, maxAge);
            return oplog;
        }

        @Override
        public CappedOplog cappedOplog() {
            return oplog;
        }

        @Override
        public Document handleCommand(Channel channel, String databaseName, String command, Document query) {
            return handle(channel, command, query, () -> super.handleCommand(channel, databaseName, command, query));
        }

        @Override
        public MemoryDatabase openOrCreateDatabase(String databaseName) {
            return new Db(databaseName);
        }

        final class Db extends MemoryDatabase {
            Db(String databaseName) {
                super(databaseName, getCursorRegistry());
            }

            @Override
            protected MemoryCollection openOrCreateCollection(String collectionName, CollectionOptions options) {
                return new Coll(this, collectionName, options);
            }
        }

        final class Coll extends MemoryCollection {
            private final ChangeReporter changes = new ChangeReporter(this, Memory.this::cappedOplog);

            Coll(Db database, String collectionName, CollectionOptions options) {
                super(database, collectionName, options, getCursorRegistry());
            }

            @Override
            protected boolean tracksDataSize() {
                return false;
            }

            @Override
            protected synchronized int getDataSize() {
                return dataSizeOf(streamAllDocumentsWithPosition().map(d -> d.getDocument()));
            }

            @Override
            public synchronized void addDocument(Document document) {
                super.addDocument(document);
                changes.inserted(document);
            }

            @Override
            protected void removeDocument(Integer position) {
                Document document = getDocument(position);
                super.removeDocument(position);
                changes.deleted(document);
            }

            @Override
            protected void handleUpdate(Integer position, Document oldDocument, Document newDocument) {
                super.handleUpdate(position, oldDocument, newDocument);
                changes.updated(oldDocument, newDocument);
            }

            @Override
            public synchronized Document updateDocuments(Document selector, Document update, ArrayFilters arrayFilters, boolean isMulti, boolean isUpsert, Oplog oplog) {
                return changes.updating(update, () -> super.updateDocuments(selector, update, arrayFilters, isMulti, isUpsert, oplog));
            }

            @Override
            public synchronized Document findAndModify(Document query) {
                return changes.updating(query.get("update"), () -> super.findAndModify(query));
            }
        }
    }

    static final class OnDisk extends H2Backend implements WithOplog {
        private final int maxEntries;
        private final Duration maxAge;
        private volatile CappedOplog oplog;

        private final MVStore store;
        private final boolean durable;

        OnDisk(MVStore store, int maxEntries, Duration maxAge, boolean durable) {
            super(store);
            this.store = store;
            this.maxEntries = maxEntries;
            this.maxAge = maxAge;
            this.durable = durable;
        }

        /**
         * --durable-writes: a write command (and any other that left changes) is committed, written
         * to the file, before it is answered, as MongoDB's journal with j:true. Every current driver
         * sends its commands as OP_MSG, which arrive here. The commit takes the store's lock first,
         * so it waits for a commit in progress and then writes what is left: concurrent writers are
         * covered too. No fsync: survives kill -9 of this process, not a power cut.
         */
        @Override
        public Document handleMessage(MongoMessage message) {
            try {
                return super.handleMessage(message);
            } finally {
                String command = message.getDocument().keySet().stream().findFirst().orElse("");
                if (durable && (Launcher.WRITE_COMMANDS.contains(command) || store.hasUnsavedChanges())) {
                    store.commit();
                }
            }
        }

        @Override
        protected Oplog createOplog() {
            oplog = new CappedOplog(this, getCursorRegistry(), maxEntries, maxAge);
            return oplog;
        }

        @Override
        public CappedOplog cappedOplog() {
            return oplog;
        }

        @Override
        public Document handleCommand(Channel channel, String databaseName, String command, Document query) {
            return handle(channel, command, query, () -> super.handleCommand(channel, databaseName, command, query));
        }

        @Override
        protected H2Database openOrCreateDatabase(String databaseName) {
            return new Db(databaseName);
        }

        final class Db extends H2Database {
            Db(String databaseName) {
                super(databaseName, getMvStore(), getCursorRegistry());
            }

            @Override
            protected MongoCollection<Object> openOrCreateCollection(String collectionName, CollectionOptions options) {
                // the map names of H2Database.openOrCreateCollection (mongo-java-server 1.47.0)
                String fullName = getFullCollectionNamespace(collectionName);
                MVMap<Object, Document> dataMap = getMvStore().openMap("databases." + fullName);
                MVMap<String, Object> metaMap = getMvStore().openMap("meta." + fullName);
                return new Coll(this, collectionName, options, dataMap, metaMap);
            }
        }

        final class Coll extends H2Collection {
            private final ChangeReporter changes = new ChangeReporter(this, OnDisk.this::cappedOplog);

            Coll(Db database, String collectionName, CollectionOptions options, MVMap<Object, Document> dataMap, MVMap<String, Object> metaMap) {
                super(database, collectionName, options, dataMap, metaMap, getCursorRegistry());
            }

            @Override
            protected boolean tracksDataSize() {
                return false;
            }

            @Override
            protected synchronized int getDataSize() {
                return dataSizeOf(streamAllDocumentsWithPosition().map(d -> d.getDocument()));
            }

            @Override
            public synchronized void addDocument(Document document) {
                super.addDocument(document);
                changes.inserted(document);
            }

            @Override
            protected void removeDocument(Object position) {
                Document document = getDocument(position);
                super.removeDocument(position);
                changes.deleted(document);
            }

            @Override
            protected void handleUpdate(Object position, Document oldDocument, Document newDocument) {
                super.handleUpdate(position, oldDocument, newDocument);
                changes.updated(oldDocument, newDocument);
            }

            @Override
            public synchronized Document updateDocuments(Document selector, Document update, ArrayFilters arrayFilters, boolean isMulti, boolean isUpsert, Oplog oplog) {
                return changes.updating(update, () -> super.updateDocuments(selector, update, arrayFilters, isMulti, isUpsert, oplog));
            }

            @Override
            public synchronized Document findAndModify(Document query) {
                return changes.updating(query.get("update"), () -> super.findAndModify(query));
            }
        }
    }
}
