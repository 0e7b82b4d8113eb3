import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_GATEWAY_URL, loadConfig } from './config.js';

test('config - defaults: the gateway, faas-request, callbacks only to the gateway functions', () => {
  const c = loadConfig({});
  assert.equal(c.subject, 'faas-request');
  assert.equal(c.gatewayUrl, DEFAULT_GATEWAY_URL);
  assert.deepEqual(c.callbackAllow, [`${DEFAULT_GATEWAY_URL}/function/`]);
  assert.equal(c.interrupted, 'dead-letter');
  assert.equal(c.statusPort, 8093);
});

test('config - bad values are refused before anything starts, naming the variable', () => {
  const bad = (env: Record<string, string>, name: string) =>
    assert.throws(
      () => loadConfig(env),
      (e: Error & { code?: string }) => e.code === 'EDGE_COORDINATION_CONFIG' && e.message.includes(name),
    );
  bad({ ASYNC_WORKER_SUBJECT: 'faas.>' }, 'ASYNC_WORKER_SUBJECT');
  bad({ ASYNC_WORKER_MAX_ATTEMPTS: '0' }, 'ASYNC_WORKER_MAX_ATTEMPTS');
  bad({ ASYNC_WORKER_RETRY_BASE_MS: '5000', ASYNC_WORKER_RETRY_MAX_MS: '1000' }, 'ASYNC_WORKER_RETRY_BASE_MS');
  bad({ ASYNC_WORKER_CALLBACK_ALLOW: 'http://' }, 'ASYNC_WORKER_CALLBACK_ALLOW');
  bad({ ASYNC_WORKER_DLQ_SUBJECT: 'faas-request' }, 'ASYNC_WORKER_DLQ_SUBJECT');
  bad({ ASYNC_WORKER_NATS_URL: 'http://x' }, 'ASYNC_WORKER_NATS_URL');
  bad({ ASYNC_WORKER_INTERRUPTED: 'ignore' }, 'ASYNC_WORKER_INTERRUPTED');
});
