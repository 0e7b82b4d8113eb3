import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CrdtError } from './errors.js';
import { gcounter, type GCounterState } from './gcounter.js';
import { Replica } from './testkit.js';

const isBadOp = (e: unknown): boolean => e instanceof CrdtError && e.code === 'EDGE_MISO_BAD_OP';

describe('gcounter', () => {
  test('gcounter - sums adds from all replicas; deltas carry only the adding replica', () => {
    const a = new Replica<GCounterState>(gcounter, 'A');
    const b = new Replica<GCounterState>(gcounter, 'B');
    const d1 = a.do({ op: 'add', n: 3 });
    const d2 = a.do({ op: 'add', n: 4 });
    const d3 = b.do({ op: 'add', n: 10 });
    assert.deepEqual([...d2], [['A', 7]]);
    b.recv(d2, d1, d1);
    a.recv(d3);
    assert.equal(a.value(), 17);
    assert.equal(b.value(), 17);
  });

  test('gcounter - adding 0 changes nothing', () => {
    const [s, d] = gcounter.apply(gcounter.empty(), { op: 'add', n: 0 }, 'A');
    assert.equal(gcounter.value(s), 0);
    assert.ok(gcounter.equals(d, gcounter.empty()));
  });

  test('gcounter - rejects negative, fractional, unsafe and missing n', () => {
    for (const n of [-1, 1.5, Number.MAX_SAFE_INTEGER + 1, Number.POSITIVE_INFINITY, '1', undefined]) {
      assert.throws(() => gcounter.parseOp({ op: 'add', n }), isBadOp, String(n));
    }
  });

  test('gcounter - refuses to overflow a replica entry past MAX_SAFE_INTEGER', () => {
    const [s] = gcounter.apply(gcounter.empty(), { op: 'add', n: Number.MAX_SAFE_INTEGER }, 'A');
    assert.throws(() => gcounter.apply(s, { op: 'add', n: 1 }, 'A'), isBadOp);
  });

  test('gcounter - rejects bad replica ids', () => {
    for (const r of ['', '\ud800', 'x'.repeat(2000)]) {
      assert.throws(
        () => gcounter.apply(gcounter.empty(), { op: 'add', n: 1 }, r),
        (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_BAD_REPLICA',
      );
    }
  });
});
