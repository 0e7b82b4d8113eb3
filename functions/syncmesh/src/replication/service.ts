/**
 * Event-driven replication between subscribed nodes.
 *
 *   listener ──POST /events──▶ origin: ops into the outbox (then ack) ──POST /replicate──▶ subscribers
 *   listener ──POST /resync──▶ origin: a full snapshot of its own readings into the outbox
 *
 * On the origin, registry nodes with `subscribed: true` receive its writes. Subscribers apply
 * them to `<collection>_replicas` (see replicas.ts), which the listener does not watch.
 */
import { BSON, type Document, type MongoClient } from 'mongodb';
import type { Logger } from '@syncmesh-edge/log';
import { z } from 'zod';
import type { Config } from '../config.js';
import { SyncmeshError } from '../errors.js';
import type { NodeRegistry } from '../mesh/registry.js';
import type { MeshAuth } from '../mesh/signing.js';
import type { Reply } from '../reply.js';
import { AntiEntropy, type CheckReport, digestRequestSchema, replicaDigests } from './antientropy.js';
import { Inbox, MAX_WAIT_MS } from './inbox.js';
import { eventsBodySchema, opForEvent, type ReplicationOp } from './ops.js';
import { Outbox } from './outbox.js';
import { ReplicaStore } from './replicas.js';
import { INITIAL_SYNC, Snapshots } from './snapshots.js';

/** How long the list of subscribers read from the registry is used (see `subscribers`). */
const SUBSCRIBERS_TTL_MS = 1_000;

const opSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('upsert'), doc: z.record(z.string(), z.unknown()).refine((d) => '_id' in d, 'doc needs an _id') }),
  z.object({ op: z.literal('delete'), id: z.unknown() }),
  z.object({ op: z.literal('snapshot_end'), since: z.number() }),
  z.object({ op: z.literal('bucket_end'), from: z.date().nullable(), to: z.date().nullable(), since: z.number() }),
]);
const originSchema = z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/);
const batchIdSchema = z.string().regex(/^[A-Za-z0-9._:@-]{1,128}$/);
const replicateSchema = z.object({
  origin: originSchema,
  wait_ms: z.number().int().min(0).max(MAX_WAIT_MS).optional(),
  retry: z.boolean().optional(),
  batches: z.array(z.object({ id: batchIdSchema.optional(), db: z.string(), coll: z.string(), seq: z.number(), ops: z.array(opSchema) })).max(1000),
});
const statusSchema = z.object({ origin: originSchema, ids: z.array(batchIdSchema).max(1000), wait_ms: z.number().int().min(0).max(MAX_WAIT_MS).default(0) });
const resyncSchema = z.object({ db: z.string(), coll: z.string(), reason: z.string().max(200).optional() }).loose();
const checkSchema = z.object({ repair: z.boolean().default(false), subscribers: z.array(originSchema).max(1000).optional() }).loose();

function parseEjson(text: string): unknown {
  try {
    return BSON.EJSON.parse(text, { relaxed: true });
  } catch (err) {
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_JSON', `the body is not valid (extended) JSON: ${(err as Error).message}`, { cause: err });
  }
}

function validated<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_REQUEST', `${what}: ${i.path.join('.') || 'body'}: ${i.message}`);
  }
  return r.data;
}

export class ReplicationService {
  readonly replicas: ReplicaStore;
  readonly outbox: Outbox;
  readonly inbox: Inbox;
  readonly snapshots: Snapshots;
  readonly antiEntropy: AntiEntropy;
  private cachedSubscribers: { at: number; changes: number; ids: string[] } | undefined;

