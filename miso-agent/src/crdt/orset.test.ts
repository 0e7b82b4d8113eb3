/**
 * Add-wins OR-set. The scenarios below are the two ways MISO's own OR-set
 * goes wrong (a removed element comes back when the remove targets the newest
 * add; concurrent adds overwrite each other); here both are impossible
 * because a remove covers exactly the dots it observed.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CrdtError } from './errors.js';
import { orset, type ORSetState } from './orset.js';
import { Replica } from './testkit.js';

const replica = (id: string): Replica<ORSetState> => new Replica(orset, id);

describe('orset', () => {
  test('orset - add and remove on one replica', () => {
    const a = replica('A');
    a.do({ op: 'add', value: 'x' });
    a.do({ op: 'add', value: 2 });
    a.do({ op: 'remove', value: 'x' });
    assert.deepEqual(a.value(), [2]);
    a.do({ op: 'add', value: 'x' });
    assert.deepEqual(a.value(), ['x', 2]); // sorted by canonical JSON: '"x"' < '2' (0x22 < 0x32)
  });

  test('orset - a concurrent add survives a remove (add wins)', () => {
    const a = replica('A');
    const b = replica('B');
    b.recv(a.do({ op: 'add', value: 'x' }));
    const remove = b.do({ op: 'remove', value: 'x' }); // observed A's first add only
    const readd = a.do({ op: 'add', value: 'x' }); // concurrent with the remove
    a.recv(remove);
    b.recv(readd);
    assert.deepEqual(a.value(), ['x']);
    assert.deepEqual(b.value(), ['x']);
    assert.ok(orset.equals(a.state, b.state));
  });

  test('orset - a removed element does not come back when the remove targets the newest add', () => {
    const a = replica('A');
    const b = replica('B');
    const first = a.do({ op: 'add', value: 'x' });
    const newest = a.do({ op: 'add', value: 'x' });
    b.recv(newest); // B only saw the newest add
    const remove = b.do({ op: 'remove', value: 'x' });
    a.recv(remove);
    assert.deepEqual(a.value(), []);
    // The older add arrives late, even repeatedly, and at a third replica first.
    b.recv(first, first);
    const c = replica('C').recv(first, remove, newest, first);
    assert.deepEqual(b.value(), []);
    assert.deepEqual(c.value(), []);
    assert.deepEqual(a.value(), []);
    assert.ok(orset.equals(a.state, b.state) && orset.equals(b.state, c.state));
  });

  test('orset - concurrent adds of one element do not overwrite each other', () => {
    const a = replica('A');
    const b = replica('B');
    const addA = a.do({ op: 'add', value: 'x' });
    const addB = b.do({ op: 'add', value: 'x' });
    // A removes before it hears of B's add: only A's own dot is removed.
    const removeA = a.do({ op: 'remove', value: 'x' });
    a.recv(addB);
    b.recv(addA, removeA);
    assert.deepEqual(a.value(), ['x']);
    assert.deepEqual(b.value(), ['x']);
    const live = a.state.store.get('"x"');
    assert.equal(live?.size, 1);
    assert.deepEqual(
      [...(live?.values() ?? [])].map(([d]) => d),
      [['B', 1]],
    );
  });

  test('orset - a remove after seeing both concurrent adds removes the element everywhere', () => {
    const a = replica('A');
    const b = replica('B');
    const addA = a.do({ op: 'add', value: 'x' });
    const addB = b.do({ op: 'add', value: 'x' });
    a.recv(addB);
    const remove = a.do({ op: 'remove', value: 'x' });
    b.recv(remove, addA);
    assert.deepEqual(a.value(), []);
    assert.deepEqual(b.value(), []);
  });

  test('orset - a remove of an unseen element is a no-op everywhere', () => {
    const a = replica('A');
    const b = replica('B');
    const add = a.do({ op: 'add', value: 'x' });
    const remove = b.do({ op: 'remove', value: 'x' });
    assert.equal(remove.ctx.vv.size + remove.ctx.cloud.size, 0);
    a.recv(remove);
    b.recv(add);
    assert.deepEqual(a.value(), ['x']);
    assert.deepEqual(b.value(), ['x']);
  });

  test('orset - elements are compared by canonical JSON', () => {
    const a = replica('A');
    a.do({ op: 'add', value: -0 });
    a.do({ op: 'add', value: 0 });
    a.do({ op: 'add', value: '0' });
    assert.deepEqual(a.value(), ['0', 0]); // -0 and 0 are one element
  });

  test('orset - rejects non-scalar and malformed ops', () => {
    for (const bad of [
      { op: 'add', value: { a: 1 } },
      { op: 'add', value: [1] },
      { op: 'add' },
      { op: 'add', value: Number.NaN },
      { op: 'delete', value: 'x' },
      { op: 'add', value: 'x', extra: 1 },
      null,
      'add',
    ]) {
      assert.throws(
        () => orset.parseOp(bad),
        (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_BAD_OP',
        JSON.stringify(bad),
      );
    }
  });
});
