import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from './config.js';

const SECRET = 'config-test-mesh-secret-of-32-bytes-or-more';
const base = { SYNCMESH_NODE_ID: 'node-1', SYNCMESH_MESH_SECRET_FILE: '/nonexistent/mesh-secret' };

test('config - a mesh secret shorter than 32 bytes stops the node before anything starts', () => {
  assert.throws(() => loadConfig({ ...base, SYNCMESH_MESH_SECRET: 'integration-test-mesh-secret' }), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'EDGE_SYNCMESH_CONFIG');
    assert.match(err.message, /has 28 bytes; at least 32 are required \(generate one with: openssl rand -hex 32\)/);
    assert.doesNotMatch(err.message, /integration-test-mesh-secret/, 'the message never shows the secret');
    return true;
  });
  assert.equal(loadConfig({ ...base, SYNCMESH_MESH_SECRET: SECRET }).meshSecret, SECRET);
  assert.equal(loadConfig(base).meshSecret, undefined, 'no secret: a standalone node');
});

test('config - v1 signatures are off unless SYNCMESH_AUTH_ACCEPT_V1 turns them on; tombstones kept 7 days', () => {
  const c = loadConfig({ ...base, SYNCMESH_MESH_SECRET: SECRET });
  assert.equal(c.acceptV1, false);
  assert.equal(c.tombstoneTtlS, 7 * 24 * 3600);
  assert.equal(c.maxDiscardBytes, 16 * 1024 * 1024);
  assert.equal(loadConfig({ ...base, SYNCMESH_AUTH_ACCEPT_V1: 'true' }).acceptV1, true);
  assert.throws(() => loadConfig({ ...base, SYNCMESH_AUTH_ACCEPT_V1: 'yes' }), /SYNCMESH_AUTH_ACCEPT_V1/);
});

test('config - a node id that is not valid in signatures is refused', () => {
  assert.throws(() => loadConfig({ ...base, SYNCMESH_NODE_ID: 'node 1' }), /SYNCMESH_NODE_ID/);
});
