/**
 * The one error class of the CRDT core. Every failure carries a stable code;
 * docs for each code live in miso-agent/INTERNALS.md ("Errors").
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export type CrdtErrorCode =
  /** An operation (usually from gRPC/JSON) has the wrong shape or an invalid field. */
  | 'EDGE_MISO_BAD_OP'
  /** A value is larger than MAX_VALUE_BYTES once canonically encoded. */
  | 'EDGE_MISO_VALUE_TOO_LARGE'
  /** Bytes given to decode() are not a valid encoding of the expected type. */
  | 'EDGE_MISO_BAD_ENCODING'
  /** A CRDT type name that is not in the registry. */
  | 'EDGE_MISO_UNKNOWN_TYPE'
  /** A replica id that is empty, too long or not well-formed Unicode. */
  | 'EDGE_MISO_BAD_REPLICA';

export const CRDT_ERROR_CODES: readonly CrdtErrorCode[] = [
  'EDGE_MISO_BAD_OP',
  'EDGE_MISO_VALUE_TOO_LARGE',
  'EDGE_MISO_BAD_ENCODING',
  'EDGE_MISO_UNKNOWN_TYPE',
  'EDGE_MISO_BAD_REPLICA',
];

export class CrdtError extends CodedError<CrdtErrorCode> {
  override name = 'CrdtError';
}

export function isCrdtError(err: unknown): err is CrdtError {
  return err instanceof CrdtError;
}
