import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BoundedQueue } from './queue.js';

test('queue - take returns a full batch at once and keeps order', async () => {
  const q = new BoundedQueue<number>(10);
  for (let i = 0; i < 5; i++) await q.push(i);
  assert.deepEqual(await q.take(3, 10_000), [0, 1, 2]);
  assert.deepEqual(await q.take(3, 0), [3, 4]);
});

test('queue - push waits while full and resumes when a batch is taken', async () => {
  const q = new BoundedQueue<number>(2);
  await q.push(1);
  await q.push(2);
  let full = 0;
  let pushed = false;
  const p = q.push(3, undefined, () => full++).then(() => (pushed = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(pushed, false);
  assert.deepEqual(await q.take(1, 0), [1]);
  await p;
  assert.equal(full, 1);
  assert.deepEqual(await q.take(10, 0), [2, 3]);
});

test('queue - close drains what is left, then take returns empty', async () => {
  const q = new BoundedQueue<number>(5);
  await q.push(1);
  const waiting = q.take(5, 60_000);
  q.close();
  q.close();
  assert.deepEqual(await waiting, [1]);
  assert.deepEqual(await q.take(5, 60_000), []);
});
