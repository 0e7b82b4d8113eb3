import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultPortBase, defaultSubnet, hostPorts, kernelNames, MAX_IFNAME, overlaps, parseNodeRef, planMesh } from './plan.js';

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
  const a = defaultPortBase('sme0');
  assert.ok(a >= 20000 && a + 2000 <= 65535);
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
