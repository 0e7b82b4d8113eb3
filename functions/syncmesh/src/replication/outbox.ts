/**
 * The replication outbox: operations waiting to reach each subscriber, kept in
 * `syncmesh_meta.replication_outbox` so that nothing is lost while a subscriber is down or this
 * process restarts. The listener's events are acknowledged once they are in the outbox; a
 * sender per subscriber then delivers the batches in order, deleting each after the subscriber
 * acknowledged it, and retries with capped, jittered backoff.
 */
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import { BSON, ObjectId, type Collection, type Db } from 'mongodb';
import type { Logger } from 'pino';
import { signRequest } from '../mesh/auth.js';
import type { NodeRegistry } from '../mesh/registry.js';
import type { ReplicationOp } from './ops.js';

const gzip = promisify(gzipCb);

/** Batches sent in one request to a subscriber. */
const SEND_BATCHES = 50;
/** Backoff while a subscriber fails: from 200 ms doubling to 30 s, with ±25% jitter. */
const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 30_000;
/** How often an idle sender looks at the outbox anyway (after a restart, for instance). */
const IDLE_POLL_MS = 2_000;
/** Deadline of one delivery to a subscriber. */
const SEND_TIMEOUT_MS = 10_000;

interface OutboxDoc {
  _id: ObjectId;
  subscriber: string;
  db: string;
  coll: string;
  /** Origin sequence number of this batch (monotonic per origin). */
  seq: number;
  ops: ReplicationOp[];
}

/** Body of POST /replicate. */
export interface ReplicateBody {
  origin: string;
  batches: Array<{ db: string; coll: string; seq: number; ops: ReplicationOp[] }>;
}

export class Outbox {
  private readonly outbox: Collection<OutboxDoc>;
  private lastSeq = 0;
  private readonly senders = new Map<string, Sender>();
  private stopped = false;

  constructor(
    meta: Db,
    private readonly deps: { nodeId: string; secret: string | undefined; registry: NodeRegistry; log: Logger },
  ) {
    this.outbox = meta.collection<OutboxDoc>('replication_outbox');
  }

  /** A sequence number larger than any before, also across restarts (it starts from the clock). */
  nextSeq(): number {
    this.lastSeq = Math.max(this.lastSeq + 1, Date.now() * 1000);
    return this.lastSeq;
  }

  async start(): Promise<void> {
    await this.outbox.createIndex({ subscriber: 1, _id: 1 }, { name: 'subscriber_1__id_1' });
    const pending = (await this.outbox.distinct('subscriber')) as string[];
    for (const s of pending) this.wake(s);
  }

  /** Queues the same batch for each subscriber; resolves once it is stored. */
  async enqueue(subscribers: readonly string[], db: string, coll: string, ops: ReplicationOp[], seq = this.nextSeq()): Promise<number> {
    if (subscribers.length === 0 || ops.length === 0) return seq;
    await this.outbox.insertMany(subscribers.map((subscriber) => ({ _id: new ObjectId(), subscriber, db, coll, seq, ops })));
    for (const s of subscribers) this.wake(s);
    return seq;
  }

  /** Batches waiting, for one subscriber or for all. */
  async pending(subscriber?: string): Promise<number> {
    return this.outbox.countDocuments(subscriber ? { subscriber } : {});
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.senders.values()].map((s) => s.stop()));
  }

  private wake(subscriber: string): void {
    if (this.stopped) return;
    let sender = this.senders.get(subscriber);
    if (!sender) {
      sender = new Sender(subscriber, this.outbox, this.deps);
      this.senders.set(subscriber, sender);
    }
    sender.wake();
  }
}

class Sender {
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private wakeUp: (() => void) | undefined;

  constructor(
    private readonly subscriber: string,
    private readonly outbox: Collection<OutboxDoc>,
    private readonly deps: { nodeId: string; secret: string | undefined; registry: NodeRegistry; log: Logger },
  ) {}

  wake(): void {
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
    let backoff = RETRY_MIN_MS;
    const log = this.deps.log;
    while (!this.stopped) {
      this.again = false;
      let sent = false;
      try {
        sent = await this.sendOnce();
        if (sent) backoff = RETRY_MIN_MS;
      } catch (err) {
        log.warn({ subscriber: this.subscriber, err: (err as Error).message, retryInMs: backoff }, 'replication to subscriber failed; will retry');
        await this.sleep(backoff * (0.75 + Math.random() * 0.5));
        backoff = Math.min(backoff * 2, RETRY_MAX_MS);
        continue;
      }
      if (!sent && !this.again) await this.sleep(IDLE_POLL_MS);
    }
  }

  /** Sends the oldest batches; false when there was nothing to send. */
  private async sendOnce(): Promise<boolean> {
    const docs = await this.outbox.find({ subscriber: this.subscriber }).sort({ _id: 1 }).limit(SEND_BATCHES).toArray();
    if (docs.length === 0) return false;
    const node = await this.deps.registry.get(this.subscriber);
    if (!node) {
      // Unregistered subscribers get nothing more; their queue is dropped on purpose.
      const res = await this.outbox.deleteMany({ subscriber: this.subscriber });
      this.deps.log.warn({ subscriber: this.subscriber, dropped: res.deletedCount }, 'subscriber is no longer in the registry; dropped its queue');
      return false;
    }
    if (!this.deps.secret) throw new Error('this node has no mesh secret, so it cannot sign replication requests');
    const body: ReplicateBody = { origin: this.deps.nodeId, batches: docs.map((d) => ({ db: d.db, coll: d.coll, seq: d.seq, ops: d.ops })) };
    const json = BSON.EJSON.stringify(body, { relaxed: true });
    const res = await fetch(`${node.address.replace(/\/+$/, '')}/replicate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', ...signRequest(this.deps.secret, json) },
      body: await gzip(json),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`subscriber answered HTTP ${res.status}: ${text.slice(0, 200)}`);
    await this.outbox.deleteMany({ _id: { $in: docs.map((d) => d._id) } });
    return true;
  }
}
