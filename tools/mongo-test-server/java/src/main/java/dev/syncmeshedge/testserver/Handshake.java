package dev.syncmeshedge.testserver;

import java.util.List;

import de.bwaldvogel.mongo.MongoVersion;

/**
 * What the test server says it is. mongo-java-server 1.47.0 reports MongoDB 5.0 with wire version
 * 8, which today's drivers refuse (pymongo 4.14 and later and the Node driver 7.x need at least 9,
 * MongoDB 4.4). It reports MongoDB 7.0, wire version 21, instead: the version the x86-64 and Pi 5
 * nodes run, so the drivers take the same code paths against the test server as against a node.
 */
final class Handshake {

    /** MongoDB 7.0: maxWireVersion 21. */
    static final MongoVersion VERSION = new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
            return List.of(7, 0, 0);
        }

        @Override
        public int getWireVersion() {
            return 21;
        }
    };

    private Handshake() {
    }
}
