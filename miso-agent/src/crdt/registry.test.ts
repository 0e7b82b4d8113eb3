import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CrdtError } from './errors.js';
import { crdtTypes, digest, getCrdtType } from './registry.js';
import { CRDT_TYPE_NAMES } from './types.js';

describe('registry', () => {
  test('registry - every type name maps to its descriptor', () => {
    assert.deepEqual(Object.keys(crdtTypes).sort(), [...CRDT_TYPE_NAMES].sort());
    for (const name of CRDT_TYPE_NAMES) assert.equal(getCrdtType(name).name, name);
  });

  test('registry - an unknown name lists the allowed ones', () => {
    assert.throws(
      () => getCrdtType('counter'),
      (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_UNKNOWN_TYPE' && /"counter".*gcounter, pncounter/.test(e.message),
    );
    assert.throws(
      () => getCrdtType('toString'),
      (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_UNKNOWN_TYPE',
    );
  });

  test('registry - digest is the hex SHA-256 of the encoding and tells states apart', () => {
    const t = crdtTypes.gcounter;
    const [s] = t.apply(t.empty(), { op: 'add', n: 1 }, 'A');
    assert.match(digest('gcounter', s), /^[0-9a-f]{64}$/);
    assert.equal(digest('gcounter', s), digest(t, t.decode(t.encode(s))));
    assert.notEqual(digest('gcounter', s), digest('gcounter', t.empty()));
  });
});
