import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_REPLICATION_SEMI_SPACE_MB, loadConfig, REPO_ROOT } from './config.js';
import { MeshError } from './errors.js';

const isConfigError = (pattern: RegExp) => (e: unknown) => e instanceof MeshError && e.code === 'EDGE_MESH_CONFIG' && pattern.test(e.message);

test('config - defaults', () => {
  const cfg = loadConfig({ MESH_ISOLATION: 'loopback' });
  assert.equal(cfg.name, 'sme0');
  assert.equal(cfg.nodes, 3);
  assert.equal(cfg.latency, 'none');
  assert.equal(cfg.dataDir, undefined);
  assert.equal(cfg.forwardMode, 'parallel');
  assert.equal(cfg.replicationSemiSpaceMb, 8, 'as NODE_OPTIONS of the listener and the function in images/node/node.yml');
  assert.ok(Object.isFrozen(cfg));
});

test('config - a bad value is named in the error', () => {
  assert.throws(() => loadConfig({ MESH_ISOLATION: 'loopback', MESH_NAME: 'Way-too-long-name' }), isConfigError(/MESH_NAME/));
  assert.throws(() => loadConfig({ MESH_ISOLATION: 'loopback', MESH_NODES: '31' }), isConfigError(/MESH_NODES/));
  assert.throws(() => loadConfig({ MESH_ISOLATION: 'loopback', MESH_SUBNET: '192.168.1.0/24' }), isConfigError(/MESH_SUBNET/));
  assert.throws(() => loadConfig({ MESH_ISOLATION: 'loopback', MESH_REPLICATION_SEMI_SPACE_MB: '0' }), isConfigError(/MESH_REPLICATION_SEMI_SPACE_MB/));
  assert.throws(() => loadConfig({ MESH_ISOLATION: 'loopback', MESH_NODE_TIMEOUT_MS: '9000', MESH_DEADLINE_MS: '1000' }), isConfigError(/MESH_DEADLINE_MS/));
});

test('config - an empty DATA means generated data', () => {
  assert.equal(loadConfig({ MESH_ISOLATION: 'loopback', MESH_DATA: '' }).dataDir, undefined);
});

test('config - the function and the listener get the same young generation on the process mesh as in the node description', () => {
  const description = readFileSync(join(REPO_ROOT, 'images', 'node', 'node.yml'), 'utf8');
  const sizes = [...description.matchAll(/NODE_OPTIONS[=:] *--max-semi-space-size=(\d+)/g)].map((m) => Number(m[1]));
  assert.deepEqual(sizes, [DEFAULT_REPLICATION_SEMI_SPACE_MB, DEFAULT_REPLICATION_SEMI_SPACE_MB], 'the listener and the function in images/node/node.yml');
});
