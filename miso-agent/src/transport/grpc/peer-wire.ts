/**
 * The Peer service with the Sync stream carried as raw bytes: messages are encoded and
 * decoded here (with the .proto's own serializers), so the exact bytes on the wire are counted
 * for the replication statistics without encoding anything twice.
 */
import * as grpc from '@grpc/grpc-js';
import type { FetchRequest, FetchResponse, PeerMessage, ReceivedPeerMessage, Updates } from '../../sync/messages.js';
import type { LinkCipher, LinkRefusal } from './auth.js';
import { loadProtos } from './protos.js';

interface Codec<T> {
  encode(m: T): Buffer;
  decode(b: Buffer): T;
}

let cache: { service: grpc.ServiceDefinition; message: Codec<PeerMessage>; client: grpc.ServiceClientConstructor } | undefined;

export function peerWire(): {
  service: grpc.ServiceDefinition;
  message: Codec<PeerMessage>;
  client: grpc.ServiceClientConstructor;
} {
  if (cache) return cache;
  const base = loadProtos().peer.service;
  const sync = base['Sync']!;
  const message: Codec<PeerMessage> = {
    encode: (m) => sync.requestSerialize(m),
    decode: (b) => sync.requestDeserialize(b) as PeerMessage,
  };
  const raw = (b: Buffer): Buffer => b;
  const service: grpc.ServiceDefinition = {
    Sync: { ...sync, requestSerialize: raw, requestDeserialize: raw, responseSerialize: raw, responseDeserialize: raw },
  };
  cache = { service, message, client: grpc.makeGenericClientConstructor(service, 'Peer') };
  return cache;
}

export function encodePeerMessage(m: PeerMessage): Buffer {
  return peerWire().message.encode(m);
}

export function decodePeerMessage(b: Buffer): ReceivedPeerMessage {
  return peerWire().message.decode(b) as ReceivedPeerMessage;
}

/** PeerMessage field 3 (updates), wire type 2 (length-delimited). */
const UPDATES_TAG = (3 << 3) | 2;
/** Updates field 3 (seq), wire type 0 (varint). */
const SEQ_TAG = (3 << 3) | 0;

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n % 128) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/**
 * The body of an Updates message without its seq, encoded once for a fan-out to many peers;
 * `withSeq` then adds each peer's seq without encoding the entries again (protobuf fields may
 * come in any order, so the seq is appended to the encoded body).
 */
export function encodeUpdatesBody(fn: string, entries: Updates['entries']): Buffer {
  // No seq at all (not even 0), so that it can be appended per peer.
  const whole = encodePeerMessage({ updates: { function: fn, entries } as Updates });
  if (whole[0] !== UPDATES_TAG) throw new Error('unexpected PeerMessage encoding');
  let len = 0;
  let shift = 1;
  let i = 1;
  for (;;) {
    const b = whole[i++]!;
    len += (b & 127) * shift;
    if (b < 128) break;
    shift *= 128;
  }
  return whole.subarray(i, i + len);
}

export function withSeq(body: Buffer, seq: number): Buffer {
  const tail = seq > 0 ? [SEQ_TAG, ...varint(seq)] : [];
  const len = body.length + tail.length;
  return Buffer.concat([Buffer.from([UPDATES_TAG, ...varint(len)]), body, Buffer.from(tail)]);
}

/** One direction-neutral handle on a Sync stream. */
export interface Link {
  readonly kind: 'out' | 'in';
  /** For 'out': the dialled address; for 'in': the peer's socket address. */
  readonly address: string;
  /** The node id the handshake authenticated (set before the link is handed to the agent). */
  readonly authId: string | undefined;
  /** Set once the peer's Hello has been received (always equal to authId). */
  peerId: string | undefined;
  /** Sends one message, sealed; returns its size in bytes (0 when the stream is closed). */
  send(m: PeerMessage): number;
  /** Seals and sends an already encoded PeerMessage (see withSeq). */
  sendEncoded(b: Buffer): number;
  close(): void;
  readonly open: boolean;
}

export type FetchFn = (req: Omit<FetchRequest, 'id'>, deadlineMs: number) => Promise<FetchResponse>;

/**
 * A handshake message as the link reads it before it is sealed; bytes that do not decode refuse
 * the link (EDGE_MISO_PEER_PROTOCOL). `sender` names who sent them ("the agent at <address>").
 */
export function readHandshake(b: Buffer, sender: string): { ok: true; message: ReceivedPeerMessage } | LinkRefusal {
  try {
    return { ok: true, message: decodePeerMessage(b) };
  } catch (err) {
    return { ok: false, code: 'EDGE_MISO_PEER_PROTOCOL', reason: `${sender} sent an undecodable handshake message: ${(err as Error).message}` };
  }
}

/**
 * The body of a sealed message; a missing or wrong MAC (forged, replayed or altered) refuses the
 * link (EDGE_MISO_AUTH). `from` names the peer ("'<id>' at <address>").
 */
export function openSealed(cipher: LinkCipher, b: Buffer, from: string): { ok: true; body: Buffer } | LinkRefusal {
  const body = cipher.open(b);
  if (body) return { ok: true, body };
  return { ok: false, code: 'EDGE_MISO_AUTH', reason: `a message from ${from} has a missing or wrong MAC (forged, replayed or altered)` };
}
