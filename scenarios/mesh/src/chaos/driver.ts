/**
 * The chaos test's executing half: runs a fault plan (chaos.ts) against a running mesh, and the
 * workers that load it meanwhile: writers (inserts, updates and deletes of readings through the
 * nodes' functions, replaces and updates straight into the nodes' databases with the driver, as
 * the sensors and gateways that feed a node do), a CRDT worker (MISO SDK ops on every node's
 * agent) and a reader (mesh-wide aggregates); and the outage's bulk writer. Every request is
 * recorded with its duration and outcome; only acknowledged writes and ops count towards the
 * expected final state.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MongoClient, MongoServerSelectionError, ObjectId, type AnyBulkWriteOperation, type Collection, type Document } from 'mongodb';
import {
  canonicalFields,
  CrdtModel,
  KILLABLE_ROLES,
  type Fault,
  type FaultWindow,
  type HeldReading,
  type KillableRole,
  type NodeHoldings,
  type Prng,
  type QueryOutcome,
  type QueryRecord,
  type WriteRecord,
} from './chaos.js';
import { REPO_ROOT, type MeshConfig } from '../config.js';
import { squashError } from '../errors.js';
import { cut, restore } from '../mesh.js';
import { requireState } from '../plan/state.js';
import { nodeProcess, startNodeService } from '../runtime/process.js';
import { isAlive, stopProcess, waitFor } from '@syncmesh-edge/lab';
import type { NodePlan } from '../plan/plan.js';
import type { Topology } from '../plan/topology.js';

/** Sensor ids of the chaos readings: 7000 + origin node index (generated data uses 1..N). */
export const CHAOS_SENSOR_BASE = 7000;
/** First timestamp of the chaos readings; each write takes the next second (its unique key). */
export const CHAOS_EPOCH_MS = Date.UTC(2030, 0, 1);
export const CRDT_FUNCTION = 'chaos-fn';
export const CRDT_OBJECT = 'chaos';
const ROLES_IN_START_ORDER = ['mongo', 'function', 'listener', 'agent'] as const;

const elapsed = (t0: number) => performance.now() - t0;

/**
 * What an outage does while its node is down (its function, listener and agent killed): it
 * writes into the node's database, calls `restart()` (which brings the node's processes back
 * once the fault's hold is over) and follows what happens after.
 */
export type OutageWork = (node: number, restart: () => Promise<void>) => Promise<void>;

