#!/usr/bin/env node
/** The async worker process: config, NATS, the worker, the status endpoint; SIGTERM drains. */
import { readFileSync } from 'node:fs';
import { nkeyAuthenticator } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { createLogger } from '@syncmesh-edge/log';
import { buildStatusServer } from './app.js';
import { loadConfig } from './config.js';
import { AsyncWorker } from './worker.js';

const cfg = loadConfig();
const log = createLogger({ level: cfg.logLevel as 'info', svc: 'async-worker' });
const authenticator = cfg.nkeySeedFile ? nkeyAuthenticator(new TextEncoder().encode(readFileSync(cfg.nkeySeedFile, 'utf8').trim())) : undefined;
const nc = await connect({
  servers: cfg.natsServers,
  name: 'async-worker',
  maxReconnectAttempts: -1,
  reconnectTimeWait: 500,
  waitOnFirstConnect: true,
  ...(authenticator ? { authenticator } : {}),
});
const worker = new AsyncWorker(nc, cfg, log.child({ module: 'worker' }));
const server = buildStatusServer(worker);
await new Promise<void>((r) => server.listen(cfg.statusPort, cfg.statusHost, r));
log.info({ addr: `${cfg.statusHost}:${cfg.statusPort}` }, 'status endpoint listening');
for (let i = 0; ; i++) {
  try {
    await worker.start();
    break;
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'JetStream not ready, retrying');
    await new Promise((r) => setTimeout(r, Math.min(5_000, 250 * 2 ** i)));
  }
}
let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  log.info('SIGTERM: draining');
  void worker
    .stop()
    .then(() => nc.drain())
    .finally(() => server.close(() => process.exit(0)));
});
