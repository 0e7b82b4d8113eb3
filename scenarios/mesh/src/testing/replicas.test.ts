import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ObjectId } from 'mongodb';
import { replicaId } from '@syncmesh-edge/syncmesh-fn/replica-id';
import { replicaDiff } from './replicas.js';

const t = new Date(Date.UTC(2017, 8, 1));
const a = { _id: new ObjectId(), timestamp: t, temperature: 20, humidity: 50 };
const b = { _id: 'given', timestamp: t, temperature: 21 };
const replica = (r: Record<string, unknown>, changes: Record<string, unknown> = {}) => ({
  ...r,
  _id: replicaId('node-1', r['_id']),
  _origin: 'node-1',
  _origin_id: r['_id'],
  _rev: 7,
  ...changes,
});

test('replicaDiff - replicas equal to the readings (ObjectId and string _ids, any order) differ in nothing', () => {
  assert.deepEqual(replicaDiff('node-1', [a, b], [replica(b), replica(a)]), { readings: 2, replicas: 2, problems: [] });
});

test('replicaDiff - a stale field, a field a replace dropped, a missing, doubled or orphaned replica are each named', () => {
  const { humidity: _, ...aWithoutHumidity } = a;
  const stray = { _id: 'gone', timestamp: t };
  const cases: [Record<string, unknown>[], RegExp][] = [
    [[replica(a, { temperature: 19 }), replica(b)], /replica .*19.* != reading/],
    [[replica(aWithoutHumidity), replica(b)], /!= reading/],
    [[replica(a, { humidity: 50, extra: 1 }), replica(b)], /!= reading/],
    [[replica(a)], /"given": no replica/],
    [[replica(a), replica(b), replica(b)], /held twice/],
    [[replica(a), replica(b), replica(stray)], /a replica of a reading node-1 does not hold/],
    [[replica(a), replica(b, { _origin_id: 'other' })], /_origin_id other/],
  ];
  for (const [replicas, want] of cases) {
    const d = replicaDiff('node-1', [a, b], replicas);
    assert.equal(d.problems.length, 1, JSON.stringify(d.problems));
    assert.match(d.problems[0]!, want);
  }
});

test('replicaDiff - at most `limit` lines, then how many more', () => {
  const many = Array.from({ length: 15 }, (_, i) => ({ _id: `r${i}`, timestamp: t }));
  const d = replicaDiff('node-1', many, [], 10);
  assert.equal(d.problems.length, 11);
  assert.equal(d.problems[10], '… 5 more');
});
