import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatNumber, formatTable } from './table.js';

test('numbers keep a precision that suits their size', () => {
  assert.equal(formatNumber(42), '42');
  assert.equal(formatNumber(1234.56), '1235');
  assert.equal(formatNumber(12.345), '12.35');
  assert.equal(formatNumber(0.12345), '0.123');
  assert.equal(formatNumber(Number.NaN), 'NaN');
});

test('a table aligns its columns under a dashed rule', () => {
  const t = formatTable(
    'title',
    ['name', 'ops/s'],
    [
      ['a', 1500.4],
      ['longer', 2.5],
    ],
  );
  assert.deepEqual(t.split('\n'), ['title', '  name    ops/s', '  ------  -----', '  a       1500', '  longer  2.50']);
});
