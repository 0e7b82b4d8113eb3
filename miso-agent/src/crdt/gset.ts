/** Grow-only set of JSON scalars, stored as canonical JSON strings; join = union. */
import { z } from 'zod';
import { bytesEqual, decodeWith, Writer } from './codec.js';
import { compareStrings, parseCanonical } from './json.js';
import { checkReplica, parseValueOp, readValue, valueSchema } from './ops.js';
import type { CrdtType, JsonScalar } from './types.js';

/** Canonical JSON strings of the elements. */
export type GSetState = ReadonlySet<string>;
export interface GSetOp {
  op: 'add';
  value: JsonScalar;
}

const opSchema = z.strictObject({ op: z.literal('add'), value: valueSchema });

export const gset: CrdtType<GSetState, GSetOp, JsonScalar[]> = {
  name: 'gset',
  empty: () => new Set(),
  parseOp: (op) => parseValueOp('gset', opSchema, op, true).op as GSetOp,
  apply(state, op, replica) {
    checkReplica(replica);
    const v = parseValueOp('gset', opSchema, op, true).value;
    const delta: GSetState = new Set([v]);
    return [state.has(v) ? state : gset.join(state, delta), delta];
  },
  join(a, b) {
    const [big, small] = a.size >= b.size ? [a, b] : [b, a];
    let out: Set<string> | undefined;
    for (const v of small) if (!big.has(v)) (out ??= new Set(big)).add(v);
    return out ?? big;
  },
  value: (s) => [...s].sort(compareStrings).map((v) => parseCanonical(v) as JsonScalar),
  equals: (a, b) => bytesEqual(gset.encode(a), gset.encode(b)),
  encode(s) {
    const w = new Writer().header('gset');
    const items = [...s].sort(compareStrings);
    w.uint(items.length);
    for (const v of items) w.string(v);
    return w.finish();
  },
  decode: (bytes) =>
    decodeWith('gset', bytes, (r) => {
      const out = new Set<string>();
      let prev: string | undefined;
      for (let i = 0, n = r.count(2); i < n; i++) {
        const v = readValue(r, true);
        if (prev !== undefined && compareStrings(prev, v) >= 0) r.fail('elements not strictly ascending');
        prev = v;
        out.add(v);
      }
      return out;
    }),
};
