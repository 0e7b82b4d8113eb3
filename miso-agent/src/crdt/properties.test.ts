/**
 * Property tests over random operation histories on 2-5 replicas, for every
 * type: lattice laws of join, and convergence when deltas arrive in any order,
 * duplicated, grouped and interleaved with full states.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { allTypes, fcParams, historyArbitrary, opArbitraries, REPLICAS, sequentialModel, simulate } from './testkit.js';
import type { Json } from './types.js';

for (const [name, t] of allTypes()) {
  describe(`${name} properties`, () => {
    /** Three states reached by random histories, plus the deltas seen on the way. */
    const threeStates = historyArbitrary(name).map((h) => {
      const { states, deltas } = simulate(t, { ...h, replicas: Math.max(3, h.replicas) }, false);
      return { states, deltas };
    });

    test(`${name} - join is commutative, associative and idempotent`, () => {
      fc.assert(
        fc.property(threeStates, fc.nat(), fc.nat(), fc.nat(), ({ states, deltas }, i, j, k) => {
          const pool = [...states, ...deltas];
          const a = pool[i % pool.length];
          const b = pool[j % pool.length];
          const c = pool[k % pool.length];
          const eq = (x: unknown, y: unknown): void => assert.ok(t.equals(x, y), 'states differ');
          eq(t.join(a, b), t.join(b, a));
          eq(t.join(t.join(a, b), c), t.join(a, t.join(b, c)));
          eq(t.join(a, a), a);
          eq(t.join(a, t.empty()), a);
          // join is an upper bound: joining either input again changes nothing.
          eq(t.join(t.join(a, b), a), t.join(a, b));
        }),
        fcParams(),
      );
    });

    test(`${name} - deltas in any order, duplicated, grouped or as full states converge`, () => {
      fc.assert(
        fc.property(historyArbitrary(name), (h) => {
          const { states, deltas } = simulate(t, h, true);
          let all = t.empty();
          for (const d of deltas) all = t.join(all, d);
          const first = states[0];
          const expected = t.encode(all);
          for (const s of states) {
            assert.deepEqual(t.value(s), t.value(first));
            assert.deepEqual(t.encode(s), expected, 'encodings differ between replicas');
            assert.ok(t.equals(s, all));
          }
        }),
        fcParams(),
      );
    });

    test(`${name} - apply returns join(state, delta) and encodings round-trip`, () => {
      fc.assert(
        fc.property(threeStates, opArbitraries[name], fc.nat(4), ({ states }, op, r) => {
          const s = states[r % states.length];
          const [next, delta] = t.apply(s, op, REPLICAS[r] as string);
          assert.ok(t.equals(next, t.join(s, delta)), 'apply result is not join(state, delta)');
          for (const x of [s, next, delta]) {
            const back = t.decode(t.encode(x));
            assert.ok(t.equals(back, x), 'encode/decode round trip');
            assert.deepEqual(t.value(back), t.value(x));
          }
        }),
        fcParams(),
      );
    });

    test(`${name} - without concurrency the value follows the sequential specification`, () => {
      const op =
        name === 'lwwregister' ? fc.record({ op: fc.constant('set'), value: fc.constantFrom<Json>('a', 1, { b: [2], a: null }) }) : opArbitraries[name];
      fc.assert(
        fc.property(fc.array(fc.tuple(fc.nat(4), op), { maxLength: 30 }), fc.integer({ min: 2, max: 5 }), (ops, n) => {
          const states = Array.from({ length: n }, () => t.empty());
          for (const [at, o] of ops) {
            const [next, delta] = t.apply(states[at % n], o, REPLICAS[at % n] as string);
            states[at % n] = next;
            for (let i = 0; i < n; i++) if (i !== at % n) states[i] = t.join(states[i], delta);
          }
          const expected = sequentialModel(
            name,
            ops.map(([, o]) => o),
          );
          for (const s of states) assert.deepEqual(t.value(s), expected);
        }),
        fcParams(),
      );
    });
  });
}
