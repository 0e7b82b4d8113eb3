import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { createHealthServer, parseAddr } from './health.js';
import type { CollectionStats } from './listener.js';

const base: CollectionStats = {
  ns: 'syncmesh.sensor_data',
  streamState: 'streaming',
  deliveryState: 'delivering',
  read: 0,
  acknowledged: 0,
  batches: 0,
  retries: 0,
  resyncs: 0,
  deadLetters: 0,
  queued: 0,
  oldestUnackedAt: null,
};

test('health - liveness always, readiness only while streaming and delivering', async () => {
  let stats = [base];
  const server = createHealthServer(() => stats);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    assert.equal((await fetch(`${url}/readyz`)).status, 200);
    stats = [{ ...base, deliveryState: 'function-unavailable' }];
    const r = await fetch(`${url}/readyz`);
    assert.equal(r.status, 503);
    assert.equal(((await r.json()) as { collections: CollectionStats[] }).collections[0]!.deliveryState, 'function-unavailable');
    assert.equal(((await (await fetch(`${url}/stats`)).json()) as { collections: unknown[] }).collections.length, 1);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test('health - parses host:port, IPv6 included', () => {
  assert.deepEqual(parseAddr('127.0.0.1:9464'), { host: '127.0.0.1', port: 9464 });
  assert.deepEqual(parseAddr('[::1]:0'), { host: '::1', port: 0 });
});
