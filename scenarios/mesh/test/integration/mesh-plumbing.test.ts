/**
 * The mesh's plumbing without the Syncmesh function: namespaces, the bridge, one toxiproxy with a
 * proxy per directed pair, every node naming its peers by their own addresses (as mesh-up prints
 * them) while its namespace redirects them to its links, link latency, cut/restore, refusing a
 * start whose names are taken, and mesh-down leaving nothing behind. A tiny echo server stands
 * in for the function.
 * Needs root (network namespaces), toxiproxy and iptables (make tools).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type MeshConfig } from '../../src/config.js';
import { MeshError } from '../../src/errors.js';
import { createNamespace, deleteNamespace, leftovers, removeNamespace, runInNetns } from '@syncmesh-edge/lab';
import { clientNamespace, startMeshCapture } from '../../src/network/capture.js';
import { cut, down, restore, status, up, type MeshHandle } from '../../src/mesh.js';
import { trackedConnections } from '../../src/network/network.js';
import { PACKAGE_ROOT } from '../../src/config.js';
import {
  has,
  iptablesRules,
  netnsSkipReason,
  recordedProcesses,
  stillRunning,
  tempStateRoot,
  TOXIPROXY_BIN,
  uniqueMeshName,
} from '../../src/testing/helpers.js';

const LINK_MS = 100; // one-way latency of node-1 -> node-2 in this test's latency file
const skip = netnsSkipReason();

const name = uniqueMeshName('smp');
const stateRoot = tempStateRoot();
let cfg: MeshConfig;
let mesh: MeshHandle;
let rulesBefore = '';

interface Echo {
  node: string;
  forwarded: { ok: boolean; error?: string; ms: number; answer?: { node: string } } | null;
}

async function via(from: number, to: number, timeoutMs = 3_000): Promise<Echo> {
  const src = mesh.topology.nodes[from - 1]!;
  const res = await fetch(src.function_url, { method: 'POST', body: JSON.stringify({ forward: src.peers[`node-${to}`], timeoutMs }) });
  return (await res.json()) as Echo;
}

before(async () => {
  if (skip) return;
  rulesBefore = iptablesRules();
  const latencyFile = join(stateRoot, 'latency.json');
  writeFileSync(latencyFile, JSON.stringify({ links: [{ from: 'node-1', to: 'node-2', latency_ms: LINK_MS }] }));
  cfg = loadConfig({
    MESH_NAME: name,
    MESH_NODES: '3',
    MESH_STATE_DIR: stateRoot,
    MESH_LATENCY: latencyFile,
    MESH_MONGO_STORAGE: 'disk', // covers the data-directory path; no data is loaded here
    MESH_FUNCTION_MAIN: join(PACKAGE_ROOT, 'dist', 'src', 'testing', 'echo-server.js'),
    // The plumbing under test: an echo server per node, no listener or agent traffic beside it.
    MESH_SERVICES: 'function',
    TOXIPROXY_BIN,
  });
  mesh = await up(cfg, { loadData: false, fillRegistry: false });
});

after(async () => {
  if (skip) return;
  await down(stateRoot, name);
  rmSync(stateRoot, { recursive: true, force: true });
});

test('mesh plumbing - every node runs in its own namespace and is reachable from the host', { skip }, async () => {
  assert.deepEqual((await leftovers(name)).netns.sort(), [`${name}-n1`, `${name}-n2`, `${name}-n3`]);
  const s = await status(stateRoot, name);
  assert.deepEqual(
    s.nodes.map((n) => n.ready),
    [true, true, true],
  );
  for (const n of mesh.topology.nodes) {
    const res = await fetch(n.function_url, { method: 'POST', body: '{}' });
    assert.equal(((await res.json()) as Echo).node, n.id);
    // the node's MongoDB listens in its namespace only: its address is the namespace's
    const inNs = (await runInNetns(n.namespace!, ['ip', '-4', '-br', 'addr', 'show', 'eth0'])).stdout;
    assert.match(inNs, new RegExp(n.address.replace(/\./g, '\\.')));
  }
  const routes = (await runInNetns(`${name}-n1`, ['ip', 'route'])).stdout;
  assert.match(routes, /224\.0\.0\.0\/4 dev eth0/, 'multicast route for mDNS');
});

test('mesh plumbing - a node names its peers by their own URLs, and its namespace sends them through its links', { skip }, async () => {
  for (const n of mesh.topology.nodes) {
    const others = mesh.topology.nodes.filter((o) => o !== n);
    assert.deepEqual(n.peers, Object.fromEntries(others.map((o) => [o.id, o.function_url])), `${n.id}: peers at the URLs mesh-up prints`);
    assert.deepEqual(
      n.links,
      Object.fromEntries(mesh.plan.links.filter((l) => `node-${l.from}` === n.id).map((l) => [`node-${l.to}`, `${l.listenHost}:${l.listenPort}`])),
    );
  }
  const answer = await via(1, 2);
  assert.equal(answer.forwarded?.answer?.node, 'node-2');
  // node-1 asked node-2's own address; the kernel's connection table shows the link's proxy answered
  const l12 = mesh.plan.links.find((l) => l.from === 1 && l.to === 2)!;
  const conns = await trackedConnections(mesh.plan.nodes[0]!);
  const toNode2 = conns.filter((c) => `${c.dst}:${c.dport}` === l12.upstream);
  assert.ok(toNode2.length > 0, `node-1 connected to ${l12.upstream}: ${JSON.stringify(conns)}`);
  for (const c of toNode2) assert.deepEqual([c.replySrc, c.replySport], [l12.listenHost, l12.listenPort], `redirected to ${l12.name}: ${JSON.stringify(c)}`);
});

test('mesh plumbing - node A to node B really waits for the link latency', { skip }, async () => {
  await via(1, 2); // warm up the connections
  await via(1, 3);
  const slow = await via(1, 2);
  assert.equal(slow.forwarded?.answer?.node, 'node-2');
  assert.ok(slow.forwarded!.ms >= 2 * LINK_MS, `node-1 -> node-2 took ${slow.forwarded!.ms} ms, expected >= ${2 * LINK_MS}`);
  // the unshaped link does not wait (best of three: the machine may be busy)
  const fast = Math.min(...(await Promise.all([via(1, 3), via(1, 3), via(1, 3)])).map((e) => e.forwarded!.ms));
  console.log(
    `# plumbing: node-1 -> node-2 (its own URL, ${LINK_MS} ms one-way on the link) answered after ${Math.round(slow.forwarded!.ms)} ms; node-1 -> node-3 (no latency) after ${Math.round(fast)} ms`,
  );
  assert.ok(fast < 2 * LINK_MS, `node-1 -> node-3 took ${fast} ms, expected < ${2 * LINK_MS}`);
});

test('mesh plumbing - capture counts every packet once: client, node to node per directed pair, relay legs apart', {
  skip: skip || (!has('tcpdump') && 'needs tcpdump: run make tools'),
}, async () => {
  const client = await clientNamespace(name, mesh.plan.subnet!, mesh.plan.bridge!);
  const dir = join(stateRoot, 'capture');
  try {
    const capture = await startMeshCapture(mesh.topology, { dir, client });
    // the client asks node-1 to forward to node-2 (through the link proxy), from its own namespace
    const src = mesh.topology.nodes[0]!;
    const body = JSON.stringify({ forward: src.peers['node-2'], timeoutMs: 3_000 });
    const script = `fetch(${JSON.stringify(src.function_url)}, { method: 'POST', body: ${JSON.stringify(body)} }).then((r) => r.text()).then((t) => process.stdout.write(t))`;
    const answer = JSON.parse((await runInNetns(client.netns, [process.execPath, '-e', script])).stdout) as Echo;
    assert.equal(answer.forwarded?.answer?.node, 'node-2', JSON.stringify(answer));
    const r = await capture.stop();
    assert.equal(r.client, client.addr);
    assert.ok(r.client_bytes > 0, 'the client leg, on the client interface');
    const pair = r.pairs.find((p) => p.from === 'node-1' && p.to === 'node-2');
    assert.ok(pair && pair.bytes > 0 && pair.bytes === r.node_node_bytes, JSON.stringify(r.pairs));
    assert.ok(r.relay_bytes > 0, 'the proxy -> node-2 leg is seen and not counted');
    assert.equal(r.counted_bytes, r.client_bytes + r.node_node_bytes + r.node_central_bytes);
    const l1 = r.nodes.find((l) => l.node === 'node-1')!;
    const l3 = r.nodes.find((l) => l.node === 'node-3')!;
    assert.ok(l1.bytes_in > 0 && l1.bytes_out > 0, JSON.stringify(l1));
    // node-3 carried no request; at most control packets of connections an earlier test left open
    assert.ok(l3.bytes_in + l3.bytes_out < 600, `node-3 took no part, but its link carried ${JSON.stringify(l3)}`);
    assert.equal(r.dropped_packets, 0);
  } finally {
    await removeNamespace(client);
  }
});

test('mesh plumbing - a cut node hangs (no refusal) until it is restored', { skip }, async () => {
  await cut(stateRoot, name, 'node-3');
  const cutOff = await via(1, 3, 1_000);
  assert.equal(cutOff.forwarded?.ok, false);
  assert.equal(cutOff.forwarded?.error, 'TimeoutError', 'connections to a cut node must hang, not be refused');
  assert.equal((await status(stateRoot, name)).nodes[2]!.cut, true);
  await restore(stateRoot, name, 'node-3');
  const back = await via(1, 3, 5_000);
  assert.equal(back.forwarded?.answer?.node, 'node-3');
});

test('mesh plumbing - a second start with the same names fails at once and changes nothing', { skip }, async () => {
  const before = await leftovers(name);
  await assert.rejects(up(cfg, { loadData: false, fillRegistry: false }), (e: unknown) => e instanceof MeshError && e.code === 'EDGE_MESH_ALREADY_UP');
  // a mesh whose namespace name is taken by someone else (no state of ours)
  const other = uniqueMeshName('smx');
  await createNamespace(`${other}-n2`);
  try {
    await assert.rejects(up({ ...cfg, name: other }, { loadData: false, fillRegistry: false }), (e: unknown) => {
      assert.ok(e instanceof MeshError && e.code === 'EDGE_MESH_NAME_TAKEN', String(e));
      assert.match((e as Error).message, new RegExp(`namespace ${other}-n2`));
      return true;
    });
    assert.deepEqual(await leftovers(other), { netns: [`${other}-n2`], links: [] }, 'nothing of the refused mesh was created');
    assert.equal(existsSync(join(stateRoot, other)), false);
  } finally {
    await deleteNamespace(`${other}-n2`);
  }
  assert.deepEqual(await leftovers(name), before);
});

test('mesh plumbing - mesh-down leaves no process, namespace, interface or iptables rule, and is idempotent', { skip }, async () => {
  const procs = recordedProcesses(join(stateRoot, name));
  assert.ok(procs.length >= 7, `expected toxiproxy + 2 processes per node, state has ${procs.length}`);
  await down(stateRoot, name);
  assert.deepEqual(stillRunning(procs), []);
  assert.deepEqual(await leftovers(name), { netns: [], links: [] });
  assert.equal(iptablesRules(), rulesBefore);
  const again = await down(stateRoot, name);
  assert.deepEqual(again, { stopped: 0, netns: 0, links: 0 });
});
