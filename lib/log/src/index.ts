/** @syncmesh-edge/log: the services' one logger factory (pino, secrets redacted), squashError and CodedError (the components' one base error class). */
export { createLogger, REDACT_PATHS, REDACTED } from './log.js';
export type { Logger, LoggerOptions } from './log.js';
export { CodedError, squashError } from './errors.js';
export { CLOSE_GRACE_MS, DEFAULT_DRAIN_TIMEOUT_MS, EXIT, exitCodeOf, replyError, replyJson, runService } from './service.js';
export type { Running, ServiceProcess, ServiceSpec, StartContext } from './service.js';
