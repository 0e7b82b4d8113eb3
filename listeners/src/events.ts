/**
 * Turns raw change-stream documents into the replication envelope the function receives.
 * Pure: no I/O, no clock. Handles every shape MongoDB sends (4.4 to 7.0: insert, update,
 * replace, delete, plus drop/rename/dropDatabase/invalidate; the test server sends the same), and
 * refuses to guess at an event that does not identify its document, such as mongo-java-server's
 * own update events before our launcher fixed them (documentKey held the update, no `_id`, no
 * updateDescription).
 *
 * An event that cannot be identified is never guessed at: it becomes a resync request, which
 * makes the function send a full snapshot of this node's documents (see README, "Resync").
 */
import type { Document } from 'mongodb';
import { ERROR_CODES, ListenerError } from './errors.js';

export type ChangeOp = 'insert' | 'update' | 'replace' | 'delete';

/** A resume token as the server sends it (`{ _data: '82...' }`); opaque to the listener. */
export type ResumeToken = Document;

/** One event as POSTed to the function (see README, "Contract with the function"). */
export interface ChangeEnvelope {
  token: ResumeToken;
  op: ChangeOp;
  db: string;
  coll: string;
  key: { _id: unknown };
  doc: Document | null;
  update?: { updatedFields: Document; removedFields: string[] };
}

/** Why the listener asks the function for a full resync of one collection. */
/**
 * Why a resync is requested (listeners/README.md, "Resync"). `dead-letter`: the function
 * rejected a batch of events; `replay`: dead letters were re-delivered by `cli.js replay`.
 */
export type ResyncReason = 'history-lost' | 'malformed-update' | 'collection-dropped' | 'no-position' | 'dead-letter' | 'replay';

export type Normalised =
  /** A replication event for the function. */
  | { kind: 'event'; token: ResumeToken; event: ChangeEnvelope }
  /** The change cannot be replicated event by event: resync the collection. */
  | { kind: 'resync'; token: ResumeToken; reason: ResyncReason; detail: string }
  /** The stream ended (collection dropped/renamed): reopen it with startAfter this token. */
  | { kind: 'invalidate'; token: ResumeToken }
  /** An event with nothing to replicate (e.g. createIndexes with expanded events). */
  | { kind: 'skip'; token: ResumeToken; detail: string };

export interface Namespace {
  db: string;
  coll: string;
}

export const NO_RESUME_TOKEN_MESSAGE = 'A change stream document has been received that lacks a resume token (_id).';

function isPlainObject(v: unknown): v is Document {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The `_id` of documentKey, or undefined when there is none. */
function keyOf(raw: Document): { _id: unknown } | undefined {
  const dk = raw['documentKey'];
  if (!isPlainObject(dk) || !('_id' in dk) || dk['_id'] === undefined) return undefined;
  // Sharded collections add the shard key to documentKey; the function only needs _id.
  return { _id: dk['_id'] };
}

/**
 * A documentKey holds `_id` (and the shard key on sharded collections), never update operators;
 * mongo-java-server alone put the update (`{$set: ...}`) there.
 */
function looksLikeUpdateSpec(dk: unknown): boolean {
  return isPlainObject(dk) && Object.keys(dk).some((k) => k.startsWith('$'));
}

/**
 * Normalises one raw change document from a stream on `ns` (`ns` fills in db/coll when the
 * event lacks them). Throws only when the resume token is missing,
 * the one thing the listener cannot continue without.
 */
export function normaliseChange(raw: Document, ns: Namespace): Normalised {
  const token = raw['_id'];
  if (!isPlainObject(token)) throw new ListenerError(ERROR_CODES.MALFORMED_EVENT, NO_RESUME_TOKEN_MESSAGE);
  const rawNs = isPlainObject(raw['ns']) ? raw['ns'] : {};
  const db = typeof rawNs['db'] === 'string' ? rawNs['db'] : ns.db;
  const coll = typeof rawNs['coll'] === 'string' ? rawNs['coll'] : ns.coll;
  const op = raw['operationType'];
  const base = { token, db, coll };

  switch (op) {
    case 'insert':
    case 'replace': {
      const key = keyOf(raw);
      const doc = raw['fullDocument'];
      if (!key || !isPlainObject(doc)) {
        return { kind: 'resync', token, reason: 'malformed-update', detail: `${op} event without documentKey._id or fullDocument` };
      }
      return { kind: 'event', token, event: { ...base, op, key, doc } };
    }
    case 'update': {
      const key = keyOf(raw);
      const desc = raw['updateDescription'];
      if (!key || looksLikeUpdateSpec(raw['documentKey']) || !isPlainObject(desc)) {
        return {
          kind: 'resync',
          token,
          reason: 'malformed-update',
          detail: key ? 'update event without updateDescription' : 'update event whose documentKey has no _id',
        };
      }
      const updatedFields = isPlainObject(desc['updatedFields']) ? desc['updatedFields'] : {};
      const removedFields = Array.isArray(desc['removedFields']) ? desc['removedFields'].filter((f): f is string => typeof f === 'string') : [];
      // With fullDocument: 'updateLookup' the server adds the current document; it is null when
      // the document was deleted before the lookup (a delete event follows).
      const full = raw['fullDocument'];
      const doc = isPlainObject(full) ? full : null;
      return { kind: 'event', token, event: { ...base, op: 'update', key, doc, update: { updatedFields, removedFields } } };
    }
    case 'delete': {
      const key = keyOf(raw);
      if (!key) return { kind: 'resync', token, reason: 'malformed-update', detail: 'delete event without documentKey._id' };
      return { kind: 'event', token, event: { ...base, op: 'delete', key, doc: null } };
    }
    case 'drop':
    case 'rename':
    case 'dropDatabase':
      return { kind: 'resync', token, reason: 'collection-dropped', detail: `${op} of ${db}.${coll}` };
    case 'invalidate':
      return { kind: 'invalidate', token };
    default:
      return { kind: 'skip', token, detail: `operationType ${String(op)} carries no document change` };
  }
}
