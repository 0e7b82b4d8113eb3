import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { PLOT_SCRIPT, plotResults } from './plot.js';

test('the plotting script is where the kit says', () => {
  assert.ok(existsSync(PLOT_SCRIPT), PLOT_SCRIPT);
});

test('without a Python the error says how to get one and that the JSON is kept', () => {
  assert.throws(() => plotResults('function', '/tmp/x.json', { BENCH_PYTHON: '/nonexistent/python' }), /make scenarios-venv.*\/tmp\/x\.json is written/);
  assert.throws(() => plotResults('function', '/tmp/x.txt', {}), /ends in \.json/);
});
