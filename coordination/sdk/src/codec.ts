/** Values are stored as canonical JSON (object keys sorted), so equal values compare equal as bytes. */
import { COORDINATION_ERROR_CODES, CoordinationError } from './errors.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v as object).sort()) out[k] = canonical((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

/** Canonical JSON text of `v`; values JSON cannot hold (undefined, functions, NaN, bigint) are refused. */
export function canonicalJson(v: unknown): string {
  const check = (x: unknown): void => {
    if (x === undefined || typeof x === 'function' || typeof x === 'symbol' || typeof x === 'bigint' || (typeof x === 'number' && !Number.isFinite(x))) {
      throw new CoordinationError(
        COORDINATION_ERROR_CODES.BAD_ARGUMENT,
        `value ${String(x)} cannot be stored: use JSON values (null, booleans, finite numbers, strings, arrays, plain objects)`,
      );
    }
    if (Array.isArray(x)) x.forEach(check);
    else if (x !== null && typeof x === 'object') Object.values(x).forEach(check);
  };
  check(v);
  return JSON.stringify(canonical(v));
}

export const encodeJson = (v: unknown): Uint8Array => enc.encode(canonicalJson(v));

export function decodeJson<T>(bytes: Uint8Array, where: string): T {
  try {
    return JSON.parse(dec.decode(bytes)) as T;
  } catch (err) {
    throw new CoordinationError(COORDINATION_ERROR_CODES.CORRUPT, `${where} does not hold JSON`, { cause: err });
  }
}

export const sameBytes = (a: Uint8Array | null, b: Uint8Array | null): boolean =>
  a === null || b === null ? a === b : a.length === b.length && Buffer.compare(a, b) === 0;
