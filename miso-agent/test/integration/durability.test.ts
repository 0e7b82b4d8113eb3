/**
 * Synchronous persistence (MISO_PERSIST_DELAY_MS=0) when the node's MongoDB goes away: an op the
 * agent already applied and queued for its peers is answered EDGE_MISO_NOT_DURABLE (not the
 * retryable EDGE_MISO_STORE), so that a caller does not apply it twice. Found by the mesh chaos
 * test (scenarios/mesh, seed 2).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { resolveMongo, type MongoTarget } from '@syncmesh-edge/mongo-test-server';
import { MisoSdkError } from '@syncmesh-edge/miso-sdk';
import { spawnAgent, type AgentProc } from '@syncmesh-edge/miso-agent/testing';

let mongo: MongoTarget;
let agent: AgentProc;

before(async () => {
  mongo = await resolveMongo();
  agent = await spawnAgent({
    nodeId: 'durable',
    mongoUri: mongo.uri,
    db: `miso_it_durable_${process.pid}`,
    env: { MISO_PERSIST_DELAY_MS: '0', MISO_METRICS_PORT: '0' },
  });
});

after(async () => {
  await agent?.stop();
  await mongo?.stop();
});

test('durability - an applied op whose write fails is answered NOT_DURABLE, and counted once', async (t) => {
  if (mongo.kind !== 'test-server') {
    t.skip('needs the test server (the test stops the database)');
    return;
  }
  const c = agent.client;
  await c.apply('fn', 'o', 'n', 'gcounter', { op: 'add', n: 1 });
  await mongo.stop();
  await assert.rejects(c.apply('fn', 'o', 'n', 'gcounter', { op: 'add', n: 2 }), (e: unknown) => {
    assert.ok(e instanceof MisoSdkError, String(e));
    assert.equal(e.code, 'EDGE_MISO_NOT_DURABLE');
    assert.equal(e.grpcCode, grpc.status.FAILED_PRECONDITION);
    assert.match(e.message, /was applied and is being replicated.*do not retry/);
    return true;
  });
  // The op took effect exactly once.
  assert.equal((await c.read('fn', 'o', 'n')).value, 3);
});
