import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { BSON, ObjectId } from 'mongodb';
import { addNode, eventually, meta, post, reading, seed, startNode, type TestNode } from './harness.js';
import { signFor } from './harness.js';

let a: TestNode;
let b: TestNode;

before(async () => {
  [a, b] = await Promise.all([startNode('rep-a'), startNode('rep-b')]);
  await addNode(a, { id: 'rep-a', address: a.url, lat: 42.69, lon: 23.32, own_node: true });
  await addNode(b, { id: 'rep-b', address: b.url, lat: 42.65, lon: 23.37, own_node: true });
});
after(async () => {
  await Promise.all([a.close(), b.close()]);
});

const replicas = (n: TestNode) => n.client.db('syncmesh').collection('sensor_data_replicas');
const own = (n: TestNode) => n.client.db('syncmesh').collection('sensor_data');

/** POSTs a signed EJSON body the way the listener does. */
async function deliver(to: TestNode, path: string, body: unknown) {
  const text = BSON.EJSON.stringify(body, { relaxed: true });
  const res = await fetch(`${to.url}/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signFor(`${to.url}/${path}`, text, { origin: (body as { origin?: string }).origin ?? to.id }) },
    body: text,
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const insertEvent = (doc: Record<string, unknown> & { _id: unknown }) => ({
  token: { _data: 'x' },
  op: 'insert',
  db: 'syncmesh',
  coll: 'sensor_data',
  key: { _id: doc._id },
  doc,
});

test('replication - events reach subscribers as idempotent replica writes', async () => {
  await addNode(a, { id: 'rep-b', address: b.url, lat: 42.65, lon: 23.37, subscribed: true });
  const docs = [1, 2, 3].map((i) => ({ _id: new ObjectId(), ...reading(`2017-07-0${i}T00:00:00Z`, 20 + i, 50, 93000) }));
  const events = { source: { node: 'rep-a' }, events: docs.map(insertEvent) };
  const r = await deliver(a, 'events', events);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body, { applied: 3, subscribers: 1 });
  await eventually('3 replicas on B', async () => (await replicas(b).countDocuments({ _origin: 'rep-a' })) === 3);

  // Redelivery (at-least-once) changes nothing.
  await deliver(a, 'events', events);
  await eventually('outbox drained', async () => (await a.app.replication.outbox.pending()) === 0);
  assert.equal(await replicas(b).countDocuments(), 3);
  const one = await replicas(b).findOne({ _origin_id: docs[0]!._id });
  assert.equal(one?.['_id'], `rep-a|{"$oid":"${docs[0]!._id.toHexString()}"}`);
  assert.equal(one?.['temperature'], 21);
  assert.ok(one?.['timestamp'] instanceof Date, 'types survive the trip');

  // Updates (real MongoDB shape with fullDocument) and deletes propagate.
  await deliver(a, 'events', {
    events: [
      {
        token: { _data: 'y' },
        op: 'update',
        db: 'syncmesh',
        coll: 'sensor_data',
        key: { _id: docs[0]!._id },
        doc: { ...docs[0], temperature: 99 },
        update: { updatedFields: { temperature: 99 }, removedFields: [] },
      },
      { token: { _data: 'z' }, op: 'delete', db: 'syncmesh', coll: 'sensor_data', key: { _id: docs[1]!._id }, doc: null },
    ],
  });
  await eventually(
    'update and delete applied',
    async () => (await replicas(b).countDocuments()) === 2 && (await replicas(b).findOne({ _origin_id: docs[0]!._id }))?.['temperature'] === 99,
  );

  // B's listener never sees replicas: B's outbox stays empty, A holds nothing of B.
  assert.equal(await b.app.replication.outbox.pending(), 0);
  assert.equal(await replicas(a).countDocuments(), 0);
});

test('replication - a batch stored in the outbox without being handed to the sender is still delivered', async () => {
  // as when an insert committed although the driver reported an error, or a second instance of
  // the function shares the database: the sender works from memory but reads the outbox back
  // (B subscribed to A in the first test)
  const doc = { _id: new ObjectId(), ...reading('2017-07-05T00:00:00Z', 7, 50, 93000) };
  await a.client
    .db('syncmesh_meta')
    .collection('replication_outbox')
    .insertOne({
      _id: new ObjectId(),
      db: 'syncmesh',
      coll: 'sensor_data',
      seq: Date.now() * 1000,
      ops: [{ op: 'upsert', doc }],
      pending: ['rep-b'],
    });
  await eventually('the stored batch reached B', async () => (await replicas(b).countDocuments({ _origin_id: doc._id })) === 1, 20_000);
  await eventually('outbox drained', async () => (await a.app.replication.outbox.pending()) === 0);
  await replicas(b).deleteMany({ _origin_id: doc._id });
});

test('replication - one batch applies in order: insert, delete and insert again, the same reading twice, a mix of new and existing', async () => {
  const x = { _id: new ObjectId(), ...reading('2017-07-04T00:00:00Z', 1, 50, 93000) };
  const y = { _id: new ObjectId(), ...reading('2017-07-04T01:00:00Z', 2, 50, 93000) };
  const apply = (ops: unknown[]) => deliver(b, 'replicate', { origin: 'order-origin', batches: [{ db: 'syncmesh', coll: 'sensor_data', seq: 1, ops }] });
  const r1 = await apply([
    { op: 'upsert', doc: x },
    { op: 'delete', id: x._id },
    { op: 'upsert', doc: { ...x, temperature: 3 } },
    { op: 'upsert', doc: y },
    { op: 'upsert', doc: { ...y, temperature: 4 } },
  ]);
  assert.equal(r1.status, 200, JSON.stringify(r1.body));
  const temps = async () => (await replicas(b).find({ _origin: 'order-origin' }).sort({ timestamp: 1 }).toArray()).map((d) => d['temperature']);
  assert.deepEqual(await temps(), [3, 4]);
  // x exists, z is new: both end as sent
  const z = { _id: new ObjectId(), ...reading('2017-07-04T02:00:00Z', 6, 50, 93000) };
  const r2 = await apply([
    { op: 'upsert', doc: { ...x, temperature: 5 } },
    { op: 'upsert', doc: z },
  ]);
  assert.equal(r2.status, 200, JSON.stringify(r2.body));
  assert.deepEqual(await temps(), [5, 4, 6]);
  await replicas(b).deleteMany({ _origin: 'order-origin' });
});

test("replication - resync replaces a subscriber's replicas with the origin's readings", async () => {
  await own(a).deleteMany({});
  await seed(a, [reading('2017-07-10T00:00:00Z', 10, 10, 90000), reading('2017-07-11T00:00:00Z', 11, 11, 90001)]);
  const r = await deliver(a, 'resync', { db: 'syncmesh', coll: 'sensor_data', reason: 'malformed-update' });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body['subscribers'], 1);
  assert.match(r.body['snapshot'], /^[0-9a-f]{24}$/, 'answered once the snapshot is stored as a job');
  await eventually('replicas equal the origin', async () => {
    const got = (await replicas(b).find({ _origin: 'rep-a' }).toArray()).map((d) => String(d['_origin_id'])).sort();
    const want = (await own(a).find().toArray()).map((d) => String(d['_id'])).sort();
    return JSON.stringify(got) === JSON.stringify(want);
  });
});

test('replication - subscribing with a meta request copies existing readings first', async () => {
  const c = await startNode('rep-c');
  try {
    await addNode(a, { id: 'rep-c', address: c.url, lat: 42.6, lon: 23.3 });
    const sub = await meta(a.url, 'mutation { updateNode(id: "rep-c", node: {subscribed: true}) { subscribed } }');
    assert.deepEqual(sub.body.data, { updateNode: { subscribed: true } });
    await eventually('initial sync reached C', async () => (await replicas(c).countDocuments({ _origin: 'rep-a' })) === 2);
  } finally {
    await meta(a.url, 'mutation { deleteNode(id: "rep-c") }');
    await c.close();
  }
});

test('replication - two nodes subscribed to each other exchange each write once', async () => {
  await addNode(b, { id: 'rep-a', address: a.url, lat: 42.69, lon: 23.32, subscribed: true, initial_sync: false } as never);
  const before = await replicas(b).countDocuments();
  const doc = { _id: new ObjectId(), ...reading('2017-07-20T00:00:00Z', 5, 5, 5) };
  await deliver(a, 'events', { events: [insertEvent(doc)] });
  await eventually('B got the write', async () => (await replicas(b).countDocuments()) === before + 1);
  // Applying a replica is not a write to B's own collection, so nothing goes back to A.
  assert.equal(await b.app.replication.outbox.pending(), 0);
  assert.equal(await replicas(a).countDocuments(), 0);
});

test('replication - the endpoints need the mesh signature and allowed namespaces', async () => {
  const unsigned = await post(`${a.url}/events`, { events: [] });
  assert.equal(unsigned.status, 401);
  const wrongNs = await deliver(a, 'events', { events: [{ ...insertEvent({ _id: 1 }), db: 'admin' }] });
  assert.equal(wrongNs.status, 400);
  assert.equal(wrongNs.body['errors'][0].extensions.code, 'EDGE_SYNCMESH_NOT_ALLOWED_TARGET');
  const self = await deliver(a, 'replicate', { origin: 'rep-a', batches: [] });
  assert.equal(self.status, 400);
});

test('replication - failover: a node holding the replicas answers for a node that is down', async () => {
  const c = await startNode('rep-entry');
  const stopped = await startNode('rep-down');
  try {
    // rep-down's readings are replicated to B; then rep-down goes away.
    await addNode(stopped, { id: 'rep-b', address: b.url, lat: 42.65, lon: 23.37, subscribed: true });
    const docs = [1, 2, 3, 4].map((i) => ({ _id: new ObjectId(), ...reading(`2017-07-2${i}T00:00:00Z`, 30, 30, 30) }));
    await seed(stopped, docs);
    await deliver(stopped, 'events', { events: docs.map(insertEvent) });
    await eventually("B holds rep-down's replicas", async () => (await replicas(b).countDocuments({ _origin: 'rep-down' })) === 4);
    const downUrl = stopped.url;
    await stopped.close();

    await addNode(c, { id: 'rep-entry', address: c.url, lat: 42.7, lon: 23.3, own_node: true });
    await addNode(c, { id: 'rep-b', address: b.url, lat: 42.65, lon: 23.37 });
    await addNode(c, { id: 'rep-down', address: downUrl, lat: 42.6, lon: 23.3 });
    const bOwn = await own(b).countDocuments();
    const r = await post(c.url, { query: '{ sensorsAggregate { count average_temperature } }', request_type: 'aggregate', use_meta_data: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data!['sensorsAggregate'].count, bOwn + 4, "rep-down counted once, from B's replicas");
    assert.deepEqual(r.body.extensions!['failover'], [{ origin: 'rep-down', by: 'rep-b' }]);
    assert.equal(r.body.extensions!['partial'], false);
    const down = r.body.extensions!['nodes'].find((n: { node: string }) => n.node === 'rep-down');
    assert.equal(down.status, 'failed');
    assert.equal(down.covered_by, 'rep-b');

    const collect = await post(c.url, {
      query: '{ sensors(start_time: "2017-07-21T00:00:00Z", end_time: "2017-07-24T23:59:59Z") { _id } }',
      use_meta_data: true,
    });
    assert.deepEqual(
      collect.body.data!['sensors'].map((s: { _id: string }) => s._id),
      docs.map((d) => d._id.toHexString()),
      'replicas show the original _id',
    );
  } finally {
    await c.close();
  }
});
