import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { post, startNode, type TestNode } from './harness.js';

let a: TestNode;
let b: TestNode;

before(async () => {
  [a, b] = await Promise.all([startNode('m1'), startNode('m2')]);
});
after(async () => {
  await Promise.all([a.close(), b.close()]);
});

const count = async (n: TestNode) => (await post(n.url, { query: '{ sensorsAggregate { count } }' })).body.data!['sensorsAggregate'].count as number;

test('mutations - addSensors, update, deleteSensor and deleteInTimeRange change this node only', async () => {
  const add = await post(
    a.url,
    {
      query: `mutation { addSensors(sensors: [
      {sensor_id: 7, lat: 42.7, lon: 23.3, timestamp: "2017-07-01T10:00:00", temperature: 21.5, humidity: 40, pressure: 93000},
      {sensor_id: 7, lat: 42.7, lon: 23.3, timestamp: "2017-07-01T11:00:00", temperature: 22.5, humidity: 41, pressure: 93010},
      {sensor_id: 7, lat: 42.7, lon: 23.3, timestamp: "2017-07-02T11:00:00", temperature: 23.5}
    ]) }`,
      external_nodes: [b.url], // mutations are never forwarded
    },
    { write: true },
  );
  assert.equal(add.status, 200, JSON.stringify(add.body));
  const ids = add.body.data!['addSensors'] as string[];
  assert.equal(ids.length, 3);
  assert.equal(await count(a), 3);
  assert.equal(await count(b), 0);

  const upd = await post(
    a.url,
    { query: `mutation { update(_id: "${ids[0]}", sensor: {temperature: 25}) { _id temperature humidity timestamp } }` },
    { write: true },
  );
  assert.deepEqual(upd.body.data!['update'], { _id: ids[0], temperature: 25, humidity: 40, timestamp: '2017-07-01T10:00:00.000Z' });

  const del = await post(
    a.url,
    { query: `mutation { deleteSensor(_id: "${ids[1]}") { _id } again: deleteSensor(_id: "${ids[1]}") { _id } }` },
    { write: true },
  );
  assert.deepEqual(del.body.data, { deleteSensor: { _id: ids[1] }, again: null });

  const range = await post(
    a.url,
    { query: 'mutation { deleteInTimeRange(start_time: "2017-07-02T00:00:00Z", end_time: "2017-07-02T23:59:59Z") }' },
    { write: true },
  );
  assert.equal(range.body.data!['deleteInTimeRange'], 1);
  assert.equal(await count(a), 1);

  const agg = await post(a.url, { query: '{ sensorsAggregate { count average_temperature average_pressure } }' });
  assert.deepEqual(agg.body.data!['sensorsAggregate'], { count: 1, average_temperature: 25, average_pressure: 93000 });
});

test('mutations - a reading without a metric does not dilute that metric', async () => {
  await post(
    b.url,
    {
      query: `mutation { addSensors(sensors: [
      {lat: 1, lon: 1, timestamp: "2017-07-05T00:00:00Z", temperature: 10, humidity: 50},
      {lat: 1, lon: 1, timestamp: "2017-07-05T01:00:00Z", temperature: 20}
    ]) }`,
    },
    { write: true },
  );
  const r = await post(b.url, { query: '{ sensorsAggregate { count average_temperature average_humidity average_pressure } }' });
  assert.deepEqual(r.body.data!['sensorsAggregate'], { count: 2, average_temperature: 15, average_humidity: 50, average_pressure: null });
});

test('mutations - a node whose MongoDB is gone answers 503 and stays up', async () => {
  const lonely = await startNode('m-nodb');
  try {
    if (!lonely.db) return; // with MONGODB_URI the database cannot be stopped from here
    await lonely.db.stop();
    const r = await post(lonely.url, { query: 'mutation { addSensors(sensors: [{lat: 1, lon: 1, timestamp: "2017-07-01"}]) }' }, { write: true });
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.equal(r.body.errors![0]!.extensions.code, 'EDGE_SYNCMESH_DB_UNAVAILABLE');
    const ready = await fetch(`${lonely.url}/readyz`);
    assert.equal(ready.status, 503);
  } finally {
    await lonely.close();
  }
});
