import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classify, layoutFromTopology, type Layout } from './traffic.js';
import type { Packet } from './pcap.js';

const H = '10.5.5.1';
const N1 = '10.5.5.11';
const N2 = '10.5.5.12';
const CL = '10.5.5.240';
const DB = '10.5.5.250';
const node = (id: string, addr: string) => ({ id, addr, functionPort: 8080, agentPort: 7070, mongoPort: 27017 });
const layout: Layout = {
  nodes: [node('node-1', N1), node('node-2', N2)],
  clientAddrs: [CL],
  proxyHost: {
    addr: H,
    meshProxies: new Map([
      [20102, { from: 'node-1', to: 'node-2' }],
      [20201, { from: 'node-2', to: 'node-1' }],
    ]),
    agentProxies: new Map([
      [25102, { from: 'node-1', to: 'node-2' }],
      [25201, { from: 'node-2', to: 'node-1' }],
    ]),
    ingestProxies: new Map([[24001, 'node-1']]),
  },
  central: { addr: DB, mongoPort: 27017 },
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

test('traffic - counts each byte once: client, node-node at the sender, ingest at the node', () => {
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

test('traffic - agent to agent traffic is counted once, per directed pair, apart from the query systems', () => {
  const both = classify(layout, [
    { iface: 'h1', kind: 'node', node: 'node-1', packets: [pkt(N1, 50000, N2, 7070, 120), pkt(N2, 7070, N1, 50000, 80)] },
    { iface: 'h2', kind: 'node', node: 'node-2', packets: [pkt(N1, 50000, N2, 7070, 120), pkt(N2, 7070, N1, 50000, 80)] },
  ]);
  assert.equal(both.agent_bytes, 200, 'each packet once, at its sender');
  assert.deepEqual(both.agent_pairs, [{ from: 'node-1', to: 'node-2', bytes: 200 }]);
  assert.equal(both.counted_bytes, 0);
  assert.equal(both.other_bytes, 0);
  assert.deepEqual(
    both.nodes.map((n) => [n.node, n.bytes_out, n.bytes_in]),
    [
      ['node-1', 120, 80],
      ['node-2', 80, 120],
    ],
  );
  const one = classify(layout, [{ iface: 'h1', kind: 'node', node: 'node-1', packets: [pkt(N1, 50000, N2, 7070, 120), pkt(N2, 7070, N1, 50000, 80)] }]);
  assert.equal(one.agent_bytes, 200, "node-2's interface is not captured: its packets count where they arrive");
});

test('traffic - agent traffic through an agent link proxy is agent traffic, counted once at the dialling node, the relay leg apart', () => {
  const r = classify(layout, [
    {
      iface: 'h1',
      kind: 'node',
      node: 'node-1',
      packets: [
        pkt(N1, 50000, H, 25102, 150), // node-1's agent dials node-2's through its agent link
        pkt(H, 25102, N1, 50000, 60),
        pkt(H, 43000, N1, 7070, 90), // the relay leg of node-2's agent dialling node-1's
        pkt(N1, 7070, H, 43000, 40),
      ],
    },
    {
      iface: 'h2',
      kind: 'node',
      node: 'node-2',
      packets: [
        pkt(H, 44000, N2, 7070, 150), // the relay leg of node-1's link
        pkt(N2, 7070, H, 44000, 60),
        pkt(N2, 51000, H, 25201, 90), // node-2's agent dials node-1's
        pkt(H, 25201, N2, 51000, 40),
      ],
    },
  ]);
  assert.equal(r.agent_bytes, 210 + 130);
  assert.deepEqual(r.agent_pairs, [
    { from: 'node-1', to: 'node-2', bytes: 210 },
    { from: 'node-2', to: 'node-1', bytes: 130 },
  ]);
  assert.equal(r.relay_bytes, 210 + 130, 'the proxy -> agent legs: the same bytes again, not counted');
  assert.equal(r.counted_bytes, 0);
  assert.equal(r.node_node_bytes, 0);
  assert.equal(r.other_bytes, 0);
});

test('traffic - direct node to central traffic counts as ingest; a loader on the host is mongo, not counted', () => {
  const r = classify(layout, [
    {
      iface: 'h2',
      kind: 'node',
      node: 'node-2',
      packets: [pkt(N2, 7000, DB, 27017, 1000), pkt(DB, 27017, N2, 7000, 60), pkt(H, 45000, N2, 27017, 500)],
    },
  ]);
  assert.equal(r.node_central_bytes, 1060);
  assert.equal(r.counted_bytes, 1060);
  assert.equal(r.mongo_bytes, 500);
});

test('traffic - VMs on a bridge: the layout comes from the topology, every packet on the bridge counts once', () => {
  const A = '192.168.77.11';
  const B = '192.168.77.12';
  const HOST = '192.168.77.1';
  const vm = (id: string, addr: string, peer: [string, string]) => ({
    id,
    address: addr,
    function_url: `http://${addr}:8080/function/syncmesh-fn`,
    agent_address: `${addr}:7070`,
    mongodb_uri: null,
    peers: { [peer[0]]: `http://${peer[1]}:8080/function/syncmesh-fn` },
  });
  const l = layoutFromTopology({ host_address: HOST, nodes: [vm('node-1', A, ['node-2', B]), vm('node-2', B, ['node-1', A])] });
  assert.equal(l.proxyHost, null);
  assert.deepEqual(l.clientAddrs, [HOST]);
  const r = classify(l, [
    {
      iface: 'br',
      kind: 'bridge',
      packets: [
        pkt(HOST, 40000, A, 8080, 300), // the operator asks node-1
        pkt(A, 8080, HOST, 40000, 2000),
        pkt(A, 41000, B, 8080, 350), // node-1 forwards to node-2's gateway
        pkt(B, 8080, A, 41000, 1500),
        pkt(B, 42000, A, 7070, 90), // node-2's agent dials node-1's
        pkt(A, 7070, B, 42000, 70),
        pkt('192.168.77.11', 5353, '224.0.0.251', 5353, 100), // mDNS
      ],
    },
  ]);
  assert.equal(r.client_bytes, 2300);
  assert.equal(r.node_node_bytes, 1850);
  assert.deepEqual(r.pairs, [{ from: 'node-1', to: 'node-2', bytes: 1850 }]);
  assert.equal(r.agent_bytes, 160);
  assert.deepEqual(r.agent_pairs, [{ from: 'node-2', to: 'node-1', bytes: 160 }]);
  assert.equal(r.other_bytes, 100);
  assert.equal(r.counted_bytes, 2300 + 1850);
});

test('traffic - the emulated mesh topology: nodes name peers by their own addresses; the links and agent links it lists are the proxies', () => {
  const l = layoutFromTopology({
    host_address: H,
    nodes: [
      {
        id: 'node-1',
        address: N1,
        function_url: `http://${N1}:8080/function/syncmesh-fn`,
        agent_address: `${N1}:7070`,
        mongodb_uri: `mongodb://${N1}:27017/?directConnection=true`,
        peers: { 'node-2': `http://${N2}:8080/function/syncmesh-fn` },
        links: { 'node-2': `${H}:20102` },
        agent_links: { 'node-2': `${H}:25102` },
      },
    ],
  });
  assert.deepEqual(l.proxyHost?.meshProxies.get(20102), { from: 'node-1', to: 'node-2' });
  assert.deepEqual(l.proxyHost?.agentProxies.get(25102), { from: 'node-1', to: 'node-2' });
  assert.equal(l.proxyHost?.agentProxies.size, 1);
  assert.equal(l.proxyHost?.meshProxies.size, 1, "a peer's own URL is not a proxy");
  assert.deepEqual(l.clientAddrs, []);
  assert.deepEqual(l.nodes[0], { id: 'node-1', addr: N1, functionPort: 8080, agentPort: 7070, mongoPort: 27017 });
});

test("traffic - multicast and broadcast are a link's chatter, never a query's, even from the client", () => {
  // the host's IGMP report is flooded to every port: on the veths it was counted as client bytes twice
  const igmp = pkt(CL, null, '224.0.0.22', null, 54);
  const mdns = pkt(N1, 5353, '224.0.0.251', 5353, 120);
  const r = classify(layout, [
    { iface: 'h1', kind: 'node', node: 'node-1', packets: [igmp, mdns, pkt(CL, 40000, N1, 8080, 300)] },
    { iface: 'h2', kind: 'node', node: 'node-2', packets: [igmp, mdns, pkt(CL, 40000, '255.255.255.255', 67, 342)] },
  ]);
  assert.equal(r.client_bytes, 300);
  assert.equal(r.agent_bytes, 0);
  assert.equal(r.other_bytes, 2 * 54 + 2 * 120 + 342);
  // each link: what its node sent, and what was addressed to it
  const link = (n: string) => r.nodes.find((x) => x.node === n)!;
  assert.deepEqual([link('node-1').bytes_out, link('node-1').bytes_in], [120, 300]);
  assert.deepEqual([link('node-2').bytes_out, link('node-2').bytes_in], [0, 0]);
});
