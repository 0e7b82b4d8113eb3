/**
 * Replicas held for other nodes, in `<collection>_replicas` beside the node's own readings. The
 * listener watches only the own collection, so replicas are never forwarded again: two nodes
 * subscribed to each other exchange each write exactly once.
 *
 * A replica document is the reading plus `_id: "<origin>|<original _id>"`, `_origin`,
 * `_origin_id` and `_rev` (the origin's sequence number of the batch that last wrote it).
 *
 * Only newer revisions win: an operation with sequence `seq` changes a replica only if the
 * replica's `_rev` is at most `seq`. A delete leaves a tombstone `{_id, _origin, _rev, at}` in
 * `<collection>_replica_tombstones`, so an older upsert of a deleted reading (an origin sending
 * again a batch whose acknowledgement it lost, after a newer batch deleted the reading) is a
 * no-op instead of a resurrection. Tombstones expire after `tombstoneTtlS` (7 days by default,
 * a TTL index on `at`): an origin re-sends unacknowledged batches when it starts again, so a
 * tombstone must outlive the longest time an origin may be down between sending a batch and
 * writing its acknowledgement. A snapshot's end sets a floor per origin (`<origin>|*floor`):
 * every operation older than the snapshot is stale, and the snapshot itself removed what the
 * origin no longer has.
 */
import { MongoBulkWriteError, MongoServerError, type Collection, type Db, type Document } from 'mongodb';
import { ReadGate } from '../read-gate.js';
import { replicaId, type ReplicationOp } from './ops.js';

export const REPLICA_SUFFIX = '_replicas';
export const TOMBSTONE_SUFFIX = '_replica_tombstones';

type ReplicaRecord = Document & { _id: string };
interface Tombstone {
  _id: string;
  _origin: string;
  _rev?: number;
  at?: Date;
  /** Only on the floor document of an origin. */
  floor?: number;
}

export interface ApplyResult {
  upserts: number;
  deletes: number;
  /** Operations ignored because the replica (or its tombstone) is newer. */
  stale: number;
  /** How long the apply itself took (not the wait for its turn), in ms. */
  ms: number;
}

const floorId = (origin: string) => `${origin}|*floor`;

/** Batches (of any origin) applied at the same time; each origin's are applied one at a time. */
const APPLY_SLOTS = 2;

export class ReplicaStore {
  /** Origins this node holds replicas of, per collection (kept in memory, loaded at start). */
  private readonly origins = new Map<string, Set<string>>();
  /** Snapshot floors per collection and origin (loaded lazily). */
  private readonly floors = new Map<string, number>();
  /** Whether the last long run of upserts per collection and origin found most replicas there already (see `upsertAll`). */
  private readonly mostlyThere = new Map<string, boolean>();
  /** The newest tombstone revision per collection and origin (loaded lazily, then kept as this process writes them). */
  private readonly newestTombstones = new Map<string, number>();
  /** The apply in progress (or last queued) per collection and origin; see `apply`. */
  private readonly applying = new Map<string, Promise<void>>();
  /** Applies running at once, over all origins. */
  private readonly slots = new ReadGate({ slots: APPLY_SLOTS, queue: 1_000, waitMs: 3_600_000, what: 'replication applies' });

  constructor(
    private readonly client: { db(name: string): Db },
    private readonly opts: { tombstoneTtlS: number } = { tombstoneTtlS: 7 * 24 * 3600 },
  ) {}

  collection(db: string, coll: string): Collection<ReplicaRecord> {
    return this.client.db(db).collection<ReplicaRecord>(`${coll}${REPLICA_SUFFIX}`);
  }

  tombstones(db: string, coll: string): Collection<Tombstone> {
    return this.client.db(db).collection<Tombstone>(`${coll}${TOMBSTONE_SUFFIX}`);
  }

  async load(pairs: ReadonlyArray<[string, string]>): Promise<void> {
    for (const [db, coll] of pairs) {
      const c = this.collection(db, coll);
      await c.createIndex({ _origin: 1, timestamp: 1 }, { name: '_origin_1_timestamp_1' });
      await this.tombstones(db, coll).createIndex({ _origin: 1, _rev: 1 }, { name: '_origin_1__rev_1' });
      await this.ensureTtl(db, coll);
      const found = (await c.distinct('_origin')) as string[];
      this.origins.set(`${db}.${coll}`, new Set(found));
    }
  }

