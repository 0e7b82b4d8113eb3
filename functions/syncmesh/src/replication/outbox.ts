/**
 * The replication outbox: operations waiting to reach subscribers, kept in
 * `syncmesh_meta.replication_outbox` so that nothing is lost while a subscriber is down or this
 * process restarts. The listener's events are acknowledged once they are in the outbox.
 *
 * One document per batch lists the subscribers that still need it (`pending`). A sender per
 * subscriber delivers the batches in order; acknowledgements are written back a few ms later,
 * together (the subscriber leaves `pending`, a batch nobody needs any more is deleted): a batch
 * whose acknowledgement was not written yet when the process died is sent again, which replicas
 * take as a no-op. Senders get new batches handed over in memory as they are stored, so the
 * outbox is only read back after a restart, a long outage (more than MEMORY_BATCHES waiting) or
 * an unknown state; a batch's JSON is encoded once for all its subscribers. Retries use capped
 * exponential backoff with equal jitter (@syncmesh-edge/backoff).
 *
 * Each request carries no more readings than the subscriber applies in a quarter of the delivery
 * deadline (SYNCMESH_REPLICATION_TIMEOUT_MS) at its measured rate (flow.ts). Batches travel with
 * their id; the subscriber applies each id once (inbox.ts) and answers 202 with the ids it is
 * still applying after 40 % of that deadline: the sender then asks for their progress (POST /replicate/status) instead of
 * sending them again, and after a failed or timed-out request it asks first too. Only batches the
 * subscriber does not know are sent again (marked `retry`, so that it checks its records of
 * applied batches). Per subscriber, the progress (pending, sent, acknowledged, rate, estimated
 * time left, last error) is kept for /readyz.
 */
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import { backoffDelayMs, type BackoffPolicy } from '@syncmesh-edge/backoff';
import { BSON, ObjectId, type Collection, type Db } from 'mongodb';
import { z } from 'zod';
import type { Logger } from '@syncmesh-edge/log';
import { SyncmeshError } from '../errors.js';
import { post } from '../mesh/http.js';
import type { MeshAuth } from '../mesh/signing.js';
import type { MeshNode, NodeRegistry } from '../mesh/registry.js';
import type { ReplicationOp } from './ops.js';
import { FlowControl } from './flow.js';

const gzip = promisify(gzipCb);

/** Batches sent in one request to a subscriber, and their JSON size (signed bodies may be 16 MiB). */
const SEND_BATCHES = 50;
const SEND_MAX_BYTES = 4 * 1024 * 1024;
/** Batches a sender keeps in memory; beyond that it reads them back from the outbox. */
const MEMORY_BATCHES = 1000;
/** Backoff while a subscriber fails: 200 ms doubling to 30 s, equal jitter (each wait in [cap/2, cap]). */
const RETRY_BACKOFF: BackoffPolicy = { baseMs: 200, maxMs: 30_000 };
/** How often an idle sender looks at the outbox anyway (after a restart, for instance). */
const IDLE_POLL_MS = 2_000;
/**
 * A sender working from memory still reads the outbox back, after this long when it has nothing
 * to send and after REREAD_BUSY_MS in any case: a batch stored without being handed over (an
 * insert that committed although the driver reported an error, or a second instance of the
 * function on the same database) is found then. (A read-back while busy costs a burst its
 * memory path, so it is rare.)
 */
const REREAD_MS = 5_000;
const REREAD_BUSY_MS = 60_000;
/** How long a subscriber applies before it answers 202 (still applying): this share of the deadline. */
const APPLY_WAIT_SHARE = 0.4;
/** Flow control (flow.ts): a request should take the subscriber at most this share of the deadline to apply. */
const TARGET_APPLY_SHARE = 0.25;
/** Readings in the first request, before the subscriber's rate is known, and the bounds. */
const FLOW_READINGS = { initial: 2_000, min: 1, max: 50_000 };
/** The rate of acknowledged readings (and the time left) is measured over this window. */
const RATE_WINDOW_MS = 30_000;
/** How long a sender trusts the subscriber's registry entry (address) before reading it again. */
const REGISTRY_TTL_MS = 5_000;
/** Gzipped request bodies kept for the other subscribers of the same batches. */
const GZIP_SHARED = 8;
/** Acknowledgements are written to the outbox together, this long after the first one. */
const ACK_FLUSH_MS = 20;
/** After a failed write of acknowledgements (the database is down), the next try. */
const ACK_RETRY_MS = 1_000;

