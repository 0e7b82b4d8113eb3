/**
 * One agent process with the node's MongoDB (the test server, or MONGODB_URI): the SDK API over
 * the unix socket, clear gRPC errors for bad requests, the health service, and state that
 * survives a restart (persistence).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { resolveMongo, type MongoTarget } from '@syncmesh-edge/mongo-test-server';
import { MisoClient, MisoSdkError } from '@syncmesh-edge/miso-sdk';
import { loadProtos } from '../../src/transport/grpc/protos.js';
import { waitForEvery } from '@syncmesh-edge/lab';
import { spawnAgent, type AgentProc } from '@syncmesh-edge/miso-agent/testing';

let mongo: MongoTarget;
let agent: AgentProc;
const db = `miso_it_single_${process.pid}`;

before(async () => {
  mongo = await resolveMongo();
  agent = await spawnAgent({ nodeId: 'solo', mongoUri: mongo.uri, db, env: { MISO_PERSIST_DELAY_MS: '20', MISO_METRICS_PORT: '0' } });
});

after(async () => {
  await agent?.stop();
  await mongo?.stop();
});

async function rejects(p: Promise<unknown>, code: string, grpcCode: grpc.status, message: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof MisoSdkError, String(e));
    assert.equal(e.code, code);
    assert.equal(e.grpcCode, grpcCode);
    assert.match(e.message, message);
    return true;
  });
}

test('agent - every CRDT type works through the SDK API', async () => {
  const c = agent.client;
  await c.apply('fn', 'o1', 'total', 'gcounter', { op: 'add', n: 2 });
  await c.apply('fn', 'o1', 'total', 'gcounter', { op: 'add', n: 3 });
  await c.apply('fn', 'o1', 'balance', 'pncounter', { op: 'add', n: -4 });
  await c.apply('fn', 'o1', 'flag', 'ewflag', { op: 'enable' });
  await c.apply('fn', 'o1', 'seen', 'gset', { op: 'add', value: 'a' });
  await c.apply('fn', 'o1', 'tags', 'orset', { op: 'add', value: 'x' });
  await c.apply('fn', 'o1', 'tags', 'orset', { op: 'add', value: 'y' });
  await c.apply('fn', 'o1', 'tags', 'orset', { op: 'remove', value: 'x' });
  await c.apply('fn', 'o1', 'mv', 'mvregister', { op: 'set', value: { v: 1 } });
  await c.apply('fn', 'o1', 'lww', 'lwwregister', { op: 'set', value: 'last' });
  await c.apply('fn', 'o1', 'map', 'ormap', { op: 'set', key: 'k', value: 1 });
  assert.equal((await c.read('fn', 'o1', 'total', 'gcounter')).value, 5);
  assert.equal((await c.read('fn', 'o1', 'balance')).value, -4);
  assert.equal((await c.read('fn', 'o1', 'flag')).value, true);
  assert.deepEqual((await c.read('fn', 'o1', 'tags')).value, ['y']);
  assert.equal((await c.read('fn', 'o1', 'lww')).value, 'last');
  const all = await c.readObject('fn', 'o1');
  assert.equal(all.length, 8);
  // Apply can return the value after the op.
  assert.equal(await c.apply('fn', 'o1', 'total', 'gcounter', { op: 'add', n: 1 }, true), 6);
  // A missing CRDT read with a type is that type's empty value.
  assert.deepEqual(await c.read('fn', 'o1', 'nothing', 'gcounter'), { type: 'gcounter', value: 0, exists: false });
});

test('agent - delete removes a CRDT or a whole object', async () => {
  const c = agent.client;
  await c.apply('fn', 'gone', 'a', 'gcounter', { op: 'add', n: 1 });
  await c.apply('fn', 'gone', 'b', 'gset', { op: 'add', value: 1 });
  assert.equal(await c.delete('fn', 'gone', 'a'), 1);
  await rejects(c.read('fn', 'gone', 'a'), 'EDGE_MISO_NOT_FOUND', grpc.status.NOT_FOUND, /has no CRDT 'a'/);
  // After a delete the name may hold another type.
  await c.apply('fn', 'gone', 'a', 'orset', { op: 'add', value: 'z' });
  assert.equal(await c.delete('fn', 'gone'), 2);
  assert.deepEqual(await c.readObject('fn', 'gone'), []);
});

test('agent - bad requests get clear gRPC errors', async () => {
  const c = agent.client;
  await rejects(
    c.apply('fn', 'o', 'x', 'nope', { op: 'add', n: 1 }),
    'EDGE_MISO_UNKNOWN_TYPE',
    grpc.status.INVALID_ARGUMENT,
    /unknown CRDT type "nope"; allowed: ewflag, gcounter/,
  );
  await c.apply('fn', 'o', 'count', 'gcounter', { op: 'add', n: 1 });
  await rejects(
    c.apply('fn', 'o', 'count', 'orset', { op: 'add', value: 1 }),
    'EDGE_MISO_WRONG_TYPE',
    grpc.status.FAILED_PRECONDITION,
    /'count' of object 'o' \(function 'fn'\) is a gcounter, not a orset/,
  );
  await rejects(c.read('fn', 'o', 'count', 'pncounter'), 'EDGE_MISO_WRONG_TYPE', grpc.status.FAILED_PRECONDITION, /not a pncounter/);
  await rejects(c.apply('fn', 'o', 'count', 'gcounter', { op: 'add', n: -1 }), 'EDGE_MISO_BAD_OP', grpc.status.INVALID_ARGUMENT, /gcounter op/);
  await rejects(
    c.apply('fn', 'o', 'big', 'lwwregister', { op: 'set', value: 'x'.repeat(70_000) }),
    'EDGE_MISO_VALUE_TOO_LARGE',
    grpc.status.INVALID_ARGUMENT,
    /the limit is MAX_VALUE_BYTES=65536/,
  );
  await rejects(c.apply('', 'o', 'x', 'gcounter', { op: 'add', n: 1 }), 'EDGE_MISO_BAD_REQUEST', grpc.status.INVALID_ARGUMENT, /function is required/);
  await rejects(c.apply('fn', 'o', 'n'.repeat(300), 'gcounter', { op: 'add', n: 1 }), 'EDGE_MISO_BAD_REQUEST', grpc.status.INVALID_ARGUMENT, /limit is 256/);
  // Beyond the gRPC message limit (4 MiB): refused by the transport itself.
  await assert.rejects(c.apply('fn', 'o', 'huge', 'lwwregister', { op: 'set', value: 'x'.repeat(5 * 1024 * 1024) }), (e: unknown) => {
    assert.ok(e instanceof MisoSdkError);
    assert.equal(e.grpcCode, grpc.status.RESOURCE_EXHAUSTED);
    return true;
  });
});

test('sdk - concurrent operations on one client share batches and keep their own answers and errors', async (t) => {
  const c = new MisoClient(agent.sdk, 10_000, 'batch');
  t.after(() => c.close());
  const add = () => c.apply('fn', 'batched', 'n', 'gcounter', { op: 'add', n: 1 }, true);
  // Issued in one turn: they travel in one OpsBatch message and are applied in order.
  const ps = [
    ...Array.from({ length: 50 }, add),
    c.apply('fn', 'batched', 'n', 'gcounter', { op: 'add', n: -1 }),
    ...Array.from({ length: 50 }, add),
    c.read('fn', 'batched', 'n', 'gcounter'),
  ];
  const rs = await Promise.allSettled(ps);
  const values = rs
    .slice(0, 50)
    .concat(rs.slice(51, 101))
    .map((r) => (r.status === 'fulfilled' ? r.value : r.reason));
  assert.deepEqual(
    values,
    Array.from({ length: 100 }, (_, i) => i + 1),
  );
  const bad = rs[50]!;
  assert.equal(bad.status, 'rejected');
  assert.ok(bad.reason instanceof MisoSdkError && bad.reason.code === 'EDGE_MISO_BAD_OP', String(bad.reason));
  const read = rs[101]!;
  assert.equal(read.status === 'fulfilled' && (read.value as { value: unknown }).value, 100);
});

test('sdk - bursts of operations or answers larger than the message limit are split into several batches', async (t) => {
  const c = new MisoClient(agent.sdk, 10_000, 'batch');
  t.after(() => c.close());
  // 80 x 60 KB = 4.8 MB issued in one turn: over the agent's 4 MiB message limit as one batch.
  const big = 'v'.repeat(60_000);
  await Promise.all(Array.from({ length: 80 }, (_, i) => c.apply('burst', 'o', `r${i}`, 'lwwregister', { op: 'set', value: `${i}${big}` })));
  // 80 reads issued at once: one small batch, 4.8 MB of answers, which the agent splits.
  const vs = await Promise.all(Array.from({ length: 80 }, (_, i) => c.read('burst', 'o', `r${i}`, 'lwwregister')));
  assert.deepEqual(
    vs.map((v) => v.value),
    Array.from({ length: 80 }, (_, i) => `${i}${big}`),
  );
  // Keep later listings (misoctl objects) under the message limit.
  assert.equal(await c.delete('burst', 'o'), 80);
});

test('agent - the standard health service answers SERVING', async () => {
  const Health = loadProtos().health;
  const h = new Health(agent.sdk, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    Check(r: object, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: { status: string }) => void): void;
  };
  const r = await new Promise<{ status: string }>((ok, fail) =>
    h.Check({ service: 'miso.sdk.v1.Miso' }, { deadline: Date.now() + 2000 }, (e, res) => (e ? fail(e) : ok(res!))),
  );
  h.close();
  assert.equal(r.status, 'SERVING');
});

test('agent - register/unregister show in status; state survives a restart', async () => {
  const c = agent.client;
  assert.equal((await c.register('fn', 'replica-1')).replicas, 1);
  assert.equal((await c.register('fn', 'replica-2')).replicas, 2);
  let st = await c.status();
  assert.equal(st.functions.find((f) => f.function === 'fn')?.local_replicas, 2);
  assert.equal((await c.unregister('fn', 'replica-1')).replicas, 1);
  await c.apply('fn', 'persist', 'n', 'pncounter', { op: 'add', n: 41 });
  const firstReplica = st.replica_id;
  await agent.stop();
  agent = await spawnAgent({ nodeId: 'solo', mongoUri: mongo.uri, db, env: { MISO_METRICS_PORT: '0' } });
  st = await agent.client.status();
  assert.equal((await agent.client.read('fn', 'persist', 'n')).value, 41);
  assert.equal((await agent.client.read('fn', 'o1', 'total')).value, 6);
  assert.notEqual(st.replica_id, firstReplica, 'each incarnation writes under a new replica id');
  await agent.client.apply('fn', 'persist', 'n', 'pncounter', { op: 'add', n: 1 });
  assert.equal((await agent.client.read('fn', 'persist', 'n')).value, 42);
});

test('misoctl - reads, changes and lists through the agent socket', async () => {
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const { resolve } = await import('node:path');
  const { fileURLToPath } = await import('node:url');
  const bin = resolve(fileURLToPath(import.meta.url), '..', '..', '..', 'src', 'cli', 'misoctl.js');
  const ctl = (...args: string[]) => promisify(execFile)(process.execPath, [bin, '--socket', agent.sdk, ...args]);
  assert.match((await ctl('apply', 'fn', 'cli', 'hits', 'gcounter', '{"op":"add","n":3}')).stdout, /hits \(gcounter\) = 3/);
  assert.match((await ctl('get', 'fn', 'cli', 'hits')).stdout, /= 3/);
  assert.match((await ctl('objects', 'fn')).stdout, /cli\s+hits\s+gcounter\s+3/);
  const stats = JSON.parse((await ctl('--json', 'stats')).stdout) as { node_id: string };
  assert.equal(stats.node_id, 'solo');
  await assert.rejects(ctl('apply', 'fn', 'cli', 'hits', 'bogus', '{}'), (e: { code: number; stderr: string }) => {
    assert.equal(e.code, 1);
    assert.match(e.stderr, /EDGE_MISO_UNKNOWN_TYPE/);
    return true;
  });
  await assert.rejects(ctl('frobnicate'), (e: { code: number }) => e.code === 2);
});

test('agent - Prometheus metrics are served on /metrics', async () => {
  assert.ok(agent.metricsPort > 0);
  const r = await fetch(`http://127.0.0.1:${agent.metricsPort}/metrics`, { signal: AbortSignal.timeout(3000) });
  const text = await r.text();
  assert.equal(r.status, 200);
  assert.match(text, /edge_miso_sdk_calls_total\{method="Apply",result="ok"\} \d+/);
  assert.match(text, /edge_miso_process_resident_memory_bytes/);
});

test('agent - a peer with another mesh secret is refused both ways, and nothing it holds is merged', async () => {
  const intruder = await spawnAgent({ nodeId: 'intruder', peers: [agent.peerAddress], env: { MISO_MESH_SECRET: 'another-mesh-secret-0123456789abcdef' } });
  try {
    await intruder.client.apply('intruder-fn', 'o', 'n', 'gcounter', { op: 'add', n: 1000 });
    // The intruder cannot check the agent's proof and leaves; the agent logs why (no secret in either log).
    await waitForEvery(
      'the refusal to be logged on both sides',
      () => agent.stderr.join('').includes('left during the handshake') && intruder.stderr.join('').includes('EDGE_MISO_AUTH'),
    );
    assert.match(intruder.stderr.join(''), /the agent at [^ ]+ failed to prove the mesh key for node id 'solo'/);
    assert.match(agent.stderr.join(''), /"code":"EDGE_MISO_AUTH".*the dialer at [^ ]+ \('intruder'\) left during the handshake/);
    assert.deepEqual(
      (await agent.client.status()).peers.filter((p) => p.node_id === 'intruder'),
      [],
    );
    assert.equal((await intruder.client.status()).peers.length, 0);
    assert.deepEqual(await agent.client.read('intruder-fn', 'o', 'n', 'gcounter'), { type: 'gcounter', value: 0, exists: false });
    for (const log of [agent.stderr.join(''), intruder.stderr.join('')]) {
      assert.ok(!log.includes('another-mesh-secret') && !log.includes('test-mesh-secret'), 'no secret in the logs');
    }
  } finally {
    await intruder.stop();
  }
});
