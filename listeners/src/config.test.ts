import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, DEFAULT_FUNCTION_URL } from './config.js';
import { ERROR_CODES } from './errors.js';

const noFile = () => {
  throw new Error('ENOENT');
};

test('config - defaults fill everything but the secret', () => {
  const c = loadConfig({ SYNCMESH_MESH_SECRET: 's3cret' }, noFile);
  assert.equal(c.database, 'syncmesh');
  assert.deepEqual(c.collections, ['sensor_data']);
  assert.equal(c.metaDatabase, 'syncmesh_meta');
  assert.equal(c.functionUrl, DEFAULT_FUNCTION_URL);
  assert.equal(c.batchSize, 100);
  assert.ok(Object.isFrozen(c));
});

test('config - parses lists and numbers and trims the URL', () => {
  const c = loadConfig(
    { SYNCMESH_MESH_SECRET: 's', LISTENER_COLLECTIONS: ' a, b ,a,', LISTENER_BATCH_SIZE: '7', SYNCMESH_FUNCTION_URL: 'http://127.0.0.1:9/f/' },
    noFile,
  );
  assert.deepEqual(c.collections, ['a', 'b']);
  assert.equal(c.batchSize, 7);
  assert.equal(c.functionUrl, 'http://127.0.0.1:9/f');
});

test('config - the secret comes from the variable, else from the file (faasd secret by default)', () => {
  const files = (p: string) => ({ '/run/secrets/mesh': 'from-file\n', '/var/openfaas/secrets/mesh-secret': 'faasd\n' })[p] ?? '';
  assert.equal(loadConfig({ SYNCMESH_MESH_SECRET_FILE: '/run/secrets/mesh' }, files).meshSecret, 'from-file');
  assert.equal(loadConfig({}, files).meshSecret, 'faasd');
  assert.equal(loadConfig({ SYNCMESH_MESH_SECRET: 'env', SYNCMESH_MESH_SECRET_FILE: '/run/secrets/mesh' }, files).meshSecret, 'env');
  assert.throws(() => loadConfig({ SYNCMESH_MESH_SECRET_FILE: '/empty' }, files), /mesh secret is empty/);
});

test('config - rejects a missing secret, both secret sources, and bad values, naming them', () => {
  const bad: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{}, /no mesh secret: SYNCMESH_MESH_SECRET is unset and SYNCMESH_MESH_SECRET_FILE \/var\/openfaas\/secrets\/mesh-secret cannot be read/],
    [{ SYNCMESH_MESH_SECRET: 'a', LISTENER_BATCH_SIZE: '0' }, /LISTENER_BATCH_SIZE/],
    [{ SYNCMESH_MESH_SECRET: 'a', MONGODB_URI: 'http://x' }, /MONGODB_URI/],
    [{ SYNCMESH_MESH_SECRET: 'a', LISTENER_COLLECTIONS: 'ok,bad$name' }, /bad\$name/],
    [{ SYNCMESH_MESH_SECRET: 'a', LISTENER_META_DATABASE: 'syncmesh' }, /must differ/],
    [{ SYNCMESH_MESH_SECRET_FILE: '/nope' }, /SYNCMESH_MESH_SECRET_FILE \/nope cannot be read/],
  ];
  for (const [env, message] of bad) {
    assert.throws(() => loadConfig(env, noFile), (err: Error & { code?: string }) => {
      assert.equal(err.code, ERROR_CODES.CONFIG);
      assert.match(err.message, message);
      return true;
    });
  }
});
