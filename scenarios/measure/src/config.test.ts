import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from './config.js';
import { ScenarioError } from './errors.js';

test('config - defaults: both systems, 3 nodes, aggregate, 1 day, 20 requests, regional, the paper matrix', () => {
  const c = loadConfig({});
  assert.deepEqual(c.systems, ['baseline', 'syncmesh']);
  assert.equal(c.nodes, 3);
  assert.equal(c.workload, 'aggregate');
  assert.equal(c.days, 1);
  assert.equal(c.requests, 20);
  assert.equal(c.latency, 'regional');
  assert.deepEqual(c.matrix.nodes, [3, 6, 9, 12]);
  assert.deepEqual(c.matrix.workloads, ['collect', 'aggregate']);
  assert.ok(Object.isFrozen(c));
});

test('config - empty variables (as make passes them) count as unset', () => {
  assert.equal(loadConfig({ SCENARIO_NODES: '', SCENARIO_SYSTEM: '' }).nodes, 3);
});

test('config - a bad value names the variable', () => {
  assert.throws(
    () => loadConfig({ SCENARIO_WORKLOAD: 'scan', SCENARIO_NODES: '31' }),
    (e: unknown) => e instanceof ScenarioError && e.code === 'EDGE_SCENARIO_CONFIG' && /SCENARIO_WORKLOAD/.test(e.message) && /SCENARIO_NODES/.test(e.message),
  );
  assert.throws(() => loadConfig({ SCENARIO_MATRIX_NODES: '3,x' }), /SCENARIO_MATRIX_NODES/);
});

test('config - lists parse into numbers and systems', () => {
  const c = loadConfig({ SCENARIO_MATRIX_NODES: '3,12', SCENARIO_MATRIX_DAYS: '1,7,14,30', SCENARIO_SYSTEM: 'syncmesh' });
  assert.deepEqual(c.matrix.nodes, [3, 12]);
  assert.deepEqual(c.matrix.days, [1, 7, 14, 30]);
  assert.deepEqual(c.systems, ['syncmesh']);
});

test('config - a topology: syncmesh by default, node count and profile left to the mesh unless set', () => {
  const c = loadConfig({ SCENARIO_TOPOLOGY: 'x/topology.json' });
  assert.deepEqual(c.systems, ['syncmesh']);
  assert.ok(c.existing);
  assert.match(c.existing.topologyPath, /\/x\/topology\.json$/);
  assert.equal(c.existing.requestedNodes, undefined);
  assert.equal(c.existing.requestedLatency, undefined);
  assert.equal(c.existing.captureNetns, undefined);
  assert.equal(c.existing.capture, 'links');
  const d = loadConfig({ SCENARIO_TOPOLOGY: 't.json', SCENARIO_NODES: '5', SCENARIO_CAPTURE_NETNS: 'host', SCENARIO_CAPTURE: 'bridge' });
  assert.equal(d.existing?.requestedNodes, 5);
  assert.equal(d.existing?.captureNetns, null);
  assert.equal(d.existing?.capture, 'bridge');
  assert.equal(loadConfig({}).existing, null);
});

test('config - a topology refuses the baseline, saying why', () => {
  for (const system of ['baseline', 'both']) {
    assert.throws(
      () => loadConfig({ SCENARIO_TOPOLOGY: 't.json', SCENARIO_SYSTEM: system }),
      (e: unknown) =>
        e instanceof ScenarioError && e.code === 'EDGE_SCENARIO_CONFIG' && /central server/.test(e.message) && /SCENARIO_SYSTEM=syncmesh/.test(e.message),
    );
  }
});

test('config - capture settings without a topology are refused', () => {
  assert.throws(() => loadConfig({ SCENARIO_CAPTURE_NETNS: 'smt-lv' }), /SCENARIO_TOPOLOGY/);
  assert.throws(() => loadConfig({ SCENARIO_CAPTURE: 'bridge' }), /SCENARIO_TOPOLOGY/);
});
