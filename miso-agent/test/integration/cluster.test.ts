/**
 * Five agent processes on loopback sharing one test server (one database each), replicating
 * over authenticated gRPC streams. Agent "e" reaches the others only through a relay (inbound)
 * and an HTTP CONNECT proxy (outbound), so the test can cut it off and heal it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveMongo, type MongoTarget } from '@syncmesh-edge/mongo-test-server';
import { ConnectProxy, Relay, waitForEvery } from '@syncmesh-edge/lab';
import { spawnAgent, waitConverged, type AgentProc, type AgentSpec } from '@syncmesh-edge/miso-agent/testing';

const FN = 'counter-fn';
/** Fast timers so failures are noticed within a second. */
const TIMERS = {
  MISO_DEBOUNCE_MS: '20',
  MISO_PERSIST_DELAY_MS: '20',
  MISO_HEARTBEAT_MS: '200',
  MISO_PEER_TIMEOUT_MS: '1000',
  MISO_ANTI_ENTROPY_MS: '500',
};

let mongo: MongoTarget;
const agents = new Map<string, AgentProc>();
let relayE: Relay;
let proxyE: ConnectProxy;
const dbPrefix = `miso_it_${process.pid}_`;

function specFor(id: string, peers: string[]): AgentSpec {
  const env: Record<string, string> = { ...TIMERS };
  if (id === 'e') {
    env['MISO_ADVERTISE_ADDR'] = relayE.address;
    env['grpc_proxy'] = proxyE.url;
  }
  return { nodeId: id, mongoUri: mongo.uri, db: `${dbPrefix}${id}`, peers, env };
}

const all = () => [...agents.values()];

before(async () => {
  mongo = await resolveMongo();
  relayE = await new Relay().start();
  proxyE = await new ConnectProxy().start();
  // Each agent knows the ones started before it; dial-back completes the mesh.
  const known: string[] = [];
  for (const id of ['a', 'b', 'c', 'd', 'e']) {
    const a = await spawnAgent(specFor(id, [...known]));
    if (id === 'e') relayE.target = a.boundAddress;
    agents.set(id, a);
    known.push(a.peerAddress);
    await a.client.register(FN, `${id}-r1`);
  }
  await waitForEvery('a full mesh', async () => {
    const sts = await Promise.all(all().map((a) => a.client.status()));
    return sts.every((s) => s.peers.filter((p) => p.connected && p.functions.includes(FN)).length === 4);
  });
});

after(async () => {
  await Promise.all(all().map((a) => a.stop()));
  await relayE?.close();
  await proxyE?.close();
  await mongo?.stop();
});

test('cluster - concurrent increments from all five agents converge to the exact total', async () => {
  const perAgent = 200;
  await Promise.all(
    all().map(async (a) => {
      // 4 concurrent writers per agent.
      await Promise.all(
        [0, 1, 2, 3].map(async () => {
          for (let i = 0; i < perAgent / 4; i++) await a.client.apply(FN, 'obj', 'total', 'gcounter', { op: 'add', n: 1 });
        }),
      );
    }),
  );
  await waitConverged(all(), FN, 'obj', 'total', 'gcounter', 5 * perAgent);
});

test('cluster - add/remove races on an OR-set end equal on every node', async () => {
  const values = ['v0', 'v1', 'v2', 'v3', 'v4', 'v5'];
  await Promise.all(
    all().map(async (a, i) => {
      for (let k = 0; k < 30; k++) {
        const value = values[(k * (i + 1)) % values.length]!;
        const op = (k + i) % 3 === 0 ? 'remove' : 'add';
        await a.client.apply(FN, 'obj', 'set', 'orset', { op, value });
      }
    }),
  );
  const v = (await waitConverged(all(), FN, 'obj', 'set', 'orset')) as string[];
  assert.ok(Array.isArray(v));
  // Add-wins: an element added last by some agent after its own remove is present.
  assert.ok(v.every((x) => values.includes(x)));
});

