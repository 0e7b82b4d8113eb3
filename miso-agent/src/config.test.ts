import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, DEFAULT_DEBOUNCE_MS } from './config.js';
import { MisoError } from './errors.js';

const secret = { MISO_MESH_SECRET: 's'.repeat(32) };

test('config - defaults are applied and the result is frozen', () => {
  const c = loadConfig(secret);
  assert.equal(c.debounceMs, DEFAULT_DEBOUNCE_MS);
  assert.deepEqual(c.peers, []);
  assert.equal(c.mdns, false);
  assert.equal(c.mongodbUri, undefined);
  assert.ok(Object.isFrozen(c));
});

test('config - peers, mdns and intervals are parsed (0 allowed)', () => {
  const c = loadConfig({ ...secret, MISO_PEERS: '10.0.0.1:7650, node-2@10.0.0.2:7650', MISO_MDNS: 'on', MISO_DEBOUNCE_MS: '0', MISO_PERSIST_DELAY_MS: '0' });
  assert.deepEqual(c.peers, [
    { address: '10.0.0.1:7650', nodeId: undefined },
    { address: '10.0.0.2:7650', nodeId: 'node-2' },
  ]);
  assert.equal(c.mdns, true);
  assert.equal(c.debounceMs, 0);
  assert.equal(c.persistDelayMs, 0);
});

test('config - bad values are EDGE_MISO_CONFIG naming every variable', () => {
  assert.throws(
    () => loadConfig({ MISO_MESH_SECRET: 'short', MISO_PEERS: 'nohost', MISO_DEBOUNCE_MS: '-1' }),
    (e: unknown) =>
      e instanceof MisoError &&
      e.code === 'EDGE_MISO_CONFIG' &&
      /MISO_MESH_SECRET/.test(e.message) &&
      /MISO_PEERS/.test(e.message) &&
      /MISO_DEBOUNCE_MS/.test(e.message),
  );
  assert.throws(() => loadConfig({ ...secret, MISO_HEARTBEAT_MS: '5000', MISO_PEER_TIMEOUT_MS: '1000' }), /MISO_PEER_TIMEOUT_MS/);
});

test('config - a mesh secret under 32 bytes is refused with the byte count and how to make one', () => {
  for (const env of [{}, { MISO_MESH_SECRET: 'x'.repeat(31) }, { MISO_MESH_SECRET: 'é'.repeat(15) }]) {
    assert.throws(
      () => loadConfig(env),
      (e: unknown) =>
        e instanceof MisoError &&
        e.code === 'EDGE_MISO_CONFIG' &&
        /MISO_MESH_SECRET: .*at least 32 bytes|MISO_MESH_SECRET: has \d+ bytes; at least 32/.test(e.message) &&
        /openssl rand -hex 32/.test(e.message),
      JSON.stringify(env),
    );
  }
  // 16 two-byte characters are 32 bytes
  assert.equal(loadConfig({ MISO_MESH_SECRET: 'é'.repeat(16) }).meshSecret.length, 16);
  // the secret never appears in the message
  assert.throws(
    () => loadConfig({ MISO_MESH_SECRET: 'do-not-print-me' }),
    (e: unknown) => e instanceof Error && !e.message.includes('do-not-print-me'),
  );
});

test('config - a static peer is host:port or node-id@host:port', () => {
  assert.throws(() => loadConfig({ ...secret, MISO_PEERS: 'a@b@10.0.0.1:1' }), /MISO_PEERS/);
  assert.throws(() => loadConfig({ ...secret, MISO_PEERS: 'bad id@10.0.0.1:1' }), /MISO_PEERS/);
  assert.deepEqual(loadConfig({ ...secret, MISO_PEERS: 'n.1@[::1]:7650' }).peers, [{ address: '[::1]:7650', nodeId: 'n.1' }]);
});

test('config - MONGODB_URI_FILE supplies the URI; both set, unreadable or not a URI is refused without quoting it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'smf-agent-cfg-'));
  try {
    const file = join(dir, 'mongodb-uri');
    const uri = 'mongodb://agent:s3cret-Pa55@db.example:27017/?replicaSet=rs0';
    writeFileSync(file, `${uri}\n`);
    assert.equal(loadConfig({ ...secret, MONGODB_URI_FILE: file }).mongodbUri, uri);
    writeFileSync(join(dir, 'bad'), 'http://agent:s3cret-Pa55@x/');
    for (const [env, want] of [
      [{ MONGODB_URI_FILE: file, MONGODB_URI: uri }, /both set/],
      [{ MONGODB_URI_FILE: join(dir, 'missing') }, /MONGODB_URI_FILE: cannot read .*missing \(ENOENT\)/],
      [{ MONGODB_URI_FILE: join(dir, 'bad') }, /must hold a URI starting with mongodb:\/\//],
    ] as const) {
      assert.throws(
        () => loadConfig({ ...secret, ...env }),
        (err: unknown) => err instanceof MisoError && err.code === 'EDGE_MISO_CONFIG' && want.test(err.message) && !err.message.includes('s3cret-Pa55'),
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
