/**
 * Fan-out of a query to other nodes. Every target gets the same signed, gzipped body. Each call
 * has its own timeout, and all of them share the request's overall deadline, so one slow or
 * dead node can never hold the answer longer than that. Failures are reported, never thrown.
 */
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import { z } from 'zod';
import type { Logger } from 'pino';
import type { PartialAnswer } from '../data/partials.js';
import { post } from './http.js';
import type { MeshAuth } from './signing.js';

const gzip = promisify(gzipCb);

export interface Target {
  url: string;
  /** Registry id, when the target came from the registry. */
  nodeId?: string | undefined;
  distanceKm?: number | null | undefined;
}

export type OutcomeStatus = 'ok' | 'failed' | 'timeout' | 'duplicate';

export interface NodeOutcome {
  /** The node's id as it reported it, else its registry id, else its URL. */
  node: string;
  url: string;
  status: OutcomeStatus;
  ms: number;
  reason?: string;
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

export async function fanOut(targets: readonly Target[], body: unknown, opts: FanOutOptions): Promise<FanOutResult> {
  const json = JSON.stringify(body);
  const payload = await gzip(json);
  // Signed per call, when it is sent, for that target only (a sequential fan-out may outlast
  // the replay window; a signature for B does not verify at C).
  const headers = async (t: Target, signal: AbortSignal) => ({
    'content-type': 'application/json',
    'content-encoding': 'gzip',
    'accept-encoding': 'gzip',
    ...opts.auth.sign({ path: '/', target: await opts.auth.targetIdFor(t, signal), body: payload, contentEncoding: 'gzip' }),
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
  headers: (t: Target, signal: AbortSignal) => Promise<Record<string, string>>,
  opts: FanOutOptions,
): Promise<[NodeOutcome, Record<string, PartialAnswer> | undefined]> {
  const started = performance.now();
  const base = { node: target.nodeId ?? target.url, url: target.url };
  const elapsed = () => Math.round((performance.now() - started) * 10) / 10;
  const timeout = AbortSignal.timeout(opts.nodeTimeoutMs);
  const signal = AbortSignal.any([timeout, opts.deadline]);
  try {
    const { status, text, bytes } = await post(target.url, payload, await headers(target, signal), signal);
    if (status !== 200) {
      return [{ ...base, status: 'failed', ms: elapsed(), bytes, reason: `HTTP ${status}: ${firstMessage(text)}` }, undefined];
    }
    const parsed = answerSchema.safeParse(JSON.parse(text));
    if (!parsed.success) {
      return [{ ...base, status: 'failed', ms: elapsed(), bytes, reason: 'the answer is not a Syncmesh partial answer' }, undefined];
    }
    const ext = parsed.data.extensions;
    const node = ext?.node ?? base.node;
    if (ext?.duplicate) return [{ ...base, node, status: 'duplicate', ms: elapsed(), bytes }, undefined];
    if (parsed.data.errors?.length) {
      return [{ ...base, node, status: 'failed', ms: elapsed(), bytes, reason: parsed.data.errors[0]!.message }, undefined];
    }
    const timing = ext?.timing ? { node_ms: ext.timing.ms, db_ms: ext.timing.db_ms } : {};
    const replicas = ext?.replicas?.length ? { replicas: ext.replicas } : {};
    return [{ ...base, node, status: 'ok', ms: elapsed(), bytes, ...timing, ...replicas }, (ext?.partials ?? {}) as Record<string, PartialAnswer>];
  } catch (err) {
    const ms = elapsed();
    if (timeout.aborted) return [{ ...base, status: 'timeout', ms, reason: `no answer within ${opts.nodeTimeoutMs} ms` }, undefined];
    if (opts.deadline.aborted) return [{ ...base, status: 'timeout', ms, reason: 'the request deadline passed' }, undefined];
    const reason = describeFetchError(err);
    opts.log.debug({ url: target.url, reason }, 'forwarding failed');
    return [{ ...base, status: 'failed', ms, reason }, undefined];
  }
}

function firstMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { errors?: Array<{ message?: string }> };
    return body.errors?.[0]?.message ?? text.slice(0, 200);
  } catch (err) {
    return text.slice(0, 200) || String(err);
  }
}

function describeFetchError(err: unknown): string {
  const e = err as Error & { code?: string; cause?: { code?: string; message?: string } };
  if (e.code && e.code !== 'ABORT_ERR') return `${e.code}: ${e.message}`;
  if (e.cause?.code) return `${e.cause.code}: ${e.cause.message ?? e.message}`;
  if (e instanceof SyntaxError) return 'the answer is not JSON';
  return e.message ?? String(err);
}
