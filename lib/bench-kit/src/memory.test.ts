import assert from 'node:assert/strict';
import { test } from 'node:test';
import { peakRssMb, statusBytes } from './memory.js';

test("this process's resident set is read from /proc, its peak at least as large", () => {
  const rss = statusBytes(process.pid, 'VmRSS');
  const peak = statusBytes(process.pid, 'VmHWM');
  assert.ok(rss !== null && rss > 1024 * 1024, `VmRSS ${rss}`);
  assert.ok(peak !== null && peak >= rss, `VmHWM ${peak} >= VmRSS ${rss}`);
  assert.ok(Math.abs(peakRssMb(process.pid) * 1024 * 1024 - peak) < 64 * 1024 * 1024);
});

test('a process that does not exist has no memory (null, NaN), never a throw', () => {
  assert.equal(statusBytes(2 ** 22 + 1, 'VmRSS'), null);
  assert.ok(Number.isNaN(peakRssMb(2 ** 22 + 1)));
});
