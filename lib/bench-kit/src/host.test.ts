import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { test } from 'node:test';
import { hostInfo } from './host.js';
import { resultsDir, resultsPath, writeResults } from './results.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

test('hostInfo - read from the machine', () => {
  const h = hostInfo();
  assert.equal(h.cpus, availableParallelism());
  assert.ok(h.cpus >= 1);
  assert.ok(h.total_memory_bytes > 0);
  assert.equal(h.load_average.length, 3);
  assert.equal(h.node, process.version);
  assert.ok(h.cpu_model.length > 0);
});

test('results - bench-results at the repository root, BENCH_RESULTS_DIR overrides, names are checked', () => {
  assert.match(resultsPath('miso', 'json', {}), /\/bench-results\/miso\.json$/);
  assert.equal(resultsDir({ BENCH_RESULTS_DIR: '/tmp/x' }), '/tmp/x');
  assert.throws(() => resultsPath('../escape', 'json', {}), RangeError);
  const dir = mkdtempSync(join(tmpdir(), 'bench-kit-'));
  try {
    const p = writeResults(resultsPath('demo', 'json', { BENCH_RESULTS_DIR: join(dir, 'sub') }), { a: 1 });
    assert.deepEqual(JSON.parse(readFileSync(p, 'utf8')), { a: 1 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
