/**
 * Maps errors to gRPC statuses at the API boundary: expected errors keep their message (which
 * names the offending value) and send their stable code in the trailing metadata key
 * `edge-error-code`; unexpected ones are masked as INTERNAL (and logged in full by the caller).
 */
import * as grpc from '@grpc/grpc-js';

export const ERROR_CODE_HEADER = 'edge-error-code';

const STATUS_BY_CODE: Record<string, grpc.status> = {
  EDGE_MISO_BAD_OP: grpc.status.INVALID_ARGUMENT,
  EDGE_MISO_UNKNOWN_TYPE: grpc.status.INVALID_ARGUMENT,
  EDGE_MISO_VALUE_TOO_LARGE: grpc.status.INVALID_ARGUMENT,
  EDGE_MISO_BAD_ENCODING: grpc.status.INVALID_ARGUMENT,
  EDGE_MISO_BAD_REPLICA: grpc.status.INVALID_ARGUMENT,
  EDGE_MISO_BAD_REQUEST: grpc.status.INVALID_ARGUMENT,
  EDGE_MISO_WRONG_TYPE: grpc.status.FAILED_PRECONDITION,
  EDGE_MISO_NOT_FOUND: grpc.status.NOT_FOUND,
  EDGE_MISO_AUTH: grpc.status.UNAUTHENTICATED,
  EDGE_MISO_STORE: grpc.status.UNAVAILABLE,
  // Not UNAVAILABLE: the op took effect, so a caller must not retry it.
  EDGE_MISO_NOT_DURABLE: grpc.status.FAILED_PRECONDITION,
  EDGE_MISO_UNAVAILABLE: grpc.status.UNAVAILABLE,
  EDGE_MISO_FORBIDDEN: grpc.status.PERMISSION_DENIED,
};

/** True when the error is one the caller caused or can act on (its message is safe to show). */
export function isExpected(err: unknown): err is Error & { code: string } {
  if (!(err instanceof Error)) return false;
  const code = (err as Error & { code?: unknown }).code;
  return typeof code === 'string' && code in STATUS_BY_CODE;
}

export function toServiceError(err: unknown): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  if (isExpected(err)) {
    metadata.set(ERROR_CODE_HEADER, err.code);
    return { code: STATUS_BY_CODE[err.code]!, details: err.message, metadata };
  }
  metadata.set(ERROR_CODE_HEADER, 'EDGE_MISO_INTERNAL');
  return { code: grpc.status.INTERNAL, details: 'internal error in the MISO agent (details are in its log)', metadata };
}
