import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startSampler } from './sampler.js';

test('sampler - the CPU and resident memory of a watched process, per process and per role', async () => {
  const sampler = startSampler([{ role: 'self', node: null, pid: process.pid }], 20);
  const until = performance.now() + 300;
  while (performance.now() < until) Math.sqrt(Math.random()); // busy: about 300 ms of CPU
  await new Promise((r) => setTimeout(r, 50));
  const usage = sampler.stop();
  const [p] = usage.processes;
  assert.ok(p && p.cpu_s >= 0.1, `cpu_s ${p?.cpu_s}`);
  assert.ok(p.rss_max_mb > 1 && p.rss_avg_mb > 1 && p.rss_max_mb >= p.rss_avg_mb, JSON.stringify(p));
  assert.ok(p.samples >= 2);
  assert.deepEqual(
    usage.roles.map((r) => [r.role, r.processes]),
    [['self', 1]],
  );
});
