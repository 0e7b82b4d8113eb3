import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BSON, ObjectId } from 'mongodb';
import { replicateJson } from './outbox.js';

test('outbox - a /replicate body built from cached batch encodings is the EJSON of the body', () => {
  const batches = [
    {
      _id: new ObjectId(),
      db: 'syncmesh',
      coll: 'sensor_data',
      seq: 1,
      ops: [{ op: 'upsert' as const, doc: { _id: new ObjectId(), timestamp: new Date('2017-07-01T00:00:00Z'), temperature: 21.5 } }],
    },
    { _id: new ObjectId(), db: 'syncmesh', coll: 'sensor_data', seq: 2, ops: [{ op: 'delete' as const, id: 'a"b' }] },
  ];
  const body = { origin: 'node-"1', batches: batches.map(({ _id, db, coll, seq, ops }) => ({ id: _id.toHexString(), db, coll, seq, ops })) };
  const expected = BSON.EJSON.stringify(body, { relaxed: true });
  assert.equal(replicateJson('node-"1', batches), expected);
  assert.equal(replicateJson('node-"1', batches), expected, 'the second call uses the cache');
  assert.deepEqual(BSON.EJSON.parse(replicateJson('x', []), { relaxed: true }), { origin: 'x', batches: [] });
  assert.deepEqual(BSON.EJSON.parse(replicateJson('x', [], { waitMs: 4000, retry: true }), { relaxed: true }), {
    origin: 'x',
    wait_ms: 4000,
    retry: true,
    batches: [],
  });
});
