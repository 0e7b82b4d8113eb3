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
import { eventsBodySchema, opForEvent, type ReplicationOp } from './ops.js';
import { Outbox, type ReplicateBody } from './outbox.js';
import { ReplicaStore } from './replicas.js';

/** Readings per snapshot batch. */
const SNAPSHOT_BATCH = 1000;

const opSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('upsert'), doc: z.record(z.string(), z.unknown()).refine((d) => '_id' in d, 'doc needs an _id') }),
  z.object({ op: z.literal('delete'), id: z.unknown() }),
  z.object({ op: z.literal('snapshot_end'), since: z.number() }),
]);
const replicateSchema = z.object({
  origin: z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/),
  batches: z.array(z.object({ db: z.string(), coll: z.string(), seq: z.number(), ops: z.array(opSchema) })).max(1000),
});
const resyncSchema = z.object({ db: z.string(), coll: z.string(), reason: z.string().max(200).optional() }).loose();

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

  constructor(private readonly deps: { config: Config; client: MongoClient; registry: NodeRegistry; log: Logger; auth?: MeshAuth | undefined }) {
    this.replicas = new ReplicaStore(deps.client, { tombstoneTtlS: deps.config.tombstoneTtlS });
    this.outbox = new Outbox(deps.client.db(deps.config.metaDatabase), {
      nodeId: deps.config.nodeId,
      auth: deps.config.meshSecret === undefined ? undefined : deps.auth,
      registry: deps.registry,
      log: deps.log.child({ module: 'outbox' }),
    });
  }

  async start(): Promise<void> {
    const pairs: Array<[string, string]> = [];
    for (const db of this.deps.config.databases) for (const coll of this.deps.config.collections) pairs.push([db, coll]);
    await this.replicas.load(pairs);
    await this.outbox.start();
  }

  stop(): Promise<void> {
    return this.outbox.stop();
  }

  private checkNamespace(db: string, coll: string): void {
    const { databases, collections } = this.deps.config;
    if (!databases.includes(db) || !collections.includes(coll)) {
      throw new SyncmeshError('EDGE_SYNCMESH_NOT_ALLOWED_TARGET', `namespace '${db}.${coll}' is not replicated by this node`, {
        details: { allowed: { databases, collections } },
      });
    }
  }

  private async subscribers(): Promise<string[]> {
    const nodes = await this.deps.registry.list({ subscribed: true });
    return nodes.filter((n) => !n.own_node).map((n) => n.id);
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

  /** POST /resync from the listener: a full snapshot for every subscriber. */
  async handleResync(text: string): Promise<{ readings: number; subscribers: number }> {
    const body = validated(resyncSchema, parseEjson(text), 'resync');
    this.checkNamespace(body.db, body.coll);
    const subscribers = await this.subscribers();
    this.deps.log.info({ db: body.db, coll: body.coll, reason: body.reason, subscribers }, 'resync requested: sending a full snapshot');
    const readings = await this.snapshot(body.db, body.coll, subscribers);
    return { readings, subscribers: subscribers.length };
  }

  /**
   * Queues this node's readings for `subscribers`, then a snapshot_end that removes replicas the
   * origin no longer has. Live events queued meanwhile carry later sequence numbers and survive.
   */
  async snapshot(db: string, coll: string, subscribers: readonly string[]): Promise<number> {
    if (subscribers.length === 0) return 0;
    const since = this.outbox.nextSeq();
    let batch: ReplicationOp[] = [];
    let count = 0;
    // A batch's sequence number is taken before its readings are read: an event queued after
    // that (a newer state of one of them) carries a larger number and wins on the subscriber,
    // whichever of the two arrives first.
    let seq = since;
    const flush = async () => {
      if (batch.length === 0) return;
      await this.outbox.enqueue(subscribers, db, coll, batch, seq);
      seq = this.outbox.nextSeq();
      count += batch.length;
      batch = [];
    };
    for await (const doc of this.deps.client.db(db).collection(coll).find({}).sort({ _id: 1 })) {
      batch.push({ op: 'upsert', doc: doc as Document & { _id: unknown } });
      if (batch.length >= SNAPSHOT_BATCH) await flush();
    }
    await flush();
    await this.outbox.enqueue(subscribers, db, coll, [{ op: 'snapshot_end', since }]);
    return count;
  }

  /** POST /replicate from an origin: applies its batches to the replica collection. */
  async handleReplicate(text: string, signedBy?: string): Promise<{ upserts: number; deletes: number; stale: number }> {
    const body = validated(replicateSchema, parseEjson(text), 'replicate') as ReplicateBody;
    if (body.origin === this.deps.config.nodeId) {
      throw new SyncmeshError('EDGE_SYNCMESH_BAD_REQUEST', `replicate: origin '${body.origin}' is this node; a node never holds replicas of itself`);
    }
    if (signedBy !== undefined && signedBy !== body.origin) {
      throw new SyncmeshError(
        'EDGE_SYNCMESH_ORIGIN_MISMATCH',
        `replicate: the body says origin '${body.origin}' but the request was signed by '${signedBy}'; a node may only send its own writes`,
      );
    }
    const total = { upserts: 0, deletes: 0, stale: 0 };
    for (const b of body.batches) {
      this.checkNamespace(b.db, b.coll);
      const r = await this.replicas.apply(b.db, b.coll, body.origin, b.seq, b.ops);
      total.upserts += r.upserts;
      total.deletes += r.deletes;
      total.stale += r.stale;
    }
    if (total.stale > 0)
      this.deps.log.info({ origin: body.origin, stale: total.stale }, 'ignored replication operations older than the replicas they would change');
    return total;
  }
}