/** One batch of operations for one namespace. */
interface Batch {
  _id: ObjectId;
  db: string;
  coll: string;
  /** Origin sequence number of this batch (monotonic per origin). */
  seq: number;
  ops: ReplicationOp[];
}

interface OutboxDoc extends Batch {
  /** Subscribers that have not acknowledged this batch yet. */
  pending: string[];
  /** Operations in the batch (`ops.length`; absent in batches stored by older versions). */
  n?: number;
}

/** Body of POST /replicate. */
export interface ReplicateBody {
  origin: string;
  /** How long the subscriber may apply before it answers 202 (undefined: until done, as older origins expect). */
  wait_ms?: number | undefined;
  /** Some batches may have been delivered before: the subscriber checks its records of applied batches. */
  retry?: boolean | undefined;
  batches: Array<{ id?: string | undefined; db: string; coll: string; seq: number; ops: ReplicationOp[] }>;
}

/** What a subscriber answers to /replicate (200 or 202) and /replicate/status. */
const reportSchema = z
  .object({
    acked: z.array(z.string()),
    applying: z.array(z.string()).default([]),
    unknown: z.array(z.string()).default([]),
    applied: z.array(z.object({ id: z.string(), ops: z.number(), ms: z.number() })).default([]),
  })
  .loose();
type Report = z.infer<typeof reportSchema>;

/** The progress of replication to one subscriber, as /readyz shows it. */
export interface SubscriberProgress {
  /** idle, sending, waiting-for-apply (the subscriber is applying; the sender asks for progress), retrying (after a failure). */
  state: 'idle' | 'sending' | 'waiting-for-apply' | 'retrying';
  batches_pending: number;
  readings_pending: number;
  /** Since this process started: readings sent (a batch sent again counts again) and acknowledged. */
  readings_sent: number;
  readings_acked: number;
  batches_acked: number;
  /** Sent, not acknowledged yet. */
  in_flight: { batches: number; readings: number };
  /** Readings acknowledged per second over the last 30 s (null: none). */
  rate_per_s: number | null;
  /** readings_pending at that rate (null: no rate yet). */
  eta_s: number | null;
  /** Flow control: readings the next request may carry, and the measured apply time per reading. */
  request_readings: number;
  apply_ms_per_reading: number | null;
  /** Requests that failed or timed out since the last acknowledgement, and the last error. */
  failures: number;
  last_error: { code: string; message: string; at: string } | null;
  last_ack_at: string | null;
}

interface SenderDeps {
  nodeId: string;
  /** Deadline of one delivery (or progress question) to a subscriber (SYNCMESH_REPLICATION_TIMEOUT_MS). */
  sendTimeoutMs: number;
  /** Signs each /replicate for its subscriber (protocol v2); undefined: no mesh secret. */
  auth: MeshAuth | undefined;
  registry: NodeRegistry;
  log: Logger;
  /**
   * Request bodies smaller than this go uncompressed (SYNCMESH_GZIP_MIN_BYTES, config.ts): gzip
   * saves little on them and costs a trip through libuv's thread pool here and a gunzip at every
   * subscriber, on the way of a lone reading.
   */
  gzipMinBytes: number;
}

/** A batch's part of a /replicate body, encoded once however many subscribers get it. */
const encoded = new WeakMap<Batch, string>();
function batchJson(b: Batch): string {
  let json = encoded.get(b);
  if (json === undefined) {
    json = BSON.EJSON.stringify({ id: b._id.toHexString(), db: b.db, coll: b.coll, seq: b.seq, ops: b.ops }, { relaxed: true });
    encoded.set(b, json);
  }
  return json;
}

