/**
 * Peer link authentication (peer protocol v2): a mutual challenge-response at the start of every
 * Sync stream, then a MAC on every message. No sockets here: peer-client.ts (dialer) and
 * peer-server.ts (acceptor) feed decoded messages in and send what comes out.
 *
 *   dialer   -> acceptor  AuthHello      {version, D, nD, expected acceptor id or ''}
 *   acceptor -> dialer    AuthChallenge  {version, A, nA, proof_A = linkProof(acceptor, A -> D, nD, nA)}
 *   dialer   -> acceptor  AuthProof      {proof_D = linkProof(dialer, D -> A, nA, nD)}
 *
 * A proof is HMAC-SHA256 with the verifier's agent key, K(verifier, "agent") of
 * @syncmesh-edge/mesh-auth, over the role, both ids and both nonces. Each side checks the other's
 * proof over its own fresh nonce, so a recorded handshake does not verify again, a proof for one
 * node is useless at another, and a proof cannot be reflected (role). Each side then seals every
 * message with a per-direction session key derived from both nonces and both ids (`LinkCipher`),
 * so an impostor that relays a genuine handshake between two real agents cannot inject, alter,
 * replay or reorder a single message afterwards. The ids the handshake authenticates are the
 * only ids the agent trusts: Hello, mDNS records and static peer entries must match them.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { checkLinkProof, checkNodeId, linkProof, newNonce, type MeshKeys } from '@syncmesh-edge/mesh-auth';
import type { MisoErrorCode } from '../../errors.js';
import type { AuthChallenge, AuthHello, AuthProof, PeerMessage, ReceivedPeerMessage } from '../../sync/messages.js';

/** The peer protocol this agent speaks (the package of peer.proto is miso.peer.v2). */
export const PEER_PROTOCOL_VERSION = 2;
/** A stream that has not completed the handshake within this time is closed (either side). */
export const HANDSHAKE_TIMEOUT_MS = 5_000;
/** Length of the MAC carried by every sealed message (truncated HMAC-SHA256). */
export const MAC_BYTES = 16;
/** PeerMessage field 15 (mac), wire type 2, followed by its length: the sealed trailer's head. */
const MAC_TRAILER_HEAD = Buffer.from([(15 << 3) | 2, MAC_BYTES]);
const TRAILER_BYTES = MAC_TRAILER_HEAD.length + MAC_BYTES;
const NONCE = /^[0-9a-f]{32}$/;
const PROOF_BYTES = 32;

export type LinkRole = 'dialer' | 'acceptor';

/** Why a handshake or a sealed message was refused. `reason` names ids and addresses, never keys, proofs or nonces. */
export interface LinkRefusal {
  ok: false;
  code: Extract<MisoErrorCode, 'EDGE_MISO_AUTH' | 'EDGE_MISO_PEER_ID' | 'EDGE_MISO_PEER_PROTOCOL'>;
  reason: string;
}

const refuse = (code: LinkRefusal['code'], reason: string): LinkRefusal => ({ ok: false, code, reason });

function bodyOf(m: ReceivedPeerMessage): string | undefined {
  return m.body ?? Object.keys(m).find((k) => k !== 'mac');
}

function validId(id: string): boolean {
  try {
    checkNodeId(id);
    return true;
  } catch {
    // not a valid node id: the caller refuses the message with its own reason
    return false;
  }
}

/** Session key of one direction: MACs of messages to `receiver`, derived from the receiver's agent key. */
function sessionKey(keys: MeshKeys, receiver: string, direction: 'dialer->acceptor' | 'acceptor->dialer', t: Transcript): Buffer {
  const text = ['syncmesh-link-session-v1', direction, t.dialer, t.acceptor, t.dialerNonce, t.acceptorNonce].join('\n');
  return createHmac('sha256', keys.keyFor(receiver, 'agent')).update(text).digest();
}

interface Transcript {
  dialer: string;
  acceptor: string;
  dialerNonce: string;
  acceptorNonce: string;
}

/**
 * The sealing of one authenticated stream: `seal` appends the MAC of the next outgoing message,
 * `open` checks and strips the MAC of the next incoming one. Counters are implicit (a gRPC stream
 * is reliable and ordered), so a replayed, dropped or reordered message fails its MAC.
 */
