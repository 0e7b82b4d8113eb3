/**
 * Digests of readings per time bucket, for anti-entropy (antientropy.ts): per bucket of
 * `timestamp` (an hour or a day, UTC), how many readings and a hash over their `_id` and content.
 *
 * The hash of a bucket is the sum (mod 2^64) of one hash per reading, so it does not depend on
 * the order readings are read in. A reading's hash covers its `_id` and every field, keys
 * sorted, numbers as numbers (an int32 20 and a double 20.0 hash alike, as they are the same
 * reading once they travelled as JSON); a replica is hashed as the reading it copies (its
 * `_origin_id` as `_id`, without the replica's own fields). Readings without a Date timestamp
 * fall in the bucket `none`.
 */
import { createHash } from 'node:crypto';
import { BSON, type Document } from 'mongodb';

export type BucketSize = 'hour' | 'day';

export interface BucketDigest {
  count: number;
  /** 16 hex digits. */
  hash: string;
}

export type Digests = Record<string, BucketDigest>;

/** The bucket of readings without a Date `timestamp`. */
export const NO_TIMESTAMP = 'none';

const MASK = (1n << 64n) - 1n;

/** The bucket key of a timestamp: `2017-07-01` (day) or `2017-07-01T13` (hour), UTC. */
export function bucketOf(timestamp: unknown, size: BucketSize): string {
  if (!(timestamp instanceof Date) || Number.isNaN(timestamp.getTime())) return NO_TIMESTAMP;
  const iso = timestamp.toISOString();
  return size === 'day' ? iso.slice(0, 10) : iso.slice(0, 13);
}

/** The time range [from, to) of a bucket key; null for the bucket without timestamps. */
export function bucketRange(key: string, size: BucketSize): { from: Date; to: Date } | null {
  if (key === NO_TIMESTAMP) return null;
  const from = new Date(size === 'day' ? `${key}T00:00:00.000Z` : `${key}:00:00.000Z`);
  if (Number.isNaN(from.getTime()) || bucketOf(from, size) !== key) throw new Error(`'${key}' is not a ${size} bucket`);
  return { from, to: new Date(from.getTime() + (size === 'day' ? 86_400_000 : 3_600_000)) };
}

/** Keys sorted at every level; BSON values (ObjectId, Date, …) are kept as they are. */
function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const o = v as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(o)
        .sort()
        .map((k) => [k, sorted(o[k])]),
    );
  }
  return v;
}

/** The hash of one reading (with its original `_id`). */
export function readingHash(doc: Document): bigint {
  const text = BSON.EJSON.stringify(sorted(doc), { relaxed: true });
  return createHash('sha1').update(text).digest().readBigUInt64BE(0);
}

/** Fields a replica has beyond the reading it copies. */
const REPLICA_FIELDS = new Set(['_id', '_origin', '_origin_id', '_rev']);

/** The reading a replica copies: its `_origin_id` as `_id`, without the replica's own fields. */
export function asReading(replica: Document): Document {
  const out: Document = { _id: replica['_origin_id'] };
  for (const [k, v] of Object.entries(replica)) if (!REPLICA_FIELDS.has(k)) out[k] = v;
  return out;
}

/** Adds readings up, bucket by bucket. */
export class DigestBuilder {
  private readonly buckets = new Map<string, { count: number; sum: bigint }>();

  constructor(private readonly size: BucketSize) {}

  add(reading: Document): void {
    const key = bucketOf(reading['timestamp'], this.size);
    const b = this.buckets.get(key) ?? { count: 0, sum: 0n };
    b.count++;
    b.sum = (b.sum + readingHash(reading)) & MASK;
    this.buckets.set(key, b);
  }

  result(): Digests {
    return Object.fromEntries(
      [...this.buckets.keys()].sort().map((k) => {
        const b = this.buckets.get(k)!;
        return [k, { count: b.count, hash: b.sum.toString(16).padStart(16, '0') }];
      }),
    );
  }
}

/** Buckets whose count or hash differ (a bucket missing on one side counts as empty there), sorted. */
export function differingBuckets(a: Digests, b: Digests): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].filter((k) => a[k]?.count !== b[k]?.count || a[k]?.hash !== b[k]?.hash).sort();
}
