import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fromWire, ReplicaState, toWire } from './state.js';
import { MisoError } from '../errors.js';

const value = (s: ReplicaState, fn: string, o: string, n: string) => {
  const e = s.get(fn, o, n);
  return e?.state == null ? undefined : (JSON.parse(JSON.stringify(e.state)) as unknown);
};

test('state - applyLocal creates a CRDT and returns a delta that rebuilds it elsewhere', () => {
  const a = new ReplicaState();
  const b = new ReplicaState();
  const { delta } = a.applyLocal('f', 'o', 'c', 'gcounter', { op: 'add', n: 3 }, 'a.1');
  assert.equal(b.merge('f', 'o', 'c', delta), true);
  assert.deepEqual(value(a, 'f', 'o', 'c'), value(b, 'f', 'o', 'c'));
  assert.equal(b.merge('f', 'o', 'c', delta), false, 'merging the same delta twice changes nothing');
});

test('state - a name keeps its type: another type is EDGE_MISO_WRONG_TYPE', () => {
  const s = new ReplicaState();
  s.applyLocal('f', 'o', 'c', 'gcounter', { op: 'add', n: 1 }, 'r');
  assert.throws(
    () => s.applyLocal('f', 'o', 'c', 'pncounter', { op: 'add', n: 1 }, 'r'),
    (e: unknown) => e instanceof MisoError && e.code === 'EDGE_MISO_WRONG_TYPE' && /is a gcounter, not a pncounter/.test(e.message),
  );
});

test('state - a failed op leaves no entry behind', () => {
  const s = new ReplicaState();
  assert.throws(() => s.applyLocal('f', 'o', 'c', 'gcounter', { op: 'nope' }, 'r'));
  assert.equal(s.get('f', 'o', 'c'), undefined);
  assert.equal(s.size, 0);
});

test('state - delete wins over a concurrent op and the name can be re-created', () => {
  const a = new ReplicaState();
  const b = new ReplicaState();
  const first = a.applyLocal('f', 'o', 'c', 'gcounter', { op: 'add', n: 1 }, 'a');
  b.merge('f', 'o', 'c', first.delta);
  const tomb = a.deleteLocal('f', 'o', 'c')!;
  const concurrent = b.applyLocal('f', 'o', 'c', 'gcounter', { op: 'add', n: 5 }, 'b');
  a.merge('f', 'o', 'c', concurrent.delta);
  b.merge('f', 'o', 'c', tomb);
  assert.equal(a.get('f', 'o', 'c')!.state, null);
  assert.equal(b.get('f', 'o', 'c')!.state, null);
  // Re-created at the new generation, with another type.
  const again = b.applyLocal('f', 'o', 'c', 'orset', { op: 'add', value: 'x' }, 'b');
  a.merge('f', 'o', 'c', again.delta);
  assert.equal(a.get('f', 'o', 'c')!.type, 'orset');
  assert.equal(a.rootDigest('f'), b.rootDigest('f'));
});

test('state - concurrent creation with two types converges on the first type name', () => {
  const a = new ReplicaState();
  const b = new ReplicaState();
  const da = a.applyLocal('f', 'o', 'x', 'pncounter', { op: 'add', n: 1 }, 'a').delta;
  const db = b.applyLocal('f', 'o', 'x', 'gcounter', { op: 'add', n: 1 }, 'b').delta;
  a.merge('f', 'o', 'x', db);
  b.merge('f', 'o', 'x', da);
  assert.equal(a.get('f', 'o', 'x')!.type, 'gcounter');
  assert.equal(b.get('f', 'o', 'x')!.type, 'gcounter');
  assert.equal(a.rootDigest('f'), b.rootDigest('f'));
});

test('state - wire encoding round-trips states and tombstones', () => {
  const s = new ReplicaState();
  s.applyLocal('f', 'o', 'm', 'ormap', { op: 'set', key: 'k', value: { a: [1, 2] } }, 'r');
  s.applyLocal('f', 'o', 'd', 'ewflag', { op: 'enable' }, 'r');
  s.deleteLocal('f', 'o', 'd');
  const t = new ReplicaState();
  for (const [o, n, e] of s.entries('f')) t.merge('f', o, n, fromWire(toWire(o, n, e)));
  assert.equal(t.rootDigest('f'), s.rootDigest('f'));
  assert.equal(t.get('f', 'o', 'd')!.gen, 1);
});

test('state - root digests are equal iff contents are (property, seeded)', () => {
  const op = fc.record({
    replica: fc.constantFrom('a', 'b', 'c'),
    name: fc.constantFrom('x', 'y'),
    n: fc.integer({ min: 0, max: 5 }),
    del: fc.boolean(),
  });
  fc.assert(
    fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
      const reps = { a: new ReplicaState(), b: new ReplicaState(), c: new ReplicaState() };
      const deltas: [string, unknown][] = [];
      for (const o of ops) {
        const s = reps[o.replica as 'a'];
        if (o.del) {
          const t = s.deleteLocal('f', 'obj', o.name);
          if (t) deltas.push([o.name, t]);
        } else {
          deltas.push([o.name, s.applyLocal('f', 'obj', o.name, 'gcounter', { op: 'add', n: o.n }, o.replica).delta]);
        }
      }
      // Deliver every delta everywhere in a different order per replica.
      for (const [i, s] of Object.values(reps).entries()) {
        const order = i % 2 === 0 ? deltas : [...deltas].reverse();
        for (const [name, d] of order) s.merge('f', 'obj', name, d as never);
      }
      const roots = Object.values(reps).map((s) => s.rootDigest('f'));
      assert.equal(new Set(roots).size, 1);
    }),
    { seed: 42, numRuns: 200 },
  );
});
