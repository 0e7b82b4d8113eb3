import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { backoffDelayMs, sleep } from './backoff.js';

test('backoff - grows exponentially from the base', () => {
  const mid = () => 0.5;
  assert.deepEqual(
    [0, 1, 2, 3].map((n) => backoffDelayMs(n, { baseMs: 100, maxMs: 10_000, random: mid })),
    [75, 150, 300, 600],
  );
});

test('backoff - stays within [cap/2, cap] and never exceeds the maximum', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 1000 }),
      fc.integer({ min: 1, max: 1000 }),
      fc.integer({ min: 1, max: 100_000 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (attempt, baseMs, extra, r) => {
        const maxMs = baseMs + extra;
        const d = backoffDelayMs(attempt, { baseMs, maxMs, random: () => r });
        const cap = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
        return d <= maxMs && d >= Math.floor(cap / 2) && d <= Math.ceil(cap);
      },
    ),
    { seed: 42 },
  );
});

test('backoff - jitter spreads retries of the same attempt', () => {
  let seed = 1;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const delays = new Set(Array.from({ length: 20 }, () => backoffDelayMs(5, { baseMs: 100, maxMs: 5_000, random })));
  assert.ok(delays.size > 10, `expected spread, got ${[...delays].join(',')}`);
});

test('backoff - sleep rejects at once when aborted', async () => {
  const ac = new AbortController();
  const p = sleep(60_000, ac.signal);
  ac.abort(new Error('stop'));
  await assert.rejects(p, /stop/);
});
