/**
 * Replication with bad input and broken peers (issue 25, "Bad input"): a resync of a collection
 * the node does not replicate, a subscriber that answers garbage or nothing, and either side
 * restarted in the middle of a snapshot. Each gives a coded error (in the answer or in /readyz),
 * the snapshot resumes, nothing is lost, and no batch is applied twice (the subscriber's
 * counters and its records of applied batches say so).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { BSON, MongoClient, ObjectId, type Document } from 'mongodb';
import { startLocalNode, type LocalNode } from '../../testing/node-process.js';
import { addNode, eventually, MESH_SECRET, meta, reading, seed, signFor, startNode, startStandIn, type TestNode } from './harness.js';

const nodes: TestNode[] = [];
let remote: LocalNode | undefined;

async function node(id: string, opts: { heapMb?: number; env?: Record<string, string> } = {}): Promise<TestNode> {
  const n = await startNode(id, opts.env ?? {}, opts);
  nodes.push(n);
  await addNode(n, { id, address: n.url, lat: 42.69, lon: 23.32, own_node: true });
  return n;
}

after(async () => {
  await Promise.all([...nodes.map((n) => n.close()), remote?.stop()]);
});

/** POSTs a signed EJSON body the way the listener does. */
async function deliver(to: TestNode, path: string, body: unknown) {
  const text = BSON.EJSON.stringify(body, { relaxed: true });
  const res = await fetch(`${to.url}/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signFor(`${to.url}/${path}`, text, { origin: to.id }) },
    body: text,
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** `n` generated readings, one a minute from 2017-07-01. */
function readings(n: number): Array<Document & { _id: ObjectId }> {
  return Array.from({ length: n }, (_, i) => ({
    _id: new ObjectId(),
    ...reading(new Date(Date.UTC(2017, 6, 1) + i * 60_000).toISOString(), 20 + (i % 10), 50, 93000),
  }));
}

const progressOf = (origin: TestNode, subscriber: string) => origin.app.replication.progress().subscribers[subscriber];

/** The replicas equal the origin's readings (anti-entropy digests of every day agree). */
async function assertSame(origin: TestNode, subscriber: string, readingsCount: number) {
  const checks = await origin.app.replication.antiEntropy.check({ repair: false, subscribers: [subscriber] });
  assert.equal(checks.length, 1);
  assert.equal(checks[0]!.error, undefined, JSON.stringify(checks[0]!.error));
  assert.deepEqual(checks[0]!.differing, []);
  assert.equal(checks[0]!.replica_readings, readingsCount);
}

test('replication faults - a resync of a collection this node does not replicate is refused with a coded 400, nothing queued', async () => {
  const a = await node('ft-ns');
  await addNode(a, {
    id: 'ft-ns-sub',
    address: 'http://127.0.0.1:9/function/syncmesh-fn',
    lat: 42.6,
    lon: 23.3,
    subscribed: true,
    initial_sync: false,
  } as never);
  const r = await deliver(a, 'resync', { db: 'syncmesh', coll: 'no_such_collection', reason: 'history-lost' });
  assert.equal(r.status, 400);
  assert.equal(r.body['errors'][0].extensions.code, 'EDGE_SYNCMESH_NOT_ALLOWED_TARGET');
  assert.match(r.body['errors'][0].message, /'syncmesh\.no_such_collection' is not replicated by this node/);
  assert.deepEqual(r.body['errors'][0].extensions.allowed, { databases: ['syncmesh'], collections: ['sensor_data'] });
  assert.deepEqual(a.app.replication.progress().snapshots, []);
  assert.equal(await a.app.replication.outbox.pending(), 0);
  const bad = await deliver(a, 'resync', { db: 'syncmesh' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body['errors'][0].extensions.code, 'EDGE_SYNCMESH_BAD_REQUEST');
});

test('replication faults - a subscriber that answers garbage, then nothing, acknowledges nothing; the real one then gets everything once', async () => {
  // a short delivery deadline, so that the silent subscriber's timeout comes soon
  const a = await node('ft-a', { env: { SYNCMESH_REPLICATION_TIMEOUT_MS: '2000' } });
  await seed(a, readings(3_000));
  const garbage = await startStandIn(0, 'this is not a replication report');
  const silent = await startStandIn(Number.POSITIVE_INFINITY);
  try {
    await addNode(a, { id: 'ft-b', address: garbage.url, lat: 42.65, lon: 23.37, subscribed: true });
    // between two attempts the sender also asks the subscriber about its batches in flight
    // (state waiting-for-apply, a garbage answer again): wait for the state between attempts
    await eventually(
      'the snapshot queued, the garbage answer reported, the sender waiting to retry',
      async () =>
        a.app.replication.snapshots.progress().length === 0 &&
        progressOf(a, 'ft-b')?.last_error?.code === 'EDGE_SYNCMESH_SUBSCRIBER_BAD_ANSWER' &&
        progressOf(a, 'ft-b')?.state === 'retrying',
      20_000,
    );
    let p = progressOf(a, 'ft-b')!;
    assert.equal(p.batches_acked, 0, 'garbage acknowledges nothing');
    assert.equal(p.readings_pending, 3_001);
    assert.equal(p.state, 'retrying');

    await meta(a.url, `mutation { updateNode(id: "ft-b", node: {address: "${silent.url}"}) { id } }`);
    await eventually('the silence is reported', async () => progressOf(a, 'ft-b')?.last_error?.code === 'EDGE_SYNCMESH_SUBSCRIBER_TIMEOUT', 60_000);
    p = progressOf(a, 'ft-b')!;
    assert.equal(p.batches_acked, 0, 'silence acknowledges nothing');
    assert.ok(p.request_readings < 2_000, `a timeout shrinks the requests (now ${p.request_readings} readings)`);
  } finally {
    await Promise.all([garbage.close(), silent.close()]);
  }
  const b = await node('ft-b');
  await meta(a.url, `mutation { updateNode(id: "ft-b", node: {address: "${b.url}"}) { id } }`);
  await eventually('everything arrived', async () => progressOf(a, 'ft-b')?.batches_pending === 0, 60_000);
  await assertSame(a, 'ft-b', 3_000);
  const counters = b.app.replication.progress().origins['ft-a']!;
  assert.equal(counters.applies, 4, 'three snapshot batches and the end, each applied once');
  assert.equal(counters.applied_batches, 4);
  assert.equal(counters.readings_applied, 3_001);
});

test('replication faults - an origin restarted in the middle of a snapshot resumes it: each reading queued and applied once', async (t) => {
  const a = await node('fo-a', { heapMb: 384 });
  const b = await node('fo-b');
  const N = 10_000;
  await seed(a, readings(N));
  await addNode(a, { id: 'fo-b', address: b.url, lat: 42.65, lon: 23.37, subscribed: true, initial_sync: false } as never);
  const r = await deliver(a, 'resync', { db: 'syncmesh', coll: 'sensor_data', reason: 'history-lost' });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await eventually('a few batches queued', async () => (a.app.replication.snapshots.progress()[0]?.batches_queued ?? 0) >= 3, 30_000, 5);
  const r0 = Date.now();
  await a.restart();
  t.diagnostic(`restart took ${Date.now() - r0} ms`);
  const resumed = a.app.replication.snapshots.progress()[0];
  assert.ok(resumed, 'the snapshot is running again after the restart');
  assert.ok(resumed.readings_queued >= 3_000 && resumed.readings_queued < N, `it resumed after ${resumed.readings_queued} readings, not from scratch`);
  const t0 = Date.now();
  await eventually(
    'the snapshot arrived',
    async () => a.app.replication.snapshots.progress().length === 0 && progressOf(a, 'fo-b')?.batches_pending === 0,
    120_000,
  );
  t.diagnostic(`after the restart: ${Date.now() - t0} ms until every batch was acknowledged; ${JSON.stringify(progressOf(a, 'fo-b'))}`);
  await assertSame(a, 'fo-b', N);
  const counters = b.app.replication.progress().origins['fo-a']!;
  assert.equal(counters.readings_applied, N + 1, 'each reading applied once (and the end)');
  assert.equal(counters.applies, counters.applied_batches);
  assert.equal(counters.applied_batches, N / 1000 + 1);
});

test('replication faults - a subscriber killed in the middle of a snapshot gets the rest once it is back: each batch applied once', async () => {
  const a = await node('fk-a', { heapMb: 384 });
  remote = await startLocalNode(
    'fk-b',
    { SYNCMESH_MESH_SECRET: MESH_SECRET, SYNCMESH_ANTI_ENTROPY_INTERVAL_S: '0', SYNCMESH_WRITE_KEY_FILE: '/nonexistent/fk/write-key' },
    384,
  );
  const N = 10_000;
  await seed(a, readings(N));
  await addNode(a, { id: 'fk-b', address: remote.url, lat: 42.65, lon: 23.37, subscribed: true });
  const appliedThere = async () => {
    const res = await fetch(`${remote!.url}/readyz`);
    return ((await res.json()) as Record<string, any>)['replication']['origins']['fk-a']?.applied_batches ?? 0;
  };
  await eventually('a few batches applied', async () => (await appliedThere()) >= 3, 60_000);
  await remote.restartFunction('SIGKILL');
  await eventually('the snapshot arrived', async () => progressOf(a, 'fk-b')?.batches_pending === 0, 120_000);
  await assertSame(a, 'fk-b', N);
  // Every batch has one record of its apply, and none was applied twice (across the kill).
  const client = await MongoClient.connect(remote.mongo.uri);
  try {
    const records = await client.db('syncmesh_meta').collection('replication_applied').find({ origin: 'fk-a' }).toArray();
    assert.equal(records.length, N / 1000 + 1, 'one record per batch');
    assert.deepEqual(
      records.filter((r) => r['applies'] !== 1).map((r) => r['_id']),
      [],
      'no batch applied twice',
    );
  } finally {
    await client.close();
  }
  assert.equal(progressOf(a, 'fk-b')!.batches_acked, N / 1000 + 1);
});
