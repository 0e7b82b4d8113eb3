import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { inspect } from 'node:util';
import { MeshKeys, MIN_SECRET_BYTES } from './keys.js';
import { canonicalV2, NONCE_HEADER, ORIGIN_HEADER, signV2, SIGNATURE_HEADER, TARGET_HEADER, TIMESTAMP_HEADER } from './sign.js';
import { hasSignatureHeaders, Verifier } from './verify.js';

const SECRET = 'mesh-auth-test-secret-0123456789abcdef';
const keys = new MeshKeys(SECRET);
const body = JSON.stringify({ ops: [{ op: 'upsert', id: 'a' }] });
const req = { method: 'POST', path: '/replicate', origin: 'node-a', target: 'node-b', body };

function verifierAt(nodeId: string, extra: Partial<ConstructorParameters<typeof Verifier>[0]> = {}): Verifier {
  return new Verifier({ keys, nodeId, ...extra });
}

test('mesh auth v2 - a signed request verifies at its target and names its origin', () => {
  const v = verifierAt('node-b');
  assert.deepEqual(v.verify('POST', '/replicate', signV2(keys, req), body), { ok: true, origin: 'node-a', version: 'v2' });
});

test('mesh auth v2 - a signature for B does not verify at C (cross-node replay)', () => {
  const h = signV2(keys, req);
  const atC = verifierAt('node-c').verify('POST', '/replicate', h, body);
  assert.equal(atC.ok, false);
  // Rewriting the target header does not help: C's key differs.
  const forged = verifierAt('node-c').verify('POST', '/replicate', { ...h, [TARGET_HEADER]: 'node-c' }, body);
  assert.equal(forged.ok, false);
});

test('mesh auth v2 - the same request is accepted once (replay inside the window)', () => {
  const v = verifierAt('node-b');
  const h = signV2(keys, req);
  assert.equal(v.verify('POST', '/replicate', h, body).ok, true);
  const again = v.verify('POST', '/replicate', h, body);
  assert.deepEqual(again, { ok: false, reason: 'replayed request: this nonce was already used' });
});

test('mesh auth v2 - method, path, body, origin and content-encoding are covered', () => {
  const h = signV2(keys, req);
  assert.equal(verifierAt('node-b').verify('POST', '/events', h, body).ok, false);
  assert.equal(verifierAt('node-b').verify('PUT', '/replicate', h, body).ok, false);
  assert.equal(verifierAt('node-b').verify('POST', '/replicate', h, body + ' ').ok, false);
  assert.equal(verifierAt('node-b').verify('POST', '/replicate', { ...h, [ORIGIN_HEADER]: 'node-x' }, body).ok, false);
  assert.equal(verifierAt('node-b').verify('POST', '/replicate', { ...h, 'content-encoding': 'gzip' }, body).ok, false);
});

test('mesh auth v2 - the body is verified as sent, before gunzip', () => {
  const gz = gzipSync(body);
  const h = signV2(keys, { ...req, body: gz, contentEncoding: 'gzip' });
  assert.equal(verifierAt('node-b').verify('POST', '/replicate', { ...h, 'content-encoding': 'gzip' }, gz).ok, true);
});

test('mesh auth v2 - header checks reject before the body is needed', () => {
  const v = verifierAt('node-b');
  const h = signV2(keys, req);
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{}, /missing/],
    [{ ...h, [TIMESTAMP_HEADER]: 'yesterday' }, /epoch milliseconds/],
    [{ ...h, [TIMESTAMP_HEADER]: String(Date.now() - 120_000) }, /120 s off; allowed is 30 s/],
    [{ ...h, [SIGNATURE_HEADER]: 'v0=abcd' }, /scheme must be v2/],
    [{ ...h, [SIGNATURE_HEADER]: 'v2=zz' }, /64 lowercase hex/],
    [{ ...h, [TARGET_HEADER]: 'node-c' }, /another node/],
    [{ ...h, [NONCE_HEADER]: 'short' }, /32 lowercase hex/],
    [{ [SIGNATURE_HEADER]: h[SIGNATURE_HEADER]!, [TIMESTAMP_HEADER]: h[TIMESTAMP_HEADER]! }, /needs x-syncmesh-origin/],
  ];
  for (const [headers, reason] of cases) {
    const r = v.checkHeaders('POST', '/replicate', headers);
    assert.equal(r.ok, false);
    assert.match((r as { reason: string }).reason, reason);
  }
});

