/**
 * Add-wins observed-remove set (delta-state, dot-based). Each element maps to
 * the dots of the adds that are still live; the causal context records every
 * dot ever seen. add(v) creates a fresh dot and covers the dots of v it saw;
 * remove(v) covers exactly the dots of v it saw and creates none. So:
 * - a remove never affects an add it did not observe (concurrent add wins);
 * - a removed element cannot come back: its dots are in the context forever;
 * - concurrent adds of one element keep both dots; neither overwrites the other.
 */
import { z } from 'zod';
import { bytesEqual, decodeWith, type Reader, Writer } from './codec.js';
import {
  ctxFromDots,
  ctxJoin,
  ctxNextDot,
  dotFunDots,
  dotKey,
  dotMapJoin,
  EMPTY_CONTEXT,
  pickNull,
  readContext,
  readDotMap,
  writeContext,
  writeDotMap,
  type CausalContext,
  DotMap,
} from './dots.js';
import { compareStrings, parseCanonical } from './json.js';
import { checkReplica, opValue, parseWith, readReplica, readValue, valueSchema } from './ops.js';
import type { CrdtType, JsonScalar } from './types.js';

export interface ORSetState {
  /** canonical JSON element -> live add dots (never empty). */
  readonly store: DotMap<null>;
  readonly ctx: CausalContext;
}
export interface ORSetOp {
  op: 'add' | 'remove';
  value: JsonScalar;
}

const opSchema = z.strictObject({ op: z.enum(['add', 'remove']), value: valueSchema });

export const orset: CrdtType<ORSetState, ORSetOp, JsonScalar[]> = {
  name: 'orset',
  empty: () => ({ store: DotMap.empty(), ctx: EMPTY_CONTEXT }),
  parseOp(op) {
    const parsed = parseWith('orset', opSchema, op);
    opValue('orset', parsed.value, true);
    return parsed as ORSetOp;
  },
  apply(state, op, replica) {
    const parsed = orset.parseOp(op);
    const v = opValue('orset', parsed.value, true);
    const r = checkReplica(replica);
    const seen = dotFunDots(state.store.get(v) ?? new Map());
    let delta: ORSetState;
    if (parsed.op === 'add') {
      const d = ctxNextDot(state.ctx, r);
      delta = { store: DotMap.of<null>(v, new Map([[dotKey(d), [d, null]]])), ctx: ctxFromDots([...seen, d]) };
    } else {
      delta = { store: DotMap.empty(), ctx: ctxFromDots(seen) };
    }
    return [orset.join(state, delta), delta];
  },
  join: (a, b) => ({
    store: dotMapJoin(a.store, a.ctx, b.store, b.ctx, pickNull),
    ctx: ctxJoin(a.ctx, b.ctx),
  }),
  value: (s) => [...s.store.keys()].sort(compareStrings).map((v) => parseCanonical(v) as JsonScalar),
  equals: (a, b) => bytesEqual(orset.encode(a), orset.encode(b)),
  encode(s) {
    const w = new Writer().header('orset');
    writeContext(w, s.ctx);
    writeDotMap(w, s.store, () => undefined);
    return w.finish();
  },
  decode: (bytes) =>
    decodeWith('orset', bytes, (r) => {
      const ctx = readContext(r, readReplica);
      const reading = { what: 'element', readKey: (rr: Reader) => readValue(rr, true), readReplica, readPayload: pickNull, minEntryBytes: 5, minDotBytes: 3 };
      return { store: readDotMap(r, ctx, reading), ctx };
    }),
};
