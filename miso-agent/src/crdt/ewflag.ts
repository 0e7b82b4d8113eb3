/**
 * Enable-wins flag: a dot set plus causal context. enable adds a fresh dot
 * and covers every dot it saw; disable covers the dots it saw without adding
 * one. A concurrent enable keeps an unseen dot, so enable wins.
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
  pickNull,
  readContext,
  readDotFun,
  writeContext,
  writeDotFun,
  type CausalContext,
  type DotFun,
} from './dots.js';
import { checkReplica, parseWith, readReplica } from './ops.js';
import type { CrdtType } from './types.js';

export interface EWFlagState {
  readonly store: DotFun<null>;
  readonly ctx: CausalContext;
}
export interface EWFlagOp {
  op: 'enable' | 'disable';
}

const opSchema = z.strictObject({ op: z.enum(['enable', 'disable']) });

export const ewflag: CrdtType<EWFlagState, EWFlagOp, boolean> = {
  name: 'ewflag',
  empty: () => ({ store: new Map(), ctx: EMPTY_CONTEXT }),
  parseOp: (op) => parseWith('ewflag', opSchema, op),
  apply(state, op, replica) {
    const { op: kind } = ewflag.parseOp(op);
    const r = checkReplica(replica);
    const seen = dotFunDots(state.store);
    let delta: EWFlagState;
    if (kind === 'enable') {
      const d = ctxNextDot(state.ctx, r);
      delta = { store: new Map([[dotKey(d), [d, null]]]), ctx: ctxFromDots([...seen, d]) };
    } else {
      delta = { store: new Map(), ctx: ctxFromDots(seen) };
    }
    return [ewflag.join(state, delta), delta];
  },
  join: (a, b) => ({
    store: dotFunJoin(a.store, a.ctx, b.store, b.ctx, pickNull),
    ctx: ctxJoin(a.ctx, b.ctx),
  }),
  value: (s) => s.store.size > 0,
  equals: (a, b) => bytesEqual(ewflag.encode(a), ewflag.encode(b)),
  encode(s) {
    const w = new Writer().header('ewflag');
    writeContext(w, s.ctx);
    writeDotFun(w, s.store, () => undefined);
    return w.finish();
  },
  decode: (bytes) =>
    decodeWith('ewflag', bytes, (r) => {
      const ctx = readContext(r, readReplica);
      const store = readDotFun(r, ctx, readReplica, pickNull, 3);
      return { store, ctx };
    }),
};
