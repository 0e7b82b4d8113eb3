/**
 * HTTP client for a node's Syncmesh function: data queries (unsigned, as any client sends them)
 * and registry ("meta") requests, signed with the mesh secret like node-to-node traffic
 * (protocol v2 of @syncmesh-edge/mesh-auth, lib/mesh-auth/README.md). A v2 signature names the
 * receiving node: the client asks the node for its id once (`GET <url>/healthz`, cached) unless
 * the caller passes it.
 */
import { MeshKeys, signV2 } from '@syncmesh-edge/mesh-auth';
import type { MeshNode } from '@syncmesh-edge/syncmesh-fn';
import { MeshError } from '../errors.js';

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Signing origin of the mesh scripts (they are not a node). */
export const SCRIPT_ORIGIN = 'mesh-scripts';

const keysBySecret = new Map<string, MeshKeys>();
const idsByUrl = new Map<string, string>();

function keysFor(secret: string): MeshKeys {
  let keys = keysBySecret.get(secret);
  if (!keys) {
    keys = new MeshKeys(secret);
    keysBySecret.set(secret, keys);
  }
  return keys;
}

/** Path of a function URL as the function routes it (without the faasd gateway prefix). */
function routedPath(url: string): string {
  const stripped = new URL(url).pathname.replace(/^\/function\/[^/]+/, '').replace(/\/+$/, '');
  return stripped === '' ? '/' : stripped;
}

/** The node id behind a function URL, as the node reports it at /healthz (cached per URL). */
export async function nodeIdAt(url: string, timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS): Promise<string> {
  const base = url.replace(/\/+$/, '');
  const known = idsByUrl.get(base);
  if (known) return known;
  try {
    const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
    const node = ((await res.json()) as { node?: unknown }).node;
    if (typeof node !== 'string') throw new Error(`/healthz answered ${res.status} without a node id`);
    idsByUrl.set(base, node);
    return node;
  } catch (err) {
    throw new MeshError('EDGE_MESH_REQUEST', `cannot learn the node id of ${url} (needed to sign for it): ${(err as Error).message}`, { cause: err });
  }
}

export interface NodeStatus {
  node: string;
  status: string;
  ms?: number;
  [k: string]: unknown;
}

export interface FunctionAnswer {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
  extensions?: { nodes?: NodeStatus[]; partial?: boolean; [k: string]: unknown };
}

export interface TimedAnswer {
  answer: FunctionAnswer;
  /** Round-trip time in ms, measured by the client. */
  rttMs: number;
  status: number;
  /** Response body size in bytes as received (before JSON parsing). */
  bytes: number;
}

/**
 * POSTs a JSON body to a function URL; signs it when a secret is given, for `target` (the
 * node's id; learnt from the node when absent). Data writes (addSensors, update, deleteSensor,
 * deleteInTimeRange) need `writeKey`: the mesh's `write_key_file`.
 */
export async function postFunction(
  url: string,
  body: unknown,
  opts: { secret?: string; target?: string; timeoutMs?: number; writeKey?: string } = {},
): Promise<TimedAnswer> {
  const text = JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.secret) {
    const target = opts.target ?? (await nodeIdAt(url, opts.timeoutMs));
    Object.assign(headers, signV2(keysFor(opts.secret), { method: 'POST', path: routedPath(url), origin: SCRIPT_ORIGIN, target, body: text }));
  }
  if (opts.writeKey) headers['authorization'] = `Bearer ${opts.writeKey}`;
  const t0 = performance.now();
  let res: Response;
  let raw: string;
  try {
    res = await fetch(url, { method: 'POST', headers, body: text, signal: AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS) });
    raw = await res.text();
  } catch (err) {
    throw new MeshError('EDGE_MESH_REQUEST', `POST ${url} failed: ${(err as Error).message}`, { cause: err });
  }
  const rttMs = performance.now() - t0;
  let answer: FunctionAnswer;
  try {
    answer = JSON.parse(raw) as FunctionAnswer;
  } catch (err) {
    throw new MeshError('EDGE_MESH_REQUEST', `POST ${url} answered ${res.status} with a body that is not JSON: ${raw.slice(0, 200)}`, { cause: err });
  }
  return { answer, rttMs, status: res.status, bytes: Buffer.byteLength(raw) };
}