export class LinkCipher {
  private sent = 0;
  private received = 0;
  /** The counter's 8 bytes, reused (the MAC is computed synchronously). */
  private readonly counter = Buffer.alloc(8);

  constructor(
    private readonly sendKey: Buffer,
    private readonly recvKey: Buffer,
  ) {}

  static between(keys: MeshKeys, role: LinkRole, t: Transcript): LinkCipher {
    const toAcceptor = sessionKey(keys, t.acceptor, 'dialer->acceptor', t);
    const toDialer = sessionKey(keys, t.dialer, 'acceptor->dialer', t);
    return role === 'dialer' ? new LinkCipher(toAcceptor, toDialer) : new LinkCipher(toDialer, toAcceptor);
  }

  private mac(key: Buffer, counter: number, body: Uint8Array): Buffer {
    this.counter.writeUInt32BE(Math.floor(counter / 2 ** 32), 0);
    this.counter.writeUInt32BE(counter >>> 0, 4);
    return createHmac('sha256', key).update(this.counter).update(body).digest();
  }

  /** The encoded PeerMessage `body` with its mac field appended (still a valid PeerMessage). */
  seal(body: Buffer): Buffer {
    const tag = this.mac(this.sendKey, this.sent++, body);
    const out = Buffer.allocUnsafe(body.length + TRAILER_BYTES);
    body.copy(out, 0);
    MAC_TRAILER_HEAD.copy(out, body.length);
    tag.copy(out, body.length + MAC_TRAILER_HEAD.length, 0, MAC_BYTES);
    return out;
  }

  /** The message without its mac field, or undefined when the MAC is missing or wrong. */
  open(frame: Buffer): Buffer | undefined {
    const n = frame.length - TRAILER_BYTES;
    if (n < 0 || frame[n] !== MAC_TRAILER_HEAD[0] || frame[n + 1] !== MAC_TRAILER_HEAD[1]) return undefined;
    const body = frame.subarray(0, n);
    const tag = this.mac(this.recvKey, this.received, body).subarray(0, MAC_BYTES);
    if (!timingSafeEqual(tag, frame.subarray(n + 2))) return undefined;
    this.received++;
    return body;
  }
}

export interface LinkEstablished {
  ok: true;
  /** The authenticated node id of the other side. */
  peerId: string;
  cipher: LinkCipher;
}

/** The dialer's side of the handshake. */
export class DialerHandshake {
  readonly nonce: string;

  /**
   * `expect`: the node id the dialer believes it dials (mDNS record, `id@host:port` static entry,
   * dial-back of a known peer); undefined when it only knows the address.
   */
  constructor(
    private readonly keys: MeshKeys,
    private readonly self: string,
    private readonly expect: string | undefined,
    private readonly address: string,
    nonce: string = newNonce(),
  ) {
    this.nonce = nonce;
  }

  hello(): PeerMessage {
    return { auth_hello: { version: PEER_PROTOCOL_VERSION, node_id: this.self, nonce: this.nonce, expect: this.expect ?? '' } };
  }

  /** Checks the acceptor's AuthChallenge; on success, the AuthProof to send and the sealing. */
  onChallenge(m: ReceivedPeerMessage): (LinkEstablished & { reply: PeerMessage }) | LinkRefusal {
    const body = bodyOf(m);
    if (body !== 'auth_challenge')
      return refuse('EDGE_MISO_PEER_PROTOCOL', `the agent at ${this.address} sent '${body ?? 'nothing'}' instead of the handshake's challenge`);
    const c = (m as { auth_challenge: AuthChallenge }).auth_challenge;
    if (c.version !== PEER_PROTOCOL_VERSION) {
      return refuse('EDGE_MISO_PEER_PROTOCOL', `the agent at ${this.address} speaks peer protocol ${c.version}, this agent ${PEER_PROTOCOL_VERSION}`);
    }
    if (!validId(c.node_id) || !NONCE.test(c.nonce) || c.proof.length !== PROOF_BYTES) {
      return refuse('EDGE_MISO_PEER_PROTOCOL', `the agent at ${this.address} sent a malformed challenge`);
    }
    const ok = checkLinkProof(
      this.keys,
      { role: 'acceptor', prover: c.node_id, verifier: this.self, verifierNonce: this.nonce, proverNonce: c.nonce },
      c.proof,
    );
    if (!ok)
      return refuse(
        'EDGE_MISO_AUTH',
        `the agent at ${this.address} failed to prove the mesh key for node id '${c.node_id}' (wrong MISO_MESH_SECRET, or an impostor)`,
      );
    if (this.expect !== undefined && c.node_id !== this.expect) {
      return refuse('EDGE_MISO_PEER_ID', `the agent at ${this.address} authenticated as '${c.node_id}', but '${this.expect}' was expected there`);
    }
    const proof = linkProof(this.keys, { role: 'dialer', prover: this.self, verifier: c.node_id, verifierNonce: c.nonce, proverNonce: this.nonce });
    const cipher = LinkCipher.between(this.keys, 'dialer', { dialer: this.self, acceptor: c.node_id, dialerNonce: this.nonce, acceptorNonce: c.nonce });
    return { ok: true, peerId: c.node_id, cipher, reply: { auth_proof: { proof } } };
  }
}

