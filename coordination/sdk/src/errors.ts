/**
 * The coordination SDK's one error class and its stable codes (rows in docs/errors.md).
 *
 * `indeterminate` is true when a write may or may not have taken effect: the cluster did not
 * answer before the deadline (no quorum on this side of a partition, a leader election that
 * outlasted it). The SDK never guesses an answer; it reports that it does not know.
 */
export const COORDINATION_ERROR_CODES = {
  /** The environment does not validate (see sdk/README.md). */
  CONFIG: 'EDGE_COORDINATION_SDK_CONFIG',
  /** A namespace, object or map key name has characters or a length that is not allowed. */
  BAD_NAME: 'EDGE_COORDINATION_SDK_BAD_NAME',
  /** An argument is out of range: a non-integer delta, parties or permits below 1, a negative timeout. */
  BAD_ARGUMENT: 'EDGE_COORDINATION_SDK_BAD_ARGUMENT',
  /** A compare-and-set (or replace) on a key that does not exist. */
  KEY_MISSING: 'EDGE_COORDINATION_SDK_KEY_MISSING',
  /** A CountDownLatch counted down below zero. */
  LATCH_BELOW_ZERO: 'EDGE_COORDINATION_SDK_LATCH_BELOW_ZERO',
  /** A CyclicBarrier awaited by more distinct parties than it was declared with. */
  BARRIER_FULL: 'EDGE_COORDINATION_SDK_BARRIER_FULL',
  /** A party awaited the same round of a barrier twice. */
  BARRIER_DOUBLE_AWAIT: 'EDGE_COORDINATION_SDK_BARRIER_DOUBLE_AWAIT',
  /** An object exists with other parameters (a barrier of 3 parties opened as 4, a semaphore of 2 permits opened as 5). */
  MISMATCH: 'EDGE_COORDINATION_SDK_MISMATCH',
  /** A Future completed a second time. */
  ALREADY_SET: 'EDGE_COORDINATION_SDK_ALREADY_SET',
  /** A Semaphore released more permits than this holder holds. */
  NOT_HELD: 'EDGE_COORDINATION_SDK_NOT_HELD',
  /** A value is larger than the namespace accepts (after JSON encoding). */
  VALUE_TOO_LARGE: 'EDGE_COORDINATION_SDK_VALUE_TOO_LARGE',
  /** A stored value is not what this object expects (written by something else). */
  CORRUPT: 'EDGE_COORDINATION_SDK_CORRUPT',
  /** await/acquire/get waited its whole timeout without the condition becoming true. */
  TIMEOUT: 'EDGE_COORDINATION_SDK_TIMEOUT',
  /** The cluster did not answer before the deadline (no quorum here, election, server down). */
  UNAVAILABLE: 'EDGE_COORDINATION_SDK_UNAVAILABLE',
} as const;

export type CoordinationErrorCode = (typeof COORDINATION_ERROR_CODES)[keyof typeof COORDINATION_ERROR_CODES];

export class CoordinationError extends Error {
  readonly code: CoordinationErrorCode;
  /** true when a write may or may not have happened (see the module comment). */
  readonly indeterminate: boolean;
  constructor(code: CoordinationErrorCode, message: string, options?: ErrorOptions & { indeterminate?: boolean }) {
    super(message, options);
    this.name = 'CoordinationError';
    this.code = code;
    this.indeterminate = options?.indeterminate ?? false;
  }
}
