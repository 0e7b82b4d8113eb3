/**
 * Names the SDK accepts, checked before anything is sent. A namespace becomes two JetStream
 * streams (`CRUCIAL_<namespace>`, `CRUCIAL_<namespace>_COUNTERS`), an object name a subject token
 * inside them: both are letters, digits, `_` and `-` (what JetStream allows in a stream or bucket
 * name, and no `.`, which would split a subject). Map keys are any non-empty string up to
 * 1024 characters; they are stored base64url-encoded.
 */
import { COORDINATION_ERROR_CODES, CoordinationError } from './errors.js';

export const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_MAP_KEY_CHARS = 1024;

function check(kind: string, name: unknown): string {
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new CoordinationError(
      COORDINATION_ERROR_CODES.BAD_NAME,
      `${kind} name ${JSON.stringify(name)} is not allowed: use 1 to 64 letters, digits, _ or - (no dots, spaces or wildcards)`,
    );
  }
  return name;
}

export const checkNamespace = (name: unknown): string => check('namespace (bucket)', name);
export const checkObjectName = (name: unknown): string => check('object', name);

/** A map key as a subject token: base64url (letters, digits, - and _ only). */
export function encodeMapKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_MAP_KEY_CHARS) {
    throw new CoordinationError(
      COORDINATION_ERROR_CODES.BAD_NAME,
      `map key ${JSON.stringify(typeof key === 'string' ? key.slice(0, 40) : key)} is not allowed: a non-empty string of at most ${MAX_MAP_KEY_CHARS} characters`,
    );
  }
  return Buffer.from(key, 'utf8').toString('base64url');
}

export function decodeMapKey(token: string): string {
  return Buffer.from(token, 'base64url').toString('utf8');
}

/** A whole number in the safe integer range (deltas, values, counts). */
export function checkInteger(what: string, n: unknown, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new CoordinationError(COORDINATION_ERROR_CODES.BAD_ARGUMENT, `${what} must be a whole number from ${min} to ${max}, not ${JSON.stringify(n)}`);
  }
  return n;
}

/** A timeout in ms: a whole number from 0 to 24 h. */
export function checkTimeout(ms: unknown): number {
  return checkInteger('timeoutMs', ms, 0, 86_400_000);
}