/** Executes faults; each node's faults run one after the other, nodes in parallel. */
export class FaultDriver {
  readonly windows: FaultWindow[] = [];
  readonly executed: Fault[] = [];
  readonly errors: string[] = [];
  /** Processes that exited during their start and were started again (`role of node-i: reason`). */
  readonly restarts: string[] = [];
  /** cut/restore one at a time: two neighbours share a link, and its toxics must end up right. */
  private links: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly cfg: MeshConfig,
    private readonly log: (line: string) => void,
    private readonly outageWork?: OutageWork,
  ) {}

  /**
   * Starts a process of a node again as the appliance's supervisor would (`restart:
   * on-failure`): one that exits during its start (the MISO agent does when its database does
   * not answer within 10 s) is started again, up to 4 more times, 1, 2, 4, 8 s apart. Each
   * such restart is recorded; the last failure is thrown.
   */
  private async start(ref: string, role: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await startNodeService(this.cfg, ref, role);
        return;
      } catch (err) {
        if (attempt >= 4 || !/exited during start/.test((err as Error).message)) throw err;
        this.restarts.push(`${role} of node-${ref}: ${(err as Error).message.split('\n')[0]}`);
        await sleep(1_000 * 2 ** attempt);
      }
    }
  }

  /** kill -9 of one process of a node (if it runs); resolves once it is gone. */
  private async kill9(ref: string, role: string): Promise<void> {
    const rec = nodeProcess(this.cfg.stateRoot, this.cfg.name, ref, role);
    if (rec && isAlive(rec)) {
      process.kill(rec.pid, 'SIGKILL');
      await waitFor(`${role} of node-${ref} to die`, () => !isAlive(rec), 10_000);
    }
  }

  private serialLinks<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.links.then(fn, fn);
    this.links = next.catch(squashError); // the caller sees the failure; the chain goes on
    return next;
  }

  /** Runs every fault at its offset from `t0` (performance.now()); resolves when all are healed. */
  async run(faults: readonly Fault[], t0: number): Promise<void> {
    const byNode = new Map<number, Fault[]>();
    for (const f of faults) byNode.set(f.node, [...(byNode.get(f.node) ?? []), f]);
    await Promise.all(
      [...byNode.values()].map(async (list) => {
        for (const f of list) {
          const wait = f.atMs - elapsed(t0);
          if (wait > 0) await sleep(wait); // the plan's schedule, not a synchronisation
          await this.one(f, t0);
        }
      }),
    );
  }

  private async one(f: Fault, t0: number): Promise<void> {
    const ref = String(f.node);
    const from = elapsed(t0);
    const what = `#${f.seq} ${f.kind}${f.role ? `:${f.role}` : ''} node-${f.node} hold ${f.holdMs} ms`;
    this.log(`t=${(from / 1000).toFixed(1)}s fault ${what}`);
    try {
      switch (f.kind) {
        case 'kill': {
          await this.kill9(ref, f.role!);
          await sleep(f.holdMs);
          await this.start(ref, f.role!);
          break;
        }
        case 'db-kill': {
          // the test server commits every write before answering it (--durable-writes), as a
          // journaling MongoDB: nothing acknowledged may be lost
          await this.kill9(ref, 'mongo');
          await sleep(f.holdMs);
          await this.start(ref, 'mongo');
          break;
        }
        case 'outage': {
          if (!this.outageWork) throw new Error('an outage fault needs the outage work (FaultDriver outageWork)');
          const roles = KILLABLE_ROLES.filter((r) => this.cfg.services.includes(r));
          for (const role of [...roles].reverse()) await this.kill9(ref, role);
          const down = performance.now();
          await this.outageWork(f.node, async () => {
            const left = f.holdMs - (performance.now() - down);
            if (left > 0) await sleep(left); // the plan's least hold; the writes may take longer
            for (const role of roles) await this.start(ref, role);
          });
          break;
        }
        case 'partition':
          await this.serialLinks(() => cut(this.cfg.stateRoot, this.cfg.name, ref));
          await sleep(f.holdMs);
          await this.serialLinks(() => restore(this.cfg.stateRoot, this.cfg.name, ref));
          break;
        case 'db-restart': {
          const rec = nodeProcess(this.cfg.stateRoot, this.cfg.name, ref, 'mongo');
          if (rec) await stopProcess(rec); // SIGTERM: the on-disk store is committed and closed
          await sleep(f.holdMs);
          await this.start(ref, 'mongo');
          break;
        }
        case 'db-freeze': {
          const rec = nodeProcess(this.cfg.stateRoot, this.cfg.name, ref, 'mongo');
          if (rec && isAlive(rec)) process.kill(rec.pid, 'SIGSTOP');
          try {
            await sleep(f.holdMs);
          } finally {
            if (rec && isAlive(rec)) process.kill(rec.pid, 'SIGCONT');
          }
          break;
        }
      }
    } catch (err) {
      this.errors.push(`${what}: ${(err as Error).message}`);
      this.log(`fault ${what} failed: ${(err as Error).message}`);
    } finally {
      this.executed.push(f);
      this.windows.push({ node: f.node, kind: f.kind, ...(f.role ? { role: f.role as KillableRole } : {}), fromMs: from, toMs: elapsed(t0) });
    }
  }

  /** Restores every cut node, wakes every frozen test server, and starts every dead process again. */
  async healAll(): Promise<string[]> {
    const done: string[] = [];
    const state = requireState(this.cfg.stateRoot, this.cfg.name);
    for (const id of state.cut) {
      await this.serialLinks(() => restore(this.cfg.stateRoot, this.cfg.name, id));
      done.push(`restored ${id}`);
    }
    for (const node of state.plan.nodes) {
      for (const role of ROLES_IN_START_ORDER) {
        if (role !== 'mongo' && !this.cfg.services.includes(role)) continue;
        const rec = nodeProcess(this.cfg.stateRoot, this.cfg.name, String(node.index), role);
        if (rec && isAlive(rec)) {
          if (role === 'mongo') process.kill(rec.pid, 'SIGCONT'); // harmless when it runs
          continue;
        }
        await this.start(String(node.index), role);
        done.push(`started ${role} of ${node.id}`);
      }
    }
    return done;
  }
}

// ---------------------------------------------------------------------------------- HTTP

export interface PostResult {
  outcome: QueryOutcome;
  status?: number;
  body?: { data?: Record<string, unknown> | null; errors?: { message: string }[] };
  reason?: string;
  /** The request certainly never reached the server (connection refused). */
  refused: boolean;
  durationMs: number;
}

