/**
 * The listener process: reads the config, connects, runs until SIGTERM/SIGINT (then drains
 * within LISTENER_DRAIN_TIMEOUT_MS) or a fatal error (exits with its code and how to fix it).
 * Start, signals, the drain deadline and the exit codes (0 stopped, 78 configuration: bad env,
 * server not a replica set, authentication; 1 anything else) are runService's
 * (@syncmesh-edge/log/service).
 */
import { runService } from '@syncmesh-edge/log/service';
import { MongoClient } from 'mongodb';
import { loadConfig } from './config.js';
import { createHealthServer, parseAddr } from './health.js';
import { createListener } from './listener.js';
import { ListenerMetrics } from './metrics.js';

await runService({
  svc: 'listener',
  loadConfig,
  logger: (config) => ({ level: config.logLevel }),
  drainMs: (config) => config.drainTimeoutMs,
  async start({ config, log }) {
    // The listener connects before each attempt and retries; a MongoDB that is down at start
    // only delays the first stream, it does not stop the process.
    const client = new MongoClient(config.mongoUri, { appName: `syncmesh-listener-${config.nodeId}` });
    const listener = createListener({ config, client, logger: log });

    const stats = () => listener.stats();
    const health = config.healthAddr ? createHealthServer(stats, new ListenerMetrics(stats, { nodeId: config.nodeId, withDefaults: true })) : undefined;
    if (health && config.healthAddr) {
      const { host, port } = parseAddr(config.healthAddr);
      health.on('error', (err) => log.error({ err, addr: config.healthAddr }, 'health endpoints unavailable'));
      health.listen(port, host, () => {
        const a = health.address();
        log.info({ addr: typeof a === 'object' && a ? `${a.address}:${a.port}` : config.healthAddr }, 'health endpoints listening');
      });
    }
    return {
      // run() resolves after stop() and rejects with a FatalListenerError (its exitCode) or a bug.
      done: listener.run(),
      async stop() {
        // stop() returns by the drain deadline even when a reader is stuck connecting.
        await listener.stop();
        if (health) {
          health.closeAllConnections();
          await new Promise((done) => health.close(done));
        }
        await client.close().catch((err: unknown) => log.warn({ err }, 'closing the MongoDB client failed'));
      },
    };
  },
});
