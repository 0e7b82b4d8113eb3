import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CrdtError } from './errors.js';
import { pncounter, type PNCounterState } from './pncounter.js';
import { Replica } from './testkit.js';

describe('pncounter', () => {
  test('pncounter - increments and decrements converge to the sum', () => {
    const a = new Replica<PNCounterState>(pncounter, 'A');
    const b = new Replica<PNCounterState>(pncounter, 'B');
    const ds = [a.do({ op: 'add', n: 5 }), a.do({ op: 'add', n: -7 }), b.do({ op: 'add', n: -1 })];
    a.recv(...ds);
    b.recv(...ds.reverse());
    assert.equal(a.value(), -3);
    assert.equal(b.value(), -3);
    assert.ok(pncounter.equals(a.state, b.state));
  });

  test('pncounter - a decrement delta only touches N', () => {
    const [, d] = pncounter.apply(pncounter.empty(), { op: 'add', n: -2 }, 'A');
    assert.equal(d.p.size, 0);
    assert.deepEqual([...d.n], [['A', 2]]);
  });

  test('pncounter - rejects fractional and non-numeric n', () => {
    for (const n of [0.5, 'x', null, Number.NaN]) {
      assert.throws(
        () => pncounter.parseOp({ op: 'add', n }),
        (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_BAD_OP',
      );
    }
  });
});
