import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { post, reading, seed, startNode, type TestNode } from './harness.js';

let node: TestNode;

const DAY = [
  reading('2017-07-31T00:10:00Z', 20.5, 50, 93000),
  reading('2017-07-31T06:00:00Z', 18.25, 61, 93050),
  reading('2017-07-31T12:00:00Z', 30.75, 35, 93100),
  reading('2017-07-31T23:59:59Z', 22, 44, 93075, 2),
];
const OTHER_DAY = [reading('2017-07-30T12:00:00Z', 40, 10, 92000)];

before(async () => {
  node = await startNode('q1');
  await seed(node, [...DAY, ...OTHER_DAY]);
});
after(() => node.close());

const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

test('queries - the original Syncmesh benchmark body answers with the aggregate', async () => {
  const body = {
    query: '{sensors(start_time: "2017-07-31T00:00:00Z", end_time: "2017-07-31T23:59:59Z"){temperature humidity pressure}}',
    database: 'syncmesh',
    collection: 'sensor_data',
    request_type: 'aggregate',
    external_nodes: [],
  };
  const r = await post(node.url, body);
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.data, {
    sensors: [{ temperature: avg(DAY.map((d) => d.temperature)), humidity: avg(DAY.map((d) => d.humidity)), pressure: avg(DAY.map((d) => d.pressure)) }],
  });
});

test('queries - sensorsAggregate gives exact count, average, min, max and sum', async () => {
  const r = await post(node.url, {
    query:
      '{ a: sensorsAggregate(start_time: "2017-07-31T00:00:00", end_time: "2017-07-31T23:59:59") { count average_temperature min_temperature max_temperature sum_humidity average_pressure } }',
    request_type: 'aggregate',
  });
  assert.equal(r.status, 200);
  const t = DAY.map((d) => d.temperature);
  assert.deepEqual(r.body.data!['a'], {
    count: 4,
    average_temperature: avg(t),
    min_temperature: Math.min(...t),
    max_temperature: Math.max(...t),
    sum_humidity: DAY.reduce((s, d) => s + d.humidity, 0),
    average_pressure: avg(DAY.map((d) => d.pressure)),
  });
});

test('queries - aggregate fields selected through fragments are computed', async () => {
  const r = await post(node.url, {
    query:
      '{ sensorsAggregate(start_time: "2017-07-31T00:00:00", end_time: "2017-07-31T23:59:59") { count ...M ... on SensorAggregate { max_humidity } } } fragment M on SensorAggregate { min_pressure sum_temperature }',
    request_type: 'aggregate',
  });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.data!['sensorsAggregate'], {
    count: 4,
    min_pressure: Math.min(...DAY.map((d) => d.pressure)),
    sum_temperature: DAY.reduce((s, d) => s + d.temperature, 0),
    max_humidity: Math.max(...DAY.map((d) => d.humidity)),
  });
});

test('queries - sensor_id filters, and an empty range gives count 0 and null averages', async () => {
  const r = await post(node.url, {
    query:
      '{ s2: sensorsAggregate(sensor_id: 2) { count } none: sensorsAggregate(start_time: "2000-01-01", end_time: "2000-01-02") { count average_temperature } }',
  });
  assert.deepEqual(r.body.data, { s2: { count: 1 }, none: { count: 0, average_temperature: null } });
});

test('queries - collect returns readings in time order with only the asked fields', async () => {
  const r = await post(node.url, {
    query: '{ sensors(start_time: "2017-07-31T00:00:00Z", end_time: "2017-07-31T23:59:59Z", limit: 2) { timestamp temperature } }',
    request_type: 'collect',
  });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.data!['sensors'], [
    { timestamp: '2017-07-31T00:10:00.000Z', temperature: 20.5 },
    { timestamp: '2017-07-31T06:00:00.000Z', temperature: 18.25 },
  ]);
  assert.equal(r.body.extensions!['request_type'], 'collect');
});

test('queries - variables, fragments and aliases work', async () => {
  const r = await post(node.url, {
    query: 'query Q($s: DateTime!, $n: Int) { first: sensors(start_time: $s, limit: $n) { ...T } total: docEstimate } fragment T on Sensor { temperature }',
    variables: { s: '2017-07-31T00:00:00Z', n: 1 },
  });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.data, { first: [{ temperature: 20.5 }], total: 5 });
});

test('queries - sensor(_id) finds one reading', async () => {
  const list = await post(node.url, { query: '{ sensors(limit: 1) { _id temperature } }' });
  const id = list.body.data!['sensors'][0]._id as string;
  const r = await post(node.url, { query: `{ sensor(_id: "${id}") { _id temperature } missing: sensor(_id: "000000000000000000000000") { _id } }` });
  assert.deepEqual(r.body.data, { sensor: { _id: id, temperature: 40 }, missing: null });
});

test('queries - gzip answers for clients that accept it', async () => {
  const res = await fetch(node.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' },
    body: JSON.stringify({ query: '{ sensors { _id sensor_id location lat lon timestamp temperature humidity pressure } }' }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-encoding'), 'gzip');
  const body = (await res.json()) as { data: { sensors: unknown[] } };
  assert.equal(body.data.sensors.length, 5);
});

test('queries - health and readiness', async () => {
  const base = node.url.replace(/\/function\/syncmesh-fn$/, '');
  assert.equal((await fetch(`${base}/healthz`)).status, 200);
  const ready = await fetch(`${node.url}/readyz`);
  assert.equal(ready.status, 200);
  const body = (await ready.json()) as Record<string, any>;
  assert.deepEqual({ status: body['status'], node: body['node'] }, { status: 'ready', node: 'q1' });
  // replication progress: nothing subscribed, nothing held, no rounds (anti-entropy is off in tests)
  assert.deepEqual(body['replication']['subscribers'], {});
  assert.deepEqual(body['replication']['origins'], {});
  assert.deepEqual(body['replication']['snapshots'], []);
  assert.equal(body['replication']['anti_entropy']['interval_s'], 0);
});
