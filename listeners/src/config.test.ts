import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, DEFAULT_FUNCTION_URL } from './config.js';
import { ERROR_CODES } from './errors.js';

const S = 'config-test-mesh-secret-of-32-bytes-or-more';
const noFile = () => {
  throw new Error('ENOENT');
};

test('config - defaults fill everything but the secret', () => {
  const c = loadConfig({ SYNCMESH_MESH_SECRET: S }, noFile);
  assert.equal(c.database, 'syncmesh');
  assert.deepEqual(c.collections, ['sensor_data']);
  assert.equal(c.metaDatabase, 'syncmesh_meta');
  assert.equal(c.functionUrl, DEFAULT_FUNCTION_URL);
  assert.equal(c.batchSize, 1_000);
  assert.ok(Object.isFrozen(c));
});

test('config - parses lists and numbers and trims the URL', () => {
  const c = loadConfig(
    { SYNCMESH_MESH_SECRET: S, LISTENER_COLLECTIONS: ' a, b ,a,', LISTENER_BATCH_SIZE: '7', SYNCMESH_FUNCTION_URL: 'http://127.0.0.1:9/f/' },
    noFile,
  );
  assert.deepEqual(c.collections, ['a', 'b']);
  assert.equal(c.batchSize, 7);
  assert.equal(c.functionUrl, 'http://127.0.0.1:9/f');
});

test('config - the secret comes from the variable, else from the file (faasd secret by default)', () => {
  const fromFile = 'from-file-mesh-secret-of-32-bytes-or-more';
  const faasd = 'faasd-mesh-secret-of-32-bytes-or-more-too';
  const files = (p: string) => ({ '/run/secrets/mesh': `${fromFile}\n`, '/var/openfaas/secrets/mesh-secret': `${faasd}\n` })[p] ?? '';
  assert.equal(loadConfig({ SYNCMESH_MESH_SECRET_FILE: '/run/secrets/mesh' }, files).meshSecret, fromFile);
  assert.equal(loadConfig({}, files).meshSecret, faasd);
  assert.equal(loadConfig({ SYNCMESH_MESH_SECRET: S, SYNCMESH_MESH_SECRET_FILE: '/run/secrets/mesh' }, files).meshSecret, S);
  assert.throws(() => loadConfig({ SYNCMESH_MESH_SECRET_FILE: '/empty' }, files), /mesh secret is empty/);
});

test('config - rejects a missing secret, both secret sources, and bad values, naming them', () => {
  const bad: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{}, /no mesh secret: SYNCMESH_MESH_SECRET is unset and SYNCMESH_MESH_SECRET_FILE \/var\/openfaas\/secrets\/mesh-secret cannot be read/],
    [{ SYNCMESH_MESH_SECRET: S, LISTENER_BATCH_SIZE: '0' }, /LISTENER_BATCH_SIZE/],
    [{ SYNCMESH_MESH_SECRET: S, MONGODB_URI: 'http://x' }, /MONGODB_URI/],
    [{ SYNCMESH_MESH_SECRET: S, LISTENER_COLLECTIONS: 'ok,bad$name' }, /bad\$name/],
    [{ SYNCMESH_MESH_SECRET: S, LISTENER_META_DATABASE: 'syncmesh' }, /must differ/],
    [{ SYNCMESH_MESH_SECRET_FILE: '/nope' }, /SYNCMESH_MESH_SECRET_FILE \/nope cannot be read/],
    [{ SYNCMESH_MESH_SECRET: 'short-secret' }, /the mesh secret has 12 bytes; at least 32 are required/],
    [{ SYNCMESH_MESH_SECRET: S, LISTENER_FUNCTION_NODE_ID: 'no spaces' }, /LISTENER_FUNCTION_NODE_ID 'no spaces' is not a valid node id/],
  ];
  for (const [env, message] of bad) {
    assert.throws(
      () => loadConfig(env, noFile),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, ERROR_CODES.CONFIG);
        assert.match(err.message, message);
        return true;
      },
    );
  }
});

test('config - the function node id defaults to the listener node id', () => {
  assert.equal(loadConfig({ SYNCMESH_MESH_SECRET: S, LISTENER_NODE_ID: 'node-a' }, noFile).functionNodeId, 'node-a');
  assert.equal(loadConfig({ SYNCMESH_MESH_SECRET: S, LISTENER_NODE_ID: 'node-a', LISTENER_FUNCTION_NODE_ID: 'fn-a' }, noFile).functionNodeId, 'fn-a');
});

test('config - MONGODB_URI_FILE supplies the URI; both set, unreadable or not a URI is refused without quoting it', () => {
  const uri = 'mongodb://listener:s3cret-Pa55@db.example:27017/?replicaSet=rs0';
  const files: Record<string, string> = { '/run/secrets/mongodb-uri': `${uri}\n`, '/run/secrets/bad': 'http://listener:s3cret-Pa55@x/' };
  const read = (p: string) => {
    const v = files[p];
    if (v === undefined) throw Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
    return v;
  };
  assert.equal(loadConfig({ SYNCMESH_MESH_SECRET: S, MONGODB_URI_FILE: '/run/secrets/mongodb-uri' }, read).mongoUri, uri);
  for (const [env, want] of [
    [{ MONGODB_URI_FILE: '/run/secrets/mongodb-uri', MONGODB_URI: uri }, /both set/],
    [{ MONGODB_URI_FILE: '/run/secrets/missing' }, /MONGODB_URI_FILE: cannot read \/run\/secrets\/missing \(ENOENT\)/],
    [{ MONGODB_URI_FILE: '/run/secrets/bad' }, /must hold a URI starting with mongodb:\/\//],
  ] as const) {
    assert.throws(
      () => loadConfig({ SYNCMESH_MESH_SECRET: S, ...env }, read),
      (err: Error & { code?: string }) => err.code === ERROR_CODES.CONFIG && want.test(err.message) && !err.message.includes('s3cret-Pa55'),
    );
  }
});
