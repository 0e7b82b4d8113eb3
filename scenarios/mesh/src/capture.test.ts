import { test } from 'node:test';
import assert from 'node:assert/strict';
import { account } from './capture.js';
import { planMesh } from './plan.js';

test('capture - packets are counted per link, direction and directed pair', () => {
  const plan = planMesh({ name: 'sme0', nodes: 3, isolation: 'netns', subnet: '10.77.3.0/24', stateRoot: '/tmp/x' });
  const c = {
    links: new Map(plan.nodes.map((n) => [n.id, { node: n.id, interface: n.hostIf!, bytes_out: 0, bytes_in: 0, packets_out: 0, packets_in: 0 }])),
    pairs: new Map(),
  };
  // node-1 asks node-2 through its proxy (10.77.3.1:20102), the proxy answers
  account(plan, c, 1, '10:00:00.000 aa > bb, IPv4, length 300: 10.77.3.11.40000 > 10.77.3.1.20102: tcp 234');
  account(plan, c, 1, '10:00:00.010 bb > aa, IPv4, length 1000: 10.77.3.1.20102 > 10.77.3.11.40000: tcp 934');
  // the proxy delivers to node-2
  account(plan, c, 2, '10:00:00.005 bb > cc, IPv4, length 300: 10.77.3.1.50000 > 10.77.3.12.8080: tcp 234');
  account(plan, c, 1, '10:00:00.020 aa > bb, ARP, length 42: Request who-has 10.77.3.1 tell 10.77.3.11');
  const l1 = c.links.get('node-1')!;
  assert.deepEqual([l1.bytes_out, l1.bytes_in, l1.packets_out, l1.packets_in], [300, 1000, 1, 1]);
  assert.equal(c.links.get('node-2')!.bytes_in, 300);
  assert.deepEqual([...c.pairs.values()], [{ from: 'node-1', to: 'node-2', bytes_request: 300, bytes_response: 1000 }]);
});
