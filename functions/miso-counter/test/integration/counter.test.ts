/**
 * The example function against real agents: two agents (each with its own database on one
 * test server), one function server per node; increments on both nodes add up everywhere.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveMongo, type MongoTarget } from '@syncmesh-edge/mongo-test-server';
import { serveFunction, type FunctionServer } from '@syncmesh-edge/miso-sdk';
import { waitForEvery } from '@syncmesh-edge/lab';
import { spawnAgent, type AgentProc } from '@syncmesh-edge/miso-agent/testing';
import { handler } from '../../src/handler.js';

let mongo: MongoTarget;
const agents: AgentProc[] = [];
const fns: FunctionServer[] = [];

async function call(fn: FunctionServer, method: string, body?: string, object = 'demo'): Promise<{ status: number; json: unknown }> {
  const r = await fetch(`http://127.0.0.1:${fn.port}/?object=${object}`, {
    method,
    body,
    signal: AbortSignal.timeout(5000),
  });
  const text = await r.text();
  return { status: r.status, json: r.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as unknown) : text };
}

before(async () => {
  mongo = await resolveMongo();
  const env = { MISO_DEBOUNCE_MS: '20' };
  const a = await spawnAgent({ nodeId: 'n1', mongoUri: mongo.uri, db: `miso_fn_${process.pid}_1`, env });
  const b = await spawnAgent({ nodeId: 'n2', mongoUri: mongo.uri, db: `miso_fn_${process.pid}_2`, peers: [a.peerAddress], env });
  agents.push(a, b);
  for (const ag of agents) {
    fns.push(await serveFunction(handler, { port: 0, env: { MISO_SDK_SOCKET: ag.sdk, MISO_FUNCTION: 'miso-counter', MISO_REPLICA_ID: `${ag.nodeId}-fn` } }));
  }
});

after(async () => {
  await Promise.all(fns.map((f) => f.close()));
  await Promise.all(agents.map((a) => a.stop()));
  await mongo?.stop();
});

test('miso-counter - start-up registers the function replica with the agent', async () => {
  for (const a of agents) {
    const st = await a.client.status();
    assert.equal(st.functions.find((f) => f.function === 'miso-counter')?.local_replicas, 1);
  }
});

test('miso-counter - increments on two nodes add up on both', async () => {
  // Restore asks the peers that run the function: wait until each agent knows the other does.
  await waitForEvery('both agents to know where miso-counter runs', async () => {
    const st = await Promise.all(agents.map((a) => a.client.status()));
    return st.every((x) => (x.functions.find((f) => f.function === 'miso-counter')?.nodes.length ?? 0) >= 2);
  });
  assert.deepEqual((await call(fns[0]!, 'POST', '5')).json, { totalSum: 5 });
  assert.deepEqual((await call(fns[1]!, 'POST', '')).json, { totalSum: 6 }, 'restored from n1 before adding');
  await waitForEvery('both nodes to report 6', async () => {
    const r = await Promise.all(fns.map((f) => call(f, 'GET')));
    return r.every((x) => JSON.stringify(x.json) === '{"totalSum":6}');
  });
});

test('miso-counter - a bad body is a 400 and changes nothing', async () => {
  const r = await call(fns[0]!, 'POST', 'minus one', 'other');
  assert.equal(r.status, 400);
  const [e] = (r.json as { errors: { message: string; extensions: { code: string; allowed: string } }[] }).errors;
  assert.equal(e?.extensions.code, 'EDGE_MISO_SDK_REFUSED', 'the coded JSON error of context.fail');
  assert.match(e?.message ?? '', /non-negative integer, got "minus one"/);
  assert.match(e?.extensions.allowed ?? '', /empty body/);
  assert.deepEqual((await call(fns[0]!, 'GET', undefined, 'other')).json, { totalSum: 0 });
});

test('miso-counter - shutdown unregisters the replica', async () => {
  const f = fns.pop()!;
  await f.close();
  const st = await agents[1]!.client.status();
  assert.equal(st.functions.find((x) => x.function === 'miso-counter')?.local_replicas ?? 0, 0);
});
