/**
 * Snapshots: this node's whole collection queued for some subscribers (a resync, an initial
 * sync), then a `snapshot_end` that removes the replicas the origin no longer has.
 *
 * A snapshot is a job in `syncmesh_meta.replication_snapshots` (while it runs) that remembers how far it got
 * (`after`: the last `_id` queued; readings are read in `_id` order), so a snapshot interrupted
 * by a restart resumes there instead of starting again. A request answers as soon as the job is
 * stored; the job runs in the background. A new request while a job of the namespace has not
 * read anything yet joins it; otherwise a resync replaces it (history was lost *now*, so only a
 * snapshot read after the request is complete), for the subscribers of both, while an initial
 * sync (a node that just subscribed) runs beside it.
 *
 * A job queues at most AHEAD_BATCHES batches ahead of its fastest subscriber.
 *
 * Every batch of one pass carries a sequence number taken before the pass opened its cursor
 * (`since` for the first pass): the cursor may read any time after that (the test server reads
 * everything when the cursor opens, MongoDB as it goes), and a live event queued meanwhile
 * carries a larger number, so it wins on the subscriber whichever arrives first.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BSON, ObjectId, type Collection, type Db, type Document, type MongoClient } from 'mongodb';
import type { Logger } from '@syncmesh-edge/log';
import type { ReplicationOp } from './ops.js';
import type { Outbox } from './outbox.js';

/** The reason of a snapshot for a node that just subscribed (it never replaces a running snapshot). */
export const INITIAL_SYNC = 'initial-sync';
/** Readings per snapshot batch. */
export const SNAPSHOT_BATCH = 1000;
/** Wait before a job that failed (database down) runs again. */
const RETRY_MS = 2_000;
/**
 * A snapshot queues at most this many batches ahead of its fastest subscriber: it is read as the
 * subscribers take it, so the outbox (and a test server's heap) never holds a copy of the whole
 * collection. A subscriber that is down does not hold the others back.
 */
const AHEAD_BATCHES = 8;
const AHEAD_POLL_MS = 50;

interface SnapshotJob {
  _id: ObjectId;
  db: string;
  coll: string;
  subscribers: string[];
  reason: string;
  /** Taken before the first read: the snapshot_end removes replicas older than this. */
  since: number;
  /** The last `_id` queued (`{v: <_id>}`; null before the first batch). */
  after: { v: unknown } | null;
  batches: number;
  readings: number;
  /** Only running jobs are kept: a finished or replaced one is deleted. */
  state: 'running';
  started_at: Date;
  updated_at: Date;
}

/** A running snapshot as /readyz shows it. */
export interface SnapshotProgress {
  id: string;
  db: string;
  coll: string;
  subscribers: string[];
  reason: string;
  readings_queued: number;
  batches_queued: number;
  started_at: string;
}

/** The `$type` alias of a BSON value, for resuming after it (see `resumeFilter`). */
function typeAlias(v: unknown): string {
  if (v instanceof ObjectId) return 'objectId';
  if (typeof v === 'string') return 'string';
  if (
    typeof v === 'number' ||
    typeof v === 'bigint' ||
    v instanceof BSON.Long ||
    v instanceof BSON.Double ||
    v instanceof BSON.Int32 ||
    v instanceof BSON.Decimal128
  )
    return 'number';
  if (v instanceof Date) return 'date';
  if (typeof v === 'boolean') return 'bool';
  if (v instanceof BSON.Binary) return 'binData';
  return 'object';
}

/**
 * Readings not queued yet: after `after` in `_id` order. `$gt` compares only values of the same
 * BSON type, so the readings whose `_id` is of another type are read again too (queued twice,
 * which their replicas take as a no-op; nothing is skipped).
 */
function resumeFilter(after: { v: unknown } | null): Document {
  if (after === null) return {};
  return { $or: [{ _id: { $gt: after.v } }, { _id: { $not: { $type: typeAlias(after.v) } } }] };
}

export class Snapshots {
  private readonly jobs: Collection<SnapshotJob>;
  /** Jobs running in this process, by id: their latest state, and whether they were replaced. */
  private readonly running = new Map<string, { job: SnapshotJob; reading: boolean; superseded: boolean; done: Promise<void> }>();
  private stopped = false;

  constructor(
    meta: Db,
    private readonly deps: { client: MongoClient; outbox: Outbox; log: Logger },
  ) {
    this.jobs = meta.collection<SnapshotJob>('replication_snapshots');
  }

