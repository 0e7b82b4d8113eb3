/**
 * The wire format, pinned: golden encodings in test/fixtures/crdt/v1 are
 * rebuilt from their recorded scenario, decoded and re-encoded byte-exact.
 * Regenerate (only together with an ENCODING_VERSION bump, see INTERNALS.md):
 *   MISO_CRDT_UPDATE_FIXTURES=1 node --test miso-agent/dist/src/crdt/encoding.test.js
 * Also: decode never crashes on garbage, and what it accepts re-encodes to the same bytes.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { ENCODING_VERSION } from './codec.js';
import { CrdtError } from './errors.js';
import { crdtTypes, digest } from './registry.js';
import { allTypes, fcParams, historyArbitrary, simulate } from './testkit.js';
import type { CrdtType, CrdtTypeName } from './types.js';

const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/crdt', `v${ENCODING_VERSION}`);
const UPDATE = process.env['MISO_CRDT_UPDATE_FIXTURES'] === '1';

/** A golden scenario: ops on named replicas, delta deliveries by index, full-state syncs. */
type GoldenStep = { at: string; op: unknown } | { send: number; to: string } | { sync: string; to: string };
interface Golden {
  /** Which replica's final state is pinned. */
  of: string;
  steps: GoldenStep[];
}

const GOLDEN: Record<CrdtTypeName, Golden> = {
  ewflag: {
    of: 'B',
    steps: [
      { at: 'A', op: { op: 'enable' } },
      { at: 'A', op: { op: 'disable' } },
      { at: 'A', op: { op: 'enable' } },
      { send: 2, to: 'B' }, // B sees A's third dot but not the first: a cloud in the context
      { at: 'B', op: { op: 'enable' } },
    ],
  },
  gcounter: {
    of: 'B',
    steps: [
      { at: 'A', op: { op: 'add', n: 5 } },
      { at: 'B', op: { op: 'add', n: 300 } },
      { at: 'C', op: { op: 'add', n: 2 ** 40 } },
      { sync: 'A', to: 'B' },
      { send: 2, to: 'B' },
    ],
  },
  pncounter: {
    of: 'A',
    steps: [
      { at: 'A', op: { op: 'add', n: 10 } },
      { at: 'B', op: { op: 'add', n: -4 } },
      { at: 'A', op: { op: 'add', n: -1 } },
      { sync: 'B', to: 'A' },
    ],
  },
  gset: {
    of: 'A',
    steps: [
      { at: 'A', op: { op: 'add', value: 'sensor-1' } },
      { at: 'B', op: { op: 'add', value: 42 } },
      { at: 'B', op: { op: 'add', value: null } },
      { at: 'A', op: { op: 'add', value: 'Sofia ünïcode ✓' } },
      { sync: 'B', to: 'A' },
    ],
  },
  mvregister: {
    of: 'A',
    steps: [
      { at: 'A', op: { op: 'set', value: { temp: 21.5, unit: 'C' } } },
      { at: 'B', op: { op: 'set', value: [1, 2, 3] } },
      { sync: 'B', to: 'A' },
      { at: 'C', op: { op: 'set', value: 'c1' } },
      { at: 'C', op: { op: 'set', value: 'c2' } },
      { send: 3, to: 'A' }, // send indexes deltas (one per op), not steps
    ],
  },
  orset: {
    of: 'B',
    steps: [
      { at: 'A', op: { op: 'add', value: 'x' } },
      { at: 'A', op: { op: 'add', value: 'y' } },
      { at: 'A', op: { op: 'add', value: 'x' } },
      { send: 2, to: 'B' },
      { at: 'B', op: { op: 'remove', value: 'x' } },
      { at: 'B', op: { op: 'add', value: 7 } },
      { at: 'C', op: { op: 'add', value: 7 } },
      { send: 5, to: 'B' },
    ],
  },
  lwwregister: {
    of: 'B',
    steps: [
      { at: 'A', op: { op: 'set', value: { on: true }, ts: 1_700_000_000_000 } },
      { at: 'B', op: { op: 'set', value: 'older', ts: 1_600_000_000_000 } },
      { send: 0, to: 'B' },
    ],
  },
  ormap: {
    of: 'B',
    steps: [
      { at: 'A', op: { op: 'set', key: 'temp', value: 21.5 } },
      { at: 'A', op: { op: 'set', key: 'hum', value: 40 } },
      { at: 'B', op: { op: 'set', key: 'temp', value: 22 } },
      { send: 0, to: 'B' },
      { at: 'B', op: { op: 'set', key: 'loc', value: { lat: 42.7, lon: 23.3 } } },
      { at: 'A', op: { op: 'remove', key: 'hum' } },
      { send: 4, to: 'B' },
    ],
  },
};

function play<S>(t: CrdtType<S, unknown, unknown>, g: Golden): S {
  const states = new Map<string, S>();
  const deltas: S[] = [];
  const get = (r: string): S => states.get(r) ?? t.empty();
  for (const s of g.steps) {
    if ('at' in s) {
      const [next, delta] = t.apply(get(s.at), s.op, s.at);
      states.set(s.at, next);
      deltas.push(delta);
    } else if ('send' in s) {
      const d = deltas[s.send];
      assert.ok(d !== undefined, `golden step sends delta ${s.send}, which does not exist`);
      states.set(s.to, t.join(get(s.to), d));
    } else {
      states.set(s.to, t.join(get(s.to), get(s.sync)));
    }
  }
  return get(g.of);
}

