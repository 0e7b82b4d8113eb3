import assert from 'node:assert/strict';
import { createPublicKey, randomBytes, verify } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fromSeed } from '@nats-io/nkeys';
import { ed25519PublicKey, nkeyFromPublicKey, nkeyFromSeed, nkeyPublic, readSeed, writeEd25519Pem } from './identity.js';

test('identity - a node Ed25519 seed is its NATS nkey: the same public key, signatures verify with node:crypto', () => {
  const seed = randomBytes(32);
  const nk = nkeyFromSeed(seed);
  assert.match(nk, /^SU[A-Z2-7]{56}$/);
  const kp = fromSeed(new TextEncoder().encode(nk));
  assert.equal(kp.getPublicKey(), nkeyPublic(seed));
  assert.equal(nkeyFromPublicKey(ed25519PublicKey(seed)), nkeyPublic(seed), 'the U key follows from the Ed25519 public key alone');
  const nonce = randomBytes(16);
  const sig = kp.sign(nonce);
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), ed25519PublicKey(seed)]);
  assert.ok(
    verify(null, nonce, createPublicKey({ key: spki, format: 'der', type: 'spki' }), sig),
    'the nkey signature is an Ed25519 signature of the node key',
  );
});

test('identity - seeds are read from PEM, hex or raw files; anything else is refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ident-'));
  const seed = randomBytes(32);
  writeEd25519Pem(seed, join(dir, 'k.pem'));
  writeFileSync(join(dir, 'k.hex'), seed.toString('hex'));
  writeFileSync(join(dir, 'k.raw'), seed);
  writeFileSync(join(dir, 'bad'), 'hello');
  for (const f of ['k.pem', 'k.hex', 'k.raw']) assert.deepEqual(Buffer.from(readSeed(join(dir, f))), seed, f);
  assert.throws(() => readSeed(join(dir, 'bad')), { code: 'EDGE_COORDINATION_BAD_IDENTITY' });
  assert.throws(() => readSeed(join(dir, 'missing')), { code: 'EDGE_COORDINATION_BAD_IDENTITY' });
  assert.throws(() => nkeyFromSeed(randomBytes(31)), { code: 'EDGE_COORDINATION_BAD_IDENTITY' });
});
