package dev.syncmeshedge.testserver;

import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import de.bwaldvogel.mongo.wire.BsonConstants;
import de.bwaldvogel.mongo.wire.MongoWireProtocolHandler;
import io.netty.channel.Channel;
import io.netty.util.AttributeKey;

/**
 * What the test server says it is, and the commands of the handshake.
 *
 * <p>mongo-java-server 1.47.0 reports MongoDB 5.0 with wire version 8, which today's drivers
 * refuse (pymongo 4.14 and later and the Node driver 7.x need at least 9, MongoDB 4.4), and knows
 * only the legacy {@code isMaster}. Here it reports MongoDB 7.0, wire version 21: the version the
 * x86-64 and Pi 5 nodes run, so the drivers take the same code paths against the test server as
 * against a node (the Pi 4's 4.4 is wire version 9; nothing the project uses differs between
 * them). It answers {@code hello} and {@code isMaster} as a MongoDB 7.0 standalone does:
 * {@code helloOk} when asked, so the drivers switch to {@code hello}; a {@code connectionId};
 * {@code logicalSessionTimeoutMinutes}, so the drivers use sessions (they send {@code lsid},
 * which every command ignores, and {@code endSessions} when they close).
 *
 * <p>Left out on purpose: {@code topologyVersion}. With it, drivers switch to the streaming
 * protocol, in which the server holds each {@code hello} until the topology changes; the
 * library answers every command at once on its network thread, so a streaming monitor would
 * spin. Without it, drivers poll every {@code heartbeatFrequencyMS} (10 s), as they do with
 * MongoDB before 4.4.
 *
 * <p>Transactions are refused as a standalone MongoDB refuses them (code 20, IllegalOperation):
 * the library would otherwise run each statement at once and pretend a commit.
 */
final class Handshake {

    /** MongoDB 7.0: maxWireVersion 21. */
    static final int WIRE_VERSION = 21;

    static final MongoVersion VERSION = new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
            return List.of(7, 0, 0);
        }

        @Override
        public int getWireVersion() {
            return WIRE_VERSION;
        }
    };

    /** MongoDB's default (localLogicalSessionTimeoutMinutes). */
    private static final int SESSION_TIMEOUT_MINUTES = 30;
    private static final int ILLEGAL_OPERATION = 20;

    private static final AttributeKey<Integer> CONNECTION_ID = AttributeKey.valueOf("syncmesh-edge.connectionId");
    private static final AtomicInteger CONNECTIONS = new AtomicInteger();

    private Handshake() {
    }

    /** The answer to {@code command}, or null when the library answers it. */
    static Document answer(Channel channel, String command, Document query) {
        if (query.containsKey("txnNumber") || query.containsKey("startTransaction") || query.containsKey("autocommit")) {
            throw new MongoServerError(ILLEGAL_OPERATION, "IllegalOperation",
                    "Transaction numbers are only allowed on a replica set member or mongos");
        }
        boolean hello = command.equals("hello");
        if (!hello && !command.equalsIgnoreCase("isMaster")) {
            return null;
        }
        Document response = new Document();
        if (Utils.isTrue(query.get("helloOk"))) {
            response.put("helloOk", Boolean.TRUE);
        }
        response.put(hello ? "isWritablePrimary" : "ismaster", Boolean.TRUE);
        response.put("maxBsonObjectSize", BsonConstants.MAX_BSON_OBJECT_SIZE);
        response.put("maxMessageSizeBytes", MongoWireProtocolHandler.MAX_MESSAGE_SIZE_BYTES);
        response.put("maxWriteBatchSize", MongoWireProtocolHandler.MAX_WRITE_BATCH_SIZE);
        response.put("localTime", Instant.now());
        response.put("logicalSessionTimeoutMinutes", SESSION_TIMEOUT_MINUTES);
        response.put("connectionId", connectionId(channel));
        response.put("minWireVersion", 0);
        response.put("maxWireVersion", WIRE_VERSION);
        response.put("readOnly", Boolean.FALSE);
        Utils.markOkay(response);
        return response;
    }

    private static int connectionId(Channel channel) {
        if (channel == null) {
            return 0;
        }
        Integer id = channel.attr(CONNECTION_ID).get();
        if (id == null) {
            Integer fresh = CONNECTIONS.incrementAndGet();
            id = channel.attr(CONNECTION_ID).setIfAbsent(fresh);
            if (id == null) {
                id = fresh;
            }
        }
        return id;
    }
}
