/**
 * The MISO agents' links go through the link emulation as the functions' do: a 3-node mesh with
 * static discovery, where node-1 <-> node-2 has 200 ms one-way latency and node-1 <-> node-3
 * none. Every agent's static peers are the other agents' own addresses, which each node's
 * namespace redirects to its agent link proxies; every agent connection runs through toxiproxy
 * (none between two nodes directly: the kernel's connection table shows each one answered by
 * the link's proxy), the link is authenticated both ways through the proxy, an update from node-1 reaches
 * node-2 no sooner than the link's latency and its acknowledgement takes the round trip, while
 * node-3 gets it at once; a capture counts that traffic as agent traffic, once, per directed
 * pair; a cut blocks agent replication through the proxies and the restore
 * heals it without losing an op. The measured times are printed (`# agent-links ...`).
 * Each node runs its test server, an echo server in place of the function and the agent.
 * Needs root (namespaces), toxiproxy and iptables (make tools) and a built agent and SDK.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startMeshCapture } from '../../src/network/capture.js';
import { cut, down, restore, up, type MeshHandle } from '../../src/mesh.js';
import { misoPeers } from '../../src/runtime/services.js';
import { trackedConnections } from '../../src/network/network.js';
import { readState } from '../../src/plan/state.js';
import { ToxiproxyClient } from '../../src/network/toxiproxy.js';
import { AGENT_DEADLINES, AGENT_MESH_ENV, untilAllConnected } from './support.js';
import { AgentClients, agentSkipReason, has, tempStateRoot, uniqueMeshName, until } from '../../src/testing/helpers.js';

const LINK_MS = 200; // one-way latency of node-1 <-> node-2 (both directions)
const { connectMs: CONNECT_DEADLINE_MS, replicationMs: REPLICATION_DEADLINE_MS } = AGENT_DEADLINES;
/** The agents drop a silent peer after MISO_PEER_TIMEOUT_MS (3 s). */
const DROP_DEADLINE_MS = 15_000;
/** A restored link: reconnect backoff (at most 5 s) plus the catch-up. */
const HEAL_DEADLINE_MS = 30_000;
const ROUNDS = 3;
const FN = 'agent-links-fn';

const skip = agentSkipReason();
const name = uniqueMeshName('sml');
const stateRoot = tempStateRoot();
let mesh: MeshHandle;
const progress: string[] = [];
const clients = new AgentClients();

const client = (node: string) => clients.of(node);
const connectedPeers = (node: string) => clients.connectedPeers(node);

async function hits(node: string): Promise<number> {
  return Number((await client(node).read(FN, 'hits', 'total', 'gcounter')).value ?? 0);
}

