import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CrdtError } from './errors.js';
import { gset, type GSetState } from './gset.js';
import { MAX_VALUE_BYTES } from './json.js';
import { Replica } from './testkit.js';

describe('gset', () => {
  test('gset - union of adds, deduplicated by canonical JSON, sorted', () => {
    const a = new Replica<GSetState>(gset, 'A');
    const b = new Replica<GSetState>(gset, 'B');
    const ds = [a.do({ op: 'add', value: 'b' }), a.do({ op: 'add', value: 1 }), b.do({ op: 'add', value: 'b' }), b.do({ op: 'add', value: null })];
    a.recv(...ds);
    b.recv(...ds);
    assert.deepEqual(a.value(), ['b', 1, null]);
    assert.ok(gset.equals(a.state, b.state));
  });

  test('gset - rejects objects and oversize values with distinct codes', () => {
    assert.throws(
      () => gset.parseOp({ op: 'add', value: { a: 1 } }),
      (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_BAD_OP',
    );
    assert.throws(
      () => gset.parseOp({ op: 'add', value: 'x'.repeat(MAX_VALUE_BYTES) }),
      (e: unknown) => e instanceof CrdtError && e.code === 'EDGE_MISO_VALUE_TOO_LARGE',
    );
    // Exactly at the limit (quotes included) is accepted.
    assert.doesNotThrow(() => gset.parseOp({ op: 'add', value: 'x'.repeat(MAX_VALUE_BYTES - 2) }));
  });
});
