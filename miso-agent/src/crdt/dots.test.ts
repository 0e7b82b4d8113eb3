import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { ctxFromDots, ctxHas, ctxJoin, ctxNextDot, type Dot, type DotMap } from './dots.js';
import { CrdtError } from './errors.js';
import { ormap } from './ormap.js';
import { orset } from './orset.js';
import { fcParams, historyArbitrary, simulate } from './testkit.js';
import type { CrdtType } from './types.js';

const dots = fc.array(fc.tuple(fc.constantFrom('A', 'B', 'C'), fc.integer({ min: 1, max: 12 })), { maxLength: 25 });

describe('dots', () => {
  test('dots - a context compacts contiguous dots into the version vector', () => {
    const ctx = ctxFromDots([
      ['A', 1],
      ['A', 2],
      ['A', 4],
      ['B', 3],
      ['A', 3],
      ['A', 6],
    ]);
    assert.deepEqual([...ctx.vv], [['A', 4]]);
    assert.deepEqual([...ctx.cloud].sort(), [
      ['A', [6]],
      ['B', [3]],
    ]);
    assert.deepEqual(ctxNextDot(ctx, 'A'), ['A', 7]);
    assert.deepEqual(ctxNextDot(ctx, 'B'), ['B', 4]);
    assert.deepEqual(ctxNextDot(ctx, 'C'), ['C', 1]);
  });

  test('dots - a replica whose counter is exhausted cannot make a new dot', () => {
    const ctx = ctxFromDots([['A', Number.MAX_SAFE_INTEGER]]);
    assert.throws(
      () => ctxNextDot(ctx, 'A'),
      (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_BAD_REPLICA',
    );
  });

  test('dots - context join is set union and has a unique normal form (property)', () => {
    fc.assert(
      fc.property(dots, dots, (xs, ys) => {
        const joined = ctxJoin(ctxFromDots(xs as Dot[]), ctxFromDots(ys as Dot[]));
        const direct = ctxFromDots([...xs, ...ys] as Dot[]);
        assert.deepEqual(joined, direct);
        for (const r of ['A', 'B', 'C']) {
          for (let c = 1; c <= 13; c++) {
            const expected = [...xs, ...ys].some(([x, y]) => x === r && y === c);
            assert.equal(ctxHas(joined, [r, c]), expected);
          }
        }
      }),
      fcParams(),
    );
  });

  for (const t of [orset, ormap] as CrdtType<{ store: DotMap<unknown> }, unknown, unknown>[]) {
    test(`dots - ${t.name} dot index matches the store after random histories`, () => {
      fc.assert(
        fc.property(historyArbitrary(t.name), (h) => {
          const { states, deltas } = simulate(t, h, true);
          for (const s of [...states, ...deltas]) {
            let total = 0;
            for (const [k, f] of s.store) {
              for (const [, [d]] of f) assert.equal(s.store.keyOf(d), k);
              total += f.size;
            }
            assert.equal(s.store.indexSize, total, 'stale dots in the index');
          }
        }),
        fcParams(),
      );
    });
  }
});
