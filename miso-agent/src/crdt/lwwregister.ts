/**
 * Last-writer-wins register. The state is the winning write (or null) and a
 * delta is a single write; join keeps the larger of (ts, replica, value) in
 * that lexicographic order, a total order, so join is a lattice join.
 *
 * Timestamps are explicit and deterministic: op.ts (a non-negative safe
 * integer, e.g. from hlcNext()) or, when absent, the current winner's ts + 1
 * (a Lamport clock: the write beats everything this replica has seen).
 * apply never reads the wall clock.
 */
import { z } from 'zod';
import { bytesEqual, decodeWith, Writer } from './codec.js';
import { CrdtError } from './errors.js';
import { compareStrings, parseCanonical } from './json.js';
import { checkReplica, parseValueOp, readReplica, readValue, valueSchema } from './ops.js';
import type { CrdtType, Json } from './types.js';

export interface LWWWrite {
  readonly ts: number;
  readonly replica: string;
  /** Canonical JSON. */
  readonly value: string;
}
export type LWWRegisterState = LWWWrite | null;
export interface LWWRegisterOp {
  op: 'set';
  value: Json;
  /** Non-negative safe integer; defaults to (current ts + 1). */
  ts?: number | undefined;
}

const opSchema = z.strictObject({
  op: z.literal('set'),
  value: valueSchema,
  ts: z.int().min(0).optional(),
});

/**
 * A hybrid logical clock collapsed into one integer: the next timestamp after
 * `last` given the wall clock `wallMs` (max(wallMs, last + 1)). Pure: the
 * caller reads the clock and keeps `last` (e.g. the register's current ts).
 */
export function hlcNext(last: number, wallMs: number): number {
  return Math.max(Math.floor(wallMs), last + 1);
}

function compareWrites(a: LWWWrite, b: LWWWrite): number {
  return a.ts - b.ts || compareStrings(a.replica, b.replica) || compareStrings(a.value, b.value);
}

export const lwwregister: CrdtType<LWWRegisterState, LWWRegisterOp, Json> = {
  name: 'lwwregister',
  empty: () => null,
  parseOp: (op) => parseValueOp('lwwregister', opSchema, op, false).op as LWWRegisterOp,
  apply(state, op, replica) {
    const { op: parsed, value } = parseValueOp('lwwregister', opSchema, op, false);
    const ts = parsed.ts ?? (state?.ts ?? 0) + 1;
    if (!Number.isSafeInteger(ts)) {
      throw new CrdtError('EDGE_MISO_BAD_OP', `lwwregister set: the timestamp after ${state?.ts ?? 0} is not a safe integer; pass an explicit ts`);
    }
    const delta: LWWRegisterState = { ts, replica: checkReplica(replica), value };
    return [lwwregister.join(state, delta), delta];
  },
  join(a, b) {
    if (a === null) return b;
    if (b === null) return a;
    return compareWrites(a, b) >= 0 ? a : b;
  },
  value: (s) => (s === null ? null : parseCanonical(s.value)),
  equals: (a, b) => bytesEqual(lwwregister.encode(a), lwwregister.encode(b)),
  encode(s) {
    const w = new Writer().header('lwwregister');
    if (s === null) return w.byte(0).finish();
    return w.byte(1).uint(s.ts).string(s.replica).string(s.value).finish();
  },
  decode: (bytes) =>
    decodeWith('lwwregister', bytes, (r): LWWRegisterState => {
      const flag = r.byte();
      if (flag === 0) return null;
      if (flag !== 1) r.fail(`presence flag ${flag} is neither 0 nor 1`);
      return { ts: r.uint(), replica: readReplica(r), value: readValue(r, false) };
    }),
};
