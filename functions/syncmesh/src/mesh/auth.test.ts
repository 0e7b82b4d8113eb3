import { test } from 'node:test';
import assert from 'node:assert/strict';
import { signRequest, verifyRequest, SIGNATURE_HEADER, TIMESTAMP_HEADER } from './auth.js';

const secret = 'mesh-secret-for-tests';
const body = JSON.stringify({ query: '{ docEstimate }' });

test('mesh auth - a signed body verifies', () => {
  assert.deepEqual(verifyRequest(secret, signRequest(secret, body), body), { ok: true });
});

test('mesh auth - a changed body is rejected', () => {
  const r = verifyRequest(secret, signRequest(secret, body), body + ' ');
  assert.equal(r.ok, false);
});

test('mesh auth - another secret is rejected', () => {
  const r = verifyRequest('other', signRequest(secret, body), body);
  assert.deepEqual(r, { ok: false, reason: 'signature does not match the body (wrong mesh secret?)' });
});

test('mesh auth - an old timestamp is rejected', () => {
  const headers = signRequest(secret, body, Date.now() - 60_000);
  const r = verifyRequest(secret, headers, body);
  assert.equal(r.ok, false);
  assert.match((r as { reason: string }).reason, /allowed is 30 s/);
});

test('mesh auth - missing or malformed headers are rejected', () => {
  assert.equal(verifyRequest(secret, {}, body).ok, false);
  const h = signRequest(secret, body);
  assert.equal(verifyRequest(secret, { ...h, [TIMESTAMP_HEADER]: 'yesterday' }, body).ok, false);
  assert.equal(verifyRequest(secret, { ...h, [SIGNATURE_HEADER]: 'v0=abcd' }, body).ok, false);
  assert.equal(verifyRequest(secret, { ...h, [SIGNATURE_HEADER]: 'v1=zz' }, body).ok, false);
});
