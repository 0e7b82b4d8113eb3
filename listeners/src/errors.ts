/**
 * The listener's errors: one base class, one stable code per failure. Every code has a row in
 * the "Errors" table of listeners/README.md saying how to solve it. Codes are never reused.
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export const ERROR_CODES = {
  /** The environment does not validate (see the config table in README.md). */
  CONFIG: 'EDGE_LISTENER_CONFIG',
  /** The server has no change streams: it is not a replica set. */
  NOT_REPLICA_SET: 'EDGE_LISTENER_NOT_REPLICA_SET',
  /** The server cannot resume from the stored token (oplog history gone, or unknown token). */
  HISTORY_LOST: 'EDGE_LISTENER_HISTORY_LOST',
  /** A fatal MongoDB error that retrying cannot fix (authentication, permissions, bad URI). */
  MONGO_FATAL: 'EDGE_LISTENER_MONGO_FATAL',
  /** The function did not acknowledge a delivery (5xx, network error, timeout): retried. */
  DELIVERY_FAILED: 'EDGE_LISTENER_DELIVERY_FAILED',
  /** The function rejected a delivery for good (4xx): dead-lettered, the listener moves on. */
  DELIVERY_REJECTED: 'EDGE_LISTENER_DELIVERY_REJECTED',
  /** A change event the listener cannot turn into a replication event (resynced instead). */
  MALFORMED_EVENT: 'EDGE_LISTENER_MALFORMED_EVENT',
  /** An unexpected error inside the listener (a bug): it exits and resumes when restarted. */
  INTERNAL: 'EDGE_LISTENER_INTERNAL',
  /** A request to the health endpoints with a method other than GET (405). */
  METHOD: 'EDGE_LISTENER_METHOD',
  /** A request to the health endpoints at a path they do not serve (404). */
  NOT_FOUND: 'EDGE_LISTENER_NOT_FOUND',
} as const;

export type ListenerErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

/** Base class of every error the listener raises. `code` is stable; `cause` is kept. */
export class ListenerError extends CodedError<ListenerErrorCode> {
  override name = 'ListenerError';
}

/** A delivery to the function that was not acknowledged. `status` is absent for network errors. */
export class DeliveryError extends ListenerError {
  override name = 'DeliveryError';
  readonly status: number | undefined;

  constructor(code: ListenerErrorCode, message: string, status: number | undefined, options?: ErrorOptions) {
    super(code, message, options);
    this.status = status;
  }
}