test('mesh auth v2 - a forged signature is not remembered, so it cannot block the real request', () => {
  const v = verifierAt('node-b');
  const h = signV2(keys, req);
  const forged = { ...h, [SIGNATURE_HEADER]: `v2=${'0'.repeat(64)}` };
  assert.equal(v.verify('POST', '/replicate', forged, body).ok, false);
  assert.equal(v.verify('POST', '/replicate', h, body).ok, true);
});

test('mesh auth v2 - nonces are forgotten after the window and the cache is bounded', () => {
  let now = 1_000_000;
  const v = verifierAt('node-b', { now: () => now, windowMs: 1_000, maxNonces: 3 });
  for (let i = 0; i < 3; i++) assert.equal(v.verify('POST', '/replicate', signV2(keys, req, { nowMs: now }), body).ok, true);
  const full = v.verify('POST', '/replicate', signV2(keys, req, { nowMs: now }), body);
  assert.equal(full.ok, false);
  assert.match((full as { reason: string }).reason, /too many signed requests/);
  now += 1_001;
  assert.equal(v.verify('POST', '/replicate', signV2(keys, req, { nowMs: now }), body).ok, true);
  assert.equal(v.rememberedNonces, 1);
});

test('mesh auth v1 - accepted only when the deprecated flag gives the secret', () => {
  const ts = String(Date.now());
  const mac = createHmac('sha256', SECRET).update(`v1:${ts}:`).update(body).digest('hex');
  const h = { [TIMESTAMP_HEADER]: ts, [SIGNATURE_HEADER]: `v1=${mac}` };
  assert.equal(verifierAt('node-b').verify('POST', '/replicate', h, body).ok, false);
  assert.deepEqual(verifierAt('node-b', { v1Secret: SECRET }).verify('POST', '/replicate', h, body), { ok: true, origin: 'v1-peer', version: 'v1' });
});

test('mesh auth - secrets under 32 bytes are refused, and keys never print the secret', () => {
  assert.throws(() => new MeshKeys('x'.repeat(MIN_SECRET_BYTES - 1)), { code: 'EDGE_AUTH_WEAK_SECRET', message: /31 bytes; at least 32/ });
  const printed = `${JSON.stringify({ keys })} ${inspect(keys)}`;
  assert.doesNotMatch(printed, new RegExp(SECRET));
  assert.match(printed, new RegExp(keys.fingerprint));
});

test('mesh auth - hasSignatureHeaders spots any signature header', () => {
  assert.equal(hasSignatureHeaders({}), false);
  assert.equal(hasSignatureHeaders({ [SIGNATURE_HEADER]: 'x' }), true);
});

// Cross-checked with an independent Python implementation of the spec in README.md (hmac, hashlib).
test('mesh auth v2 - golden vector pins the wire format', () => {
  const golden = signV2(
    new MeshKeys('golden-secret-golden-secret-golden-secret'),
    { ...req, body: '{"a":1}' },
    { nowMs: 1_700_000_000_000, nonce: '00112233445566778899aabbccddeeff' },
  );
  assert.equal(
    canonicalV2({ ...req }, '1700000000000', '00112233445566778899aabbccddeeff', 'x'),
    'syncmesh-v2\nPOST\n/replicate\nidentity\nnode-a\nnode-b\n1700000000000\n00112233445566778899aabbccddeeff\nx',
  );
  assert.equal(golden[SIGNATURE_HEADER], 'v2=5f278904a1113ffd0378281b7939607162ed3ac1edb7daa0338701e94a6a9958');
});
