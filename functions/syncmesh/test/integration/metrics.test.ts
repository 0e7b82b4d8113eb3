/**
 * GET /metrics: the scraped values equal the counts of what this test sent (requests by type and
 * outcome, forwards per peer, cost refusals, the outbox of a subscriber that is down), and the
 * endpoint answers errors as coded JSON.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { BSON, ObjectId } from 'mongodb';
import { scrapeMetrics } from '@syncmesh-edge/lab';
import { metricValue, type Sample as MetricSample } from '@syncmesh-edge/prometheus';
import { addNode, deadUrl, eventually, post, reading, seed, signFor, startNode, type TestNode } from './harness.js';

let a: TestNode;
let b: TestNode;

const AGG = '{ sensorsAggregate(start_time: "2017-07-01T00:00:00Z", end_time: "2017-07-31T23:59:59Z") { count average_temperature } }';
const COLLECT = '{ sensors(limit: 10) { timestamp temperature } }';
/** Mixed with a data field, introspection gets the data limits: 8 levels, over SYNCMESH_MAX_QUERY_DEPTH's 6. */
const DEEP = `{ ${'__schema { types { fields { type { ofType { ofType { ofType { name } } } } } } }'} sensors { timestamp } }`;

before(async () => {
  [a, b] = await Promise.all([startNode('met-a'), startNode('met-b')]);
  await addNode(a, { id: 'met-a', address: a.url, lat: 42.69, lon: 23.32, own_node: true });
  await addNode(b, { id: 'met-b', address: b.url, lat: 42.65, lon: 23.37, own_node: true });
  await addNode(a, { id: 'met-b', address: b.url, lat: 42.65, lon: 23.37 });
  await seed(a, [reading('2017-07-01T00:00:00Z', 20, 50, 93000), reading('2017-07-02T00:00:00Z', 22, 52, 93100)]);
  await seed(b, [reading('2017-07-03T00:00:00Z', 24, 54, 93200)]);
});
after(async () => {
  await Promise.all([a.close(), b.close()]);
});

const scrape = (n: TestNode): Promise<MetricSample[]> => scrapeMetrics(`${n.url}/metrics`);
const delta = (before: MetricSample[], now: MetricSample[], name: string, labels: Record<string, string>) =>
  metricValue(now, name, labels) - metricValue(before, name, labels);