/** POST with a client deadline: `hang` means no answer within it. */
export async function timedPost(url: string, body: unknown, deadlineMs: number, writeKey?: string): Promise<PostResult> {
  const t = performance.now();
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (writeKey) headers['authorization'] = `Bearer ${writeKey}`;
  try {
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(deadlineMs) });
    const text = await res.text();
    let parsed: PostResult['body'];
    try {
      parsed = JSON.parse(text) as PostResult['body'];
    } catch (err) {
      squashError(err); // reported as an error below
      return {
        outcome: 'error',
        status: res.status,
        reason: `HTTP ${res.status}, not JSON: ${text.slice(0, 80)}`,
        refused: false,
        durationMs: performance.now() - t,
      };
    }
    const ok = res.status === 200 && !(parsed?.errors && parsed.errors.length > 0);
    return {
      outcome: ok ? 'ok' : 'error',
      status: res.status,
      body: parsed,
      ...(ok ? {} : { reason: `HTTP ${res.status}: ${parsed?.errors?.[0]?.message ?? ''}`.slice(0, 160) }),
      refused: false,
      durationMs: performance.now() - t,
    };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const durationMs = performance.now() - t;
    if (e.name === 'TimeoutError') return { outcome: 'hang', reason: `no answer within ${deadlineMs} ms`, refused: false, durationMs };
    const code = e.cause?.code ?? '';
    return { outcome: 'error', reason: `${e.message}${code ? ` (${code})` : ''}`, refused: code === 'ECONNREFUSED', durationMs };
  }
}

// ---------------------------------------------------------------------------------- workers

export interface WorkerContext {
  readonly topology: Topology;
  readonly queries: QueryRecord[];
  readonly t0: number;
  /** Client deadline of every request (past it, a request counts as hung). */
  readonly deadlineMs: number;
  readonly stop: AbortSignal;
  /** The functions' write key (SYNCMESH_WRITE_KEY), sent with every data write. */
  readonly writeKey?: string;
  /** One driver client per node (index = node - 1), on its database: the writes that bypass the function. */
  readonly databases?: readonly MongoClient[];
  /** The next version of a reading (its `temperature`): unique in the run, so every write is told apart. */
  readonly nextVersion: () => number;
}

function record(ctx: WorkerContext, what: string, node: number, r: { outcome: QueryOutcome; reason?: string; durationMs: number }, startMs: number): void {
  ctx.queries.push({ what, node, startMs, durationMs: r.durationMs, outcome: r.outcome, ...(r.reason ? { reason: r.reason } : {}) });
}

/** Pause between two requests of one worker: it shapes the load on 2 shared cores, it synchronises nothing. */
const PACE_MS = 25;

/** A chaos reading of `origin` at `key` (its timestamp) with version `version` (its temperature). */
export function chaosReading(key: number, origin: number, version: number): Document {
  return {
    sensor_id: CHAOS_SENSOR_BASE + origin,
    location: CHAOS_SENSOR_BASE + origin,
    lat: 42.6 + origin / 100,
    lon: 23.3,
    timestamp: new Date(key),
    temperature: version,
    humidity: 50,
    pressure: 94_000,
  };
}

/** A replacement: another version, another humidity, and no pressure (a replace drops what it does not name). */
function replacement(w: WriteRecord, version: number): Document {
  const { pressure: _dropped, ...rest } = chaosReading(w.key, w.origin, version);
  return { ...rest, humidity: 60 };
}

/** The chaos readings' collection of a node's database. */
export function readingsOf(client: MongoClient): Collection {
  return client.db('syncmesh').collection('sensor_data');
}

/** A write was answered; `version` is what the reading now holds. */
function acknowledged(w: WriteRecord, version: number): void {
  w.value = version;
  w.maybe = [];
}

/** A write got no answer: the reading may hold `version` instead. */
function uncertain(w: WriteRecord, version: number): void {
  w.maybe = [...(w.maybe ?? []), version];
}

/**
 * A write through the driver: `refused` when it certainly never reached the server (no server
 * could be selected); any other failure may have written. The test server ignores deadlines, so
 * a frozen database fails by the socket timeout: an error, never a hang.
 */
async function driverWrite<T>(fn: () => Promise<T>): Promise<{ outcome: QueryOutcome; result?: T; reason?: string; refused: boolean; durationMs: number }> {
  const t = performance.now();
  try {
    const result = await fn();
    return { outcome: 'ok', result, refused: false, durationMs: performance.now() - t };
  } catch (err) {
    return {
      outcome: 'error',
      reason: `${(err as Error).name}: ${(err as Error).message}`.slice(0, 160),
      refused: err instanceof MongoServerSelectionError,
      durationMs: performance.now() - t,
    };
  }
}

