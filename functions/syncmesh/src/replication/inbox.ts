/**
 * The subscriber's side of a delivery: every batch an origin sends is applied once.
 *
 * A batch is known by its origin and id (the origin's outbox `_id`). A delivery of a batch that
 * is being applied waits for that apply instead of starting another one on top of it; a
 * delivery of a batch already applied is acknowledged at once. The outcome of an apply is
 * remembered in memory (the last REMEMBER_BATCHES batches) and, before the batch is
 * acknowledged, in `syncmesh_meta.replication_applied` (`{_id: "<origin>|<batch id>", applies}`,
 * expiring with the tombstones), so that a batch sent again after this node restarted is not
 * applied again either: the origin says so (`retry`), and only then are those records read. Only
 * an apply cut short by a crash is applied again (it never finished).
 *
 * A request waits for its applies up to the `wait_ms` it asks for; batches still being applied
 * then are answered 202 `applying`, and the origin asks for them with POST /replicate/status
 * instead of sending them again. Each answer reports how long each batch took to apply, which the
 * origin sizes its next requests by (flow.ts).
 */
import type { Collection, Db } from 'mongodb';
import type { Logger } from '@syncmesh-edge/log';
import { SyncmeshError } from '../errors.js';
import type { ReplicationOp } from './ops.js';
import type { ApplyResult, ReplicaStore } from './replicas.js';

/** Applied batches remembered in memory (id and outcome, no data). */
const REMEMBER_BATCHES = 20_000;
/** Batches of one origin waiting for their apply or being applied; more is refused (503, retried). */
const MAX_WAITING_BATCHES = 200;
/** Longest wait a request may ask for; an origin asks for less than its own deadline. */
export const MAX_WAIT_MS = 30_000;
/** After a failed write of a record (the database went away right after the apply), the next try. */
const RECORD_RETRY_MS = 1_000;

/** One batch as received in /replicate. */
export interface IncomingBatch {
  /** The origin's id of the batch; older origins send none (such a batch is applied every time it comes, as before). */
  id?: string | undefined;
  db: string;
  coll: string;
  seq: number;
  ops: ReplicationOp[];
}

/** What an origin learns about its batches. */
export interface DeliveryReport {
  /** Applied (now or before): the origin may drop them. */
  acked: string[];
  /** Still being applied (or waiting for their turn): ask again later, do not send them again. */
  applying: string[];
  /** Not known here (never received, or its apply failed): send them again. */
  unknown: string[];
  /** Apply time of the batches acknowledged in this answer whose time is known, for flow control. */
  applied: Array<{ id: string; ops: number; ms: number }>;
  /** Totals over the batches this request applied (not those applied before). */
  upserts: number;
  deletes: number;
  stale: number;
}

interface Outcome {
  ops: number;
  ms: number;
  result: ApplyResult;
}

type Entry = { state: 'applying'; done: Promise<Outcome> } | { state: 'applied'; outcome: Outcome | undefined };

/** Counters of one origin since this process started (shown in /readyz). */
export interface OriginCounters {
  /** Batches waiting for their turn or being applied now. */
  applying: number;
  /** Applies started (each batch id once, unless an apply failed and the batch came again). */
  applies: number;
  /** Batches whose apply finished. */
  applied_batches: number;
  /** Deliveries of a batch that was already applied or being applied: not applied again. */
  duplicate_deliveries: number;
  /** Applies that failed (the batch is applied when it comes again). */
  failed_applies: number;
  /** Operations in the applied batches. */
  readings_applied: number;
  /** Time spent applying, ms. */
  apply_ms: number;
  last_apply_at: string | null;
}

interface AppliedRecord {
  _id: string;
  origin: string;
  at: Date;
  /** Applies of this batch that finished (1; more only if a record was lost). */
  applies: number;
}

let anonymous = 0;
/** The batch's id; one of its own (never seen again) for a batch without one. */
const idOf = (b: IncomingBatch) => (b.id ??= `unnamed-${++anonymous}`);
const keyOf = (origin: string, id: string) => `${origin}|${id}`;

