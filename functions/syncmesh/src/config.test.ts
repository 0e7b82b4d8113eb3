import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from './config.js';

const SECRET = 'config-test-mesh-secret-of-32-bytes-or-more';
const base = { SYNCMESH_NODE_ID: 'node-1', SYNCMESH_MESH_SECRET_FILE: '/nonexistent/mesh-secret' };

test('config - a mesh secret shorter than 32 bytes stops the node before anything starts', () => {
  assert.throws(
    () => loadConfig({ ...base, SYNCMESH_MESH_SECRET: 'integration-test-mesh-secret' }),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'EDGE_SYNCMESH_CONFIG');
      assert.match(err.message, /has 28 bytes; at least 32 are required \(generate one with: openssl rand -hex 32\)/);
      assert.doesNotMatch(err.message, /integration-test-mesh-secret/, 'the message never shows the secret');
      return true;
    },
  );
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

const BASE = { SYNCMESH_NODE_ID: 'cfg', SYNCMESH_MESH_SECRET_FILE: '/nonexistent/mesh-secret', SYNCMESH_WRITE_KEY_FILE: '/nonexistent/write-key' };
const KEY = 'w'.repeat(32);

test('config - security defaults: no write key (writes refused), open reads, registry-only peers, cost limits', () => {
  const c = loadConfig(BASE);
  assert.equal(c.writeKey, undefined);
  assert.equal(c.readKey, undefined);
  assert.deepEqual(c.allowedPeers.entries, []);
  assert.equal(c.maxRootFields, 20);
  assert.equal(c.maxTotalLimit, 200_000);
  assert.equal(c.requestDeadlineMs, 20_000);
  assert.equal(c.maxDeleteRangeMs, 31 * 86_400_000);
});

test('config - keys need 32 bytes and the write key must not be the mesh secret', () => {
  assert.equal(loadConfig({ ...BASE, SYNCMESH_WRITE_KEY: KEY }).writeKey, KEY);
  assert.throws(() => loadConfig({ ...BASE, SYNCMESH_WRITE_KEY: 'short' }), /SYNCMESH_WRITE_KEY: the write key has 5 bytes; at least 32/);
  assert.throws(() => loadConfig({ ...BASE, SYNCMESH_READ_KEY: 'short' }), /SYNCMESH_READ_KEY: the read key has 5 bytes/);
  assert.throws(() => loadConfig({ ...BASE, SYNCMESH_WRITE_KEY: KEY, SYNCMESH_MESH_SECRET: KEY }), /SYNCMESH_WRITE_KEY must differ from the mesh secret/);
});

test('config - a bad allow-list or deadline stops the start, naming the variable', () => {
  assert.throws(() => loadConfig({ ...BASE, SYNCMESH_ALLOWED_PEERS: '10.0.0.0/40' }), /SYNCMESH_ALLOWED_PEERS: '10.0.0.0\/40' is not a valid network/);
  assert.throws(
    () => loadConfig({ ...BASE, SYNCMESH_REQUEST_DEADLINE_MS: '1000' }),
    /SYNCMESH_REQUEST_DEADLINE_MS \(1000\) must be at least SYNCMESH_DEADLINE_MS/,
  );
  // unset, it follows a long fan-out deadline
  assert.equal(loadConfig({ ...BASE, SYNCMESH_DEADLINE_MS: '120000' }).requestDeadlineMs, 125_000);
});

test('config - MONGODB_URI_FILE supplies the URI (credentials stay out of env); both set, unreadable or not a URI is refused without quoting it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'smf-cfg-'));
  try {
    const file = join(dir, 'mongodb-uri');
    const uri = 'mongodb://fn-user:s3cret-Pa55@db.example:27017/?authSource=admin';
    writeFileSync(file, `${uri}\n`);
    assert.equal(loadConfig({ ...BASE, MONGODB_URI_FILE: file }).mongodbUri, uri);
    const refused = (env: Record<string, string>, want: RegExp) =>
      assert.throws(
        () => loadConfig({ ...BASE, ...env }),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'EDGE_SYNCMESH_CONFIG');
          assert.match(err.message, want);
          assert.doesNotMatch(err.message, /s3cret-Pa55/, 'the message never shows the URI');
          return true;
        },
      );
    refused({ MONGODB_URI_FILE: file, MONGODB_URI: uri }, /MONGODB_URI and MONGODB_URI_FILE are both set/);
    refused({ MONGODB_URI_FILE: join(dir, 'missing') }, /MONGODB_URI_FILE: cannot read .*missing \(ENOENT\)/);
    writeFileSync(file, 'http://fn-user:s3cret-Pa55@db.example/');
    refused({ MONGODB_URI_FILE: file }, /MONGODB_URI_FILE: .* must hold a URI starting with mongodb:\/\//);
    assert.equal(loadConfig({ ...BASE, MONGODB_URI_FILE: '' }).mongodbUri, 'mongodb://127.0.0.1:27017/?directConnection=true', 'empty = unset');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