/** Relative weights of the writers' operations (the non-inserts need an acknowledged reading of the node). */
export const WRITE_MIX = { insert: 4, delete: 1, update: 1, replace: 1, set: 1 } as const;
export type WriteOp = keyof typeof WRITE_MIX;

/**
 * Writes to a random node, one request at a time: inserts (addSensors), updates (the function's
 * `update`) and deletes (deleteSensor) through its function; replaces and `$set` updates
 * straight into its database with the driver (when `ctx.databases` is given); `ops` narrows the
 * mix (inserts must stay in it). Every insert,
 * update and replace gives the reading a new version, so the check can tell a stale replica.
 */
export async function runWriter(
  ctx: WorkerContext,
  rng: Prng,
  writes: WriteRecord[],
  nextKey: () => number,
  ops: readonly WriteOp[] = Object.keys(WRITE_MIX) as WriteOp[],
): Promise<Record<WriteOp, number>> {
  const sent = { insert: 0, delete: 0, update: 0, replace: 0, set: 0 };
  const on = (op: WriteOp) => (ops.includes(op) ? WRITE_MIX[op] : 0);
  while (!ctx.stop.aborted) {
    const node = rng.int(1, ctx.topology.nodes.length);
    const url = ctx.topology.nodes[node - 1]!.function_url;
    const db = ctx.databases?.[node - 1];
    const candidates = writes.filter((w) => w.origin === node && w.acked && !w.deleted && !w.deleteUncertain && !w.busy);
    const some = candidates.length > 0 ? 1 : 0;
    const op = rng.weighted({
      insert: on('insert'),
      delete: on('delete') * some,
      update: on('update') * some,
      replace: on('replace') * some * (db ? 1 : 0),
      set: on('set') * some * (db ? 1 : 0),
    });
    const startMs = elapsed(ctx.t0);
    sent[op]++;
    if (op === 'insert') {
      const key = nextKey();
      const version = ctx.nextVersion();
      const reading = { ...chaosReading(key, node, version), timestamp: new Date(key).toISOString() };
      const w: WriteRecord = { key, origin: node, atMs: startMs, acked: false, deleted: false, deleteUncertain: false, maybe: [version] };
      const r = await timedPost(
        url,
        { query: 'mutation($s: [SensorInput!]!) { addSensors(sensors: $s) }', variables: { s: [reading] } },
        ctx.deadlineMs,
        ctx.writeKey,
      );
      record(ctx, 'insert', node, r, startMs);
      const ids = r.body?.data?.['addSensors'];
      if (r.outcome === 'ok' && Array.isArray(ids) && typeof ids[0] === 'string') {
        w.acked = true;
        w.id = ids[0];
        acknowledged(w, version);
      }
      // a refused connection never wrote anything; everything else may have
      if (w.acked || !r.refused) writes.push(w);
    } else {
      const w = rng.pick(candidates);
      w.busy = true; // one write at a time per reading: the other writer must not pick it meanwhile
      try {
        if (op === 'delete') {
          const r = await timedPost(
            url,
            { query: 'mutation($id: ID!) { deleteSensor(_id: $id) { _id } }', variables: { id: w.id } },
            ctx.deadlineMs,
            ctx.writeKey,
          );
          record(ctx, 'delete', node, r, startMs);
          // null: not found, i.e. already gone (an earlier unacknowledged delete did land)
          if (r.outcome === 'ok') w.deleted = true;
          else if (!r.refused) w.deleteUncertain = true;
        } else if (op === 'update') {
          const version = ctx.nextVersion();
          const r = await timedPost(
            url,
            { query: 'mutation($id: ID!, $s: SensorUpdate!) { update(_id: $id, sensor: $s) { _id } }', variables: { id: w.id, s: { temperature: version } } },
            ctx.deadlineMs,
            ctx.writeKey,
          );
          record(ctx, 'update', node, r, startMs);
          // null: no such reading (the check reports it as lost)
          if (r.outcome === 'ok' && r.body?.data?.['update']) acknowledged(w, version);
          else if (r.outcome !== 'ok' && !r.refused) uncertain(w, version);
        } else {
          const version = ctx.nextVersion();
          const filter = { _id: new ObjectId(w.id) };
          const r = await driverWrite(() =>
            op === 'replace'
              ? readingsOf(db!).replaceOne(filter, replacement(w, version))
              : readingsOf(db!).updateOne(filter, { $set: { temperature: version } }),
          );
          record(ctx, `db-${op}`, node, r, startMs);
          if (r.outcome === 'ok' && r.result?.matchedCount === 1) acknowledged(w, version);
          else if (r.outcome !== 'ok' && !r.refused) uncertain(w, version);
        }
      } finally {
        w.busy = false;
      }
    }
    await sleep(PACE_MS);
  }
  return sent;
}