  constructor(private readonly deps: { config: Config; client: MongoClient; registry: NodeRegistry; log: Logger; auth?: MeshAuth | undefined }) {
    const { config, client, log } = deps;
    const meta = client.db(config.metaDatabase);
    const auth = config.meshSecret === undefined ? undefined : deps.auth;
    this.replicas = new ReplicaStore(client, { tombstoneTtlS: config.tombstoneTtlS });
    this.outbox = new Outbox(meta, {
      nodeId: config.nodeId,
      sendTimeoutMs: config.replicationTimeoutMs,
      auth,
      registry: deps.registry,
      log: log.child({ module: 'outbox' }),
      gzipMinBytes: config.gzipMinBytes,
    });
    this.inbox = new Inbox(this.replicas, meta, { ttlS: config.tombstoneTtlS, log: log.child({ module: 'inbox' }) });
    this.snapshots = new Snapshots(meta, { client, outbox: this.outbox, log: log.child({ module: 'snapshots' }) });
    this.antiEntropy = new AntiEntropy(
      {
        nodeId: config.nodeId,
        databases: config.databases,
        collections: config.collections,
        intervalMs: config.antiEntropyIntervalS * 1000,
        bucket: config.antiEntropyBucket,
      },
      { client, registry: deps.registry, outbox: this.outbox, snapshots: this.snapshots, auth, log: log.child({ module: 'anti-entropy' }) },
    );
  }

  async start(): Promise<void> {
    const pairs: Array<[string, string]> = [];
    for (const db of this.deps.config.databases) for (const coll of this.deps.config.collections) pairs.push([db, coll]);
    await this.replicas.load(pairs);
    await this.inbox.start();
    await this.outbox.start();
    await this.snapshots.start();
    this.antiEntropy.start();
  }

  async stop(): Promise<void> {
    await this.antiEntropy.stop();
    await this.snapshots.stop();
    await this.outbox.stop();
    await this.inbox.stop();
  }

  /** The replication part of /readyz: per subscriber the progress, per origin the applies, snapshots and anti-entropy. */
  progress() {
    return {
      subscribers: this.outbox.progress(),
      snapshots: this.snapshots.progress(),
      origins: this.inbox.stats(),
      anti_entropy: this.antiEntropy.progress(),
    };
  }

  private checkNamespace(db: string, coll: string): void {
    const { databases, collections } = this.deps.config;
    if (!databases.includes(db) || !collections.includes(coll)) {
      throw new SyncmeshError('EDGE_SYNCMESH_NOT_ALLOWED_TARGET', `namespace '${db}.${coll}' is not replicated by this node`, {
        details: { allowed: { databases, collections } },
      });
    }
  }

  /**
   * The subscribers, read from the registry at most every SUBSCRIBERS_TTL_MS, and at once after a
   * registry change made here (a subscription made through another process on the same
   * database shows within that time).
   */
  private async subscribers(): Promise<string[]> {
    const changes = this.deps.registry.changes;
    const c = this.cachedSubscribers;
    if (c && c.changes === changes && Date.now() - c.at < SUBSCRIBERS_TTL_MS) return c.ids;
    const nodes = await this.deps.registry.list({ subscribed: true });
    const ids = nodes.filter((n) => !n.own_node).map((n) => n.id);
    this.cachedSubscribers = { at: Date.now(), changes, ids };
    return ids;
  }

  /** POST /events from the listener: the ops go into the outbox before the listener gets its ack. */
  async handleEvents(text: string): Promise<{ applied: number; subscribers: number }> {
    const body = validated(eventsBodySchema, parseEjson(text), 'events');
    const byNamespace = new Map<string, { db: string; coll: string; ops: ReplicationOp[] }>();
    for (const e of body.events) {
      this.checkNamespace(e.db, e.coll);
      const op = opForEvent({ ...e, key: e.key as { _id: unknown }, doc: e.doc as Document | null });
      if (!op) continue;
      const key = `${e.db}.${e.coll}`;
      if (!byNamespace.has(key)) byNamespace.set(key, { db: e.db, coll: e.coll, ops: [] });
      byNamespace.get(key)!.ops.push(op);
    }
    const subscribers = await this.subscribers();
    for (const { db, coll, ops } of byNamespace.values()) await this.outbox.enqueue(subscribers, db, coll, ops);
    return { applied: body.events.length, subscribers: subscribers.length };
  }

  /**
   * POST /resync from the listener: a full snapshot for every subscriber. Answers once the
   * snapshot is stored as a job (snapshots.ts); its progress is in /readyz.
   */
  async handleResync(text: string): Promise<{ snapshot: string | null; subscribers: number }> {
    const body = validated(resyncSchema, parseEjson(text), 'resync');
    this.checkNamespace(body.db, body.coll);
    const subscribers = await this.subscribers();
    this.deps.log.info({ db: body.db, coll: body.coll, reason: body.reason, subscribers }, 'resync requested: queueing a full snapshot');
    if (subscribers.length === 0) return { snapshot: null, subscribers: 0 };
    const job = await this.snapshots.request(body.db, body.coll, subscribers, body.reason ?? 'resync');
    return { snapshot: job.snapshot, subscribers: subscribers.length };
  }

