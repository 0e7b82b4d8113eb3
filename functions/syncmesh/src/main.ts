/**
 * Process entry point: read config, connect, listen, and on SIGTERM/SIGINT drain within a
 * deadline. Everything else is in app.ts.
 */
import { MongoClient } from 'mongodb';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';
import { createLogger } from './log.js';

/** In-flight requests get this long to finish after SIGTERM. */
const SHUTDOWN_GRACE_MS = 10_000;
/** First and largest wait between attempts to connect (and create the indexes) while MongoDB is not up yet. */
const CONNECT_RETRY_MIN_MS = 500;
const CONNECT_RETRY_MAX_MS = 10_000;

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel, config.nodeId);
  const client = new MongoClient(config.mongodbUri, { serverSelectionTimeoutMS: 5_000, appName: `syncmesh-fn/${config.nodeId}` });
  let stopping = false;
  let prepared = false;
  const { server, service, replication } = buildApp({ config, client, log, starting: () => !prepared });

  // The driver's first connect, when it fails, leaves a closed topology behind that every later
  // operation fails on ("Topology is closed"); only connect() replaces it. So connect explicitly
  // until it works (bounded backoff); until it has, with the indexes and replication, /readyz
  // answers 503.
  const connectAndPrepare = async () => {
    for (let wait = CONNECT_RETRY_MIN_MS; !stopping; wait = Math.min(wait * 2, CONNECT_RETRY_MAX_MS)) {
      try {
        await client.connect();
        await service.stores.ensureIndexes();
        await replication.start();
        prepared = true;
        log.info('connected; indexes and replication ready');
        return;
      } catch (err) {
        log.warn({ err: (err as Error).message, retryInMs: wait }, 'MongoDB not reachable yet (connect, indexes or replication); retrying');
        await new Promise((r) => setTimeout(r, wait).unref());
      }
    }
  };
  void connectAndPrepare();

  server.listen(config.port, config.host, () => {
    const addr = server.address();
    log.info(
      { addr, mongodb: config.mongodbUri.replace(/\/\/[^@/]*@/, '//***@'), forwarding: config.meshSecret ? config.forwardMode : 'off (no mesh secret)' },
      'syncmesh function listening',
    );
  });
  server.on('error', (err) => {
    log.fatal({ err }, 'cannot listen');
    process.exit(1);
  });

  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref();
    server.close(() => {
      void replication
        .stop()
        .then(() => client.close())
        .finally(() => {
          clearTimeout(force);
          process.exit(0);
        });
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`syncmesh-fn: ${(err as Error).message}\n`);
  process.exit(1);
});
