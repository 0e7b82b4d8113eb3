/**
 * Anti-entropy: the origin and each subscriber compare digests per time bucket (digest.ts) and
 * the origin repairs only the buckets that differ.
 *
 * In the background (every SYNCMESH_ANTI_ENTROPY_INTERVAL_S, 0 = off), for each replicated
 * namespace this node computes the digests of its own readings once, asks every subscriber that
 * has nothing pending for the digests of its replicas of this node (POST /replicate/digest), and
 * compares. A difference can be a write still on its way, so the buckets that differ are
 * compared again once the subscriber's queue is empty; those that still differ are repaired:
 * the bucket's readings are queued for that subscriber, then a `bucket_end` that removes its
 * replicas of that bucket which the repair did not rewrite (replicas changed, removed or added
 * behind the mesh's back). The same comparison answers POST /replication/check (check.ts, the
 * `replication-check` command).
 */
import type { Document, MongoClient } from 'mongodb';
import type { Logger } from '@syncmesh-edge/log';
import { z } from 'zod';
import { SyncmeshError } from '../errors.js';
import { post } from '../mesh/http.js';
import type { NodeRegistry } from '../mesh/registry.js';
import type { MeshAuth } from '../mesh/signing.js';
import { asReading, type BucketSize, bucketRange, type Digests, DigestBuilder, differingBuckets, NO_TIMESTAMP } from './digest.js';
import type { ReplicationOp } from './ops.js';
import type { Outbox } from './outbox.js';
import { bucketFilter, type ReplicaStore } from './replicas.js';
import { SNAPSHOT_BATCH, type Snapshots } from './snapshots.js';

/** Deadline of one digest question to a subscriber (it reads all its replicas of this node). */
const DIGEST_TIMEOUT_MS = 120_000;
/** How long a round waits for a subscriber's queue to empty before it compares the differing buckets again. */
const SETTLE_TIMEOUT_MS = 60_000;
const SETTLE_POLL_MS = 200;
/** Repairs listed in /readyz. */
const RECENT_REPAIRS = 20;

export interface AntiEntropyOptions {
  nodeId: string;
  databases: readonly string[];
  collections: readonly string[];
  /** 0: no background rounds (checks on request still work). */
  intervalMs: number;
  bucket: BucketSize;
}

/** One subscriber compared with this node for one namespace. */
export interface SubscriberCheck {
  subscriber: string;
  db: string;
  coll: string;
  agrees: boolean;
  /** Buckets compared (those either side has). */
  buckets: number;
  /** Buckets whose count or hash differ, with both counts. */
  differing: Array<{ bucket: string; origin_count: number; replica_count: number }>;
  origin_readings: number;
  replica_readings: number;
  /** Buckets queued for repair (background rounds, or a check with `repair`). */
  repaired?: string[];
  /** The subscriber could not be asked. */
  error?: { code: string; message: string };
}

/** The answer of POST /replication/check. */
export interface CheckReport {
  node: string;
  bucket: BucketSize;
  checked_at: string;
  subscribers: SubscriberCheck[];
}

export const digestRequestSchema = z.object({
  origin: z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/),
  db: z.string(),
  coll: z.string(),
  bucket: z.enum(['hour', 'day']),
  /** Only these buckets (a second look at those that differed). */
  only: z.array(z.string().max(20)).max(10_000).optional(),
});
export type DigestRequest = z.infer<typeof digestRequestSchema>;

const digestAnswerSchema = z.object({
  buckets: z.record(z.string(), z.object({ count: z.number(), hash: z.string() })),
});

const sum = (d: Digests) => Object.values(d).reduce((n, b) => n + b.count, 0);

/** Filter of the readings in `keys` (bucket keys); undefined: all. */
function bucketsFilter(keys: readonly string[] | undefined, size: BucketSize) {
  if (keys === undefined) return {};
  if (keys.length === 0) return { _id: { $in: [] } };
  return {
    $or: keys.map((k) => {
      const r = k === NO_TIMESTAMP ? null : bucketRange(k, size);
      return bucketFilter(r?.from ?? null, r?.to ?? null);
    }),
  };
}

/** Digests of this node's own readings of db.coll (in `only` buckets, or all). */
export async function ownDigests(client: MongoClient, db: string, coll: string, size: BucketSize, only?: readonly string[]): Promise<Digests> {
  const b = new DigestBuilder(size);
  for await (const doc of client.db(db).collection(coll).find(bucketsFilter(only, size))) b.add(doc);
  return b.result();
}

/** Digests of the replicas of `origin`'s readings held here (POST /replicate/digest). */
export async function replicaDigests(replicas: ReplicaStore, req: DigestRequest): Promise<Digests> {
  const b = new DigestBuilder(req.bucket);
  if (req.only) for (const k of req.only) if (k !== NO_TIMESTAMP) bucketRange(k, req.bucket); // throws on a bad key
  for await (const doc of replicas.collection(req.db, req.coll).find({ _origin: req.origin, ...bucketsFilter(req.only, req.bucket) })) b.add(asReading(doc));
  return b.result();
}

