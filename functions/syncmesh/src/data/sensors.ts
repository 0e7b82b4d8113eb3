/**
 * Readings in one MongoDB collection. Aggregates run in the database ($match + $group), so only
 * a few numbers per node leave it. Filters are built from typed, validated values only: no
 * caller-supplied object ever reaches a query.
 */
import { ObjectId, type Collection, type Db, type Document, type Filter } from 'mongodb';
import { ALL_STATS, METRICS, emptyAggregate, type AggregateNeeds, type AggregatePartial, type SensorDoc } from './partials.js';

/** Fields a reading may have, in the order they are stored. */
export const SENSOR_FIELDS = ['sensor_id', 'location', 'lat', 'lon', 'timestamp', 'pressure', 'temperature', 'humidity'] as const;
export type SensorField = (typeof SENSOR_FIELDS)[number];

export interface SensorFilter {
  start?: Date | undefined;
  end?: Date | undefined;
  sensorId?: number | undefined;
}

/** A reading as stored. */
export interface StoredSensor {
  _id?: ObjectId | string;
  sensor_id?: number | null;
  location?: number | null;
  lat?: number | null;
  lon?: number | null;
  timestamp: Date;
  pressure?: number | null;
  temperature?: number | null;
  humidity?: number | null;
}

/** `_id` as the API shows it: ObjectIds as 24 hex digits, anything else as its string. */
export function idToString(id: unknown): string {
  return id instanceof ObjectId ? id.toHexString() : String(id);
}

/** The stored _id for an API id: 24 hex digits are an ObjectId, anything else is a string id. */
export function idFromString(id: string): ObjectId | string {
  return /^[0-9a-fA-F]{24}$/.test(id) ? new ObjectId(id) : id;
}

export function toSensorDoc(stored: Document): SensorDoc {
  // A replica shows the reading's original _id, as its origin node would.
  const doc: SensorDoc = { _id: idToString(stored['_origin_id'] ?? stored['_id']) };
  for (const f of SENSOR_FIELDS) {
    if (!(f in stored)) continue;
    const v = stored[f];
    if (f === 'timestamp') doc.timestamp = v instanceof Date ? v.toISOString() : v == null ? null : String(v);
    else (doc as unknown as Record<string, unknown>)[f] = v;
  }
  return doc;
}

export function buildFilter(f: SensorFilter, origin?: string): Filter<SensorRecord> {
  const filter: Filter<SensorRecord> = origin === undefined ? {} : { _origin: origin };
  if (f.start !== undefined || f.end !== undefined) {
    const range: Record<string, Date> = {};
    if (f.start !== undefined) range['$gte'] = f.start;
    if (f.end !== undefined) range['$lte'] = f.end;
    filter['timestamp'] = range;
  }
  if (f.sensorId !== undefined) filter['sensor_id'] = f.sensorId;
  return filter;
}

/**
 * The $group stage, with only the statistics `needs` asks for (each accumulator costs a pass of
 * work per reading in the database). Per metric, n counts the readings that have a numeric value
 * ({$gt: [field, null]} is true for numbers and false for null or missing; it works on MongoDB
 * 4.4-7.0 and on the test server, which lacks $isNumber). Metrics are only ever written as
 * numbers or null by this function and the loader.
 */
function groupStage(needs: AggregateNeeds): Document {
  const group: Document = { _id: null, count: { $sum: 1 } };
  for (const m of METRICS) {
    const want = needs[m];
    if (want.has('n')) group[`${m}_n`] = { $sum: { $cond: [{ $gt: [`$${m}`, null] }, 1, 0] } };
    if (want.has('sum')) group[`${m}_sum`] = { $sum: `$${m}` };
    if (want.has('min')) group[`${m}_min`] = { $min: `$${m}` };
    if (want.has('max')) group[`${m}_max`] = { $max: `$${m}` };
  }
  return { $group: group };
}

export function aggregatePipeline(f: SensorFilter, origin?: string, needs: AggregateNeeds = ALL_STATS): Document[] {
  const filter = buildFilter(f, origin);
  return Object.keys(filter).length > 0 ? [{ $match: filter }, groupStage(needs)] : [groupStage(needs)];
}

const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const numOrNull = (v: unknown): number | null => (typeof v === 'number' ? v : null);

/** Stored readings have ObjectId _ids (generated) or string _ids (given by a client or a replica). */
type SensorRecord = Document & { _id: ObjectId | string };

