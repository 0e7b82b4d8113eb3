/** Shared validation for ops and decoded payloads. */
import { z } from 'zod';
import { CrdtError } from './errors.js';
import { canonicalJson, checkId, isScalar, MAX_ID_BYTES, utf8Length } from './json.js';
import type { Reader } from './codec.js';
import type { CrdtTypeName } from './types.js';

/** Validates `op` against a zod schema; failures become EDGE_MISO_BAD_OP naming each problem. */
export function parseWith<T>(type: CrdtTypeName, schema: z.ZodType<T>, op: unknown): T {
  const res = schema.safeParse(op);
  if (res.success) return res.data;
  const problems = res.error.issues.map((i) => `${i.path.length > 0 ? `${i.path.join('.')}: ` : ''}${i.message}`).join('; ');
  throw new CrdtError('EDGE_MISO_BAD_OP', `${type} op ${preview(op)} is invalid: ${problems}`, { cause: res.error });
}

/**
 * Fast path of the strict-object op schemas: true when `op` is a plain object (as JSON.parse
 * makes them) with exactly `keys` own properties. The caller then checks the field values and
 * falls back to the zod schema (parseWith), which stays the authority and names the problems.
 */
export function isPlainWithKeys(op: unknown, keys: number): op is Record<string, unknown> {
  if (typeof op !== 'object' || op === null || Object.getPrototypeOf(op) !== Object.prototype) return false;
  // for-in also counts inherited enumerable keys, which the strict schemas reject too.
  let n = 0;
  for (const _key in op) n++;
  return n === keys;
}

/** A short, safe rendering of an untrusted op for error messages. */
function preview(op: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(op) ?? String(op);
  } catch {
    // Not serialisable (cycle, bigint): the type name is enough to identify it.
    s = typeof op;
  }
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}

/** Canonical JSON of an op's `value`, which must be present. */
export function opValue(type: CrdtTypeName, v: unknown, scalarOnly: boolean): string {
  if (v === undefined) throw new CrdtError('EDGE_MISO_BAD_OP', `${type} op: value is required`);
  if (scalarOnly && !isScalar(v)) {
    const kind = Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : typeof v === 'number' ? String(v) : typeof v;
    throw new CrdtError('EDGE_MISO_BAD_OP', `${type} op: value is ${kind}; ${type} elements must be JSON scalars (string, finite number, boolean, null)`);
  }
  return canonicalJson(v, `${type} op: value`);
}

/**
 * An op that carries a `value`: the op as `schema` parses it and its value as canonical JSON
 * (opValue), checked once. parseOp() keeps the op, apply() both.
 */
export function parseValueOp<T extends { value?: unknown }>(
  type: CrdtTypeName,
  schema: z.ZodType<T>,
  op: unknown,
  scalarOnly: boolean,
): { op: T; value: string } {
  const parsed = parseWith(type, schema, op);
  return { op: parsed, value: opValue(type, parsed.value, scalarOnly) };
}

export function checkReplica(replica: unknown): string {
  return checkId(replica, 'replica id', 'EDGE_MISO_BAD_REPLICA');
}

/** zod schema for a map key / replica-like id. */
export const idSchema = z.string().refine((s) => {
  try {
    checkId(s, 'key', 'EDGE_MISO_BAD_OP', true);
    return true;
  } catch {
    // The refine message below says what is wrong; the thrown detail is not needed.
    return false;
  }
}, `must be well-formed Unicode of at most ${MAX_ID_BYTES} UTF-8 bytes`);

/** zod schema for an op's `value`: anything here, canonicalised (and size-checked) by opValue(). */
export const valueSchema = z.unknown();

/** Reads a replica id from an encoding (non-empty, well-formed, bounded). */
export function readReplica(r: Reader): string {
  const s = r.string();
  if (s.length === 0) r.fail('empty replica id');
  if (utf8Length(s) > MAX_ID_BYTES) r.fail('replica id too long');
  return s;
}

/** Reads a canonical JSON value; rejects anything that would not re-encode to the same bytes. */
export function readValue(r: Reader, scalarOnly: boolean): string {
  const s = r.string();
  let parsed: unknown;
  try {
    parsed = JSON.parse(s);
  } catch {
    // A parse failure is reported as what it is: not JSON.
    return r.fail('value is not JSON');
  }
  if (scalarOnly && !isScalar(parsed)) r.fail('element is not a JSON scalar');
  let canon: string;
  try {
    canon = canonicalJson(parsed);
  } catch (err) {
    return r.fail(`value rejected: ${(err as Error).message}`);
  }
  if (canon !== s) r.fail('value is not in canonical JSON form');
  return s;
}