interface GoldenFile {
  type: CrdtTypeName;
  encodingVersion: number;
  scenario: Golden;
  value: unknown;
  sha256: string;
  hex: string;
}

describe('encoding', () => {
  for (const [name, t] of allTypes()) {
    test(`encoding - ${name} golden v${ENCODING_VERSION} fixture decodes and re-encodes byte-exact`, () => {
      const binPath = join(FIXTURES, `${name}.bin`);
      const jsonPath = join(FIXTURES, `${name}.json`);
      const built = t.encode(play(t, GOLDEN[name]));
      if (UPDATE) {
        mkdirSync(FIXTURES, { recursive: true });
        const file: GoldenFile = {
          type: name,
          encodingVersion: ENCODING_VERSION,
          scenario: GOLDEN[name],
          value: t.value(t.decode(built)),
          sha256: digest(name, t.decode(built)),
          hex: Buffer.from(built).toString('hex'),
        };
        writeFileSync(binPath, built);
        writeFileSync(jsonPath, `${JSON.stringify(file, null, 2)}\n`);
      }
      assert.ok(existsSync(binPath), `missing ${binPath}; generate with MISO_CRDT_UPDATE_FIXTURES=1`);
      const bin = new Uint8Array(readFileSync(binPath));
      const meta = JSON.parse(readFileSync(jsonPath, 'utf8')) as GoldenFile;
      assert.equal(meta.encodingVersion, ENCODING_VERSION);
      assert.deepEqual(meta.scenario, JSON.parse(JSON.stringify(GOLDEN[name])), `${name}.json records a different scenario than GOLDEN.${name}`);
      assert.equal(bin[0], ENCODING_VERSION, 'byte 0 is the format version');
      assert.equal(meta.hex, Buffer.from(bin).toString('hex'), `${name}.json hex and ${name}.bin disagree`);
      const decoded = t.decode(bin);
      assert.deepEqual(t.encode(decoded), bin, 're-encoding the golden bytes changed them');
      assert.deepEqual(t.value(decoded), meta.value);
      assert.equal(digest(name, decoded), meta.sha256);
      assert.deepEqual(
        built,
        bin,
        `the encoding of the recorded ${name} scenario changed: if intended, bump ENCODING_VERSION and add v${ENCODING_VERSION + 1} fixtures`,
      );
    });
  }

  test('encoding - fixtures cover causal contexts with non-contiguous dots', () => {
    const b = play(crdtTypes.orset, GOLDEN.orset) as { ctx: { cloud: ReadonlyMap<string, readonly number[]> } };
    assert.ok(b.ctx.cloud.size > 0, 'the orset golden state should hold a dot cloud');
  });

  for (const [name, t] of allTypes()) {
    test(`encoding - ${name} decode rejects garbage with EDGE_MISO_BAD_ENCODING and accepts only canonical bytes`, () => {
      const valid = historyArbitrary(name, 15).map((h) => t.encode(simulate(t, h, false).states[0]));
      const mutated = fc.tuple(valid, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 3 }), fc.nat(3)).map(([bytes, edits, mode]) => {
        const out = [...bytes];
        for (const [pos, b] of edits) {
          const i = pos % (out.length + 1);
          if (mode === 0)
            out[i % out.length] = b; // overwrite
          else if (mode === 1)
            out.splice(i, 0, b); // insert
          else if (mode === 2)
            out.splice(i, 1); // delete
          else out.length = i; // truncate
        }
        return Uint8Array.from(out);
      });
      const garbage = fc.oneof(
        mutated,
        fc.uint8Array({ maxLength: 64 }),
        fc.uint8Array({ maxLength: 64 }).map((b) => Uint8Array.from([1, ...b])),
      );
      fc.assert(
        fc.property(garbage, (bytes) => {
          let state: unknown;
          try {
            state = t.decode(bytes);
          } catch (err) {
            assert.ok(err instanceof CrdtError, `decode threw a non-CrdtError: ${String(err)}`);
            assert.equal(err.code, 'EDGE_MISO_BAD_ENCODING');
            return;
          }
          assert.deepEqual(t.encode(state), bytes, 'decode accepted a non-canonical encoding');
          t.value(state);
        }),
        fcParams(),
      );
    });
  }

  test('encoding - decode names the version and type mismatch', () => {
    const bytes = crdtTypes.gcounter.encode(crdtTypes.gcounter.empty());
    assert.throws(() => crdtTypes.gcounter.decode(Uint8Array.from([9, ...bytes.subarray(1)])), /unsupported format version 9/);
    assert.throws(() => crdtTypes.orset.decode(bytes), /type tag 2 \(gcounter\) is not the tag of orset/);
    assert.throws(() => crdtTypes.gcounter.decode(new Uint8Array()), /unexpected end of input/);
    assert.throws(() => crdtTypes.gcounter.decode('nope' as unknown as Uint8Array), /needs a Uint8Array/);
  });
});