/** A registry request; throws when the node reports GraphQL errors. */
export async function meta(url: string, secret: string, query: string): Promise<Record<string, unknown>> {
  const { answer, status } = await postFunction(url, { request_type: 'meta', query }, { secret });
  if (answer.errors && answer.errors.length > 0) {
    throw new MeshError('EDGE_MESH_REQUEST', `registry request to ${url} failed (${status}): ${answer.errors.map((e) => e.message).join('; ')}`);
  }
  return answer.data ?? {};
}

/** GraphQL string literal. */
export function gqlString(s: string): string {
  return JSON.stringify(s);
}

/** A registry entry as the meta queries below ask for it (the function's MeshNode without `subscribed`). */
export type RegistryNode = Omit<MeshNode, 'subscribed'>;

export async function ownNode(url: string, secret: string): Promise<RegistryNode | null> {
  const data = await meta(url, secret, '{ ownNode { id address lat lon distance own_node } }');
  return (data['ownNode'] as RegistryNode | null) ?? null;
}

/** Registers the node's own location (what the loader's --set-own-location does when it loads data). */
export async function addOwnNode(url: string, secret: string, node: { id: string; address: string; lat: number; lon: number }): Promise<void> {
  await meta(url, secret, `mutation { addNode(node:{id:${gqlString(node.id)}, ${peerFields(node)}, own_node:true}) { id } }`);
}

export async function listNodes(url: string, secret: string): Promise<RegistryNode[]> {
  const data = await meta(url, secret, '{ nodes { id address lat lon distance own_node } }');
  return (data['nodes'] as RegistryNode[]) ?? [];
}

/** Adds a peer, or updates it when the registry already has it (a restarted mesh keeps its data). */
export interface Peer {
  id: string;
  address: string;
  lat: number;
  lon: number;
}

const peerFields = (peer: Peer) => `address:${gqlString(peer.address)}, lat:${peer.lat}, lon:${peer.lon}`;

/** Aliased mutations per registry request: the function's default SYNCMESH_MAX_ROOT_FIELDS (functions/syncmesh/src/config.ts). */
export const REGISTRY_BATCH = 20;

/**
 * Registers peers in as few requests as the function accepts (one aliased addNode per peer, at
 * most REGISTRY_BATCH per request; GraphQL runs mutations in order). If some of a batch are
 * registered already (a mesh started again over old data), each of that batch is upserted alone.
 */
export async function upsertPeers(url: string, secret: string, peers: readonly Peer[]): Promise<void> {
  for (let from = 0; from < peers.length; from += REGISTRY_BATCH) {
    const batch = peers.slice(from, from + REGISTRY_BATCH);
    const adds = batch.map((p, i) => `p${i}: addNode(node:{id:${gqlString(p.id)}, ${peerFields(p)}, subscribed:false}) { id }`);
    try {
      await meta(url, secret, `mutation { ${adds.join(' ')} }`);
    } catch (err) {
      if (!(err instanceof MeshError) || !/already registered|EXISTS/i.test(err.message)) throw err;
      for (const p of batch) await upsertPeer(url, secret, p);
    }
  }
}

export async function upsertPeer(url: string, secret: string, peer: Peer): Promise<void> {
  const fields = peerFields(peer);
  try {
    await meta(url, secret, `mutation { addNode(node:{id:${gqlString(peer.id)}, ${fields}, subscribed:false}) { id } }`);
  } catch (err) {
    if (!(err instanceof MeshError) || !/already registered|EXISTS/i.test(err.message)) throw err;
    await meta(url, secret, `mutation { updateNode(id:${gqlString(peer.id)}, node:{${fields}}) { id } }`);
  }
}
