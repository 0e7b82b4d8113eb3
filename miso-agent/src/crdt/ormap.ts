/**
 * Observed-remove map from string keys to multi-value registers, sharing one
 * causal context (Almeida et al.'s ORMap over MVRegister). set(k, v) replaces
 * the values of k it saw with one fresh dot; remove(k) covers the dots of k it
 * saw. Concurrent sets of a key all survive (value lists them); a set
 * concurrent with a remove survives the remove (set wins).
 */
import { z } from 'zod';
import { bytesEqual, decodeWith, type Reader, Writer } from './codec.js';
import {
  type DotMapState,
  dotMapRemoveDelta,
  dotMapSetDelta,
  dotMapStateJoin,
  emptyDotMapState,
  pickMaxString,
  readDotMapState,
  writeDotMapState,
} from './dots.js';
import { compareStrings, MAX_ID_BYTES, utf8Length } from './json.js';
import { dotFunValues } from './mvregister.js';
import { checkReplica, idSchema, opValue, parseWith, readReplica, readValue, valueSchema } from './ops.js';
import type { CrdtType, Json } from './types.js';

/** store: key -> MV register (dot -> canonical JSON value), never empty. */
export type ORMapState = DotMapState<string>;
export type ORMapOp = { op: 'set'; key: string; value: Json } | { op: 'remove'; key: string };
/** key -> the register's values sorted by canonical JSON (one element unless concurrent sets). */
export type ORMapValue = Record<string, Json[]>;

const opSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('set'), key: idSchema, value: valueSchema }),
  z.strictObject({ op: z.literal('remove'), key: idSchema }),
]);

export const ormap: CrdtType<ORMapState, ORMapOp, ORMapValue> = {
  name: 'ormap',
  empty: () => emptyDotMapState(),
  parseOp(op) {
    const parsed = parseWith('ormap', opSchema, op);
    if (parsed.op === 'set') opValue('ormap', parsed.value, false);
    return parsed as ORMapOp;
  },
  apply(state, op, replica) {
    const parsed = ormap.parseOp(op);
    const r = checkReplica(replica);
    const delta = parsed.op === 'set' ? dotMapSetDelta(state, parsed.key, r, opValue('ormap', parsed.value, false)) : dotMapRemoveDelta(state, parsed.key);
    return [ormap.join(state, delta), delta];
  },
  join: (a, b) => dotMapStateJoin(a, b, pickMaxString),
  value(s) {
    const out: ORMapValue = {};
    for (const k of [...s.store.keys()].sort(compareStrings)) {
      const reg = s.store.get(k);
      // defineProperty: a key such as "__proto__" must become an own property, not the prototype.
      if (reg) Object.defineProperty(out, k, { value: dotFunValues(reg), enumerable: true, writable: true, configurable: true });
    }
    return out;
  },
  equals: (a, b) => bytesEqual(ormap.encode(a), ormap.encode(b)),
  encode(s) {
    const w = new Writer().header('ormap');
    writeDotMapState(w, s, (wr, v) => wr.string(v));
    return w.finish();
  },
  decode: (bytes) =>
    decodeWith('ormap', bytes, (r) => {
      const readKey = (rr: Reader): string => {
        const k = rr.string();
        if (utf8Length(k) > MAX_ID_BYTES) rr.fail('key too long');
        return k;
      };
      const reading = { what: 'key', readKey, readReplica, readPayload: (rr: Reader) => readValue(rr, false), minEntryBytes: 2, minDotBytes: 4 };
      return readDotMapState(r, reading);
    }),
};