export class Inbox {
  private readonly entries = new Map<string, Entry>();
  private readonly counters = new Map<string, OriginCounters>();
  private readonly records: Collection<AppliedRecord>;
  /** Records waiting to be written, and whether a write is under way. */
  private queued: Array<{ origin: string; key: string; done: () => void }> = [];
  private writingRecords = false;
  /** Records whose write failed, written again later. */
  private unwritten: Array<{ origin: string; key: string }> = [];
  private recordTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly replicas: ReplicaStore,
    meta: Db,
    private readonly opts: { ttlS: number; log: Logger },
  ) {
    this.records = meta.collection<AppliedRecord>('replication_applied');
  }

  async start(): Promise<void> {
    await this.records.createIndex({ at: 1 }, { name: 'at_ttl', expireAfterSeconds: this.opts.ttlS });
  }

  async stop(): Promise<void> {
    clearTimeout(this.recordTimer);
    this.recordTimer = undefined;
    await this.writeUnwritten().catch((err: unknown) =>
      this.opts.log.warn({ err: (err as Error).message }, 'records of applied batches not written at stop; those batches are applied again if they come again'),
    );
  }

  /** Counters per origin. */
  stats(): Record<string, OriginCounters> {
    return Object.fromEntries([...this.counters].sort(([a], [b]) => a.localeCompare(b)).map(([o, c]) => [o, { ...c, apply_ms: Math.round(c.apply_ms) }]));
  }

  private countersOf(origin: string): OriginCounters {
    let c = this.counters.get(origin);
    if (!c) {
      c = {
        applying: 0,
        applies: 0,
        applied_batches: 0,
        duplicate_deliveries: 0,
        failed_applies: 0,
        readings_applied: 0,
        apply_ms: 0,
        last_apply_at: null,
      };
      this.counters.set(origin, c);
    }
    return c;
  }

  /**
   * Applies `batches` of `origin` (in order, each once) and reports on them after at most
   * `waitMs` (undefined: until all are applied). `retry`: the origin may have sent some of them
   * before, so the records of applied batches are read first.
   */
  async receive(
    origin: string,
    batches: readonly IncomingBatch[],
    opts: { waitMs?: number | undefined; retry?: boolean | undefined },
  ): Promise<DeliveryReport> {
    const counters = this.countersOf(origin);
    const fresh = batches.filter((b) => !this.entries.has(keyOf(origin, idOf(b))));
    if (counters.applying + fresh.length > MAX_WAITING_BATCHES) {
      throw new SyncmeshError('EDGE_SYNCMESH_BUSY', `this node is already applying ${counters.applying} batches of '${origin}'; retry in a moment`, {
        details: { allowed: `at most ${MAX_WAITING_BATCHES} batches of one origin waiting to be applied` },
      });
    }
    if (opts.retry && fresh.length > 0) await this.recall(origin, fresh.map(idOf));
    const ids: string[] = [];
    const started = new Set<string>();
    for (const b of batches) {
      const id = idOf(b);
      ids.push(id);
      const key = keyOf(origin, id);
      if (this.entries.has(key)) {
        counters.duplicate_deliveries++;
        continue;
      }
      started.add(id);
      this.begin(origin, key, b);
    }
    const report = await this.report(origin, ids, opts.waitMs);
    // An apply this request started failed: its error is the answer (503 when the database is
    // down); the origin sends the batch again later.
    for (const id of report.unknown) {
      const key = keyOf(origin, id);
      const error = this.failures.get(key);
      if (started.has(id) && error) {
        this.failures.delete(key);
        throw error;
      }
    }
    for (const a of report.applied) {
      if (!started.has(a.id)) continue;
      const outcome = this.outcomeOf(origin, a.id);
      if (!outcome) continue;
      report.upserts += outcome.result.upserts;
      report.deletes += outcome.result.deletes;
      report.stale += outcome.result.stale;
    }
    return report;
  }

  /** POST /replicate/status: what became of these batches, waiting up to `waitMs` for those being applied. */
  async status(origin: string, ids: readonly string[], waitMs: number): Promise<DeliveryReport> {
    const unknown = ids.filter((id) => !this.entries.has(keyOf(origin, id)));
    if (unknown.length > 0) await this.recall(origin, unknown);
    return this.report(origin, ids, waitMs);
  }

  /** Errors of failed applies, until the request that started them reports them. */
  private readonly failures = new Map<string, Error>();

  private begin(origin: string, key: string, b: IncomingBatch): void {
    const counters = this.countersOf(origin);
    counters.applying++;
    counters.applies++;
    const done = this.replicas.apply(b.db, b.coll, origin, b.seq, b.ops).then(
      async (result) => {
        const outcome: Outcome = { ops: b.ops.length, ms: Math.round(result.ms), result };
        await this.record(origin, key);
        counters.applying--;
        counters.applied_batches++;
        counters.readings_applied += b.ops.length;
        counters.apply_ms += result.ms;
        counters.last_apply_at = new Date().toISOString();
        this.remember(key, { state: 'applied', outcome });
        return outcome;
      },
      (err: unknown) => {
        counters.applying--;
        counters.failed_applies++;
        this.entries.delete(key);
        this.failures.set(key, err as Error);
        // bounded: a failure nobody reports is forgotten with the oldest ones
        if (this.failures.size > MAX_WAITING_BATCHES) this.failures.delete(this.failures.keys().next().value!);
        this.opts.log.warn({ origin, err: (err as Error).message }, 'applying a replication batch failed; it is applied when the origin sends it again');
        throw err;
      },
    );
    done.catch(() => undefined); // reported through `failures`
    this.entries.set(key, { state: 'applying', done });
  }

  private remember(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > REMEMBER_BATCHES) {
      const oldest = this.entries.entries().next().value!;
      if (oldest[1].state === 'applying') break; // never forgets work in progress (bounded by MAX_WAITING_BATCHES per origin)
      this.entries.delete(oldest[0]);
    }
  }

  private outcomeOf(origin: string, id: string): Outcome | undefined {
    const e = this.entries.get(keyOf(origin, id));
    return e?.state === 'applied' ? e.outcome : undefined;
  }

  /** Reads the records of applied batches among `ids` into memory. */
  private async recall(origin: string, ids: readonly string[]): Promise<void> {
    const keys = ids.map((id) => keyOf(origin, id));
    for (let i = 0; i < keys.length; i += 100) {
      const found = await this.records.find({ _id: { $in: keys.slice(i, i + 100) } }, { projection: { _id: 1 } }).toArray();
      for (const r of found) if (!this.entries.has(r._id)) this.remember(r._id, { state: 'applied', outcome: undefined });
    }
  }

  private async report(origin: string, ids: readonly string[], waitMs: number | undefined): Promise<DeliveryReport> {
    const pending = ids.map((id) => this.entries.get(keyOf(origin, id))).filter((e) => e?.state === 'applying');
    if (pending.length > 0) {
      const all = Promise.allSettled(pending.map((e) => (e as { done: Promise<Outcome> }).done));
      if (waitMs === undefined) await all;
      else {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, Math.min(waitMs, MAX_WAIT_MS))))]);
        clearTimeout(timer);
      }
    }
    const report: DeliveryReport = { acked: [], applying: [], unknown: [], applied: [], upserts: 0, deletes: 0, stale: 0 };
    for (const id of ids) {
      const e = this.entries.get(keyOf(origin, id));
      if (!e) report.unknown.push(id);
      else if (e.state === 'applying') report.applying.push(id);
      else {
        report.acked.push(id);
        if (e.outcome) report.applied.push({ id, ops: e.outcome.ops, ms: e.outcome.ms });
      }
    }
    return report;
  }

  /**
   * Writes the record of an applied batch; resolves once it is written (the batch is acknowledged
   * after that). Records that come while a write is under way go together in the next one. A
   * failed write is tried again later, and the batch counts as applied meanwhile.
   */
  private record(origin: string, key: string): Promise<void> {
    return new Promise((resolve) => {
      this.queued.push({ origin, key, done: resolve });
      if (!this.writingRecords) void this.writeQueued();
    });
  }

  private async writeQueued(): Promise<void> {
    this.writingRecords = true;
    try {
      while (this.queued.length > 0) {
        const batch = this.queued;
        this.queued = [];
        try {
          await this.writeRecords(batch);
        } catch (err) {
          this.opts.log.warn({ err: (err as Error).message, records: batch.length }, 'records of applied batches were not written; trying again');
          this.unwritten.push(...batch);
          this.retryUnwritten();
        }
        for (const r of batch) r.done();
      }
    } finally {
      this.writingRecords = false;
    }
  }

  private writeRecords(records: ReadonlyArray<{ origin: string; key: string }>) {
    const at = new Date();
    return this.records.bulkWrite(
      records.map((r) => ({ updateOne: { filter: { _id: r.key }, update: { $set: { origin: r.origin, at }, $inc: { applies: 1 } }, upsert: true } })),
      { ordered: false },
    );
  }

  private retryUnwritten(): void {
    this.recordTimer ??= setTimeout(() => {
      this.recordTimer = undefined;
      this.writeUnwritten().catch(() => this.retryUnwritten());
    }, RECORD_RETRY_MS);
    this.recordTimer.unref();
  }

  private async writeUnwritten(): Promise<void> {
    if (this.unwritten.length === 0) return;
    const batch = this.unwritten;
    this.unwritten = [];
    try {
      await this.writeRecords(batch);
    } catch (err) {
      this.unwritten.unshift(...batch);
      throw err;
    }
  }
}
