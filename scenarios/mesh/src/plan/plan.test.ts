import { test } from 'node:test';
import assert from 'node:assert/strict';
import { linkRedirectRules, LINK_CHAIN, redirectedLinks } from '../network/network.js';
import { misoPeers } from '../runtime/services.js';
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

test("plan - a link forwards to the destination function; netns: the source names the destination's own URL, redirected to the link", () => {
  const plan = planMesh({ name: 'sme0', nodes: 3, isolation: 'netns', subnet: '10.77.3.0/24', stateRoot: '/tmp/x' });
  const l = plan.links.find((x) => x.from === 1 && x.to === 2)!;
  assert.equal(l.upstream, '10.77.3.12:8080');
  assert.equal(`${l.listenHost}:${l.listenPort}`, '10.77.3.1:20102');
  assert.equal(l.url, 'http://10.77.3.12:8080/function/syncmesh-fn', "the peer's own function URL, as mesh-up prints it");
  assert.equal(l.url, plan.nodes[1]!.functionUrl);
  assert.equal(l.redirected, true);
  assert.equal(plan.nodes[0]!.functionUrl, 'http://10.77.3.11:8080/function/syncmesh-fn');
  assert.equal(plan.nodes[0]!.netns, 'sme0-n1');
  // loopback: no namespace to redirect in, so the registry names the proxy
  const lo = planMesh({ name: 'sme0', nodes: 3, isolation: 'loopback', portBase: 30000, stateRoot: '/tmp/x' });
  const ll = lo.links.find((x) => x.from === 1 && x.to === 2)!;
  assert.equal(ll.redirected, false);
  assert.equal(ll.url, `http://127.0.0.1:${ll.listenPort}/function/syncmesh-fn`);
});

test("plan - netns: each node's namespace redirects exactly its outgoing links, a peer's address and port to that link's proxy", () => {
  const plan = planMesh({ name: 'sme0', nodes: 3, isolation: 'netns', subnet: '10.77.3.0/24', stateRoot: '/tmp/x', agentLinks: true });
  const links = redirectedLinks(plan, plan.nodes[0]!);
  assert.deepEqual(links.map((l) => l.name).sort(), ['node-1>node-2', 'node-1>node-2:agent', 'node-1>node-3', 'node-1>node-3:agent']);
  const rules = linkRedirectRules(links).split('\n');
  assert.deepEqual(rules.slice(0, 4), ['*nat', `:${LINK_CHAIN} - [0:0]`, `-A OUTPUT -j ${LINK_CHAIN}`, `-A PREROUTING -j ${LINK_CHAIN}`]);
  assert.ok(rules.includes(`-A ${LINK_CHAIN} -d 10.77.3.12/32 -p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.77.3.1:20102`), rules.join('\n'));
  assert.ok(rules.includes(`-A ${LINK_CHAIN} -d 10.77.3.13/32 -p tcp -m tcp --dport 7070 -j DNAT --to-destination 10.77.3.1:25103`), rules.join('\n'));
  assert.equal(rules.filter((r) => r.includes('DNAT')).length, 4);
  assert.equal(rules.at(-2), 'COMMIT');
  const lo = planMesh({ name: 'sme0', nodes: 3, isolation: 'loopback', portBase: 30000, stateRoot: '/tmp/x', agentLinks: true });
  assert.deepEqual(redirectedLinks(lo, lo.nodes[0]!), [], 'loopback: nothing to redirect, the peers are named by their proxies');
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
        assert.equal(`${l.listenHost}:${l.listenPort}`, `${plan.hostAddr}:${l.listenPort}`, 'listens where the node reaches the host');
        assert.equal(l.address, isolation === 'netns' ? l.upstream : `${plan.hostAddr}:${l.listenPort}`, "netns: the peer agent's own address, redirected");
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

test("plan - static MISO peers are every other node's agent: netns at its own address (redirected to the agent link), loopback at the agent link", () => {
  const plan = planMesh({ name: 'sme0', nodes: 3, isolation: 'netns', subnet: '10.77.3.0/24', stateRoot: '/tmp/x', agentLinks: true });
  assert.equal(misoPeers(plan, plan.nodes[0]!), 'node-2@10.77.3.12:7070,node-3@10.77.3.13:7070');
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