test('cluster - an agent cut off and healed converges (both sides wrote meanwhile)', async () => {
  const e = agents.get('e')!;
  const others = all().filter((a) => a !== e);
  assert.ok(relayE.active > 0 && proxyE.active > 0, 'e is reached only through the relay and the proxy');
  relayE.cut();
  proxyE.cut();
  await waitForEvery('the others to drop e', async () => {
    const st = await others[0]!.client.status();
    return st.peers.some((p) => p.node_id === 'e' && !p.connected);
  });
  await Promise.all(others.map((a) => a.client.apply(FN, 'part', 'n', 'pncounter', { op: 'add', n: 10 })));
  await e.client.apply(FN, 'part', 'n', 'pncounter', { op: 'add', n: -3 });
  await e.client.apply(FN, 'part', 'only-e', 'gset', { op: 'add', value: 'written while cut off' });
  assert.equal((await e.client.read(FN, 'part', 'n')).value, -3, 'e sees only its own write while cut off');
  relayE.heal();
  proxyE.heal();
  await waitConverged(all(), FN, 'part', 'n', 'pncounter', 37);
  await waitConverged(all(), FN, 'part', 'only-e', 'gset', ['written while cut off']);
});

test('cluster - an agent killed with kill -9 comes back with its state (disk, then peers)', async () => {
  const c = agents.get('c')!;
  await c.client.apply(FN, 'k9', 'n', 'gcounter', { op: 'add', n: 7 });
  await waitConverged(all(), FN, 'k9', 'n', 'gcounter', 7);
  await waitForEvery('c to persist', async () => (await c.client.status()).persist_pending === 0);
  await c.stop(true);
  // Writes while c is down.
  await agents.get('a')!.client.apply(FN, 'k9', 'n', 'gcounter', { op: 'add', n: 5 });
  // 1) Restart alone on another port (nobody reaches it): the state comes from disk.
  const alone = await spawnAgent({ ...specFor('c', []), peers: [] });
  assert.equal((await alone.client.read(FN, 'k9', 'n')).value, 7);
  assert.equal((await alone.client.read(FN, 'obj', 'total')).value, 1000);
  await alone.stop();
  // 2) Restart on its old address with its peers: it catches up on what it missed.
  const back = await spawnAgent({
    ...specFor(
      'c',
      all()
        .filter((a) => a !== c)
        .map((a) => a.peerAddress),
    ),
    grpcAddr: c.boundAddress,
  });
  agents.set('c', back);
  await back.client.register(FN, 'c-r1');
  await waitConverged(all(), FN, 'k9', 'n', 'gcounter', 12);
});

test('cluster - restore fetches a CRDT from peers before the operation (Algorithm 2)', async () => {
  // A fresh agent "f" joins; its first operation on a CRDT it lacks must see the mesh's value.
  const a = agents.get('a')!;
  await a.client.apply(FN, 'restore', 'n', 'gcounter', { op: 'add', n: 100 });
  await waitConverged(all(), FN, 'restore', 'n', 'gcounter', 100);
  const f = await spawnAgent(specFor('f', [a.peerAddress]));
  try {
    // f does not run the function, so nobody pushes it state: only a restore can know 100.
    await waitForEvery('f to see a as running the function', async () => {
      const st = await f.client.status();
      return st.peers.some((p) => p.node_id === 'a' && p.connected && p.functions.includes(FN));
    });
    assert.equal((await f.client.status()).crdts, 0);
    const v = await f.client.apply(FN, 'restore', 'n', 'gcounter', { op: 'add', n: 1 }, true);
    assert.equal(v, 101);
  } finally {
    await f.stop();
  }
});

test('cluster - replication statistics are reported per peer', async () => {
  const a = agents.get('a')!;
  await waitForEvery('a to see all five nodes run the function', async () => {
    const fn = (await a.client.status()).functions.find((f) => f.function === FN);
    return JSON.stringify(fn?.nodes) === JSON.stringify(['a', 'b', 'c', 'd', 'e']);
  });
  const st = await a.client.status();
  assert.equal(st.node_id, 'a');
  for (const p of st.peers.filter((x) => x.connected)) {
    assert.ok(p.bytes_sent > 0 && p.messages_sent > 0, JSON.stringify(p));
    assert.ok(p.bytes_received > 0 && p.messages_received > 0, JSON.stringify(p));
  }
});