test('metrics - requests by type and outcome, forwards per peer and cost refusals match what was sent', async () => {
  const [a0, b0] = await Promise.all([scrape(a), scrape(b)]);
  for (let i = 0; i < 3; i++) {
    const r = await post(a.url, { query: AGG, request_type: 'aggregate', use_meta_data: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data!['sensorsAggregate'].count, 3);
  }
  for (let i = 0; i < 2; i++) assert.equal((await post(a.url, { query: COLLECT, use_meta_data: true })).status, 200);
  const deep = await post(a.url, { query: DEEP, request_type: 'collect' });
  assert.equal(deep.body.errors?.[0]?.extensions.code, 'EDGE_SYNCMESH_QUERY_TOO_DEEP', JSON.stringify(deep.body));
  const badJson = await post(a.url, '{"query": ');
  assert.equal(badJson.status, 400);
  const [a1, b1] = await Promise.all([scrape(a), scrape(b)]);

  const req = 'edge_syncmesh_requests_total';
  assert.equal(delta(a0, a1, req, { type: 'aggregate', outcome: 'ok', caller: 'client' }), 3);
  assert.equal(delta(a0, a1, req, { type: 'collect', outcome: 'ok', caller: 'client' }), 2);
  assert.equal(delta(a0, a1, req, { type: 'collect', outcome: 'EDGE_SYNCMESH_QUERY_TOO_DEEP', caller: 'client' }), 1);
  assert.equal(delta(a0, a1, req, { type: 'query', outcome: 'EDGE_SYNCMESH_BAD_JSON', caller: 'client' }), 1);
  assert.equal(delta(a0, a1, 'edge_syncmesh_cost_refusals_total', { code: 'QUERY_TOO_DEEP' }), 1);
  // every query that used the registry was forwarded to met-b once, which answered each, signed
  assert.equal(delta(a0, a1, 'edge_syncmesh_forward_seconds_count', { peer: 'met-b', status: 'ok' }), 5);
  assert.ok(delta(a0, a1, 'edge_syncmesh_forward_seconds_sum', { peer: 'met-b', status: 'ok' }) > 0);
  assert.equal(delta(b0, b1, req, { type: 'aggregate', outcome: 'ok', caller: 'mesh' }), 3);
  assert.equal(delta(b0, b1, req, { type: 'collect', outcome: 'ok', caller: 'mesh' }), 2);
  assert.equal(metricValue(a1, 'edge_syncmesh_build_info', { node: 'met-a' }), 1);
});

test('metrics - the outbox depth and lag of a subscriber that is down', async () => {
  // a subscriber nobody answers for: its initial snapshot (the 2 readings, then its end) waits: 3 batches with the event below
  const down = await deadUrl();
  const r = await post(
    a.url,
    {
      request_type: 'meta',
      query: `mutation { addNode(node: {id: "met-down", address: ${JSON.stringify(down)}, lat: 42.7, lon: 23.3, subscribed: true}) { id } }`,
    },
    { sign: true },
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  // one event more from the listener: a third batch
  const doc = { _id: new ObjectId(), ...reading('2017-07-04T00:00:00Z', 25, 55, 93300) };
  const text = BSON.EJSON.stringify(
    { source: { node: 'met-a' }, events: [{ token: { _data: 'x' }, op: 'insert', db: 'syncmesh', coll: 'sensor_data', key: { _id: doc._id }, doc }] },
    { relaxed: true },
  );
  const ev = await fetch(`${a.url}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signFor(`${a.url}/events`, text, { origin: 'met-a' }) },
    body: text,
  });
  assert.equal(ev.status, 200, await ev.text());

  // the initial sync is a snapshot job that queues its batches as it reads (replication/snapshots.ts)
  let samples: MetricSample[] = [];
  await eventually('the snapshot batch, its end and the event are queued', async () => {
    samples = await scrape(a);
    return metricValue(samples, 'edge_syncmesh_outbox_batches', { subscriber: 'met-down' }) === 3;
  });
  assert.ok(metricValue(samples, 'edge_syncmesh_replication_lag_seconds', { subscriber: 'met-down' }) >= 0);
  // later scrapes see the same batches, older
  let later: MetricSample[] = [];
  await eventually('the lag passes 1 s', async () => {
    later = await scrape(a);
    return metricValue(later, 'edge_syncmesh_replication_lag_seconds', { subscriber: 'met-down' }) >= 1;
  });
  assert.equal(metricValue(later, 'edge_syncmesh_outbox_batches', { subscriber: 'met-down' }), 3);
});

test('metrics - errors are coded JSON: a POST, and a node with a read key scraped without it', async () => {
  const res = await fetch(`${a.url}/metrics`, { method: 'POST', body: '{}' });
  assert.equal(res.status, 405);
  const body = (await res.json()) as { errors: Array<{ extensions: { code: string; allowed: string[] } }> };
  assert.equal(body.errors[0]!.extensions.code, 'EDGE_SYNCMESH_METHOD');
  assert.deepEqual(body.errors[0]!.extensions.allowed, ['GET']);

  const key = 'metrics-test-read-key-0123456789abcdef0123';
  const c = await startNode('met-c', { SYNCMESH_READ_KEY: key });
  try {
    const refused = await fetch(`${c.url}/metrics`);
    assert.equal(refused.status, 401);
    assert.equal(
      ((await refused.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code,
      'EDGE_SYNCMESH_CREDENTIALS_REQUIRED',
    );
    const samples = await scrapeMetrics(`${c.url}/metrics`, { authorization: `Bearer ${key}` });
    assert.equal(metricValue(samples, 'edge_syncmesh_build_info', { node: 'met-c' }), 1);
  } finally {
    await c.close();
  }
});
