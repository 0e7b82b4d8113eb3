/**
 * Verification of mesh request signatures (v2; v1 only when explicitly enabled).
 *
 * Two steps, so that nothing is read from an unauthenticated caller that the headers already
 * condemn:
 *   1. `checkHeaders` — before the body is read: all headers present and well-formed, scheme
 *      v2, timestamp inside the window, target is this node, nonce not seen before.
 *   2. `verifyBody` — with the body as received (still compressed): the HMAC matches, and only
 *      then the nonce is remembered until its timestamp leaves the window.
 * Reasons say what is wrong without revealing anything about the expected value.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { checkNodeId, checkSecret, type MeshKeys } from './keys.js';
import { bodyDigest, macV2, NONCE_HEADER, ORIGIN_HEADER, SIGNATURE_HEADER, TARGET_HEADER, TIMESTAMP_HEADER, V2 } from './sign.js';

export type HeaderBag = Record<string, string | string[] | undefined>;

/** Default tolerated clock difference between nodes, both directions. */
export const DEFAULT_WINDOW_MS = 30_000;
/** Default bound of remembered nonces (a nonce costs about 150 bytes). */
export const DEFAULT_MAX_NONCES = 200_000;

export interface VerifierOptions {
  keys: MeshKeys;
  /** This node's id: only requests whose target is this id verify. */
  nodeId: string;
  windowMs?: number;
  maxNonces?: number;
  /**
   * Deprecated: when set, v1 signatures (HMAC of "v1:ts:body" with the raw mesh secret, no
   * nonce, no target) are accepted too. For one release, during a rolling upgrade only.
   */
  v1Secret?: string | undefined;
  /** Clock, for tests. */
  now?: () => number;
}

export interface Pending {
  readonly version: 'v1' | 'v2';
  readonly method: string;
  readonly path: string;
  readonly contentEncoding: string | undefined;
  readonly origin: string;
  readonly target: string;
  readonly timestamp: string;
  readonly nonce: string;
  readonly signature: Buffer;
}

export type HeaderVerdict = { ok: true; pending: Pending } | { ok: false; reason: string };
export type BodyVerdict = { ok: true; origin: string; version: 'v1' | 'v2' } | { ok: false; reason: string };

const NONCE = /^[0-9a-f]{32}$/;
const TIMESTAMP = /^\d{1,16}$/;
const HEX_MAC = /^[0-9a-f]{64}$/;

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Whether the request carries any mesh signature header (signed requests must then verify). */
export function hasSignatureHeaders(headers: HeaderBag): boolean {
  return headers[SIGNATURE_HEADER] !== undefined || headers[TIMESTAMP_HEADER] !== undefined;
}

export class Verifier {
  readonly #keys: MeshKeys;
  readonly #nodeId: string;
  readonly #windowMs: number;
  readonly #maxNonces: number;
  readonly #v1Secret: string | undefined;
  readonly #now: () => number;
  /** origin + nonce → time after which it can be forgotten. */
  readonly #nonces = new Map<string, number>();

  constructor(opts: VerifierOptions) {
    this.#keys = opts.keys;
    this.#nodeId = checkNodeId(opts.nodeId);
    this.#windowMs = opts.windowMs ?? DEFAULT_WINDOW_MS;
    this.#maxNonces = opts.maxNonces ?? DEFAULT_MAX_NONCES;
    this.#v1Secret = opts.v1Secret === undefined ? undefined : checkSecret(opts.v1Secret);
    this.#now = opts.now ?? Date.now;
  }

  /** Nonces currently remembered (for metrics and tests). */
  get rememberedNonces(): number {
    return this.#nonces.size;
  }

