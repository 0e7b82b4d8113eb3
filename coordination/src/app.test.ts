/** The status endpoint over HTTP: its answers, and coded JSON errors in the function's shape. */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { buildStatusServer } from './app.js';

type Worker = Parameters<typeof buildStatusServer>[0];

async function withServer(worker: Worker, body: (base: string) => Promise<void>): Promise<void> {
  const server = buildStatusServer(worker);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await body(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

const done = { call_id: 'abc', state: 'done', attempts: 1 };
const worker: Worker = {
  ready: true,
  status: async (id: string) => (id === 'abc' ? (done as never) : null),
};

async function errorOf(res: Response): Promise<{ message: string; extensions: { code: string; allowed?: unknown } }> {
  assert.equal(res.headers.get('content-type'), 'application/json');
  const body = (await res.json()) as { errors: { message: string; extensions: { code: string; allowed?: unknown } }[] };
  assert.equal(body.errors.length, 1);
  return body.errors[0]!;
}

test('status endpoint - health, readiness and a known call answer JSON', async () => {
  await withServer(worker, async (base) => {
    assert.deepEqual(await (await fetch(`${base}/healthz`)).json(), { ok: true });
    assert.deepEqual(await (await fetch(`${base}/readyz`)).json(), { ready: true });
    assert.deepEqual(await (await fetch(`${base}/status/abc`)).json(), done);
  });
});

test('status endpoint - every error is coded JSON: 400, 404 (unknown call, unknown path), 405, 503', async () => {
  const failing: Worker = { ready: false, status: () => Promise.reject(new Error('NATS down')) };
  await withServer(worker, async (base) => {
    let res = await fetch(`${base}/status/${encodeURIComponent('bad id!')}`);
    assert.equal(res.status, 400);
    assert.equal((await errorOf(res)).extensions.code, 'EDGE_COORDINATION_BAD_CALL_ID');
    res = await fetch(`${base}/status/nope`);
    assert.equal(res.status, 404);
    assert.equal((await errorOf(res)).extensions.code, 'EDGE_COORDINATION_UNKNOWN_CALL');
    res = await fetch(`${base}/nowhere`);
    assert.equal(res.status, 404);
    const nf = await errorOf(res);
    assert.equal(nf.extensions.code, 'EDGE_COORDINATION_NOT_FOUND');
    assert.deepEqual(nf.extensions.allowed, ['GET /healthz', 'GET /readyz', 'GET /status/<call-id>']);
    res = await fetch(`${base}/healthz`, { method: 'POST' });
    assert.equal(res.status, 405);
    assert.equal((await errorOf(res)).extensions.code, 'EDGE_COORDINATION_METHOD');
  });
  await withServer(failing, async (base) => {
    assert.equal((await fetch(`${base}/readyz`)).status, 503);
    const res = await fetch(`${base}/status/abc`);
    assert.equal(res.status, 503);
    assert.equal((await errorOf(res)).extensions.code, 'EDGE_COORDINATION_STATUS_UNAVAILABLE');
  });
});
