/**
 * The peer protocol's messages, as plain objects matching proto/peer.proto (loaded with
 * keepCase, so field names are the .proto names). See peer.proto for the walk-through.
 */
import type { WireEntry } from './state.js';

export interface Hello {
  node_id: string;
  address: string;
  functions: string[];
  incarnation: string;
}
export interface Updates {
  function: string;
  entries: WireEntry[];
  seq: number;
}
export interface Digest {
  function: string;
  root: string;
  count: number;
}
export interface KeyDigest {
  object: string;
  name: string;
  digest: string;
}
export interface DigestKeys {
  function: string;
  keys: KeyDigest[];
}
export interface Key {
  object: string;
  name: string;
}
export interface Want {
  function: string;
  keys: Key[];
}

/** The handshake (see peer.proto and INTERNALS.md, "Peer links"). */
export interface AuthHello {
  version: number;
  node_id: string;
  nonce: string;
  expect: string;
}
export interface AuthChallenge {
  version: number;
  node_id: string;
  nonce: string;
  proof: Uint8Array;
}
export interface AuthProof {
  proof: Uint8Array;
}

export type PeerMessage =
  | { hello: Hello }
  | { functions: { functions: string[] } }
  | { updates: Updates }
  | { ack: { seq: number } }
  | { digest: Digest }
  | { digest_keys: DigestKeys }
  | { want: Want }
  | { heartbeat: { sent_ms: number } }
  | { auth_hello: AuthHello }
  | { auth_challenge: AuthChallenge }
  | { auth_proof: AuthProof }
  | { fetch_request: FetchRequest }
  | { fetch_response: FetchResponse };

/** What a decoded message looks like: the oneof's name in `body`. */
export type ReceivedPeerMessage = PeerMessage & { body?: string };

export interface FetchRequest {
  /** Chosen by the asker, echoed in the response. */
  id: number;
  function: string;
  object: string;
  name: string;
}
export interface FetchResponse {
  id: number;
  entries: WireEntry[];
}
