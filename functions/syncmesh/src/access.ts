/**
 * Who may read and write data through the public endpoint.
 *
 * - Data writes (`addSensors`, `update`, `deleteSensor`, `deleteInTimeRange`) need
 *   `Authorization: Bearer <write key>` (SYNCMESH_WRITE_KEY, separate from the mesh secret) or a
 *   valid mesh signature. Without a configured write key only signed requests write.
 * - Reads are open, unless SYNCMESH_READ_KEY is set: then they need the read key, the write
 *   key, or a mesh signature.
 * Keys are compared in constant time (SHA-256 of both sides, then timingSafeEqual, so the
 * length of the key does not leak either).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Config } from './config.js';
import { SyncmeshError } from './errors.js';

export interface Caller {
  /** A valid mesh signature was checked (app.ts). */
  signed: boolean;
  /** The request's Authorization header, if any. */
  authorization: string | undefined;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Whether `authorization` is `Bearer <key>` for exactly `key`. */
export function bearerMatches(authorization: string | undefined, key: string | undefined): boolean {
  if (key === undefined || authorization === undefined) return false;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
  if (!m) return false;
  return timingSafeEqual(digest(m[1]!), digest(key));
}

/** Throws unless the caller may run a data mutation. */
export function assertMayWrite(caller: Caller, config: Pick<Config, 'writeKey'>): void {
  if (caller.signed) return;
  if (config.writeKey === undefined) {
    throw new SyncmeshError('EDGE_SYNCMESH_WRITES_DISABLED', 'this node accepts no data writes from clients: no write key is configured', {
      details: {
        allowed: 'set SYNCMESH_WRITE_KEY or the write-key faasd secret (at least 32 bytes) on this node, then send Authorization: Bearer <write key>',
      },
    });
  }
  if (!bearerMatches(caller.authorization, config.writeKey)) {
    throw new SyncmeshError(
      'EDGE_SYNCMESH_CREDENTIALS_REQUIRED',
      `data writes need credentials: ${caller.authorization ? 'the Authorization header does not carry the write key' : 'no Authorization header'}`,
      {
        details: { allowed: 'Authorization: Bearer <write key>, or a request signed with the mesh secret' },
      },
    );
  }
}

/** Throws unless the caller may read (always, when no read key is configured). */
export function assertMayRead(caller: Caller, config: Pick<Config, 'readKey' | 'writeKey'>): void {
  if (config.readKey === undefined || caller.signed) return;
  if (bearerMatches(caller.authorization, config.readKey) || bearerMatches(caller.authorization, config.writeKey)) return;
  throw new SyncmeshError(
    'EDGE_SYNCMESH_CREDENTIALS_REQUIRED',
    `reads on this node need credentials: ${caller.authorization ? 'the Authorization header carries neither the read nor the write key' : 'no Authorization header'}`,
    {
      details: { allowed: 'Authorization: Bearer <read key or write key>, or a request signed with the mesh secret' },
    },
  );
}
