import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from './config.js';
import { MeshError } from './errors.js';

const isConfigError = (pattern: RegExp) => (e: unknown) => e instanceof MeshError && e.code === 'EDGE_MESH_CONFIG' && pattern.test(e.message);

test('config - defaults', () => {
  const cfg = loadConfig({ MESH_ISOLATION: 'loopback' });
  assert.equal(cfg.name, 'sme0');
  assert.equal(cfg.nodes, 3);
  assert.equal(cfg.latency, 'none');
  assert.equal(cfg.dataDir, undefined);
  assert.equal(cfg.forwardMode, 'parallel');
  assert.ok(Object.isFrozen(cfg));
});

test('config - a bad value is named in the error', () => {
  assert.throws(() => loadConfig({ MESH_ISOLATION: 'loopback', MESH_NAME: 'Way-too-long-name' }), isConfigError(/MESH_NAME/));
  assert.throws(() => loadConfig({ MESH_ISOLATION: 'loopback', MESH_NODES: '31' }), isConfigError(/MESH_NODES/));
  assert.throws(() => loadConfig({ MESH_ISOLATION: 'loopback', MESH_SUBNET: '192.168.1.0/24' }), isConfigError(/MESH_SUBNET/));
  assert.throws(() => loadConfig({ MESH_ISOLATION: 'loopback', MESH_NODE_TIMEOUT_MS: '9000', MESH_DEADLINE_MS: '1000' }), isConfigError(/MESH_DEADLINE_MS/));
});

test('config - an empty DATA means generated data', () => {
  assert.equal(loadConfig({ MESH_ISOLATION: 'loopback', MESH_DATA: '' }).dataDir, undefined);
});
