/**
 * Fan-out of a query to other nodes. Every target gets the same signed, gzipped body. Each call
 * has its own timeout, and all of them share the request's overall deadline, so one slow or
 * dead node can never hold the answer longer than that. Failures are reported, never thrown.
 */
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import { z } from 'zod';
import type { Logger } from '@syncmesh-edge/log';
import type { PartialAnswer } from '../data/partials.js';
import { ERROR_CODES, SyncmeshError, type ErrorCode } from '../errors.js';
import { post } from './http.js';
import type { ResolvedAddress } from './peers.js';
import type { MeshAuth } from './signing.js';

const gzip = promisify(gzipCb);

export interface Target {
  url: string;
  /** Registry id: the node the request is signed for. */
  nodeId?: string | undefined;
  distanceKm?: number | null | undefined;
  /** The address checked by the peer policy (mesh/peers.ts); the call connects to it, never resolving again. */
  address?: ResolvedAddress | undefined;
}

export type OutcomeStatus = 'ok' | 'failed' | 'timeout' | 'duplicate';

/** Why a node did not contribute. Never the remote body or a socket's error text. */
export type FailureCode = Extract<
  ErrorCode,
  | 'EDGE_SYNCMESH_PEER_TIMEOUT'
  | 'EDGE_SYNCMESH_PEER_UNREACHABLE'
  | 'EDGE_SYNCMESH_PEER_HTTP_ERROR'
  | 'EDGE_SYNCMESH_PEER_BAD_ANSWER'
  | 'EDGE_SYNCMESH_PEER_ERROR'
  | 'EDGE_SYNCMESH_PEER_UNREGISTERED'
  | 'EDGE_SYNCMESH_NO_MESH_SECRET'
>;

export interface NodeOutcome {
  /** The node's registry id (as it reported it), else its URL. */
  node: string;
  url: string;
  status: OutcomeStatus;
  ms: number;
  /** Set when the node failed or timed out. */
  code?: FailureCode;
  /** This node's own words for `code` (fixed texts, never the remote's). */
  reason?: string;
  /** EDGE_SYNCMESH_PEER_HTTP_ERROR: the status it answered with. */
  http_status?: number;
  /** EDGE_SYNCMESH_PEER_HTTP_ERROR / _PEER_ERROR: the member's error code, when it is one of ours. */
  remote_code?: ErrorCode;
  /** Bytes of the answer as received (compressed size when gzipped and known). */
  bytes?: number;
  /** The node's own time for the request and its database's part of it, as it reported them. */
  node_ms?: number;
  db_ms?: number;
  /** Nodes whose replicas the node holds (it can answer for them when they fail). */
  replicas?: string[];
  /** Failover: the node that answered for this one from its replicas. */
  covered_by?: string;
}

/** The fixed explanation of each failure code. */
export const FAILURE_REASONS: Record<FailureCode, string> = {
  EDGE_SYNCMESH_PEER_TIMEOUT: 'no answer in time',
  EDGE_SYNCMESH_PEER_UNREACHABLE: 'the connection failed (refused, reset or unreachable)',
  EDGE_SYNCMESH_PEER_HTTP_ERROR: 'the node answered with an HTTP error status',
  EDGE_SYNCMESH_PEER_BAD_ANSWER: 'the answer is not a Syncmesh partial answer (not JSON, too large, or bad gzip)',
  EDGE_SYNCMESH_PEER_ERROR: 'the node answered with an error',
  EDGE_SYNCMESH_PEER_UNREGISTERED: 'allowed by SYNCMESH_ALLOWED_PEERS, but not in the registry, so its node id (which a signature names) is unknown',
  EDGE_SYNCMESH_NO_MESH_SECRET: 'this node has no mesh secret, so it cannot sign forwarded requests',
};

/** A failed outcome for `target` with `code`. */
export function failedOutcome(target: Target, code: FailureCode, extra: Partial<NodeOutcome> = {}): NodeOutcome {
  const status: OutcomeStatus = code === 'EDGE_SYNCMESH_PEER_TIMEOUT' ? 'timeout' : 'failed';
  return { node: target.nodeId ?? target.url, url: target.url, status, ms: 0, code, reason: FAILURE_REASONS[code], ...extra };
}

export interface FanOutResult {
  outcomes: NodeOutcome[];
  /** Partials of the nodes that answered, keyed by response key. */
  answers: Array<Record<string, PartialAnswer>>;
}

export interface FanOutOptions {
  /** Signs each call for its target node (protocol v2). */
  auth: MeshAuth;
  nodeTimeoutMs: number;
  /** Aborts every call still open when the request's overall deadline passes. */
  deadline: AbortSignal;
  mode: 'parallel' | 'sequential';
  log: Logger;
}

const metric = z.object({ n: z.number(), sum: z.number(), min: z.number().nullable(), max: z.number().nullable() });
const docSchema = z.object({ _id: z.string() }).loose();
const partialSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('aggregate'), count: z.number(), metrics: z.object({ temperature: metric, humidity: metric, pressure: metric }) }),
  z.object({ kind: z.literal('docs'), docs: z.array(docSchema) }),
  z.object({ kind: z.literal('doc'), doc: docSchema.nullable() }),
  z.object({ kind: z.literal('count'), n: z.number() }),
]);
const answerSchema = z.object({
  errors: z.array(z.object({ message: z.string() }).loose()).optional(),
  extensions: z
    .object({
      node: z.string().optional(),
      duplicate: z.boolean().optional(),
      timing: z.object({ ms: z.number(), db_ms: z.number() }).optional(),
      replicas: z.array(z.string()).optional(),
      partials: z.record(z.string(), partialSchema).optional(),
    })
    .loose()
    .optional(),
});

