import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkLinkProof, linkProof } from './challenge.js';
import { MeshKeys } from './keys.js';
import { newNonce } from './sign.js';

const keys = new MeshKeys('link-proof-test-secret-0123456789abcdef');
const other = new MeshKeys('another-mesh-secret-0123456789abcdefgh');

test('link proof - a proof verifies only for the same roles, ids and nonces', () => {
  const p = { role: 'dialer' as const, prover: 'a', verifier: 'b', verifierNonce: newNonce(), proverNonce: newNonce() };
  const proof = linkProof(keys, p);
  assert.equal(checkLinkProof(keys, p, proof), true);
  assert.equal(checkLinkProof(keys, { ...p, prover: 'x' }, proof), false, 'spoofed prover id');
  assert.equal(checkLinkProof(keys, { ...p, verifier: 'c' }, proof), false, 'relayed to another node');
  assert.equal(checkLinkProof(keys, { ...p, role: 'acceptor' }, proof), false, 'reflected back');
  assert.equal(checkLinkProof(keys, { ...p, verifierNonce: newNonce() }, proof), false, 'replayed on a new link');
  assert.equal(checkLinkProof(other, p, proof), false, 'other mesh');
  assert.equal(checkLinkProof(keys, p, proof.subarray(0, 16)), false, 'truncated');
});
