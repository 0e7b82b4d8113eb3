/**
 * The capture and classifier on real packets (needs root and tcpdump): two "nodes" in network
 * namespaces on a bridge, as VMs are (no link proxies), each with a function port (8080) and an
 * agent port (7070). The host asks node-1, node-1 forwards to node-2's function, node-2's agent
 * dials node-1's. Captured at once on the bridge and on both nodes' veths: each view counts every
 * packet once and both agree class by class. Then a bridge inside a namespace of its own (as
 * libvirt's is for the Terraform VMs): a client namespace plugged into it, tcpdump run there.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  attachNamespace,
  bridgeOf,
  createBridge,
  createExtraNamespace,
  createNamespace,
  deleteLink,
  deleteNamespace,
  extraNamespace,
  hasCommand,
  inNetns,
  layoutFromTopology,
  listNamespaces,
  removeNamespace,
  spawnInNetns,
  startCapture,
  tcpOpen,
  waitFor,
  type Layout,
  type TopologyLike,
} from '../../src/index.js';

const has = hasCommand;
const skip = process.getuid?.() !== 0 ? 'needs root (network namespaces)' : !has('tcpdump') ? 'needs tcpdump: run make tools' : false;

/** Names start with LAB_TEST_PREFIX (default: slc + 3 random letters), so parallel runs never collide. */
const P = process.env['LAB_TEST_PREFIX'] ?? `slc${Math.random().toString(36).slice(2, 5)}`;
const NET = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`;
const HOST = `${NET}.1`;
const N = [`${NET}.11`, `${NET}.12`];
const BR = `${P}-br`;
const dir = mkdtempSync(join(tmpdir(), `${P}-cap-`));
const servers: ChildProcess[] = [];

/** A node: on 8080 an HTTP "function" (?forward=<url> asks that URL first; ?agent=<host> dials its agent), on 7070 an echo "agent". */
const NODE_SCRIPT = `
const http = require('node:http'); const net = require('node:net');
net.createServer((s) => s.pipe(s)).listen(7070, process.argv[1]);
const get = (url) => new Promise((ok, no) => http.get(url, { agent: false, headers: { connection: 'close' } }, (r) => { let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => ok(b)); }).on('error', no));
const agent = (host) => new Promise((ok, no) => { const s = net.connect(7070, host, () => s.end('x'.repeat(3000))); let n = 0; s.on('data', (d) => (n += d.length)); s.on('close', () => ok(n)); s.on('error', no); });
http.createServer(async (req, res) => {
  const u = new URL(req.url, 'http://x');
  let extra = '';
  if (u.searchParams.get('forward')) extra = await get(u.searchParams.get('forward'));
  if (u.searchParams.get('agent')) extra = String(await agent(u.searchParams.get('agent')));
  res.setHeader('connection', 'close');
  res.end('y'.repeat(5000) + extra);
}).listen(8080, process.argv[1]);
`;

/** Runs `argv` inside `netns` and returns its output. */
function outputIn(netns: string, argv: string[]): string {
  const [cmd, ...args] = inNetns(netns, argv);
  return execFileSync(cmd, args, { encoding: 'utf8' });
}

function getText(url: string): Promise<string> {
  return new Promise((ok, no) => {
    request(url, { agent: false, headers: { connection: 'close' } }, (r) => {
      let b = '';
      r.on('data', (d: Buffer) => (b += d.toString()));
      r.on('end', () => ok(b));
    })
      .on('error', no)
      .end();
  });
}

/** No TCP connection of the test is still open or closing (so no packet comes after stop). */
function quiet(): boolean {
  const states = ['established', 'syn-sent', 'syn-recv', 'fin-wait-1', 'fin-wait-2', 'close-wait', 'last-ack', 'closing'].flatMap((s) => ['state', s]);
  const ns = [1, 2].map((i) => outputIn(`${P}-n${i}`, ['ss', '-tnH', ...states]).trim());
  const host = execFileSync('ss', ['-tnH', ...states, 'dst', `${NET}.0/24`], { encoding: 'utf8' }).trim();
  return ns.every((s) => s === '') && host === '';
}

before(async () => {
  if (skip) return;
  await createBridge(BR, { address: `${HOST}/24` });
  for (const [i, addr] of N.entries()) {
    const ns = `${P}-n${i + 1}`;
    await attachNamespace({ netns: ns, hostIf: `${P}-h${i + 1}`, peerIf: `${P}-p${i + 1}`, hostNetns: null, address: `${addr}/24`, bridge: BR });
    servers.push(spawnInNetns(ns, [process.execPath, '-e', NODE_SCRIPT, addr], { stdio: 'ignore' }));
  }
  for (const addr of N) await waitFor(`node ${addr}`, () => tcpOpen(addr, 8080), 20_000);
});

after(async () => {
  if (skip) return;
  for (const s of servers) s.kill('SIGKILL');
  for (const i of [1, 2]) {
    await deleteNamespace(`${P}-n${i}`);
    await deleteLink(`${P}-h${i}`);
  }
  await deleteLink(BR);
  rmSync(dir, { recursive: true, force: true });
});

test('capture - a bridge and the veths of the same traffic: every packet once, classified from the topology', { skip }, async () => {
  const node = (i: number) => ({
    id: `node-${i + 1}`,
    address: N[i]!,
    function_url: `http://${N[i]}:8080/function/syncmesh-fn`,
    agent_address: `${N[i]}:7070`,
    mongodb_uri: null,
    peers: { [`node-${2 - i}`]: `http://${N[1 - i]}:8080/function/syncmesh-fn` },
  });
  const topology: TopologyLike = { host_address: HOST, nodes: [node(0), node(1)] };
  const layout = layoutFromTopology(topology);
  await waitFor('no connection left open by the warm-up', async () => quiet(), 20_000);
  const onBridge = await startCapture('bridge', dir, [{ iface: BR, kind: 'bridge' }], layout);
  const onVeths = await startCapture(
    'veths',
    dir,
    [
      { iface: `${P}-h1`, kind: 'node', node: 'node-1' },
      { iface: `${P}-h2`, kind: 'node', node: 'node-2' },
    ],
    layout,
  );
  // the host (the client) asks node-1, which forwards to node-2's function; then node-2's agent dials node-1's
  const forwarded = await getText(`http://${N[0]}:8080/?forward=${encodeURIComponent(`http://${N[1]}:8080/`)}`);
  assert.equal(forwarded.length, 10_000);
  assert.equal(await getText(`http://${N[1]}:8080/?agent=${N[0]}`), `${'y'.repeat(5000)}3000`);
  await waitFor('every connection closed', async () => quiet(), 20_000);
  const b = await onBridge.stop();
  const v = await onVeths.stop();

  assert.equal(b.dropped_packets + v.dropped_packets, 0);
  // the bridge sees each packet once: the classes add up to everything it saw
  const bridgeTotal = b.interfaces[0]!.bytes;
  assert.equal(b.client_bytes + b.node_node_bytes + b.node_central_bytes + b.agent_bytes + b.mongo_bytes + b.relay_bytes + b.other_bytes, bridgeTotal);
  assert.ok(b.client_bytes > 2 * 5000, `client: ${b.client_bytes}`);
  assert.ok(b.node_node_bytes > 5000, `function to function: ${b.node_node_bytes}`);
  assert.ok(b.agent_bytes > 2 * 3000, `agent to agent: ${b.agent_bytes}`);
  assert.deepEqual(
    b.pairs.map((p) => `${p.from}>${p.to}`),
    ['node-1>node-2'],
  );
  assert.deepEqual(
    b.agent_pairs.map((p) => `${p.from}>${p.to}`),
    ['node-2>node-1'],
  );
  // node to node packets cross both veths: counted once, and the same as on the bridge
  for (const k of ['client_bytes', 'node_node_bytes', 'agent_bytes'] as const) assert.equal(v[k], b[k], k);
  assert.deepEqual(v.pairs, b.pairs);
  assert.deepEqual(v.agent_pairs, b.agent_pairs);
  // each node's link: the same bytes whichever way it is seen
  for (const n of ['node-1', 'node-2']) {
    const fromBridge = b.nodes.find((x) => x.node === n)!;
    const fromVeth = v.nodes.find((x) => x.node === n)!;
    assert.deepEqual([fromVeth.bytes_out, fromVeth.bytes_in], [fromBridge.bytes_out, fromBridge.bytes_in], n);
  }
});