/** The first batches with at most `readings` operations (at least one batch) whose JSON fits in SEND_MAX_BYTES. */
function fitting(batches: readonly Batch[], readings: number): Batch[] {
  const out: Batch[] = [];
  let bytes = 0;
  let ops = 0;
  for (const b of batches) {
    bytes += batchJson(b).length;
    ops += b.ops.length;
    if (out.length > 0 && (bytes > SEND_MAX_BYTES || ops > readings)) break;
    out.push(b);
  }
  return out;
}

/** The EJSON text of a ReplicateBody, from the batches' cached encodings. */
export function replicateJson(origin: string, batches: readonly Batch[], opts: { waitMs?: number; retry?: boolean } = {}): string {
  const wait = opts.waitMs === undefined ? '' : `"wait_ms":${opts.waitMs},`;
  const retry = opts.retry ? '"retry":true,' : '';
  return `{"origin":${JSON.stringify(origin)},${wait}${retry}"batches":[${batches.map(batchJson).join(',')}]}`;
}

/** Parses a subscriber's report; an older subscriber answers 200 `{upserts, deletes, stale}`: all applied. */
function parseReport(text: string, status: number, sent: readonly Batch[]): Report {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (status === 200 && json !== null && typeof json === 'object' && !('acked' in json) && 'upserts' in json) {
    return { acked: sent.map((b) => b._id.toHexString()), applying: [], unknown: [], applied: [] };
  }
  const r = reportSchema.safeParse(json);
  if (!r.success) {
    throw new SyncmeshError(
      'EDGE_SYNCMESH_SUBSCRIBER_BAD_ANSWER',
      `the subscriber's answer (HTTP ${status}) is not a replication report: ${text.slice(0, 120)}`,
      {
        details: { http_status: status },
      },
    );
  }
  return r.data;
}

const readingsOf = (batches: readonly Batch[]) => batches.reduce((n, b) => n + b.ops.length, 0);

export class Outbox {
  private readonly outbox: Collection<OutboxDoc>;
  private lastSeq = 0;
  private readonly senders = new Map<string, Sender>();
  private stopped = false;
  /** Acknowledged batches per subscriber, not yet written to the outbox. */
  private acks = new Map<string, ObjectId[]>();
  private ackTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  /** Gzipped request bodies shared by subscribers in step (see `compress`). */
  private readonly gzipped = new Map<string, Promise<Buffer>>();
  /** Batches and readings not acknowledged yet, per subscriber (counted at start, then kept in memory). */
  private readonly waiting = new Map<string, { batches: number; readings: number }>();

  constructor(
    meta: Db,
    private readonly deps: SenderDeps,
  ) {
    this.outbox = meta.collection<OutboxDoc>('replication_outbox');
  }

  /** A sequence number larger than any before, also across restarts (it starts from the clock). */
  nextSeq(): number {
    this.lastSeq = Math.max(this.lastSeq + 1, Date.now() * 1000);
    return this.lastSeq;
  }

  async start(): Promise<void> {
    await this.outbox.createIndex({ pending: 1, _id: 1 }, { name: 'pending_1__id_1' });
    this.waiting.clear();
    for await (const d of this.outbox.find({}, { projection: { pending: 1, n: 1 } })) {
      for (const s of d.pending) this.count(s, 1, d.n ?? 1);
    }
    for (const s of this.waiting.keys()) this.sender(s).wake();
  }

  private count(subscriber: string, batches: number, readings: number): void {
    const w = this.waiting.get(subscriber) ?? { batches: 0, readings: 0 };
    w.batches = Math.max(0, w.batches + batches);
    w.readings = Math.max(0, w.readings + readings);
    this.waiting.set(subscriber, w);
  }

