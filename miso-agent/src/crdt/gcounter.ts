/**
 * Grow-only counter: one non-decreasing count per replica, join = pointwise
 * max, value = sum. A delta holds only the entry of the replica that counted.
 */
import { z } from 'zod';
import { bytesEqual, decodeWith, Writer, type Reader } from './codec.js';
import { readByReplica } from './dots.js';
import { CrdtError } from './errors.js';
import { compareStrings } from './json.js';
import { checkReplica, isPlainWithKeys, parseWith, readReplica } from './ops.js';
import type { CrdtType } from './types.js';

/** replica -> count (> 0; zero entries are never stored). */
export type GCounterState = ReadonlyMap<string, number>;
export interface GCounterOp {
  op: 'add';
  /** A non-negative safe integer. */
  n: number;
}

const opSchema = z.strictObject({ op: z.literal('add'), n: z.int().min(0) });

export function gcounterJoin(a: GCounterState, b: GCounterState): GCounterState {
  if (a.size === 0) return b;
  if (b.size === 0) return a;
  const out = new Map(a);
  for (const [r, n] of b) out.set(r, Math.max(n, out.get(r) ?? 0));
  return out;
}

export function gcounterSum(s: GCounterState): number {
  let sum = 0;
  for (const n of s.values()) sum += n;
  return sum;
}

/** Adds n to replica's entry; returns the delta (the replica's new entry alone). */
export function gcounterIncrement(s: GCounterState, n: number, replica: string, what: string): GCounterState {
  const next = (s.get(replica) ?? 0) + n;
  if (!Number.isSafeInteger(next)) {
    throw new CrdtError('EDGE_MISO_BAD_OP', `${what}: adding ${n} makes replica ${replica}'s count exceed Number.MAX_SAFE_INTEGER`);
  }
  return next === 0 ? new Map() : new Map([[replica, next]]);
}

export function writeGCounter(w: Writer, s: GCounterState): void {
  const entries = [...s].sort((x, y) => compareStrings(x[0], y[0]));
  w.uint(entries.length);
  for (const [r, n] of entries) w.string(r).uint(n);
}

export function readGCounter(r: Reader): GCounterState {
  const out = new Map<string, number>();
  readByReplica(r, readReplica, 3, 'replicas', (rep) => {
    const c = r.uint();
    if (c === 0) r.fail('zero count stored');
    out.set(rep, c);
  });
  return out;
}

export const gcounter: CrdtType<GCounterState, GCounterOp, number> = {
  name: 'gcounter',
  empty: () => new Map(),
  parseOp: (op) =>
    isPlainWithKeys(op, 2) && op['op'] === 'add' && Number.isSafeInteger(op['n']) && (op['n'] as number) >= 0
      ? (op as unknown as GCounterOp)
      : parseWith('gcounter', opSchema, op),
  apply(state, op, replica) {
    const { n } = gcounter.parseOp(op);
    const delta = gcounterIncrement(state, n, checkReplica(replica), 'gcounter add');
    return [gcounterJoin(state, delta), delta];
  },
  join: gcounterJoin,
  value: gcounterSum,
  equals: (a, b) => bytesEqual(gcounter.encode(a), gcounter.encode(b)),
  encode(s) {
    const w = new Writer().header('gcounter');
    writeGCounter(w, s);
    return w.finish();
  },
  decode: (bytes) => decodeWith('gcounter', bytes, readGCounter),
};