/** Mesh-wide aggregates through a random node (the fan-out crosses the cut and restored links). */
export async function runReader(ctx: WorkerContext, rng: Prng): Promise<number> {
  let n = 0;
  while (!ctx.stop.aborted) {
    const node = rng.int(1, ctx.topology.nodes.length);
    const startMs = elapsed(ctx.t0);
    const r = await timedPost(
      ctx.topology.nodes[node - 1]!.function_url,
      { query: '{ sensorsAggregate { count } }', request_type: 'aggregate', use_meta_data: true },
      ctx.deadlineMs,
    );
    record(ctx, 'read', node, r, startMs);
    n++;
    await sleep(PACE_MS * 4);
  }
  return n;
}

/** The part of @syncmesh-edge/miso-sdk's MisoClient the test uses (loaded from the built SDK). */
export interface SdkClient {
  register(fn: string, replica: string): Promise<unknown>;
  apply(fn: string, object: string, name: string, type: string, op: unknown, returnValue?: boolean): Promise<unknown>;
  read(fn: string, object: string, name: string, type?: string): Promise<{ value: unknown }>;
  close(): void;
}

export const SDK_MAIN = join(REPO_ROOT, 'miso-agent', 'sdk', 'dist', 'src', 'index.js');

/** One unary SDK client per node (a unary call that fails to connect certainly did nothing). */
export async function sdkClients(topology: Topology, stateDir: string, deadlineMs: number): Promise<SdkClient[]> {
  const sdk = (await import(pathToFileURL(SDK_MAIN).href)) as { MisoClient: new (socket: string, deadlineMs: number, transport: string) => SdkClient };
  return topology.nodes.map((n) => new sdk.MisoClient(join(stateDir, 'nodes', n.id, 'miso.sock'), deadlineMs, 'unary'));
}

/**
 * Agent codes that refuse an op before applying it. Not EDGE_MISO_STORE: the agent applies the
 * op in memory and queues it for replication before its database write fails, so an op answered
 * with EDGE_MISO_STORE did take effect (see the README's chaos findings). Not EDGE_MISO_INTERNAL.
 */
const REFUSED_CODES = new Set([
  'EDGE_MISO_UNKNOWN_TYPE',
  'EDGE_MISO_BAD_OP',
  'EDGE_MISO_VALUE_TOO_LARGE',
  'EDGE_MISO_BAD_REQUEST',
  'EDGE_MISO_WRONG_TYPE',
  'EDGE_MISO_NOT_FOUND',
]);

/** Errors after which the op certainly was not applied: the call never reached the agent, or the agent refused it. */
function certainlyNotApplied(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e.code && REFUSED_CODES.has(e.code)) return true;
  // gRPC fails a call at once while its channel has no connection: the call was never sent. Only
  // the SDK's own code counts; an agent's message may name a refused connection of its own
  // (EDGE_MISO_STORE: "writing 3 CRDTs to MongoDB failed: connect ECONNREFUSED ...").
  return e.code === 'EDGE_MISO_SDK_UNAVAILABLE' && /No connection established/.test(e.message ?? '');
}

/** The replica id the test registers on every agent for CRDT_FUNCTION. */
export const CHAOS_REPLICA = 'chaos-test';

/** An SDK call that did not settle within the client's deadline (its own deadline did not fire). */
export class HangError extends Error {
  override readonly name = 'HangError';
}

