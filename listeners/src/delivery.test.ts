import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ObjectId } from 'mongodb';
import { createFunctionClient } from './delivery.js';
import { type DeliveryError, ERROR_CODES } from './errors.js';
import type { ChangeEnvelope } from './events.js';
import { startFunctionStandIn } from './testing/standin.js';

const secret = 'unit-test-mesh-secret-of-at-least-32-bytes';
const event = (n: number): ChangeEnvelope => ({
  token: { _data: `82${n}` },
  op: 'insert',
  db: 'syncmesh',
  coll: 'sensor_data',
  key: { _id: new ObjectId() },
  doc: { n, at: new Date(0) },
});

test('delivery - a signed batch is accepted and arrives with ObjectId and Date intact', async () => {
  const fn = await startFunctionStandIn(secret, 0, 'node-a');
  try {
    const client = createFunctionClient({ functionUrl: fn.url, meshSecret: secret, nodeId: 'node-a', timeoutMs: 2_000 });
    const res = await client.postEvents([event(1), event(2)]);
    assert.deepEqual(res, { status: 200, applied: 2 });
    assert.ok(fn.events[0]!.key._id instanceof ObjectId);
    assert.ok(fn.events[1]!.doc!['at'] instanceof Date);
    await client.postResync({ db: 'syncmesh', coll: 'sensor_data', reason: 'history-lost' });
    assert.deepEqual(fn.resyncs, [{ db: 'syncmesh', coll: 'sensor_data', reason: 'history-lost' }]);
  } finally {
    await fn.close();
  }
});

test('delivery - a wrong secret is a 401 that carries the function message', async () => {
  const fn = await startFunctionStandIn(secret, 0, 'n');
  try {
    const client = createFunctionClient({ functionUrl: fn.url, meshSecret: 'wrong-mesh-secret-but-32-bytes-long!', nodeId: 'n', timeoutMs: 2_000 });
    await assert.rejects(client.postEvents([event(1)]), (err: DeliveryError) => {
      assert.equal(err.code, ERROR_CODES.DELIVERY_FAILED, 'retried: a configuration problem, not a bad batch');
      assert.equal(err.status, 401);
      assert.match(err.message, /signature does not match/);
      return true;
    });
  } finally {
    await fn.close();
  }
});

test('delivery - 503, refused connections and timeouts are delivery failures', async () => {
  const fn = await startFunctionStandIn(secret, 0, 'n');
  const client = createFunctionClient({ functionUrl: fn.url, meshSecret: secret, nodeId: 'n', timeoutMs: 300 });
  try {
    fn.setMode('fail');
    await assert.rejects(client.postEvents([event(1)]), { code: ERROR_CODES.DELIVERY_FAILED, status: 503 });
    fn.setMode('hang');
    await assert.rejects(
      client.postEvents([event(1)]),
      (err: DeliveryError) => err.code === ERROR_CODES.DELIVERY_FAILED && /no answer within 300 ms/.test(err.message),
    );
    fn.setMode('ok');
    await fn.down();
    await assert.rejects(
      client.postEvents([event(1)]),
      (err: DeliveryError) => err.code === ERROR_CODES.DELIVERY_FAILED && err.status === undefined && /ECONNREFUSED|UND_ERR_SOCKET/.test(err.message),
    );
    await fn.up();
    assert.equal((await client.postEvents([event(1)])).status, 200);
  } finally {
    await fn.close();
  }
});

test('delivery - a 2xx without a JSON body still acknowledges', async () => {
  const server = createServer((_req, res) => res.writeHead(204).end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = createFunctionClient({ functionUrl: url, meshSecret: secret, nodeId: 'n', timeoutMs: 1_000 });
    assert.deepEqual(await client.postEvents([event(1)]), { status: 204, applied: undefined });
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test('delivery - a 400 is a rejection of the batch', async () => {
  const fn = await startFunctionStandIn(secret, 0, 'n');
  try {
    fn.setMode('reject');
    const client = createFunctionClient({ functionUrl: fn.url, meshSecret: secret, nodeId: 'n', timeoutMs: 2_000 });
    await assert.rejects(client.postEvents([event(1)]), { code: ERROR_CODES.DELIVERY_REJECTED, status: 400 });
  } finally {
    await fn.close();
  }
});
