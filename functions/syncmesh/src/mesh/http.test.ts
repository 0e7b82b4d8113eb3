import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SyncmeshError } from '../errors.js';
import { post } from './http.js';

/**
 * A real server on loopback whose `reset(n, reused)` decides, per request, whether to answer or to
 * reset the connection (TCP RST) without a byte, as a peer does that restarted while this node
 * kept a connection to it open.
 */
async function server(reset: (n: number, reused: boolean) => boolean) {
  const seen = new WeakSet<object>();
  const stats = { requests: 0, connections: 0 };
  const srv = http.createServer((req, res) => {
    const n = ++stats.requests;
    const reused = seen.has(req.socket);
    seen.add(req.socket);
    req.resume();
    req.on('end', () => {
      if (reset(n, reused)) req.socket.resetAndDestroy();
      else res.end(JSON.stringify({ n }));
    });
  });
  srv.on('connection', () => stats.connections++);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`;
  return {
    url,
    stats,
    close: () => {
      srv.closeAllConnections();
      return new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

const call = (url: string) => post(url, Buffer.from('{}'), { 'content-type': 'application/json' }, AbortSignal.timeout(5_000));

test('post: a kept-alive connection that the peer reset is retried once on a new connection', async () => {
  const s = await server((_n, reused) => reused); // every reused connection is dead
  try {
    assert.deepEqual(JSON.parse((await call(s.url)).text), { n: 1 });
    // the second call goes out on the kept-alive connection, is reset, and is sent again
    assert.deepEqual(JSON.parse((await call(s.url)).text), { n: 3 });
    assert.deepEqual(s.stats, { requests: 3, connections: 2 });
  } finally {
    await s.close();
  }
});

test('post: a reset on a new connection is not retried; a second reset after the retry fails the call', async () => {
  const fresh = await server(() => true);
  try {
    await assert.rejects(call(fresh.url), (err: unknown) => err instanceof SyncmeshError && err.code === 'EDGE_SYNCMESH_PEER_UNREACHABLE');
    assert.equal(fresh.stats.requests, 1, 'no retry on a connection that was just opened');
  } finally {
    await fresh.close();
  }
  const always = await server((n) => n > 1); // the first call is answered, every later one reset
  try {
    await call(always.url);
    await assert.rejects(call(always.url), (err: unknown) => err instanceof SyncmeshError && err.code === 'EDGE_SYNCMESH_PEER_UNREACHABLE');
    assert.equal(always.stats.requests, 3, 'one retry, no more');
  } finally {
    await always.close();
  }
});