  /** Stores one batch for all `subscribers` and hands it to their senders; resolves once it is stored. */
  async enqueue(subscribers: readonly string[], db: string, coll: string, ops: ReplicationOp[], seq = this.nextSeq()): Promise<number> {
    if (subscribers.length === 0 || ops.length === 0) return seq;
    const batch: Batch = { _id: new ObjectId(), db, coll, seq, ops };
    const to = [...new Set(subscribers)];
    try {
      await this.outbox.insertOne({ ...batch, pending: to, n: ops.length });
    } catch (err) {
      // The insert may have committed anyway: the senders read the outbox back.
      for (const s of to) this.sender(s).lostTrack();
      throw err;
    }
    for (const s of to) {
      this.count(s, 1, ops.length);
      this.sender(s).offer(batch);
    }
    return seq;
  }

  /** Batches not acknowledged yet, for one subscriber or for any. */
  async pending(subscriber?: string): Promise<number> {
    await this.flushAcks();
    return this.outbox.countDocuments(subscriber ? { pending: subscriber } : {});
  }

  /** Batches not acknowledged yet by `subscriber` (kept in memory). */
  waitingBatches(subscriber: string): number {
    return this.waiting.get(subscriber)?.batches ?? 0;
  }

  /** Progress per subscriber (for /readyz). */
  progress(): Record<string, SubscriberProgress> {
    const ids = new Set([...this.waiting.keys(), ...this.senders.keys()]);
    return Object.fromEntries(
      [...ids].sort().map((id) => {
        const w = this.waiting.get(id) ?? { batches: 0, readings: 0 };
        return [id, this.sender(id).progress(w.batches, w.readings)];
      }),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.senders.values()].map((s) => s.stop()));
    clearTimeout(this.ackTimer);
    this.ackTimer = undefined;
    await this.flushAcks().catch((err: unknown) =>
      this.deps.log.warn({ err: (err as Error).message }, 'acknowledgements not written at stop; those batches go again after the restart'),
    );
  }

  /** `subscriber` acknowledged these batches; written to the outbox shortly. */
  private ack(subscriber: string, batches: readonly Batch[]): void {
    this.count(subscriber, -batches.length, -readingsOf(batches));
    this.keepAcks(
      subscriber,
      batches.map((b) => b._id),
    );
    this.scheduleAcks(ACK_FLUSH_MS);
  }

  private keepAcks(subscriber: string, ids: readonly ObjectId[]): void {
    const list = this.acks.get(subscriber) ?? [];
    list.push(...ids);
    this.acks.set(subscriber, list);
  }

  private scheduleAcks(ms: number): void {
    if (this.stopped) return; // stop() writes what is left
    this.ackTimer ??= setTimeout(() => {
      this.ackTimer = undefined;
      this.flushAcks().catch((err: unknown) => {
        this.deps.log.warn({ err: (err as Error).message, retryInMs: ACK_RETRY_MS }, 'writing acknowledgements to the outbox failed; will retry');
        this.scheduleAcks(ACK_RETRY_MS);
      });
    }, ms);
    this.ackTimer.unref();
  }

  /** Writes the acknowledgements so far (one after the other, never two flushes at once). */
  flushAcks(): Promise<void> {
    this.flushing = this.flushing.catch(() => undefined).then(() => this.writeAcks());
    return this.flushing;
  }

  private async writeAcks(): Promise<void> {
    if (this.acks.size === 0) return;
    const acks = this.acks;
    this.acks = new Map();
    try {
      // Subscribers in step acknowledged the same batches: one update for all of them.
      const bySet = new Map<string, { ids: ObjectId[]; subscribers: string[] }>();
      for (const [subscriber, ids] of acks) {
        const key = ids
          .map((id) => id.toHexString())
          .sort()
          .join(',');
        const group = bySet.get(key) ?? { ids, subscribers: [] };
        group.subscribers.push(subscriber);
        bySet.set(key, group);
      }
      for (const { ids, subscribers } of bySet.values()) await this.outbox.updateMany({ _id: { $in: ids } }, { $pull: { pending: { $in: subscribers } } });
      await this.outbox.deleteMany({ _id: { $in: [...acks.values()].flat() }, pending: { $size: 0 } });
    } catch (err) {
      for (const [subscriber, ids] of acks) this.keepAcks(subscriber, ids); // kept for the next try
      throw err;
    }
  }

  /**
   * Subscribers in step get the same request (the same batches, flags and origin): it is gzipped
   * once for all of them (the last GZIP_SHARED requests are kept).
   */
  private compress(key: string | undefined, json: string): Promise<Buffer> {
    if (key === undefined) return gzip(json);
    let p = this.gzipped.get(key);
    if (!p) {
      p = gzip(json);
      this.gzipped.set(key, p);
      if (this.gzipped.size > GZIP_SHARED) this.gzipped.delete(this.gzipped.keys().next().value!);
      p.catch(() => this.gzipped.delete(key));
    }
    return p;
  }

  private sender(subscriber: string): Sender {
    let sender = this.senders.get(subscriber);
    if (!sender) {
      sender = new Sender(subscriber, this.outbox, this.deps, {
        compress: (key, json) => this.compress(key, json),
        stopped: () => this.stopped,
        ack: (batches) => this.ack(subscriber, batches),
        flushAcks: () => this.flushAcks(),
        dropped: () => this.waiting.delete(subscriber),
      });
      this.senders.set(subscriber, sender);
    }
    return sender;
  }
}

