import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import fc from 'fast-check';
import { backoffDelayMs, sleep } from './backoff.js';

/** Park–Miller generator: a seeded random source in [0, 1). */
function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 16807) % 2147483647;
    return s / 2147483647;
  };
}

test('backoff - doubles from the base up to the maximum', () => {
  const mid = () => 0.5;
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelayMs(n, { baseMs: 100, maxMs: 5_000, random: mid })),
    [75, 150, 300, 600, 1_200, 2_400, 3_750, 3_750],
  );
});

test('backoff - the lowest random value waits half the cap, the highest the whole cap', () => {
  const policy = { baseMs: 200, maxMs: 30_000 };
  assert.equal(backoffDelayMs(0, { ...policy, random: () => 0 }), 100);
  assert.equal(backoffDelayMs(0, { ...policy, random: () => 1 - Number.EPSILON }), 200);
  assert.equal(backoffDelayMs(20, { ...policy, random: () => 0 }), 15_000);
  assert.equal(backoffDelayMs(20, { ...policy, random: () => 1 - Number.EPSILON }), 30_000);
});

test('backoff - a negative or fractional attempt counts as its floor, a huge one as the maximum', () => {
  const opts = { baseMs: 500, maxMs: 10_000, random: () => 0.5 };
  assert.equal(backoffDelayMs(-3, opts), backoffDelayMs(0, opts));
  assert.equal(backoffDelayMs(2.9, opts), backoffDelayMs(2, opts));
  assert.equal(backoffDelayMs(Number.MAX_SAFE_INTEGER, opts), 7_500);
});

test('backoff - stays within [cap/2, cap] and never exceeds the maximum', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: -5, max: 1000 }),
      fc.integer({ min: 1, max: 1000 }),
      fc.integer({ min: 0, max: 100_000 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (attempt, baseMs, extra, r) => {
        const maxMs = baseMs + extra;
        const d = backoffDelayMs(attempt, { baseMs, maxMs, random: () => r });
        const cap = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt, 0), 30));
        return Number.isInteger(d) && d <= maxMs && d >= Math.floor(cap / 2) && d <= Math.ceil(cap);
      },
    ),
    { seed: 42 },
  );
});

test('backoff - the same random source gives the same delays', () => {
  const delays = (seed: number) => {
    const random = seeded(seed);
    return Array.from({ length: 12 }, (_, n) => backoffDelayMs(n, { baseMs: 100, maxMs: 5_000, random }));
  };
  assert.deepEqual(delays(7), delays(7));
  assert.notDeepEqual(delays(7), delays(8));
});

test('backoff - jitter spreads retries of the same attempt', () => {
  const random = seeded(1);
  const delays = new Set(Array.from({ length: 20 }, () => backoffDelayMs(5, { baseMs: 100, maxMs: 5_000, random })));
  assert.ok(delays.size > 10, `expected spread, got ${[...delays].join(',')}`);
});

test('sleep - resolves after the delay and leaves no abort listener behind', async () => {
  const ac = new AbortController();
  const t0 = performance.now();
  await sleep(20, ac.signal);
  // timers may fire up to 1 ms early by rounding
  assert.ok(performance.now() - t0 >= 19);
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
});

test('sleep - rejects at once with the reason when aborted', async () => {
  const ac = new AbortController();
  const p = sleep(60_000, ac.signal);
  ac.abort(new Error('stop'));
  await assert.rejects(p, /stop/);
});

test('sleep - rejects when the signal has already aborted', async () => {
  await assert.rejects(sleep(60_000, AbortSignal.abort(new Error('gone'))), /gone/);
});