  /** Resumes the jobs a previous run of this process left unfinished. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.jobs.createIndex({ state: 1 }, { name: 'state_1' });
    for (const job of await this.jobs.find({ state: 'running' }).sort({ _id: 1 }).toArray()) {
      if (this.running.has(job._id.toHexString())) continue;
      this.deps.log.info(
        { snapshot: job._id.toHexString(), db: job.db, coll: job.coll, queued: job.readings, subscribers: job.subscribers },
        'resuming an unfinished snapshot where it stopped',
      );
      this.run(job);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /** Queues a snapshot of db.coll for `subscribers`; resolves once the job is stored. */
  async request(db: string, coll: string, subscribers: readonly string[], reason: string): Promise<{ snapshot: string; subscribers: string[] }> {
    let wanted = [...new Set(subscribers)].sort();
    for (const r of this.running.values()) {
      if (r.job.db !== db || r.job.coll !== coll || r.superseded) continue;
      if (!r.reading && r.job.batches === 0) {
        // not started reading: it reads after this request anyway
        const all = [...new Set([...r.job.subscribers, ...wanted])].sort();
        await this.jobs.updateOne({ _id: r.job._id }, { $set: { subscribers: all, updated_at: new Date() } });
        r.job.subscribers = all;
        return { snapshot: r.job._id.toHexString(), subscribers: all };
      }
      // A new subscriber's first copy does not need the others' snapshot read again.
      if (reason === INITIAL_SYNC) continue;
      r.superseded = true;
      await this.jobs.deleteOne({ _id: r.job._id });
      wanted = [...new Set([...r.job.subscribers, ...wanted])].sort();
      this.deps.log.info({ snapshot: r.job._id.toHexString(), db, coll }, 'a newer snapshot request replaces a running snapshot');
    }
    const now = new Date();
    const job: SnapshotJob = {
      _id: new ObjectId(),
      db,
      coll,
      subscribers: wanted,
      reason,
      since: this.deps.outbox.nextSeq(),
      after: null,
      batches: 0,
      readings: 0,
      state: 'running',
      started_at: now,
      updated_at: now,
    };
    await this.jobs.insertOne(job);
    this.run(job);
    return { snapshot: job._id.toHexString(), subscribers: wanted };
  }

  progress(): SnapshotProgress[] {
    return [...this.running.values()]
      .filter((r) => !r.superseded)
      .map(({ job }) => ({
        id: job._id.toHexString(),
        db: job.db,
        coll: job.coll,
        subscribers: job.subscribers,
        reason: job.reason,
        readings_queued: job.readings,
        batches_queued: job.batches,
        started_at: job.started_at.toISOString(),
      }));
  }

  /** Resolves when no snapshot runs in this process any more (tests). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()].map((r) => r.done));
  }

  private run(job: SnapshotJob): void {
    const id = job._id.toHexString();
    const entry = { job, reading: false, superseded: false, done: Promise.resolve() };
    entry.done = (async () => {
      while (!this.stopped && !entry.superseded) {
        try {
          if (await this.pass(entry)) return;
        } catch (err) {
          this.deps.log.warn({ snapshot: id, err: (err as Error).message, retryInMs: RETRY_MS }, 'snapshot interrupted; it goes on where it stopped');
          await sleep(RETRY_MS);
        }
      }
    })().finally(() => this.running.delete(id));
    this.running.set(id, entry);
  }

  /** Waits while every subscriber of the job has more than AHEAD_BATCHES batches to take. */
  private async keepPace(entry: { job: SnapshotJob; superseded: boolean }): Promise<void> {
    const behind = () => Math.min(...entry.job.subscribers.map((s) => this.deps.outbox.waitingBatches(s)));
    while (!this.stopped && !entry.superseded && behind() > AHEAD_BATCHES) await sleep(AHEAD_POLL_MS);
  }

  /** Queues what is left of the job; true when it finished, false when it was stopped or replaced. */
  private async pass(entry: { job: SnapshotJob; reading: boolean; superseded: boolean }): Promise<boolean> {
    const { job } = entry;
    const { outbox, client } = this.deps;
    const seq = job.after === null ? job.since : outbox.nextSeq();
    entry.reading = true;
    const cursor = client.db(job.db).collection(job.coll).find(resumeFilter(job.after)).sort({ _id: 1 }).batchSize(SNAPSHOT_BATCH);
    try {
      let batch: ReplicationOp[] = [];
      let last: unknown;
      const flush = async () => {
        if (batch.length === 0) return;
        await outbox.enqueue(job.subscribers, job.db, job.coll, batch, seq);
        job.after = { v: last };
        job.batches++;
        job.readings += batch.length;
        job.updated_at = new Date();
        await this.jobs.updateOne({ _id: job._id }, { $set: { after: job.after, updated_at: job.updated_at }, $inc: { batches: 1, readings: batch.length } });
        batch = [];
      };
      for await (const doc of cursor) {
        if (this.stopped || entry.superseded) return false;
        batch.push({ op: 'upsert', doc: doc as Document & { _id: unknown } });
        last = doc['_id'];
        if (batch.length >= SNAPSHOT_BATCH) {
          await flush();
          await this.keepPace(entry);
        }
      }
      await flush();
    } finally {
      await cursor.close().catch(() => undefined);
    }
    if (this.stopped || entry.superseded) return false;
    await outbox.enqueue(job.subscribers, job.db, job.coll, [{ op: 'snapshot_end', since: job.since }]);
    await this.jobs.deleteOne({ _id: job._id }); // done: only running jobs are kept
    this.deps.log.info(
      { snapshot: job._id.toHexString(), db: job.db, coll: job.coll, readings: job.readings, subscribers: job.subscribers },
      'snapshot queued',
    );
    return true;
  }
}
