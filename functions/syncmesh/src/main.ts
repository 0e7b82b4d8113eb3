/**
 * Process entry point: read config, connect, listen, and on SIGTERM/SIGINT drain within the
 * services' drain deadline (runService, @syncmesh-edge/log/service: exit codes, signals, the
 * start and stop log lines). Everything else is in app.ts.
 */
import { backoffDelayMs, sleep, type BackoffPolicy } from '@syncmesh-edge/backoff';
import { runService } from '@syncmesh-edge/log/service';
import { MongoClient } from 'mongodb';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';

/**
 * Waits between attempts to connect (and create the indexes) while MongoDB is not up yet: 500 ms
 * doubling to 10 s, equal jitter.
 */
const CONNECT_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 10_000 };

await runService({
  svc: 'syncmesh-fn',
  loadConfig,
  logger: (config) => ({ level: config.logLevel, node: config.nodeId }),
  async start({ config, log, stopping }) {
    const client = new MongoClient(config.mongodbUri, { serverSelectionTimeoutMS: 5_000, appName: `syncmesh-fn/${config.nodeId}` });
    let prepared = false;
    const { server, service, replication } = buildApp({ config, client, log, starting: () => !prepared, processMetrics: true });

    // The driver's first connect, when it fails, leaves a closed topology behind that every later
    // operation fails on ("Topology is closed"); only connect() replaces it. So connect explicitly
    // until it works (bounded backoff with jitter); until it has, with the indexes and replication,
    // /readyz answers 503.
    const connectAndPrepare = async () => {
      for (let attempt = 0; !stopping.aborted; attempt++) {
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
            await sleep(delayMs, stopping);
          } catch {
            return; // shutdown aborted the wait: no more attempts
          }
        }
      }
    };

    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    log.info(
      {
        addr: server.address(),
        mongodb: config.mongodbUri.replace(/\/\/[^@/]*@/, '//***@'),
        forwarding: config.meshSecret ? config.forwardMode : 'off (no mesh secret)',
      },
      'syncmesh function listening',
    );
    void connectAndPrepare();
    return {
      // a listening server that fails later (it should not) stops the process
      done: new Promise((_resolve, reject) => server.once('error', reject)),
      async stop() {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await closed;
        await replication.stop();
        await client.close();
      },
    };
  },
});
