/**
 * The chaos test's pure half: a seeded random generator, the fault plan (which fault, on which
 * node, when, for how long) and the checks of what the mesh holds afterwards against what was
 * acknowledged. Nothing here touches a process or a socket: `chaos-driver.ts` executes a plan
 * against a running mesh, and `test/integration/chaos.test.ts` ties both together.
 *
 * A plan is a function of its seed and options only, so `CHAOS_SEED=n` replays the same faults
 * at the same offsets (the interleaving with the writers' real timing still varies from run to
 * run: these are real processes on a shared machine).
 */

/** The seeded PRNG of the fault plans (the lab's one, re-exported for the mesh's users). */
import { Prng } from '@syncmesh-edge/lab';

export { Prng };

/** A fresh random seed (printed first, so the run can be replayed with CHAOS_SEED). */
export function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}

/** Node processes the driver may kill -9 and restart. The test server is handled by the db-* kinds. */
export const KILLABLE_ROLES = ['function', 'listener', 'agent'] as const;
export type KillableRole = (typeof KILLABLE_ROLES)[number];

/**
 * - `kill`: SIGKILL one process of a node; it is started again after `holdMs`.
 * - `partition`: cut the node off (toxiproxy cut of all its links + iptables DROP in its
 *   namespace, so agent traffic is cut too); restored after `holdMs`.
 * - `db-restart`: stop the node's test server (SIGTERM: the on-disk store is committed), start it
 *   again after `holdMs`. See the README on why the test server is not killed with SIGKILL.
 * - `db-freeze`: SIGSTOP the test server (a database that hangs), SIGCONT after `holdMs`.
 */
