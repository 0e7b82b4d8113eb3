import { test } from 'node:test';
import assert from 'node:assert/strict';
import { misoPeers } from './services.js';
import {
  defaultPortBase,
  defaultSubnet,
  hostPorts,
  kernelNames,
  linkProxies,
  LOOPBACK_PORT_SPAN,
  MAX_IFNAME,
  MAX_LOOPBACK_PORT_BASE,
  overlaps,
  parseNodeRef,
  planMesh,
} from './plan.js';

test('plan - every interface name fits the kernel limit for 30 nodes and the longest mesh name', () => {
  const plan = planMesh({ name: 'abcdefgh', nodes: 30, isolation: 'netns', stateRoot: '/tmp/x' });
  const { links } = kernelNames(plan);
  assert.equal(links.length, 31);
  for (const l of [...links, 'abcdefgh-c30']) assert.ok(l.length <= MAX_IFNAME, `${l} is longer than ${MAX_IFNAME}`);
});

test('plan - one proxy per directed pair, on distinct host ports', () => {
  for (const isolation of ['netns', 'loopback'] as const) {
    const plan = planMesh({ name: 'sme0', nodes: 30, isolation, stateRoot: '/tmp/x' });
    assert.equal(plan.links.length, 30 * 29);
    const ports = hostPorts(plan).map((p) => `${p.host}:${p.port}`);
    assert.equal(new Set(ports).size, ports.length, `${isolation}: host ports collide`);
  }
});

test('plan - a link forwards to the destination function and is reached at the host address', () => {
  const plan = planMesh({ name: 'sme0', nodes: 3, isolation: 'netns', subnet: '10.77.3.0/24', stateRoot: '/tmp/x' });
  const l = plan.links.find((x) => x.from === 1 && x.to === 2)!;
  assert.equal(l.upstream, '10.77.3.12:8080');
  assert.equal(l.url, 'http://10.77.3.1:20102/function/syncmesh-fn');
  assert.equal(plan.nodes[0]!.functionUrl, 'http://10.77.3.11:8080/function/syncmesh-fn');
  assert.equal(plan.nodes[0]!.netns, 'sme0-n1');
});

test('plan - meshes with different names get different subnets and port ranges', () => {
  assert.notEqual(defaultSubnet('sme0'), defaultSubnet('sme1'));
  assert.match(defaultSubnet('sme0'), /^10\.1\d\d\.\d{1,3}\.0\/24$/);
  for (const name of ['sme0', 'sme1', 'abcdefgh', 's8a1', 'zz']) {
    const a = defaultPortBase(name);
    assert.ok(a >= 20000 && a <= MAX_LOOPBACK_PORT_BASE && a + LOOPBACK_PORT_SPAN <= 65536, `${name}: ${a}`);
  }
});

test('plan - agent links: one proxy per directed pair, on host ports of their own, inside the loopback range', () => {
  for (const isolation of ['netns', 'loopback'] as const) {
    for (const portBase of isolation === 'loopback' ? [undefined, MAX_LOOPBACK_PORT_BASE] : [undefined]) {
      const plan = planMesh({ name: 'sme0', nodes: 30, isolation, portBase, stateRoot: '/tmp/x', agentLinks: true });
      assert.equal(plan.agentLinks.length, 30 * 29);
      const pairs = new Set(plan.agentLinks.map((l) => `${l.from}>${l.to}`));
      assert.equal(pairs.size, 30 * 29, `${isolation}: every directed pair once`);
      for (const l of plan.agentLinks) {
        assert.notEqual(l.from, l.to);
        assert.equal(l.name, `node-${l.from}>node-${l.to}:agent`);
        const dest = plan.nodes[l.to - 1]!;
        assert.equal(l.upstream, `${dest.addr}:${dest.agentPort}`, 'forwards to the destination agent');
        assert.equal(l.address, `${plan.hostAddr}:${l.listenPort}`, 'listens where the node reaches the host');
        assert.ok(l.listenPort < 65536);
        if (plan.portBase !== null)
          assert.ok(l.listenPort >= plan.portBase && l.listenPort < plan.portBase + LOOPBACK_PORT_SPAN, `${l.name} at ${l.listenPort}`);
      }
      const ports = hostPorts(plan).map((p) => `${p.host}:${p.port}`);
      assert.equal(new Set(ports).size, ports.length, `${isolation}: host ports collide`);
      assert.equal(ports.length, 1 + 2 * 30 * 29 + (isolation === 'loopback' ? 2 * 30 : 0));
      if (isolation === 'loopback') {
        // nor with the nodes' own services (agents, listeners), which hostPorts does not list
        const services = plan.nodes.flatMap((n) => [n.functionPort, n.mongoPort, n.agentPort, n.listenerPort]);
        const all = [...services, ...linkProxies(plan).map((l) => l.listenPort), plan.toxiproxyApi.port];
        assert.equal(new Set(all).size, all.length, 'loopback ports collide');
      }
    }
  }
});

test('plan - static MISO peers are the agent links: node-id@proxy for every other node', () => {
  const plan = planMesh({ name: 'sme0', nodes: 3, isolation: 'netns', subnet: '10.77.3.0/24', stateRoot: '/tmp/x', agentLinks: true });
  assert.equal(misoPeers(plan, plan.nodes[0]!), 'node-2@10.77.3.1:25102,node-3@10.77.3.1:25103');
  const l = plan.agentLinks.find((x) => x.from === 1 && x.to === 2)!;
  assert.equal(l.upstream, '10.77.3.12:7070');
  const loop = planMesh({ name: 'sme0', nodes: 3, isolation: 'loopback', portBase: 30000, stateRoot: '/tmp/x', agentLinks: true });
  assert.equal(misoPeers(loop, loop.nodes[2]!), 'node-1@127.0.0.1:32097,node-2@127.0.0.1:32098');
  assert.equal(loop.agentLinks.find((x) => x.from === 3 && x.to === 1)!.upstream, '127.0.0.1:30201');
});

test('plan - without agent links (no agent, or mDNS) there are no agent proxies, and static peers are refused', () => {
  const plan = planMesh({ name: 'sme0', nodes: 3, isolation: 'netns', stateRoot: '/tmp/x' });
  assert.deepEqual(plan.agentLinks, []);
  assert.equal(linkProxies(plan).length, 6);
  assert.throws(() => misoPeers(plan, plan.nodes[0]!), /planned without agent links/);
  // one node (make bench-function RUNTIME=faasd) has no peers and needs no links
  const one = planMesh({ name: 'sme0', nodes: 1, isolation: 'netns', stateRoot: '/tmp/x', agentLinks: true });
  assert.deepEqual(one.agentLinks, []);
  assert.equal(misoPeers(one, one.nodes[0]!), '');
});

test('plan - subnet overlap', () => {
  assert.equal(overlaps('10.77.3.0/24', '10.0.0.0/8'), true);
  assert.equal(overlaps('10.77.3.0/24', '10.77.3.128/25'), true);
  assert.equal(overlaps('10.77.3.0/24', '10.77.4.0/24'), false);
  assert.equal(overlaps('10.77.3.0/24', '192.0.2.0/24'), false);
  assert.equal(overlaps('10.77.3.0/24', '10.77.3.5'), true);
});

test('plan - node references', () => {
  assert.equal(parseNodeRef('node-12'), 12);
  assert.equal(parseNodeRef('3'), 3);
  assert.equal(parseNodeRef('nodes'), undefined);
});