export class AntiEntropy {
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private stopped = false;
  private readonly stats = {
    rounds: 0,
    last_round_at: null as string | null,
    last_round_ms: null as number | null,
    buckets_repaired: 0,
    /** The latest repairs (at most RECENT_REPAIRS): which buckets of whom, when. */
    recent: [] as Array<{ at: string; subscriber: string; ns: string; buckets: string[] }>,
    /** The last comparison per subscriber and namespace. */
    last: new Map<string, SubscriberCheck>(),
  };

  constructor(
    private readonly opts: AntiEntropyOptions,
    private readonly deps: {
      client: MongoClient;
      registry: NodeRegistry;
      outbox: Outbox;
      snapshots: Snapshots;
      auth: MeshAuth | undefined;
      log: Logger;
    },
  ) {}

  start(): void {
    this.stopped = false;
    if (this.opts.intervalMs > 0) this.schedule(this.opts.intervalMs * (0.5 + Math.random() / 2)); // nodes do not all start together
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.round;
  }

  /** For /readyz. */
  progress() {
    return {
      interval_s: this.opts.intervalMs / 1000,
      bucket: this.opts.bucket,
      rounds: this.stats.rounds,
      last_round_at: this.stats.last_round_at,
      last_round_ms: this.stats.last_round_ms,
      buckets_repaired: this.stats.buckets_repaired,
      recent_repairs: this.stats.recent,
      subscribers: [...this.stats.last.values()].map((c) => ({
        subscriber: c.subscriber,
        db: c.db,
        coll: c.coll,
        agrees: c.agrees,
        differing_buckets: c.differing.length,
        ...(c.repaired ? { repaired: c.repaired } : {}),
        ...(c.error ? { error: c.error } : {}),
      })),
    };
  }

