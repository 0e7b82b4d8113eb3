/**
 * Replication operations: what an origin node sends to its subscribers. Built from the
 * listener's change events; applied by subscribers as idempotent writes to their replica
 * collection, so a redelivered operation changes nothing.
 */
import { BSON, type Document } from 'mongodb';
import { z } from 'zod';

/** Insert, update or replace: the reading as it is now at the origin. */
export interface UpsertOp {
  op: 'upsert';
  doc: Document & { _id: unknown };
}

/** The reading was deleted at the origin. */
export interface DeleteOp {
  op: 'delete';
  id: unknown;
}

/**
 * End of a full snapshot whose batches started at sequence `since`: every replica of this origin
 * that was not written at or after `since` no longer exists at the origin.
 */
export interface SnapshotEndOp {
  op: 'snapshot_end';
  since: number;
}

/**
 * End of an anti-entropy repair of one time bucket (see antientropy.ts): every replica of this
 * origin whose `timestamp` lies in [from, to) and that was not written at or after `since` no
 * longer exists at the origin. `from` and `to` null: the bucket of readings without a timestamp.
 */
export interface BucketEndOp {
  op: 'bucket_end';
  from: Date | null;
  to: Date | null;
  since: number;
}

export type ReplicationOp = UpsertOp | DeleteOp | SnapshotEndOp | BucketEndOp;

/** One change event as the listener delivers it (listeners/README.md, "Contract with the function"). */
export interface ChangeEvent {
  op: 'insert' | 'update' | 'replace' | 'delete';
  db: string;
  coll: string;
  key: { _id: unknown };
  doc: Document | null;
}

export const changeEventSchema = z
  .object({
    op: z.enum(['insert', 'update', 'replace', 'delete']),
    db: z.string().min(1),
    coll: z.string().min(1),
    key: z.object({ _id: z.unknown() }).loose(),
    doc: z.record(z.string(), z.unknown()).nullable(),
  })
  .loose();

export const eventsBodySchema = z.object({
  source: z.object({ node: z.string() }).loose().optional(),
  events: z.array(changeEventSchema).max(10_000),
});

/** The replica's _id on a subscriber: the origin node's id plus the reading's original _id. */
export function replicaId(origin: string, id: unknown): string {
  return `${origin}|${BSON.EJSON.stringify(id, { relaxed: false })}`;
}

/**
 * The operation for one change event, or null when there is nothing to send: an update whose
 * document was already gone when the server looked it up (the delete event that follows removes
 * the replica).
 */
export function opForEvent(e: ChangeEvent): ReplicationOp | null {
  if (e.op === 'delete') return { op: 'delete', id: e.key._id };
  if (!e.doc) return null;
  return { op: 'upsert', doc: { ...e.doc, _id: e.key._id } };
}
