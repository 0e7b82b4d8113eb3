import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { pino } from 'pino';
import { announcement, MdnsDiscovery, peersIn, SERVICE_TYPE } from './mdns.js';

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
  const sa = createSocket({ type: 'udp4', reuseAddr: false });
  const sb = createSocket({ type: 'udp4', reuseAddr: false });
  sa.bind(0, '127.0.0.1');
  sb.bind(0, '127.0.0.1');
  await Promise.all([once(sa, 'listening'), once(sb, 'listening')]);
  const pa = sa.address().port;
  const pb = sb.address().port;
  const log = pino({ level: 'silent' });
  const seen: string[] = [];
  const gone: string[] = [];
  const a = new MdnsDiscovery({
    nodeId: 'na', port: 7001, addresses: ['127.0.0.1'], log,
    onPeer: (addr, id) => seen.push(`a saw ${id} at ${addr}`),
    onGone: (addr, id) => gone.push(`a lost ${id} at ${addr}`),
    mdnsOptions: { multicast: false, socket: sa, port: pb, ip: '127.0.0.1', bind: false },
  });
  const b = new MdnsDiscovery({
    nodeId: 'nb', port: 7002, addresses: ['127.0.0.1'], log,
    onPeer: (addr, id) => seen.push(`b saw ${id} at ${addr}`),
    onGone: () => undefined,
    mdnsOptions: { multicast: false, socket: sb, port: pa, ip: '127.0.0.1', bind: false },
  });
  a.start();
  b.start();
  const deadline = Date.now() + 5000;
  while (seen.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(seen.sort(), ['a saw nb at 127.0.0.1:7002', 'b saw na at 127.0.0.1:7001']);
  b.stop();
  while (gone.length < 1 && Date.now() < deadline + 5000) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(gone, ['a lost nb at 127.0.0.1:7002']);
  a.stop();
  b.stop();
});
