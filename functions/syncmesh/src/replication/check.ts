/**
 * Does every subscriber agree with its origin? The client side of POST /replication/check, for
 * the `replication-check` command (check-cli.ts) and any operator tool: each node is asked
 * (signed with the mesh secret, as node-to-node calls are) to compare its readings with the
 * replicas each of its subscribers holds, bucket by bucket (antientropy.ts).
 *
 *   const check = await checkReplication(nodes, { secret });
 *   console.log(formatCheck(check));   // one line per origin and subscriber
 *   process.exitCode = check.agrees ? 0 : 1;
 */
import { MeshKeys, signV2 } from '@syncmesh-edge/mesh-auth';
import { SyncmeshError } from '../errors.js';
import { post } from '../mesh/http.js';
import type { CheckReport, SubscriberCheck } from './antientropy.js';

/** The origin a check's requests are signed with (it is not a node). */
export const CHECK_ORIGIN = 'replication-check';
/** How long one node may take (it reads its readings and asks each subscriber). */
export const DEFAULT_CHECK_TIMEOUT_MS = 300_000;

export interface CheckTarget {
  /** The node's id (its SYNCMESH_NODE_ID: a signature names its receiver). */
  id: string;
  /** The node's function URL, e.g. http://10.0.0.11:8080/function/syncmesh-fn. */
  url: string;
}

export interface CheckOptions {
  /** The mesh secret. */
  secret: string;
  timeoutMs?: number;
  /** Also repair the buckets that differ (they are queued as anti-entropy repairs). */
  repair?: boolean;
}

/** One node asked as an origin: its report, or why it could not be asked. */
export interface OriginCheck {
  node: string;
  report?: CheckReport;
  error?: { code: string; message: string };
}

export interface MeshCheck {
  /** Every origin answered and every subscriber agrees with it. */
  agrees: boolean;
  origins: OriginCheck[];
}

/** Asks each node (in parallel) to compare itself with its subscribers. */
export async function checkReplication(nodes: readonly CheckTarget[], opts: CheckOptions): Promise<MeshCheck> {
  const keys = new MeshKeys(opts.secret);
  const body = Buffer.from(JSON.stringify({ repair: opts.repair ?? false }));
  const origins = await Promise.all(
    nodes.map(async (n): Promise<OriginCheck> => {
      try {
        const headers = {
          'content-type': 'application/json',
          ...signV2(keys, { method: 'POST', path: '/replication/check', origin: CHECK_ORIGIN, target: n.id, body }),
        };
        const res = await post(
          `${n.url.replace(/\/+$/, '')}/replication/check`,
          body,
          headers,
          AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS),
        );
        if (res.status !== 200) {
          throw new SyncmeshError('EDGE_SYNCMESH_PEER_HTTP_ERROR', `${n.id} answered HTTP ${res.status}: ${res.text.slice(0, 300)}`, {
            details: { http_status: res.status },
          });
        }
        const report = JSON.parse(res.text) as CheckReport;
        if (!Array.isArray(report.subscribers)) throw new SyncmeshError('EDGE_SYNCMESH_PEER_BAD_ANSWER', `${n.id}'s answer is not a check report`);
        return { node: n.id, report };
      } catch (err) {
        const code = err instanceof SyncmeshError ? err.code : 'EDGE_SYNCMESH_PEER_BAD_ANSWER';
        return { node: n.id, error: { code, message: (err as Error).message } };
      }
    }),
  );
  const agrees = origins.every((o) => o.report?.subscribers.every((s) => s.agrees) ?? false);
  return { agrees, origins };
}

function describe(s: SubscriberCheck): string {
  if (s.error) return `cannot compare: ${s.error.code}: ${s.error.message}`;
  const counts = `${s.replica_readings} of ${s.origin_readings} readings, ${s.buckets} buckets`;
  if (s.agrees) return `agrees (${counts})`;
  const shown = s.differing
    .slice(0, 5)
    .map((d) => `${d.bucket} ${d.replica_count}/${d.origin_count}`)
    .join(', ');
  const more = s.differing.length > 5 ? `, … ${s.differing.length - 5} more` : '';
  const repaired = s.repaired?.length ? `; repair queued for ${s.repaired.length}` : '';
  return `DIFFERS in ${s.differing.length} bucket(s) (${counts}): ${shown}${more} (replica/origin counts)${repaired}`;
}

/** One line per origin and subscriber. */
export function formatCheck(check: MeshCheck): string {
  const lines: string[] = [];
  for (const o of check.origins) {
    if (o.error) {
      lines.push(`${o.node}: not checked: ${o.error.code}: ${o.error.message}`);
      continue;
    }
    const subs = o.report!.subscribers;
    if (subs.length === 0) lines.push(`${o.node}: no subscribers`);
    for (const s of subs) lines.push(`${o.node} -> ${s.subscriber} (${s.db}.${s.coll}, per ${o.report!.bucket}): ${describe(s)}`);
  }
  lines.push(check.agrees ? 'every subscriber agrees with its origin' : 'NOT every subscriber agrees with its origin');
  return lines.join('\n');
}