/** Rejects with HangError if `p` has not settled within `ms`; `p` keeps running (its result is ignored). */
export async function withDeadline<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new HangError(`no answer within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

export const CRDT_NAMES = { gcounter: 'hits', pncounter: 'balance', orset: 'members' } as const;

/** Applies random CRDT ops on random nodes' agents and keeps the model of what was acknowledged. */
export async function runCrdtWorker(ctx: WorkerContext, rng: Prng, clients: SdkClient[], model: CrdtModel, nextKey: () => number): Promise<number> {
  const registered = new Array<boolean>(clients.length).fill(false);
  /** orset elements added (acknowledged) through each node and not removed. */
  const addedAt = clients.map(() => [] as string[]);
  let n = 0;
  while (!ctx.stop.aborted) {
    const i = rng.int(0, clients.length - 1);
    const c = clients[i]!;
    const startMs = elapsed(ctx.t0);
    const t = performance.now();
    const kind = rng.weighted({ g: 3, pn: 3, add: 2, remove: addedAt[i]!.length > 0 ? 1 : 0 });
    const amount = rng.int(1, 5);
    const sign = rng.next() < 0.5 ? -1 : 1;
    const element = kind === 'add' ? `m${nextKey()}` : kind === 'remove' ? rng.pick(addedAt[i]!) : '';
    n++;
    try {
      if (!registered[i]) {
        await withDeadline(c.register(CRDT_FUNCTION, CHAOS_REPLICA), ctx.deadlineMs);
        registered[i] = true;
      }
      if (kind === 'g') await withDeadline(c.apply(CRDT_FUNCTION, CRDT_OBJECT, CRDT_NAMES.gcounter, 'gcounter', { op: 'add', n: amount }), ctx.deadlineMs);
      else if (kind === 'pn')
        await withDeadline(c.apply(CRDT_FUNCTION, CRDT_OBJECT, CRDT_NAMES.pncounter, 'pncounter', { op: 'add', n: sign * amount }), ctx.deadlineMs);
      else await withDeadline(c.apply(CRDT_FUNCTION, CRDT_OBJECT, CRDT_NAMES.orset, 'orset', { op: kind, value: element }), ctx.deadlineMs);
      if (kind === 'g') model.gcounter += amount;
      else if (kind === 'pn') model.pncounter += sign * amount;
      else if (kind === 'add') {
        model.orsetAdded.add(element);
        addedAt[i]!.push(element);
      } else {
        model.orsetRemoved.add(element);
        addedAt[i]!.splice(addedAt[i]!.indexOf(element), 1);
      }
      model.ops++;
      record(ctx, `crdt:${kind}`, i + 1, { outcome: 'ok', durationMs: performance.now() - t }, startMs);
    } catch (err) {
      registered[i] = false; // the agent may have restarted: it forgot the registration
      const durationMs = performance.now() - t;
      record(
        ctx,
        `crdt:${kind}`,
        i + 1,
        { outcome: err instanceof HangError ? 'hang' : 'error', reason: (err as Error).message.slice(0, 160), durationMs },
        startMs,
      );
      if (!certainlyNotApplied(err)) {
        if (kind === 'g') model.gcounterUncertain += amount;
        else if (kind === 'pn') model.pncounterUncertain += amount;
        else if (kind === 'add') model.orsetUncertain.add(element);
        else {
          model.orsetUncertain.add(element);
          addedAt[i]!.splice(addedAt[i]!.indexOf(element), 1);
        }
      }
    }
    await sleep(PACE_MS);
  }
  return n;
}

// ---------------------------------------------------------------------------------- outage

export interface OutageOptions {
  /** Readings inserted into the node's database while it is down (more than its oplog holds). */
  readonly readings: number;
  /** The node's oplog window in entries (the mesh's MESH_MONGO_OPLOG_MAX_ENTRIES), for the check that it was exceeded. */
  readonly oplogMaxEntries: number;
  /** Readings per insertMany; each batch is followed by one bulkWrite of updates, replaces and deletes of earlier ones. */
  readonly batch?: number;
  /** How long the listener may take to have its resync acknowledged by the function after the restart (default 300 s; no other fault of the node runs meanwhile). */
  readonly resyncDeadlineMs?: number;
  /** Ends the background watch of the subscribers' catch-up. */
  readonly watchUntil: AbortSignal;
}

export interface OutageReport {
  node: number;
  /** Inserted while the node was down (acknowledged). */
  inserted: number;
  updated: number;
  replaced: number;
  deleted: number;
  /** Writes without an answer (each is checked as uncertain). */
  uncertain: number;
  /** Oplog entries written while the node's listener was down (at least one per write). */
  oplog_entries_written: number;
  oplog_max_entries: number;
  /** From the kill until the node's processes were started again. */
  down_s: number;
  /** Resyncs the restarted listener requested and the function acknowledged (history lost: the oplog moved past its position). */
  resyncs: number;
  /** From the restart until the function had acknowledged the listener's resync request. */
  resync_acknowledged_s: number | null;
  /** From the restart until both subscribers held as many replicas of the node as it holds readings (polled); null: not within the watch. */
  caught_up_s: number | null;
}

/**
 * The outage: while the node is down (the driver killed its function, listener and agent), its
 * database keeps taking its sensors' writes through the driver: `readings` inserts in batches,
 * each followed by updates (10 %), replaces (5 %) and deletes (5 %) of earlier ones, more than
 * its oplog holds, so its listener cannot resume and asks for a resync when it comes back. The
 * chaos writers keep writing meanwhile (also to this node's database, and through the others'
 * functions: their outboxes keep what this node, a subscriber, misses). Then `restart()`, the
 * wait for the resync request, and a watch (in the background, `caughtUp`, until
 * `opts.watchUntil`) of the subscribers' replica counts. Every write goes into `writes` like the writers' own.
 */
export async function runOutage(
  ctx: WorkerContext,
  plan: { readonly nodes: readonly NodePlan[] },
  node: number,
  subscribers: readonly number[],
  rng: Prng,
  writes: WriteRecord[],
  nextKey: () => number,
  opts: OutageOptions,
  restart: () => Promise<void>,
  log: (line: string) => void,
): Promise<{ report: OutageReport; caughtUp: Promise<void> }> {
  const t0 = performance.now();
  const batch = opts.batch ?? 500;
  const db = ctx.databases?.[node - 1];
  if (!db) throw new Error('the outage writes through the driver: WorkerContext.databases is needed');
  const report: OutageReport = {
    node,
    inserted: 0,
    updated: 0,
    replaced: 0,
    deleted: 0,
    uncertain: 0,
    oplog_entries_written: 0,
    oplog_max_entries: opts.oplogMaxEntries,
    down_s: 0,
    resyncs: 0,
    resync_acknowledged_s: null,
    caught_up_s: null,
  };
  const mine: WriteRecord[] = [];
  const coll = readingsOf(db);
  for (let done = 0; done < opts.readings; done += batch) {
    const n = Math.min(batch, opts.readings - done);
    const fresh = Array.from({ length: n }, () => {
      const key = nextKey();
      const version = ctx.nextVersion();
      const id = new ObjectId();
      const w: WriteRecord = {
        key,
        origin: node,
        atMs: elapsed(ctx.t0),
        acked: false,
        deleted: false,
        deleteUncertain: false,
        id: id.toHexString(),
        maybe: [version],
      };
      return { w, doc: { _id: id, ...chaosReading(key, node, version) } };
    });
    const startMs = elapsed(ctx.t0);
    const ins = await driverWrite(() =>
      coll.insertMany(
        fresh.map((f) => f.doc),
        { ordered: true },
      ),
    );
    record(ctx, 'outage-insert', node, ins, startMs);
    for (const { w } of fresh) {
      if (ins.outcome === 'ok') {
        w.acked = true;
        acknowledged(w, w.maybe![0]!);
        report.inserted++;
      } else report.uncertain++;
      // a refused batch wrote nothing; any other failure may have written some of it
      if (ins.outcome === 'ok' || !ins.refused) {
        writes.push(w);
        mine.push(w);
      }
    }
    report.oplog_entries_written += n;
    // updates, replaces and deletes of earlier readings of the outage, in one ordered bulkWrite
    const pool = mine.filter((w) => w.acked && !w.deleted && !w.deleteUncertain && !w.busy);
    const changes: { w: WriteRecord; kind: 'update' | 'replace' | 'delete'; version: number; op: AnyBulkWriteOperation }[] = [];
    for (let k = 0; k < Math.floor(n / 5) && pool.length > 0; k++) {
      const w = pool.splice(rng.int(0, pool.length - 1), 1)[0]!;
      const kind = rng.weighted({ update: 2, replace: 1, delete: 1 });
      const version = ctx.nextVersion();
      const filter = { _id: new ObjectId(w.id) };
      const op: AnyBulkWriteOperation =
        kind === 'update'
          ? { updateOne: { filter, update: { $set: { temperature: version } } } }
          : kind === 'replace'
            ? { replaceOne: { filter, replacement: replacement(w, version) } }
            : { deleteOne: { filter } };
      w.busy = true;
      changes.push({ w, kind, version, op });
    }
    if (changes.length > 0) {
      const bulkStart = elapsed(ctx.t0);
      const r = await driverWrite(() =>
        coll.bulkWrite(
          changes.map((c) => c.op),
          { ordered: true },
        ),
      );
      record(ctx, 'outage-bulk', node, r, bulkStart);
      for (const c of changes) {
        c.w.busy = false;
        if (r.outcome === 'ok') {
          if (c.kind === 'delete') c.w.deleted = true;
          else acknowledged(c.w, c.version);
          report[c.kind === 'update' ? 'updated' : c.kind === 'replace' ? 'replaced' : 'deleted']++;
        } else if (!r.refused) {
          if (c.kind === 'delete') c.w.deleteUncertain = true;
          else uncertain(c.w, c.version);
          report.uncertain++;
        }
      }
      report.oplog_entries_written += changes.length;
    }
  }
  log(
    `outage of node-${node}: ${report.inserted} inserted, ${report.updated} updated, ${report.replaced} replaced, ${report.deleted} deleted into its database while it is down (${report.oplog_entries_written} oplog entries, it keeps ${opts.oplogMaxEntries})`,
  );
  await restart();
  const up = performance.now();
  report.down_s = Number(((up - t0) / 1000).toFixed(1));
  // the restarted listener cannot resume behind the oplog: it asks its function for a resync
  const target = plan.nodes[node - 1]!;
  const resyncs = async () => {
    try {
      const res = await fetch(`http://${target.addr}:${target.listenerPort}/stats`, { signal: AbortSignal.timeout(2_000) });
      const body = (await res.json()) as { collections?: { resyncs?: number }[] };
      return (body.collections ?? []).reduce((s, c) => s + (c.resyncs ?? 0), 0);
    } catch (err) {
      squashError(err); // not up yet
      return 0;
    }
  };
  try {
    await waitFor(`the listener of node-${node} to ask for a resync`, async () => (report.resyncs = await resyncs()) > 0, opts.resyncDeadlineMs ?? 300_000);
    report.resync_acknowledged_s = Number(((performance.now() - up) / 1000).toFixed(1));
  } catch (err) {
    log(`outage of node-${node}: ${(err as Error).message}`);
  }
  log(
    `outage of node-${node}: back after ${report.down_s} s; resyncs acknowledged: ${report.resyncs}${report.resync_acknowledged_s !== null ? ` (${report.resync_acknowledged_s} s after the restart)` : ''}`,
  );
  const caughtUp = watchCatchUp(ctx, node, subscribers, up, report, opts.watchUntil, log);
  return { report, caughtUp };
}