  /** The TTL index that expires tombstones (recreated when the configured time changed). */
  private async ensureTtl(db: string, coll: string): Promise<void> {
    const t = this.tombstones(db, coll);
    const spec = { name: 'at_ttl', expireAfterSeconds: this.opts.tombstoneTtlS };
    try {
      await t.createIndex({ at: 1 }, spec);
    } catch (err) {
      if (!(err instanceof MongoServerError) || !/already exists|IndexOptionsConflict|different options/i.test(err.message)) throw err;
      await t.dropIndex('at_ttl');
      await t.createIndex({ at: 1 }, spec);
    }
  }

  /** Origins with replicas here, for one collection. */
  originsOf(db: string, coll: string): string[] {
    return [...(this.origins.get(`${db}.${coll}`) ?? [])].sort();
  }

  private async floorOf(db: string, coll: string, origin: string): Promise<number> {
    const key = `${db}.${coll}\u0000${origin}`;
    let floor = this.floors.get(key);
    if (floor === undefined) {
      floor = (await this.tombstones(db, coll).findOne({ _id: floorId(origin) }))?.floor ?? 0;
      this.floors.set(key, floor);
    }
    return floor;
  }

  private async newestTombstone(db: string, coll: string, origin: string): Promise<number> {
    const key = `${db}.${coll}\u0000${origin}`;
    let rev = this.newestTombstones.get(key);
    if (rev === undefined) {
      const newest = await this.tombstones(db, coll)
        .find({ _origin: origin, _rev: { $exists: true } }, { projection: { _rev: 1 } })
        .sort({ _rev: -1 })
        .limit(1)
        .toArray();
      rev = newest[0]?._rev ?? 0;
      this.newestTombstones.set(key, Math.max(rev, this.newestTombstones.get(key) ?? 0));
    }
    return rev;
  }

  private tombstoneWritten(db: string, coll: string, origin: string, seq: number): void {
    const key = `${db}.${coll}\u0000${origin}`;
    const known = this.newestTombstones.get(key);
    if (known !== undefined) this.newestTombstones.set(key, Math.max(known, seq));
  }

  /**
   * Applies a batch from `origin` in order. Idempotent: applying it twice leaves the same state.
   * Operations older than what the replica (or its tombstone, or the origin's last snapshot)
   * already reflects are ignored.
   *
   * Every read and write names replicas by `_id` alone (`{_id}` or `{_id: {$in}}`): MongoDB and
   * the test server both answer those from the `_id` index, while a filter with one more field
   * (`{_id, _rev: {$lte: seq}}`) makes the test server scan the whole collection for each
   * document (14 ms per replace at 10,000 replicas: a resync of 18,000 existing replicas then
   * took longer than any delivery deadline). So the revisions are read first, in chunks, and the
   * writes go by `_id`; that read-then-write is safe because one origin's batches are applied
   * one at a time (below) and only this process writes that origin's replicas.
   */
  apply(db: string, coll: string, origin: string, seq: number, ops: readonly ReplicationOp[]): Promise<ApplyResult> {
    // One origin's batches are applied one at a time: the revision checks and the writes are
    // separate database calls, so a stalled apply of batch N must not land after batch N+1
    // deleted the reading and left its tombstone. And at most APPLY_SLOTS applies of any origin
    // run at once, so that a node subscribed to many origins that all resync does not run them
    // all together.
    const key = `${db}.${coll}\u0000${origin}`;
    const run = (this.applying.get(key) ?? Promise.resolve()).then(() => this.slots.run(() => this.applyInOrder(db, coll, origin, seq, ops)));
    // The chain only orders the applies; each caller still gets its own result or error from `run`.
    const next = run.then(
      () => undefined,
      () => undefined,
    );
    this.applying.set(key, next);
    void next.then(() => {
      if (this.applying.get(key) === next) this.applying.delete(key);
    });
    return run;
  }

