import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { emptyAggregate, finishAggregate, mergeAggregate, mergeDocs, METRICS, statsFor, type AggregatePartial, type SensorDoc } from './partials.js';

type Reading = Record<(typeof METRICS)[number], number | null>;

/** What one node's $group stage computes, done here in plain code. */
function partialOf(readings: Reading[]): AggregatePartial {
  const p = emptyAggregate();
  p.count = readings.length;
  for (const r of readings) {
    for (const m of METRICS) {
      const v = r[m];
      if (v === null) continue;
      const s = p.metrics[m];
      s.n++;
      s.sum += v;
      s.min = s.min === null ? v : Math.min(s.min, v);
      s.max = s.max === null ? v : Math.max(s.max, v);
    }
  }
  return p;
}

const reading = fc.record({
  temperature: fc.option(fc.double({ min: -40, max: 50, noNaN: true }), { nil: null }),
  humidity: fc.option(fc.double({ min: 0, max: 100, noNaN: true }), { nil: null }),
  pressure: fc.option(fc.double({ min: 80_000, max: 110_000, noNaN: true }), { nil: null }),
});

const closeTo = (a: number | null, b: number | null) => {
  if (a === null || b === null) return a === b;
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
};

test('partials - merged mesh average equals the average over all readings', () => {
  fc.assert(
    fc.property(fc.array(fc.array(reading, { maxLength: 40 }), { minLength: 1, maxLength: 8 }), (nodes) => {
      const merged = nodes.map(partialOf).reduce(mergeAggregate, emptyAggregate());
      const direct = partialOf(nodes.flat());
      const a = finishAggregate(merged);
      const b = finishAggregate(direct);
      assert.equal(a.count, b.count);
      for (const key of Object.keys(a) as Array<keyof typeof a>) assert.ok(closeTo(a[key], b[key]), `${key}: ${a[key]} vs ${b[key]}`);
    }),
    { seed: 20170731, numRuns: 300 },
  );
});

test('partials - averaging node averages would be wrong, merging is not', () => {
  // Node A: 1 reading at 10 °C. Node B: 3 readings at 20 °C. True mean: 17.5 °C.
  const a = partialOf([{ temperature: 10, humidity: null, pressure: null }]);
  const b = partialOf(Array.from({ length: 3 }, () => ({ temperature: 20, humidity: null, pressure: null })));
  assert.equal(finishAggregate(mergeAggregate(a, b)).average_temperature, 17.5);
  assert.notEqual((10 + 20) / 2, 17.5); // what the original Syncmesh computed
});

test('partials - merge is commutative and associative', () => {
  fc.assert(
    fc.property(fc.array(reading), fc.array(reading), fc.array(reading), (x, y, z) => {
      const [a, b, c] = [partialOf(x), partialOf(y), partialOf(z)];
      assert.deepEqual(mergeAggregate(a, b).count, mergeAggregate(b, a).count);
      const l = finishAggregate(mergeAggregate(mergeAggregate(a, b), c));
      const r = finishAggregate(mergeAggregate(a, mergeAggregate(b, c)));
      for (const key of Object.keys(l) as Array<keyof typeof l>) assert.ok(closeTo(l[key], r[key]));
    }),
    { seed: 7, numRuns: 200 },
  );
});

test('partials - an empty node changes nothing', () => {
  const p = partialOf([{ temperature: 1, humidity: 2, pressure: 3 }]);
  assert.deepEqual(mergeAggregate(p, emptyAggregate()), p);
  assert.equal(finishAggregate(emptyAggregate()).average_temperature, null);
});

const doc = (ts: string, id: string): SensorDoc => ({ _id: id, timestamp: ts });

test('partials - mergeDocs keeps timestamp order and applies the limit mesh-wide', () => {
  const a = [doc('2017-07-01T00:00:00.000Z', 'a1'), doc('2017-07-01T00:10:00.000Z', 'a2')];
  const b = [doc('2017-07-01T00:05:00.000Z', 'b1'), doc('2017-07-01T00:20:00.000Z', 'b2')];
  assert.deepEqual(
    mergeDocs(a, b, 3).map((d) => d._id),
    ['a1', 'b1', 'a2'],
  );
  assert.equal(mergeDocs(a, b, null).length, 4);
  assert.equal(mergeDocs(a, b, 0).length, 0);
});

test('partials - mergeDocs equals sorting everything and cutting', () => {
  const docArb = fc.record({
    _id: fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16).padStart(4, '0')),
    timestamp: fc.integer({ min: 0, max: 1e6 }).map((n) => new Date(1.5e12 + n * 1000).toISOString()),
  });
  fc.assert(
    fc.property(fc.uniqueArray(docArb, { selector: (d) => d._id }), fc.nat(30), fc.nat(100), (docs, limit, split) => {
      const sorted = [...docs].sort((p, q) => (p.timestamp < q.timestamp ? -1 : p.timestamp > q.timestamp ? 1 : p._id < q._id ? -1 : 1));
      const cut = Math.min(split, sorted.length);
      const left = sorted.filter((_, i) => i % 2 === 0 || i < cut);
      const right = sorted.filter((d) => !left.includes(d));
      assert.deepEqual(mergeDocs(left, right, limit), sorted.slice(0, limit));
    }),
    { seed: 11, numRuns: 200 },
  );
});

test('partials - statsFor computes only what the selected aggregate fields need', () => {
  const needs = statsFor(['count', 'average_temperature', 'min_humidity', 'sum_humidity', 'max_pressure', '__typename']);
  assert.deepEqual([...needs.temperature].sort(), ['n', 'sum']);
  assert.deepEqual([...needs.humidity].sort(), ['min', 'sum']);
  assert.deepEqual([...needs.pressure], ['max']);
  assert.equal(statsFor(['count']).temperature.size, 0);
});