interface SenderOwner {
  /** The gzipped body for `json`, shared by the senders that send the same request (`key`). */
  compress(key: string | undefined, json: string): Promise<Buffer>;
  stopped(): boolean;
  ack(batches: readonly Batch[]): void;
  flushAcks(): Promise<void>;
  /** The subscriber's queue was dropped (it left the registry). */
  dropped(): void;
}

class Sender {
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private wakeUp: (() => void) | undefined;
  /**
   * When `inSync`, `queue` holds exactly the batches this subscriber still needs, in order;
   * otherwise the outbox is the truth and is read back. `offers` counts hand-overs, so that a
   * read that raced with one is not taken as complete.
   */
  private queue: Batch[] = [];
  private queued = new Set<string>();
  private inSync = false;
  private offers = 0;
  /** When the outbox was last read back. */
  private lastRead = 0;
  /** Batches per request; halved after a subscriber refused a request as too large. */
  private maxBatches = SEND_BATCHES;
  /** Readings per request, from the subscriber's apply rate. */
  private readonly flow: FlowControl;
  /** How long the subscriber may apply before it answers 202. */
  private readonly applyWaitMs: number;
  /**
   * Sent and not acknowledged: the subscriber may be applying them (it answered 202, or the
   * request failed after it arrived). The sender asks for their progress before sending anything.
   */
  private inFlight: Batch[] = [];
  /** The next request may repeat batches the subscriber already has (it then checks its records). */
  private retry = false;
  /** The subscriber's registry entry as last read (null: not registered), and when. */
  private target: { node: MeshNode | null; at: number } | undefined;
  private readonly stats = {
    state: 'idle' as SubscriberProgress['state'],
    readingsSent: 0,
    readingsAcked: 0,
    batchesAcked: 0,
    failures: 0,
    lastError: null as SubscriberProgress['last_error'],
    lastAckAt: null as string | null,
    /** Acknowledgements of the last RATE_WINDOW_MS: [time, readings]. */
    recent: [] as Array<[number, number]>,
  };

  constructor(
    private readonly subscriber: string,
    private readonly outbox: Collection<OutboxDoc>,
    private readonly deps: SenderDeps,
    private readonly owner: SenderOwner,
  ) {
    this.flow = new FlowControl({ targetMs: deps.sendTimeoutMs * TARGET_APPLY_SHARE, ...FLOW_READINGS });
    this.applyWaitMs = Math.round(deps.sendTimeoutMs * APPLY_WAIT_SHARE);
  }

