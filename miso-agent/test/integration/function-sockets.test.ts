/**
 * Per-function SDK sockets (MISO_FUNCTION_SOCKETS_DIR), as a node's faasd provider lays them out
 * (patch 0008): a folder per stateful function with its scope file; the agent serves a socket
 * there that reaches that function's objects only (plus the ones the scope allows); a removed
 * folder closes it. And the SDK's answer for a function that has no agent (no label).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { MisoClient, MisoSdkError, serveFunction } from '@syncmesh-edge/miso-sdk';
import { waitForEvery } from '@syncmesh-edge/lab';
import { spawnAgent, type AgentProc } from '@syncmesh-edge/miso-agent/testing';

let agent: AgentProc;
const dir = mkdtempSync(join(tmpdir(), 'miso-fns-'));

function folder(name: string, scope: string[]): string {
  const f = join(dir, name);
  mkdirSync(f, { recursive: true });
  writeFileSync(join(f, 'functions'), `${scope.join('\n')}\n`);
  return join(f, 'agent.sock');
}

before(async () => {
  agent = await spawnAgent({ nodeId: 'fns', env: { MISO_FUNCTION_SOCKETS_DIR: dir } });
});

after(async () => {
  await agent?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('function sockets - a function reaches its own objects only, unless its scope allows more', async () => {
  const sock = folder('counter', ['counter']);
  await waitForEvery('the counter socket', () => existsSync(sock), 10_000);
  const c = new MisoClient(sock, 5_000);
  try {
    await c.register('counter', 'r1');
    assert.equal(await c.apply('counter', 'o', 'total', 'gcounter', { op: 'add', n: 2 }, true), 2);
    // the node's own socket sees the same object
    assert.equal((await agent.client.read('counter', 'o', 'total')).value, 2);
    await agent.client.apply('shared', 'o', 'total', 'gcounter', { op: 'add', n: 7 });
    await assert.rejects(c.read('shared', 'o', 'total'), (e: unknown) => {
      assert.ok(e instanceof MisoSdkError);
      assert.equal(e.code, 'EDGE_MISO_FORBIDDEN');
      assert.equal(e.grpcCode, grpc.status.PERMISSION_DENIED);
      assert.match(e.message, /serves the function counter; shared is not allowed/);
      return true;
    });
    assert.deepEqual(
      (await c.listObjects()).map((o) => o.function),
      ['counter'],
    );
    // the operator allows more: the next call sees the new scope
    writeFileSync(join(dir, 'counter', 'functions'), 'counter\nshared\n');
    await waitForEvery(
      'the wider scope',
      () =>
        c.read('shared', 'o', 'total').then(
          (r) => r.value === 7,
          () => false,
        ),
      10_000,
    );
  } finally {
    c.close();
  }
  // a deleted function's folder closes its socket
  rmSync(join(dir, 'counter'), { recursive: true });
  const again = new MisoClient(sock, 1_000);
  try {
    await assert.rejects(again.status());
  } finally {
    again.close();
  }
});

test('function sockets - a function without an agent answers EDGE_MISO_SDK_NOT_CONNECTED at once', async () => {
  const t0 = Date.now();
  const s = await serveFunction(() => 'never', {
    port: 0,
    env: { MISO_FUNCTION: 'plain', MISO_SDK_SOCKET: join(dir, 'no-such-folder', 'agent.sock') },
  });
  try {
    assert.ok(Date.now() - t0 < 5_000, 'starts without waiting for an agent');
    assert.match(s.notConnected ?? '', /com\.syncmesh\.miso=true/);
    const health = await fetch(`http://127.0.0.1:${s.port}/_/health`);
    assert.equal(health.status, 200);
    const r = await fetch(`http://127.0.0.1:${s.port}/`, { method: 'POST', body: '1' });
    assert.equal(r.status, 503);
    const [e] = ((await r.json()) as { errors: { message: string; extensions: { code: string } }[] }).errors;
    assert.equal(e?.extensions.code, 'EDGE_MISO_SDK_NOT_CONNECTED');
    assert.match(e?.message ?? '', /deploy it with the label com\.syncmesh\.miso=true/);
  } finally {
    await s.close();
  }
});
