import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mvregister, type MVRegisterState } from './mvregister.js';
import { Replica } from './testkit.js';

const replica = (id: string): Replica<MVRegisterState> => new Replica(mvregister, id);

describe('mvregister', () => {
  test('mvregister - a set replaces what it saw', () => {
    const a = replica('A');
    assert.deepEqual(a.value(), []);
    a.do({ op: 'set', value: 1 });
    a.do({ op: 'set', value: { b: 2, a: 1 } });
    assert.deepEqual(a.value(), [{ a: 1, b: 2 }]);
    assert.equal(a.state.store.size, 1);
  });

  test('mvregister - concurrent sets are all kept until a later set resolves them', () => {
    const a = replica('A');
    const b = replica('B');
    const da = a.do({ op: 'set', value: 'left' });
    const db = b.do({ op: 'set', value: 'right' });
    a.recv(db);
    b.recv(da);
    assert.deepEqual(a.value(), ['left', 'right']);
    assert.ok(mvregister.equals(a.state, b.state));
    const resolve = b.do({ op: 'set', value: 'both' });
    a.recv(resolve, da, db);
    assert.deepEqual(a.value(), ['both']);
  });

  test('mvregister - equal concurrent values are reported once', () => {
    const a = replica('A');
    const b = replica('B');
    a.recv(b.do({ op: 'set', value: [1] }));
    a.recv(a.do({ op: 'set', value: [1] }));
    const c = replica('C').recv(a.state, b.state);
    assert.deepEqual(c.value(), [[1]]);
  });
});