/** The registry id a signature for `t` names; the service never forwards to a target without one. */
function targetId(t: Target): string {
  if (t.nodeId === undefined) throw new SyncmeshError('EDGE_SYNCMESH_INTERNAL', `fan-out target ${t.url} has no registry id to sign for`);
  return t.nodeId;
}

export async function fanOut(targets: readonly Target[], body: unknown, opts: FanOutOptions): Promise<FanOutResult> {
  const json = JSON.stringify(body);
  const payload = await gzip(json);
  // Signed per call, when it is sent, for that target only (a sequential fan-out may outlast
  // the replay window; a signature for B does not verify at C). The service forwards only to
  // targets with a registry id; `payload` is the body as sent (gzipped).
  const headers = async (t: Target) => ({
    'content-type': 'application/json',
    'content-encoding': 'gzip',
    'accept-encoding': 'gzip',
    ...opts.auth.sign({ path: '/', target: targetId(t), body: payload, contentEncoding: 'gzip' }),
  });
  const result: FanOutResult = { outcomes: [], answers: [] };
  const collect = (outcome: NodeOutcome, partials?: Record<string, PartialAnswer>) => {
    result.outcomes.push(outcome);
    if (partials) result.answers.push(partials);
  };
  if (opts.mode === 'sequential') {
    for (const t of targets) {
      const [outcome, partials] = await callOne(t, payload, headers, opts);
      collect(outcome, partials);
    }
  } else {
    const settled = await Promise.all(targets.map((t) => callOne(t, payload, headers, opts)));
    for (const [outcome, partials] of settled) collect(outcome, partials);
  }
  return result;
}

async function callOne(
  target: Target,
  payload: Buffer,
  headers: (t: Target) => Promise<Record<string, string>>,
  opts: FanOutOptions,
): Promise<[NodeOutcome, Record<string, PartialAnswer> | undefined]> {
  const started = performance.now();
  const base = { node: target.nodeId ?? target.url, url: target.url };
  const elapsed = () => Math.round((performance.now() - started) * 10) / 10;
  const timeout = AbortSignal.timeout(opts.nodeTimeoutMs);
  const signal = AbortSignal.any([timeout, opts.deadline]);
  const fail = (code: FailureCode, extra: Partial<NodeOutcome> = {}): [NodeOutcome, undefined] => [
    { ...failedOutcome(target, code), ...extra, ms: elapsed() },
    undefined,
  ];
  try {
    const { status, text, bytes } = await post(target.url, payload, await headers(target), signal, target.address ? { address: target.address } : {});
    if (status !== 200) return fail('EDGE_SYNCMESH_PEER_HTTP_ERROR', { bytes, http_status: status, ...remoteCode(text) });
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      squashNotJson(err);
      return fail('EDGE_SYNCMESH_PEER_BAD_ANSWER', { bytes });
    }
    const parsed = answerSchema.safeParse(json);
    if (!parsed.success) return fail('EDGE_SYNCMESH_PEER_BAD_ANSWER', { bytes });
    const ext = parsed.data.extensions;
    const node = base.node; // the registry's id, not whatever the answer claims
    if (ext?.duplicate) return [{ ...base, node, status: 'duplicate', ms: elapsed(), bytes }, undefined];
    if (parsed.data.errors?.length) return fail('EDGE_SYNCMESH_PEER_ERROR', { node, bytes, ...remoteCode(text) });
    const timing = ext?.timing ? { node_ms: ext.timing.ms, db_ms: ext.timing.db_ms } : {};
    const replicas = ext?.replicas?.length ? { replicas: ext.replicas } : {};
    return [{ ...base, node, status: 'ok', ms: elapsed(), bytes, ...timing, ...replicas }, (ext?.partials ?? {}) as Record<string, PartialAnswer>];
  } catch (err) {
    if (timeout.aborted) return fail('EDGE_SYNCMESH_PEER_TIMEOUT', { reason: `no answer within ${opts.nodeTimeoutMs} ms` });
    if (opts.deadline.aborted) return fail('EDGE_SYNCMESH_PEER_TIMEOUT', { reason: 'no answer before the request deadline' });
    // Logged here in full for the operator; the caller gets the code only.
    opts.log.debug({ url: target.url, err: (err as Error).message }, 'forwarding failed');
    return fail(err instanceof SyncmeshError && err.code === 'EDGE_SYNCMESH_PEER_BAD_ANSWER' ? err.code : 'EDGE_SYNCMESH_PEER_UNREACHABLE');
  }
}

/** The member's error code when it is one of ours (a closed set, safe to pass on); never its text. */
function remoteCode(text: string): { remote_code?: ErrorCode } {
  try {
    const code = (JSON.parse(text) as { errors?: Array<{ extensions?: { code?: unknown } }> }).errors?.[0]?.extensions?.code;
    return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code) ? { remote_code: code as ErrorCode } : {};
  } catch (err) {
    squashNotJson(err);
    return {};
  }
}

/** A remote answer that is not JSON is a reported failure (its code says so), not an error of ours. */
function squashNotJson(err: unknown): void {
  if (!(err instanceof SyntaxError)) throw err;
}