/** The acceptor's side of the handshake. */
export class AcceptorHandshake {
  readonly nonce: string;
  private hello: AuthHello | undefined;

  constructor(
    private readonly keys: MeshKeys,
    private readonly self: string,
    private readonly address: string,
    nonce: string = newNonce(),
  ) {
    this.nonce = nonce;
  }

  /** The id the dialer claimed in its AuthHello (not authenticated yet), once received. */
  get dialer(): string | undefined {
    return this.hello?.node_id;
  }

  /** Checks the dialer's AuthHello; on success, the AuthChallenge to send. */
  onHello(m: ReceivedPeerMessage): { ok: true; reply: PeerMessage } | LinkRefusal {
    const body = bodyOf(m);
    if (body !== 'auth_hello' || this.hello)
      return refuse('EDGE_MISO_PEER_PROTOCOL', `the dialer at ${this.address} sent '${body ?? 'nothing'}' before authenticating (a peer protocol v1 agent?)`);
    const h = (m as { auth_hello: AuthHello }).auth_hello;
    if (h.version !== PEER_PROTOCOL_VERSION) {
      return refuse('EDGE_MISO_PEER_PROTOCOL', `the dialer at ${this.address} speaks peer protocol ${h.version}, this agent ${PEER_PROTOCOL_VERSION}`);
    }
    if (!validId(h.node_id) || !NONCE.test(h.nonce)) return refuse('EDGE_MISO_PEER_PROTOCOL', `the dialer at ${this.address} sent a malformed hello`);
    if (h.expect !== '' && h.expect !== this.self) {
      return refuse('EDGE_MISO_PEER_ID', `the dialer at ${this.address} ('${h.node_id}') expects node '${h.expect}' here, but this is '${this.self}'`);
    }
    this.hello = h;
    const proof = linkProof(this.keys, { role: 'acceptor', prover: this.self, verifier: h.node_id, verifierNonce: h.nonce, proverNonce: this.nonce });
    return { ok: true, reply: { auth_challenge: { version: PEER_PROTOCOL_VERSION, node_id: this.self, nonce: this.nonce, proof } } };
  }

  /** Checks the dialer's AuthProof; on success, the dialer's authenticated id and the sealing. */
  onProof(m: ReceivedPeerMessage): LinkEstablished | LinkRefusal {
    const h = this.hello;
    const body = bodyOf(m);
    if (!h || body !== 'auth_proof') return refuse('EDGE_MISO_PEER_PROTOCOL', `the dialer at ${this.address} sent '${body ?? 'nothing'}' instead of its proof`);
    const p = (m as { auth_proof: AuthProof }).auth_proof;
    const ok =
      p.proof.length === PROOF_BYTES &&
      checkLinkProof(this.keys, { role: 'dialer', prover: h.node_id, verifier: this.self, verifierNonce: this.nonce, proverNonce: h.nonce }, p.proof);
    if (!ok)
      return refuse(
        'EDGE_MISO_AUTH',
        `the dialer at ${this.address} failed to prove the mesh key for node id '${h.node_id}' (wrong MISO_MESH_SECRET, a replayed handshake, or an impostor)`,
      );
    const cipher = LinkCipher.between(this.keys, 'acceptor', { dialer: h.node_id, acceptor: this.self, dialerNonce: h.nonce, acceptorNonce: this.nonce });
    return { ok: true, peerId: h.node_id, cipher };
  }
}
