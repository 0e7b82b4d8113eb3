/** @syncmesh-edge/coordination: the mesh's NATS JetStream (server configuration, node identities, the async worker). */
export { CoordinationComponentError, ERROR_CODES } from './errors.js';
export type { CoordinationErrorCode } from './errors.js';
export { ed25519PublicKey, nkeyFromPublicKey, nkeyFromSeed, nkeyPublic, readSeed, selfSignedCert, writeEd25519Pem } from './identity.js';
export { NatsSpecSchema, parseNatsSpec, renderNatsConfig } from './nats-config.js';
export type { NatsSpec } from './nats-config.js';