export class SensorStore {
  readonly collection: Collection<SensorRecord>;

  /**
   * With `origin`, the store is a read-only view of the replicas of that node's readings (in the
   * replica collection), used when this node answers for a node that does not answer.
   */
  constructor(
    db: Db,
    collectionName: string,
    readonly origin?: string,
    /** Reads stop on the server after this long (maxTimeMS; the request deadline); undefined: no limit. */
    readonly maxTimeMs?: number,
  ) {
    this.collection = db.collection<SensorRecord>(collectionName);
  }

  /** Indexes the queries use; created at start (idempotent). */
  async ensureIndexes(): Promise<void> {
    await this.collection.createIndex({ timestamp: 1 }, { name: 'timestamp_1' });
    await this.collection.createIndex({ sensor_id: 1, timestamp: 1 }, { name: 'sensor_id_1_timestamp_1' });
  }

  /** Count and the statistics in `needs` (the others stay empty: 0 or null). */
  async aggregate(f: SensorFilter, needs: AggregateNeeds = ALL_STATS): Promise<AggregatePartial> {
    const [row] = await this.collection.aggregate(aggregatePipeline(f, this.origin, needs), this.maxTimeMs ? { maxTimeMS: this.maxTimeMs } : {}).toArray();
    const out = emptyAggregate();
    if (!row) return out;
    out.count = num(row['count']);
    for (const m of METRICS) {
      out.metrics[m] = {
        n: num(row[`${m}_n`]),
        sum: num(row[`${m}_sum`]),
        min: numOrNull(row[`${m}_min`]),
        max: numOrNull(row[`${m}_max`]),
      };
    }
    return out;
  }

  /** Readings in (timestamp, _id) order, projected to `fields` (all when undefined). */
  async find(f: SensorFilter, limit: number | null, fields?: readonly SensorField[]): Promise<SensorDoc[]> {
    // MongoDB reads limit(0) as "no limit": `sensors(limit: 0)` asks for none
    if (limit === 0) return [];
    const projection: Document | undefined = fields ? Object.fromEntries(fields.map((k) => [k, 1])) : undefined;
    // Sorting needs the timestamp even when the caller did not ask for it.
    if (projection) projection['timestamp'] = 1;
    let cursor = this.collection
      .find(buildFilter(f, this.origin), {
        ...(projection ? { projection: { ...projection, _origin_id: 1 } } : {}),
        ...(this.maxTimeMs ? { maxTimeMS: this.maxTimeMs } : {}),
      })
      .sort(this.origin === undefined ? { timestamp: 1, _id: 1 } : { timestamp: 1, _origin_id: 1 });
    if (limit !== null) cursor = cursor.limit(limit);
    const docs = await cursor.toArray();
    return docs.map(toSensorDoc);
  }

  async findById(id: string): Promise<SensorDoc | null> {
    const filter: Filter<SensorRecord> = this.origin === undefined ? { _id: idFromString(id) } : { _origin: this.origin, _origin_id: idFromString(id) };
    const doc = await this.collection.findOne(filter);
    return doc ? toSensorDoc(doc) : null;
  }

  async estimate(): Promise<number> {
    return this.origin === undefined ? this.collection.estimatedDocumentCount() : this.collection.countDocuments({ _origin: this.origin });
  }

  async insert(docs: StoredSensor[]): Promise<string[]> {
    if (docs.length === 0) return [];
    const withIds = docs.map((d) => ({ ...d, _id: d._id ?? new ObjectId() }));
    await this.collection.insertMany(withIds, { ordered: true });
    return withIds.map((d) => idToString(d._id));
  }

  async update(id: string, set: Partial<StoredSensor>): Promise<SensorDoc | null> {
    const _id = idFromString(id);
    const res = await this.collection.updateOne({ _id }, { $set: set });
    if (res.matchedCount === 0) return null;
    return this.findById(id);
  }

  async deleteById(id: string): Promise<SensorDoc | null> {
    const _id = idFromString(id);
    const doc = await this.collection.findOne({ _id });
    if (!doc) return null;
    await this.collection.deleteOne({ _id });
    return toSensorDoc(doc);
  }

  async deleteInRange(f: SensorFilter): Promise<number> {
    const res = await this.collection.deleteMany(buildFilter(f));
    return res.deletedCount;
  }
}