  /** Queues a snapshot of db.coll for `subscribers` (an initial sync); resolves once it is stored. */
  async snapshot(db: string, coll: string, subscribers: readonly string[], reason = INITIAL_SYNC): Promise<void> {
    if (subscribers.length === 0) return;
    await this.snapshots.request(db, coll, subscribers, reason);
  }

  /** Checks the `/replicate*` body's origin against the signer: a node may only send its own writes. */
  private checkOrigin(origin: string, signedBy: string | undefined, what: string): void {
    if (origin === this.deps.config.nodeId) {
      throw new SyncmeshError('EDGE_SYNCMESH_BAD_REQUEST', `${what}: origin '${origin}' is this node; a node never holds replicas of itself`);
    }
    if (signedBy !== undefined && signedBy !== origin) {
      throw new SyncmeshError(
        'EDGE_SYNCMESH_ORIGIN_MISMATCH',
        `${what}: the body says origin '${origin}' but the request was signed by '${signedBy}'; a node may only send its own writes`,
      );
    }
  }

  /**
   * POST /replicate from an origin: applies its batches to the replica collection, each batch id
   * once (inbox.ts). 200 when all are applied, 202 with the ids still being applied after the
   * origin's `wait_ms`.
   */
  async handleReplicate(text: string, signedBy?: string): Promise<Reply> {
    const body = validated(replicateSchema, parseEjson(text), 'replicate');
    this.checkOrigin(body.origin, signedBy, 'replicate');
    for (const b of body.batches) this.checkNamespace(b.db, b.coll);
    const report = await this.inbox.receive(body.origin, body.batches as Parameters<Inbox['receive']>[1], { waitMs: body.wait_ms, retry: body.retry });
    if (report.stale > 0)
      this.deps.log.info({ origin: body.origin, stale: report.stale }, 'ignored replication operations older than the replicas they would change');
    return { status: report.applying.length > 0 ? 202 : 200, body: { ...report } };
  }

  /** POST /replicate/status from an origin: what became of batches it sent (waits up to `wait_ms` for those being applied). */
  async handleStatus(text: string, signedBy?: string): Promise<Reply> {
    const body = validated(statusSchema, parseEjson(text), 'replicate/status');
    this.checkOrigin(body.origin, signedBy, 'replicate/status');
    return { status: 200, body: { ...(await this.inbox.status(body.origin, body.ids, body.wait_ms)) } };
  }

  /** POST /replicate/digest from an origin: digests of the replicas of its readings held here. */
  async handleDigest(text: string, signedBy?: string): Promise<Reply> {
    const body = validated(digestRequestSchema, parseEjson(text), 'replicate/digest');
    this.checkOrigin(body.origin, signedBy, 'replicate/digest');
    this.checkNamespace(body.db, body.coll);
    let buckets: Awaited<ReturnType<typeof replicaDigests>>;
    try {
      buckets = await replicaDigests(this.replicas, body);
    } catch (err) {
      if (err instanceof SyncmeshError || !/is not a (hour|day) bucket/.test((err as Error).message)) throw err;
      throw new SyncmeshError('EDGE_SYNCMESH_BAD_REQUEST', `replicate/digest: only: ${(err as Error).message}`);
    }
    return { status: 200, body: { node: this.deps.config.nodeId, bucket: body.bucket, buckets } };
  }

  /**
   * POST /replication/check (any mesh-signed caller, e.g. `replication-check`): compares this
   * node's readings with each subscriber's replicas of them, per bucket; `repair` also repairs the
   * buckets that differ.
   */
  async handleCheck(text: string): Promise<CheckReport> {
    const body = validated(checkSchema, parseEjson(text === '' ? '{}' : text), 'replication/check');
    const subscribers = await this.antiEntropy.check({ repair: body.repair, ...(body.subscribers ? { subscribers: body.subscribers } : {}) });
    return { node: this.deps.config.nodeId, bucket: this.deps.config.antiEntropyBucket, checked_at: new Date().toISOString(), subscribers };
  }
}
