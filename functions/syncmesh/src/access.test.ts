import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertMayRead, assertMayWrite, bearerMatches } from './access.js';

const KEY = 'k'.repeat(40);
const codeOf = (fn: () => void) => {
  try {
    fn();
    return 'ok';
  } catch (err) {
    return (err as { code: string }).code;
  }
};

test('access - the write key is checked exactly', () => {
  assert.ok(bearerMatches(`Bearer ${KEY}`, KEY));
  assert.ok(bearerMatches(`bearer  ${KEY}`, KEY));
  assert.ok(!bearerMatches(`Bearer ${KEY}x`, KEY));
  assert.ok(!bearerMatches(`Bearer ${KEY.slice(1)}`, KEY));
  assert.ok(!bearerMatches(KEY, KEY));
  assert.ok(!bearerMatches(`Basic ${KEY}`, KEY));
  assert.ok(!bearerMatches(undefined, KEY));
  assert.ok(!bearerMatches(`Bearer ${KEY}`, undefined));
});

test('access - writes need the write key or a signature; no key configured refuses every unsigned write', () => {
  assert.equal(
    codeOf(() => assertMayWrite({ signed: false, authorization: `Bearer ${KEY}` }, { writeKey: KEY })),
    'ok',
  );
  assert.equal(
    codeOf(() => assertMayWrite({ signed: true, authorization: undefined }, { writeKey: undefined })),
    'ok',
  );
  assert.equal(
    codeOf(() => assertMayWrite({ signed: false, authorization: undefined }, { writeKey: KEY })),
    'EDGE_SYNCMESH_CREDENTIALS_REQUIRED',
  );
  assert.equal(
    codeOf(() => assertMayWrite({ signed: false, authorization: 'Bearer nope' }, { writeKey: KEY })),
    'EDGE_SYNCMESH_CREDENTIALS_REQUIRED',
  );
  assert.equal(
    codeOf(() => assertMayWrite({ signed: false, authorization: `Bearer ${KEY}` }, { writeKey: undefined })),
    'EDGE_SYNCMESH_WRITES_DISABLED',
  );
});

test('access - reads are open unless a read key is set; then the read or write key, or a signature', () => {
  const open = { readKey: undefined, writeKey: KEY };
  const closed = { readKey: 'r'.repeat(40), writeKey: KEY };
  assert.equal(
    codeOf(() => assertMayRead({ signed: false, authorization: undefined }, open)),
    'ok',
  );
  assert.equal(
    codeOf(() => assertMayRead({ signed: false, authorization: undefined }, closed)),
    'EDGE_SYNCMESH_CREDENTIALS_REQUIRED',
  );
  assert.equal(
    codeOf(() => assertMayRead({ signed: false, authorization: `Bearer ${'r'.repeat(40)}` }, closed)),
    'ok',
  );
  assert.equal(
    codeOf(() => assertMayRead({ signed: false, authorization: `Bearer ${KEY}` }, closed)),
    'ok',
  );
  assert.equal(
    codeOf(() => assertMayRead({ signed: true, authorization: undefined }, closed)),
    'ok',
  );
});