  /** Runs one round now (and waits for it); tests and the check endpoint with `repair`. */
  runNow(): Promise<void> {
    this.round ??= this.background().finally(() => {
      this.round = undefined;
    });
    return this.round;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.runNow().finally(() => this.schedule(this.opts.intervalMs));
    }, ms);
    this.timer.unref();
  }

  private async background(): Promise<void> {
    const started = performance.now();
    try {
      const results = await this.check({ repair: true, skipBusy: true });
      for (const r of results) this.stats.last.set(`${r.subscriber}\u0000${r.db}.${r.coll}`, r);
      const repaired = results.filter((r) => r.repaired?.length);
      for (const r of repaired)
        this.stats.recent.push({ at: new Date().toISOString(), subscriber: r.subscriber, ns: `${r.db}.${r.coll}`, buckets: r.repaired! });
      this.stats.recent.splice(0, Math.max(0, this.stats.recent.length - RECENT_REPAIRS));
      if (repaired.length > 0)
        this.deps.log.warn(
          { repaired: repaired.map((r) => ({ subscriber: r.subscriber, ns: `${r.db}.${r.coll}`, buckets: r.repaired })) },
          'anti-entropy: replicas differed from this node; repaired those buckets',
        );
    } catch (err) {
      this.deps.log.warn({ err: (err as Error).message }, 'anti-entropy round failed; the next round tries again');
    } finally {
      this.stats.rounds++;
      this.stats.last_round_at = new Date().toISOString();
      this.stats.last_round_ms = Math.round(performance.now() - started);
    }
  }

  /**
   * Compares this node with each subscriber (or those named) for every replicated namespace.
   * `repair`: buckets that still differ once the subscriber's queue is empty are repaired.
   * `skipBusy`: subscribers with batches pending, and namespaces with a snapshot running, are
   * left for the next round (they are catching up anyway).
   */
  async check(opts: { repair: boolean; skipBusy?: boolean; subscribers?: readonly string[] }): Promise<SubscriberCheck[]> {
    const size = this.opts.bucket;
    const nodes = (await this.deps.registry.list({ subscribed: true })).filter(
      (n) => !n.own_node && (opts.subscribers === undefined || opts.subscribers.includes(n.id)),
    );
    const out: SubscriberCheck[] = [];
    if (nodes.length === 0) return out;
    for (const db of this.opts.databases) {
      for (const coll of this.opts.collections) {
        if (this.stopped) return out;
        if (opts.skipBusy && this.deps.snapshots.progress().some((s) => s.db === db && s.coll === coll)) continue;
        const own = await ownDigests(this.deps.client, db, coll, size);
        for (const node of nodes) {
          if (opts.skipBusy && this.busy(node.id)) continue;
          out.push(await this.compare(node.id, node.address, db, coll, own, opts.repair));
        }
      }
    }
    return out;
  }

  private busy(subscriber: string): boolean {
    const p = this.deps.outbox.progress()[subscriber];
    return p !== undefined && (p.batches_pending > 0 || p.in_flight.batches > 0);
  }

  private async compare(subscriber: string, address: string, db: string, coll: string, own: Digests, repair: boolean): Promise<SubscriberCheck> {
    const base = { subscriber, db, coll, origin_readings: sum(own) };
    let theirs: Digests;
    try {
      theirs = await this.askDigests(subscriber, address, db, coll);
    } catch (err) {
      const code = err instanceof SyncmeshError ? err.code : 'EDGE_SYNCMESH_INTERNAL';
      return { ...base, agrees: false, buckets: 0, differing: [], replica_readings: 0, error: { code, message: (err as Error).message.slice(0, 300) } };
    }
    let keys = differingBuckets(own, theirs);
    let result: SubscriberCheck = {
      ...base,
      agrees: keys.length === 0,
      buckets: new Set([...Object.keys(own), ...Object.keys(theirs)]).size,
      differing: keys.map((k) => ({ bucket: k, origin_count: own[k]?.count ?? 0, replica_count: theirs[k]?.count ?? 0 })),
      replica_readings: sum(theirs),
    };
    if (!repair || keys.length === 0) return result;
    // Writes on their way differ too: look again at those buckets once the queue is empty.
    await this.settled(subscriber);
    const [own2, theirs2] = await Promise.all([
      ownDigests(this.deps.client, db, coll, this.opts.bucket, keys),
      this.askDigests(subscriber, address, db, coll, keys),
    ]);
    keys = differingBuckets(own2, theirs2);
    for (const k of keys) await this.repairBucket(subscriber, db, coll, k);
    this.stats.buckets_repaired += keys.length;
    result = { ...result, repaired: keys };
    return result;
  }

  /** Waits (bounded) until nothing is pending or in flight for `subscriber`. */
  private async settled(subscriber: string): Promise<void> {
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    while (this.busy(subscriber) && Date.now() < deadline && !this.stopped) await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
  }

  /** Queues bucket `key` of db.coll for `subscriber`, then its bucket_end. */
  private async repairBucket(subscriber: string, db: string, coll: string, key: string): Promise<void> {
    const { outbox, client } = this.deps;
    const range = key === NO_TIMESTAMP ? null : bucketRange(key, this.opts.bucket);
    // Taken before the read, as a snapshot's: a live event queued meanwhile wins.
    const since = outbox.nextSeq();
    let batch: ReplicationOp[] = [];
    for await (const doc of client
      .db(db)
      .collection(coll)
      .find(bucketFilter(range?.from ?? null, range?.to ?? null))
      .sort({ _id: 1 })) {
      batch.push({ op: 'upsert', doc: doc as Document & { _id: unknown } });
      if (batch.length >= SNAPSHOT_BATCH) {
        await outbox.enqueue([subscriber], db, coll, batch, since);
        batch = [];
      }
    }
    if (batch.length > 0) await outbox.enqueue([subscriber], db, coll, batch, since);
    await outbox.enqueue([subscriber], db, coll, [{ op: 'bucket_end', from: range?.from ?? null, to: range?.to ?? null, since }]);
  }

  /** POST /replicate/digest to a subscriber, signed for it. */
  private async askDigests(subscriber: string, address: string, db: string, coll: string, only?: readonly string[]): Promise<Digests> {
    if (!this.deps.auth) throw new SyncmeshError('EDGE_SYNCMESH_NO_MESH_SECRET', 'this node has no mesh secret, so it cannot ask subscribers for digests');
    const body = JSON.stringify({ origin: this.opts.nodeId, db, coll, bucket: this.opts.bucket, ...(only ? { only } : {}) });
    const headers = { 'content-type': 'application/json', ...this.deps.auth.sign({ path: '/replicate/digest', target: subscriber, body }) };
    const res = await post(`${address.replace(/\/+$/, '')}/replicate/digest`, Buffer.from(body), headers, AbortSignal.timeout(DIGEST_TIMEOUT_MS));
    if (res.status !== 200) {
      throw new SyncmeshError('EDGE_SYNCMESH_PEER_HTTP_ERROR', `subscriber answered HTTP ${res.status} to a digest question: ${res.text.slice(0, 200)}`, {
        details: { http_status: res.status },
      });
    }
    let json: unknown;
    try {
      json = JSON.parse(res.text);
    } catch {
      json = undefined;
    }
    const parsed = digestAnswerSchema.safeParse(json);
    if (!parsed.success) {
      throw new SyncmeshError('EDGE_SYNCMESH_SUBSCRIBER_BAD_ANSWER', `the subscriber's answer to a digest question is not a digest: ${res.text.slice(0, 120)}`);
    }
    return parsed.data.buckets;
  }
}
