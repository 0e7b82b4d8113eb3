import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { percentile, percentileOfSorted, summarize } from './stats.js';

test('percentile - nearest rank on 1..10', () => {
  const xs = [7, 3, 10, 1, 9, 2, 8, 4, 6, 5];
  assert.equal(percentile(xs, 0), 1);
  assert.equal(percentile(xs, 10), 1);
  assert.equal(percentile(xs, 11), 2);
  assert.equal(percentile(xs, 50), 5);
  assert.equal(percentile(xs, 90), 9);
  assert.equal(percentile(xs, 99), 10);
  assert.equal(percentile(xs, 100), 10);
  assert.deepEqual(xs, [7, 3, 10, 1, 9, 2, 8, 4, 6, 5], 'the input is not sorted in place');
});

test('percentile - the textbook example (15, 20, 35, 40, 50)', () => {
  const xs = [15, 20, 35, 40, 50];
  assert.equal(percentile(xs, 5), 15);
  assert.equal(percentile(xs, 30), 20);
  assert.equal(percentile(xs, 40), 20);
  assert.equal(percentile(xs, 50), 35);
  assert.equal(percentile(xs, 100), 50);
});

test('percentile - empty samples give NaN, a p outside 0..100 throws', () => {
  assert.ok(Number.isNaN(percentile([], 50)));
  assert.throws(() => percentile([1], 101), RangeError);
  assert.throws(() => percentile([1], -1), RangeError);
  assert.throws(() => percentile([1], Number.NaN), RangeError);
});

test('percentile - always a measured sample, monotonic in p, and at least p% of samples at or below it', () => {
  fc.assert(
    fc.property(fc.array(fc.double({ noNaN: true, min: -1e9, max: 1e9 }), { minLength: 1, maxLength: 200 }), fc.integer({ min: 0, max: 100 }), (xs, p) => {
      const v = percentile(xs, p);
      assert.ok(xs.includes(v));
      const sorted = [...xs].sort((a, b) => a - b);
      assert.equal(percentileOfSorted(sorted, p), v);
      if (p < 100) assert.ok(percentile(xs, p + 1) >= v);
      assert.ok(xs.filter((x) => x <= v).length >= (p / 100) * xs.length);
    }),
    { seed: 14 },
  );
});

test('summarize - count, min, p50, p90, p99, max, mean', () => {
  const s = summarize(Array.from({ length: 100 }, (_, i) => i + 1));
  assert.deepEqual(s, { count: 100, min: 1, p50: 50, p90: 90, p99: 99, max: 100, mean: 50.5 });
  const e = summarize([]);
  assert.equal(e.count, 0);
  assert.ok(Number.isNaN(e.p50) && Number.isNaN(e.mean) && Number.isNaN(e.min));
});
