/**
 * Enable-wins flag: a dot set plus causal context. enable adds a fresh dot
 * and covers every dot it saw; disable covers the dots it saw without adding
 * one. A concurrent enable keeps an unseen dot, so enable wins.
 */
import { z } from 'zod';
import { bytesEqual, decodeWith, Writer } from './codec.js';
import { type DotFunState, dotFunClearDelta, dotFunSetDelta, dotFunStateJoin, emptyDotFunState, pickNull, readDotFunState, writeDotFunState } from './dots.js';
import { checkReplica, parseWith, readReplica } from './ops.js';
import type { CrdtType } from './types.js';

export type EWFlagState = DotFunState<null>;
export interface EWFlagOp {
  op: 'enable' | 'disable';
}

const opSchema = z.strictObject({ op: z.enum(['enable', 'disable']) });

export const ewflag: CrdtType<EWFlagState, EWFlagOp, boolean> = {
  name: 'ewflag',
  empty: () => emptyDotFunState(),
  parseOp: (op) => parseWith('ewflag', opSchema, op),
  apply(state, op, replica) {
    const { op: kind } = ewflag.parseOp(op);
    const r = checkReplica(replica);
    const delta = kind === 'enable' ? dotFunSetDelta(state, r, null) : dotFunClearDelta(state);
    return [ewflag.join(state, delta), delta];
  },
  join: (a, b) => dotFunStateJoin(a, b, pickNull),
  value: (s) => s.store.size > 0,
  equals: (a, b) => bytesEqual(ewflag.encode(a), ewflag.encode(b)),
  encode(s) {
    const w = new Writer().header('ewflag');
    writeDotFunState(w, s, () => undefined);
    return w.finish();
  },
  decode: (bytes) => decodeWith('ewflag', bytes, (r) => readDotFunState(r, readReplica, pickNull, 3)),
};