  private async applyInOrder(db: string, coll: string, origin: string, seq: number, ops: readonly ReplicationOp[]): Promise<ApplyResult> {
    const started = performance.now();
    const result = await this.applyOps(db, coll, origin, seq, ops);
    result.ms = performance.now() - started;
    return result;
  }

  private async applyOps(db: string, coll: string, origin: string, seq: number, ops: readonly ReplicationOp[]): Promise<ApplyResult> {
    const c = this.collection(db, coll);
    const t = this.tombstones(db, coll);
    const result: ApplyResult = { upserts: 0, deletes: 0, stale: 0, ms: 0 };
    if (seq < (await this.floorOf(db, coll, origin))) {
      result.stale = ops.length;
      return result;
    }
    let run = new Map<string, ReplicaRecord>();
    let removals: string[] = [];
    const flush = async () => {
      if (run.size > 0) {
        const key = `${db}.${coll}\u0000${origin}`;
        const long = run.size > INSERT_FIRST_MAX;
        const readFirst = long && this.mostlyThere.get(key) === true;
        const { stale, existing } = await upsertAll(c, t, origin, run, seq, await this.newestTombstone(db, coll, origin), readFirst);
        if (long) this.mostlyThere.set(key, existing > run.size / 2);
        result.stale += stale;
        result.upserts -= stale;
      }
      if (removals.length > 0) {
        const revs = await revisions(c, removals);
        const gone = removals.filter((id) => revs.has(id) && (revs.get(id) ?? 0) <= seq);
        for (let i = 0; i < gone.length; i += IN_CHUNK) await c.deleteMany({ _id: { $in: gone.slice(i, i + IN_CHUNK) } });
        const at = new Date();
        await t.bulkWrite(
          removals.map((id) => ({ updateOne: { filter: { _id: id }, update: { $max: { _rev: seq }, $set: { _origin: origin, at } }, upsert: true } })),
          { ordered: false },
        );
        this.tombstoneWritten(db, coll, origin, seq);
      }
      run = new Map();
      removals = [];
    };
    for (const op of ops) {
      if (op.op === 'upsert') {
        if (removals.length > 0) await flush(); // keep the batch's order
        const { _id, ...fields } = op.doc;
        const rid = replicaId(origin, _id);
        if (run.has(rid)) result.upserts--; // the same reading twice in one run: the last one counts
        run.delete(rid);
        run.set(rid, { ...fields, _id: rid, _origin: origin, _origin_id: _id, _rev: seq });
        result.upserts++;
      } else if (op.op === 'delete') {
        if (run.size > 0) await flush();
        removals.push(replicaId(origin, op.id));
        result.deletes++;
      } else if (op.op === 'snapshot_end') {
        await flush();
        // A replica without `_rev` (written behind the mesh's back) is not from this snapshot either.
        const res = await c.deleteMany({ _origin: origin, ...olderThan(op.since) });
        result.deletes += res.deletedCount;
        await t.updateOne({ _id: floorId(origin) }, { $max: { floor: op.since }, $set: { _origin: origin } }, { upsert: true });
        const key = `${db}.${coll}\u0000${origin}`;
        this.floors.set(key, Math.max(this.floors.get(key) ?? 0, op.since));
      } else {
        await flush();
        const res = await c.deleteMany({ _origin: origin, ...bucketFilter(op.from, op.to), ...olderThan(op.since) });
        result.deletes += res.deletedCount;
      }
    }
    await flush();
    const key = `${db}.${coll}`;
    if (!this.origins.has(key)) this.origins.set(key, new Set());
    if (result.upserts > 0) this.origins.get(key)!.add(origin);
    return result;
  }
}

/** Replicas not written at or after `since` (also those with no `_rev` at all). */
function olderThan(since: number): Document {
  return { $or: [{ _rev: { $lt: since } }, { _rev: { $exists: false } }] };
}

/** Readings whose `timestamp` lies in [from, to); both null: readings without a timestamp. */
export function bucketFilter(from: Date | null, to: Date | null): Document {
  if (from === null || to === null) return { timestamp: null };
  return { timestamp: { $gte: from, $lt: to } };
}

