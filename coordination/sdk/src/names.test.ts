import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalJson } from './codec.js';
import { loadConfig } from './config.js';
import { checkInteger, checkNamespace, checkObjectName, decodeMapKey, encodeMapKey } from './names.js';

test('names - namespaces and object names: letters, digits, _ and -; anything else is a clear error', () => {
  assert.equal(checkNamespace('kmeans_1'), 'kmeans_1');
  for (const bad of ['', 'a.b', 'a b', 'a*', 'a>', 'ä', 'x'.repeat(65), 42]) {
    assert.throws(
      () => checkNamespace(bad),
      (e: Error & { code?: string }) => e.code === 'EDGE_COORDINATION_SDK_BAD_NAME' && e.message.includes('letters, digits'),
    );
    assert.throws(() => checkObjectName(bad), { code: 'EDGE_COORDINATION_SDK_BAD_NAME' });
  }
});

test('names - map keys of any characters round-trip as KV-safe tokens', () => {
  for (const k of ['a b', 'x.y.>', 'ünï/cödé', '*']) {
    const t = encodeMapKey(k);
    assert.match(t, /^[A-Za-z0-9_-]+$/);
    assert.equal(decodeMapKey(t), k);
  }
  assert.throws(() => encodeMapKey(''), { code: 'EDGE_COORDINATION_SDK_BAD_NAME' });
  assert.throws(() => encodeMapKey('x'.repeat(1025)), { code: 'EDGE_COORDINATION_SDK_BAD_NAME' });
});

test('names - integers and values are checked before anything is sent', () => {
  assert.throws(() => checkInteger('delta', 1.5), { code: 'EDGE_COORDINATION_SDK_BAD_ARGUMENT' });
  assert.throws(() => checkInteger('delta', Number.MAX_SAFE_INTEGER + 1), { code: 'EDGE_COORDINATION_SDK_BAD_ARGUMENT' });
  assert.equal(canonicalJson({ b: 1, a: [{ d: 2, c: 1 }] }), '{"a":[{"c":1,"d":2}],"b":1}');
  assert.throws(() => canonicalJson({ a: undefined }), { code: 'EDGE_COORDINATION_SDK_BAD_ARGUMENT' });
  assert.throws(() => canonicalJson(Number.NaN), { code: 'EDGE_COORDINATION_SDK_BAD_ARGUMENT' });
});

test('config - the SDK environment is validated once, naming the variable', () => {
  const c = loadConfig({});
  assert.deepEqual(c.servers, ['nats://127.0.0.1:4222']);
  assert.equal(c.replicas, 3);
  assert.throws(
    () => loadConfig({ COORDINATION_NAMESPACE: 'a.b' }),
    (e: Error & { code?: string }) => e.code === 'EDGE_COORDINATION_SDK_CONFIG' && e.message.includes('COORDINATION_NAMESPACE'),
  );
  assert.throws(() => loadConfig({ COORDINATION_REPLICAS: '2' }), { code: 'EDGE_COORDINATION_SDK_CONFIG' });
});
