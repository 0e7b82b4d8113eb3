import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { createLogger } from '@syncmesh-edge/log';
import { MisoError } from '../errors.js';
import makeMdns from 'multicast-dns';
import {
  announcement,
  answersFor,
  dnsLabel,
  EXPIRE_AFTER_QUERIES,
  hostName,
  MdnsDiscovery,
  peersIn,
  QUERY_INTERVAL_MS,
  SERVICE_TYPE,
  SERVICES_ENUMERATION,
  type MdnsOptions,
  type MdnsRecord,
} from './mdns.js';

type Callbacks = Partial<Pick<MdnsOptions, 'onPeer' | 'onGone'>>;

/** An agent's discovery (node `nodeId`, agent port `port`) on a loopback socket, speaking by unicast to `to`'s port. */
function loopbackDiscovery(nodeId: string, port: number, socket: Socket, to: Socket, on: Callbacks = {}): MdnsDiscovery {
  return new MdnsDiscovery({
    nodeId,
    port,
    addresses: ['127.0.0.1'],
    log: createLogger({ level: 'silent' }),
    onPeer: on.onPeer ?? (() => undefined),
    onGone: on.onGone ?? (() => undefined),
    mdnsOptions: { multicast: false, socket, port: to.address().port, ip: '127.0.0.1', bind: false },
  });
}

/** Two UDP sockets on ephemeral loopback ports: the tests' agents send to each other by unicast, nothing is multicast from the host namespace. */
async function loopbackSockets(): Promise<[Socket, Socket]> {
  const pair: [Socket, Socket] = [createSocket({ type: 'udp4', reuseAddr: false }), createSocket({ type: 'udp4', reuseAddr: false })];
  for (const s of pair) s.bind(0, '127.0.0.1');
  await Promise.all(pair.map((s) => once(s, 'listening')));
  return pair;
}

test('mdns - an announcement is DNS-SD shaped (PTR, SRV, TXT, A)', () => {
  const recs = announcement('node-a', 7650, ['10.1.0.2']);
  assert.deepEqual(
    recs.map((r) => [r.type, r.name]),
    [
      ['PTR', SERVICE_TYPE],
      ['SRV', `node-a.${SERVICE_TYPE}`],
      ['TXT', `node-a.${SERVICE_TYPE}`],
      ['A', 'node-a.miso.local'],
    ],
  );
});

test('mdns - unique records carry the cache-flush bit, the shared PTR does not (RFC 6762 §10.2)', () => {
  const recs = announcement('node-a', 7650, ['10.1.0.2']);
  assert.deepEqual(
    recs.map((r) => [r.type, r.flush ?? false]),
    [
      ['PTR', false],
      ['SRV', true],
      ['TXT', true],
      ['A', true],
    ],
  );
});

test('mdns - node ids become valid DNS labels; the TXT record keeps the real id', () => {
  assert.equal(dnsLabel('node-1'), 'node-1');
  assert.equal(dnsLabel('edge.site_2'), 'edge-site-2'); // a '.' would split the label
  const long = 'a'.repeat(64); // MISO_NODE_ID allows 64 characters; a label holds 63
  assert.equal(dnsLabel(long).length, 63);
  assert.deepEqual(peersIn(announcement(long, 7650, ['10.1.0.2'])), [{ nodeId: long, address: '10.1.0.2:7650', goodbye: false }]);
});

test('mdns - questions are answered the way DNS-SD resolvers ask (PTR, SRV, TXT, A, ANY, enumeration)', () => {
  const own = announcement('node-a', 7650, ['10.1.0.2']);
  const types = (rs: MdnsRecord[]) => rs.map((r) => `${r.type} ${r.name}`);
  const inst = `node-a.${SERVICE_TYPE}`;
  // browse: PTR in answers, SRV/TXT/A as additionals (RFC 6763 §12.1)
  const browse = answersFor([{ name: SERVICE_TYPE, type: 'PTR' }], own);
  assert.deepEqual(types(browse.answers), [`PTR ${SERVICE_TYPE}`]);
  assert.deepEqual(types(browse.additionals), [`SRV ${inst}`, `TXT ${inst}`, `A ${hostName('node-a')}`]);
  // resolve: SRV with the address as additional (§12.2), TXT, the host's A; names are case-insensitive
  const srv = answersFor([{ name: inst.toUpperCase(), type: 'SRV' }], own);
  assert.deepEqual([types(srv.answers), types(srv.additionals)], [[`SRV ${inst}`], [`A node-a.miso.local`]]);
  assert.deepEqual(types(answersFor([{ name: inst, type: 'TXT' }], own).answers), [`TXT ${inst}`]);
  assert.deepEqual(types(answersFor([{ name: 'node-a.miso.local', type: 'A' }], own).answers), ['A node-a.miso.local']);
  assert.deepEqual(types(answersFor([{ name: inst, type: 'ANY' }], own).answers), [`SRV ${inst}`, `TXT ${inst}`]);
  // service type enumeration (RFC 6763 §9): avahi-browse -a
  assert.deepEqual(types(answersFor([{ name: SERVICES_ENUMERATION, type: 'PTR' }], own).answers), [`PTR ${SERVICES_ENUMERATION}`]);
  // somebody else's names: no answer
  assert.deepEqual(
    answersFor(
      [
        { name: '_http._tcp.local', type: 'PTR' },
        { name: 'node-b.miso.local', type: 'A' },
      ],
      own,
    ),
    { answers: [], additionals: [] },
  );
});

