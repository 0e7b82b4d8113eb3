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
import { MongoBulkWriteError, MongoServerError, type AnyBulkWriteOperation, type Collection, type Db, type Document } from 'mongodb';
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
}

const floorId = (origin: string) => `${origin}|*floor`;

export class ReplicaStore {
  /** Origins this node holds replicas of, per collection (kept in memory, loaded at start). */
  private readonly origins = new Map<string, Set<string>>();
  /** Snapshot floors per collection and origin (loaded lazily). */
  private readonly floors = new Map<string, number>();
  /** The apply in progress (or last queued) per collection and origin; see `apply`. */
  private readonly applying = new Map<string, Promise<void>>();

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

  /**
   * Applies a batch from `origin` in order. Idempotent: applying it twice leaves the same state.
   * Operations older than what the replica (or its tombstone, or the origin's last snapshot)
   * already reflects are ignored. A run of upserts is inserted first (most replicas are new, and
   * an insert costs the database a fraction of an upsert); the ones that exist already are then
   * replaced if they are not newer.
   */
  apply(db: string, coll: string, origin: string, seq: number, ops: readonly ReplicationOp[]): Promise<ApplyResult> {
    // One origin's batches are applied one at a time: the revision checks and the writes are
    // separate database calls, so a stalled apply of batch N (whose origin timed out and resent
    // it) must not land after batch N+1 deleted the reading and left its tombstone.
    const key = `${db}.${coll}\u0000${origin}`;
    const run = (this.applying.get(key) ?? Promise.resolve()).then(() => this.applyInOrder(db, coll, origin, seq, ops));
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
    const c = this.collection(db, coll);
    const t = this.tombstones(db, coll);
    const result: ApplyResult = { upserts: 0, deletes: 0, stale: 0 };
    if (seq < (await this.floorOf(db, coll, origin))) {
      result.stale = ops.length;
      return result;
    }
    let run = new Map<string, ReplicaRecord>();
    let removals: string[] = [];
    const flush = async () => {
      if (run.size > 0) {
        const ids = [...run.keys()];
        const newer = await t.find({ _id: { $in: ids }, _rev: { $gt: seq } }, { projection: { _id: 1 } }).toArray();
        for (const d of newer) run.delete(d._id);
        result.stale += newer.length;
        result.upserts -= newer.length;
        const older = await upsertAll(c, [...run.values()], seq);
        result.stale += older;
        result.upserts -= older;
      }
      if (removals.length > 0) {
        await c.bulkWrite(
          removals.map((id) => ({ deleteOne: { filter: { _id: id, _rev: { $lte: seq } } } })),
          { ordered: false },
        );
        const at = new Date();
        await t.bulkWrite(
          removals.map((id) => ({ updateOne: { filter: { _id: id }, update: { $max: { _rev: seq }, $set: { _origin: origin, at } }, upsert: true } })),
          { ordered: false },
        );
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
      } else {
        await flush();
        const res = await c.deleteMany({ _origin: origin, _rev: { $lt: op.since } });
        result.deletes += res.deletedCount;
        await t.updateOne({ _id: floorId(origin) }, { $max: { floor: op.since }, $set: { _origin: origin } }, { upsert: true });
        const key = `${db}.${coll}\u0000${origin}`;
        this.floors.set(key, Math.max(this.floors.get(key) ?? 0, op.since));
      }
    }
    await flush();
    const key = `${db}.${coll}`;
    if (!this.origins.has(key)) this.origins.set(key, new Set());
    if (result.upserts > 0) this.origins.get(key)!.add(origin);
    return result;
  }
}

const DUPLICATE_KEY = 11000;

function writeErrorsOf(err: MongoBulkWriteError) {
  return Array.isArray(err.writeErrors) ? err.writeErrors : err.writeErrors ? [err.writeErrors] : [];
}

/**
 * Upserts `docs` (distinct _ids) written at revision `seq`: inserts them, then replaces those
 * that already existed unless they hold a newer revision. Returns how many were older (skipped).
 */
async function upsertAll(c: Collection<ReplicaRecord>, docs: ReplicaRecord[], seq: number): Promise<number> {
  if (docs.length === 0) return 0;
  let existing: ReplicaRecord[] = [];
  try {
    await c.insertMany(docs, { ordered: false });
    return 0;
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) throw err;
    const errors = writeErrorsOf(err);
    if (errors.length === 0 || errors.some((e) => e.code !== DUPLICATE_KEY)) throw err;
    existing = errors.map((e) => docs[e.index]!);
  }
  // Replaced only where the stored revision is not newer; where it is, the filter matches
  // nothing and the upsert's insert hits the existing _id: that reading is stale.
  const replace = (d: ReplicaRecord): AnyBulkWriteOperation<ReplicaRecord> => ({
    replaceOne: { filter: { _id: d._id, _rev: { $lte: seq } }, replacement: d, upsert: true },
  });
  try {
    await c.bulkWrite(existing.map(replace), { ordered: false });
    return 0;
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) throw err;
    const errors = writeErrorsOf(err);
    if (errors.length === 0 || errors.some((e) => e.code !== DUPLICATE_KEY)) throw err;
    return errors.length;
  }
}
