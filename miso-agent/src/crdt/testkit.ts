/**
 * Test support for the CRDT core (imported by *.test.ts only, never by index.ts):
 * seeded fast-check settings, op generators per type and a replica simulator.
 */
import fc from 'fast-check';
import { crdtTypes } from './registry.js';
import type { CrdtType, CrdtTypeName, Json } from './types.js';

/** Runs per property; `npm run test-extensive` raises it (MISO_CRDT_RUNS). */
export const RUNS = positiveInt(process.env['MISO_CRDT_RUNS'], 100);
/** Seed of every property; a failure prints the seed and path to replay. */
export const SEED = positiveInt(process.env['MISO_CRDT_SEED'], 20240521);

function positiveInt(raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`expected a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

export function fcParams(runs = RUNS): fc.Parameters<unknown> {
  return { seed: SEED, numRuns: runs, endOnFailure: true };
}

export const REPLICAS = ['r0', 'r1', 'r2', 'r3', 'r4'] as const;

/** A small pool so that ops collide often (same element, same key). */
const scalar = fc.constantFrom<Json>('a', 'b', 'c', 1, 2.5, -0, true, null, 'é', '');
const value = fc.oneof({ weight: 4, arbitrary: scalar }, { weight: 1, arbitrary: fc.constantFrom<Json>({ b: 1, a: [1, 'x'] }, [null, { z: false }], {}) });
const key = fc.constantFrom('k1', 'k2', 'k3', '__proto__');

/** Random (valid) ops for each type. */
export const opArbitraries: Record<CrdtTypeName, fc.Arbitrary<unknown>> = {
  ewflag: fc.record({ op: fc.constantFrom('enable', 'disable') }),
  gcounter: fc.record({ op: fc.constant('add'), n: fc.nat(1000) }),
  pncounter: fc.record({ op: fc.constant('add'), n: fc.integer({ min: -1000, max: 1000 }) }),
  gset: fc.record({ op: fc.constant('add'), value: scalar }),
  mvregister: fc.record({ op: fc.constant('set'), value }),
  orset: fc.record({ op: fc.constantFrom('add', 'add', 'remove'), value: scalar }),
  lwwregister: fc.oneof(fc.record({ op: fc.constant('set'), value }), fc.record({ op: fc.constant('set'), value, ts: fc.nat(4) })),
  ormap: fc.oneof(fc.record({ op: fc.constant('set'), key, value }), fc.record({ op: fc.constant('remove'), key })),
};

/** One step of a replica history. Indexes are taken modulo what exists at that point. */
export type Step =
  | { kind: 'op'; at: number; op: unknown }
  | { kind: 'delta'; to: number; pick: number }
  | { kind: 'group'; to: number; picks: number[] }
  | { kind: 'state'; from: number; to: number };

export function stepArbitrary(type: CrdtTypeName): fc.Arbitrary<Step> {
  const idx = fc.nat(1 << 16);
  return fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('op' as const), at: idx, op: opArbitraries[type] }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('delta' as const), to: idx, pick: idx }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('group' as const), to: idx, picks: fc.array(idx, { minLength: 1, maxLength: 4 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('state' as const), from: idx, to: idx }) },
  );
}

export interface History {
  replicas: number;
  steps: Step[];
  /** Order (with duplicates) in which every delta is finally delivered to every replica. */
  finalOrder: number[];
}

export function historyArbitrary(type: CrdtTypeName, maxSteps = 40): fc.Arbitrary<History> {
  return fc.record({
    replicas: fc.integer({ min: 2, max: 5 }),
    steps: fc.array(stepArbitrary(type), { maxLength: maxSteps, size: 'max' }),
    finalOrder: fc.array(fc.nat(1 << 16), { maxLength: 20, size: 'max' }),
  });
}

export interface SimResult<S> {
  states: S[];
  deltas: S[];
}

/**
 * Plays a history: local ops produce deltas; deltas are delivered out of
 * order, duplicated, joined into groups, interleaved with full-state merges.
 * When `deliverAll` is set, every delta then reaches every replica in a
 * shuffled order with duplicates (the anti-entropy end state).
 */
export function simulate<S>(t: CrdtType<S, unknown, unknown>, h: History, deliverAll: boolean): SimResult<S> {
  const states: S[] = Array.from({ length: h.replicas }, () => t.empty());
  const deltas: S[] = [];
  const get = (i: number): S => states[i % h.replicas] as S;
  for (const step of h.steps) {
    switch (step.kind) {
      case 'op': {
        const i = step.at % h.replicas;
        const [next, delta] = t.apply(get(i), step.op, REPLICAS[i] as string);
        states[i] = next;
        deltas.push(delta);
        break;
      }
      case 'delta': {
        if (deltas.length === 0) break;
        const i = step.to % h.replicas;
        states[i] = t.join(get(i), deltas[step.pick % deltas.length] as S);
        break;
      }
      case 'group': {
        if (deltas.length === 0) break;
        let group = t.empty();
        for (const p of step.picks) group = t.join(group, deltas[p % deltas.length] as S);
        const i = step.to % h.replicas;
        states[i] = t.join(get(i), group);
        break;
      }
      case 'state': {
        const i = step.to % h.replicas;
        states[i] = t.join(get(i), get(step.from));
        break;
      }
    }
  }
  if (deliverAll && deltas.length > 0) {
    for (let i = 0; i < h.replicas; i++) {
      // A replica-specific pseudo-shuffle of all deltas, with duplicates from finalOrder mixed in.
      const L = Math.max(1, h.finalOrder.length);
      const sortKey = (k: number): number => ((h.finalOrder[k % L] ?? 0) * 31 + k * 7 + i * 13) % 65537;
      const order = [...deltas.keys()].sort((x, y) => sortKey(x) - sortKey(y) || x - y);
      const dups = h.finalOrder.map((p) => (p + i) % deltas.length);
      for (const [j, p] of dups.entries()) order.splice((p * 3 + j) % (order.length + 1), 0, p);
      for (const p of order) states[i] = t.join(get(i), deltas[p] as S);
    }
  }
  return { states, deltas };
}

/** All types, for table-driven tests. */
export function allTypes(): [CrdtTypeName, CrdtType<unknown, unknown, unknown>][] {
  return Object.entries(crdtTypes) as [CrdtTypeName, CrdtType<unknown, unknown, unknown>][];
}

/**
 * Sequential specification: the value a type must show when every op is seen
 * by every replica before the next op happens (no concurrency). LWW ops are
 * expected without explicit ts here.
 */
export function sequentialModel(type: CrdtTypeName, ops: unknown[]): unknown {
  const canon = (v: unknown): string => JSON.stringify(sortKeys(v));
  const sortedUnique = (vs: unknown[]): unknown[] => {
    const m = new Map(vs.map((v) => [canon(v), v]));
    return [...m.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((k) => JSON.parse(k) as unknown);
  };
  const o = ops as { op: string; n?: number; value?: unknown; key?: string }[];
  switch (type) {
    case 'ewflag':
      return o.length > 0 && o[o.length - 1]?.op === 'enable';
    case 'gcounter':
    case 'pncounter':
      return o.reduce((sum, x) => sum + (x.n ?? 0), 0);
    case 'gset':
      return sortedUnique(o.map((x) => x.value));
    case 'mvregister':
    case 'lwwregister': {
      const last = o[o.length - 1];
      if (type === 'lwwregister') return last === undefined ? null : sortKeys(last.value);
      return last === undefined ? [] : [sortKeys(last.value)];
    }
    case 'orset': {
      const s = new Map<string, unknown>();
      for (const x of o) {
        if (x.op === 'add') s.set(canon(x.value), x.value);
        else s.delete(canon(x.value));
      }
      return sortedUnique([...s.values()]);
    }
    case 'ormap': {
      const m = new Map<string, unknown>();
      for (const x of o) {
        if (x.op === 'set') m.set(x.key as string, x.value);
        else m.delete(x.key as string);
      }
      const out: Record<string, unknown> = {};
      for (const k of [...m.keys()].sort()) {
        Object.defineProperty(out, k, { value: [sortKeys(m.get(k))], enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
  }
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
    return out;
  }
  return Object.is(v, -0) ? 0 : v;
}

/** A replica in hand-written scenarios: `do` applies a local op and returns its delta. */
export class Replica<S> {
  state: S;

  constructor(
    readonly t: CrdtType<S, unknown, unknown>,
    readonly id: string,
  ) {
    this.state = t.empty();
  }

  do(op: unknown): S {
    const [next, delta] = this.t.apply(this.state, op, this.id);
    this.state = next;
    return delta;
  }

  recv(...xs: S[]): this {
    for (const x of xs) this.state = this.t.join(this.state, x);
    return this;
  }

  value(): unknown {
    return this.t.value(this.state);
  }
}
