/**
 * The agent's errors: one base class, stable codes EDGE_MISO_<THING>. The README's error table
 * says how to solve each one. Errors thrown by the CRDT module (CrdtError) carry codes from
 * the same EDGE_MISO_ space and are mapped the same way at the gRPC boundary.
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export type MisoErrorCode =
  | 'EDGE_MISO_CONFIG'
  | 'EDGE_MISO_BAD_REQUEST'
  | 'EDGE_MISO_WRONG_TYPE'
  | 'EDGE_MISO_NOT_FOUND'
  | 'EDGE_MISO_AUTH'
  | 'EDGE_MISO_STORE'
  | 'EDGE_MISO_PEER'
  | 'EDGE_MISO_UNAVAILABLE'
  /** A peer's claimed node id (Hello, mDNS record, static entry, expected acceptor) is not the id its handshake authenticated. */
  | 'EDGE_MISO_PEER_ID'
  /** A peer spoke another peer protocol version, or broke the handshake's message order. */
  | 'EDGE_MISO_PEER_PROTOCOL'
  /** With synchronous persistence: the op was applied and is replicating, but its write to MongoDB failed (retried in the background). Never retry the op. */
  | 'EDGE_MISO_NOT_DURABLE'
  /** A function's own SDK socket (MISO_FUNCTION_SOCKETS_DIR) was asked about another function's objects. */
  | 'EDGE_MISO_FORBIDDEN';

export class MisoError extends CodedError<MisoErrorCode> {
  override name = 'MisoError';
}
