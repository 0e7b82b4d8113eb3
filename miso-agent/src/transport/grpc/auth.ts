/**
 * Agent-to-agent authentication with the mesh secret, using the mesh signing scheme of the
 * Syncmesh function (HMAC-SHA256 with a timestamp and a replay window). The signed "body" is
 * the call's purpose and the caller's node id (and, for Fetch, the requested key), so a
 * signature cannot be reused for another node or another call.
 */
import type { Metadata } from '@grpc/grpc-js';
import * as grpc from '@grpc/grpc-js';
import { signRequest, verifyRequest } from '@syncmesh-edge/syncmesh-fn/mesh-auth';

export const NODE_HEADER = 'x-miso-node';

export function syncChallenge(nodeId: string): string {
  return `miso-sync:${nodeId}`;
}

export function fetchChallenge(nodeId: string, fn: string, object: string, name: string): string {
  return `miso-fetch:${nodeId}:${fn}\u0000${object}\u0000${name}`;
}

export function signedMetadata(secret: string, nodeId: string, challenge: string): Metadata {
  const md = new grpc.Metadata();
  md.set(NODE_HEADER, nodeId);
  for (const [k, v] of Object.entries(signRequest(secret, challenge))) md.set(k, v);
  return md;
}

/** Returns the reason a call's metadata does not verify, or undefined when it does. */
export function verifyMetadata(secret: string, md: Metadata, challenge: string): string | undefined {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(md.getMap())) headers[k] = typeof v === 'string' ? v : v.toString();
  const r = verifyRequest(secret, headers, challenge);
  return r.ok ? undefined : r.reason;
}

export function metadataNode(md: Metadata): string {
  const v = md.get(NODE_HEADER)[0];
  return typeof v === 'string' ? v : '';
}
