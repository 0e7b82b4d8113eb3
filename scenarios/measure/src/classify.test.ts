import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classify, type Layout } from './classify.js';
import type { Packet } from './pcap.js';

const H = '10.5.5.1';
const N1 = '10.5.5.11';
const N2 = '10.5.5.12';
const CL = '10.5.5.240';
const DB = '10.5.5.250';
const layout: Layout = {
  hostAddr: H,
  clientAddr: CL,
  centralAddr: DB,
  centralMongoPort: 27017,
  nodes: [
    { id: 'node-1', addr: N1 },
    { id: 'node-2', addr: N2 },
  ],
  meshProxies: new Map([
    [20102, { from: 'node-1', to: 'node-2' }],
    [20201, { from: 'node-2', to: 'node-1' }],
  ]),
  centralProxies: new Map([[24001, { kind: 'ingest' as const, node: 'node-1' }]]),
};
const pkt = (src: string | null, sport: number | null, dst: string | null, dport: number | null, len: number): Packet => ({
  ts: 0,
  len,
  src,
  dst,
  sport,
  dport,
  proto: src ? 'tcp' : 'other',
});

test('classify - counts each byte once: client, node-node at the sender, ingest at the node', () => {
  const r = classify(layout, [
    { iface: 'cl', kind: 'client', packets: [pkt(CL, 5000, N1, 8080, 300), pkt(N1, 8080, CL, 5000, 700)] },
    {
      iface: 'h1',
      kind: 'node',
      node: 'node-1',
      packets: [
        pkt(CL, 5000, N1, 8080, 300), // client again: counted on the client interface
        pkt(N1, 6000, H, 20102, 400), // node-1 asks node-2 through its proxy
        pkt(H, 20102, N1, 6000, 900),
        pkt(N1, 7000, H, 24001, 5000), // ingest through the central link
        pkt(null, null, null, null, 42), // ARP
      ],
    },
    { iface: 'h2', kind: 'node', node: 'node-2', packets: [pkt(H, 41000, N2, 8080, 400), pkt(N2, 8080, H, 41000, 900)] }, // relay leg
    { iface: 'db', kind: 'central', packets: [pkt(H, 42000, DB, 27017, 5000)] },
  ]);
  assert.equal(r.client_bytes, 1000);
  assert.equal(r.node_node_bytes, 1300);
  assert.equal(r.node_central_bytes, 5000);
  assert.equal(r.counted_bytes, 7300);
  assert.equal(r.relay_bytes, 1300);
  assert.equal(r.other_bytes, 42);
  assert.equal(r.central_seen_bytes, 5000);
  assert.deepEqual(r.pairs, [{ from: 'node-1', to: 'node-2', bytes: 1300 }]);
  assert.deepEqual(
    r.interfaces.map((i) => [i.iface, i.packets, i.bytes]),
    [
      ['cl', 2, 1000],
      ['h1', 5, 6642],
      ['h2', 2, 1300],
      ['db', 1, 5000],
    ],
  );
});

test('classify - agent to agent traffic is counted once, apart from the query systems', () => {
  const both = classify(layout, [
    { iface: 'h1', kind: 'node', node: 'node-1', packets: [pkt(N1, 50000, N2, 7070, 120), pkt(N2, 7070, N1, 50000, 80)] },
    { iface: 'h2', kind: 'node', node: 'node-2', packets: [pkt(N1, 50000, N2, 7070, 120), pkt(N2, 7070, N1, 50000, 80)] },
  ]);
  assert.equal(both.agent_bytes, 200, 'each packet once, at its sender');
  assert.equal(both.counted_bytes, 0);
  assert.equal(both.other_bytes, 0);
  const one = classify(layout, [{ iface: 'h1', kind: 'node', node: 'node-1', packets: [pkt(N1, 50000, N2, 7070, 120), pkt(N2, 7070, N1, 50000, 80)] }]);
  assert.equal(one.agent_bytes, 200, "node-2's interface is not captured: its packets count where they arrive");
});

test('classify - direct node to central traffic counts as ingest', () => {
  const r = classify(layout, [{ iface: 'h2', kind: 'node', node: 'node-2', packets: [pkt(N2, 7000, DB, 27017, 1000), pkt(DB, 27017, N2, 7000, 60)] }]);
  assert.equal(r.node_central_bytes, 1060);
  assert.equal(r.counted_bytes, 1060);
});