  /** A batch may have been stored without being handed over: read the outbox back. */
  lostTrack(): void {
    this.inSync = false;
    this.wake();
  }

  /** A batch just stored for this subscriber. */
  offer(batch: Batch): void {
    this.offers++;
    if (this.inSync && this.queue.length < MEMORY_BATCHES) this.remember([batch]);
    else this.inSync = false;
    this.wake();
  }

  wake(): void {
    if (this.owner.stopped()) return;
    this.again = true;
    if (this.wakeUp) this.wakeUp();
    this.running ??= this.loop().finally(() => {
      this.running = undefined;
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.wakeUp?.();
    await this.running;
  }

  progress(batchesPending: number, readingsPending: number): SubscriberProgress {
    const now = Date.now();
    const recent = this.stats.recent.filter(([t]) => now - t <= RATE_WINDOW_MS);
    this.stats.recent = recent;
    let rate: number | null = null;
    if (recent.length > 0) {
      const span = Math.max(now - recent[0]![0], 1_000);
      rate = Math.round((recent.reduce((n, [, r]) => n + r, 0) / span) * 1000);
    }
    const msPer = this.flow.msPerReading;
    return {
      state: this.stats.state,
      batches_pending: batchesPending,
      readings_pending: readingsPending,
      readings_sent: this.stats.readingsSent,
      readings_acked: this.stats.readingsAcked,
      batches_acked: this.stats.batchesAcked,
      in_flight: { batches: this.inFlight.length, readings: readingsOf(this.inFlight) },
      rate_per_s: rate,
      eta_s: readingsPending === 0 ? 0 : rate ? Math.round(readingsPending / rate) : null,
      request_readings: this.flow.budget,
      apply_ms_per_reading: msPer === undefined ? null : Math.round(msPer * 1000) / 1000,
      failures: this.stats.failures,
      last_error: this.stats.lastError,
      last_ack_at: this.stats.lastAckAt,
    };
  }

  private remember(batches: readonly Batch[]): void {
    for (const b of batches) {
      const id = b._id.toHexString();
      if (this.queued.has(id)) continue; // read back and handed over at the same time
      this.queued.add(id);
      this.queue.push(b);
    }
  }

  private forget(sent: readonly Batch[]): void {
    const ids = new Set(sent.map((b) => b._id.toHexString()));
    this.queue = this.queue.filter((b) => !ids.has(b._id.toHexString()));
    for (const id of ids) this.queued.delete(id);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wakeUp = () => {
        clearTimeout(this.timer);
        this.wakeUp = undefined;
        resolve();
      };
      this.timer = setTimeout(() => this.wakeUp?.(), ms);
      this.timer.unref();
    });
  }

  private async loop(): Promise<void> {
    let attempt = 0;
    const log = this.deps.log;
    while (!this.stopped) {
      this.again = false;
      let sent = false;
      try {
        sent = await this.sendOnce();
        if (sent) attempt = 0;
      } catch (err) {
        const delayMs = backoffDelayMs(attempt++, RETRY_BACKOFF);
        const code = err instanceof SyncmeshError ? err.code : 'EDGE_SYNCMESH_INTERNAL';
        this.stats.failures++;
        this.stats.lastError = { code, message: (err as Error).message.slice(0, 300), at: new Date().toISOString() };
        this.stats.state = 'retrying';
        this.target = undefined; // the registry is read again before the retry (the address may have changed)
        log.warn({ subscriber: this.subscriber, code, err: (err as Error).message, retryInMs: delayMs }, 'replication to subscriber failed; will retry');
        await this.sleep(delayMs);
        continue;
      }
      if (!sent) this.stats.state = 'idle';
      if (!sent && !this.again) await this.sleep(IDLE_POLL_MS);
    }
  }

