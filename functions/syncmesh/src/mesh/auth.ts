/**
 * Mesh authentication: every node-to-node (and listener-to-function) request is signed with the
 * shared mesh secret.
 *
 *   x-syncmesh-timestamp: <unix epoch milliseconds>
 *   x-syncmesh-signature: v1=<hex HMAC-SHA256(secret, "v1:" + timestamp + ":" + body)>
 *
 * The signature covers the exact body bytes that travel (before any gzip: the receiver verifies
 * after decompressing) and the timestamp, so a captured request cannot be altered and is only
 * accepted inside a short replay window. Request ids (see forwarding) make a replay inside the
 * window harmless. The secret itself never travels and is never logged.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const TIMESTAMP_HEADER = 'x-syncmesh-timestamp';
export const SIGNATURE_HEADER = 'x-syncmesh-signature';
const SCHEME = 'v1';

/** Default tolerated clock difference between nodes, both directions. */
export const DEFAULT_REPLAY_WINDOW_MS = 30_000;

function mac(secret: string, timestampMs: string, body: Uint8Array | string): string {
  const h = createHmac('sha256', secret);
  h.update(`${SCHEME}:${timestampMs}:`);
  h.update(body);
  return h.digest('hex');
}

/** Headers to add to a signed request carrying `body`. */
export function signRequest(
  secret: string,
  body: Uint8Array | string,
  nowMs: number = Date.now(),
): Record<string, string> {
  const ts = String(Math.trunc(nowMs));
  return { [TIMESTAMP_HEADER]: ts, [SIGNATURE_HEADER]: `${SCHEME}=${mac(secret, ts, body)}` };
}

export type VerifyResult = { ok: true } | { ok: false; reason: string };

/**
 * Checks a request's signature headers against its body. The reason says what is wrong without
 * revealing anything about the expected value.
 */
export function verifyRequest(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: Uint8Array | string,
  opts: { nowMs?: number; replayWindowMs?: number } = {},
): VerifyResult {
  const ts = single(headers[TIMESTAMP_HEADER]);
  const sig = single(headers[SIGNATURE_HEADER]);
  if (!ts || !sig) {
    return { ok: false, reason: `missing ${TIMESTAMP_HEADER} or ${SIGNATURE_HEADER} header` };
  }
  if (!/^\d{1,16}$/.test(ts)) return { ok: false, reason: `${TIMESTAMP_HEADER} must be epoch milliseconds` };
  const window = opts.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS;
  const skew = Math.abs((opts.nowMs ?? Date.now()) - Number(ts));
  if (skew > window) {
    return { ok: false, reason: `timestamp is ${Math.round(skew / 1000)} s off; allowed is ${window / 1000} s` };
  }
  const prefix = `${SCHEME}=`;
  if (!sig.startsWith(prefix)) return { ok: false, reason: `signature scheme must be ${SCHEME}` };
  const given = Buffer.from(sig.slice(prefix.length), 'hex');
  const expected = Buffer.from(mac(secret, ts, body), 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, reason: 'signature does not match the body (wrong mesh secret?)' };
  }
  return { ok: true };
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
