/**
 * The chaos test's executing half: runs a fault plan (chaos.ts) against a running mesh, and the
 * workers that load it meanwhile: a writer (inserts and deletes readings through the nodes'
 * functions), a CRDT worker (MISO SDK ops on every node's agent) and a reader (mesh-wide
 * aggregates). Every request is recorded with its duration and outcome; only acknowledged
 * writes and ops count towards the expected final state.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MongoClient } from 'mongodb';
import {
  CrdtModel,
  type Fault,
  type FaultWindow,
  type KillableRole,
  type NodeHoldings,
  type Prng,
  type QueryOutcome,
  type QueryRecord,
  type WriteRecord,
} from './chaos.js';
import { REPO_ROOT, type MeshConfig } from './config.js';
import { squashError } from './errors.js';
import { cut, nodeProcess, requireState, restore, startNodeService } from './mesh.js';
import { isAlive, stopProcess, waitFor } from '@syncmesh-edge/lab';
import type { Topology } from './topology.js';

/** Sensor ids of the chaos readings: 7000 + origin node index (generated data uses 1..N). */
export const CHAOS_SENSOR_BASE = 7000;
/** First timestamp of the chaos readings; each write takes the next second (its unique key). */
export const CHAOS_EPOCH_MS = Date.UTC(2030, 0, 1);
export const CRDT_FUNCTION = 'chaos-fn';
export const CRDT_OBJECT = 'chaos';
const ROLES_IN_START_ORDER = ['mongo', 'function', 'listener', 'agent'] as const;

const elapsed = (t0: number) => performance.now() - t0;

/** Executes faults; each node's faults run one after the other, nodes in parallel. */
export class FaultDriver {
  readonly windows: FaultWindow[] = [];
  readonly executed: Fault[] = [];
  readonly errors: string[] = [];
  /** cut/restore one at a time: two neighbours share a link, and its toxics must end up right. */
  private links: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly cfg: MeshConfig,
    private readonly log: (line: string) => void,
  ) {}

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
          const rec = nodeProcess(this.cfg.stateRoot, this.cfg.name, ref, f.role!);
          if (rec && isAlive(rec)) {
            process.kill(rec.pid, 'SIGKILL');
            await waitFor(`${f.role} of node-${f.node} to die`, () => !isAlive(rec), 10_000);
          }
          await sleep(f.holdMs);
          await startNodeService(this.cfg, ref, f.role!);
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
          await startNodeService(this.cfg, ref, 'mongo');
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
        await startNodeService(this.cfg, String(node.index), role);
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
}

function record(ctx: WorkerContext, what: string, node: number, r: { outcome: QueryOutcome; reason?: string; durationMs: number }, startMs: number): void {
  ctx.queries.push({ what, node, startMs, durationMs: r.durationMs, outcome: r.outcome, ...(r.reason ? { reason: r.reason } : {}) });
}

/** Pause between two requests of one worker: it shapes the load on 2 shared cores, it synchronises nothing. */
const PACE_MS = 25;

/**
 * Inserts one reading at a time through a random node's function (addSensors), and deletes
 * acknowledged ones (deleteSensor) with probability `deleteShare`.
 */
export async function runWriter(
  ctx: WorkerContext,
  rng: Prng,
  writes: WriteRecord[],
  nextKey: () => number,
  deleteShare = 0.25,
): Promise<{ inserts: number; deletes: number }> {
  let inserts = 0;
  let deletes = 0;
  while (!ctx.stop.aborted) {
    const node = rng.int(1, ctx.topology.nodes.length);
    const url = ctx.topology.nodes[node - 1]!.function_url;
    const deletable = writes.filter((w) => w.origin === node && w.acked && !w.deleted && !w.deleteUncertain && !w.deleting);
    const startMs = elapsed(ctx.t0);
    if (deletable.length > 0 && rng.next() < deleteShare) {
      const w = rng.pick(deletable);
      w.deleting = true; // the other writer must not pick it meanwhile
      const r = await timedPost(url, { query: 'mutation($id: ID!) { deleteSensor(_id: $id) { _id } }', variables: { id: w.id } }, ctx.deadlineMs, ctx.writeKey);
      record(ctx, 'delete', node, r, startMs);
      // null: not found, i.e. already gone (an earlier unacknowledged delete did land)
      if (r.outcome === 'ok') w.deleted = true;
      else if (!r.refused) w.deleteUncertain = true;
      w.deleting = false;
      deletes++;
    } else {
      const key = nextKey();
      const lat = 42.6 + node / 100;
      const reading = {
        sensor_id: CHAOS_SENSOR_BASE + node,
        location: CHAOS_SENSOR_BASE + node,
        lat,
        lon: 23.3,
        timestamp: new Date(key).toISOString(),
        temperature: rng.int(-100, 400) / 10,
        humidity: 50,
        pressure: 94_000,
      };
      const w: WriteRecord = { key, origin: node, atMs: startMs, acked: false, deleted: false, deleteUncertain: false };
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
      }
      // a refused connection never wrote anything; everything else may have
      if (w.acked || !r.refused) writes.push(w);
      inserts++;
    }
    await sleep(PACE_MS);
  }
  return { inserts, deletes };
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

// ---------------------------------------------------------------------------------- reading back

/** What every node's database holds of the chaos readings (own and replicas), read directly. */
export async function readHoldings(topology: Topology): Promise<NodeHoldings[]> {
  return Promise.all(
    topology.nodes.map(async (n, i) => {
      const client = await MongoClient.connect(n.mongodb_uri, { serverSelectionTimeoutMS: 5_000, socketTimeoutMS: 30_000 });
      try {
        const db = client.db('syncmesh');
        const filter = { sensor_id: { $gte: CHAOS_SENSOR_BASE, $lt: CHAOS_SENSOR_BASE + 100 } };
        const own = (
          await db
            .collection('sensor_data')
            .find(filter, { projection: { timestamp: 1 } })
            .toArray()
        ).map((d) => (d['timestamp'] as Date).getTime());
        const replicas = new Map<number, number[]>();
        for (const d of await db
          .collection('sensor_data_replicas')
          .find(filter, { projection: { timestamp: 1, _origin: 1 } })
          .toArray()) {
          const origin = Number(String(d['_origin']).replace(/^node-/, ''));
          replicas.set(origin, [...(replicas.get(origin) ?? []), (d['timestamp'] as Date).getTime()]);
        }
        return { node: i + 1, own, replicas };
      } finally {
        await client.close();
      }
    }),
  );
}

export { CrdtModel };