  /** The oldest batches this subscriber needs, from memory when it is in sync, else from the outbox. */
  private async next(): Promise<Batch[]> {
    const since = Date.now() - this.lastRead;
    if (this.inSync && (since > REREAD_BUSY_MS || (this.queue.length === 0 && since > REREAD_MS))) this.inSync = false;
    if (this.inSync) return this.queue.slice(0, this.maxBatches);
    const offersBefore = this.offers;
    this.lastRead = Date.now();
    await this.owner.flushAcks(); // batches already delivered are not read back
    const docs = await this.outbox
      .find({ pending: this.subscriber }, { projection: { pending: 0, n: 0 } })
      .sort({ _id: 1 })
      .limit(this.maxBatches)
      .toArray();
    // Read back from the outbox: some may have reached the subscriber before (an acknowledgement
    // lost in a restart), so it checks its records of applied batches.
    const known = new Set(this.queue.map((b) => b._id.toHexString()));
    if (docs.some((d) => !known.has(d._id.toHexString()))) this.retry = true;
    this.queue = [];
    this.queued.clear();
    this.remember(docs);
    // Everything it needs fits in one read and nothing arrived meanwhile: memory is complete.
    if (docs.length < this.maxBatches && this.offers === offersBefore) this.inSync = true;
    return docs;
  }

  /** The subscriber's registry entry (read again every REGISTRY_TTL_MS and after a failure). */
  private async node(): Promise<MeshNode | null> {
    if (!this.target || Date.now() - this.target.at > REGISTRY_TTL_MS) this.target = { node: await this.deps.registry.get(this.subscriber), at: Date.now() };
    return this.target.node;
  }

  /** Sends the oldest batches (or asks about those in flight); false when there was nothing to do. */
  private async sendOnce(): Promise<boolean> {
    if (this.inFlight.length > 0) {
      await this.settle();
      return true;
    }
    const batches = fitting(await this.next(), this.flow.budget);
    if (batches.length === 0) return false;
    const node = await this.node();
    if (!node) {
      this.target = undefined;
      // Unregistered subscribers get nothing more; their queue is dropped on purpose.
      const res = await this.outbox.updateMany({ pending: this.subscriber }, { $pull: { pending: this.subscriber } });
      await this.outbox.deleteMany({ pending: { $size: 0 } });
      this.queue = [];
      this.queued.clear();
      this.inSync = false;
      this.owner.dropped();
      this.deps.log.warn({ subscriber: this.subscriber, dropped: res.modifiedCount }, 'subscriber is no longer in the registry; dropped its queue');
      return false;
    }
    const readings = readingsOf(batches);
    this.stats.state = 'sending';
    // Until the subscriber says what became of them, these batches may be applied there.
    this.inFlight = batches;
    const key = `${this.applyWaitMs}|${this.retry}|${batches.map((b) => b._id.toHexString()).join(',')}`;
    const res = await this.call(node, '/replicate', replicateJson(this.deps.nodeId, batches, { waitMs: this.applyWaitMs, retry: this.retry }), key);
    this.stats.readingsSent += readings;
    if (res.status === 413 && batches.length > 1) {
      this.inFlight = []; // refused before anything was applied
      this.maxBatches = Math.max(1, Math.floor(batches.length / 2));
      this.flow.tooLarge(readings);
      this.deps.log.warn(
        { subscriber: this.subscriber, batches: batches.length, nowAtMost: this.maxBatches, readings: this.flow.budget },
        'subscriber refused the request as too large; sending fewer batches per request',
      );
      // Not a failure of the subscriber: send again at once, without backing off.
      return true;
    }
    if (res.status !== 200 && res.status !== 202) {
      // A 4xx refuses the request as a whole (nothing applied); after a 5xx an apply may have started.
      if (res.status < 500) this.inFlight = [];
      throw new SyncmeshError('EDGE_SYNCMESH_PEER_HTTP_ERROR', `subscriber answered HTTP ${res.status}: ${res.text.slice(0, 200)}`, {
        details: { http_status: res.status },
      });
    }
    this.take(parseReport(res.text, res.status, batches));
    if (this.inFlight.length > 0) await this.settle();
    this.flow.succeeded(readings);
    this.retry = false;
    return true;
  }