test('mdns - peers are read back from answers, goodbyes are flagged', () => {
  assert.deepEqual(peersIn(announcement('node-b', 7651, ['10.1.0.3', '10.2.0.3'])), [
    { nodeId: 'node-b', address: '10.1.0.3:7651', goodbye: false },
    { nodeId: 'node-b', address: '10.2.0.3:7651', goodbye: false },
  ]);
  assert.equal(peersIn(announcement('node-b', 7651, ['10.1.0.3'], 0))[0]!.goodbye, true);
  assert.deepEqual(peersIn([{ name: 'other._http._tcp.local', type: 'SRV', data: { port: 1, target: 'x' } }]), []);
});

test('mdns - two agents find each other and see the goodbye (unicast loopback, no multicast)', async () => {
  // Each side sends to the other's loopback port: the discovery logic runs unchanged, and nothing
  // is multicast from the host namespace.
  const [sa, sb] = await loopbackSockets();
  const seen: string[] = [];
  const gone: string[] = [];
  const a = loopbackDiscovery('na', 7001, sa, sb, {
    onPeer: (addr, id) => seen.push(`a saw ${id} at ${addr}`),
    onGone: (addr, id) => gone.push(`a lost ${id} at ${addr}`),
  });
  const b = loopbackDiscovery('nb', 7002, sb, sa, { onPeer: (addr, id) => seen.push(`b saw ${id} at ${addr}`) });
  a.start();
  b.start();
  const deadline = Date.now() + 5000;
  while (seen.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(seen.sort(), ['a saw nb at 127.0.0.1:7002', 'b saw na at 127.0.0.1:7001']);
  const stoppedAt = Date.now();
  await b.stop();
  while (gone.length < 1 && Date.now() < deadline + 5000) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(gone, ['a lost nb at 127.0.0.1:7002']);
  // the goodbye, not the expiry after missed queries, removed it
  assert.ok(Date.now() - stoppedAt < QUERY_INTERVAL_MS * EXPIRE_AFTER_QUERIES, `gone after ${Date.now() - stoppedAt} ms: the goodbye was not received`);
  await a.stop();
  await b.stop();
});

/** An agent's discovery and a plain multicast-dns client on unicast loopback sockets, sending to each other. */
async function pair(nodeId: string, on: Callbacks = {}) {
  const [sa, sp] = await loopbackSockets();
  const agent = loopbackDiscovery(nodeId, 7001, sa, sp, on);
  const probe = makeMdns({ multicast: false, socket: sp, port: sa.address().port, ip: '127.0.0.1', bind: false });
  return { agent, probe };
}

test('mdns - a resolver gets the answers over the wire, with cache-flush bits, for any node id', async () => {
  const long = 'n'.repeat(64);
  const { agent, probe } = await pair(long);
  const responses: MdnsRecord[][] = [];
  probe.on('response', (r) => responses.push([...r.answers, ...(r.additionals ?? [])] as MdnsRecord[]));
  agent.start(); // announces (twice) and queries; the probe ignores queries
  const srvName = `${dnsLabel(long)}.${SERVICE_TYPE}`;
  probe.query({ questions: [{ name: srvName, type: 'SRV' }] });
  const deadline = Date.now() + 5000;
  const isSrvAnswer = (rs: MdnsRecord[]) => rs.length === 2 && rs[0]!.type === 'SRV';
  while (!responses.some(isSrvAnswer) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const srv = responses.find(isSrvAnswer);
  assert.ok(srv, `no SRV answer; got ${JSON.stringify(responses.map((rs) => rs.map((r) => r.type)))}`);
  assert.deepEqual(
    srv.map((r) => [r.type, r.name, r.flush]),
    [
      ['SRV', srvName, true],
      ['A', hostName(long), true],
    ],
  );
  // the announcement decodes to the real (64-character) node id
  assert.deepEqual(peersIn(responses[0]!), [{ nodeId: long, address: '127.0.0.1:7001', goodbye: false }]);
  await agent.stop();
  probe.destroy();
});

test('mdns - an interface without an IPv4 address is a configuration error, not a silent fallback to all interfaces', () => {
  const d = new MdnsDiscovery({
    nodeId: 'na',
    port: 7001,
    interface: 'no-such-if0',
    log: createLogger({ level: 'silent' }),
    onPeer: () => undefined,
    onGone: () => undefined,
  });
  assert.throws(
    () => d.start(),
    (e: unknown) => e instanceof MisoError && e.code === 'EDGE_MISO_CONFIG' && /no-such-if0/.test(e.message),
  );
});

test('mdns - a record is a claim: its node id is handed to the dialer, a changed id re-dials, our own id is ignored', async () => {
  const events: string[] = [];
  const { agent, probe } = await pair('na', {
    onPeer: (addr, id) => events.push(`peer ${id} at ${addr}`),
    onGone: (addr, id) => events.push(`gone ${id} at ${addr}`),
  });
  agent.start();
  const until = async (n: number) => {
    const deadline = Date.now() + 5000;
    while (events.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  };
  // an impostor announcing our own id is not a peer
  probe.respond({ answers: announcement('na', 7009, ['127.0.0.1']) as never });
  probe.respond({ answers: announcement('nb', 7002, ['127.0.0.1']) as never });
  await until(1);
  probe.respond({ answers: announcement('nc', 7002, ['127.0.0.1']) as never });
  await until(3);
  assert.deepEqual(events, ['peer nb at 127.0.0.1:7002', 'gone nb at 127.0.0.1:7002', 'peer nc at 127.0.0.1:7002']);
  await agent.stop();
  await new Promise<void>((r) => probe.destroy(() => r()));
});
