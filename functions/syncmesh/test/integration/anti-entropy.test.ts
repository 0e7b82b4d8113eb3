/**
 * Anti-entropy: replicas changed, removed and added behind the mesh's back on a subscriber are
 * found by the origin's background rounds (digests per day) and repaired, exactly those buckets;
 * the replication-check module (what `make replication-check` runs) reports the disagreement
 * before and the agreement after.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ObjectId, type Document } from 'mongodb';
import { checkReplication, formatCheck } from '../../src/replication/check.js';
import { replicaId } from '../../src/replication/ops.js';
import { addNode, eventually, MESH_SECRET, reading, seed, startNode, type TestNode } from './harness.js';

/** Background rounds this often on the origin: long enough for the "before" check to run first. */
const INTERVAL_S = 6;

let a: TestNode;
let b: TestNode;

before(async () => {
  [a, b] = await Promise.all([startNode('ae-a', { SYNCMESH_ANTI_ENTROPY_INTERVAL_S: String(INTERVAL_S) }), startNode('ae-b')]);
  await addNode(a, { id: 'ae-a', address: a.url, lat: 42.69, lon: 23.32, own_node: true });
  await addNode(b, { id: 'ae-b', address: b.url, lat: 42.65, lon: 23.37, own_node: true });
});
after(async () => {
  await Promise.all([a.close(), b.close()]);
});

const replicas = (n: TestNode) => n.client.db('syncmesh').collection<Document & { _id: string }>('sensor_data_replicas');
const own = (n: TestNode) => n.client.db('syncmesh').collection('sensor_data');
const hour = (day: number, h: number) => `2017-07-0${day}T${String(h).padStart(2, '0')}:00:00Z`;

/** (original _id, temperature) of every reading, sorted: A's own and B's replicas of them. */
async function contents() {
  const mine = (await own(a).find().toArray()).map((d) => `${String(d['_id'])}=${d['temperature']}`).sort();
  const theirs = (await replicas(b).find({ _origin: 'ae-a' }).toArray()).map((d) => `${String(d['_origin_id'])}=${d['temperature']}`).sort();
  return { mine, theirs };
}

test('anti-entropy - replicas changed, removed and added behind the mesh are repaired, exactly their buckets', async () => {
  const docs = [];
  for (let day = 1; day <= 5; day++) for (let h = 0; h < 24; h++) docs.push({ _id: new ObjectId(), ...reading(hour(day, h), 20 + h / 10, 50, 93000) });
  await seed(a, docs);
  await addNode(a, { id: 'ae-b', address: b.url, lat: 42.65, lon: 23.37, subscribed: true });
  await eventually('the initial sync reached B', async () => (await replicas(b).countDocuments({ _origin: 'ae-a' })) === docs.length, 20_000);
  const ae = () => a.app.replication.antiEntropy.progress();
  // Right after a background round, so that the next one comes after the "before" check.
  const rounds = ae().rounds;
  await eventually('a background round', async () => ae().rounds > rounds, (INTERVAL_S + 5) * 1000);
  assert.equal(ae().buckets_repaired, 0, 'nothing to repair while B is in step');

  // Behind the mesh's back: one replica changed (day 2), one removed (day 3), a stray added (day 4).
  const [changed, removed] = [docs[24 + 5]!, docs[48 + 7]!];
  await replicas(b).updateOne({ _id: replicaId('ae-a', changed._id) }, { $set: { temperature: 99.9 } });
  await replicas(b).deleteOne({ _id: replicaId('ae-a', removed._id) });
  const strayId = new ObjectId();
  await replicas(b).insertOne({
    ...reading(hour(4, 5).replace(':00:00', ':30:00'), 1, 1, 1),
    _id: replicaId('ae-a', strayId),
    _origin: 'ae-a',
    _origin_id: strayId,
    _rev: 1,
  });

  const nodes = [
    { id: 'ae-a', url: a.url },
    { id: 'ae-b', url: b.url },
  ];
  const before = await checkReplication(nodes, { secret: MESH_SECRET });
  const text = formatCheck(before);
  assert.equal(before.agrees, false, text);
  const fromA = before.origins.find((o) => o.node === 'ae-a')!.report!.subscribers;
  assert.equal(fromA.length, 1, text);
  assert.deepEqual(fromA[0]!.differing, [
    { bucket: '2017-07-02', origin_count: 24, replica_count: 24 },
    { bucket: '2017-07-03', origin_count: 24, replica_count: 23 },
    { bucket: '2017-07-04', origin_count: 24, replica_count: 25 },
  ]);
  assert.deepEqual(before.origins.find((o) => o.node === 'ae-b')!.report!.subscribers, [], 'B has no subscribers');
  assert.match(text, /ae-a -> ae-b \(syncmesh\.sensor_data, per day\): DIFFERS in 3 bucket\(s\)/);

  await eventually(
    'the background rounds repaired B',
    async () => {
      const { mine, theirs } = await contents();
      return ae().buckets_repaired >= 3 && JSON.stringify(mine) === JSON.stringify(theirs);
    },
    (3 * INTERVAL_S + 30) * 1000,
  );
  assert.equal(ae().buckets_repaired, 3, 'exactly the three buckets, each once');
  assert.deepEqual(
    ae()
      .recent_repairs.flatMap((r) => r.buckets)
      .sort(),
    ['2017-07-02', '2017-07-03', '2017-07-04'],
  );
  assert.equal((await replicas(b).findOne({ _id: replicaId('ae-a', changed._id) }))?.['temperature'], changed.temperature);
  assert.equal(await replicas(b).countDocuments({ _origin_id: strayId }), 0);

  const afterwards = await checkReplication(nodes, { secret: MESH_SECRET });
  assert.equal(afterwards.agrees, true, formatCheck(afterwards));
  assert.match(formatCheck(afterwards), /ae-a -> ae-b .*: agrees \(120 of 120 readings, 5 buckets\)/);
});

test('anti-entropy - the check refuses unsigned callers and reports a subscriber it cannot ask', async () => {
  const unsigned = await fetch(`${a.url}/replication/check`, { method: 'POST', body: '{}' });
  assert.equal(unsigned.status, 401);
  const wrong = await checkReplication([{ id: 'ae-a', url: a.url }], { secret: 'another-mesh-secret-of-at-least-32-bytes!!' });
  assert.equal(wrong.agrees, false);
  assert.equal(wrong.origins[0]!.error?.code, 'EDGE_SYNCMESH_PEER_HTTP_ERROR');
  // A subscriber whose address answers nothing useful: its line says so.
  await addNode(a, { id: 'ae-gone', address: 'http://127.0.0.1:9/function/syncmesh-fn', lat: 42.6, lon: 23.3, subscribed: true, initial_sync: false } as never);
  try {
    const check = await checkReplication([{ id: 'ae-a', url: a.url }], { secret: MESH_SECRET, timeoutMs: 30_000 });
    const gone = check.origins[0]!.report!.subscribers.find((s) => s.subscriber === 'ae-gone')!;
    assert.equal(gone.agrees, false);
    assert.equal(gone.error?.code, 'EDGE_SYNCMESH_PEER_UNREACHABLE');
    assert.match(formatCheck(check), /ae-a -> ae-gone .*cannot compare: EDGE_SYNCMESH_PEER_UNREACHABLE/);
  } finally {
    await a.app.registry.delete('ae-gone');
  }
});