  /** Step 1, before reading the body. */
  checkHeaders(method: string, path: string, headers: HeaderBag): HeaderVerdict {
    const sig = single(headers[SIGNATURE_HEADER]);
    const ts = single(headers[TIMESTAMP_HEADER]);
    if (!sig || !ts) return { ok: false, reason: `missing ${TIMESTAMP_HEADER} or ${SIGNATURE_HEADER} header` };
    if (!TIMESTAMP.test(ts)) return { ok: false, reason: `${TIMESTAMP_HEADER} must be epoch milliseconds` };
    const skew = Math.abs(this.#now() - Number(ts));
    if (skew > this.#windowMs) {
      return { ok: false, reason: `timestamp is ${Math.round(skew / 1000)} s off; allowed is ${this.#windowMs / 1000} s` };
    }
    const contentEncoding = single(headers['content-encoding']);
    const eq = sig.indexOf('=');
    const scheme = eq < 0 ? sig : sig.slice(0, eq);
    const hex = eq < 0 ? '' : sig.slice(eq + 1);
    if (scheme === 'v1' && this.#v1Secret !== undefined) {
      if (!HEX_MAC.test(hex)) return { ok: false, reason: 'signature must be 64 lowercase hex digits' };
      return {
        ok: true,
        pending: {
          version: 'v1',
          method,
          path,
          contentEncoding,
          origin: 'v1-peer',
          target: this.#nodeId,
          timestamp: ts,
          nonce: '',
          signature: Buffer.from(hex, 'hex'),
        },
      };
    }
    if (scheme !== V2) return { ok: false, reason: `signature scheme must be ${V2}${this.#v1Secret !== undefined ? ' or v1' : ''}` };
    if (!HEX_MAC.test(hex)) return { ok: false, reason: 'signature must be 64 lowercase hex digits' };
    const origin = single(headers[ORIGIN_HEADER]);
    const target = single(headers[TARGET_HEADER]);
    const nonce = single(headers[NONCE_HEADER]);
    if (!origin || !target || !nonce) {
      return { ok: false, reason: `a v2 signature needs ${ORIGIN_HEADER}, ${TARGET_HEADER} and ${NONCE_HEADER} headers` };
    }
    if (target !== this.#nodeId) return { ok: false, reason: `the request is signed for another node, not for this one` };
    if (!NONCE.test(nonce)) return { ok: false, reason: `${NONCE_HEADER} must be 32 lowercase hex digits` };
    if (this.#nonces.has(`${origin}\u0000${nonce}`)) return { ok: false, reason: 'replayed request: this nonce was already used' };
    return { ok: true, pending: { version: 'v2', method, path, contentEncoding, origin, target, timestamp: ts, nonce, signature: Buffer.from(hex, 'hex') } };
  }

  /** Step 2, with the body bytes exactly as received (before any gunzip for v2). */
  verifyBody(p: Pending, body: Uint8Array | string): BodyVerdict {
    if (p.version === 'v1') {
      // v1 signed the decompressed body with the raw secret; callers pass the decompressed body for v1.
      const expected = createHmac('sha256', this.#v1Secret!).update(`v1:${p.timestamp}:`).update(body).digest();
      return timingSafeEqual(expected, p.signature)
        ? { ok: true, origin: p.origin, version: 'v1' }
        : { ok: false, reason: 'signature does not match the body (wrong mesh secret?)' };
    }
    const expected = macV2(this.#keys, p, p.timestamp, p.nonce, bodyDigest(body));
    if (!timingSafeEqual(expected, p.signature)) {
      return { ok: false, reason: 'signature does not match the request (wrong mesh secret, or the body, path or headers changed)' };
    }
    const key = `${p.origin}\u0000${p.nonce}`;
    if (this.#nonces.has(key)) return { ok: false, reason: 'replayed request: this nonce was already used' };
    if (this.#nonces.size >= this.#maxNonces) this.#sweep();
    if (this.#nonces.size >= this.#maxNonces) {
      return { ok: false, reason: `too many signed requests inside the replay window (more than ${this.#maxNonces}); retry later` };
    }
    this.#nonces.set(key, Number(p.timestamp) + this.#windowMs);
    return { ok: true, origin: p.origin, version: 'v2' };
  }

  /** Both steps at once, for callers that already hold the body (gRPC metadata, tests). */
  verify(method: string, path: string, headers: HeaderBag, body: Uint8Array | string): BodyVerdict {
    const h = this.checkHeaders(method, path, headers);
    return h.ok ? this.verifyBody(h.pending, body) : h;
  }

  /** Forgets nonces whose timestamps have left the window. */
  #sweep(): void {
    const now = this.#now();
    for (const [k, until] of this.#nonces) if (until < now) this.#nonces.delete(k);
  }
}
