/**
 * Resync requests: lost history (a stored token the server cannot resume from). Also the event
 * shapes: inserts, updates, replaces and deletes replicate as events, with no resync.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, ObjectId } from 'mongodb';
import { resolveMongo, type MongoTarget } from '@syncmesh-edge/mongo-test-server';
import { startFunctionStandIn } from '../../src/testing/standin.js';
import { isStreaming, listenerUri, SECRET, startListener } from '../../src/testing/harness.js';

let mongo: MongoTarget;
let client: MongoClient;

before(async () => {
  mongo = await resolveMongo();
  client = await MongoClient.connect(listenerUri(mongo.uri, mongo.kind));
});

after(async () => {
  if (mongo.kind === 'real') for (const d of ['lr_lost', 'lr_lost_meta', 'lr_shapes', 'lr_shapes_meta']) await client.db(d).dropDatabase();
  await client?.close();
  await mongo?.stop();
});

const env = (name: string, url: string) => ({
  MONGODB_URI: listenerUri(mongo.uri, mongo.kind),
  LISTENER_DATABASE: `lr_${name}`,
  LISTENER_META_DATABASE: `lr_${name}_meta`,
  SYNCMESH_FUNCTION_URL: url,
  LISTENER_NODE_ID: 'node-a',
  LISTENER_POLL_MAX_MS: '50',
});

test('resync - a stored token the server cannot resume from requests a history-lost resync', async () => {
  const fn = await startFunctionStandIn(SECRET, 0, 'node-a');
  // A token in real MongoDB's format from a server that no longer has it: the test server
  // cannot resume from it, as a real MongoDB cannot resume from a token older than its oplog.
  await client
    .db('lr_lost_meta')
    .collection<{ _id: string; token: { _data: string }; updatedAt: Date }>('listener_state')
    .insertOne({ _id: 'lr_lost.sensor_data', token: { _data: '8265F1A3E2000000012B022C0100296E5A1004' }, updatedAt: new Date() });
  const listener = startListener(env('lost', fn.url));
  try {
    const line = await listener.waitForLog((l) => l['code'] === 'EDGE_LISTENER_HISTORY_LOST', 30_000, 'history-lost log line');
    assert.match(line.msg, /history lost/);
    await fn.waitFor(() => fn.resyncs.length === 1, 10_000, 'resync request');
    assert.deepEqual(fn.resyncs[0], { db: 'lr_lost', coll: 'sensor_data', reason: 'history-lost' });
    await listener.waitForLog(isStreaming, 10_000, 'streaming again');
    const { insertedId } = await client.db('lr_lost').collection('sensor_data').insertOne({ n: 1 });
    await fn.waitFor(() => fn.events.length === 1, 10_000, 'events flow after the resync');
    assert.ok((fn.events[0]!.key._id as ObjectId).equals(insertedId));
  } finally {
    await listener.kill('SIGTERM');
    await fn.close();
  }
});

test('resync - inserts, updates, replaces and deletes replicate as events, with no resync', async () => {
  const fn = await startFunctionStandIn(SECRET, 0, 'node-a');
  const listener = startListener(env('shapes', fn.url));
  try {
    await listener.waitForLog(isStreaming, 30_000, 'stream open');
    await fn.waitFor(() => fn.resyncs.length === 1, 10_000, 'first-start resync');
    assert.equal(fn.resyncs[0]!.reason, 'no-position');
    const coll = client.db('lr_shapes').collection('sensor_data');
    const _id = new ObjectId();
    const at = new Date('2017-07-01T00:00:00Z');
    await coll.insertOne({ _id, sensor_id: 2266, timestamp: at, temperature: 23.5, humidity: 40 });
    await fn.waitFor(() => fn.events.length === 1, 10_000, 'the insert event');
    await coll.updateOne({ _id }, { $set: { temperature: 24 }, $unset: { humidity: '' } });
    // read before the next write: the looked-up document is the updated one
    await fn.waitFor(() => fn.events.length === 2, 10_000, 'the update event');
    await coll.replaceOne({ _id }, { sensor_id: 2266, timestamp: at, temperature: 25 });
    await coll.deleteOne({ _id });
    await fn.waitFor(() => fn.events.some((e) => e.op === 'delete'), 10_000, 'the delete event');
    assert.deepEqual(
      fn.events.map((e) => e.op),
      ['insert', 'update', 'replace', 'delete'],
    );
    const [ins, upd, rep, del] = fn.events as [(typeof fn.events)[0], (typeof fn.events)[0], (typeof fn.events)[0], (typeof fn.events)[0]];
    for (const e of [ins, upd, rep, del]) {
      assert.ok((e.key._id as ObjectId).equals(_id), `${e.op} names the document`);
      assert.deepEqual({ db: e.db, coll: e.coll }, { db: 'lr_shapes', coll: 'sensor_data' });
    }
    assert.ok(ins.doc?.['timestamp'] instanceof Date && ins.doc['timestamp'].getTime() === at.getTime());
    assert.deepEqual(upd.update, { updatedFields: { temperature: 24 }, removedFields: ['humidity'] });
    assert.equal(upd.doc?.['temperature'], 24);
    assert.ok(!('humidity' in upd.doc!));
    assert.equal(rep.doc?.['temperature'], 25);
    assert.equal(del.doc, null);
    assert.equal(fn.resyncs.length, 1, 'no resync besides the first start');
    assert.ok(!listener.lines.some((l) => l['code'] === 'EDGE_LISTENER_MALFORMED_EVENT'));
  } finally {
    await listener.kill('SIGTERM');
    await fn.close();
  }
});
