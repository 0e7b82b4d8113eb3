/**
 * The one error class of the Syncmesh function. Every code is stable, maps to one HTTP status,
 * and has a row in docs/errors.md saying how to solve it. Retired codes are never reused.
 * SyncmeshError is a CodedError (@syncmesh-edge/log/errors), the components' one base class.
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export const ERROR_CODES = {
  EDGE_SYNCMESH_CONFIG: { status: 500, expose: false },
  EDGE_SYNCMESH_BAD_JSON: { status: 400, expose: true },
  EDGE_SYNCMESH_BODY_TOO_LARGE: { status: 413, expose: true },
  EDGE_SYNCMESH_BAD_ENCODING: { status: 400, expose: true },
  EDGE_SYNCMESH_BAD_REQUEST: { status: 400, expose: true },
  EDGE_SYNCMESH_BAD_REQUEST_TYPE: { status: 400, expose: true },
  EDGE_SYNCMESH_NOT_ALLOWED_TARGET: { status: 400, expose: true },
  EDGE_SYNCMESH_GRAPHQL_SYNTAX: { status: 400, expose: true },
  EDGE_SYNCMESH_GRAPHQL_VALIDATION: { status: 400, expose: true },
  EDGE_SYNCMESH_QUERY_TOO_DEEP: { status: 400, expose: true },
  EDGE_SYNCMESH_BAD_ARGUMENT: { status: 400, expose: true },
  EDGE_SYNCMESH_OPERATOR_INJECTION: { status: 400, expose: true },
  EDGE_SYNCMESH_NO_OWN_NODE: { status: 400, expose: true },
  EDGE_SYNCMESH_NODE_EXISTS: { status: 400, expose: true },
  EDGE_SYNCMESH_NODE_NOT_FOUND: { status: 400, expose: true },
  EDGE_SYNCMESH_UNAUTHORIZED: { status: 401, expose: true },
  EDGE_SYNCMESH_NOT_FOUND: { status: 404, expose: true },
  EDGE_SYNCMESH_METHOD: { status: 405, expose: true },
  EDGE_SYNCMESH_DB_UNAVAILABLE: { status: 503, expose: true },
  EDGE_SYNCMESH_INTERNAL: { status: 500, expose: false },
  EDGE_SYNCMESH_ORIGIN_MISMATCH: { status: 403, expose: true },
  EDGE_SYNCMESH_PEER_NOT_ALLOWED: { status: 400, expose: true },
  EDGE_SYNCMESH_QUERY_TOO_COSTLY: { status: 400, expose: true },
  EDGE_SYNCMESH_CREDENTIALS_REQUIRED: { status: 401, expose: true },
  EDGE_SYNCMESH_WRITES_DISABLED: { status: 403, expose: true },
  EDGE_SYNCMESH_DEADLINE_EXCEEDED: { status: 504, expose: true },
  EDGE_SYNCMESH_BUSY: { status: 503, expose: true },
  // Reported per node in extensions.failed (the answer itself is 200 with partial: true).
  EDGE_SYNCMESH_PEER_TIMEOUT: { status: 200, expose: true },
  EDGE_SYNCMESH_PEER_UNREACHABLE: { status: 200, expose: true },
  EDGE_SYNCMESH_PEER_HTTP_ERROR: { status: 200, expose: true },
  EDGE_SYNCMESH_PEER_BAD_ANSWER: { status: 200, expose: true },
  EDGE_SYNCMESH_PEER_ERROR: { status: 200, expose: true },
  EDGE_SYNCMESH_PEER_UNREGISTERED: { status: 200, expose: true },
  EDGE_SYNCMESH_NO_MESH_SECRET: { status: 200, expose: true },
  // Reported per subscriber in /readyz (replication.subscribers.<id>.last_error); retried.
  EDGE_SYNCMESH_SUBSCRIBER_TIMEOUT: { status: 200, expose: true },
  EDGE_SYNCMESH_SUBSCRIBER_BAD_ANSWER: { status: 200, expose: true },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface SyncmeshErrorOptions extends ErrorOptions {
  /** Extra, safe-to-show details (e.g. the allowed values). */
  details?: Record<string, unknown>;
}

export class SyncmeshError extends CodedError<ErrorCode> {
  override readonly name = 'SyncmeshError';
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, opts: SyncmeshErrorOptions = {}) {
    super(code, message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.details = opts.details;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  /** Whether the message may be shown to the caller; unexpected errors are masked. */
  get expose(): boolean {
    return ERROR_CODES[this.code].expose;
  }
}

/** Shorthand for the most common case: bad input, with the allowed values. */
export function badArgument(message: string, details?: Record<string, unknown>): SyncmeshError {
  return new SyncmeshError('EDGE_SYNCMESH_BAD_ARGUMENT', message, details ? { details } : {});
}
