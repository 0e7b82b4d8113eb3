/**
 * Challenge–response proofs for long-lived links (the MISO agents' gRPC streams), built on the
 * same per-node keys: each side proves it holds the mesh secret by MACing the other side's
 * fresh nonce with the key of the node it claims to be talking to, so both directions are
 * authenticated and bound to both ids.
 *
 *   proof = HMAC-SHA256(K(verifier, "agent"), "syncmesh-link-v1" \n role \n prover \n verifier \n verifier's nonce \n prover's nonce)
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { MeshKeys } from './keys.js';

export type LinkRole = 'dialer' | 'acceptor';

export interface LinkProofInput {
  role: LinkRole;
  /** Id of the node that makes the proof. */
  prover: string;
  /** Id of the node that checks it (whose key signs). */
  verifier: string;
  /** The nonce the verifier sent (fresh, random). */
  verifierNonce: string;
  /** The nonce the prover sent. */
  proverNonce: string;
}

export function linkProof(keys: MeshKeys, p: LinkProofInput): Buffer {
  const text = ['syncmesh-link-v1', p.role, p.prover, p.verifier, p.verifierNonce, p.proverNonce].join('\n');
  return createHmac('sha256', keys.keyFor(p.verifier, 'agent')).update(text).digest();
}

/** Constant-time check of a proof received from `p.prover`. */
export function checkLinkProof(keys: MeshKeys, p: LinkProofInput, proof: Uint8Array): boolean {
  const expected = linkProof(keys, p);
  return proof.length === expected.length && timingSafeEqual(expected, proof);
}