const DUPLICATE_KEY = 11000;
/**
 * `_id`s per `$in` query. The test server finds them through its `_id` index but then matches
 * each found document against the whole list again, so its cost grows with the square of the
 * list (1,000 ids: 440 ms; 10 × 100: a tenth of that).
 */
const IN_CHUNK = 100;
/** Runs of upserts up to this long are always inserted first (see `upsertAll`). */
const INSERT_FIRST_MAX = 100;

function writeErrorsOf(err: MongoBulkWriteError) {
  return Array.isArray(err.writeErrors) ? err.writeErrors : err.writeErrors ? [err.writeErrors] : [];
}

/** The `_rev` of each of `ids` that exists in `c` (undefined: it exists without one). */
async function revisions(c: Collection<ReplicaRecord>, ids: readonly string[]): Promise<Map<string, number | undefined>> {
  const found = new Map<string, number | undefined>();
  for (let i = 0; i < ids.length; i += IN_CHUNK) {
    const docs = await c.find({ _id: { $in: ids.slice(i, i + IN_CHUNK) } }, { projection: { _rev: 1 } }).toArray();
    for (const d of docs) found.set(d._id, typeof d['_rev'] === 'number' ? d['_rev'] : undefined);
  }
  return found;
}

/**
 * Upserts `run` (replicas of `origin` by `_id`, written at revision `seq`): new ones are inserted,
 * existing ones replaced, unless the replica or its tombstone holds a newer revision. Returns how
 * many were older (skipped). `newestTombstone`: no tombstone of this origin is newer than this.
 *
 * A run is inserted first, and only the readings that exist already have their revisions read
 * (live writes and initial syncs: mostly new readings); a long run whose previous long run found
 * most replicas there already (a resync) has its revisions read first instead, which spares the
 * test server an insert attempt per reading (per 1,000: inserting new ones 121 ms, failing to
 * insert existing ones 98 ms, reading revisions 137 ms).
 */
async function upsertAll(
  c: Collection<ReplicaRecord>,
  t: Collection<Tombstone>,
  origin: string,
  run: Map<string, ReplicaRecord>,
  seq: number,
  newestTombstone: number,
  readFirst: boolean,
): Promise<{ stale: number; existing: number }> {
  let stale = 0;
  let existing = 0;
  // A tombstone newer than this batch exists only when an old batch comes again.
  if (seq < newestTombstone) {
    const newer = await t.find({ _origin: origin, _rev: { $gt: seq } }, { projection: { _id: 1 } }).toArray();
    for (const d of newer) if (run.delete(d._id)) stale++;
  }
  const replaces: ReplicaRecord[] = [];
  /** Of `docs`, replaced those whose stored revision is not newer; the rest are stale. */
  const sortOut = async (docs: ReplicaRecord[]) => {
    const revs = await revisions(
      c,
      docs.map((d) => d._id),
    );
    const absent: ReplicaRecord[] = [];
    for (const d of docs) {
      if (!revs.has(d._id)) absent.push(d);
      else if ((revs.get(d._id) ?? 0) > seq) stale++;
      else replaces.push(d);
    }
    existing += docs.length - absent.length;
    return absent;
  };
  let inserts = [...run.values()];
  if (readFirst) inserts = await sortOut(inserts);
  if (inserts.length > 0) {
    try {
      await c.insertMany(inserts, { ordered: false });
    } catch (err) {
      if (!(err instanceof MongoBulkWriteError)) throw err;
      const errors = writeErrorsOf(err);
      if (errors.length === 0 || errors.some((e) => e.code !== DUPLICATE_KEY)) throw err;
      // They exist already (or were written meanwhile): replaced if not newer.
      const absent = await sortOut(errors.map((e) => inserts[e.index]!));
      if (absent.length > 0) throw err; // reported as duplicates, yet not there: not ours to guess
    }
  }
  if (replaces.length > 0) {
    await c.bulkWrite(
      replaces.map((d) => ({ replaceOne: { filter: { _id: d._id }, replacement: d } })),
      { ordered: false },
    );
  }
  return { stale, existing };
}
