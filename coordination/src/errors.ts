/**
 * Errors of the coordination component (the async worker, the NATS server configuration, the
 * node identity tools): one base class, stable codes, each with a row in docs/errors.md.
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export const ERROR_CODES = {
  /** The worker's environment does not validate (see coordination/README.md). */
  CONFIG: 'EDGE_COORDINATION_CONFIG',
  /** A nats-server specification does not validate; nothing was written. */
  NATS_SPEC: 'EDGE_COORDINATION_NATS_SPEC',
  /** A node identity (Ed25519 seed) cannot be read or is not 32 bytes. */
  BAD_IDENTITY: 'EDGE_COORDINATION_BAD_IDENTITY',
  /** An async call in the stream is not a gateway queue request (dead-lettered, never invoked). */
  BAD_MESSAGE: 'EDGE_COORDINATION_BAD_MESSAGE',
  /** The function failed an async call (5xx, 429, network error, timeout): retried with backoff. */
  CALL_FAILED: 'EDGE_COORDINATION_CALL_FAILED',
  /** An async call failed every attempt, or was interrupted by a worker crash: dead-lettered. */
  DEAD_LETTERED: 'EDGE_COORDINATION_DEAD_LETTERED',
  /** A status query named no call ID or a malformed one (HTTP 400). */
  BAD_CALL_ID: 'EDGE_COORDINATION_BAD_CALL_ID',
  /** A status query for a call the worker has no record of (HTTP 404). */
  UNKNOWN_CALL: 'EDGE_COORDINATION_UNKNOWN_CALL',
  /** A status query while the status bucket cannot be read (NATS down; HTTP 503). */
  STATUS_UNAVAILABLE: 'EDGE_COORDINATION_STATUS_UNAVAILABLE',
  /** A request to the status endpoint with a method other than GET (HTTP 405). */
  METHOD: 'EDGE_COORDINATION_METHOD',
  /** A request to the status endpoint at a path it does not serve (HTTP 404). */
  NOT_FOUND: 'EDGE_COORDINATION_NOT_FOUND',
} as const;

export type CoordinationErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

export class CoordinationComponentError extends CodedError<CoordinationErrorCode> {
  override name = 'CoordinationComponentError';
}
