/**
 * Starts mongo-java-server, a MongoDB-compatible *test* server (not MongoDB), for tests,
 * benchmarks and the local mesh. When MONGODB_URI is set, callers use that real MongoDB
 * instead (see `resolveMongo`).
 */
export { startTestServer, testServerCommand, ensureTestServerJar, TEST_SERVER_JAR } from './server.js';
export type { TestServer, TestServerOptions } from './server.js';
export { resolveMongo } from './resolve.js';
export type { MongoTarget } from './resolve.js';
export { ensurePymongo, runPython, PYMONGO_VENV } from './pymongo.js';
export type { Pymongo } from './pymongo.js';
export { nodeReadingWrites, pymongoReadingWrites, PYMONGO_SCENARIO, READING_WRITE_EVENTS, READINGS_LEFT } from './reading-writes.js';
export type { ReadingWrites, ReadingWritesOptions } from './reading-writes.js';
