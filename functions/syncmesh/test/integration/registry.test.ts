import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { haversineKm } from '../../src/index.js';
import { addNode, meta, post, reading, seed, startNode, type TestNode } from './harness.js';

let a: TestNode;
let near: TestNode;
let far: TestNode;

// Sofia centre; one node ~5 km away, one ~40 km away (Pernik direction).
const HOME = { lat: 42.6977, lon: 23.3219 };
const NEAR = { lat: 42.65, lon: 23.37 };
const FAR = { lat: 42.6052, lon: 23.0378 };

before(async () => {
  [a, near, far] = await Promise.all([startNode('reg-a'), startNode('reg-near'), startNode('reg-far')]);
  await seed(near, [reading('2017-07-31T01:00:00Z', 20, 50, 93000)]);
  await seed(far, [reading('2017-07-31T01:00:00Z', 30, 50, 93000), reading('2017-07-31T02:00:00Z', 30, 50, 93000)]);
});
after(async () => {
  await Promise.all([a.close(), near.close(), far.close()]);
});

test('registry - create, read, update and delete nodes with stored distances', async () => {
  const peer = await addNode(a, { id: 'reg-far', address: far.url, ...FAR });
  assert.equal(peer.distance, null, 'no own node yet');
  await addNode(a, { id: 'reg-a', address: a.url, ...HOME, own_node: true });
  await addNode(a, { id: 'reg-near', address: near.url, ...NEAR, subscribed: true });

  const list = await meta(a.url, '{ nodes { id distance own_node subscribed } }', false);
  assert.equal(list.status, 200);
  const nodes = list.body.data!['nodes'] as Array<{ id: string; distance: number; own_node: boolean; subscribed: boolean }>;
  assert.deepEqual(
    nodes.map((n) => n.id),
    ['reg-a', 'reg-near', 'reg-far'],
    'nearest first',
  );
  assert.equal(nodes[0]!.distance, 0);
  assert.ok(Math.abs(nodes[1]!.distance - haversineKm(HOME, NEAR)) < 1e-9);
  assert.ok(Math.abs(nodes[2]!.distance - haversineKm(HOME, FAR)) < 1e-9, 'recomputed when the own node appeared');
  assert.deepEqual((await meta(a.url, '{ nodes(subscribed: true) { id } }', false)).body.data!['nodes'], [{ id: 'reg-near' }]);
  assert.deepEqual((await meta(a.url, '{ nodes(radius: 10) { id } }', false)).body.data!['nodes'], [{ id: 'reg-a' }, { id: 'reg-near' }]);

  // Moving the own node recomputes every distance.
  const moved = await meta(a.url, `mutation { updateNode(id: "reg-a", node: {lat: ${FAR.lat}, lon: ${FAR.lon}}) { distance } }`);
  assert.equal(moved.status, 200, JSON.stringify(moved.body));
  const after1 = (await meta(a.url, '{ node(id: "reg-far") { distance } }', false)).body.data!['node'];
  assert.equal(after1.distance, 0);
  await meta(a.url, `mutation { updateNode(id: "reg-a", node: {lat: ${HOME.lat}, lon: ${HOME.lon}}) { distance } }`);

  // Exactly one own node.
  const dup = await addNode(a, { id: 'tmp', address: 'http://127.0.0.1:9/x', lat: 1, lon: 1, own_node: true });
  assert.equal(dup.distance, 0);
  const owns = (await meta(a.url, '{ nodes(own_node: true) { id } }', false)).body.data!['nodes'];
  assert.deepEqual(owns, [{ id: 'tmp' }]);
  await meta(a.url, 'mutation { updateNode(id: "reg-a", node: {own_node: true}) { id } }');
  assert.deepEqual((await meta(a.url, '{ ownNode { id } }', false)).body.data!['ownNode'], { id: 'reg-a' });
  const deleted = await meta(a.url, 'mutation { deleteNode(id: "tmp") again: deleteNode(id: "tmp") }');
  assert.deepEqual(deleted.body.data, { deleteNode: true, again: false });
});

test('registry - changes need the mesh signature, reads do not', async () => {
  const r = await meta(a.url, 'mutation { deleteNode(id: "reg-near") }', false);
  assert.equal(r.status, 401);
  assert.match(r.body.errors![0]!.message, /registry changes must be signed/);
});

test('registry - duplicate and unknown nodes are clear errors', async () => {
  const dup = await meta(a.url, `mutation { addNode(node: {id: "reg-near", address: "${near.url}", lat: 1, lon: 1}) { id } }`);
  assert.equal(dup.status, 400);
  assert.equal(dup.body.errors![0]!.extensions.code, 'EDGE_SYNCMESH_NODE_EXISTS');
  const missing = await meta(a.url, 'mutation { updateNode(id: "nope", node: {lat: 1}) { id } }');
  assert.equal(missing.status, 400);
  assert.equal(missing.body.errors![0]!.extensions.code, 'EDGE_SYNCMESH_NODE_NOT_FOUND');
});

test('registry - radius picks the registry nodes within it, nearest first', async () => {
  const q = '{ sensorsAggregate { count } }';
  const r10 = await post(a.url, { query: q, request_type: 'aggregate', use_meta_data: true, radius: 10 });
  assert.equal(r10.status, 200, JSON.stringify(r10.body));
  assert.deepEqual(
    r10.body.extensions!['nodes'].map((n: { node: string }) => n.node),
    ['reg-near'],
  );
  assert.equal(r10.body.data!['sensorsAggregate'].count, 1);

  const r100 = await post(a.url, { query: q, request_type: 'aggregate', use_meta_data: true, radius: 100 });
  assert.deepEqual(r100.body.extensions!['nodes'].map((n: { node: string }) => n.node).sort(), ['reg-far', 'reg-near']);
  assert.equal(r100.body.data!['sensorsAggregate'].count, 3);

  const all = await post(a.url, { query: q, request_type: 'aggregate', use_meta_data: true });
  assert.equal(all.body.data!['sensorsAggregate'].count, 3);
});