/**
 * Polls (every 5 s, until `until` is aborted) until both subscribers hold as many replicas of
 * `node` as it holds readings: the resync and the events after it have arrived (counts only;
 * the exact check comes after the heal).
 */
async function watchCatchUp(
  ctx: WorkerContext,
  node: number,
  subscribers: readonly number[],
  since: number,
  report: OutageReport,
  until: AbortSignal,
  log: (line: string) => void,
): Promise<void> {
  const filter = { sensor_id: CHAOS_SENSOR_BASE + node };
  while (!until.aborted) {
    try {
      const own = await readingsOf(ctx.databases![node - 1]!).countDocuments(filter);
      const held = await Promise.all(
        subscribers.map((s) =>
          ctx
            .databases![s - 1]!.db('syncmesh')
            .collection('sensor_data_replicas')
            .countDocuments({ ...filter, _origin: `node-${node}` }),
        ),
      );
      if (own > 0 && held.every((h) => h === own)) {
        report.caught_up_s = Number(((performance.now() - since) / 1000).toFixed(1));
        log(`outage of node-${node}: both subscribers hold its ${own} readings ${report.caught_up_s} s after its restart`);
        return;
      }
    } catch (err) {
      squashError(err); // a database is down for a fault meanwhile
    }
    await sleep(5_000, undefined, { signal: until }).catch(squashError);
  }
  log(`outage of node-${node}: the subscribers had not caught up when the watch ended`);
}

