/**
 * The CLI's HTTP to a node: every request has a deadline, every failure becomes a CliError that
 * names the node, the URL and what to do. Requests to the function use its envelope
 * (functions/syncmesh/README.md, "Requests"); registry changes are signed (signing.ts).
 */
import type { MeshNode } from './mesh-file.js';
import { CliError } from './errors.js';
import type { Credential } from './signing.js';

export interface HttpResult {
  url: string;
  status: number;
  text: string;
  /** Bytes of the body as received. */
  bytes: number;
  /** Round trip, from sending to the last byte of the body. */
  ms: number;
  headers: Headers;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

/** Why a request got no answer, in a few words (the cause's code, not its stack). */
function whyNoAnswer(err: unknown, timeoutMs: number): string {
  if ((err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code === 'ECONNREFUSED') return 'connection refused (nothing listens there)';
  if (cause?.code === 'EHOSTUNREACH' || cause?.code === 'ENETUNREACH') return `${cause.code}: no route to the node`;
  if (cause?.code === 'ENOTFOUND' || cause?.code === 'EAI_AGAIN') return `${cause.code}: the host name does not resolve`;
  if (cause?.code) return `${cause.code}${cause.message ? `: ${cause.message}` : ''}`;
  // fetch's own refusals carry only a message (e.g. "bad port": a port fetch never connects to)
  return cause?.message ? `${(err as Error).message}: ${cause.message}` : (err as Error).message;
}

/** One HTTP request with a deadline; throws EDGE_CLI_UNREACHABLE when no answer arrives. */
export async function request(url: string, opts: RequestOptions): Promise<HttpResult> {
  const t0 = performance.now();
  try {
    const res = await fetch(url, {
      method: opts.method ?? 'GET',
      headers: opts.headers ?? {},
      ...(opts.body === undefined ? {} : { body: opts.body }),
      signal: AbortSignal.timeout(opts.timeoutMs),
      redirect: 'manual',
    });
    const buf = Buffer.from(await res.arrayBuffer());
    return { url, status: res.status, text: buf.toString('utf8'), bytes: buf.length, ms: performance.now() - t0, headers: res.headers };
  } catch (err) {
    throw new CliError('EDGE_CLI_UNREACHABLE', `${opts.method ?? 'GET'} ${url}: ${whyNoAnswer(err, opts.timeoutMs)}`, {
      hint: 'check that the node is up and reachable from here (syncmesh status); raise --timeout-ms for a slow link',
      cause: err,
    });
  }
}

/** The body as JSON; throws EDGE_CLI_BAD_ANSWER when it is not. */
export function jsonOf<T = Record<string, unknown>>(r: HttpResult): T {
  try {
    return JSON.parse(r.text) as T;
  } catch {
    throw new CliError('EDGE_CLI_BAD_ANSWER', `${r.url} answered ${r.status} with a body that is not JSON: ${JSON.stringify(r.text.slice(0, 120))}`, {
      hint: 'the URL in the mesh description may point at something else than a Syncmesh node',
    });
  }
}

/** The path the function routes a URL to (without the gateway's /function/<name>): what a signature covers. */
export function routedPath(url: string): string {
  const stripped = new URL(url).pathname.replace(/^\/function\/[^/]+/, '').replace(/\/+$/, '');
  return stripped === '' ? '/' : stripped;
}

/** A URL under the node's function (`/healthz`, `/metrics`, ...). */
export function functionPath(node: MeshNode, path: string): string {
  return `${node.function_url.replace(/\/+$/, '')}${path}`;
}

export interface GraphqlError {
  message: string;
  extensions?: { code?: string; [k: string]: unknown };
}

export interface FunctionAnswer {
  data?: Record<string, unknown> | null;
  errors?: GraphqlError[];
  extensions?: Record<string, unknown>;
}

export interface FunctionResult extends HttpResult {
  answer: FunctionAnswer;
}

/** What to do about a code a node answered with. */
const REMOTE_HINTS: Record<string, (node: MeshNode) => string> = {
  EDGE_SYNCMESH_UNAUTHORIZED: (n) =>
    `${n.id} refused the signature: the mesh secret in the description's secret_file is not this mesh's, '${n.id}' is not the node's SYNCMESH_NODE_ID, or the clocks differ by more than the node's replay window (syncmesh status shows each node's offset)`,
  EDGE_SYNCMESH_CREDENTIALS_REQUIRED: (n) =>
    `${n.id} needs a key for this: reads with SYNCMESH_READ_KEY set need --key-file FILE (the read key or the write key); writes need the write key in write_key_file`,
  EDGE_SYNCMESH_WRITES_DISABLED: (n) => `${n.id} has no write key: create the write-key secret on it (functions/syncmesh/README.md, "Security")`,
  EDGE_SYNCMESH_NO_OWN_NODE: (n) => `${n.id}'s registry has no own node, so a radius means nothing: add it with syncmesh add ${n.id} --on ${n.id} --own`,
  EDGE_SYNCMESH_BODY_TOO_LARGE: () => 'send less at once (syncmesh load --batch N)',
  EDGE_SYNCMESH_DB_UNAVAILABLE: (n) => `${n.id}'s MongoDB does not answer: syncmesh logs --node ${n.id}`,
};

/** A CliError for a node that answered with an error (the first of its errors, with its code). */
export function refusal(node: MeshNode, r: FunctionResult, what: string): CliError {
  const first = r.answer.errors?.[0];
  const code = first?.extensions?.code;
  const hint = (code && REMOTE_HINTS[code]?.(node)) ?? `see the row of ${code ?? `HTTP ${r.status}`} in docs/errors.md`;
  return new CliError('EDGE_CLI_REFUSED', `${node.id} refused ${what} (${r.status}${code ? ` ${code}` : ''}): ${first?.message ?? r.text.slice(0, 200)}`, {
    hint,
    ...(code ? { remoteCode: code } : {}),
  });
}

export interface PostOptions {
  timeoutMs: number;
  /** Sign for the node (registry changes). */
  credential?: Credential | undefined;
  /** Authorization: Bearer <key> (the write key for data writes, a read key for reads). */
  bearer?: string | undefined;
}

/** POSTs an envelope to the node's function; the answer is parsed, not judged (see refusal). */
export async function postFunction(node: MeshNode, envelope: Record<string, unknown>, opts: PostOptions): Promise<FunctionResult> {
  const body = JSON.stringify(envelope);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.credential) Object.assign(headers, opts.credential.sign({ method: 'POST', path: routedPath(node.function_url), target: node.id, body }));
  if (opts.bearer) headers['authorization'] = `Bearer ${opts.bearer}`;
  const r = await request(node.function_url, { method: 'POST', headers, body, timeoutMs: opts.timeoutMs });
  return { ...r, answer: jsonOf<FunctionAnswer>(r) };
}

/** A registry (meta) request; throws the node's refusal. */
export async function meta(node: MeshNode, query: string, variables: Record<string, unknown>, opts: PostOptions): Promise<Record<string, unknown>> {
  const r = await postFunction(node, { request_type: 'meta', query, variables }, opts);
  if (r.status !== 200 || (r.answer.errors?.length ?? 0) > 0) throw refusal(node, r, 'the registry request');
  return r.answer.data ?? {};
}

/** Runs `fn` over `items`, at most `limit` at once, keeping the order of the results. */
export async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
