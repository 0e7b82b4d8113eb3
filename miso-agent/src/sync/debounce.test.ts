import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Debouncer, joinEntry } from './debounce.js';
import { type Entry, ReplicaState } from './state.js';

test('debounce - deltas to one CRDT within the interval become one joined entry', () => {
  const s = new ReplicaState();
  const d = new Debouncer(200);
  for (let i = 0; i < 5; i++) d.add('f', 'o', 'c', s.applyLocal('f', 'o', 'c', 'gcounter', { op: 'add', n: 1 }, 'r').delta, 1000 + i);
  assert.equal(d.nextDeadline(), 1200);
  assert.deepEqual(d.takeDue(1199), []);
  const due = d.takeDue(1200);
  assert.equal(due.length, 1);
  assert.equal(due[0]!.entries.length, 1);
  const t = new ReplicaState();
  t.merge('f', 'o', 'c', due[0]!.entries[0]!.delta);
  assert.equal(t.rootDigest('f'), s.rootDigest('f'));
  assert.equal(d.size, 0);
});

test('debounce - keys keep their own deadlines and are grouped by function', () => {
  const s = new ReplicaState();
  const d = new Debouncer(100);
  d.add('f', 'o', 'a', s.applyLocal('f', 'o', 'a', 'gcounter', { op: 'add', n: 1 }, 'r').delta, 0);
  d.add('g', 'o', 'b', s.applyLocal('g', 'o', 'b', 'gcounter', { op: 'add', n: 1 }, 'r').delta, 50);
  d.add('f', 'o', 'c', s.applyLocal('f', 'o', 'c', 'gcounter', { op: 'add', n: 1 }, 'r').delta, 60);
  assert.deepEqual(
    d.takeDue(100).map((b) => [b.fn, b.entries.map((e) => e.name)]),
    [['f', ['a']]],
  );
  assert.deepEqual(
    d.takeDue(160).map((b) => [b.fn, b.entries.map((e) => e.name)]),
    [
      ['g', ['b']],
      ['f', ['c']],
    ],
  );
});

test('debounce - interval 0 is due at once; a tombstone replaces pending deltas', () => {
  const s = new ReplicaState();
  const d = new Debouncer(0);
  d.add('f', 'o', 'c', s.applyLocal('f', 'o', 'c', 'gcounter', { op: 'add', n: 1 }, 'r').delta, 10);
  d.add('f', 'o', 'c', s.deleteLocal('f', 'o', 'c')!, 10);
  const [b] = d.takeDue(10);
  assert.equal(b!.entries[0]!.delta.state, null);
  assert.equal(b!.entries[0]!.delta.gen, 1);
});

test('debounce - many deltas of an observed-remove CRDT join to the same entry as one by one, also across a delete', () => {
  for (const [type, op] of [
    ['orset', (i: number) => ({ op: i % 3 ? 'add' : 'remove', value: `v${i % 7}` })],
    ['ormap', (i: number) => (i % 5 ? { op: 'set', key: `k${i % 4}`, value: i } : { op: 'remove', key: `k${i % 4}` })],
  ] as const) {
    for (const count of [1, 2, 3, 64, 100, 257]) {
      const s = new ReplicaState();
      const d = new Debouncer(1000);
      let sequential: Entry | undefined;
      for (let i = 0; i < count; i++) {
        const delta = i === Math.floor(count / 2) && count > 2 ? s.deleteLocal('f', 'o', 'c') : s.applyLocal('f', 'o', 'c', type, op(i), 'r').delta;
        if (!delta) continue;
        d.add('f', 'o', 'c', delta, 0);
        sequential = sequential ? joinEntry(sequential, delta) : delta;
      }
      const [b] = d.takeDue(1000);
      const joined = b!.entries[0]!.delta;
      const t = new ReplicaState();
      t.merge('f', 'o', 'c', joined);
      assert.equal(t.rootDigest('f'), s.rootDigest('f'), `${type}, ${count} deltas: the joined delta rebuilds the state`);
      const u = new ReplicaState();
      u.merge('f', 'o', 'c', sequential!);
      assert.equal(u.rootDigest('f'), t.rootDigest('f'), `${type}, ${count} deltas: same entry as joining one by one`);
    }
  }
});
