/**
 * Positive-negative counter: two grow-only counters, P for increments and N
 * for decrements; value = sum(P) - sum(N).
 */
import { z } from 'zod';
import { bytesEqual, decodeWith, Writer } from './codec.js';
import { gcounterIncrement, gcounterJoin, gcounterSum, readGCounter, writeGCounter, type GCounterState } from './gcounter.js';
import { checkReplica, isPlainWithKeys, parseWith } from './ops.js';
import type { CrdtType } from './types.js';

export interface PNCounterState {
  readonly p: GCounterState;
  readonly n: GCounterState;
}
export interface PNCounterOp {
  op: 'add';
  /** A safe integer; negative values decrement. */
  n: number;
}

const opSchema = z.strictObject({ op: z.literal('add'), n: z.int() });
const EMPTY: GCounterState = new Map();

export const pncounter: CrdtType<PNCounterState, PNCounterOp, number> = {
  name: 'pncounter',
  empty: () => ({ p: new Map(), n: new Map() }),
  parseOp: (op) =>
    isPlainWithKeys(op, 2) && op['op'] === 'add' && Number.isSafeInteger(op['n']) ? (op as unknown as PNCounterOp) : parseWith('pncounter', opSchema, op),
  apply(state, op, replica) {
    const { n } = pncounter.parseOp(op);
    const r = checkReplica(replica);
    const delta: PNCounterState =
      n >= 0 ? { p: gcounterIncrement(state.p, n, r, 'pncounter add'), n: EMPTY } : { p: EMPTY, n: gcounterIncrement(state.n, -n, r, 'pncounter add') };
    return [pncounter.join(state, delta), delta];
  },
  join: (a, b) => ({ p: gcounterJoin(a.p, b.p), n: gcounterJoin(a.n, b.n) }),
  value: (s) => gcounterSum(s.p) - gcounterSum(s.n),
  equals: (a, b) => bytesEqual(pncounter.encode(a), pncounter.encode(b)),
  encode(s) {
    const w = new Writer().header('pncounter');
    writeGCounter(w, s.p);
    writeGCounter(w, s.n);
    return w.finish();
  },
  decode: (bytes) => decodeWith('pncounter', bytes, (r) => ({ p: readGCounter(r), n: readGCounter(r) })),
};
