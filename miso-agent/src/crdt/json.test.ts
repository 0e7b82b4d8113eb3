import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { CrdtError } from './errors.js';
import { canonicalJson, MAX_VALUE_BYTES, MAX_VALUE_DEPTH } from './json.js';
import { fcParams } from './testkit.js';

const code =
  (c: string) =>
  (e: unknown): boolean =>
    e instanceof CrdtError && e.code === c;

describe('canonical JSON', () => {
  test('json - sorts object keys at every level and normalises -0', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: -0 } }), '{"a":{"c":0,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  test('json - equal values have equal strings regardless of key order (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const s = canonicalJson(v);
        assert.equal(canonicalJson(JSON.parse(s)), s);
        const reordered = JSON.parse(
          JSON.stringify(v, (_k, x: unknown) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).reverse()) : x)),
        ) as unknown;
        assert.equal(canonicalJson(reordered), s);
      }),
      fcParams(),
    );
  });

  test('json - rejects what is not JSON, naming the path', () => {
    assert.throws(
      () => canonicalJson({ a: [1, Number.NaN] }),
      (e: unknown) => code('EDGE_MISO_BAD_OP')(e) && /value\.a\[1\] is NaN/.test((e as Error).message),
    );
    assert.throws(() => canonicalJson({ a: undefined }), code('EDGE_MISO_BAD_OP'));
    assert.throws(
      () => canonicalJson(new Date(0)),
      (e: unknown) => code('EDGE_MISO_BAD_OP')(e) && /Date/.test((e as Error).message),
    );
    assert.throws(() => canonicalJson(10n), code('EDGE_MISO_BAD_OP'));
    assert.throws(() => canonicalJson(Number.POSITIVE_INFINITY), code('EDGE_MISO_BAD_OP'));
    // biome-ignore lint/suspicious/noSparseArray: a hole is the bad input under test
    assert.throws(() => canonicalJson([1, , 3]), code('EDGE_MISO_BAD_OP'));
  });

  test('json - rejects deep nesting and cycles without overflowing the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i <= MAX_VALUE_DEPTH + 1; i++) deep = [deep];
    assert.throws(() => canonicalJson(deep), code('EDGE_MISO_BAD_OP'));
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    assert.throws(() => canonicalJson(cyclic), code('EDGE_MISO_BAD_OP'));
  });

  test('json - enforces MAX_VALUE_BYTES on UTF-8 bytes, early for huge input', () => {
    const euro = '€'.repeat(Math.ceil(MAX_VALUE_BYTES / 3)); // 3 bytes per char
    assert.throws(() => canonicalJson(euro), code('EDGE_MISO_VALUE_TOO_LARGE'));
    const huge = Array.from({ length: 200_000 }, () => 1);
    assert.throws(() => canonicalJson(huge), code('EDGE_MISO_VALUE_TOO_LARGE'));
  });
});
