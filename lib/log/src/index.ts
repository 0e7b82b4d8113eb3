/** @syncmesh-edge/log: the services' one logger factory (pino, secrets redacted) and squashError. */
export { createLogger, REDACT_PATHS, REDACTED } from './log.js';
export type { Logger, LoggerOptions } from './log.js';
export { squashError } from './errors.js';
