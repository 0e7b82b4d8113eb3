/**
 * How the CLI signs what it sends to a node: registry changes (meta mutations) and, where a node
 * asks for it, registry reads. The one place that knows the signing scheme, so it can be switched
 * in one module when the mesh moves from the shared secret to per-node identities (issue 27).
 *
 * Today: protocol v2 of @syncmesh-edge/mesh-auth (lib/mesh-auth/README.md), with the mesh secret
 * in the description's `secret_file`: an HMAC with a key derived for the target node, over method,
 * path, origin, target, timestamp, nonce and the body. The CLI signs as origin `syncmesh-cli`.
 */
import { readFileSync } from 'node:fs';
import { MeshKeys, signV2 } from '@syncmesh-edge/mesh-auth';
import { CliError } from './errors.js';
import type { MeshDescription } from './mesh-file.js';

/** The origin the CLI signs as (it is not a node). */
export const CLI_ORIGIN = 'syncmesh-cli';

/** What the CLI signs with; opaque to the rest of the CLI. */
export interface Credential {
  readonly scheme: 'v2';
  /** Safe to print: names the secret without revealing it. */
  readonly fingerprint: string;
  /** The signature headers of one request. */
  sign(req: { method: string; path: string; target: string; body: string }): Record<string, string>;
}

/** Reads a key file (the mesh secret, the write key): trimmed, at least 32 bytes. */
export function readKeyFile(file: string, what: string): string {
  let value: string;
  try {
    value = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new CliError('EDGE_CLI_CREDENTIALS', `cannot read the ${what} from ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
      hint: `the mesh description names this file; run as a user who may read it (it is mode 0600), or point --mesh at the right mesh`,
    });
  }
  if (Buffer.byteLength(value) < 32) {
    throw new CliError('EDGE_CLI_CREDENTIALS', `the ${what} in ${file} is shorter than 32 bytes`, {
      hint: 'every node of the mesh uses the same one: copy it from where the mesh was made (openssl rand -hex 32 makes a new one)',
    });
  }
  return value;
}

/**
 * The credential when it can be read, else undefined: for reads, which nodes answer unsigned
 * unless they require a key (signed reads pass that check too).
 */
export function credentialIfReadable(mesh: MeshDescription): Credential | undefined {
  try {
    return credentialFor(mesh);
  } catch (err) {
    if (err instanceof CliError && err.code === 'EDGE_CLI_CREDENTIALS') return undefined;
    throw err;
  }
}

/** The credential of the mesh: today its secret (v2). */
export function credentialFor(mesh: MeshDescription): Credential {
  const keys = new MeshKeys(readKeyFile(mesh.secret_file, 'mesh secret'));
  return {
    scheme: 'v2',
    fingerprint: keys.fingerprint,
    sign: (req) => signV2(keys, { method: req.method, path: req.path, origin: CLI_ORIGIN, target: req.target, body: req.body }),
  };
}
