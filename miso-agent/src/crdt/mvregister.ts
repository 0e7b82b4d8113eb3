/**
 * Multi-value register: a dot function (dot -> canonical JSON value) plus
 * causal context. set replaces every value it saw with one fresh dot;
 * concurrent sets all survive and value() returns them all, sorted.
 */
import { z } from 'zod';
import { bytesEqual, decodeWith, Writer } from './codec.js';
import { type DotFun, type DotFunState, dotFunSetDelta, dotFunStateJoin, emptyDotFunState, pickMaxString, readDotFunState, writeDotFunState } from './dots.js';
import { compareStrings, parseCanonical } from './json.js';
import { checkReplica, parseValueOp, readReplica, readValue, valueSchema } from './ops.js';
import type { CrdtType, Json } from './types.js';

export type MVRegisterState = DotFunState<string>;
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
  empty: () => emptyDotFunState(),
  parseOp: (op) => parseValueOp('mvregister', opSchema, op, false).op as MVRegisterOp,
  apply(state, op, replica) {
    const v = parseValueOp('mvregister', opSchema, op, false).value;
    const delta = dotFunSetDelta(state, checkReplica(replica), v);
    return [mvregister.join(state, delta), delta];
  },
  join: (a, b) => dotFunStateJoin(a, b, pickMaxString),
  value: (s) => dotFunValues(s.store),
  equals: (a, b) => bytesEqual(mvregister.encode(a), mvregister.encode(b)),
  encode(s) {
    const w = new Writer().header('mvregister');
    writeDotFunState(w, s, (wr, v) => wr.string(v));
    return w.finish();
  },
  decode: (bytes) => decodeWith('mvregister', bytes, (r) => readDotFunState(r, readReplica, (rr) => readValue(rr, false), 4)),
};
