/**
 * The chaos test's pure half: a seeded random generator, the fault plan (which fault, on which
 * node, when, for how long) and the checks of what the mesh holds afterwards against what was
 * acknowledged. Nothing here touches a process or a socket: `driver.ts` executes a plan
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
 *   again after `holdMs`.
 * - `db-kill`: SIGKILL the test server (it commits every write before answering it, as MongoDB's
 *   journal does: `--durable-writes`), start it again after `holdMs`. Its oplog is gone, so the
 *   node's listener resyncs.
 * - `db-freeze`: SIGSTOP the test server (a database that hangs), SIGCONT after `holdMs`.
 * - `outage`: the node goes down (function, listener and agent killed) while its database keeps
 *   taking its sensors' writes, more than its oplog holds; never drawn at random (weight 0):
 *   placed once by `planOutage`, held until the writes are done (see driver.ts).
 */
export const FAULT_KINDS = ['kill', 'partition', 'db-restart', 'db-kill', 'db-freeze', 'outage'] as const;
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
  /** Faults placed beforehand (an outage): the drawn ones keep clear of their nodes and count them as active. */
  reserved?: readonly Fault[];
}

export const DEFAULT_WEIGHTS: Readonly<Record<FaultKind, number>> = { kill: 5, partition: 3, 'db-restart': 1, 'db-kill': 1, 'db-freeze': 1, outage: 0 };
export const DEFAULT_HOLD_MS: Readonly<Record<FaultKind, readonly [number, number]>> = {
  kill: [100, 3_000],
  partition: [1_000, 6_000],
  'db-restart': [200, 2_000],
  'db-kill': [200, 2_000],
  'db-freeze': [500, 3_000],
  outage: [5_000, 5_000],
};

/**
 * The one outage of a run: a node (drawn from the seed) goes down at `atFraction` of the chaos
 * phase for at least `holdMs` (the driver holds it longer until its writes are done).
 */
export function planOutage(seed: number, nodes: number, durationMs: number, holdMs: number, atFraction = 0.2): Fault {
  const node = new Prng(seed).fork('outage').int(1, nodes);
  return { seq: 0, atMs: Math.round(durationMs * atFraction), node, kind: 'outage', holdMs };
}

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

  const reserved = opts.reserved ?? [];
  const faults: Fault[] = [...reserved];
  /** Per node: busy from-until (fault start, fault end + settle). */
  const busy = (node: number, at: number, hold: number) =>
    faults.some((f) => f.node === node && f.atMs < at + hold + settleMs && at < f.atMs + f.holdMs + settleMs);
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
      if (!busy(cand, t, holdMs)) {
        node = cand;
        break;
      }
    }
    if (node === 0) continue;
    faults.push({ seq: 0, atMs: t, node, kind, ...(role ? { role } : {}), holdMs });
  }
  return faults.sort((a, b) => a.atMs - b.atMs).map((f, i) => ({ ...f, seq: i + 1 }));
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

/** A reading the writers tried to insert: its unique key, and what became of it. */
export interface WriteRecord {
  /** Unique per run: the reading's timestamp (ms since epoch) identifies it everywhere. */
  readonly key: number;
  readonly origin: number;
  /** When the insert was sent (ms from the start of the chaos phase). */
  readonly atMs?: number;
  /** The insert was acknowledged (the function answered its id, or the driver the write). */
  acked: boolean;
  /** The id the origin answered, when acked. */
  id?: string;
  /** The delete of this reading was acknowledged. */
  deleted: boolean;
  /** A delete was sent without an acknowledgement: the reading may or may not be gone. */
  deleteUncertain: boolean;
  /**
   * The reading's version (its `temperature`, unique per write in a run) as the last
   * acknowledged insert, update or replace left it.
   */
  value?: number;
  /** Versions of writes sent since that one without an acknowledgement: the origin may hold any of them instead. */
  maybe?: number[];
  /** A writer is changing or deleting it right now (one write at a time per reading). */
  busy?: boolean;
}

/** One reading as a node holds it: its key, its version and all its data fields (canonical JSON). */
export interface HeldReading {
  readonly key: number;
  readonly value: number | null;
  readonly fields: string;
}

/** What one node holds: its own readings, and its replicas per origin (with repeats). */
export interface NodeHoldings {
  readonly node: number;
  readonly own: readonly HeldReading[];
  readonly replicas: ReadonlyMap<number, readonly HeldReading[]>;
}

/** Fields a replica adds to the reading (functions/syncmesh/src/replication/replicas.ts); `_id` differs too. */
const REPLICA_FIELDS = new Set(['_id', '_origin', '_origin_id', '_rev']);

/**
 * A reading's data fields as one canonical string (sorted keys, dates as ISO strings), without
 * `_id` and the replica's own fields, so an origin's document and its replica compare equal
 * exactly when the replica is up to date (a replace that dropped a field must drop it there too).
 */
