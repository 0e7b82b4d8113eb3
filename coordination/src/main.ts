#!/usr/bin/env node
/**
 * The async worker process: config, NATS, the worker, the status endpoint; SIGTERM/SIGINT drain
 * within ASYNC_WORKER_DRAIN_TIMEOUT_MS. Start, signals, the deadline and the exit codes (78
 * configuration, 1 failed to start) are runService's (@syncmesh-edge/log/service).
 */
import { readFileSync } from 'node:fs';
import { nkeyAuthenticator } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { backoffDelayMs, sleep } from '@syncmesh-edge/backoff';
import { squashError } from '@syncmesh-edge/log';
import { runService } from '@syncmesh-edge/log/service';
import { buildStatusServer } from './app.js';
import { loadConfig } from './config.js';
import { AsyncWorker } from './worker.js';

/** Waits between attempts to bind the JetStream consumer while the stream is not there yet. */
const JETSTREAM_BACKOFF = { baseMs: 250, maxMs: 5_000 };

await runService({
  svc: 'async-worker',
  loadConfig,
  logger: (cfg) => ({ level: cfg.logLevel }),
  drainMs: (cfg) => cfg.drainTimeoutMs,
  async start({ config: cfg, log, stopping }) {
    const authenticator = cfg.nkeySeedFile ? nkeyAuthenticator(new TextEncoder().encode(readFileSync(cfg.nkeySeedFile, 'utf8').trim())) : undefined;
    // waitOnFirstConnect: waits for NATS as long as it takes, unless a signal stops the worker first
    const stopped = new Promise<never>((_resolve, reject) =>
      stopping.addEventListener('abort', () => reject(new Error('stopped before NATS answered')), { once: true }),
    );
    const nc = await Promise.race([
      connect({
        servers: cfg.natsServers,
        name: 'async-worker',
        maxReconnectAttempts: -1,
        reconnectTimeWait: 500,
        waitOnFirstConnect: true,
        ...(authenticator ? { authenticator } : {}),
      }),
      stopped,
    ]);
    const worker = new AsyncWorker(nc, cfg, log.child({ module: 'worker' }));
    const server = buildStatusServer(worker);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(cfg.statusPort, cfg.statusHost, () => {
        server.off('error', reject);
        resolve();
      });
    });
    log.info({ addr: `${cfg.statusHost}:${cfg.statusPort}` }, 'status endpoint listening');
    for (let attempt = 0; !stopping.aborted; attempt++) {
      try {
        await worker.start();
        break;
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'JetStream not ready, retrying');
        // a signal ends the wait, and the loop with it
        await sleep(backoffDelayMs(attempt, JETSTREAM_BACKOFF), stopping).catch(squashError);
      }
    }
    return {
      async stop() {
        await worker.stop();
        await nc.drain();
        await new Promise((done) => server.close(done));
      },
    };
  },
});
