/**
 * The namespace commands on real namespaces (needs root): a bridge with an address, a namespace
 * plugged into it with an extra route, commands run inside, its processes found and killed on
 * delete, and nothing left behind by name.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import {
  attachNamespace,
  bridgeMac,
  bridgeOf,
  createBridge,
  createNamespace,
  createTestNetwork,
  deleteLink,
  deleteNamespace,
  freeSubnet,
  LabError,
  leftovers,
  listRoutes,
  namespacePids,
  NETNS_IF,
  run,
  runInNetns,
  spawnInNetns,
  tryRunInNetns,
  waitFor,
} from '../../src/index.js';

const skip = process.getuid?.() !== 0 ? 'needs root (network namespaces)' : false;

/** Names start with LAB_TEST_PREFIX (default: sl + 3 random letters) + `n`, so parallel runs and capture.test.ts never collide. */
const P = `${process.env['LAB_TEST_PREFIX'] ?? `sl${Math.random().toString(36).slice(2, 5)}`}n`;
const NET = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`;
const BR = `${P}-br`;
const NS = `${P}-n1`;
const HOST_IF = `${P}-h1`;
const STP_BR = `${P}-sb`;
const STP_NS = `${P}-n2`;
const STP_IF = `${P}-h2`;
const MAC_BR = `${P}-mb`;
const MAC_NS = `${P}-n3`;
const MAC_IF = `${P}-h3`;
const LOW_IF = `${P}-h4`;
const LOWER_IF = `${P}-h5`;

after(async () => {
  if (skip) return;
  await deleteNamespace(NS);
  await deleteLink(HOST_IF);
  await deleteLink(BR);
  await deleteNamespace(STP_NS);
  await deleteLink(STP_IF);
  await deleteLink(STP_BR);
  await deleteNamespace(MAC_NS);
  await deleteLink(MAC_IF);
  await deleteLink(LOW_IF);
  await deleteLink(LOWER_IF);
  await deleteLink(MAC_BR);
});

test('netns - a namespace on a bridge: its address and routes, commands inside, its processes killed on delete, nothing left', { skip }, async () => {
  await createBridge(BR, { address: `${NET}.1/24` });
  await attachNamespace({ netns: NS, hostIf: HOST_IF, peerIf: `${P}-p1`, hostNetns: null, address: `${NET}.11/24`, bridge: BR, routes: ['224.0.0.0/4'] });
  assert.equal(await bridgeOf(HOST_IF, null), BR);
  assert.match((await runInNetns(NS, ['ip', '-4', '-br', 'addr', 'show', NETNS_IF])).stdout, new RegExp(`${NET.replace(/\./g, '\\.')}\\.11/24`));
  assert.match((await runInNetns(NS, ['ip', 'route'])).stdout, /224\.0\.0\.0\/4 dev eth0/);
  assert.ok(
    (await listRoutes()).some((r) => r.dst === `${NET}.0/24` && r.dev === BR),
    "the bridge's subnet is a host route",
  );
  const mine = await leftovers(P);
  assert.deepEqual(mine.netns, [NS]);
  assert.deepEqual(mine.links.sort(), [BR, HOST_IF].sort());
  assert.equal(await tryRunInNetns(NS, ['true']), true);
  assert.equal(await tryRunInNetns(NS, ['false']), false);
  await assert.rejects(createNamespace(NS), (e: unknown) => e instanceof LabError && e.code === 'EDGE_LAB_COMMAND_FAILED');

  const sleeper = spawnInNetns(NS, ['sleep', '600'], { stdio: 'ignore' });
  const exited = new Promise<NodeJS.Signals | null>((ok) => sleeper.once('exit', (_code, signal) => ok(signal)));
  await waitFor('the sleeper in the namespace', async () => (await namespacePids(NS)).includes(sleeper.pid!), 10_000);
  await deleteNamespace(NS);
  assert.equal(await exited, 'SIGKILL', 'what ran inside is killed');
  await assert.rejects(namespacePids(NS), (e: unknown) => e instanceof LabError && e.code === 'EDGE_LAB_COMMAND_FAILED');
  assert.equal(await deleteLink(HOST_IF), false, "the host end went with the namespace's end");
  assert.equal(await deleteLink(BR), true);
  await deleteNamespace(NS); // idempotent
  assert.deepEqual(await leftovers(P), { netns: [], links: [] });
});

test('netns - a namespace plugged into a bridge with STP on (as libvirt makes them) is returned once its port forwards', { skip }, async () => {
  await createBridge(STP_BR, { address: `${NET}.129/25` });
  await run('ip', ['link', 'set', STP_BR, 'type', 'bridge', 'stp_state', '1', 'forward_delay', '200']); // 2 s, libvirt's default
  const t0 = Date.now();
  await attachNamespace({ netns: STP_NS, hostIf: STP_IF, peerIf: `${P}-p2`, hostNetns: null, address: `${NET}.140/25`, bridge: STP_BR });
  const waited = Date.now() - t0;
  const [port] = JSON.parse((await run('bridge', ['-j', 'link', 'show', 'dev', STP_IF])).stdout) as { state: string }[];
  assert.equal(port?.state, 'forwarding');
  assert.ok(waited >= 3_000, `listening + learning take 2 x 2 s; attach returned after ${waited} ms`);
  // the first connection goes through: a listener on the bridge's address answers from inside at once
  const server = createServer((c) => c.end());
  await new Promise<void>((ok) => server.listen(0, `${NET}.129`, ok));
  const { port: tcpPort } = server.address() as AddressInfo;
  try {
    assert.equal(await tryRunInNetns(STP_NS, ['timeout', '5', 'bash', '-c', `exec 3<>/dev/tcp/${NET}.129/${tcpPort}`]), true);
  } finally {
    server.close();
  }
  await deleteNamespace(STP_NS);
  await deleteLink(STP_BR);
});

test('netns - a bridge keeps its MAC when ports with lower ones join, so a namespace already talking to the host goes on', { skip }, async () => {
  const hostAddr = `${NET}.65`;
  const bridgeAddress = async () => (JSON.parse((await run('ip', ['-j', 'link', 'show', 'dev', MAC_BR])).stdout) as { address: string }[])[0]?.address;
  /** Plugs a veth (no namespace) with `mac` into the bridge, as a later namespace or VM does. */
  const plug = async (hostIf: string, peer: string, mac: string) => {
    await run('ip', ['link', 'add', hostIf, 'address', mac, 'type', 'veth', 'peer', 'name', peer]);
    await run('ip', ['link', 'set', hostIf, 'master', MAC_BR, 'up']);
  };
  await createBridge(MAC_BR, { address: `${hostAddr}/26` });
  await attachNamespace({ netns: MAC_NS, hostIf: MAC_IF, peerIf: `${P}-p3`, hostNetns: null, address: `${NET}.70/26`, bridge: MAC_BR });
  await plug(LOW_IF, `${P}-p4`, '00:00:00:00:00:02');
  const server = createServer((c) => c.end());
  await new Promise<void>((ok) => server.listen(0, hostAddr, ok));
  const { port: tcpPort } = server.address() as AddressInfo;
  const connect = `exec 3<>/dev/tcp/${hostAddr}/${tcpPort}`;
  try {
    // the namespace learns the bridge's MAC (ARP) on its first connection
    assert.equal(await tryRunInNetns(MAC_NS, ['timeout', '5', 'bash', '-c', connect]), true);
    // a port with a still lower MAC joins (as the scenario's client namespace did, after the nodes)
    await plug(LOWER_IF, `${P}-p5`, '00:00:00:00:00:01');
    assert.equal(await bridgeAddress(), bridgeMac(MAC_BR));
    // were the bridge's MAC unset, it would have been ...:02 and now ...:01: the namespace's frames
    // to ...:02 (another port's MAC) would be passed up as "other host" and dropped until ARP re-probes
    assert.equal(await tryRunInNetns(MAC_NS, ['timeout', '2', 'bash', '-c', connect]), true);
  } finally {
    server.close();
  }
});

test('netns - createTestNetwork: namespaces on a bridge in a free /24 reach the host, and remove() leaves nothing', { skip }, async () => {
  const prefix = `${P}t`;
  const tn = await createTestNetwork(prefix, 59, 2);
  try {
    assert.match(tn.net, /^10\.59\.\d+$/);
    assert.deepEqual(tn.namespaces, [`${prefix}-n0`, `${prefix}-n1`]);
    assert.deepEqual(tn.hosts, [`${tn.net}.11`, `${tn.net}.12`]);
    assert.ok((await listRoutes()).some((r) => r.dst === `${tn.net}.0/24` && r.dev === tn.bridge));
    assert.notEqual(await freeSubnet(59), tn.net, 'a taken /24 is not free any more');
    // each namespace reaches the host on the bridge's address
    const server = createServer((c) => c.end());
    await new Promise<void>((ok) => server.listen(0, `${tn.net}.1`, ok));
    const { port } = server.address() as AddressInfo;
    try {
      for (const ns of tn.namespaces) {
        assert.equal(await tryRunInNetns(ns, ['timeout', '5', 'bash', '-c', `exec 3<>/dev/tcp/${tn.net}.1/${port}`]), true, `${ns} reaches the host`);
      }
    } finally {
      server.close();
    }
  } finally {
    await tn.remove();
    await tn.remove(); // safe twice
  }
  assert.deepEqual(await leftovers(prefix), { netns: [], links: [] });
});
