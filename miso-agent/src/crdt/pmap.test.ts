import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { PMap } from './pmap.js';
import { fcParams } from './testkit.js';

describe('pmap', () => {
  test('pmap - behaves like a Map and old versions never change (property)', () => {
    const cmd = fc.tuple(fc.boolean(), fc.string({ maxLength: 3 }), fc.nat(9));
    fc.assert(
      fc.property(fc.array(fc.array(cmd, { maxLength: 6 }), { maxLength: 40 }), (batches) => {
        let m = PMap.empty<number>();
        const model = new Map<string, number>();
        const history: [PMap<number>, [string, number][]][] = [];
        for (const batch of batches) {
          const ed = m.edit();
          for (const [isSet, k, v] of batch) {
            if (isSet) {
              ed.set(k, v);
              model.set(k, v);
            } else {
              ed.delete(k);
              model.delete(k);
            }
          }
          m = ed.done();
          history.push([m, [...model].sort()]);
          assert.equal(m.size, model.size);
          for (const [k, v] of model) assert.equal(m.get(k), v);
        }
        for (const [version, snapshot] of history) {
          assert.deepEqual([...version].sort(), snapshot);
        }
      }),
      fcParams(),
    );
  });

  test('pmap - an edit that changes nothing returns the same map', () => {
    const m = PMap.from([['a', 1]]);
    assert.equal(m.edit().set('a', 1).done(), m);
    assert.equal(m.edit().delete('zz').done(), m);
    assert.notEqual(m.set('a', 2), m);
    assert.equal(m.get('a'), 1);
  });

  test('pmap - an editor cannot be used after done()', () => {
    const ed = PMap.empty<number>().edit();
    ed.done();
    assert.throws(() => ed.set('a', 1), /after done/);
  });
});
