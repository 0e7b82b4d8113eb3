/**
 * The process boundary: how main.js starts and stops without a MongoDB behind it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from '@syncmesh-edge/lab';
import { startTestServer } from '@syncmesh-edge/mongo-test-server';
import { isStreaming, SECRET, startListener } from '../../src/testing/harness.js';
import { startFunctionStandIn } from '../../src/testing/standin.js';

/** A loopback port that was free a moment ago. */
test('main - a configuration error exits 78 and names the variable', async () => {
  const p = startListener({ LISTENER_BATCH_SIZE: 'many' });
  assert.equal(await p.exited, 78);
  const line = p.lines.find((l) => l['code'] === 'EDGE_LISTENER_CONFIG');
  assert.ok(line, 'a log line with the error code');
  assert.match(line.msg, /LISTENER_BATCH_SIZE/);
});

test('main - MongoDB down at start is retried, not ready, and SIGTERM still exits 0', async () => {
  // Port 9 (discard) on loopback: nothing listens there, connections are refused.
  const p = startListener({
    MONGODB_URI: 'mongodb://127.0.0.1:9/?directConnection=true&serverSelectionTimeoutMS=200',
    LISTENER_RETRY_MAX_MS: '200',
    LISTENER_HEALTH_ADDR: '127.0.0.1:0',
  });
  try {
    const listening = await p.waitForLog((l) => l.msg === 'health endpoints listening', 15_000, 'health endpoints');
    await p.waitForLog((l) => l.msg === 'stream state: reconnecting', 15_000, 'a reconnect attempt');
    const url = `http://${String(listening['addr'])}`;
    const get = (path: string) =>
      fetch(`${url}${path}`).catch((err: Error) => {
        throw new Error(
          `GET ${path} failed (${String((err.cause as Error | undefined)?.message)}); listener log:\n${p.lines
            .slice(-8)
            .map((l) => JSON.stringify(l))
            .join('\n')}`,
        );
      });
    assert.equal((await get('/healthz')).status, 200);
    assert.equal((await get('/readyz')).status, 503);
    assert.equal(await p.kill('SIGTERM'), 0);
  } finally {
    await p.kill('SIGKILL');
  }
});

test('main - MongoDB that comes up after the listener is picked up without a restart', async () => {
  const port = await freePort();
  const fn = await startFunctionStandIn(SECRET);
  const p = startListener({
    MONGODB_URI: `mongodb://127.0.0.1:${port}/?directConnection=true&serverSelectionTimeoutMS=500`,
    SYNCMESH_FUNCTION_URL: fn.url,
    LISTENER_RETRY_MAX_MS: '300',
  });
  let server: Awaited<ReturnType<typeof startTestServer>> | undefined;
  try {
    await p.waitForLog((l) => l.msg === 'stream state: reconnecting', 15_000, 'a reconnect attempt');
    server = await startTestServer({ port });
    await p.waitForLog(isStreaming, 30_000, 'streaming once MongoDB is up');
    await fn.waitFor(() => fn.resyncs.length === 1, 10_000, 'the first-start resync');
  } finally {
    await p.kill('SIGTERM');
    await fn.close();
    await server?.stop();
  }
});
