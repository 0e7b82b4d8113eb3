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
import { type DotMapState, dotMapRemoveDelta, dotMapSetDelta, dotMapStateJoin, emptyDotMapState, pickNull, readDotMapState, writeDotMapState } from './dots.js';
import { compareStrings, parseCanonical } from './json.js';
import { checkReplica, parseValueOp, readReplica, readValue, valueSchema } from './ops.js';
import type { CrdtType, JsonScalar } from './types.js';

/** store: canonical JSON element -> live add dots (never empty). */
export type ORSetState = DotMapState<null>;
export interface ORSetOp {
  op: 'add' | 'remove';
  value: JsonScalar;
}

const opSchema = z.strictObject({ op: z.enum(['add', 'remove']), value: valueSchema });

export const orset: CrdtType<ORSetState, ORSetOp, JsonScalar[]> = {
  name: 'orset',
  empty: () => emptyDotMapState(),
  parseOp: (op) => parseValueOp('orset', opSchema, op, true).op as ORSetOp,
  apply(state, op, replica) {
    const { op: parsed, value: v } = parseValueOp('orset', opSchema, op, true);
    const r = checkReplica(replica);
    const delta = parsed.op === 'add' ? dotMapSetDelta(state, v, r, null) : dotMapRemoveDelta(state, v);
    return [orset.join(state, delta), delta];
  },
  join: (a, b) => dotMapStateJoin(a, b, pickNull),
  value: (s) => [...s.store.keys()].sort(compareStrings).map((v) => parseCanonical(v) as JsonScalar),
  equals: (a, b) => bytesEqual(orset.encode(a), orset.encode(b)),
  encode(s) {
    const w = new Writer().header('orset');
    writeDotMapState(w, s, () => undefined);
    return w.finish();
  },
  decode: (bytes) =>
    decodeWith('orset', bytes, (r) => {
      const reading = { what: 'element', readKey: (rr: Reader) => readValue(rr, true), readReplica, readPayload: pickNull, minEntryBytes: 5, minDotBytes: 3 };
      return readDotMapState(r, reading);
    }),
};
