/**
 * The function's side of mesh authentication (protocol v2, `@syncmesh-edge/mesh-auth`; the wire
 * format is in lib/mesh-auth/README.md).
 *
 * - Sending: every signed request names its receiver's node id (the signature verifies only
 *   there). Registry nodes have ids; for a URL without one (an `external_nodes` entry), the id
 *   is the registry entry with that address, else what the node itself reports at
 *   `GET <url>/healthz` (cached for a minute). A node that lies about its id gets a signature
 *   for the id it named, usable once, at that node, within the replay window, for the same
 *   read-only forwarded query the entry node was asked: nothing it could not ask itself.
 * - Receiving: one Verifier per process (it holds the nonce cache), checking the headers before
 *   the body is read and the MAC over the body exactly as received.
 */
import http from 'node:http';
import https from 'node:https';
import { checkNodeId, MeshKeys, signV2, Verifier } from '@syncmesh-edge/mesh-auth';
import type { MeshNode } from './registry.js';

/** How long a node id learnt from a URL is trusted before it is asked again. */
const TARGET_ID_TTL_MS = 60_000;
/** Most URL → id entries kept (a mesh has at most a few hundred nodes). */
const TARGET_ID_CACHE_MAX = 1024;
/** Largest /healthz answer read while learning a node id. */
const HEALTHZ_MAX_BYTES = 4096;

export interface SignInput {
  method?: string;
  /** The path as the receiver routes it: `/`, `/replicate`, `/events`, `/resync`. */
  path: string;
  /** The receiver's node id. */
  target: string;
  /** Body bytes exactly as sent (after gzip). */
  body: Uint8Array | string;
  contentEncoding?: string | undefined;
}

export interface MeshAuthOptions {
  secret: string | undefined;
  nodeId: string;
  windowMs: number;
  /** Deprecated v1 signatures accepted too (SYNCMESH_AUTH_ACCEPT_V1). */
  acceptV1: boolean;
  /** Registry lookup for URL targets without an id. */
  registry?: { list(): Promise<MeshNode[]> };
}

const trimSlash = (u: string) => u.replace(/\/+$/, '');

export class MeshAuth {
  readonly nodeId: string;
  readonly #keys: MeshKeys | undefined;
  /** Undefined when this node has no mesh secret: it then accepts no signed request. */
  readonly verifier: Verifier | undefined;
  readonly #registry: MeshAuthOptions['registry'];
  readonly #ids = new Map<string, { id: string; at: number }>();

  constructor(opts: MeshAuthOptions) {
    this.nodeId = opts.nodeId;
    this.#registry = opts.registry;
    this.#keys = opts.secret === undefined ? undefined : new MeshKeys(opts.secret);
    this.verifier = this.#keys
      ? new Verifier({ keys: this.#keys, nodeId: opts.nodeId, windowMs: opts.windowMs, v1Secret: opts.acceptV1 ? opts.secret : undefined })
      : undefined;
  }

  /** Safe to log: identifies the mesh secret without revealing it. */
  get fingerprint(): string | undefined {
    return this.#keys?.fingerprint;
  }

  /** The v2 headers for one request from this node to `input.target`. */
  sign(input: SignInput): Record<string, string> {
    if (!this.#keys) throw new Error('this node has no mesh secret, so it cannot sign requests');
    return signV2(this.#keys, {
      method: input.method ?? 'POST',
      path: input.path,
      origin: this.nodeId,
      target: input.target,
      body: input.body,
      contentEncoding: input.contentEncoding,
    });
  }

  /** The node id to sign for when calling `target` (see the module comment). */
  async targetIdFor(target: { url: string; nodeId?: string | undefined }, signal: AbortSignal): Promise<string> {
    if (target.nodeId) return checkNodeId(target.nodeId);
    const url = trimSlash(target.url);
    const cached = this.#ids.get(url);
    if (cached && Date.now() - cached.at < TARGET_ID_TTL_MS) return cached.id;
    const fromRegistry = (await this.#registry?.list())?.find((n) => trimSlash(n.address) === url)?.id;
    const id = checkNodeId(fromRegistry ?? (await askNodeId(url, signal)));
    if (this.#ids.size >= TARGET_ID_CACHE_MAX) this.#ids.clear();
    this.#ids.set(url, { id, at: Date.now() });
    return id;
  }
}

/** GET <url>/healthz → its `node` field. */
function askNodeId(url: string, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const u = new URL(`${url}/healthz`);
    const client = u.protocol === 'https:' ? https : http;
    const req = client.get(u, { signal }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > HEALTHZ_MAX_BYTES) req.destroy(new Error('the /healthz answer is too large'));
        else chunks.push(c);
      });
      res.on('error', reject);
      res.on('end', () => {
        try {
          const node = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { node?: unknown }).node;
          if (res.statusCode === 200 && typeof node === 'string') resolve(node);
          else reject(new Error(`cannot learn the node id of ${url}: /healthz answered ${res.statusCode} without a node id`));
        } catch (err) {
          reject(new Error(`cannot learn the node id of ${url}: /healthz did not answer JSON`, { cause: err }));
        }
      });
    });
    req.on('error', reject);
  });
}
