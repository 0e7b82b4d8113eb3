/**
 * The one error class of the mesh-auth library (a CodedError, the components' one base class).
 * Codes are stable and listed in docs/errors.md.
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export const ERROR_CODES = {
  /** The mesh secret (or write key) is missing or shorter than MIN_SECRET_BYTES. */
  EDGE_AUTH_WEAK_SECRET: { status: 500 },
  /** A node id is not a valid mesh node id. */
  EDGE_AUTH_BAD_NODE_ID: { status: 500 },
} as const;

export type AuthErrorCode = keyof typeof ERROR_CODES;

export class MeshAuthError extends CodedError<AuthErrorCode> {
  override readonly name = 'MeshAuthError';
}