/** Polls until `node` reads at least `want`; the milliseconds since `t0`. */
async function arrival(node: string, want: number, t0: number): Promise<number> {
  await until(`${node} reads ${want}`, REPLICATION_DEADLINE_MS, async () => (await hits(node)) >= want || `${node} reads ${await hits(node)}`);
  return performance.now() - t0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

before(async () => {
  if (skip) return;
  const latencyFile = join(stateRoot, 'latency.json');
  writeFileSync(latencyFile, JSON.stringify({ links: [{ from: 'node-1', to: 'node-2', latency_ms: LINK_MS, symmetric: true }] }));
  const cfg = loadConfig({
    ...AGENT_MESH_ENV,
    MESH_NAME: name,
    MESH_STATE_DIR: stateRoot,
    MESH_LATENCY: latencyFile,
    MESH_MISO_PERSIST_DELAY_MS: '0',
  });
  mesh = await up(cfg, { loadData: false, fillRegistry: false, progress: (m) => progress.push(m) });
  await clients.openMesh(mesh.plan.nodes);
});

after(async () => {
  clients.closeAll();
  if (!skip) await down(stateRoot, name);
  rmSync(stateRoot, { recursive: true, force: true }); // also the empty one of a skipped run
});

test('agent links - every agent names the others by their own addresses and reaches them through its agent link proxy, authenticated both ways', {
  skip,
}, async () => {
  const { plan } = mesh;
  assert.equal(plan.agentLinks.length, 6);
  assert.ok(
    progress.some((m) => m.includes('6 directed function links and 6 agent links')),
    `the start says what goes through toxiproxy: ${progress.join(' | ')}`,
  );
  const state = readState(plan.stateDir)!;
  for (const n of plan.nodes) {
    const rec = state.processes.find((p) => p.role === 'agent' && p.node === n.id)!;
    const env = readFileSync(`/proc/${rec.pid}/environ`, 'utf8').split('\0');
    const peers = env.find((v) => v.startsWith('MISO_PEERS='))!.slice('MISO_PEERS='.length);
    assert.equal(peers, misoPeers(plan, n));
    // each peer at its own agent address, as topology.json lists it (agent_address)
    const own = Object.fromEntries(mesh.topology.nodes.filter((t) => t.id !== n.id).map((t) => [t.id, t.agent_address!]));
    assert.deepEqual(Object.fromEntries(peers.split(',').map((e) => e.split('@') as [string, string])), own);
    assert.deepEqual(mesh.topology.nodes[n.index - 1]!.agent_peers, own);
    assert.deepEqual(
      mesh.topology.nodes[n.index - 1]!.agent_links,
      Object.fromEntries(plan.agentLinks.filter((l) => l.from === n.index).map((l) => [`node-${l.to}`, `${l.listenHost}:${l.listenPort}`])),
    );
  }
  const proxies = new Set((await new ToxiproxyClient(plan.toxiproxyApi.host, plan.toxiproxyApi.port).proxyNames()).filter((p) => p.endsWith(':agent')));
  assert.deepEqual([...proxies].sort(), plan.agentLinks.map((l) => l.name).sort());

  const ids = plan.nodes.map((n) => n.id);
  // connected = a link whose handshake authenticated the peer's id both ways and whose heartbeats arrive
  await untilAllConnected(clients, ids, 'every agent lists the other two as connected peers', CONNECT_DEADLINE_MS);
  // Every connection a node makes to another node's address is answered by that link's proxy on
  // the host (the namespace's redirect; conntrack shows both ends), and no node is reached from
  // another node's address (the proxies connect from the host). Each pair is linked through a
  // proxy: one side's agent dialled the other (which side depends on who was up first; a pair
  // needs one link, not two).
  const dialled = new Set<string>();
  for (const n of plan.nodes) {
    const others = new Map(plan.nodes.filter((o) => o !== n).map((o) => [o.addr, o]));
    const proxies = new Map(plan.agentLinks.filter((l) => l.from === n.index).map((l) => [l.upstream, l]));
    const conns = (await trackedConnections(n)).filter((c) => c.state === 'ESTABLISHED');
    const direct = conns.filter(
      (c) => others.has(c.src) || (others.has(c.dst) && !(c.replySrc === plan.hostAddr && proxies.get(`${c.dst}:${c.dport}`)?.listenPort === c.replySport)),
    );
    assert.deepEqual(direct, [], `${n.id} has connections straight to or from another node`);
    for (const c of conns) {
      const l = proxies.get(`${c.dst}:${c.dport}`);
      if (l && c.replySport === l.listenPort) dialled.add(`${l.from}-${l.to}`);
    }
  }
  for (const a of plan.nodes) {
    for (const b of plan.nodes.filter((x) => x.index > a.index)) {
      assert.ok(
        dialled.has(`${a.index}-${b.index}`) || dialled.has(`${b.index}-${a.index}`),
        `${a.id} and ${b.id} are linked through an agent link proxy (dialled: ${[...dialled].join(', ')})`,
      );
    }
  }
});

test('agent links - an update from node-1 takes the emulated latency to node-2, and none to node-3', { skip }, async () => {
  for (const id of ['node-1', 'node-2', 'node-3']) await client(id).register(FN, `${id}-replica`);
  await until('node-1 sees the function on both peers', CONNECT_DEADLINE_MS, async () => {
    const f = (await client('node-1').status()).functions.find((x) => x.function === FN);
    return JSON.stringify(f?.nodes) === JSON.stringify(['node-1', 'node-2', 'node-3']) || `nodes ${JSON.stringify(f?.nodes)}`;
  });
  const to2: number[] = [];
  const to3: number[] = [];
  const lag2: number[] = [];
  const lag3: number[] = [];
  let total = await hits('node-1');
  for (let i = 0; i < ROUNDS; i++) {
    // the previous round's value is everywhere, so this round's arrivals are this op's
    await until('the previous value everywhere', REPLICATION_DEADLINE_MS, async () => (await hits('node-2')) === total && (await hits('node-3')) === total);
    const t0 = performance.now();
    await client('node-1').apply(FN, 'hits', 'total', 'gcounter', { op: 'add', n: 1 });
    total += 1;
    const [a2, a3] = await Promise.all([arrival('node-2', total, t0), arrival('node-3', total, t0)]);
    to2.push(a2);
    to3.push(a3);
    // node-1's acknowledgement lag of this round's batch: send to ack on its own (proxied) stream
    await until('node-1 has both acknowledgements', REPLICATION_DEADLINE_MS, async () => {
      const st = await client('node-1').status();
      return st.peers.every((p) => p.lag_last_ms > 0) || 'no ack yet';
    });
    const st = await client('node-1').status();
    lag2.push(st.peers.find((p) => p.node_id === 'node-2')!.lag_last_ms);
    lag3.push(st.peers.find((p) => p.node_id === 'node-3')!.lag_last_ms);
  }
  console.log(
    `# agent-links: gcounter add on node-1 readable on node-2 (${LINK_MS} ms link) after ${to2.map(Math.round).join(', ')} ms, on node-3 (no latency) after ${to3.map(Math.round).join(', ')} ms (MISO_DEBOUNCE_MS 200 in both); node-1's update->ack lag to node-2 ${lag2.map(Math.round).join(', ')} ms, to node-3 ${lag3.map(Math.round).join(', ')} ms`,
  );
  for (const a of to2) assert.ok(a >= LINK_MS, `node-2 read the add after ${a} ms, before the link's ${LINK_MS} ms`);
  // the ack comes back on the same link: a round trip of the emulated latency at least
  for (const l of lag2) assert.ok(l >= 2 * LINK_MS, `node-1's ack lag to node-2 is ${l} ms, below the link's ${2 * LINK_MS} ms round trip`);
  assert.ok(median(lag3) < 2 * LINK_MS, `node-1's ack lag to node-3 (no latency) is ${median(lag3)} ms`);
  assert.ok(median(to3) < median(to2), `node-3 (no latency) got the add after ${median(to3)} ms, node-2 after ${median(to2)} ms`);
});

test('agent links - capture counts agent traffic through the proxies once, as agent traffic per directed pair', {
  skip: skip || (!has('tcpdump') && 'needs tcpdump: run make tools'),
}, async () => {
  const capture = await startMeshCapture(mesh.topology, { dir: join(stateRoot, 'capture') });
  // 20 updates, each replicated before the next (a message and its ack on every link each time):
  // kilobytes of agent traffic, so that the few hundred bytes of background frames the bridge
  // carries anyway (ARP, IGMP reports: 'other') stay well under a tenth of it. With 3 adds in
  // one debounce the agent traffic was about 1-3 KB and 280 B of ARP/IGMP failed the check in CI.
  for (let i = 0; i < 20; i++) {
    const want = (await hits('node-1')) + 1;
    await client('node-1').apply(FN, 'hits', 'total', 'gcounter', { op: 'add', n: 1 });
    await until('node-2 and node-3 read the add', REPLICATION_DEADLINE_MS, async () => (await hits('node-2')) === want && (await hits('node-3')) === want);
  }
  // one heartbeat period more: every agent has sent on every link it dialled
  await until('node-1 hears both peers after the adds', REPLICATION_DEADLINE_MS, async () => {
    const st = await client('node-1').status();
    return st.peers.every((p) => p.connected) || 'a peer is not connected';
  });
  const r = await capture.stop();
  console.log(
    `# agent-links capture: agent ${r.agent_bytes} B (${r.agent_pairs.map((p) => `${p.from}>${p.to} ${p.bytes}`).join(', ')}), relay ${r.relay_bytes} B, node_node ${r.node_node_bytes} B, other ${r.other_bytes} B`,
  );
  assert.equal(r.dropped_packets, 0);
  for (const pair of ['node-1>node-2', 'node-1>node-3']) {
    assert.ok(
      r.agent_pairs.some((p) => `${p.from}>${p.to}` === pair && p.bytes > 0),
      `${pair}: the updates went out on node-1's own agent links: ${JSON.stringify(r.agent_pairs)}`,
    );
  }
  assert.equal(
    r.agent_bytes,
    r.agent_pairs.reduce((s, p) => s + p.bytes, 0),
  );
  assert.equal(r.node_node_bytes, 0, 'no function traffic here');
  assert.equal(r.counted_bytes, 0, 'agent traffic is not part of the query systems');
  assert.ok(r.relay_bytes > 0, 'the proxy -> agent legs are seen, and not counted');
  assert.ok(r.other_bytes < r.agent_bytes / 10, `agent traffic through the proxies is not 'other': ${r.other_bytes} B other`);
});

test('agent links - a cut blocks agent replication through the proxies, and the restore heals it without losing an op', { skip }, async () => {
  const { plan } = mesh;
  const toxi = new ToxiproxyClient(plan.toxiproxyApi.host, plan.toxiproxyApi.port);
  const start = await hits('node-1');
  await until(
    'all three agents agree before the cut',
    REPLICATION_DEADLINE_MS,
    async () => (await hits('node-2')) === start && (await hits('node-3')) === start,
  );
  await cut(stateRoot, name, 'node-2');
  // the toxiproxy part of the cut covers node-2's agent links in both directions, and only them
  for (const l of plan.agentLinks) {
    const names = (await toxi.toxics(l.name)).map((t) => t.name).sort();
    const touches2 = l.from === 2 || l.to === 2;
    assert.deepEqual(names.includes('cut_upstream') && names.includes('cut_downstream'), touches2, `${l.name}: ${names.join(',')}`);
  }
  await until('node-1 and node-3 drop node-2', DROP_DEADLINE_MS, async () => {
    const p1 = await connectedPeers('node-1');
    const p3 = await connectedPeers('node-3');
    return (!p1.includes('node-2') && !p3.includes('node-2')) || `node-1 sees [${p1.join(',')}], node-3 [${p3.join(',')}]`;
  });
  // ops on both sides of the cut: node-2's own stay on node-2, the others' do not reach it
  await client('node-1').apply(FN, 'hits', 'total', 'gcounter', { op: 'add', n: 10 });
  await client('node-3').apply(FN, 'hits', 'total', 'gcounter', { op: 'add', n: 100 });
  await client('node-2').apply(FN, 'hits', 'total', 'gcounter', { op: 'add', n: 1000 });
  await until(
    'node-1 and node-3 exchange their ops',
    REPLICATION_DEADLINE_MS,
    async () => (await hits('node-1')) === start + 110 && (await hits('node-3')) === start + 110,
  );
  assert.equal(await hits('node-2'), start + 1000, 'node-2 got nothing across the cut');
  assert.equal(await hits('node-1'), start + 110, "node-1 got nothing of node-2's");

  await restore(stateRoot, name, 'node-2');
  for (const l of plan.agentLinks) {
    const names = (await toxi.toxics(l.name)).map((t) => t.name);
    assert.ok(!names.some((t) => t.startsWith('cut_')), `${l.name} is restored: ${names.join(',')}`);
    // the profile stays: node-1 <-> node-2 still has its latency
    assert.equal(names.includes('latency_upstream'), (l.from === 1 && l.to === 2) || (l.from === 2 && l.to === 1), `${l.name}: ${names.join(',')}`);
  }
  const healMs = await until('every agent reads every op', HEAL_DEADLINE_MS, async () => {
    const v = await Promise.all(['node-1', 'node-2', 'node-3'].map(hits));
    return v.every((x) => x === start + 1110) || `values ${v.join(', ')}`;
  });
  await untilAllConnected(clients, ['node-1', 'node-2', 'node-3'], 'every agent lists the other two again', CONNECT_DEADLINE_MS);
  console.log(`# agent-links: after the restore every agent read all ${1110} of the ops made during the cut within ${Math.round(healMs)} ms`);
});
