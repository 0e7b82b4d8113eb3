import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runFor } from './runner.js';

test('runFor - throughput is over the elapsed time, which includes the last operation', async () => {
  const seen = new Set<number>();
  const r = await runFor({
    workers: 3,
    durationMs: 60,
    op: async (w) => {
      seen.add(w);
      await new Promise((resolve) => setTimeout(resolve, 25));
    },
  });
  assert.deepEqual([...seen].sort(), [0, 1, 2]);
  assert.equal(r.ops, r.latencies_ms.length);
  assert.ok(r.ops >= 3);
  // every started operation finished, so the run lasted at least one operation past the duration
  assert.ok(r.elapsed_ms >= 60, `elapsed ${r.elapsed_ms}`);
  assert.equal(r.ops_per_s, r.ops / (r.elapsed_ms / 1000));
  for (const l of r.latencies_ms) assert.ok(l >= 20, `latency ${l}`);
});

test('runFor - bad options throw before anything runs', async () => {
  let calls = 0;
  const op = async () => {
    calls++;
  };
  await assert.rejects(runFor({ workers: 0, durationMs: 10, op }), RangeError);
  await assert.rejects(runFor({ workers: 1, durationMs: 0, op }), RangeError);
  assert.equal(calls, 0);
});
