import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlowControl } from './flow.js';

const opts = { targetMs: 2_500, initial: 2_000, min: 1, max: 50_000 };

test('flow - before any measurement a request carries the initial budget', () => {
  assert.equal(new FlowControl(opts).budget, 2_000);
  assert.equal(new FlowControl(opts).msPerReading, undefined);
});

test('flow - the budget never exceeds what the subscriber applies within the target at its measured rate', () => {
  const f = new FlowControl(opts);
  f.applied(2_000, 10_000); // 5 ms per reading: 500 readings in 2.5 s
  f.succeeded(2_000);
  assert.equal(f.budget, 500);
  assert.equal(f.msPerReading, 5);
});

test('flow - it grows again slowly (a quarter per full request), up to the rate cap', () => {
  const f = new FlowControl(opts);
  f.applied(1_000, 100); // 0.1 ms per reading: 25,000 in 2.5 s
  const seen: number[] = [];
  for (let i = 0; i < 12; i++) {
    f.succeeded(f.budget);
    seen.push(f.budget);
  }
  assert.deepEqual(seen.slice(0, 3), [2_500, 3_125, 3_906]);
  assert.equal(seen.at(-1), 25_000, 'capped by the rate');
  const partial = new FlowControl(opts);
  partial.succeeded(100); // a small live batch says nothing about the budget
  assert.equal(partial.budget, 2_000);
});

test('flow - a timeout halves the budget, a 413 halves what was sent, never below the minimum', () => {
  const f = new FlowControl(opts);
  f.timedOut();
  assert.equal(f.budget, 1_000);
  f.tooLarge(600);
  assert.equal(f.budget, 300);
  for (let i = 0; i < 20; i++) f.timedOut();
  assert.equal(f.budget, 1);
});

test('flow - the rate is a moving average: one slow request does not stall a fast subscriber', () => {
  const f = new FlowControl(opts);
  f.applied(1_000, 100);
  f.applied(1_000, 1_000); // one request ten times slower
  assert.ok(f.msPerReading! > 0.1 && f.msPerReading! < 1, `${f.msPerReading}`);
});
