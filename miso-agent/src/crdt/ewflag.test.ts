import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CrdtError } from './errors.js';
import { ewflag, type EWFlagState } from './ewflag.js';
import { Replica } from './testkit.js';

const replica = (id: string): Replica<EWFlagState> => new Replica(ewflag, id);

describe('ewflag', () => {
  test('ewflag - starts disabled and follows local ops', () => {
    const a = replica('A');
    assert.equal(a.value(), false);
    a.do({ op: 'enable' });
    assert.equal(a.value(), true);
    a.do({ op: 'disable' });
    assert.equal(a.value(), false);
  });

  test('ewflag - a concurrent enable wins over a disable', () => {
    const a = replica('A');
    const b = replica('B');
    b.recv(a.do({ op: 'enable' }));
    const disable = b.do({ op: 'disable' });
    const enable = a.do({ op: 'enable' });
    a.recv(disable);
    b.recv(enable);
    assert.equal(a.value(), true);
    assert.equal(b.value(), true);
  });

  test('ewflag - a disable that saw every enable wins, however late old deltas arrive', () => {
    const a = replica('A');
    const b = replica('B');
    const e1 = a.do({ op: 'enable' });
    const e2 = b.do({ op: 'enable' });
    a.recv(e2);
    const off = a.do({ op: 'disable' });
    b.recv(off, e1, e2);
    assert.equal(b.value(), false);
    assert.ok(ewflag.equals(a.state, b.state));
  });

  test('ewflag - enable keeps one dot per replica however often it is called', () => {
    const a = replica('A');
    for (let i = 0; i < 5; i++) a.do({ op: 'enable' });
    assert.equal(a.state.store.size, 1);
    assert.deepEqual([...a.state.ctx.vv], [['A', 5]]);
  });

  test('ewflag - rejects unknown ops', () => {
    assert.throws(
      () => ewflag.parseOp({ op: 'toggle' }),
      (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_BAD_OP' && /toggle/.test(e.message),
    );
  });
});
