/**
 * An agent whose static peer is pinned at a proxy (`id@proxy:port`, the emulated mesh's agent
 * links, a NAT) keeps to that address: when the peer dials in first, while the pinned dialer is
 * still backing off, the agent does not dial it back at the address its Hello advertises. Two
 * agent processes on loopback; b reaches a only through a relay that starts cut, and a advertises
 * a trap address that counts every connection made to it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { resolveMongo, type MongoTarget } from '@syncmesh-edge/mongo-test-server';
import { Relay, waitForEvery } from '@syncmesh-edge/lab';
import { spawnAgent, waitConverged, type AgentProc } from '@syncmesh-edge/miso-agent/testing';

const FN = 'proxied-fn';
const TIMERS = { MISO_DEBOUNCE_MS: '20', MISO_PERSIST_DELAY_MS: '20', MISO_HEARTBEAT_MS: '200', MISO_PEER_TIMEOUT_MS: '1000' };

let mongo: MongoTarget;
let a: AgentProc;
let b: AgentProc;
/** b's way to a (its pinned static peer); cut until the test heals it. */
let toA: Relay;
/** a's way to b. */
let toB: Relay;
/** a's advertised address: nothing must ever connect here. */
let trap: Server;
let trapConnections = 0;
const dbPrefix = `miso_px_${process.pid}_`;

before(async () => {
  mongo = await resolveMongo();
  trap = createServer((c) => {
    trapConnections++;
    c.destroy();
  }).listen(0, '127.0.0.1');
  await once(trap, 'listening');
  const trapAddress = `127.0.0.1:${(trap.address() as { port: number }).port}`;
  toA = await new Relay().start();
  toA.cut();
  b = await spawnAgent({ nodeId: 'b', mongoUri: mongo.uri, db: `${dbPrefix}b`, peers: [`a@${toA.address}`], env: TIMERS });
  toB = await new Relay().start(b.boundAddress);
  a = await spawnAgent({
    nodeId: 'a',
    mongoUri: mongo.uri,
    db: `${dbPrefix}a`,
    peers: [`b@${toB.address}`],
    env: { ...TIMERS, MISO_ADVERTISE_ADDR: trapAddress },
  });
  toA.target = a.boundAddress;
});

after(async () => {
  await Promise.all([a, b].filter(Boolean).map((x) => x.stop()));
  await toA?.close();
  await toB?.close();
  await new Promise<void>((r) => (trap ? trap.close(() => r()) : r()));
  await mongo?.stop();
});

test('proxied links - a peer pinned at a proxy is not dialled back at its advertised address', async () => {
  // a dials b through its relay; b hears a's Hello (advertising the trap) while its own pinned
  // dialer to a is backing off against the cut relay
  await waitForEvery('b lists a as a connected peer (a dialled in)', async () => (await b.client.status()).peers.some((p) => p.node_id === 'a' && p.connected));
  assert.equal(trapConnections, 0, "b dialled a back at a's advertised address");
  toA.heal();
  // b's pinned dialer gets through: both legs of its connection are open in the relay
  await waitForEvery("b's pinned dialer reaches a through its relay", async () => toA.active >= 2);
  for (const x of [a, b]) await x.client.register(FN, `${x.nodeId}-r1`);
  await b.client.apply(FN, 'o', 'n', 'gcounter', { op: 'add', n: 2 });
  await a.client.apply(FN, 'o', 'n', 'gcounter', { op: 'add', n: 3 });
  await waitConverged([a, b], FN, 'o', 'n', 'gcounter', 5);
  assert.equal(trapConnections, 0, "b never dialled a's advertised address");
});
