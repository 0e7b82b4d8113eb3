import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CrdtError } from './errors.js';
import { hlcNext, lwwregister, type LWWRegisterState } from './lwwregister.js';
import { Replica } from './testkit.js';

const replica = (id: string): Replica<LWWRegisterState> => new Replica(lwwregister, id);

describe('lwwregister', () => {
  test('lwwregister - the larger explicit ts wins regardless of arrival order', () => {
    const a = replica('A');
    const b = replica('B');
    const late = a.do({ op: 'set', value: 'late', ts: 20 });
    const early = b.do({ op: 'set', value: 'early', ts: 10 });
    a.recv(early);
    b.recv(late);
    assert.equal(a.value(), 'late');
    assert.equal(b.value(), 'late');
  });

  test('lwwregister - equal ts is broken by replica id, then by value', () => {
    const a = replica('A');
    const b = replica('B');
    const da = a.do({ op: 'set', value: 'from A', ts: 5 });
    const db = b.do({ op: 'set', value: 'from B', ts: 5 });
    assert.equal(replica('C').recv(da, db).value(), 'from B');
    assert.equal(replica('C').recv(db, da).value(), 'from B');
    const x = a.do({ op: 'set', value: 'x', ts: 9 });
    const y = a.do({ op: 'set', value: 'y', ts: 9 });
    assert.equal(replica('C').recv(y, x).value(), 'y');
    assert.equal(replica('C').recv(x, y).value(), 'y');
  });

  test('lwwregister - without ts a write beats everything the replica has seen (Lamport)', () => {
    const a = replica('A');
    const b = replica('B');
    a.recv(b.do({ op: 'set', value: 'b', ts: 1_700_000_000_000 }));
    const d = a.do({ op: 'set', value: 'a' });
    assert.equal(d?.ts, 1_700_000_000_001);
    assert.equal(b.recv(d).value(), 'a');
  });

  test('lwwregister - an older explicit ts loses locally too', () => {
    const a = replica('A');
    a.do({ op: 'set', value: 'new', ts: 100 });
    a.do({ op: 'set', value: 'old', ts: 50 });
    assert.equal(a.value(), 'new');
  });

  test('lwwregister - hlcNext follows the wall clock and never goes back', () => {
    assert.equal(hlcNext(0, 1000), 1000);
    assert.equal(hlcNext(1000, 1000), 1001);
    assert.equal(hlcNext(5000, 1000), 5001);
    assert.equal(hlcNext(0, 1000.9), 1000);
  });

  test('lwwregister - rejects negative, fractional and non-numeric ts', () => {
    for (const ts of [-1, 0.5, '1', Number.MAX_SAFE_INTEGER + 2]) {
      assert.throws(
        () => lwwregister.parseOp({ op: 'set', value: 1, ts }),
        (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_BAD_OP',
      );
    }
    assert.doesNotThrow(() => lwwregister.parseOp({ op: 'set', value: 1, ts: undefined }));
  });
});