export const FAULT_KINDS = ['kill', 'partition', 'db-restart', 'db-freeze'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface Fault {
  /** Sequence number, in plan order. */
  readonly seq: number;
  /** Offset from the start of the chaos phase. */
  readonly atMs: number;
  /** 1-based node index. */
  readonly node: number;
  readonly kind: FaultKind;
  /** The killed process (kind `kill` only). */
  readonly role?: KillableRole;
  /** How long the fault lasts before it is healed (restart, restore, SIGCONT). */
  readonly holdMs: number;
}

export interface PlanOptions {
  seed: number;
  nodes: number;
  durationMs: number;
  /** Relative weight of each kind (0 = never). */
  weights?: Partial<Record<FaultKind, number>>;
  /** Pause between two fault starts, uniform in [min, max]. */
  gapMs?: readonly [number, number];
  /** Hold time of each kind, uniform in [min, max]. */
  holdMs?: Partial<Record<FaultKind, readonly [number, number]>>;
  /** At most this many nodes partitioned at once. */
  maxPartitioned?: number;
  /** At most this many faults active at once. */
  maxConcurrent?: number;
  /**
   * What a heal costs after the hold (a restarted process becomes ready, a restored node
   * reconnects), reserved in the plan so one node never has two overlapping faults.
   */
  settleMs?: number;
  /** No fault starts before this offset (the workers get going first). */
  warmupMs?: number;
}

export const DEFAULT_WEIGHTS: Readonly<Record<FaultKind, number>> = { kill: 5, partition: 3, 'db-restart': 1, 'db-freeze': 1 };
export const DEFAULT_HOLD_MS: Readonly<Record<FaultKind, readonly [number, number]>> = {
  kill: [100, 3_000],
  partition: [1_000, 6_000],
  'db-restart': [200, 2_000],
  'db-freeze': [500, 3_000],
};

/**
 * The faults of one run: every fault starts after the warm-up and is healed by `durationMs`;
 * a node has at most one fault at a time (including its settle time); at most `maxPartitioned`
 * nodes are cut off and at most `maxConcurrent` faults are active at once.
 */
export function planFaults(opts: PlanOptions): Fault[] {
  const rng = new Prng(opts.seed).fork('faults');
  const weights = { ...DEFAULT_WEIGHTS, ...opts.weights };
  const holds = { ...DEFAULT_HOLD_MS, ...opts.holdMs };
  const [gapMin, gapMax] = opts.gapMs ?? [300, 2_000];
  const maxPartitioned = opts.maxPartitioned ?? 2;
  const maxConcurrent = opts.maxConcurrent ?? 3;
  const settleMs = opts.settleMs ?? 2_000;
  const warmupMs = opts.warmupMs ?? 1_000;
  if (opts.nodes < 1) throw new RangeError(`nodes must be at least 1, got ${opts.nodes}`);
  if (gapMin < 1 || gapMax < gapMin) throw new RangeError(`gapMs must be [min >= 1, max >= min], got [${gapMin}, ${gapMax}]`);

  const faults: Fault[] = [];
  /** Per node: busy until (fault end + settle). */
  const busyUntil = new Array<number>(opts.nodes + 1).fill(0);
  let t = warmupMs;
  for (;;) {
    t += rng.int(gapMin, gapMax);
    const kind = rng.weighted(weights);
    const [hMin, hMax] = holds[kind];
    const holdMs = rng.int(hMin, hMax);
    const role = kind === 'kill' ? rng.pick(KILLABLE_ROLES) : undefined;
    // draw the node even when the fault is dropped, so the stream does not depend on the filters
    const wanted = rng.int(1, opts.nodes);
    if (t + holdMs > opts.durationMs) break;
    const active = faults.filter((f) => f.atMs <= t && t < f.atMs + f.holdMs + settleMs);
    if (active.length >= maxConcurrent) continue;
    if (kind === 'partition' && active.filter((f) => f.kind === 'partition').length >= maxPartitioned) continue;
    // the wanted node, or the next free one after it
    let node = 0;
    for (let k = 0; k < opts.nodes; k++) {
      const cand = ((wanted - 1 + k) % opts.nodes) + 1;
      if (busyUntil[cand]! <= t) {
        node = cand;
        break;
      }
    }
    if (node === 0) continue;
    busyUntil[node] = t + holdMs + settleMs;
    faults.push({ seq: faults.length + 1, atMs: t, node, kind, ...(role ? { role } : {}), holdMs });
  }
  return faults;
}

/** Faults by kind (`kill` split by role, e.g. `kill:agent`), for the summary. */
export function countFaults(faults: readonly Pick<Fault, 'kind' | 'role'>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of faults) {
    const k = f.kind === 'kill' ? `kill:${f.role}` : f.kind;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------- queries

export type QueryOutcome = 'ok' | 'error' | 'hang';

/** One request the test sent during the chaos (a write, a delete, a read or a CRDT op). */
export interface QueryRecord {
  readonly what: string;
  readonly node: number;
  readonly startMs: number;
  readonly durationMs: number;
  readonly outcome: QueryOutcome;
  /** Short reason of an error or hang. */
  readonly reason?: string;
}

/** A time window in which a node had a fault (from the driver's log). */
export interface FaultWindow {
  readonly node: number;
  readonly kind: FaultKind;
  readonly role?: KillableRole;
  readonly fromMs: number;
  readonly toMs: number;
}

export interface QueryStats {
  ok: number;
  failed: number;
  /** Hangs whose entry node was cut off: the client's own connection was dropped by the emulated network. */
  hungCut: number;
  /** Every other hang: must be 0. */
  hung: QueryRecord[];
  maxMs: number;
  maxOkMs: number;
}

/**
 * Splits the records: a hang (no answer within the client's deadline) counts against the
 * system unless its entry node was partitioned while it ran — the emulation drops the client's
 * own packets to a cut node (iptables in the node's namespace), which no server can answer.
 */
export function queryStats(records: readonly QueryRecord[], windows: readonly FaultWindow[]): QueryStats {
  const s: QueryStats = { ok: 0, failed: 0, hungCut: 0, hung: [], maxMs: 0, maxOkMs: 0 };
  for (const r of records) {
    s.maxMs = Math.max(s.maxMs, r.durationMs);
    if (r.outcome === 'ok') {
      s.ok++;
      s.maxOkMs = Math.max(s.maxOkMs, r.durationMs);
    } else if (r.outcome === 'error') {
      s.failed++;
    } else if (windows.some((w) => w.kind === 'partition' && w.node === r.node && w.fromMs <= r.startMs + r.durationMs && r.startMs <= w.toMs)) {
      s.hungCut++;
    } else {
      s.hung.push(r);
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------- data checks

/** A reading the writer tried to insert: its unique key, and what became of it. */
export interface WriteRecord {
  /** Unique per run: the reading's timestamp (ms since epoch) identifies it everywhere. */
  readonly key: number;
  readonly origin: number;
  /** When the insert was sent (ms from the start of the chaos phase). */
  readonly atMs?: number;
  /** The function acknowledged the insert (answered its id). */
  acked: boolean;
  /** The id the origin answered, when acked. */
  id?: string;
  /** The delete of this reading was acknowledged. */
  deleted: boolean;
  /** A delete was sent without an acknowledgement: the reading may or may not be gone. */
  deleteUncertain: boolean;
  /** A writer is deleting it right now. */
  deleting?: boolean;
}

/** What one node holds: its own readings' keys, and its replicas' keys per origin (with repeats). */
export interface NodeHoldings {
  readonly node: number;
  readonly own: readonly number[];
  readonly replicas: ReadonlyMap<number, readonly number[]>;
}

export interface DataVerdict {
  /** Acknowledged, not deleted, and missing from its origin or from a subscriber. */
  losses: string[];
  /** A key held twice by one node (own or replica). */
  duplicates: string[];
  /** A deleted reading (acknowledged delete) still held somewhere. */
  resurrected: string[];
  /** A reading held by a subscriber that its origin does not hold (or a key nobody wrote). */
  orphans: string[];
  /** Readings whose insert or delete was never acknowledged and that exist (consistently). */
  uncertainHeld: number;
}

/**
 * The exact promise, for every origin o and every node s subscribed to o:
 * - an acknowledged insert that was not deleted is on o and on s exactly once;
 * - a reading whose delete was acknowledged is on neither;
 * - whatever o holds (also an unacknowledged insert that did land) s holds exactly once, and s
 *   holds nothing of o that o does not hold;
 * - no node holds any key twice, and nobody holds a key the writer never sent.
 */
export function verifyData(
  writes: readonly WriteRecord[],
  holdings: readonly NodeHoldings[],
  subscribersOf: (origin: number) => readonly number[],
): DataVerdict {
  const v: DataVerdict = { losses: [], duplicates: [], resurrected: [], orphans: [], uncertainHeld: 0 };
  const byKey = new Map(writes.map((w) => [w.key, w]));
  const byNode = new Map(holdings.map((h) => [h.node, h]));
  const counts = (keys: readonly number[]) => {
    const m = new Map<number, number>();
    for (const k of keys) m.set(k, (m.get(k) ?? 0) + 1);
    return m;
  };
  const ownCounts = new Map(holdings.map((h) => [h.node, counts(h.own)]));
  for (const h of holdings) {
    for (const [k, n] of ownCounts.get(h.node)!) {
      if (n > 1) v.duplicates.push(`node-${h.node} holds its reading ${k} ${n} times`);
      const w = byKey.get(k);
      if (!w || w.origin !== h.node) v.orphans.push(`node-${h.node} holds reading ${k}, which the writer never sent to it`);
    }
    for (const [origin, keys] of h.replicas) {
      const originOwn = ownCounts.get(origin) ?? new Map<number, number>();
      for (const [k, n] of counts(keys)) {
        if (n > 1) v.duplicates.push(`node-${h.node} holds the replica of node-${origin}'s ${k} ${n} times`);
        if (!originOwn.has(k)) {
          const w = byKey.get(k);
          if (w?.deleted) v.resurrected.push(`node-${h.node} still holds the replica of node-${origin}'s ${k}, whose delete was acknowledged`);
          else v.orphans.push(`node-${h.node} holds a replica of node-${origin}'s ${k}, which node-${origin} does not hold`);
        }
      }
    }
  }
  for (const w of writes) {
    const origin = byNode.get(w.origin);
    if (!origin) continue;
    const onOrigin = ownCounts.get(w.origin)!.get(w.key) ?? 0;
    if (w.deleted && onOrigin > 0) v.resurrected.push(`node-${w.origin} still holds ${w.key}, whose delete was acknowledged`);
    const at = w.atMs === undefined ? '' : ` (inserted at t=${(w.atMs / 1000).toFixed(1)} s)`;
    if (w.acked && !w.deleted && !w.deleteUncertain && onOrigin === 0) v.losses.push(`node-${w.origin} lost its acknowledged reading ${w.key}${at}`);
    if (onOrigin > 0 && (!w.acked || w.deleteUncertain)) v.uncertainHeld++;
    if (onOrigin === 0) continue;
    for (const s of subscribersOf(w.origin)) {
      const held =
        byNode
          .get(s)
          ?.replicas.get(w.origin)
          ?.filter((k) => k === w.key).length ?? 0;
      if (held === 0)
        v.losses.push(
          `node-${s} (subscribed to node-${w.origin}) lacks the replica of ${w.key}${at}${w.acked ? '' : ', insert not acknowledged, but on its origin'}`,
        );
    }
  }
  return v;
}

// ---------------------------------------------------------------------------------- CRDT model

/**
 * The CRDT ops the test applies and their expected final values. A counter op whose answer was
 * lost (the agent died mid-call) may or may not have been applied: it is "uncertain" and widens
 * the accepted range instead of making the check inexact; set elements are unique per op.
 */
export class CrdtModel {
  gcounter = 0;
  gcounterUncertain = 0;
  pncounter = 0;
  /** Sum of |n| of uncertain pncounter ops (the value may be off by up to this, either way). */
  pncounterUncertain = 0;
  readonly orsetAdded = new Set<string>();
  readonly orsetRemoved = new Set<string>();
  readonly orsetUncertain = new Set<string>();
  ops = 0;

  expectedOrset(): string[] {
    return [...this.orsetAdded].filter((v) => !this.orsetRemoved.has(v)).sort();
  }
}

export interface CrdtObservation {
  readonly node: number;
  readonly gcounter: number;
  readonly pncounter: number;
  readonly orset: readonly string[];
}

/** Empty when every agent holds the same state and it matches the model; else what differs. */
export function verifyCrdts(model: CrdtModel, seen: readonly CrdtObservation[]): string[] {
  const problems: string[] = [];
  const first = seen[0];
  if (!first) return ['no agent was read'];
  for (const o of seen) {
    if (o.gcounter !== first.gcounter || o.pncounter !== first.pncounter || JSON.stringify(o.orset) !== JSON.stringify(first.orset)) {
      problems.push(
        `node-${o.node} differs from node-${first.node}: gcounter ${o.gcounter} vs ${first.gcounter}, pncounter ${o.pncounter} vs ${first.pncounter}, orset ${o.orset.length} vs ${first.orset.length} elements`,
      );
    }
  }
  const g = first.gcounter - model.gcounter;
  if (g < 0 || g > model.gcounterUncertain)
    problems.push(`gcounter is ${first.gcounter}, expected ${model.gcounter}${model.gcounterUncertain ? ` (+0..${model.gcounterUncertain} uncertain)` : ''}`);
  if (Math.abs(first.pncounter - model.pncounter) > model.pncounterUncertain) {
    problems.push(`pncounter is ${first.pncounter}, expected ${model.pncounter}${model.pncounterUncertain ? ` (±${model.pncounterUncertain} uncertain)` : ''}`);
  }
  const expected = new Set(model.expectedOrset());
  const have = new Set(first.orset);
  // an element whose remove is uncertain may be gone
  for (const e of expected) if (!have.has(e) && !model.orsetUncertain.has(e)) problems.push(`orset lacks ${e}, whose add was acknowledged`);
  for (const e of have)
    if (!expected.has(e) && !model.orsetUncertain.has(e))
      problems.push(`orset holds ${e}, ${model.orsetRemoved.has(e) ? 'whose remove was acknowledged' : 'which was never added'}`);
  return problems;
}
