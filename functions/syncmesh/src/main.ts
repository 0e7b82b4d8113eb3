/**
 * Process entry point: read config, connect, listen, and on SIGTERM/SIGINT drain within a
 * deadline. Everything else is in app.ts.
 */
import { backoffDelayMs, sleep, type BackoffPolicy } from '@syncmesh-edge/backoff';
import { createLogger } from '@syncmesh-edge/log';
import { MongoClient } from 'mongodb';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';

/** In-flight requests get this long to finish after SIGTERM. */
const SHUTDOWN_GRACE_MS = 10_000;
/**
 * Waits between attempts to connect (and create the indexes) while MongoDB is not up yet: 500 ms
 * doubling to 10 s, equal jitter.
 */
const CONNECT_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 10_000 };

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger({ level: config.logLevel, svc: 'syncmesh-fn', node: config.nodeId });
  const client = new MongoClient(config.mongodbUri, { serverSelectionTimeoutMS: 5_000, appName: `syncmesh-fn/${config.nodeId}` });
  /** Aborted on SIGTERM/SIGINT: no more connect attempts, and the wait between two ends. */
  const stopping = new AbortController();
  let prepared = false;
  const { server, service, replication } = buildApp({ config, client, log, starting: () => !prepared, processMetrics: true });

  // The driver's first connect, when it fails, leaves a closed topology behind that every later
  // operation fails on ("Topology is closed"); only connect() replaces it. So connect explicitly
  // until it works (bounded backoff with jitter); until it has, with the indexes and replication,
  // /readyz answers 503.
  const connectAndPrepare = async () => {
    for (let attempt = 0; !stopping.signal.aborted; attempt++) {
      try {
        await client.connect();
        await service.stores.ensureIndexes();
        await replication.start();
        prepared = true;
        log.info('connected; indexes and replication ready');
        return;
      } catch (err) {
        const delayMs = backoffDelayMs(attempt, CONNECT_BACKOFF);
        log.warn({ err: (err as Error).message, retryInMs: delayMs }, 'MongoDB not reachable yet (connect, indexes or replication); retrying');
        try {
          await sleep(delayMs, stopping.signal);
        } catch {
          return; // shutdown aborted the wait: no more attempts
        }
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
    if (stopping.signal.aborted) return;
    stopping.abort();
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
