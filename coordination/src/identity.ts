/**
 * A node's identity on the mesh's NATS, from one Ed25519 key (32-byte seed):
 *
 * - its NATS nkey: an nkey *is* an Ed25519 key pair, written with a role prefix and a checksum
 *   (`SU…` for a user's seed, `U…` for its public key). `nkeyFromSeed` encodes the raw seed so,
 *   and the server then authenticates the node by a signature of its nonce (leaf node links,
 *   clients). The public key inside `U…` is the node's Ed25519 public key, so a mesh that already
 *   lists its nodes' Ed25519 public keys can derive every node's `U…` key without any secret.
 * - its route certificate: nats-server authenticates cluster routes only by a user/password
 *   shared by the whole cluster or by TLS. We use mutual TLS with one self-signed Ed25519
 *   certificate per node (made from the same key by openssl) and, as each server's ca_file, the
 *   bundle of the certificates of every core node: a route is accepted only from a listed node.
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fromPublic, fromSeed, Prefix } from '@nats-io/nkeys';
// The codec is the library's own encoder of seeds (not re-exported by its index).
import { Codec } from '@nats-io/nkeys/lib/codec.js';
import { CoordinationComponentError, ERROR_CODES } from './errors.js';

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The nkey user seed (`SU…`) of a raw 32-byte Ed25519 seed. */
export function nkeyFromSeed(seed: Uint8Array): string {
  if (seed.length !== 32) throw new CoordinationComponentError(ERROR_CODES.BAD_IDENTITY, `an Ed25519 seed is 32 bytes, not ${seed.length}`);
  return new TextDecoder().decode(Codec.encodeSeed(Prefix.User, seed));
}

/** The public nkey (`U…`) of a raw seed. */
export function nkeyPublic(seed: Uint8Array): string {
  return fromSeed(new TextEncoder().encode(nkeyFromSeed(seed))).getPublicKey();
}

/** The public nkey (`U…`) of a raw 32-byte Ed25519 public key: no secret needed. */
export function nkeyFromPublicKey(pub: Uint8Array): string {
  if (pub.length !== 32) throw new CoordinationComponentError(ERROR_CODES.BAD_IDENTITY, `an Ed25519 public key is 32 bytes, not ${pub.length}`);
  const key = new TextDecoder().decode(Codec.encode(Prefix.User, pub));
  fromPublic(key); // checks the encoding
  return key;
}

/** The raw Ed25519 public key of a raw seed (node:crypto). */
export function ed25519PublicKey(seed: Uint8Array): Uint8Array {
  const priv = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  return new Uint8Array(createPublicKey(priv).export({ format: 'der', type: 'spki' }).subarray(-32));
}

/** Writes the seed as a PKCS#8 PEM private key (mode 0600), what openssl and TLS read. */
export function writeEd25519Pem(seed: Uint8Array, path: string): void {
  const priv = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  writeFileSync(path, priv.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
}

/** Reads a raw 32-byte seed from a file holding it raw, hex or as a PKCS#8 PEM Ed25519 key. */
export function readSeed(path: string): Uint8Array {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch (err) {
    throw new CoordinationComponentError(ERROR_CODES.BAD_IDENTITY, `node identity ${path} cannot be read`, { cause: err });
  }
  const text = buf.toString('utf8').trim();
  if (text.startsWith('-----BEGIN')) {
    const der = createPrivateKey(text).export({ format: 'der', type: 'pkcs8' });
    return new Uint8Array(der.subarray(-32));
  }
  if (/^[0-9a-fA-F]{64}$/.test(text)) return new Uint8Array(Buffer.from(text, 'hex'));
  if (buf.length === 32) return new Uint8Array(buf);
  throw new CoordinationComponentError(ERROR_CODES.BAD_IDENTITY, `node identity ${path} is neither a PKCS#8 Ed25519 PEM key, 64 hex digits nor 32 raw bytes`);
}

/**
 * A self-signed X.509 certificate for the node's route (and leaf node) listener, from its
 * Ed25519 key in PEM: subject CN=<node>, the node's addresses as subjectAltName IPs, valid
 * `days`. Uses openssl (Debian's).
 */
export function selfSignedCert(keyPem: string, certPath: string, node: string, ips: readonly string[], days = 3650): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-new',
      '-key',
      keyPem,
      '-out',
      certPath,
      '-days',
      String(days),
      '-subj',
      `/CN=${node}`,
      '-addext',
      `subjectAltName=${ips.map((ip) => `IP:${ip}`).join(',')}`,
      '-addext',
      'extendedKeyUsage=serverAuth,clientAuth',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
}
