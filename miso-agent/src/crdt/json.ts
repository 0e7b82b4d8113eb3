import { CrdtError } from './errors.js';
import type { Json } from './types.js';

/** Largest canonical JSON encoding (UTF-8 bytes) of a single value, key or replica id. */
export const MAX_VALUE_BYTES = 64 * 1024;
/** Deepest nesting accepted in a value (guards the stack against hostile input). */
export const MAX_VALUE_DEPTH = 64;
/** Longest replica id / map key, in UTF-8 bytes. */
export const MAX_ID_BYTES = 1024;

/**
 * UTF-8 byte length of a string (a lone surrogate counts as U+FFFD, 3 bytes, as TextEncoder
 * encodes it). Buffer.byteLength counts without allocating: this runs on every operation.
 */
export function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** Code-unit order: the one string order used for sorting everywhere (values, replicas, keys). */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, numbers as
 * JSON.stringify prints them (so -0 is "0"). Two values are equal for every
 * CRDT iff their canonical strings are equal.
 *
 * Throws CrdtError('EDGE_MISO_BAD_OP') for anything that is not JSON
 * (undefined, NaN, Infinity, bigint, functions, class instances, too deep) and
 * CrdtError('EDGE_MISO_VALUE_TOO_LARGE') when the result exceeds MAX_VALUE_BYTES.
 * `where` names the value in messages (e.g. "value").
 */
export function canonicalJson(value: unknown, where = 'value'): string {
  const budget = { units: 0 };
  const out = write(value, where, 0, budget);
  const bytes = utf8Length(out);
  if (bytes > MAX_VALUE_BYTES) {
    throw tooLarge(where, bytes);
  }
  return out;
}

function tooLarge(where: string, bytes: number | string): CrdtError {
  return new CrdtError('EDGE_MISO_VALUE_TOO_LARGE', `${where} is ${bytes} bytes as canonical JSON; the limit is MAX_VALUE_BYTES=${MAX_VALUE_BYTES}`);
}

function write(v: unknown, path: string, depth: number, budget: { units: number }): string {
  if (depth > MAX_VALUE_DEPTH) {
    throw new CrdtError('EDGE_MISO_BAD_OP', `${path} is nested deeper than ${MAX_VALUE_DEPTH} levels`);
  }
  let s: string;
  if (v === null) {
    s = 'null';
  } else if (typeof v === 'boolean') {
    s = v ? 'true' : 'false';
  } else if (typeof v === 'number') {
    if (!Number.isFinite(v)) {
      throw new CrdtError('EDGE_MISO_BAD_OP', `${path} is ${String(v)}; numbers must be finite`);
    }
    s = JSON.stringify(v);
  } else if (typeof v === 'string') {
    s = JSON.stringify(v);
  } else if (Array.isArray(v)) {
    const parts: string[] = [];
    for (let i = 0; i < v.length; i++) {
      if (!(i in v)) {
        throw new CrdtError('EDGE_MISO_BAD_OP', `${path}[${i}] is a hole in a sparse array; not JSON`);
      }
      parts.push(write(v[i], `${path}[${i}]`, depth + 1, budget));
    }
    s = `[${parts.join(',')}]`;
  } else if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      throw new CrdtError('EDGE_MISO_BAD_OP', `${path} is a ${describe(v)}; only plain JSON objects are allowed`);
    }
    const obj = v as Record<string, unknown>;
    const keys = Object.keys(obj).sort(compareStrings);
    const parts: string[] = [];
    for (const k of keys) {
      const child = obj[k];
      parts.push(`${JSON.stringify(k)}:${write(child, `${path}.${k}`, depth + 1, budget)}`);
    }
    s = `{${parts.join(',')}}`;
  } else {
    throw new CrdtError('EDGE_MISO_BAD_OP', `${path} is ${describe(v)}; not JSON`);
  }
  // Every UTF-16 code unit costs at least one UTF-8 byte: abort early on huge input.
  budget.units += s.length;
  if (budget.units > MAX_VALUE_BYTES * 2 + 16) {
    throw tooLarge(path, `more than ${MAX_VALUE_BYTES}`);
  }
  return s;
}

function describe(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'object' && v !== null) {
    const ctor = (v as { constructor?: { name?: unknown } }).constructor;
    return typeof ctor?.name === 'string' ? ctor.name : 'object';
  }
  return typeof v;
}

/** Parses a canonical JSON string produced by canonicalJson(). */
export function parseCanonical(s: string): Json {
  return JSON.parse(s) as Json;
}

/** True for JSON scalars: null, booleans, finite numbers, strings. */
export function isScalar(v: unknown): boolean {
  return v === null || typeof v === 'boolean' || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/**
 * Validates an id (replica id or map key): a well-formed string of 1 to
 * MAX_ID_BYTES UTF-8 bytes (map keys may be empty when allowEmpty).
 */
export function checkId(s: unknown, where: string, code: 'EDGE_MISO_BAD_OP' | 'EDGE_MISO_BAD_REPLICA', allowEmpty = false): string {
  if (typeof s !== 'string') {
    throw new CrdtError(code, `${where} must be a string, got ${describe(s)}`);
  }
  if (!allowEmpty && s.length === 0) {
    throw new CrdtError(code, `${where} must not be empty`);
  }
  if (!isWellFormed(s)) {
    throw new CrdtError(code, `${where} contains a lone UTF-16 surrogate`);
  }
  const bytes = utf8Length(s);
  if (bytes > MAX_ID_BYTES) {
    throw new CrdtError(code, `${where} is ${bytes} bytes; the limit is ${MAX_ID_BYTES}`);
  }
  return s;
}

/** String.prototype.isWellFormed (Node 20; not in the ES2023 lib typings): no lone surrogates. */
export function isWellFormed(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}
