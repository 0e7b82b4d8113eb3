export { MeshAuthError, ERROR_CODES, type AuthErrorCode } from './errors.js';
export { MeshKeys, checkSecret, checkNodeId, MIN_SECRET_BYTES, type KeyPurpose } from './keys.js';
export {
  signV2,
  canonicalV2,
  bodyDigest,
  newNonce,
  ORIGIN_HEADER,
  TARGET_HEADER,
  TIMESTAMP_HEADER,
  NONCE_HEADER,
  SIGNATURE_HEADER,
  V2,
  type SignedRequest,
} from './sign.js';
export {
  Verifier,
  hasSignatureHeaders,
  DEFAULT_WINDOW_MS,
  DEFAULT_MAX_NONCES,
  type VerifierOptions,
  type HeaderBag,
  type Pending,
  type HeaderVerdict,
  type BodyVerdict,
} from './verify.js';
export { linkProof, checkLinkProof, type LinkProofInput, type LinkRole } from './challenge.js';
