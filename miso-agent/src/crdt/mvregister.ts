/**
 * Multi-value register: a dot function (dot -> canonical JSON value) plus
 * causal context. set replaces every value it saw with one fresh dot;
 * concurrent sets all survive and value() returns them all, sorted.
 */
import { z } from 'zod';
import { bytesEqual, decodeWith, Writer } from './codec.js';
import {
  ctxFromDots,
  ctxJoin,
  ctxNextDot,
  dotFunDots,
  dotFunJoin,
  dotKey,
  EMPTY_CONTEXT,
  pickMaxString,
  readContext,
  readDotFun,
  writeContext,
  writeDotFun,
  type CausalContext,
  type DotFun,
} from './dots.js';
import { compareStrings, parseCanonical } from './json.js';
import { checkReplica, opValue, parseWith, readReplica, readValue, valueSchema } from './ops.js';
import type { CrdtType, Json } from './types.js';

export interface MVRegisterState {
  readonly store: DotFun<string>;
  readonly ctx: CausalContext;
}
export interface MVRegisterOp {
  op: 'set';
  value: Json;
}

const opSchema = z.strictObject({ op: z.literal('set'), value: valueSchema });

/** Distinct values of a dot function, parsed, sorted by canonical JSON. */
export function dotFunValues(f: DotFun<string>): Json[] {
  return [...new Set([...f.values()].map(([, v]) => v))].sort(compareStrings).map(parseCanonical);
}

export const mvregister: CrdtType<MVRegisterState, MVRegisterOp, Json[]> = {
  name: 'mvregister',
  empty: () => ({ store: new Map(), ctx: EMPTY_CONTEXT }),
  parseOp(op) {
    const parsed = parseWith('mvregister', opSchema, op);
    opValue('mvregister', parsed.value, false);
    return parsed as MVRegisterOp;
  },
  apply(state, op, replica) {
    const v = opValue('mvregister', mvregister.parseOp(op).value, false);
    const d = ctxNextDot(state.ctx, checkReplica(replica));
    const delta: MVRegisterState = {
      store: new Map([[dotKey(d), [d, v]]]),
      ctx: ctxFromDots([...dotFunDots(state.store), d]),
    };
    return [mvregister.join(state, delta), delta];
  },
  join: (a, b) => ({
    store: dotFunJoin(a.store, a.ctx, b.store, b.ctx, pickMaxString),
    ctx: ctxJoin(a.ctx, b.ctx),
  }),
  value: (s) => dotFunValues(s.store),
  equals: (a, b) => bytesEqual(mvregister.encode(a), mvregister.encode(b)),
  encode(s) {
    const w = new Writer().header('mvregister');
    writeContext(w, s.ctx);
    writeDotFun(w, s.store, (wr, v) => wr.string(v));
    return w.finish();
  },
  decode: (bytes) =>
    decodeWith('mvregister', bytes, (r) => {
      const ctx = readContext(r, readReplica);
      const store = readDotFun(r, ctx, readReplica, (rr) => readValue(rr, false), 4);
      return { store, ctx };
    }),
};
