/**
 * The function's side of mesh authentication (protocol v2, `@syncmesh-edge/mesh-auth`; the wire
 * format is in lib/mesh-auth/README.md).
 *
 * - Sending: every signed request names its receiver's node id (the signature verifies only
 *   there). Every target carries its registry id: the service forwards only to registry
 *   members (mesh/peers.ts), and replication sends to subscribers from the registry.
 * - Receiving: one Verifier per process (it holds the nonce cache), checking the headers before
 *   the body is read and the MAC over the body exactly as received.
 */
import { MeshKeys, signV2, Verifier } from '@syncmesh-edge/mesh-auth';
import { SyncmeshError } from '../errors.js';

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
}

export class MeshAuth {
  readonly nodeId: string;
  readonly #keys: MeshKeys | undefined;
  /** Undefined when this node has no mesh secret: it then accepts no signed request. */
  readonly verifier: Verifier | undefined;

  constructor(opts: MeshAuthOptions) {
    this.nodeId = opts.nodeId;
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
    if (!this.#keys) throw new SyncmeshError('EDGE_SYNCMESH_INTERNAL', 'this node has no mesh secret, so it cannot sign requests');
    return signV2(this.#keys, {
      method: input.method ?? 'POST',
      path: input.path,
      origin: this.nodeId,
      target: input.target,
      body: input.body,
      contentEncoding: input.contentEncoding,
    });
  }
}