export function canonicalFields(doc: Readonly<Record<string, unknown>>): string {
  const keys = Object.keys(doc)
    .filter((k) => !REPLICA_FIELDS.has(k))
    .sort();
  return JSON.stringify(keys.map((k) => [k, doc[k] instanceof Date ? (doc[k] as Date).toISOString() : doc[k]]));
}

export interface DataVerdict {
  /** Acknowledged, not deleted, and missing from its origin or from a subscriber; or an acknowledged update the origin does not hold. */
  losses: string[];
  /** A key held twice by one node (own or replica). */
  duplicates: string[];
  /** A deleted reading (acknowledged delete) still held somewhere. */
  resurrected: string[];
  /** A reading held by a subscriber that its origin does not hold (or a key nobody wrote). */
  orphans: string[];
  /** A replica whose fields differ from its origin's reading (an update, replace or the reading itself not applied). */
  stale: string[];
  /** Readings whose insert or delete was never acknowledged and that exist (consistently). */
  uncertainHeld: number;
}

function byKey(list: readonly HeldReading[]): Map<number, HeldReading[]> {
  const m = new Map<number, HeldReading[]>();
  for (const r of list) {
    const l = m.get(r.key);
    if (l) l.push(r);
    else m.set(r.key, [r]);
  }
  return m;
}

/**
 * The exact promise, for every origin o and every node s subscribed to o:
 * - an acknowledged insert that was not deleted is on o and on s exactly once;
 * - o holds the version of its last acknowledged write (or of one sent later without an answer);
 * - a reading whose delete was acknowledged is on neither;
 * - whatever o holds (also an unacknowledged insert that did land) s holds exactly once, with
 *   the same fields, and s holds nothing of o that o does not hold;
 * - no node holds any key twice, and nobody holds a key the writers never sent.
 */
export function verifyData(
  writes: readonly WriteRecord[],
  holdings: readonly NodeHoldings[],
  subscribersOf: (origin: number) => readonly number[],
): DataVerdict {
  const v: DataVerdict = { losses: [], duplicates: [], resurrected: [], orphans: [], stale: [], uncertainHeld: 0 };
  const written = new Map(writes.map((w) => [w.key, w]));
  const own = new Map(holdings.map((h) => [h.node, byKey(h.own)]));
  const replicas = new Map(holdings.map((h) => [h.node, new Map([...h.replicas].map(([o, list]) => [o, byKey(list)]))]));
  for (const h of holdings) {
    for (const [k, list] of own.get(h.node)!) {
      if (list.length > 1) v.duplicates.push(`node-${h.node} holds its reading ${k} ${list.length} times`);
      const w = written.get(k);
      if (!w || w.origin !== h.node) v.orphans.push(`node-${h.node} holds reading ${k}, which the writers never sent to it`);
    }
    for (const [origin, keys] of replicas.get(h.node)!) {
      const originOwn = own.get(origin) ?? new Map<number, HeldReading[]>();
      for (const [k, list] of keys) {
        if (list.length > 1) v.duplicates.push(`node-${h.node} holds the replica of node-${origin}'s ${k} ${list.length} times`);
        const there = originOwn.get(k);
        if (!there) {
          const w = written.get(k);
          if (w?.deleted) v.resurrected.push(`node-${h.node} still holds the replica of node-${origin}'s ${k}, whose delete was acknowledged`);
          else v.orphans.push(`node-${h.node} holds a replica of node-${origin}'s ${k}, which node-${origin} does not hold`);
        } else if (list.some((r) => r.fields !== there[0]!.fields)) {
          v.stale.push(`node-${h.node}'s replica of node-${origin}'s ${k} is version ${list[0]!.value}, node-${origin} holds version ${there[0]!.value}`);
        }
      }
    }
  }
  for (const w of writes) {
    const origin = own.get(w.origin);
    if (!origin) continue;
    const held = origin.get(w.key);
    const onOrigin = held?.length ?? 0;
    if (w.deleted && onOrigin > 0) v.resurrected.push(`node-${w.origin} still holds ${w.key}, whose delete was acknowledged`);
    const at = w.atMs === undefined ? '' : ` (inserted at t=${(w.atMs / 1000).toFixed(1)} s)`;
    if (w.acked && !w.deleted && !w.deleteUncertain && onOrigin === 0) v.losses.push(`node-${w.origin} lost its acknowledged reading ${w.key}${at}`);
    if (onOrigin > 0 && (!w.acked || w.deleteUncertain)) v.uncertainHeld++;
    if (onOrigin === 0) continue;
    const accepted = [...(w.value !== undefined ? [w.value] : []), ...(w.maybe ?? [])];
    if (w.value !== undefined && !accepted.includes(held![0]!.value as number)) {
      v.losses.push(
        `node-${w.origin} holds version ${held![0]!.value} of ${w.key}, but its last acknowledged write set ${w.value}${w.maybe?.length ? ` (or one of ${w.maybe.join(', ')})` : ''}${at}`,
      );
    }
    for (const s of subscribersOf(w.origin)) {
      const there = replicas.get(s)?.get(w.origin)?.get(w.key)?.length ?? 0;
      if (there === 0)
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
