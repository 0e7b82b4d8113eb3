import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Double, Int32, ObjectId } from 'mongodb';
import { asReading, bucketOf, bucketRange, DigestBuilder, differingBuckets, NO_TIMESTAMP, readingHash } from './digest.js';

const reading = (id: ObjectId, ts: string, temperature: unknown) => ({ _id: id, sensor_id: 1, timestamp: new Date(ts), temperature, humidity: 50 });

test('digest - bucket keys and ranges per day and hour (UTC); readings without a date fall in none', () => {
  assert.equal(bucketOf(new Date('2017-07-01T13:45:00Z'), 'day'), '2017-07-01');
  assert.equal(bucketOf(new Date('2017-07-01T13:45:00Z'), 'hour'), '2017-07-01T13');
  assert.equal(bucketOf('2017-07-01', 'day'), NO_TIMESTAMP);
  assert.equal(bucketOf(undefined, 'day'), NO_TIMESTAMP);
  assert.deepEqual(bucketRange('2017-07-01', 'day'), { from: new Date('2017-07-01T00:00:00Z'), to: new Date('2017-07-02T00:00:00Z') });
  assert.deepEqual(bucketRange('2017-07-01T13', 'hour'), { from: new Date('2017-07-01T13:00:00Z'), to: new Date('2017-07-01T14:00:00Z') });
  assert.equal(bucketRange(NO_TIMESTAMP, 'day'), null);
  assert.throws(() => bucketRange('2017-13-01', 'day'), /not a day bucket/);
  assert.throws(() => bucketRange('2017-07-01', 'hour'), /not a hour bucket/);
});

test('digest - a reading and its replica hash alike; key order and int/double do not matter, content does', () => {
  const id = new ObjectId();
  const r = reading(id, '2017-07-01T00:00:00Z', 20);
  const replica = {
    humidity: 50,
    temperature: new Double(20),
    timestamp: r.timestamp,
    sensor_id: new Int32(1),
    _id: `n1|x`,
    _origin: 'n1',
    _origin_id: id,
    _rev: 7,
  };
  assert.equal(readingHash(asReading(replica)), readingHash(r));
  assert.notEqual(readingHash({ ...r, temperature: 20.5 }), readingHash(r));
  assert.notEqual(readingHash({ ...r, _id: new ObjectId() }), readingHash(r));
});

test('digest - bucket digests do not depend on order and name the buckets that differ', () => {
  const docs = [0, 1, 2, 3].map((i) => reading(new ObjectId(), `2017-07-0${1 + (i % 2)}T0${i}:00:00Z`, 20 + i));
  const a = new DigestBuilder('day');
  const b = new DigestBuilder('day');
  for (const d of docs) a.add(d);
  for (const d of [...docs].reverse()) b.add(d);
  assert.deepEqual(a.result(), b.result());
  assert.equal(a.result()['2017-07-01']!.count, 2);
  const c = new DigestBuilder('day');
  for (const d of docs.slice(1)) c.add(d); // one of 07-01 missing
  c.add({ ...docs[1]!, temperature: 99 }); // and one of 07-02 changed (counted twice now)
  assert.deepEqual(differingBuckets(a.result(), c.result()), ['2017-07-01', '2017-07-02']);
  assert.deepEqual(differingBuckets(a.result(), {}), ['2017-07-01', '2017-07-02']);
});
