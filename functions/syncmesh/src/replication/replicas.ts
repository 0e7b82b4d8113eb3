/**
 * Replicas held for other nodes, in `<collection>_replicas` beside the node's own readings. The
 * listener watches only the own collection, so replicas are never forwarded again: two nodes
 * subscribed to each other exchange each write exactly once.
 *
 * A replica document is the reading plus `_id: "<origin>|<original _id>"`, `_origin`,
 * `_origin_id` and `_rev` (the origin's sequence number of the batch that last wrote it).
 */
import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Db, type Document } from 'mongodb';
import { replicaId, type ReplicationOp } from './ops.js';

export const REPLICA_SUFFIX = '_replicas';

type ReplicaRecord = Document & { _id: string };

export class ReplicaStore {
  /** Origins this node holds replicas of, per collection (kept in memory, loaded at start). */
  private readonly origins = new Map<string, Set<string>>();

  constructor(private readonly client: { db(name: string): Db }) {}

  collection(db: string, coll: string): Collection<ReplicaRecord> {
    return this.client.db(db).collection<ReplicaRecord>(`${coll}${REPLICA_SUFFIX}`);
  }

  async load(pairs: ReadonlyArray<[string, string]>): Promise<void> {
    for (const [db, coll] of pairs) {
      const c = this.collection(db, coll);
      await c.createIndex({ _origin: 1, timestamp: 1 }, { name: '_origin_1_timestamp_1' });
      const found = (await c.distinct('_origin')) as string[];
      this.origins.set(`${db}.${coll}`, new Set(found));
    }
  }

  /** Origins with replicas here, for one collection. */
  originsOf(db: string, coll: string): string[] {
    return [...(this.origins.get(`${db}.${coll}`) ?? [])].sort();
  }

  /**
   * Applies a batch from `origin` in order. Idempotent: applying it twice leaves the same state.
   * A run of upserts is inserted first (most replicas are new, and an insert costs the database
   * a fraction of an upsert); the ones that exist already are then replaced.
   */
  async apply(db: string, coll: string, origin: string, seq: number, ops: readonly ReplicationOp[]): Promise<{ upserts: number; deletes: number }> {
    const c = this.collection(db, coll);
    let upserts = 0;
    let deletes = 0;
    let run: ReplicaRecord[] = [];
    let removals: AnyBulkWriteOperation<ReplicaRecord>[] = [];
    const flush = async () => {
      if (run.length > 0) await upsertAll(c, run);
      if (removals.length > 0) await c.bulkWrite(removals, { ordered: true });
      run = [];
      removals = [];
    };
    for (const op of ops) {
      if (op.op === 'upsert') {
        if (removals.length > 0) await flush(); // keep the batch's order
        const { _id, ...fields } = op.doc;
        const rid = replicaId(origin, _id);
        run.push({ ...fields, _id: rid, _origin: origin, _origin_id: _id, _rev: seq });
        upserts++;
      } else if (op.op === 'delete') {
        if (run.length > 0) await flush();
        removals.push({ deleteOne: { filter: { _id: replicaId(origin, op.id) } } });
        deletes++;
      } else {
        await flush();
        const res = await c.deleteMany({ _origin: origin, _rev: { $lt: op.since } });
        deletes += res.deletedCount;
      }
    }
    await flush();
    const key = `${db}.${coll}`;
    if (!this.origins.has(key)) this.origins.set(key, new Set());
    if (upserts > 0) this.origins.get(key)!.add(origin);
    return { upserts, deletes };
  }
}

const DUPLICATE_KEY = 11000;

/** Upserts `docs` by _id: inserts them, then replaces those that already existed. */
async function upsertAll(c: Collection<ReplicaRecord>, docs: ReplicaRecord[]): Promise<void> {
  const replace = (d: ReplicaRecord): AnyBulkWriteOperation<ReplicaRecord> => ({ replaceOne: { filter: { _id: d._id }, replacement: d, upsert: true } });
  if (new Set(docs.map((d) => d._id)).size !== docs.length) {
    // the same reading twice in one run: only ordered upserts keep the last one
    await c.bulkWrite(docs.map(replace), { ordered: true });
    return;
  }
  try {
    await c.insertMany(docs, { ordered: false });
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) throw err;
    const errors = Array.isArray(err.writeErrors) ? err.writeErrors : err.writeErrors ? [err.writeErrors] : [];
    if (errors.length === 0 || errors.some((e) => e.code !== DUPLICATE_KEY)) throw err;
    await c.bulkWrite(errors.map((e) => replace(docs[e.index]!)), { ordered: true });
  }
}
