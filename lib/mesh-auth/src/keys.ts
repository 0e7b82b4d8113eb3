/**
 * Per-node keys derived from the mesh secret.
 *
 * Every node of a mesh shares one mesh secret (≥ 32 bytes). Nothing is ever signed with the
 * secret itself: a request for node B is signed with B's key,
 *
 *   K(B, purpose) = HKDF-SHA256(ikm = mesh secret, salt = "syncmesh-edge/mesh-auth/v2",
 *                               info = purpose + "\0" + B, 32 bytes)
 *
 * so a signature made for B does not verify at C, and keys for different purposes (HTTP
 * requests, agent handshakes) are independent. Members of the mesh can derive every key; the
 * trust boundary is the mesh secret, as before.
 */
import { createHash, hkdfSync } from 'node:crypto';
import { MeshAuthError } from './errors.js';

/** The shortest accepted secret, in bytes (UTF-8): 256 bits. */
export const MIN_SECRET_BYTES = 32;

/** What a key is for; the same secret yields independent keys per purpose. */
export type KeyPurpose = 'http' | 'agent';

const SALT = 'syncmesh-edge/mesh-auth/v2';
const NODE_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Throws EDGE_AUTH_WEAK_SECRET unless `secret` has at least MIN_SECRET_BYTES bytes. `what` names it in the message. */
export function checkSecret(secret: string | undefined, what = 'the mesh secret'): string {
  const bytes = secret === undefined ? 0 : Buffer.byteLength(secret, 'utf8');
  if (secret === undefined || bytes < MIN_SECRET_BYTES) {
    throw new MeshAuthError(
      'EDGE_AUTH_WEAK_SECRET',
      `${what} has ${bytes} bytes; at least ${MIN_SECRET_BYTES} are required (generate one with: openssl rand -hex 32)`,
    );
  }
  return secret;
}

/** Throws EDGE_AUTH_BAD_NODE_ID unless `id` is a valid node id (letters, digits and ._:- only, at most 64). */
export function checkNodeId(id: string): string {
  if (!NODE_ID.test(id)) {
    throw new MeshAuthError('EDGE_AUTH_BAD_NODE_ID', `node id '${id.slice(0, 80)}' is not valid: letters, digits and ._:- only, 1 to 64 characters`);
  }
  return id;
}

/**
 * The keys of one mesh. Holds the secret privately; derived keys are cached (a mesh has at
 * most a few hundred nodes). `fingerprint` identifies the secret in logs without revealing it.
 */
export class MeshKeys {
  readonly #secret: Buffer;
  readonly #cache = new Map<string, Buffer>();
  /** First 8 hex digits of SHA-256(salt + secret): safe to log, equal on every node of the mesh. */
  readonly fingerprint: string;

  constructor(meshSecret: string) {
    this.#secret = Buffer.from(checkSecret(meshSecret), 'utf8');
    this.fingerprint = createHash('sha256').update(SALT).update(this.#secret).digest('hex').slice(0, 8);
  }

  /** The key of `nodeId` for `purpose`. */
  keyFor(nodeId: string, purpose: KeyPurpose = 'http'): Buffer {
    const cacheKey = `${purpose}\u0000${nodeId}`;
    let key = this.#cache.get(cacheKey);
    if (!key) {
      key = Buffer.from(hkdfSync('sha256', this.#secret, SALT, cacheKey, 32));
      this.#cache.set(cacheKey, key);
    }
    return key;
  }

  /** Never print the secret, not even by accident. */
  toJSON(): { fingerprint: string } {
    return { fingerprint: this.fingerprint };
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `MeshKeys { fingerprint: '${this.fingerprint}' }`;
  }
}
