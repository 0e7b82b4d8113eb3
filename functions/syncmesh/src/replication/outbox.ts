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
 */
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import { backoffDelayMs, type BackoffPolicy } from '@syncmesh-edge/backoff';
import { BSON, ObjectId, type Collection, type Db } from 'mongodb';
import type { Logger } from '@syncmesh-edge/log';
import { SyncmeshError } from '../errors.js';
import { post } from '../mesh/http.js';
import type { MeshAuth } from '../mesh/signing.js';
import type { MeshNode, NodeRegistry } from '../mesh/registry.js';
import type { ReplicationOp } from './ops.js';

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
/** Deadline of one delivery to a subscriber. */
const SEND_TIMEOUT_MS = 10_000;
/** How long a sender trusts the subscriber's registry entry (address) before reading it again. */
const REGISTRY_TTL_MS = 5_000;
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
}

/** Body of POST /replicate. */
export interface ReplicateBody {
  origin: string;
  batches: Array<{ db: string; coll: string; seq: number; ops: ReplicationOp[] }>;
}

interface SenderDeps {
  nodeId: string;
  /** Signs each /replicate for its subscriber (protocol v2); undefined: no mesh secret. */
  auth: MeshAuth | undefined;
  registry: NodeRegistry;
  log: Logger;
}

/** A batch's part of a /replicate body, encoded once however many subscribers get it. */
const encoded = new WeakMap<Batch, string>();
function batchJson(b: Batch): string {
  let json = encoded.get(b);
  if (json === undefined) {
    json = BSON.EJSON.stringify({ db: b.db, coll: b.coll, seq: b.seq, ops: b.ops }, { relaxed: true });
    encoded.set(b, json);
  }
  return json;
}

/** The first batches whose JSON fits in SEND_MAX_BYTES (at least one). */
function fitting(batches: readonly Batch[]): Batch[] {
  const out: Batch[] = [];
  let bytes = 0;
  for (const b of batches) {
    bytes += batchJson(b).length;
    if (out.length > 0 && bytes > SEND_MAX_BYTES) break;
    out.push(b);
  }
  return out;
}

/** The EJSON text of a ReplicateBody, from the batches' cached encodings. */
export function replicateJson(origin: string, batches: readonly Batch[]): string {
  return `{"origin":${JSON.stringify(origin)},"batches":[${batches.map(batchJson).join(',')}]}`;
}

