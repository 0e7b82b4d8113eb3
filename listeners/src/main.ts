/**
 * The listener process: reads the config, connects, runs until SIGTERM/SIGINT (then drains
 * within LISTENER_DRAIN_TIMEOUT_MS) or a fatal error (exits with its code and how to fix it).
 *
 * Exit codes: 0 stopped; 78 configuration (bad env, server not a replica set, authentication);
 * 1 other fatal error.
 */
import { createLogger } from '@syncmesh-edge/log';
import { MongoClient } from 'mongodb';
import { EXIT_CONFIG, EXIT_FATAL } from './classify.js';
import { loadConfig, type ListenerConfig } from './config.js';
import { ListenerError } from './errors.js';
import { createHealthServer, parseAddr } from './health.js';
import { createListener, FatalListenerError } from './listener.js';
import { ListenerMetrics } from './metrics.js';

/** Bound as `svc` on every log line. */
const SVC = 'listener';

async function main(): Promise<number> {
  let config: ListenerConfig;
  try {
    config = loadConfig();
  } catch (err) {
    const log = createLogger({ level: 'info', svc: SVC });
    log.fatal({ code: err instanceof ListenerError ? err.code : undefined }, (err as Error).message);
    return EXIT_CONFIG;
  }
  const log = createLogger({ level: config.logLevel, svc: SVC });
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

  let signalled = false;
  let onStopped!: () => void;
  const stoppedBySignal = new Promise<void>((resolve) => (onStopped = resolve));
  const onSignal = (sig: NodeJS.Signals) => {
    if (signalled) return;
    signalled = true;
    log.info({ signal: sig }, 'signal received');
    void listener.stop().then(onStopped);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  let code = 0;
  try {
    // stop() returns by the drain deadline even when a reader is stuck connecting.
    await Promise.race([listener.run(), stoppedBySignal]);
  } catch (err) {
    if (err instanceof FatalListenerError) {
      log.fatal({ code: err.code, err: err.cause }, err.message);
      code = err.exitCode;
    } else {
      log.fatal({ err }, 'listener failed unexpectedly');
      code = EXIT_FATAL;
    }
  }
  await listener.stop();
  if (health) {
    health.closeAllConnections();
    await new Promise((done) => health.close(done));
  }
  await client.close().catch((err: unknown) => log.warn({ err }, 'closing the MongoDB client failed'));
  return code;
}

// Exit explicitly: a connect() to a MongoDB that is down keeps driver timers alive for up to
// serverSelectionTimeoutMS after everything was stopped and logged.
process.exit(await main());
