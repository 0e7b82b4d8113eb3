import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CrdtError } from './errors.js';
import { ormap, type ORMapState } from './ormap.js';
import { Replica } from './testkit.js';

const replica = (id: string): Replica<ORMapState> => new Replica(ormap, id);

describe('ormap', () => {
  test('ormap - set and remove keys; values are MV-register lists', () => {
    const a = replica('A');
    a.do({ op: 'set', key: 'temp', value: 21.5 });
    a.do({ op: 'set', key: 'unit', value: 'C' });
    a.do({ op: 'set', key: 'temp', value: 22 });
    a.do({ op: 'remove', key: 'unit' });
    assert.deepEqual(a.value(), { temp: [22] });
  });

  test('ormap - concurrent sets of a key are both kept', () => {
    const a = replica('A');
    const b = replica('B');
    const da = a.do({ op: 'set', key: 'k', value: 1 });
    const db = b.do({ op: 'set', key: 'k', value: 2 });
    a.recv(db);
    b.recv(da);
    assert.deepEqual(a.value(), { k: [1, 2] });
    assert.ok(ormap.equals(a.state, b.state));
  });

  test('ormap - a set concurrent with a remove survives it; a remove of seen values wins', () => {
    const a = replica('A');
    const b = replica('B');
    b.recv(a.do({ op: 'set', key: 'k', value: 'v1' }));
    const rm = b.do({ op: 'remove', key: 'k' });
    const set = a.do({ op: 'set', key: 'k', value: 'v2' });
    a.recv(rm);
    b.recv(set);
    assert.deepEqual(a.value(), { k: ['v2'] });
    assert.deepEqual(b.value(), { k: ['v2'] });
    const rm2 = b.do({ op: 'remove', key: 'k' });
    a.recv(rm2, set, rm);
    assert.deepEqual(a.value(), {});
  });

  test('ormap - keys like __proto__ are ordinary own keys', () => {
    const a = replica('A');
    a.do({ op: 'set', key: '__proto__', value: { polluted: true } });
    const v = a.value() as Record<string, unknown>;
    assert.ok(Object.hasOwn(v, '__proto__'));
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });

  test('ormap - rejects missing key, non-string key, missing value and extra fields', () => {
    for (const bad of [
      { op: 'set', value: 1 },
      { op: 'set', key: 3, value: 1 },
      { op: 'set', key: 'k' },
      { op: 'remove', key: 'k', value: 1 },
      { op: 'set', key: '\udc00', value: 1 },
    ]) {
      assert.throws(
        () => ormap.parseOp(bad),
        (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_BAD_OP',
        JSON.stringify(bad),
      );
    }
  });
});