// ---------------------------------------------------------------------------------- reading back

/** One database document as a held reading (key = timestamp, version = temperature). */
function held(d: Document): HeldReading {
  const t = d['temperature'];
  return { key: (d['timestamp'] as Date).getTime(), value: typeof t === 'number' ? t : null, fields: canonicalFields(d) };
}

/** What every node's database holds of the chaos readings (own and replicas, every field), read directly. */
export async function readHoldings(topology: Topology): Promise<NodeHoldings[]> {
  return Promise.all(
    topology.nodes.map(async (n, i) => {
      const client = await MongoClient.connect(n.mongodb_uri, { serverSelectionTimeoutMS: 5_000, socketTimeoutMS: 60_000 });
      try {
        const db = client.db('syncmesh');
        const filter = { sensor_id: { $gte: CHAOS_SENSOR_BASE, $lt: CHAOS_SENSOR_BASE + 100 } };
        const own = (await db.collection('sensor_data').find(filter).toArray()).map(held);
        const replicas = new Map<number, HeldReading[]>();
        for (const d of await db.collection('sensor_data_replicas').find(filter).toArray()) {
          const origin = Number(String(d['_origin']).replace(/^node-/, ''));
          const list = replicas.get(origin);
          if (list) list.push(held(d));
          else replicas.set(origin, [held(d)]);
        }
        return { node: i + 1, own, replicas };
      } finally {
        await client.close();
      }
    }),
  );
}

export { CrdtModel };
