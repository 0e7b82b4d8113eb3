import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BSON, ObjectId } from 'mongodb';
import { normaliseChange, NO_RESUME_TOKEN_MESSAGE, type ChangeEnvelope } from './events.js';
import { loadFixture } from './testing/fixtures.js';

const ns = { db: 'syncmesh', coll: 'sensor_data' };
const id = new ObjectId('65f1a3e2c7b8a9d0e1f2a3b4');

function eventOf(name: string): ChangeEnvelope {
  const n = normaliseChange(loadFixture(name), ns);
  assert.equal(n.kind, 'event', `${name} should normalise to an event, got ${JSON.stringify(n)}`);
  return (n as { event: ChangeEnvelope }).event;
}

test('events - MongoDB 7.0 insert carries key and the full document', () => {
  const e = eventOf('mongodb-7.0-insert');
  assert.equal(e.op, 'insert');
  assert.deepEqual(e.key, { _id: id });
  assert.equal(e.db, 'syncmesh');
  assert.equal(e.coll, 'sensor_data');
  assert.deepEqual(e.token, { _data: '8265F1A3E2000000012B022C0100296E5A10046B5D3E1F9C4A4C3A8E2F7D6B5A4C3B2A46645F696400646565F1A3E2C7B8A9D0E1F2A3B40004' });
  assert.ok(e.doc);
  assert.ok(e.doc['timestamp'] instanceof Date);
  assert.equal(e.update, undefined);
});

test('events - MongoDB 7.0 update carries updated/removed fields and the looked-up document', () => {
  const e = eventOf('mongodb-7.0-update');
  assert.equal(e.op, 'update');
  assert.deepEqual(e.key, { _id: id });
  assert.deepEqual(e.update, { updatedFields: { temperature: 24.1, 'tags.0': 'calibrated' }, removedFields: ['humidity'] });
  assert.equal(e.doc?.['temperature'], 24.1);
});

test('events - update whose document was deleted before the lookup has doc null', () => {
  const e = eventOf('mongodb-7.0-update-after-delete');
  assert.equal(e.op, 'update');
  assert.equal(e.doc, null);
  assert.deepEqual(e.update?.removedFields, []);
});

test('events - MongoDB 4.4 update (no wallTime, no truncatedArrays) normalises the same way', () => {
  const e = eventOf('mongodb-4.4-update');
  assert.equal(e.op, 'update');
  assert.deepEqual(e.key, { _id: new ObjectId('62f2a6c8b1c2d3e4f5a6b7c8') });
  assert.deepEqual(e.update, { updatedFields: { temperature: 19.5 }, removedFields: [] });
});

test('events - replace carries the new document', () => {
  const e = eventOf('mongodb-7.0-replace');
  assert.equal(e.op, 'replace');
  assert.deepEqual(e.key, { _id: id });
  assert.equal(e.doc?.['temperature'], 21);
});

test('events - delete has the key and no document', () => {
  const e = eventOf('mongodb-7.0-delete');
  assert.deepEqual({ op: e.op, key: e.key, doc: e.doc }, { op: 'delete', key: { _id: id }, doc: null });
});

test('events - a sharded documentKey keeps only _id', () => {
  const e = eventOf('mongodb-4.4-delete-sharded');
  assert.deepEqual(e.key, { _id: new ObjectId('62f2a6c8b1c2d3e4f5a6b7c8') });
});

test('events - drop asks for a resync and invalidate reopens the stream', () => {
  const drop = normaliseChange(loadFixture('mongodb-7.0-drop'), ns);
  assert.equal(drop.kind, 'resync');
  assert.equal(drop.kind === 'resync' && drop.reason, 'collection-dropped');
  assert.equal(normaliseChange(loadFixture('mongodb-7.0-invalidate'), ns).kind, 'invalidate');
});

test('events - test server insert and delete are correct events', () => {
  const ins = eventOf('test-server-insert');
  assert.equal(ins.op, 'insert');
  assert.deepEqual(ins.key, { _id: new ObjectId('6b0180a1c2d3e4f5a6b7c8d9') });
  assert.equal(ins.db, 'syncmesh');
  const del = eventOf('test-server-delete');
  assert.deepEqual({ op: del.op, key: del.key }, { op: 'delete', key: { _id: new ObjectId('6b0180a1c2d3e4f5a6b7c8d9') } });
});

test('events - test server update is an update event with its description and the looked-up document', () => {
  const upd = eventOf('test-server-update');
  assert.equal(upd.op, 'update');
  assert.deepEqual(upd.key, { _id: new ObjectId('6b0180a1c2d3e4f5a6b7c8d9') });
  assert.deepEqual(upd.update, { updatedFields: { temperature: 24.1 }, removedFields: ['humidity'] });
  assert.equal(upd.doc?.['temperature'], 24.1);
  assert.ok(!('humidity' in (upd.doc ?? {})));
});

test('events - test server replace is a replace event with the new document', () => {
  const rep = eventOf('test-server-replace');
  assert.equal(rep.op, 'replace');
  assert.deepEqual(rep.key, { _id: new ObjectId('6b0180a1c2d3e4f5a6b7c8d9') });
  assert.equal(rep.doc?.['temperature'], 21);
});

test('events - an update without documentKey._id (mongo-java-server 1.47 alone: the update spec in documentKey) becomes a resync', () => {
  const n = normaliseChange(loadFixture('mongo-java-server-1.47-update'), ns);
  assert.equal(n.kind, 'resync');
  assert.equal(n.kind === 'resync' && n.reason, 'malformed-update');
  assert.deepEqual(n.token, { _data: '6b01728900000002' });
});

test('events - a replace reported as an update without updateDescription (mongo-java-server 1.47 alone) becomes a resync', () => {
  const n = normaliseChange(loadFixture('mongo-java-server-1.47-replace'), ns);
  assert.equal(n.kind, 'resync');
});

test('events - unknown operation types are skipped but keep their token', () => {
  const n = normaliseChange({ _id: { _data: '82AA' }, operationType: 'createIndexes', ns }, ns);
  assert.deepEqual({ kind: n.kind, token: n.token }, { kind: 'skip', token: { _data: '82AA' } });
});

test('events - a change without resume token is refused', () => {
  assert.throws(() => normaliseChange({ operationType: 'insert' }, ns), { message: NO_RESUME_TOKEN_MESSAGE });
});

test('events - the envelope survives relaxed EJSON with ObjectId and Date intact', () => {
  const e = eventOf('mongodb-7.0-insert');
  const back = BSON.EJSON.parse(BSON.EJSON.stringify(e, { relaxed: true }), { relaxed: true }) as ChangeEnvelope;
  assert.ok((back.key._id as ObjectId).equals(id));
  assert.ok(back.doc?.['timestamp'] instanceof Date);
});