export class Outbox {
  private readonly outbox: Collection<OutboxDoc>;
  private lastSeq = 0;
  private readonly senders = new Map<string, Sender>();
  private stopped = false;
  /** Acknowledged batches per subscriber, not yet written to the outbox. */
  private acks = new Map<string, ObjectId[]>();
  private ackTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

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
    const waiting = (await this.outbox.distinct('pending')) as string[];
    for (const s of waiting) this.sender(s).wake();
  }

  /** Stores one batch for all `subscribers` and hands it to their senders; resolves once it is stored. */
  async enqueue(subscribers: readonly string[], db: string, coll: string, ops: ReplicationOp[], seq = this.nextSeq()): Promise<number> {
    if (subscribers.length === 0 || ops.length === 0) return seq;
    const batch: Batch = { _id: new ObjectId(), db, coll, seq, ops };
    try {
      await this.outbox.insertOne({ ...batch, pending: [...new Set(subscribers)] });
    } catch (err) {
      // The insert may have committed anyway: the senders read the outbox back.
      for (const s of subscribers) this.sender(s).lostTrack();
      throw err;
    }
    for (const s of subscribers) this.sender(s).offer(batch);
    return seq;
  }

  /** Batches not acknowledged yet, for one subscriber or for any. */
  async pending(subscriber?: string): Promise<number> {
    await this.flushAcks();
    return this.outbox.countDocuments(subscriber ? { pending: subscriber } : {});
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
  private ack(subscriber: string, ids: readonly ObjectId[]): void {
    this.keepAcks(subscriber, ids);
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

  private sender(subscriber: string): Sender {
    let sender = this.senders.get(subscriber);
    if (!sender) {
      sender = new Sender(subscriber, this.outbox, this.deps, {
        stopped: () => this.stopped,
        ack: (ids) => this.ack(subscriber, ids),
        flushAcks: () => this.flushAcks(),
      });
      this.senders.set(subscriber, sender);
    }
    return sender;
  }
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
  /** The subscriber's registry entry as last read (null: not registered), and when. */
  private target: { node: MeshNode | null; at: number } | undefined;

  constructor(
    private readonly subscriber: string,
    private readonly outbox: Collection<OutboxDoc>,
    private readonly deps: SenderDeps,
    private readonly owner: { stopped(): boolean; ack(ids: readonly ObjectId[]): void; flushAcks(): Promise<void> },
  ) {}

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
        log.warn({ subscriber: this.subscriber, err: (err as Error).message, retryInMs: delayMs }, 'replication to subscriber failed; will retry');
        await this.sleep(delayMs);
        continue;
      }
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
      .find({ pending: this.subscriber }, { projection: { pending: 0 } })
      .sort({ _id: 1 })
      .limit(this.maxBatches)
      .toArray();
    this.queue = [];
    this.queued.clear();
    this.remember(docs);
    // Everything it needs fits in one read and nothing arrived meanwhile: memory is complete.
    if (docs.length < this.maxBatches && this.offers === offersBefore) this.inSync = true;
    return docs;
  }

  /** Sends the oldest batches; false when there was nothing to send. */
  private async sendOnce(): Promise<boolean> {
    const batches = fitting(await this.next());
    if (batches.length === 0) return false;
    if (!this.target || Date.now() - this.target.at > REGISTRY_TTL_MS) this.target = { node: await this.deps.registry.get(this.subscriber), at: Date.now() };
    const node = this.target.node;
    if (!node) {
      this.target = undefined;
      // Unregistered subscribers get nothing more; their queue is dropped on purpose.
      const res = await this.outbox.updateMany({ pending: this.subscriber }, { $pull: { pending: this.subscriber } });
      await this.outbox.deleteMany({ pending: { $size: 0 } });
      this.queue = [];
      this.queued.clear();
      this.inSync = false;
      this.deps.log.warn({ subscriber: this.subscriber, dropped: res.modifiedCount }, 'subscriber is no longer in the registry; dropped its queue');
      return false;
    }
    if (!this.deps.auth) throw new SyncmeshError('EDGE_SYNCMESH_NO_MESH_SECRET', 'this node has no mesh secret, so it cannot sign replication requests');
    const json = replicateJson(this.deps.nodeId, batches);
    try {
      const payload = await gzip(json);
      // Signed for this subscriber only: a /replicate for B does not verify at C.
      const signature = this.deps.auth.sign({ path: '/replicate', target: this.subscriber, body: payload, contentEncoding: 'gzip' });
      const headers = { 'content-type': 'application/json', 'content-encoding': 'gzip', ...signature };
      const res = await post(`${node.address.replace(/\/+$/, '')}/replicate`, payload, headers, AbortSignal.timeout(SEND_TIMEOUT_MS));
      if (res.status === 413 && batches.length > 1) {
        this.maxBatches = Math.max(1, Math.floor(batches.length / 2));
        this.deps.log.warn(
          { subscriber: this.subscriber, batches: batches.length, nowAtMost: this.maxBatches },
          'subscriber refused the request as too large; sending fewer batches per request',
        );
        // Not a failure of the subscriber: send again at once, without backing off.
        return true;
      }
      if (res.status !== 200) {
        throw new SyncmeshError('EDGE_SYNCMESH_PEER_HTTP_ERROR', `subscriber answered HTTP ${res.status}: ${res.text.slice(0, 200)}`, {
          details: { http_status: res.status },
        });
      }
    } catch (err) {
      this.target = undefined; // the registry is read again before the retry (the address may have changed)
      throw err;
    }
    this.forget(batches);
    this.owner.ack(batches.map((b) => b._id));
    return true;
  }
}