  /** Asks the subscriber about the batches in flight until none is being applied any more. */
  private async settle(): Promise<void> {
    const node = await this.node();
    if (!node) {
      this.inFlight = []; // sendOnce drops the queue
      return;
    }
    while (this.inFlight.length > 0 && !this.stopped) {
      this.stats.state = 'waiting-for-apply';
      const ids = this.inFlight.map((b) => b._id.toHexString());
      const body = JSON.stringify({ origin: this.deps.nodeId, ids, wait_ms: this.applyWaitMs });
      const res = await this.call(node, '/replicate/status', body);
      if (res.status === 404) {
        // A subscriber of an older version (no status endpoint): send them again; its revision
        // checks make that a no-op for what it applied.
        this.inFlight = [];
        this.retry = true;
        return;
      }
      if (res.status !== 200) {
        throw new SyncmeshError('EDGE_SYNCMESH_PEER_HTTP_ERROR', `subscriber answered HTTP ${res.status} to a progress question: ${res.text.slice(0, 200)}`, {
          details: { http_status: res.status },
        });
      }
      this.take(parseReport(res.text, res.status, []));
    }
  }

  /** Takes a subscriber's report on the batches in flight: acknowledges, keeps, or marks for sending again. */
  private take(report: Report): void {
    const acked = new Set(report.acked);
    const unknown = new Set(report.unknown);
    let ops = 0;
    let ms = 0;
    const inFlight = new Set(this.inFlight.map((b) => b._id.toHexString()));
    for (const a of report.applied) {
      if (!inFlight.has(a.id)) continue;
      ops += a.ops;
      ms += a.ms;
    }
    this.flow.applied(ops, ms);
    const done = this.inFlight.filter((b) => acked.has(b._id.toHexString()));
    if (done.length > 0) {
      this.forget(done);
      this.owner.ack(done);
      const n = readingsOf(done);
      this.stats.readingsAcked += n;
      this.stats.batchesAcked += done.length;
      this.stats.failures = 0;
      this.stats.lastAckAt = new Date().toISOString();
      this.stats.recent.push([Date.now(), n]);
    }
    // Unknown there (never arrived, or its apply failed): sent again, first, by the next request.
    if (unknown.size > 0) this.retry = true;
    this.inFlight = this.inFlight.filter((b) => !acked.has(b._id.toHexString()) && !unknown.has(b._id.toHexString()));
  }

  /** One signed POST to the subscriber; a timeout shrinks the next requests. */
  private async call(node: MeshNode, path: '/replicate' | '/replicate/status', json: string, shareKey?: string) {
    if (!this.deps.auth) throw new SyncmeshError('EDGE_SYNCMESH_NO_MESH_SECRET', 'this node has no mesh secret, so it cannot sign replication requests');
    const gzipped = Buffer.byteLength(json) >= this.deps.gzipMinBytes;
    const payload = gzipped ? await this.owner.compress(shareKey, json) : Buffer.from(json);
    const encoding: Record<string, string> = gzipped ? { 'content-encoding': 'gzip' } : {};
    // Signed for this subscriber only: a /replicate for B does not verify at C.
    const signature = this.deps.auth.sign({ path, target: this.subscriber, body: payload, contentEncoding: gzipped ? 'gzip' : undefined });
    const headers = { 'content-type': 'application/json', ...encoding, ...signature };
    const signal = AbortSignal.timeout(this.deps.sendTimeoutMs);
    try {
      return await post(`${node.address.replace(/\/+$/, '')}${path}`, payload, headers, signal);
    } catch (err) {
      if (signal.aborted) {
        this.flow.timedOut();
        throw new SyncmeshError('EDGE_SYNCMESH_SUBSCRIBER_TIMEOUT', `the subscriber did not answer ${path} within ${this.deps.sendTimeoutMs} ms`, {
          cause: err,
        });
      }
      throw err;
    }
  }
}
