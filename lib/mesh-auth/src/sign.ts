/**
 * Mesh request signatures, protocol v2 (the wire format is documented in ../README.md).
 *
 * A signed request carries five headers:
 *
 *   x-syncmesh-origin:    sender's node id
 *   x-syncmesh-target:    receiver's node id
 *   x-syncmesh-timestamp: unix epoch milliseconds
 *   x-syncmesh-nonce:     32 lowercase hex digits, fresh per request
 *   x-syncmesh-signature: v2=<hex HMAC-SHA256(K(target, "http"), canonical)>
 *
 * where canonical is these lines joined by "\n":
 *
 *   syncmesh-v2, METHOD, path, content-encoding (or "identity"), origin, target, timestamp,
 *   nonce, hex SHA-256 of the body bytes exactly as sent (after any gzip)
 *
 * Signing the body as sent lets the receiver check the signature before it decompresses
 * anything; binding method, path and target stops a captured request from being replayed
 * against another endpoint or another node; the nonce (remembered for the replay window) stops
 * it from being replayed against the same one.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { MeshKeys } from './keys.js';

export const ORIGIN_HEADER = 'x-syncmesh-origin';
export const TARGET_HEADER = 'x-syncmesh-target';
export const TIMESTAMP_HEADER = 'x-syncmesh-timestamp';
export const NONCE_HEADER = 'x-syncmesh-nonce';
export const SIGNATURE_HEADER = 'x-syncmesh-signature';
export const V2 = 'v2';

export interface SignedRequest {
  method: string;
  /** Path of the request as the receiver routes it (no query string). */
  path: string;
  /** Sender's node id. */
  origin: string;
  /** Receiver's node id: the signature verifies only there. */
  target: string;
  /** Body bytes exactly as sent (after content-encoding). */
  body: Uint8Array | string;
  /** Value of the content-encoding header; absent means identity. */
  contentEncoding?: string | undefined;
}

export function bodyDigest(body: Uint8Array | string): string {
  return createHash('sha256').update(body).digest('hex');
}

/** The canonical string of v2 (exported for the golden tests and other-language peers). */
export function canonicalV2(r: Omit<SignedRequest, 'body'>, timestampMs: string, nonce: string, digestHex: string): string {
  return [
    'syncmesh-v2',
    r.method.toUpperCase(),
    r.path,
    (r.contentEncoding ?? 'identity').toLowerCase(),
    r.origin,
    r.target,
    timestampMs,
    nonce,
    digestHex,
  ].join('\n');
}

export function macV2(keys: MeshKeys, r: Omit<SignedRequest, 'body'>, timestampMs: string, nonce: string, digestHex: string): Buffer {
  return createHmac('sha256', keys.keyFor(r.target, 'http'))
    .update(canonicalV2(r, timestampMs, nonce, digestHex))
    .digest();
}

export function newNonce(): string {
  return randomBytes(16).toString('hex');
}

/** The headers that sign `r` for its target. `nowMs` and `nonce` are for tests. */
export function signV2(keys: MeshKeys, r: SignedRequest, opts: { nowMs?: number; nonce?: string } = {}): Record<string, string> {
  const ts = String(Math.trunc(opts.nowMs ?? Date.now()));
  const nonce = opts.nonce ?? newNonce();
  const mac = macV2(keys, r, ts, nonce, bodyDigest(r.body));
  return {
    [ORIGIN_HEADER]: r.origin,
    [TARGET_HEADER]: r.target,
    [TIMESTAMP_HEADER]: ts,
    [NONCE_HEADER]: nonce,
    [SIGNATURE_HEADER]: `${V2}=${mac.toString('hex')}`,
  };
}