test("capture - a bridge inside another namespace (as libvirt's): the client plugged in there, tcpdump through ip netns exec", { skip }, async () => {
  const bns = `${P}-lv`;
  const bridge = `${P}-b2`;
  const net = `10.${250 + Math.floor(Math.random() * 5)}.${Math.floor(Math.random() * 256)}`;
  const cl = extraNamespace(P, `${net}.0/24`, 'cl', bns);
  const node = extraNamespace(P, `${net}.0/24`, 'db', bns);
  let server: ChildProcess | undefined;
  try {
    await createNamespace(bns);
    await createBridge(bridge, { netns: bns });
    await createExtraNamespace(cl, bridge);
    await createExtraNamespace(node, bridge);
    assert.equal(await bridgeOf(cl.hostIf, bns), bridge);
    assert.equal(await bridgeOf('eth0', cl.netns), null);
    await assert.rejects(bridgeOf(cl.hostIf, null), 'the host end is not in the host namespace');
    server = spawnInNetns(node.netns, [process.execPath, '-e', NODE_SCRIPT, node.addr], { stdio: 'ignore' });
    const fetchLength = `fetch(process.argv[1]).then((r) => r.text()).then((t) => process.stdout.write(String(t.length)))`;
    const get = () => outputIn(cl.netns, [process.execPath, '-e', fetchLength, `http://${node.addr}:8080/`]);
    await waitFor(
      'the node answers the client',
      async () => {
        try {
          return get() === '5000';
        } catch {
          return false;
        }
      },
      20_000,
    );
    const layout: Layout = {
      nodes: [{ id: 'node-1', addr: node.addr, functionPort: 8080, agentPort: 7070, mongoPort: null }],
      clientAddrs: [cl.addr],
      proxyHost: null,
      central: null,
    };
    const cap = await startCapture(
      'netns',
      dir,
      [
        { iface: cl.hostIf, kind: 'client', netns: bns },
        { iface: node.hostIf, kind: 'node', node: 'node-1', netns: bns },
      ],
      layout,
    );
    assert.equal(get(), '5000');
    const t = await cap.stop();
    assert.equal(t.dropped_packets, 0);
    assert.ok(t.client_bytes > 5000, `client: ${t.client_bytes}`);
    assert.ok(t.nodes[0]!.bytes_out > 5000, `node-1 sent the answer: ${t.nodes[0]!.bytes_out}`);
    assert.equal(t.node_node_bytes, 0);
  } finally {
    server?.kill('SIGKILL');
    await removeNamespace(cl);
    await removeNamespace(node);
    await deleteNamespace(bns);
  }
  const left = (await listNamespaces()).filter((n) => n === bns || n === cl.netns || n === node.netns);
  assert.deepEqual(left, [], 'no namespace left');
});
