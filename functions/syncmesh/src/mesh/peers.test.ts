import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SyncmeshError } from '../errors.js';
import { admitPeer, canonicalAddress, isSpecialAddress, parseAllowedPeers, type PeerContext, type ResolvedAddress } from './peers.js';
import type { MeshNode } from './registry.js';

const node = (id: string, address: string, own = false): MeshNode => ({ id, address, lat: 0, lon: 0, distance: own ? 0 : 1, own_node: own, subscribed: false });

/** A resolver from a fixed table: names resolve only to what the test says. */
const table =
  (names: Record<string, string[]>) =>
  async (host: string): Promise<ResolvedAddress[]> => {
    const bare = host.replace(/^\[|\]$/g, '');
    if (/^[\d.]+$/.test(bare) || bare.includes(':')) return [canonicalAddress(bare)];
    const found = names[bare];
    if (!found) throw new Error(`ENOTFOUND ${bare}`);
    return found.map(canonicalAddress);
  };

const ctx = (over: Partial<PeerContext> = {}): PeerContext => ({
  registry: [
    node('n1', 'http://10.0.0.1:8080/function/syncmesh-fn', true),
    node('n2', 'http://10.0.0.2:8080/function/syncmesh-fn'),
    node('n3', 'http://node-3.mesh:8080/function/syncmesh-fn'),
  ],
  ownNodeId: 'n1',
  selfPort: 3000,
  allowed: parseAllowedPeers(''),
  resolve: table({
    'node-3.mesh': ['10.0.0.3'],
    'evil.example': ['127.0.0.1'],
    'metadata.internal': ['169.254.169.254'],
    'mixed.example': ['10.0.0.9', '127.0.0.1'],
  }),
  ...over,
});

const refused = async (url: string, c: PeerContext, why: RegExp) => {
  await assert.rejects(admitPeer(url, c), (err: unknown) => {
    assert.ok(err instanceof SyncmeshError);
    assert.equal(err.code, 'EDGE_SYNCMESH_PEER_NOT_ALLOWED');
    assert.match(err.message, why);
    assert.ok(err.details?.['allowed']);
    return true;
  });
};

test('peers - a registry node is admitted by its URL or its origin, and goes to the registry address', async () => {
  const exact = await admitPeer('http://10.0.0.2:8080/function/syncmesh-fn/', ctx());
  assert.deepEqual([exact.url, exact.nodeId, exact.address.address], ['http://10.0.0.2:8080/function/syncmesh-fn', 'n2', '10.0.0.2']);
  const otherPath = await admitPeer('http://10.0.0.2:8080/system/functions', ctx());
  assert.equal(otherPath.url, 'http://10.0.0.2:8080/function/syncmesh-fn', "never a path of the caller's choosing");
  const byName = await admitPeer('http://node-3.mesh:8080/function/syncmesh-fn', ctx());
  assert.deepEqual([byName.nodeId, byName.address.address], ['n3', '10.0.0.3']);
});

test('peers - without an allow-list anything outside the registry is refused', async () => {
  await refused('http://10.0.0.7:8080/function/syncmesh-fn', ctx(), /is not a node of this mesh/);
  await refused('http://127.0.0.1:27017/', ctx(), /is not a node of this mesh/);
  await refused('http://10.0.0.2:9999/', ctx(), /is not a node of this mesh/);
});

test('peers - the own node, its own port and credentials in URLs are refused', async () => {
  await refused('http://10.0.0.1:8080/function/syncmesh-fn', ctx(), /this node itself/);
  const loopbackMember = ctx({ registry: [node('n1', 'http://10.0.0.1:8080/', true), node('lo', 'http://127.0.0.1:3000/')] });
  await refused('http://127.0.0.1:3000/', loopbackMember, /this node itself/);
  await refused('http://user:pw@10.0.0.2:8080/function/syncmesh-fn', ctx(), /credentials/);
  // bound to one loopback address: another loopback address on the same port is another node
  const bound = ctx({ registry: [node('n1', 'http://127.0.0.11:8080/', true), node('n2', 'http://127.0.0.12:8080/')], selfPort: 8080, selfHost: '127.0.0.11' });
  assert.equal((await admitPeer('http://127.0.0.12:8080/', bound)).nodeId, 'n2');
  await refused('http://127.0.0.11:8080/', bound, /this node itself/);
});

test('peers - the allow-list admits host:port, host and CIDR entries, and maps them to registry ids', async () => {
  const c = ctx({
    allowed: parseAllowedPeers('10.0.0.0/24, node-3.mesh:8080, 192.168.5.5'),
    resolve: table({ 'node-3.mesh': ['10.0.0.3'], 'alias-of-2': ['10.0.0.2'] }),
  });
  const viaAlias = await admitPeer('http://alias-of-2:8080/function/syncmesh-fn', c);
  assert.deepEqual([viaAlias.nodeId, viaAlias.address.address], ['n2', '10.0.0.2']);
  const unregistered = await admitPeer('http://10.0.0.44:8080/function/syncmesh-fn', c);
  assert.equal(unregistered.nodeId, undefined);
  const host = await admitPeer('http://192.168.5.5:8080/', c);
  assert.equal(host.address.address, '192.168.5.5');
  await refused('http://192.168.6.6:8080/', c, /is not a node of this mesh/);
});

test('peers - names resolving to loopback, link-local or a mix are refused even when allow-listed', async () => {
  const c = ctx({ allowed: parseAllowedPeers('evil.example, metadata.internal, mixed.example, 0.0.0.0/0') });
  await refused('http://evil.example:8080/', c, /loopback, link-local, special or own/);
  await refused('http://metadata.internal/latest/meta-data/', c, /loopback, link-local, special or own/);
  await refused('http://mixed.example:8080/', c, /loopback, link-local, special or own/);
  await refused('http://[::1]:8080/', c, /loopback, link-local, special or own/);
  await refused('http://[::ffff:127.0.0.1]:8080/', c, /loopback, link-local, special or own/);
  await refused('http://0.0.0.0:8080/', c, /loopback, link-local, special or own/);
  await refused('http://does-not-resolve.example/', c, /does not resolve/);
});

test('peers - special addresses are recognised', () => {
  for (const a of [
    '127.0.0.1',
    '127.8.9.1',
    '0.0.0.0',
    '169.254.169.254',
    '224.0.0.251',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'ff02::fb',
    '::ffff:127.0.0.1',
  ]) {
    assert.ok(isSpecialAddress(canonicalAddress(a)), a);
  }
  for (const a of ['10.0.0.2', '192.168.1.1', '8.8.8.8', 'fd00::1', '2001:db8::1']) assert.ok(!isSpecialAddress(canonicalAddress(a)), a);
});

test('peers - SYNCMESH_ALLOWED_PEERS rejects malformed entries', () => {
  for (const bad of ['10.0.0.0/33', 'host:99999', 'not a host', 'http://', '::1/200'])
    assert.throws(() => parseAllowedPeers(bad), /use host:port, host, or address\/prefix/, bad);
  const ok = parseAllowedPeers('http://10.0.0.2:8080/function/syncmesh-fn, [fd00::2]:8080, fd00::/64');
  assert.ok(ok.hostPorts.has('10.0.0.2:8080'));
  assert.ok(ok.hostPorts.has('fd00::2:8080'));
  assert.ok(ok.hasNetworks);
});
